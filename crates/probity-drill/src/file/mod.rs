//! The drill file: one instance of any service, described as a pod describes it, and the
//! faults to put it through.
//!
//! YAML, read with every key known: a key the schema does not have is an error naming the key
//! and its line, and so is a placeholder that names nothing (`{dep.dbb.url}`). The format is
//! documented, key by key, in `docs/drill.md`, which points at whole ones.
//!
//! ```yaml
//! service: orders
//! app:
//!   command: [node, server.js]
//!   env: { PORT: "{port}", DATABASE_URL: "{dep.db.url}" }
//!   port: 3000
//! pod:
//!   containers:
//!     - name: orders
//!       readinessProbe: { httpGet: { path: /ready, port: 3000 }, periodSeconds: 2 }
//! dependencies:
//!   db: { url: "postgres://postgres@127.0.0.1:5432/test" }
//! traffic:
//!   requests: [{ method: GET, path: /orders }]
//! ```
//!
//! [`DrillFile::parse`] checks the whole file; [`Loaded::pod`] resolves the probes (from the
//! pasted pod or from `--manifest FILE --container NAME`) with probity-contract's Kubernetes
//! model, as `probity lint` and `probity simulate` read them.

pub mod init;
pub mod placeholder;
pub mod pod;

use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use placeholder::Placeholder;
pub use pod::{PodSpec, ResolvedPod};

/// The largest drill file read (the bound every probity tool puts on a file it is given): far
/// more than any real one.
pub const MAX_FILE_BYTES: u64 = probity_contract::file::MAX_TEXT_BYTES;
/// The most instances a fleet may have on one machine.
pub const MAX_INSTANCES: u32 = 16;
/// The most faults in one file.
pub const MAX_FAULTS: usize = 64;
/// The most setup commands in one file.
pub const MAX_SETUP: usize = 16;
/// The longest a setup command may run.
pub const SETUP_TIMEOUT: Duration = Duration::from_secs(300);

/// A duration as a drill file writes it: `500ms`, `2s`, `1m30s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Dur(pub Duration);

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Text(String),
            Seconds(u64),
        }
        match Written::deserialize(deserializer)? {
            Written::Text(text) => probity_contract::duration::parse(&text)
                .map(Dur)
                .map_err(serde::de::Error::custom),
            Written::Seconds(0) => Ok(Dur(Duration::ZERO)),
            Written::Seconds(seconds) => Err(serde::de::Error::custom(format!(
                "`{seconds}` needs a unit: write `{seconds}s` (or ms, m)"
            ))),
        }
    }
}

/// A whole drill file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DrillFile {
    /// The service's name, in the report and in the balancer's server names.
    pub service: String,
    /// How many instances the fleet has (default 3).
    #[serde(default = "default_instances")]
    pub instances: u32,
    /// Commands run once, in order, before the fleet starts — what the service needs and
    /// does not make itself, such as its database — in the drill file's folder, each as
    /// written (no shell, no placeholders) and each to exit 0 within [`SETUP_TIMEOUT`].
    #[serde(default)]
    pub setup: Vec<Vec<String>>,
    /// The app: its command, working directory, environment and ports.
    pub app: App,
    /// The pod as Kubernetes has it: the app's container (probes, lifecycle, ports) and the
    /// grace period. Either this or `manifest` (or `--manifest` on the command line).
    #[serde(default)]
    pub pod: Option<PodSpec>,
    /// The probes from a real manifest instead of `pod`.
    #[serde(default)]
    pub manifest: Option<ManifestRef>,
    /// `probity agent` as a sidecar, with the probes pointed at it.
    #[serde(default)]
    pub agent: Option<Agent>,
    /// The dependencies, by name, at their real addresses.
    #[serde(default)]
    pub dependencies: BTreeMap<String, Dependency>,
    /// The load the fleet serves through every fault.
    pub traffic: Traffic,
    /// How the balancer decides rotation.
    #[serde(default)]
    pub balancer: Balancer,
    /// App-assisted faults: HTTP calls that make the app break itself.
    #[serde(default)]
    pub hooks: BTreeMap<String, Hook>,
    /// The faults, in order; absent, every fault that applies to the file (see
    /// [`DrillFile::faults`]).
    #[serde(default)]
    pub faults: Option<Vec<Fault>>,
    /// How to count what reached a message broker, for the faults with delivery targets
    /// (`lost_writes`, `duplicated_writes`).
    #[serde(default)]
    pub delivery: Option<Delivery>,
}

/// Every acknowledged write reaches the broker, once: the writes are the successful answers of
/// one traffic request; what reached the broker is counted in the broker itself.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Delivery {
    /// The broker: a dependency with an `amqp://` URL.
    pub dependency: String,
    /// The queue each instance publishes to; placeholders filled per instance (`{name}`,
    /// `{instance}`, `{run}`). The drill empties it at each count and deletes it after the run.
    pub queue: String,
    /// The traffic request (by name) whose successful answers are the acknowledged writes.
    pub writes: String,
    /// Longest wait, with the traffic paused, for the writes to arrive (default 60s).
    #[serde(default)]
    pub wait: Option<Dur>,
}

impl Delivery {
    /// The longest wait for the writes to arrive.
    pub fn wait(&self) -> Duration {
        self.wait.map_or(Duration::from_secs(60), |d| d.0)
    }
}

fn default_instances() -> u32 {
    3
}

