//! Rules that only show across objects: Services and readiness, disruption budgets, probe load
//! at the replica count (or the autoscaler's maximum).

use super::catalogue as rule;
use crate::engine::Cx;
use crate::facts::Facts;
use crate::model::{Autoscaler, Body, Budget, Kind, Object, Probe, Service, Workload};
use crate::yaml::Position;
use probity::contract::ProbeKind;
use std::collections::HashMap;

/// Objects without a namespace are deployed wherever the others are: they match any namespace.
fn same_namespace(a: &Object<'_>, b: &Object<'_>) -> bool {
    match (&a.namespace, &b.namespace) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    }
}

fn has_readiness(workload: &Workload) -> bool {
    workload.pod.as_ref().is_some_and(|pod| {
        pod.containers
            .iter()
            .any(|container| container.probe(ProbeKind::Readiness).is_some())
    })
}

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
}

pub(crate) fn check(cx: &mut Cx<'_>, objects: &[Object<'_>], facts: &[Facts<'_>]) {
    let services: Vec<(usize, &Object<'_>, &Service)> = objects
        .iter()
        .enumerate()
        .filter_map(|(index, object)| match &object.body {
            Body::Service(service) => Some((index, object, service)),
            _ => None,
        })
        .collect();
    let budgets: Vec<(usize, &Object<'_>, &Budget)> = objects
        .iter()
        .enumerate()
        .filter_map(|(index, object)| match &object.body {
            Body::Budget(budget) => Some((index, object, budget)),
            _ => None,
        })
        .collect();
    let autoscalers: Vec<(&Object<'_>, &Autoscaler)> = objects
        .iter()
        .filter_map(|object| match &object.body {
            Body::Autoscaler(autoscaler) => Some((object, autoscaler)),
            _ => None,
        })
        .collect();

    let workloads: Vec<(usize, &Object<'_>, &Workload)> = objects
        .iter()
        .enumerate()
        .filter_map(|(index, object)| match &object.body {
            Body::Workload(workload) if !object.kind.is_batch() => Some((index, object, workload)),
            _ => None,
        })
        .collect();

    let mut service_selectors = SelectorIndex::default();
    for (position, (_, _, service)) in services.iter().enumerate() {
        if let Some(selector) = &service.selector {
            service_selectors.insert(position, selector.first());
        }
    }
    let mut budget_selectors = SelectorIndex::default();
    for (position, (_, _, budget)) in budgets.iter().enumerate() {
        if let Some(selector) = &budget.selector {
            budget_selectors.insert(position, selector.labels.first());
        }
    }
    let mut autoscaler_index: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
    for (position, (_, autoscaler)) in autoscalers.iter().enumerate() {
        autoscaler_index
            .entry((
                autoscaler.target_kind.as_str(),
                autoscaler.target_name.as_str(),
            ))
            .or_default()
            .push(position);
    }

    let autoscaler_for = |object: &Object<'_>| {
        autoscaler_index
            .get(&(object.kind.as_str(), object.name.as_str()))
            .into_iter()
            .flatten()
            .map(|&position| autoscalers[position])
            .find(|(autoscaler_object, _)| same_namespace(autoscaler_object, object))
            .map(|(_, autoscaler)| autoscaler)
    };

    let selects = |service_object: &Object<'_>,
                   service: &Service,
                   object: &Object<'_>,
                   workload: &Workload| {
        service.selector.as_ref().is_some_and(|selector| {
            same_namespace(service_object, object)
                && selector.iter().all(|(key, value)| {
                    workload
                        .pod_labels
                        .iter()
                        .any(|(label, actual)| label == key && actual == value)
                })
        })
    };

    // Readiness behind a Service.
    for &(index, object, workload) in &workloads {
        let Some(pod) = &workload.pod else { continue };
        if pod.containers.is_empty() || has_readiness(workload) {
            continue;
        }
        if let Some((_, service_object, _)) = service_selectors
            .candidates(&workload.pod_labels)
            .into_iter()
            .map(|position| services[position])
            .find(|(_, service_object, service)| selects(service_object, service, object, workload))
        {
            cx.report(
                index,
                object,
                &rule::MISSING_READINESS_PROBE,
                pod.containers[0].position,
                None,
                format!(
                    "Service `{}` sends traffic to these pods, but no container has a readiness \
                     probe: each pod is in rotation from the moment it starts until it dies",
                    service_object.name
                ),
            );
        }
    }
    for &(index, service_object, service) in &services {
        let Some(position) = service.publish_not_ready else {
            continue;
        };
        let relying: Vec<String> = workloads
            .iter()
            .filter(|(_, object, workload)| {
                selects(service_object, service, object, workload) && has_readiness(workload)
            })
            .map(|(_, object, _)| format!("{} `{}`", object.kind.as_str(), object.name))
            .collect();
        if !relying.is_empty() {
            cx.report(
                index,
                service_object,
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
    for &(index, object, workload) in &workloads {
        if !object.kind.is_replicated() {
            continue;
        }
        let Some(replicas) = workload.replicas else {
            continue;
        };
        // An autoscaled workload runs between the autoscaler's bounds: a budget is judged at
        // the minimum, where it bites hardest.
        let count = autoscaler_for(object).map_or(replicas.value, |autoscaler| {
            autoscaler.min_replicas.unwrap_or(1)
        });
        let mut covered = false;
        for position in budget_selectors.candidates(&workload.pod_labels) {
            let (budget_index, budget_object, budget) = budgets[position];
            let matches = same_namespace(budget_object, object)
                && budget
                    .selector
                    .as_ref()
                    .is_some_and(|selector| selector.matches(&workload.pod_labels));
            if !matches {
                continue;
            }
            covered = true;
            let (allowed, setting, amount) = if let Some(min) = &budget.min_available {
                (count - min.value.resolve(count), "minAvailable", min)
            } else if let Some(max) = &budget.max_unavailable {
                (max.value.resolve(count), "maxUnavailable", max)
            } else {
                continue;
            };
            let target = format!("{} `{}`", object.kind.as_str(), object.name);
            if allowed <= 0 {
                cx.report(
                    budget_index,
                    budget_object,
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
                    budget_index,
                    budget_object,
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
        if !covered && count >= 2 && object.kind != Kind::Pod {
            cx.report(
                index,
                object,
                &rule::PDB_MISSING,
                replicas.position.unwrap_or(object.position),
                None,
                format!(
                    "{count} replicas and no PodDisruptionBudget selects them: a node drain may \
                     evict them all at once"
                ),
            );
        }
    }

    // Probe load at fleet size.
    for &(index, object, workload) in &workloads {
        let Some(pod) = &workload.pod else { continue };
        let Some(replicas) = workload.replicas else {
            continue;
        };
        let autoscaler = autoscaler_for(object).and_then(|autoscaler| autoscaler.max_replicas);
        let (fleet, fleet_source) = match autoscaler {
            Some((max, _)) => (max, "the autoscaler's `maxReplicas`"),
            None => (replicas.value, "`replicas`"),
        };
        if fleet <= 0 {
            continue;
        }
        let facts = &facts[index];
        let mut per_pod = 0.0;
        // Requests per second per pod reaching each dependency, by a label naming it.
        let mut dependencies: Vec<(String, f64)> = Vec::new();
        let mut add = |label: String, rate: f64| match dependencies
            .iter_mut()
            .find(|(existing, _)| *existing == label)
        {
            Some((_, total)) => *total += rate,
            None => dependencies.push((label, rate)),
        };
        let mut fastest: Option<&Probe> = None;
        for container in pod.probed() {
            for probe in &container.probes {
                if probe.kind == ProbeKind::Startup {
                    continue;
                }
                let rate = 1.0 / probe.period.value as f64;
                per_pod += rate;
                if fastest.is_none_or(|fastest| probe.period.value < fastest.period.value) {
                    fastest = Some(probe);
                }
                // An endpoint that checks dependencies on each request reaches every one of
                // them on every probe.
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
            if let Some(contract) =
                facts.contract_for(object, &workload.pod_labels, &container.name)
            {
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
        let Some(fastest) = fastest else { continue };
        let position: Position = fastest.period.at(fastest.position);
        let total = per_pod * fleet as f64;
        if total > cx.options.max_probe_rps {
            cx.report(
                index,
                object,
                &rule::PROBE_LOAD,
                position,
                None,
                format!(
                    "at {fleet} replicas ({fleet_source}) the probes send {} requests/s \
                     ({} per pod), above the {} requests/s limit",
                    rate(total),
                    rate(per_pod),
                    rate(cx.options.max_probe_rps)
                ),
            );
        }
        let worst = dependencies.iter().max_by(|(_, a), (_, b)| a.total_cmp(b));
        if let Some((label, per_pod_dependency)) = worst {
            let dependency_total = per_pod_dependency * fleet as f64;
            if dependency_total > cx.options.max_dependency_rps {
                cx.report(
                    index,
                    object,
                    &rule::PROBE_LOAD,
                    position,
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
