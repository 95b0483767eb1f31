//! Calls to a pod's endpoints — the kubelet's probes, the router's checks — and what the pod
//! answers: its process's state, its health policy's verdicts, and for a `sync` endpoint the
//! calls it makes while the caller waits. The probers decide when to probe and what a result
//! changes; the engine carries the call to the pod between them.

use super::Sim;
use super::pod::Pod;
use super::policy::{Policy, fails, immediate_entry};
use super::probing::{Seen, within};
use crate::scenario::{CheckTarget, EndpointMode, Handler, InternalKind, Scenario};
use crate::time::Millis;
use probity_contract::probe::ProbeKind;

impl Sim<'_> {
    /// What the kubelet sees of `pod` now.
    fn seen(&self, pod: usize) -> Seen {
        self.pods[pod].seen()
    }

    /// A worker's ticker fires: it probes unless its probe is still in flight, then
    /// schedules its next tick unless it goes quiet.
    pub(super) fn probe_tick(&mut self, pod: usize, kind: ProbeKind, epoch: u32) {
        let Some(order) = self
            .probers
            .tick(pod, kind, epoch, self.now, &mut self.effects)
        else {
            return;
        };
        let answered = self.run_probe(pod, kind);
        let seen = self.seen(pod);
        let (scenario, now) = (self.scenario, self.now);
        let (state, policy) = (&self.pods[pod], &self.policy);
        let steady = |handler| steady_answer(scenario, (pod, state), policy, handler, now);
        self.probers.ticked(
            (pod, kind, epoch),
            order,
            answered,
            &seen,
            &steady,
            now,
            &mut self.effects,
        );
        self.apply_effects();
    }

    /// Runs a probe if the worker's gate lets it. Returns whether it passed, when its
    /// result was recorded at once.
    pub(super) fn run_probe(&mut self, pod: usize, kind: ProbeKind) -> Option<bool> {
        let seen = self.seen(pod);
        let probe = self
            .probers
            .gate(pod, kind, &seen, self.now, &mut self.effects);
        self.apply_effects();
        let probe = probe?;
        let answer = self.respond(pod, probe.handler);
        if kind == ProbeKind::Readiness
            && let Some((_, passed)) = answer
        {
            self.readiness_answered(pod, passed);
        }
        let met = within(answer, probe.timeout());
        let container = self.pods[pod].container_id;
        let answered =
            self.probers
                .probed((pod, kind), met, container, self.now, &mut self.effects);
        self.apply_effects();
        answered
    }

    /// A probe's result is in; a tick that arrived meanwhile probes again.
    pub(super) fn probe_done(
        &mut self,
        pod: usize,
        kind: ProbeKind,
        container: u32,
        success: bool,
    ) {
        let current = self.pods[pod].container_id;
        self.probers.probe_done(
            (pod, kind),
            (container, success),
            current,
            &mut self.effects,
        );
        self.apply_effects();
        if self.probers.take_pending(pod, kind) {
            let _ = self.run_probe(pod, kind);
        }
    }

    /// A manual trigger from `UpdatePodStatus`: probe readiness now and reset its ticker.
    pub(super) fn manual_readiness_trigger(&mut self, pod: usize) {
        let clock = (self.now, self.current_order);
        if self
            .probers
            .trigger_readiness(pod, clock.0, clock.1, &mut self.effects)
        {
            self.apply_effects();
            let _ = self.run_probe(pod, ProbeKind::Readiness);
        }
    }

    /// The pod's Ready condition, pushed to the endpoints when it changes.
    pub(super) fn update_pod_ready(&mut self, pod: usize) {
        let state = &self.pods[pod];
        if let Some(ready) = self
            .probers
            .update_ready(pod, state.has_container(), state.started)
        {
            self.readiness_changed(pod, ready);
        }
    }

    /// Something about `pod` changed: its quiet probe workers tick again.
    pub(super) fn wake(&mut self, pod: usize) {
        let clock = (self.now, self.current_order);
        self.probers.wake(pod, clock, &mut self.effects);
    }

    /// The router checks a pod: the pod answers, within the check's timeout.
    pub(super) fn router_check(&mut self, pod: usize, epoch: u32) {
        let Some(check) = self.rotation.check_due(pod, epoch) else {
            return;
        };
        let answer = self.respond_within(pod, check.handler, check.timeout);
        self.measure.probe_requests += u64::from(check.checkers);
        let (now, effects) = (self.now, &mut self.effects);
        self.rotation.checked(pod, check, answer, now, effects);
        self.apply_effects();
    }

    /// A call to an endpoint with a caller timeout: the time until the caller has an
    /// answer, and whether it passed.
    pub(super) fn respond_within(
        &mut self,
        pod: usize,
        handler: Handler,
        timeout: Millis,
    ) -> (Millis, bool) {
        let answer = self.respond(pod, handler);
        within(answer, timeout)
    }

    /// What the pod answers a call: `None` when the call hangs, else the latency and
    /// whether the answer passes (2xx).
    pub(super) fn respond(&mut self, pod: usize, handler: Handler) -> Option<(Millis, bool)> {
        let now = self.now;
        let state = &self.pods[pod];
        let Some(process) = state.process.as_ref() else {
            return Some((0, false)); // connection refused
        };
        if !state.has_container() || !process.listening {
            return Some((0, false));
        }
        let Handler::Http { endpoint } = handler else {
            // TCP: the kernel completes the handshake whatever the handlers do.
            return Some((0, true));
        };
        if process.stalled {
            return None;
        }
        let scenario = self.scenario;
        let endpoint = &scenario.app.endpoints[endpoint];
        if let Some(deadlocked_at) = process.deadlocked_at {
            let detector = endpoint.checks.iter().find_map(|&check| {
                let spec = &scenario.app.checks[check];
                (spec.target == CheckTarget::Internal(InternalKind::Deadlock))
                    .then_some(spec.detect_after)
            });
            return match detector {
                // The detector's thread answers once it has seen the deadlock.
                Some(detect) if now >= deadlocked_at + detect => Some((0, false)),
                _ => None,
            };
        }
        let mut passed_all = true;
        let mut total: Millis = 0;
        let mut longest: Millis = 0;
        for &check in &endpoint.checks {
            let spec = &scenario.app.checks[check];
            let entry = match spec.target {
                CheckTarget::Internal(kind) => {
                    let process = self.pods[pod].process.as_ref()?;
                    let passed = match kind {
                        InternalKind::Boot => process.booted,
                        InternalKind::Shutdown => process.sigterm_at.is_none_or(|at| now < at),
                        InternalKind::Deadlock
                        | InternalKind::RuntimeStall
                        | InternalKind::AppState => true,
                    };
                    immediate_entry(spec, check, passed)
                }
                CheckTarget::Dependency(dependency) => match endpoint.mode {
                    EndpointMode::Cached => {
                        self.pods[pod].process.as_ref()?;
                        self.policy.cached_entry(pod, check, now)
                    }
                    EndpointMode::Sync => {
                        let timeout = endpoint.timeout.or(spec.timeout);
                        let asks = spec
                            .uses_pool
                            .then_some((spec.pool_check, spec.acquire_budget));
                        let call = self.call_dependency(pod, dependency, asks);
                        let latency = call.latency;
                        let (cost, passed) = match timeout {
                            Some(limit) if latency > limit => (limit, false),
                            _ => (latency, call.answered),
                        };
                        if timeout.is_none() && latency >= 1_000 {
                            self.hold_inflight(pod, now + latency, dependency);
                        }
                        total += cost;
                        longest = longest.max(cost);
                        immediate_entry(spec, check, passed)
                    }
                },
            };
            if fails(&entry) {
                passed_all = false;
            }
        }
        Some((if endpoint.parallel { longest } else { total }, passed_all))
    }
}

