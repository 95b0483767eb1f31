//! `outage`: the shared database cut off (PostgreSQL through the drill's proxy), under load.
//!
//! The incident this answers: a 40 s database blip, a liveness probe that checked the
//! database, every instance restarted into a crash loop, a 7-minute outage. Here every instance
//! must drain and none restart; traffic must come back by itself soon after the database does.

use super::{Context, fmt_at, poll_until, since};
use crate::DrillError;
use crate::load::LoadReport;
use crate::report::seconds;
use serde::Serialize;
use std::time::Duration;
use tokio::time::Instant;

/// What the outage drill measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DatabaseOutage {
    /// How long the database was cut off.
    pub outage_s: f64,
    /// Restarts anywhere in the fleet (must be 0).
    pub restarts: u32,
    /// Requests that failed from the cut until traffic was served again.
    pub requests_failed: u64,
    /// What the load saw from the cut until the whole fleet was back.
    pub window: LoadReport,
    /// Cut → every instance out of rotation.
    pub time_to_all_drained_s: Option<f64>,
    /// Database back → the first request served through HAProxy.
    pub time_to_traffic_after_recovery_s: Option<f64>,
    /// Database back → every instance in rotation.
    pub time_to_full_fleet_after_recovery_s: Option<f64>,
}

impl Context<'_> {
    /// Runs the outage drill (the caller checks there is a proxy to cut).
    pub async fn database_outage(&mut self) -> Result<DatabaseOutage, DrillError> {
        let outage = self.config.outage;
        self.progress.step(&format!(
            "database outage: cutting the shared database off for {}s",
            outage.as_secs_f64()
        ));
        let restarts_before = self.total_restarts();
        let start = Instant::now();
        if let Some(proxy) = self.proxy.as_mut() {
            proxy.cut();
        }
        let drained = poll_until(outage, Duration::from_millis(50), || async {
            self.rig.servers_in_rotation().await == 0
        })
        .await;
        self.progress.step(&format!(
            "database outage: every instance out of rotation at {}",
            fmt_at(since(start, drained))
        ));
        tokio::time::sleep_until(start + outage).await;
        let recovered = Instant::now();
        if let Some(proxy) = self.proxy.as_mut() {
            proxy.restore().await.map_err(DrillError::Io)?;
        }
        self.progress
            .step("database outage: database back, waiting for traffic");
        let traffic = poll_until(
            Duration::from_secs(60),
            Duration::from_millis(20),
            || async { self.timeline.first_success_after(recovered).is_some() },
        )
        .await
        .and_then(|_| self.timeline.first_success_after(recovered));
        let fleet_size = self.rig.fleet.len();
        let full = poll_until(
            Duration::from_secs(60),
            Duration::from_millis(50),
            || async { self.rig.servers_in_rotation().await == fleet_size },
        )
        .await;
        self.progress.step(&format!(
            "database outage: traffic served at {} after recovery, whole fleet at {}",
            fmt_at(since(recovered, traffic)),
            fmt_at(since(recovered, full))
        ));
        let counts = self
            .timeline
            .counts(start, traffic.unwrap_or_else(Instant::now));
        Ok(DatabaseOutage {
            outage_s: seconds(outage),
            restarts: self.total_restarts() - restarts_before,
            requests_failed: counts.failed,
            window: self
                .timeline
                .report(start, full.unwrap_or_else(Instant::now)),
            time_to_all_drained_s: since(start, drained),
            time_to_traffic_after_recovery_s: since(recovered, traffic),
            time_to_full_fleet_after_recovery_s: since(recovered, full),
        })
    }
}
