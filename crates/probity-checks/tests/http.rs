//! HTTP checks against real HTTP/1.1 servers started by the tests.

#![cfg(feature = "http")]

mod support;

use probity::Check;
use probity_checks::http_endpoint::HttpCheck;
use std::net::SocketAddr;
use std::time::Duration;
use support::{assert_no_secret, failure, figure, poll, success};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const TIMEOUT: Duration = Duration::from_secs(2);

/// A server answering every request with the response `respond` builds from the request path.
async fn server(respond: fn(&str, SocketAddr) -> String) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buffer = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buffer).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buffer[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&request);
                let path = text.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let _ = socket.write_all(respond(&path, address).as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    address
}

fn response(status: &str, headers: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n{headers}\r\n{body}",
        body.len()
    )
}

fn routes(path: &str, address: SocketAddr) -> String {
    match path {
        "/ok" => response("200 OK", "", "ok"),
        "/down" => response("503 Service Unavailable", "", "db down"),
        "/moved" => response("302 Found", "location: /ok\r\n", ""),
        "/away" => response(
            "302 Found",
            &format!("location: http://localhost:{}/ok\r\n", address.port()),
            "",
        ),
        "/big" => response("200 OK", "", &"x".repeat(100_000)),
        _ => response("404 Not Found", "", ""),
    }
}

#[tokio::test]
async fn expected_status_passes_with_figures() {
    let address = server(routes).await;
    let check = HttpCheck::new(&format!("http://{address}/ok")).expect("valid");
    assert_eq!(check.dependency(), Some("http"));
    let detail = success(poll(&check, TIMEOUT).await);
    assert_eq!(figure(&detail.measurements, "status"), Some(200.0));
    assert_eq!(figure(&detail.measurements, "body_bytes"), Some(2.0));
    assert_eq!(
        detail.message.as_deref(),
        Some(format!("200 OK from http://{address}/ok").as_str())
    );
}

#[tokio::test]
async fn unexpected_status_fails_naming_it() {
    let address = server(routes).await;
    let check = HttpCheck::new(&format!("http://{address}/down")).expect("valid");
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!(
            "unexpected status 503 Service Unavailable from http://{address}/down (expected 200-299)"
        )
    );
    let check = HttpCheck::new(&format!("http://{address}/down"))
        .expect("valid")
        .expect_status(503..=503);
    success(poll(&check, TIMEOUT).await);
}

#[tokio::test]
async fn same_host_redirects_are_followed_other_hosts_are_not() {
    let address = server(routes).await;
    let check = HttpCheck::new(&format!("http://{address}/moved")).expect("valid");
    assert_eq!(
        figure(&success(poll(&check, TIMEOUT).await).measurements, "status"),
        Some(200.0)
    );
    let check = HttpCheck::new(&format!("http://{address}/away")).expect("valid");
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!(
            "redirected to another host (localhost:{}), not followed",
            address.port()
        )
    );
}

#[tokio::test]
async fn body_over_the_cap_fails() {
    let address = server(routes).await;
    let check = HttpCheck::new(&format!("http://{address}/big")).expect("valid");
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(error.message(), "response body exceeds the 64 KiB cap");
    let check = HttpCheck::new(&format!("http://{address}/big"))
        .expect("valid")
        .max_body(200_000);
    success(poll(&check, TIMEOUT).await);
}

#[tokio::test]
async fn body_text_is_checked() {
    let address = server(routes).await;
    let check = HttpCheck::new(&format!("http://{address}/ok"))
        .expect("valid")
        .body_contains("ready");
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!("response body from http://{address}/ok does not contain \"ready\"")
    );
}

#[tokio::test]
async fn closed_port_is_refused_and_the_password_never_shows() {
    let port = support::closed_port().await;
    let check = HttpCheck::new(&format!(
        "http://probe:hunter2-s3cret@127.0.0.1:{port}/readyz?token=t0k3n"
    ))
    .expect("valid");
    let error = failure(poll(&check, TIMEOUT).await);
    assert_eq!(
        error.message(),
        format!("connection refused (127.0.0.1:{port})")
    );
    assert_no_secret(&error, &["hunter2-s3cret", "t0k3n"]);
}

#[tokio::test]
async fn status_errors_do_not_show_credentials_either() {
    let address = server(routes).await;
    let check = HttpCheck::new(&format!(
        "http://probe:hunter2-s3cret@{address}/down?token=t0k3n"
    ))
    .expect("valid");
    let error = failure(poll(&check, TIMEOUT).await);
    assert_no_secret(&error, &["hunter2-s3cret", "t0k3n"]);
    assert!(
        error
            .message()
            .contains(&format!("http://{address}/down?token=***")),
        "{}",
        error.message()
    );
}

#[tokio::test]
async fn server_that_never_answers_times_out() {
    let address = support::silent_listener().await;
    let check = HttpCheck::new(&format!("http://{address}/readyz")).expect("valid");
    let error = failure(poll(&check, Duration::from_millis(500)).await);
    assert_eq!(error.message(), "timed out after 500ms");
}

#[test]
fn bad_urls_are_rejected_with_the_reason() {
    let error = HttpCheck::new("ftp://u:hunter2@api.example/").unwrap_err();
    assert_eq!(
        error.to_string(),
        "unsupported scheme \"ftp\" in ftp://api.example/: only http and https are supported"
    );
    let https = HttpCheck::new("https://u:hunter2@api.example/");
    if cfg!(feature = "http-tls") {
        assert!(https.is_ok());
    } else {
        assert_eq!(
            https.unwrap_err().to_string(),
            "https://api.example/ needs TLS: enable the `http-tls` feature of probity-checks"
        );
    }
    let error = HttpCheck::new("not a url").unwrap_err();
    assert!(
        error.to_string().starts_with("invalid url \"not a url\""),
        "{error}"
    );
}
