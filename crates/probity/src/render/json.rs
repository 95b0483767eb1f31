//! The JSON formats: `application/json` and `application/health+json`.
//!
//! Values go through serde_json. A check's entry is copied from the pieces its published state
//! keeps ([`super::fragments`]), with the values of the answer's instant between them: status,
//! reason, staleness, and the timestamps, which map the check's monotonic instants to the
//! answer's wall clock.

use super::fragments::Out;
use super::{Clock, Request, entry_kind};
use crate::snapshot::{CheckState, Entry, Snapshot, Verdict};
use probity_contract::verdict::Cause;
use probity_contract::{Status, Tier};
use serde::Serialize;
use serde::ser::SerializeSeq;
use std::borrow::Cow;
use std::ops::Range;
use std::time::{Duration, UNIX_EPOCH};
use tokio::time::Instant;

/// Writes the RFC 3339 timestamps of one answer, with milliseconds, UTC:
/// `2026-11-30T12:00:00.123Z`.
///
/// An answer carries up to three timestamps per check, nearly all on the day the answer is
/// rendered, and most of a check's are the same instant (its last poll is its last success).
/// So the date is formatted once (by humantime), each timestamp of that day writes only its
/// time of day, one equal to the one before is copied, and any other goes through humantime.
struct Stamps {
    /// The answer's monotonic now.
    now: Instant,
    /// The answer's wall clock, in nanoseconds since the epoch (a u64 holds them until 2554).
    wall_ns: u64,
    /// Milliseconds since the epoch at the start of the answer's UTC day.
    day_start: u64,
    /// `YYYY-MM-DDT` of that day.
    date: [u8; 11],
    /// The last timestamp written, and where its text is in the answer.
    last: Option<(Instant, Range<usize>)>,
}

const DAY_MS: u64 = 86_400_000;

thread_local! {
    /// The day the thread's last answer was rendered on, and its `YYYY-MM-DDT`.
    static DAY: std::cell::Cell<(u64, [u8; 11])> = const { std::cell::Cell::new((0, *b"1970-01-01T")) };
}

/// `YYYY-MM-DDT` of the UTC day starting at `day_start` (milliseconds since the epoch),
/// formatted by humantime once a day per thread.
fn date_of(day_start: u64) -> [u8; 11] {
    let (day, date) = DAY.get();
    if day == day_start {
        return date;
    }
    let mut date = *b"1970-01-01T";
    let formatted =
        humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(day_start)).to_string();
    if let Some(prefix) = formatted.as_bytes().get(..11)
        && formatted.len() == 24
    {
        date.copy_from_slice(prefix);
    }
    DAY.set((day_start, date));
    date
}

/// `00` to `99`, two bytes each.
const TWO_DIGITS: &[u8; 200] = b"\
    0001020304050607080910111213141516171819\
    2021222324252627282930313233343536373839\
    4041424344454647484950515253545556575859\
    6061626364656667686970717273747576777879\
    8081828384858687888990919293949596979899";

impl Stamps {
    fn new(clock: Clock) -> Self {
        let wall_ns = clock.wall.duration_since(UNIX_EPOCH).map_or(0, |since| {
            u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
        });
        let now_ms = wall_ns / 1_000_000;
        let day_start = now_ms - now_ms % DAY_MS;
        Stamps {
            now: clock.now,
            wall_ns,
            day_start,
            date: date_of(day_start),
            last: None,
        }
    }

