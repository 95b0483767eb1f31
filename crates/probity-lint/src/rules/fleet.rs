//! Rules that only show across objects: Services and readiness, disruption budgets, probe load
//! at the replica count (or the autoscaler's maximum), probe hosts that name a Service.

use super::catalogue as rule;
use crate::context::Cx;
use crate::model::Kind;
use crate::summary::{AutoscalerSummary, ServiceSummary, Summaries, WorkloadSummary};
use std::collections::HashMap;

/// Objects without a namespace are deployed wherever the others are: they match any namespace.
/// Positions in a list of selecting objects, indexed by one `key=value` pair each selector
/// requires, so matching a workload only looks at the objects that could select it (inputs of
/// thousands of objects stay linear).
#[derive(Default)]
struct SelectorIndex<'s> {
    by_label: HashMap<(&'s str, &'s str), Vec<usize>>,
    /// Selectors without a required pair (an empty selector, or expressions only).
    always: Vec<usize>,
}

impl<'s> SelectorIndex<'s> {
    fn insert(&mut self, position: usize, required: Option<&'s (String, String)>) {
        match required {
            Some((key, value)) => self
                .by_label
                .entry((key.as_str(), value.as_str()))
                .or_default()
                .push(position),
            None => self.always.push(position),
        }
    }

    /// The positions that may select a pod with `labels`, in order.
    fn candidates(&self, labels: &[(String, String)]) -> Vec<usize> {
        let mut found = self.always.clone();
        for (key, value) in labels {
            if let Some(positions) = self.by_label.get(&(key.as_str(), value.as_str())) {
                found.extend_from_slice(positions);
            }
        }
        found.sort_unstable();
        found.dedup();
        found
    }

    /// The positions that may select a pod with `labels`, in no particular order and possibly
    /// repeated: for a search that stops at the first match.
    fn candidates_unordered<'i>(
        &'i self,
        labels: &'i [(String, String)],
    ) -> impl Iterator<Item = usize> + 'i {
        self.always.iter().copied().chain(
            labels
                .iter()
                .filter_map(|(key, value)| self.by_label.get(&(key.as_str(), value.as_str())))
                .flatten()
                .copied(),
        )
    }
}

