//! Tests of `judge`.

use super::*;
use crate::engine::report::Failed;
use crate::file::pod::{PortTarget, ProbeAction, ResolvedProbe};
use crate::file::{Dur, TargetOverrides};
use probity_contract::kube::probe::ProbeTiming;

/// The diagnosis of probes that hang on (or behind) a dependency.
const WAITS: &str = "health checks wait on `db`, or behind requests that hold every worker \
                     while they wait on it, with no timeout below the probe's";

fn probe(period: u64, failure: u32, success: u32) -> ResolvedProbe {
    ResolvedProbe {
        timing: ProbeTiming {
            initial_delay: Duration::ZERO,
            period: Duration::from_secs(period),
            timeout: Duration::from_secs(1),
            success_threshold: success,
            failure_threshold: failure,
        },
        action: ProbeAction::Http {
            target: PortTarget::App,
            path: "/health".into(),
            headers: Vec::new(),
        },
        termination_grace_period: None,
    }
}

/// Readiness every 2 s (fall after 3, rise after 1), liveness every 5 s (kill after 3).
fn pod() -> ResolvedPod {
    ResolvedPod {
        startup: None,
        liveness: Some(probe(5, 3, 1)),
        readiness: Some(probe(2, 3, 1)),
        pre_stop: None,
        grace_period: Duration::from_secs(30),
        source: "test".into(),
    }
}

fn windows(pod: &ResolvedPod, mode: BalancerMode) -> Windows {
    Windows::of(pod, mode, Duration::from_secs(1), Checks::from_file(None))
}

fn fault(kind: FaultKind) -> Fault {
    let mut fault = Fault::of(kind);
    if kind.needs_dependency() {
        fault.dependency = Some("db".into());
    }
    if kind == FaultKind::Hook {
        fault.hook = Some("leak".into());
    }
    fault.duration = Some(Dur(Duration::from_secs(20)));
    fault
}

fn local(kind: FaultKind) -> Fault {
    Fault {
        scope: Scope::One,
        ..fault(kind)
    }
}

/// What an honest fleet does under `fault`: nothing restarts but a wedge (killed 20 s in)
/// or a crash; a local cut or a hook drains at 7 s; everything is back 3 s after the end.
fn honest(fault: &Fault) -> Row {
    let kind = fault.kind;
    let restarted = matches!(kind, FaultKind::Wedge | FaultKind::Crash);
    let drains = (kind.needs_dependency() && fault.scope == Scope::One)
        || kind == FaultKind::Hook
        || restarted;
    Row {
        fault: fault.display_name(),
        kind,
        dependency: fault.dependency.clone(),
        scope: fault.scope,
        duration_s: 20.0,
        detected_at_s: drains.then_some(2.0),
        detected_by: None,
        out_of_rotation_at_s: drains.then_some(7.0),
        back_in_rotation_at_s: drains.then_some(23.0),
        back: true,
        requests: 1000,
        failed: Failed::default(),
        restarts: u32::from(restarted),
        liveness_kills: u32::from(kind == FaultKind::Wedge),
        startup_kills: 0,
        exits: u32::from(kind == FaultKind::Crash),
        readiness_transitions: if drains { 2 } else { 0 },
        probe_timeouts: if kind == FaultKind::Wedge { 3 } else { 0 },
        liveness_failures: if kind == FaultKind::Wedge { 3 } else { 0 },
        liveness_timeouts: if kind == FaultKind::Wedge { 3 } else { 0 },
        restarted_at_s: restarted.then_some(20.0),
        replacement_started_at_s: None,
        in_rotation_while_down: (kind == FaultKind::StartDuringOutage).then_some(false),
        checks: Vec::new(),
        diagnoses: Vec::new(),
        figures: crate::engine::report::Figures::default(),
    }
}

fn judged(mut row: Row, fault: &Fault, pod: &ResolvedPod, mode: BalancerMode) -> Row {
    judge(&mut row, fault, pod, mode, windows(pod, mode));
    row
}

