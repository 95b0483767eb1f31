//! The app's request outcomes, read from the status-labelled request metrics it already
//! exports: real outcomes outrank a self-check, both ways.
//!
//! Every interval the agent reads the app's request counters (a shared scrape of its
//! exposition) and keeps their totals over a sliding window, split by status: `5xx` failed,
//! every other status answered. From that window:
//!
//! - **serving**: at least `min_requests` answered and at most `serving_error_share` of them
//!   5xx. A failing self-check of the app — its own readiness endpoint (`app`), one of its
//!   figures (`metrics`) — then degrades to `warn` with the reason instead of draining: its
//!   readiness calls a busy pool broken, its requests say otherwise.
//! - **failing**: at least `min_requests` and more than `max_error_share` of them 5xx. The
//!   agent reports them to every hard `app` check, as application code reports real outcomes
//!   to the core (passive reports): the check fails at once, however healthy the app's own
//!   health endpoint says it is, and recovers only through its polls' `rise` count once the
//!   requests succeed again.
//!
//! Requests to the agent's own scrapes and polls of the app (the paths it reads) are left
//! out where the series labels a path. The shapes recognised without configuration, first
//! present wins:
//!
//! | series | status label | exported by |
//! |---|---|---|
//! | `http_requests_total` | `status`, `code`, `status_code` | prom-client and prometheus_client apps, Go's promhttp wrappers, probity-axum |
//! | `http_request_duration_seconds_count` | `status_code`, `code`, `status` | express-prom-bundle, prom-client histograms |
//! | `http_server_requests_seconds_count` | `status` | Micrometer (Spring Boot) |
//! | `http_server_request_duration_seconds_count` | `http_response_status_code` | OpenTelemetry (semantic conventions 1.20+) |
//! | `http_server_duration_milliseconds_count` | `http_status_code` | OpenTelemetry (older conventions) |
//! | `flask_http_request_total` | `status` | prometheus-flask-exporter |
//! | `starlette_requests_total` | `status_code` | starlette-exporter |
//! | `django_http_responses_total_by_status_total` | `status` | django-prometheus |
//!
//! A status may read `503` or `5xx` (prometheus-fastapi-instrumentator groups them).

use crate::config::RequestsSettings;
use crate::scrape::{Exposition, Scraper};
use parking_lot::Mutex;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The shapes recognised without configuration: series, status labels.
pub(crate) const SHAPES: &[(&str, &[&str])] = &[
    ("http_requests_total", &["status", "code", "status_code"]),
    (
        "http_request_duration_seconds_count",
        &["status_code", "code", "status"],
    ),
    ("http_server_requests_seconds_count", &["status"]),
    (
        "http_server_request_duration_seconds_count",
        &["http_response_status_code"],
    ),
    (
        "http_server_duration_milliseconds_count",
        &["http_status_code"],
    ),
    ("http_server_duration_count", &["http_status_code"]),
    ("flask_http_request_total", &["status"]),
    ("starlette_requests_total", &["status_code"]),
    ("django_http_responses_total_by_status_total", &["status"]),
];

/// Labels that name a request's path or route.
const PATH_LABELS: &[&str] = &[
    "path",
    "route",
    "handler",
    "uri",
    "url",
    "endpoint",
    "http_route",
    "http_target",
];

/// Reports in a run: each reading of failing requests reports this many to the app's checks,
/// their passive threshold (the contract's `passive_failure_threshold`).
pub(crate) const PASSIVE_RUN: u32 = 5;

/// Defaults of `[requests]`.
pub(crate) const DEFAULT_WINDOW: Duration = Duration::from_secs(10);
pub(crate) const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);
pub(crate) const DEFAULT_MIN_REQUESTS: u64 = 20;
pub(crate) const DEFAULT_MAX_ERROR_SHARE: f64 = 0.5;
pub(crate) const DEFAULT_SERVING_ERROR_SHARE: f64 = 0.05;

/// The requests of one window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Window {
    /// Requests answered with a status below 500.
    pub(crate) answered: u64,
    /// Requests answered 5xx.
    pub(crate) failed: u64,
    /// The time the window covers.
    pub(crate) span: Duration,
}

