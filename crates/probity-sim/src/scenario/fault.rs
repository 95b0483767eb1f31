//! Faults and operator actions on the timeline, as written under `faults:` (`kind:` picks
//! one) and checked.

use super::Checked;
use super::dependency::{Dependency, DependencyNames};
use super::fleet::{Fleet, InstanceRef};
use super::read::{describe_value, from_value_at, names};
use crate::error::Invalid;
use crate::time::{Millis, Span};
use probity_contract::probe::ProbeKind;
use serde::Deserialize;
use serde_json::Value;

/// The most faults a scenario may list.
pub const MAX_FAULTS: usize = 10_000;

const KINDS: [&str; 9] = [
    "crash-on-start",
    "dependency-outage",
    "slow-dependency",
    "flapping-dependency",
    "pool-exhausted",
    "deadlock",
    "runtime-stall",
    "manual-drain",
    "manual-fix",
];

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct OutageFile {
    dependency: String,
    #[serde(default)]
    instances: Vec<InstanceRef>,
    at: Span,
    #[serde(default)]
    duration: Option<Span>,
    #[serde(default)]
    behaviour: Option<super::OutageBehaviour>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SlowFile {
    dependency: String,
    #[serde(default)]
    instances: Vec<InstanceRef>,
    at: Span,
    #[serde(default)]
    duration: Option<Span>,
    latency: Span,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct FlappingFile {
    dependency: String,
    #[serde(default)]
    instances: Vec<InstanceRef>,
    at: Span,
    #[serde(default)]
    duration: Option<Span>,
    period: Span,
    down: Span,
    #[serde(default)]
    flicker: f64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct PoolFile {
    instance: InstanceRef,
    dependency: String,
    at: Span,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeadlockFile {
    instance: InstanceRef,
    at: Span,
    #[serde(default)]
    ignores_sigterm: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct InstanceFile {
    instance: InstanceRef,
    at: Span,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct CrashFile {
    instance: InstanceRef,
    at: Span,
    #[serde(default = "default_crash_after")]
    after: Span,
}

fn default_crash_after() -> Span {
    Span::millis(500)
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct FixFile {
    at: Span,
    #[serde(default)]
    remove_probes: Vec<ProbeKind>,
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
    /// For a fault on a shared dependency, the pods it reaches (a network partition, one
    /// zone's path); `None`: every pod.
    pub pods: Option<Vec<usize>>,
}

impl Fault {
    /// Whether the fault reaches `pod`.
    pub fn reaches(&self, pod: usize) -> bool {
        self.pods.as_ref().is_none_or(|pods| pods.contains(&pod))
    }
}

/// The kinds of fault.
#[derive(Debug, Clone)]
pub enum FaultKind {
    /// A shared dependency is down.
    DependencyOutage {
        /// The dependency.
        dependency: usize,
        /// Hang or refuse.
        behaviour: super::OutageBehaviour,
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
    /// From its onset, one instance's process exits `after` each start (a bad config, a
    /// missing secret): the kubelet restarts it through CrashLoopBackOff, probes or none.
    CrashOnStart {
        /// The instance.
        instance: usize,
        /// How long the process runs before it exits.
        after: Millis,
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
    pub(crate) fn shared_dependency(&self) -> Option<usize> {
        match self {
            FaultKind::DependencyOutage { dependency, .. }
            | FaultKind::SlowDependency { dependency, .. }
            | FaultKind::FlappingDependency { dependency, .. } => Some(*dependency),
            _ => None,
        }
    }

    /// Whether this is an operator action rather than a fault.
    pub(crate) fn is_operator_action(&self) -> bool {
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
            FaultKind::CrashOnStart { .. } => "crash-on-start",
            FaultKind::ManualDrain { .. } => "manual-drain",
            FaultKind::ManualFix { .. } => "manual-fix",
        }
    }
}

/// Everything a fault may refer to.
pub(super) struct Context<'a> {
    pub(super) names: &'a DependencyNames,
    pub(super) dependencies: &'a [Dependency],
    pub(super) fleet: &'a Fleet,
    pub(super) duration: Millis,
}

/// `faults:` checked, in time order.
pub(super) fn resolve(files: Vec<Value>, context: &Context<'_>) -> Checked<Vec<Fault>> {
    if files.len() > MAX_FAULTS {
        return Err(Invalid::new(
            "faults",
            format!(
                "{} faults: the model takes at most {MAX_FAULTS}",
                files.len()
            ),
        ));
    }
    let mut faults = Vec::with_capacity(files.len());
    for (index, file) in files.into_iter().enumerate() {
        faults.push(resolve_one(file, &format!("faults[{index}]"), context)?);
    }
    faults.sort_by_key(|fault| fault.at);
    Ok(faults)
}

fn resolve_one(file: Value, field: &str, context: &Context<'_>) -> Checked<Fault> {
    let Value::Object(mut entries) = file else {
        return Err(Invalid::new(
            field,
            format!(
                "expected a mapping with `kind:` ({}), found {}",
                names(&KINDS),
                describe_value(&file)
            ),
        ));
    };
    let kind = match entries.remove("kind") {
        None => {
            return Err(Invalid::new(
                format!("{field}.kind"),
                format!("missing: say which fault, {}", names(&KINDS)),
            ));
        }
        Some(Value::String(kind)) => kind,
        Some(other) => {
            return Err(Invalid::new(
                format!("{field}.kind"),
                format!(
                    "expected {}, found {}",
                    names(&KINDS),
                    describe_value(&other)
                ),
            ));
        }
    };
    let rest = Value::Object(entries);
    let dependency = |name: &str| context.names.index(name, &format!("{field}.dependency"));
    let instance = |reference: &InstanceRef| {
        context
            .fleet
            .instance(reference, &format!("{field}.instance"))
    };
    let end = |at: Span, duration: Option<Span>| -> Checked<Option<Millis>> {
        match duration {
            None => Ok(None),
            Some(length) if length.as_millis() == 0 => Err(Invalid::new(
                format!("{field}.duration"),
                "must be longer than zero (omit it for a fault that lasts)",
            )),
            Some(length) => Ok(Some(at.as_millis().saturating_add(length.as_millis()))),
        }
    };
    let reached = |instances: &[InstanceRef]| -> Checked<Option<Vec<usize>>> {
        if instances.is_empty() {
            return Ok(None);
        }
        let mut pods = Vec::with_capacity(instances.len());
        for (position, reference) in instances.iter().enumerate() {
            pods.push(
                context
                    .fleet
                    .instance(reference, &format!("{field}.instances[{position}]"))?,
            );
        }
        pods.sort_unstable();
        pods.dedup();
        Ok(Some(pods))
    };
    let mut pods = None;
    let (at, until, kind) = match kind.as_str() {
        "dependency-outage" => {
            let file: OutageFile = from_value_at(rest, field)?;
            let index = dependency(&file.dependency)?;
            pods = reached(&file.instances)?;
            (
                file.at,
                end(file.at, file.duration)?,
                FaultKind::DependencyOutage {
                    dependency: index,
                    behaviour: file.behaviour.unwrap_or(context.dependencies[index].outage),
                },
            )
        }
        "slow-dependency" => {
            let file: SlowFile = from_value_at(rest, field)?;
            pods = reached(&file.instances)?;
            (
                file.at,
                end(file.at, file.duration)?,
                FaultKind::SlowDependency {
                    dependency: dependency(&file.dependency)?,
                    latency: file.latency.as_millis(),
                },
            )
        }
        "flapping-dependency" => {
            let file: FlappingFile = from_value_at(rest, field)?;
            pods = reached(&file.instances)?;
            if file.period.as_millis() == 0 {
                return Err(Invalid::new(
                    format!("{field}.period"),
                    "must be longer than zero",
                ));
            }
            if file.down > file.period {
                return Err(Invalid::new(
                    format!("{field}.down"),
                    "must not exceed the period",
                ));
            }
            if !(0.0..=1.0).contains(&file.flicker) {
                return Err(Invalid::new(
                    format!("{field}.flicker"),
                    "a probability between 0 and 1",
                ));
            }
            (
                file.at,
                end(file.at, file.duration)?,
                FaultKind::FlappingDependency {
                    dependency: dependency(&file.dependency)?,
                    period: file.period.as_millis(),
                    down: file.down.as_millis(),
                    flicker: file.flicker,
                },
            )
        }
        "pool-exhausted" => {
            let file: PoolFile = from_value_at(rest, field)?;
            (
                file.at,
                None,
                FaultKind::PoolExhausted {
                    instance: instance(&file.instance)?,
                    dependency: dependency(&file.dependency)?,
                },
            )
        }
        "deadlock" => {
            let file: DeadlockFile = from_value_at(rest, field)?;
            (
                file.at,
                None,
                FaultKind::Deadlock {
                    instance: instance(&file.instance)?,
                    ignores_sigterm: file.ignores_sigterm,
                },
            )
        }
        "runtime-stall" | "manual-drain" => {
            let file: InstanceFile = from_value_at(rest, field)?;
            let pod = instance(&file.instance)?;
            let kind = if kind == "runtime-stall" {
                FaultKind::RuntimeStall { instance: pod }
            } else {
                FaultKind::ManualDrain { instance: pod }
            };
            (file.at, None, kind)
        }
        "crash-on-start" => {
            let file: CrashFile = from_value_at(rest, field)?;
            (
                file.at,
                None,
                FaultKind::CrashOnStart {
                    instance: instance(&file.instance)?,
                    after: file.after.as_millis(),
                },
            )
        }
        "manual-fix" => {
            let file: FixFile = from_value_at(rest, field)?;
            (
                file.at,
                None,
                FaultKind::ManualFix {
                    remove_probes: file.remove_probes,
                },
            )
        }
        other => {
            return Err(Invalid::new(
                format!("{field}.kind"),
                format!("unknown fault `{other}`: expected {}", names(&KINDS)),
            ));
        }
    };
    if at.as_millis() >= context.duration {
        return Err(Invalid::new(
            format!("{field}.at"),
            format!(
                "{at} is not before the end of the run ({})",
                Span(context.duration)
            ),
        ));
    }
    Ok(Fault {
        at: at.as_millis(),
        until,
        kind,
        pods,
    })
}
