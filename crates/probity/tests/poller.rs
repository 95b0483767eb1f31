//! Pollers: timeouts, no overlap, panics, staleness — on the paused clock.

mod support;

use probity::{CheckError, CheckSpec, Detail, Health, ProbeKind, Status, Tier};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use support::{Switch, advance, secs};
use tokio::time::Instant;

/// Counts polls in flight; the guard decrements when the poll's future is dropped.
struct InFlight {
    now: Arc<AtomicUsize>,
    max: Arc<AtomicUsize>,
    started: Arc<AtomicUsize>,
}

struct Guard(Arc<AtomicUsize>);
impl Drop for Guard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[tokio::test(start_paused = true)]
async fn a_hanging_check_is_cut_at_its_timeout_and_never_overlaps() {
    let counters = InFlight {
        now: Arc::default(),
        max: Arc::default(),
        started: Arc::default(),
    };
    let (now, max, started) = (
        counters.now.clone(),
        counters.max.clone(),
        counters.started.clone(),
    );
    let hang = move || {
        let (now, max, started) = (now.clone(), max.clone(), started.clone());
        async move {
            let in_flight = now.fetch_add(1, Ordering::SeqCst) + 1;
            max.fetch_max(in_flight, Ordering::SeqCst);
            started.fetch_add(1, Ordering::SeqCst);
            let _guard = Guard(now);
            std::future::pending::<()>().await;
            Ok(Detail::new())
        }
    };
    let health = Health::builder()
        .check(
            CheckSpec::new("db", Tier::Hard, hang)
                .interval(secs(5.0))
                .timeout(secs(2.0)),
        )
        .build()
        .unwrap();
    let tasks_before = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();
    health.start().unwrap();
    advance(secs(2.5)).await;
    let snapshot = health.snapshot();
    let check = snapshot.check("db").unwrap();
    assert_eq!(
        check.last().unwrap().message.as_deref(),
        Some("timed out after 2s")
    );
    assert_eq!(check.last().unwrap().duration, secs(2.0));
    let tasks_running = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();

    // An hour of virtual time.
    for _ in 0..720 {
        advance(secs(5.0)).await;
        assert!(counters.now.load(Ordering::SeqCst) <= 1);
    }
    assert_eq!(counters.max.load(Ordering::SeqCst), 1, "polls overlapped");
    let polls = counters.started.load(Ordering::SeqCst);
    // One poll per 5 s ± jitter over an hour: about 720.
    assert!((650..=800).contains(&polls), "{polls} polls in an hour");
    let tasks_after = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();
    assert_eq!(tasks_after, tasks_running, "tasks grew");
    assert_eq!(tasks_running, tasks_before + 1, "one poller task per check");
    assert_eq!(
        health
            .snapshot()
            .status(ProbeKind::Readiness, Instant::now()),
        Status::Fail
    );
}

#[tokio::test(start_paused = true)]
async fn a_panicking_check_fails_and_the_poller_lives_on() {
    let polls = Arc::new(AtomicUsize::new(0));
    let counter = polls.clone();
    let check = move || {
        let n = counter.fetch_add(1, Ordering::SeqCst);
        async move {
            if n == 0 {
                panic!("pool poisoned");
            }
            Ok(Detail::new())
        }
    };
    let health = Health::builder()
        .check(
            CheckSpec::new("db", Tier::Hard, check)
                .interval(secs(1.0))
                .timeout(secs(0.5))
                .jitter(secs(0.0)),
        )
        .build()
        .unwrap();
    health.start().unwrap();
    advance(secs(0.5)).await;
    let snapshot = health.snapshot();
    let last = snapshot.check("db").unwrap().last().unwrap().clone();
    assert!(!last.ok);
    assert_eq!(last.message.as_deref(), Some("panicked: pool poisoned"));
    advance(secs(1.0)).await;
    assert_eq!(polls.load(Ordering::SeqCst), 2, "the poller kept polling");
    assert!(health.snapshot().check("db").unwrap().last().unwrap().ok);
}

#[tokio::test(start_paused = true)]
async fn a_panic_while_building_the_future_is_caught_too() {
    struct Explodes;
    impl probity::Check for Explodes {
        fn check(&self) -> probity::CheckFuture<'_> {
            panic!("misconfigured")
        }
    }
    let health = Health::builder()
        .check(CheckSpec::new("db", Tier::Hard, Explodes))
        .build()
        .unwrap();
    health.start().unwrap();
    advance(secs(0.1)).await;
    let snapshot = health.snapshot();
    assert_eq!(
        snapshot
            .check("db")
            .unwrap()
            .last()
            .unwrap()
            .message
            .as_deref(),
        Some("panicked: misconfigured")
    );
}

/// A hard check polled every second, stale 3 s after its last result, polled once (passing).
async fn polled_once_staleness_3s() -> (Switch, Health) {
    let switch = Switch::new(true);
    let health = Health::builder()
        .check(
            CheckSpec::new("db", Tier::Hard, switch.check())
                .interval(secs(1.0))
                .timeout(secs(0.5))
                .staleness(secs(3.0)),
        )
        .build()
        .unwrap();
    health.start().unwrap();
    advance(secs(0.5)).await;
    (switch, health)
}

