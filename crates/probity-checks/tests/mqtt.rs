//! MQTT broker connection, derived from a real rumqttc event loop against Mosquitto on
//! 127.0.0.1:1883.

#![cfg(feature = "mqtt")]

#[macro_use]
mod support;

use probity::Check;
use probity_checks::mqtt::{MqttCheck, MqttStatus};
use rumqttc::{AsyncClient, MqttOptions};
use std::time::Duration;
use support::{failure, poll, success};

const ADDRESS: &str = "127.0.0.1:1883";
const TIMEOUT: Duration = Duration::from_secs(1);

/// Starts a client and drives its event loop the way an application does, reporting every
/// poll to `status`.
fn drive(port: u16, status: MqttStatus) -> (AsyncClient, tokio::task::JoinHandle<()>) {
    let mut options = MqttOptions::new(
        format!("probity-checks-{}-{port}", std::process::id()),
        "127.0.0.1",
        port,
    );
    options.set_keep_alive(Duration::from_secs(5));
    let (client, mut event_loop) = AsyncClient::new(options, 16);
    event_loop.network_options.set_connection_timeout(1);
    let task = tokio::spawn(async move {
        loop {
            let event = event_loop.poll().await;
            status.observe(&event);
            if event.is_err() {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    });
    (client, task)
}

#[tokio::test]
async fn connected_after_connack_and_failing_after_disconnect() {
    require!("mosquitto", ADDRESS);
    let status = MqttStatus::new(ADDRESS);
    let check = MqttCheck::new(status.clone());
    assert_eq!(check.dependency(), Some("mqtt"));
    assert_eq!(
        failure(poll(&check, TIMEOUT).await).message(),
        "connecting to 127.0.0.1:1883: no CONNACK yet"
    );
    let (client, task) = drive(1883, status);
    let detail = success(support::until_ok(&check, TIMEOUT, Duration::from_secs(5)).await);
    assert_eq!(
        detail.message.as_deref(),
        Some("connected to 127.0.0.1:1883")
    );

    // The application disconnects: the event loop reports it, the check fails.
    client.disconnect().await.expect("disconnect");
    let error = failure(support::until_err(&check, TIMEOUT, Duration::from_secs(5)).await);
    assert!(
        error
            .message()
            .starts_with("not connected to 127.0.0.1:1883: "),
        "{}",
        error.message()
    );
    task.abort();
}

#[tokio::test]
async fn closed_port_is_refused() {
    let port = support::closed_port().await;
    let status = MqttStatus::new(format!("127.0.0.1:{port}"));
    let check = MqttCheck::new(status.clone());
    let (_client, task) = drive(port, status);
    let error = failure(
        support::until_err_matching(&check, TIMEOUT, |message| message.contains("refused")).await,
    );
    assert_eq!(
        error.message(),
        format!("not connected to 127.0.0.1:{port}: connection refused")
    );
    task.abort();
}

#[tokio::test]
async fn broker_that_never_answers_times_out() {
    let address = support::silent_listener().await;
    let status = MqttStatus::new(address.to_string());
    let check = MqttCheck::new(status.clone());
    let (_client, task) = drive(address.port(), status);
    let error = failure(
        support::until_err_matching(&check, TIMEOUT, |message| message.contains("timed out")).await,
    );
    assert_eq!(
        error.message(),
        format!("not connected to {address}: connect timed out")
    );
    task.abort();
}

#[tokio::test(start_paused = true)]
async fn silence_past_the_limit_fails() {
    let status = MqttStatus::new("broker:1883");
    let check = MqttCheck::new(status.clone()).max_silence(Duration::from_secs(15));
    status.observe(&Ok(rumqttc::Event::Incoming(rumqttc::Packet::ConnAck(
        rumqttc::ConnAck::new(rumqttc::ConnectReturnCode::Success, false),
    ))));
    success(poll(&check, TIMEOUT).await);
    tokio::time::advance(Duration::from_secs(20)).await;
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(
        error.message(),
        "nothing from broker:1883 for 20s (limit 15s)"
    );
    status.observe(&Ok(rumqttc::Event::Incoming(rumqttc::Packet::PingResp)));
    success(poll(&check, TIMEOUT).await);
}

#[test]
fn refused_connack_is_named() {
    let status = MqttStatus::new("broker:1883");
    status.observe(&Ok(rumqttc::Event::Incoming(rumqttc::Packet::ConnAck(
        rumqttc::ConnAck::new(rumqttc::ConnectReturnCode::NotAuthorized, false),
    ))));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let error = failure(runtime.block_on(poll(&MqttCheck::new(status), TIMEOUT)));
    assert_eq!(
        error.message(),
        "broker refused the connection (broker:1883): NotAuthorized"
    );
}
