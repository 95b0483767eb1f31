//! The agent: a core [`Health`] built from the configuration, the observers that feed its
//! liveness, and the background tasks its checks need.

use crate::adapter::APP_STARTED_STEP;
use crate::checks::{self, Context, Task};
use crate::config::ReadinessKind;
use crate::config::{Config, ConfigError, DetailsSetting};
use crate::liveness::{self, Evidence, Observer, StartupGate};
use crate::outcomes::{Outcomes, Resolved};
use crate::scrape::Scraper;
use crate::unmoving::Unmoving;
use probity::{Contract, Health, ProbePaths};
use probity_axum::Details;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

/// Why an agent could not be built from a configuration.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The file could not be read or parsed.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// An entry is valid for the schema but cannot be built (a URL that does not parse, a
    /// timeout not below the interval).
    #[error("{}{}: {section} `{name}`: {message}", file.display(), line.map(|line| format!(":{line}")).unwrap_or_default())]
    Entry {
        /// The configuration file.
        file: std::path::PathBuf,
        /// The line of the entry, when found.
        line: Option<usize>,
        /// `readiness check` or `liveness condition`.
        section: &'static str,
        /// The entry's name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The `[paths]` cannot be served together (e.g. one under another).
    #[error("{}: [paths]: {message}", file.display())]
    Paths {
        /// The configuration file.
        file: std::path::PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// A configured agent, ready to start.
pub struct Agent {
    pub(crate) health: Health,
    pub(crate) details: Details,
    pub(crate) listen: SocketAddr,
    /// The gauges read that never move, for the status page.
    pub(crate) unmoving: std::sync::Arc<Unmoving>,
    tasks: Vec<Task>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("health", &self.health)
            .field("listen", &self.listen)
            .field("tasks", &self.tasks.len())
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// Reads a configuration file and builds the agent it describes.
    pub fn load(path: &Path) -> Result<Agent, AgentError> {
        let config = Config::load(path)?;
        let text = std::fs::read_to_string(path).unwrap_or_default();
        Agent::build(&config).map_err(|error| match error {
            BuildFailure::Entry {
                section,
                name,
                message,
            } => AgentError::Entry {
                file: path.to_owned(),
                line: Config::line_of(&text, &name),
                section,
                name,
                message,
            },
            BuildFailure::Core(error) => AgentError::Entry {
                file: path.to_owned(),
                line: Config::line_of(&text, error.check()),
                section: "check",
                name: error.check().to_owned(),
                message: error.to_string(),
            },
            BuildFailure::Paths(message) => AgentError::Paths {
                file: path.to_owned(),
                message,
            },
            BuildFailure::Requests(message) => AgentError::Entry {
                file: path.to_owned(),
                line: Config::line_of(&text, "requests"),
                section: "section",
                name: "requests".to_owned(),
                message,
            },
        })
    }

    /// Builds the agent a configuration describes. Nothing runs until [`Agent::serve`].
    pub fn build(config: &Config) -> Result<Agent, BuildFailure> {
        let service = config.service.clone().unwrap_or_else(|| "app".to_owned());
        let mut context = Context {
            app_url: config.app.as_ref().map(|app| &app.url),
            client: crate::fetch::client(),
            scrapers: HashMap::new(),
            tasks: Vec::new(),
            service: service.clone(),
            outcomes: None,
            unmoving: Unmoving::new(None),
        };
        let requests = request_outcomes(config, &mut context).map_err(BuildFailure::Requests)?;
        // Activity is read from the request counters, once they are known.
        context.unmoving = Unmoving::new(context.outcomes.clone());
        let paths = ProbePaths::new(
            config.paths.liveness.clone(),
            config.paths.readiness.clone(),
            config.paths.startup.clone(),
        )
        .map_err(|error| BuildFailure::Paths(error.to_string()))?;
        let mut builder = Health::builder().service(service).paths(paths);
        for (name, entry) in &config.readiness.0 {
            let spec = checks::build(name, entry, &mut context).map_err(|message| {
                BuildFailure::Entry {
                    section: "readiness check",
                    name: name.clone(),
                    message,
                }
            })?;
            builder = builder.check(spec);
        }
        let boot_timeout = config
            .app
            .as_ref()
            .and_then(|app| app.boot_timeout)
            .map_or(liveness::DEFAULT_BOOT_TIMEOUT, |dur| dur.0);
        if !config.liveness.0.is_empty() {
            builder = builder
                .startup_step(APP_STARTED_STEP)
                .expected_boot(boot_timeout);
        }
        // Each liveness condition is a heartbeat the agent's observer beats while the app looks
        // alive.
        for (name, entry) in &config.liveness.0 {
            builder = builder.heartbeat(name.clone(), liveness::bound(entry));
        }
        if let Some(delay) = config.shutdown.drain_delay {
            builder = builder.drain_delay(delay.0);
        }
        if let Some(deadline) = config.shutdown.in_flight_deadline {
            builder = builder.in_flight_deadline(deadline.0);
        }
        let health = builder.build().map_err(BuildFailure::Core)?;
        if let Some((outcomes, scraper)) = requests {
            let reporters = config
                .readiness
                .0
                .iter()
                .filter(|(_, entry)| {
                    matches!(entry.kind, ReadinessKind::App(_))
                        && entry.policy.tier.unwrap_or(probity::Tier::Hard) == probity::Tier::Hard
                })
                .filter_map(|(name, _)| health.reporter(name).ok())
                .collect();
            context.tasks.push(Box::pin(crate::outcomes::run(
                outcomes,
                scraper,
                reporters,
                crate::outcomes::PASSIVE_RUN,
            )));
        }

        let gate = StartupGate::new(health.clone(), config.liveness.0.len());
        // What excuses the app's silence as a wait: its hard dependency checks, and its own
        // readiness answering that it fails.
        let mut dependencies = Vec::new();
        let mut app_readiness = Vec::new();
        for (name, entry) in &config.readiness.0 {
            if entry.policy.tier.unwrap_or(probity::Tier::Hard) != probity::Tier::Hard {
                continue;
            }
            match entry.kind {
                ReadinessKind::App(_) => app_readiness.push(name.clone()),
                // The app's own figures, read through the app: silent when it is.
                ReadinessKind::Metrics(_) => {}
                _ => dependencies.push(name.clone()),
            }
        }
        let evidence =
            std::sync::Arc::new(Evidence::new(health.clone(), dependencies, app_readiness));
        for (name, entry) in &config.liveness.0 {
            let entry_failure = |message: String| BuildFailure::Entry {
                section: "liveness condition",
                name: name.clone(),
                message,
            };
            let heartbeat = health
                .heartbeat(name)
                .map_err(|error| entry_failure(error.to_string()))?;
            let observer = Observer::new(
                entry,
                &mut context,
                heartbeat,
                gate.clone(),
                boot_timeout,
                evidence.clone(),
            )
            .map_err(entry_failure)?;
            context.tasks.push(observer.run());
        }
        Ok(Agent {
            health,
            details: match config.listen.details {
                DetailsSetting::Hidden => Details::Public,
                DetailsSetting::Shown => Details::Admin,
            },
            listen: config.listen.address,
            unmoving: context.unmoving,
            tasks: context.tasks,
        })
    }

    /// The core registry the agent serves.
    pub fn health(&self) -> &Health {
        &self.health
    }

    /// The address the configuration asks to listen on.
    pub fn listen_address(&self) -> SocketAddr {
        self.listen
    }

    /// What each probe checks, as the agent serves it (paths and liveness conditions included).
    pub fn contract(&self) -> Contract {
        self.health.contract()
    }

    /// Starts the pollers and observers, and serves on `listener` until the shutdown sequence
    /// (SIGTERM or SIGINT: readiness fails, the drain delay passes, in-flight requests finish).
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        metrics: Option<metrics_exporter_prometheus::PrometheusHandle>,
    ) -> std::io::Result<probity_axum::ShutdownReport> {
        self.health
            .start()
            .map_err(|error| std::io::Error::other(error.to_string()))?;
        self.health.shutdown_on_signals();
        let router =
            crate::serve::router(&self.health, self.details, self.unmoving.clone(), metrics);
        let mut handles = Vec::new();
        for task in self.tasks {
            handles.push(tokio::spawn(task));
        }
        let report = probity_axum::serve(listener, router, &self.health).await;
        for handle in handles {
            handle.abort();
        }
        self.health.stop();
        report
    }
}

/// The outcomes read and the scraper that reads them.
type Reading = (Arc<Outcomes>, Arc<Scraper>);

/// The request outcomes a configuration reads, and the scraper that reads them: on where
/// `[requests]` says so, else wherever the configuration reads an exposition (the first URL).
fn request_outcomes(
    config: &crate::config::Config,
    context: &mut crate::checks::Context<'_>,
) -> Result<Option<Reading>, String> {
    use crate::config::{LivenessKind, ReadinessKind};
    let settings = config.requests.as_ref();
    if settings.and_then(|s| s.enabled) == Some(false) {
        return Ok(None);
    }
    let expositions = config
        .readiness
        .0
        .iter()
        .filter_map(|(_, entry)| match &entry.kind {
            ReadinessKind::Metrics(metrics) => Some(&metrics.url),
            _ => None,
        })
        .chain(
            config
                .liveness
                .0
                .iter()
                .filter_map(|(_, entry)| match &entry.kind {
                    LivenessKind::EventLoopLag(lag) => Some(&lag.url),
                    _ => None,
                }),
        );
    let url = match settings.and_then(|s| s.url.as_ref()) {
        Some(url) => context.url(url)?,
        None => match expositions.clone().next() {
            Some(url) => context.url(url)?,
            None if settings.is_some() => {
                return Err("no exposition to read: give `url` (e.g. \"/metrics\")".to_owned());
            }
            None => return Ok(None),
        },
    };
    // The agent's own requests to the app are not the app's traffic.
    let mut own = Vec::new();
    for (_, entry) in &config.readiness.0 {
        let url = match &entry.kind {
            ReadinessKind::App(app) => &app.url,
            ReadinessKind::Metrics(metrics) => &metrics.url,
            _ => continue,
        };
        if let Ok(url) = context.url(url) {
            own.push(url.path().to_owned());
        }
    }
    for (_, entry) in &config.liveness.0 {
        let url = match &entry.kind {
            LivenessKind::EventLoopLag(lag) => &lag.url,
            LivenessKind::AppLiveness(live) => &live.url,
            LivenessKind::HeartbeatFile(_) => continue,
        };
        if let Ok(url) = context.url(url) {
            own.push(url.path().to_owned());
        }
    }
    own.push(url.path().to_owned());
    let resolved = Resolved::new(settings);
    if resolved.serving_error_share > resolved.max_error_share {
        return Err(format!(
            "serving_error_share ({}) is above max_error_share ({}): an app cannot be serving \
             and failing at once",
            resolved.serving_error_share, resolved.max_error_share
        ));
    }
    if resolved.window < resolved.interval * 2 {
        return Err(format!(
            "window ({}) must hold at least two readings (interval {})",
            probity_contract::duration::format(resolved.window),
            probity_contract::duration::format(resolved.interval)
        ));
    }
    let scraper = context.scraper(url);
    let outcomes = Arc::new(Outcomes::new(resolved, own));
    outcomes.register(&scraper);
    context.outcomes = Some(outcomes.clone());
    Ok(Some((outcomes, scraper)))
}

/// Why [`Agent::build`] failed.
#[derive(Debug, thiserror::Error)]
pub enum BuildFailure {
    /// An entry could not be built.
    #[error("{section} `{name}`: {message}")]
    Entry {
        /// `readiness check` or `liveness condition`.
        section: &'static str,
        /// The entry's name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The core refused the registry.
    #[error(transparent)]
    Core(probity::BuildError),
    /// The probe paths cannot be served together.
    #[error("{0}")]
    Paths(String),
    /// `[requests]` cannot be read as configured.
    #[error("[requests]: {0}")]
    Requests(String),
}
