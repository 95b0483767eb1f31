//! Ending keep-alive connections while readiness fails, so clients move to a ready instance.
//!
//! Taking an instance out of rotation removes it from the load balancer's list of endpoints;
//! it does not cut the connections clients already hold. A Kubernetes Service routes through
//! conntrack, which keeps established TCP connections to an endpoint that left (kube-proxy
//! flushes conntrack for UDP only), and an HTTP client pool keeps reusing a connection until
//! one side closes it. A pod that failed readiness because its pool leaked keeps receiving —
//! and failing — the requests of every client connected to it.
//!
//! [`CloseWhenUnreadyLayer`] closes them: while readiness fails, every HTTP/1 response carries
//! `Connection: close`, and the server closes the connection once it is sent. The client's next
//! request opens a new connection, which the Service sends to a ready endpoint. HTTP/2 has no
//! per-response close (`Connection` is forbidden there); those connections end at shutdown,
//! when [`crate::serve()`] sends GOAWAY.

use http::header::{CONNECTION, HeaderValue};
use http::{Request, Response, Version};
use pin_project_lite::pin_project;
use probity::{HealthView, ProbeKind, Status};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tower::{Layer, Service};

/// Adds `Connection: close` to HTTP/1 responses while the readiness verdict is `fail`
/// (failing hard checks, a pending startup, shutdown).
///
/// Taking an instance out of rotation removes it from the load balancer's endpoints; it does
/// not cut the connections clients already hold. A Kubernetes Service routes through conntrack,
/// which keeps established TCP connections to an endpoint that left, and an HTTP client pool
/// reuses a connection until one side closes it: a pod out of rotation because its pool leaked
/// keeps failing the requests of every client connected to it. With this layer the server
/// closes each connection after its next response, and the client's new connection goes to a
/// ready endpoint. HTTP/2 has no per-response close (`Connection` is forbidden there); those
/// connections end at shutdown, when [`crate::serve()`] sends GOAWAY.
///
/// The verdict is read from the snapshot when the response is ready, so a request that was in
/// flight when the instance fell out of rotation closes its connection too. Reading it costs a
/// snapshot load and a decision (about 100 ns); nothing else is touched.
///
/// ```
/// use axum::{Router, routing::get};
/// use probity::Health;
/// use probity_axum::{CloseWhenUnreadyLayer, Probes};
///
/// # fn main() -> Result<(), probity::BuildError> {
/// let health = Health::builder().service("checkout").build()?;
/// let app: Router = Router::new()
///     .route("/orders", get(|| async { "[]" }))
///     .layer(CloseWhenUnreadyLayer::new(health.clone()))
///     .merge(Probes::new(health).router());
/// # let _ = app;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct CloseWhenUnreadyLayer {
    health: HealthView,
}

impl CloseWhenUnreadyLayer {
    /// Closes connections while `health`'s readiness fails.
    pub fn new(health: impl Into<HealthView>) -> Self {
        Self {
            health: health.into(),
        }
    }
}

impl<S> Layer<S> for CloseWhenUnreadyLayer {
    type Service = CloseWhenUnready<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CloseWhenUnready {
            inner,
            health: self.health.clone(),
        }
    }
}

/// The service [`CloseWhenUnreadyLayer`] builds.
#[derive(Debug, Clone)]
pub struct CloseWhenUnready<S> {
    inner: S,
    health: HealthView,
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for CloseWhenUnready<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = CloseWhenUnreadyFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        // `Connection` is an HTTP/1 header; an HTTP/2 response must not carry it.
        let http1 = matches!(
            request.version(),
            Version::HTTP_09 | Version::HTTP_10 | Version::HTTP_11
        );
        CloseWhenUnreadyFuture {
            future: self.inner.call(request),
            health: http1.then(|| self.health.clone()),
        }
    }
}

pin_project! {
    /// The response future of [`CloseWhenUnready`].
    #[derive(Debug)]
    pub struct CloseWhenUnreadyFuture<F> {
        #[pin]
        future: F,
        // `None` for protocols without a per-response close.
        health: Option<HealthView>,
    }
}

impl<F, ResBody, E> Future for CloseWhenUnreadyFuture<F>
where
    F: Future<Output = Result<Response<ResBody>, E>>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut result = std::task::ready!(this.future.poll(cx));
        if let (Ok(response), Some(health)) = (&mut result, this.health.as_ref()) {
            let ready = health
                .snapshot()
                .status(ProbeKind::Readiness, tokio::time::Instant::now());
            if ready == Status::Fail {
                response
                    .headers_mut()
                    .insert(CONNECTION, HeaderValue::from_static("close"));
            }
        }
        Poll::Ready(result)
    }
}
