//! Charts: the fleet error rate over time above one state lane per instance, as SVG or as a
//! self-contained HTML page (no scripts, no network).

use crate::report::{LaneState, Report};
use std::fmt::Write as _;

/// Width of a chart, in pixels.
pub const WIDTH: u32 = 1000;
/// Height of the error-rate plot.
pub const PLOT_HEIGHT: u32 = 200;
/// Height of one lane.
pub const LANE_HEIGHT: u32 = 14;
/// Lanes drawn at most; a larger fleet shows its first instances.
pub const MAX_LANES: usize = 60;
/// Left margin (axis labels and lane names).
pub const LEFT: u32 = 110;
/// Top of the plot area.
pub const TOP: u32 = 40;
/// Colour of the error-rate curve.
pub const CURVE_COLOUR: &str = "#d62728";

const RIGHT: u32 = 20;
const LANE_GAP: u32 = 3;

/// The colour of a lane state.
pub fn lane_colour(state: LaneState) -> &'static str {
    match state {
        LaneState::Ready => "#2ca02c",
        LaneState::Booting => "#f2b701",
        LaneState::OutOfRotation => "#ff7f0e",
        LaneState::Restarting => "#6a3d9a",
    }
}

/// Height of one report's chart.
pub fn chart_height(report: &Report) -> u32 {
    let lanes = report.instances.len().min(MAX_LANES) as u32;
    TOP + PLOT_HEIGHT + 40 + lanes * (LANE_HEIGHT + LANE_GAP) + 50
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One report as an SVG group translated by `offset_y`.
fn group(report: &Report, offset_y: u32) -> String {
    let mut out = String::new();
    let plot_width = (WIDTH - LEFT - RIGHT) as f64;
    let duration = report.duration_s.max(1e-9);
    let x = |seconds: f64| LEFT as f64 + seconds / duration * plot_width;
    let y = |rate: f64| (TOP + PLOT_HEIGHT) as f64 - rate.clamp(0.0, 1.0) * PLOT_HEIGHT as f64;
    let _ = writeln!(
        out,
        r#"<g transform="translate(0,{offset_y})" class="scenario">"#
    );
    let _ = writeln!(
        out,
        r##"<text x="{LEFT}" y="22" font-size="15" font-weight="bold" fill="#222">{}</text>"##,
        escape(&format!(
            "{} — fleet error rate {:.1}%, restarts {}, drains {}",
            report.name,
            report.fleet_error_rate * 100.0,
            report.restarts,
            report.drains
        ))
    );
    // Faults, shaded behind the plot.
    for fault in &report.faults {
        let operator = fault.kind.starts_with("manual-");
        let until = match fault.until_s {
            Some(until) => until,
            // An operator action is a moment, not a span.
            None if operator => fault.at_s,
            None => report.duration_s,
        };
        let (x0, x1) = (x(fault.at_s), x(until).max(x(fault.at_s) + 1.0));
        let _ = writeln!(
            out,
            r##"<rect x="{x0:.1}" y="{TOP}" width="{:.1}" height="{PLOT_HEIGHT}" fill="#e8e8e8"><title>{}</title></rect>"##,
            x1 - x0,
            escape(&fault.kind)
        );
    }
    // Axes and grid.
    for step in 0..=4 {
        let rate = step as f64 / 4.0;
        let gy = y(rate);
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" y1="{gy:.1}" x2="{}" y2="{gy:.1}" stroke="#cccccc" stroke-width="1"/><text x="{}" y="{:.1}" font-size="11" text-anchor="end" fill="#444">{}%</text>"##,
            WIDTH - RIGHT,
            LEFT - 6,
            gy + 4.0,
            step * 25
        );
    }
    let ticks = 6;
    for step in 0..=ticks {
        let seconds = duration * step as f64 / ticks as f64;
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{}" font-size="11" text-anchor="middle" fill="#444">{}</text>"##,
            x(seconds),
            TOP + PLOT_HEIGHT + 16,
            format_time(seconds)
        );
    }
    // The curve.
    let mut points = String::new();
    for (b, rate) in report.error_rate_series.iter().enumerate() {
        let t0 = b as f64 * report.resolution_s;
        let t1 = ((b + 1) as f64 * report.resolution_s).min(duration);
        let _ = write!(
            points,
            "{:.1},{:.1} {:.1},{:.1} ",
            x(t0),
            y(*rate),
            x(t1),
            y(*rate)
        );
    }
    let _ = writeln!(
        out,
        r#"<polyline class="curve" points="{}" fill="none" stroke="{CURVE_COLOUR}" stroke-width="3" stroke-linejoin="round"/>"#,
        points.trim_end()
    );
    let _ = writeln!(
        out,
        r##"<text x="{}" y="{}" font-size="11" fill="#444">fleet error rate</text>"##,
        LEFT + 4,
        TOP - 4
    );
    // Lanes.
    let lanes_top = TOP + PLOT_HEIGHT + 34;
    for (i, instance) in report.instances.iter().take(MAX_LANES).enumerate() {
        let ly = lanes_top + i as u32 * (LANE_HEIGHT + LANE_GAP);
        let _ = writeln!(
            out,
            r##"<text x="{}" y="{}" font-size="11" text-anchor="end" fill="#222">{}</text>"##,
            LEFT - 6,
            ly + LANE_HEIGHT - 3,
            escape(&instance.name)
        );
        for span in &instance.lanes {
            let (x0, x1) = (x(span.from_s), x(span.to_s));
            let _ = writeln!(
                out,
                r#"<rect class="lane {}" x="{x0:.1}" y="{ly}" width="{:.1}" height="{LANE_HEIGHT}" fill="{}"><title>{} {}–{}</title></rect>"#,
                span.state.as_str(),
                (x1 - x0).max(0.5),
                lane_colour(span.state),
                span.state.as_str(),
                format_time(span.from_s),
                format_time(span.to_s)
            );
        }
    }
    let legend_y =
        lanes_top + report.instances.len().min(MAX_LANES) as u32 * (LANE_HEIGHT + LANE_GAP) + 16;
    if report.instances.len() > MAX_LANES {
        let _ = writeln!(
            out,
            r##"<text x="{LEFT}" y="{}" font-size="11" fill="#444">first {MAX_LANES} of {} instances</text>"##,
            legend_y - 4,
            report.instances.len()
        );
    }
    let mut lx = LEFT;
    for state in [
        LaneState::Ready,
        LaneState::Booting,
        LaneState::OutOfRotation,
        LaneState::Restarting,
    ] {
        let _ = writeln!(
            out,
            r##"<rect x="{lx}" y="{}" width="12" height="12" fill="{}"/><text x="{}" y="{}" font-size="11" fill="#222">{}</text>"##,
            legend_y + 6,
            lane_colour(state),
            lx + 16,
            legend_y + 16,
            state.as_str()
        );
        lx += 130;
    }
    out.push_str("</g>\n");
    out
}

fn format_time(seconds: f64) -> String {
    let s = seconds.round() as u64;
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
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
        .map(|r| r.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>probity simulate: {}</title>\n<style>html,body{{margin:0;padding:0;background:#fff}}svg{{display:block}}</style>\n</head>\n<body>\n{}</body>\n</html>\n",
        escape(&title),
        svg(reports)
    )
}
