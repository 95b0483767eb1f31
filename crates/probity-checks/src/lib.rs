//! # probity-checks — readiness checks for the dependencies services actually run
//!
//! Each check does one honest poll of one dependency and implements [`probity::Check`]: it
//! names its dependency ([`Check::dependency`](probity::Check::dependency): `postgres`,
//! `redis`…), suggests the interval and timeout it works well with
//! ([`Check::default_timing`](probity::Check::default_timing)), and reports measurements for
//! the `application/health+json` output. probity's poller enforces the timeout, so a check
//! that hangs becomes `timed out after 1s`, never a stuck probe.
//!
//! Connection pools are checked for **service**, not only reachability, and not occupancy: a
//! `SELECT 1` passes on a pool whose every connection has leaked, as long as the check itself
//! gets one; and a pool with every connection in use is not broken — under load that is a pool
//! doing its job. The pool checks ask what a request asks: *can I get a connection within my
//! budget?* They fail when the answer is no (exhausted, leaked, unreachable) and pass with a
//! warning when the pool is merely busy (see [`pool`]).
//!
//! Error messages say what failed and where (`connection refused (127.0.0.1:5432)`,
//! `no connection within 300ms: 5 of 5 in use, 3 waiting`) and never carry a password.
//!
//! ## Example
//!
//! ```no_run
//! # #[cfg(feature = "sqlx-postgres")]
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use probity::{CheckSpec, Health, Tier};
//! use probity_checks::sqlx_pool::PoolCheck;
//!
//! let pool = sqlx::PgPool::connect("postgres://app@db/orders").await?;
//! let health = Health::builder()
//!     .service("orders")
//!     .check(CheckSpec::new("db", Tier::Hard, PoolCheck::new(pool.clone()).warn_above(90.0)))
//!     .build()?;
//! health.start()?;
//! # Ok(())
//! # }
//! ```
//!
//! ## Cargo features
//!
//! Every backend is behind its own feature; none is on by default, and `all` enables every
//! one. Clients are built without a TLS stack; an application that needs TLS enables its
//! client crate's TLS feature in its own manifest, and cargo unifies the features.
//!
//! | feature | module | checks | fails when |
//! |---|---|---|---|
//! | `sqlx-postgres`, `sqlx-mysql`, `sqlx-sqlite` | [`sqlx_pool`] | `PoolCheck<Postgres / MySql / Sqlite>` | no connection within the acquire budget, tracked connections held past the leak bound, the database does not answer; busy warns |
//! | `deadpool-postgres` | [`deadpool`] | `PoolCheck` | same, with the pool's own waiter count |
//! | `bb8-postgres` | [`bb8_pool`] | `PoolCheck<Tls>` | same, from bb8's `pending_gets` |
//! | `tokio-postgres` | [`postgres`] | `ClientCheck`, `ConnectionCheck` | the client's connection is closed or does not answer |
//! | `mysql-async` | [`mysql_async_pool`] | `PoolCheck` | same, from `active_wait_requests` |
//! | `redis` | [`redis_ping`] | `RedisCheck` | `PING` does not get `PONG` |
//! | `fred` | [`fred_client`] | `FredCheck` | fred not `Connected`, too many commands queued unsent, or `PING` does not get `PONG` |
//! | `lapin` | [`rabbitmq`] | `RabbitCheck` | not connected, blocked by a resource alarm, reconnecting |
//! | `nats` | [`nats`] | `NatsCheck` | not connected, or the flush round trip fails |
//! | `mqtt` | [`mqtt`] | `MqttCheck` + `MqttStatus` | no accepted session with the broker, or silence past a limit |
//! | `http` (`http-tls` for `https://`) | [`http_endpoint`] | `HttpCheck` | unexpected status, cross-host redirect, body over the cap, an untrusted or misnamed certificate |
//! | `tcp` | [`tcp`] | `TcpCheck` | connect fails, or the expected banner does not come |
//! | `dns` | [`dns`] | `DnsCheck` | the name does not resolve to enough addresses |
//! | `disk` | [`disk`] | `DiskCheck` | free space or inodes below the minimum |
//! | `jwks` | [`jwks`] | `JwksCheck` + `KeyCache` | cached signing keys older than their allowed age |
//! | `grpc-health` | [`grpc_health`] | `GrpcHealthCheck` | a downstream `grpc.health.v1` answers NOT_SERVING, has no health service (UNIMPLEMENTED), does not know the service, or does not answer in time |
//! | `tls-expiry` | [`tls_expiry`] | `TlsExpiryCheck` | the endpoint's certificate expires within the failure margin (warns within the warning margin), is untrusted or misnamed |
//! | `memcached` | [`memcached`] | `MemcachedCheck` | `stats` does not answer, or the server accepts no new connections; near its connection limit warns |
//! | `etcd` | [`etcd`] | `EtcdCheck` | `/health` is false (the alarm or the missing leader named), or the member does not answer |
//!
//! The module docs hold an example per backend: databases ([`sqlx_pool`], [`deadpool`], [`bb8_pool`],
//! [`postgres`], [`mysql_async_pool`]), caches and brokers ([`redis_ping`], [`rabbitmq`], [`nats`],
//! [`mqtt`]), network ([`http_endpoint`], [`tcp`], [`dns`]) and local state ([`disk`], [`jwks`]).
//!
//! ## Timing
//!
//! Each check's [`default_timing`](probity::Check::default_timing) is used when its
//! `CheckSpec` sets no interval or timeout: 2 s / 1 s for pool gauges and warm connections,
//! 5 s / 2 s for checks that open a connection per poll, 30 s for disk. Every check that
//! crosses a network suggests a fall threshold of [`NETWORK_FALL`] (2 failed polls in a row);
//! local checks keep 1. The tier stays the application's choice: the same Redis is `Hard` for a
//! session store and `Soft` for a cache.

