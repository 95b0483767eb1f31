//! What sends traffic to the pods: one [`Router`] per load-balancer model.
//!
//! A router decides which pods are members of rotation and how requests are spread over
//! them ([`Split`]). Some follow the pods' readiness through the endpoints (a Kubernetes
//! Service, a consistent-hash ring fed from endpoints), others run their own health checks
//! against a pod endpoint (HAProxy, Envoy, an AWS ALB). [`Rotation`] drives both kinds;
//! each model's rules live in its own module.

mod alb;
mod consistent_hash;
mod envoy;
mod haproxy;
mod kubernetes_service;

use super::effects::Effects;
use super::queue::Event;
use super::traffic::{Split, Traffic};
use crate::scenario::{Handler, Routing, Scenario};
use crate::time::Millis;
use std::fmt;

/// A load balancer (or kube-proxy) in front of the fleet.
pub(crate) trait Router: fmt::Debug {
    /// The name shown in reports.
    fn name(&self) -> &'static str;

    /// Whether the router counts `pod` healthy (an operator's manual drain comes on top).
    fn healthy(&self, pod: usize) -> bool;

    /// How requests are spread when `members` of `pods` are members of rotation.
    fn split(&self, members: usize, pods: usize) -> Split;

    /// A member's weight in [`Split::Members`].
    fn weight(&self, _pod: usize) -> f64 {
        1.0
    }

    /// Membership of `pod` changed; pods whose weight changed as a result are added to
    /// `reweighted` (a hash ring hands a leaving pod's users to its neighbours).
    fn membership_changed(&mut self, _pod: usize, _member: bool, _reweighted: &mut Vec<usize>) {}

    /// The delay with which the pods' readiness reaches the router, for routers that follow
    /// the Service's endpoints.
    fn propagation(&self) -> Option<Millis> {
        None
    }

    /// A pod's readiness reached the endpoints; returns whether the router's view changed.
    fn endpoint_update(&mut self, _pod: usize, _ready: bool) -> bool {
        false
    }

    /// The router's own health check, for routers that run one.
    fn health_check(&self) -> Option<HealthCheck> {
        None
    }

    /// Sets a pod's check state at the start of the run: a pod that has long been running
    /// (`steady`) or a new one.
    fn start_checking(&mut self, _pod: usize, _steady: bool) {}

    /// The epoch of the pod's check in flight; results of other epochs are stale.
    fn check_epoch(&self, _pod: usize) -> u32 {
        0
    }

    /// Starts a check of `pod`: returns its epoch.
    fn begin_check(&mut self, _pod: usize) -> u32 {
        0
    }

    /// Records a check's result; returns the time to the next check.
    fn record_check(&mut self, _pod: usize, _result: CheckResult) -> Millis {
        Millis::MAX
    }

    /// Outlier detection: the time until a pod failing every request is ejected, at
    /// `requests_per_second` to it, if the router ejects and the pod is not ejected or about
    /// to be. Marks the ejection pending and returns its epoch.
    fn eject_after(&mut self, _pod: usize, _requests_per_second: f64) -> Option<(Millis, u32)> {
        None
    }

    /// The pending ejection of `pod` fires: returns how long it lasts, if it happens.
    fn eject(&mut self, _pod: usize, _epoch: u32) -> Option<(Millis, u32)> {
        None
    }

    /// Whether every pod's membership may have changed since the last call (Envoy fed from
    /// endpoints entering or leaving panic); clears the flag.
    fn take_all_changed(&mut self) -> bool {
        false
    }

    /// Success-rate outlier detection's settings, when the router runs it.
    fn success_rate(&self) -> Option<crate::scenario::SuccessRate> {
        None
    }

    /// Ejects `pod` now (a success-rate sweep found it an outlier): how long for, if the
    /// ejection is allowed.
    fn eject_now(&mut self, _pod: usize) -> Option<(Millis, u32)> {
        None
    }

    /// An ejection ends: returns whether the pod came back.
    fn eject_end(&mut self, _pod: usize, _epoch: u32) -> bool {
        false
    }
}

/// A router's health check of each pod.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HealthCheck {
    /// The endpoint it calls.
    pub(crate) handler: Handler,
    /// Its timeout.
    pub(crate) timeout: Millis,
    /// Checks per round (an ALB's nodes each check every target).
    pub(crate) checkers: u32,
    /// The interval the first check's phase is drawn from.
    pub(crate) interval: Millis,
}

