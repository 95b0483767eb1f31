//! One details policy for every reason a probe gives: checks, startup steps, liveness
//! conditions and the readiness gates.
//!
//! Every reason is redacted of credentials before it is stored (see [`crate::redact`]). What a
//! caller then sees depends on where it asks:
//!
//! - [`Details::Public`] (the default, for a listener clients reach): a failing entry shows its
//!   name and a short class of failure — `timeout`, `refused`, `unreachable`, `exhausted`,
//!   `rejected`, `unavailable`, `error`, `busy`, `stalled` (also a worker's silent heartbeat:
//!   its dependency stays unnamed), `deadlocked`, `declared broken` — and the timing facts
//!   the service itself owns (`stale: last result 4s ago (bound 3s)`,
//!   `recovering: 1 of 3 successes`, `shutting down (2s ago)`), and for a hard check served by
//!   its fallback what serves instead (`refused (degraded: cache serves instead)`). Never a
//!   host, a database name or a driver's text;
//! - [`Details::Admin`] (for a listener only operators reach, or a service that opts in): the
//!   full reason, as the check, step or watcher wrote it.

use crate::check::{FailureKind, human};
use crate::snapshot::{ConditionFailure, Entry};
use probity_contract::verdict::{Cause, Gate, Subject};
use std::borrow::Cow;
use tokio::time::Instant;

/// How much of each reason is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Details {
    /// Names and classes of failure only: what a public listener shows.
    #[default]
    Public,
    /// Full reasons: for a listener only operators reach.
    Admin,
}

impl Entry<'_> {
    /// Why the entry is not passing, as `details` allows; `None` when it passes (a passing
    /// check with a warning says why it warns).
    pub fn reason(&self, details: Details, now: Instant) -> Option<Cow<'_, str>> {
        match self.subject {
            Subject::Gate(gate) => self.gate_reason(gate, details, now),
            Subject::Check(_) => self.check_reason(details),
            Subject::Step(_) => {
                let step = self.step()?;
                if step.is_complete() {
                    return None;
                }
                Some(match (details, step.note()) {
                    (Details::Admin, Some(note)) => Cow::Owned(format!("pending: {note}")),
                    _ => match step.waits_on() {
                        Some(dependency) => Cow::Owned(format!("pending: waits on {dependency}")),
                        None => Cow::Borrowed("pending"),
                    },
                })
            }
            Subject::Condition(_) => {
                let condition = self.condition()?;
                match (condition.failure(), condition.waiting(), details) {
                    (Some(failure), _, _) => Some(condition_reason(failure, details, now)),
                    // A worker inside a declared wait passes; an operator may see on what.
                    (None, Some(wait), Details::Admin) => Some(Cow::Owned(format!(
                        "waiting on {} for {} (timeout {})",
                        wait.dependency(),
                        human(now.saturating_duration_since(wait.since())),
                        human(wait.timeout())
                    ))),
                    (None, _, _) => None,
                }
            }
        }
    }

    fn gate_reason(&self, gate: Gate, details: Details, now: Instant) -> Option<Cow<'_, str>> {
        let snapshot = self.snapshot;
        match gate {
            Gate::Shutdown => {
                let since = snapshot.shutting_down_since()?;
                Some(Cow::Owned(format!(
                    "shutting down ({} ago)",
                    human(now.saturating_duration_since(since))
                )))
            }
            Gate::Startup => {
                let pending: Vec<&str> = snapshot
                    .steps()
                    .iter()
                    .filter(|step| !step.is_complete() && step.waits_on().is_none())
                    .map(|step| step.name())
                    .collect();
                (!pending.is_empty())
                    .then(|| Cow::Owned(format!("pending: {}", pending.join(", "))))
            }
            Gate::Liveness => {
                let failing: Vec<String> = snapshot
                    .conditions()
                    .iter()
                    .filter_map(|condition| {
                        let failure = condition.failure()?;
                        let reason = condition_reason(failure, details, now);
                        // Stall and deadlock reasons name themselves; a declared state's reason
                        // is the application's own, and a heartbeat's names its worker.
                        Some(match failure {
                            ConditionFailure::Declared(_) | ConditionFailure::Silent { .. } => {
                                format!("{}: {reason}", condition.name())
                            }
                            _ => reason.into_owned(),
                        })
                    })
                    .collect();
                (!failing.is_empty()).then(|| Cow::Owned(failing.join("; ")))
            }
        }
    }

    fn check_reason(&self, details: Details) -> Option<Cow<'_, str>> {
        let check = self.check()?;
        let verdict = self.verdict?;
        let last = check.last();
        let reason: Cow<'_, str> = match verdict.cause {
            Cause::Passing => return None,
            Cause::Warning => {
                let warning = last
                    .and_then(|last| last.warning.as_deref())
                    .unwrap_or("busy");
                match details {
                    Details::Admin => Cow::Borrowed(warning),
                    Details::Public if warning.starts_with("busy") => Cow::Borrowed("busy"),
                    Details::Public => Cow::Borrowed("warning"),
                }
            }
            Cause::NoResult => Cow::Borrowed("no result yet"),
            Cause::Stale { age, bound } => Cow::Owned(format!(
                "stale: last result {} ago (bound {})",
                human(age),
                human(bound)
            )),
            Cause::Recovering { successes, rise } => {
                Cow::Owned(format!("recovering: {successes} of {rise} successes"))
            }
            Cause::Failed => match details {
                Details::Admin => Cow::Borrowed(
                    last.and_then(|last| last.message.as_deref())
                        .unwrap_or("failed"),
                ),
                Details::Public => Cow::Borrowed(
                    last.and_then(|last| last.kind)
                        .unwrap_or(FailureKind::Error)
                        .as_str(),
                ),
            },
        };
        if let Some(fallback) = self.fallback() {
            return Some(Cow::Owned(format!(
                "{reason} (degraded: {} serves instead)",
                fallback.name()
            )));
        }
        // A fault of this instance's own is not covered by the fallback: say why it drains.
        if let Some(fallback) = self.snapshot.fallback_of(check.name())
            && verdict.status == probity_contract::Status::Fail
            && check.is_local_fault()
        {
            return Some(Cow::Owned(format!(
                "{reason} (this instance's own fault: {} does not serve for it)",
                fallback.name()
            )));
        }
        Some(match verdict.failing_open {
            Some(left) => Cow::Owned(format!("{reason} (failing open, {} left)", human(left))),
            None => reason,
        })
    }
}

