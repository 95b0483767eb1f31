//! Serving with the shutdown sequence: fail readiness, drain, stop accepting, finish in-flight
//! requests up to a deadline.
//!
//! `axum::serve(...).with_graceful_shutdown(signal)` stops accepting the moment `signal`
//! resolves and then waits for every connection to close, **with no deadline**: one slow
//! request (or a long-lived stream) keeps the process up until the kubelet's SIGKILL. [`serve`]
//! wraps it:
//!
//! 1. [`Health::shutdown`] (SIGTERM through [`Health::shutdown_on_signals`]) fails readiness at
//!    once; the server keeps accepting and serving while the load balancers notice;
//! 2. after the drain delay ([`Health::drained`]) the listener closes: new connections are
//!    refused, idle keep-alive connections are closed, HTTP/2 connections get `GOAWAY`;
//! 3. in-flight requests get [`Health::in_flight_deadline`] to finish; then [`serve`] returns
//!    whatever is still running.
//!
//! Connection tasks still running after the deadline belong to the runtime; they end when the
//! process returns from `main` (which drops the runtime), which is what the caller should do
//! next.

use axum::extract::Request;
use axum::response::Response;
use axum::serve::{IncomingStream, Listener};
use probity::Health;
use std::convert::Infallible;
use std::fmt::Debug;
use std::io;
use std::time::Duration;
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

/// Serves `make_service` on `listener` until the shutdown sequence of `health` completes.
///
/// Does not listen for signals itself: call [`Health::shutdown_on_signals`] once per process
/// (several listeners share one [`Health`]), or [`Health::shutdown`] from your own trigger.
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
/// let app: Router = Probes::new(health.clone()).router();
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// let report = serve(listener, app, &health).await?;
/// println!("drained for {:?}", report.drained_for());
/// # Ok(())
/// # }
/// ```
pub async fn serve<L, M, S>(
    listener: L,
    make_service: M,
    health: &Health,
) -> io::Result<ShutdownReport>
where
    L: Listener,
    L::Addr: Debug,
    M: for<'a> Service<IncomingStream<'a, L>, Error = Infallible, Response = S> + Send + 'static,
    for<'a> <M as Service<IncomingStream<'a, L>>>::Future: Send,
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
{
    let (closing_tx, mut closing_rx) = tokio::sync::oneshot::channel::<Instant>();
    let signal = {
        let health = health.clone();
        async move {
            health.drained().await;
            let _ = closing_tx.send(Instant::now());
        }
    };
    let server = axum::serve(listener, make_service).with_graceful_shutdown(signal);
    let mut server = std::pin::pin!(std::future::IntoFuture::into_future(server));

    let listener_closed = tokio::select! {
        // Checked first: when the signal fires and the last connection closes in the same
        // poll, the sequence still counts as a shutdown, not as the listener failing.
        biased;
        closed = &mut closing_rx => closed.unwrap_or_else(|_| Instant::now()),
        result = &mut server => {
            // axum returns before the signal only when serving fails outright.
            result?;
            return Err(io::Error::other("the server stopped before shutdown was triggered"));
        }
    };
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
    let within_deadline = match tokio::time::timeout_at(deadline, &mut server).await {
        Ok(result) => {
            result?;
            true
        }
        Err(_elapsed) => {
            tracing::warn!(
                target: "probity::shutdown",
                in_flight_deadline = ?health.in_flight_deadline(),
                "in-flight deadline passed with connections still open; abandoning them"
            );
            false
        }
    };
    let finished = Instant::now();
    if within_deadline {
        tracing::info!(
            target: "probity::shutdown",
            in_flight_for = ?finished.saturating_duration_since(listener_closed),
            "all connections closed"
        );
    }
    Ok(ShutdownReport {
        shutdown_started,
        listener_closed,
        finished,
        within_deadline,
    })
}
