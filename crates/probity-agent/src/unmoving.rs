//! A gauge that never moves is a finding.
//!
//! A pool's pending-acquire gauge that reads 0 through 120 scrapes while the app serves
//! 20,000 requests is more likely never set than never busy: a check on it passes for ever,
//! whatever the pool does. Every gauge a `metrics` check or an `event_loop_lag` condition
//! reads is followed from scrape to scrape; once one has read the same value in
//! `stale_after_scrapes` scrapes in a row (default [`crate::config::DEFAULT_STALE_AFTER_SCRAPES`]) while the
//! app's request counters counted at least [`MIN_REQUESTS_SERVED`] requests, it is reported
//! once — logged at `warn` and listed on the status page — and cleared when it moves.
//! Where the agent reads no request counter, the scrapes the app answered are the only
//! evidence of activity, and the finding says so.
//!
//! A finding, not a failure: it changes no probe. Counters (`_total`, `_count`, `_sum`,
//! `_bucket`, `_created`), `_info` series and checks with `change` are not followed: a flat
//! counter only says nothing happened.

use crate::outcomes::{Outcomes, thousands};
use crate::scrape::{Exposition, Matcher, Scraper};
use parking_lot::Mutex;
use probity_axum::Finding;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Requests the app must have served while the value stayed, when its request counters are
/// read: fewer say too little about a gauge that should have moved.
pub(crate) const MIN_REQUESTS_SERVED: u64 = 1_000;
/// Most series followed; beyond it new ones are not (bounded memory whatever the app exports).
const MAX_FOLLOWED: usize = 10_000;
/// Name endings of series that are not gauges.
const NOT_GAUGES: &[&str] = &["_total", "_count", "_sum", "_bucket", "_created", "_info"];

/// The finding's kind on the status page.
const KIND: &str = "unmoving_series";

/// Whether a series name reads as a gauge (not a counter, a histogram's part or an info).
pub(crate) fn is_gauge(series: &str) -> bool {
    !NOT_GAUGES.iter().any(|suffix| series.ends_with(suffix))
}

/// A series some reader reads, and after how many unchanged scrapes it is reported.
struct Watch {
    address: String,
    series: String,
    matchers: Vec<Matcher>,
    after: u32,
}

/// One followed sample: exposition address, series, labels.
type Key = (String, String, BTreeMap<String, String>);

/// A sample's run of one value.
#[derive(Debug, Clone)]
struct Run {
    value: f64,
    /// Scrapes that read `value` in a row, the first included.
    scrapes: u32,
    /// The request counters' total when the run started (or when they were first found).
    served_from: Option<u64>,
    /// The request counters' total at the last scrape.
    served_now: Option<u64>,
    /// Reported (logged) already.
    reported: bool,
}

impl Run {
    fn new(value: f64, served: Option<u64>) -> Run {
        Run {
            value,
            scrapes: 1,
            served_from: served,
            served_now: served,
            reported: false,
        }
    }

    fn served(&self) -> Option<u64> {
        Some(self.served_now?.saturating_sub(self.served_from?))
    }

    fn due(&self, after: u32) -> bool {
        after > 0
            && self.scrapes >= after
            && match self.served_now {
                // Request counters are read: they must show the app busy.
                Some(_) => self.served().unwrap_or(0) >= MIN_REQUESTS_SERVED,
                // None are: the scrapes it answered are all the evidence.
                None => true,
            }
    }

    fn message(&self, subject: &str) -> String {
        let activity = match self.served() {
            Some(served) => format!("while {} requests were served", thousands(served)),
            None => format!(
                "while the app answered {} scrapes (no request counter read)",
                thousands(u64::from(self.scrapes))
            ),
        };
        format!(
            "`{subject}` read {} in {} scrapes {activity}: is it wired?",
            self.value,
            thousands(u64::from(self.scrapes))
        )
    }
}

/// What a scrape changed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Change {
    /// A series has stayed long enough to report: the subject and the finding.
    Found(String, String),
    /// A reported series moved: the subject, its old value and its new one.
    Moved(String, f64, f64),
}

#[derive(Default)]
struct State {
    watches: Vec<Watch>,
    /// Addresses whose scraper calls back already.
    followed: BTreeSet<String>,
    runs: BTreeMap<Key, Run>,
}

/// The gauges an agent reads, followed from scrape to scrape.
pub(crate) struct Unmoving {
    outcomes: Option<Arc<Outcomes>>,
    state: Mutex<State>,
}

impl std::fmt::Debug for Unmoving {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unmoving")
            .field("runs", &self.state.lock().runs.len())
            .finish_non_exhaustive()
    }
}

/// `series{label="value"}`.
fn subject(series: &str, labels: &BTreeMap<String, String>) -> String {
    if labels.is_empty() {
        return series.to_owned();
    }
    let labels: Vec<String> = labels
        .iter()
        .map(|(label, value)| format!("{label}=\"{}\"", value.escape_default()))
        .collect();
    format!("{series}{{{}}}", labels.join(","))
}

