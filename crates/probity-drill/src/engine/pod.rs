//! One instance as a pod: the app's process (the container), an optional `probity agent`
//! beside it, and a kubelet that probes it and restarts it.
//!
//! The kubelet's rules are probity-contract's ([`probity_contract::kube`], each citing the
//! kubelet's source): one worker per probe type on its own ticker of `periodSeconds`; a probe
//! slower than `timeoutSeconds` fails; liveness and readiness wait for the startup probe;
//! `failureThreshold` consecutive failures of startup or liveness kill the container, whose
//! worker then holds until a new one runs; readiness counts `successThreshold` and
//! `failureThreshold` and moves the container in and out of Ready; an HTTP probe passes on
//! 200..400. A container that exits, or is killed, is started again by the restart policy
//! `Always`, at once or after its CrashLoopBackOff delay. Killing a container runs preStop, then
//! the stop signal (SIGTERM), then SIGKILL when the grace period is over
//! (`kuberuntime_container.go` `killContainer`).

use super::events::{EventKind, Events};
use crate::file::pod::{PortTarget, PreStop, ProbeAction, ResolvedPod, ResolvedProbe};
use probity_contract::kube::backoff::{CrashLoopBackOff, RestartDecision};
use probity_contract::kube::prober::{
    ContainerView, Gate, ProbeResult, ProbeWorker, SetResult, http_status_passes,
};
use probity_contract::probe::ProbeKind;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};

/// A program to run: the words, the environment added, the folder.
#[derive(Debug, Clone)]
pub struct Program {
    /// The program and its arguments.
    pub command: Vec<String>,
    /// Environment variables added to the drill's.
    pub env: Vec<(String, String)>,
    /// The working directory.
    pub workdir: PathBuf,
    /// Where its output goes (appended).
    pub log: PathBuf,
}

/// A probe's failure reason when it did not answer within `timeoutSeconds`.
pub const TIMED_OUT: &str = "timed out";

/// A container's processes: the app's process, started as the leader of a process group of its
/// own, and whatever it starts (`mlflow server` runs its web server as a child process; a shell
/// wrapper runs the app as one). Dropping it kills the whole group, so no process of a container
/// outlives it — at the end of a drill, on an error, on Ctrl-C or in a panic's unwinding.
#[derive(Debug)]
struct Group {
    leader: rustix::process::Pid,
}

impl Group {
    fn of(child: &tokio::process::Child) -> Option<Group> {
        let pid = child.id()?;
        Some(Group {
            leader: rustix::process::Pid::from_raw(i32::try_from(pid).ok()?)?,
        })
    }

    /// Signals every process of the group.
    fn signal(&self, signal: rustix::process::Signal) -> std::io::Result<()> {
        rustix::process::kill_process_group(self.leader, signal)?;
        Ok(())
    }

    /// Signals the leader only: the container runtime's stop signal reaches the container's
    /// PID 1 and nothing else.
    fn signal_leader(&self, signal: rustix::process::Signal) -> std::io::Result<()> {
        rustix::process::kill_process(self.leader, signal)?;
        Ok(())
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        // SIGKILL ends stopped processes too; a group already gone answers ESRCH.
        let _ = rustix::process::kill_process_group(self.leader, rustix::process::Signal::KILL);
    }
}

/// A container frozen by [`Pod::freeze`].
#[derive(Debug)]
pub struct Frozen {
    leader: rustix::process::Pid,
}

impl Frozen {
    /// `SIGCONT` to every process that was frozen (gone ones are skipped).
    pub fn thaw(self) {
        let _ = rustix::process::kill_process_group(self.leader, rustix::process::Signal::CONT);
    }
}

impl Program {
    /// The program with `change` added: its variables set, its arguments appended.
    pub fn changed(&self, change: &ProgramChange) -> Program {
        let mut program = self.clone();
        program.command.extend(change.args.iter().cloned());
        for (key, value) in &change.env {
            program.env.retain(|(existing, _)| existing != key);
            program.env.push((key.clone(), value.clone()));
        }
        program
    }

    fn spawn(&self) -> std::io::Result<tokio::process::Child> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let program = resolve_program(&self.command[0], &self.workdir);
        crate::child::command(program)
            .args(&self.command[1..])
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .current_dir(&self.workdir)
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0)
            .spawn()
            .map_err(|error| {
                std::io::Error::new(
                    error.kind(),
                    format!("cannot start `{}`: {error}", self.command[0]),
                )
            })
    }
}

