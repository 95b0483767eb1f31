//! Simulated time: whole milliseconds, and the span syntax scenario files use.

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

/// A point in simulated time, in milliseconds since the start of the run.
pub type Millis = u64;

/// A span of simulated time.
///
/// Written in a scenario as a string with units (`"500ms"`, `"40s"`, `"1m30s"`, `"2h"`) or as a
/// plain number of seconds (`40`, `0.5`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Span(pub Millis);

impl Span {
    /// A span of whole seconds.
    pub const fn secs(seconds: u64) -> Self {
        Span(seconds * 1000)
    }

    /// A span of milliseconds.
    pub const fn millis(ms: u64) -> Self {
        Span(ms)
    }

    /// The span in milliseconds.
    pub const fn as_millis(self) -> Millis {
        self.0
    }

    /// The span in seconds, as a float.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1000.0
    }

    /// Parses `"1m30s"`, `"500ms"`, `"2h"`, `"40"` (seconds) or `"0.5s"`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("empty duration".into());
        }
        if let Ok(seconds) = text.parse::<f64>() {
            return Self::from_secs_f64(seconds);
        }
        let mut total = 0.0_f64;
        let mut rest = text;
        while !rest.is_empty() {
            let number_len = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .unwrap_or(rest.len());
            if number_len == 0 {
                return Err(format!(
                    "`{text}` is not a duration (expected e.g. 500ms, 40s, 1m30s)"
                ));
            }
            let number: f64 = rest[..number_len]
                .parse()
                .map_err(|_| format!("`{text}` is not a duration"))?;
            rest = &rest[number_len..];
            let unit_len = rest
                .find(|c: char| c.is_ascii_digit() || c == '.')
                .unwrap_or(rest.len());
            let unit = &rest[..unit_len];
            rest = &rest[unit_len..];
            let factor = match unit {
                "ms" => 0.001,
                "s" => 1.0,
                "m" | "min" => 60.0,
                "h" => 3600.0,
                "" => return Err(format!("`{text}`: a unit is missing after {number}")),
                other => {
                    return Err(format!(
                        "`{text}`: unknown unit `{other}` (use ms, s, m or h)"
                    ));
                }
            };
            total += number * factor;
        }
        Self::from_secs_f64(total)
    }

    fn from_secs_f64(seconds: f64) -> Result<Self, String> {
        if !seconds.is_finite() || seconds < 0.0 {
            return Err(format!("{seconds} is not a non-negative duration"));
        }
        if seconds > 366.0 * 86400.0 {
            return Err(format!("{seconds} s is longer than a year"));
        }
        Ok(Span((seconds * 1000.0).round() as u64))
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0;
        if !ms.is_multiple_of(1000) {
            if ms < 1000 {
                return write!(f, "{ms}ms");
            }
            return write!(f, "{:.3}s", ms as f64 / 1000.0);
        }
        let seconds = ms / 1000;
        if seconds >= 60 && seconds.is_multiple_of(60) {
            write!(f, "{}m", seconds / 60)
        } else if seconds >= 60 {
            write!(f, "{}m{}s", seconds / 60, seconds % 60)
        } else {
            write!(f, "{seconds}s")
        }
    }
}

impl Serialize for Span {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Span {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SpanVisitor;
        impl Visitor<'_> for SpanVisitor {
            type Value = Span;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a duration such as \"40s\", \"500ms\", \"1m30s\" or a number of seconds",
                )
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Span, E> {
                Span::from_secs_f64(v as f64).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Span, E> {
                Span::from_secs_f64(v as f64).map_err(E::custom)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Span, E> {
                Span::from_secs_f64(v).map_err(E::custom)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Span, E> {
                Span::parse(v).map_err(E::custom)
            }
        }
        deserializer.deserialize_any(SpanVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_plain_seconds() {
        assert_eq!(Span::parse("500ms").unwrap(), Span(500));
        assert_eq!(Span::parse("40s").unwrap(), Span(40_000));
        assert_eq!(Span::parse("1m30s").unwrap(), Span(90_000));
        assert_eq!(Span::parse("2h").unwrap(), Span(7_200_000));
        assert_eq!(Span::parse("7").unwrap(), Span(7_000));
        assert_eq!(Span::parse("0.5s").unwrap(), Span(500));
    }

    #[test]
    fn rejects_garbage_with_a_reason() {
        assert!(Span::parse("ten").unwrap_err().contains("not a duration"));
        assert!(Span::parse("5x").unwrap_err().contains("unknown unit"));
        assert!(Span::parse("-3").is_err());
        assert!(Span::parse("").is_err());
    }

    #[test]
    fn displays_compactly() {
        assert_eq!(Span(90_000).to_string(), "1m30s");
        assert_eq!(Span(120_000).to_string(), "2m");
        assert_eq!(Span(500).to_string(), "500ms");
        assert_eq!(Span(40_000).to_string(), "40s");
    }
}
