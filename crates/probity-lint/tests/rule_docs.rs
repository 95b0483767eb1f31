//! `docs/lint-rules.md` is generated from the rule catalogue, the same text `--explain` prints,
//! so the two cannot drift. Regenerate after changing a rule:
//!
//! ```sh
//! UPDATE_LINT_DOCS=1 cargo test -p probity-lint --test rule_docs
//! ```

use probity_lint::rules;
use std::path::Path;

#[test]
fn docs_lint_rules_md_matches_the_catalogue() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/lint-rules.md");
    let generated = rules::reference_markdown();
    if std::env::var_os("UPDATE_LINT_DOCS").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let written = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        written == generated,
        "docs/lint-rules.md is out of date with the rule catalogue; regenerate it with \
         `UPDATE_LINT_DOCS=1 cargo test -p probity-lint --test rule_docs`"
    );
}

#[test]
fn the_reference_holds_every_rule_as_explain_prints_it() {
    let reference = rules::reference_markdown();
    for rule in rules::all() {
        assert!(reference.contains(&rule.explain()), "{} missing", rule.id);
        assert!(reference.contains(&format!("[`{}`](#{})", rule.id, rule.id)));
    }
}
