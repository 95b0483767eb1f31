//! `probity drill`: the seeds' proof, for real.
//!
//! Seed 000 ends with "How we proved it": exhaust one instance's pool and watch it leave
//! rotation; cut the database for 40 s and count the restarts (zero); inject a deadlock and watch
//! liveness restart the pod. This crate does the same on this machine, with real processes:
//!
//! - a fleet of `checkout` instances on loopback (each on its own SQLite, or sharing a
//!   PostgreSQL behind a TCP proxy the drill can cut);
//! - a real HAProxy in front, health-checking `GET /readyz` with the given inter/rise/fall;
//! - per instance, a prober that follows the kubelet's rules for startup and liveness probes
//!   and restarts the process on a liveness failure ([`kubelet`]);
//! - a bounded load generator through HAProxy ([`load`]);
//! - the drills: pool exhaustion, database outage, runtime stall, slow boot ([`run()`]).
//!
//! The result is a [`report::Report`]: a table next to the seed's figures, or JSON.

pub mod child;
pub mod fleet;
pub mod haproxy;
pub mod kubelet;
pub mod load;
pub mod proxy;
pub mod report;
pub mod run;

use std::path::PathBuf;
use std::time::Duration;

pub use report::Report;
pub use run::{Progress, run};

/// One drill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrillKind {
    /// Leak every connection of one instance's pool.
    PoolExhaustion,
    /// Cut the shared database off (needs PostgreSQL).
    DatabaseOutage,
    /// Block every runtime worker of one instance.
    Stall,
    /// Restart one instance with a boot longer than the liveness window.
    SlowBoot,
}

impl DrillKind {
    /// Every drill, in the order they run.
    pub const ALL: [DrillKind; 4] = [
        DrillKind::PoolExhaustion,
        DrillKind::DatabaseOutage,
        DrillKind::Stall,
        DrillKind::SlowBoot,
    ];

    /// The drill's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            DrillKind::PoolExhaustion => "pool",
            DrillKind::DatabaseOutage => "outage",
            DrillKind::Stall => "stall",
            DrillKind::SlowBoot => "slow-boot",
        }
    }

    /// Parses a drill name.
    pub fn parse(name: &str) -> Option<DrillKind> {
        DrillKind::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

/// Everything a drill run needs.
#[derive(Debug, Clone)]
pub struct DrillConfig {
    /// The `checkout` binary.
    pub checkout: PathBuf,
    /// Extra arguments for every `checkout` instance.
    pub checkout_args: Vec<String>,
    /// The `haproxy` binary.
    pub haproxy: PathBuf,
    /// How many instances.
    pub instances: usize,
    /// A shared PostgreSQL; each instance uses its own SQLite without it.
    pub database_url: Option<String>,
    /// The pool size of each instance (the leak takes all of it).
    pub pool_size: u32,
    /// Which drills, in order.
    pub drills: Vec<DrillKind>,
    /// HAProxy's health-check timing.
    pub lb_timing: haproxy::CheckTiming,
    /// The kubelet-style probes.
    pub probes: kubelet::Probes,
    /// Requests per second through HAProxy.
    pub rate: u32,
    /// Concurrent load workers.
    pub concurrency: u32,
    /// How long the database outage lasts.
    pub outage: Duration,
    /// How long the runtime stall lasts.
    pub stall: Duration,
    /// How long the slow boot takes.
    pub boot_delay: Duration,
    /// Keep the work folder (configuration, logs) after a successful run.
    pub keep_work_dir: bool,
}

impl DrillConfig {
    /// The defaults for a fleet of three, with `checkout` at `checkout`.
    pub fn new(checkout: PathBuf) -> Self {
        DrillConfig {
            checkout,
            checkout_args: Vec::new(),
            haproxy: PathBuf::from("haproxy"),
            instances: 3,
            database_url: None,
            pool_size: 5,
            drills: DrillKind::ALL.to_vec(),
            lb_timing: haproxy::CheckTiming::default(),
            probes: kubelet::Probes::default(),
            rate: 100,
            concurrency: 8,
            outage: Duration::from_secs(40),
            stall: Duration::from_secs(15),
            boot_delay: Duration::from_secs(12),
            keep_work_dir: false,
        }
    }
}

/// Why a drill could not run.
#[derive(Debug, thiserror::Error)]
pub enum DrillError {
    /// The `checkout` binary is missing.
    #[error(
        "checkout binary not found at {0}: build it with `cargo build --release -p checkout` or pass --checkout PATH"
    )]
    CheckoutMissing(PathBuf),
    /// HAProxy is missing or rejected its configuration.
    #[error(transparent)]
    Haproxy(#[from] haproxy::HaproxyError),
    /// The database URL is not a `postgres://host:port/db` URL.
    #[error("cannot read the database URL (expected postgres://user@host:port/database)")]
    DatabaseUrl(String),
    /// The database does not accept connections.
    #[error(
        "the database at {0} is unreachable: start PostgreSQL or drop --database-url to run on SQLite"
    )]
    DatabaseUnreachable(String),
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
    /// A chaos endpoint refused.
    #[error("fault injection failed: {0} (is checkout running with --chaos?)")]
    Chaos(String),
    /// Process, file or socket error.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}
