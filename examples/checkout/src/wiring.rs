//! The health wiring, as the seeds teach it.
//!
//! - **readiness** (`/readyz`, gRPC `readiness` and `""`): `db`, **hard** — the pool's capacity
//!   (no connection available fails: seed 000's leak) and the database's reachability, polled
//!   every 500 ms and failed at once by passive reports from the request handlers; `cache` and
//!   `recommendations`, **soft** — without them the service degrades, it does not stop;
//! - **startup** (`/startupz`): `database` (connect, with backoff and jitter), `migrations`,
//!   `warmup` (`--boot-delay`); readiness fails until all three complete;
//! - **liveness** (`/livez`): the runtime-stall watchdog (and deadlock detection with the
//!   `deadlock` feature) — never a dependency, so a database outage drains the fleet instead
//!   of restarting it.

use crate::cache::Cache;
use crate::config::Config;
use crate::db::Database;
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

/// How often the watchdog thread looks for deadlocks.
#[cfg(feature = "deadlock")]
const DEADLOCK_CHECK_EVERY: Duration = Duration::from_secs(1);

/// Builds the registry (nothing runs until `start`).
pub fn health(
    config: &Config,
    db: &Database,
    cache: Option<&Cache>,
    recommendations: Option<&Recommendations>,
) -> Result<Health, probity::BuildError> {
    let interval = config.db_check_interval;
    let mut builder = Health::builder().service("checkout").check(
        db.check_spec(DB_CHECK)
            .interval(interval)
            // Below the interval (required), with room for one round trip on a slow network.
            .timeout((interval * 4 / 5).min(Duration::from_secs(2)))
            .jitter(interval / 10),
    );
    if let Some(cache) = cache {
        builder = builder.check(cache.check_spec("cache"));
    }
    if let Some(recommendations) = recommendations {
        builder = builder.check(recommendations.check_spec("recommendations"));
    }
    builder = builder
        .startup_step(STEP_DATABASE)
        .startup_step(STEP_MIGRATIONS)
        .startup_step(STEP_WARMUP)
        .runtime_watchdog(config.stall_threshold)
        .drain_delay(config.drain_delay)
        .in_flight_deadline(config.in_flight_deadline);
    #[cfg(feature = "deadlock")]
    {
        builder = builder.deadlock_detection(DEADLOCK_CHECK_EVERY);
    }
    builder.build()
}
