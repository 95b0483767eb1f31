//! `probity inspect`: a thin layer over `probity_agent::inspect`.

use anyhow::Context;
use probity_agent::inspect::{self, Options};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `probity inspect`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "A URL with a path is one endpoint (http://127.0.0.1:8080/readyz); a URL whose \
                  path ends in / (http://127.0.0.1:8080, http://127.0.0.1:1337/parse/) is a base: \
                  the health paths of the common frameworks under it are tried once each \
                  (/healthz, /livez, /readyz, /health, /actuator/health, /q/health, /ping, \
                  /status, …), and each that answers other than 404 or a catch-all is inspected.\n\
                  Exit status: 0 no finding at warning or above, 1 findings, 2 error (bad input, \
                  or an endpoint that never answered: refused, timed out, TLS mismatch, headers \
                  too large)."
)]
pub(crate) struct Args {
    /// Endpoints or origins to inspect.
    #[arg(value_name = "URL", required = true)]
    urls: Vec<String>,

    /// Requests per endpoint (sent one after another).
    #[arg(long, value_name = "N", default_value_t = 20)]
    requests: usize,

    /// Longest one request may take before it counts as a timeout.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = request_timeout)]
    timeout: Duration,

    /// A Kubernetes manifest whose probes call these endpoints.
    #[arg(long, value_name = "FILE")]
    manifest: Option<PathBuf>,

    /// Where the service's contract is, when not at its /contract.
    #[arg(long, value_name = "URL")]
    contract: Option<String>,

    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

fn request_timeout(text: &str) -> Result<Duration, String> {
    let duration = probity_contract::duration::parse(text).map_err(|error| error.to_string())?;
    if duration.is_zero() || duration > Duration::from_secs(60) {
        return Err(format!("`{text}`: between 1ms and 60s"));
    }
    Ok(duration)
}

/// Runs `probity inspect`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let probes = match &args.manifest {
        Some(path) => inspect::read_manifest(path)?,
        None => Vec::new(),
    };
    let options = Options {
        requests: args.requests,
        timeout: args.timeout,
        contract_url: args.contract.clone(),
        probes,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    // A URL given on the command line may hold control characters: the error shows them
    // written out.
    let report = runtime
        .block_on(inspect::inspect(&args.urls, &options))
        .map_err(|error| {
            anyhow::anyhow!(
                "{}",
                probity_contract::text::escape_control(&error.to_string())
            )
        })?;
    let mut stdout = std::io::stdout().lock();
    if args.json {
        write!(stdout, "{}", inspect::render_json(&report))?;
    } else {
        write!(stdout, "{}", inspect::render_human(&report))?;
    }
    stdout.flush()?;
    let unanswered = report.unanswered();
    if !unanswered.is_empty() {
        anyhow::bail!(
            "{}",
            probity_contract::text::escape_control(&unanswered.join("\n  "))
        );
    }
    Ok(if report.has_findings() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
