//! The app's health policy: what each endpoint answers, and the pollers that keep the
//! cached snapshot its checks are read from.
//!
//! This is probity's model of a service: checks polled on their own cadence with a timeout,
//! a result turned into a stable state by hysteresis (fall fast, rise slow), a snapshot that
//! probes read without waiting, stale results counted as failures, tiers (a hard check fails
//! readiness, a soft one only warns), startup and shutdown gates. An endpoint in `sync` mode
//! instead calls each dependency while the probe waits (the "deep check" the incidents warn
//! about).

use super::Sim;
use super::pod::Container;
use super::queue::Event;
use crate::scenario::{Check, CheckTarget, EndpointMode, Handler, InternalKind};
use crate::time::Millis;
use probity_contract::Tier;

/// Fall fast, rise slow: the same state machine as probity's `Hysteresis`. A check with no
/// history turns healthy on its first success, unless its first healthy state at boot must
/// also be a full `rise` run.
#[derive(Debug, Clone, Copy)]
pub(super) struct Hysteresis {
    rise: u32,
    fall: u32,
    boot_requires_rise: bool,
    healthy: bool,
    been_healthy: bool,
    successes: u32,
    failures: u32,
}

impl Hysteresis {
    /// Unhealthy, without history.
    pub(super) fn new(rise: u32, fall: u32, boot_requires_rise: bool) -> Self {
        Hysteresis {
            rise: rise.max(1),
            fall: fall.max(1),
            boot_requires_rise,
            healthy: false,
            been_healthy: false,
            successes: 0,
            failures: 0,
        }
    }

    /// One poll result.
    pub(super) fn observe(&mut self, success: bool) {
        if success {
            self.successes = self.successes.saturating_add(1);
            self.failures = 0;
            let needed = if self.been_healthy || self.boot_requires_rise {
                self.rise
            } else {
                1
            };
            if !self.healthy && self.successes >= needed {
                self.healthy = true;
                self.been_healthy = true;
            }
        } else {
            self.failures = self.failures.saturating_add(1);
            self.successes = 0;
            if self.healthy && self.failures >= self.fall {
                self.healthy = false;
            }
        }
    }

    /// Unhealthy at once (passive reports of real failures); recovery needs a full `rise`.
    /// Returns whether this turned the check unhealthy.
    pub(super) fn force_unhealthy(&mut self) -> bool {
        let fell = self.healthy;
        self.successes = 0;
        self.healthy = false;
        self.been_healthy = true;
        fell
    }

    /// Whether the check counts as healthy.
    pub(super) fn is_healthy(&self) -> bool {
        self.healthy
    }

    /// Healthy with no failure counted: a success changes nothing.
    pub(super) fn success_changes_nothing(&self) -> bool {
        self.healthy && self.failures == 0
    }
}

/// One check's state in one process.
#[derive(Debug, Clone)]
pub(super) struct CheckState {
    pub(super) hysteresis: Hysteresis,
    pub(super) last_result_at: Option<Millis>,
    /// When the check last turned unhealthy after having been healthy (for fail-open).
    pub(super) unhealthy_since: Option<Millis>,
    /// Bumped to cancel the scheduled poll when a re-poll takes its place.
    pub(super) poll_epoch: u32,
    /// A poll is in flight.
    pub(super) polling: bool,
    /// A re-poll was asked for while a poll was in flight: it runs when that one ends.
    pub(super) repoll: bool,
}

impl CheckState {
    /// A check that has not run yet.
    pub(super) fn fresh(check: &Check) -> Self {
        CheckState {
            hysteresis: Hysteresis::new(check.rise, check.fall, check.boot_requires_rise),
            last_result_at: None,
            unhealthy_since: None,
            poll_epoch: 0,
            polling: false,
            repoll: false,
        }
    }

    /// A check that has long been passing (a full `rise` of successes, the last at 0).
    pub(super) fn settled(check: &Check) -> Self {
        let mut state = CheckState::fresh(check);
        for _ in 0..check.rise.max(1) {
            state.hysteresis.observe(true);
        }
        state.last_result_at = Some(0);
        state
    }
}

impl CheckState {
    /// Records when a healthy check turned unhealthy (and forgets it once healthy again).
    pub(super) fn note_state(&mut self, was_healthy: bool, now: Millis) {
        if self.hysteresis.is_healthy() {
            self.unhealthy_since = None;
        } else if was_healthy {
            self.unhealthy_since = Some(now);
        }
    }

