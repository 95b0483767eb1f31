//! `probity inspect`, run as a binary against checkout, the agent, the Node service, and small
//! deliberately bad servers: one that always answers 200, one that sleeps past the probe's
//! timeout, one whose liveness checks the database.

mod support_agent;

use std::process::Output;
use std::time::Duration;
use support_agent::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A bad server on a free port: `answer(path)` gives the delay, status and body.
fn bad_server(answer: fn(&str) -> (Duration, u16, String)) -> (u16, std::thread::JoinHandle<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            // Serves for at most two minutes: the test process ends it sooner.
            let until = tokio::time::Instant::now() + Duration::from_secs(120);
            while let Ok(Ok((mut stream, _))) =
                tokio::time::timeout_at(until, listener.accept()).await
            {
                tokio::spawn(async move {
                    let mut buffer = vec![0u8; 4096];
                    let read = stream.read(&mut buffer).await.unwrap_or(0);
                    let request = String::from_utf8_lossy(&buffer[..read]).into_owned();
                    let path = request.split(' ').nth(1).unwrap_or("/").to_owned();
                    let (delay, status, body) = answer(&path);
                    tokio::time::sleep(delay).await;
                    let response = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(response.as_bytes()).await;
                });
            }
        });
    });
    (port, thread)
}

fn inspect(args: &[&str]) -> (Output, String) {
    let mut all = vec!["inspect"];
    all.extend_from_slice(args);
    let output = run(&all);
    let stdout = text(&output.stdout);
    eprintln!(
        "probity {}:\n{stdout}{}",
        all.join(" "),
        text(&output.stderr)
    );
    (output, stdout)
}

fn rules(stdout: &str) -> Vec<String> {
    let report: serde_json::Value = serde_json::from_str(stdout).expect("JSON report");
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|finding| finding["rule"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_server_that_always_answers_200_is_found_out() {
    let (port, _server) = bad_server(|_| (Duration::ZERO, 200, "OK".to_owned()));
    let origin = format!("http://127.0.0.1:{port}");
    let (output, stdout) = inspect(&[
        "--requests",
        "5",
        "--json",
        &format!("{origin}/livez"),
        &format!("{origin}/readyz"),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let found = rules(&stdout);
    for rule in ["identical-liveness-readiness", "cacheable", "no-contract"] {
        assert!(
            found.iter().any(|found| found == rule),
            "{rule} missing: {found:?}"
        );
    }

    // Its manifest sends both probes to one /health.
    let dir = temp_dir("inspect-always");
    let manifest = dir.join("pod.yaml");
    std::fs::write(
        &manifest,
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: always}}\nspec:\n  containers:\n  - name: app\n    image: a\n    livenessProbe: {{httpGet: {{path: /health, port: {port}}}}}\n    readinessProbe: {{httpGet: {{path: /health, port: {port}}}}}\n"
        ),
    )
    .unwrap();
    let (output, stdout) = inspect(&[
        "--requests",
        "3",
        "--manifest",
        manifest.to_str().unwrap(),
        &format!("{origin}/health"),
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout.contains("warning[same-endpoint-liveness-readiness]"),
        "{stdout}"
    );
    assert!(stdout.contains("(liveness, readiness)"), "{stdout}");
}

#[test]
fn an_endpoint_slower_than_the_probe_timeout_is_named_with_both_figures() {
    let (port, _server) = bad_server(|path| {
        if path.starts_with("/readyz") {
            (Duration::from_millis(1500), 200, "ready".to_owned())
        } else {
            (Duration::ZERO, 200, "alive".to_owned())
        }
    });
    let dir = temp_dir("inspect-slow");
    let manifest = dir.join("deploy.yaml");
    std::fs::write(
        &manifest,
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: slow}}\nspec:\n  selector: {{matchLabels: {{app: slow}}}}\n  template:\n    metadata: {{labels: {{app: slow}}}}\n    spec:\n      containers:\n      - name: app\n        image: a\n        ports: [{{name: http, containerPort: {port}}}]\n        readinessProbe: {{httpGet: {{path: /readyz, port: http}}, timeoutSeconds: 1}}\n"
        ),
    )
    .unwrap();
    let url = format!("http://127.0.0.1:{port}/readyz");
    let (output, stdout) = inspect(&[
        "--requests",
        "3",
        "--manifest",
        manifest.to_str().unwrap(),
        &url,
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout.contains("warning[slower-than-probe-timeout]"),
        "{stdout}"
    );
    assert!(
        stdout.contains("but the probe's timeoutSeconds is 1"),
        "{stdout}"
    );

    // With a request timeout below the delay, every request is a timeout.
    let (output, stdout) = inspect(&["--requests", "2", "--timeout", "500ms", "--json", &url]);
    assert_eq!(output.status.code(), Some(1));
    assert!(rules(&stdout).contains(&"timeouts".to_owned()), "{stdout}");
}

