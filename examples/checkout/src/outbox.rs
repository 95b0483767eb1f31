//! The outbox relay (`--amqp-url`): publishes every order to RabbitMQ, at least once, in order.
//!
//! `POST /orders` writes the order and its outbox row in one transaction ([`crate::db`]); the
//! relay, a background task, reads unpublished rows oldest first, publishes each to a durable
//! queue (persistent message, publisher confirms on, `message_id` = the order number) and marks
//! the row published only once the broker has confirmed it. A crash between the confirm and the
//! mark publishes that order again after the restart, with the same `message_id`: delivery is
//! **at least once**, and consumers drop duplicates by message id. Nothing is lost: a row stays
//! unpublished until the broker has it.
//!
//! The relay is the worker a heartbeat exists for ([`probity::Heartbeat`]). It beats on every
//! row published and on every idle poll, and declares every wait on a dependency, each bounded:
//! connecting to the broker, publishing and awaiting the confirm, backing off between attempts
//! (on `broker`), reading and marking rows (on `database`). So:
//!
//! - **the broker down**, for however long, never fails liveness: the relay is inside bounded
//!   waits the whole time, retrying with capped backoff; the soft `broker` readiness check says
//!   degraded; orders pile up in the outbox and drain when the broker returns;
//! - **the relay wedged** (`POST /chaos/wedge-worker`: it awaits a future that never completes,
//!   outside any declared wait) fails liveness within the heartbeat bound
//!   (`--outbox-max-silence`), naming `outbox`; readiness fails with it. The restarted process
//!   resumes from the outbox.
//!
//! One relay per database is assumed: two relays reading one PostgreSQL outbox would publish
//! some orders twice (still at least once, still deduplicated by message id) and out of order.

use crate::boot::Backoff;
use crate::config::OutboxConfig;
use crate::db::{Database, DbError, OutboxRow};
use lapin::options::{BasicPublishOptions, ConfirmSelectOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties};
use probity::redact::redact;
use probity::{Check, CheckError, CheckSpec, Detail, Heartbeat, Tier};
use probity_checks::rabbitmq::RabbitCheck;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

/// The relay's heartbeat: a liveness condition.
pub const OUTBOX_HEARTBEAT: &str = "outbox";
/// The broker's readiness check, soft.
pub const BROKER_CHECK: &str = "broker";
/// The dependency named in declared waits on the broker.
const BROKER: &str = "broker";
/// The dependency named in declared waits on the database.
const DATABASE: &str = "database";

/// Longest a connection attempt (TCP, AMQP handshake, channel, confirm mode, queue declare)
/// may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest a publish may wait for the broker's confirm.
const CONFIRM_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest a read or a mark of outbox rows may take.
const DATABASE_TIMEOUT: Duration = Duration::from_secs(5);
/// Rows read per round.
const BATCH: i64 = 100;
/// Backoff between failed attempts: 200 ms doubling to 5 s, half of it random.
const BACKOFF_FIRST: Duration = Duration::from_millis(200);
const BACKOFF_CAP: Duration = Duration::from_secs(5);

/// The relay's shared state: its broker connection, its wake-up, its figures, and the fault
/// switch. Cheap to clone.
#[derive(Clone)]
pub struct Outbox {
    inner: Arc<Inner>,
}

struct Inner {
    config: OutboxConfig,
    /// Rung by `POST /orders` after its commit, so a new order is relayed at once.
    wake: Notify,
    /// `POST /chaos/wedge-worker` sets it.
    wedged: AtomicBool,
    /// The connection the relay publishes on, while it has one.
    connection: parking_lot::Mutex<Option<Arc<Connection>>>,
    /// Why the relay has no connection (redacted), for the `broker` check.
    last_error: parking_lot::Mutex<Option<String>>,
    published: AtomicU64,
    backlog: AtomicI64,
}

