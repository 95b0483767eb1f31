//! TLS certificate expiry: how long the certificates an endpoint presents stay valid.
//!
//! ```
//! use probity::{CheckSpec, Tier};
//! use probity_checks::tls_expiry::TlsExpiryCheck;
//! use std::time::Duration;
//!
//! # fn build() -> Result<(), probity_checks::tls_expiry::InvalidTlsExpiryCheck> {
//! let payments = TlsExpiryCheck::new("payments.example:443")?
//!     .fail_within(Duration::from_secs(3 * 24 * 3600))
//!     .warn_within(Duration::from_secs(21 * 24 * 3600));
//! let spec = CheckSpec::new("payments-certificate", Tier::Soft, payments);
//! # let _ = spec;
//! # Ok(())
//! # }
//! ```
//!
//! Each poll opens a connection, completes a TLS handshake (rustls) and reads the chain the
//! server presents. The certificate that expires first — the server's own, or an intermediate
//! that expires before it — is judged against the wall clock:
//!
//! - **fails** from `notAfter` minus the failure margin ([`DEFAULT_FAIL_WITHIN`], 7 days) on,
//!   and once it has expired;
//! - **warns** from `notAfter` minus the warning margin ([`DEFAULT_WARN_WITHIN`], 30 days);
//! - passes otherwise, with `expires_in` (seconds) as its figure.
//!
//! A message names the certificate by subject, serial number and `notAfter` (`certificate
//! CN=payments.example (serial 1f:0a:…) expires in 52h, at 2026-12-06T06:00:00Z: inside
//! the 168h failure margin`): public facts, enough to find it in an inventory. The check never
//! holds a private key.
//!
//! The chain must be trusted — by the system's roots, plus any added with
//! [`TlsExpiryCheck::root_certificate_pem`] — and valid for the name asked (the host of the
//! target, or [`TlsExpiryCheck::server_name`]), or the check fails saying so
//! (`untrusted certificate from …: UnknownIssuer`). An expired chain is not refused for being
//! expired: its expiry is what the check reports. [`TlsExpiryCheck::any_issuer`] judges only
//! the dates, for an endpoint whose issuer this process cannot know.

use crate::error::describe_io;
use crate::millis;
use probity::{Check, CheckError, CheckFuture, CheckResult, Detail, Timing};
use probity_contract::duration::format_coarse;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::client::WebPkiServerVerifier;
use tokio_rustls::rustls::client::danger::{
    HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
};
use tokio_rustls::rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use tokio_rustls::rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, Error as TlsError, RootCertStore,
    SignatureScheme,
};

/// Interval and timeout for a TLS expiry check: a handshake per poll, for a figure that
/// changes by the day, so once a minute is plenty (a renewed certificate shows within one).
///
/// Interval 60 s, timeout 5 s.
pub const DEFAULT_TIMING: Timing = Timing {
    interval: Duration::from_secs(60),
    timeout: Duration::from_secs(5),
};

/// The check fails from this long before `notAfter`: 7 days.
pub const DEFAULT_FAIL_WITHIN: Duration = Duration::from_secs(7 * 24 * 3600);

/// The check warns from this long before `notAfter`: 30 days.
pub const DEFAULT_WARN_WITHIN: Duration = Duration::from_secs(30 * 24 * 3600);

/// Why a [`TlsExpiryCheck`] could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidTlsExpiryCheck {
    reason: String,
}

impl fmt::Display for InvalidTlsExpiryCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for InvalidTlsExpiryCheck {}

/// The expiry of the certificates `host:port` presents.
///
/// Measurement: `expires_in` (seconds until the first `notAfter`), `handshake_time` (ms).
#[derive(Clone)]
pub struct TlsExpiryCheck {
    target: String,
    server_name: ServerName<'static>,
    roots: Vec<CertificateDer<'static>>,
    any_issuer: bool,
    fail_within: Duration,
    warn_within: Duration,
    /// The connector, or why none could be built (no trusted root at all): said at each poll.
    connector: Result<TlsConnector, String>,
}

