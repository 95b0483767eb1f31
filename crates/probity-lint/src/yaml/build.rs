//! The parser's events built into a tree: aliases expanded (capped), merge keys applied, keys
//! written twice recorded.

use super::scalar::resolve_scalar;
use super::tree::{
    Document, DuplicateKey, Entry, Node, Origin, Position, Style, Value, YamlError, value_text,
};
use granit_parser::{Event, ScalarStyle, Span};
use std::collections::HashMap;

/// Aliases may expand a document to at most this many nodes.
const MAX_EXPANDED_NODES: usize = 1_000_000;

/// A mapping with more entries than this checks for repeated keys with a hash index instead of a
/// scan, so a huge mapping stays linear.
const INDEXED_MAPPING_ENTRIES: usize = 16;

pub(super) enum Frame {
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

pub(super) struct PendingKey {
    text: String,
    position: Position,
    end: usize,
    is_merge: bool,
}

#[derive(Default)]
pub(super) struct Builder {
    origin: Origin,
    stack: Vec<Frame>,
    root: Option<Node>,
    document_position: Position,
    anchors: HashMap<usize, Node>,
    expanded: usize,
    duplicate_keys: Vec<DuplicateKey>,
}

impl Builder {
    /// A builder for a text whose positions are offset by `origin`.
    pub(super) fn new(origin: Origin) -> Self {
        Builder {
            origin,
            ..Builder::default()
        }
    }

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
    pub(super) fn located(&self, mut error: YamlError) -> YamlError {
        error.line += self.origin.lines;
        error.offset += self.origin.offset;
        error
    }

    /// Forgets the document being built (after an error).
    pub(super) fn abandon(&mut self) {
        self.stack.clear();
        self.root = None;
        self.anchors.clear();
        self.expanded = 0;
        self.duplicate_keys.clear();
    }

    pub(super) fn on_event(
        &mut self,
        event: Event<'_>,
        span: Span,
    ) -> Result<Option<Document>, YamlError> {
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

pub(super) fn collection_style(flow: bool) -> Style {
    if flow {
        Style::FlowCollection
    } else {
        Style::BlockCollection
    }
}

/// `<<: *base` (or `<<: [*a, *b]`) adds the merged mappings' keys that the mapping lacks.
pub(super) fn apply_merges(entries: &mut Vec<Entry>, merges: Vec<Node>) {
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
