//! `worker-wedge`: one instance's outbox relay awaits a future that never completes, under
//! load, with RabbitMQ as the broker.
//!
//! A wedged background worker is what liveness exists for: the runtime is healthy, no lock
//! cycle exists, and only the worker's heartbeat goes silent. Liveness must fail, the prober
//! must restart the instance, and the restarted process must drain the orders that waited in
//! its outbox — none lost, none published twice. What the broker received is counted in the
//! broker itself, against what each instance's database holds.

use super::{Context, fmt_at, liveness_failed, poll_until, since};
use crate::DrillError;
use crate::fleet::EventKind;
use lapin::options::BasicGetOptions;
use lapin::{Connection, ConnectionProperties};
use serde::Serialize;
use std::collections::HashMap;
use std::time::Duration;
use tokio::time::Instant;

/// The queue instance `name` of a run publishes to: one per instance (each has its own
/// database, so order numbers repeat across instances), named after the run's work folder.
pub fn queue_name(work_path: &std::path::Path, name: &str) -> String {
    let run = work_path
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or("probity-drill");
    format!("{run}.{name}")
}

/// What the worker-wedge drill measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkerWedge {
    /// The relay's heartbeat bound (`--outbox-max-silence`).
    pub max_silence_s: f64,
    /// Wedge → the prober's first failed liveness probe.
    pub time_to_liveness_failure_s: Option<f64>,
    /// Wedge → the prober restarted the instance.
    pub time_to_restart_s: Option<f64>,
    /// Wedge → the instance back in rotation.
    pub time_back_in_rotation_s: Option<f64>,
    /// Restarts anywhere in the fleet (must be exactly 1: the wedged instance).
    pub restarts: u32,
    /// Orders the fleet's databases hold at the end.
    pub orders: u64,
    /// Orders still waiting in an outbox when the drill stopped waiting (must be 0).
    pub unpublished: u64,
    /// Distinct orders the broker received.
    pub published: u64,
    /// Orders stored but never received by the broker (must be 0).
    pub lost: u64,
    /// Deliveries beyond the first of an order (must be 0).
    pub duplicated: u64,
}

/// What the fleet's databases hold against what the broker received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// Orders stored since the last count.
    pub orders: u64,
    /// Orders still in an outbox.
    pub unpublished: u64,
    /// Distinct orders the broker received.
    pub published: u64,
    /// Stored, never received.
    pub lost: u64,
    /// Deliveries beyond the first of an order.
    pub duplicated: u64,
}

/// An instance's `GET /chaos/outbox`.
#[derive(Debug, serde::Deserialize)]
struct Counts {
    orders: u64,
    unpublished: u64,
}

