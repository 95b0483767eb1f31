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
    fn since(self, earlier: Self) -> Duration {
        self.saturating_sub(earlier)
    }

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
/// counted entry that fails fails the probe; any that degrades makes it `warn`.
pub fn status(entries: impl IntoIterator<Item = (Entry, bool)>) -> Status {
    let mut worst = Status::Pass;
    for (entry, excluded) in entries {
        if excluded {
            continue;
        }
        match entry.effect() {
            Effect::Fails => return Status::Fail,
            Effect::Degrades => worst = Status::Warn,
            Effect::None => {}
        }
    }
    worst
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(millis: u64) -> Duration {
        Duration::from_millis(millis)
    }

    fn evidence(tier: Tier) -> Evidence<Duration> {
        Evidence {
            tier,
            healthy: true,
            last: Some(Sample {
                at: at(0),
                ok: true,
                warning: false,
                local: false,
            }),
            unhealthy_since: None,
            staleness: Duration::from_secs(3),
            fail_open_for: None,
            consecutive_successes: 3,
            rise: 3,
            fallback: None,
        }
    }

    #[test]
    fn a_check_without_a_result_fails_by_its_tier() {
        let mut hard = evidence(Tier::Hard);
        hard.last = None;
        hard.healthy = false;
        assert_eq!(hard.verdict(at(0)).cause, Cause::NoResult);
        assert_eq!(hard.status(at(0)), Status::Fail);
        let mut soft = hard.clone();
        soft.tier = Tier::Soft;
        assert_eq!(soft.status(at(0)), Status::Warn);
        assert!(!soft.serves_alone(at(0)));
    }

    #[test]
    fn a_stale_result_is_a_failure_never_a_stale_success() {
        let check = evidence(Tier::Hard);
        assert_eq!(check.status(at(3000)), Status::Pass);
        let verdict = check.verdict(at(3001));
        assert_eq!(verdict.status, Status::Fail);
        assert_eq!(
            verdict.cause,
            Cause::Stale {
                age: at(3001),
                bound: Duration::from_secs(3)
            }
        );
    }

    #[test]
    fn a_warning_is_warn_for_every_tier_and_still_serves() {
        let mut check = evidence(Tier::Hard);
        check.last = Some(Sample {
            at: at(0),
            ok: true,
            warning: true,
            local: false,
        });
        assert_eq!(check.verdict(at(10)).cause, Cause::Warning);
        assert_eq!(check.status(at(10)), Status::Warn);
        assert!(check.serves_alone(at(10)));
    }

    #[test]
    fn a_hard_check_fails_open_for_its_window_then_closed() {
        let mut check = evidence(Tier::Hard);
        check.healthy = false;
        check.last = Some(Sample {
            at: at(9_000),
            ok: false,
            warning: false,
            local: false,
        });
        check.unhealthy_since = Some(at(0));
        check.fail_open_for = Some(Duration::from_secs(10));
        let open = check.verdict(at(9_500));
        assert_eq!(open.status, Status::Warn);
        assert_eq!(open.failing_open, Some(Duration::from_millis(500)));
        assert!(check.serves_alone(at(9_500)));
        assert_eq!(check.status(at(10_000)), Status::Fail);
        assert!(!check.serves_alone(at(10_000)));
    }

    #[test]
    fn readiness_gates_come_first_and_the_fast_path_folds_the_same_entries() {
        let checks = [evidence(Tier::Hard), evidence(Tier::Soft)];
        let mut gates = Gates {
            shutting_down_since: None,
            has_steps: true,
            steps_pending: false,
            liveness_failing: false,
        };
        let entries: Vec<Entry> = readiness(gates, [], &checks, |e| e, at(10)).collect();
        assert_eq!(entries[0].subject, Subject::Gate(Gate::Startup));
        assert_eq!(entries.len(), 3);
        assert_eq!(status(entries.iter().map(|e| (*e, false))), Status::Pass);

        gates.steps_pending = true;
        let entries = readiness(gates, [], &checks, |e| e, at(10)).map(|entry| (entry, false));
        assert_eq!(status(entries), Status::Fail);
        // Excluded, the pending startup gate no longer counts.
        let entries = readiness(gates, [], &checks, |e| e, at(10))
            .map(|entry| (entry, entry.subject == Subject::Gate(Gate::Startup)));
        assert_eq!(status(entries), Status::Pass);
        gates.steps_pending = false;

        // A step that waits on a dependency is an entry of its own, failing while pending.
        let entries: Vec<Entry> = readiness(gates, [(4, false)], &checks, |e| e, at(10)).collect();
        assert_eq!(entries[1].subject, Subject::Step(4));
        assert_eq!(entries[1].status, Status::Fail);
        assert_eq!(status(entries.iter().map(|e| (*e, false))), Status::Fail);

        gates.shutting_down_since = Some(at(5));
        let first = readiness(gates, [], &checks, |e| e, at(10)).next().unwrap();
        assert_eq!(first.subject, Subject::Gate(Gate::Shutdown));
    }

    #[test]
    fn an_info_check_failing_never_changes_the_status() {
        let mut info = evidence(Tier::Info);
        info.healthy = false;
        info.last = Some(Sample {
            at: at(0),
            ok: false,
            warning: false,
            local: false,
        });
        let entry = readiness(
            Gates {
                shutting_down_since: None,
                has_steps: false,
                steps_pending: false,
                liveness_failing: false,
            },
            [],
            std::slice::from_ref(&info),
            |e| e,
            at(1),
        )
        .next()
        .unwrap();
        assert_eq!(entry.status, Status::Warn);
        assert_eq!(entry.effect(), Effect::None);
        assert_eq!(status([(entry, false)]), Status::Pass);
    }

    fn open() -> Gates<Duration> {
        Gates {
            shutting_down_since: None,
            has_steps: false,
            steps_pending: false,
            liveness_failing: false,
        }
    }

    fn failed(mut check: Evidence<Duration>, local: bool) -> Evidence<Duration> {
        check.healthy = false;
        check.consecutive_successes = 0;
        check.last = Some(Sample {
            at: at(0),
            ok: false,
            warning: false,
            local,
        });
        check
    }

    fn db_and_cache(db: Evidence<Duration>, cache: Evidence<Duration>) -> [Evidence<Duration>; 2] {
        [
            Evidence {
                fallback: Some(1),
                ..db
            },
            cache,
        ]
    }

    #[test]
    fn a_hard_check_failing_while_its_fallback_serves_degrades() {
        let checks = db_and_cache(failed(evidence(Tier::Hard), false), evidence(Tier::Soft));
        let verdict = checks[0].verdict_among(&checks, |e| e, at(10));
        assert_eq!(verdict.status, Status::Warn);
        assert_eq!(verdict.served_by, Some(1));
        assert_eq!(verdict.cause, Cause::Failed);
        // Asked alone, the check still tells the truth: it does not serve.
        assert!(!checks[0].serves_alone(at(10)));
        let entries = readiness(open(), [], &checks, |e| e, at(10));
        assert_eq!(status(entries.map(|entry| (entry, false))), Status::Warn);
    }

    #[test]
    fn a_check_recovering_is_still_served_by_its_fallback() {
        let mut db = failed(evidence(Tier::Hard), false);
        db.last = Some(Sample {
            at: at(0),
            ok: true,
            warning: false,
            local: false,
        });
        db.consecutive_successes = 1;
        let checks = db_and_cache(db, evidence(Tier::Soft));
        let verdict = checks[0].verdict_among(&checks, |e| e, at(10));
        assert_eq!(verdict.status, Status::Warn);
        assert_eq!(verdict.served_by, Some(1));
    }

    #[test]
    fn when_the_fallback_fails_too_readiness_fails() {
        let checks = db_and_cache(
            failed(evidence(Tier::Hard), false),
            failed(evidence(Tier::Soft), false),
        );
        let verdict = checks[0].verdict_among(&checks, |e| e, at(10));
        assert_eq!(verdict.status, Status::Fail);
        assert_eq!(verdict.served_by, None);
        let entries = readiness(open(), [], &checks, |e| e, at(10));
        assert_eq!(status(entries.map(|entry| (entry, false))), Status::Fail);
    }

    #[test]
    fn a_local_fault_no_result_or_a_stale_result_fails_whatever_the_fallback() {
        let cache = evidence(Tier::Soft);
        let local = db_and_cache(failed(evidence(Tier::Hard), true), cache.clone());
        assert_eq!(
            local[0].verdict_among(&local, |e| e, at(10)).status,
            Status::Fail
        );

        let mut none = evidence(Tier::Hard);
        none.last = None;
        none.healthy = false;
        let none = db_and_cache(none, cache.clone());
        assert_eq!(
            none[0].verdict_among(&none, |e| e, at(10)).status,
            Status::Fail
        );

        let mut cache_fresh = cache;
        cache_fresh.last = Some(Sample {
            at: at(9_000),
            ok: true,
            warning: false,
            local: false,
        });
        let stale = db_and_cache(evidence(Tier::Hard), cache_fresh);
        let verdict = stale[0].verdict_among(&stale, |e| e, at(9_500));
        assert!(matches!(verdict.cause, Cause::Stale { .. }));
        assert_eq!(verdict.status, Status::Fail);
    }

    #[test]
    fn a_passing_check_with_a_fallback_is_its_own_verdict() {
        let checks = db_and_cache(evidence(Tier::Hard), failed(evidence(Tier::Soft), false));
        let verdict = checks[0].verdict_among(&checks, |e| e, at(10));
        assert_eq!(verdict, checks[0].verdict(at(10)));
        // A fallback index that names nothing serves nothing.
        let lonely = [Evidence {
            fallback: Some(7),
            ..failed(evidence(Tier::Hard), false)
        }];
        assert_eq!(
            lonely[0].verdict_among(&lonely, |e| e, at(10)).status,
            Status::Fail
        );
    }

    #[test]
    fn a_fresh_result_changes_one_step_past_its_staleness_bound() {
        let check = evidence(Tier::Hard);
        let next = check.next_change(at(10)).unwrap();
        assert_eq!(next, at(3000) + STEP);
        assert_eq!(check.verdict(at(3000)).status, Status::Pass);
        assert!(matches!(check.verdict(next).cause, Cause::Stale { .. }));
        // Once stale, only a new result changes it.
        assert_eq!(check.next_change(next), None);
        // A bound the clock cannot reach never comes.
        let forever = Evidence {
            staleness: Duration::MAX,
            ..evidence(Tier::Hard)
        };
        assert_eq!(forever.next_change(at(10)), None);
    }

    #[test]
    fn a_fail_open_window_changes_the_verdict_when_it_closes() {
        let mut check = failed(evidence(Tier::Hard), false);
        check.last = Some(Sample {
            at: at(9_000),
            ok: false,
            warning: false,
            local: false,
        });
        check.unhealthy_since = Some(at(0));
        check.fail_open_for = Some(Duration::from_secs(10));
        assert_eq!(check.next_change(at(9_500)), Some(at(10_000)));
        assert_eq!(check.status(at(9_999)), Status::Warn);
        assert_eq!(check.status(at(10_000)), Status::Fail);
        // After it closes, the result turning stale is what comes next.
        assert_eq!(check.next_change(at(10_000)), Some(at(12_000) + STEP));
        // A soft check has no window: its failure reads the same until the result is stale.
        let soft = Evidence {
            tier: Tier::Soft,
            ..check
        };
        assert_eq!(soft.next_change(at(9_500)), Some(at(12_000) + STEP));
    }

    #[test]
    fn a_check_served_by_its_fallback_changes_when_the_fallback_does() {
        let mut cache = evidence(Tier::Soft);
        cache.last = Some(Sample {
            at: at(500),
            ok: true,
            warning: false,
            local: false,
        });
        let mut db = failed(evidence(Tier::Hard), false);
        db.last = Some(Sample {
            at: at(2_000),
            ok: false,
            warning: false,
            local: false,
        });
        let checks = db_and_cache(db, cache);
        // The cache's result goes stale first, and with it the check's fallback.
        let next = checks[0].next_change_among(&checks, |e| e, at(1_000));
        assert_eq!(next, Some(at(3_500) + STEP));
        assert_eq!(next_change(&checks, |e| e, at(1_000)), next);
        let before = checks[0].verdict_among(&checks, |e| e, at(3_500));
        let after = checks[0].verdict_among(&checks, |e| e, next.unwrap());
        assert_eq!(before.served_by, Some(1));
        assert_eq!(after.served_by, None);
        assert_eq!(after.status, Status::Fail);
    }

    #[test]
    fn a_failure_fails_a_hard_check_and_warns_any_other() {
        assert_eq!(failing_status(Tier::Hard), Status::Fail);
        assert_eq!(failing_status(Tier::Soft), Status::Warn);
        assert_eq!(failing_status(Tier::Info), Status::Warn);
    }

    #[test]
    fn liveness_and_startup_fail_on_any_entry() {
        assert_eq!(
            status(liveness([false, true]).map(|entry| (entry, false))),
            Status::Fail
        );
        assert_eq!(
            status(startup([true, true]).map(|entry| (entry, false))),
            Status::Pass
        );
        assert_eq!(
            status(startup([true, false]).map(|entry| (entry, false))),
            Status::Fail
        );
    }

    /// What a verdict is, leaving out the figures that count time within it.
    fn shape(verdict: CheckVerdict) -> (Status, bool, bool, Option<usize>, bool) {
        (
            verdict.status,
            verdict.cause.is_failure(),
            matches!(verdict.cause, Cause::Stale { .. }),
            verdict.served_by,
            verdict.failing_open.is_some(),
        )
    }

    fn arbitrary_evidence() -> impl proptest::strategy::Strategy<Value = Evidence<Duration>> {
        use proptest::prelude::*;
        let tier = prop_oneof![Just(Tier::Hard), Just(Tier::Soft), Just(Tier::Info)];
        (
            tier,
            any::<bool>(),
            proptest::option::of((0u64..20_000, any::<bool>(), any::<bool>(), any::<bool>())),
            proptest::option::of(0u64..20_000),
            1u64..10_000,
            proptest::option::of(1u64..10_000),
            0u32..4,
            1u32..4,
        )
            .prop_map(
                |(tier, healthy, last, since, staleness, window, successes, rise)| Evidence {
                    tier,
                    healthy,
                    last: last.map(|(ms, ok, warning, local)| Sample {
                        at: at(ms),
                        ok,
                        warning: ok && warning,
                        local: !ok && local,
                    }),
                    unhealthy_since: since.map(at),
                    staleness: Duration::from_millis(staleness),
                    fail_open_for: window.map(Duration::from_millis),
                    consecutive_successes: successes,
                    rise,
                    fallback: None,
                },
            )
    }

    proptest::proptest! {
        /// Between `now` and `next_change` the verdict of a check with its fallback holds at
        /// every instant (figures that count time aside); with no `next_change` it holds for
        /// ever.
        #[test]
        fn the_verdict_holds_until_its_next_change(
            check in arbitrary_evidence(),
            fallback in arbitrary_evidence(),
            has_fallback in proptest::bool::ANY,
            now_ms in 0u64..30_000,
            probes in proptest::collection::vec(0u64..40_000, 1..40),
        ) {
            let checks = [
                Evidence { fallback: has_fallback.then_some(1), ..check },
                Evidence { tier: Tier::Soft, ..fallback },
            ];
            let now = at(now_ms);
            let next = checks[0].next_change_among(&checks, |e| e, now);
            let at_now = shape(checks[0].verdict_among(&checks, |e| e, now));
            for offset in probes {
                let later = now + at(offset) + Duration::from_nanos(offset % 3);
                if next.is_some_and(|next| later >= next) {
                    continue;
                }
                let verdict = checks[0].verdict_among(&checks, |e| e, later);
                proptest::prop_assert_eq!(shape(verdict), at_now, "at {:?}, next {:?}", later, next);
            }
            if let Some(next) = next {
                proptest::prop_assert!(next > now);
            }
        }
    }
}
