//! What the manifest alone cannot say about a service — which endpoints check dependencies, how
//! long it boots, how long it drains — read from its contract or from `probity.dev/` annotations.

use crate::contract::{Contract, EndpointContract};
use crate::model::{Annotation, Handler, Object, Workload};
use crate::rules::catalogue;
use crate::yaml::Position;
use probity_contract::duration;

/// The annotation prefix the linter owns.
pub const ANNOTATION_PREFIX: &str = "probity.dev/";
/// Inline contract JSON.
pub const CONTRACT_ANNOTATION: &str = "probity.dev/contract";
/// Comma-separated endpoints whose answer depends on something outside the process.
pub const DEPENDENCY_ENDPOINTS_ANNOTATION: &str = "probity.dev/dependency-endpoints";
/// Comma-separated endpoints whose answer includes another service's health endpoint.
pub const TRANSITIVE_ENDPOINTS_ANNOTATION: &str = "probity.dev/transitive-endpoints";
/// Worst boot time in seconds.
pub const BOOT_SECONDS_ANNOTATION: &str = "probity.dev/boot-seconds";
/// Time the service keeps serving after SIGTERM, in seconds.
pub const DRAIN_DELAY_ANNOTATION: &str = "probity.dev/drain-delay-seconds";
/// Prefix of a suppression: `probity.dev/ignore-RULE: "<reason>"`.
pub const IGNORE_PREFIX: &str = "probity.dev/ignore-";

/// An annotation problem, reported under `invalid-annotation`.
#[derive(Debug)]
pub(crate) struct AnnotationProblem {
    pub(crate) position: Position,
    pub(crate) message: String,
}

/// Facts about one workload, from its annotations and the contracts given on the command line.
#[derive(Debug, Default)]
pub(crate) struct Facts<'c> {
    inline_contract: Option<Contract>,
    contracts: Vec<&'c Contract>,
    dependency_endpoints: Vec<String>,
    transitive_endpoints: Vec<String>,
    boot_seconds: Option<f64>,
    drain_delay_seconds: Option<f64>,
}

/// What a service does after SIGTERM, in seconds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Drain {
    pub(crate) delay: f64,
    pub(crate) in_flight: f64,
    pub(crate) from_contract: bool,
    /// How long a readiness change takes to reach the load balancers, when the contract says.
    pub(crate) propagation: Option<f64>,
    /// The readiness period (seconds) and failure threshold the contract derived the delay from.
    pub(crate) derived_from: Option<(f64, u64)>,
}

/// The annotations of an object and, for a workload, of its pod template (second, so they
/// override the object's).
fn annotations<'o>(object: &'o Object<'_>) -> impl Iterator<Item = &'o Annotation> {
    let template: &[Annotation] = match &object.body {
        crate::model::Body::Workload(Workload {
            pod_annotations, ..
        }) => pod_annotations,
        _ => &[],
    };
    object.annotations.iter().chain(template)
}

