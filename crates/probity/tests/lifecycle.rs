//! Startup gating and the shutdown sequence, on the paused clock.

mod support;

use probity::shutdown::drain_delay_for;
use probity::{CheckSpec, Health, ProbeKind, Status, Tier};
use std::time::Duration;
use support::{Switch, advance, secs};
use tokio::time::Instant;

fn status(health: &Health, probe: ProbeKind) -> Status {
    health.snapshot().status(probe, Instant::now())
}

#[tokio::test(start_paused = true)]
async fn startup_and_readiness_fail_naming_pending_steps_until_all_complete() {
    let switch = Switch::new(true);
    let health = Health::builder()
        .check(CheckSpec::new("db", Tier::Hard, switch.check()))
        .startup_step("migrations")
        .startup_step("warmup")
        .build()
        .unwrap();
    health.start().unwrap();
    advance(secs(0.1)).await;
    assert_eq!(status(&health, ProbeKind::Startup), Status::Fail);
    assert_eq!(status(&health, ProbeKind::Readiness), Status::Fail);
    assert_eq!(status(&health, ProbeKind::Liveness), Status::Pass);
    assert_eq!(health.pending_steps(), vec!["migrations", "warmup"]);

    let snapshot = health.snapshot();
    let verdict = snapshot.verdict(ProbeKind::Readiness, Instant::now(), &[]);
    assert_eq!(verdict.failing, vec!["startup"]);
    let entries = snapshot.entries(ProbeKind::Readiness, Instant::now(), &[]);
    assert_eq!(
        entries[0].reason.as_deref(),
        Some("pending: migrations, warmup")
    );

    health
        .step_progress("migrations", "database unreachable: retry 2 in 1.6s")
        .unwrap();
    let snapshot = health.snapshot();
    let entries = snapshot.entries(ProbeKind::Startup, Instant::now(), &[]);
    assert_eq!(
        entries[0].reason.as_deref(),
        Some("pending: database unreachable: retry 2 in 1.6s")
    );

    health.complete_step("migrations").unwrap();
    assert_eq!(status(&health, ProbeKind::Startup), Status::Fail);
    assert_eq!(health.pending_steps(), vec!["warmup"]);
    health.complete_step("warmup").unwrap();
    assert!(health.is_started());
    assert_eq!(status(&health, ProbeKind::Startup), Status::Pass);
    assert_eq!(status(&health, ProbeKind::Readiness), Status::Pass);
}

