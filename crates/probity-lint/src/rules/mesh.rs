//! What an Istio sidecar does to probes. Istio redirects every inbound connection into its
//! proxy, so the proxy, not the application, accepts the kubelet's TCP connects; the sidecar
//! injector therefore rewrites HTTP, TCP and gRPC probes to go through pilot-agent (port
//! 15020), unless the pod opts out with `sidecar.istio.io/rewriteAppHTTPProbers: "false"`.
//! Istio reads these settings from the pod only: on the workload's own metadata they are
//! ignored.
//!
//! Sources: <https://istio.io/latest/docs/ops/configuration/mesh/app-health-check/> and
//! <https://istio.io/latest/docs/reference/config/annotations/>; the rewrite itself is
//! `pkg/kube/inject/app_probe.go` in istio/istio.

use super::catalogue as rule;
use crate::context::Cx;
use crate::model::{Annotation, Handler, Kind, Object, PodSpec, Workload};

/// Injection per pod: a label (current) or an annotation (older releases).
pub(crate) const INJECT: &str = "sidecar.istio.io/inject";
/// The per-pod switch of the probe rewrite.
pub(crate) const REWRITE: &str = "sidecar.istio.io/rewriteAppHTTPProbers";

pub(crate) fn check(
    cx: &mut Cx<'_>,
    object: &Object<'_>,
    workload: &Workload<'_>,
    pod: &PodSpec<'_>,
) {
    // A bare Pod's metadata is the pod's; a controller's pod settings are in its template.
    let pod_annotations: &[Annotation] = if object.kind == Kind::Pod {
        &object.annotations
    } else {
        &workload.pod_annotations
    };
    let annotation = |key: &str| {
        pod_annotations
            .iter()
            .find(|annotation| annotation.key == key)
    };
    let label = |key: &str| {
        workload
            .pod_labels
            .iter()
            .find(|(label, _)| label == key)
            .map(|(_, value)| value.as_str())
    };
    let inject = label(INJECT).or(annotation(INJECT).map(|a| a.value.as_str()));
    let rewrite_off = annotation(REWRITE).filter(|a| a.value.trim() == "false");

    if object.kind != Kind::Pod {
        check_ignored(cx, object, pod_annotations);
    }

    // Injection off for this pod: no sidecar, nothing rewritten.
    if inject.is_some_and(|value| value.trim() == "false") {
        return;
    }
    let Some(rewrite_off) = rewrite_off else {
        return;
    };
    // The opt-out names the mesh: the pod runs beside Istio's proxy (injected by this label, or
    // by its namespace's `istio-injection` label, which is not in the pod).
    for container in pod.probed() {
        for probe in &container.probes {
            if !matches!(probe.handler, Handler::Tcp { .. }) {
                continue;
            }
            cx.report(
                object,
                &rule::TCP_PROBE_PASSES_UNDER_ISTIO,
                probe.position,
                Some(&container.name),
                format!(
                    "the {} probe is a {}, but `{REWRITE}: \"false\"` (line {}) leaves it to \
                     the kubelet, and under Istio's sidecar every inbound port is accepted by the \
                     proxy: the probe always passes while the proxy runs, whatever `{}` does",
                    probe.kind,
                    probe.handler.describe(container),
                    rewrite_off.position.line,
                    container.name
                ),
            );
        }
    }
}

/// `sidecar.istio.io/*` pod settings written on the workload, where Istio never reads them.
fn check_ignored(cx: &mut Cx<'_>, object: &Object<'_>, pod_annotations: &[Annotation]) {
    for annotation in &object.annotations {
        if annotation.key != REWRITE && annotation.key != INJECT {
            continue;
        }
        if pod_annotations.iter().any(|pod| pod.key == annotation.key) {
            continue;
        }
        let effect = if annotation.key == REWRITE {
            "the probe rewrite stays as the mesh configures it (on in every built-in profile)"
        } else {
            "injection is decided by the namespace's label alone"
        };
        cx.report(
            object,
            &rule::ISTIO_SETTING_ON_WORKLOAD,
            annotation.position,
            None,
            format!(
                "`{}: \"{}\"` is on the {}'s own metadata, but Istio reads it from the pod: it is \
                 ignored here, and {effect}",
                annotation.key, annotation.value, object.kind_name
            ),
        );
    }
}
