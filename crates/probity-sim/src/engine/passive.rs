//! Passive reports: the application reports the outcome of every real call to a checked
//! dependency (probity's `Reporter`); a run of `passive_failure_threshold` failures in a row
//! fails the check at once and wakes its poller, so an exhausted pool drains its pod in
//! milliseconds rather than at the next poll.
//!
//! Reports are a fluid, like the traffic that makes them. While every call fails, a pod's
//! run counts failures in a row and the check is failed at each multiple of the threshold;
//! while only some fail, the run counts calls toward the expected number before a run of
//! threshold failures in a row; while none fail, reported successes keep it at zero.
//!
//! A pod's reports arrive in proportion to its share of the traffic, which changes whenever
//! any pod joins or leaves rotation. Rather than re-time every run then, runs advance on the
//! traffic's share clock (the integral of the share of one unit of weight): a run's next
//! failure is a point on that clock, kept in a heap, and only the earliest is turned into a
//! real time.

use super::effects::Effects;
use super::queue::Event;
use super::traffic::{Split, Traffic};
use crate::scenario::CheckTarget;
use crate::time::Millis;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A check fed by passive reports.
#[derive(Debug, Clone, Copy)]
pub(super) struct PassiveCheck {
    pub(super) check: usize,
    pub(super) dependency: usize,
    pub(super) threshold: u32,
}

/// One process's run of failed real calls for one passive check. A pod's runs start anew
/// with each process ([`Passive::new_process`]); they are read only while that process lives.
#[derive(Debug, Clone)]
pub(super) struct PassiveRun {
    /// Failures (or calls, under partial failure) counted up to the marks.
    run: f64,
    /// The share clocks when `run` was last brought up to date.
    unit_mark: f64,
    everyone_mark: f64,
    /// Reports of the current conditions count from here (a failing call takes time to be
    /// reported).
    from: Millis,
    /// Waiting for `from`.
    waiting: bool,
    /// Fraction of calls to the dependency that succeed.
    available: f64,
    /// Time from a request to the report of its failed call.
    delay: Millis,
    /// The next report resets the run (the current conditions have successes).
    reset: bool,
    /// Reports per millisecond per unit of share: the request rate times the fraction of
    /// requests that reach this dependency.
    reach: f64,
    /// The pod's traffic weight.
    weight: f64,
    /// The `run` at which the check is failed next.
    target: f64,
    /// Bumped when the run is re-timed; stale heap entries and resumes are skipped.
    pub(super) epoch: u32,
}

impl PassiveRun {
    /// A run with no report yet.
    pub(super) fn new() -> Self {
        PassiveRun {
            run: 0.0,
            unit_mark: 0.0,
            everyone_mark: 0.0,
            from: 0,
            waiting: false,
            available: 1.0,
            delay: 0,
            reset: false,
            reach: 0.0,
            weight: 0.0,
            target: 0.0,
            epoch: 0,
        }
    }

    /// Counts the reports that arrived up to the share clocks `unit` and `everyone`.
    fn account(&mut self, unit: f64, everyone: f64) {
        if self.waiting {
            return;
        }
        let reports =
            self.reach * (self.weight * (unit - self.unit_mark) + (everyone - self.everyone_mark));
        if reports > 0.0 {
            if self.reset {
                self.run = 0.0;
                self.reset = false;
            }
            if self.available < 1.0 {
                self.run += reports;
            }
        }
        self.unit_mark = unit;
        self.everyone_mark = everyone;
    }

    /// New conditions at `now`: the fraction of calls that succeed and how long a failing
    /// call takes to be reported.
    fn enter(&mut self, available: f64, delay: Millis, now: Millis) {
        if available == self.available && delay == self.delay {
            return;
        }
        if available <= 0.0 && self.available <= 0.0 {
            // Still failing: the run goes on (only the cause changed).
            return;
        }
        if available <= 0.0 {
            // Every call fails from now on. If no request reported anything since the last
            // failures, the run goes on; otherwise `run` holds either zero (a success reset
            // it) or calls counted toward a partial failure's expected run, which are not
            // failures in a row: start from zero.
            if !self.reset {
                self.run = 0.0;
            }
            self.reset = false;
        } else {
            // Some calls succeed: the first report resets the run.
            self.reset = true;
        }
        self.available = available;
        self.delay = delay;
        self.from = now + delay;
        self.waiting = delay > 0;
    }

