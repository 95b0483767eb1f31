//! Rules about each probe, and each pair of probes, of a container.

use super::catalogue as rule;
use crate::engine::Cx;
use crate::facts::Facts;
use crate::model::{Container, Handler, Object, PodSpec, PortRef, Probe, Setting, Workload};
use probity::contract::ProbeKind;

/// A liveness `initialDelaySeconds` above this (the default period) is a boot-time guess.
const LARGE_INITIAL_DELAY_SECONDS: i64 = 10;
/// The shortest liveness failure window that rides out a pause.
const MIN_LIVENESS_WINDOW_SECONDS: i64 = 10;
/// A readiness period below this (the default) counts as short for flapping.
const SHORT_READINESS_PERIOD_SECONDS: i64 = 10;

pub(crate) fn check(
    cx: &mut Cx<'_>,
    object: &Object<'_>,
    workload: &Workload,
    pod: &PodSpec,
    facts: &Facts<'_>,
) {
    for container in pod.probed() {
        let name = Some(container.name.as_str());
        let contract = facts.contract_for(object, &workload.pod_labels, &container.name);
        let liveness = container.probe(ProbeKind::Liveness);
        let readiness = container.probe(ProbeKind::Readiness);
        let startup = container.probe(ProbeKind::Startup);

        if let (Some(live), Some(ready)) = (liveness, readiness) {
            if same_handler(container, &live.handler, &ready.handler) {
                cx.report(
                    object,
                    &rule::IDENTICAL_LIVENESS_READINESS,
                    ready.position,
                    name,
                    format!(
                        "liveness and readiness both run {}: one endpoint answers both \"restart \
                         me?\" and \"send me traffic?\"",
                        live.handler.describe(container)
                    ),
                );
            }
            if live.failure_window() <= ready.failure_window() {
                cx.report(
                    object,
                    &rule::LIVENESS_WINDOW_SHORTER_THAN_READINESS,
                    live.failure
                        .position
                        .or(live.period.position)
                        .unwrap_or(live.position),
                    name,
                    format!(
                        "liveness gives up after {} s ({}), readiness after {} s ({}): the pod is \
                         restarted no later than it is taken out of rotation",
                        live.failure_window(),
                        window(live),
                        ready.failure_window(),
                        window(ready)
                    ),
                );
            }
        }

        for probe in [liveness, startup].into_iter().flatten() {
            if let Some(reason) = facts.dependency_reason(&probe.handler, contract) {
                let position = match &probe.handler {
                    Handler::Http {
                        path_position: Some(position),
                        ..
                    } => *position,
                    _ => probe.position,
                };
                cx.report(
                    object,
                    &rule::LIVENESS_CHECKS_DEPENDENCIES,
                    position,
                    name,
                    format!(
                        "the {} probe runs {}, and {reason}: a dependency outage restarts every \
                         replica at once",
                        probe.kind,
                        probe.handler.describe(container)
                    ),
                );
            }
        }

        for probe in &container.probes {
            check_probe(cx, object, container, probe);
        }

        if let Some(live) = liveness {
            if startup.is_none() && live.initial_delay.value > LARGE_INITIAL_DELAY_SECONDS {
                cx.report(
                    object,
                    &rule::INITIAL_DELAY_INSTEAD_OF_STARTUP_PROBE,
                    live.initial_delay.at(live.position),
                    name,
                    format!(
                        "liveness waits `initialDelaySeconds: {}` instead of using a startup probe: \
                         a slower boot still crash-loops, and a hang after every restart goes \
                         unnoticed for {} s",
                        live.initial_delay.value, live.initial_delay.value
                    ),
                );
            }
            let window = live.failure_window();
            if live.failure.value == 1 || window < MIN_LIVENESS_WINDOW_SECONDS {
                cx.report(
                    object,
                    &rule::LIVENESS_WINDOW_TOO_SHORT,
                    live.failure
                        .position
                        .or(live.period.position)
                        .unwrap_or(live.position),
                    name,
                    if live.failure.value == 1 {
                        format!(
                            "liveness kills on a single failed probe ({}): one missed answer \
                             restarts the container",
                            self::window(live)
                        )
                    } else {
                        format!(
                            "liveness kills after {window} s of failures ({}): shorter than a \
                             garbage-collection pause or a CPU-throttled burst",
                            self::window(live)
                        )
                    },
                );
            }
        }

        if let Some(startup_probe) = startup {
            for probe in [liveness, readiness].into_iter().flatten() {
                if probe.initial_delay.value > 0 {
                    cx.report(
                        object,
                        &rule::INITIAL_DELAY_WITH_STARTUP_PROBE,
                        probe.initial_delay.at(probe.position),
                        name,
                        format!(
                            "{} `initialDelaySeconds: {}` counts from the container's start, not \
                             from the startup probe's success (budget {} s): it does nothing \
                             useful",
                            probe.kind,
                            probe.initial_delay.value,
                            startup_probe.budget()
                        ),
                    );
                }
            }
        }

        if let Some((boot, source)) = facts.boot_seconds(contract) {
            let gate = startup.or(liveness);
            if let Some(gate) = gate {
                let budget = gate.budget();
                if (budget as f64) < boot {
                    cx.report(
                        object,
                        &rule::STARTUP_BUDGET_BELOW_BOOT_TIME,
                        gate.failure
                            .position
                            .or(gate.period.position)
                            .unwrap_or(gate.position),
                        name,
                        format!(
                            "the {} probe gives up after {budget} s ({}{}), but the service \
                             boots in up to {} s ({source}): every boot is killed and restarted",
                            gate.kind,
                            if gate.initial_delay.value > 0 {
                                format!("{} s delay + ", gate.initial_delay.value)
                            } else {
                                String::new()
                            },
                            window(gate),
                            seconds(boot),
                        ),
                    );
                }
            }
        }

        if let Some(ready) = readiness
            && ready.success.value == 1
            && ready.failure.value == 1
            && ready.period.value < SHORT_READINESS_PERIOD_SECONDS
        {
            cx.report(
                object,
                &rule::READINESS_FLAPPING,
                ready
                    .failure
                    .position
                    .or(ready.period.position)
                    .unwrap_or(ready.position),
                name,
                format!(
                    "readiness flips on every single result every {} s (successThreshold 1, \
                         failureThreshold 1): a flapping dependency flaps the pod in and out of \
                         rotation",
                    ready.period.value
                ),
            );
        }
    }
}

