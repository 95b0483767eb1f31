//! Typed views of the Kubernetes objects the rules judge, read from positioned YAML.
//!
//! Reading never fails on a value of the wrong type: it records a [`Problem`] (reported by the
//! `rejected-by-api-server` rule, since the API server would refuse to decode it) and carries on
//! with Kubernetes' default, so one bad field does not hide every other finding.
//!
//! Kubernetes' own rules are not restated here: a probe is also read into the API's
//! [`ProbeSpec`], whose defaults ([`ProbeTiming`]) give every number the rules use and whose
//! validation the `rejected-by-api-server` rule reports; the pod's grace period is defaulted by
//! [`termination::pod_grace_period`].

use crate::yaml::{Entry, Node, Position, Value};
use probity_contract::duration;
pub(crate) use probity_contract::kube::probe::IntOrString;
use probity_contract::kube::probe::{
    ExecAction, GrpcAction, HttpGetAction, HttpHeader, ProbeSpec, ProbeTiming, TcpSocketAction,
};
use probity_contract::kube::termination::{self, LifecycleHandler, SleepAction};
use probity_contract::probe::ProbeKind;
use std::time::Duration;

/// Whole seconds of a duration the API wrote as seconds, for rules and messages.
pub(crate) fn whole_seconds(duration: Duration) -> i64 {
    i64::try_from(duration.as_secs()).unwrap_or(i64::MAX)
}

/// A value that would not decode, found while reading.
#[derive(Debug, Clone)]
pub(crate) struct Problem {
    pub(crate) position: Position,
    pub(crate) container: Option<String>,
    pub(crate) message: String,
}

/// The kinds the linter reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Pod,
    Deployment,
    StatefulSet,
    DaemonSet,
    ReplicaSet,
    ReplicationController,
    Job,
    CronJob,
    Service,
    PodDisruptionBudget,
    HorizontalPodAutoscaler,
    /// Any other kind whose `spec.template` is a pod template (`spec.template.spec.containers`):
    /// an Argo Rollout, an OpenKruise CloneSet, a Knative Service, a custom resource.
    CustomWorkload,
}

impl Kind {
    /// The built-in kind named `kind`; other kinds are custom workloads when they carry a pod
    /// template, and skipped otherwise.
    /// The built-in kind `kind` of `api_version`, if it is one. A kind name alone is not enough:
    /// Knative's `serving.knative.dev/v1` `Service` is a workload with its own schema, not a core
    /// Service, so a kind counts as built in only in its own API group (`apps/v1`,
    /// `extensions/v1beta1`…; the core group is the bare version `v1`).
    pub(crate) fn parse(api_version: &str, kind: &str) -> Option<Self> {
        // The group is everything before the last `/`; the core group has none.
        let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
        let (parsed, groups): (Kind, &[&str]) = match kind {
            "Pod" => (Kind::Pod, &[""]),
            "ReplicationController" => (Kind::ReplicationController, &[""]),
            "Service" => (Kind::Service, &[""]),
            "Deployment" => (Kind::Deployment, &["apps", "extensions"]),
            "StatefulSet" => (Kind::StatefulSet, &["apps"]),
            "DaemonSet" => (Kind::DaemonSet, &["apps", "extensions"]),
            "ReplicaSet" => (Kind::ReplicaSet, &["apps", "extensions"]),
            "Job" => (Kind::Job, &["batch"]),
            "CronJob" => (Kind::CronJob, &["batch"]),
            "PodDisruptionBudget" => (Kind::PodDisruptionBudget, &["policy"]),
            "HorizontalPodAutoscaler" => (Kind::HorizontalPodAutoscaler, &["autoscaling"]),
            _ => return None,
        };
        groups.contains(&group).then_some(parsed)
    }

    /// Whether the kind keeps a number of long-running replicas (so fleets, budgets and load
    /// apply). A custom workload does when it says how many (`spec.replicas`).
    pub(crate) fn is_replicated(self) -> bool {
        matches!(
            self,
            Kind::Deployment
                | Kind::StatefulSet
                | Kind::ReplicaSet
                | Kind::ReplicationController
                | Kind::Pod
                | Kind::CustomWorkload
        )
    }

    pub(crate) fn is_batch(self) -> bool {
        matches!(self, Kind::Job | Kind::CronJob)
    }
}

/// One `metadata.annotations` entry.
#[derive(Debug, Clone)]
pub(crate) struct Annotation {
    pub(crate) key: String,
    pub(crate) value: String,
    pub(crate) position: Position,
}

/// A Kubernetes object of a kind the linter reads.
#[derive(Debug)]
pub(crate) struct Object<'a> {
    pub(crate) source: usize,
    pub(crate) kind: Kind,
    /// The kind as written: `Deployment`, `Rollout`…
    pub(crate) kind_name: String,
    pub(crate) name: String,
    pub(crate) namespace: Option<String>,
    /// Where the object's `kind:` is written.
    pub(crate) position: Position,
    pub(crate) root: &'a Node,
    pub(crate) annotations: Vec<Annotation>,
    pub(crate) body: Body<'a>,
    pub(crate) problems: Vec<Problem>,
    /// The rules its `probity.dev/ignore-RULE` annotations suppress (set by the engine).
    pub(crate) suppressions: Vec<&'static str>,
}

