//! What rules report into: the findings of the objects being judged, each checked against the
//! object's suppressions, and what a finding can be about.

use crate::facts;
use crate::finding::Finding;
use crate::model::Object;
use crate::options::Options;
use crate::rules::Rule;
use crate::source::Source;
use crate::summary::Subject;
use crate::yaml::Position;
use std::sync::Arc;

/// Something a finding can be about: an object being judged, or the summary of one.
pub(crate) trait About {
    fn source(&self) -> usize;
    fn kind(&self) -> &str;
    fn name(&self) -> &str;
    fn namespace(&self) -> Option<&str>;
    /// Whether a `probity.dev/ignore-RULE` annotation on it suppresses `rule`.
    fn suppresses(&self, rule: &str) -> bool;
}

impl About for Object<'_> {
    fn source(&self) -> usize {
        self.source
    }
    fn kind(&self) -> &str {
        &self.kind_name
    }
    fn name(&self) -> &str {
        &self.name
    }
    fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }
    fn suppresses(&self, rule: &str) -> bool {
        self.suppressions.contains(&rule)
    }
}

impl About for Subject {
    fn source(&self) -> usize {
        self.source
    }
    fn kind(&self) -> &str {
        &self.kind
    }
    fn name(&self) -> &str {
        &self.name
    }
    fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }
    fn suppresses(&self, rule: &str) -> bool {
        self.suppressions.contains(&rule)
    }
}

/// The state checks report into.
pub(crate) struct Cx<'a> {
    names: &'a [Arc<str>],
    /// The texts, for fixes: every source, or (while one source is judged on its own thread)
    /// just that one, at `first_source`.
    texts: &'a [Source],
    first_source: usize,
    pub(crate) options: &'a Options,
    pub(crate) findings: Vec<(usize, Finding)>,
    pub(crate) suppressed: usize,
}

impl<'a> Cx<'a> {
    pub(crate) fn new(
        names: &'a [Arc<str>],
        texts: (usize, &'a [Source]),
        options: &'a Options,
    ) -> Self {
        Self {
            names,
            texts: texts.1,
            first_source: texts.0,
            options,
            findings: Vec::new(),
            suppressed: 0,
        }
    }

    /// The name of source `source`, for edits.
    pub(crate) fn file(&self, source: usize) -> Arc<str> {
        self.names[source].clone()
    }

    /// The text of source `source`, for edits that depend on the surrounding lines.
    pub(crate) fn text(&self, source: usize) -> &'a str {
        source
            .checked_sub(self.first_source)
            .and_then(|at| self.texts.get(at))
            .map_or("", |source| source.text.as_str())
    }

    /// Reports `rule` broken at `position` of `subject`.
    pub(crate) fn report(
        &mut self,
        subject: &dyn About,
        rule: &'static Rule,
        position: Position,
        container: Option<&str>,
        message: impl Into<String>,
    ) {
        self.report_with_fix(subject, rule, position, container, message, None);
    }

    /// Reports `rule` broken at `position` of `subject`, with a mechanical fix.
    pub(crate) fn report_with_fix(
        &mut self,
        subject: &dyn About,
        rule: &'static Rule,
        position: Position,
        container: Option<&str>,
        message: impl Into<String>,
        autofix: Option<crate::finding::Autofix>,
    ) {
        // A broken suppression cannot suppress its own report.
        if rule.id != facts::PROBLEM_RULE.id && subject.suppresses(rule.id) {
            self.suppressed += 1;
            return;
        }
        let source = subject.source();
        self.findings.push((
            source,
            Finding {
                rule: rule.id,
                severity: rule.severity,
                file: self.names[source].clone(),
                line: position.line,
                column: position.column,
                kind: subject.kind().to_owned(),
                name: subject.name().to_owned(),
                namespace: subject.namespace().map(str::to_owned),
                container: container.map(str::to_owned),
                message: message.into(),
                fix: rule.fix,
                autofix,
            },
        ));
    }

    /// Reports a document that is not an object the linter can judge.
    pub(crate) fn report_document(
        &mut self,
        source: usize,
        rule: &'static Rule,
        position: Position,
        message: String,
        autofix: Option<crate::finding::Autofix>,
    ) {
        self.findings.push((
            source,
            Finding {
                rule: rule.id,
                severity: rule.severity,
                file: self.names[source].clone(),
                line: position.line,
                column: position.column,
                kind: String::new(),
                name: String::new(),
                namespace: None,
                container: None,
                message,
                fix: rule.fix,
                autofix,
            },
        ));
    }
}
