//! A check's specification: its tier, cadence, timeout, thresholds and staleness bound.

use crate::check::{Check, Timing};
use probity_contract::Tier;
use std::sync::Arc;
use std::time::Duration;

/// Poll interval used when neither the spec nor the check sets one (the database poller of the
/// deep-check incident's fix).
pub(crate) const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);
/// Poll timeout used when neither the spec nor the check sets one.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);
/// Consecutive successes needed to turn healthy again ("healthy_threshold=3").
pub(crate) const DEFAULT_RISE: u32 = 3;
/// Consecutive failures needed to turn unhealthy, for a check that does not suggest its own
/// ([`Check::default_fall`]): fall fast ("unhealthy_threshold=1"). The built-in network checks
/// suggest 2.
pub(crate) const DEFAULT_FALL: u32 = 1;
/// Consecutive real failures reported by application code that fail a check at once.
pub(crate) const DEFAULT_PASSIVE_FAILURES: u32 = 5;

/// A readiness check with its policy: tier, cadence, timeout, thresholds.
///
/// ```
/// use probity::{CheckSpec, Detail, Tier};
/// use std::time::Duration;
///
/// let spec = CheckSpec::new("db", Tier::Hard, || async { Ok(Detail::new()) })
///     .interval(Duration::from_secs(1))
///     .timeout(Duration::from_millis(500))
///     .rise(2);
/// # let _ = spec;
/// ```
///
/// Everything is validated when the registry is built ([`crate::HealthBuilder::build`]); a
/// misconfiguration is a [`crate::BuildError`] naming the check and the field, never a pile-up
/// of overlapping polls at run time.
#[derive(Clone)]
pub struct CheckSpec {
    pub(crate) name: String,
    pub(crate) tier: Tier,
    pub(crate) check: Arc<dyn Check>,
    pub(crate) interval: Option<Duration>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) jitter: Option<Duration>,
    pub(crate) rise: u32,
    pub(crate) fall: Option<u32>,
    pub(crate) staleness: Option<Duration>,
    pub(crate) fail_open_for: Option<Duration>,
    pub(crate) boot_requires_rise: bool,
    pub(crate) passive_failures: u32,
    pub(crate) dependency: Option<String>,
    pub(crate) fallback: Option<String>,
}

impl std::fmt::Debug for CheckSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckSpec")
            .field("name", &self.name)
            .field("tier", &self.tier)
            .field("interval", &self.interval)
            .field("timeout", &self.timeout)
            .field("jitter", &self.jitter)
            .field("rise", &self.rise)
            .field("fall", &self.fall)
            .field("staleness", &self.staleness)
            .field("fail_open_for", &self.fail_open_for)
            .field("boot_requires_rise", &self.boot_requires_rise)
            .field("passive_failures", &self.passive_failures)
            .field("dependency", &self.dependency)
            .field("fallback", &self.fallback)
            .finish_non_exhaustive()
    }
}

impl CheckSpec {
    /// A check named `name` (lowercase letters, digits, `_`, `-`, `.`; at most 63 characters).
    pub fn new(name: impl Into<String>, tier: Tier, check: impl Check) -> Self {
        Self::from_arc(name, tier, Arc::new(check))
    }

    /// Like [`CheckSpec::new`], for a check that is already shared.
    pub fn from_arc(name: impl Into<String>, tier: Tier, check: Arc<dyn Check>) -> Self {
        Self {
            name: name.into(),
            tier,
            check,
            interval: None,
            timeout: None,
            jitter: None,
            rise: DEFAULT_RISE,
            fall: None,
            staleness: None,
            fail_open_for: None,
            boot_requires_rise: false,
            passive_failures: DEFAULT_PASSIVE_FAILURES,
            dependency: None,
            fallback: None,
        }
    }

