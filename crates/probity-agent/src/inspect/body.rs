//! What a health answer's body says: the checks it names and their states, in the shapes
//! frameworks write them.
//!
//! Recognised, in JSON:
//! - a flat map of checks to booleans or status words: `{"storage": true, "cache": false}`,
//!   `{"db": "up", "queue": "down"}`;
//! - Spring Boot actuator: `{"status": "DOWN", "components": {"db": {"status": "DOWN"}}}`,
//!   nested composites included;
//! - the IETF health check format (`application/health+json`): `{"status": "fail", "checks":
//!   {"db:connections": [{"status": "fail"}]}}`;
//! - NestJS terminus: `{"status": "error", "info": {…}, "error": {"redis": {"status": "down"}},
//!   "details": {…}}`;
//! - MicroProfile Health / Quarkus: `{"status": "DOWN", "checks": [{"name": "db", "status":
//!   "DOWN"}]}`;
//! - ASP.NET Core's UI writer: `{"status": "Unhealthy", "entries": {"db": {"status": …}}}`.
//!
//! In text: Kubernetes' verbose format (`[+]ping ok`, `[-]etcd failed`).

use serde::Serialize;
use serde_json::Value;

/// A check's state as a body tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckState {
    /// Up, ok, healthy, `true`.
    Pass,
    /// Degraded, warn.
    Warn,
    /// Down, failing, unhealthy, `false`.
    Fail,
}

/// A check a body names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NamedCheck {
    /// Its name, as the body writes it (`db`, `components/db/primary`).
    pub name: String,
    /// Its state.
    pub state: CheckState,
}

/// Keys that hold checks, by framework.
const CONTAINERS: &[&str] = &[
    "checks",       // IETF health+json, MicroProfile, many others
    "components",   // Spring Boot 2.2+
    "details",      // Spring Boot before 2.2, terminus
    "entries",      // ASP.NET Core HealthChecks UI writer
    "info",         // terminus: the passing ones
    "error",        // terminus: the failing ones
    "results",      // various
    "dependencies", // various
    "services",     // various
];

/// Keys of a health body that describe the answer, not a check.
const META: &[&str] = &[
    "status",
    "state",
    "health",
    "healthy",
    "message",
    "description",
    "version",
    "time",
    "timestamp",
    "uptime",
    "output",
    "notes",
    "serviceid",
    "releaseid",
    "links",
    "totalduration",
    "duration",
    "name",
    "ok",
];

/// Every check `body` names, failing first; empty when it names none.
pub(super) fn named_checks(body: &str) -> Vec<NamedCheck> {
    let mut found = Vec::new();
    match serde_json::from_str::<Value>(body.trim()) {
        Ok(Value::Object(object)) => collect_object(&object, "", &mut found),
        Ok(_) => {}
        Err(_) => collect_verbose_text(body, &mut found),
    }
    // The same check under several keys (terminus' `error` and `details`): its worst state.
    found.sort_by(|a, b| a.name.cmp(&b.name).then(b.state.cmp(&a.state)));
    found.dedup_by(|later, first| later.name == first.name);
    found.sort_by(|a, b| b.state.cmp(&a.state).then(a.name.cmp(&b.name)));
    found
}

/// The answer's own overall state (`status`, `state` or `health` at the top), when it says.
pub(super) fn overall_state(body: &str) -> Option<CheckState> {
    let Ok(Value::Object(object)) = serde_json::from_str::<Value>(body.trim()) else {
        return None;
    };
    ["status", "state", "health", "healthy", "ok"]
        .iter()
        .find_map(|key| object.get(*key).and_then(state_of))
}

