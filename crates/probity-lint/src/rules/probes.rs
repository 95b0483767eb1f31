//! Rules about each probe, and each pair of probes, of a container.

use super::catalogue as rule;
use super::commands;
use super::fixes::Edits;
use super::hosts::is_loopback;
use crate::context::Cx;
use crate::contract::Contract;
use crate::facts::Facts;
use crate::finding::Autofix;
use crate::model::{Container, Handler, IntOrString, Object, PodSpec, Probe, Setting, Workload};
use crate::yaml::Style;
use probity_contract::kube::probe::DEFAULT_PERIOD_SECONDS;
use probity_contract::probe::ProbeKind;

/// A liveness `initialDelaySeconds` up to this is a head start, whatever the failure window.
const SMALL_INITIAL_DELAY_SECONDS: i64 = 10;
/// The shortest liveness failure window that rides out a pause.
const MIN_LIVENESS_WINDOW_SECONDS: i64 = 10;
/// The longest period a startup probe inserted by `--fix` uses: the boot's end is noticed
/// within this, so readiness is not held back long after the process is up.
const FIXED_STARTUP_PERIOD_SECONDS: i64 = 5;

pub(crate) fn check(
    cx: &mut Cx<'_>,
    object: &Object<'_>,
    workload: &Workload<'_>,
    pod: &PodSpec<'_>,
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
            // Both probes are answered by the same process, so a stall fails both: liveness
            // giving up first kills a pod the Service still routes to. Equal windows race, and
            // are the textbook wiring when the endpoints differ; the same endpoint is already
            // `identical-liveness-readiness`.
            if live.failure_window() < ready.failure_window() {
                cx.report(
                    object,
                    &rule::LIVENESS_WINDOW_SHORTER_THAN_READINESS,
                    live.failure
                        .position
                        .or(live.period.position)
                        .unwrap_or(live.position),
                    name,
                    format!(
                        "liveness gives up after {} s ({}), readiness only after {} s ({}): a \
                         stalled pod is restarted while it is still in rotation",
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

        if let Some(probe) = startup
            && let Some((path, waits)) = facts.waits_on(&probe.handler, contract)
        {
            cx.report(
                object,
                &rule::STARTUP_PROBE_WAITS_ON_DEPENDENCY,
                match &probe.handler {
                    Handler::Http {
                        path_position: Some(position),
                        ..
                    } => *position,
                    _ => probe.position,
                },
                name,
                format!(
                    "the startup probe runs {}, and the contract says `{path}` waits on {}: an \
                     outage of {} longer than the startup budget ({} s) kills every new pod, \
                     again and again",
                    probe.handler.describe(container),
                    waits
                        .iter()
                        .map(|name| format!("`{name}`"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    if waits.len() == 1 {
                        "it"
                    } else {
                        "any of them"
                    },
                    probe.budget()
                ),
            );
        }

        for probe in &container.probes {
            check_probe(cx, object, pod, container, probe);
            check_cannot_fail(cx, object, container, probe, contract);
            check_transitive(cx, object, container, probe, facts, contract);
        }

        if let Some(live) = liveness {
            let delay = live.initial_delay.value;
            if startup.is_none()
                && delay > SMALL_INITIAL_DELAY_SECONDS
                && delay > live.failure_window()
            {
                cx.report_with_fix(
                    object,
                    &rule::INITIAL_DELAY_INSTEAD_OF_STARTUP_PROBE,
                    live.initial_delay.at(live.position),
                    name,
                    format!(
                        "liveness waits `initialDelaySeconds: {delay}`, longer than its own \
                         failure window ({} = {} s): the delay is a guess at the boot time, a \
                         slower boot still crash-loops, and a hang after every restart goes \
                         unnoticed for {delay} s",
                        window(live),
                        live.failure_window()
                    ),
                    startup_probe_fix(cx, object, live),
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
                    let fix = probe
                        .entry
                        .value
                        .entry("initialDelaySeconds")
                        .and_then(|entry| {
                            let mut edits = Edits::new(cx, object.source);
                            edits.remove_entry(entry.span())?;
                            edits.finish(
                                format!("remove {} `initialDelaySeconds`", probe.kind),
                                true,
                            )
                        });
                    cx.report_with_fix(
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
                        fix,
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
            // A period shorter than Kubernetes' default counts as short.
            && ready.period.value < DEFAULT_PERIOD_SECONDS
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

/// The fix for a liveness delay that carries the boot: a startup probe on the same handler that
/// tolerates as long as the delay and the liveness window did, and no delay.
fn startup_probe_fix(cx: &Cx<'_>, object: &Object<'_>, live: &Probe<'_>) -> Option<Autofix> {
    let probe = &live.entry.value;
    let handler_key = live.handler_keys.first()?.0;
    let handler = probe.entry(handler_key)?;
    let delay_entry = probe.entry("initialDelaySeconds")?;
    let tolerated = live.budget();
    let period = live.period.value.min(FIXED_STARTUP_PERIOD_SECONDS);
    // The defaulted period is never 0; were it, there would be no fix rather than a panic.
    let failures = (tolerated + period - 1).checked_div(period)?;
    let mut edits = Edits::new(cx, object.source);
    let text = edits.text();
    let timeout = probe
        .entry("timeoutSeconds")
        .and_then(|entry| text.get(entry.span()));
    let inserted = match probe.style {
        Style::BlockCollection => {
            // Copy the handler as written: its lines keep their indentation, which is the right
            // one for a sibling probe.
            let line_start = text[..handler.key_position.offset]
                .rfind('\n')
                .map_or(0, |at| at + 1);
            let indent = &text[line_start..handler.key_position.offset];
            if !indent.chars().all(|c| c == ' ') {
                return None;
            }
            let key_indent = " ".repeat(live.entry.key_position.column.saturating_sub(1));
            let mut block = format!("{key_indent}startupProbe:\n{indent}");
            block.push_str(text.get(handler.span())?);
            block.push('\n');
            for line in [
                timeout.map(str::to_owned),
                Some(format!("periodSeconds: {period}")),
                Some(format!("failureThreshold: {failures}")),
            ]
            .into_iter()
            .flatten()
            {
                block.push_str(indent);
                block.push_str(&line);
                block.push('\n');
            }
            block
        }
        Style::FlowCollection => {
            let handler_text = text.get(handler.span())?;
            if handler_text.contains('\n') {
                return None;
            }
            let key_indent = " ".repeat(live.entry.key_position.column.saturating_sub(1));
            let mut fields = vec![handler_text.to_owned()];
            fields.extend(timeout.map(str::to_owned));
            fields.push(format!("periodSeconds: {period}"));
            fields.push(format!("failureThreshold: {failures}"));
            format!("{key_indent}startupProbe: {{{}}}\n", fields.join(", "))
        }
        _ => return None,
    };
    edits.insert_block_after(live.entry, &inserted)?;
    edits.remove_entry(delay_entry.span())?;
    edits.finish(
        format!(
            "add a `startupProbe` on the same handler with `periodSeconds: {period}` and \
             `failureThreshold: {failures}` (up to {} s to boot, as the delay allowed) and remove \
             liveness `initialDelaySeconds: {}`",
            period * failures,
            live.initial_delay.value
        ),
        true,
    )
}

fn check_probe(
    cx: &mut Cx<'_>,
    object: &Object<'_>,
    pod: &PodSpec<'_>,
    container: &Container<'_>,
    probe: &Probe<'_>,
) {
    let name = Some(container.name.as_str());
    // With `periodSeconds: 1`, the API's minimum, no timeout is below the period (the least
    // `timeoutSeconds` is 1 too): a probe that times out is followed at once by the next, which
    // is the cadence the author chose, not a pile-up. Only a longer timeout is a mistake there.
    let shortest_possible = probe.period.value == 1 && probe.timeout.value == 1;
    if probe.timing.timeout_reaches_period() && !shortest_possible {
        cx.report_with_fix(
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
            timeout_fix(cx, object, probe),
        );
    }

    if let Some(port) = probe.handler.port() {
        let is_grpc = matches!(probe.handler, Handler::Grpc { .. });
        match &port.port {
            IntOrString::String(port_name) if is_grpc => {
                let number = container
                    .ports
                    .iter()
                    .find(|declared| declared.name.as_deref() == Some(port_name.as_str()))
                    .map(|declared| declared.number);
                let fix = number.and_then(|number| {
                    let node = probe.entry.value.get("grpc")?.get("port")?;
                    let mut edits = Edits::new(cx, object.source);
                    edits.set_scalar(node, &number.to_string())?;
                    edits.finish(
                        format!("write the port number {number} that `{port_name}` names"),
                        true,
                    )
                });
                cx.report_with_fix(
                    object,
                    &rule::GRPC_NAMED_PORT,
                    port.position,
                    name,
                    format!(
                        "the {} probe's gRPC port is the name `{port_name}`; gRPC probes take a \
                         port number",
                        probe.kind
                    ),
                    fix,
                );
            }
            IntOrString::String(port_name) => {
                if container.resolve_port(&port.port).is_none() {
                    let declared: Vec<String> = container
                        .ports
                        .iter()
                        .filter_map(|declared| declared.name.clone())
                        .map(|name| format!("`{name}`"))
                        .collect();
                    // The kubelet's `findPortByName` looks in the probed container only, even when
                    // another container of the pod (a sidecar) declares the name.
                    let elsewhere = pod
                        .containers
                        .iter()
                        .chain(&pod.init_containers)
                        .filter(|other| other.name != container.name)
                        .find(|other| {
                            other
                                .ports
                                .iter()
                                .any(|declared| declared.name.as_deref() == Some(port_name))
                        })
                        .map(|other| {
                            format!(
                                "; container `{}` declares it, but a probe's port name resolves \
                                 against the probed container's own ports only (use the number)",
                                other.name
                            )
                        })
                        .unwrap_or_default();
                    cx.report(
                        object,
                        &rule::PROBE_PORT_NOT_DECLARED,
                        port.position,
                        name,
                        format!(
                            "the {} probe uses port `{port_name}`, which container `{}` does not \
                             declare ({}): the kubelet cannot resolve it and the probe fails on \
                             every attempt{elsewhere}",
                            probe.kind,
                            container.name,
                            if declared.is_empty() {
                                "it names no ports".to_owned()
                            } else {
                                format!("it names {}", declared.join(", "))
                            }
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
            IntOrString::Int(_) => {}
        }
    }
}

/// The fix for a timeout that reaches the period: one second below the period (the longest
/// timeout that no longer overlaps the next probe); for a one-second period, a period one second
/// above the timeout, which changes the detection time and is therefore only shown.
fn timeout_fix(cx: &Cx<'_>, object: &Object<'_>, probe: &Probe<'_>) -> Option<Autofix> {
    let node = &probe.entry.value;
    let period = probe.period.value;
    let mut edits = Edits::new(cx, object.source);
    if period >= 2 {
        let timeout = period - 1;
        match node.entry("timeoutSeconds") {
            Some(entry) => edits.set_scalar(&entry.value, &timeout.to_string())?,
            None => return None,
        }
        return edits.finish(format!("set `timeoutSeconds` to {timeout}"), true);
    }
    let new_period = probe.timeout.value + 1;
    let entry = node.entry("periodSeconds")?;
    edits.set_scalar(&entry.value, &new_period.to_string())?;
    edits.finish(
        format!("set `periodSeconds` to {new_period}, above the timeout"),
        false,
    )
}

/// Exec probes whose command always exits 0, and readiness on an endpoint that checks nothing.
fn check_cannot_fail(
    cx: &mut Cx<'_>,
    object: &Object<'_>,
    container: &Container<'_>,
    probe: &Probe<'_>,
    contract: Option<&Contract>,
) {
    let name = Some(container.name.as_str());
    match &probe.handler {
        Handler::Exec { command, position } => {
            let Some(reason) =
                commands::parse(command).and_then(|script| commands::cannot_fail(&script))
            else {
                return;
            };
            cx.report(
                object,
                &rule::PROBE_CANNOT_FAIL,
                *position,
                name,
                format!(
                    "the {} probe runs `{}`, which cannot fail: {reason}",
                    probe.kind,
                    command.join(" ")
                ),
            );
        }
        Handler::Http {
            path,
            path_position,
            ..
        } if probe.kind == ProbeKind::Readiness => {
            let Some(endpoint) = contract.and_then(|contract| contract.endpoint_for_path(path))
            else {
                return;
            };
            if endpoint.checks.is_empty() {
                cx.report(
                    object,
                    &rule::PROBE_CANNOT_FAIL,
                    path_position.unwrap_or(probe.position),
                    name,
                    format!(
                        "readiness probes `{path}`, and the contract says that endpoint ({} \
                         endpoint) evaluates no checks: it passes whenever the process answers",
                        endpoint.probe
                    ),
                );
            }
        }
        _ => {}
    }
}

/// Probes that fetch another service's health endpoint (exec), or that the annotation or the
/// contract says do.
fn check_transitive(
    cx: &mut Cx<'_>,
    object: &Object<'_>,
    container: &Container<'_>,
    probe: &Probe<'_>,
    facts: &Facts<'_>,
    contract: Option<&Contract>,
) {
    let name = Some(container.name.as_str());
    if let Some(reason) = facts.transitive_reason(&probe.handler, contract) {
        cx.report(
            object,
            &rule::TRANSITIVE_HEALTH_CHECK,
            probe.position,
            name,
            format!(
                "the {} probe runs {}, and {reason}: another service's trouble fails this one",
                probe.kind,
                probe.handler.describe(container)
            ),
        );
        return;
    }
    let Handler::Exec { command, position } = &probe.handler else {
        return;
    };
    for fetch in commands::fetches(command, &container.env) {
        let Some(host) = &fetch.host else { continue };
        if is_loopback(host) || host.is_empty() {
            continue;
        }
        let what = if fetch.grpc_health {
            format!("the `grpc.health.v1` service of `{host}`")
        } else if commands::is_health_path(&fetch.path) {
            format!("`{}` on `{host}`", fetch.path)
        } else {
            continue;
        };
        cx.report(
            object,
            &rule::TRANSITIVE_HEALTH_CHECK,
            *position,
            name,
            format!(
                "the {} probe's `{}` asks {what} (`{}`): when that service is unhealthy, this \
                 one {}",
                probe.kind,
                fetch.program,
                fetch.target,
                match probe.kind {
                    ProbeKind::Readiness => "drains itself too",
                    ProbeKind::Liveness | ProbeKind::Startup => "is restarted with it",
                }
            ),
        );
        return;
    }
}

/// Whether two handlers hit the same thing, after resolving named ports.
fn same_handler(container: &Container<'_>, a: &Handler, b: &Handler) -> bool {
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
fn window(probe: &Probe<'_>) -> String {
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
