//! The verdict: every rule that turns check states, startup, shutdown and liveness conditions
//! into `pass`, `warn` or `fail`, for a probe and for a single check. Nothing else restates it.
//!
//! The rules, in one place:
//!
//! - **a check** ([`Evidence::verdict`]): no result yet, a result older than its staleness
//!   bound, a failed last poll, or a successful one while the hysteresis still counts the check
//!   unhealthy (recovering) is a failure; a failure fails a `hard` check, makes a `soft` one
//!   `warn` and an `info` one only reported; a hard check fails open (`warn`) for its window
//!   after it turned unhealthy, then closed; a healthy check whose last poll passed with a
//!   warning (a busy pool) is `warn` whatever its tier;
//! - **a fallback** ([`Evidence::fallback`]): a hard check that fails while the check it names
//!   as its fallback serves is `warn` (degraded, in rotation) instead of `fail` — drain for a
//!   local fault, degrade for a shared one. It degrades only on evidence that the dependency
//!   itself fails (a failed poll, or successes not yet `rise` in a row); a fault that is this
//!   instance's own ([`Sample::local`]: its pool exhausted while the database answers), no
//!   result yet, or a stale result still fails: draining is the cure for those, and no other
//!   instance shares them;
//! - **readiness** ([`readiness`]): fails while shutting down, while any internal startup step
//!   is pending (the `startup` gate), while a step that waits on a dependency is pending (each
//!   its own entry, so the answer names what the boot waits for), and while liveness fails;
//!   otherwise the checks decide: any counted `fail` fails it, any counted `warn` (not `info`)
//!   makes it `warn`; an excluded entry is shown and not counted;
//! - **liveness** ([`liveness`]): fails while any condition fails;
//! - **startup** ([`startup`]): fails while any *internal* boot step is pending — a step that
//!   waits on a dependency gates readiness only, so an outage during a rollout never gets new
//!   pods killed (the restart storm);
//! - **a check asked alone** ([`Evidence::serves_alone`]): a failing check does not serve,
//!   whatever its tier, except a hard check inside its fail-open window; a passing check with a
//!   warning serves.
//!
//! - **change by time alone** ([`Evidence::next_change`], [`next_change`]): a fresh result turns
//!   stale one step past its bound, a fail-open window closes; nothing else changes a verdict
//!   without a new result. A cache of answers holds until then, and the simulator evaluates
//!   again then.
//!
//! The functions are generic over the clock ([`Moment`]): the runtime evaluates at
//! `Instant::now()`, the simulator at simulated time, with the same code. A probe's fast path
//! ([`status`]) folds the very entries the full evaluation lists, so the two cannot disagree.

use crate::tier::Tier;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::ControlFlow;
use std::time::Duration;

/// A point in time the verdict can measure ages from.
pub trait Moment: Copy + Ord + fmt::Debug {
    /// Time from `earlier` to `self`; zero when `earlier` is later.
    fn since(self, earlier: Self) -> Duration;

    /// `self` moved `duration` later; `None` beyond what the clock can represent (a moment
    /// that never comes).
    fn after(self, duration: Duration) -> Option<Self>;
}

impl Moment for std::time::Instant {
    fn since(self, earlier: Self) -> Duration {
        self.saturating_duration_since(earlier)
    }

    fn after(self, duration: Duration) -> Option<Self> {
        self.checked_add(duration)
    }
}

/// Time since some origin (a simulation's start).
impl Moment for Duration {
    #[inline]
    fn since(self, earlier: Self) -> Duration {
        self.saturating_sub(earlier)
    }

    #[inline]
    fn after(self, duration: Duration) -> Option<Self> {
        self.checked_add(duration)
    }
}

/// The step after an instant: a result is stale once its age *exceeds* the bound, so the
/// first instant it is stale at is one nanosecond past `at + staleness` (a clock counting in
/// coarser steps, like a simulation's milliseconds, rounds it up to its next step).
const STEP: Duration = Duration::from_nanos(1);

/// The outcome of evaluating a check or a probe: `pass`, `warn` or `fail`.
///
/// `pass` and `warn` answer 200, `fail` answers 503 (the IETF health-check draft: pass and warn
/// use 2xx, fail uses 4xx/5xx).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Everything needed is there.
    #[default]
    Pass,
    /// Serving, with something to look at: degraded (a soft check fails, a hard check fails
    /// open or is served by its fallback), or a poll that passed with a warning (a busy pool).
    Warn,
    /// Not serving.
    Fail,
}

