//! What a run measured, and how it is printed.

use probity_contract::text::escape_control;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The state an instance is in, as drawn in its lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LaneState {
    /// The container runs but the app has not finished booting (or the startup probe has not
    /// passed).
    Booting,
    /// Receiving traffic.
    Ready,
    /// Running and booted, but the router does not send it traffic.
    OutOfRotation,
    /// Killed, exiting, crashed or waiting in CrashLoopBackOff.
    Restarting,
}

impl LaneState {
    /// The kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            LaneState::Booting => "booting",
            LaneState::Ready => "ready",
            LaneState::OutOfRotation => "out-of-rotation",
            LaneState::Restarting => "restarting",
        }
    }
}

/// A stretch of time an instance spent in one state.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LaneSpan {
    /// Start, in seconds.
    pub from_s: f64,
    /// End, in seconds.
    pub to_s: f64,
    /// The state.
    pub state: LaneState,
}

/// Why a container was killed or exited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum KillReason {
    /// The liveness probe reached its failure threshold.
    Liveness,
    /// The startup probe reached its failure threshold.
    Startup,
    /// The process ran out of memory (piled-up health-check calls).
    OutOfMemory,
    /// The boot could not finish (a dependency the warm-up needs was unavailable).
    BootFailure,
    /// The process exited by itself soon after it started.
    Exited,
}

/// One kill, crash or restart.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KillRecord {
    /// The instance's name.
    pub instance: String,
    /// When the kubelet decided (or the process died), in seconds.
    pub at_s: f64,
    /// Why.
    pub reason: KillReason,
}

/// One instance's results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InstanceReport {
    /// Its name.
    pub name: String,
    /// Requests it received.
    pub requests: u64,
    /// Requests it failed.
    pub failed: u64,
    /// When a check names a fallback: requests it served degraded, answered by the fallback
    /// instead of the dependency they need (neither failed nor served as usual).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub degraded: Option<u64>,
    /// `failed / requests` over the whole run.
    pub error_rate: f64,
    /// Container restarts.
    pub restarts: u32,
    /// Times health checks took it out of rotation.
    pub drains: u32,
    /// With `requests.keep_alive`: time it kept receiving requests while out of rotation,
    /// over client connections opened before it left, in seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out_of_rotation_traffic_s: Option<f64>,
    /// With `requests.keep_alive`: the requests it received while out of rotation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out_of_rotation_requests: Option<u64>,
    /// Its state over time.
    pub lanes: Vec<LaneSpan>,
}

/// Whether health checks took the pods a fault broke out of rotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DrainOutcome {
    /// Every pod the fault broke left rotation because of a health check.
    Drained,
    /// Some pod the fault broke kept receiving traffic: a check never took it out.
    NeverDrained,
    /// No pod failed requests while in rotation: there was nothing to drain.
    NothingToDrain,
    /// Every pod the fault broke left rotation or, never leaving it, served degraded (a
    /// check failing while its fallback serves: readiness `warn`); at least one served
    /// degraded.
    Degraded,
}

/// A fault as it ran.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FaultSummary {
    /// The fault kind.
    pub kind: String,
    /// Start, in seconds.
    pub at_s: f64,
    /// End, in seconds, for a fault that ends.
    pub until_s: Option<f64>,
}

