//! Liveness: only what a restart fixes.
//!
//! A liveness failure makes the orchestrator kill the container, so only conditions inside the
//! process may fail it — never a dependency. The database-in-liveness incident and the restart
//! storm were a database check wired to liveness: a 40 s blip restarted every replica at once,
//! and the restart storm outlived the blip by minutes.
//!
//! That is why there is no way to register a check on liveness. The conditions are fixed:
//!
//! - a **runtime-stall watchdog** ([`crate::HealthBuilder::runtime_watchdog`]): a task on the
//!   async runtime writes a heartbeat; an OS thread outside the runtime watches its age, so a
//!   runtime whose every worker is blocked is still seen (default threshold 5 s, the restart
//!   storm's fix: "event-loop lag > 5000 ms");
//! - a **deadlock detector** (cargo feature `deadlock`): `parking_lot`'s cycle detection, run
//!   from the same OS thread;
//! - an **app-declared unrecoverable state**: [`crate::Health::mark_broken`];
//! - a **worker's heartbeat** ([`crate::HealthBuilder::heartbeat`], [`crate::Heartbeat`]):
//!   silent past its bound outside a declared, bounded wait on a dependency. Its watcher is a
//!   task on the runtime (`crate::heartbeat`), so a stalled runtime is left to the watchdog.
//!
//! The watcher thread publishes what it sees to the store (stalled since, deadlocked, resumed);
//! the snapshot never calls into it. Readiness also fails while liveness fails: a wedged
//! instance should not receive traffic while it waits to be restarted.

use crate::snapshot::ConditionFailure;
use crate::store::{Observation, Store};
use std::sync::Weak;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// The heartbeat shared between the task on the runtime and the watcher thread.
#[derive(Debug)]
pub(crate) struct Watchdog {
    base: std::time::Instant,
    /// The tokio clock at `base`, so a stall is reported in the clock probes read.
    tokio_base: tokio::time::Instant,
    /// Nanoseconds after `base` of the last heartbeat, plus one (0 = no heartbeat yet).
    last_beat: AtomicU64,
    pub(crate) threshold: Duration,
}

impl Watchdog {
    pub(crate) fn new(threshold: Duration) -> Self {
        Self {
            base: std::time::Instant::now(),
            tokio_base: tokio::time::Instant::now(),
            last_beat: AtomicU64::new(0),
            threshold,
        }
    }

    fn beat(&self) {
        let nanos = self.base.elapsed().as_nanos() as u64;
        self.last_beat
            .store(nanos.saturating_add(1), Ordering::Release);
    }

    /// How long ago the runtime last beat, and when that was; `None` before the first beat.
    fn last_beat(&self) -> Option<(Duration, tokio::time::Instant)> {
        let stored = self.last_beat.load(Ordering::Acquire);
        if stored == 0 {
            return None;
        }
        let offset = Duration::from_nanos(stored - 1);
        let age = self.base.elapsed().saturating_sub(offset);
        Some((age, self.tokio_base + offset))
    }

    fn heartbeat_interval(&self) -> Duration {
        (self.threshold / 10).max(Duration::from_millis(10))
    }
}

/// The conditions a watcher thread looks after, by their index in the store.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Watched {
    pub(crate) stall: Option<usize>,
    pub(crate) deadlock: Option<(usize, Duration)>,
}

/// What [`start`] spawned: the heartbeat task and the watcher thread, either optional.
pub(crate) type Started = (
    Option<tokio::task::JoinHandle<()>>,
    Option<std::thread::JoinHandle<()>>,
);

/// Starts the heartbeat task (with a runtime watchdog) and the watcher thread (with a runtime
/// watchdog or deadlock detection).
pub(crate) fn start(
    store: &std::sync::Arc<Store>,
    watchdog: Option<std::sync::Arc<Watchdog>>,
    watched: Watched,
    stop: std::sync::Arc<AtomicBool>,
) -> std::io::Result<Started> {
    if watchdog.is_none() && watched.deadlock.is_none() {
        return Ok((None, None));
    }
    stop.store(false, Ordering::Release);
    let heartbeat = watchdog.clone().map(|beating| {
        tokio::spawn(async move {
            let every = beating.heartbeat_interval();
            loop {
                beating.beat();
                tokio::time::sleep(every).await;
            }
        })
    });
    let weak: Weak<Store> = std::sync::Arc::downgrade(store);
    let check_every = watchdog.as_ref().map_or(Duration::from_millis(100), |w| {
        (w.threshold / 20).max(Duration::from_millis(5))
    });
    let thread = std::thread::Builder::new()
        .name("probity-watchdog".into())
        .spawn(move || watch_loop(&weak, watchdog.as_deref(), watched, check_every, &stop))?;
    Ok((heartbeat, Some(thread)))
}

