//! The container as pasted from a Kubernetes manifest: its probes, checked by the API
//! server's rules and defaulted, and its preStop hook.

use super::app::Endpoint;
use super::{Checked, list_or_none};
use crate::error::Invalid;
use crate::time::Millis;
use probity_contract::kube;
use probity_contract::kube::probe::ProbeTiming;
use probity_contract::probe::ProbeKind;
use serde::Deserialize;
use serde::de::IgnoredAny;
use std::collections::BTreeMap;

/// A container spec as pasted from a manifest. Only the probe and lifecycle fields matter; the
/// other container fields are accepted and ignored so a whole container can be pasted.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[allow(dead_code)] // fields accepted so a pasted spec parses; they do not affect the model
pub(super) struct ContainerFile {
    #[serde(default)]
    pub(super) liveness_probe: Option<kube::probe::ProbeSpec>,
    #[serde(default)]
    pub(super) readiness_probe: Option<kube::probe::ProbeSpec>,
    #[serde(default)]
    pub(super) startup_probe: Option<kube::probe::ProbeSpec>,
    #[serde(default)]
    lifecycle: Option<kube::termination::Lifecycle>,
    #[serde(default)]
    name: Option<IgnoredAny>,
    #[serde(default)]
    image: Option<IgnoredAny>,
    #[serde(default)]
    image_pull_policy: Option<IgnoredAny>,
    #[serde(default)]
    command: Option<IgnoredAny>,
    #[serde(default)]
    args: Option<IgnoredAny>,
    #[serde(default)]
    env: Option<IgnoredAny>,
    #[serde(default)]
    env_from: Option<IgnoredAny>,
    #[serde(default)]
    ports: Option<IgnoredAny>,
    #[serde(default)]
    resources: Option<IgnoredAny>,
    #[serde(default)]
    volume_mounts: Option<IgnoredAny>,
    #[serde(default)]
    security_context: Option<IgnoredAny>,
    #[serde(default)]
    working_dir: Option<IgnoredAny>,
}

/// The three probes of the container.
#[derive(Debug, Clone, Copy, Default)]
pub struct Probes {
    /// `livenessProbe`.
    pub liveness: Option<ProbeSpec>,
    /// `readinessProbe`.
    pub readiness: Option<ProbeSpec>,
    /// `startupProbe`.
    pub startup: Option<ProbeSpec>,
}

impl Probes {
    /// The probe of a kind.
    pub fn get(&self, kind: ProbeKind) -> Option<&ProbeSpec> {
        match kind {
            ProbeKind::Liveness => self.liveness.as_ref(),
            ProbeKind::Readiness => self.readiness.as_ref(),
            ProbeKind::Startup => self.startup.as_ref(),
        }
    }
}

/// A probe with the API server's defaults applied (`SetDefaults_Probe`: period 10, timeout 1,
/// success 1, failure 3; a zero is replaced by the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeSpec {
    /// What the probe calls.
    pub handler: Handler,
    /// Its five numbers.
    pub timing: ProbeTiming,
    /// Probe-level `terminationGracePeriodSeconds`, in milliseconds.
    pub termination_grace: Option<Millis>,
}

impl ProbeSpec {
    /// A probe of an endpoint with the Kubernetes defaults.
    pub fn http(endpoint: usize) -> Self {
        ProbeSpec {
            handler: Handler::Http { endpoint },
            timing: ProbeTiming::default(),
            termination_grace: None,
        }
    }

    /// `periodSeconds`, in milliseconds.
    pub fn period(&self) -> Millis {
        self.timing.period.as_millis() as Millis
    }

    /// `timeoutSeconds`, in milliseconds.
    pub fn timeout(&self) -> Millis {
        self.timing.timeout.as_millis() as Millis
    }
}

/// What a probe or a load-balancer check calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handler {
    /// An HTTP GET (or gRPC health `Check`) answered by an application endpoint.
    Http {
        /// Index into [`super::App::endpoints`].
        endpoint: usize,
    },
    /// A TCP connect: succeeds whenever the process listens, whatever its handlers do.
    Tcp,
}

impl ContainerFile {
    /// Whether the readiness probe calls an endpoint (HTTP or gRPC), which is what a server
    /// that closes connections while unready needs.
    pub(super) fn readiness_calls_an_endpoint(&self) -> bool {
        self.readiness_probe
            .as_ref()
            .is_some_and(|probe| probe.http_get.is_some() || probe.grpc.is_some())
    }

