//! A fleet of `checkout` instances behind its own HAProxy, with a kubelet-style prober per
//! instance: what every drill runs against.
//!
//! The drill starts one rig with health checking wired as shipped. To measure what health
//! checking costs, the `busy` drill starts a second, bare rig beside it: HAProxy without
//! `check`, no prober, and each instance polling its database once an hour.

use crate::fleet::{Events, Instance, free_port, get_status, probe_client};
use crate::haproxy::{Haproxy, Layout, ServerStat};
use crate::{DrillConfig, DrillError};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// How a bare rig's instances poll their database: rarely enough to cost nothing.
pub const BARE_DB_CHECK_INTERVAL: &str = "3600s";

/// Aborts its tasks when dropped, so no prober outlives its rig.
#[derive(Debug, Default)]
pub struct Tasks(pub Vec<JoinHandle<()>>);

impl Drop for Tasks {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// The fleet, its balancer and its probers.
#[derive(Debug)]
pub struct Rig {
    /// The instances.
    pub fleet: Vec<Arc<Instance>>,
    /// Their HAProxy.
    pub haproxy: Haproxy,
    /// Whether the rig health-checks (HAProxy `check`, the prober, the database polls).
    pub health_checks: bool,
    probers: Tasks,
}

/// What to start.
#[derive(Debug, Clone)]
pub struct RigSpec<'a> {
    /// Instance and file names: `{name}-1`, `{name}.cfg`, ….
    pub name: &'a str,
    /// The database URL for every instance (through the drill's proxy), or `None` for SQLite.
    pub database_url: Option<&'a str>,
    /// With health checking as shipped, or bare.
    pub health_checks: bool,
    /// The broker URL for the instances' outbox relays (through the drill's proxy), if any.
    pub amqp_url: Option<&'a str>,
    /// The Redis URL for the instances' order cache, if any; every instance shares one key
    /// prefix of the run's own, as one service's replicas do.
    pub redis_url: Option<&'a str>,
}

/// The cache key prefix of one run: its work folder's name, so runs sharing a Redis never
/// read each other's orders.
pub fn cache_prefix(work_path: &Path) -> String {
    let folder = work_path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let folder: String = folder
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .take(48)
        .collect();
    format!("probity-drill-{folder}")
}

fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(8)..].join("\n")
}

impl Rig {
    /// Starts the instances one at a time (so shared-database migrations never race), then
    /// HAProxy, then the probers.
    pub async fn start(
        config: &DrillConfig,
        spec: RigSpec<'_>,
        work_path: &Path,
        events: &Events,
        progress: &dyn crate::Progress,
    ) -> Result<Rig, DrillError> {
        let mut fleet = Vec::new();
        for index in 0..config.instances {
            let listen = free_port().map_err(DrillError::Io)?;
            let admin = free_port().map_err(DrillError::Io)?;
            let data_dir = work_path.join(format!("{}-{}", spec.name, index + 1));
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
            if !spec.health_checks {
                args.push("--db-check-interval".to_owned());
                args.push(BARE_DB_CHECK_INTERVAL.to_owned());
            }
            if let Some(url) = spec.database_url {
                args.push("--database-url".to_owned());
                args.push(url.to_owned());
            }
            if let Some(url) = spec.redis_url {
                args.extend([
                    "--redis-url".to_owned(),
                    url.to_owned(),
                    "--cache-prefix".to_owned(),
                    cache_prefix(work_path),
                ]);
            }
            if let Some(url) = spec.amqp_url {
                let name = format!("{}-{}", spec.name, index + 1);
                args.extend([
                    "--amqp-url".to_owned(),
                    url.to_owned(),
                    "--amqp-queue".to_owned(),
                    crate::drills::worker_wedge::queue_name(work_path, &name),
                    "--outbox-max-silence".to_owned(),
                    format!("{}ms", config.worker_bound.as_millis()),
                ]);
            }
            let instance = Arc::new(Instance::new(
                spec.name,
                index,
                &config.checkout,
                args,
                listen,
                admin,
                work_path.join(format!("{}-{}.log", spec.name, index + 1)),
            ));
            instance.start(events).await.map_err(DrillError::Io)?;
            let probe = probe_client(Duration::from_secs(1));
            let started = crate::drills::poll_until(
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

        let layout = Layout {
            frontend: free_port().map_err(DrillError::Io)?,
            stats_page: Some(free_port().map_err(DrillError::Io)?),
            stats_socket: work_path.join(format!("{}-haproxy.sock", spec.name)),
            servers: fleet
                .iter()
                .map(|instance| (instance.name.clone(), instance.listen))
                .collect(),
            timing: config.lb_timing,
            health_checks: spec.health_checks,
        };
        let haproxy = Haproxy::start(
            &config.haproxy,
            work_path,
            &format!("{}-haproxy", spec.name),
            &layout,
        )
        .await?;
        progress.step(&format!(
            "HAProxy on {} (stats http://{}/stats){}",
            layout.frontend,
            layout
                .stats_page
                .map_or_else(String::new, |page| page.to_string()),
            if spec.health_checks {
                ""
            } else {
                ", without health checks"
            }
        ));

        let mut probers = Tasks::default();
        if spec.health_checks {
            for instance in &fleet {
                probers.0.push(tokio::spawn(crate::kubelet::run(
                    instance.clone(),
                    config.probes,
                    events.clone(),
                )));
            }
        }
        Ok(Rig {
            fleet,
            haproxy,
            health_checks: spec.health_checks,
            probers,
        })
    }

    /// Where load through the balancer goes.
    pub fn frontend(&self) -> SocketAddr {
        self.haproxy.frontend
    }

    /// HAProxy's figures per server and for the backend (empty if the socket does not answer).
    pub async fn stats(&self) -> Vec<ServerStat> {
        self.haproxy.stats().await.unwrap_or_default()
    }

    /// Servers in rotation.
    pub async fn servers_in_rotation(&self) -> usize {
        self.stats()
            .await
            .iter()
            .filter(|stat| stat.name != "BACKEND" && stat.in_rotation())
            .count()
    }

    /// Whether `instance` is in rotation.
    pub async fn in_rotation(&self, instance: &Instance) -> bool {
        self.stats()
            .await
            .iter()
            .any(|stat| stat.name == instance.name && stat.in_rotation())
    }

    /// Waits until every instance is in rotation.
    pub async fn wait_healthy(&self, within: Duration) -> Result<(), DrillError> {
        let fleet_size = self.fleet.len();
        let healthy = crate::drills::poll_until(within, Duration::from_millis(100), || async {
            self.servers_in_rotation().await == fleet_size
        })
        .await;
        if healthy.is_some() {
            return Ok(());
        }
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

    /// Stops the probers and kills every instance (HAProxy goes when the rig is dropped).
    pub async fn stop(self) {
        drop(self.probers);
        for instance in &self.fleet {
            instance.kill().await;
        }
    }
}
