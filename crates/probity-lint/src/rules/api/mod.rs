//! What the API server would refuse (re-implemented from `pkg/apis/core/validation`), and the
//! unknown-field walk (`fields.rs`) that catches the typos it would drop.

mod fields;
#[cfg(test)]
mod tests;

use super::catalogue as rule;
use super::fixes::Edits;
use crate::context::Cx;
use crate::finding::Autofix;
use crate::model::{Body, Kind, Object, Probe, field_position, written_scalar};
use crate::yaml::{Entry, Node, Value};
use fields::{CONTAINER, OBJECT_META, top_schema, walk};
use probity_contract::kube::Violation;
use probity_contract::kube::termination;
use probity_contract::probe::ProbeKind;

pub(crate) fn check(cx: &mut Cx<'_>, object: &Object<'_>) {
    for problem in &object.problems {
        cx.report(
            object,
            &rule::REJECTED_BY_API_SERVER,
            problem.position,
            problem.container.as_deref(),
            format!("{}; the API server cannot decode it", problem.message),
        );
    }
    check_probes(cx, object);
    match top_schema(object.kind) {
        Some(top) => walk(cx, object, object.root, top, None),
        // A custom resource's own fields are its schema's business; its pod template's
        // containers are Kubernetes containers.
        None => {
            if let Some(template) = object
                .root
                .get("spec")
                .and_then(|spec| spec.get("template"))
            {
                if let Some(metadata) = template.get("metadata") {
                    walk(cx, object, metadata, &OBJECT_META, None);
                }
                for list in ["containers", "initContainers"] {
                    let containers = template
                        .get("spec")
                        .and_then(|spec| spec.get(list))
                        .and_then(Node::as_seq)
                        .unwrap_or_default();
                    for container in containers {
                        let name = container.get("name").and_then(Node::as_str);
                        walk(cx, object, container, &CONTAINER, name);
                    }
                }
            }
        }
    }
}

fn check_probes(cx: &mut Cx<'_>, object: &Object<'_>) {
    let Body::Workload(workload) = &object.body else {
        return;
    };
    let Some(pod) = &workload.pod else {
        return;
    };
    // Kubernetes' `validateInitContainers`: probes on an init container that runs to
    // completion are forbidden; only a sidecar (`restartPolicy: Always`) may have them.
    for container in pod
        .init_containers
        .iter()
        .filter(|container| !container.sidecar)
    {
        for probe in &container.probes {
            cx.report(
                object,
                &rule::REJECTED_BY_API_SERVER,
                probe.position,
                Some(container.name.as_str()),
                format!(
                    "`{}` on an init container: it \"may not be set for init containers without \
                     restartPolicy=Always\" (a sidecar init container may have probes)",
                    probe.key()
                ),
            );
        }
    }
    if let (Err(violation), Some(position)) = (
        termination::pod_grace_period(pod.termination_grace.written),
        pod.termination_grace.position,
    ) {
        cx.report(
            object,
            &rule::REJECTED_BY_API_SERVER,
            position,
            None,
            format!(
                "`{}` is {}; it \"{}\"",
                violation.field,
                pod.termination_grace.written.unwrap_or_default(),
                violation.message
            ),
        );
    }
    for container in pod.probed() {
        for probe in &container.probes {
            check_probe(cx, object, &container.name, probe);
        }
        // `validateLifecycle`: one handler per hook, a `sleep` within the pod's grace period.
        for hook in &container.hooks {
            let parent = format!("lifecycle.{}", hook.entry.key);
            for violation in hook.handler.validate(pod.termination_grace.value) {
                cx.report(
                    object,
                    &rule::REJECTED_BY_API_SERVER,
                    field_position(hook.entry, &violation.field),
                    Some(&container.name),
                    said(&parent, hook.entry, &violation),
                );
            }
        }
    }
}

