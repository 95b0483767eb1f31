use super::*;
use probity::{CheckError, CheckSpec, Detail, Health};
use std::time::Duration;

const HOSTILE: &str = "<script>alert(\"x\")</script> & 'quoted' <img src=x onerror=alert(1)>";

fn secs(secs: f64) -> Duration {
    Duration::from_secs_f64(secs)
}

/// Registered best first, so the page must reorder them: a passing hard check, a failing soft
/// one (degraded), a failing hard one (failing) whose driver text is hostile markup.
async fn mixed() -> Health {
    let health = Health::builder()
        .service("shop")
        .check(
            CheckSpec::new("cache", Tier::Hard, || async { Ok(Detail::new()) })
                .interval(secs(1.0))
                .timeout(secs(0.5)),
        )
        .check(
            CheckSpec::new("search", Tier::Soft, || async {
                Err(CheckError::new("connection refused"))
            })
            .interval(secs(1.0))
            .timeout(secs(0.5)),
        )
        .check(
            CheckSpec::new("db", Tier::Hard, || async { Err(CheckError::new(HOSTILE)) })
                .interval(secs(1.0))
                .timeout(secs(0.5)),
        )
        .startup_step("migrations")
        .heartbeat("outbox", secs(3600.0))
        .build()
        .unwrap();
    health.start().unwrap();
    health.complete_step("migrations").unwrap();
    tokio::time::sleep(secs(3.5)).await;
    health
}

fn report(health: &Health) -> StatusReport {
    StatusPage::new(health.clone()).report()
}

#[tokio::test(start_paused = true)]
async fn rows_are_ordered_worst_first() {
    let health = mixed().await;
    let report = report(&health);
    let names: Vec<(&str, Severity)> = report
        .rows
        .iter()
        .map(|row| (row.name.as_str(), row.severity))
        .collect();
    assert_eq!(names[0], ("db", Severity::Failing));
    assert_eq!(names[1], ("search", Severity::Degraded));
    assert!(
        names[2..]
            .iter()
            .all(|(_, severity)| *severity == Severity::Passing)
    );
    for name in ["cache", "outbox", "migrations"] {
        assert!(names.iter().any(|(row, _)| *row == name), "{name} listed");
    }
    assert_eq!(report.readiness, Status::Fail);
    assert_eq!(report.liveness, Status::Pass);

    let html = report.to_html();
    let position = |name: &str| {
        html.find(&format!("data-name=\"{name}\""))
            .unwrap_or_else(|| panic!("{name} in the page"))
    };
    assert!(position("db") < position("search"));
    assert!(position("search") < position("cache"));
    assert!(html.contains("<tr class=\"row failing\" data-name=\"db\""));
}

#[tokio::test(start_paused = true)]
async fn reasons_are_escaped_and_bounded() {
    let health = mixed().await;
    let html = report(&health).to_html();
    assert!(!html.contains("<script>alert"), "driver text is not markup");
    assert!(!html.contains("<img src=x"));
    assert!(
        html.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quoted&#39;")
    );
    // The page's own script is the only one.
    assert_eq!(html.matches("<script>").count(), 1);
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "no external asset"
    );

    let long = "x".repeat(10 * MAX_REASON_CHARS);
    assert_eq!(
        cut(&long, MAX_REASON_CHARS).chars().count(),
        MAX_REASON_CHARS + 1
    );
    assert_eq!(cut("ünïcödé", 3), "ünï…");
    assert_eq!(cut("short", 10), "short");
}

#[test]
fn markup_quotes_and_control_characters_are_escaped() {
    assert_eq!(
        escape("a<b>&\"c\"'d'\u{1b}[31m\n"),
        "a&lt;b&gt;&amp;&quot;c&quot;&#39;d&#39;\u{fffd}[31m\n"
    );
}

