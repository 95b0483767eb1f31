//! The probe endpoints: `/livez`, `/readyz`, `/startupz` and one sub-path per entry.

use crate::answers::{self, Answers};
use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::Response;
use axum::routing::{get, get_service};
use bytes::Bytes;
use probity::render::{self, Format, Query, Request};
use probity::{Details, HealthView, ProbeKind};
use std::convert::Infallible;
use std::future::{Ready, ready};
use std::sync::Arc;
use std::task::{Context, Poll};

/// Builds the router that serves a [`probity::Health`]'s probes.
///
/// | path | answers |
/// |---|---|
/// | `GET\|HEAD /livez`, `/readyz`, `/startupz` (or the service's own [`probity::ProbePaths`]) | the probe's verdict |
/// | `GET\|HEAD {path}/{name}` | one entry of the probe |
///
/// Every answer comes from [`probity::render::render`] over the current snapshot: the probe
/// does no I/O and never waits on a check. A whole probe's answer is kept and served again
/// while it reads the same (the same snapshot, nothing in it counting seconds). Query parameters: `?verbose` lists every entry,
/// `?exclude=NAME` (repeatable) shows an entry without counting it. `Accept` picks the format
/// (`text/plain` by default, `application/json`, `application/health+json`). An unknown entry
/// answers 404 listing the known names; a malformed query answers 400 saying what is wrong.
///
/// Error details (a check's error message) are withheld by default, as on a public listener;
/// the names of failing entries are always shown. Use [`Probes::details`] with
/// [`Details::Admin`] (or [`Probes::admin`]) on a listener only operators reach.
///
/// ```
/// use probity::Health;
/// use probity_axum::Probes;
///
/// # fn main() -> Result<(), probity::BuildError> {
/// let health = Health::builder().service("checkout").build()?;
/// let public: axum::Router = Probes::new(health.clone()).router();
/// let admin: axum::Router = Probes::admin(health).router();
/// # let _ = (public, admin);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Probes {
    health: HealthView,
    details: Details,
}

impl Probes {
    /// Probes for a public listener — and for the only listener, when the service has one: a
    /// failing entry shows its name and class of failure, never the reason's text (which the
    /// log carries). See the [crate docs](crate#detail-policy-which-constructor).
    pub fn new(health: impl Into<HealthView>) -> Self {
        Self {
            health: health.into(),
            details: Details::Public,
        }
    }

    /// Probes for a listener only operators reach: full reasons shown (credentials redacted).
    /// See the [crate docs](crate#detail-policy-which-constructor) for when one listener may
    /// use it.
    pub fn admin(health: impl Into<HealthView>) -> Self {
        Self::new(health).details(Details::Admin)
    }

    /// How much of each reason is shown (credentials are always redacted by the core).
    pub fn details(mut self, details: Details) -> Self {
        self.details = details;
        self
    }

    /// The router, to merge into the service's own (`app.merge(probes.router())`) or to
    /// nest under a prefix.
    pub fn router<S>(self) -> Router<S>
    where
        S: Clone + Send + Sync + 'static,
    {
        let state = Arc::new(Served {
            probes: self,
            answers: Answers::default(),
        });
        let mut router = Router::new();
        for probe in [
            ProbeKind::Liveness,
            ProbeKind::Readiness,
            ProbeKind::Startup,
        ] {
            let path = state.probes.health.paths().get(probe).to_owned();
            let whole = Whole {
                served: state.clone(),
                probe,
            };
            router = router.route(&path, get_service(whole)).route(
                &format!("{path}/{{name}}"),
                get(move |state, name, request| single(state, name, request, probe)),
            );
        }
        router.with_state(state)
    }
}

/// The router's state: the probes and the answers it keeps.
#[derive(Debug)]
struct Served {
    probes: Probes,
    answers: Answers,
}