/// The rules an object's valid `probity.dev/ignore-RULE: "<reason>"` annotations suppress.
pub(crate) fn suppressions(object: &Object<'_>) -> Vec<&'static str> {
    annotations(object)
        .filter(|annotation| !annotation.value.trim().is_empty())
        .filter_map(|annotation| annotation.key.strip_prefix(IGNORE_PREFIX))
        .filter_map(crate::rules::find)
        .map(|rule| rule.id)
        .collect()
}

/// Reads every `probity.dev/` annotation of an object (its metadata, and its pod template's for
/// a workload): the problems of its suppressions always; facts for workloads.
pub(crate) fn read_annotations<'c>(
    object: &Object<'_>,
    contracts: &'c [Contract],
) -> (Facts<'c>, Vec<AnnotationProblem>) {
    let mut facts = Facts {
        contracts: contracts.iter().collect(),
        ..Facts::default()
    };
    let mut problems = Vec::new();
    for annotation in annotations(object) {
        let key = annotation.key.as_str();
        if !key.starts_with(ANNOTATION_PREFIX) {
            continue;
        }
        let mut problem = |message: String| {
            problems.push(AnnotationProblem {
                position: annotation.position,
                message,
            });
        };
        let value = annotation.value.trim();
        if let Some(rule) = key.strip_prefix(IGNORE_PREFIX) {
            match crate::rules::find(rule) {
                None => problem(format!(
                    "`{key}` suppresses `{rule}`, which is not a rule (`probity lint --explain` \
                     lists them)"
                )),
                Some(_) if value.is_empty() => problem(format!(
                    "`{key}` gives no reason; the suppression is not honoured until its value \
                     says why the rule does not apply"
                )),
                Some(_) => {}
            }
            continue;
        }
        match key {
            CONTRACT_ANNOTATION => match Contract::from_json(value) {
                Ok(contract) => facts.inline_contract = Some(contract),
                Err(error) => problem(format!("`{key}` is not a valid contract: {error}")),
            },
            DEPENDENCY_ENDPOINTS_ANNOTATION | TRANSITIVE_ENDPOINTS_ANNOTATION => {
                let endpoints: Vec<String> = value
                    .split(',')
                    .map(str::trim)
                    .filter(|endpoint| !endpoint.is_empty())
                    .map(str::to_owned)
                    .collect();
                if let Some(bad) = endpoints
                    .iter()
                    .find(|endpoint| !endpoint.starts_with('/') && !endpoint.starts_with("grpc:"))
                {
                    problem(format!(
                        "`{key}` lists `{bad}`; write HTTP paths starting with `/` or `grpc:SERVICE`"
                    ));
                }
                if key == DEPENDENCY_ENDPOINTS_ANNOTATION {
                    facts.dependency_endpoints = endpoints;
                } else {
                    facts.transitive_endpoints = endpoints;
                }
            }
            BOOT_SECONDS_ANNOTATION | DRAIN_DELAY_ANNOTATION => {
                match duration::parse_or_seconds(value) {
                    Ok(time) if key == BOOT_SECONDS_ANNOTATION => {
                        facts.boot_seconds = Some(time.as_secs_f64());
                    }
                    Ok(time) => facts.drain_delay_seconds = Some(time.as_secs_f64()),
                    // The error quotes the value and shows the forms that work.
                    Err(error) => problem(format!("`{key}`: {error}")),
                }
            }
            _ => problem(format!(
                "`{key}` is not an annotation probity knows; known: `{CONTRACT_ANNOTATION}`, \
                 `{DEPENDENCY_ENDPOINTS_ANNOTATION}`, `{TRANSITIVE_ENDPOINTS_ANNOTATION}`, \
                 `{BOOT_SECONDS_ANNOTATION}`, \
                 `{DRAIN_DELAY_ANNOTATION}`, `{IGNORE_PREFIX}RULE`"
            )),
        }
    }
    (facts, problems)
}

/// Whether a command-line `contract` describes `container` of `object`: its `service` names the
/// container, the workload, or the pod's `app.kubernetes.io/name` or `app` label; a contract
/// without a service name applies to every container.
pub(crate) fn contract_applies(
    contract: &Contract,
    object: &Object<'_>,
    labels: &[(String, String)],
    container: &str,
) -> bool {
    match contract.service.as_deref() {
        None => true,
        Some(service) => {
            service == container
                || service == object.name
                || labels.iter().any(|(key, value)| {
                    (key == "app.kubernetes.io/name" || key == "app") && value == service
                })
        }
    }
}

