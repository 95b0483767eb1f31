//! A fleet in a steady state: its probe workers skip their ticks while nothing can change,
//! and the report is what every tick would have made it.

use probity_sim::{DrainOutcome, Format, Scenario, simulate};
use std::path::Path;

fn run(yaml: &str, seed: u64) -> probity_sim::Report {
    let scenario = Scenario::parse(yaml, Format::Yaml, Path::new("steady.yaml")).unwrap();
    simulate(&scenario, seed)
}

const QUIET: &str = r#"
name: quiet
duration: 10m
fleet: { replicas: 3 }
dependencies: { db: {} }
app:
  endpoints:
    /livez: { checks: [] }
    /readyz: { mode: cached, checks: [db] }
  checks:
    db: { dependency: db, interval: 5s, timeout: 1s, jitter: 500ms }
container:
  livenessProbe:  { httpGet: { path: /livez, port: 8080 }, periodSeconds: 1 }
  readinessProbe: { httpGet: { path: /readyz, port: 8080 }, periodSeconds: 2 }
"#;

/// Every skipped tick counts: each pod's liveness worker ticks once a second and its
/// readiness worker every two seconds, whatever their phases.
#[test]
fn skipped_ticks_are_counted_as_probes() {
    for seed in [1, 2, 3] {
        let report = run(QUIET, seed);
        assert_eq!(report.probe_rps, 3.0 * (1.0 + 0.5), "seed {seed}");
        assert_eq!(report.restarts, 0);
        assert_eq!(report.requests_failed, 0);
    }
}

/// Quiet workers wake when a shared outage turns the cached check unhealthy: every pod
/// leaves rotation within a poll interval (with jitter), three readiness periods (the
/// default failureThreshold) and the endpoints' propagation of the onset, comes back after
/// the outage, and nothing restarts.
#[test]
fn an_outage_wakes_quiet_readiness_workers() {
    let yaml = format!(
        "{QUIET}faults:\n  - {{ kind: dependency-outage, dependency: db, at: 5m, duration: 1m }}\n"
    );
    for seed in [1, 2, 3] {
        let report = run(&yaml, seed);
        assert_eq!(report.drain, DrainOutcome::Drained, "seed {seed}");
        let drain = report.time_to_drain_s.unwrap();
        assert!(
            drain <= 5.5 + 3.0 * 2.0 + 2.0,
            "seed {seed}: drained after {drain} s"
        );
        assert_eq!(report.drains, 3, "seed {seed}");
        assert_eq!(report.restarts, 0, "seed {seed}");
        // Back in rotation: the last error is before the end of the run.
        assert!(report.time_to_recover_s.is_some(), "seed {seed}");
        // The probes were counted throughout.
        assert_eq!(report.probe_rps, 3.0 * (1.0 + 0.5), "seed {seed}");
    }
}

/// A container that restarts wakes its workers: a liveness probe on the database (the
/// wiring the incidents warn about) kills every pod during the outage, and the workers of
/// each new container go on probing it, killing it again, until the run ends.
#[test]
fn a_restart_wakes_the_workers_of_the_new_container() {
    let yaml = r#"
name: db-in-liveness
duration: 10m
fleet: { replicas: 3 }
dependencies: { db: {} }
app:
  endpoints:
    /livez: { mode: cached, checks: [db] }
    /readyz: { mode: cached, checks: [db] }
  checks:
    db: { dependency: db, interval: 5s, timeout: 1s }
container:
  livenessProbe:  { httpGet: { path: /livez, port: 8080 }, periodSeconds: 2, failureThreshold: 2 }
  readinessProbe: { httpGet: { path: /readyz, port: 8080 }, periodSeconds: 2 }
faults:
  - { kind: dependency-outage, dependency: db, at: 5m, duration: 40s }
"#;
    let report = run(yaml, 1);
    assert!(report.restarts >= 3 * 3, "restarts: {}", report.restarts);
    assert!(
        report.kills.iter().all(|kill| kill.at_s >= 300.0),
        "nothing is killed before the outage"
    );
    let same = run(yaml, 1);
    assert_eq!(
        report, same,
        "a run is a pure function of scenario and seed"
    );
}
