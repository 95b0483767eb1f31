//! sqlx pools (PostgreSQL, MySQL/MariaDB, SQLite): can a request get a connection within its
//! budget, and does the database answer?
//!
//! [`PoolCheck`] reads the pool's gauges (`size`, `num_idle`, `max_connections`) and judges by
//! service, not occupancy ([`crate::pool`]). sqlx does not count the requests waiting for a
//! connection; an [`AcquireTracker`] on the application's own acquisitions ([`acquire`]) does,
//! and records their waits, timeouts and how long each connection is held. Each poll:
//!
//! 1. fails when a tracked connection is held past the leak bound, or when requests waited a
//!    whole budget since the last poll and none got a connection;
//! 2. takes an **idle** connection if there is one (`try_acquire`) and runs `SELECT 1` on it;
//! 3. else, if the pool may still grow, opens **one direct connection** with the pool's own
//!    connect options, outside the pool — so a refused connection is reported as refused, not
//!    as a pool timeout — then leaves one connection idle in the pool for the next poll;
//! 4. else every connection is in use: if tracked requests got connections since the last
//!    poll, the pool serves (busy, a warning); otherwise the check queues like a request, for
//!    at most its acquire budget, and fails if it gets nothing.
//!
//! A broken idle connection (a restarted server, a `pg_terminate_backend`) is closed rather
//! than returned to the pool. A steady service costs its database one `SELECT 1` per interval
//! per instance, on a connection that already exists.
//!
//! ```no_run
//! use probity::{CheckSpec, Health, Tier};
//! use probity_checks::pool::AcquireTracker;
//! use probity_checks::sqlx_pool::{PoolCheck, acquire};
//! use std::time::Duration;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let pool = sqlx::PgPool::connect("postgres://app@db/orders").await?;
//! let tracker = AcquireTracker::new();
//! let health = Health::builder()
//!     .check(CheckSpec::new(
//!         "db",
//!         Tier::Hard,
//!         PoolCheck::new(pool.clone())
//!             .tracker(tracker.clone())
//!             .leak_bound(Duration::from_secs(10)),
//!     ))
//!     .build()?;
//! // In request code: acquire through the tracker.
//! let mut connection = acquire(&pool, &tracker).await?;
//! sqlx::query("SELECT 1").execute(&mut *connection).await?;
//! # let _ = health;
//! # Ok(())
//! # }
//! ```
//!
//! What a failing poll reads like: `no connection within 300ms: 5 of 5 in use, 12 waiting`,
//! `no connection handed out in 500ms, 9 acquisitions timed out: 5 of 5 in use, 9 waiting`,
//! `2 connections held longer than the 10s leak bound (oldest 41s): 5 of 5 in use`,
//! `connection refused (127.0.0.1:5432)`, `pool is closed`. A busy pool passes with a warning:
//! `busy: 5 of 5 in use, 12 waiting, acquire p99 80ms`. Every result carries the pool's figures.

use crate::error::{chain, describe_io};
use crate::pool::{AcquireTracker, Capacity, Lease, PoolPolicy};
use probity::redact::redact;
use probity::{Check, CheckError, CheckFuture, Timing};
use sqlx::pool::PoolConnection;
use sqlx::{ConnectOptions, Connection, Database, Pool};
use std::fmt;
use std::time::Duration;
use tokio::time::Instant;

/// How long a poll waits to leave a fresh connection idle in the pool.
const WARM_UP_WAIT: Duration = Duration::from_millis(250);

/// The interval and timeout a pool check uses unless its `CheckSpec` sets its own: reading the
/// gauges is free and a ping of an idle connection is one round trip.
///
/// Interval 2 s, timeout 1 s.
pub const DEFAULT_TIMING: Timing = Timing {
    interval: Duration::from_secs(2),
    timeout: Duration::from_secs(1),
};

/// A database whose sqlx pool [`PoolCheck`] can check: `sqlx::Postgres`, `sqlx::MySql` and
/// `sqlx::Sqlite`, each behind its cargo feature (`sqlx-postgres`, `sqlx-mysql`,
/// `sqlx-sqlite`; the implementors below are the ones this build has).
pub trait PoolDatabase: Database + sealed::Sealed {
    /// The dependency name the check reports: `postgres`, `mysql` or `sqlite`.
    const DEPENDENCY: &'static str;

    /// Where the pool connects, for error messages: `host:port`, a socket or a file. Never
    /// includes credentials.
    fn target(options: &<Self::Connection as Connection>::Options) -> String;

    /// Runs `SELECT 1` on a connection.
    fn select_one(
        connection: &mut Self::Connection,
    ) -> impl std::future::Future<Output = Result<(), sqlx::Error>> + Send;
}

mod sealed {
    pub trait Sealed {}
}

