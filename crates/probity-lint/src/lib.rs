//! probity-lint: catch the probe wiring that causes outages in Kubernetes manifests before it
//! ships.
//!
//! The linter reads Pods, Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs, CronJobs,
//! Services, PodDisruptionBudgets and HorizontalPodAutoscalers from YAML (multi-document streams,
//! Helm-rendered output, `kind: List`) keeping the line and column of every value, applies
//! Kubernetes' probe defaults, and reports each broken [rule](rules::catalogue) with its id,
//! severity, position, why and fix. Other kinds (ConfigMaps, custom resources such as a
//! PrometheusRule) are skipped; a document that is not a Kubernetes object, or YAML that does not
//! parse, is an [`InputError`] naming the file, line and column.
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
//! delay) comes from the service's [`probity::Contract`] ([`Options::contracts`]) or from
//! `probity.dev/` annotations ([`facts`]). A finding is suppressed on one object by the
//! annotation `probity.dev/ignore-RULE: "<reason>"`; a suppression without a reason is itself a
//! finding and is not honoured.
//!
//! The rule reference, `docs/lint-rules.md`, is [`rules::reference_markdown`], the same text
//! `probity lint --explain ID` prints one rule of.

pub mod facts;
pub mod finding;
pub mod fix;
pub mod output;
pub mod rules;
pub mod source;
pub mod yaml;

mod engine;
mod model;
mod summary;

pub use engine::{DEFAULT_MAX_DEPENDENCY_RPS, DEFAULT_MAX_PROBE_RPS, Options, lint};
pub use finding::{Autofix, Finding, Report, SkippedDocument, TextEdit};
pub use output::Format;
pub use rules::{Rule, Severity};
pub use source::Source;
