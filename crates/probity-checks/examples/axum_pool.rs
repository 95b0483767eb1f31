//! An axum service with a PostgreSQL pool as a hard check and Redis as a soft one.
//!
//! - `db`: the sqlx pool (4 connections), judged by service — *can a request get a connection
//!   within its budget?* — from the application's own acquisitions too (an
//!   [`AcquireTracker`]). Under load it passes with `busy: 4 of 4 in use, 13 waiting`; a held
//!   or leaked pool fails it. Requests that time out while no connection comes back report a
//!   real failure at once ([`AcquireTracker::released_within`]).
//! - `cache`: Redis `PING`, soft: without it requests are slower, not failed, so readiness
//!   stays 200 with status `warn`.
//! - `migrations`: a boot step that waits on the database, so it gates readiness only (an
//!   outage during a rollout never crash-loops new pods). It retries until PostgreSQL answers,
//!   and stops retrying on SIGTERM.
//! - custom probe paths `/healthz/live`, `/healthz/ready`, `/healthz/startup`, and a drain delay
//!   derived from the readiness probe that watches the service.
//!
//! ```sh
//! DATABASE_URL=postgres://postgres@127.0.0.1:5432/test REDIS_URL=redis://127.0.0.1:6379 \
//!   cargo run -p probity-checks --example axum_pool --features sqlx-postgres,redis
//! curl -s 'http://127.0.0.1:8080/healthz/ready?verbose'
//! curl -s http://127.0.0.1:8080/orders
//! ```

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use probity::{CheckSpec, Health, ProbePaths, Reporter, Tier};
use probity_axum::{Probes, QuietProbesLayer, serve};
use probity_checks::pool::AcquireTracker;
use probity_checks::redis_ping::RedisCheck;
use probity_checks::sqlx_pool::{PoolCheck, acquire};
use sqlx::postgres::PgPoolOptions;
use std::time::Duration;
use tower_http::trace::TraceLayer;

/// The pool's acquire timeout: a request waits at most this long for a connection.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Clone)]
struct App {
    pool: sqlx::PgPool,
    tracker: AcquireTracker,
    db: Reporter,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,tower_http=debug".into()),
        )
        .init();
    let database_url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let redis_url =
        std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());

    // Lazy: the service boots (and passes startup) while the database is down.
    let pool = PgPoolOptions::new()
        .max_connections(4)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .connect_lazy(&database_url)?;
    let tracker = AcquireTracker::new();
    let redis = redis::Client::open(redis_url.as_str())?;

    let health = Health::builder()
        .service("orders")
        .paths(ProbePaths::new(
            "/healthz/live",
            "/healthz/ready",
            "/healthz/startup",
        )?)
        .check(CheckSpec::new(
            "db",
            Tier::Hard,
            PoolCheck::new(pool.clone())
                .tracker(tracker.clone())
                .leak_bound(Duration::from_secs(10)),
        ))
        .check(CheckSpec::new("cache", Tier::Soft, RedisCheck::new(redis)))
        .dependency_step("migrations", "postgres")
        .runtime_watchdog(Duration::from_secs(5))
        // The readiness probe of the Deployment: periodSeconds 2, failureThreshold 2. The
        // drain delay is derived: 2 s × 2 + 2 s for the load balancer to react.
        .readiness_probe(Duration::from_secs(2), 2)
        .build()?;
    health.start()?;
    health.shutdown_on_signals();

    let app = App {
        pool: pool.clone(),
        tracker,
        db: health.reporter("db")?,
    };
    let router = Router::new()
        .route("/orders", get(orders))
        .with_state(app)
        .merge(Probes::new(&health).router())
        // Probe requests skip the access log: it shows traffic, not the kubelet. `for_health`
        // knows the custom paths.
        .layer(QuietProbesLayer::for_health(
            &health,
            TraceLayer::new_for_http(),
        ));

    let address = std::env::var("LISTEN").unwrap_or_else(|_| "127.0.0.1:8080".to_owned());
    let listener = tokio::net::TcpListener::bind(&address).await?;
    println!(
        "serving http://{} (drain delay {:?})",
        listener.local_addr()?,
        health.drain_delay()
    );
    let serving = tokio::spawn({
        let health = health.clone();
        async move { serve(listener, router, &health).await }
    });

    if migrate_until_done(&health, &pool).await? {
        health.complete_step("migrations")?;
        println!("migrations applied");
    }
    let report = serving.await??;
    println!(
        "drained for {:?}; in-flight requests done within the deadline: {}",
        report.drained_for(),
        report.within_deadline
    );
    Ok(())
}

/// Retries the migration until the database answers — or until shutdown starts, so a SIGTERM
/// during an outage lets the process drain and exit instead of retrying until the grace period
/// kills it. Returns whether the migration ran.
async fn migrate_until_done(
    health: &Health,
    pool: &sqlx::PgPool,
) -> Result<bool, Box<dyn std::error::Error>> {
    let mut backoff = Duration::from_millis(200);
    for attempt in 1_u32.. {
        tokio::select! {
            _ = health.shutdown_triggered() => return Ok(false),
            outcome = migrate(pool) => match outcome {
                Ok(()) => return Ok(true),
                Err(error) => health.step_progress(
                    "migrations",
                    format!("database unreachable: {error}; retry {attempt} in {backoff:?}"),
                )?,
            },
        }
        tokio::select! {
            _ = health.shutdown_triggered() => return Ok(false),
            () = tokio::time::sleep(backoff) => backoff = (backoff * 2).min(Duration::from_secs(5)),
        }
    }
    Ok(false)
}

async fn migrate(pool: &sqlx::PgPool) -> Result<(), sqlx::Error> {
    sqlx::query("CREATE TABLE IF NOT EXISTS example_orders (id BIGSERIAL PRIMARY KEY)")
        .execute(pool)
        .await
        .map(drop)
}

async fn orders(State(app): State<App>) -> Result<String, (StatusCode, String)> {
    let unavailable = |error: sqlx::Error| (StatusCode::SERVICE_UNAVAILABLE, format!("{error}\n"));
    let mut connection = match acquire(&app.pool, &app.tracker).await {
        Ok(connection) => connection,
        Err(error) => {
            // A timeout while connections kept coming back is load (the pool check says
            // `busy`); one while none came back is a pool that hands out nothing: report it,
            // and readiness fails before the next poll.
            let load = matches!(error, sqlx::Error::PoolTimedOut)
                && app.tracker.released_within(ACQUIRE_TIMEOUT);
            if !load {
                app.db.failure(&error);
            }
            return Err(unavailable(error));
        }
    };
    // The tracked connection derefs to `PgConnection`, like sqlx's own `PoolConnection`.
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM example_orders")
        .fetch_one(&mut *connection)
        .await
        .map_err(unavailable)?;
    app.db.success();
    Ok(format!("{count} orders\n"))
}
