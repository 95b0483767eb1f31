//! What the engine does when a pod's container starts, boots, exits, is killed or replaced:
//! the pods change their own state, and every other part hears of it in turn, in the order
//! the kubelet and the app would see it.

use super::Sim;
use super::pod::PodFault;
use crate::report::KillReason;
use crate::time::Millis;
use probity_contract::kube::backoff::RestartDecision;
use probity_contract::probe::ProbeKind;

impl Sim<'_> {
    /// A pod that has run for a long time: booted, started, ready, its probe tickers at
    /// random phases (pods are admitted at different times; the worker probes at admission,
    /// then every period).
    pub(super) fn settle_pod(&mut self, pod: usize) {
        self.passive.new_process(pod);
        self.pods.settle(pod);
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
        self.pods.schedule_start(pod, when, &mut self.effects);
    }

    /// A scheduled start arrives.
    pub(super) fn start_due(&mut self, pod: usize, epoch: u32) {
        if self.pods.start_due(pod, epoch) {
            self.try_start(pod);
        }
    }

    /// The kubelet starts the container, or waits out its backoff (`doBackOff`).
    fn try_start(&mut self, pod: usize) {
        match self.pods.decide_start(pod, self.now) {
            RestartDecision::StartNow => self.start_container(pod),
            RestartDecision::WaitUntil(until) => {
                let until = crate::time::millis(until);
                self.schedule_retry(pod, until);
            }
        }
    }

    fn schedule_retry(&mut self, pod: usize, until: Millis) {
        let (now, rng, effects) = (self.now, &mut self.rng, &mut self.effects);
        self.pods.schedule_retry(pod, until, now, rng, effects);
    }

    /// The container starts: a new process boots, its checks and passive runs start
    /// afresh, its pollers start, and without a startup probe the kubelet probes readiness
    /// at once.
    fn start_container(&mut self, pod: usize) {
        let now = self.now;
        let started = self.probers.spec(ProbeKind::Startup).is_none();
        self.passive.new_process(pod);
        let (id, restart) = self.pods.start_container(pod, started, now);
        if restart {
            self.measure.pods[pod].restarts += 1;
        }
        self.probers.new_container(pod);
        self.policy.new_process(pod, id, false);
        self.boot_started(pod);
        self.pods.schedule_crash(pod, now, &mut self.effects);
        let (rng, effects) = (&mut self.rng, &mut self.effects);
        self.policy.start_pollers(pod, id, false, now, rng, effects);
        self.refresh_boots();
        self.retime_boot(pod);
        if self.pods[pod].started {
            self.manual_readiness_trigger(pod);
        }
        self.update_pod_ready(pod);
        self.pod_changed(pod);
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
            self.retime_boot(pod);
        }
    }

    /// Re-times `pod`'s boot at the rate its dependencies allow now.
    fn retime_boot(&mut self, pod: usize) {
        let rate = self.dependencies.boot_rate(pod, &self.faults, self.now);
        self.pods
            .retime_boot(pod, rate, self.now, &mut self.effects);
    }

    /// The app finished booting: it listens and serves.
    pub(super) fn boot_done(&mut self, pod: usize, process: u32, epoch: u32) {
        if !self.pods.boot_done(pod, process, epoch) {
            return;
        }
        self.boot_ended(pod);
        self.refresh_boots();
        self.pod_changed(pod);
    }

    /// The kubelet kills the container after a liveness or startup failure.
    pub(super) fn kill(&mut self, pod: usize, reason: KillReason) {
        if !self.pods[pod].running() {
            return;
        }
        self.measure.record_kill(pod, self.now, reason);
        let probe_grace = match reason {
            KillReason::Liveness => self.probers.spec(ProbeKind::Liveness),
            KillReason::Startup => self.probers.spec(ProbeKind::Startup),
            _ => None,
        }
        .and_then(|probe| probe.termination_grace);
        self.pods
            .kill(pod, probe_grace, self.now, &mut self.effects);
        self.pod_changed(pod);
    }

    /// A killed container has exited: it starts again now, or after its backoff.
    pub(super) fn kill_done(&mut self, pod: usize, container: u32) {
        if !self.pods.kill_due(pod, container) {
            return;
        }
        self.container_exited(pod);
        match self.pods.take_restart(pod) {
            (Some(RestartDecision::StartNow) | None, _) => self.start_container(pod),
            (Some(RestartDecision::WaitUntil(_)), backoff) => {
                // The next sync sees this container as the newest exited one.
                self.schedule_retry(pod, self.now + backoff);
            }
        }
    }

    /// The process died by itself (out of memory): the kubelet restarts it through
    /// `doBackOff` with this container as the newest exited one.
    pub(super) fn crash(&mut self, pod: usize, reason: KillReason) {
        if !self.pods[pod].running() {
            return;
        }
        self.measure.record_kill(pod, self.now, reason);
        self.container_exited(pod);
        self.try_start(pod);
    }

    fn container_exited(&mut self, pod: usize) {
        let was_booting = self.pods.container_exited(pod, self.now);
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
        self.pods.replace(pod);
        self.policy.process_gone(pod);
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
        let fell = self.pods.readiness_answered(pod, passed);
        if !fell || !self.scenario.app.close_connections_when_unready {
            return;
        }
        let clock = (self.now, self.scenario.requests.rate);
        if let Some(connections) = self.connections.as_mut() {
            connections.readiness_fell(pod, clock, &mut self.effects);
            self.apply_effects();
        }
    }

    /// The container is `Started` (its startup probe passed): the kubelet probes readiness
    /// at once.
    pub(super) fn container_started(&mut self, pod: usize) {
        if self.pods.mark_started(pod) {
            self.manual_readiness_trigger(pod);
            self.update_pod_ready(pod);
            self.pod_changed(pod);
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
        let limit = self.scenario.app.max_inflight_checks;
        let pool = self.scenario.app.pool_size.is_some();
        let Some((count, id, exhausted)) = self.pods.hold(pod, until, dependency, self.now) else {
            return;
        };
        self.policy.pool_changed(pod, exhausted, true);
        self.measure.max_inflight = self.measure.max_inflight.max(count);
        if pool {
            self.effects.schedule(
                until,
                super::queue::Event::HungEnd {
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

    /// A fault began in a pod, or an operator acts on pods.
    pub(super) fn pod_fault(&mut self, index: usize) {
        let scenario = self.scenario;
        let kind = &scenario.faults[index].kind;
        match self.pods.fault(kind, self.now) {
            PodFault::Pool(instance, pool) => {
                if let Some((exhausted, holds)) = pool {
                    self.policy.pool_changed(instance, exhausted, holds);
                }
                self.mark(instance);
            }
            PodFault::Changed(instance) => self.mark(instance),
            PodFault::Crashes(instance) => {
                self.pods
                    .schedule_crash(instance, self.now, &mut self.effects);
            }
            PodFault::Drained(instance) => self.pod_changed(instance),
            PodFault::None => {
                if let crate::scenario::FaultKind::ManualFix { remove_probes } = kind {
                    self.manual_fix(remove_probes);
                }
            }
        }
    }

    /// An operator's fix: probes removed, then every pod replaced.
    fn manual_fix(&mut self, remove_probes: &[ProbeKind]) {
        // The skipped ticks so far count with the probes they had.
        let clock = (self.now, self.current_order);
        for pod in 0..self.pods.len() {
            for kind in ProbeKind::ALL {
                self.probers
                    .wake_worker(pod, kind, false, clock, &mut self.effects);
            }
        }
        for &kind in remove_probes {
            self.probers.remove(kind);
        }
        for pod in 0..self.pods.len() {
            self.replace_pod(pod);
        }
    }
}
