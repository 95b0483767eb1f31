//! Readiness checks from the configuration: the app's own endpoints (`app`, `metrics`) and
//! every probity-checks backend, each turned into a core [`CheckSpec`].

pub(crate) mod metrics;
mod postgres_query;

use crate::config::{Policy, ReadinessEntry, ReadinessKind, Secret};
use crate::scrape::Scraper;
use probity::{Check, CheckSpec, Tier, Timing};
use probity_checks::{
    disk, dns, etcd, grpc_health, http_endpoint, jwks, memcached, mqtt, mysql_async_pool, nats,
    postgres, rabbitmq, redis_ping, tcp, tls_expiry,
};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// Interval and timeout for the `app` check when none is set: the app's health endpoint is
/// polled every 2 s and may take 1 s.
pub(crate) const APP_TIMING: Timing = Timing {
    interval: Duration::from_secs(2),
    timeout: Duration::from_secs(1),
};

/// Interval and timeout of a check that suggests none (the core's own defaults).
const FALLBACK_TIMING: Timing = Timing {
    interval: Duration::from_secs(5),
    timeout: Duration::from_secs(2),
};

/// A background task a check needs (an MQTT event loop, a JWKS refresher), started with the
/// agent.
pub(crate) type Task = Pin<Box<dyn Future<Output = ()> + Send>>;

/// What building the checks needs and produces beside the specs.
pub(crate) struct Context<'a> {
    pub(crate) app_url: Option<&'a reqwest::Url>,
    pub(crate) client: reqwest::Client,
    pub(crate) scrapers: HashMap<String, Arc<Scraper>>,
    pub(crate) tasks: Vec<Task>,
    pub(crate) service: String,
    /// The app's request outcomes, when read.
    pub(crate) outcomes: Option<Arc<crate::outcomes::Outcomes>>,
    /// The gauges read, followed for values that never move.
    pub(crate) unmoving: Arc<crate::unmoving::Unmoving>,
}

impl Context<'_> {
    /// Resolves a URL of the configuration: absolute, or a path on `[app] url`.
    pub(crate) fn url(&self, text: &Secret) -> Result<reqwest::Url, String> {
        let parsed = match (text.0.starts_with('/'), self.app_url) {
            (true, Some(base)) => base.join(&text.0),
            _ => reqwest::Url::parse(&text.0),
        };
        parsed.map_err(|error| {
            format!(
                "`{}` is not a URL: {error}",
                crate::adapter::redact(&text.0)
            )
        })
    }

    /// The scraper of an exposition URL, shared by every reader of it.
    pub(crate) fn scraper(&mut self, url: reqwest::Url) -> Arc<Scraper> {
        self.scrapers
            .entry(url.as_str().to_owned())
            .or_insert_with(|| Arc::new(Scraper::new(self.client.clone(), url)))
            .clone()
    }
}

/// The interval and timeout a check runs with: the configured ones, else the kind's own.
/// A configured interval shorter than the kind's timeout halves the timeout, so `interval`
/// alone is always a valid setting.
pub(crate) fn timing(
    interval: Option<Duration>,
    timeout: Option<Duration>,
    kind: Timing,
) -> Timing {
    let interval = interval.unwrap_or(kind.interval);
    let timeout = timeout.unwrap_or(if kind.timeout < interval {
        kind.timeout
    } else {
        interval / 2
    });
    Timing { interval, timeout }
}

