//! etcd: the member's own `/health`, with the alarm or the missing leader that makes it fail.
//!
//! ```
//! use probity::{CheckSpec, Tier};
//! use probity_checks::etcd::EtcdCheck;
//!
//! # fn build() -> Result<(), probity_checks::etcd::InvalidEtcdCheck> {
//! let spec = CheckSpec::new("config-store", Tier::Hard, EtcdCheck::new("http://etcd.internal:2379")?);
//! # let _ = spec;
//! # Ok(())
//! # }
//! ```
//!
//! `GET /health` on a client URL is the check etcd documents for monitoring
//! (<https://etcd.io/docs/v3.4/op-guide/monitoring/#health-check>): it is false while the
//! member has no leader (the cluster lost quorum), while an alarm is raised (`NOSPACE`: the
//! database reached its quota and every write is refused; `CORRUPT`), or when a linearizable
//! read does not complete. A member that accepts connections and answers `/version` can be all
//! of these, so a TCP or version check would pass. When `/health` says false, the check asks
//! for the alarms (`/v3/maintenance/alarm`) and the member's status
//! (`/v3/maintenance/status`) to say which it is; when it says true, the status gives the
//! figures (`db_size`, the leader, the server version).
//!
//! Errors read `etcd at 127.0.0.1:2379 is unhealthy: alarm NOSPACE (the database reached its
//! space quota: writes are refused until it is compacted, defragmented and the alarm is
//! disarmed)`, `etcd at 127.0.0.1:2379 is unhealthy: no leader (the cluster has no quorum)`,
//! `connection refused (127.0.0.1:2379)`. A member that waits for its peers does not answer at
//! all: the poll fails with `timed out after …`. `https://` needs the `http-tls` feature as
//! well; client certificates are not supported.

use crate::error::{chain, describe_io, find_io};
use crate::millis;
use probity::{Check, CheckError, CheckFuture, CheckResult, Detail, Timing};
use reqwest::Url;
use serde_json::Value;
use std::fmt;
use std::time::Duration;
use tokio::time::Instant;

/// Interval and timeout for an etcd check: `/health` includes a linearizable read.
///
/// Interval 5 s, timeout 2 s.
pub const DEFAULT_TIMING: Timing = Timing {
    interval: Duration::from_secs(5),
    timeout: Duration::from_secs(2),
};

/// The longest answer read from any of the endpoints.
const MAX_BODY: usize = 64 * 1024;

/// Why an [`EtcdCheck`] could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidEtcdCheck {
    reason: String,
}

impl fmt::Display for InvalidEtcdCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for InvalidEtcdCheck {}

/// `/health` of one etcd member, explained by its alarms and status when it fails.
///
/// Measurements: `response_time` (ms), `db_size` (bytes, when the status answers).
#[derive(Debug, Clone)]
pub struct EtcdCheck {
    client: reqwest::Client,
    base: Url,
    address: String,
}

