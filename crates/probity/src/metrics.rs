//! Metrics through the [`metrics`](https://docs.rs/metrics) facade, recorded when the cargo
//! feature `metrics` is on (otherwise these functions do nothing); the service installs the
//! exporter it wants (for Prometheus, `metrics-exporter-prometheus`).
//!
//! | name | type | labels | meaning |
//! |---|---|---|---|
//! | `probity_check_up` | gauge | `check`, `tier` | 1 while the check is healthy (after hysteresis), else 0 |
//! | `probity_check_poll_duration_seconds` | histogram | `check` | how long each poll took (timeouts record the timeout) |
//! | `probity_check_transitions_total` | counter | `check`, `direction` (`up`/`down`) | hysteresis transitions |
//! | `probity_check_state_seconds` | gauge | `check` | time since the last transition, updated at every poll |
//! | `probity_probe_requests_total` | counter | `probe` (`liveness`/`readiness`/`startup`), `result` (`pass`/`warn`/`fail`) | probe answers served |
//!
//! A flapping readiness shows as a rising `probity_check_transitions_total{direction="down"}`;
//! the shipped alert rules use it. Labels carry check names only, never a reason.

use probity_contract::{ProbeKind, Status};

/// Counts one probe answer (the surfaces call it after answering; rendering itself records
/// nothing).
pub fn record_probe(probe: ProbeKind, status: Status) {
    #[cfg(feature = "metrics")]
    metrics::counter!(
        "probity_probe_requests_total",
        "probe" => probe.as_str(),
        "result" => status.as_str()
    )
    .increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = (probe, status);
}

/// Records one poll or passive report of a check.
#[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
pub(crate) fn record_check(
    name: &str,
    tier: probity_contract::Tier,
    state: &crate::snapshot::CheckState,
    transition: Option<probity_contract::hysteresis::Transition>,
    polled: bool,
) {
    #[cfg(feature = "metrics")]
    {
        use probity_contract::hysteresis::Transition;
        let name = name.to_owned();
        metrics::gauge!("probity_check_up", "check" => name.clone(), "tier" => tier.as_str())
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
}
