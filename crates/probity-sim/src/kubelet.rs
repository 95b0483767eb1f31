//! The kubelet's prober and restart rules, as its code behaves.
//!
//! Sources (kubernetes/kubernetes, see `research/kubernetes-probes-and-load-balancers.md` §1):
//! - `pkg/kubelet/prober/worker_legacy.go` (`runLegacy`, `doProbeLegacy`): ticker, initial
//!   results, gating, thresholds, hold after a liveness/startup failure;
//! - `pkg/kubelet/kuberuntime/kuberuntime_manager.go` (`doBackOff`) and
//!   `staging/src/k8s.io/client-go/util/flowcontrol/backoff.go`: CrashLoopBackOff;
//! - `pkg/kubelet/kubelet.go`: backoff constants (10 s initial, 300 s cap, reset after a
//!   container ran 600 s).
//!
//! Everything here is pure state; the engine drives it with simulated time.

use crate::scenario::ProbeSpec;
use crate::time::Millis;
use probity::contract::ProbeKind;

/// A probe result as the kubelet's results manager stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeResult {
    /// The probe passed.
    Success,
    /// The probe failed (a bad status, a refused connection or a timeout).
    Failure,
    /// No result yet (the startup probe's initial value).
    Unknown,
}

/// The value the results manager holds for a new container, before any probe ran
/// (`worker_legacy.go`: `initialValue`): readiness starts failing, so a restarted container is
/// NotReady until it passes; liveness starts passing; startup is unknown.
pub fn initial_result(kind: ProbeKind) -> ProbeResult {
    match kind {
        ProbeKind::Readiness => ProbeResult::Failure,
        ProbeKind::Liveness => ProbeResult::Success,
        ProbeKind::Startup => ProbeResult::Unknown,
    }
}

/// What the kubelet knows about the container when a probe worker wakes up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContainerView {
    /// The container ID (a new one after each restart).
    pub id: u32,
    /// Whether it is running (`State.Running != nil`).
    pub running: bool,
    /// `State.Running.StartedAt`.
    pub started_at: Millis,
    /// `ContainerStatus.Started`: the startup probe passed, or there is none.
    pub started: bool,
}

/// Why a worker did not probe, or that it should.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Run the probe now.
    Probe,
    /// Held after a liveness or startup failure until a new container appears.
    OnHold,
    /// The container is not running; the result was set to Failure.
    NotRunning,
    /// Still inside `initialDelaySeconds`, counted from the container's start.
    InitialDelay,
    /// Liveness and readiness wait for the startup probe; startup stops once started.
    StartupGate,
}

/// One probe worker (one per container per probe type); it lives as long as the pod, across
/// container restarts.
#[derive(Debug, Clone)]
pub struct ProbeWorker {
    kind: ProbeKind,
    container_id: Option<u32>,
    last_result: ProbeResult,
    result_run: u32,
    on_hold: bool,
}

/// A value for the results manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetResult {
    /// The container it is about.
    pub container: u32,
    /// The value.
    pub result: ProbeResult,
}

impl ProbeWorker {
    /// A worker that has not yet seen a container.
    pub fn new(kind: ProbeKind) -> Self {
        ProbeWorker {
            kind,
            container_id: None,
            last_result: ProbeResult::Unknown,
            result_run: 0,
            on_hold: false,
        }
    }

    /// A worker that has long watched a healthy container: it saw `container` pass many times.
    pub fn settled(kind: ProbeKind, container: u32) -> Self {
        ProbeWorker {
            kind,
            container_id: Some(container),
            last_result: ProbeResult::Success,
            result_run: u32::MAX / 2,
            on_hold: false,
        }
    }

    /// The probe type.
    pub fn kind(&self) -> ProbeKind {
        self.kind
    }

    /// Whether the worker is holding after a liveness or startup failure.
    pub fn on_hold(&self) -> bool {
        self.on_hold
    }

    /// The run of identical results so far.
    pub fn result_run(&self) -> u32 {
        self.result_run
    }

    /// The container the worker is watching.
    pub fn container(&self) -> Option<u32> {
        self.container_id
    }

