//! The discrete-event model of a fleet.
//!
//! Time is whole milliseconds. Events sit in a queue ordered by time and then by the order
//! they were scheduled, so a run is a pure function of the scenario and the seed.
//!
//! Each concept is a part that owns its state and its handlers:
//!
//! | part | models |
//! |---|---|
//! | [`pod::Pods`] | pod lifecycle: containers, boots, kills, CrashLoopBackOff |
//! | [`probing::Probers`] | the kubelet's probe workers, the results manager and the pod's Ready condition; workers that skip their ticks while nothing can change |
//! | [`policy::Policy`] | the app's health policy: check states, pollers ([`poll_lane`]), fallbacks, on probity's own hysteresis and verdict |
//! | [`dependencies::Dependencies`] | how calls to each dependency fare, the herd, the app's pool ([`pool`]) |
//! | [`faults::Faults`] | faults and operator actions on the timeline, and what they make of each dependency |
//! | [`passive::Passive`] | passive reports from real requests |
//! | [`router::Rotation`] | the load balancers, one module each |
//! | [`traffic::Traffic`], [`keep_alive::Connections`] | requests as a fluid split over the pods; keep-alive connections pinned to them |
//! | [`measure::Measurements`] | what is measured, and the report |
//!
//! The engine ([`Sim`]) pops each event and hands it to the part it belongs to, with what
//! that part needs to know of the others. A handler returns what it asks of the rest as
//! [`effects::Effects`] (events to schedule, a pod that changed, a container to kill, a
//! check to re-poll); the engine carries them out in order, each as a call made in place
//! would have. The flows that cross parts are the engine's: a call to a pod's endpoint and
//! its answer ([`answer`]), a container starting, exiting or being replaced
//! ([`lifecycle`]), and the settling of each instant's traffic (here).
//!
#[cfg(test)]
mod agreement;
mod answer;
mod dependencies;
mod effects;
mod faults;
mod keep_alive;
mod lifecycle;
mod measure;
mod passive;
mod pod;
mod policy;
mod poll_lane;
mod pool;
mod probing;
mod queue;
mod router;
mod traffic;

use crate::report::Report;
use crate::scenario::{Scenario, Start};
use crate::time::Millis;
use effects::{Effect, Effects};
use policy::Fare;
use probity_contract::probe::ProbeKind;
use queue::{Event, Order};
use router::{CheckResult, Rotation};
use traffic::{Split, Traffic};

/// Runs a scenario with a seed and returns what it measured. `progress` hears the
/// simulated time reached, now and then (every few tens of thousands of events).
pub(crate) fn run(scenario: &Scenario, seed: u64, progress: &mut dyn FnMut(Millis)) -> Report {
    let mut sim = Sim::new(scenario, seed);
    sim.run(progress);
    sim.measure.report(measure::Run {
        scenario,
        seed,
        routing: sim.rotation.router.name(),
        onset: sim.faults.first_onset,
        reference_end: sim.faults.reference_end,
        dependency_calls: sim.dependencies.calls(),
        fallbacks: sim.policy.fallbacks().any(),
        traffic: &sim.traffic,
    })
}

/// Events between two progress calls.
const PROGRESS_EVERY: u32 = 1 << 16;

/// What kube-proxy finds of each pod it sends a keep-alive connection to.
fn reception<'p>(
    pods: &'p pod::Pods<'_>,
    close_when_unready: bool,
) -> impl Fn(usize) -> keep_alive::Reception + 'p {
    move |pod| {
        let state = &pods[pod];
        keep_alive::Reception {
            accepts: state.accepts(),
            closes: close_when_unready
                && state
                    .process
                    .as_ref()
                    .is_some_and(|process| process.answered_unready),
        }
    }
}

/// The pods changed in the instant running, to re-evaluate before time moves on.
#[derive(Debug)]
struct Changes {
    /// The pods marked, in the order they were.
    pods: Vec<usize>,
    /// Whether each pod is marked.
    marked: Vec<bool>,
    /// Every pod changed (a shared dependency's condition did).
    all: bool,
    /// Something changed in this instant.
    unsettled: bool,
}

