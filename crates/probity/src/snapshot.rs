//! The snapshot: the only thing a probe reads.
//!
//! Pollers, passive reports, startup steps, the shutdown trigger and the liveness watchers send
//! observations to the store, which publishes an immutable [`Snapshot`] atomically. A probe
//! loads the current snapshot — a couple of atomic operations, no lock shared with the pollers,
//! no I/O — and evaluates it against the current time with [`probity_contract::verdict`]'s
//! rules. The snapshot is plain data: evaluating it at read time is what makes staleness
//! honest, since a result older than its bound counts as a failure even if the poller that
//! should have refreshed it is stuck.

use crate::check::{FailureKind, Measurement};
use crate::history::{ConditionHistory, ConditionPhase, History};
use crate::moment::{self, Moment};
use crate::paths::ProbePaths;
use probity_contract::contract::LivenessKind;
use probity_contract::verdict::{self, CheckVerdict, Effect, Evidence, Gate, Gates, Subject};
use probity_contract::{ProbeKind, Status, Tier};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The most recent completed poll of a check (or the passive report that replaced it).
#[derive(Debug, Clone, PartialEq)]
pub struct LastResult {
    /// Whether the poll succeeded.
    pub ok: bool,
    /// When the poll finished.
    pub at: Instant,
    /// How long it took.
    pub duration: Duration,
    /// The success note or the failure message, already redacted of credentials.
    pub message: Option<String>,
    /// The kind of failure, for a failed poll.
    pub kind: Option<FailureKind>,
    /// Figures the check observed.
    pub measurements: Vec<Measurement>,
    /// A passing poll's warning (a busy pool), already redacted.
    pub warning: Option<String>,
}

/// One readiness check's state, as published.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckState {
    pub(crate) name: Arc<str>,
    pub(crate) dependency: Option<Arc<str>>,
    pub(crate) evidence: Evidence<Moment>,
    pub(crate) last: Option<LastResult>,
    pub(crate) consecutive_failures: u32,
    pub(crate) last_transition: Option<Instant>,
    pub(crate) last_success: Option<Instant>,
    pub(crate) history: History,
}

impl CheckState {
    /// The check's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The check's tier.
    pub fn tier(&self) -> Tier {
        self.evidence.tier
    }

    /// What the check talks to, if declared.
    pub fn dependency(&self) -> Option<&str> {
        self.dependency.as_deref()
    }

    /// The hysteresis state: healthy once `rise` successes came in a row.
    pub fn is_healthy(&self) -> bool {
        self.evidence.healthy
    }

    /// The last completed poll, `None` before the first one finishes.
    pub fn last(&self) -> Option<&LastResult> {
        self.last.as_ref()
    }

    /// Successes in a row.
    pub fn consecutive_successes(&self) -> u32 {
        self.evidence.consecutive_successes
    }

    /// Failures in a row.
    pub fn consecutive_failures(&self) -> u32 {
        self.consecutive_failures
    }

    /// When the check last turned healthy or unhealthy.
    pub fn last_transition(&self) -> Option<Instant> {
        self.last_transition
    }

    /// When a poll last succeeded.
    pub fn last_success(&self) -> Option<Instant> {
        self.last_success
    }

    /// The staleness bound.
    pub fn staleness(&self) -> Duration {
        self.evidence.staleness
    }

    /// Whether, at `now`, the last result is older than the staleness bound.
    pub fn is_stale(&self, now: Instant) -> bool {
        matches!(self.verdict(now).cause, verdict::Cause::Stale { .. })
    }

    /// The check's status at `now`, and why ([`probity_contract::verdict`]'s rules).
    pub fn verdict(&self, now: Instant) -> CheckVerdict {
        self.evidence.verdict(moment::moment(now))
    }

    /// The check's status at `now`.
    pub fn status(&self, now: Instant) -> Status {
        self.verdict(now).status
    }

    /// Whether the last result is a failure that is this instance's own (its pool exhausted
    /// while the database answers): one a fallback never covers.
    pub fn is_local_fault(&self) -> bool {
        self.evidence
            .last
            .is_some_and(|last| !last.ok && last.local)
    }

    /// Whether the check serves when asked alone (`/readyz/db`, gRPC service `db`).
    pub fn serves_alone(&self, now: Instant) -> bool {
        self.evidence.serves_alone(moment::moment(now))
    }

