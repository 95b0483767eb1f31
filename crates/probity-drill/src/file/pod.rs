//! The pod: the app's container spec as Kubernetes has it, pasted into the drill file or read
//! from a real manifest, and resolved into what the drill's prober runs.
//!
//! The probes and the lifecycle are probity-contract's Kubernetes types
//! ([`probity_contract::kube::probe::ProbeSpec`], [`probity_contract::kube::termination`]): the
//! API server's validation and defaults (`SetDefaults_Probe`) apply as `probity lint` and
//! `probity simulate` apply them. A probe's `port` (a number or a name) is mapped to the
//! instance's own port for it: `app.port`, one of `app.ports`, or the agent's port.

use super::{App, read_text};
use probity_contract::kube::probe::{Handler, IntOrString, ProbeSpec, ProbeTiming, Scheme};
use probity_contract::kube::termination::{self, Lifecycle};
use probity_contract::probe::ProbeKind;
use serde::Deserialize;
use serde::de::IgnoredAny;
use std::path::Path;
use std::time::Duration;

/// A container port as a container spec declares it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[allow(dead_code)] // protocol, hostPort, hostIP: accepted so a pasted spec parses
pub struct ContainerPort {
    /// `name`.
    #[serde(default)]
    pub name: Option<String>,
    /// `containerPort`.
    pub container_port: i64,
    /// `protocol`, `hostPort`, `hostIP`: accepted, unused.
    #[serde(default)]
    protocol: Option<IgnoredAny>,
    #[serde(default)]
    host_port: Option<IgnoredAny>,
    #[serde(default, rename = "hostIP")]
    host_ip: Option<IgnoredAny>,
}

/// A container spec (`core/v1` `Container`). The probes, the lifecycle and the ports matter;
/// every other field of the API is accepted so a container can be pasted whole, and any key the
/// API does not have is an error.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[allow(dead_code)] // fields accepted so a pasted spec parses; the drill does not use them
pub struct ContainerSpec {
    /// `name`.
    #[serde(default)]
    pub name: Option<String>,
    /// `ports`.
    #[serde(default)]
    pub ports: Vec<ContainerPort>,
    /// `startupProbe`.
    #[serde(default)]
    pub startup_probe: Option<ProbeSpec>,
    /// `livenessProbe`.
    #[serde(default)]
    pub liveness_probe: Option<ProbeSpec>,
    /// `readinessProbe`.
    #[serde(default)]
    pub readiness_probe: Option<ProbeSpec>,
    /// `lifecycle` (`preStop`, `stopSignal`).
    #[serde(default)]
    pub lifecycle: Option<Lifecycle>,
    #[serde(default)]
    image: Option<IgnoredAny>,
    #[serde(default)]
    image_pull_policy: Option<IgnoredAny>,
    #[serde(default)]
    command: Option<IgnoredAny>,
    #[serde(default)]
    args: Option<IgnoredAny>,
    #[serde(default)]
    working_dir: Option<IgnoredAny>,
    #[serde(default)]
    env: Option<IgnoredAny>,
    #[serde(default)]
    env_from: Option<IgnoredAny>,
    #[serde(default)]
    resources: Option<IgnoredAny>,
    #[serde(default)]
    resize_policy: Option<IgnoredAny>,
    #[serde(default)]
    restart_policy: Option<IgnoredAny>,
    #[serde(default)]
    restart_policy_rules: Option<IgnoredAny>,
    #[serde(default)]
    volume_mounts: Option<IgnoredAny>,
    #[serde(default)]
    volume_devices: Option<IgnoredAny>,
    #[serde(default)]
    security_context: Option<IgnoredAny>,
    #[serde(default)]
    termination_message_path: Option<IgnoredAny>,
    #[serde(default)]
    termination_message_policy: Option<IgnoredAny>,
    #[serde(default)]
    stdin: Option<IgnoredAny>,
    #[serde(default)]
    stdin_once: Option<IgnoredAny>,
    #[serde(default)]
    tty: Option<IgnoredAny>,
}

