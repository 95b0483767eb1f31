//! The agent's listener: the probes, gRPC health, `/metrics`, `/contract` and the agent's own
//! liveness, on one port.

use crate::adapter::{self, Heartbeats, PathMap};
use crate::agent::Agent;
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use metrics_exporter_prometheus::PrometheusHandle;
use probity::Health;
use probity_axum::{Details, Probes};
use probity_grpc::HealthService;
use std::sync::Arc;
use tower::ServiceExt;

/// Largest probe body the liveness path reads back from the core to add its own lines.
const MAX_CORE_BODY: usize = 64 << 10;

struct Shared {
    health: Health,
    heartbeats: Heartbeats,
    paths: PathMap,
    details: Details,
    probes: Router,
    contract: String,
    metrics: Option<PrometheusHandle>,
}

/// The agent's router.
pub(crate) fn router(agent: &Agent, metrics: Option<PrometheusHandle>) -> Router {
    let probes: Router = Probes::new(agent.health.clone())
        .details(agent.details)
        .router();
    let shared = Arc::new(Shared {
        health: agent.health.clone(),
        heartbeats: agent.heartbeats.clone(),
        paths: agent.paths.clone(),
        details: agent.details,
        probes: probes.clone(),
        contract: agent.contract().to_json_pretty(),
        metrics,
    });
    let liveness = agent.paths.liveness.clone();
    let router = Router::new()
        .route(&liveness, get(livez))
        .route(&format!("{liveness}/{{name}}"), get(livez_one))
        .route("/metrics", get(metrics_page))
        .route("/contract", get(contract))
        .route("/agent/livez", get(|| async { "ok\n" }))
        .with_state(shared.clone())
        .merge(HealthService::new(agent.health.clone()).into_router());
    if agent.paths.is_default() {
        // Readiness and startup go straight to the core's router.
        router.fallback_service(probes)
    } else {
        router.fallback(move |request: Request| {
            let shared = shared.clone();
            async move {
                match shared.paths.rewrite(request) {
                    Some(request) => forward(&shared.probes, request).await,
                    None => StatusCode::NOT_FOUND.into_response(),
                }
            }
        })
    }
}

async fn forward(probes: &Router, request: Request) -> Response {
    match probes.clone().oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

fn wants_json(request: &Request) -> bool {
    request
        .headers()
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|accept| accept.contains("json"))
}

fn verbose(request: &Request) -> bool {
    request.uri().query().is_some_and(|query| {
        query
            .split('&')
            .any(|pair| pair == "verbose" || pair.starts_with("verbose="))
    })
}

async fn livez(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    answer_liveness(&shared, None, request).await
}

async fn livez_one(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
    request: Request,
) -> Response {
    answer_liveness(&shared, Some(name), request).await
}

/// The liveness answer: the agent's conditions first (while one fails, the agent answers
/// 503 itself), then the core's.
async fn answer_liveness(shared: &Shared, single: Option<String>, request: Request) -> Response {
    let states = shared.heartbeats.states(tokio::time::Instant::now());
    let shutting_down = shared.health.view().is_shutting_down();
    let known = single
        .as_deref()
        .is_some_and(|name| states.iter().any(|state| state.name == name));
    let failing = !shutting_down && states.iter().any(|state| state.failure.is_some());
    let json = wants_json(&request);
    let verbose = verbose(&request);
    let details = shared.details == Details::Admin;
    if known || (single.is_none() && failing) {
        let states = if shutting_down {
            // Draining: liveness passes, as the core's does.
            states
                .into_iter()
                .map(|mut state| {
                    state.failure = None;
                    state
                })
                .collect()
        } else {
            states
        };
        return adapter::liveness_failure(&states, single.as_deref(), verbose, json, details);
    }
    // The core's answer, at the core's path.
    let Some(request) = shared.paths.rewrite(request) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let response = forward(&shared.probes, request).await;
    if single.is_some() || !verbose || json || states.is_empty() {
        return response;
    }
    // `?verbose` in text: the agent's conditions are listed before the core's lines.
    let (mut parts, body) = response.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    let Ok(bytes) = axum::body::to_bytes(body, MAX_CORE_BODY).await else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let mut text = String::new();
    for state in &states {
        text.push_str(&format!("[+]{} ok\n", state.name));
    }
    text.push_str(&String::from_utf8_lossy(&bytes));
    Response::from_parts(parts, Body::from(text))
}

async fn metrics_page(State(shared): State<Arc<Shared>>) -> Response {
    let Some(handle) = &shared.metrics else {
        return (
            StatusCode::NOT_FOUND,
            "metrics are not recorded in this process\n",
        )
            .into_response();
    };
    for state in shared.heartbeats.states(tokio::time::Instant::now()) {
        metrics::gauge!("probity_agent_liveness_up", "condition" => state.name)
            .set(if state.failure.is_none() { 1.0 } else { 0.0 });
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
