//! NATS (async-nats): the client is connected, and the server answers a flush (a PING/PONG
//! round trip).
//!
//! - [`NatsCheck::new`] checks the application's `async_nats::Client` (clients are cheap
//!   handles): its connection state, then a flush. While the client is reconnecting, or the
//!   server is too slow to answer the flush, the check fails.
//! - [`NatsCheck::connect`] keeps a client of its own to a URL, connecting on its first poll.
//!
//! ```no_run
//! use probity::{CheckSpec, Tier};
//! use probity_checks::nats::NatsCheck;
//!
//! # async fn build() -> Result<(), async_nats::ConnectError> {
//! let client = async_nats::connect("nats://bus:4222").await?;
//! let spec = CheckSpec::new("bus", Tier::Hard, NatsCheck::new(client.clone()).target("bus:4222"));
//! # let _ = spec;
//! # Ok(())
//! # }
//! ```
//!
//! Errors read `disconnected, reconnecting (bus:4222)`, `connection refused (127.0.0.1:4222)`,
//! `flush failed (bus:4222): …`. Credentials in the URL never appear.

use crate::error::{chain, describe_io, find_io, url_target};
use crate::millis;
use async_nats::connection::State;
use async_nats::{Client, ConnectErrorKind};
use probity::{Check, CheckError, CheckFuture, CheckResult, Detail, Timing};
use std::fmt;
use std::time::Duration;
use tokio::sync::OnceCell;
use tokio::time::Instant;

/// Interval and timeout for a NATS check: a flush is one round trip.
///
/// Interval 2 s, timeout 1 s.
pub const DEFAULT_TIMING: Timing = Timing {
    interval: Duration::from_secs(2),
    timeout: Duration::from_secs(1),
};

/// A NATS client's connection state and a flush round trip.
///
/// Measurement: `response_time` (ms) of the flush.
pub struct NatsCheck {
    client: OnceCell<Client>,
    url: Option<String>,
    target: String,
}

impl NatsCheck {
    /// Checks the application's client. Name the server for messages with
    /// [`NatsCheck::target`] (default `nats`).
    pub fn new(client: Client) -> Self {
        Self {
            client: OnceCell::new_with(Some(client)),
            url: None,
            target: "nats".to_owned(),
        }
    }

    /// Keeps a client of its own to `url` (`nats://user:password@host:4222`), connected on the
    /// first poll; async-nats reconnects it after that.
    pub fn connect(url: impl Into<String>) -> Self {
        let url = url.into();
        Self {
            client: OnceCell::new(),
            target: url_target(&url, |_| 4222),
            url: Some(url),
        }
    }

    /// Names the server in error messages, e.g. `bus:4222`.
    pub fn target(mut self, target: impl Into<String>) -> Self {
        self.target = target.into();
        self
    }

    async fn client(&self) -> Result<&Client, CheckError> {
        self.client
            .get_or_try_init(|| async {
                let url = self.url.as_deref().unwrap_or("nats://127.0.0.1:4222");
                async_nats::connect(url)
                    .await
                    .map_err(|error| CheckError::new(self.describe_connect(&error)))
            })
            .await
    }

    async fn poll(&self) -> CheckResult {
        let client = self.client().await?;
        let target = &self.target;
        match client.connection_state() {
            State::Connected => {}
            State::Pending => {
                return Err(CheckError::new(format!("connecting ({target})")));
            }
            State::Disconnected => {
                return Err(CheckError::new(format!(
                    "disconnected, reconnecting ({target})"
                )));
            }
        }
        let started = Instant::now();
        client.flush().await.map_err(|error| {
            CheckError::new(format!("flush failed ({target}): {}", chain(&error)))
        })?;
        Ok(Detail::new()
            .message(format!("connected to {target}"))
            .measurement("response_time", millis(started.elapsed()), Some("ms")))
    }

    fn describe_connect(&self, error: &async_nats::ConnectError) -> String {
        let target = &self.target;
        if let Some(io) = find_io(error) {
            return describe_io(io, target);
        }
        match error.kind() {
            ConnectErrorKind::TimedOut => format!("connect timed out ({target})"),
            ConnectErrorKind::AuthorizationViolation => {
                format!("authorization violation ({target})")
            }
            _ => format!("{} ({target})", chain(error)),
        }
    }
}

impl Check for NatsCheck {
    fn check(&self) -> CheckFuture<'_> {
        Box::pin(self.poll())
    }

    fn dependency(&self) -> Option<&str> {
        Some("nats")
    }

    fn default_timing(&self) -> Option<Timing> {
        Some(DEFAULT_TIMING)
    }

    fn default_fall(&self) -> Option<u32> {
        Some(crate::NETWORK_FALL)
    }
}

impl fmt::Debug for NatsCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NatsCheck")
            .field("target", &self.target)
            .field("connected", &self.client.initialized())
            .finish()
    }
}
