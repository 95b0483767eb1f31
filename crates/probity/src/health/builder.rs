//! The builder that declares everything once, validated.

use super::{BuildError, Health, Runtime};
#[cfg(doc)]
use crate::heartbeat::Heartbeat;
use crate::heartbeat::HeartbeatCell;
use crate::liveness::Watched;
use crate::name::validate_name;
use crate::paths::ProbePaths;
use crate::spec::CheckSpec;
use crate::store::{Cell, ConditionSpec, ShutdownPlan, StepSpec, Store};
use parking_lot::Mutex;
use probity_contract::Tier;
use probity_contract::contract::LivenessKind;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32};
use std::time::Duration;
use tokio::sync::Notify;

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
