//! Rendering, framework-free: (snapshot, request) → (status code, content type, body).
//!
//! Every surface — the axum router, a hand-written hyper service, the sidecar, a test — calls
//! [`render`], so all of them answer the same way:
//!
//! - **200** for `pass` and `warn`, **503** for `fail`; the status code is the contract, the
//!   body explains it and **always names what failed**;
//! - `Cache-Control: no-store` and `X-Content-Type-Options: nosniff` on every answer
//!   ([`HEADERS`]);
//! - three formats, chosen by the `Accept` header:
//!   - `text/plain` (the default, and the answer to `*/*`): the Kubernetes API server's
//!     convention — `ok` when passing, and with `?verbose` (or when not passing) one line per
//!     entry: `[+]db ok`, `[-]db failed: <reason>`, `[!]cache degraded (soft): <reason>`,
//!     `[!]telemetry failed (info, not counted): <reason>`, `[ ]db excluded`, then
//!     `readyz check passed|passed with warnings|failed`;
//!   - `application/json`: `{status, probe, service, failing, degraded, checks: [...]}` with
//!     each entry's tier, status, reason, timing and measurements;
//!   - `application/health+json` (IETF draft-inadarei-api-health-check): `status`, `output`,
//!     and `checks` keyed `name:measurement` — `db:responseTime` for every check plus one key
//!     per measurement (`db:connections`, `db:utilization`…), each an array of one object with
//!     `componentType`, `observedValue`, `observedUnit`, `status`, `time`, `output`.
//! - query: `?verbose` (text only: list every entry), `?exclude=NAME` (repeatable; the entry
//!   is shown but does not count), and a single entry by name (`{path}/db`), which answers for
//!   itself ([`crate::CheckState::serves_alone`]).
//! - reasons follow one policy, [`Details`]: a class of failure on a public listener, the full
//!   reason on an admin one.
//!
//! Rendering reads and formats; it records nothing (the surfaces count answers with
//! [`crate::metrics::record_probe`]) and keeps nothing. A passing probe asked plainly — what a
//! kubelet sends every few seconds — is answered without allocating. A surface may keep any
//! whole-probe answer for as long as [`Snapshot::answer_lasts`] says it reads the same.

mod json;
mod text;

