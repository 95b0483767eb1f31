//! The core's rules the agent applies while it reads its configuration, before a registry
//! exists: redaction of credentials and the naming of checks and conditions. Everything else —
//! heartbeats for the liveness conditions, the configured probe paths, the contract — the agent
//! takes from the core's own API.

/// Redacts credentials from text, with the core's own rules.
pub(crate) fn redact(text: &str) -> std::borrow::Cow<'_, str> {
    probity::redact::redact(text)
}

/// The startup step the agent completes once every liveness condition has shown a sign of life.
pub(crate) const APP_STARTED_STEP: &str = "app_started";

/// The core's naming rule for checks and conditions ([`probity::validate_name`]), applied while
/// the file is parsed so a bad name is reported at its line (the core checks it again when the
/// registry is built), and the agent's own startup step's name reserved too.
pub(crate) fn validate_name(name: &str) -> Result<(), String> {
    if name == APP_STARTED_STEP {
        return Err(format!(
            "invalid name `{name}`: the name is reserved for the agent's own startup step"
        ));
    }
    probity::validate_name(name).map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_core_rules() {
        for name in ["db-pool", "redis.cache", "0ready"] {
            assert_eq!(validate_name(name), Ok(()));
        }
        for name in [
            "Db",
            "-db",
            "",
            "db pool",
            "deadlock",
            "runtime_stall",
            "marked_broken",
            "readiness",
            "app_started",
        ] {
            let error = validate_name(name).unwrap_err();
            assert!(
                error.starts_with(&format!("invalid name `{name}`: ")),
                "{error}"
            );
        }
        assert!(validate_name(&"a".repeat(64)).is_err());
        // Whatever the core refuses, the agent refuses with the core's words.
        for name in ["deadlock", "Db", &"a".repeat(64)] {
            let core = probity::validate_name(name).unwrap_err().to_string();
            assert_eq!(validate_name(name), Err(core));
        }
    }
}
