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
    after_help = "A URL with a path is one endpoint (http://127.0.0.1:8080/readyz); a bare origin \
                  (http://127.0.0.1:8080) is every conventional health path that answers.\n\
                  Exit status: 0 no finding at warning or above, 1 findings, 2 error."
)]
pub(crate) struct Args {
    /// Endpoints or origins to inspect.
    #[arg(value_name = "URL", required = true)]
    urls: Vec<String>,

    /// Requests per endpoint (sent one after another).
    #[arg(long, value_name = "N", default_value_t = 20)]
    requests: usize,

    /// Longest one request may take before it counts as a timeout.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = humantime_duration)]
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

fn humantime_duration(text: &str) -> Result<Duration, String> {
    let duration = probity_agent::config::parse_duration(text)?;
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
    let report = runtime.block_on(async {
        let urls = inspect::endpoints(&args.urls, args.timeout).await?;
        inspect::inspect(&urls, &options).await
    })?;
    let mut stdout = std::io::stdout().lock();
    if args.json {
        write!(stdout, "{}", inspect::render_json(&report))?;
    } else {
        write!(stdout, "{}", inspect::render_human(&report))?;
    }
    stdout.flush()?;
    Ok(if report.has_findings() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
