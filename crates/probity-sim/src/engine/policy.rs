//! The app's health policy: what each endpoint answers, and the pollers that keep the
//! cached snapshot its checks are read from.
//!
//! This is probity's model of a service, and it runs probity's own rules: a check's poll
//! results go through [`probity_contract::hysteresis`] (fall fast, rise slow), and a `cached`
//! endpoint's answer is [`probity_contract::verdict`]'s (stale results and checks without one
//! count as failures, a hard check fails readiness and fails open for its window, a soft one
//! only warns), the very code the runtime answers its probes with, so the model cannot drift
//! from the product. An endpoint in `sync` mode instead calls each dependency while the probe
//! waits (the "deep check" the incidents warn about), which is no probity behaviour and keeps
//! its own simple rule: a hard check that fails fails the answer.

use super::queue::Event;
use super::{Sim, at};
use crate::scenario::{Check, CheckTarget, EndpointMode, Handler, InternalKind};
use crate::time::Millis;
use probity_contract::Tier;
use probity_contract::hysteresis::{Hysteresis, Transition};
use probity_contract::verdict::{
    CheckVerdict, Effect, Entry, Evidence, Gate, Sample, Status, Subject,
};
use std::time::Duration;

#[cfg(test)]
mod agreement;

/// One check's state in one process.
#[derive(Debug, Clone)]
pub(super) struct CheckState {
    /// Rise/fall state: probity's own machine, fed the simulated results.
    pub(super) hysteresis: Hysteresis,
    /// When the latest result (a poll's or a passive report's) came in.
    pub(super) last_result_at: Option<Millis>,
    /// Whether the latest result passed.
    last_ok: bool,
    /// Whether the latest result failed for this process's own capacity (its pool), which
    /// no fallback covers.
    last_local: bool,
    /// When the check last turned unhealthy after having been healthy (for fail-open).
    pub(super) unhealthy_since: Option<Millis>,
    /// Bumped to cancel the scheduled poll when a re-poll takes its place.
    pub(super) poll_epoch: u32,
    /// A poll is in flight.
    pub(super) polling: bool,
    /// A re-poll was asked for while a poll was in flight: it runs when that one ends.
    pub(super) repoll: bool,
}

impl CheckState {
    /// A check that has not run yet.
    pub(super) fn fresh(check: &Check) -> Self {
        CheckState {
            hysteresis: Hysteresis::new(check.rise, check.fall, check.boot_requires_rise),
            last_result_at: None,
            last_ok: false,
            last_local: false,
            unhealthy_since: None,
            poll_epoch: 0,
            polling: false,
            repoll: false,
        }
    }

    /// A check that has long been passing (a full `rise` of successes, the last at 0).
    pub(super) fn settled(check: &Check) -> Self {
        let mut state = CheckState::fresh(check);
        for _ in 0..check.rise.max(1) {
            state.observe(true, false, 0);
        }
        state
    }

    /// A poll's result at `now`, through the hysteresis (`local`: it failed for this
    /// process's own pool); returns the transition it caused.
    pub(super) fn observe(
        &mut self,
        success: bool,
        local: bool,
        now: Millis,
    ) -> Option<Transition> {
        let transition = self.hysteresis.observe(success);
        self.recorded(transition, success, local && !success, now)
    }

    /// Passive reports of real failures fail the check at once at `now`; returns whether it
    /// fell. As in probity's runtime, a report cannot tell this process's own exhaustion from
    /// a dependency every pod lost: only a poll decides that a failure is local, and a report
    /// keeps the word of the poll before it.
    pub(super) fn force_unhealthy(&mut self, now: Millis) -> Option<Transition> {
        let transition = self.hysteresis.force_unhealthy();
        let local = !self.last_ok && self.last_local;
        self.recorded(transition, false, local, now)
    }

    /// Keeps a result the way probity's runtime publishes it: the result is the latest, and
    /// a fall starts the fail-open window that a rise ends.
    fn recorded(
        &mut self,
        transition: Option<Transition>,
        success: bool,
        local: bool,
        now: Millis,
    ) -> Option<Transition> {
        self.last_result_at = Some(now);
        self.last_ok = success;
        self.last_local = local;
        match transition {
            Some(Transition::Rose) => self.unhealthy_since = None,
            Some(Transition::Fell) => self.unhealthy_since = Some(now),
            None => {}
        }
        transition
    }

    /// Healthy with no failure counted: a success changes nothing, so a steady poller's
    /// successful results need not be recorded (the check has no staleness bound to refresh).
    pub(super) fn success_changes_nothing(&self) -> bool {
        self.hysteresis.is_healthy() && self.hysteresis.consecutive_failures() == 0
    }

    /// What probity's verdict knows of the check, in simulated time (a check without a
    /// staleness bound never goes stale).
    pub(super) fn evidence(&self, spec: &Check) -> Evidence<Duration> {
        Evidence {
            tier: spec.tier,
            healthy: self.hysteresis.is_healthy(),
            last: self.last_result_at.map(|time| Sample {
                at: at(time),
                ok: self.last_ok,
                warning: false,
                local: self.last_local,
            }),
            unhealthy_since: self.unhealthy_since.map(at),
            staleness: spec.staleness.map_or(Duration::MAX, at),
            fail_open_for: spec.fail_open_for.map(at),
            consecutive_successes: self.hysteresis.consecutive_successes(),
            rise: self.hysteresis.rise(),
            fallback: None,
        }
    }

