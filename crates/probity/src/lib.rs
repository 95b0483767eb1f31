//! # probity — health checks that tell the truth
//!
//! Most health endpoints lie: `/health` answers 200 while every request fails, or checks the
//! database from the liveness probe so a 40-second database blip restarts the whole fleet.
//! probity answers the three questions an orchestrator asks, each from the right evidence:
//!
//! | probe | question | checks | on failure |
//! |---|---|---|---|
//! | liveness `/livez` | is this process broken beyond what a restart fixes? | internal state only: runtime stall, deadlock, declared unrecoverable state | restart |
//! | readiness `/readyz` | can this instance serve a request now? | what a request needs, from a snapshot that background pollers fill | drain, keep running |
//! | startup `/startupz` | has the slow boot finished? | named boot steps | hold the other probes off |
//!
//! Readiness checks run on **pollers**, one task per check, each with an interval, a timeout
//! shorter than the interval, jitter, and **hysteresis** (fall fast, rise slow). Probes read an
//! atomically published [`Snapshot`]: no I/O, no waiting on a dependency, no lock shared with
//! the pollers. A check has a **tier**: [`Tier::Hard`] fails readiness (fail-closed),
//! [`Tier::Soft`] degrades it to `warn` (fail-open), [`Tier::Info`] is only reported; a hard
//! check may fail open for a bounded window ([`CheckSpec::fail_open_for`]). Results older than
//! their staleness bound count as failures. **Shutdown** fails readiness first and lets the
//! load balancers notice before the server stops accepting. **Passive reports** from real
//! requests fail a check before its next poll.
//!
//! ## Example
//!
//! ```
//! use probity::render::{render, Clock, Details, Format, Query, Request};
//! use probity::{CheckError, CheckSpec, Detail, Health, ProbeKind, Tier};
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let health = Health::builder()
//!     .service("checkout")
//!     // Hard: without the database no request can be served.
//!     .check(
//!         CheckSpec::new("db", Tier::Hard, || async {
//!             let available = 4; // e.g. a pool's idle connections
//!             if available == 0 {
//!                 return Err(CheckError::new("no free connection"));
//!             }
//!             Ok(Detail::new().measurement("available", available as f64, None))
//!         })
//!         .interval(Duration::from_secs(1))
//!         .timeout(Duration::from_millis(500)),
//!     )
//!     // Soft: without the cache requests are slower, not failed.
//!     .check(CheckSpec::new("cache", Tier::Soft, || async {
//!         Err(CheckError::new("connection refused"))
//!     }))
//!     .startup_step("migrations")
//!     .runtime_watchdog(Duration::from_secs(5))
//!     .drain_delay(Duration::from_secs(12))
//!     .build()?;
//! health.start()?;
//!
//! // Boot: readiness fails until the migrations are done.
//! health.complete_step("migrations")?;
//! tokio::time::sleep(Duration::from_millis(50)).await; // let the first polls land
//!
//! let query = Query::default();
//! let request = Request {
//!     probe: ProbeKind::Readiness,
//!     check: None,
//!     query: &query,
//!     format: Format::Text,
//!     details: Details::Shown,
//! };
//! let answer = render(&health.snapshot(), &request, Clock::now());
//! assert_eq!(answer.status, 200); // degraded, still serving
//! assert_eq!(
//!     answer.body,
//!     "[!]cache degraded (soft): connection refused\nreadyz check passed with warnings\n"
//! );
//!
//! // SIGTERM: readiness fails at once, liveness does not.
//! health.shutdown();
//! let now = tokio::time::Instant::now();
//! assert_eq!(health.snapshot().status(ProbeKind::Readiness, now).http_code(), 503);
//! assert_eq!(health.snapshot().status(ProbeKind::Liveness, now).http_code(), 200);
//! # Ok(())
//! # }
//! ```
//!
//! ## Modules
//!
//! One concept each: [`check`] (what a check is), [`policy`] (tiers and a check's settings),
//! [`poller`] (running checks), [`hysteresis`], [`snapshot`] (what probes read), [`startup`],
//! [`liveness`], [`shutdown`], [`passive`], [`contract`] (the machine-readable description the
//! linter and simulator read), [`render`] (status code, headers and body for every format),
//! [`redact`] (credentials never leave the process), and `metrics` (feature `metrics`).
//!
//! ## Cargo features
//!
//! | feature | what it adds |
//! |---|---|
//! | `metrics` | check and probe metrics through the `metrics` facade |
//! | `deadlock` | `parking_lot` deadlock detection as a liveness condition |
//!
//! See `docs/concepts.md` in the repository for what belongs in each probe and why.

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod check;
pub mod contract;
pub mod hysteresis;
pub mod liveness;
#[cfg(feature = "metrics")]
pub mod metrics;
pub mod passive;
pub mod policy;
pub mod poller;
pub mod redact;
pub mod registry;
pub mod render;
pub mod shutdown;
pub mod snapshot;
pub mod startup;

pub use check::{Check, CheckError, CheckFuture, CheckResult, Detail, Measurement, Timing};
pub use contract::{Contract, ProbeKind};
pub use passive::{Reporter, UnknownCheck};
pub use policy::{CheckSpec, Tier};
pub use registry::{BuildError, Health, HealthBuilder, StartError};
pub use snapshot::{CheckState, Snapshot, Status, Verdict};
pub use startup::UnknownStep;

/// The repository README's Rust examples, compiled as doc tests so they cannot drift.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;
