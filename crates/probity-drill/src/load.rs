//! A load generator bounded in time: closed-loop (N connections, each sending its next request
//! as soon as the previous one is answered) or at a fixed rate, with what it saw.
//!
//! The drill keeps one running behind every fault; other crates' tests use [`run`] to put a
//! service under realistic concurrency:
//!
//! ```no_run
//! # async fn example() {
//! use probity_drill::load::{self, LoadSpec};
//! use std::time::Duration;
//!
//! let target = "127.0.0.1:8080".parse().unwrap();
//! let report = load::run(
//!     target,
//!     LoadSpec { concurrency: 32, duration: Duration::from_secs(10), ..LoadSpec::default() },
//! )
//! .await;
//! assert_eq!(report.failed, 0, "{report}");
//! # }
//! ```
//!
//! Every answer is classified. An error page written by HAProxy itself (its `503` "No server is
//! available to handle this request", the `<NOSRV>` of its logs, or its `502`/`504`) is told
//! apart from a `5xx` the service answered, so a report says whether the balancer refused a
//! request or the service failed it.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};

/// One request the generator sends, again and again.
#[derive(Debug, Clone)]
pub struct LoadRequest {
    /// `GET`, `POST`, ….
    pub method: reqwest::Method,
    /// The path and query, e.g. `/orders`.
    pub path: String,
    /// A body (sent as `application/json` unless `headers` names a `content-type`).
    pub body: Option<String>,
    /// Request headers.
    pub headers: Vec<(String, String)>,
    /// Its class in the mix: every [`Sample`] of it carries the number.
    pub class: u16,
    /// When not empty, the path is made of these parts instead of `path`: text, and values
    /// other requests captured ([`Capture`]). Until a value has been captured, another request
    /// of the mix is sent in its place.
    pub template: Vec<PathPart>,
    /// Keep a header of each successful answer, for other requests' paths.
    pub capture: Option<Capture>,
    /// Count the answers that carry this header (a staleness mark, say).
    pub marker: Option<Marker>,
}

/// A part of a request's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathPart {
    /// As written.
    Text(String),
    /// One of the values captured into this slot, picked at random.
    Captured(usize),
}

/// Which header of an answer to keep, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capture {
    /// The header (a `Location`, say; a URL is kept as its path).
    pub header: String,
    /// The slot it goes to.
    pub slot: usize,
}

/// A header that marks an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// The header's name.
    pub header: String,
    /// Its value, or any value.
    pub value: Option<String>,
}

impl Marker {
    fn marks(&self, headers: &reqwest::header::HeaderMap) -> bool {
        headers.get_all(self.header.as_str()).iter().any(|value| {
            self.value
                .as_ref()
                .is_none_or(|expected| value.as_bytes() == expected.as_bytes())
        })
    }
}

/// The most values kept per capture slot: the newest replace the oldest.
pub const MAX_CAPTURED: usize = 4096;

/// Values captured from answers, per slot, shared by every connection of a load.
#[derive(Debug, Clone, Default)]
pub struct Captures(Arc<Mutex<Vec<std::collections::VecDeque<String>>>>);

impl Captures {
    fn keep(&self, slot: usize, value: String) {
        let mut slots = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if slots.len() <= slot {
            slots.resize_with(slot + 1, Default::default);
        }
        let values = &mut slots[slot];
        if values.len() >= MAX_CAPTURED {
            values.pop_front();
        }
        values.push_back(value);
    }

    fn pick(&self, slot: usize, rng: &mut fastrand::Rng) -> Option<String> {
        let slots = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let values = slots.get(slot)?;
        if values.is_empty() {
            return None;
        }
        values.get(rng.usize(..values.len())).cloned()
    }

    /// How many values slot `slot` holds.
    pub fn len(&self, slot: usize) -> usize {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(slot)
            .map_or(0, |values| values.len())
    }

    /// Whether no value was captured at all.
    pub fn is_empty(&self) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .all(|values| values.is_empty())
    }

    /// The path of `request` with its captured parts filled, or `None` while a slot it needs
    /// is empty.
    fn path(&self, request: &LoadRequest, rng: &mut fastrand::Rng) -> Option<String> {
        if request.template.is_empty() {
            return Some(request.path.clone());
        }
        let mut path = String::new();
        for part in &request.template {
            match part {
                PathPart::Text(text) => path.push_str(text),
                PathPart::Captured(slot) => path.push_str(&self.pick(*slot, rng)?),
            }
        }
        Some(path)
    }
}

