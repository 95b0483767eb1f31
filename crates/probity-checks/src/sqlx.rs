//! sqlx pools (PostgreSQL, MySQL/MariaDB, SQLite): capacity first, then reachability that never
//! queues behind an exhausted pool.
//!
//! [`PoolCheck`] reads the pool's gauges (`size`, `num_idle`, `max_connections`) and judges them
//! with [`Capacity::judge`](crate::pool::Capacity::judge). sqlx does not report how many
//! requests wait for a connection, so a pool with **no connection available** fails: the next
//! request would wait. When capacity is fine, the check proves the database answers without
//! taking a place in the queue:
//!
//! 1. it takes an **idle** connection if there is one (`try_acquire`, never a waiting
//!    `acquire`) and runs `SELECT 1` on it;
//! 2. if there is none, or the idle one turns out to be broken (a restarted server, a
//!    `pg_terminate_backend`), it opens **one direct connection** with the pool's own connect
//!    options, outside the pool, and closes it again — so a refused connection is reported as
//!    refused, not as a pool timeout. A broken idle connection is closed rather than returned to
//!    the pool. When the database answered and the pool has room, the check then leaves one
//!    connection idle in the pool, so the next poll reuses it instead of connecting again.
//!
//! So a steady service costs its database one `SELECT 1` per interval per instance, on a
//! connection that already exists — a query PostgreSQL counts in `pg_stat_database`.
//!
//! ```no_run
//! use probity::{CheckSpec, Health, Tier};
//! use probity_checks::sqlx::PoolCheck;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let pool = sqlx::PgPool::connect("postgres://app@db/orders").await?;
//! let health = Health::builder()
//!     .check(CheckSpec::new(
//!         "db",
//!         Tier::Hard,
//!         PoolCheck::new(pool.clone()).max_utilization(90.0),
//!     ))
//!     .build()?;
//! # let _ = health;
//! # Ok(())
//! # }
//! ```
//!
//! What a failing poll reads like: `no connection available: 5 of 5 in use`,
//! `utilization 90% is above the 80% limit: 9 of 10 in use`, `connection refused (127.0.0.1:5432)`,
//! `pool is closed`. Every failure carries the pool's figures as measurements.

use crate::error::{chain, describe_io};
use crate::pool::Capacity;
use probity::redact::redact;
use probity::{Check, CheckError, CheckFuture, Timing};
use sqlx::{ConnectOptions, Connection, Database, Pool};
use std::fmt;
use std::time::Duration;

/// How long a poll waits to leave a fresh connection idle in the pool.
const WARM_UP_WAIT: Duration = Duration::from_millis(250);

/// The interval and timeout a pool check uses unless its `CheckSpec` sets its own: reading the
/// gauges is free and a ping of an idle connection is one round trip.
pub const DEFAULT_TIMING: Timing = Timing {
    interval: Duration::from_secs(2),
    timeout: Duration::from_secs(1),
};

/// A database whose sqlx pool [`PoolCheck`] can check: [`sqlx::Postgres`], [`sqlx::MySql`]
/// and [`sqlx::Sqlite`], each behind its cargo feature.
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

/// Capacity and reachability of a [`sqlx::Pool`]: fails when no connection is available,
/// when utilization is above [`max_utilization`](Self::max_utilization), or when the database
/// does not answer. See the [module docs](self) for how it avoids queueing.
///
/// Measurements: `connections` (in use), `idle`, `available`, `size`, `max`, `utilization`
/// (percent).
pub struct PoolCheck<DB: PoolDatabase> {
    pool: Pool<DB>,
    max_utilization: Option<f64>,
}

impl<DB: PoolDatabase> PoolCheck<DB> {
    /// A check of `pool` (a clone of the application's pool: sqlx pools are handles).
    pub fn new(pool: Pool<DB>) -> Self {
        Self {
            pool,
            max_utilization: None,
        }
    }

    /// Also fails when more than `percent` of the pool's maximum is in use, e.g. `90.0`.
    /// Without it, only a pool with no connection available fails. A limit of 100 or more
    /// never trips; a limit of 0 trips whenever a connection is in use.
    pub fn max_utilization(mut self, percent: f64) -> Self {
        self.max_utilization = Some(percent);
        self
    }

    /// The pool's figures now. sqlx counts connections being opened in `size`, so they count as
    /// in use here.
    pub fn capacity(&self) -> Capacity {
        let size = u64::from(self.pool.size());
        let idle = (self.pool.num_idle() as u64).min(size);
        Capacity {
            in_use: size - idle,
            idle,
            max: u64::from(self.pool.options().get_max_connections()),
            waiting: None,
        }
    }

    async fn poll(&self) -> probity::CheckResult {
        if self.pool.is_closed() {
            return Err(self
                .capacity()
                .measure_error(CheckError::new("pool is closed")));
        }
        // Figures first: taking an idle connection below would count it as in use.
        let capacity = self.capacity();
        let detail = capacity.judge(self.max_utilization)?;
        let options = self.pool.connect_options();
        let target = DB::target(&options);

        let mut broken = None;
        if let Some(mut connection) = self.pool.try_acquire() {
            match DB::select_one(&mut connection).await {
                Ok(()) => return Ok(detail),
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

        match options.connect().await {
            Ok(connection) => {
                // A polite close; the poller's timeout bounds it like everything else here.
                let _ = connection.close().await;
                // The database answers. If the pool has room, leave one connection idle in it
                // so the next poll reuses it instead of connecting again; a pool that cannot
                // grow quickly is no failure of this poll.
                if self.pool.size() < self.pool.options().get_max_connections() {
                    let _ = tokio::time::timeout(WARM_UP_WAIT, self.pool.acquire()).await;
                }
                Ok(with_note(detail, broken))
            }
            Err(error) => {
                let mut message = describe(&error, &target);
                if let Some(reason) = broken {
                    message = format!("{message}; an idle connection was broken too ({reason})");
                }
                Err(capacity.measure_error(CheckError::new(message)))
            }
        }
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
}

impl<DB: PoolDatabase> fmt::Debug for PoolCheck<DB> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolCheck")
            .field("dependency", &DB::DEPENDENCY)
            .field("capacity", &self.capacity())
            .field("max_utilization", &self.max_utilization)
            .finish_non_exhaustive()
    }
}

impl<DB: PoolDatabase> Clone for PoolCheck<DB> {
    fn clone(&self) -> Self {
        Self {
            pool: self.pool.clone(),
            max_utilization: self.max_utilization,
        }
    }
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
