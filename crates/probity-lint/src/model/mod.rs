//! Typed views of the Kubernetes objects the rules judge, read from positioned YAML.
//!
//! Reading never fails on a value of the wrong type: it records a [`Problem`] (reported by the
//! `rejected-by-api-server` rule, since the API server would refuse to decode it) and carries on
//! with Kubernetes' default, so one bad field does not hide every other finding.
//!
//! Kubernetes' own rules are not restated here: a probe is also read into the API's
//! `ProbeSpec`, whose defaults (`ProbeTiming`) give every number the rules use and whose
//! validation the `rejected-by-api-server` rule reports; the pod's grace period is defaulted by
//! `termination::pod_grace_period`.
//!
//! - [`kind`]: the kinds read;
//! - [`field`]: one field read, its problem recorded (shared by every reader);
//! - [`workload`]: pods and pod templates, their containers, hooks and grace period;
//! - [`probe`]: a container's probes, read into the API's `ProbeSpec`;
//! - [`related`]: the objects read beside workloads (Services, PodDisruptionBudgets,
//!   autoscalers) and the label selectors that tie them to a workload.

mod field;
mod kind;
mod probe;
mod related;
#[cfg(test)]
mod tests;
mod workload;

use crate::yaml::{Node, Position};
use field::read_annotations;
pub(crate) use field::{
    Annotation, Problem, Setting, field_position, whole_seconds, written_scalar,
};
pub(crate) use kind::Kind;
pub(crate) use probe::{Handler, Host, Port, Probe};
pub(crate) use probity_contract::kube::probe::IntOrString;
pub(crate) use related::{Amount, Autoscaler, Budget, Selector, Service};
use related::{read_autoscaler, read_budget, read_service};
use workload::read_workload;
pub(crate) use workload::{Container, PodSpec, Workload};

/// A Kubernetes object of a kind the linter reads.
#[derive(Debug)]
pub(crate) struct Object<'a> {
    pub(crate) source: usize,
    pub(crate) kind: Kind,
    /// The kind as written: `Deployment`, `Rollout`…
    pub(crate) kind_name: String,
    pub(crate) name: String,
    pub(crate) namespace: Option<String>,
    /// Where the object's `kind:` is written.
    pub(crate) position: Position,
    pub(crate) root: &'a Node,
    pub(crate) annotations: Vec<Annotation>,
    pub(crate) body: Body<'a>,
    pub(crate) problems: Vec<Problem>,
    /// The rules its `probity.dev/ignore-RULE` annotations suppress (set by the engine).
    pub(crate) suppressions: Vec<&'static str>,
}

#[derive(Debug)]
pub(crate) enum Body<'a> {
    Workload(Workload<'a>),
    Service(Service),
    Budget(Budget),
    Autoscaler(Autoscaler),
}

/// Why a document is not a Kubernetes object.
pub(crate) struct NotAnObject {
    pub(crate) position: Position,
    pub(crate) message: String,
}

/// What a document holds.
pub(crate) enum Read<'a> {
    /// An object of a kind the linter judges.
    Object(Box<Object<'a>>),
    /// A `List`'s items.
    List(Vec<&'a Node>),
    /// A Kubernetes object of a kind the linter does not judge (ConfigMap, a custom resource
    /// without a pod template…): skipped, and counted.
    Skipped(Skipped),
}

/// A document of a kind the linter does not judge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Skipped {
    pub(crate) kind: String,
    pub(crate) name: String,
    pub(crate) position: Position,
}

/// Reads one document's root (or one `List` item) as an object.
pub(crate) fn read_object(source: usize, root: &Node) -> Result<Read<'_>, NotAnObject> {
    let not_an_object = |position, message: &str| NotAnObject {
        position,
        message: format!("not a Kubernetes object: {message}"),
    };
    if root.as_map().is_none() {
        return Err(not_an_object(
            root.position,
            &format!("the document is {}, not a mapping", root.describe()),
        ));
    }
    let Some(kind_entry) = root.entry("kind") else {
        return Err(not_an_object(root.position, "it has no `kind`"));
    };
    let Some(kind_text) = kind_entry.value.as_str() else {
        return Err(not_an_object(
            kind_entry.value.position,
            &format!("`kind` is {}, not a string", kind_entry.value.describe()),
        ));
    };
    let api_version = match root.entry("apiVersion") {
        Some(entry) if let Some(text) = entry.value.as_str() => text,
        Some(entry) => {
            return Err(not_an_object(
                entry.value.position,
                &format!("`apiVersion` is {}, not a string", entry.value.describe()),
            ));
        }
        None => return Err(not_an_object(root.position, "it has no `apiVersion`")),
    };
    if kind_text == "List" || kind_text.ends_with("List") && root.get("items").is_some() {
        let items = root
            .get("items")
            .and_then(Node::as_seq)
            .map(|items| items.iter().collect())
            .unwrap_or_default();
        return Ok(Read::List(items));
    }
    let metadata = root.get("metadata");
    let name = metadata
        .and_then(|metadata| {
            metadata
                .get("name")
                .or_else(|| metadata.get("generateName"))
        })
        .and_then(Node::scalar_text)
        .unwrap_or_else(|| "<unnamed>".to_owned());
    let kind = match Kind::parse(api_version, kind_text) {
        Some(kind) => kind,
        None if has_pod_template(root) => Kind::CustomWorkload,
        None => {
            return Ok(Read::Skipped(Skipped {
                kind: kind_text.to_owned(),
                name,
                position: kind_entry.value.position,
            }));
        }
    };
    let mut problems = Vec::new();
    let namespace = metadata
        .and_then(|metadata| metadata.get("namespace"))
        .and_then(Node::scalar_text);
    let annotations = read_annotations(metadata, &mut problems);
    let spec = root.get("spec");
    let body = match kind {
        Kind::Service => Body::Service(read_service(spec, &mut problems)),
        Kind::PodDisruptionBudget => Body::Budget(read_budget(spec, &mut problems)),
        Kind::HorizontalPodAutoscaler => Body::Autoscaler(read_autoscaler(spec, &mut problems)),
        _ => Body::Workload(read_workload(kind, root, &mut problems)),
    };
    Ok(Read::Object(Box::new(Object {
        source,
        kind,
        kind_name: kind_text.to_owned(),
        name,
        namespace,
        position: kind_entry.value.position,
        root,
        annotations,
        body,
        problems,
        suppressions: Vec::new(),
    })))
}

/// Whether `spec.template.spec.containers` is a list: the shape of a pod template, whatever the
/// kind around it.
pub(super) fn has_pod_template(root: &Node) -> bool {
    root.get("spec")
        .and_then(|spec| spec.get("template"))
        .and_then(|template| template.get("spec"))
        .and_then(|spec| spec.get("containers"))
        .is_some_and(|containers| containers.as_seq().is_some())
}
