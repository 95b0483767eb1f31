//! What a poll needs to know of its check without reading the pod.
//!
//! A large steady fleet is mostly polls: one every interval per pod and polled check, each
//! drawing its jitter from the run's one stream of chance, so each must run in its turn.
//! Reading the pod (hundreds of bytes, a cache miss at this size) to learn that nothing
//! changed would cost more than the poll. Each poller therefore has a lane of two bytes
//! beside the others: whether a success would change anything, whether the app's pool can
//! fail the call, and how many of its poll events are stale (scheduled for a process that
//! has gone, or replaced by a re-poll). While none is stale, the event in hand is the
//! current one and the poll reads nothing else; otherwise it checks the event against the
//! poller's key (its process and epoch).

/// The process and epoch a poller's current events carry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct PollKey {
    /// The process polling (0: none; container IDs start at 1).
    process: u32,
    epoch: u32,
}

impl PollKey {
    /// The key of `process`'s poller in `epoch`.
    pub(super) fn new(process: u32, epoch: u32) -> Self {
        PollKey { process, epoch }
    }
}

/// A poller's lane: three flags and a count of stale poll events, in two bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct PollLane(u16);

impl PollLane {
    /// A success changes nothing: the check is healthy with no failure counted, no poll is
    /// in flight or asked for, and nothing reads when the last result came (no staleness
    /// bound, no passive reports that a result must follow).
    const QUIET: u16 = 1 << 15;
    /// The app's pool cannot fail the call: it did not leak dry, no hung call holds a
    /// connection, and no pool is modelled as a queue.
    const POOL_CLEAR: u16 = 1 << 14;
    /// A poll event carrying the current key is pending.
    const LIVE: u16 = 1 << 13;
    /// The stale events pending; at its top the count is no longer kept, and every event
    /// is checked against the key.
    const STALE: u16 = (1 << 13) - 1;

    pub(super) fn quiet(self) -> bool {
        self.0 & Self::QUIET != 0
    }

    pub(super) fn pool_clear(self) -> bool {
        self.0 & Self::POOL_CLEAR != 0
    }

    fn stale(self) -> u16 {
        self.0 & Self::STALE
    }

    fn set(&mut self, flag: u16, on: bool) {
        if on {
            self.0 |= flag;
        } else {
            self.0 &= !flag;
        }
    }

    /// The current key changed: the pending event, if any, is stale now.
    fn key_changed(&mut self) {
        if self.0 & Self::LIVE != 0 && self.stale() < Self::STALE {
            self.0 += 1;
        }
        self.set(Self::LIVE, false);
    }

    /// A stale event came up and was dropped.
    fn stale_dropped(&mut self) {
        let stale = self.stale();
        if stale > 0 && stale < Self::STALE {
            self.0 -= 1;
        }
    }
}

/// Every poller's key and lane, `checks` apiece by pod.
#[derive(Debug)]
pub(super) struct Pollers {
    checks: usize,
    keys: Vec<PollKey>,
    lanes: Vec<PollLane>,
}

impl Pollers {
    /// The pollers of `pods` pods with `checks` checks each, none polling.
    pub(super) fn new(pods: usize, checks: usize) -> Self {
        Pollers {
            checks,
            keys: vec![PollKey::default(); pods * checks],
            lanes: vec![PollLane::default(); pods * checks],
        }
    }

    fn index(&self, pod: usize, check: usize) -> usize {
        pod * self.checks + check
    }

    /// The lane of the poller of `check` in `pod`, if a poll event of `process` in `epoch`
    /// is current; a stale event is counted out.
    pub(super) fn current(
        &mut self,
        pod: usize,
        check: usize,
        process: u32,
        epoch: u32,
    ) -> Option<PollLane> {
        let index = self.index(pod, check);
        let lane = self.lanes[index];
        if lane.stale() > 0 && self.keys[index] != (PollKey { process, epoch }) {
            self.lanes[index].stale_dropped();
            return None;
        }
        Some(lane)
    }

    /// A poll event of `process` in `epoch` was scheduled: if that is the current key, the
    /// poller has a live event. A poller already live has not changed its key since its
    /// event in hand was found current (a change clears the flag): nothing to read then.
    pub(super) fn scheduled(&mut self, pod: usize, check: usize, process: u32, epoch: u32) {
        let index = self.index(pod, check);
        if self.lanes[index].0 & PollLane::LIVE != 0 {
            return;
        }
        if self.keys[index] == (PollKey { process, epoch }) {
            self.lanes[index].set(PollLane::LIVE, true);
        }
    }

    /// The poller of `check` in `pod` now has `key`; a success would change nothing
    /// (`quiet`), and, when known anew, the app's pool cannot fail its call (`pool_clear`).
    pub(super) fn update(
        &mut self,
        pod: usize,
        check: usize,
        key: PollKey,
        quiet: bool,
        pool_clear: Option<bool>,
    ) {
        let index = self.index(pod, check);
        let lane = &mut self.lanes[index];
        if self.keys[index] != key {
            lane.key_changed();
            self.keys[index] = key;
        }
        lane.set(PollLane::QUIET, quiet);
        if let Some(clear) = pool_clear {
            lane.set(PollLane::POOL_CLEAR, clear);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lane_counts_the_events_its_key_changes_leave_stale() {
        let mut lane = PollLane::default();
        lane.key_changed();
        assert_eq!(lane.stale(), 0, "no live event: nothing goes stale");
        lane.set(PollLane::LIVE, true);
        lane.key_changed();
        lane.set(PollLane::LIVE, true);
        lane.key_changed();
        assert_eq!(lane.stale(), 2);
        lane.set(PollLane::QUIET, true);
        lane.stale_dropped();
        assert_eq!(lane.stale(), 1);
        assert!(lane.quiet() && !lane.pool_clear());
        lane.stale_dropped();
        lane.stale_dropped();
        assert_eq!(lane.stale(), 0, "never below zero");
    }

    #[test]
    fn a_full_count_stays_full() {
        let mut lane = PollLane(PollLane::STALE | PollLane::LIVE);
        lane.key_changed();
        lane.stale_dropped();
        assert_eq!(lane.stale(), PollLane::STALE);
    }
}