/// A pod spec (`core/v1` `PodSpec`), as pasted: the containers and the grace period matter;
/// the other fields of the API are accepted.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[allow(dead_code)] // fields accepted so a pasted spec parses; the drill does not use them
pub struct PodSpec {
    /// `terminationGracePeriodSeconds` (30 when unset).
    #[serde(default)]
    pub termination_grace_period_seconds: Option<i64>,
    /// `containers`: the app's, alone or named as the drill file's `service`.
    pub containers: Vec<ContainerSpec>,
    #[serde(default)]
    init_containers: Option<IgnoredAny>,
    #[serde(default)]
    volumes: Option<IgnoredAny>,
    #[serde(default)]
    service_account_name: Option<IgnoredAny>,
    #[serde(default)]
    automount_service_account_token: Option<IgnoredAny>,
    #[serde(default)]
    node_selector: Option<IgnoredAny>,
    #[serde(default)]
    affinity: Option<IgnoredAny>,
    #[serde(default)]
    tolerations: Option<IgnoredAny>,
    #[serde(default)]
    topology_spread_constraints: Option<IgnoredAny>,
    #[serde(default)]
    security_context: Option<IgnoredAny>,
    #[serde(default)]
    image_pull_secrets: Option<IgnoredAny>,
    #[serde(default)]
    priority_class_name: Option<IgnoredAny>,
    #[serde(default)]
    restart_policy: Option<IgnoredAny>,
    #[serde(default)]
    dns_policy: Option<IgnoredAny>,
    #[serde(default)]
    enable_service_links: Option<IgnoredAny>,
}

impl PodSpec {
    pub(super) fn check(&self) -> Result<(), String> {
        if self.containers.is_empty() {
            return Err("containers: the app's container, with its probes".into());
        }
        Ok(())
    }

    /// The app's container: the only one, or the one named `service`.
    pub fn app_container(&self, service: &str) -> Result<&ContainerSpec, String> {
        match self.containers.as_slice() {
            [only] => Ok(only),
            many => many
                .iter()
                .find(|container| container.name.as_deref() == Some(service))
                .ok_or_else(|| {
                    format!(
                        "pod.containers: {} containers and none named `{service}` (the \
                         service): keep the app's container only, or name it after the service",
                        many.len()
                    )
                }),
        }
    }
}

/// Which of the instance's ports a probe or a hook reaches.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PortTarget {
    /// `app.port`.
    App,
    /// One of `app.ports`.
    Named(String),
    /// The agent's port.
    Agent,
}

/// What a probe does, on the instance's own ports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeAction {
    /// An HTTP GET; 200 to 399 passes.
    Http {
        /// The port.
        target: PortTarget,
        /// The path.
        path: String,
        /// Extra headers.
        headers: Vec<(String, String)>,
    },
    /// A TCP connect.
    Tcp {
        /// The port.
        target: PortTarget,
    },
    /// A command run beside the app (in its working directory, with its environment); exit
    /// code 0 passes.
    Exec {
        /// The command.
        command: Vec<String>,
    },
}

/// One probe, defaulted and mapped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedProbe {
    /// Period, timeout, thresholds.
    pub timing: ProbeTiming,
    /// What it runs.
    pub action: ProbeAction,
    /// The probe-level grace period, when set.
    pub termination_grace_period: Option<Duration>,
}

/// What preStop does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreStop {
    /// `sleep`.
    Sleep(Duration),
    /// `exec`, run beside the app.
    Exec(Vec<String>),
    /// `httpGet`.
    Http {
        /// The port.
        target: PortTarget,
        /// The path.
        path: String,
    },
}

