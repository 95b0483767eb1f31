//! Command-line flags, validated into a [`Config`].
//!
//! URLs that may hold credentials (`--database-url`, `--redis-url`, `--amqp-url`) are taken as plain strings
//! and validated here, not by clap: clap's own errors repeat the offending value, and a
//! database password must never reach a terminal or a log.

use anyhow::{Context, bail};
use clap::Parser;
use probity::redact::redact;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// checkout: a small order service whose health checks tell the truth.
///
/// Serves orders and recommendations on --listen, with /livez, /readyz, /startupz and gRPC
/// health beside them; /metrics, the same probes with error details, and (with --chaos) fault
/// injection on --admin-listen.
#[derive(Debug, Parser)]
#[command(name = "checkout", version, about, long_about)]
pub struct Args {
    /// Address of the public listener (HTTP/1.1 and HTTP/2: the API, the probes, gRPC health).
    #[arg(
        long,
        env = "CHECKOUT_LISTEN",
        default_value = "127.0.0.1:8080",
        value_name = "ADDR"
    )]
    pub listen: SocketAddr,

    /// Address of the admin listener (/metrics, probes with details, /chaos/* with --chaos).
    #[arg(
        long,
        env = "CHECKOUT_ADMIN_LISTEN",
        default_value = "127.0.0.1:8081",
        value_name = "ADDR"
    )]
    pub admin_listen: SocketAddr,

    /// Database URL, `sqlite://PATH` or `postgres://USER[:PASSWORD]@HOST[:PORT]/DB`. Default: an
    /// SQLite file in --data-dir.
    #[arg(
        long,
        env = "CHECKOUT_DATABASE_URL",
        value_name = "URL",
        hide_env_values = true
    )]
    pub database_url: Option<String>,

    /// Directory for the embedded SQLite database.
    #[arg(
        long,
        env = "CHECKOUT_DATA_DIR",
        default_value = "data",
        value_name = "DIR"
    )]
    pub data_dir: PathBuf,

    /// Connections in the database pool.
    #[arg(long, default_value_t = 5, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub pool_size: u32,

    /// How long a request waits for a pooled connection before failing with 503.
    #[arg(long, default_value = "500ms", value_name = "DURATION", value_parser = parse_duration)]
    pub acquire_timeout: Duration,

    /// A pooled connection held longer than this is a leak: readiness fails naming it.
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = parse_duration)]
    pub leak_bound: Duration,

    /// How often the database check polls (reachability and pool capacity).
    #[arg(long, default_value = "500ms", value_name = "DURATION", value_parser = parse_duration)]
    pub db_check_interval: Duration,

    /// Redis URL for the order cache (soft: served from the database while it is down).
    #[arg(
        long,
        env = "CHECKOUT_REDIS_URL",
        value_name = "URL",
        hide_env_values = true
    )]
    pub redis_url: Option<String>,

    /// The prefix of every Redis key the cache writes (`PREFIX:order:ID`), so services (or
    /// environments) that share a Redis never read each other's entries.
    #[arg(
        long,
        env = "CHECKOUT_CACHE_PREFIX",
        default_value = "checkout",
        value_name = "PREFIX"
    )]
    pub cache_prefix: String,

    /// Base URL of the recommendations service (soft: popular items while it is down).
    #[arg(long, env = "CHECKOUT_RECOMMENDATIONS_URL", value_name = "URL")]
    pub recommendations_url: Option<String>,

    /// How long a call to the recommendations service may take before falling back.
    #[arg(long, default_value = "2s", value_name = "DURATION", value_parser = parse_duration)]
    pub recommendations_timeout: Duration,

    /// RabbitMQ URL, `amqp://USER:PASSWORD@HOST[:PORT]/VHOST`: runs the outbox relay, which
    /// publishes every order to --amqp-queue (soft: orders wait in the outbox while the
    /// broker is down). Without it, orders are stored and nothing is published.
    #[arg(
        long,
        env = "CHECKOUT_AMQP_URL",
        value_name = "URL",
        hide_env_values = true
    )]
    pub amqp_url: Option<String>,

    /// The durable queue the relay publishes orders to (through the default exchange).
    #[arg(long, default_value = "checkout.orders", value_name = "NAME")]
    pub amqp_queue: String,

    /// The relay's heartbeat bound: silent longer than this outside a declared wait on the
    /// broker or the database, it is wedged and liveness fails.
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = parse_duration)]
    pub outbox_max_silence: Duration,

    /// How often an idle relay looks for outbox rows it was not woken for (orders written by
    /// another instance). Default: 1s, or half of --outbox-max-silence if that is shorter.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub outbox_poll_interval: Option<Duration>,

    /// Serve fault injection on the admin listener: /chaos/leak-connections,
    /// /chaos/release-connections, /chaos/stall, /chaos/deadlock, /chaos/wedge-worker.
    #[arg(long)]
    pub chaos: bool,

    /// Hold startup (and so readiness) for this long after migrations, as a slow warm-up would.
    #[arg(long, default_value = "0s", value_name = "DURATION", value_parser = parse_duration)]
    pub boot_delay: Duration,

    /// After SIGTERM, keep serving (readiness failing) this long before closing the listener.
    /// Default: derived from the readiness probe, `--readiness-period` ×
    /// `--readiness-failure-threshold` + `--lb-reaction`.
    #[arg(long, env = "CHECKOUT_DRAIN_DELAY", value_name = "DURATION", value_parser = parse_duration)]
    pub drain_delay: Option<Duration>,

    /// The readiness probe's `periodSeconds`, as the deployment sets it (for the drain delay).
    #[arg(long, default_value = "5s", value_name = "DURATION", value_parser = parse_duration)]
    pub readiness_period: Duration,

    /// The readiness probe's `failureThreshold`, as the deployment sets it (for the drain delay).
    #[arg(long, default_value_t = 2, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub readiness_failure_threshold: u32,

    /// How long the load balancer takes to act once readiness fails (EndpointSlice
    /// propagation, an external balancer's own checks), for the drain delay.
    #[arg(long, default_value = "2s", value_name = "DURATION", value_parser = parse_duration)]
    pub lb_reaction: Duration,

    /// Path of the liveness probe.
    #[arg(long, default_value = "/livez", value_name = "PATH")]
    pub liveness_path: String,

    /// Path of the readiness probe.
    #[arg(long, default_value = "/readyz", value_name = "PATH")]
    pub readiness_path: String,

    /// Path of the startup probe.
    #[arg(long, default_value = "/startupz", value_name = "PATH")]
    pub startup_path: String,

    /// After the listener closes, how long in-flight requests may run.
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = parse_duration)]
    pub in_flight_deadline: Duration,

    /// Heartbeat age that counts as a runtime stall (fails liveness).
    #[arg(long, default_value = "5s", value_name = "DURATION", value_parser = parse_duration)]
    pub stall_threshold: Duration,

    /// Give up booting after this many failed database connection attempts (0: never).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub connect_attempts: u32,

    /// How long a request head may take to arrive, and a keep-alive connection may sit idle,
    /// on both listeners: slow or idle clients are cut after it.
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = parse_duration)]
    pub header_read_timeout: Duration,

    /// How long a request body may pause, and the grace before it must keep 1 KiB/s on
    /// average: a body that falls behind is cut with 408.
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = parse_duration)]
    pub body_read_timeout: Duration,

    /// Most connections per listener (default: the open-file limit less room for the process's
    /// own files, split 3 to 1 between the public and the admin listener, with room kept for
    /// probes past it on each).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: Option<u32>,

    /// Show check error details on the public listener too (they are always shown on the
    /// admin listener).
    #[arg(long)]
    pub public_details: bool,

    /// Print the health contract (what each probe checks, as JSON) and exit.
    #[arg(long)]
    pub print_contract: bool,
}

