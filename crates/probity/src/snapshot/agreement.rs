//! The fast path and the full evaluation are one rule: on any snapshot, at any instant, the
//! allocation-free [`Snapshot::status`] equals the status of the verdict built from every entry,
//! and the plain rendered answer carries the same status code.

use super::*;
use crate::details::Details;
use crate::render::{self, Clock, Format, Query, Request};
use proptest::prelude::*;
use std::time::SystemTime;

fn tier() -> impl Strategy<Value = Tier> {
    prop_oneof![Just(Tier::Hard), Just(Tier::Soft), Just(Tier::Info)]
}

/// Milliseconds relative to the evaluation instant, which sits 100 s after the origin.
const NOW_MS: u64 = 100_000;

/// What a check shows besides its verdict: its dependency, its figures (some without a JSON
/// number), when it last passed and changed, how long its poll took.
#[derive(Debug, Clone)]
struct Looks {
    dependency: Option<&'static str>,
    measurements: Vec<Measurement>,
    last_success_ms: Option<u64>,
    last_transition_ms: Option<u64>,
    duration_us: u64,
}

fn looks() -> impl Strategy<Value = Looks> {
    let measurement = (
        prop_oneof![
            Just("connections"),
            Just("utilization"),
            Just("a \"quoted\"\nname")
        ],
        prop_oneof![
            Just(3.0),
            Just(60.5),
            Just(1e-7),
            Just(f64::NAN),
            Just(f64::INFINITY)
        ],
        proptest::option::of(prop_oneof![Just("percent"), Just("ms")]),
    )
        .prop_map(|(name, value, unit)| Measurement {
            name: name.to_owned(),
            value,
            unit: unit.map(str::to_owned),
        });
    (
        proptest::option::of(prop_oneof![
            Just("postgres"),
            Just("redis"),
            Just("pricing \"api\"")
        ]),
        proptest::collection::vec(measurement, 0..3),
        proptest::option::of(0..NOW_MS),
        proptest::option::of(0..NOW_MS),
        0u64..5_000_000,
    )
        .prop_map(
            |(dependency, measurements, last_success_ms, last_transition_ms, duration_us)| Looks {
                dependency,
                measurements,
                last_success_ms,
                last_transition_ms,
                duration_us,
            },
        )
}

fn check(index: usize, origin: Instant) -> impl Strategy<Value = CheckState> {
    (
        looks(),
        tier(),
        any::<bool>(),
        proptest::option::of((
            0..NOW_MS + 5_000,
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
        )),
        proptest::option::of(0..NOW_MS),
        1u64..60_000,
        proptest::option::of(1u64..60_000),
        0u32..5,
        1u32..5,
        // A fallback among the (at most six) checks; naming itself or a check that is not
        // there is kept as no fallback, as the builder would refuse it.
        proptest::option::of(0usize..6),
    )
        .prop_map(
            move |(
                looks,
                tier,
                healthy,
                last,
                unhealthy_since,
                staleness,
                fail_open,
                successes,
                rise,
                fallback,
            )| {
                let at = |ms: u64| origin + Duration::from_millis(ms);
                let evidence = Evidence {
                    tier,
                    healthy,
                    last: last.map(|(ms, ok, warning, local)| verdict::Sample {
                        at: crate::moment::moment(at(ms)),
                        ok,
                        warning: ok && warning,
                        local: !ok && local,
                    }),
                    unhealthy_since: unhealthy_since.map(|ms| crate::moment::moment(at(ms))),
                    staleness: Duration::from_millis(staleness),
                    fail_open_for: fail_open.map(Duration::from_millis),
                    consecutive_successes: successes,
                    rise,
                    fallback: fallback.filter(|&fallback| fallback != index),
                };
                CheckState {
                    name: format!("check-{index}").into(),
                    dependency: looks.dependency.map(Arc::from),
                    last: last.map(|(ms, ok, warning, local)| LastResult {
                        ok,
                        at: at(ms),
                        duration: Duration::from_micros(looks.duration_us),
                        message: (!ok).then(|| {
                            if local {
                                "no connection within 300ms: 5 of 5 in use".to_owned()
                            } else {
                                "connection refused".to_owned()
                            }
                        }),
                        kind: (!ok).then_some(if local {
                            FailureKind::Exhausted
                        } else {
                            FailureKind::Refused
                        }),
                        measurements: looks.measurements.clone(),
                        warning: (ok && warning).then(|| "pool busy".to_owned()),
                    }),
                    evidence,
                    consecutive_failures: 0,
                    last_transition: looks.last_transition_ms.map(at),
                    last_success: looks.last_success_ms.map(at),
                    history: crate::history::History::default(),
                }
            },
        )
}

