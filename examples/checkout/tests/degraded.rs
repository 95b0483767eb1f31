//! Soft dependencies: without the recommendations service or the cache, checkout keeps serving
//! (degraded, and says so) and stays in rotation.

mod support;

use axum::Router;
use axum::routing::get as route_get;
use std::time::Duration;
use support::{Checkout, get, poll_until, post, wait_ready};

const REDIS: &str = "127.0.0.1:6379";

fn recommendations_stub() -> std::net::SocketAddr {
    let app = Router::new().route(
        "/recommendations",
        route_get(|| async { axum::Json(serde_json::json!({ "items": [{ "sku": "book-1" }] })) }),
    );
    support::serve_in_background(app)
}

async fn order(checkout: &Checkout) -> String {
    let created = post(
        &checkout.url("/orders"),
        Some(r#"{"customer":"ada","items":[{"sku":"tea","quantity":2,"price_cents":450}]}"#),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    created.header("location").unwrap().to_owned()
}

#[tokio::test]
async fn recommendations_come_from_the_service_while_it_answers() {
    let stub = recommendations_stub();
    let checkout = Checkout::start(&["--recommendations-url", &format!("http://{stub}")]);
    wait_ready(&checkout).await;
    let answer = get(&checkout.url("/recommendations?customer=ada")).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("x-degraded"), None);
    assert!(
        answer.body.contains(r#""source":"service""#),
        "{}",
        answer.body
    );
    assert!(answer.body.contains("book-1"), "{}", answer.body);
    let check = poll_until(
        Duration::from_secs(30),
        "recommendations healthy",
        || async {
            let answer = get(&checkout.url("/readyz/recommendations")).await;
            (answer.status == 200).then_some(answer)
        },
    )
    .await;
    assert_eq!(check.body, "ok\n");
}

#[tokio::test]
async fn without_recommendations_it_answers_popular_items_marked_degraded_and_stays_ready() {
    let closed = support::free_address();
    let checkout = Checkout::start(&["--recommendations-url", &format!("http://{closed}")]);
    wait_ready(&checkout).await;
    order(&checkout).await;

    let answer = get(&checkout.url("/recommendations?customer=ada")).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("x-degraded"), Some("recommendations"));
    assert!(
        answer.body.contains(r#""source":"popular""#),
        "{}",
        answer.body
    );
    assert!(
        answer.body.contains(r#"{"ordered":2,"sku":"tea"}"#),
        "{}",
        answer.body
    );

    // Soft: readiness stays 200 and says it is degraded; the check alone fails.
    let readyz = get(&checkout.url("/readyz")).await;
    assert_eq!(readyz.status, 200);
    assert!(
        readyz.body.contains("[!]recommendations degraded (soft): "),
        "{}",
        readyz.body
    );
    let admin = get(&checkout.admin_url("/readyz/recommendations")).await;
    assert_eq!(admin.status, 503);
    assert!(admin.body.contains("cannot connect"), "{}", admin.body);
}

#[tokio::test]
async fn orders_are_cached_in_redis() {
    if !support::require_service("Redis", REDIS) {
        return;
    }
    let checkout = Checkout::start(&["--redis-url", &format!("redis://{REDIS}/0")]);
    wait_ready(&checkout).await;
    let location = order(&checkout).await;
    // Written through on creation: the first read is already a hit.
    let first = get(&checkout.url(&location)).await;
    assert_eq!((first.status, first.header("x-cache")), (200, Some("hit")));
    let cache = poll_until(Duration::from_secs(30), "cache healthy", || async {
        let answer = get(&checkout.url("/readyz/cache")).await;
        (answer.status == 200).then_some(answer)
    })
    .await;
    assert_eq!(cache.body, "ok\n");
}

#[tokio::test]
async fn without_the_cache_orders_come_from_the_database_and_it_stays_ready() {
    let closed = support::free_address();
    let checkout = Checkout::start(&["--redis-url", &format!("redis://{closed}/0")]);
    wait_ready(&checkout).await;
    let location = order(&checkout).await;
    let fetched = get(&checkout.url(&location)).await;
    assert_eq!(
        (fetched.status, fetched.header("x-cache")),
        (200, Some("miss"))
    );
    assert!(fetched.body.contains(r#""customer":"ada""#));

    let readyz = get(&checkout.url("/readyz")).await;
    assert_eq!(readyz.status, 200);
    assert!(
        readyz.body.contains("[!]cache degraded (soft)"),
        "{}",
        readyz.body
    );
    assert_eq!(get(&checkout.url("/readyz/cache")).await.status, 503);
}