/// The pod, resolved: what the prober and the stop sequence run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResolvedPod {
    /// `startupProbe`.
    pub startup: Option<ResolvedProbe>,
    /// `livenessProbe`.
    pub liveness: Option<ResolvedProbe>,
    /// `readinessProbe`.
    pub readiness: Option<ResolvedProbe>,
    /// `lifecycle.preStop`.
    pub pre_stop: Option<PreStop>,
    /// `terminationGracePeriodSeconds`, defaulted.
    pub grace_period: Duration,
    /// Where the probes came from (`pod` in FILE, or the manifest and container).
    pub source: String,
}

impl ResolvedPod {
    /// The probe of `kind`.
    pub fn probe(&self, kind: ProbeKind) -> Option<&ResolvedProbe> {
        match kind {
            ProbeKind::Startup => self.startup.as_ref(),
            ProbeKind::Liveness => self.liveness.as_ref(),
            ProbeKind::Readiness => self.readiness.as_ref(),
        }
    }
}

/// Maps a probe's port to the instance's port for it.
pub(crate) fn port_target(
    port: &IntOrString,
    app: &App,
    declared: &[ContainerPort],
    agent_port: Option<u16>,
) -> Result<PortTarget, String> {
    let by_number = |number: i64| -> Option<PortTarget> {
        if number == i64::from(app.port) {
            return Some(PortTarget::App);
        }
        if agent_port.is_some_and(|agent| number == i64::from(agent)) {
            return Some(PortTarget::Agent);
        }
        app.ports
            .iter()
            .find(|(_, port)| i64::from(**port) == number)
            .map(|(name, _)| PortTarget::Named(name.clone()))
    };
    match port {
        IntOrString::Int(number) => by_number(*number).ok_or_else(|| {
            format!(
                "port {number} is neither app.port ({}) nor one of app.ports{}",
                app.port,
                if agent_port.is_some() {
                    " nor agent.port"
                } else {
                    ""
                }
            )
        }),
        IntOrString::String(name) => {
            if let Some(number) = declared
                .iter()
                .find(|declared| declared.name.as_deref() == Some(name.as_str()))
                .map(|declared| declared.container_port)
            {
                return by_number(number).ok_or_else(|| {
                    format!(
                        "port `{name}` is containerPort {number}, neither app.port ({}) nor \
                         one of app.ports",
                        app.port
                    )
                });
            }
            if app.ports.contains_key(name) {
                return Ok(PortTarget::Named(name.clone()));
            }
            Err(format!(
                "port `{name}` is not declared: add it to the container's ports or to app.ports"
            ))
        }
    }
}

fn resolve_probe(
    spec: &ProbeSpec,
    kind: ProbeKind,
    field: &str,
    app: &App,
    declared: &[ContainerPort],
    agent_port: Option<u16>,
) -> Result<ResolvedProbe, String> {
    let probe = spec
        .resolve(kind)
        .map_err(|violation| format!("{field}.{}: {}", violation.field, violation.message))?;
    let action = match probe.handler {
        Handler::HttpGet {
            path,
            port,
            host,
            scheme,
            headers,
        } => {
            if host.is_some() {
                return Err(format!(
                    "{field}.httpGet.host: the drill probes the instance itself; remove host"
                ));
            }
            if scheme == Scheme::Https {
                return Err(format!(
                    "{field}.httpGet.scheme: HTTPS probes are not run by the drill yet"
                ));
            }
            ProbeAction::Http {
                target: port_target(&port, app, declared, agent_port)
                    .map_err(|message| format!("{field}.httpGet.port: {message}"))?,
                path,
                headers: headers.into_iter().map(|h| (h.name, h.value)).collect(),
            }
        }
        Handler::TcpSocket { port, .. } => ProbeAction::Tcp {
            target: port_target(&port, app, declared, agent_port)
                .map_err(|message| format!("{field}.tcpSocket.port: {message}"))?,
        },
        Handler::Exec { command } => ProbeAction::Exec { command },
        Handler::Grpc { .. } => {
            return Err(format!(
                "{field}.grpc: gRPC probes are not run by the drill yet; probe over httpGet"
            ));
        }
    };
    Ok(ResolvedProbe {
        timing: probe.timing,
        action,
        termination_grace_period: probe.termination_grace_period,
    })
}

