//! The orders database: embedded SQLite by default, PostgreSQL on request, one small pool.
//!
//! The pool is created **lazily** (no connection at construction), so the service can bind its
//! listeners and answer `/startupz` while the database is still unreachable; the boot step
//! connects with backoff. Requests wait at most `--acquire-timeout` for a connection: an
//! exhausted pool answers 503 quickly instead of queueing requests behind a leak.
//!
//! Every request acquires through one [`AcquireTracker`], so the `db` check judges the pool by
//! what requests really see — their waits, their timeouts, how long each connection is held —
//! and a pool at full use with its connections cycling is busy, not broken.

use crate::config::DatabaseTarget;
use anyhow::Context;
use probity::redact::redact;
use probity::{CheckSpec, Reporter, Tier};
use probity_checks::pool::AcquireTracker;
use probity_checks::sqlx_pool::{PoolCheck, TrackedConnection, acquire};
use serde::{Deserialize, Serialize};
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::pool::PoolOptions;
use sqlx::postgres::{PgConnectOptions, Postgres};
use sqlx::sqlite::{Sqlite, SqliteConnectOptions, SqliteJournalMode};
use sqlx::{ConnectOptions, Connection, Pool, SqlSafeStr};
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// One line of an order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    /// Product code.
    pub sku: String,
    /// How many.
    pub quantity: i64,
    /// Unit price in cents.
    pub price_cents: i64,
}

/// An order as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Order {
    /// Order number.
    pub id: i64,
    /// Who ordered.
    pub customer: String,
    /// The lines.
    pub items: Vec<Item>,
    /// Sum of quantity × unit price.
    pub total_cents: i64,
    /// When it was stored (UTC, RFC 3339).
    pub created_at: String,
}

/// An order's event in the outbox, waiting for the relay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxRow {
    /// The row's number: rows are published in this order.
    pub id: i64,
    /// The order it announces (the message id, so consumers can drop duplicates).
    pub order_id: i64,
    /// The order as stored, JSON.
    pub payload: String,
}

/// A product and how many units were ordered, for the popular-items fallback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Popular {
    /// Product code.
    pub sku: String,
    /// Units ordered.
    pub ordered: i64,
}

/// A pooled connection, of either backend (held by the leak fault).
#[derive(Debug)]
pub enum HeldConnection {
    /// SQLite.
    Sqlite(TrackedConnection<Sqlite>),
    /// PostgreSQL.
    Postgres(TrackedConnection<Postgres>),
}

/// The pool, of either backend, and the tracker every acquisition goes through.
#[derive(Debug, Clone)]
pub struct Database {
    pool: Backend,
    tracker: AcquireTracker,
    leak_bound: Duration,
    acquire_timeout: Duration,
    /// Whether the schema is in place: until the boot has migrated the database, a request
    /// would meet missing tables, so it is refused as "starting" (503) instead.
    migrated: Arc<AtomicBool>,
}

/// The pool, of either backend.
#[derive(Debug, Clone)]
enum Backend {
    Sqlite(Pool<Sqlite>),
    Postgres(Pool<Postgres>),
}

/// Runs the same code against either pool (the SQL is portable: `$n` placeholders work in
/// both, and so does `RETURNING`).
macro_rules! with_pool {
    ($database:expr, $pool:ident => $body:expr) => {
        match &$database.pool {
            Backend::Sqlite($pool) => $body,
            Backend::Postgres($pool) => $body,
        }
    };
}

/// Why a database call failed, in the terms the API answers with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DbError {
    /// The database could not be reached or used: no connection within the acquire timeout,
    /// refused, reset, credentials rejected, shutting down. Nothing was committed; the request
    /// may be retried (503 with `Retry-After`).
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// No pooled connection within the acquire timeout (503 with `Retry-After` too). While
    /// connections are cycling this is load, not a broken database.
    #[error("database unavailable: timed out waiting for a pooled connection")]
    PoolTimeout,
    /// The boot has not connected and migrated the database yet (503 with `Retry-After`):
    /// nothing was attempted, and nothing is reported against the `db` check.
    #[error("database not ready: the boot has not applied the schema yet")]
    Starting,
    /// The query itself failed (500).
    #[error("database query failed: {0}")]
    Query(String),
}

