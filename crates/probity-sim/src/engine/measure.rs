//! Measurements: the fleet's error rate over time, each pod's states, drains, kills and
//! restarts, the probe load, and the report built from them at the end of a run.

use super::traffic::Traffic;
use crate::report::{
    DrainOutcome, FaultSummary, InstanceReport, KillReason, KillRecord, LaneSpan, LaneState, Report,
};
use crate::scenario::Scenario;
use crate::time::Millis;
use std::collections::BTreeMap;

/// What was measured about one pod.
#[derive(Debug, Clone, Default)]
pub(super) struct PodRecord {
    pub(super) restarts: u32,
    pub(super) drains: u32,
    /// When the incident first made it fail requests while in rotation.
    pub(super) affected_at: Option<Millis>,
    /// When a health check first took it out of rotation after the onset.
    pub(super) drained_at: Option<Millis>,
    /// When it first served degraded in rotation after the onset (a check failing while its
    /// fallback serves).
    pub(super) degraded_at: Option<Millis>,
    /// Its states, each from a time on.
    pub(super) lanes: Vec<(Millis, LaneState)>,
    pub(super) in_rotation: bool,
}

/// Everything measured so far.
#[derive(Debug)]
pub(super) struct Measurements {
    pub(super) pods: Vec<PodRecord>,
    resolution: Millis,
    /// Requests and failed requests per time bucket.
    buckets: Vec<(f64, f64)>,
    /// Health-check requests to the pods (kubelet probes and load-balancer checks).
    pub(super) probe_requests: u64,
    pub(super) kills: Vec<KillRecord>,
    pub(super) oom_kills: u32,
    pub(super) max_inflight: u32,
    pub(super) rotation_changes: u32,
    names: Vec<String>,
}

impl Measurements {
    /// Nothing measured yet.
    pub(super) fn new(names: &[String], duration: Millis, resolution: Millis) -> Self {
        let buckets = duration.div_ceil(resolution) as usize;
        Measurements {
            pods: vec![PodRecord::default(); names.len()],
            resolution,
            buckets: vec![(0.0, 0.0); buckets.max(1)],
            probe_requests: 0,
            kills: Vec::new(),
            oom_kills: 0,
            max_inflight: 0,
            rotation_changes: 0,
            names: names.to_vec(),
        }
    }

    /// A kill or crash of `pod`.
    pub(super) fn record_kill(&mut self, pod: usize, now: Millis, reason: KillReason) {
        self.kills.push(KillRecord {
            instance: self.names[pod].clone(),
            at_s: now as f64 / 1000.0,
            reason,
        });
    }

    /// The traffic of `[from, to)`: `rate_per_ms` requests per millisecond, `failure` of them
    /// failing, added to the buckets it falls in.
    pub(super) fn record_traffic(
        &mut self,
        from: Millis,
        to: Millis,
        rate_per_ms: f64,
        failure: f64,
    ) {
        let resolution = self.resolution;
        let mut time = from;
        while time < to {
            let bucket = (time / resolution) as usize;
            let bucket_end = (bucket as u64 + 1) * resolution;
            let end = bucket_end.min(to);
            let requests = rate_per_ms * (end - time) as f64;
            if let Some(entry) = self.buckets.get_mut(bucket) {
                entry.0 += requests;
                entry.1 += requests * failure;
            }
            time = end;
        }
    }
}

fn round(value: f64, digits: i32) -> f64 {
    let factor = 10f64.powi(digits);
    (value * factor).round() / factor
}

/// What a pod's record is told after a change.
#[derive(Debug, Clone, Copy)]
pub(super) struct Observed {
    pub(super) lane: LaneState,
    /// In rotation.
    pub(super) member: bool,
    /// Out of rotation now would be a drain: its app is up and no operator drained it.
    pub(super) drainable: bool,
}

/// What the report reads besides the measurements: the run's settings and the parts' totals.
#[derive(Debug, Clone, Copy)]
pub(super) struct Run<'a> {
    pub(super) scenario: &'a Scenario,
    pub(super) seed: u64,
    pub(super) routing: &'static str,
    /// The first fault's onset, and the end recovery counts from.
    pub(super) onset: Option<Millis>,
    pub(super) reference_end: Option<Millis>,
    /// The health checks' calls to each dependency.
    pub(super) dependency_calls: &'a [u64],
    /// Some check falls back to another's dependency.
    pub(super) fallbacks: bool,
    pub(super) traffic: &'a Traffic,
}

