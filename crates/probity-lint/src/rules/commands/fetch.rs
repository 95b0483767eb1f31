//! The URLs an exec command fetches with `curl`, `wget` or `grpc_health_probe`.

use super::script::{SHELLS, basename};

/// A URL the script fetches with `curl`, `wget` or `grpc_health_probe`, with its words
/// expanded from `env` (`$VAR`, `${VAR}` and the kubelet's `$(VAR)` with literal values).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fetch {
    /// The program: `curl`, `wget`, `grpc_health_probe`.
    pub(crate) program: String,
    /// The host, lowercase; `None` when it holds a variable that cannot be expanded.
    pub(crate) host: Option<String>,
    /// The path (empty for gRPC).
    pub(crate) path: String,
    /// The target as written.
    pub(crate) target: String,
    /// Whether it is a `grpc.health.v1` check.
    pub(crate) grpc_health: bool,
}

/// Options of `curl` and `wget` that take a value in the next word.
pub(super) const OPTIONS_WITH_VALUES: &[&str] = &[
    "-o",
    "-H",
    "-d",
    "-u",
    "-X",
    "-w",
    "-m",
    "-A",
    "-e",
    "-x",
    "-T",
    "-F",
    "-b",
    "-c",
    "-r",
    "-K",
    "-E",
    "-O",
    "-t",
    "-U",
    "-P",
    "--output",
    "--header",
    "--data",
    "--user",
    "--request",
    "--write-out",
    "--max-time",
    "--connect-timeout",
    "--retry",
    "--user-agent",
    "--proxy",
    "--cacert",
    "--cert",
    "--key",
    "--resolve",
    "--timeout",
    "--tries",
    "--output-document",
];

/// The URLs an exec command fetches. Unlike [`parse`], this reads scripts with control flow
/// too: it only looks for the fetching commands' arguments.
pub(crate) fn fetches(command: &[String], env: &[(String, String)]) -> Vec<Fetch> {
    // The kubelet expands `$(NAME)` in every argument before it runs the command.
    let command: Vec<String> = command.iter().map(|word| expand(word, env)).collect();
    let words: Vec<String> = match command.first().map(|program| basename(program)) {
        Some(name) if SHELLS.contains(&name) || name == "busybox" => command
            .iter()
            .skip(1)
            .flat_map(|argument| {
                argument
                    .split(|c: char| c.is_whitespace() || matches!(c, ';' | '|' | '&'))
                    .map(|word| expand(word.trim_matches(['"', '\'', '(', ')']), env))
                    .collect::<Vec<_>>()
            })
            .filter(|word| !word.is_empty())
            .collect(),
        _ => command,
    };
    let mut found = Vec::new();
    let mut index = 0;
    while index < words.len() {
        let program = basename(&words[index]).to_owned();
        index += 1;
        match program.as_str() {
            "curl" | "wget" => {
                while index < words.len() {
                    let word = &words[index];
                    index += 1;
                    if matches!(basename(word), "curl" | "wget" | "grpc_health_probe") {
                        index -= 1;
                        break;
                    }
                    if word == "--url" {
                        if let Some(next) = words.get(index) {
                            found.extend(url(&program, next));
                            index += 1;
                        }
                    } else if OPTIONS_WITH_VALUES.contains(&word.as_str()) {
                        index += 1;
                    } else if !word.starts_with('-') {
                        found.extend(url(&program, word));
                    }
                }
            }
            "grpc_health_probe" => {
                while index < words.len() {
                    let word = &words[index];
                    let address = word
                        .strip_prefix("-addr=")
                        .or_else(|| word.strip_prefix("--addr="));
                    if let Some(address) = address {
                        found.push(Fetch {
                            program: program.clone(),
                            host: host_of(address),
                            path: String::new(),
                            target: address.to_owned(),
                            grpc_health: true,
                        });
                    }
                    if !word.starts_with('-') {
                        break;
                    }
                    index += 1;
                }
            }
            _ => {}
        }
    }
    found
}

/// Reads `http://host:port/path`, or `host:port/path` as curl and wget accept it.
pub(super) fn url(program: &str, word: &str) -> Option<Fetch> {
    let rest = word
        .strip_prefix("http://")
        .or_else(|| word.strip_prefix("https://"))
        .unwrap_or(word);
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    let host_like = !authority.is_empty()
        && authority.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    '.' | '-' | ':' | '[' | ']' | '@' | '$' | '{' | '}' | '(' | ')' | '_'
                )
        });
    if !host_like || (rest.len() == word.len() && !rest.contains(['/', ':'])) {
        return None;
    }
    let path = path.split(['?', '#']).next().unwrap_or(path);
    Some(Fetch {
        program: program.to_owned(),
        host: host_of(authority),
        path: path.to_owned(),
        target: word.to_owned(),
        grpc_health: false,
    })
}

/// The host of `user@host:port` (lowercase), or `None` when it still holds a variable.
pub(super) fn host_of(authority: &str) -> Option<String> {
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    if authority.contains('$') {
        return None;
    }
    let host = if let Some(bracketed) = authority.strip_prefix('[') {
        bracketed.split(']').next().unwrap_or(bracketed)
    } else {
        authority.split(':').next().unwrap_or(authority)
    };
    Some(host.to_ascii_lowercase())
}

/// Expands `$(NAME)` (the kubelet's syntax), `${NAME}` and `$NAME` from `env`; unknown
/// variables stay as written.
pub(super) fn expand(word: &str, env: &[(String, String)]) -> String {
    let lookup = |name: &str| {
        env.iter()
            .rev()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
    };
    let mut out = String::new();
    let mut rest = word;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, skip) = if let Some(inner) = after.strip_prefix('(') {
            match inner.find(')') {
                Some(end) => (&inner[..end], end + 2),
                None => ("", 0),
            }
        } else if let Some(inner) = after.strip_prefix('{') {
            match inner.find('}') {
                Some(end) => (&inner[..end], end + 2),
                None => ("", 0),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        match (name.is_empty(), lookup(name)) {
            (false, Some(value)) => out.push_str(&value),
            _ => out.push_str(&rest[at..at + 1 + skip]),
        }
        rest = &after[skip.min(after.len())..];
        if skip == 0 {
            break;
        }
    }
    out.push_str(rest);
    out
}

/// Whether an HTTP path is a health endpoint: `/health`, `/healthz`, `/readyz`, `/livez`,
/// `/ready`, `/live`, `/ping`, `/actuator/health`, `/-/healthy`…
pub(crate) fn is_health_path(path: &str) -> bool {
    path.split('/').any(|segment| {
        matches!(
            segment.to_ascii_lowercase().as_str(),
            "health"
                | "healthz"
                | "healthy"
                | "healthcheck"
                | "health-check"
                | "_health"
                | "ready"
                | "readyz"
                | "readiness"
                | "live"
                | "livez"
                | "liveness"
                | "alive"
                | "ping"
        )
    })
}
