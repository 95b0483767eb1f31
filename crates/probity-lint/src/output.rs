//! Rendering a report: for people (with the source line), as JSON, and as SARIF 2.1.0.
//!
//! Every format is written straight to a [`Write`] as it is produced, in one pass over the
//! findings, with source lines found through each source's line index: output time and memory
//! are linear in the number of findings, whatever the size of the inputs.

use crate::finding::{Finding, Report};
use crate::rules::{self, Severity};
use crate::source::Source;
use serde::Serialize;
use serde::ser::{SerializeSeq, Serializer};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::io::{self, Write};

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

/// How the human format looks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Style {
    /// ANSI colours.
    pub color: bool,
    /// List every skipped document, not only their count.
    pub verbose: bool,
}

/// Writes a report in `format` to `out`.
pub fn write(
    report: &Report,
    sources: &[Source],
    format: Format,
    style: Style,
    out: &mut dyn Write,
) -> io::Result<()> {
    match format {
        Format::Human => write_human(report, sources, style, out),
        Format::Json => write_json(report, out),
        Format::Sarif => write_sarif(report, out),
    }
}

/// Renders a report in `format` as a string. `color` adds ANSI colours to the human format only.
pub fn render(report: &Report, sources: &[Source], format: Format, color: bool) -> String {
    let mut out = Vec::new();
    let style = Style {
        color,
        verbose: false,
    };
    // Writing to a vector cannot fail.
    let _ = write(report, sources, format, style, &mut out);
    String::from_utf8(out).unwrap_or_default()
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
    render(report, sources, Format::Human, color)
}

/// `text` with every control character written out (`\n`, `\u{1b}`, …), and the
/// bidirectional overrides too: a name or a line that came from a manifest is shown, never
/// obeyed by the terminal. The one escaper every probity tool prints with.
pub use probity_contract::text::escape_control;

/// Writes the human format. A rule's why is printed with its first finding; later findings of
/// the same rule point back to it, so a large run does not repeat the same paragraph thousands of
/// times.
pub fn write_human(
    report: &Report,
    sources: &[Source],
    style: Style,
    out: &mut dyn Write,
) -> io::Result<()> {
    let paint = Paint { color: style.color };
    let by_name: HashMap<&str, &Source> = sources
        .iter()
        .map(|source| (source.name.as_str(), source))
        .collect();
    let mut explained: HashSet<&str> = HashSet::new();
    let mut block = String::new();
    for finding in &report.findings {
        block.clear();
        let _ = writeln!(
            block,
            "{}: {}[{}]: {}",
            paint.paint(
                "1",
                &format!(
                    "{}:{}:{}",
                    escape_control(&finding.file),
                    finding.line,
                    finding.column
                )
            ),
            paint.severity(finding.severity),
            finding.rule,
            escape_control(&finding.message)
        );
        if !finding.kind.is_empty() {
            let (kind, name) = (escape_control(&finding.kind), escape_control(&finding.name));
            let subject = match &finding.container {
                Some(container) => {
                    format!("{kind} `{name}`, container `{}`", escape_control(container))
                }
                None => format!("{kind} `{name}`"),
            };
            let _ = writeln!(block, "  {} {subject}", paint.paint("34", "-->"));
        }
        if let Some(line) = by_name
            .get(&*finding.file)
            .and_then(|source| source.line(finding.line))
        {
            snippet(&mut block, &paint, finding, line);
        }
        if let Some(rule) = finding.rule() {
            if explained.insert(rule.id) {
                let _ = writeln!(block, "  {} {}", paint.paint("1", "why:"), rule.why);
            } else {
                let _ = writeln!(
                    block,
                    "  {} as for the first `{}` finding above (`probity lint --explain {}`)",
                    paint.paint("1", "why:"),
                    rule.id,
                    rule.id
                );
            }
        }
        let _ = writeln!(
            block,
            "  {} {}",
            paint.paint("1", "fix:"),
            escape_control(finding.fix)
        );
        if let Some(autofix) = &finding.autofix {
            let _ = writeln!(
                block,
                "  {} {}{}",
                paint.paint("1", "autofix:"),
                escape_control(&autofix.description),
                if autofix.safe {
                    " (`probity lint --fix` applies it)"
                } else {
                    " (shown, not applied by `--fix`: it changes behaviour; decide)"
                }
            );
        }
        block.push('\n');
        out.write_all(block.as_bytes())?;
    }
    if style.verbose {
        for skipped in &report.skipped {
            writeln!(
                out,
                "skipped: {}:{}: {} `{}` is not a kind probity lint judges",
                escape_control(&skipped.file),
                skipped.line,
                escape_control(&skipped.kind),
                escape_control(&skipped.name)
            )?;
        }
        if !report.skipped.is_empty() {
            writeln!(out)?;
        }
    }
    writeln!(out, "{}", summary(report, !style.verbose))
}

