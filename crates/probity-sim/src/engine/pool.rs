//! A pod's connection pool as a bounded queue.
//!
//! Requests arrive at the pod's share of the traffic; each that calls the dependency holds
//! one of the pool's `size` connections for `hold` on average, and one that finds none idle
//! waits. As a queue with `size` servers (M/M/c), the offered load is `a = λ × hold`
//! connections' worth of work, and while `a < size` the pool keeps up: waits are short and
//! rare. The question a readiness check asks decides what it sees:
//!
//! - "is a connection idle right now?" is false with the probability that every connection
//!   is in use at a random instant, Erlang's C formula `C(size, a)`: at 80% utilisation of 5
//!   connections that is more than half the time, and the check fails a busy, healthy pod;
//! - "can a request get a connection within its budget?" is false with the probability that
//!   the wait exceeds the budget, `C(size, a) · e^{−(size − a)·budget/hold}`: negligible until
//!   the pool cannot keep up (`a ≥ size`), when the queue grows without bound.
//!
//! A leaked pool has no connection at all: both checks fail.

/// Erlang's C formula: the probability that all `size` connections are busy, for an offered
/// load of `offered` connections (computed through Erlang B, which is stable for any size).
fn erlang_c(size: u32, offered: f64) -> f64 {
    if offered <= 0.0 {
        return 0.0;
    }
    let servers = f64::from(size);
    if offered >= servers {
        return 1.0;
    }
    let mut blocking = 1.0;
    for server in 1..=size {
        blocking = offered * blocking / (f64::from(server) + offered * blocking);
    }
    servers * blocking / (servers - offered * (1.0 - blocking))
}

/// The probability that no connection is idle at a random instant.
pub(super) fn all_busy(size: u32, offered: f64) -> f64 {
    erlang_c(size, offered)
}

/// The probability that a request waits longer than `budget` for a connection.
pub(super) fn wait_exceeds(size: u32, offered: f64, hold: f64, budget: f64) -> f64 {
    let servers = f64::from(size);
    if offered >= servers {
        return 1.0;
    }
    erlang_c(size, offered) * (-(servers - offered) * budget / hold.max(f64::MIN_POSITIVE)).exp()
}

/// The fraction of requests that get a connection within `timeout`: all but those waiting
/// longer while the pool keeps up; its capacity's share (`size / a`) once it cannot.
pub(super) fn served(size: u32, offered: f64, hold: f64, timeout: f64) -> f64 {
    let servers = f64::from(size);
    if offered >= servers {
        return servers / offered;
    }
    1.0 - wait_exceeds(size, offered, hold, timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erlang_c_matches_known_values() {
        // One server: the probability of waiting is the utilisation.
        assert!((erlang_c(1, 0.5) - 0.5).abs() < 1e-12);
        // Two servers at a = 1: C = 1/3.
        assert!((erlang_c(2, 1.0) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(erlang_c(5, 0.0), 0.0);
        assert_eq!(erlang_c(5, 5.0), 1.0);
    }

    #[test]
    fn a_busy_pool_is_often_full_but_rarely_slow() {
        // 5 connections, 80% used, 10 ms per request.
        let busy = all_busy(5, 4.0);
        assert!(busy > 0.5, "{busy}");
        let slow = wait_exceeds(5, 4.0, 10.0, 500.0);
        assert!(slow < 1e-12, "{slow}");
        assert!(served(5, 4.0, 10.0, 1_000.0) > 0.999_999);
        // Past its capacity, the pool serves its capacity and the rest time out.
        assert!((served(5, 6.0, 10.0, 1_000.0) - 5.0 / 6.0).abs() < 1e-12);
        assert_eq!(wait_exceeds(5, 6.0, 10.0, 500.0), 1.0);
    }
}
