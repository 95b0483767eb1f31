//! Simulated time: whole milliseconds, and the span syntax scenario files use.
//!
//! Spans are read by [`probity_contract::duration`], the parser every probity tool shares:
//! Go's forms (`500ms`, `40s`, `1m30s`, `2h`) or a plain number of seconds (`40`, `0.5`).

use probity_contract::duration::{self, DurationError};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;
use std::time::Duration;

/// A point in simulated time, in milliseconds since the start of the run.
pub type Millis = u64;

/// A point in simulated time as the Kubernetes model and probity's verdict take it.
pub(crate) fn at(time: Millis) -> Duration {
    Duration::from_millis(time)
}

/// A Kubernetes model's time back in simulated milliseconds.
pub(crate) fn millis(time: Duration) -> Millis {
    time.as_millis() as Millis
}

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

    /// The span as a [`Duration`].
    pub fn as_duration(self) -> Duration {
        Duration::from_millis(self.0)
    }

    /// Parses `"1m30s"`, `"500ms"`, `"2h"`, `"40"` (seconds) or `"0.5s"`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let parsed = duration::parse_or_seconds(text).map_err(|error| error.to_string())?;
        Self::from_duration(parsed, text)
    }

    /// A duration the simulator can count: whole milliseconds.
    fn from_duration(duration: Duration, written: &str) -> Result<Self, String> {
        if !duration.subsec_nanos().is_multiple_of(1_000_000) {
            return Err(format!(
                "`{written}`: the simulator counts whole milliseconds"
            ));
        }
        Ok(Span(duration.as_millis() as Millis))
    }

    fn from_seconds(seconds: f64) -> Result<Self, String> {
        let parsed = duration::from_secs_f64(seconds).map_err(|error| error.to_string())?;
        // Seconds written as a number are rounded to the millisecond (0.0005 is not a
        // meaningful scenario value, 0.1 in binary is not exactly 100 ms).
        Ok(Span((parsed.as_secs_f64() * 1000.0).round() as Millis))
    }
}

impl From<Millis> for Span {
    fn from(millis: Millis) -> Self {
        Span(millis)
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&duration::format(self.as_duration()))
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
            fn visit_u64<E: de::Error>(self, value: u64) -> Result<Span, E> {
                Span::from_seconds(value as f64).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, value: i64) -> Result<Span, E> {
                if value < 0 {
                    return Err(E::custom(DurationError::Negative {
                        text: value.to_string(),
                    }));
                }
                Span::from_seconds(value as f64).map_err(E::custom)
            }
            fn visit_f64<E: de::Error>(self, value: f64) -> Result<Span, E> {
                Span::from_seconds(value).map_err(E::custom)
            }
            fn visit_str<E: de::Error>(self, value: &str) -> Result<Span, E> {
                Span::parse(value).map_err(E::custom)
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
        assert!(Span::parse("-3").unwrap_err().contains("negative"));
        assert!(Span::parse("").is_err());
        assert!(
            Span::parse("1.5ms")
                .unwrap_err()
                .contains("whole milliseconds")
        );
    }

    #[test]
    fn displays_compactly() {
        assert_eq!(Span(90_000).to_string(), "1m30s");
        assert_eq!(Span(120_000).to_string(), "2m");
        assert_eq!(Span(500).to_string(), "500ms");
        assert_eq!(Span(40_000).to_string(), "40s");
        assert_eq!(Span(1_500).to_string(), "1.5s");
    }
}