/// Everything one run measured. Times are seconds from the start of the run unless named
/// otherwise; rates are fractions (0.334 = 33.4 %).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The scenario's name.
    pub name: String,
    /// The seed the run used.
    pub seed: u64,
    /// The router model.
    pub routing: String,
    /// Pods in the fleet.
    pub replicas: usize,
    /// Simulated time.
    pub duration_s: f64,
    /// Failed / total requests over the incident window: from the first fault's onset until
    /// the fleet recovered (or the end of the run). The whole run when there is no fault.
    pub fleet_error_rate: f64,
    /// The worst fleet error rate over any `measure.rate_window`.
    pub peak_error_rate: f64,
    /// Requests over the whole run.
    pub requests_total: u64,
    /// Failed requests over the whole run.
    pub requests_failed: u64,
    /// Of those, requests refused because the router had nowhere to send them.
    pub requests_refused: u64,
    /// When a check names a fallback: requests served degraded over the whole run, answered
    /// by the fallback instead of the dependency they need. Counted neither in
    /// `requests_failed` nor as served as usual.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests_degraded: Option<u64>,
    /// Container restarts across the fleet.
    pub restarts: u32,
    /// Times a health check took a running instance out of rotation.
    pub drains: u32,
    /// Times instances entered or left rotation.
    pub rotation_changes: u32,
    /// From the first fault's onset until every instance the fault broke was out of
    /// rotation because of a health check (or, for `degraded`, out of rotation or serving
    /// degraded); `null` when that never happened or when there was nothing to drain (`drain`
    /// says which).
    pub time_to_drain_s: Option<f64>,
    /// Whether the pods the fault broke were drained, never drained, or none needed it.
    pub drain: DrainOutcome,
    /// The fault's window, over which `fleet_error_rate` is measured: from the first fault's
    /// onset to the fleet's recovery (or the end of the run), in seconds; the whole run when
    /// there is no fault.
    pub window_s: (f64, f64),
    /// From the end of the fault (its onset, for a fault that lasts) until the fleet error
    /// rate fell below `measure.recovered_below` for good; `null` when it never did.
    pub time_to_recover_s: Option<f64>,
    /// Time the fleet error rate spent at or above `measure.outage_threshold`.
    pub outage_s: f64,
    /// Health-check requests per second hitting the fleet (kubelet probes and load-balancer
    /// checks).
    pub probe_rps: f64,
    /// Calls per second that health checks made to each dependency.
    pub dependency_check_qps: BTreeMap<String, f64>,
    /// Processes killed for running out of memory.
    pub oom_kills: u32,
    /// The most health-check calls in flight at once in one process.
    pub max_inflight_checks: u32,
    /// Every kill and crash, in time order.
    pub kills: Vec<KillRecord>,
    /// The faults.
    pub faults: Vec<FaultSummary>,
    /// Per-instance results.
    pub instances: Vec<InstanceReport>,
    /// Width of one series bucket, in seconds.
    pub resolution_s: f64,
    /// Fleet error rate per bucket.
    pub error_rate_series: Vec<f64>,
    /// The assumptions the scenario states.
    pub assumptions: Vec<String>,
}

fn percent(rate: f64) -> String {
    format!("{:.1}%", rate * 100.0)
}

fn seconds(value: Option<f64>) -> String {
    match value {
        None => "never".into(),
        Some(value) => human_seconds(value),
    }
}

/// Seconds in words, written as every probity tool writes a duration
/// ([`probity_contract::duration::format`], which the scenario's own spans are read with): to
/// a tenth of a second below two minutes (`7.1s`), to the second past them (`26m9s`).
pub fn human_seconds(seconds: f64) -> String {
    let step = if seconds >= 120.0 { 1.0 } else { 0.1 };
    rounded_seconds(seconds, step)
}

/// Seconds in words to the nearest `step` seconds, in the one duration grammar.
pub(crate) fn rounded_seconds(seconds: f64, step: f64) -> String {
    let seconds = if seconds.is_finite() {
        seconds.max(0.0)
    } else {
        0.0
    };
    let millis = ((seconds / step).round() * step * 1000.0).round();
    probity_contract::duration::format(std::time::Duration::from_millis(millis as u64))
}

impl Report {
    /// The drain in words: a time, "never", or "nothing to drain".
    pub(crate) fn drain_text(&self) -> String {
        match (self.drain, self.time_to_drain_s) {
            (DrainOutcome::Drained, Some(time)) => human_seconds(time),
            (DrainOutcome::Degraded, Some(time)) => format!("degraded at {}", human_seconds(time)),
            (DrainOutcome::NothingToDrain, _) => "nothing to drain".into(),
            _ => "never".into(),
        }
    }

    /// The error rate over `[from_s, to_s)`, from the series (every bucket carries the same
    /// traffic, the last one in proportion to its length).
    pub fn error_rate_between(&self, from_s: f64, to_s: f64) -> f64 {
        let mut requests = 0.0;
        let mut failed = 0.0;
        for (bucket, rate) in self.error_rate_series.iter().enumerate() {
            let start = bucket as f64 * self.resolution_s;
            let end = (start + self.resolution_s).min(self.duration_s);
            let overlap = end.min(to_s) - start.max(from_s);
            if overlap > 0.0 {
                requests += overlap;
                failed += overlap * rate;
            }
        }
        if requests > 0.0 {
            failed / requests
        } else {
            0.0
        }
    }

    /// The rows printed in a table, what a reader acts on first: label and value. `window`
    /// is the span the error rate is measured over (the report's own fault window unless a
    /// comparison sets a common one).
    pub(crate) fn rows_over(&self, window: (f64, f64)) -> Vec<(&'static str, String)> {
        self.rows_with(window, self.requests_degraded.is_some())
    }

