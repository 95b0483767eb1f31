//! `probity drill` end to end, in short forms: every drill against real checkout processes
//! behind a real HAProxy, on SQLite and on PostgreSQL, judged by the gate; teardown on Ctrl-C and
//! on SIGKILL; clear errors.

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

/// The measuring drills run one at a time: each loads the machine, and the figures of one
/// should not be another's noise. (Under cargo-nextest, which runs each test in its own
/// process, their names put them in the `load` test group, one at a time too.)
static MEASURING: std::sync::Mutex<()> = std::sync::Mutex::new(());

const POSTGRES: &str = "postgres://postgres@127.0.0.1:5432/test";

fn postgres_available() -> bool {
    let open = std::net::TcpStream::connect_timeout(
        &"127.0.0.1:5432".parse().expect("address"),
        Duration::from_secs(3),
    )
    .is_ok();
    if !open {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "PostgreSQL is not running on 127.0.0.1:5432 (scripts/setup.sh starts it)"
        );
        eprintln!("SKIPPED: PostgreSQL is not running on 127.0.0.1:5432");
    }
    open
}

fn redis_available() -> bool {
    let open = std::net::TcpStream::connect_timeout(
        &"127.0.0.1:6379".parse().expect("address"),
        Duration::from_secs(3),
    )
    .is_ok();
    if !open {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "Redis is not running on 127.0.0.1:6379 (scripts/setup.sh starts it)"
        );
        eprintln!("SKIPPED: Redis is not running on 127.0.0.1:6379");
    }
    open
}

fn rabbitmq_available() -> bool {
    let open = std::net::TcpStream::connect_timeout(
        &"127.0.0.1:5672".parse().expect("address"),
        Duration::from_secs(3),
    )
    .is_ok();
    if !open {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "RabbitMQ is not running on 127.0.0.1:5672 (scripts/setup.sh starts it)"
        );
        eprintln!("SKIPPED: RabbitMQ is not running on 127.0.0.1:5672");
    }
    open
}

/// A unique scratch file name.
fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("probity-drill-test-{}-{name}", std::process::id()))
}

/// Runs a short drill with `extra` flags, and one target no run can meet (the leak out of
/// rotation within 1 ms): when the run has the pool drill, the gate must say exactly that one
/// missed; without it, that every target was met. Returns the report and the JUnit document.
fn gated_drill(extra: &[&str], has_pool_drill: bool) -> (serde_json::Value, String) {
    let junit = scratch(&format!("{:08x}.xml", unique()));
    let _one_at_a_time = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    let output = probity()
        .args([
            "drill",
            "--instances",
            "2",
            "--pool-size",
            "2",
            "--concurrency",
            "8",
            // Timing targets are measurements, not what a loaded CI machine is judged on:
            // generous, except the one meant to miss.
            "--max-time-to-drain",
            "1ms",
            "--max-time-to-traffic",
            "20s",
            "--max-check-cost",
            "100%",
            "--json",
            "--junit",
        ])
        .arg(&junit)
        .args(extra)
        .arg("--checkout")
        .arg(checkout())
        .output()
        .expect("probity runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("bad JSON ({e}):\n{stderr}"));
    let xml = std::fs::read_to_string(&junit)
        .unwrap_or_else(|e| panic!("no JUnit file ({e}):\n{stderr}"));
    let _ = std::fs::remove_file(&junit);
    let missed: Vec<&serde_json::Value> = report["verdicts"]
        .as_array()
        .expect("verdicts")
        .iter()
        .filter(|verdict| verdict["passed"] == false)
        .collect();
    if has_pool_drill {
        assert_eq!(
            output.status.code(),
            Some(1),
            "a missed target exits 1:\n{stderr}"
        );
        assert_eq!(
            missed.len(),
            1,
            "only the impossible target misses: {missed:#?}\n{stderr}"
        );
        assert_eq!(missed[0]["drill"], "pool");
        assert_eq!(missed[0]["target"], "out of rotation ≤ 0.001s");
        assert!(
            stderr.contains("targets missed:\n  pool: out of rotation ≤ 0.001s (measured"),
            "the gate names the target:\n{stderr}"
        );
        assert_eq!(xml.matches("<failure").count(), 1, "{xml}");
    } else {
        assert!(
            output.status.success(),
            "every target met:{missed:#?}\n{stderr}"
        );
        assert_eq!(xml.matches("<failure").count(), 0, "{xml}");
    }
    assert_eq!(
        xml.matches("<testcase ").count(),
        report["verdicts"].as_array().map_or(0, Vec::len),
        "one test case per target:\n{xml}"
    );
    (report, xml)
}

fn unique() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.subsec_nanos())
}

