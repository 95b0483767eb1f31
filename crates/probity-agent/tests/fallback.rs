//! A hard check with a fallback, configured in the agent: while the check fails and its
//! fallback serves, readiness warns (200, in rotation) and says what serves instead; when the
//! fallback fails too, readiness fails. A fallback that names no check is refused at load.

mod support;

use probity_agent::{Agent, Config, Format};
use std::time::Duration;
use support::{client, eventually, get};
use tokio::net::TcpListener;

/// A dependency that accepts connections until it is dropped; then connections are refused.
async fn dependency() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    (listener, address)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_check_whose_fallback_serves_keeps_the_instance_in_rotation() {
    let (database, database_address) = dependency().await;
    let (cache, cache_address) = dependency().await;
    let config = format!(
        "service: orders\n\
         listen: {{details: shown}}\n\
         readiness:\n  \
           db:\n    tcp: {{target: \"{database_address}\"}}\n    interval: 200ms\n    fall: 1\n    fallback: cache\n  \
           cache:\n    tcp: {{target: \"{cache_address}\"}}\n    tier: soft\n    interval: 200ms\n    fall: 1\n"
    );
    let agent = support::agent(&config, Format::Yaml).await;
    let http = client();
    let url = |path: &str| format!("{}{path}", agent.url);

    let ready = eventually(Duration::from_secs(20), || async {
        get(&http, &url("/readyz"))
            .await
            .filter(|(status, _)| *status == 200)
    })
    .await;
    assert_eq!(ready.map(|(_, body)| body).as_deref(), Some("ok\n"));

    // The database goes away for everyone; the cache still serves reads.
    drop(database);
    let degraded = eventually(Duration::from_secs(20), || async {
        get(&http, &url("/readyz?verbose"))
            .await
            .filter(|(_, body)| body.contains("[!]db degraded"))
    })
    .await
    .expect("readiness never showed db degraded");
    assert_eq!(degraded.0, 200, "{}", degraded.1);
    assert!(
        degraded.1.contains("cache serves instead") && degraded.1.contains("passed with warnings"),
        "{}",
        degraded.1
    );
    // The contract shows the fallback.
    let (_, contract) = get(&http, &url("/contract")).await.unwrap();
    let contract: serde_json::Value = serde_json::from_str(&contract).unwrap();
    let db = contract["checks"]
        .as_array()
        .and_then(|checks| checks.iter().find(|check| check["name"] == "db"))
        .unwrap_or_else(|| panic!("no db in {contract}"));
    assert_eq!(db["fallback"], "cache", "{contract}");

    // The cache goes too: nothing serves, readiness fails and names db.
    drop(cache);
    let failed = eventually(Duration::from_secs(20), || async {
        get(&http, &url("/readyz?verbose"))
            .await
            .filter(|(status, _)| *status == 503)
    })
    .await
    .expect("readiness never failed with the fallback down too");
    assert!(failed.1.contains("[-]db failed"), "{}", failed.1);
}

#[test]
fn a_fallback_that_names_no_check_is_refused_at_load() {
    let config = Config::parse(
        "readiness:\n  db:\n    tcp: {target: \"127.0.0.1:5432\"}\n    fallback: cach\n",
        Format::Yaml,
        std::path::Path::new("agent.yaml"),
    )
    .expect("the file itself is well formed");
    let Err(error) = Agent::build(&config) else {
        panic!("an unknown fallback must be refused");
    };
    let error = format!("{error:?}");
    assert!(error.contains("cach"), "{error}");
}
