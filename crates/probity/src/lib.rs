//! # probity — health checks that tell the truth
//!
//! Most health endpoints lie: `/health` answers 200 while every request fails, or checks the
//! database from the liveness probe so a 40-second database blip restarts the whole fleet.
//! probity answers the three questions an orchestrator asks, each from the right evidence:
//!
//! | probe | question | checks | on failure |
//! |---|---|---|---|
//! | liveness `/livez` | is this process broken beyond what a restart fixes? | internal state only: runtime stall, deadlock, declared unrecoverable state, a worker's silent heartbeat | restart |
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
//! Declare what a request needs, start the pollers, shut down on SIGTERM. The migration loop
//! waits on [`Health::shutdown_triggered`] too, so a SIGTERM during a database outage ends it
//! instead of leaving the process retrying until the grace period kills it. This crate has no
//! HTTP framework in it: the example compiles with `probity` and `tokio` alone.
//!
//! ```no_run
//! use probity::{CheckError, CheckSpec, Detail, Health, ProbeKind, Tier};
//! use std::time::Duration;
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let health = Health::builder()
//!     .service("checkout")
//!     // Hard: no request can be served without the database.
//!     .check(
//!         CheckSpec::new("db", Tier::Hard, || async { Ok(Detail::new()) })
//!             .interval(Duration::from_secs(1))
//!             .timeout(Duration::from_millis(500)),
//!     )
//!     // Soft: without the cache requests are slower, not failed.
//!     .check(CheckSpec::new("cache", Tier::Soft, || async {
//!         Err(CheckError::new("connection refused"))
//!     }))
//!     // Waits on the database: gates readiness, never startup.
//!     .dependency_step("migrations", "postgres")
//!     .runtime_watchdog(Duration::from_secs(5)) // liveness: internal state only
//!     .readiness_probe(Duration::from_secs(5), 2) // the drain delay is derived from it
//!     .build()?;
//! health.start()?;
//! health.shutdown_on_signals();
//!
//! // Retry the migrations until the database answers, or until shutdown starts.
//! # async fn migrate() -> Result<(), std::io::Error> { Ok(()) }
//! let migrated = loop {
//!     tokio::select! {
//!         _ = health.shutdown_triggered() => break false,
//!         outcome = migrate() => match outcome {
//!             Ok(()) => break true,
//!             Err(error) => health.step_progress("migrations", format!("retrying: {error}"))?,
//!         },
//!     }
//!     tokio::select! {
//!         _ = health.shutdown_triggered() => break false,
//!         () = tokio::time::sleep(Duration::from_secs(1)) => {}
//!     }
//! };
//! if migrated {
//!     health.complete_step("migrations")?;
//! }
//!
//! // What a probe answers is read from the published snapshot: no I/O on the probe's path.
//! let readiness = health.snapshot().status(ProbeKind::Readiness, tokio::time::Instant::now());
//! println!("readiness: {readiness}");
//!
//! // SIGTERM: readiness fails at once; this resolves once the drain delay has passed, the
//! // moment a server stops accepting.
//! health.drained().await;
//! # Ok(())
//! # }
//! ```
//!
//! To answer the probes over HTTP, mount them with
//! [probity-axum](https://docs.rs/probity-axum) (`cargo add probity-axum axum`): one line
//! merges `/livez`, `/readyz` and `/startupz` into the service's router, and its `serve` runs
//! the drain above for you. Its crate page opens with the service above served by axum; this
//! crate's README shows both together.
//!
//! ## What is in the crate
//!
//! - [`Health`] and [`HealthBuilder`]: declare checks ([`CheckSpec`], [`Check`]), boot steps,
//!   liveness conditions, probe paths ([`ProbePaths`]) and the shutdown sequence; the handle
//!   the service keeps to report real outcomes ([`Reporter`]), complete steps and shut down;
//! - [`Heartbeat`]: a background worker's liveness — [`Heartbeat::beat`] on progress,
//!   [`Heartbeat::waiting_on`] / [`Heartbeat::wait_on`] around a bounded wait on a dependency,
//!   which is never a wedge;
//! - [`HealthView`]: the read side the probe surfaces hold, and the [`Snapshot`] they read;
//! - [`render`]: status code, content type and body for every format, under one details
//!   policy ([`Details`]);
//! - [`redact`]: credentials never leave the process; [`metrics`] (feature `metrics`);
//! - [`contract`]: the machine-readable description the linter and the simulator read.
//!
//! The rules that turn check states into `pass`, `warn` or `fail` live in
//! [`probity_contract::verdict`], shared with the simulator so the model runs the product's
//! own decision.
//!
//! Runnable programs: `cargo run -p probity --example quickstart` (a dependency that goes away
//! and comes back), `--example worker` (a background worker with a heartbeat); an axum service
//! with a PostgreSQL pool check is probity-checks' `axum_pool`, gRPC health probity-grpc's
//! `grpc_health`, and a sidecar for a service in another language probity-agent's `sidecar`.
//!
//! ## Cargo features
//!
//! None is on by default; docs.rs documents both.
//!
//! | feature | what it adds |
//! |---|---|
//! | `metrics` | check and probe metrics through the `metrics` facade |
//! | `deadlock` | `parking_lot` deadlock detection as a liveness condition |
//!
//! See `docs/concepts.md` in the repository for what belongs in each probe and why.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod check;
mod details;
mod health;
mod heartbeat;
mod history;
mod liveness;
mod moment;
mod name;
mod passive;
mod paths;
mod poller;
mod shutdown;
mod snapshot;
mod spec;
mod startup;
mod store;
mod view;

pub mod contract;
pub mod metrics;
pub mod redact;
pub mod render;

pub use check::{
    Check, CheckError, CheckFuture, CheckResult, Detail, FailureKind, Measurement, Timing,
    deadline as poll_deadline,
};
pub use details::Details;
pub use health::{BuildError, Health, HealthBuilder, StartError, UnknownName};
pub use heartbeat::{Heartbeat, WaitGuard, WaitTimedOut};
pub use history::{
    ConditionHistory, ConditionPhase, ConditionTransition, HISTORY_LEN, History, PollRecord,
    TransitionRecord,
};
pub use name::validate_name;
pub use passive::Reporter;
pub use paths::{PathError, ProbePaths};
pub use poller::poll_once;
pub use probity_contract::verdict::{Cause, CheckVerdict};
pub use probity_contract::{Contract, ProbeKind, Status, Tier};
pub use snapshot::{
    CheckState, ConditionFailure, ConditionState, DeclaredWait, Entry, LastResult, Lasts, Snapshot,
    StepState, Verdict,
};
pub use spec::CheckSpec;
pub use view::HealthView;

// The README examples (this crate's and the repository's) mount the probes with probity-axum,
// which is not a dependency of this crate: probity-checks compiles them as its doc tests.
