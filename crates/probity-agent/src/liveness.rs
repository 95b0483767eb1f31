//! Liveness from outside the app's process, for conditions inside it.
//!
//! Each condition has an observer on the agent's runtime that looks at the app every interval
//! and beats the condition's heartbeat while the app looks alive:
//!
//! - `event_loop_lag`: the app answered a scrape of its exposition within the timeout (an event
//!   loop that can answer is running) and the lag it reports is at most `max` (the
//!   database-blip incident's own fix, a `/livez` failing on `eventLoopLagMs() > 5000`). A scrape that times out is the strongest stall signal: the
//!   loop could not even answer.
//! - `heartbeat_file`: the file's modification time moved since the last look.
//! - `app_liveness`: the app's own liveness endpoint answered an expected status in time.
//!
//! Liveness fails when a heartbeat is silent for longer than its bound. A refused connection
//! (or a missing heartbeat file) means nothing is running yet — the app is booting or being
//! restarted — and is declared a bounded wait (`[app] boot_timeout`): a boot is not a wedge,
//! but a boot that outlives its bound is.
//!
//! **Waiting is not wedged.** A threaded server whose every thread blocks on a locked or
//! black-holed database stops answering even its shallow endpoint. When the app is silent
//! while the evidence says it is blocked on a dependency, the silence is declared a wait on
//! that dependency, bounded by the condition's `max_wait` — as the core's heartbeats treat
//! `waiting_on` — and not a wedge. The evidence ([`Evidence`]):
//!
//! - a hard readiness check of a dependency, on the agent's own connection, that failed or
//!   timed out at least two polls in a row and as its own `fall` says (the database is down,
//!   hung, or locked for what the check reads) — one failed poll is a blip
//!   ([`EVIDENCE_FAILURES`]);
//! - the app's own readiness (a hard `app` check) answering, promptly, that it fails, likewise
//!   two polls in a row.
//!
//! The wait is declared once per episode and held while the evidence lasts: it never extends
//! itself, so a process still silent `max_wait` after its dependency went away is a wedge.
//! When the evidence ends (the dependency answers again) and the app is still silent, the
//! silence counts from then. Where the agent sees the app's process
//! ([`crate::process`]), a stopped process (`T` in `/proc/PID/stat`) is a wedge whatever its
//! dependencies do. A silence with every dependency answering stays a wedge.

use crate::adapter::APP_STARTED_STEP;
use crate::checks::{Context, Task};
use crate::config::{LivenessEntry, LivenessKind};
use crate::fetch::{self, FetchError};
use crate::process::{ProcessState, ProcessView};
use crate::scrape::ScrapeError;
use probity::{Health, Heartbeat, Tier, WaitGuard};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

/// Default prom-client series for the event-loop lag, in seconds.
pub(crate) const DEFAULT_LAG_SERIES: &str = "nodejs_eventloop_lag_seconds";
/// Default largest lag: 5000 ms, the threshold the database-blip incident's fix used.
pub(crate) const DEFAULT_MAX_LAG: Duration = Duration::from_secs(5);
/// How long the app may not be listening unless configured (booting, restarting).
pub(crate) const DEFAULT_BOOT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a silence blocked on a dependency is a wait, unless configured: a database
/// outage or a lock of two minutes rides through; a process still silent after that is
/// restarted.
pub(crate) const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(120);
/// How often the agent looks for the app's process again when it cannot see it.
const PROCESS_SEARCH_EVERY: Duration = Duration::from_secs(30);

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

/// What says the app is blocked on a dependency: the readiness checks whose failure excuses
/// its silence.
#[derive(Debug)]
pub(crate) struct Evidence {
    health: Health,
    /// Hard checks of dependencies on the agent's own connections.
    dependencies: Vec<String>,
    /// Hard `app` checks: the app's own readiness endpoint.
    app_readiness: Vec<String>,
}

/// A dependency the app is blocked on, and what says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Blocked {
    /// The dependency (its check's name).
    pub(crate) dependency: String,
    /// What the agent saw.
    pub(crate) seen: String,
}

impl Evidence {
    pub(crate) fn new(
        health: Health,
        dependencies: Vec<String>,
        app_readiness: Vec<String>,
    ) -> Self {
        Self {
            health,
            dependencies,
            app_readiness,
        }
    }

