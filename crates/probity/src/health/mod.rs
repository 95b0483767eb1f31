//! A service's health: the handle the service keeps (it reports, completes boot steps, shuts
//! down) and the builder that declares everything once, validated.

mod builder;
pub(crate) mod error;
mod signals;

pub use builder::HealthBuilder;
pub use error::{BuildError, StartError, UnknownName};

use crate::heartbeat::{Heartbeat, HeartbeatCell};
use crate::liveness::{self, Watchdog, Watched};
use crate::passive::Reporter;
use crate::paths::ProbePaths;
use crate::snapshot::Snapshot;
use crate::store::{Observation, Store};
use crate::view::HealthView;
use parking_lot::Mutex;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::time::Instant;

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
