//! `--fix` round trips: for every fixture in `tests/fixtures/fix/` (named for the rule it shows),
//! the rule fires with a safe fix, applying the fixes removes every finding of that rule, keeps
//! every comment, and leaves a manifest that `kubernetes-validate --strict` accepts.

use probity_lint::{Options, Source, fix, lint};
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> Vec<PathBuf> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fix");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(folder)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    paths.sort();
    paths
}

/// `kubernetes-validate`, from `PROBITY_VENV`, the workspace's `target/venv` (what
/// `scripts/setup.sh` installs) or the `PATH`. Without it: a failure under `CI=true`, a loud
/// note elsewhere.
fn kubernetes_validate() -> Option<PathBuf> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let venv = std::env::var_os("PROBITY_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target/venv"));
    let candidates = [venv.join("bin/kubernetes-validate")].into_iter().chain(
        std::env::var_os("PATH").into_iter().flat_map(|path| {
            std::env::split_paths(&path)
                .map(|folder| folder.join("kubernetes-validate"))
                .collect::<Vec<_>>()
        }),
    );
    for candidate in candidates {
        if candidate.is_file() {
            return Some(candidate);
        }
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("kubernetes-validate is not installed: run scripts/setup.sh (required in CI)");
    }
    eprintln!(
        "!!! SKIPPED: kubernetes-validate is not installed (scripts/setup.sh); the fixed \
         manifests were not validated"
    );
    None
}

fn comments(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|line| line.find('#').map(|at| line[at..].trim_end()))
        .collect()
}

#[test]
fn fixes_remove_their_findings_keep_comments_and_validate() {
    let validator = kubernetes_validate();
    let dir = std::env::temp_dir().join(format!("probity-lint-fix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut failures = Vec::new();
    let paths = fixtures();
    assert!(paths.len() >= 7, "fix fixtures missing");
    for path in paths {
        let rule = path.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let sources = [Source::new(format!("{rule}.yaml"), text.clone())];
        let before = lint(&sources, &Options::default());
        let fixable = before
            .findings
            .iter()
            .filter(|finding| finding.rule == rule)
            .filter(|finding| finding.autofix.as_ref().is_some_and(|fix| fix.safe))
            .count();
        if fixable == 0 {
            failures.push(format!("{rule}: no safe fix offered"));
            continue;
        }
        let fixed = fix::fix_all(&sources, &Options::default(), |_| true);
        let after = lint(&fixed.sources, &Options::default());
        let left: Vec<String> = after
            .findings
            .iter()
            .filter(|finding| finding.rule == rule)
            .map(|finding| format!("{}:{} {}", finding.line, finding.column, finding.message))
            .collect();
        if !left.is_empty() {
            failures.push(format!(
                "{rule}: still reported after --fix: {left:?}\n{}",
                fixed.sources[0].text
            ));
        }
        let fixed_text = &fixed.sources[0].text;
        for comment in comments(&text) {
            if !fixed_text.contains(comment) {
                failures.push(format!("{rule}: the fix lost the comment `{comment}`"));
            }
        }
        if let Some(validator) = &validator {
            let file = dir.join(format!("{rule}.yaml"));
            std::fs::write(&file, fixed_text).unwrap();
            let output = Command::new(validator)
                .args(["--strict", "--quiet"])
                .arg(&file)
                .output()
                .unwrap();
            if !output.status.success() {
                failures.push(format!(
                    "{rule}: kubernetes-validate --strict refuses the fixed manifest: {}{}\n{fixed_text}",
                    String::from_utf8_lossy(&output.stdout),
                    String::from_utf8_lossy(&output.stderr)
                ));
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}

#[test]
fn the_startup_probe_fix_keeps_the_boot_budget() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/fix/initial-delay-instead-of-startup-probe.yaml");
    let sources = [Source::new(
        "model.yaml",
        std::fs::read_to_string(path).unwrap(),
    )];
    let fixed = fix::fix_all(&sources, &Options::default(), |_| true);
    let text = &fixed.sources[0].text;
    // 90 s of delay + 3 × 10 s of liveness = 120 s; 5 s × 24 covers it.
    assert!(
        text.contains(
            "        startupProbe:\n          httpGet:\n            path: /healthz\n            port: http\n          timeoutSeconds: 2\n          periodSeconds: 5\n          failureThreshold: 24\n"
        ),
        "{text}"
    );
    // 45 s + 3 × 5 s = 60 s at 5 s: 12 failures.
    assert!(
        text.contains(
            "        livenessProbe: {tcpSocket: {port: 9000}, periodSeconds: 5}\n        startupProbe: {tcpSocket: {port: 9000}, periodSeconds: 5, failureThreshold: 12}\n"
        ),
        "{text}"
    );
    assert!(!text.contains("initialDelaySeconds"), "{text}");
}
