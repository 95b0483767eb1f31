//! Degraded reads: with the database cut for every instance and Redis up, checkout stays in
//! rotation (`/readyz` 200, `warn`), serves cached orders marked stale (`Age`, RFC 9211
//! `Cache-Status`, `x-degraded: db`) and sheds writes without processing them; a fault of the
//! instance's own (its pool exhausted while the database answers) still drains it. Against
//! the real PostgreSQL and Redis, through a TCP forwarder that cuts the database.

mod support;

use redis::AsyncCommands;
use sqlx::Connection;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use support::{Checkout, Forwarder, POSTGRES, TestDatabase, get, poll_until, post, wait_ready};

const REDIS: &str = "127.0.0.1:6379";
const REDIS_URL: &str = "redis://127.0.0.1:6379";
const POOL_SIZE: usize = 4;

/// A key prefix of this test's own, so runs sharing the Redis never meet.
fn prefix(label: &str) -> String {
    format!("checkout-test-{label}-{}", std::process::id())
}

async fn rows(database: &TestDatabase) -> i64 {
    let mut connection = sqlx::PgConnection::connect(&format!(
        "postgres://postgres@{POSTGRES}/{}",
        database.name()
    ))
    .await
    .expect("connect to the test database directly");
    sqlx::query_scalar("SELECT COUNT(*) FROM orders")
        .fetch_one(&mut connection)
        .await
        .expect("count orders")
}

