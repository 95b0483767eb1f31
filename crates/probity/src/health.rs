//! A service's health: the handle the service keeps (it reports, completes boot steps, shuts
//! down) and the builder that declares everything once, validated.

use crate::heartbeat::{Heartbeat, HeartbeatCell};
use crate::liveness::{self, Watchdog, Watched};
use crate::name::validate_name;
use crate::passive::Reporter;
use crate::paths::ProbePaths;
use crate::snapshot::Snapshot;
use crate::spec::CheckSpec;
use crate::store::{Cell, ConditionSpec, Observation, ShutdownPlan, StepSpec, Store};
use crate::view::HealthView;
use parking_lot::Mutex;
use probity_contract::Tier;
use probity_contract::contract::LivenessKind;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

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
    /// A duration or count is zero where it must be positive.
    #[error("check `{check}`: {field} must be greater than zero")]
    Zero {
        /// The check.
        check: String,
        /// The field (`interval`, `timeout`, `rise`, `fall`, `passive_failures`).
        field: &'static str,
    },
    /// The declared readiness probe cannot be a Kubernetes probe.
    #[error("readiness probe: {field} must be greater than zero")]
    ReadinessProbe {
        /// The field (`period` or `failure_threshold`).
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
    /// A heartbeat's longest silence is zero: every instant between two beats would be a wedge.
    #[error("heartbeat `{heartbeat}`: max_silence must be greater than zero")]
    ZeroMaxSilence {
        /// The heartbeat.
        heartbeat: String,
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
    /// A fallback named on a check that is not hard (a soft or info check never fails
    /// readiness, so nothing needs to serve instead).
    #[error(
        "check `{check}`: a fallback applies to hard checks only (a {tier} check never fails readiness)"
    )]
    FallbackOnNonHard {
        /// The check.
        check: String,
        /// Its tier.
        tier: Tier,
    },
    /// A fallback names no declared check.
    #[error("check `{check}`: fallback `{fallback}` is not a declared check (known: {known})")]
    UnknownFallback {
        /// The check.
        check: String,
        /// The name it gave.
        fallback: String,
        /// The checks that are declared.
        known: String,
    },
    /// A check names itself as its fallback.
    #[error("check `{check}`: a check cannot be its own fallback")]
    SelfFallback {
        /// The check.
        check: String,
    },
    /// A fallback has a fallback of its own: a chain, or a cycle. What serves instead must be
    /// judged on its own evidence, or two failing checks could vouch for each other.
    #[error(
        "check `{check}`: fallback `{fallback}` names a fallback of its own (`{next}`); fallbacks do not chain"
    )]
    FallbackChain {
        /// The check.
        check: String,
        /// Its fallback.
        fallback: String,
        /// The fallback's own fallback.
        next: String,
    },
}

impl BuildError {
    /// The check, step or condition the error is about (empty for the readiness probe).
    pub fn check(&self) -> &str {
        match self {
            BuildError::InvalidName { name, .. } | BuildError::DuplicateName { name } => name,
            BuildError::Zero { check, .. }
            | BuildError::TimeoutNotBelowInterval { check, .. }
            | BuildError::StalenessBelowInterval { check, .. }
            | BuildError::JitterNotBelowInterval { check, .. }
            | BuildError::FailOpenOnNonHard { check, .. }
            | BuildError::FallbackOnNonHard { check, .. }
            | BuildError::UnknownFallback { check, .. }
            | BuildError::SelfFallback { check }
            | BuildError::FallbackChain { check, .. } => check,
            BuildError::ZeroMaxSilence { heartbeat } => heartbeat,
            BuildError::ReadinessProbe { .. } => "",
        }
    }

