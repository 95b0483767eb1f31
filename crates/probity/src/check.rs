//! What a readiness check is: an async function that says whether one dependency can serve.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// A boxed future returned by [`Check::check`].
pub type CheckFuture<'a> = Pin<Box<dyn Future<Output = CheckResult> + Send + 'a>>;

/// What one poll of a check produced.
pub type CheckResult = Result<Detail, CheckError>;

/// A readiness check: one dependency, polled in the background.
///
/// Checks run on their own poller task, never inside a probe request. A check should do the
/// cheapest thing that proves the dependency can serve a request *for this instance*: for a
/// connection pool, that means looking at the pool's capacity, not only sending `SELECT 1`.
///
/// Any `Fn() -> impl Future<Output = CheckResult>` is a check:
///
/// ```
/// use probity::{CheckError, Detail};
///
/// let check = || async {
///     let free_connections = 3;
///     if free_connections == 0 {
///         return Err(CheckError::new("no free connection in the pool"));
///     }
///     Ok(Detail::new().measurement("available", free_connections as f64, None))
/// };
/// # let _ = check;
/// ```
pub trait Check: Send + Sync + 'static {
    /// Runs one poll. The poller cuts it at the check's timeout and counts a panic as a failure.
    fn check(&self) -> CheckFuture<'_>;

    /// What this check talks to (`postgres`, `redis`, `http`…), for the contract and for
    /// `application/health+json`'s `componentType`. `None` for checks of in-process state.
    fn dependency(&self) -> Option<&str> {
        None
    }

    /// The interval and timeout this kind of check works well with, used when the
    /// [`crate::CheckSpec`] does not set its own.
    fn default_timing(&self) -> Option<Timing> {
        None
    }

    /// How many failed polls in a row this kind of check needs before it counts as unhealthy,
    /// used when the [`crate::CheckSpec`] does not set its own [`fall`](crate::CheckSpec::fall)
    /// (otherwise [`crate::policy::DEFAULT_FALL`]).
    ///
    /// A check whose latency depends on load — anything that crosses a network or waits in a
    /// pool's queue — should say 2: one slow sample on a busy machine is not evidence of an
    /// outage, two in a row are (see `docs/concepts.md`, "Hysteresis that fits a busy system").
    fn default_fall(&self) -> Option<u32> {
        None
    }
}

tokio::task_local! {
    static DEADLINE: tokio::time::Instant;
}

/// When the poller will cut the poll running on this task, or `None` outside a poll (a check
/// called directly, in a test).
///
/// A check that waits on something it can bound — a connection pool's queue — uses it to give
/// up in time to report *what* it was waiting for, instead of being cut with a bare
/// `timed out after 400ms`.
pub fn deadline() -> Option<tokio::time::Instant> {
    DEADLINE.try_with(|deadline| *deadline).ok()
}

/// Runs `future` with [`deadline`] answering `deadline`.
pub(crate) async fn with_deadline<F: Future>(
    deadline: tokio::time::Instant,
    future: F,
) -> F::Output {
    DEADLINE.scope(deadline, future).await
}

impl<F, Fut> Check for F
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = CheckResult> + Send + 'static,
{
    fn check(&self) -> CheckFuture<'_> {
        Box::pin(self())
    }
}

/// A poll interval and timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// Time from the start of one poll to the start of the next.
    pub interval: Duration,
    /// Longest a poll may take before it counts as a failure.
    pub timeout: Duration,
}

/// A figure a check observed, such as a pool's free connections.
///
/// Measurements appear in the JSON outputs (`application/health+json` lists each as
/// `check:measurement` with `observedValue` and `observedUnit`) and in error messages.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// The measurement's name, e.g. `connections`, `utilization`, `available`, `waiting`.
    pub name: String,
    /// The observed value.
    pub value: f64,
    /// The unit, e.g. `percent`, `ms`, `bytes`; `None` for counts.
    pub unit: Option<String>,
}