impl EtcdCheck {
    /// A check of the member whose client URL is `url` (`http://etcd.internal:2379`).
    pub fn new(url: &str) -> Result<Self, InvalidEtcdCheck> {
        let invalid = |reason: String| InvalidEtcdCheck { reason };
        let mut base = Url::parse(url).map_err(|error| {
            invalid(format!(
                "invalid etcd url {:?}: {error}",
                probity::redact::redact(url)
            ))
        })?;
        match base.scheme() {
            "http" => {}
            "https" if cfg!(feature = "http-tls") => {}
            "https" => {
                return Err(invalid(
                    "an https:// etcd URL needs TLS: enable the `http-tls` feature of \
                     probity-checks"
                        .to_owned(),
                ));
            }
            other => {
                return Err(invalid(format!(
                    "unsupported scheme {other:?} for etcd: write http://HOST:2379"
                )));
            }
        }
        let Some(host) = base.host_str() else {
            return Err(invalid("the etcd url has no host".to_owned()));
        };
        let address = format!("{host}:{}", base.port_or_known_default().unwrap_or(2379));
        // /health takes no credentials; none are kept or shown.
        let _ = base.set_password(None);
        let _ = base.set_username("");
        base.set_query(None);
        if !base.path().ends_with('/') {
            let path = format!("{}/", base.path());
            base.set_path(&path);
        }
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| invalid(format!("cannot build the http client: {}", chain(&error))))?;
        Ok(Self {
            client,
            base,
            address,
        })
    }

    async fn poll(&self) -> CheckResult {
        let started = Instant::now();
        let (status, health) = self.call("health", None).await?;
        let healthy = match health.get("health") {
            Some(Value::String(text)) => text == "true",
            Some(Value::Bool(value)) => *value,
            _ => {
                return Err(CheckError::new(format!(
                    "unexpected answer from etcd at {} /health ({status}): no `health` field",
                    self.address
                )));
            }
        };
        let took = millis(started.elapsed());
        let member = self.call("v3/maintenance/status", Some("{}")).await.ok();
        if healthy {
            let mut detail = Detail::new().measurement("response_time", took, Some("ms"));
            let mut message = format!("etcd at {}: healthy", self.address);
            if let Some((_, member)) = &member {
                if let Some(version) = member.get("version").and_then(Value::as_str) {
                    message = format!("etcd {version} at {}: healthy", self.address);
                }
                if let Some(size) = number(member.get("dbSize")) {
                    detail = detail.measurement("db_size", size as f64, Some("bytes"));
                }
            }
            return Ok(detail.message(message));
        }
        let mut reasons = Vec::new();
        if let Ok((_, alarms)) = self
            .call("v3/maintenance/alarm", Some(r#"{"action":"GET"}"#))
            .await
            && let Some(alarms) = alarms.get("alarms").and_then(Value::as_array)
        {
            for alarm in alarms {
                // The gateway leaves out a field at its default: alarm type 0 is NONE.
                match alarm.get("alarm").and_then(Value::as_str) {
                    Some("NOSPACE") => reasons.push(
                        "alarm NOSPACE (the database reached its space quota: writes are \
                         refused until it is compacted, defragmented and the alarm is disarmed)"
                            .to_owned(),
                    ),
                    Some("CORRUPT") => reasons.push(
                        "alarm CORRUPT (a member's data differs from the others')".to_owned(),
                    ),
                    Some("NONE") | None => {}
                    Some(other) => reasons.push(format!("alarm {other}")),
                }
            }
        }
        if let Some((_, member)) = &member
            && number(member.get("leader")) == Some(0)
        {
            reasons.push("no leader (the cluster has no quorum)".to_owned());
        }
        if let Some(reason) = health.get("reason").and_then(Value::as_str)
            && !reason.is_empty()
            && reasons.is_empty()
        {
            reasons.push(reason.to_lowercase());
        }
        let why = if reasons.is_empty() {
            format!("/health answered {status} with health false")
        } else {
            reasons.join("; ")
        };
        Err(
            CheckError::new(format!("etcd at {} is unhealthy: {why}", self.address)).measurement(
                "response_time",
                took,
                Some("ms"),
            ),
        )
    }

    /// One request to the member; a JSON answer of at most [`MAX_BODY`] bytes.
    async fn call(&self, path: &str, body: Option<&str>) -> Result<(u16, Value), CheckError> {
        let url = self
            .base
            .join(path)
            .map_err(|error| CheckError::new(format!("invalid etcd path {path}: {error}")))?;
        let request = match body {
            Some(body) => self.client.post(url).body(body.to_owned()),
            None => self.client.get(url),
        };
        let mut response = request
            .send()
            .await
            .map_err(|error| CheckError::new(self.describe(&error)))?;
        let status = response.status().as_u16();
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|error| CheckError::new(self.describe(&error)))?
        {
            if bytes.len() + chunk.len() > MAX_BODY {
                return Err(CheckError::new(format!(
                    "the answer of etcd at {} to /{path} exceeds {} KiB",
                    self.address,
                    MAX_BODY / 1024
                )));
            }
            bytes.extend_from_slice(&chunk);
        }
        // /health answers 503 with a JSON body when unhealthy; anything else must be 2xx.
        let expected = (200..=299).contains(&status) || (path == "health" && status == 503);
        if !expected {
            return Err(CheckError::new(format!(
                "unexpected status {status} from etcd at {} /{path}",
                self.address
            )));
        }
        let value = serde_json::from_slice(&bytes).map_err(|_| {
            CheckError::new(format!(
                "the answer of {} to /{path} is not etcd's JSON: {:?}",
                self.address,
                String::from_utf8_lossy(&bytes[..bytes.len().min(80)])
            ))
        })?;
        Ok((status, value))
    }

    fn describe(&self, error: &reqwest::Error) -> String {
        if let Some(io) = find_io(error) {
            return describe_io(io, &self.address);
        }
        format!("{} ({})", chain(error), self.address)
    }
}

/// etcd's gateway writes 64-bit integers as strings.
fn number(value: Option<&Value>) -> Option<u64> {
    match value? {
        Value::String(text) => text.parse().ok(),
        Value::Number(number) => number.as_u64(),
        _ => None,
    }
}

impl Check for EtcdCheck {
    fn check(&self) -> CheckFuture<'_> {
        Box::pin(self.poll())
    }

    fn dependency(&self) -> Option<&str> {
        Some("etcd")
    }

    fn default_timing(&self) -> Option<Timing> {
        Some(DEFAULT_TIMING)
    }

    fn default_fall(&self) -> Option<u32> {
        Some(crate::NETWORK_FALL)
    }
}
