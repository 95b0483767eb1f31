//! # probity-agent — honest probes for a service in any language
//!
//! A sidecar that stands beside an app written in any language and gives the kubelet the
//! probes probity gives a Rust service, from the same core: background pollers, tiers,
//! hysteresis, staleness, fail-open windows, a startup gate and a shutdown drain.
//!
//! - **Readiness** runs the checks of the configuration: the app's own health endpoint
//!   (`app`: polled on the agent's cadence and cached, so a deep `/health` that does I/O on
//!   every call sees one call per interval however often the kubelet and load balancers ask),
//!   series of the app's Prometheus/OpenMetrics exposition (`metrics`: pool gauges such as
//!   HikariCP's `hikaricp_connections_pending`, with presets), and every probity-checks
//!   backend (PostgreSQL, MySQL/MariaDB, Redis, RabbitMQ, NATS, MQTT, HTTP, TCP, DNS, disk,
//!   JWKS).
//! - **Liveness** takes internal conditions only — the event-loop lag the app exports, a
//!   heartbeat file it touches, its own liveness endpoint. A dependency check placed under
//!   `liveness` is refused when the configuration is read: a restart does not fix someone
//!   else's outage.
//! - **Startup** passes once every liveness condition has seen the app alive.
//!
//! It serves `/livez`, `/readyz`, `/startupz` (paths configurable), `grpc.health.v1`,
//! `/metrics`, `/contract` (what each probe checks, for `probity lint` and `probity simulate`)
//! and `/agent/livez` (the agent's own liveness) on one listener.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let agent = probity_agent::Agent::load(std::path::Path::new("agent.toml"))?;
//! let listener = tokio::net::TcpListener::bind(agent.listen_address()).await?;
//! let report = agent.serve(listener, probity_agent::install_metrics()).await?;
//! assert!(report.within_deadline);
//! # Ok(())
//! # }
//! ```
//!
//! The configuration schema is in [`config`] and in the crate README.

mod adapter;
mod agent;
mod checks;
pub mod config;
mod fetch;
pub mod inspect;
mod liveness;
mod outcomes;
mod process;
mod scrape;
mod serve;
mod unmoving;

pub use agent::{Agent, AgentError, BuildFailure};
pub use config::{Config, ConfigError, Format};

/// Installs the process-wide Prometheus recorder the agent's `/metrics` renders, or `None`
/// when another recorder is already installed.
pub fn install_metrics() -> Option<metrics_exporter_prometheus::PrometheusHandle> {
    // Histograms as bucketed histograms, not summaries: constant memory, and a render that
    // costs the same whatever was observed (a summary's quantiles are computed at each render).
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new()
        .set_buckets(&[
            0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
        ])
        .unwrap_or_else(|_| metrics_exporter_prometheus::PrometheusBuilder::new())
        .build_recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder).ok()?;
    probity::metrics::bind_probe_counters();
    Some(handle)
}
