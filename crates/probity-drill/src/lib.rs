//! `probity drill`: the fixes, proved on real processes.
//!
//! Any service: a drill file ([`mod@file`], documented in `docs/drill.md`) describes one instance
//! as a pod does, and [`engine`] drills a fleet of it — fault proxies in front of each
//! dependency, signals, a kubelet per instance, HAProxy fed by readiness or checking by itself —
//! into a report with a diagnosis for every miss ([`engine::report`]).
//!
//! The drills below are checkout's, the demo service's, on the same building blocks:
//!
//! Exhaust one instance's pool and watch it leave rotation with no request lost; cut the
//! database for 40 s and count the restarts (zero); stall a runtime and watch liveness restart
//! it; load the fleet to its limit and see readiness hold. This crate does it on this machine:
//!
//! - a fleet of `checkout` instances on loopback (each on its own SQLite, or sharing a
//!   PostgreSQL behind a TCP proxy the drill can cut) ([`rig`], [`fleet`]);
//! - a real HAProxy in front, running the shipped `deploy/haproxy/haproxy.cfg` ([`haproxy`]);
//! - per instance, a prober that follows the kubelet's rules for startup and liveness probes
//!   and restarts the process on a liveness failure ([`kubelet`]);
//! - a load generator, closed-loop or at a rate, bounded in time, usable from other crates'
//!   tests ([`load`]);
//! - the drills, each under that load ([`drills`]): `busy` (no fault), `pool`, `sigterm`,
//!   `flap`, `outage`, `stall`, `slow-boot`;
//! - targets that turn a run into a gate ([`targets`]), with JUnit output for CI ([`junit`]).
//!
//! The result is a [`report::Report`]: a table next to the published figures, or JSON.

pub mod child;
pub mod drills;
pub mod engine;
pub mod file;
pub mod fleet;
pub mod haproxy;
pub mod junit;
pub mod kubelet;
pub mod load;
pub mod proxy;
pub mod readiness;
pub mod report;
pub mod rig;
pub mod run;
pub mod targets;

use std::path::PathBuf;
use std::time::Duration;

pub use report::Report;
pub use run::{Progress, run};
pub use targets::{Targets, Verdict};

/// One drill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrillKind {
    /// No fault: the fleet at full load, directly and through HAProxy.
    Busy,
    /// Leak every connection of one instance's pool.
    PoolExhaustion,
    /// SIGTERM one instance, then start its replacement.
    Sigterm,
    /// The shared database up and down every second (needs PostgreSQL).
    Flap,
    /// Cut the shared database off (needs PostgreSQL).
    DatabaseOutage,
    /// Block every runtime worker of one instance.
    Stall,
    /// Restart one instance with a boot longer than the liveness window.
    SlowBoot,
    /// Replace one instance while the shared database is down for longer than the new
    /// instance's startup budget (needs PostgreSQL).
    RolloutDuringOutage,
    /// Wedge one instance's outbox relay (needs RabbitMQ).
    WorkerWedge,
    /// Cut the broker off the fleet (needs RabbitMQ).
    BrokerOutage,
    /// Cut the shared database off with the Redis cache up: the fleet serves cached reads,
    /// marked stale, and sheds writes (needs PostgreSQL and Redis).
    Degraded,
}

impl DrillKind {
    /// Every drill, in the order they run.
    pub const ALL: [DrillKind; 11] = [
        DrillKind::Busy,
        DrillKind::PoolExhaustion,
        DrillKind::Sigterm,
        DrillKind::Flap,
        DrillKind::DatabaseOutage,
        DrillKind::Stall,
        DrillKind::SlowBoot,
        DrillKind::RolloutDuringOutage,
        DrillKind::WorkerWedge,
        DrillKind::BrokerOutage,
        DrillKind::Degraded,
    ];

    /// Drills named but not available yet, with what they wait for.
    pub const PLANNED: [(&'static str, &'static str); 0] = [];

