//! What a pod answers a call to one of its endpoints: its process's state, its health
//! policy's verdicts, and for a `sync` endpoint the calls it makes while the caller waits.

use super::Sim;
use super::policy::{fails, immediate_entry};
use super::probing::within;
use crate::scenario::{CheckTarget, EndpointMode, Handler, InternalKind};
use crate::time::Millis;

impl Sim<'_> {
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
                        let call = self.call_dependency(pod, dependency, asks, true);
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
