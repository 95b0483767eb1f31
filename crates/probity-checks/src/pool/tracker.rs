//! The application's own acquisitions, watched: waits, timeouts, waiters and held connections.

use parking_lot::Mutex;
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// Watches the application's own acquisitions: how long each waited, which timed out, how many
/// wait right now, and how long each connection is held. Give a clone to the pool check with
/// its `tracker` method (`sqlx_pool::PoolCheck::tracker`, `deadpool::PoolCheck::tracker`,
/// `bb8_pool::PoolCheck::tracker`, `mysql_async_pool::PoolCheck::tracker`) and make every
/// acquisition of the application through it:
///
/// - sqlx: `probity_checks::sqlx_pool::acquire(&pool, &tracker)`, which gives a connection that
///   derefs to `PgConnection` (and the others) as sqlx's own does;
/// - deadpool-postgres, bb8, mysql_async: [`AcquireTracker::acquire`] around the pool's own
///   acquire (`pool.get()`, `pool.get_conn()`), as below; the [`Lease`] derefs to what that
///   returns.
///
/// Cheap to clone; clones share their state. Each acquisition costs two uncontended lock
/// operations (recording the wait and the lease, releasing the lease).
///
/// ```
/// use probity_checks::pool::AcquireTracker;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let tracker = AcquireTracker::new();
/// let lease = tracker
///     .acquire(async { Ok::<_, std::io::Error>("a connection") }, |_| false)
///     .await
///     .unwrap();
/// assert_eq!(*lease, "a connection");
/// assert_eq!(tracker.held(), 1);
/// drop(lease);
/// assert_eq!(tracker.held(), 0);
/// # }
/// ```
#[derive(Debug, Clone, Default)]
pub struct AcquireTracker {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    acquired: AtomicU64,
    released: AtomicU64,
    timed_out: AtomicU64,
    waiting: AtomicU64,
    /// When the tracker was made: `last_release` counts from it.
    origin: Instant,
    /// Nanoseconds after `origin` of the last release, plus one (0: none yet).
    last_release: AtomicU64,
    state: Mutex<TrackerState>,
}

impl Default for Shared {
    fn default() -> Self {
        Self {
            acquired: AtomicU64::new(0),
            released: AtomicU64::new(0),
            timed_out: AtomicU64::new(0),
            waiting: AtomicU64::new(0),
            origin: Instant::now(),
            last_release: AtomicU64::new(0),
            state: Mutex::new(TrackerState::default()),
        }
    }
}

/// How many recent waits are kept for the percentile.
const RECENT_WAITS: usize = 1024;

#[derive(Debug, Default)]
struct TrackerState {
    next_lease: u64,
    /// Lease id → when it was taken. Ids grow with time, so the first entry is the oldest.
    leases: BTreeMap<u64, Instant>,
    /// (when, how long it waited) of the most recent successful acquisitions.
    recent: VecDeque<(Instant, Duration)>,
}

impl AcquireTracker {
    /// A tracker with nothing recorded.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `acquire` (the pool's own acquire future), recording how long it waited and whether
    /// it timed out (`timed_out` classifies the error). On success the connection comes back as
    /// a [`Lease`], tracked until dropped.
    pub async fn acquire<T, E, F>(
        &self,
        acquire: F,
        timed_out: impl FnOnce(&E) -> bool,
    ) -> Result<Lease<T>, E>
    where
        F: Future<Output = Result<T, E>>,
    {
        let started = Instant::now();
        let waiting = WaitingGuard::new(&self.shared.waiting);
        let result = acquire.await;
        drop(waiting);
        match result {
            Ok(connection) => {
                let now = Instant::now();
                let id = {
                    let mut state = self.shared.state.lock();
                    let id = state.next_lease;
                    state.next_lease += 1;
                    state.leases.insert(id, now);
                    if state.recent.len() == RECENT_WAITS {
                        state.recent.pop_front();
                    }
                    state
                        .recent
                        .push_back((now, now.saturating_duration_since(started)));
                    id
                };
                self.shared.acquired.fetch_add(1, Ordering::AcqRel);
                Ok(Lease {
                    value: Some(connection),
                    id,
                    tracker: self.clone(),
                })
            }
            Err(error) => {
                if timed_out(&error) {
                    self.shared.timed_out.fetch_add(1, Ordering::AcqRel);
                }
                Err(error)
            }
        }
    }