#[tokio::test(start_paused = true)]
async fn a_check_shows_its_history_and_recovery() {
    let up = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let switch = up.clone();
    let health = Health::builder()
        .check(
            CheckSpec::new("db", Tier::Hard, move || {
                let up = switch.load(std::sync::atomic::Ordering::SeqCst);
                async move {
                    if up {
                        Ok(Detail::new())
                    } else {
                        Err(CheckError::new("pool timed out: no connection within 2s"))
                    }
                }
            })
            .interval(secs(1.0))
            .timeout(secs(0.5))
            .jitter(secs(0.0)),
        )
        .build()
        .unwrap();
    health.start().unwrap();
    tokio::time::sleep(secs(0.5)).await; // t=0 passed
    up.store(false, std::sync::atomic::Ordering::SeqCst);
    tokio::time::sleep(secs(2.0)).await; // t=1, t=2 failed
    up.store(true, std::sync::atomic::Ordering::SeqCst);
    tokio::time::sleep(secs(1.0)).await; // t=3 passed: 1 of 3

    let report = report(&health);
    let db = &report.rows[0];
    assert_eq!(db.name, "db");
    assert_eq!(db.state, "recovering 1 of 3");
    assert_eq!(db.severity, Severity::Failing);
    let polls: Vec<bool> = db.polls.iter().map(|poll| poll.ok).collect();
    assert_eq!(polls, [true, false, false, true]);
    let sides: Vec<(&str, &str)> = db.transitions.iter().map(|t| (t.from, t.to)).collect();
    assert_eq!(
        sides,
        [("healthy", "unhealthy"), ("unhealthy", "healthy")],
        "newest first"
    );
    assert_eq!(db.transitions[0].class, Some("exhausted"));
    assert!(db.in_state_secs.unwrap() >= 2.0);

    let html = report.to_html();
    assert!(html.contains("recovering 1 of 3"));
    assert!(html.contains("healthy → unhealthy (exhausted)"));
    assert!(html.contains("<svg class=\"spark\""));
    assert_eq!(
        html.matches("<circle").count(),
        2,
        "one dot per failed poll"
    );

    let json: serde_json::Value = serde_json::to_value(&report).unwrap();
    assert_eq!(json["rows"][0]["name"], "db");
    assert_eq!(json["rows"][0]["transitions"][0]["to"], "unhealthy");
    assert_eq!(json["rows"][0]["polls"].as_array().unwrap().len(), 4);
}

