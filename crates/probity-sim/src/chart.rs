//! Charts: what a reader acts on first. The title gives the requests failed and the time to
//! drain; a panel zooms on each fault at a readable scale (a two-second burst on a half-hour
//! run is a sliver at full scale); the whole run follows as context, above one state lane
//! per instance. SVG, or a self-contained HTML page (no scripts, no network).

use crate::report::{FaultSummary, LaneState, Report};
use probity_contract::text::escape_markup as escape;
use std::fmt::Write as _;

/// Width of a chart, in pixels.
pub const WIDTH: u32 = 1000;
/// Left margin (axis labels and lane names).
pub(crate) const LEFT: u32 = 110;
/// Right margin.
pub(crate) const RIGHT: u32 = 20;
/// Height of the whole-run plot.
pub(crate) const CONTEXT_HEIGHT: u32 = 110;
/// Height of a zoomed plot.
pub(crate) const ZOOM_HEIGHT: u32 = 150;
/// Height of one lane.
pub const LANE_HEIGHT: u32 = 14;
/// Space between lanes.
pub const LANE_GAP: u32 = 3;
/// Lanes drawn at most; a larger fleet shows its first instances.
pub(crate) const MAX_LANES: usize = 60;
/// Zoomed panels at most.
pub(crate) const MAX_ZOOMS: usize = 3;
/// Colour of the error-rate curve.
pub const CURVE_COLOUR: &str = "#d62728";

const TITLE_HEIGHT: u32 = 58;
const PANEL_GAP: u32 = 44;

/// The colour of a lane state.
pub fn lane_colour(state: LaneState) -> &'static str {
    match state {
        LaneState::Ready => "#2ca02c",
        LaneState::Booting => "#f2b701",
        LaneState::OutOfRotation => "#ff7f0e",
        LaneState::Restarting => "#6a3d9a",
    }
}

/// A plot: where it is drawn and what it shows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Panel {
    /// Top edge, in pixels from the top of the report's chart.
    pub top: u32,
    /// Height of the plot area.
    pub height: u32,
    /// First second shown.
    pub from_s: f64,
    /// Last second shown.
    pub to_s: f64,
    /// The error rate at the top of the plot.
    pub max_rate: f64,
}

impl Panel {
    /// The x pixel of a time.
    pub fn x(&self, seconds: f64) -> f64 {
        let width = f64::from(WIDTH - LEFT - RIGHT);
        let span = (self.to_s - self.from_s).max(1e-9);
        f64::from(LEFT) + (seconds - self.from_s) / span * width
    }

    /// The y pixel of an error rate.
    pub fn y(&self, rate: f64) -> f64 {
        let bottom = f64::from(self.top + self.height);
        bottom - (rate / self.max_rate).clamp(0.0, 1.0) * f64::from(self.height)
    }
}

/// Where each part of a report's chart goes.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// One zoomed panel per fault (overlapping faults share one).
    pub zooms: Vec<Panel>,
    /// The whole run.
    pub context: Panel,
    /// Top of the first lane.
    pub lanes_top: u32,
    /// The chart's height.
    pub height: u32,
}

/// The smallest of 1, 2, 5 × 10ⁿ percent (up to 100%) at or above `rate`.
fn nice_ceiling(rate: f64) -> f64 {
    for step in [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0] {
        if rate <= step {
            return step;
        }
    }
    1.0
}

/// The spans worth a close look: each fault from its onset to its end, or to the fleet's
/// recovery when that comes later, padded on both sides; overlapping spans merge.
fn fault_spans(report: &Report) -> Vec<(f64, f64)> {
    let mut spans: Vec<(f64, f64)> = Vec::new();
    for fault in report.faults.iter().filter(|fault| !is_operator(fault)) {
        let mut end = fault.until_s.unwrap_or(fault.at_s);
        let (window_from, window_to) = report.window_s;
        if window_from <= fault.at_s && window_to > end {
            // Until recovery, but not the rest of a run that never recovers.
            let limit = fault.at_s + (3.0 * (end - fault.at_s)).max(120.0);
            end = window_to.min(limit);
        }
        let pad = (0.25 * (end - fault.at_s)).max(5.0);
        let span = (
            (fault.at_s - pad).max(0.0),
            (end + pad).min(report.duration_s),
        );
        match spans.last_mut() {
            Some(last) if span.0 <= last.1 => last.1 = last.1.max(span.1),
            _ => spans.push(span),
        }
    }
    spans.truncate(MAX_ZOOMS);
    spans
}

fn is_operator(fault: &FaultSummary) -> bool {
    fault.kind.starts_with("manual-")
}

