//! The simulator's health policy agrees with probity's runtime, transition for transition.
//!
//! The same random sequence of poll results and passive failures goes to probity's
//! hysteresis, published the way the runtime's store publishes it, and to a simulated pod's
//! poller (through [`super::policy::Policy::poll_done`], as the event loop delivers results). The two must
//! rise and fall at the same observations, and the pod's cached endpoint must answer what
//! probity's verdict answers at every instant a probe asks in between. With a fallback, the
//! same holds for a pair of checks (a hard one naming the other as its fallback, failures
//! that are the pod's own among them): the endpoint answers what probity's readiness answers,
//! and the requests are served by the fallback exactly when probity's verdict says it serves.

use super::policy::CheckState;
use crate::scenario::{Format, Handler, Scenario};
use crate::time::Millis;
use probity_contract::Tier;
use probity_contract::hysteresis::{Hysteresis, Transition};
use probity_contract::verdict::{Evidence, Gates, Sample, Status, readiness, status};
use proptest::prelude::*;
use std::path::Path;
use std::time::Duration;

/// One thing that happens to the check.
#[derive(Debug, Clone, Copy)]
enum Observation {
    /// A poll's result.
    Poll(bool),
    /// Passive reports fail the check at once.
    Passive,
}

/// A check's settings for one case.
#[derive(Debug, Clone, Copy)]
struct Settings {
    rise: u32,
    fall: u32,
    boot_requires_rise: bool,
    staleness: Option<Millis>,
    fail_open_for: Option<Millis>,
    /// Whether the check starts without history (a fresh process) instead of settled.
    fresh: bool,
}

/// probity's runtime for one check: the machine, and the evidence its store publishes.
struct Runtime {
    machine: Hysteresis,
    evidence: Evidence<Duration>,
}

impl Runtime {
    fn new(settings: Settings) -> Self {
        Runtime {
            machine: Hysteresis::new(settings.rise, settings.fall, settings.boot_requires_rise),
            evidence: Evidence {
                tier: Tier::Hard,
                healthy: false,
                last: None,
                unhealthy_since: None,
                staleness: settings
                    .staleness
                    .map_or(Duration::MAX, Duration::from_millis),
                fail_open_for: settings.fail_open_for.map(Duration::from_millis),
                consecutive_successes: 0,
                rise: settings.rise,
                fallback: None,
            },
        }
    }

    /// The runtime's `store::record`: the machine's transition, then the published state.
    fn record(&mut self, observation: Observation, now: Millis) -> Option<Transition> {
        let (transition, ok) = match observation {
            Observation::Poll(ok) => (self.machine.observe(ok), ok),
            Observation::Passive => (self.machine.force_unhealthy(), false),
        };
        let at = Duration::from_millis(now);
        self.evidence.healthy = self.machine.is_healthy();
        self.evidence.consecutive_successes = self.machine.consecutive_successes();
        match transition {
            Some(Transition::Rose) => self.evidence.unhealthy_since = None,
            Some(Transition::Fell) => self.evidence.unhealthy_since = Some(at),
            None => {}
        }
        self.evidence.last = Some(Sample {
            at,
            ok,
            warning: false,
            local: false,
        });
        transition
    }

    /// Whether readiness answers 200 at `now`.
    fn ready(&self, now: Millis) -> bool {
        self.evidence.status(Duration::from_millis(now)) != Status::Fail
    }
}

fn scenario(settings: Settings) -> Scenario {
    let optional = |field: &str, value: Option<Millis>| {
        value.map_or(String::new(), |millis| format!(", {field}: {millis}ms"))
    };
    let yaml = format!(
        r#"
name: agreement
duration: 10m
fleet: {{ replicas: 1, start: steady }}
dependencies: {{ db: {{}} }}
app:
  endpoints:
    /readyz: {{ mode: cached, checks: [db] }}
  checks:
    db: {{ dependency: db, interval: 5s, timeout: 1s, rise: {rise}, fall: {fall}, boot_requires_rise: {boot}{staleness}{fail_open} }}
container:
  readinessProbe: {{ httpGet: {{ path: /readyz, port: 8080 }}, periodSeconds: 2 }}
"#,
        rise = settings.rise,
        fall = settings.fall,
        boot = settings.boot_requires_rise,
        staleness = optional("staleness", settings.staleness),
        fail_open = optional("fail_open_for", settings.fail_open_for),
    );
    Scenario::parse(&yaml, Format::Yaml, Path::new("agreement.yaml")).expect("a valid scenario")
}

