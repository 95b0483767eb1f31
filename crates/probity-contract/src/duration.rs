//! Durations as Go and Kubernetes write them: `1m30s`, `500ms`, `2h`, `1.5s`.
//!
//! One parser for every probity tool, so a flag, a scenario and a config file accept the same
//! text. The grammar is Go's `time.ParseDuration` (a sequence of decimal numbers, each with an
//! optional fraction and a unit; units `ns`, `us` (or `µs`), `ms`, `s`, `m`, `h`; a lone `0`
//! needs no unit), without the sign: a duration here is never negative. Where the caller
//! allows it, a bare number means seconds ([`parse_or_seconds`]).
//!
//! ```
//! use probity_contract::duration;
//! use std::time::Duration;
//!
//! assert_eq!(duration::parse("1m30s").unwrap(), Duration::from_secs(90));
//! assert_eq!(duration::parse("1.5s").unwrap(), Duration::from_millis(1500));
//! assert_eq!(duration::parse_or_seconds("40").unwrap(), Duration::from_secs(40));
//! assert!(duration::parse("40").unwrap_err().to_string().contains("no unit"));
//! assert_eq!(duration::format(Duration::from_secs(5400)), "1h30m");
//! ```

use std::fmt::Write as _;
use std::time::Duration;

/// The longest duration Go can hold (`math.MaxInt64` nanoseconds, about 292 years); longer
/// text is rejected rather than wrapped.
pub const MAX: Duration = Duration::new(9_223_372_036, 854_775_807);

/// The units and their length in nanoseconds; a unit is the whole run of letters after a number.
const UNITS: [(&str, u128); 9] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
    // `min` is not Go's, but people write it; it is read as minutes.
    ("min", 60_000_000_000),
];

const EXAMPLES: &str = "e.g. 500ms, 40s, 1m30s or 2h";

/// Why a text is not a duration. Every message quotes the text and says what would be right.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Nothing was written.
    #[error("empty duration ({EXAMPLES})")]
    Empty,
    /// A minus sign: durations are never negative here.
    #[error("`{text}` is negative: a duration is 0 or more")]
    Negative {
        /// The text as written.
        text: String,
    },
    /// A bare number, where the caller does not read bare numbers as seconds.
    #[error("`{text}` has no unit: write {text}s for seconds, or another unit ({EXAMPLES})")]
    BareNumber {
        /// The text as written.
        text: String,
    },
    /// A number inside the text with no unit after it (`1m30`).
    #[error("`{text}`: a unit is missing after {number} (use ns, us, ms, s, m or h)")]
    MissingUnit {
        /// The text as written.
        text: String,
        /// The number the unit is missing after.
        number: String,
    },
    /// A unit that is not one of `ns`, `us`, `ms`, `s`, `m`, `h`.
    #[error("`{text}`: unknown unit `{unit}` (use ns, us, ms, s, m or h{hint})")]
    UnknownUnit {
        /// The text as written.
        text: String,
        /// The unit as written.
        unit: String,
        /// Extra advice for a common mistake (`d` for days).
        hint: &'static str,
    },
    /// Not a sequence of numbers and units at all.
    #[error("`{text}` is not a duration ({EXAMPLES})")]
    Malformed {
        /// The text as written.
        text: String,
    },
    /// A number of seconds that is not a finite number.
    #[error("{value} is not a number of seconds")]
    NotFinite {
        /// The value as read.
        value: String,
    },
    /// Longer than [`MAX`].
    #[error("`{text}` is too long: the longest duration is 2562047h47m16.854775807s")]
    TooLong {
        /// The text as written.
        text: String,
    },
}

/// Parses a Go duration: `1m30s`, `500ms`, `2h`, `1.5s`, `0`. A bare number other than `0` is
/// an error that suggests the unit.
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    parse_text(text, false)
}

/// Parses a Go duration, or a bare number of seconds (`40`, `0.5`).
pub fn parse_or_seconds(text: &str) -> Result<Duration, DurationError> {
    parse_text(text, true)
}