/// The app inside the container.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct App {
    /// The program and its arguments (no shell; write `[sh, -c, "…"]` for one).
    pub command: Vec<String>,
    /// The working directory, relative to the drill file's folder (default: that folder).
    #[serde(default)]
    pub workdir: Option<PathBuf>,
    /// Extra environment variables (the drill's own environment is inherited).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The container port that serves traffic, as the probes and the manifest number it. Each
    /// instance listens on a port of its own instead: `{port}`.
    pub port: u16,
    /// Other container ports by name (`admin: 8081`); each instance gets its own: `{port.admin}`.
    #[serde(default)]
    pub ports: BTreeMap<String, u16>,
}

/// Where to read the pod from instead of pasting it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestRef {
    /// The manifest (a Deployment, StatefulSet, DaemonSet, Pod… in a multi-document YAML),
    /// relative to the drill file's folder.
    pub file: PathBuf,
    /// The container's name.
    pub container: String,
}

/// `probity agent` beside the app.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Agent {
    /// The agent's configuration file (TOML or YAML), relative to the drill file's folder;
    /// placeholders in it are filled per instance like the app's.
    pub config: PathBuf,
    /// The container port the agent listens on, as the probes below number it: `{agent.port}`.
    pub port: u16,
    /// The probes with the agent in front: a container spec fragment (`startupProbe`,
    /// `livenessProbe`, `readinessProbe`, `lifecycle`) that replaces the app container's when
    /// the drill runs `--with-agent`.
    pub container: pod::ContainerSpec,
}

/// A dependency at its real address. The app reaches it through a fault proxy of its own per
/// instance, at the address the placeholders give.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dependency {
    /// A URL (`postgres://user@127.0.0.1:5432/db`): `{dep.NAME.url}` is it with the proxy's
    /// host and port.
    #[serde(default)]
    pub url: Option<String>,
    /// `host:port`, when the app takes an address rather than a URL.
    #[serde(default)]
    pub address: Option<String>,
}

impl Dependency {
    /// The real `host:port` the dependency listens on.
    pub fn target(&self) -> Option<(String, u16)> {
        if let Some(url) = &self.url {
            return crate::address::url_target(url);
        }
        let address = self.address.as_deref()?;
        let (host, port) = address.rsplit_once(':')?;
        Some((host.trim_matches(['[', ']']).to_owned(), port.parse().ok()?))
    }
}

/// The load.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Traffic {
    /// Connections, each with one request in flight, as fast as the fleet answers (default 32).
    #[serde(default)]
    pub concurrency: Option<u32>,
    /// Requests per second in total instead (spread over `concurrency` connections).
    #[serde(default)]
    pub rate: Option<u32>,
    /// Longest a request may take before it counts as timed out (default 5s).
    #[serde(default)]
    pub timeout: Option<Dur>,
    /// The statuses that count as success (default `["2xx"]`): numbers, `"4xx"` classes or
    /// `"200-299"` ranges.
    #[serde(default)]
    pub success: Option<Vec<StatusMatch>>,
    /// The mix of requests.
    pub requests: Vec<Request>,
}

impl Traffic {
    /// The connections (default 32).
    pub fn connections(&self) -> u32 {
        self.concurrency.unwrap_or(32)
    }

    /// Whether `status` counts as success.
    pub fn is_success(&self, status: u16) -> bool {
        match &self.success {
            None => (200..300).contains(&status),
            Some(matches) => matches.iter().any(|m| m.matches(status)),
        }
    }

    /// Whether `status` counts as success for the request of class `class` (its own
    /// `success`, or the traffic's).
    pub fn is_success_of(&self, class: usize, status: u16) -> bool {
        match self.requests.get(class).and_then(|r| r.success.as_ref()) {
            Some(matches) => matches.iter().any(|m| m.matches(status)),
            None => self.is_success(status),
        }
    }

    /// The index of the request named `name`.
    pub fn class_of(&self, name: &str) -> Option<usize> {
        self.requests.iter().position(|r| r.display_name() == name)
    }
}

/// A status, a class or a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusMatch {
    /// Lowest status included.
    pub from: u16,
    /// Highest status included.
    pub to: u16,
}

impl StatusMatch {
    /// Whether `status` is in it.
    pub fn matches(&self, status: u16) -> bool {
        (self.from..=self.to).contains(&status)
    }

    fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let bad = || format!("`{text}` is not a status, a class (`2xx`) or a range (`200-299`)");
        let status = |part: &str| -> Result<u16, String> {
            part.trim()
                .parse::<u16>()
                .ok()
                .filter(|s| (100..=599).contains(s))
                .ok_or_else(bad)
        };
        if let Some(class) = text.strip_suffix("xx").or_else(|| text.strip_suffix("XX")) {
            let digit: u16 = class
                .parse()
                .ok()
                .filter(|d| (1..=5).contains(d))
                .ok_or_else(bad)?;
            return Ok(StatusMatch {
                from: digit * 100,
                to: digit * 100 + 99,
            });
        }
        if let Some((from, to)) = text.split_once('-') {
            let (from, to) = (status(from)?, status(to)?);
            if from > to {
                return Err(bad());
            }
            return Ok(StatusMatch { from, to });
        }
        let one = status(text)?;
        Ok(StatusMatch { from: one, to: one })
    }
}

