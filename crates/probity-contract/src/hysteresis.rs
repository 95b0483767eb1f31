//! Fall fast, rise slow: turning a stream of poll results into a stable healthy/unhealthy state.
//!
//! `fall` failures in a row take a check down, `rise` successes in a row bring it back, "so you
//! only let it back when you have evidence it stayed fixed". A dependency flapping every 30 s
//! then keeps the instance out instead of toggling it in and out of rotation with every flap
//! (the flapping incident).
//!
//! At boot a check has no evidence either way. It starts unhealthy and, by default, turns
//! healthy on its first success: a fresh instance joins rotation one poll after its
//! dependencies answer, rather than `(rise − 1) × interval` later (10 s with a 5 s interval).
//! `boot_requires_rise` asks for the full rise count at boot as well.
//!
//! This is the one state machine: probity's runtime feeds it poll results, and
//! `probity simulate` feeds it simulated ones, so the model and the product cannot drift.

/// Which side of the threshold a check is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Passing: counts toward readiness.
    Healthy,
    /// Failing: takes readiness down (by its tier).
    Unhealthy,
}

/// A state change caused by one observation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// Turned healthy.
    Rose,
    /// Turned unhealthy.
    Fell,
}

/// Per-check hysteresis state machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hysteresis {
    rise: u32,
    fall: u32,
    boot_requires_rise: bool,
    state: State,
    been_healthy: bool,
    consecutive_successes: u32,
    consecutive_failures: u32,
}

impl Hysteresis {
    /// A new machine, unhealthy and without history. `rise` and `fall` must be at least 1
    /// (probity's builder enforces it; here 0 is treated as 1).
    pub fn new(rise: u32, fall: u32, boot_requires_rise: bool) -> Self {
        Self {
            rise: rise.max(1),
            fall: fall.max(1),
            boot_requires_rise,
            state: State::Unhealthy,
            been_healthy: false,
            consecutive_successes: 0,
            consecutive_failures: 0,
        }
    }

    /// Feeds one poll result; returns the transition it caused, if any.
    pub fn observe(&mut self, ok: bool) -> Option<Transition> {
        if ok {
            self.consecutive_successes = self.consecutive_successes.saturating_add(1);
            self.consecutive_failures = 0;
            let needed = if self.been_healthy || self.boot_requires_rise {
                self.rise
            } else {
                1
            };
            if self.state == State::Unhealthy && self.consecutive_successes >= needed {
                self.state = State::Healthy;
                self.been_healthy = true;
                return Some(Transition::Rose);
            }
        } else {
            self.consecutive_failures = self.consecutive_failures.saturating_add(1);
            self.consecutive_successes = 0;
            if self.state == State::Healthy && self.consecutive_failures >= self.fall {
                self.state = State::Unhealthy;
                return Some(Transition::Fell);
            }
        }
        None
    }

    /// Forces the unhealthy state at once (passive reports of real failures); recovery still
    /// needs `rise` consecutive successful polls.
    pub fn force_unhealthy(&mut self) -> Option<Transition> {
        self.consecutive_successes = 0;
        let was = self.state;
        self.state = State::Unhealthy;
        // A forced failure is evidence enough: recovery needs the full rise count.
        self.been_healthy = true;
        (was == State::Healthy).then_some(Transition::Fell)
    }

    /// Consecutive successes needed to turn healthy again.
    pub fn rise(&self) -> u32 {
        self.rise
    }

    /// Consecutive failures needed to turn unhealthy.
    pub fn fall(&self) -> u32 {
        self.fall
    }

    /// The current state.
    pub fn state(&self) -> State {
        self.state
    }

    /// Whether the current state is healthy.
    pub fn is_healthy(&self) -> bool {
        self.state == State::Healthy
    }

    /// Successes in a row, including the latest observation.
    pub fn consecutive_successes(&self) -> u32 {
        self.consecutive_successes
    }

    /// Failures in a row, including the latest observation.
    pub fn consecutive_failures(&self) -> u32 {
        self.consecutive_failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_unhealthy_and_rises_on_first_success_at_boot() {
        let mut h = Hysteresis::new(3, 1, false);
        assert_eq!(h.state(), State::Unhealthy);
        assert_eq!(h.observe(true), Some(Transition::Rose));
        assert!(h.is_healthy());
    }

    #[test]
    fn boot_failures_do_not_count_as_history() {
        let mut h = Hysteresis::new(3, 1, false);
        assert_eq!(h.observe(false), None);
        assert_eq!(h.observe(false), None);
        assert_eq!(h.observe(true), Some(Transition::Rose));
    }

    #[test]
    fn boot_can_require_the_full_rise() {
        let mut h = Hysteresis::new(3, 1, true);
        assert_eq!(h.observe(true), None);
        assert_eq!(h.observe(true), None);
        assert_eq!(h.observe(true), Some(Transition::Rose));
    }

    #[test]
    fn falls_on_first_failure_and_rises_after_three_successes() {
        let mut h = Hysteresis::new(3, 1, false);
        h.observe(true);
        assert_eq!(h.observe(false), Some(Transition::Fell));
        assert_eq!(h.observe(true), None);
        assert_eq!(h.observe(true), None);
        assert_eq!(h.consecutive_successes(), 2);
        assert_eq!(h.observe(true), Some(Transition::Rose));
    }

    #[test]
    fn a_failure_resets_the_rise_count() {
        let mut h = Hysteresis::new(3, 1, false);
        h.observe(true);
        h.observe(false);
        h.observe(true);
        h.observe(true);
        assert_eq!(h.observe(false), None, "already unhealthy: no transition");
        assert_eq!(h.consecutive_successes(), 0);
        h.observe(true);
        h.observe(true);
        assert!(!h.is_healthy());
        assert_eq!(h.observe(true), Some(Transition::Rose));
    }

    #[test]
    fn fall_threshold_needs_consecutive_failures() {
        let mut h = Hysteresis::new(2, 3, false);
        h.observe(true);
        assert_eq!(h.observe(false), None);
        assert_eq!(h.observe(false), None);
        assert_eq!(h.observe(true), None, "a success resets the failure run");
        assert_eq!(h.observe(false), None);
        assert_eq!(h.observe(false), None);
        assert_eq!(h.observe(false), Some(Transition::Fell));
        assert_eq!(h.consecutive_failures(), 3);
    }

    #[test]
    fn forced_failure_needs_full_rise_to_recover() {
        let mut h = Hysteresis::new(3, 1, false);
        h.observe(true);
        assert_eq!(h.force_unhealthy(), Some(Transition::Fell));
        assert_eq!(h.force_unhealthy(), None);
        h.observe(true);
        h.observe(true);
        assert!(!h.is_healthy());
        assert_eq!(h.observe(true), Some(Transition::Rose));
    }

    #[test]
    fn forced_failure_before_first_success_needs_full_rise() {
        let mut h = Hysteresis::new(3, 1, false);
        assert_eq!(h.force_unhealthy(), None);
        assert_eq!(h.observe(true), None);
    }

    #[test]
    fn flapping_every_other_poll_never_rises() {
        let mut h = Hysteresis::new(3, 1, false);
        h.observe(true);
        let mut rises = 0;
        for i in 0..100 {
            if h.observe(i % 2 == 0) == Some(Transition::Rose) {
                rises += 1;
            }
        }
        assert_eq!(rises, 0);
        assert!(!h.is_healthy());
    }
}
