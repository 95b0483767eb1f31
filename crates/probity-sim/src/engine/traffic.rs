//! Traffic as a fluid: how requests are spread over the pods and how many fail.
//!
//! Between two events nothing that decides where requests go or whether they fail can
//! change, so the requests of each interval are split over the pods in proportion to their
//! shares and failed in proportion to their failure fractions. A pod's share is
//! `weight × unit + everyone`: its weight is the router's (1 for a member of a round-robin
//! balancer, its users on a hash ring, its pinned keep-alive connections), `unit` the share
//! of one unit of weight, `everyone` what every pod gets when the router ignores health
//! (Envoy's panic mode, an ALB failing open).
//!
//! The cost of a change is what changed: the fleet's failure is kept as running sums, and a
//! pod's own request counts are brought up to date from the integrals of `unit` and
//! `everyone` only when something about that pod changes. A pod leaving rotation changes
//! every other member's share, but not their weights: nothing is visited.
//!
//! Time is integrated by stretches over which the split and the fleet's failure stay the
//! same: an event that changes neither does not cut the stretch, so the totals (and the
//! rounding of their last digit) depend on the traffic, not on how many events a run
//! handles.

use crate::time::Millis;

/// How the router spreads requests right now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Split {
    /// Nowhere to send them: every request is refused (a Service with no ready endpoint).
    Refused,
    /// The balancer answers every request with an error (HAProxy's 503, Envoy's "no healthy
    /// upstream").
    Rejected,
    /// Over the members, in proportion to their weights.
    Members,
    /// Evenly over every pod, healthy or not.
    Everyone,
    /// Over fixed client connections: a pod gets its pinned connections' share, and the
    /// connections pinned nowhere are refused.
    Connections {
        /// Client connections in all.
        clients: u32,
    },
}

/// What becomes of a pod's requests right now: the fractions that fail and that are served
/// degraded (the rest succeed).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Outcome {
    /// Fraction failing.
    pub(crate) failure: f64,
    /// Fraction answered by a fallback instead of the dependency they need.
    pub(crate) degraded: f64,
}

impl Outcome {
    /// A fraction failing, none degraded.
    pub(crate) fn failing(failure: f64) -> Self {
        Outcome {
            failure,
            degraded: 0.0,
        }
    }
}

/// One pod's traffic: what it receives and fails, kept up to date lazily.
#[derive(Debug, Clone, Default)]
pub(crate) struct Flow {
    /// Whether the router counts it as a member (in rotation).
    pub(crate) member: bool,
    /// Its weight under [`Split::Members`] or [`Split::Connections`].
    pub(crate) weight: f64,
    /// Fraction of its requests that fail.
    pub(crate) failure: f64,
    /// Fraction of its requests served degraded (answered by a fallback).
    pub(crate) degraded: f64,
    /// Requests received up to `since`.
    pub(crate) requests: f64,
    /// Requests failed up to `since`.
    pub(crate) failed: f64,
    /// Requests served degraded up to `since`.
    pub(crate) served_degraded: f64,
    /// Time spent receiving requests while out of rotation (pinned connections).
    pub(crate) out_of_rotation_ms: Millis,
    /// Requests received while out of rotation.
    pub(crate) out_of_rotation_requests: f64,
    unit_mark: f64,
    everyone_mark: f64,
    since: Millis,
}

/// A running sum of `weight × failure` that returns to exactly zero when no term is left,
/// so rounding never leaves a phantom error rate behind.
#[derive(Debug, Clone, Copy, Default)]
struct Sum {
    value: f64,
    terms: usize,
}

impl Sum {
    fn replace(&mut self, old: f64, new: f64) {
        if old != 0.0 {
            self.terms -= 1;
        }
        if new != 0.0 {
            self.terms += 1;
        }
        self.value = if self.terms == 0 {
            0.0
        } else {
            self.value - old + new
        };
    }
}

/// The fleet's traffic.
#[derive(Debug)]
pub(crate) struct Traffic {
    rate_per_ms: f64,
    pub(crate) flows: Vec<Flow>,
    split: Split,
    unit: f64,
    everyone: f64,
    refused: f64,
    rejected: f64,
    members: usize,
    total_weight: Sum,
    weighted_failure: Sum,
    failure: Sum,
    weighted_degraded: Sum,
    degraded: Sum,
    /// The share clocks at `since`, the start of the stretch in force.
    unit_integral: f64,
    everyone_integral: f64,
    since: Millis,
    /// Traffic is integrated up to here.
    pub(crate) last: Millis,
    fleet_failure: f64,
    fleet_degraded: f64,
    /// Requests over the run so far.
    pub(crate) total_requests: f64,
    /// Failed requests over the run so far.
    pub(crate) total_failed: f64,
    /// Refused requests over the run so far.
    pub(crate) total_refused: f64,
    /// Requests served degraded over the run so far.
    pub(crate) total_degraded: f64,
}

