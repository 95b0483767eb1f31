//! Liveness from outside the app's process, for conditions inside it.
//!
//! Each condition has an observer on the agent's runtime that looks at the app every interval
//! and beats the condition's heartbeat while the app looks alive:
//!
//! - `event_loop_lag`: the app answered a scrape of its exposition within the timeout (an event
//!   loop that can answer is running) and the lag it reports is at most `max` (seed 004's
//!   `eventLoopLagMs() > 5000`). A scrape that times out is the strongest stall signal: the
//!   loop could not even answer.
//! - `heartbeat_file`: the file's modification time moved since the last look.
//! - `app_liveness`: the app's own liveness endpoint answered an expected status in time.
//!
//! Liveness fails when a heartbeat is silent for longer than its bound. A refused connection
//! (or a missing heartbeat file) means nothing is running yet — the app is booting or being
//! restarted — and is declared a bounded wait (`[app] boot_timeout`): a boot is not a wedge,
//! but a boot that outlives its bound is.

use crate::adapter::APP_STARTED_STEP;
use crate::checks::{Context, Task};
use crate::config::{LivenessEntry, LivenessKind};
use crate::fetch::{self, FetchError};
use crate::scrape::ScrapeError;
use probity::{Health, Heartbeat, WaitGuard};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

/// Default prom-client series for the event-loop lag, in seconds.
pub(crate) const DEFAULT_LAG_SERIES: &str = "nodejs_eventloop_lag_seconds";
/// Default largest lag (seed 004: 5000 ms).
pub(crate) const DEFAULT_MAX_LAG: Duration = Duration::from_secs(5);
/// How long the app may not be listening unless configured (booting, restarting).
pub(crate) const DEFAULT_BOOT_TIMEOUT: Duration = Duration::from_secs(60);

/// What a condition waits on while the app is not running.
const BOOT: &str = "the app's boot";

/// Completes the startup step once every condition has seen a first sign of life.
#[derive(Debug)]
pub(crate) struct StartupGate {
    health: Health,
    remaining: AtomicUsize,
}

impl StartupGate {
    pub(crate) fn new(health: Health, conditions: usize) -> Arc<Self> {
        Arc::new(Self {
            health,
            remaining: AtomicUsize::new(conditions),
        })
    }

    fn first_beat(&self) {
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            tracing::info!(target: "probity::agent", "every liveness condition has seen the app alive: startup complete");
            let _ = self.health.complete_step(APP_STARTED_STEP);
        }
    }
}

/// One condition's settings, resolved.
pub(crate) struct Observer {
    heartbeat: Heartbeat,
    /// The wait declared while the app is not running (booting, restarting): held until it is
    /// seen alive, so looking again does not extend it.
    boot: Option<WaitGuard>,
    /// What the last look saw, when it was not a sign of life (logged when it changes).
    note: Option<String>,
    gate: Arc<StartupGate>,
    interval: Duration,
    timeout: Duration,
    boot_timeout: Duration,
    source: Source,
    started: bool,
}

enum Source {
    Lag {
        scraper: Arc<crate::scrape::Scraper>,
        series: String,
        max: Duration,
    },
    File {
        path: std::path::PathBuf,
        max_age: Duration,
        last_seen: Option<SystemTime>,
    },
    Endpoint {
        client: reqwest::Client,
        url: reqwest::Url,
        expected: std::ops::RangeInclusive<u16>,
    },
}

/// The longest silence a condition's heartbeat allows (its bound in the contract).
pub(crate) fn bound(entry: &LivenessEntry) -> Duration {
    let (interval, _) = defaults(entry);
    let silence = entry.max_silence.map(|dur| dur.0);
    match &entry.kind {
        LivenessKind::EventLoopLag(settings) => {
            silence.unwrap_or(settings.max.map_or(DEFAULT_MAX_LAG, |dur| dur.0))
        }
        LivenessKind::HeartbeatFile(settings) => silence.unwrap_or(settings.max_age.0),
        LivenessKind::AppLiveness(_) => silence.unwrap_or(interval * 3),
    }
}

fn defaults(entry: &LivenessEntry) -> (Duration, Duration) {
    let kind_interval = match &entry.kind {
        LivenessKind::EventLoopLag(_) => Duration::from_secs(1),
        LivenessKind::HeartbeatFile(settings) => {
            (settings.max_age.0 / 5).clamp(Duration::from_millis(500), Duration::from_secs(5))
        }
        LivenessKind::AppLiveness(_) => Duration::from_secs(2),
    };
    let timing = crate::checks::timing(
        entry.interval.map(|dur| dur.0),
        entry.timeout.map(|dur| dur.0),
        probity::Timing {
            interval: kind_interval,
            timeout: (kind_interval * 4 / 5).min(Duration::from_secs(2)),
        },
    );
    (timing.interval, timing.timeout)
}

