//! The quiet-probes and request-metrics layers.

use axum::Router;
use axum::body::Body;
use axum::routing::get;
use http::{Request, StatusCode};
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use probity::Health;
use probity_axum::{Probes, QuietProbesLayer, RequestMetricsLayer};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tower::{Layer, Service, ServiceExt};

/// A layer standing in for an access log: it records every path it sees.
#[derive(Clone, Default)]
struct RecordPaths(Arc<Mutex<Vec<String>>>);

impl<S> Layer<S> for RecordPaths {
    type Service = Recorded<S>;
    fn layer(&self, inner: S) -> Self::Service {
        Recorded {
            inner,
            seen: self.0.clone(),
        }
    }
}

#[derive(Clone)]
struct Recorded<S> {
    inner: S,
    seen: Arc<Mutex<Vec<String>>>,
}

impl<S, B> Service<Request<B>> for Recorded<S>
where
    S: Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }
    fn call(&mut self, request: Request<B>) -> Self::Future {
        self.seen
            .lock()
            .unwrap()
            .push(request.uri().path().to_owned());
        self.inner.call(request)
    }
}

fn health() -> Health {
    Health::builder().service("shop").build().unwrap()
}

fn app(health: &Health) -> Router {
    Router::new()
        .route("/orders", get(|| async { "[]" }))
        .route(
            "/boom",
            get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "boom") }),
        )
        .merge(Probes::new(health.clone()).router())
}

async fn status(app: &Router, uri: &str) -> StatusCode {
    app.clone()
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap()
        .status()
}

#[tokio::test]
async fn probes_skip_the_wrapped_layer_and_everything_else_goes_through_it() {
    let health = health();
    let record = RecordPaths::default();
    let app = app(&health).layer(QuietProbesLayer::new(record.clone()));
    for uri in [
        "/livez",
        "/readyz?verbose",
        "/readyz/shutdown",
        "/startupz",
        "/orders",
        "/readyzz",
    ] {
        status(&app, uri).await;
    }
    // Probes are still answered, only not recorded.
    assert_eq!(status(&app, "/livez").await, StatusCode::OK);
    assert_eq!(*record.0.lock().unwrap(), vec!["/orders", "/readyzz"]);
}

#[tokio::test]
async fn custom_probe_paths_replace_the_defaults() {
    let health = health();
    let record = RecordPaths::default();
    let app = Router::new()
        .nest("/internal", Probes::new(health.clone()).router())
        .route("/livez", get(|| async { "not a probe here" }))
        .layer(QuietProbesLayer::new(record.clone()).paths(["/internal"]));
    assert_eq!(status(&app, "/internal/readyz").await, StatusCode::OK);
    assert_eq!(status(&app, "/livez").await, StatusCode::OK);
    assert_eq!(*record.0.lock().unwrap(), vec!["/livez"]);
}

fn counts(recorder: &DebuggingRecorder) -> Vec<(String, u64)> {
    let mut counts: Vec<(String, u64)> = recorder
        .snapshotter()
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| key.key().name() == "http_requests_total")
        .map(|(key, _, _, value)| {
            let labels: Vec<String> = key
                .key()
                .labels()
                .map(|label| format!("{}={}", label.key(), label.value()))
                .collect();
            let DebugValue::Counter(count) = value else {
                panic!("not a counter")
            };
            (labels.join(","), count)
        })
        .collect();
    counts.sort();
    counts
}

#[test]
fn requests_are_counted_by_status_and_probes_are_not() {
    let recorder = DebuggingRecorder::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorder, || {
        runtime.block_on(async {
            let health = health();
            let app = app(&health).layer(QuietProbesLayer::new(RequestMetricsLayer::new()));
            for uri in ["/orders", "/orders", "/boom", "/nope", "/livez", "/readyz"] {
                status(&app, uri).await;
            }
            health.shutdown();
            assert_eq!(
                status(&app, "/readyz").await,
                StatusCode::SERVICE_UNAVAILABLE
            );
        })
    });
    assert_eq!(
        counts(&recorder),
        vec![
            ("status=200".to_owned(), 2),
            ("status=404".to_owned(), 1),
            ("status=500".to_owned(), 1)
        ]
    );
}

#[test]
fn the_counter_can_be_renamed_and_counts_probes_when_not_wrapped() {
    let recorder = DebuggingRecorder::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorder, || {
        runtime.block_on(async {
            let health = health();
            health.shutdown();
            let app = app(&health).layer(RequestMetricsLayer::new().name("shop_requests_total"));
            status(&app, "/readyz").await;
        })
    });
    // (With the core's `metrics` feature on, the renderer records its own counters too.)
    let snapshot = recorder.snapshotter().snapshot().into_vec();
    let (key, ..) = snapshot
        .iter()
        .find(|(key, ..)| key.key().name() == "shop_requests_total")
        .expect("the renamed counter");
    assert_eq!(key.key().labels().next().unwrap().value(), "503");
    assert!(
        !snapshot
            .iter()
            .any(|(key, ..)| key.key().name() == "http_requests_total")
    );
}
