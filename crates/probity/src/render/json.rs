//! The JSON formats, through serde: `application/json` and `application/health+json`.

use super::{Clock, Request, entry_kind};
use crate::check::Measurement;
use crate::snapshot::{CheckState, Entry, Snapshot, Verdict};
use probity_contract::{Status, Tier};
use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq};
use std::borrow::Cow;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Writes the RFC 3339 timestamps of one answer, with milliseconds, UTC:
/// `2026-11-30T12:00:00.123Z`.
///
/// An answer carries up to three timestamps per check and nearly all of them fall on the day
/// the answer is rendered, so the date is formatted once (by humantime) and each timestamp of
/// that day writes only its time of day; any other timestamp goes through humantime whole.
/// For 20 checks this is a fifth of the JSON render's cost otherwise.
#[derive(Clone, Copy)]
struct Stamps {
    /// Milliseconds since the epoch at the start of the answer's UTC day.
    day_start: u64,
    /// `YYYY-MM-DDT` of that day.
    date: [u8; 11],
}

const DAY_MS: u64 = 86_400_000;

impl Stamps {
    fn new(wall: SystemTime) -> Self {
        let now = epoch_millis(wall);
        let day_start = now - now % DAY_MS;
        let mut date = *b"1970-01-01T";
        let day = UNIX_EPOCH + Duration::from_millis(day_start);
        let formatted = humantime::format_rfc3339_millis(day).to_string();
        if let Some(prefix) = formatted.as_bytes().get(..11)
            && formatted.len() == 24
        {
            date.copy_from_slice(prefix);
        }
        Stamps { day_start, date }
    }

    fn at(self, time: SystemTime) -> Timestamp {
        Timestamp { time, stamps: self }
    }
}

/// Milliseconds since the epoch; zero for an earlier time (and saturated some 500 million
/// years on).
fn epoch_millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |since| {
        since
            .as_secs()
            .saturating_mul(1000)
            .saturating_add(u64::from(since.subsec_millis()))
    })
}

/// One timestamp of an answer.
struct Timestamp {
    time: SystemTime,
    stamps: Stamps,
}

impl Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let millis = epoch_millis(self.time);
        let Some(of_day) = millis
            .checked_sub(self.stamps.day_start)
            .filter(|of_day| *of_day < DAY_MS)
        else {
            // Another day (or before the epoch, which has no RFC 3339 form here: the epoch).
            let time = self.time.max(UNIX_EPOCH);
            return serializer.collect_str(&humantime::format_rfc3339_millis(time));
        };
        let mut text = [0_u8; 24];
        text[..11].copy_from_slice(&self.stamps.date);
        let fields = [
            (11, of_day / 3_600_000, 2),
            (14, of_day / 60_000 % 60, 2),
            (17, of_day / 1000 % 60, 2),
            (20, of_day % 1000, 3),
        ];
        for (at, value, digits) in fields {
            let mut value = value;
            for position in (at..at + digits).rev() {
                text[position] = b'0' + (value % 10) as u8;
                value /= 10;
            }
        }
        text[13] = b':';
        text[16] = b':';
        text[19] = b'.';
        text[23] = b'Z';
        serializer.serialize_str(std::str::from_utf8(&text).unwrap_or("1970-01-01T00:00:00.000Z"))
    }
}

/// Serializes into a buffer sized for the answer up front: one allocation, no regrowth.
fn to_string(value: &impl Serialize, size_hint: usize) -> String {
    let mut out = Vec::with_capacity(size_hint);
    if serde_json::to_writer(&mut out, value).is_err() {
        return String::new();
    }
    String::from_utf8(out).unwrap_or_default()
}

/// The bytes a check's entry takes in either JSON format, roughly: a buffer of this size per
/// entry is rarely regrown.
const ENTRY_BYTES: usize = 512;

/// Milliseconds with microsecond precision, as a JSON number.
fn millis(duration: Duration) -> f64 {
    duration.as_micros() as f64 / 1000.0
}

