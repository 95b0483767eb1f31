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

use granit_parser::{Event, Parser, ScalarStyle, ScanError, Span};
use std::collections::HashMap;

/// A place in a source text: 1-based line, 1-based column (in characters) and byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Position {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, counted in characters.
    pub column: usize,
    /// Byte offset from the start of the text.
    pub offset: usize,
}

impl Position {
    /// A position from a 1-based line and column, at an unknown offset (0).
    pub fn new(line: usize, column: usize) -> Self {
        Self {
            line,
            column,
            offset: 0,
        }
    }

    /// A position from a 1-based line and column and a byte offset.
    pub fn at(line: usize, column: usize, offset: usize) -> Self {
        Self {
            line,
            column,
            offset,
        }
    }
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// The value of a node, with scalars resolved as Kubernetes resolves them.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `~`, `null` or an empty value.
    Null,
    /// `true`, `false` (and the YAML 1.1 spellings `yes`, `no`, `on`, `off`).
    Bool(bool),
    /// A plain integer.
    Int(i64),
    /// A plain floating-point number.
    Float(f64),
    /// Any other scalar, and every quoted or block scalar.
    String(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping, in source order. Keys are unique (the last of a repeated key is kept).
    Map(Vec<Entry>),
}

/// One `key: value` pair of a mapping.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The key, as text.
    pub key: String,
    /// Where the key was written.
    pub key_position: Position,
    /// The byte offset just past the key.
    pub key_end: usize,
    /// The value.
    pub value: Node,
}

impl Entry {
    /// The bytes from the key to the end of the value.
    pub fn span(&self) -> std::ops::Range<usize> {
        self.key_position.offset..self.value.end.max(self.key_end)
    }
}

/// How a scalar or collection was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// A plain scalar.
    Plain,
    /// A single- or double-quoted scalar.
    Quoted,
    /// A literal (`|`) or folded (`>`) block scalar.
    Block,
    /// A block collection (indentation).
    BlockCollection,
    /// A flow collection (`{…}` or `[…]`).
    FlowCollection,
}

/// A value and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The value.
    pub value: Value,
    /// Where the value starts. For a block scalar, where its content starts.
    pub position: Position,
    /// The byte offset just past the value (for a block collection, past its last item).
    pub end: usize,
    /// How it was written.
    pub style: Style,
}

impl Node {
    /// The entries, if this is a mapping.
    pub fn as_map(&self) -> Option<&[Entry]> {
        match &self.value {
            Value::Map(entries) => Some(entries),
            _ => None,
        }
    }

    /// The items, if this is a sequence.
    pub fn as_seq(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Seq(items) => Some(items),
            _ => None,
        }
    }

    /// The text, if this is a string scalar.
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::String(text) => Some(text),
            _ => None,
        }
    }

    /// The number, if this is an integer scalar.
    pub fn as_i64(&self) -> Option<i64> {
        match self.value {
            Value::Int(number) => Some(number),
            _ => None,
        }
    }

    /// The boolean, if this is a boolean scalar.
    pub fn as_bool(&self) -> Option<bool> {
        match self.value {
            Value::Bool(flag) => Some(flag),
            _ => None,
        }
    }

    /// Whether this is null.
    pub fn is_null(&self) -> bool {
        matches!(self.value, Value::Null)
    }

    /// The entry for `key`, if this is a mapping that has it.
    pub fn entry(&self, key: &str) -> Option<&Entry> {
        self.as_map()?.iter().find(|entry| entry.key == key)
    }

    /// The value for `key`, if this is a mapping that has it and the value is not null.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key)
            .map(|entry| &entry.value)
            .filter(|value| !value.is_null())
    }

    /// A scalar written back as text (`None` for collections and null).
    pub fn scalar_text(&self) -> Option<String> {
        value_text(&self.value)
    }

    /// What sort of value this is, for messages: "a string", "a mapping"…
    pub fn describe(&self) -> &'static str {
        match self.value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a decimal number",
            Value::String(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }

    /// The bytes the value was written in (for a block scalar, from its content on).
    pub fn span(&self) -> std::ops::Range<usize> {
        self.position.offset..self.end.max(self.position.offset)
    }

    fn size(&self) -> usize {
        match &self.value {
            Value::Seq(items) => 1 + items.iter().map(Node::size).sum::<usize>(),
            Value::Map(entries) => 1 + entries.iter().map(|e| 1 + e.value.size()).sum::<usize>(),
            _ => 1,
        }
    }
}