impl Changes {
    /// Before the first instant: every pod is to be evaluated.
    fn new(pods: usize) -> Self {
        Changes {
            pods: Vec::new(),
            marked: vec![false; pods],
            all: true,
            unsettled: true,
        }
    }

    /// `pod` changed.
    fn mark(&mut self, pod: usize) {
        self.unsettled = true;
        if !self.marked[pod] {
            self.marked[pod] = true;
            self.pods.push(pod);
        }
    }

    /// Every pod changed.
    fn mark_all(&mut self) {
        self.unsettled = true;
        self.all = true;
    }

    /// Takes the instant's changes: the pods to re-evaluate in order (all `count` of them
    /// when every pod changed), and whether every pod did.
    fn take(&mut self, count: usize) -> (Vec<usize>, bool) {
        let all = std::mem::take(&mut self.all);
        let pods = if all {
            for pod in self.pods.drain(..) {
                self.marked[pod] = false;
            }
            (0..count).collect()
        } else {
            let mut pods = std::mem::take(&mut self.pods);
            for &pod in &pods {
                self.marked[pod] = false;
            }
            pods.sort_unstable();
            pods
        };
        self.unsettled = false;
        (pods, all)
    }
}

/// The simulation's state.
struct Sim<'a> {
    scenario: &'a Scenario,
    rng: fastrand::Rng,
    now: Millis,
    /// The place of the event being handled among the events of its millisecond.
    current_order: Order,
    pods: pod::Pods<'a>,
    probers: probing::Probers,
    rotation: Rotation,
    dependencies: dependencies::Dependencies<'a>,
    faults: faults::Faults<'a>,
    traffic: Traffic,
    measure: measure::Measurements,
    passive: passive::Passive,
    connections: Option<keep_alive::Connections>,
    policy: policy::Policy<'a>,
    /// What changed in this instant, to re-evaluate before time moves on.
    changes: Changes,
    /// A pod's failures depend on its share of traffic (a pool modelled as a queue, a pod's
    /// capacity), which any change of members moves.
    share_dependent: bool,
    initialising: bool,
    /// The queue, and the effects each part's handler returns.
    effects: Effects,
    /// Emptied lists of effects, for carrying out effects that cause effects.
    spare_effects: Vec<Vec<Effect>>,
}

impl<'a> Sim<'a> {
    fn new(scenario: &'a Scenario, seed: u64) -> Self {
        let pods = scenario.fleet.replicas;
        let policy = policy::Policy::new(scenario);
        let passive = passive::Passive::new(scenario, policy.polled_checks());
        let connections = scenario.requests.keep_alive.map(|settings| {
            keep_alive::Connections::new(
                settings,
                pods,
                router::mix_seed(seed ^ 0x6B65_6570_616C_6976),
            )
        });
        Sim {
            scenario,
            rng: fastrand::Rng::with_seed(seed),
            now: 0,
            current_order: 0,
            pods: pod::Pods::new(scenario),
            probers: probing::Probers::new(scenario, pods),
            rotation: Rotation::new(scenario, seed),
            dependencies: dependencies::Dependencies::new(scenario),
            faults: faults::Faults::new(scenario),
            traffic: Traffic::new(pods, scenario.requests.rate),
            measure: measure::Measurements::new(
                &scenario.fleet.names,
                scenario.duration,
                scenario.measure.resolution,
            ),
            passive,
            connections,
            policy,
            changes: Changes::new(pods),
            share_dependent: scenario.app.capacity.is_some()
                || scenario
                    .dependencies
                    .iter()
                    .any(|dependency| dependency.pool.is_some()),
            initialising: true,
            effects: Effects::default(),
            spare_effects: Vec::new(),
        }
    }

