//! `sigterm`: one instance asked to stop, as a rollout or a node drain does, under load.
//!
//! On SIGTERM checkout fails readiness at once and keeps serving for its drain delay, so the
//! balancer takes it out before its listener closes; then it finishes what is in flight and
//! exits. The drill then starts a replacement, as the Deployment's controller would, and waits
//! for it to join. The client must see no request fail.

use super::{Context, balancer_changes, fmt_at, poll_until, since};
use crate::DrillError;
use crate::load::LoadReport;
use serde::Serialize;
use std::time::Duration;
use tokio::time::Instant;

/// What the SIGTERM drill measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sigterm {
    /// SIGTERM → HAProxy marks the instance DOWN.
    pub time_out_of_rotation_s: Option<f64>,
    /// SIGTERM → the process exited.
    pub time_to_exit_s: Option<f64>,
    /// SIGTERM → the replacement in rotation.
    pub time_to_replacement_in_rotation_s: Option<f64>,
    /// Requests that failed from SIGTERM until one second after the replacement joined.
    pub requests_failed: u64,
    /// Requests sent in that window.
    pub requests_total: u64,
    /// What the load saw in that window.
    pub window: LoadReport,
    /// Retries HAProxy made in the drill (`wretr`).
    pub balancer_retries: u64,
    /// Restarts by the prober (must be 0: a planned stop is not a failure).
    pub restarts: u32,
}

impl Context<'_> {
    /// Runs the SIGTERM drill.
    pub async fn sigterm(&self) -> Result<Sigterm, DrillError> {
        let victim = &self.rig.fleet[2 % self.rig.fleet.len()];
        self.progress.step(&format!(
            "sigterm: asking {} to stop (SIGTERM)",
            victim.name
        ));
        let restarts_before = self.total_restarts();
        let stats_before = self.rig.stats().await;
        let start = Instant::now();
        victim.terminate().await.map_err(DrillError::Io)?;
        let out = poll_until(
            Duration::from_secs(20),
            Duration::from_millis(25),
            || async { !self.rig.in_rotation(victim).await },
        );
        let exited = async {
            // Drain delay, then in-flight requests up to their deadline; generous beyond that.
            victim
                .wait_exit(Duration::from_secs(60))
                .await
                .then(Instant::now)
        };
        let (out, exited) = tokio::join!(out, exited);
        self.progress.step(&format!(
            "sigterm: out of rotation at {}, exited at {}; starting a replacement",
            fmt_at(since(start, out)),
            fmt_at(since(start, exited))
        ));
        if exited.is_none() {
            return Err(DrillError::Unhealthy(format!(
                "{} did not exit within 60s of SIGTERM",
                victim.name
            )));
        }
        victim.start(&self.events).await.map_err(DrillError::Io)?;
        let joined = poll_until(
            Duration::from_secs(60),
            Duration::from_millis(25),
            || async { self.rig.in_rotation(victim).await },
        )
        .await;
        let window_end = joined.unwrap_or_else(Instant::now) + Duration::from_secs(1);
        tokio::time::sleep_until(window_end + Duration::from_secs(1)).await;
        let counts = self.timeline.counts(start, window_end);
        let (_, retries, _) = balancer_changes(&stats_before, &self.rig.stats().await);
        self.progress.step(&format!(
            "sigterm: replacement in rotation at {}; {}; {retries} retried by HAProxy",
            fmt_at(since(start, joined)),
            self.timeline.report(start, window_end)
        ));
        Ok(Sigterm {
            time_out_of_rotation_s: since(start, out),
            time_to_exit_s: since(start, exited),
            time_to_replacement_in_rotation_s: since(start, joined),
            requests_failed: counts.failed,
            requests_total: counts.total,
            window: self.timeline.report(start, window_end),
            balancer_retries: retries,
            restarts: self.total_restarts() - restarts_before,
        })
    }
}
