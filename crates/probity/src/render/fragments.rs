//! The parts of a check's JSON that only its published result decides, written once per result.
//!
//! A JSON answer for 20 checks is mostly the same bytes from one answer to the next: names,
//! dependencies, durations, counters and measurements change only when a poll publishes a new
//! result, every few seconds, while a dashboard or a load balancer may ask many times a second.
//! serde_json escapes every key and string byte by byte and formats every float on each answer,
//! which made a JSON render of 20 checks cost some 9 µs. So the store writes these parts — with
//! serde_json, as whole JSON values — when it publishes a check's new state
//! ([`Prerendered::fill`]), and an answer copies them between the few values it must compute at
//! the instant it is rendered: status, reason, staleness and timestamps.
//!
//! The pieces are cut exactly where those values go, so an answer is byte for byte what
//! serializing the whole entry would give; `json`'s tests hold the two equal.

use super::json::{component_type, finite, millis};
use crate::snapshot::CheckState;
use serde::Serialize;
use std::fmt;
use std::sync::OnceLock;

/// A check's prerendered JSON, kept with the published state it describes.
///
/// A copy of a state starts empty (the store copies the previous state to change it, and the
/// copy's pieces would describe the old one) and is filled when the copy is published; a
/// state filled by nobody is filled on its first JSON answer.
#[derive(Default)]
pub(crate) struct Prerendered(OnceLock<CheckJson>);

impl Prerendered {
    /// The pieces for `check`, written now if nobody wrote them yet.
    pub(crate) fn get(&self, check: &CheckState) -> &CheckJson {
        self.0.get_or_init(|| CheckJson::of(check))
    }

    /// Writes the pieces for `check` now, so that no answer pays for them.
    pub(crate) fn fill(&self, check: &CheckState) {
        self.get(check);
    }
}

impl Clone for Prerendered {
    fn clone(&self) -> Self {
        Prerendered::default()
    }
}

/// The pieces are a function of the rest of the state: they never make two states differ.
impl PartialEq for Prerendered {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl fmt::Debug for Prerendered {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(if self.0.get().is_some() {
            "Prerendered(filled)"
        } else {
            "Prerendered(empty)"
        })
    }
}

/// The pieces of one check's entries, in the order they are written.
pub(crate) struct CheckJson {
    /// `application/json`: `{"name":…,"kind":"check"`; then come tier, status and reason.
    pub(crate) head: Box<str>,
    /// `,"dependency":…,"healthy":…,"stale":`; then `true` or `false`.
    pub(crate) health: Box<str>,
    /// `,"duration_ms":…,"consecutive_successes":…,"consecutive_failures":…`; then the
    /// timestamps.
    pub(crate) counts: Box<str>,
    /// `,"measurements":[…]}`, or `}` without measurements.
    pub(crate) tail: Box<str>,
    /// `application/health+json`: each item's key and fields up to its `"status":` —
    /// `"db:responseTime":[{"componentType":…,"observedValue":…,"observedUnit":"ms","status":`
    /// first, then one per measurement; each is followed by status, time, output and `}]`.
    pub(crate) items: Box<[Box<str>]>,
}

/// A buffer of JSON text, written from literal pieces and serialized values.
///
/// Text is kept as a `String` throughout: literal pieces are `&str`s already, and a value is
/// serialized into a small scratch buffer whose few bytes alone are checked to be UTF-8 — not
/// the whole answer, most of which is prerendered pieces.
pub(crate) struct Out {
    text: String,
    scratch: Vec<u8>,
}

