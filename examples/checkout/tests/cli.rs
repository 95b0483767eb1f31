//! The command line: the contract, bad flags and ports in use.

mod support;

use std::time::Duration;
use support::{Checkout, run_to_exit};

#[test]
fn prints_the_contract_as_json() {
    let (status, stdout, stderr) = run_to_exit(&["--print-contract"], Duration::from_secs(20));
    assert!(status.success(), "{stderr}");
    let contract = probity::Contract::from_json(&stdout).expect("a valid contract");
    assert_eq!(contract.service.as_deref(), Some("checkout"));
    let check = contract.check("db").expect("the db check");
    assert_eq!(check.tier, probity::Tier::Hard);
    let liveness = contract
        .endpoint(probity::ProbeKind::Liveness)
        .expect("a liveness endpoint");
    assert!(
        !liveness.checks_dependencies,
        "liveness must not check dependencies"
    );
    let readiness = contract.endpoint(probity::ProbeKind::Readiness).unwrap();
    assert!(readiness.checks.iter().any(|name| name == "db"));
    assert_eq!(readiness.waits_on, ["sqlite"]);
    let steps: Vec<(&str, Option<&str>)> = contract
        .startup
        .steps
        .iter()
        .map(|step| (step.name.as_str(), step.waits_on.as_deref()))
        .collect();
    assert_eq!(
        steps,
        [
            ("database", Some("sqlite")),
            ("migrations", Some("sqlite")),
            ("warmup", None)
        ]
    );
    // The startup probe waits on the internal boot only: a database outage during a rollout
    // never gets new pods killed.
    let startup = contract.endpoint(probity::ProbeKind::Startup).unwrap();
    assert_eq!(startup.checks, ["warmup"]);
    assert!(startup.waits_on.is_empty() && !startup.checks_dependencies);
    // The drain delay is derived from the readiness probe: 5 s × 2 + 2 s.
    assert_eq!(contract.shutdown.drain_delay_ms, 12_000);
    assert!(contract.shutdown.drain_delay_derivation.is_some());

    let (_, with_soft, _) = run_to_exit(
        &[
            "--print-contract",
            "--redis-url",
            "redis://127.0.0.1:6379",
            "--recommendations-url",
            "http://127.0.0.1:9",
        ],
        Duration::from_secs(20),
    );
    let contract = probity::Contract::from_json(&with_soft).unwrap();
    assert_eq!(contract.check("cache").unwrap().tier, probity::Tier::Soft);
    assert_eq!(
        contract.check("recommendations").unwrap().tier,
        probity::Tier::Soft
    );
}

#[test]
fn bad_flags_exit_2_saying_what_is_wrong() {
    for (args, expected) in [
        (
            &["--listen", "localhost"][..],
            "invalid value 'localhost' for '--listen <ADDR>'",
        ),
        (&["--drain-delay", "5 parsecs"][..], "unknown unit `"),
        (&["--pool-size", "0"][..], "0 is not in 1..=100"),
        (
            &["--database-url", "sqlite://"][..],
            "expected sqlite://PATH",
        ),
        (
            &["--recommendations-url", "ftp://x"][..],
            "expected an http:// or https:// URL",
        ),
        (
            &[
                "--listen",
                "127.0.0.1:9999",
                "--admin-listen",
                "127.0.0.1:9999",
            ][..],
            "needs its own port",
        ),
        (
            &["--no-such-flag"][..],
            "unexpected argument '--no-such-flag'",
        ),
        (
            &[
                "--database-url",
                "postgres://app:hunter2@db:notaport/orders",
            ][..],
            "is not a valid PostgreSQL URL",
        ),
        (
            &["--leak-bound", "10ms"][..],
            "--leak-bound must be at least 1s",
        ),
        (
            &["--readiness-path", "internal/ready"][..],
            "--readiness-path: invalid readiness path `internal/ready`",
        ),
        (
            &[
                "--liveness-path",
                "/health",
                "--readiness-path",
                "/health/ready",
            ][..],
            "not equal to or under another's",
        ),
        (
            &["--startup-path", "/orders"][..],
            "is one of the API's routes",
        ),
    ] {
        let (status, _, stderr) = run_to_exit(args, Duration::from_secs(20));
        assert_eq!(status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains("hunter2"), "{args:?}: {stderr}");
    }
}

#[tokio::test]
async fn a_port_in_use_is_a_clear_error() {
    let running = Checkout::start(&[]);
    let listen = running.listen.to_string();
    let admin = support::free_address().to_string();
    let (status, _, stderr) = run_to_exit(
        &["--listen", &listen, "--admin-listen", &admin],
        Duration::from_secs(20),
    );
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "cannot listen on {listen} (--listen): address already in use; is another checkout running? pick a free port with --listen"
        )),
        "{stderr}"
    );
}
