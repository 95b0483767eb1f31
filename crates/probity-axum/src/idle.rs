//! One connection's life: its header-read and idle timeout (one timer per connection instead
//! of one per request), its requests' bounds (body rate, long-lived streams, what the probe
//! reserve may serve), and how it ends when the listener closes.
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
//! keep-alive connection, is cut after the timeout. An HTTP/2 connection with no stream open
//! for the same time is sent `GOAWAY`.
//!
//! When the listener closes, an HTTP/2 connection is sent `GOAWAY` (the client learns which
//! streams were served and may retry the rest elsewhere). An HTTP/1 connection is never closed
//! under a request on its way: once shutdown has started every response carries
//! `Connection: close`, and a connection waiting for a request gets [`LAST_CALL`] more for one
//! already sent to arrive, and is answered if it does.

use crate::activity::Activity;
use crate::body::TimedBody;
use crate::serve::admission::{Listening, StreamPermit};
use axum::body::{Body, HttpBody};
use bytes::Bytes;
use http::header::{CONNECTION, CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use http::{Method, Request, Response, StatusCode, Version};
use hyper::body::Incoming;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;
use tower::Service;

/// A response body at most this long is sent as soon as its head is: the request is done when
/// its response is. A longer or streaming body keeps the connection busy until it ends, so a
/// slow download is never taken for an idle client.
const SENT_WITH_HEAD: u64 = 64 * 1024;

/// Once the listener has closed, how long an HTTP/1 connection waiting for a request still
/// waits (at most its header-read timeout): a request the client sent as the listener closed
/// is on its way, and is answered rather than cut.
pub(crate) const LAST_CALL: Duration = Duration::from_secs(1);

/// Serves `connection` until it ends, until it has waited on its client for `timeout` (then
/// it is dropped, which closes it; an HTTP/2 connection is sent `GOAWAY` first), or until it
/// is told to close — by the listener closing, or at `close_at` (a reserve connection's
/// lifetime).
pub(crate) async fn serve<C: Future>(
    connection: C,
    graceful_shutdown: impl Fn(Pin<&mut C>),
    activity: Arc<Activity>,
    timeout: Duration,
    mut closing: watch::Receiver<bool>,
    close_at: Option<Instant>,
) {
    let mut connection = std::pin::pin!(connection);
    let first = close_at.map_or(activity.base + timeout, |at| {
        at.min(activity.base + timeout)
    });
    let sleep = tokio::time::sleep_until(first);
    let mut sleep = std::pin::pin!(sleep);
    // When the connection was told to close, and whether HTTP/2 `GOAWAY` went out.
    let mut closed_at: Option<Instant> = None;
    let mut goaway = false;
    let mut listening = !*closing.borrow();
    if !listening {
        closed_at = Some(Instant::now());
    }
    loop {
        tokio::select! {
            biased;
            _ = &mut connection => return,
            _ = closing.changed(), if listening => {
                listening = false;
                closed_at.get_or_insert_with(Instant::now);
                sleep.as_mut().reset(Instant::now());
            }
            () = activity.answered_once.notified(), if activity.reserve && !goaway => {
                if activity.http2() {
                    graceful_shutdown(connection.as_mut());
                    goaway = true;
                }
            }
            () = &mut sleep => {
                let now = Instant::now();
                if closed_at.is_none() && close_at.is_some_and(|at| at <= now) {
                    closed_at = close_at;
                }
                let wait = if closed_at.is_some() { timeout.min(LAST_CALL) } else { timeout };
                if activity.http2() && closed_at.is_some() && !goaway {
                    graceful_shutdown(connection.as_mut());
                    goaway = true;
                }
                match activity.deadline(wait, closed_at) {
                    Some(deadline) if deadline <= now => {
                        if activity.http2() && !goaway {
                            // Idle HTTP/2: say so, then give the peer the same time again.
                            graceful_shutdown(connection.as_mut());
                            goaway = true;
                            sleep.as_mut().reset(now + wait);
                        } else {
                            return;
                        }
                    }
                    Some(deadline) => {
                        let deadline = match close_at {
                            Some(at) if closed_at.is_none() => deadline.min(at),
                            _ => deadline,
                        };
                        sleep.as_mut().reset(deadline);
                    }
                    // A request runs: it cannot end before now, so neither can the wait after it.
                    None => sleep.as_mut().reset(now + wait),
                }
            }
        }
    }
}

/// The service, marking the connection busy while each request runs, bounding request bodies
/// and long-lived streams, and keeping reserve connections to probes.
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

impl<S> Service<Request<Incoming>> for Tracked<S>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Running<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Incoming>) -> Self::Future {
        let activity = &self.activity;
        let listening = &activity.listening;
        let http2 = request.version() == Version::HTTP_2;
        if http2 {
            activity.http2.store(true, Ordering::Relaxed);
        }
        let config = listening.config();
        let path = request.uri().path();
        let stream = config.is_stream_path(path);
        if activity.reserve {
            activity.answered_once.notify_one();
            let probe = matches!(*request.method(), Method::GET | Method::HEAD)
                || (http2 && request.method() == Method::POST);
            if stream || !probe || !config.is_probe_path(path) {
                return Running::answered(refusal(
                    &request,
                    "the connection limit is full: only probes are served",
                ));
            }
            if listening.saturated() && config.is_readiness_path(path) {
                return Running::answered(saturated(&request, listening));
            }
        }
        let permit = if stream {
            match listening.take_stream() {
                Some(permit) => Some(permit),
                None => {
                    return Running::answered(refusal(
                        &request,
                        "too many long-lived streams open; retry later",
                    ));
                }
            }
        } else {
            None
        };
        let counted = !activity.reserve && permit.is_none();
        activity.started(counted);
        let request = if request.body().is_end_stream() {
            request.map(Body::new)
        } else {
            let (timeout, rate) = config.body_limits();
            let activity = activity.clone();
            request.map(|body| Body::new(TimedBody::new(body, activity, timeout, rate)))
        };
        Running {
            inner: Some(self.inner.call(request)),
            answered: None,
            done: Some(Done {
                activity: self.activity.clone(),
                counted,
                _stream: permit,
            }),
            http1: !http2,
        }
    }
}