fn seconds(value: &serde_json::Value, what: &str) -> f64 {
    value
        .as_f64()
        .unwrap_or_else(|| panic!("{what} never happened: {value}"))
}

#[test]
fn under_load_on_sqlite_busy_pool_sigterm_and_stall_meet_their_targets_and_the_gate_names_a_miss() {
    if !haproxy_available() {
        return;
    }
    let (report, _) = gated_drill(
        &[
            "--drills",
            "busy,pool,sigterm,stall",
            "--busy",
            "4s",
            "--cost-segment",
            "2s",
            "--cost-pairs",
            "1",
            "--stall",
            "8s",
            "--liveness-period",
            "1s",
        ],
        true,
    );
    assert_eq!(report["database"], "sqlite");
    assert_eq!(report["load"]["concurrency"], 8);
    assert!(report["load"]["rate"].is_null(), "closed loop");

    let busy = &report["busy"];
    for leg in [&busy["direct"], &busy["balanced"]] {
        assert!(leg["load"]["requests"].as_u64().unwrap() > 0, "{leg}");
        assert_eq!(leg["load"]["failed"], 0, "{leg}");
        assert_eq!(leg["readiness_transitions"], 0, "{leg}");
        assert!(leg["readiness_polls"].as_u64().unwrap() > 0, "{leg}");
        assert_eq!(
            leg["readiness_polls"], leg["readiness_polls_passed"],
            "{leg}"
        );
    }
    assert_eq!(busy["balanced"]["load"]["refused_by_balancer"], 0);
    let cost = &busy["check_cost"];
    assert!(
        cost["with_checks_throughput"].as_f64().unwrap() > 0.0,
        "{cost}"
    );
    assert!(
        cost["without_checks_throughput"].as_f64().unwrap() > 0.0,
        "{cost}"
    );

    let pool = &report["pool_exhaustion"];
    let unready = seconds(&pool["time_to_unready_s"], "/readyz 503");
    let out = seconds(&pool["time_out_of_rotation_s"], "out of rotation");
    // HAProxy's check and the drill's own 20 ms poll race to see the first 503.
    assert!(
        unready <= out + 0.1,
        "left rotation before failing readiness: {pool}"
    );
    assert_eq!(pool["requests_failed"], 0, "{pool}");
    assert!(pool["requests_total"].as_u64().unwrap() > 0);
    assert_eq!(pool["restarts"], 0, "a pool leak must not restart anything");

    let sigterm = &report["sigterm"];
    let out = seconds(&sigterm["time_out_of_rotation_s"], "out of rotation");
    let exited = seconds(&sigterm["time_to_exit_s"], "exit");
    assert!(
        out < exited,
        "drained before its listener closed: {sigterm}"
    );
    assert_eq!(sigterm["requests_failed"], 0, "{sigterm}");
    assert_eq!(sigterm["restarts"], 0, "{sigterm}");

    let stall = &report["stall"];
    let failed = seconds(&stall["time_to_liveness_failure_s"], "liveness failure");
    let restarted = seconds(&stall["time_to_restart_s"], "restart");
    let back = seconds(&stall["time_back_in_rotation_s"], "back in rotation");
    assert!(failed <= restarted && restarted <= back, "{stall}");
    assert_eq!(
        stall["restarts"], 1,
        "exactly the stalled instance restarts"
    );
    assert!(report["database_outage"].is_null());
}

