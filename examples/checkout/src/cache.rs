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
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::Instant;

/// How long a cached order lives.
const ORDER_TTL_SECONDS: u64 = 300;
/// The `cache` check's cadence and timeout.
const CHECK_INTERVAL: Duration = Duration::from_secs(2);
const CHECK_TIMEOUT: Duration = Duration::from_millis(500);
/// Time kept back from the poll's deadline, so a slow PING is judged by the check (with the
/// requests' evidence) rather than cut by the poller.
const CHECK_MARGIN: Duration = Duration::from_millis(20);

/// How long a read may take while the cache serves in the database's place (the only answer
/// there is, so worth longer than a read that would otherwise fall through to the database).
pub const DEGRADED_READ_BUDGET: Duration = Duration::from_secs(1);

/// A Redis-backed cache of orders.
#[derive(Clone)]
pub struct Cache {
    connection: ConnectionManager,
    prefix: String,
    timeout: Duration,
    replies: Replies,
}

/// When Redis last answered a request (a read or a write, hit or miss): the evidence that a
/// PING queued behind the requests on one multiplexed connection is slow, not lost.
#[derive(Clone)]
struct Replies {
    origin: Instant,
    /// Nanoseconds after `origin` plus one; 0 for never.
    last: Arc<AtomicU64>,
}

impl Replies {
    fn new() -> Replies {
        Replies {
            origin: Instant::now(),
            last: Arc::new(AtomicU64::new(0)),
        }
    }

    fn record(&self) {
        let nanos = self.origin.elapsed().as_nanos().min(u64::MAX as u128 - 1) as u64;
        self.last.fetch_max(nanos + 1, Ordering::AcqRel);
    }

