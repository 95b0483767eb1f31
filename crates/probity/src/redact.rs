//! Scrubbing credentials from text before it leaves the process.
//!
//! Every error a check returns passes through [`redact`] before it enters the snapshot, so a
//! probe body, a log line or a metric label never carries a password, whatever the check's
//! underlying client put in its error message. What is scrubbed:
//!
//! - URL userinfo: `postgres://app:s3cret@db:5432/x` → `postgres://app:***@db:5432/x`
//!   (a user without a password keeps the user: `redis://:s3cret@host` → `redis://:***@host`);
//! - `key=value` and `key: value` pairs whose key names a secret — any key holding `password`,
//!   `passwd`, `secret`, `token` or `credential` (`PGPASSWORD=`, `MYSQL_ROOT_PASSWORD=`,
//!   `x-auth-token:`), ending in `_pwd`, `_pass`, `_key` or `_auth`, or one of `pwd`, `pass`,
//!   `apikey`, `auth`, `authorization`, `cookie`, `session` — in connection strings, query
//!   strings, environment dumps and JSON-ish text;
//! - `Bearer …` and `Basic …` credentials.

use std::borrow::Cow;

const MASK: &str = "***";

/// Keys (compared case-insensitively, `-` treated as `_`) whose values are secrets.
const SECRET_KEYS: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "pass",
    "secret",
    "token",
    "api_key",
    "apikey",
    "access_key",
    "access_token",
    "private_key",
    "client_secret",
    "auth",
    "authorization",
    "cookie",
    "session",
    "sslpassword",
];

/// Returns `text` with every credential it recognises replaced by `***`.
///
/// ```
/// use probity::redact::redact;
/// assert_eq!(
///     redact("connect postgres://app:hunter2@db/orders failed"),
///     "connect postgres://app:***@db/orders failed"
/// );
/// assert_eq!(redact("host=db password=hunter2 user=app"), "host=db password=*** user=app");
/// assert_eq!(redact("Authorization: Bearer abc.def"), "Authorization: Bearer ***");
/// ```
pub fn redact(text: &str) -> Cow<'_, str> {
    if !might_hold_secret(text) {
        return Cow::Borrowed(text);
    }
    let step = redact_userinfo(text);
    let step = redact_pairs(&step);
    let step = redact_schemes(&step);
    if step == text {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(step)
    }
}

/// A quick filter so the common case (no secret) costs one scan and no allocation.
fn might_hold_secret(text: &str) -> bool {
    text.contains('@')
        || text.contains('=')
        || text.contains(':')
        || text.contains("earer")
        || text.contains("asic")
}

