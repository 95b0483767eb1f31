//! What the model expresses beyond probes: a container that crashes on every start, and a
//! pod given more than it can serve.

use probity_sim::report::{KillReason, Report};
use probity_sim::{Scenario, effective_seed, simulate};
use std::path::PathBuf;

fn run(name: &str) -> Report {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(format!("{name}.yaml"));
    let scenario = Scenario::load(&path).unwrap();
    simulate(&scenario, effective_seed(&scenario, None))
}

#[test]
fn a_container_that_crashes_on_start_loops_through_the_backoff_without_any_probe() {
    let report = run("crash-loop");
    let exits: Vec<f64> = report
        .kills
        .iter()
        .filter(|kill| kill.instance == "instance-1")
        .inspect(|kill| assert_eq!(kill.reason, KillReason::Exited))
        .map(|kill| kill.at_s)
        .collect();
    assert!(exits.len() >= 8, "{exits:?}");
    // Between two exits: the backoff, then half a second of running. The first restart is
    // immediate; then 10 s, doubling, capped at 300 s.
    let gaps: Vec<u64> = exits
        .windows(2)
        .map(|pair| (pair[1] - pair[0] - 0.5).round() as u64)
        .collect();
    assert_eq!(&gaps[..7], &[0, 10, 20, 40, 80, 160, 300], "{gaps:?}");
    // The other instances never restart; the crashing one fails its third of the traffic
    // only while it is routed to (it never becomes ready long enough).
    assert_eq!(
        report.instances[1].restarts + report.instances[2].restarts,
        0
    );
    // Every exit is followed by a restart, but the last one's falls after the run.
    assert!((exits.len() - 1..=exits.len()).contains(&(report.restarts as usize)));
}

#[test]
fn a_pod_sent_more_than_it_can_serve_fails_the_excess() {
    let report = run("overload-on-drain");
    // Before the drain each pod gets 333 requests/s of its 400: nothing fails.
    let before: f64 = report.error_rate_series[..55].iter().sum();
    assert_eq!(before, 0.0);
    // After it, two pods get 500 each: 100 of every 500 fail.
    let after = report.error_rate_between(70.0, 170.0);
    assert!((after - 0.2).abs() < 0.01, "{after}");
    assert_eq!(
        report.drains, 0,
        "an operator's drain is not a health check's"
    );
}
