//! Liveness conditions seen from outside the runtime: a real stall, a real deadlock.
//!
//! These run on the real clock (the watchdog watches wall time from an OS thread) and poll
//! until a deadline rather than sleeping a fixed time.

use probity::{Health, ProbeKind, Status};
use std::time::{Duration, Instant};

fn liveness(health: &Health) -> Status {
    health
        .snapshot()
        .status(ProbeKind::Liveness, tokio::time::Instant::now())
}

fn liveness_reason(health: &Health) -> Option<String> {
    let snapshot = health.snapshot();
    let entries = snapshot.entries(ProbeKind::Liveness, tokio::time::Instant::now(), &[]);
    entries.iter().find_map(|entry| {
        entry
            .reason(probity::Details::Admin, tokio::time::Instant::now())
            .map(|r| r.to_string())
    })
}

fn wait_until(deadline: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + deadline;
    while Instant::now() < end {
        if condition() {
            return true;
        }
        std::thread::yield_now();
    }
    condition()
}

/// Blocks the calling worker thread without yielding, the way a synchronous call on the
/// runtime does.
fn spin_for(duration: Duration) {
    let end = Instant::now() + duration;
    while Instant::now() < end {
        std::hint::spin_loop();
    }
}

#[test]
fn a_runtime_with_every_worker_blocked_is_seen_by_the_watchdog() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let health = runtime.block_on(async {
        let health = Health::builder()
            .runtime_watchdog(Duration::from_millis(300))
            .build()
            .unwrap();
        health.start().unwrap();
        health
    });
    let updates = health.view().subscribe();
    assert!(wait_until(Duration::from_secs(5), || liveness(&health) == Status::Pass));
    let generation = health.snapshot().generation();

    // Block both workers for 1.5 s.
    for _ in 0..2 {
        runtime.spawn(async { spin_for(Duration::from_millis(1500)) });
    }
    assert!(
        wait_until(Duration::from_secs(5), || liveness(&health) == Status::Fail),
        "the watchdog never saw the stall"
    );
    let reason = liveness_reason(&health).unwrap();
    assert!(
        reason.starts_with("runtime stalled: no heartbeat for"),
        "{reason}"
    );
    assert!(reason.ends_with("(threshold 300ms)"), "{reason}");
    // Readiness fails with it: a wedged instance should not get traffic.
    assert_eq!(
        health
            .snapshot()
            .status(ProbeKind::Readiness, tokio::time::Instant::now()),
        Status::Fail
    );
    // The watchdog thread published the change for subscribers (gRPC Watch).
    assert!(wait_until(Duration::from_secs(5), || health
        .snapshot()
        .generation()
        > generation));
    assert!(updates.has_changed().unwrap());

    // When the stall ends, liveness recovers by itself.
    assert!(
        wait_until(Duration::from_secs(10), || liveness(&health)
            == Status::Pass),
        "liveness never recovered"
    );
    health.stop();
    runtime.shutdown_timeout(Duration::from_secs(1));
}

#[test]
fn a_busy_but_responsive_runtime_is_not_a_stall() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let health = runtime.block_on(async {
        let health = Health::builder()
            .runtime_watchdog(Duration::from_millis(500))
            .build()
            .unwrap();
        health.start().unwrap();
        health
    });
    // One worker blocked for 1 s, the other free: the heartbeat still runs.
    runtime.spawn(async { spin_for(Duration::from_millis(1000)) });
    let end = Instant::now() + Duration::from_millis(1200);
    let mut failed = false;
    while Instant::now() < end {
        failed |= liveness(&health) == Status::Fail;
        std::thread::yield_now();
    }
    assert!(
        !failed,
        "one blocked worker out of two is not a stalled runtime"
    );
    health.stop();
    runtime.shutdown_timeout(Duration::from_secs(1));
}

#[cfg(feature = "deadlock")]
#[test]
fn a_parking_lot_deadlock_fails_liveness() {
    use std::sync::{Arc, Barrier};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let health = runtime.block_on(async {
        let health = Health::builder()
            .deadlock_detection(Duration::from_millis(50))
            .build()
            .unwrap();
        health.start().unwrap();
        health
    });
    assert_eq!(liveness(&health), Status::Pass);
    let first = Arc::new(parking_lot::Mutex::new(()));
    let second = Arc::new(parking_lot::Mutex::new(()));
    let barrier = Arc::new(Barrier::new(2));
    for flip in [false, true] {
        let (a, b) = if flip {
            (second.clone(), first.clone())
        } else {
            (first.clone(), second.clone())
        };
        let barrier = barrier.clone();
        std::thread::spawn(move || {
            let _held = a.lock();
            barrier.wait();
            let _never = b.lock();
        });
    }
    assert!(
        wait_until(Duration::from_secs(10), || liveness(&health)
            == Status::Fail),
        "the deadlock was never detected"
    );
    let reason = liveness_reason(&health).unwrap();
    assert_eq!(reason, "deadlock: 1 cycle(s) between 2 threads");
    let snapshot = health.snapshot();
    let readiness = snapshot.entries(ProbeKind::Readiness, tokio::time::Instant::now(), &[]);
    let gate = readiness.iter().find(|e| e.name == "liveness").unwrap();
    assert_eq!(
        gate.reason(probity::Details::Admin, tokio::time::Instant::now())
            .as_deref(),
        Some("deadlock: 1 cycle(s) between 2 threads"),
        "the readiness gate repeats the reason once"
    );
    health.stop();
}
