//! `--format sarif` is valid SARIF 2.1.0: checked against the official OASIS schema
//! (`tests/data/sarif-schema-2.1.0.json`, see `tests/data/README.md`), with format assertions on.

use probity_lint::{Options, Source, lint, output, rules};
use serde_json::Value;
use std::path::Path;

/// The official schema's `language` pattern (on `run` and `toolComponent`) has an unbalanced
/// `]`, which is not a valid ECMA-262 regular expression, so a strict validator refuses to
/// compile the schema. It is replaced by its evident intent (`en` or `en-US`) before compiling;
/// nothing else changes, and probity never writes `language` (asserted below).
const BROKEN_LANGUAGE_PATTERN: &str = "^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$";
const LANGUAGE_PATTERN: &str = "^[a-zA-Z]{2}(-[a-zA-Z]{2})?$";

fn schema() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sarif-schema-2.1.0.json");
    let text = std::fs::read_to_string(path).unwrap();
    assert_eq!(text.matches(BROKEN_LANGUAGE_PATTERN).count(), 2);
    serde_json::from_str(&text.replace(BROKEN_LANGUAGE_PATTERN, LANGUAGE_PATTERN)).unwrap()
}

fn validate(log: &Value) {
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema())
        .expect("the SARIF schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(log)
        .map(|error| format!("{} at {}", error, error.instance_path()))
        .collect();
    assert!(errors.is_empty(), "invalid SARIF:\n{}", errors.join("\n"));
}

fn sarif_of(sources: &[Source]) -> Value {
    let report = lint(sources, &Options::default());
    serde_json::from_str(&output::sarif(&report)).unwrap()
}

#[test]
fn every_positive_fixture_renders_valid_sarif() {
    // Each fixture is linted on its own (objects in one input see each other), and the findings
    // are rendered as one log.
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rules");
    let mut report = probity_lint::Report::default();
    for rule in rules::all() {
        let path = folder.join(rule.id).join("positive.yaml");
        let source = Source::new(
            format!("fixtures/{}/positive.yaml", rule.id),
            std::fs::read_to_string(path).unwrap(),
        );
        let single = lint(&[source], &Options::default());
        report.findings.extend(single.findings);
    }
    let log: Value = serde_json::from_str(&output::sarif(&report)).unwrap();
    validate(&log);
    assert!(
        !serde_json::to_string(&log)
            .unwrap()
            .contains("\"language\"")
    );
    let results = log["runs"][0]["results"].as_array().unwrap();
    // Every rule fires somewhere in its positive fixture, so every rule appears in the results.
    for rule in rules::all() {
        assert!(
            results.iter().any(|result| result["ruleId"] == rule.id),
            "no SARIF result for {}",
            rule.id
        );
    }
}

#[test]
fn results_point_at_the_rule_and_the_source_position() {
    let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: shop}\nspec:\n  containers:\n  - name: app\n    image: a\n    livenessProbe:\n      httpGet: {path: /livez, port: 8080}\n      timeoutSeconds: 10\n";
    let log = sarif_of(&[Source::new("deploy/my pod.yaml", text)]);
    validate(&log);
    assert_eq!(log["version"], "2.1.0");
    let driver = &log["runs"][0]["tool"]["driver"];
    assert_eq!(
        driver["rules"].as_array().unwrap().len(),
        rules::all().len()
    );
    let result = &log["runs"][0]["results"][0];
    assert_eq!(result["ruleId"], "timeout-not-below-period");
    assert_eq!(result["level"], "warning");
    let index = result["ruleIndex"].as_u64().unwrap() as usize;
    assert_eq!(driver["rules"][index]["id"], "timeout-not-below-period");
    let location = &result["locations"][0];
    assert_eq!(
        location["physicalLocation"]["artifactLocation"]["uri"],
        "deploy/my%20pod.yaml"
    );
    assert_eq!(location["physicalLocation"]["region"]["startLine"], 10);
    assert_eq!(location["physicalLocation"]["region"]["startColumn"], 23);
    assert_eq!(
        location["logicalLocations"][0]["fullyQualifiedName"],
        "shop/Pod/p/app"
    );
}

#[test]
fn a_clean_run_is_valid_sarif_with_no_results() {
    let log = sarif_of(&[Source::new("empty.yaml", "")]);
    validate(&log);
    assert_eq!(log["runs"][0]["results"].as_array().unwrap().len(), 0);
}

#[test]
fn the_validator_rejects_a_broken_log() {
    // Guard against a validator that accepts anything.
    let mut log = sarif_of(&[Source::new("empty.yaml", "")]);
    log["runs"][0]["results"] = serde_json::json!([{ "level": "fatal", "message": {} }]);
    let validator = jsonschema::validator_for(&schema()).unwrap();
    assert!(!validator.is_valid(&log));
}

#[test]
fn mechanical_fixes_are_sarif_fixes_with_byte_regions() {
    let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: app\n    image: a\n    livenessProbe:\n      httpGet: {path: /livez, port: 8080}\n      timeoutSeconds: 10\n";
    let log = sarif_of(&[Source::new("pod.yaml", text)]);
    validate(&log);
    let fix = &log["runs"][0]["results"][0]["fixes"][0];
    assert_eq!(fix["description"]["text"], "set `timeoutSeconds` to 9");
    let change = &fix["artifactChanges"][0];
    assert_eq!(change["artifactLocation"]["uri"], "pod.yaml");
    let replacement = &change["replacements"][0];
    let offset = replacement["deletedRegion"]["byteOffset"].as_u64().unwrap() as usize;
    let length = replacement["deletedRegion"]["byteLength"].as_u64().unwrap() as usize;
    assert_eq!(&text[offset..offset + length], "10");
    assert_eq!(replacement["insertedContent"]["text"], "9");
}
