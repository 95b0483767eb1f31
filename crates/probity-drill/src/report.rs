//! What a drill run measured: JSON for machines, a table beside the published figures for
//! people, and the targets judged.

use crate::drills::broker_outage::BrokerOutage;
use crate::drills::busy::{Busy, BusyLeg};
use crate::drills::degraded::Degraded;
use crate::drills::flap::Flap;
use crate::drills::outage::DatabaseOutage;
use crate::drills::pool::PoolExhaustion;
use crate::drills::rollout::RolloutDuringOutage;
use crate::drills::sigterm::Sigterm;
use crate::drills::slow_boot::SlowBoot;
use crate::drills::stall::Stall;
use crate::drills::worker_wedge::WorkerWedge;
use crate::haproxy::CheckTiming;
use crate::kubelet::Probes;
use crate::targets::{Targets, Verdict};
use serde::{Serialize, Serializer};
use std::fmt::Write as _;
use std::time::Duration;

/// Serialises a duration as whole milliseconds.
pub fn millis<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_u64(duration.as_millis() as u64)
}

/// Serialises a duration as seconds (fractional).
pub fn secs<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(duration.as_secs_f64())
}

/// Serialises a duration as milliseconds with microsecond precision.
pub fn millis_f64<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64((duration.as_micros() as f64) / 1000.0)
}

/// Seconds with millisecond precision, for the report.
pub fn seconds(duration: Duration) -> f64 {
    (duration.as_millis() as f64) / 1000.0
}

/// The background load every drill but `busy` runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LoadShape {
    /// Connections.
    pub concurrency: u32,
    /// Requests per second in total, or `null` for closed loop.
    pub rate: Option<u32>,
}

/// A drill run's full report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Instances in the fleet.
    pub instances: usize,
    /// `sqlite` (one per instance) or `postgres` (shared).
    pub database: String,
    /// Each instance's pool size.
    pub pool_size: u32,
    /// HAProxy's health-check timing.
    pub haproxy: CheckTiming,
    /// The kubelet-style probes.
    pub probes: Probes,
    /// The background load.
    pub load: LoadShape,
    /// The fleet at full load, no fault.
    pub busy: Option<Busy>,
    /// Pool exhaustion on one instance.
    pub pool_exhaustion: Option<PoolExhaustion>,
    /// SIGTERM of one instance.
    pub sigterm: Option<Sigterm>,
    /// The shared database flapping.
    pub flap: Option<Flap>,
    /// Shared database outage.
    pub database_outage: Option<DatabaseOutage>,
    /// Runtime stall on one instance.
    pub stall: Option<Stall>,
    /// Slow boot.
    pub slow_boot: Option<SlowBoot>,
    /// One instance replaced during a shared database outage.
    pub rollout_during_outage: Option<RolloutDuringOutage>,
    /// One instance's outbox relay wedged.
    pub worker_wedge: Option<WorkerWedge>,
    /// The broker cut off from the fleet.
    pub broker_outage: Option<BrokerOutage>,
    /// Shared database outage with the cache serving reads.
    pub degraded: Option<Degraded>,
    /// Drills not run, with the reason.
    pub skipped: Vec<String>,
    /// The targets this run was held to.
    pub targets: Targets,
    /// Each target, judged.
    pub verdicts: Vec<Verdict>,
}

fn at(value: Option<f64>) -> String {
    value.map_or_else(|| "never".to_owned(), |s| format!("t+{s:.2}s"))
}

fn row(out: &mut String, cells: [&str; 4]) {
    let _ = writeln!(
        out,
        "  {:<38} {:<24} {:<20} {}",
        cells[0], cells[1], cells[2], cells[3]
    );
}

fn busy_rows(out: &mut String, leg: &BusyLeg) {
    let _ = writeln!(out, "  {}", leg.target);
    let load = &leg.load;
    row(
        out,
        [
            "  served",
            "",
            "",
            &format!(
                "{:.0} req/s, p50 {:.1} ms, p99 {:.1} ms",
                load.throughput,
                load.latency_p50.as_secs_f64() * 1000.0,
                load.latency_p99.as_secs_f64() * 1000.0
            ),
        ],
    );
    let statuses = load
        .statuses
        .iter()
        .map(|(status, count)| format!("{count} × {status}"))
        .collect::<Vec<_>>()
        .join(", ");
    row(out, ["  answers", "", "", &statuses]);
    row(
        out,
        [
            "  failed / refused by the balancer",
            "",
            "",
            &format!("{} / {}", load.failed, load.balancer_refusals()),
        ],
    );
    row(
        out,
        [
            "  readiness transitions",
            "",
            "",
            &leg.readiness_transitions.to_string(),
        ],
    );
    let share = if leg.readiness_polls == 0 {
        "no polls".to_owned()
    } else {
        format!(
            "{} of {} ({:.0}%)",
            leg.readiness_polls_passed,
            leg.readiness_polls,
            leg.readiness_polls_passed as f64 * 100.0 / leg.readiness_polls as f64
        )
    };
    row(out, ["  /readyz polls answered 200", "", "", &share]);
    row(
        out,
        [
            "  HAProxy took a server out",
            "",
            "",
            &leg.balancer_downs.to_string(),
        ],
    );
}