    /// The field the error is about.
    pub fn field(&self) -> &'static str {
        match self {
            BuildError::InvalidName { .. } | BuildError::DuplicateName { .. } => "name",
            BuildError::Zero { field, .. } | BuildError::ReadinessProbe { field } => field,
            BuildError::TimeoutNotBelowInterval { .. } => "timeout",
            BuildError::StalenessBelowInterval { .. } => "staleness",
            BuildError::JitterNotBelowInterval { .. } => "jitter",
            BuildError::FailOpenOnNonHard { .. } => "fail_open_for",
            BuildError::FallbackOnNonHard { .. }
            | BuildError::UnknownFallback { .. }
            | BuildError::SelfFallback { .. }
            | BuildError::FallbackChain { .. } => "fallback",
            BuildError::ZeroMaxSilence { .. } => "max_silence",
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

/// A check, step or heartbeat named in a call was never declared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} `{name}` (declared: {known})")]
pub struct UnknownName {
    /// `check`, `startup step` or `heartbeat`.
    pub kind: &'static str,
    /// The name asked for.
    pub name: String,
    /// The declared names, comma-separated.
    pub known: String,
}

/// Builds a [`Health`].
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
///     .dependency_step("database", "postgres") // gates readiness, not startup
///     .startup_step("warmup")
///     .runtime_watchdog(Duration::from_secs(5))
///     .readiness_probe(Duration::from_secs(5), 2) // drain delay: 5 s × 2 + 2 s
///     .build()?;
/// assert_eq!(health.drain_delay(), Duration::from_secs(12));
/// # Ok::<(), probity::BuildError>(())
/// ```
///
/// ## Liveness conditions
///
/// `/livez` lists one entry per condition, in this order, each named after what it watches:
///
/// | entry | declared by | fails when |
/// |---|---|---|
/// | `runtime_stall` | [`HealthBuilder::runtime_watchdog`] | the runtime's heartbeat task has not run for the threshold |
/// | `deadlock` | [`HealthBuilder::deadlock_detection`][deadlock_detection] (feature `deadlock`) | `parking_lot` finds a lock cycle |
/// | each heartbeat's name | [`HealthBuilder::heartbeat`] | the worker is silent past its bound, outside a declared wait |
/// | `marked_broken` | always present | [`Health::mark_broken`] was called |
///
/// While any of them fails, readiness fails too, as its `liveness` entry (naming the
/// condition and its reason): an instance about to be restarted takes no traffic meanwhile.
/// These names are reserved, with `shutdown`, `startup`, `liveness` and `readiness`.
///
#[cfg_attr(
    feature = "deadlock",
    doc = "[deadlock_detection]: HealthBuilder::deadlock_detection"
)]
#[cfg_attr(
    not(feature = "deadlock"),
    doc = "[deadlock_detection]: https://docs.rs/probity/latest/probity/struct.HealthBuilder.html#method.deadlock_detection"
)]
#[derive(Debug, Default)]
pub struct HealthBuilder {
    service: Option<String>,
    paths: ProbePaths,
    checks: Vec<CheckSpec>,
    steps: Vec<(String, Option<String>)>,
    watchdog: Option<Duration>,
    deadlock_interval: Option<Duration>,
    heartbeats: Vec<(String, Duration)>,
    drain_delay: Option<Duration>,
    readiness_probe: Option<(Duration, u32)>,
    load_balancer_reaction: Option<Duration>,
    in_flight_deadline: Option<Duration>,
    expected_boot: Option<Duration>,
}

impl HealthBuilder {
    /// Names the service (shown in the contract and the JSON outputs).
    pub fn service(mut self, name: impl Into<String>) -> Self {
        self.service = Some(name.into());
        self
    }

    /// Where the probes are served (default `/livez`, `/readyz`, `/startupz`).
    pub fn paths(mut self, paths: ProbePaths) -> Self {
        self.paths = paths;
        self
    }

    /// Adds a readiness check. There is no way to add a check to liveness: a restart does not
    /// fix someone else's outage.
    pub fn check(mut self, spec: CheckSpec) -> Self {
        self.checks.push(spec);
        self
    }

    /// Declares an internal boot step (cache warm-up, config load, a model to load):
    /// `/startupz` and `/readyz` fail, naming it, until it is completed with
    /// [`Health::complete_step`].
    pub fn startup_step(mut self, name: impl Into<String>) -> Self {
        self.steps.push((name.into(), None));
        self
    }