#[tokio::test(start_paused = true)]
async fn a_stale_result_counts_as_a_failure() {
    let (_switch, health) = polled_once_staleness_3s().await;
    assert_eq!(
        health
            .snapshot()
            .status(ProbeKind::Readiness, Instant::now()),
        Status::Pass
    );
    // The poller stops (as if wedged): the last success must not be served forever.
    health.stop();
    advance(secs(2.0)).await;
    let snapshot = health.snapshot();
    assert_eq!(
        snapshot.status(ProbeKind::Readiness, Instant::now()),
        Status::Pass
    );
    advance(secs(1.5)).await; // 4 s since the last poll, bound 3 s
    let now = Instant::now();
    assert_eq!(snapshot.status(ProbeKind::Readiness, now), Status::Fail);
    let check = snapshot.check("db").unwrap();
    assert!(check.is_stale(now));
    assert!(
        check.is_healthy(),
        "hysteresis still says healthy: staleness overrides it"
    );
    let verdict = check.verdict(now);
    assert_eq!(verdict.status, Status::Fail);
    let entry = snapshot
        .entry(probity::ProbeKind::Readiness, "db", now)
        .unwrap();
    assert_eq!(
        entry.reason(probity::Details::Public, now).as_deref(),
        Some("stale: last result 4s ago (bound 3s)")
    );
}

#[tokio::test(start_paused = true)]
async fn a_plain_answer_served_again_fails_once_its_result_turns_stale() {
    use probity::render::{Clock, Format, Query, Request, render};
    let (_switch, health) = polled_once_staleness_3s().await;
    health.stop();
    let snapshot = health.snapshot();
    let query = Query::default();
    let plain = |snapshot: &probity::Snapshot| {
        let request = Request {
            probe: ProbeKind::Readiness,
            check: None,
            query: &query,
            format: Format::Text,
            details: probity::Details::Public,
        };
        let answer = render(snapshot, &request, Clock::now());
        (answer.status, answer.verdict)
    };
    // Asked again and again on one snapshot, the passing verdict is decided once and kept...
    for _ in 0..3 {
        assert_eq!(plain(&snapshot), (200, Some(Status::Pass)));
        advance(secs(0.5)).await;
    }
    // ...only until the result turns stale (3 s after the last poll).
    advance(secs(1.6)).await;
    assert_eq!(plain(&snapshot), (503, Some(Status::Fail)));
    assert_eq!(plain(&snapshot), (503, Some(Status::Fail)));
}

#[tokio::test(start_paused = true)]
async fn default_staleness_is_three_intervals() {
    let switch = Switch::new(true);
    let health = Health::builder()
        .check(
            CheckSpec::new("db", Tier::Hard, switch.check())
                .interval(secs(2.0))
                .timeout(secs(1.0)),
        )
        .build()
        .unwrap();
    assert_eq!(
        health.snapshot().check("db").unwrap().staleness(),
        secs(6.0)
    );
}

#[tokio::test(start_paused = true)]
async fn check_defaults_come_from_the_check_when_unset() {
    struct Suggests;
    impl probity::Check for Suggests {
        fn check(&self) -> probity::CheckFuture<'_> {
            Box::pin(async { Err(CheckError::new("x")) })
        }
        fn dependency(&self) -> Option<&str> {
            Some("redis")
        }
        fn default_timing(&self) -> Option<probity::Timing> {
            Some(probity::Timing {
                interval: secs(3.0),
                timeout: secs(1.0),
            })
        }
    }
    let health = Health::builder()
        .check(CheckSpec::new("cache", Tier::Soft, Suggests))
        .build()
        .unwrap();
    let contract = health.contract();
    let check = contract.check("cache").unwrap();
    assert_eq!(check.interval_ms, 3000);
    assert_eq!(check.timeout_ms, 1000);
    assert_eq!(check.staleness_ms, 9000);
    assert_eq!(check.dependency.as_deref(), Some("redis"));
}

#[tokio::test(start_paused = true)]
async fn errors_are_redacted_before_they_enter_the_snapshot() {
    let check = || async {
        Err(CheckError::new(
            "error connecting to postgres://app:hunter2@127.0.0.1:1/orders: connection refused",
        ))
    };
    let health = Health::builder()
        .check(CheckSpec::new("db", Tier::Hard, check))
        .build()
        .unwrap();
    health.start().unwrap();
    advance(secs(0.1)).await;
    let snapshot = health.snapshot();
    let message = snapshot
        .check("db")
        .unwrap()
        .last()
        .unwrap()
        .message
        .clone();
    assert_eq!(
        message.as_deref(),
        Some("error connecting to postgres://app:***@127.0.0.1:1/orders: connection refused")
    );
}

#[tokio::test(start_paused = true)]
async fn stopping_and_dropping_ends_the_pollers() {
    let switch = Switch::new(true);
    let health = Health::builder()
        .check(
            CheckSpec::new("db", Tier::Hard, switch.check())
                .interval(secs(1.0))
                .timeout(secs(0.5)),
        )
        .build()
        .unwrap();
    health.start().unwrap();
    health.start().unwrap(); // idempotent: still one poller
    advance(secs(0.1)).await;
    assert_eq!(switch.polls(), 1);
    drop(health);
    advance(secs(5.0)).await;
    assert!(switch.polls() <= 2, "pollers outlived the registry");
}

#[test]
fn starting_outside_a_runtime_is_an_error() {
    let health = Health::builder().build().unwrap();
    assert_eq!(
        health.start().unwrap_err().to_string(),
        "no tokio runtime: call start() from within a tokio runtime"
    );
}
