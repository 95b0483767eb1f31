//! `probity simulate`, run as a binary.

use std::path::PathBuf;
use std::process::Command;

fn scenario(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(name)
}

fn probity(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_probity"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn json_output_is_byte_identical_for_the_same_seed() {
    let file = scenario("pool-leak-after.yaml");
    let file = file.to_str().unwrap();
    let one = probity(&["simulate", file, "--json", "--seed", "3"]);
    let two = probity(&["simulate", file, "--json", "--seed", "3"]);
    assert!(one.status.success());
    assert_eq!(one.stdout, two.stdout);
    let json: serde_json::Value = serde_json::from_slice(&one.stdout).unwrap();
    for key in [
        "name",
        "fleet_error_rate",
        "requests_failed",
        "restarts",
        "time_to_drain_s",
        "time_to_recover_s",
        "outage_s",
        "probe_rps",
        "dependency_check_qps",
    ] {
        assert!(json[0].get(key).is_some(), "missing {key}");
    }
}

#[test]
fn compare_prints_both_scenarios_side_by_side() {
    let before = scenario("pool-leak-before.yaml");
    let after = scenario("pool-leak-after.yaml");
    let out = probity(&[
        "simulate",
        "--compare",
        before.to_str().unwrap(),
        after.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("pool-leak-before") && text.contains("pool-leak-after"));
    assert!(text.contains("time to drain") && text.contains("never"));
    // What a reader acts on comes first.
    assert!(
        text.lines().nth(1).unwrap().starts_with("requests failed"),
        "{text}"
    );
    // Both error rates over the same window: the fix no longer reads as a regression.
    let json = probity(&[
        "simulate",
        "--json",
        "--compare",
        before.to_str().unwrap(),
        after.to_str().unwrap(),
    ]);
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let before_rate = json["error_rate"]["before"].as_f64().unwrap();
    let after_rate = json["error_rate"]["after"].as_f64().unwrap();
    assert!(
        after_rate < before_rate / 10.0,
        "{before_rate} vs {after_rate}"
    );
    assert_eq!(json["after"]["drain"], "drained");
    assert_eq!(json["before"]["drain"], "never-drained");
}

#[test]
fn a_bad_scenario_exits_2_naming_file_and_field() {
    let dir = std::env::temp_dir().join(format!("probity-cli-sim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.yaml");
    std::fs::write(&bad, "name: x\nduration: 1m\nfleet: { replicas: 0 }\n").unwrap();
    let out = probity(&["simulate", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("bad.yaml") && err.contains("fleet.replicas"),
        "{err}"
    );
    let chart = dir.join("chart.svg");
    let ok = probity(&[
        "simulate",
        scenario("deadlock.yaml").to_str().unwrap(),
        "--chart",
        chart.to_str().unwrap(),
    ]);
    assert!(ok.status.success());
    assert!(std::fs::read_to_string(&chart).unwrap().starts_with("<svg"));
    std::fs::remove_dir_all(&dir).ok();
}

/// A scenario that takes seconds to run however fast the machine (the bar waits a second
/// before it shows): a large fleet for thirty simulated minutes.
fn slow_scenario(dir: &std::path::Path) -> PathBuf {
    let path = dir.join("slow.yaml");
    std::fs::write(
        &path,
        r#"
name: slow
duration: 30m
fleet: { replicas: 10000 }
dependencies: { db: {} }
app:
  endpoints:
    /livez: { checks: [] }
    /readyz: { mode: cached, checks: [db] }
container:
  livenessProbe:  { httpGet: { path: /livez, port: 8080 }, periodSeconds: 10 }
  readinessProbe: { httpGet: { path: /readyz, port: 8080 }, periodSeconds: 5 }
faults:
  - { kind: dependency-outage, dependency: db, at: 5m, duration: 1m }
"#,
    )
    .unwrap();
    path
}

fn find_script() -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join("script"))
        .find(|candidate| candidate.is_file())
}

#[test]
fn progress_shows_on_a_terminal_only_and_never_with_json() {
    let dir = std::env::temp_dir().join(format!("probity-cli-progress-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let slow = slow_scenario(&dir);
    let slow = slow.to_str().unwrap();
    // Not a terminal: nothing on stderr.
    let piped = probity(&["simulate", slow]);
    assert!(piped.status.success());
    assert!(
        piped.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&piped.stderr)
    );
    let Some(script) = find_script() else {
        if std::env::var("CI").is_ok_and(|value| value == "true") {
            panic!("`script` (util-linux) is needed to give the command a terminal");
        }
        eprintln!("!!! SKIPPED: no `script` to run the command on a terminal");
        return;
    };
    // On a terminal (script(1) gives it one), a run longer than `PROBITY_PROGRESS_AFTER`
    // (0 here: how long a run takes depends on the machine) shows a bar.
    let on_terminal = |extra: &str| {
        let log = dir.join("tty.log");
        let command = format!("{} simulate {slow} {extra}", env!("CARGO_BIN_EXE_probity"));
        let status = Command::new(&script)
            .args(["-qec", &command])
            .arg(&log)
            .env("PROBITY_PROGRESS_AFTER", "0s")
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        String::from_utf8_lossy(&std::fs::read(&log).unwrap()).into_owned()
    };
    let shown = on_terminal("");
    assert!(shown.contains("s simulated"), "no progress bar in: {shown}");
    let json = on_terminal("--json");
    assert!(
        !json.contains("s simulated"),
        "a progress bar with --json: {json}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

fn scratch(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("probity-cli-sim-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A copy of a shipped scenario with `edit` applied to its text.
fn edited(dir: &std::path::Path, from: &str, to: &str, edit: impl Fn(String) -> String) -> PathBuf {
    let text = std::fs::read_to_string(scenario(from)).unwrap();
    let path = dir.join(to);
    std::fs::write(&path, edit(text)).unwrap();
    path
}

#[test]
fn a_name_from_a_scenario_is_printed_with_control_characters_written_out() {
    let dir = scratch("escapes");
    let hostile = edited(&dir, "overload-on-drain.yaml", "hostile.yaml", |text| {
        text.replacen(
            "name: overload-on-drain",
            r#"name: "web\e]0;PWNED\a\e[2J<script>alert(1)</script>""#,
            1,
        )
    });
    let chart = dir.join("chart.html");
    let output = Command::new(env!("CARGO_BIN_EXE_probity"))
        .arg("simulate")
        .arg(&hostile)
        .arg("--chart")
        .arg(&chart)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        !stdout.contains('\u{1b}') && !stdout.contains('\u{7}'),
        "{stdout:?}"
    );
    assert!(stdout.contains(r"web\u{1b}]0;PWNED"), "{stdout}");
    let html = std::fs::read_to_string(&chart).unwrap();
    assert!(!html.contains("<script>"), "markup escaped");
    assert!(
        !html.contains('\u{1b}') && !html.contains('\u{7}'),
        "control characters escaped"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn compare_refuses_scenarios_of_different_length_resolution_or_fleet() {
    let dir = scratch("unlike");
    let before = edited(&dir, "overload-on-drain.yaml", "before.yaml", |text| text);
    type Edit = fn(String) -> String;
    let edits: [(&str, Edit, &str); 3] = [
        (
            "longer.yaml",
            |text| text.replacen("duration: 3m", "duration: 6m", 1),
            "duration 3m and 6m",
        ),
        (
            "finer.yaml",
            |text| format!("{text}\nmeasure: {{ resolution: 7s }}\n"),
            "measure.resolution",
        ),
        (
            "bigger.yaml",
            |text| text.replacen("replicas: 3", "replicas: 4", 1),
            "fleet.replicas 3 and 4",
        ),
    ];
    for (name, edit, says) in edits {
        let after = edited(&dir, "overload-on-drain.yaml", name, edit);
        for json in [false, true] {
            let mut command = Command::new(env!("CARGO_BIN_EXE_probity"));
            command
                .arg("simulate")
                .arg("--compare")
                .arg(&before)
                .arg(&after);
            if json {
                command.arg("--json");
            }
            let output = command.output().unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(2), "{name}: {stderr}");
            assert!(
                output.stdout.is_empty(),
                "{name}: nothing printed as a result"
            );
            assert!(stderr.contains(says), "{name}: {stderr}");
            assert!(stderr.contains("not comparable"), "{name}: {stderr}");
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_chart_is_never_written_over_a_scenario() {
    let dir = scratch("output");
    let file = edited(&dir, "overload-on-drain.yaml", "s.yaml", |text| text);
    let link = dir.join("link.yaml");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    let hard = dir.join("hard.yaml");
    std::fs::hard_link(&file, &hard).unwrap();
    let before = std::fs::read(&file).unwrap();
    for output in [&file, &link, &hard] {
        let result = Command::new(env!("CARGO_BIN_EXE_probity"))
            .arg("simulate")
            .arg(&file)
            .arg("--chart")
            .arg(output)
            .output()
            .unwrap();
        assert_eq!(result.status.code(), Some(2), "{}", output.display());
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert!(stderr.contains("an input of this run"), "{stderr}");
    }
    assert_eq!(std::fs::read(&file).unwrap(), before, "untouched");
    let _ = std::fs::remove_dir_all(dir);
}
