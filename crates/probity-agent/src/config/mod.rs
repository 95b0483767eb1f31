//! The agent's configuration file: TOML or YAML, the same schema in both.
//!
//! ```toml
//! service = "orders"                 # shown in the contract and the JSON outputs
//!
//! [listen]
//! address = "0.0.0.0:9090"           # probes, gRPC health, /metrics and /contract
//! details = "hidden"                 # "hidden": failing checks named, reasons withheld;
//!                                    # "shown": reasons too (a listener only operators reach)
//!
//! [paths]                            # what the kubelet asks for (defaults shown)
//! liveness = "/livez"
//! readiness = "/readyz"
//! startup = "/startupz"
//!
//! [app]
//! url = "http://127.0.0.1:3000"      # relative URLs below are resolved against it
//! boot_timeout = "60s"               # how long the app may be not listening (booting,
//!                                    # restarting) before liveness counts it as wedged
//!
//! [shutdown]
//! drain_delay = "5s"                 # readiness fails this long before the listener closes
//! in_flight_deadline = "10s"
//!
//! [readiness.app]                    # one table per check, named
//! app = { url = "/health" }          # exactly one kind: app, metrics, tcp, http, postgres,
//! interval = "2s"                    # mysql, redis, rabbitmq, nats, mqtt, dns, disk, jwks
//! timeout = "1s"                     # policy: tier, interval, timeout, jitter, rise, fall,
//!                                    # staleness, fail_open_for, boot_requires_rise,
//!                                    # fallback (a check that serves while this one fails)
//!
//! [readiness.db-pool]
//! metrics = { url = "/metrics", preset = "node_postgres" }
//!
//! [liveness.event-loop]              # internal conditions only: event_loop_lag,
//! event_loop_lag = { url = "/metrics", max = "5s" }   # heartbeat_file, app_liveness
//! ```
//!
//! Every key is known: a key the schema does not have is an error naming it and its line, and
//! so is a dependency check placed under `liveness` (a restart does not fix someone else's
//! outage). The crate README documents every key.

mod entries;
mod key;
pub mod presets;
mod values;

pub use entries::{
    AppLivenessSettings, AppSettings, DiskSettings, DnsSettings, EventLoopLagSettings,
    HeartbeatFileSettings, HttpSettings, JwksSettings, LIVENESS_KINDS, LivenessEntry, LivenessKind,
    MetricsSettings, Missing, MqttSettings, Named, Policy, PostgresSettings, READINESS_KINDS,
    ReadinessEntry, ReadinessKind, TcpSettings, UrlSettings,
};
pub use entries::{GrpcHealthSettings, Margin, TargetSettings, TlsCertificateSettings};
pub use values::{Condition, Dur, Op, Secret, StatusRange, parse_duration};

use probity_contract::file::{ReadError, read_text};
use serde::Deserialize;
use serde::de::{self, Deserializer};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Largest configuration file read: far more than any real one (the bound every probity tool
/// puts on a file it is given).
pub const MAX_FILE_BYTES: u64 = probity_contract::file::MAX_TEXT_BYTES;
/// Most entries in one section.
pub const MAX_ENTRIES: usize = 500;

/// Scrapes in a row a gauge may read one value before it is reported (`stale_after_scrapes`).
pub(crate) const DEFAULT_STALE_AFTER_SCRAPES: u32 = 120;

/// A validated configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The service's name.
    #[serde(default)]
    pub service: Option<String>,
    /// The agent's listener.
    #[serde(default)]
    pub listen: Listen,
    /// The probe paths.
    #[serde(default)]
    pub paths: Paths,
    /// The app the agent stands beside.
    #[serde(default)]
    pub app: Option<App>,
    /// The shutdown sequence.
    #[serde(default)]
    pub shutdown: Shutdown,
    /// Readiness checks, in order.
    #[serde(default)]
    pub readiness: Named<ReadinessEntry>,
    /// Liveness conditions, in order.
    #[serde(default)]
    pub liveness: Named<LivenessEntry>,
    /// The app's request outcomes.
    #[serde(default)]
    pub requests: Option<RequestsSettings>,
}

