//! YAML documents as trees in which every node and every mapping key knows where it was written.
//!
//! Kubernetes reads manifests through `sigs.k8s.io/yaml` (go-yaml v2 turned into JSON), so plain
//! scalars resolve the YAML 1.1 way: `true`/`yes`/`on` are booleans, `~` and an empty value are
//! null, digits are integers. Quoted and block scalars are always strings. A key written twice in
//! one mapping is an error, as it is for go-yaml ("key already set in map"). Aliases are expanded
//! (with a cap, so a "billion laughs" document is an error rather than an out-of-memory kill) and
//! `<<` merge keys are applied, as go-yaml does.

use granit_parser::{Event, Parser, ScalarStyle, ScanError};
use std::collections::HashMap;

/// A place in a source text: 1-based line and 1-based column (in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Position {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, counted in characters.
    pub column: usize,
}

impl Position {
    /// A position from a 1-based line and column.
    pub fn new(line: usize, column: usize) -> Self {
        Self { line, column }
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
    /// A mapping, in source order. Keys are unique.
    Map(Vec<Entry>),
}

/// One `key: value` pair of a mapping.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The key, as text.
    pub key: String,
    /// Where the key was written.
    pub key_position: Position,
    /// The value.
    pub value: Node,
}

/// A value and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The value.
    pub value: Value,
    /// Where the value starts.
    pub position: Position,
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
        match &self.value {
            Value::Bool(flag) => Some(flag.to_string()),
            Value::Int(number) => Some(number.to_string()),
            Value::Float(number) => Some(number.to_string()),
            Value::String(text) => Some(text.clone()),
            Value::Null | Value::Seq(_) | Value::Map(_) => None,
        }
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

    fn size(&self) -> usize {
        match &self.value {
            Value::Seq(items) => 1 + items.iter().map(Node::size).sum::<usize>(),
            Value::Map(entries) => 1 + entries.iter().map(|e| 1 + e.value.size()).sum::<usize>(),
            _ => 1,
        }
    }
}

/// One YAML document of a stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// The root node; `None` for an empty document (only comments, or nothing, between `---`).
    pub root: Option<Node>,
    /// Where the document starts.
    pub position: Position,
}

/// Why a YAML text could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct YamlError {
    /// 1-based line of the problem.
    pub line: usize,
    /// 1-based column of the problem.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl YamlError {
    fn at(position: Position, message: impl Into<String>) -> Self {
        Self {
            line: position.line,
            column: position.column,
            message: message.into(),
        }
    }
}

impl From<ScanError> for YamlError {
    fn from(error: ScanError) -> Self {
        let marker = error.marker();
        let message = error.info();
        Self {
            line: marker.line().max(1),
            column: marker.col() + 1,
            message: if message.is_empty() {
                "invalid YAML".to_owned()
            } else {
                message
            },
        }
    }
}

/// Aliases may expand a document to at most this many nodes.
const MAX_EXPANDED_NODES: usize = 1_000_000;

/// Parses every document of a YAML stream.
pub fn parse_documents(text: &str) -> Result<Vec<Document>, YamlError> {
    let options = granit_parser::options! { emit_comments: false };
    let mut builder = Builder::default();
    for event in Parser::new_from_str_with_options(text, options) {
        let (event, span) = event?;
        let position = Position::new(span.start.line().max(1), span.start.col() + 1);
        builder.on_event(event, position)?;
    }
    Ok(builder.documents)
}

enum Frame {
    Seq {
        items: Vec<Node>,
        position: Position,
        anchor: usize,
    },
    Map {
        entries: Vec<Entry>,
        merges: Vec<Node>,
        key: Option<(String, Position, bool)>,
        position: Position,
        anchor: usize,
    },
}

#[derive(Default)]
struct Builder {
    documents: Vec<Document>,
    stack: Vec<Frame>,
    root: Option<Node>,
    document_position: Position,
    anchors: HashMap<usize, Node>,
    expanded: usize,
}

