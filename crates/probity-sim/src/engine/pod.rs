//! Pod lifecycle: containers starting, booting, being killed, exiting and restarting through
//! CrashLoopBackOff, and the app process inside.
//!
//! The kubelet's rules come from [`probity_contract::kube`]: the restart decision of
//! `doBackOff` ([`CrashLoopBackOff`]), the grace period and the preStop hook of
//! `killContainer` ([`StopSequence`]).

use super::effects::Effects;
use super::probing::Seen;
use super::queue::Event;
use crate::report::LaneState;
use crate::scenario::{BackoffRequeue, FaultKind, Scenario};
use crate::time::Millis;
use crate::time::{at, millis};
use probity_contract::kube::backoff::{
    CrashLoopBackOff, POD_WORKER_RETRY, POD_WORKER_RETRY_JITTER, RestartDecision,
};
use probity_contract::kube::prober::ContainerView;
use probity_contract::kube::termination::{StopCause, StopSequence, grace_period};

/// Where the pod's container is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Container {
    /// No container yet, or waiting to restart.
    Waiting,
    /// Running.
    Running,
    /// Killed: still running until it exits.
    Terminating,
}

/// One pod of the fleet.
#[derive(Debug)]
pub(super) struct Pod {
    pub(super) container: Container,
    /// The current container's ID (0 before the first); a new one at each start.
    pub(super) container_id: u32,
    pub(super) started_at: Millis,
    /// `ContainerStatus.Started`.
    pub(super) started: bool,
    /// FinishedAt of the newest exited container.
    pub(super) last_finished: Option<Millis>,
    pub(super) backoff: CrashLoopBackOff,
    /// Cancels a scheduled start that a later decision replaced.
    pub(super) start_epoch: u32,
    /// The restart decided in the sync that killed the container.
    pub(super) restart_after_kill: Option<RestartDecision>,
    pub(super) process: Option<Process>,
    /// An operator took it out of rotation.
    pub(super) manual_drained: bool,
    /// Its process exits this long after each start (a crash-on-start fault).
    pub(super) crashes_after: Option<Millis>,
}

impl Pod {
    /// A pod with no container yet.
    pub(super) fn new() -> Self {
        Pod {
            container: Container::Waiting,
            container_id: 0,
            started_at: 0,
            started: false,
            last_finished: None,
            backoff: CrashLoopBackOff::default(),
            start_epoch: 0,
            restart_after_kill: None,
            process: None,
            manual_drained: false,
            crashes_after: None,
        }
    }

    /// The process, while it handles requests at all: running, listening, neither stalled
    /// nor deadlocked.
    pub(super) fn serving(&self) -> Option<&Process> {
        self.process.as_ref().filter(|process| {
            self.container != Container::Waiting
                && process.listening
                && !process.stalled
                && process.deadlocked_at.is_none()
        })
    }

    /// Whether the pod accepts connections (else a connect is refused, or reset).
    pub(super) fn accepts(&self) -> bool {
        self.container != Container::Waiting
            && self
                .process
                .as_ref()
                .is_some_and(|process| process.listening)
    }

    /// Whether its container is running (neither waiting nor terminating).
    pub(super) fn running(&self) -> bool {
        self.container == Container::Running
    }

    /// Whether it has a container that has not exited (running or terminating).
    pub(super) fn has_container(&self) -> bool {
        self.container != Container::Waiting
    }

    /// Its lane in the report, in rotation (`member`) or not.
    pub(super) fn lane(&self, member: bool) -> LaneState {
        match (self.container, self.process.as_ref()) {
            (Container::Running, Some(process)) if !process.booted || !self.started => {
                LaneState::Booting
            }
            (Container::Running, Some(_)) if member => LaneState::Ready,
            (Container::Running, Some(_)) => LaneState::OutOfRotation,
            _ => LaneState::Restarting,
        }
    }

