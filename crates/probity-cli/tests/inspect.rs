//! `probity inspect`, run as a binary against checkout, the agent, the Node service, and small
//! real HTTP servers started by the tests (plain and TLS) that answer as real services do:
//! one that always answers 200, one that sleeps past the probe's timeout, one whose liveness
//! checks the database, a single-page app's catch-all, redirects within and out of the origin,
//! bodies naming their checks with booleans or in Spring Boot's shape, a hostile body, a
//! server that never answers, one whose headers are too large.

mod support_agent;

use std::process::Output;
use std::sync::Arc;
use std::time::Duration;
use support_agent::*;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// What a test server got.
struct Request {
    path: String,
    head: String,
}

/// What a test server answers.
struct Reply {
    delay: Duration,
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn new(status: u16, content_type: &str, body: impl Into<String>) -> Reply {
        Reply {
            delay: Duration::ZERO,
            status,
            headers: vec![("content-type".to_owned(), content_type.to_owned())],
            body: body.into(),
        }
    }

    fn text(status: u16, body: impl Into<String>) -> Reply {
        Reply::new(status, "text/plain", body)
    }

    fn json(status: u16, body: impl Into<String>) -> Reply {
        Reply::new(status, "application/json", body).header("cache-control", "no-store")
    }

    fn header(mut self, name: &str, value: impl Into<String>) -> Reply {
        self.headers.push((name.to_owned(), value.into()));
        self
    }

    fn after(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }
}

/// `answer` gives the reply to a request, or `None` to hold the connection without a word.
type Answer = fn(&Request) -> Option<Reply>;

async fn respond<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, answer: Answer) {
    let mut head = Vec::new();
    let mut buffer = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 << 10 {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buffer[..n]),
        }
        // Not HTTP (a TLS hello): 400 at once, as HTTP servers answer it.
        if !head[0].is_ascii_uppercase() {
            let _ = stream
                .write_all(
                    b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await;
            let _ = stream.shutdown().await;
            return;
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let path = head.split(' ').nth(1).unwrap_or("/").to_owned();
    let Some(reply) = answer(&Request { path, head }) else {
        // Never answers; the test process ends it.
        tokio::time::sleep(Duration::from_secs(120)).await;
        return;
    };
    tokio::time::sleep(reply.delay).await;
    let mut response = format!("HTTP/1.1 {} X\r\n", reply.status);
    for (name, value) in &reply.headers {
        response.push_str(&format!("{name}: {value}\r\n"));
    }
    response.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n{}",
        reply.body.len(),
        reply.body
    ));
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// A real HTTP/1.1 server on a free loopback port, plain or TLS (a certificate generated for
/// the run, which the kubelet and `probity inspect` do not verify), serving for at most two
/// minutes.
fn serve(answer: Answer, tls: bool) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let acceptor = tls.then(acceptor);
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let until = tokio::time::Instant::now() + Duration::from_secs(120);
            while let Ok(Ok((stream, _))) = tokio::time::timeout_at(until, listener.accept()).await
            {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    match acceptor {
                        Some(acceptor) => {
                            if let Ok(stream) = acceptor.accept(stream).await {
                                respond(stream, answer).await;
                            }
                        }
                        None => respond(stream, answer).await,
                    }
                });
            }
        });
    });
    port
}

fn server(answer: Answer) -> u16 {
    serve(answer, false)
}

