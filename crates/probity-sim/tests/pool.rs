//! A connection pool as a bounded queue: a readiness check that asks whether a connection is
//! idle drains a busy, healthy fleet; one that asks whether a request gets a connection within
//! its budget does not; both drain a pod whose pool leaked dry.

use probity_sim::report::{LaneState, Report};
use probity_sim::{Scenario, effective_seed, simulate};
use std::path::PathBuf;

fn run(name: &str) -> Report {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(format!("{name}.yaml"));
    let scenario = Scenario::load(&path).unwrap();
    simulate(&scenario, effective_seed(&scenario, None))
}

/// Times a pod left rotation (out of rotation) between `from_s` and `to_s`.
fn drains_between(report: &Report, pod: usize, from_s: f64, to_s: f64) -> usize {
    report.instances[pod]
        .lanes
        .iter()
        .filter(|span| span.state == LaneState::OutOfRotation)
        .filter(|span| span.from_s >= from_s && span.from_s < to_s)
        .count()
}

const LEAK_S: f64 = 600.0;

#[test]
fn an_idle_connection_check_drains_a_busy_fleet() {
    let report = run("busy-pool-before");
    // Before the leak, nothing is wrong: every pool keeps up at 60%.
    let busy_drains: usize = (0..3)
        .map(|pod| drains_between(&report, pod, 0.0, LEAK_S))
        .sum();
    assert!(busy_drains >= 10, "{busy_drains} drains of a healthy fleet");
    // The drains overload the pods left in rotation, and empty the Service at times.
    assert!(report.requests_refused > 0);
    assert!(
        report.requests_failed > 10_000,
        "{}",
        report.requests_failed
    );
}

#[test]
fn an_acquire_check_keeps_a_busy_fleet_in_rotation() {
    let report = run("busy-pool-after");
    for pod in 0..3 {
        assert_eq!(drains_between(&report, pod, 0.0, LEAK_S), 0, "pod {pod}");
    }
    assert_eq!(report.requests_refused, 0);
    // Only the leaked pod leaves, once.
    assert_eq!(report.drains, 1);
    assert_eq!(report.instances[0].drains, 1);
    assert_eq!(report.instances[1].failed + report.instances[2].failed, 0);
}

#[test]
fn both_checks_drain_the_leaked_pool() {
    for name in ["busy-pool-before", "busy-pool-after"] {
        let report = run(name);
        let out = report.instances[0]
            .lanes
            .iter()
            .find(|span| span.from_s >= LEAK_S && span.state == LaneState::OutOfRotation)
            .map(|span| span.from_s - LEAK_S)
            .unwrap_or_else(|| panic!("{name}: the leaked pod stayed in rotation"));
        // The next poll (1 s) plus two failed probes (5 s apart) plus propagation (1 s).
        assert!(out <= 12.0, "{name}: drained {out} s after the leak");
        // And it stays out: no connection comes back.
        let last = report.instances[0].lanes.last().unwrap();
        assert_ne!(last.state, LaneState::Ready, "{name}");
    }
}