impl<'de> Deserialize<'de> for StatusMatch {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Number(u16),
            Text(String),
        }
        let text = match Written::deserialize(deserializer)? {
            Written::Number(number) => number.to_string(),
            Written::Text(text) => text,
        };
        StatusMatch::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// One request of the mix.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// `GET` (default), `POST`, ….
    #[serde(default = "default_method")]
    pub method: String,
    /// The path and query.
    pub path: String,
    /// Request headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The body, sent as written.
    #[serde(default)]
    pub body: Option<String>,
    /// Its weight in the mix (default 1).
    #[serde(default = "default_share")]
    pub share: u32,
    /// Its name in the report and in targets (default `METHOD path`).
    #[serde(default)]
    pub name: Option<String>,
    /// The statuses that count as success for this request (default: `traffic.success`).
    #[serde(default)]
    pub success: Option<Vec<StatusMatch>>,
    /// A header that marks an answer (a staleness mark: `{ header: x-degraded, value: db }`);
    /// the report counts the marked answers, and `unmarked_within` judges them.
    #[serde(default)]
    pub marker: Option<MarkerSpec>,
    /// Keep this header of each successful answer (a `Location`): other requests' paths use
    /// the values as `{captured.NAME}`, so traffic can read what it wrote.
    #[serde(default)]
    pub capture: Option<String>,
}

impl Request {
    /// Its name: as written, or `METHOD path`.
    pub fn display_name(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("{} {}", self.method, self.path))
    }
}

/// A header that marks an answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarkerSpec {
    /// The header's name.
    pub header: String,
    /// Its value (default: any value).
    #[serde(default)]
    pub value: Option<String>,
}

fn default_method() -> String {
    "GET".to_owned()
}

fn default_share() -> u32 {
    1
}

/// How the balancer takes instances in and out of rotation.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Balancer {
    /// `kubernetes` (default): in rotation while the readiness probe passes, after
    /// `propagation`; `haproxy`: HAProxy's own checks on the readiness probe's path.
    #[serde(default)]
    pub mode: BalancerMode,
    /// How long a readiness change takes to reach the balancer in `kubernetes` mode (default
    /// 1s: EndpointSlice update and kube-proxy sync).
    #[serde(default)]
    pub propagation: Option<Dur>,
    /// HAProxy's check timing in `haproxy` mode.
    #[serde(default)]
    pub check: Option<HaproxyCheck>,
    /// What HAProxy retries on another server (its `retry-on` keywords; default
    /// `[conn-failure]`: a request that could not connect, as an ingress retries). `503` adds a
    /// service's 503, for a service whose 503 means "not processed".
    #[serde(default)]
    pub retry_on: Option<Vec<String>>,
}

impl Balancer {
    /// The endpoint-propagation delay.
    pub fn propagation(&self) -> Duration {
        self.propagation.map_or(Duration::from_secs(1), |d| d.0)
    }
}

/// The balancer modes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BalancerMode {
    /// Rotation follows the readiness probe, as EndpointSlices and kube-proxy do.
    #[default]
    Kubernetes,
    /// HAProxy checks the readiness path itself.
    Haproxy,
}

/// HAProxy's check settings.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HaproxyCheck {
    /// Interval between checks (default 1s).
    #[serde(default)]
    pub inter: Option<Dur>,
    /// Checks passed to enter rotation (default 2).
    #[serde(default)]
    pub rise: Option<u32>,
    /// Checks failed to leave it (default 3).
    #[serde(default)]
    pub fall: Option<u32>,
    /// Longest a check may take (default 1s).
    #[serde(default)]
    pub timeout: Option<Dur>,
}

/// An app-assisted fault: HTTP calls to the instance.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hook {
    /// Which port: a name from `app.ports`, or absent for the traffic port.
    #[serde(default)]
    pub port: Option<String>,
    /// The call that starts the fault.
    pub start: HookCall,
    /// The call that ends it (absent: the fault ends by itself).
    #[serde(default)]
    pub stop: Option<HookCall>,
}

/// One HTTP call of a hook; any 2xx answer is success.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookCall {
    /// `POST` by default.
    #[serde(default = "default_hook_method")]
    pub method: String,
    /// The path and query; placeholders allowed.
    pub path: String,
    /// The body.
    #[serde(default)]
    pub body: Option<String>,
}

fn default_hook_method() -> String {
    "POST".to_owned()
}

/// What a fault does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// No fault: the load alone.
    Busy,
    /// The dependency refuses: its listener closed, open connections reset.
    Refuse,
    /// The dependency accepts connections and answers nothing.
    Blackhole,
    /// Every byte to and from the dependency waits `latency`.
    Slow,
    /// The dependency refuses for `down`, then answers for `up`, again and again.
    Flap,
    /// The instance frozen with SIGSTOP for the duration, then SIGCONT.
    Wedge,
    /// SIGTERM (after preStop), SIGKILL at the grace period, and a replacement: a rollout.
    Terminate,
    /// SIGKILL: the process crashes; the kubelet restarts it.
    Crash,
    /// The dependency refuses, and one instance is replaced during the outage.
    StartDuringOutage,
    /// An app-assisted fault (`hook`).
    Hook,
}

