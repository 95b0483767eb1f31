//! Envoy with active health checking, its panic threshold and outlier detection.
//!
//! Sources: `api/envoy/config/core/v3/health_check.proto`,
//! `docs/root/intro/arch_overview/upstream/{health_checking,outlier,load_balancing/panic_threshold}.rst`.
//! - With a health checker, new hosts start unhealthy (`FAILED_ACTIVE_HC`); "during startup,
//!   only a single successful health check is required to mark a host healthy";
//! - a status outside the expected ones (200) marks a host unhealthy at once; timeouts count
//!   toward `unhealthy_threshold`;
//! - below `healthy_panic_threshold` percent of hosts available, Envoy balances over every
//!   host, healthy or not; with none healthy and panic off, "no healthy upstream";
//! - consecutive-5xx ejection is inline, lasts `base_ejection_time × times ejected` up to
//!   `max_ejection_time`, at most `max_ejection_percent` of hosts (but always one), and a
//!   successful active check unejects the host.
//!
//! Fed from the Service's ready endpoints (EDS, as a mesh's sidecar is), Envoy's hosts are
//! the pods whose endpoint is ready: a pod failing readiness is not a host at all, panic
//! balances only over the hosts there are, and with none Envoy answers "no healthy
//! upstream", where a static host list would have panicked over every pod.

use super::{CheckResult, CheckRuns, HealthCheck, Router};
use crate::engine::traffic::Split;
use crate::scenario::{EnvoySettings, Membership};
use crate::time::Millis;

/// Envoy in front of the pods.
#[derive(Debug)]
pub(crate) struct Envoy {
    settings: EnvoySettings,
    hosts: Vec<Host>,
    ejected: usize,
    /// Which pods are hosts (all, unless fed from endpoints).
    present: Vec<bool>,
    present_count: usize,
    /// Hosts present, passing their checks and not ejected.
    healthy_count: usize,
    panic: bool,
    all_changed: bool,
}

#[derive(Debug, Clone, Copy, Default)]
struct Host {
    checks: CheckRuns,
    ejected: bool,
    ejections: u32,
    ejection_epoch: u32,
    ejection_pending: bool,
}

impl Envoy {
    /// Envoy over `pods` hosts.
    pub(crate) fn new(pods: usize, settings: EnvoySettings) -> Self {
        let from_endpoints = settings.hosts == Membership::Endpoints;
        Envoy {
            settings,
            hosts: vec![Host::default(); pods],
            ejected: 0,
            present: vec![!from_endpoints; pods],
            present_count: if from_endpoints { 0 } else { pods },
            healthy_count: 0,
            panic: false,
            all_changed: false,
        }
    }

    /// A check's result: the runs, the healthy state, and an uneject.
    fn record(&mut self, pod: usize, result: CheckResult) -> Millis {
        let settings = self.settings;
        let host = &mut self.hosts[pod];
        let never_checked = host.checks.health == 0;
        host.checks.count(result.success);
        if result.success {
            let at_startup = host.ejections == 0 && !host.ejected && never_checked;
            if !host.checks.healthy
                && (host.checks.successes >= settings.healthy_threshold || at_startup)
            {
                host.checks.healthy = true;
            }
            // A successful active check unejects the host (unless configured not to).
            let unejects = settings
                .outlier
                .is_none_or(|outlier| outlier.uneject_on_passing_check);
            if host.ejected && unejects {
                host.ejection_epoch += 1;
                self.set_ejected(pod, false);
            }
        } else if result.definitive || host.checks.failures >= settings.unhealthy_threshold {
            host.checks.healthy = false;
        }
        self.hosts[pod].checks.health = 1;
        settings.interval
    }

    fn fed_from_endpoints(&self) -> bool {
        self.settings.hosts == Membership::Endpoints
    }

    /// Whether a host counts toward the healthy fraction.
    fn counts_healthy(&self, pod: usize) -> bool {
        let host = &self.hosts[pod];
        self.present[pod] && host.checks.healthy && !host.ejected
    }

    /// Keeps the healthy count after a change to `pod` (`was`: whether it counted before),
    /// and notes when a change of panic changes every pod's membership.
    fn recount(&mut self, pod: usize, was: bool) {
        let now = self.counts_healthy(pod);
        if now != was {
            if now {
                self.healthy_count += 1;
            } else {
                self.healthy_count -= 1;
            }
        }
        if self.fed_from_endpoints() {
            let panic = self.present_count > 0
                && 100.0 * self.healthy_count as f64 / (self.present_count as f64)
                    < self.settings.panic_threshold;
            if panic != self.panic {
                self.panic = panic;
                self.all_changed = true;
            }
        }
    }

    /// Marks a host ejected or back (callers keep the healthy count).
    fn set_ejected(&mut self, pod: usize, ejected: bool) {
        let host = &mut self.hosts[pod];
        if host.ejected != ejected {
            host.ejected = ejected;
            if ejected {
                self.ejected += 1;
            } else {
                self.ejected -= 1;
            }
        }
    }
}

