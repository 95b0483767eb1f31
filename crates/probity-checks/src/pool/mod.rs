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
//!
//! The policy that judges a pool's figures is in `policy.rs`; the tracker of the application's
//! own acquisitions in `tracker.rs`.

mod policy;
#[cfg(test)]
mod tests;
mod tracker;

pub use policy::{Capacity, DEFAULT_ACQUIRE_BUDGET, Evidence, FALL, PoolPolicy};
pub use tracker::{AcquireTracker, Lease};

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
