//! `probity drill`: real faults against a real local fleet behind a real HAProxy.

use anyhow::{Context, bail};
use probity_contract::kube::probe::ProbeTiming;
use probity_drill::haproxy::CheckTiming;
use probity_drill::kubelet::Probes;
use probity_drill::{DrillConfig, DrillKind, Targets};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Arguments of `probity drill`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Drills (in this order): busy (no fault: the fleet at full load, \
directly and through HAProxy, and what health checking costs), pool (exhaust one instance's \
connection pool), sigterm (stop one instance and start its replacement), flap (the shared \
database up and down every second; needs --database-url), outage (cut the shared database \
off; needs --database-url), stall (block one instance's runtime), slow-boot (boot longer than \
the liveness window), rollout-during-outage (replace one instance while the shared database is \
down for longer than the new instance's startup budget; needs --database-url), worker-wedge \
(wedge one instance's outbox relay: liveness fails, the instance restarts, and the broker \
receives every stored order once; needs --amqp-url), broker-outage (cut the broker off: nothing \
restarts, orders wait in the outboxes and reach the broker once after; needs --amqp-url); these \
two need each instance's own database (one outbox relay per database) and are skipped with \
--database-url, \
degraded (cut the shared database off with the Redis cache up: cached orders are served marked \
stale, writes are shed, nothing restarts; needs --database-url and --redis-url, and runs \
without flap, outage and rollout-during-outage, which measure draining). Every drill but busy \
runs under the background load.

Exit codes: 0 every target met, 1 a target missed (each is named on stderr), 2 the drill could \
not run, 130 interrupted.

Durations are written as Go and Kubernetes write them (250ms, 2s, 1m30s, 2h); a bare number \
is seconds.

