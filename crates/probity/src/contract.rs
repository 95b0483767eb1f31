//! The contract: a machine-readable description of what each health endpoint checks.
//!
//! A running service prints its contract (for `checkout`, `checkout --print-contract`); the
//! `probity lint` and `probity simulate` tools read it, so a manifest can be judged against what
//! the service really does behind `/livez` and `/readyz`, and a fleet can be simulated with the
//! service's real intervals, timeouts and thresholds.
//!
//! The format is JSON. Durations are whole milliseconds in fields ending in `_ms`. Unknown fields
//! are rejected when reading, so a typo in a hand-written contract is an error, not a silent
//! default. The `version` field is [`CONTRACT_VERSION`]; readers refuse versions they don't know.
//!
//! ```json
//! {
//!   "version": 1,
//!   "service": "checkout",
//!   "endpoints": [
//!     { "probe": "liveness",  "path": "/livez",    "grpc_service": "liveness",
//!       "checks": ["runtime_stall"], "checks_dependencies": false },
//!     { "probe": "readiness", "path": "/readyz",   "grpc_service": "readiness",
//!       "checks": ["db", "cache"], "checks_dependencies": true },
//!     { "probe": "startup",   "path": "/startupz", "grpc_service": "startup",
//!       "checks": ["migrations"], "checks_dependencies": false }
//!   ],
//!   "checks": [
//!     { "name": "db", "tier": "hard", "dependency": "postgres",
//!       "interval_ms": 1000, "timeout_ms": 500, "jitter_ms": 100,
//!       "rise": 3, "fall": 1, "staleness_ms": 3000,
//!       "fail_open_for_ms": null, "boot_requires_rise": false,
//!       "passive_failure_threshold": 5 }
//!   ],
//!   "liveness": [
//!     { "name": "runtime_stall", "kind": "runtime_stall", "threshold_ms": 5000 }
//!   ],
//!   "startup": { "steps": ["migrations"], "expected_boot_ms": null },
//!   "shutdown": { "drain_delay_ms": 15000, "in_flight_deadline_ms": 10000 }
//! }
//! ```

use crate::policy::Tier;
use serde::{Deserialize, Serialize};

/// The contract format version this crate writes and reads.
pub const CONTRACT_VERSION: u32 = 1;

/// What a service's health endpoints check, and with what timing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Contract {
    /// Format version; always [`CONTRACT_VERSION`] when written by this crate.
    pub version: u32,
    /// The service's name, when it declared one.
    #[serde(default)]
    pub service: Option<String>,
    /// Every health endpoint and what it evaluates.
    pub endpoints: Vec<EndpointContract>,
    /// Every readiness check (dependency checks run by pollers).
    pub checks: Vec<CheckContract>,
    /// Every liveness condition (internal state only).
    pub liveness: Vec<LivenessContract>,
    /// Startup steps and the expected boot time.
    pub startup: StartupContract,
    /// What happens on SIGTERM.
    pub shutdown: ShutdownContract,
}

/// Which question a probe answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeKind {
    /// "Is this process broken beyond what a restart fixes?" Failing restarts the container.
    Liveness,
    /// "Can this instance serve traffic now?" Failing takes it out of rotation.
    Readiness,
    /// "Has the slow boot finished?" Gates liveness and readiness until it passes once.
    Startup,
}

impl ProbeKind {
    /// The lowercase name, also the gRPC health service name for the probe.
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeKind::Liveness => "liveness",
            ProbeKind::Readiness => "readiness",
            ProbeKind::Startup => "startup",
        }
    }

    /// The conventional HTTP path: `/livez`, `/readyz` or `/startupz`.
    pub fn default_path(self) -> &'static str {
        match self {
            ProbeKind::Liveness => "/livez",
            ProbeKind::Readiness => "/readyz",
            ProbeKind::Startup => "/startupz",
        }
    }
}

impl std::fmt::Display for ProbeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One health endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointContract {
    /// The probe this endpoint is meant for.
    pub probe: ProbeKind,
    /// The HTTP path, e.g. `/readyz`. Per-check sub-paths (`/readyz/{check}`) also exist.
    pub path: String,
    /// The gRPC health service name answering the same question, if gRPC health is served.
    #[serde(default)]
    pub grpc_service: Option<String>,
    /// The names of the checks, liveness conditions or startup steps this endpoint evaluates.
    pub checks: Vec<String>,
    /// Whether any of those touches something outside the process (a database, a cache, another
    /// service). A liveness endpoint for which this is `true` restarts the fleet during a shared
    /// dependency outage.
    pub checks_dependencies: bool,
}

