//! The kubelet's probes: each probe worker's ticker, the probe calls, the results manager
//! and the pod's Ready condition.
//!
//! The worker's rules (initial results, gating, thresholds, the hold) are
//! [`probity_contract::kube::prober`]'s; this module drives them in simulated time:
//! - `worker.go` `run`: one ticker of `periodSeconds` per worker. Go's ticker buffers one tick
//!   and drops the rest, so a tick during a slow probe runs right after it;
//! - `prober_manager.go` `UpdatePodStatus`: a started container without a successful
//!   readiness result triggers its readiness worker at once (and resets its ticker);
//! - `results_manager.go` `Set`: only a change of value has effects; a liveness or startup
//!   Failure kills the container, a startup Success marks it Started.

mod steady;

use super::effects::{Effect, Effects};
use super::queue::{Event, Order};
use crate::report::KillReason;
use crate::scenario::ProbeSpec;
use crate::time::{Millis, at};
use probity_contract::kube::prober::{
    self, ContainerView, Gate, ProbeResult, ProbeWorker, Response, SetResult, initial_result,
};
use probity_contract::probe::ProbeKind;

/// The slot of a probe kind in per-pod arrays.
pub(super) fn slot(kind: ProbeKind) -> usize {
    match kind {
        ProbeKind::Liveness => 0,
        ProbeKind::Readiness => 1,
        ProbeKind::Startup => 2,
    }
}

/// A worker skipping its ticks in a steady state ([`steady`]).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Quiet {
    /// The worker skips its ticks.
    pub(super) quiet: bool,
    /// Its next tick, not yet counted.
    pub(super) next_due: Millis,
    /// Its skipped ticks probe (else the startup gate holds them).
    pub(super) probes: bool,
}

/// A worker's ticker.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Ticker {
    /// Bumped when the ticker is reset, cancelling its pending tick.
    pub(super) epoch: u32,
    /// A probe is in flight.
    pub(super) busy: bool,
    /// A tick arrived while busy: probe again when the result is in.
    pub(super) pending: bool,
    /// The worker skips its ticks in a steady state ([`steady`]).
    pub(super) quiet: Quiet,
}

/// What the kubelet sees of a pod's container when one of its workers acts.
#[derive(Debug, Clone, Copy)]
pub(super) struct Seen {
    /// The container as the prober takes it (none before the first).
    pub(super) view: Option<ContainerView>,
    /// The current container's ID.
    pub(super) container: u32,
    /// Running: neither waiting nor terminating.
    pub(super) running: bool,
    /// When it started.
    pub(super) started_at: Millis,
    /// `ContainerStatus.Started`.
    pub(super) started: bool,
    /// Whether its process answered the last readiness probe with a failure (none: no
    /// process).
    pub(super) answered_unready: Option<bool>,
}

/// The kubelet's probing of the fleet: the container's probes, each pod's workers, and the
/// pods' Ready conditions.
#[derive(Debug)]
pub(super) struct Probers {
    /// The container's probes, by slot (an operator's fix may remove some).
    specs: [Option<ProbeSpec>; 3],
    /// Each pod's workers, tickers and results.
    pods: Vec<PodProbes>,
    /// Each pod's Ready condition.
    ready: Vec<bool>,
    /// Probes sent so far (those a quiet worker skipped counted when it wakes).
    sent: u64,
}

impl Probers {
    /// The probes of a scenario's container, for `pods` pods that have seen no container.
    pub(super) fn new(scenario: &crate::scenario::Scenario, pods: usize) -> Self {
        let probes = &scenario.probes;
        Probers {
            specs: [probes.liveness, probes.readiness, probes.startup],
            pods: (0..pods).map(|_| PodProbes::new()).collect(),
            ready: vec![false; pods],
            sent: 0,
        }
    }

    /// The container's probe of a kind, if it has one.
    pub(super) fn spec(&self, kind: ProbeKind) -> Option<ProbeSpec> {
        self.specs[slot(kind)]
    }

    /// An operator's fix removes the probe of a kind.
    pub(super) fn remove(&mut self, kind: ProbeKind) {
        self.specs[slot(kind)] = None;
    }