/// Variables and arguments added to a program (placeholders filled).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProgramChange {
    /// Variables set.
    pub env: Vec<(String, String)>,
    /// Arguments appended.
    pub args: Vec<String>,
}

/// A program with a `/` is relative to the working directory; one without is looked up on
/// `PATH` (as the shell does).
pub(crate) fn resolve_program(program: &str, workdir: &std::path::Path) -> PathBuf {
    if program.contains('/') {
        workdir.join(program)
    } else {
        PathBuf::from(program)
    }
}

/// Where `program` is found as [`resolve_program`] and the kernel would find it: a path
/// relative to `workdir`, or the first executable of that name on `path` (the app's own `PATH`
/// when its environment sets one). A program that is not there would only be found missing
/// when each instance fails to start, and the fleet waits out its whole timeout for them.
pub(crate) fn find_program(
    program: &str,
    workdir: &std::path::Path,
    path: Option<&std::ffi::OsStr>,
) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |candidate: &std::path::Path| {
        std::fs::metadata(candidate)
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let resolved = resolve_program(program, workdir);
        return if executable(&resolved) {
            Ok(resolved)
        } else if resolved.exists() {
            Err(format!("`{program}` is not an executable file"))
        } else {
            Err(format!(
                "`{program}` not found (from {})",
                workdir.display()
            ))
        };
    }
    std::env::split_paths(path.unwrap_or_default())
        .map(|dir| workdir.join(dir).join(program))
        .find(|candidate| executable(candidate))
        .ok_or_else(|| format!("`{program}` not found on PATH"))
}

/// The instance's own ports.
#[derive(Debug, Clone)]
pub struct Ports {
    /// For `app.port`.
    pub app: u16,
    /// For `app.ports`.
    pub named: BTreeMap<String, u16>,
    /// For the agent.
    pub agent: Option<u16>,
}

impl Ports {
    /// The port a probe or hook targets.
    pub fn of(&self, target: &PortTarget) -> u16 {
        match target {
            PortTarget::App => self.app,
            PortTarget::Named(name) => self.named.get(name).copied().unwrap_or(self.app),
            PortTarget::Agent => self.agent.unwrap_or(self.app),
        }
    }
}

#[derive(Debug)]
struct State {
    /// The container's id (a new one for each process).
    container: u32,
    /// A new pod (the drill's replacement) resets the probe workers.
    pod_generation: u32,
    running: bool,
    started_at: Duration,
    started: bool,
    readiness: ProbeResult,
    terminating: bool,
    /// A kill is under way: its exit is expected.
    stopping: bool,
    pid: Option<u32>,
    /// The running container's processes.
    group: Option<Group>,
    backoff: CrashLoopBackOff,
    newest_exited: Option<Duration>,
}

