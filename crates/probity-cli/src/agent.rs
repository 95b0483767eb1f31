//! `probity agent`: a thin layer over `probity-agent`.

use anyhow::Context;
use probity_agent::Agent;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `probity agent`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Serves /livez, /readyz, /startupz (paths configurable), grpc.health.v1, /metrics, \
                  /contract and /agent/livez on the configured listener.\n\
                  Exit status: 0 after a clean shutdown (SIGTERM, SIGINT), 2 on a bad configuration."
)]
pub(crate) struct Args {
    /// The configuration file (.toml, .yaml or .yml).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,

    /// Listen here instead of the configured address (e.g. 127.0.0.1:0 for a free port; the
    /// bound address is printed on standard output).
    #[arg(long, value_name = "ADDR")]
    listen: Option<std::net::SocketAddr>,

    /// Validate the configuration, print what each probe checks (the contract, JSON) and exit.
    #[arg(long)]
    print_contract: bool,

    /// Validate the configuration and exit.
    #[arg(long)]
    check: bool,
}

/// Runs `probity agent`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(serve(args))
}

async fn serve(args: Args) -> anyhow::Result<ExitCode> {
    // Building the checks spawns nothing, but some clients need a runtime to exist.
    let agent = Agent::load(&args.config)?;
    if args.print_contract {
        println!("{}", agent.contract().to_json_pretty());
        return Ok(ExitCode::SUCCESS);
    }
    if args.check {
        println!("{}: valid", args.config.display());
        return Ok(ExitCode::SUCCESS);
    }
    let address = args.listen.unwrap_or(agent.listen_address());
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("cannot listen on {address}"))?;
    let bound = listener
        .local_addr()
        .context("cannot read the bound address")?;
    println!("listening on {bound}");
    eprintln!(
        "probity agent: serving {} on {bound}",
        args.config.display()
    );
    let report = agent
        .serve(listener, probity_agent::install_metrics())
        .await
        .context("serving failed")?;
    eprintln!(
        "probity agent: drained for {:?}, in-flight requests {}",
        report.drained_for(),
        if report.within_deadline {
            "finished"
        } else {
            "cut at the deadline"
        }
    );
    Ok(ExitCode::SUCCESS)
}
