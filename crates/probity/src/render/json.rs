//! The JSON formats, through serde: `application/json` and `application/health+json`.

use super::{Clock, Request, entry_kind};
use crate::snapshot::{CheckState, Entry, Snapshot, Verdict};
use probity_contract::{Status, Tier};
use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq};
use std::borrow::Cow;
use std::time::{Duration, SystemTime};

/// A timestamp as RFC 3339 with milliseconds, UTC: `2026-11-30T12:00:00.123Z`.
struct Timestamp(SystemTime);

impl Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&humantime::format_rfc3339_millis(self.0))
    }
}

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
    checks: Vec<JsonEntry<'a>>,
}

#[derive(Serialize)]
struct JsonEntry<'a> {
    name: &'a str,
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tier: Option<Tier>,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<Cow<'a, str>>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    check: Option<JsonCheck<'a>>,
}

#[derive(Serialize)]
struct JsonCheck<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    dependency: Option<&'a str>,
    healthy: bool,
    stale: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    duration_ms: Option<f64>,
    consecutive_successes: u32,
    consecutive_failures: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_checked: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_success: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_transition: Option<Timestamp>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    measurements: Vec<JsonMeasurement<'a>>,
}

#[derive(Serialize)]
struct JsonMeasurement<'a> {
    name: &'a str,
    value: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    unit: Option<&'a str>,
}

fn json_check<'a>(check: &'a CheckState, clock: Clock) -> JsonCheck<'a> {
    let last = check.last();
    JsonCheck {
        dependency: check.dependency(),
        healthy: check.is_healthy(),
        stale: check.is_stale(clock.now),
        duration_ms: last.map(|last| millis(last.duration)),
        consecutive_successes: check.consecutive_successes(),
        consecutive_failures: check.consecutive_failures(),
        last_checked: last.map(|last| Timestamp(clock.wall_at(last.at))),
        last_success: check.last_success().map(|at| Timestamp(clock.wall_at(at))),
        last_transition: check
            .last_transition()
            .map(|at| Timestamp(clock.wall_at(at))),
        measurements: last
            .map(|last| {
                last.measurements
                    .iter()
                    .map(|measurement| JsonMeasurement {
                        name: &measurement.name,
                        value: finite(measurement.value),
                        unit: measurement.unit.as_deref(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
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
        checks: entries
            .iter()
            .map(|entry| JsonEntry {
                name: entry.name,
                kind: entry_kind(request.probe, entry),
                tier: entry.tier,
                status: if entry.excluded {
                    "excluded"
                } else {
                    entry.status.as_str()
                },
                reason: entry.reason(request.details, clock.now),
                check: entry.check().map(|check| json_check(check, clock)),
            })
            .collect(),
    };
    serde_json::to_string(&body).unwrap_or_default()
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
            let time = || last.map(|last| Timestamp(self.clock.wall_at(last.at)));
            map.serialize_entry(
                &format!("{}:responseTime", entry.name),
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
                    &format!("{}:{}", entry.name, measurement.name),
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
        },
    };
    serde_json::to_string(&body).unwrap_or_default()
}
