//! The kubelet's probe worker, as its code behaves: initial results, startup gating,
//! consecutive thresholds, the hold after a liveness or startup failure, and timeouts counted
//! as failures.
//!
//! Sources (kubernetes/kubernetes):
//! - `pkg/kubelet/prober/worker.go` (`run`, `doProbe`; `worker_legacy.go` in the newest
//!   trees): one worker per container per probe type, its initial value, the order of its
//!   checks, the threshold counting and the hold;
//! - `pkg/kubelet/prober/prober_manager.go` (`UpdatePodStatus`): `Started`, container
//!   readiness, and the manual trigger of a readiness probe that has not passed;
//! - `pkg/kubelet/prober/prober.go` and `pkg/probe/http/http.go`: what counts as success, and
//!   a timeout counted as a failure ("Convert errors into failures to catch timeouts");
//! - <https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#types-of-probe>: a
//!   container without a probe reads as Success.
//!
//! Times are [`Duration`]s since an origin the caller chooses (the start of a simulated run,
//! the start of a drill).

use super::probe::ProbeTiming;
use crate::probe::ProbeKind;
use std::time::Duration;

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

/// The value the results manager holds for a new container before any probe ran
/// (`worker.go` `initialValue`): readiness starts failing, so a restarted container is
/// NotReady until it passes; liveness starts passing; startup is unknown.
pub fn initial_result(kind: ProbeKind) -> ProbeResult {
    match kind {
        ProbeKind::Readiness => ProbeResult::Failure,
        ProbeKind::Liveness => ProbeResult::Success,
        ProbeKind::Startup => ProbeResult::Unknown,
    }
}

/// The result a container has for a probe type it does not declare: Success, for all three.
pub const RESULT_WITHOUT_PROBE: ProbeResult = ProbeResult::Success;

/// `ContainerStatus.Started`: the startup probe passed, or there is none (`UpdatePodStatus`:
/// `started = !exists` without a startup worker). `startup` is the startup probe's result,
/// `None` when the container has no startup probe.
pub fn started(running: bool, startup: Option<ProbeResult>) -> bool {
    running && startup.is_none_or(|result| result == ProbeResult::Success)
}

/// Container Ready = running ∧ Started ∧ (readiness Success, or no readiness probe).
/// `readiness` is the readiness probe's result, `None` when there is none.
pub fn container_ready(running: bool, started: bool, readiness: Option<ProbeResult>) -> bool {
    running && started && readiness.is_none_or(|result| result == ProbeResult::Success)
}

/// Whether an HTTP probe passes with this status: 200 ≤ status < 400 (`pkg/probe/http`).
pub fn http_status_passes(status: u16) -> bool {
    (200..400).contains(&status)
}

/// What a probed endpoint did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Response {
    /// It answered after `after`, passing or not.
    Answered {
        /// Time to the answer.
        after: Duration,
        /// Whether the answer passes (a 2xx/3xx status, `SERVING`, exit code 0, a connect).
        passed: bool,
    },
    /// It never answered.
    Hung,
}

/// A probe's result and when the worker has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Time from the probe's start to its result.
    pub after: Duration,
    /// Whether it passed.
    pub success: bool,
}

/// What a probe with `timeout` makes of a response: an answer at or past the timeout, or
/// none at all, is a Failure at the timeout (the HTTP client's `Timeout` covers connect,
/// headers and body; gRPC and exec probes take one deadline of `timeoutSeconds`).
pub fn outcome(response: Response, timeout: Duration) -> Outcome {
    match response {
        Response::Answered { after, passed } if after < timeout => Outcome {
            after,
            success: passed,
        },
        _ => Outcome {
            after: timeout,
            success: false,
        },
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
    pub started_at: Duration,
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
    /// The container is not running; its result was set to Failure.
    NotRunning,
    /// Still inside `initialDelaySeconds`, counted from the container's start.
    InitialDelay,
    /// Liveness and readiness wait for the startup probe; startup stops once started.
    StartupGate,
}

/// A value the worker writes to the results manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetResult {
    /// The container it is about.
    pub container: u32,
    /// The value.
    pub result: ProbeResult,
}

