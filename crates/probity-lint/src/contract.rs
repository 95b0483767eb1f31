//! A service's contract as the linter reads it: the core's [`probity::Contract`], plus the
//! facts of contract format version 2 that the contract rules need — what each endpoint waits on
//! (`endpoints[].waits_on`), which checks call another service's health endpoint
//! (`checks[].calls_health_endpoint`) and how the drain delay was derived
//! (`shutdown.drain_delay_derivation`).
//!
//! Version 1 contracts are read as they are. A version 2 contract (the planned shape: the fields
//! above, and startup steps as `{"name", "waits_on"}` objects) is read by taking those facts out
//! and handing the rest to the version 1 reader, so every other rule reads it as before. This is
//! the one place that knows the difference; when the core's contract type carries version 2
//! itself, this module keeps only the accessors.

use serde_json::Value;

/// How a contract's drain delay was derived: readiness period × failure threshold + the load
/// balancer's reaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrainDerivation {
    /// The readiness period the delay was derived from.
    pub readiness_period_ms: u64,
    /// The readiness failure threshold it was derived from.
    pub readiness_failure_threshold: u64,
    /// How long the load balancers take to act on a readiness change.
    pub load_balancer_reaction_ms: u64,
}

/// A contract with the facts of format version 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceContract {
    core: probity::Contract,
    /// What each endpoint of `core.endpoints` (same order) waits on.
    waits_on: Vec<Vec<String>>,
    /// The checks that call another service's health endpoint.
    health_calls: Vec<String>,
    derivation: Option<DrainDerivation>,
}

impl std::ops::Deref for ServiceContract {
    type Target = probity::Contract;

    fn deref(&self) -> &probity::Contract {
        &self.core
    }
}

impl From<probity::Contract> for ServiceContract {
    fn from(core: probity::Contract) -> Self {
        Self {
            waits_on: vec![Vec::new(); core.endpoints.len()],
            core,
            health_calls: Vec::new(),
            derivation: None,
        }
    }
}

/// Why a contract could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ContractError(String);

impl ServiceContract {
    /// Reads a contract of format version 1 or 2 from JSON.
    pub fn from_json(text: &str) -> Result<Self, ContractError> {
        let strict = |text: &str| {
            probity::Contract::from_json(text).map_err(|error| ContractError(error.to_string()))
        };
        let Ok(mut value) = serde_json::from_str::<Value>(text) else {
            // Let the core's reader say where the syntax is wrong.
            return strict(text).map(Self::from);
        };
        if value.get("version").and_then(Value::as_u64) != Some(2) {
            return strict(text).map(Self::from);
        }
        let mut waits_on = Vec::new();
        if let Some(endpoints) = value.get_mut("endpoints").and_then(Value::as_array_mut) {
            for endpoint in endpoints {
                waits_on.push(take_names(endpoint, "waits_on"));
            }
        }
        let mut health_calls = Vec::new();
        if let Some(checks) = value.get_mut("checks").and_then(Value::as_array_mut) {
            for check in checks {
                let Some(fields) = check.as_object_mut() else {
                    continue;
                };
                fields.remove("fallback");
                if fields.remove("calls_health_endpoint") == Some(Value::Bool(true))
                    && let Some(name) = fields.get("name").and_then(Value::as_str)
                {
                    health_calls.push(name.to_owned());
                }
            }
        }
        if let Some(steps) = value
            .get_mut("startup")
            .and_then(|startup| startup.get_mut("steps"))
            .and_then(Value::as_array_mut)
        {
            for step in steps.iter_mut() {
                if let Some(name) = step.get("name").and_then(Value::as_str) {
                    *step = Value::String(name.to_owned());
                }
            }
        }
        let derivation = value
            .get_mut("shutdown")
            .and_then(Value::as_object_mut)
            .and_then(|shutdown| shutdown.remove("drain_delay_derivation"))
            .and_then(|derivation| {
                let field = |name: &str| derivation.get(name).and_then(Value::as_u64);
                Some(DrainDerivation {
                    readiness_period_ms: field("readiness_period_ms")?,
                    readiness_failure_threshold: field("readiness_failure_threshold")?,
                    load_balancer_reaction_ms: field("load_balancer_reaction_ms")?,
                })
            });
        value["version"] = Value::from(probity::contract::CONTRACT_VERSION);
        let mut contract = Self::from(strict(&value.to_string())?);
        for (slot, names) in contract.waits_on.iter_mut().zip(waits_on) {
            *slot = names;
        }
        contract.health_calls = health_calls;
        contract.derivation = derivation;
        Ok(contract)
    }

