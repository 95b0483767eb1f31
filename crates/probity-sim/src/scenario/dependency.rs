//! The dependencies the application calls: their normal latency, what their outages do, the
//! health checks they run of their own, and the herd of cold starts that overloads them.

use super::{Checked, list_or_none};
use crate::error::Invalid;
use crate::time::{Millis, Span};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The most dependencies a scenario may declare (a pod's pool state is kept one bit each).
pub const MAX_DEPENDENCIES: usize = 64;

/// A dependency as written under `dependencies:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DependencyFile {
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
    #[serde(default)]
    pool: Option<PoolFile>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct PoolFile {
    size: u32,
    hold: Span,
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
            pool: None,
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
    /// Each pod's connection pool to it, as a queue (`None`: the pool is not modelled
    /// beyond a leak).
    pub pool: Option<Pool>,
}

/// A pod's connection pool to a dependency, modelled as a bounded queue: `size` connections,
/// each held `hold` on average by a request; a request that finds none idle waits its turn.
#[derive(Debug, Clone, Copy)]
pub struct Pool {
    /// Connections in the pool.
    pub size: u32,
    /// Average time a request holds a connection.
    pub hold: Millis,
}

/// A dependency that too many simultaneous cold starts overload.
#[derive(Debug, Clone, Copy)]
pub struct Herd {
    /// Booting instances it serves without slowing down.
    pub max_concurrent_boots: u32,
    /// Response time while overloaded.
    pub overload_latency: Millis,
}

/// The declared dependencies' names, in name order (their indices).
#[derive(Debug, Clone)]
pub(super) struct DependencyNames(pub(super) Vec<String>);

impl DependencyNames {
    /// The index of `name`, or an error at `field` listing the declared ones.
    pub(super) fn index(&self, name: &str, field: &str) -> Checked<usize> {
        self.0
            .iter()
            .position(|known| known == name)
            .ok_or_else(|| {
                Invalid::new(
                    field,
                    format!(
                        "unknown dependency `{name}` (declared: {})",
                        list_or_none(&self.0)
                    ),
                )
            })
    }

    /// The index of `name`, if declared.
    pub(super) fn find(&self, name: &str) -> Option<usize> {
        self.0.iter().position(|known| known == name)
    }
}

/// The dependencies, checked, in name order.
pub(super) fn resolve(
    files: &BTreeMap<String, DependencyFile>,
) -> Checked<(DependencyNames, Vec<Dependency>)> {
    if files.len() > MAX_DEPENDENCIES {
        return Err(Invalid::new(
            "dependencies",
            format!(
                "{} dependencies: the model takes at most {MAX_DEPENDENCIES}",
                files.len()
            ),
        ));
    }
    let names = DependencyNames(files.keys().cloned().collect());
    let mut dependencies = Vec::with_capacity(files.len());
    for (name, file) in files {
        let field = format!("dependencies.{name}");
        let mut health_depends_on = Vec::new();
        for (position, other) in file.health_depends_on.iter().enumerate() {
            let other_field = format!("{field}.health_depends_on[{position}]");
            let index = names.index(other, &other_field)?;
            if names.0[index] == *name {
                return Err(Invalid::new(
                    other_field,
                    "a dependency cannot depend on itself",
                ));
            }
            health_depends_on.push(index);
        }
        let herd = match &file.herd {
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
        let pool = match &file.pool {
            None => None,
            Some(pool) => {
                if !(1..=10_000).contains(&pool.size) {
                    return Err(Invalid::new(
                        format!("{field}.pool.size"),
                        "must be between 1 and 10000",
                    ));
                }
                if pool.hold.as_millis() == 0 {
                    return Err(Invalid::new(
                        format!("{field}.pool.hold"),
                        "must be longer than zero",
                    ));
                }
                Some(Pool {
                    size: pool.size,
                    hold: pool.hold.as_millis(),
                })
            }
        };
        dependencies.push(Dependency {
            name: name.clone(),
            latency: file.latency.as_millis(),
            outage: file.outage,
            connect_timeout: file.connect_timeout.as_millis(),
            health_depends_on,
            herd,
            pool,
        });
    }
    Ok((names, dependencies))
}
