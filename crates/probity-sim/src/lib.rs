//! probity-sim: a deterministic fleet simulator for health-check wiring.
pub mod error;
pub mod kubelet;
pub mod scenario;
pub mod time;
