//! Probe paths: where each probe is served, carried into the router, the quiet-probes layer, the
//! listener's probe reserve, every message, and the contract.

use probity_contract::ProbeKind;
use std::borrow::Cow;
use std::fmt;

/// The HTTP paths of the three probes. Defaults: `/livez`, `/readyz`, `/startupz`.
///
/// A team that already serves `/internal/live` and `/internal/ready`, or `/healthz/live` and
/// `/healthz/ready`, keeps its manifests and sets its own:
///
/// ```
/// use probity::ProbePaths;
///
/// let paths = ProbePaths::new("/internal/live", "/internal/ready", "/internal/startup")?;
/// assert_eq!(paths.readiness(), "/internal/ready");
/// assert!(ProbePaths::new("/x", "/x", "/y").is_err());
/// # Ok::<(), probity::PathError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbePaths {
    liveness: Cow<'static, str>,
    readiness: Cow<'static, str>,
    startup: Cow<'static, str>,
}

impl Default for ProbePaths {
    fn default() -> Self {
        Self {
            liveness: Cow::Borrowed(ProbeKind::Liveness.default_path()),
            readiness: Cow::Borrowed(ProbeKind::Readiness.default_path()),
            startup: Cow::Borrowed(ProbeKind::Startup.default_path()),
        }
    }
}

/// A probe path that cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {probe} path `{path}`: {reason}")]
pub struct PathError {
    /// The probe.
    pub probe: ProbeKind,
    /// The path given.
    pub path: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl ProbePaths {
    /// Three paths, each starting with `/`, without a trailing `/`, query or wildcard, and none
    /// equal to or under another (`/health` and `/health/ready` would collide on sub-paths).
    pub fn new(
        liveness: impl Into<Cow<'static, str>>,
        readiness: impl Into<Cow<'static, str>>,
        startup: impl Into<Cow<'static, str>>,
    ) -> Result<Self, PathError> {
        let paths = Self {
            liveness: liveness.into(),
            readiness: readiness.into(),
            startup: startup.into(),
        };
        for probe in ProbeKind::ALL {
            let path = paths.get(probe);
            let invalid = |reason| PathError {
                probe,
                path: path.to_owned(),
                reason,
            };
            if !path.starts_with('/') || path.len() < 2 {
                return Err(invalid("a path starts with `/` and names something"));
            }
            if path.ends_with('/') {
                return Err(invalid("a path does not end with `/`"));
            }
            if path.contains(['?', '#', '{', '}', '*', ' ', ':']) || path.contains("//") {
                return Err(invalid(
                    "a path holds no query, fragment, wildcard, `:`, space or empty segment",
                ));
            }
            for other in ProbeKind::ALL.into_iter().filter(|other| *other != probe) {
                let other_path = paths.get(other);
                if path == other_path
                    || path
                        .strip_prefix(other_path)
                        .is_some_and(|rest| rest.starts_with('/'))
                {
                    return Err(invalid(
                        "each probe needs its own path, not equal to or under another's",
                    ));
                }
            }
        }
        Ok(paths)
    }

    /// The path of `probe`.
    pub fn get(&self, probe: ProbeKind) -> &str {
        match probe {
            ProbeKind::Liveness => &self.liveness,
            ProbeKind::Readiness => &self.readiness,
            ProbeKind::Startup => &self.startup,
        }
    }

    /// The liveness path.
    pub fn liveness(&self) -> &str {
        &self.liveness
    }

    /// The readiness path.
    pub fn readiness(&self) -> &str {
        &self.readiness
    }

    /// The startup path.
    pub fn startup(&self) -> &str {
        &self.startup
    }

    /// The probe a request path is for, with the entry it names, if any: `/readyz` →
    /// (readiness, none); `/readyz/db` → (readiness, `db`).
    pub fn route<'a>(&self, path: &'a str) -> Option<(ProbeKind, Option<&'a str>)> {
        ProbeKind::ALL.into_iter().find_map(|probe| {
            let rest = path.strip_prefix(self.get(probe))?;
            if rest.is_empty() {
                return Some((probe, None));
            }
            let name = rest.strip_prefix('/')?;
            (!name.is_empty() && !name.contains('/')).then_some((probe, Some(name)))
        })
    }
}

impl fmt::Display for ProbePaths {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.liveness, self.readiness, self.startup)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_probes_and_entries() {
        let paths = ProbePaths::new("/healthz/live", "/healthz/ready", "/healthz/startup").unwrap();
        assert_eq!(
            paths.route("/healthz/ready"),
            Some((ProbeKind::Readiness, None))
        );
        assert_eq!(
            paths.route("/healthz/ready/db"),
            Some((ProbeKind::Readiness, Some("db")))
        );
        assert_eq!(paths.route("/healthz/readyz"), None);
        assert_eq!(paths.route("/healthz/ready/db/x"), None);
        assert_eq!(paths.route("/livez"), None);
    }

    #[test]
    fn rejects_paths_that_cannot_be_served() {
        for (live, ready, start) in [
            ("livez", "/readyz", "/startupz"),
            ("/livez/", "/readyz", "/startupz"),
            ("/live?x", "/readyz", "/startupz"),
            ("/health", "/health/ready", "/startupz"),
            ("/{name}", "/readyz", "/startupz"),
        ] {
            assert!(
                ProbePaths::new(live, ready, start).is_err(),
                "{live} {ready} {start}"
            );
        }
    }
}
