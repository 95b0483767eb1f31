//! The inspection report for people and as JSON.
//!
//! Everything in the report that came from the network or a URL has had its credentials
//! masked already; the human format also writes control characters out, so a hostile body or
//! header cannot retitle the terminal, clear it or reorder what is printed. JSON escapes
//! control characters itself.

use super::{Report, Severity};
use probity_contract::duration;
use probity_contract::text::escape_control;
use std::fmt::Write;
use std::time::Duration;

fn ms(value: f64) -> String {
    duration::format(Duration::from_micros(
        (value * 1000.0).round().max(0.0) as u64
    ))
}

/// The report as text.
pub fn render_human(report: &Report) -> String {
    let mut out = String::new();
    for endpoint in &report.endpoints {
        let roles: Vec<&str> = endpoint.roles.iter().map(|role| role.name()).collect();
        let statuses: Vec<String> = endpoint
            .statuses
            .iter()
            .map(|(status, count)| format!("{status}×{count}"))
            .collect();
        let _ = writeln!(
            out,
            "{} ({})",
            escape_control(&endpoint.url),
            roles.join(", ")
        );
        let failed: usize = endpoint.failures.values().sum();
        let _ = writeln!(
            out,
            "  {} requests: {}{}{}",
            endpoint.requests,
            if statuses.is_empty() {
                "no answer".to_owned()
            } else {
                statuses.join(" ")
            },
            if failed > 0 {
                format!(
                    ", {failed} unanswered ({})",
                    escape_control(&super::judge::failure_words(endpoint, report.timeout))
                )
            } else {
                String::new()
            },
            if endpoint.answered() {
                format!("; p50 {}, p99 {}", ms(endpoint.p50_ms), ms(endpoint.p99_ms))
            } else {
                String::new()
            }
        );
        if endpoint.answered() {
            let _ = writeln!(
                out,
                "  content-type: {}; cache-control: {}; failing answers name what failed: {}",
                escape_control(endpoint.content_type.as_deref().unwrap_or("none")),
                escape_control(endpoint.cache_control.as_deref().unwrap_or("none")),
                match endpoint.names_failures {
                    Some(true) => "yes",
                    Some(false) => "no",
                    None => "no failing answer seen",
                }
            );
        }
        for redirect in &endpoint.redirects {
            let _ = writeln!(out, "  redirected: {}", escape_control(redirect));
        }
        if let Some(target) = &endpoint.redirected_elsewhere {
            let _ = writeln!(
                out,
                "  redirected to another origin (not followed): {}",
                escape_control(target)
            );
        }
        if !endpoint.checks.is_empty() {
            let checks: Vec<String> = endpoint
                .checks
                .iter()
                .map(|check| {
                    format!(
                        "{} {}",
                        escape_control(&check.name),
                        match check.state {
                            super::CheckState::Pass => "pass",
                            super::CheckState::Warn => "warn",
                            super::CheckState::Fail => "fail",
                        }
                    )
                })
                .collect();
            let _ = writeln!(out, "  checks named: {}", checks.join(", "));
        }
        if !endpoint.sample.is_empty() {
            let _ = writeln!(out, "  body: {}", escape_control(&endpoint.sample));
        }
    }
    for contract in &report.contracts {
        let _ = writeln!(
            out,
            "contract at {}: {}",
            escape_control(&contract.url),
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
            finding.rule,
            escape_control(&finding.endpoint),
            escape_control(&finding.message)
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
