//! What each drill must show, and whether this run showed it: the drill as a gate.
//!
//! Some targets are settings ([`Targets`], the `--max-…` flags); others are what the drill
//! exists to prove and are not negotiable: a pool leak, an outage, a flap, a SIGTERM, a slow
//! boot and a busy fleet restart nothing; a stall restarts exactly the stalled instance; a flap
//! changes readiness no more often than the instance's hysteresis allows.

use crate::report::Report;
use serde::Serialize;
use std::time::Duration;

/// The adjustable targets.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Targets {
    /// `pool`: leak → out of rotation. The default, 2 s, is what the mechanism allows with
    /// checkout's 500 ms acquire timeout: a timed-out request counts as a failure only when no
    /// connection came back during its wait (busy is not broken), so the reports start between
    /// one and two acquire timeouts after the leak, and HAProxy's next check (250 ms) follows.
    #[serde(serialize_with = "crate::report::secs")]
    pub max_time_to_drain: Duration,
    /// `busy`, `pool`, `sigterm`: requests the client saw fail.
    pub max_failed_requests: u64,
    /// `busy`: times readiness fell, per leg.
    pub max_readiness_transitions: u64,
    /// `busy`: requests the balancer refused or failed itself.
    pub max_refused: u64,
    /// `busy`: the share of throughput health checking may cost (0.03 = 3%).
    pub max_check_cost: f64,
    /// `outage`: database back → the first request served.
    #[serde(serialize_with = "crate::report::secs")]
    pub max_time_to_traffic: Duration,
    /// `rollout-during-outage`: database back → the instance started during the outage is in
    /// rotation.
    #[serde(serialize_with = "crate::report::secs")]
    pub max_time_to_ready: Duration,
    /// `degraded`: the share of reads of cached orders served during the outage (0.99 = 99%).
    pub min_reads_served: f64,
    /// `degraded`: database back → reads fresh again (no longer marked stale).
    #[serde(serialize_with = "crate::report::secs")]
    pub max_time_to_fresh: Duration,
}

impl Default for Targets {
    fn default() -> Self {
        Targets {
            max_time_to_drain: Duration::from_secs(2),
            max_failed_requests: 0,
            max_readiness_transitions: 0,
            max_refused: 0,
            max_check_cost: 0.03,
            max_time_to_traffic: Duration::from_secs(3),
            max_time_to_ready: Duration::from_secs(2),
            min_reads_served: 0.99,
            max_time_to_fresh: Duration::from_secs(2),
        }
    }
}

/// One target and how this run fared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// The drill (`pool`, `busy`, …).
    pub drill: &'static str,
    /// The target, in words (`out of rotation ≤ 1s`).
    pub target: String,
    /// What this run measured.
    pub measured: String,
    /// Whether it met the target.
    pub passed: bool,
}

impl Verdict {
    fn new(drill: &'static str, target: String, measured: String, passed: bool) -> Self {
        Verdict {
            drill,
            target,
            measured,
            passed,
        }
    }
}

fn duration(seconds: f64) -> String {
    format!("{seconds:.2}s")
}

fn limit(duration: Duration) -> String {
    let seconds = duration.as_secs_f64();
    if seconds.fract() == 0.0 {
        format!("{seconds:.0}s")
    } else {
        format!("{seconds}s")
    }
}

fn within(drill: &'static str, what: &str, measured: Option<f64>, max: Duration) -> Verdict {
    Verdict::new(
        drill,
        format!("{what} ≤ {}", limit(max)),
        measured.map_or_else(|| "never".to_owned(), duration),
        measured.is_some_and(|value| value <= max.as_secs_f64() + 1e-9),
    )
}

fn at_most(drill: &'static str, what: &str, measured: u64, max: u64) -> Verdict {
    Verdict::new(
        drill,
        format!("{what} ≤ {max}"),
        measured.to_string(),
        measured <= max,
    )
}

fn exactly(drill: &'static str, what: &str, measured: u64, expected: u64) -> Verdict {
    Verdict::new(
        drill,
        format!("{what} = {expected}"),
        measured.to_string(),
        measured == expected,
    )
}

