//! JWKS key-cache freshness: fail open inside the allowed age, fail closed past it.

#![cfg(feature = "jwks")]

mod support;

use probity::Check;
use probity_checks::jwks::{JwksCheck, KeyCache};
use std::time::Duration;
use support::{failure, figure, poll, success};

const TIMEOUT: Duration = Duration::from_secs(1);
const HOUR: Duration = Duration::from_secs(3600);

#[tokio::test(start_paused = true)]
async fn fails_until_keys_are_fetched() {
    let keys = KeyCache::new();
    let check = JwksCheck::new(keys.clone(), HOUR);
    assert_eq!(check.dependency(), Some("jwks"));
    assert_eq!(
        failure(poll(&check, TIMEOUT).await).message(),
        "no signing keys fetched yet"
    );
    keys.refresh_failed("connection refused (idp:443)");
    tokio::time::advance(Duration::from_secs(3)).await;
    assert_eq!(
        failure(poll(&check, TIMEOUT).await).message(),
        "no signing keys fetched yet; last refresh failed 3s ago: connection refused (idp:443)"
    );
    keys.refreshed(2);
    let detail = success(poll(&check, TIMEOUT).await);
    assert_eq!(detail.message.as_deref(), Some("2 keys, fetched just now"));
    assert_eq!(figure(&detail.measurements, "keys"), Some(2.0));
}

#[tokio::test(start_paused = true)]
async fn fails_open_inside_the_window_then_closed() {
    let keys = KeyCache::new();
    let check = JwksCheck::new(keys.clone(), HOUR);
    keys.refreshed(3);

    // The provider goes down ten minutes in: the cached keys still serve.
    tokio::time::advance(Duration::from_secs(600)).await;
    keys.refresh_failed("connection refused (idp:443)");
    tokio::time::advance(Duration::from_secs(60)).await;
    let detail = success(poll(&check, TIMEOUT).await);
    assert_eq!(
        detail.message.as_deref(),
        Some(
            "serving 3 cached keys 11m old; last refresh failed 1m ago: connection refused (idp:443); fails closed in 49m"
        )
    );
    assert_eq!(figure(&detail.measurements, "key_age"), Some(660.0));

    // Past the allowed age: fail closed.
    tokio::time::advance(Duration::from_secs(3000)).await;
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(
        error.message(),
        "cached signing keys are 1h1m old, past their allowed 1h; last refresh failed 51m ago: connection refused (idp:443)"
    );
    assert_eq!(figure(error.measurements(), "key_age"), Some(3660.0));

    // The provider is back: a fresh fetch passes at once.
    keys.refreshed(3);
    assert_eq!(
        success(poll(&check, TIMEOUT).await).message.as_deref(),
        Some("3 keys, fetched just now")
    );
}

#[tokio::test(start_paused = true)]
async fn empty_key_set_fails_closed() {
    let keys = KeyCache::new();
    keys.refreshed(0);
    let error = failure(poll(&JwksCheck::new(keys, HOUR), TIMEOUT).await);
    assert_eq!(error.message(), "the key set is empty");
}

#[tokio::test(start_paused = true)]
async fn refresh_errors_are_redacted() {
    let keys = KeyCache::new();
    keys.refreshed(1);
    keys.refresh_failed("GET https://svc:hunter2@idp/keys: 401");
    let detail = success(poll(&JwksCheck::new(keys.clone(), HOUR), TIMEOUT).await);
    let message = detail.message.unwrap_or_default();
    assert!(!message.contains("hunter2"), "{message}");
    assert!(format!("{keys:?}").contains("svc:***@idp"));
}
