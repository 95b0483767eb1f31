//! `probity inspect`: what a running service's health endpoints really do, judged from
//! outside.
//!
//! For each endpoint a bounded number of requests is sent, one after another: the status
//! codes, latency p50/p99, content type and cache headers are recorded, and so is whether a
//! failing answer names what failed. The liveness and readiness endpoints are compared (asked
//! plainly, with `?verbose` and for JSON: endpoints that answer alike every time cannot be
//! telling different things), and the service's contract is looked for. With a manifest, each
//! endpoint is held against the probe that calls it: its timeout, and whether liveness and
//! readiness call the same endpoint.
//!
//! Findings carry a rule id and a severity; `warning` and `error` make `probity inspect` exit 1,
//! like `probity lint`.

mod manifest;
mod report;

pub use manifest::{ManifestError, ManifestProbe, read_manifest};
pub use report::{render_human, render_json};

use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Most requests per endpoint.
pub const MAX_REQUESTS: usize = 1000;
/// Kubernetes' default `timeoutSeconds`, the bar without a manifest.
pub const KUBERNETES_DEFAULT_TIMEOUT: Duration = Duration::from_secs(1);
/// Paths tried when a URL names no endpoint.
pub const CONVENTIONAL_PATHS: &[&str] = &[
    "/livez",
    "/readyz",
    "/startupz",
    "/healthz",
    "/health",
    "/ready",
    "/live",
];
/// Largest body kept from an answer.
const MAX_BODY: usize = 64 << 10;

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
        } else if last.contains("ready") {
            Role::Readiness
        } else if last.contains("start") {
            Role::Startup
        } else {
            Role::Health
        }
    }
}

/// What one endpoint did.
#[derive(Debug, Clone, Serialize)]
pub struct Endpoint {
    /// The URL asked.
    pub url: String,
    /// The roles it plays (from the manifest, else from its path).
    pub roles: Vec<Role>,
    /// Requests sent.
    pub requests: usize,
    /// Answers by status code.
    pub statuses: BTreeMap<u16, usize>,
    /// Requests without an answer within the timeout.
    pub timeouts: usize,
    /// Requests that failed to connect or broke off.
    pub errors: usize,
    /// Median latency, milliseconds (timeouts count as the timeout).
    pub p50_ms: f64,
    /// 99th percentile latency, milliseconds.
    pub p99_ms: f64,
    /// The `Content-Type` of the last answer.
    pub content_type: Option<String>,
    /// The `Cache-Control` of the last answer.
    pub cache_control: Option<String>,
    /// Whether failing answers named what failed (`None`: no failing answer seen).
    pub names_failures: Option<bool>,
    /// The first line of the last answer's body, for the report.
    pub sample: String,
    /// The probe timeout from the manifest, seconds.
    pub probe_timeout_seconds: Option<u32>,
    #[serde(skip)]
    bodies: Vec<(u16, String)>,
}

/// The contract, if the service publishes one.
#[derive(Debug, Clone, Serialize)]
pub struct ContractSeen {
    /// Where it was looked for.
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
}

impl Report {
    /// Whether any finding is a warning or an error.
    pub fn has_findings(&self) -> bool {
        self.findings
            .iter()
            .any(|finding| finding.severity >= Severity::Warning)
    }
}

/// Why inspection could not run.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    /// A URL that does not parse.
    #[error("`{0}` is not an http:// URL")]
    BadUrl(String),
    /// Nothing answered at a base URL.
    #[error("{0}: none of {paths} answers", paths = CONVENTIONAL_PATHS.join(", "))]
    NothingFound(String),
    /// Options out of range.
    #[error("{0}")]
    Options(String),
}

/// Words in a liveness answer that name something outside the process.
const DEPENDENCY_WORDS: &[&str] = &[
    "database", "postgres", "mysql", "mariadb", "redis", "rabbit", "kafka", "mongo", "upstream",
    "\"db\"", "db:", "db ", "cache", "broker", "payments",
];

fn client(timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("probity-inspect/", env!("CARGO_PKG_VERSION")))
        .build()
        .unwrap_or_default()
}

