//! The orders database: embedded SQLite by default, PostgreSQL on request, one small pool.
//!
//! The pool is created **lazily** (no connection at construction), so the service can bind its
//! listeners and answer `/startupz` while the database is still unreachable; the boot step
//! connects with backoff. Requests wait at most `--acquire-timeout` for a connection: an
//! exhausted pool answers 503 quickly instead of queueing requests behind a leak.

use crate::config::DatabaseTarget;
use anyhow::Context;
use probity::redact::redact;
use probity::{CheckSpec, Reporter, Tier};
use probity_checks::sqlx::PoolCheck;
use serde::{Deserialize, Serialize};
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::pool::{PoolConnection, PoolOptions};
use sqlx::postgres::{PgConnectOptions, Postgres};
use sqlx::sqlite::{Sqlite, SqliteConnectOptions, SqliteJournalMode};
use sqlx::{ConnectOptions, Connection, Pool, SqlSafeStr};
use std::str::FromStr;
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
    Sqlite(PoolConnection<Sqlite>),
    /// PostgreSQL.
    Postgres(PoolConnection<Postgres>),
}

/// The pool, of either backend.
#[derive(Debug, Clone)]
pub enum Database {
    /// Embedded SQLite.
    Sqlite(Pool<Sqlite>),
    /// PostgreSQL.
    Postgres(Pool<Postgres>),
}

/// Runs the same code against either pool (the SQL is portable: `$n` placeholders work in
/// both, and so does `RETURNING`).
macro_rules! with_pool {
    ($database:expr, $pool:ident => $body:expr) => {
        match $database {
            Database::Sqlite($pool) => $body,
            Database::Postgres($pool) => $body,
        }
    };
}