#[tokio::test(start_paused = true)]
async fn completing_startup_repolls_the_checks_that_failed_during_boot() {
    // The database answers only once the boot has connected to it: the first poll fails.
    let db = Switch::new(false);
    let cache = Switch::new(true);
    let health = Health::builder()
        .check(CheckSpec::new("db", Tier::Hard, db.check()).interval(secs(20.0)))
        .check(CheckSpec::new("cache", Tier::Soft, cache.check()).interval(secs(20.0)))
        .startup_step("connect")
        .build()
        .unwrap();
    health.start().unwrap();
    advance(secs(0.1)).await;
    assert_eq!((db.polls(), cache.polls()), (1, 1));

    db.set(true);
    advance(secs(1.0)).await;
    assert_eq!(
        db.polls(),
        1,
        "no early poll while the boot is still running"
    );
    health.complete_step("connect").unwrap();
    advance(secs(0.01)).await;
    assert_eq!(db.polls(), 2, "the failed check is polled again at once");
    assert_eq!(cache.polls(), 1, "a healthy check keeps its cadence");
    assert_eq!(status(&health, ProbeKind::Readiness), Status::Pass);

    // Completing a step again is not a second start.
    health.complete_step("connect").unwrap();
    advance(secs(0.01)).await;
    assert_eq!(db.polls(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_boot_faster_than_the_first_poll_repolls_only_what_failed() {
    let db = Switch::new(true);
    let cache = Switch::new(false);
    let health = Health::builder()
        .check(CheckSpec::new("db", Tier::Hard, db.check()).interval(secs(20.0)))
        .check(CheckSpec::new("cache", Tier::Soft, cache.check()).interval(secs(20.0)))
        .startup_step("connect")
        .build()
        .unwrap();
    health.start().unwrap();
    // Startup completes before either first poll has run.
    health.complete_step("connect").unwrap();
    advance(secs(0.1)).await;
    assert_eq!(
        db.polls(),
        1,
        "its first poll made it healthy: no second poll"
    );
    assert_eq!(cache.polls(), 2, "its first poll failed: polled again");
    advance(secs(10.0)).await;
    assert_eq!(
        (db.polls(), cache.polls()),
        (1, 2),
        "then both keep their cadence"
    );
}

#[tokio::test(start_paused = true)]
async fn unknown_steps_are_errors() {
    let health = Health::builder()
        .startup_step("migrations")
        .build()
        .unwrap();
    assert_eq!(
        health.complete_step("migration").unwrap_err().to_string(),
        "unknown startup step `migration` (declared: migrations)"
    );
    assert!(health.step_progress("nope", "x").is_err());
}

#[tokio::test(start_paused = true)]
async fn shutdown_fails_readiness_at_once_and_leaves_liveness_alone() {
    let switch = Switch::new(true);
    let health = Health::builder()
        .check(CheckSpec::new("db", Tier::Hard, switch.check()))
        .drain_delay(secs(12.0))
        .build()
        .unwrap();
    health.start().unwrap();
    advance(secs(0.1)).await;
    assert_eq!(status(&health, ProbeKind::Readiness), Status::Pass);

    let drained = {
        let health = health.clone();
        tokio::spawn(async move {
            health.drained().await;
            Instant::now()
        })
    };
    let triggered_at = Instant::now();
    health.shutdown();
    // Readiness fails before anything else happens, with no time passing.
    assert!(health.is_shutting_down());
    assert_eq!(status(&health, ProbeKind::Readiness), Status::Fail);
    assert_eq!(status(&health, ProbeKind::Liveness), Status::Pass);
    let snapshot = health.snapshot();
    assert_eq!(
        snapshot
            .verdict(ProbeKind::Readiness, Instant::now(), &[])
            .failing,
        vec!["shutdown"]
    );

    // The stop signal comes exactly one drain delay later, and liveness never failed.
    let mut liveness_failed = false;
    for _ in 0..11 {
        advance(secs(1.0)).await;
        assert!(
            !drained.is_finished(),
            "stopped accepting before the drain delay"
        );
        liveness_failed |= status(&health, ProbeKind::Liveness) != Status::Pass;
        assert_eq!(status(&health, ProbeKind::Readiness), Status::Fail);
    }
    let stopped_at = drained.await.unwrap();
    assert_eq!(stopped_at - triggered_at, secs(12.0));
    assert!(!liveness_failed);
    health.shutdown(); // idempotent
    assert_eq!(health.snapshot().shutting_down_since(), Some(triggered_at));
}

#[tokio::test(start_paused = true)]
async fn drained_resolves_even_when_awaited_after_the_trigger() {
    let health = Health::builder().drain_delay(secs(5.0)).build().unwrap();
    health.shutdown();
    advance(secs(3.0)).await;
    let before = Instant::now();
    health.drained().await;
    assert_eq!(Instant::now() - before, secs(2.0));
}

#[test]
fn drain_delay_is_period_times_threshold_plus_reaction() {
    assert_eq!(
        drain_delay_for(Duration::from_secs(5), 2, Duration::from_secs(2)),
        Duration::from_secs(12)
    );
    assert_eq!(
        drain_delay_for(Duration::from_secs(1), 0, Duration::ZERO),
        Duration::from_secs(1),
        "a threshold of 0 is Kubernetes' default-to-1"
    );
}

#[tokio::test(start_paused = true)]
async fn mark_broken_fails_liveness_and_readiness_for_good() {
    let switch = Switch::new(true);
    let health = Health::builder()
        .check(CheckSpec::new("db", Tier::Hard, switch.check()))
        .build()
        .unwrap();
    health.start().unwrap();
    advance(secs(0.1)).await;
    health.mark_broken("leader lease lost and cannot be re-acquired");
    health.mark_broken("second reason is ignored");
    assert_eq!(status(&health, ProbeKind::Liveness), Status::Fail);
    assert_eq!(status(&health, ProbeKind::Readiness), Status::Fail);
    let snapshot = health.snapshot();
    let entries = snapshot.entries(ProbeKind::Liveness, Instant::now(), &[]);
    let broken = entries.iter().find(|e| e.name == "app_state").unwrap();
    assert_eq!(
        broken.reason.as_deref(),
        Some("leader lease lost and cannot be re-acquired")
    );
    advance(secs(60.0)).await;
    assert_eq!(status(&health, ProbeKind::Liveness), Status::Fail);
}

#[tokio::test(start_paused = true)]
async fn a_dependency_outage_never_touches_liveness() {
    // Seed 000's second incident, seed 004: the database is down; liveness must pass.
    let switch = Switch::new(false);
    let health = Health::builder()
        .check(CheckSpec::new("db", Tier::Hard, switch.check()))
        .build()
        .unwrap();
    health.start().unwrap();
    for _ in 0..40 {
        advance(secs(1.0)).await;
        assert_eq!(status(&health, ProbeKind::Readiness), Status::Fail);
        assert_eq!(status(&health, ProbeKind::Liveness), Status::Pass);
    }
}
