//! Fallbacks: a hard check that fails while the check it names as its fallback serves degrades
//! readiness (`warn`, 200, in rotation) instead of failing it; when the fallback fails too, or
//! the fault is this instance's own (its pool exhausted while the database answers), readiness
//! fails. Drain for a local fault, degrade for a shared one.

mod support;

use probity::render::{Clock, Details, Format, Query, Request, render};
use probity::{
    BuildError, CheckError, CheckSpec, Detail, FailureKind, Health, ProbeKind, Status, Tier,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::SystemTime;
use support::{Switch, advance, secs};
use tokio::time::Instant;

/// A database check a test steers: up, down (refused: every instance sees it), or exhausted
/// (this instance's own pool gives no connection while the database answers).
#[derive(Clone, Default)]
struct Database(Arc<AtomicU8>);

const UP: u8 = 0;
const DOWN: u8 = 1;
const EXHAUSTED: u8 = 2;

impl Database {
    fn set(&self, mode: u8) {
        self.0.store(mode, Ordering::SeqCst);
    }

    fn spec(&self) -> CheckSpec {
        let mode = self.0.clone();
        let check = move || {
            let mode = mode.clone();
            async move {
                match mode.load(Ordering::SeqCst) {
                    UP => Ok(Detail::new()),
                    DOWN => Err(CheckError::new("connect 10.0.0.5:5432: connection refused")),
                    _ => Err(CheckError::new("no connection within 300ms: 5 of 5 in use")
                        .kind(FailureKind::Exhausted)),
                }
            }
        };
        CheckSpec::new("db", Tier::Hard, check)
            .dependency("postgres")
            .interval(secs(1.0))
            .timeout(secs(0.5))
            .jitter(secs(0.0))
            .fallback("cache")
    }
}

fn cache_spec(cache: &Switch) -> CheckSpec {
    CheckSpec::new("cache", Tier::Soft, cache.check())
        .dependency("redis")
        .interval(secs(1.0))
        .timeout(secs(0.5))
        .jitter(secs(0.0))
}

async fn started(db: &Database, cache: &Switch) -> Health {
    let health = Health::builder()
        .service("checkout")
        .check(db.spec())
        .check(cache_spec(cache))
        .build()
        .unwrap();
    health.start().unwrap();
    advance(secs(0.5)).await;
    assert_eq!(readiness(&health), Status::Pass);
    health
}

fn readiness(health: &Health) -> Status {
    health
        .snapshot()
        .status(ProbeKind::Readiness, Instant::now())
}

/// Whether a fallback serves for `db` now.
fn fallback_serves_db(health: &Health) -> bool {
    health
        .snapshot()
        .serving_instead("db", Instant::now())
        .is_some()
}

fn body(health: &Health, format: Format, details: Details) -> (u16, String) {
    let query = Query::default();
    let answer = render(
        &health.snapshot(),
        &Request {
            probe: ProbeKind::Readiness,
            check: None,
            query: &query,
            format,
            details,
        },
        Clock {
            now: Instant::now(),
            wall: SystemTime::now(),
        },
    );
    (answer.status, answer.body.into_owned())
}

#[tokio::test(start_paused = true)]
async fn a_shared_outage_with_a_serving_fallback_degrades_and_says_what_serves() {
    let (db, cache) = (Database::default(), Switch::new(true));
    let health = started(&db, &cache).await;

    db.set(DOWN);
    advance(secs(1.0)).await;
    let snapshot = health.snapshot();
    let now = Instant::now();
    let verdict = snapshot.verdict(ProbeKind::Readiness, now, &[]);
    assert_eq!(verdict.status, Status::Warn);
    assert_eq!(verdict.status.http_code(), 200);
    assert!(verdict.failing.is_empty(), "{verdict:?}");
    assert_eq!(verdict.degraded, vec!["db"]);
    assert_eq!(
        verdict.served_by,
        vec![("db".to_owned(), "cache".to_owned())]
    );
    // The fast path agrees, and the handler's question says what serves.
    assert_eq!(snapshot.status(ProbeKind::Readiness, now), Status::Warn);
    assert_eq!(
        snapshot.serving_instead("db", now).map(|c| c.name()),
        Some("cache")
    );
    // Asked alone, the database tells the truth: it does not serve.
    let alone = snapshot.entry(ProbeKind::Readiness, "db", now).unwrap();
    assert_eq!(alone.status, Status::Fail);

    let (code, text) = body(&health, Format::Text, Details::Public);
    assert_eq!(code, 200);
    assert_eq!(
        text,
        "[!]db degraded (hard): refused (degraded: cache serves instead)\nreadyz check passed with warnings\n"
    );
    let (_, admin) = body(&health, Format::Text, Details::Admin);
    assert!(
        admin.contains(
            "[!]db degraded (hard): connect 10.0.0.5:5432: connection refused (degraded: cache serves instead)"
        ),
        "{admin}"
    );
    let (code, json) = body(&health, Format::Json, Details::Public);
    assert_eq!(code, 200);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["status"], "warn");
    assert_eq!(json["degraded"], serde_json::json!(["db"]));
    assert_eq!(json["checks"][0]["status"], "warn");
    assert_eq!(
        json["checks"][0]["reason"],
        "refused (degraded: cache serves instead)"
    );
    let (code, health_json) = body(&health, Format::HealthJson, Details::Public);
    assert_eq!(code, 200);
    let health_json: serde_json::Value = serde_json::from_str(&health_json).unwrap();
    assert_eq!(health_json["status"], "warn");
    assert_eq!(health_json["output"], "degraded: db");
    assert_eq!(
        health_json["checks"]["db:responseTime"][0]["output"],
        "refused (degraded: cache serves instead)"
    );
}

