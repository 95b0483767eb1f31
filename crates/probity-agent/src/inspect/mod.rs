//! `probity inspect`: what a running service's health endpoints really do, judged from
//! outside.
//!
//! A URL whose path ends in `/` is a base: the [health paths of the common
//! frameworks](HEALTH_PATHS) under it are tried once each, and every one that answers — other
//! than 404, and other than what a path that cannot exist answers (a single-page app's
//! catch-all, a login redirect) — is an endpoint. Any other URL is one endpoint.
//!
//! Each endpoint is asked a bounded number of times, one request after another, as the
//! kubelet asks: a new connection each time, redirects followed within the origin (at most
//! 10), a redirect elsewhere reported, not followed. The status codes, latency p50/p99,
//! content type and cache headers are recorded, the checks its body names (booleans, status
//! words, Spring Boot's actuator, the IETF health format, terminus, MicroProfile, Kubernetes'
//! `[+]`/`[-]` lines), and whether a failing answer names what failed. The liveness and
//! readiness endpoints are compared (asked plainly, with `?verbose` and for JSON: endpoints
//! that answer alike every time cannot be telling different things), and the service's
//! contract is looked for. With a manifest, each endpoint is held against the probe that calls
//! it: its timeout, and whether liveness and readiness call the same endpoint.
//!
//! Nothing that came from the network or a URL is shown as it came: credentials and tokens in
//! URLs and bodies are masked with the runtime's own rules ([`probity::redact`]), and the
//! human report writes control characters out ([`probity_contract::text::escape_control`]).
//!
//! Findings carry a rule id and a severity; `warning` and `error` make `probity inspect` exit 1,
//! like `probity lint`. An endpoint that never answers is not a finding but an error
//! ([`Report::unanswered`]): `probity inspect` exits 2, naming what happened — a timeout, a
//! refused connection, TLS spoken to a plain port or plain HTTP to a TLS port, headers too
//! large to read.
//!
//! Inspect reads no metrics exposition: a gauge that never moves while the service serves
//! requests takes many scrapes to see, and is the agent's finding (its status page and log).

mod body;
mod discover;
mod http;
mod judge;
mod manifest;
mod report;

pub use body::{CheckState, NamedCheck};
pub use discover::HEALTH_PATHS;
pub use http::Failure;
pub use manifest::{ManifestError, ManifestProbe, read_manifest};
pub use report::{render_human, render_json};

use discover::Fingerprint;
use http::Answer;
use probity::redact::redact;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Most requests per endpoint.
pub const MAX_REQUESTS: usize = 1000;
/// An endpoint that has not answered this many requests in a row, and never answered, is not
/// asked again: a server that never answers costs three timeouts, not `--requests` of them.
const GIVE_UP_AFTER: usize = 3;

/// What to inspect and how hard.
#[derive(Debug, Clone)]
pub struct Options {
    /// Requests per endpoint.
    pub requests: usize,
    /// Longest one request may take before it counts as a timeout.
    pub timeout: Duration,
    /// Where the contract is, when not at the service's `/contract`.
    pub contract_url: Option<String>,
    /// The probes of a manifest.
    pub probes: Vec<ManifestProbe>,
}

/// Which question an endpoint answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Liveness.
    Liveness,
    /// Readiness.
    Readiness,
    /// Startup.
    Startup,
    /// A `/health` endpoint that does not say.
    Health,
}

impl Role {
    fn from_path(path: &str) -> Role {
        let last = path.rsplit('/').find(|part| !part.is_empty()).unwrap_or("");
        if last.contains("live") {
            Role::Liveness
        } else if last.contains("ready") || last.contains("readiness") {
            Role::Readiness
        } else if last.contains("start") {
            Role::Startup
        } else {
            Role::Health
        }
    }

    fn name(self) -> &'static str {
        match self {
            Role::Liveness => "liveness",
            Role::Readiness => "readiness",
            Role::Startup => "startup",
            Role::Health => "health",
        }
    }
}

