//! The targets of each fault, judged, and the diagnosis of every miss.
//!
//! The defaults hold for any honest service: a shared dependency outage restarts nothing; one
//! instance's own cut path takes it out of rotation within the readiness window plus the
//! propagation; busy is not broken; SIGTERM fails no request; a wedged process is restarted
//! within the liveness window plus one period; the fleet is back within the readiness window
//! after the fault ends. Each window adds [`SERVICE_SLACK`] for the service's own check to
//! notice (a check polled in the background, as it should be, sees a change one poll late).

use super::report::{Check, Diagnosis, Row, opt_secs, secs};
use crate::engine::balancer::Checks;
use crate::file::pod::ResolvedPod;
use crate::file::{BalancerMode, Fault, FaultKind, Scope};
use probity_contract::probe::ProbeKind;
use std::time::Duration;

/// Time allowed for the service's own checks to notice a change, on top of each window.
pub const SERVICE_SLACK: Duration = Duration::from_secs(5);

/// Most readiness transitions of one instance while a dependency flaps: out once, in once.
pub const FLAP_TRANSITIONS: u32 = 2;

/// How the fleet's rotation reacts: the windows the targets are built from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Windows {
    /// From a failing readiness check to out of rotation.
    pub fall: Option<Duration>,
    /// From a passing readiness check to in rotation.
    pub rise: Duration,
    /// From a process that stops answering to its kill by liveness (`None`: no liveness).
    pub liveness: Option<Duration>,
    /// From the start of a pod's termination to out of rotation: how long it must keep
    /// serving. In `kubernetes` mode a terminating pod's endpoint leaves after the propagation
    /// whatever its readiness probe says (the EndpointSlice controller marks it not ready as
    /// soon as the pod is deleted); in `haproxy` mode the balancer learns only from its own
    /// checks, so it is their fall window after the app fails readiness.
    pub drain: Duration,
}

impl Windows {
    /// The windows of `pod` behind a balancer in `mode`.
    pub fn of(
        pod: &ResolvedPod,
        mode: BalancerMode,
        propagation: Duration,
        checks: Checks,
    ) -> Windows {
        let readiness = pod.probe(ProbeKind::Readiness).map(|probe| probe.timing);
        let haproxy_fall = checks.inter.saturating_mul(checks.fall) + checks.timeout;
        let (fall, rise, drain) = match mode {
            BalancerMode::Kubernetes => match readiness {
                Some(timing) => (
                    Some(timing.failure_window() + timing.timeout + propagation),
                    timing.period.saturating_mul(timing.success_threshold)
                        + timing.timeout
                        + propagation,
                    propagation,
                ),
                None => (None, propagation, propagation),
            },
            BalancerMode::Haproxy => (
                Some(haproxy_fall),
                checks.inter.saturating_mul(checks.rise) + checks.timeout,
                haproxy_fall,
            ),
        };
        let liveness = pod.probe(ProbeKind::Liveness).map(|probe| {
            probe.timing.failure_window() + probe.timing.period + probe.timing.timeout
        });
        Windows {
            fall,
            rise,
            liveness,
            drain,
        }
    }
}

/// The diagnosis for probes that hang while a dependency does not answer.
fn probes_wait(row: &Row, dependency: &str, how: &str) -> Diagnosis {
    Diagnosis {
        mistake: format!(
            "health checks wait on `{dependency}`, or behind requests that hold every worker \
             while they wait on it, with no timeout below the probe's"
        ),
        evidence: format!(
            "{} probes timed out while `{dependency}` was {how} ({} of {} liveness failures \
             timeouts, {} liveness kills): the endpoint hangs instead of answering, whether \
             its own check waits or no worker is free to run it",
            row.probe_timeouts, row.liveness_timeouts, row.liveness_failures, row.liveness_kills
        ),
        incident: "the slow-dependency incident (health checks piling up behind a hung \
                   dependency)",
        fix: format!(
            "give every call to `{dependency}` (connect, query, pool acquire) a timeout shorter \
             than the probe's timeoutSeconds, and answer probes from a result polled in the \
             background, on a thread no request can hold; a liveness endpoint must answer \
             whatever `{dependency}` does"
        ),
        caught_by: "probity inspect: slower-than-probe-timeout (run it while the dependency \
                    is slow); probity lint: timeout-not-below-period",
    }
}