    /// When the check's verdict next changes by time alone, after `now`: its staleness bound
    /// running out, or its fail-open window closing.
    fn changes_by_itself(&self, spec: &Check, now: Millis) -> Option<Millis> {
        let stale = spec
            .staleness
            .zip(self.last_result_at)
            .map(|(bound, last)| last + bound + 1);
        let closes = spec
            .fail_open_for
            .zip(self.unhealthy_since)
            .filter(|_| !self.hysteresis.is_healthy())
            .map(|(window, since)| since + window);
        [stale, closes]
            .into_iter()
            .flatten()
            .filter(|&at| at > now)
            .min()
    }
}

/// Check `check`'s verdict at `now` among a process's check states: probity's
/// [`Evidence::verdict_among`], which judges a check with its fallback (a hard check failing
/// while its fallback serves is `warn`, served by it).
pub(super) fn verdict(
    specs: &[Check],
    states: &[CheckState],
    check: usize,
    now: Millis,
) -> CheckVerdict {
    let spec = &specs[check];
    let own = states[check].evidence(spec);
    match spec.fallback {
        None => own.verdict(at(now)),
        Some(fallback) => {
            // The pair the verdict judges among: the check, and at index 1 its fallback.
            let pair = [
                Evidence {
                    fallback: Some(1),
                    ..own
                },
                states[fallback].evidence(&specs[fallback]),
            ];
            pair[0].verdict_among(&pair, |evidence| evidence, at(now))
        }
    }
}

/// The check's entry in a `cached` endpoint's answer at `now`: probity's verdict.
pub(super) fn cached_entry(
    specs: &[Check],
    states: &[CheckState],
    check: usize,
    now: Millis,
) -> Entry {
    let verdict = verdict(specs, states, check, now);
    Entry {
        subject: Subject::Check(check),
        status: verdict.status,
        tier: Some(specs[check].tier),
        check: Some(verdict),
    }
}

/// Whether check `check` fails while its fallback serves in its place at `now` (what a
/// handler reads through probity's `HealthState::degraded`).
pub(super) fn served_by_fallback(
    specs: &[Check],
    states: &[CheckState],
    check: usize,
    now: Millis,
) -> bool {
    verdict(specs, states, check, now).served_by.is_some()
}

/// When the verdict of `check` (judged with its fallback) may next change by time alone,
/// after `now`.
pub(super) fn verdict_changes_by_itself(
    specs: &[Check],
    states: &[CheckState],
    check: usize,
    now: Millis,
) -> Option<Millis> {
    let own = states[check].changes_by_itself(&specs[check], now);
    let fallback = specs[check]
        .fallback
        .and_then(|fallback| states[fallback].changes_by_itself(&specs[fallback], now));
    own.into_iter().chain(fallback).min()
}

/// The entry of a check whose result is known at once (an internal condition, or a call made
/// while the probe waits): a failure fails a hard check and makes any other `warn`. Boot and
/// shutdown are probity's startup and shutdown gates.
pub(super) fn immediate_entry(spec: &Check, index: usize, passed: bool) -> Entry {
    let subject = match spec.target {
        CheckTarget::Internal(InternalKind::Boot) => Subject::Gate(Gate::Startup),
        CheckTarget::Internal(InternalKind::Shutdown) => Subject::Gate(Gate::Shutdown),
        CheckTarget::Internal(_) => Subject::Condition(index),
        CheckTarget::Dependency(_) => Subject::Check(index),
    };
    let status = match (passed, spec.tier) {
        (true, _) => Status::Pass,
        (false, Tier::Hard) => Status::Fail,
        (false, Tier::Soft | Tier::Info) => Status::Warn,
    };
    Entry {
        subject,
        status,
        tier: Some(spec.tier),
        check: None,
    }
}

/// Whether an entry fails its endpoint's answer (the rule `verdict::status` folds with).
pub(super) fn fails(entry: &Entry) -> bool {
    entry.effect() == Effect::Fails
}

