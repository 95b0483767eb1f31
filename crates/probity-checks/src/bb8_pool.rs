//! bb8 pools of tokio-postgres connections (bb8-postgres): can a request get a connection
//! within its budget, and does the database answer? The pool reports its own waiters.
//!
//! The figures come from `Pool::state()` (`connections`, `idle_connections`,
//! `statistics.pending_gets()`) and the configured `max_size`. bb8's `get()` always queues, so:
//! with an idle connection the check takes it (at once) and sends one protocol round trip; with
//! room to grow but nothing idle it uses `dedicated_connection()` — one connection made with the
//! pool's manager outside the pool, so a refused connection reads as refused; with every
//! connection in use, tracked requests getting connections since the last poll prove the pool
//! serves (busy: a warning), and otherwise the check waits in line like a request for at most
//! its acquire budget (default: the pool's `connection_timeout`, capped by the poll) and fails
//! only if it gets nothing. See [`crate::pool`] for the rules.
//!
//! ```no_run
//! use probity::{CheckSpec, Tier};
//! use probity_checks::bb8_pool::PoolCheck;
//!
//! # fn build(pool: bb8::Pool<bb8_postgres::PostgresConnectionManager<tokio_postgres::NoTls>>) {
//! let spec = CheckSpec::new("db", Tier::Hard, PoolCheck::new(pool).target("db:5432"));
//! # let _ = spec;
//! # }
//! ```

use crate::pool::{Capacity, PoolPolicy};
use crate::postgres::describe;
use bb8::Pool;
use bb8_postgres::PostgresConnectionManager;
use probity::{Check, CheckError, CheckFuture, CheckResult, Timing};
use std::fmt;
use std::time::Duration;
use tokio::time::Instant;
use tokio_postgres::Socket;
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};

/// Interval and timeout for a bb8 check: a fresh connection takes a few round trips.
///
/// Interval 5 s, timeout 2 s.
pub const DEFAULT_TIMING: Timing = Timing {
    interval: Duration::from_secs(5),
    timeout: Duration::from_secs(2),
};

/// Service and reachability of a `bb8::Pool<PostgresConnectionManager<Tls>>`.
///
/// Measurements: `connections` (in use), `idle`, `available`, `size`, `max`, `utilization`
/// (percent), `waiting`, and `acquire_wait` when the check itself waited.
pub struct PoolCheck<Tls>
where
    Tls: MakeTlsConnect<Socket> + Clone + Send + Sync + 'static,
    <Tls as MakeTlsConnect<Socket>>::Stream: Send + Sync,
    <Tls as MakeTlsConnect<Socket>>::TlsConnect: Send,
    <<Tls as MakeTlsConnect<Socket>>::TlsConnect as TlsConnect<Socket>>::Future: Send,
{
    pool: Pool<PostgresConnectionManager<Tls>>,
    policy: PoolPolicy,
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
            policy: PoolPolicy::default(),
            target: None,
        }
    }

    crate::pool::policy_methods!(
        "[`AcquireTracker::acquire`](crate::pool::AcquireTracker::acquire) around `pool.get()`"
    );

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
        self.policy.check_leaks(&capacity)?;
        let budget = self
            .policy
            .budget(Some(self.pool.config().connection_timeout));
        let evidence = self.policy.evidence();
        if let Some(evidence) = &evidence {
            self.policy.check_evidence(&capacity, evidence, budget)?;
        }
        let success = |waited| {
            self.policy
                .success_with(&capacity, waited, evidence.as_ref())
        };
        let target = self.target.as_deref();
        let describe_error =
            |error| capacity.measure_error(CheckError::new(describe(&error, target)));

        if capacity.idle == 0 && capacity.available() > 0 {
            // Room to grow, nothing idle: a connection of our own says why, if it fails.
            let connection = self
                .pool
                .dedicated_connection()
                .await
                .map_err(describe_error)?;
            connection
                .check_connection()
                .await
                .map_err(describe_error)?;
            return Ok(success(None));
        }
        if capacity.idle == 0 && evidence.as_ref().is_some_and(PoolPolicy::serving) {
            // Every connection is in use, and requests are getting them: busy, serving.
            return Ok(success(None));
        }
        let started = Instant::now();
        let connection = match tokio::time::timeout(budget, self.pool.get()).await {
            Ok(Ok(connection)) => connection,
            Ok(Err(bb8::RunError::User(error))) => return Err(describe_error(error)),
            Ok(Err(bb8::RunError::TimedOut)) | Err(_) => {
                return Err(self.policy.exhausted(&capacity, budget));
            }
        };
        let waited = (capacity.idle == 0).then(|| started.elapsed());
        connection
            .check_connection()
            .await
            .map_err(describe_error)?;
        Ok(success(waited))
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

    fn default_fall(&self) -> Option<u32> {
        Some(crate::pool::FALL)
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
            .field("policy", &self.policy)
            .field("target", &self.target)
            .finish()
    }
}