/// What [`ProbeWorker::gate`] decided, and the value it wrote on the way, if any (the
/// initial value for a new container, or Failure for one that is not running).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gated {
    /// Probe now, or why not.
    pub gate: Gate,
    /// A value for the results manager.
    pub set: Option<SetResult>,
}

/// One probe worker (one per container per probe type). It lives as long as the pod, across
/// container restarts.
#[derive(Debug, Clone)]
pub struct ProbeWorker {
    kind: ProbeKind,
    container_id: Option<u32>,
    last_result: ProbeResult,
    result_run: u32,
    on_hold: bool,
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

    /// A worker that has long watched a healthy container: it saw `container` pass many
    /// times (a fleet that has run for a while before the story starts).
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

    /// The checks `doProbe` makes before probing, in its order.
    pub fn gate(
        &mut self,
        timing: &ProbeTiming,
        now: Duration,
        container: Option<ContainerView>,
    ) -> Gated {
        let Some(container) = container else {
            return Gated {
                gate: Gate::NotRunning,
                set: None,
            };
        };
        if !container.running {
            // "Non-running container probed": the result is Failure.
            return Gated {
                gate: Gate::NotRunning,
                set: self.container_id.map(|id| SetResult {
                    container: id,
                    result: ProbeResult::Failure,
                }),
            };
        }
        let mut set = None;
        if self.container_id != Some(container.id) {
            // A new container: set the initial value and resume probing. `lastResult` and
            // `resultRun` are deliberately not reset (only `onHold` is), as in the kubelet.
            self.container_id = Some(container.id);
            set = Some(SetResult {
                container: container.id,
                result: initial_result(self.kind),
            });
            self.on_hold = false;
        }
        let gate = if self.on_hold {
            Gate::OnHold
        } else if (now.saturating_sub(container.started_at).as_secs())
            < timing.initial_delay.as_secs()
        {
            // `int32(time.Since(StartedAt).Seconds()) < InitialDelaySeconds`: whole seconds
            // since the container started, not since the startup probe passed (the docs say
            // otherwise; the code is what runs).
            Gate::InitialDelay
        } else if container.started == (self.kind == ProbeKind::Startup) {
            // Started: the startup worker is done. Not started: the others wait.
            Gate::StartupGate
        } else {
            Gate::Probe
        };
        Gated { gate, set }
    }