//!
// The module links resolve within these docs when the module is built, and to docs.rs (where
// every feature is on) when its feature is off, so the docs build cleanly with any feature set.
#![cfg_attr(feature = "_sqlx", doc = "[`sqlx_pool`]: crate::sqlx_pool")]
#![cfg_attr(
    not(feature = "_sqlx"),
    doc = "[`sqlx_pool`]: https://docs.rs/probity-checks/latest/probity_checks/sqlx_pool/"
)]
#![cfg_attr(feature = "deadpool-postgres", doc = "[`deadpool`]: crate::deadpool")]
#![cfg_attr(
    not(feature = "deadpool-postgres"),
    doc = "[`deadpool`]: https://docs.rs/probity-checks/latest/probity_checks/deadpool/"
)]
#![cfg_attr(feature = "bb8-postgres", doc = "[`bb8_pool`]: crate::bb8_pool")]
#![cfg_attr(
    not(feature = "bb8-postgres"),
    doc = "[`bb8_pool`]: https://docs.rs/probity-checks/latest/probity_checks/bb8_pool/"
)]
#![cfg_attr(feature = "_postgres", doc = "[`postgres`]: crate::postgres")]
#![cfg_attr(
    not(feature = "_postgres"),
    doc = "[`postgres`]: https://docs.rs/probity-checks/latest/probity_checks/postgres/"
)]
#![cfg_attr(
    feature = "mysql-async",
    doc = "[`mysql_async_pool`]: crate::mysql_async_pool"
)]
#![cfg_attr(
    not(feature = "mysql-async"),
    doc = "[`mysql_async_pool`]: https://docs.rs/probity-checks/latest/probity_checks/mysql_async_pool/"
)]
#![cfg_attr(feature = "redis", doc = "[`redis_ping`]: crate::redis_ping")]
#![cfg_attr(
    not(feature = "redis"),
    doc = "[`redis_ping`]: https://docs.rs/probity-checks/latest/probity_checks/redis_ping/"
)]
#![cfg_attr(feature = "fred", doc = "[`fred_client`]: crate::fred_client")]
#![cfg_attr(
    not(feature = "fred"),
    doc = "[`fred_client`]: https://docs.rs/probity-checks/latest/probity_checks/fred_client/"
)]
#![cfg_attr(feature = "lapin", doc = "[`rabbitmq`]: crate::rabbitmq")]
#![cfg_attr(
    not(feature = "lapin"),
    doc = "[`rabbitmq`]: https://docs.rs/probity-checks/latest/probity_checks/rabbitmq/"
)]
#![cfg_attr(feature = "nats", doc = "[`nats`]: crate::nats")]
#![cfg_attr(
    not(feature = "nats"),
    doc = "[`nats`]: https://docs.rs/probity-checks/latest/probity_checks/nats/"
)]
#![cfg_attr(feature = "mqtt", doc = "[`mqtt`]: crate::mqtt")]
#![cfg_attr(
    not(feature = "mqtt"),
    doc = "[`mqtt`]: https://docs.rs/probity-checks/latest/probity_checks/mqtt/"
)]
#![cfg_attr(feature = "http", doc = "[`http_endpoint`]: crate::http_endpoint")]
#![cfg_attr(
    not(feature = "http"),
    doc = "[`http_endpoint`]: https://docs.rs/probity-checks/latest/probity_checks/http_endpoint/"
)]
#![cfg_attr(feature = "tcp", doc = "[`tcp`]: crate::tcp")]
#![cfg_attr(
    not(feature = "tcp"),
    doc = "[`tcp`]: https://docs.rs/probity-checks/latest/probity_checks/tcp/"
)]
#![cfg_attr(feature = "dns", doc = "[`dns`]: crate::dns")]
#![cfg_attr(
    not(feature = "dns"),
    doc = "[`dns`]: https://docs.rs/probity-checks/latest/probity_checks/dns/"
)]
#![cfg_attr(feature = "disk", doc = "[`disk`]: crate::disk")]
#![cfg_attr(
    not(feature = "disk"),
    doc = "[`disk`]: https://docs.rs/probity-checks/latest/probity_checks/disk/"
)]
#![cfg_attr(feature = "jwks", doc = "[`jwks`]: crate::jwks")]
#![cfg_attr(
    not(feature = "jwks"),
    doc = "[`jwks`]: https://docs.rs/probity-checks/latest/probity_checks/jwks/"
)]
#![cfg_attr(feature = "grpc-health", doc = "[`grpc_health`]: crate::grpc_health")]
#![cfg_attr(
    not(feature = "grpc-health"),
    doc = "[`grpc_health`]: https://docs.rs/probity-checks/latest/probity_checks/grpc_health/"
)]
#![cfg_attr(feature = "tls-expiry", doc = "[`tls_expiry`]: crate::tls_expiry")]
#![cfg_attr(
    not(feature = "tls-expiry"),
    doc = "[`tls_expiry`]: https://docs.rs/probity-checks/latest/probity_checks/tls_expiry/"
)]
#![cfg_attr(feature = "memcached", doc = "[`memcached`]: crate::memcached")]
#![cfg_attr(
    not(feature = "memcached"),
    doc = "[`memcached`]: https://docs.rs/probity-checks/latest/probity_checks/memcached/"
)]
#![cfg_attr(feature = "etcd", doc = "[`etcd`]: crate::etcd")]
#![cfg_attr(
    not(feature = "etcd"),
    doc = "[`etcd`]: https://docs.rs/probity-checks/latest/probity_checks/etcd/"
)]
#![cfg_attr(docsrs, feature(doc_cfg))]