fn settings() -> impl Strategy<Value = Settings> {
    (
        1u32..6,
        1u32..6,
        any::<bool>(),
        prop::option::of(1_000u64..20_000),
        prop::option::of(1_000u64..60_000),
        any::<bool>(),
    )
        .prop_map(
            |(rise, fall, boot_requires_rise, staleness, fail_open_for, fresh)| Settings {
                rise,
                fall,
                boot_requires_rise,
                staleness,
                fail_open_for,
                fresh,
            },
        )
}

/// Observations, each with the time since the previous one and when a probe asks after it.
fn observations() -> impl Strategy<Value = Vec<(Observation, Millis, Millis)>> {
    let observation = prop_oneof![
        6 => any::<bool>().prop_map(Observation::Poll),
        1 => Just(Observation::Passive),
    ];
    prop::collection::vec((observation, 1u64..15_000, 0u64..30_000), 1..120)
}

proptest! {
    #[test]
    fn the_simulated_policy_rises_and_falls_with_probitys_hysteresis(
        settings in settings(),
        sequence in observations(),
    ) {
        let scenario = scenario(settings);
        let mut sim = super::Sim::new(&scenario, 1);
        sim.init_fleet();
        let spec = &scenario.app.checks[0];
        let mut runtime = Runtime::new(settings);
        if settings.fresh {
            *sim.policy.state_for_test(0, 0) = CheckState::fresh(spec);
        } else {
            // A settled check has passed a full rise, the last at 0.
            for _ in 0..settings.rise {
                runtime.record(Observation::Poll(true), 0);
            }
        }
        let process = sim.pods[0].process.as_ref().map(|process| process.id);
        prop_assert!(process.is_some());
        let process = process.unwrap_or_default();
        let healthy = |sim: &super::Sim<'_>| sim.policy.states(0)[0].hysteresis.is_healthy();

        let mut now: Millis = 0;
        let mut simulated = Vec::new();
        let mut library = Vec::new();
        for (index, &(observation, gap, probe_after)) in sequence.iter().enumerate() {
            now += gap;
            sim.now = now;
            let was_healthy = healthy(&sim);
            let skippable = sim.policy.states(0)[0].success_changes_nothing();
            let before = (runtime.machine.is_healthy(), runtime.machine.consecutive_failures());
            match observation {
                Observation::Poll(success) => sim.deliver_poll(0, 0, process, (success, false)),
                Observation::Passive => {
                    sim.policy.state_for_test(0, 0).force_unhealthy(now);
                }
            }
            if let Some(transition) = runtime.record(observation, now) {
                library.push((index, now, transition));
            }
            match (was_healthy, healthy(&sim)) {
                (false, true) => simulated.push((index, now, Transition::Rose)),
                (true, false) => simulated.push((index, now, Transition::Fell)),
                _ => {}
            }
            if skippable && matches!(observation, Observation::Poll(true)) {
                // The simulator leaves such a success unrecorded: it must change nothing.
                let after = (runtime.machine.is_healthy(), runtime.machine.consecutive_failures());
                prop_assert_eq!(before, after);
            }
            // A probe asks just after the result, later on, and either side of the instants
            // the fail-open window and the staleness bound run out (they do with time alone).
            let mut asks = vec![now, now + probe_after];
            if let (Some(since), Some(window)) = (runtime.evidence.unhealthy_since, settings.fail_open_for) {
                let closes = since.as_millis() as Millis + window;
                asks.extend([closes - 1, closes]);
            }
            if let (Some(last), Some(bound)) = (runtime.evidence.last, settings.staleness) {
                let stale = last.at.as_millis() as Millis + bound;
                asks.extend([stale, stale + 1]);
            }
            for asked in asks.into_iter().filter(|&asked| asked >= now) {
                sim.now = asked;
                let answer = sim.respond(0, Handler::Http { endpoint: 0 });
                prop_assert_eq!(
                    answer.map(|(_, passed)| passed),
                    Some(runtime.ready(asked)),
                    "readiness at {} ms after observation {}", asked, index
                );
            }
            sim.now = now;
        }
        prop_assert_eq!(simulated, library);
    }
}