/// A scalar value written back as text (`None` for collections and null).
fn value_text(value: &Value) -> Option<String> {
    match value {
        Value::Bool(flag) => Some(flag.to_string()),
        Value::Int(number) => Some(number.to_string()),
        Value::Float(number) => Some(number.to_string()),
        Value::String(text) => Some(text.clone()),
        Value::Null | Value::Seq(_) | Value::Map(_) => None,
    }
}

/// A key written more than once in one mapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateKey {
    /// The key.
    pub key: String,
    /// Where it was first written.
    pub first: Position,
    /// The bytes of the first `key: value` pair, which the later one overrides.
    pub first_span: std::ops::Range<usize>,
    /// Where it was written again (the value kept is the last one).
    pub repeated: Position,
}

/// One YAML document of a stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// The root node; `None` for an empty document (only comments, or nothing, between `---`).
    pub root: Option<Node>,
    /// Where the document starts.
    pub position: Position,
    /// Keys written twice in one mapping of this document.
    pub duplicate_keys: Vec<DuplicateKey>,
}

/// Why a YAML document could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct YamlError {
    /// 1-based line of the problem.
    pub line: usize,
    /// 1-based column of the problem.
    pub column: usize,
    /// Byte offset of the problem.
    pub offset: usize,
    /// What is wrong.
    pub message: String,
}

impl YamlError {
    fn at(position: Position, message: impl Into<String>) -> Self {
        Self {
            line: position.line,
            column: position.column,
            offset: position.offset,
            message: message.into(),
        }
    }

    /// Where the problem is.
    pub fn position(&self) -> Position {
        Position::at(self.line, self.column, self.offset)
    }
}

impl From<ScanError> for YamlError {
    fn from(error: ScanError) -> Self {
        let marker = error.marker();
        let message = error.info();
        Self {
            line: marker.line().max(1),
            column: marker.col() + 1,
            offset: marker.byte_offset().unwrap_or(0),
            message: if message.is_empty() {
                "invalid YAML".to_owned()
            } else {
                message
            },
        }
    }
}

/// A document of a stream, or the error that stopped it.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// A document that parsed.
    Document(Document),
    /// A document that did not; the stream goes on after it.
    Invalid(YamlError),
}

/// Aliases may expand a document to at most this many nodes.
const MAX_EXPANDED_NODES: usize = 1_000_000;

/// A mapping with more entries than this checks for repeated keys with a hash index instead of a
/// scan, so a huge mapping stays linear.
const INDEXED_MAPPING_ENTRIES: usize = 16;

/// Parses every document of a YAML stream, handing each (or the error that stopped it) to
/// `each` as soon as it is complete: only one document's tree is in memory at a time.
pub fn parse_stream(text: &str, each: impl FnMut(Parsed)) {
    parse_stream_at(text, Origin::default(), each);
}

/// Where a piece of a larger text starts, so positions read from the piece are positions in the
/// whole text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Origin {
    /// Lines before the piece.
    pub lines: usize,
    /// Bytes before the piece.
    pub offset: usize,
}