    fn run(&mut self, progress: &mut dyn FnMut(Millis)) {
        self.init_fleet();
        self.faults.schedule(&mut self.effects);
        self.apply_effects();
        let pods = self.pods.len();
        self.rotation.start_outlier_sweeps(pods, &mut self.effects);
        self.apply_effects();
        let end = self.scenario.duration;
        let mut until_progress = PROGRESS_EVERY;
        while let Some(next) = self.effects.queue().next_time() {
            if self.changes.unsettled && next > self.traffic.last {
                // The instant is over: settle it before time moves on. Settling may schedule
                // something now, so look at the queue again.
                self.settle();
                continue;
            }
            if next >= end {
                break;
            }
            let Some((time, order, event)) = self.effects.queue().pop_at(next) else {
                break;
            };
            self.advance(time);
            self.now = time;
            self.current_order = order;
            self.handle(event);
            until_progress -= 1;
            if until_progress == 0 {
                until_progress = PROGRESS_EVERY;
                progress(time);
            }
        }
        if self.changes.unsettled {
            self.settle();
        }
        self.probers.count_quiet_ticks(end);
        self.measure.probe_requests += self.probers.sent();
        self.advance(end);
        self.now = end;
        for pod in 0..self.pods.len() {
            self.traffic.flush(pod);
        }
        self.finish_traffic();
    }

    fn init_fleet(&mut self) {
        let steady = self.scenario.fleet.start == Start::Steady;
        for pod in 0..self.pods.len() {
            if steady {
                self.settle_pod(pod);
            } else {
                let created = self.scenario.fleet.stagger * pod as u64;
                self.add_pod(pod, created);
            }
            self.rotation
                .start_checks(pod, steady, &mut self.rng, &mut self.effects);
            self.apply_effects();
        }
        for pod in 0..self.pods.len() {
            self.record_pod_state(pod);
        }
        if let Some(connections) = self.connections.as_mut() {
            connections.open(self.scenario.requests.rate, &mut self.effects);
            self.apply_effects();
        }
        self.initialising = false;
    }

    fn handle(&mut self, event: Event) {
        let kind = |slot: u8| ProbeKind::ALL[usize::from(slot)];
        match event {
            Event::ProbeTick { pod, slot, epoch } => {
                self.probe_tick(pod as usize, kind(slot), epoch)
            }
            Event::ProbeDone {
                pod,
                slot,
                container,
                success,
            } => self.probe_done(pod as usize, kind(slot), container, success),
            Event::PollStart {
                pod,
                check,
                process,
                epoch,
            } => self.poll(pod as usize, usize::from(check), process, epoch),
            Event::PollDone {
                pod,
                check,
                process,
                success,
                local,
            } => self.deliver_poll(pod as usize, usize::from(check), process, (success, local)),
            Event::BootDone {
                pod,
                process,
                epoch,
            } => self.boot_done(pod as usize, process, epoch),
            Event::KillDone { pod, container } => self.kill_done(pod as usize, container),
            Event::StartContainer { pod, epoch } => self.start_due(pod as usize, epoch),
            Event::EndpointUpdate { pod, ready } => {
                self.rotation
                    .endpoint_update(pod as usize, ready, &mut self.effects);
                self.apply_effects();
            }
            Event::CheckTick { pod, epoch } => self.router_check(pod as usize, epoch),
            Event::CheckDone {
                pod,
                epoch,
                success,
                definitive,
            } => {
                let result = CheckResult {
                    success,
                    definitive,
                };
                let (now, effects) = (self.now, &mut self.effects);
                self.rotation
                    .check_done(pod as usize, epoch, result, now, effects);
                self.apply_effects();
            }
            Event::Eject { pod, epoch } => {
                let (now, effects) = (self.now, &mut self.effects);
                self.rotation.eject(pod as usize, epoch, now, effects);
                self.apply_effects();
            }
            Event::EjectEnd { pod, epoch } => {
                self.rotation
                    .eject_end(pod as usize, epoch, &mut self.effects);
                self.apply_effects();
            }
            Event::HungEnd { pod, .. } => self.mark(pod as usize),
            Event::Reassess { pod, process } => {
                if self.policy.reassess(pod as usize, process, self.now) {
                    self.mark(pod as usize);
                }
            }
            Event::OutlierSweep => {
                let (now, effects) = (self.now, &mut self.effects);
                self.rotation.outlier_sweep(&mut self.traffic, now, effects);
                self.apply_effects();
            }
            Event::CrashExit { pod, container } => self.crash_exit(pod as usize, container),
            Event::PassiveResume {
                pod,
                check,
                process,
                epoch,
            } => self.passive_resume(pod as usize, usize::from(check), process, epoch),
            Event::PassiveDue { epoch } => self.passive_due(epoch),
            Event::FaultStart { fault } => {
                self.faults
                    .start(fault as usize, self.now, &mut self.effects);
                self.apply_effects();
            }
            Event::FaultEnd { fault } => {
                self.faults.end(fault as usize, &mut self.effects);
                self.apply_effects();
            }
            Event::FlapBoundary { fault } => {
                self.faults.flap_boundary(fault as usize, &mut self.effects);
                self.apply_effects();
            }
            Event::ConnectionEnd { connection, epoch } => {
                let clock = (self.now, self.scenario.requests.rate);
                let close = self.scenario.app.close_connections_when_unready;
                if let Some(connections) = self.connections.as_mut() {
                    let reception = reception(&self.pods, close);
                    connections.end(
                        connection as usize,
                        epoch,
                        clock,
                        &reception,
                        &mut self.effects,
                    );
                }
                self.apply_effects();
            }
        }
    }

