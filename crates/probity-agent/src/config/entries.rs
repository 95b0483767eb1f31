//! The entries of the `readiness` and `liveness` sections: one check kind each, with its policy.
//!
//! Each entry is a map read key by key (not through serde's buffered, internally tagged enums),
//! so every error — an unknown key, a second check kind, a dependency check under liveness —
//! is raised while the parser stands on the offending key and carries its line.

use super::key::{Key, entry_error};
use super::values::{Condition, Dur, Secret, StatusRange};
use probity::Tier;
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use std::collections::BTreeMap;
use std::fmt;

/// The policy settings every readiness check takes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Policy {
    /// What a failure does to readiness (default hard).
    pub tier: Option<Tier>,
    /// Time between polls.
    pub interval: Option<Dur>,
    /// Longest a poll may take.
    pub timeout: Option<Dur>,
    /// Random spread of the wait between polls.
    pub jitter: Option<Dur>,
    /// Consecutive successes to turn healthy again.
    pub rise: Option<u32>,
    /// Consecutive failures to turn unhealthy.
    pub fall: Option<u32>,
    /// Age past which a result counts as a failure.
    pub staleness: Option<Dur>,
    /// For a hard check: how long to fail open before failing closed.
    pub fail_open_for: Option<Dur>,
    /// Require the full rise count at boot too.
    pub boot_requires_rise: Option<bool>,
    /// For a hard check: another check that serves while this one fails (e.g. a cache for
    /// reads); readiness then warns instead of failing, unless the fault is this instance's own.
    pub fallback: Option<String>,
}

const POLICY_KEYS: &[&str] = &[
    "tier",
    "interval",
    "timeout",
    "jitter",
    "rise",
    "fall",
    "staleness",
    "fail_open_for",
    "boot_requires_rise",
    "fallback",
];

/// A readiness check from the configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadinessEntry {
    /// Its policy.
    pub policy: Policy,
    /// What it checks.
    pub kind: ReadinessKind,
}

/// What a readiness check checks.
#[derive(Debug, Clone, PartialEq)]
pub enum ReadinessKind {
    /// The app's own (possibly deep) health endpoint, polled and cached.
    App(AppSettings),
    /// Series in the app's Prometheus/OpenMetrics exposition.
    Metrics(MetricsSettings),
    /// A TCP connect.
    Tcp(TcpSettings),
    /// An HTTP endpoint of another service.
    Http(HttpSettings),
    /// A PostgreSQL server.
    Postgres(PostgresSettings),
    /// A MySQL or MariaDB server.
    Mysql(UrlSettings),
    /// A Redis server.
    Redis(UrlSettings),
    /// A RabbitMQ broker.
    Rabbitmq(UrlSettings),
    /// A NATS server.
    Nats(UrlSettings),
    /// An MQTT broker.
    Mqtt(MqttSettings),
    /// A DNS name.
    Dns(DnsSettings),
    /// Free space on a filesystem.
    Disk(DiskSettings),
    /// Freshness of a JWKS document's signing keys.
    Jwks(JwksSettings),
    /// Another server's `grpc.health.v1`.
    GrpcHealth(GrpcHealthSettings),
    /// Expiry of an endpoint's TLS certificates.
    TlsCertificate(TlsCertificateSettings),
    /// A memcached server.
    Memcached(TargetSettings),
    /// An etcd member.
    Etcd(UrlSettings),
}

/// The readiness kinds, as keys.
pub const READINESS_KINDS: &[&str] = &[
    "app",
    "metrics",
    "tcp",
    "http",
    "postgres",
    "mysql",
    "redis",
    "rabbitmq",
    "nats",
    "mqtt",
    "dns",
    "disk",
    "jwks",
    "grpc_health",
    "tls_certificate",
    "memcached",
    "etcd",
];

