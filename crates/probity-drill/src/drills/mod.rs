//! The drills, one module each: what fault, how it is measured, what its report holds.
//!
//! Every drill but `busy` runs under the background load ([`Context::start_load`]): closed-loop
//! `--concurrency` connections of `POST /orders` through HAProxy (or a fixed `--rate`). `busy`
//! is that load alone, without a fault.

pub mod broker_outage;
pub mod busy;
pub mod degraded;
pub mod flap;
pub mod outage;
pub mod pool;
pub mod rollout;
pub mod sigterm;
pub mod slow_boot;
pub mod stall;
pub mod worker_wedge;

use crate::fleet::{Event, EventKind, Events, Instance};
use crate::load::{LoadHandle, LoadSpec, Timeline};
use crate::proxy::FaultProxy;
use crate::readiness::Figures;
use crate::report::seconds;
use crate::rig::Rig;
use crate::{DrillConfig, DrillError, Progress};
use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::time::Instant;

/// Polls `condition` every `every` until it holds or `within` passes; returns when it held.
pub async fn poll_until<F, Fut>(
    within: Duration,
    every: Duration,
    mut condition: F,
) -> Option<Instant>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    loop {
        if condition().await {
            return Some(Instant::now());
        }
        if Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(every).await;
    }
}

/// Whether an event is a failed liveness probe.
pub fn liveness_failed(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::ProbeFailed {
            probe: "liveness",
            ..
        }
    )
}

/// Seconds from `start` to `at`.
pub fn since(start: Instant, at: Option<Instant>) -> Option<f64> {
    at.map(|at| seconds(at.saturating_duration_since(start)))
}

/// `t+1.23s`, or `never`.
pub fn fmt_at(value: Option<f64>) -> String {
    value.map_or_else(|| "never".to_owned(), |s| format!("t+{s:.2}s"))
}

/// The longest any background load may run: a bound on every load loop, far beyond any drill.
const LOAD_BOUND: Duration = Duration::from_secs(3600);

/// What the drills share: the rig, the database proxy, the background load, the event log.
pub struct Context<'a> {
    /// The configuration.
    pub config: &'a DrillConfig,
    /// The fleet behind its HAProxy, health-checked as shipped.
    pub rig: Rig,
    /// What the background load saw, over every drill.
    pub timeline: Timeline,
    /// What happened to the instances (probes, kills, starts).
    pub events: Events,
    /// For the drill's own calls (chaos endpoints, metrics).
    pub client: reqwest::Client,
    /// The cuttable path to the shared database, if there is one.
    pub proxy: Option<FaultProxy>,
    /// The database URL the instances use (through the proxy).
    pub database_url: Option<String>,
    /// Where configuration, databases and logs go.
    pub work_path: &'a Path,
    /// Where progress goes.
    pub progress: &'a dyn Progress,
    /// The cuttable path to the broker, if there is one.
    pub broker: Option<FaultProxy>,
    /// Orders the fleet held at the last count against the broker (whose queues were emptied
    /// then).
    pub tallied_orders: u64,
    load: Option<LoadHandle>,
}

