//! A row's figures beyond the incident table's columns, read from the events and the traffic
//! of the row's stretch of the timeline.

use super::events::{Event, EventKind};
use super::report::{ClassFigures, Figures};
use crate::file::Traffic;
use crate::load::{Outcome, Timeline};
use probity_contract::probe::ProbeKind;
use tokio::time::Instant;

/// The figures of the stretch from `t0` (the fault's start) to `row_end`, the fault ending at
/// `fault_end`; `events` are the row's.
pub fn of(
    events: &[Event],
    traffic: &Traffic,
    timeline: &Timeline,
    t0: Instant,
    fault_end: Instant,
    row_end: Instant,
) -> Figures {
    let since = |from: Instant, at: Instant| at.saturating_duration_since(from).as_secs_f64();
    let failures = |kind: ProbeKind| {
        events
            .iter()
            .filter(|e| matches!(&e.kind, EventKind::ProbeFailed { probe, .. } if *probe == kind))
            .count() as u32
    };
    // A new process of the instance acted on: its startup probe passing, and when it spawned.
    let started = events
        .iter()
        .find(|e| e.instance == 0 && e.kind == EventKind::Started);
    let spawned = started.and_then(|started| {
        events
            .iter()
            .filter(|e| e.instance == 0 && e.kind == EventKind::Spawned && e.at <= started.at)
            .map(|e| e.at)
            .max()
    });
    let samples = timeline.samples(t0, row_end);
    let succeeded = |sample: &crate::load::Sample| match sample.outcome {
        Outcome::Status(status) => traffic.is_success_of(usize::from(sample.class), status),
        _ => false,
    };
    let mut classes: Vec<ClassFigures> = traffic
        .requests
        .iter()
        .map(|request| ClassFigures {
            name: request.display_name(),
            ..ClassFigures::default()
        })
        .collect();
    for sample in &samples {
        let Some(class) = classes.get_mut(usize::from(sample.class)) else {
            continue;
        };
        let ok = succeeded(sample);
        class.requests += 1;
        class.succeeded += u64::from(ok);
        class.marked += u64::from(sample.marked);
        if sample.sent < fault_end {
            class.during_fault += 1;
            class.during_fault_succeeded += u64::from(ok);
        }
        let status = match sample.outcome {
            Outcome::Status(status) | Outcome::BalancerError(status) => Some(status),
            Outcome::RefusedByBalancer => Some(503),
            _ => None,
        };
        if let Some(status) = status {
            *class.statuses.entry(status).or_default() += 1;
        }
    }
    let marking = traffic
        .requests
        .iter()
        .any(|request| request.marker.is_some());
    Figures {
        readiness_failures: failures(ProbeKind::Readiness),
        startup_failures: failures(ProbeKind::Startup),
        liveness_probe_failures: failures(ProbeKind::Liveness),
        left_rotation: events
            .iter()
            .filter(|e| e.kind == EventKind::Rotation(false))
            .count() as u32,
        started_at_s: started.map(|e| since(t0, e.at)),
        started_after_s: started.zip(spawned).map(|(e, at)| since(at, e.at)),
        served_again_after_s: samples
            .iter()
            .filter(|sample| sample.sent >= fault_end && succeeded(sample))
            .map(|sample| since(fault_end, sample.sent + sample.latency))
            .reduce(f64::min),
        unmarked_after_s: marking.then(|| {
            samples
                .iter()
                .filter(|sample| sample.marked && sample.sent >= fault_end)
                .map(|sample| since(fault_end, sample.sent + sample.latency))
                .fold(0.0, f64::max)
        }),
        traffic: classes,
        direct: None,
        delivery: None,
        check_cost: None,
    }
}