fn missed<'a>(row: &'a Row, target: &str) -> &'a Check {
    row.checks
        .iter()
        .find(|check| check.target.starts_with(target))
        .filter(|check| !check.met)
        .unwrap_or_else(|| panic!("no missed `{target}…` in {:#?}", row.checks))
}

fn mistakes(row: &Row) -> Vec<&str> {
    row.diagnoses.iter().map(|d| d.mistake.as_str()).collect()
}

fn every_kind() -> Vec<Fault> {
    vec![
        fault(FaultKind::Busy),
        fault(FaultKind::Refuse),
        local(FaultKind::Refuse),
        fault(FaultKind::Blackhole),
        local(FaultKind::Blackhole),
        fault(FaultKind::Slow),
        fault(FaultKind::Flap),
        fault(FaultKind::Wedge),
        fault(FaultKind::Terminate),
        fault(FaultKind::Crash),
        fault(FaultKind::StartDuringOutage),
        fault(FaultKind::Hook),
    ]
}

#[test]
fn windows_follow_the_probes_and_the_balancer() {
    let pod = pod();
    let kubernetes = windows(&pod, BalancerMode::Kubernetes);
    // 3 × 2 s + 1 s timeout + 1 s propagation to fall; 1 × 2 s + 1 s + 1 s to rise.
    assert_eq!(kubernetes.fall, Some(Duration::from_secs(8)));
    assert_eq!(kubernetes.rise, Duration::from_secs(4));
    // 3 × 5 s + 5 s + 1 s.
    assert_eq!(kubernetes.liveness, Some(Duration::from_secs(21)));
    // A terminating pod's endpoint leaves after the propagation alone.
    assert_eq!(kubernetes.drain, Duration::from_secs(1));
    // HAProxy's own checks (1 s, fall 3, rise 2, timeout 1 s).
    let haproxy = windows(&pod, BalancerMode::Haproxy);
    assert_eq!(haproxy.fall, Some(Duration::from_secs(4)));
    assert_eq!(haproxy.rise, Duration::from_secs(3));
    assert_eq!(haproxy.drain, Duration::from_secs(4));
    let bare = ResolvedPod::default();
    let bare = windows(&bare, BalancerMode::Kubernetes);
    assert_eq!((bare.fall, bare.liveness), (None, None));
}

#[test]
fn an_honest_fleet_meets_every_default_target_of_every_fault() {
    let pod = pod();
    for mode in [BalancerMode::Kubernetes, BalancerMode::Haproxy] {
        for fault in every_kind() {
            let row = judged(honest(&fault), &fault, &pod, mode);
            assert!(row.passed(), "{}: {:#?}", fault.display_name(), row.checks);
            assert!(row.diagnoses.is_empty(), "{:#?}", row.diagnoses);
        }
    }
}

#[test]
fn each_fault_has_its_targets() {
    let pod = pod();
    let targets = |fault: &Fault| -> Vec<String> {
        judged(honest(fault), fault, &pod, BalancerMode::Kubernetes)
            .checks
            .into_iter()
            .map(|check| check.target)
            .collect()
    };
    assert_eq!(
        targets(&fault(FaultKind::Busy)),
        [
            "restarts = 0",
            "failed requests ≤ 0",
            "readiness transitions per instance ≤ 0",
            "back in rotation ≤ 9.0s after the fault"
        ]
    );
    assert_eq!(
        targets(&fault(FaultKind::Refuse)),
        ["restarts = 0", "back in rotation ≤ 9.0s after the fault"]
    );
    // The readiness window (8 s) plus the service's slack.
    assert_eq!(
        targets(&local(FaultKind::Refuse)),
        [
            "restarts = 0",
            "out of rotation ≤ 13.0s",
            "back in rotation ≤ 9.0s after the fault"
        ]
    );
    assert_eq!(
        targets(&fault(FaultKind::Blackhole)),
        [
            "restarts = 0",
            "probes timed out ≤ 0",
            "back in rotation ≤ 9.0s after the fault"
        ]
    );
    assert_eq!(
        targets(&fault(FaultKind::Flap)),
        [
            "restarts = 0",
            "readiness transitions per instance ≤ 2",
            "back in rotation ≤ 9.0s after the fault"
        ]
    );
    // The liveness window (21 s) plus the slack.
    assert_eq!(
        targets(&fault(FaultKind::Wedge)),
        [
            "restarts = 1",
            "killed by liveness ≤ 26.0s",
            "back in rotation ≤ 30.0s after the fault"
        ]
    );
    assert_eq!(
        targets(&fault(FaultKind::Terminate)),
        [
            "restarts = 0",
            "failed requests ≤ 0",
            "back in rotation ≤ 30.0s after the fault"
        ]
    );
    assert_eq!(
        targets(&fault(FaultKind::Crash)),
        ["restarts = 1", "back in rotation ≤ 30.0s after the fault"]
    );
    assert_eq!(
        targets(&fault(FaultKind::StartDuringOutage)),
        [
            "restarts = 0",
            "new instance out of rotation while `db` is away",
            "back in rotation ≤ 9.0s after the fault"
        ]
    );
    assert_eq!(
        targets(&fault(FaultKind::Hook)),
        [
            "restarts = 0",
            "out of rotation ≤ 13.0s",
            "back in rotation ≤ 9.0s after the fault"
        ]
    );
}

