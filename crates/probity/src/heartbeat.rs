//! Heartbeats: liveness for the application's own workers.
//!
//! A background worker — a queue consumer, an outbox relay — that awaits a future that never
//! completes, loses a wake-up or spins on a task of its own is invisible to the other liveness
//! conditions: the runtime keeps running (the stall watchdog sees nothing), no `parking_lot`
//! lock is held in a cycle (the deadlock detector sees nothing), and nobody calls
//! [`crate::Health::mark_broken`]. The process answers `/livez` 200 while its one job has
//! stopped. A heartbeat is the worker saying "I made progress" ([`Heartbeat::beat`]); silence
//! past its bound (`max_silence`) fails liveness.
//!
//! A worker also waits, legitimately, on what it consumes: a broker that is down, a database
//! that is slow. That silence is not a wedge, and must never restart anything — a broker outage
//! would otherwise restart every consumer in the fleet at once, the database-in-liveness
//! incident with a queue in place of the database. So a worker declares its waits, each bounded
//! by its own timeout ([`Heartbeat::waiting_on`], [`Heartbeat::wait_on`]): silence inside a
//! declared wait still within its timeout is not a failure, however long the outage lasts, as
//! long as the worker keeps re-declaring bounded waits (a retry loop). A wait that outlives its
//! own timeout is exactly the wedge a heartbeat exists to catch — the worker said it would be
//! back and is not.
//!
//! The rule, evaluated by a watcher task on the runtime every tenth of the shortest bound
//! (between 10 ms and 1 s):
//!
//! - alive while the last sign of life — a beat, the start or the end of a declared wait, or
//!   taking the handle — is at most `max_silence` old;
//! - past that, excused while the worker is inside declared waits that are all still within
//!   their timeouts (the admin reason says `waiting on broker for 12s (timeout 30s)`);
//! - otherwise failing: `worker silent for 31s (bound 30s)`, with the overdue wait named when
//!   there is one.
//!
//! A wait extends the bound to its own timeout; it never shortens it.
//!
//! The watcher publishes only changes (alive → waiting → failing and back), never a beat, so
//! beating is an atomic store of a timestamp: no lock, no allocation, no publication. If the
//! runtime itself stalls, the watcher stalls with it; the runtime watchdog, watched from an OS
//! thread, is what sees that (declare both).

use crate::snapshot::{ConditionFailure, DeclaredWait};
use crate::store::{Observation, Store};
use parking_lot::Mutex;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::time::Instant;

/// The watcher's period for a set of bounds: a tenth of the shortest, between 10 ms and 1 s.
pub(crate) fn watch_period(shortest: Duration) -> Duration {
    (shortest / 10).clamp(Duration::from_millis(10), Duration::from_secs(1))
}

/// One heartbeat's state, shared by its handles, their waits and the watcher.
pub(crate) struct HeartbeatCell {
    pub(crate) name: Arc<str>,
    /// Its liveness condition's index in the store.
    pub(crate) condition: usize,
    pub(crate) max_silence: Duration,
    base: Instant,
    /// Nanoseconds after `base` of the last sign of life, plus one (0 = never taken).
    last_beat: AtomicU64,
    waits: Mutex<Waits>,
}

/// The declared waits in progress, and the dependencies ever waited on (kept, so a retry loop
/// re-declaring the same wait allocates nothing).
#[derive(Default)]
struct Waits {
    dependencies: Vec<Arc<str>>,
    active: Vec<ActiveWait>,
    next_id: u64,
    /// What the heartbeat's watcher last saw, when it was no sign of life ([`Heartbeat::saw`]).
    seen: Option<Arc<str>>,
}

#[derive(Debug, Clone, Copy)]
struct ActiveWait {
    id: u64,
    dependency: usize,
    since: Instant,
    timeout: Duration,
}

impl Waits {
    fn declared(&self, wait: &ActiveWait) -> DeclaredWait {
        DeclaredWait {
            dependency: self.dependencies[wait.dependency].clone(),
            since: wait.since,
            timeout: wait.timeout,
        }
    }
}

/// What a heartbeat amounts to at one instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reading {
    /// Within its bound, or not taken yet.
    Alive,
    /// Silent past its bound, inside declared waits all within their timeouts (the one that
    /// started first).
    Waiting(DeclaredWait),
    /// Silent past its bound and not excused.
    Silent {
        last_beat: Instant,
        overdue: Option<DeclaredWait>,
        seen: Option<Arc<str>>,
    },
}