fn check_probe(cx: &mut Cx<'_>, object: &Object<'_>, container: &Container, probe: &Probe) {
    let name = Some(container.name.as_str());
    if probe.timeout.value >= probe.period.value {
        cx.report(
            object,
            &rule::TIMEOUT_NOT_BELOW_PERIOD,
            probe.timeout.at(probe.position),
            name,
            format!(
                "{} `timeoutSeconds` {} is not shorter than `periodSeconds` {}: a slow endpoint \
                 is probed back to back",
                probe.kind,
                shown(&probe.timeout),
                shown(&probe.period)
            ),
        );
    }

    if let Some(port) = probe.handler.port() {
        let is_grpc = matches!(probe.handler, Handler::Grpc { .. });
        match &port.port {
            PortRef::Name(port_name) if is_grpc => cx.report(
                object,
                &rule::GRPC_NAMED_PORT,
                port.position,
                name,
                format!(
                    "the {} probe's gRPC port is the name `{port_name}`; gRPC probes take a port \
                     number",
                    probe.kind
                ),
            ),
            PortRef::Name(port_name) => {
                if container.resolve_port(&port.port).is_none() {
                    cx.report(
                        object,
                        &rule::PROBE_PORT_NOT_DECLARED,
                        port.position,
                        name,
                        format!(
                            "the {} probe uses port `{port_name}`, which container `{}` does not \
                             declare: the probe cannot resolve it",
                            probe.kind, container.name
                        ),
                    );
                } else if let Some(declared) = container
                    .ports
                    .iter()
                    .find(|declared| declared.name.as_deref() == Some(port_name.as_str()))
                    .filter(|declared| !declared.protocol.eq_ignore_ascii_case("TCP"))
                {
                    cx.report(
                        object,
                        &rule::PROBE_PORT_NOT_DECLARED,
                        port.position,
                        name,
                        format!(
                            "the {} probe uses port `{port_name}`, which is declared {}: probes \
                             speak TCP",
                            probe.kind, declared.protocol
                        ),
                    );
                }
            }
            PortRef::Number(number) => {
                let declared = container
                    .ports
                    .iter()
                    .filter(|declared| declared.number == *number)
                    .collect::<Vec<_>>();
                if !container.ports.is_empty() && declared.is_empty() {
                    let known = container
                        .ports
                        .iter()
                        .map(|declared| declared.number.to_string())
                        .collect::<Vec<_>>()
                        .join(", ");
                    cx.report(
                        object,
                        &rule::PROBE_PORT_NOT_DECLARED,
                        port.position,
                        name,
                        format!(
                            "the {} probe uses port {number}, but container `{}` declares only \
                             {known}",
                            probe.kind, container.name
                        ),
                    );
                } else if !declared.is_empty()
                    && declared
                        .iter()
                        .all(|declared| !declared.protocol.eq_ignore_ascii_case("TCP"))
                {
                    cx.report(
                        object,
                        &rule::PROBE_PORT_NOT_DECLARED,
                        port.position,
                        name,
                        format!(
                            "the {} probe uses port {number}, which is declared {}: probes speak \
                             TCP",
                            probe.kind, declared[0].protocol
                        ),
                    );
                }
            }
        }
    }
}

