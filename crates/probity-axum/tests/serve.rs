//! The shutdown sequence around `axum::serve`, on tokio's paused clock over an in-memory
//! listener: readiness fails at once, the listener keeps accepting for the drain delay, then
//! closes, and in-flight requests get until the deadline.

use axum::Router;
use axum::routing::get;
use probity::Health;
mod support;

use probity_axum::{Probes, ShutdownReport, serve};
use std::time::Duration;
use support::{MemoryListener, memory_listener};
use tokio::time::Instant;

fn app(health: &Health, slow: Duration) -> Router {
    Router::new()
        .route(
            "/slow",
            get(move || async move {
                tokio::time::sleep(slow).await;
                "done"
            }),
        )
        .merge(Probes::new(health.clone()).router())
}

fn health(drain: Duration, deadline: Duration) -> Health {
    let health = Health::builder()
        .service("shop")
        .drain_delay(drain)
        .in_flight_deadline(deadline)
        .build()
        .unwrap();
    health.start().unwrap();
    health
}

fn spawn_server(
    listener: MemoryListener,
    app: Router,
    health: &Health,
) -> tokio::task::JoinHandle<std::io::Result<ShutdownReport>> {
    let health = health.clone();
    tokio::spawn(async move { serve(listener, app, &health).await })
}

#[tokio::test(start_paused = true)]
async fn drains_then_stops_accepting_then_lets_in_flight_requests_finish() {
    let health = health(Duration::from_secs(5), Duration::from_secs(10));
    let (listener, connector) = memory_listener();
    let server = spawn_server(listener, app(&health, Duration::from_secs(3)), &health);

    assert_eq!(connector.get("/readyz").await, Some((200, "ok\n".into())));
    let started = Instant::now();
    health.shutdown();

    // Readiness fails at once; liveness does not; the listener still accepts.
    let (status, body) = connector.get("/readyz").await.unwrap();
    assert_eq!(status, 503);
    assert!(body.contains("[-]shutdown failed: shutting down"), "{body}");
    assert_eq!(connector.get("/livez").await, Some((200, "ok\n".into())));

    tokio::time::sleep_until(started + Duration::from_secs(4)).await;
    assert_eq!(connector.get("/livez").await.map(|(s, _)| s), Some(200));
    // A request that starts during the drain and runs past the listener closing.
    let in_flight = {
        let connector = connector.clone();
        tokio::spawn(async move { connector.get("/slow").await })
    };

    tokio::time::sleep_until(started + Duration::from_millis(5001)).await;
    assert_eq!(
        connector.get("/livez").await,
        None,
        "listener still accepting"
    );

    assert_eq!(in_flight.await.unwrap(), Some((200, "done".into())));
    let report = server.await.unwrap().unwrap();
    assert!(report.within_deadline);
    assert_eq!(report.shutdown_started, started);
    assert_eq!(report.drained_for(), Duration::from_secs(5));
    // The slow request started at +4 s and took 3 s.
    assert_eq!(report.finished - started, Duration::from_secs(7));
    assert_eq!(report.in_flight_for(), Duration::from_secs(2));
}

#[tokio::test(start_paused = true)]
async fn gives_up_on_in_flight_requests_at_the_deadline() {
    let health = health(Duration::from_secs(2), Duration::from_secs(10));
    let (listener, connector) = memory_listener();
    let server = spawn_server(listener, app(&health, Duration::from_secs(600)), &health);
    let stuck = {
        let connector = connector.clone();
        tokio::spawn(async move { connector.get("/slow").await })
    };
    tokio::task::yield_now().await;
    let started = Instant::now();
    health.shutdown();

    let report = server.await.unwrap().unwrap();
    assert!(!report.within_deadline);
    assert_eq!(report.drained_for(), Duration::from_secs(2));
    assert_eq!(report.in_flight_for(), Duration::from_secs(10));
    assert_eq!(report.finished - started, Duration::from_secs(12));
    assert!(!stuck.is_finished());
    stuck.abort();
}

#[tokio::test(start_paused = true)]
async fn with_nothing_in_flight_it_returns_right_after_the_drain_delay() {
    let health = health(Duration::from_secs(3), Duration::from_secs(10));
    let (listener, connector) = memory_listener();
    let server = spawn_server(listener, app(&health, Duration::ZERO), &health);
    assert_eq!(connector.get("/livez").await.map(|(s, _)| s), Some(200));
    let started = Instant::now();
    health.shutdown();
    let report = server.await.unwrap().unwrap();
    assert!(report.within_deadline);
    assert_eq!(report.finished - started, Duration::from_secs(3));
}