async fn ask(
    client: &reqwest::Client,
    url: &reqwest::Url,
    accept: Option<&str>,
) -> Result<(u16, Option<String>, Option<String>, String), bool> {
    let mut request = client.get(url.clone());
    if let Some(accept) = accept {
        request = request.header(reqwest::header::ACCEPT, accept);
    }
    let response = request.send().await.map_err(|error| error.is_timeout())?;
    let status = response.status().as_u16();
    let header = |name| {
        response
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    };
    let content_type = header(reqwest::header::CONTENT_TYPE);
    let cache_control = header(reqwest::header::CACHE_CONTROL);
    let mut body = Vec::new();
    let mut response = response;
    while let Some(chunk) = response.chunk().await.map_err(|error| error.is_timeout())? {
        let room = MAX_BODY.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
    Ok((
        status,
        content_type,
        cache_control,
        String::from_utf8_lossy(&body).into_owned(),
    ))
}

/// The endpoints named by `urls`: a URL with a path is one endpoint; a bare origin is every
/// conventional path that does not answer 404.
pub async fn endpoints(
    urls: &[String],
    timeout: Duration,
) -> Result<Vec<reqwest::Url>, InspectError> {
    let client = client(timeout);
    let mut found = Vec::new();
    for text in urls {
        let url = reqwest::Url::parse(text)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https"))
            .ok_or_else(|| InspectError::BadUrl(crate::adapter::redact(text).into_owned()))?;
        if url.path() != "/" {
            found.push(url);
            continue;
        }
        let before = found.len();
        for path in CONVENTIONAL_PATHS {
            let Ok(candidate) = url.join(path) else {
                continue;
            };
            if let Ok((status, ..)) = ask(&client, &candidate, None).await
                && status != 404
            {
                found.push(candidate);
            }
        }
        if found.len() == before {
            return Err(InspectError::NothingFound(text.clone()));
        }
    }
    Ok(found)
}

/// Inspects the endpoints.
pub async fn inspect(urls: &[reqwest::Url], options: &Options) -> Result<Report, InspectError> {
    if options.requests == 0 || options.requests > MAX_REQUESTS {
        return Err(InspectError::Options(format!(
            "--requests must be between 1 and {MAX_REQUESTS}"
        )));
    }
    let client = client(options.timeout);
    let mut endpoints = Vec::new();
    for url in urls {
        endpoints.push(measure(&client, url, options).await);
    }
    let mut findings = Vec::new();
    for endpoint in &endpoints {
        judge_endpoint(endpoint, &mut findings);
    }
    compare_liveness_readiness(&client, &endpoints, options, &mut findings).await;
    let contracts = contracts(&client, urls, options, &mut findings).await;
    liveness_dependencies(&endpoints, &contracts, &mut findings);
    findings.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then(a.endpoint.cmp(&b.endpoint))
    });
    Ok(Report {
        endpoints,
        contracts,
        findings,
    })
}