/// A captured header value as a path: a URL's path and query, anything else as it is.
fn as_path(value: &str) -> String {
    for scheme in ["http://", "https://"] {
        if let Some(rest) = value.strip_prefix(scheme) {
            return rest
                .find('/')
                .map_or_else(|| "/".to_owned(), |at| rest[at..].to_owned());
        }
    }
    value.to_owned()
}

impl LoadRequest {
    /// A `GET` of `path`, class 0.
    pub fn get(path: &str) -> Self {
        LoadRequest {
            method: reqwest::Method::GET,
            path: path.to_owned(),
            body: None,
            headers: Vec::new(),
            class: 0,
            template: Vec::new(),
            capture: None,
            marker: None,
        }
    }

    /// A `POST` of `body` (sent as `application/json`) to `path`, class 0.
    pub fn post(path: &str, body: &str) -> Self {
        LoadRequest {
            method: reqwest::Method::POST,
            body: Some(body.to_owned()),
            ..LoadRequest::get(path)
        }
    }
}

/// What to send, how hard, and for how long.
#[derive(Debug, Clone)]
pub struct LoadSpec {
    /// Connections, each with one request in flight at a time.
    pub concurrency: u32,
    /// How long to send; no request starts after it (the last ones finish after).
    pub duration: Duration,
    /// The request.
    pub request: LoadRequest,
    /// `None`: closed loop, as fast as the service answers. `Some(rate)`: requests per second in
    /// total, spread evenly over the connections (a connection whose request is late sends the
    /// next one as soon as it can, so a slow service gets fewer than `rate`).
    pub rate: Option<u32>,
    /// Longest a request may take (connect, answer and body) before it counts as timed out.
    pub timeout: Duration,
}

impl Default for LoadSpec {
    /// 32 connections, closed loop, for 10 s, of `GET /`, 5 s per request.
    fn default() -> Self {
        LoadSpec {
            concurrency: 32,
            duration: Duration::from_secs(10),
            request: LoadRequest::get("/"),
            rate: None,
            timeout: Duration::from_secs(5),
        }
    }
}

/// How one request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    /// The service answered with this status.
    Status(u16),
    /// HAProxy answered `503` itself: no server in rotation (`<NOSRV>` in its logs).
    RefusedByBalancer,
    /// HAProxy answered another error itself (`502` bad gateway, `504` gateway timeout, …).
    BalancerError(u16),
    /// The TCP connection was refused (nothing listening).
    ConnectionRefused,
    /// No complete answer within the request timeout.
    TimedOut,
    /// The connection broke some other way (reset, closed before an answer).
    ConnectionError,
}

impl Outcome {
    /// A `2xx` from the service.
    pub fn is_success(self) -> bool {
        matches!(self, Outcome::Status(200..=299))
    }
}

/// One completed request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// When it was sent.
    pub sent: Instant,
    /// How long it took.
    pub latency: Duration,
    /// How it ended.
    pub outcome: Outcome,
    /// The class of its request ([`LoadRequest::class`]).
    pub class: u16,
    /// Whether the answer carried its request's [`Marker`].
    pub marked: bool,
}

impl Sample {
    /// Whether it succeeded (a `2xx` from the service).
    pub fn ok(&self) -> bool {
        self.outcome.is_success()
    }
}

/// Everything a load generator saw, shared between its connections and its reader.
#[derive(Debug, Clone, Default)]
pub struct Timeline(Arc<Mutex<Vec<Sample>>>);

/// Requests in a window: how many were sent, and how many failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    /// Requests sent in the window.
    pub total: u64,
    /// Of those, failed (anything but a `2xx` from the service).
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

/// Serialises a duration as seconds (fractional).
fn secs<S: serde::Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(duration.as_secs_f64())
}

/// Serialises a duration as milliseconds with microsecond precision.
fn millis_f64<S: serde::Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64((duration.as_micros() as f64) / 1000.0)
}

