//! Every incident, replayed: the simulated outcome against what its write-up reports, with
//! the tolerance the write-up's own precision allows.

use probity_sim::report::{KillReason, LaneState, Report};
use probity_sim::{Scenario, effective_seed, simulate};
use std::path::PathBuf;

fn scenario_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(format!("{name}.yaml"))
}

fn run(name: &str) -> Report {
    let scenario = Scenario::load(&scenario_path(name)).unwrap();
    simulate(&scenario, effective_seed(&scenario, None))
}

fn first_kill(report: &Report, instance: &str) -> Option<f64> {
    report
        .kills
        .iter()
        .find(|kill| kill.instance == instance)
        .map(|kill| kill.at_s)
}

/// When an instance entered a state after `after_s`.
fn entered(report: &Report, instance: usize, state: LaneState, after_s: f64) -> Option<f64> {
    report.instances[instance]
        .lanes
        .iter()
        .find(|span| span.state == state && span.from_s >= after_s)
        .map(|span| span.from_s)
}

#[test]
fn pool_leak_before_keeps_a_third_of_traffic_failing() {
    let report = run("pool-leak-before");
    // "fleet error rate 33.4%", stated to a tenth of a percent.
    assert!(
        (report.fleet_error_rate - 0.334).abs() <= 0.005,
        "{}",
        report.fleet_error_rate
    );
    assert_eq!(report.drains, 0);
    assert_eq!(report.time_to_drain_s, None);
    assert_eq!(report.restarts, 0);
    // 26 minutes of impact (09:14:02 to 09:40:11), until the manual drain.
    assert!(
        (report.outage_s - 1569.0).abs() <= 60.0,
        "{}",
        report.outage_s
    );
    // instance-7 fails everything it gets; -8 and -9 nothing.
    assert!(report.instances[0].error_rate > 0.9);
    assert_eq!(report.instances[1].failed, 0);
    assert_eq!(report.instances[2].failed, 0);
}

#[test]
fn pool_leak_after_drains_within_period_times_threshold() {
    let report = run("pool-leak-after");
    let drain = report.time_to_drain_s.expect("drained");
    // readiness period × failure threshold (5 s × 2) + poll interval (0: checked in the
    // handler) + 1 s endpoint propagation; the write-up saw 9 s, its drills 9 s and 11 s.
    assert!((5.0..=11.0).contains(&drain), "{drain}");
    assert_eq!(report.restarts, 0);
    assert_eq!(report.drains, 1);
    // "fleet error rate peak: 2.1% for 9 seconds" over a 2-minute rate window.
    assert!(
        (0.01..=0.03).contains(&report.peak_error_rate),
        "{}",
        report.peak_error_rate
    );
    assert!(report.outage_s <= 11.0, "{}", report.outage_s);
}

#[test]
fn database_in_liveness_kills_every_instance_and_crash_loops() {
    let report = run("db-in-liveness-before");
    let onset = 60.0;
    for name in ["instance-1", "instance-2", "instance-3"] {
        let kill = first_kill(&report, name).expect("killed");
        // Within one liveness window of the blip: next tick (< 10 s) + (3 − 1) × 10 s + 1 s.
        assert!(kill - onset <= 31.0, "{name} killed at {kill}");
        assert!(kill < onset + 40.0, "killed during the 40 s blip");
    }
    // Restart cycles keep going after the database is back at 1m40s: three or more kills of
    // each instance before the operator's fix at 7m50s.
    for name in ["instance-1", "instance-2", "instance-3"] {
        let kills = report
            .kills
            .iter()
            .filter(|k| k.instance == name && k.reason == KillReason::Liveness && k.at_s < 470.0)
            .count();
        assert!(kills >= 3, "{name}: {kills} kills");
    }
    // The third cycle lands around 11:03:40 (t = 150 s) in the write-up.
    let third: Vec<f64> = report
        .kills
        .iter()
        .skip(6)
        .take(3)
        .map(|k| k.at_s)
        .collect();
    assert!(
        third.iter().all(|t| (130.0..=170.0).contains(t)),
        "{third:?}"
    );
    // "7 min outage": stated in whole minutes.
    assert!(
        (360.0..=480.0).contains(&report.outage_s),
        "{}",
        report.outage_s
    );
    assert!(report.restarts >= 9);
}

