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
//! Probes are counted thousands of times a second. After installing the exporter, call
//! [`bind_probe_counters`] once so that counting one is a single atomic increment rather than a
//! lookup in the recorder's registry (checkout and `probity agent` do).
//!
//! A flapping readiness shows as a rising `probity_check_transitions_total{direction="down"}`;
//! the shipped alert rules use it. Labels carry check names only, never a reason.

use probity_contract::{ProbeKind, Status};

/// Counts one probe answer (the surfaces call it after answering; rendering itself records
/// nothing).
pub fn record_probe(probe: ProbeKind, status: Status) {
    #[cfg(feature = "metrics")]
    probe_counter::record(probe, status);
    #[cfg(not(feature = "metrics"))]
    let _ = (probe, status);
}

/// Binds `probity_probe_requests_total` to the recorder installed now, so that counting a
/// probe is one atomic increment instead of a lookup in the recorder's registry: call it once,
/// right after installing the process's exporter (outside any `with_local_recorder` scope).
/// Without it every probe is still counted, through the recorder current at the time. Returns
/// `false` (and changes nothing) when the counters were bound already.
///
/// ```
/// // After `PrometheusBuilder::new().install_recorder()`:
/// probity::metrics::bind_probe_counters();
/// ```
pub fn bind_probe_counters() -> bool {
    #[cfg(feature = "metrics")]
    return probe_counter::bind();
    #[cfg(not(feature = "metrics"))]
    false
}

/// `probity_probe_requests_total` is counted on every probe, thousands of times a second: its
/// nine keys (probe × result) are built at compile time, hash included, so counting one is a
/// lookup in the recorder's registry and an increment. `counter!` with labels would build the
/// key, allocate its labels and hash them on every call.
#[cfg(feature = "metrics")]
mod probe_counter {
    use metrics::{Counter, Key, Label, Level, Metadata};
    use probity_contract::{ProbeKind, Status};
    use std::sync::OnceLock;

    const NAME: &str = "probity_probe_requests_total";

    static METADATA: Metadata<'static> =
        Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

    macro_rules! labels {
        ($($name:ident: $probe:literal, $result:literal;)*) => {
            $(static $name: [Label; 2] = [
                Label::from_static_parts("probe", $probe),
                Label::from_static_parts("result", $result),
            ];)*
        };
    }

    labels! {
        LIVENESS_PASS: "liveness", "pass";
        LIVENESS_WARN: "liveness", "warn";
        LIVENESS_FAIL: "liveness", "fail";
        READINESS_PASS: "readiness", "pass";
        READINESS_WARN: "readiness", "warn";
        READINESS_FAIL: "readiness", "fail";
        STARTUP_PASS: "startup", "pass";
        STARTUP_WARN: "startup", "warn";
        STARTUP_FAIL: "startup", "fail";
    }

    /// Indexed by probe (liveness, readiness, startup), then result (pass, warn, fail).
    static KEYS: [[Key; 3]; 3] = [
        [
            Key::from_static_parts(NAME, &LIVENESS_PASS),
            Key::from_static_parts(NAME, &LIVENESS_WARN),
            Key::from_static_parts(NAME, &LIVENESS_FAIL),
        ],
        [
            Key::from_static_parts(NAME, &READINESS_PASS),
            Key::from_static_parts(NAME, &READINESS_WARN),
            Key::from_static_parts(NAME, &READINESS_FAIL),
        ],
        [
            Key::from_static_parts(NAME, &STARTUP_PASS),
            Key::from_static_parts(NAME, &STARTUP_WARN),
            Key::from_static_parts(NAME, &STARTUP_FAIL),
        ],
    ];

    /// The counters registered by [`bind`], in the order of [`KEYS`].
    static BOUND: OnceLock<[[Counter; 3]; 3]> = OnceLock::new();

    pub(super) fn bind() -> bool {
        let mut bound = false;
        BOUND.get_or_init(|| {
            bound = true;
            metrics::with_recorder(|recorder| {
                KEYS.each_ref().map(|row| {
                    row.each_ref()
                        .map(|key| recorder.register_counter(key, &METADATA))
                })
            })
        });
        bound
    }

    pub(super) fn record(probe: ProbeKind, status: Status) {
        let probe = match probe {
            ProbeKind::Liveness => 0,
            ProbeKind::Readiness => 1,
            ProbeKind::Startup => 2,
        };
        let result = match status {
            Status::Pass => 0,
            Status::Warn => 1,
            Status::Fail => 2,
        };
        if let Some(bound) = BOUND.get() {
            bound[probe][result].increment(1);
            return;
        }
        let key = &KEYS[probe][result];
        metrics::with_recorder(|recorder| recorder.register_counter(key, &METADATA)).increment(1);
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn every_key_names_its_probe_and_result() {
            for (probe, row) in [
                ProbeKind::Liveness,
                ProbeKind::Readiness,
                ProbeKind::Startup,
            ]
            .into_iter()
            .zip(&KEYS)
            {
                for (status, key) in [Status::Pass, Status::Warn, Status::Fail]
                    .into_iter()
                    .zip(row)
                {
                    let expected = Key::from_parts(
                        NAME,
                        vec![
                            Label::new("probe", probe.as_str()),
                            Label::new("result", status.as_str()),
                        ],
                    );
                    assert_eq!(key, &expected);
                    assert_eq!(key.get_hash(), expected.get_hash());
                }
            }
        }
    }
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
