//! YAML documents as trees in which every node and every mapping key knows where it was written:
//! line, column and byte offset, so findings can point at it and fixes can edit it in place.
//!
//! Kubernetes reads manifests through `sigs.k8s.io/yaml` (go-yaml v2 turned into JSON), so plain
//! scalars resolve the YAML 1.1 way: `true`/`yes`/`on` are booleans, `~` and an empty value are
//! null, digits are integers. Quoted and block scalars are always strings. A key written twice in
//! one mapping keeps its last value, as the API server does when it decodes such a document with
//! a warning; the repetition is recorded on the [`Document`]. Aliases are expanded (with a cap, so
//! a "billion laughs" document is an error rather than an out-of-memory kill) and `<<` merge keys
//! are applied, as go-yaml does.
//!
//! A document that does not parse is reported as [`Parsed::Invalid`] and parsing resumes at the
//! next `---`, so one broken document never hides the others of the same stream.
//!
//! The tree's types are in `tree.rs`, the parser's events are built into it in `build.rs`, and
//! plain scalars are resolved in `scalar.rs`.

mod build;
mod scalar;
#[cfg(test)]
mod tests;
mod tree;

pub use tree::{
    Document, DuplicateKey, Entry, Node, Origin, Parsed, Position, Style, Value, YamlError,
};

use build::Builder;
use granit_parser::Parser;

/// Parses every document of a YAML stream, handing each (or the error that stopped it) to
/// `each` as soon as it is complete: only one document's tree is in memory at a time.
pub fn parse_stream(text: &str, each: impl FnMut(Parsed)) {
    parse_stream_at(text, Origin::default(), each);
}

/// Parses a piece of a larger text (see [`split_documents`]) as [`parse_stream`] does, with
/// positions in the larger text.
pub fn parse_stream_at(text: &str, origin: Origin, mut each: impl FnMut(Parsed)) {
    let options = granit_parser::options! { emit_comments: false };
    let mut parser = Parser::new_from_str_with_options(text, options);
    let mut builder = Builder::new(origin);
    loop {
        let failure = match parser.next_event() {
            None => break,
            Some(Ok((event, span))) => match builder.on_event(event, span) {
                Ok(Some(document)) => {
                    each(Parsed::Document(document));
                    continue;
                }
                Ok(None) => continue,
                Err(error) => error,
            },
            Some(Err(error)) => builder.located(YamlError::from(error)),
        };
        each(Parsed::Invalid(failure));
        builder.abandon();
        match parser.proceed_next_document() {
            Ok(true) => {}
            Ok(false) => break,
            Err(error) => {
                each(Parsed::Invalid(builder.located(YamlError::from(error))));
                break;
            }
        }
    }
}

/// Splits `text` into at most `pieces` parts of about equal size, each starting at a document
/// marker (`---` at the start of a line, after any `%` directives that precede it), so the parts
/// can be parsed on their own, in parallel. YAML forbids a `---` line at column 0 inside any
/// scalar, so a cut there never splits a document.
pub fn split_documents(text: &str, pieces: usize) -> Vec<(Origin, std::ops::Range<usize>)> {
    let mut cuts = vec![Origin::default()];
    if pieces > 1 {
        let share = text.len() / pieces;
        let mut line = 0;
        let mut line_start = 0;
        // The start of the run of directive lines just before the current line, if any.
        let mut directives: Option<Origin> = None;
        let bytes = text.as_bytes();
        while line_start < text.len() {
            let line_end = memchr_newline(bytes, line_start);
            let content = &text[line_start..line_end];
            let here = Origin {
                lines: line,
                offset: line_start,
            };
            let is_marker = content
                .strip_prefix("---")
                .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r']));
            if is_marker {
                let cut = directives.unwrap_or(here);
                let wanted = cuts.len() * share;
                if cut.offset >= wanted && cut.offset > cuts[cuts.len() - 1].offset {
                    cuts.push(cut);
                    if cuts.len() == pieces {
                        break;
                    }
                }
                directives = None;
            } else if content.starts_with('%') {
                directives.get_or_insert(here);
            } else {
                directives = None;
            }
            line += 1;
            line_start = line_end + 1;
        }
    }
    let mut parts = Vec::with_capacity(cuts.len());
    for (index, cut) in cuts.iter().enumerate() {
        let end = cuts.get(index + 1).map_or(text.len(), |next| next.offset);
        parts.push((*cut, cut.offset..end));
    }
    parts
}

/// The index of the next `\n` at or after `from`, or the end of the text.
fn memchr_newline(bytes: &[u8], from: usize) -> usize {
    bytes[from..]
        .iter()
        .position(|byte| *byte == b'\n')
        .map_or(bytes.len(), |at| from + at)
}

/// Parses every document of a YAML stream into a list (see [`parse_stream`]).
pub fn parse_documents(text: &str) -> Vec<Parsed> {
    let mut documents = Vec::new();
    parse_stream(text, |parsed| documents.push(parsed));
    documents
}
