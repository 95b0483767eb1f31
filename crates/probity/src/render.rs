//! Rendering, framework-free: (snapshot, request) → (status code, headers, body).
//!
//! Every surface — the axum router, a hand-written hyper service, a test — calls [`render`],
//! so all of them answer the same way:
//!
//! - **200** for `pass` and `warn`, **503** for `fail`; the status code is the contract, the
//!   body explains it and **always names what failed**;
//! - `Cache-Control: no-store` and `X-Content-Type-Options: nosniff` on every answer;
//! - three formats, chosen by the `Accept` header:
//!   - `text/plain` (the default, and the answer to `*/*`): the Kubernetes API server's
//!     convention — `ok` when passing, and with `?verbose` (or when not passing) one line per
//!     entry: `[+]db ok`, `[-]db failed: <reason>`, `[!]cache degraded (soft): <reason>`,
//!     `[!]telemetry failed (info, not counted): <reason>`, `[ ]db excluded`, then `readyz check passed|passed with warnings|failed`;
//!   - `application/json`: `{status, probe, service, failing, degraded, checks: [...]}` with
//!     each entry's tier, status, reason, timing and measurements;
//!   - `application/health+json` (IETF draft-inadarei-api-health-check): `status`, `output`,
//!     and `checks` keyed `name:measurement` — `db:responseTime` for every check plus one key
//!     per measurement (`db:connections`, `db:utilization`…), each an array of one object with
//!     `componentType`, `observedValue`, `observedUnit`, `status`, `time`, `output`.
//! - query: `?verbose` (text only: list every entry), `?exclude=NAME` (repeatable; the entry
//!   is shown but does not count), and a single entry by name (`/readyz/db`). A single check
//!   answers 503 while **it** is failing, whatever its tier, so `/readyz/cache` tells an
//!   operator the truth about the cache even though the cache alone never fails `/readyz`.
//! - error details are shown or withheld per [`Details`]; names of failing entries are always
//!   shown. Details are redacted of credentials before they are ever stored.

use crate::check::format_duration;
use crate::contract::ProbeKind;
use crate::policy::Tier;
use crate::snapshot::{Entry, Snapshot, Status, Verdict};
use serde::Serialize;
use std::borrow::Cow;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::Instant;

/// The body format of an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `text/plain`, the Kubernetes convention.
    Text,
    /// `application/json`.
    Json,
    /// `application/health+json`.
    HealthJson,
}

impl Format {
    /// The `Content-Type` of this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => "text/plain; charset=utf-8",
            Format::Json => "application/json",
            Format::HealthJson => "application/health+json",
        }
    }

    /// Picks the format from an `Accept` header: the supported type with the highest `q`
    /// (ties go to the earlier one); text when the header is absent, is `*/*`, or names
    /// nothing supported — a probe must always get an answer, never a 406.
    pub fn negotiate(accept: Option<&str>) -> Format {
        let Some(accept) = accept else {
            return Format::Text;
        };
        let mut best: Option<(Format, f32)> = None;
        for range in accept.split(',') {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let mut quality = 1.0_f32;
            for parameter in parts {
                if let Some((key, value)) = parameter.split_once('=')
                    && key.trim().eq_ignore_ascii_case("q")
                {
                    quality = value.trim().parse().unwrap_or(0.0);
                }
            }
            let format = match media.as_str() {
                "application/health+json" => Format::HealthJson,
                "application/json" | "application/*" => Format::Json,
                "text/plain" | "text/*" | "*/*" => Format::Text,
                _ => continue,
            };
            if quality <= 0.0 {
                continue;
            }
            if best.is_none_or(|(_, q)| quality > q) {
                best = Some((format, quality));
            }
        }
        best.map_or(Format::Text, |(format, _)| format)
    }
}

/// Whether error details are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Details {
    /// Reasons are replaced by `reason withheld` (the default for a public listener); entry
    /// names and statuses are still shown.
    #[default]
    Hidden,
    /// Reasons are shown (an admin listener, or a service that chose to).
    Shown,
}

/// A parsed probe query string.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    /// `?verbose`: list every entry in the text format.
    pub verbose: bool,
    /// `?exclude=NAME`, repeatable.
    pub exclude: Vec<String>,
}

