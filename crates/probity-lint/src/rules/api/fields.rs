//! The unknown-field walk: the fields of each API type the linter reads, as the Kubernetes API
//! defines them, and the nearest known spelling of a field it does not know.

use super::super::catalogue as rule;
use super::super::fixes::Edits;
use crate::context::Cx;
use crate::model::{Kind, Object};
use crate::yaml::Node;

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

pub(super) const EXEC: Schema = Schema {
    name: "ExecAction",
    fields: &[("command", Leaf)],
};
pub(super) const HTTP_HEADER: Schema = Schema {
    name: "HTTPHeader",
    fields: &[("name", Leaf), ("value", Leaf)],
};
pub(super) const HTTP_GET: Schema = Schema {
    name: "HTTPGetAction",
    fields: &[
        ("path", Leaf),
        ("port", Leaf),
        ("host", Leaf),
        ("scheme", Leaf),
        ("httpHeaders", List(&HTTP_HEADER)),
    ],
};
pub(super) const TCP_SOCKET: Schema = Schema {
    name: "TCPSocketAction",
    fields: &[("port", Leaf), ("host", Leaf)],
};
pub(super) const GRPC: Schema = Schema {
    name: "GRPCAction",
    fields: &[("port", Leaf), ("service", Leaf)],
};
pub(super) const PROBE: Schema = Schema {
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
pub(super) const SLEEP: Schema = Schema {
    name: "SleepAction",
    fields: &[("seconds", Leaf)],
};
pub(super) const LIFECYCLE_HANDLER: Schema = Schema {
    name: "LifecycleHandler",
    fields: &[
        ("exec", Obj(&EXEC)),
        ("httpGet", Obj(&HTTP_GET)),
        ("tcpSocket", Obj(&TCP_SOCKET)),
        ("sleep", Obj(&SLEEP)),
    ],
};
pub(super) const LIFECYCLE: Schema = Schema {
    name: "Lifecycle",
    fields: &[
        ("postStart", Obj(&LIFECYCLE_HANDLER)),
        ("preStop", Obj(&LIFECYCLE_HANDLER)),
        ("stopSignal", Leaf),
    ],
};
pub(super) const CONTAINER_PORT: Schema = Schema {
    name: "ContainerPort",
    fields: &[
        ("name", Leaf),
        ("hostPort", Leaf),
        ("containerPort", Leaf),
        ("protocol", Leaf),
        ("hostIP", Leaf),
    ],
};
pub(super) const CONTAINER: Schema = Schema {
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
pub(super) const POD_SPEC: Schema = Schema {
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
pub(super) const OBJECT_META: Schema = Schema {
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
pub(super) const POD_TEMPLATE: Schema = Schema {
    name: "PodTemplateSpec",
    fields: &[("metadata", Obj(&OBJECT_META)), ("spec", Obj(&POD_SPEC))],
};
pub(super) const DEPLOYMENT_SPEC: Schema = Schema {
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
pub(super) const STATEFUL_SET_SPEC: Schema = Schema {
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
pub(super) const DAEMON_SET_SPEC: Schema = Schema {
    name: "DaemonSetSpec",
    fields: &[
        ("selector", Leaf),
        ("template", Obj(&POD_TEMPLATE)),
        ("updateStrategy", Leaf),
        ("minReadySeconds", Leaf),
        ("revisionHistoryLimit", Leaf),
    ],
};
pub(super) const REPLICATION_CONTROLLER_SPEC: Schema = Schema {
    name: "ReplicationControllerSpec",
    fields: &[
        ("replicas", Leaf),
        ("minReadySeconds", Leaf),
        ("selector", Leaf),
        ("template", Obj(&POD_TEMPLATE)),
    ],
};
pub(super) const REPLICA_SET_SPEC: Schema = Schema {
    name: "ReplicaSetSpec",
    fields: &[
        ("replicas", Leaf),
        ("minReadySeconds", Leaf),
        ("selector", Leaf),
        ("template", Obj(&POD_TEMPLATE)),
    ],
};
pub(super) const JOB_SPEC: Schema = Schema {
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
pub(super) const JOB_TEMPLATE: Schema = Schema {
    name: "JobTemplateSpec",
    fields: &[("metadata", Obj(&OBJECT_META)), ("spec", Obj(&JOB_SPEC))],
};
pub(super) const CRON_JOB_SPEC: Schema = Schema {
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
pub(super) const SERVICE_SPEC: Schema = Schema {
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
pub(super) const PDB_SPEC: Schema = Schema {
    name: "PodDisruptionBudgetSpec",
    fields: &[
        ("minAvailable", Leaf),
        ("selector", Leaf),
        ("maxUnavailable", Leaf),
        ("unhealthyPodEvictionPolicy", Leaf),
    ],
};
pub(super) const HPA_SPEC: Schema = Schema {
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

pub(super) fn top_schema(kind: Kind) -> Option<&'static Schema> {
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

pub(super) fn walk(
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
pub(super) fn nearest(key: &str, schema: &Schema) -> Option<&'static str> {
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
pub(super) fn edit_distance(a: &str, b: &str) -> usize {
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
