//! Faults and operator actions on the timeline.
//!
//! A fault on a shared dependency (an outage, a slow or a flapping dependency) changes how
//! every pod's calls fare; a fault in one pod (its pool leaking dry, a deadlock, a stalled
//! runtime) changes that pod; an operator drains a pod or replaces the fleet. A flapping
//! dependency's boundaries are scheduled one at a time, as each arrives.
//!
//! The faults own which of them are in force, and so how each dependency behaves
//! ([`Faults::condition`]). What a fault does to a pod or to the fleet they hand to the
//! engine as [`Effects`].

use super::effects::Effects;
use super::queue::Event;
use crate::scenario::{FaultKind, OutageBehaviour, Scenario};
use crate::time::Millis;

/// How a dependency behaves at the moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Condition {
    /// Normal.
    Up,
    /// Down: calls hang or are refused.
    Down(OutageBehaviour),
    /// Every call takes this long.
    Slow(Millis),
    /// A call fails with this probability.
    Flicker(f64),
}

/// Which faults are in force, and when the incident began and ended.
#[derive(Debug)]
pub(super) struct Faults<'a> {
    scenario: &'a Scenario,
    active: Vec<bool>,
    /// The first fault's onset (operator actions are not faults).
    pub(super) first_onset: Option<Millis>,
    /// The latest end of a fault that started (its onset, for a fault that lasts).
    pub(super) reference_end: Option<Millis>,
    /// Each flapping fault's next boundary, counted from its start (even: down, odd: up).
    boundary: Vec<u64>,
    /// The faults on each dependency, by index.
    faults_on: Vec<Vec<usize>>,
    /// The faults in force on each dependency: while none is, a call needs no look at them.
    in_force_on: Vec<u32>,
}

impl<'a> Faults<'a> {
    /// The scenario's faults, none in force yet.
    pub(super) fn new(scenario: &'a Scenario) -> Self {
        let count = scenario.faults.len();
        let mut faults_on = vec![Vec::new(); scenario.dependencies.len()];
        for (index, fault) in scenario.faults.iter().enumerate() {
            if let Some(dependency) = fault.kind.shared_dependency() {
                faults_on[dependency].push(index);
            }
        }
        Faults {
            scenario,
            active: vec![false; count],
            first_onset: None,
            reference_end: None,
            boundary: vec![0; count],
            in_force_on: vec![0; faults_on.len()],
            faults_on,
        }
    }

    /// How `dependency` behaves now for `pod`, from the faults in force that reach it.
    pub(super) fn condition(&self, pod: usize, dependency: usize, now: Millis) -> Condition {
        if self.in_force_on[dependency] == 0 {
            return Condition::Up;
        }
        let mut condition = Condition::Up;
        for &index in &self.faults_on[dependency] {
            let fault = &self.scenario.faults[index];
            if !self.active[index] || !fault.reaches(pod) {
                continue;
            }
            match fault.kind {
                FaultKind::DependencyOutage { behaviour, .. } => return Condition::Down(behaviour),
                FaultKind::SlowDependency { latency, .. } => condition = Condition::Slow(latency),
                FaultKind::FlappingDependency {
                    period,
                    down,
                    flicker,
                    ..
                } => {
                    let into = (now - fault.at) % period;
                    if into < down {
                        return Condition::Down(self.scenario.dependencies[dependency].outage);
                    }
                    if flicker > 0.0 {
                        condition = Condition::Flicker(flicker);
                    }
                }
                _ => {}
            }
        }
        condition
    }

    /// Whether `dependency` is down for `pod` now.
    pub(super) fn down(&self, pod: usize, dependency: usize, now: Millis) -> bool {
        matches!(self.condition(pod, dependency, now), Condition::Down(_))
    }

    /// Puts every fault on the timeline.
    pub(super) fn schedule(&self, effects: &mut Effects) {
        for (index, fault) in self.scenario.faults.iter().enumerate() {
            let fault_index = index as u32;
            effects.schedule(fault.at, Event::FaultStart { fault: fault_index });
            if let Some(until) = fault.until {
                effects.schedule(until, Event::FaultEnd { fault: fault_index });
            }
        }
    }

    /// A fault begins at `now`: a shared dependency's fault changes every pod, one in a pod
    /// changes that pod ([`Effects::pod_fault`]), an operator's fix replaces the fleet.
    pub(super) fn start(&mut self, index: usize, now: Millis, effects: &mut Effects) {
        let fault = &self.scenario.faults[index];
        if !self.active[index]
            && let Some(dependency) = fault.kind.shared_dependency()
        {
            self.in_force_on[dependency] += 1;
        }
        self.active[index] = true;
        if !fault.kind.is_operator_action() {
            if self.first_onset.is_none() {
                self.first_onset = Some(now);
                // From the onset on, any pod failing in rotation counts as affected.
                effects.all_reweighed();
            }
            let end = fault.until.unwrap_or(fault.at);
            self.reference_end = Some(self.reference_end.map_or(end, |e| e.max(end)));
        }
        match fault.kind {
            FaultKind::DependencyOutage { .. } | FaultKind::SlowDependency { .. } => {
                effects.all_reweighed();
            }
            FaultKind::FlappingDependency { .. } => {
                effects.all_reweighed();
                self.schedule_boundary(index, effects);
            }
            FaultKind::PoolExhausted { .. }
            | FaultKind::Deadlock { .. }
            | FaultKind::RuntimeStall { .. }
            | FaultKind::CrashOnStart { .. }
            | FaultKind::ManualDrain { .. }
            | FaultKind::ManualFix { .. } => effects.pod_fault(index),
        }
        effects.boots_changed();
    }

    /// A fault ends.
    pub(super) fn end(&mut self, index: usize, effects: &mut Effects) {
        if self.active[index]
            && let Some(dependency) = self.scenario.faults[index].kind.shared_dependency()
        {
            let in_force = &mut self.in_force_on[dependency];
            *in_force = in_force.saturating_sub(1);
        }
        self.active[index] = false;
        effects.all_reweighed();
        effects.boots_changed();
    }

    /// A flapping dependency went down or came back.
    pub(super) fn flap_boundary(&mut self, index: usize, effects: &mut Effects) {
        effects.all_reweighed();
        effects.boots_changed();
        self.schedule_boundary(index, effects);
    }

    /// The next boundary of a flapping fault: down at the start of each cycle, up `down`
    /// later (at the fault's end at the latest).
    fn schedule_boundary(&mut self, index: usize, effects: &mut Effects) {
        let fault = &self.scenario.faults[index];
        let FaultKind::FlappingDependency { period, down, .. } = fault.kind else {
            return;
        };
        let end = fault.until.unwrap_or(self.scenario.duration);
        let next = self.boundary[index];
        let cycle = fault.at.saturating_add((next / 2).saturating_mul(period));
        if cycle >= end || cycle >= self.scenario.duration {
            return;
        }
        let boundary = if next.is_multiple_of(2) {
            cycle
        } else {
            cycle.saturating_add(down).min(end)
        };
        self.boundary[index] = next + 1;
        effects.schedule(
            boundary,
            Event::FlapBoundary {
                fault: index as u32,
            },
        );
    }
}
