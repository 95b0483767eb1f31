//! The targets beyond the incident table's columns, judged after [`super::judge`]: staying in
//! rotation (busy is not broken; a shared outage with a fallback degrades, it does not drain),
//! probe failures below the kill threshold, a new process's start, traffic served again and
//! served while the fault lasts, marked answers gone after it, writes delivered to a broker, and
//! what health checking costs.

use super::report::{Check, Diagnosis, Row, opt_secs, secs};
use crate::file::{Fault, FaultKind, Traffic};

/// What health checking may cost in throughput by default.
pub const CHECK_COST: f64 = 0.03;

fn percent(share: f64) -> String {
    let percent = share * 100.0;
    if (percent - percent.round()).abs() < 1e-9 {
        format!("{percent:.0}%")
    } else {
        format!("{percent:.1}%")
    }
}

/// Judges the targets of `fault` this module owns into `row`.
pub fn judge(row: &mut Row, fault: &Fault, traffic: &Traffic) {
    let targets = &fault.targets;
    let kind = fault.kind;
    let dependency = fault.dependency.clone().unwrap_or_default();
    let away = if dependency.is_empty() {
        "the fault lasted".to_owned()
    } else {
        format!("`{dependency}` was away")
    };
    let figures = row.figures.clone();
    let mut checks = Vec::new();
    let mut diagnoses = Vec::new();

    // Busy straight at one instance: the failed-requests target holds there too.
    if let Some(direct) = figures.direct {
        let target = targets.failed_requests.unwrap_or(0);
        checks.push(Check {
            target: format!("failed requests straight to instance 1 ≤ {target}"),
            measured: format!("{} of {}", direct.failed, direct.requests),
            met: direct.failed <= target,
        });
        if direct.failed > target {
            diagnoses.push(busy_read_as_broken(format!(
                "{} of {} requests straight to instance 1 failed under load alone",
                direct.failed, direct.requests
            )));
        }
    }

    // Staying in rotation.
    let stays = targets.stays_in_rotation.unwrap_or(kind == FaultKind::Busy);
    if stays {
        let met = row.figures.left_rotation == 0;
        checks.push(Check {
            target: "every instance stays in rotation".into(),
            measured: if met {
                "it did".into()
            } else {
                format!("{} times out of rotation", row.figures.left_rotation)
            },
            met,
        });
        if !met {
            diagnoses.push(if kind == FaultKind::Busy {
                busy_read_as_broken(format!(
                    "the balancer took an instance out {} times with no fault",
                    row.figures.left_rotation
                ))
            } else {
                Diagnosis {
                    mistake: "the fleet drains where it should degrade".into(),
                    evidence: format!(
                        "instances left rotation {} times while {away}, though the fault is \
                         shared: draining every instance serves nobody",
                        row.figures.left_rotation
                    ),
                    incident: "the database-outage incident (an outage where a degradation \
                               would do)",
                    fix: "give the dependency a fallback (a cache, a default) and let readiness \
                          stay passing, marked degraded, while the fallback serves; drain only \
                          for a fault of the instance's own"
                        .into(),
                    caught_by: "only a drill: what a fallback serves is behaviour",
                }
            });
        }
    }

    // Probe failures below the kill threshold.
    let readiness_target = targets
        .readiness_failures
        .or((kind == FaultKind::Busy).then_some(0));
    if let Some(target) = readiness_target {
        let measured = row.figures.readiness_failures;
        checks.push(Check {
            target: format!("readiness probes failed ≤ {target}"),
            measured: measured.to_string(),
            met: measured <= target,
        });
        if measured > target && kind == FaultKind::Busy && row.readiness_transitions == 0 {
            diagnoses.push(busy_read_as_broken(format!(
                "{measured} readiness probes failed under load alone"
            )));
        }
    }
    if let Some(target) = targets.liveness_failures {
        let measured = row.figures.liveness_probe_failures;
        checks.push(Check {
            target: format!("liveness probes failed ≤ {target}"),
            measured: measured.to_string(),
            met: measured <= target,
        });
        if measured > target {
            diagnoses.push(Diagnosis {
                mistake: if dependency.is_empty() {
                    "liveness fails under the fault".into()
                } else {
                    format!("liveness depends on `{dependency}`")
                },
                evidence: format!(
                    "{measured} liveness probes failed while {away} ({} restarts this time: \
                     a longer fault restarts the fleet)",
                    row.restarts
                ),
                incident: "the database-in-liveness incident",
                fix: "let liveness see only the process itself: a worker waiting on a \
                      dependency declares the wait (bounded) instead of going silent"
                    .into(),
                caught_by: "probity lint: liveness-checks-dependencies; probity inspect: \
                            liveness-checks-dependencies",
            });
        }
    }

    // A new process's start.
    let started_target = targets.started_within.or(
        // A new instance during an outage starts without the dependency: its startup probe
        // covers its own boot only.
        (kind == FaultKind::StartDuringOutage).then(|| fault.duration()),
    );
    if let Some(within) = started_target {
        let measured = if kind == FaultKind::StartDuringOutage {
            row.figures.started_at_s
        } else {
            row.figures.started_after_s
        };
        let met = measured.is_some_and(|at| at <= within.as_secs_f64());
        checks.push(Check {
            target: if kind == FaultKind::StartDuringOutage {
                format!("the new instance started while {away}")
            } else {
                format!("a new process started ≤ {}", secs(within))
            },
            measured: opt_secs(measured),
            met,
        });
        // A new instance that exited, or that its startup probe killed, is diagnosed by
        // `judge` from those counts (the app exits without the dependency; the startup probe
        // waits on it). What is left is an instance still booting when the fault ended: its boot
        // or its startup endpoint waits on the dependency.
        if !met && kind == FaultKind::StartDuringOutage && row.exits == 0 && row.startup_kills == 0
        {
            diagnoses.push(Diagnosis {
                mistake: format!("the new instance's start waits on `{dependency}`"),
                evidence: format!(
                    "a new instance did not pass its startup probe while {away} (the fault \
                     lasted {}), with no exit and no startup kill: its boot, or the endpoint its \
                     startup probe calls, waits for `{dependency}`",
                    secs(fault.duration())
                ),
                incident: "the database-outage incident (a rollout during the outage leaves \
                           new pods unable to serve after the database is back)",
                fix: "let the app finish booting without the dependency (connect lazily, retry \
                      in the background) and let the startup probe cover the app's own boot \
                      only; wait for the dependency out of rotation (readiness)"
                    .into(),
                caught_by: "probity lint: startup-probe-waits-on-dependency",
            });
        }
    }

    // Served again after the fault.
    if let Some(within) = targets.served_again_within {
        let measured = row.figures.served_again_after_s;
        let met = measured.is_some_and(|after| after <= within.as_secs_f64());
        checks.push(Check {
            target: format!("served again ≤ {} after the fault", secs(within)),
            measured: opt_secs(measured),
            met,
        });
        if !met {
            diagnoses.push(slow_recovery(&dependency, measured));
        }
    }

    // Served while the fault lasts, per request.
    for (name, share) in &targets.served {
        let Some(class) = row.figures.traffic.iter().find(|class| class.name == *name) else {
            continue;
        };
        let measured = if class.during_fault == 0 {
            0.0
        } else {
            class.during_fault_succeeded as f64 / class.during_fault as f64
        };
        let met = class.during_fault > 0 && measured + 1e-9 >= share.0;
        checks.push(Check {
            target: format!(
                "`{name}` served ≥ {} while the fault lasts",
                percent(share.0)
            ),
            measured: format!(
                "{} ({} of {})",
                percent(measured),
                class.during_fault_succeeded,
                class.during_fault
            ),
            met,
        });
        if !met {
            diagnoses.push(Diagnosis {
                mistake: format!("`{name}` is not served while {away}"),
                evidence: format!(
                    "{} of {} `{name}` requests failed during the fault",
                    class.during_fault - class.during_fault_succeeded,
                    class.during_fault
                ),
                incident: "the database-outage incident (the fix: serve cached data marked \
                           stale)",
                fix: "serve what a fallback holds (a cache, a replica) marked stale, and keep \
                      the instance in rotation while it does"
                    .into(),
                caught_by: "only a drill: what a fallback serves is behaviour",
            });
        }
    }

    // Marked answers gone after the fault.
    if let Some(within) = targets.unmarked_within {
        let measured = row.figures.unmarked_after_s;
        let met = measured.is_some_and(|after| after <= within.as_secs_f64());
        let markers: Vec<&str> = traffic
            .requests
            .iter()
            .filter_map(|request| request.marker.as_ref().map(|m| m.header.as_str()))
            .collect();
        checks.push(Check {
            target: format!(
                "answers no longer marked ({}) ≤ {} after the fault",
                markers.join(", "),
                secs(within)
            ),
            measured: measured.map_or("still marked".into(), |after| format!("{after:.1}s")),
            met,
        });
        if !met {
            diagnoses.push(slow_recovery(&dependency, measured));
        }
    }

    // Writes delivered.
    if targets.measures_delivery() {
        match figures.delivery {
            None => checks.push(Check {
                target: "writes delivered to the broker".into(),
                measured: "not counted".into(),
                met: false,
            }),
            Some(delivery) => {
                if let Some(target) = targets.lost_writes {
                    let met = delivery.lost <= target;
                    checks.push(Check {
                        target: format!("acknowledged writes lost ≤ {target}"),
                        measured: format!(
                            "{} of {} ({} received, {} distinct; {} unacknowledged)",
                            delivery.lost,
                            delivery.acknowledged,
                            delivery.received,
                            delivery.distinct,
                            delivery.unacknowledged
                        ),
                        met,
                    });
                    if !met {
                        diagnoses.push(Diagnosis {
                            mistake: "acknowledged writes never reach the broker".into(),
                            evidence: format!(
                                "{} writes answered with success were not received within \
                                 the wait",
                                delivery.lost
                            ),
                            incident: "—",
                            fix: "write the message in the same transaction as the data (an \
                                  outbox) and relay it until the broker confirms it"
                                .into(),
                            caught_by: "only a drill",
                        });
                    }
                }
                if let Some(target) = targets.duplicated_writes {
                    checks.push(Check {
                        target: format!("writes received twice ≤ {target}"),
                        measured: delivery.duplicated.to_string(),
                        met: delivery.duplicated <= target,
                    });
                }
            }
        }
    }

    // What health checking costs.
    if let Some(cost) = figures.check_cost {
        let target = targets.check_cost.map_or(CHECK_COST, |share| share.0);
        let check = cost_check(&cost, target);
        let met = check.met;
        checks.push(check);
        if !met {
            diagnoses.push(Diagnosis {
                mistake: "health checking is expensive".into(),
                evidence: format!(
                    "the checked fleets served {:.1}% less than a fleet with none, at the same \
                     time on the same cores",
                    cost.cost * 100.0
                ),
                incident: "the deep-check incident",
                fix: "answer probes from a snapshot polled in the background (no I/O per \
                      probe), poll each dependency at a modest interval, and keep probe periods \
                      no shorter than the reaction you need"
                    .into(),
                caught_by: "probity lint: probe-load",
            });
        }
    }

    row.checks.extend(checks);
    row.diagnoses.extend(diagnoses);
}

