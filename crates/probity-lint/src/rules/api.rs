//! What the API server would refuse (re-implemented from `pkg/apis/core/validation`), and the
//! unknown-field walk that catches the typos it would drop.

use super::catalogue as rule;
use super::fixes::Edits;
use crate::engine::Cx;
use crate::finding::Autofix;
use crate::model::{Body, Kind, Object, Probe, field_position, written_scalar};
use crate::yaml::{Entry, Node, Value};
use probity_contract::kube::Violation;
use probity_contract::kube::termination;
use probity_contract::probe::ProbeKind;

pub(crate) fn check(cx: &mut Cx<'_>, object: &Object<'_>) {
    for problem in &object.problems {
        cx.report(
            object,
            &rule::REJECTED_BY_API_SERVER,
            problem.position,
            problem.container.as_deref(),
            format!("{}; the API server cannot decode it", problem.message),
        );
    }
    check_probes(cx, object);
    match top_schema(object.kind) {
        Some(top) => walk(cx, object, object.root, top, None),
        // A custom resource's own fields are its schema's business; its pod template's
        // containers are Kubernetes containers.
        None => {
            if let Some(template) = object
                .root
                .get("spec")
                .and_then(|spec| spec.get("template"))
            {
                if let Some(metadata) = template.get("metadata") {
                    walk(cx, object, metadata, &OBJECT_META, None);
                }
                for list in ["containers", "initContainers"] {
                    let containers = template
                        .get("spec")
                        .and_then(|spec| spec.get(list))
                        .and_then(Node::as_seq)
                        .unwrap_or_default();
                    for container in containers {
                        let name = container.get("name").and_then(Node::as_str);
                        walk(cx, object, container, &CONTAINER, name);
                    }
                }
            }
        }
    }
}

fn check_probes(cx: &mut Cx<'_>, object: &Object<'_>) {
    let Body::Workload(workload) = &object.body else {
        return;
    };
    let Some(pod) = &workload.pod else {
        return;
    };
    // Kubernetes' `validateInitContainers`: probes on an init container that runs to
    // completion are forbidden; only a sidecar (`restartPolicy: Always`) may have them.
    for container in pod
        .init_containers
        .iter()
        .filter(|container| !container.sidecar)
    {
        for probe in &container.probes {
            cx.report(
                object,
                &rule::REJECTED_BY_API_SERVER,
                probe.position,
                Some(container.name.as_str()),
                format!(
                    "`{}` on an init container: it \"may not be set for init containers without \
                     restartPolicy=Always\" (a sidecar init container may have probes)",
                    probe.key()
                ),
            );
        }
    }
    if let (Err(violation), Some(position)) = (
        termination::pod_grace_period(pod.termination_grace.written),
        pod.termination_grace.position,
    ) {
        cx.report(
            object,
            &rule::REJECTED_BY_API_SERVER,
            position,
            None,
            format!(
                "`{}` is {}; it \"{}\"",
                violation.field,
                pod.termination_grace.written.unwrap_or_default(),
                violation.message
            ),
        );
    }
    for container in pod.probed() {
        for probe in &container.probes {
            check_probe(cx, object, &container.name, probe);
        }
        // `validateLifecycle`: one handler per hook, a `sleep` within the pod's grace period.
        for hook in &container.hooks {
            let parent = format!("lifecycle.{}", hook.entry.key);
            for violation in hook.handler.validate(pod.termination_grace.value) {
                cx.report(
                    object,
                    &rule::REJECTED_BY_API_SERVER,
                    field_position(hook.entry, &violation.field),
                    Some(&container.name),
                    said(&parent, hook.entry, &violation),
                );
            }
        }
    }
}

