//! Pods and pod templates: the pod spec, its containers, their hooks and the grace period.

use super::field::{
    Annotation, Problem, Setting, read_annotations, read_bool, read_int, read_labels, whole_seconds,
};
use super::kind::Kind;
use super::probe::{Handler, Port, Probe, read_probe};
use crate::yaml::{Entry, Node, Position};
use probity_contract::duration;
use probity_contract::kube::probe::{ExecAction, HttpGetAction, IntOrString, TcpSocketAction};
use probity_contract::kube::termination::{self, LifecycleHandler, SleepAction};
use probity_contract::probe::ProbeKind;

/// A Pod, or a controller with a pod template.
#[derive(Debug)]
pub(crate) struct Workload<'a> {
    /// The replica count: `spec.replicas` (default 1) for Deployments, StatefulSets,
    /// ReplicaSets and ReplicationControllers, 1 for a Pod, `spec.replicas` when a custom
    /// workload writes it; `None` when it depends on the cluster (DaemonSet, an autoscaled
    /// custom workload) or is batch.
    pub(crate) replicas: Option<Setting>,
    pub(crate) pod_labels: Vec<(String, String)>,
    pub(crate) pod_annotations: Vec<Annotation>,
    pub(crate) pod: Option<PodSpec<'a>>,
}

#[derive(Debug)]
pub(crate) struct PodSpec<'a> {
    /// The pod spec's mapping, for fixes.
    pub(crate) node: &'a Node,
    pub(crate) termination_grace: Setting,
    pub(crate) host_network: bool,
    /// The application containers (`containers`).
    pub(crate) containers: Vec<Container<'a>>,
    /// `initContainers`: sidecars (`restartPolicy: Always`, probed like the application's
    /// containers) and run-to-completion init containers (which may not have probes).
    pub(crate) init_containers: Vec<Container<'a>>,
}

impl<'a> PodSpec<'a> {
    /// Every container the kubelet probes: the application's, then the sidecars.
    pub(crate) fn probed(&self) -> impl Iterator<Item = &Container<'a>> {
        self.containers.iter().chain(
            self.init_containers
                .iter()
                .filter(|container| container.sidecar),
        )
    }
}

#[derive(Debug)]
pub(crate) struct Container<'a> {
    pub(crate) name: String,
    pub(crate) position: Position,
    pub(crate) ports: Vec<ContainerPort>,
    /// Environment variables with literal values (`valueFrom` ones cannot be known here).
    pub(crate) env: Vec<(String, String)>,
    pub(crate) probes: Vec<Probe<'a>>,
    pub(crate) pre_stop_sleep: Option<(i64, Position)>,
    /// Where `lifecycle.preStop` is written, when the container has one.
    pub(crate) pre_stop: Option<Position>,
    /// `lifecycle.postStart` and `lifecycle.preStop`, as written.
    pub(crate) hooks: Vec<Hook<'a>>,
    /// An init container with `restartPolicy: Always`: a sidecar that runs beside the
    /// application and is probed like it.
    pub(crate) sidecar: bool,
}

impl<'a> Container<'a> {
    pub(crate) fn probe(&self, kind: ProbeKind) -> Option<&Probe<'a>> {
        self.probes.iter().find(|probe| probe.kind == kind)
    }

    /// `lifecycle.preStop`, when the container has one.
    pub(crate) fn pre_stop_hook(&self) -> Option<&Hook<'a>> {
        self.hooks.iter().find(|hook| hook.entry.key == "preStop")
    }

    /// The number a probe port refers to: named ports resolve against `ports`; a string that
    /// names no port but is all digits is that number, as the kubelet's `extractPort` does.
    pub(crate) fn resolve_port(&self, port: &IntOrString) -> Option<i64> {
        match port {
            IntOrString::Int(number) => Some(*number),
            IntOrString::String(name) => self
                .ports
                .iter()
                .find(|declared| declared.name.as_deref() == Some(name.as_str()))
                .map(|declared| declared.number)
                .or_else(|| name.parse().ok()),
        }
    }
}

/// A lifecycle hook (`lifecycle.preStop` or `lifecycle.postStart`), for the API server's
/// validation of it.
#[derive(Debug)]
pub(crate) struct Hook<'a> {
    /// The `preStop:` (or `postStart:`) entry.
    pub(crate) entry: &'a Entry,
    /// Its handlers as the API decodes them. Only what the shared hook validation looks at is
    /// read: which handlers are present, an exec command, a sleep's seconds.
    pub(crate) handler: LifecycleHandler,
}

#[derive(Debug, Clone)]
pub(crate) struct ContainerPort {
    pub(crate) number: i64,
    pub(crate) name: Option<String>,
    pub(crate) protocol: String,
}