/// Whether two handlers hit the same thing, after resolving named ports.
fn same_handler(container: &Container, a: &Handler, b: &Handler) -> bool {
    let same_port = |a: &Option<crate::model::Port>, b: &Option<crate::model::Port>| match (a, b) {
        (Some(a), Some(b)) => {
            match (
                container.resolve_port(&a.port),
                container.resolve_port(&b.port),
            ) {
                (Some(a), Some(b)) => a == b,
                _ => a.port == b.port,
            }
        }
        _ => false,
    };
    let same_host = |a: &Option<crate::model::Host>, b: &Option<crate::model::Host>| {
        a.as_ref().map(|host| &host.name) == b.as_ref().map(|host| &host.name)
    };
    match (a, b) {
        (
            Handler::Http {
                path: a_path,
                port: a_port,
                host: a_host,
                scheme: a_scheme,
                ..
            },
            Handler::Http {
                path: b_path,
                port: b_port,
                host: b_host,
                scheme: b_scheme,
                ..
            },
        ) => {
            a_path == b_path
                && same_port(a_port, b_port)
                && same_host(a_host, b_host)
                && a_scheme.eq_ignore_ascii_case(b_scheme)
        }
        (
            Handler::Tcp {
                port: a_port,
                host: a_host,
            },
            Handler::Tcp {
                port: b_port,
                host: b_host,
            },
        ) => same_port(a_port, b_port) && same_host(a_host, b_host),
        (
            Handler::Grpc {
                port: a_port,
                service: a_service,
            },
            Handler::Grpc {
                port: b_port,
                service: b_service,
            },
        ) => same_port(a_port, b_port) && a_service == b_service,
        (Handler::Exec { command: a, .. }, Handler::Exec { command: b, .. }) => {
            !a.is_empty() && a == b
        }
        _ => false,
    }
}

/// "3 × 10 s".
fn window(probe: &Probe) -> String {
    format!("{} × {} s", shown(&probe.failure), shown(&probe.period))
}

/// A setting for a message, marking defaults: "10 (default)".
fn shown(setting: &Setting) -> String {
    match setting.written {
        Some(written) if written == setting.value => setting.value.to_string(),
        Some(written) => format!("{} (from {written})", setting.value),
        None => format!("{} (default)", setting.value),
    }
}

/// Seconds for a message: "40" or "12.5".
pub(crate) fn seconds(value: f64) -> String {
    if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value}")
    }
}