impl DbError {
    /// Classifies a sqlx error. `connecting` is true for errors getting a connection, which
    /// always mean the database cannot be used, whatever the driver says.
    pub fn from_sqlx(error: &sqlx::Error, connecting: bool) -> DbError {
        if matches!(error, sqlx::Error::PoolTimedOut) {
            return DbError::PoolTimeout;
        }
        if connecting || is_unavailable(error) {
            DbError::Unavailable(describe(error))
        } else {
            DbError::Query(describe(error))
        }
    }
}

impl Database {
    /// A pool that connects on first use. `leak_bound`: a connection held longer fails the
    /// readiness check.
    pub fn lazy(
        target: &DatabaseTarget,
        pool_size: u32,
        acquire_timeout: Duration,
        leak_bound: Duration,
    ) -> anyhow::Result<Database> {
        let pool = match target {
            DatabaseTarget::Sqlite(path) => {
                let options = SqliteConnectOptions::new()
                    .filename(path)
                    .create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal)
                    .busy_timeout(Duration::from_secs(2))
                    .foreign_keys(true);
                Backend::Sqlite(pool_options(pool_size, acquire_timeout).connect_lazy_with(options))
            }
            DatabaseTarget::Postgres(url) => {
                let options = postgres_options(url)?;
                Backend::Postgres(
                    pool_options(pool_size, acquire_timeout).connect_lazy_with(options),
                )
            }
        };
        Ok(Database {
            pool,
            tracker: AcquireTracker::new(),
            leak_bound,
            acquire_timeout,
            migrated: Arc::new(AtomicBool::new(false)),
        })
    }

    /// Creates the SQLite file's directory (nothing to do for PostgreSQL).
    pub fn prepare(&self) -> anyhow::Result<()> {
        if let Backend::Sqlite(pool) = &self.pool {
            let options = pool.connect_options();
            let path = options.get_filename();
            if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).with_context(|| {
                    format!("cannot create the data directory {}", dir.display())
                })?;
            }
        }
        Ok(())
    }

    /// Where the database is, for people: `sqlite data/checkout.db`, `postgres 127.0.0.1:5432/test`.
    /// Never includes credentials.
    pub fn describe(&self) -> String {
        match &self.pool {
            Backend::Sqlite(pool) => {
                format!("sqlite {}", pool.connect_options().get_filename().display())
            }
            Backend::Postgres(pool) => {
                let options = pool.connect_options();
                format!(
                    "postgres {}:{}/{}",
                    options.get_host(),
                    options.get_port(),
                    options.get_database().unwrap_or("")
                )
            }
        }
    }

    /// The readiness check, hard: can a request get a connection within its budget (judged
    /// from the requests' own acquisitions), is any connection held past the leak bound, does
    /// the database answer? A busy pool passes with a warning.
    pub fn check_spec(&self, name: &str) -> CheckSpec {
        with_pool!(self, pool => CheckSpec::new(
            name,
            Tier::Hard,
            PoolCheck::new(pool.clone())
                .tracker(self.tracker.clone())
                .leak_bound(self.leak_bound),
        ))
    }

    /// The dependency's name in the contract: `sqlite` or `postgres`.
    pub fn dependency(&self) -> &'static str {
        match &self.pool {
            Backend::Sqlite(_) => "sqlite",
            Backend::Postgres(_) => "postgres",
        }
    }

    /// The pool's configured maximum.
    pub fn max_connections(&self) -> u32 {
        with_pool!(self, pool => pool.options().get_max_connections())
    }

    /// Opens a connection outside the pool, pings it and closes it (the boot step's probe of
    /// reachability). Outside the pool so the error is the database's own ("connection
    /// refused"), not the pool's "timed out waiting for a connection".
    pub async fn ping(&self) -> Result<(), sqlx::Error> {
        with_pool!(self, pool => {
            let mut connection = pool.connect_options().connect().await?;
            connection.ping().await?;
            connection.close().await
        })
    }

    /// Applies the schema; requests are served from then on.
    pub async fn migrate(&self) -> Result<(), sqlx::migrate::MigrateError> {
        let applied = match &self.pool {
            Backend::Sqlite(pool) => {
                migrator([
                    include_str!("../migrations/sqlite/0001_orders.sql"),
                    include_str!("../migrations/sqlite/0002_outbox.sql"),
                ])
                .run(pool)
                .await
            }
            Backend::Postgres(pool) => {
                migrator([
                    include_str!("../migrations/postgres/0001_orders.sql"),
                    include_str!("../migrations/postgres/0002_outbox.sql"),
                ])
                .run(pool)
                .await
            }
        };
        if applied.is_ok() {
            self.migrated.store(true, Ordering::Release);
        }
        applied
    }

    /// Stores an order and its outbox row in one transaction; returns the order as stored.
    pub async fn create_order(&self, customer: &str, items: &[Item]) -> Result<Order, DbError> {
        let total: i64 = items
            .iter()
            .map(|item| item.quantity.saturating_mul(item.price_cents))
            .fold(0, i64::saturating_add);
        let query = |error: sqlx::Error| DbError::from_sqlx(&error, false);
        let order = with_pool!(self, pool => {
            let mut connection = self.acquire(pool).await?;
            let mut transaction = connection.begin().await.map_err(query)?;
            let (id, created_at): (i64, String) = sqlx::query_as(
                "INSERT INTO orders (customer, total_cents) VALUES ($1, $2) RETURNING id, created_at",
            )
            .bind(customer)
            .bind(total)
            .fetch_one(&mut *transaction)
            .await
            .map_err(query)?;
            for (line, item) in items.iter().enumerate() {
                sqlx::query(
                    "INSERT INTO order_items (order_id, line, sku, quantity, price_cents) VALUES ($1, $2, $3, $4, $5)",
                )
                .bind(id)
                .bind(line as i64)
                .bind(&item.sku)
                .bind(item.quantity)
                .bind(item.price_cents)
                .execute(&mut *transaction)
                .await
                .map_err(query)?;
            }
            let order = Order {
                id,
                customer: customer.to_owned(),
                items: items.to_vec(),
                total_cents: total,
                created_at,
            };
            // The event the relay publishes: committed with the order or not at all.
            let payload = serde_json::to_string(&order)
                .map_err(|error| DbError::Query(format!("cannot encode the order: {error}")))?;
            sqlx::query("INSERT INTO outbox (order_id, payload) VALUES ($1, $2)")
                .bind(id)
                .bind(payload)
                .execute(&mut *transaction)
                .await
                .map_err(query)?;
            transaction.commit().await.map_err(query)?;
            order
        });
        Ok(order)
    }

    /// Up to `limit` outbox rows not yet published, oldest first.
    pub async fn unpublished(&self, limit: i64) -> Result<Vec<OutboxRow>, DbError> {
        let rows: Vec<(i64, i64, String)> = with_pool!(self, pool => {
            let mut connection = self.acquire(pool).await?;
            sqlx::query_as(
                "SELECT id, order_id, payload FROM outbox WHERE published_at IS NULL ORDER BY id LIMIT $1",
            )
            .bind(limit)
            .fetch_all(&mut *connection)
            .await
            .map_err(|error| DbError::from_sqlx(&error, false))?
        });
        Ok(rows
            .into_iter()
            .map(|(id, order_id, payload)| OutboxRow {
                id,
                order_id,
                payload,
            })
            .collect())
    }

    /// Marks outbox row `id` published (the broker confirmed it).
    pub async fn mark_published(&self, id: i64) -> Result<(), DbError> {
        with_pool!(self, pool => {
            let mut connection = self.acquire(pool).await?;
            sqlx::query("UPDATE outbox SET published_at = CURRENT_TIMESTAMP WHERE id = $1")
                .bind(id)
                .execute(&mut *connection)
                .await
                .map_err(|error| DbError::from_sqlx(&error, false))?;
        });
        Ok(())
    }

    /// How many outbox rows wait to be published.
    pub async fn outbox_backlog(&self) -> Result<i64, DbError> {
        self.count("SELECT COUNT(*) FROM outbox WHERE published_at IS NULL")
            .await
    }

    /// The one number a `SELECT COUNT(*) …` answers.
    async fn count(&self, query: &'static str) -> Result<i64, DbError> {
        let (count,): (i64,) = with_pool!(self, pool => {
            let mut connection = self.acquire(pool).await?;
            sqlx::query_as(query)
                .fetch_one(&mut *connection)
                .await
                .map_err(|error| DbError::from_sqlx(&error, false))?
        });
        Ok(count)
    }

    /// How many orders are stored.
    pub async fn order_count(&self) -> Result<i64, DbError> {
        self.count("SELECT COUNT(*) FROM orders").await
    }

    /// The order numbered `id`, if there is one.
    pub async fn order(&self, id: i64) -> Result<Option<Order>, DbError> {
        let query = |error: sqlx::Error| DbError::from_sqlx(&error, false);
        with_pool!(self, pool => {
            let mut connection = self.acquire(pool).await?;
            let head: Option<(String, i64, String)> = sqlx::query_as(
                "SELECT customer, total_cents, created_at FROM orders WHERE id = $1",
            )
            .bind(id)
            .fetch_optional(&mut *connection)
            .await
            .map_err(query)?;
            let Some((customer, total_cents, created_at)) = head else {
                return Ok(None);
            };
            let lines: Vec<(String, i64, i64)> = sqlx::query_as(
                "SELECT sku, quantity, price_cents FROM order_items WHERE order_id = $1 ORDER BY line",
            )
            .bind(id)
            .fetch_all(&mut *connection)
            .await
            .map_err(query)?;
            Ok(Some(Order {
                id,
                customer,
                items: lines
                    .into_iter()
                    .map(|(sku, quantity, price_cents)| Item { sku, quantity, price_cents })
                    .collect(),
                total_cents,
                created_at,
            }))
        })
    }

    /// The most ordered products.
    pub async fn popular(&self, limit: i64) -> Result<Vec<Popular>, DbError> {
        let rows: Vec<(String, i64)> = with_pool!(self, pool => {
            let mut connection = self.acquire(pool).await?;
            sqlx::query_as(
                "SELECT sku, CAST(SUM(quantity) AS BIGINT) AS ordered FROM order_items GROUP BY sku ORDER BY ordered DESC, sku LIMIT $1",
            )
            .bind(limit)
            .fetch_all(&mut *connection)
            .await
            .map_err(|error| DbError::from_sqlx(&error, false))?
        });
        Ok(rows
            .into_iter()
            .map(|(sku, ordered)| Popular { sku, ordered })
            .collect())
    }

    /// A connection for a request, through the tracker.
    async fn acquire<DB: sqlx::Database>(
        &self,
        pool: &Pool<DB>,
    ) -> Result<TrackedConnection<DB>, DbError> {
        if !self.migrated.load(Ordering::Acquire) {
            return Err(DbError::Starting);
        }
        acquire(pool, &self.tracker)
            .await
            .map_err(|error| DbError::from_sqlx(&error, true))
    }

    /// Takes a connection out of the pool and keeps it (the leak fault), through the tracker
    /// like any request, so the leak bound sees it.
    pub async fn hold(&self, wait: Duration) -> Result<HeldConnection, DbError> {
        // Under load the fault waits in line with the requests, and may time out in the
        // pool's acquire timeout more than once before its turn comes.
        let held = async {
            loop {
                let attempt = match &self.pool {
                    Backend::Sqlite(pool) => acquire(pool, &self.tracker)
                        .await
                        .map(HeldConnection::Sqlite),
                    Backend::Postgres(pool) => acquire(pool, &self.tracker)
                        .await
                        .map(HeldConnection::Postgres),
                };
                match attempt {
                    Err(sqlx::Error::PoolTimedOut) => continue,
                    other => return other.map_err(|error| DbError::from_sqlx(&error, true)),
                }
            }
        };
        tokio::time::timeout(wait, held).await.unwrap_or_else(|_| {
            Err(DbError::Unavailable(
                "timed out waiting for a pooled connection".into(),
            ))
        })
    }

    /// Closes the pool.
    pub async fn close(&self) {
        with_pool!(self, pool => pool.close().await)
    }
}

