//! probity-contract: the vocabulary every probity tool shares, and Kubernetes' own rules.
//!
//! The runtime, the simulator, the linter and the drill all speak of the same things: the
//! [three kinds of probe](probe::ProbeKind), and the way Kubernetes runs them. This crate
//! holds both, with no runtime in it (serde only), so a tool that reads manifests or
//! simulates a fleet does not link an async runtime to learn what `periodSeconds` defaults
//! to.
//!
//! - [`kube`]: Kubernetes as its source has it: the probe spec with its defaults and the API
//!   server's validation ([`kube::probe`]), the kubelet's prober ([`kube::prober`]),
//!   CrashLoopBackOff ([`kube::backoff`]) and termination ([`kube::termination`]). Each rule
//!   cites the Kubernetes file or page it follows.
//! - [`duration`]: one parser and formatter for durations as Go and Kubernetes write them
//!   (`1m30s`, `500ms`, `2h`).
//! - [`probe`]: the probe kinds.
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

pub mod duration;
pub mod kube;
pub mod probe;
