//! `busy`: no fault at all, just `--concurrency` connections of order traffic as fast as the
//! fleet answers, for `--busy` — directly against one instance, then through HAProxy.
//!
//! Busy is not broken: a pool whose every connection is in use and cycling is doing its job. A
//! readiness check that calls it broken drains a healthy fleet at its busiest, and the health
//! check becomes the outage. Targets: no readiness transition, nothing refused by the balancer.
//!
//! The same drill measures what health checking costs: the throughput through this rig, health
//! checked as shipped, against a bare rig beside it (HAProxy without `check`, no prober,
//! instances that poll their database once an hour), in alternating segments (with, without,
//! without, with, …) so a drift of the machine's speed falls on both sides alike.

use super::{Context, balancer_changes};
use crate::DrillError;
use crate::fleet::{Events, Instance};
use crate::load::{LoadReport, LoadSpec};
use crate::readiness::Poller;
use crate::report::seconds;
use crate::rig::{Rig, RigSpec};
use serde::Serialize;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// How often the drill polls `/readyz` itself during a leg, as a kubelet's readiness probe with
/// `periodSeconds: 1` would, four times over.
const READINESS_POLL: Duration = Duration::from_millis(250);

/// One leg of the busy drill.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BusyLeg {
    /// Where the load went.
    pub target: String,
    /// What the load saw.
    pub load: LoadReport,
    /// Times readiness fell on the instances under load (their hard checks' own counters).
    pub readiness_transitions: u64,
    /// `/readyz` answers `fail` they gave, to anyone (HAProxy's checks included).
    pub readiness_failed_answers: u64,
    /// The drill's own `/readyz` polls of those instances.
    pub readiness_polls: u64,
    /// Of those, answered 200.
    pub readiness_polls_passed: u64,
    /// Times HAProxy took a server out of rotation.
    pub balancer_downs: u64,
    /// Retries HAProxy made.
    pub balancer_retries: u64,
    /// Restarts by the probers.
    pub restarts: u32,
}

/// Throughput with and without health checking.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckCost {
    /// Each segment's length.
    pub segment_s: f64,
    /// Successful requests per second in each segment with health checks, in order.
    pub with_checks: Vec<f64>,
    /// The same without.
    pub without_checks: Vec<f64>,
    /// Over all segments with health checks.
    pub with_checks_throughput: f64,
    /// Over all segments without.
    pub without_checks_throughput: f64,
    /// Each pair's 1 − with / without, in order.
    pub pair_costs: Vec<f64>,
    /// The median pair's: the share of throughput health checking costs (below 0 when the
    /// checked fleet happened to be faster: noise). The median of paired segments, because
    /// a machine shared with other work drifts in speed.
    pub cost: f64,
}

/// What the busy drill measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Busy {
    /// Connections, closed loop.
    pub concurrency: u32,
    /// Each leg's length.
    pub duration_s: f64,
    /// Straight at one instance.
    pub direct: BusyLeg,
    /// Through HAProxy at the whole fleet.
    pub balanced: BusyLeg,
    /// With against without health checks, when measured.
    pub check_cost: Option<CheckCost>,
}