/// What a successful poll reports beyond "ok".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Detail {
    /// A short human-readable note, e.g. `3 of 5 connections free`.
    pub message: Option<String>,
    /// Figures the check observed.
    pub measurements: Vec<Measurement>,
    /// Why the dependency serves but deserves attention, e.g. `busy: 5 of 5 in use, 12
    /// waiting`. A passing poll with a warning makes the check `warn` (still 200, still in
    /// rotation, whatever its tier): busy is not broken.
    pub warning: Option<String>,
}

impl Detail {
    /// A success with nothing to add.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a note.
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// Adds a measurement.
    pub fn measurement(mut self, name: impl Into<String>, value: f64, unit: Option<&str>) -> Self {
        self.measurements.push(Measurement {
            name: name.into(),
            value,
            unit: unit.map(str::to_owned),
        });
        self
    }

    /// Marks the success as a warning: the dependency serves, but is near a limit.
    pub fn warning(mut self, warning: impl Into<String>) -> Self {
        self.warning = Some(warning.into());
        self
    }
}

/// Why a poll failed.
///
/// The message is redacted of credentials before it is stored (see [`crate::redact`]), so a
/// client error that echoes a connection string cannot leak a password through a probe.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckError {
    message: String,
    measurements: Vec<Measurement>,
}

impl CheckError {
    /// A failure with a message saying what is wrong, e.g. `connection refused`.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            measurements: Vec::new(),
        }
    }

    /// A failure wrapping any error, keeping its source chain in the message.
    pub fn from_error(error: &(dyn std::error::Error + 'static)) -> Self {
        let mut message = error.to_string();
        let mut source = error.source();
        while let Some(cause) = source {
            let text = cause.to_string();
            if !message.contains(&text) {
                message.push_str(": ");
                message.push_str(&text);
            }
            source = cause.source();
        }
        Self::new(message)
    }

    /// Adds a measurement (a failing capacity check names the figures that made it fail).
    pub fn measurement(mut self, name: impl Into<String>, value: f64, unit: Option<&str>) -> Self {
        self.measurements.push(Measurement {
            name: name.into(),
            value,
            unit: unit.map(str::to_owned),
        });
        self
    }

    /// The message, as the check produced it (not yet redacted).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The measurements attached to the failure.
    pub fn measurements(&self) -> &[Measurement] {
        &self.measurements
    }

    pub(crate) fn into_parts(self) -> (String, Vec<Measurement>) {
        (self.message, self.measurements)
    }
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::redact::redact(&self.message))
    }
}

impl std::error::Error for CheckError {}

/// Formats a duration the way error messages and text bodies show it: `2s`, `500ms`, `1.5s`.
pub fn format_duration(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis == 0 && !duration.is_zero() {
        return format!("{}µs", duration.as_micros());
    }
    if millis < 1000 {
        return format!("{millis}ms");
    }
    if millis.is_multiple_of(1000) {
        let secs = millis / 1000;
        if secs >= 120 && secs.is_multiple_of(60) {
            return format!("{}m", secs / 60);
        }
        return format!("{secs}s");
    }
    let secs = duration.as_secs_f64();
    let text = format!("{secs:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_durations_for_people() {
        assert_eq!(format_duration(Duration::from_secs(2)), "2s");
        assert_eq!(format_duration(Duration::from_millis(500)), "500ms");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(format_duration(Duration::from_millis(1250)), "1.25s");
        assert_eq!(format_duration(Duration::from_secs(300)), "5m");
        assert_eq!(format_duration(Duration::from_micros(20)), "20µs");
        assert_eq!(format_duration(Duration::ZERO), "0ms");
    }

    #[test]
    fn error_display_is_redacted() {
        let error = CheckError::new("dial postgres://u:hunter2@h/db: refused");
        assert_eq!(error.to_string(), "dial postgres://u:***@h/db: refused");
        assert!(error.message().contains("hunter2"));
    }

    #[test]
    fn error_keeps_source_chain() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let error = CheckError::from_error(&io);
        assert_eq!(error.message(), "refused");
    }
}
