//! Rendering a report: for people (with the source line), as JSON, and as SARIF 2.1.0.

use crate::finding::{Finding, Report};
use crate::rules::{self, Severity};
use crate::source::Source;
use serde_json::{Value, json};
use std::fmt::Write as _;

/// The output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `file:line:col`, the source line, the why and the fix.
    Human,
    /// An array of findings.
    Json,
    /// SARIF 2.1.0, for code-scanning tools.
    Sarif,
}

impl Format {
    /// Parses `human`, `json` or `sarif`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "human" => Some(Format::Human),
            "json" => Some(Format::Json),
            "sarif" => Some(Format::Sarif),
            _ => None,
        }
    }
}

/// Renders a report in `format`. `color` adds ANSI colours to the human format only.
pub fn render(report: &Report, sources: &[Source], format: Format, color: bool) -> String {
    match format {
        Format::Human => human(report, sources, color),
        Format::Json => json(report),
        Format::Sarif => sarif(report),
    }
}

struct Paint {
    color: bool,
}

impl Paint {
    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    fn severity(&self, severity: Severity) -> String {
        let code = match severity {
            Severity::Error => "1;31",
            Severity::Warning => "1;33",
            Severity::Info => "1;36",
        };
        self.paint(code, severity.as_str())
    }
}

/// The human format: one block per finding, then a summary line.
pub fn human(report: &Report, sources: &[Source], color: bool) -> String {
    let paint = Paint { color };
    let mut out = String::new();
    for finding in &report.findings {
        let _ = writeln!(
            out,
            "{}: {}[{}]: {}",
            paint.paint(
                "1",
                &format!("{}:{}:{}", finding.file, finding.line, finding.column)
            ),
            paint.severity(finding.severity),
            finding.rule,
            finding.message
        );
        let subject = match &finding.container {
            Some(container) => format!(
                "{} `{}`, container `{container}`",
                finding.kind, finding.name
            ),
            None => format!("{} `{}`", finding.kind, finding.name),
        };
        let _ = writeln!(out, "  {} {subject}", paint.paint("34", "-->"));
        if let Some(line) = sources
            .iter()
            .find(|source| source.name == finding.file)
            .and_then(|source| source.line(finding.line))
        {
            let number = finding.line.to_string();
            let gutter = " ".repeat(number.len());
            let caret_at: String = line
                .chars()
                .take(finding.column.saturating_sub(1))
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            let _ = writeln!(out, "  {gutter} {}", paint.paint("34", "|"));
            let _ = writeln!(
                out,
                "  {} {} {line}",
                paint.paint("34", &number),
                paint.paint("34", "|")
            );
            let _ = writeln!(
                out,
                "  {gutter} {} {caret_at}{}",
                paint.paint("34", "|"),
                paint.paint("1;32", "^")
            );
        }
        if let Some(rule) = finding.rule() {
            let _ = writeln!(out, "  {} {}", paint.paint("1", "why:"), rule.why);
        }
        let _ = writeln!(out, "  {} {}", paint.paint("1", "fix:"), finding.fix);
        out.push('\n');
    }
    let count = |severity| {
        report
            .findings
            .iter()
            .filter(|finding| finding.severity == severity)
            .count()
    };
    let _ = writeln!(
        out,
        "{} error(s), {} warning(s), {} info in {} object(s){}{}{}",
        count(Severity::Error),
        count(Severity::Warning),
        count(Severity::Info),
        report.objects,
        if report.skipped > 0 {
            format!(", {} document(s) of other kinds skipped", report.skipped)
        } else {
            String::new()
        },
        if report.suppressed > 0 {
            format!(", {} suppressed", report.suppressed)
        } else {
            String::new()
        },
        if report.errors.is_empty() {
            String::new()
        } else {
            format!(", {} input error(s)", report.errors.len())
        },
    );
    out
}

/// The JSON format: an array of findings.
pub fn json(report: &Report) -> String {
    // Findings hold only strings and integers: serialising cannot fail.
    serde_json::to_string_pretty(&report.findings).unwrap_or_else(|_| "[]".to_owned()) + "\n"
}

/// The SARIF schema this output follows.
pub const SARIF_SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/os/schemas/sarif-schema-2.1.0.json";

fn sarif_level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// A file name as a SARIF `uri`: a relative reference with `/` separators and percent-encoded
/// characters that a URI may not hold.
fn artifact_uri(file: &str) -> String {
    let mut uri = String::new();
    for byte in file.replace('\\', "/").bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=:@".contains(&byte) {
            uri.push(byte as char);
        } else {
            let _ = write!(uri, "%{byte:02X}");
        }
    }
    uri
}

/// The SARIF 2.1.0 format: one run, every rule in the driver, one result per finding.
pub fn sarif(report: &Report) -> String {
    let all = rules::all();
    let rules_json: Vec<Value> = all
        .iter()
        .map(|rule| {
            json!({
                "id": rule.id,
                "name": rule.id,
                "shortDescription": { "text": rule.summary },
                "fullDescription": { "text": rule.why },
                "help": { "text": rule.fix, "markdown": rule.explain() },
                "defaultConfiguration": { "level": sarif_level(rule.severity) },
                "properties": { "tags": ["kubernetes", "probes"] },
            })
        })
        .collect();
    let results: Vec<Value> = report
        .findings
        .iter()
        .map(|finding| sarif_result(finding, all))
        .collect();
    let log = json!({
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "probity-lint",
                    "semanticVersion": env!("CARGO_PKG_VERSION"),
                    "informationUri": "https://github.com/probity-rs/probity/blob/main/docs/lint-rules.md",
                    "rules": rules_json,
                }
            },
            "columnKind": "unicodeCodePoints",
            "results": results,
        }]
    });
    serde_json::to_string_pretty(&log).unwrap_or_default() + "\n"
}

fn sarif_result(finding: &Finding, all: &[&rules::Rule]) -> Value {
    let rule_index = all
        .iter()
        .position(|rule| rule.id == finding.rule)
        .unwrap_or(0);
    let mut qualified = String::new();
    if let Some(namespace) = &finding.namespace {
        let _ = write!(qualified, "{namespace}/");
    }
    let _ = write!(qualified, "{}/{}", finding.kind, finding.name);
    if let Some(container) = &finding.container {
        let _ = write!(qualified, "/{container}");
    }
    json!({
        "ruleId": finding.rule,
        "ruleIndex": rule_index,
        "level": sarif_level(finding.severity),
        "message": { "text": format!("{} Fix: {}", finding.message, finding.fix) },
        "locations": [{
            "physicalLocation": {
                "artifactLocation": { "uri": artifact_uri(&finding.file) },
                "region": {
                    "startLine": finding.line.max(1),
                    "startColumn": finding.column.max(1),
                }
            },
            "logicalLocations": [{
                "fullyQualifiedName": qualified,
                "kind": "object",
            }]
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_uris() {
        assert_eq!(artifact_uri("deploy/app.yaml"), "deploy/app.yaml");
        assert_eq!(artifact_uri("<stdin>"), "%3Cstdin%3E");
        assert_eq!(artifact_uri("a b\\c.yaml"), "a%20b/c.yaml");
    }
}
