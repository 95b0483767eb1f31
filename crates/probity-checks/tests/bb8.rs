//! bb8-postgres pool capacity (with waiters) and reachability against the real PostgreSQL.

#![cfg(feature = "bb8-postgres")]

#[macro_use]
mod support;

use bb8::Pool;
use bb8_postgres::PostgresConnectionManager;
use probity::Check;
use probity_checks::bb8_pool::PoolCheck;
use std::time::Duration;
use support::{assert_no_secret, failure, figure, poll, success};
use tokio_postgres::{Config, NoTls};

const ADDRESS: &str = "127.0.0.1:5432";
const TIMEOUT: Duration = Duration::from_secs(2);

async fn pool(config: Config, max: u32) -> Pool<PostgresConnectionManager<NoTls>> {
    Pool::builder()
        .max_size(max)
        .min_idle(Some(0))
        .connection_timeout(Duration::from_secs(30))
        .build_unchecked(PostgresConnectionManager::new(config, NoTls))
}

fn config(port: u16) -> Config {
    let mut config = Config::new();
    config
        .host("127.0.0.1")
        .port(port)
        .user("postgres")
        .dbname("test");
    config
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
    let check = PoolCheck::new(pool(config(5432), 3).await);
    assert_eq!(check.dependency(), Some("postgres"));
    let detail = success(poll(&check, TIMEOUT).await);
    assert_eq!(figure(&detail.measurements, "max"), Some(3.0));
    assert_eq!(figure(&detail.measurements, "waiting"), Some(0.0));
}

#[tokio::test]
async fn exhausted_pool_with_waiters_fails_naming_the_figures_and_recovers() {
    require!("postgres", ADDRESS);
    let pool = pool(config(5432), 2).await;
    let check = PoolCheck::new(pool.clone());
    let held = vec![
        pool.get_owned().await.expect("get"),
        pool.get_owned().await.expect("get"),
    ];
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move { pool.get_owned().await.map(drop) })
        })
        .collect();
    wait_until(|| pool.state().statistics.pending_gets() == 3).await;
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(
        error.message(),
        "no connection within 1.5s: 2 of 2 in use, 3 waiting"
    );
    assert_eq!(figure(error.measurements(), "waiting"), Some(3.0));
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
async fn closed_port_is_refused_by_address() {
    let port = support::closed_port().await;
    let check = PoolCheck::new(pool(config(port), 2).await).target(format!("127.0.0.1:{port}"));
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!("connection refused (127.0.0.1:{port})")
    );
}

#[tokio::test]
async fn server_that_never_answers_times_out() {
    let address = support::silent_listener().await;
    let check = PoolCheck::new(pool(config(address.port()), 2).await);
    let error = failure(poll(&check, Duration::from_millis(500)).await);
    assert_eq!(error.message(), "timed out after 500ms");
}

#[tokio::test]
async fn server_errors_are_named_and_passwords_never_show() {
    require!("postgres", ADDRESS);
    let config: Config =
        "postgresql://postgres:hunter2-s3cret@127.0.0.1:5432/probity_no_such_database"
            .parse()
            .expect("url");
    let error = failure(poll(&PoolCheck::new(pool(config, 2).await), TIMEOUT).await);
    assert_eq!(
        error.message(),
        "database error [3D000]: database \"probity_no_such_database\" does not exist"
    );
    assert_no_secret(&error, &["hunter2-s3cret"]);
}
