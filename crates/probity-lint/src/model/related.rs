//! The objects read beside workloads — Services, PodDisruptionBudgets, autoscalers — and the
//! label selectors that tie them to a workload.

use super::field::{Problem, read_bool, read_int, read_labels};
use crate::yaml::{Node, Position, Value};

/// A label selector (`matchLabels` and `matchExpressions`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Selector {
    pub(crate) labels: Vec<(String, String)>,
    pub(crate) expressions: Vec<Expression>,
}

#[derive(Debug, Clone)]
pub(crate) struct Expression {
    pub(crate) key: String,
    pub(crate) operator: String,
    pub(crate) values: Vec<String>,
}

impl Selector {
    pub(crate) fn matches(&self, labels: &[(String, String)]) -> bool {
        let value = |key: &str| {
            labels
                .iter()
                .find(|(label, _)| label == key)
                .map(|(_, value)| value.as_str())
        };
        self.labels
            .iter()
            .all(|(key, expected)| value(key) == Some(expected.as_str()))
            && self.expressions.iter().all(|expression| {
                let actual = value(&expression.key);
                match expression.operator.as_str() {
                    "In" => actual.is_some_and(|v| expression.values.iter().any(|e| e == v)),
                    "NotIn" => !actual.is_some_and(|v| expression.values.iter().any(|e| e == v)),
                    "Exists" => actual.is_some(),
                    "DoesNotExist" => actual.is_none(),
                    _ => false,
                }
            })
    }
}

#[derive(Debug)]
pub(crate) struct Service {
    /// `None` when the Service has no selector (its endpoints are managed by hand).
    pub(crate) selector: Option<Vec<(String, String)>>,
    pub(crate) publish_not_ready: Option<Position>,
    /// Every port the Service exposes serves metrics (see [`is_metrics_port`]).
    pub(crate) metrics_only: bool,
}

/// Whether a Service port, by its name or its target port's name, serves metrics for a scraper:
/// `metrics`, `http-metrics`, `metricshttps`, `prometheus`, `tcp-prometheus-servicemonitor`.
/// Prometheus' Kubernetes discovery scrapes every endpoint, ready or not (its `endpoints` and
/// `endpointslice` roles label each target with `__meta_kubernetes_endpoint_ready`), so a
/// readiness probe changes nothing for such a Service.
pub(super) fn is_metrics_port(port: &Node) -> bool {
    ["name", "targetPort"].iter().any(|key| {
        port.get(key).and_then(Node::as_str).is_some_and(|name| {
            let name = name.to_ascii_lowercase();
            name.contains("metrics") || name.contains("prometheus")
        })
    })
}

/// `minAvailable` or `maxUnavailable`: a count or a percentage.
#[derive(Debug, Clone)]
pub(crate) struct Amount {
    pub(crate) value: AmountValue,
    pub(crate) position: Position,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum AmountValue {
    Count(i64),
    Percent(i64),
}

impl AmountValue {
    /// Resolves against `replicas`, rounding up as the disruption controller does for
    /// `minAvailable` (`intstr.GetScaledValueFromIntOrPercent(…, true)`), and for
    /// `maxUnavailable` too.
    pub(crate) fn resolve(self, replicas: i64) -> i64 {
        match self {
            AmountValue::Count(count) => count,
            AmountValue::Percent(percent) => (percent * replicas + 99) / 100,
        }
    }
}

impl std::fmt::Display for AmountValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AmountValue::Count(count) => write!(f, "{count}"),
            AmountValue::Percent(percent) => write!(f, "{percent}%"),
        }
    }
}

#[derive(Debug)]
pub(crate) struct Budget {
    /// `None`: a null selector, which selects nothing; an empty selector selects every pod.
    pub(crate) selector: Option<Selector>,
    pub(crate) min_available: Option<Amount>,
    pub(crate) max_unavailable: Option<Amount>,
    /// `spec.unhealthyPodEvictionPolicy` as written, and where.
    pub(crate) unhealthy_pod_eviction_policy: Option<(String, Position)>,
}

#[derive(Debug)]
pub(crate) struct Autoscaler {
    pub(crate) target_kind: String,
    pub(crate) target_name: String,
    pub(crate) min_replicas: Option<i64>,
    pub(crate) max_replicas: Option<(i64, Position)>,
}

