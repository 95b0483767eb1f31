//! The store: one cell per check (its settings, its hysteresis, its published state), the
//! startup steps, the liveness conditions and the shutdown state — changed only by typed
//! observations, and published atomically as a [`Snapshot`] after each one.
//!
//! Pollers, passive reports, startup, the liveness watchers and the shutdown trigger all send
//! [`Observation`]s here; none of them touches another's state, and nothing here calls back
//! into them. Probes never take the writers' lock: they load the published snapshot.

use crate::check::{Check, FailureKind};
use crate::history::History;
use crate::paths::ProbePaths;
use crate::snapshot::{
    CheckState, ConditionFailure, ConditionState, DeclaredWait, LastResult, Snapshot, StepState,
};
use arc_swap::ArcSwap;
use parking_lot::Mutex;
use probity_contract::Tier;
use probity_contract::contract::{DrainDerivation, LivenessKind};
use probity_contract::hysteresis::{Hysteresis, Transition};
use probity_contract::verdict::{Evidence, Sample};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, SystemTime};
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

/// One check's settings, resolved when the registry was built, and its poller's wake-up.
pub(crate) struct Cell {
    pub(crate) name: Arc<str>,
    pub(crate) tier: Tier,
    pub(crate) dependency: Option<Arc<str>>,
    pub(crate) check: Arc<dyn Check>,
    pub(crate) interval: Duration,
    pub(crate) timeout: Duration,
    pub(crate) jitter: Duration,
    pub(crate) staleness: Duration,
    pub(crate) rise: u32,
    pub(crate) fall: u32,
    pub(crate) boot_requires_rise: bool,
    pub(crate) passive_failures: u32,
    pub(crate) fail_open_for: Option<Duration>,
    /// The index of the check that serves instead while this one fails.
    pub(crate) fallback: Option<usize>,
    /// Wakes the poller for an immediate poll.
    pub(crate) wake: Arc<Notify>,
    /// Set when startup completed while the check was not healthy: the next wake polls only
    /// if the check is still not healthy by then (its first poll may have been in flight).
    pub(crate) boot_repoll: Arc<AtomicBool>,
    /// Consecutive failures reported by application code.
    pub(crate) passive_run: AtomicU32,
}

/// A boot step as declared.
#[derive(Debug, Clone)]
pub(crate) struct StepSpec {
    pub(crate) name: Arc<str>,
    pub(crate) waits_on: Option<Arc<str>>,
}

/// A liveness condition as declared.
#[derive(Debug, Clone)]
pub(crate) struct ConditionSpec {
    pub(crate) name: Arc<str>,
    pub(crate) kind: LivenessKind,
    pub(crate) threshold: Option<Duration>,
}

/// The shutdown sequence's timing.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ShutdownPlan {
    pub(crate) drain_delay: Duration,
    pub(crate) derivation: Option<DrainDerivation>,
    pub(crate) in_flight_deadline: Duration,
}

/// Something that happened, sent to the store by whoever saw it.
#[derive(Debug)]
pub(crate) enum Observation {
    /// A poll of check `check` finished.
    Polled { check: usize, result: LastResult },
    /// Application code reported a run of real failures for check `check`.
    Reported {
        check: usize,
        message: String,
        at: Instant,
    },
    /// Boot step `step` completed.
    StepCompleted { step: usize },
    /// Boot step `step` is still waiting, for this reason (redacted).
    StepWaiting { step: usize, note: String },
    /// Liveness condition `condition` fails.
    ConditionFailed {
        condition: usize,
        failure: ConditionFailure,
    },
    /// Liveness condition `condition` passes again.
    ConditionCleared { condition: usize },
    /// Heartbeat condition `condition` passes only because its worker is inside a declared
    /// wait still within its timeout.
    ConditionWaiting {
        condition: usize,
        wait: DeclaredWait,
    },
    /// Shutdown started.
    ShutdownStarted { at: Instant },
}

/// What an observation changed, for the caller to act on.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    /// A check's hysteresis transition.
    pub(crate) transition: Option<Transition>,
    /// The checks that were not healthy when the last startup step completed.
    pub(crate) unhealthy_at_start: Vec<usize>,
    /// Whether this was the first shutdown trigger.
    pub(crate) first_shutdown: bool,
}

struct State {
    machines: Vec<Hysteresis>,
    checks: Vec<Arc<CheckState>>,
    steps: Vec<StepState>,
    conditions: Vec<ConditionState>,
    shutting_down: Option<Instant>,
    generation: u64,
}

