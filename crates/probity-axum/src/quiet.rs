//! Keeping probe traffic out of access logs, traces and request metrics.
//!
//! A kubelet probes every pod every few seconds, on each of three probes; a load balancer adds
//! its own checks. Logged and traced like user requests, that traffic drowns the access log
//! and skews request metrics — a draining instance's 503s on `/readyz` would read as errors
//! served to users. [`QuietProbesLayer`] wraps the layers that log, trace or count (a
//! `tower_http::trace::TraceLayer`, a [`crate::RequestMetricsLayer`], or a stack of them) and
//! sends probe requests around them, straight to the service.

use axum::BoxError;
use axum::body::{Body, Bytes, HttpBody};
use http::{Request, Response};
use pin_project_lite::pin_project;
use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::{Layer, Service};

/// The gRPC health service's path prefix.
pub const GRPC_HEALTH_PATH: &str = "/grpc.health.v1.Health";

/// The paths [`QuietProbesLayer`] treats as probes unless told otherwise: the three probes
/// at their default paths (with their per-entry sub-paths) and the gRPC health service. A
/// service with its own [`probity::ProbePaths`] uses [`QuietProbesLayer::for_health`].
pub const DEFAULT_PROBE_PATHS: &[&str] = &["/livez", "/readyz", "/startupz", GRPC_HEALTH_PATH];

/// Applies a layer to every request except probes.
///
/// A request is a probe when its path is one of the probe paths or lies under one
/// (`/readyz` and `/readyz/db`, not `/readyzz`). The paths default to
/// [`DEFAULT_PROBE_PATHS`]; set others (for probes nested under a prefix) with
/// [`QuietProbesLayer::paths`].
///
/// ```
/// use axum::Router;
/// use probity_axum::{QuietProbesLayer, RequestMetricsLayer};
///
/// let app: Router = Router::new()
///     // .merge(Probes::new(health).router()) and the service's own routes
///     .layer(QuietProbesLayer::new(RequestMetricsLayer::new()));
/// # let _ = app;
/// ```
///
/// Both paths answer with `axum::body::Body`, so the wrapped layer may change the body type
/// (as `TraceLayer` does).
#[derive(Debug, Clone)]
pub struct QuietProbesLayer<L> {
    layer: L,
    paths: Arc<[Cow<'static, str>]>,
}

impl<L> QuietProbesLayer<L> {
    /// Wraps `layer` so probe requests skip it.
    pub fn new(layer: L) -> Self {
        Self {
            layer,
            paths: DEFAULT_PROBE_PATHS
                .iter()
                .map(|path| Cow::Borrowed(*path))
                .collect(),
        }
    }

    /// Wraps `layer` so the probes of `health` (at its own paths) and gRPC health skip it.
    pub fn for_health(health: impl Into<probity::HealthView>, layer: L) -> Self {
        let health = health.into();
        let paths = health.paths();
        Self::new(layer).paths([
            Cow::Owned(paths.liveness().to_owned()),
            Cow::Owned(paths.readiness().to_owned()),
            Cow::Owned(paths.startup().to_owned()),
            Cow::Borrowed(GRPC_HEALTH_PATH),
        ])
    }

