//! The recommendations service — soft: when it is down or slow, checkout answers with the
//! most ordered products and marks the answer degraded (`x-degraded: recommendations`).
//!
//! The fix of the pool-leak incident keeps the recommendation service out of readiness on
//! purpose ("we degrade without it"). Here it is a **soft** check: it shows in `/readyz` as `warn` and in `/readyz/recommendations`
//! as failing, so an operator sees it, but it never takes the instance out of rotation.
//!
//! The service's interface: `GET {base}/recommendations?customer=NAME` answers
//! `{"items": [...]}` (any JSON values; they are passed through).

use probity::{CheckError, CheckSpec, Detail, Tier};
use serde::Deserialize;
use std::time::Duration;

/// A client of the recommendations service.
#[derive(Debug, Clone)]
pub struct Recommendations {
    client: reqwest::Client,
    base: String,
}

#[derive(Deserialize)]
struct Answer {
    items: Vec<serde_json::Value>,
}

impl Recommendations {
    /// A client for the service at `base` (no trailing slash), giving up after `timeout`.
    pub fn new(base: &str, timeout: Duration) -> anyhow::Result<Recommendations> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .build()
            .map_err(|error| anyhow::anyhow!("cannot build the HTTP client: {error}"))?;
        Ok(Recommendations {
            client,
            base: base.to_owned(),
        })
    }

    /// Recommendations for `customer`, or why there are none.
    pub async fn for_customer(&self, customer: &str) -> Result<Vec<serde_json::Value>, String> {
        let response = self
            .client
            .get(format!("{}/recommendations", self.base))
            .query(&[("customer", customer)])
            .send()
            .await
            .map_err(|error| describe(&error))?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("recommendations answered {status}"));
        }
        let bytes = response.bytes().await.map_err(|error| describe(&error))?;
        let answer: Answer = serde_json::from_slice(&bytes)
            .map_err(|error| format!("recommendations answered malformed JSON: {error}"))?;
        Ok(answer.items)
    }

    /// The soft `recommendations` readiness check: the real endpoint answers 2xx with JSON.
    pub fn check_spec(&self, name: &str) -> CheckSpec {
        let this = self.clone();
        let check = move || {
            let this = this.clone();
            async move {
                let items = this
                    .for_customer("readiness-check")
                    .await
                    .map_err(CheckError::new)?;
                Ok(Detail::new().message(format!("{} items", items.len())))
            }
        };
        CheckSpec::new(name, Tier::Soft, check)
            .dependency("http")
            .interval(Duration::from_secs(2))
            .timeout(Duration::from_secs(1))
    }
}

fn describe(error: &reqwest::Error) -> String {
    let kind = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "cannot connect"
    } else {
        "request failed"
    };
    // reqwest's message holds the URL; the base URL is ours and carries no credentials, but
    // redact anyway in case one was configured with userinfo.
    probity::redact::redact(&format!("recommendations {kind}: {error}")).into_owned()
}