    /// Whether leaving rotation now is a drain: its app is up and no operator drained it.
    pub(super) fn drainable(&self) -> bool {
        self.running()
            && self.process.as_ref().is_some_and(|process| process.booted)
            && !self.manual_drained
    }

    /// What the kubelet sees of it.
    pub(super) fn seen(&self) -> Seen {
        Seen {
            view: (self.container_id > 0).then(|| ContainerView {
                id: self.container_id,
                running: self.container != Container::Waiting,
                started_at: at(self.started_at),
                started: self.started,
            }),
            container: self.container_id,
            running: self.running(),
            started_at: self.started_at,
            started: self.started,
            answered_unready: self
                .process
                .as_ref()
                .map(|process| process.answered_unready),
        }
    }

    /// Whether its app is still booting.
    pub(super) fn booting(&self) -> bool {
        self.container != Container::Waiting
            && self.process.as_ref().is_some_and(|process| !process.booted)
    }
}

/// The application process in a container.
#[derive(Debug)]
pub(super) struct Process {
    /// The container ID it runs in.
    pub(super) id: u32,
    pub(super) booted: bool,
    pub(super) listening: bool,
    pub(super) boot: BootProgress,
    pub(super) sigterm_at: Option<Millis>,
    pub(super) deadlocked_at: Option<Millis>,
    pub(super) ignores_sigterm: bool,
    pub(super) stalled: bool,
    /// Dependencies whose pool leaked dry, one bit each.
    pub(super) pool_exhausted: u64,
    /// Hung health-check calls: when each ends and which dependency it holds.
    pub(super) inflight: Vec<(Millis, u16)>,
    /// The last answer to a readiness probe was a failure.
    pub(super) answered_unready: bool,
}

impl Process {
    /// A process that has long been up: booted, every check healthy.
    pub(super) fn settled(id: u32) -> Self {
        Process {
            id,
            booted: true,
            listening: true,
            boot: BootProgress::done(),
            sigterm_at: None,
            deadlocked_at: None,
            ignores_sigterm: false,
            stalled: false,
            pool_exhausted: 0,
            inflight: Vec::new(),
            answered_unready: false,
        }
    }

    /// Whether the pool to `dependency` leaked dry.
    pub(super) fn pool_exhausted(&self, dependency: usize) -> bool {
        self.pool_exhausted & (1 << dependency) != 0
    }

    /// Pool connections that hung health-check calls to `dependency` hold at `now`.
    pub(super) fn held(&self, dependency: usize, now: Millis) -> usize {
        self.inflight
            .iter()
            .filter(|(end, on)| *end > now && usize::from(*on) == dependency)
            .count()
    }
}

/// How far a boot has got: it progresses at `rate` (1 = full speed) from `since` on.
#[derive(Debug, Clone, Copy)]
pub(super) struct BootProgress {
    pub(super) remaining: Millis,
    pub(super) rate: f64,
    pub(super) since: Millis,
    pub(super) epoch: u32,
}

impl BootProgress {
    fn done() -> Self {
        BootProgress {
            remaining: 0,
            rate: 1.0,
            since: 0,
            epoch: 0,
        }
    }
}

/// The fleet's pods, by index. Read with `pods[pod]`; changed only through its handlers.
#[derive(Debug)]
pub(super) struct Pods<'a> {
    scenario: &'a Scenario,
    pods: Vec<Pod>,
}

impl std::ops::Index<usize> for Pods<'_> {
    type Output = Pod;

    fn index(&self, pod: usize) -> &Pod {
        &self.pods[pod]
    }
}

impl<'a> Pods<'a> {
    /// A scenario's pods, none with a container yet.
    pub(super) fn new(scenario: &'a Scenario) -> Self {
        Pods {
            scenario,
            pods: (0..scenario.fleet.replicas).map(|_| Pod::new()).collect(),
        }
    }

    /// How many pods there are.
    pub(super) fn len(&self) -> usize {
        self.pods.len()
    }

