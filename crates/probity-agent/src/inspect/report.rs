//! The inspection report for people and as JSON.

use super::{Report, Severity};
use std::fmt::Write;

/// The report as text.
pub fn render_human(report: &Report) -> String {
    let mut out = String::new();
    for endpoint in &report.endpoints {
        let roles: Vec<String> = endpoint
            .roles
            .iter()
            .map(|role| format!("{role:?}").to_lowercase())
            .collect();
        let statuses: Vec<String> = endpoint
            .statuses
            .iter()
            .map(|(status, count)| format!("{status}×{count}"))
            .collect();
        let _ = writeln!(out, "{} ({})", endpoint.url, roles.join(", "));
        let _ = writeln!(
            out,
            "  {} requests: {}{}{}; p50 {:.1}ms, p99 {:.1}ms",
            endpoint.requests,
            if statuses.is_empty() {
                "no answer".to_owned()
            } else {
                statuses.join(" ")
            },
            if endpoint.timeouts > 0 {
                format!(", {} timed out", endpoint.timeouts)
            } else {
                String::new()
            },
            if endpoint.errors > 0 {
                format!(", {} failed", endpoint.errors)
            } else {
                String::new()
            },
            endpoint.p50_ms,
            endpoint.p99_ms
        );
        let _ = writeln!(
            out,
            "  content-type: {}; cache-control: {}; failing answers name what failed: {}",
            endpoint.content_type.as_deref().unwrap_or("none"),
            endpoint.cache_control.as_deref().unwrap_or("none"),
            match endpoint.names_failures {
                Some(true) => "yes",
                Some(false) => "no",
                None => "no failing answer seen",
            }
        );
        if !endpoint.sample.is_empty() {
            let _ = writeln!(out, "  body: {}", endpoint.sample);
        }
    }
    for contract in &report.contracts {
        let _ = writeln!(
            out,
            "contract at {}: {}",
            contract.url,
            if contract.published {
                "published"
            } else {
                "none"
            }
        );
    }
    if !report.findings.is_empty() {
        out.push('\n');
    }
    for finding in &report.findings {
        let severity = match finding.severity {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        let _ = writeln!(
            out,
            "{severity}[{}]: {}\n  {}",
            finding.rule, finding.endpoint, finding.message
        );
    }
    let counted = report
        .findings
        .iter()
        .filter(|finding| finding.severity >= Severity::Warning)
        .count();
    let _ = writeln!(
        out,
        "\n{} endpoint(s), {counted} finding(s) at warning or above",
        report.endpoints.len()
    );
    out
}

/// The report as JSON.
pub fn render_json(report: &Report) -> String {
    serde_json::to_string_pretty(report).unwrap_or_default() + "\n"
}
