//! The event queue: what happens next, in time order.
//!
//! Events at the same millisecond run in the order they were scheduled, so a run is a pure
//! function of the scenario and the seed.

use crate::time::Millis;
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

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
    /// A poll's result is in (`local`: it failed for the pod's own pool).
    PollDone {
        pod: u32,
        check: u16,
        process: u32,
        success: bool,
        local: bool,
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
    /// A process that crashes on start exits.
    CrashExit { pod: u32, container: u32 },
    /// Envoy's success-rate outlier detection sweeps its hosts.
    OutlierSweep,
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
    /// A verdict judged with a fallback may change by time alone (a staleness bound or a
    /// fail-open window runs out): the pod's requests are looked at again.
    Reassess { pod: u32, process: u32 },
    /// A keep-alive client connection ends.
    ConnectionEnd { connection: u32, epoch: u32 },
}

/// An event's place among the events of its millisecond: the order in which it was
/// scheduled. Real schedules take odd values from a counter; a tick that a quiet probe worker
/// never scheduled takes the even value just below the first schedule of the instant it
/// would have been scheduled in ([`EventQueue::order_at`]), so it runs where it would have.
pub(crate) type Order = u64;

#[derive(Debug, Clone, Copy)]
struct Entry {
    at: Millis,
    order: Order,
    event: Event,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.order) == (other.at, other.order)
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
        (self.at, self.order).cmp(&(other.at, other.order))
    }
}

/// One event in its wheel slot, with its place among the slot's events.
#[derive(Debug, Clone, Copy)]
struct Slotted {
    order: Order,
    event: Event,
}

/// Milliseconds the wheel holds: events further ahead wait in a heap until they come within
/// reach. Longer than the usual poll interval and readiness period (the events a large
/// steady fleet is made of), and short enough that the slots' buffers stay in cache: each
/// slot is reused once per turn of the wheel.
const HORIZON: usize = 1 << 13;

/// Milliseconds a staging bucket spans. An event a poll interval ahead is appended to its
/// bucket, and a bucket is sorted into its slots only shortly before its time comes: the
/// writes of both steps go to buffers that stay in cache (128 bucket ends, then a few
/// hundred slots reused every quarter second), where writing straight into a slot seconds
/// ahead misses the cache at every event.
const BUCKET: Millis = 64;
const BUCKETS: usize = HORIZON / BUCKET as usize;

/// Slots, one per millisecond from the cursor on: the filled ones never reach further than
/// two buckets ahead.
const SLOTS: usize = 1 << 8;
const WORDS: usize = SLOTS / 64;

/// Milliseconds back for which the queue remembers where each instant's schedules began
/// ([`EventQueue::order_at`]): the longest probe period a quiet worker may have.
pub(crate) const MEMORY: Millis = 1 << 17;

/// Pending events, earliest first; ties in scheduling order.
///
/// A timing wheel of one slot per millisecond: scheduling appends to the event's slot and
/// taking the next event takes from the front of the earliest non-empty slot, so both cost
/// O(1) however many events are pending (a binary heap of a large fleet's events costs a
/// cache miss at every level). Within a slot, events keep their scheduling order. Slots are
/// filled [`BUCKET`] milliseconds at a time: an event beyond the filled slots waits in its
/// staging bucket until the cursor comes near. An event beyond the wheel's horizon waits in
/// a heap and moves into its bucket or slot as soon as it comes within reach, in its order.
#[derive(Debug)]
pub(crate) struct EventQueue {
    slots: Vec<VecDeque<Slotted>>,
    /// One bit per slot: whether it holds events.
    occupied: Vec<u64>,
    /// The latest place in each slot, so that appending (the usual case) need not read the
    /// slot's events.
    last_order: Vec<Order>,
    /// The time the wheel's earliest slot stands for; nothing pending is earlier.
    cursor: Millis,
    /// Events in the slots.
    in_wheel: usize,
    /// Events at `filled_until` or later (and within reach) wait in the bucket of their
    /// [`BUCKET`]; earlier ones are in their slots. A multiple of [`BUCKET`].
    filled_until: Millis,
    buckets: Vec<Vec<Entry>>,
    /// Events in the buckets.
    staged: usize,
    later: BinaryHeap<Reverse<Entry>>,
    /// Schedules so far.
    counter: u64,
    /// The counter when each of the last [`MEMORY`] milliseconds began, by millisecond.
    instant_starts: Vec<u64>,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            slots: (0..SLOTS).map(|_| VecDeque::new()).collect(),
            occupied: vec![0; WORDS],
            last_order: vec![0; SLOTS],
            cursor: 0,
            in_wheel: 0,
            filled_until: BUCKET,
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            staged: 0,
            later: BinaryHeap::new(),
            counter: 0,
            instant_starts: vec![0; MEMORY as usize],
        }
    }
}

