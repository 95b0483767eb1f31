use super::*;
use std::time::Duration;

fn capacity(in_use: u64, idle: u64, max: u64, waiting: Option<u64>) -> Capacity {
    Capacity {
        in_use,
        idle,
        max,
        waiting,
    }
}

#[test]
fn a_full_pool_with_waiters_is_busy_not_broken() {
    let detail = PoolPolicy::default().success(&capacity(5, 0, 5, Some(3)), None);
    assert_eq!(
        detail.warning.as_deref(),
        Some("busy: 5 of 5 in use, 3 waiting")
    );
    let waiting = detail.measurements.iter().find(|m| m.name == "waiting");
    assert_eq!(waiting.map(|m| m.value), Some(3.0));
}

#[test]
fn room_to_spare_passes_without_a_warning() {
    let detail = PoolPolicy::default().success(&capacity(2, 1, 5, Some(0)), None);
    assert_eq!(detail.warning, None);
    assert_eq!(
        detail.message.as_deref(),
        Some("2 of 5 in use, 1 idle, 3 available")
    );
}

#[test]
fn utilization_above_the_limit_warns_and_never_fails() {
    let policy = PoolPolicy::default().warn_above(80.0);
    assert_eq!(
        policy.success(&capacity(8, 2, 10, None), None).warning,
        None
    );
    let detail = policy.success(&capacity(9, 1, 10, None), None);
    assert_eq!(
        detail.warning.as_deref(),
        Some("busy: 9 of 10 in use (utilization 90% above 80%)")
    );
}

#[test]
fn an_acquisition_past_the_budget_fails_naming_the_figures() {
    let error =
        PoolPolicy::default().exhausted(&capacity(5, 0, 5, None), Duration::from_millis(300));
    assert_eq!(error.message(), "no connection within 300ms: 5 of 5 in use");
    let utilization = error
        .measurements()
        .iter()
        .find(|m| m.name == "utilization");
    assert_eq!(utilization.map(|m| m.value), Some(100.0));
}

#[test]
fn growth_room_counts_as_available() {
    let figures = capacity(3, 0, 10, None);
    assert_eq!(figures.available(), 7);
    assert_eq!(PoolPolicy::default().success(&figures, None).warning, None);
}

fn evidence(acquired: u64, timed_out: u64, waiting: u64, window_ms: u64) -> Evidence {
    Evidence {
        window: Duration::from_millis(window_ms),
        acquired,
        released: acquired,
        timed_out,
        waiting,
        p99: None,
    }
}

#[test]
fn starved_requests_fail_only_over_a_whole_budget() {
    let policy = PoolPolicy::default();
    let full = capacity(5, 0, 5, Some(9));
    let budget = Duration::from_millis(300);
    let error = policy
        .check_evidence(&full, &evidence(0, 4, 9, 500), budget)
        .unwrap_err();
    assert_eq!(
        error.message(),
        "no connection handed out in 500ms, 4 acquisitions timed out: 5 of 5 in use, 9 waiting"
    );
    // Too short a window to tell.
    assert!(
        policy
            .check_evidence(&full, &evidence(0, 0, 9, 100), budget)
            .is_ok()
    );
    // Connections cycling, even with some timeouts: busy, not broken.
    assert!(
        policy
            .check_evidence(&full, &evidence(800, 3, 9, 500), budget)
            .is_ok()
    );
    let detail = policy.success_with(&full, None, Some(&evidence(800, 3, 9, 500)));
    assert_eq!(
        detail.warning.as_deref(),
        Some("busy: 5 of 5 in use, 9 waiting, 3 acquisitions timed out")
    );
}

#[tokio::test(start_paused = true)]
async fn the_tracker_counts_waits_timeouts_and_leases() {
    let tracker = AcquireTracker::new();
    let policy = PoolPolicy::default()
        .tracker(tracker.clone())
        .leak_bound(Duration::from_secs(10));
    assert_eq!(
        policy.evidence(),
        None,
        "the first poll only sets the cursor"
    );
    let slow = tracker
        .acquire(
            async {
                tokio::time::sleep(Duration::from_millis(40)).await;
                Ok::<_, &str>(1)
            },
            |_| false,
        )
        .await
        .unwrap();
    let timed_out = tracker
        .acquire(async { Err::<u8, _>("timed out") }, |error| {
            *error == "timed out"
        })
        .await;
    assert!(timed_out.is_err());
    tokio::time::sleep(Duration::from_millis(460)).await;
    let seen = policy.evidence().unwrap();
    assert_eq!(seen.acquired, 1);
    assert_eq!(seen.released, 0, "still held");
    assert!(
        !PoolPolicy::serving(&seen),
        "a connection taken and kept is not service"
    );
    assert_eq!(seen.timed_out, 1);
    assert_eq!(seen.waiting, 0);
    assert_eq!(seen.p99, Some(Duration::from_millis(40)));
    assert_eq!(seen.window, Duration::from_millis(500));

    let figures = capacity(1, 0, 5, None);
    assert!(policy.check_leaks(&figures).is_ok());
    tokio::time::sleep(Duration::from_secs(11)).await;
    let error = policy.check_leaks(&figures).unwrap_err();
    assert_eq!(
        error.message(),
        "1 connection held longer than the 10s leak bound (oldest 11.46s): 1 of 5 in use"
    );
    assert!(
        !tracker.released_within(Duration::from_secs(60)),
        "nothing given back yet"
    );
    drop(slow);
    assert!(policy.check_leaks(&figures).is_ok());
    assert!(tracker.released_within(Duration::ZERO));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(tracker.released_within(Duration::from_millis(300)));
    assert!(!tracker.released_within(Duration::from_millis(299)));
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_acquisition_stops_waiting() {
    let tracker = AcquireTracker::new();
    let pending = tracker.acquire(std::future::pending::<Result<u8, ()>>(), |_| true);
    let cut = tokio::time::timeout(Duration::from_millis(10), pending).await;
    assert!(cut.is_err());
    assert_eq!(tracker.waiting(), 0);
}
