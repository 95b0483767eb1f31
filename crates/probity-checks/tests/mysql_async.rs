//! mysql_async pool capacity (with waiters) and reachability against the real MariaDB.

#![cfg(feature = "mysql-async")]

#[macro_use]
mod support;

use mysql_async::{Opts, OptsBuilder, Pool, PoolConstraints, PoolOpts};
use probity::Check;
use probity_checks::mysql_async_pool::PoolCheck;
use std::time::Duration;
use support::{assert_no_secret, failure, figure, poll, success};

const ADDRESS: &str = "127.0.0.1:3306";
const TIMEOUT: Duration = Duration::from_secs(2);

fn opts(port: u16, password: Option<&str>, max: usize) -> Opts {
    let constraints = PoolConstraints::new(0, max).expect("constraints");
    OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(port)
        .user(Some("root"))
        .pass(password)
        .db_name(Some("test"))
        .pool_opts(PoolOpts::default().with_constraints(constraints))
        .into()
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
    require!("mariadb", ADDRESS);
    let opts = opts(3306, None, 3);
    let check = PoolCheck::new(Pool::new(opts.clone()), opts);
    assert_eq!(check.dependency(), Some("mysql"));
    let detail = success(poll(&check, TIMEOUT).await);
    assert_eq!(figure(&detail.measurements, "max"), Some(3.0));
    assert_eq!(figure(&detail.measurements, "waiting"), Some(0.0));
}

#[tokio::test]
async fn exhausted_pool_with_waiters_fails_naming_the_figures_and_recovers() {
    require!("mariadb", ADDRESS);
    let opts = opts(3306, None, 2);
    let pool = Pool::new(opts.clone());
    let check = PoolCheck::new(pool.clone(), opts);
    let held = vec![
        pool.get_conn().await.expect("conn"),
        pool.get_conn().await.expect("conn"),
    ];
    let waiters: Vec<_> = (0..2)
        .map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move { pool.get_conn().await.map(drop) })
        })
        .collect();
    let metrics = pool.metrics();
    wait_until(|| {
        metrics
            .active_wait_requests
            .load(std::sync::atomic::Ordering::Relaxed)
            == 2
    })
    .await;
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(
        error.message(),
        "no connection within 1.5s: 2 of 2 in use, 2 waiting"
    );
    assert_eq!(figure(error.measurements(), "waiting"), Some(2.0));
    drop(held);
    for waiter in waiters {
        waiter
            .await
            .expect("join")
            .expect("waiter got a connection");
    }
    success(support::until_ok(&check, TIMEOUT, Duration::from_secs(5)).await);
}

#[tokio::test]
async fn closed_port_is_refused_by_address() {
    let port = support::closed_port().await;
    let opts = opts(port, Some("hunter2-s3cret"), 2);
    let check = PoolCheck::new(Pool::new(opts.clone()), opts);
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!("connection refused (127.0.0.1:{port})")
    );
    assert_no_secret(&error, &["hunter2-s3cret"]);
}

#[tokio::test]
async fn server_that_never_answers_times_out() {
    let address = support::silent_listener().await;
    let opts = opts(address.port(), None, 2);
    let check = PoolCheck::new(Pool::new(opts.clone()), opts);
    let error = failure(poll(&check, Duration::from_millis(500)).await);
    assert_eq!(error.message(), "timed out after 500ms");
}

#[tokio::test]
async fn wrong_password_is_named_and_never_shown() {
    require!("mariadb", ADDRESS);
    let opts = Opts::from_url("mysql://root:hunter2-s3cret@127.0.0.1:3306/test").expect("url");
    let check = PoolCheck::new(Pool::new(opts.clone()), opts);
    let error = failure(poll(&check, TIMEOUT).await);
    assert!(
        error
            .message()
            .starts_with("database error [1045] (127.0.0.1:3306): Access denied for user 'root'"),
        "{}",
        error.message()
    );
    assert_no_secret(&error, &["hunter2-s3cret"]);
}