    /// The checks `doProbe` makes before probing, in its order. `set` receives the values the
    /// worker writes to the results manager on the way (an initial value for a new container;
    /// Failure for a container that is not running).
    pub fn gate(
        &mut self,
        spec: &ProbeSpec,
        now: Millis,
        container: Option<ContainerView>,
        set: &mut dyn FnMut(SetResult),
    ) -> Gate {
        // `if w.onHold { return true }` comes before anything else, but a new container ID
        // clears it; the legacy worker reads the status first, so model that order.
        let Some(container) = container else {
            return Gate::NotRunning;
        };
        if !container.running {
            // "Non-running container probed": the result is Failure.
            if let Some(id) = self.container_id {
                set(SetResult {
                    container: id,
                    result: ProbeResult::Failure,
                });
            }
            return Gate::NotRunning;
        }
        if self.container_id != Some(container.id) {
            // A new container: set the initial value and resume probing. `lastResult` and
            // `resultRun` are deliberately not reset (only `onHold` is), as in the kubelet.
            self.container_id = Some(container.id);
            set(SetResult {
                container: container.id,
                result: initial_result(self.kind),
            });
            self.on_hold = false;
        }
        if self.on_hold {
            return Gate::OnHold;
        }
        // `int32(time.Since(StartedAt).Seconds()) < InitialDelaySeconds`: whole seconds since
        // the container started, not since the startup probe passed (the docs say otherwise;
        // the code is what runs).
        let since_start_s = now.saturating_sub(container.started_at) / 1000;
        if since_start_s < spec.initial_delay / 1000 {
            return Gate::InitialDelay;
        }
        if container.started {
            if self.kind == ProbeKind::Startup {
                return Gate::StartupGate;
            }
        } else if self.kind != ProbeKind::Startup {
            return Gate::StartupGate;
        }
        Gate::Probe
    }

    /// Counts a probe result against the thresholds and returns the value to store, if the
    /// threshold is reached (`doProbeLegacy`):
    ///
    /// ```text
    /// if lastResult == result { resultRun++ } else { lastResult = result; resultRun = 1 }
    /// if (Failure && resultRun < F) || (Success && resultRun < S) { keep previous state }
    /// ```
    ///
    /// A liveness or startup failure that reaches the threshold puts the worker on hold until
    /// a new container appears, with `resultRun = 0`.
    pub fn record(&mut self, spec: &ProbeSpec, success: bool) -> Option<SetResult> {
        let container = self.container_id?;
        let result = if success {
            ProbeResult::Success
        } else {
            ProbeResult::Failure
        };
        if self.last_result == result {
            self.result_run = self.result_run.saturating_add(1);
        } else {
            self.last_result = result;
            self.result_run = 1;
        }
        let below = match result {
            ProbeResult::Failure => self.result_run < spec.failure_threshold,
            ProbeResult::Success => self.result_run < spec.success_threshold,
            ProbeResult::Unknown => true,
        };
        if below {
            return None;
        }
        if result == ProbeResult::Failure && self.kind != ProbeKind::Readiness {
            self.on_hold = true;
            self.result_run = 0;
        }
        Some(SetResult { container, result })
    }
}

/// When the kubelet starts a container that has exited (CrashLoopBackOff).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestartDecision {
    /// Start it now.
    StartNow,
    /// In backoff: try again at this time.
    WaitUntil(Millis),
}

/// The kubelet's per-container restart backoff (`flowcontrol.Backoff` with the kubelet's
/// settings: 10 s initial, ×2, 300 s cap, no jitter; an entry expires when the container ran
/// more than 600 s since the last restart).
#[derive(Debug, Clone)]
pub struct CrashLoopBackOff {
    initial: Millis,
    max: Millis,
    reset_after: Millis,
    entry: Option<BackoffEntry>,
}

#[derive(Debug, Clone, Copy)]
struct BackoffEntry {
    backoff: Millis,
    last_update: Millis,
}

impl Default for CrashLoopBackOff {
    fn default() -> Self {
        CrashLoopBackOff {
            initial: 10_000,
            max: 300_000,
            reset_after: 600_000,
            entry: None,
        }
    }
}