/// Parses a piece of a larger text (see [`split_documents`]) as [`parse_stream`] does, with
/// positions in the larger text.
pub fn parse_stream_at(text: &str, origin: Origin, mut each: impl FnMut(Parsed)) {
    let options = granit_parser::options! { emit_comments: false };
    let mut parser = Parser::new_from_str_with_options(text, options);
    let mut builder = Builder {
        origin,
        ..Builder::default()
    };
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

enum Frame {
    Seq {
        items: Vec<Node>,
        position: Position,
        flow: bool,
        anchor: usize,
    },
    Map {
        entries: Vec<Entry>,
        /// Key → index into `entries`, once the mapping is large.
        index: Option<HashMap<String, usize>>,
        merges: Vec<Node>,
        key: Option<PendingKey>,
        position: Position,
        flow: bool,
        anchor: usize,
    },
}

struct PendingKey {
    text: String,
    position: Position,
    end: usize,
    is_merge: bool,
}

#[derive(Default)]
struct Builder {
    origin: Origin,
    stack: Vec<Frame>,
    root: Option<Node>,
    document_position: Position,
    anchors: HashMap<usize, Node>,
    expanded: usize,
    duplicate_keys: Vec<DuplicateKey>,
}

impl Builder {
    fn position(&self, span: &Span) -> Position {
        Position::at(
            self.origin.lines + span.start.line().max(1),
            span.start.col() + 1,
            self.origin.offset + span.start.byte_offset().unwrap_or(0),
        )
    }

    fn end(&self, span: &Span) -> usize {
        self.origin.offset + span.end.byte_offset().unwrap_or(0)
    }

    /// A parser error (positioned in the piece) positioned in the whole text.
    fn located(&self, mut error: YamlError) -> YamlError {
        error.line += self.origin.lines;
        error.offset += self.origin.offset;
        error
    }

    /// Forgets the document being built (after an error).
    fn abandon(&mut self) {
        self.stack.clear();
        self.root = None;
        self.anchors.clear();
        self.expanded = 0;
        self.duplicate_keys.clear();
    }

    fn on_event(&mut self, event: Event<'_>, span: Span) -> Result<Option<Document>, YamlError> {
        let at = self.position(&span);
        match event {
            Event::DocumentStart(..) => {
                self.abandon();
                self.document_position = at;
            }
            Event::DocumentEnd => {
                let document = Document {
                    // An empty document (`---` followed by comments only) is a null scalar.
                    root: self.root.take().filter(|root| !root.is_null()),
                    position: self.document_position,
                    duplicate_keys: std::mem::take(&mut self.duplicate_keys),
                };
                self.anchors.clear();
                self.expanded = 0;
                return Ok(Some(document));
            }
            Event::Scalar(text, style, anchor, tag) => {
                let tag_suffix = tag.as_ref().map(|tag| tag.to_string());
                let is_plain_merge = style == ScalarStyle::Plain && text == "<<";
                let node_style = match style {
                    ScalarStyle::Plain => Style::Plain,
                    ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted => Style::Quoted,
                    _ => Style::Block,
                };
                let value = resolve_scalar(&text, style, tag_suffix.as_deref());
                let node = Node {
                    value,
                    position: at,
                    end: self.end(&span),
                    style: node_style,
                };
                self.complete(node, anchor, is_plain_merge)?;
            }
            Event::Alias(id) => {
                let Some(node) = self.anchors.get(&id) else {
                    return Err(YamlError::at(at, "alias to an unknown anchor"));
                };
                self.expanded += node.size();
                if self.expanded > MAX_EXPANDED_NODES {
                    return Err(YamlError::at(
                        at,
                        format!("aliases expand the document beyond {MAX_EXPANDED_NODES} nodes"),
                    ));
                }
                let node = node.clone();
                self.complete(node, 0, false)?;
            }
            Event::SequenceStart(_, anchor, _) => self.stack.push(Frame::Seq {
                items: Vec::new(),
                position: at,
                flow: at.offset < self.end(&span),
                anchor,
            }),
            Event::MappingStart(_, anchor, _) => self.stack.push(Frame::Map {
                entries: Vec::new(),
                index: None,
                merges: Vec::new(),
                key: None,
                position: at,
                flow: at.offset < self.end(&span),
                anchor,
            }),
            Event::SequenceEnd | Event::MappingEnd => {
                let Some(frame) = self.stack.pop() else {
                    return Err(YamlError::at(at, "unbalanced collection end"));
                };
                let closing = self.end(&span);
                let (node, anchor) = match frame {
                    Frame::Seq {
                        items,
                        position,
                        flow,
                        anchor,
                    } => {
                        let last = items.last().map_or(position.offset, |item| item.end);
                        (
                            Node {
                                value: Value::Seq(items),
                                position,
                                end: if flow { closing } else { last },
                                style: collection_style(flow),
                            },
                            anchor,
                        )
                    }
                    Frame::Map {
                        mut entries,
                        merges,
                        position,
                        flow,
                        anchor,
                        ..
                    } => {
                        apply_merges(&mut entries, merges);
                        let last = entries
                            .iter()
                            .map(|entry| entry.value.end.max(entry.key_end))
                            .max()
                            .unwrap_or(position.offset);
                        (
                            Node {
                                value: Value::Map(entries),
                                position,
                                end: if flow { closing } else { last },
                                style: collection_style(flow),
                            },
                            anchor,
                        )
                    }
                };
                self.complete(node, anchor, false)?;
            }
            _ => {}
        }
        Ok(None)
    }

    fn complete(&mut self, node: Node, anchor: usize, is_merge_key: bool) -> Result<(), YamlError> {
        if anchor != 0 {
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map {
                entries,
                index,
                merges,
                key,
                ..
            }) => match key.take() {
                None => {
                    let (position, end) = (node.position, node.end);
                    let text = match node.value {
                        Value::Null => String::new(),
                        // Moved, not copied: every key of every mapping passes here.
                        Value::String(text) => text,
                        Value::Seq(_) | Value::Map(_) => {
                            return Err(YamlError::at(
                                position,
                                "a mapping key must be a scalar in a Kubernetes manifest",
                            ));
                        }
                        ref scalar => value_text(scalar).unwrap_or_default(),
                    };
                    *key = Some(PendingKey {
                        text,
                        position,
                        end,
                        is_merge: is_merge_key,
                    });
                }
                Some(PendingKey { is_merge: true, .. }) => merges.push(node),
                Some(pending) => {
                    let entry = Entry {
                        key: pending.text,
                        key_position: pending.position,
                        key_end: pending.end,
                        value: node,
                    };
                    let existing = match index {
                        Some(index) => index.get(&entry.key).copied(),
                        None => entries.iter().position(|other| other.key == entry.key),
                    };
                    match existing {
                        Some(at) => {
                            // The API server decodes a repeated key with a warning, and the last
                            // value wins: keep it, remember the first.
                            let first = &entries[at];
                            self.duplicate_keys.push(DuplicateKey {
                                key: entry.key.clone(),
                                first: first.key_position,
                                first_span: first.span(),
                                repeated: entry.key_position,
                            });
                            entries[at] = entry;
                        }
                        None => {
                            if let Some(index) = index {
                                index.insert(entry.key.clone(), entries.len());
                            } else if entries.len() >= INDEXED_MAPPING_ENTRIES {
                                let mut built: HashMap<String, usize> = entries
                                    .iter()
                                    .enumerate()
                                    .map(|(at, entry)| (entry.key.clone(), at))
                                    .collect();
                                built.insert(entry.key.clone(), entries.len());
                                *index = Some(built);
                            }
                            entries.push(entry);
                        }
                    }
                }
            },
        }
        Ok(())
    }
}

