//! Reading a scenario's text: YAML or TOML into a value tree, and the value tree into the file types with errors in the user's words.
//!
//! The value tree is read by a deserializer of our own rather than serde's defaults, for
//! three reasons: a mapping is required where the file types have fields (serde would also
//! accept a list, matching its items to the fields in order); every error names the field it
//! is about (`faults[0].at`), built up as the error travels out of the tree; and messages say
//! what was expected and found in words a scenario's author knows ("a whole number", "a
//! list"), never a Rust type name.

use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// The largest scenario or contract file read (1 MiB, the bound every probity tool puts on a
/// file it is given): far more than any real one, small enough that a log file given by
/// mistake is refused at once. The file is read by [`probity_contract::file::read_text`],
/// which refuses a FIFO or a device before opening it.
pub const MAX_FILE_BYTES: u64 = probity_contract::file::MAX_TEXT_BYTES;

/// A step in a field path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Key(String),
    Index(usize),
}

/// A value that does not fit the file types: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ValueError {
    /// Outermost first.
    path: Vec<Segment>,
    message: String,
}

impl ValueError {
    /// The dotted field path (`faults[0].at`), or `.` for the document itself.
    pub(crate) fn field(&self) -> String {
        path_text(&self.path)
    }

    /// What is wrong.
    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    fn within(mut self, segment: Segment) -> Self {
        self.path.insert(0, segment);
        self
    }
}

fn path_text(path: &[Segment]) -> String {
    let mut text = String::new();
    for segment in path {
        match segment {
            Segment::Key(key) => {
                if !text.is_empty() {
                    text.push('.');
                }
                text.push_str(key);
            }
            Segment::Index(index) => text.push_str(&format!("[{index}]")),
        }
    }
    if text.is_empty() { ".".into() } else { text }
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field(), self.message)
    }
}

impl std::error::Error for ValueError {}

impl de::Error for ValueError {
    fn custom<T: fmt::Display>(message: T) -> Self {
        ValueError {
            path: Vec::new(),
            message: message.to_string(),
        }
    }

    fn invalid_type(found: de::Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        Self::custom(format_args!(
            "expected {expected}, found {}",
            describe(found)
        ))
    }

    fn invalid_value(found: de::Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        Self::custom(format_args!(
            "expected {expected}, found {}",
            describe(found)
        ))
    }

    fn invalid_length(length: usize, expected: &dyn de::Expected) -> Self {
        Self::custom(format_args!("expected {expected}, found {length} items"))
    }
}

/// A serde `Unexpected` in words.
fn describe(found: de::Unexpected<'_>) -> String {
    match found {
        de::Unexpected::Bool(value) => format!("`{value}`"),
        de::Unexpected::Unsigned(value) => format!("the number {value}"),
        de::Unexpected::Signed(value) => format!("the number {value}"),
        de::Unexpected::Float(value) => format!("the number {value}"),
        de::Unexpected::Char(value) => format!("the text `{value}`"),
        de::Unexpected::Str(value) => format!("the text `{value}`"),
        de::Unexpected::Unit | de::Unexpected::Option => "nothing".into(),
        de::Unexpected::Seq => "a list".into(),
        de::Unexpected::Map => "a mapping".into(),
        other => other.to_string(),
    }
}

/// A value in words, for errors.
pub(crate) fn describe_value(value: &Value) -> String {
    match value {
        Value::Null => "nothing".into(),
        Value::Bool(flag) => format!("`{flag}`"),
        Value::Number(number) => format!("the number {number}"),
        Value::String(text) => {
            let shown: String = text.chars().take(40).collect();
            if shown.len() < text.len() {
                format!("the text `{shown}…`")
            } else {
                format!("the text `{shown}`")
            }
        }
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a mapping".into(),
    }
}

/// Reads a value tree into `T`.
pub(crate) fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, ValueError> {
    T::deserialize(Strict(value))
}

/// Reads a value tree into `T`, with errors placed under `field` (`faults[0]`).
pub(crate) fn from_value_at<T: DeserializeOwned>(
    value: Value,
    field: &str,
) -> Result<T, crate::error::Invalid> {
    from_value(value).map_err(|error| {
        let inner = error.field();
        let path = if inner == "." {
            field.to_string()
        } else if inner.starts_with('[') {
            format!("{field}{inner}")
        } else {
            format!("{field}.{inner}")
        };
        crate::error::Invalid::new(path, error.message)
    })
}