#[tokio::test(start_paused = true)]
async fn the_router_serves_html_and_json_uncached() {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let health = mixed().await;
    let router = StatusPage::new(health.clone()).router::<()>();
    for (path, content_type) in [
        ("/status", "text/html; charset=utf-8"),
        ("/status.json", "application/json"),
    ] {
        let response = router
            .clone()
            .oneshot(
                http::Request::get(path)
                    .body(axum::body::Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(response.headers()[header::CONTENT_TYPE], content_type);
        assert_eq!(response.headers()[header::CACHE_CONTROL], "no-store");
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let text = std::str::from_utf8(&body).unwrap();
        assert!(text.contains("db"), "{path}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_huge_reason_keeps_the_page_bounded() {
    let health = Health::builder()
        .check(
            CheckSpec::new("db", Tier::Hard, || async {
                Err(CheckError::new("<&>\"'".repeat(50_000)))
            })
            .interval(secs(1.0))
            .timeout(secs(0.5)),
        )
        .build()
        .unwrap();
    health.start().unwrap();
    // Longer than the history: the rings are full.
    tokio::time::sleep(secs(40.0)).await;
    let report = report(&health);
    let db = &report.rows[0];
    assert_eq!(db.polls.len(), probity::HISTORY_LEN);
    assert!(db.reason.as_ref().unwrap().chars().count() <= MAX_REASON_CHARS + 1);
    let html = report.to_html();
    // Each reason character escapes to at most six bytes; the page stays a few tens of KB.
    assert!(html.len() < 32 * 1024, "{} bytes", html.len());
    assert!(!html.contains("<&>"));
}

#[tokio::test(start_paused = true)]
async fn shutdown_is_listed_first_while_liveness_passes() {
    let health = Health::builder()
        .check(
            CheckSpec::new("db", Tier::Hard, || async { Ok(Detail::new()) })
                .interval(secs(1.0))
                .timeout(secs(0.5)),
        )
        .heartbeat("outbox", secs(3600.0))
        .build()
        .unwrap();
    health.start().unwrap();
    tokio::time::sleep(secs(1.5)).await;
    let healthy = report(&health);
    assert!(
        healthy.rows.iter().all(|row| row.name != "shutdown"),
        "a passing gate is not a row"
    );
    health.shutdown();
    let draining = report(&health);
    let first = &draining.rows[0];
    assert_eq!(
        (first.name.as_str(), first.kind),
        ("shutdown", "readiness gate")
    );
    assert_eq!(first.severity, Severity::Failing);
    assert!(first.reason.as_deref().unwrap().contains("shutting down"));
    assert_eq!(draining.liveness, Status::Pass);
    assert!(draining.to_html().contains("<title>service: fail</title>"));
}

#[tokio::test(start_paused = true)]
async fn liveness_conditions_and_startup_steps_show_their_history() {
    let health = Health::builder()
        .startup_step("migrations")
        .heartbeat("worker", secs(10.0))
        .build()
        .unwrap();
    health.start().unwrap();
    let heartbeat = health.heartbeat("worker").unwrap();
    heartbeat.saw(Some("the app's /healthz gave no answer within 2s"));
    tokio::time::sleep(secs(12.0)).await;
    // Silent past its bound: failing, and the reason says what was seen.
    let first = report(&health);
    let worker = first.rows.iter().find(|row| row.name == "worker").unwrap();
    assert_eq!(worker.state, "failing");
    assert!(
        worker
            .reason
            .as_deref()
            .unwrap()
            .starts_with("the app's /healthz gave no answer within 2s: silent for"),
        "{worker:?}"
    );
    // It beats again; then it waits on a dependency past its bound.
    heartbeat.beat();
    let wait = heartbeat.waiting_on("db", secs(60.0));
    tokio::time::sleep(secs(12.0)).await;
    health.complete_step("migrations").unwrap();
    let report = report(&health);
    let worker = report.rows.iter().find(|row| row.name == "worker").unwrap();
    assert_eq!(worker.state, "passing (in a declared wait)");
    let sides: Vec<(&str, &str)> = worker.transitions.iter().map(|t| (t.from, t.to)).collect();
    assert_eq!(
        sides,
        [
            ("passing", "waiting"),
            ("failing", "passing"),
            ("passing", "failing")
        ],
        "newest first"
    );
    assert_eq!(worker.transitions_total, 3);
    assert!(worker.in_state_secs.is_some());
    let step = report
        .rows
        .iter()
        .find(|row| row.name == "migrations")
        .unwrap();
    assert_eq!(step.state, "complete");
    assert_eq!(
        step.transitions
            .iter()
            .map(|t| (t.from, t.to))
            .collect::<Vec<_>>(),
        [("pending", "complete")]
    );
    let html = report.to_html();
    assert!(html.contains("passing → waiting"), "{html}");
    assert!(html.contains("pending → complete"), "{html}");
    drop(wait);
}

#[tokio::test(start_paused = true)]
async fn findings_are_listed_escaped_and_bounded() {
    let health = mixed().await;
    let page = StatusPage::new(health.clone()).findings(|| {
        (0..MAX_ROWS + 10)
            .map(|index| Finding {
                kind: "unmoving_series".to_owned(),
                subject: format!("db_pool_pending_acquires_{index}"),
                message: format!("{HOSTILE} {}", "x".repeat(MAX_REASON_CHARS)),
            })
            .collect()
    });
    let report = page.report();
    assert_eq!(report.findings.len(), MAX_ROWS);
    assert!(report.findings[0].message.chars().count() <= MAX_REASON_CHARS + 1);
    let html = report.to_html();
    assert!(html.contains("<h2>Findings</h2>"));
    assert!(!html.contains("<script>alert"));
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["findings"][0]["kind"], "unmoving_series");
    // Without a source, none.
    assert!(StatusPage::new(health).report().findings.is_empty());
}
