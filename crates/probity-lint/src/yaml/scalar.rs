//! Plain scalars resolved the YAML 1.1 way go-yaml v2 resolves them.

use super::tree::Value;
use granit_parser::ScalarStyle;

/// The YAML core schema's tags (`!!int` resolves to `tag:yaml.org,2002:int`).
pub(super) const CORE_TAG_PREFIX: &str = "tag:yaml.org,2002:";

pub(super) fn resolve_scalar(text: &str, style: ScalarStyle, tag: Option<&str>) -> Value {
    if let Some(tag) = tag {
        // An explicit core tag decides the type whatever the style: `!!int "3"` is the number
        // 3, as the API server's YAML decoder reads it; `!!str 3` is text. A value the tag
        // cannot hold stays text (the API server would refuse it).
        let text_value = || Value::String(text.to_owned());
        match tag.strip_prefix(CORE_TAG_PREFIX) {
            Some("str") => return text_value(),
            Some("int") => return parse_int(text.trim()).map_or_else(text_value, Value::Int),
            Some("float") => {
                return text
                    .trim()
                    .parse::<f64>()
                    .map_or_else(|_| text_value(), Value::Float);
            }
            Some("bool") => {
                return match text.trim() {
                    "true" | "True" | "TRUE" => Value::Bool(true),
                    "false" | "False" | "FALSE" => Value::Bool(false),
                    _ => text_value(),
                };
            }
            Some("null") => return Value::Null,
            _ if tag == "!" || tag.ends_with(":str") => return text_value(),
            _ => {}
        }
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

pub(super) fn parse_int(text: &str) -> Option<i64> {
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
