//! `sqlx::SqlitePool` capacity and reachability on a real database file, and the check wired
//! into a running `probity::Health`.

#![cfg(feature = "sqlx-sqlite")]

mod support;

use probity::render::{Clock, Details, Format, Query, Request, render};
use probity::{Check, CheckSpec, Health, ProbeKind, Status, Tier};
use probity_checks::sqlx::PoolCheck;
use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
use std::path::PathBuf;
use std::time::Duration;
use support::{failure, figure, poll, success};

const TIMEOUT: Duration = Duration::from_secs(2);

/// A database file of this test's own, removed when dropped.
struct DatabaseFile(PathBuf);

impl DatabaseFile {
    fn new(name: &str) -> Self {
        let path =
            std::env::temp_dir().join(format!("probity-checks-{name}-{}.db", std::process::id()));
        let _ = std::fs::remove_file(&path);
        Self(path)
    }
}

impl Drop for DatabaseFile {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut path = self.0.clone().into_os_string();
            path.push(suffix);
            let _ = std::fs::remove_file(path);
        }
    }
}

async fn pool(file: &DatabaseFile, max: u32) -> SqlitePool {
    SqlitePoolOptions::new()
        .max_connections(max)
        .connect_with(
            SqliteConnectOptions::new()
                .filename(&file.0)
                .create_if_missing(true),
        )
        .await
        .expect("open sqlite")
}

#[tokio::test]
async fn passes_on_a_real_file() {
    let file = DatabaseFile::new("passes");
    let check = PoolCheck::new(pool(&file, 4).await);
    assert_eq!(check.dependency(), Some("sqlite"));
    let detail = success(poll(&check, TIMEOUT).await);
    assert_eq!(figure(&detail.measurements, "max"), Some(4.0));
    assert_eq!(figure(&detail.measurements, "connections"), Some(0.0));
}

#[tokio::test]
async fn exhausted_pool_fails_naming_the_figures_and_recovers_on_release() {
    let file = DatabaseFile::new("exhausted");
    let pool = pool(&file, 2).await;
    let check = PoolCheck::new(pool.clone());
    let held = vec![
        pool.acquire().await.expect("acquire"),
        pool.acquire().await.expect("acquire"),
    ];
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(error.message(), "no connection available: 2 of 2 in use");
    assert_eq!(figure(error.measurements(), "utilization"), Some(100.0));
    drop(held);
    let detail = success(support::until_ok(&check, TIMEOUT, Duration::from_secs(5)).await);
    assert_eq!(figure(&detail.measurements, "available"), Some(2.0));
}

#[tokio::test]
async fn utilization_above_the_limit_fails() {
    let file = DatabaseFile::new("utilization");
    let pool = pool(&file, 5).await;
    let check = PoolCheck::new(pool.clone()).max_utilization(60.0);
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(pool.acquire().await.expect("acquire"));
    }
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(
        error.message(),
        "utilization 80% is above the 60% limit: 4 of 5 in use"
    );
    held.truncate(3);
    success(support::until_ok(&check, TIMEOUT, Duration::from_secs(5)).await);
}

#[tokio::test]
async fn missing_database_file_fails_naming_the_file() {
    let path = std::env::temp_dir().join("probity-checks-no-such-dir/orders.db");
    let pool = SqlitePoolOptions::new()
        .max_connections(2)
        .connect_lazy_with(SqliteConnectOptions::new().filename(&path));
    let error = failure(poll(&PoolCheck::new(pool), TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!(
            "database error [14] ({}): unable to open database file",
            path.display()
        )
    );
}

/// The check inside a running `Health`: a leaked pool drains the instance, and the
/// `application/health+json` body carries the pool figures under `name:measurement` keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exhausted_pool_fails_readiness_with_figures_in_health_json() {
    let file = DatabaseFile::new("health");
    let pool = pool(&file, 3).await;
    let health = Health::builder()
        .service("orders")
        .check(
            CheckSpec::new("db", Tier::Hard, PoolCheck::new(pool.clone()))
                .interval(Duration::from_millis(100))
                .timeout(Duration::from_millis(50)),
        )
        .build()
        .expect("build");
    health.start().expect("start");
    let readiness = || {
        health
            .snapshot()
            .status(ProbeKind::Readiness, tokio::time::Instant::now())
    };
    wait_for(|| readiness() == Status::Pass).await;

    let query = Query::default();
    let request = Request {
        probe: ProbeKind::Readiness,
        check: None,
        query: &query,
        format: Format::HealthJson,
        details: Details::Shown,
    };
    let body = render(&health.snapshot(), &request, Clock::now()).body;
    for key in ["db:connections", "db:utilization", "db:available", "db:max"] {
        assert!(
            body.contains(&format!("\"{key}\"")),
            "{key} missing: {body}"
        );
    }
    assert!(body.contains("\"percent\""), "{body}");

    let held = [
        pool.acquire().await.expect("acquire"),
        pool.acquire().await.expect("acquire"),
        pool.acquire().await.expect("acquire"),
    ];
    wait_for(|| readiness() == Status::Fail).await;
    let answer = render(&health.snapshot(), &request, Clock::now());
    assert_eq!(answer.status, 503);
    assert!(
        answer
            .body
            .contains("no connection available: 3 of 3 in use"),
        "{}",
        answer.body
    );
    drop(held);
    wait_for(|| readiness() == Status::Pass).await;
    health.stop();
}

async fn wait_for(condition: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not reached in 10s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
