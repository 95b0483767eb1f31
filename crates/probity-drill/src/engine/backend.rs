//! The boundary between the drill and the fleet it drills.
//!
//! The engine — the faults' timeline, the traffic, the measurements, the targets and the report
//! — asks a fleet for these operations only, so a fleet elsewhere (a Kubernetes backend on a
//! staging cluster: Chaos Mesh resources for the paths, pod deletion for a rollout, the
//! container runtime for a crash, EndpointSlices for rotation, pod status and events for the
//! record; `docs/drill.md`, "Past one machine") drills the same drill files into the same
//! report. [`Fleet`] — processes on this machine, a fault proxy per instance per dependency, a
//! kubelet per pod, HAProxy — is its one implementation. (The health-check cost's bare and
//! control fleets, [`super::cost`], are built locally beside it.)

use super::events::Events;
use super::fleet::{self, Fleet};
use super::pod::Frozen;
use super::tcp::PathState;
use crate::DrillError;
use crate::file::placeholder::Placeholder;
use crate::file::{AppChange, Scope};
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::time::Instant;

/// A fleet the engine can drill. Instances are numbered from 0; faults that act on one
/// instance act on instance 0.
pub trait Backend {
    /// What [`Backend::freeze`] hands back, to thaw the same processes later.
    type Frozen: Send + 'static;

    /// How many instances the fleet has.
    fn instances(&self) -> usize;

    /// Where the traffic goes: the balancer (on a cluster, the ingress).
    fn frontend(&self) -> SocketAddr;

    /// Instance `index`'s own traffic address, for load sent straight to it.
    fn instance_address(&self, index: usize) -> SocketAddr;

    /// The record of what happened to each instance — probe failures, readiness and rotation
    /// changes, kills, exits, restarts, replacements — that every row is measured from.
    fn events(&self) -> &Events;

    /// Starts every instance, each Ready within `timeout`, and waits until the balancer has
    /// each in rotation.
    fn start(&self, timeout: Duration) -> impl Future<Output = Result<(), DrillError>>;

    /// Whether every instance is Ready, with no kill of it under way, and in rotation.
    fn whole(&self) -> bool;

    /// Puts the path to `dependency` of instance 0 (`Scope::One`) or of every instance
    /// (`Scope::All`) in `state`.
    fn set_path(
        &self,
        dependency: &str,
        scope: Scope,
        state: PathState,
    ) -> impl Future<Output = std::io::Result<()>>;

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

    /// Changes instance `index`'s program (environment, arguments) for the processes started
    /// from now on (`None`: as the file has it).
    fn set_change(&self, index: usize, change: Option<&AppChange>);

    /// The `http://host:port` of instance `index`'s port named `port` (`None`: the traffic
    /// port), for an app-assisted hook.
    fn base_url(&self, index: usize, port: Option<&str>) -> Option<String>;

    /// What a placeholder means for instance `index` (`None` for one it does not fill).
    fn placeholder(&self, index: usize, placeholder: &Placeholder) -> Option<String>;

    /// The processes whose CPU time the health-check cost counts: each instance's app and
    /// agent, and the balancer.
    fn processes(&self) -> super::cpu::Processes;

    /// `text` with instance `index`'s placeholders filled.
    fn fill(&self, index: usize, text: &str) -> String;
}

/// Waits until the fleet is whole and stays whole for [`fleet::STABLE`] (a crash or a kill
/// takes effect a moment after the signal); returns when that stretch began, or `None` when it
/// did not happen within `within`.
pub async fn wait_whole(fleet: &impl Backend, within: Duration) -> Option<Instant> {
    let deadline = Instant::now() + within;
    let mut whole_since: Option<Instant> = None;
    loop {
        let now = Instant::now();
        if fleet.whole() {
            let since = *whole_since.get_or_insert(now);
            if now.duration_since(since) >= fleet::STABLE {
                return Some(since);
            }
        } else {
            whole_since = None;
        }
        if now >= deadline + fleet::STABLE {
            return None;
        }
        if now >= deadline && whole_since.is_none() {
            return None;
        }
        tokio::time::sleep(fleet::ROTATION_POLL).await;
    }
}

impl Backend for Fleet {
    type Frozen = Frozen;

    fn instances(&self) -> usize {
        self.pods.len()
    }

    fn frontend(&self) -> SocketAddr {
        self.balancer.frontend
    }

    fn instance_address(&self, index: usize) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.pods[index].ports.app))
    }

    fn events(&self) -> &Events {
        &self.events
    }

    async fn start(&self, timeout: Duration) -> Result<(), DrillError> {
        Fleet::start(self, timeout).await
    }

    fn whole(&self) -> bool {
        Fleet::whole(self)
    }

    async fn set_path(
        &self,
        dependency: &str,
        scope: Scope,
        state: PathState,
    ) -> std::io::Result<()> {
        Fleet::set_path(self, dependency, scope, state).await
    }

    fn freeze(&self, index: usize) -> std::io::Result<Frozen> {
        self.pods[index].freeze()
    }

    fn thaw(&self, frozen: Frozen) {
        frozen.thaw();
    }

    fn replace(&self, index: usize) -> impl Future<Output = std::io::Result<()>> + Send + 'static {
        let pod = self.pods[index].clone();
        async move { pod.replace().await }
    }

    fn crash(&self, index: usize) -> std::io::Result<()> {
        self.pods[index].crash()
    }

    fn set_change(&self, index: usize, change: Option<&AppChange>) {
        self.pods[index].set_change(change.map(|change| self.instances[index].change(change)));
    }

    fn base_url(&self, index: usize, port: Option<&str>) -> Option<String> {
        let ports = &self.pods[index].ports;
        let port = match port {
            Some(name) => *ports.named.get(name)?,
            None => ports.app,
        };
        Some(format!("http://127.0.0.1:{port}"))
    }

    fn placeholder(&self, index: usize, placeholder: &Placeholder) -> Option<String> {
        let pod = &self.pods[index];
        match placeholder {
            Placeholder::Port => Some(pod.ports.app.to_string()),
            Placeholder::NamedPort(name) => pod.ports.named.get(name).map(u16::to_string),
            Placeholder::Instance => Some((index + 1).to_string()),
            Placeholder::Name => Some(pod.name.clone()),
            _ => None,
        }
    }

    fn processes(&self) -> super::cpu::Processes {
        Fleet::processes(self)
    }

    fn fill(&self, index: usize, text: &str) -> String {
        self.instances[index].fill(text)
    }
}