    /// The rows, with the requests served degraded when `degraded` (so two reports compared
    /// side by side have the same rows).
    fn rows_with(&self, window: (f64, f64), degraded: bool) -> Vec<(&'static str, String)> {
        let mut qps = self
            .dependency_check_qps
            .iter()
            .map(|(name, qps)| format!("{} {qps:.2}/s", escape_control(name)))
            .collect::<Vec<_>>()
            .join(", ");
        if qps.is_empty() {
            qps = "-".into();
        }
        let share = |count: u64| {
            if self.requests_total > 0 {
                count as f64 / self.requests_total as f64
            } else {
                0.0
            }
        };
        let mut rows = vec![(
            "requests failed",
            format!(
                "{} of {} ({})",
                self.requests_failed,
                self.requests_total,
                percent(share(self.requests_failed))
            ),
        )];
        if degraded {
            let served = self.requests_degraded.unwrap_or(0);
            rows.push((
                "served degraded",
                format!(
                    "{served} of {} ({})",
                    self.requests_total,
                    percent(share(served))
                ),
            ));
        }
        rows.extend([
            ("outage", human_seconds(self.outage_s)),
            ("time to drain", self.drain_text()),
            ("time to recover", seconds(self.time_to_recover_s)),
            ("restarts", self.restarts.to_string()),
            (
                "error rate",
                format!(
                    "{} from {} to {}",
                    percent(self.error_rate_between(window.0, window.1)),
                    human_seconds(window.0),
                    human_seconds(window.1)
                ),
            ),
            ("peak error rate", percent(self.peak_error_rate)),
            ("refused (no endpoint)", self.requests_refused.to_string()),
            ("drains", self.drains.to_string()),
            ("routing", escape_control(&self.routing).into_owned()),
            ("replicas", self.replicas.to_string()),
            ("probe load", format!("{:.1} req/s", self.probe_rps)),
            ("health-check load", qps),
        ]);
        rows
    }

    /// The rows over the report's own fault window.
    pub fn rows(&self) -> Vec<(&'static str, String)> {
        self.rows_over(self.window_s)
    }

    /// A plain-text table of the headline numbers and each instance's error rate.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{} (seed {})", escape_control(&self.name), self.seed);
        for (label, value) in self.rows() {
            let _ = writeln!(out, "  {label:<22} {value}");
        }
        if self.instances.len() <= 12 {
            for instance in &self.instances {
                let _ = write!(
                    out,
                    "  {:<22} {} errors, {} restarts, {} drains",
                    escape_control(&instance.name),
                    percent(instance.error_rate),
                    instance.restarts,
                    instance.drains
                );
                if let Some(degraded) = instance.degraded {
                    let _ = write!(out, ", {degraded} served degraded");
                }
                if let (Some(traffic), Some(requests)) = (
                    instance.out_of_rotation_traffic_s,
                    instance.out_of_rotation_requests,
                ) && requests > 0
                {
                    let _ = write!(
                        out,
                        ", {requests} requests over {} out of rotation",
                        human_seconds(traffic)
                    );
                }
                let _ = writeln!(out);
            }
        }
        out
    }
}

/// The window two reports are compared over: from the earlier onset to the later end of
/// their fault windows, so a fix that recovers sooner is not measured over a shorter span.
pub fn common_window(before: &Report, after: &Report) -> (f64, f64) {
    (
        before.window_s.0.min(after.window_s.0),
        before.window_s.1.max(after.window_s.1),
    )
}

/// A side-by-side table of two reports (before and after a fix).
pub fn compare_text(before: &Report, after: &Report) -> String {
    let window = common_window(before, after);
    let degraded = before.requests_degraded.is_some() || after.requests_degraded.is_some();
    let left = before.rows_with(window, degraded);
    let right = after.rows_with(window, degraded);
    let (before_name, after_name) = (escape_control(&before.name), escape_control(&after.name));
    let width = left
        .iter()
        .map(|(_, v)| v.len())
        .chain([before_name.len()])
        .max()
        .unwrap_or(10)
        .max(10);
    let mut out = String::new();
    let _ = writeln!(out, "{:<22} {:<width$}  {}", "", before_name, after_name);
    for ((label, a), (_, b)) in left.iter().zip(right.iter()) {
        let _ = writeln!(out, "{label:<22} {a:<width$}  {b}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::human_seconds;
    use probity_contract::duration;
    use std::time::Duration;

    #[test]
    fn times_are_written_in_the_one_duration_grammar() {
        assert_eq!(human_seconds(7.14), "7.1s");
        assert_eq!(human_seconds(7.0), "7s");
        assert_eq!(human_seconds(0.0), "0s");
        assert_eq!(human_seconds(119.96), "2m");
        assert_eq!(human_seconds(1569.4), "26m9s");
        assert_eq!(human_seconds(179.6), "3m", "never 2m60s");
        assert_eq!(human_seconds(3600.0), "1h");
        assert_eq!(human_seconds(f64::NAN), "0s");
        for seconds in [0.3, 7.1, 61.5, 1569.0, 5400.0] {
            let written = human_seconds(seconds);
            let read = duration::parse(&written).unwrap();
            assert!(
                read.abs_diff(Duration::from_secs_f64(seconds)) < Duration::from_millis(51),
                "{written}"
            );
        }
    }
}
