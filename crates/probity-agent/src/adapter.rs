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

/// The core's naming rule for checks and conditions, applied while the file is parsed so a
/// bad name is reported at its line (the core checks it again when the registry is built).
pub(crate) fn validate_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() || name.len() > 63 {
        return Err("names are 1 to 63 characters");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-' | '.'))
    {
        return Err("names hold only lowercase letters, digits, '_', '-' and '.'");
    }
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err("names start with a letter or digit");
    }
    if [
        "shutdown",
        "startup",
        "liveness",
        "readiness",
        "marked_broken",
        APP_STARTED_STEP,
    ]
    .contains(&name)
    {
        return Err("the name is reserved for a built-in gate");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_core_rules() {
        assert!(validate_name("db-pool").is_ok());
        assert!(validate_name("Db").is_err());
        assert!(validate_name("-db").is_err());
        assert!(validate_name("app_started").is_err());
        assert!(validate_name(&"a".repeat(64)).is_err());
    }
}
