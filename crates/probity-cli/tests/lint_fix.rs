//! `probity lint --fix` never damages what it touches: a read-only file or a link out of the
//! folder is refused with nothing written and no "fixed" line, the write is a rename (no half
//! file), a link inside the folder keeps being a link; names from a manifest are printed with
//! their control characters escaped.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const FIXABLE: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: slow}\nspec:\n  containers:\n  - name: app\n    image: a\n    livenessProbe:\n      httpGet: {path: /livez, port: 8080}\n      timeoutSeconds: 10\n      failureTreshold: 3\n";

fn probity(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_probity"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("probity-cli-fix-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_read_only_file_is_refused_with_nothing_written_and_no_fixed_line() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("read-only");
    let writable = dir.join("a.yaml");
    let locked = dir.join("b.yaml");
    std::fs::write(&writable, FIXABLE).unwrap();
    std::fs::write(&locked, FIXABLE).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o444)).unwrap();
    let output = probity(&["lint", "--fix", dir.to_str().unwrap()]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("b.yaml: read-only; not written"),
        "{stderr}"
    );
    assert!(stderr.contains("no file was changed"), "{stderr}");
    assert!(!stderr.contains("fixed "), "{stderr}");
    // Neither file was touched: all or nothing.
    assert_eq!(std::fs::read_to_string(&writable).unwrap(), FIXABLE);
    assert_eq!(std::fs::read_to_string(&locked).unwrap(), FIXABLE);
    assert_eq!(entries(&dir), ["a.yaml", "b.yaml"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_link_out_of_the_folder_is_refused_and_one_inside_stays_a_link() {
    let dir = temp_dir("links");
    let outside = temp_dir("links-outside");
    let folder = dir.join("manifests");
    std::fs::create_dir_all(&folder).unwrap();
    let target_outside = outside.join("elsewhere.yaml");
    std::fs::write(&target_outside, FIXABLE).unwrap();
    std::os::unix::fs::symlink(&target_outside, folder.join("out.yaml")).unwrap();
    let output = probity(&["lint", "--fix", folder.to_str().unwrap()]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("out.yaml: a link to"), "{stderr}");
    assert!(stderr.contains("not written"), "{stderr}");
    assert!(!stderr.contains("fixed "), "{stderr}");
    assert_eq!(std::fs::read_to_string(&target_outside).unwrap(), FIXABLE);
    std::fs::remove_file(folder.join("out.yaml")).unwrap();

    // A link to a file inside the folder: the target is fixed, the link is still a link.
    let real = folder.join("real.yml");
    std::fs::write(&real, FIXABLE).unwrap();
    std::os::unix::fs::symlink(&real, folder.join("alias.yaml")).unwrap();
    let output = probity(&["lint", "--fix", folder.join("alias.yaml").to_str().unwrap()]);
    let stderr = text(&output.stderr);
    assert!(stderr.contains("fixed "), "{stderr}");
    let fixed = std::fs::read_to_string(&real).unwrap();
    assert!(fixed.contains("failureThreshold: 3"), "{fixed}");
    assert!(
        std::fs::symlink_metadata(folder.join("alias.yaml"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    // Written by rename: no temporary file left beside it.
    assert_eq!(entries(&folder), ["alias.yaml", "real.yml"]);
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&outside).unwrap();
}

#[test]
fn the_fix_replaces_the_file_whole_keeping_its_mode() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = temp_dir("atomic");
    let path = dir.join("pod.yaml");
    std::fs::write(&path, FIXABLE).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    let before = std::fs::metadata(&path).unwrap().ino();
    let output = probity(&["lint", "--fix", path.to_str().unwrap()]);
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("2 fix(es) applied in 1 file(s)"),
        "{stderr}"
    );
    let metadata = std::fs::metadata(&path).unwrap();
    // A new file renamed into place, not the old one rewritten where it stood.
    assert_ne!(metadata.ino(), before);
    assert_eq!(metadata.permissions().mode() & 0o777, 0o640);
    assert_eq!(entries(&dir), ["pod.yaml"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn names_from_a_manifest_are_printed_with_their_escapes_shown() {
    let dir = temp_dir("escapes");
    let path = dir.join("pod.yaml");
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: \"web\\e]0;PWNED\\a\\e[2J\"}\nspec:\n  containers:\n  - name: app\n    image: a\n    livenessProbe:\n      httpGet: {path: /livez, port: 8080}\n      timeoutSeconds: 10\n",
    )
    .unwrap();
    let output = probity(&["lint", "--color", "never", path.to_str().unwrap()]);
    let stdout = text(&output.stdout);
    assert!(!stdout.contains('\u{1b}'), "{stdout:?}");
    assert!(!stdout.contains('\u{7}'), "{stdout:?}");
    assert!(
        stdout.contains(r"web\u{1b}]0;PWNED\u{7}\u{1b}[2J"),
        "{stdout}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_int_tag_is_honoured() {
    let dir = temp_dir("tags");
    let path = dir.join("deploy.yaml");
    std::fs::write(
        &path,
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: !!int \"3\"\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - name: app\n        image: a\n",
    )
    .unwrap();
    let output = probity(&["lint", "--format", "json", path.to_str().unwrap()]);
    let stdout = text(&output.stdout);
    // Read as the number 3: no finding says the API server would reject it as a string.
    assert!(!stdout.contains("rejected-by-api-server"), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}