/// One readiness check, as its poller runs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckContract {
    /// The check's name, unique within the service.
    pub name: String,
    /// What a failure does to readiness.
    pub tier: Tier,
    /// What the check talks to (`postgres`, `redis`, `http`…), when it talks to anything.
    #[serde(default)]
    pub dependency: Option<String>,
    /// Time between the start of one poll and the start of the next.
    pub interval_ms: u64,
    /// A poll taking longer than this is cut and counted as a failure.
    pub timeout_ms: u64,
    /// Each wait between polls is shortened or lengthened by up to this much, at random.
    pub jitter_ms: u64,
    /// Consecutive successes needed to turn healthy again.
    pub rise: u32,
    /// Consecutive failures needed to turn unhealthy.
    pub fall: u32,
    /// A result older than this counts as a failure.
    pub staleness_ms: u64,
    /// For a hard check: how long it reports `warn` (fail-open) before `fail` (fail-closed).
    #[serde(default)]
    pub fail_open_for_ms: Option<u64>,
    /// Whether the first success at boot must also be a full `rise` run.
    pub boot_requires_rise: bool,
    /// Consecutive real failures reported by application code that mark the check failing at
    /// once, when passive reports are enabled for it.
    #[serde(default)]
    pub passive_failure_threshold: Option<u32>,
}

/// What a liveness condition watches. None of them touches anything outside the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LivenessKind {
    /// A heartbeat task on the async runtime, watched from an OS thread.
    RuntimeStall,
    /// Deadlock detection between `parking_lot` locks.
    Deadlock,
    /// A state the application declared unrecoverable (`mark_broken`).
    AppState,
}

/// One liveness condition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LivenessContract {
    /// The condition's name, e.g. `runtime_stall`.
    pub name: String,
    /// What it watches.
    pub kind: LivenessKind,
    /// For a runtime-stall watchdog, the heartbeat age that counts as a stall.
    #[serde(default)]
    pub threshold_ms: Option<u64>,
}

/// Boot steps gating `/startupz` and `/readyz`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartupContract {
    /// Named steps, all of which must complete before the service is started.
    pub steps: Vec<String>,
    /// How long a boot is expected to take at worst, when the service declared it. A startup
    /// probe budget shorter than this crash-loops the service.
    #[serde(default)]
    pub expected_boot_ms: Option<u64>,
}

/// The shutdown sequence.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShutdownContract {
    /// Time between SIGTERM (readiness fails) and the listener closing.
    pub drain_delay_ms: u64,
    /// How long in-flight requests may run after the listener closes.
    #[serde(default)]
    pub in_flight_deadline_ms: Option<u64>,
}

/// Why a contract could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ContractError {
    /// The text is not a valid contract document.
    #[error("invalid contract JSON at line {line}, column {column}: {message}")]
    Syntax {
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// The contract was written by a newer or older format.
    #[error("unsupported contract version {found} (this build reads version {CONTRACT_VERSION})")]
    Version {
        /// The version found in the document.
        found: u32,
    },
}

impl Contract {
    /// Reads a contract from JSON text, rejecting unknown fields and unknown versions.
    pub fn from_json(text: &str) -> Result<Self, ContractError> {
        let contract: Contract =
            serde_json::from_str(text).map_err(|error| ContractError::Syntax {
                line: error.line(),
                column: error.column(),
                message: error.to_string(),
            })?;
        if contract.version != CONTRACT_VERSION {
            return Err(ContractError::Version {
                found: contract.version,
            });
        }
        Ok(contract)
    }

