//! The outbox relay against the real RabbitMQ: every order published once, with its order
//! number as message id; a wedged relay fails liveness and a restarted process drains the
//! outbox with nothing lost or repeated; a broker outage ten times the heartbeat bound fails no
//! liveness probe and the outbox drains after it; no credential in any output.
//!
//! Delivery is at least once (a crash between the broker's confirm and the row's mark
//! republishes that order with the same message id), so every test counts both: distinct
//! order numbers received (nothing lost) and deliveries beyond one per order (duplicates).

mod support;

use lapin::options::{BasicGetOptions, QueueDeclareOptions, QueueDeleteOptions};
use lapin::types::FieldTable;
use lapin::{Connection, ConnectionProperties};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use support::{Checkout, TempDir, get, poll_until, post, wait_ready};

const RABBITMQ: &str = "127.0.0.1:5672";

fn amqp_url(address: &str) -> String {
    format!("amqp://guest:guest@{address}/%2f")
}

/// A queue of its own for one test, read with `basic.get`, deleted at the end.
struct TestQueue {
    name: String,
    channel: lapin::Channel,
    _connection: Connection,
    /// Deliveries by message id (the order number).
    received: BTreeMap<i64, u32>,
    /// Deliveries that were not persistent JSON with an order number as message id.
    malformed: Vec<String>,
}

