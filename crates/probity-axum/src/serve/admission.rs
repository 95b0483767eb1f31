//! Admission: a listener's limits and counts, the room that admits a connection past them,
//! and the reading of its first request head that lets a probe in.

use super::config::{Budget, Registration, SERVING, ServeConfig};
use std::collections::VecDeque;
use std::fmt::Debug;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::sync::Notify;
use tokio::time::Instant;

/// How long a connection in admission that has shown nothing is kept before it may be let go
/// for a newer one. Under a flood of silent connections the accept loop then waits (the
/// connections wait in the kernel's backlog, their requests arriving meanwhile) rather than
/// let go connections that had no time to speak; it bounds such a flood's pace to about the
/// admission room per grace (over a thousand connections a second at a share of 200
/// descriptors).
pub(super) const ADMISSION_GRACE: Duration = Duration::from_millis(50);
/// The most bytes read to find a first request head: a probe's is a few hundred.
pub(super) const REQUEST_HEAD_MAX: usize = 8192;

/// A listener's limits and what its connections are doing, shared by them.
#[derive(Debug)]
pub(crate) struct Listening {
    pub(super) config: ServeConfig,
    pub(super) budget: Limits,
    pub(super) _registration: Registration,
    pub(super) counts: Counts,
    pub(super) admissions: Admissions,
    pub(super) shutting_down: AtomicBool,
    /// Notified whenever a counted connection closes: the accept loop waits on it when the
    /// admission room is full.
    pub(super) freed: Notify,
}

impl Listening {
    pub(super) fn new(config: ServeConfig) -> Self {
        let registration = Registration::new(config.descriptor_share);
        let budget = Limits::new(config.budget(false));
        Listening {
            config,
            budget,
            _registration: registration,
            counts: Counts::new(),
            admissions: Admissions::default(),
            shutting_down: AtomicBool::new(false),
            freed: Notify::new(),
        }
    }

    pub(crate) fn config(&self) -> &ServeConfig {
        &self.config
    }

    /// The limits as last resolved.
    pub(super) fn budget(&self) -> Budget {
        self.budget.get()
    }

    /// The limits, resolved again if a listener of the process started or stopped since.
    pub(super) fn refresh_budget(&self) -> Budget {
        let changes = SERVING.changes.load(Ordering::Acquire);
        if self.budget.seen.swap(changes, Ordering::AcqRel) != changes {
            self.budget.set(self.config.budget(false));
        }
        self.budget.get()
    }

