//! `bind_probe_counters`: probe counts through handles bound once to the global recorder (its
//! own test binary: the binding and the recorder are process-wide).
#![cfg(feature = "metrics")]

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use probity::{ProbeKind, Status};

fn count(snapshot: &[(metrics_util::CompositeKey, DebugValue)], probe: &str, result: &str) -> u64 {
    snapshot
        .iter()
        .filter(|(key, _)| {
            let key = key.key();
            key.name() == "probity_probe_requests_total"
                && key
                    .labels()
                    .any(|l| l.key() == "probe" && l.value() == probe)
                && key
                    .labels()
                    .any(|l| l.key() == "result" && l.value() == result)
        })
        .map(|(_, value)| match value {
            DebugValue::Counter(n) => *n,
            other => panic!("not a counter: {other:?}"),
        })
        .sum()
}

#[test]
fn bound_probe_counters_count_into_the_global_recorder() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install().unwrap();

    // Before binding, through the registry.
    probity::metrics::record_probe(ProbeKind::Readiness, Status::Pass);
    assert!(probity::metrics::bind_probe_counters());
    assert!(!probity::metrics::bind_probe_counters(), "bound once");
    for _ in 0..3 {
        probity::metrics::record_probe(ProbeKind::Readiness, Status::Pass);
    }
    probity::metrics::record_probe(ProbeKind::Liveness, Status::Warn);
    probity::metrics::record_probe(ProbeKind::Startup, Status::Fail);

    let snapshot: Vec<_> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| (key, value))
        .collect();
    assert_eq!(count(&snapshot, "readiness", "pass"), 4);
    assert_eq!(count(&snapshot, "liveness", "warn"), 1);
    assert_eq!(count(&snapshot, "startup", "fail"), 1);
    assert_eq!(count(&snapshot, "readiness", "fail"), 0);
}