    /// Declares a boot step that waits on an external system — connecting to the database,
    /// migrating it. It gates `/readyz` only: `/startupz` passes once the internal boot is
    /// done, so an outage during a rollout never gets new pods killed and crash-looping.
    ///
    /// Such a step usually retries until the dependency answers. Make the retry loop wait on
    /// [`Health::shutdown_triggered`] as well, or a SIGTERM during the outage leaves the
    /// process retrying until the grace period kills it — see the loop there.
    pub fn dependency_step(
        mut self,
        name: impl Into<String>,
        dependency: impl Into<String>,
    ) -> Self {
        self.steps.push((name.into(), Some(dependency.into())));
        self
    }

    /// Declares how long a boot may take at worst, for the contract (the linter compares it
    /// with the startup probe's budget).
    pub fn expected_boot(mut self, duration: Duration) -> Self {
        self.expected_boot = Some(duration);
        self
    }

    /// Watches the async runtime for stalls: liveness fails when the heartbeat task has not run
    /// for `threshold` (the restart storm's fix used 5 s). Its `/livez` entry is
    /// `runtime_stall`, for what it detects (see [Liveness conditions](HealthBuilder#liveness-conditions)).
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

    /// Declares a worker's heartbeat, a liveness condition named `name`: liveness fails when
    /// the worker holding it ([`Health::heartbeat`]) has shown no sign of life for longer than
    /// `max_silence`, unless it is inside declared waits on a dependency that are all still
    /// within their own timeouts ([`Heartbeat::waiting_on`]). See [`Heartbeat`].
    ///
    /// Pick `max_silence` above the longest gap between two beats in normal work (the slowest
    /// message, the idle poll of an empty queue): a busy worker is not a wedged one. It is
    /// checked every tenth of the shortest heartbeat bound (between 10 ms and 1 s), from a task
    /// on the runtime, so declare [`HealthBuilder::runtime_watchdog`] too: a stalled runtime
    /// stalls that task with it.
    ///
    /// While the worker is silent, readiness fails as well (its `liveness` entry names the
    /// heartbeat): the instance leaves rotation at once rather than when the restart comes.
    ///
    /// The contract lists it as a `heartbeat` liveness condition with `max_silence` as its
    /// threshold. What the worker waits on belongs to readiness, as a check
    /// ([`HealthBuilder::check`]), hard or soft as the service needs it.
    pub fn heartbeat(mut self, name: impl Into<String>, max_silence: Duration) -> Self {
        self.heartbeats.push((name.into(), max_silence));
        self
    }

    /// Declares the readiness probe that watches this service (its `periodSeconds` and
    /// `failureThreshold`): the drain delay is derived from it — `period × failure_threshold`
    /// plus the [load balancer's reaction](HealthBuilder::load_balancer_reaction) — unless set
    /// with [`HealthBuilder::drain_delay`].
    pub fn readiness_probe(mut self, period: Duration, failure_threshold: u32) -> Self {
        self.readiness_probe = Some((period, failure_threshold));
        self
    }

    /// How long the load balancer takes to act once readiness has failed (EndpointSlice
    /// propagation, an external balancer's own checks); default 2 s. Part of the derived drain
    /// delay.
    pub fn load_balancer_reaction(mut self, reaction: Duration) -> Self {
        self.load_balancer_reaction = Some(reaction);
        self
    }

    /// Sets the drain delay by hand, overriding the derivation from the readiness probe. With
    /// neither, the drain delay is 5 s.
    pub fn drain_delay(mut self, delay: Duration) -> Self {
        self.drain_delay = Some(delay);
        self
    }

    /// How long in-flight requests may run after the listener closes (default 10 s).
    pub fn in_flight_deadline(mut self, deadline: Duration) -> Self {
        self.in_flight_deadline = Some(deadline);
        self
    }

