//! NATS connection state and flush round trip against the real server on 127.0.0.1:4222.

#![cfg(feature = "nats")]

#[macro_use]
mod support;

use probity::Check;
use probity_checks::nats::NatsCheck;
use std::time::Duration;
use support::{assert_no_secret, failure, figure, poll, success};

const ADDRESS: &str = "127.0.0.1:4222";
const TIMEOUT: Duration = Duration::from_secs(2);

#[tokio::test]
async fn own_client_passes_against_the_live_server() {
    require!("nats", ADDRESS);
    let check = NatsCheck::connect("nats://127.0.0.1:4222");
    assert_eq!(check.dependency(), Some("nats"));
    let detail = success(poll(&check, TIMEOUT).await);
    assert_eq!(
        detail.message.as_deref(),
        Some("connected to 127.0.0.1:4222")
    );
    assert!(figure(&detail.measurements, "response_time").is_some());
}

#[tokio::test]
async fn applications_client_is_checked_and_fails_once_it_is_drained() {
    require!("nats", ADDRESS);
    let client = async_nats::connect("nats://127.0.0.1:4222")
        .await
        .expect("connect");
    let check = NatsCheck::new(client.clone()).target(ADDRESS);
    success(poll(&check, TIMEOUT).await);
    client.drain().await.expect("drain");
    let error = failure(support::until_err(&check, TIMEOUT, Duration::from_secs(5)).await);
    assert!(
        error
            .message()
            .starts_with("flush failed (127.0.0.1:4222): ")
            || error.message() == "disconnected, reconnecting (127.0.0.1:4222)",
        "{}",
        error.message()
    );
}

#[tokio::test]
async fn closed_port_is_refused_by_address_without_the_password() {
    let port = support::closed_port().await;
    let check = NatsCheck::connect(format!("nats://probe:hunter2-s3cret@127.0.0.1:{port}"));
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
    let check = NatsCheck::connect(format!("nats://{address}"));
    let error = failure(poll(&check, Duration::from_millis(500)).await);
    assert_eq!(error.message(), "timed out after 500ms");
}
