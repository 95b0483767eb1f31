//! The snapshot: the only thing a probe reads.
//!
//! Pollers, passive reports, startup steps, the shutdown trigger and the liveness watchdog
//! write into one place and publish an immutable [`Snapshot`] atomically (an `ArcSwap`). A probe
//! loads the current snapshot — a couple of atomic operations, no lock shared with the pollers,
//! no I/O — and evaluates it against the current time. Evaluating at read time is what makes
//! staleness honest: a result older than its bound counts as a failure even if the poller that
//! should have refreshed it is stuck.

use crate::check::{Measurement, format_duration};
use crate::contract::{LivenessKind, ProbeKind};
use crate::liveness::Watchdog;
use crate::policy::Tier;
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The outcome of evaluating a check or a probe: `pass`, `warn` or `fail`.
///
/// `pass` and `warn` answer 200, `fail` answers 503 (the IETF health-check draft: pass and warn
/// use 2xx, fail uses 4xx/5xx).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    /// Everything needed is there.
    Pass,
    /// Serving, degraded: a soft check fails, or a hard check is failing open.
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

/// The most recent completed poll of a check.
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
    /// Figures the check observed.
    pub measurements: Vec<Measurement>,
    /// A passing poll's warning (a busy pool), already redacted: the check is `warn`.
    pub warning: Option<String>,
}

/// One readiness check's state, as published.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckState {
    pub(crate) name: Arc<str>,
    pub(crate) tier: Tier,
    pub(crate) dependency: Option<Arc<str>>,
    pub(crate) healthy: bool,
    pub(crate) last: Option<LastResult>,
    pub(crate) consecutive_successes: u32,
    pub(crate) consecutive_failures: u32,
    pub(crate) last_transition: Option<Instant>,
    pub(crate) last_success: Option<Instant>,
    pub(crate) unhealthy_since: Option<Instant>,
    pub(crate) staleness: Duration,
    pub(crate) fail_open_for: Option<Duration>,
    pub(crate) rise: u32,
}

/// A check's status at one instant, with the reason when it is not passing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckVerdict<'a> {
    /// The check's own status (hard failing → fail; soft or info failing, or hard failing
    /// open → warn).
    pub status: Status,
    /// Whether the last result is older than the staleness bound.
    pub stale: bool,
    /// Why it is not passing; `None` when it passes.
    pub reason: Option<Cow<'a, str>>,
}

impl CheckState {
    /// The check's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The check's tier.
    pub fn tier(&self) -> Tier {
        self.tier
    }

    /// What the check talks to, if declared.
    pub fn dependency(&self) -> Option<&str> {
        self.dependency.as_deref()
    }

    /// The hysteresis state: healthy once `rise` successes came in a row.
    pub fn is_healthy(&self) -> bool {
        self.healthy
    }

    /// The last completed poll, `None` before the first one finishes.
    pub fn last(&self) -> Option<&LastResult> {
        self.last.as_ref()
    }

    /// Successes in a row.
    pub fn consecutive_successes(&self) -> u32 {
        self.consecutive_successes
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
        self.staleness
    }

    /// Whether, at `now`, the last result is older than the staleness bound.
    pub fn is_stale(&self, now: Instant) -> bool {
        self.last
            .as_ref()
            .is_some_and(|last| now.saturating_duration_since(last.at) > self.staleness)
    }

    /// The check's status at `now`, without building a reason (the hot path of a probe).
    pub fn status(&self, now: Instant) -> Status {
        if let Some(last) = &self.last
            && self.healthy
            && !self.is_stale(now)
        {
            return if last.ok && last.warning.is_some() {
                Status::Warn
            } else {
                Status::Pass
            };
        }
        self.failing_status(now)
    }

    fn failing_status(&self, now: Instant) -> Status {
        match self.tier {
            Tier::Soft | Tier::Info => Status::Warn,
            Tier::Hard if self.failing_open(now) => Status::Warn,
            Tier::Hard => Status::Fail,
        }
    }

    fn failing_open(&self, now: Instant) -> bool {
        match (self.fail_open_for, self.unhealthy_since) {
            (Some(window), Some(since)) => now.saturating_duration_since(since) < window,
            _ => false,
        }
    }

