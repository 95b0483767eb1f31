//! A status page for operators: every readiness check, liveness condition and startup step,
//! worst first, with its reason, time in state, recent poll latencies and last transitions.

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use probity::{CheckState, Details, Entry, HealthView, ProbeKind, Snapshot, Status, Tier};
use probity_contract::duration::format_coarse as seconds;
use probity_contract::text::escape_markup as escape;
use probity_contract::verdict::{Cause, Effect, Gate, Subject};
use serde::Serialize;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::time::Instant;

/// The longest reason shown, in characters; a longer one is cut and marked `…`.
pub(crate) const MAX_REASON_CHARS: usize = 512;
/// The longest name shown, in characters.
pub(crate) const MAX_NAME_CHARS: usize = 128;
/// The most rows one page lists; the rest are counted, not shown.
pub(crate) const MAX_ROWS: usize = 256;
/// How often the open page refreshes itself, in milliseconds.
const REFRESH_MS: u32 = 2_000;

/// Serves a live status page for a [`probity::Health`], for people to read.
///
/// | path | answers |
/// |---|---|
/// | `GET /status` | HTML: every entry worst first, refreshing itself every two seconds |
/// | `GET /status.json` | the same rows as JSON ([`StatusReport`]) |
///
/// Each readiness check shows its tier, its state (`healthy`, `unhealthy`, `recovering 1 of
/// 3`, `stale`, `no result yet`), its last result and reason, how long it has been in that
/// state, its last [`probity::HISTORY_LEN`] poll latencies (a sparkline, failed polls in red)
/// and its last transitions with wall-clock timestamps. Liveness conditions and startup steps
/// follow the same order: failing first, then degraded, then passing.
///
/// **For operators only.** The page shows full reasons ([`Details::Admin`]): hosts, databases
/// and what a driver said (credentials are redacted by the core before anything is stored).
/// Mount it on an admin listener, never on the one clients reach.
///
/// The page is self-contained — inline CSS and a few lines of inline script, no external
/// asset — and every name and reason is HTML-escaped. Its size is bounded: reasons are cut at
/// 512 characters, names at 128, and at most 256 rows are listed.
/// Building it reads the published snapshot only; it never waits on a check.
///
/// ```
/// use probity::Health;
/// use probity_axum::StatusPage;
///
/// # fn main() -> Result<(), probity::BuildError> {
/// let health = Health::builder().service("checkout").build()?;
/// let admin: axum::Router = StatusPage::new(health).router();
/// # let _ = admin;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct StatusPage {
    health: HealthView,
    findings: Option<FindingsSource>,
}

/// Where a page reads its findings, each time it is built.
type FindingsSource = Arc<dyn Fn() -> Vec<Finding> + Send + Sync>;

impl std::fmt::Debug for StatusPage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatusPage")
            .field("health", &self.health)
            .field("findings", &self.findings.is_some())
            .finish()
    }
}

/// Something an operator should look at that fails no probe: a figure that never moves while
/// the service serves (`db_pool_pending_acquires read 0 in 120 scrapes while 20,000 requests
/// were served: is it wired?`), an exposition cut short. Listed above the entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// What kind of finding (`unmoving_series`, `truncated_exposition`): stable, for tools.
    pub kind: String,
    /// What it is about (a series, a URL without credentials).
    pub subject: String,
    /// The finding in words.
    pub message: String,
}

impl StatusPage {
    /// A status page over `health`'s snapshots.
    pub fn new(health: impl Into<HealthView>) -> Self {
        Self {
            health: health.into(),
            findings: None,
        }
    }

    /// Lists what `source` returns, read each time the page is built, above the entries (at
    /// most 256, each cut at 512 characters).
    pub fn findings(mut self, source: impl Fn() -> Vec<Finding> + Send + Sync + 'static) -> Self {
        self.findings = Some(Arc::new(source));
        self
    }

    /// The router serving `GET /status` and `GET /status.json`, to merge into an admin
    /// listener's router.
    pub fn router<S>(self) -> Router<S>
    where
        S: Clone + Send + Sync + 'static,
    {
        Router::new()
            .route("/status", get(page))
            .route("/status.json", get(json))
            .with_state(Arc::new(self))
    }