pub(crate) struct Store {
    pub(crate) service: Option<Arc<str>>,
    pub(crate) paths: Arc<ProbePaths>,
    pub(crate) cells: Vec<Cell>,
    pub(crate) steps: Vec<StepSpec>,
    pub(crate) conditions: Vec<ConditionSpec>,
    pub(crate) shutdown: ShutdownPlan,
    pub(crate) expected_boot: Option<Duration>,
    state: Mutex<State>,
    current: ArcSwap<Snapshot>,
    /// The generation of `current`, readable without loading it.
    generation: AtomicU64,
    published: watch::Sender<Arc<Snapshot>>,
    shutdown_signal: watch::Sender<Option<Instant>>,
}

impl Store {
    pub(crate) fn new(
        service: Option<Arc<str>>,
        paths: ProbePaths,
        cells: Vec<Cell>,
        steps: Vec<StepSpec>,
        conditions: Vec<ConditionSpec>,
        shutdown: ShutdownPlan,
        expected_boot: Option<Duration>,
    ) -> Store {
        let state = State {
            machines: cells
                .iter()
                .map(|cell| Hysteresis::new(cell.rise, cell.fall, cell.boot_requires_rise))
                .collect(),
            checks: cells
                .iter()
                .map(|cell| {
                    Arc::new(CheckState {
                        name: cell.name.clone(),
                        dependency: cell.dependency.clone(),
                        evidence: Evidence {
                            tier: cell.tier,
                            healthy: false,
                            last: None,
                            unhealthy_since: None,
                            staleness: cell.staleness,
                            fail_open_for: cell.fail_open_for,
                            consecutive_successes: 0,
                            rise: cell.rise,
                            fallback: cell.fallback,
                        },
                        last: None,
                        consecutive_failures: 0,
                        last_transition: None,
                        last_success: None,
                        history: History::default(),
                    })
                })
                .collect(),
            steps: steps
                .iter()
                .map(|step| StepState {
                    name: step.name.clone(),
                    waits_on: step.waits_on.clone(),
                    complete: false,
                    note: None,
                    registered_at: SystemTime::now(),
                    completed_at: None,
                })
                .collect(),
            conditions: conditions
                .iter()
                .map(|condition| ConditionState {
                    name: condition.name.clone(),
                    kind: condition.kind,
                    threshold: condition.threshold,
                    failure: None,
                    waiting: None,
                    history: Default::default(),
                })
                .collect(),
            shutting_down: None,
            generation: 0,
        };
        let paths = Arc::new(paths);
        let first = Arc::new(snapshot_of(&state, &service, &paths));
        let (published, _) = watch::channel(first.clone());
        let (shutdown_signal, _) = watch::channel(None);
        Store {
            service,
            paths,
            cells,
            steps,
            conditions,
            shutdown,
            expected_boot,
            state: Mutex::new(state),
            current: ArcSwap::new(first),
            generation: AtomicU64::new(0),
            published,
            shutdown_signal,
        }
    }

