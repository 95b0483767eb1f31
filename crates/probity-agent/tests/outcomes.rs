//! Real outcomes outrank a self-check, both ways: the Node service behind the agent, its
//! request counter (`http_requests_total{status}`, prom-client) read as passive reports.
//!
//! - Busy, not broken: at 32× its pool of 4, the service's own `/ready` (a 200 ms acquire
//!   budget) says 503 while every request succeeds. Without request outcomes the agent drains
//!   it; with them it stays in rotation, warning why.
//! - Failing while its health says ok: a `/health` that checks nothing and a leaked pool. Every
//!   request fails; without request outcomes the agent keeps it in rotation; with them it
//!   drains, and comes back once the requests succeed again.

mod support;

use probity_agent::Format;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use support::{App, client, eventually, get, post};
use tokio::time::Instant;

/// Closed-loop clients hammering `/orders`; stops when dropped.
struct Load {
    stop: Arc<AtomicBool>,
    ok: Arc<AtomicU64>,
    failed: Arc<AtomicU64>,
}

impl Load {
    fn start(url: String, clients: usize, paced: Option<Duration>) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let ok = Arc::new(AtomicU64::new(0));
        let failed = Arc::new(AtomicU64::new(0));
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(15))
            .pool_max_idle_per_host(clients)
            .build()
            .unwrap();
        for _ in 0..clients {
            let (stop, ok, failed, http, url) = (
                stop.clone(),
                ok.clone(),
                failed.clone(),
                http.clone(),
                url.clone(),
            );
            tokio::spawn(async move {
                // Bounded: no test runs longer than this.
                let until = Instant::now() + Duration::from_secs(180);
                while !stop.load(Ordering::Relaxed) && Instant::now() < until {
                    let started = Instant::now();
                    match http.get(&url).send().await {
                        Ok(response) if response.status().is_success() => {
                            ok.fetch_add(1, Ordering::Relaxed);
                        }
                        _ => {
                            failed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    if let Some(pace) = paced {
                        tokio::time::sleep(pace.saturating_sub(started.elapsed())).await;
                    }
                }
            });
        }
        Load { stop, ok, failed }
    }

    fn figures(&self) -> (u64, u64) {
        (
            self.ok.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
        )
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn config(app: &App, check: &str, requests: &str) -> String {
    format!(
        r#"
service = "orders-node"

[listen]
address = "127.0.0.1:0"
details = "shown"

[app]
url = "{url}"

[readiness.ready]
app = {{ url = "{check}" }}
interval = "1s"
timeout = "800ms"

[liveness.event-loop]
event_loop_lag = {{ url = "/metrics", max = "5s" }}

[requests]
{requests}
"#,
        url = app.url()
    )
}

/// Samples the agent's `/readyz` every 250 ms for `window`: (503s, samples, a 200 body seen).
async fn readiness_for(agent: &str, window: Duration) -> (u32, u32, String) {
    let http = client();
    let (mut failed, mut taken, mut body) = (0, 0, String::new());
    let until = Instant::now() + window;
    while Instant::now() < until {
        taken += 1;
        match get(&http, &format!("{agent}/readyz?verbose")).await {
            Some((200, text)) => body = text,
            _ => failed += 1,
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    (failed, taken, body)
}

/// Share of the app's own `/ready` answering 503, sampled every 500 ms for `window`.
async fn own_readiness_for(app: String, window: Duration) -> (u32, u32) {
    let http = client();
    let (mut failed, mut taken) = (0, 0);
    let until = Instant::now() + window;
    while Instant::now() < until {
        taken += 1;
        if !matches!(get(&http, &format!("{app}/ready")).await, Some((200, _))) {
            failed += 1;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    (failed, taken)
}

async fn ready(agent: &str) -> bool {
    let http = client();
    eventually(Duration::from_secs(60), || async {
        get(&http, &format!("{agent}/readyz"))
            .await
            .filter(|(status, _)| *status == 200)
    })
    .await
    .is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_serving_every_request_at_32x_its_pool_stays_in_rotation() {
    if !support::postgres_available() || !support::node_ready() {
        return;
    }
    let app = App::node_with(
        "postgres://postgres@127.0.0.1:5432/test",
        &[
            ("READY_BUDGET_MS", "200"),
            ("POOL_ACQUIRE_MS", "10000"),
            ("QUERY_MS", "20"),
        ],
    );
    for (label, requests) in [("before", "enabled = false"), ("after", "")] {
        let agent = support::agent(&config(&app, "/ready", requests), Format::Toml).await;
        assert!(ready(&agent.url).await, "{label}: never ready");
        // The contract states the rule: with request outcomes read, they outrank the self-check.
        let (_, contract) = get(&client(), &format!("{}/contract", agent.url))
            .await
            .expect("the contract");
        assert_eq!(
            contract.contains("\"outranked_by_requests\": true"),
            label == "after",
            "{label}: {contract}"
        );
        // 128 clients on a pool of 4.
        let load = Load::start(format!("{}/orders", app.url()), 128, None);
        // The window fills and the load settles.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let own = tokio::spawn(own_readiness_for(app.url(), Duration::from_secs(15)));
        let (drained, samples, body) = readiness_for(&agent.url, Duration::from_secs(15)).await;
        let (own_failed, own_samples) = own.await.unwrap();
        let (ok, failed) = load.figures();
        drop(load);
        eprintln!(
            "{label}: the app's /ready said 503 on {own_failed} of {own_samples} samples; \
             requests {ok} ok, {failed} failed; the agent's /readyz failed {drained} of \
             {samples} samples\n{body}"
        );
        assert!(
            own_failed * 2 >= own_samples,
            "{label}: the app's own readiness did not call its busy pool broken \
             ({own_failed} of {own_samples})"
        );
        assert_eq!(failed, 0, "{label}: requests failed: not a busy-only load");
        if label == "before" {
            assert!(
                drained > 0,
                "before: the self-check never drained the service"
            );
        } else {
            assert_eq!(drained, 0, "a service serving every request was drained");
            assert!(
                body.contains("busy, not broken"),
                "the warning names the reason: {body}"
            );
        }
        // Let the pool drain before the next round.
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_failing_its_requests_is_drained_though_its_health_says_ok() {
    if !support::postgres_available() || !support::node_ready() {
        return;
    }
    let app = App::node_with(
        "postgres://postgres@127.0.0.1:5432/test",
        &[("HEALTH", "shallow"), ("POOL_ACQUIRE_MS", "500")],
    );
    let http = client();
    for (label, requests) in [
        ("before", "enabled = false".to_owned()),
        ("after", "url = \"/metrics\"".to_owned()),
    ] {
        let agent = support::agent(&config(&app, "/health", &requests), Format::Toml).await;
        assert!(ready(&agent.url).await, "{label}: never ready");
        // Traffic at about 40 requests a second, then the pool leaks: every request fails.
        let load = Load::start(
            format!("{}/orders", app.url()),
            20,
            Some(Duration::from_millis(500)),
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(post(&http, &format!("{}/chaos/leak", app.url())).await, 200);
        let leaked_at = Instant::now();
        let drained = eventually(Duration::from_secs(20), || async {
            get(&http, &format!("{}/readyz?verbose", agent.url))
                .await
                .filter(|(status, _)| *status == 503)
        })
        .await;
        let (own, _) = get(&http, &format!("{}/health", app.url())).await.unwrap();
        let (ok, failed) = load.figures();
        eprintln!(
            "{label}: pool leaked; the app's /health said {own}; requests {ok} ok, {failed} \
             failed; drained: {:?}",
            drained
                .as_ref()
                .map(|(_, body)| (leaked_at.elapsed(), body.clone()))
        );
        assert_eq!(own, 200, "the app's health checks nothing");
        assert!(failed > 20, "{label}: the requests did not fail");
        if label == "before" {
            assert!(
                drained.is_none(),
                "before: drained without request outcomes"
            );
        } else {
            let (_, body) = drained.expect("a service failing its requests was not drained");
            // The report's reason is logged; once the immediate re-poll of the (shallow)
            // health endpoint passes, the answer reads as recovering, still failing.
            assert!(body.contains("[-]ready failed"), "{body}");
            // The pool comes back: the requests succeed, the checks rise again.
            assert_eq!(
                post(&http, &format!("{}/chaos/release", app.url())).await,
                200
            );
            assert!(
                ready(&agent.url).await,
                "not back in rotation after the leak"
            );
        }
        drop(load);
        assert_eq!(
            post(&http, &format!("{}/chaos/release", app.url())).await,
            200
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
