//! The discrete-event loop: pods, probes, pollers, routers, faults and traffic.
//!
//! Time is whole milliseconds. Events sit in a binary heap ordered by (time, sequence), so
//! events at the same instant run in the order they were scheduled and a run is a pure
//! function of the scenario and the seed. Traffic is a fluid: between two events nothing that
//! decides where requests go or whether they fail can change, so the requests of each interval
//! are split over the instances in proportion to their routing shares and failed in proportion
//! to their failure fractions. Only state changes cost O(fleet); a probe that changes nothing
//! costs O(1).

use crate::report::{
    FaultSummary, InstanceReport, KillReason, KillRecord, LaneSpan, LaneState, Report,
};
use crate::scenario::{
    BackoffRequeue, CheckTarget, EndpointMode, FaultKind, Handler, InternalKind, Membership,
    OutageBehaviour, ProbeSpec, Routing, Scenario, Start,
};
use crate::time::Millis;
use probity::Tier;
use probity_contract::kube::backoff::{CrashLoopBackOff, RestartDecision};
use probity_contract::kube::prober::{ContainerView, Gate, ProbeResult, ProbeWorker, SetResult};
use probity_contract::probe::ProbeKind;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::time::Duration;

const KINDS: [ProbeKind; 3] = [
    ProbeKind::Liveness,
    ProbeKind::Readiness,
    ProbeKind::Startup,
];

fn kind_index(kind: ProbeKind) -> usize {
    match kind {
        ProbeKind::Liveness => 0,
        ProbeKind::Readiness => 1,
        ProbeKind::Startup => 2,
    }
}

/// Runs a scenario with a seed and returns what it measured.
pub fn run(scenario: &Scenario, seed: u64) -> Report {
    let mut sim = Sim::new(scenario, seed);
    sim.run();
    sim.report()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    ProbeTick {
        inst: u32,
        kind: u8,
        epoch: u32,
    },
    ProbeDone {
        inst: u32,
        kind: u8,
        container: u32,
        ok: bool,
    },
    PollStart {
        inst: u32,
        check: u16,
        process: u32,
        epoch: u32,
    },
    PollDone {
        inst: u32,
        check: u16,
        process: u32,
        ok: bool,
    },
    BootDone {
        inst: u32,
        process: u32,
        epoch: u32,
    },
    KillDone {
        inst: u32,
        container: u32,
    },
    StartContainer {
        inst: u32,
        epoch: u32,
    },
    EndpointUpdate {
        inst: u32,
        ready: bool,
    },
    LbTick {
        inst: u32,
        epoch: u32,
    },
    LbDone {
        inst: u32,
        epoch: u32,
        ok: bool,
        definitive: bool,
    },
    EjectEnd {
        inst: u32,
        epoch: u32,
    },
    Eject {
        inst: u32,
        epoch: u32,
    },
    HungEnd {
        inst: u32,
        process: u32,
    },
    PassiveFire {
        inst: u32,
        check: u16,
        process: u32,
        epoch: u32,
    },
    FaultStart {
        index: u32,
    },
    FaultEnd {
        index: u32,
    },
    ConnectionEnd {
        conn: u32,
        epoch: u32,
    },
    Boundary,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Container {
    /// No container yet, or waiting to restart.
    Waiting,
    /// Running.
    Running,
    /// Killed: still running until it exits.
    Terminating,
}

#[derive(Debug, Clone)]
struct CheckState {
    healthy: bool,
    ever_healthy: bool,
    ok_run: u32,
    fail_run: u32,
    last_result_at: Option<Millis>,
    /// Bumped to cancel the scheduled poll when a re-poll takes its place.
    poll_epoch: u32,
    /// A poll is in flight.
    polling: bool,
    /// A re-poll was asked for while a poll was in flight: it runs when that one ends.
    repoll: bool,
    passive: PassiveRun,
}

impl CheckState {
    fn new(healthy: bool, ok_run: u32, last_result_at: Option<Millis>) -> Self {
        CheckState {
            healthy,
            ever_healthy: healthy,
            ok_run,
            fail_run: 0,
            last_result_at,
            poll_epoch: 0,
            polling: false,
            repoll: false,
            passive: PassiveRun::new(),
        }
    }
}

/// One process's run of failed real requests for a check (probity's `passive_run`), as a
/// fluid: reports arrive at `rate` per millisecond. While every call fails, `run` counts
/// failures in a row and the check is failed at each multiple of the threshold (the poller is
/// woken only by the failure that turns the check unhealthy); while only
/// some fail, `run` counts reports toward the expected number before a run of threshold
/// failures in a row; while none fail, reported successes keep it at zero.
#[derive(Debug, Clone)]
struct PassiveRun {
    run: f64,
    /// The `run` at which the scheduled failure fires.
    target: f64,
    /// Fraction of calls to the dependency that succeed.
    available: f64,
    /// Time from a request to the report of its failed call.
    delay: Millis,
    /// Reports of the current conditions arrive from here on.
    from: Millis,
    /// Reports up to here are counted.
    since: Millis,
    /// Reports per millisecond.
    rate: f64,
    /// The next report resets the run (the current conditions have successes).
    reset: bool,
    fire_at: Option<Millis>,
    epoch: u32,
}

impl PassiveRun {
    fn new() -> Self {
        PassiveRun {
            run: 0.0,
            target: 0.0,
            available: 1.0,
            delay: 0,
            from: 0,
            since: 0,
            rate: 0.0,
            reset: false,
            fire_at: None,
            epoch: 0,
        }
    }

    /// Counts the reports that arrived up to `t`.
    fn account(&mut self, t: Millis) {
        let from = self.since.max(self.from);
        if self.rate > 0.0 && t > from {
            if self.reset {
                self.run = 0.0;
                self.reset = false;
            }
            if self.available < 1.0 {
                self.run += self.rate * (t - from) as f64;
            }
        }
        self.since = self.since.max(t);
    }

    /// New conditions at `t`: the fraction of calls that succeed and how long a failing call
    /// takes to be reported.
    fn enter(&mut self, available: f64, delay: Millis, t: Millis) {
        if available == self.available && delay == self.delay {
            return;
        }
        if available <= 0.0 && self.available <= 0.0 {
            // Still failing: the run goes on (only the cause changed).
            return;
        }
        if available <= 0.0 {
            // Every call fails from now on. If no request reported anything since the last
            // failures, the run goes on; otherwise `run` holds either zero (a success reset it)
            // or calls counted toward a partial failure's expected run, which are not failures
            // in a row: start from zero.
            if !self.reset {
                self.run = 0.0;
            }
            self.reset = false;
        } else {
            // Some calls succeed: the first report resets the run (`account`).
            self.reset = true;
        }
        self.available = available;
        self.delay = delay;
        self.from = t + delay;
    }

    /// The `run` at which the check is failed next: the next multiple of the threshold while
    /// every call fails; while only a fraction `q` fails, the expected number of calls before
    /// `n` failures in a row, `(1 − qⁿ) / ((1 − q) qⁿ)`; `None` while no call fails.
    fn next_target(&self, threshold: u32) -> Option<f64> {
        let n = threshold as f64;
        if self.available <= 0.0 {
            Some(((self.run / n).floor() + 1.0) * n)
        } else if self.available >= 1.0 {
            None
        } else {
            let qn = (1.0 - self.available).powi(threshold.min(i32::MAX as u32) as i32);
            let expected = (1.0 - qn) / (self.available * qn);
            expected.is_finite().then_some(expected)
        }
    }
}

#[derive(Debug, Clone)]
struct Process {
    id: u32,
    booted: bool,
    listening: bool,
    boot_remaining: Millis,
    boot_rate: f64,
    boot_since: Millis,
    boot_epoch: u32,
    sigterm_at: Option<Millis>,
    deadlocked_at: Option<Millis>,
    ignores_sigterm: bool,
    stalled: bool,
    pool_exhausted: u64,
    checks: Vec<CheckState>,
    inflight: Vec<(Millis, u16)>,
    /// The last answer the process gave a readiness probe was a failure.
    answered_unready: bool,
}

/// A keep-alive client connection (`requests.keep_alive`).
#[derive(Debug, Clone, Copy)]
struct Connection {
    /// The pod it is pinned to; `None` while kube-proxy has no endpoint to send it to.
    instance: Option<usize>,
    /// Whether the pod accepted it (a refused connect carries one failed request).
    established: bool,
    /// When it ends unless the server closes it first.
    ends_at: Millis,
    epoch: u32,
}

#[derive(Debug, Clone, Copy)]
struct WorkerClock {
    epoch: u32,
    busy: bool,
    pending: bool,
}

#[derive(Debug, Clone, Default)]
struct LbState {
    // HAProxy's health counter (0 ..= rise+fall-1); Envoy/ALB use the runs below.
    health: u32,
    healthy: bool,
    ok_run: u32,
    fail_run: u32,
    epoch: u32,
    ejected: bool,
    ejections: u32,
    eject_epoch: u32,
    eject_pending: bool,
}

struct Instance {
    container: Container,
    container_id: u32,
    started_at: Millis,
    started: bool,
    last_finished: Option<Millis>,
    backoff: CrashLoopBackOff,
    start_epoch: u32,
    restart_after_kill: Option<RestartDecision>,
    process: Option<Process>,
    workers: [ProbeWorker; 3],
    clocks: [WorkerClock; 3],
    results: [ProbeResult; 3],
    pod_ready: bool,
    endpoint_ready: bool,
    manual_drained: bool,
    lb: LbState,
    // traffic
    share: f64,
    failure: f64,
    member: bool,
    requests: f64,
    failed: f64,
    out_of_rotation_ms: Millis,
    out_of_rotation_requests: f64,
    // measurement
    restarts: u32,
    drains: u32,
    affected_at: Option<Millis>,
    drained_at: Option<Millis>,
    lanes: Vec<(Millis, LaneState)>,
    in_rotation: bool,
}

struct Sim<'a> {
    s: &'a Scenario,
    rng: fastrand::Rng,
    seed: u64,
    now: Millis,
    seq: u64,
    queue: BinaryHeap<Reverse<(Millis, u64, Ev)>>,
    instances: Vec<Instance>,
    probes: [Option<ProbeSpec>; 3],
    // faults
    fault_active: Vec<bool>,
    first_onset: Option<Millis>,
    reference_end: Option<Millis>,
    // traffic
    dirty: bool,
    last: Millis,
    fleet_failure: f64,
    refused: f64,
    buckets: Vec<(f64, f64)>,
    total_requests: f64,
    total_failed: f64,
    total_refused: f64,
    // load
    probe_requests: u64,
    dependency_calls: Vec<u64>,
    // ring
    ring_shares: Vec<f64>,
    ring_members: Vec<bool>,
    // misc
    kills: Vec<KillRecord>,
    oom_kills: u32,
    max_inflight: u32,
    rotation_changes: u32,
    booting_on: Vec<u32>,
    instances_since: Millis,
    initialising: bool,
    // pollers and passive reports
    polled: Vec<bool>,
    passive: Vec<PassiveCheck>,
    // keep-alive client connections
    connections: Vec<Connection>,
    conn_rng: fastrand::Rng,
}

