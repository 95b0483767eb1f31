//! Liveness: only what a restart fixes.
//!
//! A liveness failure makes the orchestrator kill the container, so only conditions inside the
//! process may fail it — never a dependency. Seed 000's second incident and seed 004's outage
//! were a database check wired to liveness: a 40 s blip restarted every replica at once, and the
//! restart storm outlived the blip by minutes.
//!
//! That is why this module has no way to register a check. The conditions are fixed:
//!
//! - a **runtime-stall watchdog** ([`crate::HealthBuilder::runtime_watchdog`]): a task on the
//!   async runtime writes a heartbeat; an OS thread outside the runtime watches its age, so a
//!   runtime whose every worker is blocked is still seen (default threshold 5 s, seed 004's
//!   "event-loop lag > 5000 ms");
//! - a **deadlock detector** (cargo feature `deadlock`): `parking_lot`'s cycle detection, run
//!   from the same OS thread;
//! - an **app-declared unrecoverable state**: [`crate::Health::mark_broken`].
//!
//! Readiness also fails while liveness fails: a wedged instance should not receive traffic while
//! it waits to be restarted.

use crate::check::format_duration;
use crate::registry::{Health, Inner};
use std::sync::Weak;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Heartbeat age that counts as a runtime stall unless configured otherwise.
pub const DEFAULT_STALL_THRESHOLD: Duration = Duration::from_secs(5);

/// The shared state between the heartbeat task and the watchdog thread.
#[derive(Debug)]
pub struct Watchdog {
    base: std::time::Instant,
    /// Nanoseconds after `base` of the last heartbeat, plus one (0 = no heartbeat yet).
    last_beat: AtomicU64,
    threshold: Duration,
    reported_stall: AtomicBool,
}

impl Watchdog {
    pub(crate) fn new(threshold: Duration) -> Self {
        Self {
            base: std::time::Instant::now(),
            last_beat: AtomicU64::new(0),
            threshold,
            reported_stall: AtomicBool::new(false),
        }
    }

    /// The heartbeat age that counts as a stall.
    pub fn threshold(&self) -> Duration {
        self.threshold
    }

    pub(crate) fn beat(&self) {
        let nanos = self.base.elapsed().as_nanos() as u64;
        self.last_beat
            .store(nanos.saturating_add(1), Ordering::Release);
    }

    /// How long ago the runtime last beat, `None` before the first beat.
    pub fn heartbeat_age(&self) -> Option<Duration> {
        let stored = self.last_beat.load(Ordering::Acquire);
        if stored == 0 {
            return None;
        }
        let last = Duration::from_nanos(stored - 1);
        Some(self.base.elapsed().saturating_sub(last))
    }

    /// Why the runtime counts as stalled now, or `None`.
    pub fn stall_reason(&self) -> Option<String> {
        let age = self.heartbeat_age()?;
        (age > self.threshold).then(|| {
            format!(
                "runtime stalled: no heartbeat for {} (threshold {})",
                format_duration(Duration::from_millis(age.as_millis() as u64)),
                format_duration(self.threshold)
            )
        })
    }

    fn heartbeat_interval(&self) -> Duration {
        (self.threshold / 10).max(Duration::from_millis(10))
    }
}

/// Starts the heartbeat task (with a runtime watchdog) and the watchdog thread (with a runtime
/// watchdog or deadlock detection).
/// What [`start`] spawned: the heartbeat task and the watchdog thread, either optional.
pub(crate) type Started = (
    Option<tokio::task::JoinHandle<()>>,
    Option<std::thread::JoinHandle<()>>,
);

