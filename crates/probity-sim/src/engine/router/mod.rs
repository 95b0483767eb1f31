//! What sends traffic to the pods: one [`Router`] per load-balancer model.
//!
//! A router decides which pods are members of rotation and how requests are spread over
//! them ([`Split`]). Some follow the pods' readiness through the endpoints (a Kubernetes
//! Service, a consistent-hash ring fed from endpoints), others run their own health checks
//! against a pod endpoint (HAProxy, Envoy, an AWS ALB). The engine drives both kinds here;
//! each model's rules live in its own module.

mod alb;
mod consistent_hash;
mod envoy;
mod haproxy;
mod kubernetes_service;

use super::Sim;
use super::queue::Event;
use super::traffic::Split;
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

impl Sim<'_> {
    /// Whether `pod` is in rotation: the router counts it healthy and no operator drained it.
    pub(super) fn in_rotation(&self, pod: usize) -> bool {
        !self.pods[pod].manual_drained && self.router.healthy(pod)
    }

    /// The router's first check of a pod, at a random phase of its interval.
    pub(super) fn start_router_checks(&mut self, pod: usize, steady: bool) {
        let Some(check) = self.router.health_check() else {
            return;
        };
        self.router.start_checking(pod, steady);
        let phase = self.rng.u64(0..check.interval);
        self.queue.schedule(
            phase,
            Event::CheckTick {
                pod: pod as u32,
                epoch: 0,
            },
        );
    }

    /// The router checks a pod.
    pub(super) fn router_check(&mut self, pod: usize, epoch: u32) {
        if self.router.check_epoch(pod) != epoch {
            return;
        }
        let Some(check) = self.router.health_check() else {
            return;
        };
        let (after, success) = self.respond_within(pod, check.handler, check.timeout);
        // Envoy: a non-200 answer (not a timeout) marks the host unhealthy at once.
        let definitive = !success && after < check.timeout;
        self.measure.probe_requests += u64::from(check.checkers);
        let epoch = self.router.begin_check(pod);
        self.queue.schedule(
            self.now + after,
            Event::CheckDone {
                pod: pod as u32,
                epoch,
                success,
                definitive,
            },
        );
    }

    /// A router's check of a pod has its result.
    pub(super) fn router_check_done(&mut self, pod: usize, epoch: u32, result: CheckResult) {
        if self.router.check_epoch(pod) != epoch {
            return;
        }
        let was = self.router.healthy(pod);
        let next_in = self.router.record_check(pod, result);
        self.queue.schedule(
            self.now.saturating_add(next_in),
            Event::CheckTick {
                pod: pod as u32,
                epoch,
            },
        );
        if self.router.healthy(pod) != was || !result.success {
            self.pod_changed(pod);
        }
    }

    /// The pod's readiness changed: routers that follow the endpoints see it after the
    /// propagation delay (kubelet status → EndpointSlice controller → kube-proxy).
    pub(super) fn propagate_readiness(&mut self, pod: usize, ready: bool) {
        if let Some(delay) = self.router.propagation() {
            self.queue.schedule(
                self.now + delay,
                Event::EndpointUpdate {
                    pod: pod as u32,
                    ready,
                },
            );
        }
    }

    /// The endpoints caught up with the pod's readiness.
    pub(super) fn endpoint_update(&mut self, pod: usize, ready: bool) {
        if self.router.endpoint_update(pod, ready) {
            self.pod_changed(pod);
        }
    }

    /// Envoy's consecutive-5xx ejection fires.
    pub(super) fn eject(&mut self, pod: usize, epoch: u32) {
        if let Some((lasts, epoch)) = self.router.eject(pod, epoch) {
            self.queue.schedule(
                self.now + lasts,
                Event::EjectEnd {
                    pod: pod as u32,
                    epoch,
                },
            );
            self.pod_changed(pod);
        }
    }

    /// An ejection ends.
    pub(super) fn eject_end(&mut self, pod: usize, epoch: u32) {
        if self.router.eject_end(pod, epoch) {
            self.pod_changed(pod);
        }
    }

    /// Schedules the first success-rate sweep, when the router runs them.
    pub(super) fn start_outlier_sweeps(&mut self) {
        if let Some(settings) = self.router.success_rate() {
            self.outlier_marks = vec![(0.0, 0.0); self.pods.len()];
            self.queue.schedule(settings.interval, Event::OutlierSweep);
        }
    }

    /// A success-rate sweep: the success rate of each host over the interval just ended;
    /// those too far below the mean are ejected.
    pub(super) fn outlier_sweep(&mut self) {
        let Some(settings) = self.router.success_rate() else {
            return;
        };
        let mut judged: Vec<(usize, f64)> = Vec::new();
        for pod in 0..self.pods.len() {
            self.traffic.flush(pod);
            let flow = &self.traffic.flows[pod];
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
                    self.queue.schedule(
                        self.now + lasts,
                        Event::EjectEnd {
                            pod: pod as u32,
                            epoch,
                        },
                    );
                    self.pod_changed(pod);
                }
            }
        }
        self.queue
            .schedule(self.now + settings.interval, Event::OutlierSweep);
    }

    /// Outlier detection watches a pod that fails every request: consecutive-5xx ejection
    /// fires inline when the k-th consecutive error arrives.
    pub(super) fn watch_outlier(&mut self, pod: usize) {
        let share = self.traffic.share(pod);
        if self.traffic.flows[pod].failure < 0.999 || share <= 0.0 {
            return;
        }
        let per_second = self.scenario.requests.rate * share;
        if let Some((wait, epoch)) = self.router.eject_after(pod, per_second) {
            self.queue.schedule(
                self.now + wait,
                Event::Eject {
                    pod: pod as u32,
                    epoch,
                },
            );
        }
    }
}
