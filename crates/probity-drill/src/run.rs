//! Running the drills: start the rig and the database proxy, run each drill under load, judge
//! the targets, and tear everything down on every exit path.

use crate::drills::Context;
use crate::fleet::Events;
use crate::proxy::{FaultProxy, redirect_url, url_target};
use crate::report::{LoadShape, Report};
use crate::rig::{Rig, RigSpec};
use crate::{DrillConfig, DrillError, DrillKind};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where the drill reports progress.
pub trait Progress: Send + Sync {
    /// One line of progress.
    fn step(&self, message: &str);
}

impl<F: Fn(&str) + Send + Sync> Progress for F {
    fn step(&self, message: &str) {
        self(message)
    }
}

/// A temporary folder for configuration, sockets, databases and logs.
struct WorkDir {
    path: PathBuf,
    keep: bool,
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// Why `drill` cannot run with `config`, if it cannot: it is skipped, and the report says so.
fn skip_reason(drill: DrillKind, config: &DrillConfig) -> Option<&'static str> {
    if drill.needs_shared_database() && config.database_url.is_none() {
        return Some("needs a shared database (--database-url postgres://…)");
    }
    if drill.needs_cache() && config.redis_url.is_none() {
        return Some("needs the fleet's order cache (--redis-url redis://…)");
    }
    if drill.needs_broker() && config.amqp_url.is_none() {
        return Some("needs a message broker (--amqp-url amqp://…)");
    }
    if drill.needs_own_databases() && config.database_url.is_some() {
        // checkout's outbox relay assumes one relay per database: with one database for the
        // fleet, every relay reads the others' rows, and what each queue receives says nothing.
        return Some(
            "needs each instance's own database, as the outbox relay assumes one relay per \
             database: run it without --database-url",
        );
    }
    None
}

/// How long the background load settles before a fault, and is checked to be served.
const WARMUP: Duration = Duration::from_secs(2);

/// Runs the configured drills and returns the report, with every target judged. Every process
/// the drill started is killed when this future completes or is dropped (Ctrl-C included). On
/// an error the work folder, with every instance's log, is kept and named.
pub async fn run(config: &DrillConfig, progress: &dyn Progress) -> Result<Report, DrillError> {
    if !config.checkout.is_file() {
        return Err(DrillError::CheckoutMissing(config.checkout.clone()));
    }
    // With the cache, the database's fallback, a shared outage degrades the fleet instead of
    // draining it: the drills that measure draining need a fleet without it.
    if config.redis_url.is_some()
        && let Some(drill) = config.drills.iter().find(|drill| drill.measures_draining())
    {
        return Err(DrillError::Config(format!(
            "the `{}` drill measures the fleet draining during a database outage, which the \
             cache (--redis-url) turns into degrading: run it in a run of its own without \
             --redis-url",
            drill.name()
        )));
    }
    let mut work = WorkDir {
        path: std::env::temp_dir().join(format!(
            "probity-drill-{}-{:08x}",
            std::process::id(),
            fastrand::u32(..)
        )),
        keep: config.keep_work_dir,
    };
    std::fs::create_dir_all(&work.path).map_err(DrillError::Io)?;
    progress.step(&format!("work folder {}", work.path.display()));
    // The first call runs `setpriv` once to see that it works: off the runtime's workers.
    let dies_with_the_drill = tokio::task::spawn_blocking(crate::child::dies_with_the_drill)
        .await
        .unwrap_or(false);
    if !dies_with_the_drill {
        progress.step(
            "warning: `setpriv --pdeathsig` (util-linux) is unavailable: if the drill is killed \
             with SIGKILL, the fleet and HAProxy keep running",
        );
    }
    let result = run_in(config, progress, &work.path).await;
    if result.is_err() {
        work.keep = true;
        progress.step(&format!("logs kept in {}", work.path.display()));
    }
    result
}

/// The broker behind a proxy the drill can cut, and the URL through it.
async fn broker_proxy(url: &str) -> Result<(FaultProxy, String), DrillError> {
    let (host, port) = url_target(url).ok_or(DrillError::BrokerUrl)?;
    let unreachable = || DrillError::BrokerUnreachable(format!("{host}:{port}"));
    let upstream = tokio::net::lookup_host((host.as_str(), port))
        .await
        .ok()
        .and_then(|mut addresses| addresses.next())
        .ok_or_else(unreachable)?;
    let connected = tokio::time::timeout(
        Duration::from_secs(3),
        tokio::net::TcpStream::connect(upstream),
    )
    .await;
    if !matches!(connected, Ok(Ok(_))) {
        return Err(unreachable());
    }
    let proxy = FaultProxy::start(upstream).await.map_err(DrillError::Io)?;
    let through = redirect_url(url, proxy.listen_addr()).ok_or(DrillError::BrokerUrl)?;
    Ok((proxy, through))
}

/// The shared database behind a proxy the drill can cut, and the URL through it.
async fn database_proxy(url: &str) -> Result<(FaultProxy, String), DrillError> {
    let (host, port) = url_target(url).ok_or_else(|| DrillError::DatabaseUrl(url.to_owned()))?;
    let upstream = tokio::net::lookup_host((host.as_str(), port))
        .await
        .ok()
        .and_then(|mut addresses| addresses.next())
        .ok_or_else(|| DrillError::DatabaseUnreachable(format!("{host}:{port}")))?;
    if tokio::time::timeout(
        Duration::from_secs(3),
        tokio::net::TcpStream::connect(upstream),
    )
    .await
    .map_or(true, |connected| connected.is_err())
    {
        return Err(DrillError::DatabaseUnreachable(format!("{host}:{port}")));
    }
    let proxy = FaultProxy::start(upstream).await.map_err(DrillError::Io)?;
    let through = redirect_url(url, proxy.listen_addr())
        .ok_or_else(|| DrillError::DatabaseUrl(url.to_owned()))?;
    Ok((proxy, through))
}

