//! The contract: what each endpoint checks and waits on, with what timing
//! ([`crate::Health::contract`] writes it from what was declared, so it cannot drift from what
//! runs). The types are [`probity_contract::contract`]'s, shared with the linter and the
//! simulator.

pub use probity_contract::contract::*;
pub use probity_contract::{ProbeKind, Tier};

use crate::store::Store;

fn millis(duration: std::time::Duration) -> u64 {
    duration.as_millis() as u64
}

/// What the store's checks, steps and conditions are, as a [`Contract`].
pub(crate) fn describe(store: &Store) -> Contract {
    let checks: Vec<CheckContract> = store
        .cells
        .iter()
        .map(|cell| CheckContract {
            name: cell.name.to_string(),
            tier: cell.tier,
            dependency: cell.dependency.as_deref().map(str::to_owned),
            interval_ms: millis(cell.interval),
            timeout_ms: millis(cell.timeout),
            jitter_ms: millis(cell.jitter),
            rise: cell.rise,
            fall: cell.fall,
            staleness_ms: millis(cell.staleness),
            fail_open_for_ms: cell.fail_open_for.map(millis),
            boot_requires_rise: cell.boot_requires_rise,
            passive_failure_threshold: Some(cell.passive_failures),
            calls_health_endpoint: cell.check.calls_health_endpoint(),
            outranked_by_requests: cell.check.outranked_by_requests(),
            fallback: cell
                .fallback
                .map(|index| store.cells[index].name.to_string()),
        })
        .collect();
    let liveness: Vec<LivenessContract> = store
        .conditions
        .iter()
        .map(|condition| LivenessContract {
            name: condition.name.to_string(),
            kind: condition.kind,
            threshold_ms: condition.threshold.map(millis),
        })
        .collect();
    let steps: Vec<StepContract> = store
        .steps
        .iter()
        .map(|step| StepContract {
            name: step.name.to_string(),
            waits_on: step.waits_on.as_deref().map(str::to_owned),
        })
        .collect();

    // What can fail the endpoint: hard checks' dependencies and the steps that wait on one
    // (a soft or info check never turns readiness 503).
    let mut readiness_waits: Vec<String> = Vec::new();
    for dependency in store
        .cells
        .iter()
        .filter(|cell| cell.tier == probity_contract::Tier::Hard)
        .filter_map(|cell| cell.dependency.as_deref())
        .chain(
            store
                .steps
                .iter()
                .filter_map(|step| step.waits_on.as_deref()),
        )
    {
        if !readiness_waits.iter().any(|known| known == dependency) {
            readiness_waits.push(dependency.to_owned());
        }
    }
    let mut readiness_names: Vec<String> = checks.iter().map(|check| check.name.clone()).collect();
    readiness_names.extend(
        steps
            .iter()
            .filter(|step| step.waits_on.is_some())
            .map(|step| step.name.clone()),
    );
    let readiness_touches =
        !readiness_waits.is_empty() || store.cells.iter().any(|cell| cell.dependency.is_some());
    let endpoint = |probe: ProbeKind, checks: Vec<String>, touches: bool, waits_on: Vec<String>| {
        EndpointContract {
            probe,
            path: store.paths.get(probe).to_owned(),
            grpc_service: Some(probe.as_str().to_owned()),
            checks,
            checks_dependencies: touches,
            waits_on,
        }
    };
    let endpoints = vec![
        endpoint(
            ProbeKind::Liveness,
            liveness
                .iter()
                .map(|condition| condition.name.clone())
                .collect(),
            false,
            Vec::new(),
        ),
        endpoint(
            ProbeKind::Readiness,
            readiness_names,
            readiness_touches,
            readiness_waits,
        ),
        endpoint(
            ProbeKind::Startup,
            steps
                .iter()
                .filter(|step| step.waits_on.is_none())
                .map(|step| step.name.clone())
                .collect(),
            false,
            Vec::new(),
        ),
    ];
    Contract {
        version: CONTRACT_VERSION,
        service: store.service.as_deref().map(str::to_owned),
        endpoints,
        checks,
        liveness,
        startup: StartupContract {
            steps,
            expected_boot_ms: store.expected_boot.map(millis),
        },
        shutdown: ShutdownContract {
            drain_delay_ms: millis(store.shutdown.drain_delay),
            in_flight_deadline_ms: Some(millis(store.shutdown.in_flight_deadline)),
            drain_delay_derivation: store.shutdown.derivation,
        },
    }
}
