//! Connection pools: can a request get a connection within its budget?
//!
//! A `SELECT 1` succeeds on a pool whose every connection has leaked, as long as the check
//! itself can get one (the pool-leak incident). But the opposite shortcut lies too: a pool with
//! no idle connection is not broken — under load every connection is in use and cycling, which
//! is a pool doing its job. A check that fails "no connection idle" drains a healthy fleet at
//! the moment it is busiest, and the health check becomes the outage.
//!
//! So every pool check in this crate asks the question a request asks — *can I get a
//! connection within my budget?* — and judges by service, not occupancy ([`PoolPolicy`]):
//!
//! - **fails** when the check's own acquisition waits out its **acquire budget** (`no
//!   connection within 300ms: 5 of 5 in use, 12 waiting`): the pool is exhausted or stuck;
//! - **fails** when, with an [`AcquireTracker`] on the application's own acquisitions, requests
//!   waited a whole budget since the last poll and none got a connection, or when a connection
//!   has been held longer than the **leak bound** (the idea behind HikariCP's
//!   `leakDetectionThreshold`);
//! - **fails** when the database does not answer (refused, reset, authentication…);
//! - **warns** (200, still in rotation, whatever the tier) when the pool is busy: no connection
//!   available, requests waiting, some real acquisitions timing out while others succeed, or
//!   utilization above [`PoolPolicy::warn_above`];
//! - otherwise passes, with the figures: `connections` (in use), `idle`, `available`, `size`,
//!   `max`, `utilization`, `waiting` where known, and `acquire_wait` / `acquire_p99` in ms.
//!
//! The acquire budget defaults to the pool's own acquire timeout (what a request waits before
//! it fails), capped at three quarters of the time the poll has left
//! ([`probity::poll_deadline`]), so the check reports *what* it waited for before the poller
//! cuts it. Real acquisitions that time out are counted by passive reports (application code
//! calls [`probity::Reporter::failure`] for acquire timeouts and connection errors, never for
//! slow successes).
//!
//! ```
//! use probity_checks::pool::{Capacity, PoolPolicy};
//! use std::time::Duration;
//!
//! let policy = PoolPolicy::default();
//! // Every connection in use, 12 requests waiting, the check got one after 40 ms: busy.
//! let busy = Capacity { in_use: 5, idle: 0, max: 5, waiting: Some(12) };
//! let detail = policy.success(&busy, Some(Duration::from_millis(40)));
//! assert_eq!(
//!     detail.warning.as_deref(),
//!     Some("busy: 5 of 5 in use, 12 waiting, acquired in 40ms")
//! );
//! // The check waited its whole budget and got nothing: exhausted.
//! let error = policy.exhausted(&busy, Duration::from_millis(300));
//! assert_eq!(error.message(), "no connection within 300ms: 5 of 5 in use, 12 waiting");
//! ```

use parking_lot::Mutex;
use probity::{CheckError, Detail};
use probity_contract::duration::format as format_duration;
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// The acquire budget when neither the pool nor the poll gives one.
///
/// Value: 750 ms.
pub const DEFAULT_ACQUIRE_BUDGET: Duration = Duration::from_millis(750);

/// How many failed polls in a row a pool check needs before it counts as unhealthy
/// ([`crate::NETWORK_FALL`]): one slow acquisition on a busy machine is a sample, two in a row
/// are evidence. Passive reports of real acquire timeouts still fail the check at once.
pub const FALL: u32 = crate::NETWORK_FALL;

/// A pool's figures at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capacity {
    /// Connections checked out by the application.
    pub in_use: u64,
    /// Open connections sitting idle in the pool.
    pub idle: u64,
    /// The most connections the pool may open.
    pub max: u64,
    /// Requests waiting for a connection, where the pool (or an [`AcquireTracker`]) reports it.
    pub waiting: Option<u64>,
}

impl Capacity {
    /// Open connections, idle or in use.
    pub fn size(&self) -> u64 {
        self.in_use + self.idle
    }

    /// Connections a request could get without waiting: the idle ones plus the ones the pool
    /// may still open.
    pub fn available(&self) -> u64 {
        self.idle + self.max.saturating_sub(self.size())
    }

    /// Connections in use as a percentage of the pool's maximum (100 for a pool of size 0).
    pub fn utilization(&self) -> f64 {
        if self.max == 0 {
            return 100.0;
        }
        self.in_use as f64 * 100.0 / self.max as f64
    }