fn collection_style(flow: bool) -> Style {
    if flow {
        Style::FlowCollection
    } else {
        Style::BlockCollection
    }
}

/// `<<: *base` (or `<<: [*a, *b]`) adds the merged mappings' keys that the mapping lacks.
fn apply_merges(entries: &mut Vec<Entry>, merges: Vec<Node>) {
    if merges.is_empty() {
        return;
    }
    let mut present: std::collections::HashSet<String> =
        entries.iter().map(|entry| entry.key.clone()).collect();
    for merge in merges {
        let sources = match merge.value {
            Value::Seq(items) => items,
            other => vec![Node {
                value: other,
                position: merge.position,
                end: merge.end,
                style: merge.style,
            }],
        };
        for source in sources {
            if let Value::Map(merged) = source.value {
                for entry in merged {
                    if present.insert(entry.key.clone()) {
                        entries.push(entry);
                    }
                }
            }
        }
    }
}

/// The YAML core schema's tags (`!!int` resolves to `tag:yaml.org,2002:int`).
const CORE_TAG_PREFIX: &str = "tag:yaml.org,2002:";

fn resolve_scalar(text: &str, style: ScalarStyle, tag: Option<&str>) -> Value {
    if let Some(tag) = tag {
        // An explicit core tag decides the type whatever the style: `!!int "3"` is the number
        // 3, as the API server's YAML decoder reads it; `!!str 3` is text. A value the tag
        // cannot hold stays text (the API server would refuse it).
        let text_value = || Value::String(text.to_owned());
        match tag.strip_prefix(CORE_TAG_PREFIX) {
            Some("str") => return text_value(),
            Some("int") => return parse_int(text.trim()).map_or_else(text_value, Value::Int),
            Some("float") => {
                return text
                    .trim()
                    .parse::<f64>()
                    .map_or_else(|_| text_value(), Value::Float);
            }
            Some("bool") => {
                return match text.trim() {
                    "true" | "True" | "TRUE" => Value::Bool(true),
                    "false" | "False" | "FALSE" => Value::Bool(false),
                    _ => text_value(),
                };
            }
            Some("null") => return Value::Null,
            _ if tag == "!" || tag.ends_with(":str") => return text_value(),
            _ => {}
        }
    }
    if style != ScalarStyle::Plain {
        return Value::String(text.to_owned());
    }
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => {
            return Value::Bool(true);
        }
        "false" | "False" | "FALSE" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => {
            return Value::Bool(false);
        }
        _ => {}
    }
    if let Some(number) = parse_int(text) {
        return Value::Int(number);
    }
    let first = text.as_bytes().first().copied().unwrap_or(b'x');
    if (first.is_ascii_digit() || matches!(first, b'-' | b'+' | b'.'))
        && text.bytes().any(|byte| byte.is_ascii_digit())
        && let Ok(number) = text.parse::<f64>()
    {
        return Value::Float(number);
    }
    Value::String(text.to_owned())
}

