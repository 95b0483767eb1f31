//! gRPC: a downstream server's own `grpc.health.v1.Health/Check`, for the server as a whole or
//! for one of its services.
//!
//! ```
//! use probity::{CheckSpec, Tier};
//! use probity_checks::grpc_health::GrpcHealthCheck;
//!
//! # fn build() -> Result<(), probity_checks::grpc_health::InvalidGrpcHealthCheck> {
//! // The server as a whole (service name ""), then one service of it.
//! let server = GrpcHealthCheck::new("inventory.internal:50051")?;
//! let orders = GrpcHealthCheck::new("http://inventory.internal:50051")?.service("shop.Orders");
//! let spec = CheckSpec::new("inventory", Tier::Hard, orders);
//! # let _ = (server, spec);
//! # Ok(())
//! # }
//! ```
//!
//! This is the protocol Kubernetes' gRPC probes, Consul, Nomad and NestJS terminus speak
//! (<https://github.com/grpc/grpc/blob/master/doc/health-checking.md>): the server says
//! `SERVING` or `NOT_SERVING`, and an empty service name asks about the server as a whole. The
//! check keeps one HTTP/2 channel and sends one `Check` per poll with a `grpc-timeout` of the
//! time the poll has left, so a slow server can stop working on an answer nobody waits for.
//!
//! Each way of failing says what it is:
//!
//! - `inventory.internal:50051 answers NOT_SERVING for service "shop.Orders"` — the server is
//!   up and says it cannot serve;
//! - `inventory.internal:50051 does not know service "shop.Orders" (NOT_FOUND)` — a typo in the
//!   name, or a server that registers its services later than expected;
//! - `inventory.internal:50051 has no grpc.health.v1 service (UNIMPLEMENTED)` — the server
//!   answers gRPC but exposes no health service: this check cannot judge it (a `tcp` check or
//!   the server's own HTTP endpoint can);
//! - `no grpc.health.v1 answer from inventory.internal:50051 within 750ms` — connected, and
//!   nothing came back in time;
//! - `connection refused (inventory.internal:50051)` — nothing listens.
//!
//! Plaintext HTTP/2 (`http://`, or `host:port`) only: a server behind TLS is refused when the
//! check is built.

use crate::error::{chain, describe_io, find_io};
use crate::millis;
use probity::{Check, CheckError, CheckFuture, CheckResult, Detail, Timing};
use std::fmt;
use std::time::Duration;
use tokio::sync::Mutex;
use tokio::time::Instant;
use tonic::Code;
use tonic::transport::{Channel, Endpoint};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

/// Interval and timeout for a gRPC health check: one call on a warm channel.
///
/// Interval 2 s, timeout 1 s.
pub const DEFAULT_TIMING: Timing = Timing {
    interval: Duration::from_secs(2),
    timeout: Duration::from_secs(1),
};

/// The share of the poll's time left that the call may use: the rest lets the check report
/// *what* it waited for before the poller cuts it.
const BUDGET_SHARE: (u32, u32) = (3, 4);

/// The call's budget when the check runs outside a poller.
const DEFAULT_BUDGET: Duration = Duration::from_secs(1);

/// Why a [`GrpcHealthCheck`] could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidGrpcHealthCheck {
    reason: String,
}

impl fmt::Display for InvalidGrpcHealthCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for InvalidGrpcHealthCheck {}

/// `grpc.health.v1.Health/Check` of one server, for one service name (`""` by default: the
/// server as a whole).
///
/// Measurement: `response_time` (ms).
pub struct GrpcHealthCheck {
    endpoint: Endpoint,
    target: String,
    service: String,
    channel: Mutex<Option<Channel>>,
}

impl GrpcHealthCheck {
    /// A check of the server at `target`: `host:port` or `http://host:port`.
    pub fn new(target: &str) -> Result<Self, InvalidGrpcHealthCheck> {
        let invalid = |reason: String| InvalidGrpcHealthCheck { reason };
        let (uri, authority) = match target.split_once("://") {
            Some(("http", rest)) => (target.to_owned(), rest.trim_end_matches('/')),
            Some(("https", _)) => {
                return Err(invalid(format!(
                    "{} is TLS: the gRPC health check speaks plaintext HTTP/2 only",
                    crate::error::url_target(target, |_| 443)
                )));
            }
            Some((scheme, _)) => {
                return Err(invalid(format!(
                    "unsupported scheme {scheme:?} for a gRPC health check: write host:port or \
                     http://host:port"
                )));
            }
            None => (format!("http://{target}"), target),
        };
        if authority.contains(['/', '@', '?']) {
            return Err(invalid(format!(
                "a gRPC health target is host:port, without a path or credentials, not {:?}",
                probity::redact::redact(target)
            )));
        }
        let has_port = authority
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
        if !has_port {
            return Err(invalid(format!(
                "a gRPC health target needs host:port, not {authority:?}"
            )));
        }
        let endpoint = Endpoint::from_shared(uri)
            .map_err(|error| invalid(format!("invalid gRPC target {authority:?}: {error}")))?
            // The kubelet's gRPC prober and grpc-go keep the connection open between calls;
            // a dead peer must still be noticed between polls.
            .http2_keep_alive_interval(Duration::from_secs(10))
            .keep_alive_timeout(Duration::from_secs(5));
        Ok(Self {
            endpoint,
            target: authority.to_owned(),
            service: String::new(),
            channel: Mutex::new(None),
        })
    }

    /// Asks about one service (`"shop.Orders"`) instead of the server as a whole.
    pub fn service(mut self, name: impl Into<String>) -> Self {
        self.service = name.into();
        self
    }

