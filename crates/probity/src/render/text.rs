//! The text format: the Kubernetes API server's `[+]name ok` / `[-]name failed: reason` lines.

use super::{Clock, Request, endpoint_word};
use crate::snapshot::{Entry, Verdict};
use probity_contract::{Status, Tier};
use std::fmt::Write;

pub(super) fn body(
    request: &Request<'_>,
    path: &str,
    entries: &[Entry<'_>],
    verdict: &Verdict,
    clock: Clock,
) -> String {
    let mut body = String::with_capacity(64 + entries.len() * 40);
    if request.check.is_some() {
        let Some(entry) = entries.first() else {
            return body;
        };
        if entry.status == Status::Pass && !request.query.verbose {
            body.push_str("ok\n");
        } else {
            line(&mut body, entry, request, clock);
        }
        return body;
    }
    if verdict.status == Status::Pass && !request.query.verbose {
        body.push_str("ok\n");
        return body;
    }
    for entry in entries {
        if request.query.verbose || entry.status != Status::Pass || entry.excluded {
            line(&mut body, entry, request, clock);
        }
    }
    let outcome = match verdict.status {
        Status::Pass => "passed",
        Status::Warn => "passed with warnings",
        Status::Fail => "failed",
    };
    let _ = writeln!(body, "{} check {outcome}", endpoint_word(path));
    body
}

fn line(body: &mut String, entry: &Entry<'_>, request: &Request<'_>, clock: Clock) {
    let reason = entry.reason(request.details, clock.now);
    let reason = reason.as_deref().unwrap_or("");
    let name = entry.name;
    let _ = if entry.excluded {
        writeln!(body, "[ ]{name} excluded")
    } else {
        match entry.status {
            Status::Pass => writeln!(body, "[+]{name} ok"),
            Status::Fail => writeln!(body, "[-]{name} failed: {reason}"),
            Status::Warn => match entry.tier {
                Some(Tier::Info) => {
                    writeln!(body, "[!]{name} failed (info, not counted): {reason}")
                }
                tier if entry.is_warning() => {
                    let tier = tier.map_or("soft", Tier::as_str);
                    writeln!(body, "[!]{name} warning ({tier}): {reason}")
                }
                tier => {
                    let tier = tier.map_or("soft", Tier::as_str);
                    writeln!(body, "[!]{name} degraded ({tier}): {reason}")
                }
            },
        }
    };
}
