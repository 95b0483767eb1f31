//! Recent history, kept by the store where states are published: a readiness check's last
//! transitions and poll latencies ([`crate::CheckState::history`]), and a liveness condition's
//! last transitions between passing, waiting and failing ([`crate::ConditionState::history`]).
//!
//! Both are fixed-size rings held inline ([`HISTORY_LEN`] entries each, oldest overwritten), so
//! the memory a check's history takes is the same after a minute or after a year, and keeping
//! it costs no allocation: publishing a poll copies the rings along with the rest of the
//! check's state. Timestamps are wall-clock ([`SystemTime`]), for a person to read; the
//! probes' own decisions never look at them.

use crate::check::FailureKind;
use std::time::{Duration, SystemTime};

/// How many transitions and how many polls each check's history keeps.
pub const HISTORY_LEN: usize = 32;

/// A check turned healthy or unhealthy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransitionRecord {
    pub(crate) at: SystemTime,
    pub(crate) healthy: bool,
    pub(crate) class: Option<FailureKind>,
    pub(crate) passive: bool,
}

impl TransitionRecord {
    /// When the store published it (wall clock).
    pub fn at(&self) -> SystemTime {
        self.at
    }

    /// Whether the check turned healthy (a rise) rather than unhealthy (a fall).
    pub fn became_healthy(&self) -> bool {
        self.healthy
    }

    /// The state it left: `healthy` or `unhealthy`.
    pub fn from(&self) -> &'static str {
        if self.healthy { "unhealthy" } else { "healthy" }
    }

    /// The state it entered: `healthy` or `unhealthy`.
    pub fn to(&self) -> &'static str {
        if self.healthy { "healthy" } else { "unhealthy" }
    }

    /// For a fall, the class of the failure that caused it (`timeout`, `exhausted`, …); `None`
    /// for a rise.
    pub fn class(&self) -> Option<FailureKind> {
        self.class
    }

    /// Whether application code's reports of real failures caused it, rather than a poll.
    pub fn passive(&self) -> bool {
        self.passive
    }
}

/// One completed poll: when, how long, and whether it passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollRecord {
    pub(crate) at: SystemTime,
    pub(crate) duration: Duration,
    pub(crate) ok: bool,
}

impl PollRecord {
    /// When the poll's result was published (wall clock).
    pub fn at(&self) -> SystemTime {
        self.at
    }

    /// How long the poll took (up to the check's timeout, for a poll cut at it).
    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// Whether the poll succeeded.
    pub fn ok(&self) -> bool {
        self.ok
    }
}

/// A fixed-capacity ring of `Copy` records: pushing onto a full ring overwrites the oldest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ring<T: Copy, const N: usize> {
    slots: [Option<T>; N],
    /// The slot the next push writes.
    next: usize,
    /// Records pushed since the start, including those overwritten.
    total: u64,
}

impl<T: Copy, const N: usize> Default for Ring<T, N> {
    fn default() -> Self {
        Ring {
            slots: [None; N],
            next: 0,
            total: 0,
        }
    }
}

impl<T: Copy, const N: usize> Ring<T, N> {
    pub(crate) fn push(&mut self, record: T) {
        self.slots[self.next] = Some(record);
        self.next = (self.next + 1) % N;
        self.total += 1;
    }

    pub(crate) fn len(&self) -> usize {
        self.total.min(N as u64) as usize
    }

    /// Oldest first.
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + ExactSizeIterator {
        let len = self.len();
        let start = (self.next + N - len) % N;
        (0..len).map(move |offset| {
            self.slots[(start + offset) % N]
                .as_ref()
                .expect("the ring's first `len` slots from `start` are filled")
        })
    }
}

/// A readiness check's recent transitions and polls, oldest first, at most [`HISTORY_LEN`] of
/// each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct History {
    pub(crate) transitions: Ring<TransitionRecord, HISTORY_LEN>,
    pub(crate) polls: Ring<PollRecord, HISTORY_LEN>,
}

impl History {
    /// The last transitions (at most [`HISTORY_LEN`]), oldest first; `.rev()` for newest first.
    pub fn transitions(
        &self,
    ) -> impl DoubleEndedIterator<Item = &TransitionRecord> + ExactSizeIterator {
        self.transitions.iter()
    }

    /// The last polls (at most [`HISTORY_LEN`]), oldest first; `.rev()` for newest first.
    /// Passive reports are not polls and are not listed here.
    pub fn polls(&self) -> impl DoubleEndedIterator<Item = &PollRecord> + ExactSizeIterator {
        self.polls.iter()
    }

    /// Transitions since the check was registered, including those no longer kept.
    pub fn transitions_total(&self) -> u64 {
        self.transitions.total
    }

    /// Polls since the check was registered, including those no longer kept.
    pub fn polls_total(&self) -> u64 {
        self.polls.total
    }

    pub(crate) fn record_poll(&mut self, at: SystemTime, duration: Duration, ok: bool) {
        self.polls.push(PollRecord { at, duration, ok });
    }

    pub(crate) fn record_transition(
        &mut self,
        at: SystemTime,
        healthy: bool,
        class: Option<FailureKind>,
        passive: bool,
    ) {
        self.transitions.push(TransitionRecord {
            at,
            healthy,
            class: if healthy { None } else { class },
            passive,
        });
    }
}

/// Where a liveness condition stands: what its transitions move between.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConditionPhase {
    /// It passes.
    Passing,
    /// It passes only because its worker is inside a declared wait still within its timeout.
    Waiting,
    /// It fails liveness.
    Failing,
}

