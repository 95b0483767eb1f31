//! The drill file's report: one row per fault, the table the incidents were told in, each
//! figure against its target, and a diagnosis for every miss.

use crate::file::{BalancerMode, FaultKind, Scope};
use probity_contract::text::escape_control as shown;
use serde::Serialize;
use std::fmt::Write as _;
use std::time::Duration;

/// A measured time, to a tenth of a second (`4.2s`): the report's one format for figures (the
/// drill file's durations are written in the duration grammar instead).
pub(crate) fn secs(duration: Duration) -> String {
    format!("{:.1}s", duration.as_secs_f64())
}

/// A measured instant in seconds from the fault's start, or `never`.
pub(crate) fn opt_secs(value: Option<f64>) -> String {
    value.map_or("never".to_owned(), |s| format!("{s:.1}s"))
}

/// A measured instant judged against `limit`: to the tenth of a second, or to the millisecond
/// where the tenth would read the same as the limit ("5.846s" against "≤ 5.8s", never "5.8s").
pub(crate) fn secs_against(value: Option<f64>, limit: Duration) -> String {
    match value {
        Some(s) if format!("{s:.1}") == format!("{:.1}", limit.as_secs_f64()) => {
            format!("{s:.3}s")
        }
        other => opt_secs(other),
    }
}

/// Failed requests, by what failed them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Failed {
    /// Every request that did not succeed.
    pub total: u64,
    /// HAProxy's own 503: no server in rotation.
    pub refused_by_balancer: u64,
    /// HAProxy's other errors (502, 504).
    pub balancer_errors: u64,
    /// The service's own answers outside `traffic.success`.
    pub service_errors: u64,
    /// Connections reset or closed before an answer.
    pub resets: u64,
    /// Connections refused.
    pub refused: u64,
    /// No answer within `traffic.timeout`.
    pub timeouts: u64,
}

/// One target and what was measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// The target in words (`restarts = 0`).
    pub target: String,
    /// What this run measured.
    pub measured: String,
    /// Whether it was met.
    pub met: bool,
}

/// Why a target was missed: the wiring mistake, the incident, the fix, what would have caught it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnosis {
    /// The wiring mistake the evidence shows.
    pub mistake: String,
    /// The evidence, in this run's figures.
    pub evidence: String,
    /// The incident it reproduces.
    pub incident: &'static str,
    /// The fix.
    pub fix: String,
    /// The `probity lint` rule or `probity inspect` finding that would have caught it.
    pub caught_by: &'static str,
}

/// One fault's row.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The fault's name.
    pub fault: String,
    /// Its kind.
    pub kind: FaultKind,
    /// The dependency, for dependency faults.
    pub dependency: Option<String>,
    /// All instances or one.
    pub scope: Scope,
    /// How long the fault lasted, seconds.
    pub duration_s: f64,
    /// The first failed probe after the fault began, seconds from its start.
    pub detected_at_s: Option<f64>,
    /// Which probe failed first, and why.
    pub detected_by: Option<String>,
    /// The first instance out of rotation, seconds from the fault's start.
    pub out_of_rotation_at_s: Option<f64>,
    /// Every instance back in rotation, seconds from the fault's start (absent: never left,
    /// or never came back — see `back`).
    pub back_in_rotation_at_s: Option<f64>,
    /// Whether the fleet was whole again by the end of the recovery wait.
    pub back: bool,
    /// Requests sent through the balancer from the fault's start to the end of its row.
    pub requests: u64,
    /// Those that failed, by class.
    pub failed: Failed,
    /// Restarts (kills by a probe, exits restarted).
    pub restarts: u32,
    /// Of those, kills by the liveness probe.
    pub liveness_kills: u32,
    /// Kills by the startup probe.
    pub startup_kills: u32,
    /// Exits nobody asked for.
    pub exits: u32,
    /// The most readiness transitions (in or out) of one instance.
    pub readiness_transitions: u32,
    /// Probes that timed out.
    pub probe_timeouts: u32,
    /// Liveness probes that failed, for whatever reason.
    pub liveness_failures: u32,
    /// Of those, the ones that timed out rather than answered.
    pub liveness_timeouts: u32,
    /// The first kill or exit of the instance the fault acted on, seconds from the start.
    pub restarted_at_s: Option<f64>,
    /// When the replacement of a replaced instance passed its startup probe, seconds from the
    /// start.
    pub replacement_started_at_s: Option<f64>,
    /// `start-during-outage`: whether the new instance entered rotation while the dependency
    /// was still away.
    pub in_rotation_while_down: Option<bool>,
    /// The targets.
    pub checks: Vec<Check>,
    /// A diagnosis for every miss.
    pub diagnoses: Vec<Diagnosis>,
    /// The row's other figures.
    #[serde(flatten)]
    pub figures: Figures,
}

