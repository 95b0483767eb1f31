//! The container probe as the Kubernetes API has it (`core/v1` `Probe`): what a manifest may
//! say, the defaults the API server fills in, and the validation it applies.
//!
//! [`ProbeSpec`] is the probe as written, field for field, camelCase, unknown fields rejected
//! (a typo such as `periodSecond` is an error, not a silent default). [`ProbeSpec::validate`]
//! applies the API server's rules; [`ProbeSpec::resolve`] validates and fills in the
//! defaults, giving a [`Probe`].
//!
//! Sources: `pkg/apis/core/v1/defaults.go` (`SetDefaults_Probe`, `SetDefaults_HTTPGetAction`),
//! `pkg/apis/core/validation/validation.go` (`validateProbe`, `validateLivenessProbe`,
//! `validateReadinessProbe`, `validateStartupProbe`, `validateHandler`,
//! `validateHTTPGetAction`, `ValidatePortNumOrName`), and
//! `staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go` (`IsValidPortNum`,
//! `IsValidPortName`, `IsHTTPHeaderName`).

use super::Violation;
use crate::probe::ProbeKind;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;
use std::time::Duration;

/// `periodSeconds` when unset or 0 (`SetDefaults_Probe`).
pub const DEFAULT_PERIOD_SECONDS: i64 = 10;
/// `timeoutSeconds` when unset or 0.
pub const DEFAULT_TIMEOUT_SECONDS: i64 = 1;
/// `successThreshold` when unset or 0.
pub const DEFAULT_SUCCESS_THRESHOLD: i64 = 1;
/// `failureThreshold` when unset or 0.
pub const DEFAULT_FAILURE_THRESHOLD: i64 = 3;
/// `initialDelaySeconds` when unset.
pub const DEFAULT_INITIAL_DELAY_SECONDS: i64 = 0;
/// `httpGet.path` when unset or empty (`SetDefaults_HTTPGetAction`).
pub const DEFAULT_HTTP_PATH: &str = "/";
/// `httpGet.scheme` when unset or empty (`SetDefaults_HTTPGetAction`).
pub const DEFAULT_HTTP_SCHEME: &str = "HTTP";

/// The API server's message for a negative count or number of seconds
/// (`apimachinery/pkg/api/validation` `IsNegativeErrorMsg`).
pub(crate) const NEGATIVE: &str = "must be greater than or equal to 0";

/// A probe as written in a container spec.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProbeSpec {
    /// `exec`: run a command in the container; exit code 0 passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec: Option<ExecAction>,
    /// `httpGet`: a GET to the pod; a status in 200..400 passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_get: Option<HttpGetAction>,
    /// `tcpSocket`: a TCP connect; an accepted connection passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_socket: Option<TcpSocketAction>,
    /// `grpc`: `grpc.health.v1.Health/Check`; `SERVING` passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<GrpcAction>,
    /// `initialDelaySeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_delay_seconds: Option<i64>,
    /// `timeoutSeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i64>,
    /// `periodSeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period_seconds: Option<i64>,
    /// `successThreshold`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success_threshold: Option<i64>,
    /// `failureThreshold`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_threshold: Option<i64>,
    /// The probe-level `terminationGracePeriodSeconds`, used when this probe's failure kills
    /// the container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_grace_period_seconds: Option<i64>,
}

/// `exec`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExecAction {
    /// The command and its arguments (no shell unless the command is one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
}

/// `httpGet`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HttpGetAction {
    /// The path, `/` when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The container port, by number or by name. Required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<IntOrString>,
    /// The host to connect to, the pod IP when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// `HTTP` (the default) or `HTTPS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
    /// Extra request headers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_headers: Option<Vec<HttpHeader>>,
}