    /// The check's own answer when asked alone (`/readyz/db`, gRPC service `db`): whether it
    /// serves at `now`. A failing check does not, whatever its tier — so `/readyz/cache` tells
    /// the truth about the cache even though the cache alone never fails `/readyz` — except a
    /// hard check inside its fail-open window. A check that passes with a warning (a busy pool)
    /// serves.
    pub fn serves_alone(&self, now: Instant) -> bool {
        match self.status(now) {
            Status::Pass => true,
            Status::Warn => (self.healthy && !self.is_stale(now)) || (self.tier == Tier::Hard),
            Status::Fail => false,
        }
    }

    /// The check's status at `now`, with the reason it is not passing.
    pub fn verdict(&self, now: Instant) -> CheckVerdict<'_> {
        let stale = self.is_stale(now);
        let Some(last) = &self.last else {
            return CheckVerdict {
                status: self.failing_status(now),
                stale: false,
                reason: Some(Cow::Borrowed("no result yet")),
            };
        };
        if self.healthy && !stale {
            // A passing poll that warns (a busy pool) is `warn` whatever the tier.
            let warning = last.warning.as_deref().filter(|_| last.ok);
            return CheckVerdict {
                status: if warning.is_some() {
                    Status::Warn
                } else {
                    Status::Pass
                },
                stale,
                reason: warning.map(Cow::Borrowed),
            };
        }
        let status = self.failing_status(now);
        let mut reason: Cow<'_, str> = if stale {
            Cow::Owned(format!(
                "stale: last result {} ago (bound {})",
                format_duration(round_to_millis(now.saturating_duration_since(last.at))),
                format_duration(self.staleness)
            ))
        } else if last.ok {
            Cow::Owned(format!(
                "recovering: {} of {} successes",
                self.consecutive_successes, self.rise
            ))
        } else {
            Cow::Borrowed(last.message.as_deref().unwrap_or("failed"))
        };
        if status == Status::Warn
            && self.tier == Tier::Hard
            && let (Some(window), Some(since)) = (self.fail_open_for, self.unhealthy_since)
        {
            let left = window.saturating_sub(now.saturating_duration_since(since));
            reason = Cow::Owned(format!(
                "{reason} (failing open, {} left)",
                format_duration(round_to_millis(left))
            ));
        }
        CheckVerdict {
            status,
            stale,
            reason: Some(reason),
        }
    }
}

fn round_to_millis(duration: Duration) -> Duration {
    Duration::from_millis(duration.as_millis() as u64)
}

/// A startup step's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepState {
    pub(crate) name: Arc<str>,
    pub(crate) complete: bool,
    pub(crate) note: Option<String>,
}

impl StepState {
    /// The step's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the step has completed.
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// The latest progress note (e.g. why a connection attempt is being retried).
    pub fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }
}

/// A liveness condition registered on the service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LivenessCondition {
    pub(crate) name: Arc<str>,
    pub(crate) kind: LivenessKind,
}

impl LivenessCondition {
    /// The condition's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What it watches.
    pub fn kind(&self) -> LivenessKind {
        self.kind
    }
}

/// The health of the service at one moment, as every probe sees it.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub(crate) service: Option<Arc<str>>,
    pub(crate) checks: Vec<Arc<CheckState>>,
    pub(crate) steps: Arc<[StepState]>,
    pub(crate) liveness: Arc<[LivenessCondition]>,
    pub(crate) watchdog: Option<Arc<Watchdog>>,
    pub(crate) broken: Option<Arc<str>>,
    pub(crate) deadlock: Option<Arc<str>>,
    pub(crate) shutting_down: Option<Instant>,
    pub(crate) generation: u64,
}

/// One line of a probe's answer: a check, a startup step, a liveness condition, or one of the
/// built-in gates (`shutdown`, `startup`, `liveness`).
#[derive(Debug, Clone, PartialEq)]
pub struct Entry<'a> {
    /// The entry's name.
    pub name: &'a str,
    /// The tier, for readiness checks.
    pub tier: Option<Tier>,
    /// Its status.
    pub status: Status,
    /// Why it is not passing.
    pub reason: Option<Cow<'a, str>>,
    /// Whether the request excluded it (it is shown but does not count).
    pub excluded: bool,
    /// The readiness check behind the entry, if it is one.
    pub check: Option<&'a CheckState>,
}