/// A row's figures beyond the incident table's columns.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Figures {
    /// Readiness probes that failed.
    pub readiness_failures: u32,
    /// Startup probes that failed.
    pub startup_failures: u32,
    /// Liveness probes that failed.
    pub liveness_probe_failures: u32,
    /// Times an instance left rotation.
    pub left_rotation: u32,
    /// When a new process of the instance acted on passed its startup probe, seconds from the
    /// fault's start.
    pub started_at_s: Option<f64>,
    /// How long that process took from its start to pass its startup probe.
    pub started_after_s: Option<f64>,
    /// The first request served through the balancer after the fault ended, seconds after
    /// its end.
    pub served_again_after_s: Option<f64>,
    /// The end of the last marked answer after the fault ended, seconds after its end (0:
    /// none marked after it; absent: no request has a marker).
    pub unmarked_after_s: Option<f64>,
    /// The traffic by request.
    pub traffic: Vec<ClassFigures>,
    /// `busy` on one instance: the traffic sent straight to it.
    pub direct: Option<Direct>,
    /// What reached the broker.
    pub delivery: Option<Delivery>,
    /// `busy` with `cost`: what health checking costs.
    pub check_cost: Option<CheckCost>,
}

/// One traffic request's answers over the row.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ClassFigures {
    /// The request's name.
    pub name: String,
    /// Requests sent from the fault's start to the end of its row.
    pub requests: u64,
    /// Of those, answered with one of its success statuses.
    pub succeeded: u64,
    /// Of those answered, carrying its marker.
    pub marked: u64,
    /// Requests sent while the fault lasted.
    pub during_fault: u64,
    /// Of those, succeeded.
    pub during_fault_succeeded: u64,
    /// Answers by status (the balancer's own included).
    pub statuses: std::collections::BTreeMap<u16, u64>,
}

/// The traffic sent straight to one instance.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Direct {
    /// Requests sent.
    pub requests: u64,
    /// Of those, failed.
    pub failed: u64,
}

/// Acknowledged writes against what the broker received, counted with the traffic paused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Delivery {
    /// Writes answered with success since the last count.
    pub acknowledged: u64,
    /// Writes with no answer (timed out, cut): whether they were stored is unknown.
    pub unacknowledged: u64,
    /// Messages the broker received since the last count.
    pub received: u64,
    /// Of those, distinct (by message id).
    pub distinct: u64,
    /// Acknowledged writes the broker never received.
    pub lost: u64,
    /// Messages received more than once.
    pub duplicated: u64,
    /// How long the messages took to arrive once the traffic paused, seconds (absent: not all
    /// within the wait).
    pub arrived_after_s: Option<f64>,
}

/// Throughput with health checking against without, served at the same time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CheckCost {
    /// Each window's length, seconds.
    pub window_s: f64,
    /// Windows measured.
    pub windows: u32,
    /// Successful requests per second: the fleet.
    pub fleet_rps: f64,
    /// The control fleet, identical to the fleet.
    pub control_rps: f64,
    /// The bare fleet, with no health checking.
    pub bare_rps: f64,
    /// The share of throughput health checking costs: 1 − (fleet + control) / (2 × bare).
    pub cost: f64,
    /// Each block's length, seconds: the margins are computed over blocks of windows (batch
    /// means), each block's cost from its summed throughputs.
    pub block_s: f64,
    /// Half the 95% interval of the cost (Student's t over the blocks' costs).
    pub cost_margin: f64,
    /// The blocks' costs: 10th and 90th percentiles.
    pub cost_p10: f64,
    /// 90th percentile.
    pub cost_p90: f64,
    /// The instrument's own noise: 1 − fleet / control, two identical fleets.
    pub control: f64,
    /// Half its 95% interval.
    pub control_margin: f64,
    /// The same from the CPU time each fleet spent per request served (the figure judged, when
    /// measured).
    pub cpu: Option<CpuCost>,
}

/// The health-check cost from the CPU time per request served, which the kernel's sharing of
/// the cores between fleets does not move.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CpuCost {
    /// Blocks measured (5 s each).
    pub blocks: u32,
    /// `1 − bare / checked` CPU time per request served, over every block.
    pub cost: f64,
    /// Half its 95% interval over the blocks (Student's t).
    pub margin: f64,
    /// `1 − control / fleet`: two identical fleets, the instrument's own noise.
    pub control: f64,
    /// Half its 95% interval.
    pub control_margin: f64,
}

