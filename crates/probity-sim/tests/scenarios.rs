//! Scenario files: malformed input is rejected with file, field and reason; runs are
//! deterministic; contracts are read.

use probity_sim::{Format, Scenario, ScenarioError, simulate};
use std::path::Path;

const BASE: &str = r#"
name: base
duration: 2m
fleet: { replicas: 2 }
dependencies: { db: {} }
app:
  endpoints:
    /livez: { checks: [] }
    /readyz: { mode: cached, checks: [db] }
container:
  livenessProbe:  { httpGet: { path: /livez, port: 8080 } }
  readinessProbe: { httpGet: { path: /readyz, port: 8080 }, periodSeconds: 5 }
faults:
  - { kind: dependency-outage, dependency: db, at: 30s, duration: 20s }
"#;

fn reject(yaml: &str) -> (String, String) {
    let error = Scenario::parse(yaml, Format::Yaml, Path::new("bad.yaml")).unwrap_err();
    let field = error.field().unwrap_or("").to_string();
    let text = error.to_string();
    assert!(text.starts_with("bad.yaml: "), "{text}");
    (field, text)
}

#[test]
fn the_base_scenario_is_valid() {
    Scenario::parse(BASE, Format::Yaml, Path::new("base.yaml")).unwrap();
}

#[test]
fn malformed_scenarios_name_file_field_and_reason() {
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "periodSeconds: 5 }",
            "periodSeconds: -5 }",
            "container.readinessProbe.periodSeconds",
            "greater than or equal to 0",
        ),
        (
            "periodSeconds: 5 }",
            "periodSeconds: ten }",
            "container.readinessProbe.periodSeconds",
            "expected a whole number, found the text `ten`",
        ),
        (
            "periodSeconds: 5 }",
            "periodSecond: 5 }",
            "container.readinessProbe.periodSecond",
            "unknown field `periodSecond`",
        ),
        (
            "{ httpGet: { path: /livez, port: 8080 } }",
            "{ httpGet: { path: /livez, port: 8080 }, successThreshold: 2 }",
            "container.livenessProbe.successThreshold",
            "must be 1",
        ),
        (
            "{ httpGet: { path: /livez, port: 8080 } }",
            "{ httpGet: { path: /nope, port: 8080 } }",
            "container.livenessProbe.httpGet.path",
            "no endpoint `/nope`",
        ),
        (
            "{ httpGet: { path: /livez, port: 8080 } }",
            "{ httpGet: { path: /livez, port: 8080 }, tcpSocket: { port: 8080 } }",
            "container.livenessProbe.tcpSocket",
            "more than 1 handler",
        ),
        (
            "{ httpGet: { path: /livez, port: 8080 } }",
            "{ exec: { command: [cat, /tmp/ok] } }",
            "container.livenessProbe.exec",
            "cannot model",
        ),
        (
            "dependency: db, at: 30s",
            "dependency: dbx, at: 30s",
            "faults[0].dependency",
            "unknown dependency `dbx`",
        ),
        (
            "at: 30s, duration: 20s",
            "at: 5m, duration: 20s",
            "faults[0].at",
            "not before the end",
        ),
        (
            "at: 30s, duration: 20s",
            "at: 30x, duration: 20s",
            "faults[0].at",
            "`30x`: unknown unit",
        ),
        (
            "kind: dependency-outage",
            "kind: meteor-strike",
            "faults[0].kind",
            "unknown fault `meteor-strike`",
        ),
        (
            "replicas: 2",
            "replicas: 0",
            "fleet.replicas",
            "between 1 and 100000",
        ),
        (
            "checks: [db] }",
            "checks: [dbb] }",
            "app.endpoints./readyz.checks[0]",
            "neither a declared check",
        ),
        (
            "duration: 2m",
            "duration: 0s",
            "duration",
            "longer than zero",
        ),
    ];
    for (from, to, field, reason) in cases {
        let yaml = BASE.replacen(from, to, 1);
        assert_ne!(yaml, BASE, "case {to} did not apply");
        let (got_field, text) = reject(&yaml);
        assert_eq!(got_field, *field, "{text}");
        assert!(text.contains(reason), "expected `{reason}` in: {text}");
    }
}

#[test]
fn a_check_timeout_must_be_shorter_than_its_interval() {
    let yaml =
        format!("{BASE}\n").replace("dependencies: { db: {} }", "dependencies: { db: {} }\n") + "";
    let yaml = yaml.replace(
        "    /readyz: { mode: cached, checks: [db] }",
        "    /readyz: { mode: cached, checks: [db] }\n  checks:\n    db: { dependency: db, interval: 5s, timeout: 5s }",
    );
    let (field, text) = reject(&yaml);
    assert_eq!(field, "app.checks.db.timeout");
    assert!(text.contains("strictly shorter"), "{text}");
}

#[test]
fn syntax_errors_carry_the_parser_position() {
    let error =
        Scenario::parse("name: [unclosed\n", Format::Yaml, Path::new("x.yaml")).unwrap_err();
    assert!(matches!(error, ScenarioError::Syntax { .. }));
    assert!(
        error.to_string().starts_with("x.yaml: not valid YAML"),
        "{error}"
    );
    let error = Scenario::parse("name = \n", Format::Toml, Path::new("x.toml")).unwrap_err();
    assert!(
        error.to_string().starts_with("x.toml: not valid TOML"),
        "{error}"
    );
}

