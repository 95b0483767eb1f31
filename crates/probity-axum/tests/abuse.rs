//! What clients cannot do to a listener, on tokio's paused clock over an in-memory listener: a
//! body that stops coming is cut, long-lived streams have a budget of their own and never get
//! the probe reserve, and a table full of busy connections says so through readiness (a table
//! full of idle ones does not).

mod support;

use axum::Router;
use axum::body::Body;
use axum::routing::{get, post};
use probity::Health;
use probity_axum::{Probes, ServeConfig, serve_with};
use std::time::Duration;
use support::{Connector, memory_listener, read_all, send};
use tokio::io::AsyncReadExt;
use tokio::time::Instant;

/// A stream that never ends: one line every second.
fn endless() -> impl futures_util::Stream<Item = Result<&'static [u8], std::io::Error>> {
    futures_util::stream::unfold((), |()| async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        Some((Ok(&b"tick\n"[..]), ()))
    })
}

fn start(config: ServeConfig) -> (Health, Connector) {
    let health = Health::builder().service("shop").build().unwrap();
    health.start().unwrap();
    let app = Router::new()
        .route(
            "/orders",
            post(|body: String| async move { body.len().to_string() }),
        )
        .route("/events", get(|| async { Body::from_stream(endless()) }))
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(60)).await;
                "done"
            }),
        )
        .merge(Probes::new(health.clone()).router());
    let (listener, connector) = memory_listener();
    let serving = health.clone();
    tokio::spawn(async move { serve_with(listener, app, &serving, config).await });
    (health, connector)
}

#[tokio::test(start_paused = true)]
async fn a_body_that_stops_coming_is_cut_with_408_and_the_connection_closed() {
    let (_health, connector) = start(
        ServeConfig::default()
            .header_read_timeout(Duration::from_secs(2))
            .body_read_timeout(Duration::from_secs(2)),
    );
    let mut client = connector.connect().unwrap();
    let started = Instant::now();
    // One byte of the hundred announced, then nothing.
    assert!(
        send(
            &mut client,
            b"POST /orders HTTP/1.1\r\nhost: shop\r\ncontent-length: 100\r\n\r\nx"
        )
        .await
    );
    let raw = read_all(&mut client).await.unwrap();
    let cut_after = started.elapsed();
    assert!(raw.starts_with("HTTP/1.1 408"), "{raw}");
    assert!(raw.contains("connection: close"), "{raw}");
    assert!(
        cut_after >= Duration::from_secs(2) && cut_after < Duration::from_secs(3),
        "cut after {cut_after:?}"
    );

    // A body dribbled a byte a second never pauses long, but falls behind the rate.
    let mut dribbler = connector.connect().unwrap();
    let started = Instant::now();
    assert!(
        send(
            &mut dribbler,
            b"POST /orders HTTP/1.1\r\nhost: shop\r\ncontent-length: 100\r\n\r\n"
        )
        .await
    );
    let (mut reader, mut writer) = tokio::io::split(dribbler);
    let dribble = tokio::spawn(async move {
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(900)).await;
            if tokio::io::AsyncWriteExt::write_all(&mut writer, b"x")
                .await
                .is_err()
            {
                break;
            }
        }
    });
    let mut raw = String::new();
    reader.read_to_string(&mut raw).await.unwrap();
    let cut_after = started.elapsed();
    dribble.abort();
    assert!(raw.starts_with("HTTP/1.1 408"), "{raw}");
    assert!(
        cut_after < Duration::from_secs(4),
        "cut after {cut_after:?}"
    );

    // A body that comes whole is served.
    let mut whole = connector.connect().unwrap();
    assert!(
        send(
            &mut whole,
            b"POST /orders HTTP/1.1\r\nhost: shop\r\nconnection: close\r\ncontent-length: 5\r\n\r\nhello"
        )
        .await
    );
    let raw = read_all(&mut whole).await.unwrap();
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    assert!(raw.ends_with("\r\n\r\n5"), "{raw}");
}

