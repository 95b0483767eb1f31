//! probity-lint: catch the probe wiring that causes outages in Kubernetes manifests before it
//! ships.
//!
//! The linter reads Pods, Deployments, StatefulSets, DaemonSets, ReplicaSets,
//! ReplicationControllers, Jobs, CronJobs, any other kind with a pod template (`spec.template`:
//! Argo Rollouts, OpenKruise CloneSets, custom resources), Services, PodDisruptionBudgets and
//! HorizontalPodAutoscalers from YAML (multi-document streams, Helm-rendered output, `kind:
//! List`) keeping the line, column and byte offset of every value, applies Kubernetes' probe
//! defaults, and reports each broken [rule](rules::catalogue) with its id, severity, position,
//! why, fix and — when the fix is mechanical — the exact [edits](Autofix) ([`fix`] applies them).
//! Other kinds (ConfigMaps, a PrometheusRule) are counted in [`Report::skipped`]; a document
//! that is not valid YAML or not a Kubernetes object is a finding at its position, and the
//! documents after it are still read.
//!
//! ```
//! use probity_lint::{Options, Source, lint};
//!
//! let manifest = "\
//! apiVersion: apps/v1
//! kind: Deployment
//! metadata: {name: checkout}
//! spec:
//!   replicas: 3
//!   selector: {matchLabels: {app: checkout}}
//!   template:
//!     metadata: {labels: {app: checkout}}
//!     spec:
//!       containers:
//!       - name: app
//!         image: checkout:1
//!         livenessProbe:  {httpGet: {path: /health, port: 8080}, periodSeconds: 10}
//!         readinessProbe: {httpGet: {path: /health, port: 8080}, periodSeconds: 5}
//! ";
//! let report = lint(&[Source::new("deploy.yaml", manifest)], &Options::default());
//! let rules: Vec<_> = report.findings.iter().map(|finding| finding.rule).collect();
//! assert!(rules.contains(&"identical-liveness-readiness"));
//! ```
//!
//! What the manifest cannot say (which endpoints check dependencies, the boot time, the drain
//! delay) comes from the service's [contract](contract::Contract) ([`Options::contracts`]) or from
//! `probity.dev/` annotations ([`facts`]). A finding is suppressed on one object by the
//! annotation `probity.dev/ignore-RULE: "<reason>"`; a suppression without a reason is itself a
//! finding and is not honoured.
//!
//! The rule reference, `docs/lint-rules.md`, is [`rules::reference_markdown`], the same text
//! `probity lint --explain ID` prints one rule of.

/// The contract a service publishes: what each endpoint checks and waits on, with its timing
/// (versions 1 and 2), as `probity-contract` defines it for every probity tool.
pub use probity_contract::contract;
pub mod facts;
pub mod finding;
pub mod fix;
pub mod output;
pub mod rules;
pub mod source;
pub mod write;
pub mod yaml;

mod context;
mod engine;
mod model;
mod options;
mod summary;

pub use engine::lint;
pub use finding::{Autofix, Finding, Report, SkippedDocument, TextEdit};
pub use options::{DEFAULT_MAX_DEPENDENCY_RPS, DEFAULT_MAX_PROBE_RPS, Options};
pub use output::Format;
pub use rules::{Rule, Severity};
pub use source::Source;
