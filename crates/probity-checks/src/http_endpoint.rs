//! HTTP: an endpoint answers with an expected status, without leaving its host, within a body
//! size cap.
//!
//! ```
//! use probity::{CheckSpec, Tier};
//! use probity_checks::http_endpoint::HttpCheck;
//!
//! # fn build() -> Result<(), probity_checks::http_endpoint::InvalidHttpCheck> {
//! let pricing = HttpCheck::new("http://pricing.internal:8080/readyz")?.expect_status(200..=204);
//! let spec = CheckSpec::new("pricing", Tier::Soft, pricing);
//! # let _ = spec;
//! # Ok(())
//! # }
//! ```
//!
//! Redirects are followed only to the same host and port, as the kubelet does: a redirect to
//! another host fails (`redirected to another host (login.example:443), not followed`) instead
//! of turning a dependency check into a check of someone else's server. The body is read up to
//! a cap (64 KiB by default) so a misbehaving endpoint cannot make the check buffer megabytes;
//! a larger body fails.
//!
//! `https://` needs the `http-tls` feature (rustls): the server's certificate is verified
//! against the system's root certificates and any added with
//! [`HttpCheck::root_certificate_pem`] (a cluster's internal CA); without the feature an
//! `https://` URL is refused when the check is built, not at the first poll. Errors read
//! `connection refused (127.0.0.1:8080)`, `unexpected status 503 Service Unavailable from
//! http://pricing.internal:8080/readyz (expected 200-204)`, `response body exceeds the 64 KiB
//! cap`, `TLS: invalid peer certificate: UnknownIssuer (pricing.internal:443)`. URLs in messages
//! never carry their user name or password.
//!
// The method exists only with `http-tls`: without it the link points at docs.rs.
#![cfg_attr(
    feature = "http-tls",
    doc = "[`HttpCheck::root_certificate_pem`]: HttpCheck::root_certificate_pem"
)]
#![cfg_attr(
    not(feature = "http-tls"),
    doc = "[`HttpCheck::root_certificate_pem`]: https://docs.rs/probity-checks/latest/probity_checks/http_endpoint/struct.HttpCheck.html#method.root_certificate_pem"
)]

use crate::error::{chain, describe_io, find_io};
use crate::millis;
use probity::redact::redact;
use probity::{Check, CheckError, CheckFuture, CheckResult, Detail, Timing};
use reqwest::redirect::Policy;
use reqwest::{StatusCode, Url};
use std::fmt;
use std::ops::RangeInclusive;
use std::time::Duration;
use tokio::time::Instant;

/// Interval and timeout for an HTTP check.
///
/// Interval 5 s, timeout 2 s.
pub const DEFAULT_TIMING: Timing = Timing {
    interval: Duration::from_secs(5),
    timeout: Duration::from_secs(2),
};

/// The default body cap: 64 KiB.
pub const DEFAULT_MAX_BODY: usize = 64 * 1024;

/// Same-host redirects followed at most.
const MAX_REDIRECTS: usize = 5;

/// Why an [`HttpCheck`] could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidHttpCheck {
    reason: String,
}

impl fmt::Display for InvalidHttpCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for InvalidHttpCheck {}

/// A GET of one URL each poll.
///
/// Passes when the final status (after same-host redirects) is in the expected range
/// (default `200..=299`) and the body fits the cap (and contains the expected text, if set).
/// Measurements: `status`, `response_time` (ms), `body_bytes` (bytes).
#[derive(Debug, Clone)]
pub struct HttpCheck {
    client: reqwest::Client,
    /// Extra trusted roots (PEM), kept to rebuild the client when another is added.
    #[cfg(feature = "http-tls")]
    roots: Vec<reqwest::Certificate>,
    url: Url,
    shown: String,
    address: String,
    expected: RangeInclusive<u16>,
    max_body: usize,
    body_contains: Option<String>,
}

impl HttpCheck {
    /// A check of `url`: an absolute `http://` URL, or `https://` with the `http-tls` feature.
    pub fn new(url: &str) -> Result<Self, InvalidHttpCheck> {
        let url = Url::parse(url).map_err(|error| InvalidHttpCheck {
            reason: format!("invalid url {:?}: {error}", redact(url)),
        })?;
        let shown = shown(&url);
        match url.scheme() {
            "http" => {}
            "https" if cfg!(feature = "http-tls") => {}
            "https" => {
                return Err(InvalidHttpCheck {
                    reason: format!(
                        "{shown} needs TLS: enable the `http-tls` feature of probity-checks"
                    ),
                });
            }
            other => {
                return Err(InvalidHttpCheck {
                    reason: format!(
                        "unsupported scheme {other:?} in {shown}: only http and https are supported"
                    ),
                });
            }
        }
        let Some(host) = url.host_str() else {
            return Err(InvalidHttpCheck {
                reason: format!("url {shown} has no host"),
            });
        };
        let address = format!("{host}:{}", url.port_or_known_default().unwrap_or(80));
        let client = client(reqwest::Client::builder()).map_err(|error| InvalidHttpCheck {
            reason: format!("cannot build the http client: {}", chain(&error)),
        })?;
        Ok(Self {
            client,
            #[cfg(feature = "http-tls")]
            roots: Vec::new(),
            url,
            shown,
            address,
            expected: 200..=299,
            max_body: DEFAULT_MAX_BODY,
            body_contains: None,
        })
    }