impl Targets {
    /// Every target the drills in `report` have, judged.
    pub fn evaluate(&self, report: &Report) -> Vec<Verdict> {
        let mut verdicts = Vec::new();
        if let Some(busy) = &report.busy {
            for (leg, name) in [
                (&busy.direct, "direct"),
                (&busy.balanced, "through HAProxy"),
            ] {
                verdicts.push(at_most(
                    "busy",
                    &format!("readiness transitions ({name})"),
                    leg.readiness_transitions,
                    self.max_readiness_transitions,
                ));
                verdicts.push(exactly(
                    "busy",
                    &format!("/readyz polls not answered 200 ({name})"),
                    leg.readiness_polls - leg.readiness_polls_passed,
                    0,
                ));
                verdicts.push(at_most(
                    "busy",
                    &format!("failed requests ({name})"),
                    leg.load.failed,
                    self.max_failed_requests,
                ));
                verdicts.push(exactly(
                    "busy",
                    &format!("restarts ({name})"),
                    leg.restarts.into(),
                    0,
                ));
            }
            verdicts.push(at_most(
                "busy",
                "requests refused by the balancer",
                busy.balanced.load.balancer_refusals(),
                self.max_refused,
            ));
            verdicts.push(at_most(
                "busy",
                "HAProxy took a server out",
                busy.balanced.balancer_downs,
                self.max_readiness_transitions,
            ));
            if let Some(cost) = &busy.check_cost {
                verdicts.push(Verdict::new(
                    "busy",
                    format!(
                        "health checks cost ≤ {:.1}% of throughput",
                        self.max_check_cost * 100.0
                    ),
                    format!(
                        "{:.1}% ({:.0} req/s with, {:.0} without)",
                        cost.cost * 100.0,
                        cost.with_checks_throughput,
                        cost.without_checks_throughput
                    ),
                    cost.cost <= self.max_check_cost,
                ));
            }
        }
        if let Some(pool) = &report.pool_exhaustion {
            verdicts.push(within(
                "pool",
                "out of rotation",
                pool.time_out_of_rotation_s,
                self.max_time_to_drain,
            ));
            verdicts.push(at_most(
                "pool",
                "failed requests",
                pool.requests_failed,
                self.max_failed_requests,
            ));
            verdicts.push(exactly("pool", "restarts", pool.restarts.into(), 0));
            verdicts.push(Verdict::new(
                "pool",
                "back in rotation after release".to_owned(),
                pool.time_back_in_rotation_s
                    .map_or_else(|| "never".to_owned(), duration),
                pool.time_back_in_rotation_s.is_some(),
            ));
        }
        if let Some(sigterm) = &report.sigterm {
            verdicts.push(at_most(
                "sigterm",
                "failed requests",
                sigterm.requests_failed,
                self.max_failed_requests,
            ));
            verdicts.push(exactly("sigterm", "restarts", sigterm.restarts.into(), 0));
            verdicts.push(Verdict::new(
                "sigterm",
                "replacement in rotation".to_owned(),
                sigterm
                    .time_to_replacement_in_rotation_s
                    .map_or_else(|| "never".to_owned(), duration),
                sigterm.time_to_replacement_in_rotation_s.is_some(),
            ));
        }
        if let Some(flap) = &report.flap {
            for instance in &flap.instances {
                verdicts.push(at_most(
                    "flap",
                    &format!("readiness transitions of {}", instance.name),
                    instance.readiness_transitions,
                    flap.transitions_bound.into(),
                ));
            }
            verdicts.push(exactly("flap", "restarts", flap.restarts.into(), 0));
            verdicts.push(Verdict::new(
                "flap",
                "whole fleet back after the flap".to_owned(),
                flap.time_to_full_fleet_after_flap_s
                    .map_or_else(|| "never".to_owned(), duration),
                flap.time_to_full_fleet_after_flap_s.is_some(),
            ));
        }
        if let Some(outage) = &report.database_outage {
            verdicts.push(exactly("outage", "restarts", outage.restarts.into(), 0));
            verdicts.push(within(
                "outage",
                "traffic served after recovery",
                outage.time_to_traffic_after_recovery_s,
                self.max_time_to_traffic,
            ));
        }
        if let Some(degraded) = &report.degraded {
            let drill = "degraded";
            verdicts.push(exactly(drill, "restarts", degraded.restarts.into(), 0));
            verdicts.push(Verdict::new(
                drill,
                format!(
                    "reads of cached orders served ≥ {}%",
                    self.min_reads_served * 100.0
                ),
                format!("{:.2}%", degraded.reads_served_share * 100.0),
                degraded.reads > 0 && degraded.reads_served_share + 1e-9 >= self.min_reads_served,
            ));
            verdicts.push(exactly(
                drill,
                "instances drained",
                (report.instances.saturating_sub(degraded.fewest_in_rotation)) as u64,
                0,
            ));
            verdicts.push(within(
                drill,
                "reads fresh after recovery",
                degraded.time_to_fresh_s,
                self.max_time_to_fresh,
            ));
        }
        if let Some(stall) = &report.stall {
            verdicts.push(exactly(
                "stall",
                "restarts (the stalled instance)",
                stall.restarts.into(),
                1,
            ));
            verdicts.push(Verdict::new(
                "stall",
                "back in rotation after the restart".to_owned(),
                stall
                    .time_back_in_rotation_s
                    .map_or_else(|| "never".to_owned(), duration),
                stall.time_back_in_rotation_s.is_some(),
            ));
        }
        if let Some(boot) = &report.slow_boot {
            verdicts.push(exactly(
                "slow-boot",
                "restarts during the boot",
                boot.restarts.into(),
                0,
            ));
            verdicts.push(Verdict::new(
                "slow-boot",
                "started".to_owned(),
                boot.time_to_started_s
                    .map_or_else(|| "never".to_owned(), duration),
                boot.time_to_started_s.is_some(),
            ));
        }
        if let Some(wedge) = &report.worker_wedge {
            let drill = "worker-wedge";
            verdicts.push(exactly(
                drill,
                "restarts (the wedged instance)",
                wedge.restarts.into(),
                1,
            ));
            verdicts.push(Verdict::new(
                drill,
                "back in rotation after the restart".to_owned(),
                wedge
                    .time_back_in_rotation_s
                    .map_or_else(|| "never".to_owned(), duration),
                wedge.time_back_in_rotation_s.is_some(),
            ));
            verdicts.push(exactly(drill, "orders lost", wedge.lost, 0));
            verdicts.push(exactly(
                drill,
                "orders published twice",
                wedge.duplicated,
                0,
            ));
            verdicts.push(exactly(
                drill,
                "orders left in an outbox",
                wedge.unpublished,
                0,
            ));
        }
        if let Some(outage) = &report.broker_outage {
            let drill = "broker-outage";
            verdicts.push(exactly(drill, "restarts", outage.restarts.into(), 0));
            verdicts.push(exactly(
                drill,
                "liveness probes failed",
                outage.liveness_failures.into(),
                0,
            ));
            verdicts.push(Verdict::new(
                drill,
                "outboxes drained after the broker's return".to_owned(),
                outage
                    .time_to_drained_s
                    .map_or_else(|| "never".to_owned(), duration),
                outage.time_to_drained_s.is_some(),
            ));
            verdicts.push(exactly(drill, "orders lost", outage.lost, 0));
            // Delivery is at least once: a publish whose confirm the cut swallowed is sent again
            // (consumers drop it by message id). Each relay has one publish in flight.
            verdicts.push(at_most(
                drill,
                "orders published twice (one in flight per relay)",
                outage.duplicated,
                report.instances as u64,
            ));
        }
        if let Some(rollout) = &report.rollout_during_outage {
            let drill = "rollout-during-outage";
            verdicts.push(exactly(drill, "restarts", rollout.restarts.into(), 0));
            verdicts.push(Verdict::new(
                drill,
                "started during the outage".to_owned(),
                rollout
                    .time_to_started_s
                    .map_or_else(|| "never".to_owned(), duration),
                rollout.time_to_started_s.is_some(),
            ));
            verdicts.push(Verdict::new(
                drill,
                "out of rotation while the database is away".to_owned(),
                if rollout.kept_out_of_rotation {
                    "out of rotation".to_owned()
                } else {
                    "in rotation without its database".to_owned()
                },
                rollout.kept_out_of_rotation,
            ));
            verdicts.push(within(
                drill,
                "new instance ready after recovery",
                rollout.time_to_new_instance_ready_s,
                self.max_time_to_ready,
            ));
        }
        verdicts
    }
}

/// The verdicts that missed, as one line each: `pool: out of rotation ≤ 1s (measured 1.42s)`.
pub fn missed(verdicts: &[Verdict]) -> Vec<String> {
    verdicts
        .iter()
        .filter(|verdict| !verdict.passed)
        .map(|verdict| {
            format!(
                "{}: {} (measured {})",
                verdict.drill, verdict.target, verdict.measured
            )
        })
        .collect()
}
