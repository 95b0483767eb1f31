//! CrashLoopBackOff: when the kubelet starts a container that has exited.
//!
//! Sources (kubernetes/kubernetes):
//! - `pkg/kubelet/kubelet.go`: the kubelet's backoff, `flowcontrol.NewBackOff(10s, 300s)`
//!   (`initialCrashLoopBackOff`, `MaxCrashLoopBackOff`), whose entries expire when
//!   `eventTime.Sub(lastUpdate) > 600s`;
//! - `staging/src/k8s.io/client-go/util/flowcontrol/backoff.go`: `Next` (double, capped, no
//!   jitter), `IsInBackOffSince`;
//! - `pkg/kubelet/kuberuntime/kuberuntime_manager.go` (`doBackOff`): the FinishedAt of the
//!   newest exited instance decides; none means no backoff and no entry;
//! - `pkg/kubelet/pod_workers.go` (`completeWork`): before v1.35 a pod in backoff was retried
//!   every `wait.Jitter(10s, 0.5)`;
//! - <https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#container-restarts>:
//!   "exponential backoff delay (10s, 20s, 40s, …), capped at 300 seconds … Once a container
//!   has executed for 10 minutes without any problems, the kubelet resets the restart backoff
//!   timer".
//!
//! The effective delays after consecutive crashes are 0 (the first restart has no entry yet),
//! 10, 20, 40, 80, 160, 300, 300, … seconds.

use std::time::Duration;

/// The first backoff (`initialCrashLoopBackOff`).
pub const INITIAL: Duration = Duration::from_secs(10);
/// The cap (`MaxCrashLoopBackOff`, `v1beta1.MaxContainerBackOff`).
pub const MAX: Duration = Duration::from_secs(300);
/// An entry expires when the container ran longer than this since the restart that last
/// updated it.
pub const RESET_AFTER: Duration = Duration::from_secs(600);
/// Before v1.35, a pod in backoff is retried every `wait.Jitter(10s, 0.5)`: between this and
/// 1.5 times this (`pod_workers.go`; kubernetes issue 123602).
pub const POD_WORKER_RETRY: Duration = Duration::from_secs(10);
/// The jitter factor of [`POD_WORKER_RETRY`].
pub const POD_WORKER_RETRY_JITTER: f64 = 0.5;

/// When the kubelet starts a container that has exited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestartDecision {
    /// Start it now.
    StartNow,
    /// In backoff: it may start at this time.
    WaitUntil(Duration),
}

/// The documented delay before restart number `restart` (1-based) of a container that keeps
/// crashing soon after each start: 0, 10 s, 20 s, … 300 s. A caller with the real times
/// should use [`CrashLoopBackOff::decide`], which also resets after 10 minutes of running.
pub fn nominal_delay(restart: u32) -> Duration {
    if restart <= 1 {
        return Duration::ZERO;
    }
    let doublings = (restart - 2).min(16);
    INITIAL.saturating_mul(1 << doublings).min(MAX)
}

/// One container's backoff entry (the kubelet keys it by pod, container name, image and
/// resources; changing the image starts a fresh one).
#[derive(Debug, Clone, Default)]
pub struct CrashLoopBackOff {
    entry: Option<Entry>,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    backoff: Duration,
    last_update: Duration,
}

impl CrashLoopBackOff {
    /// The current backoff, if an entry exists.
    pub fn current(&self) -> Option<Duration> {
        self.entry.map(|entry| entry.backoff)
    }

    // `HasExpiredFunc`: eventTime (the exited container's FinishedAt) − lastUpdate > 600 s.
    fn expired(entry: &Entry, finished_at: Duration) -> bool {
        finished_at > entry.last_update.saturating_add(RESET_AFTER)
    }

    /// `IsInBackOffSince(key, FinishedAt)`.
    pub(crate) fn in_backoff_since(&self, finished_at: Duration, now: Duration) -> bool {
        match &self.entry {
            None => false,
            Some(entry) if Self::expired(entry, finished_at) => false,
            Some(entry) => now.saturating_sub(finished_at) < entry.backoff,
        }
    }

    /// `Next(key, FinishedAt)`: start (or restart) the sequence, or double it.
    pub fn next(&mut self, finished_at: Duration, now: Duration) {
        let backoff = match &self.entry {
            Some(entry) if !Self::expired(entry, finished_at) => {
                entry.backoff.saturating_mul(2).min(MAX)
            }
            _ => INITIAL,
        };
        self.entry = Some(Entry {
            backoff,
            last_update: now,
        });
    }

