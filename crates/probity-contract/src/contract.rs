//! The contract: a machine-readable description of what each health endpoint checks, waits on,
//! and with what timing.
//!
//! A running service prints its contract (for `checkout`, `checkout --print-contract`, or
//! `GET /contract` on its admin listener); `probity lint` and `probity simulate` read it, so a
//! manifest can be judged against what the service really does behind its probe paths, and a
//! fleet can be simulated with the service's real intervals, timeouts and thresholds.
//!
//! The format is JSON. Durations are whole milliseconds in fields ending in `_ms`. Unknown
//! fields are rejected when reading, so a typo in a hand-written contract is an error, not a
//! silent default. The `version` field is [`CONTRACT_VERSION`]; version 1 (startup steps as
//! plain names, no `waits_on`) is still read; other versions are refused.
//!
//! ```json
//! {
//!   "version": 2,
//!   "service": "checkout",
//!   "endpoints": [
//!     { "probe": "liveness", "path": "/livez", "grpc_service": "liveness",
//!       "checks": ["runtime_stall"], "checks_dependencies": false, "waits_on": [] },
//!     { "probe": "readiness", "path": "/readyz", "grpc_service": "readiness",
//!       "checks": ["db", "database", "migrations"], "checks_dependencies": true,
//!       "waits_on": ["postgres"] },
//!     { "probe": "startup", "path": "/startupz", "grpc_service": "startup",
//!       "checks": ["warmup"], "checks_dependencies": false, "waits_on": [] }
//!   ],
//!   "checks": [
//!     { "name": "db", "tier": "hard", "dependency": "postgres",
//!       "interval_ms": 500, "timeout_ms": 400, "jitter_ms": 50,
//!       "rise": 3, "fall": 2, "staleness_ms": 1500,
//!       "fail_open_for_ms": null, "boot_requires_rise": false,
//!       "passive_failure_threshold": 5, "calls_health_endpoint": false, "fallback": null }
//!   ],
//!   "liveness": [
//!     { "name": "runtime_stall", "kind": "runtime_stall", "threshold_ms": 5000 }
//!   ],
//!   "startup": {
//!     "steps": [
//!       { "name": "database", "waits_on": "postgres" },
//!       { "name": "migrations", "waits_on": "postgres" },
//!       { "name": "warmup", "waits_on": null }
//!     ],
//!     "expected_boot_ms": null
//!   },
//!   "shutdown": {
//!     "drain_delay_ms": 12000, "in_flight_deadline_ms": 10000,
//!     "drain_delay_derivation": { "readiness_period_ms": 5000,
//!       "readiness_failure_threshold": 2, "load_balancer_reaction_ms": 2000 }
//!   }
//! }
//! ```

use crate::probe::ProbeKind;
use crate::tier::Tier;
use serde::{Deserialize, Deserializer, Serialize};

/// The contract format version this crate writes.
pub const CONTRACT_VERSION: u32 = 2;

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

/// One health endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointContract {
    /// The probe this endpoint is meant for.
    pub probe: ProbeKind,
    /// The HTTP path, e.g. `/readyz` or `/internal/ready`. Per-entry sub-paths
    /// (`{path}/{name}`) also exist.
    pub path: String,
    /// The gRPC health service name answering the same question, if gRPC health is served.
    #[serde(default)]
    pub grpc_service: Option<String>,
    /// The names of the checks, liveness conditions or startup steps this endpoint evaluates.
    pub checks: Vec<String>,
    /// Whether any of those touches something outside the process (a database, a cache,
    /// another service). A liveness or startup endpoint for which this is `true` restarts the
    /// fleet during a shared dependency outage.
    pub checks_dependencies: bool,
    /// The dependencies this endpoint waits on, by name (`postgres`, `redis`…): its checks'
    /// and its startup steps'. Empty for an endpoint that answers from the process alone.
    #[serde(default)]
    pub waits_on: Vec<String>,
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
    /// Whether the check calls another service's health endpoint: a transitive health check,
    /// which lets one service's trouble fail every service that checks it.
    #[serde(default)]
    pub calls_health_endpoint: bool,
    /// What serves instead while this check fails (a check or an application capability):
    /// readiness degrades (`warn`) instead of failing while the fallback is healthy.
    #[serde(default)]
    pub fallback: Option<String>,
    /// Whether the service's own request outcomes outrank a failure of this check: while its
    /// requests succeed, the failure degrades to `warn` (busy, not broken). Requests that fail
    /// are the other direction, passive reports (`passive_failure_threshold`). `probity agent`
    /// declares it for the self-checks of an app whose request metrics it reads. Absent: `false`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub outranked_by_requests: bool,
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
    /// A worker's heartbeat: silent past its bound, outside a declared wait.
    Heartbeat,
}

/// One liveness condition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LivenessContract {
    /// The condition's name, e.g. `runtime_stall`.
    pub name: String,
    /// What it watches.
    pub kind: LivenessKind,
    /// The age that counts as a failure: the stall threshold of a runtime watchdog, the longest
    /// silence of a heartbeat.
    #[serde(default)]
    pub threshold_ms: Option<u64>,
}

