//! RabbitMQ (lapin): the connection is open, not blocked by a broker resource alarm, and not
//! reconnecting.
//!
//! Two ways to use it:
//!
//! - [`RabbitCheck::connection`] watches the application's own `lapin::Connection`: the state
//!   the application's publishers and consumers actually depend on. It reads the connection's
//!   status (no I/O): `Connection.Blocked` from the broker (a memory or disk alarm: publishes
//!   are held until it clears), a reconnect in progress, or a closed connection fail the check.
//! - [`RabbitCheck::connect`] keeps a connection of its own to a URI, reconnecting when it was
//!   lost, and also proves the broker answers by opening and closing a channel on each poll.
//!
//! ```no_run
//! use probity::{CheckSpec, Tier};
//! use probity_checks::rabbitmq::RabbitCheck;
//! use std::sync::Arc;
//!
//! # async fn build() -> Result<(), lapin::Error> {
//! let connection = Arc::new(
//!     lapin::Connection::connect("amqp://app@broker:5672/%2f", Default::default()).await?,
//! );
//! let spec = CheckSpec::new("broker", Tier::Hard, RabbitCheck::connection(connection.clone()));
//! # let _ = spec;
//! # Ok(())
//! # }
//! ```
//!
//! Errors read `blocked by the broker: a resource alarm holds publishes (broker:5672)`,
//! `reconnecting (broker:5672)`, `connection closed (broker:5672)`, `connection refused
//! (127.0.0.1:5672)`, `broker refused the connection (broker:5672): ACCESS_REFUSED …`.
//! Passwords in the URI never appear.

use crate::error::{chain, describe_io, url_target};
use crate::millis;
use lapin::{Connection, ConnectionProperties, ErrorKind};
use probity::redact::redact;
use probity::{Check, CheckError, CheckFuture, CheckResult, Detail, Timing};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;
use tokio::time::Instant;

/// Interval and timeout for a RabbitMQ check.
///
/// Interval 5 s, timeout 2 s.
pub const DEFAULT_TIMING: Timing = Timing {
    interval: Duration::from_secs(5),
    timeout: Duration::from_secs(2),
};

/// A RabbitMQ connection's health: connected, not blocked, not reconnecting.
///
/// Measurement (own connection only): `response_time` (ms) of the channel round trip.
pub struct RabbitCheck {
    source: Source,
    target: String,
}

enum Source {
    Shared(Arc<Connection>),
    Own {
        uri: String,
        connection: Box<Mutex<Option<Connection>>>,
    },
}

impl RabbitCheck {
    /// Watches the application's connection. Name the broker for messages with
    /// [`RabbitCheck::target`] (default `rabbitmq`).
    pub fn connection(connection: Arc<Connection>) -> Self {
        Self {
            source: Source::Shared(connection),
            target: "rabbitmq".to_owned(),
        }
    }

    /// Keeps a connection of its own to `uri` (`amqp://user:password@host:5672/vhost`).
    pub fn connect(uri: impl Into<String>) -> Self {
        let uri = uri.into();
        Self {
            target: url_target(&uri, |scheme| if scheme == "amqps" { 5671 } else { 5672 }),
            source: Source::Own {
                uri,
                connection: Box::new(Mutex::new(None)),
            },
        }
    }

    /// Names the broker in error messages, e.g. `broker:5672`.
    pub fn target(mut self, target: impl Into<String>) -> Self {
        self.target = target.into();
        self
    }

    fn judge(&self, connection: &Connection) -> Result<(), CheckError> {
        let status = connection.status();
        let target = &self.target;
        let problem = if status.connected() {
            if !status.blocked() {
                return Ok(());
            }
            "blocked by the broker: a resource alarm holds publishes"
        } else if status.reconnecting() {
            "reconnecting"
        } else if status.connecting() {
            "connecting"
        } else if status.errored() {
            "connection failed"
        } else {
            "connection closed"
        };
        Err(CheckError::new(format!("{problem} ({target})")))
    }

    async fn poll(&self) -> CheckResult {
        let (uri, cached) = match &self.source {
            Source::Shared(connection) => {
                self.judge(connection)?;
                return Ok(Detail::new().message(format!("connected to {}", self.target)));
            }
            Source::Own { uri, connection } => (uri, connection),
        };
        let started = Instant::now();
        let mut cached = cached.lock().await;
        let usable = cached.as_ref().is_some_and(|connection| {
            let status = connection.status();
            status.connected() || status.reconnecting()
        });
        if !usable {
            cached.take();
            let connection = Connection::connect(uri, ConnectionProperties::default())
                .await
                .map_err(|error| CheckError::new(self.describe(&error)))?;
            *cached = Some(connection);
        }
        let Some(connection) = cached.as_ref() else {
            return Err(CheckError::new(format!("not connected ({})", self.target)));
        };
        self.judge(connection)?;
        let channel = connection
            .create_channel()
            .await
            .map_err(|error| CheckError::new(self.describe(&error)))?;
        let _ = channel.close(200, "probity check".into()).await;
        Ok(Detail::new()
            .message(format!("connected to {}", self.target))
            .measurement("response_time", millis(started.elapsed()), Some("ms")))
    }

    fn describe(&self, error: &lapin::Error) -> String {
        let target = &self.target;
        match error.kind() {
            ErrorKind::IOError(io) => describe_io(io, target),
            ErrorKind::ProtocolError(amqp) => format!(
                "broker refused the connection ({target}): {}",
                redact(&amqp.to_string())
            ),
            ErrorKind::MissingHeartbeatError => format!("missed the broker's heartbeat ({target})"),
            ErrorKind::InvalidConnectionState(state) => {
                format!("connection is {state:?} ({target})")
            }
            _ => format!("{} ({target})", chain(error)),
        }
    }
}

impl Check for RabbitCheck {
    fn check(&self) -> CheckFuture<'_> {
        Box::pin(self.poll())
    }

    fn dependency(&self) -> Option<&str> {
        Some("rabbitmq")
    }

    fn default_timing(&self) -> Option<Timing> {
        Some(DEFAULT_TIMING)
    }

    fn default_fall(&self) -> Option<u32> {
        Some(crate::NETWORK_FALL)
    }
}

impl fmt::Debug for RabbitCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = match self.source {
            Source::Shared(_) => "application's connection",
            Source::Own { .. } => "own connection",
        };
        f.debug_struct("RabbitCheck")
            .field("target", &self.target)
            .field("mode", &mode)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use crate::error::url_target;

    fn amqp_target(uri: &str) -> String {
        url_target(uri, |scheme| if scheme == "amqps" { 5671 } else { 5672 })
    }

    #[test]
    fn targets_drop_credentials_and_fill_the_port() {
        assert_eq!(amqp_target("amqp://u:p@broker/%2f"), "broker:5672");
        assert_eq!(amqp_target("amqp://broker:5673"), "broker:5673");
        assert_eq!(amqp_target("amqps://u:p@broker"), "broker:5671");
        assert_eq!(amqp_target("amqp://"), "localhost:5672");
    }
}
