//! Scraping the app's Prometheus / OpenMetrics exposition, once per interval however many
//! checks read it, keeping only the series they ask for.
//!
//! Several checks and conditions usually read one exposition (the pool gauges for readiness,
//! the event-loop lag for liveness, the request counters). A [`Scraper`] per URL keeps the
//! last scrape and its time; a reader asking for a scrape no older than its own interval gets
//! the cached one, and concurrent readers share one request in flight. The app's `/metrics`
//! sees one scrape per interval, as it would from Prometheus.
//!
//! The request in flight is bounded by the longest timeout of any reader, not by whichever
//! reader started it: each reader waits for it up to its own timeout, and a reader that gives
//! up leaves it running for the others. A readiness check with a 300 ms budget never hands a
//! liveness condition with a 1.5 s budget its timed-out scrape.
//!
//! The body is parsed as it streams in, line by line, and only the samples of the series
//! some reader asked for are kept: an exposition of 500,000 series costs its largest line,
//! not its size.

use crate::fetch::{self, FetchError};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The `Accept` header Prometheus sends: OpenMetrics first, the 0.0.4 text format after.
const ACCEPT: &str =
    "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// Largest exposition read (streamed, so this bounds time, not memory).
pub(crate) const MAX_EXPOSITION: usize = 256 << 20;
/// Longest line kept; longer lines are skipped whole.
const MAX_LINE: usize = 64 << 10;
/// Most samples kept from one scrape (of the series asked for).
const MAX_SAMPLES: usize = 100_000;

/// One sample: a series name, its labels, a value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sample {
    pub(crate) name: String,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) value: f64,
}

/// A label matcher, as PromQL writes them: `=`, `!=`, `=~`, `!~` (regular expressions fully
/// anchored).
#[derive(Debug, Clone)]
pub(crate) struct Matcher {
    pub(crate) label: String,
    pub(crate) op: MatchOp,
    pub(crate) value: String,
    regex: Option<regex::Regex>,
}

/// The four PromQL matcher operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MatchOp {
    /// `=`
    Equal,
    /// `!=`
    NotEqual,
    /// `=~`
    Matches,
    /// `!~`
    NotMatches,
}

impl PartialEq for Matcher {
    fn eq(&self, other: &Self) -> bool {
        self.label == other.label && self.op == other.op && self.value == other.value
    }
}

impl Matcher {
    /// A matcher from a configured label value: `=~5..`, `!~GET|HEAD`, `!=200`, `=200` or a
    /// bare value (equality).
    pub(crate) fn parse(label: &str, text: &str) -> Result<Matcher, String> {
        let (op, value) = if let Some(rest) = text.strip_prefix("=~") {
            (MatchOp::Matches, rest)
        } else if let Some(rest) = text.strip_prefix("!~") {
            (MatchOp::NotMatches, rest)
        } else if let Some(rest) = text.strip_prefix("!=") {
            (MatchOp::NotEqual, rest)
        } else if let Some(rest) = text.strip_prefix('=') {
            (MatchOp::Equal, rest)
        } else {
            (MatchOp::Equal, text)
        };
        let regex = match op {
            MatchOp::Matches | MatchOp::NotMatches => Some(
                regex::RegexBuilder::new(&format!("^(?:{value})$"))
                    .size_limit(1 << 20)
                    .build()
                    .map_err(|error| {
                        format!("label `{label}`: `{value}` is not a regular expression: {error}")
                    })?,
            ),
            _ => None,
        };
        Ok(Matcher {
            label: label.to_owned(),
            op,
            value: value.to_owned(),
            regex,
        })
    }

    /// Whether a sample's labels satisfy the matcher (a missing label reads as empty, as in
    /// PromQL).
    pub(crate) fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.label).map_or("", String::as_str);
        match (self.op, &self.regex) {
            (MatchOp::Equal, _) => value == self.value,
            (MatchOp::NotEqual, _) => value != self.value,
            (MatchOp::Matches, Some(regex)) => regex.is_match(value),
            (MatchOp::NotMatches, Some(regex)) => !regex.is_match(value),
            _ => false,
        }
    }
}

impl std::fmt::Display for Matcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let op = match self.op {
            MatchOp::Equal => "=",
            MatchOp::NotEqual => "!=",
            MatchOp::Matches => "=~",
            MatchOp::NotMatches => "!~",
        };
        write!(f, "{}{op}\"{}\"", self.label, self.value)
    }
}

/// A parsed exposition: the samples of the series asked for.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Exposition {
    pub(crate) samples: Vec<Sample>,
}

