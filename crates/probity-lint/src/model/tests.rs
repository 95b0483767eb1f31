use super::related::AmountValue;
use super::*;
use crate::yaml::parse_documents;
use probity_contract::probe::ProbeKind;

fn object(text: &str, check: impl FnOnce(&Object<'_>)) {
    let mut documents = parse_documents(text);
    let crate::yaml::Parsed::Document(document) = documents.remove(0) else {
        panic!("invalid YAML")
    };
    let root = document.root.as_ref().unwrap();
    match read_object(0, root) {
        Ok(Read::Object(object)) => check(&object),
        _ => panic!("not an object"),
    }
}

#[test]
fn applies_probe_defaults() {
    let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: app\n    livenessProbe:\n      httpGet: {path: /livez, port: 8080}\n      periodSeconds: 0\n";
    object(text, |object| {
        let Body::Workload(workload) = &object.body else {
            panic!()
        };
        let pod = workload.pod.as_ref().unwrap();
        let probe = pod.containers[0].probe(ProbeKind::Liveness).unwrap();
        assert_eq!(probe.period.value, 10);
        assert_eq!(probe.period.written, Some(0));
        assert_eq!(probe.timeout.value, 1);
        assert_eq!(probe.success.value, 1);
        assert_eq!(probe.failure.value, 3);
        assert_eq!(probe.initial_delay.value, 0);
        assert_eq!(pod.termination_grace.value, 30);
    });
}

#[test]
fn resolves_named_ports_and_digit_strings() {
    let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: app\n    ports: [{name: http, containerPort: 8080}]\n";
    object(text, |object| {
        let Body::Workload(workload) = &object.body else {
            panic!()
        };
        let container = &workload.pod.as_ref().unwrap().containers[0];
        assert_eq!(
            container.resolve_port(&IntOrString::String("http".into())),
            Some(8080)
        );
        assert_eq!(
            container.resolve_port(&IntOrString::String("9090".into())),
            Some(9090)
        );
        assert_eq!(
            container.resolve_port(&IntOrString::String("admin".into())),
            None
        );
    });
}

#[test]
fn finds_sleep_in_exec_pre_stop_hooks() {
    let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: app\n    lifecycle:\n      preStop:\n        exec:\n          command: [/bin/sh, -c, \"sleep 12.5 && kill 1\"]\n";
    object(text, |object| {
        let Body::Workload(workload) = &object.body else {
            panic!()
        };
        let container = &workload.pod.as_ref().unwrap().containers[0];
        assert_eq!(container.pre_stop_sleep.map(|(s, _)| s), Some(13));
    });
}

#[test]
fn reads_sleep_durations_as_the_shell_does() {
    for (argument, seconds) in [
        ("5", Some(5)),
        ("5s", Some(5)),
        ("1m", Some(60)),
        ("0.2", Some(1)),
        ("infinity", None),
    ] {
        let text = format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  containers:\n  - name: app\n    lifecycle:\n      preStop:\n        exec:\n          command: [sleep, \"{argument}\"]\n"
        );
        object(&text, |object| {
            let Body::Workload(workload) = &object.body else {
                panic!()
            };
            let container = &workload.pod.as_ref().unwrap().containers[0];
            assert_eq!(
                container.pre_stop_sleep.map(|(s, _)| s),
                seconds,
                "{argument}"
            );
        });
    }
}

#[test]
fn judges_the_handler_the_api_server_validates_first() {
    let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: app\n    livenessProbe:\n      httpGet: {path: /livez, port: 8080}\n      exec: {command: [true]}\n";
    object(text, |object| {
        let Body::Workload(workload) = &object.body else {
            panic!()
        };
        let probe = workload.pod.as_ref().unwrap().containers[0]
            .probe(ProbeKind::Liveness)
            .unwrap();
        let keys: Vec<&str> = probe.handler_keys.iter().map(|(key, _)| *key).collect();
        assert_eq!(keys, ["exec", "httpGet"]);
        assert!(matches!(probe.handler, Handler::Exec { .. }));
        assert_eq!(probe.position_of("httpGet").line, 8);
        assert_eq!(probe.position_of("httpGet.port").column, 37);
        assert_eq!(probe.position_of("successThreshold").line, 7);
    });
}

#[test]
fn records_wrong_types_as_problems() {
    let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: app\n    readinessProbe:\n      httpGet: {path: /readyz, port: 8080}\n      periodSeconds: \"5\"\n";
    object(text, |object| {
        assert_eq!(object.problems.len(), 1);
        assert!(object.problems[0].message.contains("periodSeconds"));
        assert_eq!(
            (
                object.problems[0].position.line,
                object.problems[0].position.column
            ),
            (9, 22)
        );
    });
}

#[test]
fn percentages_round_up() {
    assert_eq!(AmountValue::Percent(50).resolve(3), 2);
    assert_eq!(AmountValue::Percent(50).resolve(12), 6);
    assert_eq!(AmountValue::Count(2).resolve(12), 2);
}