/// Whether a failing answer says what failed: the checks it names, an error message, or text
/// that is more than a status word.
pub(super) fn names_something(body: &str) -> bool {
    let trimmed = body.trim();
    if !named_checks(trimmed).is_empty() {
        return true;
    }
    if let Ok(json) = serde_json::from_str::<Value>(trimmed) {
        return json.as_object().is_some_and(|object| {
            object.iter().any(|(key, value)| {
                matches!(
                    key.to_ascii_lowercase().as_str(),
                    "checks"
                        | "failed"
                        | "error"
                        | "errors"
                        | "details"
                        | "detail"
                        | "reason"
                        | "message"
                        | "output"
                ) && !is_empty(value)
            })
        });
    }
    let generic = [
        "",
        "fail",
        "failed",
        "error",
        "unhealthy",
        "not ready",
        "service unavailable",
        "down",
        "unavailable",
        "ko",
        "nok",
    ];
    !generic.contains(&trimmed.to_ascii_lowercase().as_str())
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(text) => text.trim().is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(object) => object.is_empty(),
        _ => false,
    }
}

/// At most this many levels of nested components are read.
const MAX_DEPTH: usize = 4;

fn collect_object(
    object: &serde_json::Map<String, Value>,
    prefix: &str,
    found: &mut Vec<NamedCheck>,
) {
    if prefix.matches('/').count() >= MAX_DEPTH {
        return;
    }
    for (key, value) in object {
        let lower = key.to_ascii_lowercase();
        let nested = !prefix.is_empty();
        // Inside a check only its sub-checks count, not the figures in its details.
        let container = if nested {
            matches!(lower.as_str(), "components" | "checks")
        } else {
            CONTAINERS.contains(&lower.as_str())
        };
        if container {
            match value {
                Value::Object(checks) => {
                    for (name, check) in checks {
                        let path = join(prefix, name);
                        if let Some(state) = state_of(check) {
                            found.push(NamedCheck {
                                name: path.clone(),
                                state,
                            });
                        }
                        // Spring's composites: `components` inside a component.
                        if let Value::Object(inner) = check {
                            collect_object(inner, &path, found);
                        }
                    }
                }
                // MicroProfile: `checks: [{"name": …, "status": …}]`.
                Value::Array(items) => {
                    for item in items {
                        let name = ["name", "componentId", "component"]
                            .iter()
                            .find_map(|key| item.get(*key).and_then(Value::as_str));
                        if let (Some(name), Some(state)) = (name, state_of(item)) {
                            found.push(NamedCheck {
                                name: join(prefix, name),
                                state,
                            });
                        }
                    }
                }
                _ => {}
            }
        } else if !nested
            && !META.contains(&lower.as_str())
            && let Some(state) = state_of(value)
        {
            // A flat map: `{"storage": true, "cache": false}`.
            found.push(NamedCheck {
                name: join(prefix, key),
                state,
            });
        }
    }
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}/{name}")
    }
}

/// `[+]ping ok` / `[-]etcd failed: reason withheld`: Kubernetes' `?verbose` format.
fn collect_verbose_text(body: &str, found: &mut Vec<NamedCheck>) {
    for line in body.lines().take(1000) {
        let line = line.trim();
        let (state, rest) = if let Some(rest) = line.strip_prefix("[+]") {
            (CheckState::Pass, rest)
        } else if let Some(rest) = line.strip_prefix("[-]") {
            (CheckState::Fail, rest)
        } else {
            continue;
        };
        let name = rest.split_whitespace().next().unwrap_or("");
        if !name.is_empty() {
            found.push(NamedCheck {
                name: name.to_owned(),
                state,
            });
        }
    }
}

/// The state a value gives: a boolean, a status word, an object with a status, or a list of
/// such objects (the worst of them).
fn state_of(value: &Value) -> Option<CheckState> {
    match value {
        Value::Bool(true) => Some(CheckState::Pass),
        Value::Bool(false) => Some(CheckState::Fail),
        Value::String(text) => status_word(text),
        Value::Object(object) => ["status", "state", "health", "healthy", "ok", "isHealthy"]
            .iter()
            .find_map(|key| object.get(*key))
            .and_then(|value| match value {
                Value::Object(_) | Value::Array(_) => None,
                value => state_of(value),
            }),
        Value::Array(items) => items.iter().filter_map(state_of).max(),
        _ => None,
    }
}

