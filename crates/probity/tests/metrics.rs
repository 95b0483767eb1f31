//! Metrics through the `metrics` facade (feature `metrics`).
#![cfg(feature = "metrics")]

mod support;

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use probity::render::{Clock, Details, Format, Query, Request, render};
use probity::{CheckSpec, Health, ProbeKind, Status, Tier};
use support::{Switch, advance, secs};

type Metrics = Vec<(
    metrics_util::CompositeKey,
    Option<metrics::Unit>,
    Option<metrics::SharedString>,
    DebugValue,
)>;

/// Counters are drained by each snapshot: take one per group of assertions.
fn take(snapshotter: &Snapshotter) -> Metrics {
    snapshotter.snapshot().into_vec()
}

fn value<'a>(metrics: &'a Metrics, name: &str, labels: &[(&str, &str)]) -> Option<&'a DebugValue> {
    metrics
        .iter()
        .find(|(key, _, _, _)| {
            let key = key.key();
            key.name() == name
                && labels.iter().all(|(label, wanted)| {
                    key.labels()
                        .any(|l| l.key() == *label && l.value() == *wanted)
                })
        })
        .map(|(_, _, _, value)| value)
}

#[tokio::test(start_paused = true)]
async fn checks_and_probes_are_measured() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install().unwrap();

    let db = Switch::new(true);
    let health = Health::builder()
        .check(
            CheckSpec::new("db", Tier::Hard, db.check())
                .interval(secs(1.0))
                .timeout(secs(0.5))
                .jitter(secs(0.0)),
        )
        .build()
        .unwrap();
    health.start().unwrap();
    advance(secs(0.5)).await;
    let metrics = take(&snapshotter);
    assert_eq!(
        value(
            &metrics,
            "probity_check_up",
            &[("check", "db"), ("tier", "hard")]
        ),
        Some(&DebugValue::Gauge(1.0.into()))
    );
    db.set(false);
    advance(secs(1.0)).await;
    let metrics = take(&snapshotter);
    assert_eq!(
        value(&metrics, "probity_check_up", &[("check", "db")]),
        Some(&DebugValue::Gauge(0.0.into()))
    );
    assert_eq!(
        value(
            &metrics,
            "probity_check_transitions_total",
            &[("check", "db"), ("direction", "down")]
        ),
        Some(&DebugValue::Counter(1))
    );
    match value(
        &metrics,
        "probity_check_poll_duration_seconds",
        &[("check", "db")],
    ) {
        Some(DebugValue::Histogram(samples)) => assert!(!samples.is_empty()),
        other => panic!("no poll duration histogram: {other:?}"),
    }
    advance(secs(3.0)).await;
    let metrics = take(&snapshotter);
    match value(&metrics, "probity_check_state_seconds", &[("check", "db")]) {
        Some(DebugValue::Gauge(seconds)) => assert_eq!(seconds.into_inner(), 3.0),
        other => panic!("no state gauge: {other:?}"),
    }

    // Rendering records nothing: answering a probe is the surface's to count.
    let query = Query::default();
    render(
        &health.snapshot(),
        &Request {
            probe: ProbeKind::Readiness,
            check: None,
            query: &query,
            format: Format::Text,
            details: Details::Public,
        },
        Clock::now(),
    );
    let metrics = take(&snapshotter);
    assert_eq!(
        value(
            &metrics,
            "probity_probe_requests_total",
            &[("probe", "readiness"), ("result", "fail")]
        ),
        None
    );
    for _ in 0..2 {
        probity::metrics::record_probe(ProbeKind::Readiness, Status::Fail);
    }
    let metrics = take(&snapshotter);
    assert_eq!(
        value(
            &metrics,
            "probity_probe_requests_total",
            &[("probe", "readiness"), ("result", "fail")]
        ),
        Some(&DebugValue::Counter(2))
    );
}