/// Prints the source line with a caret under the column.
fn snippet(block: &mut String, paint: &Paint, finding: &Finding, line: &str) {
    // A line longer than this is cut around the column, so a minified one-line document does
    // not print megabytes per finding.
    const MAX_SHOWN: usize = 200;
    let column = finding.column.saturating_sub(1);
    let (shown, caret_column) = if line.len() > MAX_SHOWN {
        let skip = column.saturating_sub(MAX_SHOWN / 2);
        let cut: String = line.chars().skip(skip).take(MAX_SHOWN).collect();
        (format!("…{cut}…"), column - skip + 1)
    } else {
        (line.to_owned(), column)
    };
    let number = finding.line.to_string();
    let gutter = " ".repeat(number.len());
    let caret_at: String = shown
        .chars()
        .take(caret_column)
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    let _ = writeln!(block, "  {gutter} {}", paint.paint("34", "|"));
    let _ = writeln!(
        block,
        "  {} {} {}",
        paint.paint("34", &number),
        paint.paint("34", "|"),
        escape_control(&shown)
    );
    let _ = writeln!(
        block,
        "  {gutter} {} {caret_at}{}",
        paint.paint("34", "|"),
        paint.paint("1;32", "^")
    );
}

/// "2 error(s), 1 warning(s), 0 info in 12 object(s), 3 document(s) of other kinds skipped
/// (ConfigMap 2, PrometheusRule 1), 1 suppressed".
pub fn summary_line(report: &Report) -> String {
    summary(report, true)
}

/// The summary line, pointing at `--verbose` for the skipped documents when `hint` (not when
/// they are listed already).
fn summary(report: &Report, hint: bool) -> String {
    let count = |severity| {
        report
            .findings
            .iter()
            .filter(|finding| finding.severity == severity)
            .count()
    };
    let mut line = format!(
        "{} error(s), {} warning(s), {} info in {} object(s)",
        count(Severity::Error),
        count(Severity::Warning),
        count(Severity::Info),
        report.objects,
    );
    if !report.skipped.is_empty() {
        let kinds: Vec<String> = report
            .skipped_kinds()
            .iter()
            .map(|(kind, count)| format!("{} {count}", escape_control(kind)))
            .collect();
        let _ = write!(
            line,
            ", {} document(s) of other kinds skipped ({}{})",
            report.skipped.len(),
            kinds.join(", "),
            if hint { "; `--verbose` lists them" } else { "" }
        );
    }
    if report.unreadable > 0 {
        let _ = write!(line, ", {} document(s) unreadable", report.unreadable);
    }
    if report.suppressed > 0 {
        let _ = write!(line, ", {} suppressed", report.suppressed);
    }
    line
}

/// The JSON format: an array of findings.
pub fn json(report: &Report) -> String {
    render(report, &[], Format::Json, false)
}

/// Writes the JSON format.
pub fn write_json(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let mut writer = io::BufWriter::new(out);
    serde_json::to_writer_pretty(&mut writer, &report.findings).map_err(io::Error::other)?;
    writer.write_all(b"\n")?;
    writer.flush()
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
    render(report, &[], Format::Sarif, false)
}

#[derive(Serialize)]
struct Text<'a> {
    text: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifRule<'a> {
    id: &'a str,
    name: &'a str,
    short_description: Text<'a>,
    full_description: Text<'a>,
    help: Help<'a>,
    default_configuration: Configuration,
    properties: Properties,
}

#[derive(Serialize)]
struct Help<'a> {
    text: &'a str,
    markdown: String,
}

#[derive(Serialize)]
struct Configuration {
    level: &'static str,
}

#[derive(Serialize)]
struct Properties {
    tags: [&'static str; 2],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifLog<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: [Run<'a>; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Run<'a> {
    tool: Tool<'a>,
    column_kind: &'static str,
    results: Results<'a>,
}

#[derive(Serialize)]
struct Tool<'a> {
    driver: Driver<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Driver<'a> {
    name: &'static str,
    semantic_version: &'static str,
    information_uri: &'static str,
    rules: Vec<SarifRule<'a>>,
}

/// The results, serialised one finding at a time.
struct Results<'a> {
    findings: &'a [Finding],
    rule_index: HashMap<&'static str, usize>,
}

impl Serialize for Results<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.findings.len()))?;
        for finding in self.findings {
            seq.serialize_element(&SarifResult::of(
                finding,
                self.rule_index.get(finding.rule).copied().unwrap_or(0),
            ))?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult<'a> {
    rule_id: &'a str,
    rule_index: usize,
    level: &'static str,
    message: OwnedText,
    locations: [Location; 1],
    #[serde(skip_serializing_if = "Vec::is_empty")]
    fixes: Vec<Fix<'a>>,
}

