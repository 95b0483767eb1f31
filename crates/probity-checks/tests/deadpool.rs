//! deadpool-postgres pool capacity (with waiters) and reachability against the real PostgreSQL.

#![cfg(feature = "deadpool-postgres")]

#[macro_use]
mod support;

use deadpool_postgres::{Manager, Pool};
use probity::Check;
use probity_checks::deadpool::PoolCheck;
use std::time::Duration;
use support::{failure, figure, poll, success};
use tokio_postgres::{Config, NoTls};

const ADDRESS: &str = "127.0.0.1:5432";
const TIMEOUT: Duration = Duration::from_secs(2);

fn pool(port: u16, max: usize, application: &str) -> Pool {
    let mut config = Config::new();
    config
        .host("127.0.0.1")
        .port(port)
        .user("postgres")
        .dbname("test")
        .application_name(application);
    Pool::builder(Manager::new(config, NoTls))
        .max_size(max)
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .build()
        .expect("pool")
}

async fn wait_until(condition: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not met in 5s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn passes_against_the_live_server() {
    require!("postgres", ADDRESS);
    let pool = pool(5432, 4, "probity-deadpool");
    let check = PoolCheck::new(pool.clone());
    assert_eq!(check.dependency(), Some("postgres"));
    let detail = success(poll(&check, TIMEOUT).await);
    assert_eq!(figure(&detail.measurements, "max"), Some(4.0));
    assert_eq!(figure(&detail.measurements, "waiting"), Some(0.0));
    // The connection it made stays in the pool for requests.
    assert_eq!(pool.status().size, 1);
}

#[tokio::test]
async fn exhausted_pool_with_waiters_fails_naming_the_figures_and_recovers() {
    require!("postgres", ADDRESS);
    let pool = pool(5432, 3, "probity-deadpool");
    let check = PoolCheck::new(pool.clone());
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(pool.get().await.expect("get"));
    }
    // Full and nothing comes back within the budget (three quarters of the poll's 2 s).
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(error.message(), "no connection within 1.5s: 3 of 3 in use");
    assert_eq!(figure(error.measurements(), "utilization"), Some(100.0));

    let waiters: Vec<_> = (0..2)
        .map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move { pool.get().await.map(drop) })
        })
        .collect();
    wait_until(|| pool.status().waiting == 2).await;
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(
        error.message(),
        "no connection within 1.5s: 3 of 3 in use, 2 waiting"
    );
    assert_eq!(figure(error.measurements(), "waiting"), Some(2.0));
    assert_eq!(figure(error.measurements(), "connections"), Some(3.0));

    drop(held);
    for waiter in waiters {
        waiter
            .await
            .expect("join")
            .expect("waiter got a connection");
    }
    success(poll(&check, TIMEOUT).await);
}

#[tokio::test]
async fn utilization_above_the_limit_warns_and_never_fails() {
    require!("postgres", ADDRESS);
    let pool = pool(5432, 4, "probity-deadpool");
    let check = PoolCheck::new(pool.clone()).warn_above(50.0);
    let held = [
        pool.get().await.expect("get"),
        pool.get().await.expect("get"),
        pool.get().await.expect("get"),
    ];
    let detail = success(poll(&check, TIMEOUT).await);
    assert_eq!(
        detail.warning.as_deref(),
        Some("busy: 3 of 4 in use (utilization 75% above 50%)")
    );
    drop(held);
    success(support::until_clear(&check, TIMEOUT, Duration::from_secs(5)).await);
}

#[tokio::test]
async fn a_busy_pool_whose_connections_cycle_passes_with_a_warning() {
    require!("postgres", ADDRESS);
    let pool = pool(5432, 2, "probity-deadpool");
    let check = PoolCheck::new(pool.clone());
    let first = pool.get().await.expect("get");
    let second = pool.get().await.expect("get");
    let release = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        drop(first);
    });
    let detail = success(poll(&check, TIMEOUT).await);
    let warning = detail.warning.clone().unwrap_or_default();
    assert!(
        warning.starts_with("busy: 2 of 2 in use, acquired in "),
        "{detail:?}"
    );
    release.await.expect("release");
    drop(second);
}

#[tokio::test]
async fn terminated_connection_is_removed_and_replaced() {
    require!("postgres", ADDRESS);
    let application = format!("probity-deadpool-{}", std::process::id());
    let pool = pool(5432, 2, &application);
    let check = PoolCheck::new(pool.clone());
    success(poll(&check, TIMEOUT).await);
    assert_eq!(pool.status().size, 1);
    let admin = self::pool(5432, 1, "probity-admin");
    let admin = admin.get().await.expect("admin");
    let row = admin
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1",
            &[&application],
        )
        .await
        .expect("terminate");
    assert_eq!(row.get::<_, i64>(0), 1);
    // Whether deadpool's recycle or the check's round trip notices first, the check passes
    // through a live connection and the dead one is gone.
    success(poll(&check, TIMEOUT).await);
    assert_eq!(pool.status().size, 1);
    success(poll(&check, TIMEOUT).await);
}

#[tokio::test]
async fn closed_port_is_refused_by_address() {
    let port = support::closed_port().await;
    let check = PoolCheck::new(pool(port, 2, "probity")).target(format!("127.0.0.1:{port}"));
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!("connection refused (127.0.0.1:{port})")
    );
}

#[tokio::test]
async fn server_that_never_answers_times_out() {
    let address = support::silent_listener().await;
    let check = PoolCheck::new(pool(address.port(), 2, "probity"));
    let error = failure(poll(&check, Duration::from_millis(500)).await);
    assert_eq!(error.message(), "timed out after 500ms");
}

#[tokio::test]
async fn closed_pool_fails() {
    let pool = pool(5432, 2, "probity");
    pool.close();
    let error = failure(poll(&PoolCheck::new(pool), TIMEOUT).await);
    assert_eq!(error.message(), "pool is closed");
}