#[test]
fn unreadable_and_unknown_files_are_errors() {
    let error = Scenario::load(Path::new("/nonexistent/scenario.yaml")).unwrap_err();
    assert!(error.to_string().contains("cannot read"));
    let error = Scenario::load(Path::new("scenario.json")).unwrap_err();
    assert!(error.to_string().contains(".yaml, .yml or .toml"));
}

#[test]
fn toml_scenarios_read_like_yaml() {
    let toml = r#"
name = "toml"
duration = "2m"
[fleet]
replicas = 2
[dependencies.db]
[app.endpoints."/livez"]
checks = []
[app.endpoints."/readyz"]
mode = "cached"
checks = ["db"]
[container.livenessProbe]
httpGet = { path = "/livez", port = 8080 }
[container.readinessProbe]
httpGet = { path = "/readyz", port = 8080 }
periodSeconds = 5
[[faults]]
kind = "dependency-outage"
dependency = "db"
at = "30s"
duration = "20s"
"#;
    let from_toml = Scenario::parse(toml, Format::Toml, Path::new("t.toml")).unwrap();
    let from_yaml = Scenario::parse(BASE, Format::Yaml, Path::new("b.yaml")).unwrap();
    let mut a = simulate(&from_toml, 5);
    let b = simulate(&from_yaml, 5);
    a.name = b.name.clone();
    assert_eq!(a, b);
}

#[test]
fn same_seed_same_report_other_seed_other_phases() {
    let scenario = Scenario::parse(BASE, Format::Yaml, Path::new("b.yaml")).unwrap();
    let one = serde_json::to_string(&simulate(&scenario, 42)).unwrap();
    let two = serde_json::to_string(&simulate(&scenario, 42)).unwrap();
    assert_eq!(one, two);
    let other = serde_json::to_string(&simulate(&scenario, 43)).unwrap();
    assert_ne!(
        one, other,
        "the seed sets probe phases, so drain times differ"
    );
}

#[test]
fn a_probity_contract_describes_the_endpoints() {
    let dir = std::env::temp_dir().join(format!("probity-sim-contract-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let contract = r#"{
  "version": 1, "service": "checkout",
  "endpoints": [
    { "probe": "liveness", "path": "/livez", "checks": ["runtime_stall"], "checks_dependencies": false },
    { "probe": "readiness", "path": "/readyz", "checks": ["db"], "checks_dependencies": true },
    { "probe": "startup", "path": "/startupz", "checks": ["migrations"], "checks_dependencies": false }
  ],
  "checks": [
    { "name": "db", "tier": "hard", "dependency": "postgres", "interval_ms": 1000, "timeout_ms": 500,
      "jitter_ms": 100, "rise": 3, "fall": 1, "staleness_ms": 3000, "fail_open_for_ms": null,
      "boot_requires_rise": false, "passive_failure_threshold": null }
  ],
  "liveness": [ { "name": "runtime_stall", "kind": "runtime_stall", "threshold_ms": 5000 } ],
  "startup": { "steps": ["migrations"], "expected_boot_ms": null },
  "shutdown": { "drain_delay_ms": 15000, "in_flight_deadline_ms": 10000 }
}"#;
    std::fs::write(dir.join("contract.json"), contract).unwrap();
    let yaml = r#"
name: from-contract
duration: 3m
fleet: { replicas: 3 }
dependencies: { postgres: {} }
app: { contract: contract.json }
container:
  startupProbe:   { httpGet: { path: /startupz, port: 8080 }, periodSeconds: 2, failureThreshold: 30 }
  livenessProbe:  { httpGet: { path: /livez, port: 8080 } }
  readinessProbe: { httpGet: { path: /readyz, port: 8080 }, periodSeconds: 5, failureThreshold: 2 }
faults:
  - { kind: dependency-outage, dependency: postgres, at: 1m, duration: 40s }
"#;
    let path = dir.join("scenario.yaml");
    std::fs::write(&path, yaml).unwrap();
    let scenario = Scenario::load(&path).unwrap();
    let report = simulate(&scenario, 1);
    // The contract's poller (1 s interval) feeds readiness: the fleet drains, nothing restarts,
    // and it returns after rise = 3 successes.
    assert_eq!(report.restarts, 0);
    assert_eq!(report.drains, 3);
    assert!((report.dependency_check_qps["postgres"] - 3.0).abs() < 0.2);
    let recover = report.time_to_recover_s.unwrap();
    assert!((2.0..=9.0).contains(&recover), "{recover}");

    let broken = yaml
        .replace("postgres: {}", "redis: {}")
        .replace("dependency: postgres", "dependency: redis");
    std::fs::write(&path, broken).unwrap();
    let error = Scenario::load(&path).unwrap_err().to_string();
    assert!(
        error.contains("app.contract") && error.contains("postgres"),
        "{error}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn every_scenario_file_loads_under_its_own_name() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if Format::from_path(&path).is_none() {
            continue;
        }
        let scenario = Scenario::load(&path).unwrap_or_else(|error| panic!("{error}"));
        let stem = path.file_stem().and_then(|stem| stem.to_str()).unwrap();
        assert_eq!(scenario.name, stem, "{}", path.display());
        count += 1;
    }
    assert!(count >= 25, "{count} scenarios in {}", dir.display());
}