impl ConditionPhase {
    /// `passing`, `waiting` or `failing`.
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionPhase::Passing => "passing",
            ConditionPhase::Waiting => "waiting",
            ConditionPhase::Failing => "failing",
        }
    }
}

impl std::fmt::Display for ConditionPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A liveness condition moved from one phase to another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConditionTransition {
    pub(crate) at: SystemTime,
    pub(crate) from: ConditionPhase,
    pub(crate) to: ConditionPhase,
}

impl ConditionTransition {
    /// When the store published it (wall clock).
    pub fn at(&self) -> SystemTime {
        self.at
    }

    /// The phase it left.
    pub fn from(&self) -> ConditionPhase {
        self.from
    }

    /// The phase it entered.
    pub fn to(&self) -> ConditionPhase {
        self.to
    }
}

/// A liveness condition's recent transitions, oldest first, at most [`HISTORY_LEN`]: held
/// inline like a check's [`History`], so keeping it allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConditionHistory {
    pub(crate) transitions: Ring<ConditionTransition, HISTORY_LEN>,
}

impl ConditionHistory {
    /// The last transitions (at most [`HISTORY_LEN`]), oldest first; `.rev()` for newest first.
    pub fn transitions(
        &self,
    ) -> impl DoubleEndedIterator<Item = &ConditionTransition> + ExactSizeIterator {
        self.transitions.iter()
    }

    /// Transitions since the condition was registered, including those no longer kept.
    pub fn transitions_total(&self) -> u64 {
        self.transitions.total
    }

    pub(crate) fn record(&mut self, at: SystemTime, from: ConditionPhase, to: ConditionPhase) {
        if from != to {
            self.transitions.push(ConditionTransition { at, from, to });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(seconds)
    }

    #[test]
    fn an_empty_history_lists_nothing() {
        let history = History::default();
        assert_eq!(history.transitions().len(), 0);
        assert_eq!(history.polls().len(), 0);
        assert_eq!(history.transitions_total(), 0);
    }

    #[test]
    fn a_partly_filled_ring_lists_oldest_first() {
        let mut history = History::default();
        for second in 0..5 {
            history.record_poll(at(second), Duration::from_millis(second), second % 2 == 0);
        }
        let seconds: Vec<SystemTime> = history.polls().map(PollRecord::at).collect();
        assert_eq!(seconds, (0..5).map(at).collect::<Vec<_>>());
        assert_eq!(history.polls().next_back().unwrap().at(), at(4));
        assert!(!history.polls().nth(1).unwrap().ok());
    }

    #[test]
    fn a_full_ring_keeps_the_newest_in_order() {
        let mut ring: Ring<u64, 4> = Ring::default();
        for value in 0..10 {
            ring.push(value);
            let kept: Vec<u64> = ring.iter().copied().collect();
            let first = (value + 1).saturating_sub(4);
            assert_eq!(kept, (first..=value).collect::<Vec<_>>(), "after {value}");
        }
    }

    #[test]
    fn survives_many_transitions_bounded_and_ordered() {
        let mut history = History::default();
        let before = std::mem::size_of_val(&history);
        for second in 0..100_000u64 {
            let healthy = second % 2 == 1;
            history.record_transition(
                at(second),
                healthy,
                Some(FailureKind::Exhausted),
                second % 3 == 0,
            );
            history.record_poll(at(second), Duration::from_millis(second % 50), healthy);
        }
        assert_eq!(std::mem::size_of_val(&history), before, "held inline");
        assert_eq!(history.transitions_total(), 100_000);
        assert_eq!(history.polls_total(), 100_000);
        let kept: Vec<&TransitionRecord> = history.transitions().collect();
        assert_eq!(kept.len(), HISTORY_LEN);
        assert_eq!(kept.last().unwrap().at(), at(99_999));
        assert_eq!(kept.first().unwrap().at(), at(100_000 - HISTORY_LEN as u64));
        assert!(kept.windows(2).all(|pair| pair[0].at() < pair[1].at()));
        // Rises carry no class; falls keep theirs, and the sides read right.
        let rise = kept.last().unwrap();
        assert!(rise.became_healthy());
        assert_eq!(
            (rise.from(), rise.to(), rise.class()),
            ("unhealthy", "healthy", None)
        );
        let fall = kept[kept.len() - 2];
        assert_eq!(
            (fall.from(), fall.to(), fall.class()),
            ("healthy", "unhealthy", Some(FailureKind::Exhausted))
        );
        assert_eq!(history.polls().len(), HISTORY_LEN);
    }

    #[test]
    fn a_condition_keeps_its_phase_changes_only() {
        let mut history = ConditionHistory::default();
        history.record(at(1), ConditionPhase::Passing, ConditionPhase::Waiting);
        history.record(at(2), ConditionPhase::Waiting, ConditionPhase::Waiting);
        history.record(at(3), ConditionPhase::Waiting, ConditionPhase::Failing);
        let kept: Vec<(ConditionPhase, ConditionPhase)> = history
            .transitions()
            .map(|transition| (transition.from(), transition.to()))
            .collect();
        assert_eq!(
            kept,
            [
                (ConditionPhase::Passing, ConditionPhase::Waiting),
                (ConditionPhase::Waiting, ConditionPhase::Failing)
            ]
        );
        assert_eq!(history.transitions_total(), 2);
        assert_eq!(history.transitions().next_back().unwrap().at(), at(3));
        assert_eq!(ConditionPhase::Failing.to_string(), "failing");
    }
}
