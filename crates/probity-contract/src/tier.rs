//! Tiers: how much a check matters to readiness.

use serde::{Deserialize, Serialize};
use std::fmt;

/// How much a check matters to readiness.
///
/// The tier decides what a failing check does to the overall readiness status:
///
/// | tier | check failing | overall status | HTTP |
/// |---|---|---|---|
/// | [`Tier::Hard`] | the instance cannot serve a request without it | `fail` | 503 |
/// | [`Tier::Soft`] | the instance serves a degraded response without it | `warn` | 200 |
/// | [`Tier::Info`] | reported for operators, never affects status | `pass` | 200 |
///
/// A hard check is fail-closed; a soft check is fail-open. A hard check may fail open for a
/// bounded window first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// Required to serve: failing makes readiness fail.
    Hard,
    /// Degradable: failing makes readiness `warn`, still 200.
    Soft,
    /// Best effort: reported, never changes the status.
    Info,
}

impl Tier {
    /// The lowercase name used in every output format.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Hard => "hard",
            Tier::Soft => "soft",
            Tier::Info => "info",
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