    /// How long ago Redis last answered a request, if it ever did.
    fn since_last(&self) -> Option<Duration> {
        let stored = self.last.load(Ordering::Acquire);
        (stored != 0).then(|| {
            let at = self.origin + Duration::from_nanos(stored - 1);
            Instant::now().saturating_duration_since(at)
        })
    }
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
            // Each call is bounded by its own budget below; the connection's bound is the
            // longest of them (a read while the cache serves in the database's place).
            .set_response_timeout(Some(timeout.max(DEGRADED_READ_BUDGET)))
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
            replies: Replies::new(),
        })
    }

    /// The Redis key of order `id`: `PREFIX:order:ID`.
    pub fn key(&self, id: i64) -> String {
        format!("{}:order:{id}", self.prefix)
    }

    /// The cached order, or `None` on a miss or any cache failure (an entry that does not
    /// read as one — written by another version, or by something else — is a miss too).
    pub async fn order(&self, id: i64) -> Option<Cached> {
        self.order_within(id, self.timeout).await
    }

    /// [`Cache::order`] with a budget of its own: while the database is out the cache is the
    /// only way to answer, and a read queued behind a burst of others is worth waiting
    /// [`DEGRADED_READ_BUDGET`] for rather than answering 503.
    pub async fn order_within(&self, id: i64, budget: Duration) -> Option<Cached> {
        let mut connection = self.connection.clone();
        let key = self.key(id);
        let read = async { connection.get::<_, Option<String>>(key).await };
        let answer = tokio::time::timeout(budget, read).await;
        if matches!(answer, Ok(Ok(_))) {
            self.replies.record();
        }
        match answer {
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
            Ok(Ok(())) => self.replies.record(),
            Ok(Err(error)) => {
                tracing::debug!(error = %redact(&error.to_string()), "cache write failed")
            }
            Err(_) => tracing::debug!("cache write timed out"),
        }
    }

    /// One PING within `budget`, judged with the requests' evidence (see [`Cache::check_spec`]).
    async fn ping(&self, budget: Duration) -> probity::CheckResult {
        let started = Instant::now();
        let mut connection = self.connection.clone();
        let command = redis::cmd("PING");
        let ping = command.query_async::<String>(&mut connection);
        let elapsed_ms = || started.elapsed().as_secs_f64() * 1000.0;
        let reply = match tokio::time::timeout(budget, ping).await {
            Ok(reply) => reply.map_err(|error| CheckError::new(redact(&error.to_string())))?,
            Err(_) => {
                return match self.replies.since_last() {
                    Some(ago) if ago <= budget => Ok(Detail::new()
                        .message(format!(
                            "PING queued behind requests for over {}ms; Redis answered a \
                             request {}ms ago",
                            budget.as_millis(),
                            ago.as_millis()
                        ))
                        .measurement("response_time", elapsed_ms(), Some("ms"))),
                    _ => Err(CheckError::new(format!(
                        "PING timed out after {}ms, and no request got an answer meanwhile",
                        budget.as_millis()
                    ))
                    .kind(probity::FailureKind::Timeout)),
                };
            }
        };
        if reply != "PONG" {
            return Err(CheckError::new(format!("unexpected PING reply `{reply}`")));
        }
        self.replies.record();
        Ok(Detail::new().measurement("response_time", elapsed_ms(), Some("ms")))
    }

    /// The soft `cache` readiness check: a PING on the connection the requests use.
    ///
    /// Busy is not broken. The PING shares one multiplexed connection with every read, so
    /// under load (the database down, every read on the cache) it can queue past its timeout
    /// while Redis answers thousands of requests a second; and the cache is then the
    /// database's fallback, so failing it would drain the instance exactly when it serves. A
    /// PING that does not come back in time fails only when no request got an answer in that
    /// time either. Two failures in a row turn it unhealthy.
    pub fn check_spec(&self, name: &str) -> CheckSpec {
        let cache = self.clone();
        let check = move || {
            let cache = cache.clone();
            async move {
                let budget = probity::poll_deadline()
                    .map_or(CHECK_TIMEOUT, |deadline| {
                        deadline.saturating_duration_since(Instant::now())
                    })
                    .saturating_sub(CHECK_MARGIN);
                cache.ping(budget).await
            }
        };
        CheckSpec::new(name, Tier::Soft, check)
            .dependency("redis")
            .interval(CHECK_INTERVAL)
            .timeout(CHECK_TIMEOUT)
            .fall(2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// A Redis that answers every command in order, each `latency` after it arrived: a PING
    /// queued behind requests on a loaded connection.
    async fn slow_redis(latency: Duration) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (mut read, write) = socket.into_split();
                let (sender, mut receiver) =
                    tokio::sync::mpsc::unbounded_channel::<(Instant, &'static [u8])>();
                tokio::spawn(async move {
                    let mut write = write;
                    while let Some((due, reply)) = receiver.recv().await {
                        tokio::time::sleep_until(due).await;
                        if write.write_all(reply).await.is_err() {
                            return;
                        }
                    }
                });
                tokio::spawn(async move {
                    let mut buffer = Vec::new();
                    let mut chunk = [0u8; 4096];
                    while let Ok(n) = read.read(&mut chunk).await {
                        if n == 0 {
                            return;
                        }
                        buffer.extend_from_slice(&chunk[..n]);
                        while let Some((name, used)) = command(&buffer) {
                            buffer.drain(..used);
                            let reply: &'static [u8] = match name.as_str() {
                                "PING" => b"+PONG\r\n",
                                "GET" => b"$-1\r\n",
                                _ => b"+OK\r\n",
                            };
                            let _ = sender.send((Instant::now() + latency, reply));
                        }
                    }
                });
            }
        });
        format!("redis://{address}")
    }

    /// The first complete RESP command in `buffer`: its name and how many bytes it took.
    fn command(buffer: &[u8]) -> Option<(String, usize)> {
        let line = |from: usize| -> Option<(&[u8], usize)> {
            let end = buffer[from..].windows(2).position(|w| w == b"\r\n")? + from;
            Some((&buffer[from..end], end + 2))
        };
        let (head, mut at) = line(0)?;
        let count: usize = std::str::from_utf8(head.strip_prefix(b"*")?)
            .ok()?
            .parse()
            .ok()?;
        let mut name = String::new();
        for index in 0..count {
            let (length, next) = line(at)?;
            let length: usize = std::str::from_utf8(length.strip_prefix(b"$")?)
                .ok()?
                .parse()
                .ok()?;
            let end = next + length + 2;
            if buffer.len() < end {
                return None;
            }
            if index == 0 {
                name = String::from_utf8_lossy(&buffer[next..next + length]).to_ascii_uppercase();
            }
            at = end;
        }
        Some((name, at))
    }

    #[tokio::test]
    async fn a_slow_ping_fails_only_when_no_request_got_an_answer_either() {
        let url = slow_redis(Duration::from_millis(600)).await;
        let cache = Cache::new(&url, "test", Duration::from_secs(2)).unwrap();
        // Warm the connection (it connects on first use).
        assert!(cache.order(1).await.is_none());
        let budget = Duration::from_millis(250);

        // Idle: nothing else answered within the budget, so the late PING is a failure.
        tokio::time::sleep(Duration::from_millis(400)).await;
        let idle = cache.ping(budget).await.unwrap_err();
        assert!(
            idle.message().contains("no request got an answer"),
            "{}",
            idle.message()
        );

        // Busy: reads keep coming back while the PING waits its turn: slow, not broken.
        let reads = {
            let cache = cache.clone();
            tokio::spawn(async move {
                for id in 0..40 {
                    let cache = cache.clone();
                    tokio::spawn(async move { cache.order(id).await });
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
            })
        };
        tokio::time::sleep(Duration::from_millis(700)).await;
        let busy = cache
            .ping(budget)
            .await
            .expect("a busy cache is not a broken one");
        assert!(
            busy.message
                .as_deref()
                .unwrap_or_default()
                .contains("queued behind requests"),
            "{busy:?}"
        );
        reads.await.unwrap();
    }

    #[tokio::test]
    async fn a_ping_that_comes_back_in_time_passes() {
        let url = slow_redis(Duration::from_millis(1)).await;
        let cache = Cache::new(&url, "test", Duration::from_secs(2)).unwrap();
        assert!(cache.ping(Duration::from_millis(500)).await.is_ok());
    }
}
