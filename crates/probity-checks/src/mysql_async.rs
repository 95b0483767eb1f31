//! mysql_async pools (MySQL, MariaDB): capacity with the pool's own waiter count, and
//! reachability over a direct connection that never waits in the pool's queue.
//!
//! The figures come from `Pool::metrics()` (`connections_in_use`, `connections_in_pool`,
//! `active_wait_requests`) and the pool's `max` constraint; the check fails when **no
//! connection is available and requests are waiting** (`no connection available: 10 of 10 in
//! use, 4 waiting`), or above [`PoolCheck::max_utilization`]. `get_conn()` queues, so
//! reachability opens one connection with the pool's own `Opts`, outside the pool, pings it
//! and disconnects.
//!
//! ```no_run
//! use probity::{CheckSpec, Tier};
//! use probity_checks::mysql_async::PoolCheck;
//!
//! # fn build() -> Result<(), mysql_async::UrlError> {
//! let opts = mysql_async::Opts::from_url("mysql://app@db:3306/orders")?;
//! let pool = mysql_async::Pool::new(opts.clone());
//! let spec = CheckSpec::new("db", Tier::Hard, PoolCheck::new(pool.clone(), opts));
//! # let _ = spec;
//! # Ok(())
//! # }
//! ```

use crate::error::{chain, describe_io};
use crate::pool::Capacity;
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, Pool};
use probity::redact::redact;
use probity::{Check, CheckError, CheckFuture, CheckResult, Timing};
use std::fmt;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Interval and timeout for a mysql_async check: a fresh connection takes a few round trips.
pub const DEFAULT_TIMING: Timing = Timing {
    interval: Duration::from_secs(5),
    timeout: Duration::from_secs(2),
};

/// Capacity and reachability of a `mysql_async::Pool`.
///
/// Measurements: `connections` (in use), `idle`, `available`, `size`, `max`, `utilization`
/// (percent), `waiting`.
pub struct PoolCheck {
    pool: Pool,
    opts: Opts,
    target: String,
    max_utilization: Option<f64>,
}

impl PoolCheck {
    /// A check of `pool`, built from `opts` (mysql_async does not hand its options back).
    pub fn new(pool: Pool, opts: Opts) -> Self {
        let target = match opts.socket() {
            Some(socket) => socket.to_owned(),
            None => format!("{}:{}", opts.ip_or_hostname(), opts.tcp_port()),
        };
        Self {
            pool,
            opts,
            target,
            max_utilization: None,
        }
    }

    /// Also fails when more than `percent` of the pool's maximum is in use.
    pub fn max_utilization(mut self, percent: f64) -> Self {
        self.max_utilization = Some(percent);
        self
    }

    /// The pool's figures now.
    pub fn capacity(&self) -> Capacity {
        let metrics = self.pool.metrics();
        Capacity {
            in_use: metrics.connections_in_use.load(Ordering::Relaxed) as u64,
            idle: metrics.connections_in_pool.load(Ordering::Relaxed) as u64,
            max: self.opts.pool_opts().constraints().max() as u64,
            waiting: Some(metrics.active_wait_requests.load(Ordering::Relaxed) as u64),
        }
    }

    async fn poll(&self) -> CheckResult {
        let capacity = self.capacity();
        let detail = capacity.judge(self.max_utilization)?;
        let mut connection = Conn::new(self.opts.clone())
            .await
            .map_err(|error| capacity.measure_error(CheckError::new(self.describe(&error))))?;
        connection
            .ping()
            .await
            .map_err(|error| capacity.measure_error(CheckError::new(self.describe(&error))))?;
        let _ = connection.disconnect().await;
        Ok(detail)
    }

    fn describe(&self, error: &mysql_async::Error) -> String {
        let target = &self.target;
        match error {
            mysql_async::Error::Io(mysql_async::IoError::Io(io)) => describe_io(io, target),
            mysql_async::Error::Server(server) => format!(
                "database error [{}] ({target}): {}",
                server.code,
                redact(&server.message)
            ),
            mysql_async::Error::Driver(driver) => {
                format!("driver error ({target}): {}", redact(&driver.to_string()))
            }
            other => format!("{} ({target})", chain(other)),
        }
    }
}

impl Check for PoolCheck {
    fn check(&self) -> CheckFuture<'_> {
        Box::pin(self.poll())
    }

    fn dependency(&self) -> Option<&str> {
        Some("mysql")
    }

    fn default_timing(&self) -> Option<Timing> {
        Some(DEFAULT_TIMING)
    }
}

impl fmt::Debug for PoolCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolCheck")
            .field("target", &self.target)
            .field("capacity", &self.capacity())
            .field("max_utilization", &self.max_utilization)
            .finish_non_exhaustive()
    }
}