impl HttpGetAction {
    /// The path the kubelet requests: as written, or [`DEFAULT_HTTP_PATH`] when unset or empty
    /// (`SetDefaults_HTTPGetAction`).
    pub fn path_or_default(&self) -> &str {
        self.path
            .as_deref()
            .filter(|path| !path.is_empty())
            .unwrap_or(DEFAULT_HTTP_PATH)
    }

    /// The scheme as written, or [`DEFAULT_HTTP_SCHEME`] when unset or empty
    /// (`SetDefaults_HTTPGetAction`). Any other text than `HTTP` or `HTTPS` is kept as written,
    /// for [`ProbeSpec::validate`] to reject.
    pub fn scheme_or_default(&self) -> &str {
        self.scheme
            .as_deref()
            .filter(|scheme| !scheme.is_empty())
            .unwrap_or(DEFAULT_HTTP_SCHEME)
    }
}

/// One `httpHeaders` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpHeader {
    /// The header name.
    pub name: String,
    /// Its value.
    pub value: String,
}

/// `tcpSocket`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TcpSocketAction {
    /// The container port, by number or by name. Required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<IntOrString>,
    /// The host to connect to, the pod IP when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// `grpc`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GrpcAction {
    /// The port, a number (gRPC probes take no named ports). Required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i64>,
    /// The service name sent in the health `Check` request; empty when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
}

/// A port given by number or by name (`intstr.IntOrString`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum IntOrString {
    /// A port number.
    Int(i64),
    /// A named container port.
    String(String),
}

impl fmt::Display for IntOrString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IntOrString::Int(number) => write!(f, "{number}"),
            IntOrString::String(name) => write!(f, "`{name}`"),
        }
    }
}

impl Serialize for IntOrString {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            IntOrString::Int(number) => serializer.serialize_i64(*number),
            IntOrString::String(name) => serializer.serialize_str(name),
        }
    }
}

impl<'de> Deserialize<'de> for IntOrString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct PortVisitor;
        impl Visitor<'_> for PortVisitor {
            type Value = IntOrString;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a port number or a port name")
            }
            fn visit_i64<E: de::Error>(self, value: i64) -> Result<IntOrString, E> {
                Ok(IntOrString::Int(value))
            }
            fn visit_u64<E: de::Error>(self, value: u64) -> Result<IntOrString, E> {
                i64::try_from(value)
                    .map(IntOrString::Int)
                    .map_err(|_| E::custom(format!("port {value} is out of range")))
            }
            fn visit_str<E: de::Error>(self, value: &str) -> Result<IntOrString, E> {
                Ok(IntOrString::String(value.to_string()))
            }
        }
        deserializer.deserialize_any(PortVisitor)
    }
}

/// A probe with the API server's defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// What the probe runs.
    pub handler: Handler,
    /// When it runs and how many results count.
    pub timing: ProbeTiming,
    /// The probe-level `terminationGracePeriodSeconds`.
    pub termination_grace_period: Option<Duration>,
}

/// What a probe runs, with `SetDefaults_HTTPGetAction` applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handler {
    /// `exec`.
    Exec {
        /// The command.
        command: Vec<String>,
    },
    /// `httpGet`.
    HttpGet {
        /// The path (`/` by default).
        path: String,
        /// The port.
        port: IntOrString,
        /// The host, when set.
        host: Option<String>,
        /// The scheme.
        scheme: Scheme,
        /// Extra headers.
        headers: Vec<HttpHeader>,
    },
    /// `tcpSocket`.
    TcpSocket {
        /// The port.
        port: IntOrString,
        /// The host, when set.
        host: Option<String>,
    },
    /// `grpc`.
    Grpc {
        /// The port.
        port: u16,
        /// The health service name (empty by default).
        service: String,
    },
}

/// `httpGet.scheme`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `HTTP`.
    Http,
    /// `HTTPS` (the kubelet does not verify the certificate).
    Https,
}