    /// The dependency the app is blocked on, if the evidence says so now.
    pub(crate) fn blocked_on(&self) -> Option<Blocked> {
        let snapshot = self.health.snapshot();
        for name in &self.dependencies {
            let Some(state) = snapshot.check(name) else {
                continue;
            };
            if state.tier() != Tier::Hard {
                continue;
            }
            if let Some(last) = state.last()
                && failing(state)
            {
                let kind = last.kind.map_or("error", |kind| kind.as_str());
                return Some(Blocked {
                    dependency: name.clone(),
                    seen: format!(
                        "the check of {name} fails ({kind}: {})",
                        last.message.as_deref().unwrap_or("no message")
                    ),
                });
            }
        }
        for name in &self.app_readiness {
            let Some(state) = snapshot.check(name) else {
                continue;
            };
            // An answer, not a timeout: a wedged app's readiness does not answer either.
            if let Some(last) = state.last()
                && failing(state)
                && !matches!(
                    last.kind,
                    Some(probity::FailureKind::Timeout | probity::FailureKind::Refused)
                )
            {
                return Some(Blocked {
                    dependency: name.clone(),
                    seen: format!(
                        "the app's readiness ({name}) answers that it fails: {}",
                        last.message.as_deref().unwrap_or("no message")
                    ),
                });
            }
        }
        None
    }
}

/// Failures in a row before a check's failure is evidence of a block. One failed poll is a
/// blip, not a block: were it evidence, a wedged app would be excused by any dependency that
/// missed one poll in each silence — the wait declared, ended at the next good poll, and its
/// silence counted afresh from there, forever. A dependency the app is really blocked on
/// fails every poll, so two in a row cost one check interval.
const EVIDENCE_FAILURES: u32 = 2;

/// Whether a check fails as evidence of a block: failing as its own hysteresis says (its
/// `fall`), and at least [`EVIDENCE_FAILURES`] polls in a row whatever its `fall`.
fn failing(state: &probity::CheckState) -> bool {
    !state.is_healthy() && state.consecutive_failures() >= EVIDENCE_FAILURES
}

/// One condition's settings, resolved.
pub(crate) struct Observer {
    heartbeat: Heartbeat,
    /// The wait declared while the app is not running (booting, restarting): held until it is
    /// seen alive, so looking again does not extend it.
    boot: Option<WaitGuard>,
    /// The wait declared while the evidence says the app is blocked on a dependency: held
    /// while the evidence lasts, so looking again does not extend it.
    waiting: Option<(String, WaitGuard)>,
    /// What the last look saw, when it was not a sign of life (logged when it changes).
    note: Option<String>,
    gate: Arc<StartupGate>,
    interval: Duration,
    timeout: Duration,
    boot_timeout: Duration,
    max_wait: Duration,
    evidence: Arc<Evidence>,
    process: Option<Process>,
    source: Source,
    started: bool,
}

/// The app's process, where the agent can see it.
struct Process {
    view: ProcessView,
    /// When the agent last found no visible process (it looks again every
    /// [`PROCESS_SEARCH_EVERY`]).
    missing_since: Option<tokio::time::Instant>,
}