impl HeartbeatCell {
    pub(crate) fn new(name: Arc<str>, condition: usize, max_silence: Duration) -> Self {
        Self {
            name,
            condition,
            max_silence,
            base: Instant::now(),
            last_beat: AtomicU64::new(0),
            waits: Mutex::new(Waits::default()),
        }
    }

    /// Records a sign of life at `now`: one relaxed atomic store. Two handles racing may store
    /// a beat a few nanoseconds older than the other's; either is a sign of life.
    fn beat_at(&self, now: Instant) {
        let nanos = now.saturating_duration_since(self.base).as_nanos() as u64;
        self.last_beat
            .store(nanos.saturating_add(1), Ordering::Relaxed);
    }

    fn last_beat(&self) -> Option<Instant> {
        match self.last_beat.load(Ordering::Relaxed) {
            0 => None,
            stored => Some(self.base + Duration::from_nanos(stored - 1)),
        }
    }

    fn begin_wait(&self, dependency: &str, timeout: Duration, now: Instant) -> u64 {
        let mut waits = self.waits.lock();
        let dependency = match waits
            .dependencies
            .iter()
            .position(|known| &**known == dependency)
        {
            Some(index) => index,
            None => {
                waits.dependencies.push(Arc::from(dependency));
                waits.dependencies.len() - 1
            }
        };
        let id = waits.next_id;
        waits.next_id += 1;
        waits.active.push(ActiveWait {
            id,
            dependency,
            since: now,
            timeout,
        });
        drop(waits);
        self.beat_at(now);
        id
    }

    fn end_wait(&self, id: u64) {
        let mut waits = self.waits.lock();
        if let Some(position) = waits.active.iter().position(|wait| wait.id == id) {
            waits.active.swap_remove(position);
        }
        drop(waits);
        // Coming back from a wait is progress: the awaited future returned.
        self.beat_at(Instant::now());
    }

    fn dependency_of(&self, id: u64) -> Option<Arc<str>> {
        let waits = self.waits.lock();
        let wait = waits.active.iter().find(|wait| wait.id == id)?;
        Some(waits.dependencies[wait.dependency].clone())
    }

    /// The heartbeat's state at `now` (the rule in the module docs).
    pub(crate) fn reading(&self, now: Instant) -> Reading {
        let Some(last_beat) = self.last_beat() else {
            return Reading::Alive;
        };
        if now.saturating_duration_since(last_beat) <= self.max_silence {
            return Reading::Alive;
        }
        let waits = self.waits.lock();
        let overdue = waits
            .active
            .iter()
            .filter(|wait| now.saturating_duration_since(wait.since) > wait.timeout)
            .min_by_key(|wait| wait.since);
        if let Some(wait) = overdue {
            return Reading::Silent {
                last_beat,
                overdue: Some(waits.declared(wait)),
                seen: waits.seen.clone(),
            };
        }
        match waits.active.iter().min_by_key(|wait| wait.since) {
            Some(wait) => Reading::Waiting(waits.declared(wait)),
            None => Reading::Silent {
                last_beat,
                overdue: None,
                seen: waits.seen.clone(),
            },
        }
    }
}