impl<'a> Context<'a> {
    /// The context for drills against `rig`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        config: &'a DrillConfig,
        rig: Rig,
        events: Events,
        proxy: Option<FaultProxy>,
        database_url: Option<String>,
        work_path: &'a Path,
        progress: &'a dyn Progress,
    ) -> Self {
        Context {
            config,
            rig,
            timeline: Timeline::default(),
            events,
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(3))
                .no_proxy()
                .build()
                .unwrap_or_default(),
            proxy,
            database_url,
            work_path,
            progress,
            broker: None,
            tallied_orders: 0,
            load: None,
        }
    }

    /// The background load's shape.
    pub fn load_spec(&self, duration: Duration) -> LoadSpec {
        LoadSpec {
            concurrency: self.config.concurrency,
            duration,
            rate: self.config.rate,
            ..LoadSpec::default()
        }
    }

    /// Starts the background load through HAProxy, lets it settle for `warmup`, and fails when
    /// the fleet does not serve it before any fault.
    pub async fn start_load(&mut self, warmup: Duration) -> Result<(), DrillError> {
        self.stop_load();
        let spec = self.load_spec(LOAD_BOUND);
        self.load = Some(crate::load::start(
            self.rig.frontend(),
            &spec,
            self.timeline.clone(),
        ));
        let started = Instant::now();
        tokio::time::sleep(warmup).await;
        let baseline = self.timeline.report(started, Instant::now());
        self.progress
            .step(&format!("load before the fault: {baseline}"));
        if baseline.succeeded == 0 {
            return Err(DrillError::Unhealthy(format!(
                "the fleet serves none of {} requests before any fault: see the logs in {}",
                baseline.requests,
                self.work_path.display()
            )));
        }
        if baseline.failed > 0 {
            // Measured and reported, not hidden: the drill's own figures will show it.
            self.progress.step(&format!(
                "warning: the fleet fails {} of {} requests before any fault",
                baseline.failed, baseline.requests
            ));
        }
        Ok(())
    }

    /// Stops the background load.
    pub fn stop_load(&mut self) {
        if let Some(load) = self.load.take() {
            load.stop();
        }
    }

    /// Restarts made by the probers so far.
    pub fn total_restarts(&self) -> u32 {
        self.rig
            .fleet
            .iter()
            .map(|instance| instance.restarts.load(Ordering::Acquire))
            .sum()
    }

    /// `POST http://{address}{path}`.
    pub async fn post(&self, address: SocketAddr, path: &str) -> Result<u16, String> {
        match self
            .client
            .post(format!("http://{address}{path}"))
            .send()
            .await
        {
            Ok(response) => Ok(response.status().as_u16()),
            Err(error) => Err(error.to_string()),
        }
    }

    /// `POST` to a chaos endpoint; an error unless it answered 2xx.
    pub async fn chaos(&self, instance: &Instance, path: &str) -> Result<(), DrillError> {
        let status = self.post(instance.admin, path).await;
        if matches!(status, Ok(200..=299)) {
            Ok(())
        } else {
            Err(DrillError::Chaos(format!(
                "POST {path} on {} answered {status:?}",
                instance.name
            )))
        }
    }

    /// The first event of `instance` since `since` that `matches`.
    pub fn first_event(
        &self,
        since: Instant,
        instance: usize,
        matches: impl Fn(&EventKind) -> bool,
    ) -> Option<Event> {
        self.events
            .since(since)
            .into_iter()
            .find(|event| event.instance == instance && matches(&event.kind))
    }

    /// Startup probes of `instance` that failed from `since` until it started (`until`), or
    /// since then at all when it never did.
    pub fn startup_probe_failures(
        &self,
        since: Instant,
        instance: usize,
        until: Option<Instant>,
    ) -> u32 {
        self.events
            .since(since)
            .iter()
            .filter(|event| {
                event.instance == instance
                    && matches!(
                        event.kind,
                        EventKind::ProbeFailed {
                            probe: "startup",
                            ..
                        }
                    )
                    && until.is_none_or(|until| event.at <= until)
            })
            .count() as u32
    }

    /// Waits up to `within` for the first such event.
    pub async fn wait_event(
        &self,
        since: Instant,
        instance: usize,
        within: Duration,
        matches: impl Fn(&EventKind) -> bool,
    ) -> Option<Event> {
        poll_until(within, Duration::from_millis(50), || async {
            self.first_event(since, instance, &matches).is_some()
        })
        .await
        .and_then(|_| self.first_event(since, instance, &matches))
    }

    /// Each instance's readiness figures now (zeros for one whose `/metrics` does not answer).
    pub async fn figures(&self, fleet: &[std::sync::Arc<Instance>]) -> Vec<Figures> {
        let mut all = Vec::new();
        for instance in fleet {
            all.push(
                crate::readiness::scrape(&self.client, instance.admin)
                    .await
                    .unwrap_or_default(),
            );
        }
        all
    }
}

impl std::fmt::Debug for Context<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("rig", &self.rig)
            .field("proxy", &self.proxy)
            .field("loaded", &self.load.is_some())
            .finish_non_exhaustive()
    }
}

impl Drop for Context<'_> {
    fn drop(&mut self) {
        self.stop_load();
    }
}

/// Per server, HAProxy's `chkdown` from `before` to `after`; and the backend's retries and
/// redispatches.
pub fn balancer_changes(
    before: &[crate::haproxy::ServerStat],
    after: &[crate::haproxy::ServerStat],
) -> (Vec<(String, u64)>, u64, u64) {
    let find = |stats: &[crate::haproxy::ServerStat], name: &str| {
        stats.iter().find(|stat| stat.name == name).cloned()
    };
    let downs = after
        .iter()
        .filter(|stat| stat.name != "BACKEND")
        .map(|stat| {
            let earlier = find(before, &stat.name).map_or(0, |stat| stat.check_downs);
            (stat.name.clone(), stat.check_downs.saturating_sub(earlier))
        })
        .collect();
    let backend_before = find(before, "BACKEND").unwrap_or_default();
    let backend_after = find(after, "BACKEND").unwrap_or_default();
    (
        downs,
        backend_after.retries.saturating_sub(backend_before.retries),
        backend_after
            .redispatches
            .saturating_sub(backend_before.redispatches),
    )
}
