//! What happens when a pod stops: the grace period against the preStop hook and the service's
//! drain, and the drain against the readiness window the load balancers react to.

use super::catalogue as rule;
use super::fixes::Edits;
use super::probes::seconds;
use crate::context::Cx;
use crate::facts::{DRAIN_DELAY_ANNOTATION, Drain, Facts};
use crate::finding::Autofix;
use crate::model::{Container, Object, PodSpec, Workload, whole_seconds};
use probity_contract::kube::termination;
use probity_contract::probe::ProbeKind;
use std::time::Duration;

/// Time for a readiness change to reach the load balancers (EndpointSlice update, kube-proxy and
/// ingress resyncs) when nothing states it: the figure the checkout deployment's drain delay is
/// derived with.
pub(crate) const DEFAULT_PROPAGATION_SECONDS: f64 = 2.0;

/// The time the process needs after SIGTERM when a fix must pick a grace period and nothing
/// says: the default grace period's worth of shutdown.
const FIXED_SHUTDOWN_SECONDS: i64 = 10;

pub(crate) fn check(
    cx: &mut Cx<'_>,
    object: &Object<'_>,
    workload: &Workload<'_>,
    pod: &PodSpec<'_>,
    facts: &Facts<'_>,
) {
    let grace = pod.termination_grace.value;
    let grace_written = pod.termination_grace.written;
    for container in &pod.containers {
        let contract = facts.contract_for(object, &workload.pod_labels, &container.name);
        let drain = facts.drain(contract);
        let pre_stop = container.pre_stop_sleep.map_or(0, |(seconds, _)| seconds);

        if let Some(drain) = drain {
            check_readiness_window(cx, object, container, drain, pre_stop);
        }
        if container.pre_stop.is_some() && check_pre_stop(cx, object, pod, container, drain) {
            continue;
        }
        let Some(drain) = drain.filter(|drain| drain.delay + drain.in_flight > 0.0) else {
            continue;
        };
        let origin = origin(&drain);
        let mut parts = Vec::new();
        if pre_stop > 0 {
            parts.push(format!("preStop sleep {pre_stop} s"));
        }
        if drain.delay > 0.0 {
            parts.push(format!("drain delay {} s ({origin})", seconds(drain.delay)));
        }
        if drain.in_flight > 0.0 {
            parts.push(format!(
                "in-flight deadline {} s ({origin})",
                seconds(drain.in_flight)
            ));
        }
        let needed = pre_stop as f64 + drain.delay + drain.in_flight;
        if (grace as f64) < needed {
            let position = pod
                .termination_grace
                .position
                .or(container.pre_stop_sleep.map(|(_, position)| position))
                .unwrap_or(container.position);
            let written = if grace_written.is_some() {
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

fn origin(drain: &Drain) -> &'static str {
    if drain.from_contract {
        "contract"
    } else {
        DRAIN_DELAY_ANNOTATION
    }
}

/// `terminationGracePeriodSeconds: 0` with a preStop hook, or a grace period shorter than the
/// preStop sleep. Returns whether it reported (the drain is then judged by this finding alone).
fn check_pre_stop(
    cx: &mut Cx<'_>,
    object: &Object<'_>,
    pod: &PodSpec<'_>,
    container: &Container<'_>,
    drain: Option<Drain>,
) -> bool {
    let grace = &pod.termination_grace;
    // A hook the API server rejects (a `sleep` action longer than the grace period, two
    // handlers) never runs: `rejected-by-api-server` reports it, and nothing here applies.
    if container
        .pre_stop_hook()
        .is_some_and(|hook| !hook.handler.validate(grace.value).is_empty())
    {
        return true;
    }
    // What the kubelet leaves the process after the stop signal, however short the grace.
    let minimum_after_signal = whole_seconds(termination::MINIMUM_GRACE_PERIOD);
    let after_sigterm = drain.map_or(FIXED_SHUTDOWN_SECONDS, |drain| {
        ((drain.delay + drain.in_flight).ceil() as i64).max(minimum_after_signal)
    });
    let sleep = container.pre_stop_sleep.map(|(seconds, _)| seconds);
    let stop = |grace: Duration| {
        let hook = Duration::from_secs(sleep.unwrap_or_default().max(0).unsigned_abs());
        termination::StopSequence::new(grace, hook)
    };
    let message = if grace.written == Some(0) {
        let stop = stop(termination::MINIMUM_POD_GRACE_PERIOD);
        format!(
            "`terminationGracePeriodSeconds: 0` deletes the pod at once and gives container `{}`'s \
             preStop hook{} at most {} s, then SIGTERM and SIGKILL {} s later: the hook cannot \
             do its job",
            container.name,
            sleep.map_or(String::new(), |sleep| format!(" (a {sleep} s sleep)")),
            whole_seconds(termination::MINIMUM_POD_GRACE_PERIOD),
            whole_seconds(stop.signal_to_kill)
        )
    } else if let Some(sleep) = sleep.filter(|sleep| grace.value < *sleep) {
        let stop = stop(Duration::from_secs(grace.value.max(0).unsigned_abs()));
        format!(
            "container `{}`'s preStop sleep is {sleep} s but `terminationGracePeriodSeconds` is \
             {} s{}: the kubelet cuts the hook at {} s and leaves the process the {} s minimum \
             after SIGTERM",
            container.name,
            grace.value,
            if grace.written.is_some() {
                ""
            } else {
                " (default)"
            },
            whole_seconds(stop.pre_stop),
            whole_seconds(stop.signal_to_kill)
        )
    } else {
        return false;
    };
    let position = grace
        .position
        .or(container.pre_stop)
        .unwrap_or(container.position);
    let needed = sleep.unwrap_or(0) + after_sigterm;
    cx.report_with_fix(
        object,
        &rule::GRACE_PERIOD_LEAVES_NO_TIME_FOR_PRESTOP,
        position,
        Some(&container.name),
        message,
        grace_fix(cx, object, pod, needed),
    );
    true
}

/// A grace period that covers the hook and the shutdown after it. It changes how long deletion
/// takes, so it is shown, not applied.
fn grace_fix(cx: &Cx<'_>, object: &Object<'_>, pod: &PodSpec<'_>, needed: i64) -> Option<Autofix> {
    let entry = pod.node.entry("terminationGracePeriodSeconds")?;
    let mut edits = Edits::new(cx, object.source);
    edits.set_scalar(&entry.value, &needed.to_string())?;
    edits.finish(
        format!(
            "set `terminationGracePeriodSeconds` to {needed} (the preStop sleep plus the time the \
             process needs after SIGTERM)"
        ),
        false,
    )
}

/// The drain (plus the preStop sleep) against readiness `periodSeconds × failureThreshold` and
/// the propagation to the load balancers.
fn check_readiness_window(
    cx: &mut Cx<'_>,
    object: &Object<'_>,
    container: &Container<'_>,
    drain: Drain,
    pre_stop: i64,
) {
    let Some(readiness) = container.probe(ProbeKind::Readiness) else {
        return;
    };
    let window = readiness.failure_window() as f64;
    let propagation = drain.propagation.unwrap_or(DEFAULT_PROPAGATION_SECONDS);
    let needed = window + propagation;
    let served = drain.delay + pre_stop as f64;
    if served >= needed {
        return;
    }
    let propagation_origin = if drain.propagation.is_some() {
        "the contract's load-balancer reaction"
    } else {
        "assumed propagation"
    };
    // A delay derived from another readiness probe than the one the manifest sets.
    let derived = match drain.derived_from {
        Some((period, threshold))
            if period != readiness.period.value as f64
                || threshold != readiness.failure.value as u64 =>
        {
            format!(
                " (the contract derived its delay from readiness {} s × {threshold}, not the \
                 manifest's)",
                seconds(period)
            )
        }
        _ => String::new(),
    };
    let served_text = if pre_stop > 0 {
        format!(
            "the drain delay {} s ({}) plus the preStop sleep {pre_stop} s = {} s",
            seconds(drain.delay),
            origin(&drain),
            seconds(served)
        )
    } else {
        format!(
            "the drain delay is {} s ({})",
            seconds(drain.delay),
            origin(&drain)
        )
    };
    let needed_delay = (needed - pre_stop as f64).max(0.0);
    cx.report(
        object,
        &rule::DRAIN_DELAY_BELOW_READINESS_WINDOW,
        readiness
            .failure
            .position
            .or(readiness.period.position)
            .unwrap_or(readiness.position),
        Some(&container.name),
        format!(
            "{served_text}{derived}, but readiness takes {} s to fail ({} s × {}) and {} s more to \
             reach the load balancers ({propagation_origin}): requests keep arriving after the \
             listener closes. Set the drain delay to at least {} s",
            seconds(window),
            readiness.period.value,
            readiness.failure.value,
            seconds(propagation),
            seconds(needed_delay.ceil())
        ),
    );
}
