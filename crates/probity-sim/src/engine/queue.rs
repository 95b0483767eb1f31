//! The event queue: what happens next, in time order.
//!
//! Events at the same millisecond run in the order they were scheduled, so a run is a pure
//! function of the scenario and the seed.

use crate::time::Millis;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// Something that happens at a point in simulated time. Pods, checks and connections are
/// indices; epochs cancel events that a later decision replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// A kubelet probe worker's ticker fires.
    ProbeTick { pod: u32, slot: u8, epoch: u32 },
    /// A probe's result is in.
    ProbeDone {
        pod: u32,
        slot: u8,
        container: u32,
        success: bool,
    },
    /// A poller starts a poll of its check.
    PollStart {
        pod: u32,
        check: u16,
        process: u32,
        epoch: u32,
    },
    /// A poll's result is in.
    PollDone {
        pod: u32,
        check: u16,
        process: u32,
        success: bool,
    },
    /// The app finished booting.
    BootDone { pod: u32, process: u32, epoch: u32 },
    /// A killed container has exited.
    KillDone { pod: u32, container: u32 },
    /// The kubelet starts the pod's container (again).
    StartContainer { pod: u32, epoch: u32 },
    /// A pod's readiness reached the endpoints its router follows.
    EndpointUpdate { pod: u32, ready: bool },
    /// A load balancer's health check of a pod starts.
    CheckTick { pod: u32, epoch: u32 },
    /// A load balancer's health check of a pod has its result.
    CheckDone {
        pod: u32,
        epoch: u32,
        success: bool,
        definitive: bool,
    },
    /// Envoy's outlier detection ejects a pod.
    Eject { pod: u32, epoch: u32 },
    /// A pod's ejection ends.
    EjectEnd { pod: u32, epoch: u32 },
    /// A hung health-check call gives its pool connection back.
    HungEnd { pod: u32, process: u32 },
    /// Reports of new conditions start reaching a passive check.
    PassiveResume {
        pod: u32,
        check: u16,
        process: u32,
        epoch: u32,
    },
    /// The next passive check due to fail has reached its threshold.
    PassiveDue { epoch: u32 },
    /// A fault begins.
    FaultStart { fault: u32 },
    /// A fault ends.
    FaultEnd { fault: u32 },
    /// A flapping dependency goes down or comes back.
    FlapBoundary { fault: u32 },
    /// A keep-alive client connection ends.
    ConnectionEnd { connection: u32, epoch: u32 },
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    at: Millis,
    sequence: u64,
    event: Event,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.sequence) == (other.at, other.sequence)
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.at, self.sequence).cmp(&(other.at, other.sequence))
    }
}

/// Pending events, earliest first; ties in scheduling order.
#[derive(Debug, Default)]
pub(crate) struct EventQueue {
    heap: BinaryHeap<Reverse<Entry>>,
    sequence: u64,
    scheduled: u64,
}

impl EventQueue {
    /// Adds `event` at `at`.
    pub(crate) fn schedule(&mut self, at: Millis, event: Event) {
        self.sequence += 1;
        self.scheduled += 1;
        self.heap.push(Reverse(Entry {
            at,
            sequence: self.sequence,
            event,
        }));
    }

    /// The time of the next event.
    pub(crate) fn next_time(&self) -> Option<Millis> {
        self.heap.peek().map(|Reverse(entry)| entry.at)
    }

    /// Removes and returns the next event.
    pub(crate) fn pop(&mut self) -> Option<(Millis, Event)> {
        self.heap
            .pop()
            .map(|Reverse(entry)| (entry.at, entry.event))
    }

    /// Events scheduled so far (a measure of the work a run did).
    pub(crate) fn scheduled(&self) -> u64 {
        self.scheduled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_ties_in_scheduling_order() {
        let mut queue = EventQueue::default();
        queue.schedule(20, Event::FaultStart { fault: 0 });
        queue.schedule(10, Event::FaultStart { fault: 1 });
        queue.schedule(20, Event::FaultStart { fault: 2 });
        queue.schedule(10, Event::FaultStart { fault: 3 });
        let order: Vec<(Millis, Event)> = std::iter::from_fn(|| queue.pop()).collect();
        let faults: Vec<u32> = order
            .iter()
            .map(|(_, event)| match event {
                Event::FaultStart { fault } => *fault,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(faults, [1, 3, 0, 2]);
        assert_eq!(queue.scheduled(), 4);
        assert_eq!(queue.next_time(), None);
    }
}
