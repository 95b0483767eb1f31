//! What routes requests to the pods, as written under `routing:` (`kind:` picks the model)
//! and checked: a Kubernetes Service, HAProxy, Envoy, an AWS ALB or a consistent-hash
//! balancer.

use super::container::Handler;
use super::read::{describe_value, from_value_at, names};
use super::{Checked, at_least_one, list_or_none, positive};
use crate::error::Invalid;
use crate::time::{Millis, Span};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// The most points a consistent-hash ring may hold (`virtual_nodes × replicas`).
pub const MAX_RING_POINTS: u64 = 10_000_000;

const KINDS: [&str; 5] = [
    "kubernetes-service",
    "haproxy",
    "envoy",
    "alb",
    "consistent-hash",
];

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServiceFile {
    #[serde(default = "default_propagation")]
    propagation: Span,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct HaproxyFile {
    check_path: String,
    #[serde(default = "default_haproxy_inter")]
    inter: Span,
    #[serde(default)]
    fastinter: Option<Span>,
    #[serde(default)]
    downinter: Option<Span>,
    #[serde(default = "default_haproxy_rise")]
    rise: u32,
    #[serde(default = "default_haproxy_fall")]
    fall: u32,
    #[serde(default)]
    timeout_check: Option<Span>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct EnvoyFile {
    check_path: String,
    interval: Span,
    timeout: Span,
    unhealthy_threshold: u32,
    healthy_threshold: u32,
    #[serde(default = "default_panic")]
    panic_threshold: f64,
    #[serde(default)]
    outlier_detection: Option<OutlierFile>,
    #[serde(default)]
    hosts: Option<Membership>,
    #[serde(default = "default_propagation")]
    propagation: Span,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct AlbFile {
    #[serde(default = "default_alb_path")]
    check_path: String,
    #[serde(default = "default_alb_interval")]
    interval: Span,
    #[serde(default = "default_alb_timeout")]
    timeout: Span,
    #[serde(default = "default_alb_healthy")]
    healthy_threshold: u32,
    #[serde(default = "default_alb_unhealthy")]
    unhealthy_threshold: u32,
    #[serde(default = "default_nodes")]
    nodes: u32,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConsistentHashFile {
    #[serde(default = "default_vnodes")]
    virtual_nodes: u32,
    #[serde(default)]
    membership: Membership,
    #[serde(default = "default_propagation")]
    propagation: Span,
}

fn default_propagation() -> Span {
    Span::secs(1)
}
fn default_haproxy_inter() -> Span {
    Span::secs(2)
}
fn default_haproxy_rise() -> u32 {
    2
}
fn default_haproxy_fall() -> u32 {
    3
}
fn default_panic() -> f64 {
    50.0
}
fn default_alb_path() -> String {
    "/".into()
}
fn default_alb_interval() -> Span {
    Span::secs(30)
}
fn default_alb_timeout() -> Span {
    Span::secs(5)
}
fn default_alb_healthy() -> u32 {
    5
}
fn default_alb_unhealthy() -> u32 {
    2
}
fn default_nodes() -> u32 {
    1
}
fn default_vnodes() -> u32 {
    100
}

/// Who decides which pods a consistent-hash balancer keeps on its ring.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Membership {
    /// The ring follows the Service's ready endpoints (readiness probes matter).
    #[default]
    Endpoints,
    /// Every pod stays on the ring whatever its health (no health signal reaches the balancer).
    Static,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct OutlierFile {
    #[serde(default = "default_consecutive_5xx")]
    consecutive_5xx: u32,
    #[serde(default = "default_base_ejection")]
    base_ejection_time: Span,
    #[serde(default = "default_max_ejection")]
    max_ejection_time: Span,
    #[serde(default = "default_max_ejection_percent")]
    max_ejection_percent: f64,
    #[serde(default)]
    success_rate: bool,
    #[serde(default = "yes")]
    successful_active_health_check_uneject_host: bool,
    #[serde(default = "default_outlier_interval")]
    interval: Span,
    #[serde(default = "default_success_rate_minimum_hosts")]
    success_rate_minimum_hosts: u32,
    #[serde(default = "default_success_rate_request_volume")]
    success_rate_request_volume: u32,
    #[serde(default = "default_success_rate_stdev_factor")]
    success_rate_stdev_factor: u32,
}

fn yes() -> bool {
    true
}
fn default_outlier_interval() -> Span {
    Span::secs(10)
}
fn default_success_rate_minimum_hosts() -> u32 {
    5
}
fn default_success_rate_request_volume() -> u32 {
    100
}
fn default_success_rate_stdev_factor() -> u32 {
    1900
}

fn default_consecutive_5xx() -> u32 {
    5
}
fn default_base_ejection() -> Span {
    Span::secs(30)
}
fn default_max_ejection() -> Span {
    Span::secs(300)
}
fn default_max_ejection_percent() -> f64 {
    10.0
}

/// What routes requests to pods.
#[derive(Debug, Clone)]
pub enum Routing {
    /// A ClusterIP Service through kube-proxy.
    KubernetesService {
        /// Time from a pod's readiness change to kube-proxy applying it.
        propagation: Millis,
    },
    /// HAProxy with `check` on every server.
    Haproxy(HaproxySettings),
    /// Envoy with active health checking.
    Envoy(EnvoySettings),
    /// An AWS Application Load Balancer target group.
    Alb(AlbSettings),
    /// Consistent hashing by user over a ring of pods.
    ConsistentHash {
        /// Points per pod on the ring.
        virtual_nodes: u32,
        /// What decides ring membership.
        membership: Membership,
        /// Endpoint propagation delay when membership follows endpoints.
        propagation: Millis,
    },
}

/// HAProxy's check settings.
#[derive(Debug, Clone, Copy)]
pub struct HaproxySettings {
    /// The endpoint the check calls.
    pub check: Handler,
    /// `inter`.
    pub inter: Millis,
    /// `fastinter`.
    pub fastinter: Millis,
    /// `downinter`.
    pub downinter: Millis,
    /// `rise`.
    pub rise: u32,
    /// `fall`.
    pub fall: u32,
    /// The check timeout (`timeout check`, else `inter`).
    pub timeout: Millis,
}

/// Envoy's active health checking, panic threshold and outlier detection.
#[derive(Debug, Clone, Copy)]
pub struct EnvoySettings {
    /// The endpoint the health check calls.
    pub check: Handler,
    /// `interval`.
    pub interval: Millis,
    /// `timeout`.
    pub timeout: Millis,
    /// `unhealthy_threshold`.
    pub unhealthy_threshold: u32,
    /// `healthy_threshold`.
    pub healthy_threshold: u32,
    /// `healthy_panic_threshold`, in percent.
    pub panic_threshold: f64,
    /// Outlier detection, when configured.
    pub outlier: Option<Outlier>,
    /// Where Envoy's hosts come from: every pod (`static`, the default), or the Service's
    /// ready endpoints through EDS, as in a service mesh (`endpoints`).
    pub hosts: Membership,
    /// With `hosts: endpoints`, the delay from a pod's readiness to Envoy's host set.
    pub propagation: Millis,
}

/// An ALB target group's health check.
#[derive(Debug, Clone, Copy)]
pub struct AlbSettings {
    /// The health-check path's endpoint.
    pub check: Handler,
    /// `HealthCheckIntervalSeconds`.
    pub interval: Millis,
    /// `HealthCheckTimeoutSeconds`.
    pub timeout: Millis,
    /// `HealthyThresholdCount`.
    pub healthy_threshold: u32,
    /// `UnhealthyThresholdCount`.
    pub unhealthy_threshold: u32,
    /// Load-balancer nodes; each checks every target.
    pub nodes: u32,
}

/// Envoy outlier detection (consecutive 5xx).
#[derive(Debug, Clone, Copy)]
pub struct Outlier {
    /// `consecutive_5xx`.
    pub consecutive_5xx: u32,
    /// `base_ejection_time`.
    pub base_ejection_time: Millis,
    /// `max_ejection_time`.
    pub max_ejection_time: Millis,
    /// `max_ejection_percent`.
    pub max_ejection_percent: f64,
    /// Success-rate ejection, when enabled (`enforcing_success_rate`).
    pub success_rate: Option<SuccessRate>,
    /// Whether a passing active health check ends an ejection at once
    /// (`successful_active_health_check_uneject_host`, true by default).
    pub uneject_on_passing_check: bool,
}

/// Envoy's success-rate outlier detection: at every `interval`, hosts with enough requests
/// whose success rate is more than `stdev_factor / 1000` standard deviations below the mean
/// are ejected (`outlier.rst`, "Success Rate").
#[derive(Debug, Clone, Copy)]
pub struct SuccessRate {
    /// The sweep's interval.
    pub interval: Millis,
    /// Hosts with enough requests needed before any is judged.
    pub minimum_hosts: u32,
    /// Requests a host needs in an interval to be judged.
    pub request_volume: u32,
    /// Standard deviations below the mean, in thousandths.
    pub stdev_factor: u32,
}

impl Routing {
    /// A short name for reports.
    pub fn name(&self) -> &'static str {
        match self {
            Routing::KubernetesService { .. } => "kubernetes-service",
            Routing::Haproxy(_) => "haproxy",
            Routing::Envoy(_) => "envoy",
            Routing::Alb(_) => "alb",
            Routing::ConsistentHash { .. } => "consistent-hash",
        }
    }
}

/// Whether `routing:` as written is a Kubernetes Service (the default).
pub(super) fn is_service(file: Option<&Value>) -> bool {
    match file {
        None => true,
        Some(value) => value
            .get("kind")
            .and_then(Value::as_str)
            .is_some_and(|kind| kind == "kubernetes-service"),
    }
}

/// `routing:` checked, its endpoints resolved against the app's. `replicas` bounds the hash
/// ring's size.
pub(super) fn resolve(
    file: Option<Value>,
    endpoint_index: &BTreeMap<String, usize>,
    replicas: usize,
) -> Checked<Routing> {
    let Some(file) = file else {
        return Ok(Routing::KubernetesService {
            propagation: default_propagation().as_millis(),
        });
    };
    let Value::Object(mut entries) = file else {
        return Err(Invalid::new(
            "routing",
            format!(
                "expected a mapping with `kind:` ({}), found {}",
                names(&KINDS),
                describe_value(&file)
            ),
        ));
    };
    let kind = match entries.remove("kind") {
        None => {
            return Err(Invalid::new(
                "routing.kind",
                format!("missing: say which router, {}", names(&KINDS)),
            ));
        }
        Some(Value::String(kind)) => kind,
        Some(other) => {
            return Err(Invalid::new(
                "routing.kind",
                format!(
                    "expected {}, found {}",
                    names(&KINDS),
                    describe_value(&other)
                ),
            ));
        }
    };
    let rest = Value::Object(entries);
    let check = |path: &str| -> Checked<Handler> {
        endpoint_index
            .get(path)
            .map(|&endpoint| Handler::Http { endpoint })
            .ok_or_else(|| {
                Invalid::new(
                    "routing.check_path",
                    format!(
                        "no endpoint `{path}` in app.endpoints (declared: {})",
                        list_or_none(&endpoint_index.keys().cloned().collect::<Vec<_>>())
                    ),
                )
            })
    };
    Ok(match kind.as_str() {
        "kubernetes-service" => {
            let service: ServiceFile = from_value_at(rest, "routing")?;
            Routing::KubernetesService {
                propagation: service.propagation.as_millis(),
            }
        }
        "haproxy" => {
            let file: HaproxyFile = from_value_at(rest, "routing")?;
            positive(file.inter, "routing.inter")?;
            at_least_one(file.rise, "routing.rise")?;
            at_least_one(file.fall, "routing.fall")?;
            Routing::Haproxy(HaproxySettings {
                check: check(&file.check_path)?,
                inter: file.inter.as_millis(),
                fastinter: file.fastinter.unwrap_or(file.inter).as_millis().max(1),
                downinter: file.downinter.unwrap_or(file.inter).as_millis().max(1),
                rise: file.rise,
                fall: file.fall,
                timeout: file.timeout_check.unwrap_or(file.inter).as_millis().max(1),
            })
        }
        "envoy" => {
            let file: EnvoyFile = from_value_at(rest, "routing")?;
            positive(file.interval, "routing.interval")?;
            positive(file.timeout, "routing.timeout")?;
            at_least_one(file.unhealthy_threshold, "routing.unhealthy_threshold")?;
            at_least_one(file.healthy_threshold, "routing.healthy_threshold")?;
            if !(0.0..=100.0).contains(&file.panic_threshold) {
                return Err(Invalid::new(
                    "routing.panic_threshold",
                    "a percentage between 0 and 100",
                ));
            }
            let outlier = match &file.outlier_detection {
                None => None,
                Some(outlier) => {
                    at_least_one(
                        outlier.consecutive_5xx,
                        "routing.outlier_detection.consecutive_5xx",
                    )?;
                    if !(0.0..=100.0).contains(&outlier.max_ejection_percent) {
                        return Err(Invalid::new(
                            "routing.outlier_detection.max_ejection_percent",
                            "a percentage between 0 and 100",
                        ));
                    }
                    positive(outlier.interval, "routing.outlier_detection.interval")?;
                    Some(Outlier {
                        success_rate: outlier.success_rate.then(|| SuccessRate {
                            interval: outlier.interval.as_millis(),
                            minimum_hosts: outlier.success_rate_minimum_hosts.max(1),
                            request_volume: outlier.success_rate_request_volume,
                            stdev_factor: outlier.success_rate_stdev_factor,
                        }),
                        uneject_on_passing_check: outlier
                            .successful_active_health_check_uneject_host,
                        consecutive_5xx: outlier.consecutive_5xx,
                        base_ejection_time: outlier.base_ejection_time.as_millis(),
                        max_ejection_time: outlier
                            .max_ejection_time
                            .as_millis()
                            .max(outlier.base_ejection_time.as_millis()),
                        max_ejection_percent: outlier.max_ejection_percent,
                    })
                }
            };
            Routing::Envoy(EnvoySettings {
                check: check(&file.check_path)?,
                interval: file.interval.as_millis(),
                timeout: file.timeout.as_millis(),
                unhealthy_threshold: file.unhealthy_threshold,
                healthy_threshold: file.healthy_threshold,
                panic_threshold: file.panic_threshold,
                outlier,
                hosts: file.hosts.unwrap_or(Membership::Static),
                propagation: file.propagation.as_millis(),
            })
        }
        "alb" => {
            let file: AlbFile = from_value_at(rest, "routing")?;
            let interval = file.interval.as_millis();
            if !(5_000..=300_000).contains(&interval) || !interval.is_multiple_of(1000) {
                return Err(Invalid::new(
                    "routing.interval",
                    "AWS accepts 5 to 300 whole seconds",
                ));
            }
            let timeout = file.timeout.as_millis();
            if !(2_000..=120_000).contains(&timeout) || !timeout.is_multiple_of(1000) {
                return Err(Invalid::new(
                    "routing.timeout",
                    "AWS accepts 2 to 120 whole seconds",
                ));
            }
            for (value, field) in [
                (file.healthy_threshold, "routing.healthy_threshold"),
                (file.unhealthy_threshold, "routing.unhealthy_threshold"),
            ] {
                if !(2..=10).contains(&value) {
                    return Err(Invalid::new(field, "AWS accepts 2 to 10"));
                }
            }
            at_least_one(file.nodes, "routing.nodes")?;
            Routing::Alb(AlbSettings {
                check: check(&file.check_path)?,
                interval,
                timeout,
                healthy_threshold: file.healthy_threshold,
                unhealthy_threshold: file.unhealthy_threshold,
                nodes: file.nodes,
            })
        }
        "consistent-hash" => {
            let file: ConsistentHashFile = from_value_at(rest, "routing")?;
            if file.virtual_nodes == 0 || file.virtual_nodes > 10_000 {
                return Err(Invalid::new(
                    "routing.virtual_nodes",
                    "must be between 1 and 10000",
                ));
            }
            let points = u64::from(file.virtual_nodes) * replicas as u64;
            if points > MAX_RING_POINTS {
                return Err(Invalid::new(
                    "routing.virtual_nodes",
                    format!(
                        "{} virtual nodes × {replicas} pods is {points} ring points, more than the {MAX_RING_POINTS} the model holds",
                        file.virtual_nodes
                    ),
                ));
            }
            Routing::ConsistentHash {
                virtual_nodes: file.virtual_nodes,
                membership: file.membership,
                propagation: file.propagation.as_millis(),
            }
        }
        other => {
            return Err(Invalid::new(
                "routing.kind",
                format!("unknown router `{other}`: expected {}", names(&KINDS)),
            ));
        }
    })
}
