//! Starting, serving and stopping the service.

use crate::app::{self, AppState};
use crate::cache::Cache;
use crate::chaos::Chaos;
use crate::config::Config;
use crate::db::Database;
use crate::outbox::{OUTBOX_HEARTBEAT, Outbox};
use crate::recommendations::Recommendations;
use crate::{boot, wiring};
use anyhow::Context;
use metrics_exporter_prometheus::PrometheusHandle;
use probity::Health;
use probity::render::Details;
use probity_axum::{ServeConfig, ShutdownReport};
use probity_contract::duration::format as format_duration;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpListener;

/// How long a cache call may take before it counts as a miss.
const CACHE_TIMEOUT: Duration = Duration::from_millis(100);

/// Everything the service is made of, built but not started.
#[derive(Debug)]
pub struct Service {
    /// The database.
    pub db: Database,
    /// The cache, if configured.
    pub cache: Option<Cache>,
    /// The recommendations client, if configured.
    pub recommendations: Option<Recommendations>,
    /// The outbox relay's state, if configured (`--amqp-url`).
    pub outbox: Option<Outbox>,
    /// The health registry.
    pub health: Health,
}

impl Service {
    /// Builds the parts; connects to nothing. Must run inside the tokio runtime.
    pub fn build(config: &Config) -> anyhow::Result<Service> {
        let db = Database::lazy(
            &config.database,
            config.pool_size,
            config.acquire_timeout,
            config.leak_bound,
        )?;
        let cache = config
            .redis_url
            .as_deref()
            .map(|url| Cache::new(url, &config.cache_prefix, CACHE_TIMEOUT))
            .transpose()?;
        let recommendations = config
            .recommendations_url
            .as_deref()
            .map(|url| Recommendations::new(url, config.recommendations_timeout))
            .transpose()?;
        let outbox = config.outbox.clone().map(Outbox::new);
        let health = wiring::health(
            config,
            &db,
            cache.as_ref(),
            recommendations.as_ref(),
            outbox.as_ref(),
        )
        .context("invalid health wiring")?;
        Ok(Service {
            db,
            cache,
            recommendations,
            outbox,
            health,
        })
    }
}

async fn bind(address: SocketAddr, flag: &str) -> anyhow::Result<TcpListener> {
    TcpListener::bind(address).await.map_err(|error| {
        let hint = match error.kind() {
            std::io::ErrorKind::AddrInUse => {
                format!("address already in use; is another checkout running? pick a free port with {flag}")
            }
            std::io::ErrorKind::PermissionDenied => {
                format!("permission denied; ports below 1024 need privileges, pick another with {flag}")
            }
            std::io::ErrorKind::AddrNotAvailable => {
                format!("no such local address; use an address of this machine with {flag}")
            }
            _ => error.to_string(),
        };
        anyhow::anyhow!("cannot listen on {address} ({flag}): {hint}")
    })
}