impl TestQueue {
    async fn declare(label: &str) -> TestQueue {
        static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let name = format!(
            "checkout.e2e.{label}.{}.{}",
            std::process::id(),
            COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let connection = Connection::connect(&amqp_url(RABBITMQ), ConnectionProperties::default())
            .await
            .expect("connect to RabbitMQ");
        let channel = connection.create_channel().await.expect("a channel");
        // The relay declares it the same way (durable); declaring it first lets the test read
        // it before the relay has connected.
        channel
            .queue_declare(
                name.as_str().into(),
                QueueDeclareOptions {
                    durable: true,
                    ..QueueDeclareOptions::default()
                },
                FieldTable::default(),
            )
            .await
            .expect("declare the test queue");
        TestQueue {
            name,
            channel,
            _connection: connection,
            received: BTreeMap::new(),
            malformed: Vec::new(),
        }
    }

    /// Takes every message waiting in the queue.
    async fn drain(&mut self) {
        while let Some(message) = self
            .channel
            .basic_get(self.name.as_str().into(), BasicGetOptions { no_ack: true })
            .await
            .expect("basic.get")
        {
            let properties = &message.delivery.properties;
            let id = properties
                .message_id()
                .as_ref()
                .and_then(|id| id.as_str().parse::<i64>().ok());
            let payload: Option<serde_json::Value> =
                serde_json::from_slice(&message.delivery.data).ok();
            match (id, payload) {
                (Some(id), Some(payload))
                    if payload["id"] == id
                        && *properties.delivery_mode() == Some(2)
                        && properties.content_type().as_ref().map(|t| t.as_str())
                            == Some("application/json") =>
                {
                    *self.received.entry(id).or_default() += 1;
                }
                _ => self.malformed.push(format!("{properties:?}")),
            }
        }
    }

    /// Drains until every order in `orders` has arrived, or panics after `timeout`.
    async fn wait_for(&mut self, orders: &[i64], timeout: Duration, checkout: &Checkout) {
        let deadline = Instant::now() + timeout;
        loop {
            self.drain().await;
            let missing: Vec<i64> = orders
                .iter()
                .copied()
                .filter(|id| !self.received.contains_key(id))
                .collect();
            if missing.is_empty() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "orders {missing:?} not published within {timeout:?}\n{}",
                checkout.stderr.text()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Deliveries beyond the first of each order.
    fn duplicates(&self) -> u32 {
        self.received.values().map(|count| count - 1).sum()
    }

    async fn delete(self) {
        let _ = self
            .channel
            .queue_delete(self.name.as_str().into(), QueueDeleteOptions::default())
            .await;
    }
}

/// Creates an order; returns its number.
async fn order(checkout: &Checkout, customer: &str) -> i64 {
    let body = format!(
        r#"{{"customer":"{customer}","items":[{{"sku":"tea","quantity":2,"price_cents":450}}]}}"#
    );
    let answer = post(&checkout.url("/orders"), Some(&body)).await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    let order: serde_json::Value = serde_json::from_str(&answer.body).unwrap();
    order["id"].as_i64().expect("an order number")
}

/// Rows of the SQLite outbox: (all, unpublished).
async fn outbox_rows(database: &str) -> (i64, i64) {
    use sqlx::Connection;
    let mut connection = sqlx::SqliteConnection::connect(database)
        .await
        .expect("open the SQLite database");
    sqlx::query_as(
        "SELECT COUNT(*), COALESCE(SUM(CASE WHEN published_at IS NULL THEN 1 ELSE 0 END), 0) FROM outbox",
    )
    .fetch_one(&mut connection)
    .await
    .expect("count the outbox")
}

/// A database file that outlives one checkout process.
struct Store {
    _dir: TempDir,
    url: String,
}

impl Store {
    fn new(label: &str) -> Store {
        let dir = TempDir::new(label);
        let url = format!("sqlite://{}", dir.path().join("orders.db").display());
        Store { _dir: dir, url }
    }
}

#[tokio::test]
async fn every_order_is_published_once_with_its_number_as_message_id() {
    if !support::require_service("RabbitMQ", RABBITMQ) {
        return;
    }
    let mut queue = TestQueue::declare("once").await;
    let store = Store::new("once");
    let checkout = Checkout::start(&[
        "--database-url",
        &store.url,
        "--amqp-url",
        &amqp_url(RABBITMQ),
        "--amqp-queue",
        &queue.name,
    ]);
    wait_ready(&checkout).await;

    let mut orders = Vec::new();
    for n in 0..25 {
        orders.push(order(&checkout, &format!("ada-{n}")).await);
    }
    queue
        .wait_for(&orders, Duration::from_secs(20), &checkout)
        .await;
    // Anything published twice would arrive right behind the first copy.
    tokio::time::sleep(Duration::from_secs(1)).await;
    queue.drain().await;
    assert!(queue.malformed.is_empty(), "{:?}", queue.malformed);
    assert_eq!(queue.received.len(), orders.len(), "{:?}", queue.received);
    assert_eq!(queue.duplicates(), 0, "{:?}", queue.received);
    let published = poll_until(
        Duration::from_secs(10),
        "every outbox row marked published",
        || async {
            let (all, unpublished) = outbox_rows(&store.url).await;
            (unpublished == 0).then_some(all)
        },
    )
    .await;
    assert_eq!(published, orders.len() as i64);

    let readyz = get(&checkout.admin_url("/readyz?verbose")).await;
    assert_eq!(readyz.status, 200, "{}", readyz.body);
    assert!(readyz.body.contains("[+]broker ok"), "{}", readyz.body);
    let livez = get(&checkout.admin_url("/livez?verbose")).await;
    assert_eq!(livez.status, 200, "{}", livez.body);
    assert!(livez.body.contains("outbox"), "{}", livez.body);
    let metrics = get(&checkout.admin_url("/metrics")).await.body;
    assert!(
        metrics.contains(&format!("checkout_outbox_published_total {}", orders.len())),
        "{metrics}"
    );
    eprintln!(
        "published {} orders, {} duplicates",
        queue.received.len(),
        queue.duplicates()
    );
    queue.delete().await;
}

/// The same relay on PostgreSQL: the outbox migration, the order's transaction, the reads and
/// the marks in PostgreSQL's SQL.
#[tokio::test]
async fn orders_stored_in_postgres_are_published_once_each() {
    const POSTGRES: &str = "127.0.0.1:5432";
    if !support::require_service("RabbitMQ", RABBITMQ)
        || !support::require_service("PostgreSQL", POSTGRES)
    {
        return;
    }
    use sqlx::Connection;
    let name = format!("checkout_e2e_outbox_{}", std::process::id());
    let admin = format!("postgres://postgres@{POSTGRES}/test");
    let mut connection = sqlx::PgConnection::connect(&admin)
        .await
        .expect("connect to PostgreSQL as postgres");
    for statement in [
        format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        format!("CREATE DATABASE {name}"),
    ] {
        sqlx::raw_sql(sqlx::AssertSqlSafe(statement))
            .execute(&mut connection)
            .await
            .expect("create the test database");
    }
    let url = format!("postgres://postgres@{POSTGRES}/{name}");

    let mut queue = TestQueue::declare("postgres").await;
    let checkout = Checkout::start(&[
        "--database-url",
        &url,
        "--amqp-url",
        &amqp_url(RABBITMQ),
        "--amqp-queue",
        &queue.name,
    ]);
    wait_ready(&checkout).await;
    let mut orders = Vec::new();
    for n in 0..10 {
        orders.push(order(&checkout, &format!("pg-{n}")).await);
    }
    queue
        .wait_for(&orders, Duration::from_secs(20), &checkout)
        .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    queue.drain().await;
    assert!(queue.malformed.is_empty(), "{:?}", queue.malformed);
    assert_eq!(queue.received.len(), orders.len(), "{:?}", queue.received);
    assert_eq!(queue.duplicates(), 0, "{:?}", queue.received);
    let unpublished = poll_until(Duration::from_secs(10), "every row marked", || {
        let url = url.clone();
        async move {
            let mut database = sqlx::PgConnection::connect(&url).await.expect("connect");
            let (count,): (i64,) =
                sqlx::query_as("SELECT COUNT(*) FROM outbox WHERE published_at IS NULL")
                    .fetch_one(&mut database)
                    .await
                    .expect("count the outbox");
            (count == 0).then_some(count)
        }
    })
    .await;
    assert_eq!(unpublished, 0);
    drop(checkout);
    queue.delete().await;
    let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
    )))
    .execute(&mut connection)
    .await;
}