    /// Validates everything and builds the registry. Nothing runs until [`Health::start`].
    pub fn build(self) -> Result<Health, BuildError> {
        let mut names: Vec<&str> = Vec::new();
        for name in self
            .checks
            .iter()
            .map(|spec| spec.name.as_str())
            .chain(self.steps.iter().map(|(name, _)| name.as_str()))
            .chain(self.heartbeats.iter().map(|(name, _)| name.as_str()))
        {
            validate_name(name)?;
            if names.contains(&name) {
                return Err(BuildError::DuplicateName {
                    name: name.to_owned(),
                });
            }
            names.push(name);
        }
        for spec in &self.checks {
            validate_spec(spec)?;
        }
        let fallbacks = resolve_fallbacks(&self.checks)?;
        if let Some((name, _)) = self
            .heartbeats
            .iter()
            .find(|(_, max_silence)| max_silence.is_zero())
        {
            return Err(BuildError::ZeroMaxSilence {
                heartbeat: name.clone(),
            });
        }
        if let Some((period, threshold)) = self.readiness_probe {
            if period.is_zero() {
                return Err(BuildError::ReadinessProbe { field: "period" });
            }
            if threshold == 0 {
                return Err(BuildError::ReadinessProbe {
                    field: "failure_threshold",
                });
            }
        }

        let mut conditions = Vec::new();
        let mut watched = Watched {
            stall: None,
            deadlock: None,
        };
        if let Some(threshold) = self.watchdog {
            watched.stall = Some(conditions.len());
            conditions.push(ConditionSpec {
                name: "runtime_stall".into(),
                kind: LivenessKind::RuntimeStall,
                threshold: Some(threshold),
            });
        }
        if let Some(every) = self.deadlock_interval {
            watched.deadlock = Some((conditions.len(), every));
            conditions.push(ConditionSpec {
                name: "deadlock".into(),
                kind: LivenessKind::Deadlock,
                threshold: None,
            });
        }
        let mut heartbeats = Vec::with_capacity(self.heartbeats.len());
        for (name, max_silence) in self.heartbeats {
            let name: Arc<str> = name.into();
            heartbeats.push(Arc::new(HeartbeatCell::new(
                name.clone(),
                conditions.len(),
                max_silence,
            )));
            conditions.push(ConditionSpec {
                name,
                kind: LivenessKind::Heartbeat,
                threshold: Some(max_silence),
            });
        }
        let app_state = conditions.len();
        conditions.push(ConditionSpec {
            name: "marked_broken".into(),
            kind: LivenessKind::AppState,
            threshold: None,
        });

        let cells = self
            .checks
            .into_iter()
            .zip(fallbacks)
            .map(|(spec, fallback)| cell_of(spec, fallback))
            .collect();
        let steps = self
            .steps
            .into_iter()
            .map(|(name, waits_on)| StepSpec {
                name: name.into(),
                waits_on: waits_on.map(Into::into),
            })
            .collect();
        let (drain_delay, derivation) = match (self.drain_delay, self.readiness_probe) {
            (Some(delay), _) => (delay, None),
            (None, Some((period, threshold))) => {
                let (delay, derivation) = crate::shutdown::derive(
                    period,
                    threshold,
                    self.load_balancer_reaction
                        .unwrap_or(crate::shutdown::DEFAULT_LOAD_BALANCER_REACTION),
                );
                (delay, Some(derivation))
            }
            (None, None) => (crate::shutdown::DEFAULT_DRAIN_DELAY, None),
        };
        let shutdown = ShutdownPlan {
            drain_delay,
            derivation,
            in_flight_deadline: self
                .in_flight_deadline
                .unwrap_or(crate::shutdown::DEFAULT_IN_FLIGHT_DEADLINE),
        };
        let store = Store::new(
            self.service.map(Into::into),
            self.paths,
            cells,
            steps,
            conditions,
            shutdown,
            self.expected_boot,
        );
        Ok(Health {
            store: Arc::new(store),
            runtime: Arc::new(Runtime {
                watchdog_threshold: self.watchdog,
                watched,
                app_state,
                heartbeats: heartbeats.into(),
                tasks: Mutex::new(Vec::new()),
                started: AtomicBool::new(false),
                stop_watch: Arc::new(AtomicBool::new(false)),
            }),
        })
    }
}