impl Measurements {
    /// Records `pod`'s state at `now` after a change: its lane, whether it is in rotation (and
    /// a drain when a health check took it out after `onset`). A change of rotation counts
    /// unless the fleet is still being set up at 0. Returns whether its membership changed.
    pub(super) fn record_state(
        &mut self,
        pod: usize,
        observed: Observed,
        now: Millis,
        onset: Option<Millis>,
        initialising: bool,
    ) -> bool {
        let record = &mut self.pods[pod];
        let moved = record.in_rotation != observed.member;
        if moved {
            record.in_rotation = observed.member;
            if now > 0 || !initialising {
                self.rotation_changes += 1;
            }
            if !observed.member && observed.drainable {
                record.drains += 1;
                if let Some(onset) = onset
                    && now >= onset
                    && record.drained_at.is_none()
                {
                    record.drained_at = Some(now);
                }
            }
        }
        if record
            .lanes
            .last()
            .is_none_or(|(_, last)| *last != observed.lane)
        {
            record.lanes.push((now, observed.lane));
        }
        moved
    }

    /// `pod` fails requests at `now`: in rotation after `onset`, it counts as affected.
    pub(super) fn note_failing(&mut self, pod: usize, now: Millis, onset: Millis) {
        let record = &mut self.pods[pod];
        if record.affected_at.is_none() && now >= onset && record.in_rotation {
            record.affected_at = Some(now);
        }
    }

    /// Whether serving degraded at `now` would be news: `pod` is in rotation after `onset`
    /// and has not served degraded yet.
    pub(super) fn watches_degraded(&self, pod: usize, now: Millis, onset: Millis) -> bool {
        let record = &self.pods[pod];
        now >= onset && record.in_rotation && record.degraded_at.is_none()
    }

    /// `pod` serves degraded from `now` on.
    pub(super) fn note_degraded(&mut self, pod: usize, now: Millis) {
        self.pods[pod].degraded_at = Some(now);
    }

