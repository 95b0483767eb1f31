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
//!   keep-alive timeout** (an HTTP/2 connection with no stream open is sent `GOAWAY`); it
//!   counts from the accept or from the end of the last response (a slow handler or a long
//!   download never trips it). It is one timer per connection, moved only when it fires, not a
//!   timer armed for every request head as hyper's own would be;
//! - a **body read timeout and minimum rate** ([`ServeConfig::body_read_timeout`], default
//!   10 s; [`ServeConfig::min_body_rate`], default 1 KiB/s): a request body that pauses longer
//!   than the timeout, or falls below the rate once the timeout has passed, is cut with `408`;
//! - a **connection limit** within this listener's **share of the descriptor limit**
//!   ([`ServeConfig::max_connections`]; [`ServeConfig::descriptor_share`] when a process has
//!   several listeners), leaving room for the process's own files, pools and sockets.
//!   Connections past it are accepted and sorted at once (below), so the kernel's backlog never
//!   fills and new connections are never left waiting, and the process's descriptors never run
//!   out (an `accept` that fails for want of one is retried only a second later). The backlog
//!   of a tokio `TcpListener` is deepened to 4,096 (tokio asks for 128): a handshake the kernel
//!   drops for a full backlog is retried by the client only after a second;
//! - a **budget for long-lived streams** ([`ServeConfig::max_streams`], default a quarter of
//!   the limit): a gRPC `Watch` holds its connection as long as the client likes, so streams
//!   past the budget are refused (`UNAVAILABLE`), and a connection with no stream left is
//!   closed like any idle one;
//! - **room kept for probes** ([`ServeConfig::probe_reserve`], default 16): once ordinary
//!   connections fill the limit, a new connection is admitted only if its first request is for a
//!   probe path (or it speaks HTTP/2, as a gRPC health probe does), its whole head read within
//!   [`ServeConfig::admission_timeout`]; anything else is answered `503` with `Retry-After` and
//!   closed. While its head is read it takes one of a bounded number of admission slots; when
//!   they are all taken, the connection that has waited longest without sending a request (read
//!   and found without one, and given 50 ms) is let go for the newcomer, so connections that
//!   send nothing (or dribble their headers) never keep a probe out. A connection admitted this way serves probes only (no stream, nothing
//!   else), is answered at once, and lives at most the admission timeout. Readiness asked this way while every
//!   ordinary connection is busy serving a request answers `503` (`[-]connections failed`):
//!   the instance cannot take more traffic, and a balancer should send it elsewhere.
//!
//! The shutdown sequence:
//!
//! 1. [`probity::Health::shutdown`] (SIGTERM through [`probity::Health::shutdown_on_signals`]) fails readiness at
//!    once; the server keeps accepting and serving while the load balancers notice. From now
//!    on every HTTP/1 response carries `Connection: close`;
//! 2. after the drain delay ([`HealthView::drained`]) the listener closes: on Linux the kernel
//!    is first told to complete no new handshake, and every connection already waiting in the
//!    accept backlog is taken and answered, so closing resets none. HTTP/2 connections get
//!    `GOAWAY`; an HTTP/1 connection waiting for a request gets a second more for one already
//!    sent (answered, then closed) — a request on its way is never cut;
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
use http::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use probity::HealthView;
use std::any::Any;
use std::borrow::Cow;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::fmt::Debug;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::sync::{Notify, watch};
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
    /// Connections still waiting in the accept backlog when the listener closed, accepted then
    /// and answered rather than reset.
    pub backlog_answered: usize,
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

