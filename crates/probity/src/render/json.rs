//! The JSON formats, `application/json` and `application/health+json`: serde-derived
//! structures, serialized by serde_json. Each answer's timestamps map a check's monotonic
//! instants to the answer's wall clock and are written by humantime (RFC 3339, milliseconds,
//! UTC).

use super::{Clock, Request, entry_kind};
use crate::check::Measurement;
use crate::snapshot::{CheckState, Entry, Snapshot, Verdict};
use probity_contract::verdict::Cause;
use probity_contract::{Status, Tier};
use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq};
use std::borrow::Cow;
use std::cell::Cell;
use std::io::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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

/// A timestamp's text, RFC 3339 with milliseconds, UTC (`2026-11-30T12:00:00.123Z`), as
/// humantime writes it; a time before the epoch is the epoch.
#[derive(Clone, Copy)]
struct Timestamp {
    text: [u8; 32],
    len: usize,
}

impl Timestamp {
    const EPOCH: &str = "1970-01-01T00:00:00.000Z";

    fn of(time: SystemTime) -> Timestamp {
        let mut text = [0; 32];
        let mut rest = &mut text[..];
        let time = humantime::format_rfc3339_millis(time.max(UNIX_EPOCH));
        let len = match write!(rest, "{time}") {
            Ok(()) => 32 - rest.len(),
            Err(_) => 0,
        };
        Timestamp { text, len }
    }

    fn as_str(&self) -> &str {
        match std::str::from_utf8(&self.text[..self.len]) {
            Ok(text) if !text.is_empty() => text,
            _ => Timestamp::EPOCH,
        }
    }
}

/// The timestamps of one answer, by its clock: most of a check's are one instant (its last
/// poll is its last success), written once.
struct Stamps {
    clock: Clock,
    last: Cell<Option<(tokio::time::Instant, Timestamp)>>,
}

impl Stamps {
    fn new(clock: Clock) -> Stamps {
        Stamps {
            clock,
            last: Cell::new(None),
        }
    }

    fn at(&self, at: tokio::time::Instant) -> Timestamp {
        if let Some((last, stamp)) = self.last.get()
            && last == at
        {
            return stamp;
        }
        let stamp = Timestamp::of(wall_at(self.clock, at));
        self.last.set(Some((at, stamp)));
        stamp
    }
}

/// The wall-clock time of monotonic instant `at`, by `clock`.
fn wall_at(clock: Clock, at: tokio::time::Instant) -> SystemTime {
    clock
        .wall
        .checked_sub(clock.now.saturating_duration_since(at))
        .unwrap_or(UNIX_EPOCH)
}

impl Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// The JSON text of `value`. Writing into memory cannot fail, every value here serializes
/// (strings, numbers, derived structures), and serde_json writes UTF-8: the fallbacks are
/// never taken.
fn to_string(value: &impl Serialize, size_hint: usize) -> String {
    let mut out = Vec::with_capacity(size_hint);
    if serde_json::to_writer(&mut out, value).is_err() {
        out.clear();
    }
    String::from_utf8(out).unwrap_or_default()
}

#[derive(Serialize)]
struct Body<'a> {
    status: Status,
    probe: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    service: Option<&'a str>,
    failing: &'a [String],
    degraded: &'a [String],
    warnings: &'a [String],
    checks: JsonEntries<'a>,
}

/// The `checks` array, each entry built as it is written.
struct JsonEntries<'a> {
    entries: &'a [Entry<'a>],
    request: &'a Request<'a>,
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
        let now = self.stamps.clock.now;
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
            reason: entry.reason(self.request.details, now),
            dependency: check.and_then(CheckState::dependency),
            healthy: check.map(CheckState::is_healthy),
            stale: check.map(|check| match entry.verdict {
                Some(verdict) => matches!(verdict.cause, Cause::Stale { .. }),
                None => check.is_stale(now),
            }),
            duration_ms: last.map(|last| millis(last.duration)),
            consecutive_successes: check.map(CheckState::consecutive_successes),
            consecutive_failures: check.map(CheckState::consecutive_failures),
            last_checked: last.map(|last| self.stamps.at(last.at)),
            last_success: check
                .and_then(CheckState::last_success)
                .map(|at| self.stamps.at(at)),
            last_transition: check
                .and_then(CheckState::last_transition)
                .map(|at| self.stamps.at(at)),
            measurements: JsonMeasurements(last.map_or(&[], |last| last.measurements.as_slice())),
        }
    }
}

pub(crate) fn body(
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
        warnings: &verdict.warnings,
        checks: JsonEntries {
            entries,
            request,
            stamps: Stamps::new(clock),
        },
    };
    to_string(&body, 256 + entries.len() * ENTRY_BYTES)
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
                entry.reason(self.request.details, self.stamps.clock.now)
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
            let time = || last.map(|last| self.stamps.at(last.at));
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

pub(crate) fn health_body(
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
        Status::Warn => Some(verdict.qualifiers().join("; ")),
        Status::Fail => Some(format!("failing: {}", verdict.failing.join(", "))),
    };
    let notes = if verdict.status == Status::Fail {
        verdict.qualifiers()
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
            stamps: Stamps::new(clock),
        },
    };
    to_string(&body, 256 + entries.len() * 3 * ENTRY_BYTES / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(time: SystemTime) -> String {
        serde_json::to_string(&Timestamp::of(time)).unwrap()
    }

    #[test]
    fn timestamps_are_rfc3339_with_milliseconds_in_utc() {
        // 2026-11-30T12:00:00.123Z
        let time = UNIX_EPOCH + Duration::from_millis(1_796_040_000_123);
        assert_eq!(written(time), "\"2026-11-30T12:00:00.123Z\"");
        assert_eq!(
            written(time + Duration::from_micros(999)),
            "\"2026-11-30T12:00:00.123Z\""
        );
    }

    #[test]
    fn a_time_before_the_epoch_is_written_as_the_epoch() {
        assert_eq!(
            written(UNIX_EPOCH - Duration::from_secs(5)),
            "\"1970-01-01T00:00:00.000Z\""
        );
    }
}