pub(crate) fn start(inner: &std::sync::Arc<Inner>) -> std::io::Result<Started> {
    let watchdog = inner.watchdog.clone();
    if watchdog.is_none() && inner.deadlock_interval.is_none() {
        return Ok((None, None));
    }
    inner.stop_watch.store(false, Ordering::Release);
    let heartbeat = watchdog.clone().map(|beating| {
        tokio::spawn(async move {
            let every = beating.heartbeat_interval();
            loop {
                beating.beat();
                tokio::time::sleep(every).await;
            }
        })
    });
    let weak: Weak<Inner> = std::sync::Arc::downgrade(inner);
    let check_every = watchdog.as_ref().map_or(Duration::from_millis(100), |w| {
        (w.threshold / 20).max(Duration::from_millis(5))
    });
    let thread = std::thread::Builder::new()
        .name("probity-watchdog".into())
        .spawn(move || watch_loop(&weak, watchdog.as_deref(), check_every))?;
    Ok((heartbeat, Some(thread)))
}

fn watch_loop(inner: &Weak<Inner>, watchdog: Option<&Watchdog>, check_every: Duration) {
    #[cfg(feature = "deadlock")]
    let mut next_deadlock_check = std::time::Instant::now();
    loop {
        let Some(inner) = inner.upgrade() else {
            return;
        };
        if inner.stop_watch.load(Ordering::Acquire) {
            return;
        }
        if let Some(watchdog) = watchdog {
            let stall = watchdog.stall_reason();
            let stalled = stall.is_some();
            if watchdog.reported_stall.swap(stalled, Ordering::AcqRel) != stalled {
                match &stall {
                    Some(reason) => tracing::error!(target: "probity::liveness", "{reason}"),
                    None => {
                        tracing::warn!(target: "probity::liveness", "runtime heartbeat resumed")
                    }
                }
                inner.republish();
            }
        }
        #[cfg(feature = "deadlock")]
        if let Some(every) = inner.deadlock_interval
            && std::time::Instant::now() >= next_deadlock_check
        {
            next_deadlock_check = std::time::Instant::now() + every;
            let cycles = parking_lot::deadlock::check_deadlock();
            if !cycles.is_empty() {
                let threads: usize = cycles.iter().map(Vec::len).sum();
                let reason = format!(
                    "deadlock: {} cycle(s) between {threads} threads",
                    cycles.len()
                );
                tracing::error!(target: "probity::liveness", "{reason}");
                inner.set_deadlock(reason);
            }
        }
        drop(inner);
        std::thread::park_timeout(check_every);
    }
}

impl Health {
    /// Declares the process broken beyond what it can recover from: liveness (and with it
    /// readiness) fails from now on, naming `reason`, so the orchestrator restarts the
    /// container. Use it for states only a restart clears — a poisoned cache, a lost leader
    /// lease that cannot be re-acquired — never for an unreachable dependency.
    ///
    /// The first reason is kept; later calls are logged and ignored.
    pub fn mark_broken(&self, reason: impl Into<String>) {
        let reason = crate::redact::redact(&reason.into()).into_owned();
        self.inner.set_broken(reason);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_heartbeat_means_no_stall_yet() {
        let watchdog = Watchdog::new(Duration::from_millis(1));
        assert_eq!(watchdog.heartbeat_age(), None);
        assert_eq!(watchdog.stall_reason(), None);
    }

    #[test]
    fn a_fresh_heartbeat_is_not_a_stall() {
        let watchdog = Watchdog::new(Duration::from_secs(5));
        watchdog.beat();
        assert!(watchdog.heartbeat_age().unwrap() < Duration::from_secs(1));
        assert_eq!(watchdog.stall_reason(), None);
    }

    #[test]
    fn an_old_heartbeat_is_a_stall() {
        let watchdog = Watchdog::new(Duration::ZERO);
        watchdog.beat();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while watchdog.heartbeat_age().unwrap_or_default().is_zero() {
            assert!(std::time::Instant::now() < deadline);
            std::hint::spin_loop();
        }
        let reason = watchdog.stall_reason().unwrap();
        assert!(
            reason.starts_with("runtime stalled: no heartbeat for"),
            "{reason}"
        );
    }
}