impl Window {
    pub(crate) fn total(&self) -> u64 {
        self.answered + self.failed
    }

    pub(crate) fn error_share(&self) -> f64 {
        if self.total() == 0 {
            0.0
        } else {
            self.failed as f64 / self.total() as f64
        }
    }
}

/// What the window says.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Judgement {
    /// Too few requests, or no recent reading: nothing outranks the self-checks.
    Unknown,
    /// Serving successfully.
    Serving(Window),
    /// Neither (some 5xx, under the drain threshold).
    Mixed(Window),
    /// Failing its requests.
    Failing(Window),
}

/// One reading: totals so far (counter resets absorbed).
#[derive(Debug, Clone, Copy)]
struct Point {
    at: Instant,
    answered: f64,
    failed: f64,
}

#[derive(Debug, Default)]
struct State {
    /// The series and label found, once found.
    shape: Option<(String, String)>,
    /// Each series' last value, for increases and resets.
    last: BTreeMap<Vec<(String, String)>, f64>,
    answered: f64,
    failed: f64,
    points: VecDeque<Point>,
}

/// The app's request outcomes over a sliding window.
#[derive(Debug)]
pub(crate) struct Outcomes {
    settings: Resolved,
    excluded_paths: Vec<String>,
    state: Mutex<State>,
}

/// `[requests]` with its defaults applied.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    pub(crate) series: Option<String>,
    pub(crate) status_label: Option<String>,
    pub(crate) window: Duration,
    pub(crate) interval: Duration,
    pub(crate) min_requests: u64,
    pub(crate) max_error_share: f64,
    pub(crate) serving_error_share: f64,
}

impl Resolved {
    pub(crate) fn new(settings: Option<&RequestsSettings>) -> Resolved {
        Resolved {
            series: settings.and_then(|s| s.series.clone()),
            status_label: settings.and_then(|s| s.status_label.clone()),
            window: settings
                .and_then(|s| s.window)
                .map_or(DEFAULT_WINDOW, |dur| dur.0),
            interval: settings
                .and_then(|s| s.interval)
                .map_or(DEFAULT_INTERVAL, |dur| dur.0),
            min_requests: settings
                .and_then(|s| s.min_requests)
                .unwrap_or(DEFAULT_MIN_REQUESTS),
            max_error_share: settings
                .and_then(|s| s.max_error_share)
                .unwrap_or(DEFAULT_MAX_ERROR_SHARE),
            serving_error_share: settings
                .and_then(|s| s.serving_error_share)
                .unwrap_or(DEFAULT_SERVING_ERROR_SHARE),
        }
    }
}

/// Whether a status value is a 5xx (`Some(true)`), another status (`Some(false)`), or none.
fn is_server_error(status: &str) -> Option<bool> {
    let first = status.chars().next()?;
    if !first.is_ascii_digit() {
        return None;
    }
    let rest = &status[1..];
    let valid = (rest.len() == 2 && rest.chars().all(|c| c.is_ascii_digit()))
        || rest.eq_ignore_ascii_case("xx");
    valid.then_some(first == '5')
}

impl Outcomes {
    pub(crate) fn new(settings: Resolved, excluded_paths: Vec<String>) -> Self {
        Self {
            settings,
            excluded_paths,
            state: Mutex::new(State::default()),
        }
    }

    /// The series names a scrape must keep for this reader.
    pub(crate) fn series_wanted(&self) -> Vec<String> {
        match &self.settings.series {
            Some(series) => vec![series.clone()],
            None => SHAPES.iter().map(|(name, _)| (*name).to_owned()).collect(),
        }
    }

