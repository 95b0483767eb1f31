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

#[test]
fn a_hard_check_fails_open_for_its_window_then_closed() {
    let before = run("key-refresh-outage-before");
    assert_eq!(before.drains, 3);
    assert!(
        before.requests_refused > 10_000,
        "{}",
        before.requests_refused
    );
    let after = run("key-refresh-outage-after");
    assert_eq!(after.drains, 0);
    assert_eq!(after.requests_failed, 0);
    // Past the window it fails closed: a 7-minute outage drains the fleet about 5 minutes in.
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/key-refresh-outage-after.yaml");
    let text = std::fs::read_to_string(path)
        .unwrap()
        .replace("at: 2m, duration: 2m", "at: 30s, duration: 7m");
    let long = Scenario::parse(
        &text,
        probity_sim::Format::Yaml,
        std::path::Path::new("long.yaml"),
    )
    .unwrap();
    let report = simulate(&long, 5);
    assert_eq!(report.drains, 3);
    for instance in &report.instances {
        let out = instance
            .lanes
            .iter()
            .find(|span| span.state == probity_sim::report::LaneState::OutOfRotation)
            .expect("drained")
            .from_s;
        // Unhealthy at the first failed poll after 30 s, open for 5 minutes, then the next
        // probes fail (2 × 5 s) and the endpoint follows (1 s).
        assert!(
            (330.0..=352.0).contains(&out),
            "{}: out at {out}",
            instance.name
        );
    }
}

#[test]
fn a_contracts_fail_open_window_is_read() {
    let dir = std::env::temp_dir().join(format!("probity-fail-open-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let contract = r#"{
  "version": 1,
  "endpoints": [
    { "probe": "liveness", "path": "/livez", "checks": [], "checks_dependencies": false },
    { "probe": "readiness", "path": "/readyz", "checks": ["jwks"], "checks_dependencies": true }
  ],
  "checks": [
    { "name": "jwks", "tier": "hard", "dependency": "jwks", "interval_ms": 5000, "timeout_ms": 1000,
      "jitter_ms": 0, "rise": 1, "fall": 1, "staleness_ms": 60000, "fail_open_for_ms": 300000,
      "boot_requires_rise": false, "passive_failure_threshold": null }
  ],
  "liveness": [],
  "startup": { "steps": [] },
  "shutdown": { "drain_delay_ms": 0 }
}"#;
    std::fs::write(dir.join("contract.json"), contract).unwrap();
    let yaml = "name: from-contract\nduration: 8m\ndependencies: { db: {}, jwks: { outage: refuse } }\nrequests: { mix: [{ share: 1.0, needs: [db] }] }\napp: { contract: contract.json }\ncontainer:\n  livenessProbe:  { httpGet: { path: /livez, port: 8080 } }\n  readinessProbe: { httpGet: { path: /readyz, port: 8080 }, periodSeconds: 5, failureThreshold: 2 }\nfaults:\n  - { kind: dependency-outage, dependency: jwks, at: 2m, duration: 2m }\n";
    let path = dir.join("scenario.yaml");
    std::fs::write(&path, yaml).unwrap();
    let scenario = Scenario::load(&path).unwrap();
    let check = scenario
        .app
        .checks
        .iter()
        .find(|check| check.name == "jwks")
        .unwrap();
    assert_eq!(check.fail_open_for, Some(300_000));
    let report = simulate(&scenario, 1);
    assert_eq!(
        report.drains, 0,
        "the contract's window keeps the fleet in rotation"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_dependency_fault_can_reach_only_some_pods() {
    let report = run("partition");
    assert_eq!(report.drains, 2);
    assert_eq!(report.instances[0].drains, 1);
    assert_eq!(report.instances[1].drains, 1);
    for instance in &report.instances[2..] {
        assert_eq!(instance.drains, 0, "{}", instance.name);
        assert_eq!(instance.failed, 0, "{}", instance.name);
    }
    // The cut-off pods fail their share until they are drained, within seconds.
    assert!(report.time_to_drain_s.expect("drained") <= 16.0);
    assert!(report.peak_error_rate > 0.2 && report.peak_error_rate < 0.4);
    assert_eq!(report.requests_refused, 0);
    // An instance that is not in the fleet is an error at its field.
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/partition.yaml"),
    )
    .unwrap()
    .replace("instances: [0, 1]", "instances: [0, 9]");
    let error = Scenario::parse(
        &text,
        probity_sim::Format::Yaml,
        std::path::Path::new("p.yaml"),
    )
    .unwrap_err();
    assert_eq!(error.field(), Some("faults[0].instances[1]"), "{error}");
}

#[test]
fn envoy_success_rate_outlier_detection_ejects_a_partly_failing_pod() {
    let before = run("partial-failure-before");
    let after = run("partial-failure-after");
    let share_failed =
        |report: &Report| report.instances[3].failed as f64 / report.requests_total as f64;
    // Without success-rate detection the pod keeps its tenth: 30% of it fails for 4 minutes.
    assert!(
        before.instances[3].error_rate > 0.2,
        "{}",
        before.instances[3].error_rate
    );
    assert_eq!(before.instances[3].drains, 0);
    // With it, the pod is ejected within a sweep or two, and again after each return.
    assert!(
        after.instances[3].drains >= 2,
        "{} ejections",
        after.instances[3].drains
    );
    assert!(share_failed(&after) < share_failed(&before) / 2.0);
    // Nobody else is ejected.
    for (index, instance) in after.instances.iter().enumerate() {
        if index != 3 {
            assert_eq!(instance.drains, 0, "{}", instance.name);
        }
    }
}

#[test]
fn envoy_fed_from_the_endpoints_has_nothing_to_panic_over() {
    let static_hosts = run("fleet-wide-readiness-envoy");
    let mesh = run("fleet-wide-readiness-mesh");
    // A static host list panics over every pod: the 30% that need no database still work.
    assert!((static_hosts.peak_error_rate - 0.7).abs() < 0.01);
    // From the endpoints, the hosts are gone with the readiness: every request fails, as
    // "no healthy upstream" (an answer, not a refused connection).
    assert!(mesh.peak_error_rate > 0.999, "{}", mesh.peak_error_rate);
    assert_eq!(mesh.requests_refused, 0);
    assert!(mesh.requests_failed > static_hosts.requests_failed);
    // And it comes back when the endpoints do.
    assert!(mesh.time_to_recover_s.expect("recovered") <= 6.0);
}