// Shared by the backends; with only some of them built, some helpers go unused.
#[cfg_attr(not(feature = "all"), allow(dead_code))]
mod error;
pub mod pool;

#[cfg(feature = "_sqlx")]
pub mod sqlx_pool;

#[cfg(feature = "bb8-postgres")]
pub mod bb8_pool;
#[cfg(feature = "deadpool-postgres")]
pub mod deadpool;
#[cfg(feature = "_postgres")]
pub mod postgres;

#[cfg(feature = "mysql-async")]
pub mod mysql_async_pool;

#[cfg(feature = "redis")]
pub mod redis_ping;

#[cfg(feature = "fred")]
pub mod fred_client;

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
pub mod http_endpoint;
#[cfg(feature = "jwks")]
pub mod jwks;
#[cfg(feature = "tcp")]
pub mod tcp;

#[cfg(feature = "etcd")]
pub mod etcd;
#[cfg(feature = "grpc-health")]
pub mod grpc_health;
#[cfg(feature = "memcached")]
pub mod memcached;
#[cfg(feature = "tls-expiry")]
pub mod tls_expiry;

/// How many failed polls in a row a check that crosses a network needs before it counts as
/// unhealthy, unless its `CheckSpec` says otherwise
/// ([`Check::default_fall`](probity::Check::default_fall)).
///
/// A network round trip's latency depends on load — the dependency's, the network's, this
/// process's scheduler — so one poll cut by its timeout on a busy machine is a sample, not an
/// outage; two in a row are evidence. At the default cadences a real outage still drains within
/// one interval plus a poll of the first failure, and passive reports of real request failures
/// fail a check at once. Local checks (disk, JWKS key age) keep the core's default of 1: their
/// answer does not depend on load.
pub const NETWORK_FALL: u32 = 2;

/// Milliseconds with one decimal, for `*_time` measurements.
#[allow(dead_code)]
pub(crate) fn millis(duration: std::time::Duration) -> f64 {
    (duration.as_secs_f64() * 10_000.0).round() / 10.0
}

/// The READMEs' Rust examples — this crate's, and those of the surfaces it is tested through —
/// compiled as doc tests so the crates.io pages cannot drift from the API.
#[cfg(all(doctest, feature = "sqlx-postgres"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(doctest)]
#[doc = include_str!("../../probity-axum/README.md")]
struct AxumReadmeDoctests;

#[cfg(doctest)]
#[doc = include_str!("../../probity-grpc/README.md")]
struct GrpcReadmeDoctests;

/// The core's README (its crates.io page) and the repository's: both mount the probes with
/// probity-axum, which the core does not depend on, so they are compiled here.
#[cfg(doctest)]
#[doc = include_str!("../../probity/README.md")]
struct CoreReadmeDoctests;

#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct RepositoryReadmeDoctests;
