//! Passive reports: real requests that fail on a dependency fail its check at once, before the
//! next poll, as probity's `Reporter` does.

use probity_sim::report::{LaneState, Report};
use probity_sim::{Format, Scenario, effective_seed, simulate};
use std::path::{Path, PathBuf};

fn scenario_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(format!("{name}.yaml"))
}

fn load(name: &str) -> Scenario {
    Scenario::load(&scenario_path(name)).unwrap()
}

fn run(name: &str) -> Report {
    let scenario = load(name);
    simulate(&scenario, effective_seed(&scenario, None))
}

fn parse(yaml: &str) -> Scenario {
    Scenario::parse(yaml, Format::Yaml, Path::new("passive.yaml")).unwrap()
}

/// The times an instance left rotation and came back, after `after_s`.
fn transitions(report: &Report, instance: usize, after_s: f64) -> Vec<(f64, LaneState)> {
    report.instances[instance]
        .lanes
        .iter()
        .filter(|span| span.from_s >= after_s)
        .map(|span| (span.from_s, span.state))
        .collect()
}

const WITHOUT: &str = "pool-leak-slow-poll-without-passive-reports";
const WITH: &str = "pool-leak-slow-poll-with-passive-reports";

/// Each check's name and passive threshold.
fn thresholds(scenario: &Scenario) -> Vec<(String, Option<u32>)> {
    scenario
        .app
        .checks
        .iter()
        .map(|check| (check.name.clone(), check.passive_failure_threshold))
        .collect()
}

fn threshold(scenario: &Scenario, check: &str) -> Option<u32> {
    thresholds(scenario)
        .into_iter()
        .find(|(name, _)| name == check)
        .and_then(|(_, threshold)| threshold)
}

#[test]
fn the_pair_differs_only_in_passive_reports() {
    let without = load(WITHOUT);
    let with = load(WITH);
    assert_eq!(without.seed, with.seed);
    assert_eq!(threshold(&without, "db"), None);
    assert_eq!(threshold(&with, "db"), Some(5));
    let others = |scenario: &Scenario| {
        thresholds(scenario)
            .into_iter()
            .filter(|(name, _)| name != "db")
            .collect::<Vec<_>>()
    };
    assert_eq!(others(&without), others(&with));
    assert!(
        others(&with)
            .iter()
            .all(|(_, threshold)| threshold.is_none())
    );
}

#[test]
fn passive_reports_drain_a_leaking_instance_before_the_next_poll() {
    let without = run(WITHOUT);
    let with = run(WITH);
    // Without: the leak at 2m waits for the 10 s poller (it polls between 126.1 s and
    // 131.1 s), then two failed readiness probes (131.1 s, 136.1 s) and 1 s of propagation.
    let drain = without.time_to_drain_s.expect("drained");
    assert!((drain - 17.112).abs() < 0.001, "{drain}");
    assert!(
        without.requests_failed.abs_diff(570) <= 1,
        "{}",
        without.requests_failed
    );
    // With: 5 failed requests at 33.3/s fail the check 150 ms after the leak; the next
    // readiness probes (121.1 s, 126.1 s) fail, and the endpoint goes 1 s later.
    let drain = with.time_to_drain_s.expect("drained");
    assert!((drain - 7.112).abs() < 0.001, "{drain}");
    assert!(
        with.requests_failed.abs_diff(237) <= 1,
        "{}",
        with.requests_failed
    );
    for report in [&without, &with] {
        assert_eq!(report.restarts, 0);
        assert_eq!(report.drains, 1);
        // Only the leaking instance fails anything.
        assert_eq!(report.requests_failed, report.instances[0].failed);
    }
    assert!(with.peak_error_rate < 0.6 * without.peak_error_rate);
}

#[test]
fn the_check_is_repolled_once_when_it_falls_not_at_every_run_of_failures() {
    let without = run(WITHOUT);
    let with = run(WITH);
    let seconds = with.duration_s;
    let polls = |report: &Report| (report.dependency_check_qps["db"] * seconds).round();
    // Three pollers at 10 s ± 1 s for 5 minutes.
    assert_eq!(polls(&without), 90.0);
    // Every 5 failures (150 ms at 33.3 requests/s) from 120.15 s until the endpoint is removed
    // at 127.112 s fails the check again (46 runs), but only the first, which turns it
    // unhealthy, wakes the poller.
    assert_eq!(polls(&with) - polls(&without), 1.0);
}