/// `[requests]`: the app's request outcomes, from its status-labelled request metrics.
///
/// On by default wherever the configuration reads an exposition (a `metrics` check or an
/// `event_loop_lag` condition): the first such URL is read unless `url` names another.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestsSettings {
    /// `false` turns request outcomes off.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// The exposition's URL: absolute, or a path on `app.url` (`/metrics`).
    #[serde(default)]
    pub url: Option<Secret>,
    /// The request counter (default: the usual shapes, first present).
    #[serde(default, deserialize_with = "series_name")]
    pub series: Option<String>,
    /// The label holding the status code (default: `status`, `code`, `status_code`,
    /// `http_response_status_code`).
    #[serde(default)]
    pub status_label: Option<String>,
    /// The sliding window judged (default 10 s).
    #[serde(default)]
    pub window: Option<Dur>,
    /// Time between readings (default 1 s).
    #[serde(default)]
    pub interval: Option<Dur>,
    /// Fewest requests in the window that say anything (default 20).
    #[serde(default)]
    pub min_requests: Option<u64>,
    /// Share of 5xx above which the app is drained though its health says ok (default 0.5).
    #[serde(default, deserialize_with = "share")]
    pub max_error_share: Option<f64>,
    /// Share of 5xx at or below which the app counts as serving, so a failing self-check
    /// degrades to `warn` (default 0.05).
    #[serde(default, deserialize_with = "share")]
    pub serving_error_share: Option<f64>,
}

fn series_name<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    let series = String::deserialize(deserializer)?;
    let valid = !series.is_empty()
        && series
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        && !series.starts_with(|c: char| c.is_ascii_digit());
    if !valid {
        return Err(de::Error::custom(format!(
            "`{series}` is not a metric name"
        )));
    }
    Ok(Some(series))
}

fn share<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<f64>, D::Error> {
    let share = f64::deserialize(deserializer)?;
    if !(0.0..=1.0).contains(&share) {
        return Err(de::Error::custom(format!(
            "`{share}` is not a share: write a number from 0 to 1 (0.5 for half)"
        )));
    }
    Ok(Some(share))
}

/// `[listen]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Listen {
    /// The address to bind (default `0.0.0.0:9090`).
    #[serde(default = "default_address", deserialize_with = "socket_addr")]
    pub address: SocketAddr,
    /// Whether probe bodies show failure reasons.
    #[serde(default)]
    pub details: DetailsSetting,
}

impl Default for Listen {
    fn default() -> Self {
        Listen {
            address: default_address(),
            details: DetailsSetting::Hidden,
        }
    }
}

fn default_address() -> SocketAddr {
    SocketAddr::from(([0, 0, 0, 0], 9090))
}

fn socket_addr<'de, D: Deserializer<'de>>(deserializer: D) -> Result<SocketAddr, D::Error> {
    let text = String::deserialize(deserializer)?;
    text.parse().map_err(|_| {
        de::Error::custom(format!(
            "`{text}` is not an address: write IP:PORT, e.g. 0.0.0.0:9090"
        ))
    })
}

/// Whether probe bodies show failure reasons.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DetailsSetting {
    /// Failing entries are named, their reasons withheld (a public listener).
    #[default]
    Hidden,
    /// Reasons are shown (credentials are always redacted).
    Shown,
}

/// `[paths]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Paths {
    /// Liveness path.
    #[serde(default = "default_liveness", deserialize_with = "probe_path")]
    pub liveness: String,
    /// Readiness path.
    #[serde(default = "default_readiness", deserialize_with = "probe_path")]
    pub readiness: String,
    /// Startup path.
    #[serde(default = "default_startup", deserialize_with = "probe_path")]
    pub startup: String,
}

impl Default for Paths {
    fn default() -> Self {
        Paths {
            liveness: default_liveness(),
            readiness: default_readiness(),
            startup: default_startup(),
        }
    }
}

fn default_liveness() -> String {
    "/livez".into()
}
fn default_readiness() -> String {
    "/readyz".into()
}
fn default_startup() -> String {
    "/startupz".into()
}

/// Paths the agent serves itself and a probe path may not take.
pub const RESERVED_PATHS: &[&str] = &["/metrics", "/contract", "/agent/livez"];

fn probe_path<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let path = String::deserialize(deserializer)?;
    let valid = path.starts_with('/')
        && path.len() > 1
        && !path.ends_with('/')
        && path.len() <= 200
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '-' | '_' | '.'))
        && !path.contains("//");
    if !valid {
        return Err(de::Error::custom(format!(
            "`{path}` is not a probe path: write an absolute path such as /internal/ready \
             (letters, digits, - _ . and /, no trailing /)"
        )));
    }
    if RESERVED_PATHS.contains(&path.as_str()) || path.starts_with("/grpc.health") {
        return Err(de::Error::custom(format!(
            "`{path}` is served by the agent itself; choose another probe path"
        )));
    }
    Ok(path)
}

/// `[app]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct App {
    /// The app's base URL.
    #[serde(deserialize_with = "base_url")]
    pub url: reqwest::Url,
    /// How long the app may be not listening before liveness counts it as wedged.
    #[serde(default)]
    pub boot_timeout: Option<Dur>,
}