impl CrashLoopBackOff {
    /// The current backoff, if an entry exists.
    pub fn current(&self) -> Option<Millis> {
        self.entry.map(|entry| entry.backoff)
    }

    // `HasExpiredFunc = eventTime.Sub(lastUpdate) > 600s`, eventTime being the exited
    // container's FinishedAt.
    fn expired(&self, entry: &BackoffEntry, finished_at: Millis) -> bool {
        finished_at > entry.last_update.saturating_add(self.reset_after)
    }

    /// `IsInBackOffSince(key, FinishedAt)`.
    pub fn in_backoff_since(&self, finished_at: Millis, now: Millis) -> bool {
        match &self.entry {
            None => false,
            Some(entry) if self.expired(entry, finished_at) => false,
            Some(entry) => now.saturating_sub(finished_at) < entry.backoff,
        }
    }

    /// `Next(key, FinishedAt)`: start (or restart) the sequence, or double it.
    pub fn next(&mut self, finished_at: Millis, now: Millis) {
        let backoff = match &self.entry {
            Some(entry) if !self.expired(entry, finished_at) => (entry.backoff * 2).min(self.max),
            _ => self.initial,
        };
        self.entry = Some(BackoffEntry {
            backoff,
            last_update: now,
        });
    }

    /// `doBackOff`: given the FinishedAt of the newest exited instance of the container (none
    /// for a container that never exited), start now or wait.
    ///
    /// With no exited instance there is no backoff and no entry is created: the first
    /// liveness kill of a fresh container restarts at once (k8s issue #133472).
    pub fn decide(&mut self, newest_exited: Option<Millis>, now: Millis) -> RestartDecision {
        let Some(finished_at) = newest_exited else {
            return RestartDecision::StartNow;
        };
        if self.in_backoff_since(finished_at, now) {
            let backoff = self.entry.map_or(0, |entry| entry.backoff);
            return RestartDecision::WaitUntil(finished_at + backoff);
        }
        self.next(finished_at, now);
        RestartDecision::StartNow
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Handler;

    fn spec(failure: u32, success: u32) -> ProbeSpec {
        ProbeSpec {
            handler: Handler::Tcp,
            initial_delay: 0,
            period: 10_000,
            timeout: 1_000,
            success_threshold: success,
            failure_threshold: failure,
            termination_grace: None,
        }
    }

    fn running(id: u32, started_at: Millis, started: bool) -> Option<ContainerView> {
        Some(ContainerView {
            id,
            running: true,
            started_at,
            started,
        })
    }

    #[test]
    fn initial_results_follow_the_kubelet() {
        assert_eq!(initial_result(ProbeKind::Readiness), ProbeResult::Failure);
        assert_eq!(initial_result(ProbeKind::Liveness), ProbeResult::Success);
        assert_eq!(initial_result(ProbeKind::Startup), ProbeResult::Unknown);
    }

    #[test]
    fn a_new_container_gets_its_initial_value() {
        let mut worker = ProbeWorker::new(ProbeKind::Readiness);
        let mut sets = Vec::new();
        let gate = worker.gate(&spec(3, 1), 0, running(1, 0, true), &mut |s| sets.push(s));
        assert_eq!(gate, Gate::Probe);
        assert_eq!(
            sets,
            vec![SetResult {
                container: 1,
                result: ProbeResult::Failure
            }]
        );
    }

    #[test]
    fn failures_count_only_when_consecutive() {
        let spec = spec(3, 1);
        let mut worker = ProbeWorker::new(ProbeKind::Readiness);
        worker.gate(&spec, 0, running(1, 0, true), &mut |_| {});
        assert!(worker.record(&spec, false).is_none());
        assert!(worker.record(&spec, false).is_none());
        // A success in between restarts the count.
        assert_eq!(
            worker.record(&spec, true).map(|s| s.result),
            Some(ProbeResult::Success)
        );
        assert!(worker.record(&spec, false).is_none());
        assert!(worker.record(&spec, false).is_none());
        assert_eq!(
            worker.record(&spec, false).map(|s| s.result),
            Some(ProbeResult::Failure)
        );
        // Readiness keeps probing and keeps reporting failures past the threshold.
        assert_eq!(
            worker.record(&spec, false).map(|s| s.result),
            Some(ProbeResult::Failure)
        );
        assert!(!worker.on_hold());
    }

    #[test]
    fn success_threshold_counts_consecutive_successes() {
        let spec = spec(1, 3);
        let mut worker = ProbeWorker::new(ProbeKind::Readiness);
        worker.gate(&spec, 0, running(1, 0, true), &mut |_| {});
        assert_eq!(
            worker.record(&spec, false).map(|s| s.result),
            Some(ProbeResult::Failure)
        );
        assert!(worker.record(&spec, true).is_none());
        assert!(worker.record(&spec, true).is_none());
        assert_eq!(
            worker.record(&spec, true).map(|s| s.result),
            Some(ProbeResult::Success)
        );
    }

    #[test]
    fn liveness_failure_holds_until_a_new_container() {
        let spec = spec(2, 1);
        let mut worker = ProbeWorker::new(ProbeKind::Liveness);
        worker.gate(&spec, 0, running(1, 0, true), &mut |_| {});
        assert!(worker.record(&spec, false).is_none());
        assert_eq!(
            worker.record(&spec, false).map(|s| s.result),
            Some(ProbeResult::Failure)
        );
        assert!(worker.on_hold());
        assert_eq!(worker.result_run(), 0);
        assert_eq!(
            worker.gate(&spec, 5_000, running(1, 0, true), &mut |_| {}),
            Gate::OnHold
        );
        // The restarted container clears the hold and gets liveness's initial Success.
        let mut sets = Vec::new();
        assert_eq!(
            worker.gate(&spec, 6_000, running(2, 6_000, true), &mut |s| sets.push(s)),
            Gate::Probe
        );
        assert_eq!(sets[0].result, ProbeResult::Success);
    }

    #[test]
    fn result_run_carries_over_to_a_new_container() {
        // lastResult/resultRun are not reset on a new container ID (worker_legacy.go).
        let spec = spec(3, 2);
        let mut worker = ProbeWorker::new(ProbeKind::Readiness);
        worker.gate(&spec, 0, running(1, 0, true), &mut |_| {});
        assert!(worker.record(&spec, true).is_none());
        worker.gate(&spec, 1_000, running(2, 1_000, true), &mut |_| {});
        assert_eq!(
            worker.record(&spec, true).map(|s| s.result),
            Some(ProbeResult::Success)
        );
    }

    #[test]
    fn startup_gates_liveness_and_readiness() {
        let spec = spec(3, 1);
        for kind in [ProbeKind::Liveness, ProbeKind::Readiness] {
            let mut worker = ProbeWorker::new(kind);
            assert_eq!(
                worker.gate(&spec, 0, running(1, 0, false), &mut |_| {}),
                Gate::StartupGate
            );
            assert_eq!(
                worker.gate(&spec, 0, running(1, 0, true), &mut |_| {}),
                Gate::Probe
            );
        }
        let mut startup = ProbeWorker::new(ProbeKind::Startup);
        assert_eq!(
            startup.gate(&spec, 0, running(1, 0, false), &mut |_| {}),
            Gate::Probe
        );
        assert_eq!(
            startup.gate(&spec, 0, running(1, 0, true), &mut |_| {}),
            Gate::StartupGate
        );
    }

    #[test]
    fn initial_delay_counts_from_container_start_in_whole_seconds() {
        let mut spec = spec(3, 1);
        spec.initial_delay = 20_000;
        let mut worker = ProbeWorker::new(ProbeKind::Liveness);
        // Started at 5 s: 19.9 s later truncates to 19 < 20.
        assert_eq!(
            worker.gate(&spec, 24_900, running(1, 5_000, true), &mut |_| {}),
            Gate::InitialDelay
        );
        assert_eq!(
            worker.gate(&spec, 25_000, running(1, 5_000, true), &mut |_| {}),
            Gate::Probe
        );
        // Counted from the container's start even when a startup probe passed later: a
        // container started 30 s ago is past a 20 s delay the moment it is Started.
        let mut worker = ProbeWorker::new(ProbeKind::Readiness);
        assert_eq!(
            worker.gate(&spec, 30_000, running(1, 0, true), &mut |_| {}),
            Gate::Probe
        );
    }

    #[test]
    fn a_non_running_container_reads_as_failure() {
        let spec = spec(3, 1);
        let mut worker = ProbeWorker::new(ProbeKind::Readiness);
        worker.gate(&spec, 0, running(1, 0, true), &mut |_| {});
        let mut sets = Vec::new();
        let view = Some(ContainerView {
            id: 1,
            running: false,
            started_at: 0,
            started: false,
        });
        assert_eq!(
            worker.gate(&spec, 1_000, view, &mut |s| sets.push(s)),
            Gate::NotRunning
        );
        assert_eq!(sets[0].result, ProbeResult::Failure);
    }

    /// A container that crashes one second after each start.
    fn crash_loop_delays(crashes: usize) -> Vec<Millis> {
        let mut backoff = CrashLoopBackOff::default();
        let mut now = 0;
        let mut delays = Vec::new();
        for _ in 0..crashes {
            now += 1_000; // runs one second, then exits
            let finished = now;
            let start = match backoff.decide(Some(finished), now) {
                RestartDecision::StartNow => now,
                RestartDecision::WaitUntil(until) => {
                    assert_eq!(
                        backoff.decide(Some(finished), until),
                        RestartDecision::StartNow
                    );
                    until
                }
            };
            delays.push((start - finished) / 1000);
            now = start;
        }
        delays
    }

    #[test]
    fn crash_loop_backoff_doubles_to_five_minutes() {
        assert_eq!(
            crash_loop_delays(9),
            vec![0, 10, 20, 40, 80, 160, 300, 300, 300]
        );
    }

    #[test]
    fn backoff_resets_after_ten_minutes_of_running() {
        let mut backoff = CrashLoopBackOff::default();
        assert_eq!(
            backoff.decide(Some(1_000), 1_000),
            RestartDecision::StartNow
        );
        assert_eq!(
            backoff.decide(Some(2_000), 2_000),
            RestartDecision::WaitUntil(12_000)
        );
        assert_eq!(
            backoff.decide(Some(2_000), 12_000),
            RestartDecision::StartNow
        );
        assert_eq!(backoff.current(), Some(20_000));
        // Ran 601 s after that restart: the entry has expired, back to 10 s.
        let finished = 12_000 + 601_000;
        assert_eq!(
            backoff.decide(Some(finished), finished),
            RestartDecision::StartNow
        );
        assert_eq!(backoff.current(), Some(10_000));
        // Ran 599 s: no reset, the sequence goes on.
        let mut backoff = CrashLoopBackOff::default();
        backoff.decide(Some(1_000), 1_000);
        backoff.decide(Some(2_000), 12_000);
        let finished = 12_000 + 599_000;
        assert!(matches!(
            backoff.decide(Some(finished), finished),
            RestartDecision::WaitUntil(_)
        ));
    }

    #[test]
    fn first_liveness_kill_restarts_without_creating_an_entry() {
        let mut backoff = CrashLoopBackOff::default();
        assert_eq!(backoff.decide(None, 30_000), RestartDecision::StartNow);
        assert_eq!(backoff.current(), None);
        // The second kill sees the first dead instance: no entry yet, so it starts at once and
        // the entry begins at 10 s.
        assert_eq!(
            backoff.decide(Some(30_000), 60_000),
            RestartDecision::StartNow
        );
        assert_eq!(backoff.current(), Some(10_000));
        // A kill 30 s after the previous one is past a 10 s and a 20 s backoff: immediate.
        assert_eq!(
            backoff.decide(Some(60_000), 90_000),
            RestartDecision::StartNow
        );
        assert_eq!(
            backoff.decide(Some(90_000), 120_000),
            RestartDecision::StartNow
        );
        assert_eq!(backoff.current(), Some(40_000));
        // Now 30 s < 40 s: the kill happens, the start waits.
        assert_eq!(
            backoff.decide(Some(120_000), 150_000),
            RestartDecision::WaitUntil(160_000)
        );
    }
}