#[test]
fn passive_reports_never_wait_for_the_poll_whatever_the_phases() {
    let without = load(WITHOUT);
    let with = load(WITH);
    let (mut sooner, mut failed_without, mut failed_with) = (0, 0, 0);
    for seed in 1..=12 {
        let a = simulate(&without, seed);
        let b = simulate(&with, seed);
        let (slow, fast) = (a.time_to_drain_s.unwrap(), b.time_to_drain_s.unwrap());
        assert!(fast <= slow, "seed {seed}: {fast} > {slow}");
        // Bounded by the readiness probes alone: 150 ms of requests, a probe period to the
        // next tick, one more period (failureThreshold 2), 1 s of propagation.
        assert!(fast <= 0.15 + 5.0 + 5.0 + 1.0, "seed {seed}: {fast}");
        if fast < slow {
            sooner += 1;
            // Sooner by whole readiness periods: the probe ticks are the same.
            let periods = (slow - fast) / 5.0;
            assert!((periods - periods.round()).abs() < 1e-6, "seed {seed}");
        }
        failed_without += a.requests_failed;
        failed_with += b.requests_failed;
    }
    assert!(sooner >= 8, "{sooner} of 12 seeds drained sooner");
    assert!(
        failed_with * 10 <= failed_without * 8,
        "{failed_with} vs {failed_without}"
    );
}

const POLL_STILL_PASSES: &str = r#"
name: poll-still-passes
duration: 5m
fleet: { replicas: 3 }
dependencies: { db: {} }
requests: { rate: 100 }
app:
  endpoints:
    /livez: { checks: [] }
    /readyz: { mode: cached, checks: [db] }
  checks:
    db: { dependency: db, interval: 10s, timeout: 2s, jitter: 1s, rise: 3, fall: 1, uses_pool: false, passive_failure_threshold: 5 }
container:
  livenessProbe:  { httpGet: { path: /livez, port: 8080 } }
  readinessProbe: { httpGet: { path: /readyz, port: 8080 }, periodSeconds: 5, failureThreshold: 2 }
faults:
  - { kind: pool-exhausted, instance: 0, dependency: db, at: 1m }
"#;

#[test]
fn recovery_needs_rise_successful_polls() {
    // The poll opens its own connection (`uses_pool: false`) and passes; only the requests see
    // the leaked pool. Passive reports take the instance out; out of rotation it gets no
    // requests, three polls (rise) bring it back, and real requests take it out again.
    let report = simulate(&parse(POLL_STILL_PASSES), 1);
    let lanes = transitions(&report, 0, 60.0);
    assert!(lanes.len() >= 6, "{lanes:?}");
    for pair in lanes.windows(2) {
        let ((from, state), (to, _)) = (pair[0], pair[1]);
        let length = to - from;
        match state {
            // The last report before the endpoint went restarted the rise count: the next poll
            // on the cadence (within 11 s) and two more 10 s ± 1 s apart, then a readiness
            // probe (within 5 s) and 1 s of propagation.
            LaneState::OutOfRotation => assert!((19.0..=39.0).contains(&length), "{lanes:?}"),
            // Back in rotation: 150 ms of requests, then two failed probes and propagation.
            LaneState::Ready => assert!((5.0..=12.0).contains(&length), "{lanes:?}"),
            other => panic!("unexpected {other:?}: {lanes:?}"),
        }
    }
    // Without passive reports the passing poll never notices anything.
    let without = simulate(
        &parse(&POLL_STILL_PASSES.replace(", passive_failure_threshold: 5", "")),
        1,
    );
    assert_eq!(without.drains, 0);
}

const OUTAGE: &str = r#"
name: outage
duration: 3m
fleet: { replicas: 3 }
dependencies: { db: { outage: refuse } }
requests: { rate: 100, timeout: 3s }
app:
  endpoints:
    /livez: { checks: [] }
    /readyz: { mode: cached, checks: [db] }
  checks:
    db: { dependency: db, interval: 30s, timeout: 2s, passive_failure_threshold: 5 }
container:
  livenessProbe:  { httpGet: { path: /livez, port: 8080 } }
  readinessProbe: { httpGet: { path: /readyz, port: 8080 }, periodSeconds: 1, failureThreshold: 1 }
faults:
  - { kind: dependency-outage, dependency: db, at: 1m, duration: 30s }
"#;

