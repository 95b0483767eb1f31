//! Running the drills: start the fleet, the load balancer, the probers and the load, inject
//! each fault, measure, and tear everything down on every exit path.

use crate::fleet::{Event, EventKind, Events, Instance, free_port, get_status, probe_client};
use crate::haproxy::{Haproxy, in_rotation};
use crate::load::{LoadRequest, Timeline};
use crate::proxy::{FaultProxy, redirect_url, url_target};
use crate::report::{DatabaseOutage, PoolExhaustion, Report, SlowBoot, Stall, seconds};
use crate::{DrillConfig, DrillError, DrillKind};
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;

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

/// Aborts its tasks when dropped, so no prober or load worker outlives the drill.
struct Tasks(Vec<JoinHandle<()>>);

impl Drop for Tasks {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
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

struct Context<'a> {
    config: &'a DrillConfig,
    fleet: Vec<Arc<Instance>>,
    haproxy: Haproxy,
    timeline: Timeline,
    events: Events,
    client: reqwest::Client,
    proxy: Option<FaultProxy>,
    progress: &'a dyn Progress,
}

/// Polls `condition` every `every` until it holds or `within` passes; returns when it held.
async fn poll_until<F, Fut>(within: Duration, every: Duration, mut condition: F) -> Option<Instant>
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

fn since(start: Instant, at: Option<Instant>) -> Option<f64> {
    at.map(|at| seconds(at.saturating_duration_since(start)))
}

