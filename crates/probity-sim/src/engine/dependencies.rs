//! Dependencies: how a call to each one behaves right now, from the health checks' calls
//! to the real requests'.
//!
//! A dependency is up, down (calls hang or are refused), slow, flickering (a fraction of
//! calls fail) or overloaded by too many simultaneous cold starts (the herd model). The
//! app's connection pool sits in front: a pool that leaked dry fails every call at once, and
//! hung health-check calls hold connections until they end. What the faults make of a
//! dependency is theirs ([`Faults::condition`]); the herd, the pools and the calls are
//! these.

use super::effects::Effects;
use super::faults::{Condition, Faults};
use super::pod::Process;
use super::policy::{Call, Fare, Policy};
use super::pool;
use super::traffic::Outcome;
use crate::scenario::{OutageBehaviour, PoolCheck, Scenario};
use crate::time::Millis;
use std::collections::BTreeSet;

/// What a health check's call finds of the pod that makes it, when the pod's pool may
/// fail it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Caller {
    /// The pool to the dependency leaked dry.
    pub(super) exhausted: bool,
    /// Hung health-check calls to the dependency the process holds.
    pub(super) hung: u32,
    /// The pod's share of the traffic.
    pub(super) share: f64,
}

/// The dependencies: the herd of boots warming up against them, and the calls they get.
#[derive(Debug)]
pub(super) struct Dependencies<'a> {
    scenario: &'a Scenario,
    /// Booting pods warming up against each dependency.
    booting_on: Vec<u32>,
    /// The pods whose app is booting (when the boot needs dependencies).
    booting: BTreeSet<usize>,
    /// Whether the herd overloads each dependency.
    overloaded: Vec<bool>,
    /// Health-check calls made to each dependency.
    calls: Vec<u64>,
}

impl<'a> Dependencies<'a> {
    /// A scenario's dependencies, called by no one yet.
    pub(super) fn new(scenario: &'a Scenario) -> Self {
        let count = scenario.dependencies.len();
        Dependencies {
            scenario,
            booting_on: vec![0; count],
            booting: BTreeSet::new(),
            overloaded: vec![false; count],
            calls: vec![0; count],
        }
    }

    /// Health-check calls made to each dependency.
    pub(super) fn calls(&self) -> &[u64] {
        &self.calls
    }

    /// The pods booting against the dependencies, in order.
    pub(super) fn booting(&self) -> Vec<usize> {
        self.booting.iter().copied().collect()
    }

    /// `pod` began a boot that warms up against its dependencies: the herd may overload
    /// them, and every pod's requests fare differently then.
    pub(super) fn boot_started(&mut self, pod: usize, effects: &mut Effects) {
        if self.scenario.app.boot_needs.is_empty() {
            return;
        }
        self.booting.insert(pod);
        for &dependency in &self.scenario.app.boot_needs {
            self.booting_on[dependency] += 1;
            self.herd_changed(dependency, effects);
        }
    }

    /// `pod`'s boot ended (done, or the container went away).
    pub(super) fn boot_ended(&mut self, pod: usize, effects: &mut Effects) {
        if self.scenario.app.boot_needs.is_empty() {
            return;
        }
        self.booting.remove(&pod);
        for &dependency in &self.scenario.app.boot_needs {
            let count = &mut self.booting_on[dependency];
            *count = count.saturating_sub(1);
            self.herd_changed(dependency, effects);
        }
    }

    /// How fast `pod`'s boot warms up at `now`: it stalls while a dependency it needs is
    /// down, and slows down while too many pods warm up against it at once (the herd
    /// model).
    pub(super) fn boot_rate(&self, pod: usize, faults: &Faults<'_>, now: Millis) -> f64 {
        let mut rate: f64 = 1.0;
        for &dependency in &self.scenario.app.boot_needs {
            if faults.down(pod, dependency, now) {
                return 0.0;
            }
            if let Some(herd) = self.scenario.dependencies[dependency].herd {
                let booting = self.booting_on[dependency];
                if booting > herd.max_concurrent_boots {
                    rate = rate.min(f64::from(herd.max_concurrent_boots) / f64::from(booting));
                }
            }
        }
        rate
    }