#[derive(Debug)]
pub(crate) enum Body<'a> {
    Workload(Workload<'a>),
    Service(Service),
    Budget(Budget),
    Autoscaler(Autoscaler),
}

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

/// An integer setting after defaulting, and where it was written (if it was).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Setting {
    pub(crate) value: i64,
    /// The value as written, before defaulting.
    pub(crate) written: Option<i64>,
    pub(crate) position: Option<Position>,
}

impl Setting {
    /// A setting written as `written` (if at all) whose value after defaulting is `value`.
    fn new(written: Option<(i64, Position)>, value: i64) -> Self {
        Setting {
            value,
            written: written.map(|(written, _)| written),
            position: written.map(|(_, position)| position),
        }
    }

    /// Where to point a finding about this setting: where it is written, else `fallback`.
    pub(crate) fn at(&self, fallback: Position) -> Position {
        self.position.unwrap_or(fallback)
    }
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

/// A probe port as written: a number, or (for HTTP and TCP) a port name.
#[derive(Debug, Clone)]
pub(crate) struct Port {
    pub(crate) port: IntOrString,
    pub(crate) position: Position,
}

#[derive(Debug, Clone)]
pub(crate) struct Host {
    pub(crate) name: String,
    pub(crate) position: Position,
}

/// What a probe runs.
#[derive(Debug, Clone)]
pub(crate) enum Handler {
    Http {
        path: String,
        path_position: Option<Position>,
        port: Option<Port>,
        host: Option<Host>,
        scheme: String,
    },
    Tcp {
        port: Option<Port>,
        host: Option<Host>,
    },
    Grpc {
        port: Option<Port>,
        service: String,
    },
    Exec {
        command: Vec<String>,
        /// Where the `command` key is written.
        position: Position,
    },
    Missing,
}

impl Handler {
    pub(crate) fn port(&self) -> Option<&Port> {
        match self {
            Handler::Http { port, .. } | Handler::Tcp { port, .. } | Handler::Grpc { port, .. } => {
                port.as_ref()
            }
            Handler::Exec { .. } | Handler::Missing => None,
        }
    }

    pub(crate) fn host(&self) -> Option<&Host> {
        match self {
            Handler::Http { host, .. } | Handler::Tcp { host, .. } => host.as_ref(),
            _ => None,
        }
    }

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

#[derive(Debug)]
pub(crate) struct Probe<'a> {
    /// The `livenessProbe:` (or other) entry, for fixes.
    pub(crate) entry: &'a Entry,
    pub(crate) kind: ProbeKind,
    /// Where `livenessProbe:` (or the other key) is written.
    pub(crate) position: Position,
    pub(crate) handler: Handler,
    /// The handler keys present, with their positions, in the order the API server checks them
    /// (exactly one is valid; the first is the one judged).
    pub(crate) handler_keys: Vec<(&'static str, Position)>,
    /// The probe as the Kubernetes API decodes it, for its validation.
    pub(crate) spec: ProbeSpec,
    /// Fields of `spec` (paths relative to the probe: `httpGet`, `grpc.port`) written with a
    /// value the API cannot decode: reported as problems, and left out of `spec`, so what
    /// validation says about them is moot.
    pub(crate) undecodable: Vec<&'static str>,
    /// The numbers with the API server's defaults applied.
    pub(crate) timing: ProbeTiming,
    pub(crate) initial_delay: Setting,
    pub(crate) timeout: Setting,
    pub(crate) period: Setting,
    pub(crate) success: Setting,
    pub(crate) failure: Setting,
}

impl Probe<'_> {
    /// `failureThreshold × periodSeconds`, in seconds: how long the probe tolerates failure.
    pub(crate) fn failure_window(&self) -> i64 {
        whole_seconds(self.timing.failure_window())
    }

    /// `initialDelaySeconds + failureThreshold × periodSeconds`, in seconds: the first moment
    /// the probe can have given up on a container that never answers.
    pub(crate) fn budget(&self) -> i64 {
        whole_seconds(self.timing.budget())
    }

    /// `livenessProbe`, `readinessProbe` or `startupProbe`.
    pub(crate) fn key(&self) -> &'static str {
        self.kind.container_field()
    }

    /// Where `field` (a path relative to the probe, as validation names it: `httpGet.port`,
    /// `tcpSocket`, `successThreshold`, or empty for the probe itself) is written: a mapping's
    /// key, a scalar's value; the nearest written field around it when it is not written.
    pub(crate) fn position_of(&self, field: &str) -> Position {
        field_position(self.entry, field)
    }