fn acceptor() -> tokio_rustls::TlsAcceptor {
    use tokio_rustls::rustls::ServerConfig;
    use tokio_rustls::rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
    let key = rcgen::KeyPair::generate().unwrap();
    let certificate = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let config = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(
            vec![certificate.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .unwrap();
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
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
    let port = server(|_| Some(Reply::text(200, "OK")));
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
    // It answers any path alike: a path that cannot exist says "OK" too.
    for rule in [
        "identical-liveness-readiness",
        "catch-all",
        "cacheable",
        "no-contract",
    ] {
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
    let port = server(|request| {
        Some(if request.path.starts_with("/readyz") {
            Reply::text(200, "ready").after(Duration::from_millis(1500))
        } else if request.path.starts_with("/livez") {
            Reply::text(200, "alive")
        } else {
            Reply::text(404, "not found")
        })
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

    // With a request timeout below the delay, no request gets an answer: an error, not a
    // finding.
    let (output, stdout) = inspect(&["--requests", "2", "--timeout", "500ms", "--json", &url]);
    assert_eq!(output.status.code(), Some(2));
    assert!(rules(&stdout).contains(&"no-answer".to_owned()), "{stdout}");
    assert!(
        text(&output.stderr).contains("no answer to 2 request(s): no answer within 500ms"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn a_liveness_endpoint_that_checks_the_database_is_named() {
    if !postgres_available() {
        return;
    }
    let port = server(|_| {
        // The article's /health: liveness that asks the database.
        let database = std::net::TcpStream::connect("127.0.0.1:5432").is_ok();
        let body = format!(
            "{{\"status\":\"{}\",\"database\":\"{}\"}}",
            if database { "ok" } else { "unhealthy" },
            if database { "up" } else { "down" }
        );
        Some(Reply::json(if database { 200 } else { 503 }, body))
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
    let (public, admin) = free_ports();
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
    assert!(text(&output.stderr).contains("is not an http:// or https:// URL"));
    let (output, _) = inspect(&["--requests", "0", "http://127.0.0.1:1/livez"]);
    assert_eq!(output.status.code(), Some(2));
    let (output, _) = inspect(&["--timeout", "5", "http://127.0.0.1:1/livez"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("no unit"),
        "{}",
        text(&output.stderr)
    );
}

/// The index page a single-page app serves for every path it does not know.
fn spa_index() -> Reply {
    Reply::new(
        200,
        "text/html; charset=utf-8",
        "<!doctype html><html><head><title>Shop</title></head><body><div id=root></div>\
         <script src=/app.js></script></body></html>",
    )
}

#[test]
fn a_single_page_apps_catch_all_is_not_a_health_endpoint() {
    // The app's API has a health endpoint; every other path is the app's index page.
    let port = server(|request| {
        Some(match request.path.as_str() {
            "/api/health" => Reply::json(200, r#"{"status":"ok"}"#),
            _ => spa_index(),
        })
    });
    let origin = format!("http://127.0.0.1:{port}");

    // From the base URL, only the API's endpoint is found: /healthz, /health, /livez… all
    // answer the index page, as a path that cannot exist does.
    let (output, stdout) = inspect(&["--requests", "3", "--json", &origin]);
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("JSON report");
    let urls: Vec<&str> = report["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|endpoint| endpoint["url"].as_str().unwrap())
        .collect();
    assert_eq!(urls, [format!("{origin}/api/health")], "{stdout}");
    assert_ne!(output.status.code(), Some(2));

    // Named, a catch-all path is an error finding: a probe there passes while anything listens.
    let (output, stdout) = inspect(&["--requests", "3", &format!("{origin}/healthz")]);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("error[catch-all]"), "{stdout}");
    assert!(stdout.contains("200 text/html"), "{stdout}");

    // An app with no health endpoint at all: nothing found is an error naming the catch-all.
    let port = server(|_| Some(spa_index()));
    let (output, _) = inspect(&[&format!("http://127.0.0.1:{port}/")]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("a catch-all, not a health endpoint"),
        "{stderr}"
    );
    assert!(stderr.contains("none of the 33 health paths"), "{stderr}");
}

#[test]
fn a_handler_mounted_on_a_prefix_is_one_endpoint() {
    // Express's `app.use('/health', …)` under a mount path: /svc/health/live, /svc/health/ready
    // and /svc/health/anything all reach the one handler.
    let port = server(|request| {
        let path = request.path.as_str();
        Some(
            if path == "/svc/health" || path.starts_with("/svc/health/") {
                Reply::json(200, r#"{"status":"ok"}"#)
            } else {
                Reply::json(404, r#"{"error":"not found"}"#)
            },
        )
    });
    let base = format!("http://127.0.0.1:{port}/svc/");
    let (_, stdout) = inspect(&["--requests", "2", "--json", &base]);
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("JSON report");
    let urls: Vec<&str> = report["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|endpoint| endpoint["url"].as_str().unwrap())
        .collect();
    assert_eq!(urls, [format!("{base}health")], "{stdout}");

    // Nothing under the origin itself: the error says to name the mount path.
    let (output, _) = inspect(&[&format!("http://127.0.0.1:{port}")]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("or the base the service is mounted at"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn an_html_page_at_a_health_path_is_named() {
    // Not a catch-all (other paths are 404), but a page: a login form, a status page.
    let port = server(|request| {
        Some(match request.path.as_str() {
            "/status" => Reply::new(200, "text/html", "<html><body>Sign in</body></html>")
                .header("cache-control", "no-store"),
            // Flask's default type on a bare status word: a status, not a page.
            "/health" => Reply::new(200, "text/html; charset=utf-8", "OK")
                .header("cache-control", "no-store"),
            _ => Reply::text(404, "not found"),
        })
    });
    let (output, stdout) = inspect(&[
        "--requests",
        "2",
        "--json",
        &format!("http://127.0.0.1:{port}"),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("JSON report");
    let findings: Vec<(String, String)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|finding| {
            (
                finding["rule"].as_str().unwrap().to_owned(),
                finding["endpoint"]
                    .as_str()
                    .unwrap()
                    .rsplit('/')
                    .next()
                    .unwrap()
                    .to_owned(),
            )
        })
        .collect();
    assert_eq!(
        findings,
        [
            ("html-answer".to_owned(), "status".to_owned()),
            ("no-contract".to_owned(), "contract".to_owned())
        ],
        "{stdout}"
    );
}

#[test]
fn a_redirect_within_the_origin_is_followed_and_judged_where_it_lands() {
    let port = server(|request| {
        Some(match request.path.as_str() {
            "/livez" => Reply::text(307, "").header("location", "/health/live"),
            "/health/live" => Reply::json(200, r#"{"status":"UP"}"#),
            "/readyz" => Reply::text(302, "").header("location", "/health/ready"),
            "/health/ready" => Reply::json(
                503,
                r#"{"status":"DOWN","components":{"db":{"status":"DOWN"},"ping":{"status":"UP"}}}"#,
            ),
            "/loop" => Reply::text(302, "").header("location", "/loop"),
            _ => Reply::text(404, "not found"),
        })
    });
    let origin = format!("http://127.0.0.1:{port}");
    let (output, stdout) = inspect(&[
        "--requests",
        "3",
        "--json",
        &format!("{origin}/livez"),
        &format!("{origin}/readyz"),
        &format!("{origin}/loop"),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("JSON report");
    let endpoints = report["endpoints"].as_array().unwrap();
    // Judged where they land: /readyz's 302 is not a pass, the 503 behind it is.
    assert_eq!(endpoints[0]["statuses"], serde_json::json!({"200": 3}));
    assert_eq!(endpoints[1]["statuses"], serde_json::json!({"503": 3}));
    assert_eq!(
        endpoints[1]["redirects"],
        serde_json::json!([format!("302 {origin}/health/ready")])
    );
    assert_eq!(endpoints[1]["names_failures"], true);
    assert_eq!(endpoints[1]["checks"][0]["name"], "db");
    assert_eq!(endpoints[1]["checks"][0]["state"], "fail");
    let found = rules(&stdout);
    assert_eq!(
        found.iter().filter(|rule| *rule == "redirect").count(),
        2,
        "{found:?}"
    );
    assert!(found.contains(&"redirect-loop".to_owned()), "{found:?}");
}

#[test]
fn a_redirect_to_another_origin_is_reported_not_followed() {
    let port = server(|request| {
        Some(match request.path.as_str() {
            "/health" => Reply::text(302, "").header(
                "location",
                "https://login.example.invalid/sso?return=/health&token=SECRETTOKEN",
            ),
            _ => Reply::text(404, "not found"),
        })
    });
    let (output, stdout) = inspect(&[
        "--requests",
        "2",
        &format!("http://127.0.0.1:{port}/health"),
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout.contains("error[redirect-to-other-origin]"),
        "{stdout}"
    );
    assert!(stdout.contains("302×2"), "{stdout}");
    assert!(
        stdout.contains("counts the redirect as a success"),
        "{stdout}"
    );
    assert!(stdout.contains("login.example.invalid"), "{stdout}");
    assert!(!stdout.contains("SECRETTOKEN"), "{stdout}");
}

#[test]
fn bodies_that_name_checks_with_booleans_or_statuses_are_read() {
    let port = server(|request| {
        Some(match request.path.as_str() {
            // A failing answer naming each backend with a boolean.
            "/readyz" => Reply::json(503, r#"{"storage": true, "cache": false}"#),
            // 200 while the body says it fails.
            "/health" => Reply::json(200, r#"{"status":"DOWN","db":"down"}"#),
            // 200 with a failing check and no overall word.
            "/status" => Reply::json(200, r#"{"storage": true, "cache": false}"#),
            // A failing answer that names nothing.
            "/livez" => Reply::json(503, r#"{"status":"down"}"#),
            _ => Reply::text(404, "not found"),
        })
    });
    let origin = format!("http://127.0.0.1:{port}");
    let (_, stdout) = inspect(&["--requests", "2", &format!("{origin}/readyz")]);
    assert!(
        stdout.contains("failing answers name what failed: yes"),
        "{stdout}"
    );
    assert!(
        stdout.contains("checks named: cache fail, storage pass"),
        "{stdout}"
    );
    assert!(!stdout.contains("failures-unnamed"), "{stdout}");

    let (_, stdout) = inspect(&["--requests", "2", "--json", &format!("{origin}/livez")]);
    assert!(
        rules(&stdout).contains(&"failures-unnamed".to_owned()),
        "{stdout}"
    );
    let (_, stdout) = inspect(&["--requests", "2", "--json", &format!("{origin}/health")]);
    assert!(
        rules(&stdout).contains(&"passes-while-body-fails".to_owned()),
        "{stdout}"
    );
    let (_, stdout) = inspect(&["--requests", "2", "--json", &format!("{origin}/status")]);
    assert!(
        rules(&stdout).contains(&"passes-with-failing-check".to_owned()),
        "{stdout}"
    );
}

#[test]
fn spring_boot_actuator_paths_are_found_and_their_bodies_read() {
    let port = server(|request| {
        Some(match request.path.as_str() {
            "/actuator/health" => Reply::json(
                503,
                r#"{"status":"DOWN","components":{"db":{"status":"DOWN","details":{"error":"timeout"}},"diskSpace":{"status":"UP"}},"groups":["liveness","readiness"]}"#,
            ),
            "/actuator/health/liveness" => Reply::json(200, r#"{"status":"UP"}"#),
            "/actuator/health/readiness" => Reply::json(
                503,
                r#"{"status":"OUT_OF_SERVICE","components":{"readinessState":{"status":"OUT_OF_SERVICE"}}}"#,
            ),
            // Spring's own 404 for the rest.
            path => Reply::json(
                404,
                format!(r#"{{"status":404,"error":"Not Found","path":"{path}"}}"#),
            ),
        })
    });
    let origin = format!("http://127.0.0.1:{port}");
    let (_, stdout) = inspect(&["--requests", "2", "--json", &origin]);
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("JSON report");
    let found: Vec<(String, String)> = report["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|endpoint| {
            (
                endpoint["url"].as_str().unwrap().replace(&origin, ""),
                endpoint["roles"][0].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            ("/actuator/health".to_owned(), "health".to_owned()),
            (
                "/actuator/health/liveness".to_owned(),
                "liveness".to_owned()
            ),
            (
                "/actuator/health/readiness".to_owned(),
                "readiness".to_owned()
            ),
        ]
    );
    let endpoints = report["endpoints"].as_array().unwrap();
    assert_eq!(endpoints[0]["checks"][0]["name"], "db");
    assert_eq!(endpoints[0]["names_failures"], true);
    assert_eq!(endpoints[2]["checks"][0]["name"], "readinessState");
    assert_eq!(endpoints[2]["checks"][0]["state"], "fail");
}

#[test]
fn credentials_in_the_url_are_used_and_never_printed() {
    // The endpoint wants basic auth and echoes the query it got.
    let port = server(|request| {
        let authorised = request
            .head
            .to_ascii_lowercase()
            .contains("authorization: basic");
        Some(match (request.path.split('?').next(), authorised) {
            (Some("/health"), true) => Reply::text(503, format!("checked {}", request.path)),
            (Some("/health"), false) => Reply::text(401, "who are you"),
            _ => Reply::text(404, "not found"),
        })
    });
    let url = format!(
        "http://probe:PASSWORD123@127.0.0.1:{port}/health?token=TOKEN456&api_key=KEY789&region=eu"
    );
    for format in [None, Some("--json")] {
        let mut args = vec!["--requests", "2"];
        args.extend(format);
        args.push(&url);
        let (output, stdout) = inspect(&args);
        let everything = format!("{stdout}{}", text(&output.stderr));
        for secret in ["PASSWORD123", "TOKEN456", "KEY789"] {
            assert!(
                !everything.contains(secret),
                "{secret} printed:\n{everything}"
            );
        }
        // The credentials were sent: the answers are the endpoint's own 503s, not 401s.
        assert!(everything.contains("503"), "{everything}");
        assert!(!everything.contains("401"), "{everything}");
        assert!(everything.contains("region=eu"), "{everything}");
    }
    // Nor in an error.
    let (output, _) = inspect(&[&format!(
        "http://probe:PASSWORD123@127.0.0.1:{}/health?token=TOKEN456",
        free_port()
    )]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("connection refused"), "{stderr}");
    assert!(
        !stderr.contains("PASSWORD123") && !stderr.contains("TOKEN456"),
        "{stderr}"
    );
}

#[test]
fn a_hostile_body_is_printed_with_its_escapes_written_out() {
    let port = server(|request| {
        Some(match request.path.as_str() {
            // Retitles the terminal, clears it, then reverses what follows.
            "/livez" => Reply::text(503, "\u{1b}]0;PWNED\u{7}\u{1b}[2J\u{202e}all good"),
            "/readyz" => Reply::json(503, r#"{"\u001b[31mdb\u001b[0m": false}"#),
            _ => Reply::text(404, "not found"),
        })
    });
    let origin = format!("http://127.0.0.1:{port}");
    let (_, stdout) = inspect(&[
        "--requests",
        "2",
        &format!("{origin}/livez"),
        &format!("{origin}/readyz"),
    ]);
    for raw in ['\u{1b}', '\u{7}', '\u{202e}'] {
        assert!(!stdout.contains(raw), "{raw:?} printed raw:\n{stdout:?}");
    }
    assert!(
        stdout.contains("body: \\u{1b}]0;PWNED\\u{7}\\u{1b}[2J\\u{202e}all good"),
        "{stdout}"
    );
    assert!(
        stdout.contains("checks named: \\u{1b}[31mdb\\u{1b}[0m fail"),
        "{stdout}"
    );
}

#[test]
fn a_server_that_never_answers_exits_2() {
    let port = server(|_| None);
    let (output, stdout) = inspect(&[
        "--timeout",
        "300ms",
        "--json",
        &format!("http://127.0.0.1:{port}/readyz"),
    ]);
    assert_eq!(output.status.code(), Some(2), "{stdout}");
    let stderr = text(&output.stderr);
    // It stops asking after three unanswered requests, not the default twenty.
    assert!(
        stderr.contains("/readyz: no answer to 3 request(s): no answer within 300ms"),
        "{stderr}"
    );
    // A base URL that never answers: an error at once.
    let (output, _) = inspect(&["--timeout", "300ms", &format!("http://127.0.0.1:{port}")]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("no answer within 300ms"));
}

#[test]
fn each_way_of_not_answering_is_named() {
    // Nothing listens.
    let closed = free_port();
    for url in [
        format!("http://127.0.0.1:{closed}/livez"),
        format!("http://127.0.0.1:{closed}"),
    ] {
        let (output, _) = inspect(&["--requests", "2", &url]);
        assert_eq!(output.status.code(), Some(2));
        let stderr = text(&output.stderr);
        assert!(stderr.contains("connection refused"), "{stderr}");
    }

    // https:// at a plain HTTP port.
    let plain = server(|_| Some(Reply::json(200, r#"{"status":"ok"}"#)));
    let (output, _) = inspect(&[
        "--requests",
        "2",
        &format!("https://127.0.0.1:{plain}/livez"),
    ]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("the URL says https:// but the port speaks plain HTTP"),
        "{stderr}"
    );

    // http:// at a TLS port; https:// there works, its certificate unverified as the
    // kubelet's prober leaves it.
    let tls = serve(|_| Some(Reply::json(200, r#"{"status":"ok"}"#)), true);
    let (output, _) = inspect(&["--requests", "2", &format!("http://127.0.0.1:{tls}/livez")]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("the URL says http:// but the port speaks TLS"),
        "{stderr}"
    );
    let (output, stdout) = inspect(&["--requests", "2", &format!("https://127.0.0.1:{tls}/livez")]);
    assert_ne!(output.status.code(), Some(2), "{stdout}");
    assert!(stdout.contains("200×2"), "{stdout}");

    // Headers no client reads.
    let oversized = server(|_| {
        let mut reply = Reply::json(200, r#"{"status":"ok"}"#);
        for n in 0..200 {
            reply = reply.header(&format!("x-filler-{n}"), "x".repeat(64));
        }
        Some(reply)
    });
    let (output, _) = inspect(&[
        "--requests",
        "2",
        &format!("http://127.0.0.1:{oversized}/livez"),
    ]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("headers are too large"), "{stderr}");
}

#[test]
fn a_manifest_is_read_with_the_api_servers_defaults_and_validation() {
    let port = server(|request| {
        Some(match request.path.as_str() {
            "/readyz" => Reply::json(200, r#"{"status":"ok"}"#).after(Duration::from_millis(1200)),
            _ => Reply::text(404, "not found"),
        })
    });
    let dir = temp_dir("inspect-manifest");
    let manifest = dir.join("deploy.yaml");
    let write = |probe: &str| {
        std::fs::write(
            &manifest,
            format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web}}\nspec:\n  \
                 template:\n    spec:\n      containers:\n      - name: app\n        image: a\n        \
                 ports: [{{name: http, containerPort: {port}}}]\n        readinessProbe: {probe}\n"
            ),
        )
        .unwrap();
    };
    let url = format!("http://127.0.0.1:{port}/readyz");
    // No timeoutSeconds: the API server's default, 1 s.
    write("{httpGet: {path: /readyz, port: http}}");
    let (output, stdout) = inspect(&[
        "--requests",
        "2",
        "--manifest",
        manifest.to_str().unwrap(),
        &url,
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout.contains("but the probe's timeoutSeconds is 1"),
        "{stdout}"
    );
    // timeoutSeconds 0 is "unset" to the API server: 1 again.
    write("{httpGet: {path: /readyz, port: http}, timeoutSeconds: 0}");
    let (_, stdout) = inspect(&[
        "--requests",
        "2",
        "--manifest",
        manifest.to_str().unwrap(),
        &url,
    ]);
    assert!(
        stdout.contains("but the probe's timeoutSeconds is 1"),
        "{stdout}"
    );
    // 5 s: no finding.
    write("{httpGet: {path: /readyz, port: http}, timeoutSeconds: 5}");
    let (_, stdout) = inspect(&[
        "--requests",
        "2",
        "--json",
        "--manifest",
        manifest.to_str().unwrap(),
        &url,
    ]);
    assert!(
        !rules(&stdout).iter().any(|rule| rule.starts_with("slower")),
        "{stdout}"
    );
    // What the API server rejects is an error naming the object, the container and the field.
    write("{httpGet: {path: /readyz, port: http}, timeoutSeconds: -1}");
    let (output, _) = inspect(&["--manifest", manifest.to_str().unwrap(), &url]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(
            "Deployment/web: container app: readinessProbe: timeoutSeconds: must be greater than \
             or equal to 0"
        ),
        "{stderr}"
    );
    write("{httpGet: {path: /readyz, port: http}, periodSecond: 5}");
    let (output, _) = inspect(&["--manifest", manifest.to_str().unwrap(), &url]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("unknown field `periodSecond`"),
        "{}",
        text(&output.stderr)
    );
}
