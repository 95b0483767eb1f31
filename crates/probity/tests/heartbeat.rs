//! Worker heartbeats as a liveness condition, on tokio's paused clock: progress keeps liveness
//! up, silence fails it at its bound, a declared wait within its timeout excuses silence and
//! one past it does not, a long broker outage with a retry loop of bounded waits restarts
//! nothing, and liveness recovers when the worker beats again.

use probity::contract::LivenessKind;
use probity::render::{Clock, Details, Format, Query, Request, render};
use probity::{
    BuildError, CheckError, CheckSpec, ConditionPhase, Detail, Health, ProbeKind, Status, Tier,
};
use std::future::pending;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};
use tokio::time::{Instant, sleep, sleep_until};

/// The heartbeat's bound in most tests; the watcher then looks every second.
const BOUND: Duration = Duration::from_secs(10);
const PERIOD: Duration = Duration::from_secs(1);
const MS: Duration = Duration::from_millis(1);

fn started(max_silence: Duration) -> Health {
    let health = Health::builder()
        .heartbeat("outbox", max_silence)
        .build()
        .unwrap();
    health.start().unwrap();
    health
}

fn status(health: &Health, probe: ProbeKind) -> Status {
    health.snapshot().status(probe, Instant::now())
}

fn liveness(health: &Health) -> Status {
    status(health, ProbeKind::Liveness)
}

/// The `outbox` entry's reason in the liveness answer, at `now`.
fn reason(health: &Health, details: Details, now: Instant) -> Option<String> {
    let snapshot = health.snapshot();
    let entry = snapshot.entry(ProbeKind::Liveness, "outbox", now)?;
    entry.reason(details, now).map(|reason| reason.into_owned())
}

/// The text answer of `probe`, verbose, at `now`.
fn answer(health: &Health, probe: ProbeKind, details: Details, now: Instant) -> (u16, String) {
    let query = Query {
        verbose: true,
        exclude: Vec::new(),
    };
    let request = Request {
        probe,
        check: None,
        query: &query,
        format: Format::Text,
        details,
    };
    let clock = Clock {
        now,
        wall: SystemTime::now(),
    };
    let answer = render(&health.snapshot(), &request, clock);
    (answer.status, answer.body.into_owned())
}