    /// The scalar written at `field` (a path relative to the probe), if one is.
    pub(crate) fn written_scalar(&self, field: &str) -> Option<&Node> {
        written_scalar(self.entry, field)
    }

    /// Whether validation's word on `field` (relative to the probe) is moot, because the field
    /// or one around it could not be decoded.
    pub(crate) fn is_undecodable(&self, field: &str) -> bool {
        self.undecodable.iter().any(|undecodable| {
            field == *undecodable
                || field
                    .strip_prefix(undecodable)
                    .is_some_and(|rest| rest.starts_with('.'))
        })
    }
}

/// Where `field` (a path relative to `entry`'s value, as the API server's validation names it:
/// `httpGet.port`, `sleep.seconds`, or empty for the value itself) is written: a mapping's key, a
/// scalar's value; the nearest written field around it when it is not written.
pub(crate) fn field_position(entry: &Entry, field: &str) -> Position {
    let mut node = &entry.value;
    let mut position = entry.key_position;
    for segment in field.split('.').filter(|segment| !segment.is_empty()) {
        let Some(inner) = node.entry(segment) else {
            break;
        };
        position = if inner.value.as_map().is_some() {
            inner.key_position
        } else {
            inner.value.position
        };
        node = &inner.value;
    }
    position
}

/// The scalar written at `field` (a path relative to `entry`'s value), if one is.
pub(crate) fn written_scalar<'n>(entry: &'n Entry, field: &str) -> Option<&'n Node> {
    if field.is_empty() {
        return None;
    }
    let node = field
        .split('.')
        .try_fold(&entry.value, |node, segment| node.get(segment))?;
    node.scalar_text().is_some().then_some(node)
}

/// A label selector (`matchLabels` and `matchExpressions`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Selector {
    pub(crate) labels: Vec<(String, String)>,
    pub(crate) expressions: Vec<Expression>,
}

#[derive(Debug, Clone)]
pub(crate) struct Expression {
    pub(crate) key: String,
    pub(crate) operator: String,
    pub(crate) values: Vec<String>,
}

impl Selector {
    pub(crate) fn matches(&self, labels: &[(String, String)]) -> bool {
        let value = |key: &str| {
            labels
                .iter()
                .find(|(label, _)| label == key)
                .map(|(_, value)| value.as_str())
        };
        self.labels
            .iter()
            .all(|(key, expected)| value(key) == Some(expected.as_str()))
            && self.expressions.iter().all(|expression| {
                let actual = value(&expression.key);
                match expression.operator.as_str() {
                    "In" => actual.is_some_and(|v| expression.values.iter().any(|e| e == v)),
                    "NotIn" => !actual.is_some_and(|v| expression.values.iter().any(|e| e == v)),
                    "Exists" => actual.is_some(),
                    "DoesNotExist" => actual.is_none(),
                    _ => false,
                }
            })
    }
}

#[derive(Debug)]
pub(crate) struct Service {
    /// `None` when the Service has no selector (its endpoints are managed by hand).
    pub(crate) selector: Option<Vec<(String, String)>>,
    pub(crate) publish_not_ready: Option<Position>,
    /// Every port the Service exposes serves metrics (see [`is_metrics_port`]).
    pub(crate) metrics_only: bool,
}

/// Whether a Service port, by its name or its target port's name, serves metrics for a scraper:
/// `metrics`, `http-metrics`, `metricshttps`, `prometheus`, `tcp-prometheus-servicemonitor`.
/// Prometheus' Kubernetes discovery scrapes every endpoint, ready or not (its `endpoints` and
/// `endpointslice` roles label each target with `__meta_kubernetes_endpoint_ready`), so a
/// readiness probe changes nothing for such a Service.
fn is_metrics_port(port: &Node) -> bool {
    ["name", "targetPort"].iter().any(|key| {
        port.get(key).and_then(Node::as_str).is_some_and(|name| {
            let name = name.to_ascii_lowercase();
            name.contains("metrics") || name.contains("prometheus")
        })
    })
}

/// `minAvailable` or `maxUnavailable`: a count or a percentage.
#[derive(Debug, Clone)]
pub(crate) struct Amount {
    pub(crate) value: AmountValue,
    pub(crate) position: Position,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum AmountValue {
    Count(i64),
    Percent(i64),
}

impl AmountValue {
    /// Resolves against `replicas`, rounding up as the disruption controller does for
    /// `minAvailable` (`intstr.GetScaledValueFromIntOrPercent(…, true)`), and for
    /// `maxUnavailable` too.
    pub(crate) fn resolve(self, replicas: i64) -> i64 {
        match self {
            AmountValue::Count(count) => count,
            AmountValue::Percent(percent) => (percent * replicas + 99) / 100,
        }
    }
}

impl std::fmt::Display for AmountValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AmountValue::Count(count) => write!(f, "{count}"),
            AmountValue::Percent(percent) => write!(f, "{percent}%"),
        }
    }
}