/// Where the orders live.
#[derive(Clone, PartialEq, Eq)]
pub enum DatabaseTarget {
    /// An SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL server; the URL as given (it may hold a password: never print it).
    Postgres(String),
}

impl std::fmt::Debug for DatabaseTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DatabaseTarget::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            DatabaseTarget::Postgres(url) => f.debug_tuple("Postgres").field(&redact(url)).finish(),
        }
    }
}

/// The outbox relay's settings.
#[derive(Clone)]
pub struct OutboxConfig {
    /// The broker URL as given (it may hold a password: never print it).
    pub url: String,
    /// `HOST:PORT` of the broker, for people: no credentials.
    pub target: String,
    /// The queue orders go to.
    pub queue: String,
    /// The heartbeat bound.
    pub max_silence: Duration,
    /// The idle poll interval.
    pub poll_interval: Duration,
}

impl std::fmt::Debug for OutboxConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboxConfig")
            .field("url", &redact(&self.url))
            .field("target", &self.target)
            .field("queue", &self.queue)
            .field("max_silence", &self.max_silence)
            .field("poll_interval", &self.poll_interval)
            .finish()
    }
}

/// Validated settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Public listener address.
    pub listen: SocketAddr,
    /// Admin listener address.
    pub admin_listen: SocketAddr,
    /// The database.
    pub database: DatabaseTarget,
    /// Pool size.
    pub pool_size: u32,
    /// Pool acquire timeout.
    pub acquire_timeout: Duration,
    /// How long a connection may be held before it counts as leaked.
    pub leak_bound: Duration,
    /// Database check interval.
    pub db_check_interval: Duration,
    /// Redis URL (may hold a password: never print it).
    pub redis_url: Option<String>,
    /// The prefix of the cache's Redis keys.
    pub cache_prefix: String,
    /// Recommendations base URL, without a trailing slash.
    pub recommendations_url: Option<String>,
    /// Recommendations call timeout.
    pub recommendations_timeout: Duration,
    /// The outbox relay, when `--amqp-url` is set.
    pub outbox: Option<OutboxConfig>,
    /// Fault injection on.
    pub chaos: bool,
    /// Extra warm-up time.
    pub boot_delay: Duration,
    /// Drain delay, when set by hand.
    pub drain_delay: Option<Duration>,
    /// The readiness probe's period.
    pub readiness_period: Duration,
    /// The readiness probe's failure threshold.
    pub readiness_failure_threshold: u32,
    /// The load balancer's reaction.
    pub lb_reaction: Duration,
    /// The probe paths.
    pub paths: probity::ProbePaths,
    /// In-flight deadline.
    pub in_flight_deadline: Duration,
    /// Runtime stall threshold.
    pub stall_threshold: Duration,
    /// Database connection attempts at boot (0: unlimited).
    pub connect_attempts: u32,
    /// Details on the public listener.
    pub public_details: bool,
    /// Header-read and idle keep-alive timeout.
    pub header_read_timeout: Duration,
    /// Request-body read timeout (and grace before the minimum rate).
    pub body_read_timeout: Duration,
    /// Connection limit per listener, when set.
    pub max_connections: Option<u32>,
}

