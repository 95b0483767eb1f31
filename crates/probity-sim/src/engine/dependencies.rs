//! Dependencies: how a call to each one behaves right now, from the health checks' calls
//! to the real requests'.
//!
//! A dependency is up, down (calls hang or are refused), slow, flickering (a fraction of
//! calls fail) or overloaded by too many simultaneous cold starts (the herd model). The
//! app's connection pool sits in front: a pool that leaked dry fails every call at once, and
//! hung health-check calls hold connections until they end.

use super::Sim;
use super::faults::Condition;
use super::pod::Process;
use super::policy::Call;
use super::pool;
use super::queue::Event;
use super::traffic::Outcome;
use crate::report::KillReason;
use crate::scenario::{OutageBehaviour, PoolCheck, RequestClass};
use crate::time::Millis;
use std::collections::BTreeSet;

/// How a request reaches a dependency it needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Fare {
    /// It calls the dependency.
    Direct,
    /// The dependency's check is served by its fallback: `share` of the requests are
    /// answered from `dependency`, the rest refused at once.
    Fallback { dependency: usize, share: f64 },
}

/// The dependencies' shared state.
#[derive(Debug)]
pub(super) struct Dependencies {
    /// Booting pods warming up against each dependency.
    pub(super) booting_on: Vec<u32>,
    /// The pods whose app is booting (when the boot needs dependencies).
    pub(super) booting: BTreeSet<usize>,
    /// Whether the herd overloads each dependency.
    overloaded: Vec<bool>,
    /// Health-check calls made to each dependency.
    pub(super) calls: Vec<u64>,
}

impl Dependencies {
    /// `count` dependencies, called by no one yet.
    pub(super) fn new(count: usize) -> Self {
        Dependencies {
            booting_on: vec![0; count],
            booting: BTreeSet::new(),
            overloaded: vec![false; count],
            calls: vec![0; count],
        }
    }
}

