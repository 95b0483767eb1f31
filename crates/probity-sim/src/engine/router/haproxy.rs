//! HAProxy with `check` on every server.
//!
//! `src/check.c` keeps a health counter in `0 ..= rise + fall − 1`: a success counts up and,
//! on reaching `rise`, jumps to fully UP; a failure counts down and, dropping below `rise`,
//! jumps to 0 (DOWN). Checks run every `inter` while fully UP, `downinter` while DOWN and
//! `fastinter` in between (`doc/configuration.txt`). A new server starts at `rise`: UP, but
//! one failed check marks it DOWN ("start OK but check immediately"). With every server DOWN
//! and no backup, HAProxy answers 503.

use super::{CheckResult, CheckRuns, HealthCheck, Router};
use crate::engine::traffic::Split;
use crate::scenario::HaproxySettings;
use crate::time::Millis;

/// HAProxy in front of the pods.
#[derive(Debug)]
pub(crate) struct Haproxy {
    settings: HaproxySettings,
    servers: Vec<CheckRuns>,
}

impl Haproxy {
    /// HAProxy over `pods` servers.
    pub(crate) fn new(pods: usize, settings: HaproxySettings) -> Self {
        Haproxy {
            settings,
            servers: vec![CheckRuns::default(); pods],
        }
    }

    fn top(&self) -> u32 {
        self.settings.rise + self.settings.fall - 1
    }
}

impl Router for Haproxy {
    fn name(&self) -> &'static str {
        "haproxy"
    }

    fn healthy(&self, pod: usize) -> bool {
        self.servers[pod].healthy
    }

    fn split(&self, members: usize, _pods: usize) -> Split {
        if members == 0 {
            Split::Rejected // 503 "no server is available"
        } else {
            Split::Members
        }
    }

    fn health_check(&self) -> Option<HealthCheck> {
        Some(HealthCheck {
            handler: self.settings.check,
            timeout: self.settings.timeout,
            checkers: 1,
            interval: self.settings.inter,
        })
    }

    fn start_checking(&mut self, pod: usize, steady: bool) {
        let health = if steady {
            self.top()
        } else {
            self.settings.rise
        };
        let server = &mut self.servers[pod];
        server.health = health;
        server.healthy = true;
    }

    fn check_epoch(&self, pod: usize) -> u32 {
        self.servers[pod].epoch
    }

    fn begin_check(&mut self, pod: usize) -> u32 {
        self.servers[pod].epoch += 1;
        self.servers[pod].epoch
    }

    fn record_check(&mut self, pod: usize, result: CheckResult) -> Millis {
        let top = self.top();
        let rise = self.settings.rise;
        let server = &mut self.servers[pod];
        if result.success {
            if server.health < top {
                server.health += 1;
                if server.health >= rise {
                    server.health = top;
                    server.healthy = true;
                }
            }
        } else if server.health > 0 {
            server.health -= 1;
            if server.health < rise {
                server.health = 0;
                server.healthy = false;
            }
        }
        if server.health == top {
            self.settings.inter
        } else if server.health == 0 {
            self.settings.downinter
        } else {
            self.settings.fastinter
        }
    }
}