impl Exposition {
    /// Parses Prometheus text 0.0.4 or OpenMetrics 1.0 whole, every series kept (tests and
    /// small bodies).
    #[cfg(test)]
    pub(crate) fn parse(text: &str) -> Result<Exposition, String> {
        let mut parser = LineParser::new(None);
        parser.feed(text.as_bytes());
        Ok(parser.finish())
    }

    /// The samples of `name` that satisfy every matcher.
    pub(crate) fn select<'a>(
        &'a self,
        name: &'a str,
        matchers: &'a [Matcher],
    ) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples.iter().filter(move |sample| {
            sample.name == name
                && matchers
                    .iter()
                    .all(|matcher| matcher.matches(&sample.labels))
        })
    }
}

/// A streaming parser of the text formats: fed bytes as they arrive, keeps the samples of the
/// wanted series (all when `None`).
pub(crate) struct LineParser {
    wanted: Option<Arc<HashSet<String>>>,
    partial: Vec<u8>,
    skipping: bool,
    samples: Vec<Sample>,
}

impl LineParser {
    pub(crate) fn new(wanted: Option<Arc<HashSet<String>>>) -> Self {
        Self {
            wanted,
            partial: Vec::new(),
            skipping: false,
            samples: Vec::new(),
        }
    }

    /// Feeds the next bytes of the body.
    pub(crate) fn feed(&mut self, mut bytes: &[u8]) {
        while let Some(newline) = memchr(b'\n', bytes) {
            let (line, rest) = bytes.split_at(newline);
            bytes = &rest[1..];
            if self.skipping {
                self.skipping = false;
                self.partial.clear();
                continue;
            }
            if self.partial.is_empty() {
                self.line(line);
            } else {
                let mut joined = std::mem::take(&mut self.partial);
                joined.extend_from_slice(line);
                self.line(&joined);
                joined.clear();
                self.partial = joined;
            }
        }
        if !self.skipping {
            if self.partial.len() + bytes.len() > MAX_LINE {
                self.skipping = true;
                self.partial.clear();
            } else {
                self.partial.extend_from_slice(bytes);
            }
        }
    }

    /// The samples kept, after the last line.
    pub(crate) fn finish(mut self) -> Exposition {
        if !self.skipping && !self.partial.is_empty() {
            let last = std::mem::take(&mut self.partial);
            self.line(&last);
        }
        Exposition {
            samples: self.samples,
        }
    }

    fn line(&mut self, line: &[u8]) {
        let Ok(line) = std::str::from_utf8(line) else {
            return;
        };
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return;
        }
        let name_end = line
            .find(|c: char| c == '{' || c.is_ascii_whitespace())
            .unwrap_or(line.len());
        let name = &line[..name_end];
        if let Some(wanted) = &self.wanted
            && !wanted.contains(name)
        {
            return;
        }
        if self.samples.len() >= MAX_SAMPLES {
            return;
        }
        if let Some(sample) = parse_sample(name, &line[name_end..]) {
            self.samples.push(sample);
        }
    }
}

fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&byte| byte == needle)
}

/// `{labels} value [timestamp] [# exemplar]` after a sample's name.
fn parse_sample(name: &str, rest: &str) -> Option<Sample> {
    let mut labels = BTreeMap::new();
    let mut rest = rest;
    if let Some(body) = rest.strip_prefix('{') {
        let mut chars = body.char_indices().peekable();
        let end;
        loop {
            // Skip separators.
            while let Some((_, c)) = chars.peek() {
                if *c == ',' || c.is_ascii_whitespace() {
                    chars.next();
                } else {
                    break;
                }
            }
            let (start, c) = *chars.peek()?;
            if c == '}' {
                end = start + 1;
                break;
            }
            let mut label_end = start;
            for (index, c) in chars.by_ref() {
                if c == '=' {
                    label_end = index;
                    break;
                }
            }
            let label = body[start..label_end].trim();
            let (_, quote) = chars.next()?;
            if quote != '"' {
                return None;
            }
            let mut value = String::new();
            loop {
                let (_, c) = chars.next()?;
                match c {
                    '"' => break,
                    '\\' => match chars.next()?.1 {
                        'n' => value.push('\n'),
                        other => value.push(other),
                    },
                    other => value.push(other),
                }
            }
            labels.insert(label.to_owned(), value);
        }
        rest = &body[end..];
    }
    let value = rest.split_ascii_whitespace().next()?;
    let value = match value {
        "+Inf" | "Inf" | "+inf" | "inf" => f64::INFINITY,
        "-Inf" | "-inf" => f64::NEG_INFINITY,
        "NaN" | "nan" => f64::NAN,
        other => other.parse().ok()?,
    };
    Some(Sample {
        name: name.to_owned(),
        labels,
        value,
    })
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
}

