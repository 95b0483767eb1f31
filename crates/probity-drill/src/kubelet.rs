//! A prober that follows the kubelet's rules for startup and liveness probes, per instance.
//!
//! As the kubelet does (`pkg/kubelet/prober/worker.go`, `pkg/kubelet/prober/prober.go`, and
//! <https://kubernetes.io/docs/concepts/configuration/liveness-readiness-startup-probes/>):
//! - each probe runs on its own ticker of `periodSeconds`; a probe that takes longer than its
//!   `timeoutSeconds` is a failure;
//! - liveness is not probed until the startup probe has succeeded once; after that the startup
//!   probe never runs again for that container;
//! - `failureThreshold` consecutive failures of startup or liveness kill the container, which is
//!   restarted in the same sync; the first restart is immediate, later ones wait the
//!   CrashLoopBackOff delay (10 s, doubling, capped at 300 s, reset after 10 minutes of running);
//! - an HTTP probe succeeds on a status in 200..400.

use crate::fleet::{EventKind, Events, Instance, get_status, probe_client};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::time::{Instant, MissedTickBehavior};

/// One probe's settings, as in a container spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ProbeSpec {
    /// `periodSeconds`.
    #[serde(serialize_with = "crate::report::millis")]
    pub period: Duration,
    /// `timeoutSeconds`.
    #[serde(serialize_with = "crate::report::millis")]
    pub timeout: Duration,
    /// `failureThreshold`.
    pub failure_threshold: u32,
}

/// The startup and liveness probes of every instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Probes {
    /// `startupProbe` on `/startupz`.
    pub startup: ProbeSpec,
    /// `livenessProbe` on `/livez`.
    pub liveness: ProbeSpec,
}

impl Default for Probes {
    fn default() -> Self {
        Probes {
            startup: ProbeSpec {
                period: Duration::from_secs(1),
                timeout: Duration::from_secs(1),
                failure_threshold: 30,
            },
            liveness: ProbeSpec {
                period: Duration::from_secs(2),
                timeout: Duration::from_secs(1),
                failure_threshold: 3,
            },
        }
    }
}

/// The kubelet's CrashLoopBackOff delay before restart number `restart` (1-based): 0 for the
/// first, then 10 s doubling up to 300 s (`pkg/kubelet/kubelet.go`).
pub fn backoff(restart: u32) -> Duration {
    if restart <= 1 {
        return Duration::ZERO;
    }
    let doublings = (restart - 2).min(5);
    Duration::from_secs((10u64 << doublings).min(300))
}

enum Phase {
    Startup,
    Liveness,
}

/// Runs the prober for one instance until the task is aborted.
pub async fn run(instance: Arc<Instance>, probes: Probes, events: Events) {
    let mut restarts_in_a_row = 0u32;
    let mut last_restart: Option<Instant> = None;
    loop {
        let generation = instance.generation();
        let mut phase = Phase::Startup;
        let mut failures = 0u32;
        let mut spec = probes.startup;
        let mut client = probe_client(spec.timeout);
        let mut ticker = tokio::time::interval(spec.period);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let killed_by = loop {
            ticker.tick().await;
            if instance.generation() != generation {
                break None; // restarted by someone else: start over
            }
            let path = match phase {
                Phase::Startup => "/startupz",
                Phase::Liveness => "/livez",
            };
            let probe = match phase {
                Phase::Startup => "startup",
                Phase::Liveness => "liveness",
            };
            match get_status(&client, instance.listen, path).await {
                Ok(status) if (200..400).contains(&status) => {
                    failures = 0;
                    if let Phase::Startup = phase {
                        events.record(instance.index, EventKind::Started);
                        phase = Phase::Liveness;
                        spec = probes.liveness;
                        client = probe_client(spec.timeout);
                        ticker = tokio::time::interval(spec.period);
                        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
                    }
                }
                outcome => {
                    failures += 1;
                    let reason = match outcome {
                        Ok(status) => format!("HTTP {status}"),
                        Err(reason) => reason,
                    };
                    events.record(instance.index, EventKind::ProbeFailed { probe, reason });
                    if failures >= spec.failure_threshold {
                        break Some(probe);
                    }
                }
            }
        };
        let Some(probe) = killed_by else {
            continue;
        };
        if instance.generation() != generation {
            continue;
        }
        events.record(instance.index, EventKind::Killed { probe });
        instance.kill().await;
        // The backoff resets after 10 minutes of running.
        if last_restart.is_some_and(|at| at.elapsed() > Duration::from_secs(600)) {
            restarts_in_a_row = 0;
        }
        restarts_in_a_row += 1;
        last_restart = Some(Instant::now());
        tokio::time::sleep(backoff(restarts_in_a_row)).await;
        instance.restarts.fetch_add(1, Ordering::AcqRel);
        if let Err(error) = instance.start(&events).await {
            events.record(
                instance.index,
                EventKind::ProbeFailed {
                    probe: "restart",
                    reason: error.to_string(),
                },
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crash_loop_backoff_follows_the_kubelet() {
        let delays: Vec<u64> = (1..=9).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(delays, vec![0, 10, 20, 40, 80, 160, 300, 300, 300]);
    }
}