/// A status word's state: the first word of the text (`"unavailable: connection refused"`).
fn status_word(text: &str) -> Option<CheckState> {
    let word = text
        .trim()
        .split(|c: char| c == ':' || c == ',' || c.is_whitespace())
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    match word.as_str() {
        "up" | "ok" | "pass" | "passed" | "passing" | "healthy" | "true" | "serving"
        | "working" | "available" | "green" | "online" | "ready" | "alive" | "success" => {
            Some(CheckState::Pass)
        }
        "warn" | "warning" | "degraded" | "yellow" => Some(CheckState::Warn),
        "down" | "fail" | "failed" | "failing" | "failure" | "error" | "unhealthy" | "false"
        | "not_serving" | "unavailable" | "red" | "offline" | "critical" | "ko" | "nok"
        | "out_of_service" | "unreachable" | "timeout" => Some(CheckState::Fail),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(body: &str) -> Vec<(String, CheckState)> {
        named_checks(body)
            .into_iter()
            .map(|check| (check.name, check.state))
            .collect()
    }

    #[test]
    fn a_flat_map_of_booleans_names_its_checks() {
        assert_eq!(
            names(r#"{"storage": true, "cache": false}"#),
            [
                ("cache".to_owned(), CheckState::Fail),
                ("storage".to_owned(), CheckState::Pass)
            ]
        );
        assert_eq!(
            names(r#"{"status": "ok", "db": "up", "version": "1.2"}"#),
            [("db".to_owned(), CheckState::Pass)]
        );
        assert!(names(r#"{"status": "ok"}"#).is_empty());
        assert!(names(r#"{"status": "down", "uptime": 12}"#).is_empty());
    }

    #[test]
    fn spring_actuator_bodies_name_components_and_composites() {
        let body = r#"{"status":"DOWN","components":{"db":{"status":"DOWN","details":{"error":"x"}},
            "diskSpace":{"status":"UP","details":{"total":1,"exists":true}},
            "group":{"status":"UP","components":{"a":{"status":"UP"}}}}}"#;
        let found = names(body);
        assert_eq!(found[0], ("db".to_owned(), CheckState::Fail));
        assert!(found.contains(&("diskSpace".to_owned(), CheckState::Pass)));
        assert!(found.contains(&("group/a".to_owned(), CheckState::Pass)));
        assert_eq!(found.len(), 4, "{found:?}");
        assert_eq!(overall_state(body), Some(CheckState::Fail));
    }

    #[test]
    fn ietf_terminus_and_microprofile_bodies_name_their_checks() {
        assert_eq!(
            names(
                r#"{"status":"fail","checks":{"db:connections":[{"status":"pass"},{"status":"fail"}]}}"#
            ),
            [("db:connections".to_owned(), CheckState::Fail)]
        );
        assert_eq!(
            names(
                r#"{"status":"error","info":{"db":{"status":"up"}},"error":{"redis":{"status":"down","message":"x"}},
                "details":{"db":{"status":"up"},"redis":{"status":"down"}}}"#
            ),
            [
                ("redis".to_owned(), CheckState::Fail),
                ("db".to_owned(), CheckState::Pass)
            ]
        );
        assert_eq!(
            names(
                r#"{"status":"DOWN","checks":[{"name":"db","status":"DOWN"},{"name":"ping","status":"UP"}]}"#
            ),
            [
                ("db".to_owned(), CheckState::Fail),
                ("ping".to_owned(), CheckState::Pass)
            ]
        );
        assert_eq!(
            names("[+]ping ok\n[-]etcd failed: reason withheld\nhealthz check failed"),
            [
                ("etcd".to_owned(), CheckState::Fail),
                ("ping".to_owned(), CheckState::Pass)
            ]
        );
    }

    #[test]
    fn a_failing_answer_names_something_or_not() {
        assert!(names_something(r#"{"storage": true, "cache": false}"#));
        assert!(names_something(
            r#"{"status":"error","message":"database unreachable"}"#
        ));
        assert!(names_something("database connection refused"));
        assert!(!names_something(r#"{"status":"down"}"#));
        assert!(!names_something(r#"{"status":"down","errors":[]}"#));
        assert!(!names_something("Service Unavailable"));
        assert!(!names_something(""));
    }
}