impl std::fmt::Debug for Outbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbox")
            .field("config", &self.inner.config)
            .field("published", &self.inner.published.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Outbox {
    /// The relay's state for `config`; nothing runs until [`Outbox::spawn`].
    pub fn new(config: OutboxConfig) -> Outbox {
        Outbox {
            inner: Arc::new(Inner {
                config,
                wake: Notify::new(),
                wedged: AtomicBool::new(false),
                connection: parking_lot::Mutex::new(None),
                last_error: parking_lot::Mutex::new(Some("the relay has not connected yet".into())),
                published: AtomicU64::new(0),
                backlog: AtomicI64::new(0),
            }),
        }
    }

    /// The heartbeat bound (`--outbox-max-silence`).
    pub fn max_silence(&self) -> Duration {
        self.inner.config.max_silence
    }

    /// `HOST:PORT` of the broker (no credentials).
    pub fn target(&self) -> &str {
        &self.inner.config.target
    }

    /// The queue orders go to.
    pub fn queue(&self) -> &str {
        &self.inner.config.queue
    }

    /// Says an outbox row was committed. A wake-up rung while the relay is busy is kept for
    /// its next idle wait (a lost wake-up would only delay the row to the next poll).
    pub fn wake(&self) {
        self.inner.wake.notify_one();
    }

    /// The fault: from its next step on, the relay awaits a future that never completes,
    /// outside any declared wait. Only a restart undoes it.
    pub fn wedge(&self) {
        self.inner.wedged.store(true, Ordering::SeqCst);
        self.wake();
    }

    /// Whether the relay has been wedged.
    pub fn is_wedged(&self) -> bool {
        self.inner.wedged.load(Ordering::SeqCst)
    }

    /// The soft `broker` readiness check: the relay's own connection, judged as probity-checks'
    /// RabbitMQ check judges a connection (open, not blocked by a resource alarm), or, while
    /// the relay has none, why it has none. Soft: without the broker, orders are taken and
    /// wait in the outbox; the instance stays in rotation.
    pub fn check_spec(&self) -> CheckSpec {
        let outbox = self.clone();
        let check = move || {
            let outbox = outbox.clone();
            async move {
                let inner = &outbox.inner;
                let target = &inner.config.target;
                let connection = inner.connection.lock().clone();
                let Some(connection) = connection else {
                    let reason = inner
                        .last_error
                        .lock()
                        .clone()
                        .unwrap_or_else(|| "not connected".into());
                    return Err(CheckError::new(format!(
                        "relay not connected to {target}: {reason}; orders wait in the outbox"
                    ))
                    .measurement(
                        "backlog",
                        inner.backlog.load(Ordering::Relaxed) as f64,
                        None,
                    ));
                };
                RabbitCheck::connection(connection)
                    .target(target.clone())
                    .check()
                    .await?;
                Ok(Detail::new()
                    .message(format!("relaying to {target} queue {}", inner.config.queue))
                    .measurement(
                        "published",
                        inner.published.load(Ordering::Relaxed) as f64,
                        None,
                    )
                    .measurement(
                        "backlog",
                        inner.backlog.load(Ordering::Relaxed) as f64,
                        None,
                    ))
            }
        };
        CheckSpec::new(BROKER_CHECK, Tier::Soft, check)
            .dependency("rabbitmq")
            .interval(Duration::from_secs(1))
            .timeout(Duration::from_millis(500))
    }

    /// Starts the relay on `db`, beating `heartbeat`. Call once the schema is in place.
    pub fn spawn(&self, db: Database, heartbeat: Heartbeat) -> tokio::task::JoinHandle<()> {
        let relay = Relay {
            outbox: self.clone(),
            db,
            heartbeat,
            backoff: Backoff::new(BACKOFF_FIRST, BACKOFF_CAP),
            link: None,
        };
        tokio::spawn(relay.run())
    }
}

/// An open connection and its confirm-mode channel.
struct Link {
    connection: Arc<Connection>,
    channel: Channel,
}

struct Relay {
    outbox: Outbox,
    db: Database,
    heartbeat: Heartbeat,
    backoff: Backoff,
    link: Option<Link>,
}

/// Why a step failed, in words (redacted), and which dependency to back off on.
struct Failure {
    dependency: &'static str,
    reason: String,
}

impl Failure {
    fn broker(reason: impl std::fmt::Display) -> Failure {
        Failure {
            dependency: BROKER,
            reason: redact(&reason.to_string()).into_owned(),
        }
    }

    fn database(error: &DbError) -> Failure {
        Failure {
            dependency: DATABASE,
            reason: redact(&error.to_string()).into_owned(),
        }
    }
}

impl Relay {
    async fn run(mut self) {
        let config = self.outbox.inner.config.clone();
        tracing::info!(
            broker = %config.target,
            queue = %config.queue,
            max_silence = ?config.max_silence,
            "outbox relay started"
        );
        loop {
            self.stop_here_if_wedged().await;
            self.heartbeat.beat();
            match self.round().await {
                Ok(0) => self.idle().await,
                Ok(_) => self.backoff = Backoff::new(BACKOFF_FIRST, BACKOFF_CAP),
                Err(failure) => self.back_off(failure).await,
            }
        }
    }

    /// The fault, when set: awaits a future that never completes, outside any declared wait,
    /// as a worker that lost its wake-up does. The heartbeat goes silent.
    async fn stop_here_if_wedged(&self) {
        if self.outbox.is_wedged() {
            tracing::warn!(
                heartbeat = OUTBOX_HEARTBEAT,
                "chaos: outbox relay wedged: awaiting a future that never completes"
            );
            std::future::pending::<()>().await;
        }
    }

    /// One round: connect if needed, read a batch, publish it row by row. Returns how many
    /// rows were published.
    async fn round(&mut self) -> Result<usize, Failure> {
        if self
            .link
            .as_ref()
            .is_none_or(|link| !link.channel.status().connected())
        {
            self.disconnect();
            self.connect().await?;
        }
        let rows = self.on_database(self.db.unpublished(BATCH)).await?;
        let backlog = if (rows.len() as i64) < BATCH {
            rows.len() as i64
        } else {
            self.on_database(self.db.outbox_backlog()).await?
        };
        self.set_backlog(backlog);
        let mut published = 0;
        for row in rows {
            if self.outbox.is_wedged() {
                break;
            }
            self.publish(&row).await?;
            // Confirmed by the broker. A crash from here to the mark republishes the row
            // (same message id): at least once.
            self.on_database(self.db.mark_published(row.id)).await?;
            published += 1;
            self.outbox.inner.published.fetch_add(1, Ordering::Relaxed);
            self.set_backlog(backlog - published as i64);
            metrics::counter!("checkout_outbox_published_total").increment(1);
            self.heartbeat.beat();
        }
        if published > 0 {
            tracing::debug!(published, "outbox relay published orders");
        }
        Ok(published)
    }

    fn set_backlog(&self, backlog: i64) {
        self.outbox.inner.backlog.store(backlog, Ordering::Relaxed);
        metrics::gauge!("checkout_outbox_backlog").set(backlog as f64);
    }

    /// Waits for a new order or the poll interval, whichever comes first. Shorter than the
    /// heartbeat bound (the flags are checked), so it needs no declared wait.
    async fn idle(&self) {
        let _ = tokio::time::timeout(
            self.outbox.inner.config.poll_interval,
            self.outbox.inner.wake.notified(),
        )
        .await;
    }

    /// A database step inside a declared, bounded wait on the database.
    async fn on_database<T>(
        &self,
        step: impl Future<Output = Result<T, DbError>>,
    ) -> Result<T, Failure> {
        match self
            .heartbeat
            .wait_on(DATABASE, DATABASE_TIMEOUT, step)
            .await
        {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(Failure::database(&error)),
            Err(timed_out) => Err(Failure {
                dependency: DATABASE,
                reason: timed_out.to_string(),
            }),
        }
    }

    /// A broker step inside a declared, bounded wait on the broker.
    async fn on_broker<T>(
        &self,
        timeout: Duration,
        step: impl Future<Output = Result<T, lapin::Error>>,
    ) -> Result<T, Failure> {
        match self.heartbeat.wait_on(BROKER, timeout, step).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(Failure::broker(error)),
            Err(timed_out) => Err(Failure::broker(timed_out)),
        }
    }

    async fn connect(&mut self) -> Result<(), Failure> {
        let config = self.outbox.inner.config.clone();
        let connection = self
            .on_broker(
                CONNECT_TIMEOUT,
                Connection::connect(&config.url, ConnectionProperties::default()),
            )
            .await?;
        let connection = Arc::new(connection);
        let channel = self
            .on_broker(CONNECT_TIMEOUT, async {
                let channel = connection.create_channel().await?;
                channel
                    .confirm_select(ConfirmSelectOptions::default())
                    .await?;
                channel
                    .queue_declare(
                        config.queue.as_str().into(),
                        QueueDeclareOptions {
                            durable: true,
                            ..QueueDeclareOptions::default()
                        },
                        FieldTable::default(),
                    )
                    .await?;
                Ok(channel)
            })
            .await;
        let channel = match channel {
            Ok(channel) => channel,
            Err(failure) => {
                close(connection);
                return Err(failure);
            }
        };
        tracing::info!(
            broker = %config.target,
            queue = %config.queue,
            "outbox relay connected to the broker"
        );
        *self.outbox.inner.connection.lock() = Some(connection.clone());
        *self.outbox.inner.last_error.lock() = None;
        self.link = Some(Link {
            connection,
            channel,
        });
        Ok(())
    }

    /// Forgets the current connection (closing it in the background).
    fn disconnect(&mut self) {
        *self.outbox.inner.connection.lock() = None;
        if let Some(link) = self.link.take() {
            close(link.connection);
        }
    }

    /// Publishes one row and waits for the broker's confirm.
    async fn publish(&self, row: &OutboxRow) -> Result<(), Failure> {
        let Some(link) = &self.link else {
            return Err(Failure::broker("not connected"));
        };
        let queue = self.outbox.inner.config.queue.as_str();
        let properties = BasicProperties::default()
            .with_message_id(row.order_id.to_string().into())
            .with_content_type("application/json".into())
            .with_delivery_mode(2);
        let confirmation = self
            .on_broker(CONFIRM_TIMEOUT, async {
                link.channel
                    .basic_publish(
                        "".into(),
                        queue.into(),
                        // Mandatory: a queue deleted under the relay returns the message
                        // instead of dropping it, and the relay reconnects and re-declares.
                        BasicPublishOptions {
                            mandatory: true,
                            ..BasicPublishOptions::default()
                        },
                        row.payload.as_bytes(),
                        properties,
                    )
                    .await?
                    .await
            })
            .await?;
        if confirmation.is_nack() {
            return Err(Failure::broker(format!(
                "the broker refused order {} (nack)",
                row.order_id
            )));
        }
        if let Some(returned) = confirmation.take_message() {
            return Err(Failure::broker(format!(
                "the broker returned order {}: {} {}",
                row.order_id, returned.reply_code, returned.reply_text
            )));
        }
        Ok(())
    }

    /// Records the failure, drops a broken connection, and waits a backoff delay inside a
    /// declared wait on the dependency that failed: a broker outage of any length keeps the
    /// relay in bounded waits, never silent.
    async fn back_off(&mut self, failure: Failure) {
        let delay = self.backoff.delay();
        let target = self.outbox.inner.config.target.clone();
        if failure.dependency == BROKER {
            self.disconnect();
            *self.outbox.inner.last_error.lock() = Some(failure.reason.clone());
            metrics::counter!("checkout_outbox_broker_failures_total").increment(1);
        }
        tracing::warn!(
            dependency = failure.dependency,
            broker = %target,
            reason = %failure.reason,
            retry_in = ?round_millis(delay),
            "outbox relay cannot publish; orders wait in the outbox"
        );
        let _wait = self
            .heartbeat
            .waiting_on(failure.dependency, delay + Duration::from_secs(1));
        tokio::time::sleep(delay).await;
    }
}

/// Closes a connection in the background, bounded: a dead broker never answers the close.
fn close(connection: Arc<Connection>) {
    tokio::spawn(async move {
        let _ = tokio::time::timeout(
            Duration::from_secs(1),
            connection.close(320, "checkout outbox relay reconnecting".into()),
        )
        .await;
    });
}

fn round_millis(duration: Duration) -> Duration {
    Duration::from_millis(duration.as_millis() as u64)
}
