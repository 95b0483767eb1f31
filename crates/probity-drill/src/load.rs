//! A bounded load generator through the load balancer, and the timeline of what it saw.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};

/// One request the generator sends.
#[derive(Debug, Clone)]
pub struct LoadRequest {
    /// `GET` or `POST`.
    pub method: reqwest::Method,
    /// The path, e.g. `/orders`.
    pub path: String,
    /// A JSON body for `POST`.
    pub body: Option<String>,
}

/// One completed request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// When it was sent.
    pub sent: Instant,
    /// How long it took.
    pub latency: Duration,
    /// Whether it succeeded (a 2xx answer).
    pub ok: bool,
}

/// Everything the load generator saw.
#[derive(Debug, Clone, Default)]
pub struct Timeline(Arc<Mutex<Vec<Sample>>>);

/// Requests in a window: how many were sent, and how many failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    /// Requests sent in the window.
    pub total: u64,
    /// Of those, failed.
    pub failed: u64,
}

impl Counts {
    /// Failed / total (0 with no requests).
    pub fn error_rate(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.failed as f64 / self.total as f64
        }
    }
}

impl Timeline {
    fn push(&self, sample: Sample) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(sample);
    }

    /// Requests sent in `[from, to)`.
    pub fn counts(&self, from: Instant, to: Instant) -> Counts {
        let samples = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut counts = Counts::default();
        for sample in samples.iter().filter(|s| s.sent >= from && s.sent < to) {
            counts.total += 1;
            if !sample.ok {
                counts.failed += 1;
            }
        }
        counts
    }

    /// The highest error rate over any `window` starting in `[from, to)`, by `step`.
    pub fn peak_error_rate(&self, from: Instant, to: Instant, window: Duration) -> f64 {
        let mut peak: f64 = 0.0;
        let mut start = from;
        while start < to {
            peak = peak.max(self.counts(start, start + window).error_rate());
            start += Duration::from_millis(100);
        }
        peak
    }

    /// The first successful request sent at or after `since`.
    pub fn first_success_after(&self, since: Instant) -> Option<Instant> {
        let samples = self.0.lock().unwrap_or_else(|e| e.into_inner());
        samples
            .iter()
            .filter(|s| s.ok && s.sent >= since)
            .map(|s| s.sent)
            .min()
    }

    /// The last failed request sent before `before`, at or after `since`.
    pub fn last_failure_between(&self, since: Instant, before: Instant) -> Option<Instant> {
        let samples = self.0.lock().unwrap_or_else(|e| e.into_inner());
        samples
            .iter()
            .filter(|s| !s.ok && s.sent >= since && s.sent < before)
            .map(|s| s.sent)
            .max()
    }
}

/// Starts `concurrency` workers sending `rate` requests per second in total to `target`.
pub fn start(
    target: SocketAddr,
    request: LoadRequest,
    rate: u32,
    concurrency: u32,
    timeline: Timeline,
) -> Vec<JoinHandle<()>> {
    let concurrency = concurrency.max(1);
    let per_worker = Duration::from_secs_f64(f64::from(concurrency) / f64::from(rate.max(1)));
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .no_proxy()
        .build()
        .unwrap_or_default();
    (0..concurrency)
        .map(|worker| {
            let client = client.clone();
            let request = request.clone();
            let timeline = timeline.clone();
            let url = format!("http://{target}{}", request.path);
            tokio::spawn(async move {
                // Spread the workers over one period so requests are evenly spaced.
                tokio::time::sleep(per_worker.mul_f64(f64::from(worker) / f64::from(concurrency)))
                    .await;
                let mut ticker = tokio::time::interval(per_worker);
                ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
                loop {
                    ticker.tick().await;
                    let sent = Instant::now();
                    let mut builder = client.request(request.method.clone(), &url);
                    if let Some(body) = &request.body {
                        builder = builder
                            .header("content-type", "application/json")
                            .body(body.clone());
                    }
                    let ok = match builder.send().await {
                        Ok(response) => response.status().is_success(),
                        Err(_) => false,
                    };
                    timeline.push(Sample {
                        sent,
                        latency: sent.elapsed(),
                        ok,
                    });
                }
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_rates_over_windows() {
        let timeline = Timeline::default();
        let start = Instant::now();
        for i in 0..100u64 {
            timeline.push(Sample {
                sent: start + Duration::from_millis(i * 10),
                latency: Duration::from_millis(1),
                ok: !(30..40).contains(&i),
            });
        }
        let counts = timeline.counts(start, start + Duration::from_secs(1));
        assert_eq!(
            counts,
            Counts {
                total: 100,
                failed: 10
            }
        );
        assert!((counts.error_rate() - 0.1).abs() < 1e-9);
        let peak = timeline.peak_error_rate(
            start,
            start + Duration::from_millis(900),
            Duration::from_millis(100),
        );
        assert_eq!(peak, 1.0);
        assert_eq!(
            timeline.first_success_after(start + Duration::from_millis(300)),
            Some(start + Duration::from_millis(400))
        );
        assert_eq!(
            timeline.last_failure_between(start, start + Duration::from_secs(1)),
            Some(start + Duration::from_millis(390))
        );
        assert_eq!(Counts::default().error_rate(), 0.0);
    }
}