impl Report {
    /// The table: what the incident did, what the published fix did, and this run; then the
    /// targets.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "probity drill: {} checkout instances ({}, pool {}) behind HAProxy (deploy/haproxy/haproxy.cfg: httpchk /readyz, inter {}ms, rise {}, fall {})",
            self.instances,
            self.database,
            self.pool_size,
            self.haproxy.inter.as_millis(),
            self.haproxy.rise,
            self.haproxy.fall,
        );
        let _ = writeln!(
            out,
            "load: {} connections of POST /orders, {}",
            self.load.concurrency,
            self.load
                .rate
                .map_or_else(|| "closed loop".to_owned(), |rate| format!("{rate} req/s"))
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
        row(
            &mut out,
            ["", "the incident", "the published fix", "this run"],
        );
        if let Some(busy) = &self.busy {
            let _ = writeln!(
                out,
                "busy: no fault, {} connections for {:.0}s",
                busy.concurrency, busy.duration_s
            );
            busy_rows(&mut out, &busy.direct);
            busy_rows(&mut out, &busy.balanced);
            if let Some(cost) = &busy.check_cost {
                row(
                    &mut out,
                    [
                        "  health checks cost",
                        "",
                        "",
                        &format!(
                            "{:.1}% ({:.0} req/s with, {:.0} without; median of {} pairs, from {:.1}% to {:.1}%)",
                            cost.cost * 100.0,
                            cost.with_checks_throughput,
                            cost.without_checks_throughput,
                            cost.pair_costs.len(),
                            cost.pair_costs
                                .iter()
                                .copied()
                                .fold(f64::INFINITY, f64::min)
                                * 100.0,
                            cost.pair_costs
                                .iter()
                                .copied()
                                .fold(f64::NEG_INFINITY, f64::max)
                                * 100.0,
                        ),
                    ],
                );
            }
        }
        if let Some(pool) = &self.pool_exhaustion {
            let _ = writeln!(
                out,
                "pool exhausted on one instance (the pool-leak incident)"
            );
            row(
                &mut out,
                [
                    "/readyz 503",
                    "never (200)",
                    "t+4s",
                    &at(pool.time_to_unready_s),
                ],
            );
            row(
                &mut out,
                [
                    "out of rotation",
                    "manual, after 26 min",
                    "t+9s",
                    &at(pool.time_out_of_rotation_s),
                ],
            );
            let failed = format!(
                "{} of {} ({:.1}%, failing for {:.1}s), {} retried",
                pool.requests_failed,
                pool.requests_total,
                pool.fleet_error_rate * 100.0,
                pool.window.failing_s,
                pool.balancer_retries
            );
            row(
                &mut out,
                [
                    "requests failed",
                    "33.4% for 26 min",
                    "2.1% for 9s",
                    &failed,
                ],
            );
            let peak = format!("{:.1}%", pool.peak_error_rate_1s * 100.0);
            row(
                &mut out,
                ["peak fleet error rate (1 s)", "33.4%", "2.1% for 9s", &peak],
            );
            row(&mut out, ["restarts", "0", "0", &pool.restarts.to_string()]);
            row(
                &mut out,
                [
                    "back in rotation after release",
                    "",
                    "",
                    &at(pool.time_back_in_rotation_s),
                ],
            );
        }
        if let Some(sigterm) = &self.sigterm {
            let _ = writeln!(out, "one instance stopped (SIGTERM) and replaced");
            row(
                &mut out,
                [
                    "out of rotation",
                    "",
                    "",
                    &at(sigterm.time_out_of_rotation_s),
                ],
            );
            row(&mut out, ["exited", "", "", &at(sigterm.time_to_exit_s)]);
            row(
                &mut out,
                [
                    "replacement in rotation",
                    "",
                    "",
                    &at(sigterm.time_to_replacement_in_rotation_s),
                ],
            );
            let failed = format!(
                "{} of {} (failing for {:.1}s), {} retried",
                sigterm.requests_failed,
                sigterm.requests_total,
                sigterm.window.failing_s,
                sigterm.balancer_retries
            );
            row(&mut out, ["requests failed", "", "", &failed]);
            row(
                &mut out,
                ["restarts", "", "", &sigterm.restarts.to_string()],
            );
        }
        if let Some(flap) = &self.flap {
            let _ = writeln!(
                out,
                "database up {:.1}s / down {:.1}s for {:.0}s ({} cycles; the flapping incident)",
                flap.up_s, flap.down_s, flap.total_s, flap.cycles
            );
            for instance in &flap.instances {
                row(
                    &mut out,
                    [
                        &format!("readiness transitions, {}", instance.name),
                        "in and out every 30s",
                        "",
                        &format!(
                            "{} (bound {}), HAProxy downs {}",
                            instance.readiness_transitions,
                            flap.transitions_bound,
                            instance.balancer_downs
                        ),
                    ],
                );
            }
            let _ = writeln!(out, "    bound: {}", flap.bound_reason);
            row(
                &mut out,
                [
                    "requests failed",
                    "",
                    "",
                    &format!(
                        "{} of {} (failing for {:.1}s)",
                        flap.requests_failed, flap.requests_total, flap.window.failing_s
                    ),
                ],
            );
            row(
                &mut out,
                [
                    "whole fleet back after the flap",
                    "",
                    "",
                    &at(flap.time_to_full_fleet_after_flap_s),
                ],
            );
            row(&mut out, ["restarts", "", "", &flap.restarts.to_string()]);
        }
        if let Some(outage) = &self.database_outage {
            let _ = writeln!(
                out,
                "database unreachable for {:.0}s (the database-in-liveness incident)",
                outage.outage_s
            );
            row(
                &mut out,
                [
                    "restarts",
                    "3/3 killed, 3 cycles",
                    "0",
                    &outage.restarts.to_string(),
                ],
            );
            row(
                &mut out,
                [
                    "every instance drained",
                    "",
                    "3/3 drained",
                    &at(outage.time_to_all_drained_s),
                ],
            );
            row(
                &mut out,
                [
                    "traffic served after recovery",
                    "7 min outage",
                    "6s",
                    &at(outage.time_to_traffic_after_recovery_s),
                ],
            );
            row(
                &mut out,
                [
                    "whole fleet back after recovery",
                    "",
                    "",
                    &at(outage.time_to_full_fleet_after_recovery_s),
                ],
            );
            row(
                &mut out,
                [
                    "requests failed",
                    "",
                    "",
                    &outage.requests_failed.to_string(),
                ],
            );
        }
        if let Some(stall) = &self.stall {
            let _ = writeln!(
                out,
                "runtime stalled on one instance for {:.0}s (the published drill injects a deadlock)",
                stall.stall_s
            );
            row(
                &mut out,
                [
                    "liveness fails",
                    "",
                    "after 1 iteration",
                    &at(stall.time_to_liveness_failure_s),
                ],
            );
            row(
                &mut out,
                ["restarted", "", "t+32s", &at(stall.time_to_restart_s)],
            );
            row(
                &mut out,
                [
                    "back in rotation",
                    "",
                    "t+67s",
                    &at(stall.time_back_in_rotation_s),
                ],
            );
            row(
                &mut out,
                [
                    "requests failed",
                    "",
                    "",
                    &stall.requests_failed.to_string(),
                ],
            );
        }
        if let Some(boot) = &self.slow_boot {
            let _ = writeln!(
                out,
                "slow boot of {:.0}s, liveness window {:.0}s, startup budget {:.0}s",
                boot.boot_s, boot.liveness_window_s, boot.startup_budget_s
            );
            row(
                &mut out,
                [
                    "restarts during boot",
                    "crash loop (35s boot)",
                    "0",
                    &boot.restarts.to_string(),
                ],
            );
            row(&mut out, ["started", "", "", &at(boot.time_to_started_s)]);
            row(
                &mut out,
                [
                    "startup probes failed meanwhile",
                    "",
                    "",
                    &boot.startup_probe_failures.to_string(),
                ],
            );
        }
        if let Some(rollout) = &self.rollout_during_outage {
            let _ = writeln!(
                out,
                "one instance replaced during a {:.0}s database outage, startup budget {:.0}s \
                 (the restart-storm incident)",
                rollout.outage_s, rollout.startup_budget_s
            );
            row(
                &mut out,
                [
                    "restarts",
                    "killed again: 14 min",
                    "",
                    &rollout.restarts.to_string(),
                ],
            );
            row(
                &mut out,
                [
                    "new instance started",
                    "",
                    "",
                    &at(rollout.time_to_started_s),
                ],
            );
            row(
                &mut out,
                [
                    "kept out of rotation meanwhile",
                    "",
                    "",
                    if rollout.kept_out_of_rotation {
                        "yes"
                    } else {
                        "no"
                    },
                ],
            );
            row(
                &mut out,
                [
                    "new instance ready after recovery",
                    "",
                    "",
                    &at(rollout.time_to_new_instance_ready_s),
                ],
            );
            row(
                &mut out,
                [
                    "new instance in rotation after recovery",
                    "",
                    "",
                    &at(rollout.time_to_new_instance_in_rotation_s),
                ],
            );
            row(
                &mut out,
                [
                    "whole fleet back after recovery",
                    "",
                    "",
                    &at(rollout.time_to_full_fleet_after_recovery_s),
                ],
            );
        }
        if let Some(wedge) = &self.worker_wedge {
            let _ = writeln!(
                out,
                "one instance's outbox relay wedged, heartbeat bound {:.0}s (a wedged worker)",
                wedge.max_silence_s
            );
            row(
                &mut out,
                [
                    "liveness fails",
                    "never (runtime healthy)",
                    "",
                    &at(wedge.time_to_liveness_failure_s),
                ],
            );
            row(
                &mut out,
                ["restarted", "", "", &at(wedge.time_to_restart_s)],
            );
            row(
                &mut out,
                [
                    "back in rotation",
                    "",
                    "",
                    &at(wedge.time_back_in_rotation_s),
                ],
            );
            row(
                &mut out,
                [
                    "orders stored / received by the broker",
                    "",
                    "",
                    &format!("{} / {}", wedge.orders, wedge.published),
                ],
            );
            row(
                &mut out,
                [
                    "lost / duplicated",
                    "",
                    "",
                    &format!("{} / {}", wedge.lost, wedge.duplicated),
                ],
            );
        }
        if let Some(outage) = &self.broker_outage {
            let _ = writeln!(
                out,
                "broker unreachable for {:.0}s, relays' heartbeat bound {:.0}s",
                outage.outage_s, outage.max_silence_s
            );
            row(
                &mut out,
                [
                    "restarts",
                    "fleet restarted",
                    "0",
                    &outage.restarts.to_string(),
                ],
            );
            row(
                &mut out,
                [
                    "liveness probes failed",
                    "",
                    "",
                    &outage.liveness_failures.to_string(),
                ],
            );
            row(
                &mut out,
                [
                    "requests served / failed meanwhile",
                    "",
                    "",
                    &format!("{} / {}", outage.requests_served, outage.requests_failed),
                ],
            );
            row(
                &mut out,
                [
                    "outboxes drained after recovery",
                    "",
                    "",
                    &at(outage.time_to_drained_s),
                ],
            );
            row(
                &mut out,
                [
                    "orders stored / received / lost / duplicated",
                    "",
                    "",
                    &format!(
                        "{} / {} / {} / {}",
                        outage.orders, outage.published, outage.lost, outage.duplicated
                    ),
                ],
            );
        }
        if let Some(degraded) = &self.degraded {
            let _ = writeln!(
                out,
                "database unreachable for {:.0}s, the cache up: {} cached orders read (the database-outage incident's degraded mode)",
                degraded.outage_s, degraded.cached_orders
            );
            row(
                &mut out,
                [
                    "restarts",
                    "12/12 killed",
                    "0",
                    &degraded.restarts.to_string(),
                ],
            );
            row(
                &mut out,
                [
                    "reads of cached orders served",
                    "14 min outage",
                    "served stale",
                    &format!(
                        "{:.2}% ({} of {})",
                        degraded.reads_served_share * 100.0,
                        degraded.reads_served,
                        degraded.reads
                    ),
                ],
            );
            row(
                &mut out,
                [
                    "of them marked stale (x-degraded: db)",
                    "",
                    "",
                    &degraded.reads_stale.to_string(),
                ],
            );
            row(
                &mut out,
                [
                    "writes shed (503, not processed)",
                    "",
                    "",
                    &format!(
                        "{} of {} ({} refused by HAProxy, {} failed otherwise)",
                        degraded.writes_shed,
                        degraded.writes,
                        degraded.writes_refused_by_balancer,
                        degraded.writes_failed_otherwise
                    ),
                ],
            );
            row(
                &mut out,
                [
                    "fewest instances in rotation",
                    "",
                    "",
                    &degraded.fewest_in_rotation.to_string(),
                ],
            );
            row(
                &mut out,
                [
                    "degraded after the cut",
                    "",
                    "",
                    &at(degraded.time_to_degraded_s),
                ],
            );
            row(
                &mut out,
                [
                    "reads fresh again after recovery",
                    "",
                    "",
                    &at(degraded.time_to_fresh_s),
                ],
            );
        }
        for skipped in &self.skipped {
            let _ = writeln!(out, "skipped: {skipped}");
        }
        if !self.verdicts.is_empty() {
            let passed = self
                .verdicts
                .iter()
                .filter(|verdict| verdict.passed)
                .count();
            let _ = writeln!(out, "\ntargets: {passed} of {} met", self.verdicts.len());
            for verdict in &self.verdicts {
                let _ = writeln!(
                    out,
                    "  {} {:<10} {:<54} {}",
                    if verdict.passed { "✓" } else { "✗" },
                    verdict.drill,
                    verdict.target,
                    verdict.measured
                );
            }
        }
        out
    }
}
