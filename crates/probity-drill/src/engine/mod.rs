//! The engine that drills any service from its drill file.
//!
//! A fleet of [`pod::Pod`]s on loopback — each the app's process, an optional `probity agent`,
//! and a kubelet that probes and restarts it — each reaching each dependency through a
//! [`tcp::TcpFaultProxy`] of its own, behind a real HAProxy ([`balancer`]) fed by readiness
//! (`kubernetes` mode) or checking by itself (`haproxy` mode). The traffic mix runs through
//! HAProxy for the whole run; the faults run one after another, each for its duration and then
//! until the fleet is whole again; each becomes a [`report::Row`], judged by [`judge`].
//!
//! The drill runs on the fleet's operations only — start an instance, say whether it is Ready
//! and in rotation, break its path to a dependency, freeze, replace or crash it, and the record
//! of what happened — which [`backend::Backend`] names and [`LocalFleet`] implements on this
//! machine; a cluster backend implements the same, and drill files and the report stay as they
//! are (`docs/drill.md` maps each operation onto Kubernetes resources).

pub mod backend;
pub mod balancer;
pub mod events;
pub mod judge;
pub mod pod;
pub mod report;
pub mod tcp;

use crate::DrillError;
use crate::file::placeholder::{self, DependencyPart, Placeholder};
use crate::file::pod::{ProbeAction, ResolvedPod};
use crate::file::{BalancerMode, Fault, FaultKind, Loaded, Scope};
use crate::load::{self, LoadRequest, LoadSpec, Outcome, Timeline};
use crate::run::Progress;
use backend::Backend;
use events::{EventKind, Events};
use pod::TIMED_OUT;
use pod::{Pod, Ports, Program};
use report::{Failed, FileReport, Row};
use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tcp::{PathState, TcpFaultProxy};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// How the fleet settles before each fault.
const WARMUP: Duration = Duration::from_secs(2);
/// How often rotation is read from HAProxy.
const ROTATION_POLL: Duration = Duration::from_millis(100);
/// How long the fleet must stay whole to count as back.
const STABLE: Duration = Duration::from_secs(2);
/// How often a hook call that cannot connect is tried.
const HOOK_CONNECT_ATTEMPTS: u32 = 3;
/// When a `start-during-outage` fault replaces its instance.
const REPLACE_AFTER: Duration = Duration::from_secs(2);

/// What the run needs besides the file.
pub struct Options<'a> {
    /// The `haproxy` binary.
    pub haproxy: PathBuf,
    /// The `probity` binary, for the agent sidecar.
    pub probity: Option<PathBuf>,
    /// Run the agent beside each instance, with the agent's probes.
    pub with_agent: bool,
    /// Keep the work folder (logs, configuration) after a successful run.
    pub keep_work_dir: bool,
    /// Longest wait for the fleet to be whole at the start.
    pub fleet_timeout: Duration,
    /// Progress lines.
    pub progress: &'a dyn Progress,
}

impl std::fmt::Debug for Options<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("haproxy", &self.haproxy)
            .field("with_agent", &self.with_agent)
            .finish_non_exhaustive()
    }
}

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

/// The local fleet: each instance a [`Pod`] of processes on this machine, reaching each
/// dependency through a [`TcpFaultProxy`] of its own, behind a real HAProxy.
pub struct LocalFleet {
    pods: Vec<Arc<Pod>>,
    /// Per instance, per dependency.
    proxies: Vec<BTreeMap<String, TcpFaultProxy>>,
    balancer: Arc<balancer::Balancer>,
    rotation: Arc<Mutex<Vec<bool>>>,
    events: Events,
    tasks: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for LocalFleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalFleet")
            .field("instances", &self.pods.len())
            .field("frontend", &self.balancer.frontend)
            .finish_non_exhaustive()
    }
}

impl Backend for LocalFleet {
    type Frozen = pod::Frozen;

    fn instances(&self) -> usize {
        self.pods.len()
    }

    fn name(&self, index: usize) -> &str {
        &self.pods[index].name
    }

    fn frontend(&self) -> SocketAddr {
        self.balancer.frontend
    }

