//! memcached: the server answers `stats` on a connection the check keeps, and still takes new
//! connections.
//!
//! ```
//! use probity::{CheckSpec, Tier};
//! use probity_checks::memcached::MemcachedCheck;
//!
//! let spec = CheckSpec::new("sessions-cache", Tier::Soft, MemcachedCheck::new("cache.internal:11211"));
//! # let _ = spec;
//! ```
//!
//! One `stats` command per poll, over memcached's text protocol
//! (<https://github.com/memcached/memcached/blob/master/doc/protocol.txt>). Its answer says more
//! than a `version` would: a server at its connection limit (`-c`, 1024 by default) still
//! answers the connections it has, so a check that only asked would pass while every new client
//! — a pod that just started, a client reconnecting after a blip — is turned away. The check
//! fails when the server stopped accepting connections (`accepting_conns 0`), and warns, with
//! the figures, when it rejected connections since the previous poll or has 90 % of its limit
//! in use: busy is not broken, but it is worth seeing before it is.
//!
//! Errors read `connection refused (127.0.0.1:11211)`, `memcached at 127.0.0.1:11211 accepts no
//! new connections (accepting_conns 0): 1024 of 1024 connections in use`, `unexpected reply to
//! stats from 127.0.0.1:11211: "ERROR"`. A server that stops answering fails the poll with
//! `timed out after …` from the poller, and the next poll reconnects.

use crate::error::describe_io;
use crate::millis;
use probity::{Check, CheckError, CheckFuture, CheckResult, Detail, Timing};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::Mutex;
use tokio::time::Instant;

/// Interval and timeout for a memcached check: one command on a warm connection.
///
/// Interval 2 s, timeout 500 ms.
pub const DEFAULT_TIMING: Timing = Timing {
    interval: Duration::from_secs(2),
    timeout: Duration::from_millis(500),
};

/// Connections in use, in percent of `max_connections`, from which the check warns.
pub const DEFAULT_WARN_ABOVE_PERCENT: f64 = 90.0;

/// The longest `stats` answer read: memcached 1.6 sends about 4 KiB.
const MAX_ANSWER: usize = 64 * 1024;

/// `stats` on a connection of the check's own, reconnecting after a failure.
///
/// Measurements: `response_time` (ms), `connections`, `max_connections`, `utilization` (%).
#[derive(Debug)]
pub struct MemcachedCheck {
    target: String,
    warn_above: f64,
    state: Mutex<State>,
    /// Set while a command is in flight: if a poll finds it still set, the previous poll was
    /// cut by its timeout and the connection may hold half an answer, so it is replaced.
    in_flight: AtomicBool,
}

#[derive(Debug, Default)]
struct State {
    connection: Option<BufReader<TcpStream>>,
    /// `rejected_connections` at the previous poll, to tell new rejections from old ones.
    rejected: Option<u64>,
}

/// The figures of one `stats` answer the check judges.
#[derive(Debug, Default, Clone, PartialEq)]
struct Stats {
    version: Option<String>,
    curr_connections: Option<u64>,
    max_connections: Option<u64>,
    rejected_connections: Option<u64>,
    accepting_conns: Option<u64>,
}

impl MemcachedCheck {
    /// A check of the server at `target`, a `host:port`.
    pub fn new(target: impl Into<String>) -> Self {
        Self {
            target: target.into(),
            warn_above: DEFAULT_WARN_ABOVE_PERCENT,
            state: Mutex::new(State::default()),
            in_flight: AtomicBool::new(false),
        }
    }

    /// Warns from this share of `max_connections` in use (default 90 %,
    /// [`DEFAULT_WARN_ABOVE_PERCENT`]).
    pub fn warn_above(mut self, percent: f64) -> Self {
        self.warn_above = percent;
        self
    }

    async fn poll(&self) -> CheckResult {
        let started = Instant::now();
        let mut state = self.state.lock().await;
        if self.in_flight.swap(false, Ordering::SeqCst) {
            state.connection = None;
        }
        let mut connection = match state.connection.take() {
            Some(connection) => connection,
            None => BufReader::new(
                TcpStream::connect(&self.target)
                    .await
                    .map_err(|error| CheckError::new(describe_io(&error, &self.target)))?,
            ),
        };
        self.in_flight.store(true, Ordering::SeqCst);
        let stats = self.stats(&mut connection).await?;
        self.in_flight.store(false, Ordering::SeqCst);
        state.connection = Some(connection);
        let previous = state
            .rejected
            .replace(stats.rejected_connections.unwrap_or(0));
        self.judge(&stats, previous, started.elapsed())
    }

