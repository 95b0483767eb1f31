//! The listener's limits, on tokio's paused clock over an in-memory listener: slow and idle
//! clients are cut after the header-read timeout, and once ordinary connections fill the limit
//! probes still get in while everything else is turned away.

mod support;

use axum::Router;
use axum::body::Body;
use axum::routing::get;
use probity::Health;
use probity_axum::{Probes, ServeConfig, serve_with};
use std::time::Duration;
use support::{Connector, memory_listener, read_all, send};
use tokio::time::Instant;

/// 10 chunks of 16 KiB, 2 s apart: a download that takes longer than the header-read timeout.
fn slow_download() -> impl futures_util::Stream<Item = Result<Vec<u8>, std::io::Error>> {
    futures_util::stream::unfold(0, |sent| async move {
        if sent == 10 {
            return None;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        Some((Ok(vec![b'x'; 16 * 1024]), sent + 1))
    })
}

fn start(config: ServeConfig) -> (Health, Connector) {
    let health = Health::builder().service("shop").build().unwrap();
    health.start().unwrap();
    let app = Router::new()
        .route("/orders", get(|| async { "[]" }))
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(20)).await;
                "done"
            }),
        )
        .route(
            "/download",
            get(|| async { Body::from_stream(slow_download()) }),
        )
        .merge(Probes::new(health.clone()).router());
    let (listener, connector) = memory_listener();
    let serving = health.clone();
    tokio::spawn(async move { serve_with(listener, app, &serving, config).await });
    (health, connector)
}

#[tokio::test(start_paused = true)]
async fn a_client_dribbling_its_headers_is_cut_at_the_header_read_timeout() {
    let (_health, connector) =
        start(ServeConfig::default().header_read_timeout(Duration::from_secs(5)));
    let mut slow = connector.connect().unwrap();
    let started = Instant::now();
    assert!(send(&mut slow, b"GET /orders HTTP/1.1\r\nhost: shop\r\n").await);
    // One more header line a second: never a complete head.
    let dribbling = tokio::spawn(async move {
        for i in 0..60 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if !send(&mut slow, format!("x-{i}: y\r\n").as_bytes()).await {
                break;
            }
        }
        read_all(&mut slow).await
    });
    let answer = dribbling.await.unwrap();
    let cut_after = started.elapsed();
    assert!(
        cut_after >= Duration::from_secs(5) && cut_after < Duration::from_secs(7),
        "cut after {cut_after:?}"
    );
    assert!(!answer.unwrap_or_default().contains("200 OK"));
}

