//! `stall`: every runtime worker of one instance blocked, under load.
//!
//! The case liveness exists for: a process that is running but can make no progress, which a
//! restart fixes. Liveness must fail, the prober must restart exactly that instance, and the
//! new process must come back into rotation.

use super::{Context, fmt_at, liveness_failed, poll_until, since};
use crate::DrillError;
use crate::fleet::EventKind;
use crate::load::LoadReport;
use crate::report::seconds;
use serde::Serialize;
use std::time::Duration;
use tokio::time::Instant;

/// What the stall drill measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stall {
    /// How long the runtime was blocked.
    pub stall_s: f64,
    /// Stall → the first failed liveness probe.
    pub time_to_liveness_failure_s: Option<f64>,
    /// Stall → the process restarted by the prober.
    pub time_to_restart_s: Option<f64>,
    /// Stall → the new process back in HAProxy's rotation.
    pub time_back_in_rotation_s: Option<f64>,
    /// Requests that failed in that time.
    pub requests_failed: u64,
    /// What the load saw in that time.
    pub window: LoadReport,
    /// Restarts in the fleet (1 expected: the stalled instance).
    pub restarts: u32,
}

impl Context<'_> {
    /// Runs the stall drill.
    pub async fn stall(&self) -> Result<Stall, DrillError> {
        let victim = &self.rig.fleet[1 % self.rig.fleet.len()];
        let stall = self.config.stall;
        self.progress.step(&format!(
            "stall: blocking every runtime worker of {} for {}s",
            victim.name,
            stall.as_secs()
        ));
        let restarts_before = self.total_restarts();
        let start = Instant::now();
        let path = format!("/chaos/stall?seconds={}", stall.as_secs().max(1));
        // The stall may begin before the answer is written: a timeout here is expected.
        let _ = tokio::time::timeout(Duration::from_secs(2), self.post(victim.admin, &path)).await;
        let index = victim.index;
        let within = stall + Duration::from_secs(30);
        let failed = self.wait_event(start, index, within, liveness_failed).await;
        let restarted = self
            .wait_event(start, index, within, |kind| {
                matches!(kind, EventKind::Spawned)
            })
            .await;
        let back = match restarted {
            Some(_) => {
                poll_until(
                    Duration::from_secs(60),
                    Duration::from_millis(50),
                    || async { self.rig.in_rotation(victim).await },
                )
                .await
            }
            None => None,
        };
        self.progress.step(&format!(
            "stall: liveness failed at {}, restarted at {}, back in rotation at {}",
            fmt_at(since(start, failed.as_ref().map(|e| e.at))),
            fmt_at(since(start, restarted.as_ref().map(|e| e.at))),
            fmt_at(since(start, back))
        ));
        let counts = self
            .timeline
            .counts(start, back.unwrap_or_else(Instant::now));
        Ok(Stall {
            stall_s: seconds(stall),
            time_to_liveness_failure_s: since(start, failed.map(|e| e.at)),
            time_to_restart_s: since(start, restarted.map(|e| e.at)),
            time_back_in_rotation_s: since(start, back),
            requests_failed: counts.failed,
            window: self
                .timeline
                .report(start, back.unwrap_or_else(Instant::now)),
            restarts: self.total_restarts() - restarts_before,
        })
    }
}