    /// Records one scrape taken at `at`.
    pub(crate) fn record(&self, exposition: &Exposition, at: Instant) {
        let mut state = self.state.lock();
        if state.shape.is_none() {
            state.shape = self.find_shape(exposition);
        }
        let Some((series, label)) = state.shape.clone() else {
            return;
        };
        let mut seen = BTreeMap::new();
        for sample in exposition.select(&series, &[]) {
            let Some(status) = sample.labels.get(&label) else {
                continue;
            };
            let Some(server_error) = is_server_error(status) else {
                continue;
            };
            let own = PATH_LABELS.iter().any(|name| {
                sample
                    .labels
                    .get(*name)
                    .is_some_and(|path| self.excluded_paths.iter().any(|own| own == path))
            });
            if own || !sample.value.is_finite() {
                continue;
            }
            let key: Vec<(String, String)> = sample
                .labels
                .iter()
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect();
            let before = state.last.get(&key).copied();
            // A series first seen counts from zero only after the first reading (its past is
            // not this window's); a value below the last is a reset (the app restarted).
            let increase = match before {
                Some(before) if sample.value >= before => sample.value - before,
                Some(_) => sample.value,
                None if state.points.is_empty() => 0.0,
                None => sample.value,
            };
            if server_error {
                state.failed += increase;
            } else {
                state.answered += increase;
            }
            seen.insert(key, sample.value);
        }
        state.last = seen;
        let point = Point {
            at,
            answered: state.answered,
            failed: state.failed,
        };
        state.points.push_back(point);
        let keep = self.settings.window * 2;
        while state
            .points
            .front()
            .is_some_and(|oldest| at.saturating_duration_since(oldest.at) > keep)
        {
            state.points.pop_front();
        }
    }

    fn find_shape(&self, exposition: &Exposition) -> Option<(String, String)> {
        if let Some(series) = &self.settings.series {
            let labels: Vec<&str> = match &self.settings.status_label {
                Some(label) => vec![label.as_str()],
                None => vec!["status", "code", "status_code", "http_response_status_code"],
            };
            return labels.iter().find_map(|label| {
                exposition
                    .select(series, &[])
                    .any(|sample| sample.labels.contains_key(*label))
                    .then(|| (series.clone(), (*label).to_owned()))
            });
        }
        SHAPES.iter().find_map(|(series, labels)| {
            labels.iter().find_map(|label| {
                exposition
                    .select(series, &[])
                    .any(|sample| sample.labels.contains_key(*label))
                    .then(|| ((*series).to_owned(), (*label).to_owned()))
            })
        })
    }

    /// Requests answered since the first reading (every status, the agent's own left out),
    /// once the request counters are found: `None` while the app exports none the agent reads.
    pub(crate) fn served(&self) -> Option<u64> {
        let state = self.state.lock();
        state.shape.as_ref()?;
        Some((state.answered + state.failed).max(0.0).round() as u64)
    }

    /// The series and status label read, once found.
    pub(crate) fn shape(&self) -> Option<(String, String)> {
        self.state.lock().shape.clone()
    }

    /// The requests of the window ending at the last reading, when that reading is recent
    /// (within two intervals of `now`).
    pub(crate) fn window(&self, now: Instant) -> Option<Window> {
        let state = self.state.lock();
        let latest = *state.points.back()?;
        if now.saturating_duration_since(latest.at)
            > self.settings.interval * 2 + Duration::from_secs(1)
        {
            return None;
        }
        let start = latest.at.checked_sub(self.settings.window)?;
        // The newest reading at or before the window's start, else the oldest kept.
        let base = state
            .points
            .iter()
            .rev()
            .find(|point| point.at <= start)
            .or_else(|| state.points.front())?;
        let span = latest.at.saturating_duration_since(base.at);
        if span.is_zero() {
            return None;
        }
        Some(Window {
            answered: (latest.answered - base.answered).max(0.0).round() as u64,
            failed: (latest.failed - base.failed).max(0.0).round() as u64,
            span,
        })
    }

    /// What the window says now.
    pub(crate) fn judge(&self, now: Instant) -> Judgement {
        let Some(window) = self.window(now) else {
            return Judgement::Unknown;
        };
        if window.total() < self.settings.min_requests {
            return Judgement::Unknown;
        }
        let share = window.error_share();
        if share > self.settings.max_error_share {
            Judgement::Failing(window)
        } else if share <= self.settings.serving_error_share {
            Judgement::Serving(window)
        } else {
            Judgement::Mixed(window)
        }
    }

