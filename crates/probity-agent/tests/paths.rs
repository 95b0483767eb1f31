//! Configured probe paths (`/internal/live` + `/internal/ready`, a service's own choice) carried
//! into every answer and the contract, and a heartbeat file as the liveness condition: no
//! external service needed.

mod support;

use probity_agent::Format;
use std::time::Duration;
use support::{client, eventually, get};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_paths_and_a_heartbeat_file() {
    // A dependency that accepts connections: a listener of the test's own.
    let dependency = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target = dependency.local_addr().unwrap();
    let accept = tokio::spawn(async move {
        while let Ok((stream, _)) = dependency.accept().await {
            drop(stream);
        }
    });
    let dir = std::env::temp_dir().join(format!("probity-agent-paths-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let heartbeat = dir.join("heartbeat");
    let _ = std::fs::remove_file(&heartbeat);
    let config = format!(
        "service: worker\n\
         paths: {{liveness: /internal/live, readiness: /internal/ready, startup: /internal/started}}\n\
         listen: {{details: shown}}\n\
         readiness:\n  queue:\n    tcp: {{target: \"{target}\"}}\n    interval: 500ms\n\
         liveness:\n  worker:\n    heartbeat_file: {{path: \"{}\", max_age: 2s}}\n    interval: 250ms\n",
        heartbeat.display()
    );
    let agent = support::agent(&config, Format::Yaml).await;
    let http = client();
    let url = |path: &str| format!("{}{path}", agent.url);

    // No heartbeat file yet: the worker is booting (a bounded wait), not wedged.
    let (status, body) = get(&http, &url("/internal/live")).await.unwrap();
    assert_eq!(status, 200, "{body}");
    let (status, body) = get(&http, &url("/internal/started?verbose")).await.unwrap();
    assert_eq!(status, 503, "{body}");

    // The worker beats: startup passes, readiness follows its check.
    let beating = tokio::spawn({
        let heartbeat = heartbeat.clone();
        async move {
            // Bounded: 20 s of beats at most.
            for _ in 0..100 {
                std::fs::write(&heartbeat, b"beat").unwrap();
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    });
    let ready = eventually(Duration::from_secs(20), || async {
        get(&http, &url("/internal/ready?verbose"))
            .await
            .filter(|(status, _)| *status == 200)
    })
    .await
    .expect("never ready");
    assert!(ready.1.contains("[+]queue ok"), "{}", ready.1);
    let (status, body) = get(&http, &url("/internal/ready/queue")).await.unwrap();
    assert_eq!((status, body.as_str()), (200, "ok\n"));
    let (status, body) = get(&http, &url("/internal/live?verbose")).await.unwrap();
    assert_eq!(status, 200);
    assert!(body.contains("[+]worker ok"), "{body}");
    let (status, _) = get(&http, &url("/internal/ready/nothing")).await.unwrap();
    assert_eq!(status, 404);
    // The core's default paths are not where this agent answers probes from its contract.
    let (_, contract) = get(&http, &url("/contract")).await.unwrap();
    let contract: serde_json::Value = serde_json::from_str(&contract).unwrap();
    let paths: Vec<&str> = contract["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|endpoint| endpoint["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        ["/internal/live", "/internal/ready", "/internal/started"]
    );
    // A listener that shows details serves the status page, with the agent's own entries.
    let (status, page) = get(&http, &url("/status")).await.unwrap();
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("queue") && page.contains("worker"), "{page}");

    // The worker stops beating: liveness fails once the file is older than its bound.
    beating.abort();
    let failed = eventually(Duration::from_secs(20), || async {
        get(&http, &url("/internal/live"))
            .await
            .filter(|(status, _)| *status == 503)
    })
    .await
    .expect("liveness never failed after the heartbeat stopped");
    assert!(
        failed.1.contains("[-]worker failed: worker silent for"),
        "{}",
        failed.1
    );
    let (status, body) = get(&http, &url("/internal/live/worker")).await.unwrap();
    assert_eq!(status, 503, "{body}");

    // It beats again: liveness recovers without a restart.
    std::fs::write(&heartbeat, b"beat").unwrap();
    let recovered = eventually(Duration::from_secs(20), || async {
        get(&http, &url("/internal/live"))
            .await
            .filter(|(status, _)| *status == 200)
    })
    .await;
    assert!(recovered.is_some());
    accept.abort();
    let _ = std::fs::remove_dir_all(&dir);
}