/// Each check's fallback as an index among the checks, validated: a hard check's, naming
/// another declared check that names no fallback itself.
fn resolve_fallbacks(checks: &[CheckSpec]) -> Result<Vec<Option<usize>>, BuildError> {
    let index_of = |name: &str| checks.iter().position(|spec| spec.name == name);
    checks
        .iter()
        .map(|spec| {
            let Some(fallback) = spec.fallback.as_deref() else {
                return Ok(None);
            };
            if spec.tier != Tier::Hard {
                return Err(BuildError::FallbackOnNonHard {
                    check: spec.name.clone(),
                    tier: spec.tier,
                });
            }
            if fallback == spec.name {
                return Err(BuildError::SelfFallback {
                    check: spec.name.clone(),
                });
            }
            let Some(index) = index_of(fallback) else {
                return Err(BuildError::UnknownFallback {
                    check: spec.name.clone(),
                    fallback: fallback.to_owned(),
                    known: checks
                        .iter()
                        .map(|spec| spec.name.as_str())
                        .filter(|name| *name != spec.name)
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            };
            if let Some(next) = checks[index].fallback.as_deref() {
                return Err(BuildError::FallbackChain {
                    check: spec.name.clone(),
                    fallback: fallback.to_owned(),
                    next: next.to_owned(),
                });
            }
            Ok(Some(index))
        })
        .collect()
}

fn cell_of(spec: CheckSpec, fallback: Option<usize>) -> Cell {
    let timing = spec.resolved_timing();
    Cell {
        fallback,
        name: spec.name.as_str().into(),
        tier: spec.tier,
        dependency: spec.resolved_dependency().map(Into::into),
        interval: timing.interval,
        timeout: timing.timeout,
        jitter: spec.jitter.unwrap_or(timing.interval / 10),
        staleness: spec.staleness.unwrap_or(timing.interval * 3),
        rise: spec.rise,
        fall: spec.resolved_fall(),
        boot_requires_rise: spec.boot_requires_rise,
        passive_failures: spec.passive_failures,
        fail_open_for: spec.fail_open_for,
        check: spec.check,
        wake: Arc::new(Notify::new()),
        boot_repoll: Arc::new(AtomicBool::new(false)),
        passive_run: AtomicU32::new(0),
    }
}

fn validate_spec(spec: &CheckSpec) -> Result<(), BuildError> {
    let check = || spec.name.clone();
    let timing = spec.resolved_timing();
    let zero = |field| BuildError::Zero {
        check: check(),
        field,
    };
    if timing.interval.is_zero() {
        return Err(zero("interval"));
    }
    if timing.timeout.is_zero() {
        return Err(zero("timeout"));
    }
    if timing.timeout >= timing.interval {
        return Err(BuildError::TimeoutNotBelowInterval {
            check: check(),
            timeout: timing.timeout,
            interval: timing.interval,
        });
    }
    if spec.rise == 0 {
        return Err(zero("rise"));
    }
    if spec.resolved_fall() == 0 {
        return Err(zero("fall"));
    }
    if spec.passive_failures == 0 {
        return Err(zero("passive_failures"));
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

/// What runs once started: the watched conditions, the tasks and the watcher thread.
struct Runtime {
    watchdog_threshold: Option<Duration>,
    watched: Watched,
    app_state: usize,
    heartbeats: Arc<[Arc<HeartbeatCell>]>,
    tasks: Mutex<Vec<Task>>,
    started: AtomicBool,
    stop_watch: Arc<AtomicBool>,
}

enum Task {
    Async(tokio::task::JoinHandle<()>),
    Thread(std::thread::JoinHandle<()>),
}

/// A service's health: its checks, startup steps, liveness conditions and shutdown state — the
/// handle the service keeps. It is the writer: it reports real outcomes, completes boot
/// steps, declares the process broken, and shuts down. Surfaces read through a
/// [`HealthView`] ([`Health::view`]).
///
/// Cheap to clone (two `Arc`s); every clone sees the same state. Build one with
/// [`Health::builder`] and call [`Health::start`] inside a tokio runtime.
#[derive(Clone)]
pub struct Health {
    store: Arc<Store>,
    runtime: Arc<Runtime>,
}

impl fmt::Debug for Health {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Health")
            .field("service", &self.store.service)
            .field(
                "checks",
                &self
                    .store
                    .cells
                    .iter()
                    .map(|cell| &cell.name)
                    .collect::<Vec<_>>(),
            )
            .field(
                "heartbeats",
                &self
                    .runtime
                    .heartbeats
                    .iter()
                    .map(|cell| &cell.name)
                    .collect::<Vec<_>>(),
            )
            .field("drain_delay", &self.store.shutdown.drain_delay)
            .finish_non_exhaustive()
    }
}

impl Health {
    /// Starts declaring a service's health.
    pub fn builder() -> HealthBuilder {
        HealthBuilder::default()
    }

    /// Starts one poller per check (each polls at once, then on its own jittered cadence), the
    /// runtime heartbeat, the watchdog thread and the workers' heartbeat watcher. Calling it
    /// again does nothing.
    pub fn start(&self) -> Result<(), StartError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(StartError::NoRuntime);
        }
        if self.runtime.started.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let mut tasks = Vec::new();
        for index in 0..self.store.cells.len() {
            tasks.push(Task::Async(crate::poller::spawn(&self.store, index)));
        }
        let watchdog = self
            .runtime
            .watchdog_threshold
            .map(|threshold| Arc::new(Watchdog::new(threshold)));
        let (heartbeat, thread) = liveness::start(
            &self.store,
            watchdog,
            self.runtime.watched,
            self.runtime.stop_watch.clone(),
        )?;
        tasks.extend(heartbeat.map(Task::Async));
        tasks.extend(thread.map(Task::Thread));
        tasks.extend(
            crate::heartbeat::spawn(&self.store, self.runtime.heartbeats.clone()).map(Task::Async),
        );
        self.runtime.tasks.lock().extend(tasks);
        Ok(())
    }

    /// Stops the pollers, the heartbeat, the watchdog thread and the heartbeat watcher. The last snapshot stays
    /// readable (and goes stale).
    pub fn stop(&self) {
        self.runtime.stop_watch.store(true, Ordering::Release);
        for task in self.runtime.tasks.lock().drain(..) {
            match task {
                Task::Async(handle) => handle.abort(),
                Task::Thread(handle) => handle.thread().unpark(),
            }
        }
        self.runtime.started.store(false, Ordering::Release);
    }

    /// The reader's handle, for the probe surfaces.
    pub fn view(&self) -> HealthView {
        HealthView {
            store: self.store.clone(),
        }
    }

    /// The current snapshot (what [`HealthView::snapshot`] reads).
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.store.snapshot()
    }

    /// The declared service name.
    pub fn service(&self) -> Option<&str> {
        self.store.service.as_deref()
    }

    /// Where the probes are served.
    pub fn paths(&self) -> &ProbePaths {
        &self.store.paths
    }

    /// The contract: what each endpoint checks and waits on, with what timing.
    pub fn contract(&self) -> probity_contract::Contract {
        crate::contract::describe(&self.store)
    }

    fn check_index(&self, name: &str) -> Result<usize, UnknownName> {
        let cells = &self.store.cells;
        cells
            .iter()
            .position(|cell| &*cell.name == name)
            .ok_or_else(|| UnknownName {
                kind: "check",
                name: name.to_owned(),
                known: cells
                    .iter()
                    .map(|cell| &*cell.name)
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    fn step_index(&self, name: &str) -> Result<usize, UnknownName> {
        let steps = &self.store.steps;
        steps
            .iter()
            .position(|step| &*step.name == name)
            .ok_or_else(|| UnknownName {
                kind: "startup step",
                name: name.to_owned(),
                known: steps
                    .iter()
                    .map(|step| &*step.name)
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    /// The handle of the worker heartbeat declared as `name` ([`HealthBuilder::heartbeat`]),
    /// for the worker to beat and declare its waits with. Taking it is a sign of life, so
    /// take it where the worker starts: silence counts from then, and a heartbeat nobody has
    /// taken yet passes. Every handle of one name beats the same heartbeat.
    pub fn heartbeat(&self, name: &str) -> Result<Heartbeat, UnknownName> {
        let heartbeats = &self.runtime.heartbeats;
        let cell = heartbeats
            .iter()
            .find(|cell| &*cell.name == name)
            .ok_or_else(|| UnknownName {
                kind: "heartbeat",
                name: name.to_owned(),
                known: heartbeats
                    .iter()
                    .map(|cell| &*cell.name)
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        Ok(Heartbeat::take(cell.clone()))
    }

    /// A reporter of real outcomes for the check named `check` (see [`Reporter`]).
    pub fn reporter(&self, check: &str) -> Result<Reporter, UnknownName> {
        Ok(Reporter::new(self.store.clone(), self.check_index(check)?))
    }

    /// Reports one real outcome for `check`. Prefer [`Health::reporter`] on hot paths: it looks
    /// the check up once.
    pub fn report<E: fmt::Display>(
        &self,
        check: &str,
        outcome: Result<(), E>,
    ) -> Result<(), UnknownName> {
        self.reporter(check)?.report(outcome);
        Ok(())
    }

    /// The names of the readiness checks, in registration order.
    pub fn check_names(&self) -> impl Iterator<Item = &str> {
        self.store.cells.iter().map(|cell| &*cell.name)
    }

    /// Polls `check` now instead of at its next tick (after a boot step connected to the
    /// dependency, say), without disturbing its cadence afterwards. A poll in flight finishes
    /// first: polls never overlap.
    pub fn poll_now(&self, check: &str) -> Result<(), UnknownName> {
        let index = self.check_index(check)?;
        self.store.cells[index].wake.notify_one();
        Ok(())
    }

    /// Marks a boot step complete. When the last step completes, readiness is decided by the
    /// checks alone, and every check that is not healthy is polled again at once.
    pub fn complete_step(&self, name: &str) -> Result<(), UnknownName> {
        let index = self.step_index(name)?;
        crate::startup::complete(
            &self.store,
            index,
            self.runtime.started.load(Ordering::Acquire),
        );
        Ok(())
    }

    /// Records why a step is still pending (e.g. `database unreachable: connection refused;
    /// retry 3 in 1.6s`). The note is redacted and shown in full on an admin listener only.
    pub fn step_progress(&self, name: &str, note: impl AsRef<str>) -> Result<(), UnknownName> {
        let index = self.step_index(name)?;
        crate::startup::waiting(&self.store, index, note.as_ref());
        Ok(())
    }

    /// Declares the process broken beyond what it can recover from: liveness (and with it
    /// readiness) fails from now on, naming `reason`, so the orchestrator restarts the
    /// container. Use it for states only a restart clears — a poisoned cache, a lost leader
    /// lease that cannot be re-acquired — never for an unreachable dependency. The first reason
    /// is kept; later calls are logged and ignored.
    ///
    /// Its `/livez` entry, `marked_broken`, is always present and passes until this is called
    /// (see [Liveness conditions](HealthBuilder#liveness-conditions)).
    pub fn mark_broken(&self, reason: impl AsRef<str>) {
        liveness::mark_broken(&self.store, self.runtime.app_state, reason.as_ref());
    }

    /// Starts shutting down: readiness fails from now on with `shutting down`; liveness is
    /// untouched. Calling it again changes nothing.
    pub fn shutdown(&self) {
        let applied = self
            .store
            .observe(Observation::ShutdownStarted { at: Instant::now() });
        if applied.first_shutdown {
            tracing::info!(
                target: "probity::shutdown",
                drain_delay = ?self.store.shutdown.drain_delay,
                "shutting down: readiness fails, draining"
            );
        }
    }

    /// Whether shutdown has started ([`Health::shutdown`], or a signal after
    /// [`Health::shutdown_on_signals`]).
    pub fn is_shutting_down(&self) -> bool {
        self.store.shutdown_signal().borrow().is_some()
    }

    /// Resolves when shutdown starts, with the moment it did; at once if it already has.
    ///
    /// Anything that retries until a dependency answers — a boot step declared with
    /// [`HealthBuilder::dependency_step`], a worker's reconnect loop — waits on it too, or a
    /// SIGTERM during the outage the retry is riding out keeps the process alive until the
    /// orchestrator's grace period kills it:
    ///
    /// ```no_run
    /// # async fn migrate() -> Result<(), std::io::Error> { Ok(()) }
    /// # async fn run(health: probity::Health) -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    ///
    /// let mut backoff = Duration::from_millis(100);
    /// loop {
    ///     tokio::select! {
    ///         // SIGTERM while the database is still down: stop retrying, let `main` return.
    ///         _ = health.shutdown_triggered() => return Ok(()),
    ///         outcome = migrate() => match outcome {
    ///             Ok(()) => break,
    ///             Err(error) => health.step_progress("migrations", format!("retrying: {error}"))?,
    ///         },
    ///     }
    ///     tokio::select! {
    ///         _ = health.shutdown_triggered() => return Ok(()),
    ///         () = tokio::time::sleep(backoff) => backoff = (backoff * 2).min(Duration::from_secs(5)),
    ///     }
    /// }
    /// health.complete_step("migrations")?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn shutdown_triggered(&self) -> Instant {
        crate::view::shutdown_triggered(&self.store).await
    }

    /// Resolves once shutdown has started **and** the drain delay has passed since: the moment
    /// for the server to stop accepting connections (what `probity_axum::serve` waits for).
    pub async fn drained(&self) {
        let at = self.shutdown_triggered().await;
        tokio::time::sleep_until(at + self.store.shutdown.drain_delay).await;
    }

    /// The drain delay: set with [`HealthBuilder::drain_delay`], else derived from
    /// [`HealthBuilder::readiness_probe`], else 5 s.
    pub fn drain_delay(&self) -> Duration {
        self.store.shutdown.drain_delay
    }

    /// How long in-flight requests may run after the listener closes
    /// ([`HealthBuilder::in_flight_deadline`], default 10 s).
    pub fn in_flight_deadline(&self) -> Duration {
        self.store.shutdown.in_flight_deadline
    }

    /// Starts the shutdown sequence on SIGTERM or SIGINT (Ctrl-C), and ends the process on a
    /// second one.
    ///
    /// The first signal calls [`Health::shutdown`]: readiness fails, the drain begins. A second
    /// SIGTERM or SIGINT exits the process at once with status 128 + the signal's number (143,
    /// 130), without finishing the drain — for a person at a terminal who does not want to
    /// wait, or an orchestrator that sends a second signal. On Unix the signals are counted on
    /// a thread of their own, off the tokio runtime, so both work even while the runtime is
    /// stalled (a blocking call on every worker), when nothing on it would run; no runtime is
    /// needed to call this. Elsewhere, Ctrl-C is watched from a task on the current runtime.
    ///
    /// Call it once per process: each call counts signals on its own.
    pub fn shutdown_on_signals(&self) {
        #[cfg(unix)]
        {
            use signal_hook::consts::{SIGINT, SIGTERM};
            let signals = match signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) {
                Ok(signals) => signals,
                Err(error) => {
                    tracing::error!(target: "probity::shutdown", %error, "cannot listen for SIGTERM and SIGINT");
                    return;
                }
            };
            let health = self.clone();
            let spawned = std::thread::Builder::new()
                .name("probity-signals".into())
                .spawn(move || count_signals(signals, &health));
            if let Err(error) = spawned {
                tracing::error!(target: "probity::shutdown", %error, "cannot start the signal thread");
            }
        }
        #[cfg(not(unix))]
        {
            let health = self.clone();
            tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_err() {
                    return;
                }
                tracing::info!(target: "probity::shutdown", "Ctrl-C received");
                health.shutdown();
                if tokio::signal::ctrl_c().await.is_ok() {
                    tracing::warn!(target: "probity::shutdown", "second Ctrl-C: exiting without finishing the drain");
                    std::process::exit(130);
                }
            });
        }
    }
}

/// The first signal starts the shutdown; a second ends the process.
#[cfg(unix)]
fn count_signals(mut signals: signal_hook::iterator::Signals, health: &Health) {
    let name = |signal: i32| match signal {
        signal_hook::consts::SIGINT => "SIGINT",
        _ => "SIGTERM",
    };
    let mut received = 0;
    for signal in signals.forever() {
        received += 1;
        if received == 1 {
            tracing::info!(target: "probity::shutdown", "{} received", name(signal));
            health.shutdown();
        } else {
            tracing::warn!(
                target: "probity::shutdown",
                "second signal ({}): exiting without finishing the drain",
                name(signal)
            );
            std::process::exit(128 + signal);
        }
    }
}

impl From<&Health> for HealthView {
    fn from(health: &Health) -> Self {
        health.view()
    }
}

impl From<Health> for HealthView {
    fn from(health: Health) -> Self {
        health.view()
    }
}