/// Boot steps gating `/startupz` (internal ones) and `/readyz` (all of them).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartupContract {
    /// Named steps, all of which must complete before the service is ready.
    pub steps: Vec<StepContract>,
    /// How long a boot is expected to take at worst, when the service declared it. A startup
    /// probe budget shorter than this crash-loops the service.
    #[serde(default)]
    pub expected_boot_ms: Option<u64>,
}

/// One boot step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepContract {
    /// The step's name.
    pub name: String,
    /// The dependency the step waits on (connecting to the database, migrating it), or `None`
    /// for an internal step. A step that waits on a dependency gates readiness only, never
    /// startup: a dependency outage during a rollout must not get new pods killed.
    pub waits_on: Option<String>,
}

impl<'de> Deserialize<'de> for StepContract {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// Version 2 writes an object; version 1 wrote the name alone.
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Name(String),
            Step(StepFields),
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct StepFields {
            name: String,
            #[serde(default)]
            waits_on: Option<String>,
        }
        Ok(match Form::deserialize(deserializer)? {
            Form::Name(name) => StepContract {
                name,
                waits_on: None,
            },
            Form::Step(StepFields { name, waits_on }) => StepContract { name, waits_on },
        })
    }
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
    /// What the drain delay was derived from, or `None` when it was set by hand.
    #[serde(default)]
    pub drain_delay_derivation: Option<DrainDerivation>,
}

/// `drain delay = readiness period × failure threshold + load balancer reaction`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DrainDerivation {
    /// The readiness probe's `periodSeconds`, in ms.
    pub readiness_period_ms: u64,
    /// The readiness probe's `failureThreshold`.
    pub readiness_failure_threshold: u32,
    /// How long the load balancer takes to act on a failed readiness (EndpointSlice
    /// propagation, an external balancer's own checks), in ms.
    pub load_balancer_reaction_ms: u64,
}

impl DrainDerivation {
    /// The drain delay this derivation gives, in ms.
    pub fn drain_delay_ms(&self) -> u64 {
        self.readiness_period_ms
            .saturating_mul(u64::from(self.readiness_failure_threshold.max(1)))
            .saturating_add(self.load_balancer_reaction_ms)
    }
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
    /// The contract was written by a format this build does not know.
    #[error(
        "unsupported contract version {found} (this build reads versions 1 and {CONTRACT_VERSION})"
    )]
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
        if !(1..=CONTRACT_VERSION).contains(&contract.version) {
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

    /// The endpoint serving `path`, if any (a per-entry sub-path resolves to its parent).
    pub fn endpoint_for_path(&self, path: &str) -> Option<&EndpointContract> {
        let path = path.split(['?', '#']).next().unwrap_or(path);
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

    /// The startup step named `name`.
    pub fn step(&self, name: &str) -> Option<&StepContract> {
        self.startup.steps.iter().find(|step| step.name == name)
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
                waits_on: vec!["postgres".into()],
            }],
            checks: vec![CheckContract {
                name: "db".into(),
                tier: Tier::Hard,
                dependency: Some("postgres".into()),
                interval_ms: 1000,
                timeout_ms: 500,
                jitter_ms: 100,
                rise: 3,
                fall: 2,
                staleness_ms: 3000,
                fail_open_for_ms: None,
                boot_requires_rise: false,
                passive_failure_threshold: Some(5),
                calls_health_endpoint: false,
                outranked_by_requests: false,
                fallback: None,
            }],
            liveness: vec![LivenessContract {
                name: "runtime_stall".into(),
                kind: LivenessKind::RuntimeStall,
                threshold_ms: Some(5000),
            }],
            startup: StartupContract {
                steps: vec![StepContract {
                    name: "database".into(),
                    waits_on: Some("postgres".into()),
                }],
                expected_boot_ms: None,
            },
            shutdown: ShutdownContract {
                drain_delay_ms: 12000,
                in_flight_deadline_ms: None,
                drain_delay_derivation: Some(DrainDerivation {
                    readiness_period_ms: 5000,
                    readiness_failure_threshold: 2,
                    load_balancer_reaction_ms: 2000,
                }),
            },
        }
    }

    #[test]
    fn round_trips_through_json() {
        let contract = sample();
        let text = contract.to_json_pretty();
        assert_eq!(Contract::from_json(&text).unwrap(), contract);
        assert_eq!(
            contract
                .shutdown
                .drain_delay_derivation
                .unwrap()
                .drain_delay_ms(),
            12_000
        );
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
    fn reads_version_one_and_refuses_others() {
        let v1 = r#"{"version":1,"endpoints":[],"checks":[],"liveness":[],
            "startup":{"steps":["migrations"]},"shutdown":{"drain_delay_ms":5000}}"#;
        let contract = Contract::from_json(v1).unwrap();
        assert_eq!(
            contract.startup.steps,
            vec![StepContract {
                name: "migrations".into(),
                waits_on: None
            }]
        );
        let text = sample()
            .to_json_pretty()
            .replace("\"version\": 2", "\"version\": 9");
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
