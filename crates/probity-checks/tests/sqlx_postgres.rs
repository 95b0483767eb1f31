//! `sqlx::PgPool` capacity and reachability against the real PostgreSQL on 127.0.0.1:5432.

#![cfg(feature = "sqlx-postgres")]

#[macro_use]
mod support;

use probity::Check;
use probity_checks::sqlx_pool::PoolCheck;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgPool, Row};
use std::time::Duration;
use support::{assert_no_secret, failure, figure, poll, success};

const ADDRESS: &str = "127.0.0.1:5432";
const URL: &str = "postgres://postgres@127.0.0.1:5432/test";
const TIMEOUT: Duration = Duration::from_secs(2);

/// Waits until the pool's released connections are back (sqlx returns them from a task).
async fn wait_idle(pool: &PgPool, idle: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while pool.num_idle() != idle && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(pool.num_idle(), idle, "idle connections");
}

async fn new_pool(max: u32) -> PgPool {
    PgPoolOptions::new()
        .max_connections(max)
        .acquire_timeout(Duration::from_secs(5))
        .connect(URL)
        .await
        .expect("connect to postgres")
}

#[tokio::test]
async fn passes_against_the_live_server_with_pool_figures() {
    require!("postgres", ADDRESS);
    let pool = new_pool(5).await;
    wait_idle(&pool, 1).await;
    let check = PoolCheck::new(pool.clone());
    assert_eq!(check.dependency(), Some("postgres"));
    assert!(check.default_timing().is_some());

    let detail = success(poll(&check, TIMEOUT).await);
    assert_eq!(figure(&detail.measurements, "max"), Some(5.0));
    assert_eq!(figure(&detail.measurements, "connections"), Some(0.0));
    assert_eq!(figure(&detail.measurements, "utilization"), Some(0.0));
    assert!(
        figure(&detail.measurements, "available").unwrap_or(0.0) >= 4.0,
        "{detail:?}"
    );
    assert_eq!(figure(&detail.measurements, "idle"), Some(1.0));
    // The ping went through the idle connection, which goes back into the pool.
    wait_idle(&pool, 1).await;
    assert_eq!(pool.size(), 1);
}

#[tokio::test]
async fn exhausted_pool_fails_naming_the_figures_and_recovers_on_release() {
    require!("postgres", ADDRESS);
    let pool = new_pool(3).await;
    let check = PoolCheck::new(pool.clone());
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(pool.acquire().await.expect("acquire"));
    }

    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(error.message(), "no connection within 1.5s: 3 of 3 in use");
    // The database answers a direct connection: the exhaustion is this instance's own.
    assert_eq!(error.failure_kind(), probity::FailureKind::Exhausted);
    assert_eq!(figure(error.measurements(), "connections"), Some(3.0));
    assert_eq!(figure(error.measurements(), "available"), Some(0.0));
    assert_eq!(figure(error.measurements(), "utilization"), Some(100.0));
    // The check waited in line and opened nothing beside the pool.
    assert_eq!(pool.size(), 3);

    drop(held);
    // sqlx hands a dropped connection back on a task of its own: on a loaded machine the first
    // clear poll may still see one on its way back. All three are back within the deadline.
    let end = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let detail = success(support::until_clear(&check, TIMEOUT, Duration::from_secs(5)).await);
        let available = figure(&detail.measurements, "available");
        if available == Some(3.0) || tokio::time::Instant::now() >= end {
            assert_eq!(available, Some(3.0));
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn utilization_above_the_limit_warns_and_never_fails() {
    require!("postgres", ADDRESS);
    let pool = new_pool(4).await;
    let check = PoolCheck::new(pool.clone()).warn_above(50.0);
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(pool.acquire().await.expect("acquire"));
    }
    let detail = success(poll(&check, TIMEOUT).await);
    assert_eq!(
        detail.warning.as_deref(),
        Some("busy: 3 of 4 in use (utilization 75% above 50%)")
    );
    held.truncate(1);
    success(support::until_clear(&check, TIMEOUT, Duration::from_secs(5)).await);
}

#[tokio::test]
async fn closed_port_is_refused_by_address() {
    let port = support::closed_port().await;
    let options = PgConnectOptions::new()
        .host("127.0.0.1")
        .port(port)
        .username("postgres");
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .connect_lazy_with(options);
    let error = failure(poll(&PoolCheck::new(pool), TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!("connection refused (127.0.0.1:{port})")
    );
    assert_eq!(figure(error.measurements(), "max"), Some(2.0));
}

#[tokio::test]
async fn a_pool_starved_by_a_refusing_database_says_refused_not_exhausted() {
    // sqlx retries a refused connect until the acquire timeout, holding the pool's slots:
    // requests and the check's own wait both time out, as with an exhausted pool. But every
    // instance shares this fault, so it must not read as this instance's own.
    let port = support::closed_port().await;
    let options = PgConnectOptions::new()
        .host("127.0.0.1")
        .port(port)
        .username("postgres");
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .acquire_timeout(Duration::from_secs(5))
        .connect_lazy_with(options);
    let waiters: Vec<_> = (0..2)
        .map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move { pool.acquire().await.map(drop) })
        })
        .collect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    while pool.size() < 2 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(pool.size(), 2, "both slots connecting");
    let error = failure(poll(&PoolCheck::new(pool), TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!("connection refused (127.0.0.1:{port}); the pool hands out no connection either")
    );
    assert_eq!(error.failure_kind(), probity::FailureKind::Refused);
    for waiter in waiters {
        waiter.abort();
    }
}

