//! HTTPS checks against a real TLS server started by the tests, with a certificate authority
//! generated for the run.

#![cfg(feature = "http-tls")]

mod support;

use probity_checks::http_endpoint::HttpCheck;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use support::{failure, figure, poll, success};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

const TIMEOUT: Duration = Duration::from_secs(2);

/// A certificate authority, and a server certificate it signed for `names`.
struct Pki {
    ca_pem: String,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
}

fn pki(names: &[&str]) -> Pki {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().expect("ca key");
    let ca = CertifiedIssuer::self_signed(ca_params, ca_key).expect("ca certificate");

    let server_key = KeyPair::generate().expect("server key");
    let server = CertificateParams::new(
        names
            .iter()
            .map(|name| (*name).to_owned())
            .collect::<Vec<_>>(),
    )
    .expect("server params")
    .signed_by(&server_key, &ca)
    .expect("server certificate");
    Pki {
        ca_pem: ca.pem(),
        chain: vec![server.der().clone()],
        key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der())),
    }
}

/// An HTTPS server answering `/ok` with 200 and anything else with 503.
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
                // A client that rejects the certificate ends the handshake: nothing to serve.
                let Ok(mut stream) = acceptor.accept(socket).await else {
                    return;
                };
                let mut request = Vec::new();
                let mut buffer = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buffer).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buffer[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&request);
                let (status, body) = match text.split_whitespace().nth(1) {
                    Some("/ok") => ("200 OK", "ok"),
                    _ => ("503 Service Unavailable", "down"),
                };
                let response = format!(
                    "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    address
}

#[tokio::test]
async fn https_passes_against_a_server_signed_by_a_trusted_authority() {
    let pki = pki(&["localhost"]);
    let address = tls_server(&pki).await;
    let check = HttpCheck::new(&format!("https://localhost:{}/ok", address.port()))
        .expect("valid")
        .root_certificate_pem(pki.ca_pem.as_bytes())
        .expect("a valid CA");
    let detail = success(poll(&check, TIMEOUT).await);
    assert_eq!(figure(&detail.measurements, "status"), Some(200.0));

    // The status is still judged over TLS.
    let check = HttpCheck::new(&format!("https://localhost:{}/readyz", address.port()))
        .expect("valid")
        .root_certificate_pem(pki.ca_pem.as_bytes())
        .expect("a valid CA");
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!(
            "unexpected status 503 Service Unavailable from https://localhost:{}/readyz \
             (expected 200-299)",
            address.port()
        )
    );
}

#[tokio::test]
async fn an_untrusted_certificate_fails_saying_so() {
    let pki = pki(&["localhost"]);
    let address = tls_server(&pki).await;
    // Only the system's roots: the generated authority is unknown.
    let check = HttpCheck::new(&format!("https://localhost:{}/ok", address.port())).expect("valid");
    let error = failure(poll(&check, TIMEOUT).await);
    let message = error.message();
    assert!(message.contains("UnknownIssuer"), "{message}");
    assert!(
        message.ends_with(&format!("(localhost:{})", address.port())),
        "{message}"
    );
}

#[tokio::test]
async fn a_certificate_for_another_name_fails_saying_so() {
    let pki = pki(&["pricing.internal"]);
    let address = tls_server(&pki).await;
    let check = HttpCheck::new(&format!("https://localhost:{}/ok", address.port()))
        .expect("valid")
        .root_certificate_pem(pki.ca_pem.as_bytes())
        .expect("a valid CA");
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!(
            "invalid peer certificate: certificate not valid for name \"localhost\"; certificate \
             is only valid for DnsName(\"pricing.internal\") (localhost:{})",
            address.port()
        )
    );
}

#[test]
fn a_malformed_root_certificate_is_rejected_when_built() {
    let check = || HttpCheck::new("https://localhost:8443/ok").expect("valid");
    let error = check()
        .root_certificate_pem(
            b"-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n",
        )
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid root certificate: builder error: invalid peer certificate: BadEncoding"
    );
    let error = check()
        .root_certificate_pem(b"no certificate here")
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid root certificate: no PEM certificate found"
    );
}
