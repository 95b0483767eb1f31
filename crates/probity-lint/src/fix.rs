//! Applying fixes: choosing a file's safe, non-overlapping edits from a report, applying them to
//! its text, and showing the change as a unified diff.
//!
//! Edits replace exact byte ranges of the original text, so everything they do not touch —
//! comments, key order, quoting, indentation — stays as it was. Two fixes whose edits touch are
//! not applied in the same pass: the second waits for a fresh lint of the fixed text (see
//! [`fix_all`]).

use crate::engine::lint;
use crate::finding::{Finding, Report};
use crate::options::Options;
use crate::source::Source;

/// One fix applied to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The input's name.
    pub file: String,
    /// The rule whose finding it fixes.
    pub rule: &'static str,
    /// Where the finding was, in the text the fix was applied to.
    pub line: usize,
    /// The column of the finding.
    pub column: usize,
    /// What the fix did.
    pub description: String,
}

/// The safe fixes of `report` for the input named `file`, in file order, leaving out any whose
/// edits touch an earlier one's.
pub fn plan<'r>(report: &'r Report, file: &str) -> Vec<&'r Finding> {
    let mut candidates: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|finding| &*finding.file == file)
        .filter(|finding| finding.autofix.as_ref().is_some_and(|fix| fix.safe))
        .collect();
    candidates.sort_by_key(|finding| {
        finding
            .autofix
            .as_ref()
            .and_then(|fix| fix.edits.first())
            .map(|edit| (edit.start, edit.end))
    });
    let mut chosen: Vec<&Finding> = Vec::new();
    let mut taken: Vec<(usize, usize)> = Vec::new();
    for finding in candidates {
        let Some(fix) = &finding.autofix else {
            continue;
        };
        let touches = fix.edits.iter().any(|edit| {
            taken
                .iter()
                .any(|&(start, end)| edit.start <= end && start <= edit.end)
        });
        // The same fix reported twice (one edit for two findings) is applied once.
        let repeated = chosen
            .iter()
            .any(|other| other.autofix.as_ref().map(|other| &other.edits) == Some(&fix.edits));
        if touches || repeated {
            continue;
        }
        taken.extend(fix.edits.iter().map(|edit| (edit.start, edit.end)));
        chosen.push(finding);
    }
    chosen
}

/// `text` with the edits of `fixes` applied. The fixes must not overlap (as [`plan`] chooses
/// them); an edit outside the text is ignored.
pub fn apply(text: &str, fixes: &[&Finding]) -> String {
    let mut edits: Vec<_> = fixes
        .iter()
        .filter_map(|finding| finding.autofix.as_ref())
        .flat_map(|fix| fix.edits.iter())
        .filter(|edit| {
            edit.start <= edit.end
                && edit.end <= text.len()
                && text.is_char_boundary(edit.start)
                && text.is_char_boundary(edit.end)
        })
        .collect();
    edits.sort_by_key(|edit| (edit.start, edit.end));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for edit in edits {
        if edit.start < at {
            continue;
        }
        out.push_str(&text[at..edit.start]);
        out.push_str(&edit.replacement);
        at = edit.end;
    }
    out.push_str(&text[at..]);
    out
}

/// Fixes applied to some inputs, and their new texts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fixed {
    /// Every fix applied, pass by pass.
    pub applied: Vec<Applied>,
    /// The inputs after fixing, in the order given (unchanged ones included).
    pub sources: Vec<Source>,
}

impl Fixed {
    /// Whether the input at `index` changed.
    pub fn changed(&self, original: &[Source], index: usize) -> bool {
        self.sources.get(index).map(|source| &source.text) != original.get(index).map(|s| &s.text)
    }
}

/// Passes of lint-and-fix at most: fixes that touch wait for the next pass.
const MAX_PASSES: usize = 4;

