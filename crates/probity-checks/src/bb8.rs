//! bb8 pools of tokio-postgres connections (bb8-postgres): capacity with the pool's own
//! waiter count, and reachability over a dedicated connection that never waits in the pool's
//! queue.
//!
//! The figures come from `Pool::state()` (`connections`, `idle_connections`,
//! `statistics.pending_gets()`) and the configured `max_size`. The check fails when **no
//! connection is available and requests are waiting** (`no connection available: 5 of 5 in
//! use, 3 waiting`), or above [`PoolCheck::max_utilization`]. bb8 has no "take an idle
//! connection if there is one" call, and `get()` queues; so reachability uses
//! `dedicated_connection()`: one connection made with the pool's own manager and settings,
//! outside the pool, sent one protocol round trip (`check_connection`), then closed.
//!
//! ```no_run
//! use probity::{CheckSpec, Tier};
//! use probity_checks::bb8::PoolCheck;
//!
//! # fn build(pool: bb8::Pool<bb8_postgres::PostgresConnectionManager<tokio_postgres::NoTls>>) {
//! let spec = CheckSpec::new("db", Tier::Hard, PoolCheck::new(pool).target("db:5432"));
//! # let _ = spec;
//! # }
//! ```

use crate::pool::Capacity;
use crate::postgres::describe;
use bb8::Pool;
use bb8_postgres::PostgresConnectionManager;
use probity::{Check, CheckError, CheckFuture, CheckResult, Timing};
use std::fmt;
use std::time::Duration;
use tokio_postgres::Socket;
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};

/// Interval and timeout for a bb8 check: a fresh connection takes a few round trips.
pub const DEFAULT_TIMING: Timing = Timing {
    interval: Duration::from_secs(5),
    timeout: Duration::from_secs(2),
};

/// Capacity and reachability of a `bb8::Pool<PostgresConnectionManager<Tls>>`.
///
/// Measurements: `connections` (in use), `idle`, `available`, `size`, `max`, `utilization`
/// (percent), `waiting`.
pub struct PoolCheck<Tls>
where
    Tls: MakeTlsConnect<Socket> + Clone + Send + Sync + 'static,
    <Tls as MakeTlsConnect<Socket>>::Stream: Send + Sync,
    <Tls as MakeTlsConnect<Socket>>::TlsConnect: Send,
    <<Tls as MakeTlsConnect<Socket>>::TlsConnect as TlsConnect<Socket>>::Future: Send,
{
    pool: Pool<PostgresConnectionManager<Tls>>,
    max_utilization: Option<f64>,
    target: Option<String>,
}

impl<Tls> PoolCheck<Tls>
where
    Tls: MakeTlsConnect<Socket> + Clone + Send + Sync + 'static,
    <Tls as MakeTlsConnect<Socket>>::Stream: Send + Sync,
    <Tls as MakeTlsConnect<Socket>>::TlsConnect: Send,
    <<Tls as MakeTlsConnect<Socket>>::TlsConnect as TlsConnect<Socket>>::Future: Send,
{
    /// A check of `pool` (a clone of the application's pool).
    pub fn new(pool: Pool<PostgresConnectionManager<Tls>>) -> Self {
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

    /// Names where the pool connects in error messages, e.g. `db:5432`.
    pub fn target(mut self, target: impl Into<String>) -> Self {
        self.target = Some(target.into());
        self
    }

    /// The pool's figures now.
    pub fn capacity(&self) -> Capacity {
        let state = self.pool.state();
        let size = u64::from(state.connections);
        let idle = u64::from(state.idle_connections).min(size);
        Capacity {
            in_use: size - idle,
            idle,
            max: u64::from(self.pool.config().max_size),
            waiting: Some(state.statistics.pending_gets()),
        }
    }

    async fn poll(&self) -> CheckResult {
        let capacity = self.capacity();
        let detail = capacity.judge(self.max_utilization)?;
        let target = self.target.as_deref();
        let connection =
            self.pool.dedicated_connection().await.map_err(|error| {
                capacity.measure_error(CheckError::new(describe(&error, target)))
            })?;
        connection
            .check_connection()
            .await
            .map_err(|error| capacity.measure_error(CheckError::new(describe(&error, target))))?;
        Ok(detail)
    }
}

impl<Tls> Check for PoolCheck<Tls>
where
    Tls: MakeTlsConnect<Socket> + Clone + Send + Sync + 'static,
    <Tls as MakeTlsConnect<Socket>>::Stream: Send + Sync,
    <Tls as MakeTlsConnect<Socket>>::TlsConnect: Send,
    <<Tls as MakeTlsConnect<Socket>>::TlsConnect as TlsConnect<Socket>>::Future: Send,
{
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

impl<Tls> fmt::Debug for PoolCheck<Tls>
where
    Tls: MakeTlsConnect<Socket> + Clone + Send + Sync + 'static,
    <Tls as MakeTlsConnect<Socket>>::Stream: Send + Sync,
    <Tls as MakeTlsConnect<Socket>>::TlsConnect: Send,
    <<Tls as MakeTlsConnect<Socket>>::TlsConnect as TlsConnect<Socket>>::Future: Send,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolCheck")
            .field("capacity", &self.capacity())
            .field("max_utilization", &self.max_utilization)
            .field("target", &self.target)
            .finish()
    }
}
