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
use std::borrow::Cow;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::Instant;

/// A JSON member name with its quotes and colon, as bytes.
macro_rules! key {
    ($name:literal) => {
        concat!("\"", $name, "\":").as_bytes()
    };
}

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

    /// Microseconds since the Unix epoch of the wall clock now.
    fn wall_micros(&self) -> u64 {
        self.wall
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_micros() as u64
    }
}

/// A rendered answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The HTTP status code.
    pub status: u16,
    /// Headers, lowercase names; every value is a constant.
    pub headers: Vec<(&'static str, &'static str)>,
    /// The body.
    pub body: String,
}

impl Response {
    fn new(status: u16, format: Format, body: String) -> Self {
        Response {
            status,
            headers: vec![
                ("content-type", format.content_type()),
                ("cache-control", "no-store"),
                ("x-content-type-options", "nosniff"),
            ],
            body,
        }
    }

    /// The value of header `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| *value)
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
            let mut json = Json::with_capacity(64 + message.len() + known.len() * 16);
            json.open(b'{');
            json.field_str(key!("error"), message);
            if !known.is_empty() {
                json.key(key!("known"));
                json.open(b'[');
                for name in known {
                    json.string(name);
                }
                json.close(b']');
            }
            json.close(b'}');
            json.finish()
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
    // The common case — a probe that passes, asked plainly — needs no entry list at all.
    if request.format == Format::Text
        && request.check.is_none()
        && !request.query.verbose
        && request.query.exclude.is_empty()
        && snapshot.status(request.probe, clock.now) == Status::Pass
    {
        #[cfg(feature = "metrics")]
        crate::metrics::record_probe(request.probe, Status::Pass);
        return Response::new(200, Format::Text, "ok\n".to_owned());
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
            // A single check answers for itself (`CheckState::serves_alone`).
            if entry.status == Status::Warn
                && entry
                    .check
                    .is_some_and(|check| !check.serves_alone(clock.now))
            {
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

/// A minimal JSON writer into one preallocated buffer: probes are hot, and a full JSON render
/// of 20 checks should cost a few microseconds, not an allocation per field.
struct Json {
    out: Vec<u8>,
    first: bool,
    /// The last date written, `"YYYY-MM-DD` and its day number: timestamps of one render
    /// share their date almost always.
    day_cache: Option<(i64, [u8; 11])>,
}

/// "00" to "99", for writing two digits at once.
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

impl Json {
    fn with_capacity(capacity: usize) -> Self {
        Json {
            out: Vec::with_capacity(capacity),
            first: true,
            day_cache: None,
        }
    }

    fn separate(&mut self) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
    }

    fn open(&mut self, bracket: u8) {
        self.separate();
        self.out.push(bracket);
        self.first = true;
    }

    fn close(&mut self, bracket: u8) {
        self.out.push(bracket);
        self.first = false;
    }

    /// A member name, given quoted with its colon (`key!("status")` → `"status":`). Names are
    /// this module's own identifiers: no escaping needed.
    fn key(&mut self, quoted: &'static [u8]) {
        self.separate();
        self.out.extend_from_slice(quoted);
        self.first = true;
    }

    /// A string known to need no escaping: entry names are validated (`[a-z0-9_.-]`) and
    /// statuses, kinds and tiers are constants.
    fn plain(&mut self, value: &str) {
        self.separate();
        self.out.push(b'"');
        self.out.extend_from_slice(value.as_bytes());
        self.out.push(b'"');
    }

    fn string(&mut self, value: &str) {
        self.separate();
        self.escaped(value);
    }

    fn escaped(&mut self, value: &str) {
        self.out.reserve(value.len() + 2);
        self.out.push(b'"');
        self.escape_into(value);
        self.out.push(b'"');
    }

    fn escape_into(&mut self, value: &str) {
        let bytes = value.as_bytes();
        if !bytes.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\') {
            self.out.extend_from_slice(bytes);
            return;
        }
        let mut copied = 0;
        for (at, &byte) in bytes.iter().enumerate() {
            let escape: &[u8] = match byte {
                b'"' => b"\\\"",
                b'\\' => b"\\\\",
                b'\n' => b"\\n",
                b'\r' => b"\\r",
                b'\t' => b"\\t",
                0..=0x1f => b"",
                _ => continue,
            };
            self.out.extend_from_slice(&bytes[copied..at]);
            if escape.is_empty() {
                self.out.extend_from_slice(b"\\u00");
                self.out.push(b"0123456789abcdef"[usize::from(byte >> 4)]);
                self.out.push(b"0123456789abcdef"[usize::from(byte & 0xf)]);
            } else {
                self.out.extend_from_slice(escape);
            }
            copied = at + 1;
        }
        self.out.extend_from_slice(&bytes[copied..]);
    }

    fn digits(&mut self, mut value: u64) {
        let mut buffer = [0u8; 20];
        let mut at = buffer.len();
        loop {
            at -= 1;
            buffer[at] = b'0' + (value % 10) as u8;
            value /= 10;
            if value == 0 {
                break;
            }
        }
        self.out.extend_from_slice(&buffer[at..]);
    }

    fn unsigned(&mut self, value: u64) {
        self.separate();
        self.digits(value);
    }

    fn number(&mut self, value: f64) {
        self.separate();
        if value.is_finite() && value.fract() == 0.0 && value.abs() < 1e15 {
            if value < 0.0 {
                self.out.push(b'-');
            }
            self.digits(value.abs() as u64);
        } else if value.is_finite() {
            use std::io::Write;
            let _ = write!(self.out, "{value}");
        } else {
            self.out.extend_from_slice(b"null");
        }
    }

    /// Milliseconds with microsecond precision: `3`, `0.25`, `1.5`.
    fn millis(&mut self, duration: Duration) {
        self.separate();
        let micros = duration.as_micros() as u64;
        self.digits(micros / 1000);
        let fraction = micros % 1000;
        if fraction != 0 {
            let buffer = [
                b'.',
                b'0' + (fraction / 100) as u8,
                b'0' + (fraction / 10 % 10) as u8,
                b'0' + (fraction % 10) as u8,
            ];
            let mut len = 4;
            while buffer[len - 1] == b'0' {
                len -= 1;
            }
            self.out.extend_from_slice(&buffer[..len]);
        }
    }

    fn boolean(&mut self, value: bool) {
        self.separate();
        self.out
            .extend_from_slice(if value { b"true" } else { b"false" });
    }

    /// RFC 3339 in UTC with milliseconds (`"2026-11-30T12:00:00.123Z"`) of a time given in
    /// microseconds since the Unix epoch.
    fn timestamp_micros(&mut self, micros: u64) {
        self.separate();
        let secs = micros / 1_000_000;
        let day_number = (secs / 86_400) as i64;
        let mut buffer = *b"\"0000-00-00T00:00:00.000Z\"";
        let date = match self.day_cache {
            Some((cached, date)) if cached == day_number => date,
            _ => {
                let (year, month, day) = civil_from_days(day_number);
                let mut date = [0u8; 11];
                date.copy_from_slice(&buffer[..11]);
                let year = year.clamp(0, 9999) as usize;
                put_pair(&mut date, 1, year / 100);
                put_pair(&mut date, 3, year % 100);
                put_pair(&mut date, 6, month as usize);
                put_pair(&mut date, 9, day as usize);
                self.day_cache = Some((day_number, date));
                date
            }
        };
        buffer[..11].copy_from_slice(&date);
        let seconds_of_day = (secs % 86_400) as usize;
        put_pair(&mut buffer, 12, seconds_of_day / 3600);
        put_pair(&mut buffer, 15, seconds_of_day % 3600 / 60);
        put_pair(&mut buffer, 18, seconds_of_day % 60);
        let millis = (micros % 1_000_000 / 1000) as usize;
        buffer[21] = b'0' + (millis / 100) as u8;
        put_pair(&mut buffer, 22, millis % 100);
        self.out.extend_from_slice(&buffer);
    }

    fn field_str(&mut self, key: &'static [u8], value: &str) {
        self.key(key);
        self.string(value);
    }

    fn field_plain(&mut self, key: &'static [u8], value: &str) {
        self.key(key);
        self.plain(value);
    }

    fn finish(self) -> String {
        // Everything written came from `&str`s and ASCII: the buffer is UTF-8.
        String::from_utf8(self.out)
            .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
    }
}

/// Writes `value % 100` as two digits at `at`.
fn put_pair(buffer: &mut [u8], at: usize, value: usize) {
    let pair = value % 100 * 2;
    buffer[at] = PAIRS[pair];
    buffer[at + 1] = PAIRS[pair + 1];
}

/// (year, month, day) of a day number since 1970-01-01, by Howard Hinnant's civil-from-days
/// algorithm.
fn civil_from_days(days: i64) -> (i64, u64, u64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * mp + 2) / 5 + 1) as u64;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u64;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
fn rfc3339(time: SystemTime) -> String {
    let mut json = Json::with_capacity(32);
    json.timestamp_micros(
        time.duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_micros() as u64,
    );
    json.finish().trim_matches('"').to_owned()
}

