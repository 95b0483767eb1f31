//! The health wiring.
//!
//! - **readiness** (`/readyz`, gRPC `readiness` and `""`): `db`, **hard** — can a request get a
//!   pooled connection within its budget (a leaked pool fails, a busy one warns), and does the
//!   database answer; polled every 500 ms and failed at once by passive reports from the request
//!   handlers; `cache` and `recommendations`, **soft** — without them the service degrades, it
//!   does not stop; with a cache, `db` names `cache` as its **fallback**: while the database
//!   fails for a reason every instance shares (refused, unreachable, timing out) and Redis
//!   answers, readiness is `warn` and the instance stays in rotation serving cached orders
//!   marked stale (writes are shed); a fault of this instance's own (its pool exhausted while
//!   the database answers) still drains it; and the boot steps `database` and `migrations`, which wait on the database;
//! - **startup** (`/startupz`): `warmup` (`--boot-delay`) only. Connecting to the database and
//!   migrating it gate readiness, never startup: a rollout during a database outage longer
//!   than the startup probe's budget leaves the new pods running and out of rotation, saying
//!   why, instead of killing them into a crash loop (the restart storm);
//! - **liveness** (`/livez`): the runtime-stall watchdog (and deadlock detection with the
//!   `deadlock` feature) — never a dependency, so a database outage drains the fleet instead
//!   of restarting it; with `--amqp-url`, the outbox relay's heartbeat `outbox`, which fails
//!   when the relay is silent past `--outbox-max-silence` outside a declared wait, and never
//!   while it waits on the broker or the database (the soft `broker` readiness check reports
//!   that);
//! - **shutdown**: the drain delay is derived from the readiness probe the deployment declares
//!   (`--readiness-period` × `--readiness-failure-threshold` + `--lb-reaction`), unless set.

use crate::cache::Cache;
use crate::config::Config;
use crate::db::Database;
use crate::outbox::{OUTBOX_HEARTBEAT, Outbox};
use crate::recommendations::Recommendations;
use probity::Health;
use std::time::Duration;

/// The startup step that connects to the database.
pub const STEP_DATABASE: &str = "database";
/// The startup step that applies the schema.
pub const STEP_MIGRATIONS: &str = "migrations";
/// The startup step that stands for a slow warm-up (`--boot-delay`).
pub const STEP_WARMUP: &str = "warmup";

/// The name of the database check.
pub const DB_CHECK: &str = "db";
/// The name of the cache check: the database's fallback for reads.
pub const CACHE_CHECK: &str = "cache";

/// How often the watchdog thread looks for deadlocks.
#[cfg(feature = "deadlock")]
const DEADLOCK_CHECK_EVERY: Duration = Duration::from_secs(1);

/// Builds the registry (nothing runs until `start`).
pub fn health(
    config: &Config,
    db: &Database,
    cache: Option<&Cache>,
    recommendations: Option<&Recommendations>,
    outbox: Option<&Outbox>,
) -> Result<Health, probity::BuildError> {
    let interval = config.db_check_interval;
    let mut db_check = db
        .check_spec(DB_CHECK)
        .interval(interval)
        // Below the interval (required), with room for one round trip on a slow network.
        .timeout((interval * 4 / 5).min(Duration::from_secs(2)))
        .jitter(interval / 10);
    if cache.is_some() {
        db_check = db_check.fallback(CACHE_CHECK);
    }
    let mut builder = Health::builder().service("checkout").check(db_check);
    if let Some(cache) = cache {
        builder = builder.check(cache.check_spec(CACHE_CHECK));
    }
    if let Some(recommendations) = recommendations {
        builder = builder.check(recommendations.check_spec("recommendations"));
    }
    if let Some(outbox) = outbox {
        builder = builder
            .check(outbox.check_spec())
            .heartbeat(OUTBOX_HEARTBEAT, outbox.max_silence());
    }
    let database = db.dependency();
    builder = builder
        .paths(config.paths.clone())
        .dependency_step(STEP_DATABASE, database)
        .dependency_step(STEP_MIGRATIONS, database)
        .startup_step(STEP_WARMUP)
        .runtime_watchdog(config.stall_threshold)
        .readiness_probe(config.readiness_period, config.readiness_failure_threshold)
        .load_balancer_reaction(config.lb_reaction)
        .in_flight_deadline(config.in_flight_deadline);
    if let Some(delay) = config.drain_delay {
        builder = builder.drain_delay(delay);
    }
    #[cfg(feature = "deadlock")]
    {
        builder = builder.deadlock_detection(DEADLOCK_CHECK_EVERY);
    }
    builder.build()
}