/// A check fed by passive reports: the application reports the outcome of every real call to
/// its dependency.
#[derive(Debug, Clone, Copy)]
struct PassiveCheck {
    check: usize,
    dependency: usize,
    threshold: u32,
}

impl<'a> Sim<'a> {
    fn new(s: &'a Scenario, seed: u64) -> Self {
        let n = s.fleet.replicas;
        // Only checks read from a snapshot have pollers.
        let polled: Vec<bool> = s
            .app
            .checks
            .iter()
            .enumerate()
            .map(|(c, check)| {
                matches!(check.target, CheckTarget::Dependency(_))
                    && s.app.endpoints.iter().any(|endpoint| {
                        endpoint.mode == EndpointMode::Cached && endpoint.checks.contains(&c)
                    })
            })
            .collect();
        let passive = s
            .app
            .checks
            .iter()
            .enumerate()
            .filter(|(c, _)| polled[*c])
            .filter_map(
                |(check, spec)| match (spec.target, spec.passive_failure_threshold) {
                    (CheckTarget::Dependency(dependency), Some(threshold)) if threshold > 0 => {
                        Some(PassiveCheck {
                            check,
                            dependency,
                            threshold,
                        })
                    }
                    _ => None,
                },
            )
            .collect();
        let buckets = s.duration.div_ceil(s.measure.resolution) as usize;
        let instances = (0..n)
            .map(|_| Instance {
                container: Container::Waiting,
                container_id: 0,
                started_at: 0,
                started: false,
                last_finished: None,
                backoff: CrashLoopBackOff::default(),
                start_epoch: 0,
                restart_after_kill: None,
                process: None,
                workers: KINDS.map(ProbeWorker::new),
                clocks: [WorkerClock {
                    epoch: 0,
                    busy: false,
                    pending: false,
                }; 3],
                results: [
                    ProbeResult::Success,
                    ProbeResult::Failure,
                    ProbeResult::Unknown,
                ],
                pod_ready: false,
                endpoint_ready: false,
                manual_drained: false,
                lb: LbState::default(),
                share: 0.0,
                failure: 0.0,
                member: false,
                requests: 0.0,
                failed: 0.0,
                out_of_rotation_ms: 0,
                out_of_rotation_requests: 0.0,
                restarts: 0,
                drains: 0,
                affected_at: None,
                drained_at: None,
                lanes: Vec::new(),
                in_rotation: false,
            })
            .collect();
        Sim {
            s,
            rng: fastrand::Rng::with_seed(seed),
            seed,
            now: 0,
            seq: 0,
            queue: BinaryHeap::new(),
            instances,
            probes: [
                s.probes.liveness.clone(),
                s.probes.readiness.clone(),
                s.probes.startup.clone(),
            ],
            fault_active: vec![false; s.faults.len()],
            first_onset: None,
            reference_end: None,
            dirty: true,
            last: 0,
            fleet_failure: 0.0,
            refused: 0.0,
            buckets: vec![(0.0, 0.0); buckets.max(1)],
            total_requests: 0.0,
            total_failed: 0.0,
            total_refused: 0.0,
            probe_requests: 0,
            dependency_calls: vec![0; s.dependencies.len()],
            ring_shares: vec![0.0; n],
            ring_members: vec![false; n],
            kills: Vec::new(),
            oom_kills: 0,
            max_inflight: 0,
            rotation_changes: 0,
            booting_on: vec![0; s.dependencies.len()],
            instances_since: 0,
            initialising: true,
            polled,
            passive,
            connections: Vec::new(),
            // Its own stream, so connection choices leave every other draw as it is.
            conn_rng: fastrand::Rng::with_seed(mix(seed ^ 0x6B65_6570_616C_6976)),
        }
    }

    fn schedule(&mut self, at: Millis, ev: Ev) {
        self.seq += 1;
        self.queue.push(Reverse((at, self.seq, ev)));
    }

    // ------------------------------------------------------------------------------------
    // Set-up and main loop
    // ------------------------------------------------------------------------------------

    fn run(&mut self) {
        self.init_fleet();
        for (index, fault) in self.s.faults.iter().enumerate() {
            self.schedule(
                fault.at,
                Ev::FaultStart {
                    index: index as u32,
                },
            );
            if let Some(until) = fault.until {
                self.schedule(
                    until,
                    Ev::FaultEnd {
                        index: index as u32,
                    },
                );
            }
            if let FaultKind::FlappingDependency { period, down, .. } = fault.kind {
                let end = fault.until.unwrap_or(self.s.duration);
                let mut cycle = fault.at;
                while cycle < end && cycle < self.s.duration {
                    self.schedule(cycle, Ev::Boundary);
                    self.schedule((cycle + down).min(end), Ev::Boundary);
                    cycle += period;
                }
            }
        }
        let end = self.s.duration;
        while let Some(&Reverse((at, _, _))) = self.queue.peek() {
            if self.dirty && at > self.last {
                // The instant is over: settle it before time moves on. Passive reports may
                // schedule something before `at`, so look at the queue again.
                self.settle();
                continue;
            }
            if at >= end {
                break;
            }
            let Some(Reverse((at, _, ev))) = self.queue.pop() else {
                break;
            };
            self.advance(at);
            self.now = at;
            self.handle(ev);
        }
        self.advance(end);
        self.now = end;
        self.flush_instances();
    }

    fn init_fleet(&mut self) {
        let n = self.s.fleet.replicas;
        for i in 0..n {
            match self.s.fleet.start {
                Start::Steady => self.init_steady(i),
                Start::Cold => {
                    let at = self.s.fleet.stagger * i as u64;
                    self.add_pod(i, at);
                }
            }
            self.init_lb(i);
        }
        for i in 0..n {
            self.touch(i);
        }
        self.init_connections();
        self.initialising = false;
    }

    /// A pod that has run for a long time: booted, started, ready, probe tickers at random
    /// phases (pods are admitted at different times, `worker_legacy.go` runs the first probe
    /// at admission and then every period).
    fn init_steady(&mut self, i: usize) {
        let checks = self.steady_checks();
        let inst = &mut self.instances[i];
        inst.container = Container::Running;
        inst.container_id = 1;
        inst.started_at = 0;
        inst.started = true;
        inst.pod_ready = true;
        inst.endpoint_ready = true;
        inst.results = [
            ProbeResult::Success,
            ProbeResult::Success,
            ProbeResult::Success,
        ];
        inst.workers = KINDS.map(|kind| ProbeWorker::settled(kind, 1));
        inst.process = Some(Process {
            id: 1,
            booted: true,
            listening: true,
            boot_remaining: 0,
            boot_rate: 1.0,
            boot_since: 0,
            boot_epoch: 0,
            sigterm_at: None,
            deadlocked_at: None,
            ignores_sigterm: false,
            stalled: false,
            pool_exhausted: 0,
            checks,
            inflight: Vec::new(),
            answered_unready: false,
        });
        for k in 0..3 {
            if let Some(spec) = &self.probes[k] {
                let phase = self.rng.u64(0..spec.period());
                self.schedule(
                    phase,
                    Ev::ProbeTick {
                        inst: i as u32,
                        kind: k as u8,
                        epoch: 0,
                    },
                );
            }
        }
        self.start_pollers(i, 1, true);
    }

    fn steady_checks(&self) -> Vec<CheckState> {
        self.s
            .app
            .checks
            .iter()
            .map(|check| CheckState::new(true, check.rise, Some(0)))
            .collect()
    }

    /// A new pod at `at`: the workers start (first probe at once, then every period) and the
    /// first container starts.
    fn add_pod(&mut self, i: usize, at: Millis) {
        for k in 0..3 {
            if self.probes[k].is_some() {
                let epoch = self.instances[i].clocks[k].epoch;
                self.schedule(
                    at,
                    Ev::ProbeTick {
                        inst: i as u32,
                        kind: k as u8,
                        epoch,
                    },
                );
            }
        }
        let epoch = self.instances[i].start_epoch;
        self.schedule(
            at,
            Ev::StartContainer {
                inst: i as u32,
                epoch,
            },
        );
    }

