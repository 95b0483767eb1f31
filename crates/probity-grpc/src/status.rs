//! From a snapshot to a gRPC serving status.

use crate::pb::health_check_response::ServingStatus;
use probity::{ProbeKind, Snapshot, Status};
use tokio::time::Instant;

/// The service names that mirror the three probes, besides `""` (the server as a whole, which
/// answers as readiness).
pub const PROBE_SERVICES: [&str; 3] = ["liveness", "readiness", "startup"];

/// The status of `service` in `snapshot` at `now`, or `None` when the service is unknown.
///
/// ```
/// use probity::Health;
/// use probity_grpc::{ServingStatus, serving_status};
///
/// let health = Health::builder().startup_step("migrations").build()?;
/// let now = tokio::time::Instant::now();
/// let snapshot = health.snapshot();
/// assert_eq!(serving_status(&snapshot, "liveness", now), Some(ServingStatus::Serving));
/// assert_eq!(serving_status(&snapshot, "", now), Some(ServingStatus::NotServing));
/// assert_eq!(serving_status(&snapshot, "nope", now), None);
/// # Ok::<(), probity::BuildError>(())
/// ```
pub fn serving_status(snapshot: &Snapshot, service: &str, now: Instant) -> Option<ServingStatus> {
    let serving = match service {
        "" | "readiness" => snapshot.status(ProbeKind::Readiness, now) != Status::Fail,
        "liveness" => snapshot.status(ProbeKind::Liveness, now) != Status::Fail,
        "startup" => snapshot.status(ProbeKind::Startup, now) != Status::Fail,
        name => {
            // Alone, a check answers for itself, as `/readyz/{check}` does.
            snapshot.check(name)?.serves_alone(now)
        }
    };
    // Shutdown outranks everything, liveness included (grpc-go's `Shutdown` does the same).
    if snapshot.shutting_down_since().is_some() || !serving {
        Some(ServingStatus::NotServing)
    } else {
        Some(ServingStatus::Serving)
    }
}

/// Every known service name: `""`, the probes, then the checks in registration order.
pub(crate) fn known_services(snapshot: &Snapshot) -> Vec<String> {
    let mut names = vec![String::new()];
    names.extend(PROBE_SERVICES.iter().map(|name| (*name).to_owned()));
    names.extend(snapshot.checks().map(|check| check.name().to_owned()));
    names
}
