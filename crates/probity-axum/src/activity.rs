//! What one connection's requests are doing: how many run, since when it is idle, whether it
//! speaks HTTP/2, whether a request body on it was cut. The connection's server
//! (`idle.rs`) reads it to time the connection out; a request body (`body.rs`) marks it when it
//! is cut for coming too slowly.

use crate::serve::admission::Listening;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// What one connection's requests are doing.
#[derive(Debug)]
pub(crate) struct Activity {
    /// When the connection was accepted; `idle_since` counts from it.
    pub(crate) base: Instant,
    /// Requests running (their responses not yet sent).
    pub(crate) running: AtomicU32,
    /// When the last request finished, in nanoseconds after `base` (0: none has).
    pub(crate) idle_since: AtomicU64,
    /// The connection speaks HTTP/2.
    pub(crate) http2: AtomicBool,
    /// A request body on it was cut for coming too slowly.
    pub(crate) body_timed_out: AtomicBool,
    /// Admitted through the probe reserve: serves probes only, one request.
    pub(crate) reserve: bool,
    /// A reserve connection's request has come: an HTTP/2 one is sent `GOAWAY` at once, so
    /// its room is free again the moment the answer is out.
    pub(crate) answered_once: tokio::sync::Notify,
    pub(crate) listening: Arc<Listening>,
}

impl Activity {
    pub(crate) fn new(listening: Arc<Listening>, reserve: bool) -> Arc<Activity> {
        Arc::new(Activity {
            base: Instant::now(),
            running: AtomicU32::new(0),
            idle_since: AtomicU64::new(0),
            http2: AtomicBool::new(false),
            body_timed_out: AtomicBool::new(false),
            reserve,
            answered_once: tokio::sync::Notify::new(),
            listening,
        })
    }

    /// A request began; `counted` when it counts as busy (an ordinary connection's request,
    /// not a long-lived stream).
    pub(crate) fn started(&self, counted: bool) {
        self.running.fetch_add(1, Ordering::AcqRel);
        if counted {
            self.listening.busy_changed(true);
        }
    }

    pub(crate) fn finished(&self, counted: bool) {
        let since = Instant::now().saturating_duration_since(self.base);
        self.idle_since.store(
            u64::try_from(since.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Release,
        );
        self.running.fetch_sub(1, Ordering::AcqRel);
        if counted {
            self.listening.busy_changed(false);
        }
    }

    pub(crate) fn body_timed_out(&self) {
        self.body_timed_out.store(true, Ordering::Release);
    }

    pub(crate) fn http2(&self) -> bool {
        self.http2.load(Ordering::Relaxed)
    }

    /// When the connection will have waited on its client for `timeout`, counting from the
    /// later of its last request and `not_before`; `None` while a request runs.
    pub(crate) fn deadline(
        &self,
        timeout: Duration,
        not_before: Option<Instant>,
    ) -> Option<Instant> {
        if self.running.load(Ordering::Acquire) > 0 {
            return None;
        }
        let idle_since = self.base + Duration::from_nanos(self.idle_since.load(Ordering::Acquire));
        let from = not_before.map_or(idle_since, |not_before| idle_since.max(not_before));
        Some(from + timeout)
    }
}