    /// The report the page shows, built from the current snapshot.
    pub fn report(&self) -> StatusReport {
        let mut report =
            StatusReport::of(&self.health.snapshot(), Instant::now(), SystemTime::now());
        if let Some(source) = &self.findings {
            report.findings = source()
                .into_iter()
                .take(MAX_ROWS)
                .map(|finding| Finding {
                    kind: cut(&finding.kind, MAX_NAME_CHARS),
                    subject: cut(&finding.subject, MAX_NAME_CHARS),
                    message: cut(&finding.message, MAX_REASON_CHARS),
                })
                .collect();
        }
        report
    }
}

async fn page(State(page): State<Arc<StatusPage>>) -> Response {
    let body = page.report().to_html();
    with_headers(body, "text/html; charset=utf-8")
}

async fn json(State(page): State<Arc<StatusPage>>) -> Response {
    let body = serde_json::to_string(&page.report())
        .unwrap_or_else(|error| format!("{{\"error\":\"{error}\"}}"));
    with_headers(body, "application/json")
}

fn with_headers(body: String, content_type: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; \
             connect-src 'self'; img-src data:",
        ),
    );
    response
}

/// How bad an entry is: the page's order and colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// It fails its probe.
    Failing,
    /// It degrades its probe without failing it, or fails without counting (an info check).
    Degraded,
    /// It passes.
    Passing,
}

impl Severity {
    /// `failing`, `degraded` or `passing`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Failing => "failing",
            Severity::Degraded => "degraded",
            Severity::Passing => "passing",
        }
    }
}

/// Everything the page shows, at one moment.
#[derive(Debug, Clone, Serialize)]
pub struct StatusReport {
    /// The service's name, if declared.
    pub service: Option<String>,
    /// When the report was built (RFC 3339, UTC).
    pub generated_at: String,
    /// The snapshot's generation: it increases with every published change.
    pub generation: u64,
    /// `/readyz`'s status.
    pub readiness: Status,
    /// `/livez`'s status.
    pub liveness: Status,
    /// `/startupz`'s status.
    pub startup: Status,
    /// Every entry, worst first (registration order within a severity).
    pub rows: Vec<Row>,
    /// Rows left off past the 256 listed.
    pub rows_left_off: usize,
    /// What an operator should look at that fails no probe ([`StatusPage::findings`]).
    pub findings: Vec<Finding>,
}

/// One entry of the page: a readiness check, a liveness condition, a startup step, or a
/// readiness gate that is not passing (`shutdown`).
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// `readiness check`, `liveness condition`, `startup step` or `readiness gate`.
    pub kind: &'static str,
    /// The entry's name.
    pub name: String,
    /// The tier, for a check.
    pub tier: Option<Tier>,
    /// Its severity.
    pub severity: Severity,
    /// Its state in words: `healthy`, `unhealthy`, `recovering 1 of 3`, `stale`, …
    pub state: String,
    /// Why it is not passing (or why it warns), in full.
    pub reason: Option<String>,
    /// A check's last result.
    pub last: Option<LastPoll>,
    /// Seconds since a check last turned healthy or unhealthy.
    pub in_state_secs: Option<f64>,
    /// A check's recent polls, oldest first.
    pub polls: Vec<PollPoint>,
    /// Recent transitions, newest first: a check's falls and rises, a liveness condition's
    /// moves between passing, waiting and failing, a startup step's completion.
    pub transitions: Vec<TransitionPoint>,
    /// Transitions since the entry was registered, including those no longer kept.
    pub transitions_total: u64,
}

/// A check's last result.
#[derive(Debug, Clone, Serialize)]
pub struct LastPoll {
    /// Whether it passed.
    pub ok: bool,
    /// How long it took, in milliseconds.
    pub duration_ms: f64,
    /// How long ago it finished, in seconds.
    pub age_secs: f64,
    /// The success note, warning or failure message.
    pub message: Option<String>,
}

/// One poll of a check's history.
#[derive(Debug, Clone, Serialize)]
pub struct PollPoint {
    /// When it was published (RFC 3339, UTC).
    pub at: String,
    /// How long it took, in milliseconds.
    pub duration_ms: f64,
    /// Whether it passed.
    pub ok: bool,
}

/// One transition of an entry's history.
#[derive(Debug, Clone, Serialize)]
pub struct TransitionPoint {
    /// When it was published (RFC 3339, UTC, milliseconds).
    pub at: String,
    /// The state it left: `healthy` or `unhealthy` for a check; `passing`, `waiting` or
    /// `failing` for a liveness condition; `pending` for a startup step.
    pub from: &'static str,
    /// The state it entered: as `from`, and `complete` for a startup step.
    pub to: &'static str,
    /// For a fall, the failure's class (`timeout`, `exhausted`, …).
    pub class: Option<&'static str>,
    /// Whether application code's reports caused it rather than a poll.
    pub passive: bool,
}