    fn init_lb(&mut self, i: usize) {
        let steady = self.s.fleet.start == Start::Steady;
        let (interval, initial) = match &self.s.routing {
            Routing::Haproxy {
                inter, rise, fall, ..
            } => {
                // Running servers are fully UP; new ones start at `rise` ("start OK but check
                // immediately": one failure marks them DOWN).
                let lb = &mut self.instances[i].lb;
                lb.health = if steady { rise + fall - 1 } else { *rise };
                lb.healthy = true;
                (*inter, true)
            }
            Routing::Envoy { interval, .. } => {
                // With a health checker, new hosts start FAILED_ACTIVE_HC.
                self.instances[i].lb.healthy = steady;
                (*interval, steady)
            }
            Routing::Alb { interval, .. } => {
                // A new target is `initial` until it passes one check.
                self.instances[i].lb.healthy = steady;
                (*interval, steady)
            }
            _ => return,
        };
        let _ = initial;
        let phase = self.rng.u64(0..interval);
        self.schedule(
            phase,
            Ev::LbTick {
                inst: i as u32,
                epoch: 0,
            },
        );
    }

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::ProbeTick { inst, kind, epoch } => {
                self.probe_tick(inst as usize, kind as usize, epoch)
            }
            Ev::ProbeDone {
                inst,
                kind,
                container,
                ok,
            } => self.probe_done(inst as usize, kind as usize, container, ok),
            Ev::PollStart {
                inst,
                check,
                process,
                epoch,
            } => self.poll_start(inst as usize, check as usize, process, epoch),
            Ev::PollDone {
                inst,
                check,
                process,
                ok,
            } => self.poll_done(inst as usize, check as usize, process, ok),
            Ev::BootDone {
                inst,
                process,
                epoch,
            } => self.boot_done(inst as usize, process, epoch),
            Ev::KillDone { inst, container } => self.kill_done(inst as usize, container),
            Ev::StartContainer { inst, epoch } => {
                let i = inst as usize;
                if self.instances[i].start_epoch == epoch
                    && self.instances[i].container == Container::Waiting
                {
                    self.try_start(i);
                }
            }
            Ev::EndpointUpdate { inst, ready } => self.endpoint_update(inst as usize, ready),
            Ev::LbTick { inst, epoch } => self.lb_tick(inst as usize, epoch),
            Ev::LbDone {
                inst,
                epoch,
                ok,
                definitive,
            } => self.lb_done(inst as usize, epoch, ok, definitive),
            Ev::Eject { inst, epoch } => self.eject(inst as usize, epoch),
            Ev::EjectEnd { inst, epoch } => {
                let i = inst as usize;
                if self.instances[i].lb.eject_epoch == epoch && self.instances[i].lb.ejected {
                    self.instances[i].lb.ejected = false;
                    self.routing_changed(i);
                }
            }
            Ev::HungEnd { .. } => {
                self.dirty = true;
            }
            Ev::PassiveFire {
                inst,
                check,
                process,
                epoch,
            } => self.passive_fire(inst as usize, check as usize, process, epoch),
            Ev::FaultStart { index } => self.fault_start(index as usize),
            Ev::ConnectionEnd { conn, epoch } => {
                if self.connections[conn as usize].epoch == epoch {
                    self.connect(conn as usize);
                }
            }
            Ev::FaultEnd { index } => {
                self.fault_active[index as usize] = false;
                self.dirty = true;
                self.refresh_boots();
            }
            Ev::Boundary => {
                self.dirty = true;
                self.refresh_boots();
            }
        }
    }

    // ------------------------------------------------------------------------------------
    // Containers
    // ------------------------------------------------------------------------------------

    fn view(&self, i: usize) -> Option<ContainerView> {
        let inst = &self.instances[i];
        if inst.container_id == 0 {
            return None;
        }
        Some(ContainerView {
            id: inst.container_id,
            running: inst.container != Container::Waiting,
            started_at: at(inst.started_at),
            started: inst.started,
        })
    }

    fn try_start(&mut self, i: usize) {
        let now = self.now;
        let newest = self.instances[i].last_finished;
        match self.instances[i].backoff.decide(newest.map(at), at(now)) {
            RestartDecision::StartNow => self.start_container(i),
            RestartDecision::WaitUntil(until) => self.schedule_retry(i, millis(until)),
        }
    }

    fn schedule_retry(&mut self, i: usize, until: Millis) {
        let at = match self.s.kubelet.backoff_requeue {
            BackoffRequeue::Exact => until,
            BackoffRequeue::Jitter => {
                // The pod worker retries every wait.Jitter(10s, 0.5): 10–15 s apart.
                let mut at = self.now;
                while at < until {
                    at += 10_000 + self.rng.u64(0..5_000);
                }
                at
            }
        };
        self.instances[i].start_epoch += 1;
        let epoch = self.instances[i].start_epoch;
        self.schedule(
            at.max(self.now),
            Ev::StartContainer {
                inst: i as u32,
                epoch,
            },
        );
    }

    fn start_container(&mut self, i: usize) {
        let now = self.now;
        let checks = self
            .s
            .app
            .checks
            .iter()
            .map(|_| CheckState::new(false, 0, None))
            .collect();
        let inst = &mut self.instances[i];
        if inst.container_id > 0 {
            inst.restarts += 1;
        }
        inst.container_id += 1;
        let id = inst.container_id;
        inst.container = Container::Running;
        inst.started_at = now;
        inst.restart_after_kill = None;
        // A new container ID: readiness starts failing, liveness passing, startup unknown.
        inst.results = [
            ProbeResult::Success,
            ProbeResult::Failure,
            ProbeResult::Unknown,
        ];
        inst.started = self.probes[2].is_none();
        inst.process = Some(Process {
            id,
            booted: false,
            listening: self.s.app.listen_during_boot,
            boot_remaining: self.s.app.boot,
            boot_rate: 1.0,
            boot_since: now,
            boot_epoch: 0,
            sigterm_at: None,
            deadlocked_at: None,
            ignores_sigterm: false,
            stalled: false,
            pool_exhausted: 0,
            checks,
            inflight: Vec::new(),
            answered_unready: false,
        });
        for &dep in &self.s.app.boot_needs {
            self.booting_on[dep] += 1;
        }
        self.start_pollers(i, id, false);
        self.refresh_boots();
        self.reschedule_boot(i);
        if self.instances[i].started {
            self.manual_readiness_trigger(i);
        }
        self.update_pod_ready(i);
        self.dirty = true;
        self.touch(i);
    }

    fn start_pollers(&mut self, i: usize, process: u32, steady: bool) {
        for (c, check) in self.s.app.checks.iter().enumerate() {
            if !self.polled[c] {
                continue;
            }
            let offset = if steady {
                self.rng.u64(0..check.interval)
            } else {
                0
            };
            self.schedule(
                self.now + offset,
                Ev::PollStart {
                    inst: i as u32,
                    check: c as u16,
                    process,
                    epoch: 0,
                },
            );
        }
    }

    /// Boot progress: a warm-up that needs a dependency stalls while it is down and slows
    /// down while too many instances warm up against it at once (the herd model).
    fn boot_rate(&self, i: usize) -> f64 {
        let mut rate: f64 = 1.0;
        let _ = i;
        for &dep in &self.s.app.boot_needs {
            if self.dependency_down(dep) {
                return 0.0;
            }
            if let Some(herd) = self.s.dependencies[dep].herd {
                let booting = self.booting_on[dep];
                if booting > herd.max_concurrent_boots {
                    rate = rate.min(herd.max_concurrent_boots as f64 / booting as f64);
                }
            }
        }
        rate
    }

    fn refresh_boots(&mut self) {
        if self.s.app.boot_needs.is_empty() {
            return;
        }
        for i in 0..self.instances.len() {
            let booting = self.instances[i]
                .process
                .as_ref()
                .is_some_and(|p| !p.booted && self.instances[i].container != Container::Waiting);
            if booting {
                self.reschedule_boot(i);
            }
        }
    }

    fn reschedule_boot(&mut self, i: usize) {
        let now = self.now;
        let rate = self.boot_rate(i);
        let Some(p) = self.instances[i].process.as_mut() else {
            return;
        };
        if p.booted {
            return;
        }
        let done = ((now - p.boot_since) as f64 * p.boot_rate) as Millis;
        p.boot_remaining = p.boot_remaining.saturating_sub(done);
        p.boot_since = now;
        if (rate - p.boot_rate).abs() < 1e-12 && p.boot_epoch > 0 {
            return;
        }
        p.boot_rate = rate;
        p.boot_epoch += 1;
        let (id, epoch, remaining) = (p.id, p.boot_epoch, p.boot_remaining);
        if rate > 0.0 {
            let at = now + (remaining as f64 / rate).ceil() as Millis;
            self.schedule(
                at,
                Ev::BootDone {
                    inst: i as u32,
                    process: id,
                    epoch,
                },
            );
        }
    }

    fn boot_done(&mut self, i: usize, process: u32, epoch: u32) {
        let Some(p) = self.instances[i].process.as_mut() else {
            return;
        };
        if p.id != process || p.boot_epoch != epoch || p.booted {
            return;
        }
        p.booted = true;
        p.listening = true;
        for &dep in &self.s.app.boot_needs {
            self.booting_on[dep] = self.booting_on[dep].saturating_sub(1);
        }
        self.refresh_boots();
        self.dirty = true;
        self.touch(i);
    }

    /// The kubelet kills the container after a liveness or startup failure, and decides in the
    /// same sync whether to start it again (`computePodActions`, `doBackOff` on the pre-kill
    /// status).
    fn kill(&mut self, i: usize, reason: KillReason) {
        let now = self.now;
        if self.instances[i].container != Container::Running {
            return;
        }
        self.kills.push(KillRecord {
            instance: self.s.fleet.names[i].clone(),
            at_s: now as f64 / 1000.0,
            reason,
        });
        let probe_grace = match reason {
            KillReason::Liveness => self.probes[0].as_ref().and_then(|p| p.termination_grace),
            KillReason::Startup => self.probes[2].as_ref().and_then(|p| p.termination_grace),
            _ => None,
        };
        let grace = probe_grace.unwrap_or(self.s.fleet.termination_grace);
        let pre_stop = self.s.pre_stop_sleep.min(grace);
        // The rest of the grace goes to SIGTERM, with a 2 s floor (minimumGracePeriodInSeconds).
        let after_pre_stop = grace.saturating_sub(pre_stop).max(2_000);
        let newest = self.instances[i].last_finished;
        let decision = self.instances[i].backoff.decide(newest.map(at), at(now));
        let app = &self.s.app;
        let inst = &mut self.instances[i];
        inst.container = Container::Terminating;
        inst.restart_after_kill = Some(decision);
        let container = inst.container_id;
        let mut exit_after = pre_stop;
        if let Some(p) = inst.process.as_mut() {
            p.sigterm_at = Some(now + pre_stop);
            let wedged = p.stalled || (p.deadlocked_at.is_some() && p.ignores_sigterm);
            exit_after += if wedged {
                after_pre_stop
            } else {
                app.drain_delay
                    .unwrap_or(app.exit_after_sigterm)
                    .min(after_pre_stop)
            };
            if app.drain_delay.is_none() && !wedged {
                p.listening = false;
            }
        }
        self.schedule(
            now + exit_after,
            Ev::KillDone {
                inst: i as u32,
                container,
            },
        );
        self.dirty = true;
        self.touch(i);
    }

    fn kill_done(&mut self, i: usize, container: u32) {
        if self.instances[i].container_id != container
            || self.instances[i].container != Container::Terminating
        {
            return;
        }
        self.container_exited(i);
        match self.instances[i].restart_after_kill.take() {
            Some(RestartDecision::StartNow) | None => self.start_container(i),
            Some(RestartDecision::WaitUntil(_)) => {
                // The next sync sees this container as the newest exited one.
                let finished = self.now;
                let backoff = self.instances[i].backoff.current().map_or(0, millis);
                self.schedule_retry(i, finished + backoff);
            }
        }
    }

    /// The process died by itself (out of memory, failed boot): the kubelet restarts it
    /// through `doBackOff` with this container as the newest exited one.
    fn crash(&mut self, i: usize, reason: KillReason) {
        if self.instances[i].container != Container::Running {
            return;
        }
        self.kills.push(KillRecord {
            instance: self.s.fleet.names[i].clone(),
            at_s: self.now as f64 / 1000.0,
            reason,
        });
        self.container_exited(i);
        self.try_start(i);
    }

    fn container_exited(&mut self, i: usize) {
        let now = self.now;
        let was_booting = self.instances[i]
            .process
            .as_ref()
            .is_some_and(|p| !p.booted);
        let inst = &mut self.instances[i];
        inst.container = Container::Waiting;
        inst.last_finished = Some(now);
        inst.started = false;
        inst.process = None;
        if was_booting {
            for &dep in &self.s.app.boot_needs {
                self.booting_on[dep] = self.booting_on[dep].saturating_sub(1);
            }
            self.refresh_boots();
        }
        self.update_pod_ready(i);
        self.dirty = true;
        self.touch(i);
    }

    // ------------------------------------------------------------------------------------
    // Probes
    // ------------------------------------------------------------------------------------

    fn probe_tick(&mut self, i: usize, k: usize, epoch: u32) {
        let Some(period) = self.probes[k].as_ref().map(ProbeSpec::period) else {
            return;
        };
        if self.instances[i].clocks[k].epoch != epoch {
            return;
        }
        self.schedule(
            self.now + period,
            Ev::ProbeTick {
                inst: i as u32,
                kind: k as u8,
                epoch,
            },
        );
        // Go's ticker buffers one tick: a tick during a slow probe runs right after it.
        if self.instances[i].clocks[k].busy {
            self.instances[i].clocks[k].pending = true;
            return;
        }
        self.do_probe(i, k);
    }

    /// A manual trigger from `UpdatePodStatus` (a started container without a successful
    /// readiness result): probe now and reset the ticker.
    fn manual_readiness_trigger(&mut self, i: usize) {
        let Some(period) = self.probes[1].as_ref().map(ProbeSpec::period) else {
            return;
        };
        let clock = &mut self.instances[i].clocks[1];
        clock.epoch += 1;
        let epoch = clock.epoch;
        self.schedule(
            self.now + period,
            Ev::ProbeTick {
                inst: i as u32,
                kind: 1,
                epoch,
            },
        );
        if self.instances[i].clocks[1].busy {
            self.instances[i].clocks[1].pending = true;
        } else {
            self.do_probe(i, 1);
        }
    }

    fn do_probe(&mut self, i: usize, k: usize) {
        let Some(spec) = self.probes[k].clone() else {
            return;
        };
        let view = self.view(i);
        let gated = self.instances[i].workers[k].gate(&spec.timing, at(self.now), view);
        if let Some(set) = gated.set {
            self.set_result(i, k, set);
        }
        if gated.gate != Gate::Probe {
            return;
        }
        let answer = self.respond(i, spec.handler);
        if KINDS[k] == ProbeKind::Readiness
            && let Some((_, answered_ok)) = answer
        {
            self.readiness_answered(i, answered_ok);
        }
        let (duration, ok) = within(answer, spec.timeout());
        self.probe_requests += 1;
        let container = self.instances[i].container_id;
        if duration == 0 {
            self.apply_probe(i, k, container, ok);
        } else {
            self.instances[i].clocks[k].busy = true;
            self.schedule(
                self.now + duration,
                Ev::ProbeDone {
                    inst: i as u32,
                    kind: k as u8,
                    container,
                    ok,
                },
            );
        }
    }

    fn probe_done(&mut self, i: usize, k: usize, container: u32, ok: bool) {
        self.instances[i].clocks[k].busy = false;
        self.apply_probe(i, k, container, ok);
        if self.instances[i].clocks[k].pending {
            self.instances[i].clocks[k].pending = false;
            self.do_probe(i, k);
        }
    }

    fn apply_probe(&mut self, i: usize, k: usize, container: u32, ok: bool) {
        let Some(spec) = self.probes[k].clone() else {
            return;
        };
        if self.instances[i].workers[k].container() != Some(container) {
            return;
        }
        if let Some(set) = self.instances[i].workers[k].record(&spec.timing, ok) {
            self.set_result(i, k, set);
        }
    }

    /// The results manager: only a change of value has effects (`results.Manager.Set`).
    fn set_result(&mut self, i: usize, k: usize, set: SetResult) {
        if set.container != self.instances[i].container_id {
            return;
        }
        if self.instances[i].results[k] == set.result {
            return;
        }
        self.instances[i].results[k] = set.result;
        match (KINDS[k], set.result) {
            (ProbeKind::Liveness, ProbeResult::Failure) => self.kill(i, KillReason::Liveness),
            (ProbeKind::Startup, ProbeResult::Failure) => self.kill(i, KillReason::Startup),
            (ProbeKind::Startup, ProbeResult::Success)
                if self.instances[i].container == Container::Running =>
            {
                self.instances[i].started = true;
                self.manual_readiness_trigger(i);
                self.update_pod_ready(i);
                self.touch(i);
            }
            (ProbeKind::Readiness, _) => self.update_pod_ready(i),
            _ => {}
        }
    }

    /// Container Ready = running ∧ Started ∧ (readiness Success, or no readiness probe).
    fn update_pod_ready(&mut self, i: usize) {
        let inst = &self.instances[i];
        let running = inst.container != Container::Waiting;
        let readiness_ok = self.probes[1].is_none() || inst.results[1] == ProbeResult::Success;
        let ready = running && inst.started && readiness_ok;
        if ready == inst.pod_ready {
            return;
        }
        self.instances[i].pod_ready = ready;
        let propagation = match &self.s.routing {
            Routing::KubernetesService { propagation } => Some(*propagation),
            Routing::ConsistentHash {
                membership: Membership::Endpoints,
                propagation,
                ..
            } => Some(*propagation),
            _ => None,
        };
        if let Some(delay) = propagation {
            // kubelet status → EndpointSlice controller → kube-proxy (minSyncPeriod 1 s).
            self.schedule(
                self.now + delay,
                Ev::EndpointUpdate {
                    inst: i as u32,
                    ready,
                },
            );
        }
    }

    fn endpoint_update(&mut self, i: usize, ready: bool) {
        if self.instances[i].endpoint_ready == ready {
            return;
        }
        self.instances[i].endpoint_ready = ready;
        self.routing_changed(i);
    }

    // ------------------------------------------------------------------------------------
    // What the application answers
    // ------------------------------------------------------------------------------------

    /// A call to an endpoint with a caller timeout: (time until the caller has an answer,
    /// success).
    fn respond_with_timeout(
        &mut self,
        i: usize,
        handler: Handler,
        timeout: Millis,
    ) -> (Millis, bool) {
        let answer = self.respond(i, handler);
        within(answer, timeout)
    }

    /// What the instance answers: `None` when the call hangs, else (latency, 2xx).
    fn respond(&mut self, i: usize, handler: Handler) -> Option<(Millis, bool)> {
        let now = self.now;
        let inst = &self.instances[i];
        let Some(p) = inst.process.as_ref() else {
            return Some((0, false)); // connection refused
        };
        if inst.container == Container::Waiting || !p.listening {
            return Some((0, false));
        }
        let Handler::Http { endpoint } = handler else {
            // TCP: the kernel completes the handshake whatever the handlers do.
            return Some((0, true));
        };
        if p.stalled {
            return None;
        }
        let endpoint = &self.s.app.endpoints[endpoint];
        if let Some(at) = p.deadlocked_at {
            let detector = endpoint.checks.iter().find_map(|&c| {
                let check = &self.s.app.checks[c];
                (check.target == CheckTarget::Internal(InternalKind::Deadlock))
                    .then_some(check.detect_after)
            });
            return match detector {
                // The detector's thread answers once it has seen the deadlock.
                Some(detect) if now >= at + detect => Some((0, false)),
                _ => None,
            };
        }
        let mut ok = true;
        let mut total: Millis = 0;
        let mut longest: Millis = 0;
        let checks = endpoint.checks.clone();
        let mode = endpoint.mode;
        let parallel = endpoint.parallel;
        let endpoint_timeout = endpoint.timeout;
        for c in checks {
            let check = &self.s.app.checks[c];
            let tier = check.tier;
            let passed = match check.target {
                CheckTarget::Internal(kind) => {
                    let p = self.instances[i].process.as_ref()?;
                    match kind {
                        InternalKind::Boot => p.booted,
                        InternalKind::Shutdown => p.sigterm_at.is_none_or(|at| now < at),
                        InternalKind::Deadlock
                        | InternalKind::RuntimeStall
                        | InternalKind::AppState => true,
                    }
                }
                CheckTarget::Dependency(dep) => match mode {
                    EndpointMode::Cached => {
                        let p = self.instances[i].process.as_ref()?;
                        let state = &p.checks[c];
                        let fresh = match (check.staleness, state.last_result_at) {
                            (Some(limit), Some(at)) => now.saturating_sub(at) <= limit,
                            (Some(_), None) => false,
                            (None, _) => true,
                        };
                        state.healthy && fresh
                    }
                    EndpointMode::Sync => {
                        let timeout = endpoint_timeout.or(check.timeout);
                        let uses_pool = check.uses_pool;
                        let (latency, success) = self.call_dependency(i, dep, uses_pool, true);
                        let (cost, passed) = match timeout {
                            Some(limit) if latency > limit => (limit, false),
                            _ => (latency, success),
                        };
                        if timeout.is_none() && latency >= 1_000 {
                            self.hold_inflight(i, now + latency, dep);
                        }
                        total += cost;
                        longest = longest.max(cost);
                        passed
                    }
                },
            };
            if !passed && tier == Tier::Hard {
                ok = false;
            }
        }
        Some((if parallel { longest } else { total }, ok))
    }

    /// A call a health check makes to a dependency: (latency, success).
    fn call_dependency(
        &mut self,
        i: usize,
        dep: usize,
        uses_pool: bool,
        count: bool,
    ) -> (Millis, bool) {
        if count {
            self.dependency_calls[dep] += 1;
        }
        let d = &self.s.dependencies[dep];
        if uses_pool && let Some(p) = self.instances[i].process.as_ref() {
            if p.pool_exhausted & (1 << dep) != 0 {
                // pool.available() == 0: fails at once.
                return (0, false);
            }
            if let Some(size) = self.s.app.pool_size {
                let held = p
                    .inflight
                    .iter()
                    .filter(|(_, on)| *on as usize == dep)
                    .count();
                if held as u32 >= size {
                    return (d.connect_timeout, false);
                }
            }
        }
        // Transitive health: the dependency's own health endpoint fails when what it checks
        // is down.
        for &upstream in &d.health_depends_on {
            if self.dependency_down(upstream) {
                return (d.latency, false);
            }
        }
        match self.dependency_condition(dep) {
            Condition::Down(OutageBehaviour::Refuse) => (0, false),
            Condition::Down(OutageBehaviour::Hang) => (d.connect_timeout, false),
            Condition::Slow(latency) => (latency, true),
            Condition::Flicker(p) => {
                let failed = self.rng.f64() < p;
                (d.latency, !failed)
            }
            Condition::Up => {
                if let Some(herd) = d.herd
                    && self.booting_on[dep] > herd.max_concurrent_boots
                {
                    return (herd.overload_latency, true);
                }
                (d.latency, true)
            }
        }
    }

    fn hold_inflight(&mut self, i: usize, until: Millis, dep: usize) {
        let now = self.now;
        let max = self.s.app.max_inflight_checks;
        let pool = self.s.app.pool_size.is_some();
        let Some(p) = self.instances[i].process.as_mut() else {
            return;
        };
        p.inflight.retain(|(end, _)| *end > now);
        p.inflight.push((until, dep as u16));
        let count = p.inflight.len() as u32;
        let id = p.id;
        self.max_inflight = self.max_inflight.max(count);
        if pool {
            self.schedule(
                until,
                Ev::HungEnd {
                    inst: i as u32,
                    process: id,
                },
            );
            self.dirty = true;
        }
        if let Some(limit) = max
            && count > limit
        {
            self.oom_kills += 1;
            self.crash(i, KillReason::OutOfMemory);
        }
    }

    fn dependency_down(&self, dep: usize) -> bool {
        matches!(self.dependency_condition(dep), Condition::Down(_))
    }

    fn dependency_condition(&self, dep: usize) -> Condition {
        let now = self.now;
        let mut condition = Condition::Up;
        for (index, fault) in self.s.faults.iter().enumerate() {
            if !self.fault_active[index] {
                continue;
            }
            match fault.kind {
                FaultKind::DependencyOutage {
                    dependency,
                    behaviour,
                } if dependency == dep => {
                    return Condition::Down(behaviour);
                }
                FaultKind::SlowDependency {
                    dependency,
                    latency,
                } if dependency == dep => {
                    condition = Condition::Slow(latency);
                }
                FaultKind::FlappingDependency {
                    dependency,
                    period,
                    down,
                    flicker,
                } if dependency == dep => {
                    let into = (now - fault.at) % period;
                    if into < down {
                        return Condition::Down(self.s.dependencies[dep].outage);
                    }
                    if flicker > 0.0 {
                        condition = Condition::Flicker(flicker);
                    }
                }
                _ => {}
            }
        }
        condition
    }

    // ------------------------------------------------------------------------------------
    // Pollers (cached snapshot)
    // ------------------------------------------------------------------------------------

    fn poll_start(&mut self, i: usize, c: usize, process: u32, epoch: u32) {
        if self.instances[i]
            .process
            .as_ref()
            .is_none_or(|p| p.id != process || p.checks[c].poll_epoch != epoch)
        {
            return;
        }
        let check = &self.s.app.checks[c];
        let CheckTarget::Dependency(dep) = check.target else {
            return;
        };
        let (interval, jitter, timeout, uses_pool) =
            (check.interval, check.jitter, check.timeout, check.uses_pool);
        let (latency, success) = self.call_dependency(i, dep, uses_pool, true);
        let (cost, ok) = match timeout {
            Some(limit) if latency > limit => (limit, false),
            _ => (latency, success),
        };
        // Each poll waits for the previous one: the next starts an interval after this one
        // started, or when it finishes if it ran longer.
        let wait = if jitter > 0 {
            let spread = self.rng.u64(0..=2 * jitter);
            (interval + spread).saturating_sub(jitter)
        } else {
            interval
        };
        let next = (self.now + wait).max(self.now + cost);
        if cost == 0 {
            self.poll_done(i, c, process, ok);
        } else {
            if let Some(p) = self.instances[i].process.as_mut() {
                p.checks[c].polling = true;
            }
            self.schedule(
                self.now + cost,
                Ev::PollDone {
                    inst: i as u32,
                    check: c as u16,
                    process,
                    ok,
                },
            );
        }
        self.schedule(
            next.max(self.now + 1),
            Ev::PollStart {
                inst: i as u32,
                check: c as u16,
                process,
                epoch,
            },
        );
    }

    /// Hysteresis as probity has it: fall after `fall` failures, rise after `rise`
    /// successes; a check with no history turns healthy on its first success unless
    /// `boot_requires_rise`.
    fn poll_done(&mut self, i: usize, c: usize, process: u32, ok: bool) {
        let now = self.now;
        let check = &self.s.app.checks[c];
        let Some(p) = self.instances[i].process.as_mut() else {
            return;
        };
        if p.id != process {
            return;
        }
        let state = &mut p.checks[c];
        state.polling = false;
        state.last_result_at = Some(now);
        if ok {
            state.ok_run += 1;
            state.fail_run = 0;
            let first = !state.ever_healthy && !check.boot_requires_rise;
            if !state.healthy && (state.ok_run >= check.rise || first) {
                state.healthy = true;
                state.ever_healthy = true;
            }
        } else {
            state.fail_run += 1;
            state.ok_run = 0;
            if state.healthy && state.fail_run >= check.fall {
                state.healthy = false;
            }
        }
        // A re-poll asked for during this poll runs as soon as it is recorded.
        if std::mem::take(&mut state.repoll) {
            self.repoll(i, c);
        }
    }

    /// Polls now instead of at the next tick (probity's `wake`): a poll in flight finishes
    /// first; the cadence then counts from the re-poll.
    fn repoll(&mut self, i: usize, c: usize) {
        if !self.polled[c] {
            return;
        }
        let Some(p) = self.instances[i].process.as_mut() else {
            return;
        };
        let state = &mut p.checks[c];
        if state.polling {
            state.repoll = true;
            return;
        }
        state.poll_epoch += 1;
        let (process, epoch) = (p.id, state.poll_epoch);
        self.poll_start(i, c, process, epoch);
    }

    // ------------------------------------------------------------------------------------
    // Passive reports
    // ------------------------------------------------------------------------------------

    /// Follows each passive run through the conditions of the instant just settled: how many
    /// real requests reach each checked dependency, what fraction of their calls fail and how
    /// long a failure takes to be reported. Schedules the next forced failure.
    fn passive_update(&mut self) {
        if self.passive.is_empty() {
            return;
        }
        let t = self.last;
        let rate = self.s.requests.rate / 1000.0;
        for i in 0..self.instances.len() {
            let inst = &self.instances[i];
            let serving = inst.process.as_ref().filter(|p| {
                inst.container != Container::Waiting
                    && p.listening
                    && !p.stalled
                    && p.deadlocked_at.is_none()
            });
            let Some(p) = serving else {
                // Nothing runs the handlers: no reports, the runs stand still.
                if inst.process.is_some() {
                    for k in 0..self.passive.len() {
                        self.passive_set(i, k, None, t);
                    }
                }
                continue;
            };
            let pool_exhausted = p.pool_exhausted;
            let held = self.held_connections(p, t);
            let share = inst.share;
            for k in 0..self.passive.len() {
                let dep = self.passive[k].dependency;
                // Requests call their dependencies in turn and stop at the first failure.
                let mut reaching = 0.0;
                for class in &self.s.requests.mix {
                    let mut reach = 1.0;
                    for &need in &class.needs {
                        if need == dep {
                            reaching += class.share * reach;
                            break;
                        }
                        reach *= self.request_call(pool_exhausted, &held, need).0;
                    }
                }
                let (available, delay) = self.request_call(pool_exhausted, &held, dep);
                let reports = rate * share * reaching;
                self.passive_set(i, k, Some((available, delay, reports)), t);
            }
        }
    }

    /// Brings passive run `k` of instance `i` up to `t` and applies new conditions (`None`:
    /// no requests), rescheduling its next forced failure.
    fn passive_set(
        &mut self,
        i: usize,
        k: usize,
        conditions: Option<(f64, Millis, f64)>,
        t: Millis,
    ) {
        let PassiveCheck {
            check, threshold, ..
        } = self.passive[k];
        let duration = self.s.duration;
        let Some(p) = self.instances[i].process.as_mut() else {
            return;
        };
        let id = p.id;
        let run = &mut p.checks[check].passive;
        run.account(t);
        match conditions {
            Some((available, delay, rate)) => {
                run.enter(available, delay, t);
                run.rate = rate;
            }
            None => run.rate = 0.0,
        }
        let fire_at = passive_fire_at(run, threshold, t, duration);
        if fire_at == run.fire_at {
            return;
        }
        run.fire_at = fire_at;
        run.epoch += 1;
        let epoch = run.epoch;
        if let Some(at) = fire_at {
            self.schedule(
                at,
                Ev::PassiveFire {
                    inst: i as u32,
                    check: check as u16,
                    process: id,
                    epoch,
                },
            );
        }
    }

    /// The threshold-th failure in a row was reported: probity's `Reporter::failure` records a
    /// forced failure (unhealthy at once, the rise count starts over, recovery needs the full
    /// `rise`) and wakes the poller.
    fn passive_fire(&mut self, i: usize, c: usize, process: u32, epoch: u32) {
        let now = self.now;
        let duration = self.s.duration;
        let Some(threshold) = self.s.app.checks[c].passive_failure_threshold else {
            return;
        };
        let Some(p) = self.instances[i].process.as_mut() else {
            return;
        };
        if p.id != process || p.checks[c].passive.epoch != epoch {
            return;
        }
        let state = &mut p.checks[c];
        let run = &mut state.passive;
        run.account(now);
        run.reset = false;
        if run.available <= 0.0 {
            run.run = run.run.max(run.target);
        } else {
            run.run = 0.0;
        }
        run.fire_at = passive_fire_at(run, threshold, now, duration);
        run.epoch += 1;
        let next = run.fire_at.map(|at| (at, run.epoch));
        // Hysteresis::force_unhealthy; the forced result also counts as the latest result.
        // The poller is woken only when this turns the check unhealthy (probity's
        // `Reporter::failure` re-polls on the fall, not at every run of failures).
        let fell = state.healthy;
        state.healthy = false;
        state.ever_healthy = true;
        state.ok_run = 0;
        state.last_result_at = Some(now);
        if let Some((at, epoch)) = next {
            self.schedule(
                at,
                Ev::PassiveFire {
                    inst: i as u32,
                    check: c as u16,
                    process,
                    epoch,
                },
            );
        }
        if fell {
            self.repoll(i, c);
        }
    }

    // ------------------------------------------------------------------------------------
    // Load balancers with their own checks
    // ------------------------------------------------------------------------------------

    fn lb_tick(&mut self, i: usize, epoch: u32) {
        if self.instances[i].lb.epoch != epoch {
            return;
        }
        let (handler, timeout, nodes) = match &self.s.routing {
            Routing::Haproxy { check, timeout, .. } => (*check, *timeout, 1),
            Routing::Envoy { check, timeout, .. } => (*check, *timeout, 1),
            Routing::Alb {
                check,
                timeout,
                nodes,
                ..
            } => (*check, *timeout, *nodes),
            _ => return,
        };
        let (duration, ok) = self.respond_with_timeout(i, handler, timeout);
        // Envoy: a non-200 answer (not a timeout) marks the host unhealthy at once.
        let definitive = !ok && duration < timeout;
        self.probe_requests += nodes as u64;
        self.instances[i].lb.epoch += 1;
        let epoch = self.instances[i].lb.epoch;
        self.schedule(
            self.now + duration,
            Ev::LbDone {
                inst: i as u32,
                epoch,
                ok,
                definitive,
            },
        );
    }

    fn lb_done(&mut self, i: usize, epoch: u32, ok: bool, definitive: bool) {
        if self.instances[i].lb.epoch != epoch {
            return;
        }
        let was = self.instances[i].lb.healthy;
        let next_in = match &self.s.routing {
            Routing::Haproxy {
                inter,
                fastinter,
                downinter,
                rise,
                fall,
                ..
            } => {
                // src/check.c: health in 0..=rise+fall-1; reaching `rise` jumps to fully UP,
                // dropping below it jumps to 0 (DOWN).
                let lb = &mut self.instances[i].lb;
                let top = rise + fall - 1;
                if ok {
                    if lb.health < top {
                        lb.health += 1;
                        if lb.health >= *rise {
                            lb.health = top;
                            lb.healthy = true;
                        }
                    }
                } else if lb.health > 0 {
                    lb.health -= 1;
                    if lb.health < *rise {
                        lb.health = 0;
                        lb.healthy = false;
                    }
                }
                if lb.health == top {
                    *inter
                } else if lb.health == 0 {
                    *downinter
                } else {
                    *fastinter
                }
            }
            Routing::Envoy {
                interval,
                unhealthy_threshold,
                healthy_threshold,
                ..
            } => {
                let lb = &mut self.instances[i].lb;
                if ok {
                    lb.ok_run += 1;
                    lb.fail_run = 0;
                    // During startup a single success marks a host healthy.
                    if !lb.healthy
                        && (lb.ok_run >= *healthy_threshold
                            || lb.ejections == 0
                                && !lb.ejected
                                && lb.ok_run >= 1
                                && was_never_checked(lb))
                    {
                        lb.healthy = true;
                    }
                    // A successful active check unejects the host.
                    if lb.ejected {
                        lb.ejected = false;
                        lb.eject_epoch += 1;
                    }
                } else {
                    lb.fail_run += 1;
                    lb.ok_run = 0;
                    if definitive || lb.fail_run >= *unhealthy_threshold {
                        lb.healthy = false;
                    }
                }
                lb.health = 1;
                *interval
            }
            Routing::Alb {
                interval,
                healthy_threshold,
                unhealthy_threshold,
                ..
            } => {
                let lb = &mut self.instances[i].lb;
                if ok {
                    lb.ok_run += 1;
                    lb.fail_run = 0;
                    // A new (`initial`) target needs one passing check.
                    let initial = lb.health == 0 && !lb.healthy;
                    if !lb.healthy && (lb.ok_run >= *healthy_threshold || initial) {
                        lb.healthy = true;
                    }
                } else {
                    lb.fail_run += 1;
                    lb.ok_run = 0;
                    if lb.fail_run >= *unhealthy_threshold {
                        lb.healthy = false;
                    }
                }
                lb.health = 1;
                *interval
            }
            _ => return,
        };
        let epoch = self.instances[i].lb.epoch;
        self.schedule(
            self.now + next_in,
            Ev::LbTick {
                inst: i as u32,
                epoch,
            },
        );
        if self.instances[i].lb.healthy != was || !ok {
            self.routing_changed(i);
        }
    }

    fn eject(&mut self, i: usize, epoch: u32) {
        let Routing::Envoy {
            outlier: Some(outlier),
            ..
        } = &self.s.routing
        else {
            return;
        };
        let outlier = *outlier;
        if self.instances[i].lb.eject_epoch != epoch || self.instances[i].lb.ejected {
            return;
        }
        self.instances[i].lb.eject_pending = false;
        let n = self.instances.len();
        let ejected = self.instances.iter().filter(|x| x.lb.ejected).count();
        // max_ejection_percent, but at least one host is always ejectable.
        let allowed = ((outlier.max_ejection_percent / 100.0) * n as f64)
            .floor()
            .max(1.0) as usize;
        if ejected >= allowed {
            return;
        }
        let lb = &mut self.instances[i].lb;
        lb.ejections += 1;
        lb.ejected = true;
        lb.eject_epoch += 1;
        let time =
            (outlier.base_ejection_time * lb.ejections as u64).min(outlier.max_ejection_time);
        let epoch = lb.eject_epoch;
        self.schedule(
            self.now + time,
            Ev::EjectEnd {
                inst: i as u32,
                epoch,
            },
        );
        self.routing_changed(i);
    }

    // ------------------------------------------------------------------------------------
    // Faults
    // ------------------------------------------------------------------------------------

    fn fault_start(&mut self, index: usize) {
        let fault = &self.s.faults[index];
        self.fault_active[index] = true;
        if !fault.kind.is_operator_action() && self.first_onset.is_none() {
            self.first_onset = Some(self.now);
        }
        if !fault.kind.is_operator_action() {
            let end = fault.until.unwrap_or(fault.at);
            self.reference_end = Some(self.reference_end.map_or(end, |e| e.max(end)));
        }
        match fault.kind.clone() {
            FaultKind::PoolExhausted {
                instance,
                dependency,
            } => {
                if let Some(p) = self.instances[instance].process.as_mut() {
                    p.pool_exhausted |= 1 << dependency;
                }
            }
            FaultKind::Deadlock {
                instance,
                ignores_sigterm,
            } => {
                if let Some(p) = self.instances[instance].process.as_mut() {
                    p.deadlocked_at = Some(self.now);
                    p.ignores_sigterm = ignores_sigterm;
                }
            }
            FaultKind::RuntimeStall { instance } => {
                if let Some(p) = self.instances[instance].process.as_mut() {
                    p.stalled = true;
                }
            }
            FaultKind::ManualDrain { instance } => {
                self.instances[instance].manual_drained = true;
                self.routing_changed(instance);
            }
            FaultKind::ManualFix { remove_probes } => {
                for kind in remove_probes {
                    self.probes[kind_index(kind)] = None;
                }
                for i in 0..self.instances.len() {
                    self.replace_pod(i);
                }
            }
            _ => {}
        }
        self.dirty = true;
        self.refresh_boots();
    }

    /// An operator replaces a pod: a new pod with fresh probe workers and backoff.
    fn replace_pod(&mut self, i: usize) {
        let was_booting = self.instances[i]
            .process
            .as_ref()
            .is_some_and(|p| !p.booted && self.instances[i].container != Container::Waiting);
        if was_booting {
            for &dep in &self.s.app.boot_needs {
                self.booting_on[dep] = self.booting_on[dep].saturating_sub(1);
            }
        }
        let inst = &mut self.instances[i];
        inst.container = Container::Waiting;
        inst.process = None;
        inst.started = false;
        inst.last_finished = None;
        inst.backoff = CrashLoopBackOff::default();
        inst.restart_after_kill = None;
        inst.workers = KINDS.map(ProbeWorker::new);
        for clock in inst.clocks.iter_mut() {
            clock.epoch += 1;
            clock.busy = false;
            clock.pending = false;
        }
        inst.start_epoch += 1;
        // Not a restart of the old container: the new pod's first container.
        inst.container_id += 1;
        inst.restarts = inst.restarts.saturating_sub(1);
        self.update_pod_ready(i);
        self.add_pod(i, self.now);
        self.dirty = true;
        self.touch(i);
    }

    // ------------------------------------------------------------------------------------
    // Routing and traffic
    // ------------------------------------------------------------------------------------

    fn routing_changed(&mut self, i: usize) {
        self.dirty = true;
        self.touch(i);
    }

    /// Whether the router considers the instance healthy (ignoring fail-open and panic).
    fn router_member(&self, i: usize) -> bool {
        let inst = &self.instances[i];
        if inst.manual_drained {
            return false;
        }
        match &self.s.routing {
            Routing::KubernetesService { .. } => inst.endpoint_ready,
            Routing::Haproxy { .. } | Routing::Alb { .. } => inst.lb.healthy,
            Routing::Envoy { .. } => inst.lb.healthy && !inst.lb.ejected,
            Routing::ConsistentHash { membership, .. } => match membership {
                Membership::Endpoints => inst.endpoint_ready,
                Membership::Static => true,
            },
        }
    }

    /// Fraction of an instance's requests that fail right now.
    fn instance_failure(&mut self, i: usize) -> f64 {
        let inst = &self.instances[i];
        let Some(p) = inst.process.as_ref() else {
            return 1.0;
        };
        if inst.container == Container::Waiting
            || !p.listening
            || p.stalled
            || p.deadlocked_at.is_some()
        {
            return 1.0;
        }
        let pool_exhausted = p.pool_exhausted;
        let held = self.held_connections(p, self.now);
        let mut ok_share = 0.0;
        for class in &self.s.requests.mix {
            let mut ok = 1.0;
            for &dep in &class.needs {
                let (available, _) = self.request_call(pool_exhausted, &held, dep);
                if available == 0.0 {
                    ok = 0.0;
                    break;
                }
                ok *= available;
            }
            ok_share += class.share * ok;
        }
        (1.0 - ok_share).clamp(0.0, 1.0)
    }

    /// Pool connections each dependency's hung health-check calls hold at `now` (empty
    /// without `app.pool_size`).
    fn held_connections(&self, p: &Process, now: Millis) -> Vec<usize> {
        if self.s.app.pool_size.is_none() {
            return Vec::new();
        }
        let mut held = vec![0usize; self.s.dependencies.len()];
        for (end, dep) in &p.inflight {
            if *end > now {
                held[*dep as usize] += 1;
            }
        }
        held
    }

    /// What a real request's call to `dep` does right now on an instance with these pool
    /// states: the fraction of calls that succeed, and how long a failing call takes to fail
    /// (at once for an exhausted pool or a refused connection; a hang, a wait for a held pool
    /// or a slow answer ends at the request timeout, or the connect timeout if shorter).
    fn request_call(&self, pool_exhausted: u64, held: &[usize], dep: usize) -> (f64, Millis) {
        let timeout = self.s.requests.timeout;
        let d = &self.s.dependencies[dep];
        if pool_exhausted & (1 << dep) != 0 {
            return (0.0, 0);
        }
        if let Some(size) = self.s.app.pool_size
            && held.get(dep).is_some_and(|h| *h as u32 >= size)
        {
            return (0.0, d.connect_timeout.min(timeout));
        }
        match self.dependency_condition(dep) {
            Condition::Down(OutageBehaviour::Refuse) => (0.0, 0),
            Condition::Down(OutageBehaviour::Hang) => (0.0, d.connect_timeout.min(timeout)),
            Condition::Slow(latency) if latency > timeout => (0.0, timeout),
            Condition::Slow(_) => (1.0, 0),
            Condition::Flicker(p) => (1.0 - p, d.latency),
            Condition::Up => match d.herd {
                Some(herd)
                    if self.booting_on[dep] > herd.max_concurrent_boots
                        && herd.overload_latency > timeout =>
                {
                    (0.0, timeout)
                }
                _ => (1.0, 0),
            },
        }
    }

    #[allow(clippy::needless_range_loop)] // shares, members and instances share one index
    fn recompute(&mut self) {
        let n = self.instances.len();
        let now = self.last;
        let members: Vec<bool> = (0..n).map(|i| self.router_member(i)).collect();
        let member_count = members.iter().filter(|m| **m).count();
        let mut shares = vec![0.0; n];
        let mut refused = 0.0;
        let mut lb_error = 0.0;
        match &self.s.routing {
            Routing::KubernetesService { .. } if !self.connections.is_empty() => {
                // Keep-alive: each connection's requests go where it is pinned, whatever the
                // endpoints say now; one that has nowhere to connect is refused.
                let per = 1.0 / self.connections.len() as f64;
                for connection in &self.connections {
                    match connection.instance {
                        Some(i) => shares[i] += per,
                        None => refused += per,
                    }
                }
            }
            Routing::KubernetesService { .. } => {
                if member_count == 0 {
                    // No ready endpoint: kube-proxy REJECTs (connection refused). The
                    // serving+terminating fallback applies to pods being deleted, which this
                    // model does not have.
                    refused = 1.0;
                } else {
                    for i in 0..n {
                        if members[i] {
                            shares[i] = 1.0 / member_count as f64;
                        }
                    }
                }
            }
            Routing::Haproxy { .. } => {
                if member_count == 0 {
                    lb_error = 1.0; // 503 "no server is available"
                } else {
                    for i in 0..n {
                        if members[i] {
                            shares[i] = 1.0 / member_count as f64;
                        }
                    }
                }
            }
            Routing::Envoy {
                panic_threshold, ..
            } => {
                let healthy_percent = 100.0 * member_count as f64 / n as f64;
                if healthy_percent < *panic_threshold {
                    // Panic: balance across every host, healthy or not.
                    for share in shares.iter_mut() {
                        *share = 1.0 / n as f64;
                    }
                } else if member_count == 0 {
                    lb_error = 1.0; // "no healthy upstream"
                } else {
                    for i in 0..n {
                        if members[i] {
                            shares[i] = 1.0 / member_count as f64;
                        }
                    }
                }
            }
            Routing::Alb { .. } => {
                if member_count == 0 {
                    // Fail open: route to every registered target.
                    for share in shares.iter_mut() {
                        *share = 1.0 / n as f64;
                    }
                } else {
                    for i in 0..n {
                        if members[i] {
                            shares[i] = 1.0 / member_count as f64;
                        }
                    }
                }
            }
            Routing::ConsistentHash { virtual_nodes, .. } => {
                if members != self.ring_members {
                    self.ring_members = members.clone();
                    self.ring_shares =
                        ring_shares(&members, *virtual_nodes, self.s.requests.users, self.seed);
                }
                if member_count == 0 {
                    refused = 1.0;
                } else {
                    shares.clone_from(&self.ring_shares);
                }
            }
        }
        let mut fleet = refused + lb_error;
        let onset = self.first_onset;
        let outlier = match &self.s.routing {
            Routing::Envoy { outlier, .. } => *outlier,
            _ => None,
        };
        let rate = self.s.requests.rate;
        for i in 0..n {
            let failure = self.instance_failure(i);
            fleet += shares[i] * failure;
            let inst = &mut self.instances[i];
            inst.share = shares[i];
            inst.failure = failure;
            inst.member = members[i];
            if let Some(at) = onset
                && failure > 0.0
                && inst.affected_at.is_none()
                && now >= at
                && inst.in_rotation
            {
                inst.affected_at = Some(now);
            }
            if let Some(o) = outlier
                && failure >= 0.999
                && shares[i] > 0.0
                && !inst.lb.ejected
                && !inst.lb.eject_pending
            {
                // consecutive_5xx: ejected inline when the k-th consecutive error arrives.
                let per_second = rate * shares[i];
                let wait = (o.consecutive_5xx as f64 / per_second * 1000.0).ceil() as Millis;
                inst.lb.eject_pending = true;
                let epoch = inst.lb.eject_epoch;
                self.schedule(
                    now + wait,
                    Ev::Eject {
                        inst: i as u32,
                        epoch,
                    },
                );
            }
        }
        self.fleet_failure = fleet.clamp(0.0, 1.0);
        self.refused = refused;
    }

    /// Settles the instant that just ended: routing shares, failure fractions and the passive
    /// runs they drive. `advance` would do the first part when time moves on.
    fn settle(&mut self) {
        self.flush_instances();
        self.recompute();
        self.dirty = false;
        self.passive_update();
    }

    /// Integrates the traffic of `[last, to)` with the current shares and failure fractions.
    fn advance(&mut self, to: Millis) {
        if to <= self.last {
            return;
        }
        if self.dirty {
            self.flush_instances();
            self.recompute();
            self.dirty = false;
        }
        let rate_per_ms = self.s.requests.rate / 1000.0;
        let resolution = self.s.measure.resolution;
        let mut t = self.last;
        while t < to {
            let bucket = (t / resolution) as usize;
            let bucket_end = ((bucket as u64) + 1) * resolution;
            let end = bucket_end.min(to);
            let requests = rate_per_ms * (end - t) as f64;
            if let Some(b) = self.buckets.get_mut(bucket) {
                b.0 += requests;
                b.1 += requests * self.fleet_failure;
            }
            t = end;
        }
        let requests = rate_per_ms * (to - self.last) as f64;
        self.total_requests += requests;
        self.total_failed += requests * self.fleet_failure;
        self.total_refused += requests * self.refused;
        self.last = to;
    }

    /// Adds each instance's requests since the last flush.
    fn flush_instances(&mut self) {
        let rate_per_ms = self.s.requests.rate / 1000.0;
        let since = self.instances_since;
        let now = self.last;
        if now > since {
            let dt = (now - since) as f64;
            for inst in &mut self.instances {
                let requests = rate_per_ms * dt * inst.share;
                inst.requests += requests;
                inst.failed += requests * inst.failure;
                if inst.share > 0.0 && !inst.member {
                    inst.out_of_rotation_ms += now - since;
                    inst.out_of_rotation_requests += requests;
                }
            }
        }
        self.instances_since = now;
    }

    /// Recomputes an instance's lane state and rotation membership after a change.
    fn touch(&mut self, i: usize) {
        let now = self.now;
        let member = self.router_member(i);
        let inst = &self.instances[i];
        let state = match (inst.container, inst.process.as_ref()) {
            (Container::Running, Some(p)) if !p.booted || !inst.started => LaneState::Booting,
            (Container::Running, Some(_)) if member => LaneState::Ready,
            (Container::Running, Some(_)) => LaneState::OutOfRotation,
            _ => LaneState::Restarting,
        };
        let running_and_booted =
            inst.container == Container::Running && inst.process.as_ref().is_some_and(|p| p.booted);
        let was = inst.in_rotation;
        let inst = &mut self.instances[i];
        if was != member {
            inst.in_rotation = member;
            if now > 0 || !self.initialising {
                self.rotation_changes += 1;
            }
            if !member && running_and_booted && !inst.manual_drained {
                inst.drains += 1;
                if let Some(onset) = self.first_onset
                    && now >= onset
                    && inst.drained_at.is_none()
                {
                    inst.drained_at = Some(now);
                }
            }
        }
        if inst.lanes.last().is_none_or(|(_, last)| *last != state) {
            inst.lanes.push((now, state));
        }
        if !self.connections.is_empty() && !self.accepts(i) {
            self.server_closed(i);
        }
    }

    // ------------------------------------------------------------------------------------
    // Keep-alive client connections
    // ------------------------------------------------------------------------------------

    /// Whether the pod accepts connections (else a connect is refused, or reset).
    fn accepts(&self, i: usize) -> bool {
        let inst = &self.instances[i];
        inst.container != Container::Waiting && inst.process.as_ref().is_some_and(|p| p.listening)
    }

    /// The clients' connections at the start: spread evenly over the ready pods, at ages
    /// spread evenly over the lifetime (a cold fleet has none ready: each tries again at its
    /// next request).
    fn init_connections(&mut self) {
        let Some(keep_alive) = self.s.requests.keep_alive else {
            return;
        };
        let gap = keep_alive.request_gap(self.s.requests.rate);
        let members: Vec<usize> = (0..self.instances.len())
            .filter(|&i| self.router_member(i))
            .collect();
        for c in 0..keep_alive.clients as usize {
            let (instance, ends_at) = if members.is_empty() {
                (None, 1 + self.conn_rng.u64(0..gap))
            } else {
                (
                    Some(members[c % members.len()]),
                    1 + self.conn_rng.u64(0..keep_alive.connection_lifetime),
                )
            };
            self.connections.push(Connection {
                instance,
                established: instance.is_some(),
                ends_at,
                epoch: 0,
            });
            self.schedule(
                ends_at,
                Ev::ConnectionEnd {
                    conn: c as u32,
                    epoch: 0,
                },
            );
        }
        self.dirty = true;
    }

    /// Connection `c` ends and the client connects again for its next request: kube-proxy
    /// picks one of the ready endpoints at random (iptables `statistic mode random`). A
    /// refused connect, or an answer with `Connection: close`, ends it after that one request.
    fn connect(&mut self, c: usize) {
        let Some(keep_alive) = self.s.requests.keep_alive else {
            return;
        };
        let now = self.now;
        let gap = keep_alive.request_gap(self.s.requests.rate);
        let members: Vec<usize> = (0..self.instances.len())
            .filter(|&i| self.router_member(i))
            .collect();
        let (instance, established, ends_at) = if members.is_empty() {
            // REJECT: connection refused; the client tries again at its next request.
            (None, false, now + gap)
        } else {
            let i = members[self.conn_rng.usize(0..members.len())];
            if !self.accepts(i) {
                (Some(i), false, now + gap)
            } else if self.closes_connections(i) {
                (Some(i), true, now + gap)
            } else {
                (Some(i), true, now + keep_alive.connection_lifetime)
            }
        };
        let connection = &mut self.connections[c];
        connection.instance = instance;
        connection.established = established;
        connection.ends_at = ends_at;
        connection.epoch += 1;
        let epoch = connection.epoch;
        self.schedule(
            ends_at,
            Ev::ConnectionEnd {
                conn: c as u32,
                epoch,
            },
        );
        self.dirty = true;
    }

    /// Whether the pod answers with `Connection: close` now.
    fn closes_connections(&self, i: usize) -> bool {
        self.s.app.close_connections_when_unready
            && self.instances[i]
                .process
                .as_ref()
                .is_some_and(|p| p.answered_unready)
    }

    /// The process stopped listening or exited: the connections pinned to it are closed and
    /// their clients connect again.
    fn server_closed(&mut self, i: usize) {
        for c in 0..self.connections.len() {
            let connection = self.connections[c];
            if connection.instance == Some(i) && connection.established {
                self.connect(c);
            }
        }
    }

    /// The process answered a readiness probe. When it starts failing and the server closes
    /// connections while unready, each pinned client leaves after its next request there
    /// (a uniformly spread time within one request gap).
    fn readiness_answered(&mut self, i: usize, ok: bool) {
        let Some(p) = self.instances[i].process.as_mut() else {
            return;
        };
        let fell = !ok && !p.answered_unready;
        p.answered_unready = !ok;
        if !fell || !self.s.app.close_connections_when_unready {
            return;
        }
        let Some(keep_alive) = self.s.requests.keep_alive else {
            return;
        };
        let gap = keep_alive.request_gap(self.s.requests.rate);
        let now = self.now;
        for c in 0..self.connections.len() {
            let connection = self.connections[c];
            if connection.instance != Some(i) || !connection.established {
                continue;
            }
            let at = now + 1 + self.conn_rng.u64(0..gap);
            if at < connection.ends_at {
                let connection = &mut self.connections[c];
                connection.ends_at = at;
                connection.epoch += 1;
                let epoch = connection.epoch;
                self.schedule(
                    at,
                    Ev::ConnectionEnd {
                        conn: c as u32,
                        epoch,
                    },
                );
            }
        }
    }

    // ------------------------------------------------------------------------------------
    // Report
    // ------------------------------------------------------------------------------------

    fn report(&self) -> Report {
        let s = self.s;
        let resolution = s.measure.resolution;
        let series: Vec<f64> = self
            .buckets
            .iter()
            .map(|(requests, failed)| {
                if *requests > 0.0 {
                    failed / requests
                } else {
                    0.0
                }
            })
            .collect();
        let bucket_of = |t: Millis| (t / resolution) as usize;

        // Recovery: the last bucket at or after the onset whose error rate is above the
        // threshold; recovered at its end unless it is the last bucket of the run.
        let onset = self.first_onset;
        let mut recovered_at: Option<Millis> = None;
        let mut never_recovered = false;
        if let Some(onset) = onset {
            let first = bucket_of(onset);
            let last_bad = (first..series.len())
                .rev()
                .find(|&b| series[b] > s.measure.recovered_below);
            match last_bad {
                None => recovered_at = Some(onset),
                Some(b) if b + 1 >= series.len() => never_recovered = true,
                Some(b) => recovered_at = Some(((b as u64 + 1) * resolution).min(s.duration)),
            }
        }
        let time_to_recover_s = match (onset, recovered_at) {
            (Some(_), Some(at)) => {
                let reference = self.reference_end.unwrap_or(at);
                Some(at.saturating_sub(reference) as f64 / 1000.0)
            }
            _ => None,
        };

        // The incident window: onset to recovery (or the end).
        let (from, to) = match onset {
            None => (0, s.duration),
            Some(onset) => (
                onset,
                if never_recovered {
                    s.duration
                } else {
                    recovered_at.unwrap_or(s.duration).max(onset + resolution)
                },
            ),
        };
        let (window_requests, window_failed) = self.buckets[bucket_of(from)
            .min(self.buckets.len() - 1)
            ..bucket_of(to.saturating_sub(1)).min(self.buckets.len() - 1) + 1]
            .iter()
            .fold((0.0, 0.0), |acc, b| (acc.0 + b.0, acc.1 + b.1));
        let fleet_error_rate = if window_requests > 0.0 {
            window_failed / window_requests
        } else {
            0.0
        };

        // Peak over a sliding window of whole buckets.
        let width = ((s.measure.rate_window / resolution) as usize).max(1);
        let mut peak: f64 = 0.0;
        let (mut sum_r, mut sum_f) = (0.0, 0.0);
        for (b, (r, f)) in self.buckets.iter().enumerate() {
            sum_r += r;
            sum_f += f;
            if b >= width {
                sum_r -= self.buckets[b - width].0;
                sum_f -= self.buckets[b - width].1;
            }
            if sum_r > 0.0 {
                peak = peak.max(sum_f / sum_r);
            }
        }

        let outage_s = series
            .iter()
            .filter(|rate| **rate >= s.measure.outage_threshold && **rate > 0.0)
            .count() as f64
            * resolution as f64
            / 1000.0;

        // Time to drain: every instance the fault broke left rotation because of a check.
        let time_to_drain_s = onset.and_then(|onset| {
            let affected: Vec<&Instance> = self
                .instances
                .iter()
                .filter(|x| x.affected_at.is_some())
                .collect();
            if affected.is_empty() {
                return None;
            }
            let mut latest = 0;
            for inst in affected {
                latest = latest.max(inst.drained_at?);
            }
            Some(latest.saturating_sub(onset) as f64 / 1000.0)
        });

        let seconds = s.duration as f64 / 1000.0;
        let dependency_check_qps = s
            .dependencies
            .iter()
            .enumerate()
            .filter(|(d, _)| self.dependency_calls[*d] > 0)
            .map(|(d, dep)| {
                (
                    dep.name.clone(),
                    round(self.dependency_calls[d] as f64 / seconds, 3),
                )
            })
            .collect::<BTreeMap<_, _>>();

        let instances = self
            .instances
            .iter()
            .enumerate()
            .map(|(i, inst)| {
                let mut lanes: Vec<LaneSpan> = Vec::new();
                for (j, (at, state)) in inst.lanes.iter().enumerate() {
                    let end = inst.lanes.get(j + 1).map_or(s.duration, |(next, _)| *next);
                    if end > *at {
                        lanes.push(LaneSpan {
                            from_s: *at as f64 / 1000.0,
                            to_s: end as f64 / 1000.0,
                            state: *state,
                        });
                    }
                }
                InstanceReport {
                    name: s.fleet.names[i].clone(),
                    requests: inst.requests.round() as u64,
                    failed: inst.failed.round() as u64,
                    error_rate: round(
                        if inst.requests > 0.0 {
                            inst.failed / inst.requests
                        } else {
                            0.0
                        },
                        4,
                    ),
                    restarts: inst.restarts,
                    drains: inst.drains,
                    out_of_rotation_traffic_s: s
                        .requests
                        .keep_alive
                        .map(|_| inst.out_of_rotation_ms as f64 / 1000.0),
                    out_of_rotation_requests: s
                        .requests
                        .keep_alive
                        .map(|_| inst.out_of_rotation_requests.round() as u64),
                    lanes,
                }
            })
            .collect();

        Report {
            name: s.name.clone(),
            seed: self.seed,
            routing: s.routing.name().to_string(),
            replicas: s.fleet.replicas,
            duration_s: seconds,
            fleet_error_rate: round(fleet_error_rate, 4),
            peak_error_rate: round(peak, 4),
            requests_total: self.total_requests.round() as u64,
            requests_failed: self.total_failed.round() as u64,
            requests_refused: self.total_refused.round() as u64,
            restarts: self.instances.iter().map(|x| x.restarts).sum(),
            drains: self.instances.iter().map(|x| x.drains).sum(),
            rotation_changes: self.rotation_changes,
            time_to_drain_s: time_to_drain_s.map(|v| round(v, 3)),
            time_to_recover_s: time_to_recover_s.map(|v| round(v, 3)),
            outage_s: round(outage_s, 3),
            probe_rps: round(self.probe_requests as f64 / seconds, 3),
            dependency_check_qps,
            oom_kills: self.oom_kills,
            max_inflight_checks: self.max_inflight,
            kills: self.kills.clone(),
            faults: s
                .faults
                .iter()
                .map(|f| FaultSummary {
                    kind: f.kind.name().to_string(),
                    at_s: f.at as f64 / 1000.0,
                    until_s: f.until.map(|u| u as f64 / 1000.0),
                })
                .collect(),
            instances,
            resolution_s: resolution as f64 / 1000.0,
            error_rate_series: series.iter().map(|v| round(*v, 4)).collect(),
            assumptions: s.assumptions.clone(),
        }
    }
}