impl Facts<'_> {
    /// The contract describing `container` of `object`: the inline one first, then the first
    /// command-line contract whose `service` names the container, the workload, or its
    /// `app.kubernetes.io/name` or `app` label (a contract without a service name applies to
    /// every container).
    pub(crate) fn contract_for(
        &self,
        object: &Object<'_>,
        labels: &[(String, String)],
        container: &str,
    ) -> Option<&Contract> {
        if let Some(contract) = &self.inline_contract {
            return Some(contract);
        }
        self.contracts
            .iter()
            .copied()
            .find(|contract| contract_applies(contract, object, labels, container))
    }

    /// Why the endpoint `handler` calls depends on something outside the process, if it does.
    pub(crate) fn dependency_reason(
        &self,
        handler: &Handler,
        contract: Option<&Contract>,
    ) -> Option<String> {
        if let Some(listed) = listed_endpoint(&self.dependency_endpoints, handler) {
            return Some(format!(
                "`{listed}` is listed in `{DEPENDENCY_ENDPOINTS_ANNOTATION}`"
            ));
        }
        match handler {
            Handler::Http { path, .. } => {
                let endpoint = contract?.endpoint_for_path(path)?;
                endpoint.checks_dependencies.then(|| {
                    format!(
                        "the contract says `{}` ({} endpoint) checks {}",
                        endpoint.path,
                        endpoint.probe,
                        list(&endpoint.checks)
                    )
                })
            }
            Handler::Grpc { service, .. } => {
                let endpoint = contract?
                    .endpoints
                    .iter()
                    .find(|endpoint| endpoint.grpc_service.as_deref() == Some(service.as_str()))?;
                endpoint.checks_dependencies.then(|| {
                    format!(
                        "the contract says gRPC service \"{service}\" ({} endpoint) checks {}",
                        endpoint.probe,
                        list(&endpoint.checks)
                    )
                })
            }
            _ => None,
        }
    }

    /// Why the endpoint `handler` calls answers with another service's health, if the
    /// annotation or the contract says it does.
    pub(crate) fn transitive_reason(
        &self,
        handler: &Handler,
        contract: Option<&Contract>,
    ) -> Option<String> {
        if let Some(listed) = listed_endpoint(&self.transitive_endpoints, handler) {
            return Some(format!(
                "`{listed}` is listed in `{TRANSITIVE_ENDPOINTS_ANNOTATION}`"
            ));
        }
        let contract = contract?;
        let endpoint = endpoint_for(handler, contract)?;
        let calls: Vec<&str> = endpoint
            .checks
            .iter()
            .filter(|name| {
                contract
                    .check(name)
                    .is_some_and(|check| check.calls_health_endpoint)
            })
            .map(String::as_str)
            .collect();
        (!calls.is_empty()).then(|| {
            format!(
                "the contract says its check{} {} call{} another service's health endpoint",
                if calls.len() == 1 { "" } else { "s" },
                calls
                    .iter()
                    .map(|name| format!("`{name}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                if calls.len() == 1 { "s" } else { "" }
            )
        })
    }

    /// What the endpoint `handler` calls waits on, per the contract, with the endpoint's path.
    pub(crate) fn waits_on<'c>(
        &self,
        handler: &Handler,
        contract: Option<&'c Contract>,
    ) -> Option<(&'c str, &'c [String])> {
        let contract = contract?;
        let endpoint = endpoint_for(handler, contract)?;
        let waits = endpoint.waits_on.as_slice();
        (!waits.is_empty()).then_some((endpoint.path.as_str(), waits))
    }

    /// Whether the annotation lists the endpoint (the probe then reaches dependencies on each
    /// request).
    pub(crate) fn listed_as_dependency_endpoint(&self, handler: &Handler) -> bool {
        self.dependency_reason(handler, None).is_some()
    }

    /// The worst boot time in seconds: the annotation, else the contract.
    pub(crate) fn boot_seconds(&self, contract: Option<&Contract>) -> Option<(f64, &'static str)> {
        if let Some(seconds) = self.boot_seconds {
            return Some((seconds, BOOT_SECONDS_ANNOTATION));
        }
        contract?.startup.expected_boot_ms.map(|ms| {
            (
                ms as f64 / 1000.0,
                "the contract's `startup.expected_boot_ms`",
            )
        })
    }

    /// The drain after SIGTERM: the annotation, else the contract.
    pub(crate) fn drain(&self, contract: Option<&Contract>) -> Option<Drain> {
        if let Some(delay) = self.drain_delay_seconds {
            return Some(Drain {
                delay,
                in_flight: 0.0,
                from_contract: false,
                propagation: None,
                derived_from: None,
            });
        }
        let contract = contract?;
        let shutdown = &contract.shutdown;
        let derivation = shutdown.drain_delay_derivation;
        Some(Drain {
            delay: shutdown.drain_delay_ms as f64 / 1000.0,
            in_flight: shutdown.in_flight_deadline_ms.unwrap_or(0) as f64 / 1000.0,
            from_contract: true,
            propagation: derivation
                .map(|derivation| derivation.load_balancer_reaction_ms as f64 / 1000.0),
            derived_from: derivation.map(|derivation| {
                (
                    derivation.readiness_period_ms as f64 / 1000.0,
                    u64::from(derivation.readiness_failure_threshold),
                )
            }),
        })
    }
}

/// The entry of an endpoint list (`/readyz`, `grpc:readiness`) that `handler` calls: an HTTP path
/// matches itself and its sub-paths.
fn listed_endpoint<'l>(endpoints: &'l [String], handler: &Handler) -> Option<&'l str> {
    match handler {
        Handler::Http { path, .. } => {
            let bare = path.split('?').next().unwrap_or(path);
            endpoints
                .iter()
                .find(|listed| {
                    bare == listed.as_str()
                        || bare
                            .strip_prefix(listed.as_str())
                            .is_some_and(|rest| rest.starts_with('/'))
                })
                .map(String::as_str)
        }
        Handler::Grpc { service, .. } => endpoints
            .iter()
            .find(|listed| listed.strip_prefix("grpc:") == Some(service.as_str()))
            .map(String::as_str),
        _ => None,
    }
}

/// The contract's endpoint a probe handler calls: by HTTP path, or by gRPC service name.
fn endpoint_for<'c>(handler: &Handler, contract: &'c Contract) -> Option<&'c EndpointContract> {
    match handler {
        Handler::Http { path, .. } => contract.endpoint_for_path(path),
        Handler::Grpc { service, .. } => contract
            .endpoints
            .iter()
            .find(|endpoint| endpoint.grpc_service.as_deref() == Some(service.as_str())),
        _ => None,
    }
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "dependencies".to_owned()
    } else {
        names
            .iter()
            .map(|name| format!("`{name}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The rule every annotation problem is reported under.
pub(crate) const PROBLEM_RULE: &crate::rules::Rule = &catalogue::INVALID_ANNOTATION;
