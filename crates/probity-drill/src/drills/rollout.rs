//! `rollout-during-outage`: one instance replaced while the shared database is down, for longer
//! than the new instance's startup budget.
//!
//! The incident: twelve replicas restarted during a database failover, connected to a
//! still-recovering database, failed their startup probe and were killed again — a 14-minute
//! outage with the database healthy for 13 of them. A startup probe that waits on a dependency
//! turns any outage longer than its budget into that crash loop. Here the new instance's
//! `/startupz` covers only its own boot; the database step gates readiness alone, so the
//! instance starts, stays out of rotation while the database is away, and joins as soon as it
//! is back — with no restart anywhere.

use super::{Context, fmt_at, poll_until, since};
use crate::DrillError;
use crate::fleet::EventKind;
use crate::report::seconds;
use serde::Serialize;
use std::time::Duration;
use tokio::time::Instant;

/// How far past the new instance's startup budget the outage lasts: the budget is spent with
/// room to spare before the database returns.
const PAST_THE_BUDGET: Duration = Duration::from_secs(4);

/// What the rollout-during-outage drill measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RolloutDuringOutage {
    /// How long the database was cut off.
    pub outage_s: f64,
    /// Startup `periodSeconds × failureThreshold` of the new instance: the outage outlasts it.
    pub startup_budget_s: f64,
    /// New instance started → its startup probe passed (during the outage).
    pub time_to_started_s: Option<f64>,
    /// Startup probes of the new instance that failed before it started.
    pub startup_probe_failures: u32,
    /// Restarts anywhere in the fleet (must be 0).
    pub restarts: u32,
    /// Whether the new instance stayed out of rotation while the database was away.
    pub kept_out_of_rotation: bool,
    /// Database back → the new instance's own `/readyz` answers 200.
    pub time_to_new_instance_ready_s: Option<f64>,
    /// Database back → HAProxy has the new instance in rotation.
    pub time_to_new_instance_in_rotation_s: Option<f64>,
    /// Database back → every instance in rotation.
    pub time_to_full_fleet_after_recovery_s: Option<f64>,
}

impl Context<'_> {
    /// Runs the rollout-during-outage drill (the caller checks there is a proxy to cut).
    pub async fn rollout_during_outage(&mut self) -> Result<RolloutDuringOutage, DrillError> {
        let probes = self.config.probes;
        let startup_budget = probes.startup.period * probes.startup.failure_threshold;
        let victim = self.rig.fleet[self.rig.fleet.len() - 1].clone();
        let restarts_before = self.total_restarts();
        self.progress.step(&format!(
            "rollout during an outage: cutting the shared database off, then replacing {} \
             (startup budget {}s)",
            victim.name,
            startup_budget.as_secs_f64()
        ));
        let cut = Instant::now();
        if let Some(proxy) = self.proxy.as_mut() {
            proxy.cut();
        }
        // The old instance stops as a rollout stops it: SIGTERM, drain, exit.
        victim.terminate().await.map_err(DrillError::Io)?;
        if !victim.wait_exit(Duration::from_secs(60)).await {
            return Err(DrillError::Unhealthy(format!(
                "{} did not exit within 60s of SIGTERM",
                victim.name
            )));
        }
        let start = Instant::now();
        victim.start(&self.events).await.map_err(DrillError::Io)?;
        let index = victim.index;
        let database_back_at = start + startup_budget + PAST_THE_BUDGET;
        let started = self
            .wait_event(
                start,
                index,
                database_back_at.saturating_duration_since(Instant::now()),
                |kind| matches!(kind, EventKind::Started),
            )
            .await;
        self.progress.step(&format!(
            "rollout during an outage: {} started at {} with the database still away",
            victim.name,
            fmt_at(since(start, started.as_ref().map(|event| event.at)))
        ));
        // Out of rotation for as long as the database is away: sampled until it returns.
        let mut kept_out_of_rotation = true;
        while Instant::now() < database_back_at {
            if self.rig.in_rotation(&victim).await {
                kept_out_of_rotation = false;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let recovered = Instant::now();
        if let Some(proxy) = self.proxy.as_mut() {
            proxy.restore().await.map_err(DrillError::Io)?;
        }
        self.progress.step(&format!(
            "rollout during an outage: database back after {:.1}s, waiting for {}",
            seconds(recovered - cut),
            victim.name
        ));
        let probe = crate::fleet::probe_client(Duration::from_secs(1));
        let ready = poll_until(
            Duration::from_secs(60),
            Duration::from_millis(20),
            || async {
                crate::fleet::get_status(&probe, victim.listen, "/readyz").await == Ok(200)
            },
        )
        .await;
        let in_rotation = poll_until(
            Duration::from_secs(60),
            Duration::from_millis(20),
            || async { self.rig.in_rotation(&victim).await },
        )
        .await;
        let fleet_size = self.rig.fleet.len();
        let full = poll_until(
            Duration::from_secs(60),
            Duration::from_millis(50),
            || async { self.rig.servers_in_rotation().await == fleet_size },
        )
        .await;
        self.progress.step(&format!(
            "rollout during an outage: {} ready at {} after recovery, in rotation at {}, \
             whole fleet at {}",
            victim.name,
            fmt_at(since(recovered, ready)),
            fmt_at(since(recovered, in_rotation)),
            fmt_at(since(recovered, full))
        ));
        let startup_probe_failures =
            self.startup_probe_failures(start, index, started.as_ref().map(|event| event.at));
        Ok(RolloutDuringOutage {
            outage_s: seconds(recovered - cut),
            startup_budget_s: seconds(startup_budget),
            time_to_started_s: since(start, started.map(|event| event.at)),
            startup_probe_failures,
            restarts: self.total_restarts() - restarts_before,
            kept_out_of_rotation,
            time_to_new_instance_ready_s: since(recovered, ready),
            time_to_new_instance_in_rotation_s: since(recovered, in_rotation),
            time_to_full_fleet_after_recovery_s: since(recovered, full),
        })
    }
}
