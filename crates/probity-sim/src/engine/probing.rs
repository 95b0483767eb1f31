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

use super::Sim;
use super::queue::Event;
use crate::report::KillReason;
use crate::scenario::ProbeSpec;
use crate::time::Millis;
use crate::time::at;
use probity_contract::kube::prober::{
    self, Gate, ProbeResult, ProbeWorker, Response, SetResult, initial_result,
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

/// A worker skipping its ticks in a steady state ([`super::steady`]).
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
    /// The worker skips its ticks in a steady state ([`super::steady`]).
    pub(super) quiet: Quiet,
}

/// The kubelet's probing of the fleet: the container's probes, and each pod's workers.
#[derive(Debug)]
pub(super) struct Probers {
    /// The container's probes, by slot (an operator's fix may remove some).
    specs: [Option<ProbeSpec>; 3],
    /// Each pod's workers, tickers and results.
    pub(super) pods: Vec<PodProbes>,
}

impl Probers {
    /// The probes of a scenario's container, for `pods` pods that have seen no container.
    pub(super) fn new(scenario: &crate::scenario::Scenario, pods: usize) -> Self {
        let probes = &scenario.probes;
        Probers {
            specs: [probes.liveness, probes.readiness, probes.startup],
            pods: (0..pods).map(|_| PodProbes::new()).collect(),
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

    /// `pod`'s workers have long watched container `container` pass.
    pub(super) fn settled(&mut self, pod: usize, container: u32) {
        self.pods[pod] = PodProbes::settled(container);
    }
}

/// A pod's three probe workers, their tickers and the results manager's values.
#[derive(Debug)]
pub(super) struct PodProbes {
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

impl Sim<'_> {
    /// The container's probe of a kind, if it has one (an operator's fix may remove some).
    pub(super) fn probe(&self, kind: ProbeKind) -> Option<ProbeSpec> {
        self.probers.spec(kind)
    }

    /// Schedules a worker's tick at `when`, in its ticker's current epoch.
    pub(super) fn schedule_probe_tick(&mut self, pod: usize, kind: ProbeKind, when: u64) {
        let epoch = self.probers.pods[pod].tickers[slot(kind)].epoch;
        self.effects.schedule(
            when,
            Event::ProbeTick {
                pod: pod as u32,
                slot: slot(kind) as u8,
                epoch,
            },
        );
    }

    /// A worker's ticker fires. The next tick takes its place in the queue now, as the
    /// kubelet's ticker does, but is left unscheduled if the worker goes quiet.
    pub(super) fn probe_tick(&mut self, pod: usize, kind: ProbeKind, epoch: u32) {
        let Some(period) = self.probe(kind).map(|probe| probe.period()) else {
            return;
        };
        let ticker = self.probers.pods[pod].tickers[slot(kind)];
        if ticker.epoch != epoch {
            return;
        }
        let order = self.effects.reserve();
        let next = Event::ProbeTick {
            pod: pod as u32,
            slot: slot(kind) as u8,
            epoch,
        };
        if ticker.busy {
            self.probers.pods[pod].tickers[slot(kind)].pending = true;
            self.effects
                .schedule_in_order(self.now + period, order, next);
            return;
        }
        let answered = self.run_probe(pod, kind);
        if self.probers.pods[pod].tickers[slot(kind)].epoch != epoch {
            // Reset while probing: the tick scheduled before would never run.
            return;
        }
        if !self.go_quiet(pod, kind, answered) {
            self.effects
                .schedule_in_order(self.now + period, order, next);
        }
    }

    /// A manual trigger from `UpdatePodStatus`: probe readiness now and reset its ticker.
    pub(super) fn manual_readiness_trigger(&mut self, pod: usize) {
        let kind = ProbeKind::Readiness;
        let Some(period) = self.probe(kind).map(|probe| probe.period()) else {
            return;
        };
        self.wake_worker(pod, kind, false);
        let ticker = &mut self.probers.pods[pod].tickers[slot(kind)];
        ticker.epoch += 1;
        let busy = ticker.busy;
        self.schedule_probe_tick(pod, kind, self.now + period);
        if busy {
            self.probers.pods[pod].tickers[slot(kind)].pending = true;
        } else {
            let _ = self.run_probe(pod, kind);
        }
    }

    /// Runs a probe if the worker's gate lets it. Returns whether it passed, when its result
    /// was recorded at once.
    fn run_probe(&mut self, pod: usize, kind: ProbeKind) -> Option<bool> {
        let probe = self.probe(kind)?;
        let view = self.container_view(pod);
        let gated =
            self.probers.pods[pod].workers[slot(kind)].gate(&probe.timing, at(self.now), view);
        if let Some(set) = gated.set {
            self.set_result(pod, kind, set);
        }
        if gated.gate != Gate::Probe {
            return None;
        }
        let answer = self.respond(pod, probe.handler);
        if kind == ProbeKind::Readiness
            && let Some((_, passed)) = answer
        {
            self.readiness_answered(pod, passed);
        }
        let (after, success) = within(answer, probe.timeout());
        self.measure.probe_requests += 1;
        let container = self.pods[pod].container_id;
        if after == 0 {
            self.record_probe(pod, kind, container, success);
            Some(success)
        } else {
            self.probers.pods[pod].tickers[slot(kind)].busy = true;
            self.effects.schedule(
                self.now + after,
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

    /// A probe's result is in.
    pub(super) fn probe_done(
        &mut self,
        pod: usize,
        kind: ProbeKind,
        container: u32,
        success: bool,
    ) {
        self.probers.pods[pod].tickers[slot(kind)].busy = false;
        self.record_probe(pod, kind, container, success);
        let ticker = &mut self.probers.pods[pod].tickers[slot(kind)];
        if ticker.pending {
            ticker.pending = false;
            let _ = self.run_probe(pod, kind);
        }
    }

    fn record_probe(&mut self, pod: usize, kind: ProbeKind, container: u32, success: bool) {
        let Some(probe) = self.probe(kind) else {
            return;
        };
        let worker = &mut self.probers.pods[pod].workers[slot(kind)];
        if worker.container() != Some(container) {
            return;
        }
        if let Some(set) = worker.record(&probe.timing, success) {
            self.set_result(pod, kind, set);
        }
    }

    /// The results manager: only a change of value has effects.
    fn set_result(&mut self, pod: usize, kind: ProbeKind, set: SetResult) {
        let probes = &mut self.probers.pods[pod];
        if set.container != self.pods[pod].container_id || probes.result(kind) == set.result {
            return;
        }
        probes.results[slot(kind)] = set.result;
        match (kind, set.result) {
            (ProbeKind::Liveness, ProbeResult::Failure) => self.kill(pod, KillReason::Liveness),
            (ProbeKind::Startup, ProbeResult::Failure) => self.kill(pod, KillReason::Startup),
            (ProbeKind::Startup, ProbeResult::Success) if self.pods[pod].running() => {
                self.pods[pod].started = true;
                self.manual_readiness_trigger(pod);
                self.update_pod_ready(pod);
                self.pod_changed(pod);
            }
            (ProbeKind::Readiness, _) => self.update_pod_ready(pod),
            _ => {}
        }
    }

    /// The pod's Ready condition (`prober::container_ready`), pushed to the endpoints when
    /// it changes.
    pub(super) fn update_pod_ready(&mut self, pod: usize) {
        let state = &self.pods[pod];
        let readiness = self
            .probe(ProbeKind::Readiness)
            .map(|_| self.probers.pods[pod].result(ProbeKind::Readiness));
        let running = state.has_container();
        let ready = prober::container_ready(running, state.started, readiness);
        if ready == state.pod_ready {
            return;
        }
        self.pods[pod].pod_ready = ready;
        self.readiness_changed(pod, ready);
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
