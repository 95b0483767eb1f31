//! Every acknowledged write reaches the broker, once: counted in the broker itself.
//!
//! A service that publishes what it stores (an outbox relay, say) must neither lose a write
//! while its broker is away or its worker is wedged, nor publish it twice beyond what at-least-
//! once delivery allows. The drill knows which writes it was told succeeded (the traffic's own
//! answers); with the traffic paused, it waits for the broker's queues to hold at least that
//! many messages, then takes every message and counts the distinct ones by message id (the
//! body when there is none). Each count empties the queues, so the next compares only what came
//! after it; the queues are deleted after the run.

use super::report::Delivery;
use lapin::options::{BasicGetOptions, QueueDeclareOptions, QueueDeleteOptions};
use lapin::types::FieldTable;
use lapin::{Channel, Connection, ConnectionProperties};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::time::Duration;
use tokio::time::Instant;

/// How long the queues must hold steady before the count is taken.
const STEADY: Duration = Duration::from_secs(1);
/// With fewer messages than writes, how long nothing new may arrive before the count is taken.
const STALLED: Duration = Duration::from_secs(10);

/// The run's queues on one broker.
#[derive(Debug, Clone)]
pub struct Broker {
    url: String,
    queues: Vec<String>,
}

impl Broker {
    /// The broker at `url` (never printed: it may hold a password) and the queues to count.
    pub fn new(url: String, queues: Vec<String>) -> Broker {
        Broker { url, queues }
    }

    fn redacted(&self, error: impl std::fmt::Display) -> String {
        crate::address::url_target(&self.url).map_or_else(
            || format!("the broker: {error}"),
            |(host, port)| format!("the broker at {host}:{port}: {error}"),
        )
    }

    async fn connect(&self) -> Result<(Connection, Channel), String> {
        let connection = tokio::time::timeout(
            Duration::from_secs(10),
            Connection::connect(&self.url, ConnectionProperties::default()),
        )
        .await
        .map_err(|_| self.redacted("no connection within 10s"))?
        .map_err(|error| self.redacted(error))?;
        let channel = connection
            .create_channel()
            .await
            .map_err(|error| self.redacted(error))?;
        Ok((connection, channel))
    }

    /// Messages waiting in the queues (a queue not declared yet holds none).
    async fn waiting(&self, connection: &Connection, channel: &mut Channel) -> u64 {
        let mut total = 0;
        for queue in &self.queues {
            let declared = channel
                .queue_declare(
                    queue.as_str().into(),
                    QueueDeclareOptions {
                        passive: true,
                        ..QueueDeclareOptions::default()
                    },
                    FieldTable::default(),
                )
                .await;
            match declared {
                Ok(queue) => total += u64::from(queue.message_count()),
                // A passive declare of a missing queue closes the channel: open another.
                Err(_) => {
                    if let Ok(fresh) = connection.create_channel().await {
                        *channel = fresh;
                    }
                }
            }
        }
        total
    }

    /// Waits (up to `wait`) for at least `acknowledged` messages, then takes them all and
    /// compares.
    pub async fn count(
        &self,
        acknowledged: u64,
        unacknowledged: u64,
        wait: Duration,
    ) -> Result<Delivery, String> {
        let (connection, mut channel) = self.connect().await?;
        let started = Instant::now();
        let deadline = started + wait;
        let mut last = (u64::MAX, started);
        let arrived = loop {
            let now = Instant::now();
            let waiting = self.waiting(&connection, &mut channel).await;
            if waiting != last.0 {
                last = (waiting, now);
            }
            let steady = now.duration_since(last.1);
            if waiting >= acknowledged && steady >= STEADY {
                break Some(last.1.duration_since(started).as_secs_f64());
            }
            if now >= deadline || (waiting < acknowledged && steady >= STALLED) {
                break None;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let (mut received, mut distinct) = (0u64, 0u64);
        for queue in &self.queues {
            let mut seen: HashMap<String, u64> = HashMap::new();
            loop {
                let message = channel
                    .basic_get(queue.as_str().into(), BasicGetOptions { no_ack: true })
                    .await;
                let message = match message {
                    Ok(Some(message)) => message,
                    Ok(None) => break,
                    // A queue never declared: nothing in it.
                    Err(_) => {
                        channel = connection
                            .create_channel()
                            .await
                            .map_err(|error| self.redacted(error))?;
                        break;
                    }
                };
                let id = match message.delivery.properties.message_id() {
                    Some(id) => id.as_str().to_owned(),
                    None => {
                        let mut hasher = std::collections::hash_map::DefaultHasher::new();
                        message.delivery.data.hash(&mut hasher);
                        format!("body:{:x}", hasher.finish())
                    }
                };
                *seen.entry(id).or_default() += 1;
                received += 1;
            }
            distinct += seen.len() as u64;
        }
        let _ = connection.close(200, "counted".into()).await;
        Ok(Delivery {
            acknowledged,
            unacknowledged,
            received,
            distinct,
            lost: acknowledged.saturating_sub(distinct),
            duplicated: received - distinct,
            arrived_after_s: arrived,
        })
    }

    /// Deletes the queues (best effort: the broker may be gone).
    pub async fn delete(&self) {
        let Ok((connection, channel)) = self.connect().await else {
            return;
        };
        for queue in &self.queues {
            let _ = channel
                .queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
                .await;
        }
        let _ = connection.close(200, "done".into()).await;
    }
}
