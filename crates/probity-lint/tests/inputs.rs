//! Inputs the linter must survive: malformed YAML, documents that are not Kubernetes objects,
//! kinds it does not judge, Helm output, `List`s — each an error naming file and line, or
//! skipped, and never a panic.

use probity_lint::contract::Contract;
use probity_lint::{Options, Report, Source, lint};
use std::path::Path;

fn run(name: &str, text: &str) -> Report {
    lint(&[Source::new(name, text)], &Options::default())
}

const GOOD_POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: good}\nspec:\n  containers:\n  - name: app\n    image: a\n    livenessProbe:\n      httpGet: {path: /livez, port: 8080}\n      timeoutSeconds: 10\n";

fn rules_at(report: &Report) -> Vec<(&str, usize)> {
    report
        .findings
        .iter()
        .map(|finding| (finding.rule, finding.line))
        .collect()
}

#[test]
fn malformed_yaml_is_a_finding_with_file_and_line_and_other_inputs_are_still_linted() {
    let sources = [
        Source::new(
            "broken.yaml",
            "apiVersion: v1\nkind: Pod\nspec:\n  containers: [\n    {name: a\n",
        ),
        Source::new("good.yaml", GOOD_POD),
    ];
    let report = lint(&sources, &Options::default());
    assert_eq!(report.findings.len(), 2, "{:?}", report.findings);
    let error = &report.findings[0];
    assert_eq!((&*error.file, error.rule), ("broken.yaml", "invalid-yaml"));
    assert!(error.line >= 4, "{error:?}");
    assert_eq!(report.unreadable, 1);
    assert_eq!(&*report.findings[1].file, "good.yaml");
    assert!(!report.nothing_read());
}

#[test]
fn one_broken_document_does_not_hide_the_others_of_its_file() {
    let text =
        format!("{GOOD_POD}---\napiVersion: v1\nkind: Pod\nmetadata: {{name: [\n---\n{GOOD_POD}");
    let report = run("stream.yaml", &text);
    assert_eq!(
        rules_at(&report),
        [
            ("timeout-not-below-period", 10),
            ("invalid-yaml", 14),
            ("timeout-not-below-period", 25)
        ]
    );
    assert_eq!(report.objects, 2);
}

#[test]
fn a_file_that_is_all_broken_reads_nothing() {
    let report = run("broken.yaml", "kind: [\n");
    assert!(report.nothing_read());
}

#[test]
fn a_bad_indentation_names_its_line() {
    let report = run(
        "indent.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n labels: {}\n",
    );
    assert_eq!(rules_at(&report), [("invalid-yaml", 5)]);
}

#[test]
fn duplicate_keys_are_findings_and_the_last_value_is_judged() {
    let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - name: app\n    image: a\n    livenessProbe:\n      httpGet: {path: /livez, port: 8080}\n      timeoutSeconds: 10\n      timeoutSeconds: 1\n";
    let report = run("dup.yaml", text);
    assert_eq!(rules_at(&report), [("duplicate-key", 11)]);
    let finding = &report.findings[0];
    assert_eq!((finding.kind.as_str(), finding.name.as_str()), ("Pod", "x"));
    assert!(
        finding.message.contains("`timeoutSeconds`"),
        "{}",
        finding.message
    );
    assert!(finding.message.contains("line 10"), "{}", finding.message);
}

#[test]
fn a_repeated_configmap_key_does_not_stop_the_workloads_of_the_file() {
    let text = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: carts}}\ndata:\n  CARTS_DYNAMODB_CREATETABLE: \"true\"\n  CARTS_DYNAMODB_CREATETABLE: \"false\"\n---\n{GOOD_POD}"
    );
    let report = run("chart.yaml", &text);
    assert_eq!(
        rules_at(&report),
        [("duplicate-key", 6), ("timeout-not-below-period", 17)]
    );
    // The ConfigMap is not judged, but the finding still names it.
    assert_eq!(
        (
            report.findings[0].kind.as_str(),
            report.findings[0].name.as_str()
        ),
        ("ConfigMap", "carts")
    );
    assert_eq!(report.skipped.len(), 1);
}

