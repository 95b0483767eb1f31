//! The probe endpoints of the running binary: status codes, every format and query shape, 404
//! and 400, the detail policy, startup gating, and what stays out of logs and metrics.

mod support;

use std::time::{Duration, Instant};
use support::{Checkout, get, get_accept, poll_until, post, send, wait_ready};

#[tokio::test]
async fn liveness_passes_and_readiness_passes_after_startup() {
    let checkout = Checkout::start(&[]);
    let livez = get(&checkout.url("/livez")).await;
    assert_eq!((livez.status, livez.body.as_str()), (200, "ok\n"));
    assert_eq!(livez.header("cache-control"), Some("no-store"));
    wait_ready(&checkout).await;
    let readyz = get(&checkout.url("/readyz")).await;
    assert_eq!((readyz.status, readyz.body.as_str()), (200, "ok\n"));
    let startupz = get(&checkout.url("/startupz?verbose")).await;
    assert_eq!(startupz.status, 200);
    // Connecting to the database and migrating it gate readiness, not startup.
    assert_eq!(startupz.body, "[+]warmup ok\nstartupz check passed\n");
    let verbose = get(&checkout.url("/livez?verbose")).await;
    assert!(
        verbose.body.contains("[+]runtime_stall ok"),
        "{}",
        verbose.body
    );
}

#[tokio::test]
async fn readiness_fails_during_the_boot_delay_and_passes_after() {
    let started = Instant::now();
    let checkout = Checkout::start(&["--boot-delay", "3s"]);
    // The boot warms up for 3 s first, then connects and migrates: readiness fails
    // throughout, naming what is pending.
    let readyz = get(&checkout.url("/readyz")).await;
    assert_eq!(readyz.status, 503, "{}", readyz.body);
    assert!(
        readyz.body.contains("[-]startup failed: pending: warmup\n"),
        "{}",
        readyz.body
    );
    assert!(
        readyz
            .body
            .contains("[-]database failed: pending: waits on sqlite\n"),
        "{}",
        readyz.body
    );
    let startupz = get(&checkout.admin_url("/startupz")).await;
    assert_eq!(startupz.status, 503);
    assert!(
        startupz
            .body
            .contains("[-]warmup failed: pending: warming up:"),
        "{}",
        startupz.body
    );
    // Liveness does not wait for the boot: a slow start is not a hang.
    assert_eq!(get(&checkout.url("/livez")).await.status, 200);
    wait_ready(&checkout).await;
    assert!(started.elapsed() >= Duration::from_secs(3));
    assert_eq!(get(&checkout.url("/startupz")).await.status, 200);
}

