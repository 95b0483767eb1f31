//! `degraded`: the shared database cut off while the Redis cache answers, under reads of
//! cached orders and the background writes.
//!
//! The incident this answers: a 40 s database blip turned into a 14-minute outage, and the
//! change its authors valued most was neither probe — "the service now serves cached data with
//! a header indicating staleness when the database is unavailable … this converts an outage
//! into a degradation". Here checkout's `db` check names the cache as its fallback: during the
//! outage every instance must stay in rotation and serve cached orders marked stale
//! (`x-degraded: db`), shed the writes (503, not processed, nothing restarted), and answer
//! fresh again soon after the database returns.

use super::{Context, fmt_at, poll_until, since};
use crate::DrillError;
use crate::report::seconds;
use serde::Serialize;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// What the degraded drill measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Degraded {
    /// How long the database was cut off.
    pub outage_s: f64,
    /// Orders created, and so cached, before the outage.
    pub cached_orders: u64,
    /// Restarts anywhere in the fleet (must be 0).
    pub restarts: u32,
    /// Reads of cached orders sent during the outage.
    pub reads: u64,
    /// Of those, answered 200.
    pub reads_served: u64,
    /// Of those served, marked stale (`x-degraded: db`).
    pub reads_stale: u64,
    /// `reads_served / reads`.
    pub reads_served_share: f64,
    /// Writes sent during the outage.
    pub writes: u64,
    /// Of those, shed by an instance: 503 with `Retry-After`, not processed.
    pub writes_shed: u64,
    /// Of those, refused by HAProxy itself (no server in rotation).
    pub writes_refused_by_balancer: u64,
    /// Of those, failed any other way (a 500, a timeout, a broken connection).
    pub writes_failed_otherwise: u64,
    /// Cut → the first read marked stale.
    pub time_to_degraded_s: Option<f64>,
    /// Database back → reads fresh again: the end of the last read marked stale.
    pub time_to_fresh_s: Option<f64>,
    /// The fewest instances in rotation seen during the outage.
    pub fewest_in_rotation: usize,
}

/// One read of a cached order.
#[derive(Debug, Clone, Copy)]
struct Read {
    sent: Instant,
    done: Instant,
    status: Option<u16>,
    stale: bool,
}

/// Reads of cached orders through HAProxy from `connections` clients until stopped (bounded).
struct Reads {
    stop: Arc<AtomicBool>,
    samples: Arc<Mutex<Vec<Read>>>,
    workers: Vec<tokio::task::JoinHandle<()>>,
}

/// The longest the read load may run: far beyond any outage the drill is given.
const READS_BOUND: Duration = Duration::from_secs(1800);

impl Reads {
    fn start(frontend: SocketAddr, connections: u32, orders: Arc<[i64]>) -> Reads {
        let stop = Arc::new(AtomicBool::new(false));
        let samples = Arc::new(Mutex::new(Vec::new()));
        let until = Instant::now() + READS_BOUND;
        let workers = (0..connections.max(1))
            .map(|connection| {
                let (stop, samples, orders) = (stop.clone(), samples.clone(), orders.clone());
                tokio::spawn(async move {
                    let client = reqwest::Client::builder()
                        .timeout(Duration::from_secs(5))
                        .pool_max_idle_per_host(1)
                        .no_proxy()
                        .build()
                        .unwrap_or_default();
                    let mut next = connection as usize;
                    while !stop.load(Ordering::Relaxed) && Instant::now() < until {
                        let Some(id) = orders.get(next % orders.len().max(1)) else {
                            return;
                        };
                        next += 7;
                        let sent = Instant::now();
                        let answer = client
                            .get(format!("http://{frontend}/orders/{id}"))
                            .send()
                            .await;
                        let (status, stale) = match answer {
                            Ok(answer) => {
                                let stale = answer
                                    .headers()
                                    .get("x-degraded")
                                    .is_some_and(|value| value == "db");
                                let status = answer.status().as_u16();
                                // Read to the end so the connection carries the next request.
                                let complete = answer.bytes().await.is_ok();
                                (complete.then_some(status), stale)
                            }
                            Err(_) => (None, false),
                        };
                        let read = Read {
                            sent,
                            done: Instant::now(),
                            status,
                            stale,
                        };
                        samples.lock().unwrap_or_else(|e| e.into_inner()).push(read);
                    }
                })
            })
            .collect();
        Reads {
            stop,
            samples,
            workers,
        }
    }