#[test]
fn targets_written_in_the_file_replace_the_defaults() {
    let pod = pod();
    let fault = Fault {
        targets: TargetOverrides {
            restarts: Some(2),
            failed_requests: Some(10),
            readiness_transitions: Some(4),
            probe_timeouts: Some(5),
            out_of_rotation_within: Some(Duration::from_secs(3)),
            back_within: Some(Duration::from_secs(1)),
            ..TargetOverrides::default()
        },
        ..local(FaultKind::Blackhole)
    };
    let row = judged(honest(&fault), &fault, &pod, BalancerMode::Kubernetes);
    let targets: Vec<&str> = row.checks.iter().map(|c| c.target.as_str()).collect();
    assert_eq!(
        targets,
        [
            "restarts = 2",
            "probes timed out ≤ 5",
            "failed requests ≤ 10",
            "readiness transitions per instance ≤ 4",
            "out of rotation ≤ 3.0s",
            "back in rotation ≤ 1.0s after the fault"
        ]
    );
}

#[test]
fn restarts_during_a_dependency_outage_mean_liveness_depends_on_it() {
    let pod = pod();
    for fault in [fault(FaultKind::Refuse), local(FaultKind::Refuse)] {
        let mut row = honest(&fault);
        // The liveness endpoint answered 503: it reports the database.
        row.restarts = 3;
        row.liveness_kills = 3;
        row.liveness_failures = 9;
        let row = judged(row, &fault, &pod, BalancerMode::Kubernetes);
        missed(&row, "restarts = 0");
        assert_eq!(mistakes(&row), ["liveness depends on `db`"]);
        assert!(
            row.diagnoses[0]
                .caught_by
                .contains("liveness-checks-dependencies")
        );
    }
}

#[test]
fn liveness_that_times_out_during_an_outage_waits_on_the_dependency() {
    let pod = pod();
    let fault = fault(FaultKind::Slow);
    let mut row = honest(&fault);
    // The liveness endpoint hung: every failure a timeout (a thread pool held by requests
    // waiting on the dependency, or an inline call with no timeout).
    row.restarts = 2;
    row.liveness_kills = 2;
    row.liveness_failures = 6;
    row.liveness_timeouts = 6;
    row.probe_timeouts = 10;
    let row = judged(row, &fault, &pod, BalancerMode::Kubernetes);
    assert_eq!(mistakes(&row), [WAITS]);
    assert!(row.diagnoses[0].evidence.contains("while `db` was slow"));
}

