//! `Check`, `List` and `Watch` called directly on the service, on tokio's paused clock.

use futures_util::StreamExt;
use probity::{CheckError, CheckSpec, Detail, Health, Tier};
use probity_grpc::pb::health_server::Health as _;
use probity_grpc::pb::{HealthCheckRequest, HealthListRequest};
use probity_grpc::{HealthService, ServingStatus};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tonic::{Code, Request};

struct Fixture {
    health: Health,
    service: HealthService,
    db_up: Arc<AtomicBool>,
    cache_up: Arc<AtomicBool>,
}

fn switchable(up: &Arc<AtomicBool>) -> impl probity::Check {
    let up = up.clone();
    move || {
        let up = up.load(Ordering::SeqCst);
        async move {
            if up {
                Ok(Detail::new())
            } else {
                Err(CheckError::new("down"))
            }
        }
    }
}

impl Fixture {
    async fn started() -> Self {
        let db_up = Arc::new(AtomicBool::new(true));
        let cache_up = Arc::new(AtomicBool::new(true));
        let spec = |name, tier, up: &Arc<AtomicBool>| {
            CheckSpec::new(name, tier, switchable(up))
                .interval(Duration::from_secs(1))
                .timeout(Duration::from_millis(500))
                .jitter(Duration::ZERO)
                .rise(2)
        };
        let health = Health::builder()
            .check(spec("db", Tier::Hard, &db_up))
            .check(spec("cache", Tier::Soft, &cache_up))
            .startup_step("migrations")
            .drain_delay(Duration::from_secs(5))
            .build()
            .unwrap();
        health.start().unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let service = HealthService::new(health.clone());
        Self {
            health,
            service,
            db_up,
            cache_up,
        }
    }

    async fn check(&self, name: &str) -> Result<ServingStatus, tonic::Status> {
        let response = self
            .service
            .check(Request::new(HealthCheckRequest {
                service: name.to_owned(),
            }))
            .await?;
        Ok(response.into_inner().status())
    }

    async fn watch(
        &self,
        name: &str,
    ) -> impl futures_util::Stream<Item = Result<probity_grpc::pb::HealthCheckResponse, tonic::Status>>
    {
        self.service
            .watch(Request::new(HealthCheckRequest {
                service: name.to_owned(),
            }))
            .await
            .unwrap()
            .into_inner()
    }
}

use ServingStatus::{NotServing, ServiceUnknown, Serving};

#[tokio::test(start_paused = true)]
async fn check_answers_every_service_from_the_snapshot() {
    let f = Fixture::started().await;
    // Booting: readiness and startup fail, liveness passes, the checks answer for themselves.
    assert_eq!(f.check("").await.unwrap(), NotServing);
    assert_eq!(f.check("readiness").await.unwrap(), NotServing);
    assert_eq!(f.check("startup").await.unwrap(), NotServing);
    assert_eq!(f.check("liveness").await.unwrap(), Serving);
    assert_eq!(f.check("db").await.unwrap(), Serving);

    f.health.complete_step("migrations").unwrap();
    assert_eq!(f.check("").await.unwrap(), Serving);
    assert_eq!(f.check("startup").await.unwrap(), Serving);

    // A soft check failing: readiness keeps serving, the cache itself does not.
    f.cache_up.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(f.check("readiness").await.unwrap(), Serving);
    assert_eq!(f.check("cache").await.unwrap(), NotServing);

    f.db_up.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(f.check("").await.unwrap(), NotServing);
    assert_eq!(f.check("db").await.unwrap(), NotServing);
    assert_eq!(f.check("liveness").await.unwrap(), Serving);
}

#[tokio::test(start_paused = true)]
async fn check_on_an_unknown_service_is_not_found_naming_the_known_ones() {
    let f = Fixture::started().await;
    let error = f.check("payments").await.unwrap_err();
    assert_eq!(error.code(), Code::NotFound);
    assert_eq!(
        error.message(),
        "unknown service `payments`; known: \"\", liveness, readiness, startup, db, cache"
    );
}

