//! Passive reports: real request outcomes that fail a check before its next poll.
//!
//! A poller looks every few seconds; real requests look all the time. When application code
//! (or a pool wrapper) sees a dependency fail, it reports it. After `passive_failures`
//! consecutive real failures (default 5) the check is marked failing at once — an exhausted
//! pool drains the instance in milliseconds, not at the next poll — and its poller re-polls
//! immediately, once: further failures keep the check failing (each run of `passive_failures`
//! restarts its `rise` count) without polling a dependency in trouble any faster. Requests
//! cannot tell whose fault a starved pool is — a database every instance lost strands the pool
//! as a leak does — so a report never marks a failure as this instance's own: where the check
//! names a fallback, the fallback serves until the re-poll confirms a local fault, which then
//! drains (within one poll timeout). A reported
//! success only resets the run: **recovery comes only from polls**, through the usual `rise`
//! count, so a trickle of lucky requests cannot put a broken instance back in rotation.
//!
//! Report what says the dependency cannot be used (refused, reset, credentials rejected, no
//! connection coming back), never a slow success, and never a timeout that only says the
//! instance is busy: draining a busy instance moves its load onto the rest of the fleet.

use crate::store::{Observation, Store};
use probity_contract::hysteresis::Transition;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::time::Instant;

/// A cheap handle for reporting one check's real outcomes from request code.
#[derive(Clone)]
pub struct Reporter {
    store: Arc<Store>,
    index: usize,
}

impl fmt::Debug for Reporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reporter")
            .field("check", &self.store.cells[self.index].name)
            .finish()
    }
}

impl Reporter {
    pub(crate) fn new(store: Arc<Store>, index: usize) -> Self {
        Self { store, index }
    }

    /// A real request using the dependency succeeded: the failure run resets.
    pub fn success(&self) {
        self.store.cells[self.index]
            .passive_run
            .store(0, Ordering::Relaxed);
    }

    /// A real request using the dependency failed with `error`.
    pub fn failure(&self, error: impl fmt::Display) {
        let cell = &self.store.cells[self.index];
        let threshold = cell.passive_failures;
        let run = cell.passive_run.fetch_add(1, Ordering::AcqRel) + 1;
        if !run.is_multiple_of(threshold) {
            return;
        }
        let message = format!("{run} consecutive request failures reported: {error}");
        let applied = self.store.observe(Observation::Reported {
            check: self.index,
            message: crate::redact::redact(&message).into_owned(),
            at: Instant::now(),
        });
        // Re-poll once, when the reports turn the check unhealthy. A check already failing is
        // polled on its cadence: waking it at every further run of failures would poll a
        // dependency in trouble at the request rate divided by the threshold.
        if applied.transition == Some(Transition::Fell) {
            cell.wake.notify_one();
        }
    }

    /// Reports an outcome: `Ok` is [`Reporter::success`], `Err` is [`Reporter::failure`].
    pub fn report<E: fmt::Display>(&self, outcome: Result<(), E>) {
        match outcome {
            Ok(()) => self.success(),
            Err(error) => self.failure(error),
        }
    }
}
