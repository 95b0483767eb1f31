//! Pod lifecycle: containers starting, booting, being killed, exiting and restarting through
//! CrashLoopBackOff, and the app process inside.
//!
//! The kubelet's rules come from [`probity_contract::kube`]: the restart decision of
//! `doBackOff` ([`CrashLoopBackOff`]), the grace period and the preStop hook of
//! `killContainer` ([`StopSequence`]).

use super::Sim;
use super::probing::Seen;
use super::queue::Event;
use crate::report::{KillReason, LaneState};
use crate::scenario::BackoffRequeue;
use crate::time::Millis;
use crate::time::{at, millis};
use probity_contract::kube::backoff::{
    CrashLoopBackOff, POD_WORKER_RETRY, POD_WORKER_RETRY_JITTER, RestartDecision,
};
use probity_contract::kube::prober::ContainerView;
use probity_contract::kube::termination::{StopCause, StopSequence, grace_period};
use probity_contract::probe::ProbeKind;

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

impl Sim<'_> {
    /// A pod that has run for a long time: booted, started, ready, its probe tickers at
    /// random phases (pods are admitted at different times; the worker probes at admission,
    /// then every period).
    pub(super) fn settle_pod(&mut self, pod: usize) {
        self.passive.new_process(pod);
        let state = &mut self.pods[pod];
        state.container = Container::Running;
        state.container_id = 1;
        state.started_at = 0;
        state.started = true;
        state.process = Some(Process::settled(1));
        self.policy.new_process(pod, 1, true);
        self.rotation.router.endpoint_update(pod, true);
        self.probers
            .settled(pod, 1, &mut self.rng, &mut self.effects);
        let (now, rng, effects) = (self.now, &mut self.rng, &mut self.effects);
        self.policy.start_pollers(pod, 1, true, now, rng, effects);
    }

    /// A new pod at `when`: its probe workers start (first probe at once, then every
    /// period) and its first container starts.
    pub(super) fn add_pod(&mut self, pod: usize, when: Millis) {
        self.probers.add(pod, when, &mut self.effects);
        let epoch = self.pods[pod].start_epoch;
        self.effects.schedule(
            when,
            Event::StartContainer {
                pod: pod as u32,
                epoch,
            },
        );
    }

    /// The kubelet starts the container, or waits out its backoff (`doBackOff`).
    pub(super) fn try_start(&mut self, pod: usize) {
        let now = self.now;
        let newest = self.pods[pod].last_finished;
        match self.pods[pod].backoff.decide(newest.map(at), at(now)) {
            RestartDecision::StartNow => self.start_container(pod),
            RestartDecision::WaitUntil(until) => self.schedule_retry(pod, millis(until)),
        }
    }

    fn schedule_retry(&mut self, pod: usize, until: Millis) {
        let retry_at = match self.scenario.kubelet.backoff_requeue {
            BackoffRequeue::Exact => until,
            BackoffRequeue::Jitter => {
                // The pod worker retries every wait.Jitter(10s, 0.5): 10–15 s apart.
                let base = millis(POD_WORKER_RETRY);
                let spread = (base as f64 * POD_WORKER_RETRY_JITTER) as Millis;
                let mut retry = self.now;
                while retry < until {
                    retry += base + self.rng.u64(0..spread);
                }
                retry
            }
        };
        let state = &mut self.pods[pod];
        state.start_epoch += 1;
        let epoch = state.start_epoch;
        self.effects.schedule(
            retry_at.max(self.now),
            Event::StartContainer {
                pod: pod as u32,
                epoch,
            },
        );
    }

    /// A scheduled start arrives.
    pub(super) fn start_due(&mut self, pod: usize, epoch: u32) {
        let state = &self.pods[pod];
        if state.start_epoch == epoch && state.container == Container::Waiting {
            self.try_start(pod);
        }
    }

    fn start_container(&mut self, pod: usize) {
        let now = self.now;
        let app = &self.scenario.app;
        let started = self.probers.spec(ProbeKind::Startup).is_none();
        self.passive.new_process(pod);
        let state = &mut self.pods[pod];
        if state.container_id > 0 {
            self.measure.pods[pod].restarts += 1;
        }
        state.container_id += 1;
        let id = state.container_id;
        state.container = Container::Running;
        state.started_at = now;
        state.restart_after_kill = None;
        state.started = started;
        self.probers.new_container(pod);
        let state = &mut self.pods[pod];
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
        self.policy.new_process(pod, id, false);
        self.boot_started(pod);
        self.schedule_crash(pod);
        let (now, rng, effects) = (self.now, &mut self.rng, &mut self.effects);
        self.policy.start_pollers(pod, id, false, now, rng, effects);
        self.refresh_boots();
        self.reschedule_boot(pod);
        if self.pods[pod].started {
            self.manual_readiness_trigger(pod);
        }
        self.update_pod_ready(pod);
        self.pod_changed(pod);
    }

    /// A pod that crashes on start: its running container exits `after` from now.
    pub(super) fn schedule_crash(&mut self, pod: usize) {
        let state = &self.pods[pod];
        if let Some(after) = state.crashes_after
            && state.container == Container::Running
        {
            self.effects.schedule(
                self.now + after,
                Event::CrashExit {
                    pod: pod as u32,
                    container: state.container_id,
                },
            );
        }
    }

    /// The process exits by itself; the kubelet restarts it through `doBackOff`.
    pub(super) fn crash_exit(&mut self, pod: usize, container: u32) {
        if self.pods[pod].container_id == container {
            self.crash(pod, KillReason::Exited);
        }
    }

    /// Re-times every boot in progress after the conditions it depends on changed.
    pub(super) fn refresh_boots(&mut self) {
        if self.scenario.app.boot_needs.is_empty() {
            return;
        }
        for pod in self.dependencies.booting() {
            self.reschedule_boot(pod);
        }
    }

    fn reschedule_boot(&mut self, pod: usize) {
        let now = self.now;
        let rate = self.dependencies.boot_rate(pod, &self.faults, self.now);
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
            self.effects.schedule(
                done_at,
                Event::BootDone {
                    pod: pod as u32,
                    process: id,
                    epoch,
                },
            );
        }
    }

    /// The app finished booting: it listens and serves.
    pub(super) fn boot_done(&mut self, pod: usize, process: u32, epoch: u32) {
        let Some(state) = self.pods[pod].process.as_mut() else {
            return;
        };
        if state.id != process || state.boot.epoch != epoch || state.booted {
            return;
        }
        state.booted = true;
        state.listening = true;
        self.boot_ended(pod);
        self.refresh_boots();
        self.pod_changed(pod);
    }

    /// The kubelet kills the container after a liveness or startup failure, and decides in
    /// the same sync whether to start it again (`computePodActions`, `doBackOff` on the
    /// pre-kill status).
    pub(super) fn kill(&mut self, pod: usize, reason: KillReason) {
        let now = self.now;
        if self.pods[pod].container != Container::Running {
            return;
        }
        self.measure.record_kill(pod, now, reason);
        let probe_grace = match reason {
            KillReason::Liveness => self.probers.spec(ProbeKind::Liveness),
            KillReason::Startup => self.probers.spec(ProbeKind::Startup),
            _ => None,
        }
        .and_then(|probe| probe.termination_grace)
        .map(at);
        let grace = grace_period(
            at(self.scenario.fleet.termination_grace),
            StopCause::ProbeFailure(probe_grace),
        );
        let stop = StopSequence::new(grace, at(self.scenario.pre_stop_sleep));
        let (pre_stop, signal_to_kill) = (millis(stop.pre_stop), millis(stop.signal_to_kill));
        let newest = self.pods[pod].last_finished;
        let decision = self.pods[pod].backoff.decide(newest.map(at), at(now));
        let app = &self.scenario.app;
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
        self.effects.schedule(
            now + exit_after,
            Event::KillDone {
                pod: pod as u32,
                container,
            },
        );
        self.pod_changed(pod);
    }

    /// A killed container has exited: it starts again now, or after its backoff.
    pub(super) fn kill_done(&mut self, pod: usize, container: u32) {
        let state = &self.pods[pod];
        if state.container_id != container || state.container != Container::Terminating {
            return;
        }
        self.container_exited(pod);
        match self.pods[pod].restart_after_kill.take() {
            Some(RestartDecision::StartNow) | None => self.start_container(pod),
            Some(RestartDecision::WaitUntil(_)) => {
                // The next sync sees this container as the newest exited one.
                let backoff = self.pods[pod].backoff.current().map_or(0, millis);
                self.schedule_retry(pod, self.now + backoff);
            }
        }
    }

    /// The process died by itself (out of memory): the kubelet restarts it through
    /// `doBackOff` with this container as the newest exited one.
    pub(super) fn crash(&mut self, pod: usize, reason: KillReason) {
        if self.pods[pod].container != Container::Running {
            return;
        }
        self.measure.record_kill(pod, self.now, reason);
        self.container_exited(pod);
        self.try_start(pod);
    }

    fn container_exited(&mut self, pod: usize) {
        let was_booting = self.pods[pod].booting();
        let state = &mut self.pods[pod];
        state.container = Container::Waiting;
        state.last_finished = Some(self.now);
        state.started = false;
        state.process = None;
        self.policy.process_gone(pod);
        if was_booting {
            self.boot_ended(pod);
            self.refresh_boots();
        }
        self.update_pod_ready(pod);
        self.pod_changed(pod);
    }

    /// An operator replaces a pod: a new pod, with fresh probe workers and backoff.
    pub(super) fn replace_pod(&mut self, pod: usize) {
        let clock = (self.now, self.current_order);
        for kind in ProbeKind::ALL {
            self.probers
                .wake_worker(pod, kind, false, clock, &mut self.effects);
        }
        if self.pods[pod].booting() {
            self.boot_ended(pod);
        }
        let state = &mut self.pods[pod];
        state.container = Container::Waiting;
        state.process = None;
        self.policy.process_gone(pod);
        let state = &mut self.pods[pod];
        state.started = false;
        state.last_finished = None;
        state.backoff = CrashLoopBackOff::default();
        state.restart_after_kill = None;
        state.start_epoch += 1;
        // Not a restart of the old container: the new pod's first container.
        state.container_id += 1;
        self.probers.replace(pod);
        let record = &mut self.measure.pods[pod];
        record.restarts = record.restarts.saturating_sub(1);
        self.update_pod_ready(pod);
        self.add_pod(pod, self.now);
        self.pod_changed(pod);
    }

    /// The process answered a readiness probe. When it starts failing and the server closes
    /// connections while unready, the keep-alive clients pinned to it leave.
    pub(super) fn readiness_answered(&mut self, pod: usize, passed: bool) {
        let Some(process) = self.pods[pod].process.as_mut() else {
            return;
        };
        let fell = !passed && !process.answered_unready;
        process.answered_unready = !passed;
        if !fell || !self.scenario.app.close_connections_when_unready {
            return;
        }
        let clock = (self.now, self.scenario.requests.rate);
        if let Some(connections) = self.connections.as_mut() {
            connections.readiness_fell(pod, clock, &mut self.effects);
            self.apply_effects();
        }
    }

    /// A boot that warms up against its dependencies began.
    fn boot_started(&mut self, pod: usize) {
        self.dependencies.boot_started(pod, &mut self.effects);
        self.apply_effects();
    }

    /// A boot ended (done, or the container went away).
    fn boot_ended(&mut self, pod: usize) {
        self.dependencies.boot_ended(pod, &mut self.effects);
        self.apply_effects();
    }

    /// A health-check call that hangs until `until` holds a pool connection (and memory):
    /// past `max_inflight_checks` the process is killed for running out of memory.
    pub(super) fn hold_inflight(&mut self, pod: usize, until: Millis, dependency: usize) {
        let now = self.now;
        let limit = self.scenario.app.max_inflight_checks;
        let pool = self.scenario.app.pool_size.is_some();
        let Some(process) = self.pods[pod].process.as_mut() else {
            return;
        };
        process.inflight.retain(|(end, _)| *end > now);
        process.inflight.push((until, dependency as u16));
        let count = process.inflight.len() as u32;
        let (id, exhausted) = (process.id, process.pool_exhausted);
        self.policy.pool_changed(pod, exhausted, true);
        self.measure.max_inflight = self.measure.max_inflight.max(count);
        if pool {
            self.effects.schedule(
                until,
                Event::HungEnd {
                    pod: pod as u32,
                    process: id,
                },
            );
            self.mark(pod);
        }
        if let Some(limit) = limit
            && count > limit
        {
            self.measure.oom_kills += 1;
            self.crash(pod, KillReason::OutOfMemory);
        }
    }
}