    /// `5 of 5 in use, 12 waiting`.
    pub fn describe(&self) -> String {
        let mut text = format!("{} of {} in use", self.in_use, self.max);
        if let Some(waiting) = self.waiting.filter(|&waiting| waiting > 0) {
            text.push_str(&format!(", {waiting} waiting"));
        }
        text
    }

    /// Adds the figures to a success: `connections` (in use), `idle`, `available`, `size`,
    /// `max`, `utilization` (percent) and, where reported, `waiting`.
    pub fn measure_detail(&self, mut detail: Detail) -> Detail {
        for (name, value, unit) in self.figures() {
            detail = detail.measurement(name, value, unit);
        }
        detail
    }

    /// Adds the same figures to a failure.
    pub fn measure_error(&self, mut error: CheckError) -> CheckError {
        for (name, value, unit) in self.figures() {
            error = error.measurement(name, value, unit);
        }
        error
    }

    fn figures(&self) -> Vec<(&'static str, f64, Option<&'static str>)> {
        let mut figures = vec![
            ("connections", self.in_use as f64, None),
            ("idle", self.idle as f64, None),
            ("available", self.available() as f64, None),
            ("size", self.size() as f64, None),
            ("max", self.max as f64, None),
            ("utilization", round(self.utilization()), Some("percent")),
        ];
        if let Some(waiting) = self.waiting {
            figures.push(("waiting", waiting as f64, None));
        }
        figures
    }
}

/// How a pool check judges service: the acquire budget, the leak bound, the utilization above
/// which a busy pool warns, and the application's [`AcquireTracker`] if it keeps one.
///
/// Cheap to clone; clones share the tracker and the cursor of what the last poll saw.
#[derive(Debug, Clone, Default)]
pub struct PoolPolicy {
    acquire_budget: Option<Duration>,
    leak_bound: Option<Duration>,
    warn_above: Option<f64>,
    tracker: Option<AcquireTracker>,
    cursor: Arc<Mutex<Option<Cursor>>>,
}

/// What the previous poll had seen of the tracker.
#[derive(Debug, Clone, Copy)]
struct Cursor {
    at: Instant,
    acquired: u64,
    released: u64,
    timed_out: u64,
}

/// What real requests saw since the previous poll, from an [`AcquireTracker`].
#[derive(Debug, Clone, PartialEq)]
pub struct Evidence {
    /// How long ago the previous poll was.
    pub window: Duration,
    /// Acquisitions that got a connection.
    pub acquired: u64,
    /// Connections given back.
    pub released: u64,
    /// Acquisitions that timed out.
    pub timed_out: u64,
    /// Acquisitions waiting right now.
    pub waiting: u64,
    /// The 99th percentile of the successful acquisitions' waits, when there were any.
    pub p99: Option<Duration>,
}

impl PoolPolicy {
    /// Waits at most `budget` for a connection when the pool has none to spare (default: the
    /// pool's own acquire timeout, capped at three quarters of the poll's time left).
    pub fn acquire_budget(mut self, budget: Duration) -> Self {
        self.acquire_budget = Some(budget);
        self
    }

    /// Fails when a connection tracked by the [`AcquireTracker`] has been held longer than
    /// `bound` — a leak, even while the pool still has connections to spare (default: no leak
    /// bound). Needs a tracker.
    pub fn leak_bound(mut self, bound: Duration) -> Self {
        self.leak_bound = Some(bound);
        self
    }

    /// Warns when more than `percent` of the pool's maximum is in use (default: only a pool
    /// with no connection available, or with requests waiting, warns). Never fails.
    pub fn warn_above(mut self, percent: f64) -> Self {
        self.warn_above = Some(percent);
        self
    }

    /// Judges from the application's own acquisitions too: their waits, their timeouts, and
    /// how long each connection is held.
    pub fn tracker(mut self, tracker: AcquireTracker) -> Self {
        self.tracker = Some(tracker);
        self
    }

    /// The tracker, if one was given.
    pub fn tracked(&self) -> Option<&AcquireTracker> {
        self.tracker.as_ref()
    }

    /// The leak bound, if one was set.
    pub fn leak_bound_set(&self) -> Option<Duration> {
        self.leak_bound
    }