#[test]
fn documents_that_are_not_kubernetes_objects_are_findings_with_their_line() {
    let text = "- just\n- a list\n---\nname: no kind here\n---\nkind: Pod\nmetadata: {name: x}\n---\napiVersion: v1\nkind: 5\n---\nplain scalar\n";
    let report = run("values.yaml", text);
    let found: Vec<(usize, &str, &str)> = report
        .findings
        .iter()
        .map(|finding| (finding.line, finding.rule, finding.message.as_str()))
        .collect();
    assert_eq!(found.len(), 5, "{found:?}");
    assert!(
        found
            .iter()
            .all(|(_, rule, _)| *rule == "not-a-kubernetes-object")
    );
    assert_eq!(found[0].0, 1);
    assert!(found[0].2.contains("a list"), "{found:?}");
    assert_eq!(found[1].0, 4);
    assert!(found[1].2.contains("no `kind`"), "{found:?}");
    assert_eq!(found[2].0, 6);
    assert!(found[2].2.contains("no `apiVersion`"), "{found:?}");
    assert_eq!(found[3].0, 10);
    assert!(found[3].2.contains("`kind` is an integer"), "{found:?}");
    assert_eq!(found[4].0, 12);
    assert!(report.nothing_read());
}

#[test]
fn other_kinds_and_custom_resources_are_skipped_cleanly() {
    let text = "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata: {name: checkout}\nspec:\n  groups: [{name: x, rules: [{alert: A, expr: up == 0}]}]\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n";
    let report = run("extras.yaml", text);
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    assert_eq!(
        report.skipped_kinds(),
        [("ConfigMap", 1), ("PrometheusRule", 1)]
    );
    assert_eq!(report.skipped[0].line, 2);
    assert_eq!(report.objects, 0);
    assert!(!report.nothing_read());
}

#[test]
fn helm_rendered_output_works() {
    let text = "---\n# Source: checkout/templates/service.yaml\napiVersion: v1\nkind: Service\nmetadata:\n  name: release-checkout\n  labels:\n    helm.sh/chart: checkout-0.1.0\nspec:\n  selector:\n    app.kubernetes.io/name: checkout\n  ports:\n    - port: 80\n---\n# Source: checkout/templates/empty.yaml\n---\n# Source: checkout/templates/deployment.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: release-checkout\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: checkout\n  template:\n    metadata:\n      labels:\n        app.kubernetes.io/name: checkout\n    spec:\n      containers:\n        - name: checkout\n          image: \"checkout:1\"\n          livenessProbe:\n            httpGet:\n              path: /livez\n              port: http\n          ports:\n            - name: http\n              containerPort: 8080\n";
    let report = run("rendered.yaml", text);
    assert_eq!(report.objects, 2);
    let rules: Vec<_> = report.findings.iter().map(|f| (f.rule, f.line)).collect();
    assert_eq!(rules, [("missing-readiness-probe", 33)]);
}

#[test]
fn lists_are_linted_item_by_item() {
    let text = format!(
        "apiVersion: v1\nkind: List\nitems:\n- {}\n",
        "{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: [{name: c, image: i, livenessProbe: {httpGet: {path: /l, port: 1}, timeoutSeconds: 10}}]}}"
    );
    let report = run("list.yaml", &text);
    assert_eq!(report.objects, 1);
    assert_eq!(report.findings[0].rule, "timeout-not-below-period");
    assert_eq!(report.findings[0].line, 4);
}

#[test]
fn a_suppression_with_a_reason_is_counted() {
    let text = GOOD_POD.replace(
        "metadata: {name: good}",
        "metadata: {name: good, annotations: {probity.dev/ignore-timeout-not-below-period: \"static file\"}}",
    );
    let report = run("suppressed.yaml", &text);
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    assert_eq!(report.suppressed, 1);
}

#[test]
fn a_command_line_contract_applies_by_service_name() {
    let contract = Contract::from_json(
        r#"{"version": 1, "service": "checkout",
            "endpoints": [{"probe": "readiness", "path": "/readyz", "checks": ["db"], "checks_dependencies": true}],
            "checks": [], "liveness": [], "startup": {"steps": [], "expected_boot_ms": 45000},
            "shutdown": {"drain_delay_ms": 25000, "in_flight_deadline_ms": 10000}}"#,
    )
    .unwrap();
    let pod = |name: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  containers:\n  - name: app\n    image: a\n    livenessProbe:\n      httpGet: {{path: /readyz, port: 8080}}\n"
        )
    };
    let options = Options {
        contracts: vec![contract],
        ..Options::default()
    };
    let report = lint(&[Source::new("a.yaml", pod("checkout"))], &options);
    let mut rules: Vec<_> = report.findings.iter().map(|f| f.rule).collect();
    rules.sort();
    assert_eq!(
        rules,
        [
            "grace-period-below-drain",
            "liveness-checks-dependencies",
            "startup-budget-below-boot-time"
        ]
    );
    let other = lint(&[Source::new("b.yaml", pod("payments"))], &options);
    assert!(other.findings.is_empty(), "{:?}", other.findings);
}

