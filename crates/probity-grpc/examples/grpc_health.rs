//! `grpc.health.v1` and the HTTP probes on one port, asked by tonic's own client.
//!
//! The server answers the Kubernetes `grpc:` probe (HTTP/2) and `httpGet:` probes (HTTP/1.1)
//! from the same snapshot. The example asks `Check` for the overall status, each probe and a
//! check, completes the boot step, asks again, then starts shutting down: every service turns
//! `NOT_SERVING` at once while the listener keeps serving through the drain delay.
//!
//! ```sh
//! cargo run -p probity-grpc --example grpc_health
//! ```
//!
//! The probes a pod spec gives it:
//!
//! ```yaml
//! readinessProbe: { grpc: { port: 8080, service: readiness } }
//! livenessProbe:  { grpc: { port: 8080, service: liveness } }
//! ```

use probity::{CheckSpec, Detail, Health, Tier};
use probity_axum::{Probes, serve};
use probity_grpc::HealthService;
use probity_grpc::pb::HealthCheckRequest;
use probity_grpc::pb::health_client::HealthClient;
use std::time::Duration;
use tonic::transport::Channel;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let health = Health::builder()
        .service("grpc-example")
        .check(
            CheckSpec::new("db", Tier::Hard, || async { Ok(Detail::new()) })
                .interval(Duration::from_millis(500))
                .timeout(Duration::from_millis(200)),
        )
        .startup_step("warmup")
        .runtime_watchdog(Duration::from_secs(5))
        .drain_delay(Duration::from_secs(1))
        .build()?;
    health.start()?;
    health.shutdown_on_signals();

    // One router: HTTP probes and gRPC health, on one listener.
    let app = Probes::new(&health)
        .router()
        .merge(HealthService::new(&health).into_router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let server = tokio::spawn({
        let health = health.clone();
        async move { serve(listener, app, &health).await }
    });

    let channel = Channel::from_shared(format!("http://{address}"))?
        .connect()
        .await?;
    let mut client = HealthClient::new(channel);
    let services = ["", "liveness", "readiness", "startup", "db"];

    println!("booting (step `warmup` pending):");
    ask(&mut client, &services).await?;

    health.complete_step("warmup")?;
    // The check's first poll has passed by now; readiness rises at once after the boot.
    tokio::time::sleep(Duration::from_millis(200)).await;
    println!("booted:");
    ask(&mut client, &services).await?;

    health.shutdown();
    println!(
        "shutting down (the listener closes after {:?}):",
        health.drain_delay()
    );
    ask(&mut client, &services).await?;

    let report = server.await??;
    println!("drained for {:?}", report.drained_for());
    Ok(())
}

async fn ask(client: &mut HealthClient<Channel>, services: &[&str]) -> Result<(), tonic::Status> {
    for service in services {
        let request = HealthCheckRequest {
            service: (*service).to_owned(),
        };
        let status = client.check(request).await?.into_inner().status();
        println!("  {:<12} {}", format!("{service:?}"), status.as_str_name());
    }
    Ok(())
}