    /// The current snapshot; loading it takes no lock shared with the writers.
    pub(crate) fn snapshot(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// The generation of the current snapshot, without loading it.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// A receiver of every published snapshot.
    pub(crate) fn subscribe(&self) -> watch::Receiver<Arc<Snapshot>> {
        self.published.subscribe()
    }

    /// A receiver of the shutdown trigger.
    pub(crate) fn shutdown_signal(&self) -> watch::Receiver<Option<Instant>> {
        self.shutdown_signal.subscribe()
    }

    /// Whether check `index` is healthy (by its hysteresis) right now.
    pub(crate) fn is_healthy(&self, index: usize) -> bool {
        self.state.lock().checks[index].evidence.healthy
    }

    /// Applies one observation and publishes the result.
    pub(crate) fn observe(&self, observation: Observation) -> Applied {
        let touched = match &observation {
            Observation::Polled { check, .. } => Some((*check, true)),
            Observation::Reported { check, .. } => Some((*check, false)),
            _ => None,
        };
        let mut state = self.state.lock();
        let warned = touched.is_some_and(|(index, _)| warns(&state.checks[index]));
        let applied = apply(&mut state, &self.cells, observation);
        state.generation += 1;
        let snapshot = Arc::new(snapshot_of(&state, &self.service, &self.paths));
        let shutting_down = state.shutting_down;
        // Published under the writers' lock, so two observations applied at once are published
        // in the order they were applied: an older snapshot never replaces a newer one.
        self.current.store(snapshot.clone());
        self.generation.store(state.generation, Ordering::Release);
        self.published.send_replace(snapshot);
        drop(state);
        if applied.first_shutdown {
            self.shutdown_signal.send_replace(shutting_down);
        }
        if let Some((index, polled)) = touched {
            let snapshot = self.current.load();
            announce(
                &self.cells[index],
                &snapshot.checks[index],
                applied.transition,
                polled,
                warned,
            );
        }
        applied
    }
}

/// Whether a check's last result passed with a warning (a busy pool, a self-check outranked by
/// the requests it serves): readiness reads `warn`.
fn warns(state: &CheckState) -> bool {
    state
        .last()
        .is_some_and(|last| last.ok && last.warning.is_some())
}

/// A check's poll and transition, to the metrics and (for a transition) the log: one structured
/// event per transition, with the reason's class and the counts behind it, and one each time a
/// passing check starts or stops warning (`warned`: whether it warned before), so "busy, not
/// broken" shows in the log as a fall does.
fn announce(
    cell: &Cell,
    state: &CheckState,
    transition: Option<Transition>,
    polled: bool,
    warned: bool,
) {
    crate::metrics::record_check(&cell.name, cell.tier, state, transition, polled);
    let warning = state
        .last()
        .filter(|last| last.ok)
        .and_then(|last| last.warning.as_deref());
    match (warned, warning) {
        (false, Some(warning)) => tracing::warn!(
            target: "probity::check",
            check = %cell.name,
            tier = %cell.tier,
            from = "pass",
            to = "warn",
            reason = warning,
            "check passes with a warning: degraded, still serving"
        ),
        (true, None) if state.last().is_some_and(|last| last.ok) => tracing::info!(
            target: "probity::check",
            check = %cell.name,
            tier = %cell.tier,
            from = "warn",
            to = "pass",
            "check passes without a warning again"
        ),
        _ => {}
    }
    let Some(transition) = transition else {
        return;
    };
    let (from, to) = match transition {
        Transition::Rose => ("unhealthy", "healthy"),
        Transition::Fell => ("healthy", "unhealthy"),
    };
    let class = state
        .last()
        .and_then(|last| last.kind)
        .map_or("none", FailureKind::as_str);
    let message = state
        .last()
        .and_then(|last| last.message.as_deref())
        .unwrap_or("");
    match transition {
        Transition::Fell => tracing::warn!(
            target: "probity::check",
            check = %cell.name,
            tier = %cell.tier,
            from,
            to,
            class,
            consecutive_failures = state.consecutive_failures(),
            reason = message,
            "check turned unhealthy"
        ),
        Transition::Rose => tracing::info!(
            target: "probity::check",
            check = %cell.name,
            tier = %cell.tier,
            from,
            to,
            consecutive_successes = state.consecutive_successes(),
            "check turned healthy"
        ),
    }
}

fn snapshot_of(state: &State, service: &Option<Arc<str>>, paths: &Arc<ProbePaths>) -> Snapshot {
    Snapshot {
        service: service.clone(),
        paths: paths.clone(),
        checks: state.checks.clone(),
        steps: state.steps.clone().into(),
        conditions: state.conditions.clone().into(),
        shutting_down: state.shutting_down,
        generation: state.generation,
    }
}

fn apply(state: &mut State, cells: &[Cell], observation: Observation) -> Applied {
    let mut applied = Applied::default();
    match observation {
        Observation::Polled { check, result } => {
            applied.transition = record(state, &cells[check], check, result, false);
        }
        Observation::Reported { check, message, at } => {
            let previous = state.checks[check].last.as_ref().map(|last| last.duration);
            let result = LastResult {
                ok: false,
                at,
                // A report is not a poll: keep the timing of the last poll.
                duration: previous.unwrap_or_default(),
                kind: Some(FailureKind::of_message(&message)),
                message: Some(message),
                measurements: Vec::new(),
                warning: None,
            };
            applied.transition = record(state, &cells[check], check, result, true);
        }
        Observation::StepCompleted { step } => {
            let was_started = state.steps.iter().all(|step| step.complete);
            let state_step = &mut state.steps[step];
            if !state_step.complete {
                state_step.completed_at = Some(SystemTime::now());
            }
            state_step.complete = true;
            state_step.note = None;
            let now_started = state.steps.iter().all(|step| step.complete);
            if now_started && !was_started {
                applied.unhealthy_at_start = state
                    .checks
                    .iter()
                    .enumerate()
                    .filter(|(_, check)| !check.evidence.healthy)
                    .map(|(index, _)| index)
                    .collect();
            }
        }
        Observation::StepWaiting { step, note } => {
            let step = &mut state.steps[step];
            if !step.complete {
                step.note = Some(note);
            }
        }
        Observation::ConditionFailed { .. }
        | Observation::ConditionCleared { .. }
        | Observation::ConditionWaiting { .. } => apply_condition(state, observation),
        Observation::ShutdownStarted { at } => {
            if state.shutting_down.is_none() {
                state.shutting_down = Some(at);
                applied.first_shutdown = true;
            }
        }
    }
    applied
}

/// A liveness condition's observation, and its history when its phase changes.
fn apply_condition(state: &mut State, observation: Observation) {
    let index = match &observation {
        Observation::ConditionFailed { condition, .. }
        | Observation::ConditionCleared { condition }
        | Observation::ConditionWaiting { condition, .. } => *condition,
        _ => return,
    };
    let before = state.conditions[index].phase();
    match observation {
        Observation::ConditionFailed { condition, failure } => {
            let condition = &mut state.conditions[condition];
            // A declared state keeps its first reason; watchdog reasons update.
            if !matches!(condition.failure, Some(ConditionFailure::Declared(_))) {
                condition.failure = Some(failure);
                condition.waiting = None;
            }
        }
        Observation::ConditionCleared { condition } => {
            let condition = &mut state.conditions[condition];
            if !matches!(condition.failure, Some(ConditionFailure::Declared(_))) {
                condition.failure = None;
                condition.waiting = None;
            }
        }
        Observation::ConditionWaiting { condition, wait } => {
            let condition = &mut state.conditions[condition];
            if !matches!(condition.failure, Some(ConditionFailure::Declared(_))) {
                condition.failure = None;
                condition.waiting = Some(wait);
            }
        }
        _ => {}
    }
    let condition = &mut state.conditions[index];
    let after = condition.phase();
    condition.history.record(SystemTime::now(), before, after);
}

/// Whether a failure is this instance's own: a resource it holds ran out (no pooled connection
/// within the budget while the database answers, connections held past the leak bound). The
/// checks say so with [`FailureKind::Exhausted`]; a fallback never covers it, since draining
/// this instance is the cure and no other instance shares it.
fn is_local(result: &LastResult) -> bool {
    !result.ok && result.kind == Some(FailureKind::Exhausted)
}

/// One poll (or a passive failure) through the check's hysteresis into its published state.
fn record(
    state: &mut State,
    cell: &Cell,
    index: usize,
    result: LastResult,
    forced: bool,
) -> Option<Transition> {
    let machine = &mut state.machines[index];
    let transition = if forced {
        machine.force_unhealthy()
    } else {
        machine.observe(result.ok)
    };
    let previous = &state.checks[index];
    let was_local = previous
        .evidence
        .last
        .as_ref()
        .is_some_and(|last| !last.ok && last.local);
    let mut next = CheckState::clone(previous);
    next.evidence.healthy = machine.is_healthy();
    next.evidence.consecutive_successes = machine.consecutive_successes();
    next.consecutive_failures = if forced {
        previous.consecutive_failures.max(cell.passive_failures)
    } else {
        machine.consecutive_failures()
    };
    let at = result.at;
    // Wall clock for the page a person reads; the decisions above use the monotonic clock.
    let wall = SystemTime::now();
    if !forced {
        next.history.record_poll(wall, result.duration, result.ok);
    }
    if let Some(transition) = transition {
        next.history.record_transition(
            wall,
            matches!(transition, Transition::Rose),
            result.kind,
            forced,
        );
    }
    if result.ok && !forced {
        next.last_success = Some(at);
    }
    match transition {
        Some(Transition::Rose) => {
            next.last_transition = Some(at);
            next.evidence.unhealthy_since = None;
        }
        Some(Transition::Fell) => {
            next.last_transition = Some(at);
            next.evidence.unhealthy_since = Some(crate::moment::moment(at));
        }
        None => {}
    }
    next.evidence.last = Some(Sample {
        at: crate::moment::moment(at),
        ok: result.ok,
        warning: result.warning.is_some(),
        // A passive report cannot tell this instance's exhaustion from a database every
        // instance lost: a cut strands the whole pool, and its requests time out as they would
        // behind a leak. Only a poll decides whether a fault is local (the immediate re-poll the
        // report triggers); until then a fallback may serve, so a shared outage never drains
        // the fleet for a moment — and a report after a poll found the fault local keeps it so,
        // or the instance would flap between drained and degraded at the request rate.
        local: if forced { was_local } else { is_local(&result) },
    });
    next.last = Some(result);
    state.checks[index] = Arc::new(next);
    transition
}
