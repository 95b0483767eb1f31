//! probity's probes alone on axum, for `scripts/bench-http.sh`: one passing check, no
//! application routes or middleware, so the cost of the probes themselves can be told apart
//! from a service's own stack.
//!
//! `cargo run --release -p probity-drill --example probes_axum -- 127.0.0.1:8098 [--probity-serve]`
//!
//! With `--probity-serve` the probes are served by `probity_axum::serve` (connection limits,
//! probe reserve, idle and slow-client timeouts) instead of `axum::serve`: the difference is
//! what probity's server costs a probe.

use probity::{CheckSpec, Detail, Health, Tier};
use probity_axum::Probes;
use std::time::Duration;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8098".to_owned());
    let probity_serve = std::env::args().any(|arg| arg == "--probity-serve");
    let health = Health::builder()
        .check(
            CheckSpec::new("db", Tier::Hard, || async { Ok(Detail::new()) })
                .interval(Duration::from_millis(500))
                .timeout(Duration::from_millis(250)),
        )
        .runtime_watchdog(Duration::from_secs(5))
        .build()?;
    health.start()?;
    let app = Probes::new(health.clone()).router();
    let listener = tokio::net::TcpListener::bind(&address).await?;
    eprintln!("probes on {address}");
    if probity_serve {
        probity_axum::serve(listener, app, &health).await?;
    } else {
        axum::serve(listener, app).await?;
    }
    Ok(())
}