impl ScrapeError {
    /// The core's class of the failure: a scrape with no answer in time is a timeout.
    pub(crate) fn kind(&self) -> probity::FailureKind {
        match self {
            ScrapeError::Fetch(FetchError::TimedOut(..)) => probity::FailureKind::Timeout,
            ScrapeError::Fetch(FetchError::Refused(_)) => probity::FailureKind::Refused,
            ScrapeError::Fetch(FetchError::Failed(..)) => probity::FailureKind::Unreachable,
            ScrapeError::Status { .. } => probity::FailureKind::Unavailable,
            ScrapeError::Fetch(FetchError::TooLarge(_)) => probity::FailureKind::Error,
        }
    }
}

type Scraped = Result<Arc<Exposition>, ScrapeError>;

/// Called with every exposition a scrape reads, once per scrape, whoever asked for it.
pub(crate) type OnScrape = Box<dyn Fn(&Exposition) + Send + Sync>;

#[derive(Default)]
struct State {
    last: Option<(Instant, Scraped)>,
    in_flight: Option<tokio::sync::watch::Receiver<Option<Scraped>>>,
}

/// The scrapes of one exposition URL.
pub(crate) struct Scraper {
    client: reqwest::Client,
    url: reqwest::Url,
    /// The series some reader asks for, and the longest timeout of any reader: set while the
    /// agent is built.
    wanted: Mutex<(HashSet<String>, Duration)>,
    /// Frozen copy of the wanted series for the parser.
    frozen: Mutex<Option<Arc<HashSet<String>>>>,
    state: Mutex<State>,
    /// Readers of every scrape (not of the cached copies): set while the agent is built.
    on_scrape: Mutex<Vec<OnScrape>>,
}

impl std::fmt::Debug for Scraper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scraper")
            .field("url", &fetch::address(&self.url))
            .finish_non_exhaustive()
    }
}

impl Scraper {
    /// A scraper of `url`.
    pub(crate) fn new(client: reqwest::Client, url: reqwest::Url) -> Self {
        Self {
            client,
            url,
            wanted: Mutex::new((HashSet::new(), Duration::ZERO)),
            frozen: Mutex::new(None),
            state: Mutex::new(State::default()),
            on_scrape: Mutex::new(Vec::new()),
        }
    }

    /// The URL scraped.
    pub(crate) fn url(&self) -> &reqwest::Url {
        &self.url
    }