impl Builder {
    fn on_event(&mut self, event: Event<'_>, position: Position) -> Result<(), YamlError> {
        match event {
            Event::DocumentStart(..) => {
                self.root = None;
                self.anchors.clear();
                self.document_position = position;
            }
            Event::DocumentEnd => {
                self.documents.push(Document {
                    // An empty document (`---` followed by comments only) is a null scalar.
                    root: self.root.take().filter(|root| !root.is_null()),
                    position: self.document_position,
                });
            }
            Event::Scalar(text, style, anchor, tag) => {
                let tag_suffix = tag.as_ref().map(|tag| tag.to_string());
                let value = resolve_scalar(&text, style, tag_suffix.as_deref());
                let is_plain_merge = style == ScalarStyle::Plain && text == "<<";
                self.complete(Node { value, position }, anchor, is_plain_merge)?;
            }
            Event::Alias(id) => {
                let Some(node) = self.anchors.get(&id) else {
                    return Err(YamlError::at(position, "alias to an unknown anchor"));
                };
                self.expanded += node.size();
                if self.expanded > MAX_EXPANDED_NODES {
                    return Err(YamlError::at(
                        position,
                        format!("aliases expand the document beyond {MAX_EXPANDED_NODES} nodes"),
                    ));
                }
                let node = node.clone();
                self.complete(node, 0, false)?;
            }
            Event::SequenceStart(_, anchor, _) => self.stack.push(Frame::Seq {
                items: Vec::new(),
                position,
                anchor,
            }),
            Event::MappingStart(_, anchor, _) => self.stack.push(Frame::Map {
                entries: Vec::new(),
                merges: Vec::new(),
                key: None,
                position,
                anchor,
            }),
            Event::SequenceEnd | Event::MappingEnd => {
                let Some(frame) = self.stack.pop() else {
                    return Err(YamlError::at(position, "unbalanced collection end"));
                };
                let (node, anchor) = match frame {
                    Frame::Seq {
                        items,
                        position,
                        anchor,
                    } => (
                        Node {
                            value: Value::Seq(items),
                            position,
                        },
                        anchor,
                    ),
                    Frame::Map {
                        mut entries,
                        merges,
                        position,
                        anchor,
                        ..
                    } => {
                        apply_merges(&mut entries, merges);
                        (
                            Node {
                                value: Value::Map(entries),
                                position,
                            },
                            anchor,
                        )
                    }
                };
                self.complete(node, anchor, false)?;
            }
            _ => {}
        }
        Ok(())
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
                merges,
                key,
                ..
            }) => match key.take() {
                None => {
                    let text = match &node.value {
                        Value::Null => String::new(),
                        Value::Seq(_) | Value::Map(_) => {
                            return Err(YamlError::at(
                                node.position,
                                "a mapping key must be a scalar in a Kubernetes manifest",
                            ));
                        }
                        _ => node.scalar_text().unwrap_or_default(),
                    };
                    *key = Some((text, node.position, is_merge_key));
                }
                Some((key, key_position, true)) => {
                    let _ = (key, key_position);
                    merges.push(node);
                }
                Some((key, key_position, false)) => {
                    if entries.iter().any(|entry| entry.key == key) {
                        return Err(YamlError::at(
                            key_position,
                            format!("key `{key}` already set in this mapping"),
                        ));
                    }
                    entries.push(Entry {
                        key,
                        key_position,
                        value: node,
                    });
                }
            },
        }
        Ok(())
    }
}

/// `<<: *base` (or `<<: [*a, *b]`) adds the merged mappings' keys that the mapping lacks.
fn apply_merges(entries: &mut Vec<Entry>, merges: Vec<Node>) {
    for merge in merges {
        let sources = match merge.value {
            Value::Seq(items) => items,
            other => vec![Node {
                value: other,
                position: merge.position,
            }],
        };
        for source in sources {
            if let Value::Map(merged) = source.value {
                for entry in merged {
                    if !entries.iter().any(|existing| existing.key == entry.key) {
                        entries.push(entry);
                    }
                }
            }
        }
    }
}

fn resolve_scalar(text: &str, style: ScalarStyle, tag: Option<&str>) -> Value {
    if let Some(tag) = tag
        && (tag.ends_with(":str") || tag == "!")
    {
        return Value::String(text.to_owned());
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

    fn root(text: &str) -> Node {
        parse_documents(text).unwrap().remove(0).root.unwrap()
    }

    #[test]
    fn records_positions_of_keys_and_values() {
        let node = root("a: 1\nb:\n  c: [x, 'y']\n");
        let b = node.entry("b").unwrap();
        assert_eq!(b.key_position, Position::new(2, 1));
        let c = b.value.entry("c").unwrap();
        assert_eq!(c.key_position, Position::new(3, 3));
        let items = c.value.as_seq().unwrap();
        assert_eq!(items[1].position, Position::new(3, 10));
        assert_eq!(items[1].as_str(), Some("y"));
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
        let documents = parse_documents("a: 1\n---\n# only a comment\n---\nb: 2\n").unwrap();
        assert_eq!(documents.len(), 3);
        assert!(documents[1].root.is_none());
        assert_eq!(documents[2].position.line, 4);
    }

    #[test]
    fn rejects_duplicate_keys_with_their_position() {
        let error = parse_documents("a: 1\nb: 2\na: 3\n").unwrap_err();
        assert_eq!((error.line, error.column), (3, 1));
        assert!(error.message.contains("`a`"), "{error}");
    }

    #[test]
    fn reports_syntax_errors_with_position() {
        let error = parse_documents("a:\n  b: [1, 2\nc: 3\n").unwrap_err();
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
        let error = parse_documents(&text).unwrap_err();
        assert!(error.message.contains("aliases"), "{error}");
    }
}
