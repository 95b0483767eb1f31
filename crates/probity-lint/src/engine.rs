//! The linter: inputs → documents → objects → findings, suppressions applied.
//!
//! Each input is parsed one document at a time: a document's tree lives only while its objects
//! are judged, and what the cross-object rules need (labels, selectors, replica counts, probe
//! rates) is kept as a small [`summary`](crate::summary). Memory therefore grows with the number
//! of objects, not with the size of their YAML, and time is linear in the input.

use crate::context::Cx;
use crate::facts;
use crate::finding::{Finding, Report, SkippedDocument};
use crate::model::{self, Body, Object, Read};
use crate::options::Options;
use crate::rules::{self, catalogue};
use crate::source::Source;
use crate::summary::{self, Summaries};
use crate::yaml::{self, DuplicateKey, Node, Parsed};
use std::sync::Arc;

/// `List`s nest at most this deep.
const MAX_LIST_DEPTH: usize = 8;

/// Lints every document of every source.
pub fn lint(sources: &[Source], options: &Options) -> Report {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    lint_on(sources, options, threads)
}

/// Lints on at most `threads` threads.
fn lint_on(sources: &[Source], options: &Options, threads: usize) -> Report {
    let names: Vec<Arc<str>> = sources
        .iter()
        .map(|source| Arc::from(source.name.as_str()))
        .collect();
    let partials = lint_sources(sources, &names, options, threads);

    let mut report = Report::default();
    let mut cx = Cx::new(&names, (0, sources), options);
    let mut summaries = Summaries::default();
    let mut contract_used = vec![false; options.contracts.len()];
    for partial in partials {
        cx.findings.extend(partial.findings);
        cx.suppressed += partial.suppressed;
        report.objects += partial.objects;
        report.unreadable += partial.unreadable;
        report.skipped.extend(partial.skipped);
        summaries.extend(partial.summaries);
        for (used, partial_used) in contract_used.iter_mut().zip(partial.contract_used) {
            *used |= partial_used;
        }
    }
    rules::fleet::check(&mut cx, &summaries);
    report.unmatched_contracts = contract_used
        .iter()
        .enumerate()
        .filter(|(_, used)| !**used)
        .map(|(index, _)| index)
        .collect();
    report.suppressed = cx.suppressed;
    let mut findings = cx.findings;
    findings.sort_by(|(a_source, a), (b_source, b)| {
        (a_source, a.line, a.column, a.rule, &a.container, &a.message).cmp(&(
            b_source,
            b.line,
            b.column,
            b.rule,
            &b.container,
            &b.message,
        ))
    });
    findings.dedup_by(|(_, a), (_, b)| a == b);
    report.findings = findings.into_iter().map(|(_, finding)| finding).collect();
    report
}

/// What one input contributes to the report.
#[derive(Default)]
struct Partial {
    findings: Vec<(usize, Finding)>,
    suppressed: usize,
    objects: usize,
    unreadable: usize,
    skipped: Vec<SkippedDocument>,
    summaries: Summaries,
    contract_used: Vec<bool>,
}

/// Inputs smaller than this together are linted on the calling thread.
const PARALLEL_BYTES: usize = 256 * 1024;

/// An input larger than this is cut at document boundaries into one piece per thread.
const SPLIT_BYTES: usize = 1024 * 1024;

/// A part of one source that is linted on its own: a whole input, or a run of its documents.
#[derive(Clone)]
struct Piece {
    source: usize,
    origin: yaml::Origin,
    range: std::ops::Range<usize>,
}