/// The targets of `fault` and a diagnosis for every miss, written into `row`.
pub fn judge(
    row: &mut Row,
    fault: &Fault,
    pod: &ResolvedPod,
    mode: BalancerMode,
    windows: Windows,
) {
    let overrides = &fault.targets;
    let kind = fault.kind;
    let dependency = fault.dependency.clone().unwrap_or_default();
    let shared = kind.needs_dependency() && fault.scope == Scope::All;
    let local = kind.needs_dependency() && fault.scope == Scope::One;
    let what = if dependency.is_empty() {
        "what the fault broke".to_owned()
    } else {
        format!("`{dependency}`")
    };
    let mut checks = Vec::new();
    let mut diagnoses = Vec::new();
    // Most liveness failures were timeouts: the endpoint hung rather than said "failing".
    let liveness_hung =
        row.liveness_timeouts > 0 && row.liveness_timeouts * 2 >= row.liveness_failures;
    let mut hang_diagnosed = false;

    // Restarts: exact.
    let restarts_target = overrides.restarts.unwrap_or(match kind {
        FaultKind::Wedge | FaultKind::Crash => 1,
        _ => 0,
    });
    let restarts_met = row.restarts == restarts_target;
    checks.push(Check {
        target: format!("restarts = {restarts_target}"),
        measured: format!(
            "{} ({} by liveness, {} by startup, {} exits)",
            row.restarts, row.liveness_kills, row.startup_kills, row.exits
        ),
        met: restarts_met,
    });
    if !restarts_met && row.restarts > restarts_target {
        if row.liveness_kills > 0 && (shared || local || kind == FaultKind::Hook) {
            if liveness_hung && !dependency.is_empty() {
                let how = match kind {
                    FaultKind::Blackhole => "black-holed",
                    FaultKind::Slow => "slow",
                    _ => "away",
                };
                diagnoses.push(probes_wait(row, &dependency, how));
                hang_diagnosed = true;
            } else {
                diagnoses.push(Diagnosis {
                    mistake: format!("liveness depends on {what}"),
                    evidence: format!(
                        "{} liveness kills while {what} was away ({} of {} liveness failures \
                         were answers, not timeouts); a restart cannot bring it back",
                        row.liveness_kills,
                        row.liveness_failures - row.liveness_timeouts,
                        row.liveness_failures
                    ),
                    incident: "the database-in-liveness and restart-storm incidents",
                    fix: "point livenessProbe at an endpoint that checks only the process itself \
                          (stalls, deadlocks); check the dependency in readiness, which drains \
                          instead of killing and recovers by itself"
                        .into(),
                    caught_by: "probity lint: liveness-checks-dependencies; probity inspect: \
                                liveness-checks-dependencies, liveness-names-dependency",
                });
            }
        }
        if row.startup_kills > 0 {
            diagnoses.push(Diagnosis {
                mistake: format!("the startup probe waits on {what}"),
                evidence: format!(
                    "{} startup kills of an instance started while {what} was away",
                    row.startup_kills
                ),
                incident: "the restart-storm incident (new pods killed again and again during \
                           the failover)",
                fix: "let the startup probe cover the app's own boot only; wait for the \
                      dependency out of rotation (readiness), never under startup's budget"
                    .into(),
                caught_by: "probity lint: startup-probe-waits-on-dependency",
            });
        }
        if row.exits > 0 && kind != FaultKind::Crash {
            diagnoses.push(Diagnosis {
                mistake: if dependency.is_empty() {
                    "the app exits under the fault".to_owned()
                } else {
                    format!("the app exits when `{dependency}` is away")
                },
                evidence: format!(
                    "{} exits; the kubelet restarts each after a growing CrashLoopBackOff delay, \
                     which outlasts the fault",
                    row.exits
                ),
                incident: "the database-in-liveness incident's crash loop",
                fix: "keep running without the dependency: retry the connection in the \
                      background and report it through readiness"
                    .into(),
                caught_by: "only a drill: exiting is behaviour, not wiring",
            });
        }
    }
    let explained = diagnoses.len();
    if !restarts_met && row.restarts > restarts_target && explained == 0 {
        let expected_kills = u32::from(kind == FaultKind::Wedge);
        let expected_exits = u32::from(kind == FaultKind::Crash);
        if kind == FaultKind::Busy && row.liveness_kills > 0 {
            diagnoses.push(Diagnosis {
                mistake: "liveness fails under load alone".into(),
                evidence: format!(
                    "{} liveness kills with no fault ({} of {} liveness failures timeouts)",
                    row.liveness_kills, row.liveness_timeouts, row.liveness_failures
                ),
                incident: "the deep-check incident (a busy fleet restarted into an outage)",
                fix: "answer liveness from the process's own state on a thread no request can \
                      hold; never from a dependency or a pooled connection"
                    .into(),
                caught_by: "probity lint: probe-load, liveness-checks-dependencies",
            });
        } else if row.liveness_kills + row.startup_kills > expected_kills {
            diagnoses.push(Diagnosis {
                mistake: "a new container is killed before it has booted".into(),
                evidence: format!(
                    "{} liveness and {} startup kills, {} expected: the container that replaced \
                     the first was killed too",
                    row.liveness_kills, row.startup_kills, expected_kills
                ),
                incident: "the restart-storm incident (new pods killed again and again)",
                fix: "a startupProbe whose failureThreshold × periodSeconds is above the \
                      slowest boot, so liveness waits for it"
                    .into(),
                caught_by: "probity lint: startup-budget-below-boot-time, \
                            initial-delay-instead-of-startup-probe",
            });
        } else if row.exits > expected_exits {
            diagnoses.push(Diagnosis {
                mistake: "the app exits again after it is restarted".into(),
                evidence: format!("{} exits, {expected_exits} expected", row.exits),
                incident: "the database-in-liveness incident's crash loop",
                fix: "make a fresh start succeed after a crash or a stop (stale lock or pid \
                      files, a port still held, a migration left half done)"
                    .into(),
                caught_by: "only a drill: exiting is behaviour, not wiring",
            });
        } else {
            diagnoses.push(Diagnosis {
                mistake: "restarts nobody asked for".into(),
                evidence: format!(
                    "{} restarts ({} by liveness, {} by startup, {} exits), {restarts_target} \
                     expected",
                    row.restarts, row.liveness_kills, row.startup_kills, row.exits
                ),
                incident: "the restart-storm incident",
                fix: "read the instances' logs in the kept work folder (--keep-work-dir)".into(),
                caught_by: "only a drill",
            });
        }
    }
    if !restarts_met && row.restarts < restarts_target && kind == FaultKind::Crash {
        diagnoses.push(Diagnosis {
            mistake: "the crashed instance was not restarted within the row".into(),
            evidence: format!(
                "{} restarts after a SIGKILL, within the recovery wait of {}",
                row.restarts,
                secs(fault.recover())
            ),
            incident: "the database-in-liveness incident's crash loop (CrashLoopBackOff \
                       outlasting the fault)",
            fix: "earlier exits put the container in CrashLoopBackOff; fix those, or give the \
                  fault a longer `recover`"
                .into(),
            caught_by: "only a drill",
        });
    }
    if !restarts_met && row.restarts < restarts_target && kind == FaultKind::Wedge {
        diagnoses.push(Diagnosis {
            mistake: "liveness cannot fail".into(),
            evidence: match windows.liveness {
                None => "no livenessProbe: a frozen process is never restarted".into(),
                Some(window) => format!(
                    "the process was frozen for {} (the liveness window is {}) and never killed",
                    secs(fault.duration()),
                    secs(window)
                ),
            },
            incident: "the deadlock proof",
            fix: "a livenessProbe on an endpoint the app's own threads answer (a frozen \
                  process must fail it), with failureThreshold × periodSeconds shorter than \
                  the longest freeze you accept"
                .into(),
            caught_by: "probity lint: probe-cannot-fail",
        });
    }
    if kind == FaultKind::Wedge && windows.liveness.is_some() {
        let within = overrides
            .restarted_within
            .or(windows.liveness.map(|w| w + SERVICE_SLACK))
            .unwrap_or_default();
        let met = row
            .restarted_at_s
            .is_some_and(|at| at <= within.as_secs_f64());
        checks.push(Check {
            target: format!("killed by liveness ≤ {}", secs(within)),
            measured: opt_secs(row.restarted_at_s),
            met,
        });
        if !met && row.restarted_at_s.is_some() {
            diagnoses.push(Diagnosis {
                mistake: "liveness notices a frozen process late".into(),
                evidence: format!(
                    "killed at {} after the freeze; the probe's own window is {}",
                    opt_secs(row.restarted_at_s),
                    windows.liveness.map_or("—".into(), secs)
                ),
                incident: "the deadlock proof",
                fix: "answer liveness from a heartbeat the app's own threads keep, so the \
                      first probe after a freeze fails; not from a result cached for longer \
                      than a period"
                    .into(),
                caught_by: "only a drill",
            });
        }
    }

    // Probes against a black hole: each answers within its timeout, pass or fail.
    if kind == FaultKind::Blackhole {
        let target = overrides.probe_timeouts.unwrap_or(0);
        let met = row.probe_timeouts <= target;
        checks.push(Check {
            target: format!("probes timed out ≤ {target}"),
            measured: format!(
                "{} ({} of them liveness)",
                row.probe_timeouts, row.liveness_timeouts
            ),
            met,
        });
        if !met && !hang_diagnosed {
            diagnoses.push(probes_wait(row, &dependency, "black-holed"));
        }
    }

    // Failed requests.
    let failed_target = overrides.failed_requests.or(match kind {
        FaultKind::Busy | FaultKind::Terminate => Some(0),
        _ => None,
    });
    if let Some(target) = failed_target {
        let met = row.failed.total <= target;
        checks.push(Check {
            target: format!("failed requests ≤ {target}"),
            measured: format!(
                "{} of {} (balancer {}, service {}, resets {}, refused {}, timeouts {})",
                row.failed.total,
                row.requests,
                row.failed.refused_by_balancer + row.failed.balancer_errors,
                row.failed.service_errors,
                row.failed.resets,
                row.failed.refused,
                row.failed.timeouts
            ),
            met,
        });
        if !met && kind == FaultKind::Terminate {
            let drain = windows.drain + SERVICE_SLACK;
            diagnoses.push(Diagnosis {
                mistake: "no drain before the listener closes".into(),
                evidence: format!(
                    "{} requests failed while one instance stopped (resets {}, refused {}, \
                     service {}, balancer {})",
                    row.failed.total,
                    row.failed.resets,
                    row.failed.refused,
                    row.failed.service_errors,
                    row.failed.refused_by_balancer + row.failed.balancer_errors
                ),
                incident: "every rollout and scale-down",
                fix: match mode {
                    BalancerMode::Kubernetes => format!(
                        "keep serving for at least {} after SIGTERM (the endpoint leaves {} \
                         after the pod starts terminating, whatever readiness says; more on a \
                         real cluster, where kube-proxy and ingresses take seconds): a preStop \
                         sleep of that long, or a drain delay in the app before its listener \
                         closes; then finish in-flight requests; keep \
                         terminationGracePeriodSeconds above both",
                        secs(drain),
                        secs(windows.drain)
                    ),
                    BalancerMode::Haproxy => format!(
                        "on SIGTERM fail readiness at once and keep serving for at least {} \
                         (the balancer's checks need {} to take the instance out), then finish \
                         in-flight requests; or a preStop sleep of that long; keep \
                         terminationGracePeriodSeconds above both",
                        secs(drain),
                        secs(windows.drain)
                    ),
                },
                caught_by: "probity lint: drain-delay-below-readiness-window, \
                            grace-period-below-drain",
            });
        }
        if !met && kind == FaultKind::Busy && row.readiness_transitions == 0 {
            diagnoses.push(Diagnosis {
                mistake: "the service fails requests under this load alone".into(),
                evidence: format!(
                    "{} of {} requests failed with no fault and no readiness change (service \
                     {}, timeouts {}, resets {})",
                    row.failed.total,
                    row.requests,
                    row.failed.service_errors,
                    row.failed.timeouts,
                    row.failed.resets + row.failed.refused
                ),
                incident: "none: the health checks are not at fault",
                fix: "lower traffic.concurrency to what the fleet serves, or fix the requests \
                      that fail; then drill again"
                    .into(),
                caught_by: "only a drill",
            });
        }
    }

    // Readiness transitions.
    let transitions_target = overrides.readiness_transitions.or(match kind {
        FaultKind::Busy => Some(0),
        FaultKind::Flap => Some(FLAP_TRANSITIONS),
        _ => None,
    });
    if let Some(target) = transitions_target {
        let met = row.readiness_transitions <= target;
        checks.push(Check {
            target: format!("readiness transitions per instance ≤ {target}"),
            measured: row.readiness_transitions.to_string(),
            met,
        });
        if !met && kind == FaultKind::Busy {
            diagnoses.push(Diagnosis {
                mistake: "busy read as broken".into(),
                evidence: format!(
                    "{} readiness transitions with no fault, under load alone",
                    row.readiness_transitions
                ),
                incident: "the deep-check incident",
                fix: "answer readiness from a snapshot polled in the background, never by \
                      taking a pooled connection or calling a dependency inline; judge \
                      saturation by requests failing, not by a busy pool"
                    .into(),
                caught_by: "probity lint: probe-load",
            });
        }
        if !met && kind == FaultKind::Flap {
            diagnoses.push(Diagnosis {
                mistake: "readiness has no hysteresis".into(),
                evidence: format!(
                    "{} readiness transitions of one instance while {what} flapped",
                    row.readiness_transitions
                ),
                incident: "the flapping incident",
                fix: "fall fast, rise slow: successThreshold 2–3 and failureThreshold ≥ 2 on \
                      readiness, and rise/fall counts on each dependency check in the service"
                    .into(),
                caught_by: "probity lint: readiness-flapping",
            });
        }
    }

    // Out of rotation: a local cut, a hook.
    if local || kind == FaultKind::Hook {
        let within = overrides
            .out_of_rotation_within
            .or(windows.fall.map(|w| w + SERVICE_SLACK));
        let met = match within {
            Some(within) => row
                .out_of_rotation_at_s
                .is_some_and(|at| at <= within.as_secs_f64()),
            None => false,
        };
        checks.push(Check {
            target: match within {
                Some(within) => format!("out of rotation ≤ {}", secs(within)),
                None => "out of rotation (no readiness probe: never)".into(),
            },
            measured: opt_secs(row.out_of_rotation_at_s),
            met,
        });
        let broke = if kind == FaultKind::Hook {
            "what the app-assisted fault broke".to_owned()
        } else {
            what.clone()
        };
        if !met && row.out_of_rotation_at_s.is_some() {
            diagnoses.push(Diagnosis {
                mistake: format!("readiness notices {broke} late"),
                evidence: format!(
                    "out of rotation at {}, past the readiness window, while {} requests failed",
                    opt_secs(row.out_of_rotation_at_s),
                    row.failed.total
                ),
                incident: "the pool-leak incident",
                fix: "poll the dependency more often than the probe's period, report real \
                      request failures to the check (a passive report), or lower the probe's \
                      periodSeconds × failureThreshold"
                    .into(),
                caught_by: "only a drill",
            });
        } else if !met {
            diagnoses.push(Diagnosis {
                mistake: if pod.readiness.is_none() {
                    "no readiness probe".into()
                } else {
                    format!("readiness does not check {broke}")
                },
                evidence: format!(
                    "the instance stayed in rotation while {} requests failed",
                    row.failed.total
                ),
                incident: "the pool-leak incident",
                fix: "check each hard dependency (and the pool) in readiness, from a background \
                      poll with its own timeout, so one instance's broken path takes it out of \
                      rotation"
                    .into(),
                caught_by: if pod.readiness.is_none() {
                    "probity lint: missing-readiness-probe"
                } else {
                    "probity lint: identical-liveness-readiness (one endpoint for both), \
                     probe-cannot-fail; probity inspect: identical-liveness-readiness (an \
                     endpoint that answers alike whatever breaks)"
                },
            });
        }
    }

    // A new instance during an outage stays out until the dependency returns.
    if kind == FaultKind::StartDuringOutage {
        let entered = row.in_rotation_while_down.unwrap_or(false);
        checks.push(Check {
            target: format!("new instance out of rotation while {what} is away"),
            measured: if entered {
                "in rotation".into()
            } else {
                "out of rotation".into()
            },
            met: !entered,
        });
        if entered {
            diagnoses.push(Diagnosis {
                mistake: format!("readiness does not check {what}"),
                evidence: format!(
                    "a new instance entered rotation while {what} was away; {} requests failed",
                    row.failed.total
                ),
                incident: "the database-outage incident (every system reported healthy)",
                fix: "gate readiness on the dependency's first successful check".into(),
                caught_by: "probity lint: identical-liveness-readiness, probe-cannot-fail; \
                            probity inspect: identical-liveness-readiness",
            });
        }
    }

    // Back.
    let back_within = overrides.back_within.unwrap_or(match kind {
        FaultKind::Terminate | FaultKind::Crash | FaultKind::Wedge => fault.recover(),
        _ => windows.rise + SERVICE_SLACK,
    });
    // A new instance started during an outage can rise only once it has booted: its window
    // runs from the later of the fault's end and its startup (a boot longer than the outage is
    // not readiness's doing).
    let end = match kind {
        FaultKind::StartDuringOutage => row
            .replacement_started_at_s
            .map_or(row.duration_s, |started| started.max(row.duration_s)),
        _ => row.duration_s,
    };
    let back_after = row.back_in_rotation_at_s.map(|at| (at - end).max(0.0));
    let met = row.back && back_after.is_none_or(|after| after <= back_within.as_secs_f64());
    checks.push(Check {
        target: format!("back in rotation ≤ {} after the fault", secs(back_within)),
        measured: if row.back {
            back_after.map_or("never left".into(), |after| format!("{after:.1}s"))
        } else {
            "not back".into()
        },
        met,
    });
    if !met && row.restarts <= restarts_target {
        diagnoses.push(if row.back && kind == FaultKind::StartDuringOutage {
            // The new instance has not been Ready since it started: what it waits on may be its
            // boot (still retrying the dependency) as much as its readiness check.
            Diagnosis {
                mistake: format!("the new instance comes back slowly after {what} returns"),
                evidence: format!(
                    "back {} after the fault ended (the window allows {}); it started during \
                     the outage and was still waiting on {what} when it returned",
                    back_after.map_or("—".into(), |after| format!("{after:.1}s")),
                    secs(back_within)
                ),
                incident: "the database-outage incident (a recovery slower than the outage)",
                fix: "retry the dependency at a short, capped interval, at boot too (a boot that \
                      retries with a growing backoff can be asleep for tens of seconds when the \
                      dependency returns); re-poll it quickly in readiness while failing, and \
                      keep successThreshold × periodSeconds short"
                    .into(),
                caught_by: "only a drill",
            }
        } else if row.back {
            Diagnosis {
                mistake: "readiness recovers slowly".into(),
                evidence: format!(
                    "back {} after the fault ended; the readiness window allows {}",
                    back_after.map_or("—".into(), |after| format!("{after:.1}s")),
                    secs(back_within)
                ),
                incident: "the database-outage incident (a recovery slower than the outage)",
                fix: "re-poll the dependency as soon as it may be back (a short interval \
                      while failing) and keep successThreshold × periodSeconds short"
                    .into(),
                caught_by: "only a drill",
            }
        } else {
            Diagnosis {
                mistake: "readiness does not recover by itself".into(),
                evidence: format!(
                    "the fleet was not whole {} after the fault ended",
                    secs(fault.recover())
                ),
                incident: "the database-outage incident",
                fix: "re-make connections after a failure (a pool that reconnects, a check \
                      that polls again) and let readiness rise when the dependency answers"
                    .into(),
                caught_by: "only a drill",
            }
        });
    }
    row.checks = checks;
    row.diagnoses = diagnoses;
}

#[cfg(test)]
mod tests {
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
        let late = judged(row, &fault, &pod, BalancerMode::Kubernetes);
        missed(&late, "out of rotation ≤ 13.0s");
        assert_eq!(mistakes(&late), ["readiness notices `db` late"]);
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
}
