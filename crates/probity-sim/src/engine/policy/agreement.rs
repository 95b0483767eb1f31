//! The simulator's health policy agrees with probity's runtime, transition for transition.
//!
//! The same random sequence of poll results and passive failures goes to probity's
//! hysteresis, published the way the runtime's store publishes it, and to a simulated pod's
//! poller (through [`Sim::poll_done`], as the event loop delivers results). The two must
//! rise and fall at the same observations, and the pod's cached endpoint must answer what
//! probity's verdict answers at every instant a probe asks in between.

use super::CheckState;
use crate::scenario::{Format, Handler, Scenario};
use crate::time::Millis;
use probity_contract::Tier;
use probity_contract::hysteresis::{Hysteresis, Transition};
use probity_contract::verdict::{Evidence, Sample, Status};
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
            if let Some(process) = sim.pods[0].process.as_mut() {
                process.checks[0] = CheckState::fresh(spec);
            }
        } else {
            // A settled check has passed a full rise, the last at 0.
            for _ in 0..settings.rise {
                runtime.record(Observation::Poll(true), 0);
            }
        }
        let process = sim.pods[0].process.as_ref().map(|process| process.id);
        prop_assert!(process.is_some());
        let process = process.unwrap_or_default();
        let healthy = |sim: &super::Sim<'_>| {
            sim.pods[0]
                .process
                .as_ref()
                .is_some_and(|process| process.checks[0].hysteresis.is_healthy())
        };

        let mut now: Millis = 0;
        let mut simulated = Vec::new();
        let mut library = Vec::new();
        for (index, &(observation, gap, probe_after)) in sequence.iter().enumerate() {
            now += gap;
            sim.now = now;
            let was_healthy = healthy(&sim);
            let skippable = sim.pods[0]
                .process
                .as_ref()
                .is_some_and(|process| process.checks[0].success_changes_nothing());
            let before = (runtime.machine.is_healthy(), runtime.machine.consecutive_failures());
            match observation {
                Observation::Poll(success) => sim.poll_done(0, 0, process, success),
                Observation::Passive => {
                    if let Some(process) = sim.pods[0].process.as_mut() {
                        process.checks[0].force_unhealthy(now);
                    }
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