#[test]
fn probes_timing_out_against_a_black_hole_are_a_miss_with_or_without_restarts() {
    let pod = pod();
    let fault = fault(FaultKind::Blackhole);
    // Readiness hangs on the black hole; liveness holds: nothing restarts, yet probes pile
    // up behind a check with no timeout.
    let mut row = honest(&fault);
    row.probe_timeouts = 8;
    let judged_row = judged(row, &fault, &pod, BalancerMode::Kubernetes);
    missed(&judged_row, "probes timed out ≤ 0");
    assert_eq!(mistakes(&judged_row), [WAITS]);
    // Liveness hangs too and kills: one diagnosis, not the same one twice.
    let mut row = honest(&fault);
    row.probe_timeouts = 12;
    row.restarts = 2;
    row.liveness_kills = 2;
    row.liveness_failures = 6;
    row.liveness_timeouts = 6;
    let row = judged(row, &fault, &pod, BalancerMode::Kubernetes);
    missed(&row, "restarts = 0");
    missed(&row, "probes timed out ≤ 0");
    assert_eq!(mistakes(&row), [WAITS]);
}

#[test]
fn a_local_cut_that_stays_in_rotation_means_readiness_does_not_check_it() {
    let pod = pod();
    let fault = local(FaultKind::Refuse);
    let mut row = honest(&fault);
    row.out_of_rotation_at_s = None;
    row.back_in_rotation_at_s = None;
    row.readiness_transitions = 0;
    row.failed.total = 300;
    row.failed.service_errors = 300;
    let never = judged(row.clone(), &fault, &pod, BalancerMode::Kubernetes);
    assert_eq!(never.checks[1].measured, "never");
    assert_eq!(mistakes(&never), ["readiness does not check `db`"]);
    assert!(
        never.diagnoses[0]
            .caught_by
            .contains("identical-liveness-readiness")
    );
    // With no readiness probe at all, that is the mistake.
    let bare = ResolvedPod {
        readiness: None,
        ..pod.clone()
    };
    let judged_bare = judged(row.clone(), &fault, &bare, BalancerMode::Kubernetes);
    assert_eq!(
        judged_bare.checks[1].target,
        "out of rotation (no readiness probe: never)"
    );
    assert_eq!(mistakes(&judged_bare), ["no readiness probe"]);
    // Out, but past the window: late, not blind.
    row.out_of_rotation_at_s = Some(19.0);
    let late = judged(row.clone(), &fault, &pod, BalancerMode::Kubernetes);
    missed(&late, "out of rotation ≤ 13.0s");
    assert_eq!(mistakes(&late), ["readiness notices `db` late"]);
    // Late by less than a tenth: the measure says by how much, never the limit's own figure.
    row.out_of_rotation_at_s = Some(13.046);
    let barely = judged(row.clone(), &fault, &pod, BalancerMode::Kubernetes);
    assert_eq!(
        missed(&barely, "out of rotation ≤ 13.0s").measured,
        "13.046s"
    );
    row.out_of_rotation_at_s = Some(12.4);
    let early = judged(row, &fault, &pod, BalancerMode::Kubernetes);
    assert_eq!(early.checks[1].measured, "12.4s");
}

#[test]
fn a_hook_that_leaves_the_instance_in_rotation_is_diagnosed() {
    let pod = pod();
    let fault = fault(FaultKind::Hook);
    let mut row = honest(&fault);
    row.out_of_rotation_at_s = None;
    let row = judged(row, &fault, &pod, BalancerMode::Kubernetes);
    assert_eq!(
        mistakes(&row),
        ["readiness does not check what the app-assisted fault broke"]
    );
}

#[test]
fn readiness_transitions_with_no_fault_mean_busy_read_as_broken() {
    let pod = pod();
    let fault = fault(FaultKind::Busy);
    let mut row = honest(&fault);
    row.readiness_transitions = 4;
    row.failed.total = 20;
    row.failed.refused_by_balancer = 20;
    let row = judged(row, &fault, &pod, BalancerMode::Kubernetes);
    missed(&row, "readiness transitions");
    missed(&row, "failed requests ≤ 0");
    assert_eq!(mistakes(&row), ["busy read as broken"]);
    assert!(row.diagnoses[0].caught_by.contains("probe-load"));
}

#[test]
fn requests_failing_with_no_fault_and_no_readiness_change_are_the_load() {
    let pod = pod();
    let fault = fault(FaultKind::Busy);
    let mut row = honest(&fault);
    row.failed.total = 20;
    row.failed.timeouts = 20;
    let row = judged(row, &fault, &pod, BalancerMode::Kubernetes);
    missed(&row, "failed requests ≤ 0");
    assert_eq!(
        mistakes(&row),
        ["the service fails requests under this load alone"]
    );
}