impl ReadinessKind {
    /// The key naming the kind.
    pub fn key(&self) -> &'static str {
        match self {
            ReadinessKind::App(_) => "app",
            ReadinessKind::Metrics(_) => "metrics",
            ReadinessKind::Tcp(_) => "tcp",
            ReadinessKind::Http(_) => "http",
            ReadinessKind::Postgres(_) => "postgres",
            ReadinessKind::Mysql(_) => "mysql",
            ReadinessKind::Redis(_) => "redis",
            ReadinessKind::Rabbitmq(_) => "rabbitmq",
            ReadinessKind::Nats(_) => "nats",
            ReadinessKind::Mqtt(_) => "mqtt",
            ReadinessKind::Dns(_) => "dns",
            ReadinessKind::Disk(_) => "disk",
            ReadinessKind::Jwks(_) => "jwks",
            ReadinessKind::GrpcHealth(_) => "grpc_health",
            ReadinessKind::TlsCertificate(_) => "tls_certificate",
            ReadinessKind::Memcached(_) => "memcached",
            ReadinessKind::Etcd(_) => "etcd",
        }
    }

    fn read<'de, A: MapAccess<'de>>(key: &str, map: &mut A) -> Result<Self, A::Error> {
        Ok(match key {
            "app" => ReadinessKind::App(map.next_value()?),
            "metrics" => ReadinessKind::Metrics(map.next_value()?),
            "tcp" => ReadinessKind::Tcp(map.next_value()?),
            "http" => ReadinessKind::Http(map.next_value()?),
            "postgres" => ReadinessKind::Postgres(map.next_value()?),
            "mysql" => ReadinessKind::Mysql(map.next_value()?),
            "redis" => ReadinessKind::Redis(map.next_value()?),
            "rabbitmq" => ReadinessKind::Rabbitmq(map.next_value()?),
            "nats" => ReadinessKind::Nats(map.next_value()?),
            "mqtt" => ReadinessKind::Mqtt(map.next_value()?),
            "dns" => ReadinessKind::Dns(map.next_value()?),
            "disk" => ReadinessKind::Disk(map.next_value()?),
            "jwks" => ReadinessKind::Jwks(map.next_value()?),
            "grpc_health" => ReadinessKind::GrpcHealth(map.next_value()?),
            "tls_certificate" => ReadinessKind::TlsCertificate(map.next_value()?),
            "memcached" => ReadinessKind::Memcached(map.next_value()?),
            "etcd" => ReadinessKind::Etcd(map.next_value()?),
            other => return Err(de::Error::custom(format!("unknown check kind `{other}`"))),
        })
    }
}

/// `app`: the app's own health endpoint.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppSettings {
    /// Absolute, or a path on `app.url` (`/health`).
    pub url: Secret,
    /// Statuses that pass (default 200-299).
    #[serde(default)]
    pub expect_status: Option<StatusRange>,
    /// Text the body must contain.
    #[serde(default)]
    pub body_contains: Option<String>,
}

/// `metrics`: a series of the app's exposition, judged against a threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricsSettings {
    /// The exposition's URL: absolute, or a path on `app.url` (`/metrics`).
    pub url: Secret,
    /// The preset it started from, if any.
    pub preset: Option<&'static str>,
    /// The series' name.
    pub series: String,
    /// Label matchers, as PromQL writes them: a value `=~5..`, `!~GET|HEAD`, `!=200` or
    /// `=200` (a bare value is `=`); every one must match for a sample to count.
    pub labels: BTreeMap<String, String>,
    /// What a scrape without any matching sample means (default: `fail` for a value, `pass`
    /// for a `change`, whose counter may not exist before its first event).
    pub missing: Missing,
    /// When the check fails, e.g. `"> 0"`.
    pub fail_if: Condition,
    /// Judge the increase since the previous scrape instead of the value (counters).
    pub change: bool,
    /// Consecutive polls the condition must hold before the check fails.
    pub for_polls: u32,
    /// Scrapes in a row a gauge may read the same value while the app serves requests before
    /// the agent reports it as a finding (is it wired?); `0` never reports. Default 120.
    pub stale_after_scrapes: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MetricsRaw {
    url: Secret,
    #[serde(default)]
    preset: Option<String>,
    #[serde(default)]
    series: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    fail_if: Option<Condition>,
    #[serde(default)]
    change: Option<bool>,
    #[serde(default, rename = "for")]
    for_polls: Option<u32>,
    #[serde(default)]
    missing: Option<Missing>,
    #[serde(default)]
    stale_after_scrapes: Option<u32>,
}