fn condition_reason(
    failure: &ConditionFailure,
    details: Details,
    now: Instant,
) -> Cow<'static, str> {
    match (failure, details) {
        (
            ConditionFailure::Stalled {
                last_beat,
                threshold,
            },
            _,
        ) => Cow::Owned(format!(
            "runtime stalled: no heartbeat for {} (threshold {})",
            human(now.saturating_duration_since(*last_beat)),
            human(*threshold)
        )),
        (ConditionFailure::Deadlock { cycles, threads }, _) => Cow::Owned(format!(
            "deadlock: {cycles} cycle(s) between {threads} threads"
        )),
        (ConditionFailure::Declared(reason), Details::Admin) => Cow::Owned(reason.clone()),
        (ConditionFailure::Declared(_), Details::Public) => Cow::Borrowed("declared broken"),
        (ConditionFailure::Silent { .. }, Details::Public) => Cow::Borrowed("stalled"),
        (
            ConditionFailure::Silent {
                last_beat,
                max_silence,
                overdue,
                seen,
            },
            Details::Admin,
        ) => {
            let silence = human(now.saturating_duration_since(*last_beat));
            let bound = human(*max_silence);
            // What the watcher saw, when it said: the operator reads that, not a bare silence.
            let silent = match seen {
                Some(seen) => format!("{seen}: silent for {silence} (bound {bound})"),
                None => format!("worker silent for {silence} (bound {bound})"),
            };
            Cow::Owned(match overdue {
                None => silent,
                Some(wait) => format!(
                    "{silent}: waiting on {} for {}, past its timeout ({})",
                    wait.dependency(),
                    human(now.saturating_duration_since(wait.since())),
                    human(wait.timeout())
                ),
            })
        }
    }
}