    /// Writes the wall-clock time of monotonic instant `at` as a JSON string (which never
    /// needs escaping). A time before the epoch is written as the epoch.
    fn write(&mut self, out: &mut Out, at: Instant) {
        if let Some((last, text)) = &self.last
            && *last == at
        {
            out.repeat(text.clone());
            return;
        }
        let elapsed = self.now.saturating_duration_since(at);
        let elapsed = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        let millis = self.wall_ns.saturating_sub(elapsed) / 1_000_000;
        let Some(of_day) = millis
            .checked_sub(self.day_start)
            .filter(|of_day| *of_day < DAY_MS)
        else {
            let time = UNIX_EPOCH + Duration::from_millis(millis);
            out.value(&format_args!("{}", humantime::format_rfc3339_millis(time)));
            return;
        };
        let mut text = *b"\"YYYY-MM-DDThh:mm:ss.mmmZ\"";
        text[1..12].copy_from_slice(&self.date);
        let pairs = [
            (12, of_day / 3_600_000),
            (15, of_day / 60_000 % 60),
            (18, of_day / 1000 % 60),
        ];
        for (at, value) in pairs {
            let digits = usize::try_from(value).unwrap_or(0) * 2;
            text[at..at + 2].copy_from_slice(&TWO_DIGITS[digits..digits + 2]);
        }
        let fraction = of_day % 1000;
        text[21] = b'0' + (fraction / 100) as u8;
        let digits = usize::try_from(fraction % 100).unwrap_or(0) * 2;
        text[22..24].copy_from_slice(&TWO_DIGITS[digits..digits + 2]);
        let start = out.len();
        out.raw(std::str::from_utf8(&text).unwrap_or("\"1970-01-01T00:00:00.000Z\""));
        self.last = Some((at, start..out.len()));
    }
}

/// The bytes a check's entry takes in either JSON format, roughly: a buffer of this size per
/// entry is rarely regrown.
const ENTRY_BYTES: usize = 512;

/// Milliseconds with microsecond precision, as a JSON number.
pub(super) fn millis(duration: Duration) -> f64 {
    duration.as_micros() as f64 / 1000.0
}

/// A JSON number for a measurement; not-a-number and infinities have no JSON form.
pub(super) fn finite(value: f64) -> Option<f64> {
    value.is_finite().then_some(value)
}

/// `application/health+json`'s `componentType` for a dependency.
pub(super) fn component_type(dependency: Option<&str>) -> &'static str {
    match dependency {
        Some(
            "postgres" | "postgresql" | "mysql" | "mariadb" | "sqlite" | "redis" | "database"
            | "cache",
        ) => "datastore",
        Some(_) => "component",
        None => "system",
    }
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: &'a str,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    known: &'a [&'a str],
}

pub(super) fn error(message: &str, known: &[&str]) -> String {
    serde_json::to_string(&ErrorBody {
        error: message,
        known,
    })
    .unwrap_or_default()
}

/// An entry that is not a check (a gate, a startup step, a liveness condition), written whole.
#[derive(Serialize)]
struct OtherEntry<'a> {
    name: &'a str,
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tier: Option<Tier>,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<Cow<'a, str>>,
}

/// Whether the entry's check counts as stale: its verdict says so.
fn is_stale(entry: &Entry<'_>, check: &CheckState, now: Instant) -> bool {
    match &entry.verdict {
        Some(verdict) => matches!(verdict.cause, Cause::Stale { .. }),
        None => check.is_stale(now),
    }
}