/// What one endpoint did.
#[derive(Debug, Clone, Serialize)]
pub struct Endpoint {
    /// The URL asked, credentials masked.
    pub url: String,
    /// The roles it plays (from the manifest, else from its path).
    pub roles: Vec<Role>,
    /// Requests sent.
    pub requests: usize,
    /// Answers by final status code (after same-origin redirects).
    pub statuses: BTreeMap<u16, usize>,
    /// Requests without an answer, by what happened.
    pub failures: BTreeMap<Failure, usize>,
    /// The client's words for the last failure, credentials masked.
    pub failure_detail: Option<String>,
    /// Median latency, milliseconds (timeouts count as the timeout).
    pub p50_ms: f64,
    /// 99th percentile latency, milliseconds.
    pub p99_ms: f64,
    /// The `Content-Type` of the last answer.
    pub content_type: Option<String>,
    /// The `Cache-Control` of the last answer.
    pub cache_control: Option<String>,
    /// The redirects the last answer went through: `307 http://…/health`.
    pub redirects: Vec<String>,
    /// Where a redirect to another origin pointed (not followed), credentials masked.
    pub redirected_elsewhere: Option<String>,
    /// The checks the last answer that named any named.
    pub checks: Vec<NamedCheck>,
    /// Whether failing answers named what failed (`None`: no failing answer seen).
    pub names_failures: Option<bool>,
    /// The first line of the last answer's body, credentials masked.
    pub sample: String,
    /// The probe timeout from the manifest, seconds.
    pub probe_timeout_seconds: Option<u64>,
    /// What a path that cannot exist answers beside this one, when it answers.
    pub catch_all: Option<CatchAll>,
    #[serde(skip)]
    parsed: Option<reqwest::Url>,
    #[serde(skip)]
    bodies: Vec<(u16, String)>,
    #[serde(skip)]
    last: Option<Answer>,
    #[serde(skip)]
    fingerprint: Option<Fingerprint>,
}

impl Endpoint {
    /// Whether any request got an answer.
    pub fn answered(&self) -> bool {
        !self.statuses.is_empty()
    }
}

/// What a path that cannot exist answered, beside an endpoint.
#[derive(Debug, Clone, Serialize)]
pub struct CatchAll {
    /// The path asked, credentials masked.
    pub url: String,
    /// Its status.
    pub status: u16,
    /// Its `Content-Type`.
    pub content_type: Option<String>,
}

/// The contract, if the service publishes one.
#[derive(Debug, Clone, Serialize)]
pub struct ContractSeen {
    /// Where it was looked for, credentials masked.
    pub url: String,
    /// Whether a valid contract was there.
    pub published: bool,
    /// Whether the contract says liveness checks dependencies.
    pub liveness_checks_dependencies: Option<bool>,
}

/// Severity of a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing.
    Info,
    /// Likely wrong.
    Warning,
    /// Wrong.
    Error,
}

/// One finding.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Rule id.
    pub rule: &'static str,
    /// Severity.
    pub severity: Severity,
    /// The endpoint(s) it is about.
    pub endpoint: String,
    /// What was seen and why it matters.
    pub message: String,
}

/// Everything inspected.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Every endpoint.
    pub endpoints: Vec<Endpoint>,
    /// The contract lookup, per origin.
    pub contracts: Vec<ContractSeen>,
    /// Every finding, most severe first.
    pub findings: Vec<Finding>,
    #[serde(skip)]
    timeout: Duration,
}

impl Report {
    /// Whether any finding is a warning or an error.
    pub fn has_findings(&self) -> bool {
        self.findings
            .iter()
            .any(|finding| finding.severity >= Severity::Warning)
    }

    /// Each endpoint that never answered, and why: an error, not a finding.
    pub fn unanswered(&self) -> Vec<String> {
        self.endpoints
            .iter()
            .filter(|endpoint| !endpoint.answered())
            .map(|endpoint| {
                format!(
                    "{}: no answer to {} request(s): {}",
                    endpoint.url,
                    endpoint.requests,
                    judge::failure_words(endpoint, self.timeout)
                )
            })
            .collect()
    }
}