/// The health-check cost against its target, with the spread beside the figure.
///
/// Judged on throughput — what the checked fleets serve against the bare one, the quantity the
/// target is stated in — with its 95% margin over 5 s blocks and its control (the fleet against
/// its identical twin). Its **noise** is the larger of the two: the margin is the swing from
/// block to block, the control what sets two identical fleets apart for the whole run; a
/// difference no larger than that between checked and bare proves nothing. The target is missed
/// only when the whole interval is above it (`cost − noise > target`): a gate must not fail a
/// healthy fleet because the machine was noisy. When the noise is as wide as the target, the
/// measurement says so — the run could not have seen a miss, and a longer `busy` narrows it.
///
/// The CPU time per request served, when measured, is shown beside it and not judged: its
/// blocks agree closely within a run, but fleets differ in it by a part that lasts the whole
/// run (where the kernel placed their processes), which its margin cannot see and one control
/// cannot measure — over nine runs of checkout's busy fault its figure ranged 1.0–3.2% while
/// each run's margin said ±0.3–0.9%, and throughput's ranged 0.2–1.0% within its noise.
fn cost_check(cost: &super::report::CheckCost, target: f64) -> Check {
    let noise = cost.cost_margin.max(cost.control.abs());
    let mut measured = format!(
        "{:.1}% ± {:.1}% of throughput (blocks {:.1}%–{:.1}%; control {:.1}% ± {:.1}%; {:.0} \
         req/s checked, {:.0} bare)",
        cost.cost * 100.0,
        noise * 100.0,
        cost.cost_p10 * 100.0,
        cost.cost_p90 * 100.0,
        cost.control * 100.0,
        cost.control_margin * 100.0,
        (cost.fleet_rps + cost.control_rps) / 2.0,
        cost.bare_rps
    );
    if let Some(cpu) = &cost.cpu {
        measured.push_str(&format!(
            "; CPU per request {:.1}% ± {:.1}% (control {:.1}% ± {:.1}%, {} blocks; not judged)",
            cpu.cost * 100.0,
            cpu.margin * 100.0,
            cpu.control * 100.0,
            cpu.control_margin * 100.0,
            cpu.blocks
        ));
    }
    if noise >= target {
        measured
            .push_str("; the noise is as wide as the target: too noisy to tell, run busy longer");
    }
    Check {
        target: format!("health checking costs ≤ {} of throughput", percent(target)),
        measured,
        met: cost.cost - noise <= target,
    }
}

