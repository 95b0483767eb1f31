//! Asking an endpoint as the kubelet does, and saying what went wrong when no answer came.
//!
//! The kubelet's HTTP prober (`pkg/probe/http/http.go`) opens a new connection for every probe
//! (`DisableKeepAlives`), does not verify the certificate of an `HTTPS` probe
//! (`InsecureSkipVerify`), follows redirects to the same host at most 10 times, and takes a
//! redirect to another host as the answer — a success, with a "Probe terminated redirects"
//! warning (<https://kubernetes.io/docs/concepts/configuration/liveness-readiness-startup-probes/>).
//! [`ask`] does the same, except that it never leaves the URL's origin: a redirect elsewhere is
//! reported, not followed.

use serde::Serialize;
use std::time::Duration;

/// Same-origin redirects followed at most, as the kubelet (`stopped after 10 redirects`).
pub(super) const MAX_REDIRECTS: usize = 10;
/// Largest body kept from an answer.
const MAX_BODY: usize = 64 << 10;

/// One answer, after the same-origin redirects.
#[derive(Debug, Clone)]
pub(super) struct Answer {
    /// The final status.
    pub status: u16,
    /// The final `Content-Type`.
    pub content_type: Option<String>,
    /// The final `Cache-Control`.
    pub cache_control: Option<String>,
    /// The final body, at most 64 KiB of it.
    pub body: String,
    /// The redirects followed: each status and where it pointed.
    pub redirects: Vec<(u16, reqwest::Url)>,
    /// Where a redirect to another origin pointed (not followed).
    pub elsewhere: Option<reqwest::Url>,
    /// More than [`MAX_REDIRECTS`] redirects: the last one was not followed.
    pub too_many_redirects: bool,
}

impl Answer {
    /// Whether the kubelet counts this answer as a pass: a status in 200..400.
    pub(super) fn passes(&self) -> bool {
        (200..400).contains(&self.status)
    }

    /// Whether the answer is an HTML page: typed `text/html` and marked up. A bare `OK` typed
    /// `text/html` (Flask's default type) is a status, not a page.
    pub(super) fn is_page(&self) -> bool {
        let typed = self
            .content_type
            .as_deref()
            .is_some_and(|value| value.to_ascii_lowercase().starts_with("text/html"));
        typed && {
            let head: String = self
                .body
                .chars()
                .take(4096)
                .collect::<String>()
                .to_ascii_lowercase();
            [
                "<!doctype",
                "<html",
                "<head",
                "<body",
                "<div",
                "<script",
                "<form",
                "<title",
            ]
            .iter()
            .any(|tag| head.contains(tag))
        }
    }
}

/// Why a request got no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Failure {
    /// No answer within the timeout.
    Timeout,
    /// Nothing listens: the connection was refused.
    Refused,
    /// An `https://` URL at a port that speaks plain HTTP.
    TlsOnPlainPort,
    /// An `http://` URL at a port that speaks TLS.
    PlainOnTlsPort,
    /// The answer's headers were larger than a client reads.
    OversizedHeaders,
    /// The connection closed before an answer.
    Closed,
    /// Anything else (the report gives the error).
    Other,
}

impl Failure {
    /// What happened, in words.
    pub fn describe(self, timeout: Duration) -> String {
        match self {
            Failure::Timeout => format!(
                "no answer within {}",
                probity_contract::duration::format(timeout)
            ),
            Failure::Refused => "connection refused: nothing listens on that port".to_owned(),
            Failure::TlsOnPlainPort => {
                "the URL says https:// but the port speaks plain HTTP: use http://".to_owned()
            }
            Failure::PlainOnTlsPort => {
                "the URL says http:// but the port speaks TLS: use https://".to_owned()
            }
            Failure::OversizedHeaders => "the answer's headers are too large to read (more than \
                                           100 headers or about 400 KiB)"
                .to_owned(),
            Failure::Closed => "the connection closed before an answer".to_owned(),
            Failure::Other => "the request failed".to_owned(),
        }
    }

    /// Whether a request with the other scheme may tell more: a failure that a TLS mismatch
    /// also produces. A plain server may wait for the end of a request head that a TLS hello
    /// never sends, so an `https://` timeout is asked about too.
    fn may_be_tls_mismatch(self, scheme: &str) -> bool {
        matches!(self, Failure::Closed | Failure::Other)
            || (self == Failure::Timeout && scheme == "https")
    }
}

/// A failed request: the kind, and the client's own words (credentials redacted).
#[derive(Debug, Clone)]
pub(super) struct Failed {
    pub failure: Failure,
    pub detail: String,
}

