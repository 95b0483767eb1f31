//! Shutdown: fail readiness first, keep serving while the load balancers notice, then stop.
//!
//! On SIGTERM a pod is removed from its Service's endpoints, but every kube-proxy, ingress and
//! external load balancer learns that at its own pace; a server that stops accepting at once
//! drops requests still routed to it. The sequence here:
//!
//! 1. [`Health::shutdown`] (or SIGTERM, with [`Health::shutdown_on_signals`]): readiness fails
//!    at once with `shutting down`; **liveness keeps passing**, so nothing restarts a draining
//!    process;
//! 2. the server keeps serving for the **drain delay**; [`Health::drained`] resolves after it,
//!    which is the moment to stop accepting (`axum::serve(...).with_graceful_shutdown(...)`);
//! 3. in-flight requests get up to [`Health::in_flight_deadline`] to finish.
//!
//! Keep `terminationGracePeriodSeconds` above `drain delay + in-flight deadline` (plus any
//! `preStop` sleep), or the kubelet's SIGKILL lands mid-drain.

use crate::registry::Health;
use std::time::Duration;
use tokio::time::Instant;

/// The drain delay a service needs so every health-checking load balancer has seen readiness
/// fail before the listener closes:
///
/// ```text
/// drain_delay = readiness periodSeconds × failureThreshold + load balancer reaction
/// ```
///
/// The first term is the longest a prober polling `/readyz` needs to mark the instance
/// unready (a prober that just probed waits a full period, then needs `failureThreshold`
/// failures — Kubernetes' probe worker, `pkg/kubelet/prober/worker.go`). The second covers
/// propagation after that decision: the EndpointSlice update reaching every kube-proxy (its
/// `minSyncPeriod` is 1 s) or an external load balancer's own interval × fall (HAProxy:
/// `inter × fall`). See the Kubernetes pod-termination documentation and
/// `research/kubernetes-probes-and-load-balancers.md` §2.
///
/// ```
/// use probity::shutdown::drain_delay_for;
/// use std::time::Duration;
/// // readinessProbe periodSeconds 5, failureThreshold 2 (seed 000), 2 s of propagation:
/// assert_eq!(
///     drain_delay_for(Duration::from_secs(5), 2, Duration::from_secs(2)),
///     Duration::from_secs(12)
/// );
/// ```
pub fn drain_delay_for(
    readiness_period: Duration,
    failure_threshold: u32,
    load_balancer_reaction: Duration,
) -> Duration {
    readiness_period.saturating_mul(failure_threshold.max(1)) + load_balancer_reaction
}

impl Health {
    /// Starts shutting down: readiness fails from now on with `shutting down`; liveness is
    /// untouched. Calling it again changes nothing.
    pub fn shutdown(&self) {
        let now = Instant::now();
        let first = self.inner.update(|master| {
            if master.shutting_down.is_none() {
                master.shutting_down = Some(now);
                true
            } else {
                false
            }
        });
        if first {
            self.inner.shutdown.send_replace(Some(now));
            tracing::info!(
                target: "probity::shutdown",
                drain_delay = ?self.inner.drain_delay,
                "shutting down: readiness fails, draining"
            );
        }
    }

    /// Whether shutdown has started.
    pub fn is_shutting_down(&self) -> bool {
        self.inner.shutdown.borrow().is_some()
    }

    /// Resolves when shutdown starts.
    pub async fn shutdown_triggered(&self) -> Instant {
        let mut receiver = self.inner.shutdown.subscribe();
        loop {
            if let Some(at) = *receiver.borrow_and_update() {
                return at;
            }
            if receiver.changed().await.is_err() {
                // The sender lives in `self`; it cannot be dropped while we hold `self`.
                std::future::pending::<()>().await;
            }
        }
    }

    /// Resolves once shutdown has started **and** the drain delay has passed since: the moment
    /// for the server to stop accepting connections.
    pub async fn drained(&self) {
        let at = self.shutdown_triggered().await;
        tokio::time::sleep_until(at + self.inner.drain_delay).await;
    }

    /// The configured drain delay.
    pub fn drain_delay(&self) -> Duration {
        self.inner.drain_delay
    }

    /// How long in-flight requests may run after the listener closes.
    pub fn in_flight_deadline(&self) -> Duration {
        self.inner.in_flight_deadline
    }

    /// Spawns a task that calls [`Health::shutdown`] on SIGTERM or SIGINT (Ctrl-C).
    pub fn shutdown_on_signals(&self) -> tokio::task::JoinHandle<()> {
        let health = self.clone();
        tokio::spawn(async move {
            let interrupt = async {
                if tokio::signal::ctrl_c().await.is_err() {
                    std::future::pending::<()>().await;
                }
            };
            #[cfg(unix)]
            let terminate = async {
                match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                    Ok(mut signal) => {
                        signal.recv().await;
                    }
                    Err(error) => {
                        tracing::error!(target: "probity::shutdown", %error, "cannot listen for SIGTERM");
                        std::future::pending::<()>().await;
                    }
                }
            };
            #[cfg(not(unix))]
            let terminate = std::future::pending::<()>();
            tokio::select! {
                () = interrupt => tracing::info!(target: "probity::shutdown", "SIGINT received"),
                () = terminate => tracing::info!(target: "probity::shutdown", "SIGTERM received"),
            }
            health.shutdown();
        })
    }
}
