//! The reader's side of a [`crate::Health`]: what the probe surfaces hold.
//!
//! A surface — the axum router, the gRPC service, a status page — only reads: the current
//! snapshot, the stream of published snapshots, the probe paths, the shutdown trigger. It never
//! reports, completes a step or shuts down; those belong to the [`crate::Health`] the service
//! keeps (as tonic-health hands its reporter to the service and its read side to the server).

use crate::paths::ProbePaths;
use crate::snapshot::Snapshot;
use crate::store::Store;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// A read-only handle on a service's health. Cheap to clone.
#[derive(Clone)]
pub struct HealthView {
    pub(crate) store: Arc<Store>,
}

impl fmt::Debug for HealthView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HealthView")
            .field("service", &self.store.service)
            .field("paths", &self.store.paths)
            .finish_non_exhaustive()
    }
}

impl HealthView {
    /// The current snapshot. Loading it takes no lock shared with the pollers.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.store.snapshot()
    }

    /// The [generation](Snapshot::generation) of the current snapshot, read without loading
    /// the snapshot: a surface that keeps rendered answers tells with it that the answer it
    /// kept is still current.
    pub fn generation(&self) -> u64 {
        self.store.generation()
    }

    /// A receiver that sees every published snapshot (for streaming transitions, as gRPC's
    /// `Watch` does).
    pub fn subscribe(&self) -> watch::Receiver<Arc<Snapshot>> {
        self.store.subscribe()
    }

    /// Where the probes are served.
    pub fn paths(&self) -> &ProbePaths {
        &self.store.paths
    }

    /// The declared service name.
    pub fn service(&self) -> Option<&str> {
        self.store.service.as_deref()
    }

    /// The contract: what each endpoint checks and waits on.
    pub fn contract(&self) -> probity_contract::Contract {
        crate::contract::describe(&self.store)
    }

    /// Whether shutdown has started.
    pub fn is_shutting_down(&self) -> bool {
        self.store.shutdown_signal().borrow().is_some()
    }

    /// Resolves when shutdown starts, with the moment it did (as
    /// [`Health::shutdown_triggered`](crate::Health::shutdown_triggered)).
    pub async fn shutdown_triggered(&self) -> Instant {
        shutdown_triggered(&self.store).await
    }

    /// Resolves once shutdown has started **and** the drain delay has passed since: the moment
    /// for the server to stop accepting connections.
    pub async fn drained(&self) {
        let at = self.shutdown_triggered().await;
        tokio::time::sleep_until(at + self.store.shutdown.drain_delay).await;
    }

    /// The drain delay, derived or set.
    pub fn drain_delay(&self) -> Duration {
        self.store.shutdown.drain_delay
    }

    /// How long in-flight requests may run after the listener closes.
    pub fn in_flight_deadline(&self) -> Duration {
        self.store.shutdown.in_flight_deadline
    }
}

/// When shutdown started, waiting for it if it has not.
pub(crate) async fn shutdown_triggered(store: &Store) -> Instant {
    let mut receiver = store.shutdown_signal();
    loop {
        if let Some(at) = *receiver.borrow_and_update() {
            return at;
        }
        if receiver.changed().await.is_err() {
            // The sender lives in the store, which the caller holds.
            std::future::pending::<()>().await;
        }
    }
}

impl From<&HealthView> for HealthView {
    fn from(view: &HealthView) -> Self {
        view.clone()
    }
}