pub(super) fn read_workload<'a>(
    kind: Kind,
    root: &'a Node,
    problems: &mut Vec<Problem>,
) -> Workload<'a> {
    let spec = root.get("spec");
    let (template_metadata, pod_spec, replicas) = match kind {
        Kind::Pod => (
            root.get("metadata"),
            spec,
            Some(Setting {
                value: 1,
                written: None,
                position: None,
            }),
        ),
        Kind::CronJob => {
            let template = spec
                .and_then(|spec| spec.get("jobTemplate"))
                .and_then(|job| job.get("spec"))
                .and_then(|job| job.get("template"));
            (
                template.and_then(|t| t.get("metadata")),
                template.and_then(|t| t.get("spec")),
                None,
            )
        }
        _ => {
            let template = spec.and_then(|spec| spec.get("template"));
            let replicas = match (kind, spec) {
                (
                    Kind::Deployment
                    | Kind::StatefulSet
                    | Kind::ReplicaSet
                    | Kind::ReplicationController,
                    Some(spec),
                ) => {
                    // `SetDefaults_Deployment` and its siblings: one replica when unset.
                    // A negative count is the API server's to reject; carry on with one.
                    let written = read_int(spec, "replicas", problems, None);
                    let value = match written {
                        Some((count, _)) if count >= 0 => count,
                        _ => 1,
                    };
                    Some(Setting::new(written, value))
                }
                (
                    Kind::Deployment
                    | Kind::StatefulSet
                    | Kind::ReplicaSet
                    | Kind::ReplicationController,
                    None,
                ) => Some(Setting {
                    value: 1,
                    written: None,
                    position: None,
                }),
                // A custom workload's `replicas` is only known when written; its type is the
                // resource's own business, so a value that is not an integer is not a problem.
                (Kind::CustomWorkload, Some(spec)) => spec.entry("replicas").and_then(|entry| {
                    entry.value.as_i64().map(|count| Setting {
                        value: count,
                        written: Some(count),
                        position: Some(entry.value.position),
                    })
                }),
                _ => None,
            };
            (
                template.and_then(|t| t.get("metadata")),
                template.and_then(|t| t.get("spec")),
                replicas,
            )
        }
    };
    Workload {
        replicas,
        pod_labels: read_labels(template_metadata.and_then(|m| m.get("labels"))),
        pod_annotations: if kind == Kind::Pod {
            Vec::new()
        } else {
            read_annotations(template_metadata, problems)
        },
        pod: pod_spec
            .filter(|node| node.as_map().is_some())
            .map(|node| read_pod_spec(node, problems)),
    }
}

pub(super) fn read_pod_spec<'a>(node: &'a Node, problems: &mut Vec<Problem>) -> PodSpec<'a> {
    let mut read_list = |key: &str| -> Vec<Container<'a>> {
        node.get(key)
            .and_then(Node::as_seq)
            .map(|items| {
                items
                    .iter()
                    .filter(|item| item.as_map().is_some())
                    .map(|item| read_container(item, problems))
                    .collect()
            })
            .unwrap_or_default()
    };
    let containers = read_list("containers");
    let init_containers = read_list("initContainers");
    PodSpec {
        node,
        termination_grace: {
            let written = read_int(node, "terminationGracePeriodSeconds", problems, None);
            // A negative grace period is rejected (the `api` rules); carry on with the default.
            let grace = termination::pod_grace_period(written.map(|(seconds, _)| seconds))
                .or_else(|_| termination::pod_grace_period(None))
                .unwrap_or_default();
            Setting::new(written, whole_seconds(grace))
        },
        host_network: read_bool(node, "hostNetwork", problems).unwrap_or(false),
        containers,
        init_containers,
    }
}