/// The name of the readiness gate that fails while shutting down.
pub const SHUTDOWN_ENTRY: &str = "shutdown";
/// The name of the readiness gate that fails while startup steps are pending.
pub const STARTUP_ENTRY: &str = "startup";
/// The name of the readiness gate that fails while liveness fails.
pub const LIVENESS_ENTRY: &str = "liveness";

impl Snapshot {
    /// The service name, if declared.
    pub fn service(&self) -> Option<&str> {
        self.service.as_deref()
    }

    /// Every readiness check, in registration order.
    pub fn checks(&self) -> impl ExactSizeIterator<Item = &CheckState> {
        self.checks.iter().map(|check| &**check)
    }

    /// The readiness check named `name`.
    pub fn check(&self, name: &str) -> Option<&CheckState> {
        self.checks().find(|check| check.name() == name)
    }

    /// Every startup step.
    pub fn steps(&self) -> &[StepState] {
        &self.steps
    }

    /// Every liveness condition.
    pub fn liveness_conditions(&self) -> &[LivenessCondition] {
        &self.liveness
    }

    /// When shutdown was triggered, if it was.
    pub fn shutting_down_since(&self) -> Option<Instant> {
        self.shutting_down
    }

    /// A counter that increases with every published change.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether every startup step has completed.
    pub fn is_started(&self) -> bool {
        self.steps.iter().all(|step| step.complete)
    }