#[test]
fn database_in_readiness_drains_and_recovers_in_seconds() {
    let report = run("db-in-liveness-after");
    assert_eq!(report.restarts, 0);
    assert_eq!(report.drains, 3);
    // "traffic resumes 6 s after the db recovers": at most a readiness period plus propagation.
    let recover = report.time_to_recover_s.expect("recovered");
    assert!(recover <= 6.0, "{recover}");
    assert!(report.kills.is_empty());
}

#[test]
fn deadlock_is_restarted_by_liveness() {
    let report = run("deadlock");
    let onset = 60.0;
    assert_eq!(report.kills.len(), 1);
    assert_eq!(report.kills[0].reason, KillReason::Liveness);
    let kill = report.kills[0].at_s - onset;
    // "pod restarted at t+32s": detection is the next tick + 2 periods + the detector's second.
    assert!((20.0..=33.0).contains(&kill), "{kill}");
    // "recovered at t+67s": restart + 35 s cold start + startup and readiness probes.
    let back =
        entered(&report, 0, LaneState::Ready, onset + kill).expect("back in rotation") - onset;
    assert!((kill + 35.0..=kill + 41.0).contains(&back), "{back}");
    assert!((55.0..=75.0).contains(&back), "{back}");
    // Readiness (on the deadlocked pool) drained it before the kill.
    assert!(report.time_to_drain_s.expect("drained") < kill);
}

#[test]
fn db_outage_before_fails_everything_with_nothing_reacting() {
    let report = run("db-outage-before");
    assert!(report.fleet_error_rate > 0.999);
    assert_eq!(report.restarts, 0);
    assert_eq!(report.drains, 0);
    assert_eq!(report.time_to_drain_s, None);
    assert!((report.outage_s - 600.0).abs() <= 1.0);
}

#[test]
fn db_outage_after_drains_without_restarts_and_recovers_by_itself() {
    let report = run("db-outage-after");
    assert_eq!(report.restarts, 0);
    assert_eq!(report.drains, 3);
    assert!(report.kills.is_empty(), "liveness kept passing");
    // Return to rotation ≈ next readiness tick (period 10 s) + 1 s propagation.
    assert!(report.time_to_recover_s.expect("recovered") <= 11.0);
}

#[test]
fn dead_pod_behind_consistent_hashing_fails_its_users() {
    let report = run("consistent-hash-dead-pod-before");
    // "about 2.5% of users" for one pod in ~40.
    assert!(
        (0.015..=0.035).contains(&report.fleet_error_rate),
        "{}",
        report.fleet_error_rate
    );
    assert_eq!(report.time_to_drain_s, None);
    assert_eq!(report.time_to_recover_s, None);
    let after = run("consistent-hash-dead-pod-after");
    let drain = after.time_to_drain_s.expect("drained");
    assert!(drain <= 36.0, "{drain}");
    let tail = &after.error_rate_series[after.error_rate_series.len() - 600..];
    assert!(tail.iter().all(|rate| *rate == 0.0));
}

#[test]
fn deep_check_drains_the_fleet_over_a_billing_outage() {
    let before = run("deep-check-before");
    // "one probe every two seconds across fifty pods is twenty-five queries per second".
    for dep in ["db", "cache", "billing", "flags"] {
        assert!(
            (before.dependency_check_qps[dep] - 25.0).abs() < 0.5,
            "{dep}"
        );
    }
    assert_eq!(before.drains, 50);
    assert!(before.fleet_error_rate > 0.9, "{}", before.fleet_error_rate);
    let after = run("deep-check-after");
    assert_eq!(after.drains, 0);
    // Only the ~10% of requests that use billing fail.
    assert!(
        (after.fleet_error_rate - 0.10).abs() < 0.01,
        "{}",
        after.fleet_error_rate
    );
    assert!((after.dependency_check_qps["db"] - 10.0).abs() < 0.5);
}

