//! Waiting is not wedged: the Python service with a fixed pool of 8 worker threads and 2
//! pooled connections (as waitress or gunicorn's gthread serve), whose every worker blocks on
//! the database under traffic, behind the agent with `examples/agent/python.yaml`.
//!
//! - The database black-holed for 60 s: the app answers nothing, not even its shallow
//!   `/livez`, and the agent's liveness never fails (the `db` check fails: a wait on `db`).
//! - A table the app reads locked for 60 s while `SELECT 1` still answers: the same, with a
//!   `db` check that reads the table (`query`).
//! - The process stopped (`SIGSTOP`), or its workers deadlocked, with the database answering:
//!   liveness fails within its bound — and a stop fails it even while the database is away.

mod support;

use probity_agent::Format;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use support::{App, Proxy, client, eventually, get};
use tokio::time::Instant;

/// The example's `max_silence`.
const MAX_SILENCE: Duration = Duration::from_secs(10);

/// Requests to `/orders` every 100 ms, each given up after 2 s (the server's worker stays
/// blocked): enough to take every worker within a second. Stops when dropped.
struct Traffic {
    stop: Arc<AtomicBool>,
    answered: Arc<AtomicU64>,
    sent: Arc<AtomicU64>,
}

impl Traffic {
    fn start(url: String) -> Traffic {
        let stop = Arc::new(AtomicBool::new(false));
        let answered = Arc::new(AtomicU64::new(0));
        let sent = Arc::new(AtomicU64::new(0));
        let (flag, done, count) = (stop.clone(), answered.clone(), sent.clone());
        tokio::spawn(async move {
            let http = reqwest::Client::builder()
                .no_proxy()
                .timeout(Duration::from_secs(2))
                .build()
                .unwrap();
            let mut ticks = tokio::time::interval(Duration::from_millis(100));
            // Bounded: no test runs longer than this.
            let until = Instant::now() + Duration::from_secs(300);
            while !flag.load(Ordering::SeqCst) && Instant::now() < until {
                ticks.tick().await;
                let http = http.clone();
                let url = url.clone();
                let done = done.clone();
                count.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(async move {
                    if http.get(&url).send().await.is_ok() {
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        });
        Traffic {
            stop,
            answered,
            sent,
        }
    }
}

impl Traffic {
    /// `answered of sent`.
    fn figures(&self) -> String {
        format!(
            "{} of {} requests answered",
            self.answered.load(Ordering::Relaxed),
            self.sent.load(Ordering::Relaxed)
        )
    }
}

impl Drop for Traffic {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// What the kubelet would have seen of the agent's `/livez`, sampled every 500 ms, and whether
/// the app's own `/livez` answered.
#[derive(Debug, Default)]
struct Samples {
    taken: u32,
    liveness_failures: u32,
    most_failures_in_a_row: u32,
    app_unanswered: u32,
}

async fn sample_for(agent: &str, app: &str, window: Duration) -> Samples {
    let http = client();
    let quick = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    let mut samples = Samples::default();
    let mut in_a_row = 0;
    let until = Instant::now() + window;
    while Instant::now() < until {
        let live = get(&http, &format!("{agent}/livez")).await;
        samples.taken += 1;
        if live.is_some_and(|(status, _)| status == 200) {
            in_a_row = 0;
        } else {
            samples.liveness_failures += 1;
            in_a_row += 1;
            samples.most_failures_in_a_row = samples.most_failures_in_a_row.max(in_a_row);
        }
        if get(&quick, &format!("{app}/livez")).await.is_none() {
            samples.app_unanswered += 1;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    samples
}

async fn wait_until_ready(agent: &str) {
    let http = client();
    let readyz = format!("{agent}/readyz?verbose");
    let ready = eventually(Duration::from_secs(60), || async {
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
}

/// How long until the agent's `/livez` fails, polled every 200 ms up to `limit`.
async fn liveness_fails_within(agent: &str, limit: Duration) -> Option<Duration> {
    let http = client();
    let started = Instant::now();
    eventually(limit, || async {
        get(&http, &format!("{agent}/livez"))
            .await
            .filter(|(status, _)| *status == 503)
            .map(|_| started.elapsed())
    })
    .await
}

const THREADED: &[(&str, &str)] = &[("THREADS", "8"), ("POOL_MAX", "2"), ("POOL_TIMEOUT", "30")];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_threaded_server_rides_out_a_black_holed_database_and_a_stop_still_restarts_it() {
    if !support::postgres_available() {
        return;
    }
    let Some(python) = support::python() else {
        return;
    };
    let proxy = Proxy::start(support::POSTGRES).await;
    let database = format!("postgresql://postgres@{}/test", proxy.address());
    let app = App::python_with(&python, &database, THREADED);
    let config = support::example("python.yaml", &app, &proxy.address())
        .replace("details: hidden", "details: shown");
    let agent = support::agent(&config, Format::Yaml).await;
    wait_until_ready(&agent.url).await;

    // The database's path goes dark under traffic: every worker blocks on it.
    let traffic = Traffic::start(format!("{}/orders", app.url()));
    proxy.black_hole();
    let samples = sample_for(&agent.url, &app.url(), Duration::from_secs(60)).await;
    eprintln!("60 s black-holed: {samples:?}, {}", traffic.figures());
    assert!(
        samples.app_unanswered * 2 >= samples.taken,
        "the fault is not real: the app's own /livez answered {} of {} samples",
        samples.taken - samples.app_unanswered,
        samples.taken
    );
    assert_eq!(
        samples.liveness_failures, 0,
        "liveness failed while the app waited on its database: {samples:?}"
    );
    let (_, status) = get(&client(), &format!("{}/status.json", agent.url))
        .await
        .unwrap();
    assert!(status.contains("waiting on db"), "{status}");

    // The path returns: the workers finish, the app answers again.
    proxy.restore();
    drop(traffic);
    wait_until_ready(&agent.url).await;

    // Stopped with the database answering: a wedge, restarted within its bound.
    app.signal("STOP");
    let failed = liveness_fails_within(&agent.url, Duration::from_secs(40)).await;
    app.signal("CONT");
    let failed = failed.expect("a stopped process never failed liveness");
    eprintln!("stopped: liveness failed after {failed:?}");
    assert!(
        failed <= MAX_SILENCE + Duration::from_secs(10),
        "{failed:?}"
    );
    wait_until_ready(&agent.url).await;

    // Stopped while the database is away: the kernel says stopped, nothing excuses it.
    proxy.black_hole();
    app.signal("STOP");
    let failed = liveness_fails_within(&agent.url, Duration::from_secs(40)).await;
    app.signal("CONT");
    proxy.restore();
    let failed = failed.expect("a stopped process waiting on its database never failed liveness");
    eprintln!("stopped during an outage: liveness failed after {failed:?}");
    assert!(
        failed <= MAX_SILENCE * 2 + Duration::from_secs(10),
        "{failed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_threaded_server_rides_out_a_table_lock_and_a_deadlock_still_restarts_it() {
    if !support::postgres_available() {
        return;
    }
    let Some(python) = support::python() else {
        return;
    };
    let table = format!("probity_agent_orders_{}", std::process::id());
    let (admin, connection) = tokio_postgres::connect(
        "host=127.0.0.1 user=postgres dbname=test",
        tokio_postgres::NoTls,
    )
    .await
    .unwrap();
    tokio::spawn(connection);
    admin
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {table}; CREATE TABLE {table} (id int)"
        ))
        .await
        .unwrap();
    let mut env = THREADED.to_vec();
    env.push(("ORDERS_TABLE", &table));
    let app = App::python_with(&python, "postgresql://postgres@127.0.0.1:5432/test", &env);
    // The example, with a db check that reads what the app reads: a lock on it blocks the
    // check as it blocks the app, while SELECT 1 would still answer.
    let config = support::example("python.yaml", &app, support::POSTGRES)
        .replace("details: hidden", "details: shown")
        .replace(
            "postgres: {url: \"postgresql://postgres@127.0.0.1:5432/test\"}",
            &format!(
                "postgres: {{url: \"postgresql://postgres@127.0.0.1:5432/test\", query: \"SELECT 1 FROM {table} LIMIT 1\"}}"
            ),
        );
    assert!(config.contains("query:"), "{config}");
    let agent = support::agent(&config, Format::Yaml).await;
    wait_until_ready(&agent.url).await;

    // Another session locks the table for 60 s; requests pile up behind it.
    let (locker, connection) = tokio_postgres::connect(
        "host=127.0.0.1 user=postgres dbname=test",
        tokio_postgres::NoTls,
    )
    .await
    .unwrap();
    let session = tokio::spawn(connection);
    locker
        .batch_execute(&format!(
            "BEGIN; LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE"
        ))
        .await
        .unwrap();
    let traffic = Traffic::start(format!("{}/orders", app.url()));
    let samples = sample_for(&agent.url, &app.url(), Duration::from_secs(60)).await;
    locker.batch_execute("ROLLBACK").await.unwrap();
    drop(locker);
    let _ = session.await;
    eprintln!("60 s table lock: {samples:?}, {}", traffic.figures());
    drop(traffic);
    assert!(
        samples.app_unanswered * 2 >= samples.taken,
        "the fault is not real: the app's own /livez answered {} of {} samples",
        samples.taken - samples.app_unanswered,
        samples.taken
    );
    assert_eq!(
        samples.liveness_failures, 0,
        "liveness failed while the app waited on a lock: {samples:?}"
    );
    wait_until_ready(&agent.url).await;

    // Every worker deadlocked on a lock of the app's own, the database answering: a wedge.
    let wedged = support::post(&client(), &format!("{}/chaos/deadlock", app.url())).await;
    assert_eq!(wedged, 200);
    let traffic = Traffic::start(format!("{}/orders", app.url()));
    let failed = liveness_fails_within(&agent.url, Duration::from_secs(40)).await;
    eprintln!("deadlocked: {}", traffic.figures());
    drop(traffic);
    let _ = admin
        .batch_execute(&format!("DROP TABLE IF EXISTS {table}"))
        .await;
    let failed = failed.expect("a deadlocked process never failed liveness");
    eprintln!("deadlocked: liveness failed after {failed:?}");
    assert!(
        failed <= MAX_SILENCE + Duration::from_secs(10),
        "{failed:?}"
    );
}