/// What a load generator saw over a window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadReport {
    /// The window's length.
    #[serde(rename = "elapsed_s", serialize_with = "secs")]
    pub elapsed: Duration,
    /// Requests sent in the window.
    pub requests: u64,
    /// Of those, answered `2xx` by the service.
    pub succeeded: u64,
    /// Of those, anything else.
    pub failed: u64,
    /// Answers by status code, the service's and the balancer's.
    pub statuses: BTreeMap<u16, u64>,
    /// `503`s HAProxy wrote itself because no server was in rotation (`<NOSRV>`).
    pub refused_by_balancer: u64,
    /// Other errors HAProxy wrote itself (`502`, `504`).
    pub balancer_errors: u64,
    /// Connections refused (nothing listening).
    pub connection_refused: u64,
    /// Requests without a complete answer within the timeout.
    pub timed_out: u64,
    /// Connections that broke another way.
    pub connection_errors: u64,
    /// Requests sent per second of the window.
    pub requests_per_second: f64,
    /// Successful requests per second of the window.
    pub throughput: f64,
    /// How long requests were failing: the 100 ms slots of the window in which at least one
    /// request sent failed. Unlike a count of failed requests, it does not grow with how fast a
    /// closed loop retries against a balancer that refuses at once.
    pub failing_s: f64,
    /// Median latency of every request in the window.
    #[serde(rename = "latency_p50_ms", serialize_with = "millis_f64")]
    pub latency_p50: Duration,
    /// 99th percentile latency.
    #[serde(rename = "latency_p99_ms", serialize_with = "millis_f64")]
    pub latency_p99: Duration,
    /// Slowest request.
    #[serde(rename = "latency_max_ms", serialize_with = "millis_f64")]
    pub latency_max: Duration,
}

impl LoadReport {
    /// The report over `samples`, a window `elapsed` long.
    pub fn from_samples(samples: &[Sample], elapsed: Duration) -> Self {
        let mut report = LoadReport {
            elapsed,
            requests: samples.len() as u64,
            succeeded: 0,
            failed: 0,
            statuses: BTreeMap::new(),
            refused_by_balancer: 0,
            balancer_errors: 0,
            connection_refused: 0,
            timed_out: 0,
            connection_errors: 0,
            requests_per_second: 0.0,
            throughput: 0.0,
            failing_s: 0.0,
            latency_p50: Duration::ZERO,
            latency_p99: Duration::ZERO,
            latency_max: Duration::ZERO,
        };
        for sample in samples {
            if sample.ok() {
                report.succeeded += 1;
            } else {
                report.failed += 1;
            }
            match sample.outcome {
                Outcome::Status(status) => *report.statuses.entry(status).or_default() += 1,
                Outcome::RefusedByBalancer => {
                    report.refused_by_balancer += 1;
                    *report.statuses.entry(503).or_default() += 1;
                }
                Outcome::BalancerError(status) => {
                    report.balancer_errors += 1;
                    *report.statuses.entry(status).or_default() += 1;
                }
                Outcome::ConnectionRefused => report.connection_refused += 1,
                Outcome::TimedOut => report.timed_out += 1,
                Outcome::ConnectionError => report.connection_errors += 1,
            }
        }
        if let Some(first) = samples.iter().map(|sample| sample.sent).min() {
            let slots: std::collections::BTreeSet<u128> = samples
                .iter()
                .filter(|sample| !sample.ok())
                .map(|sample| sample.sent.saturating_duration_since(first).as_millis() / 100)
                .collect();
            report.failing_s = slots.len() as f64 / 10.0;
        }
        let seconds = elapsed.as_secs_f64();
        if seconds > 0.0 {
            report.requests_per_second = report.requests as f64 / seconds;
            report.throughput = report.succeeded as f64 / seconds;
        }
        let mut latencies: Vec<Duration> = samples.iter().map(|sample| sample.latency).collect();
        latencies.sort_unstable();
        report.latency_p50 = percentile(&latencies, 0.50);
        report.latency_p99 = percentile(&latencies, 0.99);
        report.latency_max = latencies.last().copied().unwrap_or_default();
        report
    }

    /// Requests the balancer refused or failed itself.
    pub fn balancer_refusals(&self) -> u64 {
        self.refused_by_balancer + self.balancer_errors
    }
}

