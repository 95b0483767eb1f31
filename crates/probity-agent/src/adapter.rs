//! Everything the agent needs from the core that the core's high-level API does not offer yet,
//! in one place, so a change of the core costs this module and nothing else.
//!
//! | here | what the core would offer |
//! |---|---|
//! | [`Heartbeats`] / [`Heartbeat`] | `Health::heartbeat(name, max_silence) -> Heartbeat` with `beat()` and `waiting_on(dependency, timeout)`: liveness conditions observed outside the agent's own runtime (the app's event loop, its heartbeat file, its liveness endpoint) |
//! | [`PathMap`] | configurable probe paths on `probity_axum::Probes` and in the contract |
//! | [`contract`] | the contract listing those heartbeats and paths |
//! | [`redact`], [`validate_name`] | the core's redaction and naming rules, named in the public API |
//!
//! Until the core has heartbeats, the agent answers its liveness path itself when one of its
//! conditions fails, and hands every other probe to the core's own router. gRPC `liveness`
//! answers from the core alone meanwhile: the Kubernetes example probes over HTTP.

use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use parking_lot::Mutex;
use probity::{Contract, Health, ProbeKind};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Redacts credentials from text, with the core's own rules.
pub(crate) fn redact(text: &str) -> std::borrow::Cow<'_, str> {
    probity::redact::redact(text)
}

/// The startup step the agent completes once every liveness condition has shown a sign of life.
pub(crate) const APP_STARTED_STEP: &str = "app_started";

/// The core's naming rule for checks and conditions, applied while the file is parsed so a
/// bad name is reported at its line (the core checks it again when the registry is built).
pub(crate) fn validate_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() || name.len() > 63 {
        return Err("names are 1 to 63 characters");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-' | '.'))
    {
        return Err("names hold only lowercase letters, digits, '_', '-' and '.'");
    }
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err("names start with a letter or digit");
    }
    if [
        "shutdown",
        "startup",
        "liveness",
        "readiness",
        "app_state",
        APP_STARTED_STEP,
    ]
    .contains(&name)
    {
        return Err("the name is reserved for a built-in gate");
    }
    Ok(())
}

/// What one heartbeat knows.
#[derive(Debug)]
struct Beat {
    /// The last sign of life, or registration.
    last: Instant,
    /// A declared, bounded wait: on what, and until when.
    wait: Option<(String, Instant)>,
    /// What the last observation saw, when it was not a sign of life.
    note: Option<String>,
}

#[derive(Debug)]
struct HeartbeatState {
    name: String,
    max_silence: Duration,
    beat: Mutex<Beat>,
}

/// A liveness condition fed by the agent's own observer: it beats while the app looks alive.
///
/// Fails when silent for longer than its maximum silence, unless inside a declared, still
/// bounded wait ([`Heartbeat::waiting_on`]); a wait that outlives its bound is a wedge.
#[derive(Debug, Clone)]
pub(crate) struct Heartbeat(Arc<HeartbeatState>);

impl Heartbeat {
    /// A sign of life: ends any wait and clears the note.
    pub(crate) fn beat(&self) {
        let mut beat = self.0.beat.lock();
        beat.last = Instant::now();
        beat.wait = None;
        beat.note = None;
    }

    /// Declares a bounded wait on `dependency`: silence inside it is not a wedge. A wait
    /// already declared keeps its deadline (repeating the declaration does not extend it).
    pub(crate) fn waiting_on(&self, dependency: &str, timeout: Duration) {
        let mut beat = self.0.beat.lock();
        if beat.wait.is_none() {
            beat.wait = Some((dependency.to_owned(), Instant::now() + timeout));
        }
    }

    /// Records what the last observation saw when it was not a sign of life.
    pub(crate) fn note(&self, note: impl Into<String>) {
        self.0.beat.lock().note = Some(note.into());
    }
}

/// One condition's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConditionState {
    pub(crate) name: String,
    /// `None` when alive; else why not.
    pub(crate) failure: Option<String>,
}

/// Every heartbeat of the agent.
#[derive(Debug, Clone, Default)]
pub(crate) struct Heartbeats {
    list: Arc<Mutex<Vec<Arc<HeartbeatState>>>>,
}

impl Heartbeats {
    /// Registers a heartbeat; its silence counts from now.
    pub(crate) fn heartbeat(&self, name: &str, max_silence: Duration) -> Heartbeat {
        let state = Arc::new(HeartbeatState {
            name: name.to_owned(),
            max_silence,
            beat: Mutex::new(Beat {
                last: Instant::now(),
                wait: None,
                note: None,
            }),
        });
        self.list.lock().push(state.clone());
        Heartbeat(state)
    }

