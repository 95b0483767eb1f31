//! The targets of each fault, judged, and the diagnosis of every miss.
//!
//! The defaults hold for any honest service: a shared dependency outage restarts nothing; one
//! instance's own cut path takes it out of rotation within the readiness window plus the
//! propagation; busy is not broken; SIGTERM fails no request; a wedged process is restarted
//! within the liveness window plus one period; the fleet is back within the readiness window
//! after the fault ends. Each window adds [`SERVICE_SLACK`] for the service's own check to
//! notice (a check polled in the background, as it should be, sees a change one poll late).

use super::report::{Check, Diagnosis, Row, opt_secs, secs, secs_against};
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
            measured: secs_against(row.restarted_at_s, within),
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
            measured: match within {
                Some(within) => secs_against(row.out_of_rotation_at_s, within),
                None => opt_secs(row.out_of_rotation_at_s),
            },
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
        // A fault meant to restart the process (a hook that stalls or wedges it) comes back
        // through a boot, as a wedge does: not within readiness's rise alone.
        _ if restarts_target > 0 => fault.recover(),
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
            back_after.map_or("never left".into(), |after| {
                secs_against(Some(after), back_within)
            })
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
mod tests;