/// A worker's heartbeat: the handle a background worker (queue consumer, outbox relay) keeps
/// to say it is making progress, and to declare the bounded waits on a dependency that are
/// not a wedge.
///
/// Declared with [`crate::HealthBuilder::heartbeat`], taken with [`crate::Health::heartbeat`].
/// Liveness fails, naming the heartbeat, when the worker has shown no sign of life for longer
/// than its `max_silence`, unless it is inside declared waits that are all still within their
/// own timeouts; a wait that outlives its timeout excuses nothing. Signs of life are
/// [`Heartbeat::beat`], the start and the end of a declared wait, and taking the handle.
/// While it fails, readiness fails too (its `liveness` entry names the heartbeat), so the
/// instance leaves rotation before the restart comes.
///
/// A heartbeat is a condition, not a latch: when the worker beats again, liveness passes
/// again. The kubelet restarts a container only after `failureThreshold` failed probes in a
/// row; a worker that unwedged before then was not broken beyond what it recovers from, and a
/// restart would have fixed nothing. A wedge that persists keeps failing, and is restarted.
///
/// A consumer idle on an empty queue is waiting too: wrap the receive in a bounded wait
/// ([`Heartbeat::wait_on`]) and loop, so an idle worker re-declares its wait at every timeout
/// instead of going silent. A back-off sleep longer than `max_silence` between retries belongs
/// inside a declared wait as well.
///
/// It has no network surface: only code holding the handle can beat, so no request, probe or
/// dependency can keep a wedged worker looking alive. Cheap to clone (one `Arc`); every clone
/// beats the same heartbeat.
///
/// ```
/// use probity::Health;
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let health = Health::builder()
///     .heartbeat("outbox", Duration::from_secs(30))
///     .runtime_watchdog(Duration::from_secs(5)) // a stalled runtime stalls the watcher too
///     .build()?;
/// health.start()?;
/// let heartbeat = health.heartbeat("outbox")?;
/// # let broker_receive = || async { Ok::<_, std::io::Error>(()) };
/// # let mut rounds = 0;
/// loop {
///     // Waiting on the broker is not a wedge, for as long as each wait stays bounded.
///     match heartbeat
///         .wait_on("broker", Duration::from_secs(10), broker_receive())
///         .await
///     {
///         Ok(Ok(_message)) => { /* relay it */ }
///         Ok(Err(_error)) => { /* broker error: back off, retry */ }
///         Err(_timed_out) => { /* no answer in 10 s: retry */ }
///     }
///     heartbeat.beat();
/// #   rounds += 1;
/// #   if rounds == 3 { break; }
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Heartbeat {
    cell: Arc<HeartbeatCell>,
}

impl fmt::Debug for Heartbeat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Heartbeat")
            .field("name", &self.cell.name)
            .field("max_silence", &self.cell.max_silence)
            .finish_non_exhaustive()
    }
}

impl Heartbeat {
    pub(crate) fn take(cell: Arc<HeartbeatCell>) -> Heartbeat {
        cell.beat_at(Instant::now());
        Heartbeat { cell }
    }

    /// Says the worker made progress. One atomic store of a timestamp: no lock, no allocation,
    /// nothing published, so it can be called for every message.
    pub fn beat(&self) {
        self.cell.beat_at(Instant::now());
    }

    /// Declares a wait on `dependency` (a broker, a database) that the worker bounds by
    /// `timeout`: until the returned guard is dropped, silence is not a failure while the wait
    /// is within `timeout`. A wait still in progress past `timeout` excuses nothing — the
    /// worker said it would be back and is not, which is a wedge.
    ///
    /// Starting and ending the wait are signs of life. The dependency's own health belongs to
    /// readiness, as a check on it ([`crate::CheckSpec`]); it never fails liveness.
    ///
    /// Costs an uncontended lock; a retry loop re-declaring the same wait allocates nothing
    /// after its first round.
    pub fn waiting_on(&self, dependency: &str, timeout: Duration) -> WaitGuard {
        let id = self.cell.begin_wait(dependency, timeout, Instant::now());
        WaitGuard {
            cell: self.cell.clone(),
            id,
        }
    }

    /// Awaits `future` as a declared wait on `dependency` ([`Heartbeat::waiting_on`]), cut at
    /// `timeout`: the wait cannot outlive its bound unless the runtime itself stalls (which the
    /// runtime watchdog sees).
    pub async fn wait_on<F: Future>(
        &self,
        dependency: &str,
        timeout: Duration,
        future: F,
    ) -> Result<F::Output, WaitTimedOut> {
        let wait = self.waiting_on(dependency, timeout);
        match tokio::time::timeout(timeout, future).await {
            Ok(output) => Ok(output),
            Err(_) => {
                drop(wait);
                Err(WaitTimedOut {
                    dependency: dependency.to_owned(),
                    timeout,
                })
            }
        }
    }

    /// Says what the one watching the worker saw at its last look, when it was no sign of life
    /// (`None` once there is nothing to say): a sidecar beating a heartbeat for a process it
    /// watches from outside (`the app's /healthz gave no answer within 2s`). While the
    /// heartbeat fails, the reason shown to operators names it beside the silence, rather
    /// than a bare `worker silent for 14s`. Redacted of credentials; not a sign of life.
    ///
    /// Costs an uncontended lock, and an allocation only when the text changes.
    pub fn saw(&self, seen: Option<&str>) {
        let mut waits = self.cell.waits.lock();
        if waits.seen.as_deref() == seen {
            return;
        }
        waits.seen = seen.map(|text| Arc::from(crate::redact::redact(text).as_ref()));
    }

