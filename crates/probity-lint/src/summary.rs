//! What the cross-object rules need to know about each object, kept after its YAML is dropped:
//! labels and selectors, replica counts, probe rates, probe hosts.

use crate::facts::Facts;
use crate::model::{Amount, Body, Handler, Kind, Object, Selector, Setting};
use crate::yaml::Position;
use probity_contract::probe::ProbeKind;

/// Who a finding is about, and the rules suppressed on it.
#[derive(Debug, Clone)]
pub(crate) struct Subject {
    pub(crate) source: usize,
    pub(crate) kind: String,
    pub(crate) name: String,
    pub(crate) namespace: Option<String>,
    pub(crate) suppressions: Vec<&'static str>,
}

impl Subject {
    fn of(object: &Object<'_>) -> Self {
        Self {
            source: object.source,
            kind: object.kind_name.clone(),
            name: object.name.clone(),
            namespace: object.namespace.clone(),
            suppressions: object.suppressions.clone(),
        }
    }

    /// Whether two objects may select one another: the same namespace, or one not known.
    pub(crate) fn same_namespace(&self, other: &Subject) -> bool {
        match (&self.namespace, &other.namespace) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        }
    }
}

/// A Pod or a controller with a pod template.
#[derive(Debug)]
pub(crate) struct WorkloadSummary {
    pub(crate) subject: Subject,
    pub(crate) kind: Kind,
    /// Where its `kind` is written.
    pub(crate) position: Position,
    pub(crate) replicas: Option<Setting>,
    pub(crate) pod_labels: Vec<(String, String)>,
    /// Whether an application container (not a sidecar) has a readiness probe.
    pub(crate) has_readiness: bool,
    /// Where the first application container is written, if there is one.
    pub(crate) first_container: Option<Position>,
    pub(crate) load: Option<ProbeLoad>,
    pub(crate) hosts: Vec<ProbeHost>,
}

/// The health-check traffic one pod generates.
#[derive(Debug)]
pub(crate) struct ProbeLoad {
    /// Probe requests per second, liveness and readiness of every probed container.
    pub(crate) per_pod: f64,
    /// Where the most frequent probe's period is written (or the probe, at the default).
    pub(crate) position: Position,
    /// Requests per second per pod reaching each dependency, by a label naming it.
    pub(crate) dependencies: Vec<(String, f64)>,
}

/// A probe whose `host` is set.
#[derive(Debug)]
pub(crate) struct ProbeHost {
    pub(crate) container: String,
    pub(crate) probe: ProbeKind,
    pub(crate) host: String,
    pub(crate) position: Position,
    pub(crate) host_network: bool,
    /// The HTTP path, for an `httpGet` probe.
    pub(crate) path: Option<String>,
}

#[derive(Debug)]
pub(crate) struct ServiceSummary {
    pub(crate) subject: Subject,
    /// `None` when the Service has no selector (its endpoints are managed by hand).
    pub(crate) selector: Option<Vec<(String, String)>>,
    pub(crate) publish_not_ready: Option<Position>,
    /// Every port serves metrics: no traffic that readiness would steer.
    pub(crate) metrics_only: bool,
}

impl ServiceSummary {
    /// Whether this Service's selector selects `workload`'s pods.
    pub(crate) fn selects(&self, workload: &WorkloadSummary) -> bool {
        self.selector.as_ref().is_some_and(|selector| {
            self.subject.same_namespace(&workload.subject)
                && selector.iter().all(|(key, value)| {
                    workload
                        .pod_labels
                        .iter()
                        .any(|(label, actual)| label == key && actual == value)
                })
        })
    }
}

#[derive(Debug)]
pub(crate) struct BudgetSummary {
    pub(crate) subject: Subject,
    pub(crate) selector: Option<Selector>,
    pub(crate) min_available: Option<Amount>,
    pub(crate) max_unavailable: Option<Amount>,
    /// Where its `kind` is written.
    pub(crate) position: Position,
    pub(crate) unhealthy_pod_eviction_policy: Option<(String, Position)>,
}

#[derive(Debug)]
pub(crate) struct AutoscalerSummary {
    pub(crate) namespace: Option<String>,
    pub(crate) target_kind: String,
    pub(crate) target_name: String,
    pub(crate) min_replicas: Option<i64>,
    pub(crate) max_replicas: Option<(i64, Position)>,
}

/// Every summary of a run, in input order.
#[derive(Debug, Default)]
pub(crate) struct Summaries {
    pub(crate) workloads: Vec<WorkloadSummary>,
    pub(crate) services: Vec<ServiceSummary>,
    pub(crate) budgets: Vec<BudgetSummary>,
    pub(crate) autoscalers: Vec<AutoscalerSummary>,
}