/// A probe's five numbers, defaulted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeTiming {
    /// `initialDelaySeconds`.
    pub initial_delay: Duration,
    /// `periodSeconds`.
    pub period: Duration,
    /// `timeoutSeconds`.
    pub timeout: Duration,
    /// `successThreshold`.
    pub success_threshold: u32,
    /// `failureThreshold`.
    pub failure_threshold: u32,
}

impl Default for ProbeTiming {
    /// Every field at the API server's default.
    fn default() -> Self {
        ProbeTiming::from_spec(&ProbeSpec::default())
    }
}

impl ProbeTiming {
    /// The numbers of `spec` with `SetDefaults_Probe` applied: a missing or zero value takes
    /// its default. A value the API server would reject (negative, or too large for its
    /// 32-bit field) also takes the default here, so a caller that reports violations
    /// separately ([`ProbeSpec::validate`]) can carry on.
    pub fn from_spec(spec: &ProbeSpec) -> Self {
        let seconds = |written: Option<i64>, default: i64| {
            let value = match written {
                Some(value) if (1..=i64::from(i32::MAX)).contains(&value) => value,
                _ => default,
            };
            Duration::from_secs(value.unsigned_abs())
        };
        let count = |written: Option<i64>, default: i64| match written {
            Some(value) if (1..=i64::from(i32::MAX)).contains(&value) => value as u32,
            _ => default as u32,
        };
        ProbeTiming {
            // initialDelaySeconds has no default but 0: zero stays zero.
            initial_delay: seconds(spec.initial_delay_seconds, DEFAULT_INITIAL_DELAY_SECONDS),
            period: seconds(spec.period_seconds, DEFAULT_PERIOD_SECONDS),
            timeout: seconds(spec.timeout_seconds, DEFAULT_TIMEOUT_SECONDS),
            success_threshold: count(spec.success_threshold, DEFAULT_SUCCESS_THRESHOLD),
            failure_threshold: count(spec.failure_threshold, DEFAULT_FAILURE_THRESHOLD),
        }
    }

    /// `failureThreshold × periodSeconds`: how long the probe tolerates a container that
    /// fails every probe, counted from the first failure's tick.
    pub fn failure_window(&self) -> Duration {
        self.period.saturating_mul(self.failure_threshold)
    }

    /// `initialDelaySeconds + failureThreshold × periodSeconds`: the earliest a probe can give
    /// up on a container that never answers (a startup probe's budget for the boot).
    pub fn budget(&self) -> Duration {
        self.initial_delay.saturating_add(self.failure_window())
    }

    /// Whether the timeout is at least the period. Go's ticker then drops ticks while each
    /// probe waits out its timeout, so probes run back to back and detection takes
    /// `failureThreshold × timeoutSeconds` rather than `× periodSeconds`.
    pub fn timeout_reaches_period(&self) -> bool {
        self.timeout >= self.period
    }
}