fn parse_int(text: &str) -> Option<i64> {
    let (negative, digits) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() {
        return None;
    }
    let magnitude = if let Some(hex) = digits.strip_prefix("0x") {
        i64::from_str_radix(hex, 16).ok()?
    } else if digits.bytes().all(|byte| byte.is_ascii_digit()) {
        digits.parse::<i64>().ok()?
    } else {
        return None;
    };
    Some(if negative { -magnitude } else { magnitude })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_tags_decide_the_type() {
        let document = &documents(
            "a: !!int \"3\"\nb: !!str 3\nc: !!float '1.5'\nd: !!bool \"true\"\ne: !!null x\nf: !!int abc\ng: \"3\"\n",
        )[0];
        let root = document.root.as_ref().unwrap();
        assert_eq!(root.get("a").and_then(Node::as_i64), Some(3));
        assert_eq!(root.get("b").and_then(Node::as_str), Some("3"));
        assert!(
            matches!(root.get("c").map(|node| &node.value), Some(Value::Float(x)) if *x == 1.5)
        );
        assert_eq!(root.get("d").and_then(Node::as_bool), Some(true));
        // A null value reads as absent, as `get` documents.
        assert!(root.get("e").is_none());
        assert_eq!(root.get("f").and_then(Node::as_str), Some("abc"));
        assert_eq!(root.get("g").and_then(Node::as_str), Some("3"));
    }

    fn documents(text: &str) -> Vec<Document> {
        parse_documents(text)
            .into_iter()
            .map(|parsed| match parsed {
                Parsed::Document(document) => document,
                Parsed::Invalid(error) => panic!("{error}"),
            })
            .collect()
    }

    fn root(text: &str) -> Node {
        documents(text).remove(0).root.unwrap()
    }

    fn errors(text: &str) -> Vec<YamlError> {
        parse_documents(text)
            .into_iter()
            .filter_map(|parsed| match parsed {
                Parsed::Invalid(error) => Some(error),
                Parsed::Document(_) => None,
            })
            .collect()
    }

    #[test]
    fn records_positions_and_spans_of_keys_and_values() {
        let text = "a: 1\nb:\n  c: [x, 'y']\n  é: {d: e}\n";
        let node = root(text);
        let b = node.entry("b").unwrap();
        assert_eq!(b.key_position, Position::at(2, 1, 5));
        let c = b.value.entry("c").unwrap();
        assert_eq!(c.key_position, Position::at(3, 3, 10));
        let items = c.value.as_seq().unwrap();
        assert_eq!(items[1].position, Position::at(3, 10, 17));
        assert_eq!(items[1].as_str(), Some("y"));
        assert_eq!(&text[items[1].span()], "'y'");
        assert_eq!(&text[c.value.span()], "[x, 'y']");
        let accented = b.value.entry("é").unwrap();
        assert_eq!(&text[accented.span()], "é: {d: e}");
        assert_eq!(accented.value.position.column, 6);
        assert_eq!(&text[b.value.span()], "c: [x, 'y']\n  é: {d: e}");
        assert_eq!(b.value.style, Style::BlockCollection);
        assert_eq!(accented.value.style, Style::FlowCollection);
    }

    #[test]
    fn resolves_scalars_the_kubernetes_way() {
        let node = root("a: 10\nb: '10'\nc: yes\nd: ~\ne: 0x1F\nf: -3\ng: 1.5\nh: 10s\n");
        assert_eq!(node.get("a").unwrap().as_i64(), Some(10));
        assert_eq!(node.get("b").unwrap().as_str(), Some("10"));
        assert_eq!(node.get("c").unwrap().as_bool(), Some(true));
        assert!(node.get("d").is_none());
        assert_eq!(node.get("e").unwrap().as_i64(), Some(31));
        assert_eq!(node.get("f").unwrap().as_i64(), Some(-3));
        assert_eq!(node.get("g").unwrap().value, Value::Float(1.5));
        assert_eq!(node.get("h").unwrap().as_str(), Some("10s"));
    }

    #[test]
    fn splits_multi_document_streams_and_keeps_empty_documents() {
        let documents = documents("a: 1\n---\n# only a comment\n---\nb: 2\n");
        assert_eq!(documents.len(), 3);
        assert!(documents[1].root.is_none());
        assert_eq!(documents[2].position.line, 4);
    }

    #[test]
    fn keeps_the_last_of_a_repeated_key_and_records_the_first() {
        let text = "a: 1\nb: 2\na: 3\n";
        let document = documents(text).remove(0);
        let node = document.root.unwrap();
        assert_eq!(node.get("a").unwrap().as_i64(), Some(3));
        assert_eq!(node.as_map().unwrap().len(), 2);
        let duplicate = &document.duplicate_keys[0];
        assert_eq!(duplicate.key, "a");
        assert_eq!((duplicate.first.line, duplicate.repeated.line), (1, 3));
        assert_eq!(&text[duplicate.first_span.clone()], "a: 1");
    }

    #[test]
    fn finds_repeated_keys_in_large_mappings() {
        let mut text: String = (0..100).map(|key| format!("k{key}: {key}\n")).collect();
        text.push_str("k7: again\n");
        let document = documents(&text).remove(0);
        assert_eq!(document.duplicate_keys.len(), 1);
        assert_eq!(document.duplicate_keys[0].key, "k7");
        let node = document.root.unwrap();
        assert_eq!(node.as_map().unwrap().len(), 100);
        assert_eq!(node.get("k7").unwrap().as_str(), Some("again"));
    }

    #[test]
    fn reports_a_broken_document_and_reads_the_next() {
        let text = "a: [1, 2\nb: 3\n---\nc: 4\n---\nd: {\n---\ne: 5\n";
        let parsed = parse_documents(text);
        let kinds: Vec<&str> = parsed
            .iter()
            .map(|parsed| match parsed {
                Parsed::Document(_) => "document",
                Parsed::Invalid(_) => "invalid",
            })
            .collect();
        assert_eq!(kinds, ["invalid", "document", "invalid", "document"]);
        let Parsed::Invalid(first) = &parsed[0] else {
            unreachable!()
        };
        assert!(first.line >= 1 && first.line <= 2, "{first:?}");
        let Parsed::Document(last) = &parsed[3] else {
            unreachable!()
        };
        assert_eq!(
            last.root.as_ref().unwrap().get("e").unwrap().as_i64(),
            Some(5)
        );
        assert_eq!(last.root.as_ref().unwrap().position.line, 8);
    }

    #[test]
    fn pieces_parse_to_the_same_positions_as_the_whole() {
        let mut text = String::from("%YAML 1.1\n---\na: 0\n");
        for index in 1..50 {
            text.push_str(&format!("---\n# doc {index}\nkey: {index}\nlist: [x, é]\n"));
        }
        text.push_str("---\nbroken: [\n---\nlast: yes\n");
        let whole = parse_documents(&text);
        for pieces in [1, 2, 3, 7] {
            let mut parsed = Vec::new();
            let parts = split_documents(&text, pieces);
            assert_eq!(parts.len(), pieces, "{pieces}");
            for (origin, range) in parts {
                parse_stream_at(&text[range], origin, |document| parsed.push(document));
            }
            assert_eq!(parsed, whole, "{pieces} pieces");
        }
    }

    #[test]
    fn reports_syntax_errors_with_position() {
        let error = errors("a:\n  b: [1, 2\nc: 3\n").remove(0);
        assert!(error.line >= 2, "{error:?}");
    }

    #[test]
    fn expands_aliases_and_merge_keys() {
        let node = root("base: &b {x: 1, y: 2}\nuse:\n  <<: *b\n  y: 3\n");
        let merged = node.get("use").unwrap();
        assert_eq!(merged.get("x").unwrap().as_i64(), Some(1));
        assert_eq!(merged.get("y").unwrap().as_i64(), Some(3));
    }

    #[test]
    fn refuses_alias_bombs() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for level in 1..8 {
            let previous = level - 1;
            text.push_str(&format!(
                "a{level}: &a{level} [*a{previous}, *a{previous}, *a{previous}, *a{previous}, *a{previous}, *a{previous}, *a{previous}, *a{previous}, *a{previous}, *a{previous}]\n"
            ));
        }
        let error = errors(&text).remove(0);
        assert!(error.message.contains("aliases"), "{error}");
    }
}