    /// Carries out the effects the last handler returned, in order. An effect's own effects
    /// are carried out before the next one: the order is the one of a call made in place.
    fn apply_effects(&mut self) {
        while !self.effects.settled() {
            let spare = self.spare_effects.pop().unwrap_or_default();
            let mut list = self.effects.take(spare);
            for effect in list.drain(..) {
                self.apply(effect);
            }
            // Whatever collected meanwhile comes next.
            let collected = self.effects.restore(list);
            if collected.is_empty() {
                self.spare_effects.push(collected);
            } else {
                let empty = self.effects.restore(collected);
                self.spare_effects.push(empty);
            }
        }
    }

    /// Carries out one effect.
    fn apply(&mut self, effect: Effect) {
        match effect {
            Effect::Schedule { at, event } => self.effects.schedule(at, event),
            Effect::ScheduleInOrder { at, order, event } => {
                self.effects.schedule_in_order(at, order, event)
            }
            Effect::PodChanged(pod) => self.pod_changed(pod),
            Effect::Reweighed(pod) => self.mark(pod),
            Effect::AllReweighed => self.mark_all(),
            Effect::Resplit => self.changes.unsettled = true,
            Effect::PodFault(index) => self.pod_fault(index),
            Effect::BootsChanged => self.refresh_boots(),
            Effect::Wake(pod) => self.wake(pod),
            Effect::Repoll { pod, check } => self.repoll(pod, check),
            Effect::Kill { pod, reason } => self.kill(pod, reason),
            Effect::Started(pod) => self.container_started(pod),
            Effect::ReadinessResult(pod) => self.update_pod_ready(pod),
        }
    }

    /// A poll of `check` in `pod`, of `process` in `epoch`, starts: it calls the
    /// dependency, and the policy records what it met.
    fn poll(&mut self, pod: usize, check: usize, process: u32, epoch: u32) {
        let Some(poll) = self.policy.poll_due(pod, check, process, epoch) else {
            return;
        };
        let call = self.call_dependency(pod, poll.dependency, poll.asks);
        let (now, rng, effects) = (self.now, &mut self.rng, &mut self.effects);
        self.policy
            .called(pod, (check, process, epoch), poll, call, now, rng, effects);
        self.apply_effects();
    }

    /// A poll's result (`success`, `local`) is in: the policy records it.
    fn deliver_poll(&mut self, pod: usize, check: usize, process: u32, result: (bool, bool)) {
        let (now, effects) = (self.now, &mut self.effects);
        self.policy
            .poll_done(pod, check, process, result, now, effects);
        self.apply_effects();
    }