/// Descriptors left for everything but the listeners' connections: database pools, caches,
/// files, the runtime's own.
const DESCRIPTOR_HEADROOM: u64 = 64;
/// The most connections a listener takes by default, however high the descriptor limit.
const DEFAULT_CONNECTION_CAP: usize = 25_000;
/// New connections whose first request head is being read at once, past the ordinary limit
/// (at most; fewer on a small descriptor share). When they are all taken, the one that has
/// waited longest is let go for the newcomer: a probe sends its request at once, so a
/// connection that has not sent one for longest is the least likely to be one, and a flood of
/// connections that say nothing never keeps a probe out — it only shortens their wait. A
/// connection let go is read once more first, so a probe whose request is already there is
/// admitted whatever its age. The accept loop waits only for those let go to close, which they
/// do as soon as their task runs.
const ADMISSION_SLOTS: usize = 96;
/// How long a connection in admission that has shown nothing is kept before it may be let go
/// for a newer one. Under a flood of silent connections the accept loop then waits (the
/// connections wait in the kernel's backlog, their requests arriving meanwhile) rather than
/// let go connections that had no time to speak; it bounds such a flood's pace to about the
/// admission room per grace (over a thousand connections a second at a share of 200
/// descriptors).
const ADMISSION_GRACE: Duration = Duration::from_millis(50);
/// The most bytes read to find a first request head: a probe's is a few hundred.
const REQUEST_HEAD_MAX: usize = 8192;
/// The accept backlog asked of the kernel for a TCP listener (see `deepen_backlog`).
const ACCEPT_BACKLOG: i32 = 4096;
/// The most connections taken from the accept backlog when the listener closes.
const BACKLOG_MAX: usize = 65_536;

/// The limits a listener enforces: a header-read (and idle) timeout, a body read timeout and
/// minimum rate, a connection limit within this listener's share of the descriptor limit, a
/// budget for long-lived streams, and a reserve that admits probes once the limit is full.
///
/// ```
/// use probity_axum::ServeConfig;
/// use std::time::Duration;
///
/// let config = ServeConfig::default()
///     .header_read_timeout(Duration::from_secs(5))
///     .body_read_timeout(Duration::from_secs(5))
///     .max_connections(1_000)
///     .probe_paths(["/internal/live", "/internal/ready"]);
/// # let _ = config;
/// ```
#[derive(Debug, Clone)]
pub struct ServeConfig {
    header_read_timeout: Duration,
    body_read_timeout: Duration,
    min_body_rate: u64,
    max_connections: Option<usize>,
    descriptor_share: Share,
    probe_reserve: usize,
    max_streams: Option<usize>,
    admission_timeout: Duration,
    probe_paths: Arc<[Cow<'static, str>]>,
    readiness_paths: Arc<[Cow<'static, str>]>,
    stream_paths: Arc<[Cow<'static, str>]>,
}

/// The gRPC health service's streaming method: a `Watch` stays open as long as the client
/// likes.
const GRPC_WATCH_PATH: &str = "/grpc.health.v1.Health/Watch";

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(10),
            min_body_rate: 1024,
            max_connections: None,
            descriptor_share: Share::Automatic,
            probe_reserve: 16,
            max_streams: None,
            admission_timeout: Duration::from_secs(1),
            probe_paths: DEFAULT_PROBE_PATHS
                .iter()
                .map(|path| Cow::Borrowed(*path))
                .collect(),
            readiness_paths: Arc::from([Cow::Borrowed("/readyz")]),
            stream_paths: Arc::from([Cow::Borrowed(GRPC_WATCH_PATH)]),
        }
    }
}

/// How a listener's room is divided: resolved when it starts serving, and again whenever a
/// listener of the same process starts or stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Budget {
    ordinary: usize,
    reserve: usize,
    admission: usize,
    streams: usize,
}

/// A listener's share of the process's descriptor limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Share {
    /// An equal part of what the fixed shares leave, among the listeners serving at the time.
    Automatic,
    /// `parts` of `of`, whatever else serves.
    Fixed(u32, u32),
}

/// Shares are counted in millionths of the descriptor limit.
const WHOLE: u64 = 1_000_000;

impl Share {
    fn millionths(parts: u32, of: u32) -> u64 {
        u64::from(parts) * WHOLE / u64::from(of.max(1))
    }
}

/// The listeners serving in this process: each derives its limits from the share left to it,
/// so that together they stay under the descriptor limit — a second listener sized from the
/// whole limit, as the first, would let the two exhaust it.
#[derive(Debug)]
struct Serving {
    /// Listeners with the automatic share.
    automatic: AtomicU64,
    /// Millionths of the limit taken by listeners with a fixed share.
    fixed: AtomicU64,
    /// Moves whenever a listener starts or stops, so the others resolve their limits again.
    changes: AtomicU64,
}

static SERVING: Serving = Serving {
    automatic: AtomicU64::new(0),
    fixed: AtomicU64::new(0),
    changes: AtomicU64::new(0),
};

