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