#[cfg(feature = "sqlx-postgres")]
impl sealed::Sealed for sqlx::Postgres {}
#[cfg(feature = "sqlx-postgres")]
impl PoolDatabase for sqlx::Postgres {
    const DEPENDENCY: &'static str = "postgres";

    fn target(options: &sqlx::postgres::PgConnectOptions) -> String {
        match options.get_socket() {
            Some(socket) => socket.display().to_string(),
            None => format!("{}:{}", options.get_host(), options.get_port()),
        }
    }

    async fn select_one(connection: &mut sqlx::PgConnection) -> Result<(), sqlx::Error> {
        sqlx::query("SELECT 1").execute(connection).await.map(drop)
    }
}

#[cfg(feature = "sqlx-mysql")]
impl sealed::Sealed for sqlx::MySql {}
#[cfg(feature = "sqlx-mysql")]
impl PoolDatabase for sqlx::MySql {
    const DEPENDENCY: &'static str = "mysql";

    fn target(options: &sqlx::mysql::MySqlConnectOptions) -> String {
        match options.get_socket() {
            Some(socket) => socket.display().to_string(),
            None => format!("{}:{}", options.get_host(), options.get_port()),
        }
    }

    async fn select_one(connection: &mut sqlx::MySqlConnection) -> Result<(), sqlx::Error> {
        sqlx::query("SELECT 1").execute(connection).await.map(drop)
    }
}

#[cfg(feature = "sqlx-sqlite")]
impl sealed::Sealed for sqlx::Sqlite {}
#[cfg(feature = "sqlx-sqlite")]
impl PoolDatabase for sqlx::Sqlite {
    const DEPENDENCY: &'static str = "sqlite";

    fn target(options: &sqlx::sqlite::SqliteConnectOptions) -> String {
        options.get_filename().display().to_string()
    }

    async fn select_one(connection: &mut sqlx::SqliteConnection) -> Result<(), sqlx::Error> {
        sqlx::query("SELECT 1").execute(connection).await.map(drop)
    }
}

/// Service and reachability of a [`sqlx::Pool`]: fails when a request could not get a
/// connection within its budget, when a tracked connection is held past the leak bound, or
/// when the database does not answer; warns when the pool is busy. See the
/// [module docs](self) for how it avoids queueing.
///
/// Measurements: `connections` (in use), `idle`, `available`, `size`, `max`, `utilization`
/// (percent), and with a tracker `waiting`, `acquire_p99` and `timed_out`; `acquire_wait`
/// when the check itself waited.
pub struct PoolCheck<DB: PoolDatabase> {
    pool: Pool<DB>,
    policy: PoolPolicy,
}

impl<DB: PoolDatabase> PoolCheck<DB> {
    /// A check of `pool` (a clone of the application's pool: sqlx pools are handles).
    pub fn new(pool: Pool<DB>) -> Self {
        Self {
            pool,
            policy: PoolPolicy::default(),
        }
    }

    crate::pool::policy_methods!("[`sqlx_pool::acquire`](crate::sqlx_pool::acquire)");

    /// The pool's figures now. sqlx counts connections being opened in `size`, so they count as
    /// in use here; `waiting` comes from the tracker, when there is one.
    pub fn capacity(&self) -> Capacity {
        let size = u64::from(self.pool.size());
        let idle = (self.pool.num_idle() as u64).min(size);
        self.policy.with_waiting(Capacity {
            in_use: size - idle,
            idle,
            max: u64::from(self.pool.options().get_max_connections()),
            waiting: None,
        })
    }