impl StatusReport {
    /// The report for `snapshot` at `now` (monotonic, for the verdicts and ages) and
    /// `wall_now` (for the timestamp shown).
    pub fn of(snapshot: &Snapshot, now: Instant, wall_now: SystemTime) -> StatusReport {
        let mut rows = Vec::new();
        for entry in snapshot.entries(ProbeKind::Readiness, now, &[]) {
            match entry.subject {
                // The startup and liveness gates restate rows listed below; shutdown has
                // no row of its own, so it is listed while it fails.
                Subject::Gate(_) if entry.status == Status::Pass => {}
                Subject::Gate(gate) if gate != Gate::Shutdown => {}
                _ => rows.push(Row::of(&entry, now, wall_now)),
            }
        }
        for entry in snapshot.entries(ProbeKind::Liveness, now, &[]) {
            rows.push(Row::of(&entry, now, wall_now));
        }
        for entry in snapshot.entries(ProbeKind::Startup, now, &[]) {
            rows.push(Row::of(&entry, now, wall_now));
        }
        rows.sort_by_key(|row| row.severity);
        let rows_left_off = rows.len().saturating_sub(MAX_ROWS);
        rows.truncate(MAX_ROWS);
        StatusReport {
            service: snapshot.service().map(|name| cut(name, MAX_NAME_CHARS)),
            generated_at: humantime::format_rfc3339_seconds(wall_now).to_string(),
            generation: snapshot.generation(),
            readiness: snapshot.status(ProbeKind::Readiness, now),
            liveness: snapshot.status(ProbeKind::Liveness, now),
            startup: snapshot.status(ProbeKind::Startup, now),
            rows,
            rows_left_off,
            findings: Vec::new(),
        }
    }

    /// The page: one self-contained HTML document.
    pub fn to_html(&self) -> String {
        let mut html = String::with_capacity(8 * 1024 + self.rows.len() * 4 * 1024);
        let service = self.service.as_deref().unwrap_or("service");
        let worst = worse(self.readiness, self.liveness);
        let _ = write!(
            html,
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>{title}: {worst}</title>\
             <noscript><meta http-equiv=\"refresh\" content=\"5\"></noscript>\
             <style>{STYLE}</style></head>\n\
             <body data-updates=\"0\"><header><h1>{title}</h1>\
             <p class=\"note\">For operators: full reasons are shown. \
             Refreshes every {refresh} s. <span id=\"connection\"></span></p></header>\n",
            title = escape(service),
            worst = worst,
            refresh = REFRESH_MS / 1000,
        );
        let _ = writeln!(
            html,
            "<main id=\"status\" data-generation=\"{generation}\">\
             <p class=\"summary\">{readiness} {liveness} {startup} \
             <span class=\"at\">as of {at}</span></p>",
            generation = self.generation,
            readiness = badge("readiness", self.readiness),
            liveness = badge("liveness", self.liveness),
            startup = badge("startup", self.startup),
            at = escape(&self.generated_at),
        );
        if !self.findings.is_empty() {
            html.push_str("<section class=\"findings\"><h2>Findings</h2><ul>\n");
            for finding in &self.findings {
                let _ = writeln!(
                    html,
                    "<li data-kind=\"{kind}\">{message}</li>",
                    kind = escape(&finding.kind),
                    message = escape(&finding.message),
                );
            }
            html.push_str("</ul></section>\n");
        }
        html.push_str(
            "<table><thead><tr><th>entry</th><th>state</th><th>last result</th>\
             <th>in state</th><th>recent polls</th><th>last transitions</th></tr></thead>\
             <tbody>\n",
        );
        for row in &self.rows {
            row.write_html(&mut html);
        }
        html.push_str("</tbody></table>\n");
        if self.rows_left_off > 0 {
            let _ = writeln!(
                html,
                "<p class=\"note\">{} more rows left off.</p>",
                self.rows_left_off
            );
        }
        html.push_str("</main>\n");
        let _ = write!(html, "<script>{}</script>\n</body></html>\n", script());
        html
    }
}

