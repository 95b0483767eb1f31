//! The findings: what each endpoint's answers say about it, and what the endpoints say
//! together.

use super::body::{CheckState, overall_state};
use super::http::{self, MAX_REDIRECTS};
use super::{Endpoint, Failure, Finding, Options, Role, Severity, shown};
use probity_contract::duration;
use probity_contract::kube::probe::ProbeTiming;
use std::time::Duration;

/// Words in a liveness answer that name something outside the process.
const DEPENDENCY_WORDS: &[&str] = &[
    "database", "postgres", "mysql", "mariadb", "redis", "rabbit", "kafka", "mongo", "upstream",
    "\"db\"", "db:", "db ", "cache", "broker", "payments",
];

/// A latency in milliseconds, in the contract's duration format (`12.3ms`, `1.5s`).
fn show_ms(ms: f64) -> String {
    duration::format(Duration::from_micros((ms * 1000.0).round().max(0.0) as u64))
}

/// What happened to an endpoint's unanswered requests, most frequent first.
pub(super) fn failure_words(endpoint: &Endpoint, timeout: Duration) -> String {
    let mut kinds: Vec<(&Failure, &usize)> = endpoint.failures.iter().collect();
    kinds.sort_by(|a, b| b.1.cmp(a.1));
    let mut words: Vec<String> = kinds
        .iter()
        .map(|(kind, count)| {
            let what = kind.describe(timeout);
            if **count == endpoint.requests {
                what
            } else {
                format!("{count}× {what}")
            }
        })
        .collect();
    if kinds.iter().any(|(kind, _)| **kind == Failure::Other)
        && let Some(detail) = &endpoint.failure_detail
    {
        words.push(format!("({detail})"));
    }
    if words.is_empty() {
        "no request sent".to_owned()
    } else {
        words.join("; ")
    }
}

