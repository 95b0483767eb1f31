//! DNS: a host name resolves, through the system resolver the application itself uses.
//!
//! ```
//! use probity::{CheckSpec, Tier};
//! use probity_checks::dns::DnsCheck;
//!
//! let spec = CheckSpec::new("dns", Tier::Soft, DnsCheck::new("db.internal"));
//! # let _ = spec;
//! ```
//!
//! The lookup goes through `getaddrinfo` (via [`tokio::net::lookup_host`]), so `/etc/hosts`,
//! search domains and `resolv.conf` apply exactly as they do for the application's own
//! connections. Errors read `cannot resolve db.invalid: failed to lookup address information:
//! Name or service not known`, or `db.internal resolved to no address`.

use crate::millis;
use probity::redact::redact;
use probity::{Check, CheckError, CheckFuture, CheckResult, Detail, Timing};
use std::time::Duration;
use tokio::time::Instant;

/// Interval and timeout for a DNS check: resolvers retry after about 5 s, so a lookup that
/// has not answered in 2 s has already lost its first server.
///
/// Interval 10 s, timeout 2 s.
pub const DEFAULT_TIMING: Timing = Timing {
    interval: Duration::from_secs(10),
    timeout: Duration::from_secs(2),
};

/// Resolves a host name each poll; fails when it does not resolve or resolves to too few
/// addresses.
///
/// Measurements: `addresses` (count), `lookup_time` (ms).
#[derive(Debug, Clone)]
pub struct DnsCheck {
    host: String,
    min_addresses: usize,
}

impl DnsCheck {
    /// A check that `host` resolves to at least one address.
    pub fn new(host: impl Into<String>) -> Self {
        Self {
            host: host.into(),
            min_addresses: 1,
        }
    }

    /// Requires at least `count` addresses (e.g. every replica behind a headless Service).
    pub fn min_addresses(mut self, count: usize) -> Self {
        self.min_addresses = count.max(1);
        self
    }

    async fn poll(&self) -> CheckResult {
        let started = Instant::now();
        let addresses: Vec<_> = tokio::net::lookup_host((self.host.as_str(), 0))
            .await
            .map_err(|error| {
                CheckError::new(format!(
                    "cannot resolve {}: {}",
                    self.host,
                    redact(&error.to_string())
                ))
            })?
            .collect();
        let lookup_time = millis(started.elapsed());
        let count = addresses.len();
        if count < self.min_addresses {
            let message = if count == 0 {
                format!("{} resolved to no address", self.host)
            } else {
                format!(
                    "{} resolved to {count} addresses, fewer than the {} required",
                    self.host, self.min_addresses
                )
            };
            return Err(CheckError::new(message).measurement("addresses", count as f64, None));
        }
        let first = addresses
            .first()
            .map(|address| address.ip().to_string())
            .unwrap_or_default();
        Ok(Detail::new()
            .message(format!(
                "{} resolved to {first} ({count} in all)",
                self.host
            ))
            .measurement("addresses", count as f64, None)
            .measurement("lookup_time", lookup_time, Some("ms")))
    }
}

impl Check for DnsCheck {
    fn check(&self) -> CheckFuture<'_> {
        Box::pin(self.poll())
    }

    fn dependency(&self) -> Option<&str> {
        Some("dns")
    }

    fn default_timing(&self) -> Option<Timing> {
        Some(DEFAULT_TIMING)
    }

    fn default_fall(&self) -> Option<u32> {
        Some(crate::NETWORK_FALL)
    }
}
