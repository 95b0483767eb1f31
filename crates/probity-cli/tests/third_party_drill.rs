//! `probity drill` on open-source services nobody here wrote, from their drill files
//! (`examples/drills/parse-server.yaml`, `examples/drills/mlflow.yaml`), installed from npm and
//! PyPI by `scripts/subjects.sh`, each with its real database pool against the PostgreSQL here,
//! behind a real HAProxy, under load at four times the pool: as shipped (every probe on the
//! service's own health endpoint) and behind `probity agent`.
//!
//! Short form, to fit CI: two instances, probes every 1–2 s instead of 5–10 s (the endpoints
//! they call are as shipped), faults of a few seconds, and the faults split between the modes
//! so that every kind runs on each service in one mode or the other. The full drills run with
//! `probity drill --file examples/drills/NAME.yaml [--with-agent]`.
//!
//! What each asserts was read in the services' code:
//! - Parse Server 9.10.0: `/parse/health` answers 200 while `config.state` is `ok`, which it
//!   becomes once at start (`ParseServer.start`) and never leaves, so it cannot see a lost
//!   database; `start` runs `performInitialization` against the database and the CLI exits 1
//!   when it throws; on SIGTERM `handleShutdown` closes the listener and destroys open
//!   connections at once. Node's event loop keeps answering `/parse/health` while queries hang.
//! - MLflow 3.17.2: `mlflow server` runs waitress as a child process (`_run_server` →
//!   `_exec_cmd`); `/health` returns "OK" and checks nothing, but needs one of waitress's 8
//!   threads, which every request holds while it waits on the database (SQLAlchemy with no
//!   statement timeout), so a black-holed database starves it.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A prerequisite: missing, the test fails under `CI=true` and skips elsewhere.
fn needs(what: &str, available: bool) -> bool {
    if !available {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{what} is not available (scripts/setup.sh installs and starts it)"
        );
        eprintln!("SKIPPED: {what} is not available");
    }
    available
}

fn subjects() -> PathBuf {
    std::env::var_os("PROBITY_SUBJECTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/probity-subjects"))
}

fn available(install: &str) -> bool {
    let haproxy = Command::new("haproxy")
        .arg("-v")
        .output()
        .is_ok_and(|output| output.status.success());
    let postgres = std::net::TcpStream::connect_timeout(
        &"127.0.0.1:5432".parse().expect("address"),
        Duration::from_secs(3),
    )
    .is_ok();
    let createdb = Command::new("createdb")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    let installed = subjects().join(install).join(".installed").is_file();
    needs("haproxy", haproxy)
        && needs("PostgreSQL on 127.0.0.1:5432", postgres)
        && needs("PostgreSQL's client tools (createdb, psql)", createdb)
        && needs(
            &format!(
                "{} (scripts/subjects.sh)",
                subjects().join(install).display()
            ),
            installed,
        )
}

