//! Serving with the shutdown sequence, and with limits so that no client can make the probes
//! fail.
//!
//! `axum::serve(...).with_graceful_shutdown(signal)` stops accepting the moment `signal`
//! resolves and then waits for every connection to close, **with no deadline**, and it has no
//! header-read timeout and no connection limit: a few hundred clients that connect and dribble
//! their headers (or just sit idle) exhaust the process's file descriptors, and `/livez` stops
//! answering — client behaviour fails liveness, and the kubelet restarts a healthy process.
//! [`serve`] is the same server (hyper, HTTP/1.1 and HTTP/2 on one port) with:
//!
//! - a **header-read timeout** ([`ServeConfig::header_read_timeout`], default 10 s): a request
//!   head must arrive complete within it, or the connection is closed. The same timer runs
//!   whenever a keep-alive connection waits for its next request, so it is also the **idle
//!   keep-alive timeout**; it counts from the accept or from the end of the last response (a
//!   slow handler or a long download never trips it). It is one timer per connection, moved
//!   only when it fires, not a timer armed for every request head as hyper's own would be.
//!   HTTP/2 connections are pinged and closed when the peer stops answering;
//! - a **connection limit** below the descriptor limit ([`ServeConfig::max_connections`],
//!   default: derived from `RLIMIT_NOFILE`, leaving room for the process's own files, pools and
//!   sockets). Connections past it are accepted and closed at once, so the kernel's backlog never
//!   fills and new connections are never left waiting;
//! - **room kept for probes** ([`ServeConfig::probe_reserve`], default 16): once ordinary
//!   connections fill the limit, a new connection is admitted only if its first request is for a
//!   probe path (or it speaks HTTP/2, as a gRPC health probe does), read within
//!   [`ServeConfig::admission_timeout`]; anything else is answered `503` with `Retry-After` and
//!   closed. A probe admitted this way is answered and its connection closed.
//!
//! The shutdown sequence:
//!
//! 1. [`probity::Health::shutdown`] (SIGTERM through [`probity::Health::shutdown_on_signals`]) fails readiness at
//!    once; the server keeps accepting and serving while the load balancers notice;
//! 2. after the drain delay ([`HealthView::drained`]) the listener closes: new connections are
//!    refused, idle keep-alive connections are closed, HTTP/2 connections get `GOAWAY`;
//! 3. in-flight requests get [`HealthView::in_flight_deadline`] to finish; then [`serve`] returns
//!    whatever is still running.
//!
//! Connection tasks still running after the deadline belong to the runtime; they end when the
//! process returns from `main` (which drops the runtime), which is what the caller should do
//! next.

use crate::idle::{self, Activity, Tracked};
use crate::quiet::DEFAULT_PROBE_PATHS;
use axum::body::Body;
use axum::serve::Listener;
use futures_util::FutureExt;
use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use probity::HealthView;
use std::borrow::Cow;
use std::convert::Infallible;
use std::fmt::Debug;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::time::Instant;
use tower::Service;

/// How a server stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShutdownReport {
    /// When shutdown started (readiness began failing).
    pub shutdown_started: Instant,
    /// When the listener stopped accepting.
    pub listener_closed: Instant,
    /// When [`serve`] returned.
    pub finished: Instant,
    /// Whether every connection closed before the in-flight deadline.
    pub within_deadline: bool,
}

impl ShutdownReport {
    /// Time from the shutdown trigger to the listener closing: the drain delay as served.
    pub fn drained_for(&self) -> Duration {
        self.listener_closed
            .saturating_duration_since(self.shutdown_started)
    }

    /// Time from the listener closing to the last connection closing (or the deadline).
    pub fn in_flight_for(&self) -> Duration {
        self.finished
            .saturating_duration_since(self.listener_closed)
    }
}