    /// The heartbeat's name (its liveness entry).
    pub fn name(&self) -> &str {
        &self.cell.name
    }

    /// The longest silence outside a declared wait before liveness fails.
    pub fn max_silence(&self) -> Duration {
        self.cell.max_silence
    }
}

/// A declared wait in progress ([`Heartbeat::waiting_on`]); dropping it ends the wait, and
/// counts as a sign of life.
#[must_use = "the wait ends when the guard is dropped: bind it for as long as the wait lasts"]
pub struct WaitGuard {
    cell: Arc<HeartbeatCell>,
    id: u64,
}

impl WaitGuard {
    fn dependency(&self) -> Arc<str> {
        self.cell
            .dependency_of(self.id)
            .unwrap_or_else(|| Arc::from(""))
    }
}

impl fmt::Debug for WaitGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitGuard")
            .field("heartbeat", &self.cell.name)
            .field("dependency", &self.dependency())
            .finish_non_exhaustive()
    }
}

impl Drop for WaitGuard {
    fn drop(&mut self) {
        self.cell.end_wait(self.id);
    }
}

/// A declared wait ([`Heartbeat::wait_on`]) reached its timeout; the future was dropped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no answer from {dependency} within {timeout:?}")]
pub struct WaitTimedOut {
    /// What the worker waited on.
    pub dependency: String,
    /// The wait's bound.
    pub timeout: Duration,
}

/// Starts the watcher task: it reads every heartbeat each period and publishes what changed.
/// Once shutdown has started it fails no heartbeat that was not failing already: workers stop
/// while the process drains, and liveness keeps passing while draining.
pub(crate) fn spawn(
    store: &Arc<Store>,
    cells: Arc<[Arc<HeartbeatCell>]>,
) -> Option<tokio::task::JoinHandle<()>> {
    let shortest = cells.iter().map(|cell| cell.max_silence).min()?;
    let every = watch_period(shortest);
    let store: Weak<Store> = Arc::downgrade(store);
    Some(tokio::spawn(async move {
        // Unknown at first: the store may hold what a watcher stopped earlier published.
        let mut published: Vec<Option<Reading>> = vec![None; cells.len()];
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let Some(store) = store.upgrade() else {
                return;
            };
            let now = Instant::now();
            let draining = store.snapshot().shutting_down_since().is_some();
            for (cell, last) in cells.iter().zip(published.iter_mut()) {
                let reading = cell.reading(now);
                if last.as_ref() == Some(&reading) {
                    continue;
                }
                let was_failing = matches!(last, Some(Reading::Silent { .. }));
                if draining && !was_failing && matches!(reading, Reading::Silent { .. }) {
                    continue;
                }
                publish(&store, cell, &reading, was_failing, now);
                *last = Some(reading);
            }
        }
    }))
}

