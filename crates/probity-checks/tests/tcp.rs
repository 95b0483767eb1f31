//! TCP connect checks against real listeners.

#![cfg(feature = "tcp")]

mod support;

use probity::Check;
use probity_checks::tcp::TcpCheck;
use std::time::Duration;
use support::{failure, figure, poll, success};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

const TIMEOUT: Duration = Duration::from_millis(500);

#[tokio::test]
async fn connects_to_a_listener() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("addr").to_string();
    let check = TcpCheck::new(address.clone());
    assert_eq!(check.dependency(), Some("tcp"));
    let detail = success(poll(&check, TIMEOUT).await);
    assert_eq!(
        detail.message.as_deref(),
        Some(format!("connected to {address}").as_str())
    );
    assert!(figure(&detail.measurements, "connect_time").is_some());
}

#[tokio::test]
async fn closed_port_is_refused_by_address() {
    let port = support::closed_port().await;
    let error = failure(poll(&TcpCheck::new(format!("127.0.0.1:{port}")), TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!("connection refused (127.0.0.1:{port})")
    );
}

#[tokio::test]
async fn listener_that_never_accepts_times_out() {
    let (address, _filling, _listener) = support::full_backlog_listener().await;
    let error = failure(poll(&TcpCheck::new(address.to_string()), TIMEOUT).await);
    assert_eq!(error.message(), "timed out after 500ms");
}

#[tokio::test]
async fn server_that_accepts_and_never_greets_times_out_when_a_banner_is_expected() {
    let address = support::silent_listener().await;
    // A bare connect passes: the kernel accepted.
    success(poll(&TcpCheck::new(address.to_string()), TIMEOUT).await);
    let check = TcpCheck::new(address.to_string()).expect_banner("220");
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(error.message(), "timed out after 500ms");
}

#[tokio::test]
async fn banner_is_checked() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("addr").to_string();
    tokio::spawn(async move {
        let mut greetings = ["220 mail ready\r\n", "554 no service\r\n"].into_iter();
        while let Ok((mut socket, _)) = listener.accept().await {
            let greeting = greetings.next().unwrap_or("");
            let _ = socket.write_all(greeting.as_bytes()).await;
        }
    });
    let check = TcpCheck::new(address.clone()).expect_banner("220");
    success(poll(&check, TIMEOUT).await);
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!("unexpected banner from {address}: \"554\" (expected \"220\")")
    );
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!("connection closed by the server before its banner ({address})")
    );
}

#[tokio::test]
async fn unresolvable_host_is_named() {
    let error = failure(
        poll(
            &TcpCheck::new("probity-no-such-host.invalid:80"),
            Duration::from_secs(5),
        )
        .await,
    );
    assert!(
        error
            .message()
            .starts_with("cannot resolve probity-no-such-host.invalid:80: "),
        "{}",
        error.message()
    );
}
