//! Shutdown: fail readiness first, keep serving while the load balancers notice, then stop.
//!
//! On SIGTERM a pod is removed from its Service's endpoints, but every kube-proxy, ingress and
//! external load balancer learns that at its own pace; a server that stops accepting at once
//! drops requests still routed to it. The sequence:
//!
//! 1. [`crate::Health::shutdown`] (or SIGTERM, with [`crate::Health::shutdown_on_signals`]):
//!    readiness fails at once with `shutting down`; **liveness keeps passing**, so nothing
//!    restarts a draining process;
//! 2. the server keeps serving for the **drain delay**; [`crate::HealthView::drained`] resolves
//!    after it, which is the moment to stop accepting;
//! 3. in-flight requests get the in-flight deadline to finish.
//!
//! The drain delay must outlast the slowest prober's reaction:
//!
//! ```text
//! drain delay = readiness periodSeconds × failureThreshold + load balancer reaction
//! ```
//!
//! The first term is the longest a prober polling readiness needs to mark the instance unready
//! (a prober that just probed waits a full period, then needs `failureThreshold` failures —
//! Kubernetes' probe worker, `pkg/kubelet/prober/worker.go`). The second covers propagation
//! after that decision: the EndpointSlice update reaching every kube-proxy (its `minSyncPeriod`
//! is 1 s) or an external load balancer's own `inter × fall`. Declare the readiness probe once
//! ([`crate::HealthBuilder::readiness_probe`]) and the delay is derived — and shown in the
//! contract with what it was derived from — rather than typed by hand in three places.
//!
//! Keep `terminationGracePeriodSeconds` above `preStop sleep + drain delay + in-flight
//! deadline`, or the kubelet's SIGKILL lands mid-drain.

use probity_contract::contract::DrainDerivation;
use std::time::Duration;

/// Time the server waits after the shutdown trigger before it stops accepting, when neither a
/// delay nor a readiness probe is declared.
pub(crate) const DEFAULT_DRAIN_DELAY: Duration = Duration::from_secs(5);
/// Time in-flight requests may run after the listener closes, unless set.
pub(crate) const DEFAULT_IN_FLIGHT_DEADLINE: Duration = Duration::from_secs(10);
/// The load balancer's reaction when a readiness probe is declared without one: kube-proxy's
/// 1 s `minSyncPeriod` plus a second for the EndpointSlice to reach it.
pub(crate) const DEFAULT_LOAD_BALANCER_REACTION: Duration = Duration::from_secs(2);

/// The drain delay a readiness probe and a load balancer's reaction call for.
pub(crate) fn derive(
    period: Duration,
    failure_threshold: u32,
    load_balancer_reaction: Duration,
) -> (Duration, DrainDerivation) {
    let derivation = DrainDerivation {
        readiness_period_ms: period.as_millis() as u64,
        readiness_failure_threshold: failure_threshold.max(1),
        load_balancer_reaction_ms: load_balancer_reaction.as_millis() as u64,
    };
    (
        Duration::from_millis(derivation.drain_delay_ms()),
        derivation,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn period_times_threshold_plus_the_reaction() {
        // readinessProbe periodSeconds 5, failureThreshold 2, 2 s of propagation.
        let (delay, derivation) = derive(Duration::from_secs(5), 2, Duration::from_secs(2));
        assert_eq!(delay, Duration::from_secs(12));
        assert_eq!(derivation.readiness_failure_threshold, 2);
    }
}
