//! The probe router: paths, formats, queries, errors and the detail policy.

use axum::Router;
use axum::body::Body;
use http::{Method, Request, StatusCode, header};
use http_body_util::BodyExt;
use probity::{CheckError, CheckSpec, Detail, Health, Tier};
use probity_axum::{Details, Probes};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tower::ServiceExt;

/// A service with a hard `db` and a soft `cache`, both switchable, and a `migrations` step.
struct Fixture {
    health: Health,
    db_up: Arc<AtomicBool>,
    cache_up: Arc<AtomicBool>,
}

fn switchable(up: &Arc<AtomicBool>, error: &'static str) -> impl probity::Check {
    let up = up.clone();
    move || {
        let up = up.load(Ordering::SeqCst);
        async move {
            if up {
                Ok(Detail::new().measurement("connections", 2.0, None))
            } else {
                Err(CheckError::new(error))
            }
        }
    }
}

impl Fixture {
    async fn started() -> Self {
        let db_up = Arc::new(AtomicBool::new(true));
        let cache_up = Arc::new(AtomicBool::new(true));
        let health = Health::builder()
            .service("shop")
            .check(
                CheckSpec::new(
                    "db",
                    Tier::Hard,
                    switchable(
                        &db_up,
                        "connect postgres://app:hunter2@db:5432/shop: refused",
                    ),
                )
                .interval(Duration::from_secs(1))
                .timeout(Duration::from_millis(500))
                .rise(1),
            )
            .check(
                CheckSpec::new("cache", Tier::Soft, switchable(&cache_up, "PING timed out"))
                    .interval(Duration::from_secs(1))
                    .timeout(Duration::from_millis(500))
                    .rise(1),
            )
            .startup_step("migrations")
            .build()
            .expect("valid registry");
        health.start().expect("runtime");
        let fixture = Self {
            health,
            db_up,
            cache_up,
        };
        fixture.settle().await;
        fixture
    }

    /// Lets every poller run at least once more.
    async fn settle(&self) {
        tokio::time::sleep(Duration::from_millis(1500)).await;
    }

    fn public(&self) -> Router {
        Probes::new(self.health.clone()).router()
    }

    fn admin(&self) -> Router {
        Probes::admin(self.health.clone()).router()
    }
}

struct Answer {
    status: StatusCode,
    headers: http::HeaderMap,
    body: String,
}

async fn call(router: &Router, method: Method, uri: &str, accept: Option<&str>) -> Answer {
    let mut request = Request::builder().method(method).uri(uri);
    if let Some(accept) = accept {
        request = request.header(header::ACCEPT, accept);
    }
    let response = router
        .clone()
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    Answer {
        status,
        headers,
        body: String::from_utf8(bytes.to_vec()).unwrap(),
    }
}

async fn get(router: &Router, uri: &str) -> Answer {
    call(router, Method::GET, uri, None).await
}

#[tokio::test(start_paused = true)]
async fn liveness_passes_with_headers_and_head_has_no_body() {
    let fixture = Fixture::started().await;
    let answer = get(&fixture.public(), "/livez").await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.body, "ok\n");
    assert_eq!(answer.headers["content-type"], "text/plain; charset=utf-8");
    assert_eq!(answer.headers["cache-control"], "no-store");
    assert_eq!(answer.headers["x-content-type-options"], "nosniff");

    let head = call(&fixture.public(), Method::HEAD, "/livez", None).await;
    assert_eq!(head.status, StatusCode::OK);
    assert_eq!(head.body, "");
    assert_eq!(head.headers["cache-control"], "no-store");

    let not_allowed = call(&fixture.public(), Method::POST, "/readyz", None).await;
    assert_eq!(not_allowed.status, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test(start_paused = true)]