/// A query string that cannot be understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// A parameter other than `verbose` and `exclude`.
    #[error("unknown query parameter `{0}` (expected `verbose` or `exclude`)")]
    UnknownParameter(String),
    /// A parameter with a value it cannot take.
    #[error("invalid value `{value}` for `{parameter}`: {expected}")]
    InvalidValue {
        /// The parameter.
        parameter: &'static str,
        /// The value given.
        value: String,
        /// What it accepts.
        expected: &'static str,
    },
    /// Bad percent-encoding.
    #[error("malformed query string: {0}")]
    Malformed(String),
}

impl Query {
    /// Parses a raw query string (without the `?`): `verbose`, `verbose=true|false|1|0`, and
    /// repeated `exclude=NAME`. Anything else is an error saying what is wrong.
    pub fn parse(raw: Option<&str>) -> Result<Query, QueryError> {
        let mut query = Query::default();
        let Some(raw) = raw else {
            return Ok(query);
        };
        for pair in raw.split('&').filter(|pair| !pair.is_empty()) {
            let (key, value) = match pair.split_once('=') {
                Some((key, value)) => (key, Some(value)),
                None => (pair, None),
            };
            let key = percent_decode(key)?;
            let value = value.map(percent_decode).transpose()?;
            match key.as_str() {
                "verbose" => {
                    query.verbose = match value.as_deref() {
                        None | Some("") | Some("true") | Some("1") => true,
                        Some("false") | Some("0") => false,
                        Some(other) => {
                            return Err(QueryError::InvalidValue {
                                parameter: "verbose",
                                value: other.to_owned(),
                                expected: "expected no value, true, false, 1 or 0",
                            });
                        }
                    }
                }
                "exclude" => match value {
                    Some(name) if !name.is_empty() => query.exclude.push(name),
                    _ => {
                        return Err(QueryError::InvalidValue {
                            parameter: "exclude",
                            value: String::new(),
                            expected: "expected the name of a check, e.g. exclude=cache",
                        });
                    }
                },
                other => return Err(QueryError::UnknownParameter(other.to_owned())),
            }
        }
        Ok(query)
    }
}

fn percent_decode(text: &str) -> Result<String, QueryError> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| {
                        QueryError::Malformed(format!("bad percent-escape at byte {i}"))
                    })?;
                out.push(hex);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            byte => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| QueryError::Malformed("not valid UTF-8".into()))
}

/// One probe request.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// Which probe.
    pub probe: ProbeKind,
    /// A single entry (`/readyz/{check}`), or the whole probe.
    pub check: Option<&'a str>,
    /// The parsed query.
    pub query: &'a Query,
    /// The body format.
    pub format: Format,
    /// Whether reasons are shown.
    pub details: Details,
}

/// The time an answer is rendered at: the monotonic instant the snapshot is evaluated against,
/// and the wall-clock time used to print timestamps.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    /// Monotonic now.
    pub now: Instant,
    /// Wall-clock now.
    pub wall: SystemTime,
}

impl Clock {
    /// The current time.
    pub fn now() -> Self {
        Self {
            now: Instant::now(),
            wall: SystemTime::now(),
        }
    }

    fn wall_at(&self, at: Instant) -> SystemTime {
        self.wall - self.now.saturating_duration_since(at)
    }
}

/// A rendered answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The HTTP status code.
    pub status: u16,
    /// Headers, lowercase names.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: String,
}

impl Response {
    fn new(status: u16, format: Format, body: String) -> Self {
        Response {
            status,
            headers: vec![
                ("content-type", format.content_type().to_owned()),
                ("cache-control", "no-store".to_owned()),
                ("x-content-type-options", "nosniff".to_owned()),
            ],
            body,
        }
    }

    /// The value of header `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// Renders an error answer (400 for a bad query, 404 for an unknown check) in `format`.
pub fn render_error(status: u16, format: Format, message: &str, known: &[&str]) -> Response {
    let body = match format {
        Format::Text => {
            if known.is_empty() {
                format!("{message}\n")
            } else {
                format!("{message}\nknown: {}\n", known.join(", "))
            }
        }
        Format::Json | Format::HealthJson => {
            #[derive(Serialize)]
            struct ErrorBody<'a> {
                error: &'a str,
                #[serde(skip_serializing_if = "<[_]>::is_empty")]
                known: &'a [&'a str],
            }
            serde_json::to_string(&ErrorBody {
                error: message,
                known,
            })
            .unwrap_or_default()
        }
    };
    let format = if format == Format::HealthJson {
        Format::Json
    } else {
        format
    };
    Response::new(status, format, body)
}