/// Lints and applies the safe fixes to every input for which `fixable` holds, again and again
/// until no safe fix is left (or a few passes have run).
pub fn fix_all(sources: &[Source], options: &Options, fixable: impl Fn(&Source) -> bool) -> Fixed {
    let mut fixed = Fixed {
        applied: Vec::new(),
        sources: sources.to_vec(),
    };
    for _ in 0..MAX_PASSES {
        let report = lint(&fixed.sources, options);
        let mut changed = false;
        for source in &mut fixed.sources {
            if !fixable(source) {
                continue;
            }
            let fixes = plan(&report, &source.name);
            if fixes.is_empty() {
                continue;
            }
            let text = apply(&source.text, &fixes);
            if text == source.text {
                continue;
            }
            fixed.applied.extend(fixes.iter().filter_map(|finding| {
                Some(Applied {
                    file: source.name.clone(),
                    rule: finding.rule,
                    line: finding.line,
                    column: finding.column,
                    description: finding.autofix.as_ref()?.description.clone(),
                })
            }));
            *source = Source::new(source.name.clone(), text);
            changed = true;
        }
        if !changed {
            break;
        }
    }
    fixed
}

/// The change from `old` to `new` as a unified diff with three lines of context, headed
/// `--- a/NAME` / `+++ b/NAME` as `git apply` and `patch -p1` read it (an absolute path is shown
/// as it is); empty when they are equal.
pub fn unified_diff(name: &str, old: &str, new: &str) -> String {
    if old == new {
        return String::new();
    }
    let (before, after) = if name.starts_with('/') {
        (name.to_owned(), name.to_owned())
    } else {
        (format!("a/{name}"), format!("b/{name}"))
    };
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&before, &after)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: app\n    image: a\n    livenessProbe:\n      httpGet: {path: /livez, port: 8080}\n      # liveness answers from memory\n      timeoutSeconds: 10  # too long\n      successThreshold: 3\n      periodSecond: 10\n";

    #[test]
    fn applies_every_safe_fix_and_keeps_the_comments() {
        let sources = [Source::new("pod.yaml", POD)];
        let fixed = fix_all(&sources, &Options::default(), |_| true);
        let text = &fixed.sources[0].text;
        assert!(
            text.contains("      # liveness answers from memory\n"),
            "{text}"
        );
        assert!(
            text.contains("      timeoutSeconds: 9  # too long\n"),
            "{text}"
        );
        assert!(text.contains("      successThreshold: 1\n"), "{text}");
        assert!(text.contains("      periodSeconds: 10\n"), "{text}");
        let rules: Vec<&str> = fixed.applied.iter().map(|applied| applied.rule).collect();
        assert!(rules.contains(&"unknown-field"), "{rules:?}");
        let after = lint(&fixed.sources, &Options::default());
        assert!(
            after
                .findings
                .iter()
                .all(|finding| finding.autofix.as_ref().is_none_or(|fix| !fix.safe))
        );
    }

    #[test]
    fn diffs_show_only_the_changed_lines() {
        let diff = unified_diff("pod.yaml", "a: 1\nb: 2\n", "a: 1\nb: 3\n");
        assert!(
            diff.starts_with("--- a/pod.yaml\n+++ b/pod.yaml\n"),
            "{diff}"
        );
        assert!(diff.contains("-b: 2\n+b: 3\n"), "{diff}");
        assert_eq!(unified_diff("x", "same", "same"), "");
    }

    #[test]
    fn touching_fixes_wait_for_the_next_pass() {
        let report = lint(&[Source::new("pod.yaml", POD)], &Options::default());
        let planned = plan(&report, "pod.yaml");
        let mut ranges: Vec<(usize, usize)> = planned
            .iter()
            .flat_map(|finding| finding.autofix.as_ref().unwrap().edits.iter())
            .map(|edit| (edit.start, edit.end))
            .collect();
        ranges.sort();
        assert!(
            ranges.windows(2).all(|pair| pair[0].1 < pair[1].0),
            "{ranges:?}"
        );
    }
}