impl Process {
    fn state(&mut self) -> Option<ProcessState> {
        if let Some(since) = self.missing_since
            && since.elapsed() < PROCESS_SEARCH_EVERY
        {
            return None;
        }
        let state = self.view.state();
        self.missing_since = match state {
            Some(_) => None,
            None => Some(tokio::time::Instant::now()),
        };
        state
    }
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
    /// What a test says each look sees.
    #[cfg(test)]
    Scripted(Arc<parking_lot::Mutex<Look>>),
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
        evidence: Arc<Evidence>,
    ) -> Result<Observer, String> {
        let (interval, timeout) = defaults(entry);
        if timeout >= interval {
            return Err(format!(
                "timeout ({}) must be shorter than interval ({})",
                probity_contract::duration::format(timeout),
                probity_contract::duration::format(interval)
            ));
        }
        let max_silence = bound(entry);
        if max_silence < interval {
            return Err(format!(
                "max_silence ({}) must be at least the interval ({}), or every pause between \
                 two looks fails liveness",
                probity_contract::duration::format(max_silence),
                probity_contract::duration::format(interval)
            ));
        }
        let max_wait = entry.max_wait.map_or(DEFAULT_MAX_WAIT, |dur| dur.0);
        let mut port = None;
        let source = match &entry.kind {
            LivenessKind::EventLoopLag(settings) => {
                let url = context.url(&settings.url)?;
                port = url.port_or_known_default();
                let scraper = context.scraper(url);
                let series = settings
                    .series
                    .clone()
                    .unwrap_or_else(|| DEFAULT_LAG_SERIES.to_owned());
                scraper.register([series.as_str()], timeout);
                context.unmoving.watch(
                    &scraper,
                    &series,
                    &[],
                    crate::config::DEFAULT_STALE_AFTER_SCRAPES,
                );
                Source::Lag {
                    scraper,
                    series,
                    max: settings.max.map_or(DEFAULT_MAX_LAG, |dur| dur.0),
                }
            }
            LivenessKind::HeartbeatFile(settings) => Source::File {
                path: settings.path.clone().into(),
                max_age: settings.max_age.0,
                last_seen: None,
            },
            LivenessKind::AppLiveness(settings) => {
                let url = context.url(&settings.url)?;
                port = url.port_or_known_default();
                Source::Endpoint {
                    client: context.client.clone(),
                    url,
                    expected: settings
                        .expect_status
                        .as_ref()
                        .map_or(200..=299, |range| range.0.clone()),
                }
            }
        };
        // The process listening on the app's port; for a heartbeat file, the app's own URL.
        let port = port.or_else(|| context.app_url.and_then(|url| url.port_or_known_default()));
        Ok(Observer {
            heartbeat,
            boot: None,
            waiting: None,
            note: None,
            gate,
            interval,
            timeout,
            boot_timeout,
            max_wait,
            evidence,
            process: port.map(|port| Process {
                view: ProcessView::new(port),
                missing_since: None,
            }),
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
                self.waiting = None;
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
                self.noted(note, None);
            }
            Look::NotAlive(note) => self.silent(note),
        }
    }

    /// A look without a sign of life from a running app: a wait on a dependency when the
    /// evidence says it is blocked on one, a wedge otherwise (the module docs).
    fn silent(&mut self, seen: String) {
        let process = self.process.as_mut().and_then(Process::state);
        if let Some(state) = process.as_ref().filter(|state| state.stopped) {
            if let Some((dependency, _)) = self.waiting.take() {
                tracing::warn!(
                    target: "probity::agent",
                    condition = self.heartbeat.name(),
                    dependency,
                    "the app's process is stopped: its silence is no longer a wait"
                );
            }
            return self.noted(format!("{seen}; {state}"), None);
        }
        let context = process.map(|state| state.to_string());
        match self.evidence.blocked_on() {
            Some(blocked) => {
                if self.waiting.is_none() {
                    tracing::info!(
                        target: "probity::agent",
                        condition = self.heartbeat.name(),
                        dependency = blocked.dependency,
                        max_wait = %probity_contract::duration::format(self.max_wait),
                        "the app is silent while blocked on a dependency: a bounded wait, not a wedge"
                    );
                    let guard = self
                        .heartbeat
                        .waiting_on(&blocked.dependency, self.max_wait);
                    self.waiting = Some((blocked.dependency.clone(), guard));
                }
                self.noted(
                    format!(
                        "{seen}; waiting on {}: {}",
                        blocked.dependency, blocked.seen
                    ),
                    context,
                );
            }
            None => {
                if let Some((dependency, _)) = self.waiting.take() {
                    tracing::warn!(
                        target: "probity::agent",
                        condition = self.heartbeat.name(),
                        dependency,
                        "the dependency answers again and the app is still silent: the silence counts from now"
                    );
                }
                self.noted(seen, context);
            }
        }
    }

    /// Logs what a look saw when it was not a sign of life, once per change of `note` (with
    /// `context`, the process's threads, which change at every look): the heartbeat's silence
    /// says that the app is not alive, the log says what was seen.
    fn noted(&mut self, note: String, context: Option<String>) {
        if self.note.as_deref() != Some(note.as_str()) {
            match context {
                Some(context) => tracing::warn!(
                    target: "probity::agent",
                    condition = self.heartbeat.name(),
                    seen = %crate::adapter::redact(&note),
                    process = %context,
                    "no sign of life"
                ),
                None => tracing::warn!(
                    target: "probity::agent",
                    condition = self.heartbeat.name(),
                    seen = %crate::adapter::redact(&note),
                    "no sign of life"
                ),
            }
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
                        .select(series, &[])
                        .map(|sample| sample.value)
                        .fold(None, |worst: Option<f64>, value| {
                            Some(worst.map_or(value, |worst| worst.max(value)))
                        });
                    match lag {
                        Some(seconds) if seconds.is_finite() && seconds > max.as_secs_f64() => {
                            Look::NotAlive(format!(
                                "event-loop lag {seconds:.3}s above {}",
                                probity_contract::duration::format(*max)
                            ))
                        }
                        // The app answered: its loop runs, whatever the series says.
                        _ => Look::Alive,
                    }
                }
                Err(ScrapeError::Fetch(FetchError::Refused(address))) => {
                    Look::NotRunning(format!("nothing is listening on {address}"))
                }
                // A prompt answer, whatever it says (an error status, a body too large): the
                // loop that wrote it runs.
                Err(ScrapeError::Status { .. } | ScrapeError::Fetch(FetchError::TooLarge(_))) => {
                    Look::Alive
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
                            probity_contract::duration::format(Duration::from_secs(age.as_secs()))
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
            #[cfg(test)]
            Source::Scripted(look) => look.lock().clone(),
        }
    }
}

