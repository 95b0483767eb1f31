//! The user traffic: its rate, its timeout, the classes of requests and what each calls, the
//! users (for hashing) and keep-alive client connections.

use super::dependency::DependencyNames;
use super::{Checked, positive};
use crate::error::Invalid;
use crate::time::{Millis, Span};
use serde::Deserialize;

/// The highest request rate simulated, per second. Traffic is a fluid, so the rate costs
/// nothing; the bound keeps counts within what a report can print.
pub const MAX_RATE: f64 = 1e9;
/// The most users a consistent-hash ring is built for.
pub const MAX_USERS: u32 = 10_000_000;
/// The most keep-alive client connections.
pub const MAX_CLIENTS: u32 = 100_000;

/// `requests:` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RequestsFile {
    #[serde(default = "default_rate")]
    rate: f64,
    #[serde(default = "default_request_timeout")]
    timeout: Span,
    #[serde(default)]
    mix: Vec<RequestClassFile>,
    #[serde(default = "default_users")]
    users: u32,
    #[serde(default)]
    pub(super) keep_alive: Option<KeepAliveFile>,
    #[serde(default)]
    served_by_fallback: Option<f64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct KeepAliveFile {
    clients: u32,
    connection_lifetime: Span,
}

fn default_rate() -> f64 {
    100.0
}
fn default_request_timeout() -> Span {
    Span::secs(10)
}
fn default_users() -> u32 {
    10_000
}