#[test]
fn a_liveness_endpoint_that_checks_the_database_is_named() {
    if !postgres_available() {
        return;
    }
    let (port, _server) = bad_server(|path| {
        // The article's /health: liveness that asks the database.
        let database = std::net::TcpStream::connect("127.0.0.1:5432").is_ok();
        let body = format!(
            "{{\"status\":\"{}\",\"database\":\"{}\"}}",
            if database { "ok" } else { "unhealthy" },
            if database { "up" } else { "down" }
        );
        let _ = path;
        (Duration::ZERO, if database { 200 } else { 503 }, body)
    });
    let (output, stdout) = inspect(&[
        "--requests",
        "3",
        "--json",
        &format!("http://127.0.0.1:{port}/livez"),
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        rules(&stdout).contains(&"liveness-names-dependency".to_owned()),
        "{stdout}"
    );
}

#[test]
fn checkout_inspects_clean_with_its_contract() {
    let checkout = checkout_binary();
    let (public, admin) = (free_port(), free_port());
    let dir = temp_dir("inspect-checkout");
    let child = std::process::Command::new(checkout)
        .args(["--listen", &format!("127.0.0.1:{public}")])
        .args(["--admin-listen", &format!("127.0.0.1:{admin}")])
        .arg("--data-dir")
        .arg(&dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let _checkout = Process {
        child,
        port: public,
    };
    let origin = format!("http://127.0.0.1:{public}");
    assert!(wait_for(
        &format!("{origin}/readyz"),
        200,
        Duration::from_secs(60)
    ));
    let (output, stdout) = inspect(&[
        "--requests",
        "10",
        "--contract",
        &format!("http://127.0.0.1:{admin}/contract"),
        &origin,
    ]);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    for path in ["/livez", "/readyz", "/startupz"] {
        assert!(stdout.contains(&format!("{origin}{path} (")), "{stdout}");
    }
    assert!(stdout.contains("cache-control: no-store"), "{stdout}");
    assert!(stdout.contains("published"), "{stdout}");
}

#[test]
fn the_agent_inspects_clean_and_the_node_service_behind_it_does_not() {
    if !postgres_available() {
        return;
    }
    let Some(app) = node_app() else {
        return;
    };
    let dir = temp_dir("inspect-agent");
    let agent = agent(&node_config(&dir, &app));
    let origin = agent.origin();
    assert!(wait_for(
        &format!("{origin}/readyz"),
        200,
        Duration::from_secs(30)
    ));
    let (output, stdout) = inspect(&["--requests", "10", &origin]);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains(&format!("contract at {origin}/contract: published")),
        "{stdout}"
    );

    // The service itself: its /health does a query on every call and sets no cache header.
    let (output, stdout) = inspect(&[
        "--requests",
        "10",
        "--json",
        &format!("{}/livez", app.origin()),
        &format!("{}/health", app.origin()),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let found = rules(&stdout);
    assert!(found.contains(&"cacheable".to_owned()), "{found:?}");
    assert!(found.contains(&"no-contract".to_owned()), "{found:?}");
}

#[test]
fn bad_input_exits_2() {
    let (output, _) = inspect(&["not a url"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("is not an http:// URL"));
    let port = free_port();
    let (output, _) = inspect(&[&format!("http://127.0.0.1:{port}")]);
    assert_eq!(output.status.code(), Some(2));
    let (output, _) = inspect(&["--requests", "0", "http://127.0.0.1:1/livez"]);
    assert_eq!(output.status.code(), Some(2));
}
