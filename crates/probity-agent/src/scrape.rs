//! Scraping the app's Prometheus / OpenMetrics exposition, once per interval however many
//! checks read it.
//!
//! Several checks and conditions usually read one exposition (the pool gauges for readiness,
//! the event-loop lag for liveness). A [`Scraper`] per URL keeps the last scrape and its time;
//! a reader asking for a scrape no older than its own interval gets the cached one, and
//! concurrent readers share one request in flight. The app's `/metrics` sees one scrape per
//! interval, as it would from Prometheus.

use crate::fetch::{self, FetchError};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The `Accept` header Prometheus sends: OpenMetrics first, the 0.0.4 text format after.
const ACCEPT: &str =
    "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// One sample: a series name, its labels, a value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sample {
    pub(crate) name: String,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) value: f64,
}

/// A parsed exposition.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Exposition {
    pub(crate) samples: Vec<Sample>,
}

impl Exposition {
    /// Parses Prometheus text 0.0.4 or OpenMetrics 1.0 (with prometheus-parse). Histogram
    /// buckets read as `NAME_bucket{le=…}`, summary quantiles as `NAME{quantile=…}`.
    pub(crate) fn parse(text: &str) -> Result<Exposition, String> {
        let lines = text.lines().map(|line| Ok(line.to_owned()));
        let scrape = prometheus_parse::Scrape::parse(lines).map_err(|error| error.to_string())?;
        let mut samples = Vec::with_capacity(scrape.samples.len());
        for sample in scrape.samples {
            let labels: BTreeMap<String, String> = sample
                .labels
                .iter()
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect();
            match sample.value {
                prometheus_parse::Value::Counter(value)
                | prometheus_parse::Value::Gauge(value)
                | prometheus_parse::Value::Untyped(value) => samples.push(Sample {
                    name: sample.metric,
                    labels,
                    value,
                }),
                prometheus_parse::Value::Histogram(buckets) => {
                    for bucket in buckets {
                        let mut labels = labels.clone();
                        labels.insert("le".into(), bucket.less_than.to_string());
                        samples.push(Sample {
                            name: format!("{}_bucket", sample.metric),
                            labels,
                            value: bucket.count,
                        });
                    }
                }
                prometheus_parse::Value::Summary(quantiles) => {
                    for quantile in quantiles {
                        let mut labels = labels.clone();
                        labels.insert("quantile".into(), quantile.quantile.to_string());
                        samples.push(Sample {
                            name: sample.metric.clone(),
                            labels,
                            value: quantile.count,
                        });
                    }
                }
            }
        }
        Ok(Exposition { samples })
    }

    /// The samples of `name` whose labels include every matcher.
    pub(crate) fn select<'a>(
        &'a self,
        name: &'a str,
        matchers: &'a BTreeMap<String, String>,
    ) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples.iter().filter(move |sample| {
            sample.name == name
                && matchers
                    .iter()
                    .all(|(label, value)| sample.labels.get(label) == Some(value))
        })
    }
}

/// Why a scrape gave nothing to judge.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ScrapeError {
    /// No answer.
    #[error("scrape failed: {0}")]
    Fetch(#[from] FetchError),
    /// An answer that is not a success.
    #[error("scrape answered {status} ({address})")]
    Status {
        /// The status code.
        status: u16,
        /// `host:port`.
        address: String,
    },
    /// An answer that does not parse.
    #[error("the exposition does not parse ({address}): {reason}")]
    Parse {
        /// `host:port`.
        address: String,
        /// Why.
        reason: String,
    },
}

type Scraped = Result<Arc<Exposition>, ScrapeError>;

/// The scrapes of one exposition URL.
#[derive(Debug)]
pub(crate) struct Scraper {
    client: reqwest::Client,
    url: reqwest::Url,
    last: tokio::sync::Mutex<Option<(Instant, Scraped)>>,
}

impl Scraper {
    /// A scraper of `url`.
    pub(crate) fn new(client: reqwest::Client, url: reqwest::Url) -> Self {
        Self {
            client,
            url,
            last: tokio::sync::Mutex::new(None),
        }
    }