    /// Whether a connection was given back within the last `window`: the pool is cycling, so
    /// an acquisition that timed out meanwhile met a busy pool, not a broken one. Application
    /// code uses it to decide whether an acquire timeout is a real failure to report
    /// ([`probity::Reporter::failure`]) or load.
    ///
    /// Pick `window` as the pool's acquire timeout: a request that waited that long while no
    /// connection came back saw a pool that hands out nothing (leaked or wedged), which is
    /// what the report should say; one that timed out while connections kept coming back saw a
    /// queue longer than its budget, which is load and belongs to the pool check's `busy`
    /// warning, not to a failure.
    ///
    /// ```
    /// # use probity_checks::pool::AcquireTracker;
    /// # use std::time::Duration;
    /// # fn on_timeout(tracker: &AcquireTracker, reporter: &probity::Reporter) {
    /// let acquire_timeout = Duration::from_secs(3); // the pool's own
    /// // An acquisition just failed with the pool's timeout:
    /// if tracker.released_within(acquire_timeout) {
    ///     // Connections are cycling: load, not a fault. Shed or retry; report nothing.
    /// } else {
    ///     reporter.failure("no connection released within the acquire timeout");
    /// }
    /// # }
    /// ```
    pub fn released_within(&self, window: Duration) -> bool {
        let stored = self.shared.last_release.load(Ordering::Acquire);
        if stored == 0 {
            return false;
        }
        let last = self.shared.origin + Duration::from_nanos(stored - 1);
        Instant::now().saturating_duration_since(last) <= window
    }

    /// Acquisitions waiting right now.
    pub fn waiting(&self) -> u64 {
        self.shared.waiting.load(Ordering::Acquire)
    }

    /// Connections currently leased.
    pub fn held(&self) -> usize {
        self.shared.state.lock().leases.len()
    }

    /// How many leases are older than `bound`, and the age of the oldest; `None` when none is.
    pub fn held_longer_than(&self, bound: Duration) -> Option<(usize, Duration)> {
        let now = Instant::now();
        let state = self.shared.state.lock();
        let (_, &oldest) = state.leases.first_key_value()?;
        let oldest_age = now.saturating_duration_since(oldest);
        if oldest_age <= bound {
            return None;
        }
        let count = state
            .leases
            .values()
            .take_while(|&&since| now.saturating_duration_since(since) > bound)
            .count();
        Some((count, oldest_age))
    }

    /// Acquisitions so far: made, released, timed out.
    pub(super) fn counts(&self) -> (u64, u64, u64) {
        (
            self.shared.acquired.load(Ordering::Acquire),
            self.shared.released.load(Ordering::Acquire),
            self.shared.timed_out.load(Ordering::Acquire),
        )
    }

    /// The 99th percentile wait of the successful acquisitions since `since`.
    pub(super) fn p99_since(&self, since: Instant) -> Option<Duration> {
        let mut waits: Vec<Duration> = {
            let state = self.shared.state.lock();
            state
                .recent
                .iter()
                .rev()
                .take_while(|(at, _)| *at >= since)
                .map(|(_, wait)| *wait)
                .collect()
        };
        if waits.is_empty() {
            return None;
        }
        let rank = (waits.len() * 99).div_ceil(100).saturating_sub(1);
        let (_, p99, _) = waits.select_nth_unstable(rank);
        Some(*p99)
    }

    fn release(&self, id: u64) {
        self.shared.state.lock().leases.remove(&id);
        self.shared.released.fetch_add(1, Ordering::AcqRel);
        let since = Instant::now()
            .saturating_duration_since(self.shared.origin)
            .as_nanos() as u64;
        self.shared
            .last_release
            .store(since.saturating_add(1), Ordering::Release);
    }
}

/// Counts an acquisition as waiting until it resolves or is dropped (a cancelled request).
struct WaitingGuard<'a>(&'a AtomicU64);

impl<'a> WaitingGuard<'a> {
    fn new(counter: &'a AtomicU64) -> Self {
        counter.fetch_add(1, Ordering::AcqRel);
        Self(counter)
    }
}

impl Drop for WaitingGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A connection acquired through an [`AcquireTracker`]: derefs to the connection and tells the
/// tracker when it is returned (dropped).
#[derive(Debug)]
pub struct Lease<T> {
    value: Option<T>,
    id: u64,
    tracker: AcquireTracker,
}

impl<T> Lease<T> {
    /// How long ago the connection was taken, if it is still tracked.
    pub fn held_for(&self) -> Option<Duration> {
        let state = self.tracker.shared.state.lock();
        state
            .leases
            .get(&self.id)
            .map(|since| Instant::now().saturating_duration_since(*since))
    }

    /// The connection, no longer tracked.
    pub fn into_inner(mut self) -> T {
        self.tracker.release(self.id);
        match self.value.take() {
            Some(value) => value,
            // `value` is only taken here and in `drop`, which cannot have run.
            None => unreachable!("a lease always holds its connection until consumed"),
        }
    }
}

impl<T> Deref for Lease<T> {
    type Target = T;

    fn deref(&self) -> &T {
        match &self.value {
            Some(value) => value,
            None => unreachable!("a lease always holds its connection until consumed"),
        }
    }
}

impl<T> DerefMut for Lease<T> {
    fn deref_mut(&mut self) -> &mut T {
        match &mut self.value {
            Some(value) => value,
            None => unreachable!("a lease always holds its connection until consumed"),
        }
    }
}

impl<T> Drop for Lease<T> {
    fn drop(&mut self) {
        if self.value.is_some() {
            self.tracker.release(self.id);
        }
    }
}
