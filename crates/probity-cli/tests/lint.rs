//! `probity lint`, run as a binary: exit codes, inputs, formats, `--explain`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const CLEAN: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: clean}\nspec:\n  containers:\n  - name: app\n    image: a\n    livenessProbe:\n      httpGet: {path: /livez, port: 8080}\n    readinessProbe:\n      httpGet: {path: /readyz, port: 8080}\n      periodSeconds: 5\n      failureThreshold: 2\n";
const WARNING: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: slow}\nspec:\n  containers:\n  - name: app\n    image: a\n    livenessProbe:\n      httpGet: {path: /livez, port: 8080}\n      timeoutSeconds: 10\n";

fn probity(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_probity"))
        .args(args)
        .env_remove("NO_COLOR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    // The command may exit before reading (a bad flag): a broken pipe is not a failure here.
    let _ = input.write_all(stdin.unwrap_or("").as_bytes());
    drop(input);
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("probity-cli-lint-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &Path, name: &str, contents: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path.display().to_string()
}

#[test]
fn exits_zero_when_clean_one_on_findings_two_on_errors() {
    let dir = temp_dir("exit");
    let clean = write(&dir, "clean.yaml", CLEAN);
    let warning = write(&dir, "warning.yaml", WARNING);
    let broken = write(&dir, "broken.yaml", "kind: [\n");

    let output = probity(&["lint", &clean], None);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stdout));

    let output = probity(&["lint", &warning], None);
    assert_eq!(output.status.code(), Some(1));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains(&format!(
            "{warning}:10:23: warning[timeout-not-below-period]"
        )),
        "{stdout}"
    );
    assert!(stdout.contains("      timeoutSeconds: 10"), "{stdout}");
    assert!(
        stdout.contains("why:") && stdout.contains("fix:"),
        "{stdout}"
    );
    assert!(!stdout.contains('\x1b'), "colour on a pipe: {stdout}");

    let output = probity(&["lint", "--fail-on", "error", &warning], None);
    assert_eq!(output.status.code(), Some(0));

    // A broken document is a finding; the run goes on and exits 1.
    let output = probity(&["lint", &clean, &broken], None);
    assert_eq!(output.status.code(), Some(1));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains(&format!("{broken}:1:")) && stdout.contains("error[invalid-yaml]"),
        "{stdout}"
    );

    // Nothing could be read at all: exit 2.
    let output = probity(&["lint", &broken], None);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("no document could be read"),
        "{}",
        text(&output.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unreadable_inputs_exit_two_and_the_others_are_still_judged() {
    let dir = temp_dir("unreadable");
    let warning = write(&dir, "warning.yaml", WARNING);
    let missing = dir.join("missing.yaml").display().to_string();
    let output = probity(&["lint", &missing, "/dev/zero", &warning], None);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!("error: cannot read {missing}: ")),
        "{stderr}"
    );
    assert_eq!(stderr.matches("os error").count(), 1, "{stderr}");
    assert!(
        stderr.contains("error: cannot read /dev/zero: it is a character device"),
        "{stderr}"
    );
    assert!(
        text(&output.stdout).contains("warning[timeout-not-below-period]"),
        "the readable input is still judged"
    );

    let output = probity(&["lint", "--max-input-size", "100", &warning], None);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("larger than the input limit of 100 bytes"),
        "{}",
        text(&output.stderr)
    );

    let binary = dir.join("binary.yaml");
    std::fs::write(&binary, b"apiVersion: v1\n\x89PNG").unwrap();
    let output = probity(&["lint", &binary.display().to_string()], None);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("not UTF-8 text (byte 0x89 at byte offset 15, line 2)"),
        "{}",
        text(&output.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn counts_skipped_kinds_and_lists_them_when_verbose() {
    let input = format!(
        "{WARNING}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: settings}}\n---\napiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata: {{name: alerts}}\n"
    );
    let output = probity(&["lint", "-"], Some(&input));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("2 document(s) of other kinds skipped (ConfigMap 1, PrometheusRule 1;"),
        "{stdout}"
    );
    assert!(!stdout.contains("skipped: <stdin>"), "{stdout}");
    let output = probity(&["lint", "--verbose", "-"], Some(&input));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("skipped: <stdin>:13: ConfigMap `settings`"),
        "{stdout}"
    );
    // Listed already: the summary no longer points at `--verbose`.
    assert!(
        stdout.contains("skipped (ConfigMap 1, PrometheusRule 1)"),
        "{stdout}"
    );
}