fn pool_options<DB: sqlx::Database>(size: u32, acquire_timeout: Duration) -> PoolOptions<DB> {
    PoolOptions::new()
        .max_connections(size)
        .min_connections(0)
        .acquire_timeout(acquire_timeout)
        // A connection found broken on checkout is replaced rather than handed to a request.
        .test_before_acquire(true)
}

/// Parses a PostgreSQL URL into connect options; the error never repeats the password.
pub fn postgres_options(url: &str) -> anyhow::Result<PgConnectOptions> {
    PgConnectOptions::from_str(url).map_err(|error| {
        anyhow::anyhow!(
            "--database-url `{}` is not a valid PostgreSQL URL: {}",
            redact(url),
            redact(&error.to_string())
        )
    })
}

/// The migrations, in order: `0001_orders`, `0002_outbox`.
fn migrator(sql: [&'static str; 2]) -> Migrator {
    let names = ["orders", "outbox"];
    Migrator::with_migrations(
        sql.into_iter()
            .zip(names)
            .zip(1..)
            .map(|((sql, name), version)| {
                Migration::new(
                    version,
                    name.into(),
                    MigrationType::Simple,
                    sql.into_sql_str(),
                    false,
                )
            })
            .collect(),
    )
}

/// Whether an error means the database (or the pool) cannot serve, as opposed to a problem
/// with one query: the pool, the connection or the server's state, never the statement.
pub fn is_unavailable(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(database) => {
            database.code().is_some_and(|code| unavailable_code(&code))
        }
        _ => false,
    }
}