impl Router for Envoy {
    fn name(&self) -> &'static str {
        "envoy"
    }

    fn healthy(&self, pod: usize) -> bool {
        if self.fed_from_endpoints() {
            // In panic, every host gets traffic, healthy or not; a pod not in the endpoints
            // is no host.
            return if self.panic {
                self.present[pod]
            } else {
                self.counts_healthy(pod)
            };
        }
        let host = &self.hosts[pod];
        host.checks.healthy && !host.ejected
    }

    fn split(&self, members: usize, pods: usize) -> Split {
        if self.fed_from_endpoints() {
            return if members == 0 {
                Split::Rejected // "no healthy upstream"
            } else {
                Split::Members
            };
        }
        let healthy_percent = 100.0 * members as f64 / pods as f64;
        if healthy_percent < self.settings.panic_threshold {
            Split::Everyone // panic: balance across every host, healthy or not
        } else if members == 0 {
            Split::Rejected // "no healthy upstream"
        } else {
            Split::Members
        }
    }

    fn health_check(&self) -> Option<HealthCheck> {
        Some(HealthCheck {
            handler: self.settings.check,
            timeout: self.settings.timeout,
            checkers: 1,
            interval: self.settings.interval,
        })
    }

    fn start_checking(&mut self, pod: usize, steady: bool) {
        let was = self.counts_healthy(pod);
        self.hosts[pod].checks.healthy = steady;
        self.recount(pod, was);
    }

    fn propagation(&self) -> Option<Millis> {
        self.fed_from_endpoints()
            .then_some(self.settings.propagation)
    }

    fn endpoint_update(&mut self, pod: usize, ready: bool) -> bool {
        if !self.fed_from_endpoints() || self.present[pod] == ready {
            return false;
        }
        let was = self.counts_healthy(pod);
        self.present[pod] = ready;
        if ready {
            self.present_count += 1;
        } else {
            self.present_count -= 1;
        }
        self.recount(pod, was);
        true
    }

    fn take_all_changed(&mut self) -> bool {
        std::mem::take(&mut self.all_changed)
    }

    fn check_epoch(&self, pod: usize) -> u32 {
        self.hosts[pod].checks.epoch
    }

    fn begin_check(&mut self, pod: usize) -> u32 {
        self.hosts[pod].checks.epoch += 1;
        self.hosts[pod].checks.epoch
    }

    fn record_check(&mut self, pod: usize, result: CheckResult) -> Millis {
        let was = self.counts_healthy(pod);
        let interval = self.record(pod, result);
        self.recount(pod, was);
        interval
    }

    fn eject_after(&mut self, pod: usize, requests_per_second: f64) -> Option<(Millis, u32)> {
        let outlier = self.settings.outlier?;
        let host = &mut self.hosts[pod];
        if host.ejected || host.ejection_pending {
            return None;
        }
        host.ejection_pending = true;
        let wait = (f64::from(outlier.consecutive_5xx) / requests_per_second * 1000.0).ceil();
        Some((wait as Millis, host.ejection_epoch))
    }

    fn success_rate(&self) -> Option<crate::scenario::SuccessRate> {
        self.settings.outlier?.success_rate
    }

    fn eject_now(&mut self, pod: usize) -> Option<(Millis, u32)> {
        if self.hosts[pod].ejected {
            return None;
        }
        let epoch = self.hosts[pod].ejection_epoch;
        self.eject(pod, epoch)
    }

    fn eject(&mut self, pod: usize, epoch: u32) -> Option<(Millis, u32)> {
        let outlier = self.settings.outlier?;
        let pods = self.hosts.len();
        let host = &mut self.hosts[pod];
        if host.ejection_epoch != epoch || host.ejected {
            return None;
        }
        host.ejection_pending = false;
        // max_ejection_percent, but at least one host is always ejectable.
        let allowed = ((outlier.max_ejection_percent / 100.0) * pods as f64)
            .floor()
            .max(1.0) as usize;
        if self.ejected >= allowed {
            return None;
        }
        let host = &mut self.hosts[pod];
        host.ejections += 1;
        host.ejection_epoch += 1;
        let lasts =
            (outlier.base_ejection_time * u64::from(host.ejections)).min(outlier.max_ejection_time);
        let epoch = host.ejection_epoch;
        let was = self.counts_healthy(pod);
        self.set_ejected(pod, true);
        self.recount(pod, was);
        Some((lasts, epoch))
    }

    fn eject_end(&mut self, pod: usize, epoch: u32) -> bool {
        let host = &self.hosts[pod];
        if host.ejection_epoch != epoch || !host.ejected {
            return false;
        }
        let was = self.counts_healthy(pod);
        self.set_ejected(pod, false);
        self.recount(pod, was);
        true
    }
}