/// The worse of two statuses: the page's title.
fn worse(one: Status, other: Status) -> Status {
    let rank = |status: Status| match status {
        Status::Fail => 0,
        Status::Warn => 1,
        Status::Pass => 2,
    };
    if rank(other) < rank(one) { other } else { one }
}

fn badge(probe: &str, status: Status) -> String {
    let class = match status {
        Status::Fail => "failing",
        Status::Warn => "degraded",
        Status::Pass => "passing",
    };
    format!("<span class=\"badge {class}\">{probe}: {status}</span>")
}

impl Row {
    fn of(entry: &Entry<'_>, now: Instant, wall_now: SystemTime) -> Row {
        let severity = match (entry.effect(), entry.status) {
            (Effect::Fails, _) => Severity::Failing,
            (Effect::Degrades, _) | (Effect::None, Status::Fail | Status::Warn) => {
                Severity::Degraded
            }
            (Effect::None, Status::Pass) => Severity::Passing,
        };
        let kind = match entry.subject {
            Subject::Check(_) => "readiness check",
            Subject::Condition(_) => "liveness condition",
            Subject::Step(_) => "startup step",
            Subject::Gate(_) => "readiness gate",
        };
        let reason = entry
            .reason(Details::Admin, now)
            .map(|reason| cut(&reason, MAX_REASON_CHARS));
        let mut row = Row {
            kind,
            name: cut(entry.name, MAX_NAME_CHARS),
            tier: entry.tier,
            severity,
            state: match entry.status {
                Status::Pass => "passing".to_owned(),
                Status::Warn if entry.is_warning() => "warning".to_owned(),
                Status::Warn => "degraded".to_owned(),
                Status::Fail => "failing".to_owned(),
            },
            reason,
            last: None,
            in_state_secs: None,
            polls: Vec::new(),
            transitions: Vec::new(),
            transitions_total: 0,
        };
        if let Some(check) = entry.check() {
            row.fill_check(check, entry, now);
        } else if let Some(step) = entry.step() {
            row.state = if step.is_complete() {
                "complete"
            } else {
                "pending"
            }
            .to_owned();
            // A step's history: registered pending, completed once.
            let since = step.completed_at().unwrap_or(step.registered_at());
            row.in_state_secs = Some(secs_of(wall_now.duration_since(since).unwrap_or_default()));
            if let Some(completed) = step.completed_at() {
                row.transitions.push(TransitionPoint {
                    at: humantime::format_rfc3339_millis(completed).to_string(),
                    from: "pending",
                    to: "complete",
                    class: None,
                    passive: false,
                });
                row.transitions_total = 1;
            }
        } else if let Some(condition) = entry.condition() {
            row.state = match (condition.failure(), condition.waiting()) {
                (Some(_), _) => "failing",
                (None, Some(_)) => "passing (in a declared wait)",
                (None, None) => "passing",
            }
            .to_owned();
            let history = condition.history();
            row.in_state_secs = history
                .transitions()
                .next_back()
                .map(|last| secs_of(wall_now.duration_since(last.at()).unwrap_or_default()));
            row.transitions = history
                .transitions()
                .rev()
                .map(|transition| TransitionPoint {
                    at: humantime::format_rfc3339_millis(transition.at()).to_string(),
                    from: transition.from().as_str(),
                    to: transition.to().as_str(),
                    class: None,
                    passive: false,
                })
                .collect();
            row.transitions_total = history.transitions_total();
        }
        row
    }

    fn fill_check(&mut self, check: &CheckState, entry: &Entry<'_>, now: Instant) {
        let cause = entry.verdict.map(|verdict| verdict.cause);
        self.state = match cause {
            Some(Cause::Passing) => "healthy".to_owned(),
            Some(Cause::Warning) => "healthy, warning".to_owned(),
            Some(Cause::NoResult) => "no result yet".to_owned(),
            Some(Cause::Stale { .. }) => "stale".to_owned(),
            Some(Cause::Recovering { successes, rise }) => {
                format!("recovering {successes} of {rise}")
            }
            Some(Cause::Failed) | None if !check.is_healthy() => "unhealthy".to_owned(),
            Some(Cause::Failed) | None => "healthy".to_owned(),
        };
        if let Some(verdict) = entry.verdict
            && let Some(left) = verdict.failing_open
        {
            let _ = write!(self.state, " (failing open, {} left)", seconds(left));
        }
        self.last = check.last().map(|last| LastPoll {
            ok: last.ok,
            duration_ms: millis(last.duration),
            age_secs: secs_of(now.saturating_duration_since(last.at)),
            message: last
                .message
                .as_deref()
                .or(last.warning.as_deref())
                .map(|message| cut(message, MAX_REASON_CHARS)),
        });
        self.in_state_secs = check
            .last_transition()
            .map(|at| secs_of(now.saturating_duration_since(at)));
        let history = check.history();
        self.polls = history
            .polls()
            .map(|poll| PollPoint {
                at: humantime::format_rfc3339_millis(poll.at()).to_string(),
                duration_ms: millis(poll.duration()),
                ok: poll.ok(),
            })
            .collect();
        self.transitions = history
            .transitions()
            .rev()
            .map(|transition| TransitionPoint {
                at: humantime::format_rfc3339_millis(transition.at()).to_string(),
                from: transition.from(),
                to: transition.to(),
                class: transition.class().map(probity::FailureKind::as_str),
                passive: transition.passive(),
            })
            .collect();
        self.transitions_total = history.transitions_total();
    }