/// The deserializer over a value tree.
struct Strict(Value);

impl Strict {
    fn wrong(&self, expected: &str) -> ValueError {
        de::Error::custom(format_args!(
            "expected {expected}, found {}",
            describe_value(&self.0)
        ))
    }

    fn whole_number(&self, low: i128, high: i128) -> Result<i128, ValueError> {
        let wanted = || match (low, high) {
            (0, high) if high >= i128::from(u32::MAX) => "a whole number, 0 or more".to_string(),
            (0, high) => format!("a whole number from 0 to {high}"),
            (low, _) if low <= i128::from(i32::MIN) => "a whole number".to_string(),
            (low, high) => format!("a whole number from {low} to {high}"),
        };
        let Value::Number(number) = &self.0 else {
            return Err(self.wrong(&wanted()));
        };
        let value = number
            .as_i64()
            .map(i128::from)
            .or_else(|| number.as_u64().map(i128::from));
        match value {
            Some(value) if (low..=high).contains(&value) => Ok(value),
            _ => Err(self.wrong(&wanted())),
        }
    }
}

macro_rules! whole_numbers {
    ($($method:ident: $kind:ty => $visit:ident),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
                let value =
                    self.whole_number(i128::from(<$kind>::MIN), i128::from(<$kind>::MAX))?;
                visitor.$visit(value as $kind)
            }
        )*
    };
}