/// One thing that happens to one of the two checks of a fallback pair.
#[derive(Debug, Clone, Copy)]
enum PairObservation {
    /// A poll of the database (`true`) or the cache, with its result and whether a failure
    /// was the pod's own pool's.
    Poll { db: bool, ok: bool, local: bool },
    /// Passive reports fail the database check at once (whose fault it is, only a poll says).
    Passive,
}

/// The two checks' settings: the database's (hard, with the cache as its fallback) and the
/// cache's, whose tier is random too.
#[derive(Debug, Clone, Copy)]
struct PairSettings {
    db: Settings,
    cache: Settings,
    cache_tier: Tier,
}

fn pair_scenario(settings: PairSettings) -> Scenario {
    let optional = |field: &str, value: Option<Millis>| {
        value.map_or(String::new(), |millis| format!(", {field}: {millis}ms"))
    };
    let check = |settings: Settings| {
        format!(
            "interval: 5s, timeout: 1s, rise: {}, fall: {}, boot_requires_rise: {}{}",
            settings.rise,
            settings.fall,
            settings.boot_requires_rise,
            optional("staleness", settings.staleness),
        )
    };
    let cache_fail_open = if settings.cache_tier == Tier::Hard {
        optional("fail_open_for", settings.cache.fail_open_for)
    } else {
        String::new()
    };
    let yaml = format!(
        r#"
name: agreement-with-a-fallback
duration: 10m
fleet: {{ replicas: 1, start: steady }}
dependencies: {{ db: {{}}, cache: {{}} }}
app:
  endpoints:
    /readyz: {{ mode: cached, checks: [db, cache] }}
  checks:
    db: {{ dependency: db, fallback: cache, {db}{db_fail_open} }}
    cache: {{ dependency: cache, tier: {tier}, {cache}{cache_fail_open} }}
container:
  readinessProbe: {{ httpGet: {{ path: /readyz, port: 8080 }}, periodSeconds: 2 }}
"#,
        db = check(settings.db),
        db_fail_open = optional("fail_open_for", settings.db.fail_open_for),
        tier = settings.cache_tier,
        cache = check(settings.cache),
    );
    Scenario::parse(&yaml, Format::Yaml, Path::new("agreement.yaml")).expect("a valid scenario")
}

fn pair_settings() -> impl Strategy<Value = PairSettings> {
    (
        settings(),
        settings(),
        prop_oneof![Just(Tier::Hard), Just(Tier::Soft), Just(Tier::Info)],
    )
        .prop_map(|(db, cache, cache_tier)| PairSettings {
            db,
            cache: Settings {
                fresh: db.fresh,
                ..cache
            },
            cache_tier,
        })
}

fn pair_observations() -> impl Strategy<Value = Vec<(PairObservation, Millis, Millis)>> {
    let observation = prop_oneof![
        6 => (any::<bool>(), any::<bool>(), prop::bool::weighted(0.2))
            .prop_map(|(db, ok, local)| PairObservation::Poll { db, ok, local }),
        1 => Just(PairObservation::Passive),
    ];
    prop::collection::vec((observation, 1u64..15_000, 0u64..30_000), 1..120)
}

impl Runtime {
    /// The runtime's record of a result that may be the instance's own fault.
    fn record_sample(&mut self, ok: Option<bool>, local: bool, now: Millis) {
        let observation = ok.map_or(Observation::Passive, Observation::Poll);
        self.record(observation, now);
        if let Some(last) = self.evidence.last.as_mut() {
            last.local = local && !last.ok;
        }
    }
}

