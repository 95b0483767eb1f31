//! Fixture tests: every rule has a positive and a negative fixture, and the incidents' manifests
//! (before and after their fixes) produce exactly the findings their stories predict.
//!
//! A fixture marks every finding it expects with a comment on the reported line:
//! `# expect: RULE` (several: `# expect: RULE, RULE`). The test requires the set of
//! (line, rule) pairs found to equal the set marked, so a fixture fails both when a rule stops
//! firing and when another rule starts firing where nothing was expected.

use probity_lint::{Format, Options, Source, lint, output, rules};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The (line, rule) pairs a fixture's `# expect:` comments declare.
fn expected(text: &str) -> Vec<(usize, String)> {
    let mut pairs = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if let Some((_, rules)) = line.split_once("# expect:") {
            for rule in rules.split(',') {
                pairs.push((index + 1, rule.trim().to_owned()));
            }
        }
    }
    pairs.sort();
    pairs
}

/// Lints one fixture and describes any difference from its expectations.
fn check(path: &Path) -> Result<Vec<(usize, String)>, String> {
    let text = std::fs::read_to_string(path).map_err(|error| format!("{path:?}: {error}"))?;
    let name = path
        .strip_prefix(fixtures())
        .unwrap_or(path)
        .display()
        .to_string();
    let sources = [Source::new(name.clone(), text.clone())];
    let report = lint(&sources, &Options::default());
    let mut found: Vec<(usize, String)> = report
        .findings
        .iter()
        .map(|finding| (finding.line, finding.rule.to_owned()))
        .collect();
    found.sort();
    let expected = expected(&text);
    if found == expected {
        Ok(found)
    } else {
        Err(format!(
            "{name}: expected {expected:?}\n  found {found:?}\n{}",
            output::render(&report, &sources, Format::Human, false)
        ))
    }
}

#[test]
fn every_rule_has_a_positive_and_a_negative_fixture() {
    let mut failures = Vec::new();
    for rule in rules::all() {
        let folder = fixtures().join("rules").join(rule.id);
        for (name, must_fire) in [("positive.yaml", true), ("negative.yaml", false)] {
            let path = folder.join(name);
            if !path.exists() {
                failures.push(format!("{}: missing {name}", rule.id));
                continue;
            }
            match check(&path) {
                Ok(found) => {
                    let fires = found.iter().any(|(_, id)| id == rule.id);
                    if fires != must_fire {
                        failures.push(format!(
                            "{}/{name}: the rule {} but should {}",
                            rule.id,
                            if fires { "fires" } else { "does not fire" },
                            if must_fire { "fire" } else { "stay silent" }
                        ));
                    }
                }
                Err(failure) => failures.push(failure),
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}

#[test]
fn no_fixture_folder_names_an_unknown_rule() {
    for entry in std::fs::read_dir(fixtures().join("rules")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            rules::find(&name).is_some(),
            "fixtures for unknown rule {name}"
        );
    }
}

#[test]
fn incident_manifests_produce_exactly_the_expected_findings() {
    let mut failures = Vec::new();
    let mut count = 0;
    let mut entries: Vec<_> = std::fs::read_dir(fixtures().join("incidents"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        count += 1;
        if let Err(failure) = check(&path) {
            failures.push(failure);
        }
    }
    assert!(count >= 8, "incident fixtures missing: {count}");
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}

#[test]
fn well_wired_manifests_are_clean() {
    let mut entries: Vec<_> = std::fs::read_dir(fixtures().join("clean"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    assert!(!entries.is_empty());
    for path in entries {
        let found = check(&path).unwrap_or_else(|failure| panic!("{failure}"));
        assert!(found.is_empty());
    }
}