/// Every prefix, and every single-character deletion, of every fixture lints without a panic.
#[test]
fn damaged_manifests_never_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut texts = Vec::new();
    for folder in ["rules", "incidents"] {
        for entry in walk(&root.join(folder)) {
            texts.push(std::fs::read_to_string(entry).unwrap());
        }
    }
    assert!(texts.len() > 40);
    let mut runs = 0;
    for text in &texts {
        let boundaries: Vec<usize> = text.char_indices().map(|(index, _)| index).collect();
        for (step, &cut) in boundaries.iter().enumerate() {
            if step % 5 == 0 {
                let _ = run("prefix.yaml", &text[..cut]);
                let mut damaged = text.clone();
                damaged.remove(cut);
                let _ = run("damaged.yaml", &damaged);
                runs += 2;
            }
        }
    }
    assert!(runs > 1000);
}

fn walk(folder: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn nesting_deeper_than_the_parser_allows_is_a_finding_not_a_crash() {
    let mut text = String::from("a:\n");
    for depth in 1..2000 {
        text.push_str(&" ".repeat(depth));
        text.push_str("a:\n");
    }
    text.push_str("---\n");
    text.push_str(GOOD_POD);
    let report = run("deep.yaml", &text);
    let rules: Vec<&str> = report.findings.iter().map(|finding| finding.rule).collect();
    assert_eq!(rules, ["invalid-yaml", "timeout-not-below-period"]);
    let flow = format!("a: {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
    assert_eq!(run("flow.yaml", &flow).findings[0].rule, "invalid-yaml");
}

#[test]
fn every_kind_with_a_pod_template_is_judged_and_named() {
    let service = |app: &str| {
        format!(
            "---\napiVersion: v1\nkind: Service\nmetadata: {{name: {app}}}\nspec: {{selector: {{app: {app}}}}}\n"
        )
    };
    let text = format!(
        "apiVersion: v1\nkind: ReplicationController\nmetadata: {{name: rc}}\nspec:\n  selector: {{app: rc}}\n  template:\n    metadata: {{labels: {{app: rc}}}}\n    spec:\n      containers: [{{name: c, image: i}}]\n{}\
         ---\napiVersion: apps.kruise.io/v1alpha1\nkind: CloneSet\nmetadata: {{name: cs}}\nspec:\n  selector: {{matchLabels: {{app: cs}}}}\n  template:\n    metadata: {{labels: {{app: cs}}}}\n    spec:\n      containers: [{{name: c, image: i}}]\n{}\
         ---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: w}}\nspec: {{template: {{size: 3}}}}\n",
        service("rc"),
        service("cs")
    );
    let report = run("workloads.yaml", &text);
    let found: Vec<(&str, &str, &str)> = report
        .findings
        .iter()
        .map(|finding| (finding.rule, finding.kind.as_str(), finding.name.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            ("missing-readiness-probe", "ReplicationController", "rc"),
            ("missing-readiness-probe", "CloneSet", "cs"),
        ]
    );
    assert_eq!(report.objects, 4);
    assert_eq!(report.skipped_kinds(), [("Widget", 1)]);
}

#[test]
fn a_built_in_kind_name_in_another_api_group_is_not_the_built_in_kind() {
    // Knative's Service carries a pod template (judged as a workload, its `template` no typo);
    // a `Deployment` of some other group without one is skipped, not read as apps/v1.
    let text = "apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: greeter}\nspec:\n  template:\n    spec:\n      containers:\n      - image: greeter:1\n        livenessProbe: {httpGet: {path: /livez}, timeoutSeconds: 10}\n---\napiVersion: example.com/v1\nkind: Deployment\nmetadata: {name: release}\nspec: {target: prod}\n---\napiVersion: extensions/v1beta1\nkind: Deployment\nmetadata: {name: old}\nspec:\n  template:\n    metadata: {labels: {app: old}}\n    spec:\n      containers: [{name: c, image: i, livenessProbe: {tcpSocket: {port: 1}, timeoutSeconds: 10}}]\n";
    let report = run("groups.yaml", text);
    let found: Vec<(&str, &str, usize)> = report
        .findings
        .iter()
        .map(|finding| (finding.rule, finding.kind.as_str(), finding.line))
        .collect();
    assert_eq!(
        found,
        [
            ("timeout-not-below-period", "Service", 9),
            ("timeout-not-below-period", "Deployment", 23),
        ]
    );
    assert_eq!(report.skipped_kinds(), [("Deployment", 1)]);
}