    /// The drill's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            DrillKind::Busy => "busy",
            DrillKind::PoolExhaustion => "pool",
            DrillKind::Sigterm => "sigterm",
            DrillKind::Flap => "flap",
            DrillKind::DatabaseOutage => "outage",
            DrillKind::Stall => "stall",
            DrillKind::SlowBoot => "slow-boot",
            DrillKind::RolloutDuringOutage => "rollout-during-outage",
            DrillKind::WorkerWedge => "worker-wedge",
            DrillKind::BrokerOutage => "broker-outage",
            DrillKind::Degraded => "degraded",
        }
    }

    /// Parses a drill name.
    pub fn parse(name: &str) -> Option<DrillKind> {
        DrillKind::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// Whether the drill needs a message broker (`--amqp-url`).
    pub fn needs_broker(self) -> bool {
        matches!(self, DrillKind::WorkerWedge | DrillKind::BrokerOutage)
    }

    /// Whether the drill needs each instance to have its own database (checkout's outbox relay
    /// assumes one relay per database), and so cannot run with `--database-url`.
    pub fn needs_own_databases(self) -> bool {
        matches!(self, DrillKind::WorkerWedge | DrillKind::BrokerOutage)
    }

    /// Whether the drill cuts the shared database (and so needs one).
    pub fn needs_shared_database(self) -> bool {
        matches!(
            self,
            DrillKind::Flap
                | DrillKind::DatabaseOutage
                | DrillKind::RolloutDuringOutage
                | DrillKind::Degraded
        )
    }

    /// Whether the drill needs the fleet's order cache (`--redis-url`).
    pub fn needs_cache(self) -> bool {
        matches!(self, DrillKind::Degraded)
    }

    /// Whether the drill measures the fleet draining during a shared database outage, which a
    /// cache fallback turns into degrading: it cannot run in the same fleet as `degraded`.
    pub fn measures_draining(self) -> bool {
        matches!(
            self,
            DrillKind::Flap | DrillKind::DatabaseOutage | DrillKind::RolloutDuringOutage
        )
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
    /// A RabbitMQ for the instances' outbox relays (each publishes to a queue of its own).
    pub amqp_url: Option<String>,
    /// A Redis for the instances' order cache (the database's fallback for reads); only the
    /// `degraded` drill uses it.
    pub redis_url: Option<String>,
    /// How many orders the `degraded` drill creates (and so caches) before the outage.
    pub cached_orders: u32,
    /// The outbox relay's heartbeat bound (`--outbox-max-silence`).
    pub worker_bound: Duration,
    /// How long the broker outage lasts.
    pub broker_outage: Duration,
    /// The pool size of each instance (the leak takes all of it).
    pub pool_size: u32,
    /// Which drills, in order.
    pub drills: Vec<DrillKind>,
    /// HAProxy's health-check timing.
    pub lb_timing: haproxy::CheckTiming,
    /// The kubelet-style probes.
    pub probes: kubelet::Probes,
    /// Connections of background load (closed loop unless `rate` is set); the `busy` drill's
    /// connections.
    pub concurrency: u32,
    /// Requests per second of background load in total, or `None` for as fast as the fleet
    /// answers. The `busy` drill is always closed-loop.
    pub rate: Option<u32>,
    /// Each leg of the `busy` drill (directly, through HAProxy).
    pub busy: Duration,
    /// Each segment of the health-check cost comparison (zero: not measured).
    pub cost_segment: Duration,
    /// Pairs of segments (with and without health checks) in the comparison.
    pub cost_pairs: u32,
    /// How long the `flap` drill flaps.
    pub flap: Duration,
    /// How long the database stays reachable in each flap.
    pub flap_up: Duration,
    /// How long it stays cut off in each flap.
    pub flap_down: Duration,
    /// How long the database outage lasts.
    pub outage: Duration,
    /// How long the runtime stall lasts.
    pub stall: Duration,
    /// How long the slow boot takes.
    pub boot_delay: Duration,
    /// Keep the work folder (configuration, logs) after a successful run.
    pub keep_work_dir: bool,
    /// What the drills must show.
    pub targets: Targets,
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
            amqp_url: None,
            redis_url: None,
            cached_orders: 200,
            worker_bound: Duration::from_secs(5),
            broker_outage: Duration::from_secs(60),
            pool_size: 5,
            drills: DrillKind::ALL.to_vec(),
            lb_timing: haproxy::CheckTiming::default(),
            probes: kubelet::Probes::default(),
            concurrency: 32,
            rate: None,
            busy: Duration::from_secs(60),
            cost_segment: Duration::from_secs(5),
            cost_pairs: 6,
            flap: Duration::from_secs(30),
            flap_up: Duration::from_secs(1),
            flap_down: Duration::from_secs(1),
            outage: Duration::from_secs(40),
            stall: Duration::from_secs(15),
            boot_delay: Duration::from_secs(12),
            keep_work_dir: false,
            targets: Targets::default(),
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
    /// The broker URL is not an `amqp://host:port` URL.
    #[error("cannot read the broker URL (expected amqp://user:password@host:port/vhost)")]
    BrokerUrl,
    /// The broker does not accept connections.
    #[error(
        "the broker at {0} is unreachable: start RabbitMQ or drop --amqp-url (and the drills that need it)"
    )]
    BrokerUnreachable(String),
    /// Drills that cannot share one fleet.
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
    /// A chaos endpoint refused.
    #[error("fault injection failed: {0} (is checkout running with --chaos?)")]
    Chaos(String),
    /// An app-assisted fault's HTTP call failed.
    #[error("app-assisted fault failed: {0}")]
    Hook(String),
    /// Process, file or socket error.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}
