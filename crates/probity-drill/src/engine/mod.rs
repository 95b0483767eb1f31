//! The engine that drills any service from its drill file.
//!
//! A fleet of [`pod::Pod`]s on loopback — each the app's process, an optional `probity agent`,
//! and a kubelet that probes and restarts it — each reaching each dependency through a
//! [`tcp::TcpFaultProxy`] of its own, behind a real HAProxy ([`balancer`]) fed by readiness
//! (`kubernetes` mode) or checking by itself (`haproxy` mode). The traffic mix runs through
//! HAProxy for the whole run; the faults run one after another, each for its duration and then
//! until the fleet is whole again; each becomes a [`report::Row`], judged by [`judge`].
//!
//! The drill runs on the fleet's operations only — start it, say whether each instance is
//! Ready and in rotation, break an instance's path to a dependency, freeze, replace or crash
//! it, and the record of what happened — which [`backend::Backend`] names and
//! [`fleet::Fleet`] implements on this machine; a cluster backend implements the same, and
//! drill files and the report stay as they are (`docs/drill.md` maps each operation onto
//! Kubernetes resources). The health-check cost's extra fleets ([`cost`]) are local.

pub mod backend;
pub mod balancer;
pub mod cost;
pub mod cpu;
pub mod delivery;
pub mod events;
pub mod figures;
pub mod fleet;
pub mod judge;
pub mod pod;
pub mod report;
pub mod targets;
pub mod tcp;
pub mod traffic;

use crate::DrillError;
use crate::file::placeholder::{self, Placeholder};
use crate::file::pod::ResolvedPod;
use crate::file::{BalancerMode, Fault, FaultKind, Loaded, Scope};
use crate::load::{LoadSpec, Outcome, Timeline};
use backend::Backend;
use events::EventKind;
use fleet::{Fleet, Variant};
use pod::TIMED_OUT;
use report::{Failed, FileReport, Row};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tcp::PathState;
use tokio::time::Instant;

/// How the fleet settles before each fault.
const WARMUP: Duration = Duration::from_secs(2);
/// How often a hook call that cannot connect is tried.
const HOOK_CONNECT_ATTEMPTS: u32 = 3;
/// When a `start-during-outage` fault replaces its instance.
const REPLACE_AFTER: Duration = Duration::from_secs(2);

/// Where the drill reports progress: one line per step, for a terminal.
pub trait Progress: Send + Sync {
    /// One line of progress.
    fn step(&self, message: &str);
}

