//! Redis through fred: the client's own connection state, its queue of unsent commands, and a
//! `PING` — for services that use fred rather than redis-rs.
//!
//! ```
//! use probity::{CheckSpec, Tier};
//! use probity_checks::fred_client::FredCheck;
//!
//! # fn build() -> Result<(), fred::error::Error> {
//! let config = fred::types::config::Config::from_url("redis://cache.internal:6379")?;
//! let client = fred::clients::Client::new(config, None, None, None);
//! // The application connects it (`client.init().await`) and shares it with the check.
//! let spec = CheckSpec::new("cache", Tier::Soft, FredCheck::new(client.clone()));
//! # let _ = spec;
//! # Ok(())
//! # }
//! ```
//!
//! fred reconnects by itself and buffers commands while it does, so an application talking to
//! a Redis that went away does not fail at once: its commands wait. The check looks at what the
//! application's requests see:
//!
//! 1. the client's state must be `Connected` — while fred is `Connecting` (a restarted or
//!    unreachable server) the poll fails at once, naming the state, instead of queueing a
//!    `PING` behind the reconnect;
//! 2. the commands buffered but not yet sent must stay under a limit (default 1000): a queue
//!    that grows means requests are waiting on Redis;
//! 3. a `PING` must answer `PONG` within the poller's timeout (`CLIENT PAUSE`, a stuck server).
//!
//! Errors read `not connected to 127.0.0.1:6379 (fred is Connecting), 12 commands waiting`,
//! `1500 commands queued unsent on 127.0.0.1:6379 (limit 1000)`, `redis error (…): …`.
//! Measurements: `response_time` (ms), `queued_commands`.

use crate::error::chain;
use crate::millis;
use fred::clients::Client;
use fred::interfaces::{ClientLike, MetricsInterface};
use fred::types::ClientState;
use fred::types::config::ServerConfig;
use probity::redact::redact;
use probity::{Check, CheckError, CheckFuture, CheckResult, Detail, Timing};
use std::fmt;
use std::time::Duration;
use tokio::time::Instant;

/// Interval and timeout for a fred check: a PING is one round trip on a warm connection.
///
/// Interval 2 s, timeout 500 ms.
pub const DEFAULT_TIMING: Timing = Timing {
    interval: Duration::from_secs(2),
    timeout: Duration::from_millis(500),
};

/// Commands buffered unsent above which the check fails, unless set.
pub const DEFAULT_MAX_QUEUED: usize = 1000;

/// A fred client's state, unsent queue and `PING`.
pub struct FredCheck {
    client: Client,
    address: String,
    max_queued: usize,
}

impl FredCheck {
    /// A check of the application's `client` (fred clients are cheap handles: pass a clone).
    pub fn new(client: Client) -> Self {
        let address = match &client.client_config().server {
            ServerConfig::Centralized { server } => server.to_string(),
            ServerConfig::Clustered { hosts, .. } => hosts
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(","),
            other => format!("{other:?}"),
        };
        Self {
            client,
            address: redact(&address).into_owned(),
            max_queued: DEFAULT_MAX_QUEUED,
        }
    }

    /// Fails when more than `commands` are buffered unsent.
    pub fn max_queued_commands(mut self, commands: usize) -> Self {
        self.max_queued = commands;
        self
    }

    async fn poll(&self) -> CheckResult {
        let queued = self.client.command_queue_len();
        if let Err(message) = judge(&self.address, &self.client.state(), queued, self.max_queued) {
            return Err(CheckError::new(message).measurement(
                "queued_commands",
                queued as f64,
                None,
            ));
        }
        let started = Instant::now();
        match self.client.ping::<String>(None).await {
            Ok(reply) if reply == "PONG" => Ok(Detail::new()
                .message(format!("PONG from {}", self.address))
                .measurement("response_time", millis(started.elapsed()), Some("ms"))
                .measurement("queued_commands", queued as f64, None)),
            Ok(reply) => Err(CheckError::new(format!(
                "unexpected PING reply from {}: {reply:?}",
                self.address
            ))),
            Err(error) => Err(CheckError::new(format!(
                "redis error ({}): {}",
                self.address,
                redact(&chain(&error))
            ))),
        }
    }
}

/// The verdict on fred's own figures, before any round trip.
fn judge(
    address: &str,
    state: &ClientState,
    queued: usize,
    max_queued: usize,
) -> Result<(), String> {
    if *state != ClientState::Connected {
        let waiting = match queued {
            0 => String::new(),
            1 => ", 1 command waiting".to_owned(),
            n => format!(", {n} commands waiting"),
        };
        return Err(format!(
            "not connected to {address} (fred is {state:?}){waiting}"
        ));
    }
    if queued > max_queued {
        return Err(format!(
            "{queued} commands queued unsent on {address} (limit {max_queued})"
        ));
    }
    Ok(())
}

impl Check for FredCheck {
    fn check(&self) -> CheckFuture<'_> {
        Box::pin(self.poll())
    }

    fn dependency(&self) -> Option<&str> {
        Some("redis")
    }

    fn default_timing(&self) -> Option<Timing> {
        Some(DEFAULT_TIMING)
    }

    fn default_fall(&self) -> Option<u32> {
        Some(crate::NETWORK_FALL)
    }
}

impl fmt::Debug for FredCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FredCheck")
            .field("address", &self.address)
            .field("max_queued", &self.max_queued)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judges_state_and_queue() {
        let address = "127.0.0.1:6379";
        assert_eq!(judge(address, &ClientState::Connected, 3, 1000), Ok(()));
        assert_eq!(
            judge(address, &ClientState::Connected, 1500, 1000),
            Err("1500 commands queued unsent on 127.0.0.1:6379 (limit 1000)".to_owned())
        );
        assert_eq!(
            judge(address, &ClientState::Connecting, 0, 1000),
            Err("not connected to 127.0.0.1:6379 (fred is Connecting)".to_owned())
        );
        assert_eq!(
            judge(address, &ClientState::Disconnected, 1, 1000),
            Err(
                "not connected to 127.0.0.1:6379 (fred is Disconnected), 1 command waiting"
                    .to_owned()
            )
        );
    }
}
