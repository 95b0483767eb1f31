//! Fallbacks: a hard readiness check that names another check to serve instead. While the
//! database fails and the cache serves, readiness is `warn`: the pods stay in rotation, the
//! requests the cache can answer are served degraded and the rest are refused at once. When
//! the cache fails too, or when the failure is the pod's own (its pool), the pods drain.

use probity_sim::report::{LaneState, Report};
use probity_sim::{DrainOutcome, Format, Scenario, effective_seed, simulate};
use std::path::{Path, PathBuf};

const WITH: &str = "db-outage-with-cache-fallback";
const WITHOUT: &str = "db-outage-without-cache-fallback";

/// The database is down from 2m to 12m.
const OUTAGE: (f64, f64) = (120.0, 720.0);

fn text(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(format!("{name}.yaml"));
    std::fs::read_to_string(path).unwrap()
}

fn parse(yaml: &str) -> Scenario {
    Scenario::parse(yaml, Format::Yaml, Path::new("fallback.yaml")).unwrap()
}

fn run_text(yaml: &str) -> Report {
    let scenario = parse(yaml);
    simulate(&scenario, effective_seed(&scenario, None))
}

fn run(name: &str) -> Report {
    run_text(&text(name))
}

fn reject(yaml: &str) -> (String, String) {
    let error = Scenario::parse(yaml, Format::Yaml, Path::new("bad.yaml")).unwrap_err();
    (error.field().unwrap_or("").to_string(), error.to_string())
}

/// Whether every instance was in rotation over the whole run.
fn always_in_rotation(report: &Report) -> bool {
    report.instances.iter().all(|instance| {
        instance
            .lanes
            .iter()
            .all(|span| span.state == LaneState::Ready)
    })
}