impl EventQueue {
    /// Adds `event` at `at` (never earlier than the last event taken), after everything
    /// scheduled so far.
    pub(crate) fn schedule(&mut self, at: Millis, event: Event) {
        let order = self.reserve();
        self.schedule_in_order(at, order, event);
    }

    /// Takes the place of the next schedule, for an event that may be scheduled later in
    /// that place (or never).
    pub(crate) fn reserve(&mut self) -> Order {
        self.counter += 1;
        2 * self.counter + 1
    }

    /// The place of an event scheduled at the very start of instant `time`, before anything
    /// scheduled then: `None` when `time` is more than [`MEMORY`] ago or still to come.
    pub(crate) fn order_at(&self, time: Millis) -> Option<Order> {
        if time > self.cursor || self.cursor - time >= MEMORY {
            return None;
        }
        Some(2 * self.instant_starts[(time % MEMORY) as usize] + 2)
    }

    /// Adds `event` at `at` in the place `order` (from [`EventQueue::reserve`] or
    /// [`EventQueue::order_at`]).
    pub(crate) fn schedule_in_order(&mut self, at: Millis, order: Order, event: Event) {
        let at = at.max(self.cursor);
        self.place(Entry { at, order, event });
    }

    /// Puts an event in its slot, its bucket or the heap, by how far ahead it is.
    fn place(&mut self, entry: Entry) {
        if entry.at - self.cursor >= (HORIZON as Millis) - BUCKET {
            self.later.push(Reverse(entry));
        } else if entry.at < self.filled_until {
            self.insert(entry.at, entry.order, entry.event);
        } else {
            self.buckets[bucket_of(entry.at)].push(entry);
            self.staged += 1;
        }
    }

    /// Sorts the next bucket into its slots.
    fn fill_next_bucket(&mut self) {
        let bucket = bucket_of(self.filled_until);
        self.filled_until += BUCKET;
        let mut entries = std::mem::take(&mut self.buckets[bucket]);
        self.staged -= entries.len();
        for entry in entries.drain(..) {
            self.insert(entry.at, entry.order, entry.event);
        }
        // The emptied buffer is kept for the bucket's next turn.
        self.buckets[bucket] = entries;
    }

    /// Fills slots until those filled reach a bucket past the cursor.
    fn fill_ahead(&mut self) {
        if self.staged == 0 {
            // Nothing staged: the buckets up to the cursor's next one are empty.
            let next = (self.cursor / BUCKET + 1) * BUCKET;
            self.filled_until = self.filled_until.max(next);
            return;
        }
        while self.filled_until <= self.cursor + BUCKET {
            self.fill_next_bucket();
        }
    }

    fn insert(&mut self, at: Millis, order: Order, event: Event) {
        let slot = (at as usize) & (SLOTS - 1);
        let events = &mut self.slots[slot];
        // Almost always the latest: append. Otherwise find its place from the back.
        if events.is_empty() || order > self.last_order[slot] {
            events.push_back(Slotted { order, event });
            self.last_order[slot] = order;
        } else {
            let mut place = events.len();
            while place > 0 && events[place - 1].order > order {
                place -= 1;
            }
            events.insert(place, Slotted { order, event });
        }
        self.occupied[slot / 64] |= 1 << (slot % 64);
        self.in_wheel += 1;
    }

    /// Moves the wheel to `time`, remembering where the instants in between began and
    /// bringing the events that come within reach into it.
    fn move_to(&mut self, time: Millis) {
        let from = (self.cursor + 1).max(time.saturating_sub(MEMORY - 1));
        for instant in from..=time {
            self.instant_starts[(instant % MEMORY) as usize] = self.counter;
        }
        self.cursor = time;
        self.fill_ahead();
        while let Some(Reverse(entry)) = self.later.peek() {
            if entry.at - self.cursor >= (HORIZON as Millis) - BUCKET {
                break;
            }
            let Some(Reverse(entry)) = self.later.pop() else {
                break;
            };
            self.place(entry);
        }
    }

    /// The earliest time of a staged event.
    fn earliest_staged(&self) -> Option<Millis> {
        (0..BUCKETS)
            .map(|step| &self.buckets[(bucket_of(self.filled_until) + step) % BUCKETS])
            .find(|bucket| !bucket.is_empty())
            .and_then(|bucket| bucket.iter().map(|entry| entry.at).min())
    }

    /// The earliest time with an event in the wheel, from the cursor on.
    fn earliest_in_wheel(&self) -> Option<Millis> {
        if self.in_wheel == 0 {
            return None;
        }
        let start = (self.cursor as usize) & (SLOTS - 1);
        // Most events share their millisecond with the one before: look there first.
        if !self.slots[start].is_empty() {
            return Some(self.cursor);
        }
        // Scan the occupancy bits from the cursor's slot around the wheel.
        for step in 0..=WORDS {
            let word_index = (start / 64 + step) % WORDS;
            let mut word = self.occupied[word_index];
            if step == 0 {
                word &= !0u64 << (start % 64);
            } else if step == WORDS {
                word &= (1u64 << (start % 64)).wrapping_sub(1);
            }
            if word != 0 {
                let slot = word_index * 64 + word.trailing_zeros() as usize;
                let ahead = (slot + SLOTS - start) & (SLOTS - 1);
                return Some(self.cursor + ahead as Millis);
            }
        }
        None
    }

