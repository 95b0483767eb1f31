//! The order cache on Redis — soft: when Redis is down, orders are read from the database.
//!
//! Every cache call is bounded by a short timeout and every failure is a miss, so a dead or
//! slow cache costs a request at most that timeout, never an error. The `cache` readiness
//! check is soft for the same reason: without the cache the instance is slower, not broken,
//! and it must not leave rotation for it.

use crate::db::Order;
use probity::redact::redact;
use probity::{CheckError, CheckSpec, Detail, Tier};
use redis::AsyncCommands;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use std::time::Duration;

/// How long a cached order lives.
const ORDER_TTL_SECONDS: u64 = 300;

/// A Redis-backed cache of orders.
#[derive(Clone)]
pub struct Cache {
    connection: ConnectionManager,
    timeout: Duration,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Cache {
    /// A cache that connects on first use and reconnects after failures. Must be called inside
    /// the tokio runtime.
    pub fn new(url: &str, timeout: Duration) -> anyhow::Result<Cache> {
        let client = redis::Client::open(url).map_err(|error| {
            anyhow::anyhow!(
                "--redis-url `{}`: {}",
                redact(url),
                redact(&error.to_string())
            )
        })?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_secs(1));
        let connection =
            ConnectionManager::new_lazy_with_config(client, config).map_err(|error| {
                anyhow::anyhow!(
                    "cannot set up the Redis client: {}",
                    redact(&error.to_string())
                )
            })?;
        Ok(Cache {
            connection,
            timeout,
        })
    }

    fn key(id: i64) -> String {
        format!("checkout:order:{id}")
    }

    /// The cached order, or `None` on a miss or any cache failure.
    pub async fn order(&self, id: i64) -> Option<Order> {
        let mut connection = self.connection.clone();
        let read = async { connection.get::<_, Option<String>>(Self::key(id)).await };
        match tokio::time::timeout(self.timeout, read).await {
            Ok(Ok(Some(text))) => serde_json::from_str(&text).ok(),
            Ok(Ok(None)) => None,
            Ok(Err(error)) => {
                tracing::debug!(error = %redact(&error.to_string()), "cache read failed");
                None
            }
            Err(_) => {
                tracing::debug!("cache read timed out");
                None
            }
        }
    }

    /// Stores an order; failures are logged at debug level and otherwise ignored.
    pub async fn store(&self, order: &Order) {
        let Ok(text) = serde_json::to_string(order) else {
            return;
        };
        let mut connection = self.connection.clone();
        let write = async {
            connection
                .set_ex::<_, _, ()>(Self::key(order.id), text, ORDER_TTL_SECONDS)
                .await
        };
        match tokio::time::timeout(self.timeout, write).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                tracing::debug!(error = %redact(&error.to_string()), "cache write failed")
            }
            Err(_) => tracing::debug!("cache write timed out"),
        }
    }

    /// The soft `cache` readiness check: a PING on the connection the requests use.
    pub fn check_spec(&self, name: &str) -> CheckSpec {
        let connection = self.connection.clone();
        let check = move || {
            let mut connection = connection.clone();
            async move {
                let started = tokio::time::Instant::now();
                let reply: String = redis::cmd("PING")
                    .query_async(&mut connection)
                    .await
                    .map_err(|error| CheckError::new(redact(&error.to_string())))?;
                if reply != "PONG" {
                    return Err(CheckError::new(format!("unexpected PING reply `{reply}`")));
                }
                Ok(Detail::new().measurement(
                    "response_time",
                    started.elapsed().as_secs_f64() * 1000.0,
                    Some("ms"),
                ))
            }
        };
        CheckSpec::new(name, Tier::Soft, check)
            .dependency("redis")
            .interval(Duration::from_secs(2))
            .timeout(Duration::from_millis(500))
    }
}