#[derive(Debug)]
pub(crate) struct Budget {
    /// `None`: a null selector, which selects nothing; an empty selector selects every pod.
    pub(crate) selector: Option<Selector>,
    pub(crate) min_available: Option<Amount>,
    pub(crate) max_unavailable: Option<Amount>,
    /// `spec.unhealthyPodEvictionPolicy` as written, and where.
    pub(crate) unhealthy_pod_eviction_policy: Option<(String, Position)>,
}

#[derive(Debug)]
pub(crate) struct Autoscaler {
    pub(crate) target_kind: String,
    pub(crate) target_name: String,
    pub(crate) min_replicas: Option<i64>,
    pub(crate) max_replicas: Option<(i64, Position)>,
}

/// Why a document is not a Kubernetes object.
pub(crate) struct NotAnObject {
    pub(crate) position: Position,
    pub(crate) message: String,
}

/// What a document holds.
pub(crate) enum Read<'a> {
    /// An object of a kind the linter judges.
    Object(Box<Object<'a>>),
    /// A `List`'s items.
    List(Vec<&'a Node>),
    /// A Kubernetes object of a kind the linter does not judge (ConfigMap, a custom resource
    /// without a pod template…): skipped, and counted.
    Skipped(Skipped),
}

/// A document of a kind the linter does not judge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Skipped {
    pub(crate) kind: String,
    pub(crate) name: String,
    pub(crate) position: Position,
}

/// Reads one document's root (or one `List` item) as an object.
pub(crate) fn read_object(source: usize, root: &Node) -> Result<Read<'_>, NotAnObject> {
    let not_an_object = |position, message: &str| NotAnObject {
        position,
        message: format!("not a Kubernetes object: {message}"),
    };
    if root.as_map().is_none() {
        return Err(not_an_object(
            root.position,
            &format!("the document is {}, not a mapping", root.describe()),
        ));
    }
    let Some(kind_entry) = root.entry("kind") else {
        return Err(not_an_object(root.position, "it has no `kind`"));
    };
    let Some(kind_text) = kind_entry.value.as_str() else {
        return Err(not_an_object(
            kind_entry.value.position,
            &format!("`kind` is {}, not a string", kind_entry.value.describe()),
        ));
    };
    let api_version = match root.entry("apiVersion") {
        Some(entry) if let Some(text) = entry.value.as_str() => text,
        Some(entry) => {
            return Err(not_an_object(
                entry.value.position,
                &format!("`apiVersion` is {}, not a string", entry.value.describe()),
            ));
        }
        None => return Err(not_an_object(root.position, "it has no `apiVersion`")),
    };
    if kind_text == "List" || kind_text.ends_with("List") && root.get("items").is_some() {
        let items = root
            .get("items")
            .and_then(Node::as_seq)
            .map(|items| items.iter().collect())
            .unwrap_or_default();
        return Ok(Read::List(items));
    }
    let metadata = root.get("metadata");
    let name = metadata
        .and_then(|metadata| {
            metadata
                .get("name")
                .or_else(|| metadata.get("generateName"))
        })
        .and_then(Node::scalar_text)
        .unwrap_or_else(|| "<unnamed>".to_owned());
    let kind = match Kind::parse(api_version, kind_text) {
        Some(kind) => kind,
        None if has_pod_template(root) => Kind::CustomWorkload,
        None => {
            return Ok(Read::Skipped(Skipped {
                kind: kind_text.to_owned(),
                name,
                position: kind_entry.value.position,
            }));
        }
    };
    let mut problems = Vec::new();
    let namespace = metadata
        .and_then(|metadata| metadata.get("namespace"))
        .and_then(Node::scalar_text);
    let annotations = read_annotations(metadata, &mut problems);
    let spec = root.get("spec");
    let body = match kind {
        Kind::Service => Body::Service(read_service(spec, &mut problems)),
        Kind::PodDisruptionBudget => Body::Budget(read_budget(spec, &mut problems)),
        Kind::HorizontalPodAutoscaler => Body::Autoscaler(read_autoscaler(spec, &mut problems)),
        _ => Body::Workload(read_workload(kind, root, &mut problems)),
    };
    Ok(Read::Object(Box::new(Object {
        source,
        kind,
        kind_name: kind_text.to_owned(),
        name,
        namespace,
        position: kind_entry.value.position,
        root,
        annotations,
        body,
        problems,
        suppressions: Vec::new(),
    })))
}

/// Whether `spec.template.spec.containers` is a list: the shape of a pod template, whatever the
/// kind around it.
fn has_pod_template(root: &Node) -> bool {
    root.get("spec")
        .and_then(|spec| spec.get("template"))
        .and_then(|template| template.get("spec"))
        .and_then(|spec| spec.get("containers"))
        .is_some_and(|containers| containers.as_seq().is_some())
}