    /// Probes sent so far.
    pub(super) fn sent(&self) -> u64 {
        self.sent
    }

    /// `pod` has long been running container `container`: its workers have watched it
    /// pass, it is Ready, and its tickers run at random phases (pods are admitted at
    /// different times; the worker probes at admission, then every period).
    pub(super) fn settled(
        &mut self,
        pod: usize,
        container: u32,
        rng: &mut fastrand::Rng,
        effects: &mut Effects,
    ) {
        self.pods[pod] = PodProbes::settled(container);
        self.ready[pod] = true;
        for kind in ProbeKind::ALL {
            if let Some(period) = self.spec(kind).as_ref().map(ProbeSpec::period) {
                let phase = rng.u64(0..period);
                self.schedule_tick(pod, kind, phase, effects);
            }
        }
    }

    /// A new pod at `when`: its workers start, probing at once and then every period.
    pub(super) fn add(&mut self, pod: usize, when: Millis, effects: &mut Effects) {
        for kind in ProbeKind::ALL {
            if self.spec(kind).is_some() {
                self.schedule_tick(pod, kind, when, effects);
            }
        }
    }

    /// `pod` has a new container: readiness starts failing, liveness passing, startup
    /// unknown.
    pub(super) fn new_container(&mut self, pod: usize) {
        self.pods[pod].new_container();
    }

    /// A new pod replaces `pod`: new workers; the old tickers stop.
    pub(super) fn replace(&mut self, pod: usize) {
        self.pods[pod].replace();
    }

    /// The worker of `kind` in `pod`.
    pub(super) fn worker(&self, pod: usize, kind: ProbeKind) -> &ProbeWorker {
        self.pods[pod].worker(kind)
    }

    /// The ticker of `kind` in `pod`.
    pub(super) fn ticker(&mut self, pod: usize, kind: ProbeKind) -> &mut Ticker {
        &mut self.pods[pod].tickers[slot(kind)]
    }

    /// The results manager's value for `kind` in `pod`.
    pub(super) fn result(&self, pod: usize, kind: ProbeKind) -> ProbeResult {
        self.pods[pod].result(kind)
    }

    /// Schedules a worker's tick at `when`, in its ticker's current epoch.
    fn schedule_tick(&mut self, pod: usize, kind: ProbeKind, when: Millis, effects: &mut Effects) {
        let epoch = self.ticker(pod, kind).epoch;
        effects.schedule(
            when,
            Event::ProbeTick {
                pod: pod as u32,
                slot: slot(kind) as u8,
                epoch,
            },
        );
    }

    /// A worker's ticker fires at `now`. The next tick takes its place in the queue now, as
    /// the kubelet's ticker does; returns that place when the worker probes now (the engine
    /// runs the probe, then [`Probers::ticked`] schedules the next tick, unless the worker
    /// goes quiet).
    pub(super) fn tick(
        &mut self,
        pod: usize,
        kind: ProbeKind,
        epoch: u32,
        now: Millis,
        effects: &mut Effects,
    ) -> Option<Order> {
        let period = self.spec(kind)?.period();
        let ticker = *self.ticker(pod, kind);
        if ticker.epoch != epoch {
            return None;
        }
        let order = effects.reserve();
        if ticker.busy {
            self.ticker(pod, kind).pending = true;
            let next = tick_event(pod, kind, epoch);
            effects.schedule_in_order(now + period, order, next);
            return None;
        }
        Some(order)
    }

