//! `probity drill` end to end: checkout's own drill files in short form against real checkout
//! processes on the PostgreSQL, Redis and RabbitMQ here behind a real HAProxy, every fault of
//! the shipped files; the same service miswired, diagnosed; Ctrl-C and SIGKILL of the drill
//! leave no process behind; errors before the fleet starts; `probity drill init` and `--check`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

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

fn listening(address: &str) -> bool {
    std::net::TcpStream::connect_timeout(&address.parse().expect("address"), Duration::from_secs(3))
        .is_ok()
}

fn haproxy_available() -> bool {
    let haproxy = Command::new("haproxy")
        .arg("-v")
        .output()
        .is_ok_and(|output| output.status.success());
    needs("haproxy", haproxy)
}

fn services_available() -> bool {
    haproxy_available() && needs("PostgreSQL on 127.0.0.1:5432", listening("127.0.0.1:5432"))
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
    shipped_file("drill.yaml", dir, faults, edit)
}

/// `examples/checkout/{name}`, its faults replaced and its head edited, as `checkout_file`.
fn shipped_file(name: &str, dir: &Path, faults: &str, edit: impl Fn(String) -> String) -> PathBuf {
    let text = std::fs::read_to_string(repository().join("examples/checkout").join(name))
        .expect("checkout's drill file");
    let head = &text[..text.find("\nfaults:").expect("a faults section")];
    let text = format!("{}\nfaults:\n{faults}", edit(head.to_owned()));
    let path = dir.join("drill.yaml");
    std::fs::write(&path, text).expect("write");
    path
}