impl Database {
    /// A pool that connects on first use.
    pub fn lazy(
        target: &DatabaseTarget,
        pool_size: u32,
        acquire_timeout: Duration,
    ) -> anyhow::Result<Database> {
        Ok(match target {
            DatabaseTarget::Sqlite(path) => {
                let options = SqliteConnectOptions::new()
                    .filename(path)
                    .create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal)
                    .busy_timeout(Duration::from_secs(2))
                    .foreign_keys(true);
                Database::Sqlite(
                    pool_options(pool_size, acquire_timeout).connect_lazy_with(options),
                )
            }
            DatabaseTarget::Postgres(url) => {
                let options = PgConnectOptions::from_str(url).map_err(|error| {
                    anyhow::anyhow!(
                        "--database-url `{}` is not a valid PostgreSQL URL: {}",
                        redact(url),
                        redact(&error.to_string())
                    )
                })?;
                Database::Postgres(
                    pool_options(pool_size, acquire_timeout).connect_lazy_with(options),
                )
            }
        })
    }

    /// Creates the SQLite file's directory (nothing to do for PostgreSQL).
    pub fn prepare(&self) -> anyhow::Result<()> {
        if let Database::Sqlite(pool) = self {
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
        match self {
            Database::Sqlite(pool) => {
                format!("sqlite {}", pool.connect_options().get_filename().display())
            }
            Database::Postgres(pool) => {
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

    /// The readiness check, hard: pool capacity first (no connection available fails, which
    /// is what a leak looks like), then reachability without queueing behind the pool.
    pub fn check_spec(&self, name: &str) -> CheckSpec {
        match self {
            Database::Sqlite(pool) => {
                CheckSpec::new(name, Tier::Hard, PoolCheck::new(pool.clone()))
            }
            Database::Postgres(pool) => {
                CheckSpec::new(name, Tier::Hard, PoolCheck::new(pool.clone()))
            }
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

    /// Applies the schema.
    pub async fn migrate(&self) -> Result<(), sqlx::migrate::MigrateError> {
        match self {
            Database::Sqlite(pool) => {
                migrator(include_str!("../migrations/sqlite/0001_orders.sql"))
                    .run(pool)
                    .await
            }
            Database::Postgres(pool) => {
                migrator(include_str!("../migrations/postgres/0001_orders.sql"))
                    .run(pool)
                    .await
            }
        }
    }

    /// Stores an order; returns it as stored.
    pub async fn create_order(&self, customer: &str, items: &[Item]) -> Result<Order, sqlx::Error> {
        let total: i64 = items
            .iter()
            .map(|item| item.quantity.saturating_mul(item.price_cents))
            .fold(0, i64::saturating_add);
        let (id, created_at) = with_pool!(self, pool => {
            let mut transaction = pool.begin().await?;
            let (id, created_at): (i64, String) = sqlx::query_as(
                "INSERT INTO orders (customer, total_cents) VALUES ($1, $2) RETURNING id, created_at",
            )
            .bind(customer)
            .bind(total)
            .fetch_one(&mut *transaction)
            .await?;
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
                .await?;
            }
            transaction.commit().await?;
            (id, created_at)
        });
        Ok(Order {
            id,
            customer: customer.to_owned(),
            items: items.to_vec(),
            total_cents: total,
            created_at,
        })
    }

    /// The order numbered `id`, if there is one.
    pub async fn order(&self, id: i64) -> Result<Option<Order>, sqlx::Error> {
        with_pool!(self, pool => {
            let mut connection = pool.acquire().await?;
            let head: Option<(String, i64, String)> = sqlx::query_as(
                "SELECT customer, total_cents, created_at FROM orders WHERE id = $1",
            )
            .bind(id)
            .fetch_optional(&mut *connection)
            .await?;
            let Some((customer, total_cents, created_at)) = head else {
                return Ok(None);
            };
            let lines: Vec<(String, i64, i64)> = sqlx::query_as(
                "SELECT sku, quantity, price_cents FROM order_items WHERE order_id = $1 ORDER BY line",
            )
            .bind(id)
            .fetch_all(&mut *connection)
            .await?;
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
    pub async fn popular(&self, limit: i64) -> Result<Vec<Popular>, sqlx::Error> {
        let rows: Vec<(String, i64)> = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT sku, CAST(SUM(quantity) AS BIGINT) AS ordered FROM order_items GROUP BY sku ORDER BY ordered DESC, sku LIMIT $1",
            )
            .bind(limit)
            .fetch_all(pool)
            .await?
        });
        Ok(rows
            .into_iter()
            .map(|(sku, ordered)| Popular { sku, ordered })
            .collect())
    }

    /// Takes a connection out of the pool and keeps it (the leak fault).
    pub async fn hold(&self, wait: Duration) -> Result<HeldConnection, sqlx::Error> {
        let acquire = async {
            Ok(match self {
                Database::Sqlite(pool) => HeldConnection::Sqlite(pool.acquire().await?),
                Database::Postgres(pool) => HeldConnection::Postgres(pool.acquire().await?),
            })
        };
        tokio::time::timeout(wait, acquire)
            .await
            .unwrap_or(Err(sqlx::Error::PoolTimedOut))
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

fn migrator(sql: &'static str) -> Migrator {
    Migrator::with_migrations(vec![Migration::new(
        1,
        "orders".into(),
        MigrationType::Simple,
        sql.into_sql_str(),
        false,
    )])
}

/// Whether an error means the database (or the pool) cannot serve, as opposed to a problem
/// with one query. Only these count as passive failures of the `db` check.
pub fn is_unavailable(error: &sqlx::Error) -> bool {
    matches!(
        error,
        sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::Protocol(_)
            | sqlx::Error::WorkerCrashed
    )
}

/// Reports a database outcome to the `db` check and returns the error in words for the client
/// and the log (never with credentials).
pub fn report<T>(reporter: &Reporter, outcome: &Result<T, sqlx::Error>) {
    match outcome {
        Ok(_) => reporter.success(),
        Err(error) if is_unavailable(error) => reporter.failure(describe(error)),
        Err(_) => {}
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
