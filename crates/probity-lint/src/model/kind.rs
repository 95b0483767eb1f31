//! The kinds of object the linter reads.

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
