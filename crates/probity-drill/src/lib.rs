//! `probity drill`: prove — or disprove — the health checks of any service, on real processes.
//!
//! A drill file ([`mod@file`], documented in `docs/drill.md`) describes one instance of a
//! service as a pod does: its command, its probes (pasted or read from a Kubernetes manifest,
//! defaulted by `probity-contract` as `lint` and `simulate` default them), its dependencies,
//! its traffic and the faults to run. The [`engine`] starts a fleet of it on this machine —
//! each instance reaching each dependency through a fault proxy of its own, a kubelet per
//! instance that probes and restarts it, a real HAProxy in front fed by readiness or checking
//! by itself — runs each fault under the traffic, and judges the run into a report with a
//! diagnosis for every miss ([`engine::report`]), as a table, JSON or JUnit ([`junit`]).
//!
//! The load generator ([`load`]) is usable on its own, from other crates' tests: closed-loop
//! or at a rate, a mix of requests, bounded in time.

pub mod address;
pub mod child;
pub mod engine;
pub mod file;
pub mod junit;
pub mod load;

pub use engine::balancer::HaproxyError;
pub use engine::{Options, Progress, run};
pub use file::DrillFile;

/// Why a drill could not run.
#[derive(Debug, thiserror::Error)]
pub enum DrillError {
    /// HAProxy is missing or rejected its configuration.
    #[error(transparent)]
    Haproxy(#[from] HaproxyError),
    /// The drill file asks for something this run cannot do.
    #[error("{0}")]
    Config(String),
    /// An instance did not start.
    #[error("{name} did not start: {reason}\n--- last lines of its log ---\n{log}")]
    InstanceFailed {
        /// The instance.
        name: String,
        /// What went wrong.
        reason: String,
        /// The end of its log.
        log: String,
    },
    /// The fleet is not healthy when it should be.
    #[error("{0}")]
    Unhealthy(String),
    /// An app-assisted fault's HTTP call failed.
    #[error("app-assisted fault failed: {0}")]
    Hook(String),
    /// Process, file or socket error.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}