/// When passive run `run` next reaches its target, counting reports from `t` on (`None`: not
/// before the end of the run). Records the target.
fn passive_fire_at(
    run: &mut PassiveRun,
    threshold: u32,
    t: Millis,
    duration: Millis,
) -> Option<Millis> {
    if run.rate <= 0.0 {
        return None;
    }
    let target = run.next_target(threshold)?;
    run.target = target;
    let counted = if run.reset { 0.0 } else { run.run };
    let wait = ((target - counted).max(0.0) / run.rate).ceil();
    let start = t.max(run.from);
    if !wait.is_finite() || start as f64 + wait >= duration as f64 {
        return None;
    }
    Some(start + wait as Millis)
}

/// What a caller with `timeout` gets from an answer (`None`: the call hangs): (time until it
/// has a result, success).
fn within(answer: Option<(Millis, bool)>, timeout: Millis) -> (Millis, bool) {
    match answer {
        None => (timeout, false),
        Some((latency, _)) if latency >= timeout => (timeout, false),
        Some((latency, ok)) => (latency, ok),
    }
}

/// A point in simulated time as the Kubernetes model takes it.
fn at(time: Millis) -> Duration {
    Duration::from_millis(time)
}

/// A Kubernetes model's time back in simulated milliseconds.
fn millis(time: Duration) -> Millis {
    time.as_millis() as Millis
}