/// The `quantile` of sorted `values` (nearest rank).
fn percentile(sorted: &[Duration], quantile: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (quantile * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

impl fmt::Display for LoadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} requests in {:.1}s ({:.0} req/s), {} failed (failing for {:.1}s), p50 {:.1} ms, p99 {:.1} ms; statuses:",
            self.requests,
            self.elapsed.as_secs_f64(),
            self.requests_per_second,
            self.failed,
            self.failing_s,
            self.latency_p50.as_secs_f64() * 1000.0,
            self.latency_p99.as_secs_f64() * 1000.0,
        )?;
        if self.statuses.is_empty() {
            write!(f, " none")?;
        }
        for (status, count) in &self.statuses {
            write!(f, " {count} × {status}")?;
        }
        for (what, count) in [
            (
                "refused by the balancer (<NOSRV>)",
                self.refused_by_balancer,
            ),
            ("balancer errors", self.balancer_errors),
            ("connections refused", self.connection_refused),
            ("timed out", self.timed_out),
            ("connection errors", self.connection_errors),
        ] {
            if count > 0 {
                write!(f, "; {count} {what}")?;
            }
        }
        Ok(())
    }
}

impl Timeline {
    fn push(&self, sample: Sample) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(sample);
    }

    /// The samples of requests sent in `[from, to)`, in the order they were sent.
    pub fn samples(&self, from: Instant, to: Instant) -> Vec<Sample> {
        let mut samples: Vec<Sample> = self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|sample| sample.sent >= from && sample.sent < to)
            .copied()
            .collect();
        samples.sort_by_key(|sample| sample.sent);
        samples
    }

    /// What was seen for requests sent in `[from, to)`.
    pub fn report(&self, from: Instant, to: Instant) -> LoadReport {
        LoadReport::from_samples(&self.samples(from, to), to.saturating_duration_since(from))
    }

    /// Requests sent in `[from, to)`.
    pub fn counts(&self, from: Instant, to: Instant) -> Counts {
        let samples = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut counts = Counts::default();
        for sample in samples.iter().filter(|s| s.sent >= from && s.sent < to) {
            counts.total += 1;
            if !sample.ok() {
                counts.failed += 1;
            }
        }
        counts
    }

    /// The highest error rate over any `window` starting in `[from, to)`, in steps of 100 ms.
    pub fn peak_error_rate(&self, from: Instant, to: Instant, window: Duration) -> f64 {
        const STEP: Duration = Duration::from_millis(100);
        let span = to.saturating_duration_since(from) + window;
        let buckets = (span.as_millis() / STEP.as_millis()) as usize + 1;
        let mut counts = vec![Counts::default(); buckets];
        for sample in self.samples(from, to + window) {
            let bucket = (sample.sent.saturating_duration_since(from).as_millis()
                / STEP.as_millis()) as usize;
            if let Some(counts) = counts.get_mut(bucket) {
                counts.total += 1;
                counts.failed += u64::from(!sample.ok());
            }
        }
        let per_window = (window.as_millis() / STEP.as_millis()).max(1) as usize;
        let starts = (to.saturating_duration_since(from).as_millis() / STEP.as_millis()) as usize;
        (0..starts.max(1))
            .map(|start| {
                let end = (start + per_window).min(counts.len());
                let total =
                    counts[start.min(end)..end]
                        .iter()
                        .fold(Counts::default(), |sum, counts| Counts {
                            total: sum.total + counts.total,
                            failed: sum.failed + counts.failed,
                        });
                total.error_rate()
            })
            .fold(0.0, f64::max)
    }

    /// The first successful request sent at or after `since`.
    pub fn first_success_after(&self, since: Instant) -> Option<Instant> {
        let samples = self.0.lock().unwrap_or_else(|e| e.into_inner());
        samples
            .iter()
            .filter(|s| s.ok() && s.sent >= since)
            .map(|s| s.sent)
            .min()
    }

    /// The last failed request sent before `before`, at or after `since`.
    pub fn last_failure_between(&self, since: Instant, before: Instant) -> Option<Instant> {
        let samples = self.0.lock().unwrap_or_else(|e| e.into_inner());
        samples
            .iter()
            .filter(|s| !s.ok() && s.sent >= since && s.sent < before)
            .map(|s| s.sent)
            .max()
    }
}

