//! PostgreSQL over tokio-postgres: the application's own client, or a connection the check
//! keeps.
//!
//! - [`ClientCheck`] watches a `tokio_postgres::Client` the application uses: when that client's
//!   connection is gone, every query through it fails, so the check fails too (`connection
//!   closed`), until the application replaces the client.
//! - [`ConnectionCheck`] keeps a connection of its own, made from a `tokio_postgres::Config`
//!   (without TLS): it proves the server accepts and answers connections, and reconnects when
//!   its connection was closed (a server restart, `pg_terminate_backend`).
//!
//! Both use the protocol's cheapest round trip (`check_connection`, a `Sync` message), not a
//! query. For pools, see [`deadpool`], [`bb8_pool`] and [`sqlx_pool`], which check capacity as
//! well.
//!
//! ```no_run
//! use probity::{CheckSpec, Tier};
//! use probity_checks::postgres::ConnectionCheck;
//!
//! # fn build() -> Result<(), tokio_postgres::Error> {
//! let config: tokio_postgres::Config = "host=db user=app dbname=orders".parse()?;
//! let spec = CheckSpec::new("db", Tier::Hard, ConnectionCheck::new(config));
//! # let _ = spec;
//! # Ok(())
//! # }
//! ```
//!
//! Errors read `connection refused (db:5432)`, `connection closed`, `database error [3D000]
//! (db:5432): database "orders" does not exist`. Connection strings and passwords never
//! appear.
//!
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
#![cfg_attr(feature = "_sqlx", doc = "[`sqlx_pool`]: crate::sqlx_pool")]
#![cfg_attr(
    not(feature = "_sqlx"),
    doc = "[`sqlx_pool`]: https://docs.rs/probity-checks/latest/probity_checks/sqlx_pool/"
)]

use crate::error::{chain, describe_io, find_io};
use crate::millis;
use probity::redact::redact;
use probity::{Check, CheckError, CheckFuture, CheckResult, Detail, Timing};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;
use tokio::time::Instant;
use tokio_postgres::config::Host;
use tokio_postgres::{Client, Config, NoTls};

/// Interval and timeout for a tokio-postgres check: one round trip on a warm connection.
///
/// Interval 2 s, timeout 1 s.
pub const DEFAULT_TIMING: Timing = Timing {
    interval: Duration::from_secs(2),
    timeout: Duration::from_secs(1),
};

/// `host:port` of a config, for error messages (`db:5432`, or `db1:5432,db2:5432`).
pub fn target_of(config: &Config) -> String {
    let ports = config.get_ports();
    config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(index, host)| {
            let port = ports
                .get(index)
                .or_else(|| ports.first())
                .copied()
                .unwrap_or(5432);
            match host {
                Host::Tcp(name) => format!("{name}:{port}"),
                #[cfg(unix)]
                Host::Unix(path) => format!("{}/.s.PGSQL.{port}", path.display()),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// A tokio-postgres error in words, with where it happened (when known) and no credentials.
pub(crate) fn describe(error: &tokio_postgres::Error, target: Option<&str>) -> String {
    let place = target
        .map(|target| format!(" ({target})"))
        .unwrap_or_default();
    if let Some(database) = error.as_db_error() {
        return format!(
            "database error [{}]{place}: {}",
            database.code().code(),
            redact(database.message())
        );
    }
    if let Some(io) = find_io(error) {
        return describe_io(io, target.unwrap_or("postgres"));
    }
    if error.is_closed() {
        return format!("connection closed{place}");
    }
    format!("{}{place}", chain(error))
}

/// The application's `tokio_postgres::Client`: fails once its connection is closed or stops
/// answering.
///
/// Measurement: `response_time` (ms).
pub struct ClientCheck {
    client: Arc<Client>,
    target: Option<String>,
}

impl ClientCheck {
    /// A check of `client`, shared with the application.
    pub fn new(client: Arc<Client>) -> Self {
        Self {
            client,
            target: None,
        }
    }

    /// Names where the client connects in error messages (e.g. from [`target_of`]).
    pub fn target(mut self, target: impl Into<String>) -> Self {
        self.target = Some(target.into());
        self
    }

    async fn poll(&self) -> CheckResult {
        let place = self
            .target
            .as_deref()
            .map(|target| format!(" ({target})"))
            .unwrap_or_default();
        if self.client.is_closed() {
            return Err(CheckError::new(format!("connection closed{place}")));
        }
        let started = Instant::now();
        self.client
            .check_connection()
            .await
            .map_err(|error| CheckError::new(describe(&error, self.target.as_deref())))?;
        Ok(Detail::new().measurement("response_time", millis(started.elapsed()), Some("ms")))
    }
}

impl Check for ClientCheck {
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
        Some(crate::NETWORK_FALL)
    }
}

impl fmt::Debug for ClientCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientCheck")
            .field("closed", &self.client.is_closed())
            .field("target", &self.target)
            .finish()
    }
}

/// A connection of the check's own (no TLS): reconnects when it was closed, so it answers
/// "does the server accept and answer connections now".
///
/// Measurement: `response_time` (ms).
pub struct ConnectionCheck {
    config: Config,
    target: String,
    client: Mutex<Option<Client>>,
}

impl ConnectionCheck {
    /// A check connecting with `config`.
    pub fn new(config: Config) -> Self {
        let target = target_of(&config);
        Self {
            config,
            target,
            client: Mutex::new(None),
        }
    }

    async fn connect(&self) -> Result<Client, CheckError> {
        let (client, connection) = self
            .config
            .connect(NoTls)
            .await
            .map_err(|error| CheckError::new(describe(&error, Some(&self.target))))?;
        tokio::spawn(async move {
            // Ends when the client is dropped or the server closes the connection; the next
            // poll sees `is_closed` and reconnects.
            let _ = connection.await;
        });
        Ok(client)
    }

    async fn poll(&self) -> CheckResult {
        let started = Instant::now();
        let mut cached = self.client.lock().await;
        let mut reconnected = false;
        if cached.as_ref().is_none_or(Client::is_closed) {
            *cached = Some(self.connect().await?);
            reconnected = true;
        }
        let Some(client) = cached.as_ref() else {
            return Err(CheckError::new("no connection"));
        };
        let mut message = None;
        if let Err(error) = client.check_connection().await {
            // The kept connection went bad between polls: one fresh attempt tells a dead
            // connection from a dead server.
            let broken = describe(&error, Some(&self.target));
            cached.take();
            if reconnected {
                return Err(CheckError::new(broken));
            }
            let client = self.connect().await?;
            client
                .check_connection()
                .await
                .map_err(|error| CheckError::new(describe(&error, Some(&self.target))))?;
            *cached = Some(client);
            message = Some(format!(
                "replaced a broken connection ({broken}), the new one answered"
            ));
        }
        let mut detail =
            Detail::new().measurement("response_time", millis(started.elapsed()), Some("ms"));
        if let Some(message) = message {
            detail = detail.message(message);
        }
        Ok(detail)
    }
}

impl Check for ConnectionCheck {
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
        Some(crate::NETWORK_FALL)
    }
}

impl fmt::Debug for ConnectionCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionCheck")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}
