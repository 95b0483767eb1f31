//! Each check's history as the store keeps it: every poll and every transition recorded where
//! results are published, bounded however long the service runs, on the paused clock.

mod support;

use probity::{CheckSpec, FailureKind, HISTORY_LEN, Health, Tier};
use support::{Switch, advance, secs};

fn db(switch: &Switch) -> CheckSpec {
    CheckSpec::new("db", Tier::Hard, switch.check())
        .interval(secs(1.0))
        .timeout(secs(0.5))
        .jitter(secs(0.0))
        .rise(1)
}

#[tokio::test(start_paused = true)]
async fn polls_and_transitions_are_recorded_in_order() {
    let switch = Switch::new(true);
    let health = Health::builder().check(db(&switch)).build().unwrap();
    health.start().unwrap();
    advance(secs(0.5)).await; // t=0: first success, healthy
    switch.set(false);
    advance(secs(1.0)).await; // t=1: fails
    switch.set(true);
    advance(secs(1.0)).await; // t=2: healthy again (rise 1)

    let snapshot = health.snapshot();
    let history = snapshot.check("db").unwrap().history();
    let polls: Vec<bool> = history.polls().map(|poll| poll.ok()).collect();
    assert_eq!(polls, [true, false, true]);
    let sides: Vec<(&str, &str)> = history
        .transitions()
        .map(|transition| (transition.from(), transition.to()))
        .collect();
    assert_eq!(
        sides,
        [
            ("unhealthy", "healthy"),
            ("healthy", "unhealthy"),
            ("unhealthy", "healthy")
        ]
    );
    let fall = history.transitions().nth(1).unwrap();
    assert_eq!(fall.class(), Some(FailureKind::of_message("down")));
    assert!(!fall.passive());
    assert!(
        history
            .transitions()
            .zip(history.transitions().skip(1))
            .all(|(earlier, later)| earlier.at() <= later.at())
    );
}

#[tokio::test(start_paused = true)]
async fn a_long_flapping_run_keeps_only_the_latest() {
    let switch = Switch::new(true);
    let health = Health::builder().check(db(&switch)).build().unwrap();
    health.start().unwrap();
    advance(secs(0.5)).await;
    for poll in 0..500 {
        switch.set(poll % 2 == 1);
        advance(secs(1.0)).await;
    }
    let snapshot = health.snapshot();
    let history = snapshot.check("db").unwrap().history();
    assert_eq!(history.polls_total(), switch.polls() as u64);
    assert_eq!(history.transitions_total(), 501, "every poll flips it");
    assert_eq!(history.polls().len(), HISTORY_LEN);
    assert_eq!(history.transitions().len(), HISTORY_LEN);
    // The newest is the last poll: poll 499 set the switch up.
    let newest = history.transitions().next_back().unwrap();
    assert!(newest.became_healthy());
    assert!(history.polls().next_back().unwrap().ok());
}

#[tokio::test(start_paused = true)]
async fn a_passive_fall_is_marked_and_is_not_a_poll() {
    let switch = Switch::new(true);
    let health = Health::builder()
        .check(db(&switch).interval(secs(60.0)).passive_failures(1))
        .build()
        .unwrap();
    health.start().unwrap();
    advance(secs(0.5)).await;
    health.report("db", Err("pool timed out after 2s")).unwrap();
    let snapshot = health.snapshot();
    let history = snapshot.check("db").unwrap().history();
    let fall = history.transitions().next_back().unwrap();
    assert!(fall.passive());
    assert_eq!(fall.to(), "unhealthy");
    assert_eq!(
        fall.class(),
        Some(FailureKind::of_message("pool timed out after 2s"))
    );
    assert_eq!(history.polls_total(), 1, "a report is not a poll");
}

#[tokio::test(start_paused = true)]
async fn a_startup_step_keeps_when_it_completed() {
    let health = Health::builder()
        .startup_step("migrations")
        .build()
        .unwrap();
    health.start().unwrap();
    let before = std::time::SystemTime::now();
    let snapshot = health.snapshot();
    let step = &snapshot.steps()[0];
    assert!(step.registered_at() <= before);
    assert_eq!(step.completed_at(), None);
    health.complete_step("migrations").unwrap();
    let snapshot = health.snapshot();
    let step = &snapshot.steps()[0];
    let completed = step.completed_at().expect("completion time kept");
    assert!(completed >= before && completed >= step.registered_at());
    // Completing it again keeps the first time.
    health.complete_step("migrations").unwrap();
    assert_eq!(health.snapshot().steps()[0].completed_at(), Some(completed));
}
