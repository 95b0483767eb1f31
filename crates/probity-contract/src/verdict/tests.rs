use super::*;

fn at(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

fn evidence(tier: Tier) -> Evidence<Duration> {
    Evidence {
        tier,
        healthy: true,
        last: Some(Sample {
            at: at(0),
            ok: true,
            warning: false,
            local: false,
        }),
        unhealthy_since: None,
        staleness: Duration::from_secs(3),
        fail_open_for: None,
        consecutive_successes: 3,
        rise: 3,
        fallback: None,
    }
}

#[test]
fn a_check_without_a_result_fails_by_its_tier() {
    let mut hard = evidence(Tier::Hard);
    hard.last = None;
    hard.healthy = false;
    assert_eq!(hard.verdict(at(0)).cause, Cause::NoResult);
    assert_eq!(hard.status(at(0)), Status::Fail);
    let mut soft = hard.clone();
    soft.tier = Tier::Soft;
    assert_eq!(soft.status(at(0)), Status::Warn);
    assert!(!soft.serves_alone(at(0)));
}

#[test]
fn a_stale_result_is_a_failure_never_a_stale_success() {
    let check = evidence(Tier::Hard);
    assert_eq!(check.status(at(3000)), Status::Pass);
    let verdict = check.verdict(at(3001));
    assert_eq!(verdict.status, Status::Fail);
    assert_eq!(
        verdict.cause,
        Cause::Stale {
            age: at(3001),
            bound: Duration::from_secs(3)
        }
    );
}

#[test]
fn a_warning_is_warn_for_every_tier_and_still_serves() {
    let mut check = evidence(Tier::Hard);
    check.last = Some(Sample {
        at: at(0),
        ok: true,
        warning: true,
        local: false,
    });
    assert_eq!(check.verdict(at(10)).cause, Cause::Warning);
    assert_eq!(check.status(at(10)), Status::Warn);
    assert!(check.serves_alone(at(10)));
}

#[test]
fn a_hard_check_fails_open_for_its_window_then_closed() {
    let mut check = evidence(Tier::Hard);
    check.healthy = false;
    check.last = Some(Sample {
        at: at(9_000),
        ok: false,
        warning: false,
        local: false,
    });
    check.unhealthy_since = Some(at(0));
    check.fail_open_for = Some(Duration::from_secs(10));
    let open = check.verdict(at(9_500));
    assert_eq!(open.status, Status::Warn);
    assert_eq!(open.failing_open, Some(Duration::from_millis(500)));
    assert!(check.serves_alone(at(9_500)));
    assert_eq!(check.status(at(10_000)), Status::Fail);
    assert!(!check.serves_alone(at(10_000)));
}

#[test]
fn readiness_gates_come_first_and_the_fast_path_folds_the_same_entries() {
    let checks = [evidence(Tier::Hard), evidence(Tier::Soft)];
    let mut gates = Gates {
        shutting_down_since: None,
        has_steps: true,
        steps_pending: false,
        liveness_failing: false,
    };
    let entries: Vec<Entry> = readiness(gates, [], &checks, |e| e, at(10)).collect();
    assert_eq!(entries[0].subject, Subject::Gate(Gate::Startup));
    assert_eq!(entries.len(), 3);
    assert_eq!(status(entries.iter().map(|e| (*e, false))), Status::Pass);

    gates.steps_pending = true;
    let entries = readiness(gates, [], &checks, |e| e, at(10)).map(|entry| (entry, false));
    assert_eq!(status(entries), Status::Fail);
    // Excluded, the pending startup gate no longer counts.
    let entries = readiness(gates, [], &checks, |e| e, at(10))
        .map(|entry| (entry, entry.subject == Subject::Gate(Gate::Startup)));
    assert_eq!(status(entries), Status::Pass);
    gates.steps_pending = false;

    // A step that waits on a dependency is an entry of its own, failing while pending.
    let entries: Vec<Entry> = readiness(gates, [(4, false)], &checks, |e| e, at(10)).collect();
    assert_eq!(entries[1].subject, Subject::Step(4));
    assert_eq!(entries[1].status, Status::Fail);
    assert_eq!(status(entries.iter().map(|e| (*e, false))), Status::Fail);

    gates.shutting_down_since = Some(at(5));
    let first = readiness(gates, [], &checks, |e| e, at(10)).next().unwrap();
    assert_eq!(first.subject, Subject::Gate(Gate::Shutdown));
}

#[test]
fn an_info_check_failing_never_changes_the_status() {
    let mut info = evidence(Tier::Info);
    info.healthy = false;
    info.last = Some(Sample {
        at: at(0),
        ok: false,
        warning: false,
        local: false,
    });
    let entry = readiness(
        Gates {
            shutting_down_since: None,
            has_steps: false,
            steps_pending: false,
            liveness_failing: false,
        },
        [],
        std::slice::from_ref(&info),
        |e| e,
        at(1),
    )
    .next()
    .unwrap();
    assert_eq!(entry.status, Status::Warn);
    assert_eq!(entry.effect(), Effect::None);
    assert_eq!(status([(entry, false)]), Status::Pass);
}

fn open() -> Gates<Duration> {
    Gates {
        shutting_down_since: None,
        has_steps: false,
        steps_pending: false,
        liveness_failing: false,
    }
}

fn failed(mut check: Evidence<Duration>, local: bool) -> Evidence<Duration> {
    check.healthy = false;
    check.consecutive_successes = 0;
    check.last = Some(Sample {
        at: at(0),
        ok: false,
        warning: false,
        local,
    });
    check
}

fn db_and_cache(db: Evidence<Duration>, cache: Evidence<Duration>) -> [Evidence<Duration>; 2] {
    [
        Evidence {
            fallback: Some(1),
            ..db
        },
        cache,
    ]
}

#[test]
fn a_hard_check_failing_while_its_fallback_serves_degrades() {
    let checks = db_and_cache(failed(evidence(Tier::Hard), false), evidence(Tier::Soft));
    let verdict = checks[0].verdict_among(&checks, |e| e, at(10));
    assert_eq!(verdict.status, Status::Warn);
    assert_eq!(verdict.served_by, Some(1));
    assert_eq!(verdict.cause, Cause::Failed);
    // Asked alone, the check still tells the truth: it does not serve.
    assert!(!checks[0].serves_alone(at(10)));
    let entries = readiness(open(), [], &checks, |e| e, at(10));
    assert_eq!(status(entries.map(|entry| (entry, false))), Status::Warn);
}

#[test]
fn a_check_recovering_is_still_served_by_its_fallback() {
    let mut db = failed(evidence(Tier::Hard), false);
    db.last = Some(Sample {
        at: at(0),
        ok: true,
        warning: false,
        local: false,
    });
    db.consecutive_successes = 1;
    let checks = db_and_cache(db, evidence(Tier::Soft));
    let verdict = checks[0].verdict_among(&checks, |e| e, at(10));
    assert_eq!(verdict.status, Status::Warn);
    assert_eq!(verdict.served_by, Some(1));
}

#[test]
fn when_the_fallback_fails_too_readiness_fails() {
    let checks = db_and_cache(
        failed(evidence(Tier::Hard), false),
        failed(evidence(Tier::Soft), false),
    );
    let verdict = checks[0].verdict_among(&checks, |e| e, at(10));
    assert_eq!(verdict.status, Status::Fail);
    assert_eq!(verdict.served_by, None);
    let entries = readiness(open(), [], &checks, |e| e, at(10));
    assert_eq!(status(entries.map(|entry| (entry, false))), Status::Fail);
}

#[test]
fn a_local_fault_no_result_or_a_stale_result_fails_whatever_the_fallback() {
    let cache = evidence(Tier::Soft);
    let local = db_and_cache(failed(evidence(Tier::Hard), true), cache.clone());
    assert_eq!(
        local[0].verdict_among(&local, |e| e, at(10)).status,
        Status::Fail
    );

    let mut none = evidence(Tier::Hard);
    none.last = None;
    none.healthy = false;
    let none = db_and_cache(none, cache.clone());
    assert_eq!(
        none[0].verdict_among(&none, |e| e, at(10)).status,
        Status::Fail
    );

    let mut cache_fresh = cache;
    cache_fresh.last = Some(Sample {
        at: at(9_000),
        ok: true,
        warning: false,
        local: false,
    });
    let stale = db_and_cache(evidence(Tier::Hard), cache_fresh);
    let verdict = stale[0].verdict_among(&stale, |e| e, at(9_500));
    assert!(matches!(verdict.cause, Cause::Stale { .. }));
    assert_eq!(verdict.status, Status::Fail);
}

#[test]
fn a_passing_check_with_a_fallback_is_its_own_verdict() {
    let checks = db_and_cache(evidence(Tier::Hard), failed(evidence(Tier::Soft), false));
    let verdict = checks[0].verdict_among(&checks, |e| e, at(10));
    assert_eq!(verdict, checks[0].verdict(at(10)));
    // A fallback index that names nothing serves nothing.
    let lonely = [Evidence {
        fallback: Some(7),
        ..failed(evidence(Tier::Hard), false)
    }];
    assert_eq!(
        lonely[0].verdict_among(&lonely, |e| e, at(10)).status,
        Status::Fail
    );
}

#[test]
fn a_fresh_result_changes_one_step_past_its_staleness_bound() {
    let check = evidence(Tier::Hard);
    let next = check.next_change(at(10)).unwrap();
    assert_eq!(next, at(3000) + STEP);
    assert_eq!(check.verdict(at(3000)).status, Status::Pass);
    assert!(matches!(check.verdict(next).cause, Cause::Stale { .. }));
    // Once stale, only a new result changes it.
    assert_eq!(check.next_change(next), None);
    // A bound the clock cannot reach never comes.
    let forever = Evidence {
        staleness: Duration::MAX,
        ..evidence(Tier::Hard)
    };
    assert_eq!(forever.next_change(at(10)), None);
}

#[test]
fn a_fail_open_window_changes_the_verdict_when_it_closes() {
    let mut check = failed(evidence(Tier::Hard), false);
    check.last = Some(Sample {
        at: at(9_000),
        ok: false,
        warning: false,
        local: false,
    });
    check.unhealthy_since = Some(at(0));
    check.fail_open_for = Some(Duration::from_secs(10));
    assert_eq!(check.next_change(at(9_500)), Some(at(10_000)));
    assert_eq!(check.status(at(9_999)), Status::Warn);
    assert_eq!(check.status(at(10_000)), Status::Fail);
    // After it closes, the result turning stale is what comes next.
    assert_eq!(check.next_change(at(10_000)), Some(at(12_000) + STEP));
    // A soft check has no window: its failure reads the same until the result is stale.
    let soft = Evidence {
        tier: Tier::Soft,
        ..check
    };
    assert_eq!(soft.next_change(at(9_500)), Some(at(12_000) + STEP));
}

#[test]
fn a_check_served_by_its_fallback_changes_when_the_fallback_does() {
    let mut cache = evidence(Tier::Soft);
    cache.last = Some(Sample {
        at: at(500),
        ok: true,
        warning: false,
        local: false,
    });
    let mut db = failed(evidence(Tier::Hard), false);
    db.last = Some(Sample {
        at: at(2_000),
        ok: false,
        warning: false,
        local: false,
    });
    let checks = db_and_cache(db, cache);
    // The cache's result goes stale first, and with it the check's fallback.
    let next = checks[0].next_change_among(&checks, |e| e, at(1_000));
    assert_eq!(next, Some(at(3_500) + STEP));
    assert_eq!(next_change(&checks, |e| e, at(1_000)), next);
    let before = checks[0].verdict_among(&checks, |e| e, at(3_500));
    let after = checks[0].verdict_among(&checks, |e| e, next.unwrap());
    assert_eq!(before.served_by, Some(1));
    assert_eq!(after.served_by, None);
    assert_eq!(after.status, Status::Fail);
}

#[test]
fn a_failure_fails_a_hard_check_and_warns_any_other() {
    assert_eq!(failing_status(Tier::Hard), Status::Fail);
    assert_eq!(failing_status(Tier::Soft), Status::Warn);
    assert_eq!(failing_status(Tier::Info), Status::Warn);
}

#[test]
fn liveness_and_startup_fail_on_any_entry() {
    assert_eq!(
        status(liveness([false, true]).map(|entry| (entry, false))),
        Status::Fail
    );
    assert_eq!(
        status(startup([true, true]).map(|entry| (entry, false))),
        Status::Pass
    );
    assert_eq!(
        status(startup([true, false]).map(|entry| (entry, false))),
        Status::Fail
    );
}

/// What a verdict is, leaving out the figures that count time within it.
fn shape(verdict: CheckVerdict) -> (Status, bool, bool, Option<usize>, bool) {
    (
        verdict.status,
        verdict.cause.is_failure(),
        matches!(verdict.cause, Cause::Stale { .. }),
        verdict.served_by,
        verdict.failing_open.is_some(),
    )
}

fn arbitrary_evidence() -> impl proptest::strategy::Strategy<Value = Evidence<Duration>> {
    use proptest::prelude::*;
    let tier = prop_oneof![Just(Tier::Hard), Just(Tier::Soft), Just(Tier::Info)];
    (
        tier,
        any::<bool>(),
        proptest::option::of((0u64..20_000, any::<bool>(), any::<bool>(), any::<bool>())),
        proptest::option::of(0u64..20_000),
        1u64..10_000,
        proptest::option::of(1u64..10_000),
        0u32..4,
        1u32..4,
    )
        .prop_map(
            |(tier, healthy, last, since, staleness, window, successes, rise)| Evidence {
                tier,
                healthy,
                last: last.map(|(ms, ok, warning, local)| Sample {
                    at: at(ms),
                    ok,
                    warning: ok && warning,
                    local: !ok && local,
                }),
                unhealthy_since: since.map(at),
                staleness: Duration::from_millis(staleness),
                fail_open_for: window.map(Duration::from_millis),
                consecutive_successes: successes,
                rise,
                fallback: None,
            },
        )
}

proptest::proptest! {
    /// Between `now` and `next_change` the verdict of a check with its fallback holds at
    /// every instant (figures that count time aside); with no `next_change` it holds for
    /// ever.
    #[test]
    fn the_verdict_holds_until_its_next_change(
        check in arbitrary_evidence(),
        fallback in arbitrary_evidence(),
        has_fallback in proptest::bool::ANY,
        now_ms in 0u64..30_000,
        probes in proptest::collection::vec(0u64..40_000, 1..40),
    ) {
        let checks = [
            Evidence { fallback: has_fallback.then_some(1), ..check },
            Evidence { tier: Tier::Soft, ..fallback },
        ];
        let now = at(now_ms);
        let next = checks[0].next_change_among(&checks, |e| e, now);
        let at_now = shape(checks[0].verdict_among(&checks, |e| e, now));
        for offset in probes {
            let later = now + at(offset) + Duration::from_nanos(offset % 3);
            if next.is_some_and(|next| later >= next) {
                continue;
            }
            let verdict = checks[0].verdict_among(&checks, |e| e, later);
            proptest::prop_assert_eq!(shape(verdict), at_now, "at {:?}, next {:?}", later, next);
        }
        if let Some(next) = next {
            proptest::prop_assert!(next > now);
        }
    }
}

proptest::proptest! {
    /// The allocation-free status and the verdict that names its entries are one rule: on any
    /// entries, with any exclusions, the same status; every failing entry named, and none
    /// named twice.
    #[test]
    fn the_status_and_the_probe_verdict_agree(
        raw in proptest::collection::vec(
            (0u8..3, 0u8..4, proptest::bool::ANY, proptest::bool::ANY, proptest::bool::ANY),
            0..12,
        )
    ) {
        let entries: Vec<(Entry, bool)> = raw
            .iter()
            .enumerate()
            .map(|(index, &(status, tier, warning, served, excluded))| {
                let status = [Status::Pass, Status::Warn, Status::Fail][usize::from(status)];
                let tier = [None, Some(Tier::Hard), Some(Tier::Soft), Some(Tier::Info)]
                    [usize::from(tier)];
                let check = tier.map(|_| CheckVerdict {
                    status,
                    cause: if warning { Cause::Warning } else { Cause::Failed },
                    failing_open: None,
                    served_by: served.then_some(0),
                });
                let entry = Entry { subject: Subject::Check(index), status, tier, check };
                (entry, excluded)
            })
            .collect();
        let verdict = probe(entries.iter().copied());
        proptest::prop_assert_eq!(verdict.status, status(entries.iter().copied()));
        let counted = entries.iter().filter(|(_, excluded)| !excluded);
        let failing: Vec<Subject> = counted
            .filter(|(entry, _)| entry.effect() == Effect::Fails)
            .map(|(entry, _)| entry.subject)
            .collect();
        proptest::prop_assert_eq!(&verdict.failing, &failing);
        let named = verdict.failing.len() + verdict.degraded.len() + verdict.warnings.len();
        let degrading = entries
            .iter()
            .filter(|(entry, excluded)| !excluded && entry.effect() != Effect::None)
            .count();
        proptest::prop_assert_eq!(named, degrading);
    }
}