/// What the API server's validation of a probe says (`ProbeSpec::validate`), reported where each
/// field is written.
fn check_probe(cx: &mut Cx<'_>, object: &Object<'_>, container: &str, probe: &Probe<'_>) {
    for violation in probe.spec.validate(probe.kind) {
        if probe.is_undecodable(&violation.field) {
            continue;
        }
        // A custom resource's controller builds the pod from its template and may fill in what
        // it leaves out: Knative Serving defaults a probe's port to the container's serving
        // port (knative.dev/docs/serving/services/health-checks: "port is optional"), so a
        // port that is not written is the controller's to choose, not a rejected value.
        if object.kind == Kind::CustomWorkload
            && violation.field.ends_with(".port")
            && probe.written_scalar(&violation.field).is_none()
        {
            continue;
        }
        let fix = fix_for(cx, object, probe, &violation.field);
        cx.report_with_fix(
            object,
            &rule::REJECTED_BY_API_SERVER,
            probe.position_of(&violation.field),
            Some(container),
            describe(probe, &violation),
            fix,
        );
    }
}

/// The finding's message for a probe: the field as written, then the API server's words.
fn describe(probe: &Probe<'_>, violation: &Violation) -> String {
    let key = probe.key();
    let field = violation.field.as_str();
    let extra_handler = probe
        .handler_keys
        .iter()
        .skip(1)
        .any(|(extra, _)| *extra == field);
    if let (true, Some((first, _))) = (extra_handler, probe.handler_keys.first()) {
        return format!(
            "`{key}` has both `{first}` and `{field}`: a probe \"{}\"",
            violation.message
        );
    }
    let advice = probe
        .written_scalar(field)
        .map_or("", |written| advice(probe, field, written));
    format!("{}{advice}", said(key, probe.entry, violation))
}

/// `violation` of a field under `parent` (`livenessProbe`, `lifecycle.preStop`), whose value is
/// `entry`'s: the field, its value as written, and the API server's words.
fn said(parent: &str, entry: &Entry, violation: &Violation) -> String {
    let field = violation.field.as_str();
    let path = if field.is_empty() {
        format!("`{parent}`")
    } else {
        format!("`{parent}.{field}`")
    };
    let message = violation.message.as_str();
    let Some(written) = written_scalar(entry, field) else {
        return format!("{path}: \"{message}\"");
    };
    let plain = written.scalar_text().unwrap_or_default();
    let shown = match written.value {
        Value::String(_) => format!("\"{plain}\""),
        _ => plain.clone(),
    };
    // Some of the API server's messages start with the value; it is shown once.
    let message = [
        format!("`{plain}`: "),
        format!("{plain}: "),
        format!("{plain} "),
    ]
    .iter()
    .find_map(|prefix| message.strip_prefix(prefix.as_str()))
    .unwrap_or(message);
    format!("{path} is {shown}; it \"{message}\"")
}

/// Why, where the API server's words leave it unsaid.
fn advice(probe: &Probe<'_>, field: &str, written: &Node) -> &'static str {
    match (field, &written.value) {
        ("terminationGracePeriodSeconds", _) if probe.kind == ProbeKind::Readiness => {
            " (readiness never kills)"
        }
        ("httpGet.port" | "tcpSocket.port", Value::String(name))
            if name.bytes().all(|byte| byte.is_ascii_digit()) =>
        {
            " (an unquoted number is a port number)"
        }
        _ => "",
    }
}

/// The fixes for what the API server rejects: `successThreshold` on liveness and startup must be
/// 1; a readiness probe may not set `terminationGracePeriodSeconds` (it never kills).
fn fix_for(cx: &Cx<'_>, object: &Object<'_>, probe: &Probe<'_>, field: &str) -> Option<Autofix> {
    let key = probe.key();
    let entry = probe.entry.value.entry(field)?;
    let mut edits = Edits::new(cx, object.source);
    match field {
        "successThreshold" if probe.kind != ProbeKind::Readiness => {
            edits.set_scalar(&entry.value, "1")?;
            edits.finish(format!("set `{key}.successThreshold` to 1"), true)
        }
        "terminationGracePeriodSeconds" if probe.kind == ProbeKind::Readiness => {
            edits.remove_entry(entry.span())?;
            edits.finish(
                format!("remove `{key}.terminationGracePeriodSeconds`"),
                true,
            )
        }
        _ => None,
    }
}
