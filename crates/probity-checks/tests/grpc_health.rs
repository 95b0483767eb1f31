//! Downstream `grpc.health.v1` checks against real tonic servers started by the tests:
//! tonic-health's own health service, a gRPC server without one, one whose health call never
//! returns, and a listener that never speaks HTTP/2.

#![cfg(feature = "grpc-health")]

mod support;

use probity::Check;
use probity_checks::grpc_health::GrpcHealthCheck;
use std::net::SocketAddr;
use std::time::Duration;
use support::{failure, figure, poll, success};
use tokio::net::TcpListener;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;
use tonic_health::ServingStatus;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};
use tonic_health::server::HealthReporter;

const TIMEOUT: Duration = Duration::from_secs(1);

async fn listener() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("addr");
    (listener, address)
}

/// tonic-health's server: `""` is SERVING from the start, as `health_reporter` sets it.
async fn health_server() -> (HealthReporter, SocketAddr) {
    let (reporter, service) = tonic_health::server::health_reporter();
    let (listener, address) = listener().await;
    tokio::spawn(
        Server::builder()
            .add_service(service)
            .serve_with_incoming(TcpIncoming::from(listener)),
    );
    (reporter, address)
}

#[tokio::test]
async fn serving_passes_for_the_server_and_for_a_service() {
    let (reporter, address) = health_server().await;
    reporter
        .set_service_status("shop.Orders", ServingStatus::Serving)
        .await;
    let server = GrpcHealthCheck::new(&address.to_string()).expect("valid");
    assert_eq!(server.dependency(), Some("grpc"));
    let detail = success(poll(&server, TIMEOUT).await);
    assert_eq!(
        detail.message.as_deref(),
        Some(format!("SERVING from {address} for the server as a whole (service \"\")").as_str())
    );
    assert!(figure(&detail.measurements, "response_time").is_some());

    let orders = GrpcHealthCheck::new(&format!("http://{address}"))
        .expect("valid")
        .service("shop.Orders");
    let detail = success(poll(&orders, TIMEOUT).await);
    assert_eq!(
        detail.message.as_deref(),
        Some(format!("SERVING from {address} for service \"shop.Orders\"").as_str())
    );
}

#[tokio::test]
async fn not_serving_fails_saying_so_and_recovers_on_the_same_channel() {
    let (reporter, address) = health_server().await;
    reporter
        .set_service_status("shop.Orders", ServingStatus::NotServing)
        .await;
    let orders = GrpcHealthCheck::new(&address.to_string())
        .expect("valid")
        .service("shop.Orders");
    let error = failure(poll(&orders, TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!("{address} answers NOT_SERVING for service \"shop.Orders\"")
    );
    // The server as a whole still serves: the service name is what was asked.
    let server = GrpcHealthCheck::new(&address.to_string()).expect("valid");
    success(poll(&server, TIMEOUT).await);

    reporter
        .set_service_status("shop.Orders", ServingStatus::Serving)
        .await;
    success(poll(&orders, TIMEOUT).await);
    reporter
        .set_service_status("", ServingStatus::NotServing)
        .await;
    let error = failure(poll(&server, TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!("{address} answers NOT_SERVING for the server as a whole (service \"\")")
    );
}

#[tokio::test]
async fn a_service_the_server_does_not_know_is_named() {
    let (_reporter, address) = health_server().await;
    let check = GrpcHealthCheck::new(&address.to_string())
        .expect("valid")
        .service("shop.Ordres");
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!("{address} does not know service \"shop.Ordres\" (NOT_FOUND)")
    );
}

#[tokio::test]
async fn a_grpc_server_without_a_health_service_is_unimplemented() {
    let (listener, address) = listener().await;
    // A gRPC server with no service at all: tonic answers every method UNIMPLEMENTED.
    tokio::spawn(
        Server::builder()
            .add_routes(tonic::service::Routes::default())
            .serve_with_incoming(TcpIncoming::from(listener)),
    );
    let check = GrpcHealthCheck::new(&address.to_string()).expect("valid");
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!(
            "{address} has no grpc.health.v1 service (UNIMPLEMENTED): it cannot be asked whether \
             it serves"
        )
    );
}

/// A health service whose `Check` never returns: a server wedged behind a healthy socket.
struct Stuck;

#[tonic::async_trait]
impl Health for Stuck {
    async fn check(
        &self,
        _request: tonic::Request<HealthCheckRequest>,
    ) -> Result<tonic::Response<HealthCheckResponse>, tonic::Status> {
        std::future::pending().await
    }

    type WatchStream = futures_util::stream::Pending<Result<HealthCheckResponse, tonic::Status>>;

    async fn watch(
        &self,
        _request: tonic::Request<HealthCheckRequest>,
    ) -> Result<tonic::Response<Self::WatchStream>, tonic::Status> {
        std::future::pending().await
    }
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_saying_what_it_waited_for() {
    let (listener, address) = listener().await;
    tokio::spawn(
        Server::builder()
            .add_service(HealthServer::new(Stuck))
            .serve_with_incoming(TcpIncoming::from(listener)),
    );
    let check = GrpcHealthCheck::new(&address.to_string()).expect("valid");
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!(
            "no grpc.health.v1 answer from {address} within 750ms (the server as a whole \
             (service \"\"))"
        )
    );
}

#[tokio::test]
async fn a_listener_that_never_speaks_http2_times_out_too() {
    let address = support::silent_listener().await;
    let check = GrpcHealthCheck::new(&address.to_string()).expect("valid");
    let error = failure(poll(&check, TIMEOUT).await);
    let message = error.message();
    assert!(
        message.contains(&format!("{address} within 750ms")),
        "{message}"
    );
    assert_ne!(message, "timed out after 1s");
}

#[tokio::test]
async fn a_closed_port_is_refused_by_address() {
    let port = support::closed_port().await;
    let check = GrpcHealthCheck::new(&format!("127.0.0.1:{port}")).expect("valid");
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!("connection refused (127.0.0.1:{port})")
    );
}

#[test]
fn targets_are_validated_when_built() {
    let error = |target: &str| GrpcHealthCheck::new(target).unwrap_err().to_string();
    assert_eq!(
        error("https://inventory:50051"),
        "inventory:50051 is TLS: the gRPC health check speaks plaintext HTTP/2 only"
    );
    assert_eq!(
        error("inventory"),
        "a gRPC health target needs host:port, not \"inventory\""
    );
    assert_eq!(
        error("http://user:secret@inventory:50051/x"),
        "a gRPC health target is host:port, without a path or credentials, not \
         \"http://user:***@inventory:50051/x\""
    );
}
