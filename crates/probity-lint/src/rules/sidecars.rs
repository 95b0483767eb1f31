//! What native sidecars (init containers with `restartPolicy: Always`, GA in Kubernetes 1.33)
//! change: they start before the application and gate its start only through a startup probe,
//! their readiness is part of the pod's, and they are stopped after the application, inside the
//! same grace period.
//!
//! Sources: <https://kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/>; the
//! kubelet's `pkg/kubelet/kuberuntime/kuberuntime_manager.go` (`computeInitContainerActions`:
//! the next container starts once a restartable init container is *started*, which is its
//! startup probe passing, or its process running when it has none),
//! `pkg/kubelet/status/generate.go` (`GeneratePodReadyCondition`: every container's readiness,
//! sidecars' included), `pkg/kubelet/kuberuntime/kuberuntime_termination_order.go` (sidecars
//! wait for the application's containers to exit, then stop in reverse order) and
//! `kuberuntime_container.go` (`killContainer`: a sidecar gets what is left of the grace
//! period, at least `minimumGracePeriodInSeconds`).

use super::catalogue as rule;
use super::probes::seconds;
use crate::context::Cx;
use crate::facts::Facts;
use crate::model::{Container, Handler, Object, PodSpec, Probe, Workload, whole_seconds};
use probity_contract::kube::termination::MINIMUM_GRACE_PERIOD;
use probity_contract::probe::ProbeKind;

/// The containers Istio's and Linkerd's injectors add (as native sidecars in their native-sidecar
/// modes), through which every inbound connection passes.
const MESH_PROXIES: &[&str] = &["istio-proxy", "linkerd-proxy"];

pub(crate) fn check(
    cx: &mut Cx<'_>,
    object: &Object<'_>,
    workload: &Workload<'_>,
    pod: &PodSpec<'_>,
    facts: &Facts<'_>,
) {
    let sidecars: Vec<&Container<'_>> = pod
        .init_containers
        .iter()
        .filter(|container| container.sidecar)
        .collect();
    if sidecars.is_empty() {
        return;
    }
    for sidecar in &sidecars {
        check_startup_gate(cx, object, pod, sidecar);
        if !object.kind.is_batch() {
            check_readiness(cx, object, pod, sidecar);
        }
    }
    check_grace(cx, object, workload, pod, &sidecars, facts);
}

/// The TCP port number a probe of `container` connects to, when it names one.
fn probe_port(container: &Container<'_>, probe: &Probe<'_>) -> Option<i64> {
    if probe.handler.host().is_some() {
        return None;
    }
    let port = probe.handler.port()?;
    container.resolve_port(&port.port)
}

fn declares(container: &Container<'_>, number: i64) -> bool {
    container
        .ports
        .iter()
        .any(|port| port.number == number && port.protocol.eq_ignore_ascii_case("TCP"))
}

/// The application's probes that the sidecar answers: they name a port the sidecar declares
/// and the application container does not.
fn served_probes<'p>(
    pod: &'p PodSpec<'_>,
    sidecar: &Container<'_>,
) -> Vec<(&'p Container<'p>, &'p Probe<'p>, i64)> {
    let mut served = Vec::new();
    for app in &pod.containers {
        for probe in &app.probes {
            if let Some(number) = probe_port(app, probe)
                && declares(sidecar, number)
                && !declares(app, number)
            {
                served.push((app, probe, number));
            }
        }
    }
    served
}

/// A sidecar that answers the application's probes starts them too early without a startup
/// probe of its own.
fn check_startup_gate(
    cx: &mut Cx<'_>,
    object: &Object<'_>,
    pod: &PodSpec<'_>,
    sidecar: &Container<'_>,
) {
    if sidecar.probe(ProbeKind::Startup).is_some() {
        return;
    }
    let served = served_probes(pod, sidecar);
    let Some((app, _, number)) = served.first() else {
        return;
    };
    let probes: Vec<String> = served
        .iter()
        .filter(|(other, _, _)| other.name == app.name)
        .map(|(_, probe, _)| probe.key().to_owned())
        .collect();
    let restart = served
        .iter()
        .any(|(_, probe, _)| probe.kind != ProbeKind::Readiness);
    cx.report(
        object,
        &rule::SIDECAR_WITHOUT_STARTUP_PROBE,
        sidecar.position,
        Some(&sidecar.name),
        format!(
            "container `{}`'s {} call port {number}, which sidecar `{}` serves, and `{}` has no \
             startupProbe: the kubelet starts `{}` as soon as the sidecar's process runs, not \
             once it listens, so those probes can reach a port nobody answers yet{}",
            app.name,
            probes.join(", "),
            sidecar.name,
            sidecar.name,
            app.name,
            if restart {
                " (and a failed liveness or startup probe restarts the application)"
            } else {
                ""
            }
        ),
    );
}

/// What a handler asks, for comparing two probes of different containers: the kind, the path
/// and the port number.
fn asks(container: &Container<'_>, probe: &Probe<'_>) -> (u8, String, Option<i64>) {
    let port = probe_port(container, probe);
    match &probe.handler {
        Handler::Http { path, .. } => (0, path.clone(), port),
        Handler::Tcp { .. } => (1, String::new(), port),
        Handler::Grpc { service, .. } => (2, service.clone(), port),
        Handler::Exec { command, .. } => (3, command.join(" "), None),
        Handler::Missing => (4, String::new(), None),
    }
}