impl Sim<'_> {
    /// How `dependency` behaves now for `pod`, from the faults in force that reach it.
    pub(super) fn condition(&self, pod: usize, dependency: usize) -> Condition {
        self.faults.condition(pod, dependency, self.now)
    }

    /// Whether `dependency` is down for `pod`.
    pub(super) fn dependency_down(&self, pod: usize, dependency: usize) -> bool {
        self.faults.down(pod, dependency, self.now)
    }

    /// The herd overloads `dependency` while more pods boot against it than it serves.
    fn herd_overloads(&self, dependency: usize) -> Option<Millis> {
        let herd = self.scenario.dependencies[dependency].herd?;
        (self.dependencies.booting_on[dependency] > herd.max_concurrent_boots)
            .then_some(herd.overload_latency)
    }

    /// The number of booting pods changed: if the herd started or stopped overloading the
    /// dependency, every pod's requests may fare differently.
    pub(super) fn herd_changed(&mut self, dependency: usize) {
        let overloaded = self.herd_overloads(dependency).is_some();
        if self.dependencies.overloaded[dependency] != overloaded {
            self.dependencies.overloaded[dependency] = overloaded;
            self.mark_all();
        }
    }

    /// The load a pod's requests offer its pool to `dependency`, in connections' worth of
    /// work (requests per millisecond reaching it × the hold time).
    pub(super) fn pool_load(&self, pod: usize, dependency: usize) -> f64 {
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
        self.scenario.requests.rate / 1000.0 * self.traffic.share(pod) * reaching * pool.hold as f64
    }

    /// A call a health check makes to a dependency: its latency, whether it succeeds, and
    /// whether a failure is the pod's own pool's (no connection to be had), which probity
    /// reports as `exhausted` and no fallback covers. `asks` is what the check asks of a
    /// pool modelled as a queue, and its acquire budget.
    pub(super) fn call_dependency(
        &mut self,
        pod: usize,
        dependency: usize,
        asks: Option<(PoolCheck, Millis)>,
        count: bool,
    ) -> Call {
        if count {
            self.dependencies.calls[dependency] += 1;
        }
        let spec = &self.scenario.dependencies[dependency];
        if let Some((question, budget)) = asks
            && let Some(process) = self.pods[pod].process.as_ref()
        {
            if process.pool_exhausted(dependency) {
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
                let offered = self.pool_load(pod, dependency);
                let (failing, waited) = match question {
                    PoolCheck::IdleConnection => (pool::all_busy(pool.size, offered), 0),
                    PoolCheck::Acquire => (
                        pool::wait_exceeds(pool.size, offered, pool.hold as f64, budget as f64),
                        budget,
                    ),
                };
                if self.rng.f64() < failing {
                    return Call::local(waited);
                }
            }
            if let Some(size) = self.scenario.app.pool_size
                && process
                    .inflight
                    .iter()
                    .filter(|(_, on)| usize::from(*on) == dependency)
                    .count() as u32
                    >= size
            {
                return Call::local(spec.connect_timeout);
            }
        }
        // Transitive health: the dependency's own health endpoint fails when what it checks
        // is down.
        for &upstream in &spec.health_depends_on {
            if self.dependency_down(pod, upstream) {
                return Call::answer(spec.latency, false);
            }
        }
        let (latency, answered) = match self.condition(pod, dependency) {
            Condition::Down(OutageBehaviour::Refuse) => (0, false),
            Condition::Down(OutageBehaviour::Hang) => (spec.connect_timeout, false),
            Condition::Slow(latency) => (latency, true),
            Condition::Flicker(probability) => {
                let failed = self.rng.f64() < probability;
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
        pod: usize,
        process: &Process,
        dependency: usize,
    ) -> (f64, Millis) {
        let timeout = self.scenario.requests.timeout;
        let spec = &self.scenario.dependencies[dependency];
        if process.pool_exhausted(dependency) {
            return (0.0, 0);
        }
        let (available, delay) = self.dependency_call_fares(pod, process, dependency);
        match spec.pool {
            // Requests queue for a connection; those that wait past their timeout fail.
            Some(pool) if available > 0.0 => {
                let offered = self.pool_load(pod, dependency);
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
    fn dependency_call_fares(
        &self,
        pod: usize,
        process: &Process,
        dependency: usize,
    ) -> (f64, Millis) {
        let timeout = self.scenario.requests.timeout;
        let spec = &self.scenario.dependencies[dependency];
        if let Some(size) = self.scenario.app.pool_size
            && process.held(dependency, self.now) as u32 >= size
        {
            return (0.0, spec.connect_timeout.min(timeout));
        }
        match self.condition(pod, dependency) {
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

    /// How a request of `class` fares at `need` in `pod`'s process, right now: it calls the
    /// dependency, or, while the dependency's check is served by its fallback, the handler
    /// answers [`RequestClass::served_by_fallback`] of them from the fallback's dependency
    /// (probity's `HealthState::degraded`) and refuses the rest at once.
    pub(super) fn need_fares(&self, pod: usize, class: &RequestClass, need: usize) -> Fare {
        if let Some((check, _, fallback)) = self.policy.fallbacks().of[need]
            && self.policy.served_by_fallback(pod, check, self.now)
        {
            return Fare::Fallback {
                dependency: fallback,
                share: class.served_by_fallback,
            };
        }
        Fare::Direct
    }

    /// Whether any of the pod's checks fails while its fallback serves in its place now.
    pub(super) fn serves_degraded(&self, pod: usize) -> bool {
        self.pods[pod].serving().is_some() && self.policy.serves_degraded(pod, self.now)
    }

    /// What becomes of the pod's requests right now: the fractions that fail and that are
    /// served degraded.
    pub(super) fn pod_outcome(&self, pod: usize) -> Outcome {
        let Some(process) = self.pods[pod].serving() else {
            return Outcome::failing(1.0);
        };
        let mut passing = 0.0;
        let mut degraded = 0.0;
        for class in &self.scenario.requests.mix {
            // Requests that succeed, and those among them that a fallback answered.
            let mut succeeds = 1.0;
            let mut direct = 1.0;
            for &dependency in &class.needs {
                let (normal, instead) = match self.need_fares(pod, class, dependency) {
                    Fare::Direct => (self.request_call(pod, process, dependency).0, 0.0),
                    Fare::Fallback { dependency, share } => {
                        (0.0, share * self.request_call(pod, process, dependency).0)
                    }
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
            let load = self.scenario.requests.rate * self.traffic.share(pod);
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
