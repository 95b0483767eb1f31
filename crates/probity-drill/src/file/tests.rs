use super::pod::{PortTarget, PreStop, ProbeAction};
use super::*;
use probity_contract::probe::ProbeKind;
use std::path::Path;

const MINIMAL: &str = r#"service: orders
app:
  command: [node, server.js]
  env:
    PORT: "{port}"
    DATABASE_URL: "{dep.db.url}"
  port: 3000
pod:
  containers:
    - name: orders
      readinessProbe:
        httpGet: { path: /ready, port: 3000 }
        periodSeconds: 2
dependencies:
  db: { url: "postgres://postgres@127.0.0.1:5432/test" }
traffic:
  requests:
    - { path: /orders }
"#;

/// A Deployment of a service named `shop`, its probes as a real one writes them (named ports,
/// a database URL from a Secret), written to a directory of the test's own.
const DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: shop
spec:
  replicas: 3
  selector:
    matchLabels: { app: shop }
  template:
    metadata:
      labels: { app: shop }
    spec:
      terminationGracePeriodSeconds: 30
      containers:
        - name: shop
          image: example.org/shop:1.0.0
          args:
            - --listen=0.0.0.0:8080
            - --admin-listen=0.0.0.0:8081
            - --database-url=$(DATABASE_URL)
          env:
            - name: DATABASE_URL
              valueFrom:
                secretKeyRef: { name: shop-database, key: url }
          ports:
            - { name: http, containerPort: 8080, protocol: TCP }
            - { name: admin, containerPort: 8081, protocol: TCP }
          startupProbe:
            httpGet: { path: /startupz, port: http }
            periodSeconds: 2
            timeoutSeconds: 1
            failureThreshold: 30
          livenessProbe:
            httpGet: { path: /livez, port: http }
            periodSeconds: 10
            timeoutSeconds: 2
            failureThreshold: 3
          readinessProbe:
            httpGet: { path: /readyz, port: http }
            periodSeconds: 5
            timeoutSeconds: 1
            failureThreshold: 2
"#;

