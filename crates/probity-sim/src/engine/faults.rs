//! Faults and operator actions on the timeline.
//!
//! A fault on a shared dependency (an outage, a slow or a flapping dependency) changes how
//! every pod's calls fare; a fault in one pod (its pool leaking dry, a deadlock, a stalled
//! runtime) changes that pod; an operator drains a pod or replaces the fleet. A flapping
//! dependency's boundaries are scheduled one at a time, as each arrives.

use super::Sim;
use super::queue::Event;
use crate::scenario::FaultKind;
use crate::time::Millis;
use probity_contract::probe::ProbeKind;

/// Which faults are in force, and when the incident began and ended.
#[derive(Debug)]
pub(super) struct Faults {
    pub(super) active: Vec<bool>,
    /// The first fault's onset (operator actions are not faults).
    pub(super) first_onset: Option<Millis>,
    /// The latest end of a fault that started (its onset, for a fault that lasts).
    pub(super) reference_end: Option<Millis>,
    /// Each flapping fault's next boundary, counted from its start (even: down, odd: up).
    boundary: Vec<u64>,
}

impl Faults {
    /// No fault in force yet.
    pub(super) fn new(count: usize) -> Self {
        Faults {
            active: vec![false; count],
            first_onset: None,
            reference_end: None,
            boundary: vec![0; count],
        }
    }
}

impl Sim<'_> {
    /// Puts every fault on the timeline.
    pub(super) fn schedule_faults(&mut self) {
        for (index, fault) in self.scenario.faults.iter().enumerate() {
            let fault_index = index as u32;
            self.queue
                .schedule(fault.at, Event::FaultStart { fault: fault_index });
            if let Some(until) = fault.until {
                self.queue
                    .schedule(until, Event::FaultEnd { fault: fault_index });
            }
        }
    }

    /// A fault begins.
    pub(super) fn fault_start(&mut self, index: usize) {
        let fault = &self.scenario.faults[index];
        if !self.faults.active[index]
            && let Some(dependency) = fault.kind.shared_dependency()
        {
            self.dependencies.in_force_on[dependency] += 1;
        }
        self.faults.active[index] = true;
        if !fault.kind.is_operator_action() {
            if self.faults.first_onset.is_none() {
                self.faults.first_onset = Some(self.now);
                // From the onset on, any pod failing in rotation counts as affected.
                self.mark_all();
            }
            let end = fault.until.unwrap_or(fault.at);
            self.faults.reference_end = Some(self.faults.reference_end.map_or(end, |e| e.max(end)));
        }
        match fault.kind.clone() {
            FaultKind::DependencyOutage { .. } | FaultKind::SlowDependency { .. } => {
                self.mark_all();
            }
            FaultKind::FlappingDependency { .. } => {
                self.mark_all();
                self.schedule_boundary(index);
            }
            FaultKind::PoolExhausted {
                instance,
                dependency,
            } => {
                if let Some(process) = self.pods[instance].process.as_mut() {
                    process.pool_exhausted |= 1 << dependency;
                }
                self.refresh_poll_keys(instance);
                self.mark(instance);
            }
            FaultKind::Deadlock {
                instance,
                ignores_sigterm,
            } => {
                if let Some(process) = self.pods[instance].process.as_mut() {
                    process.deadlocked_at = Some(self.now);
                    process.ignores_sigterm = ignores_sigterm;
                }
                self.mark(instance);
            }
            FaultKind::RuntimeStall { instance } => {
                if let Some(process) = self.pods[instance].process.as_mut() {
                    process.stalled = true;
                }
                self.mark(instance);
            }
            FaultKind::CrashOnStart { instance, after } => {
                self.pods[instance].crashes_after = Some(after);
                self.schedule_crash(instance);
            }
            FaultKind::ManualDrain { instance } => {
                self.pods[instance].manual_drained = true;
                self.pod_changed(instance);
            }
            FaultKind::ManualFix { remove_probes } => {
                // The skipped ticks so far count with the probes they had.
                for pod in 0..self.pods.len() {
                    for kind in ProbeKind::ALL {
                        self.wake_worker(pod, kind, false);
                    }
                }
                for kind in remove_probes {
                    self.probers.remove(kind);
                }
                for pod in 0..self.pods.len() {
                    self.replace_pod(pod);
                }
            }
        }
        self.refresh_boots();
    }

    /// A fault ends.
    pub(super) fn fault_end(&mut self, index: usize) {
        if self.faults.active[index]
            && let Some(dependency) = self.scenario.faults[index].kind.shared_dependency()
        {
            let in_force = &mut self.dependencies.in_force_on[dependency];
            *in_force = in_force.saturating_sub(1);
        }
        self.faults.active[index] = false;
        self.mark_all();
        self.refresh_boots();
    }

    /// A flapping dependency went down or came back.
    pub(super) fn flap_boundary(&mut self, index: usize) {
        self.mark_all();
        self.refresh_boots();
        self.schedule_boundary(index);
    }

    /// The next boundary of a flapping fault: down at the start of each cycle, up `down`
    /// later (at the fault's end at the latest).
    fn schedule_boundary(&mut self, index: usize) {
        let fault = &self.scenario.faults[index];
        let FaultKind::FlappingDependency { period, down, .. } = fault.kind else {
            return;
        };
        let end = fault.until.unwrap_or(self.scenario.duration);
        let next = self.faults.boundary[index];
        let cycle = fault.at.saturating_add((next / 2).saturating_mul(period));
        if cycle >= end || cycle >= self.scenario.duration {
            return;
        }
        let boundary = if next.is_multiple_of(2) {
            cycle
        } else {
            cycle.saturating_add(down).min(end)
        };
        self.faults.boundary[index] = next + 1;
        self.queue.schedule(
            boundary,
            Event::FlapBoundary {
                fault: index as u32,
            },
        );
    }
}