/// What a `metrics` check does when no sample matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Missing {
    /// The check fails, naming the series it did not find.
    Fail,
    /// The check passes (a counter not yet created counts as zero).
    Pass,
}

impl<'de> Deserialize<'de> for MetricsSettings {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = MetricsRaw::deserialize(deserializer)?;
        MetricsSettings::try_from(raw).map_err(de::Error::custom)
    }
}

impl TryFrom<MetricsRaw> for MetricsSettings {
    type Error = String;

    fn try_from(raw: MetricsRaw) -> Result<Self, String> {
        let preset = match raw.preset.as_deref() {
            Some(name) => Some(super::presets::find(name).ok_or_else(|| {
                let known: Vec<&str> = super::presets::PRESETS.iter().map(|p| p.name).collect();
                format!(
                    "unknown preset `{name}`; the presets are: {}",
                    known.join(", ")
                )
            })?),
            None => None,
        };
        let series = raw
            .series
            .or_else(|| preset.map(|preset| preset.series.to_owned()))
            .ok_or("a metrics check needs `series` (or a `preset` that names one)")?;
        let valid_name = !series.is_empty()
            && series
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
            && !series.starts_with(|c: char| c.is_ascii_digit());
        if !valid_name {
            return Err(format!("`{series}` is not a metric name"));
        }
        let fail_if = raw
            .fail_if
            .or(preset.map(|preset| preset.fail_if))
            .ok_or("a metrics check needs `fail_if`, e.g. \"> 0\" (or a `preset`)")?;
        let for_polls = raw
            .for_polls
            .or(preset.map(|preset| preset.for_polls))
            .unwrap_or(1);
        if for_polls == 0 || for_polls > 100 {
            return Err(format!("`for = {for_polls}`: between 1 and 100 polls"));
        }
        for (label, value) in &raw.labels {
            let valid = !label.is_empty()
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !label.starts_with(|c: char| c.is_ascii_digit());
            if !valid {
                return Err(format!("`{label}` is not a label name"));
            }
            crate::scrape::Matcher::parse(label, value)?;
        }
        let change = raw
            .change
            .or(preset.map(|preset| preset.change))
            .unwrap_or(false);
        let stale_after_scrapes = raw
            .stale_after_scrapes
            .unwrap_or(super::DEFAULT_STALE_AFTER_SCRAPES);
        if stale_after_scrapes == 1 {
            return Err(
                "`stale_after_scrapes = 1`: a value read once has not stayed; write 2 or more, \
                 or 0 to never report"
                    .to_owned(),
            );
        }
        Ok(MetricsSettings {
            url: raw.url,
            preset: preset.map(|preset| preset.name),
            series,
            labels: raw.labels,
            fail_if,
            change,
            for_polls,
            stale_after_scrapes,
            missing: raw
                .missing
                .unwrap_or(if change { Missing::Pass } else { Missing::Fail }),
        })
    }
}

/// `tcp`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcpSettings {
    /// `host:port`.
    pub target: String,
    /// Bytes the server must send first (e.g. `SSH-`).
    #[serde(default)]
    pub banner: Option<String>,
}

/// `http`: another service's endpoint.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpSettings {
    /// Absolute `http://` or `https://` URL.
    pub url: Secret,
    /// Statuses that pass (default 200-299).
    #[serde(default)]
    pub expect_status: Option<StatusRange>,
    /// Text the body must contain.
    #[serde(default)]
    pub body_contains: Option<String>,
}

/// A backend reached by URL (`postgres://`, `mysql://`, `redis://`, `amqp://`, `nats://`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UrlSettings {
    /// The connection URL (`${NAME}` reads an environment variable).
    pub url: Secret,
}

