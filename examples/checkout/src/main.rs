//! The `checkout` binary. Exit codes: 0 after a clean shutdown, 1 when it cannot start or
//! serve, 2 for bad flags.

use checkout::config::{Args, Config};
use checkout::run::{Service, run};
use clap::Parser;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    let args = Args::parse();
    let print_contract = args.print_contract;
    let config = match Config::from_args(args) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("checkout: error: {error:#}");
            return ExitCode::from(2);
        }
    };
    let filter = EnvFilter::try_from_env("CHECKOUT_LOG")
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,h2=warn,hyper=warn,tower_http=info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("checkout-worker")
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("checkout: error: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };

    let outcome = if print_contract {
        runtime.block_on(async {
            let service = Service::build(&config)?;
            let contract = service.health.contract().to_json_pretty();
            // A closed pipe (`checkout --print-contract | head`) is the reader's choice, not
            // an error worth a panic.
            let mut stdout = std::io::stdout().lock();
            match writeln!(stdout, "{contract}") {
                Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => {
                    Err(anyhow::anyhow!("cannot write the contract: {error}"))
                }
                _ => Ok(()),
            }
        })
    } else {
        match metrics_exporter_prometheus::PrometheusBuilder::new().install_recorder() {
            Ok(metrics) => {
                probity::metrics::bind_probe_counters();
                runtime.block_on(run(config, metrics))
            }
            Err(error) => Err(anyhow::anyhow!(
                "cannot install the metrics recorder: {error}"
            )),
        }
    };
    // Connection tasks abandoned at the in-flight deadline must not hold the exit.
    runtime.shutdown_timeout(Duration::from_secs(1));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("checkout: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