Any service: --file DRILL.yaml runs the drills a drill file describes (docs/drill.md); \
`probity drill init --manifest FILE --container NAME` writes a starting one.",
    args_conflicts_with_subcommands = true
)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: Option<DrillCommand>,
    /// Drill the service a drill file describes (docs/drill.md) instead of checkout.
    #[arg(long, value_name = "FILE")]
    file: Option<PathBuf>,
    /// Read the probes from this Kubernetes manifest instead of the drill file's `pod:`.
    #[arg(long, value_name = "FILE", requires = "container", requires = "file")]
    manifest: Option<PathBuf>,
    /// The container in --manifest.
    #[arg(long, value_name = "NAME", requires = "manifest")]
    container: Option<String>,
    /// Run `probity agent` beside each instance, with the drill file's agent probes.
    #[arg(long, requires = "file")]
    with_agent: bool,
    /// With --file: only these faults (by name, comma-separated).
    #[arg(long, value_delimiter = ',', requires = "file")]
    faults: Vec<String>,
    /// With --file: check the drill file (and the manifest) and exit.
    #[arg(long, requires = "file")]
    check: bool,
    /// Instances in the fleet.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=16))]
    instances: u32,
    /// A shared PostgreSQL for the fleet (each instance uses its own SQLite without it).
    #[arg(long, value_name = "URL")]
    database_url: Option<String>,
    /// A RabbitMQ for the instances' outbox relays (each publishes to a queue of its own,
    /// deleted after the run); the worker-wedge drill needs it.
    #[arg(long, value_name = "URL")]
    amqp_url: Option<String>,
    /// A Redis for the instances' order cache, the database's fallback for reads; the
    /// degraded drill needs it (every instance shares one key prefix of the run's own).
    #[arg(long, value_name = "URL")]
    redis_url: Option<String>,
    /// How many orders the degraded drill creates, and so caches, before the outage.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    cached_orders: u32,
    /// The outbox relay's heartbeat bound in the worker-wedge drill.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    worker_bound: Duration,
    /// How long the broker-outage drill cuts the broker off.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    broker_outage: Duration,
    /// Drills to run, comma-separated, in order.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "busy,pool,sigterm,flap,outage,stall,slow-boot,rollout-during-outage,worker-wedge,broker-outage"
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
    /// HAProxy check interval while a server is up [default: deploy/haproxy/haproxy.cfg's].
    #[arg(long, value_parser = parse_duration)]
    inter: Option<Duration>,
    /// HAProxy check interval while a server changes state [default: the shipped config's].
    #[arg(long, value_parser = parse_duration)]
    fastinter: Option<Duration>,
    /// HAProxy check interval while a server is down [default: the shipped config's].
    #[arg(long, value_parser = parse_duration)]
    downinter: Option<Duration>,
    /// HAProxy: consecutive passing checks to mark a server up [default: the shipped config's].
    #[arg(long)]
    rise: Option<u32>,
    /// HAProxy: consecutive failing checks to mark a server down [default: the shipped
    /// config's].
    #[arg(long)]
    fall: Option<u32>,
    /// HAProxy: longest a check may take [default: the shipped config's `timeout check`].
    #[arg(long, value_parser = parse_duration)]
    check_timeout: Option<Duration>,
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
    /// Connections of load through HAProxy, each sending its next order as soon as the last
    /// is answered (the busy drill's connections too).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=1024))]
    concurrency: u32,
    /// Cap the background load at this many requests per second in total (default: closed
    /// loop, as fast as the fleet answers). The busy drill is always closed-loop.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    rate: Option<u32>,
    /// Each instance's pool size (the leak takes all of it).
    #[arg(long, default_value_t = 5)]
    pool_size: u32,
    /// How long each leg of the busy drill lasts.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    busy: Duration,
    /// Each segment of the busy drill's with/without health checks comparison (0: skip it).
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    cost_segment: Duration,
    /// Pairs of with/without segments in that comparison (the cost is the median pair's).
    #[arg(long, default_value_t = 6)]
    cost_pairs: u32,
    /// How long the database flaps.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    flap: Duration,
    /// Each flap: the database reachable this long…
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    flap_up: Duration,
    /// …then cut off this long.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    flap_down: Duration,
    /// How long the database stays cut off.
    #[arg(long, default_value = "40s", value_parser = parse_duration)]
    outage: Duration,
    /// How long the runtime stays blocked.
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    stall: Duration,
    /// How long the slow boot takes.
    #[arg(long, default_value = "12s", value_parser = parse_duration)]
    boot_delay: Duration,
    /// Target (pool): the leaking instance out of rotation within this long.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    max_time_to_drain: Duration,
    /// Target (busy, pool, sigterm): at most this many requests fail, as the client sees them.
    #[arg(long, default_value_t = 0)]
    max_failed_requests: u64,
    /// Target (busy): at most this many readiness transitions (and HAProxy downs) per leg.
    #[arg(long, default_value_t = 0)]
    max_readiness_transitions: u64,
    /// Target (busy): at most this many requests refused by the balancer.
    #[arg(long, default_value_t = 0)]
    max_refused: u64,
    /// Target (busy): health checking costs at most this share of throughput (3% or 0.03).
    #[arg(long, default_value = "3%", value_parser = parse_share)]
    max_check_cost: f64,
    /// Target (outage): traffic served again within this long of the database's return.
    #[arg(long, default_value = "3s", value_parser = parse_duration)]
    max_time_to_traffic: Duration,
    /// Target (rollout-during-outage): the instance started during the outage is in rotation
    /// within this long of the database's return.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    max_time_to_ready: Duration,
    /// Target (degraded): at least this share of the reads of cached orders is served during
    /// the outage (99% or 0.99).
    #[arg(long, default_value = "99%", value_parser = parse_share)]
    min_reads_served: f64,
    /// Target (degraded): reads are fresh again (no longer marked stale) within this long of
    /// the database's return.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    max_time_to_fresh: Duration,
    /// Keep the work folder (configuration, logs) after the run.
    #[arg(long)]
    keep_work_dir: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Also write the targets as JUnit XML to FILE (one test case per target).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
}

