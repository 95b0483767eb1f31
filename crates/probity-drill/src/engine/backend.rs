//! The boundary between the drill and the fleet it drills.
//!
//! The engine — the faults' timeline, the traffic, the measurements, the targets and the report
//! — asks a fleet for these operations only, so a fleet elsewhere (a Kubernetes backend on a
//! staging cluster: Chaos Mesh resources for the paths, pod deletion for a rollout, the
//! container runtime for a crash, EndpointSlices for rotation, pod status and events for the
//! record; `docs/drill.md`, "Past one machine") drills the same drill files into the same
//! report. [`LocalFleet`](super::LocalFleet) — processes on this machine, a fault proxy per
//! instance per dependency, a kubelet per pod, HAProxy — is its one implementation.

use super::events::Events;
use super::tcp::PathState;
use crate::DrillError;
use crate::file::Scope;
use crate::file::placeholder::Placeholder;
use std::future::Future;
use std::net::SocketAddr;

/// A fleet the engine can drill. Instances are numbered from 0; faults that act on one
/// instance act on instance 0.
pub trait Backend {
    /// What [`Backend::freeze`] hands back, to thaw the same processes later.
    type Frozen: Send + 'static;

    /// How many instances the fleet has.
    fn instances(&self) -> usize;

    /// Instance `index`'s name (`SERVICE-N`).
    fn name(&self, index: usize) -> &str;

    /// Where the traffic goes: the balancer (on a cluster, the ingress).
    fn frontend(&self) -> SocketAddr;

    /// The record of what happened to each instance — probe failures, readiness and rotation
    /// changes, kills, exits, restarts, replacements — that every row is measured from.
    fn events(&self) -> &Events;

    /// Starts instance `index`; returns once its process runs (not yet Ready).
    fn start(&self, index: usize) -> impl Future<Output = std::io::Result<()>> + Send;

    /// Whether instance `index` is Ready (running, started, readiness passing, not
    /// terminating) with no kill of it under way.
    fn is_ready(&self, index: usize) -> bool;

    /// Whether the balancer sends instance `index` traffic.
    fn in_rotation(&self, index: usize) -> bool;

    /// The end of instance `index`'s log, for an error message.
    fn log_tail(&self, index: usize) -> String;

    /// Puts the path to `dependency` of instance 0 (`Scope::One`) or of every instance
    /// (`Scope::All`) in `state`.
    fn set_path(
        &self,
        dependency: &str,
        scope: Scope,
        state: PathState,
    ) -> impl Future<Output = std::io::Result<()>> + Send;

    /// Freezes every process of instance `index`.
    fn freeze(&self, index: usize) -> std::io::Result<Self::Frozen>;

    /// Thaws what [`Backend::freeze`] froze, whatever happened to the instance meanwhile.
    fn thaw(&self, frozen: Self::Frozen);

    /// Stops instance `index` as a rollout does (out of rotation, preStop, the stop signal,
    /// a kill at the grace period) and starts its replacement; resolves once the replacement
    /// runs. The future owns what it needs, so it may run on a task of its own.
    fn replace(&self, index: usize) -> impl Future<Output = std::io::Result<()>> + Send + 'static;

    /// Kills every process of instance `index` at once; its restart policy starts it again.
    fn crash(&self, index: usize) -> std::io::Result<()>;

    /// The `http://host:port` of instance `index`'s port named `port` (`None`: the traffic
    /// port), for an app-assisted hook.
    fn base_url(&self, index: usize, port: Option<&str>) -> Option<String>;

    /// What an instance placeholder (`{port}`, `{port.NAME}`, `{instance}`, `{name}`) means
    /// for instance `index`.
    fn placeholder(&self, index: usize, placeholder: &Placeholder) -> Option<String>;

    /// Stops everything the fleet runs.
    fn shutdown(self) -> impl Future<Output = ()>;
}

/// Whether every instance is Ready, settled and in rotation.
pub fn whole(fleet: &impl Backend) -> bool {
    (0..fleet.instances()).all(|index| fleet.is_ready(index) && fleet.in_rotation(index))
}

/// Why a fleet could not start.
pub(crate) fn not_ready(fleet: &impl Backend, index: usize, reason: String) -> DrillError {
    DrillError::InstanceFailed {
        name: fleet.name(index).to_owned(),
        reason,
        log: fleet.log_tail(index),
    }
}
