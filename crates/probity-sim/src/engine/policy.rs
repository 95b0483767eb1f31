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

use super::effects::{self, Effects};
use super::poll_lane::{PollKey, Pollers};
use super::queue::Event;
use crate::scenario::{
    Check, CheckTarget, EndpointMode, InternalKind, PoolCheck, RequestClass, Scenario,
};
use crate::time::{Millis, at};
use probity_contract::hysteresis::{Hysteresis, Transition};
use probity_contract::verdict::{
    CheckVerdict, Effect, Entry, Evidence, Gate, Sample, Status, Subject, failing_status,
};
use std::time::Duration;

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
    let (own, fallback) = judged(specs, states, check);
    match fallback {
        None => own.verdict(at(now)),
        Some(fallback) => {
            let pair = [own, fallback];
            pair[0].verdict_among(&pair, |evidence| evidence, at(now))
        }
    }
}

/// What the verdict of `check` is judged from: its evidence, and its fallback's (the pair the
/// verdict judges among: the check, and at index 1 its fallback).
fn judged(
    specs: &[Check],
    states: &[CheckState],
    check: usize,
) -> (Evidence<Duration>, Option<Evidence<Duration>>) {
    let spec = &specs[check];
    let own = states[check].evidence(spec);
    match spec.fallback {
        None => (own, None),
        Some(fallback) => (
            Evidence {
                fallback: Some(1),
                ..own
            },
            Some(states[fallback].evidence(&specs[fallback])),
        ),
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
/// after `now`: probity's [`Evidence::next_change_among`], on the simulation's millisecond
/// clock (an instant between two milliseconds is reached at the later one).
pub(super) fn verdict_changes_by_itself(
    specs: &[Check],
    states: &[CheckState],
    check: usize,
    now: Millis,
) -> Option<Millis> {
    let next = match judged(specs, states, check) {
        (own, None) => own.next_change(at(now)),
        (own, Some(fallback)) => {
            let pair = [own, fallback];
            pair[0].next_change_among(&pair, |evidence| evidence, at(now))
        }
    }?;
    Some(next.as_nanos().div_ceil(1_000_000) as Millis)
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
    let status = if passed {
        Status::Pass
    } else {
        failing_status(spec.tier)
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

/// How a check's call to its dependency went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Call {
    /// Time until the call had its answer.
    pub(super) latency: Millis,
    /// Whether it succeeded.
    pub(super) answered: bool,
    /// For a failure: the pod's own pool had no connection for it (probity's `exhausted`).
    pub(super) local: bool,
}

impl Call {
    /// An answer after `latency`, passing or not.
    pub(super) fn answer(latency: Millis, answered: bool) -> Self {
        Call {
            latency,
            answered,
            local: false,
        }
    }

    /// A failure of the pod's own pool after `latency`.
    pub(super) fn local(latency: Millis) -> Self {
        Call {
            latency,
            answered: false,
            local: true,
        }
    }
}

/// How a request reaches a dependency it needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Fare {
    /// It calls the dependency.
    Direct,
    /// The dependency's check is served by its fallback: `share` of the requests are
    /// answered from `dependency`, the rest refused at once.
    Fallback { dependency: usize, share: f64 },
}

/// Where each dependency's fallback is, for the requests.
#[derive(Debug, Default)]
pub(super) struct Fallbacks {
    /// By dependency: the polled check of it that names a fallback, the fallback check and
    /// the fallback's dependency.
    pub(super) of: Vec<Option<(usize, usize, usize)>>,
}

impl Fallbacks {
    /// The fallbacks of a scenario's checks that have pollers.
    fn new(scenario: &Scenario, polled: &[bool]) -> Self {
        let targets = scenario
            .app
            .fallback_dependencies(scenario.dependencies.len());
        let of = scenario
            .app
            .fallbacks_by_dependency(scenario.dependencies.len())
            .into_iter()
            .zip(targets)
            .map(|(pair, target)| match (pair, target) {
                (Some((check, fallback)), Some(target)) if polled[check] => {
                    Some((check, fallback, target))
                }
                _ => None,
            })
            .collect();
        Fallbacks { of }
    }

    /// Whether any check has a fallback the requests can be served by.
    pub(super) fn any(&self) -> bool {
        self.of.iter().any(Option::is_some)
    }
}

/// A poll about to call its dependency.
#[derive(Debug, Clone, Copy)]
pub(super) struct Poll {
    /// The dependency it calls.
    pub(super) dependency: usize,
    /// What it asks of a pool modelled as a queue, and its acquire budget, when the pool
    /// may fail it.
    pub(super) asks: Option<(PoolCheck, Millis)>,
    /// A success changes nothing.
    quiet: bool,
}

/// The app's health policy in every pod: each process's check states, the pollers that
/// keep them and the fallbacks that serve in a failing check's place.
#[derive(Debug)]
pub(super) struct Policy<'a> {
    scenario: &'a Scenario,
    checks: &'a [Check],
    /// Which checks have pollers (those read from a cached snapshot).
    polled: Vec<bool>,
    /// Which checks' successful polls may leave no event (see [`super::poll_lane`]).
    quiet_polls: Vec<bool>,
    fallbacks: Fallbacks,
    /// Each pod's process (0: none; container IDs start at 1).
    process: Vec<u32>,
    /// Each pod's check states, `checks` apiece, of its current process.
    states: Vec<CheckState>,
    /// When a verdict judged with a fallback next changes by time alone, by pod, if a
    /// [`Event::Reassess`] is scheduled for it.
    reassess_at: Vec<Option<Millis>>,
    pollers: Pollers,
}

impl<'a> Policy<'a> {
    /// The policy a scenario's app runs, in pods with no process yet.
    pub(super) fn new(scenario: &'a Scenario) -> Self {
        let checks = &scenario.app.checks[..];
        let pods = scenario.fleet.replicas;
        // Only dependency checks read from a snapshot have pollers.
        let polled: Vec<bool> = checks
            .iter()
            .enumerate()
            .map(|(index, check)| {
                matches!(check.target, CheckTarget::Dependency(_))
                    && scenario.app.endpoints.iter().any(|endpoint| {
                        endpoint.mode == EndpointMode::Cached && endpoint.checks.contains(&index)
                    })
            })
            .collect();
        // A check fed by passive reports: its results must follow when the last came.
        let passive = |index: usize, check: &Check| {
            polled[index]
                && matches!(check.target, CheckTarget::Dependency(_))
                && check.passive_failure_threshold.is_some_and(|run| run > 0)
        };
        let quiet_polls = checks
            .iter()
            .enumerate()
            .map(|(index, check)| check.staleness.is_none() && !passive(index, check))
            .collect();
        let fallbacks = Fallbacks::new(scenario, &polled);
        Policy {
            scenario,
            checks,
            polled,
            quiet_polls,
            fallbacks,
            process: vec![0; pods],
            states: (0..pods)
                .flat_map(|_| checks.iter().map(CheckState::fresh))
                .collect(),
            reassess_at: vec![None; pods],
            pollers: Pollers::new(pods, checks.len()),
        }
    }

    /// Which checks have pollers.
    pub(super) fn polled_checks(&self) -> &[bool] {
        &self.polled
    }

    /// The fallbacks the requests can be served by.
    pub(super) fn fallbacks(&self) -> &Fallbacks {
        &self.fallbacks
    }

    /// The check states of `pod`'s process (meaningless while it has none).
    pub(super) fn states(&self, pod: usize) -> &[CheckState] {
        let count = self.checks.len();
        &self.states[pod * count..(pod + 1) * count]
    }

    fn state_mut(&mut self, pod: usize, check: usize) -> &mut CheckState {
        &mut self.states[pod * self.checks.len() + check]
    }

    /// Check `check`'s state in `pod`, to be set by a test.
    #[cfg(test)]
    pub(super) fn state_for_test(&mut self, pod: usize, check: usize) -> &mut CheckState {
        self.state_mut(pod, check)
    }

    /// A new process `process` in `pod`: its checks have not run yet, or (`settled`) have
    /// long passed.
    pub(super) fn new_process(&mut self, pod: usize, process: u32, settled: bool) {
        self.process[pod] = process;
        self.reassess_at[pod] = None;
        for check in 0..self.checks.len() {
            let spec = &self.checks[check];
            *self.state_mut(pod, check) = if settled {
                CheckState::settled(spec)
            } else {
                CheckState::fresh(spec)
            };
        }
        // A new process's pool has leaked nothing and holds no hung call.
        self.pool_changed(pod, 0, false);
    }

    /// `pod`'s process is gone: its pollers stop.
    pub(super) fn process_gone(&mut self, pod: usize) {
        self.process[pod] = 0;
        for check in 0..self.checks.len() {
            self.pollers
                .update(pod, check, PollKey::default(), false, Some(false));
        }
    }

    /// `pod`'s pool changed: the dependencies whose pool leaked dry (`exhausted`, a bit
    /// each), and whether hung health-check calls hold connections (`holds`).
    pub(super) fn pool_changed(&mut self, pod: usize, exhausted: u64, holds: bool) {
        for check in 0..self.checks.len() {
            let clear = match self.checks[check].target {
                CheckTarget::Dependency(dependency) => {
                    exhausted & (1 << dependency) == 0
                        && !holds
                        && self.scenario.dependencies[dependency].pool.is_none()
                        && self.scenario.app.pool_size != Some(0)
                }
                CheckTarget::Internal(_) => false,
            };
            self.refresh(pod, check, Some(clear));
        }
    }

    /// Refreshes the poller of one check after its state changed; `pool_clear`, when
    /// known anew, whether the app's pool cannot fail its call.
    fn refresh(&mut self, pod: usize, check: usize, pool_clear: Option<bool>) {
        let process = self.process[pod];
        if process == 0 {
            self.pollers
                .update(pod, check, PollKey::default(), false, Some(false));
            return;
        }
        let state = &self.states[pod * self.checks.len() + check];
        let quiet = self.quiet_polls[check]
            && !state.polling
            && !state.repoll
            && state.success_changes_nothing();
        let key = PollKey::new(process, state.poll_epoch);
        self.pollers.update(pod, check, key, quiet, pool_clear);
    }

    /// Starts the pollers of `pod`'s new process at `now`; in a settled fleet they run at
    /// random phases.
    pub(super) fn start_pollers(
        &mut self,
        pod: usize,
        process: u32,
        steady: bool,
        now: Millis,
        rng: &mut fastrand::Rng,
        effects: &mut Effects,
    ) {
        for (check, spec) in self.checks.iter().enumerate() {
            if !self.polled[check] {
                continue;
            }
            let offset = if steady { rng.u64(0..spec.interval) } else { 0 };
            effects.schedule(
                now + offset,
                Event::PollStart {
                    pod: pod as u32,
                    check: check as u16,
                    process,
                    epoch: 0,
                },
            );
            self.pollers.scheduled(pod, check, process, 0);
        }
    }

    /// A poll event of `process` in `epoch` comes up: the poll it starts, if it is current.
    pub(super) fn poll_due(
        &mut self,
        pod: usize,
        check: usize,
        process: u32,
        epoch: u32,
    ) -> Option<Poll> {
        let lane = self.pollers.current(pod, check, process, epoch)?;
        let spec = &self.checks[check];
        let CheckTarget::Dependency(dependency) = spec.target else {
            return None;
        };
        // A pool that cannot fail the call need not be looked at.
        let asks = (spec.uses_pool && !lane.pool_clear())
            .then_some((spec.pool_check, spec.acquire_budget));
        Some(Poll {
            dependency,
            asks,
            quiet: lane.quiet(),
        })
    }

    /// The poll started at `now` made its call, which went as `call`. The next poll is
    /// scheduled an interval (with jitter) after this one started, or when it ends if it
    /// runs longer: polls never overlap. Its result is recorded when it comes in (at once,
    /// for a call that took no time); a success that changes nothing leaves no event.
    #[expect(
        clippy::too_many_arguments,
        reason = "the poll's event and what it met"
    )]
    pub(super) fn called(
        &mut self,
        pod: usize,
        (check, process, epoch): (usize, u32, u32),
        poll: Poll,
        call: Call,
        now: Millis,
        rng: &mut fastrand::Rng,
        effects: &mut Effects,
    ) {
        let spec = &self.checks[check];
        let (interval, jitter, timeout) = (spec.interval, spec.jitter, spec.timeout);
        let (cost, success, local) = match timeout {
            Some(limit) if call.latency > limit => (limit, false, false),
            _ => (call.latency, call.answered, call.local),
        };
        let wait = if jitter > 0 {
            let spread = rng.u64(0..=2 * jitter);
            (interval + spread).saturating_sub(jitter)
        } else {
            interval
        };
        let next = (now + wait).max(now + cost);
        if cost == 0 {
            self.poll_done(pod, check, process, (success, local), now, effects);
        } else {
            // The result takes its place in the queue now, even if it never needs it.
            let order = effects.reserve();
            if !(success && poll.quiet) && self.process[pod] != 0 {
                self.state_mut(pod, check).polling = true;
                effects.schedule_in_order(
                    now + cost,
                    order,
                    Event::PollDone {
                        pod: pod as u32,
                        check: check as u16,
                        process,
                        success,
                        local,
                    },
                );
                self.refresh(pod, check, None);
            }
        }
        effects.schedule(
            next.max(now + 1),
            Event::PollStart {
                pod: pod as u32,
                check: check as u16,
                process,
                epoch,
            },
        );
        self.pollers.scheduled(pod, check, process, epoch);
    }

    /// A poll's result at `now` (`success`, and `local`: a failure of the pod's own pool):
    /// the hysteresis decides whether the check's state changes.
    pub(super) fn poll_done(
        &mut self,
        pod: usize,
        check: usize,
        process: u32,
        (success, local): (bool, bool),
        now: Millis,
        effects: &mut Effects,
    ) {
        if self.process[pod] != process {
            return;
        }
        let state = self.state_mut(pod, check);
        state.polling = false;
        let changed = state.observe(success, local, now).is_some();
        let repoll = std::mem::take(&mut state.repoll);
        self.refresh(pod, check, None);
        if changed {
            self.check_changed(pod, effects);
        }
        // A re-poll asked for during this poll runs as soon as it is recorded.
        if repoll {
            effects.push(effects::Effect::Repoll { pod, check });
        }
    }

    /// Polls now instead of at the next tick (probity's `wake`): returns the process and
    /// epoch of the poll to start now; a poll in flight finishes first, and the re-poll
    /// runs when it is recorded. The cadence then counts from the re-poll.
    pub(super) fn repoll(&mut self, pod: usize, check: usize) -> Option<(u32, u32)> {
        let process = self.process[pod];
        if !self.polled[check] || process == 0 {
            return None;
        }
        let state = self.state_mut(pod, check);
        if state.polling {
            state.repoll = true;
            self.refresh(pod, check, None);
            return None;
        }
        state.poll_epoch += 1;
        let epoch = state.poll_epoch;
        self.refresh(pod, check, None);
        Some((process, epoch))
    }

    /// Passive reports of real failures in `pod`'s process fail check `check` at once at
    /// `now`: returns whether it fell.
    pub(super) fn force_unhealthy(
        &mut self,
        pod: usize,
        check: usize,
        now: Millis,
        effects: &mut Effects,
    ) -> bool {
        // The forced result also counts as the latest result.
        let fell = self.state_mut(pod, check).force_unhealthy(now).is_some();
        self.refresh(pod, check, None);
        self.check_changed(pod, effects);
        fell
    }

    /// A check's state changed in `pod`: its probes may answer differently, and with
    /// fallbacks its requests may fare differently too (the handlers read the snapshot to
    /// serve from a fallback).
    fn check_changed(&self, pod: usize, effects: &mut Effects) {
        if self.fallbacks.any() {
            effects.reweighed(pod);
        } else {
            effects.push(effects::Effect::Wake(pod));
        }
    }

    /// The entry of check `check` in a `cached` endpoint's answer in `pod` at `now`.
    pub(super) fn cached_entry(&self, pod: usize, check: usize, now: Millis) -> Entry {
        cached_entry(self.checks, self.states(pod), check, now)
    }

    /// Whether check `check` fails in `pod` while its fallback serves in its place at `now`.
    pub(super) fn served_by_fallback(&self, pod: usize, check: usize, now: Millis) -> bool {
        served_by_fallback(self.checks, self.states(pod), check, now)
    }

    /// How a request of `class` fares at `need` in `pod`'s process at `now`: it calls the
    /// dependency, or, while the dependency's check is served by its fallback, the handler
    /// answers [`RequestClass::served_by_fallback`] of them from the fallback's dependency
    /// (probity's `HealthState::degraded`) and refuses the rest at once.
    pub(super) fn fare(&self, pod: usize, class: &RequestClass, need: usize, now: Millis) -> Fare {
        if let Some((check, _, fallback)) = self.fallbacks.of[need]
            && self.served_by_fallback(pod, check, now)
        {
            return Fare::Fallback {
                dependency: fallback,
                share: class.served_by_fallback,
            };
        }
        Fare::Direct
    }

    /// Whether any of `pod`'s checks fails while its fallback serves in its place at `now`.
    pub(super) fn serves_degraded(&self, pod: usize, now: Millis) -> bool {
        self.fallbacks
            .of
            .iter()
            .flatten()
            .any(|&(check, _, _)| self.served_by_fallback(pod, check, now))
    }

    /// Schedules a look at `pod`'s requests for when a verdict judged with a fallback may
    /// next change by time alone after `now` (no poll marks that instant).
    pub(super) fn schedule_reassessment(&mut self, pod: usize, now: Millis, effects: &mut Effects) {
        let process = self.process[pod];
        if process == 0 {
            return;
        }
        let states = self.states(pod);
        let next = self
            .fallbacks
            .of
            .iter()
            .flatten()
            .filter_map(|&(check, _, _)| verdict_changes_by_itself(self.checks, states, check, now))
            .min();
        let Some(next) = next else {
            return;
        };
        // One scheduled already at or before it looks again then, and schedules the next.
        if self.reassess_at[pod].is_some_and(|scheduled| scheduled > now && scheduled <= next) {
            return;
        }
        self.reassess_at[pod] = Some(next);
        effects.schedule(
            next,
            Event::Reassess {
                pod: pod as u32,
                process,
            },
        );
    }

    /// The reassessment of `process` in `pod` comes up at `now`: returns whether it is the
    /// one scheduled (a verdict judged with a fallback may have changed by time alone).
    pub(super) fn reassess(&mut self, pod: usize, process: u32, now: Millis) -> bool {
        if self.process[pod] != process || self.reassess_at[pod] != Some(now) {
            return false;
        }
        self.reassess_at[pod] = None;
        true
    }
}
