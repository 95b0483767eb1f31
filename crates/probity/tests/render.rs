//! Golden outputs of every format and query shape.
//!
//! Run with `UPDATE_GOLDEN=1` to rewrite the files under `tests/golden/` after an intended
//! change, then review the diff.

mod support;

use probity::render::{Clock, Details, Format, Query, Request, render};
use probity::{CheckError, CheckSpec, Detail, Health, ProbeKind, Tier};
use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};
use support::{Switch, advance, secs};

struct Fixture {
    health: Health,
    db: Switch,
    clock_wall: std::time::SystemTime,
}

async fn fixture() -> Fixture {
    let db = Switch::new(true);
    let db_check = {
        let db = db.clone();
        move || {
            let db = db.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(3)).await;
                if db.ok.load(std::sync::atomic::Ordering::SeqCst) {
                    Ok(Detail::new()
                        .message("3 of 5 connections free")
                        .measurement("connections", 2.0, None)
                        .measurement("available", 3.0, None)
                        .measurement("utilization", 40.0, Some("percent")))
                } else {
                    Err(
                        CheckError::new("no connection available: 5 of 5 in use, 4 waiting")
                            .measurement("available", 0.0, None)
                            .measurement("waiting", 4.0, None),
                    )
                }
            }
        }
    };
    let health = Health::builder()
        .service("checkout")
        .check(
            CheckSpec::new("db", Tier::Hard, db_check)
                .dependency("postgres")
                .interval(secs(1.0))
                .timeout(secs(0.5))
                .jitter(secs(0.0)),
        )
        .check(
            CheckSpec::new("cache", Tier::Soft, || async {
                Err(CheckError::new(
                    "connect redis://:hunter2@127.0.0.1:6390: connection refused",
                ))
            })
            .dependency("redis")
            .interval(secs(1.0))
            .timeout(secs(0.3))
            .jitter(secs(0.0)),
        )
        .check(
            CheckSpec::new("telemetry", Tier::Info, || async {
                Err(CheckError::new("collector unreachable"))
            })
            .interval(secs(1.0))
            .timeout(secs(0.3))
            .jitter(secs(0.0)),
        )
        .startup_step("migrations")
        .build()
        .unwrap();
    health.start().unwrap();
    health.complete_step("migrations").unwrap();
    advance(secs(0.5)).await;
    Fixture {
        health,
        db,
        clock_wall: UNIX_EPOCH + Duration::from_secs(1_796_040_000),
    }
}

fn clock(fixture: &Fixture) -> Clock {
    Clock {
        now: tokio::time::Instant::now(),
        wall: fixture.clock_wall,
    }
}

fn answer(
    fixture: &Fixture,
    probe: ProbeKind,
    check: Option<&str>,
    query: &str,
    accept: Option<&str>,
    details: Details,
) -> String {
    let format = Format::negotiate(accept);
    let query = match Query::parse(Some(query)) {
        Ok(query) => query,
        Err(error) => {
            let response = probity::render::render_error(400, format, &error.to_string(), &[]);
            return format!(
                "{} {}\n\n{}",
                response.status,
                response.header("content-type").unwrap_or_default(),
                response.body
            );
        }
    };
    let request = Request {
        probe,
        check,
        query: &query,
        format,
        details,
    };
    let response = render(&fixture.health.snapshot(), &request, clock(fixture));
    assert_eq!(response.header("cache-control"), Some("no-store"));
    assert_eq!(response.header("x-content-type-options"), Some("nosniff"));
    format!(
        "{} {}\n\n{}",
        response.status,
        response.header("content-type").unwrap_or_default(),
        response.body
    )
}

fn golden(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("missing golden file {}", path.display()));
    assert_eq!(actual, expected, "golden output {name} changed");
}

const JSON: Option<&str> = Some("application/json");
const HEALTH_JSON: Option<&str> = Some("application/health+json");

#[tokio::test(start_paused = true)]
async fn degraded_readiness_in_every_format() {
    let f = fixture().await;
    let shown = Details::Admin;
    golden(
        "readyz_warn.txt",
        &answer(&f, ProbeKind::Readiness, None, "", None, shown),
    );
    golden(
        "readyz_warn_verbose.txt",
        &answer(&f, ProbeKind::Readiness, None, "verbose", None, shown),
    );
    golden(
        "readyz_warn_hidden.txt",
        &answer(
            &f,
            ProbeKind::Readiness,
            None,
            "verbose",
            None,
            Details::Public,
        ),
    );
    golden(
        "readyz_warn.json",
        &answer(&f, ProbeKind::Readiness, None, "", JSON, shown),
    );
    golden(
        "readyz_warn.health.json",
        &answer(&f, ProbeKind::Readiness, None, "", HEALTH_JSON, shown),
    );
}