    /// What `endpoint` (one of this contract's) waits on: the dependencies it cannot answer
    /// without.
    pub fn waits_on(&self, endpoint: &probity::contract::EndpointContract) -> &[String] {
        self.core
            .endpoints
            .iter()
            .position(|candidate| std::ptr::eq(candidate, endpoint))
            .and_then(|index| self.waits_on.get(index))
            .map_or(&[], Vec::as_slice)
    }

    /// The checks `endpoint` evaluates that call another service's health endpoint.
    pub fn health_calls<'c>(
        &'c self,
        endpoint: &'c probity::contract::EndpointContract,
    ) -> impl Iterator<Item = &'c str> {
        endpoint
            .checks
            .iter()
            .filter(|check| self.health_calls.contains(check))
            .map(String::as_str)
    }

    /// How the drain delay was derived, when the contract says.
    pub fn drain_derivation(&self) -> Option<DrainDerivation> {
        self.derivation
    }

    /// The contract as the core reads it.
    pub fn core(&self) -> &probity::Contract {
        &self.core
    }
}

/// Removes `key` (a list of names, or one name, or null) from an object and returns the names.
fn take_names(object: &mut Value, key: &str) -> Vec<String> {
    let Some(taken) = object.as_object_mut().and_then(|fields| fields.remove(key)) else {
        return Vec::new();
    };
    match taken {
        Value::String(name) => vec![name],
        Value::Array(items) => items
            .into_iter()
            .filter_map(|item| item.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VERSION_2: &str = r#"{
        "version": 2, "service": "checkout",
        "endpoints": [
            {"probe": "startup", "path": "/startupz", "checks": ["database"], "checks_dependencies": false, "waits_on": ["postgres"]},
            {"probe": "readiness", "path": "/readyz", "checks": ["db", "payments"], "checks_dependencies": true, "waits_on": []}
        ],
        "checks": [
            {"name": "db", "tier": "hard", "dependency": "postgres", "interval_ms": 1000, "timeout_ms": 500, "jitter_ms": 100, "rise": 3, "fall": 1, "staleness_ms": 3000, "boot_requires_rise": false, "calls_health_endpoint": false, "fallback": null},
            {"name": "payments", "tier": "hard", "dependency": "http", "interval_ms": 5000, "timeout_ms": 1000, "jitter_ms": 500, "rise": 3, "fall": 1, "staleness_ms": 15000, "boot_requires_rise": false, "calls_health_endpoint": true, "fallback": "cached"}
        ],
        "liveness": [],
        "startup": {"steps": [{"name": "database", "waits_on": "postgres"}, {"name": "config", "waits_on": null}], "expected_boot_ms": 40000},
        "shutdown": {"drain_delay_ms": 12000, "in_flight_deadline_ms": 10000,
                     "drain_delay_derivation": {"readiness_period_ms": 5000, "readiness_failure_threshold": 2, "load_balancer_reaction_ms": 2000}}
    }"#;

    #[test]
    fn reads_the_version_2_facts_and_hands_the_rest_to_the_core() {
        let contract = ServiceContract::from_json(VERSION_2).unwrap();
        let startup = contract
            .endpoint(probity::contract::ProbeKind::Startup)
            .unwrap();
        assert_eq!(contract.waits_on(startup), ["postgres"]);
        let readiness = contract.endpoint_for_path("/readyz").unwrap();
        assert!(contract.waits_on(readiness).is_empty());
        assert_eq!(
            contract.health_calls(readiness).collect::<Vec<_>>(),
            ["payments"]
        );
        let steps: Vec<&str> = contract
            .startup
            .steps
            .iter()
            .map(|step| step.name.as_str())
            .collect();
        assert_eq!(steps, ["database", "config"]);
        assert_eq!(contract.startup.expected_boot_ms, Some(40000));
        let derivation = contract.drain_derivation().unwrap();
        assert_eq!(derivation.load_balancer_reaction_ms, 2000);
    }

    #[test]
    fn refuses_unknown_versions_and_bad_json() {
        assert!(ServiceContract::from_json("{\"version\": 3}").is_err());
        assert!(ServiceContract::from_json("{").is_err());
    }
}