    async fn poll(&self) -> probity::CheckResult {
        // Figures first: taking a connection below would count it as in use.
        let capacity = self.capacity();
        if self.pool.is_closed() {
            return Err(capacity.measure_error(CheckError::new("pool is closed")));
        }
        self.policy.check_leaks(&capacity)?;
        let budget = self
            .policy
            .budget(Some(self.pool.options().get_acquire_timeout()));
        let evidence = self.policy.evidence();
        if let Some(evidence) = &evidence
            && let Err(starved) = self.policy.check_evidence(&capacity, evidence, budget)
        {
            return Err(self.unless_unreachable(starved, &capacity).await);
        }
        let success = |waited| {
            self.policy
                .success_with(&capacity, waited, evidence.as_ref())
        };
        let options = self.pool.connect_options();
        let target = DB::target(&options);

        let mut broken = None;
        if let Some(mut connection) = self.pool.try_acquire() {
            match DB::select_one(&mut connection).await {
                Ok(()) => return Ok(success(None)),
                Err(error) => {
                    // Not back into the pool: the next request would get a dead connection.
                    connection.close_on_drop();
                    broken = Some(describe(&error, &target));
                }
            }
        }
        let with_note = |detail: probity::Detail, broken: Option<String>| match broken {
            Some(reason) => {
                let message = detail.message.clone().unwrap_or_default();
                detail.message(format!(
                    "{message}; closed a broken idle connection ({reason}), a new connection succeeded"
                ))
            }
            None => detail,
        };

        let max = self.pool.options().get_max_connections();
        if self.pool.size() < max {
            return match options.connect().await {
                Ok(connection) => {
                    // A polite close; the poller's timeout bounds it like everything else here.
                    let _ = connection.close().await;
                    // The database answers. Leave one connection idle in the pool so the next
                    // poll reuses it instead of connecting again; a pool that cannot grow
                    // quickly is no failure of this poll.
                    if self.pool.size() < max {
                        let _ = tokio::time::timeout(WARM_UP_WAIT, self.pool.acquire()).await;
                    }
                    Ok(with_note(success(None), broken))
                }
                Err(error) => {
                    let mut message = describe(&error, &target);
                    if let Some(reason) = broken {
                        message =
                            format!("{message}; an idle connection was broken too ({reason})");
                    }
                    Err(capacity.measure_error(with_kind(CheckError::new(message), &error)))
                }
            };
        }

        // Every connection is in use. Requests getting them since the last poll is proof
        // enough that the pool serves: no need to queue behind them.
        if broken.is_none() && evidence.as_ref().is_some_and(PoolPolicy::serving) {
            return Ok(success(None));
        }
        // Otherwise ask as a request would: wait in line, within the budget.
        let started = Instant::now();
        match tokio::time::timeout(budget, self.pool.acquire()).await {
            Ok(Ok(mut connection)) => {
                let waited = started.elapsed();
                match DB::select_one(&mut connection).await {
                    Ok(()) => Ok(with_note(success(Some(waited)), broken)),
                    Err(error) => {
                        connection.close_on_drop();
                        Err(capacity.measure_error(with_kind(
                            CheckError::new(describe(&error, &target)),
                            &error,
                        )))
                    }
                }
            }
            Ok(Err(sqlx::Error::PoolTimedOut)) | Err(_) => Err(self
                .unless_unreachable(self.policy.exhausted(&capacity, budget), &capacity)
                .await),
            Ok(Err(error)) => Err(capacity.measure_error(with_kind(
                CheckError::new(describe(&error, &target)),
                &error,
            ))),
        }
    }
}

impl<DB: PoolDatabase> PoolCheck<DB> {
    /// A pool that hands out no connection is this instance's own fault (`exhausted`, which a
    /// fallback never covers: draining the instance is the cure) only while the database
    /// answers. sqlx retries a refused connect until the acquire timeout, so a database that
    /// is down starves the pool's waiters too — a fault every instance shares. One direct
    /// connection, within what is left of the poll, tells the two apart: it fails, and the
    /// check reports why the database does not answer instead.
    async fn unless_unreachable(&self, exhausted: CheckError, capacity: &Capacity) -> CheckError {
        let options = self.pool.connect_options();
        let target = DB::target(&options);
        let left = probity::poll_deadline()
            .map(|deadline| {
                deadline
                    .saturating_duration_since(Instant::now())
                    .saturating_sub(DIRECT_CONNECT_MARGIN)
            })
            .unwrap_or(WARM_UP_WAIT);
        match tokio::time::timeout(left, options.connect()).await {
            Ok(Ok(connection)) => {
                // The database answers: the starvation is the pool's own.
                drop(connection);
                exhausted.kind(probity::FailureKind::Exhausted)
            }
            Ok(Err(error)) => capacity.measure_error(with_kind(
                CheckError::new(format!(
                    "{}; the pool hands out no connection either",
                    describe(&error, &target)
                )),
                &error,
            )),
            Err(_) => capacity.measure_error(
                CheckError::new(format!(
                    "{}; a direct connection to {target} did not answer within {} either",
                    exhausted.message(),
                    probity_contract::duration::format_coarse(left)
                ))
                .kind(probity::FailureKind::Timeout),
            ),
        }
    }
}

/// Time kept back from a poll's deadline when confirming exhaustion with a direct connection,
/// so the answer is the check's and not the poller's cut.
const DIRECT_CONNECT_MARGIN: Duration = Duration::from_millis(10);

/// Acquires a connection from `pool` through `tracker`, so the pool check sees how long it
/// waited, whether it timed out, and how long it is held (until the connection is dropped).
///
/// The connection derefs to the database's connection type (`PgConnection`…), as sqlx's own
/// `PoolConnection` does, so queries take `&mut *connection`.
pub async fn acquire<DB: Database>(
    pool: &Pool<DB>,
    tracker: &AcquireTracker,
) -> Result<TrackedConnection<DB>, sqlx::Error> {
    tracker
        .acquire(pool.acquire(), |error| {
            matches!(error, sqlx::Error::PoolTimedOut)
        })
        .await
        .map(|lease| TrackedConnection { lease })
}