    fn write_html(&self, html: &mut String) {
        let severity = self.severity.as_str();
        let _ = write!(
            html,
            "<tr class=\"row {severity}\" data-name=\"{name}\" data-severity=\"{severity}\">\
             <td><span class=\"name\">{name}</span><br><span class=\"kind\">{kind}{tier}</span></td>\
             <td><span class=\"state\">{state}</span>",
            name = escape(&self.name),
            kind = self.kind,
            tier = self
                .tier
                .map(|tier| format!(", {tier}"))
                .unwrap_or_default(),
            state = escape(&self.state),
        );
        if let Some(reason) = &self.reason {
            let _ = write!(html, "<br><span class=\"reason\">{}</span>", escape(reason));
        }
        html.push_str("</td><td>");
        match &self.last {
            Some(last) => {
                let _ = write!(
                    html,
                    "<span class=\"{class}\">{word}</span> in {duration} ms, {age} ago",
                    class = if last.ok { "ok" } else { "failed" },
                    word = if last.ok { "passed" } else { "failed" },
                    duration = format_ms(last.duration_ms),
                    age = seconds(Duration::from_secs_f64(last.age_secs)),
                );
                // The reason column already says it when they are the same text.
                if let Some(message) = last
                    .message
                    .as_ref()
                    .filter(|m| self.reason.as_ref() != Some(*m))
                {
                    let _ = write!(
                        html,
                        "<br><span class=\"message\">{}</span>",
                        escape(message)
                    );
                }
            }
            None => html.push('—'),
        }
        html.push_str("</td><td>");
        match self.in_state_secs {
            Some(secs) => html.push_str(&seconds(Duration::from_secs_f64(secs))),
            None => html.push('—'),
        }
        html.push_str("</td><td>");
        self.write_sparkline(html);
        html.push_str("</td><td><ol class=\"transitions\">");
        for transition in self.transitions.iter().take(8) {
            let _ = write!(
                html,
                "<li class=\"to-{to}\"><time>{at}</time> {from} → {to}{class}{passive}</li>",
                at = escape(&transition.at),
                from = transition.from,
                to = transition.to,
                class = transition
                    .class
                    .map(|class| format!(" ({class})"))
                    .unwrap_or_default(),
                passive = if transition.passive {
                    " by reports"
                } else {
                    ""
                },
            );
        }
        html.push_str("</ol>");
        if self.transitions_total > self.transitions.len().min(8) as u64 {
            let _ = write!(
                html,
                "<span class=\"kind\">{} transitions in all</span>",
                self.transitions_total
            );
        }
        html.push_str("</td></tr>\n");
    }

