//! Real driver errors — PostgreSQL, MariaDB and Redis, each reached with a password — through
//! every surface a failing check shows up on: the public and the admin probes in the text
//! format, JSON and `application/health+json`, gRPC health, metrics labels and logs. Publicly a
//! failing check shows its name and a class of failure, never a host, a port, a database, a
//! user or driver text; on the admin listener the reason, redacted; a password nowhere.

#![cfg(all(feature = "sqlx-postgres", feature = "mysql-async", feature = "redis"))]

#[macro_use]
mod support;

use axum::Router;
use axum::body::Body;
use http_body_util::BodyExt;
use probity::{CheckSpec, Health, Tier};
use probity_axum::Probes;
use probity_grpc::HealthService;
use probity_grpc::pb::health_client::HealthClient;
use probity_grpc::pb::{HealthCheckRequest, HealthListRequest};
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tower::ServiceExt;

const PG_SECRET: &str = "Pg-S3cret-Pw";
const MY_SECRET: &str = "My-S3cret-Pw";
const REDIS_SECRET: &str = "Redis-S3cret-Pw";
const SECRETS: [&str; 3] = [PG_SECRET, MY_SECRET, REDIS_SECRET];

/// Log lines, kept for the assertions.
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

async fn body_of(router: &Router, uri: &str, accept: &str) -> (u16, String) {
    let request = axum::http::Request::get(uri)
        .header("accept", accept)
        .body(Body::empty())
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

/// Passes its first poll, then runs the real check: the service was healthy, and the fall is a
/// transition that gets logged with its reason.
struct HealthyFirst<C> {
    polls: std::sync::atomic::AtomicU32,
    check: C,
}

impl<C: probity::Check> probity::Check for HealthyFirst<C> {
    fn check(&self) -> probity::CheckFuture<'_> {
        if self.polls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            return Box::pin(async { Ok(probity::Detail::new()) });
        }
        self.check.check()
    }
    fn dependency(&self) -> Option<&str> {
        self.check.dependency()
    }
}

