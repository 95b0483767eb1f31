//! The agent's listener: the probes (at the configured paths), gRPC health, `/metrics`,
//! `/contract`, the agent's own liveness and — when the listener shows details, so it is an
//! operators' one — the status page (`/status`, `/status.json`), on one port.

use crate::unmoving::Unmoving;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use metrics_exporter_prometheus::PrometheusHandle;
use probity::Health;
use probity_axum::{Details, Probes, StatusPage};
use probity_grpc::HealthService;
use std::sync::Arc;

struct Shared {
    health: Health,
    contract: String,
    metrics: Option<PrometheusHandle>,
}

/// The agent's router: its registry's probes with `details`, the gauges `unmoving` follows,
/// and `metrics` when this process records them.
pub(crate) fn router(
    health: &Health,
    details: Details,
    unmoving: Arc<Unmoving>,
    metrics: Option<PrometheusHandle>,
) -> Router {
    let shared = Arc::new(Shared {
        health: health.clone(),
        contract: health.contract().to_json_pretty(),
        metrics,
    });
    let router = Router::new()
        .route("/metrics", get(metrics_page))
        .route("/contract", get(contract))
        .route("/agent/livez", get(|| async { "ok\n" }))
        .with_state(shared)
        .merge(HealthService::new(health.clone()).into_router())
        .merge(Probes::new(health.clone()).details(details).router());
    // The page shows full reasons: only where the listener already does.
    if details == Details::Admin {
        router.merge(
            StatusPage::new(health.clone())
                .findings(move || unmoving.findings())
                .router(),
        )
    } else {
        router
    }
}

async fn metrics_page(State(shared): State<Arc<Shared>>) -> Response {
    let Some(handle) = &shared.metrics else {
        return (
            StatusCode::NOT_FOUND,
            "metrics are not recorded in this process\n",
        )
            .into_response();
    };
    for condition in shared.health.snapshot().conditions() {
        metrics::gauge!("probity_agent_liveness_up", "condition" => condition.name().to_owned())
            .set(if condition.failure().is_none() {
                1.0
            } else {
                0.0
            });
    }
    let mut response = handle.render().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}

async fn contract(State(shared): State<Arc<Shared>>) -> Response {
    let mut response = shared.contract.clone().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
