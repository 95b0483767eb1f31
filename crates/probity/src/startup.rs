//! Startup: named boot steps that gate `/startupz` and `/readyz`.
//!
//! A slow boot is not a hang. Seed 000's crash loop came from a 35 s cold start read as a hang
//! by a probe with a 20 s grace; seed 003's 90 s model load crash-looped until a startup probe
//! was added. Declare the boot's steps when building the registry (migrations, cache warm-up,
//! connecting to the database); `/startupz` fails naming the pending ones until all are
//! complete, and `/readyz` fails with them. Point the Kubernetes `startupProbe` at `/startupz`
//! (or at `/livez`) with a budget (`failureThreshold × periodSeconds`) above the worst boot.
//!
//! While a step waits on something — a database still coming up — report why with
//! [`Health::step_progress`]; the note appears in `/startupz` and `/readyz`.

use crate::registry::Health;
use std::sync::atomic::Ordering;

/// The step named in a call was never declared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown startup step `{name}` (declared: {known})")]
pub struct UnknownStep {
    /// The name asked for.
    pub name: String,
    /// The declared steps, comma-separated.
    pub known: String,
}

impl Health {
    fn step_index(&self, name: &str) -> Result<usize, UnknownStep> {
        let master = self.inner.master.lock();
        master
            .steps
            .iter()
            .position(|step| &*step.name == name)
            .ok_or_else(|| UnknownStep {
                name: name.to_owned(),
                known: master
                    .steps
                    .iter()
                    .map(|step| step.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    /// Marks a boot step complete. When the last one completes, `/startupz` passes and
    /// readiness is decided by the checks alone.
    ///
    /// At that moment every check that is not healthy is polled again at once. A check's
    /// first poll runs when the pollers start, often before the boot has connected to the
    /// dependency or migrated it; without the re-poll, readiness would wait out a whole
    /// interval (20 s for a check polled every 20 s) after a boot that has already succeeded.
    pub fn complete_step(&self, name: &str) -> Result<(), UnknownStep> {
        let index = self.step_index(name)?;
        let unhealthy = self.inner.update(|master| {
            let was_started = master.steps.iter().all(|step| step.complete);
            let step = &mut master.steps[index];
            step.complete = true;
            step.note = None;
            let now_started = master.steps.iter().all(|step| step.complete);
            if was_started || !now_started {
                return Vec::new();
            }
            master
                .checks
                .iter()
                .enumerate()
                .filter(|(_, state)| !state.healthy)
                .map(|(index, _)| index)
                .collect()
        });
        tracing::info!(target: "probity::startup", step = name, "startup step complete");
        // Before `start`, the pollers' first polls are still to come: nothing to hurry.
        if self.inner.started.load(Ordering::Acquire) {
            for index in unhealthy {
                let entry = &self.inner.entries[index];
                entry.boot_repoll.store(true, Ordering::Release);
                entry.wake.notify_one();
            }
        }
        Ok(())
    }

    /// Records why a step is still pending (e.g. `database unreachable: connection refused;
    /// retry 3 in 1.6s`). The note is redacted of credentials and shown in `/startupz`.
    pub fn step_progress(&self, name: &str, note: impl Into<String>) -> Result<(), UnknownStep> {
        let index = self.step_index(name)?;
        let note = crate::redact::redact(&note.into()).into_owned();
        self.inner.update(|master| {
            let step = &mut master.steps[index];
            if !step.complete {
                step.note = Some(note);
            }
        });
        Ok(())
    }

    /// Whether every declared step has completed.
    pub fn is_started(&self) -> bool {
        self.snapshot().is_started()
    }

    /// The steps still pending, in declaration order.
    pub fn pending_steps(&self) -> Vec<String> {
        self.snapshot()
            .steps()
            .iter()
            .filter(|step| !step.is_complete())
            .map(|step| step.name().to_owned())
            .collect()
    }
}
