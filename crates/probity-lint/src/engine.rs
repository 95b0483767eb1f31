//! The linter: inputs → documents → objects → findings, suppressions applied.

use crate::facts::{self, Suppression};
use crate::finding::{Finding, InputError, Report};
use crate::model::{self, Body, Object, Read};
use crate::rules::{self, Rule};
use crate::source::Source;
use crate::yaml::{self, Node, Position};
use probity::contract::Contract;

/// What the linter needs beyond the manifests.
#[derive(Debug, Clone)]
pub struct Options {
    /// Service contracts (`--contract FILE`), matched to containers by the contract's `service`
    /// name (see `docs/lint-rules.md`).
    pub contracts: Vec<Contract>,
    /// Health-check requests per second across a workload's replicas above which `probe-load`
    /// fires.
    pub max_probe_rps: f64,
    /// Health-check requests per second reaching dependencies above which `probe-load` fires.
    pub max_dependency_rps: f64,
}

/// Default for [`Options::max_probe_rps`]: seed 003's 2000-pod fleet (2000 requests/s) is over.
pub const DEFAULT_MAX_PROBE_RPS: f64 = 1000.0;
/// Default for [`Options::max_dependency_rps`]: seed 003's 50 pods probing a deep check every
/// 2 s (25 queries/s to the database) is over.
pub const DEFAULT_MAX_DEPENDENCY_RPS: f64 = 20.0;

impl Default for Options {
    fn default() -> Self {
        Self {
            contracts: Vec::new(),
            max_probe_rps: DEFAULT_MAX_PROBE_RPS,
            max_dependency_rps: DEFAULT_MAX_DEPENDENCY_RPS,
        }
    }
}

/// `List`s nest at most this deep.
const MAX_LIST_DEPTH: usize = 8;

/// Lints every document of every source.
pub fn lint(sources: &[Source], options: &Options) -> Report {
    let mut report = Report::default();
    let parsed: Vec<Vec<yaml::Document>> = parse_all(sources)
        .into_iter()
        .zip(sources)
        .map(|(parsed, source)| match parsed {
            Ok(documents) => documents,
            Err(error) => {
                report.errors.push(InputError {
                    file: source.name.clone(),
                    line: error.line,
                    column: error.column,
                    message: format!("invalid YAML: {}", error.message),
                });
                Vec::new()
            }
        })
        .collect();

    let mut objects = Vec::new();
    for (index, documents) in parsed.iter().enumerate() {
        for root in documents
            .iter()
            .filter_map(|document| document.root.as_ref())
        {
            collect(sources, index, root, 0, &mut objects, &mut report);
        }
    }
    report.objects = objects.len();

    let mut cx = Cx {
        sources,
        options,
        findings: Vec::new(),
    };
    let mut all_facts = Vec::with_capacity(objects.len());
    let mut suppressions = Vec::with_capacity(objects.len());
    for (index, object) in objects.iter().enumerate() {
        let (facts, object_suppressions, problems) =
            facts::read_annotations(object, &options.contracts);
        for problem in problems {
            cx.report(
                index,
                object,
                facts::PROBLEM_RULE,
                problem.position,
                None,
                problem.message,
            );
        }
        all_facts.push(facts);
        suppressions.push(object_suppressions);
    }

    let service_names: Vec<&str> = objects
        .iter()
        .filter(|object| matches!(object.body, Body::Service(_)))
        .map(|object| object.name.as_str())
        .collect();
    for (index, object) in objects.iter().enumerate() {
        rules::api::check(&mut cx, index, object);
        if let Body::Workload(workload) = &object.body
            && let Some(pod) = &workload.pod
        {
            let facts = &all_facts[index];
            rules::probes::check(&mut cx, index, object, workload, pod, facts, &service_names);
            rules::termination::check(&mut cx, index, object, workload, pod, facts);
        }
    }
    rules::fleet::check(&mut cx, &objects, &all_facts);
    report.unmatched_contracts = unmatched_contracts(&options.contracts, &objects);

    let Cx { findings, .. } = cx;
    let mut kept: Vec<(usize, Finding)> = Vec::with_capacity(findings.len());
    for (index, finding) in findings {
        if is_suppressed(&suppressions[index], &finding) {
            report.suppressed += 1;
        } else {
            kept.push((objects[index].source, finding));
        }
    }
    kept.sort_by(|(a_source, a), (b_source, b)| {
        (a_source, a.line, a.column, a.rule, &a.container, &a.message).cmp(&(
            b_source,
            b.line,
            b.column,
            b.rule,
            &b.container,
            &b.message,
        ))
    });
    kept.dedup_by(|(_, a), (_, b)| a == b);
    report.findings = kept.into_iter().map(|(_, finding)| finding).collect();
    report
}