/// Descriptors left for everything but the listener's connections: database pools, caches,
/// files, the runtime's own.
const DESCRIPTOR_HEADROOM: u64 = 64;
/// The most connections a listener takes by default, however high the descriptor limit.
const DEFAULT_CONNECTION_CAP: usize = 25_000;
/// New connections whose first request line is being read at once, past the ordinary limit.
/// When they are all taken, a new connection is closed at once rather than waited on: the
/// accept loop must never fall behind, or every probe queues in the kernel's backlog behind
/// the flood.
const ADMISSION_SLOTS: usize = 64;
/// Connections accepted while every admission slot is taken, before their first bytes came:
/// each gets [`LATE_WAIT`] for a probe's request line (a probe sends it at once).
const LATE_SLOTS: usize = 32;
/// How long a connection in a late slot has to show a probe's request line.
const LATE_WAIT: Duration = Duration::from_millis(100);
/// The most bytes read to find a first request line.
const REQUEST_LINE_MAX: usize = 2048;

/// The limits a listener enforces: a header-read (and idle) timeout, a connection limit below
/// the descriptor limit, and a reserve that admits probes once the limit is full.
///
/// ```
/// use probity_axum::ServeConfig;
/// use std::time::Duration;
///
/// let config = ServeConfig::default()
///     .header_read_timeout(Duration::from_secs(5))
///     .max_connections(1_000)
///     .probe_paths(["/internal/live", "/internal/ready"]);
/// # let _ = config;
/// ```
#[derive(Debug, Clone)]
pub struct ServeConfig {
    header_read_timeout: Duration,
    max_connections: Option<usize>,
    probe_reserve: usize,
    admission_timeout: Duration,
    probe_paths: Arc<[Cow<'static, str>]>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            max_connections: None,
            probe_reserve: 16,
            admission_timeout: Duration::from_secs(1),
            probe_paths: DEFAULT_PROBE_PATHS
                .iter()
                .map(|path| Cow::Borrowed(*path))
                .collect(),
        }
    }
}