fn spec(name: &str, tier: Tier, check: impl probity::Check) -> CheckSpec {
    let check = HealthyFirst {
        polls: Default::default(),
        check,
    };
    CheckSpec::new(name, tier, check)
        .interval(Duration::from_secs(1))
        .timeout(Duration::from_millis(800))
        .fall(1)
        .rise(1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn driver_errors_show_a_class_publicly_a_redacted_reason_to_admins_and_no_secret_anywhere() {
    require!("PostgreSQL", "127.0.0.1:5432");
    require!("MariaDB", "127.0.0.1:3306");
    require!("Redis", "127.0.0.1:6379");
    let logs = Captured::default();
    let writer = logs.clone();
    tracing::subscriber::set_global_default(
        tracing_subscriber::fmt()
            .with_ansi(false)
            .with_max_level(tracing::Level::INFO)
            .with_writer(move || writer.clone())
            .finish(),
    )
    .expect("the test's subscriber");
    let recorder = metrics_util::debugging::DebuggingRecorder::new();
    let metrics = recorder.snapshotter();
    recorder.install().expect("the test's recorder");

    // PostgreSQL answers, and rejects a role that does not exist (trust auth still checks it).
    let rejected = sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .acquire_timeout(Duration::from_millis(700))
        .connect_lazy(&format!(
            "postgres://orders_app:{PG_SECRET}@127.0.0.1:5432/secret_orders_db"
        ))
        .unwrap();
    // PostgreSQL on a port nothing listens on.
    let closed = support::closed_port().await;
    let unreachable = sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .acquire_timeout(Duration::from_millis(700))
        .connect_lazy(&format!(
            "postgres://orders_app:{PG_SECRET}@127.0.0.1:{closed}/secret_orders_db"
        ))
        .unwrap();
    // MariaDB rejects the password.
    let my_opts: mysql_async::Opts = mysql_async::OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(3306)
        .user(Some("root"))
        .pass(Some(MY_SECRET))
        .db_name(Some("test"))
        .into();
    // Redis has no password set: AUTH with one is refused.
    let redis = redis::Client::open(format!("redis://:{REDIS_SECRET}@127.0.0.1:6379/0")).unwrap();

    let health = Health::builder()
        .service("surfaces")
        .check(spec(
            "orders",
            Tier::Hard,
            probity_checks::sqlx_pool::PoolCheck::new(rejected),
        ))
        .check(spec(
            "replica",
            Tier::Hard,
            probity_checks::sqlx_pool::PoolCheck::new(unreachable),
        ))
        .check(spec(
            "accounts",
            Tier::Hard,
            probity_checks::mysql_async_pool::PoolCheck::new(
                mysql_async::Pool::new(my_opts.clone()),
                my_opts,
            ),
        ))
        .check(spec(
            "cache",
            Tier::Soft,
            probity_checks::redis_ping::RedisCheck::new(redis),
        ))
        .build()
        .unwrap();
    health.start().unwrap();
    let names = ["orders", "replica", "accounts", "cache"];
    let public = Probes::new(&health).router();
    let admin = Probes::admin(&health).router();
    // Publicly, a class of failure per check. Each check fails with its class once its driver has
    // its answer; on a loaded machine a first attempt may time out instead, so wait for the class
    // (a check stuck on `timeout` still fails here, at the deadline).
    let classes = [
        "[-]replica failed: refused",
        "[-]orders failed: rejected",
        "[-]accounts failed: rejected",
        "[!]cache degraded (soft): rejected",
    ];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (_, verbose) = body_of(&public, "/readyz?verbose", "text/plain").await;
        if classes.iter().all(|class| verbose.contains(class)) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "every check fails with its class: {classes:?}\n{verbose}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // What only an operator may read: hosts, ports, the database, the user, driver text.
    let connection_details = [
        "127.0.0.1",
        "5432",
        "3306",
        "6379",
        &closed.to_string(),
        "secret_orders_db",
        "orders_app",
        "root",
        "does not exist",
        "Access denied",
    ];
    let mut admin_said = String::new();
    for accept in ["text/plain", "application/json", "application/health+json"] {
        let mut uris = vec![
            "/readyz".to_owned(),
            "/readyz?verbose".to_owned(),
            "/livez?verbose".to_owned(),
            "/startupz?verbose".to_owned(),
        ];
        uris.extend(names.iter().map(|name| format!("/readyz/{name}")));
        for uri in &uris {
            let (status, body) = body_of(&public, uri, accept).await;
            for detail in connection_details.iter().chain(&SECRETS) {
                assert!(
                    !body.contains(detail),
                    "public {uri} ({accept}) shows `{detail}`:\n{body}"
                );
            }
            if uri == "/readyz?verbose" {
                assert_eq!(status, 503);
                for name in names {
                    assert!(
                        body.contains(name),
                        "{uri} ({accept}) names {name}:\n{body}"
                    );
                }
            }
            let (_, body) = body_of(&admin, uri, accept).await;
            for secret in SECRETS {
                assert!(
                    !body.contains(secret),
                    "admin {uri} ({accept}) shows a password:\n{body}"
                );
            }
            admin_said.push_str(&body);
        }
    }
    // To an operator, the reason — what the driver said, without the password.
    for expected in ["orders_app", "does not exist", "Access denied", "refused"] {
        assert!(
            admin_said.contains(expected),
            "admin output explains with `{expected}`:\n{admin_said}"
        );
    }

    // gRPC health: statuses only, and no secret in an error.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let grpc_router = HealthService::new(&health).into_router();
    tokio::spawn(async move { axum::serve(listener, grpc_router).await });
    let channel = tonic::transport::Channel::from_shared(format!("http://{address}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut client = HealthClient::new(channel);
    let mut grpc_said = String::new();
    for service in [
        "",
        "readiness",
        "orders",
        "replica",
        "accounts",
        "cache",
        "nope",
    ] {
        match client
            .check(HealthCheckRequest {
                service: service.into(),
            })
            .await
        {
            Ok(answer) => grpc_said.push_str(&format!("{:?}\n", answer.into_inner())),
            Err(status) => grpc_said.push_str(&format!("{} {}\n", status.code(), status.message())),
        }
    }
    let listed = client
        .list(HealthListRequest {})
        .await
        .unwrap()
        .into_inner();
    grpc_said.push_str(&format!("{listed:?}"));
    for detail in connection_details.iter().chain(&SECRETS) {
        assert!(
            !grpc_said.contains(detail),
            "gRPC shows `{detail}`:\n{grpc_said}"
        );
    }

    // Metrics: labels name checks and tiers, never where or who.
    let mut labels = String::new();
    for (key, _, _, _) in metrics.snapshot().into_vec() {
        let key = key.key();
        labels.push_str(key.name());
        for label in key.labels() {
            labels.push_str(&format!(" {}={}", label.key(), label.value()));
        }
        labels.push('\n');
    }
    assert!(labels.contains("probity_check_up"), "{labels}");
    for detail in connection_details.iter().chain(&SECRETS) {
        assert!(
            !labels.contains(detail),
            "a metric label shows `{detail}`:\n{labels}"
        );
    }

    // Logs: the operator's view — the reason, never the password.
    health.stop();
    let logged = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    for name in names {
        assert!(
            logged.contains(&format!("check turned unhealthy check={name}")),
            "the fall of {name} is logged:\n{logged}"
        );
    }
    assert!(
        logged.contains("Access denied"),
        "the log explains:\n{logged}"
    );
    for secret in SECRETS {
        assert!(
            !logged.contains(secret),
            "the log shows a password:\n{logged}"
        );
    }
}
