//! Checks whose outcome a test controls.

#![allow(dead_code, unreachable_pub)]

use probity::{Check, CheckError, Detail};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// A check that passes or fails as the test says, and counts its polls.
#[derive(Clone, Default)]
pub struct Switch {
    pub ok: Arc<AtomicBool>,
    pub polls: Arc<AtomicUsize>,
}

impl Switch {
    pub fn new(ok: bool) -> Self {
        let switch = Self::default();
        switch.set(ok);
        switch
    }

    pub fn set(&self, ok: bool) {
        self.ok.store(ok, Ordering::SeqCst);
    }

    pub fn polls(&self) -> usize {
        self.polls.load(Ordering::SeqCst)
    }

    pub fn check(&self) -> impl Check {
        let switch = self.clone();
        move || {
            let switch = switch.clone();
            async move {
                switch.polls.fetch_add(1, Ordering::SeqCst);
                if switch.ok.load(Ordering::SeqCst) {
                    Ok(Detail::new())
                } else {
                    Err(CheckError::new("down"))
                }
            }
        }
    }
}

/// Advances the paused clock by `duration`, letting every task that wakes in between run.
pub async fn advance(duration: Duration) {
    tokio::time::sleep(duration).await;
}

pub fn secs(secs: f64) -> Duration {
    Duration::from_secs_f64(secs)
}
