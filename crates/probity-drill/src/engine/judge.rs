//! The targets of each fault, judged, and the diagnosis of every miss.
//!
//! The defaults hold for any honest service: a shared dependency outage restarts nothing; one
//! instance's own cut path takes it out of rotation within the readiness window plus the
//! propagation; busy is not broken; SIGTERM fails no request; a wedged process is restarted
//! within the liveness window plus one period; the fleet is back within the readiness window
//! after the fault ends. Each window adds [`SERVICE_SLACK`] for the service's own check to
//! notice (a check polled in the background, as it should be, sees a change one poll late).

use super::report::{Check, Diagnosis, Row};
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
#[derive(Debug, Clone, Copy)]
pub struct Windows {
    /// From a failing readiness check to out of rotation.
    pub fall: Option<Duration>,
    /// From a passing readiness check to in rotation.
    pub rise: Duration,
    /// From a process that stops answering to its kill by liveness (`None`: no liveness).
    pub liveness: Option<Duration>,
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
        let (fall, rise) = match mode {
            BalancerMode::Kubernetes => match readiness {
                Some(timing) => (
                    Some(timing.failure_window() + timing.timeout + propagation),
                    timing.period.saturating_mul(timing.success_threshold)
                        + timing.timeout
                        + propagation,
                ),
                None => (None, propagation),
            },
            BalancerMode::Haproxy => (
                Some(checks.inter.saturating_mul(checks.fall) + checks.timeout),
                checks.inter.saturating_mul(checks.rise) + checks.timeout,
            ),
        };
        let liveness = pod.probe(ProbeKind::Liveness).map(|probe| {
            probe.timing.failure_window() + probe.timing.period + probe.timing.timeout
        });
        Windows {
            fall,
            rise,
            liveness,
        }
    }
}

fn secs(duration: Duration) -> String {
    format!("{:.1}s", duration.as_secs_f64())
}

fn opt_secs(value: Option<f64>) -> String {
    value.map_or("never".to_owned(), |s| format!("{s:.1}s"))
}