/// One health check's result.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CheckResult {
    /// It passed.
    pub(crate) success: bool,
    /// It failed with an answer (a non-200 status) rather than a timeout.
    pub(crate) definitive: bool,
}

/// Consecutive results of a router's own checks of one pod.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CheckRuns {
    pub(crate) healthy: bool,
    /// Checks recorded so far (capped), or HAProxy's health counter.
    pub(crate) health: u32,
    pub(crate) successes: u32,
    pub(crate) failures: u32,
    pub(crate) epoch: u32,
}

impl CheckRuns {
    /// Counts one result in the runs of successes and failures.
    pub(crate) fn count(&mut self, success: bool) {
        if success {
            self.successes += 1;
            self.failures = 0;
        } else {
            self.failures += 1;
            self.successes = 0;
        }
    }
}

/// A seed mixed into a stream of its own (splitmix64).
pub(crate) fn mix_seed(seed: u64) -> u64 {
    consistent_hash::mix(seed)
}

/// The router a scenario describes.
pub(crate) fn build(scenario: &Scenario, seed: u64) -> Box<dyn Router> {
    let pods = scenario.fleet.replicas;
    match &scenario.routing {
        Routing::KubernetesService { propagation } => Box::new(
            kubernetes_service::KubernetesService::new(pods, *propagation),
        ),
        Routing::Haproxy(settings) => Box::new(haproxy::Haproxy::new(pods, *settings)),
        Routing::Envoy(settings) => Box::new(envoy::Envoy::new(pods, *settings)),
        Routing::Alb(settings) => Box::new(alb::Alb::new(pods, *settings)),
        Routing::ConsistentHash {
            virtual_nodes,
            membership,
            propagation,
        } => Box::new(consistent_hash::ConsistentHash::new(
            pods,
            *virtual_nodes,
            *membership,
            *propagation,
            scenario.requests.users,
            seed,
        )),
    }
}

/// The routing part of the fleet: the load-balancer model, its own checks of the pods, the
/// endpoints it follows and its outlier detection. Its handlers return what they change as
/// [`Effects`]; the engine calls the pods for a check's answer.
#[derive(Debug)]
pub(super) struct Rotation {
    pub(super) router: Box<dyn Router>,
    /// Each pod's requests and failures at the last success-rate sweep.
    outlier_marks: Vec<(f64, f64)>,
}

impl Rotation {
    /// The router a scenario describes, before any check.
    pub(super) fn new(scenario: &Scenario, seed: u64) -> Self {
        Rotation {
            router: build(scenario, seed),
            outlier_marks: Vec::new(),
        }
    }

    /// The router's first check of a pod, at a random phase of its interval.
    pub(super) fn start_checks(
        &mut self,
        pod: usize,
        steady: bool,
        rng: &mut fastrand::Rng,
        effects: &mut Effects,
    ) {
        let Some(check) = self.router.health_check() else {
            return;
        };
        self.router.start_checking(pod, steady);
        let phase = rng.u64(0..check.interval);
        effects.schedule(
            phase,
            Event::CheckTick {
                pod: pod as u32,
                epoch: 0,
            },
        );
    }

    /// The check a tick of `epoch` runs on `pod`, if it is current.
    pub(super) fn check_due(&self, pod: usize, epoch: u32) -> Option<HealthCheck> {
        if self.router.check_epoch(pod) != epoch {
            return None;
        }
        self.router.health_check()
    }

    /// The pod answered the router's check `check` at `now`: `after` milliseconds later,
    /// passing or not (with the check's timeout applied).
    pub(super) fn checked(
        &mut self,
        pod: usize,
        check: HealthCheck,
        (after, success): (Millis, bool),
        now: Millis,
        effects: &mut Effects,
    ) {
        // Envoy: a non-200 answer (not a timeout) marks the host unhealthy at once.
        let definitive = !success && after < check.timeout;
        let epoch = self.router.begin_check(pod);
        effects.schedule(
            now + after,
            Event::CheckDone {
                pod: pod as u32,
                epoch,
                success,
                definitive,
            },
        );
    }

    /// A router's check of a pod has its result.
    pub(super) fn check_done(
        &mut self,
        pod: usize,
        epoch: u32,
        result: CheckResult,
        now: Millis,
        effects: &mut Effects,
    ) {
        if self.router.check_epoch(pod) != epoch {
            return;
        }
        let was = self.router.healthy(pod);
        let next_in = self.router.record_check(pod, result);
        effects.schedule(
            now.saturating_add(next_in),
            Event::CheckTick {
                pod: pod as u32,
                epoch,
            },
        );
        if self.router.healthy(pod) != was || !result.success {
            effects.pod_changed(pod);
        }
    }