fn deployment(test: &str) -> std::path::PathBuf {
    let dir =
        std::env::temp_dir().join(format!("probity-drill-file-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("deployment.yaml");
    std::fs::write(&path, DEPLOYMENT).unwrap();
    path
}

fn parse(text: &str) -> Result<DrillFile, FileError> {
    DrillFile::parse(text, Path::new("drill.yaml"))
}

fn loaded(text: &str) -> Loaded {
    Loaded {
        file: parse(text).unwrap(),
        path: PathBuf::from("drill.yaml"),
        dir: PathBuf::from("."),
    }
}

#[test]
fn a_minimal_file_parses_with_defaults() {
    let file = parse(MINIMAL).unwrap();
    assert_eq!(file.instances, 3);
    assert_eq!(file.traffic.connections(), 32);
    assert!(file.traffic.is_success(201));
    assert!(!file.traffic.is_success(404));
    assert_eq!(file.balancer.mode, BalancerMode::Kubernetes);
    assert_eq!(file.balancer.propagation(), Duration::from_secs(1));
    assert_eq!(file.traffic.requests[0].method, "GET");
    // Every fault of the drill applies when none are listed.
    let names: Vec<String> = file.faults().iter().map(Fault::display_name).collect();
    assert_eq!(
        names,
        [
            "busy",
            "refuse-db",
            "refuse-db-one",
            "blackhole-db",
            "slow-db",
            "flap-db",
            "wedge",
            "terminate",
            "crash",
            "start-during-outage-db"
        ]
    );
}

#[test]
fn an_unknown_key_is_an_error_with_its_line() {
    let text = MINIMAL.replace("  port: 3000\n", "  port: 3000\n  prot: 3001\n");
    let error = parse(&text).unwrap_err();
    assert_eq!(error.line(), Some(8), "{error}");
    assert!(error.to_string().contains("prot"), "{error}");

    // Inside a pasted probe too: Kubernetes' own field names, checked.
    let text = MINIMAL.replace("periodSeconds: 2", "periodSecond: 2");
    let error = parse(&text).unwrap_err();
    assert_eq!(error.line(), Some(13), "{error}");
    assert!(error.to_string().contains("periodSecond"), "{error}");
}

#[test]
fn a_placeholder_naming_nothing_is_an_error_with_its_line() {
    let text = MINIMAL.replace("{dep.db.url}", "{dep.dbb.url}");
    let error = parse(&text).unwrap_err();
    assert_eq!(error.line(), Some(6), "{error}");
    assert!(
        error
            .to_string()
            .contains("`dbb` is not one of dependencies"),
        "{error}"
    );
}

#[test]
fn faults_are_checked_against_what_the_file_declares() {
    let with = |faults: &str| parse(&format!("{MINIMAL}faults:\n{faults}"));
    assert!(with("  - { kind: refuse, dependency: db, scope: one, duration: 5s }\n").is_ok());
    for (faults, message) in [
        ("  - { kind: refuse }\n", "refuse needs a dependency"),
        (
            "  - { kind: refuse, dependency: cache }\n",
            "`cache` is not one of dependencies",
        ),
        (
            "  - { kind: wedge, dependency: db }\n",
            "wedge takes no dependency",
        ),
        (
            "  - { kind: hook, hook: leak }\n",
            "`leak` is not one of hooks",
        ),
        (
            "  - { kind: refuse, dependency: db, latency: 1s }\n",
            "latency applies to slow only",
        ),
        (
            "  - { kind: wedge, scope: one }\n",
            "scope applies to dependency faults",
        ),
        ("  - { kind: busy, duration: 5 }\n", "needs a unit"),
        ("  - { kind: explode }\n", "explode"),
    ] {
        let error = with(faults).unwrap_err().to_string();
        assert!(error.contains(message), "{faults}: {error}");
    }
}

#[test]
fn success_statuses_take_numbers_classes_and_ranges() {
    let text = MINIMAL.replace(
        "traffic:\n",
        "traffic:\n  success: [200, \"3xx\", \"404-404\"]\n",
    );
    let file = parse(&text).unwrap();
    assert!(file.traffic.is_success(200));
    assert!(file.traffic.is_success(302));
    assert!(file.traffic.is_success(404));
    assert!(!file.traffic.is_success(201));
    assert!(!file.traffic.is_success(500));
    let text = MINIMAL.replace("traffic:\n", "traffic:\n  success: [\"2xy\"]\n");
    assert!(parse(&text).unwrap_err().to_string().contains("2xy"));
}

#[test]
fn probes_resolve_with_kubernetes_defaults_and_ports_mapped() {
    let pod = loaded(MINIMAL).pod(None, false).unwrap();
    let readiness = pod.probe(ProbeKind::Readiness).unwrap();
    // SetDefaults_Probe: timeout 1, failure 3, success 1; period as written.
    assert_eq!(readiness.timing.period, Duration::from_secs(2));
    assert_eq!(readiness.timing.timeout, Duration::from_secs(1));
    assert_eq!(readiness.timing.failure_threshold, 3);
    assert_eq!(
        readiness.action,
        ProbeAction::Http {
            target: PortTarget::App,
            path: "/ready".into(),
            headers: vec![]
        }
    );
    assert!(pod.liveness.is_none());
    assert_eq!(pod.grace_period, Duration::from_secs(30));

    // A named port, a preStop sleep, a probe the API server would reject.
    let text = MINIMAL
        .replace("port: 3000 }", "port: admin }")
        .replace("  port: 3000\n", "  port: 3000\n  ports: { admin: 3001 }\n")
        .replace(
            "      readinessProbe:",
            "      lifecycle: { preStop: { sleep: { seconds: 5 } } }\n      readinessProbe:",
        );
    let pod = loaded(&text).pod(None, false).unwrap();
    assert!(matches!(
        &pod.probe(ProbeKind::Readiness).unwrap().action,
        ProbeAction::Http { target: PortTarget::Named(name), .. } if name == "admin"
    ));
    assert_eq!(pod.pre_stop, Some(PreStop::Sleep(Duration::from_secs(5))));

    let text = MINIMAL.replace(
        "periodSeconds: 2",
        "periodSeconds: 2\n        successThreshold: 0\n        timeoutSeconds: -1",
    );
    let error = loaded(&text).pod(None, false).unwrap_err();
    assert!(error.contains("readinessProbe.timeoutSeconds"), "{error}");

    let text = MINIMAL.replace("port: 3000 }", "port: 9999 }");
    let error = loaded(&text).pod(None, false).unwrap_err();
    assert!(error.contains("port 9999 is neither app.port"), "{error}");
}

#[test]
fn probes_come_from_a_real_manifest() {
    let manifest = deployment("probes");
    let text = MINIMAL
        .replace("  port: 3000\n", "  port: 8080\n  ports: { admin: 8081 }\n")
        .replace("port: 3000 }", "port: 8080 }");
    let pod = loaded(&text).pod(Some((&manifest, "shop")), false).unwrap();
    let liveness = pod.probe(ProbeKind::Liveness).unwrap();
    assert_eq!(liveness.timing.period, Duration::from_secs(10));
    assert_eq!(liveness.timing.timeout, Duration::from_secs(2));
    assert!(matches!(
        &liveness.action,
        ProbeAction::Http { target: PortTarget::App, path, .. } if path == "/livez"
    ));
    assert_eq!(
        pod.probe(ProbeKind::Startup)
            .unwrap()
            .timing
            .failure_threshold,
        30
    );
    assert_eq!(pod.grace_period, Duration::from_secs(30));
    assert!(pod.source.contains("Deployment/shop"), "{}", pod.source);

    let error = loaded(&text)
        .pod(Some((&manifest, "web")), false)
        .unwrap_err();
    assert!(
        error.contains("no container named `web` (there are: shop)"),
        "{error}"
    );
}

#[test]
fn the_agent_s_probes_replace_the_app_s() {
    let text = MINIMAL.replace(
        "dependencies:",
        "agent:\n  config: agent.toml\n  port: 9090\n  container:\n    readinessProbe:\n      \
         httpGet: { path: /readyz, port: 9090 }\n    livenessProbe:\n      httpGet: { path: \
         /livez, port: 9090 }\ndependencies:",
    );
    let loaded = loaded(&text);
    let shipped = loaded.pod(None, false).unwrap();
    assert!(shipped.liveness.is_none());
    let with_agent = loaded.pod(None, true).unwrap();
    assert!(matches!(
        &with_agent.probe(ProbeKind::Readiness).unwrap().action,
        ProbeAction::Http { target: PortTarget::Agent, path, .. } if path == "/readyz"
    ));
    assert!(with_agent.liveness.is_some());
    let error = self::loaded(MINIMAL).pod(None, true).unwrap_err();
    assert!(error.contains("needs an agent section"), "{error}");
}

#[test]
fn every_example_drill_file_parses_and_resolves() {
    // Each example service ships its drill files beside it, as `drill*.yaml`.
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut files = Vec::new();
    for service in std::fs::read_dir(&examples).unwrap() {
        let dir = service.unwrap().path();
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with("drill") && name.ends_with(".yaml") {
                files.push(path);
            }
        }
    }
    assert!(
        !files.is_empty(),
        "no drill file under {}",
        examples.display()
    );
    let mut hooks = 0;
    for path in &files {
        let loaded =
            DrillFile::load(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        loaded
            .pod(None, false)
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        hooks += loaded
            .file
            .faults()
            .iter()
            .filter(|f| f.kind == FaultKind::Hook)
            .count();
    }
    // At least one ships app-assisted faults.
    assert!(hooks > 0, "{files:?}");
}

#[test]
fn a_starting_file_from_a_manifest_parses_and_marks_its_guesses() {
    let manifest = deployment("init");
    let text = init::starting_file(&manifest, "shop", "deployment.yaml").unwrap();
    assert!(text.contains("# GUESS:"), "{text}");
    assert!(text.contains("--listen=127.0.0.1:{port}"), "{text}");
    assert!(
        text.contains("--admin-listen=127.0.0.1:{port.admin}"),
        "{text}"
    );
    // DATABASE_URL comes from a Secret: a guessed dependency, marked.
    assert!(
        text.contains("DATABASE_URL: \"{dep.db.url}\"   # GUESS"),
        "{text}"
    );
    let file = parse(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    assert_eq!(file.app.port, 8080);
    assert_eq!(file.app.ports.get("admin"), Some(&8081));
    assert!(file.dependencies.contains_key("db"));
    let loaded = Loaded {
        file,
        path: manifest.with_file_name("drill.yaml"),
        dir: manifest.parent().unwrap().to_owned(),
    };
    let pod = loaded.pod(None, false).unwrap();
    assert!(pod.readiness.is_some());
}

#[test]
fn traffic_requests_have_names_success_markers_and_captures() {
    let text = MINIMAL.replace(
        "traffic:\n  requests:\n    - { path: /orders }\n",
        "traffic:\n  requests:\n    - { name: write, method: POST, path: /orders, capture: location }\n    \
         - { name: read, path: \"{captured.write}\", success: [200], marker: { header: x-degraded, value: db } }\n",
    );
    let file = parse(&text).unwrap();
    assert_eq!(file.traffic.class_of("read"), Some(1));
    assert!(file.traffic.is_success_of(0, 201));
    assert!(
        !file.traffic.is_success_of(1, 201),
        "read's own success: 200 only"
    );
    assert_eq!(
        file.traffic.requests[1].marker.as_ref().unwrap().header,
        "x-degraded"
    );
    // A captured value from a request that captures nothing, or a placeholder of an instance.
    for (path, message) in [
        (
            "\"{captured.read}\"",
            "must be a traffic request with `capture`",
        ),
        ("\"/x/{port}\"", "a traffic path takes only {captured.NAME}"),
    ] {
        let bad = text.replace("\"{captured.write}\"", path);
        let error = parse(&bad).unwrap_err().to_string();
        assert!(error.contains(message), "{path}: {error}");
    }
    let twice = MINIMAL.replace(
        "    - { path: /orders }\n",
        "    - { path: /orders }\n    - { path: /orders }\n",
    );
    let error = parse(&twice).unwrap_err().to_string();
    assert!(
        error.contains("`GET /orders` names two requests"),
        "{error}"
    );
}

#[test]
fn the_new_fault_keys_are_checked_against_what_the_file_declares() {
    let with = |faults: &str| parse(&format!("{MINIMAL}faults:\n{faults}"));
    let file = with(
        "  - { kind: busy, scope: one }\n\
         \x20 - { kind: busy, cost: { bare: { args: [--no-checks] } }, targets: { check_cost: 5% } }\n\
         \x20 - { kind: terminate, app: { env: { BOOT_DELAY: 12s }, args: [\"--dir={dir}\"] }, targets: { started_within: 20s } }\n\
         \x20 - { kind: refuse, dependency: db, targets: { stays_in_rotation: true, served: { GET /orders: 99% }, served_again_within: 3s, liveness_failures: 0 } }\n",
    )
    .unwrap();
    let faults = file.faults();
    assert_eq!(faults[1].targets.check_cost, Some(Share(0.05)));
    assert_eq!(faults[3].targets.served["GET /orders"], Share(0.99));
    for (faults, message) in [
        (
            "  - { kind: refuse, dependency: db, cost: {} }\n",
            "cost applies to busy only",
        ),
        (
            "  - { kind: busy, scope: one, cost: {} }\n",
            "not with scope one",
        ),
        (
            "  - { kind: busy, targets: { check_cost: 3% } }\n",
            "check_cost needs cost",
        ),
        (
            "  - { kind: refuse, dependency: db, app: { args: [-x] } }\n",
            "app applies to the processes a fault starts",
        ),
        (
            "  - { kind: refuse, dependency: db, targets: { served: { reads: 99% } } }\n",
            "`reads` is not the name of a traffic request",
        ),
        (
            "  - { kind: refuse, dependency: db, targets: { served: { GET /orders: 150% } } }\n",
            "a share from 0 to 1",
        ),
        (
            "  - { kind: refuse, dependency: db, targets: { unmarked_within: 2s } }\n",
            "needs a traffic request with a marker",
        ),
        (
            "  - { kind: refuse, dependency: db, targets: { lost_writes: 0 } }\n",
            "need a delivery section",
        ),
        (
            "  - { kind: terminate, app: { args: [\"{dep.nope.url}\"] } }\n",
            "`nope` is not one of dependencies",
        ),
    ] {
        let error = with(faults).unwrap_err().to_string();
        assert!(error.contains(message), "{faults}: {error}");
    }
}

#[test]
fn delivery_names_a_broker_dependency_and_a_traffic_request() {
    let base = MINIMAL.replace(
        "dependencies:\n",
        "dependencies:\n  broker: { url: \"amqp://guest:guest@127.0.0.1:5672/%2f\" }\n",
    );
    let with = |delivery: &str| parse(&format!("{base}delivery: {delivery}\n"));
    let file =
        with("{ dependency: broker, queue: \"{run}.{name}\", writes: GET /orders }").unwrap();
    assert_eq!(file.delivery.unwrap().wait(), Duration::from_secs(60));
    for (delivery, message) in [
        (
            "{ dependency: db, queue: q, writes: GET /orders }",
            "with an amqp:// URL",
        ),
        (
            "{ dependency: broker, queue: q, writes: POST /orders }",
            "`POST /orders` is not the name of a traffic request",
        ),
        (
            "{ dependency: broker, queue: \"{port.nope}\", writes: GET /orders }",
            "`nope` is not one of app.ports",
        ),
    ] {
        let error = with(delivery).unwrap_err().to_string();
        assert!(error.contains(message), "{delivery}: {error}");
    }
}

#[test]
fn a_drill_file_path_that_is_not_a_regular_file_is_refused_before_it_is_opened() {
    let dir = std::env::temp_dir().join(format!("probity-drill-fifo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("drill.yaml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // No writer ever comes: a load that opened it would block, so it runs on a thread the test
    // waits for with a deadline.
    let (sender, receiver) = std::sync::mpsc::channel();
    let path = fifo.clone();
    std::thread::spawn(move || {
        let _ = sender.send(DrillFile::load(&path).map(|_| ()));
    });
    let error = receiver
        .recv_timeout(Duration::from_secs(10))
        .expect("the load returned rather than blocked")
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        format!("{}: a FIFO, not a regular file", fifo.display())
    );
    let error = DrillFile::load(Path::new("/dev/zero")).unwrap_err();
    assert_eq!(error.to_string(), "/dev/zero: a device, not a regular file");
    let error = DrillFile::load(&dir).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("{}: a directory, not a regular file", dir.display())
    );
    let _ = std::fs::remove_dir_all(dir);
}