impl Status {
    /// `pass`, `warn` or `fail`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
    }

    /// The HTTP status code: 200 for pass and warn, 503 for fail.
    pub fn http_code(self) -> u16 {
        match self {
            Status::Pass | Status::Warn => 200,
            Status::Fail => 503,
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The latest completed poll of a check, as far as the verdict cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample<M> {
    /// When the poll finished.
    pub at: M,
    /// Whether it succeeded.
    pub ok: bool,
    /// Whether it succeeded with a warning (a busy pool).
    pub warning: bool,
    /// For a failure: whether its cause is this instance's own capacity (its pool exhausted
    /// while the dependency answers), which no other instance shares and draining cures. A
    /// fallback never covers it.
    pub local: bool,
}

/// What the verdict knows of one check at one instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence<M> {
    /// The check's tier.
    pub tier: Tier,
    /// The hysteresis state: healthy once `rise` successes came in a row.
    pub healthy: bool,
    /// The latest completed poll (or passive report).
    pub last: Option<Sample<M>>,
    /// When the check last turned unhealthy after having been healthy (for the fail-open
    /// window; a check that never passed does not fail open).
    pub unhealthy_since: Option<M>,
    /// A result older than this counts as a failure.
    pub staleness: Duration,
    /// For a hard check: how long it fails open after turning unhealthy.
    pub fail_open_for: Option<Duration>,
    /// Successes in a row.
    pub consecutive_successes: u32,
    /// Successes in a row needed to turn healthy again.
    pub rise: u32,
    /// For a hard check: the index (among the readiness checks) of the check that serves
    /// instead while this one fails. Resolved and validated when the checks are declared: it
    /// names another check, which has no fallback of its own.
    pub fallback: Option<usize>,
}

/// Why a check has the status it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// Healthy, and the last poll passed.
    Passing,
    /// Healthy, and the last poll passed with a warning.
    Warning,
    /// No poll has finished yet.
    NoResult,
    /// The last result is older than its staleness bound.
    Stale {
        /// The result's age.
        age: Duration,
        /// The bound.
        bound: Duration,
    },
    /// The last poll passed, but not yet `rise` in a row.
    Recovering {
        /// Successes in a row so far.
        successes: u32,
        /// Successes in a row needed.
        rise: u32,
    },
    /// The last poll (or a passive report) failed.
    Failed,
}

impl Cause {
    /// Whether the cause is a failure of the check (anything but passing or warning).
    pub fn is_failure(self) -> bool {
        !matches!(self, Cause::Passing | Cause::Warning)
    }
}

/// A check's status at one instant, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckVerdict {
    /// The check's own status.
    pub status: Status,
    /// Why.
    pub cause: Cause,
    /// For a hard check failing open: how long it still fails open.
    pub failing_open: Option<Duration>,
    /// For a hard check failing while its fallback serves: the fallback's index. The check is
    /// then `warn` (degraded) instead of `fail`.
    pub served_by: Option<usize>,
}

impl<M: Moment> Evidence<M> {
    /// The check's status at `now`, and why.
    #[inline]
    pub fn verdict(&self, now: M) -> CheckVerdict {
        let Some(last) = self.last else {
            return self.failing(Cause::NoResult, now);
        };
        let age = now.since(last.at);
        if age > self.staleness {
            return self.failing(
                Cause::Stale {
                    age,
                    bound: self.staleness,
                },
                now,
            );
        }
        if self.healthy {
            let warned = last.ok && last.warning;
            return CheckVerdict {
                status: if warned { Status::Warn } else { Status::Pass },
                cause: if warned {
                    Cause::Warning
                } else {
                    Cause::Passing
                },
                failing_open: None,
                served_by: None,
            };
        }
        let cause = if last.ok {
            Cause::Recovering {
                successes: self.consecutive_successes,
                rise: self.rise,
            }
        } else {
            Cause::Failed
        };
        self.failing(cause, now)
    }

    /// The check's status at `now`.
    pub fn status(&self, now: M) -> Status {
        self.verdict(now).status
    }

