//! The shed layer: 503 + `Retry-After` without calling the handler, while a needed check fails
//! or startup is pending; never during the shutdown drain.

use axum::Router;
use axum::body::Body;
use axum::routing::post;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use probity::{CheckError, CheckSpec, Detail, Health, Tier};
use probity_axum::ShedLayer;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;
use tower::ServiceExt;

/// A `db` check that passes while `up` holds, polled every second.
fn db_check(up: Arc<AtomicBool>) -> CheckSpec {
    CheckSpec::new("db", Tier::Hard, move || {
        let up = up.load(Ordering::Acquire);
        async move {
            if up {
                Ok(Detail::new())
            } else {
                Err(CheckError::new("connection refused"))
            }
        }
    })
    .interval(Duration::from_secs(1))
    .timeout(Duration::from_millis(200))
}

/// `POST /orders`, counting the calls that reach the handler.
fn app(layer: ShedLayer, processed: Arc<AtomicU32>) -> Router {
    Router::new()
        .route(
            "/orders",
            post(move || {
                let processed = processed.clone();
                async move {
                    processed.fetch_add(1, Ordering::AcqRel);
                    (StatusCode::CREATED, "created")
                }
            }),
        )
        .layer(layer)
}

async fn order(app: &Router) -> (StatusCode, Option<String>, String) {
    let response = app
        .clone()
        .oneshot(
            Request::post("/orders")
                .body(Body::from("{}"))
                .expect("request"),
        )
        .await
        .expect("infallible");
    let status = response.status();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|value| value.to_str().unwrap_or_default().to_owned());
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    (
        status,
        retry_after,
        String::from_utf8_lossy(&body).into_owned(),
    )
}

/// Lets the pollers run on the paused clock.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(50)).await;
}

#[tokio::test(start_paused = true)]
async fn a_failing_needed_check_sheds_without_calling_the_handler_and_a_passing_one_serves() {
    let up = Arc::new(AtomicBool::new(false));
    let health = Health::builder()
        .check(db_check(up.clone()).rise(1))
        .build()
        .unwrap();
    health.start().unwrap();
    settle().await;
    let processed = Arc::new(AtomicU32::new(0));
    let app = app(
        ShedLayer::new(&health).needs("db").unwrap(),
        processed.clone(),
    );

    let (status, retry_after, body) = order(&app).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(retry_after.as_deref(), Some("1"));
    assert_eq!(
        body,
        "unavailable (db): the request was not processed; retry\n"
    );
    assert_eq!(processed.load(Ordering::Acquire), 0, "never processed");

    up.store(true, Ordering::Release);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (status, retry_after, _) = order(&app).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(retry_after, None);
    assert_eq!(processed.load(Ordering::Acquire), 1);
}

#[tokio::test(start_paused = true)]
async fn a_check_the_routes_do_not_need_sheds_nothing() {
    let health = Health::builder()
        .check(db_check(Arc::new(AtomicBool::new(false))))
        .build()
        .unwrap();
    health.start().unwrap();
    settle().await;
    let processed = Arc::new(AtomicU32::new(0));
    let app = app(ShedLayer::new(&health), processed.clone());
    assert_eq!(order(&app).await.0, StatusCode::CREATED);
    assert_eq!(processed.load(Ordering::Acquire), 1);
}

#[tokio::test(start_paused = true)]
async fn a_hard_check_inside_its_fail_open_window_still_serves() {
    let up = Arc::new(AtomicBool::new(true));
    let health = Health::builder()
        .check(
            db_check(up.clone())
                .fall(1)
                .fail_open_for(Duration::from_secs(30)),
        )
        .build()
        .unwrap();
    health.start().unwrap();
    settle().await;
    let processed = Arc::new(AtomicU32::new(0));
    let app = app(
        ShedLayer::new(&health).needs("db").unwrap(),
        processed.clone(),
    );
    up.store(false, Ordering::Release);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert!(
        !health.snapshot().check("db").unwrap().is_healthy(),
        "the check has fallen"
    );
    assert_eq!(order(&app).await.0, StatusCode::CREATED, "failing open");
    tokio::time::sleep(Duration::from_secs(31)).await;
    assert_eq!(
        order(&app).await.0,
        StatusCode::SERVICE_UNAVAILABLE,
        "the window is over"
    );
    assert_eq!(processed.load(Ordering::Acquire), 1);
}

#[tokio::test(start_paused = true)]
async fn a_pending_startup_sheds_as_starting_and_the_shutdown_drain_does_not_shed() {
    let health = Health::builder().startup_step("warm-up").build().unwrap();
    health.start().unwrap();
    let processed = Arc::new(AtomicU32::new(0));
    let app = app(
        ShedLayer::new(&health).retry_after(Duration::from_secs(5)),
        processed.clone(),
    );
    let (status, retry_after, body) = order(&app).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(retry_after.as_deref(), Some("5"));
    assert!(body.starts_with("unavailable (starting)"), "{body}");

    health.complete_step("warm-up").unwrap();
    settle().await;
    assert_eq!(order(&app).await.0, StatusCode::CREATED);

    // Readiness fails from here on, but the drain delay is there to serve what still arrives.
    health.shutdown();
    settle().await;
    assert_eq!(order(&app).await.0, StatusCode::CREATED);
    assert_eq!(processed.load(Ordering::Acquire), 2);
}

#[test]
fn needing_an_undeclared_check_is_an_error_naming_the_declared_ones() {
    let health = Health::builder()
        .check(db_check(Arc::new(AtomicBool::new(true))))
        .build()
        .unwrap();
    let error = ShedLayer::new(&health).needs("cache").unwrap_err();
    assert_eq!(error.to_string(), "unknown check `cache` (declared: db)");
}