/// Wall-clock microseconds since the epoch of monotonic instant `at`.
fn wall_micros_at(wall_now: u64, clock: Clock, at: Instant) -> u64 {
    wall_now.saturating_sub(clock.now.saturating_duration_since(at).as_micros() as u64)
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

fn names(json: &mut Json, key: &'static [u8], names: &[String]) {
    json.key(key);
    json.open(b'[');
    for name in names {
        json.plain(name);
    }
    json.close(b']');
}

fn json_body(
    snapshot: &Snapshot,
    request: &Request<'_>,
    entries: &[Entry<'_>],
    verdict: &Verdict,
    clock: Clock,
) -> String {
    let mut json = Json::with_capacity(256 + entries.len() * 320);
    let wall_now = clock.wall_micros();
    json.open(b'{');
    json.field_plain(key!("status"), verdict.status.as_str());
    json.field_plain(key!("probe"), request.probe.as_str());
    if let Some(service) = snapshot.service() {
        json.field_str(key!("service"), service);
    }
    names(&mut json, key!("failing"), &verdict.failing);
    names(&mut json, key!("degraded"), &verdict.degraded);
    json.key(key!("checks"));
    json.open(b'[');
    for entry in entries {
        json.open(b'{');
        json.field_plain(key!("name"), entry.name);
        json.field_plain(key!("kind"), entry_kind(request.probe, entry));
        if let Some(tier) = entry.tier {
            json.field_plain(key!("tier"), tier.as_str());
        }
        json.field_plain(
            key!("status"),
            if entry.excluded {
                "excluded"
            } else {
                entry.status.as_str()
            },
        );
        if let Some(reason) = shown_reason(entry, request.details) {
            json.field_str(key!("reason"), &reason);
        }
        if let Some(check) = entry.check {
            if let Some(dependency) = check.dependency() {
                json.field_str(key!("dependency"), dependency);
            }
            json.key(key!("healthy"));
            json.boolean(check.is_healthy());
            json.key(key!("stale"));
            json.boolean(check.is_stale(clock.now));
            let last = check.last();
            if let Some(last) = last {
                json.key(key!("duration_ms"));
                json.millis(last.duration);
            }
            json.key(key!("consecutive_successes"));
            json.unsigned(u64::from(check.consecutive_successes()));
            json.key(key!("consecutive_failures"));
            json.unsigned(u64::from(check.consecutive_failures()));
            if let Some(last) = last {
                json.key(key!("last_checked"));
                json.timestamp_micros(wall_micros_at(wall_now, clock, last.at));
            }
            if let Some(at) = check.last_success() {
                json.key(key!("last_success"));
                json.timestamp_micros(wall_micros_at(wall_now, clock, at));
            }
            if let Some(at) = check.last_transition() {
                json.key(key!("last_transition"));
                json.timestamp_micros(wall_micros_at(wall_now, clock, at));
            }
            if let Some(last) = last.filter(|last| !last.measurements.is_empty()) {
                json.key(key!("measurements"));
                json.open(b'[');
                for measurement in &last.measurements {
                    json.open(b'{');
                    json.field_str(key!("name"), &measurement.name);
                    json.key(key!("value"));
                    json.number(measurement.value);
                    if let Some(unit) = &measurement.unit {
                        json.field_str(key!("unit"), unit);
                    }
                    json.close(b'}');
                }
                json.close(b']');
            }
        }
        json.close(b'}');
    }
    json.close(b']');
    json.close(b'}');
    json.finish()
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

/// One `checks` member of `application/health+json`: `"key": [{...}]`.
#[allow(clippy::too_many_arguments)]
fn health_item(
    json: &mut Json,
    key_prefix: &str,
    key_suffix: Option<&str>,
    component_type: &str,
    observed: Option<(f64, Option<&str>)>,
    observed_millis: Option<Duration>,
    status: &str,
    time: Option<u64>,
    output: Option<&str>,
) {
    json.separate();
    json.out.push(b'"');
    json.out.extend_from_slice(key_prefix.as_bytes());
    if let Some(suffix) = key_suffix {
        json.out.push(b':');
        json.escape_into(suffix);
    }
    json.out.extend_from_slice(b"\":");
    json.first = true;
    json.open(b'[');
    json.open(b'{');
    json.field_plain(key!("componentType"), component_type);
    if let Some((value, unit)) = observed {
        json.key(key!("observedValue"));
        json.number(value);
        if let Some(unit) = unit {
            json.field_str(key!("observedUnit"), unit);
        }
    }
    if let Some(duration) = observed_millis {
        json.key(key!("observedValue"));
        json.millis(duration);
        json.field_str(key!("observedUnit"), "ms");
    }
    json.field_plain(key!("status"), status);
    if let Some(time) = time {
        json.key(key!("time"));
        json.timestamp_micros(time);
    }
    if let Some(output) = output {
        json.field_str(key!("output"), output);
    }
    json.close(b'}');
    json.close(b']');
}

fn health_json_body(
    snapshot: &Snapshot,
    request: &Request<'_>,
    entries: &[Entry<'_>],
    verdict: &Verdict,
    clock: Clock,
) -> String {
    let mut json = Json::with_capacity(256 + entries.len() * 480);
    let wall_now = clock.wall_micros();
    json.open(b'{');
    json.field_plain(key!("status"), verdict.status.as_str());
    if let Some(service) = snapshot.service() {
        json.field_str(key!("serviceId"), service);
    }
    json.key(key!("description"));
    json.separate();
    json.out.push(b'"');
    json.out
        .extend_from_slice(request.probe.as_str().as_bytes());
    if let Some(service) = snapshot.service() {
        json.out.extend_from_slice(b" of ");
        json.escape_into(service);
    }
    json.out.push(b'"');
    match verdict.status {
        Status::Pass => {}
        Status::Warn => json.field_str(
            key!("output"),
            &format!("degraded: {}", verdict.degraded.join(", ")),
        ),
        Status::Fail => json.field_str(
            key!("output"),
            &format!("failing: {}", verdict.failing.join(", ")),
        ),
    }
    if verdict.status == Status::Fail && !verdict.degraded.is_empty() {
        json.key(key!("notes"));
        json.open(b'[');
        json.string(&format!("degraded: {}", verdict.degraded.join(", ")));
        json.close(b']');
    }
    json.key(key!("checks"));
    json.open(b'{');
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
        match entry.check {
            Some(check) => {
                let last = check.last();
                let kind = component_type(check.dependency());
                let time = last.map(|l| wall_micros_at(wall_now, clock, l.at));
                health_item(
                    &mut json,
                    entry.name,
                    Some("responseTime"),
                    kind,
                    None,
                    last.map(|l| l.duration),
                    status,
                    time,
                    output.as_deref(),
                );
                for measurement in last.map(|l| l.measurements.as_slice()).unwrap_or(&[]) {
                    health_item(
                        &mut json,
                        entry.name,
                        Some(&measurement.name),
                        kind,
                        Some((measurement.value, measurement.unit.as_deref())),
                        None,
                        status,
                        time,
                        None,
                    );
                }
            }
            None => health_item(
                &mut json,
                entry.name,
                None,
                "system",
                None,
                None,
                status,
                None,
                output.as_deref(),
            ),
        }
    }
    json.close(b'}');
    json.close(b'}');
    json.finish()
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
    fn writes_json_values() {
        let mut json = Json::with_capacity(64);
        json.open(b'[');
        json.string("a\"b\\c\n\u{1}");
        json.number(3.0);
        json.number(-2.0);
        json.number(0.25);
        json.number(f64::NAN);
        json.millis(Duration::from_micros(1500));
        json.millis(Duration::from_micros(3));
        json.millis(Duration::from_millis(7));
        json.boolean(false);
        json.close(b']');
        let text = json.finish();
        assert_eq!(
            text,
            r#"["a\"b\\c\n\u0001",3,-2,0.25,null,1.5,0.003,7,false]"#
        );
        let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed[0], "a\"b\\c\n\u{1}");
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