impl ServeConfig {
    /// How long a request head may take to arrive, and how long a keep-alive connection may
    /// sit idle between requests (default 10 s).
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// The most ordinary connections open at once (default: the soft `RLIMIT_NOFILE` less room
    /// for the process's own descriptors and for the probe reserve, at most 25,000).
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = Some(connections.max(1));
        self
    }

    /// Connections kept for probes once ordinary connections fill the limit (default 16).
    pub fn probe_reserve(mut self, connections: usize) -> Self {
        self.probe_reserve = connections;
        self
    }

    /// How long a connection admitted past the limit has to send its request (default 1 s).
    pub fn admission_timeout(mut self, timeout: Duration) -> Self {
        self.admission_timeout = timeout;
        self
    }

    /// The probe paths the reserve admits (each with its sub-paths), e.g. `["/internal/live",
    /// "/internal/ready"]` (default: [`DEFAULT_PROBE_PATHS`]).
    pub fn probe_paths<I, P>(mut self, paths: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<Cow<'static, str>>,
    {
        self.probe_paths = paths.into_iter().map(Into::into).collect();
        self
    }

    /// The defaults, admitting `health`'s own probe paths (and gRPC health) to the reserve.
    pub fn for_health(health: &HealthView) -> ServeConfig {
        let paths = health.paths();
        ServeConfig::default().probe_paths([
            Cow::Owned(paths.liveness().to_owned()),
            Cow::Owned(paths.readiness().to_owned()),
            Cow::Owned(paths.startup().to_owned()),
            Cow::Borrowed(crate::quiet::GRPC_HEALTH_PATH),
        ])
    }

    /// The ordinary connection limit this configuration resolves to on this process.
    pub fn connection_limit(&self) -> usize {
        if let Some(limit) = self.max_connections {
            return limit;
        }
        let reserved =
            DESCRIPTOR_HEADROOM + (self.probe_reserve + ADMISSION_SLOTS + LATE_SLOTS) as u64;
        match descriptor_limit() {
            Some(limit) => {
                (limit.saturating_sub(reserved) as usize).clamp(1, DEFAULT_CONNECTION_CAP)
            }
            None => DEFAULT_CONNECTION_CAP,
        }
    }

    fn with_admission_timeout(&self, timeout: Duration) -> ServeConfig {
        ServeConfig {
            admission_timeout: timeout,
            ..self.clone()
        }
    }

    fn is_probe_path(&self, target: &str) -> bool {
        let path = target.split(['?', '#']).next().unwrap_or(target);
        self.probe_paths.iter().any(|probe| {
            let probe = probe.trim_end_matches('/');
            path == probe
                || path
                    .strip_prefix(probe)
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    }
}

/// The soft limit on open file descriptors, where the platform has one.
fn descriptor_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        rustix::process::getrlimit(rustix::process::Resource::Nofile).current
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Serves `service` on `listener` until the shutdown sequence of `health` completes, with the
/// default [`ServeConfig`].
///
/// Does not listen for signals itself: call [`probity::Health::shutdown_on_signals`] once per
/// process (several listeners share one health), or [`probity::Health::shutdown`] from your own
/// trigger. The probe reserve admits the health's own probe paths (and gRPC health).
///
/// ```no_run
/// use axum::Router;
/// use probity::Health;
/// use probity_axum::{Probes, serve};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let health = Health::builder().service("checkout").build()?;
/// health.start()?;
/// health.shutdown_on_signals();
/// let app: Router = Probes::new(&health).router();
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// let report = serve(listener, app, &health).await?;
/// println!("drained for {:?}", report.drained_for());
/// # Ok(())
/// # }
/// ```
pub async fn serve<L, S>(
    listener: L,
    service: S,
    health: impl Into<HealthView>,
) -> io::Result<ShutdownReport>
where
    L: Listener,
    L::Addr: Debug,
    S: Service<Request<Incoming>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let health = health.into();
    let config = ServeConfig::for_health(&health);
    serve_with(listener, service, health, config).await
}

/// [`serve`] with explicit limits.
pub async fn serve_with<L, S>(
    mut listener: L,
    service: S,
    health: impl Into<HealthView>,
    config: ServeConfig,
) -> io::Result<ShutdownReport>
where
    L: Listener,
    L::Addr: Debug,
    S: Service<Request<Incoming>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let health = health.into();
    let config = Arc::new(config);
    let limit = config.connection_limit();
    // The header-read timeout is kept per connection ([`idle`]), not by hyper per request.
    let ordinary = Arc::new(builder(true));
    // A probe admitted past the limit gets the admission timeout for its head and no
    // keep-alive: it is answered and its slot freed.
    let probe = Arc::new(builder(false));
    let counts = Arc::new(Counts::new());
    let graceful = GracefulShutdown::new();
    let (admitted_tx, mut admitted_rx) = tokio::sync::mpsc::channel::<Admitted<L::Io>>(64);

    let drained = health.drained();
    let mut drained = std::pin::pin!(drained);
    loop {
        tokio::select! {
            // The drain delay comes first: once it is over nothing new is accepted.
            biased;
            () = &mut drained => break,
            Some(admitted) = admitted_rx.recv() => {
                let Admitted { io, guard } = admitted;
                let activity = Activity::new();
                let tracked = Tracked::new(service.clone(), activity.clone());
                let connection = probe
                    .serve_connection_with_upgrades(TokioIo::new(io), TowerToHyperService::new(tracked))
                    .into_owned();
                let connection = graceful.watch(connection);
                let timeout = config.admission_timeout;
                tokio::spawn(async move {
                    let _guard = guard;
                    idle::serve(connection, activity, timeout).await;
                });
            }
            (io, _address) = listener.accept() => {
                let open = counts.ordinary.load(Ordering::Acquire);
                if open < limit {
                    let guard = Slot::take(&counts, |counts| &counts.ordinary);
                    let activity = Activity::new();
                    let tracked = Tracked::new(service.clone(), activity.clone());
                    let connection = ordinary
                        .serve_connection_with_upgrades(TokioIo::new(io), TowerToHyperService::new(tracked))
                        .into_owned();
                    let connection = graceful.watch(connection);
                    let timeout = config.header_read_timeout;
                    tokio::spawn(async move {
                        let _guard = guard;
                        idle::serve(connection, activity, timeout).await;
                    });
                } else if counts.reserve.load(Ordering::Acquire) < config.probe_reserve
                    && counts.admitting.load(Ordering::Acquire) < ADMISSION_SLOTS
                {
                    let admitting = Slot::take(&counts, |counts| &counts.admitting);
                    let (config, counts, admitted_tx) = (config.clone(), counts.clone(), admitted_tx.clone());
                    tokio::spawn(async move {
                        let outcome = admit(io, &config).await;
                        drop(admitting);
                        match outcome {
                            Admission::Probe(io) => {
                                let guard = Slot::take(&counts, |counts| &counts.reserve);
                                let _ = admitted_tx.send(Admitted { io, guard }).await;
                            }
                            Admission::Refused(reason) => counts.warn_refused(reason, limit),
                        }
                    });
                } else if counts.reserve.load(Ordering::Acquire) < config.probe_reserve {
                    // Every admission slot is busy (a burst of connections). A probe sends its
                    // request at once, so by the time it is accepted its request line is
                    // usually there: take it without waiting, and close anything else.
                    match admit_now(io, &config) {
                        Ok(io) => {
                            let guard = Slot::take(&counts, |counts| &counts.reserve);
                            let _ = admitted_tx.try_send(Admitted { io, guard });
                        }
                        // Nothing has arrived yet: give it a moment, if a late slot is free.
                        Err(Some(io)) if counts.late.load(Ordering::Acquire) < LATE_SLOTS => {
                            let late = Slot::take(&counts, |counts| &counts.late);
                            let (counts, admitted_tx) = (counts.clone(), admitted_tx.clone());
                            let config = config.clone();
                            tokio::spawn(async move {
                                let outcome = admit(io, &config.with_admission_timeout(LATE_WAIT)).await;
                                drop(late);
                                match outcome {
                                    Admission::Probe(io) => {
                                        let guard = Slot::take(&counts, |counts| &counts.reserve);
                                        let _ = admitted_tx.send(Admitted { io, guard }).await;
                                    }
                                    Admission::Refused(reason) => counts.warn_refused(reason, limit),
                                }
                            });
                        }
                        Err(_) => counts.warn_refused("the connection limit is full", limit),
                    }
                } else {
                    // Closing at once keeps the backlog moving: a probe behind this connection
                    // gets its turn instead of waiting for a slot that may not come.
                    drop(io);
                    counts.warn_refused("the connection limit and the probe reserve are full", limit);
                }
            }
        }
    }
    let listener_closed = Instant::now();
    drop(listener);
    drop(admitted_rx);
    let shutdown_started = health
        .snapshot()
        .shutting_down_since()
        .unwrap_or(listener_closed);
    tracing::info!(
        target: "probity::shutdown",
        drained_for = ?listener_closed.saturating_duration_since(shutdown_started),
        in_flight_deadline = ?health.in_flight_deadline(),
        "drain delay over: listener closed, finishing in-flight requests"
    );
    let deadline = listener_closed + health.in_flight_deadline();
    let within_deadline = tokio::time::timeout_at(deadline, graceful.shutdown())
        .await
        .is_ok();
    let finished = Instant::now();
    if within_deadline {
        tracing::info!(
            target: "probity::shutdown",
            in_flight_for = ?finished.saturating_duration_since(listener_closed),
            "all connections closed"
        );
    } else {
        tracing::warn!(
            target: "probity::shutdown",
            in_flight_deadline = ?health.in_flight_deadline(),
            "in-flight deadline passed with connections still open; abandoning them"
        );
    }
    Ok(ShutdownReport {
        shutdown_started,
        listener_closed,
        finished,
        within_deadline,
    })
}