/// An answer for a request that is not served: gRPC `UNAVAILABLE` for a gRPC call (as HTTP
/// 200 with the status in the headers, as the protocol has it), `503` + `Retry-After` for
/// anything else.
fn refusal<B>(request: &Request<B>, reason: &'static str) -> Response<Body> {
    let grpc = request
        .headers()
        .get(CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(b"application/grpc"));
    if grpc {
        let mut response = Response::new(Body::empty());
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
        // 14: UNAVAILABLE — a client may retry, here later or elsewhere.
        headers.insert("grpc-status", HeaderValue::from_static("14"));
        headers.insert("grpc-message", HeaderValue::from_static(reason));
        return response;
    }
    let mut response = Response::new(Body::from(format!("{reason}\n")));
    *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    let headers = response.headers_mut();
    headers.insert(RETRY_AFTER, HeaderValue::from_static("1"));
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    headers.insert(CONNECTION, HeaderValue::from_static("close"));
    response
}

/// Readiness asked through the reserve while every ordinary connection is busy with a request:
/// the instance cannot take more traffic now.
fn saturated<B>(request: &Request<B>, listening: &Listening) -> Response<Body> {
    let (busy, limit) = listening.busy_of_limit();
    let body = format!(
        "[-]connections failed: every connection is taken, {busy} requests running on {limit} connections\nreadiness check failed\n"
    );
    let mut response = Response::new(if request.method() == Method::HEAD {
        Body::empty()
    } else {
        Body::from(body)
    });
    *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    headers.insert("cache-control", HeaderValue::from_static("no-store"));
    headers.insert(CONNECTION, HeaderValue::from_static("close"));
    response
}

/// Marks its request finished when dropped, and gives back its stream permit.
#[derive(Debug)]
struct Done {
    activity: Arc<Activity>,
    counted: bool,
    _stream: Option<StreamPermit>,
}

impl Drop for Done {
    fn drop(&mut self) {
        self.activity.finished(self.counted);
    }
}

pin_project_lite::pin_project! {
    /// A request's response on its way; the request is finished when it is sent (or dropped).
    pub(crate) struct Running<F> {
        #[pin]
        inner: Option<F>,
        answered: Option<Response<Body>>,
        done: Option<Done>,
        http1: bool,
    }
}

impl<F> Running<F> {
    fn answered(response: Response<Body>) -> Self {
        Running {
            inner: None,
            answered: Some(response),
            done: None,
            http1: false,
        }
    }
}

impl<F> Future for Running<F>
where
    F: Future<Output = Result<Response<Body>, Infallible>>,
{
    type Output = Result<Response<Body>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let Some(inner) = this.inner.as_pin_mut() else {
            let response = this.answered.take().unwrap_or_else(|| {
                let mut response = Response::new(Body::empty());
                *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
                response
            });
            return Poll::Ready(Ok(response));
        };
        let Ok(mut response) = std::task::ready!(inner.poll(cx));
        let done = this.done.take();
        if let Some(done) = &done {
            let activity = &done.activity;
            if activity.body_timed_out.swap(false, Ordering::AcqRel) {
                // The handler failed reading a body that stopped coming: say so, and close.
                response = Response::new(Body::from("the request body came too slowly\n"));
                *response.status_mut() = StatusCode::REQUEST_TIMEOUT;
                response
                    .headers_mut()
                    .insert(CONNECTION, HeaderValue::from_static("close"));
            } else if *this.http1 && activity.listening.shutting_down() {
                // Keep-alive ends with shutdown: the client opens its next connection
                // elsewhere, and no request is ever sent on a connection about to close.
                response
                    .headers_mut()
                    .insert(CONNECTION, HeaderValue::from_static("close"));
            }
        }
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