    fn liveness_condition_failure(&self, condition: &LivenessCondition) -> Option<Cow<'_, str>> {
        match condition.kind {
            LivenessKind::RuntimeStall => self
                .watchdog
                .as_ref()
                .and_then(|watchdog| watchdog.stall_reason())
                .map(Cow::Owned),
            LivenessKind::Deadlock => self.deadlock.as_deref().map(Cow::Borrowed),
            LivenessKind::AppState => self.broken.as_deref().map(Cow::Borrowed),
        }
    }

    /// The status of a probe at `now`, without building reasons: the allocation-free readiness
    /// decision a load balancer's probe waits on.
    pub fn status(&self, probe: ProbeKind, now: Instant) -> Status {
        match probe {
            ProbeKind::Liveness => self.liveness_status(),
            ProbeKind::Startup => {
                if self.is_started() {
                    Status::Pass
                } else {
                    Status::Fail
                }
            }
            ProbeKind::Readiness => {
                if self.shutting_down.is_some()
                    || !self.is_started()
                    || self.liveness_status() == Status::Fail
                {
                    return Status::Fail;
                }
                let mut worst = Status::Pass;
                for check in &self.checks {
                    let status = check.status(now);
                    if status == Status::Fail {
                        return Status::Fail;
                    }
                    if status == Status::Warn && check.tier != Tier::Info {
                        worst = Status::Warn;
                    }
                }
                worst
            }
        }
    }

    fn liveness_status(&self) -> Status {
        let failing = self
            .liveness
            .iter()
            .any(|condition| self.liveness_condition_failure(condition).is_some());
        if failing { Status::Fail } else { Status::Pass }
    }

    /// Every line of a probe's answer at `now`, with the request's exclusions applied.
    pub fn entries<'a>(
        &'a self,
        probe: ProbeKind,
        now: Instant,
        excluded: &[&str],
    ) -> Vec<Entry<'a>> {
        let is_excluded = |name: &str| excluded.contains(&name);
        let mut entries = Vec::new();
        match probe {
            ProbeKind::Liveness => {
                for condition in self.liveness.iter() {
                    let reason = self.liveness_condition_failure(condition);
                    entries.push(Entry {
                        name: &condition.name,
                        tier: None,
                        status: if reason.is_some() {
                            Status::Fail
                        } else {
                            Status::Pass
                        },
                        reason,
                        excluded: is_excluded(&condition.name),
                        check: None,
                    });
                }
            }
            ProbeKind::Startup => {
                for step in self.steps.iter() {
                    entries.push(Entry {
                        name: &step.name,
                        tier: None,
                        status: if step.complete {
                            Status::Pass
                        } else {
                            Status::Fail
                        },
                        reason: (!step.complete).then(|| match &step.note {
                            Some(note) => Cow::Owned(format!("pending: {note}")),
                            None => Cow::Borrowed("pending"),
                        }),
                        excluded: is_excluded(&step.name),
                        check: None,
                    });
                }
            }
            ProbeKind::Readiness => {
                if let Some(since) = self.shutting_down {
                    entries.push(Entry {
                        name: SHUTDOWN_ENTRY,
                        tier: None,
                        status: Status::Fail,
                        reason: Some(Cow::Owned(format!(
                            "shutting down ({} ago)",
                            format_duration(round_to_millis(now.saturating_duration_since(since)))
                        ))),
                        excluded: is_excluded(SHUTDOWN_ENTRY),
                        check: None,
                    });
                }
                if !self.steps.is_empty() {
                    let pending: Vec<&str> = self
                        .steps
                        .iter()
                        .filter(|step| !step.complete)
                        .map(|step| step.name())
                        .collect();
                    entries.push(Entry {
                        name: STARTUP_ENTRY,
                        tier: None,
                        status: if pending.is_empty() {
                            Status::Pass
                        } else {
                            Status::Fail
                        },
                        reason: (!pending.is_empty())
                            .then(|| Cow::Owned(format!("pending: {}", pending.join(", ")))),
                        excluded: is_excluded(STARTUP_ENTRY),
                        check: None,
                    });
                }
                let liveness_failures: Vec<String> = self
                    .liveness
                    .iter()
                    .filter_map(|condition| {
                        // Stall and deadlock reasons name themselves ("runtime stalled: …",
                        // "deadlock: …"); a declared state's reason is the application's own.
                        self.liveness_condition_failure(condition).map(|reason| {
                            match condition.kind {
                                LivenessKind::AppState => format!("{}: {reason}", condition.name),
                                _ => reason.into_owned(),
                            }
                        })
                    })
                    .collect();
                if !liveness_failures.is_empty() {
                    entries.push(Entry {
                        name: LIVENESS_ENTRY,
                        tier: None,
                        status: Status::Fail,
                        reason: Some(Cow::Owned(liveness_failures.join("; "))),
                        excluded: is_excluded(LIVENESS_ENTRY),
                        check: None,
                    });
                }
                for check in &self.checks {
                    let verdict = check.verdict(now);
                    entries.push(Entry {
                        name: &check.name,
                        tier: Some(check.tier),
                        status: verdict.status,
                        reason: verdict.reason,
                        excluded: is_excluded(&check.name),
                        check: Some(check),
                    });
                }
            }
        }
        entries
    }

    /// The names every entry of `probe` can be addressed by (for `?exclude=` and sub-paths).
    pub fn entry_names(&self, probe: ProbeKind) -> Vec<&str> {
        match probe {
            ProbeKind::Liveness => self.liveness.iter().map(|c| c.name()).collect(),
            ProbeKind::Startup => self.steps.iter().map(|s| s.name()).collect(),
            ProbeKind::Readiness => {
                let mut names = vec![SHUTDOWN_ENTRY];
                if !self.steps.is_empty() {
                    names.push(STARTUP_ENTRY);
                }
                if !self.liveness.is_empty() {
                    names.push(LIVENESS_ENTRY);
                }
                names.extend(self.checks().map(|c| c.name()));
                names
            }
        }
    }

    /// The verdict of a probe at `now`: its status and the names of what made it so.
    pub fn verdict(&self, probe: ProbeKind, now: Instant, excluded: &[&str]) -> Verdict {
        Verdict::from_entries(&self.entries(probe, now, excluded))
    }
}

/// A probe's overall status and the names of what decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The overall status.
    pub status: Status,
    /// Entries whose failure makes the probe fail.
    pub failing: Vec<String>,
    /// Entries that fail without failing the probe (soft checks, hard checks failing open).
    pub degraded: Vec<String>,
}

impl Verdict {
    /// Folds entries into a verdict: any counted `fail` fails it; any counted soft or
    /// failing-open `warn` makes it `warn`; info checks never change it.
    pub fn from_entries(entries: &[Entry<'_>]) -> Self {
        let mut failing = Vec::new();
        let mut degraded = Vec::new();
        for entry in entries.iter().filter(|entry| !entry.excluded) {
            match entry.status {
                Status::Fail => failing.push(entry.name.to_owned()),
                Status::Warn if entry.tier != Some(Tier::Info) => {
                    degraded.push(entry.name.to_owned())
                }
                _ => {}
            }
        }
        let status = if !failing.is_empty() {
            Status::Fail
        } else if !degraded.is_empty() {
            Status::Warn
        } else {
            Status::Pass
        };
        Verdict {
            status,
            failing,
            degraded,
        }
    }
}