/// Renders a probe's answer from a snapshot.
pub fn render(snapshot: &Snapshot, request: &Request<'_>, clock: Clock) -> Response {
    let known = snapshot.entry_names(request.probe);
    for name in &request.query.exclude {
        if !known.contains(&name.as_str()) {
            return render_error(
                400,
                request.format,
                &format!(
                    "cannot exclude `{name}`: no such entry in {}",
                    request.probe.default_path()
                ),
                &known,
            );
        }
    }
    if request.check.is_some() && !request.query.exclude.is_empty() {
        return render_error(
            400,
            request.format,
            "`exclude` applies to a whole probe, not to a single check",
            &[],
        );
    }
    let excluded: Vec<&str> = request.query.exclude.iter().map(String::as_str).collect();
    let mut entries = snapshot.entries(request.probe, clock.now, &excluded);
    let verdict = match request.check {
        Some(name) => {
            entries.retain(|entry| entry.name == name);
            let Some(entry) = entries.first_mut() else {
                return render_error(
                    404,
                    request.format,
                    &format!("no check `{name}` in {}", request.probe.default_path()),
                    &known,
                );
            };
            // A single check answers for itself: failing is 503 whatever its tier, except a
            // hard check inside its fail-open window.
            let failing_open = entry.tier == Some(Tier::Hard) && entry.status == Status::Warn;
            if entry.status == Status::Warn && !failing_open {
                entry.status = Status::Fail;
            }
            Verdict::from_entries(&entries)
        }
        None => Verdict::from_entries(&entries),
    };
    #[cfg(feature = "metrics")]
    crate::metrics::record_probe(request.probe, verdict.status);
    let body = match request.format {
        Format::Text => text_body(request, &entries, &verdict),
        Format::Json => json_body(snapshot, request, &entries, &verdict, clock),
        Format::HealthJson => health_json_body(snapshot, request, &entries, &verdict, clock),
    };
    Response::new(verdict.status.http_code(), request.format, body)
}

/// Whether an entry's reason may be shown: gate reasons (shutting down, pending step names)
/// carry no detail from a dependency and are always shown.
fn shown_reason<'a>(entry: &'a Entry<'_>, details: Details) -> Option<Cow<'a, str>> {
    let reason = entry.reason.as_ref()?;
    if details == Details::Shown || entry.check.is_none() {
        Some(Cow::Borrowed(reason.as_ref()))
    } else {
        Some(Cow::Borrowed("reason withheld"))
    }
}

fn endpoint_word(probe: ProbeKind) -> &'static str {
    match probe {
        ProbeKind::Liveness => "livez",
        ProbeKind::Readiness => "readyz",
        ProbeKind::Startup => "startupz",
    }
}

fn text_body(request: &Request<'_>, entries: &[Entry<'_>], verdict: &Verdict) -> String {
    use std::fmt::Write;
    let mut body = String::with_capacity(64 + entries.len() * 40);
    if let Some(_single) = request.check {
        let Some(entry) = entries.first() else {
            return body;
        };
        if entry.status == Status::Pass && !request.query.verbose {
            body.push_str("ok\n");
        } else {
            write_line(&mut body, entry, request.details);
        }
        return body;
    }
    if verdict.status == Status::Pass && !request.query.verbose {
        body.push_str("ok\n");
        return body;
    }
    for entry in entries {
        if request.query.verbose || entry.status != Status::Pass || entry.excluded {
            write_line(&mut body, entry, request.details);
        }
    }
    let outcome = match verdict.status {
        Status::Pass => "passed",
        Status::Warn => "passed with warnings",
        Status::Fail => "failed",
    };
    let _ = writeln!(body, "{} check {outcome}", endpoint_word(request.probe));
    body
}

fn write_line(body: &mut String, entry: &Entry<'_>, details: Details) {
    use std::fmt::Write;
    let reason = shown_reason(entry, details);
    let reason = reason.as_deref().unwrap_or("");
    let _ = if entry.excluded {
        writeln!(body, "[ ]{} excluded", entry.name)
    } else {
        match entry.status {
            Status::Pass => writeln!(body, "[+]{} ok", entry.name),
            Status::Fail => writeln!(body, "[-]{} failed: {reason}", entry.name),
            Status::Warn => match entry.tier {
                Some(Tier::Info) => {
                    writeln!(
                        body,
                        "[!]{} failed (info, not counted): {reason}",
                        entry.name
                    )
                }
                tier => {
                    let tier = tier.map_or("soft", Tier::as_str);
                    writeln!(body, "[!]{} degraded ({tier}): {reason}", entry.name)
                }
            },
        }
    };
}