#[test]
fn a_hanging_dependency_is_reported_when_the_calls_time_out() {
    for seed in 1..=4 {
        // Refused connections fail at once: 5 reports in 150 ms, a probe within 1 s, 1 s of
        // propagation.
        let refused = simulate(&parse(OUTAGE), seed);
        let drain = refused.time_to_drain_s.unwrap();
        assert!((1.15..=2.2).contains(&drain), "seed {seed}: {drain}");
        // Hung calls fail at the 3 s request timeout: the reports start 3 s later.
        let hung = simulate(
            &parse(&OUTAGE.replace("outage: refuse", "outage: hang")),
            seed,
        );
        let drain = hung.time_to_drain_s.unwrap();
        assert!((4.15..=5.2).contains(&drain), "seed {seed}: {drain}");
        // The 30 s poller alone takes far longer.
        let polled = simulate(
            &parse(&OUTAGE.replace(", passive_failure_threshold: 5", "")),
            seed,
        );
        assert!(polled.time_to_drain_s.unwrap() > 10.0, "seed {seed}");
    }
}

const CONTRACT: &str = r#"{
  "version": 1, "service": "checkout",
  "endpoints": [
    { "probe": "liveness", "path": "/livez", "checks": ["runtime_stall"], "checks_dependencies": false },
    { "probe": "readiness", "path": "/readyz", "checks": ["db"], "checks_dependencies": true }
  ],
  "checks": [
    { "name": "db", "tier": "hard", "dependency": "postgres", "interval_ms": 10000, "timeout_ms": 2000,
      "jitter_ms": 1000, "rise": 3, "fall": 1, "staleness_ms": 30000, "fail_open_for_ms": null,
      "boot_requires_rise": false, "passive_failure_threshold": THRESHOLD }
  ],
  "liveness": [ { "name": "runtime_stall", "kind": "runtime_stall", "threshold_ms": 5000 } ],
  "startup": { "steps": [], "expected_boot_ms": null },
  "shutdown": { "drain_delay_ms": 5000, "in_flight_deadline_ms": 10000 }
}"#;

const FROM_CONTRACT: &str = r#"
name: leak-from-contract
seed: 7
duration: 5m
fleet: { replicas: 3 }
dependencies: { postgres: {} }
app: { contract: contract.json }
container:
  livenessProbe:  { httpGet: { path: /livez, port: 8080 } }
  readinessProbe: { httpGet: { path: /readyz, port: 8080 }, periodSeconds: 5, failureThreshold: 2 }
faults:
  - { kind: pool-exhausted, instance: 0, dependency: postgres, at: 2m }
"#;

/// Loads FROM_CONTRACT with the contract's `passive_failure_threshold` set to `threshold`.
fn from_contract(threshold: &str) -> Result<Scenario, String> {
    let dir = std::env::temp_dir().join(format!(
        "probity-sim-passive-{}-{threshold}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("contract.json"),
        CONTRACT.replace("THRESHOLD", threshold),
    )
    .unwrap();
    let path = dir.join("scenario.yaml");
    std::fs::write(&path, FROM_CONTRACT).unwrap();
    let scenario = Scenario::load(&path).map_err(|error| error.to_string());
    std::fs::remove_dir_all(&dir).ok();
    scenario
}

#[test]
fn a_contract_threshold_feeds_passive_reports() {
    let with = from_contract("5").unwrap();
    assert_eq!(threshold(&with, "db"), Some(5));
    let without = from_contract("null").unwrap();
    assert_eq!(threshold(&without, "db"), None);
    // The same policy as the scenario pair, read from a contract: the same figures.
    let (without, with) = (simulate(&without, 7), simulate(&with, 7));
    assert!((without.time_to_drain_s.unwrap() - 17.112).abs() < 0.001);
    assert!((with.time_to_drain_s.unwrap() - 7.112).abs() < 0.001);
    assert!(with.requests_failed * 2 < without.requests_failed);

    let error = from_contract("0").unwrap_err();
    assert!(
        error.contains("app.contract: checks.db.passive_failure_threshold: must be at least 1"),
        "{error}"
    );
}

const CHECKED: &str = r#"
name: checked
duration: 2m
dependencies: { db: {} }
app:
  endpoints:
    /livez: { checks: [deadlock] }
    /readyz: { mode: cached, checks: [db] }
  checks:
    db: { dependency: db, passive_failure_threshold: 5 }
    deadlock: { internal: deadlock }
container:
  livenessProbe:  { httpGet: { path: /livez, port: 8080 } }
  readinessProbe: { httpGet: { path: /readyz, port: 8080 } }
"#;

#[test]
fn passive_thresholds_are_validated() {
    parse(CHECKED);
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "passive_failure_threshold: 5",
            "passive_failure_threshold: 0",
            "app.checks.db.passive_failure_threshold",
            "must be at least 1",
        ),
        (
            "passive_failure_threshold: 5",
            "passive_failure_threshold: -1",
            "app.checks.db.passive_failure_threshold",
            "a whole number, 0 or more",
        ),
        (
            "{ internal: deadlock }",
            "{ internal: deadlock, passive_failure_threshold: 3 }",
            "app.checks.deadlock.passive_failure_threshold",
            "an `internal` check makes none",
        ),
        (
            "/readyz: { mode: cached, checks: [db] }",
            "/readyz: { mode: sync, checks: [db] }",
            "app.checks.db.passive_failure_threshold",
            "no endpoint with `mode: cached` lists `db`",
        ),
    ];
    for (from, to, field, reason) in cases {
        let yaml = CHECKED.replacen(from, to, 1);
        assert_ne!(yaml, CHECKED, "case {to} did not apply");
        let error = Scenario::parse(&yaml, Format::Yaml, Path::new("bad.yaml")).unwrap_err();
        let text = error.to_string();
        assert_eq!(error.field(), Some(*field), "{text}");
        assert!(text.starts_with("bad.yaml: "), "{text}");
        assert!(text.contains(reason), "expected `{reason}` in: {text}");
    }
}