    /// A call `pod`'s health check makes to `dependency` (asking `asks` of a pool modelled
    /// as a queue): the dependencies answer it, seeing the pod's pool when it may fail the
    /// call.
    fn call_dependency(
        &mut self,
        pod: usize,
        dependency: usize,
        asks: Option<(crate::scenario::PoolCheck, Millis)>,
    ) -> policy::Call {
        let caller =
            asks.and(self.pods[pod].process.as_ref())
                .map(|process| dependencies::Caller {
                    exhausted: process.pool_exhausted(dependency),
                    hung: process
                        .inflight
                        .iter()
                        .filter(|(_, on)| usize::from(*on) == dependency)
                        .count() as u32,
                    share: self.traffic.share(pod),
                });
        let (faults, now, rng) = (&self.faults, self.now, &mut self.rng);
        self.dependencies
            .call((pod, dependency), asks, caller, faults, now, rng)
    }

    /// What becomes of `pod`'s requests right now.
    fn pod_outcome(&self, pod: usize) -> traffic::Outcome {
        self.dependencies.pod_outcome(
            (pod, self.pods[pod].serving()),
            &self.policy,
            self.traffic.share(pod),
            &self.faults,
            self.now,
        )
    }

    /// Whether any of the pod's checks fails while its fallback serves in its place now.
    fn serves_degraded(&self, pod: usize) -> bool {
        self.pods[pod].serving().is_some() && self.policy.serves_degraded(pod, self.now)
    }

    /// Brings `pod`'s passive runs up to date with its conditions now: how many of its real
    /// requests reach each checked dependency, what fraction of those calls fail and how
    /// long a failure takes to be reported.
    fn update_passive(&mut self, pod: usize) {
        let now = self.now;
        let rate_per_ms = self.scenario.requests.rate / 1000.0;
        let process = self.pods[pod].process.as_ref().map(|process| process.id);
        let conditions = |dependency: usize| {
            let share = self.traffic.share(pod);
            let call = |process: &pod::Process, need: usize| {
                self.dependencies
                    .request_call((pod, process), need, share, &self.faults, now)
            };
            self.pods[pod].serving().map(|process| {
                // Requests call their dependencies in turn and stop at the first failure.
                let mut reaching = 0.0;
                for class in &self.scenario.requests.mix {
                    let mut reach = 1.0;
                    for &need in &class.needs {
                        match self.policy.fare(pod, class, need, now) {
                            Fare::Direct => {
                                if need == dependency {
                                    reaching += class.share * reach;
                                    break;
                                }
                                reach *= call(process, need).0;
                            }
                            // The handler answers from the fallback and does not call
                            // `need`; the rest it refuses.
                            Fare::Fallback {
                                dependency: instead,
                                share,
                            } => {
                                if instead == dependency {
                                    reaching += class.share * reach * share;
                                    break;
                                }
                                if need == dependency {
                                    break;
                                }
                                reach *= share * call(process, instead).0;
                            }
                        }
                    }
                }
                let (available, delay) = call(process, dependency);
                (available, delay, rate_per_ms * reaching)
            })
        };
        self.passive.update(
            (pod, process),
            &conditions,
            &self.traffic,
            now,
            &mut self.effects,
        );
    }

    /// Reports of the conditions a passive run entered start to arrive.
    fn passive_resume(&mut self, pod: usize, passive: usize, process: u32, epoch: u32) {
        let current = self.pods[pod].process.as_ref().map(|state| state.id);
        let run = (process, epoch);
        if self
            .passive
            .resume((pod, passive), run, current, &self.traffic)
        {
            self.schedule_passive_due();
        }
    }

    /// Schedules the real time of the earliest passive run due.
    fn schedule_passive_due(&mut self) {
        let pods = &self.pods;
        let process_of = |pod: usize| pods[pod].process.as_ref().map(|state| state.id);
        let clock = (self.now, self.scenario.duration);
        self.passive
            .schedule_due(&process_of, &self.traffic, clock, &mut self.effects);
    }

