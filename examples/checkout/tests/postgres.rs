//! checkout on PostgreSQL: orders, the pool leak, retrying an unreachable database at boot,
//! and no credential in any output when the database URL holds a password.

mod support;

use std::net::SocketAddr;
use std::time::Duration;
use support::{Checkout, get, get_accept, poll_until, post, run_to_exit, wait_ready};

use support::{POSTGRES, TestDatabase};

#[tokio::test]
async fn serves_orders_from_postgres_and_drains_on_a_leak() {
    if !support::require_service("PostgreSQL", POSTGRES) {
        return;
    }
    let database = TestDatabase::create("orders").await;
    let checkout = Checkout::start(&["--chaos", "--database-url", &database.url()]);
    wait_ready(&checkout).await;

    let created = post(
        &checkout.url("/orders"),
        Some(r#"{"customer":"grace","items":[{"sku":"cobol","quantity":3,"price_cents":1000},{"sku":"tea","quantity":1,"price_cents":450}]}"#),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let order: serde_json::Value = serde_json::from_str(&created.body).unwrap();
    assert_eq!(order["total_cents"], 3450);
    let location = created.header("location").unwrap().to_owned();
    let fetched = get(&checkout.url(&location)).await;
    assert_eq!(fetched.status, 200);
    let fetched: serde_json::Value = serde_json::from_str(&fetched.body).unwrap();
    assert_eq!(fetched, order);
    let popular = get(&checkout.url("/recommendations?customer=grace")).await;
    assert!(
        popular.body.contains(r#"{"ordered":3,"sku":"cobol"}"#),
        "{}",
        popular.body
    );

    let readyz = get_accept(&checkout.url("/readyz"), "application/json").await;
    let value: serde_json::Value = serde_json::from_str(&readyz.body).unwrap();
    let db = value["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["name"] == "db")
        .unwrap();
    assert_eq!(
        (db["name"].as_str(), db["dependency"].as_str()),
        (Some("db"), Some("postgres"))
    );

    post(&checkout.admin_url("/chaos/leak-connections"), None).await;
    let admin = poll_until(Duration::from_secs(10), "/readyz 503", || async {
        let answer = get(&checkout.admin_url("/readyz")).await;
        (answer.status == 503).then_some(answer)
    })
    .await;
    assert!(
        admin.body.contains("[-]db failed: no connection within ")
            && admin.body.contains(": 5 of 5 in use"),
        "{}",
        admin.body
    );
    assert_eq!(get(&checkout.url("/livez")).await.status, 200);
}

/// Forwards connections from `listener` to PostgreSQL: the database "comes up" on that port.
async fn forward_to_postgres(listener: tokio::net::TcpListener) {
    loop {
        let Ok((mut inbound, _)) = listener.accept().await else {
            return;
        };
        tokio::spawn(async move {
            if let Ok(mut outbound) = tokio::net::TcpStream::connect(POSTGRES).await {
                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
            }
        });
    }
}

#[tokio::test]
async fn retries_an_unreachable_database_at_boot_and_says_why() {
    if !support::require_service("PostgreSQL", POSTGRES) {
        return;
    }
    let database = TestDatabase::create("boot").await;
    let port: SocketAddr = support::free_address();
    let url = format!("postgres://postgres@{port}/{}", database.name());
    let checkout = Checkout::start(&["--database-url", &url]);

    // Connecting waits on the database: it gates readiness, which says why (in full on the
    // admin listener), while the startup probe passes — a kubelet lets the pod live.
    let readyz = poll_until(
        Duration::from_secs(30),
        "a retry note in /readyz",
        || async {
            let answer = get(&checkout.admin_url("/readyz")).await;
            answer.body.contains("attempt 2").then_some(answer)
        },
    )
    .await;
    assert_eq!(readyz.status, 503);
    assert!(
        readyz.body.contains(&format!(
            "[-]database failed: pending: postgres {port}/{} unreachable:",
            database.name()
        )),
        "{}",
        readyz.body
    );
    assert!(readyz.body.contains("next in"), "{}", readyz.body);
    let public = get(&checkout.url("/readyz")).await;
    assert_eq!(public.status, 503);
    assert!(
        public
            .body
            .contains("[-]database failed: pending: waits on postgres"),
        "{}",
        public.body
    );
    assert!(!public.body.contains(&port.to_string()), "{}", public.body);
    assert_eq!(get(&checkout.url("/startupz")).await.status, 200);
    assert_eq!(
        get(&checkout.url("/livez")).await.status,
        200,
        "a missing database is no reason to restart"
    );

    // The database appears; the next retry connects and the service becomes ready.
    let listener = tokio::net::TcpListener::bind(port)
        .await
        .expect("bind the forwarder");
    tokio::spawn(forward_to_postgres(listener));
    wait_ready(&checkout).await;
    assert!(checkout.stderr.text().contains("database reachable"));
}

/// Every string the service shows the outside world while its database is unreachable.
async fn everything_it_says(checkout: &Checkout) -> String {
    let mut said = String::new();
    for base in [checkout.url(""), checkout.admin_url("")] {
        for path in [
            "/livez?verbose",
            "/readyz?verbose",
            "/startupz?verbose",
            "/readyz/db",
            "/readyz/cache",
            "/readyz/database",
        ] {
            for accept in ["text/plain", "application/json", "application/health+json"] {
                let answer = get_accept(&format!("{base}{path}"), accept).await;
                said.push_str(&answer.body);
                for (name, value) in &answer.headers {
                    said.push_str(&format!("{name}: {value:?}\n"));
                }
            }
        }
    }
    said.push_str(&get(&checkout.admin_url("/metrics")).await.body);
    said.push_str(&get(&checkout.admin_url("/contract")).await.body);
    said.push_str(&get(&checkout.url("/orders/1")).await.body);
    said
}

#[tokio::test]
async fn no_credential_appears_anywhere_when_the_database_is_unreachable() {
    const DB_SECRET: &str = "Db-S3cret-Pw";
    const CACHE_SECRET: &str = "Cache-S3cret-Pw";
    // Real PostgreSQL and Redis URLs, on ports nothing listens on.
    let closed = support::free_address();
    let closed_cache = support::free_address();
    let database_url = format!("postgres://checkout:{DB_SECRET}@{closed}/orders");
    let redis_url = format!("redis://:{CACHE_SECRET}@{closed_cache}/0");
    let secret_free = |what: &str, text: &str| {
        assert!(
            !text.contains(DB_SECRET),
            "database password in {what}:\n{text}"
        );
        assert!(
            !text.contains(CACHE_SECRET),
            "cache password in {what}:\n{text}"
        );
    };

    let mut checkout =
        Checkout::start(&["--database-url", &database_url, "--redis-url", &redis_url]);
    let notes = poll_until(Duration::from_secs(30), "a retry note", || async {
        let answer = get(&checkout.admin_url("/readyz")).await;
        answer.body.contains("attempt 2").then_some(answer.body)
    })
    .await;
    assert!(
        notes.contains(&format!("postgres {closed}/orders unreachable")),
        "{notes}"
    );
    assert!(
        notes.to_lowercase().contains("connection refused"),
        "{notes}"
    );
    // The checks have polled and failed, each with its own reason.
    for path in ["/readyz/db", "/readyz/cache"] {
        poll_until(
            Duration::from_secs(30),
            &format!("{path} failing with a reason"),
            || async {
                let answer = get(&checkout.admin_url(path)).await;
                answer
                    .body
                    .to_lowercase()
                    .contains("connection refused")
                    .then_some(())
            },
        )
        .await;
    }
    let said = everything_it_says(&checkout).await;
    assert!(
        said.contains("connection refused"),
        "the failure is explained:\n{said}"
    );
    secret_free("the HTTP answers", &said);

    // gRPC too.
    let channel = tonic::transport::Channel::from_shared(checkout.url(""))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = probity_grpc::pb::health_client::HealthClient::new(channel);
    let missing = grpc
        .check(probity_grpc::pb::HealthCheckRequest {
            service: "nope".into(),
        })
        .await
        .unwrap_err();
    secret_free("a gRPC error", missing.message());

    drop(grpc);
    checkout.signal("TERM");
    if checkout.wait_exit(Duration::from_secs(20)).await.is_none() {
        panic!("no exit after SIGTERM:\n{}", checkout.stderr.text());
    }
    let output = checkout.output();
    assert!(output.contains("unreachable"), "{output}");
    secret_free("the logs", &output);

    // Giving up at boot, and printing the contract, say nothing either.
    let (status, stdout, stderr) = run_to_exit(
        &[
            "--database-url",
            &database_url,
            "--connect-attempts",
            "2",
            "--listen",
            &support::free_address().to_string(),
            "--admin-listen",
            &support::free_address().to_string(),
            "--data-dir",
            support::TempDir::new("creds").path().to_str().unwrap(),
        ],
        Duration::from_secs(20),
    );
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("unreachable after 2 attempts"), "{stderr}");
    secret_free("the boot failure", &format!("{stdout}{stderr}"));
    let (status, stdout, stderr) = run_to_exit(
        &[
            "--database-url",
            &database_url,
            "--redis-url",
            &redis_url,
            "--print-contract",
        ],
        Duration::from_secs(20),
    );
    assert!(status.success(), "{stderr}");
    secret_free("the contract", &format!("{stdout}{stderr}"));
    let (status, _, stderr) = run_to_exit(
        &[
            "--database-url",
            &format!("mysql://checkout:{DB_SECRET}@db/orders"),
        ],
        Duration::from_secs(20),
    );
    assert_eq!(status.code(), Some(2));
    assert!(stderr.contains("unsupported scheme"), "{stderr}");
    secret_free("a flag error", &stderr);
}

/// A database that rejects who we are is a database this instance cannot use: the API says
/// 503 with `Retry-After` (nothing was processed; try again, here or elsewhere), never 500.
#[tokio::test]
async fn credentials_the_database_rejects_give_503_with_retry_after() {
    if !support::require_service("postgres", POSTGRES) {
        return;
    }
    let url = format!("postgres://no_such_role:hunter2@{POSTGRES}/test");
    let checkout = Checkout::start(&["--database-url", &url]);
    for (method, path) in [
        ("POST", "/orders"),
        ("GET", "/orders/1"),
        ("GET", "/recommendations"),
    ] {
        let answer = if method == "POST" {
            post(
                &checkout.url(path),
                Some(r#"{"customer":"ada","items":[{"sku":"x","quantity":1,"price_cents":1}]}"#),
            )
            .await
        } else {
            get(&checkout.url(path)).await
        };
        assert_eq!(answer.status, 503, "{method} {path}: {}", answer.body);
        assert_eq!(answer.header("retry-after"), Some("1"), "{method} {path}");
        assert!(!answer.body.contains("hunter2"), "{}", answer.body);
        assert!(
            !answer.body.contains(POSTGRES),
            "no connection details: {}",
            answer.body
        );
    }
    assert!(
        !checkout.output().contains("hunter2"),
        "{}",
        checkout.output()
    );
}

/// PostgreSQL cannot store NUL in text: such an order is the client's mistake (422), not a
/// failed query (500).
#[tokio::test]
async fn an_order_postgres_cannot_store_is_rejected_with_422() {
    if !support::require_service("postgres", POSTGRES) {
        return;
    }
    let database = TestDatabase::create("nul").await;
    let checkout = Checkout::start(&["--database-url", &database.url()]);
    wait_ready(&checkout).await;
    for body in [
        r#"{"customer":"ada\u0000","items":[{"sku":"x","quantity":1,"price_cents":1}]}"#,
        r#"{"customer":"ada","items":[{"sku":"x\u0007y","quantity":1,"price_cents":1}]}"#,
    ] {
        let answer = post(&checkout.url("/orders"), Some(body)).await;
        assert_eq!(answer.status, 422, "{body}: {}", answer.body);
        assert!(answer.body.contains("control character"), "{}", answer.body);
    }
    let fine = post(
        &checkout.url("/orders"),
        Some(r#"{"customer":"Ada Lovelace – ünïcode","items":[{"sku":"x","quantity":1,"price_cents":1}]}"#),
    )
    .await;
    assert_eq!(fine.status, 201, "{}", fine.body);
}

/// PostgreSQL: `POST /orders` from 32 connections, six times the pool, keeps `/readyz` at 200.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_stays_ready_on_postgres_under_load_at_six_times_the_pool() {
    if !support::require_service("postgres", POSTGRES) {
        return;
    }
    let database = TestDatabase::create("load").await;
    let checkout = Checkout::start(&["--database-url", &database.url()]);
    wait_ready(&checkout).await;
    let load = support::Load::start(&checkout.url(""), 32, Duration::from_secs(60));
    let polls = support::poll_statuses(
        &checkout.url("/readyz"),
        Duration::from_millis(100),
        Duration::from_secs(8),
    )
    .await;
    let report = load.stop().await;
    eprintln!("observed on PostgreSQL: {report:?}; /readyz {polls:?}");
    assert!(
        polls.iter().all(|&status| status == 200),
        "a busy pool drained a healthy instance: {polls:?}\n{}",
        checkout.stderr.text()
    );
    assert!(report.count(201) > 20, "the load did not run: {report:?}");
    assert_eq!(
        report.count(201) + report.count(503),
        report.total(),
        "{report:?}"
    );
}

/// What a kubelet, following its own prober rules, saw of one container.
#[derive(Debug, Default)]
struct KubeletLog {
    /// When the startup probe first passed, from the container's start.
    started_after: Option<Duration>,
    /// When readiness first turned Success.
    ready_after: Option<Duration>,
    /// Restarts the kubelet would have made (a startup or liveness failure reaching its
    /// threshold).
    restarts: Vec<String>,
}

/// Runs the kubelet's probe workers (startup → liveness and readiness, the thresholds and the
/// startup gate of `pkg/kubelet/prober/worker.go`, as probity-contract's `kube::prober` has
/// them) against a running checkout, on a thread and runtime of its own so the test's load
/// cannot delay it, until readiness has passed or `until` has passed.
fn kubelet(base: &str, timing: ProbeTiming, until: Duration) -> KubeletLog {
    use probity_contract::ProbeKind;
    use probity_contract::kube::prober::{ContainerView, Gate, ProbeResult, ProbeWorker};
    let urls = [
        (ProbeKind::Startup, format!("{base}/startupz")),
        (ProbeKind::Liveness, format!("{base}/livez")),
        (ProbeKind::Readiness, format!("{base}/readyz")),
    ];
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime for the kubelet");
        runtime.block_on(async move {
            let client = support::client(timing.timeout);
            let mut workers = urls.map(|(kind, url)| (ProbeWorker::new(kind), url));
            let mut log = KubeletLog::default();
            let origin = std::time::Instant::now();
            let mut started = false;
            let mut ticker = tokio::time::interval(timing.period);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            while origin.elapsed() < until && log.ready_after.is_none() {
                ticker.tick().await;
                let now = origin.elapsed();
                for (worker, url) in &mut workers {
                    let view = ContainerView {
                        id: 1,
                        running: true,
                        started_at: Duration::ZERO,
                        started,
                    };
                    if worker.gate(&timing, now, Some(view)).gate != Gate::Probe {
                        continue;
                    }
                    let passed = matches!(
                        client.get(url.as_str()).send().await,
                        Ok(answer) if probity_contract::kube::prober::http_status_passes(answer.status().as_u16())
                    );
                    let Some(set) = worker.record(&timing, passed) else {
                        continue;
                    };
                    match (worker.kind(), set.result) {
                        (ProbeKind::Startup, ProbeResult::Success) => {
                            started = true;
                            log.started_after.get_or_insert(now);
                        }
                        (ProbeKind::Readiness, ProbeResult::Success) => {
                            log.ready_after.get_or_insert(now);
                        }
                        (ProbeKind::Startup | ProbeKind::Liveness, ProbeResult::Failure) => {
                            log.restarts.push(format!("{:?} failed at {now:?}", worker.kind()));
                        }
                        _ => {}
                    }
                }
            }
            log
        })
    })
    .join()
    .expect("the kubelet thread")
}

use probity_contract::kube::probe::ProbeTiming;

/// A rollout during a database outage: checkout starts while its database is unreachable for
/// several times the startup probe's budget, under order traffic at four times its pool. The
/// kubelet's own rules restart nothing — `/startupz` waits on the internal boot only — and the
/// instance turns ready once the database answers (the restart-storm incident, fixed).
#[tokio::test]
async fn a_database_outage_longer_than_the_startup_budget_restarts_nothing_under_load() {
    if !support::require_service("PostgreSQL", POSTGRES) {
        return;
    }
    let database = TestDatabase::create("rollout").await;
    let port: SocketAddr = support::free_address();
    let url = format!("postgres://postgres@{port}/{}", database.name());
    let checkout = Checkout::start(&["--database-url", &url]);
    let load = support::Load::start(&checkout.url(""), 20, Duration::from_secs(120));

    // startupProbe and livenessProbe: period 2 s, timeout 2 s, failureThreshold 3 — a 6 s
    // budget. The database stays away 15 s.
    let timing = ProbeTiming {
        period: Duration::from_secs(2),
        timeout: Duration::from_secs(2),
        failure_threshold: 3,
        ..ProbeTiming::default()
    };
    let outage = Duration::from_secs(15);
    assert!(outage > timing.budget() * 2);
    let watched = {
        let base = checkout.url("");
        let log =
            tokio::task::spawn_blocking(move || kubelet(&base, timing, Duration::from_secs(60)));
        tokio::time::sleep(outage).await;
        let answer = get(&checkout.url("/readyz")).await;
        assert_eq!(answer.status, 503, "no database yet: {}", answer.body);
        assert_eq!(get(&checkout.url("/startupz")).await.status, 200);
        let listener = tokio::net::TcpListener::bind(port)
            .await
            .expect("bind the forwarder");
        tokio::spawn(forward_to_postgres(listener));
        let returned = std::time::Instant::now();
        wait_ready(&checkout).await;
        eprintln!(
            "/readyz 200 {:?} after the database returned",
            returned.elapsed()
        );
        log.await.expect("the kubelet")
    };
    let report = load.stop().await;

    assert!(
        watched.restarts.is_empty(),
        "the kubelet would have restarted checkout: {:?}\n{}",
        watched.restarts,
        checkout.stderr.text()
    );
    let started = watched.started_after.expect("the startup probe passed");
    assert!(started < timing.budget(), "started after {started:?}");
    let ready = watched
        .ready_after
        .expect("readiness passed once the database answered");
    assert!(
        ready >= outage,
        "ready at {ready:?}, before the database answered"
    );
    // While the database was away, orders were refused as unavailable, never as errors.
    assert_eq!(report.count(500), 0, "{report:?}");
    assert!(
        report.count(201) > 0,
        "no order succeeded after recovery: {report:?}"
    );
    eprintln!(
        "startup passed {started:?} after start; the kubelet saw readiness {:?} after the \
         database returned (probing every {:?}); orders: {report:?}",
        ready.saturating_sub(outage),
        timing.period
    );
}
