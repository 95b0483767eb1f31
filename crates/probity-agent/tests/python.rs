//! The Python order service (psycopg pool, prometheus_client) behind the agent, against the
//! real PostgreSQL through a TCP proxy, with the example configuration
//! `examples/agent/python.yaml`: a 40 s outage of the database's path fails readiness and
//! nothing else; the deep /healthz hammered through the agent sees one call per interval.

mod support;

use probity_agent::Format;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use support::{App, Proxy, client, eventually, get};
use tokio::time::Instant;

/// The example's liveness probe settings (examples/agent/kubernetes.yaml): a restart needs
/// this many consecutive failures.
const LIVENESS_FAILURE_THRESHOLD: u32 = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_outage_fails_readiness_and_restarts_nothing() {
    if !support::postgres_available() {
        return;
    }
    let Some(python) = support::python() else {
        return;
    };
    let proxy = Proxy::start(support::POSTGRES).await;
    let database = format!("postgresql://postgres@{}/test", proxy.address());
    let app = App::python(&python, &database);
    let config = support::example("python.yaml", &app, &proxy.address());
    let agent = support::agent(&config, Format::Yaml).await;
    let http = client();
    let readyz = format!("{}/readyz?verbose", agent.url);
    let livez = format!("{}/livez", agent.url);

    let ready = eventually(Duration::from_secs(30), || async {
        get(&http, &readyz)
            .await
            .filter(|(status, _)| *status == 200)
    })
    .await;
    assert!(
        ready.is_some(),
        "never ready: {:?}",
        get(&http, &readyz).await
    );

    // 40 s without a path to the database. The kubelet's view of the agent is sampled every
    // 500 ms: liveness failures in a row (a restart needs 3), readiness answers.
    proxy.cut();
    let outage = Duration::from_secs(40);
    let until = Instant::now() + outage;
    let mut liveness_failures_in_a_row = 0;
    let mut most_liveness_failures_in_a_row = 0;
    let mut liveness_samples = 0;
    let mut first_unready: Option<(Duration, String)> = None;
    let mut health_failed = false;
    let mut db_failed = false;
    let cut_at = Instant::now();
    while Instant::now() < until {
        let live = get(&http, &livez).await;
        liveness_samples += 1;
        if live.as_ref().is_some_and(|(status, _)| *status == 200) {
            liveness_failures_in_a_row = 0;
        } else {
            liveness_failures_in_a_row += 1;
            most_liveness_failures_in_a_row =
                most_liveness_failures_in_a_row.max(liveness_failures_in_a_row);
        }
        if let Some((503, body)) = get(&http, &readyz).await {
            health_failed |= body.contains("[-]health failed");
            db_failed |= body.contains("[-]db failed");
            if first_unready.is_none() {
                first_unready = Some((cut_at.elapsed(), body));
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(
        most_liveness_failures_in_a_row, 0,
        "liveness failed during a database outage ({liveness_samples} samples)"
    );
    assert!(most_liveness_failures_in_a_row < LIVENESS_FAILURE_THRESHOLD);
    let (after, body) = first_unready.expect("readiness never failed during the outage");
    eprintln!("readiness failed {after:?} into the outage:\n{body}");
    // The agent's own check of the database names it. The app's deep /healthz usually fails
    // too (from the agent's cached poll of it), sometimes first: when depends on how
    // psycopg_pool hands out a connection the proxy has cut.
    assert!(
        db_failed,
        "readiness never named `db` during the outage; first: {body}"
    );
    eprintln!("the app's /healthz failed during the outage: {health_failed}");
    // The outage is readable on the agent's own listener too, with reasons withheld.
    let (status, _) = get(&http, &format!("{}/readyz/db", agent.url))
        .await
        .unwrap();
    assert_eq!(status, 503);

    // The path returns: readiness follows by itself, with nothing restarted.
    proxy.restore();
    let restored_at = Instant::now();
    let back = eventually(Duration::from_secs(60), || async {
        get(&http, &readyz)
            .await
            .filter(|(status, _)| *status == 200)
    })
    .await;
    assert!(
        back.is_some(),
        "not ready again after the outage: {:?}",
        get(&http, &readyz).await
    );
    eprintln!(
        "ready again {:?} after the path returned",
        restored_at.elapsed()
    );
    // The same Python process served throughout.
    let (status, _) = get(&http, &format!("{}/livez", app.url())).await.unwrap();
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deep_health_endpoint_sees_one_call_per_interval_under_a_probe_storm() {
    if !support::postgres_available() {
        return;
    }
    let Some(python) = support::python() else {
        return;
    };
    let app = App::python(&python, "postgresql://postgres@127.0.0.1:5432/test");
    let config = support::example("python.yaml", &app, support::POSTGRES);
    let agent = support::agent(&config, Format::Yaml).await;
    let http = client();
    let readyz = format!("{}/readyz", agent.url);
    let ready = eventually(Duration::from_secs(30), || async {
        get(&http, &readyz)
            .await
            .filter(|(status, _)| *status == 200)
    })
    .await;
    assert!(ready.is_some(), "never ready");

    let health_calls = || async {
        let (_, metrics) = get(&client(), &format!("{}/metrics", app.url()))
            .await
            .unwrap();
        support::series(&metrics, "health_checks_total").unwrap()
    };
    let before = health_calls().await;
    let window_started = Instant::now();

    // 1,000 requests a second for 6 s, paced by 50 workers of 20 requests a second each.
    let answered = Arc::new(AtomicU64::new(0));
    let passed = Arc::new(AtomicU64::new(0));
    let window = Duration::from_secs(6);
    let mut workers = Vec::new();
    for _ in 0..50 {
        let readyz = readyz.clone();
        let answered = answered.clone();
        let passed = passed.clone();
        workers.push(tokio::spawn(async move {
            let http = client();
            let mut ticks = tokio::time::interval(Duration::from_millis(50));
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            let until = Instant::now() + window;
            while Instant::now() < until {
                ticks.tick().await;
                if let Ok(response) = http.get(&readyz).send().await {
                    answered.fetch_add(1, Ordering::Relaxed);
                    if response.status() == 200 {
                        passed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
    let elapsed = window_started.elapsed();
    let after = health_calls().await;
    let calls = after - before;
    let answered = answered.load(Ordering::Relaxed);
    let passed = passed.load(Ordering::Relaxed);
    eprintln!(
        "{answered} probes in {elapsed:?} ({:.0}/s), {passed} passed; the app's /healthz saw {calls} calls",
        answered as f64 / elapsed.as_secs_f64()
    );
    // The example polls /healthz every 2 s: at most one call per interval (plus the edges).
    let intervals = elapsed.as_secs_f64() / 2.0;
    assert!(
        calls <= intervals.ceil() + 1.0,
        "{calls} calls of /healthz in {elapsed:?} at a 2 s interval"
    );
    assert!(calls >= 1.0, "the agent stopped polling /healthz");
    // A storm: many probes for each poll the app saw (the rate depends on how busy the machine
    // is; what is judged is the ratio).
    assert!(
        answered as f64 >= 50.0 * (intervals.ceil() + 1.0),
        "only {answered} probes were answered in {elapsed:?}: not a storm"
    );
    // On a loaded machine the client and the agent share two cores and a poll may time out;
    // most probes still pass.
    assert!(
        passed * 10 >= answered * 9,
        "only {passed} of {answered} probes passed"
    );
}
