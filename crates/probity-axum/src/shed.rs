//! Shedding the requests an instance cannot serve, before the handler runs.
//!
//! Draining takes time: a load balancer takes an instance out after its own checks see a
//! failing `/readyz` (HAProxy: `fall × inter`; Kubernetes: `periodSeconds × failureThreshold`).
//! Until then requests keep arriving, and a handler that needs the broken dependency waits for
//! it — a pool acquire timeout, a connect timeout — and fails late, perhaps after writing
//! something. [`ShedLayer`] answers them at once with `503` and `Retry-After`, without calling
//! the handler: nothing was processed, so the request is safe to send elsewhere whatever its
//! method. HAProxy with `retry-on 503` and `option redispatch` (as `deploy/haproxy` ships) does
//! exactly that; Envoy's `retry_on: retriable-status-codes` with `retriable_status_codes: [503]`
//! and Istio's `retryOn: retriable-status-codes` do the same. The client sees a served request.

use axum::body::Body;
use axum::response::Response;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use http::{Request, StatusCode};
use pin_project_lite::pin_project;
use probity::{HealthView, UnknownName};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tower::{Layer, Service};

/// Answers `503 Service Unavailable` with `Retry-After`, without calling the handler, while a
/// check the routes need is failing or the service has not finished starting.
///
/// - **A needed check** ([`ShedLayer::needs`]) sheds while it fails as asked alone
///   (`/readyz/db` would answer 503): a hard check inside its fail-open window still serves, so
///   shedding follows the same rule as readiness.
/// - **Startup**: until every startup step has completed (those that wait on a dependency
///   included), requests are shed with the reason `starting`.
/// - **Shutdown does not shed.** The drain delay exists so that an instance leaving the
///   rotation keeps serving what still reaches it; shedding then would fail the requests the
///   delay is there to serve.
///
/// The decision reads the current snapshot (a load and a few comparisons, no I/O). Shed answers
/// carry `Cache-Control: no-store` and a one-line body naming the reason (a check's name or
/// `starting`, never a host or an error text), and are counted in
/// `probity_requests_shed_total{reason}`.
///
/// ```
/// use axum::{Router, routing::post};
/// use probity::{CheckSpec, Detail, Health, Tier};
/// use probity_axum::ShedLayer;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let health = Health::builder()
///     .check(CheckSpec::new("db", Tier::Hard, || async { Ok(Detail::new()) }))
///     .build()?;
/// // Writes need the database: shed them while it fails instead of timing out on the pool.
/// let writes: Router = Router::new()
///     .route("/orders", post(|| async { "created" }))
///     .layer(ShedLayer::new(&health).needs("db")?);
/// # let _ = writes;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ShedLayer {
    health: HealthView,
    needs: Arc<[Arc<str>]>,
    retry_after: HeaderValue,
}

impl ShedLayer {
    /// Sheds while `health` has not finished starting; add the checks the routes need with
    /// [`ShedLayer::needs`].
    pub fn new(health: impl Into<HealthView>) -> Self {
        ShedLayer {
            health: health.into(),
            needs: Arc::from([]),
            retry_after: HeaderValue::from_static("1"),
        }
    }

    /// Also sheds while readiness check `check` fails. An error when no such check is
    /// declared.
    pub fn needs(mut self, check: &str) -> Result<Self, UnknownName> {
        let snapshot = self.health.snapshot();
        if snapshot.check(check).is_none() {
            return Err(UnknownName {
                kind: "check",
                name: check.to_owned(),
                known: snapshot
                    .checks()
                    .map(|check| check.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        let mut needs: Vec<Arc<str>> = self.needs.to_vec();
        needs.push(Arc::from(check));
        self.needs = Arc::from(needs);
        Ok(self)
    }

    /// The `Retry-After` of shed answers, in whole seconds (at least 1; default 1).
    pub fn retry_after(mut self, after: Duration) -> Self {
        self.retry_after = HeaderValue::from(after.as_secs().max(1));
        self
    }

    /// Why a request arriving now would be shed, if it would.
    fn reason(&self) -> Option<Arc<str>> {
        let snapshot = self.health.snapshot();
        if !snapshot.is_started() {
            return Some(Arc::from("starting"));
        }
        let now = tokio::time::Instant::now();
        self.needs
            .iter()
            .find(|name| {
                snapshot
                    .check(name)
                    .is_some_and(|check| !check.serves_alone(now))
            })
            .cloned()
    }

    fn shed(&self, reason: &str) -> Response {
        metrics::counter!("probity_requests_shed_total", "reason" => reason.to_owned())
            .increment(1);
        let mut response = Response::new(Body::from(format!(
            "unavailable ({reason}): the request was not processed; retry\n"
        )));
        *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
        let headers = response.headers_mut();
        headers.insert(RETRY_AFTER, self.retry_after.clone());
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        response
    }
}

impl<S> Layer<S> for ShedLayer {
    type Service = Shed<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Shed {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service [`ShedLayer`] builds.
#[derive(Debug, Clone)]
pub struct Shed<S> {
    inner: S,
    layer: ShedLayer,
}

impl<S, ReqBody> Service<Request<ReqBody>> for Shed<S>
where
    S: Service<Request<ReqBody>, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = ShedFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        match self.layer.reason() {
            Some(reason) => ShedFuture {
                future: None,
                response: Some(self.layer.shed(&reason)),
            },
            None => ShedFuture {
                future: Some(self.inner.call(request)),
                response: None,
            },
        }
    }
}

pin_project! {
    /// The response future of [`Shed`]: the shed answer, or the handler's.
    #[derive(Debug)]
    pub struct ShedFuture<F> {
        // The handler's future; `None` when shed.
        #[pin]
        future: Option<F>,
        // The shed answer, until it is taken.
        response: Option<Response>,
    }
}

impl<F, E> Future for ShedFuture<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Some(future) = this.future.as_pin_mut() {
            return future.poll(cx);
        }
        match this.response.take() {
            Some(response) => Poll::Ready(Ok(response)),
            // Polled again after it completed: stay pending rather than panic.
            None => Poll::Pending,
        }
    }
}