    /// The tick of `epoch` probed (`answered`: whether it passed, when its result was
    /// recorded at once): its next tick takes the place `order`, unless the worker goes
    /// quiet ([`Probers::go_quiet`]).
    #[expect(
        clippy::too_many_arguments,
        reason = "the tick, what it met, and the pod"
    )]
    pub(super) fn ticked(
        &mut self,
        (pod, kind, epoch): (usize, ProbeKind, u32),
        order: Order,
        answered: Option<bool>,
        seen: &Seen,
        steady: &dyn Fn(crate::scenario::Handler) -> Option<bool>,
        now: Millis,
        effects: &mut Effects,
    ) {
        let Some(period) = self.spec(kind).map(|probe| probe.period()) else {
            return;
        };
        if self.ticker(pod, kind).epoch != epoch {
            // Reset while probing: the tick scheduled before would never run.
            return;
        }
        if !self.go_quiet(pod, kind, answered, seen, steady, now) {
            effects.schedule_in_order(now + period, order, tick_event(pod, kind, epoch));
        }
    }

    /// A manual trigger from `UpdatePodStatus` at `now`: the readiness ticker resets.
    /// Returns whether to probe readiness now (a probe in flight probes again when its
    /// result is in).
    pub(super) fn trigger_readiness(
        &mut self,
        pod: usize,
        now: Millis,
        current_order: Order,
        effects: &mut Effects,
    ) -> bool {
        let kind = ProbeKind::Readiness;
        let Some(period) = self.spec(kind).map(|probe| probe.period()) else {
            return false;
        };
        self.wake_worker(pod, kind, false, (now, current_order), effects);
        let ticker = self.ticker(pod, kind);
        ticker.epoch += 1;
        let busy = ticker.busy;
        self.schedule_tick(pod, kind, now + period, effects);
        if busy {
            self.ticker(pod, kind).pending = true;
        }
        !busy
    }

    /// A worker of `kind` in `pod` is about to probe at `now`: its gate decides (and may set
    /// a result). Returns the probe to send, if it probes.
    pub(super) fn gate(
        &mut self,
        pod: usize,
        kind: ProbeKind,
        seen: &Seen,
        now: Millis,
        effects: &mut Effects,
    ) -> Option<ProbeSpec> {
        let probe = self.spec(kind)?;
        let gated = self.pods[pod].workers[slot(kind)].gate(&probe.timing, at(now), seen.view);
        if let Some(set) = gated.set {
            self.set_result(pod, kind, set, seen.container, effects);
        }
        (gated.gate == Gate::Probe).then_some(probe)
    }

    /// The probe was sent to container `container` and met `(after, success)` (with its
    /// timeout applied). Returns whether it passed, when its result is recorded at once.
    pub(super) fn probed(
        &mut self,
        (pod, kind): (usize, ProbeKind),
        (after, success): (Millis, bool),
        container: u32,
        now: Millis,
        effects: &mut Effects,
    ) -> Option<bool> {
        self.sent += 1;
        if after == 0 {
            self.record(pod, kind, (container, success), container, effects);
            Some(success)
        } else {
            self.ticker(pod, kind).busy = true;
            effects.schedule(
                now + after,
                Event::ProbeDone {
                    pod: pod as u32,
                    slot: slot(kind) as u8,
                    container,
                    success,
                },
            );
            None
        }
    }

    /// A probe's result for container `container` is in; `current` is the pod's container
    /// now.
    pub(super) fn probe_done(
        &mut self,
        (pod, kind): (usize, ProbeKind),
        result: (u32, bool),
        current: u32,
        effects: &mut Effects,
    ) {
        self.ticker(pod, kind).busy = false;
        self.record(pod, kind, result, current, effects);
    }

    /// Whether a tick arrived while the probe was in flight: the worker probes again now.
    pub(super) fn take_pending(&mut self, pod: usize, kind: ProbeKind) -> bool {
        std::mem::take(&mut self.ticker(pod, kind).pending)
    }

    fn record(
        &mut self,
        pod: usize,
        kind: ProbeKind,
        (container, success): (u32, bool),
        current: u32,
        effects: &mut Effects,
    ) {
        let Some(probe) = self.spec(kind) else {
            return;
        };
        let worker = &mut self.pods[pod].workers[slot(kind)];
        if worker.container() != Some(container) {
            return;
        }
        if let Some(set) = worker.record(&probe.timing, success) {
            self.set_result(pod, kind, set, current, effects);
        }
    }

    /// The results manager: only a change of value has effects (the pod's container now is
    /// `current`).
    fn set_result(
        &mut self,
        pod: usize,
        kind: ProbeKind,
        set: SetResult,
        current: u32,
        effects: &mut Effects,
    ) {
        let probes = &mut self.pods[pod];
        if set.container != current || probes.result(kind) == set.result {
            return;
        }
        probes.results[slot(kind)] = set.result;
        match (kind, set.result) {
            (ProbeKind::Liveness, ProbeResult::Failure) => effects.push(Effect::Kill {
                pod,
                reason: KillReason::Liveness,
            }),
            (ProbeKind::Startup, ProbeResult::Failure) => effects.push(Effect::Kill {
                pod,
                reason: KillReason::Startup,
            }),
            (ProbeKind::Startup, ProbeResult::Success) => effects.push(Effect::Started(pod)),
            (ProbeKind::Readiness, _) => effects.push(Effect::ReadinessResult(pod)),
            _ => {}
        }
    }

    /// The pod's Ready condition (`prober::container_ready`) for a container that exists
    /// (`running`) and is `started`: returns it when it changed.
    pub(super) fn update_ready(
        &mut self,
        pod: usize,
        running: bool,
        started: bool,
    ) -> Option<bool> {
        let readiness = self
            .spec(ProbeKind::Readiness)
            .map(|_| self.result(pod, ProbeKind::Readiness));
        let ready = prober::container_ready(running, started, readiness);
        if ready == self.ready[pod] {
            return None;
        }
        self.ready[pod] = ready;
        Some(ready)
    }
}

