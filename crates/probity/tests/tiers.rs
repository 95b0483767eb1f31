//! Tiers: hard fails, soft degrades, info reports; a hard check may fail open for a window.

mod support;

use probity::{CheckSpec, Health, ProbeKind, Status, Tier};
use support::{Switch, advance, secs};
use tokio::time::Instant;

fn spec(name: &str, tier: Tier, switch: &Switch) -> CheckSpec {
    CheckSpec::new(name, tier, switch.check())
        .interval(secs(1.0))
        .timeout(secs(0.5))
        .jitter(secs(0.0))
}

#[tokio::test(start_paused = true)]
async fn each_tier_affects_readiness_as_documented() {
    let (db, cache, telemetry) = (Switch::new(true), Switch::new(true), Switch::new(true));
    let health = Health::builder()
        .check(spec("db", Tier::Hard, &db))
        .check(spec("cache", Tier::Soft, &cache))
        .check(spec("telemetry", Tier::Info, &telemetry))
        .build()
        .unwrap();
    health.start().unwrap();
    advance(secs(0.5)).await;
    let verdict = |h: &Health| {
        h.snapshot()
            .verdict(ProbeKind::Readiness, Instant::now(), &[])
    };
    assert_eq!(verdict(&health).status, Status::Pass);

    telemetry.set(false);
    advance(secs(1.0)).await;
    let v = verdict(&health);
    assert_eq!(v.status, Status::Pass, "info never changes the status");
    assert!(v.degraded.is_empty() && v.failing.is_empty());

    cache.set(false);
    advance(secs(1.0)).await;
    let v = verdict(&health);
    assert_eq!(
        (v.status, v.degraded.clone()),
        (Status::Warn, vec!["cache".to_owned()])
    );
    assert_eq!(v.status.http_code(), 200);

    db.set(false);
    advance(secs(1.0)).await;
    let v = verdict(&health);
    assert_eq!(v.status, Status::Fail);
    assert_eq!(v.failing, vec!["db"]);
    assert_eq!(v.degraded, vec!["cache"]);
    assert_eq!(v.status.http_code(), 503);
}

#[tokio::test(start_paused = true)]
async fn a_hard_check_fails_open_for_its_window_then_closed() {
    // An identity provider's key set (JWKS) out of reach: keep validating with cached keys for a
    // bounded time (docs/concepts.md, fail-open).
    let jwks = Switch::new(true);
    let health = Health::builder()
        .check(spec("jwks", Tier::Hard, &jwks).fail_open_for(secs(10.0)))
        .build()
        .unwrap();
    health.start().unwrap();
    advance(secs(0.5)).await;
    jwks.set(false);
    advance(secs(1.0)).await; // fell at t=1
    let status = |h: &Health| h.snapshot().status(ProbeKind::Readiness, Instant::now());
    assert_eq!(status(&health), Status::Warn);
    let snapshot = health.snapshot();
    let entry = snapshot
        .entry(ProbeKind::Readiness, "jwks", Instant::now())
        .unwrap();
    assert_eq!(
        entry
            .reason(probity::Details::Admin, Instant::now())
            .as_deref(),
        Some("down (failing open, 9.5s left)")
    );
    assert_eq!(
        entry
            .reason(probity::Details::Public, Instant::now())
            .as_deref(),
        Some("error (failing open, 9.5s left)")
    );
    advance(secs(9.0)).await; // t=10.5
    assert_eq!(status(&health), Status::Warn);
    advance(secs(1.0)).await; // t=11.5: window over
    assert_eq!(status(&health), Status::Fail);
}

#[tokio::test(start_paused = true)]
async fn a_hard_check_that_never_passed_does_not_fail_open() {
    let jwks = Switch::new(false);
    let health = Health::builder()
        .check(spec("jwks", Tier::Hard, &jwks).fail_open_for(secs(10.0)))
        .build()
        .unwrap();
    health.start().unwrap();
    advance(secs(0.5)).await;
    assert_eq!(
        health
            .snapshot()
            .status(ProbeKind::Readiness, Instant::now()),
        Status::Fail,
        "no cached keys at boot: fail closed"
    );
}

#[tokio::test(start_paused = true)]
async fn excluded_entries_do_not_count() {
    let db = Switch::new(false);
    let health = Health::builder()
        .check(spec("db", Tier::Hard, &db))
        .build()
        .unwrap();
    health.start().unwrap();
    advance(secs(0.5)).await;
    let snapshot = health.snapshot();
    assert_eq!(
        snapshot
            .verdict(ProbeKind::Readiness, Instant::now(), &["db"])
            .status,
        Status::Pass
    );
}
