//! `probity drill --file` end to end: checkout's own drill file in short form against real
//! checkout processes on the PostgreSQL here behind a real HAProxy; the same service miswired,
//! diagnosed; `probity drill init` and `--check`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

fn probity() -> Command {
    Command::new(env!("CARGO_BIN_EXE_probity"))
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The folder of the checkout binary (cargo builds every workspace binary before tests; built
/// on demand when a single package is tested).
fn checkout_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_BIN_EXE_probity"))
        .parent()
        .expect("binary folder")
        .to_owned();
    if !dir.join("checkout").is_file() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "-p", "checkout"])
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building checkout failed");
    }
    dir
}

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

fn services_available() -> bool {
    let haproxy = Command::new("haproxy")
        .arg("-v")
        .output()
        .is_ok_and(|output| output.status.success());
    let postgres = std::net::TcpStream::connect_timeout(
        &"127.0.0.1:5432".parse().expect("address"),
        Duration::from_secs(3),
    )
    .is_ok();
    needs("haproxy", haproxy) && needs("PostgreSQL on 127.0.0.1:5432", postgres)
}

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("probity-drill-file-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

/// checkout's drill file with its faults replaced by `faults` (YAML list items) and its pod
/// changed by `edit`, written beside a copy of nothing else: the file needs no other file.
fn checkout_file(dir: &Path, faults: &str, edit: impl Fn(String) -> String) -> PathBuf {
    let text = std::fs::read_to_string(repository().join("examples/checkout/drill.yaml"))
        .expect("checkout's drill file");
    let head = &text[..text.find("\nfaults:").expect("a faults section")];
    let text = format!("{}\nfaults:\n{faults}", edit(head.to_owned()));
    let path = dir.join("drill.yaml");
    std::fs::write(&path, text).expect("write");
    path
}

fn drill(file: &Path) -> (Output, serde_json::Value) {
    let path = format!(
        "{}:{}",
        checkout_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = probity()
        .args(["drill", "--json", "--file"])
        .arg(file)
        .env("PATH", path)
        .output()
        .expect("probity runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|error| {
        panic!(
            "no JSON report ({error}); stderr:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output, report)
}

fn row<'a>(report: &'a serde_json::Value, fault: &str) -> &'a serde_json::Value {
    report["faults"]
        .as_array()
        .expect("faults")
        .iter()
        .find(|row| row["fault"] == fault)
        .unwrap_or_else(|| panic!("no row {fault} in {report:#}"))
}

fn all_met(row: &serde_json::Value) -> bool {
    row["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .all(|check| check["met"] == true)
}

#[test]
fn under_load_checkout_s_drill_file_in_short_form_meets_every_target() {
    if !services_available() {
        return;
    }
    let dir = scratch("checkout");
    let file = checkout_file(
        &dir,
        "  - { kind: busy, duration: 5s }\n\
         \x20 - { name: pool, kind: hook, hook: leak-connections, duration: 5s, targets: { failed_requests: 0 } }\n\
         \x20 - { name: db-cut-one, kind: refuse, dependency: db, scope: one, duration: 6s }\n\
         \x20 - { name: outage, kind: refuse, dependency: db, duration: 8s }\n\
         \x20 - { kind: terminate }\n\
         \x20 - { kind: wedge, duration: 10s }\n\
         \x20 - { kind: crash }\n",
        |head| head.replace("concurrency: 32", "concurrency: 8"),
    );
    let (output, report) = drill(&file);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{report:#}\n{stderr}");
    for fault in [
        "busy",
        "pool",
        "db-cut-one",
        "outage",
        "terminate",
        "wedge",
        "crash",
    ] {
        assert!(all_met(row(&report, fault)), "{fault}: {report:#}");
    }
    // The figures the table is made of, measured.
    let busy = row(&report, "busy");
    assert!(busy["requests"].as_u64().unwrap() > 100, "{busy:#}");
    assert_eq!(busy["failed"]["total"], 0);
    let cut = row(&report, "db-cut-one");
    assert!(cut["out_of_rotation_at_s"].as_f64().is_some(), "{cut:#}");
    assert!(
        cut["detected_by"]
            .as_str()
            .unwrap()
            .contains("readiness of instance 1"),
        "{cut:#}"
    );
    let outage = row(&report, "outage");
    assert_eq!(outage["restarts"], 0, "{outage:#}");
    assert!(
        outage["failed"]["refused_by_balancer"].as_u64().unwrap() > 0,
        "{outage:#}"
    );
    let wedge = row(&report, "wedge");
    assert_eq!(wedge["liveness_kills"], 1, "{wedge:#}");
    let crash = row(&report, "crash");
    assert_eq!(crash["exits"], 1, "{crash:#}");
    assert_eq!(crash["restarts"], 1, "{crash:#}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn under_load_a_miswired_checkout_is_diagnosed() {
    if !services_available() {
        return;
    }
    let dir = scratch("miswired");
    // The wiring of the database-in-liveness incident: liveness on the endpoint that checks
    // the database. And kubernetes mode, readiness through the endpoints.
    let file = checkout_file(
        &dir,
        "  - { name: outage, kind: refuse, dependency: db, duration: 12s }\n",
        |head| {
            head.replace(
                "httpGet: { path: /livez, port: http }",
                "httpGet: { path: /readyz, port: http }",
            )
            .replace(
                "periodSeconds: 2\n        timeoutSeconds: 1\n        failureThreshold: 3",
                "periodSeconds: 1\n        timeoutSeconds: 1\n        failureThreshold: 2",
            )
            .replace(
                "  mode: haproxy\n  check: { inter: 250ms, rise: 2, fall: 1, timeout: 500ms }",
                "  mode: kubernetes\n  propagation: 500ms",
            )
        },
    );
    let (output, report) = drill(&file);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{report:#}\n{stderr}");
    let outage = row(&report, "outage");
    assert!(
        outage["liveness_kills"].as_u64().unwrap() >= 1,
        "{outage:#}"
    );
    let diagnoses = outage["diagnoses"].as_array().expect("diagnoses");
    let liveness = diagnoses
        .iter()
        .find(|d| d["mistake"] == "liveness depends on `db`")
        .unwrap_or_else(|| panic!("no liveness diagnosis: {outage:#}"));
    assert!(
        liveness["caught_by"]
            .as_str()
            .unwrap()
            .contains("liveness-checks-dependencies"),
        "{liveness:#}"
    );
    assert!(stderr.contains("missed: outage: restarts = 0"), "{stderr}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn init_writes_a_starting_file_that_check_accepts() {
    let dir = scratch("init");
    let manifest = repository().join("deploy/kubernetes/deployment.yaml");
    let out = dir.join("drill.yaml");
    let output = probity()
        .args(["drill", "init", "--container", "checkout", "--manifest"])
        .arg(&manifest)
        .arg("--output")
        .arg(&out)
        .output()
        .expect("probity runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(&out).expect("written");
    assert!(text.contains("# GUESS:"), "{text}");
    // The manifest is named from where the drill file is.
    assert!(text.contains("deploy/kubernetes/deployment.yaml"), "{text}");
    let check = probity()
        .args(["drill", "--check", "--file"])
        .arg(&out)
        .output()
        .expect("probity runs");
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(String::from_utf8_lossy(&check.stdout).contains("Deployment/checkout"));
    // Never over an existing file.
    let again = probity()
        .args(["drill", "init", "--container", "checkout", "--manifest"])
        .arg(&manifest)
        .arg("--output")
        .arg(&out)
        .output()
        .expect("probity runs");
    assert_eq!(again.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_bad_drill_file_is_an_error_naming_the_key_and_line() {
    let dir = scratch("bad");
    let file = checkout_file(&dir, "  - { kind: busy }\n", |head| {
        head.replace("  port: 8080\n", "  port: 8080\n  prot: 8082\n")
    });
    let output = probity()
        .args(["drill", "--check", "--file"])
        .arg(&file)
        .output()
        .expect("probity runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .position(|line| line.contains("prot:"))
        .unwrap()
        + 1;
    assert!(
        stderr.contains(&format!("drill.yaml:{line}: unknown field `prot`")),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_report_is_never_written_over_an_input_file() {
    let dir = scratch("output");
    let file = checkout_file(&dir, "  - { kind: busy }\n", |head| head);
    let link = dir.join("link.yaml");
    std::os::unix::fs::symlink(&file, &link).expect("symlink");
    let hard = dir.join("hard.yaml");
    std::fs::hard_link(&file, &hard).expect("hard link");
    let before = std::fs::read(&file).expect("read");
    for output in [&file, &link, &hard] {
        let result = probity()
            .args(["drill", "--check", "--file"])
            .arg(&file)
            .arg("--junit")
            .arg(output)
            .output()
            .expect("probity runs");
        assert_eq!(result.status.code(), Some(2), "{}", output.display());
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert!(
            stderr.contains("an input of this run; write the report elsewhere"),
            "{stderr}"
        );
    }
    assert_eq!(std::fs::read(&file).expect("read"), before, "untouched");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn names_from_the_drill_file_are_printed_with_control_characters_written_out() {
    let dir = scratch("escapes");
    let file = checkout_file(
        &dir,
        "  - { kind: busy, name: \"busy\\e]0;PWNED\\a\\e[2J\" }\n",
        |head| head,
    );
    let output = probity()
        .args(["drill", "--check", "--file"])
        .arg(&file)
        .output()
        .expect("probity runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(
        !stdout.contains('\u{1b}') && !stdout.contains('\u{7}'),
        "{stdout:?}"
    );
    assert!(stdout.contains("busy\\u{1b}]0;PWNED\\u{7}"), "{stdout}");
    // In an error too: the unknown fault's name is quoted back.
    let output = probity()
        .args(["drill", "--check", "--faults", "x\u{1b}[2Jy", "--file"])
        .arg(&file)
        .output()
        .expect("probity runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
    assert!(stderr.contains("x\\u{1b}[2Jy"), "{stderr}");
    let _ = std::fs::remove_dir_all(dir);
}
