//! The read timeout and minimum rate of a request body.
//!
//! The header-read timeout ends when a head has arrived whole; the body that follows is read by
//! the handler, while the connection counts as busy, so without a bound of its own a client
//! that sends one byte of a hundred holds its connection (and its handler) for as long as it
//! likes. A body here must keep coming: no gap longer than the read timeout between two of its
//! frames, and — once the read timeout has passed since the head — at least the minimum rate on
//! average since then. A body that falls behind fails the handler's read with
//! [`BodyTooSlow`]; the connection answers `408 Request Timeout` and closes.

use crate::activity::Activity;
use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper::body::Incoming;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// A request body that stopped coming, or came slower than the minimum rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyTooSlow {
    /// Bytes of the body received before it was cut.
    pub received: u64,
}

impl fmt::Display for BodyTooSlow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the request body stopped or came too slowly ({} bytes received)",
            self.received
        )
    }
}

impl std::error::Error for BodyTooSlow {}

pin_project_lite::pin_project! {
    /// A request body with a read timeout and a minimum rate.
    pub(crate) struct TimedBody {
        #[pin]
        inner: Incoming,
        activity: Arc<Activity>,
        started: Instant,
        last_frame: Instant,
        received: u64,
        timeout: Duration,
        min_rate: u64,
        timer: Option<Pin<Box<Sleep>>>,
    }
}

impl TimedBody {
    pub(crate) fn new(
        inner: Incoming,
        activity: Arc<Activity>,
        timeout: Duration,
        min_rate: u64,
    ) -> Self {
        let now = Instant::now();
        TimedBody {
            inner,
            activity,
            started: now,
            last_frame: now,
            received: 0,
            timeout,
            min_rate,
            timer: None,
        }
    }
}

/// When a body that has received `received` bytes by `last_frame`, started at `started`, is
/// too slow: a gap of `timeout` since its last frame, or (after a grace of `timeout`) an
/// average below `min_rate` bytes a second.
fn deadline(
    started: Instant,
    last_frame: Instant,
    received: u64,
    timeout: Duration,
    min_rate: u64,
) -> Instant {
    let gap = last_frame + timeout;
    if min_rate == 0 {
        return gap;
    }
    let earned = Duration::from_secs_f64(received as f64 / min_rate as f64);
    gap.min(started + timeout + earned)
}

impl HttpBody for TimedBody {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let mut this = self.project();
        match this.inner.as_mut().poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    *this.received += data.len() as u64;
                }
                *this.last_frame = Instant::now();
                return Poll::Ready(Some(Ok(frame)));
            }
            Poll::Ready(Some(Err(error))) => return Poll::Ready(Some(Err(error.into()))),
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => {}
        }
        let due = deadline(
            *this.started,
            *this.last_frame,
            *this.received,
            *this.timeout,
            *this.min_rate,
        );
        let timer = this
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
        if timer.deadline() != due {
            timer.as_mut().reset(due);
        }
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => {
                this.activity.body_timed_out();
                Poll::Ready(Some(Err(Box::new(BodyTooSlow {
                    received: *this.received,
                }))))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_must_keep_coming_and_keep_its_rate() {
        let start = Instant::now();
        let timeout = Duration::from_secs(2);
        // Nothing yet: cut after the timeout.
        assert_eq!(deadline(start, start, 0, timeout, 1024), start + timeout);
        // A fast start buys time at the rate, never past a gap of the timeout.
        let later = start + Duration::from_secs(1);
        assert_eq!(
            deadline(start, later, 10 * 1024 * 1024, timeout, 1024),
            later + timeout
        );
        // A byte a second never leaves a gap, but falls behind the rate once the grace is over.
        let dribbled = deadline(start, start + Duration::from_secs(3), 3, timeout, 1024);
        assert!(
            dribbled < start + timeout + Duration::from_millis(3),
            "{dribbled:?}"
        );
        // Without a rate, only the gap counts.
        assert_eq!(deadline(start, later, 1, timeout, 0), later + timeout);
    }
}