fn base_url<'de, D: Deserializer<'de>>(deserializer: D) -> Result<reqwest::Url, D::Error> {
    let text = String::deserialize(deserializer)?;
    let url = reqwest::Url::parse(&text).map_err(|error| {
        de::Error::custom(format!(
            "`{}` is not a URL ({error}): write e.g. http://127.0.0.1:3000",
            crate::adapter::redact(&text)
        ))
    })?;
    if url.scheme() != "http" {
        return Err(de::Error::custom(format!(
            "`{}`: the app is reached over http:// on the pod's loopback",
            crate::adapter::redact(&text)
        )));
    }
    Ok(url)
}

/// `[shutdown]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shutdown {
    /// Time readiness fails before the listener closes.
    #[serde(default)]
    pub drain_delay: Option<Dur>,
    /// Time in-flight requests may run after that.
    #[serde(default)]
    pub in_flight_deadline: Option<Dur>,
}

/// The file formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// TOML 1.0.
    Toml,
    /// YAML 1.2.
    Yaml,
}

impl Format {
    /// The format a file's extension names.
    pub fn from_path(path: &Path) -> Option<Format> {
        match path.extension().and_then(|ext| ext.to_str()) {
            Some("toml") => Some(Format::Toml),
            Some("yaml" | "yml") => Some(Format::Yaml),
            _ => None,
        }
    }
}

/// Why a configuration could not be read. The message names the file and, when the parser
/// knows it, the line and column.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The path is not a regular file (a directory, a FIFO, a device, a socket).
    #[error("{} is {what}, not a regular file: give the path of a configuration file", file.display())]
    NotAFile {
        /// The path.
        file: PathBuf,
        /// What it is.
        what: &'static str,
    },
    /// The file is larger than [`MAX_FILE_BYTES`].
    #[error("{} is larger than {} KiB: not a configuration file", file.display(), MAX_FILE_BYTES / 1024)]
    TooLarge {
        /// The file.
        file: PathBuf,
    },
    /// The extension names no known format.
    #[error("{}: unknown file type; a configuration ends in .toml, .yaml or .yml", file.display())]
    UnknownFormat {
        /// The file.
        file: PathBuf,
    },
    /// The text is not valid for the schema.
    #[error("{}{}: {message}", file.display(), position(*line, *column))]
    Invalid {
        /// The file.
        file: PathBuf,
        /// 1-based line, when known.
        line: Option<usize>,
        /// 1-based column, when known.
        column: Option<usize>,
        /// What is wrong.
        message: String,
    },
}

fn position(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(line), Some(column)) => format!(":{line}:{column}"),
        (Some(line), None) => format!(":{line}"),
        _ => String::new(),
    }
}

impl ConfigError {
    /// The line the error is about, when known.
    pub fn line(&self) -> Option<usize> {
        match self {
            ConfigError::Invalid { line, .. } => *line,
            _ => None,
        }
    }
}

