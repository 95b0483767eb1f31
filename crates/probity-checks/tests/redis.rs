//! Redis PING against the real server on 127.0.0.1:6379, including `CLIENT PAUSE`.

#![cfg(feature = "redis")]

#[macro_use]
mod support;

use probity::Check;
use probity_checks::redis_ping::RedisCheck;
use std::time::Duration;
use support::{ServiceLock, assert_no_secret, failure, figure, poll, success};

const ADDRESS: &str = "127.0.0.1:6379";
const URL: &str = "redis://127.0.0.1:6379";
const TIMEOUT: Duration = Duration::from_millis(500);

fn check(url: &str) -> RedisCheck {
    RedisCheck::new(redis::Client::open(url).expect("redis url"))
}

#[tokio::test]
async fn pong_from_the_live_server() {
    require!("redis", ADDRESS);
    let _lock = ServiceLock::shared("redis").await;
    let check = check(URL);
    assert_eq!(check.dependency(), Some("redis"));
    let detail = success(poll(&check, TIMEOUT).await);
    assert_eq!(detail.message.as_deref(), Some("PONG from 127.0.0.1:6379"));
    assert!(figure(&detail.measurements, "response_time").is_some());
    // The connection is kept and reused.
    success(poll(&check, TIMEOUT).await);
}

#[tokio::test]
async fn closed_port_is_refused_by_address() {
    let port = support::closed_port().await;
    let error = failure(poll(&check(&format!("redis://127.0.0.1:{port}")), TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!("connection refused (127.0.0.1:{port})")
    );
}

#[tokio::test]
async fn server_that_never_answers_times_out() {
    let address = support::silent_listener().await;
    let error = failure(poll(&check(&format!("redis://{address}")), TIMEOUT).await);
    assert_eq!(error.message(), "timed out after 500ms");
}

#[tokio::test]
async fn client_pause_times_out_then_recovers() {
    require!("redis", ADDRESS);
    let _lock = ServiceLock::exclusive("redis").await;
    let check = check(URL);
    success(poll(&check, TIMEOUT).await);

    let admin = redis::Client::open(URL).expect("url");
    let mut admin = admin
        .get_multiplexed_async_connection()
        .await
        .expect("admin connection");
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(1500)
        .arg("ALL")
        .query_async(&mut admin)
        .await
        .expect("client pause");

    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(error.message(), "timed out after 500ms");
    let recovered = support::until_ok(&check, TIMEOUT, Duration::from_secs(10)).await;
    success(recovered);
}

#[tokio::test]
async fn auth_failure_is_named_and_the_password_never_shows() {
    require!("redis", ADDRESS);
    let _lock = ServiceLock::shared("redis").await;
    // The server has no password set, so AUTH with one is refused by the server itself.
    let error = failure(
        poll(
            &check("redis://probe:hunter2-s3cret@127.0.0.1:6379"),
            TIMEOUT,
        )
        .await,
    );
    assert!(
        error
            .message()
            .starts_with("redis error (127.0.0.1:6379): "),
        "{}",
        error.message()
    );
    assert_no_secret(&error, &["hunter2-s3cret"]);

    let port = support::closed_port().await;
    let error = failure(
        poll(
            &check(&format!("redis://:hunter2-s3cret@127.0.0.1:{port}")),
            TIMEOUT,
        )
        .await,
    );
    assert_no_secret(&error, &["hunter2-s3cret"]);
}