#[tokio::test(start_paused = true)]
async fn an_idle_keep_alive_connection_is_closed_after_the_same_timeout() {
    let (_health, connector) =
        start(ServeConfig::default().header_read_timeout(Duration::from_secs(5)));
    let mut client = connector.connect().unwrap();
    assert!(send(&mut client, b"GET /livez HTTP/1.1\r\nhost: shop\r\n\r\n").await);
    let answered = Instant::now();
    let raw = read_all(&mut client).await.unwrap();
    assert!(raw.starts_with("HTTP/1.1 200 OK"), "{raw}");
    let idle_for = answered.elapsed();
    assert!(
        idle_for >= Duration::from_secs(5) && idle_for < Duration::from_secs(6),
        "closed after {idle_for:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn past_the_limit_probes_get_in_and_everything_else_is_turned_away() {
    let config = ServeConfig::default()
        .max_connections(2)
        .probe_reserve(1)
        .header_read_timeout(Duration::from_secs(30));
    let (_health, connector) = start(config);
    // Two idle clients fill the ordinary limit.
    let mut idle: Vec<_> = (0..2).map(|_| connector.connect().unwrap()).collect();
    for client in &mut idle {
        assert!(send(client, b"GET /orders HTTP/1.1\r\n").await);
    }
    tokio::task::yield_now().await;

    // A probe still gets in, answered and closed.
    let (status, body) = connector.get("/livez").await.unwrap();
    assert_eq!((status, body.as_str()), (200, "ok\n"));
    assert_eq!(
        connector.get("/readyz?verbose").await.map(|(s, _)| s),
        Some(200)
    );

    // Anything else is told to come back later, with nothing processed.
    let mut other = connector.connect().unwrap();
    assert!(send(&mut other, b"GET /orders HTTP/1.1\r\nhost: shop\r\n\r\n").await);
    let raw = read_all(&mut other).await.unwrap();
    assert!(raw.starts_with("HTTP/1.1 503 Service Unavailable"), "{raw}");
    assert!(raw.contains("retry-after: 1"), "{raw}");

    // A client that never says what it wants is cut at the admission timeout.
    let mut silent = connector.connect().unwrap();
    let started = Instant::now();
    let raw = read_all(&mut silent).await.unwrap();
    assert!(raw.is_empty(), "{raw}");
    assert!(
        started.elapsed() <= Duration::from_millis(1100),
        "{:?}",
        started.elapsed()
    );

    // Once an ordinary slot frees, ordinary requests are served again.
    drop(idle.pop());
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(connector.get("/orders").await, Some((200, "[]".into())));
}

#[tokio::test(start_paused = true)]
async fn with_the_reserve_full_a_new_connection_is_closed_at_once() {
    let config = ServeConfig::default()
        .max_connections(1)
        .probe_reserve(0)
        .header_read_timeout(Duration::from_secs(30));
    let (_health, connector) = start(config);
    let mut idle = connector.connect().unwrap();
    assert!(send(&mut idle, b"GET /orders HTTP/1.1\r\n").await);
    tokio::task::yield_now().await;
    let mut refused = connector.connect().unwrap();
    let started = Instant::now();
    assert_eq!(read_all(&mut refused).await.as_deref(), Some(""));
    assert_eq!(
        started.elapsed(),
        Duration::ZERO,
        "closed at once, not left waiting"
    );
}

/// Asks `path` on a fresh connection (header-read timeout 5 s) and reads until the server
/// closes: the answer, and how long after the request the connection closed.
async fn ask_and_wait_for_close(path: &str) -> (String, Duration) {
    let (_health, connector) =
        start(ServeConfig::default().header_read_timeout(Duration::from_secs(5)));
    let mut client = connector.connect().unwrap();
    let started = Instant::now();
    let request = format!("GET {path} HTTP/1.1\r\nhost: shop\r\n\r\n");
    assert!(send(&mut client, request.as_bytes()).await);
    let raw = read_all(&mut client).await.unwrap();
    assert!(
        raw.starts_with("HTTP/1.1 200 OK"),
        "{}",
        &raw[..raw.len().min(200)]
    );
    (raw, started.elapsed())
}

#[tokio::test(start_paused = true)]
async fn a_request_slower_than_the_timeout_is_answered_and_the_idle_time_counts_after_it() {
    let (raw, closed_after) = ask_and_wait_for_close("/slow").await;
    assert!(raw.ends_with("done"), "{raw}");
    // Answered at 20 s, then idle for the timeout.
    assert!(
        closed_after >= Duration::from_secs(25) && closed_after < Duration::from_secs(26),
        "closed after {closed_after:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_download_longer_than_the_timeout_is_sent_whole() {
    let (raw, closed_after) = ask_and_wait_for_close("/download").await;
    let body_bytes = raw.bytes().filter(|&byte| byte == b'x').count();
    assert_eq!(body_bytes, 10 * 16 * 1024);
    // 20 s of download, then idle for the timeout.
    assert!(
        closed_after >= Duration::from_secs(25) && closed_after < Duration::from_secs(26),
        "closed after {closed_after:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_keep_alive_client_asking_again_within_the_timeout_keeps_its_connection() {
    let (_health, connector) =
        start(ServeConfig::default().header_read_timeout(Duration::from_secs(5)));
    let mut client = connector.connect().unwrap();
    // Six requests 4 s apart: 24 s on one connection, never idle for 5 s.
    for _ in 0..6 {
        assert!(send(&mut client, b"GET /livez HTTP/1.1\r\nhost: shop\r\n\r\n").await);
        let mut answer = vec![0u8; 4096];
        let read = tokio::io::AsyncReadExt::read(&mut client, &mut answer)
            .await
            .unwrap();
        let answer = String::from_utf8_lossy(&answer[..read]);
        assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
        tokio::time::sleep(Duration::from_secs(4)).await;
    }
}
