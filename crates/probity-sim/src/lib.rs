//! probity-sim: a deterministic fleet simulator for health-check wiring.
//!
//! It answers "what will my fleet do during a 40 s database blip with these probes?" before
//! production does. A [`Scenario`] describes the fleet (pods, the container's probes written
//! as in a Kubernetes spec, what each health endpoint really checks), the router in front of it
//! (a Kubernetes Service, HAProxy, Envoy, an AWS ALB or a consistent-hash balancer) and faults
//! on a timeline; [`simulate`] runs it and returns a [`Report`]: error rates over time,
//! restarts, time to drain and to recover, outage time, and the load health checks put on the
//! pods and on each dependency.
//!
//! ```
//! use probity_sim::{Format, Scenario, simulate};
//! use std::path::Path;
//!
//! let yaml = r#"
//! name: one-leaking-instance
//! duration: 5m
//! fleet: { replicas: 3 }
//! dependencies: { db: {} }
//! app:
//!   endpoints:
//!     /health: { checks: [] }
//! container:
//!   livenessProbe:  { httpGet: { path: /health, port: 8080 }, periodSeconds: 10 }
//!   readinessProbe: { httpGet: { path: /health, port: 8080 }, periodSeconds: 5 }
//! faults:
//!   - { kind: pool-exhausted, instance: 0, dependency: db, at: 1m }
//! "#;
//! let scenario = Scenario::parse(yaml, Format::Yaml, Path::new("example.yaml")).unwrap();
//! let report = simulate(&scenario, 1);
//! // A health endpoint that checks nothing keeps the broken instance in rotation.
//! assert_eq!(report.drain, probity_sim::DrainOutcome::NeverDrained);
//! assert!((report.fleet_error_rate - 1.0 / 3.0).abs() < 0.01);
//! ```
//!
//! The models and their sources are described in `docs/simulate.md`; the kubelet rules are
//! those of [`probity_contract::kube`], each citing the Kubernetes code it follows. Runs are deterministic: the same
//! scenario and seed give the same report, byte for byte once serialised.

pub mod chart;
mod engine;
pub mod error;
pub mod report;
pub mod scenario;
pub mod time;

pub use error::ScenarioError;
pub use report::{DrainOutcome, Report, common_window, compare_text};
pub use scenario::{Format, Scenario};

/// Runs a scenario with a seed. The seed decides probe ticker phases, poll jitter, flaky
/// dependency outcomes and everything else left to chance.
pub fn simulate(scenario: &Scenario, seed: u64) -> Report {
    engine::run(scenario, seed, &mut |_| {})
}

/// Runs a scenario like [`simulate`], telling `progress` the simulated time reached (in
/// milliseconds) every few tens of thousands of events, for a progress display.
pub fn simulate_with_progress(
    scenario: &Scenario,
    seed: u64,
    progress: &mut dyn FnMut(time::Millis),
) -> Report {
    engine::run(scenario, seed, progress)
}

/// The seed a scenario runs with: the caller's, else the file's, else 1.
pub fn effective_seed(scenario: &Scenario, requested: Option<u64>) -> u64 {
    requested.or(scenario.seed).unwrap_or(1)
}