/// What the API server's validation of a probe says (`ProbeSpec::validate`), reported where each
/// field is written.
fn check_probe(cx: &mut Cx<'_>, object: &Object<'_>, container: &str, probe: &Probe<'_>) {
    for violation in probe.spec.validate(probe.kind) {
        if probe.is_undecodable(&violation.field) {
            continue;
        }
        // A custom resource's controller builds the pod from its template and may fill in what
        // it leaves out: Knative Serving defaults a probe's port to the container's serving
        // port (knative.dev/docs/serving/services/health-checks: "port is optional"), so a
        // port that is not written is the controller's to choose, not a rejected value.
        if object.kind == Kind::CustomWorkload
            && violation.field.ends_with(".port")
            && probe.written_scalar(&violation.field).is_none()
        {
            continue;
        }
        let fix = fix_for(cx, object, probe, &violation.field);
        cx.report_with_fix(
            object,
            &rule::REJECTED_BY_API_SERVER,
            probe.position_of(&violation.field),
            Some(container),
            describe(probe, &violation),
            fix,
        );
    }
}

/// The finding's message for a probe: the field as written, then the API server's words.
fn describe(probe: &Probe<'_>, violation: &Violation) -> String {
    let key = probe.key();
    let field = violation.field.as_str();
    let extra_handler = probe
        .handler_keys
        .iter()
        .skip(1)
        .any(|(extra, _)| *extra == field);
    if let (true, Some((first, _))) = (extra_handler, probe.handler_keys.first()) {
        return format!(
            "`{key}` has both `{first}` and `{field}`: a probe \"{}\"",
            violation.message
        );
    }
    let advice = probe
        .written_scalar(field)
        .map_or("", |written| advice(probe, field, written));
    format!("{}{advice}", said(key, probe.entry, violation))
}

/// `violation` of a field under `parent` (`livenessProbe`, `lifecycle.preStop`), whose value is
/// `entry`'s: the field, its value as written, and the API server's words.
fn said(parent: &str, entry: &Entry, violation: &Violation) -> String {
    let field = violation.field.as_str();
    let path = if field.is_empty() {
        format!("`{parent}`")
    } else {
        format!("`{parent}.{field}`")
    };
    let message = violation.message.as_str();
    let Some(written) = written_scalar(entry, field) else {
        return format!("{path}: \"{message}\"");
    };
    let plain = written.scalar_text().unwrap_or_default();
    let shown = match written.value {
        Value::String(_) => format!("\"{plain}\""),
        _ => plain.clone(),
    };
    // Some of the API server's messages start with the value; it is shown once.
    let message = [
        format!("`{plain}`: "),
        format!("{plain}: "),
        format!("{plain} "),
    ]
    .iter()
    .find_map(|prefix| message.strip_prefix(prefix.as_str()))
    .unwrap_or(message);
    format!("{path} is {shown}; it \"{message}\"")
}

/// Why, where the API server's words leave it unsaid.
fn advice(probe: &Probe<'_>, field: &str, written: &Node) -> &'static str {
    match (field, &written.value) {
        ("terminationGracePeriodSeconds", _) if probe.kind == ProbeKind::Readiness => {
            " (readiness never kills)"
        }
        ("httpGet.port" | "tcpSocket.port", Value::String(name))
            if name.bytes().all(|byte| byte.is_ascii_digit()) =>
        {
            " (an unquoted number is a port number)"
        }
        _ => "",
    }
}

/// The fixes for what the API server rejects: `successThreshold` on liveness and startup must be
/// 1; a readiness probe may not set `terminationGracePeriodSeconds` (it never kills).
fn fix_for(cx: &Cx<'_>, object: &Object<'_>, probe: &Probe<'_>, field: &str) -> Option<Autofix> {
    let key = probe.key();
    let entry = probe.entry.value.entry(field)?;
    let mut edits = Edits::new(cx, object.source);
    match field {
        "successThreshold" if probe.kind != ProbeKind::Readiness => {
            edits.set_scalar(&entry.value, "1")?;
            edits.finish(format!("set `{key}.successThreshold` to 1"), true)
        }
        "terminationGracePeriodSeconds" if probe.kind == ProbeKind::Readiness => {
            edits.remove_entry(entry.span())?;
            edits.finish(
                format!("remove `{key}.terminationGracePeriodSeconds`"),
                true,
            )
        }
        _ => None,
    }
}

/// The fields of one API type, as the Kubernetes API (v1.33–v1.35) defines them.
pub(crate) struct Schema {
    pub(crate) name: &'static str,
    pub(crate) fields: &'static [(&'static str, Child)],
}

