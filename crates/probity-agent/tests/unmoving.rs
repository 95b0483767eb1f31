//! A gauge that never moves is a finding: a real HTTP app whose pool gauge the test holds
//! still or moves, whose request counter counts the requests it really served, behind an agent
//! that reports a gauge unmoved for 10 scrapes (`stale_after_scrapes`) once in its log and on
//! its status page — without touching readiness.

mod support;

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use probity_agent::Format;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use support::{client, eventually};
use tokio::time::Instant;

/// What the agent logs, shared by the tests of this file (one subscriber per process).
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The log lines about the exposition at `app` (`http://host:port`).
fn logged(app: &str) -> Vec<String> {
    let captured = log().0.lock().unwrap().clone();
    let address = app.trim_start_matches("http://");
    String::from_utf8_lossy(&captured)
        .lines()
        .filter(|line| line.contains(address))
        .map(str::to_owned)
        .collect()
}

fn log() -> &'static Captured {
    static LOG: OnceLock<Captured> = OnceLock::new();
    LOG.get_or_init(|| {
        let captured = Captured::default();
        let writer = captured.clone();
        let _ = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .try_init();
        captured
    })
}

/// The app's figures: what its `/metrics` says, and how often it was asked.
#[derive(Default)]
struct Figures {
    /// Requests to `/orders` served.
    served: AtomicU64,
    /// Scrapes of `/metrics` answered.
    scrapes: AtomicU64,
    /// The gauge moves with every scrape (else it reads 0 for ever).
    moving: AtomicBool,
    /// The app exports its request counter.
    counts_requests: AtomicBool,
}

async fn exposition(State(figures): State<Arc<Figures>>) -> String {
    let scrape = figures.scrapes.fetch_add(1, Ordering::SeqCst) + 1;
    let pending = if figures.moving.load(Ordering::SeqCst) {
        scrape % 3
    } else {
        0
    };
    let mut text = format!(
        "# TYPE db_pool_pending_acquires gauge\ndb_pool_pending_acquires{{pool=\"main\"}} {pending}\n"
    );
    if figures.counts_requests.load(Ordering::SeqCst) {
        text += &format!(
            "# TYPE http_requests_total counter\nhttp_requests_total{{status=\"200\",path=\"/orders\"}} {}\n",
            figures.served.load(Ordering::SeqCst)
        );
    }
    text
}

/// The app on a free loopback port.
async fn app(figures: Arc<Figures>) -> String {
    let router = Router::new()
        .route("/metrics", get(exposition))
        .route(
            "/orders",
            get(|State(figures): State<Arc<Figures>>| async move {
                figures.served.fetch_add(1, Ordering::SeqCst);
                "ok"
            }),
        )
        .route("/health", get(|| async { "ok" }))
        .with_state(figures);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    url
}

/// Two closed-loop clients on `/orders`, for at most a minute; stops when dropped.
struct Load(Arc<AtomicBool>);