impl Summaries {
    pub(crate) fn extend(&mut self, other: Summaries) {
        self.workloads.extend(other.workloads);
        self.services.extend(other.services);
        self.budgets.extend(other.budgets);
        self.autoscalers.extend(other.autoscalers);
    }
}

/// Adds what the cross-object rules need to know about `object`.
pub(crate) fn summarise(summaries: &mut Summaries, object: &Object<'_>, facts: &Facts<'_>) {
    match &object.body {
        Body::Service(service) => summaries.services.push(ServiceSummary {
            subject: Subject::of(object),
            selector: service.selector.clone(),
            publish_not_ready: service.publish_not_ready,
            metrics_only: service.metrics_only,
        }),
        Body::Budget(budget) => summaries.budgets.push(BudgetSummary {
            subject: Subject::of(object),
            selector: budget.selector.clone(),
            min_available: budget.min_available.clone(),
            max_unavailable: budget.max_unavailable.clone(),
            position: object.position,
            unhealthy_pod_eviction_policy: budget.unhealthy_pod_eviction_policy.clone(),
        }),
        Body::Autoscaler(autoscaler) => summaries.autoscalers.push(AutoscalerSummary {
            namespace: object.namespace.clone(),
            target_kind: autoscaler.target_kind.clone(),
            target_name: autoscaler.target_name.clone(),
            min_replicas: autoscaler.min_replicas,
            max_replicas: autoscaler.max_replicas,
        }),
        Body::Workload(workload) => {
            let pod = workload.pod.as_ref();
            let has_readiness = pod.is_some_and(|pod| {
                pod.containers
                    .iter()
                    .any(|container| container.probe(ProbeKind::Readiness).is_some())
            });
            let mut hosts = Vec::new();
            if let Some(pod) = pod {
                for container in pod.probed() {
                    for probe in &container.probes {
                        let Some(host) = probe.handler.host() else {
                            continue;
                        };
                        hosts.push(ProbeHost {
                            container: container.name.clone(),
                            probe: probe.kind,
                            host: host.name.clone(),
                            position: host.position,
                            host_network: pod.host_network,
                            path: match &probe.handler {
                                Handler::Http { path, .. } => Some(path.clone()),
                                _ => None,
                            },
                        });
                    }
                }
            }
            summaries.workloads.push(WorkloadSummary {
                subject: Subject::of(object),
                kind: object.kind,
                position: object.position,
                replicas: workload.replicas,
                pod_labels: workload.pod_labels.clone(),
                has_readiness,
                first_container: pod
                    .and_then(|pod| pod.containers.first())
                    .map(|container| container.position),
                load: probe_load(object, facts),
                hosts,
            });
        }
    }
}

/// The health-check traffic of one pod of `object`: the probes' rates, and what reaches each
/// dependency (an endpoint listed as checking dependencies on each request reaches every one
/// of them on every probe; a contract's poller reaches its dependency once per interval).
fn probe_load(object: &Object<'_>, facts: &Facts<'_>) -> Option<ProbeLoad> {
    let Body::Workload(workload) = &object.body else {
        return None;
    };
    let pod = workload.pod.as_ref()?;
    let mut per_pod = 0.0;
    let mut dependencies: Vec<(String, f64)> = Vec::new();
    let mut add = |label: String, rate: f64| match dependencies
        .iter_mut()
        .find(|(existing, _)| *existing == label)
    {
        Some((_, total)) => *total += rate,
        None => dependencies.push((label, rate)),
    };
    let mut fastest: Option<(i64, Position)> = None;
    for container in pod.probed() {
        for probe in &container.probes {
            if probe.kind == ProbeKind::Startup {
                continue;
            }
            let rate = 1.0 / probe.period.value as f64;
            per_pod += rate;
            if fastest.is_none_or(|(period, _)| probe.period.value < period) {
                fastest = Some((probe.period.value, probe.period.at(probe.position)));
            }
            if facts.listed_as_dependency_endpoint(&probe.handler) {
                add(
                    format!(
                        "every dependency behind container `{}`'s probed endpoints",
                        container.name
                    ),
                    rate,
                );
            }
        }
        if let Some(contract) = facts.contract_for(object, &workload.pod_labels, &container.name) {
            for check in contract.checks.iter().filter(|check| check.interval_ms > 0) {
                if let Some(dependency) = &check.dependency {
                    add(
                        format!("`{dependency}` (polled by check `{}`)", check.name),
                        1000.0 / check.interval_ms as f64,
                    );
                }
            }
        }
    }
    let (_, position) = fastest?;
    Some(ProbeLoad {
        per_pod,
        position,
        dependencies,
    })
}
