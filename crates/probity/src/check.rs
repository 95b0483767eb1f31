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
    /// (otherwise 1).
    ///
    /// A check whose latency depends on load — anything that crosses a network or waits in a
    /// pool's queue — should say 2: one slow sample on a busy machine is not evidence of an
    /// outage, two in a row are (see `docs/concepts.md`, "Hysteresis that fits a busy system").
    fn default_fall(&self) -> Option<u32> {
        None
    }

    /// Whether the check calls another service's health endpoint — a transitive health check,
    /// which lets one service's trouble fail every service that checks it (the restart storm's
    /// lesson: "never check a transitive dependency in a health check"). The contract says so,
    /// and `probity lint` reports it.
    fn calls_health_endpoint(&self) -> bool {
        false
    }

    /// Whether the service's own request outcomes outrank a failure of this check: while its
    /// requests succeed, the failure degrades to `warn` (busy, not broken). A check that applies
    /// that rule itself says so here, and the contract states it (`outranked_by_requests`);
    /// `probity agent`'s self-checks of an app whose request metrics it reads do.
    fn outranked_by_requests(&self) -> bool {
        false
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

/// What kind of failure a check met, in one word: what a public listener shows instead of the
/// message (which may name hosts, databases or driver internals).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// The dependency did not answer in time (or the poll was cut at its timeout).
    Timeout,
    /// The connection was refused.
    Refused,
    /// The dependency could not be reached: unresolvable, unreachable, reset, closed.
    Unreachable,
    /// A resource ran out: no pooled connection within the budget, a leak, a full disk.
    Exhausted,
    /// The dependency rejected us: credentials, permissions, certificates.
    Rejected,
    /// The dependency answered that it cannot serve (an error status, a closed pool).
    Unavailable,
    /// Anything else.
    Error,
}

impl FailureKind {
    /// The word shown for it: `timeout`, `refused`, `unreachable`, `exhausted`, `rejected`,
    /// `unavailable`, `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Timeout => "timeout",
            FailureKind::Refused => "refused",
            FailureKind::Unreachable => "unreachable",
            FailureKind::Exhausted => "exhausted",
            FailureKind::Rejected => "rejected",
            FailureKind::Unavailable => "unavailable",
            FailureKind::Error => "error",
        }
    }

    /// The kind a message describes, for checks that do not say: the words drivers and this
    /// crate's checks use (`timed out`, `connection refused`, `no connection within`…).
    pub fn of_message(message: &str) -> FailureKind {
        let text = message.to_ascii_lowercase();
        let has = |words: &[&str]| words.iter().any(|word| text.contains(word));
        if has(&[
            "no connection within",
            "pooled connection",
            "no connection available",
            "leak bound",
            "no connection handed out",
            "exhausted",
            "free space",
            "inodes",
            "too many connections",
        ]) {
            FailureKind::Exhausted
        } else if has(&["timed out", "timeout", "deadline"]) {
            FailureKind::Timeout
        } else if has(&["refused"]) {
            FailureKind::Refused
        } else if has(&[
            "password",
            "authentication",
            "access denied",
            "permission denied",
            "not authorized",
            "unauthorized",
            "forbidden",
            "certificate",
            "wrongpass",
            "noauth",
        ]) {
            FailureKind::Rejected
        } else if has(&[
            "resolve",
            "unreachable",
            "reset",
            "closed",
            "broken pipe",
            "not connected",
            "aborted",
            "no route",
        ]) {
            FailureKind::Unreachable
        } else if has(&[
            "unavailable",
            "status",
            "not ready",
            "shutting down",
            "blocked",
        ]) {
            FailureKind::Unavailable
        } else {
            FailureKind::Error
        }
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a poll failed.
///
/// The message is redacted of credentials before it is stored, so a client error that echoes a
/// connection string cannot leak a password through a probe. On a public listener only the
/// failure's [kind](FailureKind) is shown; the message is for the admin listener and the logs.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckError {
    message: String,
    kind: Option<FailureKind>,
    measurements: Vec<Measurement>,
}

impl CheckError {
    /// A failure with a message saying what is wrong, e.g. `connection refused`.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            kind: None,
            measurements: Vec::new(),
        }
    }

    /// A failure wrapping any error, keeping its source chain in the message.
    pub fn from_error(error: &(dyn std::error::Error + 'static)) -> Self {
        Self::new(probity_contract::text::error_chain(error))
    }

    /// Says what kind of failure this is (otherwise it is read from the message).
    pub fn kind(mut self, kind: FailureKind) -> Self {
        self.kind = Some(kind);
        self
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

    /// The kind of failure: as the check said, else as the message reads.
    pub fn failure_kind(&self) -> FailureKind {
        self.kind
            .unwrap_or_else(|| FailureKind::of_message(&self.message))
    }

    /// The measurements attached to the failure.
    pub fn measurements(&self) -> &[Measurement] {
        &self.measurements
    }

    pub(crate) fn into_parts(self) -> (String, FailureKind, Vec<Measurement>) {
        let kind = self.failure_kind();
        (self.message, kind, self.measurements)
    }
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::redact::redact(&self.message))
    }
}

impl std::error::Error for CheckError {}

/// A duration for people, to the millisecond: `2s`, `500ms`, `1.5s`, `5m`.
pub(crate) fn human(duration: Duration) -> String {
    probity_contract::duration::format(Duration::from_millis(duration.as_millis() as u64))
}
