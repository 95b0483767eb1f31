//! Probe workers in a steady state: a probe whose answer cannot differ from the last one,
//! recorded against a threshold it already met, changes nothing but the probe count.
//!
//! Such a worker stops scheduling its ticks. Its ticker keeps its phase (the next tick it
//! would have had), and the ticks it skips are counted by arithmetic when something about
//! its pod changes, or at the end of the run. Anything that can change a probe's answer
//! (the container, the process, a check's state) goes through [`Sim::mark`] or
//! a change of a check's state ([`super::policy::Policy`]), which wakes the pod's quiet workers: each schedules its next
//! tick, in the place among that millisecond's events it would have had (the queue remembers
//! where each recent instant's schedules began). A fleet in a steady state thus costs its
//! polls, not its probes.
//!
//! What can go quiet: an HTTP probe of an endpoint whose checks are internal or read from
//! the cached snapshot (no staleness bound, no fail-open window running), or a TCP probe,
//! of a running container past its initial delay, neither stalled, deadlocked nor
//! terminating; and a worker gated by startup. A call made while the probe waits (a `sync`
//! endpoint) is never skipped: it costs the dependency a call and may draw chance.

use super::Sim;
use super::policy;
use super::probing::{Quiet, slot};
use super::queue::{Event, MEMORY, Order};
use crate::scenario::{CheckTarget, EndpointMode, Handler, InternalKind};
use crate::time::Millis;
use probity_contract::kube::prober::ProbeResult;
use probity_contract::probe::ProbeKind;

impl Sim<'_> {
    /// After a tick of `kind` on `pod` whose probe `answered` inline (`None`: it did not
    /// probe, or its result is not in yet): goes quiet if the next ticks cannot change
    /// anything. Returns whether it did; the caller then leaves the next tick unscheduled.
    pub(super) fn go_quiet(&mut self, pod: usize, kind: ProbeKind, answered: Option<bool>) -> bool {
        let Some(probe) = self.probe(kind) else {
            return false;
        };
        let period = probe.period();
        if period == 0 || period >= MEMORY {
            return false;
        }
        let state = &self.pods[pod];
        let probes = &self.probers.pods[pod];
        let ticker = probes.tickers[slot(kind)];
        if ticker.busy || ticker.pending || !state.running() {
            return false;
        }
        let worker = probes.worker(kind);
        if worker.on_hold() || worker.container() != Some(state.container_id) {
            return false;
        }
        let since_start = self.now.saturating_sub(state.started_at) / 1000;
        if since_start < probe.timing.initial_delay.as_secs() {
            return false;
        }
        let probes = if state.started == (kind == ProbeKind::Startup) {
            // Held by the startup gate until the container's Started changes.
            false
        } else {
            let Some(passed) = answered else {
                return false;
            };
            if self.steady_answer(pod, probe.handler) != Some(passed) {
                return false;
            }
            if !passed && kind != ProbeKind::Readiness {
                return false;
            }
            let (result, threshold) = if passed {
                (ProbeResult::Success, probe.timing.success_threshold)
            } else {
                (ProbeResult::Failure, probe.timing.failure_threshold)
            };
            let process = state.process.as_ref();
            if worker.result_run() < threshold
                || probes.result(kind) != result
                || (kind == ProbeKind::Readiness
                    && process.is_some_and(|process| process.answered_unready == passed))
            {
                return false;
            }
            true
        };
        let now = self.now;
        let ticker = &mut self.probers.pods[pod].tickers[slot(kind)];
        ticker.quiet = Quiet {
            quiet: true,
            next_due: now + period,
            probes,
        };
        true
    }

    /// The answer the pod gives an endpoint now, if it stays the same until something about
    /// the pod changes, costs nothing and draws no chance: `None` otherwise.
    fn steady_answer(&self, pod: usize, handler: Handler) -> Option<bool> {
        let state = &self.pods[pod];
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
        let scenario = self.scenario;
        let endpoint = &scenario.app.endpoints[endpoint];
        let mut passed_all = true;
        for &check in &endpoint.checks {
            let spec = &scenario.app.checks[check];
            let entry = match spec.target {
                CheckTarget::Internal(InternalKind::Boot) => {
                    policy::immediate_entry(spec, check, process.booted)
                }
                CheckTarget::Internal(_) => policy::immediate_entry(spec, check, true),
                CheckTarget::Dependency(_) => {
                    if endpoint.mode != EndpointMode::Cached || spec.staleness.is_some() {
                        return None;
                    }
                    // A fail-open window running ends by itself: the answer changes with
                    // time. So does a fallback's, which the check's answer reads.
                    let runs_out = |check: usize| {
                        let spec = &scenario.app.checks[check];
                        let check_state = &self.policy.states(pod)[check];
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
                    self.policy.cached_entry(pod, check, self.now)
                }
            };
            if policy::fails(&entry) {
                passed_all = false;
            }
        }
        Some(passed_all)
    }

    /// Something about `pod` changed: its quiet workers tick again.
    pub(super) fn wake(&mut self, pod: usize) {
        for kind in ProbeKind::ALL {
            if self.probers.pods[pod].tickers[slot(kind)].quiet.quiet {
                self.wake_worker(pod, kind, true);
            }
        }
    }

    /// Counts a quiet worker's skipped ticks up to now and, if `resume`, schedules its next
    /// tick in its place; the worker is no longer quiet.
    pub(super) fn wake_worker(&mut self, pod: usize, kind: ProbeKind, resume: bool) {
        let quiet = self.probers.pods[pod].tickers[slot(kind)].quiet;
        if !quiet.quiet {
            return;
        }
        self.probers.pods[pod].tickers[slot(kind)].quiet = Quiet::default();
        let Some(period) = self.probe(kind).map(|probe| probe.period()) else {
            return;
        };
        let now = self.now;
        let mut due = quiet.next_due;
        let mut skipped = 0;
        if due < now {
            let ticks = (now - due).div_ceil(period);
            skipped += ticks;
            due += ticks * period;
        }
        // A tick in this very millisecond ran already if it comes before the event being
        // handled.
        if due == now
            && self
                .tick_order(due, period)
                .is_none_or(|order| order < self.current_order)
        {
            skipped += 1;
            due += period;
        }
        if quiet.probes {
            self.measure.probe_requests += skipped;
        }
        if resume {
            let epoch = self.probers.pods[pod].tickers[slot(kind)].epoch;
            let event = Event::ProbeTick {
                pod: pod as u32,
                slot: slot(kind) as u8,
                epoch,
            };
            match self.tick_order(due, period) {
                Some(order) => self.effects.schedule_in_order(due, order, event),
                None => self.effects.schedule(due, event),
            }
        }
    }

    /// The place of a tick at `due`: as scheduled at the start of the instant one period
    /// before, by the tick that would have run then.
    fn tick_order(&self, due: Millis, period: Millis) -> Option<Order> {
        self.effects.order_at(due.checked_sub(period)?)
    }

    /// The run ends: every quiet worker's skipped ticks before the end count.
    pub(super) fn count_quiet_ticks(&mut self, end: Millis) {
        for pod in 0..self.pods.len() {
            for kind in ProbeKind::ALL {
                let quiet = self.probers.pods[pod].tickers[slot(kind)].quiet;
                let Some(period) = self.probe(kind).map(|probe| probe.period()) else {
                    continue;
                };
                if quiet.quiet && quiet.probes && quiet.next_due < end {
                    self.measure.probe_requests += (end - quiet.next_due).div_ceil(period);
                }
            }
        }
    }
}