    /// The check's recent transitions and poll latencies, oldest first, bounded
    /// ([`crate::HISTORY_LEN`] of each): what a status page shows.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// Successes in a row needed to turn healthy again (the hysteresis' rise count).
    pub fn rise(&self) -> u32 {
        self.evidence.rise
    }
}

/// A startup step's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepState {
    pub(crate) name: Arc<str>,
    pub(crate) waits_on: Option<Arc<str>>,
    pub(crate) complete: bool,
    pub(crate) note: Option<String>,
    pub(crate) registered_at: std::time::SystemTime,
    pub(crate) completed_at: Option<std::time::SystemTime>,
}

impl StepState {
    /// The step's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The dependency the step waits on; `None` for an internal step. A step that waits on a
    /// dependency gates readiness only, never startup.
    pub fn waits_on(&self) -> Option<&str> {
        self.waits_on.as_deref()
    }

    /// Whether the step has completed.
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// The latest progress note (e.g. why a connection attempt is being retried), redacted.
    pub fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    /// When the step was registered (the registry was built; wall clock): its history starts
    /// there.
    pub fn registered_at(&self) -> std::time::SystemTime {
        self.registered_at
    }

    /// When the step completed (wall clock), once it has.
    pub fn completed_at(&self) -> Option<std::time::SystemTime> {
        self.completed_at
    }
}

/// Why a liveness condition fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConditionFailure {
    /// The runtime's heartbeat stopped.
    Stalled {
        /// When the runtime last beat.
        last_beat: Instant,
        /// The age that counts as a stall.
        threshold: Duration,
    },
    /// Threads wait on each other's locks.
    Deadlock {
        /// Lock cycles found.
        cycles: usize,
        /// Threads in them.
        threads: usize,
    },
    /// The application declared a state only a restart clears (redacted).
    Declared(String),
    /// A worker's heartbeat ([`crate::Heartbeat`]) has been silent past its bound, outside any
    /// declared wait still within its own timeout.
    Silent {
        /// The worker's last sign of life (a beat, or the start or end of a declared wait).
        last_beat: Instant,
        /// The longest silence allowed outside a declared wait.
        max_silence: Duration,
        /// The declared wait the worker is still in past its own timeout, if any.
        overdue: Option<DeclaredWait>,
        /// What the heartbeat's watcher saw at its last look ([`crate::Heartbeat::saw`]),
        /// redacted: named in the reason instead of the bare silence.
        seen: Option<Arc<str>>,
    },
}

/// A worker's declared, bounded wait on a dependency ([`crate::Heartbeat::waiting_on`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredWait {
    pub(crate) dependency: Arc<str>,
    pub(crate) since: Instant,
    pub(crate) timeout: Duration,
}

impl DeclaredWait {
    /// What the worker waits on (`broker`).
    pub fn dependency(&self) -> &str {
        &self.dependency
    }

    /// When the wait began.
    pub fn since(&self) -> Instant {
        self.since
    }

    /// The wait's own bound: past it, the wait excuses no silence.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

/// One liveness condition's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConditionState {
    pub(crate) name: Arc<str>,
    pub(crate) kind: LivenessKind,
    pub(crate) threshold: Option<Duration>,
    pub(crate) failure: Option<ConditionFailure>,
    pub(crate) waiting: Option<DeclaredWait>,
    pub(crate) history: ConditionHistory,
}

impl ConditionState {
    /// The condition's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What it watches.
    pub fn kind(&self) -> LivenessKind {
        self.kind
    }

    /// The age that counts as a failure: a runtime watchdog's stall threshold, a heartbeat's
    /// longest silence.
    pub fn threshold(&self) -> Option<Duration> {
        self.threshold
    }

    /// Why it fails, when it does.
    pub fn failure(&self) -> Option<&ConditionFailure> {
        self.failure.as_ref()
    }

    /// For a heartbeat that passes only because its worker is inside a declared wait still
    /// within its timeout, that wait (the one that began first). Published when the worker's
    /// silence passes its bound, not on every wait.
    pub fn waiting(&self) -> Option<&DeclaredWait> {
        self.waiting.as_ref()
    }

