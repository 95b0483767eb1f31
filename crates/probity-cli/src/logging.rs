//! The tracing subscriber every subcommand installs: `RUST_LOG` chooses what is logged, and
//! `--log-format` (`PROBITY_LOG_FORMAT`) how — text for a person, JSON lines for a log
//! shipper. Lines go to standard error; standard output stays the command's result.

use anyhow::Context;
use tracing_subscriber::EnvFilter;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// `2026-01-01T00:00:00Z  WARN probity::agent: no sign of life condition=… seen=…`.
    Text,
    /// One JSON object a line: `timestamp`, `level`, `target`, `fields` (`message` and every
    /// field of the event).
    Json,
}

/// Installs the subscriber; `default_level` applies when `RUST_LOG` is unset.
pub(crate) fn install(format: LogFormat, default_level: &str) -> anyhow::Result<()> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.trim().is_empty() => EnvFilter::try_new(&directives)
            .with_context(|| {
                format!("RUST_LOG={directives:?} is not a filter (e.g. info, probity=debug)")
            })?,
        _ => EnvFilter::new(default_level),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let installed = match format {
        LogFormat::Text => builder.with_ansi(false).try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(false)
            .with_current_span(false)
            .try_init(),
    };
    installed.map_err(|error| anyhow::anyhow!("cannot install the log subscriber: {error}"))
}