    /// The `run` at which the check is failed next: the next multiple of the threshold while
    /// every call fails; while only a fraction `q` fails, the expected number of calls before
    /// `n` failures in a row, `(1 − qⁿ) / ((1 − q) qⁿ)`; `None` while no call fails.
    fn next_target(&self, threshold: u32) -> Option<f64> {
        let count = f64::from(threshold);
        if self.available <= 0.0 {
            Some(((self.run / count).floor() + 1.0) * count)
        } else if self.available >= 1.0 {
            None
        } else {
            let all_fail = (1.0 - self.available).powi(threshold.min(i32::MAX as u32) as i32);
            let expected = (1.0 - all_fail) / (self.available * all_fail);
            expected.is_finite().then_some(expected)
        }
    }
}

/// A run's next failure, as a point on the share clock in force.
#[derive(Debug, Clone, Copy)]
struct Due {
    clock: f64,
    pod: u32,
    passive: u16,
    process: u32,
    epoch: u32,
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Due {}

impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Due {
    /// Reversed, so the heap's top is the earliest; ties by pod, then check.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .clock
            .total_cmp(&self.clock)
            .then_with(|| other.pod.cmp(&self.pod))
            .then_with(|| other.passive.cmp(&self.passive))
    }
}

/// Every passive check and the runs' schedule.
#[derive(Debug, Default)]
pub(super) struct Passive {
    pub(super) checks: Vec<PassiveCheck>,
    /// Each pod's runs, `checks` apiece, of its current process.
    runs: Vec<PassiveRun>,
    due: BinaryHeap<Due>,
    /// The real time the earliest run is due, as scheduled.
    scheduled: Option<Millis>,
    epoch: u32,
}

impl Passive {
    /// The passive checks of a scenario: those with a threshold, read from the snapshot.
    pub(super) fn new(scenario: &crate::scenario::Scenario, polled: &[bool]) -> Self {
        let checks: Vec<PassiveCheck> = scenario
            .app
            .checks
            .iter()
            .enumerate()
            .filter(|(check, _)| polled[*check])
            .filter_map(
                |(check, spec)| match (spec.target, spec.passive_failure_threshold) {
                    (CheckTarget::Dependency(dependency), Some(threshold)) if threshold > 0 => {
                        Some(PassiveCheck {
                            check,
                            dependency,
                            threshold,
                        })
                    }
                    _ => None,
                },
            )
            .collect();
        Passive {
            runs: vec![PassiveRun::new(); checks.len() * scenario.fleet.replicas],
            checks,
            ..Passive::default()
        }
    }

    /// A new process in `pod`: its runs have no report yet.
    pub(super) fn new_process(&mut self, pod: usize) {
        let count = self.checks.len();
        for run in &mut self.runs[pod * count..(pod + 1) * count] {
            *run = PassiveRun::new();
        }
    }

    /// The run of passive check `passive` in `pod`'s process.
    fn run(&mut self, pod: usize, passive: usize) -> &mut PassiveRun {
        &mut self.runs[pod * self.checks.len() + passive]
    }

    /// The epoch of that run.
    fn run_epoch(&self, pod: usize, passive: usize) -> u32 {
        self.runs[pod * self.checks.len() + passive].epoch
    }

    /// Brings `pod`'s runs up to date at `now` with its conditions: for each checked
    /// dependency, the fraction of calls to it that succeed, how long a failure takes to be
    /// reported and the reports per millisecond per unit of share (`conditions`; none while
    /// the pod does not serve: nothing runs its handlers). `process` is the pod's (none: no
    /// process, no runs).
    pub(super) fn update(
        &mut self,
        (pod, process): (usize, Option<u32>),
        conditions: &dyn Fn(usize) -> Option<(f64, Millis, f64)>,
        traffic: &Traffic,
        now: Millis,
        effects: &mut Effects,
    ) {
        let Some(process) = process.filter(|_| !self.checks.is_empty()) else {
            return;
        };
        let (unit, everyone) = traffic.share_clocks();
        let weight = traffic.flows[pod].weight;
        for passive in 0..self.checks.len() {
            let conditions = conditions(self.checks[passive].dependency);
            let run = self.run(pod, passive);
            run.account(unit, everyone);
            match conditions {
                Some((available, delay, reach)) => {
                    run.enter(available, delay, now);
                    run.reach = reach;
                }
                None => run.reach = 0.0,
            }
            if !run.waiting {
                // Reports of these conditions count from now on.
                run.unit_mark = unit;
                run.everyone_mark = everyone;
            }
            run.weight = weight;
            run.epoch += 1;
            if run.waiting {
                let (from, epoch) = (run.from, run.epoch);
                effects.schedule(
                    from,
                    Event::PassiveResume {
                        pod: pod as u32,
                        check: passive as u16,
                        process,
                        epoch,
                    },
                );
            } else {
                self.time_run(pod, passive, process, traffic);
            }
        }
    }