async fn create(checkout: &Checkout, customer: &str) -> String {
    let created = post(
        &checkout.url("/orders"),
        Some(&format!(
            r#"{{"customer":"{customer}","items":[{{"sku":"tea","quantity":1,"price_cents":450}}]}}"#
        )),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    created.header("location").unwrap().to_owned()
}

/// Status codes of requests sent as fast as answered from `workers` clients until stopped or
/// `limit` has passed, with the `x-degraded` headers seen on 200s.
struct Traffic {
    stop: Arc<AtomicBool>,
    workers: Vec<tokio::task::JoinHandle<(BTreeMap<u16, u64>, u64)>>,
}

impl Traffic {
    fn start(
        workers: usize,
        limit: Duration,
        request: impl Fn(&reqwest::Client, usize, u64) -> reqwest::RequestBuilder
        + Send
        + Sync
        + Clone
        + 'static,
    ) -> Traffic {
        let stop = Arc::new(AtomicBool::new(false));
        let until = Instant::now() + limit;
        let workers = (0..workers)
            .map(|worker| {
                let (stop, request) = (stop.clone(), request.clone());
                tokio::spawn(async move {
                    let client = support::client(Duration::from_secs(10));
                    let (mut statuses, mut errors) = (BTreeMap::new(), 0);
                    let mut sent = 0u64;
                    while !stop.load(Ordering::Relaxed) && Instant::now() < until {
                        match request(&client, worker, sent).send().await {
                            Ok(answer) => {
                                *statuses.entry(answer.status().as_u16()).or_insert(0) += 1;
                                let _ = answer.bytes().await;
                            }
                            Err(_) => errors += 1,
                        }
                        sent += 1;
                    }
                    (statuses, errors)
                })
            })
            .collect();
        Traffic { stop, workers }
    }

    async fn stop(self) -> (BTreeMap<u16, u64>, u64) {
        self.stop.store(true, Ordering::Relaxed);
        let (mut statuses, mut errors) = (BTreeMap::new(), 0);
        for worker in self.workers {
            let (seen, failed) = worker.await.expect("traffic worker");
            for (status, count) in seen {
                *statuses.entry(status).or_insert(0) += count;
            }
            errors += failed;
        }
        (statuses, errors)
    }
}

#[tokio::test]
async fn with_the_database_cut_cached_orders_are_served_stale_and_writes_are_shed() {
    if !support::require_service("PostgreSQL", POSTGRES)
        || !support::require_service("Redis", REDIS)
    {
        return;
    }
    let database = TestDatabase::create("degraded").await;
    let forwarder = Forwarder::start(POSTGRES);
    let prefix = prefix("degraded");
    let pool_size = POOL_SIZE.to_string();
    let checkout = Checkout::start(&[
        "--database-url",
        &database.url_via(forwarder.address),
        "--redis-url",
        REDIS_URL,
        "--cache-prefix",
        &prefix,
        "--pool-size",
        &pool_size,
    ]);
    wait_ready(&checkout).await;

    let mut orders = Vec::new();
    for customer in 0..8 {
        orders.push(create(&checkout, &format!("reader-{customer}")).await);
    }
    // Fresh hits while the database serves.
    let fresh = poll_until(Duration::from_secs(10), "a fresh cache hit", || async {
        let answer = get(&checkout.url(&orders[0])).await;
        (answer.header("cache-status") == Some("checkout; hit")).then_some(answer)
    })
    .await;
    assert_eq!(fresh.status, 200);
    assert_eq!(fresh.header("x-degraded"), None);
    assert!(
        fresh
            .header("age")
            .is_some_and(|age| age.parse::<u64>().is_ok())
    );
    let before = rows(&database).await;
    assert_eq!(before, 8);

    // Cut the database for everyone, under reads (four times the pool) and writes.
    forwarder.cut();
    let cut_at = Instant::now();
    let base = checkout.url("");
    let reads = Traffic::start(POOL_SIZE * 4, Duration::from_secs(60), {
        let (base, orders) = (base.clone(), orders.clone());
        move |client, worker, sent| {
            let order = &orders[(worker + sent as usize) % orders.len()];
            client.get(format!("{base}{order}"))
        }
    });
    let writes = Traffic::start(POOL_SIZE, Duration::from_secs(60), {
        let base = base.clone();
        move |client, worker, _| {
            client
                .post(format!("{base}/orders"))
                .header("content-type", "application/json")
                .body(format!(
                    r#"{{"customer":"writer-{worker}","items":[{{"sku":"x","quantity":1,"price_cents":1}}]}}"#
                ))
        }
    });

    // Degraded: in rotation, saying what serves instead.
    let readyz = poll_until(
        Duration::from_secs(15),
        "/readyz degraded on db",
        || async {
            let answer = get(&checkout.url("/readyz")).await;
            answer
                .body
                .contains("(degraded: cache serves instead)")
                .then_some(answer)
        },
    )
    .await;
    eprintln!(
        "observed: database cut → /readyz degraded in {:?}",
        cut_at.elapsed()
    );
    assert_eq!(readyz.status, 200, "{}", readyz.body);
    assert!(
        readyz.body.contains("(degraded: cache serves instead)")
            && readyz.body.ends_with("readyz check passed with warnings\n"),
        "{}",
        readyz.body
    );
    // A cached order, marked stale.
    let stale = poll_until(Duration::from_secs(5), "a stale hit", || async {
        let answer = get(&checkout.url(&orders[3])).await;
        (answer.header("x-degraded") == Some("db")).then_some(answer)
    })
    .await;
    assert_eq!(stale.status, 200, "{}", stale.body);
    assert_eq!(
        stale.header("cache-status"),
        Some("checkout; hit; detail=stale")
    );
    assert!(
        stale
            .header("age")
            .is_some_and(|age| age.parse::<u64>().is_ok())
    );
    let order: serde_json::Value = serde_json::from_str(&stale.body).unwrap();
    assert_eq!(order["customer"], "reader-3");
    // An order the cache does not hold: 503 at once, naming the degraded dependency.
    let started = Instant::now();
    let missing = get(&checkout.url("/orders/987654")).await;
    assert_eq!(missing.status, 503, "{}", missing.body);
    assert_eq!(missing.header("retry-after"), Some("1"));
    assert_eq!(missing.header("x-degraded"), Some("db"));
    assert!(
        started.elapsed() < Duration::from_millis(400),
        "waited on the pool"
    );
    // A write: shed, not processed.
    let write = post(
        &checkout.url("/orders"),
        Some(r#"{"customer":"late","items":[{"sku":"x","quantity":1,"price_cents":1}]}"#),
    )
    .await;
    assert_eq!(write.status, 503, "{}", write.body);
    assert_eq!(write.header("retry-after"), Some("1"));
    assert_eq!(
        write.body,
        "unavailable (db): the request was not processed; retry\n"
    );
    // Alive all along: a restart would not bring the database back.
    assert_eq!(get(&checkout.url("/livez")).await.status, 200);

    // Keep the outage a few seconds under load, then restore.
    while cut_at.elapsed() < Duration::from_secs(6) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(get(&checkout.url("/readyz")).await.status, 200);
    }
    forwarder.restore();
    let restored_at = Instant::now();
    let fresh = poll_until(Duration::from_secs(20), "fresh hits again", || async {
        let answer = get(&checkout.url(&orders[5])).await;
        (answer.header("cache-status") == Some("checkout; hit")
            && answer.header("x-degraded").is_none())
        .then_some(answer)
    })
    .await;
    eprintln!(
        "observed: database restored → fresh hits in {:?}",
        restored_at.elapsed()
    );
    assert_eq!(fresh.status, 200);
    let (read_statuses, read_errors) = reads.stop().await;
    let (write_statuses, write_errors) = writes.stop().await;
    eprintln!(
        "observed: reads {read_statuses:?} ({read_errors} unanswered), writes {write_statuses:?} ({write_errors} unanswered)"
    );
    // Every read of a cached order was served, before, during and after the cut.
    assert_eq!(read_errors, 0);
    assert_eq!(
        read_statuses.keys().copied().collect::<Vec<_>>(),
        vec![200],
        "{read_statuses:?}"
    );
    // Writes: created, or 503 with nothing committed; never a 500.
    assert_eq!(write_errors, 0);
    assert!(
        write_statuses
            .keys()
            .all(|status| [201, 503].contains(status)),
        "{write_statuses:?}"
    );
    assert!(
        write_statuses.get(&503).copied().unwrap_or(0) > 0,
        "{write_statuses:?}"
    );
    // Exactly the created orders are in the database: no shed or failed write left a row.
    let created = write_statuses.get(&201).copied().unwrap_or(0) as i64;
    poll_until(
        Duration::from_secs(10),
        "the database reachable again",
        || async {
            let answer = get(&checkout.url("/readyz")).await;
            (answer.status == 200 && answer.body == "ok\n").then_some(())
        },
    )
    .await;
    assert_eq!(rows(&database).await, before + created);
}

#[tokio::test]
async fn an_exhausted_pool_drains_the_instance_whatever_the_cache() {
    if !support::require_service("PostgreSQL", POSTGRES)
        || !support::require_service("Redis", REDIS)
    {
        return;
    }
    let database = TestDatabase::create("exhausted").await;
    let prefix = prefix("exhausted");
    let pool_size = POOL_SIZE.to_string();
    let checkout = Checkout::start(&[
        "--chaos",
        "--database-url",
        &database.url(),
        "--redis-url",
        REDIS_URL,
        "--cache-prefix",
        &prefix,
        "--pool-size",
        &pool_size,
    ]);
    wait_ready(&checkout).await;
    let location = create(&checkout, "ada").await;
    let leaked = post(&checkout.admin_url("/chaos/leak-connections"), None).await;
    assert_eq!(leaked.status, 200, "{}", leaked.body);
    // The database answers; only this instance's pool is stuck: drain, do not degrade.
    let readyz = poll_until(Duration::from_secs(10), "/readyz 503", || async {
        let answer = get(&checkout.url("/readyz")).await;
        (answer.status == 503).then_some(answer)
    })
    .await;
    assert!(
        readyz.body.contains(
            "[-]db failed: exhausted (this instance's own fault: cache does not serve for it)"
        ),
        "{}",
        readyz.body
    );
    // Nothing is marked degraded: the instance leaves rotation instead.
    let order = get(&checkout.url(&location)).await;
    assert_eq!(order.header("x-degraded"), None);
    post(&checkout.admin_url("/chaos/release-connections"), None).await;
    poll_until(
        Duration::from_secs(15),
        "/readyz 200 after release",
        || async { (get(&checkout.url("/readyz")).await.status == 200).then_some(()) },
    )
    .await;
}

#[tokio::test]
async fn services_sharing_a_redis_do_not_read_each_others_orders() {
    if !support::require_service("Redis", REDIS) {
        return;
    }
    // Two services, each with its own SQLite database: both number their first order 1.
    let (first, second) = (prefix("shared-a"), prefix("shared-b"));
    let a = Checkout::start(&["--redis-url", REDIS_URL, "--cache-prefix", &first]);
    let b = Checkout::start(&["--redis-url", REDIS_URL, "--cache-prefix", &second]);
    wait_ready(&a).await;
    wait_ready(&b).await;
    let in_a = create(&a, "alice").await;
    let in_b = create(&b, "bob").await;
    assert_eq!(in_a, in_b, "both first orders have the same number");

    for (checkout, customer) in [(&a, "alice"), (&b, "bob")] {
        let answer = poll_until(Duration::from_secs(10), "a cache hit", || async {
            let answer = get(&checkout.url(&in_a)).await;
            (answer.header("x-cache") == Some("hit")).then_some(answer)
        })
        .await;
        let order: serde_json::Value = serde_json::from_str(&answer.body).unwrap();
        assert_eq!(order["customer"], customer);
    }
    // Each under its own key.
    let id = in_a.rsplit('/').next().unwrap();
    let client = redis::Client::open(REDIS_URL).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    for (prefix, customer) in [(&first, "alice"), (&second, "bob")] {
        let key = format!("{prefix}:order:{id}");
        let entry: Option<String> = connection.get(&key).await.unwrap();
        let entry = entry.unwrap_or_else(|| panic!("no entry under {key}"));
        assert!(entry.contains(customer), "{key}: {entry}");
        let _: () = connection.del(&key).await.unwrap();
    }
}
