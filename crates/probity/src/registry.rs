//! The registry: every check, step and condition a service declares, validated once.

use crate::check::Check;
use crate::contract::LivenessKind;
use crate::hysteresis::{Hysteresis, Transition};
use crate::liveness::Watchdog;
use crate::policy::{CheckSpec, Tier};
use crate::snapshot::{
    CheckState, LIVENESS_ENTRY, LastResult, LivenessCondition, SHUTDOWN_ENTRY, STARTUP_ENTRY,
    Snapshot, StepState,
};
use arc_swap::ArcSwap;
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32};
use std::time::Duration;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

/// Longest a name may be (the DNS label limit, so names fit gRPC service names and labels).
pub const MAX_NAME_LEN: usize = 63;

/// Names the registry reserves for its own gates and gRPC services.
const RESERVED_NAMES: &[&str] = &[
    SHUTDOWN_ENTRY,
    STARTUP_ENTRY,
    LIVENESS_ENTRY,
    "readiness",
    "app_state",
];

/// Time the server waits after the shutdown trigger before it stops accepting, unless set.
pub const DEFAULT_DRAIN_DELAY: Duration = Duration::from_secs(5);
/// Time in-flight requests may run after the listener closes, unless set.
pub const DEFAULT_IN_FLIGHT_DEADLINE: Duration = Duration::from_secs(10);

/// Why a registry could not be built. Every variant names the check (or step) and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// A name is empty, too long, has characters outside `[a-z0-9_.-]`, or is reserved.
    #[error("invalid name `{name}`: {reason}")]
    InvalidName {
        /// The offending name.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Two checks, steps or conditions share a name.
    #[error(
        "duplicate name `{name}`: names must be unique across checks, startup steps and liveness conditions"
    )]
    DuplicateName {
        /// The repeated name.
        name: String,
    },
    /// A duration field is zero where it must be positive.
    #[error("check `{check}`: {field} must be greater than zero")]
    Zero {
        /// The check.
        check: String,
        /// The field (`interval` or `timeout`).
        field: &'static str,
    },
    /// The timeout is not shorter than the interval, so polls would pile up.
    #[error(
        "check `{check}`: timeout ({timeout:?}) must be shorter than interval ({interval:?}), or polls pile up behind a slow dependency"
    )]
    TimeoutNotBelowInterval {
        /// The check.
        check: String,
        /// The configured timeout.
        timeout: Duration,
        /// The configured interval.
        interval: Duration,
    },
    /// `rise` or `fall` is 0.
    #[error("check `{check}`: {field} must be at least 1")]
    ZeroThreshold {
        /// The check.
        check: String,
        /// The field (`rise`, `fall` or `passive_failures`).
        field: &'static str,
    },
    /// The staleness bound is below the interval, so every result would go stale between polls.
    #[error(
        "check `{check}`: staleness ({staleness:?}) must be at least the interval ({interval:?})"
    )]
    StalenessBelowInterval {
        /// The check.
        check: String,
        /// The configured bound.
        staleness: Duration,
        /// The interval.
        interval: Duration,
    },
    /// Jitter must be below the interval.
    #[error(
        "check `{check}`: jitter ({jitter:?}) must be shorter than the interval ({interval:?})"
    )]
    JitterNotBelowInterval {
        /// The check.
        check: String,
        /// The configured jitter.
        jitter: Duration,
        /// The interval.
        interval: Duration,
    },
    /// `fail_open_for` set on a check that is not hard (soft checks always fail open).
    #[error(
        "check `{check}`: fail_open_for applies to hard checks only (a {tier} check never fails readiness)"
    )]
    FailOpenOnNonHard {
        /// The check.
        check: String,
        /// Its tier.
        tier: Tier,
    },
}

impl BuildError {
    /// The check, step or condition the error is about.
    pub fn check(&self) -> &str {
        match self {
            BuildError::InvalidName { name, .. } | BuildError::DuplicateName { name } => name,
            BuildError::Zero { check, .. }
            | BuildError::TimeoutNotBelowInterval { check, .. }
            | BuildError::ZeroThreshold { check, .. }
            | BuildError::StalenessBelowInterval { check, .. }
            | BuildError::JitterNotBelowInterval { check, .. }
            | BuildError::FailOpenOnNonHard { check, .. } => check,
        }
    }