pub(crate) fn check(cx: &mut Cx<'_>, summaries: &Summaries) {
    let Summaries {
        workloads,
        services,
        budgets,
        autoscalers,
    } = summaries;

    let mut service_selectors = SelectorIndex::default();
    for (position, service) in services.iter().enumerate() {
        if let Some(selector) = &service.selector {
            service_selectors.insert(position, selector.first());
        }
    }
    let mut budget_selectors = SelectorIndex::default();
    for (position, budget) in budgets.iter().enumerate() {
        if let Some(selector) = &budget.selector {
            budget_selectors.insert(position, selector.labels.first());
        }
    }
    let mut autoscaler_index: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
    for (position, autoscaler) in autoscalers.iter().enumerate() {
        autoscaler_index
            .entry((
                autoscaler.target_kind.as_str(),
                autoscaler.target_name.as_str(),
            ))
            .or_default()
            .push(position);
    }
    let autoscaler_for = |workload: &WorkloadSummary| -> Option<&AutoscalerSummary> {
        autoscaler_index
            .get(&(
                workload.subject.kind.as_str(),
                workload.subject.name.as_str(),
            ))
            .into_iter()
            .flatten()
            .map(|&position| &autoscalers[position])
            .find(
                |autoscaler| match (&autoscaler.namespace, &workload.subject.namespace) {
                    (Some(a), Some(b)) => a == b,
                    _ => true,
                },
            )
    };

    super::hosts::check(cx, workloads, services);

    let long_running = || {
        workloads
            .iter()
            .filter(|workload| !workload.kind.is_batch())
    };

    // Readiness behind a Service.
    for workload in long_running() {
        let Some(first_container) = workload.first_container else {
            continue;
        };
        if workload.has_readiness {
            continue;
        }
        if let Some(service) = service_selectors
            .candidates_unordered(&workload.pod_labels)
            .map(|position| &services[position])
            // A Service that only exposes metrics carries no requests for readiness to steer.
            .find(|service| !service.metrics_only && service.selects(workload))
        {
            cx.report(
                &workload.subject,
                &rule::MISSING_READINESS_PROBE,
                first_container,
                None,
                format!(
                    "Service `{}` sends traffic to these pods, but no container has a readiness \
                     probe: each pod is in rotation from the moment it starts until it dies",
                    service.subject.name
                ),
            );
        }
    }

    // `publishNotReadyAddresses` on a Service whose pods rely on readiness.
    let publishing: Vec<&ServiceSummary> = services
        .iter()
        .filter(|service| service.publish_not_ready.is_some())
        .collect();
    if !publishing.is_empty() {
        let mut relying: Vec<Vec<String>> = vec![Vec::new(); publishing.len()];
        let mut index = SelectorIndex::default();
        for (position, service) in publishing.iter().enumerate() {
            if let Some(selector) = &service.selector {
                index.insert(position, selector.first());
            }
        }
        for workload in long_running().filter(|workload| workload.has_readiness) {
            for position in index.candidates(&workload.pod_labels) {
                if publishing[position].selects(workload) {
                    relying[position].push(format!(
                        "{} `{}`",
                        workload.subject.kind, workload.subject.name
                    ));
                }
            }
        }
        for (service, relying) in publishing.iter().zip(relying) {
            if relying.is_empty() {
                continue;
            }
            let Some(position) = service.publish_not_ready else {
                continue;
            };
            cx.report(
                &service.subject,
                &rule::PUBLISH_NOT_READY_ADDRESSES,
                position,
                None,
                format!(
                    "`publishNotReadyAddresses: true` routes to {} even while their readiness \
                     probes fail",
                    relying.join(", ")
                ),
            );
        }
    }

    // Disruption budgets.
    for workload in long_running() {
        if !workload.kind.is_replicated() {
            continue;
        }
        let Some(replicas) = workload.replicas else {
            continue;
        };
        // An autoscaled workload runs between the autoscaler's bounds: a budget is judged at
        // the minimum, where it bites hardest.
        let count = autoscaler_for(workload).map_or(replicas.value, |autoscaler| {
            autoscaler.min_replicas.unwrap_or(1)
        });
        let mut covered = false;
        for position in budget_selectors.candidates(&workload.pod_labels) {
            let budget = &budgets[position];
            let matches = budget.subject.same_namespace(&workload.subject)
                && budget
                    .selector
                    .as_ref()
                    .is_some_and(|selector| selector.matches(&workload.pod_labels));
            if !matches {
                continue;
            }
            covered = true;
            if workload.has_readiness {
                unready_pods_block_drains(cx, budget, workload);
            }
            let (allowed, setting, amount) = if let Some(min) = &budget.min_available {
                (count - min.value.resolve(count), "minAvailable", min)
            } else if let Some(max) = &budget.max_unavailable {
                (max.value.resolve(count), "maxUnavailable", max)
            } else {
                continue;
            };
            let target = format!("{} `{}`", workload.subject.kind, workload.subject.name);
            if allowed <= 0 {
                cx.report(
                    &budget.subject,
                    &rule::PDB_BLOCKS_EVERY_DRAIN,
                    amount.position,
                    None,
                    format!(
                        "`{setting}: {}` with {count} replica(s) of {target} allows no eviction: \
                         every node drain that touches them hangs",
                        amount.value
                    ),
                );
            } else if count >= 2 && allowed >= count {
                cx.report(
                    &budget.subject,
                    &rule::PDB_PROTECTS_NOTHING,
                    amount.position,
                    None,
                    format!(
                        "`{setting}: {}` with {count} replicas of {target} lets a drain evict \
                         all of them at once",
                        amount.value
                    ),
                );
            }
        }
        if !covered && count >= 2 && workload.kind != Kind::Pod {
            cx.report(
                &workload.subject,
                &rule::PDB_MISSING,
                replicas.position.unwrap_or(workload.position),
                None,
                format!(
                    "{count} replicas and no PodDisruptionBudget selects them: a node drain may \
                     evict them all at once"
                ),
            );
        }
    }

    // Probe load at fleet size.
    for workload in long_running() {
        let Some(load) = &workload.load else { continue };
        let Some(replicas) = workload.replicas else {
            continue;
        };
        let autoscaler = autoscaler_for(workload).and_then(|autoscaler| autoscaler.max_replicas);
        let (fleet, fleet_source) = match autoscaler {
            Some((max, _)) => (max, "the autoscaler's `maxReplicas`"),
            None => (replicas.value, "`replicas`"),
        };
        if fleet <= 0 {
            continue;
        }
        let total = load.per_pod * fleet as f64;
        if total > cx.options.max_probe_rps {
            cx.report(
                &workload.subject,
                &rule::PROBE_LOAD,
                load.position,
                None,
                format!(
                    "at {fleet} replicas ({fleet_source}) the probes send {} requests/s \
                     ({} per pod), above the {} requests/s limit",
                    rate(total),
                    rate(load.per_pod),
                    rate(cx.options.max_probe_rps)
                ),
            );
        }
        let worst = load
            .dependencies
            .iter()
            .max_by(|(_, a), (_, b)| a.total_cmp(b));
        if let Some((label, per_pod_dependency)) = worst {
            let dependency_total = per_pod_dependency * fleet as f64;
            if dependency_total > cx.options.max_dependency_rps {
                cx.report(
                    &workload.subject,
                    &rule::PROBE_LOAD,
                    load.position,
                    None,
                    format!(
                        "at {fleet} replicas ({fleet_source}) health checks reach {label} {} \
                         times/s ({} per pod), above the {}/s limit",
                        rate(dependency_total),
                        rate(*per_pod_dependency),
                        rate(cx.options.max_dependency_rps)
                    ),
                );
            }
        }
    }
}

/// A rate for a message: "25", "0.6", "2000".
fn rate(value: f64) -> String {
    let rounded = (value * 10.0).round() / 10.0;
    if rounded.fract() == 0.0 {
        format!("{rounded:.0}")
    } else {
        format!("{rounded:.1}")
    }
}

/// A budget under `IfHealthyBudget` (the default) over a workload whose readiness can fail.
fn unready_pods_block_drains(
    cx: &mut Cx<'_>,
    budget: &crate::summary::BudgetSummary,
    workload: &WorkloadSummary,
) {
    let (written, position) = match &budget.unhealthy_pod_eviction_policy {
        Some((policy, _)) if policy == "AlwaysAllow" => return,
        // Not a policy the API server accepts: `rejected-by-api-server` says so.
        Some((policy, _)) if policy != "IfHealthyBudget" => return,
        Some((_, position)) => ("is `IfHealthyBudget`", *position),
        None => (
            "is not set (the default is `IfHealthyBudget`)",
            budget
                .min_available
                .as_ref()
                .or(budget.max_unavailable.as_ref())
                .map_or(budget.position, |amount| amount.position),
        ),
    };
    cx.report(
        &budget.subject,
        &rule::PDB_UNREADY_PODS_BLOCK_DRAINS,
        position,
        None,
        format!(
            "`unhealthyPodEvictionPolicy` {written}: when readiness fails on enough pods of {} \
             `{}` to break the budget — a shared dependency down — none of the unready pods can \
             be evicted, and node drains hang on pods that serve nothing",
            workload.subject.kind, workload.subject.name
        ),
    );
}
