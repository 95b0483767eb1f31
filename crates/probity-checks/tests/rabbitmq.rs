//! RabbitMQ connection checks against the real broker on 127.0.0.1:5672, including a real
//! memory alarm (`rabbitmqctl set_vm_memory_high_watermark 0`).

#![cfg(feature = "lapin")]

#[macro_use]
mod support;

use lapin::options::BasicPublishOptions;
use lapin::{BasicProperties, Connection, ConnectionProperties};
use probity::Check;
use probity_checks::rabbitmq::RabbitCheck;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;
use support::{ServiceLock, assert_no_secret, failure, poll, success};

const ADDRESS: &str = "127.0.0.1:5672";
const URI: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";
const TIMEOUT: Duration = Duration::from_secs(2);

/// Raises the broker's memory alarm for as long as it lives, and always lowers it again —
/// on success, on a failed assertion, on a panic.
struct MemoryAlarm {
    restore: String,
}

impl MemoryAlarm {
    fn raise() -> Self {
        let current = rabbitmqctl(&["eval", "vm_memory_monitor:get_vm_memory_high_watermark()."]);
        let restore = current
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|value| *value > 0.0)
            .map_or_else(|| "0.4".to_owned(), |value| value.to_string());
        let alarm = Self { restore };
        rabbitmqctl(&["set_vm_memory_high_watermark", "0"]);
        alarm
    }
}

impl Drop for MemoryAlarm {
    fn drop(&mut self) {
        rabbitmqctl(&["set_vm_memory_high_watermark", &self.restore]);
    }
}

fn rabbitmqctl(args: &[&str]) -> String {
    let output = Command::new("rabbitmqctl")
        .args(args)
        .output()
        .expect("run rabbitmqctl");
    assert!(
        output.status.success(),
        "rabbitmqctl {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

async fn connect() -> Connection {
    Connection::connect(URI, ConnectionProperties::default())
        .await
        .expect("connect to rabbitmq")
}

#[tokio::test]
async fn own_connection_passes_against_the_live_broker() {
    require!("rabbitmq", ADDRESS);
    let _lock = ServiceLock::shared("rabbitmq").await;
    let check = RabbitCheck::connect(URI);
    assert_eq!(check.dependency(), Some("rabbitmq"));
    let detail = success(poll(&check, TIMEOUT).await);
    assert_eq!(
        detail.message.as_deref(),
        Some("connected to 127.0.0.1:5672")
    );
    success(poll(&check, TIMEOUT).await);
}

#[tokio::test]
async fn closed_application_connection_fails() {
    require!("rabbitmq", ADDRESS);
    let _lock = ServiceLock::shared("rabbitmq").await;
    let connection = Arc::new(connect().await);
    let check = RabbitCheck::connection(connection.clone()).target(ADDRESS);
    success(poll(&check, TIMEOUT).await);
    connection.close(200, "bye".into()).await.expect("close");
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(error.message(), "connection closed (127.0.0.1:5672)");
}

#[tokio::test]
async fn memory_alarm_blocks_the_connection_then_clears() {
    require!("rabbitmq", ADDRESS);
    let _lock = ServiceLock::exclusive("rabbitmq").await;
    let connection = Arc::new(connect().await);
    let check = RabbitCheck::connection(connection.clone()).target(ADDRESS);
    success(poll(&check, TIMEOUT).await);

    let alarm = MemoryAlarm::raise();
    // A publisher is what the broker blocks: publish as the application would.
    let channel = connection.create_channel().await.expect("channel");
    let _ = channel
        .basic_publish(
            "".into(),
            "probity-checks-alarm".into(),
            BasicPublishOptions::default(),
            b"held by the alarm",
            BasicProperties::default(),
        )
        .await;
    let error = failure(support::until_err(&check, TIMEOUT, Duration::from_secs(15)).await);
    assert_eq!(
        error.message(),
        "blocked by the broker: a resource alarm holds publishes (127.0.0.1:5672)"
    );

    drop(alarm);
    success(support::until_ok(&check, TIMEOUT, Duration::from_secs(15)).await);
}

#[tokio::test]
async fn closed_port_is_refused_by_address() {
    let port = support::closed_port().await;
    let check = RabbitCheck::connect(format!("amqp://guest:hunter2-s3cret@127.0.0.1:{port}/%2f"));
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!("connection refused (127.0.0.1:{port})")
    );
    assert_no_secret(&error, &["hunter2-s3cret"]);
}

#[tokio::test]
async fn broker_that_never_answers_times_out() {
    let address = support::silent_listener().await;
    let check = RabbitCheck::connect(format!("amqp://guest:guest@{address}/%2f"));
    let error = failure(poll(&check, Duration::from_millis(500)).await);
    assert_eq!(error.message(), "timed out after 500ms");
}

#[tokio::test]
async fn wrong_password_is_named_and_never_shown() {
    require!("rabbitmq", ADDRESS);
    let _lock = ServiceLock::shared("rabbitmq").await;
    let check = RabbitCheck::connect("amqp://guest:hunter2-s3cret@127.0.0.1:5672/%2f");
    let error = failure(poll(&check, Duration::from_secs(5)).await);
    assert!(
        error.message().contains("(127.0.0.1:5672)"),
        "{}",
        error.message()
    );
    assert_no_secret(&error, &["hunter2-s3cret"]);
}