#[tokio::test(start_paused = true)]
async fn when_the_fallback_fails_too_readiness_fails() {
    let (db, cache) = (Database::default(), Switch::new(true));
    let health = started(&db, &cache).await;
    db.set(DOWN);
    advance(secs(1.0)).await;
    assert_eq!(readiness(&health), Status::Warn);

    cache.set(false);
    advance(secs(1.0)).await;
    let verdict = health
        .snapshot()
        .verdict(ProbeKind::Readiness, Instant::now(), &[]);
    assert_eq!(verdict.status, Status::Fail);
    assert_eq!(verdict.failing, vec!["db"]);
    assert_eq!(verdict.degraded, vec!["cache"]);
    assert!(verdict.served_by.is_empty());
    assert!(!fallback_serves_db(&health));
    // The cache comes back: it serves again once healthy by its own rise count (not before:
    // a fallback is judged on its own evidence), and readiness is degraded again.
    cache.set(true);
    advance(secs(1.0)).await;
    assert_eq!(readiness(&health), Status::Fail, "the cache is recovering");
    advance(secs(2.0)).await;
    assert_eq!(readiness(&health), Status::Warn);
}

#[tokio::test(start_paused = true)]
async fn an_exhausted_pool_is_this_instances_own_and_drains_despite_the_fallback() {
    let (db, cache) = (Database::default(), Switch::new(true));
    let health = started(&db, &cache).await;
    db.set(EXHAUSTED);
    advance(secs(1.0)).await;
    let snapshot = health.snapshot();
    let verdict = snapshot.verdict(ProbeKind::Readiness, Instant::now(), &[]);
    assert_eq!(verdict.status, Status::Fail);
    assert_eq!(verdict.failing, vec!["db"]);
    assert!(snapshot.check("db").unwrap().is_local_fault());
    let (code, text) = body(&health, Format::Text, Details::Public);
    assert_eq!(code, 503);
    assert!(
        text.contains(
            "[-]db failed: exhausted (this instance's own fault: cache does not serve for it)"
        ),
        "{text}"
    );

    // The same check failing for a shared reason degrades again.
    db.set(DOWN);
    advance(secs(1.0)).await;
    assert_eq!(readiness(&health), Status::Warn);
}

