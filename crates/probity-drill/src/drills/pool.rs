//! `pool`: every connection of one instance's pool leaked, under load.
//!
//! The pool-leak incident: the instance kept answering `/health` 200 and failed every request
//! for 26 minutes. Here readiness must fail, HAProxy must take the instance out, and the
//! requests that reached it meanwhile (503, not processed) must be retried on another server so
//! the client sees none fail.

use super::{Context, balancer_changes, fmt_at, poll_until, since};
use crate::DrillError;
use crate::fleet::{get_status, probe_client};
use crate::load::LoadReport;
use serde::Serialize;
use std::time::Duration;
use tokio::time::Instant;

/// What the pool drill measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PoolExhaustion {
    /// Leak → the instance's `/readyz` answers 503.
    pub time_to_unready_s: Option<f64>,
    /// Leak → HAProxy marks it DOWN: the time to drain.
    pub time_out_of_rotation_s: Option<f64>,
    /// Requests through HAProxy that failed from the leak until one second after it left
    /// rotation.
    pub requests_failed: u64,
    /// Requests sent in that window.
    pub requests_total: u64,
    /// Failed / total in that window.
    pub fleet_error_rate: f64,
    /// The worst one-second error rate in that window.
    pub peak_error_rate_1s: f64,
    /// What the load saw in that window.
    pub window: LoadReport,
    /// Retries HAProxy made in the drill (`wretr`).
    pub balancer_retries: u64,
    /// Of those, sent to another server (`wredis`).
    pub balancer_redispatches: u64,
    /// Restarts anywhere in the fleet during the drill (must be 0).
    pub restarts: u32,
    /// Release → HAProxy marks it UP again (the rise count at work).
    pub time_back_in_rotation_s: Option<f64>,
}

impl Context<'_> {
    /// Runs the pool drill.
    pub async fn pool_exhaustion(&self) -> Result<PoolExhaustion, DrillError> {
        let victim = &self.rig.fleet[0];
        self.progress.step(&format!(
            "pool exhaustion: leaking every connection of {}'s pool",
            victim.name
        ));
        let restarts_before = self.total_restarts();
        let stats_before = self.rig.stats().await;
        let start = Instant::now();
        self.chaos(
            victim,
            &format!("/chaos/leak-connections?count={}", self.config.pool_size),
        )
        .await?;
        let probe = probe_client(Duration::from_millis(500));
        let (unready, out) = tokio::join!(
            poll_until(
                Duration::from_secs(15),
                Duration::from_millis(20),
                || async { get_status(&probe, victim.listen, "/readyz").await == Ok(503) }
            ),
            poll_until(
                Duration::from_secs(20),
                Duration::from_millis(25),
                || async { !self.rig.in_rotation(victim).await }
            ),
        );
        self.progress.step(&format!(
            "pool exhaustion: /readyz 503 at {}, out of rotation at {}",
            fmt_at(since(start, unready)),
            fmt_at(since(start, out))
        ));
        let window_end = out.unwrap_or_else(Instant::now) + Duration::from_secs(1);
        // Requests sent before the end of the window may still be in flight (a retried one
        // waited for the acquire budget first): let them finish.
        tokio::time::sleep_until(window_end + Duration::from_secs(2)).await;
        let counts = self.timeline.counts(start, window_end);
        let peak = self
            .timeline
            .peak_error_rate(start, window_end, Duration::from_secs(1));
        let restarts = self.total_restarts() - restarts_before;
        let (_, retries, redispatches) = balancer_changes(&stats_before, &self.rig.stats().await);

        let released = Instant::now();
        self.chaos(victim, "/chaos/release-connections").await?;
        let back = poll_until(
            Duration::from_secs(30),
            Duration::from_millis(25),
            || async { self.rig.in_rotation(victim).await },
        )
        .await;
        self.progress.step(&format!(
            "pool exhaustion: {}; {retries} retried by HAProxy; released, back in rotation at {}",
            self.timeline.report(start, window_end),
            fmt_at(since(released, back))
        ));
        Ok(PoolExhaustion {
            time_to_unready_s: since(start, unready),
            time_out_of_rotation_s: since(start, out),
            requests_failed: counts.failed,
            requests_total: counts.total,
            fleet_error_rate: counts.error_rate(),
            peak_error_rate_1s: peak,
            window: self.timeline.report(start, window_end),
            balancer_retries: retries,
            balancer_redispatches: redispatches,
            restarts,
            time_back_in_rotation_s: since(released, back),
        })
    }
}