    /// Whether a failing hard check still fails open at `now`: it was healthy, and turned
    /// unhealthy less than `fail_open_for` ago.
    fn fails_open(&self, fail_open_for: Option<Millis>, now: Millis) -> bool {
        match (fail_open_for, self.unhealthy_since) {
            (Some(window), Some(since)) => now.saturating_sub(since) < window,
            _ => false,
        }
    }
}

impl Sim<'_> {
    /// Starts the pollers of a new process; in a settled fleet they run at random phases.
    pub(super) fn start_pollers(&mut self, pod: usize, process: u32, steady: bool) {
        for (check, spec) in self.scenario.app.checks.iter().enumerate() {
            if !self.polled[check] {
                continue;
            }
            let offset = if steady {
                self.rng.u64(0..spec.interval)
            } else {
                0
            };
            self.queue.schedule(
                self.now + offset,
                Event::PollStart {
                    pod: pod as u32,
                    check: check as u16,
                    process,
                    epoch: 0,
                },
            );
            self.poller_scheduled(pod, check, process, 0);
        }
    }

    /// A poll begins: it calls the dependency, and the next poll is scheduled an interval
    /// (with jitter) after this one started, or when it ends if it runs longer. Polls never
    /// overlap.
    pub(super) fn poll_start(&mut self, pod: usize, check: usize, process: u32, epoch: u32) {
        let Some(lane) = self.current_poll(pod, check, process, epoch) else {
            return;
        };
        let spec = &self.scenario.app.checks[check];
        let CheckTarget::Dependency(dependency) = spec.target else {
            return;
        };
        let (interval, jitter, timeout) = (spec.interval, spec.jitter, spec.timeout);
        // A pool that cannot fail the call need not be looked at.
        let asks = (spec.uses_pool && !lane.pool_clear())
            .then_some((spec.pool_check, spec.acquire_budget));
        let (latency, answered) = self.call_dependency(pod, dependency, asks, true);
        let (cost, success) = match timeout {
            Some(limit) if latency > limit => (limit, false),
            _ => (latency, answered),
        };
        let wait = if jitter > 0 {
            let spread = self.rng.u64(0..=2 * jitter);
            (interval + spread).saturating_sub(jitter)
        } else {
            interval
        };
        let next = (self.now + wait).max(self.now + cost);
        if cost == 0 {
            self.poll_done(pod, check, process, success);
        } else {
            // The result takes its place in the queue now, even if it never needs it.
            let order = self.queue.reserve();
            if !(success && lane.quiet())
                && let Some(state) = self.pods[pod].process.as_mut()
            {
                state.checks[check].polling = true;
                self.queue.schedule_in_order(
                    self.now + cost,
                    order,
                    Event::PollDone {
                        pod: pod as u32,
                        check: check as u16,
                        process,
                        success,
                    },
                );
                self.refresh_poll_key(pod, check);
            }
        }
        self.queue.schedule(
            next.max(self.now + 1),
            Event::PollStart {
                pod: pod as u32,
                check: check as u16,
                process,
                epoch,
            },
        );
        self.poller_scheduled(pod, check, process, epoch);
    }

    /// A poll's result: the hysteresis decides whether the check's state changes.
    pub(super) fn poll_done(&mut self, pod: usize, check: usize, process: u32, success: bool) {
        let now = self.now;
        let Some(state) = self.pods[pod].process.as_mut() else {
            return;
        };
        if state.id != process {
            return;
        }
        let check_state = &mut state.checks[check];
        check_state.polling = false;
        check_state.last_result_at = Some(now);
        let was_healthy = check_state.hysteresis.is_healthy();
        check_state.hysteresis.observe(success);
        check_state.note_state(was_healthy, now);
        let changed = was_healthy != check_state.hysteresis.is_healthy();
        let repoll = std::mem::take(&mut check_state.repoll);
        self.refresh_poll_key(pod, check);
        if changed {
            self.check_state_changed(pod);
        }
        // A re-poll asked for during this poll runs as soon as it is recorded.
        if repoll {
            self.repoll(pod, check);
        }
    }

    /// Polls now instead of at the next tick (probity's `wake`): a poll in flight finishes
    /// first; the cadence then counts from the re-poll.
    pub(super) fn repoll(&mut self, pod: usize, check: usize) {
        if !self.polled[check] {
            return;
        }
        let Some(state) = self.pods[pod].process.as_mut() else {
            return;
        };
        let check_state = &mut state.checks[check];
        if check_state.polling {
            check_state.repoll = true;
            self.refresh_poll_key(pod, check);
            return;
        }
        check_state.poll_epoch += 1;
        let (process, epoch) = (state.id, check_state.poll_epoch);
        self.refresh_poll_key(pod, check);
        self.poll_start(pod, check, process, epoch);
    }

    /// A call to an endpoint with a caller timeout: the time until the caller has an
    /// answer, and whether it passed.
    pub(super) fn respond_within(
        &mut self,
        pod: usize,
        handler: Handler,
        timeout: Millis,
    ) -> (Millis, bool) {
        let answer = self.respond(pod, handler);
        super::probing::within(answer, timeout)
    }

    /// What the pod answers a call: `None` when the call hangs, else the latency and
    /// whether the answer passes (2xx).
    pub(super) fn respond(&mut self, pod: usize, handler: Handler) -> Option<(Millis, bool)> {
        let now = self.now;
        let state = &self.pods[pod];
        let Some(process) = state.process.as_ref() else {
            return Some((0, false)); // connection refused
        };
        if state.container == Container::Waiting || !process.listening {
            return Some((0, false));
        }
        let Handler::Http { endpoint } = handler else {
            // TCP: the kernel completes the handshake whatever the handlers do.
            return Some((0, true));
        };
        if process.stalled {
            return None;
        }
        let scenario = self.scenario;
        let endpoint = &scenario.app.endpoints[endpoint];
        if let Some(deadlocked_at) = process.deadlocked_at {
            let detector = endpoint.checks.iter().find_map(|&check| {
                let spec = &scenario.app.checks[check];
                (spec.target == CheckTarget::Internal(InternalKind::Deadlock))
                    .then_some(spec.detect_after)
            });
            return match detector {
                // The detector's thread answers once it has seen the deadlock.
                Some(detect) if now >= deadlocked_at + detect => Some((0, false)),
                _ => None,
            };
        }
        let mut passed_all = true;
        let mut total: Millis = 0;
        let mut longest: Millis = 0;
        for &check in &endpoint.checks {
            let spec = &scenario.app.checks[check];
            let passed = match spec.target {
                CheckTarget::Internal(kind) => {
                    let process = self.pods[pod].process.as_ref()?;
                    match kind {
                        InternalKind::Boot => process.booted,
                        InternalKind::Shutdown => process.sigterm_at.is_none_or(|at| now < at),
                        InternalKind::Deadlock
                        | InternalKind::RuntimeStall
                        | InternalKind::AppState => true,
                    }
                }
                CheckTarget::Dependency(dependency) => match endpoint.mode {
                    EndpointMode::Cached => {
                        let process = self.pods[pod].process.as_ref()?;
                        let state = &process.checks[check];
                        // A result older than the staleness bound reads as a failure.
                        let fresh = match (spec.staleness, state.last_result_at) {
                            (Some(limit), Some(at)) => now.saturating_sub(at) <= limit,
                            (Some(_), None) => false,
                            (None, _) => true,
                        };
                        (state.hysteresis.is_healthy() && fresh)
                            || state.fails_open(spec.fail_open_for, now)
                    }
                    EndpointMode::Sync => {
                        let timeout = endpoint.timeout.or(spec.timeout);
                        let asks = spec
                            .uses_pool
                            .then_some((spec.pool_check, spec.acquire_budget));
                        let (latency, answered) = self.call_dependency(pod, dependency, asks, true);
                        let (cost, passed) = match timeout {
                            Some(limit) if latency > limit => (limit, false),
                            _ => (latency, answered),
                        };
                        if timeout.is_none() && latency >= 1_000 {
                            self.hold_inflight(pod, now + latency, dependency);
                        }
                        total += cost;
                        longest = longest.max(cost);
                        passed
                    }
                },
            };
            if !passed && spec.tier == Tier::Hard {
                passed_all = false;
            }
        }
        Some((if endpoint.parallel { longest } else { total }, passed_all))
    }
}