fn watch_loop(
    store: &Weak<Store>,
    watchdog: Option<&Watchdog>,
    watched: Watched,
    check_every: Duration,
    stop: &AtomicBool,
) {
    let mut stalled = false;
    #[cfg(feature = "deadlock")]
    let mut next_deadlock_check = std::time::Instant::now();
    loop {
        let Some(store) = store.upgrade() else {
            return;
        };
        if stop.load(Ordering::Acquire) {
            return;
        }
        if let (Some(watchdog), Some(condition)) = (watchdog, watched.stall)
            && let Some((age, last_beat)) = watchdog.last_beat()
        {
            let now_stalled = age > watchdog.threshold;
            if now_stalled != stalled {
                stalled = now_stalled;
                if stalled {
                    tracing::error!(
                        target: "probity::liveness",
                        condition = "runtime_stall",
                        threshold_ms = watchdog.threshold.as_millis() as u64,
                        "runtime stalled: no heartbeat for {} (threshold {})",
                        crate::check::human(age),
                        crate::check::human(watchdog.threshold)
                    );
                    store.observe(Observation::ConditionFailed {
                        condition,
                        failure: ConditionFailure::Stalled {
                            last_beat,
                            threshold: watchdog.threshold,
                        },
                    });
                } else {
                    tracing::warn!(target: "probity::liveness", condition = "runtime_stall", "runtime heartbeat resumed");
                    store.observe(Observation::ConditionCleared { condition });
                }
            }
        }
        #[cfg(feature = "deadlock")]
        if let Some((condition, every)) = watched.deadlock
            && std::time::Instant::now() >= next_deadlock_check
        {
            next_deadlock_check = std::time::Instant::now() + every;
            let cycles = parking_lot::deadlock::check_deadlock();
            if !cycles.is_empty() {
                let threads: usize = cycles.iter().map(Vec::len).sum();
                tracing::error!(
                    target: "probity::liveness",
                    condition = "deadlock",
                    cycles = cycles.len(),
                    threads,
                    "deadlock: {} cycle(s) between {threads} threads",
                    cycles.len()
                );
                store.observe(Observation::ConditionFailed {
                    condition,
                    failure: ConditionFailure::Deadlock {
                        cycles: cycles.len(),
                        threads,
                    },
                });
            }
        }
        drop(store);
        std::thread::park_timeout(check_every);
    }
}

/// Declares the process broken for good, naming `reason` (redacted); later calls are logged
/// and ignored.
pub(crate) fn mark_broken(store: &Store, condition: usize, reason: &str) {
    let reason = crate::redact::redact(reason).into_owned();
    let already = store.snapshot().conditions()[condition].failure().cloned();
    if let Some(ConditionFailure::Declared(existing)) = already {
        tracing::warn!(target: "probity::liveness", already = %existing, ignored = %reason, "already marked broken");
        return;
    }
    tracing::error!(target: "probity::liveness", condition = "marked_broken", "marked broken: {reason}");
    store.observe(Observation::ConditionFailed {
        condition,
        failure: ConditionFailure::Declared(reason),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_heartbeat_means_no_stall_yet() {
        let watchdog = Watchdog::new(Duration::from_millis(1));
        assert_eq!(watchdog.last_beat(), None);
    }

    #[tokio::test]
    async fn a_fresh_heartbeat_is_young() {
        let watchdog = Watchdog::new(Duration::from_secs(5));
        watchdog.beat();
        let (age, _) = watchdog.last_beat().unwrap();
        assert!(age < Duration::from_secs(1));
    }
}
