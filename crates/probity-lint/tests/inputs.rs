//! Inputs the linter must survive: malformed YAML, documents that are not Kubernetes objects,
//! kinds it does not judge, Helm output, `List`s — each an error naming file and line, or
//! skipped, and never a panic.

use probity::Contract;
use probity_lint::{Options, Report, Source, lint};
use std::path::Path;

fn run(name: &str, text: &str) -> Report {
    lint(&[Source::new(name, text)], &Options::default())
}

const GOOD_POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: good}\nspec:\n  containers:\n  - name: app\n    image: a\n    livenessProbe:\n      httpGet: {path: /livez, port: 8080}\n      timeoutSeconds: 10\n";

#[test]
fn malformed_yaml_is_an_error_with_file_and_line_and_other_inputs_are_still_linted() {
    let sources = [
        Source::new(
            "broken.yaml",
            "apiVersion: v1\nkind: Pod\nspec:\n  containers: [\n    {name: a\n",
        ),
        Source::new("good.yaml", GOOD_POD),
    ];
    let report = lint(&sources, &Options::default());
    assert_eq!(report.errors.len(), 1, "{:?}", report.errors);
    let error = &report.errors[0];
    assert_eq!(error.file, "broken.yaml");
    assert!(error.line >= 4, "{error}");
    assert!(error.message.starts_with("invalid YAML"), "{error}");
    assert!(error.to_string().starts_with("broken.yaml:"), "{error}");
    assert_eq!(report.findings.len(), 1);
    assert_eq!(report.findings[0].file, "good.yaml");
}

#[test]
fn a_bad_indentation_names_its_line() {
    let report = run(
        "indent.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n labels: {}\n",
    );
    assert_eq!(report.errors.len(), 1);
    assert_eq!(report.errors[0].line, 5, "{}", report.errors[0]);
}

#[test]
fn duplicate_keys_are_errors() {
    let report = run(
        "dup.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers: []\n  containers: []\n",
    );
    assert_eq!(report.errors.len(), 1);
    assert_eq!((report.errors[0].line, report.errors[0].column), (6, 3));
    assert!(report.errors[0].message.contains("containers"));
}

#[test]
fn documents_that_are_not_kubernetes_objects_are_errors_with_their_line() {
    let text = "- just\n- a list\n---\nname: no kind here\n---\nkind: Pod\nmetadata: {name: x}\n---\napiVersion: v1\nkind: 5\n---\nplain scalar\n";
    let report = run("values.yaml", text);
    let errors: Vec<(usize, &str)> = report
        .errors
        .iter()
        .map(|error| (error.line, error.message.as_str()))
        .collect();
    assert_eq!(errors.len(), 5, "{errors:?}");
    assert_eq!(errors[0].0, 1);
    assert!(errors[0].1.contains("a list"), "{errors:?}");
    assert_eq!(errors[1].0, 4);
    assert!(errors[1].1.contains("no `kind`"), "{errors:?}");
    assert_eq!(errors[2].0, 6);
    assert!(errors[2].1.contains("no `apiVersion`"), "{errors:?}");
    assert_eq!(errors[3].0, 10);
    assert!(errors[3].1.contains("`kind` is an integer"), "{errors:?}");
    assert_eq!(errors[4].0, 12);
    assert!(report.findings.is_empty());
}

#[test]
fn other_kinds_and_custom_resources_are_skipped_cleanly() {
    let text = "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata: {name: checkout}\nspec:\n  groups: [{name: x, rules: [{alert: A, expr: up == 0}]}]\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n";
    let report = run("extras.yaml", text);
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert!(report.findings.is_empty());
    assert_eq!(report.skipped, 2);
    assert_eq!(report.objects, 0);
}

#[test]
fn helm_rendered_output_works() {
    let text = "---\n# Source: checkout/templates/service.yaml\napiVersion: v1\nkind: Service\nmetadata:\n  name: release-checkout\n  labels:\n    helm.sh/chart: checkout-0.1.0\nspec:\n  selector:\n    app.kubernetes.io/name: checkout\n  ports:\n    - port: 80\n---\n# Source: checkout/templates/empty.yaml\n---\n# Source: checkout/templates/deployment.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: release-checkout\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: checkout\n  template:\n    metadata:\n      labels:\n        app.kubernetes.io/name: checkout\n    spec:\n      containers:\n        - name: checkout\n          image: \"checkout:1\"\n          livenessProbe:\n            httpGet:\n              path: /livez\n              port: http\n          ports:\n            - name: http\n              containerPort: 8080\n";
    let report = run("rendered.yaml", text);
    assert!(report.errors.is_empty(), "{:?}", report.errors);
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
    assert!(report.errors.is_empty(), "{:?}", report.errors);
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
    for folder in ["rules", "seeds"] {
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