impl Default for RequestsFile {
    fn default() -> Self {
        RequestsFile {
            rate: default_rate(),
            timeout: default_request_timeout(),
            mix: Vec::new(),
            users: default_users(),
            keep_alive: None,
            served_by_fallback: None,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestClassFile {
    share: f64,
    #[serde(default)]
    needs: Vec<String>,
    #[serde(default)]
    served_by_fallback: Option<f64>,
}

/// The user traffic.
#[derive(Debug, Clone)]
pub struct Requests {
    /// Requests per second across the fleet.
    pub rate: f64,
    /// A request waiting longer than this fails.
    pub timeout: Millis,
    /// Request classes and what each needs.
    pub mix: Vec<RequestClass>,
    /// Distinct users (for consistent hashing).
    pub users: u32,
    /// Long-lived client connections (`None`: every request opens a new connection).
    pub keep_alive: Option<KeepAlive>,
}

/// Traffic from a fixed set of keep-alive client connections, each pinned to the pod it
/// connected to until the connection ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeepAlive {
    /// Client connections; each carries `rate / clients` requests per second.
    pub clients: u32,
    /// A connection's age at which the client closes it and connects again (its pool's
    /// maximum connection age or idle timeout).
    pub connection_lifetime: Millis,
}

impl KeepAlive {
    /// Time between two requests on one connection, at `rate` requests per second across
    /// all connections (at least 1 ms).
    pub fn request_gap(&self, rate: f64) -> Millis {
        ((f64::from(self.clients) * 1000.0 / rate).round() as Millis).max(1)
    }
}

/// A class of requests.
#[derive(Debug, Clone)]
pub struct RequestClass {
    /// Fraction of all requests.
    pub share: f64,
    /// Dependencies every request of this class calls.
    pub needs: Vec<usize>,
    /// The share of these requests the app answers from a fallback's dependency while a
    /// dependency they need is served by its fallback (the app's readiness `warn`, probity's
    /// `HealthState::degraded`); the rest are refused at once.
    pub served_by_fallback: f64,
}

impl RequestsFile {
    /// The traffic, checked. `service_routing` says whether a Kubernetes Service routes it
    /// (the only router keep-alive connections are modelled for); `fallbacks` gives, for each
    /// dependency, the dependency that serves instead of it (from the app's checks).
    pub(super) fn resolve(
        &self,
        dependencies: &DependencyNames,
        service_routing: bool,
        fallbacks: &[Option<usize>],
    ) -> Checked<Requests> {
        if !(self.rate.is_finite() && self.rate > 0.0) {
            return Err(Invalid::new(
                "requests.rate",
                "must be a positive number of requests per second",
            ));
        }
        if self.rate > MAX_RATE {
            return Err(Invalid::new(
                "requests.rate",
                format!(
                    "{} requests per second is more than the {MAX_RATE:e} the model counts",
                    self.rate
                ),
            ));
        }
        if self.users == 0 || self.users > MAX_USERS {
            return Err(Invalid::new(
                "requests.users",
                format!("must be between 1 and {MAX_USERS}"),
            ));
        }
        let shown: Vec<String> = fallbacks
            .iter()
            .enumerate()
            .filter_map(|(dependency, fallback)| {
                fallback.map(|fallback| {
                    format!(
                        "{} → {}",
                        dependencies.0[dependency], dependencies.0[fallback]
                    )
                })
            })
            .collect();
        let share_of = |value: Option<f64>, field: &str, needs: &[usize]| -> Checked<f64> {
            let Some(value) = value else {
                return Ok(0.0);
            };
            if !(value.is_finite() && (0.0..=1.0).contains(&value)) {
                return Err(Invalid::new(field, "must be a share between 0 and 1"));
            }
            if shown.is_empty() {
                return Err(Invalid::new(
                    field,
                    "no check names a fallback (app.checks.NAME.fallback), so nothing serves these requests instead",
                ));
            }
            if !needs.iter().any(|&need| fallbacks[need].is_some()) {
                return Err(Invalid::new(
                    field,
                    format!(
                        "these requests need no dependency with a fallback ({})",
                        shown.join(", ")
                    ),
                ));
            }
            Ok(value)
        };
        let mut mix = Vec::new();
        if self.mix.is_empty() {
            // A dependency that serves as another's fallback is called only when it serves.
            let needs: Vec<usize> = (0..dependencies.0.len())
                .filter(|&dependency| !fallbacks.contains(&Some(dependency)))
                .collect();
            let served_by_fallback = share_of(
                self.served_by_fallback,
                "requests.served_by_fallback",
                &needs,
            )?;
            mix.push(RequestClass {
                share: 1.0,
                needs,
                served_by_fallback,
            });
        } else {
            // Checked against every class: a default that no class could use is an error.
            let all: Vec<usize> = (0..dependencies.0.len()).collect();
            let default_share =
                share_of(self.served_by_fallback, "requests.served_by_fallback", &all)?;
            let mut total = 0.0;
            for (index, class) in self.mix.iter().enumerate() {
                if !(class.share.is_finite() && class.share >= 0.0) {
                    return Err(Invalid::new(
                        format!("requests.mix[{index}].share"),
                        "must be ≥ 0",
                    ));
                }
                total += class.share;
                let mut needs = Vec::new();
                for (position, name) in class.needs.iter().enumerate() {
                    needs.push(
                        dependencies
                            .index(name, &format!("requests.mix[{index}].needs[{position}]"))?,
                    );
                }
                let served_by_fallback = match class.served_by_fallback {
                    None => default_share,
                    some => share_of(
                        some,
                        &format!("requests.mix[{index}].served_by_fallback"),
                        &needs,
                    )?,
                };
                mix.push(RequestClass {
                    share: class.share,
                    needs,
                    served_by_fallback,
                });
            }
            if (total - 1.0).abs() > 1e-6 {
                return Err(Invalid::new(
                    "requests.mix",
                    format!("shares add up to {total}, they must add up to 1"),
                ));
            }
        }
        let keep_alive = match &self.keep_alive {
            None => None,
            Some(file) => {
                if !(1..=MAX_CLIENTS).contains(&file.clients) {
                    return Err(Invalid::new(
                        "requests.keep_alive.clients",
                        format!("must be between 1 and {MAX_CLIENTS}"),
                    ));
                }
                positive(
                    file.connection_lifetime,
                    "requests.keep_alive.connection_lifetime",
                )?;
                if !service_routing {
                    return Err(Invalid::new(
                        "requests.keep_alive",
                        "modelled for routing kind kubernetes-service only (the proxies balance each request over their own connections)",
                    ));
                }
                Some(KeepAlive {
                    clients: file.clients,
                    connection_lifetime: file.connection_lifetime.as_millis(),
                })
            }
        };
        Ok(Requests {
            rate: self.rate,
            timeout: self.timeout.as_millis(),
            mix,
            users: self.users,
            keep_alive,
        })
    }
}