/// Builds the spec of one readiness check.
pub(crate) fn build(
    name: &str,
    entry: &ReadinessEntry,
    context: &mut Context<'_>,
) -> Result<CheckSpec, String> {
    let policy = &entry.policy;
    let tier = policy.tier.unwrap_or(Tier::Hard);
    let interval = policy.interval.map(|dur| dur.0);
    let timeout = policy.timeout.map(|dur| dur.0);
    let check: Arc<dyn Check> = match &entry.kind {
        ReadinessKind::App(settings) => {
            let url = context.url(&settings.url)?;
            let mut check =
                http_endpoint::HttpCheck::new(url.as_str()).map_err(|error| error.to_string())?;
            if let Some(range) = &settings.expect_status {
                check = check.expect_status(range.0.clone());
            }
            if let Some(text) = &settings.body_contains {
                check = check.body_contains(text.clone());
            }
            let reads_outcomes = context.outcomes.is_some();
            let check = AppCheck {
                inner: check,
                outcomes: context.outcomes.clone(),
            };
            let mut spec = CheckSpec::new(name, tier, check).dependency("app");
            if reads_outcomes {
                // The app's failing requests are reported to it (see `outcomes`).
                spec = spec.passive_failures(crate::outcomes::PASSIVE_RUN);
            }
            return Ok(apply(spec, policy, timing(interval, timeout, APP_TIMING)));
        }
        ReadinessKind::Metrics(settings) => {
            let url = context.url(&settings.url)?;
            let scraper = context.scraper(url);
            let timing = timing(interval, timeout, metrics::DEFAULT_TIMING);
            let check = metrics::MetricsCheck::new(
                scraper,
                settings.clone(),
                timing,
                context.outcomes.clone(),
                &context.unmoving,
            )?;
            return Ok(apply(CheckSpec::new(name, tier, check), policy, timing));
        }
        ReadinessKind::Tcp(settings) => {
            let mut check = tcp::TcpCheck::new(settings.target.clone());
            if let Some(banner) = &settings.banner {
                check = check.expect_banner(banner.as_bytes());
            }
            Arc::new(check)
        }
        ReadinessKind::Http(settings) => {
            let mut check = http_endpoint::HttpCheck::new(&settings.url.0)
                .map_err(|error| error.to_string())?;
            if let Some(range) = &settings.expect_status {
                check = check.expect_status(range.0.clone());
            }
            if let Some(text) = &settings.body_contains {
                check = check.body_contains(text.clone());
            }
            Arc::new(check)
        }
        ReadinessKind::Postgres(settings) => {
            let config: tokio_postgres::Config = settings.url.0.parse().map_err(|error| {
                format!(
                    "`{}` is not a PostgreSQL URL: {error}",
                    crate::adapter::redact(&settings.url.0)
                )
            })?;
            match &settings.query {
                Some(query) => {
                    let suggested = Timing {
                        interval: Duration::from_secs(2),
                        timeout: Duration::from_secs(1),
                    };
                    let timing = timing(interval, timeout, suggested);
                    Arc::new(postgres_query::PostgresQueryCheck::new(
                        config,
                        query.clone(),
                        timing,
                    ))
                }
                None => Arc::new(postgres::ConnectionCheck::new(config)),
            }
        }
        ReadinessKind::Mysql(settings) => {
            let opts = ::mysql_async::Opts::from_url(&settings.url.0).map_err(|error| {
                format!(
                    "`{}` is not a MySQL URL: {error}",
                    crate::adapter::redact(&settings.url.0)
                )
            })?;
            // The agent's own pool: one connection, enough to prove the server answers.
            let constraints = ::mysql_async::PoolConstraints::new(0, 1).unwrap_or_default();
            let opts = ::mysql_async::Opts::from(
                ::mysql_async::OptsBuilder::from_opts(opts)
                    .pool_opts(::mysql_async::PoolOpts::default().with_constraints(constraints)),
            );
            let pool = ::mysql_async::Pool::new(opts.clone());
            Arc::new(mysql_async_pool::PoolCheck::new(pool, opts))
        }
        ReadinessKind::Redis(settings) => {
            let client = ::redis::Client::open(settings.url.0.as_str()).map_err(|error| {
                format!(
                    "`{}` is not a Redis URL: {}",
                    crate::adapter::redact(&settings.url.0),
                    crate::adapter::redact(&error.to_string())
                )
            })?;
            Arc::new(redis_ping::RedisCheck::new(client))
        }
        ReadinessKind::Rabbitmq(settings) => {
            if !(settings.url.0.starts_with("amqp://") || settings.url.0.starts_with("amqps://")) {
                return Err(format!(
                    "`{}` is not an AMQP URL: write amqp://USER:PASSWORD@HOST:5672/VHOST",
                    crate::adapter::redact(&settings.url.0)
                ));
            }
            Arc::new(rabbitmq::RabbitCheck::connect(settings.url.0.clone()))
        }
        ReadinessKind::Nats(settings) => Arc::new(nats::NatsCheck::connect(settings.url.0.clone())),
        ReadinessKind::Mqtt(settings) => {
            let (host, port) = settings
                .target
                .rsplit_once(':')
                .and_then(|(host, port)| Some((host.to_owned(), port.parse::<u16>().ok()?)))
                .ok_or_else(|| format!("`{}` is not host:port", settings.target))?;
            let client_id = settings
                .client_id
                .clone()
                .unwrap_or_else(|| format!("probity-agent-{}-{name}", context.service));
            let mut options = rumqttc::MqttOptions::new(client_id, host, port);
            options.set_keep_alive(Duration::from_secs(10));
            let (client, mut event_loop) = rumqttc::AsyncClient::new(options, 8);
            let status = mqtt::MqttStatus::new(settings.target.clone());
            let observer = status.clone();
            context.tasks.push(Box::pin(async move {
                // The client must live as long as its event loop.
                let _client = client;
                loop {
                    let event = event_loop.poll().await;
                    observer.observe(&event);
                    if event.is_err() {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                }
            }));
            let mut check = mqtt::MqttCheck::new(status);
            if let Some(silence) = settings.max_silence {
                check = check.max_silence(silence.0);
            }
            Arc::new(check)
        }
        ReadinessKind::Dns(settings) => {
            let mut check = dns::DnsCheck::new(settings.host.clone());
            if let Some(count) = settings.min_addresses {
                check = check.min_addresses(count);
            }
            Arc::new(check)
        }
        ReadinessKind::Disk(settings) => {
            let mut check = disk::DiskCheck::new(settings.path.clone());
            if let Some(percent) = settings.min_free_percent {
                check = check.min_free_percent(percent);
            }
            if let Some(bytes) = settings.min_free_bytes {
                check = check.min_free_bytes(bytes);
            }
            if let Some(percent) = settings.min_free_inodes_percent {
                check = check.min_free_inodes_percent(percent);
            }
            Arc::new(check)
        }
        ReadinessKind::Jwks(settings) => {
            let url = context.url(&settings.url)?;
            let cache = jwks::KeyCache::new();
            let every = settings
                .refresh_every
                .map_or(settings.max_age.0 / 5, |dur| dur.0)
                .max(Duration::from_secs(1));
            context.tasks.push(Box::pin(refresh_jwks(
                context.client.clone(),
                url,
                cache.clone(),
                every,
            )));
            Arc::new(jwks::JwksCheck::new(cache, settings.max_age.0))
        }
        ReadinessKind::GrpcHealth(settings) => {
            let check = grpc_health::GrpcHealthCheck::new(&settings.target)
                .map_err(|error| error.to_string())?;
            Arc::new(match &settings.service {
                Some(service) => check.service(service.clone()),
                None => check,
            })
        }
        ReadinessKind::TlsCertificate(settings) => Arc::new(tls_certificate(settings)?),
        ReadinessKind::Memcached(settings) => {
            Arc::new(memcached::MemcachedCheck::new(settings.target.clone()))
        }
        ReadinessKind::Etcd(settings) => {
            Arc::new(etcd::EtcdCheck::new(&settings.url.0).map_err(|error| error.to_string())?)
        }
    };
    let suggested = check.default_timing().unwrap_or(FALLBACK_TIMING);
    Ok(apply(
        CheckSpec::from_arc(name, tier, check),
        policy,
        timing(interval, timeout, suggested),
    ))
}

fn tls_certificate(
    settings: &crate::config::TlsCertificateSettings,
) -> Result<tls_expiry::TlsExpiryCheck, String> {
    let mut check = tls_expiry::TlsExpiryCheck::new(settings.target.clone())
        .map_err(|error| error.to_string())?;
    if let Some(name) = &settings.server_name {
        check = check.server_name(name).map_err(|error| error.to_string())?;
    }
    if let Some(path) = &settings.root_certificate {
        let pem = std::fs::read(path)
            .map_err(|error| format!("cannot read the root certificate {path}: {error}"))?;
        check = check
            .root_certificate_pem(&pem)
            .map_err(|error| format!("{path}: {error}"))?;
    }
    if settings.any_issuer {
        check = check.any_issuer();
    }
    if let Some(margin) = settings.fail_within {
        check = check.fail_within(margin.0);
    }
    if let Some(margin) = settings.warn_within {
        check = check.warn_within(margin.0);
    }
    Ok(check)
}

/// `app`: the app's own readiness endpoint. A failure while the app's requests succeed is
/// a self-check calling a busy app broken: it degrades to `warn`, with the reason.
struct AppCheck {
    inner: http_endpoint::HttpCheck,
    outcomes: Option<Arc<crate::outcomes::Outcomes>>,
}

impl AppCheck {
    async fn poll(&self) -> probity::CheckResult {
        let result = self.inner.check().await;
        match (result, &self.outcomes) {
            (Err(error), Some(outcomes)) => {
                let failure = format!("its readiness says {}", error.message());
                match outcomes.serving_despite(&failure, tokio::time::Instant::now()) {
                    Some(reason) => Ok(probity::Detail::new().warning(reason)),
                    None => Err(error),
                }
            }
            (result, _) => result,
        }
    }
}

impl Check for AppCheck {
    fn check(&self) -> probity::CheckFuture<'_> {
        Box::pin(self.poll())
    }

    fn dependency(&self) -> Option<&str> {
        Some("app")
    }

    fn default_timing(&self) -> Option<Timing> {
        Some(APP_TIMING)
    }

    fn default_fall(&self) -> Option<u32> {
        self.inner.default_fall()
    }

    fn calls_health_endpoint(&self) -> bool {
        self.inner.calls_health_endpoint()
    }

    fn outranked_by_requests(&self) -> bool {
        self.outcomes.is_some()
    }
}

