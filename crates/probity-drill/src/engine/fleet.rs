//! A fleet: the pods of one drill file, each reaching each dependency through fault proxies of
//! its own, behind a HAProxy of their own, with rotation read from it.
//!
//! The drill runs one; the health-check cost runs two more beside it ([`super::cost`]): one
//! identical, one with no health checking at all ([`Variant::Bare`]).

use super::Progress;
use super::balancer::{self, Balancer};
use super::events::{EventKind, Events};
use super::pod::{Pod, Ports, Program, ProgramChange};
use super::tcp::{PathState, TcpFaultProxy};
use crate::DrillError;
use crate::file::placeholder::{self, DependencyPart, Placeholder};
use crate::file::pod::{ProbeAction, ResolvedPod};
use crate::file::{AppChange, BalancerMode, Loaded, Scope};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// How often rotation is read from HAProxy.
pub const ROTATION_POLL: Duration = Duration::from_millis(100);
/// How long the fleet must stay whole to count as back.
pub const STABLE: Duration = Duration::from_secs(2);

/// Health checking as the file has it, or none at all.
#[derive(Debug, Clone)]
pub enum Variant {
    /// The file's probes and balancer.
    Checked,
    /// No probes, HAProxy without checks (`kubernetes` mode with every instance ready once
    /// started), and the app changed so it does no checking of its own.
    Bare(AppChange),
}

/// What every fleet of a run shares.
pub struct Shared<'a> {
    /// The file.
    pub loaded: &'a Loaded,
    /// The probes.
    pub pod: &'a ResolvedPod,
    /// Each dependency's real address.
    pub dependencies: &'a BTreeMap<String, SocketAddr>,
    /// The agent's configuration text, its extension and the `probity` binary, when it runs.
    pub agent: Option<&'a (String, String, PathBuf)>,
    /// The `haproxy` binary.
    pub haproxy: &'a Path,
    /// The run's own name: `{run}`.
    pub run: &'a str,
    /// Progress lines.
    pub progress: &'a dyn Progress,
}

impl std::fmt::Debug for Shared<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("service", &self.loaded.file.service)
            .field("run", &self.run)
            .finish_non_exhaustive()
    }
}

/// Everything a placeholder of one instance is filled with.
#[derive(Debug, Clone)]
pub struct Instance {
    index: usize,
    name: String,
    ports: Ports,
    dir: PathBuf,
    run: String,
    proxies: BTreeMap<String, SocketAddr>,
    urls: BTreeMap<String, String>,
}

impl Instance {
    /// `text` with this instance's placeholders filled.
    pub fn fill(&self, text: &str) -> String {
        placeholder::fill(text, |placeholder| {
            Some(match placeholder {
                Placeholder::Port => self.ports.app.to_string(),
                Placeholder::NamedPort(port) => self.ports.named.get(port)?.to_string(),
                Placeholder::Instance => (self.index + 1).to_string(),
                Placeholder::Name => self.name.clone(),
                Placeholder::Dir => self.dir.display().to_string(),
                Placeholder::AgentPort => self.ports.agent?.to_string(),
                Placeholder::Run => self.run.clone(),
                Placeholder::Seconds | Placeholder::Captured(_) => return None,
                Placeholder::Dependency { name: dep, part } => {
                    let address = *self.proxies.get(dep)?;
                    match part {
                        DependencyPart::Url => {
                            crate::address::redirect_url(self.urls.get(dep)?, address)?
                        }
                        DependencyPart::Address => address.to_string(),
                        DependencyPart::Host => address.ip().to_string(),
                        DependencyPart::Port => address.port().to_string(),
                    }
                }
            })
        })
    }

    /// `change` with this instance's placeholders filled.
    pub fn change(&self, change: &AppChange) -> ProgramChange {
        ProgramChange {
            env: change
                .env
                .iter()
                .map(|(key, value)| (key.clone(), self.fill(value)))
                .collect(),
            args: change.args.iter().map(|arg| self.fill(arg)).collect(),
        }
    }
}

