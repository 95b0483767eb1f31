//! What a drill measured: JSON for machines, a before/after table for people.

use crate::haproxy::CheckTiming;
use crate::kubelet::Probes;
use serde::{Serialize, Serializer};
use std::fmt::Write as _;
use std::time::Duration;

/// Serialises a duration as whole milliseconds.
pub fn millis<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_u64(duration.as_millis() as u64)
}

/// Seconds with millisecond precision, for the report.
pub fn seconds(duration: Duration) -> f64 {
    (duration.as_millis() as f64) / 1000.0
}

/// One instance's pool exhausted by a leak.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PoolExhaustion {
    /// Leak → the instance's `/readyz` answers 503.
    pub time_to_unready_s: Option<f64>,
    /// Leak → HAProxy marks it DOWN.
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
    /// Restarts anywhere in the fleet during the drill (must be 0).
    pub restarts: u32,
    /// Release → HAProxy marks it UP again (the rise count at work).
    pub time_back_in_rotation_s: Option<f64>,
}

/// The shared database unreachable.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DatabaseOutage {
    /// How long the database was cut off.
    pub outage_s: f64,
    /// Restarts anywhere in the fleet (must be 0).
    pub restarts: u32,
    /// Requests that failed from the cut until traffic was served again.
    pub requests_failed: u64,
    /// Cut → every instance out of rotation.
    pub time_to_all_drained_s: Option<f64>,
    /// Database back → the first request served through HAProxy.
    pub time_to_traffic_after_recovery_s: Option<f64>,
    /// Database back → every instance in rotation.
    pub time_to_full_fleet_after_recovery_s: Option<f64>,
}

/// One instance's runtime stalled (every worker blocked).
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
    /// Restarts in the fleet (1 expected: the stalled instance).
    pub restarts: u32,
}

/// A boot longer than the liveness window.
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

/// A drill's full report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Instances in the fleet.
    pub instances: usize,
    /// `sqlite` (one per instance) or `postgres` (shared).
    pub database: String,
    /// HAProxy's health-check timing.
    pub haproxy: CheckTiming,
    /// The kubelet-style probes.
    pub probes: Probes,
    /// Requests per second the load generator aimed for.
    pub load_rps: u32,
    /// Requests per second actually served before the first drill.
    pub baseline_rps: f64,
    /// Pool exhaustion on one instance.
    pub pool_exhaustion: Option<PoolExhaustion>,
    /// Shared database outage.
    pub database_outage: Option<DatabaseOutage>,
    /// Runtime stall on one instance.
    pub stall: Option<Stall>,
    /// Slow boot.
    pub slow_boot: Option<SlowBoot>,
    /// Drills not run, with the reason.
    pub skipped: Vec<String>,
}

fn at(value: Option<f64>) -> String {
    value.map_or_else(|| "never".to_owned(), |s| format!("t+{s:.2}s"))
}

fn within(value: Option<f64>, limit: f64) -> &'static str {
    match value {
        Some(v) if v <= limit => "✓",
        _ => "✗",
    }
}