/// SQLSTATE classes and codes that say the server cannot be used now, rather than that the
/// statement is wrong: connection exceptions (08), invalid authorization (28), insufficient
/// resources (53: too many connections, out of memory, disk full), operator intervention (57:
/// shutting down, cannot connect now), and SQLite's busy/locked/I/O codes.
fn unavailable_code(code: &str) -> bool {
    code.starts_with("08")
        || code.starts_with("28")
        || code.starts_with("53")
        || code.starts_with("57")
        || code == "3D000" // the database does not exist (yet)
        // SQLite: SQLITE_BUSY 5, SQLITE_LOCKED 6, SQLITE_IOERR 10, SQLITE_CANTOPEN 14, and
        // their extended codes (low byte).
        || code
            .parse::<u32>()
            .is_ok_and(|code| matches!(code & 0xff, 5 | 6 | 10 | 14))
}

impl Database {
    /// Reports a database outcome to the `db` check: only "the database cannot be used" counts
    /// as a failure. A rejected statement says nothing about the dependency, and an acquire
    /// timeout while connections are still being given back is load: reporting it would drain
    /// a busy instance, shifting its load onto the rest of the fleet until they drain too.
    pub fn report<T>(&self, reporter: &Reporter, outcome: &Result<T, DbError>) {
        match outcome {
            Ok(_) => reporter.success(),
            Err(DbError::PoolTimeout) => {
                if self.tracker.released_within(self.acquire_timeout) {
                    return;
                }
                // sqlx retries a refused connect until the acquire timeout, so a database that
                // is down times requests out too. The requests' own connections tell the two
                // apart: held to the pool's size, the pool is exhausted by this instance (its
                // own fault, which drains it whatever the fallback); fewer, and it could not
                // open one — the database does not answer, as for every instance.
                if self.tracker.held() >= self.max_connections() as usize {
                    reporter.failure("no pooled connection given back within the acquire timeout");
                } else {
                    reporter
                        .failure("could not open a database connection within the acquire timeout");
                }
            }
            Err(DbError::Unavailable(reason)) => reporter.failure(reason),
            Err(DbError::Query(_) | DbError::Starting) => {}
        }
    }
}

/// A sqlx error in words, redacted.
pub fn describe(error: &sqlx::Error) -> String {
    let text = match error {
        sqlx::Error::PoolTimedOut => "timed out waiting for a pooled connection".to_owned(),
        sqlx::Error::PoolClosed => "the pool is closed".to_owned(),
        other => other.to_string(),
    };
    redact(&text).into_owned()
}