/// A running load generator: its connections stop at the end of their duration, when
/// [`LoadHandle::stop`] is called, or when the handle is dropped.
#[derive(Debug)]
pub struct LoadHandle {
    workers: Vec<JoinHandle<()>>,
    timeline: Timeline,
    started: Instant,
    sending: Arc<std::sync::atomic::AtomicBool>,
}

impl LoadHandle {
    /// What the generator has seen so far.
    pub fn timeline(&self) -> &Timeline {
        &self.timeline
    }

    /// When it started sending.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Stops every connection now (requests in flight are not counted).
    pub fn stop(&self) {
        for worker in &self.workers {
            worker.abort();
        }
    }

    /// Sends no new request, and waits for the ones in flight to be answered (or to time out)
    /// and recorded: what was sent is all accounted for.
    pub async fn drain(mut self) -> Timeline {
        self.sending
            .store(false, std::sync::atomic::Ordering::Release);
        for worker in std::mem::take(&mut self.workers) {
            let _ = worker.await;
        }
        self.timeline.clone()
    }

    /// Waits for every connection to finish its duration and its last request.
    pub async fn finish(mut self) -> Timeline {
        for worker in std::mem::take(&mut self.workers) {
            let _ = worker.await;
        }
        self.timeline.clone()
    }
}

impl Drop for LoadHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Puts `target` under `spec` and returns what was seen, once the duration is over and the last
/// requests are answered.
pub async fn run(target: SocketAddr, spec: LoadSpec) -> LoadReport {
    let handle = start(target, &spec, Timeline::default());
    let started = handle.started();
    let timeline = handle.finish().await;
    let samples = timeline.samples(started, Instant::now() + Duration::from_secs(1));
    LoadReport::from_samples(&samples, spec.duration)
}

/// Starts `spec` against `target` in the background, recording into `timeline`.
pub fn start(target: SocketAddr, spec: &LoadSpec, timeline: Timeline) -> LoadHandle {
    start_mix(target, spec, &[(spec.request.clone(), 1)], timeline)
}

/// Starts `spec` against `target` in the background, each request drawn from `mix` by weight
/// (`spec.request` is not sent), recording into `timeline`.
pub fn start_mix(
    target: SocketAddr,
    spec: &LoadSpec,
    mix: &[(LoadRequest, u32)],
    timeline: Timeline,
) -> LoadHandle {
    start_captured(target, spec, mix, timeline, Captures::default())
}

/// [`start_mix`], keeping captured values in `captures` (shared with other loads, so a load
/// started again finds what the last one captured).
pub fn start_captured(
    target: SocketAddr,
    spec: &LoadSpec,
    mix: &[(LoadRequest, u32)],
    timeline: Timeline,
    captures: Captures,
) -> LoadHandle {
    let mix: Vec<(LoadRequest, u32)> = mix
        .iter()
        .filter(|(_, weight)| *weight > 0)
        .cloned()
        .collect();
    let total_weight: u32 = mix.iter().map(|(_, weight)| *weight).sum();
    let mix = std::sync::Arc::new(mix);
    let concurrency = spec.concurrency.max(1);
    let started = Instant::now();
    let deadline = started + spec.duration;
    // With a rate, each connection sends on its own ticker, offset so requests are spread.
    let per_connection = spec
        .rate
        .map(|rate| Duration::from_secs_f64(f64::from(concurrency) / f64::from(rate.max(1))));
    let base = format!("http://{target}");
    let sending = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let workers = (0..concurrency)
        .map(|connection| {
            // One client per connection: each keeps its own keep-alive connection, as N
            // independent clients would.
            let client = reqwest::Client::builder()
                .timeout(spec.timeout)
                .pool_max_idle_per_host(1)
                .no_proxy()
                .build()
                .unwrap_or_default();
            let mix = mix.clone();
            let timeline = timeline.clone();
            let captures = captures.clone();
            let sending = sending.clone();
            let base = base.clone();
            let mut rng = fastrand::Rng::with_seed(u64::from(connection) + 1);
            tokio::spawn(async move {
                let mut ticker = per_connection.map(|period| {
                    let offset = period.mul_f64(f64::from(connection) / f64::from(concurrency));
                    let mut ticker = tokio::time::interval_at(started + offset, period);
                    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
                    ticker
                });
                loop {
                    if let Some(ticker) = ticker.as_mut() {
                        ticker.tick().await;
                    }
                    let sent = Instant::now();
                    if sent >= deadline
                        || total_weight == 0
                        || !sending.load(std::sync::atomic::Ordering::Acquire)
                    {
                        break;
                    }
                    // A request whose captured values are not there yet gives way to another:
                    // drawn again a few times, then the first that needs none.
                    let mut chosen = None;
                    for _ in 0..8 {
                        let mut pick = rng.u32(0..total_weight);
                        let request = mix
                            .iter()
                            .find(|(_, weight)| {
                                if pick < *weight {
                                    return true;
                                }
                                pick -= weight;
                                false
                            })
                            .map_or(&mix[0].0, |(request, _)| request);
                        if let Some(path) = captures.path(request, &mut rng) {
                            chosen = Some((request, path));
                            break;
                        }
                    }
                    let chosen = chosen.or_else(|| {
                        mix.iter()
                            .find(|(request, _)| request.template.is_empty())
                            .map(|(request, _)| (request, request.path.clone()))
                    });
                    let Some((request, path)) = chosen else {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    };
                    let url = format!("{base}{path}");
                    let (outcome, marked) = send(&client, &url, request, &captures).await;
                    timeline.push(Sample {
                        sent,
                        latency: sent.elapsed(),
                        outcome,
                        class: request.class,
                        marked,
                    });
                }
            })
        })
        .collect();
    LoadHandle {
        workers,
        timeline,
        started,
        sending,
    }
}