pub(super) fn read_container<'a>(node: &'a Node, problems: &mut Vec<Problem>) -> Container<'a> {
    let name = node
        .get("name")
        .and_then(Node::scalar_text)
        .unwrap_or_else(|| "<unnamed>".to_owned());
    let ports = node
        .get("ports")
        .and_then(Node::as_seq)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| {
                    let (number, _) = read_int(item, "containerPort", problems, Some(&name))?;
                    Some(ContainerPort {
                        number,
                        name: item.get("name").and_then(Node::scalar_text),
                        protocol: item
                            .get("protocol")
                            .and_then(Node::scalar_text)
                            .unwrap_or_else(|| "TCP".to_owned()),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let mut probes = Vec::new();
    for kind in ProbeKind::ALL {
        let Some(entry) = node.entry(kind.container_field()) else {
            continue;
        };
        if entry.value.is_null() {
            continue;
        }
        if entry.value.as_map().is_none() {
            problems.push(Problem {
                position: entry.value.position,
                container: Some(name.clone()),
                message: format!(
                    "`{}` is {}, not a mapping",
                    entry.key,
                    entry.value.describe()
                ),
            });
            continue;
        }
        probes.push(read_probe(kind, entry, problems, &name));
    }
    let pre_stop_entry = node
        .get("lifecycle")
        .and_then(|lifecycle| lifecycle.entry("preStop"))
        .filter(|entry| !entry.value.is_null());
    let pre_stop_sleep =
        pre_stop_entry.and_then(|entry| read_pre_stop_sleep(&entry.value, problems, &name));
    let env = node
        .get("env")
        .and_then(Node::as_seq)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| {
                    let name = item.get("name")?.scalar_text()?;
                    let value = item.get("value")?.scalar_text()?;
                    Some((name, value))
                })
                .collect()
        })
        .unwrap_or_default();
    // Only meaningful on init containers; on others the API server rejects it (`api` rules).
    let sidecar = node
        .get("restartPolicy")
        .and_then(Node::scalar_text)
        .is_some_and(|policy| policy == "Always");
    Container {
        position: node.position,
        name,
        ports,
        env,
        probes,
        pre_stop_sleep,
        pre_stop: pre_stop_entry.map(|entry| entry.key_position),
        hooks: read_hooks(node),
        sidecar,
    }
}

/// `lifecycle.postStart` and `lifecycle.preStop`, where they are mappings.
pub(super) fn read_hooks(container: &Node) -> Vec<Hook<'_>> {
    let Some(lifecycle) = container.get("lifecycle") else {
        return Vec::new();
    };
    ["postStart", "preStop"]
        .into_iter()
        .filter_map(|key| lifecycle.entry(key))
        .filter(|entry| entry.value.as_map().is_some())
        .map(|entry| {
            let node = &entry.value;
            let handler = LifecycleHandler {
                exec: node.get("exec").map(|exec| ExecAction {
                    command: exec
                        .get("command")
                        .and_then(Node::as_seq)
                        .map(|items| items.iter().filter_map(Node::scalar_text).collect()),
                }),
                http_get: node.get("httpGet").map(|_| HttpGetAction::default()),
                tcp_socket: node.get("tcpSocket").map(|_| TcpSocketAction::default()),
                // A `seconds` of the wrong type is already a problem (`read_pre_stop_sleep`).
                sleep: node.get("sleep").map(|sleep| SleepAction {
                    seconds: sleep
                        .get("seconds")
                        .and_then(Node::as_i64)
                        .unwrap_or_default(),
                }),
            };
            Hook { entry, handler }
        })
        .collect()
}

/// The preStop hook's sleep: `sleep.seconds`, or an exec command that runs `sleep N`.
pub(super) fn read_pre_stop_sleep(
    pre_stop: &Node,
    problems: &mut Vec<Problem>,
    container: &str,
) -> Option<(i64, Position)> {
    if let Some(sleep) = pre_stop.get("sleep") {
        return read_int(sleep, "seconds", problems, Some(container));
    }
    let command = pre_stop.get("exec")?.get("command")?;
    let words: Vec<String> = command
        .as_seq()?
        .iter()
        .filter_map(Node::scalar_text)
        .collect();
    let text = words.join(" ");
    let tokens: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || matches!(c, ';' | '&' | '|' | '(' | ')'))
        .filter(|token| !token.is_empty())
        .collect();
    let seconds = tokens.windows(2).find_map(|pair| {
        let program = pair[0].rsplit('/').next().unwrap_or(pair[0]);
        if program != "sleep" {
            return None;
        }
        // `sleep 12.5`, `sleep 5s`, `sleep 1m`: a number of seconds or a number with a unit.
        duration::parse_or_seconds(pair[1])
            .ok()
            .map(|sleep| whole_seconds(sleep) + i64::from(sleep.subsec_nanos() > 0))
    })?;
    Some((seconds, command.position))
}

/// A handler described in its container's terms: a named port is shown with its number.
impl Handler {
    /// A short description: "GET /livez on port 8080".
    pub(crate) fn describe(&self, container: &Container<'_>) -> String {
        let port = |port: &Option<Port>| match port {
            Some(port) => match (&port.port, container.resolve_port(&port.port)) {
                (IntOrString::String(name), Some(number)) => format!("port `{name}` ({number})"),
                (reference, _) => format!("port {reference}"),
            },
            None => "no port".to_owned(),
        };
        match self {
            Handler::Http {
                path,
                port: p,
                scheme,
                ..
            } => format!("{scheme} GET {path} on {}", port(p)),
            Handler::Tcp { port: p, .. } => format!("TCP connect to {}", port(p)),
            Handler::Grpc { port: p, service } => {
                format!("gRPC health check of service \"{service}\" on {}", port(p))
            }
            Handler::Exec { command, .. } => format!("exec `{}`", command.join(" ")),
            Handler::Missing => "no handler".to_owned(),
        }
    }
}