/// What a field holds, for the walk.
#[derive(Clone, Copy)]
pub(crate) enum Child {
    /// A scalar, or a structure the walk does not descend into.
    Leaf,
    /// An object of a known type.
    Object(&'static Schema),
    /// A list of objects of a known type.
    List(&'static Schema),
}

use Child::{Leaf, List, Object as Obj};

const EXEC: Schema = Schema {
    name: "ExecAction",
    fields: &[("command", Leaf)],
};
const HTTP_HEADER: Schema = Schema {
    name: "HTTPHeader",
    fields: &[("name", Leaf), ("value", Leaf)],
};
const HTTP_GET: Schema = Schema {
    name: "HTTPGetAction",
    fields: &[
        ("path", Leaf),
        ("port", Leaf),
        ("host", Leaf),
        ("scheme", Leaf),
        ("httpHeaders", List(&HTTP_HEADER)),
    ],
};
const TCP_SOCKET: Schema = Schema {
    name: "TCPSocketAction",
    fields: &[("port", Leaf), ("host", Leaf)],
};
const GRPC: Schema = Schema {
    name: "GRPCAction",
    fields: &[("port", Leaf), ("service", Leaf)],
};
const PROBE: Schema = Schema {
    name: "Probe",
    fields: &[
        ("exec", Obj(&EXEC)),
        ("httpGet", Obj(&HTTP_GET)),
        ("tcpSocket", Obj(&TCP_SOCKET)),
        ("grpc", Obj(&GRPC)),
        ("initialDelaySeconds", Leaf),
        ("timeoutSeconds", Leaf),
        ("periodSeconds", Leaf),
        ("successThreshold", Leaf),
        ("failureThreshold", Leaf),
        ("terminationGracePeriodSeconds", Leaf),
    ],
};
const SLEEP: Schema = Schema {
    name: "SleepAction",
    fields: &[("seconds", Leaf)],
};
const LIFECYCLE_HANDLER: Schema = Schema {
    name: "LifecycleHandler",
    fields: &[
        ("exec", Obj(&EXEC)),
        ("httpGet", Obj(&HTTP_GET)),
        ("tcpSocket", Obj(&TCP_SOCKET)),
        ("sleep", Obj(&SLEEP)),
    ],
};
const LIFECYCLE: Schema = Schema {
    name: "Lifecycle",
    fields: &[
        ("postStart", Obj(&LIFECYCLE_HANDLER)),
        ("preStop", Obj(&LIFECYCLE_HANDLER)),
        ("stopSignal", Leaf),
    ],
};
const CONTAINER_PORT: Schema = Schema {
    name: "ContainerPort",
    fields: &[
        ("name", Leaf),
        ("hostPort", Leaf),
        ("containerPort", Leaf),
        ("protocol", Leaf),
        ("hostIP", Leaf),
    ],
};
const CONTAINER: Schema = Schema {
    name: "Container",
    fields: &[
        ("name", Leaf),
        ("image", Leaf),
        ("command", Leaf),
        ("args", Leaf),
        ("workingDir", Leaf),
        ("ports", List(&CONTAINER_PORT)),
        ("envFrom", Leaf),
        ("env", Leaf),
        ("resources", Leaf),
        ("resizePolicy", Leaf),
        ("restartPolicy", Leaf),
        ("restartPolicyRules", Leaf),
        ("volumeMounts", Leaf),
        ("volumeDevices", Leaf),
        ("livenessProbe", Obj(&PROBE)),
        ("readinessProbe", Obj(&PROBE)),
        ("startupProbe", Obj(&PROBE)),
        ("lifecycle", Obj(&LIFECYCLE)),
        ("terminationMessagePath", Leaf),
        ("terminationMessagePolicy", Leaf),
        ("imagePullPolicy", Leaf),
        ("securityContext", Leaf),
        ("stdin", Leaf),
        ("stdinOnce", Leaf),
        ("tty", Leaf),
    ],
};
const POD_SPEC: Schema = Schema {
    name: "PodSpec",
    fields: &[
        ("volumes", Leaf),
        ("initContainers", List(&CONTAINER)),
        ("containers", List(&CONTAINER)),
        ("ephemeralContainers", Leaf),
        ("restartPolicy", Leaf),
        ("terminationGracePeriodSeconds", Leaf),
        ("activeDeadlineSeconds", Leaf),
        ("dnsPolicy", Leaf),
        ("nodeSelector", Leaf),
        ("serviceAccountName", Leaf),
        ("serviceAccount", Leaf),
        ("automountServiceAccountToken", Leaf),
        ("nodeName", Leaf),
        ("hostNetwork", Leaf),
        ("hostPID", Leaf),
        ("hostIPC", Leaf),
        ("shareProcessNamespace", Leaf),
        ("securityContext", Leaf),
        ("imagePullSecrets", Leaf),
        ("hostname", Leaf),
        ("hostnameOverride", Leaf),
        ("subdomain", Leaf),
        ("affinity", Leaf),
        ("schedulerName", Leaf),
        ("tolerations", Leaf),
        ("hostAliases", Leaf),
        ("priorityClassName", Leaf),
        ("priority", Leaf),
        ("dnsConfig", Leaf),
        ("readinessGates", Leaf),
        ("runtimeClassName", Leaf),
        ("enableServiceLinks", Leaf),
        ("preemptionPolicy", Leaf),
        ("overhead", Leaf),
        ("topologySpreadConstraints", Leaf),
        ("setHostnameAsFQDN", Leaf),
        ("os", Leaf),
        ("hostUsers", Leaf),
        ("schedulingGates", Leaf),
        ("resourceClaims", Leaf),
        ("resources", Leaf),
    ],
};
const OBJECT_META: Schema = Schema {
    name: "ObjectMeta",
    fields: &[
        ("name", Leaf),
        ("generateName", Leaf),
        ("namespace", Leaf),
        ("selfLink", Leaf),
        ("uid", Leaf),
        ("resourceVersion", Leaf),
        ("generation", Leaf),
        ("creationTimestamp", Leaf),
        ("deletionTimestamp", Leaf),
        ("deletionGracePeriodSeconds", Leaf),
        ("labels", Leaf),
        ("annotations", Leaf),
        ("ownerReferences", Leaf),
        ("finalizers", Leaf),
        ("managedFields", Leaf),
    ],
};
const POD_TEMPLATE: Schema = Schema {
    name: "PodTemplateSpec",
    fields: &[("metadata", Obj(&OBJECT_META)), ("spec", Obj(&POD_SPEC))],
};
const DEPLOYMENT_SPEC: Schema = Schema {
    name: "DeploymentSpec",
    fields: &[
        ("replicas", Leaf),
        ("selector", Leaf),
        ("template", Obj(&POD_TEMPLATE)),
        ("strategy", Leaf),
        ("minReadySeconds", Leaf),
        ("revisionHistoryLimit", Leaf),
        ("paused", Leaf),
        ("progressDeadlineSeconds", Leaf),
    ],
};
const STATEFUL_SET_SPEC: Schema = Schema {
    name: "StatefulSetSpec",
    fields: &[
        ("replicas", Leaf),
        ("selector", Leaf),
        ("template", Obj(&POD_TEMPLATE)),
        ("volumeClaimTemplates", Leaf),
        ("serviceName", Leaf),
        ("podManagementPolicy", Leaf),
        ("updateStrategy", Leaf),
        ("revisionHistoryLimit", Leaf),
        ("minReadySeconds", Leaf),
        ("persistentVolumeClaimRetentionPolicy", Leaf),
        ("ordinals", Leaf),
    ],
};
const DAEMON_SET_SPEC: Schema = Schema {
    name: "DaemonSetSpec",
    fields: &[
        ("selector", Leaf),
        ("template", Obj(&POD_TEMPLATE)),
        ("updateStrategy", Leaf),
        ("minReadySeconds", Leaf),
        ("revisionHistoryLimit", Leaf),
    ],
};
const REPLICATION_CONTROLLER_SPEC: Schema = Schema {
    name: "ReplicationControllerSpec",
    fields: &[
        ("replicas", Leaf),
        ("minReadySeconds", Leaf),
        ("selector", Leaf),
        ("template", Obj(&POD_TEMPLATE)),
    ],
};
const REPLICA_SET_SPEC: Schema = Schema {
    name: "ReplicaSetSpec",
    fields: &[
        ("replicas", Leaf),
        ("minReadySeconds", Leaf),
        ("selector", Leaf),
        ("template", Obj(&POD_TEMPLATE)),
    ],
};
const JOB_SPEC: Schema = Schema {
    name: "JobSpec",
    fields: &[
        ("parallelism", Leaf),
        ("completions", Leaf),
        ("activeDeadlineSeconds", Leaf),
        ("podFailurePolicy", Leaf),
        ("successPolicy", Leaf),
        ("backoffLimit", Leaf),
        ("backoffLimitPerIndex", Leaf),
        ("maxFailedIndexes", Leaf),
        ("selector", Leaf),
        ("manualSelector", Leaf),
        ("template", Obj(&POD_TEMPLATE)),
        ("ttlSecondsAfterFinished", Leaf),
        ("completionMode", Leaf),
        ("suspend", Leaf),
        ("podReplacementPolicy", Leaf),
        ("managedBy", Leaf),
    ],
};
const JOB_TEMPLATE: Schema = Schema {
    name: "JobTemplateSpec",
    fields: &[("metadata", Obj(&OBJECT_META)), ("spec", Obj(&JOB_SPEC))],
};
const CRON_JOB_SPEC: Schema = Schema {
    name: "CronJobSpec",
    fields: &[
        ("schedule", Leaf),
        ("timeZone", Leaf),
        ("startingDeadlineSeconds", Leaf),
        ("concurrencyPolicy", Leaf),
        ("suspend", Leaf),
        ("jobTemplate", Obj(&JOB_TEMPLATE)),
        ("successfulJobsHistoryLimit", Leaf),
        ("failedJobsHistoryLimit", Leaf),
    ],
};
const SERVICE_SPEC: Schema = Schema {
    name: "ServiceSpec",
    fields: &[
        ("ports", Leaf),
        ("selector", Leaf),
        ("clusterIP", Leaf),
        ("clusterIPs", Leaf),
        ("type", Leaf),
        ("externalIPs", Leaf),
        ("sessionAffinity", Leaf),
        ("loadBalancerIP", Leaf),
        ("loadBalancerSourceRanges", Leaf),
        ("externalName", Leaf),
        ("externalTrafficPolicy", Leaf),
        ("healthCheckNodePort", Leaf),
        ("publishNotReadyAddresses", Leaf),
        ("sessionAffinityConfig", Leaf),
        ("ipFamilies", Leaf),
        ("ipFamilyPolicy", Leaf),
        ("allocateLoadBalancerNodePorts", Leaf),
        ("loadBalancerClass", Leaf),
        ("internalTrafficPolicy", Leaf),
        ("trafficDistribution", Leaf),
    ],
};
const PDB_SPEC: Schema = Schema {
    name: "PodDisruptionBudgetSpec",
    fields: &[
        ("minAvailable", Leaf),
        ("selector", Leaf),
        ("maxUnavailable", Leaf),
        ("unhealthyPodEvictionPolicy", Leaf),
    ],
};
const HPA_SPEC: Schema = Schema {
    name: "HorizontalPodAutoscalerSpec",
    fields: &[
        ("scaleTargetRef", Leaf),
        ("minReplicas", Leaf),
        ("maxReplicas", Leaf),
        ("metrics", Leaf),
        ("behavior", Leaf),
        ("targetCPUUtilizationPercentage", Leaf),
    ],
};

macro_rules! top {
    ($name:ident, $type_name:literal, $spec:expr) => {
        const $name: Schema = Schema {
            name: $type_name,
            fields: &[
                ("apiVersion", Leaf),
                ("kind", Leaf),
                ("metadata", Obj(&OBJECT_META)),
                ("spec", $spec),
                ("status", Leaf),
            ],
        };
    };
}
top!(POD, "Pod", Obj(&POD_SPEC));
top!(DEPLOYMENT, "Deployment", Obj(&DEPLOYMENT_SPEC));
top!(STATEFUL_SET, "StatefulSet", Obj(&STATEFUL_SET_SPEC));
top!(DAEMON_SET, "DaemonSet", Obj(&DAEMON_SET_SPEC));
top!(REPLICA_SET, "ReplicaSet", Obj(&REPLICA_SET_SPEC));
top!(
    REPLICATION_CONTROLLER,
    "ReplicationController",
    Obj(&REPLICATION_CONTROLLER_SPEC)
);
top!(JOB, "Job", Obj(&JOB_SPEC));
top!(CRON_JOB, "CronJob", Obj(&CRON_JOB_SPEC));
top!(SERVICE, "Service", Obj(&SERVICE_SPEC));
top!(PDB, "PodDisruptionBudget", Obj(&PDB_SPEC));
top!(HPA, "HorizontalPodAutoscaler", Obj(&HPA_SPEC));

fn top_schema(kind: Kind) -> Option<&'static Schema> {
    Some(match kind {
        Kind::Pod => &POD,
        Kind::Deployment => &DEPLOYMENT,
        Kind::StatefulSet => &STATEFUL_SET,
        Kind::DaemonSet => &DAEMON_SET,
        Kind::ReplicaSet => &REPLICA_SET,
        Kind::ReplicationController => &REPLICATION_CONTROLLER,
        Kind::Job => &JOB,
        Kind::CronJob => &CRON_JOB,
        Kind::Service => &SERVICE,
        Kind::PodDisruptionBudget => &PDB,
        Kind::HorizontalPodAutoscaler => &HPA,
        Kind::CustomWorkload => return None,
    })
}

fn walk(
    cx: &mut Cx<'_>,
    object: &Object<'_>,
    node: &Node,
    schema: &'static Schema,
    container: Option<&str>,
) {
    let Some(entries) = node.as_map() else {
        return;
    };
    for entry in entries {
        // `$patch`, `$retainKeys`, `$setElementOrder/…`: strategic-merge-patch directives of a
        // patch file, not fields.
        if entry.key.starts_with('$') {
            continue;
        }
        match schema.fields.iter().find(|(name, _)| *name == entry.key) {
            Some((_, Leaf)) => {}
            Some((_, Obj(child))) => walk(cx, object, &entry.value, child, container),
            Some((_, List(child))) => {
                for item in entry.value.as_seq().unwrap_or_default() {
                    let name = if std::ptr::eq(*child, &CONTAINER) {
                        item.get("name").and_then(Node::as_str)
                    } else {
                        container
                    };
                    walk(cx, object, item, child, name);
                }
            }
            None => {
                let nearest = nearest(&entry.key, schema);
                let suggestion = nearest
                    .map(|field| format!(" (did you mean `{field}`?)"))
                    .unwrap_or_default();
                // Renaming is safe only when the intended field is not also written: otherwise
                // the rename would create a repeated key.
                let fix = nearest
                    .filter(|field| node.entry(field).is_none())
                    .and_then(|field| {
                        let mut edits = Edits::new(cx, object.source);
                        edits.rename_key(entry, field)?;
                        edits.finish(format!("rename `{}` to `{field}`", entry.key), true)
                    });
                cx.report_with_fix(
                    object,
                    &rule::UNKNOWN_FIELD,
                    entry.key_position,
                    container,
                    format!(
                        "`{}` is not a field of {}{suggestion}: Kubernetes drops it, so the \
                         setting has no effect",
                        entry.key, schema.name
                    ),
                    fix,
                );
            }
        }
    }
}

/// The known field closest to `key`, if one is close enough to be the intended spelling.
fn nearest(key: &str, schema: &Schema) -> Option<&'static str> {
    let key_lower = key.to_ascii_lowercase();
    schema
        .fields
        .iter()
        .map(|(field, _)| {
            let distance = edit_distance(&key_lower, &field.to_ascii_lowercase());
            (distance, *field)
        })
        .filter(|(distance, field)| *distance <= (field.len() / 4).clamp(1, 3))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, field)| field)
}

