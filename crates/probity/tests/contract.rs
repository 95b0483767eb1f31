//! The contract a registry publishes for the linter and the simulator.

use probity::contract::{Contract, LivenessKind, ProbeKind};
use probity::{CheckSpec, Detail, Health, Tier};
use std::time::Duration;

#[test]
fn the_contract_describes_every_endpoint_check_and_timing() {
    let health = Health::builder()
        .service("checkout")
        .check(
            CheckSpec::new("db", Tier::Hard, || async { Ok(Detail::new()) })
                .dependency("postgres")
                .interval(Duration::from_secs(1))
                .timeout(Duration::from_millis(500))
                .jitter(Duration::from_millis(100))
                .rise(2)
                .passive_failures(4),
        )
        .check(
            CheckSpec::new("jwks", Tier::Hard, || async { Ok(Detail::new()) })
                .dependency("http")
                .fail_open_for(Duration::from_secs(300)),
        )
        .startup_step("migrations")
        .runtime_watchdog(Duration::from_secs(5))
        .expected_boot(Duration::from_secs(40))
        .drain_delay(Duration::from_secs(12))
        .in_flight_deadline(Duration::from_secs(8))
        .build()
        .unwrap();
    let contract = health.contract();
    assert_eq!(contract.service.as_deref(), Some("checkout"));

    let liveness = contract.endpoint(ProbeKind::Liveness).unwrap();
    assert_eq!(liveness.path, "/livez");
    assert!(
        !liveness.checks_dependencies,
        "liveness never touches a dependency"
    );
    assert_eq!(liveness.checks, vec!["runtime_stall", "marked_broken"]);
    let readiness = contract.endpoint(ProbeKind::Readiness).unwrap();
    assert!(readiness.checks_dependencies);
    assert_eq!(readiness.checks, vec!["db", "jwks"]);
    assert_eq!(readiness.grpc_service.as_deref(), Some("readiness"));
    let startup = contract.endpoint(ProbeKind::Startup).unwrap();
    assert_eq!(startup.checks, vec!["migrations"]);

    let db = contract.check("db").unwrap();
    assert_eq!(
        (
            db.interval_ms,
            db.timeout_ms,
            db.jitter_ms,
            db.rise,
            db.fall,
            db.staleness_ms
        ),
        (1000, 500, 100, 2, 1, 3000)
    );
    assert_eq!(db.passive_failure_threshold, Some(4));
    assert_eq!(db.dependency.as_deref(), Some("postgres"));
    let jwks = contract.check("jwks").unwrap();
    assert_eq!(jwks.fail_open_for_ms, Some(300_000));
    assert_eq!((jwks.interval_ms, jwks.timeout_ms), (5000, 2000));

    assert_eq!(contract.liveness[0].kind, LivenessKind::RuntimeStall);
    assert_eq!(contract.liveness[0].threshold_ms, Some(5000));
    assert_eq!(contract.startup.expected_boot_ms, Some(40_000));
    assert_eq!(contract.shutdown.drain_delay_ms, 12_000);
    assert_eq!(contract.shutdown.in_flight_deadline_ms, Some(8000));

    // What the service prints is what the tools read.
    assert_eq!(
        Contract::from_json(&contract.to_json_pretty()).unwrap(),
        contract
    );
}

#[test]
fn a_service_without_dependency_checks_says_so() {
    let health = Health::builder()
        .check(CheckSpec::new("queue_depth", Tier::Soft, || async {
            Ok(Detail::new())
        }))
        .build()
        .unwrap();
    let contract = health.contract();
    assert!(
        !contract
            .endpoint(ProbeKind::Readiness)
            .unwrap()
            .checks_dependencies
    );
}