#[tokio::test]
async fn every_format_and_query_shape() {
    let checkout = Checkout::start(&[]);
    wait_ready(&checkout).await;
    let readyz = checkout.url("/readyz");

    let verbose = get(&format!("{readyz}?verbose")).await;
    assert_eq!(verbose.status, 200);
    assert_eq!(
        verbose.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert!(
        verbose
            .body
            .contains("[+]startup ok\n[+]database ok\n[+]migrations ok\n[+]db ok\n"),
        "{}",
        verbose.body
    );
    assert!(verbose.body.ends_with("readyz check passed\n"));
    let explicit = get(&format!("{readyz}?verbose=true")).await;
    assert_eq!(explicit.body, verbose.body);

    let excluded = get(&format!("{readyz}?exclude=db&verbose")).await;
    assert!(
        excluded.body.contains("[ ]db excluded"),
        "{}",
        excluded.body
    );
    let both = get(&format!("{readyz}?exclude=db&exclude=startup&verbose")).await;
    assert!(
        both.body
            .contains("[ ]startup excluded\n[+]database ok\n[+]migrations ok\n[ ]db excluded\n"),
        "{}",
        both.body
    );

    let json = get_accept(&readyz, "application/json").await;
    assert_eq!(json.header("content-type"), Some("application/json"));
    let value: serde_json::Value = serde_json::from_str(&json.body).unwrap();
    assert_eq!(value["status"], "pass");
    assert_eq!(value["service"], "checkout");
    let db = value["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|check| check["name"] == "db")
        .expect("db in the JSON answer");
    assert_eq!(db["tier"], "hard");
    assert_eq!(db["dependency"], "sqlite");

    let health = get_accept(&readyz, "application/health+json").await;
    assert_eq!(
        health.header("content-type"),
        Some("application/health+json")
    );
    let value: serde_json::Value = serde_json::from_str(&health.body).unwrap();
    assert_eq!(value["status"], "pass");
    assert_eq!(
        value["checks"]["db:connections"][0]["componentType"],
        "datastore"
    );
    assert!(value["checks"]["db:utilization"].is_array(), "{value}");

    let single = get(&checkout.url("/readyz/db")).await;
    assert_eq!((single.status, single.body.as_str()), (200, "ok\n"));
    let single_verbose = get(&checkout.url("/readyz/db?verbose")).await;
    assert_eq!(single_verbose.body, "[+]db ok\n");
    let step = get(&checkout.url("/startupz/warmup")).await;
    assert_eq!((step.status, step.body.as_str()), (200, "ok\n"));
    let condition = get(&checkout.url("/livez/runtime_stall")).await;
    assert_eq!((condition.status, condition.body.as_str()), (200, "ok\n"));

    let head = send(support::client(Duration::from_secs(5)).head(&readyz))
        .await
        .unwrap();
    assert_eq!((head.status, head.body.as_str()), (200, ""));
    assert_eq!(head.header("cache-control"), Some("no-store"));
}

#[tokio::test]
async fn unknown_checks_are_404_and_malformed_queries_are_400() {
    let checkout = Checkout::start(&[]);
    wait_ready(&checkout).await;

    let missing = get(&checkout.url("/readyz/payments")).await;
    assert_eq!(missing.status, 404);
    assert_eq!(
        missing.body,
        "no check `payments` in /readyz\nknown: shutdown, startup, liveness, database, migrations, db\n"
    );
    let missing_json = get_accept(&checkout.url("/livez/payments"), "application/json").await;
    assert_eq!(missing_json.status, 404);
    let value: serde_json::Value = serde_json::from_str(&missing_json.body).unwrap();
    assert_eq!(
        value["known"],
        serde_json::json!(["runtime_stall", "deadlock", "marked_broken"])
    );
    assert_eq!(get(&checkout.url("/startupz/payments")).await.status, 404);

    for (query, expected) in [
        ("/readyz?verbos", "unknown query parameter `verbos`"),
        (
            "/readyz?verbose=maybe",
            "invalid value `maybe` for `verbose`",
        ),
        ("/readyz?exclude", "expected the name of a check"),
        (
            "/readyz?exclude=payments",
            "cannot exclude `payments`: no such entry in /readyz",
        ),
        (
            "/readyz/db?exclude=startup",
            "`exclude` applies to a whole probe",
        ),
        ("/livez?exclude=%zz", "malformed query string"),
    ] {
        let answer = get(&checkout.url(query)).await;
        assert_eq!(answer.status, 400, "{query}: {}", answer.body);
        assert!(answer.body.contains(expected), "{query}: {}", answer.body);
    }
}

#[tokio::test]
async fn details_are_withheld_publicly_and_shown_on_the_admin_listener() {
    let checkout = Checkout::start(&["--chaos"]);
    wait_ready(&checkout).await;
    let leaked = post(&checkout.admin_url("/chaos/leak-connections"), None).await;
    assert_eq!(leaked.status, 200, "{}", leaked.body);
    let public = poll_until(Duration::from_secs(10), "/readyz 503", || async {
        let answer = get(&checkout.url("/readyz")).await;
        (answer.status == 503).then_some(answer)
    })
    .await;
    assert_eq!(
        public.body,
        "[-]db failed: exhausted\nreadyz check failed\n"
    );
    let admin = get(&checkout.admin_url("/readyz")).await;
    assert_eq!(admin.status, 503);
    assert!(
        admin.body.contains("[-]db failed: no connection within ")
            && admin.body.contains(": 5 of 5 in use"),
        "{}",
        admin.body
    );

    let shown = Checkout::start(&["--chaos", "--public-details"]);
    wait_ready(&shown).await;
    post(&shown.admin_url("/chaos/leak-connections"), None).await;
    let public = poll_until(Duration::from_secs(10), "/readyz 503", || async {
        let answer = get(&shown.url("/readyz")).await;
        (answer.status == 503).then_some(answer)
    })
    .await;
    assert!(
        public.body.contains("no connection within"),
        "{}",
        public.body
    );
}

#[tokio::test]
async fn api_requests_are_logged_and_counted_and_probes_are_not() {
    let checkout = Checkout::start(&[]);
    wait_ready(&checkout).await;
    for _ in 0..5 {
        get(&checkout.url("/readyz")).await;
        get(&checkout.url("/livez")).await;
    }
    let created = post(
        &checkout.url("/orders"),
        Some(r#"{"customer":"ada","items":[{"sku":"tea","quantity":2,"price_cents":450}]}"#),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    // In rotation, keep-alive connections are kept.
    assert_eq!(created.header("connection"), None);
    assert_eq!(get(&checkout.url("/orders/999")).await.status, 404);

    let metrics = get(&checkout.admin_url("/metrics")).await;
    assert_eq!(metrics.status, 200);
    assert!(
        metrics
            .body
            .contains(r#"http_requests_total{status="201"} 1"#),
        "{}",
        metrics.body
    );
    assert!(
        metrics
            .body
            .contains(r#"http_requests_total{status="404"} 1"#)
    );
    assert!(
        !metrics
            .body
            .contains(r#"http_requests_total{status="200"}"#),
        "probes counted"
    );
    assert!(
        metrics
            .body
            .contains(r#"probity_check_up{check="db",tier="hard"} 1"#),
        "{}",
        metrics.body
    );

    let log = checkout.stderr.text();
    assert!(log.contains("uri=/orders"), "{log}");
    assert!(
        !log.contains("uri=/readyz"),
        "probe in the access log:\n{log}"
    );
    assert!(
        !log.contains("uri=/livez"),
        "probe in the access log:\n{log}"
    );
}

#[tokio::test]
async fn chaos_endpoints_exist_only_with_the_flag_and_only_on_the_admin_listener() {
    let plain = Checkout::start(&[]);
    wait_ready(&plain).await;
    assert_eq!(
        post(&plain.admin_url("/chaos/leak-connections"), None)
            .await
            .status,
        404
    );
    assert_eq!(
        post(&plain.admin_url("/chaos/stall?seconds=1"), None)
            .await
            .status,
        404
    );

    let chaos = Checkout::start(&["--chaos"]);
    wait_ready(&chaos).await;
    assert_eq!(
        post(&chaos.url("/chaos/leak-connections"), None)
            .await
            .status,
        404
    );
    let bad = post(&chaos.admin_url("/chaos/leak-connections?count=99"), None).await;
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("count must be 1 to 5"), "{}", bad.body);
    let bad = post(&chaos.admin_url("/chaos/stall?seconds=0"), None).await;
    assert_eq!(bad.status, 400);
    assert_eq!(
        post(&chaos.admin_url("/chaos/stall"), None).await.status,
        400
    );
}

/// The probe paths a team already serves, set by flag: every probe, its sub-paths, `?verbose`
/// and the 404 listing answer there, the default paths are not probes any more, and the
/// contract shows the paths.
#[tokio::test]
async fn probe_paths_are_configurable() {
    for [live, ready, startup] in [
        ["/internal/live", "/internal/ready", "/internal/startup"],
        ["/healthz/live", "/healthz/ready", "/healthz/startup"],
    ] {
        let flags = [
            "--liveness-path",
            live,
            "--readiness-path",
            ready,
            "--startup-path",
            startup,
        ];
        let checkout = Checkout::start(&flags);
        poll_until(Duration::from_secs(30), "readiness at its own path", || {
            let url = checkout.url(ready);
            async move { (get(&url).await.status == 200).then_some(()) }
        })
        .await;
        for path in [live, ready, startup] {
            let answer = get(&checkout.url(path)).await;
            assert_eq!(
                (answer.status, answer.body.as_str()),
                (200, "ok\n"),
                "{path}"
            );
        }
        let db = get(&checkout.url(&format!("{ready}/db"))).await;
        assert_eq!((db.status, db.body.as_str()), (200, "ok\n"));
        let verbose = get(&checkout.url(&format!("{ready}?verbose"))).await;
        assert!(verbose.body.contains("[+]db ok"), "{}", verbose.body);
        assert!(
            verbose.body.ends_with("ready check passed\n"),
            "{}",
            verbose.body
        );
        let json = get_accept(&checkout.url(ready), "application/json").await;
        assert_eq!(json.status, 200);
        assert!(json.body.contains("\"status\":\"pass\""), "{}", json.body);

        let unknown = get(&checkout.url(&format!("{ready}/nothing"))).await;
        assert_eq!(unknown.status, 404);
        assert!(
            unknown
                .body
                .starts_with(&format!("no check `nothing` in {ready}\n")),
            "{}",
            unknown.body
        );
        assert!(unknown.body.contains("known: "), "{}", unknown.body);
        // The admin listener serves the same paths.
        let admin = get(&checkout.admin_url(&format!("{ready}?verbose"))).await;
        assert_eq!(admin.status, 200, "{}", admin.body);
        for default in ["/livez", "/readyz", "/startupz"] {
            assert_eq!(get(&checkout.url(default)).await.status, 404, "{default}");
        }

        let mut args = vec!["--print-contract"];
        args.extend(flags);
        let (status, stdout, stderr) = support::run_to_exit(&args, Duration::from_secs(20));
        assert!(status.success(), "{stderr}");
        let contract = probity::Contract::from_json(&stdout).unwrap();
        for (probe, path) in [
            (probity::ProbeKind::Liveness, live),
            (probity::ProbeKind::Readiness, ready),
            (probity::ProbeKind::Startup, startup),
        ] {
            assert_eq!(contract.endpoint(probe).unwrap().path, path);
        }
    }
}
