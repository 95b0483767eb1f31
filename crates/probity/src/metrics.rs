//! Metrics through the [`metrics`] facade (cargo feature `metrics`); the service installs the
//! exporter it wants (for Prometheus, `metrics-exporter-prometheus`).
//!
//! | name | type | labels | meaning |
//! |---|---|---|---|
//! | `probity_check_up` | gauge | `check`, `tier` | 1 while the check is healthy (after hysteresis), else 0 |
//! | `probity_check_poll_duration_seconds` | histogram | `check` | how long each poll took (timeouts record the timeout) |
//! | `probity_check_transitions_total` | counter | `check`, `direction` (`up`/`down`) | hysteresis transitions |
//! | `probity_check_state_seconds` | gauge | `check` | time since the last transition, updated at every poll |
//! | `probity_probe_requests_total` | counter | `probe` (`liveness`/`readiness`/`startup`), `result` (`pass`/`warn`/`fail`) | probe answers rendered |
//!
//! A flapping readiness shows as a rising `probity_check_transitions_total{direction="down"}`;
//! the shipped alert rules use it.

use crate::contract::ProbeKind;
use crate::hysteresis::Transition;
use crate::registry::Inner;
use crate::snapshot::Status;

pub(crate) fn record_check(
    inner: &Inner,
    index: usize,
    transition: Option<Transition>,
    polled: bool,
) {
    let entry = &inner.entries[index];
    let snapshot = inner.current.load();
    let state = &snapshot.checks[index];
    let name = entry.spec.name.clone();
    metrics::gauge!("probity_check_up", "check" => name.clone(), "tier" => entry.spec.tier.as_str())
        .set(if state.is_healthy() { 1.0 } else { 0.0 });
    if let Some(last) = state.last() {
        if polled {
            metrics::histogram!("probity_check_poll_duration_seconds", "check" => name.clone())
                .record(last.duration.as_secs_f64());
        }
        if let Some(since) = state.last_transition() {
            metrics::gauge!("probity_check_state_seconds", "check" => name.clone())
                .set(last.at.saturating_duration_since(since).as_secs_f64());
        }
    }
    if let Some(transition) = transition {
        let direction = match transition {
            Transition::Rose => "up",
            Transition::Fell => "down",
        };
        metrics::counter!("probity_check_transitions_total", "check" => name, "direction" => direction)
            .increment(1);
    }
}

pub(crate) fn record_probe(probe: ProbeKind, status: Status) {
    metrics::counter!(
        "probity_probe_requests_total",
        "probe" => probe.as_str(),
        "result" => status.as_str()
    )
    .increment(1);
}
