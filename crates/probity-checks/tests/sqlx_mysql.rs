//! `sqlx::MySqlPool` capacity and reachability against the real MariaDB on 127.0.0.1:3306.

#![cfg(feature = "sqlx-mysql")]

#[macro_use]
mod support;

use probity::Check;
use probity_checks::sqlx_pool::PoolCheck;
use sqlx::mysql::{MySqlConnectOptions, MySqlPoolOptions};
use sqlx::{MySqlPool, Row};
use std::time::Duration;
use support::{assert_no_secret, failure, figure, poll, success};

const ADDRESS: &str = "127.0.0.1:3306";
const URL: &str = "mysql://root@127.0.0.1:3306/test";
const TIMEOUT: Duration = Duration::from_secs(2);

async fn new_pool(max: u32) -> MySqlPool {
    MySqlPoolOptions::new()
        .max_connections(max)
        .acquire_timeout(Duration::from_secs(5))
        .connect(URL)
        .await
        .expect("connect to mariadb")
}

async fn wait_idle(pool: &MySqlPool, idle: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while pool.num_idle() != idle && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(pool.num_idle(), idle, "idle connections");
}

#[tokio::test]
async fn passes_against_the_live_server() {
    require!("mariadb", ADDRESS);
    let check = PoolCheck::new(new_pool(3).await);
    assert_eq!(check.dependency(), Some("mysql"));
    let detail = success(poll(&check, TIMEOUT).await);
    assert_eq!(figure(&detail.measurements, "max"), Some(3.0));
}

#[tokio::test]
async fn exhausted_pool_fails_naming_the_figures_and_recovers_on_release() {
    require!("mariadb", ADDRESS);
    let pool = new_pool(2).await;
    let check = PoolCheck::new(pool.clone());
    let held = vec![
        pool.acquire().await.expect("acquire"),
        pool.acquire().await.expect("acquire"),
    ];
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(error.message(), "no connection within 1.5s: 2 of 2 in use");
    drop(held);
    success(support::until_ok(&check, TIMEOUT, Duration::from_secs(5)).await);
}

#[tokio::test]
async fn closed_port_is_refused_by_address() {
    let port = support::closed_port().await;
    let options = MySqlConnectOptions::new()
        .host("127.0.0.1")
        .port(port)
        .username("root");
    let pool = MySqlPoolOptions::new()
        .max_connections(2)
        .connect_lazy_with(options);
    let error = failure(poll(&PoolCheck::new(pool), TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!("connection refused (127.0.0.1:{port})")
    );
}

#[tokio::test]
async fn server_that_never_answers_times_out() {
    let address = support::silent_listener().await;
    let options = MySqlConnectOptions::new()
        .host("127.0.0.1")
        .port(address.port())
        .username("root");
    let pool = MySqlPoolOptions::new()
        .max_connections(2)
        .connect_lazy_with(options);
    let error = failure(poll(&PoolCheck::new(pool), Duration::from_millis(500)).await);
    assert_eq!(error.message(), "timed out after 500ms");
}

#[tokio::test]
async fn killed_idle_connection_is_replaced() {
    require!("mariadb", ADDRESS);
    let pool = new_pool(2).await;
    wait_idle(&pool, 1).await;
    let id: u64 = {
        let mut connection = pool.acquire().await.expect("acquire");
        sqlx::query("SELECT CONNECTION_ID()")
            .fetch_one(&mut *connection)
            .await
            .expect("id")
            .get(0)
    };
    wait_idle(&pool, 1).await;
    let admin = new_pool(1).await;
    sqlx::query(sqlx::AssertSqlSafe(format!("KILL {id}")))
        .execute(&admin)
        .await
        .expect("kill");
    let detail = success(poll(&PoolCheck::new(pool), TIMEOUT).await);
    let message = detail.message.unwrap_or_default();
    assert!(
        message.contains("closed a broken idle connection"),
        "{message}"
    );
}

#[tokio::test]
async fn wrong_password_is_named_and_never_shown() {
    require!("mariadb", ADDRESS);
    let pool = MySqlPoolOptions::new()
        .max_connections(2)
        .connect_lazy("mysql://root:hunter2-s3cret@127.0.0.1:3306/test")
        .expect("parse url");
    let error = failure(poll(&PoolCheck::new(pool), TIMEOUT).await);
    assert!(
        error
            .message()
            .starts_with("database error [28000] (127.0.0.1:3306): Access denied for user 'root'"),
        "{}",
        error.message()
    );
    assert_no_secret(&error, &["hunter2-s3cret"]);
}
