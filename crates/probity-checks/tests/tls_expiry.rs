//! TLS certificate expiry against a real TLS server started by the tests, serving certificates
//! generated for the run with the expiry each test needs.

#![cfg(feature = "tls-expiry")]

mod support;

use probity::Check;
use probity_checks::tls_expiry::TlsExpiryCheck;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair, SerialNumber};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use support::{failure, figure, poll, success};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use x509_parser::time::ASN1Time;

const TIMEOUT: Duration = Duration::from_secs(2);
const DAY: i64 = 86_400;

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs() as i64
}

/// A certificate authority, and a certificate it signed for `localhost` valid until `now +
/// not_after` seconds (negative: already expired), with serial `serial`.
struct Pki {
    ca_pem: String,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    key_pem: String,
    /// `notAfter` as written in the certificate (whole seconds).
    not_after: i64,
}

fn pki(not_after: i64, serial: u64) -> Pki {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().expect("ca key"))
        .expect("ca certificate");

    let server_key = KeyPair::generate().expect("server key");
    let mut params = CertificateParams::new(vec!["localhost".to_owned()]).expect("params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "payments.localhost");
    params.serial_number = Some(SerialNumber::from(serial));
    let not_after = now() + not_after;
    params.not_before = ASN1Time::from_timestamp(not_after - 400 * DAY)
        .expect("time")
        .to_datetime();
    params.not_after = ASN1Time::from_timestamp(not_after)
        .expect("time")
        .to_datetime();
    let server = params
        .signed_by(&server_key, &ca)
        .expect("server certificate");
    Pki {
        ca_pem: ca.pem(),
        chain: vec![server.der().clone()],
        key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der())),
        key_pem: server_key.serialize_pem(),
        not_after,
    }
}

/// A TLS server that completes handshakes with `pki`'s certificate and closes.
async fn tls_server(pki: &Pki) -> SocketAddr {
    let config = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(pki.chain.clone(), pki.key.clone_key())
        .expect("server config");
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let _ = acceptor.accept(socket).await;
            });
        }
    });
    address
}

fn check(address: SocketAddr, pki: &Pki) -> TlsExpiryCheck {
    TlsExpiryCheck::new(format!("localhost:{}", address.port()))
        .expect("valid")
        .root_certificate_pem(pki.ca_pem.as_bytes())
        .expect("a valid CA")
}

fn rfc3339(seconds: i64) -> String {
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(seconds as u64)).to_string()
}

#[tokio::test]
async fn a_certificate_far_from_expiry_passes_with_its_remaining_validity() {
    let pki = pki(90 * DAY, 0x2a);
    let address = tls_server(&pki).await;
    let check = check(address, &pki);
    assert_eq!(check.dependency(), Some("tls"));
    let detail = success(poll(&check, TIMEOUT).await);
    assert_eq!(detail.warning, None);
    let message = detail.message.expect("a message");
    assert!(
        message.starts_with(&format!(
            "certificate CN=payments.localhost (serial 2a, notAfter {}) valid for 2159h more",
            rfc3339(pki.not_after)
        )) || message.starts_with(&format!(
            "certificate CN=payments.localhost (serial 2a, notAfter {}) valid for 2160h more",
            rfc3339(pki.not_after)
        )),
        "{message}"
    );
    let left = figure(&detail.measurements, "expires_in").expect("expires_in");
    assert!((left - (90 * DAY) as f64).abs() < 60.0, "{left}");
    assert!(figure(&detail.measurements, "handshake_time").is_some());
}

#[tokio::test]
async fn inside_the_warning_margin_warns_naming_the_certificate_not_the_key() {
    let pki = pki(20 * DAY + 3 * 3600 + 600, 0x1f0a);
    let address = tls_server(&pki).await;
    let detail = success(poll(&check(address, &pki), TIMEOUT).await);
    let warning = detail.warning.expect("a warning");
    assert_eq!(
        warning,
        format!(
            "certificate CN=payments.localhost (serial 1f:0a, notAfter {}) expires in 483h: \
             inside the 720h warning margin",
            rfc3339(pki.not_after)
        )
    );
    // The key's PEM body never appears in what the check says.
    let key_body: String = pki
        .key_pem
        .lines()
        .filter(|line| !line.starts_with("-----"))
        .collect();
    assert!(!warning.contains(&key_body[..20]));
}