/// Asserts liveness passes at every 100 ms from now until `end`.
async fn passes_until(health: &Health, end: Instant, what: &str) {
    while Instant::now() < end {
        assert_eq!(
            liveness(health),
            Status::Pass,
            "{what}: liveness failed {:?} before {end:?}",
            end - Instant::now()
        );
        sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(start_paused = true)]
async fn progress_keeps_liveness_up_over_many_bounds() {
    let health = started(BOUND);
    let heartbeat = health.heartbeat("outbox").unwrap();
    let working = Arc::new(AtomicBool::new(true));
    let worker = tokio::spawn({
        let working = working.clone();
        async move {
            while working.load(Ordering::Relaxed) {
                sleep(Duration::from_secs(3)).await; // one message's work
                heartbeat.beat();
            }
        }
    });
    let start = Instant::now();
    passes_until(&health, start + BOUND * 20, "a beating worker").await;

    // The watcher was looking all along: once the worker stops, liveness fails.
    working.store(false, Ordering::Relaxed);
    worker.await.unwrap();
    sleep(BOUND + PERIOD * 2).await;
    assert_eq!(liveness(&health), Status::Fail);
}

#[tokio::test(start_paused = true)]
async fn silence_fails_liveness_at_the_bound_not_before() {
    let health = started(BOUND);
    // Taken off the watcher's tick, so a failure before the bound would show between ticks.
    sleep(Duration::from_millis(300)).await;
    let _heartbeat = health.heartbeat("outbox").unwrap();
    let taken = Instant::now();
    // Silent from the start: passing up to the bound, failing within one watcher period after.
    passes_until(&health, taken + BOUND + MS, "silent within the bound").await;
    sleep_until(taken + BOUND + PERIOD).await;
    assert_eq!(liveness(&health), Status::Fail);
    assert_eq!(
        reason(&health, Details::Admin, taken + BOUND + PERIOD),
        Some("worker silent for 11s (bound 10s)".to_owned())
    );
    // Readiness fails with it, through the liveness gate.
    assert_eq!(status(&health, ProbeKind::Readiness), Status::Fail);
    let snapshot = health.snapshot();
    let verdict = snapshot.verdict(ProbeKind::Readiness, Instant::now(), &[]);
    assert_eq!(verdict.failing, ["liveness"]);
}

#[tokio::test(start_paused = true)]
async fn a_watcher_says_what_it_saw_and_the_history_keeps_each_phase() {
    let health = started(BOUND);
    // Taken off the watcher's tick, as above.
    sleep(Duration::from_millis(300)).await;
    let heartbeat = health.heartbeat("outbox").unwrap();
    let taken = Instant::now();
    heartbeat.saw(Some(
        "the app's /healthz gave no answer within 2s; db passes, so this is not a wait",
    ));
    sleep_until(taken + BOUND + PERIOD).await;
    assert_eq!(liveness(&health), Status::Fail);
    assert_eq!(
        reason(&health, Details::Admin, taken + BOUND + PERIOD),
        Some(
            "the app's /healthz gave no answer within 2s; db passes, so this is not a wait: \
             silent for 11s (bound 10s)"
                .to_owned()
        )
    );
    // The public reason stays bare.
    assert_eq!(
        reason(&health, Details::Public, taken + BOUND + PERIOD),
        Some("stalled".to_owned())
    );
    // A wait, then a beat: each phase change is kept, oldest first.
    let wait = heartbeat.waiting_on("db", Duration::from_secs(60));
    sleep(BOUND + PERIOD * 2).await;
    drop(wait);
    heartbeat.saw(None);
    sleep(PERIOD * 2).await;
    let snapshot = health.snapshot();
    let condition = &snapshot.conditions()[0];
    let phases: Vec<(ConditionPhase, ConditionPhase)> = condition
        .history()
        .transitions()
        .map(|transition| (transition.from(), transition.to()))
        .collect();
    assert_eq!(
        phases,
        [
            (ConditionPhase::Passing, ConditionPhase::Failing),
            (ConditionPhase::Failing, ConditionPhase::Passing),
            (ConditionPhase::Passing, ConditionPhase::Waiting),
            (ConditionPhase::Waiting, ConditionPhase::Passing),
        ]
    );
    assert_eq!(condition.phase(), ConditionPhase::Passing);
}

#[tokio::test(start_paused = true)]
async fn a_heartbeat_nobody_has_taken_passes() {
    let health = started(BOUND);
    sleep(BOUND * 5).await;
    assert_eq!(liveness(&health), Status::Pass);
    // Taking it is a sign of life: silence counts from then.
    let _heartbeat = health.heartbeat("outbox").unwrap();
    sleep(PERIOD * 2).await;
    assert_eq!(liveness(&health), Status::Pass);
    sleep(BOUND).await;
    assert_eq!(liveness(&health), Status::Fail);
}

#[tokio::test(start_paused = true)]
async fn a_declared_wait_within_its_timeout_does_not_fail() {
    let health = started(BOUND);
    let heartbeat = health.heartbeat("outbox").unwrap();
    let start = Instant::now();
    let wait = heartbeat.waiting_on("broker", BOUND * 3);
    // Silent for 2.9 × the bound, inside the wait.
    passes_until(
        &health,
        start + BOUND * 3 - PERIOD,
        "inside a declared wait",
    )
    .await;
    // An operator sees on what it waits; a public listener sees nothing while it passes.
    let at = start + Duration::from_secs(20);
    assert_eq!(
        reason(&health, Details::Admin, at),
        Some("waiting on broker for 20s (timeout 30s)".to_owned())
    );
    assert_eq!(reason(&health, Details::Public, at), None);
    // Ending the wait is a sign of life.
    drop(wait);
    let ended = Instant::now();
    passes_until(&health, ended + BOUND, "after the wait").await;
    assert_eq!(reason(&health, Details::Admin, Instant::now()), None);
}

#[tokio::test(start_paused = true)]
async fn a_wait_past_its_own_timeout_fails() {
    let health = started(BOUND);
    let heartbeat = health.heartbeat("outbox").unwrap();
    let start = Instant::now();
    // A worker that declared a 30 s wait and never came back (a future that never completes,
    // awaited without the timeout it promised).
    let stuck = tokio::spawn(async move {
        let _wait = heartbeat.waiting_on("broker", Duration::from_secs(30));
        pending::<()>().await;
    });
    passes_until(
        &health,
        start + Duration::from_secs(30) + MS,
        "within its timeout",
    )
    .await;
    sleep_until(start + Duration::from_secs(30) + PERIOD + MS).await;
    assert_eq!(liveness(&health), Status::Fail);
    let at = start + Duration::from_secs(45);
    assert_eq!(
        reason(&health, Details::Admin, at),
        Some(
            "worker silent for 45s (bound 10s): waiting on broker for 45s, past its timeout (30s)"
                .to_owned()
        )
    );
    assert_eq!(
        reason(&health, Details::Public, at),
        Some("stalled".to_owned())
    );
    stuck.abort();
}

/// A broker that is down until `up_at`: receiving hangs (a connection that never answers).
#[derive(Clone)]
struct Broker {
    up_at: Instant,
    delivered: Arc<AtomicUsize>,
}

impl Broker {
    async fn receive(&self) -> u64 {
        if Instant::now() < self.up_at {
            pending::<()>().await;
        }
        sleep(Duration::from_millis(200)).await;
        self.delivered.fetch_add(1, Ordering::Relaxed) as u64
    }
}

#[tokio::test(start_paused = true)]
async fn a_broker_outage_of_ten_bounds_with_bounded_retries_restarts_nothing() {
    let start = Instant::now();
    let outage = BOUND * 10;
    let broker = Broker {
        up_at: start + outage,
        delivered: Arc::new(AtomicUsize::new(0)),
    };
    let health = Health::builder()
        .heartbeat("outbox", BOUND)
        // The broker's own health is readiness' business: a hard check drains the instance.
        .check(
            CheckSpec::new("broker", Tier::Hard, {
                let broker = broker.clone();
                move || {
                    let up = Instant::now() >= broker.up_at;
                    async move {
                        if up {
                            Ok(Detail::new())
                        } else {
                            Err(CheckError::new("connection timed out"))
                        }
                    }
                }
            })
            .dependency("rabbitmq")
            .interval(Duration::from_secs(2))
            .timeout(Duration::from_secs(1)),
        )
        .build()
        .unwrap();
    health.start().unwrap();
    let heartbeat = health.heartbeat("outbox").unwrap();
    let timeouts = Arc::new(AtomicUsize::new(0));
    let worker = tokio::spawn({
        let (broker, timeouts) = (broker.clone(), timeouts.clone());
        async move {
            loop {
                // Each wait is bounded (25 s, longer than the 10 s bound), then retried.
                match heartbeat
                    .wait_on("broker", Duration::from_secs(25), broker.receive())
                    .await
                {
                    Ok(_message) => heartbeat.beat(),
                    Err(timed_out) => {
                        assert_eq!(timed_out.dependency, "broker");
                        timeouts.fetch_add(1, Ordering::Relaxed);
                        sleep(Duration::from_secs(1)).await; // back off
                    }
                }
            }
        }
    });

    let mut readiness_failed = false;
    while Instant::now() < start + outage {
        assert_eq!(
            liveness(&health),
            Status::Pass,
            "liveness failed {:?} into the broker outage",
            Instant::now() - start
        );
        readiness_failed |= status(&health, ProbeKind::Readiness) == Status::Fail;
        sleep(Duration::from_millis(250)).await;
    }
    // The outage was real: the worker's waits timed out, and readiness drained the instance
    // for the broker check, not for liveness.
    assert!(timeouts.load(Ordering::Relaxed) >= 3);
    assert!(readiness_failed);
    let snapshot = health.snapshot();
    let mid_outage = snapshot.verdict(ProbeKind::Readiness, Instant::now(), &[]);
    assert!(!mid_outage.failing.contains(&"liveness".to_owned()));
    drop(snapshot);

    // The broker returns; messages flow; liveness never failed.
    passes_until(&health, start + outage + BOUND * 3, "after the outage").await;
    assert!(broker.delivered.load(Ordering::Relaxed) > 10);
    assert_eq!(status(&health, ProbeKind::Readiness), Status::Pass);
    worker.abort();
}

#[tokio::test(start_paused = true)]
async fn liveness_recovers_when_beats_resume() {
    let health = started(BOUND);
    let heartbeat = health.heartbeat("outbox").unwrap();
    sleep(BOUND + PERIOD * 2).await;
    assert_eq!(liveness(&health), Status::Fail);
    assert_eq!(status(&health, ProbeKind::Readiness), Status::Fail);

    heartbeat.beat();
    sleep(PERIOD + MS).await;
    assert_eq!(liveness(&health), Status::Pass);
    assert_eq!(status(&health, ProbeKind::Readiness), Status::Pass);
    assert_eq!(reason(&health, Details::Admin, Instant::now()), None);
}

#[tokio::test(start_paused = true)]
async fn a_restarted_watcher_clears_a_failure_the_worker_recovered_from() {
    let health = started(BOUND);
    let heartbeat = health.heartbeat("outbox").unwrap();
    sleep(BOUND + PERIOD * 2).await;
    assert_eq!(liveness(&health), Status::Fail);
    health.stop();
    heartbeat.beat();
    health.start().unwrap();
    sleep(PERIOD).await;
    assert_eq!(liveness(&health), Status::Pass);
}

#[test]
fn a_declared_wait_can_be_held_across_await_points_of_a_spawned_task() {
    fn spawnable<T: Send + 'static>(_: &T) {}
    let health = Health::builder()
        .heartbeat("outbox", BOUND)
        .build()
        .unwrap();
    let heartbeat = health.heartbeat("outbox").unwrap();
    let worker = async move {
        let _wait = heartbeat.waiting_on("broker", BOUND);
        sleep(PERIOD).await;
        heartbeat
            .wait_on("broker", BOUND, async { sleep(PERIOD).await })
            .await
    };
    spawnable(&worker);
}

#[tokio::test(start_paused = true)]
async fn a_worker_stopped_for_the_drain_does_not_fail_liveness() {
    let health = started(BOUND);
    let _heartbeat = health.heartbeat("outbox").unwrap();
    health.shutdown();
    sleep(BOUND * 3).await;
    assert_eq!(liveness(&health), Status::Pass);
}

#[tokio::test(start_paused = true)]
async fn the_contract_lists_the_heartbeat_with_its_bound() {
    let health = Health::builder()
        .runtime_watchdog(Duration::from_secs(5))
        .heartbeat("outbox", Duration::from_secs(30))
        .build()
        .unwrap();
    let contract = health.contract();
    let outbox = contract
        .liveness
        .iter()
        .find(|condition| condition.name == "outbox")
        .expect("the heartbeat is a liveness condition");
    assert_eq!(outbox.kind, LivenessKind::Heartbeat);
    assert_eq!(outbox.threshold_ms, Some(30_000));
    let endpoint = contract
        .endpoints
        .iter()
        .find(|endpoint| endpoint.probe == ProbeKind::Liveness)
        .unwrap();
    assert!(endpoint.checks.contains(&"outbox".to_owned()));
    // A heartbeat is internal: liveness still touches no dependency.
    assert!(!endpoint.checks_dependencies);
    assert!(endpoint.waits_on.is_empty());
}

#[tokio::test(start_paused = true)]
async fn public_and_admin_answers_word_a_silent_heartbeat_by_the_details_policy() {
    let bound = Duration::from_secs(30);
    let health = started(bound);
    let _heartbeat = health.heartbeat("outbox").unwrap();
    let taken = Instant::now();
    sleep(bound + Duration::from_secs(2)).await;
    let at = taken + Duration::from_secs(31);

    let (code, public) = answer(&health, ProbeKind::Liveness, Details::Public, at);
    assert_eq!(code, 503);
    assert!(public.contains("[-]outbox failed: stalled\n"), "{public}");
    let (_, admin) = answer(&health, ProbeKind::Liveness, Details::Admin, at);
    assert!(
        admin.contains("[-]outbox failed: worker silent for 31s (bound 30s)\n"),
        "{admin}"
    );
    // The readiness gate names the heartbeat, by the same policy.
    let (code, public) = answer(&health, ProbeKind::Readiness, Details::Public, at);
    assert_eq!(code, 503);
    assert!(
        public.contains("[-]liveness failed: outbox: stalled\n"),
        "{public}"
    );
    let (_, admin) = answer(&health, ProbeKind::Readiness, Details::Admin, at);
    assert!(
        admin.contains("[-]liveness failed: outbox: worker silent for 31s (bound 30s)\n"),
        "{admin}"
    );
}

#[test]
fn heartbeat_names_and_bounds_are_validated() {
    let zero = Health::builder()
        .heartbeat("outbox", Duration::ZERO)
        .build()
        .unwrap_err();
    assert_eq!(
        zero,
        BuildError::ZeroMaxSilence {
            heartbeat: "outbox".into()
        }
    );
    assert_eq!(zero.field(), "max_silence");

    let duplicate = Health::builder()
        .check(CheckSpec::new("outbox", Tier::Hard, || async {
            Ok(Detail::new())
        }))
        .heartbeat("outbox", BOUND)
        .build()
        .unwrap_err();
    assert!(matches!(duplicate, BuildError::DuplicateName { .. }));

    for name in ["", "Outbox", "marked_broken", "liveness"] {
        let invalid = Health::builder()
            .heartbeat(name, BOUND)
            .build()
            .unwrap_err();
        assert!(
            matches!(invalid, BuildError::InvalidName { .. }),
            "{name}: {invalid}"
        );
    }

    let health = Health::builder()
        .heartbeat("outbox", BOUND)
        .build()
        .unwrap();
    let unknown = health.heartbeat("relay").unwrap_err();
    assert_eq!(
        unknown.to_string(),
        "unknown heartbeat `relay` (declared: outbox)"
    );
}
