//! The agent's `memcached`, `etcd`, `grpc_health` and `tls_certificate` kinds, end to end: each
//! configured check runs against a real server (memcached at 127.0.0.1:11211, etcd at
//! 127.0.0.1:2379) or a port nobody listens on, and readiness says what it found.

mod support;

use probity_agent::{Config, Format};
use std::path::Path;
use std::time::Duration;
use support::{client, eventually, get, require};
use tokio::net::TcpListener;

fn reachable(address: &str) -> bool {
    std::net::TcpStream::connect_timeout(&address.parse().unwrap(), Duration::from_secs(2)).is_ok()
}

/// A loopback port nobody listens on.
async fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memcached_and_etcd_checks_pass_against_the_real_servers() {
    if !require(
        reachable("127.0.0.1:11211"),
        "memcached is not reachable at 127.0.0.1:11211",
    ) || !require(
        reachable("127.0.0.1:2379"),
        "etcd is not reachable at 127.0.0.1:2379",
    ) {
        return;
    }
    let config = "service: sessions\n\
                  listen: {details: shown}\n\
                  readiness:\n  \
                    cache:\n    memcached: {target: \"127.0.0.1:11211\"}\n    interval: 500ms\n  \
                    config-store:\n    etcd: {url: \"http://127.0.0.1:2379\"}\n    interval: 500ms\n";
    let agent = support::agent(config, Format::Yaml).await;
    let http = client();
    let ready = eventually(Duration::from_secs(20), || async {
        get(&http, &format!("{}/readyz?verbose", agent.url))
            .await
            .filter(|(status, _)| *status == 200)
    })
    .await
    .expect("readiness never passed");
    assert!(ready.1.contains("[+]cache ok"), "{}", ready.1);
    assert!(ready.1.contains("[+]config-store ok"), "{}", ready.1);
    // The contract names each check's dependency.
    let (_, contract) = get(&http, &format!("{}/contract", agent.url))
        .await
        .unwrap();
    assert!(
        contract.contains("\"memcached\"") && contract.contains("\"etcd\""),
        "{contract}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_health_and_tls_certificate_checks_report_what_they_found() {
    let grpc = closed_port().await;
    let tls = closed_port().await;
    let config = format!(
        "service: shop\n\
         listen: {{details: shown}}\n\
         readiness:\n  \
           inventory:\n    grpc_health: {{target: \"127.0.0.1:{grpc}\", service: shop.Inventory}}\n    interval: 500ms\n    fall: 1\n  \
           payments-certificate:\n    tls_certificate: {{target: \"127.0.0.1:{tls}\", any_issuer: true, fail_within: 3d, warn_within: 21d}}\n    tier: soft\n    interval: 500ms\n    fall: 1\n"
    );
    let agent = support::agent(&config, Format::Yaml).await;
    let http = client();
    let failed = eventually(Duration::from_secs(20), || async {
        get(&http, &format!("{}/readyz?verbose", agent.url))
            .await
            .filter(|(status, body)| *status == 503 && body.contains("payments-certificate"))
    })
    .await
    .expect("readiness never failed");
    assert!(
        failed.1.contains(&format!(
            "[-]inventory failed: connection refused (127.0.0.1:{grpc})"
        )),
        "{}",
        failed.1
    );
    assert!(
        failed.1.contains(&format!(
            "payments-certificate degraded (soft): connection refused (127.0.0.1:{tls})"
        )),
        "{}",
        failed.1
    );
}

#[test]
fn the_new_kinds_are_validated_where_they_are_written() {
    // A target the check cannot use is refused when the agent is built, naming the check.
    let config = Config::parse(
        "[readiness.inventory]\ngrpc_health = { target = \"https://inventory:50051\" }\n",
        Format::Toml,
        Path::new("agent.toml"),
    )
    .unwrap();
    let Err(failure) = probity_agent::Agent::build(&config) else {
        panic!("a TLS target was accepted");
    };
    let text = failure.to_string();
    assert!(text.contains("inventory"), "{text}");
    assert!(
        text.contains("the gRPC health check speaks plaintext HTTP/2 only"),
        "{text}"
    );

    let error = Config::parse(
        "[readiness.inventory]\ngrpc_health = { target = \"inventory:50051\", servce = \"x\" }\n",
        Format::Toml,
        Path::new("agent.toml"),
    )
    .unwrap_err();
    assert_eq!(error.line(), Some(2), "{error}");
    assert!(
        error.to_string().contains("unknown field `servce`"),
        "{error}"
    );

    let error = Config::parse(
        "[liveness.certificate]\ntls_certificate = { target = \"payments:443\" }\n",
        Format::Toml,
        Path::new("agent.toml"),
    )
    .unwrap_err();
    assert!(
        error.to_string().contains(
            "`tls_certificate` judges an endpoint's certificate, which a restart does not renew"
        ),
        "{error}"
    );
}
