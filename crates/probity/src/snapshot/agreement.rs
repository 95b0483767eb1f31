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

fn check(index: usize, origin: Instant) -> impl Strategy<Value = CheckState> {
    (
        tier(),
        any::<bool>(),
        proptest::option::of((0..NOW_MS + 5_000, any::<bool>(), any::<bool>())),
        proptest::option::of(0..NOW_MS),
        1u64..60_000,
        proptest::option::of(1u64..60_000),
        0u32..5,
        1u32..5,
    )
        .prop_map(
            move |(tier, healthy, last, unhealthy_since, staleness, fail_open, successes, rise)| {
                let at = |ms: u64| origin + Duration::from_millis(ms);
                let evidence = Evidence {
                    tier,
                    healthy,
                    last: last.map(|(ms, ok, warning)| verdict::Sample {
                        at: at(ms).into_std(),
                        ok,
                        warning: ok && warning,
                    }),
                    unhealthy_since: unhealthy_since.map(|ms| at(ms).into_std()),
                    staleness: Duration::from_millis(staleness),
                    fail_open_for: fail_open.map(Duration::from_millis),
                    consecutive_successes: successes,
                    rise,
                };
                CheckState {
                    name: format!("check-{index}").into(),
                    dependency: None,
                    last: last.map(|(ms, ok, warning)| LastResult {
                        ok,
                        at: at(ms),
                        duration: Duration::from_millis(3),
                        message: (!ok).then(|| "connection refused".to_owned()),
                        kind: (!ok).then_some(FailureKind::Refused),
                        measurements: Vec::new(),
                        warning: (ok && warning).then(|| "pool busy".to_owned()),
                    }),
                    evidence,
                    consecutive_failures: 0,
                    last_transition: None,
                    last_success: None,
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
        proptest::collection::vec(any::<bool>(), 0..3),
        proptest::option::of(0..NOW_MS),
    )
        .prop_map(move |(checks, steps, conditions, shutting_down)| {
            let steps: Vec<StepState> = steps
                .into_iter()
                .enumerate()
                .map(|(index, (waits, complete))| StepState {
                    name: format!("step-{index}").into(),
                    waits_on: waits.then(|| Arc::from("postgres")),
                    complete,
                    note: None,
                })
                .collect();
            let conditions: Vec<ConditionState> = conditions
                .into_iter()
                .enumerate()
                .map(|(index, failing)| ConditionState {
                    name: format!("condition-{index}").into(),
                    kind: LivenessKind::AppState,
                    threshold: None,
                    failure: failing.then(|| ConditionFailure::Declared("wedged".to_owned())),
                    waiting: None,
                })
                .collect();
            let snapshot = Snapshot {
                service: None,
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

    #[test]
    fn a_check_asked_alone_answers_for_itself((snapshot, now) in snapshot()) {
        for check in snapshot.checks() {
            let entry = snapshot.entry(ProbeKind::Readiness, check.name(), now).unwrap();
            let serves = check.serves_alone(now);
            prop_assert_eq!(entry.status == Status::Fail, !serves);
        }
    }
}
