//! memcached checks against the real server (127.0.0.1:11211), and against a memcached of the
//! test's own started with a small connection limit.

#![cfg(feature = "memcached")]

#[macro_use]
mod support;

use probity::Check;
use probity_checks::memcached::MemcachedCheck;
use std::process::Stdio;
use std::time::Duration;
use support::{failure, figure, poll, success};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

const MEMCACHED: &str = "127.0.0.1:11211";
const TIMEOUT: Duration = Duration::from_secs(1);

#[tokio::test]
async fn the_server_answers_stats_with_its_figures() {
    require!("memcached", MEMCACHED);
    let check = MemcachedCheck::new(MEMCACHED);
    assert_eq!(check.dependency(), Some("memcached"));
    let detail = success(poll(&check, TIMEOUT).await);
    let message = detail.message.as_deref().unwrap_or_default();
    assert!(message.starts_with("memcached 1."), "{message}");
    assert!(message.contains(" of "), "{message}");
    let connections = figure(&detail.measurements, "connections").expect("connections");
    assert!(connections >= 1.0, "{connections}");
    assert!(figure(&detail.measurements, "max_connections").is_some_and(|max| max >= connections));
    // The connection is kept: a second poll answers on it.
    success(poll(&check, TIMEOUT).await);
}

#[tokio::test]
async fn a_closed_port_and_a_silent_server_fail_saying_so() {
    let port = support::closed_port().await;
    let error = failure(poll(&MemcachedCheck::new(format!("127.0.0.1:{port}")), TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!("connection refused (127.0.0.1:{port})")
    );
    let silent = support::silent_listener().await;
    let error = failure(poll(&MemcachedCheck::new(silent.to_string()), TIMEOUT).await);
    assert_eq!(error.message(), "timed out after 1s");
}

/// A memcached of the test's own on a free port, allowed `limit` connections.
async fn own_memcached(limit: u32) -> Option<(Child, String)> {
    let port = support::closed_port().await;
    let started = Command::new("memcached")
        .args(["-l", "127.0.0.1", "-U", "0", "-u", "nobody"])
        .args(["-p", &port.to_string(), "-c", &limit.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn();
    let child = match started {
        Ok(child) => child,
        Err(error) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "memcached cannot be started ({error}): scripts/setup.sh installs it"
            );
            eprintln!("!!! SKIPPED: memcached cannot be started: {error}");
            return None;
        }
    };
    let address = format!("127.0.0.1:{port}");
    let end = tokio::time::Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(&address).await.is_err() {
        assert!(
            tokio::time::Instant::now() < end,
            "memcached never listened on {address}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Some((child, address))
}

#[tokio::test]
async fn a_server_at_its_connection_limit_warns_and_refuses_a_new_check() {
    let Some((_server, address)) = own_memcached(30).await else {
        return;
    };
    let check = MemcachedCheck::new(address.clone());
    let detail = success(poll(&check, TIMEOUT).await);
    assert_eq!(detail.warning, None, "{detail:?}");

    // Other clients take every connection the server has room for.
    let mut others = Vec::new();
    for _ in 0..40 {
        others.push(TcpStream::connect(&address).await.expect("connect"));
    }
    // The server counts a rejection when it gets to the connection: poll until it has.
    let end = tokio::time::Instant::now() + Duration::from_secs(10);
    let warning = loop {
        let detail = success(poll(&check, TIMEOUT).await);
        if let Some(warning) = detail.warning {
            break warning;
        }
        assert!(
            tokio::time::Instant::now() < end,
            "never warned: {detail:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        warning.contains("new connections since the previous poll: at its connection limit"),
        "{warning}"
    );

    // A client arriving now — a new pod, a reconnect — is turned away: so is a new check.
    let newcomer = MemcachedCheck::new(address.clone());
    let error = failure(poll(&newcomer, TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!(
            "memcached at {address} refused the check's connection: too many open connections \
             (its connection limit)"
        )
    );
    drop(others);
}
