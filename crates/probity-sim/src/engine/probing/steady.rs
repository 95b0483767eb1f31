//! Probe workers in a steady state: a probe whose answer cannot differ from the last one,
//! recorded against a threshold it already met, changes nothing but the probe count.
//!
//! Such a worker stops scheduling its ticks. Its ticker keeps its phase (the next tick it
//! would have had), and the ticks it skips are counted by arithmetic when something about
//! its pod changes, or at the end of the run. Anything that can change a probe's answer
//! (the container, the process, a check's state) wakes the pod's quiet workers
//! ([`Probers::wake`]): each schedules its next tick, in the place among that millisecond's events it would have had (the queue remembers
//! where each recent instant's schedules began). A fleet in a steady state thus costs its
//! polls, not its probes.
//!
//! What can go quiet: an HTTP probe of an endpoint whose checks are internal or read from
//! the cached snapshot (no staleness bound, no fail-open window running), or a TCP probe,
//! of a running container past its initial delay, neither stalled, deadlocked nor
//! terminating; and a worker gated by startup. A call made while the probe waits (a `sync`
//! endpoint) is never skipped: it costs the dependency a call and may draw chance.

use super::{Probers, Quiet, Seen, tick_event};
use crate::engine::effects::Effects;
use crate::engine::queue::{MEMORY, Order};
use crate::scenario::Handler;
use crate::time::Millis;
use probity_contract::kube::prober::ProbeResult;
use probity_contract::probe::ProbeKind;

impl Probers {
    /// After a tick of `kind` on `pod` at `now` whose probe `answered` inline (`None`: it
    /// did not probe, or its result is not in yet): goes quiet if the next ticks cannot
    /// change anything, given what the kubelet sees of the pod and the answer its endpoint
    /// gives while nothing changes (`steady`). Returns whether it did; the caller then leaves
    /// the next tick unscheduled.
    pub(in crate::engine) fn go_quiet(
        &mut self,
        pod: usize,
        kind: ProbeKind,
        answered: Option<bool>,
        seen: &Seen,
        steady: &dyn Fn(Handler) -> Option<bool>,
        now: Millis,
    ) -> bool {
        let Some(probe) = self.spec(kind) else {
            return false;
        };
        let period = probe.period();
        if period == 0 || period >= MEMORY {
            return false;
        }
        let ticker = *self.ticker(pod, kind);
        if ticker.busy || ticker.pending || !seen.running {
            return false;
        }
        let worker = self.worker(pod, kind);
        if worker.on_hold() || worker.container() != Some(seen.container) {
            return false;
        }
        let since_start = now.saturating_sub(seen.started_at) / 1000;
        if since_start < probe.timing.initial_delay.as_secs() {
            return false;
        }
        let probes = if seen.started == (kind == ProbeKind::Startup) {
            // Held by the startup gate until the container's Started changes.
            false
        } else {
            let Some(passed) = answered else {
                return false;
            };
            if steady(probe.handler) != Some(passed) {
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
            if worker.result_run() < threshold
                || self.result(pod, kind) != result
                || (kind == ProbeKind::Readiness && seen.answered_unready == Some(passed))
            {
                return false;
            }
            true
        };
        self.ticker(pod, kind).quiet = Quiet {
            quiet: true,
            next_due: now + period,
            probes,
        };
        true
    }

    /// Something about `pod` changed at `clock` (the time, and the place of the event being
    /// handled among that millisecond's): its quiet workers tick again.
    pub(in crate::engine) fn wake(
        &mut self,
        pod: usize,
        clock: (Millis, Order),
        effects: &mut Effects,
    ) {
        for kind in ProbeKind::ALL {
            if self.ticker(pod, kind).quiet.quiet {
                self.wake_worker(pod, kind, true, clock, effects);
            }
        }
    }

    /// Counts a quiet worker's skipped ticks up to `clock` and, if `resume`, schedules its
    /// next tick in its place; the worker is no longer quiet.
    pub(in crate::engine) fn wake_worker(
        &mut self,
        pod: usize,
        kind: ProbeKind,
        resume: bool,
        (now, current_order): (Millis, Order),
        effects: &mut Effects,
    ) {
        let quiet = self.ticker(pod, kind).quiet;
        if !quiet.quiet {
            return;
        }
        self.ticker(pod, kind).quiet = Quiet::default();
        let Some(period) = self.spec(kind).map(|probe| probe.period()) else {
            return;
        };
        let mut due = quiet.next_due;
        let mut skipped = 0;
        if due < now {
            let ticks = (now - due).div_ceil(period);
            skipped += ticks;
            due += ticks * period;
        }
        // A tick in this very millisecond ran already if it comes before the event being
        // handled.
        if due == now && tick_order(effects, due, period).is_none_or(|order| order < current_order)
        {
            skipped += 1;
            due += period;
        }
        if quiet.probes {
            self.sent += skipped;
        }
        if resume {
            let event = tick_event(pod, kind, self.ticker(pod, kind).epoch);
            match tick_order(effects, due, period) {
                Some(order) => effects.schedule_in_order(due, order, event),
                None => effects.schedule(due, event),
            }
        }
    }

    /// The run ends at `end`: every quiet worker's skipped ticks before it count.
    pub(in crate::engine) fn count_quiet_ticks(&mut self, end: Millis) {
        for pod in 0..self.pods.len() {
            for kind in ProbeKind::ALL {
                let quiet = self.ticker(pod, kind).quiet;
                let Some(period) = self.spec(kind).map(|probe| probe.period()) else {
                    continue;
                };
                if quiet.quiet && quiet.probes && quiet.next_due < end {
                    self.sent += (end - quiet.next_due).div_ceil(period);
                }
            }
        }
    }
}

/// The place of a tick at `due`: as scheduled at the start of the instant one period
/// before, by the tick that would have run then.
fn tick_order(effects: &Effects, due: Millis, period: Millis) -> Option<Order> {
    effects.order_at(due.checked_sub(period)?)
}