    /// The herd overloads `dependency` while more pods boot against it than it serves.
    fn herd_overloads(&self, dependency: usize) -> Option<Millis> {
        let herd = self.scenario.dependencies[dependency].herd?;
        (self.booting_on[dependency] > herd.max_concurrent_boots).then_some(herd.overload_latency)
    }

    /// The number of booting pods changed: if the herd started or stopped overloading the
    /// dependency, every pod's requests may fare differently.
    fn herd_changed(&mut self, dependency: usize, effects: &mut Effects) {
        let overloaded = self.herd_overloads(dependency).is_some();
        if self.overloaded[dependency] != overloaded {
            self.overloaded[dependency] = overloaded;
            effects.all_reweighed();
        }
    }

    /// The load a pod with `share` of the traffic offers its pool to `dependency`, in
    /// connections' worth of work (requests per millisecond reaching it × the hold time).
    fn pool_load(&self, share: f64, dependency: usize) -> f64 {
        let Some(pool) = self.scenario.dependencies[dependency].pool else {
            return 0.0;
        };
        let reaching: f64 = self
            .scenario
            .requests
            .mix
            .iter()
            .filter(|class| class.needs.contains(&dependency))
            .map(|class| class.share)
            .sum();
        self.scenario.requests.rate / 1000.0 * share * reaching * pool.hold as f64
    }

    /// A call `pod`'s health check makes to `dependency` at `now`: its latency, whether it
    /// succeeds, and whether a failure is the pod's own pool's (no connection to be had),
    /// which probity reports as `exhausted` and no fallback covers. `asks` is what the check
    /// asks of a pool modelled as a queue, and its acquire budget; `caller`, what the call
    /// finds of the pod then (none: no process).
    pub(super) fn call(
        &mut self,
        (pod, dependency): (usize, usize),
        asks: Option<(PoolCheck, Millis)>,
        caller: Option<Caller>,
        faults: &Faults<'_>,
        now: Millis,
        rng: &mut fastrand::Rng,
    ) -> Call {
        self.calls[dependency] += 1;
        let spec = &self.scenario.dependencies[dependency];
        if let Some((question, budget)) = asks
            && let Some(caller) = caller
        {
            if caller.exhausted {
                // A leaked pool: no connection is idle, and none comes back within any
                // budget (an idle-connection check fails at once, an acquire at its budget).
                let waited = if spec.pool.is_some() && question == PoolCheck::Acquire {
                    budget
                } else {
                    0
                };
                return Call::local(waited);
            }
            if let Some(pool) = spec.pool {
                let offered = self.pool_load(caller.share, dependency);
                let (failing, waited) = match question {
                    PoolCheck::IdleConnection => (pool::all_busy(pool.size, offered), 0),
                    PoolCheck::Acquire => (
                        pool::wait_exceeds(pool.size, offered, pool.hold as f64, budget as f64),
                        budget,
                    ),
                };
                if rng.f64() < failing {
                    return Call::local(waited);
                }
            }
            if let Some(size) = self.scenario.app.pool_size
                && caller.hung >= size
            {
                return Call::local(spec.connect_timeout);
            }
        }
        // Transitive health: the dependency's own health endpoint fails when what it checks
        // is down.
        for &upstream in &spec.health_depends_on {
            if faults.down(pod, upstream, now) {
                return Call::answer(spec.latency, false);
            }
        }
        let (latency, answered) = match faults.condition(pod, dependency, now) {
            Condition::Down(OutageBehaviour::Refuse) => (0, false),
            Condition::Down(OutageBehaviour::Hang) => (spec.connect_timeout, false),
            Condition::Slow(latency) => (latency, true),
            Condition::Flicker(probability) => {
                let failed = rng.f64() < probability;
                (spec.latency, !failed)
            }
            Condition::Up => match self.herd_overloads(dependency) {
                Some(latency) => (latency, true),
                None => (spec.latency, true),
            },
        };
        Call::answer(latency, answered)
    }