impl Served {
    fn answer(
        &self,
        probe: ProbeKind,
        check: Option<&str>,
        raw: Option<&str>,
        headers: &HeaderMap,
    ) -> Response {
        let accept = headers
            .get(header::ACCEPT)
            .and_then(|value| value.to_str().ok());
        let format = Format::negotiate(accept);
        let query = match Query::parse(raw) {
            Ok(query) => query,
            Err(error) => {
                return into_response(render::render_error(400, format, &error.to_string(), &[]));
            }
        };
        let request = Request {
            probe,
            check,
            query: &query,
            format,
            details: self.probes.details,
        };
        let clock = answers::clock(format);
        if check.is_none() && query.exclude.is_empty() {
            let (verdict, headers, body) =
                answers::answer(&self.answers, &self.probes.health, &request, clock);
            probity::metrics::record_probe(probe, verdict);
            return response(verdict.http_code(), headers, body);
        }
        let rendered = render::render(&self.probes.health.snapshot(), &request, clock);
        if let Some(verdict) = rendered.verdict {
            probity::metrics::record_probe(probe, verdict);
        }
        into_response(rendered)
    }
}

/// A whole probe's path, as a service rather than a handler: its answer is ready when it is
/// called, so it needs no extractor and no boxed handler future on the path every probe takes.
#[derive(Debug, Clone)]
struct Whole {
    served: Arc<Served>,
    probe: ProbeKind,
}

impl tower::Service<axum::extract::Request> for Whole {
    type Response = Response;
    type Error = Infallible;
    type Future = Ready<Result<Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: axum::extract::Request) -> Self::Future {
        ready(Ok(self.served.answer(
            self.probe,
            None,
            request.uri().query(),
            request.headers(),
        )))
    }
}

// The handler takes the request itself rather than `HeaderMap` and `RawQuery` extractors:
// those copy the headers and the query on every probe.
async fn single(
    State(served): State<Arc<Served>>,
    Path(name): Path<String>,
    request: axum::extract::Request,
    probe: ProbeKind,
) -> Response {
    served.answer(probe, Some(&name), request.uri().query(), request.headers())
}

/// Turns the core's framework-free answer into an axum response.
pub(crate) fn into_response(rendered: render::Response) -> Response {
    let body = bytes_of(rendered.body);
    let headers = headers(HeaderValue::from_static(rendered.content_type), body.len());
    response(rendered.status, headers, body)
}

/// A rendered body as bytes: a static one borrowed, an owned one taken without a copy.
pub(crate) fn bytes_of(body: render::Body) -> Bytes {
    match body {
        render::Body::Static(text) => Bytes::from_static(text.as_bytes()),
        render::Body::Owned(text) => Bytes::from(text),
    }
}

/// A probe's response: its status code, its headers ([`headers`]), its body.
fn response(status: u16, headers: HeaderMap, body: Bytes) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = Response::new(axum::body::Body::from(body));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// The headers of an answer of `length` bytes: its `Content-Type` and `Content-Length`, and
/// the headers every answer carries ([`render::HEADERS`]). With its length among them, a kept
/// answer's headers are whole: serving it again clones them, where inserting them one by one
/// hashes each name into an empty map.
pub(crate) fn headers(content_type: HeaderValue, length: usize) -> HeaderMap {
    let mut headers = HeaderMap::with_capacity(2 + HEADERS.len());
    headers.insert(header::CONTENT_TYPE, content_type);
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    for (name, value) in HEADERS {
        headers.insert(name, value);
    }
    headers
}

/// Each format's `Content-Type` as a header value.
pub(crate) fn content_type_of(format: Format) -> HeaderValue {
    HeaderValue::from_static(format.content_type())
}

/// [`render::HEADERS`] with their names as `http`'s constants, which a probe's answer does not
/// have to parse again (`HeaderName::from_static` matches the text against every standard name),
/// and their values checked at compile time.
const HEADERS: [(HeaderName, HeaderValue); render::HEADERS.len()] = [
    (
        header::CACHE_CONTROL,
        HeaderValue::from_static(render::HEADERS[0].1),
    ),
    (
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static(render::HEADERS[1].1),
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_names_are_the_cores() {
        for ((name, value), (core_name, core_value)) in HEADERS.iter().zip(render::HEADERS) {
            assert_eq!(name.as_str(), core_name);
            assert_eq!(value, core_value);
        }
    }

    #[test]
    fn each_format_has_its_content_type_its_length_and_every_header() {
        for format in [Format::Text, Format::Json, Format::HealthJson] {
            let headers = headers(content_type_of(format), 42);
            assert_eq!(headers[header::CONTENT_TYPE], format.content_type());
            assert_eq!(headers[header::CONTENT_LENGTH], "42");
            for (name, value) in render::HEADERS {
                assert_eq!(headers[name], value);
            }
            assert_eq!(headers.len(), 2 + render::HEADERS.len());
        }
    }
}