    /// The time of the next event.
    pub(crate) fn next_time(&self) -> Option<Millis> {
        match (self.earliest_in_wheel(), self.later.peek()) {
            (Some(wheel), _) => Some(wheel),
            // Staged events come before any in the heap; the first staged bucket holds the
            // earliest (it is filled into the slots once the cursor gets there).
            (None, _) if self.staged > 0 => self.earliest_staged(),
            (None, Some(Reverse(entry))) => Some(entry.at),
            (None, None) => None,
        }
    }

    /// Removes and returns the next event, with its time and place.
    #[cfg(test)]
    pub(crate) fn pop(&mut self) -> Option<(Millis, Order, Event)> {
        let next = self.next_time()?;
        self.pop_at(next)
    }

    /// Removes and returns the next event, at `next`: the time [`EventQueue::next_time`]
    /// gave, with nothing scheduled since.
    pub(crate) fn pop_at(&mut self, next: Millis) -> Option<(Millis, Order, Event)> {
        if next != self.cursor {
            self.move_to(next);
        }
        let slot = (next as usize) & (SLOTS - 1);
        let entry = self.slots[slot].pop_front()?;
        if self.slots[slot].is_empty() {
            self.occupied[slot / 64] &= !(1 << (slot % 64));
        }
        self.in_wheel -= 1;
        Some((next, entry.order, entry.event))
    }
}

/// The staging bucket of time `at`.
fn bucket_of(at: Millis) -> usize {
    ((at / BUCKET) as usize) % BUCKETS
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
        let order: Vec<(Millis, Order, Event)> = std::iter::from_fn(|| queue.pop()).collect();
        let faults: Vec<u32> = order
            .iter()
            .map(|(_, _, event)| match event {
                Event::FaultStart { fault } => *fault,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(faults, [1, 3, 0, 2]);
        assert_eq!(queue.next_time(), None);
    }

    #[test]
    fn an_event_placed_at_an_instant_runs_before_what_that_instant_scheduled() {
        let mut queue = EventQueue::default();
        queue.schedule(10, Event::FaultStart { fault: 0 });
        queue.schedule(500, Event::FaultStart { fault: 1 });
        let (time, _, _) = queue.pop().unwrap();
        assert_eq!(time, 10);
        // Scheduled during instant 10.
        queue.schedule(500, Event::FaultStart { fault: 2 });
        // As if scheduled at the start of instant 10: after the event scheduled before it,
        // before the one scheduled during it.
        let order = queue.order_at(10).unwrap();
        queue.schedule_in_order(500, order, Event::FaultStart { fault: 3 });
        // A place reserved now and used later keeps its rank.
        let reserved = queue.reserve();
        queue.schedule(500, Event::FaultStart { fault: 4 });
        queue.schedule_in_order(500, reserved, Event::FaultStart { fault: 5 });
        let faults: Vec<u32> = std::iter::from_fn(|| queue.pop())
            .map(|(_, _, event)| match event {
                Event::FaultStart { fault } => fault,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(faults, [1, 3, 2, 5, 4]);
        assert_eq!(
            queue.order_at(600),
            None,
            "an instant still to come has no place yet"
        );
    }

    /// The wheel against a heap of (time, sequence), with events in the slots, in the
    /// staging buckets and far beyond the horizon, and events scheduled while others are taken.
    #[test]
    fn the_wheel_keeps_heap_order() {
        let mut queue = EventQueue::default();
        let mut reference = BinaryHeap::new();
        let mut rng = fastrand::Rng::with_seed(11);
        let mut sequence = 0u32;
        let mut now = 0;
        let mut push = |queue: &mut EventQueue,
                        reference: &mut BinaryHeap<Reverse<(Millis, u32)>>,
                        at: Millis| {
            sequence += 1;
            queue.schedule(at, Event::FaultStart { fault: sequence });
            reference.push(Reverse((at, sequence)));
        };
        for _ in 0..200 {
            let at = rng.u64(0..200_000);
            push(&mut queue, &mut reference, at);
        }
        while let Some(Reverse((at, fault))) = reference.pop() {
            let (time, _, event) = queue.pop().unwrap();
            assert_eq!((time, event), (at, Event::FaultStart { fault }));
            now = time;
            for _ in 0..rng.usize(0..3) {
                let ahead = [0, 1, 5, 63, 64, 700, 5_000, 8_130, 40_000, 100_000][rng.usize(0..10)];
                push(&mut queue, &mut reference, now + ahead);
            }
            if reference.len() > 2_000 {
                break;
            }
        }
        let _ = now;
    }
}
