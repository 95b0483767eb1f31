//! Connection-pool capacity: the figures every pool check reads, and the rule that judges them.
//!
//! A `SELECT 1` succeeds on a pool whose every connection is leaked, as long as the check
//! itself can get one (seed 000's outage). Capacity is what tells an exhausted pool from a
//! healthy one, so every pool check in this crate reads the pool's own gauges (no I/O, no
//! checkout) and judges them with [`Capacity::judge`]:
//!
//! - **no connection available and requests waiting** fails: `no connection available: 5 of 5 in
//!   use, 3 waiting`. Pools that do not report waiters (sqlx) fail as soon as none is available,
//!   because the next request would wait;
//! - **utilization above the configured limit** fails: `utilization 90% is above the 80% limit:
//!   9 of 10 in use`;
//! - otherwise the figures are reported as measurements.
//!
//! [`Capacity`] is public so a check for a pool this crate does not cover can use the same rule.
//!
//! ```
//! use probity_checks::pool::Capacity;
//!
//! let leaked = Capacity { in_use: 5, idle: 0, max: 5, waiting: Some(3) };
//! let error = leaked.judge(None).unwrap_err();
//! assert_eq!(error.message(), "no connection available: 5 of 5 in use, 3 waiting");
//!
//! let fine = Capacity { in_use: 2, idle: 1, max: 5, waiting: Some(0) };
//! let detail = fine.judge(Some(80.0)).unwrap();
//! assert_eq!(detail.message.as_deref(), Some("2 of 5 in use, 1 idle, 3 available"));
//! ```

use probity::{CheckError, Detail};

/// A pool's figures at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capacity {
    /// Connections checked out by the application.
    pub in_use: u64,
    /// Open connections sitting idle in the pool.
    pub idle: u64,
    /// The most connections the pool may open.
    pub max: u64,
    /// Requests waiting for a connection, where the pool reports it (`None` when it does not).
    pub waiting: Option<u64>,
}

impl Capacity {
    /// Open connections, idle or in use.
    pub fn size(&self) -> u64 {
        self.in_use + self.idle
    }

    /// Connections a request could get without waiting: the idle ones plus the ones the pool
    /// may still open.
    pub fn available(&self) -> u64 {
        self.idle + self.max.saturating_sub(self.size())
    }

    /// Connections in use as a percentage of the pool's maximum (100 for a pool of size 0).
    pub fn utilization(&self) -> f64 {
        if self.max == 0 {
            return 100.0;
        }
        self.in_use as f64 * 100.0 / self.max as f64
    }

    /// Judges the figures: fails when no connection is available and requests wait (or the
    /// pool cannot say whether they wait), or when utilization is above `max_utilization`
    /// percent. On success the figures are returned as measurements.
    pub fn judge(&self, max_utilization: Option<f64>) -> Result<Detail, CheckError> {
        let in_use = format!("{} of {} in use", self.in_use, self.max);
        if self.available() == 0 && self.waiting.is_none_or(|waiting| waiting > 0) {
            let message = match self.waiting {
                Some(waiting) => format!("no connection available: {in_use}, {waiting} waiting"),
                None => format!("no connection available: {in_use}"),
            };
            return Err(self.measure_error(CheckError::new(message)));
        }
        if let Some(limit) = max_utilization {
            let utilization = self.utilization();
            if utilization > limit {
                let mut message = format!(
                    "utilization {}% is above the {}% limit: {in_use}",
                    percent(utilization),
                    percent(limit)
                );
                if let Some(waiting) = self.waiting.filter(|&waiting| waiting > 0) {
                    message.push_str(&format!(", {waiting} waiting"));
                }
                return Err(self.measure_error(CheckError::new(message)));
            }
        }
        let message = format!(
            "{in_use}, {} idle, {} available",
            self.idle,
            self.available()
        );
        Ok(self.measure_detail(Detail::new().message(message)))
    }

    /// Adds the figures to a success: `connections` (in use), `idle`, `available`, `size`,
    /// `max`, `utilization` (percent) and, where reported, `waiting`.
    pub fn measure_detail(&self, mut detail: Detail) -> Detail {
        for (name, value, unit) in self.figures() {
            detail = detail.measurement(name, value, unit);
        }
        detail
    }

    /// Adds the same figures to a failure.
    pub fn measure_error(&self, mut error: CheckError) -> CheckError {
        for (name, value, unit) in self.figures() {
            error = error.measurement(name, value, unit);
        }
        error
    }

    fn figures(&self) -> Vec<(&'static str, f64, Option<&'static str>)> {
        let mut figures = vec![
            ("connections", self.in_use as f64, None),
            ("idle", self.idle as f64, None),
            ("available", self.available() as f64, None),
            ("size", self.size() as f64, None),
            ("max", self.max as f64, None),
            ("utilization", round(self.utilization()), Some("percent")),
        ];
        if let Some(waiting) = self.waiting {
            figures.push(("waiting", waiting as f64, None));
        }
        figures
    }
}

fn round(value: f64) -> f64 {
    (value * 10.0).round() / 10.0
}

/// `80`, `66.7`: whole percentages without a fraction, others to one decimal.
fn percent(value: f64) -> String {
    let rounded = round(value);
    if rounded.fract() == 0.0 {
        format!("{rounded:.0}")
    } else {
        format!("{rounded:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capacity(in_use: u64, idle: u64, max: u64, waiting: Option<u64>) -> Capacity {
        Capacity {
            in_use,
            idle,
            max,
            waiting,
        }
    }

    #[test]
    fn exhausted_with_waiters_fails_naming_the_figures() {
        let error = capacity(5, 0, 5, Some(3)).judge(None).unwrap_err();
        assert_eq!(
            error.message(),
            "no connection available: 5 of 5 in use, 3 waiting"
        );
        let waiting = error.measurements().iter().find(|m| m.name == "waiting");
        assert_eq!(waiting.map(|m| m.value), Some(3.0));
    }

    #[test]
    fn exhausted_without_a_waiter_count_fails() {
        let error = capacity(4, 0, 4, None).judge(None).unwrap_err();
        assert_eq!(error.message(), "no connection available: 4 of 4 in use");
    }

    #[test]
    fn full_but_nobody_waiting_passes_unless_over_the_limit() {
        assert!(capacity(5, 0, 5, Some(0)).judge(None).is_ok());
        let error = capacity(5, 0, 5, Some(0)).judge(Some(80.0)).unwrap_err();
        assert_eq!(
            error.message(),
            "utilization 100% is above the 80% limit: 5 of 5 in use"
        );
    }

    #[test]
    fn growth_room_counts_as_available() {
        let figures = capacity(3, 0, 10, None);
        assert_eq!(figures.available(), 7);
        let detail = figures.judge(None).unwrap();
        assert_eq!(
            detail.message.as_deref(),
            Some("3 of 10 in use, 0 idle, 7 available")
        );
        let utilization = detail
            .measurements
            .iter()
            .find(|m| m.name == "utilization")
            .unwrap();
        assert_eq!(utilization.value, 30.0);
        assert_eq!(utilization.unit.as_deref(), Some("percent"));
    }

    #[test]
    fn utilization_limit_is_exclusive_and_formats_fractions() {
        assert!(capacity(8, 2, 10, None).judge(Some(80.0)).is_ok());
        let error = capacity(2, 0, 3, None).judge(Some(50.0)).unwrap_err();
        assert_eq!(
            error.message(),
            "utilization 66.7% is above the 50% limit: 2 of 3 in use"
        );
    }
}