    /// Writes the contract as pretty-printed JSON.
    pub fn to_json_pretty(&self) -> String {
        // A contract holds only strings, numbers and enums: serialising it cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The endpoint serving `path`, if any (a per-check sub-path resolves to its parent).
    pub fn endpoint_for_path(&self, path: &str) -> Option<&EndpointContract> {
        let path = path.split('?').next().unwrap_or(path);
        self.endpoints.iter().find(|endpoint| {
            path == endpoint.path
                || path
                    .strip_prefix(endpoint.path.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    }

    /// The endpoint for a probe kind.
    pub fn endpoint(&self, probe: ProbeKind) -> Option<&EndpointContract> {
        self.endpoints
            .iter()
            .find(|endpoint| endpoint.probe == probe)
    }

    /// The readiness check named `name`.
    pub fn check(&self, name: &str) -> Option<&CheckContract> {
        self.checks.iter().find(|check| check.name == name)
    }
}

impl crate::Health {
    /// The contract describing this registry: what `/livez`, `/readyz` and `/startupz` (and
    /// the matching gRPC health services) check, and with what timing.
    pub fn contract(&self) -> Contract {
        let inner = &self.inner;
        let millis = |d: std::time::Duration| d.as_millis() as u64;
        let checks: Vec<CheckContract> = inner
            .entries
            .iter()
            .map(|entry| CheckContract {
                name: entry.spec.name.clone(),
                tier: entry.spec.tier,
                dependency: entry.dependency.clone(),
                interval_ms: millis(entry.interval),
                timeout_ms: millis(entry.timeout),
                jitter_ms: millis(entry.jitter),
                rise: entry.spec.rise,
                fall: entry.spec.resolved_fall(),
                staleness_ms: millis(entry.staleness),
                fail_open_for_ms: entry.spec.fail_open_for.map(millis),
                boot_requires_rise: entry.spec.boot_requires_rise,
                passive_failure_threshold: Some(entry.spec.passive_failures),
            })
            .collect();
        let liveness: Vec<LivenessContract> = inner
            .liveness
            .iter()
            .map(|condition| LivenessContract {
                name: condition.name().to_owned(),
                kind: condition.kind(),
                threshold_ms: match condition.kind() {
                    LivenessKind::RuntimeStall => {
                        inner.watchdog.as_ref().map(|w| millis(w.threshold()))
                    }
                    _ => None,
                },
            })
            .collect();
        let steps: Vec<String> = self
            .snapshot()
            .steps()
            .iter()
            .map(|step| step.name().to_owned())
            .collect();
        let readiness_checks: Vec<String> = checks.iter().map(|c| c.name.clone()).collect();
        let endpoints = vec![
            EndpointContract {
                probe: ProbeKind::Liveness,
                path: ProbeKind::Liveness.default_path().into(),
                grpc_service: Some(ProbeKind::Liveness.as_str().into()),
                checks: liveness.iter().map(|l| l.name.clone()).collect(),
                checks_dependencies: false,
            },
            EndpointContract {
                probe: ProbeKind::Readiness,
                path: ProbeKind::Readiness.default_path().into(),
                grpc_service: Some(ProbeKind::Readiness.as_str().into()),
                checks_dependencies: checks.iter().any(|c| c.dependency.is_some()),
                checks: readiness_checks,
            },
            EndpointContract {
                probe: ProbeKind::Startup,
                path: ProbeKind::Startup.default_path().into(),
                grpc_service: Some(ProbeKind::Startup.as_str().into()),
                checks: steps.clone(),
                checks_dependencies: false,
            },
        ];
        Contract {
            version: CONTRACT_VERSION,
            service: inner.service.as_deref().map(str::to_owned),
            endpoints,
            checks,
            liveness,
            startup: StartupContract {
                steps,
                expected_boot_ms: inner.expected_boot.map(millis),
            },
            shutdown: ShutdownContract {
                drain_delay_ms: millis(inner.drain_delay),
                in_flight_deadline_ms: Some(millis(inner.in_flight_deadline)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Contract {
        Contract {
            version: CONTRACT_VERSION,
            service: Some("checkout".into()),
            endpoints: vec![EndpointContract {
                probe: ProbeKind::Readiness,
                path: "/readyz".into(),
                grpc_service: Some("readiness".into()),
                checks: vec!["db".into()],
                checks_dependencies: true,
            }],
            checks: vec![CheckContract {
                name: "db".into(),
                tier: Tier::Hard,
                dependency: Some("postgres".into()),
                interval_ms: 1000,
                timeout_ms: 500,
                jitter_ms: 100,
                rise: 3,
                fall: 1,
                staleness_ms: 3000,
                fail_open_for_ms: None,
                boot_requires_rise: false,
                passive_failure_threshold: Some(5),
            }],
            liveness: vec![LivenessContract {
                name: "runtime_stall".into(),
                kind: LivenessKind::RuntimeStall,
                threshold_ms: Some(5000),
            }],
            startup: StartupContract::default(),
            shutdown: ShutdownContract {
                drain_delay_ms: 15000,
                in_flight_deadline_ms: None,
            },
        }
    }

    #[test]
    fn round_trips_through_json() {
        let contract = sample();
        let text = contract.to_json_pretty();
        assert_eq!(Contract::from_json(&text).unwrap(), contract);
    }

    #[test]
    fn rejects_unknown_fields_with_position() {
        let text = sample()
            .to_json_pretty()
            .replace("\"interval_ms\"", "\"intervl_ms\"");
        let error = Contract::from_json(&text).unwrap_err().to_string();
        assert!(error.contains("intervl_ms"), "{error}");
        assert!(error.contains("line"), "{error}");
    }

    #[test]
    fn rejects_other_versions() {
        let text = sample()
            .to_json_pretty()
            .replace("\"version\": 1", "\"version\": 9");
        let error = Contract::from_json(&text).unwrap_err();
        assert!(matches!(error, ContractError::Version { found: 9 }));
    }

    #[test]
    fn resolves_sub_paths_to_their_endpoint() {
        let contract = sample();
        assert!(contract.endpoint_for_path("/readyz/db").is_some());
        assert!(contract.endpoint_for_path("/readyz?verbose").is_some());
        assert!(contract.endpoint_for_path("/readyzz").is_none());
    }
}