pub use crate::details::Details;
use crate::snapshot::{Entry, Snapshot, Verdict};
use probity_contract::{ProbeKind, Status};
use std::borrow::Cow;
use std::fmt;
use std::time::SystemTime;
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
    pub const fn content_type(self) -> &'static str {
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
        // One type, as probes and most clients send it: one comparison, no parsing.
        match accept {
            "application/json" => return Format::Json,
            "application/health+json" => return Format::HealthJson,
            "text/plain" | "*/*" => return Format::Text,
            _ => {}
        }
        let mut best: Option<(Format, f32)> = None;
        for range in accept.split(',') {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or("").trim();
            let mut quality = 1.0_f32;
            for parameter in parts {
                if let Some((key, value)) = parameter.split_once('=')
                    && key.trim().eq_ignore_ascii_case("q")
                {
                    quality = value.trim().parse().unwrap_or(0.0);
                }
            }
            let format = if media.eq_ignore_ascii_case("application/health+json") {
                Format::HealthJson
            } else if media.eq_ignore_ascii_case("application/json")
                || media.eq_ignore_ascii_case("application/*")
            {
                Format::Json
            } else if media.eq_ignore_ascii_case("text/plain")
                || media.eq_ignore_ascii_case("text/*")
                || media == "*/*"
            {
                Format::Text
            } else {
                continue;
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
    /// Bad percent-encoding, or a query too long to be a probe's.
    #[error("malformed query string: {0}")]
    Malformed(String),
}

/// The longest query string a probe accepts; probes send none or a few words.
const MAX_QUERY: usize = 2048;

impl Query {
    /// Parses a raw query string (without the `?`): `verbose`, `verbose=true|false|1|0`, and
    /// repeated `exclude=NAME`. Anything else is an error saying what is wrong.
    pub fn parse(raw: Option<&str>) -> Result<Query, QueryError> {
        let mut query = Query::default();
        let Some(raw) = raw else {
            return Ok(query);
        };
        if raw.len() > MAX_QUERY {
            return Err(QueryError::Malformed(format!(
                "{} bytes, more than the {MAX_QUERY} a probe's query may hold",
                raw.len()
            )));
        }
        for pair in raw.split('&').filter(|pair| !pair.is_empty()) {
            let (key, value) = match pair.split_once('=') {
                Some((key, value)) => (key, Some(value)),
                None => (pair, None),
            };
            let key = percent_decode(key)?;
            let value = value.map(percent_decode).transpose()?;
            match &*key {
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
                    Some(name) if !name.is_empty() => query.exclude.push(name.into_owned()),
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

/// A query's key or value decoded; borrowed when there is nothing to decode (`verbose`), so a
/// probe's usual query allocates nothing.
fn percent_decode(text: &str) -> Result<Cow<'_, str>, QueryError> {
    if !text.contains(['%', '+']) {
        return Ok(Cow::Borrowed(text));
    }
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
    String::from_utf8(out)
        .map(Cow::Owned)
        .map_err(|_| QueryError::Malformed("not valid UTF-8".into()))
}

/// One probe request.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// Which probe.
    pub probe: ProbeKind,
    /// A single entry (`{path}/{name}`), or the whole probe.
    pub check: Option<&'a str>,
    /// The parsed query.
    pub query: &'a Query,
    /// The body format.
    pub format: Format,
    /// How much of each reason is shown.
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
}

/// The headers every answer carries besides its `Content-Type`.
pub const HEADERS: [(&str, &str); 2] = [
    ("cache-control", "no-store"),
    ("x-content-type-options", "nosniff"),
];

/// A rendered answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The HTTP status code.
    pub status: u16,
    /// The `Content-Type`.
    pub content_type: &'static str,
    /// The body.
    pub body: Body,
    /// The probe's verdict, when the answer is a whole probe's (what
    /// `probity_probe_requests_total` counts); `None` for one entry's answer or an error.
    pub verdict: Option<Status>,
}

/// An answer's body: a fixed text (`ok`) or text rendered for this request.
#[derive(Debug, Clone)]
pub enum Body {
    /// A fixed text (`ok`).
    Static(&'static str),
    /// Rendered for this request.
    Owned(String),
}

impl Body {
    /// The text.
    pub fn as_str(&self) -> &str {
        match self {
            Body::Static(text) => text,
            Body::Owned(text) => text,
        }
    }

    /// The text, owned.
    pub fn into_owned(self) -> String {
        match self {
            Body::Owned(text) => text,
            Body::Static(text) => text.to_owned(),
        }
    }
}

impl std::ops::Deref for Body {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Body {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq for Body {
    fn eq(&self, other: &Body) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Body {}

impl PartialEq<str> for Body {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Body {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl From<&'static str> for Body {
    fn from(text: &'static str) -> Body {
        Body::Static(text)
    }
}

impl From<String> for Body {
    fn from(text: String) -> Body {
        Body::Owned(text)
    }
}

impl Response {
    fn new(status: u16, format: Format, body: impl Into<Body>) -> Self {
        Response {
            status,
            content_type: format.content_type(),
            body: body.into(),
            verdict: None,
        }
    }

    fn of_probe(verdict: Status, format: Format, body: impl Into<Body>) -> Self {
        Response {
            verdict: Some(verdict),
            ..Response::new(verdict.http_code(), format, body)
        }
    }

    /// The value of header `name` (lowercase): the content type or one of [`HEADERS`].
    pub fn header(&self, name: &str) -> Option<&str> {
        if name == "content-type" {
            return Some(self.content_type);
        }
        HEADERS
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| *value)
    }
}

/// Renders an error answer (400 for a bad query, 404 for an unknown entry) in `format`.
pub fn render_error(status: u16, format: Format, message: &str, known: &[&str]) -> Response {
    match format {
        Format::Text => {
            let body = if known.is_empty() {
                format!("{message}\n")
            } else {
                format!("{message}\nknown: {}\n", known.join(", "))
            };
            Response::new(status, Format::Text, body)
        }
        Format::Json | Format::HealthJson => {
            Response::new(status, Format::Json, json::error(message, known))
        }
    }
}

/// Renders a probe's answer from a snapshot: a pure function of the snapshot, the request and
/// the clock. A surface that answers often may keep what it renders for as long as
/// [`Snapshot::answer_lasts`] says it reads the same (probity-axum does).
pub fn render(snapshot: &Snapshot, request: &Request<'_>, clock: Clock) -> Response {
    // The common case — a probe that passes, asked plainly — needs no entry list at all.
    if request.format == Format::Text
        && request.check.is_none()
        && !request.query.verbose
        && request.query.exclude.is_empty()
        && snapshot.status(request.probe, clock.now) == Status::Pass
    {
        return Response::of_probe(Status::Pass, Format::Text, "ok\n");
    }
    let path = snapshot.paths().get(request.probe);
    // The names, for an exclusion to be checked against or an error to list; a probe asking
    // plainly needs neither.
    let known = || snapshot.entry_names(request.probe);
    if !request.query.exclude.is_empty() {
        let known = known();
        for name in &request.query.exclude {
            if !known.contains(&name.as_str()) {
                return render_error(
                    400,
                    request.format,
                    &format!("cannot exclude `{name}`: no such entry in {path}"),
                    &known,
                );
            }
        }
    }
    let (entries, verdict) = match request.check {
        Some(name) => {
            if !request.query.exclude.is_empty() {
                return render_error(
                    400,
                    request.format,
                    "`exclude` applies to a whole probe, not to a single entry",
                    &[],
                );
            }
            let Some(entry) = snapshot.entry(request.probe, name, clock.now) else {
                let noun = match request.probe {
                    ProbeKind::Readiness => "check",
                    ProbeKind::Liveness => "condition",
                    ProbeKind::Startup => "step",
                };
                return render_error(
                    404,
                    request.format,
                    &format!("no {noun} `{name}` in {path}"),
                    &known(),
                );
            };
            let entries = vec![entry];
            let verdict = Verdict::of(&entries);
            (entries, verdict)
        }
        None => {
            let excluded: Vec<&str> = request.query.exclude.iter().map(String::as_str).collect();
            let entries = snapshot.entries(request.probe, clock.now, &excluded);
            let verdict = Verdict::of(&entries);
            (entries, verdict)
        }
    };
    let body = match request.format {
        Format::Text => text::body(request, path, &entries, &verdict, clock),
        Format::Json => json::body(snapshot, request, &entries, &verdict, clock),
        Format::HealthJson => json::health_body(snapshot, request, &entries, &verdict, clock),
    };
    if request.check.is_some() {
        return Response::new(verdict.status.http_code(), request.format, body);
    }
    Response::of_probe(verdict.status, request.format, body)
}

/// What kind of entry it is, in the JSON outputs.
fn entry_kind(probe: ProbeKind, entry: &Entry<'_>) -> &'static str {
    if entry.check().is_some() {
        return "check";
    }
    if entry.step().is_some() {
        return "step";
    }
    match probe {
        ProbeKind::Liveness => "condition",
        ProbeKind::Startup => "step",
        ProbeKind::Readiness => "gate",
    }
}

/// The word a probe's answer ends with: `readyz` for `/readyz`, `ready` for `/internal/ready`.
fn endpoint_word(path: &str) -> &str {
    path.rsplit('/')
        .next()
        .filter(|word| !word.is_empty())
        .unwrap_or(path)
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
        // Spelled otherwise than the one-comparison path expects, the same answers.
        assert_eq!(Format::negotiate(Some("Application/JSON")), Format::Json);
        assert_eq!(Format::negotiate(Some(" application/json ")), Format::Json);
        assert_eq!(
            Format::negotiate(Some("application/health+json;q=1")),
            Format::HealthJson
        );
        assert_eq!(Format::negotiate(Some("TEXT/PLAIN")), Format::Text);
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
        assert!(matches!(
            Query::parse(Some(&"exclude=x&".repeat(500))),
            Err(QueryError::Malformed(_))
        ));
    }

    #[test]
    fn names_the_endpoint_by_its_last_segment() {
        assert_eq!(endpoint_word("/readyz"), "readyz");
        assert_eq!(endpoint_word("/internal/ready"), "ready");
    }
}
