//! `flap`: the path to the shared database up 1 s, down 1 s, for 30 s, under load.
//!
//! A flapping dependency is where hysteresis earns its keep: without it every instance leaves
//! and rejoins rotation with every flap (the flapping incident: pods in and out every 30 s).
//! With it, how often readiness can change is bounded by each check's settings, which the
//! instance states in its contract (`checkout --print-contract`): a check falls at most once per
//! down phase, and rises only after `rise` consecutive passing polls, at least `interval −
//! jitter` apart. When that many polls cannot fit in an up phase, the check cannot rise while
//! the flap lasts, so it falls once and stays down until the database is steady.

use super::{Context, balancer_changes, poll_until};
use crate::DrillError;
use crate::load::LoadReport;
use crate::report::seconds;
use serde::Serialize;
use std::time::Duration;
use tokio::time::Instant;

/// A hard check's polling settings, from the instance's contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckSettings {
    /// Its name.
    pub name: String,
    /// Poll interval.
    #[serde(serialize_with = "crate::report::millis")]
    pub interval: Duration,
    /// Up to this much earlier or later.
    #[serde(serialize_with = "crate::report::millis")]
    pub jitter: Duration,
    /// Consecutive passing polls to rise.
    pub rise: u32,
    /// Consecutive failing polls to fall.
    pub fall: u32,
}