fn snapshot() -> impl Strategy<Value = (Snapshot, Instant)> {
    let origin = Instant::now();
    (
        (0usize..6).prop_flat_map(move |count| {
            (0..count)
                .map(|index| check(index, origin))
                .collect::<Vec<_>>()
        }),
        proptest::collection::vec((any::<bool>(), any::<bool>()), 0..4),
        proptest::collection::vec(0u8..5, 0..3),
        proptest::option::of(0..NOW_MS),
        proptest::option::of(prop_oneof![Just("checkout"), Just("a \"service\"\t")]),
    )
        .prop_map(move |(checks, steps, conditions, shutting_down, service)| {
            let steps: Vec<StepState> = steps
                .into_iter()
                .enumerate()
                .map(|(index, (waits, complete))| StepState {
                    name: format!("step-{index}").into(),
                    waits_on: waits.then(|| Arc::from("postgres")),
                    complete,
                    note: None,
                    registered_at: std::time::SystemTime::UNIX_EPOCH,
                    completed_at: None,
                })
                .collect();
            let conditions: Vec<ConditionState> = conditions
                .into_iter()
                .enumerate()
                .map(|(index, state)| {
                    let at = origin + Duration::from_millis(NOW_MS / 2);
                    let wait = DeclaredWait {
                        dependency: Arc::from("broker"),
                        since: at,
                        timeout: Duration::from_secs(30),
                    };
                    let (kind, failure, waiting) = match state {
                        0 => (LivenessKind::AppState, None, None),
                        1 => (
                            LivenessKind::AppState,
                            Some(ConditionFailure::Declared("wedged".to_owned())),
                            None,
                        ),
                        2 => (
                            LivenessKind::RuntimeStall,
                            Some(ConditionFailure::Stalled {
                                last_beat: at,
                                threshold: Duration::from_secs(5),
                            }),
                            None,
                        ),
                        3 => (
                            LivenessKind::Heartbeat,
                            Some(ConditionFailure::Silent {
                                last_beat: at,
                                max_silence: Duration::from_secs(10),
                                overdue: Some(wait),
                                seen: None,
                            }),
                            None,
                        ),
                        _ => (LivenessKind::Heartbeat, None, Some(wait)),
                    };
                    ConditionState {
                        name: format!("condition-{index}").into(),
                        kind,
                        threshold: None,
                        failure,
                        waiting,
                        history: Default::default(),
                    }
                })
                .collect();
            // A fallback must name a check that is there and has no fallback of its own.
            let mut checks = checks;
            let declared: Vec<Option<usize>> =
                checks.iter().map(|check| check.evidence.fallback).collect();
            for check in &mut checks {
                check.evidence.fallback = check
                    .evidence
                    .fallback
                    .filter(|&index| declared.get(index).is_some_and(Option::is_none));
            }
            let snapshot = Snapshot {
                service: service.map(Into::into),
                paths: Arc::new(ProbePaths::default()),
                checks: checks.into_iter().map(Arc::new).collect(),
                steps: steps.into(),
                conditions: conditions.into(),
                shutting_down: shutting_down.map(|ms| origin + Duration::from_millis(ms)),
                generation: 1,
            };
            (snapshot, origin + Duration::from_millis(NOW_MS))
        })
}