/// Resolves a container's probes and lifecycle, and the pod's grace period.
pub(crate) fn resolve(
    container: &ContainerSpec,
    grace_seconds: Option<i64>,
    app: &App,
    agent: Option<(&ContainerSpec, u16)>,
    source: String,
) -> Result<ResolvedPod, String> {
    let grace_period = termination::pod_grace_period(grace_seconds)
        .map_err(|violation| format!("terminationGracePeriodSeconds: {}", violation.message))?;
    // With the agent, its container fragment replaces the app's probes (and lifecycle when
    // it has one).
    let (probes, agent_port) = match agent {
        Some((probes, port)) => (probes, Some(port)),
        None => (container, None),
    };
    let mut declared = container.ports.clone();
    declared.extend(probes.ports.iter().cloned());
    let each = |spec: &Option<ProbeSpec>, kind: ProbeKind, field: &str| {
        spec.as_ref()
            .map(|spec| resolve_probe(spec, kind, field, app, &declared, agent_port))
            .transpose()
    };
    let lifecycle = probes.lifecycle.as_ref().or(container.lifecycle.as_ref());
    let pre_stop = match lifecycle.and_then(|lifecycle| lifecycle.pre_stop.as_ref()) {
        None => None,
        Some(hook) => {
            let grace = i64::try_from(grace_period.as_secs()).unwrap_or(i64::MAX);
            if let Some(violation) = hook.validate(grace).into_iter().next() {
                return Err(format!(
                    "lifecycle.preStop.{}: {}",
                    violation.field, violation.message
                ));
            }
            if let Some(sleep) = hook.sleep {
                Some(PreStop::Sleep(Duration::from_secs(
                    sleep.seconds.max(0).unsigned_abs(),
                )))
            } else if let Some(exec) = &hook.exec {
                Some(PreStop::Exec(exec.command.clone().unwrap_or_default()))
            } else if let Some(http) = &hook.http_get {
                let port = http.port.clone().unwrap_or(IntOrString::Int(0));
                Some(PreStop::Http {
                    target: port_target(&port, app, &declared, agent_port)
                        .map_err(|message| format!("lifecycle.preStop.httpGet.port: {message}"))?,
                    path: http.path_or_default().to_owned(),
                })
            } else {
                None // tcpSocket: the kubelet does nothing with it
            }
        }
    };
    Ok(ResolvedPod {
        startup: each(&probes.startup_probe, ProbeKind::Startup, "startupProbe")?,
        liveness: each(&probes.liveness_probe, ProbeKind::Liveness, "livenessProbe")?,
        readiness: each(
            &probes.readiness_probe,
            ProbeKind::Readiness,
            "readinessProbe",
        )?,
        pre_stop,
        grace_period,
        source,
    })
}

/// A container read from a manifest, with its pod's grace period.
#[derive(Debug, Clone)]
pub struct FromManifest {
    /// The container.
    pub container: ContainerSpec,
    /// The pod's `terminationGracePeriodSeconds`.
    pub grace_seconds: Option<i64>,
    /// The workload's kind and name (`Deployment/orders`).
    pub workload: String,
    /// The container as written, for what the drill does not model (command, env).
    pub raw: serde_json::Value,
}

/// The pod template's spec of a workload document, if it has one.
fn pod_spec_of(document: &serde_json::Value) -> Option<&serde_json::Value> {
    let kind = document.get("kind")?.as_str()?;
    let spec = document.get("spec")?;
    match kind {
        "Pod" => Some(spec),
        "CronJob" => spec
            .get("jobTemplate")?
            .get("spec")?
            .get("template")?
            .get("spec"),
        _ => spec.get("template")?.get("spec"),
    }
}