/// The start of every error page HAProxy writes itself (`errorfile` defaults).
const BALANCER_PAGE: &[u8] = b"<html><body><h1>";
/// What HAProxy's own `503` says.
const NO_SERVER: &[u8] = b"No server is available";

async fn send(
    client: &reqwest::Client,
    url: &str,
    request: &LoadRequest,
    captures: &Captures,
) -> (Outcome, bool) {
    let mut builder = client.request(request.method.clone(), url);
    for (name, value) in &request.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    if let Some(body) = &request.body {
        if !request
            .headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("content-type"))
        {
            builder = builder.header("content-type", "application/json");
        }
        builder = builder.body(body.clone());
    }
    let response = match builder.send().await {
        Ok(response) => response,
        Err(error) => return (transport_outcome(&error), false),
    };
    let status = response.status().as_u16();
    let marked = request
        .marker
        .as_ref()
        .is_some_and(|marker| marker.marks(response.headers()));
    let captured = request.capture.as_ref().and_then(|capture| {
        let value = response.headers().get(capture.header.as_str())?;
        Some((capture.slot, as_path(value.to_str().ok()?)))
    });
    let html = response
        .headers()
        .get("content-type")
        .is_some_and(|value| value.as_bytes().starts_with(b"text/html"));
    // The body is read to the end so the connection can carry the next request.
    let body = match response.bytes().await {
        Ok(body) => body,
        Err(error) => return (transport_outcome(&error), false),
    };
    if html && status >= 500 && body.starts_with(BALANCER_PAGE) {
        if status == 503 && contains(&body, NO_SERVER) {
            return (Outcome::RefusedByBalancer, false);
        }
        return (Outcome::BalancerError(status), false);
    }
    if let Some((slot, value)) = captured
        && (200..300).contains(&status)
    {
        captures.keep(slot, value);
    }
    (Outcome::Status(status), marked)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

fn transport_outcome(error: &reqwest::Error) -> Outcome {
    if error.is_timeout() {
        return Outcome::TimedOut;
    }
    // reqwest wraps the io::Error; find it to tell "refused" from other failures.
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = source {
        if let Some(io) = current.downcast_ref::<std::io::Error>() {
            return match io.kind() {
                std::io::ErrorKind::ConnectionRefused => Outcome::ConnectionRefused,
                std::io::ErrorKind::TimedOut => Outcome::TimedOut,
                _ => Outcome::ConnectionError,
            };
        }
        source = current.source();
    }
    Outcome::ConnectionError
}

#[cfg(test)]
mod tests;