    /// Where the condition stands: failing, passing inside a declared wait, or passing.
    pub fn phase(&self) -> ConditionPhase {
        match (&self.failure, &self.waiting) {
            (Some(_), _) => ConditionPhase::Failing,
            (None, Some(_)) => ConditionPhase::Waiting,
            (None, None) => ConditionPhase::Passing,
        }
    }

    /// Its recent transitions between passing, waiting and failing, oldest first, bounded
    /// ([`crate::HISTORY_LEN`]): what a status page shows.
    pub fn history(&self) -> &ConditionHistory {
        &self.history
    }
}

/// The health of the service at one moment, as every probe sees it.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub(crate) service: Option<Arc<str>>,
    pub(crate) paths: Arc<ProbePaths>,
    pub(crate) checks: Vec<Arc<CheckState>>,
    pub(crate) steps: Arc<[StepState]>,
    pub(crate) conditions: Arc<[ConditionState]>,
    pub(crate) shutting_down: Option<Instant>,
    pub(crate) generation: u64,
}

/// How long an answer rendered from a snapshot at one instant reads the same: what a surface
/// that keeps rendered answers ([`Snapshot::answer_lasts`]) may keep one for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lasts {
    /// Only for the instant it was rendered at: something in it counts seconds (a stale
    /// result's age, a fail-open countdown, the time since shutdown began, a silent worker's
    /// silence, a declared wait's length).
    Moment,
    /// Until this instant: a check's result turns stale then.
    Until(Instant),
    /// Until the next snapshot: only a new observation changes it.
    UntilChanged,
}

/// One line of a probe's answer: a check, a startup step, a liveness condition, or one of the
/// readiness gates (`shutdown`, `startup`, `liveness`).
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    /// The snapshot it comes from.
    pub(crate) snapshot: &'a Snapshot,
    /// The entry's name.
    pub name: &'a str,
    /// What it is about.
    pub subject: Subject,
    /// Its status.
    pub status: Status,
    /// The tier, for a check.
    pub tier: Option<Tier>,
    /// The check's verdict, for a check.
    pub verdict: Option<CheckVerdict>,
    /// Whether the request excluded it (it is shown but does not count).
    pub excluded: bool,
}

impl<'a> Entry<'a> {
    /// The readiness check behind the entry, if it is one.
    pub fn check(&self) -> Option<&'a CheckState> {
        match self.subject {
            Subject::Check(index) => self.snapshot.checks.get(index).map(|check| &**check),
            _ => None,
        }
    }

    /// The startup step behind the entry, if it is one.
    pub fn step(&self) -> Option<&'a StepState> {
        match self.subject {
            Subject::Step(index) => self.snapshot.steps.get(index),
            _ => None,
        }
    }

    /// The liveness condition behind the entry, if it is one.
    pub fn condition(&self) -> Option<&'a ConditionState> {
        match self.subject {
            Subject::Condition(index) => self.snapshot.conditions.get(index),
            _ => None,
        }
    }

    /// For a hard check failing while its fallback serves: the fallback.
    pub fn fallback(&self) -> Option<&'a CheckState> {
        let index = self.verdict?.served_by?;
        self.snapshot.checks.get(index).map(|check| &**check)
    }

    /// Whether the entry is a check whose last poll passed with a warning (a busy pool): it
    /// makes its probe `warn` without degrading it.
    pub fn is_warning(&self) -> bool {
        self.status == Status::Warn
            && self
                .verdict
                .is_some_and(|verdict| verdict.cause == probity_contract::verdict::Cause::Warning)
    }

    /// What the entry does to its probe: nothing when excluded.
    pub fn effect(&self) -> Effect {
        if self.excluded {
            return Effect::None;
        }
        verdict::Entry {
            subject: self.subject,
            status: self.status,
            tier: self.tier,
            check: self.verdict,
        }
        .effect()
    }
}

