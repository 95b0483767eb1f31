//! The `grpc.health.v1.Health` service over a [`HealthView`].

use crate::ServingStatus;
use crate::pb::health_server::{self, HealthServer};
use crate::pb::{HealthCheckRequest, HealthCheckResponse, HealthListRequest, HealthListResponse};
use crate::status::{known_services, serving_status};
use futures_util::Stream;
use probity::{HealthView, Snapshot};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::{Instant, MissedTickBehavior};
use tonic::server::NamedService;
use tonic::{Request, Response, Status};

/// How often a `Watch` stream re-evaluates the snapshot when nothing is published, unless set.
///
/// Value: 1 s.
pub const DEFAULT_REEVALUATE_EVERY: Duration = Duration::from_secs(1);

/// The most services `List` returns; past it the call fails with `RESOURCE_EXHAUSTED`, as the
/// protocol asks.
pub const MAX_LISTED_SERVICES: usize = 100;

/// `grpc.health.v1.Health`, answered from a [`HealthView`]'s snapshot. See the [crate docs](crate)
/// for the service names and their meaning.
#[derive(Debug, Clone)]
pub struct HealthService {
    health: HealthView,
    reevaluate_every: Duration,
}

impl HealthService {
    /// The service for `health`.
    pub fn new(health: impl Into<HealthView>) -> Self {
        Self {
            health: health.into(),
            reevaluate_every: DEFAULT_REEVALUATE_EVERY,
        }
    }

    /// How often a `Watch` stream re-evaluates when nothing is published (staleness bounds and
    /// fail-open windows expire with time alone). Clamped to at least 10 ms.
    pub fn reevaluate_every(mut self, every: Duration) -> Self {
        self.reevaluate_every = every.max(Duration::from_millis(10));
        self
    }

    /// The tonic server, to add to a `tonic::transport::Server`.
    pub fn into_server(self) -> HealthServer<HealthService> {
        HealthServer::new(self)
    }

    /// An axum router serving the service at `/grpc.health.v1.Health/*`, to merge with an HTTP
    /// router so gRPC and HTTP share one port. The server must speak HTTP/2 (axum's `serve`
    /// does, alongside HTTP/1.1).
    ///
    /// Only the service's own path is routed: other paths fall through to the router it is
    /// merged with (tonic's `Routes` would answer every unknown path with a gRPC
    /// `UNIMPLEMENTED` and HTTP 200, hiding the HTTP router's 404s).
    pub fn into_router(self) -> axum::Router {
        let path = format!(
            "/{}/{{*method}}",
            <HealthServer<HealthService> as NamedService>::NAME
        );
        axum::Router::new().route_service(&path, self.into_server())
    }

    fn status_now(&self, service: &str) -> Option<ServingStatus> {
        serving_status(&self.health.snapshot(), service, Instant::now())
    }
}

fn response(status: ServingStatus) -> HealthCheckResponse {
    HealthCheckResponse {
        status: status.into(),
    }
}

/// The stream `Watch` returns.
type WatchStream = Pin<Box<dyn Stream<Item = Result<HealthCheckResponse, Status>> + Send>>;

#[tonic::async_trait]
impl health_server::Health for HealthService {
    async fn check(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        let service = request.into_inner().service;
        match self.status_now(&service) {
            Some(status) => Ok(Response::new(response(status))),
            None => Err(Status::not_found(format!(
                "unknown service `{service}`; known: {}",
                describe_known(&self.health.snapshot())
            ))),
        }
    }

    async fn list(
        &self,
        _request: Request<HealthListRequest>,
    ) -> Result<Response<HealthListResponse>, Status> {
        let snapshot = self.health.snapshot();
        let names = known_services(&snapshot);
        if names.len() > MAX_LISTED_SERVICES {
            return Err(Status::resource_exhausted(format!(
                "{} services, more than the {MAX_LISTED_SERVICES} List may return",
                names.len()
            )));
        }
        let now = Instant::now();
        let statuses = names
            .into_iter()
            .filter_map(|name| {
                let status = serving_status(&snapshot, &name, now)?;
                Some((name, response(status)))
            })
            .collect();
        Ok(Response::new(HealthListResponse { statuses }))
    }

    type WatchStream = WatchStream;

    async fn watch(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let service = request.into_inner().service;
        let watcher = Watcher::new(&self.health, service, self.reevaluate_every);
        Ok(Response::new(Box::pin(watcher.into_stream())))
    }
}

fn describe_known(snapshot: &Snapshot) -> String {
    known_services(snapshot)
        .iter()
        .map(|name| {
            if name.is_empty() {
                "\"\""
            } else {
                name.as_str()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The state of one `Watch` call.
struct Watcher {
    service: String,
    updates: watch::Receiver<Arc<Snapshot>>,
    ticker: tokio::time::Interval,
    drained: Pin<Box<dyn Future<Output = ()> + Send>>,
    last: Option<ServingStatus>,
}

impl Watcher {
    fn new(health: &HealthView, service: String, every: Duration) -> Self {
        let mut ticker = tokio::time::interval_at(Instant::now() + every, every);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let drained = {
            let health = health.clone();
            Box::pin(async move { health.drained().await })
        };
        Self {
            service,
            updates: health.subscribe(),
            ticker,
            drained,
            last: None,
        }
    }

    fn current(&mut self) -> ServingStatus {
        let snapshot = self.updates.borrow_and_update().clone();
        serving_status(&snapshot, &self.service, Instant::now())
            .unwrap_or(ServingStatus::ServiceUnknown)
    }

    /// The next status to send: the current one if it changed since the last message,
    /// otherwise the first change after waiting for a publish or a tick. `None` ends the stream.
    async fn next(&mut self) -> Option<Result<HealthCheckResponse, Status>> {
        loop {
            let status = self.current();
            if self.last != Some(status) {
                self.last = Some(status);
                return Some(Ok(response(status)));
            }
            tokio::select! {
                changed = self.updates.changed() => {
                    if changed.is_err() {
                        return None;
                    }
                }
                _ = self.ticker.tick() => {}
                () = &mut self.drained => {
                    // The listener is closing: end the stream so it does not hold the
                    // graceful shutdown open. The client saw NOT_SERVING when shutdown began.
                    return Some(Err(Status::unavailable("server is shutting down")));
                }
            }
        }
    }

    fn into_stream(self) -> impl Stream<Item = Result<HealthCheckResponse, Status>> + Send {
        futures_util::stream::unfold(Some(self), |watcher| async move {
            let mut watcher = watcher?;
            let item = watcher.next().await?;
            // After an error the stream ends.
            let next = if item.is_ok() { Some(watcher) } else { None };
            Some((item, next))
        })
    }
}