    /// Registers a reader: the series it reads and its timeout.
    pub(crate) fn register<'a>(
        &self,
        series: impl IntoIterator<Item = &'a str>,
        timeout: Duration,
    ) {
        let mut wanted = self.wanted.lock();
        wanted.0.extend(series.into_iter().map(str::to_owned));
        wanted.1 = wanted.1.max(timeout);
        *self.frozen.lock() = None;
    }

    /// Calls `reader` with the exposition of every successful scrape, once per scrape.
    pub(crate) fn on_scrape(&self, reader: OnScrape) {
        self.on_scrape.lock().push(reader);
    }

    fn wanted(&self) -> (Arc<HashSet<String>>, Duration) {
        let mut frozen = self.frozen.lock();
        let wanted = self.wanted.lock();
        let set = frozen
            .get_or_insert_with(|| Arc::new(wanted.0.clone()))
            .clone();
        (set, wanted.1)
    }

    /// A scrape no older than `max_age` (the cached one, the one in flight, or a new one),
    /// waited for up to `timeout`. A failed scrape is cached too: readers of one interval see
    /// the same outcome — except a reader's own timeout, which is its alone.
    pub(crate) async fn scrape(self: &Arc<Self>, max_age: Duration, timeout: Duration) -> Scraped {
        let mut receiver = {
            let mut state = self.state.lock();
            if let Some((at, scraped)) = state.last.as_ref()
                && at.elapsed() <= max_age
            {
                return scraped.clone();
            }
            match &state.in_flight {
                Some(receiver) => receiver.clone(),
                None => {
                    let (sender, receiver) = tokio::sync::watch::channel(None);
                    state.in_flight = Some(receiver.clone());
                    let scraper = self.clone();
                    let (_, longest) = self.wanted();
                    let budget = longest.max(timeout);
                    tokio::spawn(async move {
                        let started = Instant::now();
                        let scraped = scraper.fetch(budget).await;
                        let mut state = scraper.state.lock();
                        state.last = Some((started, scraped.clone()));
                        state.in_flight = None;
                        drop(state);
                        let _ = sender.send(Some(scraped.clone()));
                        if let Ok(exposition) = &scraped {
                            for reader in scraper.on_scrape.lock().iter() {
                                reader(exposition);
                            }
                        }
                    });
                    receiver
                }
            }
        };
        let waited = tokio::time::timeout(timeout, receiver.wait_for(Option::is_some)).await;
        match waited {
            Ok(Ok(scraped)) => scraped.clone().unwrap_or_else(|| {
                Err(ScrapeError::Fetch(FetchError::TimedOut(
                    timeout,
                    fetch::address(&self.url),
                )))
            }),
            _ => Err(ScrapeError::Fetch(FetchError::TimedOut(
                timeout,
                fetch::address(&self.url),
            ))),
        }
    }

    async fn fetch(&self, timeout: Duration) -> Scraped {
        let (wanted, _) = self.wanted();
        let address = fetch::address(&self.url);
        let work = async {
            let mut response = self
                .client
                .get(self.url.clone())
                .header(reqwest::header::ACCEPT, ACCEPT)
                .send()
                .await
                .map_err(|error| fetch::classify(&error, &address))?;
            let status = response.status().as_u16();
            if !(200..=299).contains(&status) {
                return Err(ScrapeError::Status {
                    status,
                    address: address.clone(),
                });
            }
            let mut parser = LineParser::new(Some(wanted));
            let mut read = 0usize;
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|error| fetch::classify(&error, &address))?
            {
                read += chunk.len();
                if read > MAX_EXPOSITION {
                    return Err(ScrapeError::Fetch(FetchError::TooLarge(address.clone())));
                }
                parser.feed(&chunk);
            }
            Ok(Arc::new(parser.finish()))
        };
        match tokio::time::timeout(timeout, work).await {
            Ok(result) => result,
            Err(_) => Err(ScrapeError::Fetch(FetchError::TimedOut(timeout, address))),
        }
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

    fn matchers(pairs: &[(&str, &str)]) -> Vec<Matcher> {
        pairs
            .iter()
            .map(|(label, value)| Matcher::parse(label, value).unwrap())
            .collect()
    }

    #[test]
    fn parses_prom_client_text_and_selects_by_labels() {
        let exposition = Exposition::parse(PROM_CLIENT).unwrap();
        let lag: Vec<_> = exposition
            .select("nodejs_eventloop_lag_seconds", &[])
            .collect();
        assert_eq!(lag.len(), 1);
        assert!((lag[0].value - 0.002184).abs() < 1e-9);
        let orders = matchers(&[("pool", "orders")]);
        let waiting: Vec<_> = exposition
            .select("pg_pool_waiting_count", &orders)
            .collect();
        assert_eq!(waiting.len(), 1);
        assert_eq!(waiting[0].value, 3.0);
        let buckets: Vec<_> = exposition
            .select("http_request_duration_seconds_bucket", &[])
            .collect();
        assert_eq!(buckets.len(), 2);
        assert_eq!(buckets[1].labels["le"], "+Inf");
        assert_eq!(
            exposition
                .select("http_request_duration_seconds_count", &[])
                .next()
                .unwrap()
                .value,
            5.0
        );
    }

    #[test]
    fn matchers_are_promql_matchers() {
        let exposition = Exposition::parse(
            "http_requests_total{status=\"200\",method=\"GET\"} 1\n\
             http_requests_total{status=\"503\",method=\"GET\"} 2\n\
             http_requests_total{status=\"500\",method=\"HEAD\"} 3\n",
        )
        .unwrap();
        let sum = |pairs: &[(&str, &str)]| -> f64 {
            let matchers = matchers(pairs);
            exposition
                .select("http_requests_total", &matchers)
                .map(|sample| sample.value)
                .sum()
        };
        assert_eq!(sum(&[("status", "=~5..")]), 5.0);
        assert_eq!(sum(&[("status", "!~5..")]), 1.0);
        assert_eq!(sum(&[("status", "!=200")]), 5.0);
        assert_eq!(sum(&[("status", "=200")]), 1.0);
        assert_eq!(sum(&[("status", "200")]), 1.0);
        // Anchored: `5` alone matches no status.
        assert_eq!(sum(&[("status", "=~5")]), 0.0);
        assert_eq!(sum(&[("status", "=~5.."), ("method", "GET")]), 2.0);
        // A missing label reads as empty.
        assert_eq!(sum(&[("zone", "")]), 6.0);
        assert!(Matcher::parse("status", "=~(5").is_err());
    }

    #[test]
    fn parses_openmetrics_with_eof_exemplars_and_escapes() {
        let text = "# TYPE hikaricp_connections_timeout counter\n\
                    hikaricp_connections_timeout_total{pool=\"HikariPool-1\"} 7.0 # {trace_id=\"a\"} 1\n\
                    # TYPE hikaricp_connections_pending gauge\n\
                    hikaricp_connections_pending{pool=\"Hik\\\"ari, \\\\1\"} 2.0 1700000000\n\
                    # EOF\n";
        let exposition = Exposition::parse(text).unwrap();
        assert_eq!(exposition.samples.len(), 2);
        assert_eq!(exposition.samples[0].value, 7.0);
        assert_eq!(exposition.samples[1].labels["pool"], "Hik\"ari, \\1");
    }

    #[test]
    fn garbage_parses_to_nothing_rather_than_failing() {
        let exposition = Exposition::parse("<html>not metrics</html>\n\0\0\0").unwrap();
        assert!(exposition.samples.is_empty());
    }

    #[test]
    fn a_streamed_body_keeps_only_the_wanted_series_across_chunk_boundaries() {
        let wanted = Arc::new(HashSet::from(["pg_pool_waiting_count".to_owned()]));
        let mut parser = LineParser::new(Some(wanted));
        for chunk in PROM_CLIENT.as_bytes().chunks(7) {
            parser.feed(chunk);
        }
        let exposition = parser.finish();
        assert_eq!(exposition.samples.len(), 2);
        assert!(
            exposition
                .samples
                .iter()
                .all(|sample| sample.name == "pg_pool_waiting_count")
        );
    }

    #[test]
    fn an_overlong_line_is_skipped_whole() {
        let mut parser = LineParser::new(None);
        parser.feed(b"a 1\nhuge{x=\"");
        parser.feed(&vec![b'y'; MAX_LINE + 10]);
        parser.feed(b"\"} 5\nb 2\n");
        let exposition = parser.finish();
        let names: Vec<_> = exposition.samples.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
    }
}