    fn samples(&self) -> Vec<Read> {
        self.samples
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    async fn finish(self) -> Vec<Read> {
        self.stop.store(true, Ordering::Relaxed);
        let samples = self.samples.clone();
        for worker in self.workers {
            let _ = worker.await;
        }
        let guard = samples.lock().unwrap_or_else(|e| e.into_inner());
        guard.clone()
    }
}

/// How long reads must stay fresh after the database returns before the drill calls them so.
const FRESH_FOR: Duration = Duration::from_secs(3);

impl Context<'_> {
    /// Runs the degraded drill (the caller checks there is a proxy to cut and a cache).
    pub async fn degraded(&mut self) -> Result<Degraded, DrillError> {
        let outage = self.config.outage;
        let frontend = self.rig.frontend();
        let orders = self.create_orders(self.config.cached_orders).await?;
        self.progress.step(&format!(
            "degraded: {} orders created and cached; reading them from {} connections",
            orders.len(),
            self.config.concurrency
        ));
        let orders: Arc<[i64]> = orders.into();
        let cached_orders = orders.len() as u64;
        let reads = Reads::start(frontend, self.config.concurrency, orders);
        // Under the background writes, the first reads may take a while to come back.
        let enough = self.config.concurrency as usize;
        let served_before = poll_until(Duration::from_secs(15), Duration::from_millis(100), || {
            let served = reads
                .samples()
                .iter()
                .filter(|read| read.status == Some(200))
                .count();
            async move { served >= enough }
        })
        .await;
        if served_before.is_none() {
            reads.finish().await;
            return Err(DrillError::Unhealthy(format!(
                "the fleet serves too few reads of cached orders before the outage: see the logs in {}",
                self.work_path.display()
            )));
        }

        self.progress.step(&format!(
            "degraded: cutting the shared database off for {}s, the cache stays up",
            outage.as_secs_f64()
        ));
        let restarts_before = self.total_restarts();
        let start = Instant::now();
        if let Some(proxy) = self.proxy.as_mut() {
            proxy.cut();
        }
        let mut fewest_in_rotation = self.rig.fleet.len();
        while start.elapsed() < outage {
            fewest_in_rotation = fewest_in_rotation.min(self.rig.servers_in_rotation().await);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let recovered = Instant::now();
        if let Some(proxy) = self.proxy.as_mut() {
            proxy.restore().await.map_err(DrillError::Io)?;
        }
        self.progress
            .step("degraded: database back, waiting for fresh reads");
        // Fresh again once no read marked stale has been answered for a while.
        let fresh = poll_until(Duration::from_secs(60), Duration::from_millis(100), || {
            let samples = reads.samples();
            async move {
                let last_stale = samples
                    .iter()
                    .filter(|read| read.stale)
                    .map(|read| read.done)
                    .max()
                    .unwrap_or(recovered)
                    .max(recovered);
                let fresh_since = samples
                    .iter()
                    .any(|read| read.sent > last_stale && read.status == Some(200) && !read.stale);
                fresh_since && last_stale.elapsed() >= FRESH_FOR
            }
        })
        .await;
        let samples = reads.finish().await;
        let last_stale = samples
            .iter()
            .filter(|read| read.stale && read.sent >= recovered)
            .map(|read| read.done)
            .max();
        let time_to_fresh_s =
            fresh.map(|_| since(recovered, last_stale.or(Some(recovered))).unwrap_or_default());
        let time_to_degraded_s = since(
            start,
            samples
                .iter()
                .filter(|read| read.stale && read.sent >= start)
                .map(|read| read.done)
                .min(),
        );
        let during: Vec<&Read> = samples
            .iter()
            .filter(|read| read.sent >= start && read.sent < recovered)
            .collect();
        let reads_total = during.len() as u64;
        let reads_served = during
            .iter()
            .filter(|read| read.status == Some(200))
            .count() as u64;
        let reads_stale = during
            .iter()
            .filter(|read| read.status == Some(200) && read.stale)
            .count() as u64;
        let writes = self.timeline.samples(start, recovered);
        let count = |matches: &dyn Fn(crate::load::Outcome) -> bool| {
            writes
                .iter()
                .filter(|sample| matches(sample.outcome))
                .count() as u64
        };
        use crate::load::Outcome;
        let writes_shed = count(&|outcome| outcome == Outcome::Status(503));
        let writes_refused_by_balancer = count(&|outcome| outcome == Outcome::RefusedByBalancer);
        let writes_failed_otherwise = count(&|outcome| {
            !outcome.is_success()
                && outcome != Outcome::Status(503)
                && outcome != Outcome::RefusedByBalancer
        });
        self.progress.step(&format!(
            "degraded: {reads_served} of {reads_total} reads served ({reads_stale} marked stale), \
             {writes_shed} of {} writes shed; degraded at {}, fresh {} after recovery",
            writes.len(),
            fmt_at(time_to_degraded_s),
            fmt_at(time_to_fresh_s)
        ));
        Ok(Degraded {
            outage_s: seconds(outage),
            cached_orders,
            restarts: self.total_restarts() - restarts_before,
            reads: reads_total,
            reads_served,
            reads_stale,
            reads_served_share: if reads_total == 0 {
                0.0
            } else {
                reads_served as f64 / reads_total as f64
            },
            writes: writes.len() as u64,
            writes_shed,
            writes_refused_by_balancer,
            writes_failed_otherwise,
            time_to_degraded_s,
            time_to_fresh_s,
            fewest_in_rotation,
        })
    }

    /// Creates `count` orders through HAProxy (each cached as it is stored) and returns their
    /// numbers.
    async fn create_orders(&self, count: u32) -> Result<Vec<i64>, DrillError> {
        let frontend = self.rig.frontend();
        let mut orders = Vec::with_capacity(count as usize);
        let body = r#"{"customer":"drill-reader","items":[{"sku":"book-1","quantity":1,"price_cents":1299}]}"#;
        let mut failures = 0;
        while orders.len() < count as usize {
            let answer = self
                .client
                .post(format!("http://{frontend}/orders"))
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await;
            let id = match answer {
                Ok(answer) if answer.status().as_u16() == 201 => answer
                    .headers()
                    .get("location")
                    .and_then(|value| value.to_str().ok())
                    .and_then(|location| location.rsplit('/').next())
                    .and_then(|id| id.parse::<i64>().ok()),
                _ => None,
            };
            match id {
                Some(id) => orders.push(id),
                None => {
                    failures += 1;
                    if failures > 20 {
                        return Err(DrillError::Unhealthy(format!(
                            "could not create the orders to cache ({} of {count} created): see the logs in {}",
                            orders.len(),
                            self.work_path.display()
                        )));
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
        Ok(orders)
    }
}
