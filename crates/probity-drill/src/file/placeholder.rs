//! Placeholders: what the drill fills in per instance.
//!
//! A placeholder is `{` + a name of lowercase letters, digits, `_`, `-` and `.` + `}`; any
//! other brace is text (`{"a":1}` stays as written). The names:
//!
//! | placeholder | filled with |
//! |---|---|
//! | `{port}` | the instance's own port for `app.port` |
//! | `{port.NAME}` | its own port for `app.ports.NAME` |
//! | `{instance}` | the instance's number, from 1 |
//! | `{name}` | the instance's name (`SERVICE-1`) |
//! | `{dir}` | a scratch folder of the instance's own, kept across restarts |
//! | `{dep.NAME.url}` | the dependency's URL with the host and port of the instance's fault proxy |
//! | `{dep.NAME.address}` | the proxy's `host:port` |
//! | `{dep.NAME.host}`, `{dep.NAME.port}` | its host, its port |
//! | `{agent.port}` | the port of the instance's `probity agent` |
//! | `{seconds}` | in a hook's path or body: the fault's duration in whole seconds |
//! | `{run}` | the run's own name (`drill-PID-HEX`): a queue or a cache prefix no other run shares |
//! | `{captured.NAME}` | in a traffic request's path: a value request `NAME` captured from an answer |

use std::collections::{BTreeMap, BTreeSet};

/// One placeholder, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placeholder {
    /// `{port}`.
    Port,
    /// `{port.NAME}`.
    NamedPort(String),
    /// `{instance}`.
    Instance,
    /// `{name}`.
    Name,
    /// `{dir}`.
    Dir,
    /// `{dep.NAME.PART}`.
    Dependency {
        /// The dependency.
        name: String,
        /// `url`, `address`, `host` or `port`.
        part: DependencyPart,
    },
    /// `{agent.port}`.
    AgentPort,
    /// `{seconds}`: a hook's fault duration.
    Seconds,
    /// `{run}`: the run's own name.
    Run,
    /// `{captured.NAME}`: a value captured by traffic request `NAME`.
    Captured(String),
}

/// What of a dependency's proxied address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DependencyPart {
    /// The URL.
    Url,
    /// `host:port`.
    Address,
    /// The host.
    Host,
    /// The port.
    Port,
}

/// What the file declares, for checking placeholders before anything runs.
#[derive(Debug, Clone, Default)]
pub struct Known {
    /// `app.ports` names.
    pub ports: BTreeSet<String>,
    /// Dependencies, and whether each has a URL.
    pub dependencies: BTreeMap<String, bool>,
    /// Whether an agent is declared.
    pub agent: bool,
    /// Traffic requests that capture a value (`{captured.NAME}`); empty where none may be used.
    pub captures: BTreeSet<String>,
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-' | '.')
}

/// Every `{…}` placeholder in `text`, with its byte range.
fn spans(text: &str) -> Vec<(std::ops::Range<usize>, &str)> {
    let mut found = Vec::new();
    let mut rest = 0;
    while let Some(open) = text[rest..].find('{') {
        let start = rest + open;
        let body_start = start + 1;
        let body_len = text[body_start..]
            .find(|c: char| !is_name_char(c))
            .unwrap_or(text.len() - body_start);
        let end = body_start + body_len;
        if body_len > 0 && text[end..].starts_with('}') {
            found.push((start..end + 1, &text[body_start..end]));
            rest = end + 1;
        } else {
            rest = body_start;
        }
    }
    found
}

/// The names of the placeholders in `text` (without braces).
pub fn names(text: &str) -> Vec<&str> {
    spans(text).into_iter().map(|(_, name)| name).collect()
}

/// Parses a placeholder's name (without braces).
pub fn parse(name: &str) -> Result<Placeholder, String> {
    let parts: Vec<&str> = name.split('.').collect();
    Ok(match parts.as_slice() {
        ["port"] => Placeholder::Port,
        ["port", port] => Placeholder::NamedPort((*port).to_owned()),
        ["instance"] => Placeholder::Instance,
        ["name"] => Placeholder::Name,
        ["dir"] => Placeholder::Dir,
        ["seconds"] => Placeholder::Seconds,
        ["run"] => Placeholder::Run,
        ["captured", request] => Placeholder::Captured((*request).to_owned()),
        ["agent", "port"] => Placeholder::AgentPort,
        ["dep", dependency, part] => Placeholder::Dependency {
            name: (*dependency).to_owned(),
            part: match *part {
                "url" => DependencyPart::Url,
                "address" => DependencyPart::Address,
                "host" => DependencyPart::Host,
                "port" => DependencyPart::Port,
                other => {
                    return Err(format!(
                        "`{{{name}}}`: a dependency has url, address, host and port, not `{other}`"
                    ));
                }
            },
        },
        _ => {
            return Err(format!(
                "`{{{name}}}` is not a placeholder (port, port.NAME, instance, name, dir, \
                 dep.NAME.url, dep.NAME.address, dep.NAME.host, dep.NAME.port, agent.port, seconds, run, \
                 captured.NAME)"
            ));
        }
    })
}

