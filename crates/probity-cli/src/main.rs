//! The `probity` command line: a thin layer over the probity libraries.
//!
//! Exit codes: 0 success (and, for `lint`, no findings at or above `--fail-on`), 1 findings,
//! 2 an error (bad input, unreadable file, bad flags).

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod agent;
mod drill;
mod drill_file;
mod inspect;
mod lint;
mod logging;
mod simulate;

/// Health checks that tell the truth: lint probe wiring, simulate incidents, drill a real fleet.
#[derive(Debug, Parser)]
#[command(name = "probity", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,

    /// How log lines are written on standard error: `text` for a person, `json` (one JSON
    /// object a line) for a log shipper. RUST_LOG chooses what is logged (default: `info` for
    /// `agent` and `drill`, `warn` otherwise), e.g. RUST_LOG=probity=debug.
    #[arg(long, global = true, value_enum, env = "PROBITY_LOG_FORMAT", default_value_t = logging::LogFormat::Text)]
    log_format: logging::LogFormat,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check Kubernetes manifests for probe wiring that causes outages.
    Lint(lint::Args),
    /// Replay incidents against probe configurations in a simulated fleet.
    #[command(
        after_help = "On a terminal, a run that takes longer than a second shows its progress on \
stderr (never with --json); PROBITY_PROGRESS_AFTER (a duration, e.g. 0s or 10s) changes the \
delay."
    )]
    Simulate(simulate::Args),
    /// Inject real faults into a local fleet of any service (a drill file) behind HAProxy.
    Drill(Box<drill::Args>),
    /// Serve honest probes for a service in any language, as a sidecar.
    Agent(agent::Args),
    /// Judge a running service's health endpoints from outside.
    Inspect(inspect::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let default_level = match cli.command {
        Command::Agent(_) | Command::Drill(_) => "info",
        _ => "warn",
    };
    if let Err(error) = logging::install(cli.log_format, default_level) {
        eprintln!("error: {error:#}");
        return ExitCode::from(2);
    }
    let result = match cli.command {
        Command::Lint(args) => lint::run(args),
        Command::Simulate(args) => simulate::run(args),
        Command::Drill(args) => drill::run(*args),
        Command::Agent(args) => agent::run(args),
        Command::Inspect(args) => inspect::run(args),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {}", shown_lines(&format!("{error:#}")));
            ExitCode::from(2)
        }
    }
}

/// An error's text, each line with its control characters written out: an error may quote
/// input (a name from a file, a log line of a service), which must never drive the terminal.
fn shown_lines(text: &str) -> String {
    text.lines()
        .map(probity_contract::text::escape_control)
        .collect::<Vec<_>>()
        .join("\n")
}
