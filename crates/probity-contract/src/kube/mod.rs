//! Kubernetes' own rules for probes, restarts and termination, as its source has them.
//!
//! Everything here is pure: values in, values out, no clock and no I/O. A caller (the
//! simulator's event loop, the linter's rules, the drill's prober) supplies the time.
//!
//! | module | what | Kubernetes source |
//! |---|---|---|
//! | [`probe`] | the probe spec, its defaults, the API server's validation | `pkg/apis/core/v1/defaults.go`, `pkg/apis/core/validation/validation.go` |
//! | [`prober`] | the kubelet's probe worker: initial results, gating, thresholds | `pkg/kubelet/prober/worker.go`, `pkg/kubelet/prober/prober_manager.go` |
//! | [`backoff`] | CrashLoopBackOff | `pkg/kubelet/kuberuntime/kuberuntime_manager.go`, `pkg/kubelet/kubelet.go`, `staging/src/k8s.io/client-go/util/flowcontrol/backoff.go` |
//! | [`termination`] | grace periods, preStop, the stop signal | `pkg/kubelet/kuberuntime/kuberuntime_container.go` |
//!
//! The concepts page behind all of them:
//! <https://kubernetes.io/docs/concepts/configuration/liveness-readiness-startup-probes/>.

pub mod backoff;
pub mod probe;
pub mod prober;
pub mod termination;

use std::fmt;

/// A value the API server would reject, and why, in its own words where it has them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The field's path relative to the object validated (`successThreshold`,
    /// `httpGet.port`); empty for the object itself.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl Violation {
    /// A violation of `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Violation {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The same violation with its field placed under `parent` (`container.livenessProbe`).
    pub fn under(mut self, parent: &str) -> Self {
        self.field = match (parent.is_empty(), self.field.is_empty()) {
            (true, _) => self.field,
            (false, true) => parent.to_string(),
            (false, false) => format!("{parent}.{}", self.field),
        };
        self
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for Violation {}
