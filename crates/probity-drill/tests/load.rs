//! The load generator against a real HTTP server on loopback: closed loop keeps exactly N
//! requests in flight, a rate caps the total, every loop ends with its duration, and each kind
//! of failure is told apart.

use axum::Router;
use axum::http::StatusCode;
use axum::routing::post;
use probity_drill::load::{self, LoadRequest, LoadSpec};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[derive(Default)]
struct Seen {
    in_flight: AtomicU64,
    most_in_flight: AtomicU64,
    requests: AtomicU64,
}

fn order() -> LoadRequest {
    LoadRequest::post(
        "/orders",
        r#"{"customer":"drill","items":[{"sku":"book-1","quantity":1}]}"#,
    )
}

/// A server whose `POST /orders` takes `delay` and answers `status`.
async fn server(delay: Duration, status: StatusCode) -> (SocketAddr, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let app = Router::new().route(
        "/orders",
        post({
            let seen = seen.clone();
            move |body: String| {
                let seen = seen.clone();
                async move {
                    assert!(body.contains("\"customer\""), "the order body arrives");
                    let now = seen.in_flight.fetch_add(1, Ordering::AcqRel) + 1;
                    seen.most_in_flight.fetch_max(now, Ordering::AcqRel);
                    seen.requests.fetch_add(1, Ordering::AcqRel);
                    tokio::time::sleep(delay).await;
                    seen.in_flight.fetch_sub(1, Ordering::AcqRel);
                    status
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (address, seen)
}

/// Long enough that all eight connections are open and busy at once on a loaded machine.
const DURATION: Duration = Duration::from_secs(3);

#[tokio::test]
async fn a_closed_loop_keeps_exactly_its_connections_busy_and_stops_with_its_duration() {
    let (address, seen) = server(Duration::from_millis(20), StatusCode::CREATED).await;
    let started = std::time::Instant::now();
    let report = load::run(
        address,
        LoadSpec {
            concurrency: 8,
            duration: DURATION,
            request: order(),
            ..LoadSpec::default()
        },
    )
    .await;
    let took = started.elapsed();
    assert_eq!(seen.most_in_flight.load(Ordering::Acquire), 8, "{report}");
    assert_eq!(report.failed, 0, "{report}");
    assert_eq!(report.requests, seen.requests.load(Ordering::Acquire));
    assert_eq!(report.statuses.get(&201), Some(&report.requests));
    // Each connection sends one request per 20 ms at most: 8 × 50 a second.
    assert!(
        report.requests > 8 && report.requests <= 8 * (50 * DURATION.as_secs() + 1),
        "{report}"
    );
    assert!(report.latency_p50 >= Duration::from_millis(20), "{report}");
    // No request starts after the duration; the last ones end at most one timeout later.
    assert!(took < DURATION + LoadSpec::default().timeout, "{took:?}");
    assert_eq!(report.elapsed, DURATION);
}

#[tokio::test]
async fn a_rate_caps_the_total() {
    let (address, seen) = server(Duration::ZERO, StatusCode::CREATED).await;
    let report = load::run(
        address,
        LoadSpec {
            concurrency: 4,
            duration: Duration::from_secs(1),
            rate: Some(40),
            request: order(),
            ..LoadSpec::default()
        },
    )
    .await;
    // 40 per second over one second, plus at most one extra tick per connection.
    assert!(report.requests >= 1 && report.requests <= 44, "{report}");
    assert_eq!(report.requests, seen.requests.load(Ordering::Acquire));
}

#[tokio::test]
async fn service_errors_refused_connections_and_timeouts_are_told_apart() {
    let (address, _) = server(Duration::ZERO, StatusCode::SERVICE_UNAVAILABLE).await;
    let short = LoadSpec {
        concurrency: 2,
        // Long enough for a request to go out on a loaded machine.
        duration: Duration::from_secs(1),
        request: order(),
        ..LoadSpec::default()
    };
    let report = load::run(address, short.clone()).await;
    assert!(report.requests > 0);
    assert_eq!(report.failed, report.requests, "{report}");
    assert_eq!(report.statuses.get(&503), Some(&report.requests));
    assert_eq!(
        report.refused_by_balancer, 0,
        "the service's own 503 is not the balancer's"
    );

    // Nothing listening: every request is a refused connection.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let nobody = closed.local_addr().unwrap();
    drop(closed);
    let report = load::run(nobody, short.clone()).await;
    assert!(report.requests > 0);
    assert_eq!(report.connection_refused, report.requests, "{report}");

    // Slower than the timeout: timed out.
    let (slow, _) = server(Duration::from_secs(2), StatusCode::CREATED).await;
    let report = load::run(
        slow,
        LoadSpec {
            timeout: Duration::from_millis(100),
            request: order(),
            ..short
        },
    )
    .await;
    assert!(report.requests > 0);
    assert_eq!(report.timed_out, report.requests, "{report}");
}