impl Serving {
    /// The millionths of the limit a listener with `share` gets now; `joining` counts it among
    /// the listeners serving when it is not yet.
    fn millionths(&self, share: Share, joining: bool) -> u64 {
        match share {
            Share::Fixed(parts, of) => Share::millionths(parts, of),
            Share::Automatic => {
                let others = self.automatic.load(Ordering::Acquire) + u64::from(joining);
                let left = WHOLE.saturating_sub(self.fixed.load(Ordering::Acquire));
                // Fixed shares that claim the whole limit leave the others a sliver, not
                // nothing: they still need room to answer probes.
                left.max(WHOLE / 100) / others.max(1)
            }
        }
    }
}

/// One listener counted in [`SERVING`] while it lives.
#[derive(Debug)]
struct Registration(Share);

impl Registration {
    fn new(share: Share) -> Self {
        match share {
            Share::Automatic => SERVING.automatic.fetch_add(1, Ordering::AcqRel),
            Share::Fixed(parts, of) => SERVING
                .fixed
                .fetch_add(Share::millionths(parts, of), Ordering::AcqRel),
        };
        SERVING.changes.fetch_add(1, Ordering::AcqRel);
        Registration(share)
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        match self.0 {
            Share::Automatic => SERVING.automatic.fetch_sub(1, Ordering::AcqRel),
            Share::Fixed(parts, of) => SERVING
                .fixed
                .fetch_sub(Share::millionths(parts, of), Ordering::AcqRel),
        };
        SERVING.changes.fetch_add(1, Ordering::AcqRel);
    }
}

impl ServeConfig {
    /// How long a request head may take to arrive, and how long a keep-alive connection may
    /// sit idle between requests (default 10 s). An HTTP/2 connection with no stream open for
    /// as long is sent `GOAWAY`.
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// The longest gap between two pieces of a request body, and the grace before its minimum
    /// rate applies (default 10 s). A body that falls behind is cut: `408 Request Timeout`,
    /// and the connection closes.
    pub fn body_read_timeout(mut self, timeout: Duration) -> Self {
        self.body_read_timeout = timeout;
        self
    }

    /// The least average rate, in bytes a second, a request body must keep once its read
    /// timeout has passed (default 1,024; 0 for none).
    pub fn min_body_rate(mut self, bytes_per_second: u64) -> Self {
        self.min_body_rate = bytes_per_second;
        self
    }