fn busy_read_as_broken(evidence: String) -> Diagnosis {
    Diagnosis {
        mistake: "busy read as broken".into(),
        evidence,
        incident: "the deep-check incident",
        fix: "answer readiness from a snapshot polled in the background, never by taking a \
              pooled connection or calling a dependency inline; judge saturation by requests \
              failing, not by a busy pool"
            .into(),
        caught_by: "probity lint: probe-load",
    }
}

fn slow_recovery(dependency: &str, measured: Option<f64>) -> Diagnosis {
    Diagnosis {
        mistake: "the service is slow to recover by itself".into(),
        evidence: format!(
            "after {} returned, the service took {} to serve normally again",
            if dependency.is_empty() {
                "the fault ended".to_owned()
            } else {
                format!("`{dependency}`")
            },
            opt_secs(measured)
        ),
        incident: "the database-outage incident",
        fix: "re-make connections at once when a dependency answers again (a pool that \
              reconnects, a check that polls again) and rise after a short success count"
            .into(),
        caught_by: "only a drill",
    }
}

#[cfg(test)]
mod tests {
    use super::super::cost::compare;
    use super::*;

    #[test]
    fn the_cost_verdict_stands_on_the_figure_with_its_spread_beside_it() {
        // Six windows: the machine's speed swings 30%, alike for all three fleets.
        let bare = [1000, 1300, 1000, 1300, 1000, 1300];
        let checked = bare.map(|n: u64| n * 98 / 100);
        let cost = compare(&checked, &checked, &bare);
        let check = cost_check(&cost, CHECK_COST);
        assert!(check.met, "{check:?}");
        assert!(
            check
                .measured
                .starts_with("2.0% ± 0.0% of throughput (blocks 2.0%–2.0%"),
            "{check:?}"
        );
        assert_eq!(check.target, "health checking costs ≤ 3% of throughput");

        // Ten windows at 5% ± 1%: the whole interval above 3%, a miss.
        let bare = [1000; 10];
        let checked = [940, 960, 950, 945, 955, 950, 940, 960, 945, 955];
        let cost = compare(&checked, &checked, &bare);
        let check = cost_check(&cost, CHECK_COST);
        assert!(!check.met, "{check:?}");
        assert!(check.measured.starts_with("5.0% ± "), "{check:?}");
        assert!(!check.measured.contains("too noisy"), "{check:?}");

        // Four windows spread from 1% to 7%: 4.0% ± 4.1% (t with 3 degrees of freedom) could
        // as well be 0%: no miss, and the measurement says it could not have seen one.
        let bare = [1000; 4];
        let checked = [990, 930, 970, 950];
        let cost = compare(&checked, &checked, &bare);
        let check = cost_check(&cost, CHECK_COST);
        assert!(check.met, "{check:?}");
        assert!(check.measured.contains("(blocks 1.0%–7.0%"), "{check:?}");
        assert!(check.measured.contains("too noisy to tell"), "{check:?}");

        // The CPU figure, when measured, is shown and not judged: 6.0% of CPU per request
        // beside throughput's 4.0% ± 4.1% is no miss.
        let mut cost = compare(&checked, &checked, &bare);
        cost.cpu = Some(crate::engine::report::CpuCost {
            blocks: 12,
            cost: 0.06,
            margin: 0.005,
            control: 0.001,
            control_margin: 0.004,
        });
        let check = cost_check(&cost, CHECK_COST);
        assert!(check.met, "{check:?}");
        assert!(
            check.measured.starts_with("4.0% ± 4.1% of throughput"),
            "{check:?}"
        );
        assert!(
            check.measured.contains(
                "CPU per request 6.0% ± 0.5% (control 0.1% ± 0.4%, 12 blocks; not judged)"
            ),
            "{check:?}"
        );

        // Two identical fleets 2.0% apart for the whole run: a cost of 4.5% ± 0.4% is within
        // that of the target, no miss; 5.5% is.
        let bare = [1000; 10];
        let checked = [955, 957, 953, 955, 955, 956, 954, 955, 955, 955];
        let mut cost = compare(&checked, &checked, &bare);
        cost.control = 0.02;
        let check = cost_check(&cost, CHECK_COST);
        assert!(check.met, "{check:?}");
        assert!(
            check.measured.starts_with("4.5% ± 2.0% of throughput"),
            "{check:?}"
        );
        cost.cost = 0.055;
        assert!(!cost_check(&cost, CHECK_COST).met);
    }
}
