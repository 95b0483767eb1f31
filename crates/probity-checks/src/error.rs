//! Turning client errors into messages a person can act on, with no credentials in them.

use probity::redact::redact;
use std::error::Error as StdError;
use std::io;

/// `connection refused (127.0.0.1:1)`, `connection reset (db:5432)`: what went wrong and where.
///
/// Only the kinds worth naming get their own words; any other error keeps its own text.
pub(crate) fn describe_io(error: &io::Error, target: &str) -> String {
    use io::ErrorKind::*;
    let text = error.to_string();
    if text.starts_with("failed to lookup address information") {
        return format!("cannot resolve {target}: {}", redact(&text));
    }
    let what = match error.kind() {
        ConnectionRefused => "connection refused".to_owned(),
        ConnectionReset => "connection reset".to_owned(),
        ConnectionAborted => "connection aborted".to_owned(),
        NotConnected => "not connected".to_owned(),
        TimedOut => "connect timed out".to_owned(),
        UnexpectedEof => "connection closed by the server".to_owned(),
        BrokenPipe => "connection closed (broken pipe)".to_owned(),
        HostUnreachable => "host unreachable".to_owned(),
        NetworkUnreachable => "network unreachable".to_owned(),
        AddrNotAvailable => "address not available".to_owned(),
        PermissionDenied => "permission denied".to_owned(),
        NotFound => format!("not found: {}", redact(&error.to_string())),
        _ => redact(&error.to_string()).into_owned(),
    };
    format!("{what} ({target})")
}

/// An error's message with its sources (skipping repeats), redacted.
pub(crate) fn chain(error: &(dyn StdError + 'static)) -> String {
    redact(&probity_contract::text::error_chain(error)).into_owned()
}

/// The first `io::Error` in an error's source chain, if any.
#[allow(dead_code)]
pub(crate) fn find_io<'a>(error: &'a (dyn StdError + 'static)) -> Option<&'a io::Error> {
    let mut current: Option<&(dyn StdError + 'static)> = Some(error);
    while let Some(error) = current {
        if let Some(io) = error.downcast_ref::<io::Error>() {
            return Some(io);
        }
        current = error.source();
    }
    None
}

/// `host:port` of a URL, without credentials: `amqp://u:p@broker/%2f` → `broker:5672`, the
/// port from `default_port(scheme)` when the URL has none.
#[allow(dead_code)]
pub(crate) fn url_target(url: &str, default_port: impl Fn(&str) -> u16) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    let host_port = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let port = default_port(scheme);
    if host_port.is_empty() {
        return format!("localhost:{port}");
    }
    let has_port = match host_port.rsplit_once(':') {
        Some((_, tail)) => !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()),
        None => false,
    };
    if has_port {
        host_port.to_owned()
    } else {
        format!("{host_port}:{port}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_refusals_and_their_target() {
        let error = io::Error::from(io::ErrorKind::ConnectionRefused);
        assert_eq!(
            describe_io(&error, "127.0.0.1:1"),
            "connection refused (127.0.0.1:1)"
        );
    }

    #[test]
    fn chains_are_redacted() {
        let inner = io::Error::other("dial redis://:hunter2@cache:6379 failed");
        let outer = io::Error::other(inner);
        let text = chain(&outer);
        assert!(!text.contains("hunter2"), "{text}");
        assert!(find_io(&outer).is_some());
    }
}