    /// `pod` has run for a long time: its first container booted and started, its process
    /// settled.
    pub(super) fn settle(&mut self, pod: usize) {
        let state = &mut self.pods[pod];
        state.container = Container::Running;
        state.container_id = 1;
        state.started_at = 0;
        state.started = true;
        state.process = Some(Process::settled(1));
    }

    /// Schedules the start of `pod`'s container at `when`.
    pub(super) fn schedule_start(&self, pod: usize, when: Millis, effects: &mut Effects) {
        effects.schedule(
            when,
            Event::StartContainer {
                pod: pod as u32,
                epoch: self.pods[pod].start_epoch,
            },
        );
    }

    /// Whether a scheduled start of `epoch` is current: the pod waits for it.
    pub(super) fn start_due(&self, pod: usize, epoch: u32) -> bool {
        let state = &self.pods[pod];
        state.start_epoch == epoch && state.container == Container::Waiting
    }

    /// The kubelet's `doBackOff` at `now`: start now, or wait.
    pub(super) fn decide_start(&mut self, pod: usize, now: Millis) -> RestartDecision {
        let state = &mut self.pods[pod];
        let newest = state.last_finished;
        state.backoff.decide(newest.map(at), at(now))
    }

    /// Retries the start of `pod` at `until` or, with the pod worker's jitter, at its first
    /// retry after it.
    pub(super) fn schedule_retry(
        &mut self,
        pod: usize,
        until: Millis,
        now: Millis,
        rng: &mut fastrand::Rng,
        effects: &mut Effects,
    ) {
        let retry_at = match self.scenario.kubelet.backoff_requeue {
            BackoffRequeue::Exact => until,
            BackoffRequeue::Jitter => {
                // The pod worker retries every wait.Jitter(10s, 0.5): 10–15 s apart.
                let base = millis(POD_WORKER_RETRY);
                let spread = (base as f64 * POD_WORKER_RETRY_JITTER) as Millis;
                let mut retry = now;
                while retry < until {
                    retry += base + rng.u64(0..spread);
                }
                retry
            }
        };
        let state = &mut self.pods[pod];
        state.start_epoch += 1;
        let epoch = state.start_epoch;
        effects.schedule(
            retry_at.max(now),
            Event::StartContainer {
                pod: pod as u32,
                epoch,
            },
        );
    }

    /// `pod`'s container starts at `now` (`Started` at once without a startup probe) with a
    /// new process booting. Returns the process, and whether it is a restart.
    pub(super) fn start_container(
        &mut self,
        pod: usize,
        started: bool,
        now: Millis,
    ) -> (u32, bool) {
        let app = &self.scenario.app;
        let state = &mut self.pods[pod];
        let restart = state.container_id > 0;
        state.container_id += 1;
        let id = state.container_id;
        state.container = Container::Running;
        state.started_at = now;
        state.restart_after_kill = None;
        state.started = started;
        state.process = Some(Process {
            id,
            booted: false,
            listening: app.listen_during_boot,
            boot: BootProgress {
                remaining: app.boot,
                rate: 1.0,
                since: now,
                epoch: 0,
            },
            sigterm_at: None,
            deadlocked_at: None,
            ignores_sigterm: false,
            stalled: false,
            pool_exhausted: 0,
            inflight: Vec::new(),
            answered_unready: false,
        });
        (id, restart)
    }

    /// A pod that crashes on start: its running container exits `after` its start.
    pub(super) fn schedule_crash(&self, pod: usize, now: Millis, effects: &mut Effects) {
        let state = &self.pods[pod];
        if let Some(after) = state.crashes_after
            && state.container == Container::Running
        {
            effects.schedule(
                now + after,
                Event::CrashExit {
                    pod: pod as u32,
                    container: state.container_id,
                },
            );
        }
    }