/// Reads the container named `container` from the workloads in the manifest at `path`.
pub fn read_manifest(path: &Path, container: &str) -> Result<FromManifest, String> {
    let text = read_text(path).map_err(|message| format!("{}: {message}", path.display()))?;
    let documents: Vec<serde_json::Value> =
        serde_saphyr::from_multiple(&text).map_err(|error| {
            format!(
                "{}: not YAML: {}",
                path.display(),
                super::yaml_message(&error)
            )
        })?;
    let mut seen = Vec::new();
    for document in &documents {
        let Some(pod) = pod_spec_of(document) else {
            continue;
        };
        let workload = format!(
            "{}/{}",
            document.get("kind").and_then(|k| k.as_str()).unwrap_or("?"),
            document
                .pointer("/metadata/name")
                .and_then(|n| n.as_str())
                .unwrap_or("?")
        );
        let containers = pod
            .get("containers")
            .and_then(|c| c.as_array())
            .map(Vec::as_slice)
            .unwrap_or_default();
        for found in containers {
            let name = found
                .get("name")
                .and_then(|n| n.as_str())
                .unwrap_or_default();
            if name != container {
                seen.push(name.to_owned());
                continue;
            }
            let spec: ContainerSpec = serde_json::from_value(found.clone()).map_err(|error| {
                format!(
                    "{} ({workload}), container `{container}`: {error}",
                    path.display()
                )
            })?;
            let grace_seconds = match pod.get("terminationGracePeriodSeconds") {
                None | Some(serde_json::Value::Null) => None,
                Some(value) => Some(value.as_i64().ok_or_else(|| {
                    format!(
                        "{} ({workload}): terminationGracePeriodSeconds is not a whole number",
                        path.display()
                    )
                })?),
            };
            return Ok(FromManifest {
                container: spec,
                grace_seconds,
                workload,
                raw: found.clone(),
            });
        }
    }
    Err(if seen.is_empty() {
        format!(
            "{}: no workload with a pod template (Deployment, StatefulSet, DaemonSet, Pod, …)",
            path.display()
        )
    } else {
        format!(
            "{}: no container named `{container}` (there are: {})",
            path.display(),
            seen.join(", ")
        )
    })
}

impl super::Loaded {
    /// The pod the drill runs: from `--manifest FILE --container NAME` when given, else the
    /// file's `manifest` or `pod`; with the agent's probes when `with_agent`.
    pub fn pod(
        &self,
        manifest: Option<(&Path, &str)>,
        with_agent: bool,
    ) -> Result<ResolvedPod, String> {
        let file = &self.file;
        let agent = match (with_agent, &file.agent) {
            (false, _) => None,
            (true, Some(agent)) => Some((&agent.container, agent.port)),
            (true, None) => {
                return Err(format!(
                    "{}: --with-agent needs an agent section",
                    self.path.display()
                ));
            }
        };
        let from_manifest = |path: &Path, container: &str| -> Result<ResolvedPod, String> {
            let read = read_manifest(path, container)?;
            resolve(
                &read.container,
                read.grace_seconds,
                &file.app,
                agent,
                format!(
                    "{} ({}, container {container})",
                    path.display(),
                    read.workload
                ),
            )
            .map_err(|message| format!("{} ({}): {message}", path.display(), read.workload))
        };
        if let Some((path, container)) = manifest {
            return from_manifest(path, container);
        }
        if let Some(reference) = &file.manifest {
            return from_manifest(&self.dir.join(&reference.file), &reference.container);
        }
        let Some(pod) = &file.pod else {
            return Err(format!(
                "{}: no probes: paste the pod under `pod:`, point `manifest:` at one, or pass \
                 --manifest FILE --container NAME",
                self.path.display()
            ));
        };
        let container = pod
            .app_container(&file.service)
            .map_err(|message| format!("{}: {message}", self.path.display()))?;
        resolve(
            container,
            pod.termination_grace_period_seconds,
            &file.app,
            agent,
            format!("pod in {}", self.path.display()),
        )
        .map_err(|message| format!("{}: pod: {message}", self.path.display()))
    }
}