/// A number of seconds as read from a YAML, TOML or JSON number: finite, 0 or more, at most
/// [`MAX`]; rounded to the nanosecond.
pub fn from_secs_f64(seconds: f64) -> Result<Duration, DurationError> {
    if !seconds.is_finite() {
        return Err(DurationError::NotFinite {
            value: seconds.to_string(),
        });
    }
    if seconds < 0.0 {
        return Err(DurationError::Negative {
            text: seconds.to_string(),
        });
    }
    if seconds > MAX.as_secs_f64() {
        return Err(DurationError::TooLong {
            text: format_number(seconds),
        });
    }
    Ok(Duration::from_secs_f64(seconds))
}

fn format_number(value: f64) -> String {
    if value.abs() >= 1e15 {
        format!("{value:e}")
    } else {
        value.to_string()
    }
}

fn parse_text(text: &str, bare_seconds: bool) -> Result<Duration, DurationError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(DurationError::Empty);
    }
    let owned = || trimmed.to_string();
    let unsigned = match trimmed.as_bytes()[0] {
        b'-' => return Err(DurationError::Negative { text: owned() }),
        b'+' => &trimmed[1..],
        _ => trimmed,
    };
    if unsigned == "0" {
        return Ok(Duration::ZERO);
    }
    if is_plain_number(unsigned) {
        if !bare_seconds {
            return Err(DurationError::BareNumber { text: owned() });
        }
        let seconds: f64 = unsigned
            .parse()
            .map_err(|_| DurationError::Malformed { text: owned() })?;
        return from_secs_f64(seconds).map_err(|error| match error {
            DurationError::TooLong { .. } => DurationError::TooLong { text: owned() },
            other => other,
        });
    }
    let mut total: u128 = 0;
    let mut rest = unsigned;
    if rest.is_empty() {
        return Err(DurationError::Malformed { text: owned() });
    }
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..number_len];
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
            return Err(DurationError::Malformed { text: owned() });
        }
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        if unit.is_empty() {
            return Err(DurationError::MissingUnit {
                text: owned(),
                number: number.to_string(),
            });
        }
        let Some(&(_, scale)) = UNITS.iter().find(|(name, _)| *name == unit) else {
            return Err(DurationError::UnknownUnit {
                text: owned(),
                unit: unit.to_string(),
                hint: match unit {
                    "d" | "day" | "days" => "; a day is 24h",
                    "w" | "week" | "weeks" => "; a week is 168h",
                    "sec" | "secs" | "second" | "seconds" => "; seconds are s",
                    _ => "",
                },
            });
        };
        let too_long = || DurationError::TooLong { text: owned() };
        // Whole part: digits times the unit, checked at every step (at most 39 digits fit).
        let mut nanos: u128 = 0;
        for digit in whole.bytes() {
            nanos = nanos
                .checked_mul(10)
                .and_then(|value| value.checked_add(u128::from(digit - b'0')))
                .ok_or_else(too_long)?;
            if nanos > u128::from(u64::MAX) {
                return Err(too_long());
            }
        }
        nanos = nanos.checked_mul(scale).ok_or_else(too_long)?;
        // Fraction: as many digits as the unit can resolve; the rest are below a nanosecond.
        let mut place = scale;
        for digit in fraction.bytes() {
            place /= 10;
            if place == 0 {
                break;
            }
            nanos += u128::from(digit - b'0') * place;
        }
        total = total.checked_add(nanos).ok_or_else(too_long)?;
        if total > MAX.as_nanos() {
            return Err(too_long());
        }
    }
    let seconds = (total / 1_000_000_000) as u64;
    let nanos = (total % 1_000_000_000) as u32;
    Ok(Duration::new(seconds, nanos))
}

fn is_plain_number(text: &str) -> bool {
    let mut digits = 0;
    let mut dots = 0;
    let mut exponent = false;
    for (index, c) in text.char_indices() {
        match c {
            '0'..='9' => digits += 1,
            '.' => dots += 1,
            'e' | 'E' if digits > 0 && !exponent => exponent = true,
            '+' | '-' if exponent && matches!(text[..index].chars().last(), Some('e' | 'E')) => {}
            _ => return false,
        }
    }
    digits > 0 && dots <= 1
}

