//! `metrics`: a series of the app's exposition, judged against a threshold.

use crate::config::MetricsSettings;
use crate::scrape::Scraper;
use parking_lot::Mutex;
use probity::{Check, CheckError, CheckFuture, CheckResult, Detail, Timing};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Interval and timeout for a metrics check: one scrape of a loopback endpoint.
pub(crate) const DEFAULT_TIMING: Timing = Timing {
    interval: Duration::from_secs(2),
    timeout: Duration::from_secs(1),
};

/// A `metrics` check: passes unless the condition held on `for` polls in a row.
pub(crate) struct MetricsCheck {
    scraper: Arc<Scraper>,
    settings: MetricsSettings,
    timing: Timing,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Consecutive polls on which the condition held.
    breaching: u32,
    /// Each series' value at the previous scrape, for `change`.
    previous: BTreeMap<BTreeMap<String, String>, f64>,
}

impl MetricsCheck {
    pub(crate) fn new(scraper: Arc<Scraper>, settings: MetricsSettings, timing: Timing) -> Self {
        Self {
            scraper,
            settings,
            timing,
            state: Mutex::new(State::default()),
        }
    }

    /// `series{label="value"}`, as written in PromQL.
    fn selector(&self) -> String {
        if self.settings.labels.is_empty() {
            return self.settings.series.clone();
        }
        let labels: Vec<String> = self
            .settings
            .labels
            .iter()
            .map(|(name, value)| format!("{name}=\"{value}\""))
            .collect();
        format!("{}{{{}}}", self.settings.series, labels.join(","))
    }

    async fn poll(&self) -> CheckResult {
        // Half an interval: a scrape shared with another reader of this poll round counts,
        // one from the previous round does not.
        let exposition = self
            .scraper
            .scrape(self.timing.interval / 2, self.timing.timeout)
            .await
            .map_err(|error| CheckError::new(error.to_string()))?;
        let samples: Vec<_> = exposition
            .select(&self.settings.series, &self.settings.labels)
            .collect();
        if samples.is_empty() {
            let mut state = self.state.lock();
            state.previous.clear();
            return Err(CheckError::new(format!(
                "no series {} in the exposition at {}",
                self.selector(),
                crate::fetch::address(self.scraper.url())
            )));
        }
        let mut state = self.state.lock();
        let mut worst: Option<(f64, bool)> = None;
        let mut compared = false;
        let mut previous = BTreeMap::new();
        for sample in &samples {
            let judged = if self.settings.change {
                let before = state.previous.get(&sample.labels).copied();
                previous.insert(sample.labels.clone(), sample.value);
                match before {
                    // A counter reset (the app restarted) counts from zero.
                    Some(before) if sample.value >= before => Some(sample.value - before),
                    Some(_) => Some(sample.value),
                    None => None,
                }
            } else {
                Some(sample.value)
            };
            let Some(value) = judged else { continue };
            compared = true;
            let holds = self.settings.fail_if.holds(value);
            // The worst sample: a breaching one first, then the largest.
            let replace = match worst {
                None => true,
                Some((_, worst_holds)) if holds && !worst_holds => true,
                Some((worst_value, worst_holds)) => holds == worst_holds && value > worst_value,
            };
            if replace {
                worst = Some((value, holds));
            }
        }
        if self.settings.change {
            state.previous = previous;
        }
        let what = if self.settings.change {
            format!("increase of {}", self.selector())
        } else {
            self.selector()
        };
        let Some((value, holds)) = worst else {
            debug_assert!(!compared);
            return Ok(
                Detail::new().message(format!("{what}: first scrape, nothing to compare yet"))
            );
        };
        let measurement = self.settings.series.clone();
        if !holds {
            state.breaching = 0;
            return Ok(Detail::new()
                .message(format!("{what} = {value}"))
                .measurement(measurement, value, None));
        }
        state.breaching += 1;
        let condition = self.settings.fail_if;
        if state.breaching < self.settings.for_polls {
            return Ok(Detail::new()
                .message(format!(
                    "{what} = {value} ({condition}) on {} of {} polls",
                    state.breaching, self.settings.for_polls
                ))
                .measurement(measurement, value, None));
        }
        let polls = if self.settings.for_polls > 1 {
            format!(" on {} polls in a row", state.breaching)
        } else {
            String::new()
        };
        Err(
            CheckError::new(format!("{what} = {value}: fails when {condition}{polls}"))
                .measurement(measurement, value, None),
        )
    }
}

impl Check for MetricsCheck {
    fn check(&self) -> CheckFuture<'_> {
        Box::pin(self.poll())
    }

    fn dependency(&self) -> Option<&str> {
        // The app's own figures: what they measure (a pool, a queue) is the app's.
        Some("app")
    }

    fn default_timing(&self) -> Option<Timing> {
        Some(self.timing)
    }
}