/// A sidecar's readiness probe is a second gate on the pod's readiness.
fn check_readiness(
    cx: &mut Cx<'_>,
    object: &Object<'_>,
    pod: &PodSpec<'_>,
    sidecar: &Container<'_>,
) {
    let Some(readiness) = sidecar.probe(ProbeKind::Readiness) else {
        return;
    };
    // A mesh proxy carries all of the pod's inbound traffic: its readiness is the pod's.
    if MESH_PROXIES.contains(&sidecar.name.as_str()) {
        return;
    }
    let question = asks(sidecar, readiness);
    // The same question as an application container's readiness: one answer, asked twice.
    let same = pod.containers.iter().any(|app| {
        app.probe(ProbeKind::Readiness)
            .is_some_and(|probe| asks(app, probe) == question)
    });
    if same {
        return;
    }
    let served: Vec<String> = served_probes(pod, sidecar)
        .iter()
        .filter(|(_, probe, _)| probe.kind == ProbeKind::Readiness)
        .map(|(app, probe, _)| format!("`{}`'s ({})", app.name, probe.handler.describe(app)))
        .collect();
    let second_gate = if served.is_empty() {
        String::new()
    } else {
        format!(
            "; the application's readiness — {} — is already the sidecar's answer, so this is a \
             second gate that is not the application's",
            served.join(", ")
        )
    };
    cx.report(
        object,
        &rule::SIDECAR_READINESS_GATES_POD,
        readiness.position,
        Some(&sidecar.name),
        format!(
            "sidecar `{}`'s readinessProbe ({}) counts for the pod's readiness: while it fails — \
             the sidecar's own start, its own upstream — every Service drops the pod, whatever \
             the application containers could serve{second_gate}",
            sidecar.name,
            readiness.handler.describe(sidecar)
        ),
    );
}

/// The grace period against the application's drain followed by the sidecars' exits.
fn check_grace(
    cx: &mut Cx<'_>,
    object: &Object<'_>,
    workload: &Workload<'_>,
    pod: &PodSpec<'_>,
    sidecars: &[&Container<'_>],
    facts: &Facts<'_>,
) {
    // What a sidecar is known to need after its turn comes: its preStop sleep.
    let exits: Vec<(&Container<'_>, i64)> = sidecars
        .iter()
        .filter_map(|sidecar| {
            sidecar
                .pre_stop_sleep
                .filter(|(seconds, _)| *seconds > 0)
                .map(|(seconds, _)| (*sidecar, seconds))
        })
        .collect();
    if exits.is_empty() {
        return;
    }
    // The application's containers stop together; the sidecars wait for the last of them.
    let Some((app, app_needs, app_parts)) = pod
        .containers
        .iter()
        .map(|container| {
            let contract = facts.contract_for(object, &workload.pod_labels, &container.name);
            let drain = facts.drain(contract);
            let pre_stop = container.pre_stop_sleep.map_or(0, |(seconds, _)| seconds);
            let mut parts = Vec::new();
            if pre_stop > 0 {
                parts.push(format!("preStop sleep {pre_stop} s"));
            }
            let mut needs = pre_stop as f64;
            if let Some(drain) = drain.filter(|drain| drain.delay + drain.in_flight > 0.0) {
                needs += drain.delay + drain.in_flight;
                parts.push(format!(
                    "drain {} s",
                    seconds(drain.delay + drain.in_flight)
                ));
            }
            (container, needs, parts)
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
    else {
        return;
    };
    let grace = pod.termination_grace.value as f64;
    // A grace period shorter than the application's own drain is `grace-period-below-drain`.
    if grace < app_needs {
        return;
    }
    let sidecars_need: i64 = exits.iter().map(|(_, seconds)| seconds).sum();
    let needed = app_needs + sidecars_need as f64;
    if grace >= needed {
        return;
    }
    let app_text = if app_parts.is_empty() {
        format!("`{}` exits at once", app.name)
    } else {
        format!("`{}` needs {}", app.name, app_parts.join(" + "))
    };
    let exit_text: Vec<String> = exits
        .iter()
        .map(|(sidecar, seconds)| format!("sidecar `{}`'s preStop sleep {seconds} s", sidecar.name))
        .collect();
    let position = pod
        .termination_grace
        .position
        .or(exits[0].0.pre_stop_sleep.map(|(_, position)| position))
        .unwrap_or(exits[0].0.position);
    cx.report(
        object,
        &rule::GRACE_PERIOD_BELOW_SIDECAR_EXIT,
        position,
        Some(&exits[0].0.name),
        format!(
            "`terminationGracePeriodSeconds` is {}{}, but {app_text}, and only then do the \
             sidecars stop ({}): {} s in all; the kubelet leaves the sidecars what remains (at \
             least {} s) and kills them mid-exit",
            pod.termination_grace.value,
            if pod.termination_grace.written.is_some() {
                " s"
            } else {
                " s (default)"
            },
            exit_text.join(" + "),
            seconds(needed),
            whole_seconds(MINIMUM_GRACE_PERIOD)
        ),
    );
}
