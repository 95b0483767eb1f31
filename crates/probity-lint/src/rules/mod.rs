//! The rules: what each one means ([`catalogue`]) and the checks that apply them.
//!
//! Each check module owns one concern: `probes` judges each probe and each pair of probes of a
//! container, `api` re-implements the API server's validation and the unknown-field walk,
//! `termination` the grace period, `fleet` what only shows across objects (Services,
//! disruption budgets, autoscalers, probe load at fleet size).

pub mod catalogue;

pub(crate) mod api;
pub(crate) mod commands;
pub(crate) mod fixes;
pub(crate) mod fleet;
pub(crate) mod hosts;
pub(crate) mod mesh;
pub(crate) mod probes;
pub(crate) mod sidecars;
pub(crate) mod termination;

use serde::{Deserialize, Serialize};

/// How much a finding matters. Ordered: `Info < Warning < Error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; does not fail a build by default.
    Info,
    /// Likely to cause an incident; fails a build by default.
    Warning,
    /// Causes an incident or a rejected apply.
    Error,
}

impl Severity {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }

    /// Parses `info`, `warning` or `error`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "info" => Some(Severity::Info),
            "warning" => Some(Severity::Warning),
            "error" => Some(Severity::Error),
            _ => None,
        }
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a rule's findings are about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// An object (or a container of one); suppressible by annotation on the object.
    Object,
    /// A document that is not an object the linter can read; nothing to annotate.
    Document,
}

/// One rule: a stable id, a severity, why it matters and how to fix it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// The stable id, used in output, suppressions and `--explain`.
    pub id: &'static str,
    /// The severity of every finding of this rule.
    pub severity: Severity,
    /// What its findings are about.
    pub scope: Scope,
    /// One line: what the rule finds.
    pub summary: &'static str,
    /// One paragraph: why it matters, citing the incident or the Kubernetes source.
    pub why: &'static str,
    /// What to change.
    pub fix: &'static str,
}

impl Rule {
    /// The rule's reference text as Markdown, as `--explain` prints it and `docs/lint-rules.md`
    /// lists it.
    pub fn explain(&self) -> String {
        let suppress = match self.scope {
            Scope::Object => format!(
                "**Suppress** on one object with the annotation \
                 `probity.dev/ignore-{}: \"<reason>\"`.",
                self.id
            ),
            Scope::Document => "**Cannot be suppressed**: there is no object to annotate; \
                                correct the document or leave it out of the paths linted."
                .to_owned(),
        };
        format!(
            "## `{id}`\n\n**Severity:** {severity}. {summary}.\n\n**Why.** {why}\n\n**Fix.** {fix}\n\n\
             {suppress}\n",
            id = self.id,
            severity = self.severity,
            summary = capitalise(self.summary),
            why = self.why,
            fix = self.fix,
        )
    }
}

fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Every rule, in reference order.
pub fn all() -> &'static [&'static Rule] {
    catalogue::ALL
}

/// The rule with this id.
pub fn find(id: &str) -> Option<&'static Rule> {
    catalogue::ALL.iter().copied().find(|rule| rule.id == id)
}