/// `postgres`: the server answers on the agent's own connection, or runs `query` there.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostgresSettings {
    /// The connection URL (`${NAME}` reads an environment variable).
    pub url: Secret,
    /// A query to run instead of the protocol's bare round trip, e.g. `SELECT 1 FROM orders
    /// LIMIT 1`: it fails (as a timeout) when a lock blocks what the app reads. The server
    /// cuts it just before the poll's timeout.
    #[serde(default)]
    pub query: Option<String>,
}

/// `mqtt`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MqttSettings {
    /// `host:port` of the broker.
    pub target: String,
    /// Client id (default `probity-agent-<service>`).
    #[serde(default)]
    pub client_id: Option<String>,
    /// Fail when nothing came from the broker for this long.
    #[serde(default)]
    pub max_silence: Option<Dur>,
}

/// `dns`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DnsSettings {
    /// The name to resolve, with a port (`db.internal:5432`) or without.
    pub host: String,
    /// Fewest addresses that pass (default 1).
    #[serde(default, deserialize_with = "address_count")]
    pub min_addresses: Option<usize>,
}

/// Most addresses a `dns` check may require: far more than any DNS answer holds.
pub(super) const MAX_ADDRESSES: usize = 1000;

fn address_count<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<usize>, D::Error> {
    let count = u64::deserialize(deserializer)?;
    if count == 0 || count > MAX_ADDRESSES as u64 {
        return Err(de::Error::custom(format!(
            "min_addresses = {count}: between 1 and {MAX_ADDRESSES} (a name that must resolve \
             to no address checks nothing)"
        )));
    }
    Ok(Some(count as usize))
}

fn percent<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<f64>, D::Error> {
    let percent = f64::deserialize(deserializer)?;
    if !(percent > 0.0 && percent < 100.0) {
        return Err(de::Error::custom(format!(
            "`{percent}` is not a percentage the check can mean: write a number above 0 and \
             below 100 (10 for 10 %)"
        )));
    }
    Ok(Some(percent))
}

/// Most bytes a `disk` check may require free: more than any filesystem holds (1 EiB).
pub(super) const MAX_FREE_BYTES: u64 = 1 << 60;

fn byte_count<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    let bytes = u64::deserialize(deserializer)?;
    if bytes == 0 || bytes > MAX_FREE_BYTES {
        return Err(de::Error::custom(format!(
            "min_free_bytes = {bytes}: between 1 and {MAX_FREE_BYTES} (1 EiB)"
        )));
    }
    Ok(Some(bytes))
}

/// `disk`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskSettings {
    /// A path on the filesystem.
    pub path: String,
    /// Least free space, in percent (above 0, below 100).
    #[serde(default, deserialize_with = "percent")]
    pub min_free_percent: Option<f64>,
    /// Least free space, in bytes (at most 1 EiB).
    #[serde(default, deserialize_with = "byte_count")]
    pub min_free_bytes: Option<u64>,
    /// Least free inodes, in percent (above 0, below 100).
    #[serde(default, deserialize_with = "percent")]
    pub min_free_inodes_percent: Option<f64>,
}

/// `jwks`: the agent fetches the document and judges the age of the keys it holds.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwksSettings {
    /// The JWKS document's URL.
    pub url: Secret,
    /// Oldest the cached keys may be.
    pub max_age: Dur,
    /// How often to fetch the document (default a fifth of `max_age`).
    #[serde(default)]
    pub refresh_every: Option<Dur>,
}

/// `grpc_health`: another server's `grpc.health.v1`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrpcHealthSettings {
    /// `host:port` (plaintext HTTP/2).
    pub target: String,
    /// The service name asked about (default `""`: the server as a whole).
    #[serde(default)]
    pub service: Option<String>,
}

/// `tls_certificate`: how long an endpoint's certificates stay valid.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsCertificateSettings {
    /// `host:port`.
    pub target: String,
    /// The name the certificate must be valid for (default the target's host).
    #[serde(default)]
    pub server_name: Option<String>,
    /// A PEM file of extra trusted certificate authorities.
    #[serde(default)]
    pub root_certificate: Option<String>,
    /// Judge the dates only, whoever issued the certificate.
    #[serde(default)]
    pub any_issuer: bool,
    /// Fail from this long before `notAfter` (default 7 days).
    #[serde(default)]
    pub fail_within: Option<Margin>,
    /// Warn from this long before `notAfter` (default 30 days).
    #[serde(default)]
    pub warn_within: Option<Margin>,
}

