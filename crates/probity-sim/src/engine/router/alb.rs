//! An AWS Application Load Balancer target group.
//!
//! Every load-balancer node checks every target; a target turns unhealthy after
//! `UnhealthyThresholdCount` failed checks and healthy after `HealthyThresholdCount` passed
//! ones; a newly registered target (`initial`) needs one passing check. With no healthy
//! target it fails open and routes to all of them (AWS, "Health checks for Application Load
//! Balancer target groups").

use super::{CheckResult, CheckRuns, HealthCheck, Router};
use crate::engine::traffic::Split;
use crate::scenario::AlbSettings;
use crate::time::Millis;

/// An ALB in front of the pods.
#[derive(Debug)]
pub(crate) struct Alb {
    settings: AlbSettings,
    targets: Vec<CheckRuns>,
}

impl Alb {
    /// An ALB over `pods` targets.
    pub(crate) fn new(pods: usize, settings: AlbSettings) -> Self {
        Alb {
            settings,
            targets: vec![CheckRuns::default(); pods],
        }
    }
}

impl Router for Alb {
    fn name(&self) -> &'static str {
        "alb"
    }

    fn healthy(&self, pod: usize) -> bool {
        self.targets[pod].healthy
    }

    fn split(&self, members: usize, _pods: usize) -> Split {
        if members == 0 {
            Split::Everyone // fail open
        } else {
            Split::Members
        }
    }

    fn health_check(&self) -> Option<HealthCheck> {
        Some(HealthCheck {
            handler: self.settings.check,
            timeout: self.settings.timeout,
            checkers: self.settings.nodes,
            interval: self.settings.interval,
        })
    }

    fn start_checking(&mut self, pod: usize, steady: bool) {
        self.targets[pod].healthy = steady;
    }

    fn check_epoch(&self, pod: usize) -> u32 {
        self.targets[pod].epoch
    }

    fn begin_check(&mut self, pod: usize) -> u32 {
        self.targets[pod].epoch += 1;
        self.targets[pod].epoch
    }

    fn record_check(&mut self, pod: usize, result: CheckResult) -> Millis {
        let settings = self.settings;
        let target = &mut self.targets[pod];
        let initial = target.health == 0 && !target.healthy;
        target.count(result.success);
        if result.success {
            if !target.healthy && (target.successes >= settings.healthy_threshold || initial) {
                target.healthy = true;
            }
        } else if target.failures >= settings.unhealthy_threshold {
            target.healthy = false;
        }
        target.health = 1;
        settings.interval
    }
}