    /// Counts a probe result against the thresholds and returns the value to store, if the
    /// threshold is reached (`doProbe`):
    ///
    /// ```text
    /// if lastResult == result { resultRun++ } else { lastResult = result; resultRun = 1 }
    /// if (Failure && resultRun < F) || (Success && resultRun < S) { keep previous state }
    /// ```
    ///
    /// A liveness or startup failure that reaches the threshold puts the worker on hold
    /// until a new container appears, with `resultRun = 0`.
    pub fn record(&mut self, timing: &ProbeTiming, success: bool) -> Option<SetResult> {
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
            ProbeResult::Failure => self.result_run < timing.failure_threshold,
            ProbeResult::Success => self.result_run < timing.success_threshold,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn timing(failure: u32, success: u32) -> ProbeTiming {
        ProbeTiming {
            failure_threshold: failure,
            success_threshold: success,
            ..ProbeTiming::default()
        }
    }

    fn secs(value: u64) -> Duration {
        Duration::from_secs(value)
    }

    fn running(id: u32, started_at: Duration, started: bool) -> Option<ContainerView> {
        Some(ContainerView {
            id,
            running: true,
            started_at,
            started,
        })
    }

    fn result(set: Option<SetResult>) -> Option<ProbeResult> {
        set.map(|set| set.result)
    }

    #[test]
    fn initial_results_follow_the_kubelet() {
        assert_eq!(initial_result(ProbeKind::Readiness), ProbeResult::Failure);
        assert_eq!(initial_result(ProbeKind::Liveness), ProbeResult::Success);
        assert_eq!(initial_result(ProbeKind::Startup), ProbeResult::Unknown);
        assert_eq!(RESULT_WITHOUT_PROBE, ProbeResult::Success);
    }

    #[test]
    fn readiness_needs_running_started_and_success() {
        assert!(container_ready(true, true, None));
        assert!(container_ready(true, true, Some(ProbeResult::Success)));
        assert!(!container_ready(true, true, Some(ProbeResult::Failure)));
        assert!(!container_ready(true, false, None));
        assert!(!container_ready(false, true, None));
        assert!(started(true, None));
        assert!(!started(true, Some(ProbeResult::Unknown)));
        assert!(started(true, Some(ProbeResult::Success)));
        assert!(!started(false, None));
    }

    #[test]
    fn a_timeout_is_a_failure_at_the_timeout() {
        let timeout = secs(1);
        let quick = Response::Answered {
            after: Duration::from_millis(20),
            passed: true,
        };
        assert_eq!(
            outcome(quick, timeout),
            Outcome {
                after: Duration::from_millis(20),
                success: true
            }
        );
        let slow = Response::Answered {
            after: secs(1),
            passed: true,
        };
        assert_eq!(
            outcome(slow, timeout),
            Outcome {
                after: timeout,
                success: false
            }
        );
        assert_eq!(outcome(Response::Hung, timeout).after, timeout);
        assert!(http_status_passes(200) && http_status_passes(399));
        assert!(!http_status_passes(400) && !http_status_passes(199));
    }

    #[test]
    fn a_new_container_gets_its_initial_value() {
        let mut worker = ProbeWorker::new(ProbeKind::Readiness);
        let gated = worker.gate(
            &timing(3, 1),
            Duration::ZERO,
            running(1, Duration::ZERO, true),
        );
        assert_eq!(gated.gate, Gate::Probe);
        assert_eq!(
            gated.set,
            Some(SetResult {
                container: 1,
                result: ProbeResult::Failure
            })
        );
    }

    #[test]
    fn failures_count_only_when_consecutive() {
        let timing = timing(3, 1);
        let mut worker = ProbeWorker::new(ProbeKind::Readiness);
        worker.gate(&timing, Duration::ZERO, running(1, Duration::ZERO, true));
        assert!(worker.record(&timing, false).is_none());
        assert!(worker.record(&timing, false).is_none());
        // A success in between restarts the count.
        assert_eq!(
            result(worker.record(&timing, true)),
            Some(ProbeResult::Success)
        );
        assert!(worker.record(&timing, false).is_none());
        assert!(worker.record(&timing, false).is_none());
        assert_eq!(
            result(worker.record(&timing, false)),
            Some(ProbeResult::Failure)
        );
        // Readiness keeps probing and keeps reporting failures past the threshold.
        assert_eq!(
            result(worker.record(&timing, false)),
            Some(ProbeResult::Failure)
        );
        assert!(!worker.on_hold());
    }

    #[test]
    fn success_threshold_counts_consecutive_successes() {
        let timing = timing(1, 3);
        let mut worker = ProbeWorker::new(ProbeKind::Readiness);
        worker.gate(&timing, Duration::ZERO, running(1, Duration::ZERO, true));
        assert_eq!(
            result(worker.record(&timing, false)),
            Some(ProbeResult::Failure)
        );
        assert!(worker.record(&timing, true).is_none());
        assert!(worker.record(&timing, true).is_none());
        assert_eq!(
            result(worker.record(&timing, true)),
            Some(ProbeResult::Success)
        );
    }

    #[test]
    fn liveness_failure_holds_until_a_new_container() {
        let timing = timing(2, 1);
        let mut worker = ProbeWorker::new(ProbeKind::Liveness);
        worker.gate(&timing, Duration::ZERO, running(1, Duration::ZERO, true));
        assert!(worker.record(&timing, false).is_none());
        assert_eq!(
            result(worker.record(&timing, false)),
            Some(ProbeResult::Failure)
        );
        assert!(worker.on_hold());
        assert_eq!(worker.result_run(), 0);
        assert_eq!(
            worker
                .gate(&timing, secs(5), running(1, Duration::ZERO, true))
                .gate,
            Gate::OnHold
        );
        // The restarted container clears the hold and gets liveness's initial Success.
        let gated = worker.gate(&timing, secs(6), running(2, secs(6), true));
        assert_eq!(gated.gate, Gate::Probe);
        assert_eq!(result(gated.set), Some(ProbeResult::Success));
    }

    #[test]
    fn result_run_carries_over_to_a_new_container() {
        // lastResult/resultRun are not reset on a new container ID.
        let timing = timing(3, 2);
        let mut worker = ProbeWorker::new(ProbeKind::Readiness);
        worker.gate(&timing, Duration::ZERO, running(1, Duration::ZERO, true));
        assert!(worker.record(&timing, true).is_none());
        worker.gate(&timing, secs(1), running(2, secs(1), true));
        assert_eq!(
            result(worker.record(&timing, true)),
            Some(ProbeResult::Success)
        );
    }

    #[test]
    fn startup_gates_liveness_and_readiness() {
        let timing = timing(3, 1);
        for kind in [ProbeKind::Liveness, ProbeKind::Readiness] {
            let mut worker = ProbeWorker::new(kind);
            let not_started = running(1, Duration::ZERO, false);
            assert_eq!(
                worker.gate(&timing, Duration::ZERO, not_started).gate,
                Gate::StartupGate
            );
            let started = running(1, Duration::ZERO, true);
            assert_eq!(
                worker.gate(&timing, Duration::ZERO, started).gate,
                Gate::Probe
            );
        }
        let mut startup = ProbeWorker::new(ProbeKind::Startup);
        let not_started = running(1, Duration::ZERO, false);
        assert_eq!(
            startup.gate(&timing, Duration::ZERO, not_started).gate,
            Gate::Probe
        );
        let started = running(1, Duration::ZERO, true);
        assert_eq!(
            startup.gate(&timing, Duration::ZERO, started).gate,
            Gate::StartupGate
        );
    }

    #[test]
    fn initial_delay_counts_from_container_start_in_whole_seconds() {
        let timing = ProbeTiming {
            initial_delay: secs(20),
            ..ProbeTiming::default()
        };
        let mut worker = ProbeWorker::new(ProbeKind::Liveness);
        // Started at 5 s: 19.9 s later truncates to 19 < 20.
        let view = running(1, secs(5), true);
        assert_eq!(
            worker
                .gate(&timing, Duration::from_millis(24_900), view)
                .gate,
            Gate::InitialDelay
        );
        assert_eq!(worker.gate(&timing, secs(25), view).gate, Gate::Probe);
        // Counted from the container's start even when a startup probe passed later: a
        // container started 30 s ago is past a 20 s delay the moment it is Started.
        let mut worker = ProbeWorker::new(ProbeKind::Readiness);
        assert_eq!(
            worker
                .gate(&timing, secs(30), running(1, Duration::ZERO, true))
                .gate,
            Gate::Probe
        );
    }

    #[test]
    fn a_non_running_container_reads_as_failure() {
        let timing = timing(3, 1);
        let mut worker = ProbeWorker::new(ProbeKind::Readiness);
        worker.gate(&timing, Duration::ZERO, running(1, Duration::ZERO, true));
        let view = Some(ContainerView {
            id: 1,
            running: false,
            started_at: Duration::ZERO,
            started: false,
        });
        let gated = worker.gate(&timing, secs(1), view);
        assert_eq!(gated.gate, Gate::NotRunning);
        assert_eq!(result(gated.set), Some(ProbeResult::Failure));
        // Before any container, there is nothing to set.
        let mut fresh = ProbeWorker::new(ProbeKind::Readiness);
        assert_eq!(
            fresh.gate(&timing, secs(1), None),
            Gated {
                gate: Gate::NotRunning,
                set: None
            }
        );
    }
}