    /// Every condition's state at `now`.
    pub(crate) fn states(&self, now: Instant) -> Vec<ConditionState> {
        self.list
            .lock()
            .iter()
            .map(|state| {
                let beat = state.beat.lock();
                let silence = now.saturating_duration_since(beat.last);
                let failure = match &beat.wait {
                    Some((_, until)) if now <= *until => None,
                    Some((dependency, until)) => Some(format!(
                        "waiting on {dependency} for longer than its bound ({} past it)",
                        humantime::format_duration(round(now.saturating_duration_since(*until)))
                    )),
                    None if silence > state.max_silence => Some(format!(
                        "no sign of life for {} (at most {}){}",
                        humantime::format_duration(round(silence)),
                        humantime::format_duration(state.max_silence),
                        beat.note
                            .as_ref()
                            .map(|note| format!(": {note}"))
                            .unwrap_or_default()
                    )),
                    None => None,
                };
                ConditionState {
                    name: state.name.clone(),
                    failure,
                }
            })
            .collect()
    }
}

/// Durations in messages, to the tenth of a second.
fn round(duration: Duration) -> Duration {
    Duration::from_millis(duration.as_millis() as u64 / 100 * 100)
}

/// The configured probe paths, and the core's default paths they stand for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PathMap {
    pub(crate) liveness: String,
    pub(crate) readiness: String,
    pub(crate) startup: String,
}

impl PathMap {
    /// Whether every path is the core's default (no rewriting needed).
    pub(crate) fn is_default(&self) -> bool {
        self.liveness == ProbeKind::Liveness.default_path()
            && self.readiness == ProbeKind::Readiness.default_path()
            && self.startup == ProbeKind::Startup.default_path()
    }

    fn configured(&self, probe: ProbeKind) -> &str {
        match probe {
            ProbeKind::Liveness => &self.liveness,
            ProbeKind::Readiness => &self.readiness,
            ProbeKind::Startup => &self.startup,
        }
    }

    /// The core's path for a configured one (and its per-entry sub-paths), if it is one.
    pub(crate) fn to_core(&self, path: &str) -> Option<String> {
        [
            ProbeKind::Readiness,
            ProbeKind::Startup,
            ProbeKind::Liveness,
        ]
        .into_iter()
        .find_map(|probe| {
            let configured = self.configured(probe);
            let rest = path.strip_prefix(configured)?;
            (rest.is_empty() || rest.starts_with('/'))
                .then(|| format!("{}{rest}", probe.default_path()))
        })
    }

    /// Rewrites a request for a configured path to the core's path; `None` when it is not a
    /// probe path.
    pub(crate) fn rewrite(&self, mut request: Request) -> Option<Request> {
        let core = self.to_core(request.uri().path())?;
        let target = match request.uri().query() {
            Some(query) => format!("{core}?{query}"),
            None => core,
        };
        *request.uri_mut() = target.parse::<Uri>().ok()?;
        Some(request)
    }
}

/// The contract as the agent serves it: the configured paths, and the heartbeats as
/// liveness conditions.
pub(crate) fn contract(
    health: &Health,
    paths: &PathMap,
    heartbeats: &[(String, Kind, Duration)],
) -> Contract {
    use probity::contract::{LivenessContract, LivenessKind};
    let mut contract = health.contract();
    for endpoint in &mut contract.endpoints {
        endpoint.path = paths.configured(endpoint.probe).to_owned();
        if endpoint.probe == ProbeKind::Liveness {
            endpoint
                .checks
                .extend(heartbeats.iter().map(|(name, _, _)| name.clone()));
        }
    }
    contract.liveness.extend(
        heartbeats
            .iter()
            .map(|(name, kind, bound)| LivenessContract {
                name: name.clone(),
                kind: match kind {
                    Kind::Stall => LivenessKind::RuntimeStall,
                    Kind::AppState => LivenessKind::AppState,
                },
                threshold_ms: Some(bound.as_millis() as u64),
            }),
    );
    contract
}

/// How a heartbeat shows in the contract, until the contract has a heartbeat kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The app's runtime stalls (event-loop lag, a heartbeat file that stops).
    Stall,
    /// The app's own liveness endpoint says it is broken.
    AppState,
}

