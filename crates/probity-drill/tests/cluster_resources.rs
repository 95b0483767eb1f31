//! The cluster resources `docs/drill.md` describes for drilling on a staging cluster
//! (`docs/cluster/*.yaml`) are valid: Chaos Mesh's and Litmus's against their published CRD
//! schemas (vendored in `tests/testdata/chaos-mesh` and `tests/testdata/litmus`), offline and
//! strictly; Kubernetes' own with `kubernetes-validate --strict` — through
//! `scripts/check-cluster-resources.py` and the Python venv `scripts/setup.sh` makes
//! (`PROBITY_VENV`, default `target/venv`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The venv's Python with jsonschema and kubernetes-validate, from `PROBITY_VENV`, this
/// working tree's `target/venv`, or the main working tree's when this is a git worktree.
fn python() -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = std::env::var_os("PROBITY_VENV")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    candidates.push(repository().join("target/venv"));
    if let Ok(output) = Command::new("git")
        .args(["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .current_dir(repository())
        .output()
        && let Some(common) = String::from_utf8_lossy(&output.stdout)
            .trim()
            .strip_suffix("/.git")
    {
        candidates.push(Path::new(common).join("target/venv"));
    }
    let found = candidates
        .into_iter()
        .map(|venv| venv.join("bin/python"))
        .find(|python| {
            Command::new(python)
                .args(["-c", "import jsonschema, kubernetes_validate, yaml"])
                .output()
                .is_ok_and(|output| output.status.success())
        });
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "no Python venv with jsonschema and kubernetes-validate (scripts/setup.sh makes it)"
        );
        eprintln!("SKIPPED: no Python venv with jsonschema and kubernetes-validate");
    }
    found
}

fn check(python: &Path, files: &[PathBuf]) -> Output {
    Command::new(python)
        .arg(repository().join("scripts/check-cluster-resources.py"))
        .args(files)
        .output()
        .expect("python runs")
}

#[test]
fn the_documented_cluster_resources_are_valid_against_their_schemas() {
    let Some(python) = python() else {
        return;
    };
    let files: Vec<PathBuf> = std::fs::read_dir(repository().join("docs/cluster"))
        .expect("docs/cluster")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    assert!(files.len() >= 9, "{files:?}");
    let output = check(&python, &files);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains(&format!("{} files valid", files.len())),
        "{stdout}"
    );
    // The docs name each file they describe.
    let docs = std::fs::read_to_string(repository().join("docs/drill.md")).expect("docs");
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy();
        assert!(
            docs.contains(&format!("cluster/{name}")),
            "docs/drill.md does not name {name}"
        );
    }
}

#[test]
fn the_check_rejects_unknown_fields_bad_values_and_unknown_kinds() {
    let Some(python) = python() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("probity-cluster-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: chaos-mesh.org/v1alpha1\nkind: NetworkChaos\nmetadata: {name: a}\n\
         spec:\n  action: refuse\n  mode: all\n  selector: {labelSelectors: {app: a}}\n  \
         direcshun: to\n---\n\
         apiVersion: chaos-mesh.org/v1alpha1\nkind: PodChaos\nmetadata: {name: b}\n\
         spec:\n  action: pod-kill\n  mode: one\n  gracePeriod: -1\n  \
         selector: {labelSelectors: {app: a}}\n---\n\
         apiVersion: chaos-mesh.org/v1alpha1\nkind: PodFreezeChaos\nmetadata: {name: c}\n---\n\
         apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  \
         selector: {matchLabels: {app: a}}\n  template:\n    metadata: {labels: {app: a}}\n    \
         spec:\n      shareProcessNamespaces: true\n      containers: [{name: a, image: a}]\n---\n\
         apiVersion: litmuschaos.io/v1alpha1\nkind: ChaosEngine\nmetadata: {name: e}\nspec:\n  \
         engineState: running\n  appinfo: {appns: a, applabel: app=a, applable: x}\n  \
         experiments: [{name: pod-delete, spec: {components: {env: [{name: A, value: 1}]}}}]\n",
    )
    .unwrap();
    let output = check(&python, std::slice::from_ref(&bad));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    for expected in [
        "[0] NetworkChaos: spec: Additional properties are not allowed ('direcshun'",
        "[0] NetworkChaos: spec.action: 'refuse' is not one of",
        "[1] PodChaos: spec.gracePeriod: -1 is less than the minimum of 0",
        "[2]: no vendored schema for PodFreezeChaos",
        "[3] Deployment: spec.template.spec: Additional properties are not allowed \
         ('shareProcessNamespaces'",
        "[4] ChaosEngine: spec.appinfo: Additional properties are not allowed ('applable'",
        "[4] ChaosEngine: spec.engineState: 'running' does not match",
        "[4] ChaosEngine: spec.experiments.0.spec.components.env.0.value: 1 is not of type \
         'string'",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}
