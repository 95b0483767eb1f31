//! Startup gating and the shutdown sequence, on the paused clock.

mod support;

use probity::{CheckSpec, Details, Health, ProbeKind, Status, Tier};
use std::time::Duration;
use support::{Switch, advance, secs};
use tokio::time::Instant;

fn status(health: &Health, probe: ProbeKind) -> Status {
    health.snapshot().status(probe, Instant::now())
}

fn pending(health: &Health) -> Vec<String> {
    health
        .snapshot()
        .steps()
        .iter()
        .filter(|step| !step.is_complete())
        .map(|step| step.name().to_owned())
        .collect()
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
    assert_eq!(pending(&health), vec!["migrations", "warmup"]);

    let snapshot = health.snapshot();
    let verdict = snapshot.verdict(ProbeKind::Readiness, Instant::now(), &[]);
    assert_eq!(verdict.failing, vec!["startup"]);
    let entries = snapshot.entries(ProbeKind::Readiness, Instant::now(), &[]);
    assert_eq!(
        entries[0]
            .reason(Details::Public, Instant::now())
            .as_deref(),
        Some("pending: migrations, warmup")
    );

    health
        .step_progress("migrations", "database unreachable: retry 2 in 1.6s")
        .unwrap();
    let snapshot = health.snapshot();
    let entries = snapshot.entries(ProbeKind::Startup, Instant::now(), &[]);
    assert_eq!(
        entries[0].reason(Details::Admin, Instant::now()).as_deref(),
        Some("pending: database unreachable: retry 2 in 1.6s")
    );
    // The note can name hosts: a public listener says only that the step is pending.
    assert_eq!(
        entries[0]
            .reason(Details::Public, Instant::now())
            .as_deref(),
        Some("pending")
    );

    health.complete_step("migrations").unwrap();
    assert_eq!(status(&health, ProbeKind::Startup), Status::Fail);
    assert_eq!(pending(&health), vec!["warmup"]);
    health.complete_step("warmup").unwrap();
    assert!(health.snapshot().is_started());
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
            health.view().drained().await;
            Instant::now()
        })
    };
    let triggered_at = Instant::now();
    health.shutdown();
    // Readiness fails before anything else happens, with no time passing.
    assert!(health.view().is_shutting_down());
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
    health.view().drained().await;
    assert_eq!(Instant::now() - before, secs(2.0));
}

#[test]
fn the_drain_delay_is_derived_from_the_readiness_probe_unless_set() {
    let derived = Health::builder()
        .readiness_probe(Duration::from_secs(5), 2)
        .load_balancer_reaction(Duration::from_secs(2))
        .build()
        .unwrap();
    assert_eq!(derived.view().drain_delay(), Duration::from_secs(12));
    let contract = derived.contract();
    assert_eq!(contract.shutdown.drain_delay_ms, 12_000);
    let derivation = contract.shutdown.drain_delay_derivation.unwrap();
    assert_eq!(
        (
            derivation.readiness_period_ms,
            derivation.readiness_failure_threshold,
            derivation.load_balancer_reaction_ms
        ),
        (5_000, 2, 2_000)
    );

    // The load balancer's reaction defaults to 2 s.
    let defaulted = Health::builder()
        .readiness_probe(Duration::from_secs(10), 3)
        .build()
        .unwrap();
    assert_eq!(defaulted.view().drain_delay(), Duration::from_secs(32));

    let by_hand = Health::builder()
        .readiness_probe(Duration::from_secs(5), 2)
        .drain_delay(Duration::from_secs(20))
        .build()
        .unwrap();
    assert_eq!(by_hand.view().drain_delay(), Duration::from_secs(20));
    assert_eq!(by_hand.contract().shutdown.drain_delay_derivation, None);

    let error = Health::builder()
        .readiness_probe(Duration::from_secs(5), 0)
        .build()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "readiness probe: failure_threshold must be greater than zero"
    );
}

