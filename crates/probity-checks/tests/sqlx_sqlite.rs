//! `sqlx::SqlitePool` capacity and reachability on a real database file, and the check wired
//! into a running `probity::Health`.

#![cfg(feature = "sqlx-sqlite")]

mod support;

use probity::render::{Clock, Details, Format, Query, Request, render};
use probity::{Check, CheckSpec, Health, ProbeKind, Status, Tier};
use probity_checks::pool::AcquireTracker;
use probity_checks::sqlx_pool::{PoolCheck, acquire};
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
async fn exhausted_pool_fails_after_its_budget_naming_the_figures_and_recovers_on_release() {
    let file = DatabaseFile::new("exhausted");
    let pool = pool(&file, 2).await;
    let check = PoolCheck::new(pool.clone());
    let held = vec![
        pool.acquire().await.expect("acquire"),
        pool.acquire().await.expect("acquire"),
    ];
    // The budget: three quarters of the poll's 2 s.
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(error.message(), "no connection within 1.5s: 2 of 2 in use");
    assert_eq!(figure(error.measurements(), "utilization"), Some(100.0));
    drop(held);
    let detail = success(support::until_clear(&check, TIMEOUT, Duration::from_secs(5)).await);
    assert_eq!(figure(&detail.measurements, "available"), Some(2.0));
}

#[tokio::test]
async fn a_busy_pool_whose_connections_cycle_passes_with_a_warning() {
    let file = DatabaseFile::new("busy");
    let pool = pool(&file, 2).await;
    let check = PoolCheck::new(pool.clone());
    let first = pool.acquire().await.expect("acquire");
    let second = pool.acquire().await.expect("acquire");
    // A request finishes 200 ms into the poll: the check waits in line and gets its turn.
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
    assert!(figure(&detail.measurements, "acquire_wait").unwrap_or(0.0) >= 150.0);
    release.await.expect("release");
    drop(second);
}

#[tokio::test]
async fn utilization_above_the_limit_warns_and_never_fails() {
    let file = DatabaseFile::new("utilization");
    let pool = pool(&file, 5).await;
    let check = PoolCheck::new(pool.clone()).warn_above(60.0);
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(pool.acquire().await.expect("acquire"));
    }
    let detail = success(poll(&check, TIMEOUT).await);
    assert_eq!(
        detail.warning.as_deref(),
        Some("busy: 4 of 5 in use (utilization 80% above 60%)")
    );
    held.truncate(2);
    let detail = success(support::until_clear(&check, TIMEOUT, Duration::from_secs(5)).await);
    assert_eq!(detail.warning, None, "{detail:?}");
}

/// Eight workers, four times the pool, query as fast as they can through the tracker while the
/// check polls: a pool at full use with its connections cycling is busy, never broken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_under_load_four_times_its_size_never_fails() {
    let file = DatabaseFile::new("load");
    let pool = pool(&file, 2).await;
    let tracker = AcquireTracker::new();
    let check = PoolCheck::new(pool.clone()).tracker(tracker.clone());
    let until = tokio::time::Instant::now() + Duration::from_secs(3);
    let workers: Vec<_> = (0..8)
        .map(|_| {
            let (pool, tracker) = (pool.clone(), tracker.clone());
            tokio::spawn(async move {
                let mut queries = 0u64;
                while tokio::time::Instant::now() < until {
                    let mut connection = acquire(&pool, &tracker).await.expect("acquire");
                    sqlx::query("SELECT 1")
                        .execute(&mut *connection)
                        .await
                        .expect("query");
                    // Hold it as a request would, so the pool is really full.
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    queries += 1;
                }
                queries
            })
        })
        .collect();
    let mut polls = 0;
    let mut warned = 0;
    while tokio::time::Instant::now() < until {
        let detail = success(poll(&check, Duration::from_millis(400)).await);
        polls += 1;
        warned += usize::from(detail.warning.is_some());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut queries = 0;
    for worker in workers {
        queries += worker.await.expect("worker");
    }
    assert!(polls >= 10, "{polls} polls");
    assert!(
        warned > 0,
        "a full pool with waiters should warn: {warned} of {polls}"
    );
    assert!(queries > 100, "the load did not run: {queries} queries");
}

#[tokio::test]
async fn a_connection_held_past_the_leak_bound_fails() {
    let file = DatabaseFile::new("leak");
    let pool = pool(&file, 3).await;
    let tracker = AcquireTracker::new();
    let check = PoolCheck::new(pool.clone())
        .tracker(tracker.clone())
        .leak_bound(Duration::from_millis(300));
    let leaked = acquire(&pool, &tracker).await.expect("acquire");
    success(poll(&check, TIMEOUT).await);
    tokio::time::sleep(Duration::from_millis(400)).await;
    let error = failure(poll(&check, TIMEOUT).await);
    assert!(
        error
            .message()
            .starts_with("1 connection held longer than the 300ms leak bound (oldest "),
        "{}",
        error.message()
    );
    assert_eq!(figure(error.measurements(), "leaked"), Some(1.0));
    drop(leaked);
    success(poll(&check, TIMEOUT).await);
}

#[tokio::test]
async fn starved_requests_fail_the_check_without_it_queueing() {
    let file = DatabaseFile::new("starved");
    let pool = pool(&file, 1).await;
    let tracker = AcquireTracker::new();
    let check = PoolCheck::new(pool.clone())
        .tracker(tracker.clone())
        .acquire_budget(Duration::from_millis(600));
    let leaked = acquire(&pool, &tracker).await.expect("acquire");
    let waiter = tokio::spawn({
        let (pool, tracker) = (pool.clone(), tracker.clone());
        async move { acquire(&pool, &tracker).await.map(drop) }
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while tracker.waiting() == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the waiter never waited"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The first poll has no window yet: it queues itself, and gets nothing in its budget.
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(
        error.message(),
        "no connection within 600ms: 1 of 1 in use, 1 waiting"
    );
    tokio::time::sleep(Duration::from_millis(650)).await;
    let started = tokio::time::Instant::now();
    let error = failure(poll(&check, TIMEOUT).await);
    assert!(
        error.message().starts_with("no connection handed out in "),
        "{}",
        error.message()
    );
    assert!(
        error.message().ends_with(": 1 of 1 in use, 1 waiting"),
        "{}",
        error.message()
    );
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "the evidence was enough: the check should not have queued"
    );
    drop(leaked);
    waiter
        .await
        .expect("join")
        .expect("the waiter got the connection");
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
        details: Details::Admin,
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
        answer.body.contains("no connection within "),
        "{}",
        answer.body
    );
    assert!(answer.body.contains(": 3 of 3 in use"), "{}", answer.body);
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