    /// The check's own answer when asked alone (`/readyz/db`, gRPC service `db`): a failing
    /// check does not serve, whatever its tier — so `/readyz/cache` tells the truth about the
    /// cache although the cache alone never fails `/readyz` — except a hard check inside its
    /// fail-open window; a passing check with a warning serves.
    pub fn serves_alone(&self, now: M) -> bool {
        let verdict = self.verdict(now);
        !verdict.cause.is_failure() || verdict.failing_open.is_some()
    }

    /// The first instant after `now` at which the check's verdict may change by time alone,
    /// with no new result: its last result turning stale, or its fail-open window closing.
    /// `None` when only a new result (or a change of state) can change it. Before that
    /// instant the verdict is the one at `now`, save the figures that count time within it
    /// (a stale result's age, the time left failing open).
    ///
    /// What a cache of answers is bounded by, and when a simulation evaluates the check again.
    pub fn next_change(&self, now: M) -> Option<M> {
        let stale = self
            .last
            .and_then(|last| last.at.after(self.staleness))
            .and_then(|bound| bound.after(STEP));
        let closes = match (self.tier, self.fail_open_for, self.unhealthy_since) {
            (Tier::Hard, Some(window), Some(since)) => since.after(window),
            _ => None,
        };
        [stale, closes]
            .into_iter()
            .flatten()
            .filter(|&at| at > now)
            .min()
    }

    /// [`Evidence::next_change`] of the check's verdict among `checks`
    /// ([`Evidence::verdict_among`]): its own, or its fallback's, whichever comes first — a
    /// fallback that stops serving ends the check's degraded verdict.
    pub fn next_change_among<'a, C: 'a>(
        &self,
        checks: &'a [C],
        evidence: impl Fn(&'a C) -> &'a Evidence<M>,
        now: M,
    ) -> Option<M>
    where
        M: 'a,
    {
        let fallback = self
            .fallback
            .and_then(|index| checks.get(index))
            .and_then(|fallback| evidence(fallback).next_change(now));
        self.next_change(now).into_iter().chain(fallback).min()
    }

    #[inline]
    fn failing(&self, cause: Cause, now: M) -> CheckVerdict {
        let failing_open = match (self.tier, self.fail_open_for, self.unhealthy_since) {
            (Tier::Hard, Some(window), Some(since)) => {
                Some(window.saturating_sub(now.since(since))).filter(|left| !left.is_zero())
            }
            _ => None,
        };
        let status = match failing_open {
            Some(_) => Status::Warn,
            None => failing_status(self.tier),
        };
        CheckVerdict {
            status,
            cause,
            failing_open,
            served_by: None,
        }
    }

    /// Whether a fallback may serve for this check's failure: the failure says the dependency
    /// itself fails (a failed poll that is not this instance's own capacity fault, or polls
    /// passing again but not yet `rise` in a row). No result and a stale result are not
    /// evidence about the dependency — the instance may be the one in trouble — so they fail.
    fn fallback_may_serve(&self, verdict: &CheckVerdict) -> bool {
        match verdict.cause {
            Cause::Failed => !self.last.is_some_and(|last| last.local),
            Cause::Recovering { .. } => true,
            Cause::Passing | Cause::Warning | Cause::NoResult | Cause::Stale { .. } => false,
        }
    }

    /// The check's status at `now` among `checks` (which holds it, and the check its
    /// [`fallback`](Evidence::fallback) names): its own verdict, except that a hard check
    /// failing while its fallback serves ([`Evidence::serves_alone`]) is `warn`, served by
    /// it. A fallback index outside `checks` serves nothing.
    #[inline]
    pub fn verdict_among<'a, C: 'a>(
        &self,
        checks: &'a [C],
        evidence: impl Fn(&'a C) -> &'a Evidence<M>,
        now: M,
    ) -> CheckVerdict
    where
        M: 'a,
    {
        let own = self.verdict(now);
        let Some(index) = self.fallback else {
            return own;
        };
        if self.tier != Tier::Hard || own.status != Status::Fail || !self.fallback_may_serve(&own) {
            return own;
        }
        match checks.get(index).map(evidence) {
            Some(fallback) if fallback.serves_alone(now) => CheckVerdict {
                status: Status::Warn,
                served_by: Some(index),
                ..own
            },
            _ => own,
        }
    }
}

/// The status of a failing check of `tier` outside any fail-open window: a hard check fails,
/// a soft or an info check is `warn` (an info check's never counts).
pub fn failing_status(tier: Tier) -> Status {
    match tier {
        Tier::Hard => Status::Fail,
        Tier::Soft | Tier::Info => Status::Warn,
    }
}

/// The first instant after `now` at which any of `checks`' verdicts may change by time alone
/// ([`Evidence::next_change`]): until then the readiness answer is the one at `now`, save the
/// figures that count time. Liveness and startup never change by time alone: their watchers
/// publish every change.
pub fn next_change<'a, M: Moment + 'a, C: 'a>(
    checks: &'a [C],
    evidence: impl Fn(&'a C) -> &'a Evidence<M>,
    now: M,
) -> Option<M> {
    checks
        .iter()
        .filter_map(|check| evidence(check).next_change(now))
        .min()
}

/// The gates every readiness answer passes through before the checks are asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gates<M> {
    /// When shutdown started, if it has.
    pub shutting_down_since: Option<M>,
    /// Whether there are internal startup steps at all (the `startup` gate is listed only then).
    pub has_steps: bool,
    /// Whether any internal startup step is pending.
    pub steps_pending: bool,
    /// Whether any liveness condition fails (a wedged instance gets no traffic while it waits
    /// to be restarted).
    pub liveness_failing: bool,
}

/// One of the readiness gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Gate {
    /// Shutting down.
    Shutdown,
    /// Startup steps pending.
    Startup,
    /// Liveness failing.
    Liveness,
}