impl Context<'_> {
    fn busy_spec(&self, duration: Duration) -> LoadSpec {
        LoadSpec {
            concurrency: self.config.concurrency,
            duration,
            ..LoadSpec::default()
        }
    }

    async fn busy_leg(
        &self,
        target: SocketAddr,
        label: String,
        observed: &[Arc<Instance>],
    ) -> Result<BusyLeg, DrillError> {
        self.progress.step(&format!(
            "busy: {} connections for {}s, {label}",
            self.config.concurrency,
            self.config.busy.as_secs_f64()
        ));
        let restarts_before = self.total_restarts();
        let figures_before = self.figures(observed).await;
        let stats_before = self.rig.stats().await;
        let pollers: Vec<Poller> = observed
            .iter()
            .map(|instance| Poller::start(instance.listen, READINESS_POLL, Duration::from_secs(1)))
            .collect();
        let load = crate::load::run(target, self.busy_spec(self.config.busy)).await;
        let (mut polls, mut passed) = (0, 0);
        for poller in pollers {
            let (count, ok) = poller.stop();
            polls += count;
            passed += ok;
        }
        let figures_after = self.figures(observed).await;
        let (downs, retries, _) = balancer_changes(&stats_before, &self.rig.stats().await);
        let changes = figures_after
            .iter()
            .zip(&figures_before)
            .map(|(after, before)| after.since(*before));
        let (transitions, failed_answers) = changes.fold((0, 0), |(down, failed), change| {
            (
                down + change.down_transitions,
                failed + change.failed_answers,
            )
        });
        let leg = BusyLeg {
            target: label,
            load,
            readiness_transitions: transitions,
            readiness_failed_answers: failed_answers,
            readiness_polls: polls,
            readiness_polls_passed: passed,
            balancer_downs: downs.iter().map(|(_, count)| count).sum(),
            balancer_retries: retries,
            restarts: self.total_restarts() - restarts_before,
        };
        self.progress.step(&format!(
            "busy: {}; readiness fell {} times, {passed} of {polls} polls 200, {} HAProxy downs",
            leg.load, leg.readiness_transitions, leg.balancer_downs
        ));
        Ok(leg)
    }

    /// Runs the busy drill.
    pub async fn busy(&self) -> Result<Busy, DrillError> {
        // Connections, caches and the database warm up first; none of it is counted.
        crate::load::run(self.rig.frontend(), self.busy_spec(Duration::from_secs(2))).await;
        let first = &self.rig.fleet[0];
        let direct = self
            .busy_leg(
                first.listen,
                format!("directly at {}", first.name),
                std::slice::from_ref(first),
            )
            .await?;
        self.rig.wait_healthy(Duration::from_secs(60)).await?;
        let balanced = self
            .busy_leg(
                self.rig.frontend(),
                format!("through HAProxy at {} instances", self.rig.fleet.len()),
                &self.rig.fleet,
            )
            .await?;
        let check_cost = if self.config.cost_segment.is_zero() || self.config.cost_pairs == 0 {
            None
        } else {
            Some(self.check_cost().await?)
        };
        Ok(Busy {
            concurrency: self.config.concurrency,
            duration_s: seconds(self.config.busy),
            direct,
            balanced,
            check_cost,
        })
    }

    async fn check_cost(&self) -> Result<CheckCost, DrillError> {
        self.progress.step(
            "busy: starting a bare fleet (no health checks) to measure what health checking costs",
        );
        let bare = Rig::start(
            self.config,
            RigSpec {
                name: "bare",
                database_url: self.database_url.as_deref(),
                health_checks: false,
                amqp_url: None,
                redis_url: None,
            },
            self.work_path,
            &Events::default(),
            self.progress,
        )
        .await?;
        let result = self.compare(&bare).await;
        bare.stop().await;
        result
    }

    async fn compare(&self, bare: &Rig) -> Result<CheckCost, DrillError> {
        bare.wait_healthy(Duration::from_secs(30)).await?;
        let segment = self.config.cost_segment;
        crate::load::run(bare.frontend(), self.busy_spec(Duration::from_secs(2))).await;
        let (mut with_checks, mut without_checks) = (Vec::new(), Vec::new());
        let (mut with_total, mut without_total) = (Vec::new(), Vec::new());
        for pair in 0..self.config.cost_pairs {
            // with, without, without, with, …: a drift over time weighs on both alike.
            let order = if pair % 2 == 0 {
                [true, false]
            } else {
                [false, true]
            };
            for checked in order {
                let target = if checked {
                    self.rig.frontend()
                } else {
                    bare.frontend()
                };
                let report = crate::load::run(target, self.busy_spec(segment)).await;
                self.progress.step(&format!(
                    "busy: {} health checks: {:.0} req/s served",
                    if checked { "with" } else { "without" },
                    report.throughput
                ));
                if checked {
                    with_checks.push(report.throughput);
                    with_total.push(report);
                } else {
                    without_checks.push(report.throughput);
                    without_total.push(report);
                }
            }
        }
        let throughput = |reports: &[LoadReport]| {
            let served: u64 = reports.iter().map(|report| report.succeeded).sum();
            let elapsed: f64 = reports
                .iter()
                .map(|report| report.elapsed.as_secs_f64())
                .sum();
            if elapsed > 0.0 {
                served as f64 / elapsed
            } else {
                0.0
            }
        };
        let with_checks_throughput = throughput(&with_total);
        let without_checks_throughput = throughput(&without_total);
        let pair_costs: Vec<f64> = with_checks
            .iter()
            .zip(&without_checks)
            .map(|(with, without)| {
                if *without > 0.0 {
                    1.0 - with / without
                } else {
                    0.0
                }
            })
            .collect();
        let mut sorted = pair_costs.clone();
        sorted.sort_by(f64::total_cmp);
        let cost = match sorted.len() {
            0 => 0.0,
            count if count % 2 == 1 => sorted[count / 2],
            count => (sorted[count / 2 - 1] + sorted[count / 2]) / 2.0,
        };
        self.progress.step(&format!(
            "busy: {with_checks_throughput:.0} req/s with health checks, {without_checks_throughput:.0} without: they cost {:.1}% (median of {} pairs)",
            cost * 100.0,
            pair_costs.len()
        ));
        Ok(CheckCost {
            segment_s: seconds(segment),
            with_checks,
            without_checks,
            with_checks_throughput,
            without_checks_throughput,
            pair_costs,
            cost,
        })
    }
}
