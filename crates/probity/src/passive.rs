//! Passive reports: real request outcomes that fail a check before its next poll.
//!
//! A poller looks every few seconds; real requests look all the time. When application code
//! (or a pool wrapper) sees a dependency fail, it reports it. After `passive_failures`
//! consecutive real failures (default 5) the check is marked failing at once — an exhausted
//! pool drains the instance in milliseconds, not at the next poll — and its poller re-polls
//! immediately, once: further failures keep the check failing (each run of `passive_failures`
//! restarts its `rise` count) without polling a dependency in trouble any faster. A reported
//! success only resets the run: **recovery comes only from polls**,
//! through the usual `rise` count, so a trickle of lucky requests cannot put a broken instance
//! back in rotation.

use crate::hysteresis::Transition;
use crate::registry::{Health, Inner};
use crate::snapshot::LastResult;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::time::Instant;

/// The check named in a call was never registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown check `{name}` (registered: {known})")]
pub struct UnknownCheck {
    /// The name asked for.
    pub name: String,
    /// The registered checks, comma-separated.
    pub known: String,
}

/// A cheap handle for reporting one check's real outcomes from request code.
#[derive(Clone)]
pub struct Reporter {
    inner: Arc<Inner>,
    index: usize,
}

impl fmt::Debug for Reporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reporter")
            .field("check", &self.inner.entries[self.index].spec.name)
            .finish()
    }
}

impl Reporter {
    /// A real request using the dependency succeeded: the failure run resets.
    pub fn success(&self) {
        self.inner.entries[self.index]
            .passive_run
            .store(0, Ordering::Relaxed);
    }

    /// A real request using the dependency failed with `error`.
    pub fn failure(&self, error: impl fmt::Display) {
        let entry = &self.inner.entries[self.index];
        let threshold = entry.spec.passive_failures;
        let run = entry.passive_run.fetch_add(1, Ordering::AcqRel) + 1;
        if !run.is_multiple_of(threshold) {
            return;
        }
        let message = format!("{run} consecutive request failures reported: {error}");
        let last = LastResult {
            ok: false,
            at: Instant::now(),
            duration: std::time::Duration::ZERO,
            message: Some(crate::redact::redact(&message).into_owned()),
            measurements: Vec::new(),
            warning: None,
        };
        let transition = self.inner.record(self.index, false, true, last);
        // Re-poll once, when the reports turn the check unhealthy. A check already failing is
        // polled on its cadence: waking it at every further run of failures would poll a
        // dependency in trouble at the request rate divided by the threshold.
        if transition == Some(Transition::Fell) {
            entry.wake.notify_one();
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

impl Health {
    /// A reporter for the check named `check`.
    pub fn reporter(&self, check: &str) -> Result<Reporter, UnknownCheck> {
        let index = self
            .inner
            .entries
            .iter()
            .position(|entry| entry.spec.name == check)
            .ok_or_else(|| UnknownCheck {
                name: check.to_owned(),
                known: self.check_names().collect::<Vec<_>>().join(", "),
            })?;
        Ok(Reporter {
            inner: self.inner.clone(),
            index,
        })
    }

    /// Polls `check` now instead of at its next tick (after a boot step connected to the
    /// dependency, say), without disturbing its cadence afterwards. A poll in flight finishes
    /// first: polls never overlap.
    pub fn poll_now(&self, check: &str) -> Result<(), UnknownCheck> {
        let reporter = self.reporter(check)?;
        self.inner.entries[reporter.index].wake.notify_one();
        Ok(())
    }

    /// Reports one real outcome for `check`. Prefer [`Health::reporter`] on hot paths: it
    /// looks the check up once.
    pub fn report<E: fmt::Display>(
        &self,
        check: &str,
        outcome: Result<(), E>,
    ) -> Result<(), UnknownCheck> {
        self.reporter(check)?.report(outcome);
        Ok(())
    }
}