#[tokio::test(start_paused = true)]
async fn a_shutdown_triggered_before_serving_still_drains_from_the_trigger() {
    let health = health(Duration::from_secs(3), Duration::from_secs(10));
    let started = Instant::now();
    health.shutdown();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (listener, connector) = memory_listener();
    let server = spawn_server(listener, app(&health, Duration::ZERO), &health);
    assert_eq!(connector.get("/readyz").await.map(|(s, _)| s), Some(503));
    let report = server.await.unwrap().unwrap();
    assert_eq!(report.listener_closed - started, Duration::from_secs(3));
}

#[tokio::test(start_paused = true)]
async fn a_request_on_its_way_as_the_listener_closes_is_answered_not_cut() {
    let health = health(Duration::from_secs(2), Duration::from_secs(10));
    let (listener, connector) = memory_listener();
    let server = spawn_server(listener, app(&health, Duration::ZERO), &health);
    // A keep-alive client, answered once before shutdown.
    let mut client = connector.connect().unwrap();
    assert!(support::send(&mut client, b"GET /livez HTTP/1.1\r\nhost: shop\r\n\r\n").await);
    let mut head = [0u8; 15];
    tokio::io::AsyncReadExt::read_exact(&mut client, &mut head)
        .await
        .unwrap();
    assert_eq!(&head, b"HTTP/1.1 200 OK");
    // A client that connected during the drain and has not sent its request yet.
    let mut fresh = connector.connect().unwrap();
    let started = Instant::now();
    health.shutdown();
    // Its request leaves just after the listener closed.
    tokio::time::sleep_until(started + Duration::from_millis(2300)).await;
    assert!(support::send(&mut fresh, b"GET /livez HTTP/1.1\r\nhost: shop\r\n\r\n").await);
    let raw = support::read_all(&mut fresh).await.unwrap();
    assert!(raw.starts_with("HTTP/1.1 200 OK"), "{raw:?}");
    assert!(raw.contains("connection: close"), "{raw}");
    // The idle keep-alive one is closed after its last call, never under a request.
    let mut rest = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut client, &mut rest)
        .await
        .unwrap();
    let report = server.await.unwrap().unwrap();
    assert!(report.within_deadline);
    assert!(
        report.in_flight_for() <= Duration::from_secs(1),
        "{:?}",
        report.in_flight_for()
    );
}

#[tokio::test(start_paused = true)]
async fn responses_during_the_drain_end_keep_alive() {
    let health = health(Duration::from_secs(5), Duration::from_secs(10));
    let (listener, connector) = memory_listener();
    let _server = spawn_server(listener, app(&health, Duration::ZERO), &health);
    let mut client = connector.connect().unwrap();
    health.shutdown();
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(support::send(&mut client, b"GET /livez HTTP/1.1\r\nhost: shop\r\n\r\n").await);
    let raw = support::read_all(&mut client).await.unwrap();
    assert!(raw.starts_with("HTTP/1.1 200 OK"), "{raw}");
    assert!(raw.contains("connection: close"), "{raw}");
}

/// Connections the kernel completed but the server had not accepted when the listener closed
/// are answered, not reset: real TCP, every client's request already sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_accept_backlog_is_answered_when_the_listener_closes() {
    let health = health(Duration::ZERO, Duration::from_secs(10));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    // The kernel completes these handshakes on its own: they wait in the backlog.
    let clients: Vec<std::net::TcpStream> = (0..50)
        .map(|_| {
            let mut client = std::net::TcpStream::connect(address).unwrap();
            std::io::Write::write_all(&mut client, b"GET /livez HTTP/1.1\r\nhost: shop\r\n\r\n")
                .unwrap();
            client
        })
        .collect();
    // Shutdown with no drain delay: the listener closes before it accepts anything. The drain
    // is waited for here, so the shutdown sequence has run before the server starts: otherwise
    // the accept loop may take the whole backlog before the sequence's task is scheduled.
    health.shutdown();
    health.drained().await;
    let report = serve(listener, app(&health, Duration::ZERO), &health)
        .await
        .unwrap();
    // The accept loop may take one before it sees the drain is over; the rest wait.
    assert!(report.backlog_answered >= 45, "{report:?}");
    let answers = tokio::task::spawn_blocking(move || {
        clients
            .into_iter()
            .map(|mut client| {
                client
                    .set_read_timeout(Some(Duration::from_secs(10)))
                    .unwrap();
                let mut raw = String::new();
                std::io::Read::read_to_string(&mut client, &mut raw).map(|_| raw)
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    for answer in answers {
        let raw = answer.expect("answered, not reset");
        assert!(raw.starts_with("HTTP/1.1 200 OK"), "{raw}");
        assert!(raw.contains("connection: close"), "{raw}");
    }
}