/// Writes a duration in the shortest form [`parse`] reads back: `1h30m`, `2h`, `1m30s`,
/// `1.5s`, `500ms`, `250us`, `0s`.
pub fn format(duration: Duration) -> String {
    let mut out = String::new();
    if duration.is_zero() {
        return "0s".into();
    }
    if duration < Duration::from_secs(1) {
        let nanos = duration.subsec_nanos();
        let (value, scale, unit) = if nanos >= 1_000_000 {
            (nanos, 1_000_000, "ms")
        } else if nanos >= 1_000 {
            (nanos, 1_000, "us")
        } else {
            (nanos, 1, "ns")
        };
        write_fraction(&mut out, u64::from(value / scale), value % scale, scale);
        out.push_str(unit);
        return out;
    }
    let total = duration.as_secs();
    let (hours, minutes, seconds) = (total / 3600, (total % 3600) / 60, total % 60);
    if hours > 0 {
        let _ = write!(out, "{hours}h");
    }
    if minutes > 0 {
        let _ = write!(out, "{minutes}m");
    }
    let nanos = duration.subsec_nanos();
    if seconds > 0 || nanos > 0 {
        write_fraction(&mut out, seconds, nanos, 1_000_000_000);
        out.push('s');
    }
    out
}

/// A duration for people, in the grammar [`format()`] writes, cut to the precision its size
/// deserves: whole hours from a day up (`481h`), whole minutes from an hour (`5h12m`), whole
/// seconds from a minute (`2m3s`),
/// tenths below (`1.5s`), whole milliseconds below a second (`250ms`), whole microseconds below
/// that. [`parse`] reads it back.
///
/// ```
/// use probity_contract::duration::format_coarse;
/// use std::time::Duration;
///
/// assert_eq!(format_coarse(Duration::from_secs(2 * 86_400 + 5 * 3600 + 7 * 60 + 9)), "53h");
/// assert_eq!(format_coarse(Duration::from_secs(5 * 3600 + 12 * 60 + 9)), "5h12m");
/// assert_eq!(format_coarse(Duration::from_millis(123_456)), "2m3s");
/// assert_eq!(format_coarse(Duration::from_millis(1_532)), "1.5s");
/// assert_eq!(format_coarse(Duration::from_micros(250_700)), "250ms");
/// assert_eq!(format_coarse(Duration::ZERO), "0s");
/// ```
pub fn format_coarse(duration: Duration) -> String {
    let unit = if duration >= Duration::from_secs(86_400) {
        Duration::from_secs(3600)
    } else if duration >= Duration::from_secs(3600) {
        Duration::from_secs(60)
    } else if duration >= Duration::from_secs(60) {
        Duration::from_secs(1)
    } else if duration >= Duration::from_secs(1) {
        Duration::from_millis(100)
    } else if duration >= Duration::from_millis(1) {
        Duration::from_millis(1)
    } else {
        Duration::from_micros(1)
    };
    let units = duration.as_nanos() / unit.as_nanos();
    format(unit * u32::try_from(units).unwrap_or(u32::MAX))
}

