//! Bad input gets a clear error naming the field and what is wrong, never a panic, an abort
//! or unbounded work: empty files, lists, wrong types, negative or absurd durations, huge
//! rates, endless files, and models too large to run.

use probity_sim::{Format, Scenario, ScenarioError};
use proptest::prelude::*;
use std::path::Path;

fn reject(yaml: &str) -> (String, String) {
    let error = Scenario::parse(yaml, Format::Yaml, Path::new("bad.yaml")).unwrap_err();
    (error.field().unwrap_or("").to_string(), error.to_string())
}

/// A valid scenario with `extra` appended.
fn base(extra: &str) -> String {
    format!(
        r#"
name: base
duration: 2m
dependencies: {{ db: {{}} }}
app:
  endpoints:
    /livez: {{ checks: [] }}
    /readyz: {{ checks: [db] }}
container:
  livenessProbe:  {{ httpGet: {{ path: /livez, port: 8080 }} }}
  readinessProbe: {{ httpGet: {{ path: /readyz, port: 8080 }} }}
{extra}"#
    )
}

#[test]
fn the_base_is_valid() {
    Scenario::parse(&base(""), Format::Yaml, Path::new("ok.yaml")).unwrap();
}

#[test]
fn empty_files_say_what_a_scenario_needs() {
    for text in ["", "   \n\n", "# only a comment\n", "~\n"] {
        let (field, message) = reject(text);
        assert_eq!(field, ".", "{text:?}: {message}");
        assert!(message.contains("`name` and `duration`"), "{message}");
        assert!(!message.contains("ScenarioFile"), "{message}");
    }
}