fn builder(keep_alive: bool) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(None)
        .keep_alive(keep_alive);
    builder
        .http2()
        .timer(TokioTimer::new())
        // A peer that stops answering pings is gone (or never spoke HTTP/2): close it.
        .keep_alive_interval(Some(Duration::from_secs(20)))
        .keep_alive_timeout(Duration::from_secs(20));
    builder
}

/// Open connections by kind, and when a refusal was last logged.
#[derive(Debug)]
struct Counts {
    ordinary: AtomicUsize,
    reserve: AtomicUsize,
    admitting: AtomicUsize,
    late: AtomicUsize,
    refused: AtomicU64,
    started: Instant,
    /// The second (since `started`, plus one) of the last logged refusal.
    last_warning: AtomicU64,
}

impl Counts {
    fn new() -> Self {
        Self {
            ordinary: AtomicUsize::new(0),
            reserve: AtomicUsize::new(0),
            admitting: AtomicUsize::new(0),
            late: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
            started: Instant::now(),
            last_warning: AtomicU64::new(0),
        }
    }

    /// Counts a refusal and logs at most once a second.
    fn warn_refused(&self, reason: &str, limit: usize) {
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
struct Slot {
    counts: Arc<Counts>,
    field: fn(&Counts) -> &AtomicUsize,
}

impl Slot {
    fn take(counts: &Arc<Counts>, field: fn(&Counts) -> &AtomicUsize) -> Self {
        field(counts).fetch_add(1, Ordering::AcqRel);
        Self {
            counts: counts.clone(),
            field,
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        (self.field)(&self.counts).fetch_sub(1, Ordering::AcqRel);
    }
}

/// A connection admitted to the probe reserve.
struct Admitted<Io> {
    io: Rewind<Io>,
    guard: Slot,
}

enum Admission<Io> {
    Probe(Rewind<Io>),
    Refused(&'static str),
}

/// Reads a new connection's first request line and admits it if it is a probe.
async fn admit<Io>(mut io: Io, config: &ServeConfig) -> Admission<Io>
where
    Io: AsyncRead + AsyncWrite + Unpin,
{
    let mut head = Vec::with_capacity(256);
    let read = tokio::time::timeout(config.admission_timeout, async {
        let mut chunk = [0u8; 512];
        while !head.contains(&b'\n') && head.len() < REQUEST_LINE_MAX {
            let n = io.read(&mut chunk).await?;
            if n == 0 {
                break;
            }
            head.extend_from_slice(&chunk[..n]);
        }
        Ok::<_, io::Error>(())
    })
    .await;
    if !matches!(read, Ok(Ok(()))) {
        return Admission::Refused("no request line within the admission timeout");
    }
    let line = head.split(|&byte| byte == b'\n').next().unwrap_or(&[]);
    let line = String::from_utf8_lossy(line);
    let mut parts = line.split_ascii_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    // HTTP/2 with prior knowledge (a gRPC health probe) shows no path before its frames.
    let http2 = method == "PRI" && target == "*";
    if http2 || (matches!(method, "GET" | "HEAD") && config.is_probe_path(target)) {
        return Admission::Probe(Rewind::new(head, io));
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

/// Admits a connection whose request line has already arrived and names a probe, without
/// waiting for anything. `Err(Some(io))` when nothing has arrived yet (the connection is handed
/// back untouched), `Err(None)` when it is not a probe (dropped).
fn admit_now<Io>(mut io: Io, config: &ServeConfig) -> Result<Rewind<Io>, Option<Io>>
where
    Io: AsyncRead + Unpin,
{
    let mut chunk = vec![0u8; REQUEST_LINE_MAX];
    let n = match io.read(&mut chunk).now_or_never() {
        None => return Err(Some(io)),
        Some(Ok(n)) if n > 0 => n,
        Some(_) => return Err(None),
    };
    chunk.truncate(n);
    let Some(line) = chunk.split(|&byte| byte == b'\n').next() else {
        return Err(None);
    };
    if line.len() == chunk.len() {
        // Not a whole line: too slow for a probe.
        return Err(None);
    }
    let line = String::from_utf8_lossy(line);
    let mut parts = line.split_ascii_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if matches!(method, "GET" | "HEAD") && config.is_probe_path(target) {
        Ok(Rewind::new(chunk, io))
    } else {
        Err(None)
    }
}

/// An I/O stream whose first bytes were already read: it yields them again, then the rest.
struct Rewind<Io> {
    prefix: Vec<u8>,
    position: usize,
    inner: Io,
}

impl<Io> Rewind<Io> {
    fn new(prefix: Vec<u8>, inner: Io) -> Self {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_paths_match_with_sub_paths_and_queries() {
        let config = ServeConfig::default();
        assert!(config.is_probe_path("/livez"));
        assert!(config.is_probe_path("/readyz/db?verbose"));
        assert!(!config.is_probe_path("/readyzz"));
        assert!(!config.is_probe_path("/orders"));
        let custom = ServeConfig::default().probe_paths(["/internal/live/"]);
        assert!(custom.is_probe_path("/internal/live"));
        assert!(!custom.is_probe_path("/livez"));
    }

    #[test]
    fn the_limit_leaves_room_below_the_descriptor_limit() {
        let limit = ServeConfig::default().connection_limit();
        if let Some(descriptors) = descriptor_limit() {
            assert!((limit as u64) < descriptors);
        }
        assert_eq!(
            ServeConfig::default().max_connections(7).connection_limit(),
            7
        );
    }
}
