//! Keep-alive client connections behind a Kubernetes Service: established connections stay on
//! their pod when it leaves the endpoints, and move only when they end (lifetime, server
//! close, refused connect, or `Connection: close` while the pod's readiness fails).

use probity_sim::report::Report;
use probity_sim::{Format, Scenario, effective_seed, simulate};
use std::path::{Path, PathBuf};

const WITHOUT: &str = "pool-leak-keep-alive-without-connection-close";
const WITH: &str = "pool-leak-keep-alive-with-connection-close";
const PER_REQUEST: &str = "pool-leak-after";

fn load(name: &str) -> Scenario {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(format!("{name}.yaml"));
    Scenario::load(&path).unwrap()
}

fn run(name: &str) -> Report {
    let scenario = load(name);
    simulate(&scenario, effective_seed(&scenario, None))
}

fn parse(yaml: &str) -> Scenario {
    Scenario::parse(yaml, Format::Yaml, Path::new("keep-alive.yaml")).unwrap()
}

fn reject(yaml: &str) -> (String, String) {
    let error = Scenario::parse(yaml, Format::Yaml, Path::new("bad.yaml")).unwrap_err();
    (error.field().unwrap_or("").to_string(), error.to_string())
}

/// Three pods, 30 clients at 100 requests/s (one request every 300 ms on each connection);
/// an operator takes instance 0 out of the endpoints at 60 s.
const DRAINED: &str = r#"
name: manual-drain-keep-alive
duration: 5m
fleet: { replicas: 3 }
requests:
  rate: 100
  keep_alive: { clients: 30, connection_lifetime: LIFETIME }
app:
  endpoints:
    /livez: { checks: [] }
container:
  livenessProbe: { httpGet: { path: /livez, port: 8080 } }
faults:
  - { kind: manual-drain, instance: 0, at: 60s }
"#;

#[test]
fn the_pair_differs_only_in_connection_close() {
    let without = load(WITHOUT);
    let with = load(WITH);
    let per_request = load(PER_REQUEST);
    assert_eq!(without.seed, with.seed);
    assert_eq!(without.seed, per_request.seed);
    assert!(!without.app.close_connections_when_unready);
    assert!(with.app.close_connections_when_unready);
    let keep_alive = without.requests.keep_alive.expect("keep-alive clients");
    assert_eq!(with.requests.keep_alive, Some(keep_alive));
    assert_eq!(keep_alive.clients, 30);
    assert_eq!(keep_alive.connection_lifetime, 60_000);
    assert_eq!(keep_alive.request_gap(with.requests.rate), 300);
    assert_eq!(per_request.requests.keep_alive, None);
}

#[test]
fn pinned_clients_keep_failing_on_a_pod_that_left_the_endpoints() {
    let per_request = run(PER_REQUEST);
    let without = run(WITHOUT);
    // Probes and endpoints do not care how clients connect: the same drain.
    assert_eq!(without.time_to_drain_s, Some(7.114));
    assert_eq!(without.time_to_drain_s, per_request.time_to_drain_s);
    assert_eq!(without.restarts, 0);
    // The Service stopped sending it new connections; the ones it had stay until they reach
    // their 60 s lifetime, and every request on them fails.
    let leaking = &without.instances[0];
    assert_eq!(leaking.name, "instance-7");
    let traffic = leaking.out_of_rotation_traffic_s.unwrap();
    assert!((55.0..=60.0).contains(&traffic), "{traffic}");
    let requests = leaking.out_of_rotation_requests.unwrap();
    assert!((1000..=1200).contains(&requests), "{requests}");
    assert!(
        (1250..=1400).contains(&without.requests_failed),
        "{}",
        without.requests_failed
    );
    assert!(without.requests_failed > 5 * per_request.requests_failed);
    assert!(
        (55.0..=70.0).contains(&without.outage_s),
        "{}",
        without.outage_s
    );
    // The healthy pods received nothing they failed.
    assert!(without.instances[1..].iter().all(|i| i.failed == 0));
}

#[test]
fn connection_close_while_unready_moves_clients_within_one_request() {
    let per_request = run(PER_REQUEST);
    let with = run(WITH);
    assert_eq!(with.time_to_drain_s, Some(7.114));
    let leaking = &with.instances[0];
    // Every pinned client left after its next request, before the endpoint even left.
    assert_eq!(leaking.out_of_rotation_requests, Some(0));
    assert_eq!(leaking.out_of_rotation_traffic_s, Some(0.0));
    assert!(
        (40..=60).contains(&with.requests_failed),
        "{}",
        with.requests_failed
    );
    assert!(with.requests_failed < per_request.requests_failed);
    assert!(with.outage_s <= 2.0, "{}", with.outage_s);
    // Over other seeds (other probe phases), the pod never serves once out of the endpoints,
    // and it fails at most what the first failing readiness answer lets through.
    let scenario = load(WITH);
    for seed in 1..=6 {
        let report = simulate(&scenario, seed);
        assert_eq!(report.instances[0].out_of_rotation_requests, Some(0));
        assert!(
            report.requests_failed <= 260,
            "seed {seed}: {}",
            report.requests_failed
        );
    }
}