/// The tick event of `kind`'s worker in `pod`, in `epoch`.
pub(super) fn tick_event(pod: usize, kind: ProbeKind, epoch: u32) -> Event {
    Event::ProbeTick {
        pod: pod as u32,
        slot: slot(kind) as u8,
        epoch,
    }
}

/// A pod's three probe workers, their tickers and the results manager's values.
#[derive(Debug)]
struct PodProbes {
    workers: [ProbeWorker; 3],
    pub(super) tickers: [Ticker; 3],
    results: [ProbeResult; 3],
}

impl PodProbes {
    /// Workers that have not seen a container yet.
    pub(super) fn new() -> Self {
        PodProbes {
            workers: ProbeKind::ALL.map(ProbeWorker::new),
            tickers: [Ticker::default(); 3],
            results: ProbeKind::ALL.map(initial_result),
        }
    }

    /// Workers that have long watched container `container` pass.
    pub(super) fn settled(container: u32) -> Self {
        PodProbes {
            workers: ProbeKind::ALL.map(|kind| ProbeWorker::settled(kind, container)),
            tickers: [Ticker::default(); 3],
            results: [ProbeResult::Success; 3],
        }
    }

    /// A new container ID: readiness starts failing, liveness passing, startup unknown.
    pub(super) fn new_container(&mut self) {
        self.results = ProbeKind::ALL.map(initial_result);
    }

    /// A new pod replaces this one: new workers; the old tickers stop.
    pub(super) fn replace(&mut self) {
        self.workers = ProbeKind::ALL.map(ProbeWorker::new);
        for ticker in &mut self.tickers {
            ticker.epoch += 1;
            ticker.busy = false;
            ticker.pending = false;
            ticker.quiet = Quiet::default();
        }
    }

    /// The worker of a kind.
    pub(super) fn worker(&self, kind: ProbeKind) -> &ProbeWorker {
        &self.workers[slot(kind)]
    }

    /// The results manager's value for a kind.
    pub(super) fn result(&self, kind: ProbeKind) -> ProbeResult {
        self.results[slot(kind)]
    }
}

/// What a caller with `timeout` makes of an answer (`None`: the call hangs): the time until
/// it has a result, and whether it passed (`prober::outcome`: a timeout is a failure).
pub(super) fn within(answer: Option<(u64, bool)>, timeout: u64) -> (u64, bool) {
    let response = match answer {
        None => Response::Hung,
        Some((latency, passed)) => Response::Answered {
            after: at(latency),
            passed,
        },
    };
    let outcome = prober::outcome(response, at(timeout));
    (crate::time::millis(outcome.after), outcome.success)
}