    /// Poll latencies as an inline SVG, oldest left; failed polls as red dots.
    fn write_sparkline(&self, html: &mut String) {
        if self.polls.is_empty() {
            html.push('—');
            return;
        }
        const WIDTH: f64 = 128.0;
        const HEIGHT: f64 = 24.0;
        let slowest = self
            .polls
            .iter()
            .map(|poll| poll.duration_ms)
            .fold(0.0_f64, f64::max)
            .max(1.0);
        let step = WIDTH / probity::HISTORY_LEN.max(2) as f64;
        let point = |index: usize, poll: &PollPoint| {
            let x = step * index as f64 + step / 2.0;
            let y = HEIGHT - 2.0 - (poll.duration_ms / slowest) * (HEIGHT - 4.0);
            (x, y)
        };
        let last = self.polls.last().map_or(0.0, |poll| poll.duration_ms);
        let _ = write!(
            html,
            "<svg class=\"spark\" width=\"{WIDTH}\" height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" \
             role=\"img\" aria-label=\"last {count} polls, slowest {slowest} ms\"><polyline points=\"",
            count = self.polls.len(),
            slowest = format_ms(slowest),
        );
        for (index, poll) in self.polls.iter().enumerate() {
            let (x, y) = point(index, poll);
            let _ = write!(html, "{x:.1},{y:.1} ");
        }
        html.push_str("\"/>");
        for (index, poll) in self.polls.iter().enumerate().filter(|(_, poll)| !poll.ok) {
            let (x, y) = point(index, poll);
            let _ = write!(html, "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"1.8\"/>");
        }
        let failed = self.polls.iter().filter(|poll| !poll.ok).count();
        let _ = write!(
            html,
            "</svg><br><span class=\"kind\">last {} ms, slowest {} ms, {failed} of {} failed</span>",
            format_ms(last),
            format_ms(slowest),
            self.polls.len(),
        );
    }
}

/// At most `max` characters of `text`, `…` marking a cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// Seconds, to the millisecond.
fn secs_of(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 1_000.0).round() / 1_000.0
}

/// Milliseconds, to the microsecond.
fn millis(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 1_000_000.0).round() / 1_000.0
}

fn format_ms(ms: f64) -> String {
    if ms < 10.0 {
        format!("{ms:.1}")
    } else {
        format!("{ms:.0}")
    }
}

const STYLE: &str = "\
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1d1d1f;background:#fafafa}\
h1{font-size:1.4em;margin:0}.note,.kind,.at{color:#666;font-size:.9em}\
table{border-collapse:collapse;width:100%;margin-top:1em;background:#fff}\
th,td{text-align:left;vertical-align:top;padding:.45em .6em;border-bottom:1px solid #ddd}\
th{font-weight:600;background:#f0f0f0}\
tr.failing{background:#fdecea}tr.failing td:first-child{border-left:6px solid #c62828}\
tr.degraded{background:#fff6e0}tr.degraded td:first-child{border-left:6px solid #ef8f00}\
tr.passing td:first-child{border-left:6px solid #2e7d32}\
.name{font-weight:600}.reason,.message{font-family:ui-monospace,monospace;font-size:.85em;\
word-break:break-word}.failed{color:#c62828;font-weight:600}.ok{color:#2e7d32}\
.badge{display:inline-block;padding:.15em .6em;border-radius:1em;margin-right:.4em;color:#fff}\
.badge.failing{background:#c62828}.badge.degraded{background:#ef8f00}.badge.passing{background:#2e7d32}\
ol.transitions{margin:0;padding-left:1.1em;font-size:.85em}li.to-unhealthy,li.to-failing{color:#c62828}\
li.to-waiting{color:#8a6d00}section.findings li{font-family:ui-monospace,monospace;font-size:.9em}\
li.to-healthy,li.to-passing,li.to-complete{color:#2e7d32}time{font-family:ui-monospace,monospace}\
svg.spark polyline{fill:none;stroke:#555;stroke-width:1.2}svg.spark circle{fill:#c62828}\
body[data-connection=lost] #connection{color:#c62828;font-weight:600}";

/// Re-fetches the page and swaps its `<main>` in place: the server renders (and escapes)
/// everything; the script moves no data into the page by itself.
fn script() -> String {
    format!(
        "(function(){{var updates=0;\
function again(){{setTimeout(refresh,{REFRESH_MS});}}\
function refresh(){{fetch(location.pathname,{{cache:'no-store'}}).then(function(r){{\
if(!r.ok)throw new Error('HTTP '+r.status);return r.text();}}).then(function(text){{\
var next=new DOMParser().parseFromString(text,'text/html');\
var main=next.getElementById('status');var here=document.getElementById('status');\
if(main&&here){{here.replaceWith(document.importNode(main,true));}}\
document.title=next.title;updates+=1;document.body.dataset.updates=String(updates);\
document.body.dataset.connection='ok';document.getElementById('connection').textContent='';\
}}).catch(function(e){{document.body.dataset.connection='lost';\
document.getElementById('connection').textContent='Connection lost ('+e.message+'); retrying.';\
}}).then(again);}}again();}})();"
    )
}

#[cfg(test)]
mod tests;
