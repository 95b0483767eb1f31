//! mysql_async pools (MySQL, MariaDB): can a request get a connection within its budget, and
//! does the database answer? The pool reports its own waiters.
//!
//! The figures come from `Pool::metrics()` (`connections_in_use`, `connections_in_pool`,
//! `active_wait_requests`) and the pool's `max` constraint. `get_conn()` queues, so: with an
//! idle connection the check takes it (at once) and pings it; with room to grow but nothing idle
//! it opens one connection with the pool's own `Opts`, outside the pool, pings it and
//! disconnects; with every connection in use, tracked requests getting connections since the
//! last poll prove the pool serves (busy: a warning), and otherwise the check waits in line like
//! a request for at most its acquire budget and fails only if it gets nothing. See
//! [`crate::pool`] for the rules.
//!
//! ```no_run
//! use probity::{CheckSpec, Tier};
//! use probity_checks::mysql_async_pool::PoolCheck;
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
use crate::pool::{Capacity, PoolPolicy};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, Pool};
use probity::redact::redact;
use probity::{Check, CheckError, CheckFuture, CheckResult, Timing};
use std::fmt;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::time::Instant;

/// Interval and timeout for a mysql_async check: a fresh connection takes a few round trips.
///
/// Interval 5 s, timeout 2 s.
pub const DEFAULT_TIMING: Timing = Timing {
    interval: Duration::from_secs(5),
    timeout: Duration::from_secs(2),
};

/// Service and reachability of a `mysql_async::Pool`.
///
/// Measurements: `connections` (in use), `idle`, `available`, `size`, `max`, `utilization`
/// (percent), `waiting`, and `acquire_wait` when the check itself waited.
pub struct PoolCheck {
    pool: Pool,
    opts: Opts,
    target: String,
    policy: PoolPolicy,
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
            policy: PoolPolicy::default(),
        }
    }

    crate::pool::policy_methods!(
        "[`AcquireTracker::acquire`](crate::pool::AcquireTracker::acquire) around `pool.get_conn()`"
    );

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
        self.policy.check_leaks(&capacity)?;
        // mysql_async waits for a connection without a limit of its own.
        let budget = self.policy.budget(None);
        let evidence = self.policy.evidence();
        if let Some(evidence) = &evidence {
            self.policy.check_evidence(&capacity, evidence, budget)?;
        }
        let success = |waited| {
            self.policy
                .success_with(&capacity, waited, evidence.as_ref())
        };
        let describe_error = |error: mysql_async::Error| {
            capacity.measure_error(CheckError::new(self.describe(&error)))
        };

        if capacity.idle == 0 && capacity.available() > 0 {
            // Room to grow, nothing idle: a connection of our own says why, if it fails.
            let mut connection = Conn::new(self.opts.clone()).await.map_err(describe_error)?;
            connection.ping().await.map_err(describe_error)?;
            let _ = connection.disconnect().await;
            return Ok(success(None));
        }
        if capacity.idle == 0 && evidence.as_ref().is_some_and(PoolPolicy::serving) {
            // Every connection is in use, and requests are getting them: busy, serving.
            return Ok(success(None));
        }
        let started = Instant::now();
        let mut connection = match tokio::time::timeout(budget, self.pool.get_conn()).await {
            Ok(Ok(connection)) => connection,
            Ok(Err(error)) => return Err(describe_error(error)),
            Err(_elapsed) => return Err(self.policy.exhausted(&capacity, budget)),
        };
        let waited = (capacity.idle == 0).then(|| started.elapsed());
        connection.ping().await.map_err(describe_error)?;
        Ok(success(waited))
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

    fn default_fall(&self) -> Option<u32> {
        Some(crate::pool::FALL)
    }
}

impl fmt::Debug for PoolCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolCheck")
            .field("target", &self.target)
            .field("capacity", &self.capacity())
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}