/// The targets of `fault` and a diagnosis for every miss, written into `row`.
pub fn judge(row: &mut Row, fault: &Fault, pod: &ResolvedPod, windows: Windows) {
    let overrides = &fault.targets;
    let kind = fault.kind;
    let dependency = fault.dependency.clone().unwrap_or_default();
    let shared = kind.needs_dependency() && fault.scope == Scope::All;
    let local = kind.needs_dependency() && fault.scope == Scope::One;
    let mut checks = Vec::new();
    let mut diagnoses = Vec::new();

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
            let what = if dependency.is_empty() {
                "what the fault broke".to_owned()
            } else {
                format!("`{dependency}`")
            };
            diagnoses.push(Diagnosis {
                mistake: format!("liveness depends on {what}"),
                evidence: format!(
                    "{} liveness kills while {what} was away; a restart cannot bring it back",
                    row.liveness_kills
                ),
                incident: "the database-in-liveness and restart-storm incidents",
                fix: "point livenessProbe at an endpoint that checks only the process itself \
                      (stalls, deadlocks); check the dependency in readiness, which drains \
                      instead of killing and recovers by itself"
                    .into(),
                caught_by: "probity lint: liveness-checks-dependencies; probity inspect: \
                            liveness-checks-dependencies",
            });
        }
        if row.startup_kills > 0 {
            diagnoses.push(Diagnosis {
                mistake: format!("the startup probe waits on `{dependency}`"),
                evidence: format!(
                    "{} startup kills of an instance started while `{dependency}` was away",
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
        if kind == FaultKind::Blackhole && row.probe_timeouts > 0 {
            diagnoses.push(Diagnosis {
                mistake: "health checks with no timeout below the probe's period".into(),
                evidence: format!(
                    "{} probes timed out against a black-holed `{dependency}`",
                    row.probe_timeouts
                ),
                incident: "the slow-dependency incident",
                fix: "give every dependency check its own timeout, shorter than the probe's \
                      timeoutSeconds, and answer probes from a cached result"
                    .into(),
                caught_by: "probity lint: timeout-not-below-period; probity inspect: \
                            slower-than-probe-timeout",
            });
        }
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
            let drain = windows.fall.unwrap_or_default();
            diagnoses.push(Diagnosis {
                mistake: "no drain before the listener closes".into(),
                evidence: format!(
                    "{} requests failed while one instance stopped (resets {}, refused {}, \
                     service {})",
                    row.failed.total,
                    row.failed.resets,
                    row.failed.refused,
                    row.failed.service_errors
                ),
                incident: "every rollout and scale-down",
                fix: format!(
                    "on SIGTERM fail readiness at once and keep serving for at least {} (the \
                     readiness window plus the propagation), then finish in-flight requests; \
                     or a preStop sleep of that long; keep terminationGracePeriodSeconds above \
                     both",
                    secs(drain)
                ),
                caught_by: "probity lint: drain-delay-below-readiness-window, \
                            grace-period-below-drain",
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
                    "{} readiness transitions of one instance while `{dependency}` flapped",
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
        if !met {
            let (what, incident) = if kind == FaultKind::Hook {
                (
                    "what the app-assisted fault broke".to_owned(),
                    "the pool-leak incident",
                )
            } else {
                (format!("`{dependency}`"), "the pool-leak incident")
            };
            diagnoses.push(Diagnosis {
                mistake: if pod.readiness.is_none() {
                    "no readiness probe".into()
                } else {
                    format!("readiness does not check {what}")
                },
                evidence: format!(
                    "the instance stayed in rotation{} while {} requests failed",
                    row.out_of_rotation_at_s
                        .map(|at| format!(" until {at:.1}s"))
                        .unwrap_or_default(),
                    row.failed.total
                ),
                incident,
                fix: "check each hard dependency (and the pool) in readiness, from a background \
                      poll with its own timeout, so one instance's broken path takes it out of \
                      rotation"
                    .into(),
                caught_by: if pod.readiness.is_none() {
                    "probity lint: missing-readiness-probe"
                } else {
                    "probity inspect: identical-liveness-readiness (an endpoint that answers \
                     alike whatever breaks)"
                },
            });
        }
    }

    // A new instance during an outage stays out until the dependency returns.
    if kind == FaultKind::StartDuringOutage {
        let entered = row.in_rotation_while_down.unwrap_or(false);
        checks.push(Check {
            target: format!("new instance out of rotation while `{dependency}` is away"),
            measured: if entered {
                "in rotation".into()
            } else {
                "out of rotation".into()
            },
            met: !entered,
        });
        if entered {
            diagnoses.push(Diagnosis {
                mistake: format!("readiness does not check `{dependency}`"),
                evidence: format!(
                    "a new instance entered rotation while `{dependency}` was away; {} requests failed",
                    row.failed.total
                ),
                incident: "the database-outage incident (every system reported healthy)",
                fix: "gate readiness on the dependency's first successful check".into(),
                caught_by: "probity inspect: identical-liveness-readiness",
            });
        }
    }

    // Back.
    let back_within = overrides.back_within.unwrap_or(match kind {
        FaultKind::Terminate | FaultKind::Crash | FaultKind::Wedge => fault.recover(),
        _ => windows.rise + SERVICE_SLACK,
    });
    let end = row.duration_s;
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
    if !met && !row.back && row.restarts <= restarts_target {
        diagnoses.push(Diagnosis {
            mistake: "readiness does not recover by itself".into(),
            evidence: format!(
                "the fleet was not whole {} after the fault ended",
                secs(fault.recover())
            ),
            incident: "the database-outage incident",
            fix: "re-make connections after a failure (a pool that reconnects, a check that \
                  polls again) and let readiness rise when the dependency answers"
                .into(),
            caught_by: "only a drill",
        });
    }
    row.checks = checks;
    row.diagnoses = diagnoses;
}
