//! The clock the verdict runs on: a monotonic instant as the time since one origin, fixed for
//! the process.
//!
//! The contract's verdict is generic over its clock ([`probity_contract::verdict::Moment`]).
//! With `std::time::Instant` every age it takes is two calls into the standard library, which
//! the compiler cannot inline; with a `Duration` it is a comparison and a subtraction of
//! integers. A readiness decision takes one age per check, and a probe asks for one every time
//! it comes: the instants are converted once, when a result is published, and `now` once per
//! decision.

use std::sync::OnceLock;
use std::time::Duration;
use tokio::time::Instant;

/// A monotonic instant, as the time since the process's origin.
pub(crate) type Moment = Duration;

/// How far before the first instant the process reads the origin lies, the furthest the
/// platform's clock can go: no instant the process meets — a test's result "a minute ago"
/// included — is earlier.
const ORIGIN_BEFORE: [Duration; 4] = [
    Duration::from_secs(100 * 365 * 24 * 3600),
    Duration::from_secs(24 * 3600),
    Duration::from_secs(3600),
    Duration::ZERO,
];

fn origin() -> std::time::Instant {
    static ORIGIN: OnceLock<std::time::Instant> = OnceLock::new();
    *ORIGIN.get_or_init(|| {
        let now = std::time::Instant::now();
        ORIGIN_BEFORE
            .iter()
            .find_map(|&before| now.checked_sub(before))
            .unwrap_or(now)
    })
}

/// `at` on the verdict's clock.
pub(crate) fn moment(at: Instant) -> Moment {
    at.into_std().saturating_duration_since(origin())
}

/// The instant a moment stands for.
pub(crate) fn instant(moment: Moment) -> Instant {
    Instant::from_std(origin() + moment)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instant_survives_the_round_trip() {
        let now = Instant::now();
        let earlier = now - Duration::from_secs(60);
        assert_eq!(instant(moment(now)), now);
        assert_eq!(instant(moment(earlier)), earlier);
        assert_eq!(moment(now) - moment(earlier), Duration::from_secs(60));
    }
}