#[test]
fn hysteresis_damps_flapping() {
    let without = run("flapping-before");
    let with = run("flapping-after");
    assert_eq!(without.restarts + with.restarts, 0);
    assert!(
        (with.rotation_changes as f64) < 0.8 * without.rotation_changes as f64,
        "{} vs {}",
        with.rotation_changes,
        without.rotation_changes
    );
    // Pods leave and rejoin about every 30 s without it: roughly one cycle per pod per period.
    let cycles_per_pod = without.drains as f64 / 20.0;
    assert!(cycles_per_pod >= 20.0, "{cycles_per_pod}");
}

#[test]
fn slow_dependency_piles_up_without_a_timeout() {
    let without = run("slow-dependency-before");
    assert!(without.oom_kills > 0);
    assert!(without.restarts > 0);
    assert!(without.max_inflight_checks > 12);
    let with = run("slow-dependency-after");
    assert_eq!(with.restarts, 0);
    assert_eq!(with.oom_kills, 0);
    assert_eq!(with.drains, 10);
    assert!(with.time_to_recover_s.expect("recovered") <= 10.0);
}

#[test]
fn model_load_crash_loops_without_a_startup_probe() {
    let without = run("model-load-before");
    assert!(without.restarts >= 10, "{}", without.restarts);
    // "the default liveness probe gives up … around the 30-second mark".
    let first = without.kills[0].at_s;
    assert!((20.0..=32.0).contains(&first), "{first}");
    for i in 0..4 {
        assert_eq!(entered(&without, i, LaneState::Ready, 0.0), None);
    }
    let with = run("model-load-after");
    assert_eq!(with.restarts, 0);
    for i in 0..4 {
        let ready = entered(&with, i, LaneState::Ready, 0.0).expect("ready");
        assert!((90.0..=110.0).contains(&ready), "{ready}");
    }
}

#[test]
fn probe_cost_at_2000_pods() {
    let report = run("probe-cost-2000-pods");
    // "2000 pods with both probes at 2-second intervals is 2000 requests per second".
    assert!(
        (report.probe_rps - 2000.0).abs() < 1.0,
        "{}",
        report.probe_rps
    );
    // The snapshot decouples the database from the probe rate: one poll per pod every 5 s.
    assert!((report.dependency_check_qps["db"] - 400.0).abs() < 5.0);
}

#[test]
fn restart_storm_outlasts_the_failover() {
    let report = run("restart-storm-before");
    let onset = 60.0;
    // "3 failures × 10 s = 30 s fits inside 40 s → all 12 replicas killed at once".
    for i in 0..12 {
        let kill = first_kill(&report, &format!("pod-{i}")).expect("killed");
        assert!(kill - onset <= 41.0, "pod-{i} at {kill}");
    }
    assert!(report.restarts >= 24, "{}", report.restarts);
    // "the database healthy for 13 of those minutes": the storm goes on for 10+ minutes after
    // the 40 s failover ended.
    assert!(report.time_to_recover_s.is_none_or(|t| t >= 600.0));
    let after = run("restart-storm-after");
    assert_eq!(after.restarts, 0);
    assert_eq!(after.drains, 12);
    assert!(after.time_to_recover_s.expect("recovered") <= 6.0);
}

#[test]
fn fleet_wide_readiness_failure_depends_on_the_router() {
    let service = run("fleet-wide-readiness-kubernetes-service");
    let alb = run("fleet-wide-readiness-alb");
    let envoy = run("fleet-wide-readiness-envoy");
    // A Service with no ready endpoint refuses connections: everything fails.
    assert!(service.requests_refused > 0);
    assert!(service.peak_error_rate > 0.999);
    // ALB fails open and Envoy panics: only the requests that need the database fail.
    for report in [&alb, &envoy] {
        assert_eq!(report.requests_refused, 0);
        assert!(
            (report.peak_error_rate - 0.7).abs() < 0.01,
            "{}",
            report.name
        );
    }
    assert!(envoy.time_to_drain_s.unwrap() < alb.time_to_drain_s.unwrap());
}