/// `scheme://user:pass@host` → `scheme://user:***@host`.
fn redact_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find("://") {
        let (head, tail) = rest.split_at(pos + 3);
        out.push_str(head);
        // The authority ends at the first '/', '?', '#' or whitespace.
        let authority_end = tail
            .find(|c: char| c == '/' || c == '?' || c == '#' || c.is_whitespace() || c == '"')
            .unwrap_or(tail.len());
        let authority = &tail[..authority_end];
        match authority.rfind('@') {
            Some(at) => {
                let userinfo = &authority[..at];
                match userinfo.find(':') {
                    Some(colon) => {
                        out.push_str(&userinfo[..=colon]);
                        out.push_str(MASK);
                    }
                    // A bare userinfo may itself be a token (`https://TOKEN@host`).
                    None if userinfo.len() >= 16 => out.push_str(MASK),
                    None => out.push_str(userinfo),
                }
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[authority_end..];
    }
    out.push_str(rest);
    out
}

fn is_secret_key(key: &str) -> bool {
    let key = key.trim_matches(|c: char| c == '"' || c == '\'');
    let normalised: String = key
        .chars()
        .map(|c| {
            if c == '-' {
                '_'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect();
    SECRET_KEYS.iter().any(|secret| normalised == *secret)
        // `PGPASSWORD`, `MYSQL_ROOT_PASSWORD`, `db_password`, `clientSecret`, `x-auth-token`…
        || ["password", "passwd", "secret", "token", "credential"]
            .iter()
            .any(|word| normalised.contains(word))
        || ["_pwd", "_pass", "_key", "_auth"]
            .iter()
            .any(|suffix| normalised.ends_with(suffix))
}

fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '"' || c == '\''
}

/// `password=x`, `password: x`, `"password":"x"` → value masked.
fn redact_pairs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'=' || c == b':' {
            // Find the key before the separator.
            let key_end = i;
            let mut key_start = key_end;
            while key_start > 0 && is_key_char(bytes[key_start - 1] as char) {
                key_start -= 1;
            }
            let key = &text[key_start..key_end];
            // `://` is a URL, not a pair.
            let is_url = c == b':' && text[i..].starts_with("://");
            if !key.is_empty() && !is_url && is_secret_key(key) {
                let mut value_start = i + 1;
                while value_start < bytes.len() && bytes[value_start] == b' ' {
                    value_start += 1;
                }
                // `Authorization: Bearer …`: the scheme pass masks the credential and keeps
                // the scheme's name.
                let rest = &text[value_start..];
                if ["bearer ", "basic "].iter().any(|scheme| {
                    rest.get(..scheme.len())
                        .is_some_and(|head| head.eq_ignore_ascii_case(scheme))
                }) {
                    i += 1;
                    continue;
                }
                let (value_start, quote) = match bytes.get(value_start) {
                    Some(b'"') => (value_start + 1, Some(b'"')),
                    Some(b'\'') => (value_start + 1, Some(b'\'')),
                    _ => (value_start, None),
                };
                let mut value_end = value_start;
                while value_end < bytes.len() {
                    let v = bytes[value_end];
                    let stop = match quote {
                        Some(q) => v == q,
                        None => {
                            v.is_ascii_whitespace()
                                || v == b'&'
                                || v == b';'
                                || v == b','
                                || v == b'}'
                                || v == b')'
                        }
                    };
                    if stop {
                        break;
                    }
                    value_end += 1;
                }
                if value_end > value_start {
                    out.push_str(&text[copied..value_start]);
                    out.push_str(MASK);
                    copied = value_end;
                    i = value_end;
                    continue;
                }
            }
        }
        i += 1;
    }
    out.push_str(&text[copied..]);
    out
}

/// `Bearer abc`, `Basic abc` → `Bearer ***`, `Basic ***`.
fn redact_schemes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &text[i..];
        let scheme_len = [
            "Bearer ", "bearer ", "BEARER ", "Basic ", "basic ", "BASIC ",
        ]
        .iter()
        .find(|scheme| rest.starts_with(**scheme))
        .map(|scheme| scheme.len());
        let at_word_start = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        if let (Some(len), true) = (scheme_len, at_word_start) {
            let value_start = i + len;
            let mut value_end = value_start;
            while value_end < bytes.len()
                && !bytes[value_end].is_ascii_whitespace()
                && bytes[value_end] != b'"'
                && bytes[value_end] != b','
            {
                value_end += 1;
            }
            if value_end > value_start && &text[value_start..value_end] != MASK {
                out.push_str(&text[copied..value_start]);
                out.push_str(MASK);
                copied = value_end;
                i = value_end;
                continue;
            }
        }
        i += rest.chars().next().map_or(1, char::len_utf8);
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn scrubs_url_passwords() {
        assert_eq!(
            redact("error connecting to postgres://app:hunter2@127.0.0.1:1/db: refused"),
            "error connecting to postgres://app:***@127.0.0.1:1/db: refused"
        );
        assert_eq!(
            redact("redis://:hunter2@cache:6379/0"),
            "redis://:***@cache:6379/0"
        );
        assert_eq!(
            redact("amqp://guest:guest@localhost:5672/%2f"),
            "amqp://guest:***@localhost:5672/%2f"
        );
        assert_eq!(
            redact("https://ghp_0123456789abcdefghij@example.com/x"),
            "https://***@example.com/x"
        );
    }

    #[test]
    fn keeps_text_without_secrets() {
        let text = "connection refused (os error 111) at 10:42:01";
        assert!(matches!(redact(text), std::borrow::Cow::Borrowed(_)));
        assert_eq!(
            redact("http://example.com:8080/x?y=1"),
            "http://example.com:8080/x?y=1"
        );
        assert_eq!(redact("user=app host=db"), "user=app host=db");
    }

    #[test]
    fn scrubs_key_value_pairs() {
        assert_eq!(
            redact("host=db user=app password=hunter2 dbname=x"),
            "host=db user=app password=*** dbname=x"
        );
        assert_eq!(
            redact("mysql://db/x?user=a&password=hunter2&ssl=1"),
            "mysql://db/x?user=a&password=***&ssl=1"
        );
        assert_eq!(
            redact(r#"{"user":"a","password":"hunter2"}"#),
            r#"{"user":"a","password":"***"}"#
        );
        assert_eq!(redact("PWD='hunter 2';"), "PWD='***';");
        assert_eq!(redact("api-key: abc123"), "api-key: ***");
        assert_eq!(redact("db_password=x1"), "db_password=***");
        assert_eq!(redact("PGPASSWORD=hunter2 psql"), "PGPASSWORD=*** psql");
        assert_eq!(redact("MYSQL_PWD=hunter2"), "MYSQL_PWD=***");
        assert_eq!(redact("token=abc&x=1"), "token=***&x=1");
        assert_eq!(redact("secret: s3cret"), "secret: ***");
        assert_eq!(redact("authorization=abc123"), "authorization=***");
        assert_eq!(
            redact(r#"{"clientSecret":"abc"}"#),
            r#"{"clientSecret":"***"}"#
        );
    }

    #[test]
    fn scrubs_authorization_schemes() {
        assert_eq!(
            redact("401 for Authorization: Bearer eyJhbGciOi.x.y"),
            "401 for Authorization: Bearer ***"
        );
        assert_eq!(redact("sent Basic dXNlcjpwYXNz"), "sent Basic ***");
        assert_eq!(redact("Bearer abc"), "Bearer ***");
    }

    #[test]
    fn never_panics_on_odd_input() {
        for text in [
            "",
            "=",
            ":",
            "://",
            "@",
            "a://@",
            "password=",
            "Bearer ",
            "é=ü",
            "x://é:ü@",
        ] {
            let _ = redact(text);
        }
    }
}
