//! What the linter reports: findings, the edits that fix them, and what it skipped.

use crate::rules::{Rule, Severity};
use serde::Serialize;
use std::sync::Arc;

/// One rule broken at one place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The rule's id.
    pub rule: &'static str,
    /// The rule's severity.
    pub severity: Severity,
    /// The input's name: the path as given, or `<stdin>`.
    pub file: Arc<str>,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// The object's kind: `Deployment`, `Service`, `Rollout`…; empty for a document that is not
    /// a Kubernetes object (`invalid-yaml`, `not-a-kubernetes-object`).
    pub kind: String,
    /// The object's name; empty when there is no object.
    pub name: String,
    /// The object's namespace, when the manifest sets one.
    pub namespace: Option<String>,
    /// The container the finding is about, if it is about one.
    pub container: Option<String>,
    /// What is wrong here, with the values involved.
    pub message: String,
    /// How to fix it (the rule's fix).
    pub fix: &'static str,
    /// The exact edit that fixes it, when the fix is mechanical.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub autofix: Option<Autofix>,
}

impl Finding {
    /// The rule this finding belongs to.
    pub fn rule(&self) -> Option<&'static Rule> {
        crate::rules::find(self.rule)
    }
}

/// A mechanical fix: text edits to the finding's file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Autofix {
    /// What the edits do, in a sentence: "set `successThreshold` to 1".
    pub description: String,
    /// Whether `probity lint --fix` applies it: the edit keeps what the manifest meant and only
    /// removes the mistake. An unsafe fix changes behaviour a person should choose (a shorter
    /// detection time, say) and is only shown.
    pub safe: bool,
    /// The edits, in file order, not overlapping.
    pub edits: Vec<TextEdit>,
}

/// Replace the bytes `start..end` of `file` with `replacement`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TextEdit {
    /// The file the edit applies to (the finding's).
    pub file: Arc<str>,
    /// Byte offset of the first byte replaced.
    pub start: usize,
    /// Byte offset just past the last byte replaced (`start` for an insertion).
    pub end: usize,
    /// The new text.
    pub replacement: String,
}

/// A document of a kind the linter does not judge (a ConfigMap, a custom resource without a pod
/// template).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedDocument {
    /// The input's name.
    pub file: Arc<str>,
    /// 1-based line of its `kind`.
    pub line: usize,
    /// Its kind.
    pub kind: String,
    /// Its name.
    pub name: String,
}

/// The outcome of linting a set of inputs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Findings in input order, then by position.
    pub findings: Vec<Finding>,
    /// Objects of a kind the linter judges.
    pub objects: usize,
    /// Documents of other kinds, in input order: counted in the summary, listed with
    /// `--verbose`.
    pub skipped: Vec<SkippedDocument>,
    /// Documents that could not be read: invalid YAML, or not a Kubernetes object (each is also
    /// a finding).
    pub unreadable: usize,
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

    /// Whether documents were given but none of them could be read: every one was invalid YAML
    /// or not a Kubernetes object.
    pub fn nothing_read(&self) -> bool {
        self.unreadable > 0 && self.objects == 0 && self.skipped.is_empty()
    }

    /// The skipped kinds with how many documents of each, most frequent first (then by name).
    pub fn skipped_kinds(&self) -> Vec<(&str, usize)> {
        let mut counts: Vec<(&str, usize)> = Vec::new();
        let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for skipped in &self.skipped {
            match index.get(skipped.kind.as_str()) {
                Some(&at) => counts[at].1 += 1,
                None => {
                    index.insert(&skipped.kind, counts.len());
                    counts.push((&skipped.kind, 1));
                }
            }
        }
        counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        counts
    }
}