#[tokio::test(start_paused = true)]
async fn long_lived_streams_have_their_own_budget_and_never_take_the_reserve() {
    let (_health, connector) = start(
        ServeConfig::default()
            .max_connections(4)
            .probe_reserve(2)
            .max_streams(2)
            .stream_paths(["/events"])
            .header_read_timeout(Duration::from_secs(5)),
    );
    // Two streams fit the budget and stay open.
    let mut streams = Vec::new();
    for _ in 0..2 {
        let mut client = connector.connect().unwrap();
        assert!(send(&mut client, b"GET /events HTTP/1.1\r\nhost: shop\r\n\r\n").await);
        let mut head = [0u8; 12];
        client.read_exact(&mut head).await.unwrap();
        assert_eq!(&head, b"HTTP/1.1 200");
        streams.push(client);
    }
    // A third is refused at once, on an ordinary connection with room to spare.
    let (status, body) = connector.get("/events").await.unwrap();
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("long-lived streams"), "{body}");

    // Fill the rest of the table with idle clients; the streams still hold theirs.
    let mut idle = Vec::new();
    for _ in 0..2 {
        let mut client = connector.connect().unwrap();
        assert!(send(&mut client, b"GET /orders HTTP/1.1\r\n").await);
        idle.push(client);
    }
    tokio::task::yield_now().await;
    // Through the reserve a stream is refused; a probe is answered.
    let (status, body) = connector.get("/events").await.unwrap();
    assert_eq!(status, 503, "{body}");
    assert_eq!(connector.get("/livez").await, Some((200, "ok\n".into())));
    // Idle clients fill the table, and readiness stays 200: they do not drain the instance.
    assert_eq!(connector.get("/readyz").await.map(|(s, _)| s), Some(200));

    // A closed stream gives its place back.
    drop(streams.pop());
    drop(idle);
    tokio::time::sleep(Duration::from_millis(10)).await;
    let mut client = connector.connect().unwrap();
    assert!(send(&mut client, b"GET /events HTTP/1.1\r\nhost: shop\r\n\r\n").await);
    let mut head = [0u8; 12];
    client.read_exact(&mut head).await.unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");
}

#[tokio::test(start_paused = true)]
async fn a_table_full_of_busy_connections_fails_readiness_through_the_reserve() {
    let (_health, connector) = start(
        ServeConfig::default()
            .max_connections(2)
            .probe_reserve(2)
            .header_read_timeout(Duration::from_secs(30)),
    );
    // Two requests in progress fill the table.
    let mut busy = Vec::new();
    for _ in 0..2 {
        let mut client = connector.connect().unwrap();
        assert!(send(&mut client, b"GET /slow HTTP/1.1\r\nhost: shop\r\n\r\n").await);
        busy.push(client);
    }
    tokio::time::sleep(Duration::from_millis(10)).await;
    let (status, body) = connector.get("/readyz").await.unwrap();
    assert_eq!(status, 503, "{body}");
    assert!(
        body.contains(
            "[-]connections failed: every connection is taken, 2 requests running on 2 connections"
        ),
        "{body}"
    );
    // Liveness is untouched.
    assert_eq!(connector.get("/livez").await, Some((200, "ok\n".into())));
    // Once a slot frees, readiness answers from the snapshot again.
    drop(busy.pop());
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(connector.get("/readyz").await.map(|(s, _)| s), Some(200));
}

#[tokio::test(start_paused = true)]
async fn connections_that_say_nothing_never_keep_a_probe_out_of_the_reserve() {
    let (_health, connector) = start(
        ServeConfig::default()
            .max_connections(1)
            .probe_reserve(4)
            .header_read_timeout(Duration::from_secs(30)),
    );
    let mut idle = connector.connect().unwrap();
    assert!(send(&mut idle, b"GET /orders HTTP/1.1\r\n").await);
    tokio::task::yield_now().await;
    // Far more silent connections than there are admission slots, all waiting at once.
    let silent: Vec<_> = (0..500).map(|_| connector.connect().unwrap()).collect();
    tokio::task::yield_now().await;
    // A probe behind them all still gets in, well within its one-second timeout: each silent
    // connection is let go once it has been looked at and has had a short grace to speak, so
    // the queue ahead moves a room's worth at a time.
    let started = Instant::now();
    assert_eq!(connector.get("/livez").await, Some((200, "ok\n".into())));
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
    drop(silent);
}