impl Row {
    /// Whether every target was met.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|check| check.met)
    }
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct FileReport {
    /// The service.
    pub service: String,
    /// Instances in the fleet.
    pub instances: u32,
    /// The balancer's mode.
    pub balancer: BalancerMode,
    /// Whether `probity agent` ran beside each instance.
    pub with_agent: bool,
    /// Where the probes came from.
    pub probes_from: String,
    /// The rows.
    pub faults: Vec<Row>,
    /// Seconds the run took.
    pub elapsed_s: f64,
}

impl FileReport {
    /// Whether every target of every fault was met.
    pub fn passed(&self) -> bool {
        self.faults.iter().all(Row::passed)
    }

    /// `0` every target met, `1` one missed.
    pub fn exit_code(&self) -> u8 {
        if self.passed() { 0 } else { 1 }
    }

    /// The report as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The human table, then each miss with its diagnosis.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "probity drill: {} × {} behind HAProxy ({} mode{}), probes from {}\n",
            self.instances,
            shown(&self.service),
            match self.balancer {
                BalancerMode::Kubernetes => "kubernetes",
                BalancerMode::Haproxy => "haproxy",
            },
            if self.with_agent {
                ", with probity agent"
            } else {
                ""
            },
            shown(&self.probes_from)
        );
        let header = [
            "fault",
            "detected",
            "out of rotation",
            "failed (lb/5xx/reset/timeout)",
            "restarts",
            "back",
            "verdict",
        ];
        let seconds = |value: Option<f64>| value.map_or("—".to_owned(), |s| format!("{s:.1}s"));
        let rows: Vec<[String; 7]> = self
            .faults
            .iter()
            .map(|row| {
                [
                    shown(&row.fault).into_owned(),
                    seconds(row.detected_at_s),
                    seconds(row.out_of_rotation_at_s),
                    format!(
                        "{} of {} ({}/{}/{}/{})",
                        row.failed.total,
                        row.requests,
                        row.failed.refused_by_balancer + row.failed.balancer_errors,
                        row.failed.service_errors,
                        row.failed.resets + row.failed.refused,
                        row.failed.timeouts
                    ),
                    row.restarts.to_string(),
                    if row.back {
                        seconds(row.back_in_rotation_at_s)
                    } else {
                        "not back".to_owned()
                    },
                    if row.passed() { "ok" } else { "MISSED" }.to_owned(),
                ]
            })
            .collect();
        let mut widths = header.map(str::len);
        for row in &rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let mut text = String::new();
            for (cell, width) in cells.iter().zip(widths) {
                let _ = write!(text, "{cell:<width$}  ");
            }
            text.trim_end().to_owned()
        };
        let _ = writeln!(out, "{}", line(&header.map(str::to_owned)));
        for row in &rows {
            let _ = writeln!(out, "{}", line(row));
        }
        for row in &self.faults {
            let _ = writeln!(out, "\n{}:", shown(&row.fault));
            for check in &row.checks {
                let _ = writeln!(
                    out,
                    "  {} {} (measured {})",
                    if check.met { "✓" } else { "✗" },
                    shown(&check.target),
                    shown(&check.measured)
                );
            }
            let figures = &row.figures;
            if figures.traffic.len() > 1 || figures.traffic.iter().any(|c| c.marked > 0) {
                for class in &figures.traffic {
                    let _ = writeln!(
                        out,
                        "  {}: {} of {} served{}",
                        shown(&class.name),
                        class.succeeded,
                        class.requests,
                        if class.marked > 0 {
                            format!(", {} marked", class.marked)
                        } else {
                            String::new()
                        }
                    );
                }
            }
            if let Some(direct) = &figures.direct {
                let _ = writeln!(
                    out,
                    "  straight to instance 1: {} of {} failed",
                    direct.failed, direct.requests
                );
            }
            if let Some(cost) = &figures.check_cost {
                let _ = writeln!(
                    out,
                    "  health checking costs {:.1}% ± {:.1}% of throughput ({:.0} req/s checked, \
                     {:.0} bare; blocks p10 {:.1}%, p90 {:.1}%); control {:.1}% ± {:.1}% \
                     ({} windows of {:.0} s)",
                    cost.cost * 100.0,
                    cost.cost_margin * 100.0,
                    (cost.fleet_rps + cost.control_rps) / 2.0,
                    cost.bare_rps,
                    cost.cost_p10 * 100.0,
                    cost.cost_p90 * 100.0,
                    cost.control * 100.0,
                    cost.control_margin * 100.0,
                    cost.windows,
                    cost.window_s
                );
                if let Some(cpu) = &cost.cpu {
                    let _ = writeln!(
                        out,
                        "  health checking costs {:.1}% ± {:.1}% of CPU per request; control \
                         {:.1}% ± {:.1}% ({} blocks; shown, not judged)",
                        cpu.cost * 100.0,
                        cpu.margin * 100.0,
                        cpu.control * 100.0,
                        cpu.control_margin * 100.0,
                        cpu.blocks
                    );
                }
            }
            if let Some(delivery) = &figures.delivery {
                let _ = writeln!(
                    out,
                    "  broker: {} acknowledged writes, {} received ({} distinct), {} lost, {} \
                     duplicated, {} unacknowledged",
                    delivery.acknowledged,
                    delivery.received,
                    delivery.distinct,
                    delivery.lost,
                    delivery.duplicated,
                    delivery.unacknowledged
                );
            }
            for diagnosis in &row.diagnoses {
                let _ = writeln!(
                    out,
                    "  diagnosis: {}\n    evidence: {}\n    reproduces: {}\n    fix: {}\n    caught by: {}",
                    shown(&diagnosis.mistake),
                    shown(&diagnosis.evidence),
                    diagnosis.incident,
                    shown(&diagnosis.fix),
                    diagnosis.caught_by
                );
            }
        }
        let _ = writeln!(
            out,
            "\n{} of {} faults met every target ({:.0} s)",
            self.faults.iter().filter(|row| row.passed()).count(),
            self.faults.len(),
            self.elapsed_s
        );
        out
    }

    /// JUnit XML: one test case per target, in a suite per fault.
    pub fn to_junit(&self) -> String {
        let escape = crate::junit::escape;
        let tests: usize = self.faults.iter().map(|row| row.checks.len()).sum();
        let failures: usize = self
            .faults
            .iter()
            .map(|row| row.checks.iter().filter(|c| !c.met).count())
            .sum();
        let mut out = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"probity drill {}\" \
             tests=\"{tests}\" failures=\"{failures}\" time=\"{:.3}\">\n",
            escape(&self.service),
            self.elapsed_s
        );
        for row in &self.faults {
            let _ = writeln!(
                out,
                "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\">",
                escape(&row.fault),
                row.checks.len(),
                row.checks.iter().filter(|c| !c.met).count()
            );
            for check in &row.checks {
                let _ = write!(
                    out,
                    "    <testcase classname=\"{}\" name=\"{}\"",
                    escape(&row.fault),
                    escape(&check.target)
                );
                if check.met {
                    out.push_str("/>\n");
                } else {
                    let diagnosis = row
                        .diagnoses
                        .iter()
                        .map(|d| {
                            format!(
                                "{}: {} (fix: {}; caught by {})",
                                d.mistake, d.evidence, d.fix, d.caught_by
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("\n");
                    let _ = write!(
                        out,
                        ">\n      <failure message=\"measured {}\">{}</failure>\n    </testcase>\n",
                        escape(&check.measured),
                        escape(&diagnosis)
                    );
                }
            }
            out.push_str("  </testsuite>\n");
        }
        out.push_str("</testsuites>\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(fault: &str) -> FileReport {
        FileReport {
            service: "orders".into(),
            instances: 1,
            balancer: BalancerMode::Kubernetes,
            with_agent: false,
            probes_from: "the drill file".into(),
            faults: vec![Row {
                fault: fault.into(),
                kind: FaultKind::Refuse,
                dependency: Some(fault.into()),
                scope: Scope::All,
                duration_s: 1.0,
                detected_at_s: None,
                detected_by: None,
                out_of_rotation_at_s: None,
                back_in_rotation_at_s: None,
                back: true,
                requests: 1,
                failed: Failed::default(),
                restarts: 1,
                liveness_kills: 1,
                startup_kills: 0,
                exits: 0,
                readiness_transitions: 0,
                probe_timeouts: 0,
                liveness_failures: 3,
                liveness_timeouts: 0,
                restarted_at_s: None,
                replacement_started_at_s: None,
                in_rotation_while_down: None,
                checks: vec![Check {
                    target: format!("restarts = 0 (`{fault}`)"),
                    measured: "1".into(),
                    met: false,
                }],
                diagnoses: vec![Diagnosis {
                    mistake: format!("liveness depends on `{fault}`"),
                    evidence: String::new(),
                    incident: "",
                    fix: String::new(),
                    caught_by: "",
                }],
                figures: Figures::default(),
            }],
            elapsed_s: 1.0,
        }
    }

    #[test]
    fn names_from_the_file_are_printed_with_their_control_characters_written_out() {
        let hostile = "db\u{1b}]0;PWNED\u{7}\u{1b}[2J\u{202e}";
        let report = report(hostile);
        for text in [report.render(), report.to_junit()] {
            assert!(!text.contains('\u{1b}'), "{text}");
            assert!(!text.contains('\u{7}'), "{text}");
            assert!(!text.contains('\u{202e}'), "{text}");
            assert!(text.contains("db\\u{1b}]0;PWNED"), "{text}");
        }
    }
}
