//! TCP: a connection to `host:port` can be opened, and optionally the server speaks first.
//!
//! ```
//! use probity::{CheckSpec, Tier};
//! use probity_checks::tcp::TcpCheck;
//!
//! let spec = CheckSpec::new("smtp", Tier::Soft, TcpCheck::new("mail.internal:25").expect_banner("220"));
//! # let _ = spec;
//! ```
//!
//! A bare connect proves the kernel on the other side accepts connections, not that the
//! program behind it answers: a wedged server whose listen socket is still open passes. For a
//! protocol where the server speaks first (SMTP, SSH, FTP, MySQL), [`TcpCheck::expect_banner`]
//! also waits for the greeting, so a server that accepts and never answers fails with
//! `timed out after …`.
//!
//! Errors read `connection refused (127.0.0.1:1)`, `connection reset (db:5432)`,
//! `unexpected banner from mail.internal:25: "554 …" (expected "220")`.

use crate::error::describe_io;
use crate::millis;
use probity::{Check, CheckError, CheckFuture, CheckResult, Detail, Timing};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio::time::Instant;

/// Interval and timeout for a TCP check: a connect is one round trip.
///
/// Interval 5 s, timeout 1 s.
pub const DEFAULT_TIMING: Timing = Timing {
    interval: Duration::from_secs(5),
    timeout: Duration::from_secs(1),
};

/// Opens a TCP connection to `host:port` each poll (and closes it).
///
/// Measurement: `connect_time` (ms).
#[derive(Debug, Clone)]
pub struct TcpCheck {
    target: String,
    banner: Option<Vec<u8>>,
}

impl TcpCheck {
    /// A check of `target`, a `host:port` (a name is resolved on every poll).
    pub fn new(target: impl Into<String>) -> Self {
        Self {
            target: target.into(),
            banner: None,
        }
    }

    /// Also requires the server to send a greeting starting with `prefix` (e.g. `"220"` for
    /// SMTP, `"SSH-"` for SSH) before the check's timeout.
    pub fn expect_banner(mut self, prefix: impl AsRef<[u8]>) -> Self {
        self.banner = Some(prefix.as_ref().to_vec());
        self
    }

    async fn poll(&self) -> CheckResult {
        let started = Instant::now();
        let mut stream = TcpStream::connect(&self.target)
            .await
            .map_err(|error| CheckError::new(describe_io(&error, &self.target)))?;
        let connect_time = started.elapsed();
        let detail = Detail::new()
            .message(format!("connected to {}", self.target))
            .measurement("connect_time", millis(connect_time), Some("ms"));
        let Some(prefix) = &self.banner else {
            return Ok(detail);
        };
        let mut greeting = vec![0u8; prefix.len().max(1)];
        let mut read = 0;
        while read < prefix.len() {
            let n = stream
                .read(&mut greeting[read..])
                .await
                .map_err(|error| CheckError::new(describe_io(&error, &self.target)))?;
            if n == 0 {
                return Err(CheckError::new(format!(
                    "connection closed by the server before its banner ({})",
                    self.target
                )));
            }
            read += n;
        }
        if !greeting.starts_with(prefix) {
            return Err(CheckError::new(format!(
                "unexpected banner from {}: {:?} (expected {:?})",
                self.target,
                String::from_utf8_lossy(&greeting[..read]),
                String::from_utf8_lossy(prefix)
            )));
        }
        Ok(detail)
    }
}

impl Check for TcpCheck {
    fn check(&self) -> CheckFuture<'_> {
        Box::pin(self.poll())
    }

    fn dependency(&self) -> Option<&str> {
        Some("tcp")
    }

    fn default_timing(&self) -> Option<Timing> {
        Some(DEFAULT_TIMING)
    }

    fn default_fall(&self) -> Option<u32> {
        Some(crate::NETWORK_FALL)
    }
}