/// A running fleet.
#[derive(Debug)]
pub struct Fleet {
    /// The pods, in order.
    pub pods: Vec<Arc<Pod>>,
    /// Per pod, what its placeholders are filled with.
    pub instances: Vec<Instance>,
    /// Per pod, per dependency.
    pub proxies: Vec<BTreeMap<String, TcpFaultProxy>>,
    /// Its HAProxy.
    pub balancer: Arc<Balancer>,
    /// Per pod, whether HAProxy has it in rotation.
    pub rotation: Arc<Mutex<Vec<bool>>>,
    /// What happened to the pods.
    pub events: Events,
    tasks: Vec<JoinHandle<()>>,
}

/// Picks free loopback ports, each held by a listener until the picker is dropped, so no two
/// picks of one fleet can be the same port: a port whose listener was already closed may be
/// handed out again by the kernel, and an app given the same port for `{port}` and
/// `{port:admin}` cannot start.
#[derive(Default)]
struct PortPicker {
    held: Vec<std::net::TcpListener>,
}

impl PortPicker {
    fn pick(&mut self) -> std::io::Result<u16> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        self.held.push(listener);
        Ok(port)
    }
}

/// The last lines of a log.
pub fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

impl Fleet {
    /// The processes the fleet runs, for their CPU time: each pod's app and agent, and HAProxy.
    pub fn processes(&self) -> super::cpu::Processes {
        super::cpu::Processes {
            groups: self
                .pods
                .iter()
                .flat_map(|pod| pod.process_groups())
                .collect(),
            pids: self.balancer.pid().into_iter().collect(),
        }
    }