/// Lints each source on its own (the per-object rules), on several threads when there is
/// enough text to be worth it; results come back in source order. A large input is cut at
/// document boundaries so that its documents are read in parallel too.
fn lint_sources(
    sources: &[Source],
    names: &[Arc<str>],
    options: &Options,
    threads: usize,
) -> Vec<Partial> {
    let total: usize = sources.iter().map(|source| source.text.len()).sum();
    let parallel = threads > 1 && total >= PARALLEL_BYTES;
    let mut pieces = Vec::new();
    for (index, source) in sources.iter().enumerate() {
        let parts = if parallel && source.text.len() > SPLIT_BYTES {
            yaml::split_documents(&source.text, threads)
        } else {
            vec![(yaml::Origin::default(), 0..source.text.len())]
        };
        pieces.extend(parts.into_iter().map(|(origin, range)| Piece {
            source: index,
            origin,
            range,
        }));
    }
    let lint_all = |group: &[Piece]| -> Vec<Partial> {
        group
            .iter()
            .map(|piece| lint_piece(piece, &sources[piece.source], names, options))
            .collect()
    };
    if !parallel || pieces.len() <= 1 {
        return lint_all(&pieces);
    }
    // Contiguous groups of about equal size in bytes, so one large piece does not leave the
    // other threads idle behind many small ones.
    let share = total.div_ceil(threads);
    let mut groups: Vec<&[Piece]> = Vec::new();
    let mut start = 0;
    let mut bytes = 0;
    for (index, piece) in pieces.iter().enumerate() {
        bytes += piece.range.len();
        if bytes >= share || index + 1 == pieces.len() {
            groups.push(&pieces[start..=index]);
            start = index + 1;
            bytes = 0;
        }
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = groups
            .into_iter()
            .map(|group| scope.spawn(move || lint_all(group)))
            .collect();
        let mut partials = Vec::with_capacity(pieces.len());
        for handle in handles {
            match handle.join() {
                Ok(results) => partials.extend(results),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        partials
    })
}

/// Parses one piece of a source document by document and judges each object as it is read.
fn lint_piece(piece: &Piece, source: &Source, names: &[Arc<str>], options: &Options) -> Partial {
    let index = piece.source;
    let mut cx = Cx::new(names, (index, std::slice::from_ref(source)), options);
    let mut partial = Partial {
        contract_used: vec![false; options.contracts.len()],
        ..Partial::default()
    };
    let text = &source.text[piece.range.clone()];
    yaml::parse_stream_at(text, piece.origin, |parsed| match parsed {
        Parsed::Invalid(error) => {
            partial.unreadable += 1;
            cx.report_document(
                index,
                &catalogue::INVALID_YAML,
                error.position(),
                format!(
                    "{}; this document is not judged (the rest of the input is)",
                    error.message
                ),
                None,
            );
        }
        Parsed::Document(document) => {
            let Some(root) = &document.root else { return };
            let mut objects = Vec::new();
            let skipped_before = partial.skipped.len();
            collect(&mut cx, &mut partial, index, root, 0, &mut objects);
            for object in &mut objects {
                object.suppressions = facts::suppressions(object);
            }
            // A document that is one object of a kind not judged (a ConfigMap) still names it.
            let skipped = match &partial.skipped[skipped_before..] {
                [only] if objects.is_empty() => Some((only.kind.as_str(), only.name.as_str())),
                _ => None,
            };
            report_duplicates(&mut cx, index, &document.duplicate_keys, &objects, skipped);
            for object in &objects {
                judge(&mut cx, &mut partial, object, options);
            }
        }
    });
    partial.findings = cx.findings;
    partial.suppressed = cx.suppressed;
    partial
}

/// Reads `root` (a document, or a `List` item) into objects.
fn collect<'a>(
    cx: &mut Cx<'_>,
    partial: &mut Partial,
    source: usize,
    root: &'a Node,
    depth: usize,
    objects: &mut Vec<Object<'a>>,
) {
    match model::read_object(source, root) {
        Ok(Read::Object(object)) => objects.push(*object),
        Ok(Read::List(items)) if depth < MAX_LIST_DEPTH => {
            for item in items {
                collect(cx, partial, source, item, depth + 1, objects);
            }
        }
        Ok(Read::List(_)) => {
            partial.unreadable += 1;
            cx.report_document(
                source,
                &catalogue::NOT_A_KUBERNETES_OBJECT,
                root.position,
                format!("`List` nested more than {MAX_LIST_DEPTH} deep; its items are not judged"),
                None,
            );
        }
        Ok(Read::Skipped(skipped)) => partial.skipped.push(SkippedDocument {
            file: cx.file(source),
            line: skipped.position.line,
            kind: skipped.kind,
            name: skipped.name,
        }),
        Err(not_an_object) => {
            partial.unreadable += 1;
            cx.report_document(
                source,
                &catalogue::NOT_A_KUBERNETES_OBJECT,
                not_an_object.position,
                not_an_object.message,
                None,
            );
        }
    }
}

