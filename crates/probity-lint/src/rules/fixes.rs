//! Mechanical fixes as text edits on the source, so comments, key order, quoting and indentation
//! survive: a value replaced where it is written, a key renamed in place, a line removed, lines
//! inserted at the indentation of their siblings. When the text around a node has a shape these
//! edits do not handle (a key that opens a list item, a multi-line flow mapping), no fix is
//! offered rather than a risky one.

use crate::context::Cx;
use crate::finding::{Autofix, TextEdit};
use crate::yaml::{DuplicateKey, Entry, Node, Style};
use std::ops::Range;
use std::sync::Arc;

/// Collects the edits of one fix.
pub(crate) struct Edits<'t> {
    file: Arc<str>,
    text: &'t str,
    edits: Vec<TextEdit>,
}

impl<'t> Edits<'t> {
    pub(crate) fn new(cx: &Cx<'t>, source: usize) -> Self {
        Self {
            file: cx.file(source),
            text: cx.text(source),
            edits: Vec::new(),
        }
    }

    /// The source text the edits apply to.
    pub(crate) fn text(&self) -> &'t str {
        self.text
    }

    fn push(&mut self, range: Range<usize>, replacement: impl Into<String>) -> Option<()> {
        if range.start > range.end || range.end > self.text.len() {
            return None;
        }
        self.edits.push(TextEdit {
            file: self.file.clone(),
            start: range.start,
            end: range.end,
            replacement: replacement.into(),
        });
        Some(())
    }

    /// Replaces a plain or quoted scalar with `text` (written plain).
    pub(crate) fn set_scalar(&mut self, node: &Node, text: &str) -> Option<()> {
        if !matches!(node.style, Style::Plain | Style::Quoted) {
            return None;
        }
        self.push(node.span(), text)
    }

    /// Renames the key of `entry` to `name`, keeping the value and everything around it.
    pub(crate) fn rename_key(&mut self, entry: &Entry, name: &str) -> Option<()> {
        let range = entry.key_position.offset..entry.key_end;
        let written = self.text.get(range.clone())?;
        // Only a plain key is renamed in place; a quoted one keeps its quotes.
        if written == entry.key {
            self.push(range, name)
        } else if written.len() == entry.key.len() + 2 {
            self.push(range.start + 1..range.end - 1, name)
        } else {
            None
        }
    }

    /// Removes a `key: value` pair: its whole lines in a block mapping, the pair and a comma in
    /// a flow mapping on one line.
    pub(crate) fn remove_entry(&mut self, span: Range<usize>) -> Option<()> {
        let text = self.text;
        let line_start = text[..span.start].rfind('\n').map_or(0, |at| at + 1);
        let before = &text[line_start..span.start];
        let after_end = text[span.end..]
            .find('\n')
            .map_or(text.len(), |at| span.end + at + 1);
        let after = &text[span.end..after_end];
        if before.chars().all(|c| c == ' ') && only_comment(after) {
            // A block entry on lines of its own; a comment after it stays, on its own line.
            let comment = after.trim();
            let kept = if comment.starts_with('#') {
                format!("{before}{comment}\n")
            } else {
                String::new()
            };
            return self.push(line_start..after_end, kept);
        }
        let before_trimmed = before.trim_end();
        if before_trimmed.ends_with(',') {
            let comma = line_start + before_trimmed.len() - 1;
            return self.push(comma..span.end, "");
        }
        if before_trimmed.ends_with('{') {
            let rest = &text[span.end..after_end];
            let trimmed = rest.trim_start();
            if let Some(next) = trimmed.strip_prefix(',') {
                let skip = rest.len() - next.trim_start().len();
                return self.push(span.start..span.end + skip, "");
            }
        }
        None
    }

    /// Inserts `block` (whole lines, indented, each ending in a line break) on the line after
    /// `entry`, whose key must start its line (after indentation or a list item's `- `) and whose
    /// value must end its line.
    pub(crate) fn insert_block_after(&mut self, entry: &Entry, block: &str) -> Option<()> {
        let text = self.text;
        let end = entry.span().end;
        let key_line_start = text[..entry.key_position.offset]
            .rfind('\n')
            .map_or(0, |at| at + 1);
        let before = &text[key_line_start..entry.key_position.offset];
        if !before.chars().all(|c| c == ' ' || c == '-') {
            return None;
        }
        let line_end = text[end..].find('\n').map(|at| end + at + 1)?;
        if !only_comment(&text[end..line_end]) {
            return None;
        }
        self.push(line_end..line_end, block)
    }

    /// The fix, if every edit was possible.
    pub(crate) fn finish(self, description: impl Into<String>, safe: bool) -> Option<Autofix> {
        let mut edits = self.edits;
        if edits.is_empty() {
            return None;
        }
        edits.sort_by_key(|edit| (edit.start, edit.end));
        if edits.windows(2).any(|pair| pair[0].end > pair[1].start) {
            return None;
        }
        Some(Autofix {
            description: description.into(),
            safe,
            edits,
        })
    }
}

/// Whether the rest of a line (after a value) holds nothing but spaces and a comment.
fn only_comment(rest: &str) -> bool {
    let trimmed = rest.trim_start_matches([' ', '\t']);
    trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('\n') || trimmed == "\r\n"
}

/// The fix for a repeated key: remove the first occurrence, whose value the API server
/// discards anyway.
pub(crate) fn remove_duplicate(
    cx: &Cx<'_>,
    source: usize,
    duplicate: &DuplicateKey,
) -> Option<Autofix> {
    let mut edits = Edits::new(cx, source);
    edits.remove_entry(duplicate.first_span.clone())?;
    edits.finish(
        format!(
            "remove the first `{}` (line {}), whose value is ignored",
            duplicate.key, duplicate.first.line
        ),
        true,
    )
}