/// Why inspection could not run.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    /// A URL that does not parse.
    #[error("`{0}` is not an http:// or https:// URL")]
    BadUrl(String),
    /// A base URL that did not answer at all.
    #[error("{url}: {why}")]
    NoAnswer {
        /// The base URL, credentials masked.
        url: String,
        /// What happened.
        why: String,
    },
    /// No health endpoint under a base URL.
    #[error(
        "{url}: none of the {tried} health paths tried answers (other than 404){catch_all}; \
         name the endpoint (probity inspect {url}health) or the base the service is mounted at \
         ({url}api/)"
    )]
    NothingFound {
        /// The base URL, credentials masked.
        url: String,
        /// How many paths were tried.
        tried: usize,
        /// What a nonexistent path answered, when the paths answered alike.
        catch_all: String,
    },
    /// Options out of range.
    #[error("{0}")]
    Options(String),
}

/// Inspects the endpoints named by `urls`: a URL whose path ends in `/` is a base under which
/// [`HEALTH_PATHS`] are looked for; any other URL is one endpoint.
pub async fn inspect(urls: &[String], options: &Options) -> Result<Report, InspectError> {
    if options.requests == 0 || options.requests > MAX_REQUESTS {
        return Err(InspectError::Options(format!(
            "--requests must be between 1 and {MAX_REQUESTS}"
        )));
    }
    let client = http::client(options.timeout);
    let mut targets: Vec<(reqwest::Url, Option<Fingerprint>)> = Vec::new();
    let mut beside: BTreeMap<String, Option<Fingerprint>> = BTreeMap::new();
    for text in urls {
        let url = reqwest::Url::parse(text)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https") && url.host().is_some())
            .ok_or_else(|| InspectError::BadUrl(shown(text)))?;
        if url.path().ends_with('/') {
            let found = discover::discover(&client, &url, options.timeout).await?;
            for endpoint in found.endpoints {
                targets.push((endpoint, found.fingerprint.clone()));
            }
        } else {
            // What a path that cannot exist answers beside this one: one request per folder.
            let folder = url.join(".").map(|folder| folder.to_string());
            let fingerprint = match folder {
                Ok(folder) => match beside.get(&folder) {
                    Some(seen) => seen.clone(),
                    None => {
                        let seen = discover::fingerprint(&client, &url).await.ok().flatten();
                        beside.insert(folder, seen.clone());
                        seen
                    }
                },
                Err(_) => None,
            };
            targets.push((url, fingerprint));
        }
    }
    let mut seen = Vec::new();
    targets.retain(|(url, _)| {
        let new = !seen.contains(url);
        seen.push(url.clone());
        new
    });
    let mut endpoints = Vec::new();
    for (url, fingerprint) in &targets {
        endpoints.push(measure(&client, url, fingerprint.clone(), options).await);
    }
    let mut findings = Vec::new();
    for endpoint in &endpoints {
        judge::endpoint(endpoint, options.timeout, &mut findings);
    }
    judge::compare_liveness_readiness(&client, &endpoints, &mut findings).await;
    // The contract is looked for where something answered.
    let urls: Vec<reqwest::Url> = targets
        .into_iter()
        .zip(&endpoints)
        .filter(|(_, endpoint)| endpoint.answered())
        .map(|((url, _), _)| url)
        .collect();
    let contracts = judge::contracts(&client, &urls, options, &mut findings).await;
    judge::liveness_dependencies(&endpoints, &contracts, &mut findings);
    findings.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then(a.endpoint.cmp(&b.endpoint))
    });
    Ok(Report {
        endpoints,
        contracts,
        findings,
        timeout: options.timeout,
    })
}

/// Text from a URL or the network, credentials masked.
fn shown(text: &str) -> String {
    redact(text).into_owned()
}