fn read_annotations(metadata: Option<&Node>, problems: &mut Vec<Problem>) -> Vec<Annotation> {
    let Some(entries) = metadata
        .and_then(|metadata| metadata.get("annotations"))
        .and_then(Node::as_map)
    else {
        return Vec::new();
    };
    entries
        .iter()
        .filter_map(|entry| {
            let value = match &entry.value.value {
                Value::String(text) => text.clone(),
                Value::Null => String::new(),
                _ => {
                    problems.push(Problem {
                        position: entry.value.position,
                        container: None,
                        message: format!(
                            "annotation `{}` is {}; annotation values must be strings (quote it)",
                            entry.key,
                            entry.value.describe()
                        ),
                    });
                    entry.value.scalar_text()?
                }
            };
            Some(Annotation {
                key: entry.key.clone(),
                value,
                position: entry.key_position,
            })
        })
        .collect()
}

fn read_labels(node: Option<&Node>) -> Vec<(String, String)> {
    node.and_then(Node::as_map)
        .map(|entries| {
            entries
                .iter()
                .filter_map(|entry| Some((entry.key.clone(), entry.value.scalar_text()?)))
                .collect()
        })
        .unwrap_or_default()
}

fn read_workload<'a>(kind: Kind, root: &'a Node, problems: &mut Vec<Problem>) -> Workload<'a> {
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

fn read_pod_spec<'a>(node: &'a Node, problems: &mut Vec<Problem>) -> PodSpec<'a> {
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

fn read_container<'a>(node: &'a Node, problems: &mut Vec<Problem>) -> Container<'a> {
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
fn read_hooks(container: &Node) -> Vec<Hook<'_>> {
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
fn read_pre_stop_sleep(
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

fn read_probe<'a>(
    kind: ProbeKind,
    entry: &'a Entry,
    problems: &mut Vec<Problem>,
    container: &str,
) -> Probe<'a> {
    let position = entry.key_position;
    let node = &entry.value;
    let mut undecodable = Vec::new();
    let mut reader = Reader {
        problems,
        container,
        undecodable: &mut undecodable,
    };
    let handler_entry = |key: &str| node.entry(key).filter(|entry| !entry.value.is_null());
    let mut number = |key: &str| read_int(node, key, reader.problems, Some(container));
    let initial_delay = number("initialDelaySeconds");
    let timeout = number("timeoutSeconds");
    let period = number("periodSeconds");
    let success = number("successThreshold");
    let failure = number("failureThreshold");
    let termination_grace = number("terminationGracePeriodSeconds");
    let spec = ProbeSpec {
        exec: handler_entry("exec").map(|entry| reader.exec(entry)),
        http_get: handler_entry("httpGet").map(|entry| reader.http_get(entry)),
        tcp_socket: handler_entry("tcpSocket").map(|entry| reader.tcp_socket(entry)),
        grpc: handler_entry("grpc").map(|entry| reader.grpc(entry)),
        initial_delay_seconds: initial_delay.map(|(value, _)| value),
        timeout_seconds: timeout.map(|(value, _)| value),
        period_seconds: period.map(|(value, _)| value),
        success_threshold: success.map(|(value, _)| value),
        failure_threshold: failure.map(|(value, _)| value),
        termination_grace_period_seconds: termination_grace.map(|(value, _)| value),
    };
    let handler_keys: Vec<(&'static str, Position)> = spec
        .handler_keys()
        .into_iter()
        .filter_map(|key| Some((key, handler_entry(key)?.key_position)))
        .collect();
    // The handler judged is the first the API server checks; its text as written gives the
    // positions.
    let first = handler_keys
        .first()
        .and_then(|&(key, key_position)| Some((key, key_position, &handler_entry(key)?.value)));
    let handler = match (first, &spec) {
        (Some(("exec", key_position, value)), _) => Handler::Exec {
            command: spec
                .exec
                .as_ref()
                .and_then(|exec| exec.command.clone())
                .unwrap_or_default(),
            position: value
                .entry("command")
                .map_or(key_position, |command| command.key_position),
        },
        (
            Some(("httpGet", _, value)),
            ProbeSpec {
                http_get: Some(http),
                ..
            },
        ) => Handler::Http {
            path: http.path_or_default().to_owned(),
            path_position: value.get("path").map(|path| path.position),
            port: read_port(value),
            host: read_host(value),
            scheme: http.scheme_or_default().to_owned(),
        },
        (Some(("tcpSocket", _, value)), _) => Handler::Tcp {
            port: read_port(value),
            host: read_host(value),
        },
        (Some(("grpc", _, value)), _) => Handler::Grpc {
            port: read_port(value),
            service: spec
                .grpc
                .as_ref()
                .and_then(|grpc| grpc.service.clone())
                .unwrap_or_default(),
        },
        _ => Handler::Missing,
    };
    let timing = ProbeTiming::from_spec(&spec);
    let count = |count: u32| i64::from(count);
    Probe {
        entry,
        kind,
        position,
        handler,
        handler_keys,
        initial_delay: Setting::new(initial_delay, whole_seconds(timing.initial_delay)),
        timeout: Setting::new(timeout, whole_seconds(timing.timeout)),
        period: Setting::new(period, whole_seconds(timing.period)),
        success: Setting::new(success, count(timing.success_threshold)),
        failure: Setting::new(failure, count(timing.failure_threshold)),
        spec,
        undecodable,
        timing,
    }
}

