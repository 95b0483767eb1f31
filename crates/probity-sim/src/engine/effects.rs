//! What a part asks of the rest of the engine when it handles an event: the events it
//! schedules and the pods whose traffic it changed, in the order it asks them. The engine carries them out
//! in that order, so a part never reaches into the others, and the queue sees its schedules
//! exactly where the part made them.

use super::queue::Event;
use crate::time::Millis;

/// One thing a part asks for.
#[derive(Debug, Clone, Copy)]
pub(super) enum Effect {
    /// Schedule `event` at `at`, after everything scheduled so far.
    Schedule { at: Millis, event: Event },
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
}

/// The effects of one handler, in order. The engine keeps one buffer and lends it to each
/// handler in turn.
#[derive(Debug, Default)]
pub(super) struct Effects(Vec<Effect>);

impl Effects {
    /// Asks for `event` at `at`.
    pub(super) fn schedule(&mut self, at: Millis, event: Event) {
        self.0.push(Effect::Schedule { at, event });
    }

    /// Tells that `pod` changed.
    pub(super) fn pod_changed(&mut self, pod: usize) {
        self.0.push(Effect::PodChanged(pod));
    }

    /// Tells that `pod`'s traffic may fare differently.
    pub(super) fn reweighed(&mut self, pod: usize) {
        self.0.push(Effect::Reweighed(pod));
    }

    /// Tells that every pod's traffic may fare differently.
    pub(super) fn all_reweighed(&mut self) {
        self.0.push(Effect::AllReweighed);
    }

    /// Tells that the split of the traffic may have changed.
    pub(super) fn resplit(&mut self) {
        self.0.push(Effect::Resplit);
    }

    /// Tells that fault `index`, on a pod or an operator's action, began.
    pub(super) fn pod_fault(&mut self, index: usize) {
        self.0.push(Effect::PodFault(index));
    }

    /// Tells that the boots in progress may progress at another rate now.
    pub(super) fn boots_changed(&mut self) {
        self.0.push(Effect::BootsChanged);
    }

    /// Takes the effects out in order, leaving the buffer empty for the next handler.
    pub(super) fn drain(&mut self) -> std::vec::Drain<'_, Effect> {
        self.0.drain(..)
    }
}