/// `whole.fraction` with the fraction's trailing zeros dropped; `scale` is one unit in the
/// fraction's terms.
fn write_fraction(out: &mut String, whole: u64, fraction: u32, scale: u32) {
    let _ = write!(out, "{whole}");
    if fraction == 0 {
        return;
    }
    let width = scale.ilog10() as usize;
    let digits = format!("{fraction:0width$}");
    let _ = write!(out, ".{}", digits.trim_end_matches('0'));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(value: u64) -> Duration {
        Duration::from_millis(value)
    }

    #[test]
    fn reads_go_durations() {
        assert_eq!(parse("500ms").unwrap(), ms(500));
        assert_eq!(parse("40s").unwrap(), ms(40_000));
        assert_eq!(parse("1m30s").unwrap(), ms(90_000));
        assert_eq!(parse("2h").unwrap(), ms(7_200_000));
        assert_eq!(parse("1h30m").unwrap(), ms(5_400_000));
        assert_eq!(parse("1.5s").unwrap(), ms(1_500));
        assert_eq!(parse(".5s").unwrap(), ms(500));
        assert_eq!(parse("5.s").unwrap(), ms(5_000));
        assert_eq!(parse("1.5ms").unwrap(), Duration::from_micros(1_500));
        assert_eq!(parse("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse("250µs").unwrap(), Duration::from_micros(250));
        assert_eq!(parse("7ns").unwrap(), Duration::from_nanos(7));
        assert_eq!(parse("1h1m1s1ms").unwrap(), ms(3_661_001));
        assert_eq!(parse("+3s").unwrap(), ms(3_000));
        assert_eq!(parse("0").unwrap(), Duration::ZERO);
        assert_eq!(parse(" 2m ").unwrap(), ms(120_000));
        assert_eq!(parse("3min").unwrap(), ms(180_000));
    }

    #[test]
    fn bare_numbers_are_seconds_only_where_allowed() {
        assert_eq!(parse_or_seconds("40").unwrap(), ms(40_000));
        assert_eq!(parse_or_seconds("0.5").unwrap(), ms(500));
        assert_eq!(parse_or_seconds("1e3").unwrap(), ms(1_000_000));
        assert_eq!(parse_or_seconds("1m30s").unwrap(), ms(90_000));
        let error = parse("90").unwrap_err();
        assert_eq!(
            error.to_string(),
            "`90` has no unit: write 90s for seconds, or another unit (e.g. 500ms, 40s, 1m30s or 2h)"
        );
    }

    #[test]
    fn every_error_says_what_is_wrong() {
        assert_eq!(parse("").unwrap_err(), DurationError::Empty);
        assert!(matches!(
            parse("-10s").unwrap_err(),
            DurationError::Negative { .. }
        ));
        assert!(
            parse("-10s")
                .unwrap_err()
                .to_string()
                .contains("`-10s` is negative")
        );
        assert!(
            parse("ten")
                .unwrap_err()
                .to_string()
                .contains("`ten` is not a duration")
        );
        assert!(
            parse("5x")
                .unwrap_err()
                .to_string()
                .starts_with("`5x`: unknown unit `x`")
        );
        assert!(
            parse("2d")
                .unwrap_err()
                .to_string()
                .contains("a day is 24h")
        );
        assert!(matches!(
            parse("1m30").unwrap_err(),
            DurationError::MissingUnit { .. }
        ));
        assert!(matches!(
            parse("1..5s").unwrap_err(),
            DurationError::Malformed { .. }
        ));
        assert!(matches!(
            parse("s").unwrap_err(),
            DurationError::Malformed { .. }
        ));
        assert!(matches!(
            parse("+").unwrap_err(),
            DurationError::Malformed { .. }
        ));
    }

    #[test]
    fn too_long_is_an_error_not_a_wrap() {
        assert_eq!(
            parse("2562047h").unwrap(),
            Duration::from_secs(2_562_047 * 3600)
        );
        assert!(matches!(
            parse("2562048h").unwrap_err(),
            DurationError::TooLong { .. }
        ));
        assert!(matches!(
            parse("99999999999999999999999999999999999999999h").unwrap_err(),
            DurationError::TooLong { .. }
        ));
        assert!(matches!(
            parse_or_seconds("1e300").unwrap_err(),
            DurationError::TooLong { .. }
        ));
        assert!(matches!(
            from_secs_f64(f64::INFINITY).unwrap_err(),
            DurationError::NotFinite { .. }
        ));
        assert!(matches!(
            from_secs_f64(-1.0).unwrap_err(),
            DurationError::Negative { .. }
        ));
    }

    #[test]
    fn formats_compactly_and_reads_back() {
        let cases = [
            (Duration::ZERO, "0s"),
            (ms(500), "500ms"),
            (Duration::from_micros(1_500), "1.5ms"),
            (Duration::from_micros(250), "250us"),
            (Duration::from_nanos(7), "7ns"),
            (ms(1_500), "1.5s"),
            (ms(40_000), "40s"),
            (ms(90_000), "1m30s"),
            (ms(120_000), "2m"),
            (ms(7_200_000), "2h"),
            (ms(5_400_000), "1h30m"),
            (ms(3_630_000), "1h30s"),
            (ms(3_661_250), "1h1m1.25s"),
        ];
        for (duration, text) in cases {
            assert_eq!(format(duration), text);
            assert_eq!(parse(text).unwrap(), duration, "{text}");
        }
        assert_eq!(parse(&format(MAX)).unwrap(), MAX);
    }
}