impl Traffic {
    /// No traffic yet to `pods` pods, at `rate` requests per second.
    pub(crate) fn new(pods: usize, rate: f64) -> Self {
        Traffic {
            rate_per_ms: rate / 1000.0,
            flows: vec![Flow::default(); pods],
            split: Split::Refused,
            unit: 0.0,
            everyone: 0.0,
            refused: 0.0,
            rejected: 0.0,
            members: 0,
            total_weight: Sum::default(),
            weighted_failure: Sum::default(),
            failure: Sum::default(),
            weighted_degraded: Sum::default(),
            degraded: Sum::default(),
            unit_integral: 0.0,
            everyone_integral: 0.0,
            since: 0,
            last: 0,
            fleet_failure: 0.0,
            fleet_degraded: 0.0,
            total_requests: 0.0,
            total_failed: 0.0,
            total_refused: 0.0,
            total_degraded: 0.0,
        }
    }

    /// Members of rotation.
    pub(crate) fn members(&self) -> usize {
        self.members
    }

    /// The fraction of all requests that fail right now.
    #[cfg(test)]
    pub(crate) fn fleet_failure(&self) -> f64 {
        self.fleet_failure
    }

    /// The fraction refused right now.
    #[cfg(test)]
    pub(crate) fn refused(&self) -> f64 {
        self.refused
    }

    /// The split in force.
    pub(crate) fn split(&self) -> Split {
        self.split
    }

    /// A pod's share of all requests right now.
    pub(crate) fn share(&self, pod: usize) -> f64 {
        self.flows[pod].weight * self.unit + self.everyone
    }

    /// The share clocks: the integrals over time of the share of one unit of weight and of
    /// the share every pod gets, up to `last`.
    pub(crate) fn share_clocks(&self) -> (f64, f64) {
        let span = (self.last - self.since) as f64;
        (
            self.unit_integral + self.unit * span,
            self.everyone_integral + self.everyone * span,
        )
    }

    /// The share clock in force and how fast it runs (per millisecond): the unit clock,
    /// or the everyone clock while the router spreads over every pod.
    pub(crate) fn share_clock_now(&self) -> (f64, f64) {
        let (unit, everyone) = self.share_clocks();
        if self.split == Split::Everyone {
            (everyone, self.everyone)
        } else {
            (unit, self.unit)
        }
    }

    /// The pod's request counts up to `last`: call before changing anything about it.
    pub(crate) fn flush(&mut self, pod: usize) {
        let last = self.last;
        let (unit, everyone) = self.share_clocks();
        let flow = &mut self.flows[pod];
        let exposure = flow.weight * (unit - flow.unit_mark) + (everyone - flow.everyone_mark);
        let requests = self.rate_per_ms * exposure;
        if requests > 0.0 {
            flow.requests += requests;
            flow.failed += requests * flow.failure;
            flow.served_degraded += requests * flow.degraded;
            if !flow.member {
                flow.out_of_rotation_ms += last - flow.since;
                flow.out_of_rotation_requests += requests;
            }
        }
        flow.unit_mark = unit;
        flow.everyone_mark = everyone;
        flow.since = last;
    }

    /// Sets a pod's membership, weight and the fractions of its requests that fail and that
    /// are served degraded (flushing it first if any changes). Returns whether anything
    /// changed.
    pub(crate) fn set(&mut self, pod: usize, member: bool, weight: f64, outcome: Outcome) -> bool {
        let Outcome { failure, degraded } = outcome;
        let flow = &self.flows[pod];
        if flow.member == member
            && flow.weight == weight
            && flow.failure == failure
            && flow.degraded == degraded
        {
            return false;
        }
        self.flush(pod);
        let flow = &mut self.flows[pod];
        if flow.member != member {
            if member {
                self.members += 1;
            } else {
                self.members -= 1;
            }
        }
        self.total_weight.replace(flow.weight, weight);
        self.weighted_failure
            .replace(flow.weight * flow.failure, weight * failure);
        self.failure.replace(flow.failure, failure);
        self.weighted_degraded
            .replace(flow.weight * flow.degraded, weight * degraded);
        self.degraded.replace(flow.degraded, degraded);
        flow.member = member;
        flow.weight = weight;
        flow.failure = failure;
        flow.degraded = degraded;
        true
    }

    /// Puts a split in force and recomputes the fleet's failure, ending the stretch in force
    /// if either changed (`record` receives it, see [`Traffic::finish`]). Returns whether the
    /// split's kind changed (every pod's share may then have jumped from or to zero).
    pub(crate) fn apply(
        &mut self,
        split: Split,
        pods: usize,
        record: &mut impl FnMut(Millis, Millis, f64, f64),
    ) -> bool {
        let changed = std::mem::discriminant(&split) != std::mem::discriminant(&self.split);
        let (unit, everyone, refused, rejected) = match split {
            Split::Refused => (0.0, 0.0, 1.0, 0.0),
            Split::Rejected => (0.0, 0.0, 0.0, 1.0),
            Split::Members => {
                let total = self.total_weight.value;
                (if total > 0.0 { 1.0 / total } else { 0.0 }, 0.0, 0.0, 0.0)
            }
            Split::Everyone => (0.0, 1.0 / pods.max(1) as f64, 0.0, 0.0),
            Split::Connections { clients } => {
                let per = 1.0 / f64::from(clients.max(1));
                let pinned = self.total_weight.value * per;
                (per, 0.0, (1.0 - pinned).max(0.0), 0.0)
            }
        };
        let fleet =
            refused + rejected + unit * self.weighted_failure.value + everyone * self.failure.value;
        let fleet = fleet.clamp(0.0, 1.0);
        let degraded = (unit * self.weighted_degraded.value + everyone * self.degraded.value)
            .clamp(0.0, 1.0 - fleet);
        let current = (
            self.unit,
            self.everyone,
            self.refused,
            self.rejected,
            self.fleet_failure,
            self.fleet_degraded,
        );
        if (unit, everyone, refused, rejected, fleet, degraded) != current {
            self.finish(record);
        }
        self.split = split;
        self.unit = unit;
        self.everyone = everyone;
        self.refused = refused;
        self.rejected = rejected;
        self.fleet_failure = fleet;
        self.fleet_degraded = degraded;
        changed
    }