#[derive(Debug, Clone)]
enum Look {
    Alive,
    NotRunning(String),
    NotAlive(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use probity::{CheckError, CheckSpec, Detail};
    use std::sync::atomic::AtomicBool;

    const SILENCE: Duration = Duration::from_secs(6);
    const MAX_WAIT: Duration = Duration::from_secs(60);

    struct Rig {
        health: Health,
        look: Arc<parking_lot::Mutex<Look>>,
        database_down: Arc<AtomicBool>,
    }

    /// A heartbeat beaten by a scripted observer, and a hard `db` check whose outcome the
    /// test sets; `process` is a fake `/proc` when given.
    fn rig(process: Option<std::path::PathBuf>) -> Rig {
        let database_down = Arc::new(AtomicBool::new(false));
        let down = database_down.clone();
        let health = Health::builder()
            .check(
                CheckSpec::new("db", Tier::Hard, move || {
                    let down = down.load(Ordering::SeqCst);
                    async move {
                        if down {
                            Err(CheckError::new("no answer").kind(probity::FailureKind::Timeout))
                        } else {
                            Ok(Detail::new())
                        }
                    }
                })
                .interval(Duration::from_secs(2))
                .timeout(Duration::from_secs(1)),
            )
            .heartbeat("process", SILENCE)
            .build()
            .unwrap();
        health.start().unwrap();
        let look = Arc::new(parking_lot::Mutex::new(Look::Alive));
        let observer = Observer {
            heartbeat: health.heartbeat("process").unwrap(),
            boot: None,
            waiting: None,
            note: None,
            gate: StartupGate::new(health.clone(), 1),
            interval: Duration::from_secs(2),
            timeout: Duration::from_secs(1),
            boot_timeout: DEFAULT_BOOT_TIMEOUT,
            max_wait: MAX_WAIT,
            evidence: Arc::new(Evidence::new(health.clone(), vec!["db".into()], vec![])),
            process: process.map(|proc| Process {
                view: ProcessView::at(&proc, 3000),
                missing_since: None,
            }),
            source: Source::Scripted(look.clone()),
            started: false,
        };
        tokio::spawn(observer.run());
        Rig {
            health,
            look,
            database_down,
        }
    }

    impl Rig {
        fn silent(&self) {
            *self.look.lock() = Look::NotAlive("no answer within 1s (127.0.0.1:3000)".into());
        }

        fn live(&self) -> bool {
            self.health.snapshot().conditions()[0].failure().is_none()
        }

        /// Seconds from now until liveness fails, looking every 100 ms up to `limit`.
        async fn fails_within(&self, limit: Duration) -> Option<Duration> {
            let started = tokio::time::Instant::now();
            while started.elapsed() < limit {
                if !self.live() {
                    return Some(started.elapsed());
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            None
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_silence_with_every_dependency_answering_is_a_wedge() {
        let rig = rig(None);
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(rig.live());
        rig.silent();
        let failed = rig.fails_within(Duration::from_secs(30)).await;
        let failed = failed.expect("a silent app with its database answering fails liveness");
        assert!(failed <= SILENCE + Duration::from_secs(3), "{failed:?}");
        assert!(failed >= SILENCE - Duration::from_secs(2), "{failed:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_silence_while_the_database_fails_is_a_bounded_wait() {
        let rig = rig(None);
        tokio::time::sleep(Duration::from_secs(5)).await;
        // The database goes: the app's threads block on it and it stops answering.
        rig.database_down.store(true, Ordering::SeqCst);
        rig.silent();
        // A 50 s outage: liveness never fails.
        let failed = rig.fails_within(Duration::from_secs(50)).await;
        assert_eq!(failed, None, "liveness failed during the outage");
        let condition = rig.health.snapshot().conditions()[0].clone();
        assert_eq!(
            condition.waiting().map(|wait| wait.dependency()),
            Some("db"),
            "{condition:?}"
        );
        // Still blocked past its own bound: a wedge.
        let failed = rig.fails_within(Duration::from_secs(30)).await;
        assert!(failed.is_some(), "a wait past max_wait excused the silence");
    }

    #[tokio::test(start_paused = true)]
    async fn once_the_dependency_answers_the_silence_counts_again() {
        let rig = rig(None);
        tokio::time::sleep(Duration::from_secs(5)).await;
        rig.database_down.store(true, Ordering::SeqCst);
        rig.silent();
        assert_eq!(rig.fails_within(Duration::from_secs(20)).await, None);
        // The database answers again; the app stays silent (it was wedged all along).
        rig.database_down.store(false, Ordering::SeqCst);
        let failed = rig.fails_within(Duration::from_secs(30)).await;
        let failed = failed.expect("a silence with the database answering fails liveness");
        assert!(failed <= SILENCE + Duration::from_secs(6), "{failed:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn one_failed_dependency_poll_per_silence_does_not_excuse_a_wedge() {
        let rig = rig(None);
        tokio::time::sleep(Duration::from_secs(5)).await;
        // The app wedges; its database answers, but misses one poll in every two.
        rig.silent();
        let blips = {
            let down = rig.database_down.clone();
            tokio::spawn(async move {
                loop {
                    down.store(true, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    down.store(false, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_secs(2)).await;
                }
            })
        };
        let failed = rig.fails_within(Duration::from_secs(60)).await;
        blips.abort();
        let failed = failed.expect("isolated failed polls of the database excused a wedge");
        assert!(failed <= SILENCE + Duration::from_secs(4), "{failed:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn an_app_alive_again_ends_the_wait() {
        let rig = rig(None);
        tokio::time::sleep(Duration::from_secs(5)).await;
        rig.database_down.store(true, Ordering::SeqCst);
        rig.silent();
        tokio::time::sleep(Duration::from_secs(20)).await;
        assert!(rig.health.snapshot().conditions()[0].waiting().is_some());
        *rig.look.lock() = Look::Alive;
        tokio::time::sleep(Duration::from_secs(3)).await;
        let condition = rig.health.snapshot().conditions()[0].clone();
        assert!(condition.waiting().is_none() && condition.failure().is_none());
    }

    /// A fake `/proc` with the app (pid 4242) listening on port 3000 in state `state`.
    fn fake_proc(state: char) -> std::path::PathBuf {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "probity-agent-proc-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("net")).unwrap();
        std::fs::write(
            root.join("net/tcp"),
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 777 1 0 100 0 0 10 0\n",
        )
        .unwrap();
        let pid = root.join("4242");
        std::fs::create_dir_all(pid.join("fd")).unwrap();
        std::os::unix::fs::symlink("socket:[777]", pid.join("fd/3")).unwrap();
        std::fs::write(pid.join("stat"), format!("4242 (python3) {state} 1 4242")).unwrap();
        std::fs::create_dir_all(pid.join("task/4242")).unwrap();
        std::fs::write(
            pid.join("task/4242/stat"),
            format!("4242 (python3) {state} 1"),
        )
        .unwrap();
        std::fs::write(pid.join("task/4242/wchan"), "do_signal_stop").unwrap();
        root
    }

    #[tokio::test(start_paused = true)]
    async fn a_stopped_process_is_a_wedge_even_while_the_database_fails() {
        let proc = fake_proc('T');
        let rig = rig(Some(proc.clone()));
        tokio::time::sleep(Duration::from_secs(5)).await;
        rig.database_down.store(true, Ordering::SeqCst);
        rig.silent();
        let failed = rig.fails_within(Duration::from_secs(30)).await;
        let _ = std::fs::remove_dir_all(&proc);
        let failed = failed.expect("a stopped process fails liveness");
        assert!(failed <= SILENCE + Duration::from_secs(3), "{failed:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_running_process_blocked_on_the_database_waits() {
        let proc = fake_proc('S');
        let rig = rig(Some(proc.clone()));
        tokio::time::sleep(Duration::from_secs(5)).await;
        rig.database_down.store(true, Ordering::SeqCst);
        rig.silent();
        let failed = rig.fails_within(Duration::from_secs(40)).await;
        let _ = std::fs::remove_dir_all(&proc);
        assert_eq!(failed, None);
    }
}