#[test]
fn a_list_is_not_a_scenario() {
    let (field, message) = reject(r#"["t", null, [], 7, "2m"]"#);
    assert_eq!(field, ".");
    assert!(message.contains("expected a mapping"), "{message}");
    assert!(message.contains("found a list"), "{message}");
    // Nor is a list where a section belongs.
    let (field, message) = reject(&base("fleet: [3]\n"));
    assert_eq!(field, "fleet");
    assert!(message.contains("expected a mapping"), "{message}");
}

#[test]
fn errors_inside_faults_and_routing_name_their_field() {
    let cases = [
        (
            "faults:\n  - { kind: dependency-outage, dependency: db, at: -10s }\n",
            "faults[0].at",
            "`-10s` is negative",
        ),
        (
            "faults:\n  - { kind: dependency-outage, dependency: db, at: 10s, duration: [1] }\n",
            "faults[0].duration",
            "found a list",
        ),
        (
            "faults:\n  - { kind: pool-exhausted, instance: 0, dependency: db, at: 10s, colour: red }\n",
            "faults[0].colour",
            "unknown field `colour`",
        ),
        (
            "faults:\n  - { dependency: db, at: 10s }\n",
            "faults[0].kind",
            "missing",
        ),
        ("faults:\n  - 7\n", "faults[0]", "found the number 7"),
        (
            "routing: { kind: haproxy, check_path: /readyz, rise: many }\n",
            "routing.rise",
            "expected a whole number, 0 or more, found the text `many`",
        ),
        (
            "routing: { kind: nginx }\n",
            "routing.kind",
            "unknown router `nginx`",
        ),
    ];
    for (extra, field, reason) in cases {
        let (got, message) = reject(&base(extra));
        assert_eq!(got, field, "{message}");
        assert!(
            message.contains(reason),
            "expected `{reason}` in: {message}"
        );
    }
}

#[test]
fn wrong_types_are_said_in_words() {
    let cases = [
        (
            "fleet: { replicas: three }\n",
            "fleet.replicas",
            "expected a whole number",
        ),
        (
            "fleet: { replicas: -3 }\n",
            "fleet.replicas",
            "found the number -3",
        ),
        (
            "requests: { rate: fast }\n",
            "requests.rate",
            "expected a number",
        ),
        ("seed: [1]\n", "seed", "found a list"),
        (
            "fleet: { start: tepid }\n",
            "fleet.start",
            "unknown variant `tepid`",
        ),
        (
            "kubelet: { backoff_requeue: 7 }\n",
            "kubelet.backoff_requeue",
            "expected one of `exact` or `jitter`",
        ),
        (
            "description: false\n",
            "description",
            "expected text, found `false`",
        ),
    ];
    for (extra, field, reason) in cases {
        let (got, message) = reject(&base(extra));
        assert_eq!(got, field, "{message}");
        assert!(
            message.contains(reason),
            "expected `{reason}` in: {message}"
        );
        for internal in ["u32", "u64", "i64", "f64", "struct ", "enum "] {
            assert!(
                !message.contains(internal),
                "internal name {internal} in: {message}"
            );
        }
    }
}

#[test]
fn absurd_durations_and_rates_name_the_real_limit() {
    let (field, message) = reject(&base("").replace("duration: 2m", "duration: 87600h"));
    assert_eq!(field, "duration");
    assert!(message.contains("longer than the 48h"), "{message}");
    let (field, message) = reject(&base("").replace("duration: 2m", "duration: 1e300"));
    assert_eq!(field, "duration");
    assert!(message.contains("too long"), "{message}");
    let (field, message) = reject(&base("requests: { rate: 1e300 }\n"));
    assert_eq!(field, "requests.rate");
    assert!(message.contains("1e9"), "{message}");
    assert!(!message.contains("18446744073709551615"), "{message}");
}

#[test]
fn models_too_large_to_run_are_refused_at_validation() {
    // A flapping dependency with a 1 ms period over 48 h would flap 345 million times.
    let flapping = base(
        "faults:\n  - { kind: flapping-dependency, dependency: db, at: 1s, period: 1ms, down: 1ms }\n",
    )
    .replace("duration: 2m", "duration: 48h");
    let (field, message) = reject(&flapping);
    assert_eq!(field, "faults[0].period");
    assert!(message.contains("events"), "{message}");
    // 10,000 virtual nodes for each of 100,000 pods is a billion ring points.
    let ring = base(
        "fleet: { replicas: 100000 }\nrouting: { kind: consistent-hash, virtual_nodes: 10000 }\n",
    );
    let (field, message) = reject(&ring);
    assert_eq!(field, "routing.virtual_nodes");
    assert!(message.contains("ring points"), "{message}");
    // Probes every second on the largest fleet for two days.
    let busy = base("fleet: { replicas: 100000 }\n")
        .replace("duration: 2m", "duration: 48h")
        .replace(
            "port: 8080 } }\n  readinessProbe",
            "port: 8080 }, periodSeconds: 1 }\n  readinessProbe",
        );
    let (field, message) = reject(&busy);
    assert_eq!(field, "container.livenessProbe.periodSeconds", "{message}");
}

#[test]
fn endless_and_unreadable_files_are_errors() {
    let error = Scenario::load(Path::new("/dev/zero.yaml")).unwrap_err();
    assert!(matches!(error, ScenarioError::Read { .. }), "{error}");
    let dir = std::env::temp_dir().join(format!("probity-bad-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A contract that is /dev/zero: refused before it is opened, not read until memory runs out.
    let scenario = dir.join("zero-contract.yaml");
    std::fs::write(
        &scenario,
        "name: zero\nduration: 1m\ndependencies: { db: {} }\napp: { contract: /dev/zero }\n",
    )
    .unwrap();
    let error = Scenario::load(&scenario).unwrap_err().to_string();
    assert!(error.contains("app.contract"), "{error}");
    assert!(error.contains("a device, not a regular file"), "{error}");
    // A scenario larger than the cap.
    let large = dir.join("large.yaml");
    std::fs::write(
        &large,
        format!("name: large\nduration: 1m\n# {}\n", "x".repeat(2 << 20)),
    )
    .unwrap();
    let error = Scenario::load(&large).unwrap_err().to_string();
    assert!(error.contains("larger than 1024 KiB"), "{error}");
    // Not text.
    let binary = dir.join("binary.yaml");
    std::fs::write(&binary, [0xff, 0xfe, 0x00, 0x01]).unwrap();
    let error = Scenario::load(&binary).unwrap_err().to_string();
    assert!(error.contains("not UTF-8"), "{error}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Keys a scenario's author might write, right or wrong.
const KEYS: &[&str] = &[
    "name",
    "duration",
    "seed",
    "fleet",
    "replicas",
    "names",
    "start",
    "stagger",
    "app",
    "endpoints",
    "checks",
    "mode",
    "dependency",
    "interval",
    "timeout",
    "rise",
    "fall",
    "dependencies",
    "db",
    "latency",
    "requests",
    "rate",
    "mix",
    "share",
    "needs",
    "routing",
    "kind",
    "faults",
    "at",
    "period",
    "down",
    "container",
    "livenessProbe",
    "readinessProbe",
    "httpGet",
    "path",
    "port",
    "periodSeconds",
    "failureThreshold",
    "measure",
    "resolution",
    "/readyz",
    "dependency-outage",
    "haproxy",
    "virtual_nodes",
    "users",
    "keep_alive",
];

/// YAML scalars: numbers of every size and sign, durations, names, nothing.
fn scalar() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|number| number.to_string()),
        any::<f64>().prop_map(|number| format!("{number:?}")),
        (0u64..100_000).prop_map(|seconds| format!("{seconds}s")),
        prop::sample::select(vec![
            "~",
            "true",
            "1e300",
            "-10s",
            "1ms",
            "48h",
            "9999999h",
            "\"\"",
            "[]",
            "{}",
            "x",
            "db",
            "/readyz",
            "dependency-outage",
            "consistent-hash",
            "2m",
            "0",
            "-1",
        ])
        .prop_map(str::to_string),
        prop::sample::select(KEYS.to_vec()).prop_map(str::to_string),
    ]
}

/// A YAML document of nested mappings and lists built from the vocabulary above (flow style,
/// so any nesting is one line).
fn document() -> impl Strategy<Value = String> {
    let leaf = scalar();
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5)
                .prop_map(|items| format!("[{}]", items.join(", "))),
            prop::collection::vec((prop::sample::select(KEYS.to_vec()), inner), 0..6).prop_map(
                |entries| {
                    let entries: Vec<String> = entries
                        .into_iter()
                        .map(|(key, value)| format!("\"{key}\": {value}"))
                        .collect();
                    format!("{{{}}}", entries.join(", "))
                }
            ),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// Whatever is written, loading returns a scenario or an error with a field path, and
    /// never panics.
    #[test]
    fn any_document_loads_or_says_where_it_is_wrong(text in document()) {
        match Scenario::parse(&text, Format::Yaml, Path::new("fuzz.yaml")) {
            Ok(scenario) => prop_assert!(!scenario.name.is_empty()),
            Err(ScenarioError::Field { field, reason, .. }) => {
                prop_assert!(!field.is_empty());
                prop_assert!(!reason.is_empty());
            }
            Err(ScenarioError::Syntax { reason, .. }) => prop_assert!(!reason.is_empty()),
            Err(ScenarioError::Read { .. }) => prop_assert!(false, "nothing was read"),
        }
    }

    /// A valid scenario with one value replaced anywhere still loads or fails cleanly.
    #[test]
    fn a_valid_scenario_with_one_value_replaced(value in scalar(), position in 0usize..12) {
        let text = base("faults:\n  - { kind: dependency-outage, dependency: db, at: 30s, duration: 20s }\n");
        let targets = ["2m", "db: {}", "checks: []", "[db]", "/livez", "8080", "30s", "20s",
            "dependency-outage", "base", "/readyz", "name"];
        let text = text.replacen(targets[position], &value, 1);
        let _ = Scenario::parse(&text, Format::Yaml, Path::new("fuzz.yaml"));
    }
}