fn was_never_checked(lb: &LbState) -> bool {
    lb.health == 0
}

fn round(value: f64, digits: i32) -> f64 {
    let factor = 10f64.powi(digits);
    (value * factor).round() / factor
}

#[derive(Debug, Clone, Copy)]
enum Condition {
    Up,
    Down(OutageBehaviour),
    Slow(Millis),
    Flicker(f64),
}

fn mix(mut x: u64) -> u64 {
    // splitmix64
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The share of users each member owns on a consistent-hash ring (each user goes to the first
/// ring point at or after the hash of its ID).
pub(crate) fn ring_shares(members: &[bool], virtual_nodes: u32, users: u32, seed: u64) -> Vec<f64> {
    let mut ring: Vec<(u64, usize)> = Vec::new();
    for (i, member) in members.iter().enumerate() {
        if !member {
            continue;
        }
        for v in 0..virtual_nodes {
            ring.push((mix(seed ^ mix(((i as u64) << 32) | v as u64)), i));
        }
    }
    let mut shares = vec![0.0; members.len()];
    if ring.is_empty() {
        return shares;
    }
    ring.sort_unstable();
    for user in 0..users {
        let h = mix(seed.rotate_left(17) ^ mix(0xA5A5_0000_0000_0000 | user as u64));
        let at = ring.partition_point(|(point, _)| *point < h);
        let owner = ring[at % ring.len()].1;
        shares[owner] += 1.0 / users as f64;
    }
    shares
}
