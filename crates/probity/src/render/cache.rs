//! Answers kept with the snapshot they were rendered from.
//!
//! A snapshot changes when a poll result, a report or a step arrives — every few seconds —
//! while probes and dashboards may ask for it thousands of times a second. Most answers are the
//! same for every one of those requests, so the first render of each kind (probe × format ×
//! `?verbose` × details) is kept with the snapshot and served again until something in it would
//! read differently. What can: a check's result turning stale (at a known instant), and the
//! parts that count seconds as they pass — a stale result's age, a fail-open countdown, the
//! time since shutdown began, a stalled runtime's or a silent worker's silence, a declared
//! wait's duration. An answer holding any of those is never kept; an answer that would turn
//! stale is kept only until then. Timestamps are printed from the clock of the first render and
//! are reused only by a clock that maps monotonic to wall time the same way (within a
//! millisecond), so a test's fixed clock never sees another clock's timestamps.
//!
//! Asked with `?exclude=` or for one entry, an answer is rendered every time.

use super::{Clock, Format, SharedText};
use crate::details::Details;
use crate::snapshot::{ConditionFailure, Snapshot};
use probity_contract::{ProbeKind, Status};
use std::sync::OnceLock;
use std::time::Duration;
use tokio::time::Instant;

const PROBES: usize = 3;
const FORMATS: usize = 3;
const CELLS: usize = PROBES * FORMATS * 2 * 2;

/// The answers of one snapshot; empty when it is published.
pub(crate) struct Answers {
    cells: [OnceLock<Kept>; CELLS],
    /// Each probe's verdict, for the plain answer (`ok`) that needs nothing else.
    verdicts: [OnceLock<KeptVerdict>; PROBES],
}

impl Default for Answers {
    fn default() -> Self {
        Answers {
            cells: std::array::from_fn(|_| OnceLock::new()),
            verdicts: std::array::from_fn(|_| OnceLock::new()),
        }
    }
}

/// A probe's verdict, and until when it holds.
#[derive(Debug)]
struct KeptVerdict {
    /// When it was decided.
    at: Instant,
    /// Until when it holds; `None`: until the next snapshot.
    until: Option<Instant>,
    status: Status,
}

fn probe_index(probe: ProbeKind) -> usize {
    match probe {
        ProbeKind::Liveness => 0,
        ProbeKind::Readiness => 1,
        ProbeKind::Startup => 2,
    }
}

impl std::fmt::Debug for Answers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self
            .cells
            .iter()
            .filter(|cell| cell.get().is_some())
            .count();
        f.debug_struct("Answers").field("kept", &kept).finish()
    }
}

/// One kept answer.
#[derive(Debug)]
struct Kept {
    /// The clock it was rendered with.
    clock: Clock,
    /// Until when it reads as a fresh render would; `None`: until the next snapshot.
    until: Option<Instant>,
    status: Status,
    body: SharedText,
}

/// Which answer: probe, format, `?verbose`, details.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Key(usize);

impl Key {
    pub(crate) fn new(probe: ProbeKind, format: Format, verbose: bool, details: Details) -> Key {
        let probe = probe_index(probe);
        let format = match format {
            Format::Text => 0,
            Format::Json => 1,
            Format::HealthJson => 2,
        };
        let details = usize::from(details == Details::Admin);
        Key(((probe * FORMATS + format) * 2 + usize::from(verbose)) * 2 + details)
    }
}

/// Clocks map monotonic to wall time alike when they differ by less than this.
const SAME_CLOCK: Duration = Duration::from_millis(1);

