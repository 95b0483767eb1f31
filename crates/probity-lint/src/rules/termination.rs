//! The grace period against the preStop sleep and the service's drain.

use super::catalogue as rule;
use super::probes::seconds;
use crate::engine::Cx;
use crate::facts::{DRAIN_DELAY_ANNOTATION, Facts};
use crate::model::{Object, PodSpec, Workload};

pub(crate) fn check(
    cx: &mut Cx<'_>,
    object: &Object<'_>,
    workload: &Workload,
    pod: &PodSpec,
    facts: &Facts<'_>,
) {
    let grace = pod.termination_grace.value;
    for container in &pod.containers {
        let contract = facts.contract_for(object, &workload.pod_labels, &container.name);
        let drain = facts.drain(contract);
        let pre_stop = container.pre_stop_sleep.map_or(0, |(seconds, _)| seconds);
        if pre_stop == 0 && drain.is_none_or(|drain| drain.delay + drain.in_flight == 0.0) {
            continue;
        }
        let mut parts = Vec::new();
        let mut needed = 0.0;
        if pre_stop > 0 {
            parts.push(format!("preStop sleep {pre_stop} s"));
            needed += pre_stop as f64;
        }
        if let Some(drain) = drain {
            let origin = if drain.from_contract {
                "contract"
            } else {
                DRAIN_DELAY_ANNOTATION
            };
            if drain.delay > 0.0 {
                parts.push(format!("drain delay {} s ({origin})", seconds(drain.delay)));
            }
            if drain.in_flight > 0.0 {
                parts.push(format!(
                    "in-flight deadline {} s ({origin})",
                    seconds(drain.in_flight)
                ));
            }
            needed += drain.delay + drain.in_flight;
        }
        if (grace as f64) < needed {
            let position = pod
                .termination_grace
                .position
                .or(container.pre_stop_sleep.map(|(_, position)| position))
                .unwrap_or(container.position);
            let written = if pod.termination_grace.written.is_some() {
                ""
            } else {
                " (default)"
            };
            cx.report(
                object,
                &rule::GRACE_PERIOD_BELOW_DRAIN,
                position,
                Some(&container.name),
                format!(
                    "`terminationGracePeriodSeconds` is {grace} s{written}, but {} = {} s: the \
                     container is killed mid-drain",
                    parts.join(" + "),
                    seconds(needed)
                ),
            );
        }
    }
}