pub(super) fn endpoint(endpoint: &Endpoint, timeout: Duration, findings: &mut Vec<Finding>) {
    let answered: usize = endpoint.statuses.values().sum();
    let mut add = |rule, severity, message: String| {
        findings.push(Finding {
            rule,
            severity,
            endpoint: endpoint.url.clone(),
            message,
        })
    };
    if answered == 0 {
        // `Report::unanswered` makes this an error; the finding keeps it in the report.
        add(
            "no-answer",
            Severity::Error,
            format!(
                "none of {} request(s) got an answer: {}",
                endpoint.requests,
                failure_words(endpoint, timeout)
            ),
        );
        return;
    }
    let timeouts = endpoint
        .failures
        .get(&Failure::Timeout)
        .copied()
        .unwrap_or(0);
    if timeouts > 0 {
        add(
            "timeouts",
            Severity::Warning,
            format!(
                "{timeouts} of {} requests got no answer in time: a probe counts each as a failure",
                endpoint.requests
            ),
        );
    }
    let broken: usize = endpoint.failures.values().sum::<usize>() - timeouts;
    if broken > 0 {
        add(
            "failed-requests",
            Severity::Warning,
            format!(
                "{broken} of {} requests failed without an answer: {}",
                endpoint.requests,
                failure_words(endpoint, timeout)
            ),
        );
    }
    redirects(endpoint, &mut add);
    page_or_catch_all(endpoint, &mut add);
    body_against_status(endpoint, &mut add);
    let p99 = Duration::from_secs_f64(endpoint.p99_ms / 1000.0);
    let default_timeout = ProbeTiming::default().timeout;
    match endpoint.probe_timeout_seconds {
        Some(seconds) if p99 >= Duration::from_secs(seconds.max(1)) => add(
            "slower-than-probe-timeout",
            Severity::Warning,
            format!(
                "p99 is {} but the probe's timeoutSeconds is {seconds}: slow answers fail the probe",
                show_ms(endpoint.p99_ms)
            ),
        ),
        None if p99 >= default_timeout => add(
            "slower-than-default-timeout",
            Severity::Warning,
            format!(
                "p99 is {}, at or above Kubernetes' default timeoutSeconds ({}): a probe with \
                 defaults fails on these answers; a probe should read cached state, not do the work",
                show_ms(endpoint.p99_ms),
                default_timeout.as_secs()
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

fn redirects(endpoint: &Endpoint, add: &mut impl FnMut(&'static str, Severity, String)) {
    let Some(answer) = &endpoint.last else {
        return;
    };
    if let Some(target) = &answer.elsewhere {
        let same_host = endpoint
            .parsed
            .as_ref()
            .is_some_and(|url| url.host_str() == target.host_str());
        let kubelet = if same_host {
            "the kubelet follows a redirect to the same host name, so the probe checks a \
             different port or scheme than this endpoint"
        } else {
            "the kubelet does not follow a redirect to another host and counts the redirect as \
             a success (\"Probe terminated redirects\"): the probe passes without checking anything"
        };
        add(
            "redirect-to-other-origin",
            Severity::Error,
            format!(
                "answers {} to another origin ({}), not followed: {kubelet}",
                answer.status,
                shown(target.as_str())
            ),
        );
    } else if answer.too_many_redirects {
        add(
            "redirect-loop",
            Severity::Error,
            format!(
                "more than {MAX_REDIRECTS} redirects: the kubelet stops after {MAX_REDIRECTS} and \
                 fails the probe"
            ),
        );
    } else if let Some((status, target)) = answer.redirects.first() {
        let landed = answer
            .redirects
            .last()
            .map_or(target, |(_, url)| url)
            .path();
        add(
            "redirect",
            Severity::Info,
            format!(
                "answers {status}, redirected to {} (followed, judged there): the kubelet \
                 follows it too, but every probe costs {} requests; point the probe at {}",
                shown(target.as_str()),
                answer.redirects.len() + 1,
                shown(landed)
            ),
        );
    }
}

fn page_or_catch_all(endpoint: &Endpoint, add: &mut impl FnMut(&'static str, Severity, String)) {
    let Some(answer) = &endpoint.last else {
        return;
    };
    if !answer.passes() {
        return;
    }
    if let Some(fingerprint) = &endpoint.fingerprint
        && fingerprint.matches(answer)
    {
        add(
            "catch-all",
            Severity::Error,
            format!(
                "answers as a path that cannot exist answers ({} answered {}): a catch-all (a \
                 single-page app's index, a login page), not a health endpoint; a probe here \
                 passes whenever anything listens",
                shown(fingerprint.url.path()),
                fingerprint.summary()
            ),
        );
    } else if answer.is_page() {
        add(
            "html-answer",
            Severity::Warning,
            format!(
                "answers an HTML page ({}): a page, not a health status; check that this path is \
                 the service's health endpoint and not a page it serves",
                answer.content_type.as_deref().unwrap_or("text/html")
            ),
        );
    }
}

fn body_against_status(endpoint: &Endpoint, add: &mut impl FnMut(&'static str, Severity, String)) {
    let Some(answer) = &endpoint.last else {
        return;
    };
    if !(200..300).contains(&answer.status) {
        return;
    }
    let failing: Vec<&str> = endpoint
        .checks
        .iter()
        .filter(|check| check.state == CheckState::Fail)
        .map(|check| check.name.as_str())
        .collect();
    let failing_text = if failing.is_empty() {
        String::new()
    } else {
        format!("; failing: {}", failing.join(", "))
    };
    match overall_state(&answer.body) {
        Some(CheckState::Fail) => add(
            "passes-while-body-fails",
            Severity::Warning,
            format!(
                "answers {} while its body says it fails{failing_text}: the kubelet reads only \
                 the status code, so this probe passes",
                answer.status
            ),
        ),
        None if !failing.is_empty() => add(
            "passes-with-failing-check",
            Severity::Info,
            format!(
                "answers {} while its body names failing checks ({}): the kubelet reads only the \
                 status code; if a request needs them, answer 503",
                answer.status,
                failing.join(", ")
            ),
        ),
        _ => {}
    }
}

pub(super) async fn compare_liveness_readiness(
    client: &reqwest::Client,
    endpoints: &[Endpoint],
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
    let (Some(live_url), Some(ready_url)) = (&live.parsed, &ready.parsed) else {
        return;
    };
    let mut variants_alike = true;
    for (query, accept) in [(Some("verbose"), None), (None, Some("application/json"))] {
        let (mut live_variant, mut ready_variant) = (live_url.clone(), ready_url.clone());
        live_variant.set_query(query);
        ready_variant.set_query(query);
        let a = http::ask(client, &live_variant, accept)
            .await
            .ok()
            .map(|answer| (answer.status, answer.body));
        let b = http::ask(client, &ready_variant, accept)
            .await
            .ok()
            .map(|answer| (answer.status, answer.body));
        if a != b {
            variants_alike = false;
        }
    }
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

pub(super) async fn contracts(
    client: &reqwest::Client,
    urls: &[reqwest::Url],
    options: &Options,
    findings: &mut Vec<Finding>,
) -> Vec<super::ContractSeen> {
    let mut places: Vec<reqwest::Url> = match &options.contract_url {
        Some(url) => reqwest::Url::parse(url).into_iter().collect(),
        None => urls
            .iter()
            .filter_map(|url| url.join("/contract").ok())
            .collect(),
    };
    places.sort();
    places.dedup();
    let mut seen = Vec::new();
    for place in places {
        let contract = match http::ask(client, &place, Some("application/json")).await {
            Ok(answer) if answer.status == 200 => probity::Contract::from_json(&answer.body).ok(),
            _ => None,
        };
        let liveness_checks_dependencies = contract.as_ref().and_then(|contract| {
            contract
                .endpoint(probity::ProbeKind::Liveness)
                .map(|endpoint| endpoint.checks_dependencies)
        });
        let url = shown(place.as_str());
        if contract.is_none() {
            findings.push(Finding {
                rule: "no-contract",
                severity: Severity::Info,
                endpoint: url.clone(),
                message: "no contract published here: what each endpoint checks is not \
                          machine-readable (probity services serve one at /contract)"
                    .to_owned(),
            });
        }
        seen.push(super::ContractSeen {
            url,
            published: contract.is_some(),
            liveness_checks_dependencies,
        });
    }
    seen
}

pub(super) fn liveness_dependencies(
    endpoints: &[Endpoint],
    contracts: &[super::ContractSeen],
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

#[cfg(test)]
mod tests {
    use super::show_ms;

    #[test]
    fn latencies_read_in_the_contract_duration_format() {
        assert_eq!(show_ms(12.3), "12.3ms");
        assert_eq!(show_ms(1500.0), "1.5s");
        assert_eq!(show_ms(0.4), "400us");
    }
}