    /// The field the error is about.
    pub fn field(&self) -> &'static str {
        match self {
            BuildError::InvalidName { .. } | BuildError::DuplicateName { .. } => "name",
            BuildError::Zero { field, .. } | BuildError::ZeroThreshold { field, .. } => field,
            BuildError::TimeoutNotBelowInterval { .. } => "timeout",
            BuildError::StalenessBelowInterval { .. } => "staleness",
            BuildError::JitterNotBelowInterval { .. } => "jitter",
            BuildError::FailOpenOnNonHard { .. } => "fail_open_for",
        }
    }
}

/// Why the pollers could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// `start` was called outside a tokio runtime.
    #[error("no tokio runtime: call start() from within a tokio runtime")]
    NoRuntime,
    /// The watchdog thread could not be spawned.
    #[error("could not spawn the watchdog thread: {0}")]
    Thread(#[from] std::io::Error),
}

pub(crate) fn validate_name(name: &str) -> Result<(), BuildError> {
    let invalid = |reason| BuildError::InvalidName {
        name: name.to_owned(),
        reason,
    };
    if name.is_empty() {
        return Err(invalid("names must not be empty"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(invalid("names must be at most 63 characters"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-' | '.'))
    {
        return Err(invalid(
            "names may hold only lowercase letters, digits, '_', '-' and '.'",
        ));
    }
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err(invalid("names must start with a letter or digit"));
    }
    if RESERVED_NAMES.contains(&name) {
        return Err(invalid("the name is reserved for a built-in gate"));
    }
    Ok(())
}

/// Builds a [`Health`] registry.
///
/// ```
/// use probity::{CheckSpec, Detail, Health, Tier};
/// use std::time::Duration;
///
/// let health = Health::builder()
///     .service("checkout")
///     .check(
///         CheckSpec::new("db", Tier::Hard, || async { Ok(Detail::new()) })
///             .interval(Duration::from_secs(1))
///             .timeout(Duration::from_millis(500)),
///     )
///     .startup_step("migrations")
///     .runtime_watchdog(Duration::from_secs(5))
///     .drain_delay(Duration::from_secs(15))
///     .build()?;
/// # let _ = health;
/// # Ok::<(), probity::BuildError>(())
/// ```
#[derive(Debug, Default)]
pub struct HealthBuilder {
    service: Option<String>,
    checks: Vec<CheckSpec>,
    steps: Vec<String>,
    watchdog: Option<Duration>,
    deadlock_interval: Option<Duration>,
    drain_delay: Option<Duration>,
    in_flight_deadline: Option<Duration>,
    expected_boot: Option<Duration>,
}

impl HealthBuilder {
    /// Names the service (shown in the contract and the JSON outputs).
    pub fn service(mut self, name: impl Into<String>) -> Self {
        self.service = Some(name.into());
        self
    }

    /// Adds a readiness check. There is no way to add a check to liveness; see
    /// [`crate::liveness`] for why.
    pub fn check(mut self, spec: CheckSpec) -> Self {
        self.checks.push(spec);
        self
    }

    /// Declares a named boot step (migrations, warm-up, config load). `/startupz` and `/readyz`
    /// fail, naming the pending steps, until every step is completed with
    /// [`Health::complete_step`].
    pub fn startup_step(mut self, name: impl Into<String>) -> Self {
        self.steps.push(name.into());
        self
    }

    /// Declares how long a boot may take at worst, for the contract (the linter compares it
    /// with the startup probe's budget).
    pub fn expected_boot(mut self, duration: Duration) -> Self {
        self.expected_boot = Some(duration);
        self
    }

    /// Watches the async runtime for stalls: liveness fails when the heartbeat task has not run
    /// for `threshold` (seed 004 uses 5 s; [`crate::liveness::DEFAULT_STALL_THRESHOLD`]).
    pub fn runtime_watchdog(mut self, threshold: Duration) -> Self {
        self.watchdog = Some(threshold);
        self
    }

    /// Runs `parking_lot`'s deadlock detection every `every` from the watchdog thread; a cycle
    /// fails liveness for good. Needs the `deadlock` cargo feature, which also makes every
    /// `parking_lot` lock in the process record what it holds (about 2.5 ns per lock).
    #[cfg(feature = "deadlock")]
    pub fn deadlock_detection(mut self, every: Duration) -> Self {
        self.deadlock_interval = Some(every);
        self
    }

    /// How long readiness fails before the server stops accepting, after the shutdown trigger.
    /// See [`crate::shutdown::drain_delay_for`] to derive it from the probe settings.
    pub fn drain_delay(mut self, delay: Duration) -> Self {
        self.drain_delay = Some(delay);
        self
    }

    /// How long in-flight requests may run after the listener closes.
    pub fn in_flight_deadline(mut self, deadline: Duration) -> Self {
        self.in_flight_deadline = Some(deadline);
        self
    }

    /// Validates everything and builds the registry. Nothing runs until [`Health::start`].
    pub fn build(self) -> Result<Health, BuildError> {
        let mut all_names: Vec<String> = Vec::new();
        for name in self
            .checks
            .iter()
            .map(|spec| spec.name.as_str())
            .chain(self.steps.iter().map(String::as_str))
        {
            validate_name(name)?;
            if all_names.iter().any(|known| known == name) {
                return Err(BuildError::DuplicateName {
                    name: name.to_owned(),
                });
            }
            all_names.push(name.to_owned());
        }
        for spec in &self.checks {
            validate_spec(spec)?;
        }

        let mut liveness = Vec::new();
        if self.watchdog.is_some() {
            liveness.push(LivenessCondition {
                name: "runtime_stall".into(),
                kind: LivenessKind::RuntimeStall,
            });
        }
        if self.deadlock_interval.is_some() {
            liveness.push(LivenessCondition {
                name: "deadlock".into(),
                kind: LivenessKind::Deadlock,
            });
        }
        liveness.push(LivenessCondition {
            name: "app_state".into(),
            kind: LivenessKind::AppState,
        });

        let mut entries = Vec::with_capacity(self.checks.len());
        let mut states = Vec::with_capacity(self.checks.len());
        let mut machines = Vec::with_capacity(self.checks.len());
        for spec in self.checks {
            let timing = spec.resolved_timing();
            let staleness = spec.staleness.unwrap_or(timing.interval * 3);
            let dependency = spec.resolved_dependency();
            states.push(Arc::new(CheckState {
                name: spec.name.as_str().into(),
                tier: spec.tier,
                dependency: dependency.as_deref().map(Into::into),
                healthy: false,
                last: None,
                consecutive_successes: 0,
                consecutive_failures: 0,
                last_transition: None,
                last_success: None,
                unhealthy_since: None,
                staleness,
                fail_open_for: spec.fail_open_for,
                rise: spec.rise,
            }));
            machines.push(Hysteresis::new(
                spec.rise,
                spec.resolved_fall(),
                spec.boot_requires_rise,
            ));
            entries.push(CheckEntry {
                jitter: spec.jitter.unwrap_or(timing.interval / 10),
                interval: timing.interval,
                timeout: timing.timeout,
                staleness,
                dependency,
                check: spec.check.clone(),
                wake: Arc::new(Notify::new()),
                boot_repoll: Arc::new(AtomicBool::new(false)),
                passive_run: AtomicU32::new(0),
                spec,
            });
        }
        let steps: Vec<StepState> = self
            .steps
            .iter()
            .map(|name| StepState {
                name: name.as_str().into(),
                complete: false,
                note: None,
            })
            .collect();

        let watchdog = self
            .watchdog
            .map(|threshold| Arc::new(Watchdog::new(threshold)));
        let master = Master {
            checks: states,
            machines,
            steps,
            broken: None,
            deadlock: None,
            shutting_down: None,
            generation: 0,
        };
        let service: Option<Arc<str>> = self.service.as_deref().map(Into::into);
        let liveness: Arc<[LivenessCondition]> = liveness.into();
        let first = Arc::new(master.snapshot(&service, &liveness, &watchdog));
        let (notify, _) = watch::channel(first.clone());
        let (shutdown_tx, _) = watch::channel(None);
        Ok(Health {
            inner: Arc::new(Inner {
                service,
                entries,
                liveness,
                watchdog,
                deadlock_interval: self.deadlock_interval,
                drain_delay: self.drain_delay.unwrap_or(DEFAULT_DRAIN_DELAY),
                in_flight_deadline: self
                    .in_flight_deadline
                    .unwrap_or(DEFAULT_IN_FLIGHT_DEADLINE),
                expected_boot: self.expected_boot,
                master: Mutex::new(master),
                current: ArcSwap::new(first),
                notify,
                shutdown: shutdown_tx,
                tasks: Mutex::new(Vec::new()),
                started: AtomicBool::new(false),
                stop_watch: AtomicBool::new(false),
            }),
        })
    }
}

fn validate_spec(spec: &CheckSpec) -> Result<(), BuildError> {
    let check = || spec.name.clone();
    let timing = spec.resolved_timing();
    if timing.interval.is_zero() {
        return Err(BuildError::Zero {
            check: check(),
            field: "interval",
        });
    }
    if timing.timeout.is_zero() {
        return Err(BuildError::Zero {
            check: check(),
            field: "timeout",
        });
    }
    if timing.timeout >= timing.interval {
        return Err(BuildError::TimeoutNotBelowInterval {
            check: check(),
            timeout: timing.timeout,
            interval: timing.interval,
        });
    }
    if spec.rise == 0 {
        return Err(BuildError::ZeroThreshold {
            check: check(),
            field: "rise",
        });
    }
    if spec.resolved_fall() == 0 {
        return Err(BuildError::ZeroThreshold {
            check: check(),
            field: "fall",
        });
    }
    if spec.passive_failures == 0 {
        return Err(BuildError::ZeroThreshold {
            check: check(),
            field: "passive_failures",
        });
    }
    if let Some(staleness) = spec.staleness
        && staleness < timing.interval
    {
        return Err(BuildError::StalenessBelowInterval {
            check: check(),
            staleness,
            interval: timing.interval,
        });
    }
    if let Some(jitter) = spec.jitter
        && jitter >= timing.interval
    {
        return Err(BuildError::JitterNotBelowInterval {
            check: check(),
            jitter,
            interval: timing.interval,
        });
    }
    if spec.fail_open_for.is_some() && spec.tier != Tier::Hard {
        return Err(BuildError::FailOpenOnNonHard {
            check: check(),
            tier: spec.tier,
        });
    }
    Ok(())
}

pub(crate) struct CheckEntry {
    pub(crate) spec: CheckSpec,
    pub(crate) check: Arc<dyn Check>,
    pub(crate) interval: Duration,
    pub(crate) timeout: Duration,
    pub(crate) jitter: Duration,
    pub(crate) staleness: Duration,
    pub(crate) dependency: Option<String>,
    pub(crate) wake: Arc<Notify>,
    /// Set when startup completed while the check was not healthy: the next wake polls only
    /// if the check is still not healthy by then (its first poll may have been in flight).
    pub(crate) boot_repoll: Arc<AtomicBool>,
    pub(crate) passive_run: AtomicU32,
}

/// The mutable state behind the published snapshot; only writers take its lock.
pub(crate) struct Master {
    pub(crate) checks: Vec<Arc<CheckState>>,
    pub(crate) machines: Vec<Hysteresis>,
    pub(crate) steps: Vec<StepState>,
    pub(crate) broken: Option<Arc<str>>,
    pub(crate) deadlock: Option<Arc<str>>,
    pub(crate) shutting_down: Option<Instant>,
    pub(crate) generation: u64,
}

impl Master {
    fn snapshot(
        &self,
        service: &Option<Arc<str>>,
        liveness: &Arc<[LivenessCondition]>,
        watchdog: &Option<Arc<Watchdog>>,
    ) -> Snapshot {
        Snapshot {
            service: service.clone(),
            checks: self.checks.clone(),
            steps: self.steps.clone().into(),
            liveness: liveness.clone(),
            watchdog: watchdog.clone(),
            broken: self.broken.clone(),
            deadlock: self.deadlock.clone(),
            shutting_down: self.shutting_down,
            generation: self.generation,
        }
    }
}

pub(crate) struct Inner {
    pub(crate) service: Option<Arc<str>>,
    pub(crate) entries: Vec<CheckEntry>,
    pub(crate) liveness: Arc<[LivenessCondition]>,
    pub(crate) watchdog: Option<Arc<Watchdog>>,
    pub(crate) deadlock_interval: Option<Duration>,
    pub(crate) drain_delay: Duration,
    pub(crate) in_flight_deadline: Duration,
    pub(crate) expected_boot: Option<Duration>,
    pub(crate) master: Mutex<Master>,
    pub(crate) current: ArcSwap<Snapshot>,
    pub(crate) notify: watch::Sender<Arc<Snapshot>>,
    pub(crate) shutdown: watch::Sender<Option<Instant>>,
    pub(crate) tasks: Mutex<Vec<Task>>,
    pub(crate) started: AtomicBool,
    pub(crate) stop_watch: AtomicBool,
}

pub(crate) enum Task {
    Async(tokio::task::JoinHandle<()>),
    Thread(std::thread::JoinHandle<()>),
}

impl Inner {
    /// Applies `change` to the master state and publishes the result, under the writers' lock.
    pub(crate) fn update<R>(&self, change: impl FnOnce(&mut Master) -> R) -> R {
        let mut master = self.master.lock();
        let result = change(&mut master);
        master.generation += 1;
        let snapshot = Arc::new(master.snapshot(&self.service, &self.liveness, &self.watchdog));
        self.current.store(snapshot.clone());
        self.notify.send_replace(snapshot);
        result
    }

    /// Whether check `index` is healthy (by its hysteresis) right now.
    pub(crate) fn is_healthy(&self, index: usize) -> bool {
        self.master.lock().checks[index].healthy
    }

    /// Publishes a fresh snapshot without changing state (something read at evaluation time,
    /// such as the watchdog's heartbeat age, changed).
    pub(crate) fn republish(&self) {
        self.update(|_| ());
    }

    pub(crate) fn set_broken(&self, reason: String) {
        self.update(|master| match &master.broken {
            Some(existing) => {
                tracing::warn!(target: "probity::liveness", already = %existing, ignored = %reason, "already marked broken");
            }
            None => {
                tracing::error!(target: "probity::liveness", "marked broken: {reason}");
                master.broken = Some(reason.into());
            }
        });
    }

    #[cfg_attr(not(feature = "deadlock"), allow(dead_code))]
    pub(crate) fn set_deadlock(&self, reason: String) {
        self.update(|master| {
            if master.deadlock.is_none() {
                master.deadlock = Some(reason.into());
            }
        });
    }

    /// Records one completed poll (or a passive failure) for check `index`.
    pub(crate) fn record(
        &self,
        index: usize,
        ok: bool,
        forced: bool,
        last: LastResult,
    ) -> Option<Transition> {
        let entry = &self.entries[index];
        let transition = self.update(|master| {
            let machine = &mut master.machines[index];
            let transition = if forced {
                machine.force_unhealthy()
            } else {
                machine.observe(ok)
            };
            let previous = &master.checks[index];
            let now = last.at;
            let mut state = CheckState::clone(previous);
            state.healthy = machine.is_healthy();
            state.consecutive_successes = machine.consecutive_successes();
            state.consecutive_failures = if forced {
                previous
                    .consecutive_failures
                    .max(entry.spec.passive_failures)
            } else {
                machine.consecutive_failures()
            };
            if ok && !forced {
                state.last_success = Some(now);
            }
            match transition {
                Some(Transition::Rose) => {
                    state.last_transition = Some(now);
                    state.unhealthy_since = None;
                }
                Some(Transition::Fell) => {
                    state.last_transition = Some(now);
                    state.unhealthy_since = Some(now);
                }
                None => {}
            }
            if forced {
                // A passive failure changes the verdict but is not a poll: keep the timing of
                // the last poll, replace the message.
                state.last = Some(LastResult {
                    duration: previous.last.as_ref().map_or(last.duration, |l| l.duration),
                    ..last
                });
            } else {
                state.last = Some(last);
            }
            master.checks[index] = Arc::new(state);
            transition
        });
        #[cfg(feature = "metrics")]
        crate::metrics::record_check(self, index, transition, !forced);
        if let Some(transition) = transition {
            let state = &self.current.load().checks[index];
            match transition {
                Transition::Fell => tracing::warn!(
                    target: "probity::check",
                    check = %entry.spec.name,
                    tier = %entry.spec.tier,
                    error = state.last.as_ref().and_then(|l| l.message.as_deref()).unwrap_or(""),
                    "check turned unhealthy"
                ),
                Transition::Rose => tracing::info!(
                    target: "probity::check",
                    check = %entry.spec.name,
                    tier = %entry.spec.tier,
                    "check turned healthy"
                ),
            }
        }
        transition
    }
}

/// A service's health: its checks, startup steps, liveness conditions and shutdown state.
///
/// Cheap to clone (an `Arc`); every clone sees the same state. Build one with
/// [`Health::builder`], call [`Health::start`] inside a tokio runtime, hand it to the HTTP and
/// gRPC surfaces, and read [`Health::snapshot`] to decide.
///
/// The pollers hold only a weak reference: when the last `Health` is dropped they stop.
#[derive(Clone)]
pub struct Health {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Health")
            .field("service", &self.inner.service)
            .field(
                "checks",
                &self
                    .inner
                    .entries
                    .iter()
                    .map(|entry| &entry.spec.name)
                    .collect::<Vec<_>>(),
            )
            .field("drain_delay", &self.inner.drain_delay)
            .finish_non_exhaustive()
    }
}

impl Health {
    /// Starts declaring a registry.
    pub fn builder() -> HealthBuilder {
        HealthBuilder::default()
    }

    /// Starts one poller per check (each polls at once, then on its own jittered cadence), the
    /// runtime heartbeat and the watchdog thread. Calling it again does nothing.
    pub fn start(&self) -> Result<(), StartError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(StartError::NoRuntime);
        }
        if self
            .inner
            .started
            .swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            return Ok(());
        }
        let mut tasks = Vec::new();
        for index in 0..self.inner.entries.len() {
            tasks.push(Task::Async(crate::poller::spawn(&self.inner, index)));
        }
        let (heartbeat, thread) = crate::liveness::start(&self.inner)?;
        tasks.extend(heartbeat.map(Task::Async));
        tasks.extend(thread.map(Task::Thread));
        self.inner.tasks.lock().extend(tasks);
        Ok(())
    }

    /// Stops the pollers, the heartbeat and the watchdog thread. The last snapshot stays
    /// readable (and goes stale).
    pub fn stop(&self) {
        self.inner
            .stop_watch
            .store(true, std::sync::atomic::Ordering::Release);
        for task in self.inner.tasks.lock().drain(..) {
            match task {
                Task::Async(handle) => handle.abort(),
                Task::Thread(handle) => handle.thread().unpark(),
            }
        }
        self.inner
            .started
            .store(false, std::sync::atomic::Ordering::Release);
    }

    /// The current snapshot. Loading it takes no lock shared with the pollers.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.inner.current.load_full()
    }

    /// A receiver that sees every published snapshot (for streaming transitions, as gRPC's
    /// `Watch` does).
    pub fn subscribe(&self) -> watch::Receiver<Arc<Snapshot>> {
        self.inner.notify.subscribe()
    }

    /// The declared service name.
    pub fn service(&self) -> Option<&str> {
        self.inner.service.as_deref()
    }

    /// The names of the readiness checks, in registration order.
    pub fn check_names(&self) -> impl Iterator<Item = &str> {
        self.inner
            .entries
            .iter()
            .map(|entry| entry.spec.name.as_str())
    }
}
