//! Boot: warm up, then connect to the database (retrying with backoff and jitter) and migrate
//! it — each a startup step, each reporting why it waits (`/startupz` for the warm-up, `/readyz`
//! for the steps that wait on the database).
//!
//! In the restart storm twelve replicas restarted at once and retried on the same interval, a
//! synchronised herd against a recovering database. Here every attempt waits an exponentially
//! growing delay (100 ms doubling to 5 s) of which half is random, so replicas spread out.

use crate::config::Config;
use crate::db::{self, Database};
use crate::wiring::{STEP_DATABASE, STEP_MIGRATIONS, STEP_WARMUP};
use anyhow::{Context, bail};
use probity::Health;
use probity_contract::duration::format as format_duration;
use std::time::Duration;
use tokio::time::Instant;

/// Exponential backoff with equal jitter.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
    cap: Duration,
}

impl Backoff {
    /// Starts at `first`, doubles up to `cap`.
    pub fn new(first: Duration, cap: Duration) -> Self {
        Self { next: first, cap }
    }

    /// The next delay: half the current step plus a random part of the other half.
    pub fn delay(&mut self) -> Duration {
        let step = self.next.min(self.cap);
        self.next = (self.next * 2).min(self.cap);
        let half = step / 2;
        half + half.mul_f64(fastrand::f64())
    }
}

/// The longest wait between two connection attempts at boot.
const CONNECT_RETRY_CAP: Duration = Duration::from_secs(1);

/// Longest a single connection attempt may take.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);

/// Runs the boot steps; returns when the service is started, or the reason it cannot start.
///
/// The internal warm-up comes first: it is all `/startupz` waits for. Connecting to the
/// database and migrating it wait on the database, so they gate readiness only — a database
/// outage during a rollout leaves the new pod running and out of rotation, saying why, until
/// the database answers.
pub async fn run(config: &Config, db: &Database, health: &Health) -> anyhow::Result<()> {
    let started = Instant::now();
    if !config.boot_delay.is_zero() {
        let until = Instant::now() + config.boot_delay;
        while Instant::now() < until {
            let left = until.saturating_duration_since(Instant::now());
            note(
                health,
                STEP_WARMUP,
                format!(
                    "warming up: {} left (--boot-delay)",
                    format_duration(round(left))
                ),
            );
            tokio::time::sleep(left.min(Duration::from_secs(1))).await;
        }
    }
    complete(health, STEP_WARMUP);

    connect(config, db, health).await?;
    complete(health, STEP_DATABASE);

    note(health, STEP_MIGRATIONS, "applying the schema".into());
    db.migrate()
        .await
        .map_err(|error| anyhow::anyhow!(probity::redact::redact(&error.to_string()).into_owned()))
        .context("migrations failed")?;
    complete(health, STEP_MIGRATIONS);
    tracing::info!(
        took = %format_duration(round(started.elapsed())),
        "startup complete: ready to serve"
    );
    Ok(())
}

async fn connect(config: &Config, db: &Database, health: &Health) -> anyhow::Result<()> {
    // Capped at 1 s: one connection attempt a second per instance costs the database nothing,
    // and an instance waiting out an outage takes traffic within about a second of its end.
    let mut backoff = Backoff::new(Duration::from_millis(100), CONNECT_RETRY_CAP);
    let mut attempt: u32 = 0;
    loop {
        attempt += 1;
        let reason = match tokio::time::timeout(ATTEMPT_TIMEOUT, db.ping()).await {
            Ok(Ok(())) => {
                tracing::info!(database = %db.describe(), attempt, "database reachable");
                return Ok(());
            }
            Ok(Err(error)) => db::describe(&error),
            Err(_) => format!("no answer within {}", format_duration(ATTEMPT_TIMEOUT)),
        };
        if config.connect_attempts != 0 && attempt >= config.connect_attempts {
            note(
                health,
                STEP_DATABASE,
                format!(
                    "{} unreachable: {reason}; gave up after {attempt} attempts",
                    db.describe()
                ),
            );
            bail!(
                "database {} unreachable after {attempt} attempts (--connect-attempts): {reason}",
                db.describe()
            );
        }
        let delay = backoff.delay();
        let message = format!(
            "{} unreachable: {reason}; attempt {attempt}, next in {}",
            db.describe(),
            format_duration(round(delay))
        );
        tracing::warn!("{}", probity::redact::redact(&message));
        note(health, STEP_DATABASE, message);
        tokio::time::sleep(delay).await;
    }
}

fn note(health: &Health, step: &str, note: String) {
    // The steps are declared in `wiring::health`; an unknown one is a bug here, not input.
    if let Err(error) = health.step_progress(step, note) {
        tracing::error!(%error, "cannot report startup progress");
    }
}

fn complete(health: &Health, step: &str) {
    if let Err(error) = health.complete_step(step) {
        tracing::error!(%error, "cannot complete a startup step");
    }
}

fn round(duration: Duration) -> Duration {
    Duration::from_millis(duration.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_the_cap_with_jitter_in_the_upper_half() {
        let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(1));
        let steps = [100, 200, 400, 800, 1000, 1000];
        for step in steps {
            let step = Duration::from_millis(step);
            let delay = backoff.delay();
            assert!(delay >= step / 2 && delay <= step, "{delay:?} for {step:?}");
        }
    }

    #[test]
    fn backoff_spreads_replicas() {
        let delays: Vec<Duration> = (0..20)
            .map(|_| Backoff::new(Duration::from_secs(4), Duration::from_secs(4)).delay())
            .collect();
        let first = delays[0];
        assert!(
            delays.iter().any(|delay| *delay != first),
            "no jitter: {delays:?}"
        );
    }
}