    /// Reports of the conditions a run of `process` entered start to arrive; `current` is
    /// the pod's process now. Returns whether the run resumed (the schedule of the runs due
    /// is then out of date).
    pub(super) fn resume(
        &mut self,
        (pod, passive): (usize, usize),
        (process, epoch): (u32, u32),
        current: Option<u32>,
        traffic: &Traffic,
    ) -> bool {
        let (unit, everyone) = traffic.share_clocks();
        let Some(current) = current else {
            return false;
        };
        let run = self.run(pod, passive);
        if current != process || run.epoch != epoch || !run.waiting {
            return false;
        }
        run.waiting = false;
        run.unit_mark = unit;
        run.everyone_mark = everyone;
        self.time_run(pod, passive, current, traffic);
        true
    }

    /// Puts the next failure of `pod`'s run (of `process`) on the share clock in force (none
    /// while no call fails or no request reaches the pod).
    pub(super) fn time_run(&mut self, pod: usize, passive: usize, process: u32, traffic: &Traffic) {
        let threshold = self.checks[passive].threshold;
        let (unit, everyone) = traffic.share_clocks();
        let everyone_mode = traffic.split() == Split::Everyone;
        let run = self.run(pod, passive);
        if run.waiting {
            return;
        }
        let Some(target) = run.next_target(threshold) else {
            return;
        };
        run.target = target;
        let counted = if run.reset { 0.0 } else { run.run };
        let needed = (target - counted).max(0.0);
        let (per_clock, clock) = if everyone_mode {
            (run.reach, everyone)
        } else {
            (run.reach * run.weight, unit)
        };
        if per_clock <= 0.0 {
            return;
        }
        let epoch = run.epoch;
        self.due.push(Due {
            clock: clock + needed / per_clock,
            pod: pod as u32,
            passive: passive as u16,
            process,
            epoch,
        });
    }

    /// Schedules the real time of the earliest run due at `now`, at the share clock's
    /// current rate (none past `end`); `process_of` tells each pod's process now.
    pub(super) fn schedule_due(
        &mut self,
        process_of: &dyn Fn(usize) -> Option<u32>,
        traffic: &Traffic,
        (now, end): (Millis, Millis),
        effects: &mut Effects,
    ) {
        while let Some(top) = self.due.peek() {
            let current = process_of(top.pod as usize) == Some(top.process)
                && self.run_epoch(top.pod as usize, usize::from(top.passive)) == top.epoch;
            if current {
                break;
            }
            self.due.pop();
        }
        let due_at = self.due.peek().and_then(|top| {
            let (clock, rate) = traffic.share_clock_now();
            (rate > 0.0).then(|| {
                let wait = ((top.clock - clock) / rate).max(0.0).ceil();
                if wait.is_finite() && wait < (u64::MAX / 2) as f64 {
                    now + wait as Millis
                } else {
                    Millis::MAX
                }
            })
        });
        if due_at == self.scheduled {
            return;
        }
        self.scheduled = due_at;
        self.epoch += 1;
        if let Some(due_at) = due_at.filter(|due_at| *due_at < end) {
            effects.schedule(due_at, Event::PassiveDue { epoch: self.epoch });
        }
    }

    /// The earliest run is due (the [`Event::PassiveDue`] of `epoch`): the threshold-th
    /// failure in a row was reported. Returns the pod, the passive check and its check when
    /// the run is still current (`process_of` tells each pod's process now): probity's
    /// `Reporter::failure` then records a forced failure. `None` for a stale event, which
    /// leaves the schedule alone (`Some(None)` otherwise).
    pub(super) fn due(
        &mut self,
        epoch: u32,
        process_of: &dyn Fn(usize) -> Option<u32>,
        traffic: &Traffic,
    ) -> Option<Option<(usize, usize, usize)>> {
        if epoch != self.epoch {
            return None;
        }
        self.scheduled = None;
        let top = self.due.pop()?;
        let (pod, passive) = (top.pod as usize, usize::from(top.passive));
        let check = self.checks[passive].check;
        let (unit, everyone) = traffic.share_clocks();
        if process_of(pod) != Some(top.process) || self.run_epoch(pod, passive) != top.epoch {
            return Some(None);
        }
        let run = self.run(pod, passive);
        run.account(unit, everyone);
        run.reset = false;
        if run.available <= 0.0 {
            run.run = run.run.max(run.target);
        } else {
            run.run = 0.0;
        }
        run.epoch += 1;
        Some(Some((pod, passive, check)))
    }
}