    /// Prepares the pods (nothing runs yet but the proxies) and starts the balancer, with
    /// logs and configuration under `work`; instances are named `SERVICE-N`, or
    /// `SERVICE-LABEL-N` with a label.
    pub async fn build(
        shared: &Shared<'_>,
        variant: &Variant,
        work: &Path,
        label: Option<&str>,
    ) -> Result<Fleet, DrillError> {
        let file = &shared.loaded.file;
        std::fs::create_dir_all(work)?;
        let events = Events::default();
        let pod_spec = match variant {
            Variant::Checked => shared.pod.clone(),
            Variant::Bare(_) => ResolvedPod {
                startup: None,
                liveness: None,
                readiness: None,
                ..shared.pod.clone()
            },
        };
        let agent = match variant {
            Variant::Checked => shared.agent,
            Variant::Bare(_) => None,
        };
        let mut pods = Vec::new();
        let mut proxies = Vec::new();
        let mut instances = Vec::new();
        let mut picker = PortPicker::default();
        for index in 0..file.instances as usize {
            let name = match label {
                Some(label) => format!("{}-{label}-{}", file.service, index + 1),
                None => format!("{}-{}", file.service, index + 1),
            };
            let ports = Ports {
                app: picker.pick()?,
                named: file
                    .app
                    .ports
                    .keys()
                    .map(|port| Ok((port.clone(), picker.pick()?)))
                    .collect::<std::io::Result<_>>()?,
                agent: agent.map(|_| picker.pick()).transpose()?,
            };
            let mut own = BTreeMap::new();
            for (dependency, address) in shared.dependencies {
                own.insert(dependency.clone(), TcpFaultProxy::start(*address).await?);
            }
            let dir = work.join(&name);
            std::fs::create_dir_all(&dir)?;
            let instance = Instance {
                index,
                name: name.clone(),
                ports: ports.clone(),
                dir,
                run: shared.run.to_owned(),
                proxies: own
                    .iter()
                    .map(|(dep, proxy): (&String, &TcpFaultProxy)| (dep.clone(), proxy.address()))
                    .collect(),
                urls: file
                    .dependencies
                    .iter()
                    .filter_map(|(dep, spec)| Some((dep.clone(), spec.url.clone()?)))
                    .collect(),
            };
            let env: Vec<(String, String)> = file
                .app
                .env
                .iter()
                .map(|(key, value)| (key.clone(), instance.fill(value)))
                .collect();
            let env_map: BTreeMap<String, String> = env.iter().cloned().collect();
            let mut app = Program {
                command: file
                    .app
                    .command
                    .iter()
                    .map(|word| placeholder::expand_env(&instance.fill(word), &env_map))
                    .collect(),
                env: env.clone(),
                workdir: shared.loaded.workdir(),
                log: work.join(format!("{name}.log")),
            };
            if let Variant::Bare(change) = variant {
                app = app.changed(&instance.change(change));
            }
            let agent = match agent {
                Some((text, extension, probity)) => {
                    let config = instance.dir.join(format!("agent.{extension}"));
                    std::fs::write(&config, instance.fill(text))?;
                    Some(Program {
                        command: vec![
                            probity.display().to_string(),
                            "agent".into(),
                            "--config".into(),
                            config.display().to_string(),
                            "--listen".into(),
                            format!("127.0.0.1:{}", ports.agent.unwrap_or_default()),
                        ],
                        env,
                        workdir: shared.loaded.workdir(),
                        log: work.join(format!("{name}-agent.log")),
                    })
                }
                None => None,
            };
            pods.push(Pod::new(
                index,
                name,
                ports,
                app,
                agent,
                pod_spec.clone(),
                events.clone(),
            ));
            proxies.push(own);
            instances.push(instance);
        }

        let (mode, check_path) = match variant {
            Variant::Checked => (file.balancer.mode, balancer::check_path(&pod_spec)),
            Variant::Bare(_) => (BalancerMode::Kubernetes, None),
        };
        let readiness_port = match pod_spec.readiness.as_ref().map(|probe| &probe.action) {
            Some(ProbeAction::Http { target, .. } | ProbeAction::Tcp { target }) => {
                Some(target.clone())
            }
            _ => None,
        };
        let layout = balancer::Layout {
            frontend: SocketAddr::from(([127, 0, 0, 1], picker.pick()?)),
            socket: work.join("haproxy.sock"),
            servers: pods
                .iter()
                .map(|pod| balancer::Server {
                    name: pod.name.clone(),
                    address: SocketAddr::from(([127, 0, 0, 1], pod.ports.app)),
                    check_port: readiness_port
                        .as_ref()
                        .map(|target| pod.ports.of(target))
                        .filter(|port| *port != pod.ports.app),
                })
                .collect(),
            mode,
            checks: balancer::Checks::from_file(file.balancer.check.as_ref()),
            check_path,
            server_timeout: file.traffic.timeout.map_or(Duration::from_secs(5), |d| d.0),
            retry_on: file.balancer.retry_on.clone().unwrap_or_default(),
        };
        // Every port is picked: let them go, for HAProxy and the pods to bind.
        drop(picker);
        let balancer = Arc::new(Balancer::start(shared.haproxy, work, &layout).await?);
        let rotation = Arc::new(Mutex::new(vec![false; pods.len()]));
        let mut tasks = vec![tokio::spawn(watch_rotation(
            balancer.clone(),
            pods.iter().map(|pod| pod.name.clone()).collect(),
            rotation.clone(),
            events.clone(),
        ))];
        if mode == BalancerMode::Kubernetes {
            let propagation = match variant {
                Variant::Checked => file.balancer.propagation(),
                Variant::Bare(_) => Duration::ZERO,
            };
            for pod in &pods {
                tasks.push(tokio::spawn(endpoint_controller(
                    pod.clone(),
                    balancer.clone(),
                    propagation,
                )));
            }
        }
        Ok(Fleet {
            pods,
            instances,
            proxies,
            balancer,
            rotation,
            events,
            tasks,
        })
    }

    /// Starts the pods one at a time (a shared database's migrations never race), each Ready
    /// within `timeout`, then waits until HAProxy has every one in rotation.
    pub async fn start(&self, timeout: Duration) -> Result<(), DrillError> {
        for pod in &self.pods {
            pod.start()
                .await
                .map_err(|error| DrillError::InstanceFailed {
                    name: pod.name.clone(),
                    reason: error.to_string(),
                    log: String::new(),
                })?;
            let deadline = Instant::now() + timeout;
            while !pod.is_ready() {
                if Instant::now() > deadline {
                    return Err(DrillError::InstanceFailed {
                        name: pod.name.clone(),
                        reason: format!(
                            "not Ready within {} s (startup and readiness probes)",
                            timeout.as_secs()
                        ),
                        log: tail(pod.log_path()),
                    });
                }
                tokio::time::sleep(ROTATION_POLL).await;
            }
        }
        if self.wait_whole(timeout).await.is_none() {
            return Err(DrillError::Unhealthy(format!(
                "the fleet is Ready but HAProxy has not taken every instance into rotation \
                 within {} s",
                timeout.as_secs()
            )));
        }
        Ok(())
    }