impl FaultKind {
    /// The name as written.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Busy => "busy",
            FaultKind::Refuse => "refuse",
            FaultKind::Blackhole => "blackhole",
            FaultKind::Slow => "slow",
            FaultKind::Flap => "flap",
            FaultKind::Wedge => "wedge",
            FaultKind::Terminate => "terminate",
            FaultKind::Crash => "crash",
            FaultKind::StartDuringOutage => "start-during-outage",
            FaultKind::Hook => "hook",
        }
    }

    /// Whether the fault acts on a dependency's path.
    pub fn needs_dependency(self) -> bool {
        matches!(
            self,
            FaultKind::Refuse
                | FaultKind::Blackhole
                | FaultKind::Slow
                | FaultKind::Flap
                | FaultKind::StartDuringOutage
        )
    }

    /// Whether the fault acts on one instance only, whatever `scope` says.
    pub fn on_one_instance(self) -> bool {
        matches!(
            self,
            FaultKind::Wedge
                | FaultKind::Terminate
                | FaultKind::Crash
                | FaultKind::Hook
                | FaultKind::StartDuringOutage
        )
    }
}

/// Which instances a dependency fault reaches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Every instance: the dependency itself is down (a shared fault).
    #[default]
    All,
    /// The first instance's own path only (a local fault).
    One,
}

/// One fault on the timeline.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// What it does.
    pub kind: FaultKind,
    /// Its name in the report (default: kind, dependency, scope).
    #[serde(default)]
    pub name: Option<String>,
    /// The dependency, for refuse, blackhole, slow, flap and start-during-outage.
    #[serde(default)]
    pub dependency: Option<String>,
    /// All instances or one (dependency faults; default all).
    #[serde(default)]
    pub scope: Scope,
    /// How long the fault lasts (default 20s; 30s for busy).
    #[serde(default)]
    pub duration: Option<Dur>,
    /// `slow`: the latency added (default 2s).
    #[serde(default)]
    pub latency: Option<Dur>,
    /// `flap`: how long the dependency answers in each cycle (default 1s).
    #[serde(default)]
    pub up: Option<Dur>,
    /// `flap`: how long it refuses in each cycle (default 1s).
    #[serde(default)]
    pub down: Option<Dur>,
    /// `hook`: the hook's name.
    #[serde(default)]
    pub hook: Option<String>,
    /// Longest wait after the fault for the fleet to be back (default 30s).
    #[serde(default)]
    pub recover: Option<Dur>,
    /// The processes of the instance the fault acts on that start during the fault (a
    /// replacement, a restart) run with these added: a slow boot is an environment variable.
    #[serde(default)]
    pub app: Option<AppChange>,
    /// `busy`: also measure what health checking costs in throughput (see [`Cost`]).
    #[serde(default)]
    pub cost: Option<Cost>,
    /// Targets that replace the defaults for this fault.
    #[serde(default)]
    pub targets: TargetOverrides,
}

/// Environment and arguments added to the app's.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppChange {
    /// Variables added (or replaced); placeholders allowed.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Arguments appended to the command; placeholders allowed.
    #[serde(default)]
    pub args: Vec<String>,
}

/// `busy`: what health checking costs. Beside the fleet, two more of the same size start, each
/// behind its own HAProxy: one with no health checking at all (no probes, HAProxy without
/// checks, the app changed by `bare`), one identical to the fleet (the control). For the
/// fault's duration all three serve the same traffic at the same time on the same cores, so a
/// change of the machine's speed falls on all alike; the cost is the throughput the checked
/// fleets lose against the bare one, and the control says how far two identical fleets differ.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cost {
    /// What the app needs to do no health checking of its own (e.g. poll its dependencies
    /// once an hour).
    #[serde(default)]
    pub bare: AppChange,
}

/// A share: `99%` or `0.99`.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, serde::Serialize)]
pub struct Share(pub f64);

impl<'de> Deserialize<'de> for Share {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Number(f64),
            Text(String),
        }
        let value = match Written::deserialize(deserializer)? {
            Written::Number(number) => Some(number),
            Written::Text(text) => match text.trim().strip_suffix('%') {
                Some(percent) => percent.trim().parse::<f64>().ok().map(|v| v / 100.0),
                None => text.trim().parse::<f64>().ok(),
            },
        };
        match value {
            Some(value) if (0.0..=1.0).contains(&value) => Ok(Share(value)),
            _ => Err(serde::de::Error::custom(
                "a share from 0 to 1, written 0.99 or 99%",
            )),
        }
    }
}

impl Fault {
    /// The fault's name in the report.
    pub fn display_name(&self) -> String {
        if let Some(name) = &self.name {
            return name.clone();
        }
        let mut name = self.kind.name().to_owned();
        if let Some(dependency) = &self.dependency {
            name.push('-');
            name.push_str(dependency);
        }
        if let Some(hook) = &self.hook {
            name.push('-');
            name.push_str(hook);
        }
        if self.kind.needs_dependency()
            && self.scope == Scope::One
            && self.kind != FaultKind::StartDuringOutage
        {
            name.push_str("-one");
        }
        name
    }

    /// How long the fault lasts.
    pub fn duration(&self) -> Duration {
        self.duration.map_or(
            match self.kind {
                FaultKind::Busy => Duration::from_secs(30),
                _ => Duration::from_secs(20),
            },
            |d| d.0,
        )
    }

    /// The longest wait for the fleet to be back after the fault.
    pub fn recover(&self) -> Duration {
        self.recover.map_or(Duration::from_secs(30), |d| d.0)
    }

    /// A fault of `kind` with every setting at its default.
    pub fn of(kind: FaultKind) -> Fault {
        Fault {
            kind,
            name: None,
            dependency: None,
            scope: Scope::All,
            duration: None,
            latency: None,
            up: None,
            down: None,
            hook: None,
            recover: None,
            app: None,
            cost: None,
            targets: TargetOverrides::default(),
        }
    }
}