#[tokio::test(start_paused = true)]
async fn a_passive_report_of_an_exhausted_pool_degrades_until_a_poll_confirms_it_is_local() {
    let (db, cache) = (Database::default(), Switch::new(true));
    let health = started(&db, &cache).await;
    let reporter = health.reporter("db").unwrap();
    // The requests cannot tell a leak from a database every instance lost: the check fails at
    // once, but the cache serves until a poll says whose fault it is.
    for _ in 0..5 {
        reporter.failure("no pooled connection given back within the acquire timeout");
    }
    assert_eq!(
        readiness(&health),
        Status::Warn,
        "failing, served by the cache"
    );
    assert!(!health.snapshot().check("db").unwrap().is_local_fault());
    // The re-poll confirms the pool is this instance's own trouble: it drains.
    db.set(EXHAUSTED);
    advance(secs(0.1)).await;
    assert!(health.snapshot().check("db").unwrap().is_local_fault());
    assert_eq!(readiness(&health), Status::Fail);
    // The requests keep failing meanwhile: their reports keep the poll's word, and the
    // instance stays drained instead of flapping back to degraded between polls.
    for _ in 0..5 {
        reporter.failure("no pooled connection given back within the acquire timeout");
    }
    assert!(health.snapshot().check("db").unwrap().is_local_fault());
    assert_eq!(readiness(&health), Status::Fail);
}

#[tokio::test(start_paused = true)]
async fn a_passive_report_during_a_shared_outage_never_drains_the_instance() {
    let (db, cache) = (Database::default(), Switch::new(true));
    let health = started(&db, &cache).await;
    let reporter = health.reporter("db").unwrap();
    db.set(DOWN);
    for _ in 0..5 {
        reporter.failure("no pooled connection given back within the acquire timeout");
    }
    assert_eq!(readiness(&health), Status::Warn);
    // The re-poll finds the database refusing: a shared fault, still served by the cache.
    advance(secs(0.1)).await;
    assert_eq!(readiness(&health), Status::Warn);
    assert!(!health.snapshot().check("db").unwrap().is_local_fault());
}

#[tokio::test(start_paused = true)]
async fn after_the_outage_the_check_recovers_through_its_rise_count_then_passes() {
    let (db, cache) = (Database::default(), Switch::new(true));
    let health = started(&db, &cache).await;
    db.set(DOWN);
    advance(secs(1.0)).await; // polled down at t=1
    assert_eq!(readiness(&health), Status::Warn);
    db.set(UP);
    advance(secs(1.0)).await; // 1 of 3 successes
    let snapshot = health.snapshot();
    assert!(matches!(
        snapshot.check_verdict("db", Instant::now()).unwrap().cause,
        probity::Cause::Recovering { .. }
    ));
    assert_eq!(
        readiness(&health),
        Status::Warn,
        "served by the cache while recovering"
    );
    advance(secs(2.0)).await; // 3 of 3
    assert_eq!(readiness(&health), Status::Pass);
    assert!(!fallback_serves_db(&health));
}

#[tokio::test(start_paused = true)]
async fn without_a_result_yet_the_fallback_does_not_serve() {
    let (db, cache) = (Database::default(), Switch::new(true));
    let health = Health::builder()
        .check(db.spec())
        .check(cache_spec(&cache))
        .build()
        .unwrap();
    // Not started: no check has a result.
    assert_eq!(readiness(&health), Status::Fail);
    assert!(!fallback_serves_db(&health));
}

#[tokio::test(start_paused = true)]
async fn a_stale_result_fails_whatever_the_fallback() {
    // A poller that cannot finish a poll leaves a stale result: nothing says the dependency is
    // the one in trouble, so the instance drains.
    let (db, cache) = (Database::default(), Switch::new(true));
    let health = started(&db, &cache).await;
    db.set(DOWN);
    advance(secs(1.0)).await;
    assert_eq!(readiness(&health), Status::Warn);
    let snapshot = health.snapshot();
    // 3 s staleness bound, evaluated 4 s on without a new result.
    let later = Instant::now() + secs(4.0);
    let verdict = snapshot.check_verdict("db", later).unwrap();
    assert!(matches!(verdict.cause, probity::Cause::Stale { .. }));
    assert_eq!(verdict.status, Status::Fail);
}