impl Answers {
    /// The probe's status at `now`: [`Snapshot::status`], decided once per snapshot for as
    /// long as nothing in it changes with time alone (the instants a kept answer is bounded
    /// by: a result turning stale; a fail-open window or anything else that counts seconds is
    /// decided afresh every time).
    pub(crate) fn status(&self, snapshot: &Snapshot, probe: ProbeKind, now: Instant) -> Status {
        let cell = &self.verdicts[probe_index(probe)];
        if let Some(kept) = cell.get()
            && now >= kept.at
            && kept.until.is_none_or(|until| now < until)
        {
            return kept.status;
        }
        let status = snapshot.status(probe, now);
        if cell.get().is_none()
            && let Steady::Until(until) = steady(snapshot, probe, now)
        {
            let _ = cell.set(KeptVerdict {
                at: now,
                until,
                status,
            });
        }
        status
    }

    /// The kept answer for `key`, if it still reads as a render at `clock` would.
    pub(crate) fn get(&self, key: Key, clock: Clock) -> Option<(Status, SharedText)> {
        let kept = self.cells[key.0].get()?;
        if clock.now < kept.clock.now || kept.until.is_some_and(|until| clock.now >= until) {
            return None;
        }
        let expected = kept.clock.wall + (clock.now - kept.clock.now);
        let drift = match clock.wall.duration_since(expected) {
            Ok(ahead) => ahead,
            Err(behind) => behind.duration(),
        };
        (drift < SAME_CLOCK).then(|| (kept.status, kept.body.clone()))
    }

    /// Keeps an answer rendered at `clock`, when nothing in it changes with time alone.
    pub(crate) fn keep(
        &self,
        key: Key,
        snapshot: &Snapshot,
        probe: ProbeKind,
        clock: Clock,
        status: Status,
        body: &str,
    ) {
        // Kept already: the answer at hand was rendered for a clock the kept one does not
        // serve (another mapping of time, or past its deadline), and the first one stays.
        let cell = &self.cells[key.0];
        if cell.get().is_some() {
            return;
        }
        let Steady::Until(until) = steady(snapshot, probe, clock.now) else {
            return;
        };
        let _ = cell.set(Kept {
            clock,
            until,
            status,
            body: SharedText::new(body),
        });
    }
}

/// Whether an answer of `probe` rendered at `now` reads the same later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Steady {
    /// Something in it counts seconds.
    No,
    /// The same until this instant (`None`: until the next snapshot).
    Until(Option<Instant>),
}

fn steady(snapshot: &Snapshot, probe: ProbeKind, now: Instant) -> Steady {
    let counting = |failure: &ConditionFailure| {
        matches!(
            failure,
            ConditionFailure::Stalled { .. } | ConditionFailure::Silent { .. }
        )
    };
    match probe {
        ProbeKind::Startup => Steady::Until(None),
        ProbeKind::Liveness => {
            let counts = snapshot.conditions().iter().any(|condition| {
                condition.waiting().is_some() || condition.failure().is_some_and(counting)
            });
            if counts {
                Steady::No
            } else {
                Steady::Until(None)
            }
        }
        ProbeKind::Readiness => {
            let liveness_counts = snapshot
                .conditions()
                .iter()
                .any(|condition| condition.failure().is_some_and(counting));
            if snapshot.shutting_down_since().is_some() || liveness_counts {
                return Steady::No;
            }
            let mut until: Option<Instant> = None;
            for check in snapshot.checks() {
                // A result newer than the clock (a clock read before the snapshot was loaded)
                // prints as "now", which moves with the clock.
                let times = [
                    check.last().map(|last| last.at),
                    check.last_success(),
                    check.last_transition(),
                ];
                if times.into_iter().flatten().any(|at| at > now) {
                    return Steady::No;
                }
                let verdict = check.verdict(now);
                if verdict.failing_open.is_some()
                    || matches!(
                        verdict.cause,
                        probity_contract::verdict::Cause::Stale { .. }
                    )
                {
                    return Steady::No;
                }
                if let Some(last) = &check.evidence().last {
                    let stale_at = Instant::from_std(last.at) + check.staleness();
                    until = Some(until.map_or(stale_at, |until| until.min(stale_at)));
                }
            }
            Steady::Until(until)
        }
    }
}
