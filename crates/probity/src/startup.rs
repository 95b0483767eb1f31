//! Startup: named boot steps. Internal ones gate `/startupz` and `/readyz`; the ones that wait
//! on an external system gate `/readyz` only.
//!
//! A slow boot is not a hang. The database-in-liveness crash loop came from a 35 s cold start
//! read as a hang by a probe with a 20 s grace; in the model-load incident a 90 s model load
//! crash-looped until a startup probe was added. Declare the boot's steps when building the
//! registry; `/startupz` fails naming the pending internal ones until all are complete, and
//! `/readyz` fails with every pending step.
//!
//! A step that **waits on a dependency** — connecting to the database, migrating it — is
//! declared with the dependency's name. It gates readiness, never startup: the kubelet's
//! startup probe passes once the internal boot is done, so a database outage during a rollout
//! (longer than the startup probe's budget) never gets the new pods killed and crash-looping —
//! the restart storm, where twelve replicas "all failed their startup, and got killed again".
//! The pod simply stays out of rotation, saying why, until the database answers.

use crate::store::{Observation, Store};
use std::sync::atomic::Ordering;

/// Marks step `index` complete; when it was the last one, polls every check that is not
/// healthy again at once (their first polls ran as the pollers started, often before the boot
/// had connected to the dependency, and readiness should not wait out a whole interval after a
/// boot that has already succeeded).
pub(crate) fn complete(store: &Store, index: usize, pollers_started: bool) {
    let applied = store.observe(Observation::StepCompleted { step: index });
    tracing::info!(
        target: "probity::startup",
        step = %store.steps[index].name,
        "startup step complete"
    );
    // Before the pollers start, their first polls are still to come: nothing to hurry.
    if pollers_started {
        for check in applied.unhealthy_at_start {
            let cell = &store.cells[check];
            cell.boot_repoll.store(true, Ordering::Release);
            cell.wake.notify_one();
        }
    }
}

/// Records why step `index` is still pending (redacted before it is stored).
pub(crate) fn waiting(store: &Store, index: usize, note: &str) {
    store.observe(Observation::StepWaiting {
        step: index,
        note: crate::redact::redact(note).into_owned(),
    });
}