/// Targets a fault states instead of the defaults; absent keys keep the default.
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct TargetOverrides {
    /// Most restarts (liveness or startup kills, crashes restarted) during the fault.
    #[serde(default)]
    pub restarts: Option<u32>,
    /// Most failed requests through the balancer.
    #[serde(default)]
    pub failed_requests: Option<u64>,
    /// Most readiness transitions (in or out) of any one instance.
    #[serde(default)]
    pub readiness_transitions: Option<u32>,
    /// Most probes that time out (`blackhole`: a probe should answer, pass or fail, within
    /// its timeout).
    #[serde(default)]
    pub probe_timeouts: Option<u32>,
    /// Longest from the fault's start until the instance is out of rotation.
    #[serde(default, deserialize_with = "opt_dur", skip_serializing)]
    pub out_of_rotation_within: Option<Duration>,
    /// Longest from the fault's end until every instance is back in rotation.
    #[serde(default, deserialize_with = "opt_dur", skip_serializing)]
    pub back_within: Option<Duration>,
    /// Longest from the fault's start until the prober restarts the instance.
    #[serde(default, deserialize_with = "opt_dur", skip_serializing)]
    pub restarted_within: Option<Duration>,
    /// Every instance stays in rotation through the fault (degrade, do not drain); default
    /// for `busy`.
    #[serde(default)]
    pub stays_in_rotation: Option<bool>,
    /// Longest from the fault's end until a request is served again through the balancer.
    #[serde(default, deserialize_with = "opt_dur", skip_serializing)]
    pub served_again_within: Option<Duration>,
    /// Most liveness probes that fail, whatever the reason.
    #[serde(default)]
    pub liveness_failures: Option<u32>,
    /// Most readiness probes that fail (default 0 for `busy`).
    #[serde(default)]
    pub readiness_failures: Option<u32>,
    /// Longest from the start of a new process of the instance acted on until its startup
    /// probe passes.
    #[serde(default, deserialize_with = "opt_dur", skip_serializing)]
    pub started_within: Option<Duration>,
    /// Per traffic request (by name): the least share of its requests sent during the fault
    /// that succeed.
    #[serde(default)]
    pub served: BTreeMap<String, Share>,
    /// Longest from the fault's end until no answer carries a request's `marker` any more.
    #[serde(default, deserialize_with = "opt_dur", skip_serializing)]
    pub unmarked_within: Option<Duration>,
    /// Most acknowledged writes that never reach the broker (needs `delivery`).
    #[serde(default)]
    pub lost_writes: Option<u64>,
    /// Most writes the broker receives more than once (needs `delivery`).
    #[serde(default)]
    pub duplicated_writes: Option<u64>,
    /// `busy` with `cost`: the most health checking may cost in throughput (default 3%).
    #[serde(default)]
    pub check_cost: Option<Share>,
}

impl TargetOverrides {
    /// Whether the fault's row counts what reached the broker.
    pub fn measures_delivery(&self) -> bool {
        self.lost_writes.is_some() || self.duplicated_writes.is_some()
    }
}

fn opt_dur<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Duration>, D::Error> {
    Ok(Option::<Dur>::deserialize(deserializer)?.map(|d| d.0))
}

/// Why a drill file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// Reading the file failed.
    #[error("{file}: {message}")]
    Read {
        /// The file.
        file: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The file is not a valid drill file.
    #[error("{file}{}: {message}", line.map(|line| format!(":{line}")).unwrap_or_default())]
    Invalid {
        /// The file.
        file: PathBuf,
        /// 1-based line, when known.
        line: Option<usize>,
        /// What is wrong, naming the key.
        message: String,
    },
}

impl FileError {
    /// The line the error is about.
    pub fn line(&self) -> Option<usize> {
        match self {
            FileError::Invalid { line, .. } => *line,
            FileError::Read { .. } => None,
        }
    }
}

/// A drill file, read and checked, with where it came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The file's contents.
    pub file: DrillFile,
    /// Where it was read from.
    pub path: PathBuf,
    /// The folder relative paths in it are resolved against.
    pub dir: PathBuf,
}

impl Loaded {
    /// The app's working directory.
    pub fn workdir(&self) -> PathBuf {
        match &self.file.app.workdir {
            Some(dir) => self.dir.join(dir),
            None => self.dir.clone(),
        }
    }
}

/// Reads at most [`MAX_FILE_BYTES`] of a text file, refusing a path that is not a regular file
/// (a FIFO, a device, a directory) before opening it. The message does not name the path: the
/// caller does.
pub(crate) fn read_text(path: &Path) -> Result<String, String> {
    probity_contract::file::read_text(path, MAX_FILE_BYTES).map_err(|error| error.to_string())
}

impl DrillFile {
    /// Reads and checks the drill file at `path`.
    pub fn load(path: &Path) -> Result<Loaded, FileError> {
        let text = read_text(path).map_err(|message| FileError::Read {
            file: path.to_owned(),
            message,
        })?;
        let file = DrillFile::parse(&text, path)?;
        let dir = path
            .parent()
            .filter(|dir| !dir.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_owned);
        Ok(Loaded {
            file,
            path: path.to_owned(),
            dir,
        })
    }