/// A JSON number for a measurement; not-a-number and infinities have no JSON form.
fn finite(value: f64) -> Option<f64> {
    value.is_finite().then_some(value)
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: &'a str,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    known: &'a [&'a str],
}

pub(super) fn error(message: &str, known: &[&str]) -> String {
    serde_json::to_string(&ErrorBody {
        error: message,
        known,
    })
    .unwrap_or_default()
}

#[derive(Serialize)]
struct Body<'a> {
    status: Status,
    probe: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    service: Option<&'a str>,
    failing: &'a [String],
    degraded: &'a [String],
    checks: JsonEntries<'a>,
}

/// The `checks` array, each entry built as it is written.
struct JsonEntries<'a> {
    entries: &'a [Entry<'a>],
    request: &'a Request<'a>,
    clock: Clock,
    stamps: Stamps,
}

impl Serialize for JsonEntries<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.entries.iter().map(|entry| self.entry(entry)))
    }
}

/// One entry; the fields from `dependency` on are a check's only.
#[derive(Serialize)]
struct JsonEntry<'a> {
    name: &'a str,
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tier: Option<Tier>,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dependency: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    healthy: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stale: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    duration_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    consecutive_successes: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    consecutive_failures: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_checked: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_success: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_transition: Option<Timestamp>,
    #[serde(skip_serializing_if = "JsonMeasurements::is_empty")]
    measurements: JsonMeasurements<'a>,
}

/// A check's measurements, as `{name, value, unit}` objects.
struct JsonMeasurements<'a>(&'a [Measurement]);

impl JsonMeasurements<'_> {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for JsonMeasurements<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|measurement| JsonMeasurement {
            name: &measurement.name,
            value: finite(measurement.value),
            unit: measurement.unit.as_deref(),
        }))
    }
}

#[derive(Serialize)]
struct JsonMeasurement<'a> {
    name: &'a str,
    value: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    unit: Option<&'a str>,
}

impl<'a> JsonEntries<'a> {
    fn entry(&self, entry: &'a Entry<'a>) -> JsonEntry<'a> {
        let (clock, stamps) = (self.clock, self.stamps);
        let check = entry.check();
        let last = check.and_then(CheckState::last);
        JsonEntry {
            name: entry.name,
            kind: entry_kind(self.request.probe, entry),
            tier: entry.tier,
            status: if entry.excluded {
                "excluded"
            } else {
                entry.status.as_str()
            },
            reason: entry.reason(self.request.details, clock.now),
            dependency: check.and_then(CheckState::dependency),
            healthy: check.map(CheckState::is_healthy),
            stale: check.map(|check| check.is_stale(clock.now)),
            duration_ms: last.map(|last| millis(last.duration)),
            consecutive_successes: check.map(CheckState::consecutive_successes),
            consecutive_failures: check.map(CheckState::consecutive_failures),
            last_checked: last.map(|last| stamps.at(clock.wall_at(last.at))),
            last_success: check
                .and_then(CheckState::last_success)
                .map(|at| stamps.at(clock.wall_at(at))),
            last_transition: check
                .and_then(CheckState::last_transition)
                .map(|at| stamps.at(clock.wall_at(at))),
            measurements: JsonMeasurements(last.map_or(&[], |last| last.measurements.as_slice())),
        }
    }
}

pub(super) fn body(
    snapshot: &Snapshot,
    request: &Request<'_>,
    entries: &[Entry<'_>],
    verdict: &Verdict,
    clock: Clock,
) -> String {
    let body = Body {
        status: verdict.status,
        probe: request.probe.as_str(),
        service: snapshot.service(),
        failing: &verdict.failing,
        degraded: &verdict.degraded,
        checks: JsonEntries {
            entries,
            request,
            clock,
            stamps: Stamps::new(clock.wall),
        },
    };
    to_string(&body, 256 + entries.len() * ENTRY_BYTES)
}

/// `application/health+json`'s `componentType` for a dependency.
fn component_type(dependency: Option<&str>) -> &'static str {
    match dependency {
        Some(
            "postgres" | "postgresql" | "mysql" | "mariadb" | "sqlite" | "redis" | "database"
            | "cache",
        ) => "datastore",
        Some(_) => "component",
        None => "system",
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HealthBody<'a> {
    status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    service_id: Option<&'a str>,
    description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    notes: Vec<String>,
    checks: HealthChecks<'a>,
}

/// The `checks` object: `name:measurement` keys in entry order, each an array of one item.
struct HealthChecks<'a> {
    entries: &'a [Entry<'a>],
    request: &'a Request<'a>,
    clock: Clock,
    stamps: Stamps,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HealthItem<'a> {
    component_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    observed_value: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    observed_unit: Option<&'a str>,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    time: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<Cow<'a, str>>,
}

