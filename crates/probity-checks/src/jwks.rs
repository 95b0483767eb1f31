//! JWKS: the signing keys a service verifies tokens with are fresh enough to trust.
//!
//! The identity-provider outage: when the provider's key endpoint is down, a service can keep
//! verifying tokens with the keys it cached — for a while. Failing at once would turn a short
//! provider blip into a full outage (fail closed too early); never failing would accept tokens
//! signed with keys the provider has since rotated out or revoked (fail open forever). The
//! answer is a bounded window: **fail open while the cached keys are younger than their
//! allowed age, fail closed once they are older.**
//!
//! The application's refresher owns the fetching; it tells a [`KeyCache`] how each refresh
//! went, and the [`JwksCheck`] judges the age of the keys the service is actually using.
//!
//! ```
//! use probity::{CheckSpec, Tier};
//! use probity_checks::jwks::{JwksCheck, KeyCache};
//! use std::time::Duration;
//!
//! let keys = KeyCache::new();
//! let spec = CheckSpec::new("jwks", Tier::Hard, JwksCheck::new(keys.clone(), Duration::from_secs(3600)));
//!
//! // In the refresher task, after each fetch of the key set:
//! keys.refreshed(3);                              // 3 keys fetched
//! keys.refresh_failed("connection refused");      // keys kept, age keeps growing
//! # let _ = spec;
//! ```
//!
//! Errors read `no signing keys fetched yet`, `cached signing keys are 65m old, past their
//! allowed 60m; last refresh failed 20s ago: connection refused`, `the key set is empty`.

use probity::redact::redact;
use probity::{Check, CheckError, CheckFuture, CheckResult, Detail, Timing};
use probity_contract::duration::format as format_duration;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::time::Instant;

/// Interval and timeout for a JWKS check: it reads memory only.
///
/// Interval 5 s, timeout 1 s.
pub const DEFAULT_TIMING: Timing = Timing {
    interval: Duration::from_secs(5),
    timeout: Duration::from_secs(1),
};

/// What the application's key refresher reports: when keys were last fetched, how many, and
/// the last failure. Cheap to clone; every clone shares the same state.
#[derive(Clone, Default)]
pub struct KeyCache {
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Default, Clone)]
struct State {
    refreshed: Option<(Instant, usize)>,
    failed: Option<(Instant, String)>,
}

impl KeyCache {
    /// A cache that has fetched nothing yet (the check fails until [`refreshed`](Self::refreshed)).
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a successful fetch of `keys` signing keys, now.
    pub fn refreshed(&self, keys: usize) {
        let mut state = self.lock();
        state.refreshed = Some((Instant::now(), keys));
        state.failed = None;
    }

    /// Records a failed fetch, now. The keys fetched before stay in use, and keep ageing.
    pub fn refresh_failed(&self, error: impl fmt::Display) {
        self.lock().failed = Some((Instant::now(), redact(&error.to_string()).into_owned()));
    }

    /// How old the keys in use are, if any were fetched.
    pub fn age(&self) -> Option<Duration> {
        self.lock().refreshed.map(|(at, _)| at.elapsed())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is plain data written in one statement; a panic elsewhere cannot leave it
        // half-written, so a poisoned lock is still good to read.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for KeyCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock().clone();
        f.debug_struct("KeyCache")
            .field("age", &state.refreshed.map(|(at, _)| at.elapsed()))
            .field("keys", &state.refreshed.map(|(_, keys)| keys))
            .field("last_failure", &state.failed.map(|(_, error)| error))
            .finish()
    }
}

/// Fails closed once the cached signing keys are older than `max_age`; passes (fails open)
/// inside that window even while refreshes fail, saying so.
///
/// Measurements: `key_age` (s), `keys`.
#[derive(Debug, Clone)]
pub struct JwksCheck {
    cache: KeyCache,
    max_age: Duration,
}

impl JwksCheck {
    /// A check of `cache`, trusting keys up to `max_age` old (e.g. the provider's documented
    /// rotation overlap, or the JWKS response's `max-age`).
    pub fn new(cache: KeyCache, max_age: Duration) -> Self {
        Self { cache, max_age }
    }

    fn judge(&self) -> CheckResult {
        let state = self.cache.lock().clone();
        let now = Instant::now();
        let failure = state
            .failed
            .as_ref()
            .map(|(at, error)| format!("last refresh failed {}: {error}", ago(now - *at)));
        let Some((fetched, keys)) = state.refreshed else {
            let mut message = "no signing keys fetched yet".to_owned();
            if let Some(failure) = failure {
                message = format!("{message}; {failure}");
            }
            return Err(CheckError::new(message));
        };
        let age = now - fetched;
        let figures = |error: CheckError| {
            error
                .measurement("key_age", age.as_secs_f64().floor(), Some("s"))
                .measurement("keys", keys as f64, None)
        };
        if keys == 0 {
            return Err(figures(CheckError::new("the key set is empty")));
        }
        if age > self.max_age {
            let mut message = format!(
                "cached signing keys are {} old, past their allowed {}",
                format_duration(round(age)),
                format_duration(self.max_age)
            );
            if let Some(failure) = failure {
                message = format!("{message}; {failure}");
            }
            return Err(figures(CheckError::new(message)));
        }
        let message = match failure {
            Some(failure) => format!(
                "serving {keys} cached keys {} old; {failure}; fails closed in {}",
                format_duration(round(age)),
                format_duration(round(self.max_age - age))
            ),
            None => format!("{keys} keys, fetched {}", ago(age)),
        };
        Ok(Detail::new()
            .message(message)
            .measurement("key_age", age.as_secs_f64().floor(), Some("s"))
            .measurement("keys", keys as f64, None))
    }
}

impl Check for JwksCheck {
    fn check(&self) -> CheckFuture<'_> {
        let result = self.judge();
        Box::pin(async move { result })
    }

    fn dependency(&self) -> Option<&str> {
        Some("jwks")
    }

    fn default_timing(&self) -> Option<Timing> {
        Some(DEFAULT_TIMING)
    }
}

/// `just now`, `3s ago`, `11m ago`.
fn ago(duration: Duration) -> String {
    if duration < Duration::from_secs(1) {
        return "just now".to_owned();
    }
    format!("{} ago", format_duration(round(duration)))
}

/// Whole seconds: `65m` reads better than `3900.012s`.
fn round(duration: Duration) -> Duration {
    Duration::from_secs(duration.as_secs())
}