    /// The URL scraped.
    pub(crate) fn url(&self) -> &reqwest::Url {
        &self.url
    }

    /// A scrape no older than `max_age` (the cached one, or a new one within `timeout`).
    /// A failed scrape is cached too: readers of one interval see the same outcome.
    pub(crate) async fn scrape(&self, max_age: Duration, timeout: Duration) -> Scraped {
        let mut last = self.last.lock().await;
        if let Some((at, scraped)) = last.as_ref()
            && at.elapsed() <= max_age
        {
            return scraped.clone();
        }
        let started = Instant::now();
        let scraped = self.fetch(timeout).await;
        *last = Some((started, scraped.clone()));
        scraped
    }

    async fn fetch(&self, timeout: Duration) -> Scraped {
        let answer = fetch::get(&self.client, &self.url, ACCEPT, timeout).await?;
        let address = fetch::address(&self.url);
        if !(200..=299).contains(&answer.status) {
            return Err(ScrapeError::Status {
                status: answer.status,
                address,
            });
        }
        let exposition = Exposition::parse(&answer.body)
            .map_err(|reason| ScrapeError::Parse { address, reason })?;
        Ok(Arc::new(exposition))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROM_CLIENT: &str = "\
# HELP nodejs_eventloop_lag_seconds Lag of event loop in seconds.
# TYPE nodejs_eventloop_lag_seconds gauge
nodejs_eventloop_lag_seconds 0.002184
# HELP pg_pool_waiting_count Clients waiting for a connection.
# TYPE pg_pool_waiting_count gauge
pg_pool_waiting_count{pool=\"orders\"} 3
pg_pool_waiting_count{pool=\"audit\"} 0
# HELP http_request_duration_seconds Request duration.
# TYPE http_request_duration_seconds histogram
http_request_duration_seconds_bucket{le=\"0.1\"} 4
http_request_duration_seconds_bucket{le=\"+Inf\"} 5
http_request_duration_seconds_sum 0.7
http_request_duration_seconds_count 5
";

    #[test]
    fn parses_prom_client_text_and_selects_by_labels() {
        let exposition = Exposition::parse(PROM_CLIENT).unwrap();
        let none = BTreeMap::new();
        let lag: Vec<_> = exposition
            .select("nodejs_eventloop_lag_seconds", &none)
            .collect();
        assert_eq!(lag.len(), 1);
        assert!((lag[0].value - 0.002184).abs() < 1e-9);
        let matchers = BTreeMap::from([("pool".to_owned(), "orders".to_owned())]);
        let waiting: Vec<_> = exposition
            .select("pg_pool_waiting_count", &matchers)
            .collect();
        assert_eq!(waiting.len(), 1);
        assert_eq!(waiting[0].value, 3.0);
        assert_eq!(
            exposition
                .select("http_request_duration_seconds_bucket", &none)
                .count(),
            2
        );
        assert_eq!(
            exposition
                .select("http_request_duration_seconds_count", &none)
                .next()
                .unwrap()
                .value,
            5.0
        );
    }

    #[test]
    fn parses_openmetrics_with_eof_and_totals() {
        let text = "# TYPE hikaricp_connections_timeout counter\n\
                    hikaricp_connections_timeout_total{pool=\"HikariPool-1\"} 7.0\n\
                    # TYPE hikaricp_connections_pending gauge\n\
                    hikaricp_connections_pending{pool=\"HikariPool-1\"} 2.0\n\
                    # EOF\n";
        let exposition = Exposition::parse(text).unwrap();
        assert_eq!(exposition.samples.len(), 2);
        let none = BTreeMap::new();
        assert_eq!(
            exposition
                .select("hikaricp_connections_timeout_total", &none)
                .next()
                .unwrap()
                .value,
            7.0
        );
    }

    #[test]
    fn garbage_parses_to_nothing_rather_than_failing() {
        let exposition = Exposition::parse("<html>not metrics</html>\n\0\0\0").unwrap();
        assert!(exposition.samples.is_empty());
    }
}
