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

mod check;
mod fault;
pub mod init;
pub mod placeholder;
pub mod pod;
mod read;

use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

pub use fault::{AppChange, Cost, Fault, FaultKind, Scope, Share, TargetOverrides};
pub use placeholder::Placeholder;
pub use pod::{PodSpec, ResolvedPod};
pub(crate) use read::read_text;
use read::yaml_message;
pub use read::{FileError, Loaded};

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

impl DrillFile {
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

#[cfg(test)]
mod tests;
