//! Scenario files: what they may say, and how they are read and checked.
//!
//! A scenario is YAML (`.yaml`, `.yml`) or TOML (`.toml`). The probe blocks under `container:`
//! are written exactly as in a Kubernetes container spec (`livenessProbe`, `readinessProbe`,
//! `startupProbe`, camelCase fields, integer seconds), so a team can paste its own; everything
//! else is the simulator's own vocabulary in snake_case. `docs/simulate.md` is the reference.
//!
//! Reading goes through a JSON value tree so YAML and TOML share one set of types and every
//! error names the field it is about (`container.livenessProbe.periodSeconds`).

use crate::error::{Invalid, ScenarioError};
use crate::time::{Millis, Span};
use probity::Tier;
use probity::contract::{Contract, LivenessKind};
use probity_contract::kube;
use probity_contract::kube::probe::ProbeTiming;
use probity_contract::probe::ProbeKind;
use serde::Deserialize;
use serde::de::IgnoredAny;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------------------------------------
// The file format
// ---------------------------------------------------------------------------------------------

/// A scenario file as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    assumptions: Vec<String>,
    #[serde(default)]
    seed: Option<u64>,
    duration: Span,
    #[serde(default)]
    fleet: FleetFile,
    #[serde(default)]
    kubelet: KubeletFile,
    #[serde(default)]
    container: ContainerFile,
    #[serde(default)]
    app: AppFile,
    #[serde(default)]
    dependencies: BTreeMap<String, DependencyFile>,
    #[serde(default)]
    requests: RequestsFile,
    #[serde(default)]
    routing: RoutingFile,
    #[serde(default)]
    faults: Vec<FaultFile>,
    #[serde(default)]
    measure: MeasureFile,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct FleetFile {
    #[serde(default = "default_replicas")]
    replicas: u32,
    #[serde(default)]
    names: Vec<String>,
    #[serde(default)]
    start: Start,
    #[serde(default)]
    stagger: Span,
    #[serde(default, rename = "terminationGracePeriodSeconds")]
    termination_grace_period_seconds: Option<i64>,
}

fn default_replicas() -> u32 {
    3
}

impl Default for FleetFile {
    fn default() -> Self {
        FleetFile {
            replicas: default_replicas(),
            names: Vec::new(),
            start: Start::default(),
            stagger: Span::default(),
            termination_grace_period_seconds: None,
        }
    }
}

/// How the fleet is at the start of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Start {
    /// Every pod has been running for a long time: booted, started, ready, in rotation, with
    /// its probe tickers at uniformly spread phases.
    #[default]
    Steady,
    /// Every pod is created at the start (one `stagger` apart) and boots.
    Cold,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct KubeletFile {
    #[serde(default)]
    backoff_requeue: BackoffRequeue,
}

/// When the kubelet retries a container that is in CrashLoopBackOff.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackoffRequeue {
    /// At the moment the backoff expires (kubelet ≥ 1.35, PR #133066).
    #[default]
    Exact,
    /// At the first pod-worker retry after expiry; retries come every `wait.Jitter(10s, 0.5)`,
    /// adding 0–15 s (kubelet < 1.35, `pod_workers.go` `completeWork`, k8s issue #123602).
    Jitter,
}

