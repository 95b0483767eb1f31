//! How the kubelet stops a container: which grace period applies, the preStop hook, the stop
//! signal and the kill.
//!
//! Sources (kubernetes/kubernetes unless noted):
//! - `pkg/kubelet/kuberuntime/kuberuntime_container.go` (`killContainer`,
//!   `setTerminationGracePeriod`, `executePreStopHook`): the grace period of a deletion, a
//!   probe-level override for a liveness or startup kill, the pod's otherwise; preStop runs
//!   first and its time comes off the grace, with a floor of
//!   `minimumGracePeriodInSeconds = 2` for what is left;
//! - `pkg/kubelet/pod_workers.go` (`calculateEffectiveGracePeriod`): whatever the pod or the
//!   deletion says, the kubelet stops a pod with a grace period of at least 1 s;
//! - `pkg/apis/core/v1/defaults.go`: `terminationGracePeriodSeconds` defaults to 30
//!   (`v1.DefaultTerminationGracePeriodSeconds`);
//! - `pkg/apis/core/validation/validation.go` (`validateSleepAction`, `validateHandler`):
//!   preStop `sleep.seconds` within the grace period, one handler per hook;
//! - <https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-termination>: the
//!   preStop hook also runs before a liveness or startup kill.

use super::Violation;
use super::probe::{ExecAction, HttpGetAction, TcpSocketAction};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The pod's `terminationGracePeriodSeconds` when unset.
pub const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS: i64 = 30;
/// The shortest grace period the kubelet stops a pod with: a pod whose
/// `terminationGracePeriodSeconds` (or deletion grace period) is 0 gets this
/// (`calculateEffectiveGracePeriod`: "no matter what, we always supply a grace period of 1").
/// Its containers' preStop hooks then have at most this long before the stop signal.
pub const MINIMUM_POD_GRACE_PERIOD: Duration = Duration::from_secs(1);
/// What is left of the grace period after preStop is never less than this
/// (`minimumGracePeriodInSeconds`).
pub const MINIMUM_GRACE_PERIOD: Duration = Duration::from_secs(2);

/// A container's `lifecycle` as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Lifecycle {
    /// `postStart`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_start: Option<LifecycleHandler>,
    /// `preStop`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_stop: Option<LifecycleHandler>,
    /// `stopSignal` (the ContainerStopSignals feature).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_signal: Option<String>,
}

/// A lifecycle hook as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LifecycleHandler {
    /// `exec`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec: Option<ExecAction>,
    /// `httpGet`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_get: Option<HttpGetAction>,
    /// `tcpSocket` (accepted for compatibility; the kubelet does nothing with it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_socket: Option<TcpSocketAction>,
    /// `sleep` (`lifecycle.preStop.sleep`, GA in v1.34).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sleep: Option<SleepAction>,
}

/// `sleep`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SleepAction {
    /// Seconds to sleep.
    pub seconds: i64,
}

impl LifecycleHandler {
    /// The API server's rules for a hook, given the pod's grace period in seconds: exactly
    /// one handler; a sleep of 0 up to the grace period (zero is allowed since the
    /// `PodLifecycleSleepActionAllowZero` gate went on by default in v1.33).
    pub fn validate(&self, grace_period_seconds: i64) -> Vec<Violation> {
        let present: Vec<&str> = [
            ("exec", self.exec.is_some()),
            ("httpGet", self.http_get.is_some()),
            ("tcpSocket", self.tcp_socket.is_some()),
            ("sleep", self.sleep.is_some()),
        ]
        .into_iter()
        .filter_map(|(key, present)| present.then_some(key))
        .collect();
        let mut violations = Vec::new();
        if present.is_empty() {
            violations.push(Violation::new("", "must specify a handler type"));
        }
        for extra in present.iter().skip(1) {
            violations.push(Violation::new(
                *extra,
                "may not specify more than 1 handler type",
            ));
        }
        if let Some(sleep) = self.sleep
            && !(0..=grace_period_seconds).contains(&sleep.seconds)
        {
            violations.push(Violation::new(
                "sleep.seconds",
                format!(
                    "must be non-negative and less than terminationGracePeriodSeconds ({grace_period_seconds})"
                ),
            ));
        }
        violations
    }

    /// How long the hook keeps the container from its stop signal, where that is known: a
    /// `sleep`'s seconds; zero for a hook whose time depends on what it runs.
    pub fn known_duration(&self) -> Duration {
        self.sleep
            .map(|sleep| Duration::from_secs(sleep.seconds.max(0).unsigned_abs()))
            .unwrap_or_default()
    }
}

/// The pod's `terminationGracePeriodSeconds`, checked and defaulted: 30 s when unset; a
/// negative value is rejected (`ValidateNonnegativeField`).
pub fn pod_grace_period(written_seconds: Option<i64>) -> Result<Duration, Violation> {
    match written_seconds {
        None => Ok(Duration::from_secs(
            DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS.unsigned_abs(),
        )),
        Some(seconds) if seconds < 0 => Err(Violation::new(
            "terminationGracePeriodSeconds",
            super::probe::NEGATIVE,
        )),
        Some(seconds) => Ok(Duration::from_secs(seconds.unsigned_abs())),
    }
}