#[tokio::test]
async fn inside_the_failure_margin_fails_and_the_margins_are_the_callers() {
    let pki = pki(3 * DAY + 3600 + 600, 7);
    let address = tls_server(&pki).await;
    let error = failure(poll(&check(address, &pki), TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!(
            "certificate CN=payments.localhost (serial 07, notAfter {}) expires in 73h: inside \
             the 168h failure margin",
            rfc3339(pki.not_after)
        )
    );
    // A two-day failure margin and a five-day warning margin: the same certificate warns.
    let relaxed = check(address, &pki)
        .fail_within(Duration::from_secs(2 * DAY as u64))
        .warn_within(Duration::from_secs(5 * DAY as u64));
    let detail = success(poll(&relaxed, TIMEOUT).await);
    assert!(
        detail
            .warning
            .as_deref()
            .is_some_and(|warning| warning.ends_with("inside the 120h warning margin")),
        "{detail:?}"
    );
}

#[tokio::test]
async fn an_expired_certificate_is_named_not_refused_by_the_handshake() {
    let pki = pki(-(2 * DAY + 600), 9);
    let address = tls_server(&pki).await;
    let error = failure(poll(&check(address, &pki), TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!(
            "certificate CN=payments.localhost (serial 09, notAfter {}) expired 48h ago",
            rfc3339(pki.not_after)
        )
    );
}

#[tokio::test]
async fn an_untrusted_issuer_fails_unless_only_the_dates_are_judged() {
    let pki = pki(90 * DAY, 3);
    let address = tls_server(&pki).await;
    let untrusted = TlsExpiryCheck::new(format!("localhost:{}", address.port())).expect("valid");
    let error = failure(poll(&untrusted, TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!(
            "untrusted certificate from localhost:{}: UnknownIssuer",
            address.port()
        )
    );
    let dates_only = TlsExpiryCheck::new(format!("127.0.0.1:{}", address.port()))
        .expect("valid")
        .any_issuer();
    success(poll(&dates_only, TIMEOUT).await);
}

#[tokio::test]
async fn a_certificate_for_another_name_fails_and_server_name_sets_the_name() {
    let pki = pki(90 * DAY, 4);
    let address = tls_server(&pki).await;
    let by_address = TlsExpiryCheck::new(format!("127.0.0.1:{}", address.port()))
        .expect("valid")
        .root_certificate_pem(pki.ca_pem.as_bytes())
        .expect("a valid CA");
    let error = failure(poll(&by_address, TIMEOUT).await);
    assert!(
        error.message().starts_with(&format!(
            "untrusted certificate from 127.0.0.1:{}: NotValidForName",
            address.port()
        )),
        "{}",
        error.message()
    );
    let named = by_address.server_name("localhost").expect("a name");
    success(poll(&named, TIMEOUT).await);
}

#[tokio::test]
async fn a_plain_tcp_server_and_a_closed_port_say_what_they_are() {
    let port = support::closed_port().await;
    let check = TlsExpiryCheck::new(format!("127.0.0.1:{port}")).expect("valid");
    assert_eq!(
        failure(poll(&check, TIMEOUT).await).message(),
        format!("connection refused (127.0.0.1:{port})")
    );
    let silent = support::silent_listener().await;
    let check = TlsExpiryCheck::new(silent.to_string()).expect("valid");
    assert_eq!(
        failure(poll(&check, TIMEOUT).await).message(),
        "timed out after 2s"
    );
}

#[test]
fn targets_and_roots_are_validated_when_built() {
    assert_eq!(
        TlsExpiryCheck::new("payments").unwrap_err().to_string(),
        "a TLS expiry target is host:port, not \"payments\""
    );
    assert_eq!(
        TlsExpiryCheck::new("payments:443")
            .expect("valid")
            .root_certificate_pem(b"no certificate here")
            .unwrap_err()
            .to_string(),
        "invalid root certificate: no PEM certificate found"
    );
}