impl Config {
    /// Reads a configuration file (TOML or YAML, by extension).
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let format = Format::from_path(path).ok_or_else(|| ConfigError::UnknownFormat {
            file: path.to_owned(),
        })?;
        // A FIFO or a device is refused before it is opened: the open would block, or the
        // read never end.
        let text = read_text(path, MAX_FILE_BYTES).map_err(|error| match error {
            ReadError::NotAFile(kind) => ConfigError::NotAFile {
                file: path.to_owned(),
                what: kind.as_str(),
            },
            ReadError::TooLarge { .. } => ConfigError::TooLarge {
                file: path.to_owned(),
            },
            ReadError::NotText { .. } => ConfigError::Invalid {
                file: path.to_owned(),
                line: None,
                column: None,
                message: error.to_string(),
            },
            ReadError::Io(source) => ConfigError::Read {
                file: path.to_owned(),
                source,
            },
        })?;
        Config::parse(&text, format, path)
    }

    /// Parses configuration text; `file` names the source in errors.
    pub fn parse(text: &str, format: Format, file: &Path) -> Result<Config, ConfigError> {
        let (parsed, error_at) = key::with_format(format, || Config::parse_as(text, format, file));
        let config = parsed.map_err(|mut error| {
            // An error raised at a key: the key's own position, not the parser's.
            if let (Some(at), ConfigError::Invalid { line, column, .. }) = (error_at, &mut error) {
                (*line, *column) = match at {
                    key::At::LineColumn(at_line, at_column) => (Some(at_line), Some(at_column)),
                    key::At::Offset(offset) => line_column(text, offset),
                };
            }
            error
        })?;
        config.check(text, file)?;
        Ok(config)
    }

    fn parse_as(text: &str, format: Format, file: &Path) -> Result<Config, ConfigError> {
        Ok(match format {
            Format::Toml => toml::from_str(text).map_err(|error| {
                let (line, column) = match error.span() {
                    Some(span) => line_column(text, span.start),
                    None => (None, None),
                };
                ConfigError::Invalid {
                    file: file.to_owned(),
                    line,
                    column,
                    message: error.message().trim_end().to_owned(),
                }
            })?,
            Format::Yaml => {
                if text.trim().is_empty() {
                    return serde_saphyr::from_str("{}").map_err(|_| ConfigError::Invalid {
                        file: file.to_owned(),
                        line: None,
                        column: None,
                        message: "empty configuration".into(),
                    });
                }
                serde_saphyr::from_str(text).map_err(|error| {
                    let location = error.location();
                    let message = yaml_message(&error);
                    ConfigError::Invalid {
                        file: file.to_owned(),
                        line: location.map(|at| at.line() as usize),
                        column: location.map(|at| at.column() as usize),
                        message,
                    }
                })?
            }
        })
    }

    /// Rules that span entries: distinct paths, relative URLs need `[app]`.
    fn check(&self, text: &str, file: &Path) -> Result<(), ConfigError> {
        let invalid = |needle: &str, message: String| ConfigError::Invalid {
            file: file.to_owned(),
            line: find_line(text, needle),
            column: None,
            message,
        };
        let paths = [
            ("liveness", &self.paths.liveness),
            ("readiness", &self.paths.readiness),
            ("startup", &self.paths.startup),
        ];
        for (index, (probe, path)) in paths.iter().enumerate() {
            for (other, other_path) in &paths[index + 1..] {
                if path == other_path
                    || other_path.starts_with(&format!("{path}/"))
                    || path.starts_with(&format!("{other_path}/"))
                {
                    let line = text
                        .lines()
                        .position(|line| {
                            let line = line.trim_start();
                            line.starts_with(other) && line.contains(other_path.as_str())
                        })
                        .map(|index| index + 1);
                    return Err(ConfigError::Invalid {
                        file: file.to_owned(),
                        line,
                        column: None,
                        message: format!(
                            "paths.{probe} (`{path}`) and paths.{other} (`{other_path}`) \
                             overlap: each probe needs a path of its own"
                        ),
                    });
                }
            }
        }
        if self.app.is_none() {
            let relative = self
                .readiness
                .0
                .iter()
                .filter_map(|(name, entry)| match &entry.kind {
                    ReadinessKind::App(app) => Some((name, &app.url)),
                    ReadinessKind::Metrics(metrics) => Some((name, &metrics.url)),
                    _ => None,
                })
                .chain(
                    self.liveness
                        .0
                        .iter()
                        .filter_map(|(name, entry)| match &entry.kind {
                            LivenessKind::EventLoopLag(lag) => Some((name, &lag.url)),
                            LivenessKind::AppLiveness(live) => Some((name, &live.url)),
                            LivenessKind::HeartbeatFile(_) => None,
                        }),
                )
                .find(|(_, url)| url.0.starts_with('/'));
            if let Some((name, url)) = relative {
                return Err(invalid(
                    name,
                    format!(
                        "`{name}`: the relative URL `{}` needs [app] url = \"http://…\" to \
                         resolve against",
                        url.0
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The line where the entry `name` is declared, for errors found after parsing.
    pub fn line_of(text: &str, name: &str) -> Option<usize> {
        find_line(text, name)
    }
}

/// The message of a YAML error without serde-saphyr's own location prefix and snippet.
fn yaml_message(error: &serde_saphyr::Error) -> String {
    let text = error.without_snippet().to_string();
    let first = text.lines().next().unwrap_or_default().trim();
    // serde-saphyr appends " at line N column M" to the message itself.
    let first = match first.rfind(" at line ") {
        Some(index) => &first[..index],
        None => first,
    };
    first.trim_end_matches('.').to_owned()
}

fn line_column(text: &str, offset: usize) -> (Option<usize>, Option<usize>) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rfind('\n')
        .map_or(before.chars().count(), |newline| {
            before[newline + 1..].chars().count()
        })
        + 1;
    (Some(line), Some(column))
}

/// The first line declaring `needle` as a key or table name (`[readiness.db]`, `db:`,
/// `db = `) or holding it as a quoted value.
fn find_line(text: &str, needle: &str) -> Option<usize> {
    text.lines()
        .position(|line| {
            let trimmed = line.trim_start();
            if trimmed.starts_with('#') {
                return false;
            }
            trimmed.contains(&format!(".{needle}]"))
                || trimmed.starts_with(&format!("{needle}:"))
                || trimmed.starts_with(&format!("{needle} ="))
                || trimmed.starts_with(&format!("\"{needle}\""))
                || trimmed.contains(&format!("\"{needle}\""))
        })
        .map(|index| index + 1)
}

#[cfg(test)]
mod tests;