    /// The service name asked about (`""`: the server as a whole).
    pub fn service_name(&self) -> &str {
        &self.service
    }

    fn about(&self) -> String {
        if self.service.is_empty() {
            "the server as a whole (service \"\")".to_owned()
        } else {
            format!("service {:?}", self.service)
        }
    }

    async fn poll(&self) -> CheckResult {
        let started = Instant::now();
        let budget = budget();
        let deadline = started + budget;
        let channel = {
            let mut cached = self.channel.lock().await;
            match cached.as_ref() {
                Some(channel) => channel.clone(),
                None => {
                    let channel = tokio::time::timeout_at(deadline, self.endpoint.connect())
                        .await
                        .map_err(|_| {
                            CheckError::new(format!(
                                "no HTTP/2 connection to {} within {budget:?}",
                                self.target
                            ))
                        })?
                        .map_err(|error| CheckError::new(self.describe_transport(&error)))?;
                    *cached = Some(channel.clone());
                    channel
                }
            }
        };
        let mut request = tonic::Request::new(HealthCheckRequest {
            service: self.service.clone(),
        });
        request.set_timeout(deadline.saturating_duration_since(Instant::now()));
        let answer = tokio::time::timeout_at(deadline, HealthClient::new(channel).check(request))
            .await
            .map_err(|_| {
                CheckError::new(format!(
                    "no grpc.health.v1 answer from {} within {budget:?} ({})",
                    self.target,
                    self.about()
                ))
            })?;
        let response = match answer {
            Ok(response) => response.into_inner(),
            // The `grpc-timeout` sent with the call may expire in the client a moment before
            // the deadline above does: the same wait, said the same way.
            Err(status)
                if status.code() == Code::Cancelled
                    && status.message().contains("Timeout expired") =>
            {
                return Err(CheckError::new(format!(
                    "no grpc.health.v1 answer from {} within {budget:?} ({})",
                    self.target,
                    self.about()
                )));
            }
            Err(status) => {
                if matches!(status.code(), Code::Unavailable | Code::Unknown) {
                    // The channel may be broken; the next poll builds another.
                    self.channel.lock().await.take();
                }
                return Err(CheckError::new(self.describe_status(&status)));
            }
        };
        let detail = |status: &str| {
            Detail::new()
                .message(format!(
                    "{status} from {} for {}",
                    self.target,
                    self.about()
                ))
                .measurement("response_time", millis(started.elapsed()), Some("ms"))
        };
        match ServingStatus::try_from(response.status) {
            Ok(ServingStatus::Serving) => Ok(detail("SERVING")),
            Ok(ServingStatus::NotServing) => Err(CheckError::new(format!(
                "{} answers NOT_SERVING for {}",
                self.target,
                self.about()
            ))),
            Ok(ServingStatus::ServiceUnknown) => Err(CheckError::new(format!(
                "{} answers SERVICE_UNKNOWN for {}",
                self.target,
                self.about()
            ))),
            Ok(ServingStatus::Unknown) => Err(CheckError::new(format!(
                "{} answers UNKNOWN for {}: it has not decided whether it serves",
                self.target,
                self.about()
            ))),
            Err(_) => Err(CheckError::new(format!(
                "{} answers an undefined serving status {} for {}",
                self.target,
                response.status,
                self.about()
            ))),
        }
    }

    fn describe_status(&self, status: &tonic::Status) -> String {
        use std::error::Error as _;
        match status.code() {
            Code::Unimplemented => format!(
                "{} has no grpc.health.v1 service (UNIMPLEMENTED): it cannot be asked whether it \
                 serves",
                self.target
            ),
            Code::NotFound => format!(
                "{} does not know service {:?} (NOT_FOUND)",
                self.target, self.service
            ),
            Code::DeadlineExceeded => format!(
                "{} gave up on the call itself (DEADLINE_EXCEEDED): {}",
                self.target,
                probity::redact::redact(status.message())
            ),
            code => {
                if let Some(io) = status.source().and_then(find_io) {
                    return describe_io(io, &self.target);
                }
                let message = match status.source() {
                    Some(source) => chain(source),
                    None => probity::redact::redact(status.message()).into_owned(),
                };
                format!(
                    "grpc.health.v1 Check on {} failed: {code:?}: {message}",
                    self.target
                )
            }
        }
    }

    fn describe_transport(&self, error: &tonic::transport::Error) -> String {
        match find_io(error) {
            Some(io) => describe_io(io, &self.target),
            None => format!("cannot connect to {}: {}", self.target, chain(error)),
        }
    }
}

/// Three quarters of the poll's time left, to the nearest 10 ms so that a poll that has only
/// just started reads as its whole timeout (the default outside a poller).
fn budget() -> Duration {
    probity::poll_deadline()
        .map(|deadline| {
            let left = deadline
                .saturating_duration_since(Instant::now())
                .as_millis() as u64;
            Duration::from_millis((left + 5) / 10 * 10) * BUDGET_SHARE.0 / BUDGET_SHARE.1
        })
        .unwrap_or(DEFAULT_BUDGET)
}

impl Check for GrpcHealthCheck {
    fn check(&self) -> CheckFuture<'_> {
        Box::pin(self.poll())
    }

    fn dependency(&self) -> Option<&str> {
        Some("grpc")
    }

    fn default_timing(&self) -> Option<Timing> {
        Some(DEFAULT_TIMING)
    }

    fn default_fall(&self) -> Option<u32> {
        Some(crate::NETWORK_FALL)
    }
}

impl fmt::Debug for GrpcHealthCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrpcHealthCheck")
            .field("target", &self.target)
            .field("service", &self.service)
            .finish_non_exhaustive()
    }
}
