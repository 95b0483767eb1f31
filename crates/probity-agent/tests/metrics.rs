//! Metrics checks and the event-loop condition against a real HTTP exposition whose answer
//! the test sets: a prompt 503 is a sign of life, a counter not created yet counts as zero for
//! `change`, `labels` are PromQL matchers.

mod support;

use parking_lot::Mutex;
use probity_agent::Format;
use std::sync::Arc;
use std::time::Duration;
use support::{client, eventually, get};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// An exposition server answering `(status, body)` as the test sets it.
async fn exposition_server(answer: Arc<Mutex<(u16, String)>>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let answer = answer.clone();
            tokio::spawn(async move {
                let mut buffer = [0u8; 4096];
                let _ = stream.read(&mut buffer).await;
                let (status, body) = answer.lock().clone();
                let text = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: text/plain\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(text.as_bytes()).await;
            });
        }
    });
    url
}

fn config(url: &str) -> String {
    format!(
        r#"
[listen]
details = "shown"

[app]
url = "{url}"

[requests]
enabled = false

[readiness.errors]
metrics = {{ url = "/metrics", series = "http_requests_total", labels = {{ status = "=~5.." }}, fail_if = "> 0", change = true }}
interval = "500ms"
timeout = "300ms"

[liveness.event-loop]
event_loop_lag = {{ url = "/metrics", max = "5s" }}
interval = "500ms"
timeout = "300ms"
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_503_is_a_sign_of_life_and_a_missing_error_counter_is_zero() {
    // The app answers its exposition with a 503: its loop runs.
    let answer = Arc::new(Mutex::new((503u16, "busy\n".to_owned())));
    let url = exposition_server(answer.clone()).await;
    let agent = support::agent(&config(&url), Format::Toml).await;
    let http = client();
    let started = eventually(Duration::from_secs(20), || async {
        get(&http, &format!("{}/startupz", agent.url))
            .await
            .filter(|(status, _)| *status == 200)
    })
    .await;
    assert!(started.is_some(), "a prompt 503 was not a sign of life");
    let (live, _) = get(&http, &format!("{}/livez", agent.url)).await.unwrap();
    assert_eq!(live, 200);

    // Only successes so far: the 5xx series does not exist yet, which is zero errors.
    *answer.lock() = (
        200,
        "http_requests_total{status=\"200\"} 10\nnodejs_eventloop_lag_seconds 0.01\n".to_owned(),
    );
    let readyz = format!("{}/readyz?verbose", agent.url);
    let ready = eventually(Duration::from_secs(20), || async {
        get(&http, &readyz)
            .await
            .filter(|(status, _)| *status == 200)
    })
    .await;
    assert!(ready.is_some(), "{:?}", get(&http, &readyz).await);

    // The first 5xx: the counter appears (it was zero before) and grows, `=~5..` matches it.
    for count in 1..=6u32 {
        *answer.lock() = (
            200,
            format!(
                "http_requests_total{{status=\"200\"}} 10\nhttp_requests_total{{status=\"503\"}} {}\nnodejs_eventloop_lag_seconds 0.01\n",
                count * 3
            ),
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let failed = eventually(Duration::from_secs(10), || async {
        get(&http, &readyz)
            .await
            .filter(|(status, _)| *status == 503)
    })
    .await;
    let (_, body) = failed.expect("new 5xx did not fail the check");
    assert!(body.contains("[-]errors failed"), "{body}");
}