/// The client, configured as the kubelet's prober (see the module's docs).
pub(super) fn client(timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(0)
        .danger_accept_invalid_certs(true)
        .user_agent(concat!("probity-inspect/", env!("CARGO_PKG_VERSION")))
        .build()
        .unwrap_or_default()
}

/// Whether two URLs share scheme, host and port.
pub(super) fn same_origin(a: &reqwest::Url, b: &reqwest::Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

/// GETs `url`, following redirects within its origin.
pub(super) async fn ask(
    client: &reqwest::Client,
    url: &reqwest::Url,
    accept: Option<&str>,
) -> Result<Answer, Failed> {
    let mut current = url.clone();
    let mut redirects = Vec::new();
    loop {
        let mut request = client.get(current.clone());
        if let Some(accept) = accept {
            request = request.header(reqwest::header::ACCEPT, accept);
        }
        let mut response = request.send().await.map_err(|error| failed(&error))?;
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
        let target = match (status, header(reqwest::header::LOCATION)) {
            (301 | 302 | 303 | 307 | 308, Some(location)) => current.join(&location).ok(),
            _ => None,
        };
        let mut elsewhere = None;
        let mut too_many_redirects = false;
        if let Some(target) = target {
            if !same_origin(&target, url) {
                elsewhere = Some(target);
            } else if redirects.len() >= MAX_REDIRECTS {
                too_many_redirects = true;
            } else {
                redirects.push((status, target.clone()));
                current = target;
                continue;
            }
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|error| failed(&error))? {
            let room = MAX_BODY.saturating_sub(body.len());
            body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        }
        let body = String::from_utf8_lossy(&body).into_owned();
        if status == 400 && speaks_of_plain_http_to_tls(&body) {
            return Err(Failed {
                failure: Failure::PlainOnTlsPort,
                detail: format!("400: {}", first_line(&body)),
            });
        }
        return Ok(Answer {
            status,
            content_type,
            cache_control,
            body,
            redirects,
            elsewhere,
            too_many_redirects,
        });
    }
}

/// When a request fails the way a TLS mismatch fails, asks once with the other scheme: an
/// answer there names the mismatch.
pub(super) async fn diagnose(client: &reqwest::Client, url: &reqwest::Url, failed: &mut Failed) {
    if !failed.failure.may_be_tls_mismatch(url.scheme()) {
        return;
    }
    let (other, mismatch) = match url.scheme() {
        "https" => ("http", Failure::TlsOnPlainPort),
        _ => ("https", Failure::PlainOnTlsPort),
    };
    let mut flipped = url.clone();
    if flipped.set_scheme(other).is_err() {
        return;
    }
    // The port stays the URL's own, also where it was the scheme's default.
    if url.port().is_none() && flipped.set_port(url.port_or_known_default()).is_err() {
        return;
    }
    if client.get(flipped).send().await.is_ok() {
        failed.failure = mismatch;
    }
}

/// Go's and nginx's answers to plain HTTP sent to a TLS port.
fn speaks_of_plain_http_to_tls(body: &str) -> bool {
    let lower = body.to_ascii_lowercase();
    lower.contains("http request to an https server")
        || lower.contains("plain http request was sent to https port")
}

fn first_line(text: &str) -> String {
    text.lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(120)
        .collect()
}

fn failed(error: &reqwest::Error) -> Failed {
    Failed {
        failure: classify(error),
        detail: probity::redact::redact(&chain(error)).into_owned(),
    }
}

fn classify(error: &reqwest::Error) -> Failure {
    if error.is_timeout() {
        return Failure::Timeout;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = source {
        if let Some(hyper) = cause.downcast_ref::<hyper::Error>() {
            if hyper.is_parse_too_large() {
                return Failure::OversizedHeaders;
            }
            if hyper.is_timeout() {
                return Failure::Timeout;
            }
            if hyper.is_incomplete_message() {
                return Failure::Closed;
            }
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            match io.kind() {
                ConnectionRefused => return Failure::Refused,
                TimedOut => return Failure::Timeout,
                ConnectionReset | ConnectionAborted | UnexpectedEof | BrokenPipe => {
                    return Failure::Closed;
                }
                _ => {}
            }
        }
        source = cause.source();
    }
    Failure::Other
}

/// The messages of an error's sources, skipping repeats: reqwest's own message only says which
/// URL it was asking, which the report already shows.
fn chain(error: &reqwest::Error) -> String {
    match std::error::Error::source(error) {
        Some(cause) => probity_contract::text::error_chain(cause),
        None => error.to_string(),
    }
}
