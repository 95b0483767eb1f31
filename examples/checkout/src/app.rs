//! The HTTP API and the two routers: the public one (API, probes, gRPC health) and the admin
//! one (metrics, probes with details, fault injection).

use crate::cache::{Cache, DEGRADED_READ_BUDGET};
use crate::chaos::Chaos;
use crate::db::{Database, DbError, Item};
use crate::outbox::Outbox;
use crate::recommendations::Recommendations;
use crate::wiring::DB_CHECK;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRef, Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use metrics_exporter_prometheus::PrometheusHandle;
use probity::render::Details;
use probity::{Health, HealthView, Reporter, UnknownName};
use probity_axum::{
    CloseWhenUnreadyLayer, HealthState, Probes, QuietProbesLayer, RequestMetricsLayer, ShedLayer,
};
use probity_grpc::HealthService;
use serde::Deserialize;
use serde_json::json;
use tower_http::trace::{DefaultMakeSpan, DefaultOnResponse, TraceLayer};
use tracing::Level;

/// The header that marks an answer served without a dependency, naming it (`recommendations`,
/// `db`).
pub const DEGRADED_HEADER: &str = "x-degraded";

/// RFC 9211's header: how the order cache (named `checkout` in it) handled the request.
pub const CACHE_STATUS_HEADER: &str = "cache-status";

/// A hit while the database serves: the cached order is what the database holds.
const CACHE_STATUS_HIT: &str = "checkout; hit";
/// A hit served because the database cannot be asked: `hit` (the request did not go forward)
/// with RFC 9211's implementation-specific `detail` saying the answer may be stale. Not
/// `fwd=stale`: `fwd` says the request *went* forward (there, because the entry was stale), and
/// `hit` and `fwd` exclude each other.
const CACHE_STATUS_STALE: &str = "checkout; hit; detail=stale";
/// A miss answered by the database and stored.
const CACHE_STATUS_MISS: &str = "checkout; fwd=miss; stored";

/// What the handlers share.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The service's health, read by handlers through [`HealthState`].
    pub health: HealthView,
    /// The orders database.
    pub db: Database,
    /// Passive reports for the `db` check.
    pub db_reporter: Reporter,
    /// The order cache, if configured.
    pub cache: Option<Cache>,
    /// The recommendations service, if configured.
    pub recommendations: Option<Recommendations>,
    /// The outbox relay, if configured: woken after each order.
    pub outbox: Option<Outbox>,
}

/// The public listener: the API, `/livez` `/readyz` `/startupz` (details withheld unless
/// `details` says otherwise) and `grpc.health.v1` on the same port. Probes stay out of the
/// access log and of `http_requests_total`. While readiness fails, HTTP/1 API responses close
/// their connection, so keep-alive clients reconnect to an instance in rotation.
///
/// Writes need the database: `POST /orders` is shed (503 + `Retry-After`, the handler never
/// runs, nothing is written) while the `db` check fails or the service is still starting, so a
/// balancer can replay it on another instance instead of the client waiting out a pool
/// timeout. Reads are not shed: while the database fails and the cache serves in its place,
/// a cached order is served marked stale.
pub fn public_router(
    state: AppState,
    health: &Health,
    details: Details,
) -> Result<Router, UnknownName> {
    let writes = Router::new()
        .route("/orders", post(create_order))
        .layer(ShedLayer::new(health).needs(DB_CHECK)?);
    Ok(Router::new()
        .merge(writes)
        .route("/orders/{id}", get(get_order))
        .route("/recommendations", get(recommendations))
        .with_state(state)
        .merge(HealthService::new(health.clone()).into_router())
        .layer(QuietProbesLayer::for_health(
            health,
            tower::ServiceBuilder::new()
                .layer(
                    TraceLayer::new_for_http()
                        .make_span_with(DefaultMakeSpan::new().level(Level::INFO))
                        .on_response(DefaultOnResponse::new().level(Level::INFO)),
                )
                .layer(RequestMetricsLayer::new())
                .into_inner(),
        ))
        // Out of rotation, keep-alive clients are sent elsewhere: the Service stops routing new
        // connections here, but established ones would otherwise stay.
        .layer(CloseWhenUnreadyLayer::new(health.clone()))
        // The probes sit outside the access log and request metrics altogether: `Router::layer`
        // wraps only the routes present when it is called, so a probe pays for no middleware.
        .merge(Probes::new(health.clone()).details(details).router()))
}