/// Checks every placeholder in `text` against what the file declares.
pub fn check(text: &str, known: &Known) -> Result<(), String> {
    for (_, name) in spans(text) {
        match parse(name)? {
            Placeholder::NamedPort(port) if !known.ports.contains(&port) => {
                return Err(format!("`{{{name}}}`: `{port}` is not one of app.ports"));
            }
            Placeholder::Dependency { name: dep, part } => match known.dependencies.get(&dep) {
                None => {
                    return Err(format!("`{{{name}}}`: `{dep}` is not one of dependencies"));
                }
                Some(false) if part == DependencyPart::Url => {
                    return Err(format!(
                        "`{{{name}}}`: dependencies.{dep} gives an address, not a URL; use \
                         {{dep.{dep}.address}}"
                    ));
                }
                _ => {}
            },
            Placeholder::AgentPort if !known.agent => {
                return Err(format!("`{{{name}}}`: there is no agent section"));
            }
            Placeholder::Captured(request) if !known.captures.contains(&request) => {
                return Err(format!(
                    "`{{{name}}}`: only a traffic request's path may use a captured value, and \
                     `{request}` must be a traffic request with `capture`"
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Fills every placeholder in `text` with `value`'s answer; a placeholder it has no answer
/// for is left as written (checked files have none).
pub fn fill(text: &str, value: impl Fn(&Placeholder) -> Option<String>) -> String {
    let mut filled = String::with_capacity(text.len());
    let mut last = 0;
    for (range, name) in spans(text) {
        filled.push_str(&text[last..range.start]);
        match parse(name).ok().and_then(|placeholder| value(&placeholder)) {
            Some(answer) => filled.push_str(&answer),
            None => filled.push_str(&text[range.clone()]),
        }
        last = range.end;
    }
    filled.push_str(&text[last..]);
    filled
}

/// Kubernetes' expansion of `$(VAR)` in a container's command and arguments from its
/// environment (`third_party/forked/golang/expansion`, used by `kubecontainer.ExpandContainerCommandAndArgs`):
/// `$(NAME)` becomes the variable's value, `$$` is a literal `$`, and a reference to a variable
/// not defined is left as written.
pub fn expand_env(text: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(dollar) = rest.find('$') {
        out.push_str(&rest[..dollar]);
        let after = &rest[dollar + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(body) = after.strip_prefix('(')
            && let Some(close) = body.find(')')
        {
            let name = &body[..close];
            match env.get(name) {
                Some(value) => out.push_str(value),
                None => {
                    out.push_str("$(");
                    out.push_str(name);
                    out.push(')');
                }
            }
            rest = &body[close + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_environment_references_as_kubernetes_does() {
        let env: BTreeMap<String, String> =
            [("DATABASE_URL".to_owned(), "postgres://x".to_owned())].into();
        assert_eq!(
            expand_env("--database-url=$(DATABASE_URL)", &env),
            "--database-url=postgres://x"
        );
        assert_eq!(
            expand_env("$(MISSING) $$(DATABASE_URL) $5", &env),
            "$(MISSING) $(DATABASE_URL) $5"
        );
    }

    fn known() -> Known {
        Known {
            ports: ["admin".to_owned()].into(),
            dependencies: [("db".to_owned(), true), ("cache".to_owned(), false)].into(),
            agent: false,
            captures: BTreeSet::new(),
        }
    }

    #[test]
    fn fills_placeholders_and_leaves_other_braces() {
        let text = r#"--listen=127.0.0.1:{port} {"a":1} {dep.db.url} {port.admin}{instance}"#;
        let filled = fill(text, |placeholder| match placeholder {
            Placeholder::Port => Some("4001".into()),
            Placeholder::NamedPort(name) if name == "admin" => Some("4002".into()),
            Placeholder::Instance => Some("1".into()),
            Placeholder::Dependency {
                part: DependencyPart::Url,
                ..
            } => Some("postgres://127.0.0.1:5001/test".into()),
            _ => None,
        });
        assert_eq!(
            filled,
            r#"--listen=127.0.0.1:4001 {"a":1} postgres://127.0.0.1:5001/test 40021"#
        );
    }

    #[test]
    fn rejects_what_names_nothing() {
        let known = known();
        assert!(check("{port} {dep.db.url} {dep.cache.address}", &known).is_ok());
        let error = check("{dep.dbb.url}", &known).unwrap_err();
        assert!(
            error.contains("`dbb` is not one of dependencies"),
            "{error}"
        );
        let error = check("{dep.cache.url}", &known).unwrap_err();
        assert!(error.contains("use {dep.cache.address}"), "{error}");
        let error = check("{port.metrics}", &known).unwrap_err();
        assert!(
            error.contains("`metrics` is not one of app.ports"),
            "{error}"
        );
        let error = check("{agent.port}", &known).unwrap_err();
        assert!(error.contains("no agent"), "{error}");
        let error = check("{prot}", &known).unwrap_err();
        assert!(error.contains("is not a placeholder"), "{error}");
        let error = check("{dep.db.user}", &known).unwrap_err();
        assert!(error.contains("not `user`"), "{error}");
    }
}
