//! A prober that follows the kubelet's rules for startup and liveness probes, per instance.
//!
//! The rules are probity-contract's ([`probity_contract::kube`]), which cites the kubelet's
//! source for each: one worker per probe type on its own ticker of `periodSeconds`, a probe
//! that takes longer than `timeoutSeconds` is a failure, liveness waits for the startup probe
//! to pass once, `failureThreshold` consecutive failures of startup or liveness kill the
//! container and hold the worker until a new one runs, an HTTP probe passes on 200..400, and a
//! killed container is started again at once or after its CrashLoopBackOff delay. Here the
//! container is a `checkout` process, and a new process is a new container.

use crate::fleet::{EventKind, Events, Instance, get_status, probe_client};
use probity_contract::kube::backoff::{CrashLoopBackOff, RestartDecision};
use probity_contract::kube::probe::ProbeTiming;
use probity_contract::kube::prober::{
    ContainerView, Gate, ProbeResult, ProbeWorker, http_status_passes,
};
use probity_contract::probe::ProbeKind;
use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::time::{Instant, MissedTickBehavior};

/// The startup and liveness probes of every instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probes {
    /// `startupProbe` on `/startupz`.
    pub startup: ProbeTiming,
    /// `livenessProbe` on `/livez`.
    pub liveness: ProbeTiming,
}

impl Default for Probes {
    /// Short periods, so a drill takes seconds: startup every 1 s up to 30 times (a 30 s
    /// budget for the boot), liveness every 2 s, restarting after 3 failures; 1 s timeouts.
    fn default() -> Self {
        let timing = |period: u64, failure_threshold: u32| ProbeTiming {
            period: Duration::from_secs(period),
            timeout: Duration::from_secs(1),
            failure_threshold,
            ..ProbeTiming::default()
        };
        Probes {
            startup: timing(1, 30),
            liveness: timing(2, 3),
        }
    }
}

/// One probe in the report: its numbers as a container spec writes them.
struct Written<'a>(&'a ProbeTiming);

impl Serialize for Written<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut probe = serializer.serialize_struct("Probe", 3)?;
        probe.serialize_field("period", &(self.0.period.as_millis() as u64))?;
        probe.serialize_field("timeout", &(self.0.timeout.as_millis() as u64))?;
        probe.serialize_field("failure_threshold", &self.0.failure_threshold)?;
        probe.end()
    }
}

impl Serialize for Probes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut probes = serializer.serialize_struct("Probes", 2)?;
        probes.serialize_field("startup", &Written(&self.startup))?;
        probes.serialize_field("liveness", &Written(&self.liveness))?;
        probes.end()
    }
}

fn probe_name(kind: ProbeKind) -> &'static str {
    match kind {
        ProbeKind::Startup => "startup",
        ProbeKind::Liveness => "liveness",
        ProbeKind::Readiness => "readiness",
    }
}

fn path(kind: ProbeKind) -> &'static str {
    match kind {
        ProbeKind::Startup => "/startupz",
        ProbeKind::Liveness => "/livez",
        ProbeKind::Readiness => "/readyz",
    }
}

fn ticker(period: Duration) -> tokio::time::Interval {
    let mut ticker = tokio::time::interval(period);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    ticker
}

/// Runs the prober for one instance until the task is aborted.
pub async fn run(instance: Arc<Instance>, probes: Probes, events: Events) {
    let origin = Instant::now();
    let since_origin = || origin.elapsed();
    let mut startup = ProbeWorker::new(ProbeKind::Startup);
    let mut liveness = ProbeWorker::new(ProbeKind::Liveness);
    let mut startup_ticker = ticker(probes.startup.period);
    let mut liveness_ticker = ticker(probes.liveness.period);
    let startup_client = probe_client(probes.startup.timeout);
    let liveness_client = probe_client(probes.liveness.timeout);
    let mut backoff = CrashLoopBackOff::default();
    // When the previous container exited (the kubelet decides a restart on the status before
    // the kill, whose newest exited container is the one before).
    let mut newest_exited: Option<Duration> = None;
    // The container the workers are watching: its id (the process generation), when it
    // started, and whether its startup probe has passed.
    let mut container = (instance.generation(), since_origin(), false);
    loop {
        let kind = tokio::select! {
            _ = startup_ticker.tick() => ProbeKind::Startup,
            _ = liveness_ticker.tick() => ProbeKind::Liveness,
        };
        let generation = instance.generation();
        if generation != container.0 {
            // Restarted by someone else (the drill): a new container, not yet started.
            container = (generation, since_origin(), false);
        }
        let view = ContainerView {
            id: generation as u32,
            running: instance.is_running().await,
            started_at: container.1,
            started: container.2,
        };
        let (worker, timing, client) = match kind {
            ProbeKind::Startup => (&mut startup, &probes.startup, &startup_client),
            _ => (&mut liveness, &probes.liveness, &liveness_client),
        };
        if worker.gate(timing, since_origin(), Some(view)).gate != Gate::Probe {
            continue;
        }
        let outcome = get_status(client, instance.listen, path(kind)).await;
        let success = matches!(outcome, Ok(status) if http_status_passes(status));
        if !success {
            let reason = match outcome {
                Ok(status) => format!("HTTP {status}"),
                Err(reason) => reason,
            };
            events.record(
                instance.index,
                EventKind::ProbeFailed {
                    probe: probe_name(kind),
                    reason,
                },
            );
        }
        let Some(set) = worker.record(timing, success) else {
            continue;
        };
        if instance.generation() != generation {
            continue; // the container changed while the probe ran
        }
        match (kind, set.result) {
            (ProbeKind::Startup, ProbeResult::Success) => {
                container.2 = true;
                events.record(instance.index, EventKind::Started);
            }
            (_, ProbeResult::Failure) => {
                events.record(
                    instance.index,
                    EventKind::Killed {
                        probe: probe_name(kind),
                    },
                );
                instance.kill().await;
                let killed_at = since_origin();
                let decision = backoff.decide(newest_exited, killed_at);
                newest_exited = Some(killed_at);
                if let RestartDecision::WaitUntil(at) = decision {
                    tokio::time::sleep_until(origin + at).await;
                }
                instance.restarts.fetch_add(1, Ordering::AcqRel);
                if let Err(error) = instance.start(&events).await {
                    events.record(
                        instance.index,
                        EventKind::ProbeFailed {
                            probe: "restart",
                            reason: error.to_string(),
                        },
                    );
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_are_reported_as_a_container_spec_writes_them() {
        let json = serde_json::to_value(Probes::default()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "startup": {"period": 1000, "timeout": 1000, "failure_threshold": 30},
                "liveness": {"period": 2000, "timeout": 1000, "failure_threshold": 3},
            })
        );
        let defaults = Probes::default();
        assert_eq!(defaults.liveness.success_threshold, 1);
        assert_eq!(defaults.startup.failure_window(), Duration::from_secs(30));
    }
}