impl Gate {
    /// The gate's name in every output (`shutdown`, `startup`, `liveness`).
    pub fn name(self) -> &'static str {
        match self {
            Gate::Shutdown => "shutdown",
            Gate::Startup => "startup",
            Gate::Liveness => "liveness",
        }
    }
}

/// What an entry of a probe's answer is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Subject {
    /// A readiness gate.
    Gate(Gate),
    /// The readiness check at this index.
    Check(usize),
    /// The liveness condition at this index.
    Condition(usize),
    /// The startup step at this index.
    Step(usize),
}

/// One entry of a probe's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// What it is about.
    pub subject: Subject,
    /// Its status.
    pub status: Status,
    /// The check's tier, for a check.
    pub tier: Option<Tier>,
    /// The check's own verdict, for a check.
    pub check: Option<CheckVerdict>,
}

/// What an entry does to its probe's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Nothing: passing, excluded, or an `info` check failing.
    None,
    /// Makes the probe `warn`.
    Degrades,
    /// Makes the probe `fail`.
    Fails,
}

impl Entry {
    /// What the entry does to its probe, when counted.
    #[inline]
    pub fn effect(&self) -> Effect {
        match (self.status, self.tier) {
            (Status::Fail, _) => Effect::Fails,
            (Status::Warn, Some(Tier::Info)) | (Status::Pass, _) => Effect::None,
            (Status::Warn, _) => Effect::Degrades,
        }
    }
}

/// Every entry of the readiness answer at `now`: the gates that apply, the startup steps that
/// wait on a dependency (each `(step, complete)`, numbered as the caller numbers them), then
/// each check of `checks` (its [`Evidence`] read through `evidence`), judged with its fallback
/// ([`Evidence::verdict_among`]).
pub fn readiness<'a, M: Moment + 'a, C: 'a>(
    gates: Gates<M>,
    dependency_steps: impl IntoIterator<Item = (usize, bool)> + 'a,
    checks: &'a [C],
    evidence: impl Fn(&'a C) -> &'a Evidence<M> + Copy + 'a,
    now: M,
) -> impl Iterator<Item = Entry> + 'a {
    let gate = |gate, failing: bool| Entry {
        subject: Subject::Gate(gate),
        status: if failing { Status::Fail } else { Status::Pass },
        tier: None,
        check: None,
    };
    let shutdown = gates
        .shutting_down_since
        .map(|_| gate(Gate::Shutdown, true));
    let startup = gates
        .has_steps
        .then(|| gate(Gate::Startup, gates.steps_pending));
    let liveness = gates.liveness_failing.then(|| gate(Gate::Liveness, true));
    let steps = dependency_steps.into_iter().map(|(index, complete)| Entry {
        subject: Subject::Step(index),
        status: if complete { Status::Pass } else { Status::Fail },
        tier: None,
        check: None,
    });
    let checks = checks.iter().enumerate().map(move |(index, check)| {
        let own = evidence(check);
        let verdict = own.verdict_among(checks, evidence, now);
        Entry {
            subject: Subject::Check(index),
            status: verdict.status,
            tier: Some(own.tier),
            check: Some(verdict),
        }
    });
    shutdown
        .into_iter()
        .chain(startup)
        .chain(liveness)
        .chain(steps)
        .chain(checks)
}