/// The layout of one report's chart.
pub fn layout(report: &Report) -> Layout {
    let mut top = TITLE_HEIGHT;
    let mut zooms = Vec::new();
    for (from_s, to_s) in fault_spans(report) {
        let peak = report
            .error_rate_series
            .iter()
            .enumerate()
            .filter(|(bucket, _)| {
                let start = *bucket as f64 * report.resolution_s;
                start + report.resolution_s > from_s && start < to_s
            })
            .map(|(_, rate)| *rate)
            .fold(0.0, f64::max);
        zooms.push(Panel {
            top,
            height: ZOOM_HEIGHT,
            from_s,
            to_s,
            max_rate: nice_ceiling(peak),
        });
        top += ZOOM_HEIGHT + PANEL_GAP;
    }
    let context = Panel {
        top,
        height: CONTEXT_HEIGHT,
        from_s: 0.0,
        to_s: report.duration_s,
        max_rate: 1.0,
    };
    let lanes_top = top + CONTEXT_HEIGHT + 30;
    let lanes = report.instances.len().min(MAX_LANES) as u32;
    Layout {
        zooms,
        context,
        lanes_top,
        height: lanes_top + lanes * (LANE_HEIGHT + LANE_GAP) + 44,
    }
}

/// Height of one report's chart.
pub fn chart_height(report: &Report) -> u32 {
    layout(report).height
}

/// A time on the chart, to the second.
fn format_time(seconds: f64) -> String {
    crate::report::rounded_seconds(seconds, 1.0)
}

fn percent_label(rate: f64) -> String {
    let value = rate * 100.0;
    if value >= 1.0 || value == 0.0 {
        format!("{value:.0}%")
    } else {
        format!("{value:.1}%")
    }
}

/// One plot: shaded faults, grid, time axis, the curve, and a caption.
fn plot(out: &mut String, report: &Report, panel: &Panel, caption: &str) {
    let left = f64::from(LEFT);
    let right = f64::from(WIDTH - RIGHT);
    let clip = |x: f64| x.clamp(left, right);
    for fault in &report.faults {
        let until = match fault.until_s {
            Some(until) => until,
            None if is_operator(fault) => fault.at_s,
            None => report.duration_s,
        };
        let (x0, x1) = (clip(panel.x(fault.at_s)), clip(panel.x(until)));
        if x1 < left || x0 > right {
            continue;
        }
        let _ = writeln!(
            out,
            r##"<rect x="{x0:.1}" y="{}" width="{:.1}" height="{}" fill="#e8e8e8"><title>{}</title></rect>"##,
            panel.top,
            (x1 - x0).max(1.0),
            panel.height,
            escape(&fault.kind)
        );
    }
    for step in 0..=4 {
        let rate = panel.max_rate * f64::from(step) / 4.0;
        let y = panel.y(rate);
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#cccccc" stroke-width="1"/><text x="{}" y="{:.1}" font-size="11" text-anchor="end" fill="#444">{}</text>"##,
            WIDTH - RIGHT,
            LEFT - 6,
            y + 4.0,
            percent_label(rate)
        );
    }
    for step in 0..=6 {
        let seconds = panel.from_s + (panel.to_s - panel.from_s) * f64::from(step) / 6.0;
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{}" font-size="11" text-anchor="middle" fill="#444">{}</text>"##,
            panel.x(seconds),
            panel.top + panel.height + 15,
            format_time(seconds)
        );
    }
    let mut points = String::new();
    for (bucket, rate) in report.error_rate_series.iter().enumerate() {
        let start = bucket as f64 * report.resolution_s;
        let end = (start + report.resolution_s).min(report.duration_s);
        if end < panel.from_s || start > panel.to_s {
            continue;
        }
        let (x0, x1) = (clip(panel.x(start)), clip(panel.x(end)));
        let y = panel.y(*rate);
        let _ = write!(points, "{x0:.1},{y:.1} {x1:.1},{y:.1} ");
    }
    let _ = writeln!(
        out,
        r#"<polyline class="curve" points="{}" fill="none" stroke="{CURVE_COLOUR}" stroke-width="3" stroke-linejoin="round"/>"#,
        points.trim_end()
    );
    let _ = writeln!(
        out,
        r##"<text x="{}" y="{}" font-size="11" fill="#444">{}</text>"##,
        LEFT + 4,
        panel.top - 5,
        escape(caption)
    );
}

/// The title: the scenario, what failed and how fast the fleet reacted.
pub fn title(report: &Report) -> String {
    let drain = match report.drain {
        crate::report::DrainOutcome::Drained => format!("drained in {}", report.drain_text()),
        crate::report::DrainOutcome::NeverDrained => "never drained".into(),
        crate::report::DrainOutcome::NothingToDrain => "nothing to drain".into(),
        crate::report::DrainOutcome::Degraded => format!(
            "{} served degraded, {}",
            report.requests_degraded.unwrap_or(0),
            report.drain_text()
        ),
    };
    format!(
        "{} — {} requests failed, {drain}, {} restarts",
        report.name, report.requests_failed, report.restarts
    )
}