    /// Re-times `pod`'s boot at `now`, progressing at `rate` from now on.
    pub(super) fn retime_boot(
        &mut self,
        pod: usize,
        rate: f64,
        now: Millis,
        effects: &mut Effects,
    ) {
        let Some(process) = self.pods[pod].process.as_mut() else {
            return;
        };
        if process.booted {
            return;
        }
        let boot = &mut process.boot;
        let done = ((now - boot.since) as f64 * boot.rate) as Millis;
        boot.remaining = boot.remaining.saturating_sub(done);
        boot.since = now;
        if (rate - boot.rate).abs() < 1e-12 && boot.epoch > 0 {
            return;
        }
        boot.rate = rate;
        boot.epoch += 1;
        let (id, epoch, remaining) = (process.id, boot.epoch, boot.remaining);
        if rate > 0.0 {
            let done_at = now + (remaining as f64 / rate).ceil() as Millis;
            effects.schedule(
                done_at,
                Event::BootDone {
                    pod: pod as u32,
                    process: id,
                    epoch,
                },
            );
        }
    }

    /// The boot of `epoch` in `process` finished: the app listens and serves. Returns whether
    /// it was the current boot.
    pub(super) fn boot_done(&mut self, pod: usize, process: u32, epoch: u32) -> bool {
        let Some(state) = self.pods[pod].process.as_mut() else {
            return false;
        };
        if state.id != process || state.boot.epoch != epoch || state.booted {
            return false;
        }
        state.booted = true;
        state.listening = true;
        true
    }

    /// The kubelet kills `pod`'s running container at `now` (a probe's own grace period, if
    /// it has one, in `probe_grace`), and decides in the same sync whether to start it
    /// again (`computePodActions`, `doBackOff` on the pre-kill status). The container exits
    /// after its preStop hook and its drain, or at the grace period's end.
    pub(super) fn kill(
        &mut self,
        pod: usize,
        probe_grace: Option<Millis>,
        now: Millis,
        effects: &mut Effects,
    ) {
        let scenario = self.scenario;
        let grace = grace_period(
            at(scenario.fleet.termination_grace),
            StopCause::ProbeFailure(probe_grace.map(at)),
        );
        let stop = StopSequence::new(grace, at(scenario.pre_stop_sleep));
        let (pre_stop, signal_to_kill) = (millis(stop.pre_stop), millis(stop.signal_to_kill));
        let decision = self.decide_start(pod, now);
        let app = &scenario.app;
        let state = &mut self.pods[pod];
        state.container = Container::Terminating;
        state.restart_after_kill = Some(decision);
        let container = state.container_id;
        let mut exit_after = pre_stop;
        if let Some(process) = state.process.as_mut() {
            process.sigterm_at = Some(now + pre_stop);
            let wedged =
                process.stalled || (process.deadlocked_at.is_some() && process.ignores_sigterm);
            exit_after += if wedged {
                signal_to_kill
            } else {
                app.drain_delay
                    .unwrap_or(app.exit_after_sigterm)
                    .min(signal_to_kill)
            };
            if app.drain_delay.is_none() && !wedged {
                process.listening = false;
            }
        }
        effects.schedule(
            now + exit_after,
            Event::KillDone {
                pod: pod as u32,
                container,
            },
        );
    }

    /// Whether a killed container `container` is the one terminating.
    pub(super) fn kill_due(&self, pod: usize, container: u32) -> bool {
        let state = &self.pods[pod];
        state.container_id == container && state.container == Container::Terminating
    }

    /// The restart decided when the container was killed, and the backoff then.
    pub(super) fn take_restart(&mut self, pod: usize) -> (Option<RestartDecision>, Millis) {
        let state = &mut self.pods[pod];
        let backoff = state.backoff.current().map_or(0, millis);
        (state.restart_after_kill.take(), backoff)
    }

    /// `pod`'s container exited at `now`: no process is left. Returns whether its app was
    /// still booting.
    pub(super) fn container_exited(&mut self, pod: usize, now: Millis) -> bool {
        let state = &mut self.pods[pod];
        let was_booting = state.booting();
        state.container = Container::Waiting;
        state.last_finished = Some(now);
        state.started = false;
        state.process = None;
        was_booting
    }

