//! Finding the health endpoints under a base URL, and telling them from a catch-all.
//!
//! Under a base URL (a URL whose path ends in `/`), each of [`HEALTH_PATHS`] is asked once,
//! one after another. A path counts as an endpoint unless it answers 404 or 410, or answers
//! what a path that cannot exist answers: a single-page app's catch-all (200 and the same HTML
//! page for every path), or an authenticating proxy's 401 or its redirect to a login page.
//! A path beneath an endpoint already found that answers as it does, where a path that cannot
//! exist beneath it answers alike too, is that endpoint again (a handler mounted on a prefix),
//! not another one.

use super::InspectError;
use super::http::{Answer, ask};
use std::hash::{BuildHasher, Hasher};

/// The health paths tried under a base URL, relative to it: the conventions of Kubernetes and
/// Go services, ASP.NET Core, Node (terminus, lightship), Spring Boot's actuator, Quarkus and
/// MicroProfile, Django (django-health-check), Flask, Rails, Prometheus-style `/-/`, and the
/// common generic names.
pub const HEALTH_PATHS: &[&str] = &[
    "livez",
    "readyz",
    "startupz",
    "healthz",
    "health",
    "health/live",
    "health/ready",
    "health/started",
    "health/liveness",
    "health/readiness",
    "actuator/health",
    "actuator/health/liveness",
    "actuator/health/readiness",
    "q/health",
    "q/health/live",
    "q/health/ready",
    "q/health/started",
    "ht/",
    "healthcheck",
    "health-check",
    "up",
    "-/healthy",
    "-/ready",
    "ready",
    "live",
    "alive",
    "ping",
    "status",
    "heartbeat",
    "api/health",
    "api/healthz",
    "_health",
    "__health",
];

/// What a path that cannot exist answers, at one base.
#[derive(Debug, Clone)]
pub(super) struct Fingerprint {
    /// The path asked.
    pub url: reqwest::Url,
    /// Its answer.
    pub answer: Answer,
}

impl Fingerprint {
    /// Whether `answer` is what any path answers here: the same status, and the same body, the
    /// both an HTML page, or the same redirect.
    pub(super) fn matches(&self, answer: &Answer) -> bool {
        let other = &self.answer;
        if other.status != answer.status || matches!(answer.status, 404 | 410) {
            return false;
        }
        let final_url = |answer: &Answer| answer.redirects.last().map(|(_, url)| url.clone());
        other.body == answer.body
            || (other.is_page() && answer.is_page())
            || (other.elsewhere.is_some() && other.elsewhere == answer.elsewhere)
            || (!other.redirects.is_empty() && final_url(other) == final_url(answer))
    }

    /// `200 text/html` or `401`: what the catch-all answers, for a message.
    pub(super) fn summary(&self) -> String {
        let answer = &self.answer;
        match (&answer.elsewhere, &answer.content_type) {
            (Some(target), _) => format!(
                "{} to {}",
                answer.status,
                probity::redact::redact(target.as_str())
            ),
            (None, Some(content_type)) => format!("{} {content_type}", answer.status),
            (None, None) => answer.status.to_string(),
        }
    }
}

/// A path no service serves: a random name beside `base`'s last segment.
pub(super) fn nonexistent(base: &reqwest::Url) -> Option<reqwest::Url> {
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    base.join(&format!("probity-inspect-{random:016x}")).ok()
}

/// Asks the nonexistent path beside `base`.
pub(super) async fn fingerprint(
    client: &reqwest::Client,
    base: &reqwest::Url,
) -> Result<Option<Fingerprint>, super::http::Failed> {
    let Some(url) = nonexistent(base) else {
        return Ok(None);
    };
    let answer = ask(client, &url, None).await?;
    Ok(Some(Fingerprint { url, answer }))
}

/// The endpoints found under one base URL.
pub(super) struct Found {
    /// Each endpoint.
    pub endpoints: Vec<reqwest::Url>,
    /// What a nonexistent path answered.
    pub fingerprint: Option<Fingerprint>,
}

/// Tries [`HEALTH_PATHS`] under `base`.
pub(super) async fn discover(
    client: &reqwest::Client,
    base: &reqwest::Url,
    timeout: std::time::Duration,
) -> Result<Found, InspectError> {
    let shown = || probity::redact::redact(base.as_str()).into_owned();
    let fingerprint = fingerprint(client, base)
        .await
        .map_err(|failed| InspectError::NoAnswer {
            url: shown(),
            why: failed.failure.describe(timeout),
        })?;
    let mut found: Vec<Candidate> = Vec::new();
    let mut like_catch_all = 0;
    for path in HEALTH_PATHS {
        let Ok(candidate) = base.join(path) else {
            continue;
        };
        let Ok(answer) = ask(client, &candidate, None).await else {
            continue;
        };
        if matches!(answer.status, 404 | 410) {
            continue;
        }
        if fingerprint
            .as_ref()
            .is_some_and(|fingerprint| fingerprint.matches(&answer))
        {
            like_catch_all += 1;
            continue;
        }
        // `/health` redirected to `/health/`, also a candidate: one endpoint.
        let landed = answer
            .redirects
            .last()
            .map_or_else(|| candidate.clone(), |(_, url)| url.clone());
        if found.iter().any(|seen| seen.landed == landed) {
            continue;
        }
        if answered_beneath(client, &mut found, &landed, &answer).await {
            continue;
        }
        found.push(Candidate {
            url: candidate,
            landed,
            answer,
            answers_beneath: None,
        });
    }
    let endpoints: Vec<reqwest::Url> = found.into_iter().map(|found| found.url).collect();
    if endpoints.is_empty() {
        let catch_all = match (&fingerprint, like_catch_all) {
            (Some(fingerprint), 1..) => format!(
                "; {like_catch_all} answered as a path that does not exist answers ({}): a \
                 catch-all, not a health endpoint",
                fingerprint.summary()
            ),
            _ => String::new(),
        };
        return Err(InspectError::NothingFound {
            url: shown(),
            tried: HEALTH_PATHS.len(),
            catch_all,
        });
    }
    Ok(Found {
        endpoints,
        fingerprint,
    })
}

/// A path that answered.
struct Candidate {
    url: reqwest::Url,
    /// Where its redirects landed (itself without any).
    landed: reqwest::Url,
    answer: Answer,
    /// Whether a path that cannot exist beneath it answers as it does (asked when needed).
    answers_beneath: Option<bool>,
}

/// Whether `answer` at `landed` is an endpoint already found answering for every path beneath
/// it (an Express `app.use('/health', …)` answers `/health/live` and `/health/anything` alike):
/// the same handler, not another endpoint.
async fn answered_beneath(
    client: &reqwest::Client,
    found: &mut [Candidate],
    landed: &reqwest::Url,
    answer: &Answer,
) -> bool {
    for parent in found.iter_mut() {
        let folder = format!("{}/", parent.landed.path().trim_end_matches('/'));
        let beneath = landed.path().starts_with(&folder)
            && parent.answer.status == answer.status
            && parent.answer.body == answer.body;
        if !beneath {
            continue;
        }
        if parent.answers_beneath.is_none() {
            let mut base = parent.landed.clone();
            base.set_path(&folder);
            base.set_query(None);
            let alike = match nonexistent(&base) {
                Some(url) => ask(client, &url, None).await.is_ok_and(|there| {
                    there.status == parent.answer.status && there.body == parent.answer.body
                }),
                None => false,
            };
            parent.answers_beneath = Some(alike);
        }
        if parent.answers_beneath == Some(true) {
            return true;
        }
    }
    false
}
