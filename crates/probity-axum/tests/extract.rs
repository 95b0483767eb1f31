//! The `HealthState` extractor: a handler asks the current snapshot whether `db` is failing
//! while its fallback serves, through the router's state.

use axum::Router;
use axum::body::Body;
use axum::extract::FromRef;
use axum::routing::get;
use http::Request;
use http_body_util::BodyExt;
use probity::{CheckError, CheckSpec, Detail, Health, HealthView, Tier};
use probity_axum::HealthState;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;
use tower::ServiceExt;

const UP: u8 = 0;
const DOWN: u8 = 1;
const EXHAUSTED: u8 = 2;

fn switchable(name: &str, tier: Tier, mode: Arc<AtomicU8>) -> CheckSpec {
    CheckSpec::new(name, tier, move || {
        let mode = mode.load(Ordering::Acquire);
        async move {
            match mode {
                UP => Ok(Detail::new()),
                DOWN => Err(CheckError::new("connection refused")),
                _ => Err(CheckError::new("no connection within 300ms: 5 of 5 in use")),
            }
        }
    })
    .interval(Duration::from_secs(1))
    .timeout(Duration::from_millis(200))
    .jitter(Duration::ZERO)
}

#[derive(Clone)]
struct App {
    health: HealthView,
}

impl FromRef<App> for HealthView {
    fn from_ref(app: &App) -> HealthView {
        app.health.clone()
    }
}

async fn order(health: HealthState) -> String {
    match health.degraded("db") {
        Some(degraded) => format!(
            "degraded {} ({:?}) served by {}",
            degraded.check(),
            degraded.dependency(),
            degraded.fallback()
        ),
        None if health.serves("db") => "fresh".to_owned(),
        None => "unavailable".to_owned(),
    }
}

async fn ask(app: &Router) -> String {
    let response = app
        .clone()
        .oneshot(Request::get("/orders/1").body(Body::empty()).unwrap())
        .await
        .unwrap();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_handler_sees_the_database_degraded_while_the_cache_serves() {
    let (db, cache) = (Arc::new(AtomicU8::new(UP)), Arc::new(AtomicU8::new(UP)));
    let health = Health::builder()
        .check(
            switchable("db", Tier::Hard, db.clone())
                .dependency("postgres")
                .fallback("cache"),
        )
        .check(switchable("cache", Tier::Soft, cache.clone()))
        .build()
        .unwrap();
    health.start().unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let app = Router::new()
        .route("/orders/{id}", get(order))
        .with_state(App {
            health: health.view(),
        });
    assert_eq!(ask(&app).await, "fresh");

    db.store(DOWN, Ordering::Release);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        ask(&app).await,
        "degraded db (Some(\"postgres\")) served by cache"
    );

    // The cache fails too: nothing serves instead.
    cache.store(DOWN, Ordering::Release);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(ask(&app).await, "unavailable");
    cache.store(UP, Ordering::Release);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(ask(&app).await.starts_with("degraded db"));

    // This instance's own pool exhausted: not degraded, unavailable (it drains).
    db.store(EXHAUSTED, Ordering::Release);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(ask(&app).await, "unavailable");

    // Back: degraded while recovering through the rise count, then fresh.
    db.store(UP, Ordering::Release);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(ask(&app).await.starts_with("degraded db"));
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(ask(&app).await, "fresh");
}

#[tokio::test(start_paused = true)]
async fn an_unknown_check_is_neither_degraded_nor_serving() {
    let health = Health::builder()
        .check(switchable("db", Tier::Hard, Arc::new(AtomicU8::new(UP))))
        .build()
        .unwrap();
    health.start().unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let state = HealthState::of(&health.view());
    assert!(state.serves("db"));
    assert!(state.degraded("db").is_none(), "no fallback declared");
    assert!(!state.serves("nope"));
    assert!(state.degraded("nope").is_none());
}