impl Context<'_> {
    /// Runs the worker-wedge drill (the caller checks there is a broker).
    pub async fn worker_wedge(&mut self) -> Result<WorkerWedge, DrillError> {
        let victim = self.rig.fleet[0].clone();
        let bound = self.config.worker_bound;
        self.progress.step(&format!(
            "worker wedge: wedging the outbox relay of {} (heartbeat bound {}s)",
            victim.name,
            bound.as_secs_f64()
        ));
        let restarts_before = self.total_restarts();
        let start = Instant::now();
        self.chaos(&victim, "/chaos/wedge-worker").await?;
        let index = victim.index;
        let window = bound + self.config.probes.liveness.period * 10 + Duration::from_secs(30);
        let failed = self.wait_event(start, index, window, liveness_failed).await;
        let restarted = self
            .wait_event(start, index, window, |kind| {
                matches!(kind, EventKind::Spawned)
            })
            .await;
        let back = match restarted {
            Some(_) => {
                poll_until(
                    Duration::from_secs(60),
                    Duration::from_millis(50),
                    || async { self.rig.in_rotation(&victim).await },
                )
                .await
            }
            None => None,
        };
        self.progress.step(&format!(
            "worker wedge: liveness failed at {}, restarted at {}, back in rotation at {}",
            fmt_at(since(start, failed.as_ref().map(|event| event.at))),
            fmt_at(since(start, restarted.as_ref().map(|event| event.at))),
            fmt_at(since(start, back))
        ));
        // Orders taken meanwhile must reach the broker once the load stops.
        let tally = self.tally("worker wedge").await?;
        Ok(WorkerWedge {
            max_silence_s: bound.as_secs_f64(),
            time_to_liveness_failure_s: since(start, failed.map(|event| event.at)),
            time_to_restart_s: since(start, restarted.map(|event| event.at)),
            time_back_in_rotation_s: since(start, back),
            restarts: self.total_restarts() - restarts_before,
            orders: tally.orders,
            unpublished: tally.unpublished,
            published: tally.published,
            lost: tally.lost,
            duplicated: tally.duplicated,
        })
    }

    /// Stops the load, waits (up to a minute) for every outbox to empty, then compares the
    /// orders stored since the last count with what the broker received meanwhile (emptying
    /// the run's queues).
    pub async fn tally(&mut self, drill: &str) -> Result<Tally, DrillError> {
        self.stop_load();
        let amqp_url = self.config.amqp_url.clone().unwrap_or_default();
        let fleet = self.rig.fleet.clone();
        // Until every outbox is empty (or a minute passes): what each database holds.
        let deadline = Instant::now() + Duration::from_secs(60);
        let counts: Vec<Counts> = loop {
            let mut counts = Vec::new();
            for instance in &fleet {
                if let Some(count) = self.outbox_counts(instance.admin).await {
                    counts.push(count);
                }
            }
            let complete = counts.len() == fleet.len();
            if complete && counts.iter().all(|count| count.unpublished == 0) {
                break counts;
            }
            if Instant::now() >= deadline {
                self.progress
                    .step(&format!("{drill}: an outbox still holds orders after 60s"));
                if !complete {
                    return Err(DrillError::Unhealthy(
                        "an instance does not say what its outbox holds (GET /chaos/outbox)"
                            .to_owned(),
                    ));
                }
                break counts;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let orders: u64 = counts.iter().map(|count| count.orders).sum();
        let unpublished: u64 = counts.iter().map(|count| count.unpublished).sum();
        let queues: Vec<String> = fleet
            .iter()
            .map(|instance| queue_name(self.work_path, &instance.name))
            .collect();
        let (published, duplicated) = count_in_broker(&amqp_url, &queues)
            .await
            .map_err(|reason| DrillError::Unhealthy(format!("counting in the broker: {reason}")))?;
        // Queues are emptied at each count: compare with the orders stored since the last.
        let new_orders = orders.saturating_sub(self.tallied_orders);
        self.tallied_orders = orders;
        let tally = Tally {
            orders: new_orders,
            unpublished,
            published,
            lost: new_orders.saturating_sub(published),
            duplicated,
        };
        self.progress.step(&format!(
            "{drill}: {} orders stored, {} received by the broker, {} lost, {} duplicated, {} \
             still waiting",
            tally.orders, tally.published, tally.lost, tally.duplicated, tally.unpublished
        ));
        Ok(tally)
    }

    /// The orders waiting in the outbox of the instance at `admin`, if it answers.
    pub async fn outbox_backlog(&self, admin: std::net::SocketAddr) -> Option<u64> {
        self.outbox_counts(admin)
            .await
            .map(|counts| counts.unpublished)
    }

    async fn outbox_counts(&self, admin: std::net::SocketAddr) -> Option<Counts> {
        let response = self
            .client
            .get(format!("http://{admin}/chaos/outbox"))
            .send()
            .await
            .ok()?;
        if !response.status().is_success() {
            return None;
        }
        serde_json::from_slice(&response.bytes().await.ok()?).ok()
    }
}

/// Takes every message of `queues`: distinct orders per queue, summed, and deliveries beyond the
/// first of each.
async fn count_in_broker(url: &str, queues: &[String]) -> Result<(u64, u64), String> {
    let redacted = |error: lapin::Error| {
        crate::proxy::url_target(url).map_or_else(
            || format!("the broker: {error}"),
            |(host, port)| format!("{host}:{port}: {error}"),
        )
    };
    let connection = tokio::time::timeout(
        Duration::from_secs(10),
        Connection::connect(url, ConnectionProperties::default()),
    )
    .await
    .map_err(|_| "no connection within 10s".to_owned())?
    .map_err(redacted)?;
    let channel = connection.create_channel().await.map_err(redacted)?;
    let (mut distinct, mut duplicated) = (0, 0);
    for queue in queues {
        let mut seen: HashMap<String, u64> = HashMap::new();
        while let Some(message) = channel
            .basic_get(queue.as_str().into(), BasicGetOptions { no_ack: true })
            .await
            .map_err(redacted)?
        {
            let id = message
                .delivery
                .properties
                .message_id()
                .as_ref()
                .map(|id| id.as_str().to_owned())
                .unwrap_or_default();
            *seen.entry(id).or_default() += 1;
        }
        distinct += seen.len() as u64;
        duplicated += seen.values().map(|count| count - 1).sum::<u64>();
    }
    let _ = connection.close(200, "done".into()).await;
    Ok((distinct, duplicated))
}

/// Deletes the run's queues (best effort: the broker may be gone).
pub async fn delete_queues(url: &str, queues: &[String]) {
    let Ok(Ok(connection)) = tokio::time::timeout(
        Duration::from_secs(5),
        Connection::connect(url, ConnectionProperties::default()),
    )
    .await
    else {
        return;
    };
    if let Ok(channel) = connection.create_channel().await {
        for queue in queues {
            let _ = channel
                .queue_delete(
                    queue.as_str().into(),
                    lapin::options::QueueDeleteOptions::default(),
                )
                .await;
        }
    }
    let _ = connection.close(200, "done".into()).await;
}