impl TlsExpiryCheck {
    /// A check of `target`, a `host:port`; the host is the name the certificate must be valid
    /// for.
    pub fn new(target: impl Into<String>) -> Result<Self, InvalidTlsExpiryCheck> {
        let target = target.into();
        let invalid = |reason: String| InvalidTlsExpiryCheck { reason };
        let Some((host, port)) = target.rsplit_once(':') else {
            return Err(invalid(format!(
                "a TLS expiry target is host:port, not {target:?}"
            )));
        };
        if host.is_empty() || port.parse::<u16>().is_err() {
            return Err(invalid(format!(
                "a TLS expiry target is host:port, not {target:?}"
            )));
        }
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let server_name = ServerName::try_from(host.to_owned())
            .map_err(|_| invalid(format!("{host:?} is neither a DNS name nor an IP address")))?;
        let mut check = Self {
            target,
            server_name,
            roots: Vec::new(),
            any_issuer: false,
            fail_within: DEFAULT_FAIL_WITHIN,
            warn_within: DEFAULT_WARN_WITHIN,
            connector: Err(String::new()),
        };
        check.connector = check.connector();
        Ok(check)
    }

    /// The name the certificate must be valid for, and sent as SNI, when it is not the
    /// target's host (a load balancer reached by address).
    pub fn server_name(mut self, name: &str) -> Result<Self, InvalidTlsExpiryCheck> {
        self.server_name =
            ServerName::try_from(name.to_owned()).map_err(|_| InvalidTlsExpiryCheck {
                reason: format!("{name:?} is neither a DNS name nor an IP address"),
            })?;
        Ok(self)
    }

    /// Also trusts the certificate authorities in `pem` (one or several PEM certificates, e.g.
    /// a cluster's internal CA). The system's roots stay trusted.
    pub fn root_certificate_pem(mut self, pem: &[u8]) -> Result<Self, InvalidTlsExpiryCheck> {
        let invalid = |reason: String| InvalidTlsExpiryCheck {
            reason: format!("invalid root certificate: {reason}"),
        };
        let mut found = 0;
        for item in
            <CertificateDer<'static> as tokio_rustls::rustls::pki_types::pem::PemObject>::pem_slice_iter(pem)
        {
            self.roots
                .push(item.map_err(|error| invalid(error.to_string()))?);
            found += 1;
        }
        if found == 0 {
            return Err(invalid("no PEM certificate found".to_owned()));
        }
        self.connector = self.connector();
        if let Err(reason) = &self.connector {
            return Err(invalid(reason.clone()));
        }
        Ok(self)
    }

    /// Judges the dates only: any issuer, any name. For an endpoint whose certificate authority
    /// this process has no copy of; the certificate is still named in every message.
    pub fn any_issuer(mut self) -> Self {
        self.any_issuer = true;
        self.connector = self.connector();
        self
    }

    /// Fails from this long before `notAfter` (default 7 days, [`DEFAULT_FAIL_WITHIN`]).
    pub fn fail_within(mut self, margin: Duration) -> Self {
        self.fail_within = margin;
        self
    }

    /// Warns from this long before `notAfter` (default 30 days, [`DEFAULT_WARN_WITHIN`]).
    pub fn warn_within(mut self, margin: Duration) -> Self {
        self.warn_within = margin;
        self
    }

    fn connector(&self) -> Result<TlsConnector, String> {
        let invalid = |reason: String| reason;
        let verifier: Arc<dyn ServerCertVerifier> = if self.any_issuer {
            Arc::new(DatesOnly::new())
        } else {
            let mut store = RootCertStore::empty();
            for root in rustls_native_certs::load_native_certs().certs {
                // A system root rustls cannot read is one fewer trusted root, not an error.
                let _ = store.add(root);
            }
            for root in &self.roots {
                store
                    .add(root.clone())
                    .map_err(|error| invalid(error.to_string()))?;
            }
            if store.is_empty() {
                return Err(invalid(
                    "no trusted root certificate: the system has none; add one with \
                     root_certificate_pem, or judge the dates only with any_issuer"
                        .to_owned(),
                ));
            }
            let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider())
                .build()
                .map_err(|error| invalid(error.to_string()))?;
            Arc::new(ExpiryIsReported(webpki))
        };
        let config = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|error| invalid(error.to_string()))?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        Ok(TlsConnector::from(Arc::new(config)))
    }

    async fn poll(&self) -> CheckResult {
        let started = Instant::now();
        let connector = self
            .connector
            .as_ref()
            .map_err(|reason| CheckError::new(reason.clone()))?;
        let stream = TcpStream::connect(&self.target)
            .await
            .map_err(|error| CheckError::new(describe_io(&error, &self.target)))?;
        let tls = connector
            .connect(self.server_name.clone(), stream)
            .await
            .map_err(|error| CheckError::new(self.describe_handshake(&error)))?;
        let handshake_time = millis(started.elapsed());
        let chain: Vec<Certificate> = tls
            .get_ref()
            .1
            .peer_certificates()
            .unwrap_or_default()
            .iter()
            .map(|der| Certificate::parse(der))
            .collect::<Result<_, _>>()
            .map_err(|reason| CheckError::new(format!("{} presented {reason}", self.target)))?;
        let result = judge(
            &chain,
            SystemTime::now(),
            self.fail_within,
            self.warn_within,
        );
        match result {
            Ok(detail) => Ok(detail.measurement("handshake_time", handshake_time, Some("ms"))),
            Err(error) => Err(error.measurement("handshake_time", handshake_time, Some("ms"))),
        }
    }

    fn describe_handshake(&self, error: &std::io::Error) -> String {
        let tls = std::error::Error::source(error)
            .and_then(|source| source.downcast_ref::<TlsError>())
            .or_else(|| {
                error
                    .get_ref()
                    .and_then(|inner| inner.downcast_ref::<TlsError>())
            });
        match tls {
            Some(TlsError::InvalidCertificate(reason)) => {
                format!("untrusted certificate from {}: {reason:?}", self.target)
            }
            Some(other) => format!("TLS handshake with {} failed: {other}", self.target),
            None => describe_io(error, &self.target),
        }
    }
}