/// The admin listener: `/metrics`, the probes with details, the status page (`/status`,
/// `/status.json`), and `/chaos/*` when enabled.
pub fn admin_router(health: &Health, metrics: PrometheusHandle, chaos: Option<Chaos>) -> Router {
    let mut router = Router::new()
        .route(
            "/metrics",
            get(move || {
                let metrics = metrics.clone();
                async move {
                    (
                        [(
                            header::CONTENT_TYPE,
                            "text/plain; version=0.0.4; charset=utf-8",
                        )],
                        metrics.render(),
                    )
                }
            }),
        )
        .route(
            "/contract",
            get({
                let health = health.clone();
                move || {
                    let contract = health.contract().to_json_pretty();
                    async move { ([(header::CONTENT_TYPE, "application/json")], contract) }
                }
            }),
        )
        .merge(Probes::admin(health.clone()).router())
        .merge(probity_axum::StatusPage::new(health.clone()).router());
    if let Some(chaos) = chaos {
        router = router.merge(chaos.router());
    }
    router
}

impl FromRef<AppState> for HealthView {
    fn from_ref(state: &AppState) -> HealthView {
        state.health.clone()
    }
}

fn error_response(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({ "error": message.into() }))).into_response()
}

/// 503 with `Retry-After` when the database could not be reached or used (nothing was
/// committed: the request may be retried, here or on another instance); 500 when a statement
/// failed. The client reads the class of failure, never hosts or driver text; the log has it.
fn database_error(error: &DbError) -> Response {
    match error {
        DbError::PoolTimeout => {
            tracing::warn!("database unavailable: no pooled connection within the acquire timeout")
        }
        DbError::Unavailable(reason) => tracing::warn!(%reason, "database unavailable"),
        DbError::Starting => {
            let mut response = error_response(
                StatusCode::SERVICE_UNAVAILABLE,
                "starting: database not ready",
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            return response;
        }
        DbError::Query(reason) => {
            tracing::error!(%reason, "database query failed");
            return error_response(StatusCode::INTERNAL_SERVER_ERROR, "database query failed");
        }
    }
    let mut response = error_response(StatusCode::SERVICE_UNAVAILABLE, "database unavailable");
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// `POST /orders` body.
#[derive(Debug, Deserialize)]
pub struct NewOrder {
    /// Who orders.
    pub customer: String,
    /// What.
    pub items: Vec<Item>,
}

/// A text field that a database can store and a person can read: no NUL (PostgreSQL rejects
/// it in `text`) and no other control character.
fn storable(field: &str, text: &str) -> Result<(), String> {
    match text.char_indices().find(|(_, c)| c.is_control()) {
        Some((at, c)) => Err(format!(
            "`{field}` holds a control character (U+{:04X}) at byte {at}",
            u32::from(c)
        )),
        None => Ok(()),
    }
}

impl NewOrder {
    fn validate(&self) -> Result<(), String> {
        if self.customer.trim().is_empty() || self.customer.len() > 128 {
            return Err("`customer` must be 1 to 128 characters".into());
        }
        storable("customer", &self.customer)?;
        if self.items.is_empty() || self.items.len() > 100 {
            return Err("`items` must hold 1 to 100 lines".into());
        }
        for (line, item) in self.items.iter().enumerate() {
            if item.sku.trim().is_empty() || item.sku.len() > 64 {
                return Err(format!("items[{line}].sku must be 1 to 64 characters"));
            }
            storable(&format!("items[{line}].sku"), &item.sku)?;
            if !(1..=10_000).contains(&item.quantity) {
                return Err(format!("items[{line}].quantity must be 1 to 10000"));
            }
            if !(0..=100_000_000).contains(&item.price_cents) {
                return Err(format!("items[{line}].price_cents must be 0 to 100000000"));
            }
        }
        Ok(())
    }
}

async fn create_order(
    State(state): State<AppState>,
    body: Result<Json<NewOrder>, JsonRejection>,
) -> Response {
    let Json(order) = match body {
        Ok(body) => body,
        Err(rejection) => return error_response(rejection.status(), rejection.body_text()),
    };
    if let Err(message) = order.validate() {
        return error_response(StatusCode::UNPROCESSABLE_ENTITY, message);
    }
    let stored = state.db.create_order(&order.customer, &order.items).await;
    state.db.report(&state.db_reporter, &stored);
    match stored {
        Ok(stored) => {
            if let Some(outbox) = &state.outbox {
                outbox.wake();
            }
            if let Some(cache) = &state.cache {
                cache.store(&stored).await;
            }
            let location = format!("/orders/{}", stored.id);
            let mut response = (StatusCode::CREATED, Json(stored)).into_response();
            if let Ok(location) = HeaderValue::from_str(&location) {
                response.headers_mut().insert(header::LOCATION, location);
            }
            response
        }
        Err(failure) => database_error(&failure),
    }
}

/// `GET /orders/{id}`: from the cache when it holds the order, else from the database (and
/// cached). While the database fails for every instance and the cache serves in its place
/// (`db` degraded, [`HealthState::degraded`]), a cached order is answered marked stale — `Age`,
/// `Cache-Status: checkout; hit; detail=stale`, `x-degraded: db` — and an order the cache does
/// not hold gets 503 with `Retry-After` at once, without waiting on a database that cannot
/// answer.
async fn get_order(
    State(state): State<AppState>,
    health: HealthState,
    Path(id): Path<String>,
) -> Response {
    let Ok(id) = id.parse::<i64>() else {
        return error_response(
            StatusCode::BAD_REQUEST,
            format!("`{id}` is not an order number"),
        );
    };
    let degraded = health.degraded(DB_CHECK).map(|degraded| degraded.check());
    let cached = match (&state.cache, degraded) {
        (Some(cache), Some(_)) => cache.order_within(id, DEGRADED_READ_BUDGET).await,
        (Some(cache), None) => cache.order(id).await,
        (None, _) => None,
    };
    if let Some(cached) = cached {
        let age = cached.age(std::time::SystemTime::now());
        let mut response = ([("x-cache", "hit")], Json(cached.order)).into_response();
        let headers = response.headers_mut();
        headers.insert(header::AGE, HeaderValue::from(age));
        let status = if degraded.is_some() {
            CACHE_STATUS_STALE
        } else {
            CACHE_STATUS_HIT
        };
        headers.insert(CACHE_STATUS_HEADER, HeaderValue::from_static(status));
        if let Some(check) = degraded
            && let Ok(value) = HeaderValue::from_str(check)
        {
            headers.insert(DEGRADED_HEADER, value);
        }
        return response;
    }
    if let Some(check) = degraded {
        let mut response = error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            "database unavailable, and the order is not cached",
        );
        let headers = response.headers_mut();
        headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        if let Ok(value) = HeaderValue::from_str(check) {
            headers.insert(DEGRADED_HEADER, value);
        }
        return response;
    }
    let found = state.db.order(id).await;
    state.db.report(&state.db_reporter, &found);
    match found {
        Ok(Some(order)) => {
            let mut response = ([("x-cache", "miss")], Json(&order)).into_response();
            if let Some(cache) = &state.cache {
                cache.store(&order).await;
                response.headers_mut().insert(
                    CACHE_STATUS_HEADER,
                    HeaderValue::from_static(CACHE_STATUS_MISS),
                );
            }
            response
        }
        Ok(None) => error_response(StatusCode::NOT_FOUND, format!("no order {id}")),
        Err(failure) => database_error(&failure),
    }
}

/// `GET /recommendations` query.
#[derive(Debug, Deserialize)]
pub struct RecommendationsQuery {
    /// Who to recommend to.
    #[serde(default)]
    pub customer: String,
}

/// How many popular items the fallback lists.
const POPULAR_ITEMS: i64 = 5;

async fn recommendations(
    State(state): State<AppState>,
    Query(query): Query<RecommendationsQuery>,
) -> Response {
    let mut degraded = None;
    if let Some(service) = &state.recommendations {
        match service.for_customer(&query.customer).await {
            Ok(items) => {
                return Json(json!({
                    "customer": query.customer,
                    "source": "service",
                    "items": items,
                }))
                .into_response();
            }
            Err(reason) => {
                tracing::warn!(%reason, "recommendations unavailable; answering with popular items");
                degraded = Some(reason);
            }
        }
    }
    let popular = state.db.popular(POPULAR_ITEMS).await;
    state.db.report(&state.db_reporter, &popular);
    match popular {
        Ok(items) => {
            let mut response = Json(json!({
                "customer": query.customer,
                "source": "popular",
                "items": items,
            }))
            .into_response();
            if degraded.is_some() {
                response
                    .headers_mut()
                    .insert(DEGRADED_HEADER, HeaderValue::from_static("recommendations"));
            }
            response
        }
        Err(failure) => database_error(&failure),
    }
}