/// A certificate's margin before `notAfter`: a duration in days (`7d`, `30d`, `36h`), at most a
/// year; unlike the other durations it is not capped at a day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Margin(pub std::time::Duration);

/// A margin as written: whole days (`7d`), or a duration in the grammar every other setting
/// uses ([`probity_contract::duration::parse`]: `36h`, `90m`).
fn parse_margin(text: &str) -> Option<std::time::Duration> {
    if let Some(days) = text.strip_suffix('d') {
        let days: u64 = days.parse().ok()?;
        return std::time::Duration::from_secs(86_400).checked_mul(u32::try_from(days).ok()?);
    }
    probity_contract::duration::parse(text).ok()
}

impl<'de> Deserialize<'de> for Margin {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        let margin = parse_margin(text.trim()).ok_or_else(|| {
            de::Error::custom(format!(
                "`{text}` is not a duration: write e.g. 7d, 30d, 36h"
            ))
        })?;
        if margin > std::time::Duration::from_secs(366 * 86_400) {
            return Err(de::Error::custom(format!(
                "`{text}` is longer than a year: certificates are renewed well before that"
            )));
        }
        Ok(Margin(margin))
    }
}

/// A backend reached at `host:port` (`memcached`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSettings {
    /// `host:port`.
    pub target: String,
}

/// A liveness condition from the configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct LivenessEntry {
    /// Time between observations.
    pub interval: Option<Dur>,
    /// Longest one observation may take.
    pub timeout: Option<Dur>,
    /// Time without a sign of life after which liveness fails.
    pub max_silence: Option<Dur>,
    /// Longest a silence blocked on a dependency counts as a wait (default 2 min).
    pub max_wait: Option<Dur>,
    /// What it observes.
    pub kind: LivenessKind,
}

/// What a liveness condition observes. All of them are inside the app's process.
#[derive(Debug, Clone, PartialEq)]
pub enum LivenessKind {
    /// The event-loop lag the app exports, and whether it can answer a scrape at all.
    EventLoopLag(EventLoopLagSettings),
    /// A file the app touches while it makes progress.
    HeartbeatFile(HeartbeatFileSettings),
    /// The app's own liveness endpoint, which checks nothing outside the process.
    AppLiveness(AppLivenessSettings),
}

/// The liveness kinds, as keys.
pub const LIVENESS_KINDS: &[&str] = &["event_loop_lag", "heartbeat_file", "app_liveness"];

impl LivenessKind {
    /// The key naming the kind.
    pub fn key(&self) -> &'static str {
        match self {
            LivenessKind::EventLoopLag(_) => "event_loop_lag",
            LivenessKind::HeartbeatFile(_) => "heartbeat_file",
            LivenessKind::AppLiveness(_) => "app_liveness",
        }
    }
}

/// `event_loop_lag`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventLoopLagSettings {
    /// The exposition's URL: absolute, or a path on `app.url`.
    pub url: Secret,
    /// The series (default `nodejs_eventloop_lag_seconds`, prom-client's), in seconds.
    #[serde(default)]
    pub series: Option<String>,
    /// Largest lag that counts as alive (default 5s).
    #[serde(default)]
    pub max: Option<Dur>,
}

/// `heartbeat_file`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeartbeatFileSettings {
    /// The file the app touches.
    pub path: String,
    /// Oldest its modification time may be.
    pub max_age: Dur,
}

/// `app_liveness`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppLivenessSettings {
    /// Absolute, or a path on `app.url` (`/livez`).
    pub url: Secret,
    /// Statuses that count as alive (default 200-299).
    #[serde(default)]
    pub expect_status: Option<StatusRange>,
}