#[cfg(test)]
mod sharing {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// An exposition server that answers every request after `delay`, counting them.
    async fn slow_server(delay: Duration) -> (reqwest::Url, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/metrics", listener.local_addr().unwrap());
        let requests = Arc::new(AtomicUsize::new(0));
        let counted = requests.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let counted = counted.clone();
                tokio::spawn(async move {
                    let mut buffer = [0u8; 4096];
                    let _ = stream.read(&mut buffer).await;
                    counted.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(delay).await;
                    let body = "nodejs_eventloop_lag_seconds 0.01\npg_pool_waiting_count 0\n";
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(answer.as_bytes()).await;
                });
            }
        });
        (reqwest::Url::parse(&url).unwrap(), requests)
    }

    #[tokio::test]
    async fn a_short_reader_timeout_does_not_decide_a_longer_readers_scrape() {
        let (url, requests) = slow_server(Duration::from_millis(500)).await;
        let scraper = Arc::new(Scraper::new(crate::fetch::client(), url));
        scraper.register(["pg_pool_waiting_count"], Duration::from_millis(300));
        scraper.register(
            ["nodejs_eventloop_lag_seconds"],
            Duration::from_millis(1500),
        );
        let readiness = scraper.scrape(Duration::from_millis(500), Duration::from_millis(300));
        let liveness = scraper.scrape(Duration::from_millis(500), Duration::from_millis(1500));
        let (readiness, liveness) = tokio::join!(readiness, liveness);
        assert!(
            matches!(readiness, Err(ScrapeError::Fetch(FetchError::TimedOut(..)))),
            "{readiness:?}"
        );
        assert_eq!(readiness.unwrap_err().kind(), probity::FailureKind::Timeout);
        let exposition = liveness.expect("the longer reader gets the scrape");
        assert_eq!(
            exposition
                .select("nodejs_eventloop_lag_seconds", &[])
                .next()
                .map(|sample| sample.value),
            Some(0.01)
        );
        // Both series kept, one request made.
        assert_eq!(exposition.samples.len(), 2);
        assert_eq!(requests.load(Ordering::SeqCst), 1);
        // Within max_age, the next reader gets the cached scrape without a request.
        let again = scraper
            .scrape(Duration::from_secs(5), Duration::from_millis(300))
            .await;
        assert!(again.is_ok());
        assert_eq!(requests.load(Ordering::SeqCst), 1);
    }
}