    /// Parses and checks drill-file text; `file` names it in errors.
    pub fn parse(text: &str, file: &Path) -> Result<DrillFile, FileError> {
        if text.trim().is_empty() {
            return Err(FileError::Invalid {
                file: file.to_owned(),
                line: None,
                message: "empty drill file: it needs at least service, app and traffic".into(),
            });
        }
        let parsed: DrillFile = serde_saphyr::from_str(text).map_err(|error| {
            let location = error.location();
            FileError::Invalid {
                file: file.to_owned(),
                line: location.map(|at| at.line() as usize),
                message: yaml_message(&error),
            }
        })?;
        parsed.check(text, file)?;
        Ok(parsed)
    }

    /// Rules that span keys: what a placeholder, a fault or a hook names exists; numbers are in
    /// range.
    fn check(&self, text: &str, file: &Path) -> Result<(), FileError> {
        let invalid = |needle: &str, message: String| FileError::Invalid {
            file: file.to_owned(),
            line: find_line(text, needle),
            message,
        };
        if self.service.is_empty()
            || !self
                .service
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(invalid(
                "service",
                "service: a name of letters, digits, `-` and `_`".into(),
            ));
        }
        if !(1..=MAX_INSTANCES).contains(&self.instances) {
            return Err(invalid(
                "instances",
                format!("instances: from 1 to {MAX_INSTANCES}"),
            ));
        }
        if self.setup.len() > MAX_SETUP {
            return Err(invalid(
                "setup",
                format!("setup: at most {MAX_SETUP} commands"),
            ));
        }
        for (index, command) in self.setup.iter().enumerate() {
            if command.first().is_none_or(String::is_empty) {
                return Err(invalid(
                    "setup",
                    format!("setup[{index}]: a program and its arguments, e.g. [createdb, orders]"),
                ));
            }
        }
        if self.app.command.is_empty() || self.app.command[0].is_empty() {
            return Err(invalid(
                "command",
                "app.command: the program and its arguments, e.g. [node, server.js]".into(),
            ));
        }
        if self.app.port == 0 {
            return Err(invalid(
                "port",
                "app.port: a container port, 1 to 65535".into(),
            ));
        }
        for (name, port) in &self.app.ports {
            if *port == 0 || *port == self.app.port {
                return Err(invalid(
                    name,
                    format!("app.ports.{name}: a container port other than app.port"),
                ));
            }
        }
        match (&self.pod, &self.manifest) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "manifest",
                    "pod and manifest: give the pod or point at a manifest, not both".into(),
                ));
            }
            (Some(pod), None) => pod
                .check()
                .map_err(|message| invalid("pod", format!("pod: {message}")))?,
            _ => {}
        }
        for (name, dependency) in &self.dependencies {
            let line_key = name.as_str();
            match (&dependency.url, &dependency.address) {
                (Some(_), Some(_)) | (None, None) => {
                    return Err(invalid(
                        line_key,
                        format!("dependencies.{name}: exactly one of url or address"),
                    ));
                }
                _ => {}
            }
            if dependency.target().is_none() {
                return Err(invalid(
                    line_key,
                    format!(
                        "dependencies.{name}: cannot read a host and port (a URL such as \
                         postgres://user@127.0.0.1:5432/db, or an address such as 127.0.0.1:6379)"
                    ),
                ));
            }
        }
        if self.traffic.requests.is_empty() {
            return Err(invalid(
                "requests",
                "traffic.requests: at least one request".into(),
            ));
        }
        for (index, request) in self.traffic.requests.iter().enumerate() {
            if reqwest::Method::from_bytes(request.method.as_bytes()).is_err() {
                return Err(invalid(
                    "method",
                    format!(
                        "traffic.requests[{index}].method: `{}` is not an HTTP method",
                        request.method
                    ),
                ));
            }
            if !request.path.starts_with('/') && !request.path.starts_with("{captured.") {
                return Err(invalid(
                    "path",
                    format!(
                        "traffic.requests[{index}].path: `{}` must start with /",
                        request.path
                    ),
                ));
            }
            if request.share == 0 {
                return Err(invalid(
                    "share",
                    format!("traffic.requests[{index}].share: at least 1"),
                ));
            }
            for (header, value) in &request.headers {
                if reqwest::header::HeaderName::from_bytes(header.as_bytes()).is_err()
                    || reqwest::header::HeaderValue::from_str(value).is_err()
                {
                    return Err(invalid(
                        header,
                        format!(
                            "traffic.requests[{index}].headers: `{header}` is not a valid header"
                        ),
                    ));
                }
            }
        }
        if let Some(concurrency) = self.traffic.concurrency
            && !(1..=1024).contains(&concurrency)
        {
            return Err(invalid(
                "concurrency",
                "traffic.concurrency: from 1 to 1024".into(),
            ));
        }
        if self.traffic.rate == Some(0) {
            return Err(invalid("rate", "traffic.rate: at least 1".into()));
        }
        if self.balancer.mode == BalancerMode::Kubernetes && self.balancer.check.is_some() {
            return Err(invalid(
                "check",
                "balancer.check: HAProxy's checks apply to mode haproxy only".into(),
            ));
        }
        const RETRY_ON: [&str; 14] = [
            "none",
            "conn-failure",
            "empty-response",
            "junk-response",
            "response-timeout",
            "0rtt-rejected",
            "404",
            "408",
            "425",
            "500",
            "501",
            "502",
            "503",
            "504",
        ];
        for keyword in self.balancer.retry_on.iter().flatten() {
            if !RETRY_ON.contains(&keyword.as_str()) {
                return Err(invalid(
                    "retry_on",
                    format!(
                        "balancer.retry_on: `{keyword}` is not one of {}",
                        RETRY_ON.join(", ")
                    ),
                ));
            }
        }
        let mut names = std::collections::BTreeSet::new();
        for (index, request) in self.traffic.requests.iter().enumerate() {
            if !names.insert(request.display_name()) {
                return Err(invalid(
                    "name",
                    format!(
                        "traffic.requests[{index}]: `{}` names two requests; give each a name",
                        request.display_name()
                    ),
                ));
            }
            let headers = request
                .capture
                .iter()
                .chain(request.marker.as_ref().map(|marker| &marker.header));
            for header in headers {
                if reqwest::header::HeaderName::from_bytes(header.as_bytes()).is_err() {
                    return Err(invalid(
                        header,
                        format!("traffic.requests[{index}]: `{header}` is not a header name"),
                    ));
                }
            }
        }
        if let Some(delivery) = &self.delivery {
            match self.dependencies.get(&delivery.dependency) {
                Some(Dependency { url: Some(url), .. })
                    if url.starts_with("amqp://") || url.starts_with("amqps://") => {}
                _ => {
                    return Err(invalid(
                        "delivery",
                        format!(
                            "delivery.dependency: `{}` must be one of dependencies, with an \
                             amqp:// URL",
                            delivery.dependency
                        ),
                    ));
                }
            }
            if self.traffic.class_of(&delivery.writes).is_none() {
                return Err(invalid(
                    "writes",
                    format!(
                        "delivery.writes: `{}` is not the name of a traffic request",
                        delivery.writes
                    ),
                ));
            }
        }
        for (name, hook) in &self.hooks {
            if let Some(port) = &hook.port
                && !self.app.ports.contains_key(port)
            {
                return Err(invalid(
                    name,
                    format!("hooks.{name}.port: `{port}` is not one of app.ports"),
                ));
            }
            for call in std::iter::once(&hook.start).chain(hook.stop.as_ref()) {
                if !call.path.starts_with('/')
                    || reqwest::Method::from_bytes(call.method.as_bytes()).is_err()
                {
                    return Err(invalid(
                        name,
                        format!(
                            "hooks.{name}: a call needs an HTTP method and a path starting with /"
                        ),
                    ));
                }
            }
        }
        if let Some(faults) = &self.faults {
            if faults.len() > MAX_FAULTS {
                return Err(invalid("faults", format!("faults: at most {MAX_FAULTS}")));
            }
            for (index, fault) in faults.iter().enumerate() {
                let at = |message: String| invalid("kind", format!("faults[{index}]: {message}"));
                let kind = fault.kind.name();
                match (&fault.dependency, fault.kind.needs_dependency()) {
                    (None, true) => {
                        return Err(at(format!("{kind} needs a dependency")));
                    }
                    (Some(dependency), true) if !self.dependencies.contains_key(dependency) => {
                        return Err(at(format!(
                            "dependency `{dependency}` is not one of dependencies"
                        )));
                    }
                    (Some(_), false) => {
                        return Err(at(format!("{kind} takes no dependency")));
                    }
                    _ => {}
                }
                match (&fault.hook, fault.kind) {
                    (None, FaultKind::Hook) => return Err(at("hook needs a hook name".into())),
                    (Some(hook), FaultKind::Hook) if !self.hooks.contains_key(hook) => {
                        return Err(at(format!("hook `{hook}` is not one of hooks")));
                    }
                    (Some(_), kind) if kind != FaultKind::Hook => {
                        return Err(at(format!("{} takes no hook", kind.name())));
                    }
                    _ => {}
                }
                if fault.latency.is_some() && fault.kind != FaultKind::Slow {
                    return Err(at("latency applies to slow only".into()));
                }
                if (fault.up.is_some() || fault.down.is_some()) && fault.kind != FaultKind::Flap {
                    return Err(at("up and down apply to flap only".into()));
                }
                if fault.scope == Scope::One
                    && !fault.kind.needs_dependency()
                    && fault.kind != FaultKind::Busy
                {
                    return Err(at(format!(
                        "{kind} acts on one instance already; scope applies to dependency faults \
                         and busy"
                    )));
                }
                if fault.cost.is_some() && fault.kind != FaultKind::Busy {
                    return Err(at("cost applies to busy only".into()));
                }
                if fault.cost.is_some() && fault.scope == Scope::One {
                    return Err(at(
                        "cost compares whole fleets under the same traffic: not with scope one \
                         (a busy fault of its own)"
                            .into(),
                    ));
                }
                if fault.targets.check_cost.is_some() && fault.cost.is_none() {
                    return Err(at("targets.check_cost needs cost".into()));
                }
                if fault.app.is_some()
                    && !matches!(
                        fault.kind,
                        FaultKind::Terminate
                            | FaultKind::Crash
                            | FaultKind::Wedge
                            | FaultKind::Hook
                            | FaultKind::StartDuringOutage
                    )
                {
                    return Err(at(format!(
                        "app applies to the processes a fault starts (terminate, crash, wedge, \
                         hook, start-during-outage), not to {kind}"
                    )));
                }
                for class in fault.targets.served.keys() {
                    if self.traffic.class_of(class).is_none() {
                        return Err(at(format!(
                            "targets.served: `{class}` is not the name of a traffic request ({})",
                            self.traffic
                                .requests
                                .iter()
                                .map(Request::display_name)
                                .collect::<Vec<_>>()
                                .join(", ")
                        )));
                    }
                }
                if fault.targets.unmarked_within.is_some()
                    && self.traffic.requests.iter().all(|r| r.marker.is_none())
                {
                    return Err(at(
                        "targets.unmarked_within needs a traffic request with a marker".into(),
                    ));
                }
                if fault.targets.measures_delivery() && self.delivery.is_none() {
                    return Err(at(
                        "targets.lost_writes and duplicated_writes need a delivery section".into(),
                    ));
                }
                if fault.duration() == Duration::ZERO
                    && fault.kind != FaultKind::Terminate
                    && fault.kind != FaultKind::Crash
                {
                    return Err(at("duration: longer than 0".into()));
                }
            }
        }
        // Every placeholder names something that exists.
        let known = placeholder::Known {
            ports: self.app.ports.keys().cloned().collect(),
            dependencies: self
                .dependencies
                .iter()
                .map(|(name, dep)| (name.clone(), dep.url.is_some()))
                .collect(),
            agent: self.agent.is_some(),
            captures: Default::default(),
        };
        let changes = self
            .faults
            .iter()
            .flatten()
            .flat_map(|fault| {
                fault
                    .app
                    .iter()
                    .chain(fault.cost.as_ref().map(|cost| &cost.bare))
            })
            .flat_map(|change| {
                change
                    .env
                    .iter()
                    .map(|(key, value)| (key.as_str(), value.as_str()))
                    .chain(change.args.iter().map(|arg| ("args", arg.as_str())))
            });
        let texts = self
            .app
            .command
            .iter()
            .map(|arg| ("command", arg.as_str()))
            .chain(
                self.app
                    .env
                    .iter()
                    .map(|(key, value)| (key.as_str(), value.as_str())),
            )
            .chain(self.hooks.iter().flat_map(|(name, hook)| {
                std::iter::once(&hook.start)
                    .chain(hook.stop.as_ref())
                    .map(move |call| (name.as_str(), call.path.as_str()))
            }))
            .chain(changes)
            .chain(self.delivery.iter().map(|d| ("queue", d.queue.as_str())));
        for (key, value) in texts {
            placeholder::check(value, &known)
                .map_err(|message| invalid(key, format!("{key}: {message}")))?;
        }
        // A traffic path may use what another request captured, and nothing else.
        let captures = placeholder::Known {
            captures: self
                .traffic
                .requests
                .iter()
                .filter(|request| request.capture.is_some())
                .map(Request::display_name)
                .collect(),
            ..Default::default()
        };
        for request in &self.traffic.requests {
            for placeholder in placeholder::names(&request.path) {
                if !placeholder.starts_with("captured.") {
                    return Err(invalid(
                        "path",
                        format!(
                            "traffic.requests: `{{{placeholder}}}` in `{}`: a traffic path takes \
                             only {{captured.NAME}}",
                            request.path
                        ),
                    ));
                }
            }
            placeholder::check(&request.path, &captures)
                .map_err(|message| invalid("path", format!("traffic.requests: {message}")))?;
        }
        Ok(())
    }

    /// The faults to run: as written, or, absent, every fault that applies: busy; per
    /// dependency refused (all), black-holed (all), slow (all), flapping (all) and one
    /// instance's path refused; wedge, terminate, crash; a new instance during an outage of
    /// the first dependency.
    pub fn faults(&self) -> Vec<Fault> {
        if let Some(faults) = &self.faults {
            return faults.clone();
        }
        let mut faults = vec![Fault::of(FaultKind::Busy)];
        for name in self.dependencies.keys() {
            for (kind, scope) in [
                (FaultKind::Refuse, Scope::All),
                (FaultKind::Refuse, Scope::One),
                (FaultKind::Blackhole, Scope::All),
                (FaultKind::Slow, Scope::All),
                (FaultKind::Flap, Scope::All),
            ] {
                faults.push(Fault {
                    dependency: Some(name.clone()),
                    scope,
                    ..Fault::of(kind)
                });
            }
        }
        faults.extend([
            Fault::of(FaultKind::Wedge),
            Fault::of(FaultKind::Terminate),
            Fault::of(FaultKind::Crash),
        ]);
        if let Some(first) = self.dependencies.keys().next() {
            faults.push(Fault {
                dependency: Some(first.clone()),
                ..Fault::of(FaultKind::StartDuringOutage)
            });
        }
        faults
    }
}

/// The message of a YAML error without serde-saphyr's own location and snippet.
fn yaml_message(error: &serde_saphyr::Error) -> String {
    let text = error.without_snippet().to_string();
    let first = text.lines().next().unwrap_or_default().trim();
    let first = match first.rfind(" at line ") {
        Some(index) => &first[..index],
        None => first,
    };
    first.trim_end_matches('.').to_owned()
}

/// The first line that declares `needle` as a key (`needle:`) or holds it as a value.
pub(crate) fn find_line(text: &str, needle: &str) -> Option<usize> {
    let declares = |line: &str| {
        let trimmed = line.trim_start().trim_start_matches("- ");
        trimmed.starts_with(&format!("{needle}:"))
            || trimmed.starts_with(&format!("\"{needle}\":"))
            || trimmed.starts_with(&format!("'{needle}':"))
    };
    let not_comment = |line: &&str| !line.trim_start().starts_with('#');
    text.lines()
        .position(|line| not_comment(&line) && declares(line))
        .or_else(|| {
            text.lines()
                .position(|line| not_comment(&line) && line.contains(needle))
        })
        .map(|index| index + 1)
}

#[cfg(test)]
mod tests;
