//! Every registry build error names the check and the field.

use probity::{BuildError, CheckSpec, Detail, Health, Tier};
use std::time::Duration;

fn ok_check() -> impl probity::Check {
    || async { Ok(Detail::new()) }
}

fn spec(name: &str) -> CheckSpec {
    CheckSpec::new(name, Tier::Hard, ok_check())
        .interval(Duration::from_secs(5))
        .timeout(Duration::from_secs(2))
}

fn build_error(spec: CheckSpec) -> BuildError {
    Health::builder().check(spec).build().unwrap_err()
}

#[test]
fn timeout_must_be_below_interval() {
    let error = build_error(spec("db").timeout(Duration::from_secs(5)));
    assert_eq!((error.check(), error.field()), ("db", "timeout"));
    assert!(matches!(error, BuildError::TimeoutNotBelowInterval { .. }));
    assert_eq!(
        error.to_string(),
        "check `db`: timeout (5s) must be shorter than interval (5s), or polls pile up behind a slow dependency"
    );
    let error = build_error(spec("db").timeout(Duration::from_secs(30)));
    assert_eq!(error.field(), "timeout");
}

#[test]
fn interval_must_not_be_zero() {
    let error = build_error(spec("db").interval(Duration::ZERO));
    assert_eq!((error.check(), error.field()), ("db", "interval"));
    assert_eq!(
        error.to_string(),
        "check `db`: interval must be greater than zero"
    );
}

#[test]
fn timeout_must_not_be_zero() {
    let error = build_error(spec("db").timeout(Duration::ZERO));
    assert_eq!((error.check(), error.field()), ("db", "timeout"));
}

#[test]
fn rise_and_fall_must_be_at_least_one() {
    let error = build_error(spec("db").rise(0));
    assert_eq!((error.check(), error.field()), ("db", "rise"));
    assert_eq!(
        error.to_string(),
        "check `db`: rise must be greater than zero"
    );
    let error = build_error(spec("db").fall(0));
    assert_eq!((error.check(), error.field()), ("db", "fall"));
    let error = build_error(spec("db").passive_failures(0));
    assert_eq!(error.field(), "passive_failures");
}

#[test]
fn staleness_must_cover_the_interval() {
    let error = build_error(spec("db").staleness(Duration::from_secs(4)));
    assert_eq!((error.check(), error.field()), ("db", "staleness"));
    assert_eq!(
        error.to_string(),
        "check `db`: staleness (4s) must be at least the interval (5s)"
    );
}

#[test]
fn jitter_must_be_below_interval() {
    let error = build_error(spec("db").jitter(Duration::from_secs(5)));
    assert_eq!((error.check(), error.field()), ("db", "jitter"));
}

#[test]
fn fail_open_is_for_hard_checks() {
    let error = build_error(
        CheckSpec::new("cache", Tier::Soft, ok_check()).fail_open_for(Duration::from_secs(60)),
    );
    assert_eq!((error.check(), error.field()), ("cache", "fail_open_for"));
}

#[test]
fn names_must_be_unique() {
    let error = Health::builder()
        .check(spec("db"))
        .check(spec("db"))
        .build()
        .unwrap_err();
    assert_eq!((error.check(), error.field()), ("db", "name"));
    assert!(matches!(error, BuildError::DuplicateName { .. }));
    // Across checks and startup steps too.
    let error = Health::builder()
        .check(spec("db"))
        .startup_step("db")
        .build()
        .unwrap_err();
    assert!(matches!(error, BuildError::DuplicateName { .. }));
}

#[test]
fn names_must_be_valid() {
    for (name, reason) in [
        ("", "names must not be empty"),
        (
            "Db",
            "names may hold only lowercase letters, digits, '_', '-' and '.'",
        ),
        (
            "db pool",
            "names may hold only lowercase letters, digits, '_', '-' and '.'",
        ),
        ("-db", "names must start with a letter or digit"),
        (
            "shutdown",
            "the name is reserved for a built-in gate or condition",
        ),
        (
            "startup",
            "the name is reserved for a built-in gate or condition",
        ),
    ] {
        let error = build_error(spec(name));
        assert_eq!(error.field(), "name");
        assert_eq!(
            error,
            BuildError::InvalidName {
                name: name.to_owned(),
                reason
            }
        );
    }
    let long = "a".repeat(64);
    assert_eq!(build_error(spec(&long)).field(), "name");
    let error = Health::builder()
        .startup_step("Bad Step")
        .build()
        .unwrap_err();
    assert_eq!(error.field(), "name");
}

#[test]
fn a_valid_registry_builds() {
    let health = Health::builder()
        .check(spec("db"))
        .check(spec("cache.primary-1"))
        .startup_step("migrations")
        .build()
        .unwrap();
    assert_eq!(
        health.check_names().collect::<Vec<_>>(),
        vec!["db", "cache.primary-1"]
    );
}
