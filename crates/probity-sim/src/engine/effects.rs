//! What a part asks of the rest of the engine when it handles an event: the events it
//! schedules and the changes it makes that other parts must hear of, in the order it asks
//! them. The engine carries them out in that order, so a part never reaches into the others,
//! and the queue sees its schedules exactly where the part made them.
//!
//! A schedule goes straight into the queue while no change waits before it (the usual case:
//! a poll or a probe that changes nothing asks only for its next event); behind a waiting
//! change it waits its turn.

use super::queue::{Event, EventQueue, Order};
use crate::report::KillReason;
use crate::time::Millis;

/// One thing a part asks for, other than a schedule made while nothing waits.
#[derive(Debug, Clone, Copy)]
pub(super) enum Effect {
    /// Schedule `event` at `at`, after everything scheduled so far.
    Schedule { at: Millis, event: Event },
    /// Schedule `event` at `at` in the place `order`.
    ScheduleInOrder {
        at: Millis,
        order: Order,
        event: Event,
    },
    /// `pod` changed in a way its traffic and its record may show.
    PodChanged(usize),
    /// `pod`'s traffic may fare differently (its weight, say): re-evaluate it.
    Reweighed(usize),
    /// Every pod's traffic may fare differently.
    AllReweighed,
    /// The split of the traffic may have changed: settle the instant.
    Resplit,
    /// Fault `index` (of the scenario's) began in a pod, or is an operator's action on pods.
    PodFault(usize),
    /// What boots depend on may have changed (a dependency's condition): re-time them.
    BootsChanged,
    /// A check's state changed in `pod`: the pod's quiet probe workers tick again.
    Wake(usize),
    /// Poll `check` in `pod` now (probity's `wake`).
    Repoll { pod: usize, check: usize },
    /// The kubelet kills `pod`'s container (a liveness or startup probe failed).
    Kill { pod: usize, reason: KillReason },
    /// `pod`'s container is Started: the kubelet probes its readiness at once.
    Started(usize),
    /// `pod`'s readiness result changed: its Ready condition may follow.
    ReadinessResult(usize),
}

/// The queue, and the effects of the handler running, in order. The engine lends it to each
/// handler in turn.
#[derive(Debug, Default)]
pub(super) struct Effects {
    queue: EventQueue,
    waiting: Vec<Effect>,
}

impl Effects {
    /// Asks for `event` at `at`.
    pub(super) fn schedule(&mut self, at: Millis, event: Event) {
        if self.waiting.is_empty() {
            self.queue.schedule(at, event);
        } else {
            self.waiting.push(Effect::Schedule { at, event });
        }
    }

    /// Takes the place of the next schedule, for an event that may be scheduled later in
    /// that place (or never). Asked before any change of the handler's, so the place is the
    /// one the queue gives now.
    pub(super) fn reserve(&mut self) -> Order {
        debug_assert!(self.waiting.is_empty(), "a place reserved behind a change");
        self.queue.reserve()
    }

    /// Asks for `event` at `at` in the place `order` (from [`Effects::reserve`] or
    /// [`Effects::order_at`]).
    pub(super) fn schedule_in_order(&mut self, at: Millis, order: Order, event: Event) {
        if self.waiting.is_empty() {
            self.queue.schedule_in_order(at, order, event);
        } else {
            self.waiting
                .push(Effect::ScheduleInOrder { at, order, event });
        }
    }

    /// The place of an event scheduled at the very start of instant `time` (see
    /// [`EventQueue::order_at`]).
    pub(super) fn order_at(&self, time: Millis) -> Option<Order> {
        self.queue.order_at(time)
    }

    /// Tells that `pod` changed.
    pub(super) fn pod_changed(&mut self, pod: usize) {
        self.waiting.push(Effect::PodChanged(pod));
    }

    /// Tells that `pod`'s traffic may fare differently.
    pub(super) fn reweighed(&mut self, pod: usize) {
        self.waiting.push(Effect::Reweighed(pod));
    }

    /// Tells that every pod's traffic may fare differently.
    pub(super) fn all_reweighed(&mut self) {
        self.waiting.push(Effect::AllReweighed);
    }

    /// Tells that the split of the traffic may have changed.
    pub(super) fn resplit(&mut self) {
        self.waiting.push(Effect::Resplit);
    }

    /// Tells that fault `index`, on a pod or an operator's action, began.
    pub(super) fn pod_fault(&mut self, index: usize) {
        self.waiting.push(Effect::PodFault(index));
    }

    /// Tells that the boots in progress may progress at another rate now.
    pub(super) fn boots_changed(&mut self) {
        self.waiting.push(Effect::BootsChanged);
    }

    /// Asks for any other effect.
    pub(super) fn push(&mut self, effect: Effect) {
        self.waiting.push(effect);
    }

    /// The queue, for the engine to take its next event from.
    pub(super) fn queue(&mut self) -> &mut EventQueue {
        &mut self.queue
    }

    /// Whether no effect waits.
    pub(super) fn settled(&self) -> bool {
        self.waiting.is_empty()
    }

    /// Takes the waiting effects out in order, leaving `spare` (empty) to collect the
    /// effects of carrying them out.
    pub(super) fn take(&mut self, spare: Vec<Effect>) -> Vec<Effect> {
        std::mem::replace(&mut self.waiting, spare)
    }

    /// Puts a list back once carried out, returning the one that collected meanwhile
    /// (empty: its effects were carried out too).
    pub(super) fn restore(&mut self, list: Vec<Effect>) -> Vec<Effect> {
        std::mem::replace(&mut self.waiting, list)
    }
}