    fn events(&self) -> &Events {
        &self.events
    }

    async fn start(&self, index: usize) -> std::io::Result<()> {
        self.pods[index].start().await
    }

    fn is_ready(&self, index: usize) -> bool {
        let pod = &self.pods[index];
        pod.is_ready() && pod.is_settled()
    }

    fn in_rotation(&self, index: usize) -> bool {
        self.rotation
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(index)
            .copied()
            .unwrap_or(false)
    }

    fn log_tail(&self, index: usize) -> String {
        tail(self.pods[index].log_path())
    }

    async fn set_path(
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

    fn freeze(&self, index: usize) -> std::io::Result<pod::Frozen> {
        self.pods[index].freeze()
    }

    fn thaw(&self, frozen: pod::Frozen) {
        frozen.thaw();
    }

    fn replace(&self, index: usize) -> impl Future<Output = std::io::Result<()>> + Send + 'static {
        let pod = self.pods[index].clone();
        async move { pod.replace().await }
    }

    fn crash(&self, index: usize) -> std::io::Result<()> {
        self.pods[index].crash()
    }

    fn base_url(&self, index: usize, port: Option<&str>) -> Option<String> {
        let ports = &self.pods[index].ports;
        let port = match port {
            Some(name) => *ports.named.get(name)?,
            None => ports.app,
        };
        Some(format!("http://127.0.0.1:{port}"))
    }

    fn placeholder(&self, index: usize, placeholder: &Placeholder) -> Option<String> {
        let pod = &self.pods[index];
        match placeholder {
            Placeholder::Port => Some(pod.ports.app.to_string()),
            Placeholder::NamedPort(name) => pod.ports.named.get(name).map(u16::to_string),
            Placeholder::Instance => Some((index + 1).to_string()),
            Placeholder::Name => Some(pod.name.clone()),
            _ => None,
        }
    }

    async fn shutdown(self) {
        for task in &self.tasks {
            task.abort();
        }
        for pod in &self.pods {
            pod.shutdown().await;
        }
    }
}

