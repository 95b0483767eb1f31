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

/// What direct clients saw across a shutdown.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    /// Requests answered (any status).
    answered: u64,
    /// Requests sent on an accepted connection that got no answer: reset, or closed first.
    unanswered: u64,
    /// Answers that were not 201 (a busy pool's 503).
    not_created: u64,
}

/// Reads one HTTP/1.1 response; `None` when the connection ends before it is whole. Returns
/// the status and whether the server closes the connection after it.
async fn read_response(stream: &mut tokio::net::TcpStream) -> Option<(u16, bool)> {
    use tokio::io::AsyncReadExt;
    let mut raw = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(end) = raw.windows(4).position(|window| window == b"\r\n\r\n") {
            break end + 4;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => raw.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).to_ascii_lowercase();
    let status = head.get(9..12)?.parse().ok()?;
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0);
    while raw.len() < head_end + length {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => raw.extend_from_slice(&chunk[..n]),
        }
    }
    Some((status, head.contains("connection: close")))
}

/// A client with no balancer in front: sends orders as fast as they are answered, on one
/// keep-alive connection at a time, until a connection is refused (the listener closed) or
/// `until`.
async fn direct_client(address: SocketAddr, worker: usize, until: Instant) -> Tally {
    use tokio::io::AsyncWriteExt;
    let body = format!(
        r#"{{"customer":"direct-{worker}","items":[{{"sku":"sku-{worker}","quantity":1,"price_cents":250}}]}}"#
    );
    let request = format!(
        "POST /orders HTTP/1.1\r\nhost: checkout\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut tally = Tally::default();
    'connections: while Instant::now() < until {
        let Ok(mut stream) = tokio::net::TcpStream::connect(address).await else {
            // Refused: the listener is closed; nothing was sent.
            return tally;
        };
        while Instant::now() < until {
            if stream.write_all(request.as_bytes()).await.is_err() {
                tally.unanswered += 1;
                continue 'connections;
            }
            match read_response(&mut stream).await {
                None => {
                    tally.unanswered += 1;
                    continue 'connections;
                }
                Some((status, close)) => {
                    tally.answered += 1;
                    tally.not_created += u64::from(status != 201);
                    if close {
                        continue 'connections;
                    }
                }
            }
        }
    }
    tally
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_of_direct_clients_is_answered_across_sigterm() {
    let mut total = Tally::default();
    for round in 1..=3 {
        let mut checkout = Checkout::start(&["--drain-delay", "1s", "--in-flight-deadline", "5s"]);
        wait_ready(&checkout).await;
        let until = Instant::now() + Duration::from_secs(20);
        let clients: Vec<_> = (0..32)
            .map(|worker| tokio::spawn(direct_client(checkout.listen, worker, until)))
            .collect();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        checkout.signal("TERM");
        let mut tally = Tally::default();
        for client in clients {
            let seen = client.await.unwrap();
            tally.answered += seen.answered;
            tally.unanswered += seen.unanswered;
            tally.not_created += seen.not_created;
        }
        let status = checkout
            .wait_exit(Duration::from_secs(30))
            .await
            .expect("checkout exits");
        assert!(status.success(), "{status}");
        eprintln!("observed: round {round}: {tally:?}");
        total.answered += tally.answered;
        total.unanswered += tally.unanswered;
        total.not_created += tally.not_created;
    }
    eprintln!(
        "observed: 3 × SIGTERM under 32 direct clients: {} requests answered, {} unanswered",
        total.answered, total.unanswered
    );
    assert!(total.answered >= 300, "{total:?}");
    // Every request sent on an accepted connection got an answer (a 503 when the pool was
    // busy is an answer: the client knows the order was not stored).
    assert_eq!(total.unanswered, 0, "{total:?}");
}

#[tokio::test]
async fn a_second_signal_exits_at_once_even_while_the_runtime_is_stalled() {
    let mut checkout = Checkout::start(&["--chaos", "--drain-delay", "30s"]);
    wait_ready(&checkout).await;
    let stalled =
        send(client(Duration::from_secs(5)).post(checkout.admin_url("/chaos/stall?seconds=10")))
            .await
            .expect("stall accepted");
    assert_eq!(stalled.status, 202, "{}", stalled.body);
    // The stall takes the workers a moment after the answer.
    tokio::time::sleep(Duration::from_millis(500)).await;
    checkout.signal("TERM");
    tokio::time::sleep(Duration::from_millis(200)).await;
    checkout.signal("INT");
    let second = Instant::now();
    let status = checkout
        .wait_exit(Duration::from_secs(60))
        .await
        .expect("checkout exits");
    let exited_after = second.elapsed();
    eprintln!("observed: second signal during a 10 s stall → exit after {exited_after:?}");
    assert_eq!(status.code(), Some(130), "{status}");
    assert!(
        exited_after < Duration::from_secs(4),
        "the second signal waited for the stall or the drain: {exited_after:?}"
    );
}
