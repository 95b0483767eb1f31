//! SIGTERM against the running binary: readiness fails at once, the listener keeps accepting
//! for the drain delay, an in-flight request completes, then the process exits.

mod support;

use axum::Router;
use axum::extract::Query;
use axum::routing::get;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use support::{Checkout, client, poll_until, send, wait_ready};

/// A recommendations service that answers at once, except for `customer=slow-MILLIS`, which
/// takes that long.
fn recommendations_stub() -> SocketAddr {
    let app = Router::new().route(
        "/recommendations",
        get(|Query(query): Query<HashMap<String, String>>| async move {
            let slow = query
                .get("customer")
                .and_then(|customer| customer.strip_prefix("slow-"))
                .and_then(|millis| millis.parse().ok());
            if let Some(millis) = slow {
                tokio::time::sleep(Duration::from_millis(millis)).await;
            }
            axum::Json(serde_json::json!({ "items": [{ "sku": "book-1" }] }))
        }),
    );
    support::serve_in_background(app)
}

#[tokio::test]
async fn sigterm_fails_readiness_at_once_drains_finishes_in_flight_and_exits() {
    let stub = recommendations_stub();
    let drain = Duration::from_secs(2);
    let mut checkout = Checkout::start(&[
        "--drain-delay",
        "2s",
        "--in-flight-deadline",
        "5s",
        "--recommendations-url",
        &format!("http://{stub}"),
        "--recommendations-timeout",
        "5s",
    ]);
    wait_ready(&checkout).await;

    checkout.signal("TERM");
    let signalled = Instant::now();
    let readyz = checkout.url("/readyz");
    let not_ready = poll_until(
        Duration::from_secs(10),
        "/readyz 503 after SIGTERM",
        || async {
            let answer = send(client(Duration::from_secs(1)).get(&readyz))
                .await
                .ok()?;
            (answer.status == 503).then_some(answer)
        },
    )
    .await;
    let to_503 = signalled.elapsed();
    eprintln!("observed: SIGTERM → /readyz 503 in {to_503:?}");
    // At once, and in any case well before the drain delay is over.
    assert!(to_503 < drain, "{to_503:?}");
    assert!(
        not_ready.body.contains("[-]shutdown failed: shutting down"),
        "{}",
        not_ready.body
    );
    // Still serving while the load balancers notice: liveness passes, the API answers.
    let livez = support::get(&checkout.url("/livez")).await;
    assert_eq!(livez.status, 200);

    // A request that starts during the drain and runs past the listener closing.
    tokio::time::sleep_until((signalled + Duration::from_millis(1000)).into()).await;
    let in_flight = {
        let url = checkout.url("/recommendations?customer=slow-1800");
        tokio::spawn(async move {
            let answer = send(client(Duration::from_secs(30)).get(&url)).await;
            (answer, Instant::now())
        })
    };

    // After the drain delay the listener is closed: new connections are refused.
    let livez = checkout.url("/livez");
    let refused_at = poll_until(Duration::from_secs(20), "connection refused", || async {
        match send(client(Duration::from_millis(500)).get(&livez)).await {
            Err(error) if error.is_connect() => Some(Instant::now()),
            _ => None,
        }
    })
    .await;
    let closed_after = refused_at - signalled;
    eprintln!("observed: listener closed {closed_after:?} after SIGTERM (drain delay {drain:?})");
    assert!(
        closed_after >= drain,
        "closed before the drain delay: {closed_after:?}"
    );
    assert!(
        closed_after < drain + Duration::from_secs(3),
        "{closed_after:?}"
    );

    let (answer, finished_at) = in_flight.await.unwrap();
    let answer = answer.expect("the in-flight request completes");
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(
        answer.body.contains(r#""source":"service""#),
        "{}",
        answer.body
    );
    assert!(
        finished_at > refused_at,
        "the request finished before the listener closed"
    );

    let status = checkout
        .wait_exit(Duration::from_secs(30))
        .await
        .expect("checkout exits after the in-flight request");
    let exited = signalled.elapsed();
    eprintln!(
        "observed: in-flight request done {:?} after SIGTERM, process exited after {exited:?}",
        finished_at - signalled
    );
    assert!(status.success(), "{status}");
    assert!(exited >= drain + Duration::from_millis(700), "{exited:?}");
    assert!(exited < drain + Duration::from_secs(15), "{exited:?}");
    let log = checkout.stderr.text();
    assert!(log.contains("SIGTERM received"), "{log}");
    assert!(
        log.contains("shutdown complete: drained, then finished in-flight requests"),
        "{log}"
    );
}

#[tokio::test]
async fn the_in_flight_deadline_bounds_the_exit() {
    let stub = recommendations_stub();
    let mut checkout = Checkout::start(&[
        "--drain-delay",
        "500ms",
        "--in-flight-deadline",
        "500ms",
        "--recommendations-url",
        &format!("http://{stub}"),
        "--recommendations-timeout",
        "10s",
    ]);
    wait_ready(&checkout).await;
    // Far longer than drain + deadline, so the bound shows even on a slow machine.
    let slow = Duration::from_secs(8);
    let in_flight = {
        let url = checkout.url(&format!(
            "/recommendations?customer=slow-{}",
            slow.as_millis()
        ));
        tokio::spawn(async move { send(client(Duration::from_secs(30)).get(&url)).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    checkout.signal("TERM");
    let signalled = Instant::now();
    let status = checkout
        .wait_exit(Duration::from_secs(20))
        .await
        .expect("exits");
    let exited = signalled.elapsed();
    eprintln!(
        "observed: drain 500 ms + deadline 500 ms with an 8 s request → exit after {exited:?}"
    );
    assert!(status.success(), "{status}");
    assert!(
        exited >= Duration::from_secs(1) && exited < slow,
        "{exited:?}"
    );
    assert!(
        in_flight.await.unwrap().is_err(),
        "the abandoned request cannot complete"
    );
    let log = checkout.stderr.text();
    assert!(log.contains("in-flight deadline reached"), "{log}");
}