/// A probe's overall status and the names of what decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The overall status.
    pub status: Status,
    /// Entries whose failure makes the probe fail.
    pub failing: Vec<String>,
    /// Entries that degrade it without failing it: a dependency is failing and the service
    /// still serves — a soft check failing, a hard check failing open or served by its
    /// fallback. "Degraded" means this and only this, in every output.
    pub degraded: Vec<String>,
    /// Checks whose last poll passed with a warning ([`crate::Detail::warning`]): nothing is
    /// failing, something is worth a look — a busy pool (`busy: 4 of 4 in use, 13 waiting`).
    /// They make the probe `warn` without degrading it.
    pub warnings: Vec<String>,
    /// For each hard check failing while its fallback serves, `(check, fallback)`: which
    /// dependency is degraded and what serves instead (`("db", "cache")`). Each check is also
    /// in `degraded`.
    pub served_by: Vec<(String, String)>,
}

impl Verdict {
    /// The verdict of `entries` ([`probity_contract::verdict::probe`]), by name.
    pub(crate) fn of(entries: &[Entry<'_>]) -> Verdict {
        let judged = verdict::probe(entries.iter().map(|entry| {
            let raw = verdict::Entry {
                subject: entry.subject,
                status: entry.status,
                tier: entry.tier,
                check: entry.verdict,
            };
            (raw, entry.excluded)
        }));
        let Some(snapshot) = entries.first().map(|entry| entry.snapshot) else {
            return Verdict {
                status: judged.status,
                failing: Vec::new(),
                degraded: Vec::new(),
                warnings: Vec::new(),
                served_by: Vec::new(),
            };
        };
        let named = |subjects: Vec<Subject>| -> Vec<String> {
            subjects
                .into_iter()
                .map(|subject| snapshot.subject_name(subject).to_owned())
                .collect()
        };
        let served_by = judged
            .served_by
            .into_iter()
            .filter_map(|(subject, fallback)| {
                let fallback = snapshot.checks.get(fallback)?;
                Some((
                    snapshot.subject_name(subject).to_owned(),
                    fallback.name().to_owned(),
                ))
            })
            .collect();
        Verdict {
            status: judged.status,
            failing: named(judged.failing),
            degraded: named(judged.degraded),
            warnings: named(judged.warnings),
            served_by,
        }
    }

    /// What makes the probe less than a plain pass besides its failures, one phrase per kind:
    /// `degraded: cache`, `warning: db`. Empty when nothing degrades or warns.
    pub fn qualifiers(&self) -> Vec<String> {
        let mut phrases = Vec::new();
        if !self.degraded.is_empty() {
            phrases.push(format!("degraded: {}", self.degraded.join(", ")));
        }
        if !self.warnings.is_empty() {
            phrases.push(format!("warning: {}", self.warnings.join(", ")));
        }
        phrases
    }
}

impl Snapshot {
    /// The service name, if declared.
    pub fn service(&self) -> Option<&str> {
        self.service.as_deref()
    }

    /// Where the probes are served.
    pub fn paths(&self) -> &ProbePaths {
        &self.paths
    }

    /// Every readiness check, in registration order.
    pub fn checks(&self) -> impl ExactSizeIterator<Item = &CheckState> {
        self.checks.iter().map(|check| &**check)
    }

    /// The readiness check named `name`.
    pub fn check(&self, name: &str) -> Option<&CheckState> {
        self.checks().find(|check| check.name() == name)
    }

    /// Every startup step, internal ones and those that wait on a dependency.
    pub fn steps(&self) -> &[StepState] {
        &self.steps
    }

    /// Every liveness condition.
    pub fn conditions(&self) -> &[ConditionState] {
        &self.conditions
    }

    /// When shutdown was triggered, if it was.
    pub fn shutting_down_since(&self) -> Option<Instant> {
        self.shutting_down
    }

