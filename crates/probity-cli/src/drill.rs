//! `probity drill`: real faults against a real local fleet behind a real HAProxy.

use anyhow::{Context, bail};
use probity_drill::haproxy::CheckTiming;
use probity_drill::kubelet::{ProbeSpec, Probes};
use probity_drill::{DrillConfig, DrillKind};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Arguments of `probity drill`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Drills: pool (exhaust one instance's connection pool), outage (cut the \
shared database off; needs --database-url), stall (block one instance's runtime), slow-boot \
(boot longer than the liveness window). Durations take ms or s suffixes (250ms, 2s); a bare \
number is seconds."
)]
pub(crate) struct Args {
    /// Instances in the fleet.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=16))]
    instances: u32,
    /// A shared PostgreSQL for the fleet (each instance uses its own SQLite without it).
    #[arg(long, value_name = "URL")]
    database_url: Option<String>,
    /// Drills to run, comma-separated, in order.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "pool,outage,stall,slow-boot"
    )]
    drills: Vec<String>,
    /// The checkout binary (default: next to this binary, then target/release, target/debug).
    #[arg(long, value_name = "PATH")]
    checkout: Option<PathBuf>,
    /// An extra argument for every checkout instance (repeatable).
    #[arg(long = "checkout-arg", value_name = "ARG", allow_hyphen_values = true)]
    checkout_args: Vec<String>,
    /// The haproxy binary.
    #[arg(long, value_name = "PATH", default_value = "haproxy")]
    haproxy: PathBuf,
    /// HAProxy check interval while a server is up.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    inter: Duration,
    /// HAProxy check interval while a server changes state.
    #[arg(long, default_value = "250ms", value_parser = parse_duration)]
    fastinter: Duration,
    /// HAProxy check interval while a server is down.
    #[arg(long, default_value = "250ms", value_parser = parse_duration)]
    downinter: Duration,
    /// HAProxy: consecutive passing checks to mark a server up.
    #[arg(long, default_value_t = 2)]
    rise: u32,
    /// HAProxy: consecutive failing checks to mark a server down.
    #[arg(long, default_value_t = 1)]
    fall: u32,
    /// Liveness probe periodSeconds.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    liveness_period: Duration,
    /// Liveness probe timeoutSeconds.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    liveness_timeout: Duration,
    /// Liveness probe failureThreshold.
    #[arg(long, default_value_t = 3)]
    liveness_failure_threshold: u32,
    /// Startup probe periodSeconds.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    startup_period: Duration,
    /// Startup probe failureThreshold.
    #[arg(long, default_value_t = 30)]
    startup_failure_threshold: u32,
    /// Requests per second through HAProxy.
    #[arg(long, default_value_t = 100)]
    rate: u32,
    /// Concurrent load workers.
    #[arg(long, default_value_t = 8)]
    concurrency: u32,
    /// Each instance's pool size (the leak takes all of it).
    #[arg(long, default_value_t = 5)]
    pool_size: u32,
    /// How long the database stays cut off.
    #[arg(long, default_value = "40s", value_parser = parse_duration)]
    outage: Duration,
    /// How long the runtime stays blocked.
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    stall: Duration,
    /// How long the slow boot takes.
    #[arg(long, default_value = "12s", value_parser = parse_duration)]
    boot_delay: Duration,
    /// Keep the work folder (configuration, logs) after the run.
    #[arg(long)]
    keep_work_dir: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// Parses `250ms`, `2s`, `1.5s` or a bare number of seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, scale) = if let Some(ms) = text.strip_suffix("ms") {
        (ms, 0.001)
    } else if let Some(s) = text.strip_suffix('s') {
        (s, 1.0)
    } else if let Some(m) = text.strip_suffix('m') {
        (m, 60.0)
    } else {
        (text, 1.0)
    };
    match number.trim().parse::<f64>() {
        Ok(value) if value.is_finite() && value >= 0.0 && value * scale < 86_400.0 => {
            Ok(Duration::from_secs_f64(value * scale))
        }
        _ => Err(format!(
            "`{text}` is not a duration (expected e.g. 250ms, 2s, 1.5s)"
        )),
    }
}