    /// The pod's readiness changed: routers that follow the endpoints see it after the
    /// propagation delay (kubelet status → EndpointSlice controller → kube-proxy).
    pub(super) fn readiness_changed(
        &self,
        pod: usize,
        ready: bool,
        now: Millis,
        effects: &mut Effects,
    ) {
        if let Some(delay) = self.router.propagation() {
            effects.schedule(
                now + delay,
                Event::EndpointUpdate {
                    pod: pod as u32,
                    ready,
                },
            );
        }
    }

    /// The endpoints caught up with the pod's readiness.
    pub(super) fn endpoint_update(&mut self, pod: usize, ready: bool, effects: &mut Effects) {
        if self.router.endpoint_update(pod, ready) {
            effects.pod_changed(pod);
        }
    }

    /// Envoy's consecutive-5xx ejection fires.
    pub(super) fn eject(&mut self, pod: usize, epoch: u32, now: Millis, effects: &mut Effects) {
        if let Some((lasts, epoch)) = self.router.eject(pod, epoch) {
            effects.schedule(
                now + lasts,
                Event::EjectEnd {
                    pod: pod as u32,
                    epoch,
                },
            );
            effects.pod_changed(pod);
        }
    }

    /// An ejection ends.
    pub(super) fn eject_end(&mut self, pod: usize, epoch: u32, effects: &mut Effects) {
        if self.router.eject_end(pod, epoch) {
            effects.pod_changed(pod);
        }
    }

    /// Schedules the first success-rate sweep of `pods`, when the router runs them.
    pub(super) fn start_outlier_sweeps(&mut self, pods: usize, effects: &mut Effects) {
        if let Some(settings) = self.router.success_rate() {
            self.outlier_marks = vec![(0.0, 0.0); pods];
            effects.schedule(settings.interval, Event::OutlierSweep);
        }
    }

    /// A success-rate sweep: the success rate of each host over the interval just ended;
    /// those too far below the mean are ejected.
    pub(super) fn outlier_sweep(
        &mut self,
        traffic: &mut Traffic,
        now: Millis,
        effects: &mut Effects,
    ) {
        let Some(settings) = self.router.success_rate() else {
            return;
        };
        let mut judged: Vec<(usize, f64)> = Vec::new();
        for pod in 0..self.outlier_marks.len() {
            traffic.flush(pod);
            let flow = &traffic.flows[pod];
            let (requests, failed) = (
                flow.requests - self.outlier_marks[pod].0,
                flow.failed - self.outlier_marks[pod].1,
            );
            self.outlier_marks[pod] = (flow.requests, flow.failed);
            if requests >= f64::from(settings.request_volume) {
                judged.push((pod, 1.0 - failed / requests));
            }
        }
        if judged.len() >= settings.minimum_hosts as usize {
            let count = judged.len() as f64;
            let mean = judged.iter().map(|(_, rate)| rate).sum::<f64>() / count;
            let variance = judged
                .iter()
                .map(|(_, rate)| (rate - mean).powi(2))
                .sum::<f64>()
                / count;
            let threshold = mean - f64::from(settings.stdev_factor) / 1000.0 * variance.sqrt();
            for (pod, rate) in judged {
                if rate < threshold
                    && let Some((lasts, epoch)) = self.router.eject_now(pod)
                {
                    effects.schedule(
                        now + lasts,
                        Event::EjectEnd {
                            pod: pod as u32,
                            epoch,
                        },
                    );
                    effects.pod_changed(pod);
                }
            }
        }
        effects.schedule(now + settings.interval, Event::OutlierSweep);
    }

    /// Outlier detection watches a pod that fails every request (`failure` of them, with
    /// `share` of the fleet's `rate` per second): consecutive-5xx ejection fires inline when
    /// the k-th consecutive error arrives.
    pub(super) fn watch_outlier(
        &mut self,
        pod: usize,
        (failure, share, rate): (f64, f64, f64),
        now: Millis,
        effects: &mut Effects,
    ) {
        if failure < 0.999 || share <= 0.0 {
            return;
        }
        if let Some((wait, epoch)) = self.router.eject_after(pod, rate * share) {
            effects.schedule(
                now + wait,
                Event::Eject {
                    pod: pod as u32,
                    epoch,
                },
            );
        }
    }
}