/// The answer to the liveness path while a heartbeat fails: 503, naming the conditions, in
/// the core's text layout (`[-]name failed: reason`), or JSON when asked for.
pub(crate) fn liveness_failure(
    states: &[ConditionState],
    single: Option<&str>,
    verbose: bool,
    json: bool,
    details: bool,
) -> Response {
    let shown: Vec<&ConditionState> = states
        .iter()
        .filter(|state| single.is_none_or(|name| state.name == name))
        .collect();
    let failing = shown.iter().any(|state| state.failure.is_some());
    let status = if failing {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    let reason = |state: &ConditionState| -> String {
        match &state.failure {
            Some(reason) if details => redact(reason).into_owned(),
            Some(_) => "reason withheld".to_owned(),
            None => String::new(),
        }
    };
    let (content_type, body) = if json {
        let checks: Vec<serde_json::Value> = shown
            .iter()
            .map(|state| {
                serde_json::json!({
                    "name": state.name,
                    "status": if state.failure.is_some() { "fail" } else { "pass" },
                    "reason": state.failure.as_ref().map(|_| reason(state)),
                })
            })
            .collect();
        let body = serde_json::json!({
            "probe": "liveness",
            "status": if failing { "fail" } else { "pass" },
            "checks": checks,
        });
        ("application/json", format!("{body}\n"))
    } else {
        let mut body = String::new();
        for state in &shown {
            match &state.failure {
                Some(_) => body.push_str(&format!("[-]{} failed: {}\n", state.name, reason(state))),
                None if verbose || single.is_some() => {
                    body.push_str(&format!("[+]{} ok\n", state.name))
                }
                None => {}
            }
        }
        if single.is_none() {
            body.push_str(if failing {
                "livez check failed\n"
            } else {
                "livez check passed\n"
            });
        }
        ("text/plain; charset=utf-8", body)
    };
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn silence_past_the_bound_fails_and_a_beat_recovers() {
        let heartbeats = Heartbeats::default();
        let loop_lag = heartbeats.heartbeat("event-loop", Duration::from_secs(5));
        loop_lag.beat();
        tokio::time::advance(Duration::from_secs(4)).await;
        assert_eq!(heartbeats.states(Instant::now())[0].failure, None);
        loop_lag.note("scrape timed out after 1s");
        tokio::time::advance(Duration::from_secs(2)).await;
        let failure = heartbeats.states(Instant::now())[0]
            .failure
            .clone()
            .unwrap();
        assert!(failure.starts_with("no sign of life for 6s"), "{failure}");
        assert!(failure.ends_with("scrape timed out after 1s"), "{failure}");
        loop_lag.beat();
        assert_eq!(heartbeats.states(Instant::now())[0].failure, None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_bounded_wait_is_not_a_wedge_until_it_outlives_its_bound() {
        let heartbeats = Heartbeats::default();
        let app = heartbeats.heartbeat("app", Duration::from_secs(5));
        app.beat();
        app.waiting_on("app boot", Duration::from_secs(30));
        tokio::time::advance(Duration::from_secs(20)).await;
        // Declaring again does not extend the bound.
        app.waiting_on("app boot", Duration::from_secs(30));
        assert_eq!(heartbeats.states(Instant::now())[0].failure, None);
        tokio::time::advance(Duration::from_secs(11)).await;
        let failure = heartbeats.states(Instant::now())[0]
            .failure
            .clone()
            .unwrap();
        assert!(
            failure.contains("waiting on app boot for longer than its bound"),
            "{failure}"
        );
    }

    #[test]
    fn configured_paths_map_to_the_core_paths() {
        let paths = PathMap {
            liveness: "/internal/live".into(),
            readiness: "/internal/ready".into(),
            startup: "/internal/started".into(),
        };
        assert!(!paths.is_default());
        assert_eq!(paths.to_core("/internal/ready").as_deref(), Some("/readyz"));
        assert_eq!(
            paths.to_core("/internal/ready/db").as_deref(),
            Some("/readyz/db")
        );
        assert_eq!(paths.to_core("/internal/readyish"), None);
        assert_eq!(
            paths.to_core("/internal/started").as_deref(),
            Some("/startupz")
        );
        assert_eq!(paths.to_core("/orders"), None);
    }

    #[test]
    fn names_follow_the_core_rules() {
        assert!(validate_name("db-pool").is_ok());
        assert!(validate_name("Db").is_err());
        assert!(validate_name("-db").is_err());
        assert!(validate_name("app_started").is_err());
        assert!(validate_name(&"a".repeat(64)).is_err());
    }
}
