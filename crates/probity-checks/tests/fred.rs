//! Redis through fred against the real server on 127.0.0.1:6379, including `CLIENT PAUSE`.

#![cfg(feature = "fred")]

#[macro_use]
mod support;

use fred::clients::Client;
use fred::interfaces::ClientLike;
use fred::types::config::{Config, ReconnectPolicy};
use probity::Check;
use probity_checks::fred_client::FredCheck;
use std::time::Duration;
use support::{ServiceLock, assert_no_secret, failure, figure, poll, success};

const ADDRESS: &str = "127.0.0.1:6379";
const URL: &str = "redis://127.0.0.1:6379";
const TIMEOUT: Duration = Duration::from_millis(500);

fn client(url: &str) -> Client {
    let config = Config::from_url(url).expect("redis url");
    Client::new(
        config,
        None,
        None,
        Some(ReconnectPolicy::new_constant(0, 100)),
    )
}

#[tokio::test]
async fn pong_from_the_live_server() {
    require!("redis", ADDRESS);
    let _lock = ServiceLock::shared("redis").await;
    let client = client(URL);
    client.init().await.expect("connect");
    let check = FredCheck::new(client.clone());
    assert_eq!(check.dependency(), Some("redis"));
    let detail = success(poll(&check, TIMEOUT).await);
    assert_eq!(detail.message.as_deref(), Some("PONG from 127.0.0.1:6379"));
    assert!(figure(&detail.measurements, "response_time").is_some());
    assert_eq!(figure(&detail.measurements, "queued_commands"), Some(0.0));
    client.quit().await.expect("quit");
}

#[tokio::test]
async fn a_client_that_cannot_connect_is_not_connected() {
    let port = support::closed_port().await;
    let client = client(&format!("redis://127.0.0.1:{port}"));
    // The application starts the client and lets it reconnect in the background.
    let _connection = client.connect();
    let check = FredCheck::new(client.clone());
    let error = failure(poll(&check, TIMEOUT).await);
    assert!(
        error
            .message()
            .starts_with(&format!("not connected to 127.0.0.1:{port} (fred is ")),
        "{}",
        error.message()
    );
}

#[tokio::test]
async fn server_that_never_answers_times_out_or_is_not_connected() {
    let address = support::silent_listener().await;
    let client = client(&format!("redis://{address}"));
    let _connection = client.connect();
    let check = FredCheck::new(client.clone());
    let error = failure(poll(&check, TIMEOUT).await);
    // fred either waits for the server's handshake answer (not connected) or considers the
    // socket connected and sends PING into silence (the poller's timeout).
    assert!(
        error.message() == "timed out after 500ms"
            || error
                .message()
                .starts_with(&format!("not connected to {address} (fred is ")),
        "{}",
        error.message()
    );
}

#[tokio::test]
async fn client_pause_times_out_then_recovers() {
    require!("redis", ADDRESS);
    let _lock = ServiceLock::exclusive("redis").await;
    let client = client(URL);
    client.init().await.expect("connect");
    let check = FredCheck::new(client.clone());
    success(poll(&check, TIMEOUT).await);

    let admin = self::client(URL);
    admin.init().await.expect("admin connect");
    let _: String = admin
        .custom(
            fred::types::CustomCommand::new_static("CLIENT", None, false),
            vec!["PAUSE", "1500"],
        )
        .await
        .expect("CLIENT PAUSE");
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(error.message(), "timed out after 500ms");

    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match poll(&check, TIMEOUT).await {
            Ok(_) => break,
            Err(error) => assert!(
                tokio::time::Instant::now() < deadline,
                "never recovered: {}",
                error.message()
            ),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = admin.quit().await;
    let _ = client.quit().await;
}

#[tokio::test]
async fn commands_waiting_for_a_connection_are_counted() {
    let port = support::closed_port().await;
    let client = client(&format!("redis://127.0.0.1:{port}"));
    let _connection = client.connect();
    // The application's requests keep issuing commands; fred holds them for the reconnect.
    let waiting: Vec<_> = (0..5)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { client.ping::<String>(None).await })
        })
        .collect();
    let check = FredCheck::new(client.clone());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let error = loop {
        let error = failure(poll(&check, TIMEOUT).await);
        if figure(error.measurements(), "queued_commands").unwrap_or(0.0) >= 5.0
            || tokio::time::Instant::now() >= deadline
        {
            break error;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(figure(error.measurements(), "queued_commands"), Some(5.0));
    assert!(
        error.message().ends_with(", 5 commands waiting"),
        "{}",
        error.message()
    );
    for task in waiting {
        task.abort();
    }
}

#[tokio::test]
async fn a_password_never_appears() {
    require!("redis", ADDRESS);
    let _lock = ServiceLock::shared("redis").await;
    let client = client("redis://:hunter2-s3cret@127.0.0.1:6379");
    let _connection = client.connect();
    let check = FredCheck::new(client.clone());
    // The server has no password: fred's AUTH fails, and the check says so without the secret.
    let error = failure(poll(&check, TIMEOUT).await);
    assert_no_secret(&error, &["hunter2-s3cret"]);
    assert!(!format!("{check:?}").contains("hunter2"));
}
