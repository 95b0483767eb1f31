//! `metrics`: a series of the app's exposition, judged against a threshold.

use crate::config::{MetricsSettings, Missing};
use crate::outcomes::Outcomes;
use crate::scrape::{Matcher, Scraper};
use crate::unmoving::Unmoving;
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
    matchers: Vec<Matcher>,
    timing: Timing,
    outcomes: Option<Arc<Outcomes>>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Consecutive polls on which the condition held.
    breaching: u32,
    /// Each series' value at the previous scrape, for `change`.
    previous: BTreeMap<BTreeMap<String, String>, f64>,
    /// Whether a scrape was judged before (a counter first seen after it counts from zero).
    scraped_before: bool,
}

impl MetricsCheck {
    pub(crate) fn new(
        scraper: Arc<Scraper>,
        settings: MetricsSettings,
        timing: Timing,
        outcomes: Option<Arc<Outcomes>>,
        unmoving: &Arc<Unmoving>,
    ) -> Result<Self, String> {
        let matchers = settings
            .labels
            .iter()
            .map(|(label, value)| Matcher::parse(label, value))
            .collect::<Result<Vec<_>, _>>()?;
        scraper.register([settings.series.as_str()], timing.timeout);
        // A counter's flat run says only that nothing happened.
        if !settings.change {
            unmoving.watch(
                &scraper,
                &settings.series,
                &matchers,
                settings.stale_after_scrapes,
            );
        }
        Ok(Self {
            scraper,
            settings,
            matchers,
            timing,
            outcomes,
            state: Mutex::new(State::default()),
        })
    }

    /// `series{label="value",status=~"5.."}`, as written in PromQL.
    fn selector(&self) -> String {
        if self.matchers.is_empty() {
            return self.settings.series.clone();
        }
        let labels: Vec<String> = self.matchers.iter().map(ToString::to_string).collect();
        format!("{}{{{}}}", self.settings.series, labels.join(","))
    }

    async fn poll(&self) -> CheckResult {
        let result = self.judge().await;
        // The app's own figure fails while its requests succeed: busy, not broken.
        match (result, &self.outcomes) {
            (Err(error), Some(outcomes)) => {
                match outcomes.serving_despite(error.message(), tokio::time::Instant::now()) {
                    Some(reason) => Ok(Detail::new().warning(reason)),
                    None => Err(error),
                }
            }
            (result, _) => result,
        }
    }

    async fn judge(&self) -> CheckResult {
        // Half an interval: a scrape shared with another reader of this poll round counts,
        // one from the previous round does not.
        let exposition = self
            .scraper
            .scrape(self.timing.interval / 2, self.timing.timeout)
            .await
            .map_err(|error| CheckError::new(error.to_string()).kind(error.kind()))?;
        let samples: Vec<_> = exposition
            .select(&self.settings.series, &self.matchers)
            .collect();
        if samples.is_empty() {
            let mut state = self.state.lock();
            state.previous.clear();
            state.scraped_before = true;
            state.breaching = 0;
            let missing = format!(
                "no series {} in the exposition at {}",
                self.selector(),
                crate::fetch::address(self.scraper.url())
            );
            return match self.settings.missing {
                Missing::Fail => Err(CheckError::new(missing)),
                Missing::Pass if self.settings.change => Ok(Detail::new().message(format!(
                    "{missing}: a counter not created yet counts as zero"
                ))),
                Missing::Pass => Ok(Detail::new().message(format!("{missing} (missing passes)"))),
            };
        }
        let mut state = self.state.lock();
        let scraped_before = std::mem::replace(&mut state.scraped_before, true);
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
                    // Created since the last scrape: it was zero then.
                    None if scraped_before => Some(sample.value),
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

    fn outranked_by_requests(&self) -> bool {
        self.outcomes.is_some()
    }

    fn dependency(&self) -> Option<&str> {
        // The app's own figures: what they measure (a pool, a queue) is the app's.
        Some("app")
    }

    fn default_timing(&self) -> Option<Timing> {
        Some(self.timing)
    }

    fn default_fall(&self) -> Option<u32> {
        // A scrape crosses the network (loopback, and the app's own scheduling): one slow
        // sample on a busy node is not evidence.
        Some(probity_checks::NETWORK_FALL)
    }
}
