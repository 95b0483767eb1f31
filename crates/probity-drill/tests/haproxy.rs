//! The drill's balancer, run by a real HAProxy: a 503 meaning "not processed" is replayed on
//! another server, body and all, so the client never sees it (the drill file's `retry_on`);
//! with no server in rotation HAProxy's own 503 is counted as refused by the balancer; in
//! `kubernetes` mode a server is out of rotation until readiness puts it in, and leaves at once.

use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use probity_drill::engine::balancer::{Balancer, Checks, Layout, Server};
use probity_drill::file::BalancerMode;
use probity_drill::load::{self, LoadRequest, LoadSpec};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

fn haproxy_available() -> bool {
    let found = std::process::Command::new("haproxy")
        .arg("-v")
        .output()
        .is_ok_and(|output| output.status.success());
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "haproxy is not installed (scripts/setup.sh installs it)"
        );
        eprintln!("SKIPPED: haproxy is not installed");
    }
    found
}

fn free_port() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

struct WorkDir(PathBuf);

impl WorkDir {
    fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!(
            "probity-drill-test-{name}-{}-{:08x}",
            std::process::id(),
            unique()
        ));
        std::fs::create_dir_all(&path).unwrap();
        WorkDir(path)
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn unique() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.subsec_nanos())
}

const ORDER: &str = r#"{"customer":"drill","items":[{"sku":"book-1","quantity":1}]}"#;

fn orders(concurrency: u32, duration: Duration) -> LoadSpec {
    LoadSpec {
        concurrency,
        duration,
        request: LoadRequest::post("/orders", ORDER),
        ..LoadSpec::default()
    }
}

/// A server that is ready and answers `POST /orders` with `status` (503s say Retry-After, as a
/// shedding service's do), counting the orders whose body arrived whole.
async fn server(status: StatusCode) -> (SocketAddr, Arc<AtomicU64>) {
    let whole_orders = Arc::new(AtomicU64::new(0));
    let app = Router::new()
        .route("/readyz", get(|| async { "ok" }))
        .route(
            "/orders",
            post({
                let whole_orders = whole_orders.clone();
                move |body: String| {
                    let whole_orders = whole_orders.clone();
                    async move {
                        if body == ORDER {
                            whole_orders.fetch_add(1, Ordering::AcqRel);
                        }
                        let mut response = status.into_response();
                        if status == StatusCode::SERVICE_UNAVAILABLE {
                            response
                                .headers_mut()
                                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
                        }
                        response
                    }
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (address, whole_orders)
}

async fn start(work: &WorkDir, servers: Vec<(String, SocketAddr)>, mode: BalancerMode) -> Balancer {
    let layout = Layout {
        frontend: free_port(),
        socket: work.0.join("haproxy.sock"),
        servers: servers
            .into_iter()
            .map(|(name, address)| Server {
                name,
                address,
                check_port: None,
            })
            .collect(),
        mode,
        checks: Checks {
            inter: Duration::from_millis(250),
            rise: 2,
            fall: 1,
            timeout: Duration::from_millis(500),
        },
        check_path: Some("/readyz".into()),
        server_timeout: Duration::from_secs(5),
        retry_on: vec!["conn-failure".into(), "503".into()],
    };
    Balancer::start("haproxy".as_ref(), &work.0, &layout)
        .await
        .unwrap()
}

/// Waits (generously, for a loaded machine) until `count` servers are in rotation.
async fn wait_in_rotation(balancer: &Balancer, count: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let stats = balancer.stats().await;
        let in_rotation = stats.as_ref().map_or(usize::MAX, |stats| {
            stats
                .iter()
                .filter(|stat| stat.name != "BACKEND" && stat.in_rotation())
                .count()
        });
        if in_rotation == count {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not {count} in rotation: {stats:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_503_is_replayed_on_another_server_so_the_client_never_sees_it() {
    if !haproxy_available() {
        return;
    }
    let work = WorkDir::new("retry");
    let (shedding, shed_orders) = server(StatusCode::SERVICE_UNAVAILABLE).await;
    let (serving, served_orders) = server(StatusCode::CREATED).await;
    let haproxy = start(
        &work,
        vec![("shedding".into(), shedding), ("serving".into(), serving)],
        BalancerMode::Haproxy,
    )
    .await;
    wait_in_rotation(&haproxy, 2).await;
    let report = load::run(haproxy.frontend, orders(4, Duration::from_secs(1))).await;
    assert!(report.requests > 10, "{report}");
    assert_eq!(report.failed, 0, "{report}");
    let shed = shed_orders.load(Ordering::Acquire);
    assert!(shed > 0, "round robin sends the shedding server its share");
    assert_eq!(
        served_orders.load(Ordering::Acquire),
        report.requests,
        "every order reached the serving server whole, replayed or not"
    );
    let stats = haproxy.stats().await.unwrap();
    let backend = stats.iter().find(|stat| stat.name == "BACKEND").unwrap();
    assert!(backend.retries + backend.redispatches >= shed, "{stats:?}");
}

#[tokio::test]
async fn with_no_server_in_rotation_the_refusals_are_the_balancers() {
    if !haproxy_available() {
        return;
    }
    let work = WorkDir::new("nosrv");
    let nothing = free_port();
    let haproxy = start(&work, vec![("gone".into(), nothing)], BalancerMode::Haproxy).await;
    wait_in_rotation(&haproxy, 0).await;
    let report = load::run(haproxy.frontend, orders(2, Duration::from_secs(1))).await;
    assert!(report.requests > 0);
    assert_eq!(report.refused_by_balancer, report.requests, "{report}");
    assert_eq!(report.balancer_refusals(), report.requests);
}

#[tokio::test]
async fn in_kubernetes_mode_readiness_puts_a_server_in_rotation_and_takes_it_out() {
    if !haproxy_available() {
        return;
    }
    let work = WorkDir::new("kube");
    let (serving, _) = server(StatusCode::CREATED).await;
    let haproxy = start(
        &work,
        vec![("serving".into(), serving)],
        BalancerMode::Kubernetes,
    )
    .await;
    // Out of rotation until the kubelet counts it Ready: HAProxy refuses.
    wait_in_rotation(&haproxy, 0).await;
    let report = load::run(haproxy.frontend, orders(2, Duration::from_millis(300))).await;
    assert_eq!(report.refused_by_balancer, report.requests, "{report}");
    haproxy.set_rotation("serving", true).await.unwrap();
    wait_in_rotation(&haproxy, 1).await;
    let report = load::run(haproxy.frontend, orders(2, Duration::from_secs(1))).await;
    assert!(report.requests > 0);
    assert_eq!(report.failed, 0, "{report}");
    haproxy.set_rotation("serving", false).await.unwrap();
    wait_in_rotation(&haproxy, 0).await;
    let error = haproxy.set_rotation("nobody", true).await.unwrap_err();
    assert!(error.to_string().contains("nobody"), "{error}");
}
