//! The three questions a probe can ask.

use serde::{Deserialize, Serialize};

/// Which question a probe answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeKind {
    /// "Is this process broken beyond what a restart fixes?" Failing restarts the container.
    Liveness,
    /// "Can this instance serve traffic now?" Failing takes it out of rotation.
    Readiness,
    /// "Has the slow boot finished?" Gates liveness and readiness until it passes once.
    Startup,
}

impl ProbeKind {
    /// Every kind, in the order Kubernetes lists a container's probes.
    pub const ALL: [ProbeKind; 3] = [
        ProbeKind::Liveness,
        ProbeKind::Readiness,
        ProbeKind::Startup,
    ];

    /// The lowercase name, also the gRPC health service name for the probe.
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeKind::Liveness => "liveness",
            ProbeKind::Readiness => "readiness",
            ProbeKind::Startup => "startup",
        }
    }

    /// The conventional HTTP path: `/livez`, `/readyz` or `/startupz`.
    pub fn default_path(self) -> &'static str {
        match self {
            ProbeKind::Liveness => "/livez",
            ProbeKind::Readiness => "/readyz",
            ProbeKind::Startup => "/startupz",
        }
    }

    /// The container field that holds the probe: `livenessProbe`, `readinessProbe` or
    /// `startupProbe`.
    pub fn container_field(self) -> &'static str {
        match self {
            ProbeKind::Liveness => "livenessProbe",
            ProbeKind::Readiness => "readinessProbe",
            ProbeKind::Startup => "startupProbe",
        }
    }
}

impl std::fmt::Display for ProbeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