impl Config {
    /// Validates the flags. Errors name the flag and never repeat a credential.
    pub fn from_args(args: Args) -> anyhow::Result<Config> {
        let database = match args.database_url.as_deref() {
            None => DatabaseTarget::Sqlite(args.data_dir.join("checkout.db")),
            Some(url) => parse_database_url(url)?,
        };
        if let Some(url) = &args.redis_url
            && !(url.starts_with("redis://") || url.starts_with("rediss://"))
        {
            bail!(
                "--redis-url `{}`: expected redis://[USER:PASSWORD@]HOST[:PORT][/DB]",
                redact(url)
            );
        }
        let prefix = &args.cache_prefix;
        if prefix.is_empty()
            || prefix.len() > 64
            || prefix
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || c == '*')
        {
            bail!(
                "--cache-prefix `{}`: expected 1 to 64 characters, no spaces, control characters or `*`",
                prefix.escape_debug()
            );
        }
        let outbox = args
            .amqp_url
            .as_deref()
            .map(|url| parse_amqp_url(url, &args))
            .transpose()?;
        let recommendations_url = match args.recommendations_url {
            Some(url) => {
                let parsed = reqwest::Url::parse(&url).with_context(|| {
                    format!("--recommendations-url `{}`: not a URL", redact(&url))
                })?;
                if !matches!(parsed.scheme(), "http" | "https") {
                    bail!(
                        "--recommendations-url `{}`: expected an http:// or https:// URL",
                        redact(&url)
                    );
                }
                Some(url.trim_end_matches('/').to_owned())
            }
            None => None,
        };
        if args.db_check_interval < Duration::from_millis(100) {
            bail!("--db-check-interval must be at least 100ms");
        }
        if args.stall_threshold < Duration::from_millis(100) {
            bail!("--stall-threshold must be at least 100ms");
        }
        if args.acquire_timeout.is_zero() {
            bail!("--acquire-timeout must be greater than zero");
        }
        if args.header_read_timeout < Duration::from_millis(100) {
            bail!("--header-read-timeout must be at least 100ms");
        }
        if args.body_read_timeout < Duration::from_millis(100) {
            bail!("--body-read-timeout must be at least 100ms");
        }
        if args.leak_bound < Duration::from_secs(1) {
            bail!("--leak-bound must be at least 1s: requests hold connections for that long");
        }
        let paths = probity::ProbePaths::new(
            args.liveness_path.clone(),
            args.readiness_path.clone(),
            args.startup_path.clone(),
        )
        .map_err(|error| {
            let flag = match error.probe {
                probity::ProbeKind::Liveness => "--liveness-path",
                probity::ProbeKind::Readiness => "--readiness-path",
                probity::ProbeKind::Startup => "--startup-path",
            };
            anyhow::anyhow!("{flag}: {error}")
        })?;
        let api = ["/orders", "/recommendations", "/grpc.health.v1.Health"];
        for probe in probity::ProbeKind::ALL {
            let path = paths.get(probe);
            if api
                .iter()
                .any(|route| path == *route || path.starts_with(&format!("{route}/")))
            {
                bail!("the {probe} path {path} is one of the API's routes: pick another");
            }
        }
        if args.readiness_period.is_zero() {
            bail!("--readiness-period must be greater than zero");
        }
        if args.listen == args.admin_listen && args.listen.port() != 0 {
            bail!(
                "--listen and --admin-listen are both {}: the admin listener needs its own port",
                args.listen
            );
        }
        Ok(Config {
            listen: args.listen,
            admin_listen: args.admin_listen,
            database,
            pool_size: args.pool_size,
            acquire_timeout: args.acquire_timeout,
            leak_bound: args.leak_bound,
            db_check_interval: args.db_check_interval,
            redis_url: args.redis_url,
            cache_prefix: args.cache_prefix,
            recommendations_url,
            recommendations_timeout: args.recommendations_timeout,
            outbox,
            chaos: args.chaos,
            boot_delay: args.boot_delay,
            drain_delay: args.drain_delay,
            readiness_period: args.readiness_period,
            readiness_failure_threshold: args.readiness_failure_threshold,
            lb_reaction: args.lb_reaction,
            paths,
            in_flight_deadline: args.in_flight_deadline,
            stall_threshold: args.stall_threshold,
            connect_attempts: args.connect_attempts,
            public_details: args.public_details,
            header_read_timeout: args.header_read_timeout,
            body_read_timeout: args.body_read_timeout,
            max_connections: args.max_connections,
        })
    }
}

