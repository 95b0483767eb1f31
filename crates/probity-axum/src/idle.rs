//! The header-read and idle timeout of an HTTP/1 connection, kept by one timer per connection
//! instead of one per request.
//!
//! hyper's own `header_read_timeout` arms a fresh timer for every request head: a boxed sleep
//! registered in tokio's timer wheel and removed again once the head is in. On a keep-alive
//! connection answering probes that is most of what serving costs beyond the bare handler. Here
//! the connection's requests mark it busy while they run (until the response body is sent), and
//! one sleep per connection wakes when the connection could have been waiting on its client for
//! the whole timeout: if it was, the connection is closed; otherwise the sleep moves to the new
//! deadline. The rule is hyper's: the timeout counts from the moment the connection starts
//! waiting for a request head (when it is accepted, or when the last response finished) and
//! ends when a head has arrived whole — a client dribbling its head, or sitting idle on a
//! keep-alive connection, is cut after the timeout.
//!
//! HTTP/2 connections are left to HTTP/2's keep-alive pings once their first request shows the
//! protocol.

use axum::body::{Body, HttpBody};
use bytes::Bytes;
use http::{Request, Response, Version};
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Instant;
use tower::Service;

/// A response body at most this long is sent as soon as its head is: the request is done when
/// its response is. A longer or streaming body keeps the connection busy until it ends, so a
/// slow download is never taken for an idle client.
const SENT_WITH_HEAD: u64 = 64 * 1024;

/// What one connection's requests are doing.
#[derive(Debug)]
pub(crate) struct Activity {
    /// When the connection was accepted; `idle_since` counts from it.
    base: Instant,
    /// Requests running (their responses not yet sent).
    running: AtomicU32,
    /// When the last request finished, in nanoseconds after `base` (0: none has).
    idle_since: AtomicU64,
    /// The connection speaks HTTP/2.
    http2: AtomicBool,
}

impl Activity {
    pub(crate) fn new() -> Arc<Activity> {
        Arc::new(Activity {
            base: Instant::now(),
            running: AtomicU32::new(0),
            idle_since: AtomicU64::new(0),
            http2: AtomicBool::new(false),
        })
    }

    fn finished(&self) {
        let since = Instant::now().saturating_duration_since(self.base);
        self.idle_since.store(
            u64::try_from(since.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Release,
        );
        self.running.fetch_sub(1, Ordering::AcqRel);
    }

    /// When the connection would have waited on its client for `timeout`, if it is waiting
    /// now; `None` while a request runs.
    fn deadline(&self, timeout: Duration) -> Option<Instant> {
        if self.running.load(Ordering::Acquire) > 0 {
            return None;
        }
        let idle_since = Duration::from_nanos(self.idle_since.load(Ordering::Acquire));
        Some(self.base + idle_since + timeout)
    }
}

/// Serves `connection` until it ends, or until it has waited on its client for `timeout`
/// (then it is dropped, which closes it).
pub(crate) async fn serve<C: Future>(connection: C, activity: Arc<Activity>, timeout: Duration) {
    let mut connection = std::pin::pin!(connection);
    let sleep = tokio::time::sleep_until(activity.base + timeout);
    let mut sleep = std::pin::pin!(sleep);
    loop {
        tokio::select! {
            biased;
            _ = &mut connection => return,
            () = &mut sleep => {
                if activity.http2.load(Ordering::Relaxed) {
                    connection.await;
                    return;
                }
                let now = Instant::now();
                match activity.deadline(timeout) {
                    Some(deadline) if deadline <= now => return,
                    Some(deadline) => sleep.as_mut().reset(deadline),
                    // A request runs: it cannot end before now, so neither can the wait after it.
                    None => sleep.as_mut().reset(now + timeout),
                }
            }
        }
    }
}

/// The service, marking the connection busy while each request runs.
#[derive(Debug, Clone)]
pub(crate) struct Tracked<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S> Tracked<S> {
    pub(crate) fn new(inner: S, activity: Arc<Activity>) -> Self {
        Tracked { inner, activity }
    }
}

impl<S, B> Service<Request<B>> for Tracked<S>
where
    S: Service<Request<B>, Response = Response<Body>, Error = Infallible>,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Running<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        if request.version() == Version::HTTP_2 {
            self.activity.http2.store(true, Ordering::Relaxed);
        }
        self.activity.running.fetch_add(1, Ordering::AcqRel);
        Running {
            inner: self.inner.call(request),
            done: Some(Done(self.activity.clone())),
        }
    }
}

/// Marks its request finished when dropped.
#[derive(Debug)]
struct Done(Arc<Activity>);

impl Drop for Done {
    fn drop(&mut self) {
        self.0.finished();
    }
}

pin_project_lite::pin_project! {
    /// A request's response on its way; the request is finished when it is sent (or dropped).
    pub(crate) struct Running<F> {
        #[pin]
        inner: F,
        done: Option<Done>,
    }
}

impl<F> Future for Running<F>
where
    F: Future<Output = Result<Response<Body>, Infallible>>,
{
    type Output = Result<Response<Body>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let Ok(response) = std::task::ready!(this.inner.poll(cx));
        let done = this.done.take();
        let short = response
            .body()
            .size_hint()
            .exact()
            .is_some_and(|length| length <= SENT_WITH_HEAD);
        if short {
            drop(done);
            return Poll::Ready(Ok(response));
        }
        Poll::Ready(Ok(
            response.map(|body| Body::new(Sending { body, _done: done }))
        ))
    }
}

pin_project_lite::pin_project! {
    /// A long or streaming response body: its request is finished when the body ends.
    struct Sending {
        #[pin]
        body: Body,
        _done: Option<Done>,
    }
}

impl HttpBody for Sending {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        let this = self.project();
        let frame = std::task::ready!(this.body.poll_frame(cx));
        if frame.is_none() {
            this._done.take();
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