fn publish(
    store: &Store,
    cell: &HeartbeatCell,
    reading: &Reading,
    was_failing: bool,
    now: Instant,
) {
    let condition = cell.condition;
    let bound = crate::check::human(cell.max_silence);
    match reading {
        Reading::Alive => {
            if was_failing {
                tracing::warn!(target: "probity::liveness", condition = %cell.name, "heartbeat resumed");
            }
            store.observe(Observation::ConditionCleared { condition });
        }
        Reading::Waiting(wait) => {
            tracing::info!(
                target: "probity::liveness",
                condition = %cell.name,
                dependency = wait.dependency(),
                "worker silent past its bound ({bound}) inside a declared wait on {} (timeout {}): not a wedge",
                wait.dependency(),
                crate::check::human(wait.timeout())
            );
            store.observe(Observation::ConditionWaiting {
                condition,
                wait: wait.clone(),
            });
        }
        Reading::Silent {
            last_beat,
            overdue,
            seen,
        } => {
            let silence = crate::check::human(now.saturating_duration_since(*last_beat));
            let seen_text = seen.as_deref().unwrap_or("");
            match overdue {
                Some(wait) => tracing::error!(
                    target: "probity::liveness",
                    condition = %cell.name,
                    dependency = wait.dependency(),
                    seen = seen_text,
                    "worker wedged: silent for {silence} (bound {bound}), waiting on {} past its timeout ({})",
                    wait.dependency(),
                    crate::check::human(wait.timeout())
                ),
                None => tracing::error!(
                    target: "probity::liveness",
                    condition = %cell.name,
                    seen = seen_text,
                    "worker wedged: silent for {silence} (bound {bound})"
                ),
            }
            store.observe(Observation::ConditionFailed {
                condition,
                failure: ConditionFailure::Silent {
                    last_beat: *last_beat,
                    max_silence: cell.max_silence,
                    overdue: overdue.clone(),
                    seen: seen.clone(),
                },
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(max_silence: Duration) -> Arc<HeartbeatCell> {
        Arc::new(HeartbeatCell::new("worker".into(), 0, max_silence))
    }

    #[tokio::test(start_paused = true)]
    async fn a_heartbeat_never_taken_is_alive() {
        let cell = cell(Duration::from_secs(1));
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(cell.reading(Instant::now()), Reading::Alive);
    }

    #[tokio::test(start_paused = true)]
    async fn silence_is_measured_from_the_last_sign_of_life() {
        let cell = cell(Duration::from_secs(10));
        let heartbeat = Heartbeat::take(cell.clone());
        let start = Instant::now();
        assert_eq!(
            cell.reading(start + Duration::from_secs(10)),
            Reading::Alive
        );
        assert_eq!(
            cell.reading(start + Duration::from_secs(11)),
            Reading::Silent {
                last_beat: start,
                overdue: None,
                seen: None,
            }
        );
        // What a watcher saw rides along; it is no sign of life.
        heartbeat.saw(Some("no answer from http://user:secret@app/healthz"));
        assert!(matches!(
            cell.reading(start + Duration::from_secs(11)),
            Reading::Silent { seen: Some(ref seen), .. } if !seen.contains("secret")
        ));
        heartbeat.saw(None);
        tokio::time::advance(Duration::from_secs(5)).await;
        heartbeat.beat();
        assert_eq!(
            cell.reading(start + Duration::from_secs(15)),
            Reading::Alive
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_extends_the_bound_to_its_timeout_and_never_shortens_it() {
        let cell = cell(Duration::from_secs(10));
        let heartbeat = Heartbeat::take(cell.clone());
        let start = Instant::now();
        let wait = heartbeat.waiting_on("broker", Duration::from_secs(30));
        // Shorter than the bound: alive.
        assert_eq!(cell.reading(start + Duration::from_secs(9)), Reading::Alive);
        // Past the bound, inside the wait: excused.
        assert!(matches!(
            cell.reading(start + Duration::from_secs(29)),
            Reading::Waiting(ref wait) if wait.dependency() == "broker"
        ));
        // Past the wait's own timeout: a wedge.
        assert!(matches!(
            cell.reading(start + Duration::from_secs(31)),
            Reading::Silent {
                overdue: Some(_),
                ..
            }
        ));
        drop(wait);
        // A wait shorter than the bound, overdue, does not fail before the bound.
        let _short = heartbeat.waiting_on("broker", Duration::from_secs(1));
        assert_eq!(cell.reading(start + Duration::from_secs(5)), Reading::Alive);
    }

    #[tokio::test(start_paused = true)]
    async fn re_declaring_a_wait_reuses_the_dependency() {
        let cell = cell(Duration::from_secs(10));
        let heartbeat = Heartbeat::take(cell.clone());
        for _ in 0..3 {
            drop(heartbeat.waiting_on("broker", Duration::from_secs(1)));
        }
        let waits = cell.waits.lock();
        assert_eq!(waits.dependencies.len(), 1);
        assert!(waits.active.is_empty());
    }

    #[test]
    fn the_watcher_period_is_a_tenth_of_the_shortest_bound_within_limits() {
        assert_eq!(
            watch_period(Duration::from_secs(30)),
            Duration::from_secs(1)
        );
        assert_eq!(
            watch_period(Duration::from_secs(5)),
            Duration::from_millis(500)
        );
        assert_eq!(
            watch_period(Duration::from_millis(20)),
            Duration::from_millis(10)
        );
    }
}