/// Without `--amqp-url` nothing changes: no relay, no `broker` check, no `outbox` heartbeat,
/// and the wedge fault says there is nothing to wedge. The outbox row is still written with
/// the order, in its transaction, for a relay started later.
#[tokio::test]
async fn without_an_amqp_url_there_is_no_relay() {
    let store = Store::new("no-relay");
    let checkout = Checkout::start(&["--chaos", "--database-url", &store.url]);
    wait_ready(&checkout).await;
    let id = order(&checkout, "grace").await;
    assert_eq!(outbox_rows(&store.url).await, (1, 1), "order {id}");
    let readyz = get(&checkout.admin_url("/readyz?verbose")).await;
    assert!(!readyz.body.contains("broker"), "{}", readyz.body);
    let livez = get(&checkout.admin_url("/livez?verbose")).await;
    assert!(!livez.body.contains("outbox"), "{}", livez.body);
    let wedge = post(&checkout.admin_url("/chaos/wedge-worker"), None).await;
    assert_eq!(wedge.status, 409, "{}", wedge.body);
    assert!(wedge.body.contains("--amqp-url"), "{}", wedge.body);
    assert_eq!(get(&checkout.url("/livez")).await.status, 200);
}

#[tokio::test]
async fn a_wedged_relay_fails_liveness_and_a_restart_drains_the_outbox() {
    if !support::require_service("RabbitMQ", RABBITMQ) {
        return;
    }
    let mut queue = TestQueue::declare("wedge").await;
    let queue_name = queue.name.clone();
    let store = Store::new("wedge");
    let args = [
        "--chaos",
        "--database-url",
        &store.url,
        "--amqp-url",
        &amqp_url(RABBITMQ),
        "--amqp-queue",
        &queue_name,
        "--outbox-max-silence",
        "1s",
    ];
    let checkout = Checkout::start(&args);
    wait_ready(&checkout).await;
    let mut before = Vec::new();
    for n in 0..5 {
        before.push(order(&checkout, &format!("before-{n}")).await);
    }
    queue
        .wait_for(&before, Duration::from_secs(20), &checkout)
        .await;

    let wedged = post(&checkout.admin_url("/chaos/wedge-worker"), None).await;
    assert_eq!(wedged.status, 202, "{}", wedged.body);
    let wedged_at = Instant::now();
    let livez = poll_until(Duration::from_secs(15), "/livez 503", || async {
        let answer = get(&checkout.admin_url("/livez?verbose")).await;
        (answer.status == 503).then_some(answer)
    })
    .await;
    let to_failure = wedged_at.elapsed();
    assert!(
        livez.body.contains("[-]outbox failed: worker silent for"),
        "{}",
        livez.body
    );
    let public = get(&checkout.url("/livez")).await;
    assert_eq!(public.status, 503);
    assert!(public.body.contains("outbox"), "{}", public.body);
    let readyz = get(&checkout.url("/readyz")).await;
    assert_eq!(
        readyz.status, 503,
        "readiness follows liveness: {}",
        readyz.body
    );

    // Orders are still taken (the database is fine) and wait in the outbox.
    let mut during = Vec::new();
    for n in 0..5 {
        during.push(order(&checkout, &format!("during-{n}")).await);
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    queue.drain().await;
    for id in &during {
        assert!(
            !queue.received.contains_key(id),
            "order {id} published by a wedged relay"
        );
    }
    assert_eq!(outbox_rows(&store.url).await.1, during.len() as i64);

    // What the kubelet does: kill the container, start a new one on the same database.
    drop(checkout);
    let restarted = Checkout::start(&args);
    wait_ready(&restarted).await;
    let drained_from = Instant::now();
    queue
        .wait_for(&during, Duration::from_secs(20), &restarted)
        .await;
    let drained_in = drained_from.elapsed();
    tokio::time::sleep(Duration::from_secs(1)).await;
    queue.drain().await;
    let all: Vec<i64> = before.iter().chain(&during).copied().collect();
    assert!(queue.malformed.is_empty(), "{:?}", queue.malformed);
    assert_eq!(
        queue.received.keys().copied().collect::<Vec<_>>(),
        all,
        "lost or unknown orders"
    );
    assert_eq!(queue.duplicates(), 0, "{:?}", queue.received);
    assert_eq!(get(&restarted.url("/livez")).await.status, 200);
    eprintln!(
        "wedge → /livez 503 in {to_failure:?} (bound 1s); after the restart {} waiting orders \
         drained in {drained_in:?}; {} orders received, {} duplicates",
        during.len(),
        queue.received.len(),
        queue.duplicates()
    );
    queue.delete().await;
}

#[tokio::test]
async fn a_broker_outage_ten_times_the_heartbeat_bound_fails_no_liveness_probe() {
    if !support::require_service("RabbitMQ", RABBITMQ) {
        return;
    }
    let mut queue = TestQueue::declare("outage").await;
    let store = Store::new("outage");
    let forwarder = support::Forwarder::start(RABBITMQ);
    let bound = Duration::from_secs(1);
    let checkout = Checkout::start(&[
        "--database-url",
        &store.url,
        "--amqp-url",
        &amqp_url(&forwarder.address.to_string()),
        "--amqp-queue",
        &queue.name,
        "--outbox-max-silence",
        "1s",
    ]);
    wait_ready(&checkout).await;
    let first = order(&checkout, "before").await;
    queue
        .wait_for(&[first], Duration::from_secs(20), &checkout)
        .await;

    let outage = bound * 10;
    forwarder.cut();
    let cut_at = Instant::now();
    let livez_url = checkout.url("/livez");
    let livez = support::poll_statuses(&livez_url, Duration::from_millis(100), outage);
    let during = async {
        // Orders keep being taken at once: they wait in the outbox.
        let mut orders = Vec::new();
        for _ in 0..10 {
            orders.push(order(&checkout, &format!("during-{}", orders.len())).await);
        }
        let degraded = poll_until(
            Duration::from_secs(8),
            "/readyz degraded on the broker",
            || async {
                let answer = get(&checkout.admin_url("/readyz?verbose")).await;
                answer
                    .body
                    .contains("[!]broker degraded (soft)")
                    .then_some(answer)
            },
        )
        .await;
        assert_eq!(degraded.status, 200, "{}", degraded.body);
        // Silent past its bound, and excused: it is inside a declared, bounded wait.
        let excused_by = Instant::now() + Duration::from_secs(8);
        // The text format names passing entries only; the JSON one gives their reason.
        let excused = loop {
            let answer =
                support::get_accept(&checkout.admin_url("/livez"), "application/json").await;
            if answer.body.contains("waiting on broker") {
                break answer;
            }
            assert!(
                Instant::now() < excused_by,
                "the relay never waited on the broker; last /livez: {}\n{}",
                answer.body,
                checkout.stderr.text()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(excused.status, 200, "{}", excused.body);
        while cut_at.elapsed() < outage - Duration::from_secs(1) {
            orders.push(order(&checkout, &format!("during-{}", orders.len())).await);
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let readyz = get(&checkout.url("/readyz")).await;
        (orders, degraded.body, excused.body, readyz)
    };
    let (livez, (during, degraded, waiting, readyz)) = tokio::join!(livez, during);
    queue.drain().await;
    let published_during: Vec<&i64> = during
        .iter()
        .filter(|id| queue.received.contains_key(id))
        .collect();
    assert!(
        published_during.is_empty(),
        "published through a cut forwarder: {published_during:?}"
    );
    let backlog = outbox_rows(&store.url).await.1;
    forwarder.restore();
    let restored_at = Instant::now();
    let outage_lasted = cut_at.elapsed();

    assert!(livez.len() >= 20, "too few liveness polls: {livez:?}");
    assert!(
        livez.iter().all(|&status| status == 200),
        "a broker outage failed liveness: {livez:?}\n{}",
        checkout.stderr.text()
    );
    assert_eq!(readyz.status, 200, "{}", readyz.body);
    assert!(
        degraded.contains("relay not connected to"),
        "the broker check says why: {degraded}"
    );
    assert!(
        during.len() >= 10,
        "orders taken during the outage: {during:?}"
    );
    assert_eq!(backlog, during.len() as i64);

    queue
        .wait_for(&during, Duration::from_secs(20), &checkout)
        .await;
    let drained_in = restored_at.elapsed();
    tokio::time::sleep(Duration::from_secs(1)).await;
    queue.drain().await;
    assert!(queue.malformed.is_empty(), "{:?}", queue.malformed);
    assert_eq!(
        queue.received.len(),
        during.len() + 1,
        "{:?}",
        queue.received
    );
    assert_eq!(queue.duplicates(), 0, "{:?}", queue.received);
    poll_until(Duration::from_secs(10), "/readyz broker ok", || async {
        let answer = get(&checkout.admin_url("/readyz?verbose")).await;
        answer.body.contains("[+]broker ok").then_some(())
    })
    .await;
    assert!(
        !checkout.output().contains("guest:guest"),
        "{}",
        checkout.output()
    );
    eprintln!(
        "outage {outage_lasted:?} ({}× the {bound:?} bound): {} liveness polls, all 200; last \
         liveness excused while cut: {:?}; {} orders taken during it, drained {drained_in:?} after the \
         broker returned; {} duplicates",
        outage_lasted.as_secs_f64() / bound.as_secs_f64(),
        livez.len(),
        waiting,
        during.len(),
        queue.duplicates()
    );
    queue.delete().await;
}

/// Every string the service shows while its broker refuses connections, without the password.
#[tokio::test]
async fn no_broker_credential_appears_anywhere() {
    const SECRET: &str = "Amqp-S3cret-Pw";
    let closed = support::free_address();
    let url = format!("amqp://checkout:{SECRET}@{closed}/%2f");
    let store = Store::new("amqp-creds");
    let mut checkout = Checkout::start(&[
        "--chaos",
        "--drain-delay",
        "0s",
        "--database-url",
        &store.url,
        "--amqp-url",
        &url,
    ]);
    wait_ready(&checkout).await;
    let degraded = poll_until(
        Duration::from_secs(15),
        "the broker check failing",
        || async {
            let answer = get(&checkout.admin_url("/readyz/broker")).await;
            answer
                .body
                .to_lowercase()
                .contains("refused")
                .then_some(answer.body)
        },
    )
    .await;
    assert!(degraded.contains(&closed.to_string()), "{degraded}");
    order(&checkout, "grace").await;
    let mut said = String::new();
    for base in [checkout.url(""), checkout.admin_url("")] {
        for path in [
            "/livez?verbose",
            "/readyz?verbose",
            "/readyz/broker",
            "/contract",
            "/metrics",
        ] {
            for accept in ["text/plain", "application/json", "application/health+json"] {
                let answer = support::get_accept(&format!("{base}{path}"), accept).await;
                said.push_str(&answer.body);
            }
        }
    }
    said.push_str(
        &post(&checkout.admin_url("/chaos/wedge-worker"), None)
            .await
            .body,
    );
    assert!(!said.contains(SECRET), "{said}");
    checkout.signal("TERM");
    assert!(
        checkout.wait_exit(Duration::from_secs(20)).await.is_some(),
        "no exit after SIGTERM"
    );
    let output = checkout.output();
    assert!(output.contains("outbox relay cannot publish"), "{output}");
    assert!(!output.contains(SECRET), "{output}");

    let (status, _, stderr) = support::run_to_exit(
        &["--amqp-url", &format!("http://checkout:{SECRET}@broker/")],
        Duration::from_secs(20),
    );
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--amqp-url"), "{stderr}");
    assert!(!stderr.contains(SECRET), "{stderr}");
}
