//! Pollers: one task per check, on its own jittered cadence, never overlapping itself.
//!
//! A poller polls once as soon as it starts, then every `interval` (measured start to start,
//! moved by up to ± `jitter`). Each poll runs under the check's timeout: a dependency that
//! answers in 30 s (the slow-dependency incident) costs one failed poll every interval, not a
//! growing pile of stuck probes. Because the poller awaits each poll before scheduling the next,
//! at most one poll of a check is ever in flight; a timed-out poll is dropped, not left running.
//!
//! A panic inside a check is caught and recorded as a failure (`panicked: …`); the poller keeps
//! going.

use crate::check::{Check, CheckError, CheckResult, FailureKind, human, with_deadline};
use crate::snapshot::LastResult;
use crate::store::{Observation, Store};
use futures_util::FutureExt;
use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::time::Instant;

pub(crate) fn spawn(store: &Arc<Store>, index: usize) -> tokio::task::JoinHandle<()> {
    let weak = Arc::downgrade(store);
    let cell = &store.cells[index];
    let check = cell.check.clone();
    let wake = cell.wake.clone();
    let boot_repoll = cell.boot_repoll.clone();
    let (interval, timeout, jitter) = (cell.interval, cell.timeout, cell.jitter);
    tokio::spawn(async move {
        let mut rng = fastrand::Rng::new();
        loop {
            let started = Instant::now();
            let result = poll_once(&*check, timeout).await;
            let finished = Instant::now();
            let Some(store) = weak.upgrade() else {
                return;
            };
            store.observe(Observation::Polled {
                check: index,
                result: last_result(result, finished, finished - started),
            });
            // Only a weak reference while waiting: dropping the last `Health` stops the poller.
            drop(store);
            let next = started + jittered(interval, jitter, &mut rng);
            loop {
                tokio::select! {
                    () = tokio::time::sleep_until(next) => break,
                    () = wake.notified() => {
                        // The re-poll asked for when startup completed is moot if the poll
                        // that was in flight then has made the check healthy since.
                        let moot = boot_repoll.swap(false, Ordering::AcqRel)
                            && weak.upgrade().is_some_and(|store| store.is_healthy(index));
                        if !moot {
                            break;
                        }
                    }
                }
            }
        }
    })
}

/// `interval` moved by a uniformly random amount in `[-jitter, +jitter]`.
fn jittered(interval: Duration, jitter: Duration, rng: &mut fastrand::Rng) -> Duration {
    if jitter.is_zero() {
        return interval;
    }
    let span = jitter.as_nanos() as u64;
    let offset = rng.u64(0..=span * 2);
    (interval + Duration::from_nanos(offset)).saturating_sub(jitter)
}

/// Runs one poll under `timeout`, turning a timeout or a panic into a failure — exactly what a
/// poller records, with the deadline a check can read from [`crate::poll_deadline`]. Useful to
/// test a check on its own.
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use probity::poll_once;
/// use std::time::Duration;
///
/// let hangs = || async {
///     std::future::pending::<()>().await;
///     Ok(probity::Detail::new())
/// };
/// let error = poll_once(&hangs, Duration::from_secs(2)).await.unwrap_err();
/// assert_eq!(error.to_string(), "timed out after 2s");
/// # }
/// ```
pub async fn poll_once(check: &dyn Check, timeout: Duration) -> CheckResult {
    let future = match std::panic::catch_unwind(AssertUnwindSafe(|| check.check())) {
        Ok(future) => future,
        Err(panic) => return Err(panicked(&*panic)),
    };
    let deadline = Instant::now() + timeout;
    let guarded = with_deadline(deadline, AssertUnwindSafe(future).catch_unwind());
    match tokio::time::timeout_at(deadline, guarded).await {
        Err(_elapsed) => Err(
            CheckError::new(format!("timed out after {}", human(timeout)))
                .kind(FailureKind::Timeout),
        ),
        Ok(Err(panic)) => Err(panicked(&*panic)),
        Ok(Ok(result)) => result,
    }
}

fn panicked(panic: &(dyn Any + Send)) -> CheckError {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic payload".to_owned());
    CheckError::new(format!("panicked: {message}")).kind(FailureKind::Error)
}

/// A poll's outcome as the store keeps it: redacted, with its timing.
fn last_result(result: CheckResult, at: Instant, duration: Duration) -> LastResult {
    let redact = |text: String| crate::redact::redact(&text).into_owned();
    match result {
        Ok(detail) => LastResult {
            ok: true,
            at,
            duration,
            message: detail.message.map(redact),
            kind: None,
            measurements: detail.measurements,
            warning: detail.warning.map(redact),
        },
        Err(error) => {
            let (message, kind, measurements) = error.into_parts();
            LastResult {
                ok: false,
                at,
                duration,
                message: Some(redact(message)),
                kind: Some(kind),
                measurements,
                warning: None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stays_within_bounds() {
        let mut rng = fastrand::Rng::with_seed(7);
        let interval = Duration::from_secs(5);
        let jitter = Duration::from_millis(500);
        let mut low = interval;
        let mut high = interval;
        for _ in 0..10_000 {
            let wait = jittered(interval, jitter, &mut rng);
            assert!(wait >= interval - jitter && wait <= interval + jitter);
            low = low.min(wait);
            high = high.max(wait);
        }
        assert!(
            low < Duration::from_millis(4600),
            "jitter never shortens: {low:?}"
        );
        assert!(
            high > Duration::from_millis(5400),
            "jitter never lengthens: {high:?}"
        );
        assert_eq!(jittered(interval, Duration::ZERO, &mut rng), interval);
    }
}
