//! Hysteresis as the pollers apply it: fall fast, rise slow, on the paused clock.

mod support;

use probity::{CheckSpec, Health, ProbeKind, Status, Tier};
use support::{Switch, advance, secs};
use tokio::time::Instant;

fn readiness(health: &Health) -> Status {
    health
        .snapshot()
        .status(ProbeKind::Readiness, Instant::now())
}

fn db(switch: &Switch) -> CheckSpec {
    CheckSpec::new("db", Tier::Hard, switch.check())
        .interval(secs(1.0))
        .timeout(secs(0.5))
        .jitter(secs(0.0))
}

#[tokio::test(start_paused = true)]
async fn starts_failing_and_turns_ready_on_first_success() {
    let switch = Switch::new(true);
    let health = Health::builder().check(db(&switch)).build().unwrap();
    assert_eq!(readiness(&health), Status::Fail, "no result yet");
    health.start().unwrap();
    advance(secs(0.1)).await;
    assert_eq!(switch.polls(), 1, "first poll runs at once");
    assert_eq!(readiness(&health), Status::Pass);
}

#[tokio::test(start_paused = true)]
async fn falls_on_one_failure_and_rises_after_three_successes() {
    let switch = Switch::new(true);
    let health = Health::builder().check(db(&switch)).build().unwrap();
    health.start().unwrap();
    advance(secs(0.5)).await; // t=0.5: polled at 0, healthy
    assert_eq!(readiness(&health), Status::Pass);

    switch.set(false);
    advance(secs(1.0)).await; // t=1.5: poll at 1 failed
    assert_eq!(readiness(&health), Status::Fail, "one failure is enough");
    let snapshot = health.snapshot();
    let check = snapshot.check("db").unwrap();
    assert_eq!(check.consecutive_failures(), 1);
    assert_eq!(check.last().unwrap().message.as_deref(), Some("down"));

    switch.set(true);
    advance(secs(1.0)).await; // t=2.5: one success
    assert_eq!(readiness(&health), Status::Fail);
    advance(secs(1.0)).await; // t=3.5: two
    assert_eq!(readiness(&health), Status::Fail);
    assert_eq!(
        health
            .snapshot()
            .check("db")
            .unwrap()
            .consecutive_successes(),
        2
    );
    advance(secs(1.0)).await; // t=4.5: three → healthy
    assert_eq!(readiness(&health), Status::Pass);
    assert_eq!(switch.polls(), 5);
}

#[tokio::test(start_paused = true)]
async fn a_flapping_dependency_keeps_the_instance_out() {
    // The flapping incident: up and down every poll; with rise 3 the instance stays out instead of
    // rejoining and leaving rotation with each flap.
    let switch = Switch::new(true);
    let health = Health::builder().check(db(&switch)).build().unwrap();
    health.start().unwrap();
    advance(secs(0.5)).await;
    let mut ready_samples = 0;
    for poll in 0..20 {
        switch.set(poll % 2 == 1);
        advance(secs(1.0)).await;
        if readiness(&health) == Status::Pass {
            ready_samples += 1;
        }
    }
    assert_eq!(ready_samples, 0);
}

#[tokio::test(start_paused = true)]
async fn boot_can_require_the_full_rise_count() {
    let switch = Switch::new(true);
    let health = Health::builder()
        .check(db(&switch).boot_requires_rise(true))
        .build()
        .unwrap();
    health.start().unwrap();
    advance(secs(0.5)).await;
    assert_eq!(readiness(&health), Status::Fail);
    advance(secs(1.0)).await;
    assert_eq!(readiness(&health), Status::Fail);
    advance(secs(1.0)).await; // third success at t=2
    assert_eq!(readiness(&health), Status::Pass);
}

#[tokio::test(start_paused = true)]
async fn fall_threshold_tolerates_single_blips() {
    let switch = Switch::new(true);
    let health = Health::builder()
        .check(db(&switch).fall(2))
        .build()
        .unwrap();
    health.start().unwrap();
    advance(secs(0.5)).await;
    switch.set(false);
    advance(secs(1.0)).await;
    assert_eq!(readiness(&health), Status::Pass, "one failure of two");
    advance(secs(1.0)).await;
    assert_eq!(readiness(&health), Status::Fail);
}

#[tokio::test(start_paused = true)]
async fn transitions_are_timestamped() {
    let switch = Switch::new(true);
    let health = Health::builder().check(db(&switch)).build().unwrap();
    let started = Instant::now();
    health.start().unwrap();
    advance(secs(0.5)).await;
    switch.set(false);
    advance(secs(1.0)).await;
    let snapshot = health.snapshot();
    let check = snapshot.check("db").unwrap();
    assert_eq!(check.last_transition(), Some(started + secs(1.0)));
    assert_eq!(check.last_success(), Some(started));
}