const BURSTS: &str = r#"
name: bursts
duration: 4m
fleet: { replicas: 3 }
dependencies: { db: { outage: refuse } }
requests: { rate: 100 }
app:
  endpoints:
    /livez: { checks: [] }
    /readyz: { mode: cached, checks: [db] }
  checks:
    db: { dependency: db, interval: 1h, timeout: 2s, passive_failure_threshold: 5 }
container:
  livenessProbe:  { httpGet: { path: /livez, port: 8080 } }
  readinessProbe: { httpGet: { path: /readyz, port: 8080 }, periodSeconds: 1, failureThreshold: 1 }
faults:
  - { kind: flapping-dependency, dependency: db, at: 1m, duration: 2m, period: 10s, down: 130ms }
"#;

#[test]
fn successes_between_failures_reset_the_run() {
    // Each 130 ms down period fails 4.3 requests in a row per instance (33.3/s); the
    // successes in between reset the run, so a threshold of 5 is never reached.
    let report = simulate(&parse(BURSTS), 1);
    assert_eq!(report.drains, 0);
    assert!(report.requests_failed > 0);
    // A threshold of 4 is reached in the first down period on every instance.
    let report = simulate(
        &parse(&BURSTS.replace(
            "passive_failure_threshold: 5",
            "passive_failure_threshold: 4",
        )),
        1,
    );
    assert_eq!(report.drains, 3);
    let drain = report.time_to_drain_s.unwrap();
    assert!((1.12..=2.2).contains(&drain), "{drain}");
}

const FLAKY: &str = r#"
name: flaky
duration: 4m
fleet: { replicas: 3 }
dependencies: { db: {} }
requests: { rate: 100 }
app:
  endpoints:
    /livez: { checks: [] }
    /readyz: { mode: cached, checks: [db] }
  checks:
    db: { dependency: db, interval: 1h, timeout: 2s, rise: 3, passive_failure_threshold: 5 }
container:
  livenessProbe:  { httpGet: { path: /livez, port: 8080 } }
  readinessProbe: { httpGet: { path: /readyz, port: 8080 }, periodSeconds: 1, failureThreshold: 1 }
faults:
  - { kind: flapping-dependency, dependency: db, at: 1m, duration: 2m, period: 2m, down: 0s, flicker: FLICKER }
"#;

#[test]
fn partial_failures_trip_the_check_after_the_expected_run() {
    // Half the calls fail: 5 in a row take (1 − 0.5⁵) / (0.5 × 0.5⁵) = 62 requests on average,
    // 1.86 s at 33.3 requests/s; then a probe within 1 s and 1 s of propagation. Every forced
    // failure starts the rise count over, so the re-polls (half of them pass) cannot bring an
    // instance back while it still gets requests, and out of rotation it gets none.
    let report = simulate(&parse(&FLAKY.replace("FLICKER", "0.5")), 1);
    assert_eq!(report.drains, 3);
    let drain = report.time_to_drain_s.unwrap();
    assert!((2.86..=3.9).contains(&drain), "{drain}");
    // One call in ten: 5 in a row take about 111 000 requests, 56 minutes per instance.
    let report = simulate(&parse(&FLAKY.replace("FLICKER", "0.1")), 1);
    assert_eq!(report.drains, 0);
}
