//! The drill files of the open-source services the agent's third-party tests run
//! (`examples/drills/parse-server.yaml`, `examples/drills/mlflow.yaml`): each reads as a drill
//! file, as shipped (every probe on the service's own health endpoint) and with
//! `probity agent` in front (the probes on the agent), with its database as a dependency the
//! drill's fault proxy serves, and a fault of every kind that needs no help from the service.

use probity_drill::file::{DrillFile, FaultKind};
use std::path::{Path, PathBuf};

fn drills() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/drills")
}

fn check(name: &str, service: &str, health: &str) {
    let path = drills().join(name);
    let loaded = DrillFile::load(&path).unwrap_or_else(|error| panic!("{name}: {error}"));
    assert_eq!(loaded.file.service, service);

    // As shipped, the pod's probes call the service's own health endpoint.
    let shipped = loaded.pod(None, false).unwrap();
    for probe in [&shipped.startup, &shipped.liveness, &shipped.readiness] {
        let probe = probe
            .as_ref()
            .expect("startup, liveness and readiness probes");
        assert!(format!("{:?}", probe.action).contains(health), "{probe:?}");
    }
    // With the agent, they call the agent's.
    let behind = loaded.pod(None, true).unwrap();
    for (probe, path) in [
        (&behind.startup, "/startupz"),
        (&behind.liveness, "/livez"),
        (&behind.readiness, "/readyz"),
    ] {
        let probe = probe.as_ref().expect("the agent's probes");
        assert!(format!("{:?}", probe.action).contains(path), "{probe:?}");
    }
    let agent = loaded.file.agent.as_ref().expect("an agent section");
    assert!(
        loaded.dir.join(&agent.config).is_file(),
        "{:?}",
        agent.config
    );

    // The database is the dependency the fault proxy serves, and it reaches the app through
    // the placeholder only.
    let db = &loaded.file.dependencies["db"];
    assert!(
        db.url
            .as_deref()
            .is_some_and(|url| url.starts_with("postgres"))
    );
    assert!(
        loaded.file.app.command.join(" ").contains("{dep.db.url}"),
        "{:?}",
        loaded.file.app.command
    );

    // Every fault that needs no help from the service.
    let faults = loaded.file.faults.as_ref().expect("faults");
    for kind in [
        FaultKind::Busy,
        FaultKind::Refuse,
        FaultKind::Blackhole,
        FaultKind::Slow,
        FaultKind::Flap,
        FaultKind::Wedge,
        FaultKind::Terminate,
        FaultKind::Crash,
        FaultKind::StartDuringOutage,
    ] {
        assert!(
            faults.iter().any(|fault| fault.kind == kind),
            "{name}: no {} fault",
            kind.name()
        );
    }
}

#[test]
fn parse_server_drill_file_reads_as_shipped_and_behind_the_agent() {
    check("parse-server.yaml", "parse-server", "/parse/health");
}

#[test]
fn mlflow_drill_file_reads_as_shipped_and_behind_the_agent() {
    check("mlflow.yaml", "mlflow", "/health");
}
