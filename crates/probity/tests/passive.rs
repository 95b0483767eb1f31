//! Passive reports: real failures fail a check before its next poll; only polls recover it.

mod support;

use probity::{CheckSpec, Health, ProbeKind, Status, Tier};
use support::{Switch, advance, secs};
use tokio::time::Instant;

fn readiness(health: &Health) -> Status {
    health
        .snapshot()
        .status(ProbeKind::Readiness, Instant::now())
}

fn registry(switch: &Switch, threshold: Option<u32>) -> Health {
    let mut spec = CheckSpec::new("db", Tier::Hard, switch.check())
        .interval(secs(10.0))
        .timeout(secs(1.0))
        .jitter(secs(0.0));
    if let Some(threshold) = threshold {
        spec = spec.passive_failures(threshold);
    }
    Health::builder().check(spec).build().unwrap()
}

#[tokio::test(start_paused = true)]
async fn five_real_failures_fail_the_check_at_once_and_trigger_a_repoll() {
    let switch = Switch::new(true);
    let health = registry(&switch, None);
    health.start().unwrap();
    advance(secs(0.1)).await;
    assert_eq!(readiness(&health), Status::Pass);
    assert_eq!(switch.polls(), 1);

    // The pool leaks: the poll would still pass (it's the capacity the requests see).
    let reporter = health.reporter("db").unwrap();
    for _ in 0..4 {
        reporter.failure("pool timed out while waiting for an open connection");
    }
    assert_eq!(
        readiness(&health),
        Status::Pass,
        "four failures are not enough"
    );
    reporter.failure("pool timed out while waiting for an open connection");
    // No time has passed: the decision is immediate, not at the next poll in 10 s.
    assert_eq!(readiness(&health), Status::Fail);
    let snapshot = health.snapshot();
    let check = snapshot.check("db").unwrap();
    assert_eq!(
        check.last().unwrap().message.as_deref(),
        Some(
            "5 consecutive request failures reported: pool timed out while waiting for an open connection"
        )
    );

    // The poller re-polls immediately rather than in 10 s.
    advance(secs(0.01)).await;
    assert_eq!(switch.polls(), 2, "no immediate re-poll");
    assert_eq!(
        readiness(&health),
        Status::Fail,
        "one poll is not a recovery"
    );
}

#[tokio::test(start_paused = true)]
async fn a_storm_of_failures_repolls_once_not_at_the_request_rate() {
    let switch = Switch::new(false);
    let health = registry(&switch, None);
    health.start().unwrap();
    advance(secs(0.1)).await;
    switch.set(true);
    // Rise to healthy on the poller's cadence (first success at boot, then steady).
    advance(secs(10.0)).await;
    assert_eq!(readiness(&health), Status::Pass);
    let polls = switch.polls();

    // A dependency failing fast under 1000 requests: 200 runs of five failures.
    let reporter = health.reporter("db").unwrap();
    for _ in 0..1000 {
        reporter.failure("connection refused");
    }
    let snapshot = health.snapshot();
    assert_eq!(
        snapshot
            .check("db")
            .unwrap()
            .last()
            .unwrap()
            .message
            .as_deref(),
        Some("1000 consecutive request failures reported: connection refused"),
        "later runs still refresh the reason"
    );
    advance(secs(1.0)).await;
    assert_eq!(readiness(&health), Status::Fail);
    assert_eq!(switch.polls(), polls + 1, "one re-poll when the check fell");
}

#[tokio::test(start_paused = true)]
async fn reported_successes_never_recover_a_check() {
    let switch = Switch::new(true);
    let health = registry(&switch, Some(2));
    health.start().unwrap();
    advance(secs(0.1)).await;
    health.report("db", Err("refused")).unwrap();
    health.report("db", Err("refused")).unwrap();
    assert_eq!(readiness(&health), Status::Fail);
    for _ in 0..100 {
        health.report::<&str>("db", Ok(())).unwrap();
    }
    assert_eq!(
        readiness(&health),
        Status::Fail,
        "request successes recovered it"
    );
    // Recovery through polls: the re-poll plus two more (rise 3).
    advance(secs(0.1)).await;
    assert_eq!(readiness(&health), Status::Fail);
    advance(secs(20.0)).await;
    assert_eq!(readiness(&health), Status::Pass);
}

#[tokio::test(start_paused = true)]
async fn a_success_resets_the_failure_run() {
    let switch = Switch::new(true);
    let health = registry(&switch, Some(3));
    health.start().unwrap();
    advance(secs(0.1)).await;
    let reporter = health.reporter("db").unwrap();
    reporter.failure("x");
    reporter.failure("x");
    reporter.success();
    reporter.failure("x");
    reporter.failure("x");
    assert_eq!(readiness(&health), Status::Pass);
    reporter.failure("x");
    assert_eq!(readiness(&health), Status::Fail);
}

#[tokio::test(start_paused = true)]
async fn reporting_an_unknown_check_names_the_known_ones() {
    let switch = Switch::new(true);
    let health = registry(&switch, None);
    let error = health.report("dbb", Err("x")).unwrap_err();
    assert_eq!(error.to_string(), "unknown check `dbb` (declared: db)");
}

#[tokio::test(start_paused = true)]
async fn reported_errors_are_redacted() {
    let switch = Switch::new(true);
    let health = registry(&switch, Some(1));
    health.start().unwrap();
    advance(secs(0.1)).await;
    health
        .report("db", Err("auth failed for mysql://root:hunter2@db/x"))
        .unwrap();
    let snapshot = health.snapshot();
    let message = snapshot
        .check("db")
        .unwrap()
        .last()
        .unwrap()
        .message
        .clone();
    assert!(
        !message.as_deref().unwrap().contains("hunter2"),
        "{message:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn poll_now_polls_at_once() {
    let switch = Switch::new(false);
    let health = registry(&switch, None);
    health.start().unwrap();
    advance(secs(0.1)).await;
    assert_eq!(switch.polls(), 1);
    switch.set(true);
    health.poll_now("db").unwrap();
    advance(secs(0.01)).await;
    assert_eq!(switch.polls(), 2, "no poll on request");
    assert_eq!(
        readiness(&health),
        Status::Pass,
        "first success at boot is enough"
    );
    assert!(health.poll_now("nope").is_err());
}

/// Reports arrive from every request thread at once: each publishes a snapshot, and a snapshot
/// never replaces a newer one, so readers never see the generation go back and the last
/// snapshot published is the last one applied.
#[test]
fn reports_from_many_threads_publish_their_snapshots_in_order() {
    const THREADS: u64 = 4;
    const REPORTS: u64 = 2_000;
    let switch = Switch::new(true);
    let health = registry(&switch, Some(1));
    let view = probity::HealthView::from(health.clone());
    let done = std::sync::atomic::AtomicBool::new(false);
    let start = health.snapshot().generation();
    std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let mut last = start;
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                let seen = view.snapshot().generation();
                assert!(seen >= last, "generation went back from {last} to {seen}");
                // The generation is stored just after its snapshot.
                assert!(view.generation() + 1 >= seen);
                last = seen;
            }
        });
        let writers: Vec<_> = (0..THREADS)
            .map(|_| {
                let reporter = health.reporter("db").unwrap();
                scope.spawn(move || {
                    for _ in 0..REPORTS {
                        reporter.failure("connection refused");
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Release);
        reader.join().unwrap();
    });
    let end = start + THREADS * REPORTS;
    assert_eq!(health.snapshot().generation(), end);
    assert_eq!(view.generation(), end);
}