/// Every entry of the liveness answer: one per condition, failing or not.
pub fn liveness(failing: impl IntoIterator<Item = bool>) -> impl Iterator<Item = Entry> {
    failing
        .into_iter()
        .enumerate()
        .map(|(index, failing)| Entry {
            subject: Subject::Condition(index),
            status: if failing { Status::Fail } else { Status::Pass },
            tier: None,
            check: None,
        })
}

/// Every entry of the startup answer: one per **internal** boot step (steps that wait on a
/// dependency gate readiness only and are left out by the caller), pending or complete.
pub fn startup(complete: impl IntoIterator<Item = bool>) -> impl Iterator<Item = Entry> {
    complete
        .into_iter()
        .enumerate()
        .map(|(index, complete)| Entry {
            subject: Subject::Step(index),
            status: if complete { Status::Pass } else { Status::Fail },
            tier: None,
            check: None,
        })
}

/// A probe's status from its entries, each paired with whether the request excluded it: any
/// counted entry that fails fails the probe; any that degrades makes it `warn`. The status of
/// [`probe`]'s verdict, without its lists: it allocates nothing and stops at the first failure.
pub fn status(entries: impl IntoIterator<Item = (Entry, bool)>) -> Status {
    // `try_fold` rather than a `for` loop: a chain of the gates, the steps and the checks
    // (what `readiness` returns) is folded part by part instead of asking at every entry which
    // part it is in.
    let folded = entries
        .into_iter()
        .try_fold(Status::Pass, |worst, (entry, excluded)| {
            if excluded {
                return ControlFlow::Continue(worst);
            }
            match entry.effect() {
                Effect::Fails => ControlFlow::Break(()),
                Effect::Degrades => ControlFlow::Continue(Status::Warn),
                Effect::None => ControlFlow::Continue(worst),
            }
        });
    match folded {
        ControlFlow::Continue(worst) => worst,
        ControlFlow::Break(()) => Status::Fail,
    }
}

/// A probe's verdict: its status and the entries that decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeVerdict {
    /// The probe's status ([`status`] of the same entries).
    pub status: Status,
    /// Entries whose failure fails the probe.
    pub failing: Vec<Subject>,
    /// Entries that degrade it without failing it: a dependency is failing and the service
    /// still serves — a soft check failing, a hard check failing open or served by its
    /// fallback.
    pub degraded: Vec<Subject>,
    /// Checks whose last poll passed with a warning (a busy pool): nothing fails, the probe is
    /// `warn` without being degraded.
    pub warnings: Vec<Subject>,
    /// Each degraded check served by its fallback, with the fallback's index.
    pub served_by: Vec<(Subject, usize)>,
}

/// A probe's verdict from its entries, each paired with whether the request excluded it: what
/// every answer that names what decided it (`failing`, `degraded`) is built from.
pub fn probe(entries: impl IntoIterator<Item = (Entry, bool)>) -> ProbeVerdict {
    let mut verdict = ProbeVerdict {
        status: Status::Pass,
        failing: Vec::new(),
        degraded: Vec::new(),
        warnings: Vec::new(),
        served_by: Vec::new(),
    };
    for (entry, excluded) in entries {
        if excluded {
            continue;
        }
        match entry.effect() {
            Effect::Fails => {
                verdict.status = Status::Fail;
                verdict.failing.push(entry.subject);
            }
            Effect::Degrades => {
                if verdict.status == Status::Pass {
                    verdict.status = Status::Warn;
                }
                let check = entry.check;
                if check.is_some_and(|check| check.cause == Cause::Warning) {
                    verdict.warnings.push(entry.subject);
                } else {
                    verdict.degraded.push(entry.subject);
                    if let Some(fallback) = check.and_then(|check| check.served_by) {
                        verdict.served_by.push((entry.subject, fallback));
                    }
                }
            }
            Effect::None => {}
        }
    }
    verdict
}

#[cfg(test)]
mod tests;