proptest! {
    #[test]
    fn the_simulated_fallback_verdict_is_probitys(
        settings in pair_settings(),
        sequence in pair_observations(),
    ) {
        let scenario = pair_scenario(settings);
        let index = |name: &str| {
            scenario.app.checks.iter().position(|check| check.name == name).unwrap_or_default()
        };
        let (db, cache) = (index("db"), index("cache"));
        prop_assert_eq!(scenario.app.checks[db].fallback, Some(cache));
        let mut sim = super::Sim::new(&scenario, 1);
        sim.init_fleet();
        let mut runtime_db = Runtime::new(settings.db);
        let mut runtime_cache = Runtime::new(settings.cache);
        runtime_cache.evidence.tier = settings.cache_tier;
        if settings.cache_tier != Tier::Hard {
            runtime_cache.evidence.fail_open_for = None;
        }
        // probity's registry resolves the fallback to the cache's index among the checks.
        runtime_db.evidence.fallback = Some(1);
        if settings.db.fresh {
            *sim.policy.state_for_test(0, db) = CheckState::fresh(&scenario.app.checks[db]);
            *sim.policy.state_for_test(0, cache) = CheckState::fresh(&scenario.app.checks[cache]);
        } else {
            for _ in 0..settings.db.rise {
                runtime_db.record(Observation::Poll(true), 0);
            }
            for _ in 0..settings.cache.rise {
                runtime_cache.record(Observation::Poll(true), 0);
            }
        }
        let process = sim.pods[0].process.as_ref().map(|process| process.id);
        prop_assert!(process.is_some());
        let process = process.unwrap_or_default();
        let gates = Gates {
            shutting_down_since: None,
            has_steps: false,
            steps_pending: false,
            liveness_failing: false,
        };

        let mut now: Millis = 0;
        for (step, &(observation, gap, probe_after)) in sequence.iter().enumerate() {
            now += gap;
            sim.now = now;
            match observation {
                PairObservation::Poll { db: true, ok, local } => {
                    sim.deliver_poll(0, db, process, (ok, local));
                    runtime_db.record_sample(Some(ok), local, now);
                }
                PairObservation::Poll { db: false, ok, local } => {
                    sim.deliver_poll(0, cache, process, (ok, local));
                    runtime_cache.record_sample(Some(ok), local, now);
                }
                PairObservation::Passive => {
                    // A report keeps the word of the poll before it on whose fault it is.
                    let kept = runtime_db
                        .evidence
                        .last
                        .as_ref()
                        .is_some_and(|last| !last.ok && last.local);
                    sim.policy.state_for_test(0, db).force_unhealthy(now);
                    runtime_db.record_sample(None, kept, now);
                }
            }
            let checks = [runtime_db.evidence.clone(), runtime_cache.evidence.clone()];
            // Ask at the result, later, and either side of every instant a window or a
            // staleness bound of either check runs out.
            let mut asks = vec![now, now + probe_after];
            for (evidence, settings) in [(&checks[0], settings.db), (&checks[1], settings.cache)] {
                if let (Some(since), Some(window)) = (evidence.unhealthy_since, evidence.fail_open_for) {
                    let closes = since.as_millis() as Millis + window.as_millis() as Millis;
                    asks.extend([closes - 1, closes]);
                }
                if let (Some(last), Some(bound)) = (evidence.last, settings.staleness) {
                    let stale = last.at.as_millis() as Millis + bound;
                    asks.extend([stale, stale + 1]);
                }
            }
            for asked in asks.into_iter().filter(|&asked| asked >= now) {
                sim.now = asked;
                let at = Duration::from_millis(asked);
                let entries = readiness(gates, [], &checks, |evidence| evidence, at);
                let ready = status(entries.map(|entry| (entry, false))) != Status::Fail;
                let answer = sim.respond(0, Handler::Http { endpoint: 0 });
                prop_assert_eq!(
                    answer.map(|(_, passed)| passed),
                    Some(ready),
                    "readiness at {} ms after observation {}", asked, step
                );
                let served = checks[0].verdict_among(&checks, |evidence| evidence, at).served_by;
                let simulated = sim.policy.served_by_fallback(0, db, asked);
                prop_assert_eq!(
                    simulated,
                    served == Some(1),
                    "served by the cache at {} ms after observation {}", asked, step
                );
            }
            sim.now = now;
        }
    }
}
