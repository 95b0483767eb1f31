//! Counting requests by status, for per-instance error-rate alerts.
//!
//! In the pool-leak incident the fleet error rate read 33% while one instance of three failed
//! every request; the alert that points at the broken instance divides that instance's 5xx
//! rate by its request rate:
//!
//! ```text
//! sum by (instance) (rate(http_requests_total{status=~"5.."}[2m]))
//!   / sum by (instance) (rate(http_requests_total[2m])) > 0.1
//! ```
//!
//! [`RequestMetricsLayer`] provides that counter through the `metrics` facade; the service
//! installs whichever exporter it uses, and Prometheus adds the `instance` label at scrape
//! time. Wrap it in a [`crate::QuietProbesLayer`] so probe answers (a draining instance's
//! 503s) do not count as errors served to users.

use http::{Request, Response};
use pin_project_lite::pin_project;
use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tower::{Layer, Service};

/// The counter's default name.
pub(crate) const DEFAULT_COUNTER: &str = "http_requests_total";

/// Counts every response by status code: `http_requests_total{status="200"}`.
///
/// A request whose service fails without a response (the connection is dropped) counts as
/// `status="500"`: to the client it is a server error.
#[derive(Debug, Clone)]
pub struct RequestMetricsLayer {
    name: Cow<'static, str>,
}

impl RequestMetricsLayer {
    /// Counts into `http_requests_total`.
    pub fn new() -> Self {
        Self {
            name: Cow::Borrowed(DEFAULT_COUNTER),
        }
    }

    /// Counts into a counter with another name.
    pub fn name(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.name = name.into();
        self
    }
}

impl Default for RequestMetricsLayer {
    fn default() -> Self {
        Self::new()
    }
}

impl<S> Layer<S> for RequestMetricsLayer {
    type Service = RequestMetrics<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequestMetrics {
            inner,
            name: self.name.clone(),
        }
    }
}

/// The service [`RequestMetricsLayer`] builds.
#[derive(Debug, Clone)]
pub struct RequestMetrics<S> {
    inner: S,
    name: Cow<'static, str>,
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for RequestMetrics<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = RequestMetricsFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        RequestMetricsFuture {
            future: self.inner.call(request),
            name: self.name.clone(),
        }
    }
}

pin_project! {
    /// The response future of [`RequestMetrics`].
    #[derive(Debug)]
    pub struct RequestMetricsFuture<F> {
        #[pin]
        future: F,
        name: Cow<'static, str>,
    }
}

impl<F, ResBody, E> Future for RequestMetricsFuture<F>
where
    F: Future<Output = Result<Response<ResBody>, E>>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let result = std::task::ready!(this.future.poll(cx));
        let status = match &result {
            Ok(response) => response.status().as_u16(),
            Err(_) => 500,
        };
        metrics::counter!(this.name.clone(), "status" => status_label(status)).increment(1);
        Poll::Ready(result)
    }
}

/// The label for a status code; the common ones without allocating.
fn status_label(status: u16) -> Cow<'static, str> {
    let common = match status {
        200 => "200",
        201 => "201",
        202 => "202",
        204 => "204",
        301 => "301",
        302 => "302",
        304 => "304",
        400 => "400",
        401 => "401",
        403 => "403",
        404 => "404",
        405 => "405",
        409 => "409",
        422 => "422",
        429 => "429",
        500 => "500",
        502 => "502",
        503 => "503",
        504 => "504",
        _ => return Cow::Owned(status.to_string()),
    };
    Cow::Borrowed(common)
}
