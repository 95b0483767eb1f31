//! The deploy files agree with how the service is scraped: the alert rules select the labels
//! the PodMonitor gives the series, from the pods the Deployment makes, on the port that serves
//! /metrics.

use serde_json::Value;
use std::path::Path;

fn read(relative: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|error| panic!("{relative}: {error}"))
}

/// Every `name="value"` matcher of `label` in a PromQL expression.
fn matchers(expr: &str, label: &str) -> Vec<String> {
    let needle = format!("{label}=\"");
    expr.match_indices(&needle)
        .filter_map(|(at, _)| {
            let rest = &expr[at + needle.len()..];
            rest.split_once('"').map(|(value, _)| value.to_owned())
        })
        .collect()
}

#[test]
fn the_rules_select_the_labels_the_pod_monitor_gives() {
    let monitor = read("deploy/kubernetes/podmonitor.yaml");
    let deployment = read("deploy/kubernetes/deployment.yaml");
    let rules = read("deploy/kubernetes/prometheusrule.yaml");
    assert_eq!(monitor["kind"], "PodMonitor");

    // The pods the monitor selects are the Deployment's.
    let pod_labels = &deployment["spec"]["template"]["metadata"]["labels"];
    let selector = monitor["spec"]["selector"]["matchLabels"]
        .as_object()
        .expect("matchLabels");
    for (key, value) in selector {
        assert_eq!(
            &pod_labels[key], value,
            "the pods lack the selected label {key}"
        );
    }

    // It scrapes a port the container names, at the path the admin listener serves.
    let containers = deployment["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers");
    let endpoints = monitor["spec"]["podMetricsEndpoints"]
        .as_array()
        .expect("podMetricsEndpoints");
    assert!(!endpoints.is_empty());
    for endpoint in endpoints {
        let port = endpoint["port"].as_str().expect("a named port");
        let port_number = containers
            .iter()
            .flat_map(|container| container["ports"].as_array().into_iter().flatten())
            .find(|named| named["name"] == port)
            .unwrap_or_else(|| panic!("no container port named {port}"))["containerPort"]
            .as_u64();
        let admin = containers[0]["args"]
            .as_array()
            .expect("args")
            .iter()
            .filter_map(Value::as_str)
            .find_map(|arg| arg.strip_prefix("--admin-listen="))
            .expect("an --admin-listen argument");
        assert!(
            admin.ends_with(&format!(":{}", port_number.expect("a port number"))),
            "port {port} is not the admin listener ({admin}), which serves /metrics"
        );
        assert_eq!(endpoint["path"], "/metrics");
        // `instance` is the pod's name.
        let relabels_instance = endpoint["relabelings"].as_array().is_some_and(|rules| {
            rules.iter().any(|rule| {
                rule["targetLabel"] == "instance"
                    && rule["sourceLabels"][0] == "__meta_kubernetes_pod_name"
            })
        });
        assert!(
            relabels_instance,
            "instance should be the pod's name: {endpoint}"
        );
    }

    // The job is the value of the pods' label named by jobLabel: what the rules select.
    let job_label = monitor["spec"]["jobLabel"].as_str().expect("jobLabel");
    let job = pod_labels[job_label]
        .as_str()
        .expect("the pods carry the job label");
    let groups = rules["spec"]["groups"].as_array().expect("groups");
    let mut exprs = 0;
    for rule in groups
        .iter()
        .flat_map(|group| group["rules"].as_array().into_iter().flatten())
    {
        let expr = rule["expr"].as_str().expect("expr");
        exprs += 1;
        let jobs = matchers(expr, "job");
        assert!(!jobs.is_empty(), "{} selects no job", rule["alert"]);
        assert!(
            jobs.iter().all(|selected| selected == job),
            "{} selects job {jobs:?}, the PodMonitor gives job=\"{job}\"",
            rule["alert"]
        );
        assert!(
            expr.contains("by (instance"),
            "{} should name the instance (the pod)",
            rule["alert"]
        );
    }
    assert!(exprs >= 2);

    // The rule tests feed series labelled the same way.
    let tests = read("deploy/prometheus/alerts.test.yml");
    for test in tests["tests"].as_array().expect("tests") {
        for series in test["input_series"].as_array().expect("input_series") {
            let series = series["series"].as_str().expect("series");
            assert_eq!(matchers(series, "job"), vec![job.to_owned()], "{series}");
        }
    }
}

#[test]
fn matchers_are_read_from_expressions() {
    assert_eq!(
        matchers(
            r#"rate(x{job="shop", status=~"5.."}[2m]) / y{job="other"}"#,
            "job"
        ),
        vec!["shop".to_owned(), "other".to_owned()]
    );
    assert!(matchers("up", "job").is_empty());
}