/// One item as the one element of an array.
struct One<T>(T);

impl<T: Serialize> Serialize for One<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(1))?;
        seq.serialize_element(&self.0)?;
        seq.end()
    }
}

impl Serialize for HealthChecks<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for entry in self.entries {
            let status = if entry.excluded {
                "pass"
            } else {
                entry.status.as_str()
            };
            let output = if entry.excluded {
                Some(Cow::Borrowed("excluded"))
            } else {
                entry.reason(self.request.details, self.clock.now)
            };
            let Some(check) = entry.check() else {
                map.serialize_entry(
                    entry.name,
                    &One(HealthItem {
                        component_type: "system",
                        observed_value: None,
                        observed_unit: None,
                        status,
                        time: None,
                        output,
                    }),
                )?;
                continue;
            };
            let last = check.last();
            let kind = component_type(check.dependency());
            let time = || last.map(|last| self.stamps.at(self.clock.wall_at(last.at)));
            map.serialize_entry(
                &format_args!("{}:responseTime", entry.name),
                &One(HealthItem {
                    component_type: kind,
                    observed_value: last.map(|last| millis(last.duration)),
                    observed_unit: last.map(|_| "ms"),
                    status,
                    time: time(),
                    output,
                }),
            )?;
            for measurement in last.map(|last| last.measurements.as_slice()).unwrap_or(&[]) {
                map.serialize_entry(
                    &format_args!("{}:{}", entry.name, measurement.name),
                    &One(HealthItem {
                        component_type: kind,
                        observed_value: finite(measurement.value),
                        observed_unit: measurement.unit.as_deref(),
                        status,
                        time: time(),
                        output: None,
                    }),
                )?;
            }
        }
        map.end()
    }
}

pub(super) fn health_body(
    snapshot: &Snapshot,
    request: &Request<'_>,
    entries: &[Entry<'_>],
    verdict: &Verdict,
    clock: Clock,
) -> String {
    let description = match snapshot.service() {
        Some(service) => format!("{} of {service}", request.probe.as_str()),
        None => request.probe.as_str().to_owned(),
    };
    let output = match verdict.status {
        Status::Pass => None,
        Status::Warn => Some(format!("degraded: {}", verdict.degraded.join(", "))),
        Status::Fail => Some(format!("failing: {}", verdict.failing.join(", "))),
    };
    let notes = if verdict.status == Status::Fail && !verdict.degraded.is_empty() {
        vec![format!("degraded: {}", verdict.degraded.join(", "))]
    } else {
        Vec::new()
    };
    let body = HealthBody {
        status: verdict.status,
        service_id: snapshot.service(),
        description,
        output,
        notes,
        checks: HealthChecks {
            entries,
            request,
            clock,
            stamps: Stamps::new(clock.wall),
        },
    };
    to_string(&body, 256 + entries.len() * 3 * ENTRY_BYTES / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(wall: SystemTime, time: SystemTime) -> String {
        serde_json::to_string(&Stamps::new(wall).at(time)).unwrap()
    }

    #[test]
    fn timestamps_agree_with_humantime_on_and_off_the_answers_day() {
        let wall = UNIX_EPOCH + Duration::from_millis(1_796_040_000_123); // 2026-11-30T12:00:00.123Z
        for offset_ms in [
            0,
            1,
            999,
            43_200_123,
            43_199_000,
            86_400_000,
            400 * 86_400_000,
        ] {
            for time in [
                wall - Duration::from_millis(offset_ms),
                wall + Duration::from_millis(offset_ms),
            ] {
                let expected = format!("\"{}\"", humantime::format_rfc3339_millis(time));
                assert_eq!(
                    written(wall, time),
                    expected,
                    "{offset_ms} ms from the answer"
                );
            }
        }
    }

    #[test]
    fn a_time_before_the_epoch_is_written_as_the_epoch() {
        let wall = UNIX_EPOCH + Duration::from_secs(10);
        assert_eq!(
            written(wall, UNIX_EPOCH - Duration::from_secs(5)),
            "\"1970-01-01T00:00:00.000Z\""
        );
    }
}