fn apply(mut spec: CheckSpec, policy: &Policy, timing: Timing) -> CheckSpec {
    spec = spec.interval(timing.interval).timeout(timing.timeout);
    if let Some(jitter) = policy.jitter {
        spec = spec.jitter(jitter.0);
    }
    if let Some(rise) = policy.rise {
        spec = spec.rise(rise);
    }
    if let Some(fall) = policy.fall {
        spec = spec.fall(fall);
    }
    if let Some(staleness) = policy.staleness {
        spec = spec.staleness(staleness.0);
    }
    if let Some(window) = policy.fail_open_for {
        spec = spec.fail_open_for(window.0);
    }
    if let Some(fallback) = &policy.fallback {
        spec = spec.fallback(fallback.clone());
    }
    if let Some(required) = policy.boot_requires_rise {
        spec = spec.boot_requires_rise(required);
    }
    spec
}

/// Fetches a JWKS document every `every` and records how many keys it holds.
async fn refresh_jwks(
    client: reqwest::Client,
    url: reqwest::Url,
    cache: jwks::KeyCache,
    every: Duration,
) {
    let timeout = (every / 2).min(Duration::from_secs(5));
    loop {
        match crate::fetch::get(&client, &url, "application/json", timeout).await {
            Ok(answer) if (200..=299).contains(&answer.status) => {
                match serde_json::from_str::<serde_json::Value>(&answer.body) {
                    Ok(document) => match document.get("keys").and_then(|keys| keys.as_array()) {
                        Some(keys) if !keys.is_empty() => cache.refreshed(keys.len()),
                        Some(_) => cache.refresh_failed("the JWKS document holds no keys"),
                        None => cache.refresh_failed("the document has no `keys` array"),
                    },
                    Err(error) => cache.refresh_failed(format!("not JSON: {error}")),
                }
            }
            Ok(answer) => cache.refresh_failed(format!("answered {}", answer.status)),
            Err(error) => cache.refresh_failed(error),
        }
        tokio::time::sleep(every).await;
    }
}