    /// Time from the start of one poll to the start of the next. Default: the check's own
    /// suggestion, else 5 s.
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = Some(interval);
        self
    }

    /// Longest a poll may take; it is then cut and counts as a failure (`timed out after 2s`).
    /// Must be shorter than the interval. Default: the check's own suggestion, else 2 s (half
    /// the interval when that is 2 s or less).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Each wait between polls moves by a random amount up to this, so a fleet's pollers do
    /// not hit a shared dependency in lockstep. Default: a tenth of the interval.
    pub fn jitter(mut self, jitter: Duration) -> Self {
        self.jitter = Some(jitter);
        self
    }

    /// Consecutive successes needed to turn healthy again (default 3).
    pub fn rise(mut self, rise: u32) -> Self {
        self.rise = rise;
        self
    }

    /// Consecutive failures needed to turn unhealthy. Default: the check's own suggestion
    /// ([`Check::default_fall`]: 2 for the built-in network checks), else 1.
    pub fn fall(mut self, fall: u32) -> Self {
        self.fall = Some(fall);
        self
    }

    /// A result older than this counts as a failure (default 3 × interval). Must be at least
    /// the interval.
    pub fn staleness(mut self, staleness: Duration) -> Self {
        self.staleness = Some(staleness);
        self
    }

    /// For a hard check: once it turns unhealthy, report `warn` (fail open) for this long, then
    /// `fail` (fail closed). The identity provider's case: keep validating tokens with cached
    /// keys for a bounded time.
    pub fn fail_open_for(mut self, window: Duration) -> Self {
        self.fail_open_for = Some(window);
        self
    }

    /// Require the full `rise` count at boot too, instead of turning healthy on the first
    /// success. Costs `(rise − 1) × interval` of boot time (10 s with the defaults) in exchange
    /// for evidence that a dependency which was just flapping has settled.
    pub fn boot_requires_rise(mut self, required: bool) -> Self {
        self.boot_requires_rise = required;
        self
    }

    /// Consecutive failures reported through a [`crate::Reporter`] that fail the check at
    /// once and trigger an immediate re-poll (default 5).
    pub fn passive_failures(mut self, threshold: u32) -> Self {
        self.passive_failures = threshold;
        self
    }

    /// Names what the check talks to, overriding the check's own [`Check::dependency`].
    pub fn dependency(mut self, dependency: impl Into<String>) -> Self {
        self.dependency = Some(dependency.into());
        self
    }

    /// For a hard check: the check that serves instead while this one fails — another
    /// dependency (a cache that holds what the database would answer) or a capability the
    /// application declares as a check of its own (`cached-reads`, usually [`Tier::Info`], so
    /// it never changes readiness by itself).
    ///
    /// While this check fails and the fallback serves, readiness is `warn` — 200, in rotation,
    /// degraded — instead of `fail`: a dependency every instance shares is down, and draining
    /// them all would leave nothing to route to. When the fallback fails too, readiness fails.
    /// A fault that is this instance's own still drains: a failure of class
    /// [`FailureKind::Exhausted`](crate::FailureKind::Exhausted) (its pool gave no connection
    /// while the database answers), no result yet, or a result gone stale.
    ///
    /// The fallback must name another declared check, which names no fallback itself: an
    /// unknown name, the check itself, a chain or a cycle is a [`crate::BuildError`].
    ///
    /// ```
    /// use probity::{CheckSpec, Detail, Health, Tier};
    ///
    /// # fn main() -> Result<(), probity::BuildError> {
    /// let health = Health::builder()
    ///     .check(CheckSpec::new("db", Tier::Hard, || async { Ok(Detail::new()) }).fallback("cache"))
    ///     .check(CheckSpec::new("cache", Tier::Soft, || async { Ok(Detail::new()) }))
    ///     .build()?;
    /// # let _ = health;
    /// # Ok(())
    /// # }
    /// ```
    pub fn fallback(mut self, check: impl Into<String>) -> Self {
        self.fallback = Some(check.into());
        self
    }

    /// The check's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The check's tier.
    pub fn tier(&self) -> Tier {
        self.tier
    }

    pub(crate) fn resolved_timing(&self) -> Timing {
        let suggested = self.check.default_timing();
        let interval = self
            .interval
            .or(suggested.map(|t| t.interval))
            .unwrap_or(DEFAULT_INTERVAL);
        let timeout = self.timeout.or(suggested.map(|t| t.timeout)).unwrap_or(
            if interval > DEFAULT_TIMEOUT {
                DEFAULT_TIMEOUT
            } else {
                interval / 2
            },
        );
        Timing { interval, timeout }
    }

    pub(crate) fn resolved_fall(&self) -> u32 {
        self.fall
            .or_else(|| self.check.default_fall())
            .unwrap_or(DEFAULT_FALL)
    }

    pub(crate) fn resolved_dependency(&self) -> Option<String> {
        self.dependency
            .clone()
            .or_else(|| self.check.dependency().map(str::to_owned))
    }
}