/// The contracts that describe no container of any workload in `objects`.
fn unmatched_contracts(contracts: &[Contract], objects: &[Object<'_>]) -> Vec<usize> {
    let applies_somewhere = |contract: &Contract| {
        objects.iter().any(|object| match &object.body {
            Body::Workload(workload) => workload.pod.as_ref().is_some_and(|pod| {
                pod.probed().any(|container| {
                    facts::contract_applies(contract, object, &workload.pod_labels, &container.name)
                })
            }),
            _ => false,
        })
    };
    contracts
        .iter()
        .enumerate()
        .filter(|(_, contract)| !applies_somewhere(contract))
        .map(|(index, _)| index)
        .collect()
}

/// Inputs smaller than this together are parsed on the calling thread.
const PARALLEL_PARSE_BYTES: usize = 256 * 1024;

/// Parses every source, on several threads when there is enough text to be worth it (parsing is
/// most of the linter's time, and sources are independent).
fn parse_all(sources: &[Source]) -> Vec<Result<Vec<yaml::Document>, yaml::YamlError>> {
    let total: usize = sources.iter().map(|source| source.text.len()).sum();
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(sources.len());
    if threads <= 1 || total < PARALLEL_PARSE_BYTES {
        return sources
            .iter()
            .map(|source| yaml::parse_documents(&source.text))
            .collect();
    }
    let chunk = sources.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = sources
            .chunks(chunk)
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .iter()
                        .map(|source| yaml::parse_documents(&source.text))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut parsed = Vec::with_capacity(sources.len());
        for handle in handles {
            match handle.join() {
                Ok(results) => parsed.extend(results),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        parsed
    })
}

fn is_suppressed(suppressions: &[Suppression], finding: &Finding) -> bool {
    // A broken suppression cannot suppress its own report.
    finding.rule != facts::PROBLEM_RULE.id
        && suppressions
            .iter()
            .any(|suppression| suppression.rule == finding.rule)
}

fn collect<'a>(
    sources: &[Source],
    source: usize,
    root: &'a Node,
    depth: usize,
    objects: &mut Vec<Object<'a>>,
    report: &mut Report,
) {
    let error = |report: &mut Report, position: Position, message: String| {
        report.errors.push(InputError {
            file: sources[source].name.clone(),
            line: position.line,
            column: position.column,
            message,
        });
    };
    match model::read_object(source, root) {
        Ok(Read::Object(object)) => objects.push(*object),
        Ok(Read::List(items)) if depth < MAX_LIST_DEPTH => {
            for item in items {
                collect(sources, source, item, depth + 1, objects, report);
            }
        }
        Ok(Read::List(_)) => error(
            report,
            root.position,
            format!("`List` nested more than {MAX_LIST_DEPTH} deep"),
        ),
        Ok(Read::Skipped) => report.skipped += 1,
        Err(not_an_object) => error(report, not_an_object.position, not_an_object.message),
    }
}

/// The state checks report into.
pub(crate) struct Cx<'a> {
    sources: &'a [Source],
    pub(crate) options: &'a Options,
    findings: Vec<(usize, Finding)>,
}

impl Cx<'_> {
    /// Reports `rule` broken at `position` of object number `index`.
    pub(crate) fn report(
        &mut self,
        index: usize,
        object: &Object<'_>,
        rule: &'static Rule,
        position: Position,
        container: Option<&str>,
        message: impl Into<String>,
    ) {
        self.findings.push((
            index,
            Finding {
                rule: rule.id,
                severity: rule.severity,
                file: self.sources[object.source].name.clone(),
                line: position.line,
                column: position.column,
                kind: object.kind.as_str().to_owned(),
                name: object.name.clone(),
                namespace: object.namespace.clone(),
                container: container.map(str::to_owned),
                message: message.into(),
                fix: rule.fix,
            },
        ));
    }
}
