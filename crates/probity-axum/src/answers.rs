//! Answers kept by the router that serves them.
//!
//! A snapshot changes when a poll result, a report or a step arrives — every few seconds —
//! while probes and dashboards may ask for it thousands of times a second, and most answers are
//! the same for every one of those requests. So the router keeps the last answer of each kind
//! (probe × format × `?verbose` × details) with the generation of the snapshot it was rendered
//! from, and serves it again while the same snapshot is current and the answer still reads as
//! a fresh render would ([`probity::Snapshot::answer_lasts`]): a dashboard polling
//! `application/json` costs a copy of its headers and of a pointer to its body, not a render.
//!
//! The JSON formats' timestamps map monotonic time to wall time with the clock of the first
//! render: a kept JSON answer is served only while the wall clock runs with the monotonic one
//! (within a millisecond), so a step of the wall clock renders afresh. Text prints no
//! wall-clock time, and its answers are kept whatever the wall clock does. Asked with `?exclude=` or for one entry, an answer
//! is rendered every time.

use crate::probes;
use arc_swap::ArcSwapOption;
use axum::http::HeaderMap;
use bytes::Bytes;
use probity::render::{self, Body, Clock, Format};
use probity::{Details, HealthView, Lasts, ProbeKind, Snapshot, Status};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::time::Instant;

const PROBES: usize = 3;
const FORMATS: usize = 3;
const KINDS: usize = PROBES * FORMATS * 2 * 2;

/// Clocks map monotonic to wall time alike when they differ by less than this.
const SAME_CLOCK: Duration = Duration::from_millis(1);

/// The time an answer in `format` is rendered at. Text prints no wall-clock time (only ages,
/// from the monotonic clock), so for text the wall clock is not read: its `wall` is the epoch,
/// and a kept text answer is served again whatever the wall clock does.
pub(crate) fn clock(format: Format) -> Clock {
    match format {
        Format::Text => Clock {
            now: Instant::now(),
            wall: SystemTime::UNIX_EPOCH,
        },
        Format::Json | Format::HealthJson => Clock::now(),
    }
}

/// Which answer: probe, format, `?verbose`, details.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Kind {
    index: usize,
    /// Whether the answer prints wall-clock time (the JSON formats' timestamps).
    dated: bool,
}

impl Kind {
    pub(crate) fn new(probe: ProbeKind, format: Format, verbose: bool, details: Details) -> Kind {
        let probe = match probe {
            ProbeKind::Liveness => 0,
            ProbeKind::Readiness => 1,
            ProbeKind::Startup => 2,
        };
        let format = match format {
            Format::Text => 0,
            Format::Json => 1,
            Format::HealthJson => 2,
        };
        let details = usize::from(details == Details::Admin);
        Kind {
            index: ((probe * FORMATS + format) * 2 + usize::from(verbose)) * 2 + details,
            dated: format != 0,
        }
    }
}

/// One kept answer.
#[derive(Debug)]
struct Kept {
    /// The generation of the snapshot it was rendered from.
    generation: u64,
    /// The clock it was rendered with.
    clock: Clock,
    /// Until when it reads as a fresh render would; `None`: while its snapshot is current.
    until: Option<Instant>,
    /// The probe's verdict.
    verdict: Status,
    /// Its headers, whole (its length among them), cloned for every answer that serves it.
    headers: HeaderMap,
    /// The body, shared by every answer that serves it.
    body: Bytes,
}

/// The last answer of each kind.
#[derive(Debug)]
pub(crate) struct Answers {
    kept: [ArcSwapOption<Kept>; KINDS],
}

impl Default for Answers {
    fn default() -> Self {
        Answers {
            kept: std::array::from_fn(|_| ArcSwapOption::empty()),
        }
    }
}

impl Answers {
    /// The kept answer of `kind`, if it reads as a render at `clock` of the snapshot of
    /// `generation` would.
    pub(crate) fn get(&self, kind: Kind, generation: u64, clock: Clock) -> Option<Answer> {
        // A guard, not a counted reference: readers on every core share no counter.
        let guard = self.kept[kind.index].load();
        let kept = guard.as_ref()?;
        if kept.generation != generation
            || clock.now < kept.clock.now
            || kept.until.is_some_and(|until| clock.now >= until)
        {
            return None;
        }
        if !kind.dated {
            return Some(kept.answer());
        }
        let expected = kept.clock.wall + (clock.now - kept.clock.now);
        let drift = match clock.wall.duration_since(expected) {
            Ok(ahead) => ahead,
            Err(behind) => behind.duration(),
        };
        (drift < SAME_CLOCK).then(|| kept.answer())
    }

    /// Keeps `body`, the answer to `request` rendered from `snapshot` at `clock`, when it
    /// lasts beyond the instant it was rendered at. Returns it, to serve this time too.
    pub(crate) fn keep(
        &self,
        kind: Kind,
        request: &render::Request<'_>,
        snapshot: &Snapshot,
        clock: Clock,
        verdict: Status,
        body: Body,
    ) -> Answer {
        let body = probes::bytes_of(body);
        let kept = Kept {
            generation: snapshot.generation(),
            clock,
            until: None,
            verdict,
            headers: probes::headers(probes::content_type_of(request.format), body.len()),
            body,
        };
        let until = match snapshot.answer_lasts(request.probe, clock.now) {
            Lasts::Moment => return (kept.verdict, kept.headers, kept.body),
            Lasts::Until(until) => Some(until),
            Lasts::UntilChanged => None,
        };
        let kept = Arc::new(Kept { until, ..kept });
        self.kept[kind.index].store(Some(kept.clone()));
        kept.answer()
    }
}

