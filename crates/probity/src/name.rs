//! The rule for the names of checks, startup steps and liveness conditions.

use crate::health::error::BuildError;
use probity_contract::verdict::Gate;

/// Longest a name may be (the DNS label limit, so names fit gRPC service names and labels).
const MAX_NAME_LEN: usize = 63;

/// Checks a check, startup step or liveness condition name against the rule
/// [`HealthBuilder::build`](crate::HealthBuilder::build) applies: 1 to 63 characters, only
/// lowercase ASCII letters, digits, `_`, `-` and `.`, starting with a letter or digit, and none
/// of the names the built-in gates and conditions answer under (`shutdown`, `startup`,
/// `liveness`, `readiness`, `runtime_stall`, `deadlock`, `marked_broken`).
///
/// A tool that reads names from a file checks each as it reads it, so a bad one is reported at
/// its line rather than when the registry is built.
///
/// ```
/// use probity::BuildError;
///
/// assert!(probity::validate_name("db-pool").is_ok());
/// let error = probity::validate_name("deadlock").unwrap_err();
/// assert!(matches!(error, BuildError::InvalidName { .. }));
/// assert_eq!(
///     error.to_string(),
///     "invalid name `deadlock`: the name is reserved for a built-in gate or condition"
/// );
/// ```
///
/// # Errors
///
/// [`BuildError::InvalidName`], naming the name and what is wrong with it.
pub fn validate_name(name: &str) -> Result<(), BuildError> {
    let invalid = |reason| BuildError::InvalidName {
        name: name.to_owned(),
        reason,
    };
    if name.is_empty() {
        return Err(invalid("names must not be empty"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(invalid("names must be at most 63 characters"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-' | '.'))
    {
        return Err(invalid(
            "names may hold only lowercase letters, digits, '_', '-' and '.'",
        ));
    }
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err(invalid("names must start with a letter or digit"));
    }
    let reserved = [
        Gate::Shutdown.name(),
        Gate::Startup.name(),
        Gate::Liveness.name(),
        "readiness",
        "runtime_stall",
        "deadlock",
        "marked_broken",
    ];
    if reserved.contains(&name) {
        return Err(invalid(
            "the name is reserved for a built-in gate or condition",
        ));
    }
    Ok(())
}