#[test]
fn the_pair_differs_only_in_the_fallback() {
    let with = text(WITH);
    let without = text(WITHOUT);
    let strip = |yaml: &str| {
        yaml.lines()
            .filter(|line| {
                !line.starts_with("name:")
                    && !line.starts_with(' ')
                    && !line.starts_with("description:")
            })
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&with), strip(&without));
    let (with, without) = (parse(&with), parse(&without));
    let db = |scenario: &Scenario| {
        scenario
            .app
            .checks
            .iter()
            .position(|check| check.name == "db")
            .unwrap()
    };
    let cache = with
        .app
        .checks
        .iter()
        .position(|check| check.name == "cache")
        .unwrap();
    assert_eq!(with.app.checks[db(&with)].fallback, Some(cache));
    assert_eq!(without.app.checks[db(&without)].fallback, None);
    assert_eq!(with.faults.len(), without.faults.len());
    let shares = |scenario: &Scenario| {
        scenario
            .requests
            .mix
            .iter()
            .map(|class| (class.share, class.needs.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(shares(&with), shares(&without));
    let served: Vec<f64> = with
        .requests
        .mix
        .iter()
        .map(|class| class.served_by_fallback)
        .collect();
    assert_eq!(served, [1.0, 0.0]);
}

#[test]
fn without_the_fallback_every_pod_drains_and_every_request_fails() {
    let report = run(WITHOUT);
    assert_eq!(report.drain, DrainOutcome::Drained);
    assert_eq!(report.drains, 3);
    assert_eq!(report.restarts, 0);
    assert_eq!(report.requests_degraded, None);
    assert!(!always_in_rotation(&report));
    // From the drain to the database's return, the Service has nowhere to send requests.
    let drained = OUTAGE.0 + report.time_to_drain_s.expect("drained");
    assert!(report.error_rate_between(OUTAGE.0, OUTAGE.1) > 0.999);
    assert!(report.error_rate_between(drained, OUTAGE.1) > 0.999);
    assert!(
        report.requests_refused > 55_000,
        "{}",
        report.requests_refused
    );
    assert!(report.time_to_recover_s.expect("recovered") <= 11.0);
}

#[test]
fn with_the_fallback_pods_stay_in_rotation_and_the_cached_share_is_served_degraded() {
    let report = run(WITH);
    assert_eq!(report.drain, DrainOutcome::Degraded);
    assert_eq!(report.drains, 0);
    assert_eq!(report.restarts, 0);
    assert_eq!(report.requests_refused, 0);
    assert!(always_in_rotation(&report));
    // The database check falls within one poll and its timeout (5 s + 1 s).
    assert!(report.time_to_drain_s.expect("degraded") <= 6.0 + 0.5);
    // 80% of ten minutes at 100 requests/s, but for the seconds before the checks fell.
    let degraded = report.requests_degraded.expect("a fallback is named");
    assert!((46_000..=48_000).contains(&degraded), "{degraded}");
    // The writes fail (refused at once by the handlers); the reads do not.
    let rate = report.error_rate_between(OUTAGE.0 + 10.0, OUTAGE.1);
    assert!((rate - 0.2).abs() < 0.005, "{rate}");
    assert!(
        report.requests_failed < 13_000,
        "{}",
        report.requests_failed
    );
    assert!(report.time_to_recover_s.expect("recovered") <= 6.0);
    for instance in &report.instances {
        assert!(instance.degraded.unwrap_or(0) > 15_000, "{}", instance.name);
    }
    // The same traffic without the fallback fails five times as many requests.
    let without = run(WITHOUT);
    assert!(without.requests_failed > 4 * report.requests_failed);
}

#[test]
fn a_cache_outage_with_the_database_outage_drains_again() {
    let yaml = text(WITH).replace(
        "faults:\n",
        "faults:\n  - { kind: dependency-outage, dependency: cache, at: 2m, duration: 10m }\n",
    );
    let report = run_text(&yaml);
    assert_eq!(report.drain, DrainOutcome::Drained);
    assert_eq!(report.drains, 3);
    assert_eq!(report.restarts, 0);
    // Nothing served instead during the outage: whatever the checks said for a moment, the
    // cache was down. The few served degraded are the seconds after both came back, while
    // a pod's cache check had passed again and its database check not yet.
    let degraded = report.requests_degraded.expect("a fallback is named");
    assert!(degraded < 200, "{degraded}");
    assert!(report.error_rate_between(OUTAGE.0, OUTAGE.1) > 0.999);
}

#[test]
fn a_pool_exhausted_on_one_pod_drains_it_whatever_the_fallback() {
    // No outage: the database answers, one pod's own pool leaked dry (probity's `exhausted`).
    let yaml = text(WITH).replace(
        "  - { kind: dependency-outage, dependency: db, at: 2m, duration: 10m }",
        "  - { kind: pool-exhausted, instance: 0, dependency: db, at: 2m }",
    );
    let report = run_text(&yaml);
    assert_eq!(report.drain, DrainOutcome::Drained);
    assert_eq!(report.drains, 1);
    assert_eq!(report.requests_degraded, Some(0));
    assert!(
        report.instances[0]
            .lanes
            .iter()
            .any(|span| span.state == LaneState::OutOfRotation)
    );
}

#[test]
fn a_fallback_serves_once_the_fail_open_window_closes() {
    // Failing open, the check still answers for the database: requests call it and fail.
    // When the window closes, with no poll to mark the moment, the cache serves instead.
    let yaml = text(WITH).replace("fallback: cache }", "fallback: cache, fail_open_for: 30s }");
    let report = run_text(&yaml);
    assert_eq!(report.drains, 0);
    assert!(report.error_rate_between(OUTAGE.0 + 7.0, OUTAGE.0 + 30.0) > 0.999);
    let rate = report.error_rate_between(OUTAGE.0 + 40.0, OUTAGE.1);
    assert!((rate - 0.2).abs() < 0.005, "{rate}");
    assert!(report.time_to_drain_s.expect("degraded") > 30.0);
}

#[test]
fn reports_count_degraded_requests_apart_only_when_a_fallback_is_named() {
    let with = run(WITH);
    let without = run(WITHOUT);
    let table = with.to_text();
    assert!(table.contains("served degraded"), "{table}");
    assert!(
        table.lines().nth(2).unwrap().contains("served degraded"),
        "{table}"
    );
    assert!(!without.to_text().contains("served degraded"));
    let json = serde_json::to_value(&with).unwrap();
    assert!(json["requests_degraded"].as_u64().unwrap() > 0);
    assert!(json["instances"][0]["degraded"].as_u64().unwrap() > 0);
    let json = serde_json::to_value(&without).unwrap();
    assert!(json.get("requests_degraded").is_none());
    // Side by side, both columns have the row.
    let compared = probity_sim::compare_text(&without, &with);
    let row = compared
        .lines()
        .find(|line| line.starts_with("served degraded"))
        .expect("the row");
    assert!(row.contains("0 of 90000"), "{row}");
}

const BASE: &str = r#"
name: fallback
duration: 2m
fleet: { replicas: 2 }
dependencies: { db: {}, cache: {} }
requests: { rate: 10, served_by_fallback: 0.5 }
app:
  endpoints:
    /livez: { checks: [] }
    /readyz: { mode: cached, checks: [db, cache] }
  checks:
    db: { dependency: db, fallback: cache }
    cache: { dependency: cache, tier: soft }
container:
  livenessProbe:  { httpGet: { path: /livez, port: 8080 } }
  readinessProbe: { httpGet: { path: /readyz, port: 8080 } }
"#;

#[test]
fn the_base_is_valid_and_requests_need_only_the_primary() {
    let scenario = parse(BASE);
    assert_eq!(scenario.requests.mix.len(), 1);
    // The cache is called only for the requests it serves instead of the database.
    let db = scenario
        .dependencies
        .iter()
        .position(|dependency| dependency.name == "db")
        .unwrap();
    assert_eq!(scenario.requests.mix[0].needs, [db]);
    assert_eq!(scenario.requests.mix[0].served_by_fallback, 0.5);
}

#[test]
fn bad_fallbacks_name_the_field_and_say_why() {
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "fallback: cache }",
            "fallback: redis }",
            "app.checks.db.fallback",
            "`redis` is not a check",
        ),
        (
            "fallback: cache }",
            "fallback: db }",
            "app.checks.db.fallback",
            "cannot be its own fallback",
        ),
        (
            "fallback: cache }",
            "fallback: deadlock }\n    deadlock: { internal: deadlock }",
            "app.checks.db.fallback",
            "not a dependency",
        ),
        (
            "tier: soft }",
            "tier: soft, fallback: db }",
            "app.checks.cache.fallback",
            "a fallback applies to hard checks only",
        ),
        (
            "{ dependency: cache, tier: soft }",
            "{ dependency: cache, fallback: db }",
            "app.checks.cache.fallback",
            "fallbacks do not chain",
        ),
        (
            "{ dependency: db, fallback: cache }",
            "{ dependency: db, tier: soft, fallback: cache }",
            "app.checks.db.fallback",
            "hard checks only",
        ),
        (
            "checks: [db, cache] }",
            "checks: [db] }",
            "app.endpoints./readyz.checks[0]",
            "does not list",
        ),
        (
            "/readyz: { mode: cached,",
            "/readyz: { mode: sync,",
            "app.endpoints./readyz.checks[0]",
            "mode: cached",
        ),
        (
            "served_by_fallback: 0.5",
            "served_by_fallback: 1.5",
            "requests.served_by_fallback",
            "between 0 and 1",
        ),
        (
            "    db: { dependency: db, fallback: cache }",
            "    db: { dependency: db }",
            "requests.served_by_fallback",
            "no check names a fallback",
        ),
        (
            "requests: { rate: 10, served_by_fallback: 0.5 }",
            "requests: { rate: 10, mix: [ { share: 1, needs: [cache], served_by_fallback: 1 } ] }",
            "requests.mix[0].served_by_fallback",
            "need no dependency with a fallback (db → cache)",
        ),
        (
            "    cache: { dependency: cache, tier: soft }",
            "    cache: { dependency: cache, tier: soft }\n    db2: { dependency: db, fallback: cache }",
            "app.checks.db2.fallback",
            "one check per dependency",
        ),
    ];
    for (from, to, field, reason) in cases {
        assert!(BASE.contains(from), "{from}");
        let (got_field, text) = reject(&BASE.replacen(from, to, 1));
        assert_eq!(&got_field, field, "{text}");
        assert!(text.contains(reason), "{text}");
        assert!(text.starts_with("bad.yaml: "), "{text}");
    }
}
