//! `CloseWhenUnreadyLayer` on a real axum server over TCP: keep-alive connections stay open
//! while the instance is ready and are closed after one response while it is not.

use axum::Router;
use axum::body::Body;
use axum::routing::get;
use http::{Request, Version};
use probity::Health;
use probity_axum::{CloseWhenUnreadyLayer, Probes};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tower::ServiceExt;

fn app(health: &Health) -> Router {
    Router::new()
        .route("/orders", get(|| async { "[]" }))
        .layer(CloseWhenUnreadyLayer::new(health.clone()))
        .merge(Probes::new(health.clone()).router())
}

/// A registry whose readiness fails until its one boot step completes.
fn booting() -> Health {
    Health::builder()
        .service("checkout")
        .startup_step("warmup")
        .build()
        .expect("valid registry")
}

async fn serve(health: &Health) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    let app = app(health);
    tokio::spawn(async move { axum::serve(listener, app).await });
    address
}

/// One response read off a keep-alive connection: its head (lowercased) and body.
async fn exchange(stream: &mut TcpStream, path: &str) -> (String, String) {
    let request = format!("GET {path} HTTP/1.1\r\nhost: checkout\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut raw = Vec::new();
    let mut buffer = [0u8; 1024];
    let head_end = loop {
        if let Some(end) = raw.windows(4).position(|window| window == b"\r\n\r\n") {
            break end;
        }
        let n = stream.read(&mut buffer).await.expect("read the head");
        assert!(n > 0, "connection closed before a response");
        raw.extend_from_slice(&buffer[..n]);
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length: "))
        .and_then(|value| value.trim().parse().ok())
        .expect("content-length");
    let mut body = raw[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut buffer).await.expect("read the body");
        assert!(n > 0, "connection closed mid-body");
        body.extend_from_slice(&buffer[..n]);
    }
    (head, String::from_utf8_lossy(&body).into_owned())
}

/// Whether the server closes `stream` (end of file) within a second.
async fn closed_by_server(stream: &mut TcpStream) -> bool {
    let mut buffer = [0u8; 64];
    matches!(
        tokio::time::timeout(Duration::from_secs(1), stream.read(&mut buffer)).await,
        Ok(Ok(0))
    )
}

#[tokio::test]
async fn a_ready_instance_keeps_its_connections() {
    let health = booting();
    health.complete_step("warmup").expect("declared step");
    let address = serve(&health).await;
    let mut stream = TcpStream::connect(address).await.expect("connect");
    for _ in 0..3 {
        let (head, body) = exchange(&mut stream, "/orders").await;
        assert!(head.starts_with("http/1.1 200"), "{head}");
        assert!(!head.contains("connection: close"), "{head}");
        assert_eq!(body, "[]");
    }
}

#[tokio::test]
async fn an_unready_instance_closes_each_connection_after_one_response() {
    let health = booting();
    let address = serve(&health).await;
    let mut stream = TcpStream::connect(address).await.expect("connect");
    let (head, body) = exchange(&mut stream, "/orders").await;
    // The request itself is served: closing is about where the client goes next.
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert_eq!(body, "[]");
    assert!(head.contains("connection: close"), "{head}");
    assert!(
        closed_by_server(&mut stream).await,
        "the connection stayed open"
    );

    // Back in rotation: connections are kept again.
    health.complete_step("warmup").expect("declared step");
    let mut stream = TcpStream::connect(address).await.expect("connect");
    for _ in 0..2 {
        let (head, _) = exchange(&mut stream, "/orders").await;
        assert!(!head.contains("connection: close"), "{head}");
    }
}

#[tokio::test]
async fn shutdown_closes_connections_too() {
    let health = booting();
    health.complete_step("warmup").expect("declared step");
    let address = serve(&health).await;
    let mut stream = TcpStream::connect(address).await.expect("connect");
    let (head, _) = exchange(&mut stream, "/orders").await;
    assert!(!head.contains("connection: close"), "{head}");
    health.shutdown();
    let (head, _) = exchange(&mut stream, "/orders").await;
    assert!(head.contains("connection: close"), "{head}");
    assert!(
        closed_by_server(&mut stream).await,
        "the connection stayed open"
    );
}

#[tokio::test]
async fn http2_responses_never_carry_a_connection_header() {
    let health = booting();
    let request = |version| {
        Request::get("/orders")
            .version(version)
            .body(Body::empty())
            .expect("request")
    };
    let http2 = app(&health)
        .oneshot(request(Version::HTTP_2))
        .await
        .expect("response");
    assert_eq!(http2.headers().get("connection"), None);
    let http1 = app(&health)
        .oneshot(request(Version::HTTP_11))
        .await
        .expect("response");
    assert_eq!(
        http1
            .headers()
            .get("connection")
            .map(|value| value.as_bytes()),
        Some(&b"close"[..])
    );
}
