//! The Node order service (pg pool, prom-client) behind the agent, against the real
//! PostgreSQL, with the example configuration `examples/agent/node.toml`:
//! a leaked pool drains the instance within a metrics interval or two and it returns after the
//! rise count; a blocked event loop fails liveness and only liveness.

mod support;

use probity_agent::Format;
use std::time::Duration;
use support::{App, client, eventually, get, post};

const DATABASE: &str = "postgres://postgres@127.0.0.1:5432/test";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaked_pool_drains_the_instance_and_it_returns_after_the_rise_count() {
    if !support::postgres_available() || !support::node_ready() {
        return;
    }
    let app = App::node(DATABASE);
    let agent = support::agent(
        &support::example("node.toml", &app, "127.0.0.1:5432"),
        Format::Toml,
    )
    .await;
    let http = client();
    let readyz = format!("{}/readyz?verbose", agent.url);

    let ready = eventually(Duration::from_secs(30), || async {
        get(&http, &readyz)
            .await
            .filter(|(status, _)| *status == 200)
    })
    .await;
    assert!(
        ready.is_some(),
        "the agent never became ready: {:?}",
        get(&http, &readyz).await
    );

    // Every client of the pool checked out and never returned; traffic keeps arriving, so
    // queries wait for a client (pg.Pool waitingCount > 0).
    assert_eq!(post(&http, &format!("{}/chaos/leak", app.url())).await, 200);
    let leaked_at = tokio::time::Instant::now();
    let traffic = tokio::spawn({
        let http = http.clone();
        let orders = format!("{}/orders", app.url());
        async move {
            // Bounded: at most 60 s, one request every 100 ms.
            let until = tokio::time::Instant::now() + Duration::from_secs(60);
            while tokio::time::Instant::now() < until {
                let http = http.clone();
                let orders = orders.clone();
                tokio::spawn(async move { get(&http, &orders).await });
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    });
    let drained = eventually(Duration::from_secs(20), || async {
        get(&http, &readyz)
            .await
            .filter(|(status, _)| *status == 503)
    })
    .await;
    let (_, body) = drained.expect("the leaked pool never drained the instance");
    let drained_after = leaked_at.elapsed();
    assert!(body.contains("[-]db-pool failed"), "{body}");
    eprintln!("drained {drained_after:?} after the leak:\n{body}");
    // Liveness does not care: a leaked pool is the app's to fix, a restart would hide it.
    let (status, livez) = get(&http, &format!("{}/livez", agent.url)).await.unwrap();
    // Details are withheld on this listener, so the status page (full reasons) is not served.
    let (page, _) = get(&http, &format!("{}/status", agent.url)).await.unwrap();
    assert_eq!(
        page, 404,
        "the status page on a listener that hides details"
    );
    assert_eq!(status, 200, "{livez}");

    // Release: back in rotation after three good polls in a row (rise = 3, interval 1 s).
    assert_eq!(
        post(&http, &format!("{}/chaos/release", app.url())).await,
        200
    );
    traffic.abort();
    let released_at = tokio::time::Instant::now();
    let back = eventually(Duration::from_secs(30), || async {
        get(&http, &readyz)
            .await
            .filter(|(status, _)| *status == 200)
    })
    .await
    .map(|(_, body)| body);
    let body = back.expect("the instance never came back after the release");
    let back_after = released_at.elapsed();
    eprintln!("ready again {back_after:?} after the release:\n{body}");
    // Three polls a second apart: not before two seconds.
    assert!(
        back_after >= Duration::from_secs(2),
        "back after {back_after:?}: the rise count was not applied"
    );
    assert!(body.contains("[+]db-pool ok"), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_event_loop_fails_liveness_and_recovers() {
    if !support::postgres_available() || !support::node_ready() {
        return;
    }
    let app = App::node(DATABASE);
    let agent = support::agent(
        &support::example("node.toml", &app, "127.0.0.1:5432"),
        Format::Toml,
    )
    .await;
    let http = client();
    let livez = format!("{}/livez", agent.url);
    let started = eventually(Duration::from_secs(30), || async {
        get(&http, &format!("{}/startupz", agent.url))
            .await
            .filter(|(status, _)| *status == 200)
    })
    .await;
    assert!(started.is_some(), "startup never passed");
    assert_eq!(
        get(&http, &livez).await.map(|(status, _)| status),
        Some(200)
    );

    // Six seconds of a stuck event loop: nothing in the app runs, not even its /metrics.
    assert_eq!(
        post(&http, &format!("{}/chaos/block?ms=6000", app.url())).await,
        200
    );
    let failed = eventually(Duration::from_secs(15), || async {
        get(&http, &livez)
            .await
            .filter(|(status, _)| *status == 503)
    })
    .await;
    let (_, body) = failed.expect("liveness never failed while the event loop was blocked");
    assert!(body.contains("[-]event-loop failed"), "{body}");

    // The loop runs again: liveness passes again without a restart.
    let recovered = eventually(Duration::from_secs(20), || async {
        get(&http, &livez)
            .await
            .filter(|(status, _)| *status == 200)
    })
    .await;
    assert!(
        recovered.is_some(),
        "liveness did not recover after the block"
    );
    // The details policy of the example: a class of failure on the public listener, never
    // the timings or what the agent saw.
    assert!(body.contains("[-]event-loop failed: stalled"), "{body}");
}