#[tokio::test(start_paused = true)]
async fn failing_readiness_in_every_format() {
    let f = fixture().await;
    f.db.set(false);
    advance(secs(1.0)).await;
    let hidden = Details::Public;
    golden(
        "readyz_fail.txt",
        &answer(&f, ProbeKind::Readiness, None, "", None, hidden),
    );
    golden(
        "readyz_fail.json",
        &answer(&f, ProbeKind::Readiness, None, "", JSON, hidden),
    );
    golden(
        "readyz_fail.health.json",
        &answer(
            &f,
            ProbeKind::Readiness,
            None,
            "",
            HEALTH_JSON,
            Details::Admin,
        ),
    );
    f.health.shutdown();
    golden(
        "readyz_shutdown.txt",
        &answer(&f, ProbeKind::Readiness, None, "", None, hidden),
    );
}

#[tokio::test(start_paused = true)]
async fn liveness_and_startup() {
    let f = fixture().await;
    golden(
        "livez.txt",
        &answer(&f, ProbeKind::Liveness, None, "", None, Details::Public),
    );
    golden(
        "livez_verbose.txt",
        &answer(
            &f,
            ProbeKind::Liveness,
            None,
            "verbose",
            None,
            Details::Public,
        ),
    );
    golden(
        "livez.health.json",
        &answer(
            &f,
            ProbeKind::Liveness,
            None,
            "",
            HEALTH_JSON,
            Details::Public,
        ),
    );
    golden(
        "startupz.txt",
        &answer(
            &f,
            ProbeKind::Startup,
            None,
            "verbose",
            None,
            Details::Public,
        ),
    );
    let booting = Health::builder()
        .startup_step("migrations")
        .startup_step("warmup")
        .build()
        .unwrap();
    booting.complete_step("migrations").unwrap();
    booting
        .step_progress("warmup", "loading 3 of 9 shards")
        .unwrap();
    let query = Query::default();
    for (name, format) in [
        ("startupz_pending.txt", Format::Text),
        ("startupz_pending.json", Format::Json),
    ] {
        let response = render(
            &booting.snapshot(),
            &Request {
                probe: ProbeKind::Startup,
                check: None,
                query: &query,
                format,
                details: Details::Public,
            },
            clock(&f),
        );
        golden(name, &format!("{}\n\n{}", response.status, response.body));
    }
}

#[tokio::test(start_paused = true)]
async fn single_checks_exclusions_and_errors() {
    let f = fixture().await;
    let shown = Details::Admin;
    golden(
        "readyz_db.txt",
        &answer(&f, ProbeKind::Readiness, Some("db"), "", None, shown),
    );
    golden(
        "readyz_cache.txt",
        &answer(&f, ProbeKind::Readiness, Some("cache"), "", None, shown),
    );
    golden(
        "readyz_cache.json",
        &answer(&f, ProbeKind::Readiness, Some("cache"), "", JSON, shown),
    );
    golden(
        "readyz_exclude_cache.txt",
        &answer(
            &f,
            ProbeKind::Readiness,
            None,
            "exclude=cache&verbose",
            None,
            shown,
        ),
    );
    golden(
        "readyz_unknown_check.txt",
        &answer(&f, ProbeKind::Readiness, Some("dbb"), "", None, shown),
    );
    golden(
        "readyz_unknown_check.json",
        &answer(&f, ProbeKind::Readiness, Some("dbb"), "", JSON, shown),
    );
    golden(
        "readyz_bad_exclude.txt",
        &answer(&f, ProbeKind::Readiness, None, "exclude=nope", None, shown),
    );
    golden(
        "readyz_bad_query.txt",
        &answer(&f, ProbeKind::Readiness, None, "verbos", None, shown),
    );
}

#[tokio::test(start_paused = true)]
async fn no_output_ever_carries_the_password() {
    let f = fixture().await;
    for probe in [
        ProbeKind::Readiness,
        ProbeKind::Liveness,
        ProbeKind::Startup,
    ] {
        for accept in [None, JSON, HEALTH_JSON] {
            for details in [Details::Admin, Details::Public] {
                for query in ["", "verbose"] {
                    let body = answer(&f, probe, None, query, accept, details);
                    assert!(!body.contains("hunter2"), "{body}");
                    if accept.is_some() {
                        let json = body.split_once("\n\n").unwrap().1;
                        serde_json::from_str::<serde_json::Value>(json)
                            .unwrap_or_else(|e| panic!("invalid JSON ({e}): {json}"));
                    }
                }
            }
        }
    }
    let body = answer(
        &f,
        ProbeKind::Readiness,
        Some("cache"),
        "",
        JSON,
        Details::Admin,
    );
    assert!(body.contains("redis://:***@127.0.0.1:6390"), "{body}");
}