#[tokio::test]
async fn server_that_never_answers_times_out() {
    let address = support::silent_listener().await;
    let options = PgConnectOptions::new()
        .host("127.0.0.1")
        .port(address.port())
        .username("postgres");
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .connect_lazy_with(options);
    let error = failure(poll(&PoolCheck::new(pool), Duration::from_millis(500)).await);
    assert_eq!(error.message(), "timed out after 500ms");
}

#[tokio::test]
async fn terminated_idle_connection_is_replaced_not_returned() {
    require!("postgres", ADDRESS);
    let pool = new_pool(2).await;
    let check = PoolCheck::new(pool.clone());
    // One idle connection in the pool, whose server process we know.
    let pid: i32 = {
        let mut connection = pool.acquire().await.expect("acquire");
        sqlx::query("SELECT pg_backend_pid()")
            .fetch_one(&mut *connection)
            .await
            .expect("pid")
            .get(0)
    };
    wait_idle(&pool, 1).await;
    let admin = new_pool(1).await;
    let terminated: bool = sqlx::query("SELECT pg_terminate_backend($1)")
        .bind(pid)
        .fetch_one(&admin)
        .await
        .expect("terminate")
        .get(0);
    assert!(terminated);

    // The check's ping hits the dead connection, closes it, and proves the server answers
    // through a new one.
    let detail = success(poll(&check, TIMEOUT).await);
    let message = detail.message.unwrap_or_default();
    assert!(
        message.contains("closed a broken idle connection"),
        "{message}"
    );
    // The dead connection did not go back into the pool: what the pool holds now is the fresh
    // connection the check left idle for its next poll.
    assert!(pool.size() <= 1, "the broken connection stayed in the pool");
    let mut connection = pool.acquire().await.expect("acquire");
    let now: i32 = sqlx::query("SELECT pg_backend_pid()")
        .fetch_one(&mut *connection)
        .await
        .expect("pid")
        .get(0);
    assert_ne!(now, pid, "the pool handed out the terminated connection");
    drop(connection);
    wait_idle(&pool, 1).await;
    // And the next poll is an ordinary pass, on the idle connection.
    let detail = success(poll(&check, TIMEOUT).await);
    assert!(
        !detail.message.unwrap_or_default().contains("broken"),
        "the next poll found another broken connection"
    );
}

#[tokio::test]
async fn server_error_is_named_and_the_password_never_shows() {
    require!("postgres", ADDRESS);
    let url = "postgres://postgres:hunter2-s3cret@127.0.0.1:5432/probity_no_such_database";
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .connect_lazy(url)
        .expect("parse url");
    let error = failure(poll(&PoolCheck::new(pool), TIMEOUT).await);
    assert_eq!(
        error.message(),
        "database error [3D000] (127.0.0.1:5432): database \"probity_no_such_database\" does not exist"
    );
    // Publicly, the class the SQLSTATE gives.
    assert_eq!(error.failure_kind(), probity::FailureKind::Rejected);
    assert_no_secret(&error, &["hunter2-s3cret"]);

    let port = support::closed_port().await;
    let url = format!("postgres://app:hunter2-s3cret@127.0.0.1:{port}/test");
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .connect_lazy(&url)
        .expect("parse url");
    let error = failure(poll(&PoolCheck::new(pool), TIMEOUT).await);
    assert_no_secret(&error, &["hunter2-s3cret"]);
    assert!(error.message().starts_with("connection refused"));
}

#[tokio::test]
async fn closed_pool_fails() {
    require!("postgres", ADDRESS);
    let pool = new_pool(2).await;
    pool.close().await;
    let error = failure(poll(&PoolCheck::new(pool), TIMEOUT).await);
    assert_eq!(error.message(), "pool is closed");
}

/// Sessions PostgreSQL has counted for `database` (its own statistics).
async fn sessions(admin: &PgPool, database: &str) -> i64 {
    sqlx::query("SELECT pg_stat_clear_snapshot()")
        .execute(admin)
        .await
        .expect("clear snapshot");
    sqlx::query("SELECT sessions FROM pg_stat_database WHERE datname = $1")
        .bind(database)
        .fetch_one(admin)
        .await
        .expect("sessions")
        .get(0)
}

#[tokio::test]
async fn an_idle_service_does_not_connect_on_every_poll() {
    require!("postgres", ADDRESS);
    let admin = new_pool(1).await;
    let database = format!("probity_reuse_{}", std::process::id());
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {database}"
    )))
    .execute(&admin)
    .await
    .expect("drop");
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {database}")))
        .execute(&admin)
        .await
        .expect("create");
    // A pool that has never been used: no connection in it, as in a service with no traffic.
    let pool = PgPoolOptions::new()
        .max_connections(5)
        .connect_lazy(&format!("postgres://postgres@127.0.0.1:5432/{database}"))
        .expect("lazy pool");
    let check = PoolCheck::new(pool.clone());
    success(poll(&check, TIMEOUT).await);
    // PostgreSQL counts a session when its backend reports, at the latest when it exits.
    let settle = async |expected_at_least: i64| {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            let counted = sessions(&admin, &database).await;
            if counted >= expected_at_least || tokio::time::Instant::now() >= deadline {
                return counted;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let after_first = settle(1).await;
    assert!(after_first >= 1, "the first poll reached the database");
    for _ in 0..10 {
        // A poller's interval apart (a returned connection goes back to the pool in the
        // background).
        tokio::time::sleep(Duration::from_millis(100)).await;
        success(poll(&check, TIMEOUT).await);
    }
    drop(pool);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let after_eleven = settle(after_first + 1).await;
    // Ten more polls reuse the connection the first one left idle in the pool; at most that
    // pooled connection's own session is counted late.
    assert!(
        after_eleven - after_first <= 1,
        "ten polls opened {} sessions",
        after_eleven - after_first
    );
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {database} WITH (FORCE)"
    )))
    .execute(&admin)
    .await
    .expect("drop");
}