fn unknown_key<E: de::Error>(key: &Key, what: &str, expected: &[&[&str]]) -> E {
    let all: Vec<&str> = expected
        .iter()
        .flat_map(|keys| keys.iter().copied())
        .collect();
    key.error(format!(
        "unknown key `{}` in {what}; expected one of: {}",
        key.name,
        all.join(", ")
    ))
}

fn set_once<'de, A: MapAccess<'de>, T: Deserialize<'de>>(
    slot: &mut Option<T>,
    key: &Key,
    map: &mut A,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(key.error(format!("key `{}` is given twice", key.name)));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

impl<'de> Deserialize<'de> for ReadinessEntry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntryVisitor;
        impl<'de> Visitor<'de> for EntryVisitor {
            type Value = ReadinessEntry;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a readiness check: a table with one check kind and its policy")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ReadinessEntry, A::Error> {
                let mut policy = Policy::default();
                let mut kind: Option<ReadinessKind> = None;
                while let Some(key) = map.next_key::<Key>()? {
                    match key.name.as_str() {
                        "tier" => set_once(&mut policy.tier, &key, &mut map)?,
                        "interval" => set_once(&mut policy.interval, &key, &mut map)?,
                        "timeout" => set_once(&mut policy.timeout, &key, &mut map)?,
                        "jitter" => set_once(&mut policy.jitter, &key, &mut map)?,
                        "rise" => set_once(&mut policy.rise, &key, &mut map)?,
                        "fall" => set_once(&mut policy.fall, &key, &mut map)?,
                        "staleness" => set_once(&mut policy.staleness, &key, &mut map)?,
                        "fail_open_for" => set_once(&mut policy.fail_open_for, &key, &mut map)?,
                        "boot_requires_rise" => {
                            set_once(&mut policy.boot_requires_rise, &key, &mut map)?
                        }
                        "fallback" => set_once(&mut policy.fallback, &key, &mut map)?,
                        name if READINESS_KINDS.contains(&name) => {
                            if let Some(first) = &kind {
                                return Err(key.error(format!(
                                    "a check has one kind, and this one already is `{}`: \
                                     put `{name}` in a check of its own",
                                    first.key()
                                )));
                            }
                            kind = Some(ReadinessKind::read(name, &mut map)?);
                        }
                        name if LIVENESS_KINDS.contains(&name) => {
                            return Err(key.error(format!(
                                "`{name}` is a liveness condition: put it under [liveness]"
                            )));
                        }
                        _ => {
                            return Err(unknown_key(
                                &key,
                                "a readiness check",
                                &[POLICY_KEYS, READINESS_KINDS],
                            ));
                        }
                    }
                }
                let Some(kind) = kind else {
                    return Err(entry_error(format!(
                        "a readiness check needs a check kind, one of: {}",
                        READINESS_KINDS.join(", ")
                    )));
                };
                Ok(ReadinessEntry { policy, kind })
            }
        }
        deserializer.deserialize_map(EntryVisitor)
    }
}

/// Why each readiness kind is refused under liveness: a liveness failure restarts the app, so
/// a check of anything outside its process turns someone else's outage into a restart storm.
fn refused_in_liveness(kind: &str) -> String {
    let what = match kind {
        "app" => "`app` polls the app's health endpoint, which may check its dependencies; \
                  for the app's own liveness endpoint (one that checks nothing outside the \
                  process) use `app_liveness`"
            .to_owned(),
        "metrics" => "a `metrics` series can measure anything, a pool or a dependency \
                      included; liveness takes `event_loop_lag` for a runtime stall"
            .to_owned(),
        "disk" => "`disk` judges a filesystem, which a restart does not free".to_owned(),
        "tls_certificate" => "`tls_certificate` judges an endpoint's certificate, which a \
                              restart does not renew"
            .to_owned(),
        "jwks" => "`jwks` judges keys fetched from an identity provider".to_owned(),
        other => format!("`{other}` checks a dependency"),
    };
    format!(
        "{what}. A liveness failure restarts the app, and a restart does not fix someone \
         else's outage: during a shared outage every replica would be restarted at once. \
         Put it under [readiness]; liveness takes only {}",
        LIVENESS_KINDS.join(", ")
    )
}