#[test]
fn failures_on_sigterm_mean_no_drain_with_the_drain_the_balancer_needs() {
    let pod = pod();
    let fault = fault(FaultKind::Terminate);
    let mut row = honest(&fault);
    row.failed.total = 7;
    row.failed.resets = 7;
    // kubernetes: the endpoint leaves 1 s after termination begins (+ 5 s of slack), not
    // after the readiness window (8 s).
    let kubernetes = judged(row.clone(), &fault, &pod, BalancerMode::Kubernetes);
    missed(&kubernetes, "failed requests ≤ 0");
    assert_eq!(
        mistakes(&kubernetes),
        ["no drain before the listener closes"]
    );
    let fix = &kubernetes.diagnoses[0].fix;
    assert!(fix.contains("at least 6.0s after SIGTERM"), "{fix}");
    assert!(fix.contains("the endpoint leaves 1.0s after"), "{fix}");
    assert!(!fix.contains("13.0s"), "{fix}");
    // haproxy: its checks must see the instance fail (4 s + 5 s).
    let haproxy = judged(row, &fault, &pod, BalancerMode::Haproxy);
    let fix = &haproxy.diagnoses[0].fix;
    assert!(fix.contains("fail readiness at once"), "{fix}");
    assert!(fix.contains("at least 9.0s"), "{fix}");
}

#[test]
fn a_wedge_never_restarted_means_liveness_cannot_fail() {
    let pod = pod();
    let fault = fault(FaultKind::Wedge);
    let mut row = honest(&fault);
    row.restarts = 0;
    row.liveness_kills = 0;
    row.restarted_at_s = None;
    let judged_row = judged(row.clone(), &fault, &pod, BalancerMode::Kubernetes);
    missed(&judged_row, "restarts = 1");
    missed(&judged_row, "killed by liveness ≤ 26.0s");
    assert_eq!(mistakes(&judged_row), ["liveness cannot fail"]);
    assert!(
        judged_row.diagnoses[0]
            .evidence
            .contains("the liveness window is 21.0s")
    );
    // No liveness probe at all.
    let bare = ResolvedPod {
        liveness: None,
        ..pod.clone()
    };
    let judged_bare = judged(row.clone(), &fault, &bare, BalancerMode::Kubernetes);
    assert_eq!(mistakes(&judged_bare), ["liveness cannot fail"]);
    assert!(
        judged_bare.diagnoses[0]
            .evidence
            .contains("no livenessProbe")
    );
    // Killed, but late.
    row.restarts = 1;
    row.liveness_kills = 1;
    row.restarted_at_s = Some(35.0);
    let late = judged(row, &fault, &pod, BalancerMode::Kubernetes);
    missed(&late, "killed by liveness");
    assert_eq!(mistakes(&late), ["liveness notices a frozen process late"]);
}

#[test]
fn readiness_flipping_with_a_flapping_dependency_means_no_hysteresis() {
    let pod = pod();
    let fault = fault(FaultKind::Flap);
    let mut row = honest(&fault);
    row.readiness_transitions = 9;
    let row = judged(row, &fault, &pod, BalancerMode::Kubernetes);
    missed(&row, "readiness transitions per instance ≤ 2");
    assert_eq!(mistakes(&row), ["readiness has no hysteresis"]);
    assert!(row.diagnoses[0].caught_by.contains("readiness-flapping"));
}

