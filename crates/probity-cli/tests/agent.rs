//! `probity agent`, run as a binary: the example configurations, errors that name the key and
//! line, the Kubernetes example, and a real run beside the Node service ended by SIGTERM.

mod support_agent;

use std::time::Duration;
use support_agent::*;

#[test]
fn the_examples_validate_and_print_what_each_probe_checks() {
    for example in ["node.toml", "python.yaml"] {
        let path = repository().join("examples/agent").join(example);
        let output = run(&["agent", "--config", path.to_str().unwrap(), "--check"]);
        assert!(
            output.status.success(),
            "{example}: {}",
            text(&output.stderr)
        );
    }
    let path = repository().join("examples/agent/node.toml");
    let output = run(&[
        "agent",
        "--config",
        path.to_str().unwrap(),
        "--print-contract",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let contract: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(contract["service"], "orders-node");
    let liveness = &contract["endpoints"][0];
    assert_eq!(liveness["path"], "/livez");
    assert_eq!(liveness["checks_dependencies"], false);
    assert!(
        liveness["checks"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("event-loop"))
    );
    let checks: Vec<&str> = contract["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|check| check["name"].as_str().unwrap())
        .collect();
    assert_eq!(checks, ["health", "db-pool"]);
    assert_eq!(contract["checks"][0]["interval_ms"], 2000);
    assert_eq!(contract["checks"][0]["timeout_ms"], 1000);
}

#[test]
fn configuration_errors_name_the_file_line_and_why_and_exit_2() {
    let dir = temp_dir("agent-errors");
    let toml = dir.join("typo.toml");
    std::fs::write(
        &toml,
        "service = \"a\"\n\n[readiness.db]\ntcp = { target = \"127.0.0.1:5432\" }\nintervall = \"2s\"\n",
    )
    .unwrap();
    let output = run(&["agent", "--config", toml.to_str().unwrap(), "--check"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!("{}:5:1: unknown key `intervall`", toml.display())),
        "{stderr}"
    );

    let yaml = dir.join("liveness.yaml");
    std::fs::write(
        &yaml,
        "liveness:\n  db:\n    interval: 1s\n    postgres: {url: \"postgres://u:hunter2@db/orders\"}\n",
    )
    .unwrap();
    let output = run(&["agent", "--config", yaml.to_str().unwrap(), "--check"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!("{}:4:5:", yaml.display())),
        "{stderr}"
    );
    assert!(
        stderr.contains("a restart does not fix someone else's outage"),
        "{stderr}"
    );
    assert!(!stderr.contains("hunter2"), "{stderr}");

    let output = run(&["agent", "--config", "/dev/zero"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("unknown file type"));
}

/// The ConfigMap in the Kubernetes example carries the Node example's configuration.
#[test]
fn the_kubernetes_example_carries_the_node_configuration_and_lints_clean() {
    let manifest = repository().join("examples/agent/kubernetes.yaml");
    let text_manifest = std::fs::read_to_string(&manifest).unwrap();
    let start = text_manifest.find("  agent.toml: |\n").unwrap() + "  agent.toml: |\n".len();
    let end = text_manifest[start..].find("\n---").unwrap() + start;
    let embedded: String = text_manifest[start..end]
        .lines()
        .map(|line| line.strip_prefix("    ").unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n");
    let dir = temp_dir("agent-kube");
    let embedded_path = dir.join("embedded.toml");
    std::fs::write(&embedded_path, &embedded).unwrap();
    let contract = |path: &std::path::Path| {
        let output = run(&[
            "agent",
            "--config",
            path.to_str().unwrap(),
            "--print-contract",
        ]);
        assert!(output.status.success(), "{}", text(&output.stderr));
        text(&output.stdout)
    };
    let example_contract = contract(&repository().join("examples/agent/node.toml"));
    assert_eq!(
        contract(&embedded_path),
        example_contract,
        "the ConfigMap drifted from node.toml"
    );

    let contract_path = dir.join("contract.json");
    std::fs::write(&contract_path, &example_contract).unwrap();
    let output = run(&[
        "lint",
        "--contract",
        contract_path.to_str().unwrap(),
        manifest.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stdout));

    let venv = std::env::var_os("PROBITY_VENV")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| repository().join("target/venv"));
    let validator = venv.join("bin/kubernetes-validate");
    if require(validator.is_file(), "kubernetes-validate is not installed") {
        for version in ["1.30.0", "1.37.0"] {
            let status = std::process::Command::new(&validator)
                .args(["--strict", "--quiet", "-k", version])
                .arg(&manifest)
                .status()
                .unwrap();
            assert!(
                status.success(),
                "kubernetes-validate --strict -k {version} failed"
            );
        }
    }
    let promtool = std::process::Command::new("promtool")
        .arg("--version")
        .output();
    if require(promtool.is_ok(), "promtool is not installed") {
        let rule: serde_json::Value = yaml_to_json(
            &std::fs::read_to_string(repository().join("examples/agent/prometheusrule.yaml"))
                .unwrap(),
        );
        let rules = dir.join("rules.yml");
        std::fs::write(&rules, serde_json::to_string(&rule["spec"]).unwrap()).unwrap();
        let output = std::process::Command::new("promtool")
            .args(["check", "rules"])
            .arg(&rules)
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", text(&output.stdout));
    }
}

/// YAML to JSON with the venv's PyYAML (kubernetes-validate brings it), as
/// scripts/check-deploy.sh reads the checkout rule.
fn yaml_to_json(yaml: &str) -> serde_json::Value {
    let venv_python = repository().join("target/venv/bin/python");
    let python = if venv_python.is_file() {
        venv_python
    } else {
        std::path::PathBuf::from("python3")
    };
    let output = std::process::Command::new(python)
        .args([
            "-c",
            "import json,sys,yaml; print(json.dumps(yaml.safe_load(sys.stdin)))",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(yaml.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    serde_json::from_slice(&output.stdout).expect("python3 with PyYAML reads the rule file")
}

#[test]
fn the_agent_serves_beside_the_node_service_and_drains_on_sigterm() {
    if !postgres_available() {
        return;
    }
    let Some(app) = node_app() else {
        return;
    };
    let dir = temp_dir("agent-run");
    let config = node_config(&dir, &app);
    let mut agent = agent(&config);
    let origin = agent.origin();
    assert!(
        wait_for(&format!("{origin}/readyz"), 200, Duration::from_secs(30)),
        "never ready: {:?}",
        get(&format!("{origin}/readyz?verbose"))
    );
    let (status, body) = get(&format!("{origin}/livez?verbose")).unwrap();
    assert_eq!(status, 200);
    assert!(body.contains("[+]event-loop ok"), "{body}");
    let (status, metrics) = get(&format!("{origin}/metrics")).unwrap();
    assert_eq!(status, 200);
    assert!(metrics.contains("probity_check_up"), "{metrics}");
    assert!(metrics.contains("probity_agent_liveness_up"), "{metrics}");
    let (status, contract) = get(&format!("{origin}/contract")).unwrap();
    assert_eq!(status, 200);
    assert!(contract.contains("\"event-loop\""), "{contract}");
    assert_eq!(
        get(&format!("{origin}/agent/livez")).map(|(s, _)| s),
        Some(200)
    );

    // SIGTERM: readiness fails at once, liveness does not, then the agent exits cleanly.
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &agent.child.id().to_string()])
        .status();
    assert!(wait_for(
        &format!("{origin}/readyz"),
        503,
        Duration::from_secs(5)
    ));
    assert_eq!(get(&format!("{origin}/livez")).map(|(s, _)| s), Some(200));
    let status = agent
        .wait_for_exit(Duration::from_secs(30))
        .expect("the agent exits after its drain");
    assert!(status.success(), "{status:?}");
}

#[test]
fn the_agent_logs_what_it_saw_as_json_lines() {
    let dir = temp_dir("agent-logs");
    let config = dir.join("agent.toml");
    // Nothing listens on the app's port: the agent logs what it saw, once.
    std::fs::write(
        &config,
        format!(
            "[app]\nurl = \"http://127.0.0.1:{}\"\n\n[liveness.process]\napp_liveness = {{ url = \"/livez\" }}\ninterval = \"500ms\"\ntimeout = \"300ms\"\n",
            free_port()
        ),
    )
    .unwrap();
    let mut child = probity()
        .args(["agent", "--config"])
        .arg(&config)
        .args(["--listen", "127.0.0.1:0", "--log-format", "json"])
        .env("RUST_LOG", "probity=info")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("probity agent starts");
    let stderr = child.stderr.take().unwrap();
    let (lines, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if lines.send(line).is_err() {
                return;
            }
        }
    });
    let mut seen = None;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while seen.is_none() && std::time::Instant::now() < deadline {
        let Ok(line) = received.recv_timeout(Duration::from_secs(1)) else {
            continue;
        };
        let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        if event["fields"]["message"] == "no sign of life" {
            seen = Some(event);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let event = seen.expect("no JSON log line said what the agent saw");
    assert_eq!(event["level"], "WARN");
    assert_eq!(event["target"], "probity::agent");
    assert_eq!(event["fields"]["condition"], "process");
    assert!(
        event["fields"]["seen"]
            .as_str()
            .unwrap()
            .contains("nothing is listening"),
        "{event}"
    );
}

#[test]
fn a_config_path_that_is_a_fifo_is_refused_at_once() {
    let dir = temp_dir("agent-fifo");
    let fifo = dir.join("agent.toml");
    let _ = std::fs::remove_file(&fifo);
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let output = run(&["agent", "--config", fifo.to_str().unwrap(), "--check"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("is a FIFO, not a regular file"),
        "{}",
        text(&output.stderr)
    );
}
