//! gRPC and HTTP on one loopback port, through tonic's own client: what a Kubernetes `grpc:`
//! probe and an `httpGet:` probe would see from the same container port.

use futures_util::StreamExt;
use probity::Health;
use probity_axum::{Probes, serve};
use probity_grpc::pb::health_client::HealthClient;
use probity_grpc::pb::{HealthCheckRequest, HealthListRequest};
use probity_grpc::{HealthService, ServingStatus};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tonic::transport::Channel;

async fn start(health: &Health) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let app = Probes::new(health.clone())
        .router()
        .merge(HealthService::new(health.clone()).into_router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let health = health.clone();
    let server = tokio::spawn(async move {
        serve(listener, app, &health).await.unwrap();
    });
    (addr, server)
}

async fn http_get(addr: SocketAddr, path: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.unwrap();
    raw
}

fn request(service: &str) -> HealthCheckRequest {
    HealthCheckRequest {
        service: service.to_owned(),
    }
}

#[tokio::test]
async fn check_list_and_watch_over_http2_beside_http1_probes() {
    let health = Health::builder()
        .startup_step("migrations")
        .drain_delay(Duration::from_millis(300))
        .build()
        .unwrap();
    health.start().unwrap();
    let (addr, server) = start(&health).await;

    let channel = Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut client = HealthClient::new(channel);

    let status = |response: tonic::Response<probity_grpc::pb::HealthCheckResponse>| {
        response.into_inner().status()
    };
    assert_eq!(
        status(client.check(request("")).await.unwrap()),
        ServingStatus::NotServing
    );
    assert_eq!(
        status(client.check(request("liveness")).await.unwrap()),
        ServingStatus::Serving
    );
    let missing = client.check(request("payments")).await.unwrap_err();
    assert_eq!(missing.code(), tonic::Code::NotFound);

    // HTTP/1.1 on the same port; unknown paths stay 404 (not gRPC's catch-all).
    let answer = http_get(addr, "/readyz").await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    let answer = http_get(addr, "/nope").await;
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");

    let mut watch = client
        .watch(request("readiness"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        watch.next().await.unwrap().unwrap().status(),
        ServingStatus::NotServing
    );
    health.complete_step("migrations").unwrap();
    let next = tokio::time::timeout(Duration::from_secs(5), watch.next())
        .await
        .unwrap();
    assert_eq!(next.unwrap().unwrap().status(), ServingStatus::Serving);
    assert!(http_get(addr, "/readyz").await.starts_with("HTTP/1.1 200"));

    let list = client
        .list(HealthListRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(list.statuses.len(), 4);
    assert_eq!(list.statuses["startup"].status(), ServingStatus::Serving);

    // Shutdown: NOT_SERVING at once, the stream ends when the listener closes, and the open
    // stream does not hold the server past the drain delay.
    let started = std::time::Instant::now();
    health.shutdown();
    let next = tokio::time::timeout(Duration::from_secs(5), watch.next())
        .await
        .unwrap();
    assert_eq!(next.unwrap().unwrap().status(), ServingStatus::NotServing);
    let end = tokio::time::timeout(Duration::from_secs(5), watch.next())
        .await
        .unwrap();
    assert_eq!(end.unwrap().unwrap_err().code(), tonic::Code::Unavailable);
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .unwrap()
        .unwrap();
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(3),
        "{took:?}"
    );
}