    /// Whether every pod is Ready, with no kill of it under way, and in rotation.
    pub fn whole(&self) -> bool {
        let rotation = self.rotation.lock().unwrap_or_else(|e| e.into_inner());
        self.pods
            .iter()
            .all(|pod| pod.is_ready() && pod.is_settled())
            && rotation.iter().all(|in_rotation| *in_rotation)
    }

    /// Waits until the fleet is whole and stays whole for [`STABLE`] (a crash or a kill takes
    /// effect a moment after the signal); returns when that stretch began, or `None` when it
    /// did not happen within `within`.
    pub async fn wait_whole(&self, within: Duration) -> Option<Instant> {
        let deadline = Instant::now() + within;
        let mut whole_since: Option<Instant> = None;
        loop {
            let now = Instant::now();
            if self.whole() {
                let since = *whole_since.get_or_insert(now);
                if now.duration_since(since) >= STABLE {
                    return Some(since);
                }
            } else {
                whole_since = None;
            }
            if now >= deadline + STABLE {
                return None;
            }
            if now >= deadline && whole_since.is_none() {
                return None;
            }
            tokio::time::sleep(ROTATION_POLL).await;
        }
    }

    /// Sets the path of every instance (or the first) to `dependency`.
    pub async fn set_path(
        &self,
        dependency: &str,
        scope: Scope,
        state: PathState,
    ) -> std::io::Result<()> {
        for (index, proxies) in self.proxies.iter().enumerate() {
            if scope == Scope::One && index != 0 {
                continue;
            }
            if let Some(proxy) = proxies.get(dependency) {
                proxy.set(state).await?;
            }
        }
        Ok(())
    }

    /// Stops every pod, and the fleet's tasks.
    pub async fn shutdown(self) {
        for task in &self.tasks {
            task.abort();
        }
        for pod in &self.pods {
            pod.shutdown().await;
        }
    }
}

/// Reads rotation from HAProxy and records every change.
async fn watch_rotation(
    balancer: Arc<Balancer>,
    names: Vec<String>,
    rotation: Arc<Mutex<Vec<bool>>>,
    events: Events,
) {
    let mut ticker = tokio::time::interval(ROTATION_POLL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let Ok(stats) = balancer.stats().await else {
            continue;
        };
        for stat in stats {
            let Some(index) = names.iter().position(|name| *name == stat.name) else {
                continue;
            };
            let now = stat.in_rotation();
            let mut rotation = rotation.lock().unwrap_or_else(|e| e.into_inner());
            if rotation[index] != now {
                rotation[index] = now;
                events.record(index, EventKind::Rotation(now));
            }
        }
    }
}

/// `kubernetes` mode: each readiness change reaches HAProxy after the propagation delay, as an
/// EndpointSlice update reaches kube-proxy; a change undone within the delay is not applied.
async fn endpoint_controller(pod: Arc<Pod>, balancer: Arc<Balancer>, propagation: Duration) {
    let mut ready = pod.watch_ready();
    let latest = Arc::new(AtomicU64::new(0));
    let mut current = false;
    loop {
        let now = *ready.borrow_and_update();
        if now != current {
            current = now;
            let change = latest.fetch_add(1, Ordering::AcqRel) + 1;
            let latest = latest.clone();
            let balancer = balancer.clone();
            let name = pod.name.clone();
            tokio::spawn(async move {
                tokio::time::sleep(propagation).await;
                if latest.load(Ordering::Acquire) == change {
                    let _ = balancer.set_rotation(&name, now).await;
                }
            });
        }
        if ready.changed().await.is_err() {
            return;
        }
    }
}