impl<F: Fn(&str) + Send + Sync> Progress for F {
    fn step(&self, message: &str) {
        self(message)
    }
}

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
    balancer::check_binary(&options.haproxy).await?;
    setup(loaded, progress).await?;
    // After the setup, which may be what builds it.
    if let Some(program) = file.app.command.first()
        && !program.contains('{')
    {
        let path = match file.app.env.get("PATH") {
            Some(path) => Some(std::ffi::OsString::from(path)),
            None => std::env::var_os("PATH"),
        };
        pod::find_program(program, &loaded.workdir(), path.as_deref())
            .map_err(|message| DrillError::Config(format!("app.command: {message}")))?;
    }
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

    let run_name = format!("drill-{}-{:08x}", std::process::id(), fastrand::u32(..));
    let work = WorkDir {
        path: std::env::temp_dir().join(format!("probity-{run_name}-{}", file.service)),
        keep: true,
    };
    std::fs::create_dir_all(&work.path)?;
    progress.step(&format!("work folder {}", work.path.display()));
    let shared = fleet::Shared {
        loaded,
        pod: pod_spec,
        dependencies: &targets,
        agent: agent_config.as_ref(),
        haproxy: &options.haproxy,
        run: &run_name,
        progress,
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
    let result = match Fleet::build(&shared, &Variant::Checked, &work.path, None).await {
        Ok(fleet) => {
            let broker = delivery_broker(loaded, &fleet);
            let result = drill(
                &shared,
                faults,
                options,
                &fleet,
                broker.as_ref(),
                &work.path,
                started,
            )
            .await;
            fleet.shutdown().await;
            if let Some(broker) = broker {
                broker.delete().await;
            }
            result
        }
        Err(error) => Err(error),
    };
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

/// The broker and queues `delivery` counts in, when the file has it.
fn delivery_broker(loaded: &Loaded, fleet: &impl Backend) -> Option<delivery::Broker> {
    let spec = loaded.file.delivery.as_ref()?;
    let url = loaded
        .file
        .dependencies
        .get(&spec.dependency)?
        .url
        .clone()?;
    let queues = (0..fleet.instances())
        .map(|index| fleet.fill(index, &spec.queue))
        .collect();
    Some(delivery::Broker::new(url, queues))
}

/// How long a fault's row waits for marked answers to stop before it ends.
const UNMARKED_FOR: Duration = Duration::from_secs(3);

async fn drill(
    shared: &fleet::Shared<'_>,
    faults: &[Fault],
    options: &Options<'_>,
    fleet: &impl Backend,
    broker: Option<&delivery::Broker>,
    work: &Path,
    started: Instant,
) -> Result<FileReport, DrillError> {
    let loaded = shared.loaded;
    let pod_spec = shared.pod;
    let file = &loaded.file;
    let progress = options.progress;
    let events = fleet.events();
    fleet.start(options.fleet_timeout).await?;
    let windows = judge::Windows::of(
        pod_spec,
        file.balancer.mode,
        file.balancer.propagation(),
        balancer::Checks::from_file(file.balancer.check.as_ref()),
    );

    // The traffic, through HAProxy, for the whole run (bounded).
    let bound: Duration = faults
        .iter()
        .map(|fault| {
            fault.duration() * 2
                + fault.recover()
                + WARMUP
                + options.fleet_timeout
                + Duration::from_secs(60)
        })
        .sum::<Duration>()
        + Duration::from_secs(60);
    let spec = LoadSpec {
        concurrency: file.traffic.connections(),
        duration: bound,
        rate: file.traffic.rate,
        timeout: file.traffic.timeout.map_or(Duration::from_secs(5), |d| d.0),
        ..LoadSpec::default()
    };
    let load = traffic::Running::start(fleet.frontend(), spec, traffic::mix(&file.traffic), bound);
    let mut last_count = Instant::now();

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
        let whole_before = backend::wait_whole(fleet, fault.recover()).await.is_some();
        let bench = match &fault.cost {
            Some(cost) => Some(
                cost::Bench::start(
                    shared,
                    fleet,
                    cost,
                    &work.join(format!("cost-{}", number + 1)),
                    &load,
                    options.fleet_timeout,
                    fault.duration() + WARMUP + Duration::from_secs(60),
                )
                .await?,
            ),
            None => None,
        };
        tokio::time::sleep(WARMUP).await;
        let t0 = Instant::now();
        let direct = (fault.kind == FaultKind::Busy && fault.scope == Scope::One)
            .then(|| load.also_to(fleet.instance_address(FIRST), fault.duration()));
        if let Some(change) = &fault.app {
            fleet.set_change(FIRST, Some(change));
        }
        let mut in_rotation_while_down = None;
        let outcome = run_fault(fault, loaded, fleet, &mut in_rotation_while_down).await;
        fleet.set_change(FIRST, None);
        let fault_end = Instant::now();
        let check_cost = match bench {
            Some(bench) => Some(
                bench
                    .finish(load.timeline(), t0, fault_end, |sample| {
                        success(&file.traffic, sample)
                    })
                    .await,
            ),
            None => None,
        };
        outcome?;
        let direct = match direct {
            Some(handle) => {
                let timeline = handle.finish().await;
                let samples = timeline.samples(t0, Instant::now());
                Some(report::Direct {
                    requests: samples.len() as u64,
                    failed: samples
                        .iter()
                        .filter(|s| !success(&file.traffic, s))
                        .count() as u64,
                })
            }
            None => None,
        };
        let back_at = backend::wait_whole(fleet, fault.recover()).await;
        if fault.targets.unmarked_within.is_some() {
            // Until no marked answer has come for a while (or the recovery wait is over).
            let deadline = fault_end + fault.recover();
            loop {
                let last_marked = load
                    .timeline()
                    .samples(fault_end, Instant::now())
                    .iter()
                    .filter(|sample| sample.marked)
                    .map(|sample| sample.sent + sample.latency)
                    .max()
                    .unwrap_or(fault_end);
                if last_marked.elapsed() >= UNMARKED_FOR || Instant::now() >= deadline {
                    break;
                }
                tokio::time::sleep(fleet::ROTATION_POLL).await;
            }
        }
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
        row.figures = figures::of(
            &events.between(t0, row_end),
            &file.traffic,
            load.timeline(),
            t0,
            fault_end,
            row_end,
        );
        row.figures.direct = direct;
        row.figures.check_cost = check_cost;
        if fault.targets.measures_delivery()
            && let (Some(broker), Some(spec)) = (broker, &file.delivery)
        {
            progress.step("  counting what reached the broker (traffic paused)");
            load.pause().await;
            let now = Instant::now();
            let writes = file.traffic.class_of(&spec.writes).unwrap_or_default();
            let samples = load.timeline().samples(last_count, now);
            let of_writes = samples.iter().filter(|s| usize::from(s.class) == writes);
            let (mut acknowledged, mut unknown) = (0, 0);
            for sample in of_writes {
                match sample.outcome {
                    Outcome::Status(status) if file.traffic.is_success_of(writes, status) => {
                        acknowledged += 1;
                    }
                    Outcome::TimedOut | Outcome::ConnectionError | Outcome::BalancerError(_) => {
                        unknown += 1;
                    }
                    _ => {}
                }
            }
            last_count = now;
            let counted = broker.count(acknowledged, unknown, spec.wait()).await;
            load.resume();
            row.figures.delivery = Some(counted.map_err(DrillError::Unhealthy)?);
        }
        judge::judge(&mut row, fault, pod_spec, file.balancer.mode, windows);
        targets::judge(&mut row, fault, &file.traffic);
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

/// Whether a sample of the traffic succeeded, by its request's own success statuses.
fn success(traffic: &crate::file::Traffic, sample: &crate::load::Sample) -> bool {
    match sample.outcome {
        Outcome::Status(status) => traffic.is_success_of(usize::from(sample.class), status),
        _ => false,
    }
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
        .position(|e| e.instance == FIRST && e.kind == EventKind::Replaced)
        .and_then(|replaced| {
            events[replaced..]
                .iter()
                .find(|e| e.instance == FIRST && e.kind == EventKind::Started)
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
        figures: report::Figures::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    fn free_port() -> std::io::Result<u16> {
        Ok(std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port())
    }

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