const PROBES: [ProbeKind; 3] = [
    ProbeKind::Liveness,
    ProbeKind::Readiness,
    ProbeKind::Startup,
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn the_fast_path_and_the_full_evaluation_agree((snapshot, now) in snapshot()) {
        for probe in PROBES {
            let fast = snapshot.status(probe, now);
            let full = snapshot.verdict(probe, now, &[]);
            prop_assert_eq!(fast, full.status, "{:?} at {:?}: {:?}", probe, now, full);

            let query = Query::default();
            let clock = Clock { now, wall: SystemTime::now() };
            for format in [Format::Text, Format::Json, Format::HealthJson] {
                for details in [Details::Public, Details::Admin] {
                    let answer = render::render(
                        &snapshot,
                        &Request { probe, check: None, query: &query, format, details },
                        clock,
                    );
                    prop_assert_eq!(answer.status, full.status.http_code());
                }
            }
        }
    }

    /// An answer reads the same for as long as [`Snapshot::answer_lasts`] says, with a clock
    /// that maps monotonic to wall time the same way: what lets a surface keep it.
    #[test]
    fn an_answer_reads_the_same_for_as_long_as_it_lasts(
        (snapshot, now) in snapshot(),
        later_ms in 0u64..70_000,
    ) {
        let wall = SystemTime::now();
        let first = Clock { now, wall };
        let later = Duration::from_millis(later_ms);
        let second = Clock { now: now + later, wall: wall + later };
        for probe in PROBES {
            let holds = match snapshot.answer_lasts(probe, now) {
                Lasts::Moment => false,
                Lasts::Until(until) => second.now < until,
                Lasts::UntilChanged => true,
            };
            if !holds {
                continue;
            }
            for format in [Format::Text, Format::Json, Format::HealthJson] {
                for details in [Details::Public, Details::Admin] {
                    for verbose in [false, true] {
                        let query = Query { verbose, exclude: Vec::new() };
                        let request = Request { probe, check: None, query: &query, format, details };
                        prop_assert_eq!(
                            render::render(&snapshot, &request, first),
                            render::render(&snapshot, &request, second),
                            "{:?} {:?} {:?} verbose={} {} ms later",
                            probe, format, details, verbose, later_ms
                        );
                    }
                }
            }
        }
    }

    /// A check counted as served by its fallback is a hard check that fails alone, not of this
    /// instance's own fault, with a fallback that serves alone; and the handler's question
    /// ([`Snapshot::serving_instead`]) answers the same.
    #[test]
    fn a_fallback_serves_only_for_a_shared_failure_of_a_hard_check((snapshot, now) in snapshot()) {
        for entry in snapshot.entries(ProbeKind::Readiness, now, &[]) {
            let Some(check) = entry.check() else { continue };
            let serving = snapshot.serving_instead(check.name(), now);
            match entry.fallback() {
                Some(fallback) => {
                    prop_assert_eq!(entry.status, Status::Warn);
                    prop_assert_eq!(check.tier(), Tier::Hard);
                    prop_assert!(!check.serves_alone(now));
                    prop_assert!(!check.is_local_fault());
                    prop_assert!(fallback.serves_alone(now));
                    prop_assert_eq!(serving.map(CheckState::name), Some(fallback.name()));
                }
                None => prop_assert!(serving.is_none()),
            }
        }
    }

    #[test]
    fn a_check_asked_alone_answers_for_itself((snapshot, now) in snapshot()) {
        for check in snapshot.checks() {
            let entry = snapshot.entry(ProbeKind::Readiness, check.name(), now).unwrap();
            let serves = check.serves_alone(now);
            prop_assert_eq!(entry.status == Status::Fail, !serves);
        }
    }
}