#[tokio::test(start_paused = true)]
async fn list_returns_every_service() {
    let f = Fixture::started().await;
    f.health.complete_step("migrations").unwrap();
    f.cache_up.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let list = f
        .service
        .list(Request::new(HealthListRequest {}))
        .await
        .unwrap()
        .into_inner();
    let mut statuses: Vec<(String, ServingStatus)> = list
        .statuses
        .into_iter()
        .map(|(name, response)| (name, response.status()))
        .collect();
    statuses.sort();
    assert_eq!(
        statuses,
        vec![
            ("".into(), Serving),
            ("cache".into(), NotServing),
            ("db".into(), Serving),
            ("liveness".into(), Serving),
            ("readiness".into(), Serving),
            ("startup".into(), Serving),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn watch_streams_the_current_status_then_each_transition() {
    let f = Fixture::started().await;
    let mut stream = f.watch("").await;
    assert_eq!(stream.next().await.unwrap().unwrap().status(), NotServing);

    f.health.complete_step("migrations").unwrap();
    assert_eq!(stream.next().await.unwrap().unwrap().status(), Serving);

    f.db_up.store(false, Ordering::SeqCst);
    let started = tokio::time::Instant::now();
    assert_eq!(stream.next().await.unwrap().unwrap().status(), NotServing);
    assert!(started.elapsed() <= Duration::from_secs(1));

    // Rise 2: back after two successful polls, and only one message for it.
    f.db_up.store(true, Ordering::SeqCst);
    assert_eq!(stream.next().await.unwrap().unwrap().status(), Serving);
    let nothing = tokio::time::timeout(Duration::from_secs(30), stream.next()).await;
    assert!(nothing.is_err(), "no message without a change: {nothing:?}");
}

#[tokio::test(start_paused = true)]
async fn watch_on_an_unknown_service_sends_service_unknown_and_stays_open() {
    let f = Fixture::started().await;
    let mut stream = f.watch("payments").await;
    assert_eq!(
        stream.next().await.unwrap().unwrap().status(),
        ServiceUnknown
    );
    f.health.complete_step("migrations").unwrap();
    let open = tokio::time::timeout(Duration::from_secs(60), stream.next()).await;
    assert!(open.is_err(), "the stream must stay open: {open:?}");
}

#[tokio::test(start_paused = true)]
async fn watch_sees_time_based_changes_without_a_publish() {
    let f = Fixture::started().await;
    f.health.complete_step("migrations").unwrap();
    let mut stream = f.watch("db").await;
    assert_eq!(stream.next().await.unwrap().unwrap().status(), Serving);
    // The pollers stop; nothing is published again, but the last result goes stale after its
    // bound (3 × the interval) and the stream says so.
    f.health.stop();
    let stopped = tokio::time::Instant::now();
    assert_eq!(stream.next().await.unwrap().unwrap().status(), NotServing);
    let waited = stopped.elapsed();
    assert!(
        waited >= Duration::from_secs(2) && waited <= Duration::from_secs(4),
        "{waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn shutdown_turns_every_service_not_serving_and_ends_watches_after_the_drain() {
    let f = Fixture::started().await;
    f.health.complete_step("migrations").unwrap();
    let mut liveness = f.watch("liveness").await;
    assert_eq!(liveness.next().await.unwrap().unwrap().status(), Serving);

    let started = tokio::time::Instant::now();
    f.health.shutdown();
    for name in ["", "readiness", "liveness", "startup", "db", "cache"] {
        assert_eq!(f.check(name).await.unwrap(), NotServing, "{name}");
    }
    assert_eq!(liveness.next().await.unwrap().unwrap().status(), NotServing);
    let end = liveness.next().await.unwrap().unwrap_err();
    assert_eq!(end.code(), Code::Unavailable);
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    assert!(liveness.next().await.is_none());
}
