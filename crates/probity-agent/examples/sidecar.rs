//! The agent beside an app it did not write, both in this process for the demonstration.
//!
//! The "app" is a small HTTP server with a deep `/health` (it answers 503 while its database is
//! "down") and a liveness endpoint that checks nothing outside the process. The agent polls
//! `/health` on its own cadence and caches it, so however often the kubelet and the load
//! balancers ask, the app sees one call per interval; it serves `/readyz`, `/livez` and
//! `/startupz` from probity's core. Halfway, the app's database goes down: the agent's
//! readiness fails, its liveness does not (a restart would not bring the database back). Then
//! the agent shuts down as on SIGTERM: readiness fails at once, the listener closes after the
//! drain delay.
//!
//! ```sh
//! cargo run -p probity-agent --example sidecar
//! ```
//!
//! In a pod the agent runs as a native sidecar with the same configuration in a file:
//! `probity agent --config agent.toml` (see `examples/agent/` in the repository).

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;
use probity_agent::{Agent, Config, Format};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The app: any language, any framework; here axum on a loopback port.
    let database_up = Arc::new(AtomicBool::new(true));
    let app = Router::new()
        .route(
            "/health",
            get({
                let database_up = database_up.clone();
                move || async move {
                    if database_up.load(Ordering::Acquire) {
                        (StatusCode::OK, "ok")
                    } else {
                        (StatusCode::SERVICE_UNAVAILABLE, "database unreachable")
                    }
                }
            }),
        )
        .route("/alive", get(|| async { "ok" }));
    let app_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let app_address = app_listener.local_addr()?;
    tokio::spawn(async move { axum::serve(app_listener, app).await });

    // The agent's configuration, as `agent.toml` would hold it.
    let config = format!(
        r#"
service = "orders"

[listen]
address = "127.0.0.1:0"
details = "shown"     # loopback only, for the demonstration: reasons in the answers

[app]
url = "http://{app_address}"

[shutdown]
drain_delay = "1s"
in_flight_deadline = "2s"

[readiness.health]
app = {{ url = "/health" }}
interval = "500ms"
timeout = "300ms"
rise = 2

[liveness.process]
app_liveness = {{ url = "/alive" }}
interval = "500ms"
"#
    );
    let config = Config::parse(&config, Format::Toml, Path::new("agent.toml"))?;
    let agent = Agent::build(&config)?;
    let health = agent.health().clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let serving = tokio::spawn(agent.serve(listener, None));

    let client = reqwest::Client::new();
    let probe = |path: &'static str| {
        let client = client.clone();
        async move {
            let response = client
                .get(format!("http://{address}{path}?verbose"))
                .send()
                .await?;
            let status = response.status();
            let body = response.text().await?;
            Ok::<_, reqwest::Error>(format!(
                "{path} {status}\n    {}",
                body.trim_end().replace('\n', "\n    ")
            ))
        }
    };

    tokio::time::sleep(Duration::from_secs(1)).await;
    println!(
        "the app is up:\n{}\n{}\n",
        probe("/readyz").await?,
        probe("/livez").await?
    );

    database_up.store(false, Ordering::Release);
    tokio::time::sleep(Duration::from_secs(1)).await;
    println!(
        "the app's database is down: out of rotation, not restarted\n{}\n{}\n",
        probe("/readyz").await?,
        probe("/livez").await?
    );

    health.shutdown();
    println!("shutting down:\n{}\n", probe("/readyz").await?);
    let report = serving.await??;
    println!("drained for {:?}", report.drained_for());
    Ok(())
}