/// The hard checks of a contract (`checkout --print-contract`).
pub fn hard_checks(contract: &serde_json::Value) -> Vec<CheckSettings> {
    let millis = |check: &serde_json::Value, key: &str| {
        Duration::from_millis(check[key].as_u64().unwrap_or_default())
    };
    contract["checks"]
        .as_array()
        .map(|checks| {
            checks
                .iter()
                .filter(|check| check["tier"] == "hard")
                .map(|check| CheckSettings {
                    name: check["name"].as_str().unwrap_or_default().to_owned(),
                    interval: millis(check, "interval_ms"),
                    jitter: millis(check, "jitter_ms"),
                    rise: check["rise"].as_u64().unwrap_or(1) as u32,
                    fall: check["fall"].as_u64().unwrap_or(1) as u32,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// How many times one check can fall during a flap of `cycles` down phases with up phases of
/// `up`, and why.
pub fn falls_bound(check: &CheckSettings, up: Duration, cycles: u32) -> (u32, String) {
    let spacing = check.interval.saturating_sub(check.jitter);
    // Polls that fit in one up phase, plus the one re-poll a fall triggers.
    let polls = if spacing.is_zero() {
        u32::MAX
    } else {
        (up.as_nanos() / spacing.as_nanos()) as u32 + 2
    };
    if polls < check.rise {
        (
            1,
            format!(
                "`{}` rises after {} passing polls ≥ {} ms apart, which a {} ms up phase cannot hold: it falls once and stays down while the flap lasts",
                check.name,
                check.rise,
                spacing.as_millis(),
                up.as_millis()
            ),
        )
    } else {
        (
            cycles,
            format!(
                "`{}` can rise within a {} ms up phase ({} polls ≥ {} ms apart): at most one fall per down phase",
                check.name,
                up.as_millis(),
                check.rise,
                spacing.as_millis()
            ),
        )
    }
}

/// One instance during the flap.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlapInstance {
    /// The instance.
    pub name: String,
    /// Times its readiness fell (a hard check's down transitions, from its own counters).
    pub readiness_transitions: u64,
    /// Times HAProxy took it out of rotation.
    pub balancer_downs: u64,
}

/// What the flap drill measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Flap {
    /// Database reachable this long…
    pub up_s: f64,
    /// …then unreachable this long…
    pub down_s: f64,
    /// …for this long in all.
    pub total_s: f64,
    /// Down phases.
    pub cycles: u32,
    /// Per instance.
    pub instances: Vec<FlapInstance>,
    /// The most readiness falls per instance the hysteresis allows.
    pub transitions_bound: u32,
    /// Why, from the instance's own check settings.
    pub bound_reason: String,
    /// The hard checks the bound comes from.
    pub checks: Vec<CheckSettings>,
    /// Requests that failed from the first cut until the whole fleet was back.
    pub requests_failed: u64,
    /// Requests sent in that window.
    pub requests_total: u64,
    /// What the load saw in that window.
    pub window: LoadReport,
    /// End of the flap → every instance in rotation.
    pub time_to_full_fleet_after_flap_s: Option<f64>,
    /// Restarts (must be 0).
    pub restarts: u32,
}

impl Context<'_> {
    /// Runs the flap drill (the caller checks there is a proxy to cut).
    pub async fn flap(&mut self) -> Result<Flap, DrillError> {
        let (up, down, total) = (self.config.flap_up, self.config.flap_down, self.config.flap);
        let contract = self.rig.fleet[0].contract().await.map_err(|error| {
            DrillError::Unhealthy(format!("checkout --print-contract: {error}"))
        })?;
        let checks = hard_checks(&contract);
        self.progress.step(&format!(
            "flap: database up {}ms / down {}ms for {}s",
            up.as_millis(),
            down.as_millis(),
            total.as_secs_f64()
        ));
        let restarts_before = self.total_restarts();
        let figures_before = self.figures(&self.rig.fleet).await;
        let stats_before = self.rig.stats().await;
        let start = Instant::now();
        let mut cycles = 0;
        while Instant::now() < start + total {
            if let Some(proxy) = self.proxy.as_mut() {
                proxy.cut();
            }
            cycles += 1;
            tokio::time::sleep(down).await;
            if let Some(proxy) = self.proxy.as_mut() {
                proxy.restore().await.map_err(DrillError::Io)?;
            }
            tokio::time::sleep(up).await;
        }
        let ended = Instant::now();
        let fleet_size = self.rig.fleet.len();
        let full = poll_until(
            Duration::from_secs(60),
            Duration::from_millis(50),
            || async { self.rig.servers_in_rotation().await == fleet_size },
        )
        .await;
        let window_end = full.unwrap_or_else(Instant::now) + Duration::from_secs(1);
        tokio::time::sleep_until(window_end + Duration::from_secs(1)).await;
        let counts = self.timeline.counts(start, window_end);
        let figures_after = self.figures(&self.rig.fleet).await;
        let (downs, _, _) = balancer_changes(&stats_before, &self.rig.stats().await);
        let instances: Vec<FlapInstance> = self
            .rig
            .fleet
            .iter()
            .zip(figures_after.iter().zip(&figures_before))
            .map(|(instance, (after, before))| FlapInstance {
                name: instance.name.clone(),
                readiness_transitions: after.since(*before).down_transitions,
                balancer_downs: downs
                    .iter()
                    .find(|(name, _)| *name == instance.name)
                    .map_or(0, |(_, count)| *count),
            })
            .collect();
        let bounds: Vec<(u32, String)> = checks
            .iter()
            .map(|check| falls_bound(check, up, cycles))
            .collect();
        let transitions_bound = bounds.iter().map(|(bound, _)| bound).sum();
        let bound_reason = bounds
            .into_iter()
            .map(|(_, reason)| reason)
            .collect::<Vec<_>>()
            .join("; ");
        self.progress.step(&format!(
            "flap: {cycles} cycles; readiness fell {} times per instance (bound {transitions_bound}); HAProxy downs {}; {}",
            instances
                .iter()
                .map(|instance| instance.readiness_transitions.to_string())
                .collect::<Vec<_>>()
                .join("/"),
            instances
                .iter()
                .map(|instance| instance.balancer_downs.to_string())
                .collect::<Vec<_>>()
                .join("/"),
            self.timeline.report(start, window_end)
        ));
        Ok(Flap {
            up_s: seconds(up),
            down_s: seconds(down),
            total_s: seconds(total),
            cycles,
            instances,
            transitions_bound,
            bound_reason,
            checks,
            requests_failed: counts.failed,
            requests_total: counts.total,
            window: self.timeline.report(start, window_end),
            time_to_full_fleet_after_flap_s: super::since(ended, full),
            restarts: self.total_restarts() - restarts_before,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_hard_checks_of_a_contract() {
        let contract = serde_json::json!({
            "checks": [
                {"name": "db", "tier": "hard", "interval_ms": 500, "jitter_ms": 50, "rise": 3, "fall": 1},
                {"name": "cache", "tier": "soft", "interval_ms": 1000, "jitter_ms": 0, "rise": 1, "fall": 1}
            ]
        });
        let checks = hard_checks(&contract);
        assert_eq!(
            checks,
            vec![CheckSettings {
                name: "db".into(),
                interval: Duration::from_millis(500),
                jitter: Duration::from_millis(50),
                rise: 3,
                fall: 1,
            }]
        );
        assert!(hard_checks(&serde_json::json!({})).is_empty());
    }

    #[test]
    fn a_rise_that_cannot_fit_in_an_up_phase_bounds_the_flap_to_one_fall() {
        let check = CheckSettings {
            name: "db".into(),
            interval: Duration::from_millis(500),
            jitter: Duration::from_millis(50),
            rise: 5,
            fall: 1,
        };
        // 1 s up: at most 2 polls 450 ms apart, plus the re-poll after a fall: 4 < 5.
        let (bound, reason) = falls_bound(&check, Duration::from_secs(1), 15);
        assert_eq!(bound, 1, "{reason}");
        assert!(reason.contains("falls once"), "{reason}");
        // rise 3 fits (4 ≥ 3): one fall per down phase.
        let check = CheckSettings { rise: 3, ..check };
        let (bound, reason) = falls_bound(&check, Duration::from_secs(1), 15);
        assert_eq!(bound, 15, "{reason}");
        let check = CheckSettings {
            interval: Duration::ZERO,
            ..check
        };
        assert_eq!(falls_bound(&check, Duration::from_secs(1), 15).0, 15);
    }
}