async fn startup_gates_readiness_until_every_step_completes() {
    let fixture = Fixture::started().await;
    let startup = get(&fixture.public(), "/startupz").await;
    assert_eq!(startup.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        startup.body.contains("[-]migrations failed: pending"),
        "{}",
        startup.body
    );
    let ready = get(&fixture.public(), "/readyz").await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        ready
            .body
            .contains("[-]startup failed: pending: migrations"),
        "{}",
        ready.body
    );

    fixture.health.complete_step("migrations").unwrap();
    assert_eq!(
        get(&fixture.public(), "/startupz").await.status,
        StatusCode::OK
    );
    let ready = get(&fixture.public(), "/readyz").await;
    assert_eq!(
        (ready.status, ready.body.as_str()),
        (StatusCode::OK, "ok\n")
    );
    let single = get(&fixture.public(), "/startupz/migrations").await;
    assert_eq!(
        (single.status, single.body.as_str()),
        (StatusCode::OK, "ok\n")
    );
}

#[tokio::test(start_paused = true)]
async fn a_failing_hard_check_fails_readiness_naming_it_and_hides_details_publicly() {
    let fixture = Fixture::started().await;
    fixture.health.complete_step("migrations").unwrap();
    fixture.db_up.store(false, Ordering::SeqCst);
    fixture.settle().await;

    let public = get(&fixture.public(), "/readyz").await;
    assert_eq!(public.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(public.body, "[-]db failed: refused\nreadyz check failed\n");

    let admin = get(&fixture.admin(), "/readyz").await;
    assert_eq!(admin.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        admin
            .body
            .contains("[-]db failed: connect postgres://app:***@db:5432/shop: refused"),
        "{}",
        admin.body
    );
    assert!(!admin.body.contains("hunter2"));

    let configured = Probes::new(fixture.health.clone())
        .details(Details::Admin)
        .router();
    assert!(get(&configured, "/readyz").await.body.contains("refused"));

    // Liveness never looks at dependencies.
    assert_eq!(
        get(&fixture.public(), "/livez").await.status,
        StatusCode::OK
    );
}

#[tokio::test(start_paused = true)]
async fn verbose_and_exclude_follow_the_api_server_convention() {
    let fixture = Fixture::started().await;
    fixture.health.complete_step("migrations").unwrap();
    let verbose = get(&fixture.public(), "/readyz?verbose").await;
    assert_eq!(verbose.status, StatusCode::OK);
    assert!(
        verbose.body.contains("[+]db ok\n[+]cache ok\n"),
        "{}",
        verbose.body
    );
    assert!(verbose.body.ends_with("readyz check passed\n"));

    fixture.db_up.store(false, Ordering::SeqCst);
    fixture.settle().await;
    assert_eq!(
        get(&fixture.public(), "/readyz").await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    let excluded = get(&fixture.public(), "/readyz?exclude=db").await;
    assert_eq!(
        (excluded.status, excluded.body.as_str()),
        (StatusCode::OK, "ok\n")
    );
    let listed = get(&fixture.public(), "/readyz?exclude=db&verbose").await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    assert!(
        listed.body.contains("[ ]db excluded\n[+]cache ok\n"),
        "{}",
        listed.body
    );

    let both = get(
        &fixture.public(),
        "/readyz?exclude=db&exclude=cache&verbose",
    )
    .await;
    assert_eq!(both.status, StatusCode::OK);
    assert!(
        both.body.contains("[ ]db excluded\n[ ]cache excluded\n"),
        "{}",
        both.body
    );
}

#[tokio::test(start_paused = true)]
async fn soft_checks_degrade_readiness_but_fail_their_own_sub_path() {
    let fixture = Fixture::started().await;
    fixture.health.complete_step("migrations").unwrap();
    fixture.cache_up.store(false, Ordering::SeqCst);
    fixture.settle().await;

    let ready = get(&fixture.public(), "/readyz").await;
    assert_eq!(ready.status, StatusCode::OK);
    assert!(
        ready.body.contains("[!]cache degraded (soft): "),
        "{}",
        ready.body
    );
    let cache = get(&fixture.admin(), "/readyz/cache").await;
    assert_eq!(cache.status, StatusCode::SERVICE_UNAVAILABLE);
    // Alone, the cache answers for itself: it is failing.
    assert_eq!(cache.body, "[-]cache failed: PING timed out\n");
    let db = get(&fixture.public(), "/readyz/db").await;
    assert_eq!((db.status, db.body.as_str()), (StatusCode::OK, "ok\n"));
    let db_verbose = get(&fixture.public(), "/readyz/db?verbose").await;
    assert_eq!(db_verbose.body, "[+]db ok\n");
}

#[tokio::test(start_paused = true)]
async fn accept_picks_json_and_health_json() {
    let fixture = Fixture::started().await;
    fixture.health.complete_step("migrations").unwrap();
    fixture.db_up.store(false, Ordering::SeqCst);
    fixture.settle().await;

    let json = call(
        &fixture.public(),
        Method::GET,
        "/readyz",
        Some("application/json"),
    )
    .await;
    assert_eq!(json.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(json.headers["content-type"], "application/json");
    let value: serde_json::Value = serde_json::from_str(&json.body).unwrap();
    assert_eq!(value["status"], "fail");
    assert_eq!(value["failing"], serde_json::json!(["db"]));
    assert_eq!(value["service"], "shop");

    let health_json = call(
        &fixture.public(),
        Method::GET,
        "/readyz",
        Some("text/plain;q=0.2, application/health+json"),
    )
    .await;
    assert_eq!(
        health_json.headers["content-type"],
        "application/health+json"
    );
    let value: serde_json::Value = serde_json::from_str(&health_json.body).unwrap();
    assert_eq!(value["status"], "fail");
    assert_eq!(value["output"], "failing: db");
    assert!(value["checks"]["db:responseTime"].is_array(), "{value}");
    assert!(value["checks"]["cache:connections"].is_array(), "{value}");

    let wildcard = call(&fixture.public(), Method::GET, "/livez", Some("*/*")).await;
    assert_eq!(wildcard.body, "ok\n");
}

#[tokio::test(start_paused = true)]
async fn unknown_entries_are_404_listing_known_names() {
    let fixture = Fixture::started().await;
    let text = get(&fixture.public(), "/readyz/dbb").await;
    assert_eq!(text.status, StatusCode::NOT_FOUND);
    assert_eq!(
        text.body,
        "no check `dbb` in /readyz\nknown: shutdown, startup, liveness, db, cache\n"
    );
    let json = call(
        &fixture.public(),
        Method::GET,
        "/livez/nope",
        Some("application/json"),
    )
    .await;
    assert_eq!(json.status, StatusCode::NOT_FOUND);
    let value: serde_json::Value = serde_json::from_str(&json.body).unwrap();
    assert_eq!(value["known"], serde_json::json!(["marked_broken"]));
    assert_eq!(
        get(&fixture.public(), "/startupz/nope").await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test(start_paused = true)]
async fn malformed_queries_are_400_saying_what_is_wrong() {
    let fixture = Fixture::started().await;
    let cases = [
        ("/readyz?verbos", "unknown query parameter `verbos`"),
        (
            "/readyz?verbose=maybe",
            "invalid value `maybe` for `verbose`",
        ),
        ("/readyz?exclude", "invalid value `` for `exclude`"),
        ("/readyz?exclude=%zz", "malformed query string"),
        (
            "/readyz?exclude=nope",
            "cannot exclude `nope`: no such entry in /readyz",
        ),
        (
            "/readyz/db?exclude=cache",
            "`exclude` applies to a whole probe",
        ),
        ("/livez?exclude=db", "cannot exclude `db`"),
    ];
    for (uri, expected) in cases {
        let answer = get(&fixture.public(), uri).await;
        assert_eq!(
            answer.status,
            StatusCode::BAD_REQUEST,
            "{uri}: {}",
            answer.body
        );
        assert!(answer.body.contains(expected), "{uri}: {}", answer.body);
    }
    let json = call(
        &fixture.public(),
        Method::GET,
        "/readyz?verbos",
        Some("application/json"),
    )
    .await;
    assert_eq!(json.status, StatusCode::BAD_REQUEST);
    assert_eq!(json.headers["content-type"], "application/json");
    assert!(
        serde_json::from_str::<serde_json::Value>(&json.body).unwrap()["error"]
            .as_str()
            .unwrap()
            .contains("verbos")
    );
}

#[tokio::test(start_paused = true)]
async fn shutdown_fails_readiness_and_leaves_liveness_alone() {
    let fixture = Fixture::started().await;
    fixture.health.complete_step("migrations").unwrap();
    assert_eq!(
        get(&fixture.public(), "/readyz").await.status,
        StatusCode::OK
    );
    fixture.health.shutdown();
    let ready = get(&fixture.public(), "/readyz").await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        ready.body.contains("[-]shutdown failed: shutting down"),
        "{}",
        ready.body
    );
    assert_eq!(
        get(&fixture.public(), "/livez").await.status,
        StatusCode::OK
    );
}

#[tokio::test(start_paused = true)]
async fn the_router_nests_and_merges_with_state() {
    let fixture = Fixture::started().await;
    #[derive(Clone)]
    struct AppState;
    let app: Router = Router::new()
        .route(
            "/hello",
            axum::routing::get(|_: axum::extract::State<AppState>| async { "hi" }),
        )
        .nest("/internal", Probes::new(fixture.health.clone()).router())
        .with_state(AppState);
    assert_eq!(get(&app, "/internal/livez").await.status, StatusCode::OK);
    assert_eq!(get(&app, "/hello").await.body, "hi");
}

/// One HTTP/1.1 exchange on `stream` (kept alive): the head, lowercased, and the body read by
/// the answer's one `Content-Length`.
async fn exchange_on_the_wire(
    stream: &mut tokio::net::TcpStream,
    method: &str,
    path: &str,
    accept: &str,
) -> (String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let request = format!("{method} {path} HTTP/1.1\r\nhost: probe\r\naccept: {accept}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut received = Vec::new();
    let mut byte = [0u8; 1];
    while !received.ends_with(b"\r\n\r\n") {
        assert_eq!(
            stream.read(&mut byte).await.unwrap(),
            1,
            "connection closed"
        );
        received.push(byte[0]);
    }
    let head = String::from_utf8(received).unwrap().to_ascii_lowercase();
    let lengths: Vec<usize> = head
        .lines()
        .filter_map(|line| line.strip_prefix("content-length: "))
        .map(|value| value.trim().parse().unwrap())
        .collect();
    assert_eq!(lengths.len(), 1, "one Content-Length: {head}");
    let mut body = vec![0u8; if method == "HEAD" { 0 } else { lengths[0] }];
    stream.read_exact(&mut body).await.unwrap();
    (head, String::from_utf8(body).unwrap())
}

/// Served by a real server, a kept answer carries one `Content-Length`, its body's, in every
/// format; asked again on the same connection (now from the kept answer), the same; and `HEAD`
/// sends the length without the body.
#[tokio::test]
async fn on_the_wire_a_kept_answer_has_its_own_length_in_every_format() {
    let health = Health::builder()
        .service("wire")
        // Polled once in the test's time: one snapshot, so every answer below is the same.
        .check(
            CheckSpec::new("db", Tier::Hard, || async { Ok(Detail::new()) })
                .interval(Duration::from_secs(600))
                .staleness(Duration::from_secs(1200)),
        )
        .build()
        .unwrap();
    health.start().unwrap();
    let app = Probes::admin(health.clone()).router::<()>();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !exchange_on_the_wire(&mut stream, "GET", "/readyz", "text/plain")
        .await
        .0
        .starts_with("http/1.1 200")
    {
        assert!(tokio::time::Instant::now() < deadline, "never ready");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for (accept, content_type) in [
        ("text/plain", "text/plain; charset=utf-8"),
        ("application/json", "application/json"),
        ("application/health+json", "application/health+json"),
    ] {
        for path in ["/readyz", "/readyz?verbose"] {
            let (head, first) = exchange_on_the_wire(&mut stream, "GET", path, accept).await;
            assert!(head.starts_with("http/1.1 200"), "{head}");
            assert!(
                head.contains(&format!("content-type: {content_type}\r\n")),
                "{head}"
            );
            assert!(head.contains("cache-control: no-store\r\n"), "{head}");
            assert!(
                head.contains("x-content-type-options: nosniff\r\n"),
                "{head}"
            );
            let (_, again) = exchange_on_the_wire(&mut stream, "GET", path, accept).await;
            assert!(!again.is_empty());
            if accept == "text/plain" {
                assert_eq!(first, again, "a kept text answer is the same bytes");
            }
            let (head, _) = exchange_on_the_wire(&mut stream, "HEAD", path, accept).await;
            let length = format!("content-length: {}\r\n", again.len());
            assert!(head.contains(&length), "HEAD sends the length: {head}");
        }
    }
}
