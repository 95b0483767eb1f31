//! What happened to each instance, and when: the evidence every row of the report is read from.

use probity_contract::probe::ProbeKind;
use std::sync::{Arc, Mutex};
use tokio::time::Instant;

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventKind {
    /// One probe failed (below its threshold or not), with the reason.
    ProbeFailed {
        /// Which probe.
        probe: ProbeKind,
        /// `HTTP 503`, `timed out`, `connection refused`, `exit status 1`….
        reason: String,
    },
    /// The startup probe passed: the container is started.
    Started,
    /// The kubelet's view of the container's readiness changed (running, started, readiness
    /// passing, not terminating).
    Ready(bool),
    /// The balancer took the instance in (`true`) or out of rotation.
    Rotation(bool),
    /// The prober killed the container: the probe reached its failure threshold.
    Killed {
        /// Liveness or startup.
        probe: ProbeKind,
    },
    /// The app's process exited without anyone asking it to.
    Exited {
        /// How (`exit status 1`, `signal 9`).
        status: String,
    },
    /// A new container in the same pod after a kill or an exit: what `restartCount` counts.
    Restarted,
    /// The drill replaced the pod (a rollout's new pod in the same slot).
    Replaced,
    /// A process started.
    Spawned,
}

/// One event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// When.
    pub at: Instant,
    /// Which instance (0-based).
    pub instance: usize,
    /// What.
    pub kind: EventKind,
}

/// The shared log, bounded: a drill that loops (a crash loop probed every second) cannot grow
/// it without end.
#[derive(Debug, Clone, Default)]
pub struct Events(Arc<Mutex<Vec<Event>>>);

/// The most events kept; beyond it the oldest probe failures are the first dropped.
const MAX_EVENTS: usize = 200_000;

impl Events {
    /// Records an event now.
    pub fn record(&self, instance: usize, kind: EventKind) {
        let mut events = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if events.len() >= MAX_EVENTS {
            events.drain(..MAX_EVENTS / 10);
        }
        events.push(Event {
            at: Instant::now(),
            instance,
            kind,
        });
    }

    /// Every event in `[from, to]`.
    pub fn between(&self, from: Instant, to: Instant) -> Vec<Event> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|event| event.at >= from && event.at <= to)
            .cloned()
            .collect()
    }
}
