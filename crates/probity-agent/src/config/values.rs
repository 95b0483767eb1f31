//! Small value types of the configuration, each validated where it is read so a bad value is
//! reported at its own line.

use serde::Deserialize;
use serde::de::{self, Deserializer};
use std::fmt;
use std::time::Duration;

/// Longest duration any setting accepts: a day. Longer values are typos (`5000s` meant as ms).
const MAX_DURATION: Duration = Duration::from_secs(86_400);

/// A duration written as text: `500ms`, `2s`, `1m30s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dur(pub Duration);

/// Parses a duration as the configuration writes it: `500ms`, `2s`, `1m30s`, at most a day.
///
/// The grammar is Go's `time.ParseDuration` through [`probity_contract::duration::parse`], the
/// one `probity inspect`, the drills and the contracts read, so a value copied between them
/// means the same thing everywhere. A bare number other than `0` is refused with the unit it
/// lacks.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let duration = probity_contract::duration::parse(text.trim())
        .map_err(|error| format!("{error}: write e.g. 500ms, 2s, 1m30s"))?;
    if duration > MAX_DURATION {
        return Err(format!(
            "`{text}` is longer than a day: durations are at most 24h"
        ));
    }
    Ok(duration)
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        parse_duration(&text).map(Dur).map_err(de::Error::custom)
    }
}

/// A URL that may hold a credential. `${NAME}` is replaced with the environment variable
/// `NAME` when the configuration is read, so a password can come from a Kubernetes Secret
/// instead of the file. Errors never repeat the value.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The value may hold a password in any form: never printed.
        f.write_str("Secret(…)")
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        expand_env(&text).map(Secret).map_err(de::Error::custom)
    }
}

/// Replaces every `${NAME}` with the value of the environment variable `NAME`.
pub(super) fn expand_env(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(
                "unclosed `${` in a value: write ${NAME} for an environment variable".into(),
            );
        };
        let name = &after[..end];
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "`${{{name}}}` is not an environment variable name (letters, digits and _)"
            ));
        }
        match std::env::var(name) {
            Ok(value) => out.push_str(&value),
            Err(_) => {
                return Err(format!(
                    "environment variable `{name}` is not set (named in this value as ${{{name}}})"
                ));
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A comparison of a series' value with a threshold: `> 0`, `>= 0.9`, `== 1`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Condition {
    /// The comparison.
    pub op: Op,
    /// The threshold.
    pub threshold: f64,
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `>`
    Above,
    /// `>=`
    AtLeast,
    /// `<`
    Below,
    /// `<=`
    AtMost,
    /// `==`
    Equal,
    /// `!=`
    NotEqual,
}

impl Op {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Above => ">",
            Op::AtLeast => ">=",
            Op::Below => "<",
            Op::AtMost => "<=",
            Op::Equal => "==",
            Op::NotEqual => "!=",
        }
    }
}

impl Condition {
    /// Whether `value` meets the condition. NaN meets none, except `!=`.
    pub fn holds(&self, value: f64) -> bool {
        match self.op {
            Op::Above => value > self.threshold,
            Op::AtLeast => value >= self.threshold,
            Op::Below => value < self.threshold,
            Op::AtMost => value <= self.threshold,
            Op::Equal => value == self.threshold,
            Op::NotEqual => value != self.threshold,
        }
    }

    /// Parses `OP NUMBER`.
    pub fn parse(text: &str) -> Result<Condition, String> {
        let trimmed = text.trim();
        let (op, rest) = [
            (">=", Op::AtLeast),
            ("<=", Op::AtMost),
            ("==", Op::Equal),
            ("!=", Op::NotEqual),
            (">", Op::Above),
            ("<", Op::Below),
        ]
        .into_iter()
        .find_map(|(symbol, op)| trimmed.strip_prefix(symbol).map(|rest| (op, rest)))
        .ok_or_else(|| {
            format!("`{text}` is not a condition: write an operator (>, >=, <, <=, ==, !=) and a number, e.g. \"> 0\"")
        })?;
        let threshold: f64 = rest
            .trim()
            .parse()
            .map_err(|_| format!("`{text}`: `{}` is not a number", rest.trim()))?;
        if !threshold.is_finite() {
            return Err(format!("`{text}`: the threshold must be a finite number"));
        }
        Ok(Condition { op, threshold })
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.op.symbol(), self.threshold)
    }
}

impl<'de> Deserialize<'de> for Condition {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Condition::parse(&text).map_err(de::Error::custom)
    }
}

/// An inclusive range of HTTP status codes: `200`, `200-299`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusRange(pub std::ops::RangeInclusive<u16>);

impl<'de> Deserialize<'de> for StatusRange {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        let invalid = || {
            de::Error::custom(format!(
                "`{text}` is not a status range: write e.g. \"200-299\" or \"204\""
            ))
        };
        let (low, high) = match text.split_once('-') {
            Some((low, high)) => (low.trim(), high.trim()),
            None => (text.trim(), text.trim()),
        };
        let low: u16 = low.parse().map_err(|_| invalid())?;
        let high: u16 = high.parse().map_err(|_| invalid())?;
        if !(100..=599).contains(&low) || !(100..=599).contains(&high) || low > high {
            return Err(invalid());
        }
        Ok(StatusRange(low..=high))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_use_the_grammar_inspect_and_the_contracts_use() {
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration(" 500ms "), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        // humantime read these; Go's time.ParseDuration, and so every other reader, does not.
        for text in ["1m 30s", "2 seconds", "5sec", "1d"] {
            assert!(parse_duration(text).is_err(), "{text} was read");
        }
        let bare = parse_duration("30").unwrap_err();
        assert!(bare.contains("30"), "{bare}");
        assert!(
            parse_duration("25h")
                .unwrap_err()
                .contains("longer than a day")
        );
    }

    #[test]
    fn conditions_parse_and_hold() {
        let above = Condition::parse("> 0").unwrap();
        assert!(above.holds(1.0) && !above.holds(0.0));
        let at_least = Condition::parse(">=5").unwrap();
        assert!(at_least.holds(5.0) && !at_least.holds(4.9));
        assert!(Condition::parse("!= 1").unwrap().holds(f64::NAN));
        assert!(!Condition::parse("< 1").unwrap().holds(f64::NAN));
        assert!(
            Condition::parse("~ 3")
                .unwrap_err()
                .contains("not a condition")
        );
        assert!(
            Condition::parse("> many")
                .unwrap_err()
                .contains("not a number")
        );
        assert!(Condition::parse("> inf").unwrap_err().contains("finite"));
    }

    #[test]
    fn environment_variables_expand_and_missing_ones_are_named() {
        // PATH is set in every environment the tests run in.
        let path = std::env::var("PATH").unwrap();
        assert_eq!(expand_env("a${PATH}b").unwrap(), format!("a{path}b"));
        assert_eq!(expand_env("plain").unwrap(), "plain");
        let error = expand_env("${PROBITY_AGENT_SURELY_UNSET}").unwrap_err();
        assert!(error.contains("PROBITY_AGENT_SURELY_UNSET"), "{error}");
        assert!(expand_env("${oops").unwrap_err().contains("unclosed"));
        assert!(
            expand_env("${a-b}")
                .unwrap_err()
                .contains("not an environment")
        );
    }
}