impl Load {
    fn start(url: String) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let http = client();
        for _ in 0..2 {
            let (stop, http, url) = (stop.clone(), http.clone(), url.clone());
            tokio::spawn(async move {
                let until = Instant::now() + Duration::from_secs(60);
                while !stop.load(Ordering::Relaxed) && Instant::now() < until {
                    let _ = http.get(&url).send().await;
                }
            });
        }
        Load(stop)
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn config(url: &str) -> String {
    format!(
        r#"
[listen]
details = "shown"

[app]
url = "{url}"

[readiness.pool]
metrics = {{ url = "/metrics", series = "db_pool_pending_acquires", fail_if = "> 100", stale_after_scrapes = 10 }}
interval = "200ms"
timeout = "150ms"
"#
    )
}

/// The findings the status page lists.
async fn findings(agent: &str) -> Vec<serde_json::Value> {
    let Some((200, body)) = support::get(&client(), &format!("{agent}/status.json")).await else {
        return Vec::new();
    };
    let report: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    report["findings"].as_array().cloned().unwrap_or_default()
}

async fn ready(agent: &str) -> bool {
    matches!(
        support::get(&client(), &format!("{agent}/readyz")).await,
        Some((200, _))
    )
}

/// Waits until the app has answered `scrapes` more scrapes, returning the findings then.
async fn after_scrapes(figures: &Figures, agent: &str, scrapes: u64) -> Vec<serde_json::Value> {
    let target = figures.scrapes.load(Ordering::SeqCst) + scrapes;
    let reached = eventually(Duration::from_secs(60), || async {
        (figures.scrapes.load(Ordering::SeqCst) >= target).then_some(())
    })
    .await;
    assert!(
        reached.is_some(),
        "the agent did not scrape {scrapes} times"
    );
    findings(agent).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gauge_stuck_at_zero_while_requests_are_served_is_a_finding_not_a_failure() {
    log();
    let figures = Arc::new(Figures::default());
    figures.counts_requests.store(true, Ordering::SeqCst);
    let url = app(figures.clone()).await;
    let agent = support::agent(&config(&url), Format::Toml).await;
    let _load = Load::start(format!("{url}/orders"));
    let found = eventually(Duration::from_secs(60), || async {
        findings(&agent.url).await.into_iter().next()
    })
    .await;
    let finding = found.unwrap_or_else(|| {
        panic!(
            "no finding after {} scrapes and {} requests",
            figures.scrapes.load(Ordering::SeqCst),
            figures.served.load(Ordering::SeqCst)
        )
    });
    assert_eq!(finding["kind"], "unmoving_series");
    assert_eq!(
        finding["subject"],
        "db_pool_pending_acquires{pool=\"main\"}"
    );
    let message = finding["message"].as_str().unwrap();
    assert!(
        message.starts_with("`db_pool_pending_acquires{pool=\"main\"}` read 0 in ")
            && message.contains(" requests were served: is it wired?"),
        "{message}"
    );
    // A finding, not a failure.
    assert!(ready(&agent.url).await, "the finding changed readiness");
    // Logged once at warn, however long it stays.
    after_scrapes(&figures, &agent.url, 20).await;
    let lines = logged(&url);
    let found: Vec<&String> = lines
        .iter()
        .filter(|line| line.contains("is it wired?"))
        .collect();
    assert_eq!(found.len(), 1, "{lines:#?}");
    assert!(
        found[0].contains("WARN") && found[0].contains("a finding, not a failure"),
        "{}",
        found[0]
    );

    // The gauge moves: the finding clears.
    figures.moving.store(true, Ordering::SeqCst);
    let cleared = eventually(Duration::from_secs(30), || async {
        findings(&agent.url).await.is_empty().then_some(())
    })
    .await;
    assert!(cleared.is_some(), "{:?}", findings(&agent.url).await);
    let lines = logged(&url);
    assert!(
        lines
            .iter()
            .any(|line| line.contains("a gauge reported as unmoving moved")),
        "{lines:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gauge_that_moves_while_requests_are_served_is_no_finding() {
    let figures = Arc::new(Figures::default());
    figures.counts_requests.store(true, Ordering::SeqCst);
    figures.moving.store(true, Ordering::SeqCst);
    let url = app(figures.clone()).await;
    let agent = support::agent(&config(&url), Format::Toml).await;
    let _load = Load::start(format!("{url}/orders"));
    // Three times the scrapes a stuck gauge needs, with requests served throughout.
    let listed = after_scrapes(&figures, &agent.url, 30).await;
    assert!(
        figures.served.load(Ordering::SeqCst) >= 1_000,
        "too few requests to judge"
    );
    assert!(listed.is_empty(), "{listed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gauge_stuck_while_no_request_is_served_is_no_finding() {
    let figures = Arc::new(Figures::default());
    figures.counts_requests.store(true, Ordering::SeqCst);
    let url = app(figures.clone()).await;
    let agent = support::agent(&config(&url), Format::Toml).await;
    // The request counter is read, and it does not move: an idle pool reads 0 honestly.
    let listed = after_scrapes(&figures, &agent.url, 30).await;
    assert_eq!(figures.served.load(Ordering::SeqCst), 0);
    assert!(listed.is_empty(), "{listed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_request_counter_the_answered_scrapes_are_the_evidence() {
    let figures = Arc::new(Figures::default());
    let url = app(figures.clone()).await;
    let agent = support::agent(&config(&url), Format::Toml).await;
    let found = eventually(Duration::from_secs(60), || async {
        findings(&agent.url).await.into_iter().next()
    })
    .await;
    let finding = found.expect("no finding");
    let message = finding["message"].as_str().unwrap();
    assert!(
        message.contains("scrapes while the app answered ")
            && message.contains("(no request counter read): is it wired?"),
        "{message}"
    );
}
