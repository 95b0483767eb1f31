//! Busy is not broken: a passing poll that warns keeps the instance in rotation, checks that
//! cross a network suggest their own fall threshold, and a check can read its poll's deadline.

mod support;

use probity::render::{Clock, Details, Format, Query, Request, render};
use probity::{Check, CheckError, CheckFuture, CheckSpec, Detail, Health, ProbeKind, Status, Tier};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use support::{Switch, advance, secs};
use tokio::time::Instant;

fn readyz(health: &Health, check: Option<&str>) -> probity::render::Response {
    let query = Query::default();
    let request = Request {
        probe: ProbeKind::Readiness,
        check,
        query: &query,
        format: Format::Text,
        details: Details::Admin,
    };
    render(&health.snapshot(), &request, Clock::now())
}

#[tokio::test(start_paused = true)]
async fn a_warning_keeps_a_hard_check_serving_and_names_why() {
    let busy = Arc::new(AtomicBool::new(true));
    let check = {
        let busy = busy.clone();
        move || {
            let busy = busy.load(Ordering::SeqCst);
            async move {
                let detail = Detail::new().measurement("connections", 5.0, None);
                Ok(if busy {
                    detail.warning("busy: 5 of 5 in use, 12 waiting")
                } else {
                    detail
                })
            }
        }
    };
    let health = Health::builder()
        .check(
            CheckSpec::new("db", Tier::Hard, check)
                .interval(secs(1.0))
                .timeout(secs(0.5)),
        )
        .build()
        .unwrap();
    health.start().unwrap();
    advance(secs(0.1)).await;

    let snapshot = health.snapshot();
    assert_eq!(
        snapshot.status(ProbeKind::Readiness, Instant::now()),
        Status::Warn
    );
    let verdict = snapshot.verdict(ProbeKind::Readiness, Instant::now(), &[]);
    // A busy pool is a warning, not a degraded dependency: nothing is failing.
    assert_eq!(verdict.warnings, vec!["db"]);
    assert!(verdict.degraded.is_empty());
    assert!(verdict.failing.is_empty());
    assert_eq!(verdict.qualifiers(), vec!["warning: db"]);
    let answer = readyz(&health, None);
    assert_eq!(answer.status, 200);
    assert_eq!(
        answer.body,
        "[!]db warning (hard): busy: 5 of 5 in use, 12 waiting\nreadyz check passed with warnings\n"
    );
    // Asked alone, a busy check still serves.
    assert_eq!(readyz(&health, Some("db")).status, 200);

    busy.store(false, Ordering::SeqCst);
    advance(secs(1.0)).await;
    assert_eq!(readyz(&health, None).body, "ok\n");
}

/// A check that suggests its own fall threshold, as the network checks do.
struct Network(Box<dyn Check>);

impl Network {
    fn new(switch: &Switch) -> Self {
        Self(Box::new(switch.check()))
    }
}

impl Check for Network {
    fn check(&self) -> CheckFuture<'_> {
        self.0.check()
    }

    fn default_fall(&self) -> Option<u32> {
        Some(2)
    }
}

#[tokio::test(start_paused = true)]
async fn one_slow_poll_does_not_drain_a_check_that_suggests_a_fall_of_two() {
    let switch = Switch::new(true);
    let health = Health::builder()
        .check(
            CheckSpec::new("db", Tier::Hard, Network::new(&switch))
                .interval(secs(1.0))
                .timeout(secs(0.5))
                .jitter(secs(0.0)),
        )
        .build()
        .unwrap();
    assert_eq!(health.contract().checks[0].fall, 2);
    health.start().unwrap();
    advance(secs(0.1)).await;
    let status = || {
        health
            .snapshot()
            .status(ProbeKind::Readiness, Instant::now())
    };
    assert_eq!(status(), Status::Pass);

    // One failed poll: absorbed.
    switch.set(false);
    advance(secs(1.0)).await;
    assert_eq!(status(), Status::Pass);
    switch.set(true);
    advance(secs(1.0)).await;
    assert_eq!(status(), Status::Pass);

    // A real outage: drained one interval after the first failed poll.
    switch.set(false);
    advance(secs(1.0)).await;
    assert_eq!(status(), Status::Pass);
    advance(secs(1.0)).await;
    assert_eq!(status(), Status::Fail);
}

#[tokio::test(start_paused = true)]
async fn the_spec_overrides_the_checks_suggested_fall() {
    let health = Health::builder()
        .check(CheckSpec::new("db", Tier::Hard, Network::new(&Switch::new(true))).fall(1))
        .check(CheckSpec::new(
            "plain",
            Tier::Hard,
            Switch::new(true).check(),
        ))
        .build()
        .unwrap();
    let contract = health.contract();
    assert_eq!(contract.checks[0].fall, 1);
    assert_eq!(contract.checks[1].fall, 1);
}

#[tokio::test(start_paused = true)]
async fn a_check_reads_the_deadline_of_its_poll() {
    let seen = Arc::new(parking_lot::Mutex::new(None));
    let check = {
        let seen = seen.clone();
        move || {
            let seen = seen.clone();
            async move {
                *seen.lock() = Some((Instant::now(), probity::poll_deadline()));
                Err(CheckError::new("recorded"))
            }
        }
    };
    let health = Health::builder()
        .check(
            CheckSpec::new("db", Tier::Hard, check)
                .interval(secs(2.0))
                .timeout(secs(0.8)),
        )
        .build()
        .unwrap();
    assert_eq!(
        probity::poll_deadline(),
        None,
        "outside a poll there is none"
    );
    health.start().unwrap();
    advance(secs(0.1)).await;
    let (started, deadline) = seen.lock().expect("polled");
    assert_eq!(deadline, Some(started + Duration::from_millis(800)));
}
