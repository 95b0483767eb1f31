//! The order cache on Redis — soft: when Redis is down, orders are read from the database —
//! and the database's fallback: when the database is down for everyone, cached orders are
//! served, marked stale, instead of nothing.
//!
//! Every cache call is bounded by a short timeout and every failure is a miss, so a dead or
//! slow cache costs a request at most that timeout, never an error. The `cache` readiness
//! check is soft for the same reason: without the cache the instance is slower, not broken,
//! and it must not leave rotation for it.
//!
//! Keys are `PREFIX:order:ID` (`--cache-prefix`, `checkout` by default), so services sharing
//! one Redis never read each other's entries. Each entry holds the order and when it was
//! cached, which a stale answer reports as its `Age`.

use crate::db::Order;
use probity::redact::redact;
use probity::{CheckError, CheckSpec, Detail, Tier};
use redis::AsyncCommands;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long a cached order lives.
const ORDER_TTL_SECONDS: u64 = 300;

/// A Redis-backed cache of orders.
#[derive(Clone)]
pub struct Cache {
    connection: ConnectionManager,
    prefix: String,
    timeout: Duration,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("prefix", &self.prefix)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// A cached order and when it was cached.
#[derive(Debug, Clone, PartialEq)]
pub struct Cached {
    /// The order.
    pub order: Order,
    /// When it was written to the cache (wall clock: entries are shared between instances).
    pub cached_at: SystemTime,
}

impl Cached {
    /// Whole seconds since the order was cached: an `Age` header's value (RFC 9111 §5.1). A
    /// cache time in the future (another instance's clock ahead of ours) reads as 0.
    pub fn age(&self, now: SystemTime) -> u64 {
        now.duration_since(self.cached_at)
            .map_or(0, |age| age.as_secs())
    }
}

/// What is stored under an order's key.
#[derive(Serialize, Deserialize)]
struct Entry {
    /// Milliseconds since the Unix epoch when the entry was written.
    cached_at_ms: u64,
    order: Order,
}

impl Cache {
    /// A cache that connects on first use and reconnects after failures. Must be called inside
    /// the tokio runtime.
    pub fn new(url: &str, prefix: &str, timeout: Duration) -> anyhow::Result<Cache> {
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
            prefix: prefix.to_owned(),
            timeout,
        })
    }

    /// The Redis key of order `id`: `PREFIX:order:ID`.
    pub fn key(&self, id: i64) -> String {
        format!("{}:order:{id}", self.prefix)
    }

    /// The cached order, or `None` on a miss or any cache failure (an entry that does not
    /// read as one — written by another version, or by something else — is a miss too).
    pub async fn order(&self, id: i64) -> Option<Cached> {
        let mut connection = self.connection.clone();
        let key = self.key(id);
        let read = async { connection.get::<_, Option<String>>(key).await };
        match tokio::time::timeout(self.timeout, read).await {
            Ok(Ok(Some(text))) => {
                let entry: Entry = serde_json::from_str(&text).ok()?;
                // Another entry under the key (a collision, a hand-written value) is no order.
                (entry.order.id == id).then(|| Cached {
                    order: entry.order,
                    cached_at: UNIX_EPOCH + Duration::from_millis(entry.cached_at_ms),
                })
            }
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
        let cached_at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_millis() as u64);
        let entry = Entry {
            cached_at_ms,
            order: order.clone(),
        };
        let Ok(text) = serde_json::to_string(&entry) else {
            return;
        };
        let mut connection = self.connection.clone();
        let key = self.key(order.id);
        let write = async {
            connection
                .set_ex::<_, _, ()>(key, text, ORDER_TTL_SECONDS)
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
