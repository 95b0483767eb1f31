//! Probes whose `host` sends them somewhere other than the pod: the node, a Service, another
//! name. Judged after every input is read, because a host may name a Service defined anywhere in
//! the run.

use super::catalogue as rule;
use super::commands;
use crate::context::Cx;
use crate::summary::{ServiceSummary, WorkloadSummary};
use probity_contract::probe::ProbeKind;
use std::collections::HashSet;

pub(crate) fn check(cx: &mut Cx<'_>, workloads: &[WorkloadSummary], services: &[ServiceSummary]) {
    if workloads.iter().all(|workload| workload.hosts.is_empty()) {
        return;
    }
    let service_names: HashSet<String> = services
        .iter()
        .map(|service| service.subject.name.to_ascii_lowercase())
        .collect();
    for workload in workloads {
        for host in &workload.hosts {
            let name_lower = host.host.to_ascii_lowercase();
            let loopback = is_loopback(&name_lower);
            let is_ip = name_lower.parse::<std::net::IpAddr>().is_ok();
            let first_label = name_lower.split('.').next().unwrap_or_default();
            let service = service_names.contains(&name_lower)
                || service_names.contains(first_label) && name_lower.contains('.')
                || name_lower.contains(".svc");
            // A Service that selects this very pod is its own (the probe is then only aimed at
            // the wrong pod); any other name is another service.
            let own_service = services.iter().any(|candidate| {
                candidate.subject.name.eq_ignore_ascii_case(first_label)
                    && candidate.selects(workload)
            });
            let elsewhere = !own_service && (service || (!loopback && !is_ip));
            if elsewhere
                && let Some(path) = host
                    .path
                    .as_deref()
                    .filter(|path| commands::is_health_path(path))
            {
                cx.report(
                    &workload.subject,
                    &rule::TRANSITIVE_HEALTH_CHECK,
                    host.position,
                    Some(&host.container),
                    format!(
                        "the {} probe asks `{path}` of `{}`, another service's health endpoint: \
                         when that service is unhealthy, this one {}",
                        host.probe,
                        host.host,
                        match host.probe {
                            ProbeKind::Readiness => "drains itself too",
                            ProbeKind::Liveness | ProbeKind::Startup => "is restarted with it",
                        }
                    ),
                );
                continue;
            }
            let message = if loopback && !host.host_network {
                Some(format!(
                    "the {} probe's host `{}` is the node the kubelet runs on, not this pod",
                    host.probe, host.host
                ))
            } else if service {
                Some(format!(
                    "the {} probe's host `{}` is a Service: the kubelet probes whichever pod the \
                     Service picks, not this one",
                    host.probe, host.host
                ))
            } else if !loopback && !is_ip {
                Some(format!(
                    "the {} probe's host `{}` is resolved from the node and is not this pod",
                    host.probe, host.host
                ))
            } else {
                None
            };
            if let Some(message) = message {
                cx.report(
                    &workload.subject,
                    &rule::PROBE_HOST_NOT_POD,
                    host.position,
                    Some(&host.container),
                    message,
                );
            }
        }
    }
}

/// Whether a (lowercase) host name is the loopback interface.
pub(crate) fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host.ends_with(".localhost")
        || host.starts_with("127.")
        || host == "::1"
        || host == "[::1]"
        || host == "0.0.0.0"
}