    /// An operator replaces `pod`: a new pod, with fresh backoff, whose first container is a
    /// new one. Returns whether the old app was still booting.
    pub(super) fn replace(&mut self, pod: usize) -> bool {
        let state = &mut self.pods[pod];
        let was_booting = state.booting();
        state.container = Container::Waiting;
        state.process = None;
        state.started = false;
        state.last_finished = None;
        state.backoff = CrashLoopBackOff::default();
        state.restart_after_kill = None;
        state.start_epoch += 1;
        // Not a restart of the old container: the new pod's first container.
        state.container_id += 1;
        was_booting
    }

    /// `pod`'s container is `Started` (its startup probe passed), if it still runs.
    pub(super) fn mark_started(&mut self, pod: usize) -> bool {
        let state = &mut self.pods[pod];
        if state.running() {
            state.started = true;
        }
        state.running()
    }

    /// The process answered a readiness probe: returns whether it started failing.
    pub(super) fn readiness_answered(&mut self, pod: usize, passed: bool) -> bool {
        let Some(process) = self.pods[pod].process.as_mut() else {
            return false;
        };
        let fell = !passed && !process.answered_unready;
        process.answered_unready = !passed;
        fell
    }

    /// A health-check call that hangs until `until` holds a connection of the pool to
    /// `dependency` (and memory) from `now`: returns the calls the process holds then, its
    /// ID and its leaked pools.
    pub(super) fn hold(
        &mut self,
        pod: usize,
        until: Millis,
        dependency: usize,
        now: Millis,
    ) -> Option<(u32, u32, u64)> {
        let process = self.pods[pod].process.as_mut()?;
        process.inflight.retain(|(end, _)| *end > now);
        process.inflight.push((until, dependency as u16));
        let count = process.inflight.len() as u32;
        Some((count, process.id, process.pool_exhausted))
    }

    /// A fault `kind` begins in a pod at `now`: returns the pod it changed, with its leaked
    /// pools and whether hung calls hold connections when its pool leaked dry.
    pub(super) fn fault(&mut self, kind: &FaultKind, now: Millis) -> PodFault {
        match *kind {
            FaultKind::PoolExhausted {
                instance,
                dependency,
            } => PodFault::Pool(
                instance,
                self.pods[instance].process.as_mut().map(|process| {
                    process.pool_exhausted |= 1 << dependency;
                    (process.pool_exhausted, !process.inflight.is_empty())
                }),
            ),
            FaultKind::Deadlock {
                instance,
                ignores_sigterm,
            } => {
                if let Some(process) = self.pods[instance].process.as_mut() {
                    process.deadlocked_at = Some(now);
                    process.ignores_sigterm = ignores_sigterm;
                }
                PodFault::Changed(instance)
            }
            FaultKind::RuntimeStall { instance } => {
                if let Some(process) = self.pods[instance].process.as_mut() {
                    process.stalled = true;
                }
                PodFault::Changed(instance)
            }
            FaultKind::CrashOnStart { instance, after } => {
                self.pods[instance].crashes_after = Some(after);
                PodFault::Crashes(instance)
            }
            FaultKind::ManualDrain { instance } => {
                self.pods[instance].manual_drained = true;
                PodFault::Drained(instance)
            }
            FaultKind::ManualFix { .. }
            | FaultKind::DependencyOutage { .. }
            | FaultKind::SlowDependency { .. }
            | FaultKind::FlappingDependency { .. } => PodFault::None,
        }
    }
}

/// What a fault did to a pod.
#[derive(Debug, Clone, Copy)]
pub(super) enum PodFault {
    /// Its pool to a dependency leaked dry: its leaked pools, and whether hung calls hold
    /// connections (none: it has no process).
    Pool(usize, Option<(u64, bool)>),
    /// Its process deadlocked or stalled.
    Changed(usize),
    /// It crashes after each start from now on.
    Crashes(usize),
    /// An operator drained it.
    Drained(usize),
    /// Nothing of one pod.
    None,
}