    /// A counter that increases with every published change.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// How long an answer of `probe` rendered at `now` reads the same, timestamps and all: for
    /// the readiness probe until the first check's verdict changes by time alone
    /// ([`probity_contract::verdict::next_change`]), unless something in the answer counts
    /// seconds. Liveness and startup change by time alone only through their reasons: their
    /// watchers publish every change of state.
    pub fn answer_lasts(&self, probe: ProbeKind, now: Instant) -> Lasts {
        let counting = |condition: &ConditionState| {
            matches!(
                condition.failure,
                Some(ConditionFailure::Stalled { .. } | ConditionFailure::Silent { .. })
            )
        };
        match probe {
            ProbeKind::Startup => Lasts::UntilChanged,
            ProbeKind::Liveness => {
                let counts = self
                    .conditions
                    .iter()
                    .any(|condition| condition.waiting.is_some() || counting(condition));
                if counts {
                    Lasts::Moment
                } else {
                    Lasts::UntilChanged
                }
            }
            ProbeKind::Readiness => {
                if self.shutting_down.is_some() || self.conditions.iter().any(counting) {
                    return Lasts::Moment;
                }
                let at_now = moment::moment(now);
                for check in self.checks() {
                    // A result newer than the clock (read before the snapshot was loaded)
                    // prints as "now", which moves with the clock.
                    let times = [check.last.as_ref().map(|last| last.at), check.last_success];
                    let newer = times
                        .into_iter()
                        .chain([check.last_transition])
                        .flatten()
                        .any(|at| at > now);
                    let verdict = check.verdict(now);
                    if newer
                        || verdict.failing_open.is_some()
                        || matches!(verdict.cause, verdict::Cause::Stale { .. })
                    {
                        return Lasts::Moment;
                    }
                }
                match verdict::next_change(&self.checks, evidence_of, at_now) {
                    Some(at) => Lasts::Until(moment::instant(at)),
                    None => Lasts::UntilChanged,
                }
            }
        }
    }

    /// Whether the internal boot is done: every step that waits on nothing has completed
    /// (what `/startupz` answers).
    pub fn is_booted(&self) -> bool {
        self.steps
            .iter()
            .all(|step| step.complete || step.waits_on.is_some())
    }

    /// Whether every startup step, internal or waiting on a dependency, has completed.
    pub fn is_started(&self) -> bool {
        self.steps.iter().all(|step| step.complete)
    }

    fn gates(&self) -> Gates<Moment> {
        Gates {
            shutting_down_since: self.shutting_down.map(moment::moment),
            has_steps: self.internal_steps().next().is_some(),
            steps_pending: !self.is_booted(),
            liveness_failing: self
                .conditions
                .iter()
                .any(|condition| condition.failure.is_some()),
        }
    }

    fn internal_steps(&self) -> impl Iterator<Item = (usize, &StepState)> {
        self.steps
            .iter()
            .enumerate()
            .filter(|(_, step)| step.waits_on.is_none())
    }

    /// The steps that wait on a dependency, as `(index, complete)`: readiness entries.
    fn dependency_steps(&self) -> impl Iterator<Item = (usize, bool)> + '_ {
        self.steps
            .iter()
            .enumerate()
            .filter(|(_, step)| step.waits_on.is_some())
            .map(|(index, step)| (index, step.complete))
    }

    /// The status of a probe at `now`, without building an entry list: the allocation-free
    /// decision a load balancer's probe waits on. It folds the same entries as
    /// [`Snapshot::entries`].
    pub fn status(&self, probe: ProbeKind, now: Instant) -> Status {
        let now = moment::moment(now);
        match probe {
            ProbeKind::Liveness => verdict::status(
                verdict::liveness(self.conditions.iter().map(|c| c.failure.is_some()))
                    .map(|entry| (entry, false)),
            ),
            ProbeKind::Startup => verdict::status(
                verdict::startup(self.internal_steps().map(|(_, step)| step.complete))
                    .map(|entry| (entry, false)),
            ),
            ProbeKind::Readiness => verdict::status(
                verdict::readiness(
                    self.gates(),
                    self.dependency_steps(),
                    &self.checks,
                    evidence_of,
                    now,
                )
                .map(|entry| (entry, false)),
            ),
        }
    }