#[test]
fn reads_standard_input_and_folders() {
    let output = probity(&["lint", "--format", "json", "-"], Some(WARNING));
    assert_eq!(output.status.code(), Some(1));
    let findings: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let finding = &findings[0];
    for field in [
        "rule",
        "severity",
        "file",
        "line",
        "column",
        "kind",
        "name",
        "container",
        "message",
    ] {
        assert!(finding.get(field).is_some(), "missing {field}: {finding}");
    }
    assert_eq!(finding["file"], "<stdin>");
    assert_eq!(finding["rule"], "timeout-not-below-period");
    assert_eq!(finding["container"], "app");

    let dir = temp_dir("folder");
    std::fs::create_dir_all(dir.join("nested")).unwrap();
    write(&dir, "a.yaml", CLEAN);
    write(&dir.join("nested"), "b.yml", WARNING);
    write(&dir, "README.md", "not yaml: [");
    let output = probity(
        &["lint", "--format", "json", &dir.display().to_string()],
        None,
    );
    assert_eq!(output.status.code(), Some(1));
    let findings: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(findings.as_array().unwrap().len(), 1);
    assert!(findings[0]["file"].as_str().unwrap().ends_with("b.yml"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn writes_sarif() {
    let output = probity(&["lint", "--format", "sarif", "-"], Some(WARNING));
    assert_eq!(output.status.code(), Some(1));
    let log: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(log["version"], "2.1.0");
    assert_eq!(
        log["runs"][0]["results"][0]["ruleId"],
        "timeout-not-below-period"
    );
}

#[test]
fn explains_a_rule_without_a_path() {
    let output = probity(&["lint", "--explain", "liveness-checks-dependencies"], None);
    assert_eq!(output.status.code(), Some(0));
    let stdout = text(&output.stdout);
    assert!(
        stdout.starts_with("## `liveness-checks-dependencies`"),
        "{stdout}"
    );
    assert!(stdout.contains("**Fix.**"), "{stdout}");

    let output = probity(&["lint", "--explain", "no-such-rule"], None);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("timeout-not-below-period"));

    let output = probity(&["lint", "--list-rules"], None);
    assert_eq!(output.status.code(), Some(0));
    assert!(text(&output.stdout).contains("grace-period-below-drain"));
}

#[test]
fn reads_contracts_and_rejects_bad_ones() {
    let dir = temp_dir("contract");
    let contract = write(
        &dir,
        "contract.json",
        r#"{"version": 1, "service": "slow", "endpoints": [{"probe": "readiness", "path": "/livez", "checks": ["db"], "checks_dependencies": true}], "checks": [], "liveness": [], "startup": {"steps": []}, "shutdown": {"drain_delay_ms": 0}}"#,
    );
    let output = probity(
        &["lint", "--format", "json", "--contract", &contract, "-"],
        Some(WARNING),
    );
    let findings: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        findings
            .as_array()
            .unwrap()
            .iter()
            .any(|finding| finding["rule"] == "liveness-checks-dependencies"),
        "{findings}"
    );

    assert!(
        !text(&output.stderr).contains("warning: contract"),
        "{}",
        text(&output.stderr)
    );

    // A contract for a service the manifests do not contain is reported, not silently unused.
    let other = write(
        &dir,
        "other.json",
        &text(&std::fs::read(&contract).unwrap())
            .replace(r#""service": "slow""#, r#""service": "slwo""#),
    );
    let output = probity(&["lint", "--contract", &other, "-"], Some(WARNING));
    assert_eq!(
        output.status.code(),
        Some(1),
        "the findings still decide the exit"
    );
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!("warning: contract {other} is for service `slwo`")),
        "{stderr}"
    );

    let bad = write(&dir, "bad.json", r#"{"version": 1, "endpointz": []}"#);
    let output = probity(&["lint", "--contract", &bad, "-"], Some(CLEAN));
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("bad.json"));

    // A contract is read as a manifest is: never from a device, never past the input limit.
    let output = probity(&["lint", "--contract", "/dev/zero", "-"], Some(CLEAN));
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr).trim(),
        "error: cannot read /dev/zero: it is a character device, not a file"
    );
    let output = probity(
        &[
            "lint",
            "--max-input-size",
            "64",
            "--contract",
            &contract,
            "-",
        ],
        Some(CLEAN),
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("larger than the input limit of 64 bytes"),
        "{}",
        text(&output.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn needs_a_path_unless_explaining() {
    let output = probity(&["lint"], None);
    assert_eq!(output.status.code(), Some(2));
}

const FIXABLE: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: slow}\nspec:\n  containers:\n  - name: app\n    image: a\n    livenessProbe:\n      httpGet: {path: /livez, port: 8080}\n      # the endpoint answers from memory\n      timeoutSeconds: 10 # was copied from the period\n      failureTreshold: 3\n";

#[test]
fn fix_dry_run_prints_a_diff_and_writes_nothing() {
    let dir = temp_dir("dry-run");
    let path = write(&dir, "pod.yaml", FIXABLE);
    let output = probity(&["lint", "--fix", "--dry-run", &path], None);
    let stdout = text(&output.stdout);
    assert!(
        stdout.starts_with(&format!("--- {path}\n+++ {path}\n")),
        "{stdout}"
    );
    assert!(
        stdout.contains("-      timeoutSeconds: 10 # was copied from the period\n")
            && stdout.contains("+      timeoutSeconds: 9 # was copied from the period\n"),
        "{stdout}"
    );
    assert!(stdout.contains("+      failureThreshold: 3\n"), "{stdout}");
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "would fix {path}:11:23 [timeout-not-below-period] set `timeoutSeconds` to 9"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("2 fix(es) available in 1 file(s)"),
        "{stderr}"
    );
    assert_eq!(
        output.status.code(),
        Some(0),
        "nothing would remain: {stderr}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), FIXABLE);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn fix_writes_the_file_in_place_and_reports_what_remains() {
    let dir = temp_dir("fix");
    let path = write(
        &dir,
        "pod.yaml",
        &format!(
            "{FIXABLE}    readinessProbe:\n      httpGet: {{path: /livez, port: 8080}}\n      timeoutSeconds: 10\n"
        ),
    );
    let output = probity(&["lint", "--fix", &path], None);
    let fixed = std::fs::read_to_string(&path).unwrap();
    assert!(fixed.contains("      # the endpoint answers from memory\n      timeoutSeconds: 9 # was copied from the period\n      failureThreshold: 3\n"), "{fixed}");
    assert!(fixed.contains("    readinessProbe:\n      httpGet: {path: /livez, port: 8080}\n      timeoutSeconds: 9\n"), "{fixed}");
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "fixed {path}:12:7 [unknown-field] rename `failureTreshold` to `failureThreshold`"
        )),
        "{stderr}"
    );
    // The identical probes have no mechanical fix: they are still reported, and decide the exit.
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("error[identical-liveness-readiness]"),
        "{stdout}"
    );
    assert!(!stdout.contains("timeout-not-below-period"), "{stdout}");
    assert_eq!(output.status.code(), Some(1));

    let output = probity(&["lint", "--fix", "-"], Some(FIXABLE));
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("standard input cannot be fixed in place"),
        "{}",
        text(&output.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