    /// What a real request's call to `dependency` does right now from `process`: the
    /// fraction of calls that succeed, and how long a failing call takes to fail (at once
    /// for an exhausted pool or a refused connection; a hang, a wait for a held pool or a
    /// slow answer ends at the request timeout, or the connect timeout if shorter).
    pub(super) fn request_call(
        &self,
        (pod, process): (usize, &Process),
        dependency: usize,
        share: f64,
        faults: &Faults<'_>,
        now: Millis,
    ) -> (f64, Millis) {
        let timeout = self.scenario.requests.timeout;
        let spec = &self.scenario.dependencies[dependency];
        if process.pool_exhausted(dependency) {
            return (0.0, 0);
        }
        let (available, delay) = self.call_fares((pod, process), dependency, faults, now);
        match spec.pool {
            // Requests queue for a connection; those that wait past their timeout fail.
            Some(pool) if available > 0.0 => {
                let offered = self.pool_load(share, dependency);
                let served = pool::served(pool.size, offered, pool.hold as f64, timeout as f64);
                if served < 1.0 {
                    (available * served, timeout)
                } else {
                    (available, delay)
                }
            }
            _ => (available, delay),
        }
    }

    /// How a real call fares past the pool: the fraction that succeed, and how long a
    /// failing one takes.
    fn call_fares(
        &self,
        (pod, process): (usize, &Process),
        dependency: usize,
        faults: &Faults<'_>,
        now: Millis,
    ) -> (f64, Millis) {
        let timeout = self.scenario.requests.timeout;
        let spec = &self.scenario.dependencies[dependency];
        if let Some(size) = self.scenario.app.pool_size
            && process.held(dependency, now) as u32 >= size
        {
            return (0.0, spec.connect_timeout.min(timeout));
        }
        match faults.condition(pod, dependency, now) {
            Condition::Down(OutageBehaviour::Refuse) => (0.0, 0),
            Condition::Down(OutageBehaviour::Hang) => (0.0, spec.connect_timeout.min(timeout)),
            Condition::Slow(latency) if latency > timeout => (0.0, timeout),
            Condition::Slow(_) => (1.0, 0),
            Condition::Flicker(probability) => (1.0 - probability, spec.latency),
            Condition::Up => match self.herd_overloads(dependency) {
                Some(latency) if latency > timeout => (0.0, timeout),
                _ => (1.0, 0),
            },
        }
    }

    /// What becomes of `pod`'s requests right now, while its process serves (`serving`)
    /// with `share` of the traffic under its `policy`: the fractions that fail and that are
    /// served degraded.
    pub(super) fn pod_outcome(
        &self,
        (pod, serving): (usize, Option<&Process>),
        policy: &Policy<'_>,
        share: f64,
        faults: &Faults<'_>,
        now: Millis,
    ) -> Outcome {
        let Some(process) = serving else {
            return Outcome::failing(1.0);
        };
        let call = |dependency| {
            self.request_call((pod, process), dependency, share, faults, now)
                .0
        };
        let mut passing = 0.0;
        let mut degraded = 0.0;
        for class in &self.scenario.requests.mix {
            // Requests that succeed, and those among them that a fallback answered.
            let mut succeeds = 1.0;
            let mut direct = 1.0;
            for &dependency in &class.needs {
                let (normal, instead) = match policy.fare(pod, class, dependency, now) {
                    Fare::Direct => (call(dependency), 0.0),
                    Fare::Fallback { dependency, share } => (0.0, share * call(dependency)),
                };
                let available = normal + instead;
                if available == 0.0 {
                    succeeds = 0.0;
                    direct = 0.0;
                    break;
                }
                succeeds *= available;
                direct *= normal;
            }
            passing += class.share * succeeds;
            degraded += class.share * (succeeds - direct);
        }
        // A pod sent more than it can serve slows down until the excess times out.
        if let Some(capacity) = self.scenario.app.capacity {
            let load = self.scenario.requests.rate * share;
            if load > capacity {
                passing *= capacity / load;
                degraded *= capacity / load;
            }
        }
        Outcome {
            failure: (1.0 - passing).clamp(0.0, 1.0),
            degraded: degraded.clamp(0.0, 1.0),
        }
    }
}
