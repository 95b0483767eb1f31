//! deadpool-postgres pools: capacity with the pool's own waiter count, and reachability that
//! never waits for a connection.
//!
//! The figures come from `Pool::status()` (`max_size`, `size`, `available`, `waiting`): no I/O,
//! no checkout. The check fails when **no connection is available and requests are waiting**
//! (`no connection available: 5 of 5 in use, 3 waiting`), or above
//! [`PoolCheck::max_utilization`]. When capacity is fine, it takes a connection **without
//! waiting** (`timeout_get` with a zero wait: an idle connection, or a new one if the pool may
//! grow) and sends one protocol round trip on it. A connection that fails that round trip is
//! taken out of the pool, not returned to it, and one replacement is tried.
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

use crate::pool::Capacity;
use crate::postgres::describe;
use deadpool_postgres::{Object, Pool, PoolError, Timeouts};
use probity::{Check, CheckError, CheckFuture, CheckResult, Timing};
use std::fmt;
use std::time::Duration;

/// Interval and timeout for a pool check: the gauges are free, the ping is one round trip.
pub const DEFAULT_TIMING: Timing = Timing {
    interval: Duration::from_secs(2),
    timeout: Duration::from_secs(1),
};

/// Capacity and reachability of a `deadpool_postgres::Pool`.
///
/// Measurements: `connections` (in use), `idle`, `available`, `size`, `max`, `utilization`
/// (percent), `waiting`.
#[derive(Clone)]
pub struct PoolCheck {
    pool: Pool,
    max_utilization: Option<f64>,
    target: Option<String>,
}

impl PoolCheck {
    /// A check of `pool` (a clone of the application's pool).
    pub fn new(pool: Pool) -> Self {
        Self {
            pool,
            max_utilization: None,
            target: None,
        }
    }

    /// Also fails when more than `percent` of the pool's maximum is in use.
    pub fn max_utilization(mut self, percent: f64) -> Self {
        self.max_utilization = Some(percent);
        self
    }

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

    async fn try_get(&self) -> Result<Option<Object>, CheckError> {
        let no_wait = Timeouts {
            wait: Some(Duration::ZERO),
            create: None,
            recycle: None,
        };
        match self.pool.timeout_get(&no_wait).await {
            Ok(object) => Ok(Some(object)),
            // Every connection is in use: capacity already judged that acceptable.
            Err(PoolError::Timeout(_)) => Ok(None),
            Err(PoolError::Closed) => Err(CheckError::new("pool is closed")),
            Err(PoolError::Backend(error)) => {
                Err(CheckError::new(describe(&error, self.target.as_deref())))
            }
            Err(other) => Err(CheckError::new(format!("cannot get a connection: {other}"))),
        }
    }

    async fn poll(&self) -> CheckResult {
        if self.pool.is_closed() {
            return Err(self
                .capacity()
                .measure_error(CheckError::new("pool is closed")));
        }
        let capacity = self.capacity();
        let detail = capacity.judge(self.max_utilization)?;
        let Some(object) = self
            .try_get()
            .await
            .map_err(|error| capacity.measure_error(error))?
        else {
            let message = detail.message.clone().unwrap_or_default();
            return Ok(detail.message(format!("{message}; no idle connection to ping")));
        };
        let Err(error) = object.check_connection().await else {
            return Ok(detail);
        };
        let broken = describe(&error, self.target.as_deref());
        // Out of the pool: the next request must not get it.
        drop(Object::take(object));
        let Some(replacement) = self
            .try_get()
            .await
            .map_err(|error| capacity.measure_error(error))?
        else {
            return Err(capacity.measure_error(CheckError::new(broken)));
        };
        replacement.check_connection().await.map_err(|error| {
            capacity.measure_error(CheckError::new(describe(&error, self.target.as_deref())))
        })?;
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
}

impl fmt::Debug for PoolCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolCheck")
            .field("capacity", &self.capacity())
            .field("max_utilization", &self.max_utilization)
            .field("target", &self.target)
            .finish()
    }
}