impl ProbeSpec {
    /// The handler keys present, in the order the API server checks them.
    pub fn handler_keys(&self) -> Vec<&'static str> {
        [
            ("exec", self.exec.is_some()),
            ("httpGet", self.http_get.is_some()),
            ("tcpSocket", self.tcp_socket.is_some()),
            ("grpc", self.grpc.is_some()),
        ]
        .into_iter()
        .filter_map(|(key, present)| present.then_some(key))
        .collect()
    }

    /// Every rule the API server applies to a probe of `kind`, in its order: the handler
    /// (exactly one, each valid), then each number, then the rules for the kind. Fields are
    /// relative to the probe (`httpGet.port`, `successThreshold`).
    pub fn validate(&self, kind: ProbeKind) -> Vec<Violation> {
        let mut violations = Vec::new();
        validate_handler(self, &mut violations);
        for (field, value) in [
            ("initialDelaySeconds", self.initial_delay_seconds),
            ("timeoutSeconds", self.timeout_seconds),
            ("periodSeconds", self.period_seconds),
            ("successThreshold", self.success_threshold),
            ("failureThreshold", self.failure_threshold),
        ] {
            if let Some(violation) = check_int32_nonnegative(field, value) {
                violations.push(violation);
            }
        }
        if let Some(grace) = self.termination_grace_period_seconds {
            if grace <= 0 {
                violations.push(Violation::new(
                    "terminationGracePeriodSeconds",
                    "must be greater than 0",
                ));
            }
            if kind == ProbeKind::Readiness {
                // validateReadinessProbe.
                violations.push(Violation::new(
                    "terminationGracePeriodSeconds",
                    "must not be set for readinessProbes",
                ));
            }
        }
        if kind != ProbeKind::Readiness {
            // validateLivenessProbe and validateStartupProbe check the defaulted value: 0
            // became 1 and passes.
            let success = match self.success_threshold {
                None | Some(0) => DEFAULT_SUCCESS_THRESHOLD,
                Some(value) => value,
            };
            if success != 1 {
                violations.push(Violation::new("successThreshold", "must be 1"));
            }
        }
        violations
    }

    /// Validates the probe for `kind` and applies the defaults; the first violation found is
    /// the error.
    pub fn resolve(&self, kind: ProbeKind) -> Result<Probe, Violation> {
        if let Some(first) = self.validate(kind).into_iter().next() {
            return Err(first);
        }
        let handler = if let Some(exec) = &self.exec {
            Handler::Exec {
                command: exec.command.clone().unwrap_or_default(),
            }
        } else if let Some(http) = &self.http_get {
            Handler::HttpGet {
                path: http
                    .path
                    .clone()
                    .filter(|path| !path.is_empty())
                    .unwrap_or_else(|| DEFAULT_HTTP_PATH.to_string()),
                port: http.port.clone().unwrap_or(IntOrString::Int(0)),
                host: http.host.clone().filter(|host| !host.is_empty()),
                scheme: match http.scheme.as_deref() {
                    Some("HTTPS") => Scheme::Https,
                    _ => Scheme::Http,
                },
                headers: http.http_headers.clone().unwrap_or_default(),
            }
        } else if let Some(tcp) = &self.tcp_socket {
            Handler::TcpSocket {
                port: tcp.port.clone().unwrap_or(IntOrString::Int(0)),
                host: tcp.host.clone().filter(|host| !host.is_empty()),
            }
        } else if let Some(grpc) = &self.grpc {
            Handler::Grpc {
                port: grpc
                    .port
                    .and_then(|port| u16::try_from(port).ok())
                    .unwrap_or(0),
                service: grpc.service.clone().unwrap_or_default(),
            }
        } else {
            // validate_handler reports a probe with no handler.
            return Err(Violation::new("", "must specify a handler type"));
        };
        Ok(Probe {
            handler,
            timing: ProbeTiming::from_spec(self),
            termination_grace_period: self
                .termination_grace_period_seconds
                .map(|seconds| Duration::from_secs(seconds.unsigned_abs())),
        })
    }
}

/// `ValidateNonnegativeField` on an `int32` field; the bound is the decoder's.
fn check_int32_nonnegative(field: &str, value: Option<i64>) -> Option<Violation> {
    match value {
        Some(value) if value < 0 => Some(Violation::new(field, NEGATIVE)),
        Some(value) if value > i64::from(i32::MAX) => Some(Violation::new(
            field,
            format!(
                "{value} does not fit the API's 32-bit field (at most {})",
                i32::MAX
            ),
        )),
        _ => None,
    }
}