fn parse_database_url(url: &str) -> anyhow::Result<DatabaseTarget> {
    if let Some(path) = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
    {
        let path = path.split('?').next().unwrap_or_default();
        if path.is_empty() {
            bail!("--database-url `{url}`: expected sqlite://PATH, e.g. sqlite://data/checkout.db");
        }
        return Ok(DatabaseTarget::Sqlite(PathBuf::from(path)));
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        // Parsed here, with the other flags, so a malformed URL is a usage error (exit 2).
        crate::db::postgres_options(url)?;
        return Ok(DatabaseTarget::Postgres(url.to_owned()));
    }
    bail!(
        "--database-url `{}`: unsupported scheme; expected sqlite://PATH or postgres://USER[:PASSWORD]@HOST[:PORT]/DB",
        redact(url)
    )
}

fn parse_amqp_url(url: &str, args: &Args) -> anyhow::Result<OutboxConfig> {
    let usage = "expected amqp://USER:PASSWORD@HOST[:PORT]/VHOST";
    // Not a URL: nothing tells which part is a password, so the value is not repeated.
    let parsed =
        reqwest::Url::parse(url).map_err(|_| anyhow::anyhow!("--amqp-url: not a URL; {usage}"))?;
    let port = match parsed.scheme() {
        "amqp" => 5672,
        "amqps" => 5671,
        _ => bail!("--amqp-url `{}`: unsupported scheme; {usage}", redact(url)),
    };
    let Some(host) = parsed.host_str().filter(|host| !host.is_empty()) else {
        bail!("--amqp-url `{}`: no host; {usage}", redact(url));
    };
    // lapin reads the URL with its own parser: it must accept it too, and its error must not
    // repeat the password.
    if let Err(error) = url.parse::<lapin::uri::AMQPUri>() {
        bail!(
            "--amqp-url `{}`: {}; {usage}",
            redact(url),
            redact(&error.to_string())
        );
    }
    let queue = args.amqp_queue.trim();
    if queue.is_empty() || queue.len() > 255 || queue.starts_with("amq.") {
        bail!("--amqp-queue must be 1 to 255 bytes and not start with `amq.` (reserved)");
    }
    if args.outbox_max_silence < Duration::from_millis(500) {
        bail!("--outbox-max-silence must be at least 500ms");
    }
    let poll_interval = args
        .outbox_poll_interval
        .unwrap_or_else(|| Duration::from_secs(1).min(args.outbox_max_silence / 2));
    if poll_interval < Duration::from_millis(10) || poll_interval >= args.outbox_max_silence {
        bail!("--outbox-poll-interval must be at least 10ms and below --outbox-max-silence");
    }
    Ok(OutboxConfig {
        url: url.to_owned(),
        target: format!("{host}:{}", parsed.port().unwrap_or(port)),
        queue: queue.to_owned(),
        max_silence: args.outbox_max_silence,
        poll_interval,
    })
}