    /// Integrates the traffic up to `to` with the split in force.
    pub(crate) fn advance(&mut self, to: Millis) {
        self.last = self.last.max(to);
    }

    /// Ends the stretch in force at `last`: its requests go to the totals and the share
    /// clocks move on; `record` receives its span, the request rate per millisecond and the
    /// fraction failing, for the fleet's time series.
    pub(crate) fn finish(&mut self, record: &mut impl FnMut(Millis, Millis, f64, f64)) {
        if self.last <= self.since {
            return;
        }
        let span = (self.last - self.since) as f64;
        record(self.since, self.last, self.rate_per_ms, self.fleet_failure);
        let requests = self.rate_per_ms * span;
        self.total_requests += requests;
        self.total_failed += requests * self.fleet_failure;
        self.total_refused += requests * self.refused;
        self.total_degraded += requests * self.fleet_degraded;
        self.unit_integral += self.unit * span;
        self.everyone_integral += self.everyone * span;
        self.since = self.last;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_share_evenly_and_a_leaving_member_visits_nobody() {
        let mut traffic = Traffic::new(3, 1000.0);
        for pod in 0..3 {
            traffic.set(
                pod,
                true,
                1.0,
                Outcome::failing(if pod == 0 { 1.0 } else { 0.0 }),
            );
        }
        traffic.apply(Split::Members, 3, &mut |_, _, _, _| {});
        assert!((traffic.fleet_failure() - 1.0 / 3.0).abs() < 1e-12);
        traffic.advance(3000);
        // Pod 0 leaves rotation: the others' shares rise without being touched.
        traffic.set(0, false, 0.0, Outcome::failing(1.0));
        traffic.apply(Split::Members, 3, &mut |_, _, _, _| {});
        assert_eq!(traffic.fleet_failure(), 0.0);
        traffic.advance(6000);
        traffic.finish(&mut |_, _, _, _| {});
        for pod in 0..3 {
            traffic.flush(pod);
        }
        let requests: Vec<f64> = traffic
            .flows
            .iter()
            .map(|flow| flow.requests.round())
            .collect();
        assert_eq!(requests, [1000.0, 2500.0, 2500.0]);
        assert_eq!(traffic.flows[0].failed.round(), 1000.0);
        assert_eq!(traffic.total_requests.round(), 6000.0);
        assert_eq!(traffic.total_failed.round(), 1000.0);
    }

    #[test]
    fn refused_and_everyone_splits() {
        let mut traffic = Traffic::new(2, 1000.0);
        traffic.set(0, false, 0.0, Outcome::failing(1.0));
        traffic.set(1, false, 0.0, Outcome::failing(0.0));
        assert!(!traffic.apply(Split::Refused, 2, &mut |_, _, _, _| {}));
        assert_eq!(traffic.fleet_failure(), 1.0);
        assert!(traffic.apply(Split::Everyone, 2, &mut |_, _, _, _| {}));
        assert_eq!(traffic.fleet_failure(), 0.5);
        assert_eq!(traffic.share(1), 0.5);
    }

    #[test]
    fn connections_refuse_what_is_pinned_nowhere() {
        let mut traffic = Traffic::new(2, 1000.0);
        traffic.set(0, true, 3.0, Outcome::failing(0.0));
        traffic.set(1, false, 0.0, Outcome::failing(0.0));
        traffic.apply(Split::Connections { clients: 4 }, 2, &mut |_, _, _, _| {});
        assert!((traffic.refused() - 0.25).abs() < 1e-12);
        assert!((traffic.share(0) - 0.75).abs() < 1e-12);
    }

    #[test]
    fn sums_return_to_exact_zero() {
        let mut traffic = Traffic::new(3, 1.0);
        for (pod, failure) in [(0, 0.1), (1, 0.2), (2, 0.7)] {
            traffic.set(pod, true, 1.0, Outcome::failing(failure));
        }
        for pod in 0..3 {
            traffic.set(pod, true, 1.0, Outcome::failing(0.0));
        }
        traffic.apply(Split::Members, 3, &mut |_, _, _, _| {});
        assert_eq!(traffic.fleet_failure(), 0.0);
    }
}
