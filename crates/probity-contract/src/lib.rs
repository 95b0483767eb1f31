//! probity-contract: the vocabulary every probity tool shares, the rules that decide a probe's
//! answer, and Kubernetes' own rules.
//!
//! The runtime, the simulator, the linter and the drill all speak of the same things: the
//! [three kinds of probe](probe::ProbeKind), the [tiers](tier::Tier) of a check, the
//! [contract](contract::Contract) a service publishes, and the way Kubernetes runs probes. This
//! crate holds them, with no runtime in it (serde only), so a tool that reads manifests or
//! simulates a fleet does not link an async runtime to learn what `periodSeconds` defaults to —
//! and the simulator runs the very [hysteresis] and [verdict] code the runtime runs.
//!
//! - [`contract`]: what each endpoint checks and waits on, with its timing (JSON, versioned);
//! - [`verdict`]: every rule that turns check states, startup, shutdown and liveness into
//!   `pass`, `warn` or `fail`;
//! - [`hysteresis`]: fall fast, rise slow;
//! - [`kube`]: Kubernetes as its source has it: the probe spec with its defaults and the API
//!   server's validation ([`kube::probe`]), the kubelet's prober ([`kube::prober`]),
//!   CrashLoopBackOff ([`kube::backoff`]) and termination ([`kube::termination`]). Each rule
//!   cites the Kubernetes file or page it follows.
//! - [`duration`]: one parser and formatter for durations as Go and Kubernetes write them
//!   (`1m30s`, `500ms`, `2h`).
//! - [`probe`]: the probe kinds.
//! - [`file`](mod@file): a file a person named, read as every tool reads one: a regular file
//!   (a FIFO or device is refused before it is opened), capped, UTF-8 ([`file::read_text`]).
//! - [`text`]: names that came from input, made safe to print on a terminal
//!   ([`text::escape_control`]) and in XML or HTML ([`text::escape_markup`]).
//!
//! ```
//! use probity_contract::kube::probe::ProbeSpec;
//! use probity_contract::probe::ProbeKind;
//! use std::time::Duration;
//!
//! let spec: ProbeSpec = serde_json::from_str(
//!     r#"{ "httpGet": { "path": "/livez", "port": 8080 }, "failureThreshold": 5 }"#,
//! ).unwrap();
//! let probe = spec.resolve(ProbeKind::Liveness).unwrap();
//! assert_eq!(probe.timing.period, Duration::from_secs(10)); // the API server's default
//! assert_eq!(probe.timing.failure_window(), Duration::from_secs(50));
//! ```

pub mod contract;
pub mod duration;
pub mod file;
pub mod hysteresis;
pub mod kube;
pub mod probe;
pub mod text;
pub mod tier;
pub mod verdict;

pub use contract::Contract;
pub use probe::ProbeKind;
pub use tier::Tier;
pub use verdict::Status;

/// The README's (the crates.io page's) example, compiled as a doc test so it cannot drift.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
