//! # probity-checks — readiness checks for the dependencies services actually run
//!
//! Each check does one honest poll of one dependency and implements [`probity::Check`]: it
//! names its dependency ([`Check::dependency`](probity::Check::dependency): `postgres`,
//! `redis`…), suggests the interval and timeout it works well with
//! ([`Check::default_timing`](probity::Check::default_timing)), and reports measurements for
//! the `application/health+json` output. probity's poller enforces the timeout, so a check
//! that hangs becomes `timed out after 1s`, never a stuck probe.
//!
//! Connection pools are checked for **capacity**, not only reachability: a `SELECT 1` passes on
//! a pool whose every connection has leaked, as long as the check itself gets one. The pool
//! checks read the pool's own gauges (see [`pool::Capacity`]), fail when no connection is
//! available, and prove the database answers without queueing behind an exhausted pool.
//!
//! Error messages say what failed and where (`connection refused (127.0.0.1:5432)`,
//! `no connection available: 5 of 5 in use, 3 waiting`) and never carry a password.
//!
//! ## Example
//!
//! ```no_run
//! # #[cfg(feature = "sqlx-postgres")]
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use probity::{CheckSpec, Health, Tier};
//! use probity_checks::sqlx::PoolCheck;
//!
//! let pool = sqlx::PgPool::connect("postgres://app@db/orders").await?;
//! let health = Health::builder()
//!     .service("orders")
//!     .check(CheckSpec::new("db", Tier::Hard, PoolCheck::new(pool.clone()).max_utilization(90.0)))
//!     .build()?;
//! health.start()?;
//! # Ok(())
//! # }
//! ```
//!
//! ## Cargo features
//!
//! Every backend is behind its own feature; none is on by default. `all` enables every one.
//!
//! | feature | module | checks |
//! |---|---|---|
//! | `sqlx-postgres` | [`sqlx`] | `PoolCheck<Postgres>`: `sqlx::PgPool` capacity and reachability |
//! | `sqlx-mysql` | [`sqlx`] | `PoolCheck<MySql>`: `sqlx::MySqlPool` capacity and reachability |
//! | `sqlx-sqlite` | [`sqlx`] | `PoolCheck<Sqlite>`: `sqlx::SqlitePool` capacity and reachability |

#![cfg_attr(docsrs, feature(doc_cfg))]

mod error;
pub mod pool;

#[cfg(feature = "_sqlx")]
pub mod sqlx;

#[cfg(feature = "bb8-postgres")]
pub mod bb8;
#[cfg(feature = "deadpool-postgres")]
pub mod deadpool;
#[cfg(feature = "_postgres")]
pub mod postgres;

#[cfg(feature = "mysql-async")]
pub mod mysql_async;

#[cfg(feature = "redis")]
pub mod redis;

#[cfg(feature = "disk")]
pub mod disk;
#[cfg(feature = "dns")]
pub mod dns;
#[cfg(feature = "lapin")]
pub mod rabbitmq;

#[cfg(feature = "mqtt")]
pub mod mqtt;
#[cfg(feature = "nats")]
pub mod nats;

#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "jwks")]
pub mod jwks;
#[cfg(feature = "tcp")]
pub mod tcp;

/// Milliseconds with one decimal, for `*_time` measurements.
#[allow(dead_code)]
pub(crate) fn millis(duration: std::time::Duration) -> f64 {
    (duration.as_secs_f64() * 10_000.0).round() / 10.0
}