    /// How long the check's own acquisition may wait: the explicit budget, else the pool's
    /// acquire timeout (what a request waits), capped at three quarters of the poll's time left.
    pub fn budget(&self, pool_acquire_timeout: Option<Duration>) -> Duration {
        if let Some(budget) = self.acquire_budget {
            return budget;
        }
        // The time left, to the nearest 10 ms: a poll that has only just started reads as
        // its whole timeout.
        let left = probity::poll_deadline()
            .map(|deadline| {
                let left = deadline
                    .saturating_duration_since(Instant::now())
                    .as_millis() as u64;
                Duration::from_millis((left + 5) / 10 * 10) * 3 / 4
            })
            .unwrap_or(DEFAULT_ACQUIRE_BUDGET);
        pool_acquire_timeout.map_or(left, |timeout| timeout.min(left))
    }

    /// The figures with the tracker's waiting count filled in where the pool reports none.
    pub fn with_waiting(&self, mut capacity: Capacity) -> Capacity {
        if capacity.waiting.is_none()
            && let Some(tracker) = &self.tracker
        {
            capacity.waiting = Some(tracker.waiting());
        }
        capacity
    }

    /// Fails when tracked connections have been held past the leak bound.
    pub fn check_leaks(&self, capacity: &Capacity) -> Result<(), CheckError> {
        let (Some(bound), Some(tracker)) = (self.leak_bound, &self.tracker) else {
            return Ok(());
        };
        let Some((count, oldest)) = tracker.held_longer_than(bound) else {
            return Ok(());
        };
        let connections = if count == 1 {
            "1 connection".to_owned()
        } else {
            format!("{count} connections")
        };
        Err(capacity.measure_error(
            CheckError::new(format!(
                "{connections} held longer than the {} leak bound (oldest {}): {}",
                format_duration(bound),
                format_duration(round_millis(oldest)),
                capacity.describe()
            ))
            .measurement("leaked", count as f64, None),
        ))
    }

    /// What real requests saw since the previous call (advances the cursor), or `None` without
    /// a tracker or on the first call.
    pub fn evidence(&self) -> Option<Evidence> {
        let tracker = self.tracker.as_ref()?;
        let now = Instant::now();
        let acquired = tracker.shared.acquired.load(Ordering::Acquire);
        let released = tracker.shared.released.load(Ordering::Acquire);
        let timed_out = tracker.shared.timed_out.load(Ordering::Acquire);
        let previous = self.cursor.lock().replace(Cursor {
            at: now,
            acquired,
            released,
            timed_out,
        })?;
        Some(Evidence {
            window: now.saturating_duration_since(previous.at),
            acquired: acquired.saturating_sub(previous.acquired),
            released: released.saturating_sub(previous.released),
            timed_out: timed_out.saturating_sub(previous.timed_out),
            waiting: tracker.waiting(),
            p99: tracker.p99_since(previous.at),
        })
    }

    /// Fails when, over a window at least as long as the budget, requests waited and none got
    /// a connection: the pool is exhausted or stuck (a leak), whatever the gauges say.
    pub fn check_evidence(
        &self,
        capacity: &Capacity,
        evidence: &Evidence,
        budget: Duration,
    ) -> Result<(), CheckError> {
        let starved = evidence.acquired == 0 && (evidence.timed_out > 0 || evidence.waiting > 0);
        if !starved || evidence.window < budget {
            return Ok(());
        }
        let mut message = format!(
            "no connection handed out in {}",
            format_duration(round_millis(evidence.window))
        );
        if evidence.timed_out > 0 {
            message.push_str(&format!(", {} acquisitions timed out", evidence.timed_out));
        }
        message.push_str(&format!(": {}", capacity.describe()));
        Err(capacity.measure_error(CheckError::new(message).measurement(
            "timed_out",
            evidence.timed_out as f64,
            None,
        )))
    }

    /// Whether the evidence shows connections cycling — requests got connections and gave
    /// them back — so the pool serves, and the check need not queue behind them to find out.
    /// Connections taken and never returned (a leak) are not service.
    pub fn serving(evidence: &Evidence) -> bool {
        evidence.acquired > 0 && evidence.released > 0
    }

    /// The check's own acquisition waited out `budget` without getting a connection.
    pub fn exhausted(&self, capacity: &Capacity, budget: Duration) -> CheckError {
        capacity.measure_error(CheckError::new(format!(
            "no connection within {}: {}",
            format_duration(round_millis(budget)),
            capacity.describe()
        )))
    }

    /// A success: the figures, how long the check's own acquisition waited (`None` when it took
    /// an idle or new connection, or did not acquire), and a warning when the pool is busy.
    pub fn success(&self, capacity: &Capacity, waited: Option<Duration>) -> Detail {
        self.success_with(capacity, waited, None)
    }