    /// Replaces the probe paths (each with its sub-paths), e.g. `["/internal/live",
    /// "/internal/ready"]`.
    pub fn paths<I, P>(mut self, paths: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<Cow<'static, str>>,
    {
        self.paths = paths
            .into_iter()
            .map(|path| {
                let path = path.into();
                match path.strip_suffix('/') {
                    Some(trimmed) if !trimmed.is_empty() => Cow::Owned(trimmed.to_owned()),
                    _ => path,
                }
            })
            .collect();
        self
    }
}

impl<S, L> Layer<S> for QuietProbesLayer<L>
where
    S: Clone,
    L: Layer<S>,
{
    type Service = QuietProbes<S, L::Service>;

    fn layer(&self, inner: S) -> Self::Service {
        QuietProbes {
            bare: inner.clone(),
            wrapped: self.layer.layer(inner),
            paths: self.paths.clone(),
        }
    }
}

/// The service [`QuietProbesLayer`] builds: probes go to `bare`, everything else to `wrapped`.
#[derive(Debug, Clone)]
pub struct QuietProbes<S, W> {
    bare: S,
    wrapped: W,
    paths: Arc<[Cow<'static, str>]>,
}

impl<S, W> QuietProbes<S, W> {
    /// Whether `path` is a probe path or lies under one.
    pub fn is_probe(&self, path: &str) -> bool {
        is_probe_path(&self.paths, path)
    }
}

pub(crate) fn is_probe_path(paths: &[Cow<'static, str>], path: &str) -> bool {
    paths
        .iter()
        .any(|probe| match path.strip_prefix(probe.as_ref()) {
            Some(rest) => rest.is_empty() || rest.starts_with('/'),
            None => false,
        })
}

impl<S, W, ReqBody, BareBody, WrappedBody> Service<Request<ReqBody>> for QuietProbes<S, W>
where
    S: Service<Request<ReqBody>, Response = Response<BareBody>>,
    W: Service<Request<ReqBody>, Response = Response<WrappedBody>, Error = S::Error>,
    BareBody: HttpBody<Data = Bytes> + Send + 'static,
    BareBody::Error: Into<BoxError>,
    WrappedBody: HttpBody<Data = Bytes> + Send + 'static,
    WrappedBody::Error: Into<BoxError>,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = QuietFuture<S::Future, W::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Which of the two serves the request is known only in `call`, so both must be ready.
        let bare = self.bare.poll_ready(cx)?;
        let wrapped = self.wrapped.poll_ready(cx)?;
        if bare.is_ready() && wrapped.is_ready() {
            Poll::Ready(Ok(()))
        } else {
            Poll::Pending
        }
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        if self.is_probe(request.uri().path()) {
            QuietFuture::bare(self.bare.call(request))
        } else {
            QuietFuture::wrapped(self.wrapped.call(request))
        }
    }
}

pin_project! {
    /// The response future of [`QuietProbes`].
    #[derive(Debug)]
    pub struct QuietFuture<B, W> {
        #[pin]
        route: Route<B, W>,
    }
}

impl<B, W> QuietFuture<B, W> {
    fn bare(future: B) -> Self {
        Self {
            route: Route::Bare { future },
        }
    }

    fn wrapped(future: W) -> Self {
        Self {
            route: Route::Wrapped { future },
        }
    }
}

pin_project! {
    #[project = RouteProjection]
    #[derive(Debug)]
    enum Route<B, W> {
        // A probe, served without the wrapped layer.
        Bare {
            #[pin]
            future: B,
        },
        // Any other request, through the wrapped layer.
        Wrapped {
            #[pin]
            future: W,
        },
    }
}

impl<B, W, BareBody, WrappedBody, E> Future for QuietFuture<B, W>
where
    B: Future<Output = Result<Response<BareBody>, E>>,
    W: Future<Output = Result<Response<WrappedBody>, E>>,
    BareBody: HttpBody<Data = Bytes> + Send + 'static,
    BareBody::Error: Into<BoxError>,
    WrappedBody: HttpBody<Data = Bytes> + Send + 'static,
    WrappedBody::Error: Into<BoxError>,
{
    type Output = Result<Response<Body>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().route.project() {
            RouteProjection::Bare { future } => future
                .poll(cx)
                .map(|result| result.map(|response| response.map(Body::new))),
            RouteProjection::Wrapped { future } => future
                .poll(cx)
                .map(|result| result.map(|response| response.map(Body::new))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_probe_paths_and_their_sub_paths_only() {
        let layer = QuietProbesLayer::new(tower::layer::util::Identity::new());
        let paths = &layer.paths;
        assert!(is_probe_path(paths, "/livez"));
        assert!(is_probe_path(paths, "/readyz/db"));
        assert!(is_probe_path(paths, "/grpc.health.v1.Health/Check"));
        assert!(!is_probe_path(paths, "/readyzz"));
        assert!(!is_probe_path(paths, "/orders"));
        assert!(!is_probe_path(paths, "/"));
        let custom = QuietProbesLayer::new(()).paths(["/internal/ready/"]);
        assert!(is_probe_path(&custom.paths, "/internal/ready"));
        assert!(is_probe_path(&custom.paths, "/internal/ready/db"));
        assert!(!is_probe_path(&custom.paths, "/livez"));
    }
}