    pub(crate) fn shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::Relaxed)
    }

    /// A request on an ordinary connection began or ended.
    pub(crate) fn busy_changed(&self, busy: bool) {
        if busy {
            self.counts.busy.fetch_add(1, Ordering::AcqRel);
        } else {
            self.counts.busy.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Every ordinary slot is taken and requests are running on at least half of them at this
    /// moment: the instance cannot take more traffic. Connections waiting on their client (a
    /// slow head, an idle keep-alive) and long-lived streams (a budget of their own) do not
    /// count — the timeouts cut the first, and a client holding idle connections or streams
    /// must not be able to take an instance out of rotation.
    pub(crate) fn saturated(&self) -> bool {
        let limit = self.budget().ordinary;
        self.counts.ordinary.load(Ordering::Acquire) >= limit
            && self.counts.busy.load(Ordering::Acquire) * 2 >= limit
    }

    pub(crate) fn busy_of_limit(&self) -> (usize, usize) {
        (
            self.counts.busy.load(Ordering::Acquire),
            self.budget().ordinary,
        )
    }

    /// A permit for one long-lived stream, if the budget has room.
    pub(crate) fn take_stream(self: &Arc<Self>) -> Option<StreamPermit> {
        let streams = &self.counts.streams;
        let mut open = streams.load(Ordering::Acquire);
        let budget = self.budget().streams;
        loop {
            if open >= budget {
                self.counts
                    .warn_refused("the long-lived stream budget is full", budget);
                return None;
            }
            match streams.compare_exchange_weak(open, open + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(StreamPermit(self.clone())),
                Err(now) => open = now,
            }
        }
    }
}

/// A listener's limits, as atomics: the accept loop resolves them again while connections
/// read them.
#[derive(Debug)]
pub(super) struct Limits {
    pub(super) ordinary: AtomicUsize,
    pub(super) reserve: usize,
    pub(super) admission: AtomicUsize,
    pub(super) streams: AtomicUsize,
    /// The [`Serving::changes`] they were resolved at.
    pub(super) seen: AtomicU64,
}

impl Limits {
    pub(super) fn new(budget: Budget) -> Self {
        Limits {
            ordinary: AtomicUsize::new(budget.ordinary),
            reserve: budget.reserve,
            admission: AtomicUsize::new(budget.admission),
            streams: AtomicUsize::new(budget.streams),
            seen: AtomicU64::new(SERVING.changes.load(Ordering::Acquire)),
        }
    }

    pub(super) fn get(&self) -> Budget {
        Budget {
            ordinary: self.ordinary.load(Ordering::Acquire),
            reserve: self.reserve,
            admission: self.admission.load(Ordering::Acquire),
            streams: self.streams.load(Ordering::Acquire),
        }
    }

    pub(super) fn set(&self, budget: Budget) {
        self.ordinary.store(budget.ordinary, Ordering::Release);
        self.admission.store(budget.admission, Ordering::Release);
        self.streams.store(budget.streams, Ordering::Release);
    }
}

/// The connections whose first request head is being read, oldest first.
#[derive(Debug, Default)]
pub(super) struct Admissions {
    pub(super) waiting: Mutex<VecDeque<(u64, Arc<Ticket>)>>,
    pub(super) next: AtomicU64,
}

/// One connection in admission: told when it is let go, when it came, and whether it has been
/// read once and found without its request. Only such a connection, and only after
/// [`ADMISSION_GRACE`], is let go for a newer one: a connection is never let go before it has
/// been looked at (as all of a burst taken from the accept backlog at once would be), nor a
/// client that sends its request a few milliseconds after its handshake (a prober on a busy
/// node) because a burst of others came in the meantime.
#[derive(Debug)]
pub(super) struct Ticket {
    pub(super) evicted: Notify,
    pub(super) looked: AtomicBool,
    pub(super) since: Instant,
}

impl Ticket {
    pub(super) fn evictable_at(&self) -> Option<Instant> {
        self.looked
            .load(Ordering::Acquire)
            .then_some(self.since + ADMISSION_GRACE)
    }
}

impl Admissions {
    /// A slot for a new connection; lets the oldest looked-at ones go while more than `slots`
    /// wait.
    pub(super) fn enter(&self, slots: usize) -> (u64, Arc<Ticket>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let ticket = Arc::new(Ticket {
            evicted: Notify::new(),
            looked: AtomicBool::new(false),
            since: Instant::now(),
        });
        let mut waiting = self.lock();
        waiting.push_back((id, ticket.clone()));
        Self::trim_locked(&mut waiting, slots);
        (id, ticket)
    }

    /// Lets the oldest looked-at connections go while more than `slots` wait.
    pub(super) fn trim(&self, slots: usize) {
        Self::trim_locked(&mut self.lock(), slots);
    }

    /// When a connection waiting now may next be let go, if one may.
    pub(super) fn next_evictable(&self) -> Option<Instant> {
        self.lock()
            .iter()
            .filter_map(|(_, ticket)| ticket.evictable_at())
            .min()
    }

    pub(super) fn trim_locked(waiting: &mut VecDeque<(u64, Arc<Ticket>)>, slots: usize) {
        let now = Instant::now();
        let mut index = 0;
        while waiting.len() > slots.max(1) && index < waiting.len() {
            if waiting[index].1.evictable_at().is_some_and(|at| at <= now) {
                if let Some((_, ticket)) = waiting.remove(index) {
                    // A permit is kept if it is not waiting yet: it gives up as soon as it
                    // looks again.
                    ticket.evicted.notify_one();
                }
            } else {
                index += 1;
            }
        }
    }

    pub(super) fn leave(&self, id: u64) {
        let mut waiting = self.lock();
        if let Some(index) = waiting.iter().position(|(waiting, _)| *waiting == id) {
            waiting.remove(index);
        }
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(u64, Arc<Ticket>)>> {
        self.waiting
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// One open long-lived stream; the count drops with it.
#[derive(Debug)]
pub(crate) struct StreamPermit(Arc<Listening>);

impl Drop for StreamPermit {
    fn drop(&mut self) {
        self.0.counts.streams.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Open connections by kind, and when a refusal was last logged.
#[derive(Debug)]
pub(super) struct Counts {
    pub(super) ordinary: AtomicUsize,
    pub(super) reserve: AtomicUsize,
    /// Of `reserve`, the connections that speak HTTP/2.
    pub(super) reserve_http2: AtomicUsize,
    /// Connections in admission, let go ones included until they are closed.
    pub(super) admitting: AtomicUsize,
    /// Requests running on ordinary connections at this moment (long-lived streams aside).
    pub(super) busy: AtomicUsize,
    /// Long-lived streams open.
    pub(super) streams: AtomicUsize,
    pub(super) refused: AtomicU64,
    pub(super) started: Instant,
    /// The second (since `started`, plus one) of the last logged refusal.
    pub(super) last_warning: AtomicU64,
}

impl Counts {
    pub(super) fn new() -> Self {
        Self {
            ordinary: AtomicUsize::new(0),
            reserve: AtomicUsize::new(0),
            reserve_http2: AtomicUsize::new(0),
            admitting: AtomicUsize::new(0),
            busy: AtomicUsize::new(0),
            streams: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
            started: Instant::now(),
            last_warning: AtomicU64::new(0),
        }
    }

    /// Counts a refusal and logs at most once a second.
    pub(super) fn warn_refused(&self, reason: &str, limit: usize) {
        let refused = self.refused.fetch_add(1, Ordering::AcqRel) + 1;
        let now = self.started.elapsed().as_secs() + 1;
        if self.last_warning.swap(now, Ordering::AcqRel) != now {
            tracing::warn!(
                target: "probity::serve",
                refused,
                limit,
                "refused a connection: {reason}"
            );
        }
    }
}

/// One counted connection; the count drops with it.
#[derive(Debug)]
pub(crate) struct Slot {
    pub(super) listening: Arc<Listening>,
    pub(super) field: fn(&Counts) -> &AtomicUsize,
}

impl Slot {
    pub(super) fn take(listening: &Arc<Listening>, field: fn(&Counts) -> &AtomicUsize) -> Self {
        field(&listening.counts).fetch_add(1, Ordering::AcqRel);
        Self {
            listening: listening.clone(),
            field,
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        (self.field)(&self.listening.counts).fetch_sub(1, Ordering::AcqRel);
        self.listening.freed.notify_one();
    }
}

pub(super) enum Admission<Io> {
    /// A probe, and whether it speaks HTTP/2.
    Probe(Rewind<Io>, bool),
    Refused(&'static str),
}

/// Reads a new connection's first request head and admits it if it is a probe. The whole head,
/// not just the request line: a connection enters the reserve only when its request can be
/// answered at once, so a client that sends a probe's request line and then dribbles its
/// headers stays here, where newer connections take its place, and never holds a reserve slot.
///
/// The first time a read finds nothing, the connection is marked looked at (it may now be let
/// go for a newer one) and `looked` is notified, so an accept loop waiting for room can let it
/// go.
pub(super) async fn admit<Io>(
    mut io: Io,
    config: &ServeConfig,
    ticket: &Ticket,
    looked: &Notify,
) -> Admission<Io>
where
    Io: AsyncRead + AsyncWrite + Unpin,
{
    let mut head = Vec::with_capacity(256);
    let reading = tokio::time::timeout(config.admission_timeout, async {
        let mut chunk = [0u8; 512];
        loop {
            match first_request(&head, config) {
                // Not a probe: known from the request line, answered at once.
                Some(First::Other) => break,
                Some(First::Probe { .. }) if head_complete(&head) => break,
                _ if head.len() >= REQUEST_HEAD_MAX => break,
                _ => {}
            }
            let n = if ticket.looked.load(Ordering::Acquire) {
                io.read(&mut chunk).await?
            } else {
                // `read` is cancel safe: when it finds nothing, nothing was read.
                tokio::select! {
                    biased;
                    n = io.read(&mut chunk) => n?,
                    () = std::future::ready(()) => {
                        ticket.looked.store(true, Ordering::Release);
                        looked.notify_one();
                        continue;
                    }
                }
            };
            if n == 0 {
                break;
            }
            head.extend_from_slice(&chunk[..n]);
        }
        Ok::<_, io::Error>(())
    });
    let read = tokio::select! {
        // Reading first: a probe sends its request line at once, and one already here is
        // admitted even if newer connections took its slot before this task first ran (as
        // they do when a flood fills the accept backlog and the loop takes it in one go).
        biased;
        read = reading => read,
        () = ticket.evicted.notified() => {
            return Admission::Refused("newer connections needed the admission slot of one that had not sent its request");
        }
    };
    let first = match (read, first_request(&head, config)) {
        (Ok(Ok(())), Some(First::Other)) => First::Other,
        (Ok(Ok(())), Some(First::Probe { http2 })) if head_complete(&head) => {
            First::Probe { http2 }
        }
        _ => return Admission::Refused("no complete request head within the admission timeout"),
    };
    if let First::Probe { http2 } = first {
        return Admission::Probe(Rewind::new(head, io), http2);
    }
    let _ = io
        .write_all(
            b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\ncontent-type: text/plain\r\n\
content-length: 33\r\nconnection: close\r\n\r\ntoo many connections, retry later\n",
        )
        .await;
    let _ = io.shutdown().await;
    Admission::Refused("the connection limit is full and the request is not a probe")
}

/// What a connection's first request is, from its request line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum First {
    /// A probe: `GET` or `HEAD` of a probe path, or HTTP/2 with prior knowledge (a gRPC health
    /// probe shows no path before its frames).
    Probe {
        http2: bool,
    },
    Other,
}

/// The first request's kind, once its request line is in.
pub(super) fn first_request(head: &[u8], config: &ServeConfig) -> Option<First> {
    let end = head.iter().position(|&byte| byte == b'\n')?;
    let line = String::from_utf8_lossy(&head[..end]);
    let mut parts = line.split_ascii_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let http2 = method == "PRI" && target == "*";
    if http2 || (matches!(method, "GET" | "HEAD") && config.is_probe_path(target)) {
        Some(First::Probe { http2 })
    } else {
        Some(First::Other)
    }
}

/// Whether `head` holds a complete request head (an HTTP/2 preface's first part counts).
pub(super) fn head_complete(head: &[u8]) -> bool {
    head.windows(4).any(|window| window == b"\r\n\r\n")
        || head.windows(2).any(|window| window == b"\n\n")
}

/// An I/O stream whose first bytes were already read: it yields them again, then the rest.
pub(super) struct Rewind<Io> {
    pub(super) prefix: Vec<u8>,
    pub(super) position: usize,
    pub(super) inner: Io,
}

impl<Io> Rewind<Io> {
    pub(super) fn new(prefix: Vec<u8>, inner: Io) -> Self {
        Self {
            prefix,
            position: 0,
            inner,
        }
    }
}

impl<Io: AsyncRead + Unpin> AsyncRead for Rewind<Io> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.position < this.prefix.len() {
            let rest = &this.prefix[this.position..];
            let n = rest.len().min(buf.remaining());
            buf.put_slice(&rest[..n]);
            this.position += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<Io: AsyncWrite + Unpin> AsyncWrite for Rewind<Io> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
