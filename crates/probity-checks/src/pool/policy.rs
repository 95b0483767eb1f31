//! How a pool check judges service, from a pool's figures and what real requests saw.

use super::tracker::AcquireTracker;
use parking_lot::Mutex;
use probity::{CheckError, Detail};
use probity_contract::duration::format as format_duration;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The acquire budget when neither the pool nor the poll gives one.
///
/// Value: 750 ms.
pub const DEFAULT_ACQUIRE_BUDGET: Duration = Duration::from_millis(750);

/// How many failed polls in a row a pool check needs before it counts as unhealthy
/// ([`crate::NETWORK_FALL`]): one slow acquisition on a busy machine is a sample, two in a row
/// are evidence. Passive reports of real acquire timeouts still fail the check at once.
///
/// Value: 2.
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
        let (acquired, released, timed_out) = tracker.counts();
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
