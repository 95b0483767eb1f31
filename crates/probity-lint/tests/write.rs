//! Writing fixes back: a file changed since it was read is refused, and then nothing is
//! written; a rename that fails after others succeeded says which files were written.

use probity_lint::source::{DEFAULT_MAX_INPUT_BYTES, read_inputs};
use probity_lint::write::{WriteError, stage_fixed, write_fixed};
use probity_lint::{Options, fix};
use std::path::PathBuf;

const FIXABLE: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: slow}\nspec:\n  containers:\n  - name: app\n    image: a\n    livenessProbe:\n      httpGet: {path: /livez, port: 8080}\n      timeoutSeconds: 10\n      failureTreshold: 3\n";

#[test]
fn a_file_changed_since_it_was_read_is_not_overwritten_and_nothing_is_written() {
    let dir = std::env::temp_dir().join(format!("probity-lint-write-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.yaml"), FIXABLE).unwrap();
    std::fs::write(dir.join("b.yaml"), FIXABLE).unwrap();
    let roots = vec![dir.clone()];
    let inputs = read_inputs(&roots, std::io::empty(), DEFAULT_MAX_INPUT_BYTES);
    let fixed = fix::fix_all(&inputs.sources, &Options::default(), |_| true);
    // Someone appends to one of them while the linter works.
    let appended = format!("{FIXABLE}# added while the linter ran\n");
    std::fs::write(dir.join("b.yaml"), &appended).unwrap();

    let failure =
        write_fixed(&inputs.sources, &fixed, &roots, DEFAULT_MAX_INPUT_BYTES).expect_err("refused");
    assert!(failure.written.is_empty(), "{failure:?}");
    let errors = failure.errors;
    assert!(
        matches!(&errors[..], [WriteError::Changed { path }] if path.ends_with("b.yaml")),
        "{errors:?}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("b.yaml")).unwrap(),
        appended
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("a.yaml")).unwrap(),
        FIXABLE
    );
    let left: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");

    // Read again, both are written.
    let inputs = read_inputs(&roots, std::io::empty(), DEFAULT_MAX_INPUT_BYTES);
    let fixed = fix::fix_all(&inputs.sources, &Options::default(), |_| true);
    let written = write_fixed(&inputs.sources, &fixed, &roots, DEFAULT_MAX_INPUT_BYTES).unwrap();
    assert_eq!(written.len(), 2);
    let text = std::fs::read_to_string(dir.join("b.yaml")).unwrap();
    assert!(
        text.contains("failureThreshold: 3") && text.ends_with("# added while the linter ran\n"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_rename_that_fails_after_others_succeeded_names_what_was_written() {
    let dir = std::env::temp_dir().join(format!("probity-lint-partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["a.yaml", "b.yaml", "c.yaml"] {
        std::fs::write(dir.join(name), FIXABLE).unwrap();
    }
    let roots = vec![dir.clone()];
    let inputs = read_inputs(&roots, std::io::empty(), DEFAULT_MAX_INPUT_BYTES);
    let fixed = fix::fix_all(&inputs.sources, &Options::default(), |_| true);
    let staged = stage_fixed(&inputs.sources, &fixed, &roots, DEFAULT_MAX_INPUT_BYTES).unwrap();
    // The second file's new text vanishes before it is renamed (a cleaner, a full disk).
    let temporaries: Vec<PathBuf> = staged.temporaries().map(PathBuf::from).collect();
    assert_eq!(temporaries.len(), 3);
    std::fs::remove_file(&temporaries[1]).unwrap();
    let failure = staged
        .commit(&inputs.sources)
        .expect_err("the rename fails");
    assert_eq!(failure.written.len(), 1, "{failure:?}");
    let first = &inputs.sources[failure.written[0]].name;
    assert!(
        std::fs::read_to_string(first)
            .unwrap()
            .contains("failureThreshold: 3"),
        "the first file was written whole"
    );
    assert!(
        matches!(&failure.errors[..], [WriteError::Io { .. }]),
        "{failure:?}"
    );
    // The third was not written, and no temporary file is left behind.
    let unfixed = inputs
        .sources
        .iter()
        .filter(|source| std::fs::read_to_string(&source.name).unwrap() == FIXABLE)
        .count();
    assert_eq!(unfixed, 2);
    let left = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(left, 3);
    std::fs::remove_dir_all(&dir).unwrap();
}