/// An answer: the probe's verdict, the headers, the body.
pub(crate) type Answer = (Status, HeaderMap, Bytes);

impl Kept {
    fn answer(&self) -> Answer {
        (self.verdict, self.headers.clone(), self.body.clone())
    }
}

/// The answer to a whole probe asked without exclusions: the kept one while it is current (the
/// snapshot is not even loaded), or one rendered now and kept.
pub(crate) fn answer(
    answers: &Answers,
    health: &HealthView,
    request: &render::Request<'_>,
    clock: Clock,
) -> Answer {
    let kind = Kind::new(
        request.probe,
        request.format,
        request.query.verbose,
        request.details,
    );
    if let Some(kept) = answers.get(kind, health.generation(), clock) {
        return kept;
    }
    let snapshot = health.snapshot();
    let rendered = render::render(&snapshot, request, clock);
    // A whole probe's answer always carries its verdict.
    let verdict = rendered.verdict.unwrap_or(Status::Fail);
    answers.keep(kind, request, &snapshot, clock, verdict, rendered.body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use probity::render::{Query, Request};
    use probity::{CheckSpec, Detail, Health, Tier};
    use std::time::SystemTime;

    async fn health() -> Health {
        let health = Health::builder()
            .service("kept")
            .check(
                CheckSpec::new("db", Tier::Hard, || async { Ok(Detail::new()) })
                    .interval(Duration::from_secs(1))
                    .staleness(Duration::from_secs(10)),
            )
            .build()
            .unwrap();
        health.start().unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
        health
    }

    fn request(query: &Query, format: Format) -> Request<'_> {
        Request {
            probe: ProbeKind::Readiness,
            check: None,
            query,
            format,
            details: Details::Admin,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_is_served_again_until_its_snapshot_changes_or_it_turns_stale() {
        let health = health().await;
        let answers = Answers::default();
        let query = Query::default();
        let json = request(&query, Format::Json);
        let view = HealthView::from(health.clone());
        let snapshot = health.snapshot();
        let wall = SystemTime::now();
        let at = |after: Duration| Clock {
            now: Instant::now() + after,
            wall: wall + after,
        };
        let (_, _, first) = answer(&answers, &view, &json, at(Duration::ZERO));
        let (verdict, headers, again) =
            answer(&answers, &view, &json, at(Duration::from_millis(1)));
        assert_eq!(verdict, Status::Pass);
        // Its headers are whole: the length is the body's.
        let length = again.len().to_string();
        assert_eq!(headers[axum::http::header::CONTENT_LENGTH], length.as_str());
        assert_eq!(
            headers[axum::http::header::CONTENT_TYPE],
            "application/json"
        );
        // The same bytes, not a copy of them.
        assert_eq!(first.as_ptr(), again.as_ptr());
        // Another kind is another answer.
        let (_, _, health_json) = answer(
            &answers,
            &view,
            &request(&query, Format::HealthJson),
            at(Duration::ZERO),
        );
        assert_ne!(first, health_json);
        // Past the instant the result turns stale, rendered afresh.
        let (verdict, _, later) = answer(&answers, &view, &json, at(Duration::from_secs(11)));
        assert_eq!(verdict, Status::Fail);
        assert_ne!(later.as_ptr(), first.as_ptr());
        // A new snapshot (the next poll) is rendered afresh, then kept.
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        let next = health.snapshot();
        assert_ne!(next.generation(), snapshot.generation());
        let (_, _, fresh) = answer(&answers, &view, &json, Clock::now());
        assert_ne!(fresh.as_ptr(), first.as_ptr());
        let (_, _, kept) = answer(&answers, &view, &json, Clock::now());
        assert_eq!(fresh.as_ptr(), kept.as_ptr());
    }

    #[tokio::test(start_paused = true)]
    async fn a_wall_clock_that_steps_renders_afresh() {
        let health = health().await;
        let answers = Answers::default();
        let query = Query::default();
        let json = request(&query, Format::Json);
        let view = HealthView::from(health.clone());
        let clock = Clock::now();
        let (_, _, first) = answer(&answers, &view, &json, clock);
        let stepped = Clock {
            now: clock.now,
            wall: clock.wall + Duration::from_secs(3600),
        };
        let (_, _, again) = answer(&answers, &view, &json, stepped);
        assert_ne!(first.as_ptr(), again.as_ptr());
        assert_ne!(first, again, "its timestamps moved an hour");
    }

    #[tokio::test(start_paused = true)]
    async fn a_text_answer_reads_no_wall_clock_and_is_kept_across_a_step() {
        let health = health().await;
        let answers = Answers::default();
        let query = Query {
            verbose: true,
            exclude: Vec::new(),
        };
        let text = request(&query, Format::Text);
        let view = HealthView::from(health.clone());
        let clock = clock(Format::Text);
        assert_eq!(clock.wall, SystemTime::UNIX_EPOCH);
        let (_, _, first) = answer(&answers, &view, &text, clock);
        assert!(String::from_utf8_lossy(&first).contains("[+]db ok"));
        let later = Clock {
            now: clock.now + Duration::from_millis(5),
            wall: SystemTime::now(),
        };
        let (_, _, again) = answer(&answers, &view, &text, later);
        assert_eq!(first.as_ptr(), again.as_ptr());
        // The JSON formats read the wall clock.
        assert_ne!(super::clock(Format::Json).wall, SystemTime::UNIX_EPOCH);
    }
}