/// `validateHandler`: exactly one handler, each valid. A second handler is reported at its
/// own key ("may not specify more than 1 handler type").
fn validate_handler(spec: &ProbeSpec, violations: &mut Vec<Violation>) {
    let keys = spec.handler_keys();
    let Some(first) = keys.first() else {
        violations.push(Violation::new(
            "",
            "must specify a handler type (exec, httpGet, tcpSocket or grpc)",
        ));
        return;
    };
    for extra in &keys[1..] {
        violations.push(Violation::new(
            *extra,
            "may not specify more than 1 handler type",
        ));
    }
    match *first {
        "exec" => {
            let command = spec.exec.as_ref().and_then(|exec| exec.command.as_ref());
            if command.is_none_or(Vec::is_empty) {
                violations.push(Violation::new(
                    "exec.command",
                    "Required value: an exec probe needs a command",
                ));
            }
        }
        "httpGet" => {
            let Some(http) = &spec.http_get else { return };
            validate_port(http.port.as_ref(), "httpGet.port", violations);
            if let Some(scheme) = &http.scheme
                && !scheme.is_empty()
                && scheme != "HTTP"
                && scheme != "HTTPS"
            {
                violations.push(Violation::new(
                    "httpGet.scheme",
                    format!(
                        "Unsupported value: \"{scheme}\": supported values: \"HTTP\", \"HTTPS\""
                    ),
                ));
            }
            for header in http.http_headers.iter().flatten() {
                if header.name.is_empty()
                    || !header
                        .name
                        .bytes()
                        .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
                {
                    violations.push(Violation::new(
                        "httpGet.httpHeaders",
                        format!(
                            "`{}`: a valid HTTP header name consists of letters, digits and '-' (e.g. 'X-Header-Name')",
                            header.name
                        ),
                    ));
                }
            }
        }
        "tcpSocket" => {
            let port = spec.tcp_socket.as_ref().and_then(|tcp| tcp.port.as_ref());
            validate_port(port, "tcpSocket.port", violations);
        }
        _ => {
            let port = spec.grpc.as_ref().and_then(|grpc| grpc.port);
            validate_port(port.map(IntOrString::Int).as_ref(), "grpc.port", violations);
        }
    }
}

/// `ValidatePortNumOrName`: a number in 1..=65535 or a valid port name. A missing port is
/// the zero value, a number out of range.
fn validate_port(port: Option<&IntOrString>, field: &str, violations: &mut Vec<Violation>) {
    let message = match port {
        None => Some("Required value: must be between 1 and 65535, inclusive".to_string()),
        Some(IntOrString::Int(number)) => (!(1..=65535).contains(number))
            .then(|| format!("{number}: must be between 1 and 65535, inclusive")),
        Some(IntOrString::String(name)) => {
            port_name_problem(name).map(|why| format!("`{name}`: {why}"))
        }
    };
    if let Some(message) = message {
        violations.push(Violation::new(field, message));
    }
}