/// Reports each repeated key against the object it was written in (or the document, when it is
/// in no object the linter reads).
fn report_duplicates(
    cx: &mut Cx<'_>,
    source: usize,
    duplicates: &[DuplicateKey],
    objects: &[Object<'_>],
    skipped: Option<(&str, &str)>,
) {
    for duplicate in duplicates {
        let message = format!(
            "`{}` is set twice in this mapping (first on line {}): the API server keeps the \
             last value with only a warning, and strict tools refuse the document",
            duplicate.key, duplicate.first.line
        );
        let autofix = rules::fixes::remove_duplicate(cx, source, duplicate);
        let owner = objects.iter().find(|object| {
            let span = object.root.span();
            span.contains(&duplicate.repeated.offset)
        });
        match owner {
            Some(object) => cx.report_with_fix(
                object,
                &catalogue::DUPLICATE_KEY,
                duplicate.repeated,
                None,
                message,
                autofix,
            ),
            None => {
                let at = cx.findings.len();
                cx.report_document(
                    source,
                    &catalogue::DUPLICATE_KEY,
                    duplicate.repeated,
                    message,
                    autofix,
                );
                if let (Some((kind, name)), Some((_, finding))) = (skipped, cx.findings.get_mut(at))
                {
                    kind.clone_into(&mut finding.kind);
                    name.clone_into(&mut finding.name);
                }
            }
        }
    }
}

/// Applies every per-object rule to `object` and keeps its summary for the cross-object rules.
fn judge(cx: &mut Cx<'_>, partial: &mut Partial, object: &Object<'_>, options: &Options) {
    partial.objects += 1;
    let (facts, problems) = facts::read_annotations(object, &options.contracts);
    for problem in problems {
        cx.report(
            object,
            facts::PROBLEM_RULE,
            problem.position,
            None,
            problem.message,
        );
    }
    rules::api::check(cx, object);
    if let Body::Workload(workload) = &object.body
        && let Some(pod) = &workload.pod
    {
        rules::probes::check(cx, object, workload, pod, &facts);
        rules::termination::check(cx, object, workload, pod, &facts);
        rules::sidecars::check(cx, object, workload, pod, &facts);
        rules::mesh::check(cx, object, workload, pod);
        for (index, contract) in options.contracts.iter().enumerate() {
            if !partial.contract_used[index]
                && pod.probed().any(|container| {
                    facts::contract_applies(contract, object, &workload.pod_labels, &container.name)
                })
            {
                partial.contract_used[index] = true;
            }
        }
    }
    summary::summarise(&mut partial.summaries, object, &facts);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_input_cut_into_pieces_gives_the_same_report() {
        let mut text = String::new();
        let mut index = 0;
        while text.len() < SPLIT_BYTES + SPLIT_BYTES / 4 {
            text.push_str(&format!(
                "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-{index}\n  \
                 labels: {{a: 1, a: 2}}\nspec:\n  replicas: 3\n  template:\n    metadata:\n      \
                 labels: {{app: app-{index}}}\n    spec:\n      containers:\n      - name: app\n        \
                 livenessProbe: {{httpGet: {{path: /health, port: 8080}}, timeoutSeconds: 10}}\n        \
                 readinessProbe: {{httpGet: {{path: /health, port: 8080}}}}\n---\napiVersion: v1\n\
                 kind: Service\nmetadata: {{name: app-{index}}}\nspec: {{selector: {{app: app-{index}}}}}\n"
            ));
            if index % 97 == 0 {
                text.push_str("---\nbroken: [\n");
            }
            index += 1;
        }
        let sources = [
            Source::new("small.yaml", "kind: [\n"),
            Source::new("large.yaml", text),
        ];
        let options = Options::default();
        let one = lint_on(&sources, &options, 1);
        let four = lint_on(&sources, &options, 4);
        assert!(one.findings.len() > 1000, "{}", one.findings.len());
        assert_eq!(one, four);
    }
}
