//! What the linter needs beyond the manifests: the services' contracts and the rate limits.

use crate::contract::Contract;

/// What the linter needs beyond the manifests.
#[derive(Debug, Clone)]
pub struct Options {
    /// Service contracts (`--contract FILE`), matched to containers by the contract's `service`
    /// name (see `docs/lint-rules.md`).
    pub contracts: Vec<Contract>,
    /// Health-check requests per second across a workload's replicas above which `probe-load`
    /// fires.
    pub max_probe_rps: f64,
    /// Health-check requests per second reaching dependencies above which `probe-load` fires.
    pub max_dependency_rps: f64,
}

/// Default for [`Options::max_probe_rps`]: the probe-cost example's 2,000-pod fleet, probed for
/// liveness and readiness every 2 s (2,000 requests/s before any user arrives), is over.
pub const DEFAULT_MAX_PROBE_RPS: f64 = 1000.0;
/// Default for [`Options::max_dependency_rps`]: the deep-check incident's 50 pods probing a deep
/// check every 2 s (25 queries/s to the database) is over.
pub const DEFAULT_MAX_DEPENDENCY_RPS: f64 = 20.0;

impl Default for Options {
    fn default() -> Self {
        Self {
            contracts: Vec::new(),
            max_probe_rps: DEFAULT_MAX_PROBE_RPS,
            max_dependency_rps: DEFAULT_MAX_DEPENDENCY_RPS,
        }
    }
}