/// `IsValidPortName` (an IANA service name).
fn port_name_problem(name: &str) -> Option<&'static str> {
    if name.len() > 15 {
        return Some("must be no more than 15 characters");
    }
    if name.is_empty()
        || !name
            .bytes()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
    {
        return Some("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
    }
    if !name.bytes().any(|byte| byte.is_ascii_lowercase()) {
        return Some("must contain at least one letter (a-z)");
    }
    if name.contains("--") {
        return Some("must not contain consecutive hyphens");
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Some("must not begin or end with a hyphen");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: &str) -> ProbeSpec {
        serde_json::from_str(json).unwrap()
    }

    fn fields(json: &str, kind: ProbeKind) -> Vec<String> {
        spec(json)
            .validate(kind)
            .into_iter()
            .map(|violation| violation.to_string())
            .collect()
    }

    #[test]
    fn defaults_follow_set_defaults_probe() {
        let probe = spec(r#"{ "tcpSocket": { "port": 8080 } }"#)
            .resolve(ProbeKind::Liveness)
            .unwrap();
        assert_eq!(
            probe.timing,
            ProbeTiming {
                initial_delay: Duration::ZERO,
                period: Duration::from_secs(10),
                timeout: Duration::from_secs(1),
                success_threshold: 1,
                failure_threshold: 3,
            }
        );
        // Zero is defaulted too.
        let zeros = spec(
            r#"{ "tcpSocket": { "port": 1 }, "periodSeconds": 0, "timeoutSeconds": 0,
                 "successThreshold": 0, "failureThreshold": 0, "initialDelaySeconds": 0 }"#,
        );
        assert_eq!(ProbeTiming::from_spec(&zeros), ProbeTiming::default());
        assert_eq!(
            ProbeTiming::default().failure_window(),
            Duration::from_secs(30)
        );
        assert_eq!(ProbeTiming::default().budget(), Duration::from_secs(30));
    }

    #[test]
    fn http_get_defaults_path_and_scheme() {
        let probe = spec(r#"{ "httpGet": { "port": "http" } }"#)
            .resolve(ProbeKind::Readiness)
            .unwrap();
        assert_eq!(
            probe.handler,
            Handler::HttpGet {
                path: "/".into(),
                port: IntOrString::String("http".into()),
                host: None,
                scheme: Scheme::Http,
                headers: Vec::new(),
            }
        );
    }

    #[test]
    fn http_get_defaults_as_written_text() {
        let written = |json: &str| serde_json::from_str::<HttpGetAction>(json).unwrap();
        let unset = written(r#"{ "port": 80 }"#);
        assert_eq!(unset.path_or_default(), "/");
        assert_eq!(unset.scheme_or_default(), "HTTP");
        let empty = written(r#"{ "port": 80, "path": "", "scheme": "" }"#);
        assert_eq!(
            (empty.path_or_default(), empty.scheme_or_default()),
            ("/", "HTTP")
        );
        let set = written(r#"{ "port": 80, "path": "/readyz", "scheme": "HTTPS" }"#);
        assert_eq!(
            (set.path_or_default(), set.scheme_or_default()),
            ("/readyz", "HTTPS")
        );
    }

    #[test]
    fn success_threshold_must_be_1_for_liveness_and_startup() {
        let json = r#"{ "tcpSocket": { "port": 1 }, "successThreshold": 2 }"#;
        assert_eq!(
            fields(json, ProbeKind::Liveness),
            ["successThreshold: must be 1"]
        );
        assert_eq!(
            fields(json, ProbeKind::Startup),
            ["successThreshold: must be 1"]
        );
        assert!(fields(json, ProbeKind::Readiness).is_empty());
        // 0 is defaulted to 1 before validation.
        let zero = r#"{ "tcpSocket": { "port": 1 }, "successThreshold": 0 }"#;
        assert!(fields(zero, ProbeKind::Liveness).is_empty());
    }

    #[test]
    fn negative_numbers_are_rejected_by_name() {
        let json = r#"{ "tcpSocket": { "port": 1 }, "periodSeconds": -5, "failureThreshold": -1 }"#;
        assert_eq!(
            fields(json, ProbeKind::Readiness),
            [
                "periodSeconds: must be greater than or equal to 0",
                "failureThreshold: must be greater than or equal to 0"
            ]
        );
        let huge = r#"{ "tcpSocket": { "port": 1 }, "periodSeconds": 3000000000 }"#;
        assert!(fields(huge, ProbeKind::Readiness)[0].contains("32-bit"));
    }

    #[test]
    fn exactly_one_handler() {
        assert_eq!(
            fields(r#"{ "periodSeconds": 5 }"#, ProbeKind::Liveness),
            ["must specify a handler type (exec, httpGet, tcpSocket or grpc)"]
        );
        assert_eq!(
            fields(
                r#"{ "httpGet": { "path": "/", "port": 80 }, "tcpSocket": { "port": 80 } }"#,
                ProbeKind::Liveness
            ),
            ["tcpSocket: may not specify more than 1 handler type"]
        );
    }

    #[test]
    fn ports_are_numbers_in_range_or_port_names() {
        let cases = [
            (
                r#"{ "httpGet": { "path": "/" } }"#,
                "httpGet.port: Required value",
            ),
            (
                r#"{ "httpGet": { "port": 0 } }"#,
                "httpGet.port: 0: must be between 1 and 65535",
            ),
            (
                r#"{ "tcpSocket": { "port": 70000 } }"#,
                "must be between 1 and 65535",
            ),
            (r#"{ "tcpSocket": { "port": "HTTP" } }"#, "alpha-numeric"),
            (
                r#"{ "tcpSocket": { "port": "8080" } }"#,
                "at least one letter",
            ),
            (
                r#"{ "tcpSocket": { "port": "web--x" } }"#,
                "consecutive hyphens",
            ),
            (
                r#"{ "tcpSocket": { "port": "-web" } }"#,
                "begin or end with a hyphen",
            ),
            (
                r#"{ "tcpSocket": { "port": "a-very-long-port-name" } }"#,
                "15 characters",
            ),
            (r#"{ "grpc": { } }"#, "grpc.port: Required value"),
        ];
        for (json, expected) in cases {
            let found = fields(json, ProbeKind::Readiness);
            assert!(
                found.iter().any(|text| text.contains(expected)),
                "{json}: {found:?}"
            );
        }
        assert!(
            fields(
                r#"{ "tcpSocket": { "port": "http-alt" } }"#,
                ProbeKind::Readiness
            )
            .is_empty()
        );
    }

    #[test]
    fn other_handler_rules() {
        assert_eq!(
            fields(r#"{ "exec": { "command": [] } }"#, ProbeKind::Liveness),
            ["exec.command: Required value: an exec probe needs a command"]
        );
        assert!(
            fields(
                r#"{ "httpGet": { "port": 80, "scheme": "FTP" } }"#,
                ProbeKind::Liveness
            )[0]
            .contains("Unsupported value: \"FTP\"")
        );
        assert!(
            fields(
                r#"{ "httpGet": { "port": 80, "httpHeaders": [{ "name": "Bad Header", "value": "x" }] } }"#,
                ProbeKind::Liveness
            )[0]
            .contains("`Bad Header`")
        );
    }

    #[test]
    fn termination_grace_rules() {
        let readiness = r#"{ "tcpSocket": { "port": 1 }, "terminationGracePeriodSeconds": 5 }"#;
        assert_eq!(
            fields(readiness, ProbeKind::Readiness),
            ["terminationGracePeriodSeconds: must not be set for readinessProbes"]
        );
        assert!(fields(readiness, ProbeKind::Liveness).is_empty());
        let zero = r#"{ "tcpSocket": { "port": 1 }, "terminationGracePeriodSeconds": 0 }"#;
        assert_eq!(
            fields(zero, ProbeKind::Liveness),
            ["terminationGracePeriodSeconds: must be greater than 0"]
        );
        let probe = spec(readiness).resolve(ProbeKind::Liveness).unwrap();
        assert_eq!(probe.termination_grace_period, Some(Duration::from_secs(5)));
    }

    #[test]
    fn unknown_fields_and_wrong_types_are_rejected() {
        let error = serde_json::from_str::<ProbeSpec>(r#"{ "periodSecond": 5 }"#).unwrap_err();
        assert!(
            error.to_string().contains("unknown field `periodSecond`"),
            "{error}"
        );
        let error =
            serde_json::from_str::<ProbeSpec>(r#"{ "tcpSocket": { "port": [1] } }"#).unwrap_err();
        assert!(
            error.to_string().contains("a port number or a port name"),
            "{error}"
        );
    }

    #[test]
    fn violations_nest_under_their_parent() {
        let violation = Violation::new("httpGet.port", "x").under("container.livenessProbe");
        assert_eq!(violation.field, "container.livenessProbe.httpGet.port");
        let violation = Violation::new("", "x").under("container.livenessProbe");
        assert_eq!(violation.field, "container.livenessProbe");
    }
}