    /// `doBackOff`: given the FinishedAt of the newest exited instance of the container
    /// (`None` for a container that never exited), start now or wait.
    ///
    /// With no exited instance there is no backoff and no entry is created: the first
    /// liveness kill of a fresh container restarts at once (kubernetes issue 133472). A
    /// liveness kill is decided in the same sync as the kill, on the pre-kill status, whose
    /// newest exited instance is the one before: repeated kills restart at once until the
    /// backoff outgrows the time between them.
    pub fn decide(&mut self, newest_exited: Option<Duration>, now: Duration) -> RestartDecision {
        let Some(finished_at) = newest_exited else {
            return RestartDecision::StartNow;
        };
        if self.in_backoff_since(finished_at, now) {
            let backoff = self.current().unwrap_or_default();
            return RestartDecision::WaitUntil(finished_at + backoff);
        }
        self.next(finished_at, now);
        RestartDecision::StartNow
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(value: u64) -> Duration {
        Duration::from_secs(value)
    }

    /// A container that crashes one second after each start.
    fn crash_loop_delays(crashes: usize) -> Vec<u64> {
        let mut backoff = CrashLoopBackOff::default();
        let mut now = Duration::ZERO;
        let mut delays = Vec::new();
        for _ in 0..crashes {
            now += secs(1); // runs one second, then exits
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
            delays.push((start - finished).as_secs());
            now = start;
        }
        delays
    }

    #[test]
    fn crash_loop_backoff_doubles_to_five_minutes() {
        let expected = vec![0, 10, 20, 40, 80, 160, 300, 300, 300];
        assert_eq!(crash_loop_delays(9), expected);
        let nominal: Vec<u64> = (1..=9).map(|n| nominal_delay(n).as_secs()).collect();
        assert_eq!(nominal, expected);
        assert_eq!(nominal_delay(u32::MAX), MAX);
    }

    #[test]
    fn backoff_resets_after_ten_minutes_of_running() {
        let mut backoff = CrashLoopBackOff::default();
        assert_eq!(
            backoff.decide(Some(secs(1)), secs(1)),
            RestartDecision::StartNow
        );
        assert_eq!(
            backoff.decide(Some(secs(2)), secs(2)),
            RestartDecision::WaitUntil(secs(12))
        );
        assert_eq!(
            backoff.decide(Some(secs(2)), secs(12)),
            RestartDecision::StartNow
        );
        assert_eq!(backoff.current(), Some(secs(20)));
        // Ran 601 s after that restart: the entry has expired, back to 10 s.
        let finished = secs(12 + 601);
        assert_eq!(
            backoff.decide(Some(finished), finished),
            RestartDecision::StartNow
        );
        assert_eq!(backoff.current(), Some(secs(10)));
        // Ran 599 s: no reset, the sequence goes on.
        let mut backoff = CrashLoopBackOff::default();
        backoff.decide(Some(secs(1)), secs(1));
        backoff.decide(Some(secs(2)), secs(12));
        let finished = secs(12 + 599);
        assert!(matches!(
            backoff.decide(Some(finished), finished),
            RestartDecision::WaitUntil(_)
        ));
    }

    #[test]
    fn first_liveness_kill_restarts_without_creating_an_entry() {
        let mut backoff = CrashLoopBackOff::default();
        assert_eq!(backoff.decide(None, secs(30)), RestartDecision::StartNow);
        assert_eq!(backoff.current(), None);
        // The second kill sees the first dead instance: no entry yet, so it starts at once
        // and the entry begins at 10 s.
        assert_eq!(
            backoff.decide(Some(secs(30)), secs(60)),
            RestartDecision::StartNow
        );
        assert_eq!(backoff.current(), Some(secs(10)));
        // A kill 30 s after the previous one is past a 10 s and a 20 s backoff: immediate.
        assert_eq!(
            backoff.decide(Some(secs(60)), secs(90)),
            RestartDecision::StartNow
        );
        assert_eq!(
            backoff.decide(Some(secs(90)), secs(120)),
            RestartDecision::StartNow
        );
        assert_eq!(backoff.current(), Some(secs(40)));
        // Now 30 s < 40 s: the kill happens, the start waits.
        assert_eq!(
            backoff.decide(Some(secs(120)), secs(150)),
            RestartDecision::WaitUntil(secs(160))
        );
    }
}