#[tokio::test(start_paused = true)]
async fn probes_that_came_in_a_burst_of_silent_connections_are_all_answered() {
    let (_health, connector) = start(
        ServeConfig::default()
            .max_connections(1)
            .probe_reserve(16)
            .header_read_timeout(Duration::from_secs(30)),
    );
    let mut idle = connector.connect().unwrap();
    assert!(send(&mut idle, b"GET /orders HTTP/1.1\r\n").await);
    tokio::task::yield_now().await;
    // Ten probes, each followed by fifty silent connections, all waiting before the server
    // takes any: each probe is let go for newer connections before its task first runs (the
    // accept backlog after a stall), yet its request is already there to be read.
    let mut probes = Vec::new();
    let mut silent = Vec::new();
    for _ in 0..10 {
        let mut probe = connector.connect().unwrap();
        assert!(send(&mut probe, b"GET /livez HTTP/1.1\r\nhost: shop\r\n\r\n").await);
        probes.push(probe);
        silent.extend((0..50).map(|_| connector.connect().unwrap()));
    }
    let answers: Vec<_> = probes
        .into_iter()
        .map(|mut probe| tokio::spawn(async move { read_all(&mut probe).await }))
        .collect();
    for answer in answers {
        let raw = answer.await.unwrap().unwrap_or_default();
        assert!(raw.starts_with("HTTP/1.1 200 OK"), "{raw:?}");
    }
    drop(silent);
}

#[tokio::test(start_paused = true)]
async fn probe_requests_dribbled_never_take_the_reserve() {
    let (_health, connector) = start(
        ServeConfig::default()
            .max_connections(1)
            .probe_reserve(2)
            .header_read_timeout(Duration::from_secs(30)),
    );
    let mut idle = connector.connect().unwrap();
    assert!(send(&mut idle, b"GET /orders HTTP/1.1\r\n").await);
    tokio::task::yield_now().await;
    // More clients than the reserve has slots send a probe's request line, then nothing.
    let mut dribbling = Vec::new();
    for _ in 0..8 {
        let mut client = connector.connect().unwrap();
        assert!(send(&mut client, b"GET /livez HTTP/1.1\r\n").await);
        dribbling.push(client);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    // A probe with its whole request is answered at once.
    let started = Instant::now();
    assert_eq!(connector.get("/livez").await, Some((200, "ok\n".into())));
    assert!(
        started.elapsed() < Duration::from_millis(100),
        "{:?}",
        started.elapsed()
    );
    // The dribblers are let go at the admission timeout, unanswered.
    for mut client in dribbling {
        let raw = read_all(&mut client).await.unwrap_or_default();
        assert!(raw.is_empty(), "{raw}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_probe_that_speaks_a_moment_after_connecting_is_not_let_go_for_a_burst() {
    let (_health, connector) = start(
        ServeConfig::default()
            .max_connections(1)
            .probe_reserve(4)
            .header_read_timeout(Duration::from_secs(30)),
    );
    let mut idle = connector.connect().unwrap();
    assert!(send(&mut idle, b"GET /orders HTTP/1.1\r\n").await);
    tokio::task::yield_now().await;
    // The probe connects, and is looked at before its request is on its way.
    let mut probe = connector.connect().unwrap();
    tokio::time::sleep(Duration::from_millis(1)).await;
    // A burst of silent connections, far more than there are admission slots, comes before
    // the probe's request does.
    let silent: Vec<_> = (0..500).map(|_| connector.connect().unwrap()).collect();
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(send(&mut probe, b"GET /livez HTTP/1.1\r\nhost: shop\r\n\r\n").await);
    let raw = read_all(&mut probe).await.unwrap_or_default();
    assert!(raw.starts_with("HTTP/1.1 200 OK"), "{raw:?}");
    drop(silent);
}
