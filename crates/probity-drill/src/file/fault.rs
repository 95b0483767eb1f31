//! The faults a drill file names: what each does, to what, when, and what the app may change
//! meanwhile.

use super::Dur;
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;
use std::time::Duration;

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