#[test]
fn under_load_on_postgres_busy_flap_outage_slow_boot_and_rollout_during_outage_meet_their_targets()
{
    if !haproxy_available() || !postgres_available() {
        return;
    }
    let (report, _) = gated_drill(
        &[
            "--database-url",
            POSTGRES,
            "--drills",
            "busy,flap,outage,slow-boot,rollout-during-outage",
            "--busy",
            "4s",
            "--cost-segment",
            "0s",
            "--flap",
            "6s",
            "--outage",
            "5s",
            "--boot-delay",
            "4s",
            "--liveness-period",
            "1s",
            // An 8 s startup budget: the rollout's outage lasts 12 s past the new start.
            "--startup-failure-threshold",
            "8",
            // The full drill holds 2 s; a short run on a loaded CI machine gets room.
            "--max-time-to-ready",
            "10s",
        ],
        false,
    );
    assert_eq!(report["database"], "postgres");
    let busy = &report["busy"];
    assert!(busy["check_cost"].is_null(), "--cost-segment 0s skips it");
    for leg in [&busy["direct"], &busy["balanced"]] {
        assert_eq!(leg["load"]["failed"], 0, "{leg}");
        assert_eq!(leg["readiness_transitions"], 0, "{leg}");
    }

    let flap = &report["flap"];
    assert_eq!(flap["cycles"], 3, "{flap}");
    let bound = flap["transitions_bound"].as_u64().unwrap();
    assert!(bound >= 1, "{flap}");
    for instance in flap["instances"].as_array().unwrap() {
        assert!(
            instance["readiness_transitions"].as_u64().unwrap() <= bound,
            "{flap}"
        );
    }
    assert!(!flap["bound_reason"].as_str().unwrap().is_empty());
    assert_eq!(flap["restarts"], 0, "{flap}");

    let outage = &report["database_outage"];
    assert_eq!(
        outage["restarts"], 0,
        "an outage restarts nothing: {outage}"
    );
    seconds(&outage["time_to_all_drained_s"], "every instance drained");
    seconds(
        &outage["time_to_traffic_after_recovery_s"],
        "traffic after recovery",
    );

    let boot = &report["slow_boot"];
    assert_eq!(boot["restarts"], 0, "{boot}");
    assert!(
        boot["startup_probe_failures"].as_u64().unwrap() >= 3,
        "the boot outlived the liveness window: {boot}"
    );
    seconds(&boot["time_to_started_s"], "started");

    let rollout = &report["rollout_during_outage"];
    assert_eq!(
        rollout["restarts"], 0,
        "a rollout during an outage restarts nothing: {rollout}"
    );
    assert_eq!(rollout["startup_budget_s"], 8.0, "{rollout}");
    let started = seconds(&rollout["time_to_started_s"], "new instance started");
    assert!(
        started < 8.0,
        "started within its budget, database still away: {rollout}"
    );
    assert!(
        rollout["outage_s"].as_f64().unwrap() > 8.0,
        "the outage outlasted the startup budget: {rollout}"
    );
    assert_eq!(rollout["kept_out_of_rotation"], true, "{rollout}");
    seconds(
        &rollout["time_to_new_instance_ready_s"],
        "new instance ready",
    );
    seconds(
        &rollout["time_to_new_instance_in_rotation_s"],
        "new instance in rotation",
    );
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
            "--concurrency",
            "2",
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

    // The cache turns a shared outage into a degradation: the drills that measure draining
    // cannot share its fleet.
    let output = probity()
        .args([
            "drill",
            "--drills",
            "outage,degraded",
            "--redis-url",
            "redis://127.0.0.1:6379",
        ])
        .arg("--checkout")
        .arg(checkout())
        .output()
        .expect("probity runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("the `outage` drill measures the fleet draining during a database outage"),
        "{stderr}"
    );
    let output = probity()
        .args([
            "drill",
            "--drills",
            "degraded",
            "--redis-url",
            "http://:hunter2@cache",
        ])
        .output()
        .expect("probity runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--redis-url `"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");

    let output = probity()
        .args(["drill", "--max-check-cost", "120%"])
        .output()
        .expect("probity runs");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("`120%` is not a share"));

    // A drill that cannot run still leaves a JUnit document for CI, with the error in it.
    let junit = scratch("error.xml");
    let output = probity()
        .args(["drill", "--haproxy", "/nonexistent/haproxy", "--junit"])
        .arg(&junit)
        .arg("--checkout")
        .arg(checkout())
        .output()
        .expect("probity runs");
    assert_eq!(output.status.code(), Some(2));
    let xml = std::fs::read_to_string(&junit).expect("a JUnit document");
    let _ = std::fs::remove_file(&junit);
    assert!(
        xml.contains(r#"<error message="HAProxy not found at `/nonexistent/haproxy`"#),
        "{xml}"
    );
}

#[test]
fn under_load_on_postgres_with_the_cache_a_database_outage_degrades_cached_reads_sheds_writes_and_restarts_nothing()
 {
    if !haproxy_available() || !postgres_available() || !redis_available() {
        return;
    }
    let (report, _) = gated_drill(
        &[
            "--database-url",
            POSTGRES,
            "--redis-url",
            "redis://127.0.0.1:6379",
            "--drills",
            "degraded",
            "--outage",
            "8s",
            "--cached-orders",
            "60",
            // The full drill holds 2 s; a short run on a loaded CI machine gets room.
            "--max-time-to-fresh",
            "6s",
        ],
        false,
    );
    let degraded = &report["degraded"];
    assert_eq!(degraded["restarts"], 0, "{degraded}");
    assert_eq!(degraded["cached_orders"], 60, "{degraded}");
    assert!(degraded["reads"].as_u64().unwrap() > 0, "{degraded}");
    assert!(
        degraded["reads_served_share"].as_f64().unwrap() >= 0.99,
        "{degraded}"
    );
    assert!(
        degraded["reads_stale"].as_u64().unwrap() > 0,
        "cached orders served marked stale: {degraded}"
    );
    assert!(
        degraded["writes_shed"].as_u64().unwrap() > 0,
        "writes shed: {degraded}"
    );
    // A shared outage drains no instance, not even for a moment: requests that find their pool
    // stranded by the cut cannot say whose fault it is, so only a poll marks a fault local.
    assert_eq!(degraded["fewest_in_rotation"], 2, "{degraded}");
    seconds(&degraded["time_to_degraded_s"], "degraded");
    seconds(&degraded["time_to_fresh_s"], "fresh again");
}

#[test]
fn under_load_a_wedged_relay_restarts_its_instance_a_broker_outage_restarts_nothing_and_the_broker_gets_every_order_once()
 {
    if !haproxy_available() || !rabbitmq_available() {
        return;
    }
    let (report, _) = gated_drill(
        &[
            "--amqp-url",
            "amqp://guest:guest@127.0.0.1:5672/%2f",
            "--drills",
            "worker-wedge,broker-outage",
            "--worker-bound",
            "2s",
            // Five times the bound: a heartbeat that did not excuse the waits would fail.
            "--broker-outage",
            "10s",
            "--liveness-period",
            "1s",
        ],
        false,
    );
    let wedge = &report["worker_wedge"];
    let failed = seconds(&wedge["time_to_liveness_failure_s"], "liveness failure");
    let restarted = seconds(&wedge["time_to_restart_s"], "restart");
    seconds(&wedge["time_back_in_rotation_s"], "back in rotation");
    assert!(
        failed >= 1.0 && failed <= restarted,
        "liveness failed after the bound, before the restart: {wedge}"
    );
    assert_eq!(wedge["restarts"], 1, "exactly the wedged instance: {wedge}");
    assert!(wedge["orders"].as_u64().unwrap() > 0, "{wedge}");
    assert_eq!(wedge["orders"], wedge["published"], "{wedge}");
    assert_eq!(wedge["lost"], 0, "{wedge}");
    assert_eq!(wedge["duplicated"], 0, "{wedge}");
    assert_eq!(wedge["unpublished"], 0, "{wedge}");

    let outage = &report["broker_outage"];
    assert_eq!(
        outage["restarts"], 0,
        "a broker outage restarts nothing: {outage}"
    );
    assert_eq!(outage["liveness_failures"], 0, "{outage}");
    assert!(
        outage["requests_served"].as_u64().unwrap() > 0,
        "orders taken meanwhile: {outage}"
    );
    seconds(&outage["time_to_drained_s"], "outboxes drained");
    assert!(outage["orders"].as_u64().unwrap() > 0, "{outage}");
    assert_eq!(outage["orders"], outage["published"], "{outage}");
    assert_eq!(outage["lost"], 0, "{outage}");
    // At least once: the publish in flight when the broker went away may arrive twice.
    assert!(
        outage["duplicated"].as_u64().unwrap() <= report["instances"].as_u64().unwrap(),
        "at most one in flight per relay: {outage}"
    );
}
