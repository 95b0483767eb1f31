//! The fleet: how many pods, their names, how the run starts, and the kubelet's version
//! differences.

use super::Checked;
use crate::error::Invalid;
use crate::time::{Millis, Span};
use probity_contract::kube;
use serde::Deserialize;

/// The largest fleet simulated.
pub const MAX_REPLICAS: u32 = 100_000;

/// `fleet:` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FleetFile {
    #[serde(default = "default_replicas")]
    replicas: u32,
    #[serde(default)]
    names: Vec<String>,
    #[serde(default)]
    start: Start,
    #[serde(default)]
    stagger: Span,
    #[serde(default, rename = "terminationGracePeriodSeconds")]
    termination_grace_period_seconds: Option<i64>,
}

fn default_replicas() -> u32 {
    3
}

impl Default for FleetFile {
    fn default() -> Self {
        FleetFile {
            replicas: default_replicas(),
            names: Vec::new(),
            start: Start::default(),
            stagger: Span::default(),
            termination_grace_period_seconds: None,
        }
    }
}

/// How the fleet is at the start of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Start {
    /// Every pod has been running for a long time: booted, started, ready, in rotation, with
    /// its probe tickers at uniformly spread phases.
    #[default]
    Steady,
    /// Every pod is created at the start (one `stagger` apart) and boots.
    Cold,
}

/// The pods of the fleet.
#[derive(Debug, Clone)]
pub struct Fleet {
    /// Number of pods.
    pub replicas: usize,
    /// Display name of each pod.
    pub names: Vec<String>,
    /// Steady or cold start.
    pub start: Start,
    /// With a cold start, the time between pod creations.
    pub stagger: Millis,
    /// The pod's `terminationGracePeriodSeconds`, in milliseconds (default 30 s).
    pub termination_grace: Millis,
}

impl Fleet {
    /// The pod named or numbered `reference`, for faults that name one.
    pub(super) fn instance(&self, reference: &InstanceRef, field: &str) -> Checked<usize> {
        match reference {
            InstanceRef::Index(index) if (*index as usize) < self.replicas => Ok(*index as usize),
            InstanceRef::Index(index) => Err(Invalid::new(
                field,
                format!(
                    "instance {index} does not exist: the fleet has {} (0-based)",
                    self.replicas
                ),
            )),
            InstanceRef::Name(name) => self
                .names
                .iter()
                .position(|known| known == name)
                .ok_or_else(|| {
                    Invalid::new(field, format!("no instance named `{name}` in fleet.names"))
                }),
        }
    }
}

/// A pod named by its index or by its name.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(super) enum InstanceRef {
    Index(u32),
    Name(String),
}

/// `kubelet:` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct KubeletFile {
    #[serde(default)]
    pub(super) backoff_requeue: BackoffRequeue,
}

/// When the kubelet retries a container that is in CrashLoopBackOff.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackoffRequeue {
    /// At the moment the backoff expires (kubelet ≥ 1.35, PR #133066).
    #[default]
    Exact,
    /// At the first pod-worker retry after expiry; retries come every `wait.Jitter(10s, 0.5)`,
    /// adding 0–15 s (kubelet < 1.35, `pod_workers.go` `completeWork`, k8s issue #123602).
    Jitter,
}

/// Kubelet behaviour that differs between versions.
#[derive(Debug, Clone, Copy, Default)]
pub struct KubeletSettings {
    /// When a container in CrashLoopBackOff is retried.
    pub backoff_requeue: BackoffRequeue,
}

impl FleetFile {
    /// The fleet, checked.
    pub(super) fn resolve(&self) -> Checked<Fleet> {
        let replicas = self.replicas;
        if replicas == 0 || replicas > MAX_REPLICAS {
            return Err(Invalid::new(
                "fleet.replicas",
                format!("must be between 1 and {MAX_REPLICAS}"),
            ));
        }
        let replicas = replicas as usize;
        let names = if self.names.is_empty() {
            (0..replicas).map(|index| format!("pod-{index}")).collect()
        } else if self.names.len() == replicas {
            self.names.clone()
        } else {
            return Err(Invalid::new(
                "fleet.names",
                format!(
                    "{} names for {} replicas: give one name per replica or none",
                    self.names.len(),
                    replicas
                ),
            ));
        };
        let termination_grace =
            kube::termination::pod_grace_period(self.termination_grace_period_seconds)
                .map_err(|violation| Invalid::from(violation.under("fleet")))?
                .as_millis() as Millis;
        Ok(Fleet {
            replicas,
            names,
            start: self.start,
            stagger: self.stagger.as_millis(),
            termination_grace,
        })
    }
}