/// Waits until the fleet is whole and stays whole for [`STABLE`] (a crash or a kill takes
/// effect a moment after the signal); returns when that stretch began, or `None` when it did
/// not happen within `within`.
async fn wait_whole(fleet: &impl Backend, within: Duration) -> Option<Instant> {
    let deadline = Instant::now() + within;
    let mut whole_since: Option<Instant> = None;
    loop {
        let now = Instant::now();
        if backend::whole(fleet) {
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

fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Runs the file's `setup` commands, in order, in its folder; the first that fails (or runs
/// past [`crate::file::SETUP_TIMEOUT`]) stops the drill, with the end of what it wrote.
async fn setup(loaded: &Loaded, progress: &dyn Progress) -> Result<(), DrillError> {
    for (index, command) in loaded.file.setup.iter().enumerate() {
        let Some((program, args)) = command.split_first() else {
            continue;
        };
        progress.step(&format!("setup: {program}"));
        let output = crate::child::command(pod::resolve_program(program, &loaded.dir))
            .args(args)
            .current_dir(&loaded.dir)
            .stdin(std::process::Stdio::null())
            .process_group(0)
            .output();
        let failed =
            |why: String| DrillError::Config(format!("setup[{index}] (`{program}`): {why}"));
        let output = tokio::time::timeout(crate::file::SETUP_TIMEOUT, output)
            .await
            .map_err(|_| {
                failed(format!(
                    "still running after {} s",
                    crate::file::SETUP_TIMEOUT.as_secs()
                ))
            })?
            .map_err(|error| failed(format!("cannot start: {error}")))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let lines: Vec<&str> = stderr.lines().collect();
            return Err(failed(format!(
                "{}\n{}",
                output.status,
                lines[lines.len().saturating_sub(10)..].join("\n")
            )));
        }
    }
    Ok(())
}

/// Runs `faults` against the fleet `loaded` describes, with the probes of `pod`.
pub async fn run(
    loaded: &Loaded,
    pod_spec: &ResolvedPod,
    faults: &[Fault],
    options: &Options<'_>,
) -> Result<FileReport, DrillError> {
    let started = Instant::now();
    let file = &loaded.file;
    let progress = options.progress;

    // The dependencies, reachable before anything starts (named by host and port only: a URL
    // may hold a password).
    let mut targets = BTreeMap::new();
    for (name, dependency) in &file.dependencies {
        let (host, port) = dependency
            .target()
            .ok_or_else(|| DrillError::Config(format!("dependencies.{name}: no host and port")))?;
        let address = tokio::net::lookup_host((host.as_str(), port))
            .await
            .ok()
            .and_then(|mut found| found.next())
            .ok_or_else(|| {
                DrillError::Config(format!("dependencies.{name}: cannot resolve {host}:{port}"))
            })?;
        if tokio::time::timeout(
            Duration::from_secs(3),
            tokio::net::TcpStream::connect(address),
        )
        .await
        .map_or(true, |connected| connected.is_err())
        {
            return Err(DrillError::Config(format!(
                "dependencies.{name}: nothing answers at {host}:{port}; start it or change the drill file"
            )));
        }
        targets.insert(name.clone(), address);
    }
    setup(loaded, progress).await?;
    let agent_config = match (&file.agent, options.with_agent) {
        (Some(agent), true) => {
            let path = loaded.dir.join(&agent.config);
            let text = crate::file::read_text(&path)
                .map_err(|message| DrillError::Config(format!("{}: {message}", path.display())))?;
            let extension = path
                .extension()
                .and_then(|e| e.to_str())
                .unwrap_or("toml")
                .to_owned();
            let probity = options.probity.clone().ok_or_else(|| {
                DrillError::Config("--with-agent needs the probity binary".into())
            })?;
            Some((text, extension, probity))
        }
        _ => None,
    };

    let work = WorkDir {
        path: std::env::temp_dir().join(format!(
            "probity-drill-{}-{}-{}",
            file.service,
            std::process::id(),
            fastrand::u32(..)
        )),
        keep: true,
    };
    std::fs::create_dir_all(&work.path)?;
    let events = Events::default();

    // The pods, each with its ports and its proxies.
    let mut pods = Vec::new();
    let mut proxies = Vec::new();
    for index in 0..file.instances as usize {
        let name = format!("{}-{}", file.service, index + 1);
        let ports = Ports {
            app: free_port()?,
            named: file
                .app
                .ports
                .keys()
                .map(|port| Ok((port.clone(), free_port()?)))
                .collect::<std::io::Result<_>>()?,
            agent: agent_config.as_ref().map(|_| free_port()).transpose()?,
        };
        let mut own = BTreeMap::new();
        for (dependency, address) in &targets {
            own.insert(dependency.clone(), TcpFaultProxy::start(*address).await?);
        }
        let dir = work.path.join(&name);
        std::fs::create_dir_all(&dir)?;
        let fill = |text: &str| {
            placeholder::fill(text, |placeholder| {
                Some(match placeholder {
                    Placeholder::Port => ports.app.to_string(),
                    Placeholder::NamedPort(port) => ports.named.get(port)?.to_string(),
                    Placeholder::Instance => (index + 1).to_string(),
                    Placeholder::Name => name.clone(),
                    Placeholder::Dir => dir.display().to_string(),
                    Placeholder::AgentPort => ports.agent?.to_string(),
                    Placeholder::Seconds => return None,
                    Placeholder::Dependency { name: dep, part } => {
                        let proxy: &TcpFaultProxy = own.get(dep)?;
                        let address = proxy.address();
                        match part {
                            DependencyPart::Url => crate::proxy::redirect_url(
                                file.dependencies.get(dep)?.url.as_deref()?,
                                address,
                            )?,
                            DependencyPart::Address => address.to_string(),
                            DependencyPart::Host => address.ip().to_string(),
                            DependencyPart::Port => address.port().to_string(),
                        }
                    }
                })
            })
        };
        let env: Vec<(String, String)> = file
            .app
            .env
            .iter()
            .map(|(key, value)| (key.clone(), fill(value)))
            .collect();
        let env_map: BTreeMap<String, String> = env.iter().cloned().collect();
        let app = Program {
            command: file
                .app
                .command
                .iter()
                .map(|word| placeholder::expand_env(&fill(word), &env_map))
                .collect(),
            env: env.clone(),
            workdir: loaded.workdir(),
            log: work.path.join(format!("{name}.log")),
        };
        let agent = match &agent_config {
            Some((text, extension, probity)) => {
                let config = dir.join(format!("agent.{extension}"));
                std::fs::write(&config, fill(text))?;
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
                    workdir: loaded.workdir(),
                    log: work.path.join(format!("{name}-agent.log")),
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
    }

    // The balancer.
    let checks = balancer::Checks::from_file(file.balancer.check.as_ref());
    let readiness_port = match pod_spec.readiness.as_ref().map(|probe| &probe.action) {
        Some(ProbeAction::Http { target, .. } | ProbeAction::Tcp { target }) => {
            Some(target.clone())
        }
        _ => None,
    };
    let layout = balancer::Layout {
        frontend: SocketAddr::from(([127, 0, 0, 1], free_port()?)),
        socket: work.path.join("haproxy.sock"),
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
        mode: file.balancer.mode,
        checks,
        check_path: balancer::check_path(pod_spec),
        server_timeout: file.traffic.timeout.map_or(Duration::from_secs(5), |d| d.0),
        retry_on: file.balancer.retry_on.clone().unwrap_or_default(),
    };
    progress.step(&format!(
        "starting HAProxy ({} mode) and {} × {}",
        match file.balancer.mode {
            BalancerMode::Kubernetes => "kubernetes",
            BalancerMode::Haproxy => "haproxy",
        },
        file.instances,
        file.service
    ));
    let balancer =
        Arc::new(balancer::Balancer::start(&options.haproxy, &work.path, &layout).await?);
    let rotation = Arc::new(Mutex::new(vec![false; pods.len()]));
    let mut tasks = Vec::new();
    tasks.push(tokio::spawn(watch_rotation(
        balancer.clone(),
        pods.iter().map(|pod| pod.name.clone()).collect(),
        rotation.clone(),
        events.clone(),
    )));
    if file.balancer.mode == BalancerMode::Kubernetes {
        for pod in &pods {
            tasks.push(tokio::spawn(endpoint_controller(
                pod.clone(),
                balancer.clone(),
                file.balancer.propagation(),
            )));
        }
    }
    let fleet = LocalFleet {
        pods,
        proxies,
        balancer,
        rotation,
        events,
        tasks,
    };
    let result = drill(loaded, pod_spec, faults, options, &fleet, started).await;
    fleet.shutdown().await;
    let mut work = work;
    match &result {
        Ok(_) => work.keep = options.keep_work_dir,
        Err(_) => progress.step(&format!("logs kept in {}", work.path.display())),
    }
    if work.keep && result.is_ok() {
        progress.step(&format!("work folder kept: {}", work.path.display()));
    }
    result
}

/// The drill itself, on any [`Backend`]: start the fleet, send the traffic, run each fault,
/// measure and judge its row.
async fn drill(
    loaded: &Loaded,
    pod_spec: &ResolvedPod,
    faults: &[Fault],
    options: &Options<'_>,
    fleet: &impl Backend,
    started: Instant,
) -> Result<FileReport, DrillError> {
    let file = &loaded.file;
    let progress = options.progress;
    let events = fleet.events();
    // One at a time, so a shared database's migrations never race.
    for index in 0..fleet.instances() {
        fleet
            .start(index)
            .await
            .map_err(|error| backend::not_ready(fleet, index, error.to_string()))?;
        let deadline = Instant::now() + options.fleet_timeout;
        while !fleet.is_ready(index) {
            if Instant::now() > deadline {
                return Err(backend::not_ready(
                    fleet,
                    index,
                    format!(
                        "not Ready within {} s (startup and readiness probes)",
                        options.fleet_timeout.as_secs()
                    ),
                ));
            }
            tokio::time::sleep(ROTATION_POLL).await;
        }
    }
    if wait_whole(fleet, options.fleet_timeout).await.is_none() {
        return Err(DrillError::Unhealthy(format!(
            "the fleet is Ready but HAProxy has not taken every instance into rotation within {} s",
            options.fleet_timeout.as_secs()
        )));
    }
    let windows = judge::Windows::of(
        pod_spec,
        file.balancer.mode,
        file.balancer.propagation(),
        balancer::Checks::from_file(file.balancer.check.as_ref()),
    );

    // The traffic, through HAProxy, for the whole run (bounded).
    let bound: Duration = faults
        .iter()
        .map(|fault| fault.duration() + fault.recover() + WARMUP + Duration::from_secs(60))
        .sum::<Duration>()
        + Duration::from_secs(60);
    let mix: Vec<(LoadRequest, u32)> = file
        .traffic
        .requests
        .iter()
        .map(|request| {
            (
                LoadRequest {
                    method: reqwest::Method::from_bytes(request.method.as_bytes())
                        .unwrap_or(reqwest::Method::GET),
                    path: request.path.clone(),
                    body: request.body.clone(),
                    headers: request
                        .headers
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                },
                request.share,
            )
        })
        .collect();
    let spec = LoadSpec {
        concurrency: file.traffic.connections(),
        duration: bound,
        rate: file.traffic.rate,
        timeout: file.traffic.timeout.map_or(Duration::from_secs(5), |d| d.0),
        ..LoadSpec::default()
    };
    let load = load::start_mix(fleet.frontend(), &spec, &mix, Timeline::default());

    let mut rows = Vec::new();
    for (number, fault) in faults.iter().enumerate() {
        let name = fault.display_name();
        // A fault's name is the file's: shown, never obeyed by the terminal.
        let name = probity_contract::text::escape_control(&name).into_owned();
        progress.step(&format!(
            "fault {}/{}: {name} ({:.0} s)",
            number + 1,
            faults.len(),
            fault.duration().as_secs_f64()
        ));
        let whole_before = wait_whole(fleet, fault.recover()).await.is_some();
        tokio::time::sleep(WARMUP).await;
        let t0 = Instant::now();
        let mut in_rotation_while_down = None;
        run_fault(fault, loaded, fleet, &mut in_rotation_while_down).await?;
        let fault_end = Instant::now();
        let back_at = wait_whole(fleet, fault.recover()).await;
        let row_end = Instant::now();
        let mut row = measure(
            fault,
            &file.traffic,
            events.between(t0, row_end),
            load.timeline(),
            t0,
            fault_end,
            row_end,
            back_at,
        );
        row.in_rotation_while_down = in_rotation_while_down;
        judge::judge(&mut row, fault, pod_spec, file.balancer.mode, windows);
        if !whole_before {
            row.checks.insert(
                0,
                report::Check {
                    target: "the fleet whole before the fault".into(),
                    measured: "it was not: the previous fault's recovery did not finish".into(),
                    met: false,
                },
            );
        }
        progress.step(&format!(
            "  {name}: {}",
            if row.passed() {
                "every target met"
            } else {
                "a target missed"
            }
        ));
        rows.push(row);
    }
    load.stop();
    Ok(FileReport {
        service: file.service.clone(),
        instances: file.instances,
        balancer: file.balancer.mode,
        with_agent: options.with_agent,
        probes_from: pod_spec.source.clone(),
        faults: rows,
        elapsed_s: started.elapsed().as_secs_f64(),
    })
}

/// The instance a fault on one instance acts on.
const FIRST: usize = 0;

async fn run_fault(
    fault: &Fault,
    loaded: &Loaded,
    fleet: &impl Backend,
    in_rotation_while_down: &mut Option<bool>,
) -> Result<(), DrillError> {
    let duration = fault.duration();
    let dependency = fault.dependency.as_deref().unwrap_or_default();
    let events = fleet.events();
    match fault.kind {
        FaultKind::Busy => tokio::time::sleep(duration).await,
        FaultKind::Refuse | FaultKind::Blackhole | FaultKind::Slow => {
            let state = match fault.kind {
                FaultKind::Refuse => PathState::Refused,
                FaultKind::Blackhole => PathState::BlackHoled,
                _ => PathState::Slow(fault.latency.map_or(Duration::from_secs(2), |d| d.0)),
            };
            fleet.set_path(dependency, fault.scope, state).await?;
            tokio::time::sleep(duration).await;
            fleet
                .set_path(dependency, fault.scope, PathState::Open)
                .await?;
        }
        FaultKind::Flap => {
            let up = fault.up.map_or(Duration::from_secs(1), |d| d.0);
            let down = fault.down.map_or(Duration::from_secs(1), |d| d.0);
            let end = Instant::now() + duration;
            while Instant::now() < end {
                fleet
                    .set_path(dependency, fault.scope, PathState::Refused)
                    .await?;
                tokio::time::sleep_until(end.min(Instant::now() + down)).await;
                fleet
                    .set_path(dependency, fault.scope, PathState::Open)
                    .await?;
                tokio::time::sleep_until(end.min(Instant::now() + up)).await;
            }
        }
        FaultKind::Wedge => {
            let frozen = fleet
                .freeze(FIRST)
                .map_err(|error| DrillError::Unhealthy(error.to_string()))?;
            tokio::time::sleep(duration).await;
            // The same processes, whatever the kubelet did meanwhile.
            fleet.thaw(frozen);
        }
        FaultKind::Terminate => fleet.replace(FIRST).await?,
        FaultKind::Crash => fleet.crash(FIRST)?,
        FaultKind::StartDuringOutage => {
            let end = Instant::now() + duration;
            fleet
                .set_path(dependency, Scope::All, PathState::Refused)
                .await?;
            tokio::time::sleep(REPLACE_AFTER.min(duration)).await;
            let replaced_at = Instant::now();
            // The replacement runs to its end (preStop, the old container's stop, the new
            // one's start) however long it takes; the outage ends on time meanwhile.
            let replacement = tokio::spawn(fleet.replace(FIRST));
            tokio::time::sleep_until(end).await;
            *in_rotation_while_down = Some(
                events
                    .between(replaced_at, Instant::now())
                    .iter()
                    .any(|event| {
                        event.instance == FIRST && event.kind == EventKind::Rotation(true)
                    }),
            );
            fleet
                .set_path(dependency, Scope::All, PathState::Open)
                .await?;
            replacement.await.map_err(|error| {
                DrillError::Unhealthy(format!("the replacement failed: {error}"))
            })??;
        }
        FaultKind::Hook => {
            let name = fault.hook.as_deref().unwrap_or_default();
            let hook = loaded
                .file
                .hooks
                .get(name)
                .ok_or_else(|| DrillError::Config(format!("no hook `{name}`")))?;
            let base = fleet
                .base_url(FIRST, hook.port.as_deref())
                .ok_or_else(|| DrillError::Config(format!("hook `{name}`: no such port")))?;
            let seconds = duration.as_secs().max(1).to_string();
            let call = |call: &crate::file::HookCall| {
                let fill = |text: &str| {
                    placeholder::fill(text, |placeholder| match placeholder {
                        Placeholder::Seconds => Some(seconds.clone()),
                        other => fleet.placeholder(FIRST, other),
                    })
                };
                let client = pod::probe_client(Duration::from_secs(10));
                let method = reqwest::Method::from_bytes(call.method.as_bytes())
                    .unwrap_or(reqwest::Method::POST);
                let mut request = client.request(method, format!("{base}{}", fill(&call.path)));
                if let Some(body) = &call.body {
                    request = request.body(fill(body));
                }
                let path = call.path.clone();
                async move {
                    send_hook(request)
                        .await
                        .map_err(|last| DrillError::Hook(format!("hook `{name}`: {path} {last}")))
                }
            };
            call(&hook.start).await?;
            tokio::time::sleep(duration).await;
            if let Some(stop) = &hook.stop {
                call(stop).await?;
            }
        }
    }
    Ok(())
}

/// Sends one hook call; `Err` says how it failed. A hook need not be idempotent (leaking
/// connections twice leaks twice): a call is tried again only when it could not connect, so
/// the request was never sent; an answer, or a failure after sending, is final.
async fn send_hook(request: reqwest::RequestBuilder) -> Result<(), String> {
    let mut last = String::new();
    for attempt in 0..HOOK_CONNECT_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let Some(request) = request.try_clone() else {
            break;
        };
        match request.send().await {
            Ok(response) if response.status().is_success() => return Ok(()),
            Ok(response) => return Err(format!("answered {}", response.status().as_u16())),
            Err(error) if error.is_connect() => last = error.to_string(),
            Err(error) => return Err(error.to_string()),
        }
    }
    Err(last)
}

/// The row of one fault, from what happened between `t0` and `row_end`.
#[allow(clippy::too_many_arguments)]
fn measure(
    fault: &Fault,
    traffic: &crate::file::Traffic,
    events: Vec<events::Event>,
    timeline: &Timeline,
    t0: Instant,
    fault_end: Instant,
    row_end: Instant,
    back_at: Option<Instant>,
) -> Row {
    let since = |at: Instant| at.saturating_duration_since(t0).as_secs_f64();
    let first = |matches: &dyn Fn(&events::Event) -> bool| events.iter().find(|e| matches(e));
    let detected = first(&|e| matches!(e.kind, EventKind::ProbeFailed { .. }));
    let out = first(&|e| e.kind == EventKind::Rotation(false));
    // Back: when the fleet became whole for good, if anything left rotation on the way.
    let left = out.is_some()
        || events.iter().any(|e| {
            e.kind == EventKind::Ready(false) || matches!(e.kind, EventKind::Exited { .. })
        });
    let back_in = back_at.filter(|_| left).map(since);
    let count = |matches: &dyn Fn(&EventKind) -> bool| {
        events.iter().filter(|e| matches(&e.kind)).count() as u32
    };
    let mut transitions: BTreeMap<usize, u32> = BTreeMap::new();
    for event in &events {
        if matches!(event.kind, EventKind::Ready(_)) {
            *transitions.entry(event.instance).or_default() += 1;
        }
    }
    // A replaced instance's new container passing its startup probe.
    let replacement_started = events
        .iter()
        .position(|e| e.instance == 0 && e.kind == EventKind::Replaced)
        .and_then(|replaced| {
            events[replaced..]
                .iter()
                .find(|e| e.instance == 0 && e.kind == EventKind::Started)
        })
        .map(|e| since(e.at));
    let restarted_at = events
        .iter()
        .find(|e| {
            e.instance == 0
                && matches!(
                    e.kind,
                    EventKind::Killed { .. } | EventKind::Exited { .. } | EventKind::Restarted
                )
        })
        .map(|e| since(e.at));
    let mut failed = Failed::default();
    let samples = timeline.samples(t0, row_end);
    for sample in &samples {
        match sample.outcome {
            Outcome::Status(status) if traffic.is_success(status) => continue,
            Outcome::Status(_) => failed.service_errors += 1,
            Outcome::RefusedByBalancer => failed.refused_by_balancer += 1,
            Outcome::BalancerError(_) => failed.balancer_errors += 1,
            Outcome::ConnectionRefused => failed.refused += 1,
            Outcome::TimedOut => failed.timeouts += 1,
            Outcome::ConnectionError => failed.resets += 1,
        }
        failed.total += 1;
    }
    Row {
        fault: fault.display_name(),
        kind: fault.kind,
        dependency: fault.dependency.clone(),
        scope: fault.scope,
        duration_s: since(fault_end),
        detected_at_s: detected.map(|e| since(e.at)),
        detected_by: detected.map(|e| match &e.kind {
            EventKind::ProbeFailed { probe, reason } => format!(
                "{} of instance {}: {reason}",
                match probe {
                    probity_contract::probe::ProbeKind::Startup => "startup",
                    probity_contract::probe::ProbeKind::Liveness => "liveness",
                    probity_contract::probe::ProbeKind::Readiness => "readiness",
                },
                e.instance + 1
            ),
            _ => String::new(),
        }),
        out_of_rotation_at_s: out.map(|e| since(e.at)),
        back_in_rotation_at_s: back_in,
        back: back_at.is_some(),
        requests: samples.len() as u64,
        failed,
        restarts: count(&|k| *k == EventKind::Restarted),
        liveness_kills: count(&|k| {
            *k == EventKind::Killed {
                probe: probity_contract::probe::ProbeKind::Liveness,
            }
        }),
        startup_kills: count(&|k| {
            *k == EventKind::Killed {
                probe: probity_contract::probe::ProbeKind::Startup,
            }
        }),
        exits: count(&|k| matches!(k, EventKind::Exited { .. })),
        readiness_transitions: transitions.values().copied().max().unwrap_or(0),
        probe_timeouts: count(
            &|k| matches!(k, EventKind::ProbeFailed { reason, .. } if reason == TIMED_OUT),
        ),
        liveness_failures: count(&|k| {
            matches!(
                k,
                EventKind::ProbeFailed {
                    probe: probity_contract::probe::ProbeKind::Liveness,
                    ..
                }
            )
        }),
        liveness_timeouts: count(&|k| {
            matches!(
                k,
                EventKind::ProbeFailed {
                    probe: probity_contract::probe::ProbeKind::Liveness,
                    reason,
                } if reason == TIMED_OUT
            )
        }),
        restarted_at_s: restarted_at,
        replacement_started_at_s: replacement_started,
        in_rotation_while_down: None,
        checks: Vec::new(),
        diagnoses: Vec::new(),
    }
}

/// Reads rotation from HAProxy and records every change.
async fn watch_rotation(
    balancer: Arc<balancer::Balancer>,
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
async fn endpoint_controller(
    pod: Arc<Pod>,
    balancer: Arc<balancer::Balancer>,
    propagation: Duration,
) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that counts the calls it receives and answers each with `status`.
    async fn counting(status: u16) -> (SocketAddr, Arc<AtomicU64>) {
        let calls = Arc::new(AtomicU64::new(0));
        let counted = calls.clone();
        let app = axum::Router::new().route(
            "/chaos/leak-connections",
            axum::routing::post(move || {
                let counted = counted.clone();
                async move {
                    counted.fetch_add(1, Ordering::SeqCst);
                    axum::http::StatusCode::from_u16(status).unwrap()
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        (address, calls)
    }

    fn leak(address: SocketAddr) -> reqwest::RequestBuilder {
        pod::probe_client(Duration::from_secs(5))
            .post(format!("http://{address}/chaos/leak-connections"))
    }

    #[tokio::test]
    async fn a_hook_call_that_was_answered_is_never_sent_again() {
        // An app that leaked its connections and then answered 500 (or 503 under load) must
        // not be asked to leak them twice.
        for status in [500, 503] {
            let (address, calls) = counting(status).await;
            let error = send_hook(leak(address)).await.unwrap_err();
            assert_eq!(error, format!("answered {status}"));
            assert_eq!(calls.load(Ordering::SeqCst), 1);
        }
        let (address, calls) = counting(200).await;
        send_hook(leak(address)).await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_hook_call_that_could_not_connect_is_tried_again() {
        // Nothing listens yet: the request was never sent, so it is safe to send again; the
        // app starts listening between the first attempt and the second.
        let port = free_port().unwrap();
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        let calls = Arc::new(AtomicU64::new(0));
        let counted = calls.clone();
        let late = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let app = axum::Router::new().route(
                "/chaos/leak-connections",
                axum::routing::post(move || {
                    let counted = counted.clone();
                    async move {
                        counted.fetch_add(1, Ordering::SeqCst);
                        "leaked"
                    }
                }),
            );
            let listener = tokio::net::TcpListener::bind(address).await.unwrap();
            axum::serve(listener, app).await
        });
        send_hook(leak(address)).await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        late.abort();
        // Never listening: three attempts, then the connect error.
        let port = free_port().unwrap();
        let error = send_hook(leak(SocketAddr::from(([127, 0, 0, 1], port))))
            .await
            .unwrap_err();
        assert!(!error.is_empty());
    }
}