/// Runs the service until its shutdown sequence completes (SIGTERM or SIGINT), or until it
/// cannot start.
pub async fn run(config: Config, metrics: PrometheusHandle) -> anyhow::Result<()> {
    // Bind before anything starts: a port in use is reported at once.
    let public_listener = bind(config.listen, "--listen").await?;
    let admin_listener = bind(config.admin_listen, "--admin-listen").await?;
    let public_address = public_listener.local_addr()?;
    let admin_address = admin_listener.local_addr()?;

    let service = Service::build(&config)?;
    // The SQLite file's directory exists before the first poll of the `db` check.
    service.db.prepare()?;
    let health = service.health.clone();
    health.start().context("cannot start the health pollers")?;
    // SIGTERM or SIGINT starts the drain; a second one exits at once, even while the runtime
    // is stalled (the signals are counted off it).
    health.shutdown_on_signals();
    spawn_metrics_upkeep(metrics.clone());

    let state = AppState {
        health: health.view(),
        db_reporter: health.reporter(wiring::DB_CHECK)?,
        db: service.db.clone(),
        cache: service.cache.clone(),
        recommendations: service.recommendations.clone(),
        outbox: service.outbox.clone(),
    };
    let details = if config.public_details {
        Details::Admin
    } else {
        Details::Public
    };
    let public = app::public_router(state, &health, details)?;
    let chaos = config
        .chaos
        .then(|| Chaos::new(service.db.clone(), service.outbox.clone()));
    let admin = app::admin_router(&health, metrics, chaos);

    tracing::info!(
        listen = %public_address,
        admin = %admin_address,
        database = %service.db.describe(),
        chaos = config.chaos,
        outbox = service.outbox.as_ref().map(|outbox| format!("{} queue {}", outbox.target(), outbox.queue())),
        drain_delay = %format_duration(health.view().drain_delay()),
        probes = %config.paths,
        "checkout listening; probes and gRPC grpc.health.v1.Health"
    );

    let mut limits = ServeConfig::for_health(&health.view())
        .header_read_timeout(config.header_read_timeout)
        .body_read_timeout(config.body_read_timeout);
    if let Some(connections) = config.max_connections {
        limits = limits.max_connections(connections as usize);
    }
    // Two listeners share one descriptor limit: each sized from the whole would exhaust it
    // together. The public one takes most; operators and scrapers need little.
    let public_limits = limits.clone().descriptor_share(3, 4);
    let admin_limits = limits.descriptor_share(1, 4);
    tracing::debug!(
        public = public_limits.connection_limit(),
        admin = admin_limits.connection_limit(),
        streams = public_limits.stream_limit(),
        "connection limits"
    );
    let public_server = tokio::spawn({
        let health = health.clone();
        async move { probity_axum::serve_with(public_listener, public, &health, public_limits).await }
    });
    let admin_server = tokio::spawn({
        let health = health.clone();
        async move { probity_axum::serve_with(admin_listener, admin, &health, admin_limits).await }
    });
    let mut booting = tokio::spawn({
        let health = health.clone();
        let db = service.db.clone();
        let outbox = service.outbox.clone();
        async move {
            boot::run(&config, &db, &health).await?;
            // The relay reads the outbox table: it starts once the schema is in place, and
            // takes its heartbeat then (a heartbeat never taken is not silent).
            Ok(match outbox {
                Some(outbox) => Some(outbox.spawn(db, health.heartbeat(OUTBOX_HEARTBEAT)?)),
                None => None,
            })
        }
    });

    let servers = async {
        let (public, admin) = tokio::join!(public_server, admin_server);
        (flatten(public), flatten(admin))
    };
    tokio::pin!(servers);
    let mut relay = None;
    let (public, admin) = tokio::select! {
        booted = &mut booting => {
            match booted {
                Ok(Ok(started)) => relay = started,
                Ok(Err(error)) => return Err(error),
                Err(panic) => return Err(anyhow::anyhow!("boot task failed: {panic}")),
            }
            servers.await
        }
        reports = &mut servers => {
            booting.abort();
            reports
        }
    };
    // Rows it had not marked stay in the outbox for the next process.
    if let Some(relay) = relay {
        relay.abort();
    }
    let public = public.context("public listener")?;
    admin.context("admin listener")?;
    log_report(&public);
    health.stop();
    // Closing waits for checked-out connections; leaked or abandoned ones never come back.
    let _ = tokio::time::timeout(Duration::from_secs(1), service.db.close()).await;
    Ok(())
}

fn flatten(
    joined: Result<std::io::Result<ShutdownReport>, tokio::task::JoinError>,
) -> anyhow::Result<ShutdownReport> {
    match joined {
        Ok(report) => Ok(report?),
        Err(error) => Err(anyhow::anyhow!("server task failed: {error}")),
    }
}

fn log_report(report: &ShutdownReport) {
    let drained = format_duration(Duration::from_millis(
        report.drained_for().as_millis() as u64
    ));
    let in_flight = format_duration(Duration::from_millis(
        report.in_flight_for().as_millis() as u64
    ));
    if report.within_deadline {
        tracing::info!(%drained, %in_flight, "shutdown complete: drained, then finished in-flight requests");
    } else {
        tracing::warn!(%drained, %in_flight, "shutdown complete: in-flight deadline reached, requests abandoned");
    }
}

fn spawn_metrics_upkeep(metrics: PrometheusHandle) {
    tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_secs(5));
        loop {
            every.tick().await;
            metrics.run_upkeep();
        }
    });
}