/// The rule reference, `docs/lint-rules.md`, generated from the catalogue.
pub fn reference_markdown() -> String {
    let mut text = String::from(
        "# probity lint rules\n\n\
         <!-- Generated from crates/probity-lint/src/rules/catalogue.rs; do not edit by hand.\n     \
         Regenerate: UPDATE_LINT_DOCS=1 cargo test -p probity-lint --test rule_docs -->\n\n\
         `probity lint PATH…` reads Kubernetes manifests (files, folders, `-` for standard input; \
         multi-document YAML, Helm-rendered output) and reports the probe wiring that causes \
         outages. Every object with a pod template is judged, whatever its kind (an Argo Rollout, an \
         OpenKruise CloneSet, a custom resource with `spec.template`); other kinds are counted \
         and listed with `--verbose`. Probe fields are judged after Kubernetes' defaults are applied (period 10 s, \
         timeout 1 s, success 1, failure 3, initial delay 0, pod grace period 30 s). Sidecars \
         (init containers with `restartPolicy: Always`) are probed like the application's \
         containers and judged by the same probe rules. \
         `probity lint --explain ID` prints one rule.\n\n\
         Exit status: 0 when no finding is at or above `--fail-on` (default `warning`), 1 when \
         one is, 2 when an input cannot be read, no document at all could be read, or a flag is \
         wrong. `--fix` applies the fixes marked safe below and reports what remains; CI and \
         pre-commit recipes are in `docs/lint-ci.md`.\n\n\
         What the service does behind its endpoints comes from its contract (`--contract FILE`, \
         the JSON `checkout --print-contract` writes; format version 2 adds what each endpoint \
         `waits_on`, which checks `calls_health_endpoint`, and the `drain_delay_derivation`) or \
         from annotations on the workload or its pod template:\n\n\
         | annotation | meaning |\n|---|---|\n\
         | `probity.dev/contract` | the service's contract, inline JSON |\n\
         | `probity.dev/dependency-endpoints` | comma-separated HTTP paths (or `grpc:SERVICE`) whose answer depends on something outside the process |\n\
         | `probity.dev/transitive-endpoints` | comma-separated HTTP paths (or `grpc:SERVICE`) whose answer includes another service's health endpoint |\n\
         | `probity.dev/boot-seconds` | the worst boot time, in seconds (`40`) or as a duration (`1m30s`) |\n\
         | `probity.dev/drain-delay-seconds` | how long the service keeps serving after SIGTERM, in seconds (`15`) or as a duration (`500ms`) |\n\
         | `probity.dev/ignore-RULE` | suppresses RULE on this object; the value is the reason and must not be empty |\n\n\
         A `--contract` applies to the containers whose name, workload name, or \
         `app.kubernetes.io/name` or `app` label equals its `service` (every container when it \
         names none); an inline `probity.dev/contract` applies to every container of its \
         workload. Annotations on the pod template override those on the workload. A \
         `--contract` that applies to no container of the manifests read is reported on \
         standard error: nothing was judged against it.\n\n\
         | rule | severity | finds |\n|---|---|---|\n",
    );
    for rule in all() {
        text.push_str(&format!(
            "| [`{id}`](#{id}) | {severity} | {summary} |\n",
            id = rule.id,
            severity = rule.severity,
            summary = rule.summary.replace('|', "\\|"),
        ));
    }
    for rule in all() {
        text.push('\n');
        text.push_str(&rule.explain());
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_kebab_case_and_fit_an_annotation_key() {
        let mut seen = std::collections::HashSet::new();
        for rule in all() {
            assert!(seen.insert(rule.id), "duplicate id {}", rule.id);
            assert!(
                rule.id
                    .bytes()
                    .all(|byte| byte.is_ascii_lowercase() || byte == b'-'),
                "{}",
                rule.id
            );
            // `ignore-` + id must fit the 63-character name part of an annotation key.
            assert!(rule.id.len() + "ignore-".len() <= 63, "{}", rule.id);
            assert!(!rule.why.is_empty() && !rule.fix.is_empty());
        }
    }

    #[test]
    fn severities_parse_and_order() {
        assert_eq!(Severity::parse("warning"), Some(Severity::Warning));
        assert_eq!(Severity::parse("fatal"), None);
        assert!(Severity::Info < Severity::Warning && Severity::Warning < Severity::Error);
    }

    /// The rules' reference text states some of Kubernetes' numbers to explain itself; they are
    /// the ones the linter judges with (`probity_contract::kube`), not a copy that could drift.
    #[test]
    fn kubernetes_numbers_in_the_reference_are_the_shared_ones() {
        use probity_contract::kube::probe::{
            DEFAULT_FAILURE_THRESHOLD as FAILURE, DEFAULT_PERIOD_SECONDS as PERIOD,
            DEFAULT_TIMEOUT_SECONDS as TIMEOUT,
        };
        use probity_contract::kube::termination::{
            DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS as GRACE, MINIMUM_GRACE_PERIOD,
            MINIMUM_POD_GRACE_PERIOD,
        };
        let after_signal = MINIMUM_GRACE_PERIOD.as_secs();
        let pod_floor = MINIMUM_POD_GRACE_PERIOD.as_secs();
        let statements = [
            (
                &catalogue::TIMEOUT_NOT_BELOW_PERIOD.why,
                format!("Kubernetes defaults are period {PERIOD} s, timeout {TIMEOUT} s."),
            ),
            (
                &catalogue::TIMEOUT_NOT_BELOW_PERIOD.fix,
                format!("the default {TIMEOUT} s is usually right"),
            ),
            (
                &catalogue::STARTUP_BUDGET_BELOW_BOOT_TIME.why,
                format!("default is {FAILURE} × {PERIOD} = {} s", FAILURE * PERIOD),
            ),
            (
                &catalogue::LIVENESS_WINDOW_TOO_SHORT.fix,
                format!("the defaults ({FAILURE} × {PERIOD} s)"),
            ),
            (
                &catalogue::GRACE_PERIOD_LEAVES_NO_TIME_FOR_PRESTOP.why,
                format!("raised to a {after_signal} s floor"),
            ),
            (
                &catalogue::GRACE_PERIOD_LEAVES_NO_TIME_FOR_PRESTOP.why,
                format!("`minimumGracePeriodInSeconds = {after_signal}`"),
            ),
            (
                &catalogue::GRACE_PERIOD_LEAVES_NO_TIME_FOR_PRESTOP.why,
                format!("`terminationGracePeriodSeconds` (default {GRACE} s)"),
            ),
            (
                &catalogue::GRACE_PERIOD_LEAVES_NO_TIME_FOR_PRESTOP.why,
                format!("the process gets {after_signal} s to finish"),
            ),
            (
                &catalogue::GRACE_PERIOD_LEAVES_NO_TIME_FOR_PRESTOP.why,
                format!("gives the hook at most {pod_floor} s"),
            ),
            (
                &catalogue::GRACE_PERIOD_BELOW_DRAIN.why,
                format!("`terminationGracePeriodSeconds` (default {GRACE} s)"),
            ),
        ];
        for (text, statement) in statements {
            let text = text.replace(['\n', '\\'], " ");
            let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(text.contains(&statement), "{statement:?} not in {text:?}");
        }
    }

    #[test]
    fn explain_names_the_rule_and_its_fix() {
        let rule = find("timeout-not-below-period").unwrap();
        let text = rule.explain();
        assert!(text.contains("`timeout-not-below-period`"));
        assert!(text.contains(rule.fix));
        assert!(text.contains("**Severity:** warning"));
    }
}
