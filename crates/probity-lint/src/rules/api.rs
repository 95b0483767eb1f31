//! What the API server would refuse (re-implemented from `pkg/apis/core/validation`), and the
//! unknown-field walk that catches the typos it would drop.

use super::catalogue as rule;
use super::fixes::Edits;
use crate::engine::Cx;
use crate::model::{Body, Handler, Kind, Object, PortRef, Probe};
use crate::yaml::Node;
use probity::contract::ProbeKind;

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
    for container in pod.probed() {
        let name = Some(container.name.as_str());
        for probe in &container.probes {
            let key = probe.key();
            match probe.handler_keys.as_slice() {
                [] => cx.report(
                    object,
                    &rule::REJECTED_BY_API_SERVER,
                    probe.position,
                    name,
                    format!(
                        "`{key}` has no handler: it \"must specify a handler type\" (one of \
                         `httpGet`, `tcpSocket`, `grpc`, `exec`)"
                    ),
                ),
                [_] => {}
                [(first, _), rest @ ..] => {
                    for (extra, position) in rest {
                        cx.report(
                            object,
                            &rule::REJECTED_BY_API_SERVER,
                            *position,
                            name,
                            format!(
                                "`{key}` has both `{first}` and `{extra}`: a probe \"may not \
                                 specify more than 1 handler type\""
                            ),
                        );
                    }
                }
            }
            if probe.kind != ProbeKind::Readiness
                && let (Some(written), Some(position)) =
                    (probe.success.written, probe.success.position)
                && written > 1
            {
                let fix = probe
                    .entry
                    .value
                    .entry("successThreshold")
                    .and_then(|entry| {
                        let mut edits = Edits::new(cx, object.source);
                        edits.set_scalar(&entry.value, "1")?;
                        edits.finish(format!("set `{key}.successThreshold` to 1"), true)
                    });
                cx.report_with_fix(
                    object,
                    &rule::REJECTED_BY_API_SERVER,
                    position,
                    name,
                    format!(
                        "`{key}.successThreshold` is {written}; on {} probes it \"must be 1\"",
                        probe.kind
                    ),
                    fix,
                );
            }
            check_port(cx, object, name, key, probe);
            for (field, setting) in [
                ("initialDelaySeconds", &probe.initial_delay),
                ("timeoutSeconds", &probe.timeout),
                ("periodSeconds", &probe.period),
                ("successThreshold", &probe.success),
                ("failureThreshold", &probe.failure),
            ] {
                if let (Some(written), Some(position)) = (setting.written, setting.position)
                    && written < 0
                {
                    cx.report(
                        object,
                        &rule::REJECTED_BY_API_SERVER,
                        position,
                        name,
                        format!(
                            "`{key}.{field}` is {written}; it \"must be greater than or equal \
                                 to 0\""
                        ),
                    );
                }
            }
            if let Some((grace, position)) = probe.termination_grace {
                if probe.kind == ProbeKind::Readiness {
                    let fix = probe
                        .entry
                        .value
                        .entry("terminationGracePeriodSeconds")
                        .and_then(|entry| {
                            let mut edits = Edits::new(cx, object.source);
                            edits.remove_entry(entry.span())?;
                            edits.finish(
                                "remove `readinessProbe.terminationGracePeriodSeconds`",
                                true,
                            )
                        });
                    cx.report_with_fix(
                        object,
                        &rule::REJECTED_BY_API_SERVER,
                        position,
                        name,
                        "`readinessProbe.terminationGracePeriodSeconds` is set; it \"must not be \
                         set for readinessProbes\" (readiness never kills)",
                        fix,
                    );
                } else if grace <= 0 {
                    cx.report(
                        object,
                        &rule::REJECTED_BY_API_SERVER,
                        position,
                        name,
                        format!(
                            "`{key}.terminationGracePeriodSeconds` is {grace}; it \"must be \
                             greater than 0\""
                        ),
                    );
                }
            }
        }
    }
}

/// `ValidatePortNumOrName` (`pkg/apis/core/validation/validation.go`): a number from 1 to 65535,
/// or a valid port name (`IsValidPortName`); gRPC ports are numbers (their names are the
/// `grpc-named-port` rule).
fn check_port(
    cx: &mut Cx<'_>,
    object: &Object<'_>,
    container: Option<&str>,
    key: &str,
    probe: &Probe<'_>,
) {
    let Some(port) = probe.handler.port() else {
        return;
    };
    let handler = match probe.handler {
        Handler::Http { .. } => "httpGet",
        Handler::Tcp { .. } => "tcpSocket",
        _ => "grpc",
    };
    let problem = match &port.port {
        PortRef::Number(number) if !(1..=65535).contains(number) => Some(format!(
            "{number} \"must be between 1 and 65535, inclusive\""
        )),
        PortRef::Name(name) if handler != "grpc" => port_name_problem(name)
            .map(|problem| format!("\"{name}\" is not a valid port name: it {problem}")),
        _ => None,
    };
    if let Some(problem) = problem {
        cx.report(
            object,
            &rule::REJECTED_BY_API_SERVER,
            port.position,
            container,
            format!("`{key}.{handler}.port` {problem}"),
        );
    }
}

/// Why `name` is not a valid port name (`k8s.io/apimachinery` `IsValidPortName`), if it is not.
fn port_name_problem(name: &str) -> Option<&'static str> {
    if name.len() > 15 {
        Some("\"must be no more than 15 characters\"")
    } else if !name
        .bytes()
        .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
    {
        Some("\"must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)\"")
    } else if !name.bytes().any(|byte| byte.is_ascii_lowercase()) {
        Some("\"must contain at least one letter (a-z)\" (an unquoted number is a port number)")
    } else if name.contains("--") {
        Some("\"must not contain consecutive hyphens\"")
    } else if name.starts_with('-') || name.ends_with('-') {
        Some("\"must not begin or end with a hyphen\"")
    } else {
        None
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
