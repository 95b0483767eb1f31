//! A probity contract as the app's description: what its endpoints check, with the real
//! intervals, timeouts and thresholds the service printed (`--print-contract`).

use super::Checked;
use super::app::{
    CheckFile, Declared, EndpointFile, EndpointMode, Imported, InternalKind, default_detect,
};
use super::dependency::DependencyNames;
use super::read::MAX_FILE_BYTES;
use crate::error::Invalid;
use crate::time::Span;
use probity_contract::contract::{Contract, LivenessKind};
use probity_contract::file::read_text;
use probity_contract::probe::ProbeKind;
use std::path::Path;

/// What the contract at `path` (relative to `base`, the scenario's directory) declares of
/// the app; nothing without one.
pub(super) fn imported(
    path: Option<&Path>,
    base: &Path,
    dependencies: &DependencyNames,
) -> Checked<Imported> {
    let mut imported = Imported::default();
    let Some(path) = path else {
        return Ok(imported);
    };
    let contract = read(&base.join(path))?;
    import(
        &contract,
        &mut imported.checks,
        &mut imported.endpoints,
        dependencies,
    )?;
    if contract.shutdown.drain_delay_ms > 0 {
        imported.drain_delay = Some(contract.shutdown.drain_delay_ms);
    }
    Ok(imported)
}

/// Reads a contract file (at most [`super::read::MAX_FILE_BYTES`]).
fn read(path: &Path) -> Checked<Contract> {
    let text = read_text(path, MAX_FILE_BYTES).map_err(|error| {
        Invalid::new(
            "app.contract",
            format!("cannot read {}: {error}", path.display()),
        )
    })?;
    Contract::from_json(&text).map_err(|error| {
        Invalid::new(
            "app.contract",
            format!("{} is not a probity contract: {error}", path.display()),
        )
    })
}

/// Adds the contract's checks and endpoints to those declared.
fn import(
    contract: &Contract,
    checks: &mut Declared<CheckFile>,
    endpoints: &mut Declared<EndpointFile>,
    dependencies: &DependencyNames,
) -> Checked<()> {
    for check in &contract.checks {
        let field = format!("app.contract: checks.{}", check.name);
        // The contract names what a check talks to (`postgres`); the scenario's dependency
        // of that name, or else of the check's own name, is what it calls.
        let dependency = [check.dependency.as_deref(), Some(check.name.as_str())]
            .into_iter()
            .flatten()
            .find(|name| dependencies.find(name).is_some())
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
                    fail_open_for: check.fail_open_for_ms.map(Span),
                    uses_pool: true,
                    detect_after: default_detect(),
                    fallback: check.fallback.clone(),
                    ..CheckFile::default()
                },
            ),
        );
    }
    for condition in &contract.liveness {
        let internal = match condition.kind {
            LivenessKind::RuntimeStall => InternalKind::RuntimeStall,
            LivenessKind::Deadlock => InternalKind::Deadlock,
            // A worker's heartbeat fails only on a fault inside the process, as a declared
            // state does.
            LivenessKind::AppState | LivenessKind::Heartbeat => InternalKind::AppState,
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
        checks.entry(step.name.clone()).or_insert_with(|| {
            (
                format!("app.contract: startup.steps.{}", step.name),
                CheckFile {
                    internal: Some(InternalKind::Boot),
                    ..CheckFile::default()
                },
            )
        });
    }
    for endpoint in &contract.endpoints {
        let probe = endpoint.probe;
        let mut names = endpoint.checks.clone();
        if probe == ProbeKind::Readiness {
            // probity's readiness also fails until boot completes and once SIGTERM arrives.
            names.push("boot".into());
            names.push("shutdown".into());
        }
        if probe == ProbeKind::Startup && names.is_empty() {
            names.push("boot".into());
        }
        let field = format!("app.contract: endpoints.{}", endpoint.path);
        for name in &names {
            if checks.contains_key(name) {
                continue;
            }
            let Some(internal) = InternalKind::by_name(name) else {
                return Err(Invalid::new(
                    field,
                    format!("checks `{name}`, which the contract does not define"),
                ));
            };
            checks.insert(
                name.clone(),
                (
                    field.clone(),
                    CheckFile {
                        internal: Some(internal),
                        ..CheckFile::default()
                    },
                ),
            );
        }
        endpoints.insert(
            endpoint.path.clone(),
            (
                field,
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