/// The status an entry shows in `application/json`.
fn json_status(entry: &Entry<'_>) -> &'static str {
    if entry.excluded {
        "excluded"
    } else {
        entry.status.as_str()
    }
}

/// `,"tier":…,"status":…` of an entry as one literal, by tier (none, hard, soft, info) and
/// status (pass, warn, fail, excluded).
const TIER_AND_STATUS: [[&str; 4]; 4] = [
    [
        ",\"status\":\"pass\"",
        ",\"status\":\"warn\"",
        ",\"status\":\"fail\"",
        ",\"status\":\"excluded\"",
    ],
    [
        ",\"tier\":\"hard\",\"status\":\"pass\"",
        ",\"tier\":\"hard\",\"status\":\"warn\"",
        ",\"tier\":\"hard\",\"status\":\"fail\"",
        ",\"tier\":\"hard\",\"status\":\"excluded\"",
    ],
    [
        ",\"tier\":\"soft\",\"status\":\"pass\"",
        ",\"tier\":\"soft\",\"status\":\"warn\"",
        ",\"tier\":\"soft\",\"status\":\"fail\"",
        ",\"tier\":\"soft\",\"status\":\"excluded\"",
    ],
    [
        ",\"tier\":\"info\",\"status\":\"pass\"",
        ",\"tier\":\"info\",\"status\":\"warn\"",
        ",\"tier\":\"info\",\"status\":\"fail\"",
        ",\"tier\":\"info\",\"status\":\"excluded\"",
    ],
];

fn tier_and_status(entry: &Entry<'_>) -> &'static str {
    let tier = match entry.tier {
        None => 0,
        Some(Tier::Hard) => 1,
        Some(Tier::Soft) => 2,
        Some(Tier::Info) => 3,
    };
    let status = match (entry.excluded, entry.status) {
        (true, _) => 3,
        (false, Status::Pass) => 0,
        (false, Status::Warn) => 1,
        (false, Status::Fail) => 2,
    };
    TIER_AND_STATUS[tier][status]
}

/// Writes one `application/json` entry.
fn write_entry(out: &mut Out, entry: &Entry<'_>, request: &Request<'_>, stamps: &mut Stamps) {
    let reason = entry.reason(request.details, stamps.now);
    let Some(check) = entry.check() else {
        out.value(&OtherEntry {
            name: entry.name,
            kind: entry_kind(request.probe, entry),
            tier: entry.tier,
            status: json_status(entry),
            reason,
        });
        return;
    };
    let pieces = check.prerendered.get(check);
    out.raw(&pieces.head);
    out.raw(tier_and_status(entry));
    if let Some(reason) = reason {
        out.raw(",\"reason\":");
        out.value(&*reason);
    }
    out.raw(&pieces.health);
    out.raw(if is_stale(entry, check, stamps.now) {
        "true"
    } else {
        "false"
    });
    out.raw(&pieces.counts);
    let times = [
        (",\"last_checked\":", check.last().map(|last| last.at)),
        (",\"last_success\":", check.last_success()),
        (",\"last_transition\":", check.last_transition()),
    ];
    for (key, at) in times {
        if let Some(at) = at {
            out.raw(key);
            stamps.write(out, at);
        }
    }
    out.raw(&pieces.tail);
}

pub(crate) fn body(
    snapshot: &Snapshot,
    request: &Request<'_>,
    entries: &[Entry<'_>],
    verdict: &Verdict,
    clock: Clock,
) -> String {
    let mut out = Out::with_capacity(256 + entries.len() * ENTRY_BYTES);
    out.raw("{\"status\":\"");
    out.raw(verdict.status.as_str());
    out.raw("\",\"probe\":\"");
    out.raw(request.probe.as_str());
    out.raw("\"");
    if let Some(service) = snapshot.service() {
        out.raw(",\"service\":");
        out.value(service);
    }
    out.raw(",\"failing\":");
    out.value(&verdict.failing);
    out.raw(",\"degraded\":");
    out.value(&verdict.degraded);
    out.raw(",\"warnings\":");
    out.value(&verdict.warnings);
    out.raw(",\"checks\":[");
    let mut stamps = Stamps::new(clock);
    for (index, entry) in entries.iter().enumerate() {
        if index > 0 {
            out.raw(",");
        }
        write_entry(&mut out, entry, request, &mut stamps);
    }
    out.raw("]}");
    out.into_string()
}

/// An item of `application/health+json` for an entry that is not a check.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OtherItem<'a> {
    component_type: &'static str,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<Cow<'a, str>>,
}

/// One item as the one element of an array.
struct One<T>(T);

impl<T: Serialize> Serialize for One<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(1))?;
        seq.serialize_element(&self.0)?;
        seq.end()
    }
}

/// Writes one entry's items into the `checks` object: a check's response time and one item
/// per measurement, or one `system` item for any other entry.
fn write_items(out: &mut Out, entry: &Entry<'_>, request: &Request<'_>, stamps: &mut Stamps) {
    let status = if entry.excluded {
        "pass"
    } else {
        entry.status.as_str()
    };
    let output = if entry.excluded {
        Some(Cow::Borrowed("excluded"))
    } else {
        entry.reason(request.details, stamps.now)
    };
    let Some(check) = entry.check() else {
        out.value(entry.name);
        out.raw(":");
        out.value(&One(OtherItem {
            component_type: "system",
            status,
            output,
        }));
        return;
    };
    let pieces = check.prerendered.get(check);
    let polled = check.last().map(|last| last.at);
    // Every item of a check has the same status and time: written once, then repeated.
    let mut shared: Option<Range<usize>> = None;
    for (index, item) in pieces.items.iter().enumerate() {
        if index > 0 {
            out.raw(",");
        }
        out.raw(item);
        if let Some(range) = &shared {
            out.repeat(range.clone());
        } else {
            let start = out.len();
            out.raw("\"");
            out.raw(status);
            out.raw("\"");
            if let Some(at) = polled {
                out.raw(",\"time\":");
                stamps.write(out, at);
            }
            shared = Some(start..out.len());
        }
        // The reason goes with the check's response time, not with each of its figures.
        if index == 0
            && let Some(output) = &output
        {
            out.raw(",\"output\":");
            out.value(&**output);
        }
        out.raw("}]");
    }
}

