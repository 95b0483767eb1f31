//! One GET of one of the app's endpoints, bounded in time and size, with the outcome classified
//! the way liveness needs it: a refused connection means nothing is listening (the app is
//! booting or restarting), a timeout means something is listening but cannot answer.

use std::time::Duration;

/// Largest body read from the app (an exposition or a health answer).
pub(crate) const MAX_BODY: usize = 8 << 20;

/// A body the app answered with.
#[derive(Debug, Clone)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: String,
}

/// Why there was no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FetchError {
    /// Nothing listens on the port.
    #[error("connection refused ({0}): nothing is listening")]
    Refused(String),
    /// No complete answer within the timeout.
    #[error("no answer within {} ({})", probity_contract::duration::format(*.0), .1)]
    TimedOut(Duration, String),
    /// The body is larger than [`MAX_BODY`].
    #[error("the answer from {} is larger than {} MiB", .0, MAX_BODY >> 20)]
    TooLarge(String),
    /// Anything else.
    #[error("{1} ({0})")]
    Failed(String, String),
}

/// The HTTP client every fetch shares: no proxy (the app is on the pod's loopback), no
/// redirects followed (an answer is judged as given).
pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .pool_idle_timeout(Duration::from_secs(30))
        .user_agent(concat!("probity-agent/", env!("CARGO_PKG_VERSION")))
        .build()
        .unwrap_or_default()
}

/// `host:port` of a URL, for messages (never its userinfo or query).
pub(crate) fn address(url: &reqwest::Url) -> String {
    format!(
        "{}:{}",
        url.host_str().unwrap_or("?"),
        url.port_or_known_default().unwrap_or(80)
    )
}

/// GETs `url` with an `Accept` header, within `timeout`.
pub(crate) async fn get(
    client: &reqwest::Client,
    url: &reqwest::Url,
    accept: &'static str,
    timeout: Duration,
) -> Result<Answer, FetchError> {
    let shown = address(url);
    let work = async {
        let mut response = client
            .get(url.clone())
            .header(reqwest::header::ACCEPT, accept)
            .send()
            .await
            .map_err(|error| classify(&error, &shown))?;
        let status = response.status().as_u16();
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|error| classify(&error, &shown))?
        {
            if body.len() + chunk.len() > MAX_BODY {
                return Err(FetchError::TooLarge(shown.clone()));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Answer {
            status,
            body: String::from_utf8_lossy(&body).into_owned(),
        })
    };
    match tokio::time::timeout(timeout, work).await {
        Ok(result) => result,
        Err(_) => Err(FetchError::TimedOut(timeout, shown)),
    }
}

pub(crate) fn classify(error: &reqwest::Error, shown: &str) -> FetchError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::ConnectionRefused {
                return FetchError::Refused(shown.to_owned());
            }
            return FetchError::Failed(shown.to_owned(), io.to_string());
        }
        source = cause.source();
    }
    let message = probity_contract::text::error_chain(error);
    // reqwest names the URL in its messages; the URL may carry a credential.
    FetchError::Failed(
        shown.to_owned(),
        crate::adapter::redact(&message).into_owned(),
    )
}