impl fmt::Debug for TlsExpiryCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsExpiryCheck")
            .field("target", &self.target)
            .field("server_name", &self.server_name)
            .field("any_issuer", &self.any_issuer)
            .field("fail_within", &self.fail_within)
            .field("warn_within", &self.warn_within)
            .finish_non_exhaustive()
    }
}

impl Check for TlsExpiryCheck {
    fn check(&self) -> CheckFuture<'_> {
        Box::pin(self.poll())
    }

    fn dependency(&self) -> Option<&str> {
        Some("tls")
    }

    fn default_timing(&self) -> Option<Timing> {
        Some(DEFAULT_TIMING)
    }

    fn default_fall(&self) -> Option<u32> {
        Some(crate::NETWORK_FALL)
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(tokio_rustls::rustls::crypto::ring::default_provider())
}

/// What names a certificate: public facts only.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Certificate {
    subject: String,
    serial: String,
    /// `notAfter`, in seconds since the Unix epoch.
    not_after: i64,
}

impl Certificate {
    fn parse(der: &CertificateDer<'_>) -> Result<Self, String> {
        let (_, certificate) = x509_parser::parse_x509_certificate(der.as_ref())
            .map_err(|error| format!("a certificate that cannot be read: {error}"))?;
        let subject = certificate.subject().to_string();
        Ok(Self {
            subject: if subject.is_empty() {
                "(empty subject)".to_owned()
            } else {
                subject
            },
            serial: certificate.raw_serial_as_string(),
            not_after: certificate.validity().not_after.timestamp(),
        })
    }

    fn named(&self) -> String {
        format!(
            "certificate {} (serial {}, notAfter {})",
            self.subject,
            self.serial,
            rfc3339(self.not_after)
        )
    }
}

fn rfc3339(seconds: i64) -> String {
    let time = if seconds >= 0 {
        UNIX_EPOCH + Duration::from_secs(seconds.unsigned_abs())
    } else {
        UNIX_EPOCH - Duration::from_secs(seconds.unsigned_abs())
    };
    humantime::format_rfc3339_seconds(time).to_string()
}

/// The verdict on a chain at `now`: the certificate that expires first decides.
fn judge(
    chain: &[Certificate],
    now: SystemTime,
    fail_within: Duration,
    warn_within: Duration,
) -> CheckResult {
    let Some(first) = chain.iter().min_by_key(|certificate| certificate.not_after) else {
        return Err(CheckError::new("the server presented no certificate"));
    };
    let now = match now.duration_since(UNIX_EPOCH) {
        Ok(since) => since.as_secs() as i64,
        Err(before) => -(before.duration().as_secs() as i64),
    };
    let left = first.not_after - now;
    let role = if chain.first() == Some(first) || chain.len() == 1 {
        ""
    } else {
        " (an intermediate, which expires before the server's own)"
    };
    if left <= 0 {
        return Err(CheckError::new(format!(
            "{}{role} expired {} ago",
            first.named(),
            format_coarse(Duration::from_secs(left.unsigned_abs()))
        ))
        .measurement("expires_in", left as f64, Some("s")));
    }
    let remaining = Duration::from_secs(left.unsigned_abs());
    if remaining <= fail_within {
        return Err(CheckError::new(format!(
            "{}{role} expires in {}: inside the {} failure margin",
            first.named(),
            format_coarse(remaining),
            format_coarse(fail_within)
        ))
        .measurement("expires_in", left as f64, Some("s")));
    }
    let detail = Detail::new().measurement("expires_in", left as f64, Some("s"));
    if remaining <= warn_within {
        return Ok(detail
            .message(format!(
                "{}{role} expires in {}",
                first.named(),
                format_coarse(remaining)
            ))
            .warning(format!(
                "{}{role} expires in {}: inside the {} warning margin",
                first.named(),
                format_coarse(remaining),
                format_coarse(warn_within)
            )));
    }
    Ok(detail.message(format!(
        "{}{role} valid for {} more",
        first.named(),
        format_coarse(remaining)
    )))
}