    /// The probes, checked by the API server's rules and resolved against the endpoints.
    pub(super) fn probes(
        &self,
        endpoint_index: &BTreeMap<String, usize>,
        endpoints: &[Endpoint],
    ) -> Checked<Probes> {
        let probe = |file: &Option<kube::probe::ProbeSpec>, kind: ProbeKind| {
            let field = format!("container.{}", kind.container_field());
            file.as_ref()
                .map(|file| checked_probe(file, kind, &field, endpoint_index, endpoints))
                .transpose()
        };
        Ok(Probes {
            liveness: probe(&self.liveness_probe, ProbeKind::Liveness)?,
            readiness: probe(&self.readiness_probe, ProbeKind::Readiness)?,
            startup: probe(&self.startup_probe, ProbeKind::Startup)?,
        })
    }

    /// `lifecycle.preStop`'s sleep, in milliseconds, checked against the grace period.
    pub(super) fn pre_stop_sleep(&self, termination_grace: Millis) -> Checked<Millis> {
        let Some(pre_stop) = self
            .lifecycle
            .as_ref()
            .and_then(|lifecycle| lifecycle.pre_stop.as_ref())
        else {
            return Ok(0);
        };
        let grace_seconds = (termination_grace / 1000) as i64;
        if let Some(violation) = pre_stop.validate(grace_seconds).into_iter().next() {
            return Err(violation.under("container.lifecycle.preStop").into());
        }
        Ok(pre_stop.known_duration().as_millis() as Millis)
    }
}

fn checked_probe(
    file: &kube::probe::ProbeSpec,
    kind: ProbeKind,
    field: &str,
    endpoint_index: &BTreeMap<String, usize>,
    endpoints: &[Endpoint],
) -> Checked<ProbeSpec> {
    // What the API server would reject first (validation.go), in its words.
    let resolved = file
        .resolve(kind)
        .map_err(|violation| Invalid::from(violation.under(field)))?;
    let known = || {
        list_or_none(
            &endpoints
                .iter()
                .map(|endpoint| endpoint.path.clone())
                .collect::<Vec<_>>(),
        )
    };
    let handler = match &resolved.handler {
        kube::probe::Handler::HttpGet { path, .. } => {
            let path = path.split('?').next().unwrap_or("/").to_string();
            match endpoint_index.get(&path) {
                Some(&endpoint) => Handler::Http { endpoint },
                None => {
                    return Err(Invalid::new(
                        format!("{field}.httpGet.path"),
                        format!(
                            "no endpoint `{path}` in app.endpoints (declared: {}); say what it checks there",
                            known()
                        ),
                    ));
                }
            }
        }
        kube::probe::Handler::TcpSocket { .. } => Handler::Tcp,
        kube::probe::Handler::Grpc { service, .. } => {
            let path = format!("grpc:{service}");
            match endpoint_index.get(&path) {
                Some(&endpoint) => Handler::Http { endpoint },
                None => {
                    return Err(Invalid::new(
                        format!("{field}.grpc.service"),
                        format!(
                            "no endpoint `{path}` in app.endpoints (declared: {})",
                            known()
                        ),
                    ));
                }
            }
        }
        kube::probe::Handler::Exec { .. } => {
            return Err(Invalid::new(
                format!("{field}.exec"),
                "exec probes run a command the simulator cannot model; describe the probe with httpGet or tcpSocket and the endpoint under app.endpoints",
            ));
        }
    };
    // The simulator's own bound: a probe period or threshold past a day is not a probe
    // anyone runs.
    for (name, value) in [
        ("initialDelaySeconds", file.initial_delay_seconds),
        ("periodSeconds", file.period_seconds),
        ("timeoutSeconds", file.timeout_seconds),
        ("successThreshold", file.success_threshold),
        ("failureThreshold", file.failure_threshold),
    ] {
        if value.is_some_and(|value| value > 86_400) {
            return Err(Invalid::new(
                format!("{field}.{name}"),
                "more than a day cannot be simulated",
            ));
        }
    }
    Ok(ProbeSpec {
        handler,
        timing: resolved.timing,
        termination_grace: resolved
            .termination_grace_period
            .map(|grace| grace.as_millis() as Millis),
    })
}