    /// The reason a failing self-check degrades, when the app is serving.
    pub(crate) fn serving_despite(&self, failure: &str, now: Instant) -> Option<String> {
        let Judgement::Serving(window) = self.judge(now) else {
            return None;
        };
        Some(format!(
            "{failure}, but {} of {} requests in the last {} succeeded: busy, not broken",
            thousands(window.answered),
            thousands(window.total()),
            seconds(window.span)
        ))
    }
}

/// `2,300`.
pub(crate) fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

fn seconds(span: Duration) -> String {
    probity_contract::duration::format(Duration::from_secs(span.as_secs().max(1)))
}

impl Outcomes {
    /// Asks `scraper` for the series these outcomes read, with a timeout inside the interval.
    pub(crate) fn register(&self, scraper: &Scraper) {
        let timeout = (self.settings.interval * 4 / 5).min(Duration::from_secs(2));
        scraper.register(self.series_wanted().iter().map(String::as_str), timeout);
    }
}

/// Reads the app's request counters every interval, reporting failing requests to the hard
/// `app` checks. The task runs with the agent.
pub(crate) async fn run(
    outcomes: Arc<Outcomes>,
    scraper: Arc<Scraper>,
    reporters: Vec<probity::Reporter>,
    passive_failures: u32,
) {
    let interval = outcomes.settings.interval;
    let timeout = (interval * 4 / 5).min(Duration::from_secs(2));
    let mut ticks = tokio::time::interval(interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing = false;
    let mut announced_shape = false;
    loop {
        ticks.tick().await;
        let Ok(exposition) = scraper.scrape(interval / 2, timeout).await else {
            continue;
        };
        let now = Instant::now();
        outcomes.record(&exposition, now);
        if !announced_shape && let Some((series, label)) = outcomes.shape() {
            announced_shape = true;
            tracing::info!(
                target: "probity::agent",
                series,
                status_label = label,
                "reading the app's request outcomes"
            );
        }
        match outcomes.judge(now) {
            Judgement::Failing(window) => {
                let reason = format!(
                    "{} of {} requests in the last {} answered 5xx ({:.0}%, above {:.0}%)",
                    thousands(window.failed),
                    thousands(window.total()),
                    seconds(window.span),
                    window.error_share() * 100.0,
                    outcomes.settings.max_error_share * 100.0
                );
                if !failing {
                    tracing::warn!(
                        target: "probity::agent",
                        seen = %reason,
                        "the app is failing its requests: draining, whatever its health endpoint says"
                    );
                    failing = true;
                }
                // A run of reports, as request code would send them: the check fails at once
                // and each run restarts its rise count while the failures last.
                for reporter in &reporters {
                    for _ in 0..passive_failures {
                        reporter.failure(&reason);
                    }
                }
            }
            _ => {
                if failing {
                    tracing::info!(
                        target: "probity::agent",
                        "the app's requests succeed again: its checks recover through their polls"
                    );
                    failing = false;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exposition(text: &str) -> Exposition {
        Exposition::parse(text).unwrap()
    }

    fn outcomes() -> Outcomes {
        Outcomes::new(
            Resolved::new(None),
            vec!["/metrics".into(), "/ready".into()],
        )
    }

    fn counters(ok: u64, failed: u64, own: u64) -> String {
        format!(
            "# TYPE http_requests_total counter\n\
             http_requests_total{{status=\"200\",path=\"/orders\"}} {ok}\n\
             http_requests_total{{status=\"503\",path=\"/orders\"}} {failed}\n\
             http_requests_total{{status=\"200\",path=\"/metrics\"}} {own}\n"
        )
    }

    #[tokio::test(start_paused = true)]
    async fn a_window_of_successes_is_serving_and_the_agents_own_requests_do_not_count() {
        let outcomes = outcomes();
        for second in 0..=10u64 {
            outcomes.record(
                &exposition(&counters(1000 + second * 230, 0, second * 50)),
                Instant::now(),
            );
            tokio::time::advance(Duration::from_secs(1)).await;
        }
        let window = outcomes.window(Instant::now()).unwrap();
        assert_eq!(window.answered, 2300);
        assert_eq!(window.failed, 0);
        let reason = outcomes
            .serving_despite("its readiness says 503", Instant::now())
            .unwrap();
        assert_eq!(
            reason,
            "its readiness says 503, but 2,300 of 2,300 requests in the last 10s succeeded: busy, not broken"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_window_of_5xx_is_failing_and_a_counter_created_late_counts_from_zero() {
        let outcomes = outcomes();
        // The 503 series does not exist until the first failure.
        outcomes.record(
            &exposition("http_requests_total{status=\"200\"} 100\n"),
            Instant::now(),
        );
        for second in 1..=10u64 {
            tokio::time::advance(Duration::from_secs(1)).await;
            outcomes.record(
                &exposition(&format!(
                    "http_requests_total{{status=\"200\"}} {}\nhttp_requests_total{{status=\"503\"}} {}\n",
                    100 + second,
                    second * 9
                )),
                Instant::now(),
            );
        }
        let Judgement::Failing(window) = outcomes.judge(Instant::now()) else {
            panic!("{:?}", outcomes.judge(Instant::now()));
        };
        assert_eq!((window.answered, window.failed), (10, 90));
    }

    #[tokio::test(start_paused = true)]
    async fn too_few_requests_or_an_old_reading_judge_nothing() {
        let outcomes = outcomes();
        outcomes.record(&exposition(&counters(0, 0, 0)), Instant::now());
        tokio::time::advance(Duration::from_secs(5)).await;
        outcomes.record(&exposition(&counters(5, 5, 0)), Instant::now());
        assert_eq!(outcomes.judge(Instant::now()), Judgement::Unknown);
        outcomes.record(&exposition(&counters(500, 5, 0)), Instant::now());
        assert!(matches!(
            outcomes.judge(Instant::now()),
            Judgement::Serving(_)
        ));
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(outcomes.judge(Instant::now()), Judgement::Unknown);
    }

    #[tokio::test(start_paused = true)]
    async fn reads_micrometer_opentelemetry_and_grouped_statuses() {
        for (first, second) in [
            (
                "http_server_requests_seconds_count{status=\"200\",uri=\"/orders\",outcome=\"SUCCESS\"} 10\n",
                "http_server_requests_seconds_count{status=\"200\",uri=\"/orders\",outcome=\"SUCCESS\"} 60\n",
            ),
            (
                "http_server_request_duration_seconds_count{http_response_status_code=\"200\",http_route=\"/orders\"} 10\n",
                "http_server_request_duration_seconds_count{http_response_status_code=\"200\",http_route=\"/orders\"} 60\n",
            ),
            (
                "http_requests_total{status=\"2xx\",handler=\"/orders\"} 10\n",
                "http_requests_total{status=\"2xx\",handler=\"/orders\"} 60\n",
            ),
        ] {
            let outcomes = outcomes();
            outcomes.record(&exposition(first), Instant::now());
            tokio::time::advance(Duration::from_secs(1)).await;
            outcomes.record(&exposition(second), Instant::now());
            assert!(
                matches!(outcomes.judge(Instant::now()), Judgement::Serving(window) if window.answered == 50),
                "{second}"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_restarted_app_resets_its_counters_without_a_negative_window() {
        let outcomes = outcomes();
        outcomes.record(&exposition(&counters(1000, 0, 0)), Instant::now());
        tokio::time::advance(Duration::from_secs(1)).await;
        outcomes.record(&exposition(&counters(30, 0, 0)), Instant::now());
        let window = outcomes.window(Instant::now()).unwrap();
        assert_eq!(window.answered, 30);
    }

    #[test]
    fn statuses() {
        assert_eq!(is_server_error("503"), Some(true));
        assert_eq!(is_server_error("5xx"), Some(true));
        assert_eq!(is_server_error("200"), Some(false));
        assert_eq!(is_server_error("4XX"), Some(false));
        assert_eq!(is_server_error("SUCCESS"), None);
        assert_eq!(is_server_error("5000"), None);
        assert_eq!(thousands(2300), "2,300");
        assert_eq!(thousands(15566), "15,566");
        assert_eq!(thousands(999), "999");
    }
}
