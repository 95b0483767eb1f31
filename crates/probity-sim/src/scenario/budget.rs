//! The model's size: a run whose work would run for hours or exhaust memory is refused at
//! validation, naming the field that makes it so and the limit.
//!
//! The work of a run is its events. Each pod's probes, polls and load-balancer checks are
//! events at their own cadence; a flapping dependency's every boundary re-evaluates every
//! pod. The estimate counts those (twice for a call that takes time: its start and its end).

use super::{Checked, Routing, Scenario};
use crate::error::Invalid;
use probity_contract::probe::ProbeKind;

/// The most events a run may take (a few minutes of work).
pub const MAX_EVENTS: f64 = 1e9;

/// One source of events.
struct Source {
    field: String,
    events: f64,
}

/// Refuses a scenario whose run would take more than [`MAX_EVENTS`].
pub(super) fn check(scenario: &Scenario) -> Checked<()> {
    let pods = scenario.fleet.replicas as f64;
    let seconds = scenario.duration as f64 / 1000.0;
    let per_pod = |interval_ms: u64| pods * seconds * 2.0 * 1000.0 / interval_ms.max(1) as f64;
    let mut sources = Vec::new();
    for kind in ProbeKind::ALL {
        if let Some(probe) = scenario.probes.get(kind) {
            sources.push(Source {
                field: format!("container.{}.periodSeconds", kind.container_field()),
                events: per_pod(probe.period()),
            });
        }
    }
    for check in &scenario.app.checks {
        sources.push(Source {
            field: format!("app.checks.{}.interval", check.name),
            events: per_pod(check.interval),
        });
    }
    let router_interval = match &scenario.routing {
        Routing::Haproxy(settings) => Some(
            settings
                .inter
                .min(settings.fastinter)
                .min(settings.downinter),
        ),
        Routing::Envoy(settings) => Some(settings.interval),
        Routing::Alb(settings) => Some(settings.interval),
        _ => None,
    };
    if let Some(interval) = router_interval {
        sources.push(Source {
            field: "routing.interval".into(),
            events: per_pod(interval),
        });
    }
    if let Some(keep_alive) = scenario.requests.keep_alive {
        sources.push(Source {
            field: "requests.keep_alive.connection_lifetime".into(),
            events: f64::from(keep_alive.clients) * seconds * 1000.0
                / keep_alive.connection_lifetime.max(1) as f64,
        });
    }
    for (index, fault) in scenario.faults.iter().enumerate() {
        if let crate::scenario::FaultKind::FlappingDependency { period, .. } = fault.kind {
            let lasts = fault
                .until
                .unwrap_or(scenario.duration)
                .min(scenario.duration)
                - fault.at;
            let boundaries = 2.0 * lasts as f64 / period.max(1) as f64;
            sources.push(Source {
                field: format!("faults[{index}].period"),
                events: boundaries * (pods + 1.0),
            });
        }
    }
    let total: f64 = sources.iter().map(|source| source.events).sum();
    if total <= MAX_EVENTS {
        return Ok(());
    }
    let largest = sources
        .iter()
        .max_by(|left, right| left.events.total_cmp(&right.events))
        .map_or_else(|| "duration".to_string(), |source| source.field.clone());
    Err(Invalid::new(
        largest,
        format!(
            "the run would take about {total:.2e} events ({} pods for {}), more than the {MAX_EVENTS:.0e} the model allows; this field contributes most: lengthen it, or shorten `duration`, or reduce `fleet.replicas`",
            scenario.fleet.replicas,
            crate::time::Span(scenario.duration)
        ),
    ))
}