/// `probity drill`'s subcommands.
#[derive(Debug, clap::Subcommand)]
enum DrillCommand {
    /// Write a starting drill file from a Kubernetes manifest, every guess marked `# GUESS:`.
    Init {
        /// The manifest (Deployment, StatefulSet, …).
        #[arg(long, value_name = "FILE")]
        manifest: PathBuf,
        /// The app's container in it.
        #[arg(long, value_name = "NAME")]
        container: String,
        /// Write the drill file here instead of to stdout (refused if it exists).
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

/// `3%` or `0.03`: a share of 0 to 1.
fn parse_share(text: &str) -> Result<f64, String> {
    let text = text.trim();
    let value = match text.strip_suffix('%') {
        Some(percent) => percent.trim().parse::<f64>().map(|value| value / 100.0),
        None => text.parse::<f64>(),
    };
    match value {
        Ok(value) if (0.0..=1.0).contains(&value) => Ok(value),
        _ => Err(format!(
            "`{text}` is not a share (expected e.g. 3% or 0.03, from 0 to 100%)"
        )),
    }
}

/// The longest any drill phase may be told to last: a bound on every loop the drill runs.
const LONGEST: Duration = Duration::from_secs(24 * 3600);

/// Parses a duration as Go and Kubernetes write it (`250ms`, `2s`, `1m30s`, `2h`), or a bare
/// number of seconds, up to a day.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let duration =
        probity_contract::duration::parse_or_seconds(text).map_err(|error| error.to_string())?;
    if duration > LONGEST {
        return Err(format!(
            "`{}` is longer than a drill may run (at most 24h)",
            text.trim()
        ));
    }
    Ok(duration)
}

/// `probity drill init`: a starting drill file.
fn init(
    manifest: &std::path::Path,
    container: &str,
    output: Option<&std::path::Path>,
) -> anyhow::Result<ExitCode> {
    // The drill file names the manifest relative to where it will be.
    let manifest_ref = match output.and_then(|out| out.parent()) {
        Some(dir) if !dir.as_os_str().is_empty() => relative_to(manifest, dir),
        _ => manifest.display().to_string(),
    };
    let text = probity_drill::file::init::starting_file(manifest, container, &manifest_ref)
        .map_err(anyhow::Error::msg)?;
    match output {
        None => print!("{text}"),
        Some(path) => {
            use std::io::Write as _;
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
                .with_context(|| format!("writing {}", path.display()))?;
            file.write_all(text.as_bytes())
                .with_context(|| format!("writing {}", path.display()))?;
            eprintln!(
                "wrote {}: check every `# GUESS:` before `probity drill --file {}`",
                path.display(),
                path.display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `path` as seen from `dir` (both made absolute), or `path` as given when that fails.
fn relative_to(path: &std::path::Path, dir: &std::path::Path) -> String {
    let (Ok(path_abs), Ok(dir_abs)) = (std::path::absolute(path), std::path::absolute(dir)) else {
        return path.display().to_string();
    };
    let common = path_abs
        .components()
        .zip(dir_abs.components())
        .take_while(|(a, b)| a == b)
        .count();
    let ups = dir_abs.components().count() - common;
    let mut relative = PathBuf::new();
    for _ in 0..ups {
        relative.push("..");
    }
    for component in path_abs.components().skip(common) {
        relative.push(component);
    }
    relative.display().to_string()
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
    if let Some(DrillCommand::Init {
        manifest,
        container,
        output,
    }) = &args.command
    {
        return init(manifest, container, output.as_deref());
    }
    if let Some(file) = &args.file {
        return crate::drill_file::run(crate::drill_file::Args {
            file: file.clone(),
            manifest: args.manifest.clone().zip(args.container.clone()),
            with_agent: args.with_agent,
            faults: args.faults.clone(),
            check: args.check,
            haproxy: args.haproxy.clone(),
            json: args.json,
            junit: args.junit.clone(),
            keep_work_dir: args.keep_work_dir,
        });
    }
    let mut drills = Vec::new();
    for name in &args.drills {
        let name = name.trim();
        if let Some((_, needs)) = DrillKind::PLANNED
            .iter()
            .find(|(planned, _)| *planned == name)
        {
            bail!("the `{name}` drill is not available yet: {needs}");
        }
        match DrillKind::parse(name) {
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
    config.amqp_url = args.amqp_url;
    if let Some(url) = &args.redis_url
        && !(url.starts_with("redis://") || url.starts_with("rediss://"))
    {
        bail!(
            "--redis-url `{}`: expected redis://[USER:PASSWORD@]HOST[:PORT][/DB]",
            probity::redact::redact(url)
        );
    }
    config.redis_url = args.redis_url;
    config.cached_orders = args.cached_orders;
    config.worker_bound = args.worker_bound;
    config.broker_outage = args.broker_outage;
    config.pool_size = args.pool_size;
    config.drills = drills;
    let shipped = CheckTiming::shipped().context("reading deploy/haproxy/haproxy.cfg")?;
    config.lb_timing = CheckTiming {
        inter: args.inter.unwrap_or(shipped.inter),
        fastinter: args.fastinter.unwrap_or(shipped.fastinter),
        downinter: args.downinter.unwrap_or(shipped.downinter),
        rise: args.rise.unwrap_or(shipped.rise).max(1),
        fall: args.fall.unwrap_or(shipped.fall).max(1),
        timeout: args.check_timeout.unwrap_or(shipped.timeout),
    };
    config.probes = Probes {
        startup: ProbeTiming {
            period: args.startup_period,
            timeout: Duration::from_secs(1).min(args.startup_period),
            failure_threshold: args.startup_failure_threshold.max(1),
            ..ProbeTiming::default()
        },
        liveness: ProbeTiming {
            period: args.liveness_period,
            timeout: args.liveness_timeout,
            failure_threshold: args.liveness_failure_threshold.max(1),
            ..ProbeTiming::default()
        },
    };
    config.concurrency = args.concurrency;
    config.rate = args.rate;
    config.busy = args.busy;
    config.cost_segment = args.cost_segment;
    config.cost_pairs = args.cost_pairs;
    if args.flap_up.is_zero() || args.flap_down.is_zero() {
        bail!("--flap-up and --flap-down must be longer than 0s");
    }
    config.flap = args.flap;
    config.flap_up = args.flap_up;
    config.flap_down = args.flap_down;
    config.outage = args.outage;
    config.stall = args.stall;
    config.boot_delay = args.boot_delay;
    config.keep_work_dir = args.keep_work_dir;
    config.targets = Targets {
        max_time_to_drain: args.max_time_to_drain,
        max_failed_requests: args.max_failed_requests,
        max_readiness_transitions: args.max_readiness_transitions,
        max_refused: args.max_refused,
        max_check_cost: args.max_check_cost,
        max_time_to_traffic: args.max_time_to_traffic,
        max_time_to_ready: args.max_time_to_ready,
        min_reads_served: args.min_reads_served,
        max_time_to_fresh: args.max_time_to_fresh,
    };

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
    let elapsed = started.elapsed().as_secs_f64();
    match outcome {
        Err(signal) => {
            eprintln!("{signal} received: fleet torn down");
            Ok(ExitCode::from(130))
        }
        Ok(Err(error)) => {
            if let Some(path) = &args.junit {
                let xml = probity_drill::junit::render_error(&error.to_string(), elapsed);
                std::fs::write(path, xml)
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
            Err(error.into())
        }
        Ok(Ok(report)) => {
            if args.json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", report.table());
            }
            if let Some(path) = &args.junit {
                let xml = probity_drill::junit::render(&report.verdicts, elapsed);
                std::fs::write(path, xml)
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
            let missed = probity_drill::targets::missed(&report.verdicts);
            if missed.is_empty() {
                return Ok(ExitCode::SUCCESS);
            }
            eprintln!("targets missed:");
            for line in &missed {
                eprintln!("  {line}");
            }
            Ok(ExitCode::from(1))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_duration, parse_share};
    use std::time::Duration;

    #[test]
    fn parses_durations() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("40"), Ok(Duration::from_secs(40)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("-1s").unwrap_err().contains("negative"));
        assert!(parse_duration("").is_err());
        assert_eq!(
            parse_duration("25h").unwrap_err(),
            "`25h` is longer than a drill may run (at most 24h)"
        );
    }

    #[test]
    fn parses_shares() {
        assert_eq!(parse_share("3%"), Ok(0.03));
        assert_eq!(parse_share("0.5"), Ok(0.5));
        assert_eq!(parse_share("100%"), Ok(1.0));
        assert!(parse_share("101%").is_err());
        assert!(parse_share("-1").is_err());
        assert!(parse_share("lots").is_err());
    }
}