/// One value read again: equal, or both NaN (a gauge stuck at NaN is stuck too).
fn same(before: f64, now: f64) -> bool {
    before == now || (before.is_nan() && now.is_nan())
}

impl Unmoving {
    /// A follower that judges activity by `outcomes`' request counters, when read.
    pub(crate) fn new(outcomes: Option<Arc<Outcomes>>) -> Arc<Unmoving> {
        Arc::new(Unmoving {
            outcomes,
            state: Mutex::new(State::default()),
        })
    }

    /// Follows the samples of `series` matching `matchers` in every scrape of `scraper`,
    /// reporting one that stays `after` scrapes (`0`: never). Counters are not followed.
    pub(crate) fn watch(
        self: &Arc<Self>,
        scraper: &Scraper,
        series: &str,
        matchers: &[Matcher],
        after: u32,
    ) {
        if after == 0 || !is_gauge(series) {
            return;
        }
        let address = scraper.url().as_str().to_owned();
        let mut state = self.state.lock();
        state.watches.push(Watch {
            address: address.clone(),
            series: series.to_owned(),
            matchers: matchers.to_vec(),
            after,
        });
        if state.followed.insert(address.clone()) {
            let unmoving = self.clone();
            // `host:port` for the log: the URL may hold credentials.
            let shown = crate::fetch::address(scraper.url());
            scraper.on_scrape(Box::new(move |exposition| {
                unmoving.scraped(&address, &shown, exposition);
            }));
        }
    }

    fn scraped(&self, address: &str, shown: &str, exposition: &Exposition) {
        let served = self
            .outcomes
            .as_ref()
            .and_then(|outcomes| outcomes.served());
        for change in self.observe(address, exposition, served) {
            match change {
                Change::Found(series, finding) => tracing::warn!(
                    target: "probity::agent",
                    series,
                    exposition = shown,
                    finding,
                    "a gauge has not moved while the app was busy: a finding, not a failure"
                ),
                Change::Moved(series, from, to) => tracing::info!(
                    target: "probity::agent",
                    series,
                    exposition = shown,
                    from,
                    to,
                    "a gauge reported as unmoving moved"
                ),
            }
        }
    }

    /// Records one scrape of `address`, with the request counters' total `served` when read.
    pub(crate) fn observe(
        &self,
        address: &str,
        exposition: &Exposition,
        served: Option<u64>,
    ) -> Vec<Change> {
        let mut guard = self.state.lock();
        let state = &mut *guard;
        let mut changes = Vec::new();
        let mut seen = BTreeSet::new();
        for sample in &exposition.samples {
            let after = state
                .watches
                .iter()
                .filter(|watch| {
                    watch.address == address
                        && watch.series == sample.name
                        && watch
                            .matchers
                            .iter()
                            .all(|matcher| matcher.matches(&sample.labels))
                })
                .map(|watch| watch.after)
                .min();
            let Some(after) = after else { continue };
            let key = (
                address.to_owned(),
                sample.name.clone(),
                sample.labels.clone(),
            );
            let room = state.runs.len() < MAX_FOLLOWED;
            match state.runs.get_mut(&key) {
                Some(run) if same(run.value, sample.value) => {
                    run.scrapes = run.scrapes.saturating_add(1);
                    // Request counters found after the run began count from then.
                    run.served_from = run.served_from.or(served);
                    run.served_now = served;
                    if !run.reported && run.due(after) {
                        run.reported = true;
                        let subject = subject(&sample.name, &sample.labels);
                        changes.push(Change::Found(subject.clone(), run.message(&subject)));
                    }
                }
                Some(run) => {
                    if run.reported {
                        changes.push(Change::Moved(
                            subject(&sample.name, &sample.labels),
                            run.value,
                            sample.value,
                        ));
                    }
                    *run = Run::new(sample.value, served);
                }
                None if room => {
                    state
                        .runs
                        .insert(key.clone(), Run::new(sample.value, served));
                }
                None => continue,
            }
            seen.insert(key);
        }
        // A series gone from the exposition starts afresh when it returns.
        state
            .runs
            .retain(|key, _| key.0 != address || seen.contains(key));
        changes
    }