async fn measure(client: &reqwest::Client, url: &reqwest::Url, options: &Options) -> Endpoint {
    let probes: Vec<&ManifestProbe> = options
        .probes
        .iter()
        .filter(|probe| probe.path == url.path() && probe.port_matches(url))
        .collect();
    let mut roles: Vec<Role> = probes.iter().map(|probe| probe.role).collect();
    roles.sort();
    roles.dedup();
    if roles.is_empty() {
        roles.push(Role::from_path(url.path()));
    }
    let probe_timeout_seconds = probes.iter().map(|probe| probe.timeout_seconds).min();
    let mut latencies = Vec::with_capacity(options.requests);
    let mut endpoint = Endpoint {
        url: url.to_string(),
        roles,
        requests: options.requests,
        statuses: BTreeMap::new(),
        timeouts: 0,
        errors: 0,
        p50_ms: 0.0,
        p99_ms: 0.0,
        content_type: None,
        cache_control: None,
        names_failures: None,
        sample: String::new(),
        probe_timeout_seconds,
        bodies: Vec::new(),
    };
    for _ in 0..options.requests {
        let started = Instant::now();
        match ask(client, url, None).await {
            Ok((status, content_type, cache_control, body)) => {
                latencies.push(started.elapsed());
                *endpoint.statuses.entry(status).or_default() += 1;
                endpoint.content_type = content_type;
                endpoint.cache_control = cache_control;
                if !(200..=399).contains(&status) {
                    let named = names_something(&body);
                    endpoint.names_failures =
                        Some(endpoint.names_failures.unwrap_or(true) && named);
                }
                endpoint.sample = body
                    .lines()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(120)
                    .collect();
                endpoint.bodies.push((status, body));
            }
            Err(timed_out) => {
                if timed_out {
                    endpoint.timeouts += 1;
                    latencies.push(options.timeout);
                } else {
                    endpoint.errors += 1;
                }
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

/// Whether a failing answer says what failed: more than a status word.
fn names_something(body: &str) -> bool {
    let trimmed = body.trim();
    if trimmed.contains("[-]") {
        return true;
    }
    if let Ok(json) = serde_json::from_str::<serde_json::Value>(trimmed) {
        let object = json.as_object();
        return object.is_some_and(|object| {
            object.iter().any(|(key, value)| {
                matches!(
                    key.as_str(),
                    "checks" | "failed" | "error" | "errors" | "details" | "reason"
                ) && !value.is_null()
                    && value != &serde_json::json!([])
                    && value != &serde_json::json!({})
                    && value != &serde_json::json!("")
            })
        });
    }
    let generic = [
        "",
        "fail",
        "failed",
        "error",
        "unhealthy",
        "not ready",
        "service unavailable",
        "down",
        "unavailable",
        "ko",
        "nok",
    ];
    !generic.contains(&trimmed.to_ascii_lowercase().as_str())
}

fn judge_endpoint(endpoint: &Endpoint, findings: &mut Vec<Finding>) {
    let answered: usize = endpoint.statuses.values().sum();
    let mut add = |rule, severity, message: String| {
        findings.push(Finding {
            rule,
            severity,
            endpoint: endpoint.url.clone(),
            message,
        })
    };
    if answered == 0 && endpoint.timeouts > 0 {
        add(
            "timeouts",
            Severity::Error,
            format!(
                "none of {} requests got an answer in time ({} timed out): every probe fails",
                endpoint.requests, endpoint.timeouts
            ),
        );
        return;
    }
    if answered == 0 {
        add(
            "unreachable",
            Severity::Error,
            format!(
                "no answer to {} requests ({} timed out, {} failed to connect)",
                endpoint.requests, endpoint.timeouts, endpoint.errors
            ),
        );
        return;
    }
    if endpoint.timeouts > 0 {
        add(
            "timeouts",
            Severity::Warning,
            format!(
                "{} of {} requests got no answer in time: a probe counts each as a failure",
                endpoint.timeouts, endpoint.requests
            ),
        );
    }
    let p99 = Duration::from_secs_f64(endpoint.p99_ms / 1000.0);
    match endpoint.probe_timeout_seconds {
        Some(seconds) if p99 >= Duration::from_secs(u64::from(seconds.max(1))) => add(
            "slower-than-probe-timeout",
            Severity::Warning,
            format!(
                "p99 is {} but the probe's timeoutSeconds is {seconds}: slow answers fail the probe",
                show_ms(endpoint.p99_ms)
            ),
        ),
        None if p99 >= KUBERNETES_DEFAULT_TIMEOUT => add(
            "slower-than-default-timeout",
            Severity::Warning,
            format!(
                "p99 is {}, at or above Kubernetes' default timeoutSeconds (1): a probe with \
                 defaults fails on these answers; a probe should read cached state, not do the work",
                show_ms(endpoint.p99_ms)
            ),
        ),
        _ => {}
    }
    let uncached = endpoint.cache_control.as_deref().is_some_and(|value| {
        let value = value.to_ascii_lowercase();
        value.contains("no-store") || value.contains("no-cache")
    });
    if !uncached {
        add(
            "cacheable",
            Severity::Warning,
            format!(
                "answers carry {}: a proxy or client cache may serve a stale \"healthy\"; send \
                 Cache-Control: no-store",
                endpoint
                    .cache_control
                    .as_deref()
                    .map_or("no Cache-Control".to_owned(), |value| format!(
                        "Cache-Control: {value}"
                    ))
            ),
        );
    }
    if endpoint.names_failures == Some(false) {
        add(
            "failures-unnamed",
            Severity::Warning,
            "failing answers do not say what failed: whoever is paged has to guess".to_owned(),
        );
    }
}

fn show_ms(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.1}s", ms / 1000.0)
    } else {
        format!("{ms:.1}ms")
    }
}

async fn compare_liveness_readiness(
    client: &reqwest::Client,
    endpoints: &[Endpoint],
    options: &Options,
    findings: &mut Vec<Finding>,
) {
    // From the manifest: one endpoint behind both probes.
    for endpoint in endpoints {
        if endpoint.roles.contains(&Role::Liveness) && endpoint.roles.contains(&Role::Readiness) {
            findings.push(Finding {
                rule: "same-endpoint-liveness-readiness",
                severity: Severity::Warning,
                endpoint: endpoint.url.clone(),
                message: "liveness and readiness probes call the same endpoint: a failure that \
                          should only drain the pod restarts it too"
                    .to_owned(),
            });
        }
    }
    let live = endpoints
        .iter()
        .find(|endpoint| endpoint.roles == [Role::Liveness]);
    let ready = endpoints
        .iter()
        .find(|endpoint| endpoint.roles == [Role::Readiness]);
    let (Some(live), Some(ready)) = (live, ready) else {
        return;
    };
    // Alike when plainly asked is common (both say "ok"); alike with ?verbose and as JSON too
    // means they cannot be telling different things.
    let plain_alike =
        !live.bodies.is_empty() && live.bodies.iter().zip(&ready.bodies).all(|(a, b)| a == b);
    if !plain_alike {
        return;
    }
    let (Ok(live_url), Ok(ready_url)) = (
        reqwest::Url::parse(&live.url),
        reqwest::Url::parse(&ready.url),
    ) else {
        return;
    };
    let mut variants_alike = true;
    for (query, accept) in [(Some("verbose"), None), (None, Some("application/json"))] {
        let (mut live_variant, mut ready_variant) = (live_url.clone(), ready_url.clone());
        live_variant.set_query(query);
        ready_variant.set_query(query);
        let a = ask(client, &live_variant, accept)
            .await
            .ok()
            .map(|(s, _, _, b)| (s, b));
        let b = ask(client, &ready_variant, accept)
            .await
            .ok()
            .map(|(s, _, _, b)| (s, b));
        if a != b {
            variants_alike = false;
        }
    }
    let _ = options;
    if variants_alike {
        findings.push(Finding {
            rule: "identical-liveness-readiness",
            severity: Severity::Warning,
            endpoint: format!("{} and {}", live.url, ready.url),
            message: "liveness and readiness answer identically (plainly, with ?verbose and as \
                      JSON): they check the same thing, so either a dependency restarts the pod \
                      or readiness checks nothing a request needs"
                .to_owned(),
        });
    }
}

async fn contracts(
    client: &reqwest::Client,
    urls: &[reqwest::Url],
    options: &Options,
    findings: &mut Vec<Finding>,
) -> Vec<ContractSeen> {
    let mut places: Vec<String> = match &options.contract_url {
        Some(url) => vec![url.clone()],
        None => urls
            .iter()
            .filter_map(|url| url.join("/contract").ok().map(|url| url.to_string()))
            .collect(),
    };
    places.sort();
    places.dedup();
    let mut seen = Vec::new();
    for place in places {
        let parsed = reqwest::Url::parse(&place).ok();
        let contract = match &parsed {
            Some(url) => match ask(client, url, Some("application/json")).await {
                Ok((200, _, _, body)) => probity::Contract::from_json(&body).ok(),
                _ => None,
            },
            None => None,
        };
        let liveness_checks_dependencies = contract.as_ref().and_then(|contract| {
            contract
                .endpoint(probity::ProbeKind::Liveness)
                .map(|endpoint| endpoint.checks_dependencies)
        });
        if contract.is_none() {
            findings.push(Finding {
                rule: "no-contract",
                severity: Severity::Info,
                endpoint: place.clone(),
                message: "no contract published here: what each endpoint checks is not \
                          machine-readable (probity services serve one at /contract)"
                    .to_owned(),
            });
        }
        seen.push(ContractSeen {
            url: place,
            published: contract.is_some(),
            liveness_checks_dependencies,
        });
    }
    seen
}

fn liveness_dependencies(
    endpoints: &[Endpoint],
    contracts: &[ContractSeen],
    findings: &mut Vec<Finding>,
) {
    for contract in contracts {
        if contract.liveness_checks_dependencies == Some(true) {
            findings.push(Finding {
                rule: "liveness-checks-dependencies",
                severity: Severity::Error,
                endpoint: contract.url.clone(),
                message: "the contract says liveness checks dependencies: a shared outage \
                          restarts every replica at once"
                    .to_owned(),
            });
        }
    }
    for endpoint in endpoints
        .iter()
        .filter(|endpoint| endpoint.roles.contains(&Role::Liveness))
    {
        let named: Vec<&str> = DEPENDENCY_WORDS
            .iter()
            .copied()
            .filter(|word| {
                endpoint
                    .bodies
                    .iter()
                    .any(|(_, body)| body.to_ascii_lowercase().contains(word))
            })
            .collect();
        if let Some(word) = named.first() {
            findings.push(Finding {
                rule: "liveness-names-dependency",
                severity: Severity::Warning,
                endpoint: endpoint.url.clone(),
                message: format!(
                    "the liveness answer mentions {}: liveness should check only what a \
                     restart fixes, never a dependency",
                    word.trim_matches(|c: char| c == '"' || c == ':' || c == ' ')
                ),
            });
        }
    }
}