/// Parses a duration as Go and Kubernetes write it (`500ms`, `5s`, `1m30s`, `2h`), or a bare
/// number of seconds (`1.5`): the one parser probity-contract gives every tool.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    probity_contract::duration::parse_or_seconds(text).map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> Args {
        let mut argv = vec!["checkout"];
        argv.extend_from_slice(extra);
        Args::try_parse_from(argv).unwrap()
    }

    #[test]
    fn parses_durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        for bad in ["5 parsecs", "soon", "-10s"] {
            let error = parse_duration(bad).unwrap_err();
            assert!(error.contains(bad.trim()), "{bad}: {error}");
        }
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn defaults_to_sqlite_in_the_data_dir() {
        let config = Config::from_args(args(&[])).unwrap();
        assert_eq!(
            config.database,
            DatabaseTarget::Sqlite(PathBuf::from("data/checkout.db"))
        );
        assert_eq!(config.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(config.admin_listen.to_string(), "127.0.0.1:8081");
        assert_eq!(config.pool_size, 5);
    }

    #[test]
    fn the_cache_prefix_defaults_to_the_service_and_refuses_what_a_key_cannot_hold() {
        assert_eq!(
            Config::from_args(args(&[])).unwrap().cache_prefix,
            "checkout"
        );
        let config = Config::from_args(args(&["--cache-prefix", "checkout-eu"])).unwrap();
        assert_eq!(config.cache_prefix, "checkout-eu");
        for bad in ["", "two words", "all*", "line\nbreak"] {
            let error = Config::from_args(args(&["--cache-prefix", bad])).unwrap_err();
            assert!(
                error.to_string().starts_with("--cache-prefix `"),
                "{bad:?}: {error}"
            );
        }
        let long = "x".repeat(65);
        assert!(Config::from_args(args(&["--cache-prefix", &long])).is_err());
    }

    #[test]
    fn database_url_errors_never_repeat_the_password() {
        let error = Config::from_args(args(&["--database-url", "mysql://app:hunter2@db/shop"]))
            .unwrap_err()
            .to_string();
        assert!(error.contains("unsupported scheme"), "{error}");
        assert!(!error.contains("hunter2"), "{error}");
        let error = Config::from_args(args(&["--redis-url", "http://:hunter2@cache"]))
            .unwrap_err()
            .to_string();
        assert!(!error.contains("hunter2"), "{error}");
        let target = Config::from_args(args(&["--database-url", "postgres://app:hunter2@db/shop"]))
            .unwrap()
            .database;
        assert!(!format!("{target:?}").contains("hunter2"));
    }

    #[test]
    fn amqp_url_errors_never_repeat_the_password() {
        for url in [
            "http://app:hunter2@broker/%2f",
            "amqp://app:hunter2@/%2f",
            "not a url hunter2",
        ] {
            let error = Config::from_args(args(&["--amqp-url", url]))
                .unwrap_err()
                .to_string();
            assert!(error.contains("--amqp-url"), "{error}");
            assert!(!error.contains("hunter2"), "{error}");
        }
        let config = Config::from_args(args(&["--amqp-url", "amqp://app:hunter2@broker/%2f"]))
            .unwrap()
            .outbox
            .unwrap();
        assert_eq!(config.target, "broker:5672");
        assert_eq!(config.queue, "checkout.orders");
        assert!(!format!("{config:?}").contains("hunter2"));
        assert!(Config::from_args(args(&[])).unwrap().outbox.is_none());
    }

    #[test]
    fn the_idle_poll_stays_below_the_heartbeat_bound() {
        let outbox = |extra: &[&str]| {
            let mut argv = vec!["--amqp-url", "amqp://broker"];
            argv.extend_from_slice(extra);
            Config::from_args(args(&argv)).map(|config| config.outbox.unwrap())
        };
        assert_eq!(outbox(&[]).unwrap().poll_interval, Duration::from_secs(1));
        assert_eq!(
            outbox(&["--outbox-max-silence", "1s"])
                .unwrap()
                .poll_interval,
            Duration::from_millis(500)
        );
        let error = outbox(&["--outbox-max-silence", "2s", "--outbox-poll-interval", "2s"])
            .unwrap_err()
            .to_string();
        assert!(error.contains("below --outbox-max-silence"), "{error}");
    }

    #[test]
    fn rejects_one_port_for_both_listeners() {
        let error = Config::from_args(args(&[
            "--listen",
            "127.0.0.1:9000",
            "--admin-listen",
            "127.0.0.1:9000",
        ]))
        .unwrap_err()
        .to_string();
        assert!(error.contains("needs its own port"), "{error}");
    }
}
