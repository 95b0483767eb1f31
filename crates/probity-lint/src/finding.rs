//! What the linter reports: findings, and documents it could not read.

use crate::rules::{Rule, Severity};
use serde::Serialize;

/// One rule broken at one place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The rule's id.
    pub rule: &'static str,
    /// The rule's severity.
    pub severity: Severity,
    /// The input's name: the path as given, or `<stdin>`.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// The object's kind: `Deployment`, `Service`…
    pub kind: String,
    /// The object's name.
    pub name: String,
    /// The object's namespace, when the manifest sets one.
    pub namespace: Option<String>,
    /// The container the finding is about, if it is about one.
    pub container: Option<String>,
    /// What is wrong here, with the values involved.
    pub message: String,
    /// How to fix it (the rule's fix).
    pub fix: &'static str,
}

impl Finding {
    /// The rule this finding belongs to.
    pub fn rule(&self) -> Option<&'static Rule> {
        crate::rules::find(self.rule)
    }
}

/// A document (or a whole input) that could not be linted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{file}:{line}:{column}: {message}")]
pub struct InputError {
    /// The input's name.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

/// The outcome of linting a set of inputs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Findings in input order, then by position.
    pub findings: Vec<Finding>,
    /// Documents that could not be read; linting went on with the others.
    pub errors: Vec<InputError>,
    /// Objects of a kind the linter judges.
    pub objects: usize,
    /// Documents of other kinds (ConfigMaps, custom resources…), skipped.
    pub skipped: usize,
    /// Findings removed by a `probity.dev/ignore-RULE` annotation.
    pub suppressed: usize,
    /// Indices into [`crate::Options::contracts`] of the contracts that describe no container
    /// of any workload read (a misspelt `service`, say): nothing was judged against them.
    pub unmatched_contracts: Vec<usize>,
}

impl Report {
    /// Whether any finding is at or above `threshold`.
    pub fn fails_at(&self, threshold: Severity) -> bool {
        self.findings
            .iter()
            .any(|finding| finding.severity >= threshold)
    }
}
