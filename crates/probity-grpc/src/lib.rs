//! # probity-grpc — `grpc.health.v1` fed by probity's snapshot
//!
//! The [gRPC health checking protocol] on tonic, answered from a [`probity::Health`]: the
//! same snapshot `/livez`, `/readyz` and `/startupz` read, so the HTTP and gRPC answers never
//! disagree. Kubernetes' `grpc:` probes call `Check` with the probe's `service` name.
//!
//! | service name | serving when |
//! |---|---|
//! | `""` (the server as a whole) | readiness passes (or passes with warnings) |
//! | `readiness` | the same |
//! | `liveness` | liveness passes |
//! | `startup` | every startup step has completed |
//! | a readiness check's name (`db`) | that check passes (a hard check failing open counts as passing) |
//!
//! Once shutdown starts every service answers `NOT_SERVING` (the kubelet stops liveness and
//! startup probes of a terminating pod, so liveness going down with the rest restarts
//! nothing). An unknown service: `Check` fails with `NOT_FOUND`; `Watch` sends
//! `SERVICE_UNKNOWN` and keeps the stream open, as the protocol says.
//!
//! - `Check`: one answer from the current snapshot;
//! - `Watch`: the current status at once, then one message per change — each published
//!   snapshot ([`probity::HealthView::subscribe`]) is evaluated, and so is the clock every
//!   [`HealthService::reevaluate_every`], because staleness and fail-open windows change
//!   with time alone. The stream ends (`UNAVAILABLE`) when the drain delay is over, so it
//!   does not hold the server's graceful shutdown open;
//! - `List`: every service above with its status (at most 100, as the protocol caps it).
//!
//! `tonic-health` has no `List`, answers `Watch` on an unknown service with an error, and
//! starts `""` as `SERVING`; this crate implements the service over its own generated types
//! ([`pb`]) instead.
//!
//! ## Example: gRPC and HTTP on one port
//!
//! ```no_run
//! use probity::Health;
//! use probity_axum::{Probes, serve};
//! use probity_grpc::HealthService;
//!
//! # async fn run(health: Health) -> std::io::Result<()> {
//! let app = Probes::new(health.clone())
//!     .router()
//!     .merge(HealthService::new(health.clone()).into_router());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! serve(listener, app, &health).await?;
//! # Ok(())
//! # }
//! ```
//!
//! [gRPC health checking protocol]: https://github.com/grpc/grpc/blob/master/doc/health-checking.md

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod pb;
mod service;
mod status;

pub use pb::health_check_response::ServingStatus;
pub use service::{DEFAULT_REEVALUATE_EVERY, HealthService, MAX_LISTED_SERVICES};
pub use status::{PROBE_SERVICES, serving_status};