impl Observer {
    pub(crate) fn new(
        entry: &LivenessEntry,
        context: &mut Context<'_>,
        heartbeat: Heartbeat,
        gate: Arc<StartupGate>,
        boot_timeout: Duration,
    ) -> Result<Observer, String> {
        let (interval, timeout) = defaults(entry);
        if timeout >= interval {
            return Err(format!(
                "timeout ({}) must be shorter than interval ({})",
                humantime::format_duration(timeout),
                humantime::format_duration(interval)
            ));
        }
        let max_silence = bound(entry);
        if max_silence < interval {
            return Err(format!(
                "max_silence ({}) must be at least the interval ({}), or every pause between \
                 two looks fails liveness",
                humantime::format_duration(max_silence),
                humantime::format_duration(interval)
            ));
        }
        let source = match &entry.kind {
            LivenessKind::EventLoopLag(settings) => {
                let url = context.url(&settings.url)?;
                Source::Lag {
                    scraper: context.scraper(url),
                    series: settings
                        .series
                        .clone()
                        .unwrap_or_else(|| DEFAULT_LAG_SERIES.to_owned()),
                    max: settings.max.map_or(DEFAULT_MAX_LAG, |dur| dur.0),
                }
            }
            LivenessKind::HeartbeatFile(settings) => Source::File {
                path: settings.path.clone().into(),
                max_age: settings.max_age.0,
                last_seen: None,
            },
            LivenessKind::AppLiveness(settings) => Source::Endpoint {
                client: context.client.clone(),
                url: context.url(&settings.url)?,
                expected: settings
                    .expect_status
                    .as_ref()
                    .map_or(200..=299, |range| range.0.clone()),
            },
        };
        Ok(Observer {
            heartbeat,
            boot: None,
            note: None,
            gate,
            interval,
            timeout,
            boot_timeout,
            source,
            started: false,
        })
    }

    /// The observer's loop, as a task to start with the agent.
    pub(crate) fn run(mut self) -> Task {
        Box::pin(async move {
            let mut ticks = tokio::time::interval(self.interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                self.observe().await;
            }
        })
    }

    async fn observe(&mut self) {
        match self.look().await {
            Look::Alive => {
                self.boot = None;
                self.heartbeat.beat();
                if self.note.take().is_some() {
                    tracing::info!(
                        target: "probity::agent",
                        condition = self.heartbeat.name(),
                        "the app looks alive again"
                    );
                }
                if !self.started {
                    self.started = true;
                    self.gate.first_beat();
                }
            }
            Look::NotRunning(note) => {
                if self.boot.is_none() {
                    self.boot = Some(self.heartbeat.waiting_on(BOOT, self.boot_timeout));
                }
                self.noted(note);
            }
            Look::NotAlive(note) => self.noted(note),
        }
    }

    /// Logs what a look saw when it was not a sign of life, once per change: the heartbeat's
    /// silence says that the app is not alive, the log says what was seen.
    fn noted(&mut self, note: String) {
        if self.note.as_deref() != Some(note.as_str()) {
            tracing::warn!(
                target: "probity::agent",
                condition = self.heartbeat.name(),
                seen = %crate::adapter::redact(&note),
                "no sign of life"
            );
            self.note = Some(note);
        }
    }

    async fn look(&mut self) -> Look {
        match &mut self.source {
            Source::Lag {
                scraper,
                series,
                max,
            } => match scraper.scrape(self.interval / 2, self.timeout).await {
                Ok(exposition) => {
                    let lag = exposition
                        .select(series, &Default::default())
                        .map(|sample| sample.value)
                        .fold(None, |worst: Option<f64>, value| {
                            Some(worst.map_or(value, |worst| worst.max(value)))
                        });
                    match lag {
                        Some(seconds) if seconds.is_finite() && seconds > max.as_secs_f64() => {
                            Look::NotAlive(format!(
                                "event-loop lag {seconds:.3}s above {}",
                                humantime::format_duration(*max)
                            ))
                        }
                        // The app answered: its loop runs, whatever the series says.
                        _ => Look::Alive,
                    }
                }
                Err(ScrapeError::Fetch(FetchError::Refused(address))) => {
                    Look::NotRunning(format!("nothing is listening on {address}"))
                }
                Err(error) => Look::NotAlive(error.to_string()),
            },
            Source::File {
                path,
                max_age,
                last_seen,
            } => match tokio::fs::metadata(&*path)
                .await
                .and_then(|meta| meta.modified())
            {
                Ok(modified) => {
                    let moved = last_seen.is_none_or(|seen| modified > seen);
                    let first = last_seen.is_none();
                    *last_seen = Some(modified);
                    let age = SystemTime::now()
                        .duration_since(modified)
                        .unwrap_or_default();
                    if moved && !(first && age > *max_age) {
                        Look::Alive
                    } else {
                        Look::NotAlive(format!(
                            "{} last touched {} ago",
                            path.display(),
                            humantime::format_duration(Duration::from_secs(age.as_secs()))
                        ))
                    }
                }
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    Look::NotRunning(format!("{} does not exist yet", path.display()))
                }
                Err(error) => Look::NotAlive(format!("cannot read {}: {error}", path.display())),
            },
            Source::Endpoint {
                client,
                url,
                expected,
            } => match fetch::get(client, url, "*/*", self.timeout).await {
                Ok(answer) if expected.contains(&answer.status) => Look::Alive,
                Ok(answer) => Look::NotAlive(format!("{} answered {}", url.path(), answer.status)),
                Err(FetchError::Refused(address)) => {
                    Look::NotRunning(format!("nothing is listening on {address}"))
                }
                Err(error) => Look::NotAlive(error.to_string()),
            },
        }
    }
}

enum Look {
    Alive,
    NotRunning(String),
    NotAlive(String),
}