/// Verifies the chain and the name, and lets an expired chain through: its expiry is what the
/// check reports, with the certificate's name, instead of a bare handshake error.
#[derive(Debug)]
struct ExpiryIsReported(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ExpiryIsReported {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, TlsError> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(TlsError::InvalidCertificate(
                CertificateError::Expired | CertificateError::ExpiredContext { .. },
            )) => {
                // Still trusted and named right? Ask again at a time the chain was valid.
                let (_, leaf) = x509_parser::parse_x509_certificate(end_entity.as_ref())
                    .map_err(|_| TlsError::InvalidCertificate(CertificateError::BadEncoding))?;
                let before = leaf.validity().not_after.timestamp().max(1) - 1;
                let then = UnixTime::since_unix_epoch(Duration::from_secs(before.unsigned_abs()));
                self.0.verify_server_cert(
                    end_entity,
                    intermediates,
                    server_name,
                    ocsp_response,
                    then,
                )
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// Accepts any chain (the dates are judged after the handshake) but still checks the
/// handshake's signatures, so the chain read is the one the server holds the key of.
#[derive(Debug)]
struct DatesOnly(WebPkiSupportedAlgorithms);

impl DatesOnly {
    fn new() -> Self {
        Self(provider().signature_verification_algorithms)
    }
}

impl ServerCertVerifier for DatesOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, TlsError> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        tokio_rustls::rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        tokio_rustls::rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400;

    fn certificate(subject: &str, not_after: i64) -> Certificate {
        Certificate {
            subject: subject.to_owned(),
            serial: "2a".to_owned(),
            not_after,
        }
    }

    fn at(seconds: i64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(seconds.unsigned_abs())
    }

    const NOW: i64 = 1_800_000_000;

    fn verdict(chain: &[Certificate]) -> CheckResult {
        judge(chain, at(NOW), DEFAULT_FAIL_WITHIN, DEFAULT_WARN_WITHIN)
    }

    #[test]
    fn the_margins_decide_pass_warn_and_fail() {
        let valid = verdict(&[certificate("CN=a", NOW + 90 * DAY)]).unwrap();
        assert_eq!(valid.warning, None);
        assert_eq!(
            valid.message.as_deref(),
            Some(
                "certificate CN=a (serial 2a, notAfter 2027-04-15T08:00:00Z) valid for 2160h more"
            )
        );
        let soon = verdict(&[certificate("CN=a", NOW + 20 * DAY + 3600)]).unwrap();
        assert_eq!(
            soon.warning.as_deref(),
            Some(
                "certificate CN=a (serial 2a, notAfter 2027-02-04T09:00:00Z) expires in 481h: \
                 inside the 720h warning margin"
            )
        );
        let error = verdict(&[certificate("CN=a", NOW + 7 * DAY)]).unwrap_err();
        assert_eq!(
            error.message(),
            "certificate CN=a (serial 2a, notAfter 2027-01-22T08:00:00Z) expires in 168h: inside \
             the 168h failure margin"
        );
        let error = verdict(&[certificate("CN=a", NOW - 2 * 3600 - 60)]).unwrap_err();
        assert_eq!(
            error.message(),
            "certificate CN=a (serial 2a, notAfter 2027-01-15T05:59:00Z) expired 2h1m ago"
        );
    }

    #[test]
    fn an_intermediate_expiring_first_is_the_one_named() {
        let error = verdict(&[
            certificate("CN=leaf", NOW + 300 * DAY),
            certificate("CN=Issuing CA", NOW + DAY),
        ])
        .unwrap_err();
        assert!(
            error.message().starts_with(
                "certificate CN=Issuing CA (serial 2a, notAfter 2027-01-16T08:00:00Z) (an \
                 intermediate, which expires before the server's own) expires in 24h"
            ),
            "{}",
            error.message()
        );
        assert_eq!(
            verdict(&[]).unwrap_err().message(),
            "the server presented no certificate"
        );
    }
}
