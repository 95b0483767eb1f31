//! # probity-axum — probity's health endpoints on axum
//!
//! Mounts a [`probity::Health`] on an axum service:
//!
//! - [`Probes`]: a router for `GET|HEAD /livez`, `/readyz`, `/startupz` and their per-entry
//!   sub-paths (`/readyz/db`), with `?verbose`, `?exclude=NAME` and `Accept` negotiation, all
//!   answered by the core's renderer from the current snapshot;
//! - [`QuietProbesLayer`]: keeps probe traffic out of access logs, traces and request metrics;
//! - [`ShedLayer`]: answers 503 + `Retry-After` without calling the handler while a check the
//!   routes need fails or the service is still starting: nothing is processed, so the balancer
//!   may retry the request elsewhere whatever its method;
//! - [`HealthState`]: an extractor for handlers — the current snapshot, and whether a check is
//!   failing while its fallback serves ([`HealthState::degraded`]), so a handler answers from
//!   the fallback and marks the answer degraded; from the router's state, no globals;
//! - [`CloseWhenUnreadyLayer`]: ends HTTP/1 keep-alive connections while readiness fails, so
//!   clients reconnect to an instance in rotation instead of staying on this one;
//! - [`RequestMetricsLayer`]: counts `http_requests_total{status}` through the `metrics` facade,
//!   for the per-instance error-rate alert;
//! - [`StatusPage`]: `GET /status`, a live page for operators (every check, condition and
//!   step worst first, with reasons, time in state, recent poll latencies and transitions), and
//!   `GET /status.json` with the same rows; for an admin listener only;
//! - [`serve()`]: the server with the shutdown sequence — readiness fails, the drain delay
//!   passes, the listener closes, in-flight requests finish up to a deadline — and with limits
//!   no client can turn into a liveness failure: a header-read (and idle keep-alive) timeout, a
//!   body read timeout and minimum rate, a connection limit within the listener's share of the
//!   descriptor limit, a budget for long-lived streams, and room kept for probes
//!   ([`ServeConfig`]); at shutdown every connection the kernel accepted is answered.
//!
//! ## Example
//!
//! ```no_run
//! use axum::{Router, routing::get};
//! use probity::{CheckSpec, Detail, Health, Tier};
//! use probity_axum::{Probes, QuietProbesLayer, RequestMetricsLayer, serve};
//! use std::time::Duration;
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let health = Health::builder()
//!     .service("checkout")
//!     .check(CheckSpec::new("db", Tier::Hard, || async { Ok(Detail::new()) }))
//!     .runtime_watchdog(Duration::from_secs(5))
//!     .drain_delay(Duration::from_secs(12))
//!     .build()?;
//! health.start()?;
//! health.shutdown_on_signals();
//!
//! let app = Router::new()
//!     .route("/orders", get(|| async { "[]" }))
//!     .merge(Probes::new(health.clone()).router())
//!     .layer(QuietProbesLayer::new(RequestMetricsLayer::new()));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! let report = serve(listener, app, &health).await?;
//! assert!(report.within_deadline);
//! # Ok(())
//! # }
//! ```
//!
//! ## Detail policy: which constructor
//!
//! A check's error message can say more than a public caller should read (hosts, users,
//! versions). [`Probes::new`] withholds it (`[-]db failed: reason withheld`) while still naming
//! what failed and its class (`timeout`, `refused`, `exhausted`…); [`Probes::admin`] shows it.
//! Credentials are redacted by the core before anything is stored, whatever the policy.
//!
//! - **One listener** (the service's port, which the kubelet probes too): use
//!   [`Probes::new`]. The kubelet acts on the status code alone, and whoever reaches the port
//!   reaches the probes. The full reason is still one step away: every transition is logged
//!   (`probity::check` target, `check turned unhealthy` with `reason`), and `?verbose` names
//!   each failing entry with its class.
//! - **A second listener only operators reach** (a port not exposed by the Service, behind
//!   `kubectl port-forward`): mount [`Probes::admin`] and [`StatusPage`] there, and keep
//!   [`Probes::new`] on the public one. Probe paths answer the same on both.
//! - **One listener that only the cluster reaches** (a NetworkPolicy keeps everyone else out)
//!   and reasons wanted in the answers: [`Probes::admin`] is a deliberate choice there, not a
//!   default.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod activity;
mod answers;
mod body;
mod close_when_unready;
mod extract;
mod idle;
mod probes;
mod quiet;
mod request_metrics;
mod serve;
mod shed;
mod status;

pub use body::BodyTooSlow;
pub use close_when_unready::{CloseWhenUnready, CloseWhenUnreadyFuture, CloseWhenUnreadyLayer};
pub use extract::{Degraded, HealthState};
pub use probes::Probes;
pub use quiet::{
    DEFAULT_PROBE_PATHS, GRPC_HEALTH_PATH, QuietFuture, QuietProbes, QuietProbesLayer,
};
pub use request_metrics::{RequestMetrics, RequestMetricsFuture, RequestMetricsLayer};
pub use serve::{ServeConfig, ShutdownReport, serve, serve_with};
pub use shed::{Shed, ShedFuture, ShedLayer};
pub use status::{
    Finding, LastPoll, PollPoint, Row, Severity, StatusPage, StatusReport, TransitionPoint,
};

/// Re-exported so a service can set the detail policy with this crate alone.
pub use probity::Details;