/// The answer `pod` (in state `state`) gives an endpoint at `now`, if it stays the same until
/// something about the pod changes, costs nothing and draws no chance: `None` otherwise.
fn steady_answer(
    scenario: &Scenario,
    (pod, state): (usize, &Pod),
    policy: &Policy<'_>,
    handler: Handler,
    now: Millis,
) -> Option<bool> {
    let process = state.process.as_ref()?;
    if !state.running()
        || !process.listening
        || process.stalled
        || process.deadlocked_at.is_some()
        || process.sigterm_at.is_some()
    {
        return None;
    }
    let Handler::Http { endpoint } = handler else {
        return Some(true);
    };
    let endpoint = &scenario.app.endpoints[endpoint];
    let mut passed_all = true;
    for &check in &endpoint.checks {
        let spec = &scenario.app.checks[check];
        let entry = match spec.target {
            CheckTarget::Internal(InternalKind::Boot) => {
                immediate_entry(spec, check, process.booted)
            }
            CheckTarget::Internal(_) => immediate_entry(spec, check, true),
            CheckTarget::Dependency(_) => {
                if endpoint.mode != EndpointMode::Cached || spec.staleness.is_some() {
                    return None;
                }
                // A fail-open window running ends by itself: the answer changes with
                // time. So does a fallback's, which the check's answer reads.
                let runs_out = |check: usize| {
                    let spec = &scenario.app.checks[check];
                    let check_state = &policy.states(pod)[check];
                    !check_state.hysteresis.is_healthy()
                        && spec.fail_open_for.is_some()
                        && check_state.unhealthy_since.is_some()
                };
                if runs_out(check) {
                    return None;
                }
                if let Some(fallback) = spec.fallback
                    && (scenario.app.checks[fallback].staleness.is_some() || runs_out(fallback))
                {
                    return None;
                }
                policy.cached_entry(pod, check, now)
            }
        };
        if fails(&entry) {
            passed_all = false;
        }
    }
    Some(passed_all)
}