impl Report {
    /// The before/after table: the seed's incident, the seed's fix, and this run.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "probity drill: {} checkout instances ({}) behind HAProxy (httpchk /readyz, inter {}ms, rise {}, fall {}), {} req/s",
            self.instances,
            self.database,
            self.haproxy.inter.as_millis(),
            self.haproxy.rise,
            self.haproxy.fall,
            self.load_rps
        );
        let _ = writeln!(
            out,
            "kubelet-style probes: startup {}s × {}, liveness {}s × {} (timeout {}s)\n",
            seconds(self.probes.startup.period),
            self.probes.startup.failure_threshold,
            seconds(self.probes.liveness.period),
            self.probes.liveness.failure_threshold,
            seconds(self.probes.liveness.timeout)
        );
        let row = |out: &mut String, cells: [&str; 5]| {
            let _ = writeln!(
                out,
                "  {:<36} {:<22} {:<20} {:<18} {}",
                cells[0], cells[1], cells[2], cells[3], cells[4]
            );
        };
        row(
            &mut out,
            [
                "",
                "seed 000, before",
                "seed 000, after",
                "this run",
                "target",
            ],
        );
        if let Some(pool) = &self.pool_exhaustion {
            let _ = writeln!(out, "pool exhausted on one instance");
            row(
                &mut out,
                [
                    "/readyz 503",
                    "never (200)",
                    "t+4s",
                    &at(pool.time_to_unready_s),
                    "",
                ],
            );
            let target = format!("≤ 3s {}", within(pool.time_out_of_rotation_s, 3.0));
            row(
                &mut out,
                [
                    "out of rotation",
                    "manual, after 26 min",
                    "t+9s",
                    &at(pool.time_out_of_rotation_s),
                    &target,
                ],
            );
            let failed = format!(
                "{} of {} ({:.1}%)",
                pool.requests_failed,
                pool.requests_total,
                pool.fleet_error_rate * 100.0
            );
            row(
                &mut out,
                ["requests failed", "33.4% for 26 min", "", &failed, ""],
            );
            let peak = format!("{:.1}%", pool.peak_error_rate_1s * 100.0);
            row(
                &mut out,
                [
                    "peak fleet error rate (1 s)",
                    "33.4%",
                    "2.1% for 9s",
                    &peak,
                    "",
                ],
            );
            let restarts = pool.restarts.to_string();
            let target = format!("0 {}", if pool.restarts == 0 { "✓" } else { "✗" });
            row(&mut out, ["restarts", "0", "0", &restarts, &target]);
            row(
                &mut out,
                [
                    "back in rotation after release",
                    "",
                    "",
                    &at(pool.time_back_in_rotation_s),
                    "",
                ],
            );
        }
        if let Some(outage) = &self.database_outage {
            let _ = writeln!(out, "database unreachable for {:.0}s", outage.outage_s);
            let restarts = outage.restarts.to_string();
            let target = format!("0 {}", if outage.restarts == 0 { "✓" } else { "✗" });
            row(
                &mut out,
                ["restarts", "3/3 killed, 3 cycles", "0", &restarts, &target],
            );
            row(
                &mut out,
                [
                    "every instance drained",
                    "",
                    "3/3 drained",
                    &at(outage.time_to_all_drained_s),
                    "",
                ],
            );
            let target = format!(
                "≤ 3s {}",
                within(outage.time_to_traffic_after_recovery_s, 3.0)
            );
            row(
                &mut out,
                [
                    "traffic served after recovery",
                    "7 min outage",
                    "6s",
                    &at(outage.time_to_traffic_after_recovery_s),
                    &target,
                ],
            );
            row(
                &mut out,
                [
                    "whole fleet back after recovery",
                    "",
                    "",
                    &at(outage.time_to_full_fleet_after_recovery_s),
                    "",
                ],
            );
            let failed = outage.requests_failed.to_string();
            row(&mut out, ["requests failed", "", "", &failed, ""]);
        }
        if let Some(stall) = &self.stall {
            let _ = writeln!(
                out,
                "runtime stalled on one instance for {:.0}s (the seed injects a deadlock)",
                stall.stall_s
            );
            row(
                &mut out,
                [
                    "liveness fails",
                    "",
                    "after 1 iteration",
                    &at(stall.time_to_liveness_failure_s),
                    "",
                ],
            );
            row(
                &mut out,
                ["restarted", "", "t+32s", &at(stall.time_to_restart_s), ""],
            );
            row(
                &mut out,
                [
                    "back in rotation",
                    "",
                    "t+67s",
                    &at(stall.time_back_in_rotation_s),
                    "",
                ],
            );
            let failed = stall.requests_failed.to_string();
            row(&mut out, ["requests failed", "", "", &failed, ""]);
        }
        if let Some(boot) = &self.slow_boot {
            let _ = writeln!(
                out,
                "slow boot of {:.0}s, liveness window {:.0}s, startup budget {:.0}s",
                boot.boot_s, boot.liveness_window_s, boot.startup_budget_s
            );
            let restarts = boot.restarts.to_string();
            let target = format!("0 {}", if boot.restarts == 0 { "✓" } else { "✗" });
            row(
                &mut out,
                [
                    "restarts during boot",
                    "crash loop (35s boot)",
                    "0",
                    &restarts,
                    &target,
                ],
            );
            row(
                &mut out,
                ["started", "", "", &at(boot.time_to_started_s), ""],
            );
            let failures = boot.startup_probe_failures.to_string();
            row(
                &mut out,
                ["startup probes failed meanwhile", "", "", &failures, ""],
            );
        }
        for skipped in &self.skipped {
            let _ = writeln!(out, "skipped: {skipped}");
        }
        out
    }
}
