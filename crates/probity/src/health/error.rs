//! Why a registry could not be built or started, and a name a call gave that was never declared.

use probity_contract::Tier;
use std::time::Duration;

/// Why a registry could not be built. Every variant names the check (or step) and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// A name is empty, too long, has characters outside `[a-z0-9_.-]`, or is reserved.
    #[error("invalid name `{name}`: {reason}")]
    InvalidName {
        /// The offending name.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Two checks, steps or conditions share a name.
    #[error(
        "duplicate name `{name}`: names must be unique across checks, startup steps and liveness conditions"
    )]
    DuplicateName {
        /// The repeated name.
        name: String,
    },
    /// A duration or count is zero where it must be positive.
    #[error("check `{check}`: {field} must be greater than zero")]
    Zero {
        /// The check.
        check: String,
        /// The field (`interval`, `timeout`, `rise`, `fall`, `passive_failures`).
        field: &'static str,
    },
    /// The declared readiness probe cannot be a Kubernetes probe.
    #[error("readiness probe: {field} must be greater than zero")]
    ReadinessProbe {
        /// The field (`period` or `failure_threshold`).
        field: &'static str,
    },
    /// The timeout is not shorter than the interval, so polls would pile up.
    #[error(
        "check `{check}`: timeout ({timeout:?}) must be shorter than interval ({interval:?}), or polls pile up behind a slow dependency"
    )]
    TimeoutNotBelowInterval {
        /// The check.
        check: String,
        /// The configured timeout.
        timeout: Duration,
        /// The configured interval.
        interval: Duration,
    },
    /// The staleness bound is below the interval, so every result would go stale between polls.
    #[error(
        "check `{check}`: staleness ({staleness:?}) must be at least the interval ({interval:?})"
    )]
    StalenessBelowInterval {
        /// The check.
        check: String,
        /// The configured bound.
        staleness: Duration,
        /// The interval.
        interval: Duration,
    },
    /// Jitter must be below the interval.
    #[error(
        "check `{check}`: jitter ({jitter:?}) must be shorter than the interval ({interval:?})"
    )]
    JitterNotBelowInterval {
        /// The check.
        check: String,
        /// The configured jitter.
        jitter: Duration,
        /// The interval.
        interval: Duration,
    },
    /// A heartbeat's longest silence is zero: every instant between two beats would be a wedge.
    #[error("heartbeat `{heartbeat}`: max_silence must be greater than zero")]
    ZeroMaxSilence {
        /// The heartbeat.
        heartbeat: String,
    },
    /// `fail_open_for` set on a check that is not hard (soft checks always fail open).
    #[error(
        "check `{check}`: fail_open_for applies to hard checks only (a {tier} check never fails readiness)"
    )]
    FailOpenOnNonHard {
        /// The check.
        check: String,
        /// Its tier.
        tier: Tier,
    },
    /// A fallback named on a check that is not hard (a soft or info check never fails
    /// readiness, so nothing needs to serve instead).
    #[error(
        "check `{check}`: a fallback applies to hard checks only (a {tier} check never fails readiness)"
    )]
    FallbackOnNonHard {
        /// The check.
        check: String,
        /// Its tier.
        tier: Tier,
    },
    /// A fallback names no declared check.
    #[error("check `{check}`: fallback `{fallback}` is not a declared check (known: {known})")]
    UnknownFallback {
        /// The check.
        check: String,
        /// The name it gave.
        fallback: String,
        /// The checks that are declared.
        known: String,
    },
    /// A check names itself as its fallback.
    #[error("check `{check}`: a check cannot be its own fallback")]
    SelfFallback {
        /// The check.
        check: String,
    },
    /// A fallback has a fallback of its own: a chain, or a cycle. What serves instead must be
    /// judged on its own evidence, or two failing checks could vouch for each other.
    #[error(
        "check `{check}`: fallback `{fallback}` names a fallback of its own (`{next}`); fallbacks do not chain"
    )]
    FallbackChain {
        /// The check.
        check: String,
        /// Its fallback.
        fallback: String,
        /// The fallback's own fallback.
        next: String,
    },
}

impl BuildError {
    /// The check, step or condition the error is about (empty for the readiness probe).
    pub fn check(&self) -> &str {
        match self {
            BuildError::InvalidName { name, .. } | BuildError::DuplicateName { name } => name,
            BuildError::Zero { check, .. }
            | BuildError::TimeoutNotBelowInterval { check, .. }
            | BuildError::StalenessBelowInterval { check, .. }
            | BuildError::JitterNotBelowInterval { check, .. }
            | BuildError::FailOpenOnNonHard { check, .. }
            | BuildError::FallbackOnNonHard { check, .. }
            | BuildError::UnknownFallback { check, .. }
            | BuildError::SelfFallback { check }
            | BuildError::FallbackChain { check, .. } => check,
            BuildError::ZeroMaxSilence { heartbeat } => heartbeat,
            BuildError::ReadinessProbe { .. } => "",
        }
    }

    /// The field the error is about.
    pub fn field(&self) -> &'static str {
        match self {
            BuildError::InvalidName { .. } | BuildError::DuplicateName { .. } => "name",
            BuildError::Zero { field, .. } | BuildError::ReadinessProbe { field } => field,
            BuildError::TimeoutNotBelowInterval { .. } => "timeout",
            BuildError::StalenessBelowInterval { .. } => "staleness",
            BuildError::JitterNotBelowInterval { .. } => "jitter",
            BuildError::FailOpenOnNonHard { .. } => "fail_open_for",
            BuildError::FallbackOnNonHard { .. }
            | BuildError::UnknownFallback { .. }
            | BuildError::SelfFallback { .. }
            | BuildError::FallbackChain { .. } => "fallback",
            BuildError::ZeroMaxSilence { .. } => "max_silence",
        }
    }
}

/// Why the pollers could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// `start` was called outside a tokio runtime.
    #[error("no tokio runtime: call start() from within a tokio runtime")]
    NoRuntime,
    /// The watchdog thread could not be spawned.
    #[error("could not spawn the watchdog thread: {0}")]
    Thread(#[from] std::io::Error),
}

/// A check, step or heartbeat named in a call was never declared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} `{name}` (declared: {known})")]
pub struct UnknownName {
    /// `check`, `startup step` or `heartbeat`.
    pub kind: &'static str,
    /// The name asked for.
    pub name: String,
    /// The declared names, comma-separated.
    pub known: String,
}
