//! Liveness is always answerable, against the binary at a low descriptor limit: idle gRPC
//! `Watch` streams from a real gRPC client, bodies that never finish, and idle floods on both
//! ports leave `/livez` answering every kubelet-like probe (a new connection, a 1 s timeout).
//! Each test prints the worst `/livez` answer time it saw.
//!
//! Every probe must be answered; the one cause excused is the machine's (see
//! [`support::answered_all`]).

mod support;

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{Checkout, answered_all, probe_times, python_with_grpc_health, wait_ready};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_watch_streams_never_take_the_probes_room() {
    let Some(python) = python_with_grpc_health() else {
        return;
    };
    let checkout = Checkout::start_with_descriptor_limit(256, &[]);
    wait_ready(&checkout).await;
    // More streams than the whole descriptor limit, each on its own connection.
    let flood_for = Duration::from_secs(14);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/watch_flood.py");
    let flood = Command::new(&python)
        .args([
            script,
            &checkout.listen.to_string(),
            "300",
            &flood_for.as_secs().to_string(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the gRPC client");
    // Let the streams open, then probe while they are held.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let probe_for = Duration::from_secs(8);
    let (livez_url, readyz_url) = (checkout.url("/livez"), checkout.url("/readyz"));
    let orders_url = checkout.url("/orders");
    let (livez, readyz, orders) = tokio::join!(
        probe_times(&livez_url, Duration::from_millis(200), probe_for),
        probe_times(&readyz_url, Duration::from_millis(200), probe_for),
        place_orders(&orders_url, probe_for),
    );
    let output = tokio::task::spawn_blocking(move || flood.wait_with_output())
        .await
        .unwrap()
        .expect("the gRPC client ran");
    let counts = String::from_utf8_lossy(&output.stdout).to_string();
    let log = checkout.stderr.text();
    let live = answered_all("/livez", &livez, &log);
    let ready = answered_all("/readyz", &readyz, &log);
    let placed = orders.iter().filter(|(status, _)| *status == 201).count();
    eprintln!(
        "observed: 300 Watch clients at 256 descriptors ({}): /livez {live}; /readyz {ready}; \
         POST /orders {placed} of {} placed, statuses {:?}",
        counts.trim(),
        orders.len(),
        orders
            .iter()
            .map(|(status, _)| *status)
            .collect::<std::collections::BTreeSet<_>>()
    );
    // The API answers throughout: an order is placed, or turned away with a retry hint
    // (nothing processed) when a connection is not to be had — never left unanswered.
    assert!(
        orders
            .iter()
            .all(|(status, retry)| *status == 201 || (*status == 503 && *retry)),
        "{orders:?}\n{log}"
    );
    // The flood's connections compete for the same connection table (74 at this limit), so
    // some orders are turned away while it lasts; some get through, and all do once it ends.
    assert!(placed >= 1, "{orders:?}");
    let order = support::post(
        &orders_url,
        Some(r#"{"customer":"after","items":[{"sku":"book-1","quantity":1,"price_cents":250}]}"#),
    )
    .await;
    assert_eq!(order.status, 201, "{}", order.body);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let counts: serde_json::Value = serde_json::from_str(counts.trim()).expect("counts");
    // Streams were served up to their budget, and past it refused, not left hanging.
    assert!(counts["served"].as_u64().unwrap_or(0) >= 10, "{counts}");
    assert!(counts["refused"].as_u64().unwrap_or(0) >= 1, "{counts}");
    assert!(log.contains("long-lived stream budget is full"), "{log}");
}

/// Places an order on a new connection every 200 ms for `duration` (2 s timeout each); returns
/// each answer's status (0: none) and whether it carried `Retry-After`.
async fn place_orders(url: &str, duration: Duration) -> Vec<(u16, bool)> {
    let client = support::client(Duration::from_secs(2));
    let until = Instant::now() + duration;
    let mut seen = Vec::new();
    while Instant::now() < until {
        let answer = client
            .post(url)
            .header("content-type", "application/json")
            .body(
                r#"{"customer":"flood","items":[{"sku":"book-1","quantity":1,"price_cents":250}]}"#,
            )
            .send()
            .await;
        seen.push(match answer {
            Ok(response) => (
                response.status().as_u16(),
                response.headers().contains_key("retry-after"),
            ),
            Err(_) => (0, false),
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    seen
}

/// One client that announces a 100-byte body and sends one byte of it; returns when the
/// server closes the connection, with the status it answered (0: none) and after how long.
async fn slow_body(address: SocketAddr) -> (u16, Duration) {
    let started = Instant::now();
    let Ok(mut stream) = TcpStream::connect(address).await else {
        return (0, started.elapsed());
    };
    let head = "POST /orders HTTP/1.1\r\nhost: checkout\r\ncontent-type: application/json\r\n\
                content-length: 100\r\n\r\n{";
    if stream.write_all(head.as_bytes()).await.is_err() {
        return (0, started.elapsed());
    }
    let mut raw = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(60), stream.read_to_end(&mut raw)).await;
    let status = std::str::from_utf8(raw.get(9..12).unwrap_or_default())
        .ok()
        .and_then(|status| status.parse().ok())
        .unwrap_or(0);
    (status, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_that_never_finish_are_cut_and_the_api_serves_again() {
    let checkout = Checkout::start_with_descriptor_limit(
        256,
        &[
            "--max-connections",
            "50",
            "--header-read-timeout",
            "2s",
            "--body-read-timeout",
            "2s",
        ],
    );
    wait_ready(&checkout).await;
    let started = Instant::now();
    let clients: Vec<_> = (0..50)
        .map(|_| tokio::spawn(slow_body(checkout.listen)))
        .collect();
    let livez = probe_times(
        &checkout.url("/livez"),
        Duration::from_millis(200),
        Duration::from_secs(5),
    )
    .await;
    let mut cut = Vec::new();
    for client in clients {
        cut.push(client.await.unwrap());
    }
    let slowest = cut
        .iter()
        .map(|(_, after)| *after)
        .max()
        .unwrap_or_default();
    let log = checkout.stderr.text();
    let live = answered_all("/livez", &livez, &log);
    eprintln!(
        "observed: 50 one-byte bodies on 50 connections: all cut within {slowest:?} \
         (statuses {:?}); /livez {live}",
        cut.iter()
            .map(|(status, _)| *status)
            .collect::<std::collections::BTreeSet<_>>(),
    );
    // Cut at the body timeout with an answer, not held for as long as they like (those that
    // came when the probes had a connection of the fifty were turned away at once, with 503).
    assert!(
        cut.iter()
            .all(|(status, _)| *status == 408 || *status == 503),
        "{cut:?}\n{log}"
    );
    assert!(
        cut.iter().filter(|(status, _)| *status == 408).count() >= 40,
        "{cut:?}"
    );
    assert!(slowest < Duration::from_secs(8), "{slowest:?}");
    // And the API serves again: an order goes through.
    let order = support::post(
        &checkout.url("/orders"),
        Some(r#"{"customer":"after","items":[{"sku":"book-1","quantity":1,"price_cents":250}]}"#),
    )
    .await;
    assert_eq!(order.status, 201, "{}", order.body);
    assert!(started.elapsed() < Duration::from_secs(30));
}

/// A client that opens a connection, sends nothing, and opens another a second after the
/// server closes it, until `until`.
async fn idle_client(address: SocketAddr, until: Instant) {
    while Instant::now() < until {
        let Ok(mut stream) = TcpStream::connect(address).await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let mut buffer = [0u8; 256];
        let left = until.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.read(&mut buffer)).await {
            Err(_) => return,
            Ok(_) => tokio::time::sleep(Duration::from_secs(1)).await,
        }
    }
}

fn open_descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |entries| entries.count())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_floods_on_both_ports_never_exhaust_the_descriptors() {
    let checkout = Checkout::start_with_descriptor_limit(256, &["--header-read-timeout", "30s"]);
    wait_ready(&checkout).await;
    let until = Instant::now() + Duration::from_secs(12);
    let mut clients = Vec::new();
    for _ in 0..300 {
        clients.push(tokio::spawn(idle_client(checkout.listen, until)));
        clients.push(tokio::spawn(idle_client(checkout.admin, until)));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let pid = checkout.pid();
    let watch = tokio::spawn(async move {
        let mut most = 0;
        while Instant::now() < until {
            most = most.max(open_descriptors(pid));
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        most
    });
    let livez = probe_times(
        &checkout.url("/livez"),
        Duration::from_millis(200),
        Duration::from_secs(8),
    )
    .await;
    for client in clients {
        client.await.unwrap();
    }
    let most = watch.await.unwrap();
    let log = checkout.stderr.text();
    let live = answered_all("/livez", &livez, &log);
    eprintln!(
        "observed: 300 idle clients on each port at 256 descriptors: at most {most} open, \
         /livez {live}"
    );
    assert!(most < 256, "the descriptors ran out: {most}");
    assert!(!log.contains("Too many open files"), "{log}");
}
