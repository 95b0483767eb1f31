//! deadpool-postgres pools: can a request get a connection within its budget, and does the
//! database answer? The pool reports its own waiters.
//!
//! The figures come from `Pool::status()` (`max_size`, `size`, `available`, `waiting`): no I/O.
//! Each poll takes a connection **without waiting** if there is one (`timeout_get` with a zero
//! wait: an idle connection, or a new one if the pool may grow) and sends one protocol round
//! trip on it; a connection that fails it is taken out of the pool, not returned. When every
//! connection is in use, tracked requests getting connections since the last poll prove the
//! pool serves (a warning: busy); otherwise the check waits in line like a request, for at most
//! its acquire budget (default: the pool's own `wait` timeout, capped by the poll), and fails
//! only if it gets nothing. See [`crate::pool`] for the rules.
//!
//! ```no_run
//! use probity::{CheckSpec, Tier};
//! use probity_checks::deadpool::PoolCheck;
//!
//! # fn build(pool: deadpool_postgres::Pool) {
//! let spec = CheckSpec::new("db", Tier::Hard, PoolCheck::new(pool).target("db:5432"));
//! # let _ = spec;
//! # }
//! ```

use crate::pool::{Capacity, PoolPolicy};
use crate::postgres::describe;
use deadpool_postgres::{Object, Pool, PoolError, Timeouts};
use probity::{Check, CheckError, CheckFuture, CheckResult, Timing};
use std::fmt;
use std::time::Duration;
use tokio::time::Instant;

/// Interval and timeout for a pool check: the gauges are free, the ping is one round trip.
///
/// Interval 2 s, timeout 1 s.
pub const DEFAULT_TIMING: Timing = Timing {
    interval: Duration::from_secs(2),
    timeout: Duration::from_secs(1),
};

/// Service and reachability of a `deadpool_postgres::Pool`.
///
/// Measurements: `connections` (in use), `idle`, `available`, `size`, `max`, `utilization`
/// (percent), `waiting`, and `acquire_wait` when the check itself waited.
#[derive(Clone)]
pub struct PoolCheck {
    pool: Pool,
    policy: PoolPolicy,
    target: Option<String>,
}

impl PoolCheck {
    /// A check of `pool` (a clone of the application's pool).
    pub fn new(pool: Pool) -> Self {
        Self {
            pool,
            policy: PoolPolicy::default(),
            target: None,
        }
    }

    crate::pool::policy_methods!(
        "[`AcquireTracker::acquire`](crate::pool::AcquireTracker::acquire) around `pool.get()`"
    );

    /// Names where the pool connects in error messages, e.g. `db:5432` (deadpool does not
    /// expose its connection config; [`crate::postgres::target_of`] builds this from one).
    pub fn target(mut self, target: impl Into<String>) -> Self {
        self.target = Some(target.into());
        self
    }

    /// The pool's figures now.
    pub fn capacity(&self) -> Capacity {
        let status = self.pool.status();
        let size = status.size as u64;
        let idle = (status.available as u64).min(size);
        Capacity {
            in_use: size - idle,
            idle,
            max: status.max_size as u64,
            waiting: Some(status.waiting as u64),
        }
    }

    /// A connection within `wait`, or `None` when the wait ran out. A zero wait takes an idle
    /// connection or makes a new one; a longer one queues (bounded here, so the pool needs no
    /// runtime of its own for timeouts).
    async fn get_within(&self, wait: Duration) -> Result<Option<Object>, CheckError> {
        let got = if wait.is_zero() {
            let no_wait = Timeouts {
                wait: Some(Duration::ZERO),
                create: None,
                recycle: None,
            };
            self.pool.timeout_get(&no_wait).await
        } else {
            match tokio::time::timeout(wait, self.pool.get()).await {
                Ok(got) => got,
                Err(_elapsed) => return Ok(None),
            }
        };
        match got {
            Ok(object) => Ok(Some(object)),
            // Every connection is in use for the whole wait.
            Err(PoolError::Timeout(_)) => Ok(None),
            Err(PoolError::Closed) => Err(CheckError::new("pool is closed")),
            Err(PoolError::Backend(error)) => {
                Err(CheckError::new(describe(&error, self.target.as_deref())))
            }
            Err(other) => Err(CheckError::new(format!("cannot get a connection: {other}"))),
        }
    }

    async fn poll(&self) -> CheckResult {
        let capacity = self.capacity();
        if self.pool.is_closed() {
            return Err(capacity.measure_error(CheckError::new("pool is closed")));
        }
        self.policy.check_leaks(&capacity)?;
        let budget = self.policy.budget(self.pool.timeouts().wait);
        let evidence = self.policy.evidence();
        if let Some(evidence) = &evidence {
            self.policy.check_evidence(&capacity, evidence, budget)?;
        }
        let success = |waited| {
            self.policy
                .success_with(&capacity, waited, evidence.as_ref())
        };
        let mut waited = None;
        let object = match self
            .get_within(Duration::ZERO)
            .await
            .map_err(|error| capacity.measure_error(error))?
        {
            Some(object) => object,
            None => {
                // Every connection is in use. Tracked requests getting them since the last
                // poll prove the pool serves; otherwise wait in line as a request would.
                if evidence.as_ref().is_some_and(PoolPolicy::serving) {
                    return Ok(success(None));
                }
                let started = Instant::now();
                let Some(object) = self
                    .get_within(budget)
                    .await
                    .map_err(|error| capacity.measure_error(error))?
                else {
                    return Err(self.policy.exhausted(&capacity, budget));
                };
                waited = Some(started.elapsed());
                object
            }
        };
        let Err(error) = object.check_connection().await else {
            return Ok(success(waited));
        };
        let broken = describe(&error, self.target.as_deref());
        // Out of the pool: the next request must not get it.
        drop(Object::take(object));
        let Some(replacement) = self
            .get_within(Duration::ZERO)
            .await
            .map_err(|error| capacity.measure_error(error))?
        else {
            return Err(capacity.measure_error(CheckError::new(broken)));
        };
        replacement.check_connection().await.map_err(|error| {
            capacity.measure_error(CheckError::new(describe(&error, self.target.as_deref())))
        })?;
        let detail = success(waited);
        let message = detail.message.clone().unwrap_or_default();
        Ok(detail.message(format!(
            "{message}; removed a broken connection ({broken}), a new one answered"
        )))
    }
}

impl Check for PoolCheck {
    fn check(&self) -> CheckFuture<'_> {
        Box::pin(self.poll())
    }

    fn dependency(&self) -> Option<&str> {
        Some("postgres")
    }

    fn default_timing(&self) -> Option<Timing> {
        Some(DEFAULT_TIMING)
    }

    fn default_fall(&self) -> Option<u32> {
        Some(crate::pool::FALL)
    }
}

impl fmt::Debug for PoolCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolCheck")
            .field("capacity", &self.capacity())
            .field("policy", &self.policy)
            .field("target", &self.target)
            .finish()
    }
}
