//! `broker-outage`: the broker cut off from the whole fleet, under load.
//!
//! A worker that waits on its broker is not wedged: its waits are declared and bounded, so its
//! heartbeat excuses them. A broker outage must restart nothing (the trap is a worker heartbeat
//! that fails liveness while the broker is away: a fleet-wide restart for someone else's
//! outage), orders must keep being taken and wait in the outbox, and every one must reach the
//! broker once it returns.

use super::{Context, fmt_at, liveness_failed, poll_until, since};
use crate::DrillError;
use crate::report::seconds;
use serde::Serialize;
use std::time::Duration;
use tokio::time::Instant;

/// What the broker-outage drill measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BrokerOutage {
    /// How long the broker was cut off.
    pub outage_s: f64,
    /// The relays' heartbeat bound: the outage lasts many times it.
    pub max_silence_s: f64,
    /// Restarts anywhere in the fleet (must be 0).
    pub restarts: u32,
    /// Liveness probes that failed during the outage (must be 0).
    pub liveness_failures: u32,
    /// Requests that failed during the outage (orders are taken without the broker).
    pub requests_failed: u64,
    /// Requests served during the outage.
    pub requests_served: u64,
    /// Broker back (and the load stopped) → every outbox empty.
    pub time_to_drained_s: Option<f64>,
    /// Orders the fleet's databases hold at the end.
    pub orders: u64,
    /// Distinct orders the broker received.
    pub published: u64,
    /// Orders stored but never received (must be 0).
    pub lost: u64,
    /// Deliveries beyond the first of an order: at most one per relay, the publish in flight
    /// when the broker went away, whose confirm never came (delivery is at least once).
    pub duplicated: u64,
}

impl Context<'_> {
    /// Runs the broker-outage drill (the caller checks there is a broker).
    pub async fn broker_outage(&mut self) -> Result<BrokerOutage, DrillError> {
        let outage = self.config.broker_outage;
        let bound = self.config.worker_bound;
        self.progress.step(&format!(
            "broker outage: cutting the broker off for {}s ({:.0} × the relays' heartbeat bound)",
            outage.as_secs_f64(),
            outage.as_secs_f64() / bound.as_secs_f64().max(0.001)
        ));
        let restarts_before = self.total_restarts();
        let start = Instant::now();
        if let Some(broker) = self.broker.as_mut() {
            broker.cut();
        }
        tokio::time::sleep(outage).await;
        let recovered = Instant::now();
        if let Some(broker) = self.broker.as_mut() {
            broker.restore().await.map_err(DrillError::Io)?;
        }
        let counts = self.timeline.counts(start, recovered);
        let liveness_failures = self
            .events
            .since(start)
            .iter()
            .filter(|event| event.at <= recovered && liveness_failed(&event.kind))
            .count() as u32;
        self.progress.step(&format!(
            "broker outage: broker back; {} of {} requests failed meanwhile, {liveness_failures} \
             liveness probes failed",
            counts.failed, counts.total
        ));
        // The outboxes drain by themselves once the broker answers. The load stops here, so
        // that "empty" means the backlog of the outage is gone, not that no order is new.
        self.stop_load();
        let fleet = self.rig.fleet.clone();
        // Every order of the outage waits in an outbox: give the relays time in proportion.
        let drained = poll_until(
            Duration::from_secs(60) + outage * 3,
            Duration::from_millis(100),
            || async {
                let mut empty = true;
                for instance in &fleet {
                    match self.outbox_backlog(instance.admin).await {
                        Some(0) => {}
                        _ => empty = false,
                    }
                }
                empty
            },
        )
        .await;
        self.progress.step(&format!(
            "broker outage: every outbox empty at {} after the broker's return",
            fmt_at(since(recovered, drained))
        ));
        let tally = self.tally("broker outage").await?;
        Ok(BrokerOutage {
            outage_s: seconds(recovered - start),
            max_silence_s: bound.as_secs_f64(),
            restarts: self.total_restarts() - restarts_before,
            liveness_failures,
            requests_failed: counts.failed,
            requests_served: counts.total - counts.failed,
            time_to_drained_s: since(recovered, drained),
            orders: tally.orders,
            published: tally.published,
            lost: tally.lost,
            duplicated: tally.duplicated,
        })
    }
}