fn rfc3339(time: SystemTime) -> String {
    let since_epoch = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since_epoch.as_secs() as i64;
    let millis = since_epoch.subsec_millis();
    let days = secs.div_euclid(86_400);
    let seconds_of_day = secs.rem_euclid(86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        seconds_of_day / 3600,
        seconds_of_day % 3600 / 60,
        seconds_of_day % 60
    )
}

fn millis_f64(duration: Duration) -> f64 {
    (duration.as_micros() as f64) / 1000.0
}

#[derive(Serialize)]
struct JsonMeasurement<'a> {
    name: &'a str,
    value: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    unit: Option<&'a str>,
}

#[derive(Serialize)]
struct JsonEntry<'a> {
    name: &'a str,
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tier: Option<Tier>,
    status: &'static str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    excluded: bool,
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
    last_checked: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_success: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_transition: Option<String>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    measurements: Vec<JsonMeasurement<'a>>,
}

#[derive(Serialize)]
struct JsonBody<'a> {
    status: &'static str,
    probe: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    service: Option<&'a str>,
    failing: &'a [String],
    degraded: &'a [String],
    checks: Vec<JsonEntry<'a>>,
}

fn entry_kind(probe: ProbeKind, entry: &Entry<'_>) -> &'static str {
    if entry.check.is_some() {
        return "check";
    }
    match probe {
        ProbeKind::Liveness => "condition",
        ProbeKind::Startup => "step",
        ProbeKind::Readiness => "gate",
    }
}

fn json_body(
    snapshot: &Snapshot,
    request: &Request<'_>,
    entries: &[Entry<'_>],
    verdict: &Verdict,
    clock: Clock,
) -> String {
    let checks = entries
        .iter()
        .map(|entry| {
            let check = entry.check;
            let last = check.and_then(|c| c.last());
            JsonEntry {
                name: entry.name,
                kind: entry_kind(request.probe, entry),
                tier: entry.tier,
                status: if entry.excluded {
                    "excluded"
                } else {
                    entry.status.as_str()
                },
                excluded: entry.excluded,
                reason: shown_reason(entry, request.details),
                dependency: check.and_then(|c| c.dependency()),
                healthy: check.map(|c| c.is_healthy()),
                stale: check.map(|c| c.is_stale(clock.now)),
                duration_ms: last.map(|l| millis_f64(l.duration)),
                consecutive_successes: check.map(|c| c.consecutive_successes()),
                consecutive_failures: check.map(|c| c.consecutive_failures()),
                last_checked: last.map(|l| rfc3339(clock.wall_at(l.at))),
                last_success: check
                    .and_then(|c| c.last_success())
                    .map(|at| rfc3339(clock.wall_at(at))),
                last_transition: check
                    .and_then(|c| c.last_transition())
                    .map(|at| rfc3339(clock.wall_at(at))),
                measurements: last
                    .map(|l| {
                        l.measurements
                            .iter()
                            .map(|m| JsonMeasurement {
                                name: &m.name,
                                value: m.value,
                                unit: m.unit.as_deref(),
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            }
        })
        .collect();
    serde_json::to_string(&JsonBody {
        status: verdict.status.as_str(),
        probe: request.probe.as_str(),
        service: snapshot.service(),
        failing: &verdict.failing,
        degraded: &verdict.degraded,
        checks,
    })
    .unwrap_or_default()
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HealthCheckItem<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    component_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    observed_value: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    observed_unit: Option<&'a str>,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<Cow<'a, str>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HealthBody<'a> {
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    service_id: Option<&'a str>,
    description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    notes: Vec<String>,
    checks: serde_json::Map<String, serde_json::Value>,
}

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

fn health_json_body(
    snapshot: &Snapshot,
    request: &Request<'_>,
    entries: &[Entry<'_>],
    verdict: &Verdict,
    clock: Clock,
) -> String {
    let mut checks = serde_json::Map::new();
    for entry in entries {
        let status = if entry.excluded {
            "pass"
        } else {
            entry.status.as_str()
        };
        let output = if entry.excluded {
            Some(Cow::Borrowed("excluded"))
        } else {
            shown_reason(entry, request.details)
        };
        let mut push = |key: String, item: HealthCheckItem<'_>| {
            if let Ok(value) = serde_json::to_value(item) {
                checks.insert(key, serde_json::Value::Array(vec![value]));
            }
        };
        match entry.check {
            Some(check) => {
                let last = check.last();
                let kind = component_type(check.dependency());
                let time = last.map(|l| rfc3339(clock.wall_at(l.at)));
                push(
                    format!("{}:responseTime", entry.name),
                    HealthCheckItem {
                        component_type: Some(kind),
                        observed_value: last.map(|l| millis_f64(l.duration)),
                        observed_unit: last.map(|_| "ms"),
                        status,
                        time: time.clone(),
                        output: output.clone(),
                    },
                );
                for measurement in last.map(|l| l.measurements.as_slice()).unwrap_or(&[]) {
                    push(
                        format!("{}:{}", entry.name, measurement.name),
                        HealthCheckItem {
                            component_type: Some(kind),
                            observed_value: Some(measurement.value),
                            observed_unit: measurement.unit.as_deref(),
                            status,
                            time: time.clone(),
                            output: None,
                        },
                    );
                }
            }
            None => push(
                entry.name.to_owned(),
                HealthCheckItem {
                    component_type: Some("system"),
                    observed_value: None,
                    observed_unit: None,
                    status,
                    time: None,
                    output,
                },
            ),
        }
    }
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
    let description = match snapshot.service() {
        Some(service) => format!("{} of {service}", request.probe),
        None => request.probe.as_str().to_owned(),
    };
    serde_json::to_string(&HealthBody {
        status: verdict.status.as_str(),
        service_id: snapshot.service(),
        description,
        output,
        notes,
        checks,
    })
    .unwrap_or_default()
}

/// Formats a probe's verdict in one line for logs: `fail: db (no result yet)`.
pub fn summary(snapshot: &Snapshot, probe: ProbeKind, now: Instant) -> String {
    let entries = snapshot.entries(probe, now, &[]);
    let verdict = Verdict::from_entries(&entries);
    let mut parts = Vec::new();
    for entry in entries.iter().filter(|entry| entry.status != Status::Pass) {
        match &entry.reason {
            Some(reason) => parts.push(format!("{} ({reason})", entry.name)),
            None => parts.push(entry.name.to_owned()),
        }
    }
    if parts.is_empty() {
        verdict.status.as_str().to_owned()
    } else {
        format!("{}: {}", verdict.status, parts.join(", "))
    }
}

/// Formats an age for people: `3.2s ago`.
pub fn ago(duration: Duration) -> String {
    format!(
        "{} ago",
        format_duration(Duration::from_millis(duration.as_millis() as u64))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiates_formats() {
        assert_eq!(Format::negotiate(None), Format::Text);
        assert_eq!(Format::negotiate(Some("*/*")), Format::Text);
        assert_eq!(Format::negotiate(Some("application/json")), Format::Json);
        assert_eq!(
            Format::negotiate(Some("application/health+json")),
            Format::HealthJson
        );
        assert_eq!(
            Format::negotiate(Some("text/plain;q=0.5, application/json;q=0.9")),
            Format::Json
        );
        assert_eq!(
            Format::negotiate(Some("application/json;q=0, text/plain")),
            Format::Text
        );
        assert_eq!(Format::negotiate(Some("text/html")), Format::Text);
        assert_eq!(Format::negotiate(Some("garbage;;;q=x,")), Format::Text);
    }

    #[test]
    fn parses_queries() {
        assert_eq!(Query::parse(None).unwrap(), Query::default());
        let query = Query::parse(Some("verbose&exclude=db&exclude=cache%2Dx")).unwrap();
        assert!(query.verbose);
        assert_eq!(query.exclude, vec!["db", "cache-x"]);
        assert!(!Query::parse(Some("verbose=false")).unwrap().verbose);
        assert_eq!(
            Query::parse(Some("verbos")).unwrap_err().to_string(),
            "unknown query parameter `verbos` (expected `verbose` or `exclude`)"
        );
        assert!(matches!(
            Query::parse(Some("verbose=maybe")),
            Err(QueryError::InvalidValue { .. })
        ));
        assert!(matches!(
            Query::parse(Some("exclude")),
            Err(QueryError::InvalidValue { .. })
        ));
        assert!(matches!(
            Query::parse(Some("exclude=%zz")),
            Err(QueryError::Malformed(_))
        ));
        assert!(matches!(
            Query::parse(Some("exclude=%ff")),
            Err(QueryError::Malformed(_))
        ));
    }

    #[test]
    fn formats_rfc3339() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let time = UNIX_EPOCH + Duration::from_millis(1_796_040_000_123);
        assert_eq!(rfc3339(time), "2026-11-30T12:00:00.123Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00.000Z");
    }
}