#[test]
fn a_new_instance_during_an_outage_killed_exiting_or_in_rotation_is_diagnosed() {
    let pod = pod();
    let fault = fault(FaultKind::StartDuringOutage);
    // Killed by its startup probe.
    let mut row = honest(&fault);
    row.restarts = 2;
    row.startup_kills = 2;
    let killed = judged(row, &fault, &pod, BalancerMode::Kubernetes);
    assert_eq!(mistakes(&killed), ["the startup probe waits on `db`"]);
    // Exits by itself: a crash loop.
    let mut row = honest(&fault);
    row.restarts = 3;
    row.exits = 3;
    let exits = judged(row, &fault, &pod, BalancerMode::Kubernetes);
    assert_eq!(mistakes(&exits), ["the app exits when `db` is away"]);
    // In rotation with its database away.
    let mut row = honest(&fault);
    row.in_rotation_while_down = Some(true);
    let entered = judged(row, &fault, &pod, BalancerMode::Kubernetes);
    missed(&entered, "new instance out of rotation");
    assert_eq!(mistakes(&entered), ["readiness does not check `db`"]);
}

/// Both judges, as the engine runs them on a row: the incident table's, then the others.
fn fully_judged(mut row: Row, fault: &Fault, pod: &ResolvedPod) -> Row {
    let mode = BalancerMode::Kubernetes;
    judge(&mut row, fault, pod, mode, windows(pod, mode));
    let traffic = crate::file::Traffic {
        concurrency: None,
        rate: None,
        timeout: None,
        success: None,
        requests: Vec::new(),
    };
    crate::engine::targets::judge(&mut row, fault, &traffic);
    row
}

/// Parse Server 9.10.0 started during a database outage: `ParseServer.start` throws from
/// `performInitialization` and its CLI exits 1, five times, so the new instance starts only
/// after the outage. The exits are the mistake; its startup probe killed nothing and waits
/// on nothing (nothing listens before the database answers).
#[test]
fn a_new_instance_that_exits_during_the_outage_is_not_blamed_on_its_startup_probe() {
    let pod = pod();
    let fault = fault(FaultKind::StartDuringOutage);
    let mut row = honest(&fault);
    row.restarts = 5;
    row.exits = 5;
    row.figures.started_at_s = Some(38.8);
    let row = fully_judged(row, &fault, &pod);
    missed(&row, "the new instance started while");
    assert_eq!(mistakes(&row), ["the app exits when `db` is away"]);
    // Killed by its startup probe: that diagnosis, once.
    let mut row = honest(&fault);
    row.restarts = 2;
    row.startup_kills = 2;
    let row = fully_judged(row, &fault, &pod);
    assert_eq!(mistakes(&row), ["the startup probe waits on `db`"]);
    // Still booting when the outage ended, with no exit and no kill: its start waits.
    let mut row = honest(&fault);
    row.figures.started_at_s = Some(31.0);
    let row = fully_judged(row, &fault, &pod);
    missed(&row, "the new instance started while");
    assert_eq!(mistakes(&row), ["the new instance's start waits on `db`"]);
    // Started within the outage: nothing to say.
    let mut row = honest(&fault);
    row.figures.started_at_s = Some(6.0);
    let row = fully_judged(row, &fault, &pod);
    assert!(row.diagnoses.is_empty(), "{:#?}", row.diagnoses);
}

#[test]
fn a_new_instance_booting_past_the_outage_has_its_window_from_its_start() {
    let pod = pod();
    let fault = fault(FaultKind::StartDuringOutage);
    let mut row = honest(&fault);
    // The outage ended at 20 s; the new instance finished booting at 35 s and was in
    // rotation at 38 s: 3 s after it could be, within the 9 s window.
    row.replacement_started_at_s = Some(35.0);
    row.back_in_rotation_at_s = Some(38.0);
    let booted = judged(row.clone(), &fault, &pod, BalancerMode::Kubernetes);
    assert!(booted.passed(), "{:#?}", booted.checks);
    // Booted during the outage: the window runs from its end.
    row.replacement_started_at_s = Some(10.0);
    let late = judged(row, &fault, &pod, BalancerMode::Kubernetes);
    missed(&late, "back in rotation ≤ 9.0s");
    // MLflow 3.17.2 behind the agent: the agent passed its startup probe, MLflow's boot
    // (`create_sqlalchemy_engine_with_retry`, sleeping 0.1 × (2ⁿ − 1) s between attempts)
    // was asleep when the database returned. Not readiness's doing alone: the diagnosis
    // names the new instance's return, boot included.
    assert_eq!(
        mistakes(&late),
        ["the new instance comes back slowly after `db` returns"]
    );
    assert!(late.diagnoses[0].fix.contains("at boot too"));
}