    /// The series reported and still unmoving, for the status page.
    pub(crate) fn findings(&self) -> Vec<Finding> {
        self.state
            .lock()
            .runs
            .iter()
            .filter(|(_, run)| run.reported)
            .map(|((_, series, labels), run)| {
                let subject = subject(series, labels);
                Finding {
                    kind: KIND.to_owned(),
                    message: run.message(&subject),
                    subject,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ADDRESS: &str = "http://127.0.0.1:3000/metrics";

    fn exposition(text: &str) -> Exposition {
        Exposition::parse(text).unwrap()
    }

    fn follower(series: &str, after: u32) -> Unmoving {
        let unmoving = Unmoving {
            outcomes: None,
            state: Mutex::new(State::default()),
        };
        unmoving.state.lock().watches.push(Watch {
            address: ADDRESS.to_owned(),
            series: series.to_owned(),
            matchers: Vec::new(),
            after,
        });
        unmoving
    }

    /// Scrapes `values` in turn with the request total growing by `per_scrape` each time,
    /// or unknown (`None`): every change, in order.
    fn scrapes(
        unmoving: &Unmoving,
        values: impl IntoIterator<Item = f64>,
        per_scrape: Option<u64>,
    ) -> Vec<Change> {
        let mut changes = Vec::new();
        for (index, value) in values.into_iter().enumerate() {
            let served = per_scrape.map(|per| per * index as u64);
            let text = format!(
                "db_pool_pending_acquires{{pool=\"main\"}} {value}\nhttp_requests_total{{status=\"200\"}} 5\n"
            );
            changes.extend(unmoving.observe(ADDRESS, &exposition(&text), served));
        }
        changes
    }

    #[test]
    fn a_gauge_unmoved_while_requests_were_served_is_reported_once() {
        let unmoving = follower("db_pool_pending_acquires", 120);
        let changes = scrapes(&unmoving, std::iter::repeat_n(0.0, 200), Some(170));
        let subject = "db_pool_pending_acquires{pool=\"main\"}";
        assert_eq!(
            changes,
            vec![Change::Found(
                subject.to_owned(),
                format!(
                    "`{subject}` read 0 in 120 scrapes while 20,230 requests were served: is it wired?"
                )
            )]
        );
        // The page follows the run as it goes on.
        let findings = unmoving.findings();
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].kind, "unmoving_series");
        assert_eq!(findings[0].subject, subject);
        assert!(
            findings[0].message.contains("in 200 scrapes while 33,830"),
            "{}",
            findings[0].message
        );
    }

    #[test]
    fn a_reported_gauge_that_moves_is_cleared() {
        let unmoving = follower("db_pool_pending_acquires", 3);
        scrapes(&unmoving, [0.0; 5], Some(1_000));
        assert_eq!(unmoving.findings().len(), 1);
        let moved = unmoving.observe(
            ADDRESS,
            &exposition("db_pool_pending_acquires{pool=\"main\"} 2\n"),
            Some(9_000),
        );
        assert_eq!(
            moved,
            vec![Change::Moved(
                "db_pool_pending_acquires{pool=\"main\"}".to_owned(),
                0.0,
                2.0
            )]
        );
        assert!(unmoving.findings().is_empty());
    }

    #[test]
    fn a_gauge_that_moves_is_never_reported() {
        let unmoving = follower("db_pool_pending_acquires", 3);
        let values = (0..50).map(|index| f64::from(index % 2));
        assert!(scrapes(&unmoving, values, Some(1_000)).is_empty());
        assert!(unmoving.findings().is_empty());
    }

    #[test]
    fn no_finding_while_too_few_requests_were_served() {
        // 10 requests a scrape: 990 in the first 100 scrapes since the value was first read.
        let unmoving = follower("db_pool_pending_acquires", 3);
        assert!(scrapes(&unmoving, [0.0; 100], Some(10)).is_empty());
        // The 101st reaches 1,000.
        let unmoving = follower("db_pool_pending_acquires", 3);
        let changes = scrapes(&unmoving, [0.0; 101], Some(10));
        assert_eq!(changes.len(), 1, "{changes:?}");
        // No request at all: never.
        let unmoving = follower("db_pool_pending_acquires", 3);
        assert!(scrapes(&unmoving, [0.0; 500], Some(0)).is_empty());
    }

    #[test]
    fn without_request_counters_the_answered_scrapes_are_the_evidence() {
        let unmoving = follower("db_pool_pending_acquires", 4);
        let changes = scrapes(&unmoving, [0.0; 4], None);
        let [Change::Found(_, finding)] = changes.as_slice() else {
            panic!("{changes:?}");
        };
        assert_eq!(
            finding,
            "`db_pool_pending_acquires{pool=\"main\"}` read 0 in 4 scrapes while the app \
             answered 4 scrapes (no request counter read): is it wired?"
        );
    }

    #[test]
    fn counters_and_disabled_watches_are_not_followed_and_a_vanished_series_starts_afresh() {
        assert!(is_gauge("db_pool_pending_acquires"));
        assert!(is_gauge("nodejs_eventloop_lag_seconds"));
        for counter in [
            "http_requests_total",
            "http_request_duration_seconds_count",
            "http_request_duration_seconds_bucket",
            "build_info",
        ] {
            assert!(!is_gauge(counter), "{counter}");
        }
        let unmoving = follower("db_pool_pending_acquires", 3);
        scrapes(&unmoving, [0.0; 2], Some(1_000));
        unmoving.observe(ADDRESS, &exposition("other 1\n"), Some(5_000));
        assert!(scrapes(&unmoving, [0.0; 2], Some(1_000)).is_empty());
        // `stale_after_scrapes = 0`: never.
        let unmoving = follower("db_pool_pending_acquires", 0);
        assert!(scrapes(&unmoving, [0.0; 300], Some(1_000)).is_empty());
        // A stuck NaN is stuck.
        let unmoving = follower("db_pool_pending_acquires", 3);
        assert_eq!(scrapes(&unmoving, [f64::NAN; 3], Some(1_000)).len(), 1);
    }
}
