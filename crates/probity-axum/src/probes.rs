//! The probe endpoints: `/livez`, `/readyz`, `/startupz` and one sub-path per entry.

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use probity::render::{self, Clock, Details, Format, Query, Request};
use probity::{Health, ProbeKind};
use std::sync::Arc;

/// Builds the router that serves a [`Health`]'s probes.
///
/// | path | answers |
/// |---|---|
/// | `GET\|HEAD /livez`, `/readyz`, `/startupz` | the probe's verdict |
/// | `GET\|HEAD /livez/{name}`, `/readyz/{name}`, `/startupz/{name}` | one entry of the probe |
///
/// Every answer comes from [`probity::render::render`] over the current snapshot: the probe
/// does no I/O and never waits on a check. Query parameters: `?verbose` lists every entry,
/// `?exclude=NAME` (repeatable) shows an entry without counting it. `Accept` picks the format
/// (`text/plain` by default, `application/json`, `application/health+json`). An unknown entry
/// answers 404 listing the known names; a malformed query answers 400 saying what is wrong.
///
/// Error details (a check's error message) are withheld by default, as on a public listener;
/// the names of failing entries are always shown. Use [`Probes::details`] with
/// [`Details::Shown`] (or [`Probes::admin`]) on a listener only operators reach.
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
    health: Health,
    details: Details,
}

impl Probes {
    /// Probes for a public listener: error details withheld.
    pub fn new(health: Health) -> Self {
        Self {
            health,
            details: Details::Hidden,
        }
    }

    /// Probes for an admin listener: error details shown.
    pub fn admin(health: Health) -> Self {
        Self::new(health).details(Details::Shown)
    }

    /// Whether error details are shown (credentials are always redacted by the core).
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
        let state = Arc::new(self);
        let mut router = Router::new();
        for probe in [
            ProbeKind::Liveness,
            ProbeKind::Readiness,
            ProbeKind::Startup,
        ] {
            let path = probe.default_path();
            router = router
                .route(
                    path,
                    get(move |state, request| whole(state, request, probe)),
                )
                .route(
                    &format!("{path}/{{name}}"),
                    get(move |state, name, request| single(state, name, request, probe)),
                );
        }
        router.with_state(state)
    }

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
        let rendered = match Query::parse(raw) {
            Ok(query) => {
                let request = Request {
                    probe,
                    check,
                    query: &query,
                    format,
                    details: self.details,
                };
                render::render(&self.health.snapshot(), &request, Clock::now())
            }
            Err(error) => render::render_error(400, format, &error.to_string(), &[]),
        };
        into_response(rendered)
    }
}

// The handlers take the request itself rather than `HeaderMap` and `RawQuery` extractors:
// those copy the headers and the query on every probe.
async fn whole(
    State(probes): State<Arc<Probes>>,
    request: axum::extract::Request,
    probe: ProbeKind,
) -> Response {
    probes.answer(probe, None, request.uri().query(), request.headers())
}

async fn single(
    State(probes): State<Arc<Probes>>,
    Path(name): Path<String>,
    request: axum::extract::Request,
    probe: ProbeKind,
) -> Response {
    probes.answer(probe, Some(&name), request.uri().query(), request.headers())
}

/// Turns the core's framework-free answer into an axum response.
pub(crate) fn into_response(rendered: render::Response) -> Response {
    let status = StatusCode::from_u16(rendered.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, rendered.body).into_response();
    let headers = response.headers_mut();
    for (name, value) in rendered.headers {
        headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    response
}