/// A pool connection acquired through an [`AcquireTracker`] ([`acquire`]): derefs to the
/// database's connection (`PgConnection`, `MySqlConnection`, `SqliteConnection`) like sqlx's
/// `PoolConnection`, and tells the tracker when it goes back to the pool (dropped).
///
/// ```no_run
/// # async fn run(pool: sqlx::PgPool, tracker: probity_checks::pool::AcquireTracker) -> Result<(), sqlx::Error> {
/// use sqlx::Connection;
///
/// let mut connection = probity_checks::sqlx_pool::acquire(&pool, &tracker).await?;
/// sqlx::query("SELECT 1").execute(&mut *connection).await?;
/// let mut transaction = connection.begin().await?;
/// sqlx::query("SELECT 2").execute(&mut *transaction).await?;
/// transaction.commit().await?;
/// # Ok(())
/// # }
/// ```
pub struct TrackedConnection<DB: Database> {
    lease: Lease<PoolConnection<DB>>,
}

impl<DB: Database> TrackedConnection<DB> {
    /// How long ago the connection was taken from the pool.
    pub fn held_for(&self) -> Option<Duration> {
        self.lease.held_for()
    }

    /// The pool's own connection, no longer tracked.
    pub fn into_inner(self) -> PoolConnection<DB> {
        self.lease.into_inner()
    }
}

impl<DB: Database> std::ops::Deref for TrackedConnection<DB> {
    type Target = DB::Connection;

    fn deref(&self) -> &DB::Connection {
        &self.lease
    }
}

impl<DB: Database> std::ops::DerefMut for TrackedConnection<DB> {
    fn deref_mut(&mut self) -> &mut DB::Connection {
        &mut self.lease
    }
}

impl<DB: Database> fmt::Debug for TrackedConnection<DB> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrackedConnection")
            .field("held_for", &self.held_for())
            .finish_non_exhaustive()
    }
}

impl<DB: PoolDatabase> Check for PoolCheck<DB> {
    fn check(&self) -> CheckFuture<'_> {
        Box::pin(self.poll())
    }

    fn dependency(&self) -> Option<&str> {
        Some(DB::DEPENDENCY)
    }

    fn default_timing(&self) -> Option<Timing> {
        Some(DEFAULT_TIMING)
    }

    fn default_fall(&self) -> Option<u32> {
        Some(crate::pool::FALL)
    }
}

impl<DB: PoolDatabase> fmt::Debug for PoolCheck<DB> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolCheck")
            .field("dependency", &DB::DEPENDENCY)
            .field("capacity", &self.capacity())
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl<DB: PoolDatabase> Clone for PoolCheck<DB> {
    fn clone(&self) -> Self {
        Self {
            pool: self.pool.clone(),
            policy: self.policy.clone(),
        }
    }
}

/// The class of a database's own error, from its SQLSTATE where the message alone would not
/// tell: PostgreSQL's `28xxx` (invalid authorization: unknown role, bad password) and `3D000`
/// (no such database) reject us; `53300` (too many connections) is exhaustion; `57P03` (the
/// server is starting or shutting down) is unavailability. MySQL/MariaDB use `28000` for a
/// rejected password and `08004` for too many connections. See PostgreSQL's "Appendix A.
/// PostgreSQL Error Codes" and MariaDB's "SQLSTATE" error reference.
fn with_kind(error: CheckError, source: &sqlx::Error) -> CheckError {
    let sqlx::Error::Database(database) = source else {
        return error;
    };
    let kind = match database.code().as_deref() {
        Some(code) if code.starts_with("28") || code == "3D000" => probity::FailureKind::Rejected,
        Some("53300" | "08004") => probity::FailureKind::Exhausted,
        Some("57P03") => probity::FailureKind::Unavailable,
        _ => return error,
    };
    error.kind(kind)
}

/// A sqlx error in words, with where it happened and no credentials.
fn describe(error: &sqlx::Error, target: &str) -> String {
    match error {
        sqlx::Error::Io(io) => describe_io(io, target),
        sqlx::Error::Database(database) => {
            let code = database
                .code()
                .map(|code| format!(" [{code}]"))
                .unwrap_or_default();
            format!(
                "database error{code} ({target}): {}",
                redact(database.message())
            )
        }
        sqlx::Error::Tls(source) => format!("tls error ({target}): {}", chain(&**source)),
        sqlx::Error::Protocol(message) => {
            format!("protocol error ({target}): {}", redact(message))
        }
        sqlx::Error::Configuration(source) => {
            format!("configuration error ({target}): {}", chain(&**source))
        }
        sqlx::Error::PoolClosed => "pool is closed".to_owned(),
        sqlx::Error::PoolTimedOut => format!("timed out waiting for a connection ({target})"),
        other => format!("{} ({target})", chain(other)),
    }
}
