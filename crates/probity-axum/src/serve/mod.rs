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
//!    is first told to start no new handshake (those under way complete), and every connection waiting in the
//!    accept backlog is taken and answered, so closing resets none. HTTP/2 connections get
//!    `GOAWAY`; an HTTP/1 connection waiting for a request gets a second more for one already
//!    sent (answered, then closed) — a request on its way is never cut;
//! 3. in-flight requests get [`HealthView::in_flight_deadline`] to finish; then [`serve`] returns
//!    whatever is still running.
//!
//! Connection tasks still running after the deadline belong to the runtime; they end when the
//! process returns from `main` (which drops the runtime), which is what the caller should do
//! next.

use crate::activity::Activity;
use crate::idle::{self, Tracked};
use axum::body::Body;
use axum::serve::Listener;
use http::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use probity::HealthView;
use std::any::Any;
use std::convert::Infallible;
use std::fmt::Debug;
use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio::time::Instant;
use tower::Service;

pub(crate) mod admission;
mod config;
#[cfg(test)]
mod tests;

use admission::{Admission, Listening, Slot, admit};
pub use config::ServeConfig;

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

/// The accept backlog asked of the kernel for a TCP listener (see `deepen_backlog`).
const ACCEPT_BACKLOG: i32 = 4096;
/// The most connections taken from the accept backlog when the listener closes.
const BACKLOG_MAX: usize = 65_536;

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
    // What the kernel already accepted for us is answered, not reset by the close: new
    // handshakes stop, those under way complete, then the queue is taken whole.
    if stop_handshakes(&listener) {
        tokio::time::sleep(HANDSHAKES_IN_FLIGHT).await;
    }
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

/// How long handshakes already under way get to complete once new ones are refused: the
/// client's kernel answers the SYN-ACK at once, so on any network a round trip is enough.
const HANDSHAKES_IN_FLIGHT: Duration = Duration::from_millis(50);

/// Stops the kernel starting new connections for a TCP `listener`: a socket filter drops every
/// segment with SYN set, so a new client sees no answer to its SYN (and, once the socket is
/// closed, a refusal), while a handshake already under way — the client's final ACK — still
/// completes and waits in the accept queue to be taken by [`take_backlog`]. (Dropping every
/// segment would drop those ACKs too: that client believes it is connected, sends its request
/// and is reset when the listener closes.) The filter runs on the segment from its TCP header,
/// where byte 13 holds the flags. Returns whether there is a backlog to take (a TCP listener).
fn stop_handshakes<L: Listener>(listener: &L) -> bool {
    let Some(tcp) = (listener as &dyn Any).downcast_ref::<tokio::net::TcpListener>() else {
        return false;
    };
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // ldb [13]; jset #SYN, drop, keep; drop: ret #0; keep: ret #-1
        const BPF_LD_B_ABS: u16 = 0x30;
        const BPF_JSET_K: u16 = 0x45;
        const BPF_RET_K: u16 = 0x06;
        const TCP_FLAGS: u32 = 13;
        const SYN: u32 = 0x02;
        let program = [
            socket2::SockFilter::new(BPF_LD_B_ABS, 0, 0, TCP_FLAGS),
            socket2::SockFilter::new(BPF_JSET_K, 0, 1, SYN),
            socket2::SockFilter::new(BPF_RET_K, 0, 0, 0),
            socket2::SockFilter::new(BPF_RET_K, 0, 0, u32::MAX),
        ];
        if let Err(error) = socket2::SockRef::from(tcp).attach_filter(&program) {
            tracing::debug!(target: "probity::shutdown", %error, "cannot stop new handshakes");
        }
    }
    true
}

/// Takes every connection the kernel completed for a TCP `listener`, so closing the listener
/// resets none of them. Other listeners: nothing (their backlog, if any, is theirs).
fn take_backlog<L: Listener>(listener: &L) -> Vec<tokio::net::TcpStream> {
    let Some(tcp) = (listener as &dyn Any).downcast_ref::<tokio::net::TcpListener>() else {
        return Vec::new();
    };
    let socket = socket2::SockRef::from(tcp);
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