    /// Also trusts the certificate authority in `pem` (a PEM certificate, e.g. a cluster's
    /// internal CA) when verifying the server (`http-tls` feature). The system's roots stay
    /// trusted.
    ///
    /// `pem` may hold several certificates (a bundle); it must hold at least one.
    #[cfg(feature = "http-tls")]
    pub fn root_certificate_pem(mut self, pem: &[u8]) -> Result<Self, InvalidHttpCheck> {
        let invalid = |reason: String| InvalidHttpCheck {
            reason: format!("invalid root certificate: {reason}"),
        };
        let certificates =
            reqwest::Certificate::from_pem_bundle(pem).map_err(|error| invalid(chain(&error)))?;
        if certificates.is_empty() {
            return Err(invalid("no PEM certificate found".to_owned()));
        }
        self.roots.extend(certificates);
        let builder = self
            .roots
            .iter()
            .cloned()
            .fold(reqwest::Client::builder(), |builder, root| {
                builder.add_root_certificate(root)
            });
        // The certificates are decoded when the client is built.
        self.client = client(builder).map_err(|error| invalid(chain(&error)))?;
        Ok(self)
    }

    /// The statuses that pass (default `200..=299`).
    pub fn expect_status(mut self, range: RangeInclusive<u16>) -> Self {
        self.expected = range;
        self
    }

    /// The most body bytes read before the check fails (default 64 KiB).
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self
    }

    /// Also requires the body to contain `text`.
    pub fn body_contains(mut self, text: impl Into<String>) -> Self {
        self.body_contains = Some(text.into());
        self
    }

    async fn poll(&self) -> CheckResult {
        let started = Instant::now();
        let mut response = self
            .client
            .get(self.url.clone())
            .send()
            .await
            .map_err(|error| CheckError::new(self.describe(&error)))?;
        let status = response.status();
        if status.is_redirection()
            && let Some(location) = self.foreign_location(&response)
        {
            return Err(CheckError::new(format!(
                "redirected to another host ({location}), not followed"
            ))
            .measurement("status", f64::from(status.as_u16()), None));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|error| CheckError::new(self.describe(&error)))?
        {
            if body.len() + chunk.len() > self.max_body {
                return Err(CheckError::new(format!(
                    "response body exceeds the {} cap",
                    size(self.max_body)
                ))
                .measurement("status", f64::from(status.as_u16()), None));
            }
            body.extend_from_slice(&chunk);
        }
        let elapsed = millis(started.elapsed());
        let figures = |error: CheckError| {
            error
                .measurement("status", f64::from(status.as_u16()), None)
                .measurement("response_time", elapsed, Some("ms"))
        };
        if !self.expected.contains(&status.as_u16()) {
            return Err(figures(CheckError::new(format!(
                "unexpected status {} from {} (expected {})",
                status_text(status),
                self.shown,
                range_text(&self.expected)
            ))));
        }
        if let Some(text) = &self.body_contains
            && !String::from_utf8_lossy(&body).contains(text.as_str())
        {
            return Err(figures(CheckError::new(format!(
                "response body from {} does not contain {text:?}",
                self.shown
            ))));
        }
        Ok(Detail::new()
            .message(format!("{} from {}", status_text(status), self.shown))
            .measurement("status", f64::from(status.as_u16()), None)
            .measurement("response_time", elapsed, Some("ms"))
            .measurement("body_bytes", body.len() as f64, Some("bytes")))
    }

    /// The `host:port` a redirect points to, when it is not this check's own.
    fn foreign_location(&self, response: &reqwest::Response) -> Option<String> {
        let location = response.headers().get(reqwest::header::LOCATION)?;
        let target = response.url().join(location.to_str().ok()?).ok()?;
        let same = target.host_str() == self.url.host_str()
            && target.port_or_known_default() == self.url.port_or_known_default();
        if same {
            return None;
        }
        Some(format!(
            "{}:{}",
            target.host_str().unwrap_or("?"),
            target.port_or_known_default().unwrap_or(0)
        ))
    }

    fn describe(&self, error: &reqwest::Error) -> String {
        if let Some(io) = find_io(error) {
            return describe_io(io, &self.address);
        }
        if error.is_timeout() {
            return format!("timed out ({})", self.address);
        }
        format!("{} ({})", chain(error), self.address)
    }
}

impl Check for HttpCheck {
    fn check(&self) -> CheckFuture<'_> {
        Box::pin(self.poll())
    }

    fn dependency(&self) -> Option<&str> {
        Some("http")
    }

    fn default_timing(&self) -> Option<Timing> {
        Some(DEFAULT_TIMING)
    }

    fn default_fall(&self) -> Option<u32> {
        Some(crate::NETWORK_FALL)
    }
}

/// The check's client: same-origin redirects only, at most [`MAX_REDIRECTS`].
fn client(builder: reqwest::ClientBuilder) -> Result<reqwest::Client, reqwest::Error> {
    builder
        .redirect(Policy::custom(|attempt| {
            let same_origin = attempt.previous().first().is_none_or(|first| {
                first.host_str() == attempt.url().host_str()
                    && first.port_or_known_default() == attempt.url().port_or_known_default()
            });
            if !same_origin || attempt.previous().len() > MAX_REDIRECTS {
                attempt.stop()
            } else {
                attempt.follow()
            }
        }))
        .build()
}

/// The URL without user name or password, and with secret query values masked.
fn shown(url: &Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_password(None);
    let _ = shown.set_username("");
    redact(shown.as_str()).into_owned()
}

fn status_text(status: StatusCode) -> String {
    match status.canonical_reason() {
        Some(reason) => format!("{} {reason}", status.as_u16()),
        None => status.as_u16().to_string(),
    }
}

fn range_text(range: &RangeInclusive<u16>) -> String {
    if range.start() == range.end() {
        range.start().to_string()
    } else {
        format!("{}-{}", range.start(), range.end())
    }
}

fn size(bytes: usize) -> String {
    if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} B")
    }
}