#[test]
fn a_fallback_that_names_nothing_itself_or_a_chain_is_a_build_error() {
    let ok = || async { Ok(Detail::new()) };
    let build = |checks: Vec<CheckSpec>| {
        let mut builder = Health::builder();
        for check in checks {
            builder = builder.check(check);
        }
        builder.build().map(|_| ()).unwrap_err()
    };

    let unknown = build(vec![
        CheckSpec::new("db", Tier::Hard, ok).fallback("cahce"),
        CheckSpec::new("cache", Tier::Soft, ok),
    ]);
    assert!(matches!(unknown, BuildError::UnknownFallback { .. }));
    assert_eq!((unknown.check(), unknown.field()), ("db", "fallback"));
    assert_eq!(
        unknown.to_string(),
        "check `db`: fallback `cahce` is not a declared check (known: cache)"
    );

    let itself = build(vec![CheckSpec::new("db", Tier::Hard, ok).fallback("db")]);
    assert_eq!(
        itself.to_string(),
        "check `db`: a check cannot be its own fallback"
    );

    let chain = build(vec![
        CheckSpec::new("db", Tier::Hard, ok).fallback("replica"),
        CheckSpec::new("replica", Tier::Hard, ok).fallback("cache"),
        CheckSpec::new("cache", Tier::Soft, ok),
    ]);
    assert_eq!(
        chain.to_string(),
        "check `db`: fallback `replica` names a fallback of its own (`cache`); fallbacks do not chain"
    );

    let cycle = build(vec![
        CheckSpec::new("db", Tier::Hard, ok).fallback("replica"),
        CheckSpec::new("replica", Tier::Hard, ok).fallback("db"),
    ]);
    assert!(matches!(cycle, BuildError::FallbackChain { .. }), "{cycle}");
    assert_eq!(cycle.check(), "db");

    let soft = build(vec![
        CheckSpec::new("cache", Tier::Soft, ok).fallback("db"),
        CheckSpec::new("db", Tier::Hard, ok),
    ]);
    assert_eq!(
        soft.to_string(),
        "check `cache`: a fallback applies to hard checks only (a soft check never fails readiness)"
    );
}

#[tokio::test(start_paused = true)]
async fn a_capability_the_application_declares_can_serve_as_the_fallback() {
    // "cached reads": an info check of the application's own, which never changes readiness
    // by itself and vouches for the degraded mode while the database is down.
    let db = Database::default();
    let cached_reads = Switch::new(true);
    let health = Health::builder()
        .check(db.spec().fallback("cached-reads"))
        .check(
            CheckSpec::new("cached-reads", Tier::Info, cached_reads.check())
                .interval(secs(1.0))
                .timeout(secs(0.5))
                .jitter(secs(0.0)),
        )
        .build()
        .unwrap();
    health.start().unwrap();
    advance(secs(0.5)).await;
    db.set(DOWN);
    advance(secs(1.0)).await;
    let verdict = health
        .snapshot()
        .verdict(ProbeKind::Readiness, Instant::now(), &[]);
    assert_eq!(verdict.status, Status::Warn);
    assert_eq!(
        verdict.served_by,
        vec![("db".to_owned(), "cached-reads".to_owned())]
    );
    cached_reads.set(false);
    advance(secs(1.0)).await;
    assert_eq!(readiness(&health), Status::Fail);
}

#[test]
fn the_contract_names_each_checks_fallback() {
    let (db, cache) = (Database::default(), Switch::new(true));
    let health = Health::builder()
        .check(db.spec())
        .check(cache_spec(&cache))
        .build()
        .unwrap();
    let contract = health.contract();
    assert_eq!(contract.checks[0].fallback.as_deref(), Some("cache"));
    assert_eq!(contract.checks[1].fallback, None);
    let json = contract.to_json_pretty();
    assert!(json.contains(r#""fallback": "cache""#), "{json}");
    assert_eq!(probity::Contract::from_json(&json).unwrap(), contract);
}