    /// Every line of a probe's answer at `now`, with the request's exclusions applied.
    pub fn entries(&self, probe: ProbeKind, now: Instant, excluded: &[&str]) -> Vec<Entry<'_>> {
        let at_now = moment::moment(now);
        let internal: Vec<usize> = self.internal_steps().map(|(index, _)| index).collect();
        let raw: Vec<verdict::Entry> = match probe {
            ProbeKind::Liveness => {
                verdict::liveness(self.conditions.iter().map(|c| c.failure.is_some())).collect()
            }
            ProbeKind::Startup => {
                verdict::startup(internal.iter().map(|&i| self.steps[i].complete))
                    .map(|mut entry| {
                        // `startup` numbers the internal steps; point at the step itself.
                        if let Subject::Step(position) = entry.subject {
                            entry.subject = Subject::Step(internal[position]);
                        }
                        entry
                    })
                    .collect()
            }
            ProbeKind::Readiness => verdict::readiness(
                self.gates(),
                self.dependency_steps(),
                &self.checks,
                evidence_of,
                at_now,
            )
            .collect(),
        };
        raw.into_iter()
            .map(|entry| {
                let name = self.subject_name(entry.subject);
                Entry {
                    snapshot: self,
                    name,
                    subject: entry.subject,
                    status: entry.status,
                    tier: entry.tier,
                    verdict: entry.check,
                    excluded: excluded.contains(&name),
                }
            })
            .collect()
    }

    /// One entry asked for alone (`/readyz/db`): it answers for itself — a failing check fails,
    /// whatever its tier, except a hard check failing open ([`CheckState::serves_alone`]).
    pub fn entry(&self, probe: ProbeKind, name: &str, now: Instant) -> Option<Entry<'_>> {
        let mut entry = self
            .entries(probe, now, &[])
            .into_iter()
            .find(|entry| entry.name == name)?;
        if let Some(check) = entry.check()
            && !check.serves_alone(now)
        {
            entry.status = Status::Fail;
        }
        Some(entry)
    }

    /// The names every entry of `probe` can be addressed by (for `?exclude=` and sub-paths).
    pub(crate) fn entry_names(&self, probe: ProbeKind) -> Vec<&str> {
        match probe {
            ProbeKind::Liveness => self.conditions.iter().map(|c| c.name()).collect(),
            ProbeKind::Startup => self.internal_steps().map(|(_, s)| s.name()).collect(),
            ProbeKind::Readiness => {
                let mut names = vec![Gate::Shutdown.name()];
                if self.internal_steps().next().is_some() {
                    names.push(Gate::Startup.name());
                }
                if !self.conditions.is_empty() {
                    names.push(Gate::Liveness.name());
                }
                names.extend(
                    self.steps
                        .iter()
                        .filter(|step| step.waits_on.is_some())
                        .map(|step| step.name()),
                );
                names.extend(self.checks().map(|c| c.name()));
                names
            }
        }
    }

    /// The verdict of a probe at `now`: its status and the names of what made it so.
    pub fn verdict(&self, probe: ProbeKind, now: Instant, excluded: &[&str]) -> Verdict {
        Verdict::of(&self.entries(probe, now, excluded))
    }

    /// The check that serves instead of check `name` while it fails, as declared
    /// ([`crate::CheckSpec::fallback`]), whatever either's state.
    pub(crate) fn fallback_of(&self, name: &str) -> Option<&CheckState> {
        let index = self.check(name)?.evidence.fallback?;
        self.checks.get(index).map(|check| &**check)
    }

    /// The check's verdict at `now` in readiness: its own, except that a hard check failing
    /// while its fallback serves is `warn`, [served by](CheckVerdict::served_by) it.
    pub fn check_verdict(&self, name: &str, now: Instant) -> Option<CheckVerdict> {
        let check = self.check(name)?;
        Some(
            check
                .evidence
                .verdict_among(&self.checks, evidence_of, moment::moment(now)),
        )
    }

    /// When check `name` fails and its fallback serves in its place, the fallback: what a
    /// handler asks before answering from the fallback (a cached order, marked stale) instead
    /// of the dependency. `None` while the check serves (answer as usual), and while it fails
    /// with nothing serving instead (no fallback, the fallback failing too, or a fault of this
    /// instance's own, which drains it).
    pub fn serving_instead(&self, name: &str, now: Instant) -> Option<&CheckState> {
        let index = self.check_verdict(name, now)?.served_by?;
        self.checks.get(index).map(|check| &**check)
    }

    fn subject_name(&self, subject: Subject) -> &str {
        match subject {
            Subject::Gate(gate) => gate.name(),
            Subject::Check(index) => &self.checks[index].name,
            Subject::Condition(index) => &self.conditions[index].name,
            Subject::Step(index) => &self.steps[index].name,
        }
    }
}

/// A published check's evidence, for the verdict's functions.
fn evidence_of(check: &Arc<CheckState>) -> &Evidence<Moment> {
    &check.evidence
}

#[cfg(test)]
mod agreement;