    /// The earliest passive run is due: the threshold-th failure in a row was reported.
    /// probity's `Reporter::failure` records a forced failure (unhealthy at once, the rise
    /// count starts over) and wakes the poller when that turns the check unhealthy.
    fn passive_due(&mut self, epoch: u32) {
        let pods = &self.pods;
        let process_of = |pod: usize| pods[pod].process.as_ref().map(|state| state.id);
        let Some(due) = self.passive.due(epoch, &process_of, &self.traffic) else {
            return;
        };
        if let Some((pod, passive, check)) = due {
            let fell = self
                .policy
                .force_unhealthy(pod, check, self.now, &mut self.effects);
            self.apply_effects();
            if let Some(process) = self.pods[pod].process.as_ref().map(|state| state.id) {
                self.passive.time_run(pod, passive, process, &self.traffic);
            }
            if fell {
                self.repoll(pod, check);
            }
        }
        self.schedule_passive_due();
    }

    /// Polls `check` in `pod` now instead of at the next tick (probity's `wake`).
    fn repoll(&mut self, pod: usize, check: usize) {
        if let Some((process, epoch)) = self.policy.repoll(pod, check) {
            self.poll(pod, check, process, epoch);
        }
    }

    /// Records the pod's state after a change (see [`measure::Measurements::record_state`]);
    /// the keep-alive clients follow its membership, and its connections close if it stopped
    /// accepting them.
    fn record_pod_state(&mut self, pod: usize) {
        let member = self.in_rotation(pod);
        let state = &self.pods[pod];
        let observed = measure::Observed {
            lane: state.lane(member),
            member,
            drainable: state.drainable(),
        };
        let accepts = state.accepts();
        let onset = self.faults.first_onset;
        if self
            .measure
            .record_state(pod, observed, self.now, onset, self.initialising)
            && let Some(connections) = self.connections.as_mut()
        {
            connections.set_member(pod, member);
        }
        if !accepts {
            self.server_closed(pod);
        }
    }

    /// The pod fails requests, or serves degraded, in rotation after the onset: the
    /// measurements note it.
    fn note_affected(&mut self, pod: usize) {
        let Some(onset) = self.faults.first_onset else {
            return;
        };
        let now = self.now;
        if self.traffic.flows[pod].failure > 0.0 {
            self.measure.note_failing(pod, now, onset);
        }
        if self.policy.fallbacks().any()
            && self.measure.watches_degraded(pod, now, onset)
            && self.serves_degraded(pod)
        {
            self.measure.note_degraded(pod, now);
        }
    }

    /// The pod's process stopped accepting connections: those established to it close.
    fn server_closed(&mut self, pod: usize) {
        let clock = (self.now, self.scenario.requests.rate);
        let close = self.scenario.app.close_connections_when_unready;
        if let Some(connections) = self.connections.as_mut() {
            let reception = reception(&self.pods, close);
            connections.server_closed(pod, clock, &reception, &mut self.effects);
        }
        self.apply_effects();
    }

    /// The pod's readiness changed: the router hears of it.
    fn readiness_changed(&mut self, pod: usize, ready: bool) {
        let (now, effects) = (self.now, &mut self.effects);
        self.rotation.readiness_changed(pod, ready, now, effects);
        self.apply_effects();
    }

    /// Whether `pod` is in rotation: the router counts it healthy and no operator drained it.
    fn in_rotation(&self, pod: usize) -> bool {
        !self.pods[pod].manual_drained && self.rotation.router.healthy(pod)
    }

    /// The pod changed in a way its traffic may feel: re-evaluate it before time moves on.
    fn mark(&mut self, pod: usize) {
        self.wake(pod);
        self.changes.mark(pod);
    }

    /// Every pod may fare differently now.
    fn mark_all(&mut self) {
        self.changes.mark_all();
    }

    /// The pod changed: mark it and record its state.
    fn pod_changed(&mut self, pod: usize) {
        self.mark(pod);
        self.record_pod_state(pod);
    }

    /// A pod's routing weight: its pinned connections with keep-alive clients, else the
    /// router's weight while it is a member.
    fn weight_of(&self, pod: usize, member: bool) -> f64 {
        match &self.connections {
            Some(connections) => f64::from(connections.pinned(pod)),
            None if member => self.rotation.router.weight(pod),
            None => 0.0,
        }
    }