impl<'de> de::Deserializer<'de> for Strict {
    type Error = ValueError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(flag) => visitor.visit_bool(flag),
            Value::Number(number) => {
                if let Some(value) = number.as_u64() {
                    visitor.visit_u64(value)
                } else if let Some(value) = number.as_i64() {
                    visitor.visit_i64(value)
                } else {
                    visitor.visit_f64(number.as_f64().unwrap_or(f64::NAN))
                }
            }
            Value::String(text) => visitor.visit_string(text),
            Value::Array(items) => visitor.visit_seq(Items::new(items)),
            Value::Object(entries) => visitor.visit_map(Entries::new(entries)),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        match self.0 {
            Value::Bool(flag) => visitor.visit_bool(flag),
            _ => Err(self.wrong("true or false")),
        }
    }

    whole_numbers! {
        deserialize_i8: i8 => visit_i8,
        deserialize_i16: i16 => visit_i16,
        deserialize_i32: i32 => visit_i32,
        deserialize_i64: i64 => visit_i64,
        deserialize_u8: u8 => visit_u8,
        deserialize_u16: u16 => visit_u16,
        deserialize_u32: u32 => visit_u32,
        deserialize_u64: u64 => visit_u64,
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        match &self.0 {
            Value::Number(number) => visitor.visit_f64(number.as_f64().unwrap_or(f64::NAN)),
            _ => Err(self.wrong("a number")),
        }
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        self.deserialize_string(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        self.deserialize_string(visitor)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        match self.0 {
            Value::String(text) => visitor.visit_string(text),
            _ => Err(self.wrong("text")),
        }
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        self.deserialize_string(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        self.deserialize_string(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            _ => Err(self.wrong("nothing")),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ValueError> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ValueError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        match self.0 {
            Value::Array(items) => visitor.visit_seq(Items::new(items)),
            _ => Err(self.wrong("a list")),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _length: usize,
        visitor: V,
    ) -> Result<V::Value, ValueError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _length: usize,
        visitor: V,
    ) -> Result<V::Value, ValueError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        match self.0 {
            Value::Object(entries) => visitor.visit_map(Entries::new(entries)),
            _ => Err(self.wrong("a mapping (`key: value` entries)")),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ValueError> {
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ValueError> {
        match self.0 {
            Value::String(text) => visitor.visit_enum(text.into_deserializer()),
            _ => Err(self.wrong(&format!("one of {}", names(variants)))),
        }
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        self.deserialize_string(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        visitor.visit_unit()
    }
}

/// `a`, `b` or `c`.
pub(crate) fn names(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|name| format!("`{name}`")).collect();
    match quoted.split_last() {
        None => "nothing".into(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// A list's items, each read with its index on the path of its errors.
struct Items {
    items: std::vec::IntoIter<Value>,
    index: usize,
}

impl Items {
    fn new(items: Vec<Value>) -> Self {
        Items {
            items: items.into_iter(),
            index: 0,
        }
    }
}

impl<'de> de::SeqAccess<'de> for Items {
    type Error = ValueError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, ValueError> {
        let Some(item) = self.items.next() else {
            return Ok(None);
        };
        let index = self.index;
        self.index += 1;
        seed.deserialize(Strict(item))
            .map(Some)
            .map_err(|error| error.within(Segment::Index(index)))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

/// A mapping's entries, each value read with its key on the path of its errors.
struct Entries {
    entries: serde_json::map::IntoIter,
    value: Option<(String, Value)>,
}

impl Entries {
    fn new(entries: Map<String, Value>) -> Self {
        Entries {
            entries: entries.into_iter(),
            value: None,
        }
    }
}

impl<'de> de::MapAccess<'de> for Entries {
    type Error = ValueError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ValueError> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        let read = seed
            .deserialize(Strict(Value::String(key.clone())))
            .map_err(|error| error.within(Segment::Key(key.clone())))?;
        self.value = Some((key, value));
        Ok(Some(read))
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<T::Value, ValueError> {
        let Some((key, value)) = self.value.take() else {
            return Err(de::Error::custom("a value was read before its key"));
        };
        seed.deserialize(Strict(value))
            .map_err(|error| error.within(Segment::Key(key)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Outer {
        name: String,
        #[serde(default)]
        count: Option<u32>,
        #[serde(default)]
        items: Vec<Inner>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        rate: f64,
    }

    fn error(json: &str) -> String {
        from_value::<Outer>(serde_json::from_str(json).unwrap())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_list_is_not_a_mapping() {
        assert_eq!(
            error(r#"["t", null, [], 7, "2m"]"#),
            ".: expected a mapping (`key: value` entries), found a list"
        );
        assert_eq!(
            error("null"),
            ".: expected a mapping (`key: value` entries), found nothing"
        );
    }

    #[test]
    fn errors_name_the_path_in_words() {
        assert_eq!(
            error(r#"{ "name": "x", "count": -1 }"#),
            "count: expected a whole number, 0 or more, found the number -1"
        );
        assert_eq!(
            error(r#"{ "name": "x", "items": [{ "rate": 1 }, { "rate": "fast" }] }"#),
            "items[1].rate: expected a number, found the text `fast`"
        );
        assert!(error(r#"{ "name": "x", "cont": 1 }"#).starts_with("cont: unknown field `cont`"));
        assert_eq!(error(r#"{ "count": 1 }"#), ".: missing field `name`");
        assert_eq!(
            error(r#"{ "name": 7 }"#),
            "name: expected text, found the number 7"
        );
    }

    #[test]
    fn a_scenario_path_that_is_not_a_regular_file_is_refused_before_it_is_opened() {
        use crate::scenario::Scenario;
        let dir = std::env::temp_dir().join(format!("probity-sim-fifo-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("scenario.yaml");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        // No writer ever comes: a load that opened it would block, so it runs on a thread the
        // test waits for with a deadline.
        let (sender, receiver) = std::sync::mpsc::channel();
        let path = fifo.clone();
        std::thread::spawn(move || {
            let _ = sender.send(Scenario::load(&path).map(|_| ()).map_err(|e| e.to_string()));
        });
        let error = receiver
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the load returned rather than blocked")
            .unwrap_err();
        assert!(error.contains(&fifo.display().to_string()), "{error}");
        assert!(error.contains("a FIFO, not a regular file"), "{error}");
        let folder = dir.join("folder.yaml");
        std::fs::create_dir_all(&folder).unwrap();
        let error = Scenario::load(&folder).unwrap_err().to_string();
        assert!(error.contains("a directory, not a regular file"), "{error}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn names_are_listed_in_words() {
        assert_eq!(names(&["a"]), "`a`");
        assert_eq!(names(&["a", "b", "c"]), "`a`, `b` or `c`");
    }
}
