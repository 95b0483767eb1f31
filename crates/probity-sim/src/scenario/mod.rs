//! Scenario files: what they may say, and how they are read and checked.
//!
//! A scenario is YAML (`.yaml`, `.yml`) or TOML (`.toml`). The probe blocks under `container:`
//! are written exactly as in a Kubernetes container spec (`livenessProbe`, `readinessProbe`,
//! `startupProbe`, camelCase fields, integer seconds), so a team can paste its own; everything
//! else is the simulator's own vocabulary in snake_case. `docs/simulate.md` is the reference.
//!
//! Each concept owns its file form, its checked form and its checks: the [`fleet`], the
//! [`container`] and its probes, the [`app`] (and a probity contract describing it), the
//! [`dependency`]s, the [`requests`], the [`routing`], the [`fault`]s and how results are
//! [`measure`]d. Reading ([`read`]) goes through a value tree so YAML and TOML share one set
//! of types, and every error names the field it is about (`container.livenessProbe.periodSeconds`).
//! The model's size is bounded at validation ([`budget`]).

pub mod app;
pub mod budget;
pub mod container;
mod contract;
pub mod dependency;
pub mod fault;
pub mod fleet;
pub mod measure;
pub mod read;
pub mod requests;
pub mod routing;

pub use app::{App, Check, CheckTarget, Endpoint, EndpointMode, InternalKind, PoolCheck};
pub use container::{Handler, ProbeSpec, Probes};
pub use dependency::{Dependency, Herd, OutageBehaviour, Pool};
pub use fault::{Fault, FaultKind};
pub use fleet::{BackoffRequeue, Fleet, KubeletSettings, Start};
pub use measure::Measure;
pub use requests::{KeepAlive, RequestClass, Requests};
pub use routing::{
    AlbSettings, EnvoySettings, HaproxySettings, Membership, Outlier, Routing, SuccessRate,
};

use crate::error::{Invalid, ScenarioError};
use crate::time::{Millis, Span};
use probity_contract::file::{ReadError, read_text};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// The longest run simulated.
pub const MAX_DURATION: Millis = 48 * 3_600_000;

/// A scenario file as written.
#[derive(Debug, Deserialize)]
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
    fleet: fleet::FleetFile,
    #[serde(default)]
    kubelet: fleet::KubeletFile,
    #[serde(default)]
    container: container::ContainerFile,
    #[serde(default)]
    app: app::AppFile,
    #[serde(default)]
    dependencies: BTreeMap<String, dependency::DependencyFile>,
    #[serde(default)]
    requests: requests::RequestsFile,
    #[serde(default)]
    routing: Option<Value>,
    #[serde(default)]
    faults: Vec<Value>,
    #[serde(default)]
    measure: measure::MeasureFile,
}

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
        match path.extension().and_then(|extension| extension.to_str()) {
            Some("yaml" | "yml") => Some(Format::Yaml),
            Some("toml") => Some(Format::Toml),
            _ => None,
        }
    }
}

type Checked<T> = Result<T, Invalid>;

impl Scenario {
    /// Reads and checks a scenario file (YAML or TOML, by extension; at most
    /// [`read::MAX_FILE_BYTES`]).
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let Some(format) = Format::from_path(path) else {
            return Err(ScenarioError::Field {
                file: path.to_path_buf(),
                field: ".".into(),
                reason: "unknown file type: a scenario ends in .yaml, .yml or .toml".into(),
            });
        };
        // A FIFO or a device is refused before it is opened: the open would block, or the
        // read never end.
        let text = read_text(path, read::MAX_FILE_BYTES).map_err(|error| ScenarioError::Read {
            file: path.to_path_buf(),
            source: match error {
                ReadError::Io(source) => source,
                other => std::io::Error::new(std::io::ErrorKind::InvalidData, other.to_string()),
            },
        })?;
        Scenario::parse(&text, format, path)
    }

    /// Parses and checks scenario text. `file` names the source in errors, and relative paths
    /// inside the scenario (a contract) are resolved against its directory.
    pub fn parse(text: &str, format: Format, file: &Path) -> Result<Scenario, ScenarioError> {
        let field_error = |field: String, reason: String| ScenarioError::Field {
            file: file.to_path_buf(),
            field,
            reason,
        };
        if text.trim().is_empty() {
            return Err(field_error(
                ".".into(),
                "the file is empty: a scenario needs at least `name` and `duration`".into(),
            ));
        }
        let value: Value = match format {
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
        if value.is_null() {
            return Err(field_error(
                ".".into(),
                "the file has no content: a scenario needs at least `name` and `duration`".into(),
            ));
        }
        let raw: ScenarioFile = read::from_value(value)
            .map_err(|error| field_error(error.field(), error.message().to_string()))?;
        let base = file.parent().unwrap_or(Path::new("."));
        validate(raw, base).map_err(|invalid| field_error(invalid.field, invalid.reason))
    }
}

fn validate(raw: ScenarioFile, base: &Path) -> Checked<Scenario> {
    if raw.name.trim().is_empty() {
        return Err(Invalid::new("name", "must not be empty"));
    }
    let duration = raw.duration.as_millis();
    if duration == 0 {
        return Err(Invalid::new("duration", "must be longer than zero"));
    }
    if duration > MAX_DURATION {
        return Err(Invalid::new(
            "duration",
            format!(
                "{} is longer than the {} a run may last",
                raw.duration,
                Span(MAX_DURATION)
            ),
        ));
    }
    let fleet = raw.fleet.resolve()?;
    let (names, dependencies) = dependency::resolve(&raw.dependencies)?;
    let imported = contract::imported(raw.app.contract(), base, &names)?;
    let app = raw.app.resolve(&names, imported)?;
    if raw.app.close_connections_when_unready && !raw.container.readiness_calls_an_endpoint() {
        return Err(Invalid::new(
            "app.close_connections_when_unready",
            "the server closes connections while its readiness endpoint fails, so it needs container.readinessProbe with httpGet or grpc",
        ));
    }
    let endpoint_index: BTreeMap<String, usize> = app
        .endpoints
        .iter()
        .enumerate()
        .map(|(index, endpoint)| (endpoint.path.clone(), index))
        .collect();
    let probes = raw.container.probes(&endpoint_index, &app.endpoints)?;
    let pre_stop_sleep = raw.container.pre_stop_sleep(fleet.termination_grace)?;
    let requests = raw.requests.resolve(
        &names,
        routing::is_service(raw.routing.as_ref()),
        &app.fallback_dependencies(dependencies.len()),
    )?;
    let routing = routing::resolve(raw.routing, &endpoint_index, fleet.replicas)?;
    let faults = fault::resolve(
        raw.faults,
        &fault::Context {
            names: &names,
            dependencies: &dependencies,
            fleet: &fleet,
            duration,
        },
    )?;
    let measure = raw.measure.resolve()?;
    let scenario = Scenario {
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
    };
    budget::check(&scenario)?;
    Ok(scenario)
}

/// `a, b, c`, or `none`.
pub(crate) fn list_or_none(names: &[String]) -> String {
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