const LIVENESS_POLICY_KEYS: &[&str] = &["interval", "timeout", "max_silence", "max_wait"];

impl<'de> Deserialize<'de> for LivenessEntry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntryVisitor;
        impl<'de> Visitor<'de> for EntryVisitor {
            type Value = LivenessEntry;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a liveness condition: a table with one condition kind")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LivenessEntry, A::Error> {
                let mut interval = None;
                let mut timeout = None;
                let mut max_silence = None;
                let mut max_wait = None;
                let mut kind: Option<LivenessKind> = None;
                while let Some(key) = map.next_key::<Key>()? {
                    match key.name.as_str() {
                        "interval" => set_once(&mut interval, &key, &mut map)?,
                        "timeout" => set_once(&mut timeout, &key, &mut map)?,
                        "max_silence" => set_once(&mut max_silence, &key, &mut map)?,
                        "max_wait" => set_once(&mut max_wait, &key, &mut map)?,
                        name if LIVENESS_KINDS.contains(&name) => {
                            if let Some(first) = &kind {
                                return Err(key.error(format!(
                                    "a condition has one kind, and this one already is `{}`: \
                                     put `{name}` in a condition of its own",
                                    first.key()
                                )));
                            }
                            kind = Some(match name {
                                "event_loop_lag" => LivenessKind::EventLoopLag(map.next_value()?),
                                "heartbeat_file" => LivenessKind::HeartbeatFile(map.next_value()?),
                                _ => LivenessKind::AppLiveness(map.next_value()?),
                            });
                        }
                        name if READINESS_KINDS.contains(&name) => {
                            return Err(key.error(format!(
                                "`{name}` is refused under liveness: {}",
                                refused_in_liveness(name)
                            )));
                        }
                        "tier" | "rise" | "fall" | "staleness" | "fail_open_for" | "jitter"
                        | "boot_requires_rise" | "fallback" => {
                            return Err(key.error(format!(
                                "`{}` is a readiness setting; a liveness condition takes {}",
                                key.name,
                                LIVENESS_POLICY_KEYS.join(", ")
                            )));
                        }
                        _ => {
                            return Err(unknown_key(
                                &key,
                                "a liveness condition",
                                &[LIVENESS_POLICY_KEYS, LIVENESS_KINDS],
                            ));
                        }
                    }
                }
                let Some(kind) = kind else {
                    return Err(entry_error(format!(
                        "a liveness condition needs a kind, one of: {}",
                        LIVENESS_KINDS.join(", ")
                    )));
                };
                Ok(LivenessEntry {
                    interval,
                    timeout,
                    max_silence,
                    max_wait,
                    kind,
                })
            }
        }
        deserializer.deserialize_map(EntryVisitor)
    }
}

/// Named entries in the order the file gives them (the order probes list them in).
#[derive(Debug, Clone, PartialEq)]
pub struct Named<T>(pub Vec<(String, T)>);

impl<T> Default for Named<T> {
    fn default() -> Self {
        Named(Vec::new())
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Named<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NamedVisitor<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for NamedVisitor<T> {
            type Value = Named<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table of named entries")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Named<T>, A::Error> {
                let mut entries: Vec<(String, T)> = Vec::new();
                while let Some(key) = map.next_key::<Key>()? {
                    let name = key.name.clone();
                    if entries.iter().any(|(known, _)| *known == name) {
                        return Err(key.error(format!("`{name}` is named twice")));
                    }
                    if let Err(message) = crate::adapter::validate_name(&name) {
                        return Err(key.error(message));
                    }
                    if entries.len() >= super::MAX_ENTRIES {
                        return Err(key.error(format!(
                            "more than {} entries in one section",
                            super::MAX_ENTRIES
                        )));
                    }
                    key.enter();
                    let entry = map.next_value()?;
                    entries.push((name, entry));
                }
                Ok(Named(entries))
            }
        }
        deserializer.deserialize_map(NamedVisitor(std::marker::PhantomData))
    }
}