#[test]
fn a_pod_out_of_the_endpoints_keeps_its_connections_until_their_lifetime() {
    for (lifetime, seconds) in [("20s", 20.0), ("40s", 40.0)] {
        let report = simulate(&parse(&DRAINED.replace("LIFETIME", lifetime)), 3);
        let drained = &report.instances[0];
        let traffic = drained.out_of_rotation_traffic_s.unwrap();
        assert!(
            (seconds - 5.0..=seconds).contains(&traffic),
            "{lifetime}: {traffic}"
        );
        // About 10 connections at 3.33 requests/s each, ending evenly over the lifetime.
        let requests = drained.out_of_rotation_requests.unwrap() as f64;
        let expected = 10.0 * 100.0 / 30.0 * seconds / 2.0;
        assert!(
            (requests - expected).abs() <= 0.4 * expected,
            "{lifetime}: {requests} (expected ≈ {expected})"
        );
        // The other pods never leave the endpoints, and nothing fails.
        assert_eq!(report.requests_failed, 0);
        assert!(report.instances[1..].iter().all(|i| {
            i.out_of_rotation_requests == Some(0) && i.out_of_rotation_traffic_s == Some(0.0)
        }));
    }
}

#[test]
fn the_server_closes_its_connections_when_the_process_exits() {
    // A deadlock with a detector: liveness kills instance 0 after 3 failures; the process
    // exits at once (no drain) and its clients reconnect. They would stay a day otherwise.
    let yaml = r#"
name: deadlock-keep-alive
duration: 5m
fleet: { replicas: 3 }
requests:
  rate: 100
  keep_alive: { clients: 30, connection_lifetime: 24h }
app:
  boot: 5s
  endpoints:
    /livez: { checks: [deadlock] }
  checks:
    deadlock: { internal: deadlock, detect_after: 1s }
container:
  livenessProbe: { httpGet: { path: /livez, port: 8080 }, periodSeconds: 10, failureThreshold: 3 }
faults:
  - { kind: deadlock, instance: 0, at: 60s }
"#;
    let report = simulate(&parse(yaml), 4);
    assert_eq!(report.restarts, 1);
    let kill = report.kills[0].at_s;
    assert!((80.0..=91.0).contains(&kill), "{kill}");
    // Until the kill its 10 clients hang there; afterwards a client that reconnects while the
    // restarting pod is still listed is refused once and tries again elsewhere.
    let pod = &report.instances[0];
    let until_kill = 100.0 / 3.0 * kill;
    assert!(
        (pod.requests as f64 - until_kill).abs() <= 60.0,
        "{} requests, {until_kill} until the kill",
        pod.requests
    );
    let hung = 100.0 / 3.0 * (kill - 60.0);
    assert!(
        (pod.failed as f64 - hung).abs() <= 60.0,
        "{} failed, {hung} while deadlocked",
        pod.failed
    );
    assert_eq!(report.requests_failed, pod.failed);
    let recovered = report.time_to_recover_s.unwrap();
    assert!(recovered <= kill - 60.0 + 2.0, "{recovered}");
}

#[test]
fn without_keep_alive_the_report_has_no_connection_fields() {
    let report = run(PER_REQUEST);
    assert!(report.instances.iter().all(|i| {
        i.out_of_rotation_traffic_s.is_none() && i.out_of_rotation_requests.is_none()
    }));
    let json = serde_json::to_string(&report).unwrap();
    assert!(!json.contains("out_of_rotation"), "{json}");
    let text = run(WITHOUT).to_text();
    assert!(text.contains("requests over"), "{text}");
}

#[test]
fn keep_alive_values_are_checked() {
    let valid = DRAINED.replace("LIFETIME", "60s");
    parse(&valid);
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "clients: 30",
            "clients: 0",
            "requests.keep_alive.clients",
            "between 1 and 100000",
        ),
        (
            "connection_lifetime: 60s",
            "connection_lifetime: 0s",
            "requests.keep_alive.connection_lifetime",
            "longer than zero",
        ),
        (
            "clients: 30,",
            "clients: -3,",
            "requests.keep_alive.clients",
            "a whole number, 0 or more",
        ),
        (
            "{ clients: 30, connection_lifetime: 60s }",
            "{ clients: 30 }",
            "requests.keep_alive",
            "missing field `connection_lifetime`",
        ),
        (
            "connection_lifetime: 60s",
            "connection_lifetime: 60s, idle: 5s",
            "requests.keep_alive.idle",
            "unknown field `idle`",
        ),
        (
            "  endpoints:",
            "  close_connections_when_unready: true\n  endpoints:",
            "app.close_connections_when_unready",
            "readinessProbe",
        ),
        (
            "faults:",
            "routing: { kind: haproxy, check_path: /livez }\nfaults:",
            "requests.keep_alive",
            "kubernetes-service only",
        ),
    ];
    for (from, to, field, reason) in cases {
        let yaml = valid.replacen(from, to, 1);
        assert_ne!(yaml, valid, "case {to} did not apply");
        let (got, text) = reject(&yaml);
        assert_eq!(got, *field, "{text}");
        assert!(text.contains(reason), "expected `{reason}` in: {text}");
        assert!(text.starts_with("bad.yaml: "), "{text}");
    }
}