impl Sim<'_> {
    /// Starts the pollers of a new process; in a settled fleet they run at random phases.
    pub(super) fn start_pollers(&mut self, pod: usize, process: u32, steady: bool) {
        for (check, spec) in self.scenario.app.checks.iter().enumerate() {
            if !self.polled[check] {
                continue;
            }
            let offset = if steady {
                self.rng.u64(0..spec.interval)
            } else {
                0
            };
            self.queue.schedule(
                self.now + offset,
                Event::PollStart {
                    pod: pod as u32,
                    check: check as u16,
                    process,
                    epoch: 0,
                },
            );
            self.poller_scheduled(pod, check, process, 0);
        }
    }

    /// A poll begins: it calls the dependency, and the next poll is scheduled an interval
    /// (with jitter) after this one started, or when it ends if it runs longer. Polls never
    /// overlap.
    pub(super) fn poll_start(&mut self, pod: usize, check: usize, process: u32, epoch: u32) {
        let Some(lane) = self.current_poll(pod, check, process, epoch) else {
            return;
        };
        let spec = &self.scenario.app.checks[check];
        let CheckTarget::Dependency(dependency) = spec.target else {
            return;
        };
        let (interval, jitter, timeout) = (spec.interval, spec.jitter, spec.timeout);
        // A pool that cannot fail the call need not be looked at.
        let asks = (spec.uses_pool && !lane.pool_clear())
            .then_some((spec.pool_check, spec.acquire_budget));
        let call = self.call_dependency(pod, dependency, asks, true);
        let (cost, success, local) = match timeout {
            Some(limit) if call.latency > limit => (limit, false, false),
            _ => (call.latency, call.answered, call.local),
        };
        let wait = if jitter > 0 {
            let spread = self.rng.u64(0..=2 * jitter);
            (interval + spread).saturating_sub(jitter)
        } else {
            interval
        };
        let next = (self.now + wait).max(self.now + cost);
        if cost == 0 {
            self.poll_done(pod, check, process, success, local);
        } else {
            // The result takes its place in the queue now, even if it never needs it.
            let order = self.queue.reserve();
            if !(success && lane.quiet())
                && let Some(state) = self.pods[pod].process.as_mut()
            {
                state.checks[check].polling = true;
                self.queue.schedule_in_order(
                    self.now + cost,
                    order,
                    Event::PollDone {
                        pod: pod as u32,
                        check: check as u16,
                        process,
                        success,
                        local,
                    },
                );
                self.refresh_poll_key(pod, check);
            }
        }
        self.queue.schedule(
            next.max(self.now + 1),
            Event::PollStart {
                pod: pod as u32,
                check: check as u16,
                process,
                epoch,
            },
        );
        self.poller_scheduled(pod, check, process, epoch);
    }

    /// A poll's result: the hysteresis decides whether the check's state changes.
    pub(super) fn poll_done(
        &mut self,
        pod: usize,
        check: usize,
        process: u32,
        success: bool,
        local: bool,
    ) {
        let now = self.now;
        let Some(state) = self.pods[pod].process.as_mut() else {
            return;
        };
        if state.id != process {
            return;
        }
        let check_state = &mut state.checks[check];
        check_state.polling = false;
        let changed = check_state.observe(success, local, now).is_some();
        let repoll = std::mem::take(&mut check_state.repoll);
        self.refresh_poll_key(pod, check);
        if changed {
            self.check_state_changed(pod);
        }
        // A re-poll asked for during this poll runs as soon as it is recorded.
        if repoll {
            self.repoll(pod, check);
        }
    }

    /// Polls now instead of at the next tick (probity's `wake`): a poll in flight finishes
    /// first; the cadence then counts from the re-poll.
    pub(super) fn repoll(&mut self, pod: usize, check: usize) {
        if !self.polled[check] {
            return;
        }
        let Some(state) = self.pods[pod].process.as_mut() else {
            return;
        };
        let check_state = &mut state.checks[check];
        if check_state.polling {
            check_state.repoll = true;
            self.refresh_poll_key(pod, check);
            return;
        }
        check_state.poll_epoch += 1;
        let (process, epoch) = (state.id, check_state.poll_epoch);
        self.refresh_poll_key(pod, check);
        self.poll_start(pod, check, process, epoch);
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
        super::probing::within(answer, timeout)
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
                        let process = self.pods[pod].process.as_ref()?;
                        cached_entry(&scenario.app.checks, &process.checks, check, now)
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

    /// Schedules a look at the pod's requests for when a verdict judged with a fallback may
    /// next change by time alone (no poll marks that instant).
    pub(super) fn schedule_reassessment(&mut self, pod: usize) {
        let now = self.now;
        let Some(process) = self.pods[pod].process.as_ref() else {
            return;
        };
        let checks = &self.scenario.app.checks;
        let next = self
            .fallbacks
            .of
            .iter()
            .flatten()
            .filter_map(|&(check, _, _)| {
                verdict_changes_by_itself(checks, &process.checks, check, now)
            })
            .min();
        let Some(next) = next else {
            return;
        };
        // One scheduled already at or before it looks again then, and schedules the next.
        if process
            .reassess_at
            .is_some_and(|scheduled| scheduled > now && scheduled <= next)
        {
            return;
        }
        let id = process.id;
        if let Some(process) = self.pods[pod].process.as_mut() {
            process.reassess_at = Some(next);
        }
        self.queue.schedule(
            next,
            Event::Reassess {
                pod: pod as u32,
                process: id,
            },
        );
    }

    /// A verdict judged with a fallback may have changed by time alone.
    pub(super) fn reassess(&mut self, pod: usize, process: u32) {
        let now = self.now;
        let Some(state) = self.pods[pod].process.as_mut() else {
            return;
        };
        if state.id != process || state.reassess_at != Some(now) {
            return;
        }
        state.reassess_at = None;
        self.mark(pod);
    }
}
