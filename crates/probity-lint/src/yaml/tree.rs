//! The tree: nodes, mapping entries and the positions they were written at.

use granit_parser::ScanError;

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

    pub(super) fn size(&self) -> usize {
        match &self.value {
            Value::Seq(items) => 1 + items.iter().map(Node::size).sum::<usize>(),
            Value::Map(entries) => 1 + entries.iter().map(|e| 1 + e.value.size()).sum::<usize>(),
            _ => 1,
        }
    }
}

/// A scalar value written back as text (`None` for collections and null).
pub(super) fn value_text(value: &Value) -> Option<String> {
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
    pub(super) fn at(position: Position, message: impl Into<String>) -> Self {
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

/// Where a piece of a larger text starts, so positions read from the piece are positions in the
/// whole text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Origin {
    /// Lines before the piece.
    pub lines: usize,
    /// Bytes before the piece.
    pub offset: usize,
}
