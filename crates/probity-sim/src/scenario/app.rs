//! The application inside the container: its boot and shutdown, its pool, and what each
//! health endpoint checks, synchronously or from a snapshot its pollers keep.

use super::dependency::DependencyNames;
use super::{Checked, at_least_one, list_or_none, positive};
use crate::error::Invalid;
use crate::time::{Millis, Span};
use probity_contract::Tier;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `app:` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AppFile {
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
    pub(super) close_connections_when_unready: bool,
    #[serde(default)]
    capacity: Option<f64>,
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
            capacity: None,
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
    /// The handler calls each dependency while the probe waits (a "deep check").
    Sync,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct EndpointFile {
    #[serde(default)]
    pub(super) mode: EndpointMode,
    #[serde(default)]
    pub(super) checks: Vec<String>,
    #[serde(default)]
    pub(super) timeout: Option<Span>,
    #[serde(default)]
    pub(super) parallel: bool,
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

impl InternalKind {
    /// The built-in condition an undeclared check name stands for.
    pub(super) fn by_name(name: &str) -> Option<InternalKind> {
        match name {
            "deadlock" => Some(InternalKind::Deadlock),
            "runtime_stall" => Some(InternalKind::RuntimeStall),
            "shutdown" => Some(InternalKind::Shutdown),
            "boot" => Some(InternalKind::Boot),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CheckFile {
    #[serde(default)]
    pub(super) dependency: Option<String>,
    #[serde(default)]
    pub(super) internal: Option<InternalKind>,
    #[serde(default = "default_tier")]
    pub(super) tier: Tier,
    #[serde(default = "default_interval")]
    pub(super) interval: Span,
    #[serde(default)]
    pub(super) timeout: Option<Span>,
    #[serde(default)]
    pub(super) jitter: Span,
    #[serde(default = "one")]
    pub(super) rise: u32,
    #[serde(default = "one")]
    pub(super) fall: u32,
    #[serde(default)]
    pub(super) staleness: Option<Span>,
    #[serde(default)]
    pub(super) boot_requires_rise: bool,
    #[serde(default)]
    pub(super) passive_failure_threshold: Option<u32>,
    #[serde(default = "yes")]
    pub(super) uses_pool: bool,
    #[serde(default = "default_detect")]
    pub(super) detect_after: Span,
    #[serde(default)]
    pub(super) fail_open_for: Option<Span>,
    #[serde(default)]
    pub(super) pool_check: PoolCheck,
    #[serde(default)]
    pub(super) acquire_budget: Option<Span>,
    #[serde(default)]
    pub(super) fallback: Option<String>,
}

/// What a check asks of a pool that is modelled as a queue (`dependencies.NAME.pool`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PoolCheck {
    /// "Can a request get a connection within its budget?": the check acquires one, and
    /// fails if the wait exceeds its acquire budget. A busy pool with connections cycling
    /// passes; a leaked one fails.
    #[default]
    Acquire,
    /// "Is a connection idle right now?" (`pool.available() > 0`): fails whenever every
    /// connection is in use, which a busy pool doing its job is, much of the time.
    IdleConnection,
}

fn default_tier() -> Tier {
    Tier::Hard
}
fn default_interval() -> Span {
    Span::secs(5)
}
pub(super) fn default_detect() -> Span {
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
            fail_open_for: None,
            pool_check: PoolCheck::default(),
            acquire_budget: None,
            fallback: None,
        }
    }
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
    /// Requests per second one pod serves; a pod sent more fails the excess (`None`: no
    /// limit).
    pub capacity: Option<f64>,
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
    /// A dependency, by index into [`super::Scenario::dependencies`].
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
    /// For a hard check: how long readiness keeps passing (as `warn`) after the check turned
    /// unhealthy, before it fails closed (probity's `fail_open_for`).
    pub fail_open_for: Option<Millis>,
    /// What the check asks of a pool modelled as a queue.
    pub pool_check: PoolCheck,
    /// How long the check waits for a connection before it fails (its `acquire_budget`,
    /// else its timeout, else 1 s).
    pub acquire_budget: Millis,
    /// For a hard check of a dependency: the check (index into [`App::checks`]) whose
    /// dependency serves instead while this one fails (probity's `CheckSpec::fallback`).
    /// Every endpoint that lists this check is `cached` and lists the fallback too.
    pub fallback: Option<usize>,
}

impl App {
    /// For each of `dependencies` dependencies: the check of it that names a fallback, and
    /// that fallback, as indices into [`App::checks`] (at most one check per dependency
    /// names one).
    pub(crate) fn fallbacks_by_dependency(
        &self,
        dependencies: usize,
    ) -> Vec<Option<(usize, usize)>> {
        let mut by_dependency = vec![None; dependencies];
        for (index, check) in self.checks.iter().enumerate() {
            if let (CheckTarget::Dependency(dependency), Some(fallback)) =
                (check.target, check.fallback)
                && let Some(slot) = by_dependency.get_mut(dependency)
            {
                *slot = Some((index, fallback));
            }
        }
        by_dependency
    }

    /// For each of `dependencies` dependencies: the dependency that serves instead of it
    /// while its check is served by its fallback.
    pub(crate) fn fallback_dependencies(&self, dependencies: usize) -> Vec<Option<usize>> {
        self.fallbacks_by_dependency(dependencies)
            .into_iter()
            .map(|pair| {
                pair.and_then(|(_, fallback)| match self.checks[fallback].target {
                    CheckTarget::Dependency(dependency) => Some(dependency),
                    CheckTarget::Internal(_) => None,
                })
            })
            .collect()
    }
}

/// The most checks and endpoints an app may have.
pub const MAX_CHECKS: usize = 1_000;

/// Checks and endpoints keyed by name, each with the field it was declared at.
pub(super) type Declared<T> = BTreeMap<String, (String, T)>;

/// What a contract declares of the app, before the scenario's own declarations.
#[derive(Debug, Default)]
pub(super) struct Imported {
    /// Its checks.
    pub(super) checks: Declared<CheckFile>,
    /// Its endpoints.
    pub(super) endpoints: Declared<EndpointFile>,
    /// Its drain delay, when it has one.
    pub(super) drain_delay: Option<Millis>,
}

impl AppFile {
    /// The contract file the app is described by, if any (relative to the scenario's
    /// directory).
    pub(super) fn contract(&self) -> Option<&Path> {
        self.contract.as_deref()
    }

    /// The application, checked: what its contract declares first (`imported`, see
    /// [`super::contract::imported`]), then the scenario's own endpoints and checks on top.
    pub(super) fn resolve(
        &self,
        dependencies: &DependencyNames,
        imported: Imported,
    ) -> Checked<App> {
        let Imported {
            checks: mut check_files,
            endpoints: mut endpoint_files,
            drain_delay: contract_drain_delay,
        } = imported;
        let drain_delay = self
            .drain_delay
            .map(Span::as_millis)
            .or(contract_drain_delay);
        for (name, check) in &self.checks {
            check_files.insert(name.clone(), (format!("app.checks.{name}"), check.clone()));
        }
        for (path, endpoint) in &self.endpoints {
            endpoint_files.insert(
                path.clone(),
                (format!("app.endpoints.{path}"), endpoint.clone()),
            );
        }
        if check_files.len() > MAX_CHECKS || endpoint_files.len() > MAX_CHECKS {
            return Err(Invalid::new(
                "app",
                format!("the model takes at most {MAX_CHECKS} checks and {MAX_CHECKS} endpoints"),
            ));
        }

        let mut checks: Vec<Check> = Vec::new();
        let mut check_index: BTreeMap<String, usize> = BTreeMap::new();
        // Where each check was declared, for errors found once the endpoints are known.
        let mut check_fields: Vec<String> = Vec::new();
        for (name, (field, check)) in &check_files {
            let target = match (&check.dependency, check.internal) {
                (Some(dependency), None) => CheckTarget::Dependency(
                    dependencies.index(dependency, &format!("{field}.dependency"))?,
                ),
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
        for (path, (field, endpoint)) in &endpoint_files {
            let mut indices = Vec::new();
            for (position, name) in endpoint.checks.iter().enumerate() {
                let check_field = format!("{field}.checks[{position}]");
                let index = match check_index.get(name) {
                    Some(index) => *index,
                    None => {
                        // An undeclared name may be a dependency (checked with defaults) or a
                        // built-in internal condition.
                        let target = if let Some(dependency) = dependencies.find(name) {
                            CheckTarget::Dependency(dependency)
                        } else if let Some(kind) = InternalKind::by_name(name) {
                            CheckTarget::Internal(kind)
                        } else {
                            return Err(Invalid::new(
                                check_field,
                                format!(
                                    "`{name}` is neither a declared check (app.checks: {}), a dependency ({}), nor a built-in (deadlock, runtime_stall, shutdown, boot)",
                                    list_or_none(&check_index.keys().cloned().collect::<Vec<_>>()),
                                    list_or_none(&dependencies.0)
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
            endpoints.push(Endpoint {
                path: path.clone(),
                mode: endpoint.mode,
                checks: indices,
                timeout: endpoint.timeout.map(Span::as_millis),
                parallel: endpoint.parallel,
            });
        }
        resolve_fallbacks(&check_files, &mut checks, &check_index, &endpoints)?;
        // Passive reports fail the check in the pollers' snapshot; only `cached` endpoints
        // read it. A contract's thresholds are kept as written (its endpoints are all cached).
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
        for (position, name) in self.boot_needs.iter().enumerate() {
            boot_needs.push(dependencies.index(name, &format!("app.boot_needs[{position}]"))?);
        }
        if let Some(0) = self.pool_size {
            return Err(Invalid::new("app.pool_size", "must be at least 1"));
        }
        if let Some(capacity) = self.capacity
            && !(capacity.is_finite() && capacity > 0.0)
        {
            return Err(Invalid::new(
                "app.capacity",
                "must be a positive number of requests per second",
            ));
        }
        Ok(App {
            boot: self.boot.as_millis(),
            listen_during_boot: self.listen_during_boot,
            exit_after_sigterm: self.exit_after_sigterm.map_or(0, Span::as_millis),
            drain_delay,
            pool_size: self.pool_size,
            max_inflight_checks: self.max_inflight_checks,
            boot_needs,
            close_connections_when_unready: self.close_connections_when_unready,
            capacity: self.capacity,
            endpoints,
            checks,
        })
    }
}

/// Each declared check's fallback, as an index among the checks, checked the way probity's
/// registry checks it (a hard check's, naming another check that names no fallback itself)
/// and against what the simulator can model: both check dependencies, and every endpoint
/// that lists the check reads the pollers' snapshot and lists the fallback too, so its
/// answer judges the check with the fallback's state.
fn resolve_fallbacks(
    files: &Declared<CheckFile>,
    checks: &mut [Check],
    index: &BTreeMap<String, usize>,
    endpoints: &[Endpoint],
) -> Checked<()> {
    let mut resolved: Vec<(usize, usize)> = Vec::new();
    for (name, (field, file)) in files {
        let Some(fallback) = file.fallback.as_deref() else {
            continue;
        };
        let field = format!("{field}.fallback");
        let check = index[name];
        if file.tier != Tier::Hard {
            return Err(Invalid::new(
                field,
                format!(
                    "a fallback applies to hard checks only (a {} check never fails readiness, so nothing needs to serve instead)",
                    file.tier
                ),
            ));
        }
        if !matches!(checks[check].target, CheckTarget::Dependency(_)) {
            return Err(Invalid::new(
                field,
                format!(
                    "`{name}` checks something inside the process; a fallback serves instead of a failing dependency"
                ),
            ));
        }
        if fallback == name {
            return Err(Invalid::new(field, "a check cannot be its own fallback"));
        }
        let Some(&target) = index.get(fallback) else {
            let known: Vec<String> = index
                .keys()
                .filter(|known| *known != name)
                .cloned()
                .collect();
            return Err(Invalid::new(
                field,
                format!(
                    "`{fallback}` is not a check (declared under app.checks or listed by an endpoint: {})",
                    list_or_none(&known)
                ),
            ));
        };
        if !matches!(checks[target].target, CheckTarget::Dependency(_)) {
            return Err(Invalid::new(
                field,
                format!(
                    "`{fallback}` checks something inside the process, not a dependency: what serves instead of `{name}` must be a dependency the requests can be answered from"
                ),
            ));
        }
        if let Some((_, (_, next))) = files.get_key_value(fallback)
            && let Some(next) = next.fallback.as_deref()
        {
            return Err(Invalid::new(
                field,
                format!(
                    "`{fallback}` names a fallback of its own (`{next}`); fallbacks do not chain"
                ),
            ));
        }
        if let CheckTarget::Dependency(dependency) = checks[check].target
            && let Some(&(other, _)) = resolved
                .iter()
                .find(|(other, _)| checks[*other].target == CheckTarget::Dependency(dependency))
        {
            return Err(Invalid::new(
                field,
                format!(
                    "`{}` checks the same dependency and names a fallback already: one check per dependency says what serves instead of it",
                    checks[other].name
                ),
            ));
        }
        resolved.push((check, target));
    }
    for &(check, fallback) in &resolved {
        for endpoint in endpoints {
            let Some(position) = endpoint.checks.iter().position(|&listed| listed == check) else {
                continue;
            };
            let field = format!("app.endpoints.{}.checks[{position}]", endpoint.path);
            let (name, fallback_name) = (&checks[check].name, &checks[fallback].name);
            if endpoint.mode != EndpointMode::Cached {
                return Err(Invalid::new(
                    field,
                    format!(
                        "`{name}` names a fallback (`{fallback_name}`), which is judged from the pollers' snapshot: the endpoint needs `mode: cached` (a `sync` endpoint calls each dependency and fails on any hard one)"
                    ),
                ));
            }
            if !endpoint.checks.contains(&fallback) {
                return Err(Invalid::new(
                    field,
                    format!(
                        "`{name}` falls back to `{fallback_name}`, which this endpoint does not list: list `{fallback_name}` too, so the answer knows whether it serves"
                    ),
                ));
            }
        }
    }
    for (check, fallback) in resolved {
        checks[check].fallback = Some(fallback);
    }
    Ok(())
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
    if check.fail_open_for.is_some() && check.tier != Tier::Hard {
        return Err(Invalid::new(
            format!("{field}.fail_open_for"),
            "only a hard check fails open for a while; a soft or info check never fails readiness",
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
        fail_open_for: check.fail_open_for.map(Span::as_millis),
        pool_check: check.pool_check,
        acquire_budget: check
            .acquire_budget
            .or(check.timeout)
            .map_or(1_000, Span::as_millis),
        fallback: None,
    }
}