/// A container spec as pasted from a manifest. Only the probe and lifecycle fields matter; the
/// other container fields are accepted and ignored so a whole container can be pasted.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[allow(dead_code)] // fields accepted so a pasted spec parses; they do not affect the model
struct ContainerFile {
    #[serde(default)]
    liveness_probe: Option<kube::probe::ProbeSpec>,
    #[serde(default)]
    readiness_probe: Option<kube::probe::ProbeSpec>,
    #[serde(default)]
    startup_probe: Option<kube::probe::ProbeSpec>,
    #[serde(default)]
    lifecycle: Option<kube::termination::Lifecycle>,
    #[serde(default)]
    name: Option<IgnoredAny>,
    #[serde(default)]
    image: Option<IgnoredAny>,
    #[serde(default)]
    image_pull_policy: Option<IgnoredAny>,
    #[serde(default)]
    command: Option<IgnoredAny>,
    #[serde(default)]
    args: Option<IgnoredAny>,
    #[serde(default)]
    env: Option<IgnoredAny>,
    #[serde(default)]
    env_from: Option<IgnoredAny>,
    #[serde(default)]
    ports: Option<IgnoredAny>,
    #[serde(default)]
    resources: Option<IgnoredAny>,
    #[serde(default)]
    volume_mounts: Option<IgnoredAny>,
    #[serde(default)]
    security_context: Option<IgnoredAny>,
    #[serde(default)]
    working_dir: Option<IgnoredAny>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct AppFile {
    #[serde(default)]
    contract: Option<PathBuf>,
    #[serde(default = "default_boot")]
    boot: Span,
    #[serde(default)]
    listen_during_boot: bool,
    #[serde(default)]
    exit_after_sigterm: Option<Span>,
    #[serde(default)]
    drain_delay: Option<Span>,
    #[serde(default)]
    pool_size: Option<u32>,
    #[serde(default)]
    max_inflight_checks: Option<u32>,
    #[serde(default)]
    boot_needs: Vec<String>,
    #[serde(default)]
    close_connections_when_unready: bool,
    #[serde(default)]
    endpoints: BTreeMap<String, EndpointFile>,
    #[serde(default)]
    checks: BTreeMap<String, CheckFile>,
}

fn default_boot() -> Span {
    Span::secs(5)
}

impl Default for AppFile {
    fn default() -> Self {
        AppFile {
            contract: None,
            boot: default_boot(),
            listen_during_boot: false,
            exit_after_sigterm: None,
            drain_delay: None,
            pool_size: None,
            max_inflight_checks: None,
            boot_needs: Vec::new(),
            close_connections_when_unready: false,
            endpoints: BTreeMap::new(),
            checks: BTreeMap::new(),
        }
    }
}

/// How an endpoint evaluates its checks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EndpointMode {
    /// The handler reads the snapshot the pollers keep; it does no I/O and answers at once.
    #[default]
    Cached,
    /// The handler calls each dependency while the probe waits (the seeds' "deep check").
    Sync,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct EndpointFile {
    #[serde(default)]
    mode: EndpointMode,
    #[serde(default)]
    checks: Vec<String>,
    #[serde(default)]
    timeout: Option<Span>,
    #[serde(default)]
    parallel: bool,
}

/// What an internal (liveness) check watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InternalKind {
    /// A deadlock detector: answers 503 from its own thread once it has seen the deadlock.
    Deadlock,
    /// A runtime-stall watchdog; the handler itself runs on the runtime, so it hangs too.
    RuntimeStall,
    /// Fails once the process has received SIGTERM.
    Shutdown,
    /// Fails until the boot has finished (a startup endpoint).
    Boot,
    /// An application-declared unrecoverable state; never set by the simulator's faults.
    AppState,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckFile {
    #[serde(default)]
    dependency: Option<String>,
    #[serde(default)]
    internal: Option<InternalKind>,
    #[serde(default = "default_tier")]
    tier: Tier,
    #[serde(default = "default_interval")]
    interval: Span,
    #[serde(default)]
    timeout: Option<Span>,
    #[serde(default)]
    jitter: Span,
    #[serde(default = "one")]
    rise: u32,
    #[serde(default = "one")]
    fall: u32,
    #[serde(default)]
    staleness: Option<Span>,
    #[serde(default)]
    boot_requires_rise: bool,
    #[serde(default)]
    passive_failure_threshold: Option<u32>,
    #[serde(default = "yes")]
    uses_pool: bool,
    #[serde(default = "default_detect")]
    detect_after: Span,
}

fn default_tier() -> Tier {
    Tier::Hard
}
fn default_interval() -> Span {
    Span::secs(5)
}
fn default_detect() -> Span {
    Span::secs(1)
}
fn one() -> u32 {
    1
}
fn yes() -> bool {
    true
}

impl Default for CheckFile {
    fn default() -> Self {
        CheckFile {
            dependency: None,
            internal: None,
            tier: default_tier(),
            interval: default_interval(),
            timeout: None,
            jitter: Span::default(),
            rise: 1,
            fall: 1,
            staleness: None,
            boot_requires_rise: false,
            passive_failure_threshold: None,
            uses_pool: true,
            detect_after: default_detect(),
        }
    }
}

/// What a call to a dependency does while the dependency is down.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutageBehaviour {
    /// Calls hang until the caller's timeout, or the dependency's `connect_timeout` when the
    /// caller has none (an unreachable host: SYNs go unanswered).
    #[default]
    Hang,
    /// Calls fail at once (connection refused).
    Refuse,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct DependencyFile {
    #[serde(default = "default_latency")]
    latency: Span,
    #[serde(default)]
    outage: OutageBehaviour,
    #[serde(default = "default_connect_timeout")]
    connect_timeout: Span,
    #[serde(default)]
    health_depends_on: Vec<String>,
    #[serde(default)]
    herd: Option<HerdFile>,
}

fn default_latency() -> Span {
    Span::millis(2)
}
fn default_connect_timeout() -> Span {
    Span::secs(10)
}

impl Default for DependencyFile {
    fn default() -> Self {
        DependencyFile {
            latency: default_latency(),
            outage: OutageBehaviour::default(),
            connect_timeout: default_connect_timeout(),
            health_depends_on: Vec::new(),
            herd: None,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct HerdFile {
    max_concurrent_boots: u32,
    #[serde(default = "default_overload_latency")]
    overload_latency: Span,
}

fn default_overload_latency() -> Span {
    Span::secs(5)
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestsFile {
    #[serde(default = "default_rate")]
    rate: f64,
    #[serde(default = "default_request_timeout")]
    timeout: Span,
    #[serde(default)]
    mix: Vec<RequestClassFile>,
    #[serde(default = "default_users")]
    users: u32,
    #[serde(default)]
    keep_alive: Option<KeepAliveFile>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeepAliveFile {
    clients: u32,
    connection_lifetime: Span,
}

fn default_rate() -> f64 {
    100.0
}
fn default_request_timeout() -> Span {
    Span::secs(10)
}
fn default_users() -> u32 {
    10_000
}

impl Default for RequestsFile {
    fn default() -> Self {
        RequestsFile {
            rate: default_rate(),
            timeout: default_request_timeout(),
            mix: Vec::new(),
            users: default_users(),
            keep_alive: None,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestClassFile {
    share: f64,
    #[serde(default)]
    needs: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
enum RoutingFile {
    KubernetesService {
        #[serde(default = "default_propagation")]
        propagation: Span,
    },
    Haproxy {
        check_path: String,
        #[serde(default = "default_haproxy_inter")]
        inter: Span,
        #[serde(default)]
        fastinter: Option<Span>,
        #[serde(default)]
        downinter: Option<Span>,
        #[serde(default = "default_haproxy_rise")]
        rise: u32,
        #[serde(default = "default_haproxy_fall")]
        fall: u32,
        #[serde(default)]
        timeout_check: Option<Span>,
    },
    Envoy {
        check_path: String,
        interval: Span,
        timeout: Span,
        unhealthy_threshold: u32,
        healthy_threshold: u32,
        #[serde(default = "default_panic")]
        panic_threshold: f64,
        #[serde(default)]
        outlier_detection: Option<OutlierFile>,
    },
    Alb {
        #[serde(default = "default_alb_path")]
        check_path: String,
        #[serde(default = "default_alb_interval")]
        interval: Span,
        #[serde(default = "default_alb_timeout")]
        timeout: Span,
        #[serde(default = "default_alb_healthy")]
        healthy_threshold: u32,
        #[serde(default = "default_alb_unhealthy")]
        unhealthy_threshold: u32,
        #[serde(default = "one")]
        nodes: u32,
    },
    ConsistentHash {
        #[serde(default = "default_vnodes")]
        virtual_nodes: u32,
        #[serde(default)]
        membership: Membership,
        #[serde(default = "default_propagation")]
        propagation: Span,
    },
}

fn default_propagation() -> Span {
    Span::secs(1)
}
fn default_haproxy_inter() -> Span {
    Span::secs(2)
}
fn default_haproxy_rise() -> u32 {
    2
}
fn default_haproxy_fall() -> u32 {
    3
}
fn default_panic() -> f64 {
    50.0
}
fn default_alb_path() -> String {
    "/".into()
}
fn default_alb_interval() -> Span {
    Span::secs(30)
}
fn default_alb_timeout() -> Span {
    Span::secs(5)
}
fn default_alb_healthy() -> u32 {
    5
}
fn default_alb_unhealthy() -> u32 {
    2
}
fn default_vnodes() -> u32 {
    100
}

impl Default for RoutingFile {
    fn default() -> Self {
        RoutingFile::KubernetesService {
            propagation: default_propagation(),
        }
    }
}

/// Who decides which pods a consistent-hash balancer keeps on its ring.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Membership {
    /// The ring follows the Service's ready endpoints (readiness probes matter).
    #[default]
    Endpoints,
    /// Every pod stays on the ring whatever its health (no health signal reaches the balancer).
    Static,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct OutlierFile {
    #[serde(default = "default_consecutive_5xx")]
    consecutive_5xx: u32,
    #[serde(default = "default_base_ejection")]
    base_ejection_time: Span,
    #[serde(default = "default_max_ejection")]
    max_ejection_time: Span,
    #[serde(default = "default_max_ejection_percent")]
    max_ejection_percent: f64,
}

fn default_consecutive_5xx() -> u32 {
    5
}
fn default_base_ejection() -> Span {
    Span::secs(30)
}
fn default_max_ejection() -> Span {
    Span::secs(300)
}
fn default_max_ejection_percent() -> f64 {
    10.0
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum InstanceRefFile {
    Index(u32),
    Name(String),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
enum FaultFile {
    DependencyOutage {
        dependency: String,
        at: Span,
        #[serde(default)]
        duration: Option<Span>,
        #[serde(default)]
        behaviour: Option<OutageBehaviour>,
    },
    SlowDependency {
        dependency: String,
        at: Span,
        #[serde(default)]
        duration: Option<Span>,
        latency: Span,
    },
    FlappingDependency {
        dependency: String,
        at: Span,
        #[serde(default)]
        duration: Option<Span>,
        period: Span,
        down: Span,
        #[serde(default)]
        flicker: f64,
    },
    PoolExhausted {
        instance: InstanceRefFile,
        dependency: String,
        at: Span,
    },
    Deadlock {
        instance: InstanceRefFile,
        at: Span,
        #[serde(default)]
        ignores_sigterm: bool,
    },
    RuntimeStall {
        instance: InstanceRefFile,
        at: Span,
    },
    ManualDrain {
        instance: InstanceRefFile,
        at: Span,
    },
    ManualFix {
        at: Span,
        #[serde(default)]
        remove_probes: Vec<ProbeKind>,
    },
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct MeasureFile {
    #[serde(default = "default_resolution")]
    resolution: Span,
    #[serde(default)]
    rate_window: Option<Span>,
    #[serde(default = "default_outage_threshold")]
    outage_threshold: f64,
    #[serde(default = "default_recovered_below")]
    recovered_below: f64,
}

fn default_resolution() -> Span {
    Span::secs(1)
}
fn default_outage_threshold() -> f64 {
    0.05
}
fn default_recovered_below() -> f64 {
    0.01
}

impl Default for MeasureFile {
    fn default() -> Self {
        MeasureFile {
            resolution: default_resolution(),
            rate_window: None,
            outage_threshold: default_outage_threshold(),
            recovered_below: default_recovered_below(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The validated model
// ---------------------------------------------------------------------------------------------

/// A checked scenario, with every name resolved to an index and every Kubernetes default applied.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The scenario's name (shown in reports).
    pub name: String,
    /// What it shows, in a sentence or two.
    pub description: Option<String>,
    /// The assumptions the scenario makes where its source leaves values unstated.
    pub assumptions: Vec<String>,
    /// The random seed written in the file, used unless the caller passes one.
    pub seed: Option<u64>,
    /// How long the run lasts.
    pub duration: Millis,
    /// The pods.
    pub fleet: Fleet,
    /// Kubelet behaviour that differs between versions.
    pub kubelet: KubeletSettings,
    /// The container's probes, with Kubernetes defaults applied.
    pub probes: Probes,
    /// `lifecycle.preStop.sleep.seconds`, in milliseconds.
    pub pre_stop_sleep: Millis,
    /// The application: boot, shutdown, endpoints and checks.
    pub app: App,
    /// The dependencies, in name order.
    pub dependencies: Vec<Dependency>,
    /// The user traffic.
    pub requests: Requests,
    /// What sends traffic to the pods.
    pub routing: Routing,
    /// Faults and operator actions, in time order.
    pub faults: Vec<Fault>,
    /// How results are measured.
    pub measure: Measure,
}

/// The pods of the fleet.
#[derive(Debug, Clone)]
pub struct Fleet {
    /// Number of pods.
    pub replicas: usize,
    /// Display name of each pod.
    pub names: Vec<String>,
    /// Steady or cold start.
    pub start: Start,
    /// With a cold start, the time between pod creations.
    pub stagger: Millis,
    /// The pod's `terminationGracePeriodSeconds`, in milliseconds (default 30 s).
    pub termination_grace: Millis,
}

/// Kubelet behaviour that differs between versions.
#[derive(Debug, Clone, Copy, Default)]
pub struct KubeletSettings {
    /// When a container in CrashLoopBackOff is retried.
    pub backoff_requeue: BackoffRequeue,
}

/// The three probes of the container.
#[derive(Debug, Clone, Copy, Default)]
pub struct Probes {
    /// `livenessProbe`.
    pub liveness: Option<ProbeSpec>,
    /// `readinessProbe`.
    pub readiness: Option<ProbeSpec>,
    /// `startupProbe`.
    pub startup: Option<ProbeSpec>,
}

impl Probes {
    /// The probe of a kind.
    pub fn get(&self, kind: ProbeKind) -> Option<&ProbeSpec> {
        match kind {
            ProbeKind::Liveness => self.liveness.as_ref(),
            ProbeKind::Readiness => self.readiness.as_ref(),
            ProbeKind::Startup => self.startup.as_ref(),
        }
    }
}

/// A probe with the API server's defaults applied (`SetDefaults_Probe`: period 10, timeout 1,
/// success 1, failure 3; a zero is replaced by the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeSpec {
    /// What the probe calls.
    pub handler: Handler,
    /// Its five numbers.
    pub timing: ProbeTiming,
    /// Probe-level `terminationGracePeriodSeconds`, in milliseconds.
    pub termination_grace: Option<Millis>,
}

impl ProbeSpec {
    /// A probe of an endpoint with the Kubernetes defaults.
    pub fn http(endpoint: usize) -> Self {
        ProbeSpec {
            handler: Handler::Http { endpoint },
            timing: ProbeTiming::default(),
            termination_grace: None,
        }
    }

    /// `periodSeconds`, in milliseconds.
    pub fn period(&self) -> Millis {
        self.timing.period.as_millis() as Millis
    }

    /// `timeoutSeconds`, in milliseconds.
    pub fn timeout(&self) -> Millis {
        self.timing.timeout.as_millis() as Millis
    }
}

/// What a probe or a load-balancer check calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handler {
    /// An HTTP GET (or gRPC health `Check`) answered by an application endpoint.
    Http {
        /// Index into [`App::endpoints`].
        endpoint: usize,
    },
    /// A TCP connect: succeeds whenever the process listens, whatever its handlers do.
    Tcp,
}

/// The application inside the container.
#[derive(Debug, Clone)]
pub struct App {
    /// Time from container start to serving.
    pub boot: Millis,
    /// Whether the listener (and so every endpoint) is open while booting.
    pub listen_during_boot: bool,
    /// Time to exit after SIGTERM when the app has no drain delay.
    pub exit_after_sigterm: Millis,
    /// On SIGTERM: fail readiness at once, keep serving this long, then exit.
    pub drain_delay: Option<Millis>,
    /// Connections in the app's pool to each dependency; hung health-check calls hold them.
    pub pool_size: Option<u32>,
    /// Hung health-check calls that exhaust the process's memory (OOM kill) when exceeded.
    pub max_inflight_checks: Option<u32>,
    /// Dependencies the boot's warm-up uses (for the herd model).
    pub boot_needs: Vec<usize>,
    /// Whether the server answers with `Connection: close` while its readiness fails, so a
    /// keep-alive client reconnects after its next request there.
    pub close_connections_when_unready: bool,
    /// The health endpoints.
    pub endpoints: Vec<Endpoint>,
    /// The checks the endpoints evaluate.
    pub checks: Vec<Check>,
}

/// A health endpoint.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Its path (or `grpc:<service>`).
    pub path: String,
    /// Cached snapshot or synchronous calls.
    pub mode: EndpointMode,
    /// Indices into [`App::checks`].
    pub checks: Vec<usize>,
    /// Per-call timeout in synchronous mode (`None`: the handler waits as long as it takes).
    pub timeout: Option<Millis>,
    /// In synchronous mode, whether the calls run together (`Promise.allSettled`) or in turn.
    pub parallel: bool,
}

/// What a check looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckTarget {
    /// A dependency, by index into [`Scenario::dependencies`].
    Dependency(usize),
    /// Something inside the process.
    Internal(InternalKind),
}

/// A check, as its poller runs it (cached mode) or as a handler calls it (sync mode).
#[derive(Debug, Clone)]
pub struct Check {
    /// Its name.
    pub name: String,
    /// What it looks at.
    pub target: CheckTarget,
    /// What a failure does to readiness.
    pub tier: Tier,
    /// Poll interval.
    pub interval: Millis,
    /// Poll (or call) timeout; `None` waits forever.
    pub timeout: Option<Millis>,
    /// Random spread applied to each wait between polls.
    pub jitter: Millis,
    /// Consecutive successes to turn healthy.
    pub rise: u32,
    /// Consecutive failures to turn unhealthy.
    pub fall: u32,
    /// A result older than this reads as a failure.
    pub staleness: Option<Millis>,
    /// Whether the first healthy state at boot needs a full `rise` run.
    pub boot_requires_rise: bool,
    /// Passive reports: after this many consecutive real requests that failed on the check's
    /// dependency, the check is failed at once and re-polled (probity's `passive_failures`);
    /// every further multiple fails it again. `None`: the application reports nothing.
    pub passive_failure_threshold: Option<u32>,
    /// Whether the call takes a connection from the app's pool.
    pub uses_pool: bool,
    /// For a deadlock detector, the time it takes to see a deadlock.
    pub detect_after: Millis,
}

/// A dependency the application calls.
#[derive(Debug, Clone)]
pub struct Dependency {
    /// Its name.
    pub name: String,
    /// Normal response time.
    pub latency: Millis,
    /// What calls do while it is down, unless a fault says otherwise.
    pub outage: OutageBehaviour,
    /// How long a call to an unreachable host takes to fail when the caller sets no timeout.
    pub connect_timeout: Millis,
    /// Dependencies its own health endpoint checks: a health check of it fails when any of
    /// these is down, though its real requests still work (transitive health checks).
    pub health_depends_on: Vec<usize>,
    /// The herd model: a dependency overloaded by too many simultaneous cold starts.
    pub herd: Option<Herd>,
}

/// A dependency that too many simultaneous cold starts overload.
#[derive(Debug, Clone, Copy)]
pub struct Herd {
    /// Booting instances it serves without slowing down.
    pub max_concurrent_boots: u32,
    /// Response time while overloaded.
    pub overload_latency: Millis,
}

/// The user traffic.
#[derive(Debug, Clone)]
pub struct Requests {
    /// Requests per second across the fleet.
    pub rate: f64,
    /// A request waiting longer than this fails.
    pub timeout: Millis,
    /// Request classes and what each needs.
    pub mix: Vec<RequestClass>,
    /// Distinct users (for consistent hashing).
    pub users: u32,
    /// Long-lived client connections (`None`: every request opens a new connection).
    pub keep_alive: Option<KeepAlive>,
}

/// Traffic from a fixed set of keep-alive client connections, each pinned to the pod it
/// connected to until the connection ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeepAlive {
    /// Client connections; each carries `rate / clients` requests per second.
    pub clients: u32,
    /// A connection's age at which the client closes it and connects again (its pool's
    /// maximum connection age or idle timeout).
    pub connection_lifetime: Millis,
}

impl KeepAlive {
    /// Time between two requests on one connection, at `rate` requests per second across
    /// all connections (at least 1 ms).
    pub fn request_gap(&self, rate: f64) -> Millis {
        ((self.clients as f64 * 1000.0 / rate).round() as Millis).max(1)
    }
}

/// A class of requests.
#[derive(Debug, Clone)]
pub struct RequestClass {
    /// Fraction of all requests.
    pub share: f64,
    /// Dependencies every request of this class calls.
    pub needs: Vec<usize>,
}

/// What routes requests to pods.
#[derive(Debug, Clone)]
pub enum Routing {
    /// A ClusterIP Service through kube-proxy.
    KubernetesService {
        /// Time from a pod's readiness change to kube-proxy applying it.
        propagation: Millis,
    },
    /// HAProxy with `check` on every server.
    Haproxy(HaproxySettings),
    /// Envoy with active health checking.
    Envoy(EnvoySettings),
    /// An AWS Application Load Balancer target group.
    Alb(AlbSettings),
    /// Consistent hashing by user over a ring of pods.
    ConsistentHash {
        /// Points per pod on the ring.
        virtual_nodes: u32,
        /// What decides ring membership.
        membership: Membership,
        /// Endpoint propagation delay when membership follows endpoints.
        propagation: Millis,
    },
}

/// HAProxy's check settings.
#[derive(Debug, Clone, Copy)]
pub struct HaproxySettings {
    /// The endpoint the check calls.
    pub check: Handler,
    /// `inter`.
    pub inter: Millis,
    /// `fastinter`.
    pub fastinter: Millis,
    /// `downinter`.
    pub downinter: Millis,
    /// `rise`.
    pub rise: u32,
    /// `fall`.
    pub fall: u32,
    /// The check timeout (`timeout check`, else `inter`).
    pub timeout: Millis,
}

/// Envoy's active health checking, panic threshold and outlier detection.
#[derive(Debug, Clone, Copy)]
pub struct EnvoySettings {
    /// The endpoint the health check calls.
    pub check: Handler,
    /// `interval`.
    pub interval: Millis,
    /// `timeout`.
    pub timeout: Millis,
    /// `unhealthy_threshold`.
    pub unhealthy_threshold: u32,
    /// `healthy_threshold`.
    pub healthy_threshold: u32,
    /// `healthy_panic_threshold`, in percent.
    pub panic_threshold: f64,
    /// Outlier detection, when configured.
    pub outlier: Option<Outlier>,
}

/// An ALB target group's health check.
#[derive(Debug, Clone, Copy)]
pub struct AlbSettings {
    /// The health-check path's endpoint.
    pub check: Handler,
    /// `HealthCheckIntervalSeconds`.
    pub interval: Millis,
    /// `HealthCheckTimeoutSeconds`.
    pub timeout: Millis,
    /// `HealthyThresholdCount`.
    pub healthy_threshold: u32,
    /// `UnhealthyThresholdCount`.
    pub unhealthy_threshold: u32,
    /// Load-balancer nodes; each checks every target.
    pub nodes: u32,
}

impl Routing {
    /// A short name for reports.
    pub fn name(&self) -> &'static str {
        match self {
            Routing::KubernetesService { .. } => "kubernetes-service",
            Routing::Haproxy(_) => "haproxy",
            Routing::Envoy(_) => "envoy",
            Routing::Alb(_) => "alb",
            Routing::ConsistentHash { .. } => "consistent-hash",
        }
    }
}

/// Envoy outlier detection (consecutive 5xx).
#[derive(Debug, Clone, Copy)]
pub struct Outlier {
    /// `consecutive_5xx`.
    pub consecutive_5xx: u32,
    /// `base_ejection_time`.
    pub base_ejection_time: Millis,
    /// `max_ejection_time`.
    pub max_ejection_time: Millis,
    /// `max_ejection_percent`.
    pub max_ejection_percent: f64,
}

/// A fault or operator action on the timeline.
#[derive(Debug, Clone)]
pub struct Fault {
    /// When it begins.
    pub at: Millis,
    /// When it ends, if it ends by itself.
    pub until: Option<Millis>,
    /// What it is.
    pub kind: FaultKind,
}

/// The kinds of fault.
#[derive(Debug, Clone)]
pub enum FaultKind {
    /// A shared dependency is down.
    DependencyOutage {
        /// The dependency.
        dependency: usize,
        /// Hang or refuse.
        behaviour: OutageBehaviour,
    },
    /// A dependency answers, slowly.
    SlowDependency {
        /// The dependency.
        dependency: usize,
        /// Its response time.
        latency: Millis,
    },
    /// A dependency goes down for `down` at the start of every `period`, and in between each
    /// call fails with probability `flicker`.
    FlappingDependency {
        /// The dependency.
        dependency: usize,
        /// Cycle length.
        period: Millis,
        /// Down time at the start of each cycle.
        down: Millis,
        /// Failure probability of a call while nominally up.
        flicker: f64,
    },
    /// One instance's connection pool to a dependency is exhausted (a leak); a restart cures it.
    PoolExhausted {
        /// The instance.
        instance: usize,
        /// The dependency.
        dependency: usize,
    },
    /// The request handlers of one instance deadlock; a restart cures it.
    Deadlock {
        /// The instance.
        instance: usize,
        /// Whether SIGTERM goes unhandled (the kill waits for SIGKILL).
        ignores_sigterm: bool,
    },
    /// One instance's async runtime stops making progress; nothing it serves answers, SIGTERM
    /// included.
    RuntimeStall {
        /// The instance.
        instance: usize,
    },
    /// An operator takes one instance out of rotation by hand.
    ManualDrain {
        /// The instance.
        instance: usize,
    },
    /// An operator replaces every pod, optionally with some probes removed.
    ManualFix {
        /// Probes the new pods no longer have.
        remove_probes: Vec<ProbeKind>,
    },
}

impl FaultKind {
    /// The dependency a fault on a shared dependency is about (an outage, a slow or a
    /// flapping dependency); `None` for faults in one pod and operator actions.
    pub fn shared_dependency(&self) -> Option<usize> {
        match self {
            FaultKind::DependencyOutage { dependency, .. }
            | FaultKind::SlowDependency { dependency, .. }
            | FaultKind::FlappingDependency { dependency, .. } => Some(*dependency),
            _ => None,
        }
    }

    /// Whether this is an operator action rather than a fault.
    pub fn is_operator_action(&self) -> bool {
        matches!(
            self,
            FaultKind::ManualDrain { .. } | FaultKind::ManualFix { .. }
        )
    }

    /// The kebab-case name used in scenario files.
    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::DependencyOutage { .. } => "dependency-outage",
            FaultKind::SlowDependency { .. } => "slow-dependency",
            FaultKind::FlappingDependency { .. } => "flapping-dependency",
            FaultKind::PoolExhausted { .. } => "pool-exhausted",
            FaultKind::Deadlock { .. } => "deadlock",
            FaultKind::RuntimeStall { .. } => "runtime-stall",
            FaultKind::ManualDrain { .. } => "manual-drain",
            FaultKind::ManualFix { .. } => "manual-fix",
        }
    }
}

/// How results are measured.
#[derive(Debug, Clone, Copy)]
pub struct Measure {
    /// Width of one time-series bucket.
    pub resolution: Millis,
    /// Window of the peak error rate (like Prometheus `rate(…[window])`).
    pub rate_window: Millis,
    /// Fleet error rate at or above which a bucket counts as outage.
    pub outage_threshold: f64,
    /// Fleet error rate below which the fleet counts as recovered.
    pub recovered_below: f64,
}

// ---------------------------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------------------------

/// The syntax of a scenario file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// YAML 1.2.
    Yaml,
    /// TOML 1.0.
    Toml,
}

impl Format {
    /// The format a file name implies, from its extension.
    pub fn from_path(path: &Path) -> Option<Format> {
        match path.extension().and_then(|ext| ext.to_str()) {
            Some("yaml" | "yml") => Some(Format::Yaml),
            Some("toml") => Some(Format::Toml),
            _ => None,
        }
    }
}

impl Scenario {
    /// Reads and checks a scenario file (YAML or TOML, by extension).
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let Some(format) = Format::from_path(path) else {
            return Err(ScenarioError::Field {
                file: path.to_path_buf(),
                field: ".".into(),
                reason: "unknown file type: a scenario ends in .yaml, .yml or .toml".into(),
            });
        };
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read {
            file: path.to_path_buf(),
            source,
        })?;
        Scenario::parse(&text, format, path)
    }

    /// Parses and checks scenario text. `file` names the source in errors, and relative paths
    /// inside the scenario (a contract) are resolved against its directory.
    pub fn parse(text: &str, format: Format, file: &Path) -> Result<Scenario, ScenarioError> {
        let value: serde_json::Value = match format {
            Format::Yaml => {
                serde_saphyr::from_str(text).map_err(|error| ScenarioError::Syntax {
                    file: file.to_path_buf(),
                    format: "YAML",
                    reason: error.to_string(),
                })?
            }
            Format::Toml => toml::from_str(text).map_err(|error| ScenarioError::Syntax {
                file: file.to_path_buf(),
                format: "TOML",
                reason: error.to_string().trim_end().to_string(),
            })?,
        };
        let raw: ScenarioFile = serde_path_to_error::deserialize(value).map_err(|error| {
            let path = error.path().to_string();
            ScenarioError::Field {
                file: file.to_path_buf(),
                field: if path.is_empty() { ".".into() } else { path },
                reason: error.into_inner().to_string(),
            }
        })?;
        let base = file.parent().unwrap_or(Path::new("."));
        validate(raw, base).map_err(|invalid| ScenarioError::Field {
            file: file.to_path_buf(),
            field: invalid.field,
            reason: invalid.reason,
        })
    }
}

type Checked<T> = Result<T, Invalid>;

fn validate(raw: ScenarioFile, base: &Path) -> Checked<Scenario> {
    if raw.name.trim().is_empty() {
        return Err(Invalid::new("name", "must not be empty"));
    }
    let duration = raw.duration.as_millis();
    if duration == 0 {
        return Err(Invalid::new("duration", "must be longer than zero"));
    }
    if duration > 48 * 3_600_000 {
        return Err(Invalid::new("duration", "at most 48h can be simulated"));
    }

    // Fleet.
    let replicas = raw.fleet.replicas as usize;
    if replicas == 0 || replicas > 100_000 {
        return Err(Invalid::new(
            "fleet.replicas",
            "must be between 1 and 100000",
        ));
    }
    let names = if raw.fleet.names.is_empty() {
        (0..replicas).map(|i| format!("pod-{i}")).collect()
    } else if raw.fleet.names.len() == replicas {
        raw.fleet.names.clone()
    } else {
        return Err(Invalid::new(
            "fleet.names",
            format!(
                "{} names for {} replicas: give one name per replica or none",
                raw.fleet.names.len(),
                replicas
            ),
        ));
    };
    let termination_grace =
        kube::termination::pod_grace_period(raw.fleet.termination_grace_period_seconds)
            .map_err(|violation| violation.under("fleet"))
            .map_err(Invalid::from)?
            .as_millis() as Millis;
    let fleet = Fleet {
        replicas,
        names,
        start: raw.fleet.start,
        stagger: raw.fleet.stagger.as_millis(),
        termination_grace,
    };

    // Dependencies: name order gives indices.
    let dependency_names: Vec<String> = raw.dependencies.keys().cloned().collect();
    let dependency_index = |name: &str, field: &str| -> Checked<usize> {
        dependency_names
            .iter()
            .position(|known| known == name)
            .ok_or_else(|| {
                Invalid::new(
                    field,
                    format!(
                        "unknown dependency `{name}` (declared: {})",
                        list_or_none(&dependency_names)
                    ),
                )
            })
    };
    let mut dependencies = Vec::with_capacity(raw.dependencies.len());
    for (name, dependency) in &raw.dependencies {
        let field = format!("dependencies.{name}");
        let mut health_depends_on = Vec::new();
        for (i, other) in dependency.health_depends_on.iter().enumerate() {
            let index = dependency_index(other, &format!("{field}.health_depends_on[{i}]"))?;
            if dependency_names[index] == *name {
                return Err(Invalid::new(
                    format!("{field}.health_depends_on[{i}]"),
                    "a dependency cannot depend on itself",
                ));
            }
            health_depends_on.push(index);
        }
        let herd = match &dependency.herd {
            None => None,
            Some(herd) => {
                if herd.max_concurrent_boots == 0 {
                    return Err(Invalid::new(
                        format!("{field}.herd.max_concurrent_boots"),
                        "must be at least 1",
                    ));
                }
                Some(Herd {
                    max_concurrent_boots: herd.max_concurrent_boots,
                    overload_latency: herd.overload_latency.as_millis(),
                })
            }
        };
        dependencies.push(Dependency {
            name: name.clone(),
            latency: dependency.latency.as_millis(),
            outage: dependency.outage,
            connect_timeout: dependency.connect_timeout.as_millis(),
            health_depends_on,
            herd,
        });
    }

    // Application: a contract first, then the scenario's own endpoints and checks on top.
    let mut check_files: BTreeMap<String, (String, CheckFile)> = BTreeMap::new();
    let mut endpoint_files: BTreeMap<String, (String, EndpointFile)> = BTreeMap::new();
    let mut drain_delay = raw.app.drain_delay.map(Span::as_millis);
    if let Some(contract_path) = &raw.app.contract {
        let path = base.join(contract_path);
        let text = std::fs::read_to_string(&path).map_err(|error| {
            Invalid::new(
                "app.contract",
                format!("cannot read {}: {error}", path.display()),
            )
        })?;
        let contract = Contract::from_json(&text).map_err(|error| {
            Invalid::new(
                "app.contract",
                format!("{} is not a probity contract: {error}", path.display()),
            )
        })?;
        import_contract(
            &contract,
            &mut check_files,
            &mut endpoint_files,
            &dependency_names,
        )?;
        if drain_delay.is_none() && contract.shutdown.drain_delay_ms > 0 {
            drain_delay = Some(contract.shutdown.drain_delay_ms);
        }
    }
    for (name, check) in &raw.app.checks {
        check_files.insert(name.clone(), (format!("app.checks.{name}"), check.clone()));
    }
    for (path, endpoint) in &raw.app.endpoints {
        endpoint_files.insert(
            path.clone(),
            (format!("app.endpoints.{path}"), endpoint.clone()),
        );
    }

    let mut checks: Vec<Check> = Vec::new();
    let mut check_index: BTreeMap<String, usize> = BTreeMap::new();
    // Where each check was declared, for errors found once the endpoints are known.
    let mut check_fields: Vec<String> = Vec::new();
    for (name, (field, check)) in &check_files {
        let target = match (&check.dependency, check.internal) {
            (Some(dependency), None) => CheckTarget::Dependency(dependency_index(
                dependency,
                &format!("{field}.dependency"),
            )?),
            (None, Some(kind)) => CheckTarget::Internal(kind),
            (Some(_), Some(_)) => {
                return Err(Invalid::new(
                    field.clone(),
                    "a check has either `dependency` or `internal`, not both",
                ));
            }
            (None, None) => {
                return Err(Invalid::new(
                    field.clone(),
                    "a check needs `dependency: NAME` or `internal: deadlock|runtime_stall|shutdown|boot|app_state`",
                ));
            }
        };
        checked_check(check, field)?;
        check_index.insert(name.clone(), checks.len());
        check_fields.push(field.clone());
        checks.push(build_check(name, target, check));
    }

    let mut endpoints = Vec::new();
    let mut endpoint_index: BTreeMap<String, usize> = BTreeMap::new();
    for (path, (field, endpoint)) in &endpoint_files {
        let mut indices = Vec::new();
        for (i, name) in endpoint.checks.iter().enumerate() {
            let check_field = format!("{field}.checks[{i}]");
            let index = match check_index.get(name) {
                Some(index) => *index,
                None => {
                    // An undeclared name may be a dependency (checked with defaults) or a
                    // built-in internal condition.
                    let target = if let Some(dep) = dependency_names.iter().position(|d| d == name)
                    {
                        CheckTarget::Dependency(dep)
                    } else if let Some(kind) = internal_by_name(name) {
                        CheckTarget::Internal(kind)
                    } else {
                        return Err(Invalid::new(
                            check_field,
                            format!(
                                "`{name}` is neither a declared check (app.checks: {}), a dependency ({}), nor a built-in (deadlock, runtime_stall, shutdown, boot)",
                                list_or_none(&check_index.keys().cloned().collect::<Vec<_>>()),
                                list_or_none(&dependency_names)
                            ),
                        ));
                    };
                    check_index.insert(name.clone(), checks.len());
                    checks.push(build_check(name, target, &CheckFile::default()));
                    checks.len() - 1
                }
            };
            indices.push(index);
        }
        if let Some(timeout) = endpoint.timeout
            && timeout.as_millis() == 0
        {
            return Err(Invalid::new(
                format!("{field}.timeout"),
                "must be longer than zero (omit it for no timeout)",
            ));
        }
        endpoint_index.insert(path.clone(), endpoints.len());
        endpoints.push(Endpoint {
            path: path.clone(),
            mode: endpoint.mode,
            checks: indices,
            timeout: endpoint.timeout.map(Span::as_millis),
            parallel: endpoint.parallel,
        });
    }
    // Passive reports fail the check in the pollers' snapshot; only `cached` endpoints read it.
    // A contract's thresholds are kept as written (its endpoints are all cached).
    for (index, field) in check_fields.iter().enumerate() {
        let check = &checks[index];
        if check.passive_failure_threshold.is_some()
            && field.starts_with("app.checks.")
            && !endpoints.iter().any(|endpoint| {
                endpoint.mode == EndpointMode::Cached && endpoint.checks.contains(&index)
            })
        {
            return Err(Invalid::new(
                format!("{field}.passive_failure_threshold"),
                format!(
                    "passive reports fail the check in the pollers' snapshot, and no endpoint with `mode: cached` lists `{}` (a `sync` endpoint calls the dependency itself)",
                    check.name
                ),
            ));
        }
    }

    let mut boot_needs = Vec::new();
    for (i, name) in raw.app.boot_needs.iter().enumerate() {
        boot_needs.push(dependency_index(name, &format!("app.boot_needs[{i}]"))?);
    }
    if let Some(0) = raw.app.pool_size {
        return Err(Invalid::new("app.pool_size", "must be at least 1"));
    }
    if raw.app.close_connections_when_unready
        && raw
            .container
            .readiness_probe
            .as_ref()
            .is_none_or(|probe| probe.http_get.is_none() && probe.grpc.is_none())
    {
        return Err(Invalid::new(
            "app.close_connections_when_unready",
            "the server closes connections while its readiness endpoint fails, so it needs container.readinessProbe with httpGet or grpc",
        ));
    }
    let app = App {
        boot: raw.app.boot.as_millis(),
        listen_during_boot: raw.app.listen_during_boot,
        exit_after_sigterm: raw.app.exit_after_sigterm.map_or(0, Span::as_millis),
        drain_delay,
        pool_size: raw.app.pool_size,
        max_inflight_checks: raw.app.max_inflight_checks,
        boot_needs,
        close_connections_when_unready: raw.app.close_connections_when_unready,
        endpoints,
        checks,
    };

    // Probes.
    let probe = |file: &Option<kube::probe::ProbeSpec>,
                 kind: ProbeKind,
                 field: &str|
     -> Checked<Option<ProbeSpec>> {
        match file {
            None => Ok(None),
            Some(file) => {
                checked_probe(file, kind, field, &endpoint_index, &app.endpoints).map(Some)
            }
        }
    };
    let probes = Probes {
        liveness: probe(
            &raw.container.liveness_probe,
            ProbeKind::Liveness,
            "container.livenessProbe",
        )?,
        readiness: probe(
            &raw.container.readiness_probe,
            ProbeKind::Readiness,
            "container.readinessProbe",
        )?,
        startup: probe(
            &raw.container.startup_probe,
            ProbeKind::Startup,
            "container.startupProbe",
        )?,
    };
    let pre_stop_sleep = match raw
        .container
        .lifecycle
        .as_ref()
        .and_then(|lifecycle| lifecycle.pre_stop.as_ref())
    {
        None => 0,
        Some(pre_stop) => {
            let grace_seconds = (termination_grace / 1000) as i64;
            if let Some(violation) = pre_stop.validate(grace_seconds).into_iter().next() {
                return Err(violation.under("container.lifecycle.preStop").into());
            }
            pre_stop.known_duration().as_millis() as Millis
        }
    };

    // Requests.
    let requests = {
        let r = &raw.requests;
        if !(r.rate.is_finite() && r.rate > 0.0) {
            return Err(Invalid::new(
                "requests.rate",
                "must be a positive number of requests per second",
            ));
        }
        if r.users == 0 {
            return Err(Invalid::new("requests.users", "must be at least 1"));
        }
        let mut mix = Vec::new();
        if r.mix.is_empty() {
            mix.push(RequestClass {
                share: 1.0,
                needs: (0..dependencies.len()).collect(),
            });
        } else {
            let mut total = 0.0;
            for (i, class) in r.mix.iter().enumerate() {
                if !(class.share.is_finite() && class.share >= 0.0) {
                    return Err(Invalid::new(
                        format!("requests.mix[{i}].share"),
                        "must be ≥ 0",
                    ));
                }
                total += class.share;
                let mut needs = Vec::new();
                for (j, name) in class.needs.iter().enumerate() {
                    needs.push(dependency_index(
                        name,
                        &format!("requests.mix[{i}].needs[{j}]"),
                    )?);
                }
                mix.push(RequestClass {
                    share: class.share,
                    needs,
                });
            }
            if (total - 1.0).abs() > 1e-6 {
                return Err(Invalid::new(
                    "requests.mix",
                    format!("shares add up to {total}, they must add up to 1"),
                ));
            }
        }
        let keep_alive = match &r.keep_alive {
            None => None,
            Some(k) => {
                if !(1..=100_000).contains(&k.clients) {
                    return Err(Invalid::new(
                        "requests.keep_alive.clients",
                        "must be between 1 and 100000",
                    ));
                }
                positive(
                    k.connection_lifetime,
                    "requests.keep_alive.connection_lifetime",
                )?;
                if !matches!(raw.routing, RoutingFile::KubernetesService { .. }) {
                    return Err(Invalid::new(
                        "requests.keep_alive",
                        "modelled for routing kind kubernetes-service only (the proxies balance each request over their own connections)",
                    ));
                }
                Some(KeepAlive {
                    clients: k.clients,
                    connection_lifetime: k.connection_lifetime.as_millis(),
                })
            }
        };
        Requests {
            rate: r.rate,
            timeout: r.timeout.as_millis(),
            mix,
            users: r.users,
            keep_alive,
        }
    };

    // Routing.
    let lb_handler = |path: &str, field: &str| -> Checked<Handler> {
        endpoint_index
            .get(path)
            .map(|&endpoint| Handler::Http { endpoint })
            .ok_or_else(|| {
                Invalid::new(
                    field,
                    format!(
                        "no endpoint `{path}` in app.endpoints (declared: {})",
                        list_or_none(&endpoint_index.keys().cloned().collect::<Vec<_>>())
                    ),
                )
            })
    };
    let routing = match &raw.routing {
        RoutingFile::KubernetesService { propagation } => Routing::KubernetesService {
            propagation: propagation.as_millis(),
        },
        RoutingFile::Haproxy {
            check_path,
            inter,
            fastinter,
            downinter,
            rise,
            fall,
            timeout_check,
        } => {
            positive(*inter, "routing.inter")?;
            at_least_one(*rise, "routing.rise")?;
            at_least_one(*fall, "routing.fall")?;
            Routing::Haproxy(HaproxySettings {
                check: lb_handler(check_path, "routing.check_path")?,
                inter: inter.as_millis(),
                fastinter: fastinter.unwrap_or(*inter).as_millis().max(1),
                downinter: downinter.unwrap_or(*inter).as_millis().max(1),
                rise: *rise,
                fall: *fall,
                timeout: timeout_check.unwrap_or(*inter).as_millis().max(1),
            })
        }
        RoutingFile::Envoy {
            check_path,
            interval,
            timeout,
            unhealthy_threshold,
            healthy_threshold,
            panic_threshold,
            outlier_detection,
        } => {
            positive(*interval, "routing.interval")?;
            positive(*timeout, "routing.timeout")?;
            at_least_one(*unhealthy_threshold, "routing.unhealthy_threshold")?;
            at_least_one(*healthy_threshold, "routing.healthy_threshold")?;
            if !(0.0..=100.0).contains(panic_threshold) {
                return Err(Invalid::new(
                    "routing.panic_threshold",
                    "a percentage between 0 and 100",
                ));
            }
            let outlier = match outlier_detection {
                None => None,
                Some(o) => {
                    at_least_one(
                        o.consecutive_5xx,
                        "routing.outlier_detection.consecutive_5xx",
                    )?;
                    if !(0.0..=100.0).contains(&o.max_ejection_percent) {
                        return Err(Invalid::new(
                            "routing.outlier_detection.max_ejection_percent",
                            "a percentage between 0 and 100",
                        ));
                    }
                    Some(Outlier {
                        consecutive_5xx: o.consecutive_5xx,
                        base_ejection_time: o.base_ejection_time.as_millis(),
                        max_ejection_time: o
                            .max_ejection_time
                            .as_millis()
                            .max(o.base_ejection_time.as_millis()),
                        max_ejection_percent: o.max_ejection_percent,
                    })
                }
            };
            Routing::Envoy(EnvoySettings {
                check: lb_handler(check_path, "routing.check_path")?,
                interval: interval.as_millis(),
                timeout: timeout.as_millis(),
                unhealthy_threshold: *unhealthy_threshold,
                healthy_threshold: *healthy_threshold,
                panic_threshold: *panic_threshold,
                outlier,
            })
        }
        RoutingFile::Alb {
            check_path,
            interval,
            timeout,
            healthy_threshold,
            unhealthy_threshold,
            nodes,
        } => {
            let seconds = interval.as_millis() / 1000;
            if !(5..=300).contains(&seconds) || interval.as_millis() % 1000 != 0 {
                return Err(Invalid::new(
                    "routing.interval",
                    "AWS accepts 5 to 300 whole seconds",
                ));
            }
            let timeout_s = timeout.as_millis() / 1000;
            if !(2..=120).contains(&timeout_s) || timeout.as_millis() % 1000 != 0 {
                return Err(Invalid::new(
                    "routing.timeout",
                    "AWS accepts 2 to 120 whole seconds",
                ));
            }
            for (value, field) in [
                (*healthy_threshold, "routing.healthy_threshold"),
                (*unhealthy_threshold, "routing.unhealthy_threshold"),
            ] {
                if !(2..=10).contains(&value) {
                    return Err(Invalid::new(field, "AWS accepts 2 to 10"));
                }
            }
            at_least_one(*nodes, "routing.nodes")?;
            Routing::Alb(AlbSettings {
                check: lb_handler(check_path, "routing.check_path")?,
                interval: interval.as_millis(),
                timeout: timeout.as_millis(),
                healthy_threshold: *healthy_threshold,
                unhealthy_threshold: *unhealthy_threshold,
                nodes: *nodes,
            })
        }
        RoutingFile::ConsistentHash {
            virtual_nodes,
            membership,
            propagation,
        } => {
            if *virtual_nodes == 0 || *virtual_nodes > 10_000 {
                return Err(Invalid::new(
                    "routing.virtual_nodes",
                    "must be between 1 and 10000",
                ));
            }
            Routing::ConsistentHash {
                virtual_nodes: *virtual_nodes,
                membership: *membership,
                propagation: propagation.as_millis(),
            }
        }
    };

    // Faults.
    let instance = |reference: &InstanceRefFile, field: &str| -> Checked<usize> {
        match reference {
            InstanceRefFile::Index(index) if (*index as usize) < fleet.replicas => {
                Ok(*index as usize)
            }
            InstanceRefFile::Index(index) => Err(Invalid::new(
                field,
                format!(
                    "instance {index} does not exist: the fleet has {} (0-based)",
                    fleet.replicas
                ),
            )),
            InstanceRefFile::Name(name) => {
                fleet.names.iter().position(|n| n == name).ok_or_else(|| {
                    Invalid::new(field, format!("no instance named `{name}` in fleet.names"))
                })
            }
        }
    };
    let mut faults = Vec::new();
    for (i, fault) in raw.faults.iter().enumerate() {
        let field = format!("faults[{i}]");
        let end = |at: Span, duration: Option<Span>| -> Checked<Option<Millis>> {
            match duration {
                None => Ok(None),
                Some(d) if d.as_millis() == 0 => Err(Invalid::new(
                    format!("{field}.duration"),
                    "must be longer than zero (omit it for a fault that lasts)",
                )),
                Some(d) => Ok(Some(at.as_millis() + d.as_millis())),
            }
        };
        let (at, until, kind) = match fault {
            FaultFile::DependencyOutage {
                dependency,
                at,
                duration,
                behaviour,
            } => {
                let dependency = dependency_index(dependency, &format!("{field}.dependency"))?;
                (
                    *at,
                    end(*at, *duration)?,
                    FaultKind::DependencyOutage {
                        dependency,
                        behaviour: behaviour.unwrap_or(dependencies[dependency].outage),
                    },
                )
            }
            FaultFile::SlowDependency {
                dependency,
                at,
                duration,
                latency,
            } => (
                *at,
                end(*at, *duration)?,
                FaultKind::SlowDependency {
                    dependency: dependency_index(dependency, &format!("{field}.dependency"))?,
                    latency: latency.as_millis(),
                },
            ),
            FaultFile::FlappingDependency {
                dependency,
                at,
                duration,
                period,
                down,
                flicker,
            } => {
                if period.as_millis() == 0 {
                    return Err(Invalid::new(
                        format!("{field}.period"),
                        "must be longer than zero",
                    ));
                }
                if down > period {
                    return Err(Invalid::new(
                        format!("{field}.down"),
                        "must not exceed the period",
                    ));
                }
                if !(0.0..=1.0).contains(flicker) {
                    return Err(Invalid::new(
                        format!("{field}.flicker"),
                        "a probability between 0 and 1",
                    ));
                }
                (
                    *at,
                    end(*at, *duration)?,
                    FaultKind::FlappingDependency {
                        dependency: dependency_index(dependency, &format!("{field}.dependency"))?,
                        period: period.as_millis(),
                        down: down.as_millis(),
                        flicker: *flicker,
                    },
                )
            }
            FaultFile::PoolExhausted {
                instance: reference,
                dependency,
                at,
            } => (
                *at,
                None,
                FaultKind::PoolExhausted {
                    instance: instance(reference, &format!("{field}.instance"))?,
                    dependency: dependency_index(dependency, &format!("{field}.dependency"))?,
                },
            ),
            FaultFile::Deadlock {
                instance: reference,
                at,
                ignores_sigterm,
            } => (
                *at,
                None,
                FaultKind::Deadlock {
                    instance: instance(reference, &format!("{field}.instance"))?,
                    ignores_sigterm: *ignores_sigterm,
                },
            ),
            FaultFile::RuntimeStall {
                instance: reference,
                at,
            } => (
                *at,
                None,
                FaultKind::RuntimeStall {
                    instance: instance(reference, &format!("{field}.instance"))?,
                },
            ),
            FaultFile::ManualDrain {
                instance: reference,
                at,
            } => (
                *at,
                None,
                FaultKind::ManualDrain {
                    instance: instance(reference, &format!("{field}.instance"))?,
                },
            ),
            FaultFile::ManualFix { at, remove_probes } => (
                *at,
                None,
                FaultKind::ManualFix {
                    remove_probes: remove_probes.clone(),
                },
            ),
        };
        if at.as_millis() >= duration {
            return Err(Invalid::new(
                format!("{field}.at"),
                format!("{at} is not before the end of the run ({})", Span(duration)),
            ));
        }
        faults.push(Fault {
            at: at.as_millis(),
            until,
            kind,
        });
    }
    faults.sort_by_key(|fault| fault.at);

    // Measurement.
    let m = &raw.measure;
    if m.resolution.as_millis() < 100 {
        return Err(Invalid::new("measure.resolution", "must be at least 100ms"));
    }
    let rate_window = m.rate_window.unwrap_or(m.resolution).as_millis();
    if rate_window < m.resolution.as_millis() {
        return Err(Invalid::new(
            "measure.rate_window",
            "must not be shorter than measure.resolution",
        ));
    }
    for (value, field) in [
        (m.outage_threshold, "measure.outage_threshold"),
        (m.recovered_below, "measure.recovered_below"),
    ] {
        if !(0.0..=1.0).contains(&value) {
            return Err(Invalid::new(field, "a fraction between 0 and 1"));
        }
    }
    let measure = Measure {
        resolution: m.resolution.as_millis(),
        rate_window,
        outage_threshold: m.outage_threshold,
        recovered_below: m.recovered_below,
    };

    Ok(Scenario {
        name: raw.name,
        description: raw.description,
        assumptions: raw.assumptions,
        seed: raw.seed,
        duration,
        fleet,
        kubelet: KubeletSettings {
            backoff_requeue: raw.kubelet.backoff_requeue,
        },
        probes,
        pre_stop_sleep,
        app,
        dependencies,
        requests,
        routing,
        faults,
        measure,
    })
}

fn list_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

fn positive(span: Span, field: &str) -> Checked<()> {
    if span.as_millis() == 0 {
        Err(Invalid::new(field, "must be longer than zero"))
    } else {
        Ok(())
    }
}

fn at_least_one(value: u32, field: &str) -> Checked<()> {
    if value == 0 {
        Err(Invalid::new(field, "must be at least 1"))
    } else {
        Ok(())
    }
}

fn internal_by_name(name: &str) -> Option<InternalKind> {
    match name {
        "deadlock" => Some(InternalKind::Deadlock),
        "runtime_stall" => Some(InternalKind::RuntimeStall),
        "shutdown" => Some(InternalKind::Shutdown),
        "boot" => Some(InternalKind::Boot),
        _ => None,
    }
}

fn checked_check(check: &CheckFile, field: &str) -> Checked<()> {
    positive(check.interval, &format!("{field}.interval"))?;
    at_least_one(check.rise, &format!("{field}.rise"))?;
    at_least_one(check.fall, &format!("{field}.fall"))?;
    if let Some(timeout) = check.timeout {
        positive(timeout, &format!("{field}.timeout"))?;
        // The same rule probity's registry enforces: a timeout at or past the interval piles
        // polls up instead of failing them.
        if timeout >= check.interval {
            return Err(Invalid::new(
                format!("{field}.timeout"),
                format!(
                    "{timeout} is not shorter than the interval ({}): a check's timeout must be strictly shorter than its poll interval",
                    check.interval
                ),
            ));
        }
    }
    if check.jitter >= check.interval {
        return Err(Invalid::new(
            format!("{field}.jitter"),
            "must be shorter than the interval",
        ));
    }
    match check.passive_failure_threshold {
        Some(0) => {
            return Err(Invalid::new(
                format!("{field}.passive_failure_threshold"),
                "must be at least 1",
            ));
        }
        Some(_) if check.internal.is_some() => {
            return Err(Invalid::new(
                format!("{field}.passive_failure_threshold"),
                "passive reports count failed calls to a dependency; an `internal` check makes none",
            ));
        }
        _ => {}
    }
    Ok(())
}

fn build_check(name: &str, target: CheckTarget, check: &CheckFile) -> Check {
    Check {
        name: name.to_string(),
        target,
        tier: check.tier,
        interval: check.interval.as_millis(),
        timeout: check.timeout.map(Span::as_millis),
        jitter: check.jitter.as_millis(),
        rise: check.rise,
        fall: check.fall,
        staleness: check.staleness.map(Span::as_millis),
        boot_requires_rise: check.boot_requires_rise,
        passive_failure_threshold: check.passive_failure_threshold,
        uses_pool: check.uses_pool,
        detect_after: check.detect_after.as_millis(),
    }
}

fn import_contract(
    contract: &Contract,
    checks: &mut BTreeMap<String, (String, CheckFile)>,
    endpoints: &mut BTreeMap<String, (String, EndpointFile)>,
    dependency_names: &[String],
) -> Checked<()> {
    for check in &contract.checks {
        let field = format!("app.contract: checks.{}", check.name);
        // The contract names what a check talks to (`postgres`); the scenario's dependency of
        // that name, or else of the check's own name, is what it calls.
        let dependency = [check.dependency.as_deref(), Some(check.name.as_str())]
            .into_iter()
            .flatten()
            .find(|name| dependency_names.iter().any(|known| known == name))
            .ok_or_else(|| {
                Invalid::new(
                    field.clone(),
                    format!(
                        "the contract's check `{}` talks to `{}`, which is not declared under dependencies",
                        check.name,
                        check.dependency.as_deref().unwrap_or(&check.name)
                    ),
                )
            })?;
        checks.insert(
            check.name.clone(),
            (
                field,
                CheckFile {
                    dependency: Some(dependency.to_string()),
                    internal: None,
                    tier: check.tier,
                    interval: Span(check.interval_ms),
                    timeout: Some(Span(check.timeout_ms)),
                    jitter: Span(check.jitter_ms),
                    rise: check.rise.max(1),
                    fall: check.fall.max(1),
                    staleness: Some(Span(check.staleness_ms)),
                    boot_requires_rise: check.boot_requires_rise,
                    passive_failure_threshold: check.passive_failure_threshold,
                    uses_pool: true,
                    detect_after: default_detect(),
                },
            ),
        );
    }
    for condition in &contract.liveness {
        let internal = match condition.kind {
            LivenessKind::RuntimeStall => InternalKind::RuntimeStall,
            LivenessKind::Deadlock => InternalKind::Deadlock,
            LivenessKind::AppState => InternalKind::AppState,
        };
        checks.insert(
            condition.name.clone(),
            (
                format!("app.contract: liveness.{}", condition.name),
                CheckFile {
                    internal: Some(internal),
                    detect_after: condition.threshold_ms.map_or(default_detect(), Span),
                    ..CheckFile::default()
                },
            ),
        );
    }
    for step in &contract.startup.steps {
        checks.entry(step.clone()).or_insert_with(|| {
            (
                format!("app.contract: startup.steps.{step}"),
                CheckFile {
                    internal: Some(InternalKind::Boot),
                    ..CheckFile::default()
                },
            )
        });
    }
    for endpoint in &contract.endpoints {
        let mut names = endpoint.checks.clone();
        // probity's own probe kind, until the runtime speaks probity-contract's.
        let probe = match endpoint.probe {
            probity::contract::ProbeKind::Liveness => ProbeKind::Liveness,
            probity::contract::ProbeKind::Readiness => ProbeKind::Readiness,
            probity::contract::ProbeKind::Startup => ProbeKind::Startup,
        };
        if probe == ProbeKind::Readiness {
            // probity's readiness also fails until boot completes and once SIGTERM arrives.
            names.push("boot".into());
            names.push("shutdown".into());
        }
        if probe == ProbeKind::Startup && names.is_empty() {
            names.push("boot".into());
        }
        for name in &names {
            if !checks.contains_key(name) {
                if let Some(kind) = internal_by_name(name) {
                    checks.insert(
                        name.clone(),
                        (
                            format!("app.contract: endpoints.{}", endpoint.path),
                            CheckFile {
                                internal: Some(kind),
                                ..CheckFile::default()
                            },
                        ),
                    );
                } else {
                    return Err(Invalid::new(
                        format!("app.contract: endpoints.{}", endpoint.path),
                        format!("checks `{name}`, which the contract does not define"),
                    ));
                }
            }
        }
        endpoints.insert(
            endpoint.path.clone(),
            (
                format!("app.contract: endpoints.{}", endpoint.path),
                EndpointFile {
                    mode: EndpointMode::Cached,
                    checks: names,
                    timeout: None,
                    parallel: false,
                },
            ),
        );
    }
    Ok(())
}

fn checked_probe(
    file: &kube::probe::ProbeSpec,
    kind: ProbeKind,
    field: &str,
    endpoint_index: &BTreeMap<String, usize>,
    endpoints: &[Endpoint],
) -> Checked<ProbeSpec> {
    // What the API server would reject first (validation.go), in its words.
    let resolved = file
        .resolve(kind)
        .map_err(|violation| Invalid::from(violation.under(field)))?;
    let known = || list_or_none(&endpoints.iter().map(|e| e.path.clone()).collect::<Vec<_>>());
    let handler = match &resolved.handler {
        kube::probe::Handler::HttpGet { path, .. } => {
            let path = path.split('?').next().unwrap_or("/").to_string();
            match endpoint_index.get(&path) {
                Some(&endpoint) => Handler::Http { endpoint },
                None => {
                    return Err(Invalid::new(
                        format!("{field}.httpGet.path"),
                        format!(
                            "no endpoint `{path}` in app.endpoints (declared: {}); say what it checks there",
                            known()
                        ),
                    ));
                }
            }
        }
        kube::probe::Handler::TcpSocket { .. } => Handler::Tcp,
        kube::probe::Handler::Grpc { service, .. } => {
            let path = format!("grpc:{service}");
            match endpoint_index.get(&path) {
                Some(&endpoint) => Handler::Http { endpoint },
                None => {
                    return Err(Invalid::new(
                        format!("{field}.grpc.service"),
                        format!(
                            "no endpoint `{path}` in app.endpoints (declared: {})",
                            known()
                        ),
                    ));
                }
            }
        }
        kube::probe::Handler::Exec { .. } => {
            return Err(Invalid::new(
                format!("{field}.exec"),
                "exec probes run a command the simulator cannot model; describe the probe with httpGet or tcpSocket and the endpoint under app.endpoints",
            ));
        }
    };
    // The simulator's own bound: a probe period or timeout longer than a day is not a
    // probe anyone runs, and would only make runs slow.
    for (name, value) in [
        ("initialDelaySeconds", file.initial_delay_seconds),
        ("periodSeconds", file.period_seconds),
        ("timeoutSeconds", file.timeout_seconds),
        ("successThreshold", file.success_threshold),
        ("failureThreshold", file.failure_threshold),
    ] {
        if value.is_some_and(|value| value > 86_400) {
            return Err(Invalid::new(
                format!("{field}.{name}"),
                "more than a day cannot be simulated",
            ));
        }
    }
    Ok(ProbeSpec {
        handler,
        timing: resolved.timing,
        termination_grace: resolved
            .termination_grace_period
            .map(|grace| grace.as_millis() as Millis),
    })
}