impl Out {
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Out {
            text: String::with_capacity(capacity),
            scratch: Vec::new(),
        }
    }

    /// Literal JSON text.
    pub(crate) fn raw(&mut self, text: &str) {
        self.text.push_str(text);
    }

    /// How much is written: where the next piece starts.
    pub(crate) fn len(&self) -> usize {
        self.text.len()
    }

    /// Writes again what was written at `range`.
    pub(crate) fn repeat(&mut self, range: std::ops::Range<usize>) {
        self.text.extend_from_within(range);
    }

    /// A value, through serde_json. Writing into memory cannot fail, the values written here
    /// (strings, numbers, sequences of them, derived structs) always serialize, and what
    /// serde_json writes is UTF-8.
    pub(crate) fn value(&mut self, value: &(impl Serialize + ?Sized)) {
        self.scratch.clear();
        if serde_json::to_writer(&mut self.scratch, value).is_ok()
            && let Ok(json) = std::str::from_utf8(&self.scratch)
        {
            self.text.push_str(json);
        }
    }

    /// `,"key":value`.
    fn field(&mut self, key: &str, value: &(impl Serialize + ?Sized)) {
        self.raw(",\"");
        self.raw(key);
        self.raw("\":");
        self.value(value);
    }

    pub(crate) fn into_string(self) -> String {
        self.text
    }

    fn into_boxed(self) -> Box<str> {
        self.text.into_boxed_str()
    }
}

/// Serializes as serde_json writes a map key: `"name:measurement"`.
struct ItemKey<'a>(&'a str, &'a str);

impl Serialize for ItemKey<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&format_args!("{}:{}", self.0, self.1))
    }
}

impl CheckJson {
    fn of(check: &CheckState) -> Self {
        let last = check.last();
        let mut head = Out::with_capacity(64);
        head.raw("{\"name\":");
        head.value(check.name());
        head.raw(",\"kind\":\"check\"");

        let mut health = Out::with_capacity(64);
        if let Some(dependency) = check.dependency() {
            health.field("dependency", dependency);
        }
        health.field("healthy", &check.is_healthy());
        health.raw(",\"stale\":");

        let mut counts = Out::with_capacity(96);
        if let Some(last) = last {
            counts.field("duration_ms", &millis(last.duration));
        }
        counts.field("consecutive_successes", &check.consecutive_successes());
        counts.field("consecutive_failures", &check.consecutive_failures());

        let measurements = last.map_or(&[][..], |last| last.measurements.as_slice());
        let mut tail = Out::with_capacity(32 + measurements.len() * 64);
        if !measurements.is_empty() {
            tail.raw(",\"measurements\":[");
            for (index, measurement) in measurements.iter().enumerate() {
                if index > 0 {
                    tail.raw(",");
                }
                tail.raw("{\"name\":");
                tail.value(measurement.name.as_str());
                tail.raw(",\"value\":");
                tail.value(&finite(measurement.value));
                if let Some(unit) = &measurement.unit {
                    tail.field("unit", unit.as_str());
                }
                tail.raw("}");
            }
            tail.raw("]");
        }
        tail.raw("}");

        let kind = component_type(check.dependency());
        let mut items = Vec::with_capacity(1 + measurements.len());
        let mut item = Out::with_capacity(96);
        item.value(&ItemKey(check.name(), "responseTime"));
        item.raw(":[{\"componentType\":");
        item.value(kind);
        if let Some(last) = last {
            item.field("observedValue", &millis(last.duration));
            item.field("observedUnit", "ms");
        }
        item.raw(",\"status\":");
        items.push(item.into_boxed());
        for measurement in measurements {
            let mut item = Out::with_capacity(96);
            item.value(&ItemKey(check.name(), &measurement.name));
            item.raw(":[{\"componentType\":");
            item.value(kind);
            if let Some(value) = finite(measurement.value) {
                item.field("observedValue", &value);
            }
            if let Some(unit) = &measurement.unit {
                item.field("observedUnit", unit.as_str());
            }
            item.raw(",\"status\":");
            items.push(item.into_boxed());
        }

        CheckJson {
            head: head.into_boxed(),
            health: health.into_boxed(),
            counts: counts.into_boxed(),
            tail: tail.into_boxed(),
            items: items.into_boxed_slice(),
        }
    }
}