    /// Settles the instant that just ended: the changed pods' membership, weight and failure,
    /// the split, and what depends on shares (outlier detection, passive runs).
    fn settle(&mut self) {
        // Every event of the instant has run.
        self.current_order = Order::MAX;
        if self.rotation.router.take_all_changed() {
            // The router changed every pod's membership at once (Envoy entering or leaving
            // panic over its endpoints).
            for pod in 0..self.pods.len() {
                self.record_pod_state(pod);
            }
            self.changes.all = true;
        }
        let (mut pods, all) = self.changes.take(self.pods.len());
        let members_before = self.traffic.members();
        let mut reweighted = Vec::new();
        for &pod in &pods {
            let member = self.in_rotation(pod);
            if member != self.traffic.flows[pod].member {
                self.rotation
                    .router
                    .membership_changed(pod, member, &mut reweighted);
            }
            let weight = self.weight_of(pod, member);
            let outcome = self.pod_outcome(pod);
            self.traffic.set(pod, member, weight, outcome);
        }
        for &pod in &reweighted {
            let flow = &self.traffic.flows[pod];
            let (member, outcome) = (
                flow.member,
                traffic::Outcome {
                    failure: flow.failure,
                    degraded: flow.degraded,
                },
            );
            let weight = self.weight_of(pod, member);
            self.traffic.set(pod, member, weight, outcome);
        }
        let pod_count = self.pods.len();
        let split = match &self.connections {
            Some(connections) => Split::Connections {
                clients: connections.clients(),
            },
            None => self
                .rotation
                .router
                .split(self.traffic.members(), pod_count),
        };
        let measure = &mut self.measure;
        let mut split_changed =
            self.traffic
                .apply(split, pod_count, &mut |from, to, rate, failure| {
                    measure.record_traffic(from, to, rate, failure)
                });
        if self.share_dependent {
            // Failures follow the pod's share of traffic, which any change of members moves:
            // re-evaluate every pod then, with the shares now in force.
            let shares_moved = split_changed || self.traffic.members() != members_before;
            let again: Vec<usize> = if shares_moved {
                (0..pod_count).collect()
            } else {
                pods.clone()
            };
            for pod in again {
                let flow = &self.traffic.flows[pod];
                let (member, weight) = (flow.member, flow.weight);
                let outcome = self.pod_outcome(pod);
                self.traffic.set(pod, member, weight, outcome);
            }
            let measure = &mut self.measure;
            self.traffic
                .apply(split, pod_count, &mut |from, to, rate, failure| {
                    measure.record_traffic(from, to, rate, failure)
                });
            split_changed |= shares_moved;
        }
        if split_changed && !all {
            pods = (0..pod_count).collect();
        } else if !reweighted.is_empty() {
            pods.extend(reweighted);
            pods.sort_unstable();
            pods.dedup();
        }
        for &pod in &pods {
            self.note_affected(pod);
            let watched = (
                self.traffic.flows[pod].failure,
                self.traffic.share(pod),
                self.scenario.requests.rate,
            );
            let (now, effects) = (self.now, &mut self.effects);
            self.rotation.watch_outlier(pod, watched, now, effects);
            self.apply_effects();
        }
        for &pod in &pods {
            self.update_passive(pod);
        }
        self.schedule_passive_due();
        if self.policy.fallbacks().any() {
            for &pod in &pods {
                self.policy
                    .schedule_reassessment(pod, self.now, &mut self.effects);
            }
        }
    }

    /// Integrates the traffic up to `to`.
    fn advance(&mut self, to: Millis) {
        self.traffic.advance(to);
    }

    /// Ends the traffic's stretch in force: the totals and the time series are complete.
    fn finish_traffic(&mut self) {
        let measure = &mut self.measure;
        self.traffic
            .finish(&mut |from, to, rate, failure| measure.record_traffic(from, to, rate, failure));
    }
}