/// Why the kubelet stops a container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopCause {
    /// The pod is being deleted, with this `deletionGracePeriodSeconds`.
    Deletion(Duration),
    /// A liveness or startup probe failed; the probe's own `terminationGracePeriodSeconds`,
    /// if it sets one.
    ProbeFailure(Option<Duration>),
}

/// `setTerminationGracePeriod`: a deletion's grace period; for a probe kill, the probe's
/// override if set; else the pod's.
pub fn grace_period(pod: Duration, cause: StopCause) -> Duration {
    match cause {
        StopCause::Deletion(grace) => grace,
        StopCause::ProbeFailure(Some(grace)) => grace,
        StopCause::ProbeFailure(None) => pod,
    }
}

/// The two stages of a stop: the preStop hook, then the stop signal with what is left of the
/// grace period before SIGKILL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopSequence {
    /// Time the preStop hook runs (cut at the grace period).
    pub pre_stop: Duration,
    /// Time from the stop signal (SIGTERM by default) to SIGKILL.
    pub signal_to_kill: Duration,
}

impl StopSequence {
    /// `killContainer`: the hook runs for up to the grace period; the rest of it, at least
    /// [`MINIMUM_GRACE_PERIOD`], is the time between the stop signal and SIGKILL.
    pub fn new(grace: Duration, pre_stop: Duration) -> Self {
        let pre_stop = pre_stop.min(grace);
        StopSequence {
            pre_stop,
            signal_to_kill: grace.saturating_sub(pre_stop).max(MINIMUM_GRACE_PERIOD),
        }
    }

    /// The longest the container can take to stop: preStop, then the signal's grace.
    pub fn longest(&self) -> Duration {
        self.pre_stop + self.signal_to_kill
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(value: u64) -> Duration {
        Duration::from_secs(value)
    }

    #[test]
    fn grace_period_defaults_and_overrides() {
        assert_eq!(pod_grace_period(None).unwrap(), secs(30));
        assert_eq!(pod_grace_period(Some(0)).unwrap(), Duration::ZERO);
        assert!(pod_grace_period(Some(-1)).is_err());
        assert_eq!(
            grace_period(secs(30), StopCause::ProbeFailure(None)),
            secs(30)
        );
        assert_eq!(
            grace_period(secs(30), StopCause::ProbeFailure(Some(secs(5)))),
            secs(5)
        );
        assert_eq!(
            grace_period(secs(30), StopCause::Deletion(secs(1))),
            secs(1)
        );
    }

    #[test]
    fn pre_stop_comes_off_the_grace_with_a_two_second_floor() {
        assert_eq!(
            StopSequence::new(secs(30), secs(10)),
            StopSequence {
                pre_stop: secs(10),
                signal_to_kill: secs(20)
            }
        );
        // A hook as long as the grace is cut there, and the signal still gets 2 s.
        let sequence = StopSequence::new(secs(30), secs(45));
        assert_eq!(sequence.pre_stop, secs(30));
        assert_eq!(sequence.signal_to_kill, MINIMUM_GRACE_PERIOD);
        assert_eq!(sequence.longest(), secs(32));
    }

    #[test]
    fn a_zero_grace_period_still_gives_the_hook_a_second_and_the_signal_two() {
        let grace = pod_grace_period(Some(0))
            .unwrap()
            .max(MINIMUM_POD_GRACE_PERIOD);
        let sequence = StopSequence::new(grace, secs(20));
        assert_eq!(sequence.pre_stop, secs(1));
        assert_eq!(sequence.signal_to_kill, MINIMUM_GRACE_PERIOD);
    }

    #[test]
    fn pre_stop_sleep_fits_the_grace_period() {
        let sleep = |seconds| LifecycleHandler {
            sleep: Some(SleepAction { seconds }),
            ..LifecycleHandler::default()
        };
        assert!(sleep(10).validate(30).is_empty());
        assert!(sleep(0).validate(30).is_empty());
        assert_eq!(sleep(31).validate(30)[0].field, "sleep.seconds");
        assert!(sleep(-1).validate(30)[0].message.contains("(30)"));
        assert_eq!(sleep(10).known_duration(), secs(10));
        let two = LifecycleHandler {
            exec: Some(ExecAction {
                command: Some(vec!["sleep".into(), "5".into()]),
            }),
            ..sleep(5)
        };
        assert_eq!(two.validate(30)[0].field, "sleep");
        assert_eq!(
            two.validate(30)[0].message,
            "may not specify more than 1 handler type"
        );
        assert_eq!(LifecycleHandler::default().validate(30)[0].field, "");
    }

    #[test]
    fn lifecycle_reads_as_written() {
        let lifecycle: Lifecycle =
            serde_json::from_str(r#"{ "preStop": { "sleep": { "seconds": 5 } } }"#).unwrap();
        assert_eq!(lifecycle.pre_stop.unwrap().known_duration(), secs(5));
        assert!(serde_json::from_str::<Lifecycle>(r#"{ "preStp": {} }"#).is_err());
    }
}