#[derive(Serialize)]
struct OwnedText {
    text: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Location {
    physical_location: PhysicalLocation,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    logical_locations: Vec<LogicalLocation>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalLocation {
    artifact_location: ArtifactLocation,
    region: Region,
}

#[derive(Serialize)]
struct ArtifactLocation {
    uri: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Region {
    start_line: usize,
    start_column: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LogicalLocation {
    fully_qualified_name: String,
    kind: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Fix<'a> {
    description: Text<'a>,
    artifact_changes: Vec<ArtifactChange<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactChange<'a> {
    artifact_location: ArtifactLocation,
    replacements: Vec<Replacement<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Replacement<'a> {
    deleted_region: ByteRegion,
    inserted_content: Text<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ByteRegion {
    byte_offset: usize,
    byte_length: usize,
}

impl<'a> SarifResult<'a> {
    fn of(finding: &'a Finding, rule_index: usize) -> Self {
        let mut logical_locations = Vec::new();
        if !finding.kind.is_empty() {
            let mut qualified = String::new();
            if let Some(namespace) = &finding.namespace {
                let _ = write!(qualified, "{namespace}/");
            }
            let _ = write!(qualified, "{}/{}", finding.kind, finding.name);
            if let Some(container) = &finding.container {
                let _ = write!(qualified, "/{container}");
            }
            logical_locations.push(LogicalLocation {
                fully_qualified_name: qualified,
                kind: "object",
            });
        }
        let fixes = finding
            .autofix
            .iter()
            .map(|autofix| Fix {
                description: Text {
                    text: &autofix.description,
                },
                artifact_changes: vec![ArtifactChange {
                    artifact_location: ArtifactLocation {
                        uri: artifact_uri(&finding.file),
                    },
                    replacements: autofix
                        .edits
                        .iter()
                        .map(|edit| Replacement {
                            deleted_region: ByteRegion {
                                byte_offset: edit.start,
                                byte_length: edit.end - edit.start,
                            },
                            inserted_content: Text {
                                text: &edit.replacement,
                            },
                        })
                        .collect(),
                }],
            })
            .collect();
        SarifResult {
            rule_id: finding.rule,
            rule_index,
            level: sarif_level(finding.severity),
            message: OwnedText {
                text: format!("{} Fix: {}", finding.message, finding.fix),
            },
            locations: [Location {
                physical_location: PhysicalLocation {
                    artifact_location: ArtifactLocation {
                        uri: artifact_uri(&finding.file),
                    },
                    region: Region {
                        start_line: finding.line.max(1),
                        start_column: finding.column.max(1),
                    },
                },
                logical_locations,
            }],
            fixes,
        }
    }
}

/// Writes the SARIF 2.1.0 format.
pub fn write_sarif(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let all = rules::all();
    let log = SarifLog {
        schema: SARIF_SCHEMA,
        version: "2.1.0",
        runs: [Run {
            tool: Tool {
                driver: Driver {
                    name: "probity-lint",
                    semantic_version: env!("CARGO_PKG_VERSION"),
                    information_uri: "https://github.com/probity-rs/probity/blob/main/docs/lint-rules.md",
                    rules: all
                        .iter()
                        .map(|rule| SarifRule {
                            id: rule.id,
                            name: rule.id,
                            short_description: Text { text: rule.summary },
                            full_description: Text { text: rule.why },
                            help: Help {
                                text: rule.fix,
                                markdown: rule.explain(),
                            },
                            default_configuration: Configuration {
                                level: sarif_level(rule.severity),
                            },
                            properties: Properties {
                                tags: ["kubernetes", "probes"],
                            },
                        })
                        .collect(),
                },
            },
            column_kind: "unicodeCodePoints",
            results: Results {
                findings: &report.findings,
                rule_index: all
                    .iter()
                    .enumerate()
                    .map(|(index, rule)| (rule.id, index))
                    .collect(),
            },
        }],
    };
    let mut writer = io::BufWriter::new(out);
    serde_json::to_writer_pretty(&mut writer, &log).map_err(io::Error::other)?;
    writer.write_all(b"\n")?;
    writer.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_not_obeyed() {
        assert_eq!(escape_control("web-1"), "web-1");
        assert_eq!(
            escape_control("web\u{1b}]0;PWNED\u{7}\u{1b}[2J\n\u{9b}x\u{202e}"),
            "web\\u{1b}]0;PWNED\\u{7}\\u{1b}[2J\\n\\u{9b}x\\u{202e}"
        );
    }

    #[test]
    fn encodes_uris() {
        assert_eq!(artifact_uri("deploy/app.yaml"), "deploy/app.yaml");
        assert_eq!(artifact_uri("<stdin>"), "%3Cstdin%3E");
        assert_eq!(artifact_uri("a b\\c.yaml"), "a%20b/c.yaml");
    }
}