    /// The most ordinary connections open at once (default: this listener's share of the soft
    /// `RLIMIT_NOFILE`, less room for the process's own descriptors, for admission and for the
    /// probe reserve, at most 25,000; see [`ServeConfig::descriptor_share`]).
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = Some(connections.max(1));
        self
    }

    /// This listener's share of the descriptor limit, from which its connection limit and
    /// admission room are derived: `parts` of `of`, whatever else the process serves.
    ///
    /// By default the share is automatic: the listeners serving in one process at the same
    /// time split the limit equally (what fixed shares leave), so that together they stay under
    /// it — each sized from the whole would exhaust it. Limits are resolved again whenever a
    /// listener of the process starts or stops; connections already open above a new, smaller
    /// limit are not cut, they end with their timeouts. Set a fixed share to weigh listeners
    /// (checkout: 3 of 4 to the public listener, 1 of 4 to the admin one).
    pub fn descriptor_share(mut self, parts: u32, of: u32) -> Self {
        let of = of.max(1);
        self.descriptor_share = Share::Fixed(parts.clamp(1, of), of);
        self
    }

    /// Connections kept for probes once ordinary connections fill the limit (default 16).
    pub fn probe_reserve(mut self, connections: usize) -> Self {
        self.probe_reserve = connections;
        self
    }

    /// The most long-lived streams (gRPC `Watch`, see [`ServeConfig::stream_paths`]) open at
    /// once (default: a quarter of the connection limit). Past it a new one is refused with
    /// gRPC `UNAVAILABLE`; they are never served through the probe reserve.
    pub fn max_streams(mut self, streams: usize) -> Self {
        self.max_streams = Some(streams);
        self
    }

    /// The paths whose requests may stay open indefinitely, counted against
    /// [`ServeConfig::max_streams`] (default: `/grpc.health.v1.Health/Watch`).
    pub fn stream_paths<I, P>(mut self, paths: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<Cow<'static, str>>,
    {
        self.stream_paths = paths.into_iter().map(Into::into).collect();
        self
    }

    /// How long a connection admitted past the limit has to send its request (default 1 s);
    /// it is also the most such a connection lives.
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

    /// The readiness path (with its sub-paths), answered `503` through the reserve while every
    /// ordinary connection is busy serving a request (default `/readyz`).
    pub fn readiness_path(mut self, path: impl Into<Cow<'static, str>>) -> Self {
        self.readiness_paths = Arc::from([path.into()]);
        self
    }

    /// The defaults, admitting `health`'s own probe paths (and gRPC health) to the reserve.
    pub fn for_health(health: &HealthView) -> ServeConfig {
        let paths = health.paths();
        ServeConfig::default()
            .probe_paths([
                Cow::Owned(paths.liveness().to_owned()),
                Cow::Owned(paths.readiness().to_owned()),
                Cow::Owned(paths.startup().to_owned()),
                Cow::Borrowed(crate::quiet::GRPC_HEALTH_PATH),
            ])
            .readiness_path(paths.readiness().to_owned())
    }

    /// The ordinary connection limit this configuration would resolve to if it started serving
    /// now, beside the listeners of this process already serving.
    pub fn connection_limit(&self) -> usize {
        self.budget(true).ordinary
    }

    /// The long-lived stream budget this configuration would resolve to if it started serving
    /// now, beside the listeners of this process already serving.
    pub fn stream_limit(&self) -> usize {
        self.budget(true).streams
    }

    /// The limits from this listener's share of the descriptor limit now; `joining` counts it
    /// among the listeners serving when it is not yet.
    pub(crate) fn budget(&self, joining: bool) -> Budget {
        let millionths = SERVING.millionths(self.descriptor_share, joining);
        let share = match descriptor_limit() {
            Some(limit) => {
                let room = limit.saturating_sub(DESCRIPTOR_HEADROOM);
                usize::try_from(room.saturating_mul(millionths) / WHOLE).unwrap_or(usize::MAX)
            }
            None => usize::MAX,
        };
        // Admission slots scale down with a small share (and half as many again may be closing
        // at any moment); the reserve is kept whole.
        let admission = (share / 4).clamp(16, ADMISSION_SLOTS);
        let ordinary = self.max_connections.unwrap_or_else(|| {
            share
                .saturating_sub(self.probe_reserve + admission + admission / 2)
                .clamp(1, DEFAULT_CONNECTION_CAP)
        });
        Budget {
            ordinary,
            reserve: self.probe_reserve,
            admission,
            streams: self.max_streams.unwrap_or((ordinary / 4).max(1)),
        }
    }

    pub(crate) fn body_limits(&self) -> (Duration, u64) {
        (self.body_read_timeout, self.min_body_rate)
    }

    pub(crate) fn is_probe_path(&self, target: &str) -> bool {
        matches_any(&self.probe_paths, target)
    }

    pub(crate) fn is_readiness_path(&self, target: &str) -> bool {
        matches_any(&self.readiness_paths, target)
    }

    pub(crate) fn is_stream_path(&self, path: &str) -> bool {
        self.stream_paths.iter().any(|stream| stream == path)
    }
}

