//! How results are measured: the time series' resolution, the peak's window, and the error
//! rates that count as an outage and as recovered.

use super::Checked;
use crate::error::Invalid;
use crate::time::{Millis, Span};
use serde::Deserialize;

/// `measure:` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct MeasureFile {
    #[serde(default = "default_resolution")]
    resolution: Span,
    #[serde(default)]
    rate_window: Option<Span>,
    #[serde(default = "default_outage_threshold")]
    outage_threshold: f64,
    #[serde(default = "default_recovered_below")]
    recovered_below: f64,
}

fn default_resolution() -> Span {
    Span::secs(1)
}
fn default_outage_threshold() -> f64 {
    0.05
}
fn default_recovered_below() -> f64 {
    0.01
}

impl Default for MeasureFile {
    fn default() -> Self {
        MeasureFile {
            resolution: default_resolution(),
            rate_window: None,
            outage_threshold: default_outage_threshold(),
            recovered_below: default_recovered_below(),
        }
    }
}

/// How results are measured.
#[derive(Debug, Clone, Copy)]
pub struct Measure {
    /// Width of one time-series bucket.
    pub resolution: Millis,
    /// Window of the peak error rate (like Prometheus `rate(…[window])`).
    pub rate_window: Millis,
    /// Fleet error rate at or above which a bucket counts as outage.
    pub outage_threshold: f64,
    /// Fleet error rate below which the fleet counts as recovered.
    pub recovered_below: f64,
}

impl MeasureFile {
    /// The measurement settings, checked.
    pub(super) fn resolve(&self) -> Checked<Measure> {
        if self.resolution.as_millis() < 100 {
            return Err(Invalid::new("measure.resolution", "must be at least 100ms"));
        }
        let rate_window = self.rate_window.unwrap_or(self.resolution).as_millis();
        if rate_window < self.resolution.as_millis() {
            return Err(Invalid::new(
                "measure.rate_window",
                "must not be shorter than measure.resolution",
            ));
        }
        for (value, field) in [
            (self.outage_threshold, "measure.outage_threshold"),
            (self.recovered_below, "measure.recovered_below"),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(Invalid::new(field, "a fraction between 0 and 1"));
            }
        }
        Ok(Measure {
            resolution: self.resolution.as_millis(),
            rate_window,
            outage_threshold: self.outage_threshold,
            recovered_below: self.recovered_below,
        })
    }
}