fn find_checkout() -> Option<PathBuf> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("checkout")));
    beside
        .into_iter()
        .chain([
            PathBuf::from("target/release/checkout"),
            PathBuf::from("target/debug/checkout"),
        ])
        .find(|path| path.is_file())
}

/// Runs `probity drill`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut drills = Vec::new();
    for name in &args.drills {
        match DrillKind::parse(name.trim()) {
            Some(kind) => drills.push(kind),
            None => bail!(
                "unknown drill `{name}` (expected one of: {})",
                DrillKind::ALL.map(DrillKind::name).join(", ")
            ),
        }
    }
    let checkout = match args.checkout {
        Some(path) => path,
        None => find_checkout().context(
            "no checkout binary found next to probity or in target/: build it with `cargo build --release -p checkout` or pass --checkout PATH",
        )?,
    };
    if args.liveness_timeout >= args.liveness_period * args.liveness_failure_threshold.max(1) {
        bail!("--liveness-timeout must be shorter than the liveness window");
    }
    let mut config = DrillConfig::new(checkout);
    config.checkout_args = args.checkout_args;
    config.haproxy = args.haproxy;
    config.instances = args.instances as usize;
    config.database_url = args.database_url;
    config.pool_size = args.pool_size;
    config.drills = drills;
    config.lb_timing = CheckTiming {
        inter: args.inter,
        fastinter: args.fastinter,
        downinter: args.downinter,
        rise: args.rise.max(1),
        fall: args.fall.max(1),
        ..CheckTiming::default()
    };
    config.probes = Probes {
        startup: ProbeSpec {
            period: args.startup_period,
            timeout: Duration::from_secs(1).min(args.startup_period),
            failure_threshold: args.startup_failure_threshold.max(1),
        },
        liveness: ProbeSpec {
            period: args.liveness_period,
            timeout: args.liveness_timeout,
            failure_threshold: args.liveness_failure_threshold.max(1),
        },
    };
    config.rate = args.rate.max(1);
    config.concurrency = args.concurrency.max(1);
    config.outage = args.outage;
    config.stall = args.stall;
    config.boot_delay = args.boot_delay;
    config.keep_work_dir = args.keep_work_dir;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let started = Instant::now();
    let progress = move |message: &str| {
        eprintln!("[{:>6.1}s] {message}", started.elapsed().as_secs_f64());
    };
    let outcome = runtime.block_on(async {
        let interrupted = async {
            #[cfg(unix)]
            {
                use tokio::signal::unix::{SignalKind, signal};
                match signal(SignalKind::terminate()) {
                    Ok(mut terminate) => {
                        tokio::select! {
                            _ = tokio::signal::ctrl_c() => "SIGINT",
                            _ = terminate.recv() => "SIGTERM",
                        }
                    }
                    Err(_) => {
                        let _ = tokio::signal::ctrl_c().await;
                        "SIGINT"
                    }
                }
            }
            #[cfg(not(unix))]
            {
                let _ = tokio::signal::ctrl_c().await;
                "SIGINT"
            }
        };
        tokio::select! {
            report = probity_drill::run(&config, &progress) => Ok(report),
            signal = interrupted => Err(signal),
        }
    });
    // Dropping the drill future above killed every process it started.
    runtime.shutdown_timeout(Duration::from_secs(2));
    match outcome {
        Err(signal) => {
            eprintln!("{signal} received: fleet torn down");
            Ok(ExitCode::from(130))
        }
        Ok(Err(error)) => Err(error.into()),
        Ok(Ok(report)) => {
            if args.json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", report.table());
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn parses_durations() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("40"), Ok(Duration::from_secs(40)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("").is_err());
    }
}