/// The restart storm's lesson: a boot step that waits on the database gates readiness only.
/// During a database outage a new pod's startup probe passes (the kubelet lets it live) while
/// readiness fails naming why; when the database returns, the step completes and the pod joins.
#[tokio::test(start_paused = true)]
async fn a_step_that_waits_on_a_dependency_gates_readiness_never_startup() {
    let db = Switch::new(false);
    let health = Health::builder()
        .check(CheckSpec::new("db", Tier::Hard, db.check()).interval(secs(1.0)))
        .dependency_step("database", "postgres")
        .startup_step("warmup")
        .build()
        .unwrap();
    health.start().unwrap();
    health.complete_step("warmup").unwrap();
    health
        .step_progress(
            "database",
            "postgres db.internal:5432 unreachable: connection refused",
        )
        .unwrap();
    // Minutes into the outage: startup passes, readiness fails, liveness passes.
    for _ in 0..120 {
        advance(secs(1.0)).await;
        assert_eq!(status(&health, ProbeKind::Startup), Status::Pass);
        assert_eq!(status(&health, ProbeKind::Readiness), Status::Fail);
        assert_eq!(status(&health, ProbeKind::Liveness), Status::Pass);
    }
    let snapshot = health.snapshot();
    assert!(snapshot.is_booted() && !snapshot.is_started());
    let startup = snapshot.entries(ProbeKind::Startup, Instant::now(), &[]);
    assert_eq!(
        startup.iter().map(|entry| entry.name).collect::<Vec<_>>(),
        ["warmup"],
        "the startup probe lists the internal steps only"
    );
    // Readiness names the step and what it waits on; the note (which names the host) only on
    // an admin listener.
    let readiness = snapshot.entries(ProbeKind::Readiness, Instant::now(), &[]);
    let gate = readiness
        .iter()
        .find(|entry| entry.name == "startup")
        .unwrap();
    assert_eq!(gate.status, Status::Pass, "the internal boot is done");
    let step = readiness
        .iter()
        .find(|entry| entry.name == "database")
        .unwrap();
    assert_eq!(step.status, Status::Fail);
    assert_eq!(
        step.reason(Details::Public, Instant::now()).as_deref(),
        Some("pending: waits on postgres")
    );
    assert_eq!(
        step.reason(Details::Admin, Instant::now()).as_deref(),
        Some("pending: postgres db.internal:5432 unreachable: connection refused")
    );
    let verdict = snapshot.verdict(ProbeKind::Readiness, Instant::now(), &[]);
    assert_eq!(verdict.failing, ["database", "db"]);
    let contract = health.contract();
    let startup = contract.endpoint(ProbeKind::Startup).unwrap();
    assert!(startup.waits_on.is_empty() && !startup.checks_dependencies);
    assert_eq!(startup.checks, ["warmup"]);
    let readiness = contract.endpoint(ProbeKind::Readiness).unwrap();
    assert_eq!(readiness.waits_on, ["postgres"]);
    assert_eq!(readiness.checks, ["db", "database"]);

    // The database returns: the boot connects, the step completes, readiness follows.
    db.set(true);
    health.complete_step("database").unwrap();
    advance(secs(0.1)).await;
    assert_eq!(status(&health, ProbeKind::Readiness), Status::Pass);
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
    let broken = entries.iter().find(|e| e.name == "marked_broken").unwrap();
    assert_eq!(
        broken.reason(Details::Admin, Instant::now()).as_deref(),
        Some("leader lease lost and cannot be re-acquired")
    );
    assert_eq!(
        broken.reason(Details::Public, Instant::now()).as_deref(),
        Some("declared broken")
    );
    advance(secs(60.0)).await;
    assert_eq!(status(&health, ProbeKind::Liveness), Status::Fail);
}

#[tokio::test(start_paused = true)]
async fn a_dependency_outage_never_touches_liveness() {
    // The database-in-liveness incident and the restart storm: the database is down; liveness
    // must pass.
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
