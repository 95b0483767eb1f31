//! Redis: `PING` answered with `PONG`, over a connection the check keeps (redis-rs).
//!
//! ```
//! use probity::{CheckSpec, Tier};
//! use probity_checks::redis_ping::RedisCheck;
//!
//! # fn build() -> redis::RedisResult<()> {
//! let client = redis::Client::open("redis://cache.internal:6379")?;
//! let spec = CheckSpec::new("cache", Tier::Soft, RedisCheck::new(client));
//! # let _ = spec;
//! # Ok(())
//! # }
//! ```
//!
//! The check opens one multiplexed connection on its first poll and reuses it; a failed poll
//! drops it, so the next poll reconnects (a restarted server is seen as down once, then up).
//! A server that stops answering (`CLIENT PAUSE`, a stuck `KEYS *`, a full network buffer)
//! fails the poll with `timed out after …` from the poller; the check recovers on the first
//! poll after the server answers again.
//!
//! Errors read `connection refused (127.0.0.1:6379)`, `unexpected PING reply: …`,
//! `redis error (127.0.0.1:6379): …`. The client's URL, password included, never appears.

use crate::error::{chain, describe_io, find_io};
use crate::millis;
use probity::{Check, CheckError, CheckFuture, CheckResult, Detail, Timing};
use redis::aio::MultiplexedConnection;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::Mutex;
use tokio::time::Instant;

/// Interval and timeout for a Redis check: a PING is one round trip on a warm connection.
///
/// Interval 2 s, timeout 500 ms.
pub const DEFAULT_TIMING: Timing = Timing {
    interval: Duration::from_secs(2),
    timeout: Duration::from_millis(500),
};

/// `PING` on a connection of the check's own, reconnecting after a failure.
///
/// Measurement: `response_time` (ms).
pub struct RedisCheck {
    client: redis::Client,
    address: String,
    connection: Mutex<Option<MultiplexedConnection>>,
    /// Set while a PING is in flight: if a poll finds it still set, the previous poll was cut
    /// by its timeout and the connection may be wedged, so it is replaced.
    in_flight: AtomicBool,
}

impl RedisCheck {
    /// A check of the server `client` points at.
    pub fn new(client: redis::Client) -> Self {
        let address = client.get_connection_info().addr().to_string();
        Self {
            client,
            address,
            connection: Mutex::new(None),
            in_flight: AtomicBool::new(false),
        }
    }

    async fn poll(&self) -> CheckResult {
        let started = Instant::now();
        let mut connection = {
            let mut cached = self.connection.lock().await;
            if self.in_flight.swap(false, Ordering::SeqCst) {
                cached.take();
            }
            match cached.as_ref() {
                Some(connection) => connection.clone(),
                None => {
                    let connection = self
                        .client
                        .get_multiplexed_async_connection_with_config(&connection_config())
                        .await
                        .map_err(|error| CheckError::new(self.describe(&error)))?;
                    *cached = Some(connection.clone());
                    connection
                }
            }
        };
        self.in_flight.store(true, Ordering::SeqCst);
        let reply: Result<String, _> = redis::cmd("PING").query_async(&mut connection).await;
        self.in_flight.store(false, Ordering::SeqCst);
        match reply {
            Ok(reply) if reply == "PONG" => Ok(Detail::new()
                .message(format!("PONG from {}", self.address))
                .measurement("response_time", millis(started.elapsed()), Some("ms"))),
            Ok(reply) => Err(CheckError::new(format!(
                "unexpected PING reply from {}: {reply:?}",
                self.address
            ))),
            Err(error) => {
                self.connection.lock().await.take();
                Err(CheckError::new(self.describe(&error)))
            }
        }
    }

    fn describe(&self, error: &redis::RedisError) -> String {
        if let Some(io) = find_io(error) {
            return describe_io(io, &self.address);
        }
        if error.is_connection_refusal() {
            return format!("connection refused ({})", self.address);
        }
        if error.is_timeout() {
            return format!("timed out ({})", self.address);
        }
        format!("redis error ({}): {}", self.address, chain(error))
    }
}

/// No timeouts of the client's own: the poller's timeout bounds every poll, and one clock
/// gives one clear message (`timed out after 500ms`).
fn connection_config() -> redis::AsyncConnectionConfig {
    redis::AsyncConnectionConfig::new()
        .set_connection_timeout(None)
        .set_response_timeout(None)
}

impl Check for RedisCheck {
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

impl fmt::Debug for RedisCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisCheck")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}
