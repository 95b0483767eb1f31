//! `slow-boot`: one instance restarted with a boot longer than the liveness window.
//!
//! The incident: a service that warms up in 35–40 s behind a liveness probe that gave up at
//! 30 s, killed in a loop. A startup probe holds liveness off until the boot is done: the boot
//! must finish without a restart.

use super::{Context, fmt_at, poll_until};
use crate::DrillError;
use crate::fleet::EventKind;
use crate::report::seconds;
use serde::Serialize;
use std::time::Duration;
use tokio::time::Instant;

/// What the slow-boot drill measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SlowBoot {
    /// The boot delay given to the instance.
    pub boot_s: f64,
    /// Liveness `periodSeconds × failureThreshold`: what a boot would be killed at without a
    /// startup probe holding liveness off.
    pub liveness_window_s: f64,
    /// Startup `periodSeconds × failureThreshold`.
    pub startup_budget_s: f64,
    /// Start → the startup probe passed.
    pub time_to_started_s: Option<f64>,
    /// Startup probes that failed during the boot: more than the liveness failure threshold,
    /// without a kill, is the startup probe holding liveness off.
    pub startup_probe_failures: u32,
    /// Restarts during the boot (must be 0).
    pub restarts: u32,
}

impl Context<'_> {
    /// Runs the slow-boot drill.
    pub async fn slow_boot(&self) -> Result<SlowBoot, DrillError> {
        let victim = &self.rig.fleet[self.rig.fleet.len() - 1];
        let boot = self.config.boot_delay;
        let probes = self.config.probes;
        let liveness_window = probes.liveness.period * probes.liveness.failure_threshold;
        let startup_budget = probes.startup.period * probes.startup.failure_threshold;
        self.progress.step(&format!(
            "slow boot: restarting {} with a {}s boot (liveness window {}s)",
            victim.name,
            boot.as_secs_f64(),
            liveness_window.as_secs_f64()
        ));
        let restarts_before = self.total_restarts();
        victim.set_next_start_args(vec![
            "--boot-delay".to_owned(),
            format!("{}ms", boot.as_millis()),
        ]);
        let start = Instant::now();
        victim.start(&self.events).await.map_err(DrillError::Io)?;
        let index = victim.index;
        let started = self
            .wait_event(
                start,
                index,
                startup_budget + Duration::from_secs(10),
                |kind| matches!(kind, EventKind::Started),
            )
            .await;
        self.progress.step(&format!(
            "slow boot: started at {}",
            fmt_at(super::since(start, started.as_ref().map(|e| e.at)))
        ));
        let startup_probe_failures =
            self.startup_probe_failures(start, index, started.as_ref().map(|event| event.at));
        // Back in rotation before the next drill (the caller waits for the whole fleet).
        let _ = poll_until(
            Duration::from_secs(30),
            Duration::from_millis(50),
            || async { self.rig.in_rotation(victim).await },
        )
        .await;
        Ok(SlowBoot {
            boot_s: seconds(boot),
            startup_probe_failures,
            liveness_window_s: seconds(liveness_window),
            startup_budget_s: seconds(startup_budget),
            time_to_started_s: super::since(start, started.map(|e| e.at)),
            restarts: self.total_restarts() - restarts_before,
        })
    }
}