/// Levenshtein distance with transpositions counted as one edit.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Options, Source, lint};
    use probity_contract::kube::probe::{
        ExecAction, GrpcAction, HttpGetAction, HttpHeader, ProbeSpec, TcpSocketAction,
    };
    use probity_contract::kube::termination::{Lifecycle, LifecycleHandler, SleepAction};
    use serde::Deserialize;
    use serde::de::{self, Visitor};

    /// The `rejected-by-api-server` findings for one container's YAML (indented as a list
    /// item of `containers`): (line, message), in order.
    fn rejected(container: &str) -> Vec<(usize, String)> {
        let text = format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  containers:\n{container}"
        );
        let report = lint(&[Source::new("pod.yaml", text)], &Options::default());
        report
            .findings
            .iter()
            .filter(|finding| finding.rule == rule::REJECTED_BY_API_SERVER.id)
            .map(|finding| (finding.line, finding.message.clone()))
            .collect()
    }

    #[test]
    fn reports_the_api_servers_words_where_the_field_is_written() {
        let found = rejected(
            "  - name: app\n    livenessProbe:\n      httpGet: {path: /livez, port: 70000}\n      \
             successThreshold: 3\n    readinessProbe:\n      tcpSocket: {port: \"8080\"}\n      \
             terminationGracePeriodSeconds: 5\n",
        );
        assert_eq!(
            found,
            [
                (
                    8,
                    "`livenessProbe.httpGet.port` is 70000; it \"must be between 1 and 65535, \
                     inclusive\""
                        .to_owned()
                ),
                (
                    9,
                    "`livenessProbe.successThreshold` is 3; it \"must be 1\"".to_owned()
                ),
                (
                    11,
                    "`readinessProbe.tcpSocket.port` is \"8080\"; it \"must contain at least one \
                     letter (a-z)\" (an unquoted number is a port number)"
                        .to_owned()
                ),
                (
                    12,
                    "`readinessProbe.terminationGracePeriodSeconds` is 5; it \"must not be set for \
                     readinessProbes\" (readiness never kills)"
                        .to_owned()
                ),
            ]
        );
    }

    #[test]
    fn applies_every_rule_of_the_api_servers_probe_validation() {
        let found = rejected(
            "  - name: app\n    livenessProbe:\n      httpGet: {path: /livez}\n      \
             successThreshold: -1\n    readinessProbe:\n      exec: {command: []}\n      \
             httpGet: {port: 8080, scheme: FTP, httpHeaders: [{name: 'X Bad', value: v}]}\n    \
             startupProbe:\n      grpc: {port: 9090}\n      periodSeconds: 3000000000\n",
        );
        let messages: Vec<&str> = found.iter().map(|(_, message)| message.as_str()).collect();
        for expected in [
            "`livenessProbe.httpGet.port`: \"Required value",
            "`livenessProbe.successThreshold` is -1; it \"must be greater than or equal to 0\"",
            "`livenessProbe.successThreshold` is -1; it \"must be 1\"",
            "`readinessProbe.exec.command`: \"Required value",
            "`readinessProbe` has both `exec` and `httpGet`: a probe \"may not specify more than 1 \
             handler type\"",
            "`startupProbe.periodSeconds` is 3000000000; it \"does not fit the API's 32-bit field",
        ] {
            assert!(
                messages.iter().any(|message| message.starts_with(expected)),
                "{expected:?} not in {messages:#?}"
            );
        }
        // The second handler is not validated: the API server stops at the first.
        assert!(!messages.iter().any(|message| message.contains("FTP")));
    }

    #[test]
    fn an_undecodable_value_is_reported_once() {
        // A port of the wrong type cannot be decoded; validation's "Required value" is moot.
        let found = rejected(
            "  - name: app\n    livenessProbe:\n      tcpSocket: {port: [8080]}\n    \
             readinessProbe:\n      httpGet: 8080\n",
        );
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(
            found[0]
                .1
                .contains("`port` is a list, not a number or a name")
        );
        assert!(
            found[1]
                .1
                .contains("`httpGet` is an integer, not a mapping")
        );
        // A named gRPC port is the `grpc-named-port` rule's finding, not this one's.
        let found = rejected("  - name: app\n    livenessProbe:\n      grpc: {port: grpc}\n");
        assert!(found.is_empty(), "{found:#?}");
    }

    #[test]
    fn a_negative_pod_grace_period_is_rejected() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  \
                    terminationGracePeriodSeconds: -5\n  containers: [{name: app}]\n";
        let report = lint(&[Source::new("pod.yaml", text)], &Options::default());
        let finding = report
            .findings
            .iter()
            .find(|finding| finding.rule == rule::REJECTED_BY_API_SERVER.id)
            .expect("a finding");
        assert_eq!(finding.line, 5);
        assert_eq!(
            finding.message,
            "`terminationGracePeriodSeconds` is -5; it \"must be greater than or equal to 0\""
        );
    }

    /// The field names serde decodes for `T`: those of the Kubernetes API types in
    /// probity-contract.
    fn decoded_fields<T: for<'de> Deserialize<'de>>() -> Vec<&'static str> {
        struct Catch(Option<&'static [&'static str]>);
        impl<'de> de::Deserializer<'de> for &mut Catch {
            type Error = de::value::Error;
            fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
                Err(de::Error::custom("not a struct"))
            }
            fn deserialize_struct<V: Visitor<'de>>(
                self,
                _: &'static str,
                fields: &'static [&'static str],
                _: V,
            ) -> Result<V::Value, Self::Error> {
                self.0 = Some(fields);
                Err(de::Error::custom("fields caught"))
            }
            serde::forward_to_deserialize_any! {
                bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
                byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
                identifier ignored_any
            }
        }
        let mut catch = Catch(None);
        let _ = T::deserialize(&mut catch);
        let mut fields = catch.0.expect("a struct").to_vec();
        fields.sort_unstable();
        fields
    }

    #[test]
    fn the_probe_and_lifecycle_schemas_are_the_apis_types() {
        let names = |schema: &Schema| {
            let mut names: Vec<&str> = schema.fields.iter().map(|(name, _)| *name).collect();
            names.sort_unstable();
            names
        };
        assert_eq!(names(&PROBE), decoded_fields::<ProbeSpec>());
        assert_eq!(names(&EXEC), decoded_fields::<ExecAction>());
        assert_eq!(names(&HTTP_GET), decoded_fields::<HttpGetAction>());
        assert_eq!(names(&HTTP_HEADER), decoded_fields::<HttpHeader>());
        assert_eq!(names(&TCP_SOCKET), decoded_fields::<TcpSocketAction>());
        assert_eq!(names(&GRPC), decoded_fields::<GrpcAction>());
        assert_eq!(names(&SLEEP), decoded_fields::<SleepAction>());
        assert_eq!(
            names(&LIFECYCLE_HANDLER),
            decoded_fields::<LifecycleHandler>()
        );
        assert_eq!(names(&LIFECYCLE), decoded_fields::<Lifecycle>());
    }

    #[test]
    fn suggests_the_intended_field() {
        assert_eq!(
            nearest("initialDelaySecond", &PROBE),
            Some("initialDelaySeconds")
        );
        assert_eq!(nearest("failureTreshold", &PROBE), Some("failureThreshold"));
        assert_eq!(nearest("periodseconds", &PROBE), Some("periodSeconds"));
        assert_eq!(nearest("banana", &PROBE), None);
    }

    #[test]
    fn counts_transpositions_as_one_edit() {
        assert_eq!(edit_distance("ab", "ba"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