impl Context<'_> {
    fn total_restarts(&self) -> u32 {
        self.fleet
            .iter()
            .map(|instance| instance.restarts.load(Ordering::Acquire))
            .sum()
    }

    async fn in_rotation(&self, instance: &Instance) -> bool {
        match self.haproxy.server_states().await {
            Ok(states) => states
                .iter()
                .any(|(name, status)| name == &instance.name && in_rotation(status)),
            Err(_) => false,
        }
    }

    async fn servers_in_rotation(&self) -> usize {
        match self.haproxy.server_states().await {
            Ok(states) => states
                .iter()
                .filter(|(_, status)| in_rotation(status))
                .count(),
            Err(_) => 0,
        }
    }

    async fn post(&self, address: SocketAddr, path: &str) -> Result<u16, String> {
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

    /// Waits until every instance is running, started and in rotation.
    async fn wait_healthy(&self, within: Duration) -> Result<(), DrillError> {
        let fleet_size = self.fleet.len();
        let healthy = poll_until(within, Duration::from_millis(100), || async {
            self.servers_in_rotation().await == fleet_size
        })
        .await;
        match healthy {
            Some(_) => Ok(()),
            None => {
                let states = self.haproxy.server_states().await.unwrap_or_default();
                Err(DrillError::Unhealthy(format!(
                    "the fleet did not return to health within {}s (HAProxy: {})",
                    within.as_secs(),
                    states
                        .iter()
                        .map(|(name, status)| format!("{name} {status}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )))
            }
        }
    }

    fn first_event(
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

    async fn pool_exhaustion(&self) -> Result<PoolExhaustion, DrillError> {
        let victim = &self.fleet[0];
        self.progress.step(&format!(
            "pool exhaustion: leaking every connection of {}'s pool",
            victim.name
        ));
        let restarts_before = self.total_restarts();
        let start = Instant::now();
        let leak = format!("/chaos/leak-connections?count={}", self.config.pool_size);
        let status = self.post(victim.admin, &leak).await;
        if !matches!(status, Ok(200..=299)) {
            return Err(DrillError::Chaos(format!(
                "POST {leak} on {} answered {status:?}",
                victim.name
            )));
        }
        let probe = probe_client(Duration::from_millis(500));
        let (unready, out) = tokio::join!(
            poll_until(
                Duration::from_secs(15),
                Duration::from_millis(20),
                || async { get_status(&probe, victim.listen, "/readyz").await == Ok(503) }
            ),
            poll_until(
                Duration::from_secs(20),
                Duration::from_millis(25),
                || async { !self.in_rotation(victim).await }
            ),
        );
        self.progress.step(&format!(
            "pool exhaustion: /readyz 503 at {}, out of rotation at {}",
            fmt_at(since(start, unready)),
            fmt_at(since(start, out))
        ));
        let window_end = out.unwrap_or_else(Instant::now) + Duration::from_secs(1);
        tokio::time::sleep_until(window_end + Duration::from_millis(200)).await;
        let counts = self.timeline.counts(start, window_end);
        let peak = self
            .timeline
            .peak_error_rate(start, window_end, Duration::from_secs(1));
        let restarts = self.total_restarts() - restarts_before;

        let released = Instant::now();
        let status = self.post(victim.admin, "/chaos/release-connections").await;
        if !matches!(status, Ok(200..=299)) {
            return Err(DrillError::Chaos(format!(
                "POST /chaos/release-connections on {} answered {status:?}",
                victim.name
            )));
        }
        let back = poll_until(
            Duration::from_secs(30),
            Duration::from_millis(25),
            || async { self.in_rotation(victim).await },
        )
        .await;
        self.progress.step(&format!(
            "pool exhaustion: released, back in rotation at {}",
            fmt_at(since(released, back))
        ));
        Ok(PoolExhaustion {
            time_to_unready_s: since(start, unready),
            time_out_of_rotation_s: since(start, out),
            requests_failed: counts.failed,
            requests_total: counts.total,
            fleet_error_rate: counts.error_rate(),
            peak_error_rate_1s: peak,
            restarts,
            time_back_in_rotation_s: since(released, back),
        })
    }

    async fn database_outage(&mut self) -> Result<DatabaseOutage, DrillError> {
        let outage = self.config.outage;
        self.progress.step(&format!(
            "database outage: cutting the shared database off for {}s",
            outage.as_secs()
        ));
        let restarts_before = self.total_restarts();
        let start = Instant::now();
        if let Some(proxy) = self.proxy.as_mut() {
            proxy.cut();
        }
        let drained = poll_until(outage, Duration::from_millis(50), || async {
            self.servers_in_rotation().await == 0
        })
        .await;
        self.progress.step(&format!(
            "database outage: every instance out of rotation at {}",
            fmt_at(since(start, drained))
        ));
        tokio::time::sleep_until(start + outage).await;
        let recovered = Instant::now();
        if let Some(proxy) = self.proxy.as_mut() {
            proxy.restore().await.map_err(DrillError::Io)?;
        }
        self.progress
            .step("database outage: database back, waiting for traffic");
        let traffic = poll_until(
            Duration::from_secs(60),
            Duration::from_millis(20),
            || async { self.timeline.first_success_after(recovered).is_some() },
        )
        .await
        .and_then(|_| self.timeline.first_success_after(recovered));
        let fleet_size = self.fleet.len();
        let full = poll_until(
            Duration::from_secs(60),
            Duration::from_millis(50),
            || async { self.servers_in_rotation().await == fleet_size },
        )
        .await;
        self.progress.step(&format!(
            "database outage: traffic served at {} after recovery, whole fleet at {}",
            fmt_at(since(recovered, traffic)),
            fmt_at(since(recovered, full))
        ));
        let counts = self
            .timeline
            .counts(start, traffic.unwrap_or_else(Instant::now));
        Ok(DatabaseOutage {
            outage_s: seconds(outage),
            restarts: self.total_restarts() - restarts_before,
            requests_failed: counts.failed,
            time_to_all_drained_s: since(start, drained),
            time_to_traffic_after_recovery_s: since(recovered, traffic),
            time_to_full_fleet_after_recovery_s: since(recovered, full),
        })
    }

    async fn stall(&self) -> Result<Stall, DrillError> {
        let victim = &self.fleet[1 % self.fleet.len()];
        let stall = self.config.stall;
        self.progress.step(&format!(
            "stall: blocking every runtime worker of {} for {}s",
            victim.name,
            stall.as_secs()
        ));
        let restarts_before = self.total_restarts();
        let start = Instant::now();
        let path = format!("/chaos/stall?seconds={}", stall.as_secs());
        // The stall may begin before the answer is written: a timeout here is expected.
        let _ = tokio::time::timeout(Duration::from_secs(2), self.post(victim.admin, &path)).await;
        let index = victim.index;
        let within = stall + Duration::from_secs(30);
        let failed = poll_until(within, Duration::from_millis(50), || async {
            self.first_event(start, index, |kind| {
                matches!(
                    kind,
                    EventKind::ProbeFailed {
                        probe: "liveness",
                        ..
                    }
                )
            })
            .is_some()
        })
        .await
        .and_then(|_| {
            self.first_event(start, index, |kind| {
                matches!(
                    kind,
                    EventKind::ProbeFailed {
                        probe: "liveness",
                        ..
                    }
                )
            })
        });
        let restarted = poll_until(within, Duration::from_millis(50), || async {
            self.first_event(start, index, |kind| matches!(kind, EventKind::Spawned))
                .is_some()
        })
        .await
        .and_then(|_| self.first_event(start, index, |kind| matches!(kind, EventKind::Spawned)));
        let back = match restarted {
            Some(_) => {
                poll_until(
                    Duration::from_secs(60),
                    Duration::from_millis(50),
                    || async { self.in_rotation(victim).await },
                )
                .await
            }
            None => None,
        };
        self.progress.step(&format!(
            "stall: liveness failed at {}, restarted at {}, back in rotation at {}",
            fmt_at(since(start, failed.as_ref().map(|e| e.at))),
            fmt_at(since(start, restarted.as_ref().map(|e| e.at))),
            fmt_at(since(start, back))
        ));
        let counts = self
            .timeline
            .counts(start, back.unwrap_or_else(Instant::now));
        Ok(Stall {
            stall_s: seconds(stall),
            time_to_liveness_failure_s: since(start, failed.map(|e| e.at)),
            time_to_restart_s: since(start, restarted.map(|e| e.at)),
            time_back_in_rotation_s: since(start, back),
            requests_failed: counts.failed,
            restarts: self.total_restarts() - restarts_before,
        })
    }

    async fn slow_boot(&self) -> Result<SlowBoot, DrillError> {
        let victim = &self.fleet[self.fleet.len() - 1];
        let boot = self.config.boot_delay;
        let probes = self.config.probes;
        let liveness_window = probes.liveness.period * probes.liveness.failure_threshold;
        let startup_budget = probes.startup.period * probes.startup.failure_threshold;
        self.progress.step(&format!(
            "slow boot: restarting {} with a {}s boot (liveness window {}s)",
            victim.name,
            boot.as_secs(),
            liveness_window.as_secs()
        ));
        let restarts_before = self.total_restarts();
        victim.set_next_start_args(vec![
            "--boot-delay".to_owned(),
            format!("{}ms", boot.as_millis()),
        ]);
        let start = Instant::now();
        victim.start(&self.events).await.map_err(DrillError::Io)?;
        let index = victim.index;
        let started = poll_until(
            startup_budget + Duration::from_secs(10),
            Duration::from_millis(50),
            || async {
                self.first_event(start, index, |kind| matches!(kind, EventKind::Started))
                    .is_some()
            },
        )
        .await
        .and_then(|_| self.first_event(start, index, |kind| matches!(kind, EventKind::Started)));
        self.progress.step(&format!(
            "slow boot: started at {}",
            fmt_at(since(start, started.as_ref().map(|e| e.at)))
        ));
        let startup_probe_failures = self
            .events
            .since(start)
            .iter()
            .filter(|event| {
                event.instance == index
                    && matches!(
                        event.kind,
                        EventKind::ProbeFailed {
                            probe: "startup",
                            ..
                        }
                    )
                    && started.as_ref().is_none_or(|s| event.at <= s.at)
            })
            .count() as u32;
        Ok(SlowBoot {
            boot_s: seconds(boot),
            startup_probe_failures,
            liveness_window_s: seconds(liveness_window),
            startup_budget_s: seconds(startup_budget),
            time_to_started_s: since(start, started.map(|e| e.at)),
            restarts: self.total_restarts() - restarts_before,
        })
    }
}

fn fmt_at(value: Option<f64>) -> String {
    value.map_or_else(|| "never".to_owned(), |s| format!("t+{s:.2}s"))
}

fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(8)..].join("\n")
}

/// Runs the configured drills and returns the report. Every process the drill started is
/// killed when this future completes or is dropped (Ctrl-C included). On an error the work
/// folder, with every instance's log, is kept and named.
pub async fn run(config: &DrillConfig, progress: &dyn Progress) -> Result<Report, DrillError> {
    if !config.checkout.is_file() {
        return Err(DrillError::CheckoutMissing(config.checkout.clone()));
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

async fn run_in(
    config: &DrillConfig,
    progress: &dyn Progress,
    work_path: &Path,
) -> Result<Report, DrillError> {
    // The shared database, behind a proxy the drill can cut.
    let mut proxy = None;
    let mut database_url = None;
    if let Some(url) = &config.database_url {
        let (host, port) = url_target(url).ok_or_else(|| DrillError::DatabaseUrl(url.clone()))?;
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
        let started = FaultProxy::start(upstream).await.map_err(DrillError::Io)?;
        database_url = redirect_url(url, started.listen_addr());
        proxy = Some(started);
    }

    // The fleet, started one at a time so shared-database migrations never race.
    let events = Events::default();
    let mut fleet = Vec::new();
    for index in 0..config.instances {
        let listen = free_port().map_err(DrillError::Io)?;
        let admin = free_port().map_err(DrillError::Io)?;
        let data_dir = work_path.join(format!("instance-{}", index + 1));
        std::fs::create_dir_all(&data_dir).map_err(DrillError::Io)?;
        let mut args = vec![
            "--listen".to_owned(),
            listen.to_string(),
            "--admin-listen".to_owned(),
            admin.to_string(),
            "--chaos".to_owned(),
            "--data-dir".to_owned(),
            data_dir.display().to_string(),
            "--pool-size".to_owned(),
            config.pool_size.to_string(),
        ];
        args.extend(config.checkout_args.iter().cloned());
        if let Some(url) = &database_url {
            args.push("--database-url".to_owned());
            args.push(url.clone());
        }
        let instance = Arc::new(Instance::new(
            index,
            &config.checkout,
            args,
            listen,
            admin,
            work_path.join(format!("checkout-{}.log", index + 1)),
        ));
        instance.start(&events).await.map_err(DrillError::Io)?;
        let probe = probe_client(Duration::from_secs(1));
        let started = poll_until(
            Duration::from_secs(60),
            Duration::from_millis(50),
            || async { get_status(&probe, listen, "/startupz").await == Ok(200) },
        )
        .await;
        if started.is_none() {
            let running = instance.is_running().await;
            return Err(DrillError::InstanceFailed {
                name: instance.name.clone(),
                reason: if running {
                    "/startupz did not pass within 60s".to_owned()
                } else {
                    "the process exited".to_owned()
                },
                log: log_tail(instance.log_path()),
            });
        }
        progress.step(&format!("{} up on {listen} (admin {admin})", instance.name));
        fleet.push(instance);
    }

    let frontend = free_port().map_err(DrillError::Io)?;
    let servers: Vec<(String, SocketAddr)> = fleet
        .iter()
        .map(|instance| (instance.name.clone(), instance.listen))
        .collect();
    let haproxy = Haproxy::start(
        &config.haproxy,
        work_path,
        frontend,
        &servers,
        config.lb_timing,
    )
    .await?;
    progress.step(&format!("HAProxy on {frontend}"));

    let mut tasks = Tasks(Vec::new());
    for instance in &fleet {
        tasks.0.push(tokio::spawn(crate::kubelet::run(
            instance.clone(),
            config.probes,
            events.clone(),
        )));
    }

    let mut context = Context {
        config,
        fleet,
        haproxy,
        timeline: Timeline::default(),
        events,
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(3))
            .no_proxy()
            .build()
            .unwrap_or_default(),
        proxy,
        progress,
    };
    context.wait_healthy(Duration::from_secs(30)).await?;
    tasks.0.extend(crate::load::start(
        frontend,
        LoadRequest {
            method: reqwest::Method::POST,
            path: "/orders".to_owned(),
            body: Some(
                r#"{"customer":"drill","items":[{"sku":"book-1","quantity":1,"price_cents":1299}]}"#
                    .to_owned(),
            ),
        },
        config.rate,
        config.concurrency,
        context.timeline.clone(),
    ));
    let warmup = Instant::now();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let baseline = context.timeline.counts(warmup, Instant::now());
    progress.step(&format!(
        "load: {} requests in 3s, {} failed",
        baseline.total, baseline.failed
    ));
    if baseline.total == 0 || baseline.error_rate() > 0.01 {
        return Err(DrillError::Unhealthy(format!(
            "the fleet fails {} of {} requests before any fault: see the logs in {}",
            baseline.failed,
            baseline.total,
            work_path.display()
        )));
    }

    let mut report = Report {
        instances: config.instances,
        database: if config.database_url.is_some() {
            "postgres".to_owned()
        } else {
            "sqlite".to_owned()
        },
        haproxy: config.lb_timing,
        probes: config.probes,
        load_rps: config.rate,
        baseline_rps: baseline.total as f64 / 3.0,
        pool_exhaustion: None,
        database_outage: None,
        stall: None,
        slow_boot: None,
        skipped: Vec::new(),
    };
    for drill in &config.drills {
        match drill {
            DrillKind::PoolExhaustion => {
                report.pool_exhaustion = Some(context.pool_exhaustion().await?);
            }
            DrillKind::DatabaseOutage => {
                if context.proxy.is_none() {
                    report.skipped.push(
                        "database outage: needs a shared database (--database-url postgres://…)"
                            .to_owned(),
                    );
                    continue;
                }
                report.database_outage = Some(context.database_outage().await?);
            }
            DrillKind::Stall => report.stall = Some(context.stall().await?),
            DrillKind::SlowBoot => report.slow_boot = Some(context.slow_boot().await?),
        }
        context.wait_healthy(Duration::from_secs(90)).await?;
    }
    drop(tasks);
    for instance in &context.fleet {
        instance.kill().await;
    }
    Ok(report)
}