/// One report as an SVG group translated by `offset_y`.
fn group(report: &Report, offset_y: u32) -> String {
    let layout = layout(report);
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<g transform="translate(0,{offset_y})" class="scenario">"#
    );
    let _ = writeln!(
        out,
        r##"<text class="title" x="{LEFT}" y="22" font-size="15" font-weight="bold" fill="#222">{}</text>"##,
        escape(&title(report))
    );
    let _ = writeln!(
        out,
        r##"<text x="{LEFT}" y="40" font-size="12" fill="#444">{}</text>"##,
        escape(&format!(
            "outage {}, time to recover {}, error rate {:.1}% from {} to {}",
            crate::report::human_seconds(report.outage_s),
            report
                .time_to_recover_s
                .map_or("never".to_string(), crate::report::human_seconds),
            report.fleet_error_rate * 100.0,
            format_time(report.window_s.0),
            format_time(report.window_s.1)
        ))
    );
    for (index, zoom) in layout.zooms.iter().enumerate() {
        let fault = report
            .faults
            .iter()
            .filter(|fault| !is_operator(fault))
            .nth(index)
            .map_or("fault", |fault| fault.kind.as_str());
        let caption = format!(
            "fleet error rate around the {fault}, {} to {} (scale to {})",
            format_time(zoom.from_s),
            format_time(zoom.to_s),
            percent_label(zoom.max_rate)
        );
        let _ = writeln!(out, r#"<g class="zoom">"#);
        plot(&mut out, report, zoom, &caption);
        out.push_str("</g>\n");
    }
    let _ = writeln!(out, r#"<g class="context">"#);
    plot(
        &mut out,
        report,
        &layout.context,
        "fleet error rate, the whole run",
    );
    out.push_str("</g>\n");
    lanes(&mut out, report, &layout);
    out.push_str("</g>\n");
    out
}

/// One lane per instance over the whole run, and the legend.
fn lanes(out: &mut String, report: &Report, layout: &Layout) {
    let panel = &layout.context;
    for (index, instance) in report.instances.iter().take(MAX_LANES).enumerate() {
        let y = layout.lanes_top + index as u32 * (LANE_HEIGHT + LANE_GAP);
        let _ = writeln!(
            out,
            r##"<text x="{}" y="{}" font-size="11" text-anchor="end" fill="#222">{}</text>"##,
            LEFT - 6,
            y + LANE_HEIGHT - 3,
            escape(&instance.name)
        );
        for span in &instance.lanes {
            let (x0, x1) = (panel.x(span.from_s), panel.x(span.to_s));
            let _ = writeln!(
                out,
                r#"<rect class="lane {}" x="{x0:.1}" y="{y}" width="{:.1}" height="{LANE_HEIGHT}" fill="{}"><title>{} {}–{}</title></rect>"#,
                span.state.as_str(),
                (x1 - x0).max(0.5),
                lane_colour(span.state),
                span.state.as_str(),
                format_time(span.from_s),
                format_time(span.to_s)
            );
        }
    }
    let shown = report.instances.len().min(MAX_LANES) as u32;
    let legend_y = layout.lanes_top + shown * (LANE_HEIGHT + LANE_GAP) + 16;
    if report.instances.len() > MAX_LANES {
        let _ = writeln!(
            out,
            r##"<text x="{LEFT}" y="{}" font-size="11" fill="#444">first {MAX_LANES} of {} instances</text>"##,
            legend_y - 4,
            report.instances.len()
        );
    }
    let mut x = LEFT;
    for state in [
        LaneState::Ready,
        LaneState::Booting,
        LaneState::OutOfRotation,
        LaneState::Restarting,
    ] {
        let _ = writeln!(
            out,
            r##"<rect x="{x}" y="{}" width="12" height="12" fill="{}"/><text x="{}" y="{}" font-size="11" fill="#222">{}</text>"##,
            legend_y + 6,
            lane_colour(state),
            x + 16,
            legend_y + 16,
            state.as_str()
        );
        x += 130;
    }
}

/// An SVG document with one chart per report, stacked.
pub fn svg(reports: &[Report]) -> String {
    let height: u32 = reports.iter().map(chart_height).sum::<u32>().max(1);
    let mut out = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="DejaVu Sans, Arial, sans-serif">"#
    );
    out.push('\n');
    out.push_str(r##"<rect x="0" y="0" width="100%" height="100%" fill="#ffffff"/>"##);
    out.push('\n');
    let mut offset = 0;
    for report in reports {
        out.push_str(&group(report, offset));
        offset += chart_height(report);
    }
    out.push_str("</svg>\n");
    out
}

/// A self-contained HTML page holding the SVG chart.
pub fn html(reports: &[Report]) -> String {
    let title = reports
        .iter()
        .map(|report| report.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>probity simulate: {}</title>\n<style>html,body{{margin:0;padding:0;background:#fff}}svg{{display:block}}</style>\n</head>\n<body>\n{}</body>\n</html>\n",
        escape(&title),
        svg(reports)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_round_up_to_readable_steps() {
        assert_eq!(nice_ceiling(0.0), 0.01);
        assert_eq!(nice_ceiling(0.021), 0.05);
        assert_eq!(nice_ceiling(0.33), 0.5);
        assert_eq!(nice_ceiling(1.0), 1.0);
    }
}
