//! One field read: a value of the wrong type is recorded as a [`Problem`], never fatal.

use crate::yaml::{Entry, Node, Position, Value};
use std::time::Duration;

/// Whole seconds of a duration the API wrote as seconds, for rules and messages.
pub(crate) fn whole_seconds(duration: Duration) -> i64 {
    i64::try_from(duration.as_secs()).unwrap_or(i64::MAX)
}

/// A value that would not decode, found while reading.
#[derive(Debug, Clone)]
pub(crate) struct Problem {
    pub(crate) position: Position,
    pub(crate) container: Option<String>,
    pub(crate) message: String,
}

/// An integer setting after defaulting, and where it was written (if it was).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Setting {
    pub(crate) value: i64,
    /// The value as written, before defaulting.
    pub(crate) written: Option<i64>,
    pub(crate) position: Option<Position>,
}

impl Setting {
    /// A setting written as `written` (if at all) whose value after defaulting is `value`.
    pub(super) fn new(written: Option<(i64, Position)>, value: i64) -> Self {
        Setting {
            value,
            written: written.map(|(written, _)| written),
            position: written.map(|(_, position)| position),
        }
    }

    /// Where to point a finding about this setting: where it is written, else `fallback`.
    pub(crate) fn at(&self, fallback: Position) -> Position {
        self.position.unwrap_or(fallback)
    }
}

/// Where `field` (a path relative to `entry`'s value, as the API server's validation names it:
/// `httpGet.port`, `sleep.seconds`, or empty for the value itself) is written: a mapping's key, a
/// scalar's value; the nearest written field around it when it is not written.
pub(crate) fn field_position(entry: &Entry, field: &str) -> Position {
    let mut node = &entry.value;
    let mut position = entry.key_position;
    for segment in field.split('.').filter(|segment| !segment.is_empty()) {
        let Some(inner) = node.entry(segment) else {
            break;
        };
        position = if inner.value.as_map().is_some() {
            inner.key_position
        } else {
            inner.value.position
        };
        node = &inner.value;
    }
    position
}

/// The scalar written at `field` (a path relative to `entry`'s value), if one is.
pub(crate) fn written_scalar<'n>(entry: &'n Entry, field: &str) -> Option<&'n Node> {
    if field.is_empty() {
        return None;
    }
    let node = field
        .split('.')
        .try_fold(&entry.value, |node, segment| node.get(segment))?;
    node.scalar_text().is_some().then_some(node)
}

pub(super) fn read_bool(node: &Node, key: &str, problems: &mut Vec<Problem>) -> Option<bool> {
    let value = node.get(key)?;
    match value.as_bool() {
        Some(flag) => Some(flag),
        None => {
            problems.push(Problem {
                position: value.position,
                container: None,
                message: format!("`{key}` is {}, not a boolean", value.describe()),
            });
            None
        }
    }
}

/// An integer field: `None` when absent or null; a value of another type is a problem.
pub(super) fn read_int(
    node: &Node,
    key: &str,
    problems: &mut Vec<Problem>,
    container: Option<&str>,
) -> Option<(i64, Position)> {
    let value = node.get(key)?;
    match value.as_i64() {
        Some(number) => Some((number, value.position)),
        None => {
            problems.push(Problem {
                position: value.position,
                container: container.map(str::to_owned),
                message: format!("`{key}` is {}, not an integer", value.describe()),
            });
            None
        }
    }
}

pub(super) fn read_labels(node: Option<&Node>) -> Vec<(String, String)> {
    node.and_then(Node::as_map)
        .map(|entries| {
            entries
                .iter()
                .filter_map(|entry| Some((entry.key.clone(), entry.value.scalar_text()?)))
                .collect()
        })
        .unwrap_or_default()
}

/// One `metadata.annotations` entry.
#[derive(Debug, Clone)]
pub(crate) struct Annotation {
    pub(crate) key: String,
    pub(crate) value: String,
    pub(crate) position: Position,
}

pub(super) fn read_annotations(
    metadata: Option<&Node>,
    problems: &mut Vec<Problem>,
) -> Vec<Annotation> {
    let Some(entries) = metadata
        .and_then(|metadata| metadata.get("annotations"))
        .and_then(Node::as_map)
    else {
        return Vec::new();
    };
    entries
        .iter()
        .filter_map(|entry| {
            let value = match &entry.value.value {
                Value::String(text) => text.clone(),
                Value::Null => String::new(),
                _ => {
                    problems.push(Problem {
                        position: entry.value.position,
                        container: None,
                        message: format!(
                            "annotation `{}` is {}; annotation values must be strings (quote it)",
                            entry.key,
                            entry.value.describe()
                        ),
                    });
                    entry.value.scalar_text()?
                }
            };
            Some(Annotation {
                key: entry.key.clone(),
                value,
                position: entry.key_position,
            })
        })
        .collect()
}