/// Reads a probe's handlers into the API's types, recording what would not decode.
struct Reader<'r> {
    problems: &'r mut Vec<Problem>,
    container: &'r str,
    undecodable: &'r mut Vec<&'static str>,
}

impl Reader<'_> {
    fn problem(&mut self, node: &Node, field: &'static str, message: String) {
        self.problems.push(Problem {
            position: node.position,
            container: Some(self.container.to_owned()),
            message,
        });
        self.undecodable.push(field);
    }

    /// The handler's mapping; a handler that is not one is a problem (and reads as empty).
    fn mapping<'n>(&mut self, entry: &'n Entry, field: &'static str) -> Option<&'n Node> {
        if entry.value.as_map().is_some() {
            return Some(&entry.value);
        }
        let message = format!(
            "`{}` is {}, not a mapping",
            entry.key,
            entry.value.describe()
        );
        self.problem(&entry.value, field, message);
        None
    }

    fn text(node: Option<&Node>, key: &str) -> Option<String> {
        node?.get(key)?.scalar_text()
    }

    fn exec(&mut self, entry: &Entry) -> ExecAction {
        let Some(node) = self.mapping(entry, "exec") else {
            return ExecAction::default();
        };
        let command = match node.get("command") {
            None => None,
            Some(command) if command.is_null() => None,
            Some(command) => match command.as_seq() {
                Some(items) => Some(items.iter().filter_map(Node::scalar_text).collect()),
                None => {
                    let message =
                        format!("`command` is {}, not a list of words", command.describe());
                    self.problem(command, "exec.command", message);
                    None
                }
            },
        };
        ExecAction { command }
    }

    fn http_get(&mut self, entry: &Entry) -> HttpGetAction {
        let node = self.mapping(entry, "httpGet");
        HttpGetAction {
            path: Self::text(node, "path"),
            port: self.port(node, "httpGet.port"),
            host: Self::text(node, "host"),
            scheme: Self::text(node, "scheme"),
            http_headers: node
                .and_then(|node| node.get("httpHeaders"))
                .and_then(Node::as_seq)
                .map(|headers| {
                    headers
                        .iter()
                        .map(|header| HttpHeader {
                            name: Self::text(Some(header), "name").unwrap_or_default(),
                            value: Self::text(Some(header), "value").unwrap_or_default(),
                        })
                        .collect()
                }),
        }
    }

    fn tcp_socket(&mut self, entry: &Entry) -> TcpSocketAction {
        let node = self.mapping(entry, "tcpSocket");
        TcpSocketAction {
            port: self.port(node, "tcpSocket.port"),
            host: Self::text(node, "host"),
        }
    }

    fn grpc(&mut self, entry: &Entry) -> GrpcAction {
        let node = self.mapping(entry, "grpc");
        let port = match self.port(node, "grpc.port") {
            Some(IntOrString::Int(number)) => Some(number),
            // A gRPC port is a number; a name is the `grpc-named-port` rule's finding.
            Some(IntOrString::String(_)) => {
                self.undecodable.push("grpc.port");
                None
            }
            None => None,
        };
        GrpcAction {
            port,
            service: Self::text(node, "service"),
        }
    }

    /// A handler's `port`: a number or a name; anything else is a problem.
    fn port(&mut self, handler: Option<&Node>, field: &'static str) -> Option<IntOrString> {
        let node = handler?.get("port")?;
        match &node.value {
            Value::Int(number) => Some(IntOrString::Int(*number)),
            Value::String(name) => Some(IntOrString::String(name.clone())),
            Value::Null => None,
            _ => {
                let message = format!("`port` is {}, not a number or a name", node.describe());
                self.problem(node, field, message);
                None
            }
        }
    }
}

/// A handler's `port` with its position, as [`Reader::port`] decoded it.
fn read_port(handler: &Node) -> Option<Port> {
    let node = handler.get("port")?;
    let port = match &node.value {
        Value::Int(number) => IntOrString::Int(*number),
        Value::String(name) => IntOrString::String(name.clone()),
        _ => return None,
    };
    Some(Port {
        port,
        position: node.position,
    })
}

fn read_host(handler: &Node) -> Option<Host> {
    let node = handler.get("host")?;
    let name = node.scalar_text()?;
    (!name.is_empty()).then_some(Host {
        name,
        position: node.position,
    })
}