    /// What the run measured.
    pub(super) fn report(&self, run: Run<'_>) -> Report {
        let scenario = run.scenario;
        let measure = self;
        let resolution = measure.resolution;
        let series: Vec<f64> = measure
            .buckets
            .iter()
            .map(|(requests, failed)| {
                if *requests > 0.0 {
                    failed / requests
                } else {
                    0.0
                }
            })
            .collect();
        let bucket_of = |time: Millis| (time / resolution) as usize;

        // Recovery: the last bucket at or after the onset whose error rate is above the
        // threshold; recovered at its end unless it is the last bucket of the run.
        let onset = run.onset;
        let mut recovered_at: Option<Millis> = None;
        let mut never_recovered = false;
        if let Some(onset) = onset {
            let first = bucket_of(onset);
            let last_bad = (first..series.len())
                .rev()
                .find(|&bucket| series[bucket] > scenario.measure.recovered_below);
            match last_bad {
                None => recovered_at = Some(onset),
                Some(bucket) if bucket + 1 >= series.len() => never_recovered = true,
                Some(bucket) => {
                    recovered_at = Some(((bucket as u64 + 1) * resolution).min(scenario.duration))
                }
            }
        }
        let time_to_recover_s = match (onset, recovered_at) {
            (Some(_), Some(recovered)) => {
                let reference = run.reference_end.unwrap_or(recovered);
                Some(recovered.saturating_sub(reference) as f64 / 1000.0)
            }
            _ => None,
        };

        // The incident window: onset to recovery (or the end).
        let (from, to) = match onset {
            None => (0, scenario.duration),
            Some(onset) => (
                onset,
                if never_recovered {
                    scenario.duration
                } else {
                    recovered_at
                        .unwrap_or(scenario.duration)
                        .max(onset + resolution)
                },
            ),
        };
        let last_bucket = measure.buckets.len() - 1;
        let (window_requests, window_failed) = measure.buckets[bucket_of(from).min(last_bucket)
            ..bucket_of(to.saturating_sub(1)).min(last_bucket) + 1]
            .iter()
            .fold((0.0, 0.0), |sum, bucket| {
                (sum.0 + bucket.0, sum.1 + bucket.1)
            });
        let fleet_error_rate = if window_requests > 0.0 {
            window_failed / window_requests
        } else {
            0.0
        };

        // Peak over a sliding window of whole buckets.
        let width = ((scenario.measure.rate_window / resolution) as usize).max(1);
        let mut peak: f64 = 0.0;
        let (mut sum_requests, mut sum_failed) = (0.0, 0.0);
        for (bucket, (requests, failed)) in measure.buckets.iter().enumerate() {
            sum_requests += requests;
            sum_failed += failed;
            if bucket >= width {
                sum_requests -= measure.buckets[bucket - width].0;
                sum_failed -= measure.buckets[bucket - width].1;
            }
            if sum_requests > 0.0 {
                peak = peak.max(sum_failed / sum_requests);
            }
        }

        let outage_s = series
            .iter()
            .filter(|rate| **rate >= scenario.measure.outage_threshold && **rate > 0.0)
            .count() as f64
            * resolution as f64
            / 1000.0;

        // Time to drain: every pod the fault broke left rotation because of a check.
        let affected: Vec<&PodRecord> = measure
            .pods
            .iter()
            .filter(|record| record.affected_at.is_some())
            .collect();
        // A pod that never left rotation but served degraded (a fallback serving instead)
        // was handled as its readiness said, from when it began to.
        let (drain, time_to_drain_s) = match onset {
            Some(onset) if !affected.is_empty() => {
                let handled: Option<Vec<(Millis, bool)>> = affected
                    .iter()
                    .map(|record| match (record.drained_at, record.degraded_at) {
                        (Some(drained), _) => Some((drained, false)),
                        (None, Some(degraded)) => Some((degraded, true)),
                        (None, None) => None,
                    })
                    .collect();
                match handled {
                    Some(times) => {
                        let degraded = times.iter().any(|(_, degraded)| *degraded);
                        let latest = times.into_iter().map(|(at, _)| at).max().unwrap_or(onset);
                        (
                            if degraded {
                                DrainOutcome::Degraded
                            } else {
                                DrainOutcome::Drained
                            },
                            Some(latest.saturating_sub(onset) as f64 / 1000.0),
                        )
                    }
                    None => (DrainOutcome::NeverDrained, None),
                }
            }
            _ => (DrainOutcome::NothingToDrain, None),
        };

        let seconds = scenario.duration as f64 / 1000.0;
        let dependency_check_qps = scenario
            .dependencies
            .iter()
            .enumerate()
            .filter(|(index, _)| run.dependency_calls[*index] > 0)
            .map(|(index, dependency)| {
                (
                    dependency.name.clone(),
                    round(run.dependency_calls[index] as f64 / seconds, 3),
                )
            })
            .collect::<BTreeMap<_, _>>();

        let keep_alive = scenario.requests.keep_alive.is_some();
        let fallbacks = run.fallbacks;
        let instances = measure
            .pods
            .iter()
            .enumerate()
            .map(|(pod, record)| {
                let flow = &run.traffic.flows[pod];
                let mut lanes: Vec<LaneSpan> = Vec::new();
                for (index, (since, state)) in record.lanes.iter().enumerate() {
                    let end = record
                        .lanes
                        .get(index + 1)
                        .map_or(scenario.duration, |(next, _)| *next);
                    if end > *since {
                        lanes.push(LaneSpan {
                            from_s: *since as f64 / 1000.0,
                            to_s: end as f64 / 1000.0,
                            state: *state,
                        });
                    }
                }
                InstanceReport {
                    name: scenario.fleet.names[pod].clone(),
                    requests: flow.requests.round() as u64,
                    failed: flow.failed.round() as u64,
                    degraded: fallbacks.then(|| flow.served_degraded.round() as u64),
                    error_rate: round(
                        if flow.requests > 0.0 {
                            flow.failed / flow.requests
                        } else {
                            0.0
                        },
                        4,
                    ),
                    restarts: record.restarts,
                    drains: record.drains,
                    out_of_rotation_traffic_s: keep_alive
                        .then(|| flow.out_of_rotation_ms as f64 / 1000.0),
                    out_of_rotation_requests: keep_alive
                        .then(|| flow.out_of_rotation_requests.round() as u64),
                    lanes,
                }
            })
            .collect();

        Report {
            name: scenario.name.clone(),
            seed: run.seed,
            routing: run.routing.to_string(),
            replicas: scenario.fleet.replicas,
            duration_s: seconds,
            fleet_error_rate: round(fleet_error_rate, 4),
            peak_error_rate: round(peak, 4),
            requests_total: run.traffic.total_requests.round() as u64,
            requests_failed: run.traffic.total_failed.round() as u64,
            requests_refused: run.traffic.total_refused.round() as u64,
            requests_degraded: fallbacks.then(|| run.traffic.total_degraded.round() as u64),
            restarts: measure.pods.iter().map(|record| record.restarts).sum(),
            drains: measure.pods.iter().map(|record| record.drains).sum(),
            rotation_changes: measure.rotation_changes,
            time_to_drain_s: time_to_drain_s.map(|value| round(value, 3)),
            drain,
            window_s: (
                from as f64 / 1000.0,
                to.min(scenario.duration) as f64 / 1000.0,
            ),
            time_to_recover_s: time_to_recover_s.map(|value| round(value, 3)),
            outage_s: round(outage_s, 3),
            probe_rps: round(measure.probe_requests as f64 / seconds, 3),
            dependency_check_qps,
            oom_kills: measure.oom_kills,
            max_inflight_checks: measure.max_inflight,
            kills: measure.kills.clone(),
            faults: scenario
                .faults
                .iter()
                .map(|fault| FaultSummary {
                    kind: fault.kind.name().to_string(),
                    at_s: fault.at as f64 / 1000.0,
                    until_s: fault.until.map(|until| until as f64 / 1000.0),
                })
                .collect(),
            instances,
            resolution_s: resolution as f64 / 1000.0,
            error_rate_series: series.iter().map(|value| round(*value, 4)).collect(),
            assumptions: scenario.assumptions.clone(),
        }
    }
}