    async fn stats(&self, connection: &mut BufReader<TcpStream>) -> Result<Stats, CheckError> {
        let io = |error: std::io::Error| CheckError::new(describe_io(&error, &self.target));
        connection
            .get_mut()
            .write_all(b"stats\r\n")
            .await
            .map_err(io)?;
        let mut stats = Stats::default();
        let mut read = 0;
        let mut line = String::new();
        loop {
            line.clear();
            let n = connection.read_line(&mut line).await.map_err(io)?;
            if n == 0 {
                return Err(CheckError::new(format!(
                    "connection closed by the server during stats ({})",
                    self.target
                )));
            }
            read += n;
            if read > MAX_ANSWER {
                return Err(CheckError::new(format!(
                    "the stats answer from {} exceeds {} KiB",
                    self.target,
                    MAX_ANSWER / 1024
                )));
            }
            let text = line.trim_end();
            if text == "END" {
                return Ok(stats);
            }
            // memcached answers a connection over its limit with this line, then closes it.
            if text.starts_with("ERROR Too many open connections") {
                return Err(CheckError::new(format!(
                    "memcached at {} refused the check's connection: too many open connections \
                     (its connection limit)",
                    self.target
                )));
            }
            let Some(stat) = text.strip_prefix("STAT ") else {
                return Err(CheckError::new(format!(
                    "unexpected reply to stats from {}: {:?}",
                    self.target,
                    text.chars().take(80).collect::<String>()
                )));
            };
            let (name, value) = stat.split_once(' ').unwrap_or((stat, ""));
            let number = || value.parse::<u64>().ok();
            match name {
                "version" => stats.version = Some(value.to_owned()),
                "curr_connections" => stats.curr_connections = number(),
                "max_connections" => stats.max_connections = number(),
                "rejected_connections" => stats.rejected_connections = number(),
                "accepting_conns" => stats.accepting_conns = number(),
                _ => {}
            }
        }
    }

    fn judge(&self, stats: &Stats, previous_rejected: Option<u64>, took: Duration) -> CheckResult {
        let in_use = match (stats.curr_connections, stats.max_connections) {
            (Some(current), Some(max)) => format!("{current} of {max} connections in use"),
            (Some(current), None) => format!("{current} connections in use"),
            _ => "connections in use unknown".to_owned(),
        };
        if stats.accepting_conns == Some(0) {
            return Err(CheckError::new(format!(
                "memcached at {} accepts no new connections (accepting_conns 0): {in_use}",
                self.target
            )));
        }
        let mut detail = Detail::new()
            .message(format!(
                "memcached {} at {}: {in_use}",
                stats.version.as_deref().unwrap_or("(version unknown)"),
                self.target
            ))
            .measurement("response_time", millis(took), Some("ms"));
        if let Some(current) = stats.curr_connections {
            detail = detail.measurement("connections", current as f64, None);
        }
        let mut warnings = Vec::new();
        if let (Some(current), Some(max)) = (stats.curr_connections, stats.max_connections)
            && max > 0
        {
            let utilization = current as f64 * 100.0 / max as f64;
            detail = detail
                .measurement("max_connections", max as f64, None)
                .measurement(
                    "utilization",
                    (utilization * 10.0).round() / 10.0,
                    Some("%"),
                );
            if utilization >= self.warn_above {
                warnings.push(format!(
                    "{in_use} ({:.0} %, warning from {} %)",
                    utilization, self.warn_above
                ));
            }
        }
        if let (Some(now), Some(before)) = (stats.rejected_connections, previous_rejected)
            && now > before
        {
            let count = now - before;
            warnings.push(format!(
                "rejected {count} new connection{} since the previous poll: at its connection \
                 limit",
                if count == 1 { "" } else { "s" }
            ));
        }
        if !warnings.is_empty() {
            detail = detail.warning(warnings.join("; "));
        }
        Ok(detail)
    }
}

impl Check for MemcachedCheck {
    fn check(&self) -> CheckFuture<'_> {
        Box::pin(self.poll())
    }

    fn dependency(&self) -> Option<&str> {
        Some("memcached")
    }

    fn default_timing(&self) -> Option<Timing> {
        Some(DEFAULT_TIMING)
    }

    fn default_fall(&self) -> Option<u32> {
        Some(crate::NETWORK_FALL)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check() -> MemcachedCheck {
        MemcachedCheck::new("cache:11211")
    }

    fn stats(current: u64, max: u64, rejected: u64, accepting: u64) -> Stats {
        Stats {
            version: Some("1.6.18".into()),
            curr_connections: Some(current),
            max_connections: Some(max),
            rejected_connections: Some(rejected),
            accepting_conns: Some(accepting),
        }
    }

    #[test]
    fn a_server_that_stopped_accepting_fails_with_its_figures() {
        let error = check()
            .judge(&stats(1024, 1024, 0, 0), Some(0), Duration::ZERO)
            .unwrap_err();
        assert_eq!(
            error.message(),
            "memcached at cache:11211 accepts no new connections (accepting_conns 0): 1024 of \
             1024 connections in use"
        );
    }

    #[test]
    fn new_rejections_and_a_busy_server_warn() {
        let detail = check()
            .judge(&stats(10, 100, 3, 1), Some(3), Duration::ZERO)
            .unwrap();
        assert_eq!(detail.warning, None);
        let detail = check()
            .judge(&stats(95, 100, 5, 1), Some(3), Duration::ZERO)
            .unwrap();
        assert_eq!(
            detail.warning.as_deref(),
            Some(
                "95 of 100 connections in use (95 %, warning from 90 %); rejected 2 new \
                 connections since the previous poll: at its connection limit"
            )
        );
        // The first poll has nothing to compare with: old rejections do not warn.
        let detail = check()
            .judge(&stats(10, 100, 7, 1), None, Duration::ZERO)
            .unwrap();
        assert_eq!(detail.warning, None);
    }
}