    /// [`PoolPolicy::success`] with what real requests saw since the last poll.
    pub fn success_with(
        &self,
        capacity: &Capacity,
        waited: Option<Duration>,
        evidence: Option<&Evidence>,
    ) -> Detail {
        let mut detail = capacity.measure_detail(Detail::new().message(format!(
            "{}, {} idle, {} available",
            capacity.describe(),
            capacity.idle,
            capacity.available()
        )));
        if let Some(waited) = waited {
            detail = detail.measurement("acquire_wait", crate::millis(waited), Some("ms"));
        }
        if let Some(p99) = evidence.and_then(|evidence| evidence.p99) {
            detail = detail.measurement("acquire_p99", crate::millis(p99), Some("ms"));
        }
        if let Some(evidence) = evidence {
            detail = detail.measurement("timed_out", evidence.timed_out as f64, None);
        }
        let over_limit = self
            .warn_above
            .filter(|&limit| capacity.utilization() > limit);
        let waiting = capacity.waiting.unwrap_or(0) > 0;
        let timeouts = evidence.map_or(0, |evidence| evidence.timed_out);
        if capacity.available() > 0 && !waiting && over_limit.is_none() && timeouts == 0 {
            return detail;
        }
        let mut warning = format!("busy: {}", capacity.describe());
        if let Some(limit) = over_limit {
            warning.push_str(&format!(
                " (utilization {}% above {}%)",
                percent(capacity.utilization()),
                percent(limit)
            ));
        }
        if let Some(waited) = waited {
            warning.push_str(&format!(
                ", acquired in {}",
                format_duration(round_millis(waited))
            ));
        }
        if let Some(p99) = evidence.and_then(|evidence| evidence.p99) {
            warning.push_str(&format!(
                ", acquire p99 {}",
                format_duration(round_millis(p99))
            ));
        }
        if timeouts > 0 {
            warning.push_str(&format!(", {timeouts} acquisitions timed out"));
        }
        detail.warning(warning)
    }
}

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

    /// The 99th percentile wait of the successful acquisitions since `since`.
    fn p99_since(&self, since: Instant) -> Option<Duration> {
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

/// The builder methods every pool check shares, delegating to its `policy: PoolPolicy` field.
#[cfg_attr(
    not(any(
        feature = "_sqlx",
        feature = "bb8-postgres",
        feature = "deadpool-postgres",
        feature = "mysql-async"
    )),
    allow(unused_macros)
)]
macro_rules! policy_methods {
    ($acquire:literal) => {
        /// How long the check may wait for a connection when every one is in use (default:
        /// the pool's acquire timeout where it has one, capped at three quarters of the poll's
        /// time left).
        pub fn acquire_budget(mut self, budget: std::time::Duration) -> Self {
            self.policy = self.policy.acquire_budget(budget);
            self
        }

        /// Fails when a connection acquired through the tracker is held longer than `bound`
        /// (default: no leak bound). Needs a tracker.
        pub fn leak_bound(mut self, bound: std::time::Duration) -> Self {
            self.policy = self.policy.leak_bound(bound);
            self
        }

        /// Warns when more than `percent` of the pool's maximum is in use (default: only a pool
        /// with no connection available, or with requests waiting, warns). Never fails.
        pub fn warn_above(mut self, percent: f64) -> Self {
            self.policy = self.policy.warn_above(percent);
            self
        }

        /// Judges from the application's own acquisitions too, made through `tracker`
        #[doc = concat!("(", $acquire, ").")]
        pub fn tracker(mut self, tracker: crate::pool::AcquireTracker) -> Self {
            self.policy = self.policy.tracker(tracker);
            self
        }
    };
}
#[cfg_attr(
    not(any(
        feature = "_sqlx",
        feature = "bb8-postgres",
        feature = "deadpool-postgres",
        feature = "mysql-async"
    )),
    allow(unused_imports)
)]
pub(crate) use policy_methods;

fn round(value: f64) -> f64 {
    (value * 10.0).round() / 10.0
}

fn round_millis(duration: Duration) -> Duration {
    Duration::from_millis(duration.as_millis() as u64)
}

/// `80`, `66.7`: whole percentages without a fraction, others to one decimal.
fn percent(value: f64) -> String {
    let rounded = round(value);
    if rounded.fract() == 0.0 {
        format!("{rounded:.0}")
    } else {
        format!("{rounded:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