/// One instance.
#[derive(Debug)]
pub struct Pod {
    /// 0-based.
    pub index: usize,
    /// `SERVICE-N`, its name in HAProxy.
    pub name: String,
    /// Its ports.
    pub ports: Ports,
    app: Program,
    agent: Option<Program>,
    spec: ResolvedPod,
    events: Events,
    origin: Instant,
    state: Mutex<State>,
    ready: watch::Sender<bool>,
    exited: watch::Sender<u32>,
    agent_child: tokio::sync::Mutex<Option<(tokio::process::Child, Option<Group>)>>,
    /// The agent's process (0: none), for the CPU it uses.
    agent_pid: std::sync::atomic::AtomicU32,
    /// Added to the app's program while a fault says so.
    change: Mutex<Option<ProgramChange>>,
    /// Kills, restarts and replacements, one at a time.
    lifecycle: tokio::sync::Mutex<()>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl Pod {
    /// Describes the pod; nothing runs until [`Pod::start`].
    pub fn new(
        index: usize,
        name: String,
        ports: Ports,
        app: Program,
        agent: Option<Program>,
        spec: ResolvedPod,
        events: Events,
    ) -> Arc<Pod> {
        let (ready, _) = watch::channel(false);
        let (exited, _) = watch::channel(0);
        Arc::new(Pod {
            index,
            name,
            ports,
            app,
            agent,
            spec,
            events,
            origin: Instant::now(),
            state: Mutex::new(State {
                container: 0,
                pod_generation: 0,
                running: false,
                started_at: Duration::ZERO,
                started: false,
                readiness: ProbeResult::Failure,
                terminating: false,
                stopping: false,
                pid: None,
                group: None,
                backoff: CrashLoopBackOff::default(),
                newest_exited: None,
            }),
            ready,
            exited,
            agent_child: tokio::sync::Mutex::new(None),
            agent_pid: std::sync::atomic::AtomicU32::new(0),
            change: Mutex::new(None),
            lifecycle: tokio::sync::Mutex::new(()),
            tasks: Mutex::new(Vec::new()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    /// Whether the kubelet counts the container Ready (running, started, readiness passing,
    /// not terminating).
    pub fn is_ready(&self) -> bool {
        *self.ready.borrow()
    }

    /// Whether no kill of the container is under way: a container the kubelet is killing may
    /// still be Ready (a frozen process that thawed during its grace period answers again),
    /// but it is about to go.
    pub fn is_settled(&self) -> bool {
        !self.lock().stopping
    }

    /// Readiness changes, for the endpoint controller.
    pub fn watch_ready(&self) -> watch::Receiver<bool> {
        self.ready.subscribe()
    }

    /// The app's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.lock().pid
    }

    /// The process groups the pod runs: the app's and the agent's (each leads its own).
    pub fn process_groups(&self) -> Vec<u32> {
        let agent = self.agent_pid.load(std::sync::atomic::Ordering::Acquire);
        self.pid()
            .into_iter()
            .chain((agent != 0).then_some(agent))
            .collect()
    }

    fn note_agent(&self, child: &tokio::process::Child) {
        self.agent_pid.store(
            child.id().unwrap_or(0),
            std::sync::atomic::Ordering::Release,
        );
    }

    /// The app's log file.
    pub fn log_path(&self) -> &std::path::Path {
        &self.app.log
    }

    /// The pod's spec.
    pub fn spec(&self) -> &ResolvedPod {
        &self.spec
    }

    fn update_ready(&self) {
        let ready = {
            let state = self.lock();
            let readiness_passes =
                self.spec.readiness.is_none() || state.readiness == ProbeResult::Success;
            state.running && state.started && readiness_passes && !state.terminating
        };
        let changed = self.ready.send_if_modified(|current| {
            let changed = *current != ready;
            *current = ready;
            changed
        });
        if changed {
            self.events.record(self.index, EventKind::Ready(ready));
        }
    }

    /// Starts the agent (if any), the app and the probe workers.
    pub async fn start(self: &Arc<Self>) -> std::io::Result<()> {
        if let Some(agent) = &self.agent {
            let child = agent.spawn()?;
            self.note_agent(&child);
            let group = Group::of(&child);
            *self.agent_child.lock().await = Some((child, group));
            self.events.record(self.index, EventKind::Spawned);
        }
        self.start_container()?;
        let mut tasks = Vec::new();
        for kind in [
            ProbeKind::Startup,
            ProbeKind::Liveness,
            ProbeKind::Readiness,
        ] {
            if let Some(probe) = self.spec.probe(kind).cloned() {
                let pod = self.clone();
                tasks.push(tokio::spawn(
                    async move { pod.probe_worker(kind, probe).await },
                ));
            }
        }
        self.tasks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(tasks);
        Ok(())
    }

    /// From now on, the app's processes start with `change` added (`None`: as written).
    pub fn set_change(&self, change: Option<ProgramChange>) {
        *self.change.lock().unwrap_or_else(|e| e.into_inner()) = change;
    }

    fn start_container(self: &Arc<Self>) -> std::io::Result<()> {
        let change = self
            .change
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let mut child = match change {
            Some(change) => self.app.changed(&change).spawn()?,
            None => self.app.spawn()?,
        };
        let pid = child.id();
        let group = Group::of(&child);
        let container = {
            let mut state = self.lock();
            // Whatever the previous container left behind goes with it.
            state.group = group;
            state.container += 1;
            state.running = true;
            state.started_at = self.now();
            state.started = self.spec.startup.is_none();
            state.readiness = ProbeResult::Failure;
            state.pid = pid;
            state.container
        };
        self.events.record(self.index, EventKind::Spawned);
        if self.spec.startup.is_none() {
            self.events.record(self.index, EventKind::Started);
        }
        self.update_ready();
        let pod = self.clone();
        let watcher = tokio::spawn(async move {
            let status = child.wait().await;
            pod.on_exit(container, status).await;
        });
        self.tasks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(watcher);
        Ok(())
    }

    async fn on_exit(
        self: Arc<Self>,
        container: u32,
        status: std::io::Result<std::process::ExitStatus>,
    ) {
        let expected = {
            let mut state = self.lock();
            if state.container != container {
                return;
            }
            state.running = false;
            state.pid = None;
            // The container's main process is gone: so is every other process of it, as when
            // the PID 1 of a container's PID namespace exits.
            state.group = None;
            state.readiness = ProbeResult::Failure;
            state.stopping || state.terminating
        };
        self.exited.send_replace(container);
        self.update_ready();
        if expected {
            return;
        }
        let status = match status {
            Ok(status) => describe(status),
            Err(error) => error.to_string(),
        };
        self.events.record(self.index, EventKind::Exited { status });
        // restartPolicy: Always.
        let pod = self.clone();
        tokio::spawn(async move { pod.restart_after_backoff().await });
    }

    /// Waits out the CrashLoopBackOff delay, then starts a new container.
    async fn restart_after_backoff(self: Arc<Self>) {
        let _lifecycle = self.lifecycle.lock().await;
        let decision = {
            let mut state = self.lock();
            if state.running || state.terminating {
                return;
            }
            let now = self.now();
            let newest = state.newest_exited;
            let decision = state.backoff.decide(newest, now);
            state.newest_exited = Some(now);
            decision
        };
        if let RestartDecision::WaitUntil(at) = decision {
            tokio::time::sleep_until(self.origin + at).await;
        }
        if self.lock().terminating {
            return;
        }
        self.events.record(self.index, EventKind::Restarted);
        if let Err(error) = self.start_container() {
            self.events.record(
                self.index,
                EventKind::Exited {
                    status: error.to_string(),
                },
            );
        }
    }

    fn not_running(&self) -> std::io::Error {
        std::io::Error::other(format!("{} is not running", self.name))
    }

    /// Sends `signal` to every process of the container: the app's process and its children.
    pub fn signal(&self, signal: rustix::process::Signal) -> std::io::Result<()> {
        match &self.lock().group {
            Some(group) => group.signal(signal),
            None => Err(self.not_running()),
        }
    }

    /// Sends `signal` to the app's process alone, as the container runtime sends the stop
    /// signal to the container's PID 1.
    fn signal_leader(&self, signal: rustix::process::Signal) -> std::io::Result<()> {
        match &self.lock().group {
            Some(group) => group.signal_leader(signal),
            None => Err(self.not_running()),
        }
    }

    /// Freezes every process of the container (`SIGSTOP`), as a wedged process or a frozen
    /// cgroup; [`Frozen::thaw`] sends `SIGCONT` to the same processes, whatever the kubelet
    /// did meanwhile.
    pub fn freeze(&self) -> std::io::Result<Frozen> {
        let state = self.lock();
        let group = state.group.as_ref().ok_or_else(|| self.not_running())?;
        group.signal(rustix::process::Signal::STOP)?;
        Ok(Frozen {
            leader: group.leader,
        })
    }

    /// Kills the container as the kubelet does: preStop, SIGTERM, SIGKILL at the grace period.
    async fn kill_container(&self, grace: Duration) {
        let (container, running) = {
            let mut state = self.lock();
            state.stopping = true;
            (state.container, state.running)
        };
        if running {
            let deadline = Instant::now() + grace;
            let mut exited = self.exited.subscribe();
            let gone = |exited: &watch::Receiver<u32>| *exited.borrow() >= container;
            if let Some(pre_stop) = &self.spec.pre_stop {
                let _ = tokio::time::timeout_at(deadline, self.run_pre_stop(pre_stop)).await;
            }
            // After preStop, at least MINIMUM_GRACE_PERIOD (2 s) is left for the signal.
            let deadline = deadline
                .max(Instant::now() + probity_contract::kube::termination::MINIMUM_GRACE_PERIOD);
            if !gone(&exited) {
                let _ = self.signal_leader(rustix::process::Signal::TERM);
                let _ =
                    tokio::time::timeout_at(deadline, exited.wait_for(|c| *c >= container)).await;
            }
            if !gone(&exited) {
                let _ = self.signal(rustix::process::Signal::KILL);
                let _ = tokio::time::timeout(
                    Duration::from_secs(10),
                    exited.wait_for(|c| *c >= container),
                )
                .await;
            }
        }
        self.lock().stopping = false;
    }

    async fn run_pre_stop(&self, pre_stop: &PreStop) {
        match pre_stop {
            PreStop::Sleep(duration) => tokio::time::sleep(*duration).await,
            PreStop::Exec(command) => {
                let _ = run_exec(command, &self.app, Duration::from_secs(3600)).await;
            }
            PreStop::Http { target, path } => {
                let client = probe_client(Duration::from_secs(3600));
                let port = self.ports.of(target);
                let _ = client
                    .get(format!("http://127.0.0.1:{port}{path}"))
                    .send()
                    .await;
            }
        }
    }

    /// The prober's kill after a failed liveness or startup probe, then the restart.
    async fn kill_and_restart(self: Arc<Self>, probe: ProbeKind, container: u32) {
        {
            let _lifecycle = self.lifecycle.lock().await;
            if self.lock().container != container {
                return;
            }
            self.events.record(self.index, EventKind::Killed { probe });
            let grace = self
                .spec
                .probe(probe)
                .and_then(|p| p.termination_grace_period)
                .unwrap_or(self.spec.grace_period);
            self.kill_container(grace).await;
            let mut state = self.lock();
            state.running = false;
            state.pid = None;
            state.group = None;
        }
        self.update_ready();
        self.restart_after_backoff().await;
    }

    /// The app crashes: SIGKILL, no preStop; the restart policy starts it again.
    pub fn crash(&self) -> std::io::Result<()> {
        self.signal(rustix::process::Signal::KILL)
    }

    /// A rollout's replacement: the pod is deleted (out of the endpoints at once, preStop,
    /// SIGTERM, SIGKILL at the grace period) and a new pod takes its slot. Returns when the new
    /// pod's container is running.
    pub async fn replace(self: &Arc<Self>) -> std::io::Result<()> {
        let _lifecycle = self.lifecycle.lock().await;
        self.lock().terminating = true;
        self.update_ready();
        self.kill_container(self.spec.grace_period).await;
        {
            let mut state = self.lock();
            state.terminating = false;
            state.running = false;
            state.pid = None;
            state.group = None;
            state.pod_generation += 1;
            state.backoff = CrashLoopBackOff::default();
            state.newest_exited = None;
        }
        self.events.record(self.index, EventKind::Replaced);
        // A new pod has new sidecars: the agent starts again, its startup gate closed until the
        // new app shows a first sign of life. (The old agent, whose gate opened long ago, would
        // pass the new pod's startup probe while the new app is still booting.)
        if let Some(agent) = &self.agent {
            let mut slot = self.agent_child.lock().await;
            if let Some((mut old, group)) = slot.take() {
                drop(group);
                let _ = old.kill().await;
            }
            let child = agent.spawn()?;
            self.note_agent(&child);
            let group = Group::of(&child);
            *slot = Some((child, group));
            self.events.record(self.index, EventKind::Spawned);
        }
        self.start_container()
    }

    /// Stops everything the pod runs.
    pub async fn shutdown(&self) {
        for task in self
            .tasks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            task.abort();
        }
        let group = {
            let mut state = self.lock();
            state.terminating = true;
            state.group.take()
        };
        // SIGKILL to the whole group (stopped processes too).
        drop(group);
        if let Some((mut agent, group)) = self.agent_child.lock().await.take() {
            drop(group);
            let _ = agent.kill().await;
        }
    }

    async fn probe_worker(self: Arc<Self>, kind: ProbeKind, probe: ResolvedProbe) {
        let mut worker = ProbeWorker::new(kind);
        let mut pod_generation = 0;
        let mut ticker = tokio::time::interval(probe.timing.period);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let client = probe_client(probe.timing.timeout);
        loop {
            ticker.tick().await;
            let view = {
                let state = self.lock();
                if state.pod_generation != pod_generation {
                    // A new pod: a new worker.
                    pod_generation = state.pod_generation;
                    worker = ProbeWorker::new(kind);
                }
                ContainerView {
                    id: state.container,
                    running: state.running,
                    started_at: state.started_at,
                    started: state.started,
                }
            };
            let gated = worker.gate(&probe.timing, self.now(), Some(view));
            if let Some(set) = gated.set {
                self.apply(kind, set);
            }
            if gated.gate != Gate::Probe {
                continue;
            }
            let outcome = self.run_probe(&probe, &client).await;
            if let Err(reason) = &outcome {
                self.events.record(
                    self.index,
                    EventKind::ProbeFailed {
                        probe: kind,
                        reason: reason.clone(),
                    },
                );
            }
            if let Some(set) = worker.record(&probe.timing, outcome.is_ok()) {
                self.apply(kind, set);
            }
        }
    }

    fn apply(self: &Arc<Self>, kind: ProbeKind, set: SetResult) {
        {
            let mut state = self.lock();
            if state.container != set.container {
                return; // about a container that is gone
            }
            match (kind, set.result) {
                (ProbeKind::Readiness, result) => state.readiness = result,
                (ProbeKind::Startup, ProbeResult::Success) if !state.started => {
                    state.started = true;
                    drop(state);
                    self.events.record(self.index, EventKind::Started);
                }
                (ProbeKind::Startup | ProbeKind::Liveness, ProbeResult::Failure)
                    if state.running && !state.stopping && !state.terminating =>
                {
                    drop(state);
                    let pod = self.clone();
                    tokio::spawn(pod.kill_and_restart(kind, set.container));
                }
                _ => {}
            }
        }
        self.update_ready();
    }

    async fn run_probe(
        &self,
        probe: &ResolvedProbe,
        client: &reqwest::Client,
    ) -> Result<(), String> {
        let timeout = probe.timing.timeout;
        match &probe.action {
            ProbeAction::Http {
                target,
                path,
                headers,
            } => {
                let port = self.ports.of(target);
                let mut request = client.get(format!("http://127.0.0.1:{port}{path}"));
                for (name, value) in headers {
                    request = request.header(name.as_str(), value.as_str());
                }
                match request.send().await {
                    Ok(response) if http_status_passes(response.status().as_u16()) => Ok(()),
                    Ok(response) => Err(format!("HTTP {}", response.status().as_u16())),
                    Err(error) if error.is_timeout() => Err(TIMED_OUT.to_owned()),
                    Err(error) if error.is_connect() => Err("connection refused".to_owned()),
                    Err(error) => Err(error.to_string()),
                }
            }
            ProbeAction::Tcp { target } => {
                let port = self.ports.of(target);
                match tokio::time::timeout(
                    timeout,
                    tokio::net::TcpStream::connect(("127.0.0.1", port)),
                )
                .await
                {
                    Ok(Ok(_)) => Ok(()),
                    Ok(Err(error)) => Err(error.to_string()),
                    Err(_) => Err(TIMED_OUT.to_owned()),
                }
            }
            ProbeAction::Exec { command } => run_exec(command, &self.app, timeout).await,
        }
    }
}

/// Runs an exec probe or hook beside the app: its folder, its environment.
async fn run_exec(command: &[String], app: &Program, timeout: Duration) -> Result<(), String> {
    let Some(program) = command.first() else {
        return Err("an empty command".to_owned());
    };
    let mut child = match crate::child::command(resolve_program(program, &app.workdir))
        .args(&command[1..])
        .envs(app.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .current_dir(&app.workdir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
    {
        Ok(child) => child,
        Err(error) => return Err(error.to_string()),
    };
    // A command that timed out goes with everything it started.
    let _group = Group::of(&child);
    match tokio::time::timeout(timeout, child.wait()).await {
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(Ok(status)) => Err(describe(status)),
        Ok(Err(error)) => Err(error.to_string()),
        Err(_) => Err(TIMED_OUT.to_owned()),
    }
}

fn describe(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        _ => status.to_string(),
    }
}

/// An HTTP client for probes: no connection reuse (as the kubelet), a hard timeout.
pub(crate) fn probe_client(timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(timeout)
        .pool_max_idle_per_host(0)
        .no_proxy()
        .build()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