fn psql(statement: &str) {
    let output = Command::new("psql")
        .args([
            "-h",
            "127.0.0.1",
            "-U",
            "postgres",
            "-d",
            "postgres",
            "-tAc",
        ])
        .arg(statement)
        .output()
        .expect("psql runs");
    assert!(
        output.status.success(),
        "psql {statement:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The shipped drill file, shortened for CI: each `(from, to)` must match, and the faults are
/// replaced. It is written to a scratch folder with the agent's configuration beside it, and
/// removed when dropped, with its database.
struct ShortForm {
    path: PathBuf,
    database: String,
}

impl ShortForm {
    fn new(name: &str, mode: &str, edits: &[(&str, &str)], faults: &str) -> ShortForm {
        let shipped = repository().join("examples/drills").join(name);
        let mut text = std::fs::read_to_string(&shipped).expect("the shipped drill file");
        let shipped_database = text
            .split("/probity_")
            .nth(1)
            .and_then(|rest| {
                rest.split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                    .next()
            })
            .map(|name| format!("probity_{name}"))
            .expect("a database named in the drill file");
        // A database of this test's own, which the file's setup creates.
        let database = format!("{shipped_database}_{mode}_{}", std::process::id());
        text = text.replace(&shipped_database, &database);
        for (from, to) in edits {
            assert!(text.contains(from), "{name}: `{from}` not found");
            text = text.replace(from, to);
        }
        let head = &text[..text.find("\nfaults:").expect("a faults section")];
        let text = format!("{head}\nfaults:\n{faults}");
        let dir = std::env::temp_dir().join(format!(
            "probity-third-party-{}-{mode}-{}",
            name.trim_end_matches(".yaml"),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch folder");
        // The agent's configuration, named relative to the drill file, goes beside it.
        let agent = text
            .lines()
            .find_map(|line| line.trim().strip_prefix("config: "))
            .expect("an agent section");
        std::fs::copy(shipped.with_file_name(agent), dir.join(agent))
            .expect("the agent's configuration");
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write the short form");
        ShortForm { path, database }
    }
}

impl Drop for ShortForm {
    fn drop(&mut self) {
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
        psql(&format!(
            "drop database if exists {} with (force)",
            self.database
        ));
    }
}

/// Runs the drill and reads its JSON report.
fn drill(file: &ShortForm, with_agent: bool) -> (Output, Value) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_probity"));
    command.args(["drill", "--json", "--file"]).arg(&file.path);
    if with_agent {
        command.arg("--with-agent");
    }
    let output = command.output().expect("probity runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|error| {
        panic!(
            "no JSON report ({error}); stderr:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output, report)
}

fn row<'a>(report: &'a Value, fault: &str) -> &'a Value {
    report["faults"]
        .as_array()
        .expect("faults")
        .iter()
        .find(|row| row["fault"] == fault)
        .unwrap_or_else(|| panic!("no row {fault} in {report:#}"))
}

fn met(row: &Value, target: &str) -> bool {
    row["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|check| {
            check["target"]
                .as_str()
                .is_some_and(|t| t.starts_with(target))
        })
        .unwrap_or_else(|| panic!("no target `{target}…` in {row:#}"))["met"]
        == true
}

fn all_met(row: &Value) -> bool {
    row["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .all(|check| check["met"] == true)
}

fn mistakes(row: &Value) -> Vec<String> {
    row["diagnoses"]
        .as_array()
        .expect("diagnoses")
        .iter()
        .map(|d| d["mistake"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn number(row: &Value, key: &str) -> u64 {
    row[key]
        .as_u64()
        .unwrap_or_else(|| panic!("no {key} in {row:#}"))
}

/// Probes every 1–2 s rather than the shipped 5–10 s, so a readiness or liveness window fits a
/// fault of a few seconds; the endpoints the probes call are untouched.
const PARSE_SHORT: &[(&str, &str)] = &[
    ("instances: 3", "instances: 2"),
    (
        "        httpGet: {path: /parse/health, port: http}\n        periodSeconds: 10",
        "        httpGet: {path: /parse/health, port: http}\n        periodSeconds: 2\n        failureThreshold: 2",
    ),
    (
        "        httpGet: {path: /parse/health, port: http}\n        periodSeconds: 5",
        "        httpGet: {path: /parse/health, port: http}\n        periodSeconds: 1\n        failureThreshold: 2",
    ),
    (
        "      httpGet: {path: /livez, port: 9090}\n      periodSeconds: 10",
        "      httpGet: {path: /livez, port: 9090}\n      periodSeconds: 2\n      failureThreshold: 2",
    ),
];

const MLFLOW_SHORT: &[(&str, &str)] = &[
    (
        "        httpGet: {path: /health, port: http}\n        periodSeconds: 10",
        "        httpGet: {path: /health, port: http}\n        periodSeconds: 2\n        failureThreshold: 2",
    ),
    (
        "        httpGet: {path: /health, port: http}\n        periodSeconds: 5",
        "        httpGet: {path: /health, port: http}\n        periodSeconds: 1\n        failureThreshold: 2",
    ),
    (
        "      httpGet: {path: /livez, port: 9090}\n      periodSeconds: 10",
        "      httpGet: {path: /livez, port: 9090}\n      periodSeconds: 2\n      failureThreshold: 2",
    ),
];

#[test]
fn under_load_parse_server_as_shipped_is_drilled_and_its_misses_diagnosed() {
    if !available("parse-server-9.10.0") {
        return;
    }
    let file = ShortForm::new(
        "parse-server.yaml",
        "shipped",
        PARSE_SHORT,
        "  - { kind: busy, duration: 4s }\n\
         \x20 - { kind: refuse, dependency: db, scope: one, duration: 10s }\n\
         \x20 - { kind: blackhole, dependency: db, duration: 5s }\n\
         \x20 - { kind: wedge, duration: 10s }\n\
         \x20 - { kind: terminate }\n\
         \x20 - { kind: start-during-outage, dependency: db, duration: 20s, recover: 60s }\n",
    );
    let (output, report) = drill(&file, false);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{report:#}\n{stderr}");

    // Busy is not broken: the load alone fails nothing and moves no readiness.
    let busy = row(&report, "busy");
    assert!(all_met(busy), "{busy:#}");
    assert!(number(busy, "requests") > 50, "{busy:#}");

    // /parse/health cannot see the database: the instance whose path is cut keeps its share of
    // the traffic and fails it, and the drill names the wiring.
    let cut = row(&report, "refuse-db-one");
    assert!(!met(cut, "out of rotation"), "{cut:#}");
    assert!(cut["out_of_rotation_at_s"].is_null(), "{cut:#}");
    assert!(number(&cut["failed"], "total") > 0, "{cut:#}");
    assert_eq!(mistakes(cut), ["readiness does not check `db`"], "{cut:#}");

    // Node's event loop answers the probes while queries hang: nothing restarts, no probe
    // times out.
    let blackhole = row(&report, "blackhole-db");
    assert!(all_met(blackhole), "{blackhole:#}");
    assert_eq!(number(blackhole, "probe_timeouts"), 0, "{blackhole:#}");

    // A frozen process fails liveness and is restarted.
    let wedge = row(&report, "wedge");
    assert!(all_met(wedge), "{wedge:#}");
    assert_eq!(number(wedge, "liveness_kills"), 1, "{wedge:#}");

    // SIGTERM closes the listener and destroys open connections at once: with no preStop the
    // requests in flight are cut.
    let terminate = row(&report, "terminate");
    if !met(terminate, "failed requests") {
        assert_eq!(
            mistakes(terminate),
            ["no drain before the listener closes"],
            "{terminate:#}"
        );
    }

    // A new instance cannot start without its database: it exits, and CrashLoopBackOff
    // follows; the drill says so rather than blaming a probe.
    let started = row(&report, "start-during-outage-db");
    assert!(number(started, "exits") >= 1, "{started:#}");
    assert_eq!(number(started, "liveness_kills"), 0, "{started:#}");
    assert!(
        mistakes(started).contains(&"the app exits when `db` is away".to_owned()),
        "{started:#}"
    );
    assert!(started["back"] == true, "{started:#}");
}

#[test]
fn under_load_parse_server_behind_the_agent_is_drained_and_never_restarted_by_its_database() {
    if !available("parse-server-9.10.0") {
        return;
    }
    let file = ShortForm::new(
        "parse-server.yaml",
        "agent",
        PARSE_SHORT,
        // The agent's `db` check rises after 2 polls 2 s apart, where the default window
        // allows the service one poll: back within the probe's window (2 s) + 4 s + 5 s.
        "  - { kind: refuse, dependency: db, scope: one, duration: 14s, targets: \
         { back_within: 11s } }\n\
         \x20 - { kind: refuse, dependency: db, duration: 12s }\n\
         \x20 - { kind: slow, dependency: db, duration: 5s, latency: 300ms }\n\
         \x20 - { kind: flap, dependency: db, duration: 8s }\n\
         \x20 - { kind: wedge, duration: 12s }\n\
         \x20 - { kind: crash }\n",
    );
    let (output, report) = drill(&file, true);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(report["with_agent"] == true, "{report:#}");

    // The agent checks the database itself: the instance whose path is cut leaves rotation
    // within the readiness window and comes back.
    let cut = row(&report, "refuse-db-one");
    assert!(all_met(cut), "{cut:#}\n{stderr}");
    assert!(cut["out_of_rotation_at_s"].as_f64().is_some(), "{cut:#}");
    assert!(
        cut["detected_by"]
            .as_str()
            .is_some_and(|by| by.starts_with("readiness of instance 1")),
        "{cut:#}"
    );

    // The database down for everyone restarts nothing: liveness checks only the process.
    let outage = row(&report, "refuse-db");
    assert_eq!(number(outage, "restarts"), 0, "{outage:#}");
    assert!(all_met(outage), "{outage:#}");
    // Every instance out of rotation within the readiness window (the agent's check fails
    // within a poll, then three probes 2 s apart): the balancer answers, fast.
    assert!(
        number(&outage["failed"], "refused_by_balancer") > 0,
        "{outage:#}"
    );

    let slow = row(&report, "slow-db");
    assert!(all_met(slow), "{slow:#}");

    // Hysteresis: a database flapping every second moves readiness at most out and in once.
    let flap = row(&report, "flap-db");
    assert!(all_met(flap), "{flap:#}");

    // The agent's liveness is the app answering at all: a frozen app is restarted.
    let wedge = row(&report, "wedge");
    assert!(all_met(wedge), "{wedge:#}");
    assert_eq!(number(wedge, "liveness_kills"), 1, "{wedge:#}");

    let crash = row(&report, "crash");
    assert!(all_met(crash), "{crash:#}");
    assert_eq!(number(crash, "exits"), 1, "{crash:#}");
    assert_eq!(output.status.code(), Some(0), "{report:#}\n{stderr}");
}

#[test]
fn under_load_mlflow_as_shipped_is_drilled_and_its_misses_diagnosed() {
    if !available("mlflow-3.17.2") {
        return;
    }
    let file = ShortForm::new(
        "mlflow.yaml",
        "shipped",
        MLFLOW_SHORT,
        "  - { kind: busy, duration: 4s }\n\
         \x20 - { kind: refuse, dependency: db, scope: one, duration: 10s }\n\
         \x20 - { kind: blackhole, dependency: db, duration: 10s, recover: 90s }\n\
         \x20 - { kind: wedge, duration: 10s, recover: 90s }\n",
    );
    let (output, report) = drill(&file, false);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{report:#}\n{stderr}");

    let busy = row(&report, "busy");
    assert_eq!(number(busy, "restarts"), 0, "{busy:#}");
    assert!(number(busy, "requests") > 20, "{busy:#}");

    // /health checks nothing: one instance's cut path leaves it in rotation.
    let cut = row(&report, "refuse-db-one");
    assert!(!met(cut, "out of rotation"), "{cut:#}");
    assert!(number(&cut["failed"], "total") > 0, "{cut:#}");
    assert_eq!(mistakes(cut), ["readiness does not check `db`"], "{cut:#}");

    // Every waitress thread waits on the black-holed database, /health with them: probes time
    // out, liveness kills instances that a restart cannot help, and the drill reads it as
    // health checks waiting on the database, not as liveness checking it.
    let blackhole = row(&report, "blackhole-db");
    assert!(number(blackhole, "probe_timeouts") > 0, "{blackhole:#}");
    assert!(!met(blackhole, "probes timed out"), "{blackhole:#}");
    assert!(
        mistakes(blackhole)
            .iter()
            .any(|mistake| mistake.starts_with("health checks wait on `db`, or behind requests")),
        "{blackhole:#}"
    );
    assert!(
        !mistakes(blackhole).contains(&"liveness depends on `db`".to_owned()),
        "{blackhole:#}"
    );

    // SIGSTOP reaches waitress (a child of `mlflow server`) too: the frozen instance fails
    // liveness and is restarted.
    let wedge = row(&report, "wedge");
    assert_eq!(number(wedge, "liveness_kills"), 1, "{wedge:#}");
    assert!(met(wedge, "restarts = 1"), "{wedge:#}");
    assert!(wedge["back"] == true, "{wedge:#}");
}

#[test]
fn under_load_mlflow_behind_the_agent_waits_out_its_database_without_a_restart() {
    if !available("mlflow-3.17.2") {
        return;
    }
    let file = ShortForm::new(
        "mlflow.yaml",
        "agent",
        MLFLOW_SHORT,
        "  - { kind: blackhole, dependency: db, duration: 10s, recover: 90s }\n\
         \x20 - { kind: refuse, dependency: db, duration: 6s, recover: 60s }\n\
         \x20 - { kind: start-during-outage, dependency: db, duration: 10s, recover: 150s }\n",
    );
    let (output, report) = drill(&file, true);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(report["with_agent"] == true, "{report:#}");

    // Waiting is not wedged: with every thread stuck on the black-holed database, the agent
    // answers probes from its cache, drains the instances and restarts none.
    let blackhole = row(&report, "blackhole-db");
    assert_eq!(number(blackhole, "restarts"), 0, "{blackhole:#}\n{stderr}");
    assert_eq!(number(blackhole, "probe_timeouts"), 0, "{blackhole:#}");
    assert!(
        blackhole["out_of_rotation_at_s"].as_f64().is_some(),
        "{blackhole:#}"
    );

    let outage = row(&report, "refuse-db");
    assert_eq!(number(outage, "restarts"), 0, "{outage:#}");

    // A new instance during the outage: never in rotation while the database is away.
    let started = row(&report, "start-during-outage-db");
    assert!(met(started, "new instance out of rotation"), "{started:#}");
    assert!(started["back"] == true, "{started:#}");
}
