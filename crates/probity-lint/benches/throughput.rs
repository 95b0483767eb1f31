//! Lint throughput on a generated corpus of 10,000 workload documents (Deployments,
//! StatefulSets, DaemonSets and Jobs with realistic probes, some of them wrong), parsed from text
//! each iteration. Throughput is reported in documents per second; the target is 10,000/s, with
//! the report written in every output format (`10k-workloads-human`, `-json`, `-sarif`).
//! `10k-workloads-parse-only` shows the share that is YAML parsing.
//!
//! ```sh
//! cargo bench -p probity-lint --bench throughput
//! ```

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use probity_lint::output::{self, Style};
use probity_lint::{Format, Options, Source, lint};
use std::fmt::Write as _;
use std::hint::black_box;

const WORKLOADS: usize = 10_000;

fn workload(index: usize) -> String {
    let kind = match index % 10 {
        0..=6 => "Deployment",
        7 => "StatefulSet",
        8 => "DaemonSet",
        _ => "Job",
    };
    let api = if kind == "Job" { "batch/v1" } else { "apps/v1" };
    let replicas = if matches!(kind, "DaemonSet" | "Job") {
        String::new()
    } else {
        format!("  replicas: {}\n", 1 + index % 12)
    };
    // A quarter share one endpoint between probes, some mistype a field, some time out badly.
    let readiness_path = if index.is_multiple_of(4) {
        "/health"
    } else {
        "/readyz"
    };
    let typo = if index.is_multiple_of(13) {
        "initialDelaySecond"
    } else {
        "initialDelaySeconds"
    };
    let timeout = if index.is_multiple_of(17) { 10 } else { 1 };
    format!(
        "---\n# Source: fleet/templates/{kind}-{index}.yaml\napiVersion: {api}\nkind: {kind}\n\
         metadata:\n  name: svc-{index}\n  namespace: team-{team}\n  labels:\n    app.kubernetes.io/name: svc-{index}\n\
         spec:\n{replicas}  selector:\n    matchLabels:\n      app.kubernetes.io/name: svc-{index}\n\
         \x20 template:\n    metadata:\n      labels:\n        app.kubernetes.io/name: svc-{index}\n        tier: web\n\
         \x20   spec:\n      terminationGracePeriodSeconds: 45\n      containers:\n\
         \x20     - name: app\n        image: \"registry.example.com/svc-{index}:1.{index}\"\n\
         \x20       ports:\n          - name: http\n            containerPort: 8080\n          - name: admin\n            containerPort: 9090\n\
         \x20       resources:\n          requests: {{cpu: 100m, memory: 128Mi}}\n\
         \x20       startupProbe:\n          httpGet: {{path: /livez, port: http}}\n          periodSeconds: 5\n          failureThreshold: 30\n\
         \x20       livenessProbe:\n          httpGet: {{path: /livez, port: http}}\n          {typo}: 0\n          timeoutSeconds: {timeout}\n\
         \x20       readinessProbe:\n          httpGet: {{path: {readiness_path}, port: 8080}}\n          periodSeconds: 5\n          failureThreshold: 2\n\
         \x20       lifecycle:\n          preStop:\n            sleep: {{seconds: 10}}\n\
         \x20     - name: proxy\n        image: envoy:1.30\n        readinessProbe:\n          tcpSocket: {{port: 15001}}\n",
        team = index % 50,
    )
}

fn supporting_objects(index: usize) -> String {
    format!(
        "---\napiVersion: v1\nkind: Service\nmetadata: {{name: svc-{index}, namespace: team-{team}}}\n\
         spec:\n  selector: {{app.kubernetes.io/name: svc-{index}}}\n  ports: [{{port: 80, targetPort: http}}]\n\
         ---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: svc-{index}, namespace: team-{team}}}\n\
         spec:\n  maxUnavailable: 1\n  selector:\n    matchLabels: {{app.kubernetes.io/name: svc-{index}}}\n",
        team = index % 50,
    )
}

fn corpus(with_services: bool) -> Vec<Source> {
    // Spread over files of 100 documents, as a repository of manifests would be.
    (0..WORKLOADS / 100)
        .map(|file| {
            let mut text = String::new();
            for index in file * 100..(file + 1) * 100 {
                text.push_str(&workload(index));
                if with_services && index.is_multiple_of(5) {
                    let _ = write!(text, "{}", supporting_objects(index));
                }
            }
            Source::new(format!("manifests/{file:03}.yaml"), text)
        })
        .collect()
}

fn throughput(c: &mut Criterion) {
    let options = Options::default();
    let mut group = c.benchmark_group("lint");
    group.throughput(Throughput::Elements(WORKLOADS as u64));
    group.sample_size(20);

    let workloads_only = corpus(false);
    let report = lint(&workloads_only, &options);
    assert_eq!(report.unreadable, 0);
    assert_eq!(report.objects, WORKLOADS);
    assert!(!report.findings.is_empty());
    group.bench_function("10k-workloads-parse-only", |b| {
        b.iter(|| {
            for source in &workloads_only {
                probity_lint::yaml::parse_stream(black_box(&source.text), |parsed| {
                    black_box(parsed);
                });
            }
        })
    });
    group.bench_function("10k-workloads", |b| {
        b.iter(|| lint(black_box(&workloads_only), &options))
    });
    // Lint and write the report, in each format: what `probity lint --format F` does.
    for (name, format) in [
        ("10k-workloads-human", Format::Human),
        ("10k-workloads-json", Format::Json),
        ("10k-workloads-sarif", Format::Sarif),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let report = lint(black_box(&workloads_only), &options);
                let mut sink = std::io::sink();
                output::write(
                    &report,
                    &workloads_only,
                    format,
                    Style::default(),
                    &mut sink,
                )
                .expect("writing to a sink cannot fail");
                report.findings.len()
            })
        });
    }

    // Every fifth workload also gets a Service and a PodDisruptionBudget: 12,000 documents.
    let with_services = corpus(true);
    let documents = lint(&with_services, &options);
    assert_eq!(documents.objects, WORKLOADS + 2 * WORKLOADS / 5);
    group.throughput(Throughput::Elements(documents.objects as u64));
    group.bench_function("10k-workloads-with-2k-services-and-budgets", |b| {
        b.iter(|| lint(black_box(&with_services), &options))
    });
    group.finish();
}

criterion_group!(benches, throughput);
criterion_main!(benches);