#[test]
fn a_fleet_not_back_or_back_late_is_diagnosed() {
    let pod = pod();
    let fault = fault(FaultKind::Refuse);
    let mut row = honest(&fault);
    row.back = false;
    let not_back = judged(row.clone(), &fault, &pod, BalancerMode::Kubernetes);
    missed(&not_back, "back in rotation");
    assert_eq!(
        mistakes(&not_back),
        ["readiness does not recover by itself"]
    );
    row.back = true;
    row.back_in_rotation_at_s = Some(45.0);
    let late = judged(row, &fault, &pod, BalancerMode::Kubernetes);
    missed(&late, "back in rotation ≤ 9.0s");
    assert_eq!(mistakes(&late), ["readiness recovers slowly"]);
}

#[test]
fn every_miss_comes_with_a_diagnosis() {
    let pod = pod();
    // Each way a row can go wrong, on every fault, in both modes.
    let breakages: [fn(&mut Row); 8] = [
        |row| {
            row.restarts += 2;
            row.liveness_kills += 2;
            row.liveness_failures += 6;
        },
        |row| {
            row.restarts += 2;
            row.liveness_kills += 2;
            row.liveness_failures += 6;
            row.liveness_timeouts += 6;
            row.probe_timeouts += 6;
        },
        |row| {
            row.restarts += 1;
            row.exits += 1;
        },
        |row| {
            row.failed.total += 5;
            row.failed.resets += 5;
        },
        |row| row.readiness_transitions += 6,
        |row| {
            row.out_of_rotation_at_s = None;
            row.probe_timeouts += 4;
        },
        |row| row.back = false,
        |row| {
            row.restarts = 0;
            row.restarted_at_s = None;
            row.in_rotation_while_down = row.in_rotation_while_down.map(|_| true);
        },
    ];
    let mut undiagnosed = Vec::new();
    for mode in [BalancerMode::Kubernetes, BalancerMode::Haproxy] {
        for fault in every_kind() {
            for (index, breakage) in breakages.iter().enumerate() {
                let mut row = honest(&fault);
                breakage(&mut row);
                let row = judged(row, &fault, &pod, mode);
                if !row.passed() && row.diagnoses.is_empty() {
                    let missed: Vec<&str> = row
                        .checks
                        .iter()
                        .filter(|check| !check.met)
                        .map(|check| check.target.as_str())
                        .collect();
                    undiagnosed.push(format!(
                        "{} (breakage {index}, {mode:?}): {missed:?}",
                        fault.display_name()
                    ));
                }
            }
        }
    }
    assert!(
        undiagnosed.is_empty(),
        "misses with no diagnosis:\n{}",
        undiagnosed.join("\n")
    );
}

#[test]
fn a_hook_meant_to_restart_the_process_comes_back_through_a_boot() {
    // A stall that liveness ends: the instance restarts and its new process boots and rises
    // 12 s after the 20 s the hook was given, past readiness's 9 s window — a boot, not
    // readiness recovering slowly.
    let pod = pod();
    let mut fault = fault(FaultKind::Hook);
    fault.targets.restarts = Some(1);
    let mut row = honest(&fault);
    row.restarts = 1;
    row.liveness_kills = 1;
    row.restarted_at_s = Some(9.0);
    row.back_in_rotation_at_s = Some(32.0);
    let judged = judged(row.clone(), &fault, &pod, BalancerMode::Kubernetes);
    assert!(
        judged.checks.iter().all(|check| check.met),
        "{:#?}",
        judged.checks
    );
    // A hook meant to leave the process running is still held to readiness's rise.
    let mut fault = fault.clone();
    fault.targets.restarts = None;
    row.restarts = 0;
    row.liveness_kills = 0;
    row.restarted_at_s = None;
    let judged = judged_row(row, &fault, &pod);
    missed(&judged, "back in rotation");
}

fn judged_row(row: Row, fault: &Fault, pod: &ResolvedPod) -> Row {
    judged(row, fault, pod, BalancerMode::Kubernetes)
}
