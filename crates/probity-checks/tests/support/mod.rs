//! What every backend's tests share: finding the real service, a port nobody listens on, a
//! listener that accepts and never answers, and a poll exactly as the poller runs it.

#![allow(dead_code, unreachable_pub)]

use probity::{Check, CheckError, CheckResult, Measurement};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};

/// Whether `service` answers at `address`. When it does not: with `CI=true` the test fails
/// naming the service (CI must never skip silently); elsewhere it says so loudly and the test
/// returns early.
pub async fn service_available(service: &str, address: &str) -> bool {
    let connected = tokio::time::timeout(Duration::from_secs(2), TcpStream::connect(address)).await;
    if matches!(connected, Ok(Ok(_))) {
        return true;
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!(
            "{service} is not reachable at {address}: CI needs it running (see scripts/test.sh)"
        );
    }
    eprintln!();
    eprintln!("!!! SKIPPED: {service} is not reachable at {address}; start it to run this test");
    eprintln!();
    false
}

/// Returns from the test early when the service is down (outside CI; in CI it fails).
#[allow(unused_macros)]
macro_rules! require {
    ($service:expr, $address:expr) => {
        if !support::service_available($service, $address).await {
            return;
        }
    };
}

/// A loopback port with nothing listening on it: connecting is refused at once.
pub async fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("local addr").port();
    drop(listener);
    port
}

/// A real TCP listener that accepts every connection and never writes a byte: the server
/// that hangs. The accepted sockets stay open until the test's runtime ends.
pub async fn silent_listener() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("local addr");
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    address
}

/// One poll exactly as probity's poller runs it: cut at `timeout` (recorded as `timed out
/// after …`), with the deadline a check can read from `probity::poll_deadline`.
pub async fn poll(check: &impl Check, timeout: Duration) -> CheckResult {
    probity::poll_once(check, timeout).await
}

/// The message of a poll that must have failed.
pub fn failure(result: CheckResult) -> CheckError {
    match result {
        Ok(detail) => panic!("expected the check to fail, it passed: {detail:?}"),
        Err(error) => error,
    }
}

/// The detail of a poll that must have passed.
pub fn success(result: CheckResult) -> probity::Detail {
    match result {
        Ok(detail) => detail,
        Err(error) => panic!("expected the check to pass, it failed: {}", error.message()),
    }
}

/// A measurement's value by name.
pub fn figure(measurements: &[Measurement], name: &str) -> Option<f64> {
    measurements
        .iter()
        .find(|m| m.name == name)
        .map(|m| m.value)
}

/// Polls until the check passes or `deadline` runs out; returns the last result.
pub async fn until_ok(check: &impl Check, timeout: Duration, deadline: Duration) -> CheckResult {
    let end = tokio::time::Instant::now() + deadline;
    loop {
        let result = poll(check, timeout).await;
        if result.is_ok() || tokio::time::Instant::now() >= end {
            return result;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Polls until the check passes without a warning (a pool whose returned connections are back
/// in it) or `deadline` runs out; returns the last result.
pub async fn until_clear(check: &impl Check, timeout: Duration, deadline: Duration) -> CheckResult {
    let end = tokio::time::Instant::now() + deadline;
    loop {
        let result = poll(check, timeout).await;
        let clear = result.as_ref().is_ok_and(|detail| detail.warning.is_none());
        if clear || tokio::time::Instant::now() >= end {
            return result;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Polls until the check fails or `deadline` runs out; returns the last result.
pub async fn until_err(check: &impl Check, timeout: Duration, deadline: Duration) -> CheckResult {
    let end = tokio::time::Instant::now() + deadline;
    loop {
        let result = poll(check, timeout).await;
        if result.is_err() || tokio::time::Instant::now() >= end {
            return result;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Asserts no password of `secrets` appears in the error.
pub fn assert_no_secret(error: &CheckError, secrets: &[&str]) {
    for secret in secrets {
        assert!(
            !error.message().contains(secret),
            "secret {secret:?} leaked into the check's error: {}",
            error.message()
        );
    }
}

/// A lock on one service's server-wide state, held across test processes (nextest runs each
/// test in its own process, so an in-process mutex would not do). Tests that change what every
/// client of the server sees (`CLIENT PAUSE`, a RabbitMQ memory alarm) take it exclusively;
/// the other tests of that service take it shared, so they never run during such a fault.
pub struct ServiceLock(std::fs::File);

impl ServiceLock {
    pub async fn shared(service: &str) -> Self {
        Self::take(service, false).await
    }

    pub async fn exclusive(service: &str) -> Self {
        Self::take(service, true).await
    }

    async fn take(service: &str, exclusive: bool) -> Self {
        let path = std::env::temp_dir().join(format!("probity-checks-{service}.lock"));
        tokio::task::spawn_blocking(move || {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .expect("open lock file");
            if exclusive {
                file.lock().expect("lock");
            } else {
                file.lock_shared().expect("lock");
            }
            Self(file)
        })
        .await
        .expect("lock task")
    }
}

/// A listener whose accept queue is full: new connections are never even accepted, so a
/// connect hangs until the caller gives up (the kernel drops the SYNs).
pub async fn full_backlog_listener() -> (SocketAddr, Vec<TcpStream>, tokio::net::TcpListener) {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind("127.0.0.1:0".parse().expect("addr"))
        .expect("bind");
    let listener = socket.listen(1).expect("listen");
    let address = listener.local_addr().expect("local addr");
    let mut filling = Vec::new();
    // Connections the kernel completes without accept() until the queue is full.
    for _ in 0..8 {
        match tokio::time::timeout(Duration::from_millis(200), TcpStream::connect(address)).await {
            Ok(Ok(stream)) => filling.push(stream),
            _ => break,
        }
    }
    (address, filling, listener)
}

/// Polls until the check fails with a message `matches` accepts (10 s at most); returns the
/// last result.
pub async fn until_err_matching(
    check: &impl Check,
    timeout: Duration,
    matches: impl Fn(&str) -> bool,
) -> CheckResult {
    let end = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let result = poll(check, timeout).await;
        let done = matches!(&result, Err(error) if matches(error.message()));
        if done || tokio::time::Instant::now() >= end {
            return result;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