pub(crate) fn health_body(
    snapshot: &Snapshot,
    request: &Request<'_>,
    entries: &[Entry<'_>],
    verdict: &Verdict,
    clock: Clock,
) -> String {
    let mut out = Out::with_capacity(256 + entries.len() * 3 * ENTRY_BYTES / 2);
    out.raw("{\"status\":\"");
    out.raw(verdict.status.as_str());
    out.raw("\"");
    if let Some(service) = snapshot.service() {
        out.raw(",\"serviceId\":");
        out.value(service);
    }
    out.raw(",\"description\":");
    match snapshot.service() {
        Some(service) => out.value(&format_args!("{} of {service}", request.probe.as_str())),
        None => out.value(request.probe.as_str()),
    }
    let listed = |names: &[String]| names.join(", ");
    match verdict.status {
        Status::Pass => {}
        Status::Warn => {
            out.raw(",\"output\":");
            out.value(&verdict.qualifiers().join("; "));
        }
        Status::Fail => {
            out.raw(",\"output\":");
            out.value(&format_args!("failing: {}", listed(&verdict.failing)));
        }
    }
    if verdict.status == Status::Fail {
        let notes = verdict.qualifiers();
        if !notes.is_empty() {
            out.raw(",\"notes\":");
            out.value(&notes);
        }
    }
    out.raw(",\"checks\":{");
    let mut stamps = Stamps::new(clock);
    for (index, entry) in entries.iter().enumerate() {
        if index > 0 {
            out.raw(",");
        }
        write_items(&mut out, entry, request, &mut stamps);
    }
    out.raw("}}");
    out.into_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    /// The timestamp of `time` in an answer rendered at wall-clock `wall`.
    fn written(wall: SystemTime, time: SystemTime) -> String {
        // Far enough from the monotonic clock's origin to reach back 400 days.
        let now = Instant::now() + Duration::from_secs(500 * 86_400);
        let at = match time.duration_since(wall) {
            Ok(ahead) => now + ahead,
            Err(behind) => now - behind.duration(),
        };
        let mut stamps = Stamps::new(Clock { now, wall });
        let mut out = Out::with_capacity(32);
        stamps.write(&mut out, at);
        // Written twice: the second is the copy of the first.
        out.raw(" ");
        stamps.write(&mut out, at);
        out.into_string()
    }

    #[test]
    fn timestamps_agree_with_humantime_on_and_off_the_answers_day() {
        let wall = UNIX_EPOCH + Duration::from_millis(1_796_040_000_123); // 2026-11-30T12:00:00.123Z
        for offset_ms in [
            0,
            1,
            999,
            43_200_123,
            43_199_000,
            86_400_000,
            400 * 86_400_000,
        ] {
            let time = wall - Duration::from_millis(offset_ms);
            let one = format!("\"{}\"", humantime::format_rfc3339_millis(time));
            assert_eq!(
                written(wall, time),
                format!("{one} {one}"),
                "{offset_ms} ms before the answer"
            );
        }
    }

    #[test]
    fn a_time_before_the_epoch_is_written_as_the_epoch() {
        let wall = UNIX_EPOCH + Duration::from_secs(10);
        assert_eq!(
            written(wall, UNIX_EPOCH - Duration::from_secs(5)),
            "\"1970-01-01T00:00:00.000Z\" \"1970-01-01T00:00:00.000Z\""
        );
    }
}