fn read_service(spec: Option<&Node>, problems: &mut Vec<Problem>) -> Service {
    let selector = spec
        .and_then(|spec| spec.get("selector"))
        .map(|node| read_labels(Some(node)))
        .filter(|labels| !labels.is_empty());
    let publish_not_ready = spec.and_then(|spec| {
        let entry = spec.entry("publishNotReadyAddresses")?;
        (read_bool(spec, "publishNotReadyAddresses", problems) == Some(true))
            .then_some(entry.key_position)
    });
    let metrics_only = spec
        .and_then(|spec| spec.get("ports"))
        .and_then(Node::as_seq)
        .is_some_and(|ports| !ports.is_empty() && ports.iter().all(is_metrics_port));
    Service {
        selector,
        publish_not_ready,
        metrics_only,
    }
}

fn read_selector(node: Option<&Node>) -> Option<Selector> {
    let node = node?;
    node.as_map()?;
    Some(Selector {
        labels: read_labels(node.get("matchLabels")),
        expressions: node
            .get("matchExpressions")
            .and_then(Node::as_seq)
            .map(|items| {
                items
                    .iter()
                    .map(|item| Expression {
                        key: item
                            .get("key")
                            .and_then(Node::scalar_text)
                            .unwrap_or_default(),
                        operator: item
                            .get("operator")
                            .and_then(Node::scalar_text)
                            .unwrap_or_default(),
                        values: item
                            .get("values")
                            .and_then(Node::as_seq)
                            .map(|values| values.iter().filter_map(Node::scalar_text).collect())
                            .unwrap_or_default(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
    })
}

fn read_amount(spec: &Node, key: &str, problems: &mut Vec<Problem>) -> Option<Amount> {
    let node = spec.get(key)?;
    let value = match &node.value {
        Value::Int(count) => AmountValue::Count(*count),
        Value::String(text) => match text
            .strip_suffix('%')
            .and_then(|number| number.parse().ok())
        {
            Some(percent) => AmountValue::Percent(percent),
            None => {
                problems.push(Problem {
                    position: node.position,
                    container: None,
                    message: format!("`{key}` must be an integer or a percentage such as `50%`"),
                });
                return None;
            }
        },
        _ => {
            problems.push(Problem {
                position: node.position,
                container: None,
                message: format!(
                    "`{key}` is {}, not a count or a percentage",
                    node.describe()
                ),
            });
            return None;
        }
    };
    Some(Amount {
        value,
        position: node.position,
    })
}

fn read_budget(spec: Option<&Node>, problems: &mut Vec<Problem>) -> Budget {
    let Some(spec) = spec else {
        return Budget {
            selector: None,
            min_available: None,
            max_unavailable: None,
            unhealthy_pod_eviction_policy: None,
        };
    };
    let policy = spec.get("unhealthyPodEvictionPolicy").and_then(|node| {
        let text = node.as_str().map(str::to_owned);
        // The API server accepts these two values only (`ValidatePodDisruptionBudgetSpec`).
        match text.as_deref() {
            Some("IfHealthyBudget" | "AlwaysAllow") => {}
            _ => problems.push(Problem {
                position: node.position,
                container: None,
                message: format!(
                    "`unhealthyPodEvictionPolicy` is {}: the API server accepts `IfHealthyBudget` \
                     or `AlwaysAllow`",
                    node.describe()
                ),
            }),
        }
        text.map(|text| (text, node.position))
    });
    Budget {
        selector: read_selector(spec.get("selector")),
        min_available: read_amount(spec, "minAvailable", problems),
        max_unavailable: read_amount(spec, "maxUnavailable", problems),
        unhealthy_pod_eviction_policy: policy,
    }
}

fn read_autoscaler(spec: Option<&Node>, problems: &mut Vec<Problem>) -> Autoscaler {
    let target = spec.and_then(|spec| spec.get("scaleTargetRef"));
    let text = |key: &str| {
        target
            .and_then(|target| target.get(key))
            .and_then(Node::scalar_text)
            .unwrap_or_default()
    };
    Autoscaler {
        target_kind: text("kind"),
        target_name: text("name"),
        min_replicas: spec
            .and_then(|spec| read_int(spec, "minReplicas", problems, None))
            .map(|(count, _)| count),
        max_replicas: spec.and_then(|spec| read_int(spec, "maxReplicas", problems, None)),
    }
}

fn read_bool(node: &Node, key: &str, problems: &mut Vec<Problem>) -> Option<bool> {
    let value = node.get(key)?;
    match value.as_bool() {
        Some(flag) => Some(flag),
        None => {
            problems.push(Problem {
                position: value.position,
                container: None,
                message: format!("`{key}` is {}, not a boolean", value.describe()),
            });
            None
        }
    }
}

/// An integer field: `None` when absent or null; a value of another type is a problem.
fn read_int(
    node: &Node,
    key: &str,
    problems: &mut Vec<Problem>,
    container: Option<&str>,
) -> Option<(i64, Position)> {
    let value = node.get(key)?;
    match value.as_i64() {
        Some(number) => Some((number, value.position)),
        None => {
            problems.push(Problem {
                position: value.position,
                container: container.map(str::to_owned),
                message: format!("`{key}` is {}, not an integer", value.describe()),
            });
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_documents;

    fn object(text: &str, check: impl FnOnce(&Object<'_>)) {
        let mut documents = parse_documents(text);
        let crate::yaml::Parsed::Document(document) = documents.remove(0) else {
            panic!("invalid YAML")
        };
        let root = document.root.as_ref().unwrap();
        match read_object(0, root) {
            Ok(Read::Object(object)) => check(&object),
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn applies_probe_defaults() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: app\n    livenessProbe:\n      httpGet: {path: /livez, port: 8080}\n      periodSeconds: 0\n";
        object(text, |object| {
            let Body::Workload(workload) = &object.body else {
                panic!()
            };
            let pod = workload.pod.as_ref().unwrap();
            let probe = pod.containers[0].probe(ProbeKind::Liveness).unwrap();
            assert_eq!(probe.period.value, 10);
            assert_eq!(probe.period.written, Some(0));
            assert_eq!(probe.timeout.value, 1);
            assert_eq!(probe.success.value, 1);
            assert_eq!(probe.failure.value, 3);
            assert_eq!(probe.initial_delay.value, 0);
            assert_eq!(pod.termination_grace.value, 30);
        });
    }

    #[test]
    fn resolves_named_ports_and_digit_strings() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: app\n    ports: [{name: http, containerPort: 8080}]\n";
        object(text, |object| {
            let Body::Workload(workload) = &object.body else {
                panic!()
            };
            let container = &workload.pod.as_ref().unwrap().containers[0];
            assert_eq!(
                container.resolve_port(&IntOrString::String("http".into())),
                Some(8080)
            );
            assert_eq!(
                container.resolve_port(&IntOrString::String("9090".into())),
                Some(9090)
            );
            assert_eq!(
                container.resolve_port(&IntOrString::String("admin".into())),
                None
            );
        });
    }

    #[test]
    fn finds_sleep_in_exec_pre_stop_hooks() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: app\n    lifecycle:\n      preStop:\n        exec:\n          command: [/bin/sh, -c, \"sleep 12.5 && kill 1\"]\n";
        object(text, |object| {
            let Body::Workload(workload) = &object.body else {
                panic!()
            };
            let container = &workload.pod.as_ref().unwrap().containers[0];
            assert_eq!(container.pre_stop_sleep.map(|(s, _)| s), Some(13));
        });
    }

    #[test]
    fn reads_sleep_durations_as_the_shell_does() {
        for (argument, seconds) in [
            ("5", Some(5)),
            ("5s", Some(5)),
            ("1m", Some(60)),
            ("0.2", Some(1)),
            ("infinity", None),
        ] {
            let text = format!(
                "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  containers:\n  - name: app\n    lifecycle:\n      preStop:\n        exec:\n          command: [sleep, \"{argument}\"]\n"
            );
            object(&text, |object| {
                let Body::Workload(workload) = &object.body else {
                    panic!()
                };
                let container = &workload.pod.as_ref().unwrap().containers[0];
                assert_eq!(
                    container.pre_stop_sleep.map(|(s, _)| s),
                    seconds,
                    "{argument}"
                );
            });
        }
    }

    #[test]
    fn judges_the_handler_the_api_server_validates_first() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: app\n    livenessProbe:\n      httpGet: {path: /livez, port: 8080}\n      exec: {command: [true]}\n";
        object(text, |object| {
            let Body::Workload(workload) = &object.body else {
                panic!()
            };
            let probe = workload.pod.as_ref().unwrap().containers[0]
                .probe(ProbeKind::Liveness)
                .unwrap();
            let keys: Vec<&str> = probe.handler_keys.iter().map(|(key, _)| *key).collect();
            assert_eq!(keys, ["exec", "httpGet"]);
            assert!(matches!(probe.handler, Handler::Exec { .. }));
            assert_eq!(probe.position_of("httpGet").line, 8);
            assert_eq!(probe.position_of("httpGet.port").column, 37);
            assert_eq!(probe.position_of("successThreshold").line, 7);
        });
    }

    #[test]
    fn records_wrong_types_as_problems() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: app\n    readinessProbe:\n      httpGet: {path: /readyz, port: 8080}\n      periodSeconds: \"5\"\n";
        object(text, |object| {
            assert_eq!(object.problems.len(), 1);
            assert!(object.problems[0].message.contains("periodSeconds"));
            assert_eq!(
                (
                    object.problems[0].position.line,
                    object.problems[0].position.column
                ),
                (9, 22)
            );
        });
    }

    #[test]
    fn percentages_round_up() {
        assert_eq!(AmountValue::Percent(50).resolve(3), 2);
        assert_eq!(AmountValue::Percent(50).resolve(12), 6);
        assert_eq!(AmountValue::Count(2).resolve(12), 2);
    }
}