/// `PATH` with the checkout binary's folder first, as the drill files name it `checkout`.
fn path_with_checkout() -> String {
    format!(
        "{}:{}",
        checkout_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn drill(file: &Path) -> (Output, serde_json::Value) {
    let path = path_with_checkout();
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

#[test]
fn under_load_checkout_s_flap_stall_slow_boot_and_rollout_during_outage_meet_their_targets() {
    if !services_available() {
        return;
    }
    let dir = scratch("slow");
    // The shipped file's faults, shortened: a startup budget of 12 s (the boot below takes
    // 7 s, longer than the 6 s liveness window) and an outage of 20 s, longer than that budget.
    // The stall keeps the file's 15 s: the restart and the new process's rise fit inside it,
    // and "back in rotation" is judged from the fault's end.
    let file = checkout_file(
        &dir,
        "  - { name: flap, kind: flap, dependency: db, duration: 6s, up: 1s, down: 1s }\n\
         \x20 - { name: stall, kind: hook, hook: stall, duration: 15s, targets: { restarts: 1 } }\n\
         \x20 - { name: slow-boot, kind: terminate, app: { args: [--boot-delay=7s] }, targets: { started_within: 20s } }\n\
         \x20 - { name: rollout-during-outage, kind: start-during-outage, dependency: db, duration: 20s }\n",
        |head| {
            head.replace("concurrency: 32", "concurrency: 8").replace(
                "periodSeconds: 1\n        timeoutSeconds: 1\n        failureThreshold: 30",
                "periodSeconds: 1\n        timeoutSeconds: 1\n        failureThreshold: 12",
            )
        },
    );
    let (output, report) = drill(&file);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{report:#}\n{stderr}");
    for fault in ["flap", "stall", "slow-boot", "rollout-during-outage"] {
        assert!(all_met(row(&report, fault)), "{fault}: {report:#}");
    }
    let flap = row(&report, "flap");
    assert_eq!(
        flap["restarts"], 0,
        "a flapping database restarts nothing: {flap:#}"
    );
    let stall = row(&report, "stall");
    assert_eq!(stall["liveness_kills"], 1, "{stall:#}");
    let slow = row(&report, "slow-boot");
    assert_eq!(
        slow["startup_kills"], 0,
        "the startup probe covers the boot: {slow:#}"
    );
    assert_eq!(slow["liveness_kills"], 0, "{slow:#}");
    let rollout = row(&report, "rollout-during-outage");
    assert_eq!(rollout["restarts"], 0, "no crash loop: {rollout:#}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn under_load_with_the_cache_a_database_outage_degrades_cached_reads_and_restarts_nothing() {
    if !services_available() || !needs("Redis on 127.0.0.1:6379", listening("127.0.0.1:6379")) {
        return;
    }
    let dir = scratch("degraded");
    let file = shipped_file(
        "drill-degraded.yaml",
        &dir,
        // The full drill holds fresh reads within 2 s; a short run on a loaded machine gets room.
        "  - { name: degraded, kind: refuse, dependency: db, duration: 8s, targets: \
         { restarts: 0, stays_in_rotation: true, served: { read: 99% }, unmarked_within: 6s } }\n",
        |head| head.replace("concurrency: 64", "concurrency: 16"),
    );
    let (output, report) = drill(&file);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{report:#}\n{stderr}");
    let degraded = row(&report, "degraded");
    assert!(all_met(degraded), "{degraded:#}");
    assert_eq!(degraded["restarts"], 0, "{degraded:#}");
    assert!(degraded["requests"].as_u64().unwrap() > 0, "{degraded:#}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn under_load_a_wedged_relay_restarts_its_instance_and_a_broker_outage_restarts_nothing() {
    if !haproxy_available() || !needs("RabbitMQ on 127.0.0.1:5672", listening("127.0.0.1:5672")) {
        return;
    }
    let dir = scratch("broker");
    let file = shipped_file(
        "drill-broker.yaml",
        &dir,
        // The relay's bound is 5 s: a 10 s broker outage is twice it, so a heartbeat that did
        // not excuse the waits would fail liveness.
        "  - { name: worker-wedge, kind: hook, hook: wedge-worker, duration: 20s, targets: \
         { restarts: 1, out_of_rotation_within: 11s, lost_writes: 0, duplicated_writes: 1 } }\n\
         \x20 - { name: broker-outage, kind: refuse, dependency: broker, duration: 10s, targets: \
         { liveness_failures: 0, failed_requests: 0, lost_writes: 0, duplicated_writes: 3 } }\n",
        |head| head.replace("concurrency: 32", "concurrency: 8"),
    );
    let (output, report) = drill(&file);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{report:#}\n{stderr}");
    let wedge = row(&report, "worker-wedge");
    assert!(all_met(wedge), "{wedge:#}");
    assert_eq!(
        wedge["liveness_kills"], 1,
        "exactly the wedged instance: {wedge:#}"
    );
    let outage = row(&report, "broker-outage");
    assert!(all_met(outage), "{outage:#}");
    assert_eq!(
        outage["restarts"], 0,
        "a broker outage restarts nothing: {outage:#}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// Processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let cmdline = entry.path().join("cmdline");
        if let Ok(bytes) = std::fs::read(&cmdline) {
            let text = String::from_utf8_lossy(&bytes).replace('\0', " ");
            if text.contains(needle) {
                found.push(format!("{}: {text}", entry.file_name().to_string_lossy()));
            }
        }
    }
    found
}

/// Starts a two-instance drill whose one fault (a wedge) lasts a minute; returns it once the
/// fault is on, with its work folder (which every process it started names on its command
/// line).
fn start_a_long_drill(dir: &Path) -> (Child, String) {
    let file = checkout_file(dir, "  - { kind: wedge, duration: 60s }\n", |head| {
        head.replace("instances: 3", "instances: 2")
            .replace("concurrency: 32", "concurrency: 2\n  rate: 20")
    });
    let path = path_with_checkout();
    let mut child = probity()
        .args(["drill", "--file"])
        .arg(&file)
        .env("PATH", path)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("probity runs");
    let stderr = child.stderr.take().expect("piped");
    let (lines_tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut work_dir = None;
    let mut seen = Vec::new();
    loop {
        let line = lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("drill never got going:\n{}", seen.join("\n")));
        if let Some(dir) = line.split("work folder ").nth(1) {
            work_dir = Some(dir.trim().to_owned());
        }
        let faulting = line.contains("fault 1/1");
        seen.push(line);
        if faulting {
            break;
        }
    }
    let work_dir = work_dir.expect("the drill names its work folder");
    assert!(
        processes_mentioning(&work_dir).len() >= 3,
        "expected the fleet and HAProxy to be running"
    );
    (child, work_dir)
}

/// Sends `signal` to the drill and waits for it to exit; returns its exit code.
fn signal_and_wait(child: &mut Child, signal: &str) -> Option<i32> {
    let status = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let exit_deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().expect("wait works") {
            break status.code();
        }
        assert!(
            Instant::now() < exit_deadline,
            "drill did not exit on {signal}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until no process names `work_dir` on its command line.
fn assert_no_orphans(work_dir: &str, after: &str) {
    let orphan_deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let left = processes_mentioning(work_dir);
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < orphan_deadline,
            "orphans after {after}:\n{}",
            left.join("\n")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_tears_the_whole_fleet_down() {
    if !services_available() {
        return;
    }
    let dir = scratch("ctrl-c");
    let (mut child, work_dir) = start_a_long_drill(&dir);
    assert_eq!(signal_and_wait(&mut child, "-INT"), Some(130));
    assert_no_orphans(&work_dir, "Ctrl-C");
    let _ = std::fs::remove_dir_all(&work_dir);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_killed_drill_takes_its_fleet_with_it() {
    if !services_available() {
        return;
    }
    let dir = scratch("killed");
    let (mut child, work_dir) = start_a_long_drill(&dir);
    // SIGKILL runs none of the drill's teardown: only the children's death signal is left.
    assert_eq!(signal_and_wait(&mut child, "-KILL"), None);
    assert_no_orphans(&work_dir, "SIGKILL");
    let _ = std::fs::remove_dir_all(&work_dir);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn what_stops_a_drill_before_its_fleet_starts_is_a_clear_error() {
    let dir = scratch("errors");
    let file = checkout_file(&dir, "  - { kind: busy, duration: 1s }\n", |head| head);

    // No drill file at all.
    let output = probity().args(["drill"]).output().expect("probity runs");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--file <FILE>"));

    // No HAProxy: an error, and for CI still a JUnit document with the error in it (the
    // dependencies are reached first).
    if !needs("PostgreSQL on 127.0.0.1:5432", listening("127.0.0.1:5432")) {
        return;
    }
    let junit = dir.join("error.xml");
    let output = probity()
        .args(["drill", "--haproxy", "/nonexistent/haproxy", "--junit"])
        .arg(&junit)
        .arg("--file")
        .arg(&file)
        .output()
        .expect("probity runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("HAProxy not found at `/nonexistent/haproxy`"),
        "{stderr}"
    );
    let xml = std::fs::read_to_string(&junit).expect("a JUnit document");
    assert!(
        xml.contains(r#"<error message="HAProxy not found at `/nonexistent/haproxy`"#),
        "{xml}"
    );

    // A dependency nobody answers for, named by host and port only: never its password.
    let unreachable = checkout_file(&dir, "  - { kind: busy, duration: 1s }\n", |head| {
        head.replace(
            "postgres://postgres@127.0.0.1:5432/test",
            "postgres://postgres:hunter2@127.0.0.1:1/test",
        )
    });
    let output = probity()
        .args(["drill", "--file"])
        .arg(&unreachable)
        .output()
        .expect("probity runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("dependencies.db: nothing answers at 127.0.0.1:1"),
        "{stderr}"
    );
    assert!(!stderr.contains("hunter2"), "{stderr}");

    // An app command that does not exist: said before any instance starts (each would fail to
    // start, and the fleet would wait out its whole timeout for them).
    if services_available() {
        let missing = checkout_file(&dir, "  - { kind: busy, duration: 1s }\n", |head| {
            head.replace("    - checkout\n", "    - /nonexistent/checkout\n")
        });
        let output = probity()
            .args(["drill", "--file"])
            .arg(&missing)
            .output()
            .expect("probity runs");
        assert_eq!(output.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("app.command: `/nonexistent/checkout` not found"),
            "{stderr}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}