/// Whether `target`'s path is one of `paths` or below one.
fn matches_any(paths: &[Cow<'static, str>], target: &str) -> bool {
    let path = target.split(['?', '#']).next().unwrap_or(target);
    paths.iter().any(|probe| {
        let probe = probe.trim_end_matches('/');
        path == probe
            || path
                .strip_prefix(probe)
                .is_some_and(|rest| rest.starts_with('/'))
    })
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

/// A listener's limits and what its connections are doing, shared by them.
#[derive(Debug)]
pub(crate) struct Listening {
    config: ServeConfig,
    budget: Limits,
    _registration: Registration,
    counts: Counts,
    admissions: Admissions,
    shutting_down: AtomicBool,
    /// Notified whenever a counted connection closes: the accept loop waits on it when the
    /// admission room is full.
    freed: Notify,
}

impl Listening {
    fn new(config: ServeConfig) -> Self {
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
    fn budget(&self) -> Budget {
        self.budget.get()
    }

    /// The limits, resolved again if a listener of the process started or stopped since.
    fn refresh_budget(&self) -> Budget {
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
struct Limits {
    ordinary: AtomicUsize,
    reserve: usize,
    admission: AtomicUsize,
    streams: AtomicUsize,
    /// The [`Serving::changes`] they were resolved at.
    seen: AtomicU64,
}

impl Limits {
    fn new(budget: Budget) -> Self {
        Limits {
            ordinary: AtomicUsize::new(budget.ordinary),
            reserve: budget.reserve,
            admission: AtomicUsize::new(budget.admission),
            streams: AtomicUsize::new(budget.streams),
            seen: AtomicU64::new(SERVING.changes.load(Ordering::Acquire)),
        }
    }

    fn get(&self) -> Budget {
        Budget {
            ordinary: self.ordinary.load(Ordering::Acquire),
            reserve: self.reserve,
            admission: self.admission.load(Ordering::Acquire),
            streams: self.streams.load(Ordering::Acquire),
        }
    }

    fn set(&self, budget: Budget) {
        self.ordinary.store(budget.ordinary, Ordering::Release);
        self.admission.store(budget.admission, Ordering::Release);
        self.streams.store(budget.streams, Ordering::Release);
    }
}

/// The connections whose first request head is being read, oldest first.
#[derive(Debug, Default)]
struct Admissions {
    waiting: Mutex<VecDeque<(u64, Arc<Ticket>)>>,
    next: AtomicU64,
}

/// One connection in admission: told when it is let go, when it came, and whether it has been
/// read once and found without its request. Only such a connection, and only after
/// [`ADMISSION_GRACE`], is let go for a newer one: a connection is never let go before it has
/// been looked at (as all of a burst taken from the accept backlog at once would be), nor a
/// client that sends its request a few milliseconds after its handshake (a prober on a busy
/// node) because a burst of others came in the meantime.
#[derive(Debug)]
struct Ticket {
    evicted: Notify,
    looked: AtomicBool,
    since: Instant,
}

impl Ticket {
    fn evictable_at(&self) -> Option<Instant> {
        self.looked
            .load(Ordering::Acquire)
            .then_some(self.since + ADMISSION_GRACE)
    }
}

impl Admissions {
    /// A slot for a new connection; lets the oldest looked-at ones go while more than `slots`
    /// wait.
    fn enter(&self, slots: usize) -> (u64, Arc<Ticket>) {
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
    fn trim(&self, slots: usize) {
        Self::trim_locked(&mut self.lock(), slots);
    }

    /// When a connection waiting now may next be let go, if one may.
    fn next_evictable(&self) -> Option<Instant> {
        self.lock()
            .iter()
            .filter_map(|(_, ticket)| ticket.evictable_at())
            .min()
    }

    fn trim_locked(waiting: &mut VecDeque<(u64, Arc<Ticket>)>, slots: usize) {
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

    fn leave(&self, id: u64) {
        let mut waiting = self.lock();
        if let Some(index) = waiting.iter().position(|(waiting, _)| *waiting == id) {
            waiting.remove(index);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(u64, Arc<Ticket>)>> {
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
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let health = health.into();
    let config = ServeConfig::for_health(&health);
    serve_with(listener, service, health, config).await
}

/// Spawns the task of each connection.
struct Spawner<S> {
    service: S,
    ordinary: Arc<auto::Builder<TokioExecutor>>,
    probe: Arc<auto::Builder<TokioExecutor>>,
    listening: Arc<Listening>,
    closing: watch::Receiver<bool>,
}

impl<S: Clone> Clone for Spawner<S> {
    fn clone(&self) -> Self {
        Spawner {
            service: self.service.clone(),
            ordinary: self.ordinary.clone(),
            probe: self.probe.clone(),
            listening: self.listening.clone(),
            closing: self.closing.clone(),
        }
    }
}

/// Which room a connection takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Room {
    Ordinary,
    Reserve,
    /// Taken from the accept backlog as the listener closed: answered, then closed.
    LastCall,
}

impl<S> Spawner<S>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    fn spawn<Io>(&self, io: Io, room: Room, guard: Option<Slot>, http2_guard: Option<Slot>)
    where
        Io: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let reserve = room == Room::Reserve;
        let activity = Activity::new(self.listening.clone(), reserve);
        let tracked = Tracked::new(self.service.clone(), activity.clone());
        let builder = if room == Room::Ordinary {
            &self.ordinary
        } else {
            &self.probe
        };
        let connection = builder
            .serve_connection_with_upgrades(TokioIo::new(io), TowerToHyperService::new(tracked))
            .into_owned();
        let config = &self.listening.config;
        let (timeout, close_at) = match room {
            Room::Ordinary => (config.header_read_timeout, None),
            Room::Reserve => (
                config.admission_timeout,
                Some(Instant::now() + config.admission_timeout),
            ),
            Room::LastCall => (config.header_read_timeout.min(idle::LAST_CALL), None),
        };
        let closing = self.closing.clone();
        tokio::spawn(async move {
            let _guards = (guard, http2_guard);
            idle::serve(
                connection,
                |connection| connection.graceful_shutdown(),
                activity,
                timeout,
                closing,
                close_at,
            )
            .await;
        });
    }
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
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let health = health.into();
    let listening = Arc::new(Listening::new(config));
    deepen_backlog(&listener);
    let (closing_tx, closing_rx) = watch::channel(false);
    let spawner = Spawner {
        service,
        // The header-read timeout is kept per connection ([`idle`]), not by hyper per request.
        ordinary: Arc::new(builder(true)),
        // A probe admitted past the limit gets the admission timeout for its head and no
        // keep-alive: it is answered and its slot freed.
        probe: Arc::new(builder(false)),
        listening: listening.clone(),
        closing: closing_rx,
    };

    let drained = health.drained();
    let mut drained = std::pin::pin!(drained);
    let shutdown = health.shutdown_triggered();
    let mut shutdown = std::pin::pin!(shutdown);
    let mut shutdown_seen = false;
    loop {
        let budget = listening.refresh_budget();
        let limit = budget.ordinary;
        // Connections in admission hold a descriptor until their task has run, those let go
        // included: at most half as many again as the admission slots.
        let admitting_most = budget.admission + budget.admission / 2;
        // Room for one more connection, whichever room it will take. When there is none, the
        // loop waits for a connection to close — connections let go from admission close as
        // soon as their task runs — rather than accept one it would have to drop unread: that
        // one may be a probe. Accepting regardless would take the process past its descriptor
        // limit under a flood, and an accept that fails for want of descriptors is retried
        // only a second later. The reserve is waited for too: its connections are answered as soon as they enter
        // it (see `admit`), and live at most the admission timeout.
        let room = {
            let counts = &listening.counts;
            counts.ordinary.load(Ordering::Acquire) < limit
                || budget.reserve == 0
                || (counts.admitting.load(Ordering::Acquire) < admitting_most
                    && counts.reserve.load(Ordering::Acquire) < budget.reserve)
        };
        tokio::select! {
            // The drain delay comes first: once it is over nothing new is accepted.
            biased;
            () = &mut drained => break,
            _ = &mut shutdown, if !shutdown_seen => {
                shutdown_seen = true;
                listening.shutting_down.store(true, Ordering::Relaxed);
            }
            () = listening.freed.notified(), if !room => {
                // Connections looked at since they came may now be let go for newer ones.
                listening.admissions.trim(budget.admission);
            }
            () = sleep_until_some(listening.admissions.next_evictable()), if !room => {
                listening.admissions.trim(budget.admission);
            }
            (io, _address) = listener.accept(), if room => {
                if listening.counts.ordinary.load(Ordering::Acquire) < limit {
                    let guard = Slot::take(&listening, |counts| &counts.ordinary);
                    spawner.spawn(io, Room::Ordinary, Some(guard), None);
                } else if budget.reserve == 0 {
                    // No room kept for probes: closing at once keeps the backlog moving.
                    drop(io);
                    listening.counts.warn_refused("the connection limit is full and no probe reserve is kept", limit);
                } else {
                    let admitting = Slot::take(&listening, |counts| &counts.admitting);
                    let (id, ticket) = listening.admissions.enter(budget.admission);
                    let spawner = spawner.clone();
                    tokio::spawn(async move {
                        let listening = &spawner.listening;
                        let outcome = admit(io, &listening.config, &ticket, &listening.freed).await;
                        spawner.listening.admissions.leave(id);
                        drop(admitting);
                        match outcome {
                            Admission::Probe(io, http2) => {
                                let listening = &spawner.listening;
                                // HTTP/2 shows no path before it is spoken to, so anyone can
                                // claim a slot with its preface: HTTP/2 gets half the reserve,
                                // and HTTP/1 probes (`httpGet`) always find the other half.
                                if http2 && listening.counts.reserve_http2.load(Ordering::Acquire) >= budget.reserve / 2 {
                                    listening.counts.warn_refused("the probe reserve's HTTP/2 half is full", limit);
                                    return;
                                }
                                let guard = Slot::take(listening, |counts| &counts.reserve);
                                let http2_guard = http2.then(|| Slot::take(listening, |counts| &counts.reserve_http2));
                                spawner.spawn(io, Room::Reserve, Some(guard), http2_guard);
                            }
                            Admission::Refused(reason) => spawner.listening.counts.warn_refused(reason, limit),
                        }
                    });
                }
            }
        }
    }
    listening.shutting_down.store(true, Ordering::Relaxed);
    let listener_closed = Instant::now();
    // What the kernel already accepted for us is answered, not reset by the close.
    let backlog = take_backlog(&listener);
    let backlog_answered = backlog.len();
    for io in backlog {
        spawner.spawn(io, Room::LastCall, None, None);
    }
    drop(listener);
    closing_tx.send_replace(true);
    drop(spawner);
    let shutdown_started = health
        .snapshot()
        .shutting_down_since()
        .unwrap_or(listener_closed);
    tracing::info!(
        target: "probity::shutdown",
        drained_for = ?listener_closed.saturating_duration_since(shutdown_started),
        in_flight_deadline = ?health.in_flight_deadline(),
        backlog_answered,
        "drain delay over: listener closed, finishing in-flight requests"
    );
    let deadline = listener_closed + health.in_flight_deadline();
    // Every connection task (and admission) holds a receiver: all gone, all closed.
    let within_deadline = tokio::time::timeout_at(deadline, closing_tx.closed())
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
        backlog_answered,
    })
}

/// Sleeps until `at`, or forever when there is none.
async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Asks the kernel to keep up to [`ACCEPT_BACKLOG`] completed connections waiting for a TCP
/// `listener` (it caps the number at `net.core.somaxconn`, 4,096 by default on Linux).
///
/// Listeners bound by tokio (and the standard library) keep 128. When a flood of connections
/// fills that queue, the kernel drops the next handshake, and the client tries again only
/// after its one-second retransmission timeout: a kubelet probe, whose timeout is one second,
/// fails though the server would have answered it in a millisecond. A deeper queue holds the
/// probe until the accept loop reaches it. Calling `listen` again on a listening socket
/// changes its backlog; other listeners are left as they are.
fn deepen_backlog<L: Listener>(listener: &L) {
    let Some(tcp) = (listener as &dyn Any).downcast_ref::<tokio::net::TcpListener>() else {
        return;
    };
    if let Err(error) = socket2::SockRef::from(tcp).listen(ACCEPT_BACKLOG) {
        tracing::debug!(target: "probity::serve", %error, "cannot deepen the accept backlog");
    }
}

/// Stops the kernel completing new connections for a TCP `listener` and takes every
/// connection it already completed, so closing the listener resets none of them. Other
/// listeners: nothing (their backlog, if any, is theirs).
fn take_backlog<L: Listener>(listener: &L) -> Vec<tokio::net::TcpStream> {
    let Some(tcp) = (listener as &dyn Any).downcast_ref::<tokio::net::TcpListener>() else {
        return Vec::new();
    };
    let socket = socket2::SockRef::from(tcp);
    // A filter that drops every packet: new handshakes stop here (the client sees no answer to
    // its SYN and, once the socket is closed, a refusal), while connections the kernel already
    // completed wait in the queue, untouched, to be accepted below.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        const BPF_RET_K: u16 = 0x06;
        if let Err(error) = socket.attach_filter(&[socket2::SockFilter::new(BPF_RET_K, 0, 0, 0)]) {
            tracing::debug!(target: "probity::shutdown", %error, "cannot stop new handshakes");
        }
    }
    let mut taken = Vec::new();
    while taken.len() < BACKLOG_MAX {
        match socket.accept() {
            Ok((connection, _)) => {
                let stream = std::net::TcpStream::from(connection);
                let stream = stream
                    .set_nonblocking(true)
                    .and_then(|()| tokio::net::TcpStream::from_std(stream));
                match stream {
                    Ok(stream) => taken.push(stream),
                    Err(error) => {
                        tracing::warn!(target: "probity::shutdown", %error, "cannot serve a connection from the backlog");
                    }
                }
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => {
                if error.kind() != io::ErrorKind::WouldBlock {
                    tracing::warn!(target: "probity::shutdown", %error, "cannot take the rest of the accept backlog");
                }
                break;
            }
        }
    }
    taken
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
    /// Of `reserve`, the connections that speak HTTP/2.
    reserve_http2: AtomicUsize,
    /// Connections in admission, let go ones included until they are closed.
    admitting: AtomicUsize,
    /// Requests running on ordinary connections at this moment (long-lived streams aside).
    busy: AtomicUsize,
    /// Long-lived streams open.
    streams: AtomicUsize,
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
#[derive(Debug)]
pub(crate) struct Slot {
    listening: Arc<Listening>,
    field: fn(&Counts) -> &AtomicUsize,
}

impl Slot {
    fn take(listening: &Arc<Listening>, field: fn(&Counts) -> &AtomicUsize) -> Self {
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

enum Admission<Io> {
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
async fn admit<Io>(
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
enum First {
    /// A probe: `GET` or `HEAD` of a probe path, or HTTP/2 with prior knowledge (a gRPC health
    /// probe shows no path before its frames).
    Probe {
        http2: bool,
    },
    Other,
}

/// The first request's kind, once its request line is in.
fn first_request(head: &[u8], config: &ServeConfig) -> Option<First> {
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
fn head_complete(head: &[u8]) -> bool {
    head.windows(4).any(|window| window == b"\r\n\r\n")
        || head.windows(2).any(|window| window == b"\n\n")
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
            // Listeners sharing the process stay under the limit together.
            let shares = [(3, 4), (1, 4)].map(|(parts, of)| {
                let budget = ServeConfig::default()
                    .descriptor_share(parts, of)
                    .budget(true);
                (budget.ordinary + budget.reserve + budget.admission * 3 / 2) as u64
            });
            assert!(
                shares.iter().sum::<u64>() + DESCRIPTOR_HEADROOM <= descriptors,
                "{shares:?} of {descriptors}"
            );
        }
        assert_eq!(
            ServeConfig::default().max_connections(7).connection_limit(),
            7
        );
    }

    #[cfg(unix)]
    #[test]
    fn listeners_of_one_process_share_the_descriptor_limit_by_default() {
        use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
        // A limit low enough that every share is below the per-listener cap.
        let hard = getrlimit(Resource::Nofile).maximum;
        let soft = hard.map_or(1024, |hard| hard.min(1024));
        setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(soft),
                maximum: hard,
            },
        )
        .expect("lower the descriptor limit");
        let used =
            |budget: Budget| (budget.ordinary + budget.reserve + budget.admission * 3 / 2) as u64;

        let alone = ServeConfig::default().budget(true);
        let public = Listening::new(ServeConfig::default());
        assert_eq!(public.refresh_budget(), alone);
        // An admin listener started beside it, both with the default share: each gets half,
        // and together they stay under the limit.
        let admin = Listening::new(ServeConfig::default());
        let (shared, other) = (public.refresh_budget(), admin.refresh_budget());
        assert_eq!(shared, other);
        assert!(
            shared.ordinary < alone.ordinary / 2 + 1,
            "{shared:?} of {alone:?}"
        );
        assert!(
            used(shared) + used(other) + DESCRIPTOR_HEADROOM <= soft,
            "{shared:?} twice of {soft}"
        );
        // A listener with a fixed share takes it; the automatic ones split the rest.
        let scrape = Listening::new(ServeConfig::default().descriptor_share(1, 4));
        let (shared, other, fixed) = (
            public.refresh_budget(),
            admin.refresh_budget(),
            scrape.refresh_budget(),
        );
        assert!(
            used(shared) + used(other) + used(fixed) + DESCRIPTOR_HEADROOM <= soft,
            "{shared:?} {other:?} {fixed:?} of {soft}"
        );
        // When one stops, the others take its room back.
        drop(scrape);
        drop(admin);
        assert_eq!(public.refresh_budget(), alone);
    }
}
