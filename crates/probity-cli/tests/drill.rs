//! `probity drill` end to end: a short run with the pool and stall faults against real
//! checkout processes behind a real HAProxy, teardown on Ctrl-C and on SIGKILL, and clear errors.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn probity() -> Command {
    Command::new(env!("CARGO_BIN_EXE_probity"))
}

/// The checkout binary next to `probity` (cargo builds every workspace binary before tests);
/// built on demand when a single package is tested.
fn checkout() -> PathBuf {
    let dir = Path::new(env!("CARGO_BIN_EXE_probity"))
        .parent()
        .expect("binary folder")
        .to_owned();
    let binary = dir.join("checkout");
    if !binary.is_file() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "-p", "checkout"])
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building checkout failed");
    }
    assert!(
        binary.is_file(),
        "no checkout binary at {}",
        binary.display()
    );
    binary
}

fn haproxy_available() -> bool {
    let found = Command::new("haproxy")
        .arg("-v")
        .output()
        .is_ok_and(|output| output.status.success());
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "haproxy is not installed (scripts/setup.sh installs it)"
        );
        eprintln!("SKIPPED: haproxy is not installed");
    }
    found
}

#[test]
fn a_short_drill_drains_the_leaking_instance_and_restarts_the_stalled_one() {
    if !haproxy_available() {
        return;
    }
    let output = probity()
        .args([
            "drill",
            "--instances",
            "2",
            "--drills",
            "pool,stall",
            "--stall",
            "8s",
            "--liveness-period",
            "1s",
            "--liveness-failure-threshold",
            "3",
            "--rate",
            "40",
            "--concurrency",
            "4",
            "--json",
            "--checkout",
        ])
        .arg(checkout())
        .output()
        .expect("probity runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "drill failed:\n{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("bad JSON ({e}):\n{stderr}"));

    let pool = &report["pool_exhaustion"];
    let unready = pool["time_to_unready_s"]
        .as_f64()
        .expect("readiness never failed");
    let out = pool["time_out_of_rotation_s"]
        .as_f64()
        .expect("never left rotation");
    assert!(
        unready <= out,
        "left rotation before failing readiness: {pool}"
    );
    assert_eq!(pool["restarts"], 0, "a pool leak must not restart anything");
    assert!(pool["requests_total"].as_u64().unwrap() > 0);
    assert!(pool["time_back_in_rotation_s"].as_f64().is_some(), "{pool}");

    let stall = &report["stall"];
    let failed = stall["time_to_liveness_failure_s"]
        .as_f64()
        .expect("liveness never failed during the stall");
    let restarted = stall["time_to_restart_s"]
        .as_f64()
        .expect("never restarted");
    let back = stall["time_back_in_rotation_s"]
        .as_f64()
        .expect("never back in rotation");
    assert!(failed <= restarted && restarted <= back, "{stall}");
    assert_eq!(
        stall["restarts"], 1,
        "exactly the stalled instance restarts"
    );
    assert!(report["database_outage"].is_null());
    assert_eq!(report["database"], "sqlite");
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

/// Starts a two-instance drill whose stall lasts a minute; returns it once the stall is on,
/// with its work folder (which every process it started names on its command line).
fn start_a_long_drill() -> (Child, String) {
    let mut child = probity()
        .args([
            "drill",
            "--instances",
            "2",
            "--drills",
            "stall",
            "--stall",
            "60s",
            "--rate",
            "20",
            "--checkout",
        ])
        .arg(checkout())
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
        let stalling = line.contains("stall: blocking");
        seen.push(line);
        if stalling {
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
    let exit_deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().expect("wait works") {
            break status.code();
        }
        assert!(
            Instant::now() < exit_deadline,
            "drill did not exit on {signal}"
        );
        std::thread::yield_now();
    }
}

/// Waits until no process names `work_dir` on its command line.
fn assert_no_orphans(work_dir: &str, after: &str) {
    let orphan_deadline = Instant::now() + Duration::from_secs(10);
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
        std::thread::yield_now();
    }
}

#[test]
fn ctrl_c_tears_the_whole_fleet_down() {
    if !haproxy_available() {
        return;
    }
    let (mut child, work_dir) = start_a_long_drill();
    assert_eq!(signal_and_wait(&mut child, "-INT"), Some(130));
    assert_no_orphans(&work_dir, "Ctrl-C");
}

#[test]
fn a_killed_drill_takes_its_fleet_with_it() {
    if !haproxy_available() {
        return;
    }
    let (mut child, work_dir) = start_a_long_drill();
    // SIGKILL runs none of the drill's teardown: only the children's death signal is left.
    assert_eq!(signal_and_wait(&mut child, "-KILL"), None);
    assert_no_orphans(&work_dir, "SIGKILL");
    let _ = std::fs::remove_dir_all(&work_dir);
}

#[test]
fn missing_tools_and_databases_are_clear_errors() {
    let output = probity()
        .args(["drill", "--haproxy", "/nonexistent/haproxy", "--checkout"])
        .arg(checkout())
        .output()
        .expect("probity runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("HAProxy not found at `/nonexistent/haproxy`"),
        "{stderr}"
    );

    let output = probity()
        .args(["drill", "--checkout", "/nonexistent/checkout"])
        .output()
        .expect("probity runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("checkout binary not found at /nonexistent/checkout"),
        "{stderr}"
    );

    let output = probity()
        .args([
            "drill",
            "--database-url",
            "postgres://postgres:hunter2@127.0.0.1:1/test",
            "--checkout",
        ])
        .arg(checkout())
        .output()
        .expect("probity runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("the database at 127.0.0.1:1 is unreachable"),
        "{stderr}"
    );
    assert!(!stderr.contains("hunter2"), "{stderr}");

    let output = probity()
        .args(["drill", "--drills", "pool,nope"])
        .output()
        .expect("probity runs");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown drill `nope`"));
}