async fn measure(
    client: &reqwest::Client,
    url: &reqwest::Url,
    fingerprint: Option<Fingerprint>,
    options: &Options,
) -> Endpoint {
    let probes: Vec<&ManifestProbe> = options
        .probes
        .iter()
        .filter(|probe| probe.calls(url))
        .collect();
    let mut roles: Vec<Role> = probes.iter().map(|probe| probe.role).collect();
    roles.sort();
    roles.dedup();
    if roles.is_empty() {
        roles.push(Role::from_path(url.path()));
    }
    let probe_timeout_seconds = probes.iter().map(|probe| probe.timeout.as_secs()).min();
    let mut endpoint = Endpoint {
        url: shown(url.as_str()),
        roles,
        requests: 0,
        statuses: BTreeMap::new(),
        failures: BTreeMap::new(),
        failure_detail: None,
        p50_ms: 0.0,
        p99_ms: 0.0,
        content_type: None,
        cache_control: None,
        redirects: Vec::new(),
        redirected_elsewhere: None,
        checks: Vec::new(),
        names_failures: None,
        sample: String::new(),
        probe_timeout_seconds,
        catch_all: fingerprint.as_ref().map(|fingerprint| CatchAll {
            url: shown(fingerprint.url.as_str()),
            status: fingerprint.answer.status,
            content_type: fingerprint.answer.content_type.clone(),
        }),
        parsed: Some(url.clone()),
        bodies: Vec::new(),
        last: None,
        fingerprint,
    };
    let mut latencies = Vec::with_capacity(options.requests);
    let mut unanswered_in_a_row = 0;
    // A failure a TLS mismatch also produces is diagnosed once, with one request.
    let mut diagnosis: Option<Failure> = None;
    for _ in 0..options.requests {
        if !endpoint.answered() && unanswered_in_a_row >= GIVE_UP_AFTER {
            break;
        }
        endpoint.requests += 1;
        let started = Instant::now();
        match http::ask(client, url, None).await {
            Ok(answer) => {
                unanswered_in_a_row = 0;
                latencies.push(started.elapsed());
                record(&mut endpoint, answer);
            }
            Err(mut failed) => {
                unanswered_in_a_row += 1;
                if failed.failure == Failure::Timeout {
                    latencies.push(options.timeout);
                }
                match diagnosis {
                    Some(kind) => failed.failure = kind,
                    None => {
                        let before = failed.failure;
                        http::diagnose(client, url, &mut failed).await;
                        if failed.failure != before {
                            diagnosis = Some(failed.failure);
                        }
                    }
                }
                *endpoint.failures.entry(failed.failure).or_default() += 1;
                endpoint.failure_detail = Some(failed.detail);
            }
        }
    }
    latencies.sort();
    let percentile = |fraction: f64| -> f64 {
        if latencies.is_empty() {
            return 0.0;
        }
        let index =
            ((latencies.len() as f64 * fraction).ceil() as usize).clamp(1, latencies.len()) - 1;
        (latencies[index].as_secs_f64() * 10_000.0).round() / 10.0
    };
    endpoint.p50_ms = percentile(0.50);
    endpoint.p99_ms = percentile(0.99);
    endpoint
}

fn record(endpoint: &mut Endpoint, answer: Answer) {
    *endpoint.statuses.entry(answer.status).or_default() += 1;
    endpoint.content_type.clone_from(&answer.content_type);
    endpoint.cache_control.clone_from(&answer.cache_control);
    endpoint.redirects = answer
        .redirects
        .iter()
        .map(|(status, url)| format!("{status} {}", shown(url.as_str())))
        .collect();
    endpoint.redirected_elsewhere = answer.elsewhere.as_ref().map(|url| shown(url.as_str()));
    if !answer.passes() {
        let named = body::names_something(&answer.body);
        endpoint.names_failures = Some(endpoint.names_failures.unwrap_or(true) && named);
    }
    let checks = body::named_checks(&answer.body);
    if !checks.is_empty() {
        endpoint.checks = checks
            .into_iter()
            .map(|check| NamedCheck {
                name: shown(&check.name),
                state: check.state,
            })
            .collect();
    }
    endpoint.sample = shown(
        &answer
            .body
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(120)
            .collect::<String>(),
    );
    endpoint.bodies.push((answer.status, answer.body.clone()));
    endpoint.last = Some(answer);
}