async fn run_in(
    config: &DrillConfig,
    progress: &dyn Progress,
    work_path: &Path,
) -> Result<Report, DrillError> {
    let (proxy, database_url) = match &config.database_url {
        Some(url) => {
            let (proxy, through) = database_proxy(url).await?;
            (Some(proxy), Some(through))
        }
        None => (None, None),
    };
    let (broker, amqp_url) = match &config.amqp_url {
        Some(url) => {
            let (proxy, through) = broker_proxy(url).await?;
            (Some(proxy), Some(through))
        }
        None => (None, None),
    };
    let events = Events::default();
    let rig = Rig::start(
        config,
        RigSpec {
            name: "checkout",
            database_url: database_url.as_deref(),
            health_checks: true,
            amqp_url: amqp_url.as_deref(),
            redis_url: config.redis_url.as_deref(),
        },
        work_path,
        &events,
        progress,
    )
    .await?;
    let mut context = Context::new(
        config,
        rig,
        events,
        proxy,
        database_url,
        work_path,
        progress,
    );
    context.broker = broker;
    context.rig.wait_healthy(Duration::from_secs(30)).await?;

    let mut report = Report {
        instances: config.instances,
        database: if config.database_url.is_some() {
            "postgres".to_owned()
        } else {
            "sqlite".to_owned()
        },
        pool_size: config.pool_size,
        haproxy: config.lb_timing,
        probes: config.probes,
        load: LoadShape {
            concurrency: config.concurrency,
            rate: config.rate,
        },
        busy: None,
        pool_exhaustion: None,
        sigterm: None,
        flap: None,
        database_outage: None,
        stall: None,
        slow_boot: None,
        rollout_during_outage: None,
        worker_wedge: None,
        broker_outage: None,
        degraded: None,
        skipped: Vec::new(),
        targets: config.targets,
        verdicts: Vec::new(),
    };
    for &drill in &config.drills {
        if let Some(reason) = skip_reason(drill, config) {
            report.skipped.push(format!("{}: {reason}", drill.name()));
            continue;
        }
        if drill == DrillKind::Busy {
            report.busy = Some(context.busy().await?);
        } else {
            context.start_load(WARMUP).await?;
            match drill {
                DrillKind::PoolExhaustion => {
                    report.pool_exhaustion = Some(context.pool_exhaustion().await?);
                }
                DrillKind::Sigterm => report.sigterm = Some(context.sigterm().await?),
                DrillKind::Flap => report.flap = Some(context.flap().await?),
                DrillKind::DatabaseOutage => {
                    report.database_outage = Some(context.database_outage().await?);
                }
                DrillKind::Stall => report.stall = Some(context.stall().await?),
                DrillKind::SlowBoot => report.slow_boot = Some(context.slow_boot().await?),
                DrillKind::RolloutDuringOutage => {
                    report.rollout_during_outage = Some(context.rollout_during_outage().await?);
                }
                DrillKind::WorkerWedge => {
                    report.worker_wedge = Some(context.worker_wedge().await?);
                }
                DrillKind::BrokerOutage => {
                    report.broker_outage = Some(context.broker_outage().await?);
                }
                DrillKind::Degraded => report.degraded = Some(context.degraded().await?),
                DrillKind::Busy => {}
            }
            context.stop_load();
        }
        context.rig.wait_healthy(Duration::from_secs(90)).await?;
    }
    report.verdicts = config.targets.evaluate(&report);
    context.stop_load();
    for instance in &context.rig.fleet {
        instance.kill().await;
    }
    if let Some(url) = &config.amqp_url {
        let queues: Vec<String> = context
            .rig
            .fleet
            .iter()
            .map(|instance| crate::drills::worker_wedge::queue_name(work_path, &instance.name))
            .collect();
        crate::drills::worker_wedge::delete_queues(url, &queues).await;
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drill_is_skipped_with_the_reason_when_the_run_lacks_what_it_needs() {
        let mut config = DrillConfig::new("checkout".into());
        assert_eq!(skip_reason(DrillKind::PoolExhaustion, &config), None);
        assert!(
            skip_reason(DrillKind::Flap, &config)
                .unwrap()
                .contains("--database-url")
        );
        assert!(
            skip_reason(DrillKind::WorkerWedge, &config)
                .unwrap()
                .contains("--amqp-url")
        );

        config.amqp_url = Some("amqp://127.0.0.1:5672".into());
        assert_eq!(skip_reason(DrillKind::WorkerWedge, &config), None);
        // The outbox relays assume one relay per database: a fleet sharing one cannot show
        // whether each relay delivers its own orders.
        config.database_url = Some("postgres://127.0.0.1/test".into());
        for drill in [DrillKind::WorkerWedge, DrillKind::BrokerOutage] {
            let reason = skip_reason(drill, &config).unwrap();
            assert!(reason.contains("without --database-url"), "{reason}");
        }
        assert_eq!(skip_reason(DrillKind::Flap, &config), None);
        assert!(
            skip_reason(DrillKind::Degraded, &config)
                .unwrap()
                .contains("--redis-url")
        );
    }
}