pub(super) fn read_service(spec: Option<&Node>, problems: &mut Vec<Problem>) -> Service {
    let selector = spec
        .and_then(|spec| spec.get("selector"))
        .map(|node| read_labels(Some(node)))
        .filter(|labels| !labels.is_empty());
    let publish_not_ready = spec.and_then(|spec| {
        let entry = spec.entry("publishNotReadyAddresses")?;
        (read_bool(spec, "publishNotReadyAddresses", problems) == Some(true))
            .then_some(entry.key_position)
    });
    let metrics_only = spec
        .and_then(|spec| spec.get("ports"))
        .and_then(Node::as_seq)
        .is_some_and(|ports| !ports.is_empty() && ports.iter().all(is_metrics_port));
    Service {
        selector,
        publish_not_ready,
        metrics_only,
    }
}

pub(super) fn read_selector(node: Option<&Node>) -> Option<Selector> {
    let node = node?;
    node.as_map()?;
    Some(Selector {
        labels: read_labels(node.get("matchLabels")),
        expressions: node
            .get("matchExpressions")
            .and_then(Node::as_seq)
            .map(|items| {
                items
                    .iter()
                    .map(|item| Expression {
                        key: item
                            .get("key")
                            .and_then(Node::scalar_text)
                            .unwrap_or_default(),
                        operator: item
                            .get("operator")
                            .and_then(Node::scalar_text)
                            .unwrap_or_default(),
                        values: item
                            .get("values")
                            .and_then(Node::as_seq)
                            .map(|values| values.iter().filter_map(Node::scalar_text).collect())
                            .unwrap_or_default(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
    })
}

pub(super) fn read_amount(spec: &Node, key: &str, problems: &mut Vec<Problem>) -> Option<Amount> {
    let node = spec.get(key)?;
    let value = match &node.value {
        Value::Int(count) => AmountValue::Count(*count),
        Value::String(text) => match text
            .strip_suffix('%')
            .and_then(|number| number.parse().ok())
        {
            Some(percent) => AmountValue::Percent(percent),
            None => {
                problems.push(Problem {
                    position: node.position,
                    container: None,
                    message: format!("`{key}` must be an integer or a percentage such as `50%`"),
                });
                return None;
            }
        },
        _ => {
            problems.push(Problem {
                position: node.position,
                container: None,
                message: format!(
                    "`{key}` is {}, not a count or a percentage",
                    node.describe()
                ),
            });
            return None;
        }
    };
    Some(Amount {
        value,
        position: node.position,
    })
}

pub(super) fn read_budget(spec: Option<&Node>, problems: &mut Vec<Problem>) -> Budget {
    let Some(spec) = spec else {
        return Budget {
            selector: None,
            min_available: None,
            max_unavailable: None,
            unhealthy_pod_eviction_policy: None,
        };
    };
    let policy = spec.get("unhealthyPodEvictionPolicy").and_then(|node| {
        let text = node.as_str().map(str::to_owned);
        // The API server accepts these two values only (`ValidatePodDisruptionBudgetSpec`).
        match text.as_deref() {
            Some("IfHealthyBudget" | "AlwaysAllow") => {}
            _ => problems.push(Problem {
                position: node.position,
                container: None,
                message: format!(
                    "`unhealthyPodEvictionPolicy` is {}: the API server accepts `IfHealthyBudget` \
                     or `AlwaysAllow`",
                    node.describe()
                ),
            }),
        }
        text.map(|text| (text, node.position))
    });
    Budget {
        selector: read_selector(spec.get("selector")),
        min_available: read_amount(spec, "minAvailable", problems),
        max_unavailable: read_amount(spec, "maxUnavailable", problems),
        unhealthy_pod_eviction_policy: policy,
    }
}

pub(super) fn read_autoscaler(spec: Option<&Node>, problems: &mut Vec<Problem>) -> Autoscaler {
    let target = spec.and_then(|spec| spec.get("scaleTargetRef"));
    let text = |key: &str| {
        target
            .and_then(|target| target.get(key))
            .and_then(Node::scalar_text)
            .unwrap_or_default()
    };
    Autoscaler {
        target_kind: text("kind"),
        target_name: text("name"),
        min_replicas: spec
            .and_then(|spec| read_int(spec, "minReplicas", problems, None))
            .map(|(count, _)| count),
        max_replicas: spec.and_then(|spec| read_int(spec, "maxReplicas", problems, None)),
    }
}
