//! Disk: free space and free inodes of the filesystem holding a path.
//!
//! ```
//! use probity::{CheckSpec, Tier};
//! use probity_checks::disk::DiskCheck;
//!
//! let spec = CheckSpec::new(
//!     "data-volume",
//!     Tier::Hard,
//!     DiskCheck::new("/var/lib/orders").min_free_percent(10.0).min_free_bytes(2 << 30),
//! );
//! # let _ = spec;
//! ```
//!
//! Space counts what an unprivileged process can use (`f_bavail`, not `f_bfree`): the blocks
//! reserved for root do not help a service that is not root. `statvfs` runs on a blocking
//! thread, so a path on a hung network filesystem costs the check a timeout, never a runtime
//! worker. Errors read `free space 3.1% is below the 10% minimum on /var/lib/orders (1.5 GiB of
//! 48 GiB free)`, `free inodes 0.8% is below the 5% minimum on /var/lib/orders (8000 of 1000000
//! free)`, `statvfs /missing: No such file or directory`.

use probity::{Check, CheckError, CheckFuture, CheckResult, Detail, Timing};
use std::path::PathBuf;
use std::time::Duration;

/// Interval and timeout for a disk check: disks fill over minutes, and `statvfs` is local.
///
/// Interval 30 s, timeout 2 s.
pub const DEFAULT_TIMING: Timing = Timing {
    interval: Duration::from_secs(30),
    timeout: Duration::from_secs(2),
};

/// Free space and inodes of the filesystem holding a path.
///
/// By default it fails below 5% free space or 5% free inodes. Measurements: `free_bytes`
/// (bytes), `total_bytes` (bytes), `free_percent` (percent) and, where the filesystem counts
/// inodes, `free_inodes` and `free_inodes_percent` (percent).
#[derive(Debug, Clone)]
pub struct DiskCheck {
    path: PathBuf,
    min_free_percent: f64,
    min_free_bytes: u64,
    min_free_inodes_percent: f64,
}

/// One filesystem's figures, as `statvfs` reports them.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Usage {
    free_bytes: u64,
    total_bytes: u64,
    free_inodes: u64,
    total_inodes: u64,
}

impl DiskCheck {
    /// A check of the filesystem holding `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            min_free_percent: 5.0,
            min_free_bytes: 0,
            min_free_inodes_percent: 5.0,
        }
    }

    /// Fails when less than `percent` of the space is free for unprivileged use (default 5).
    pub fn min_free_percent(mut self, percent: f64) -> Self {
        self.min_free_percent = percent;
        self
    }

    /// Fails when fewer than `bytes` are free for unprivileged use (default 0: no minimum).
    pub fn min_free_bytes(mut self, bytes: u64) -> Self {
        self.min_free_bytes = bytes;
        self
    }

    /// Fails when less than `percent` of the inodes are free (default 5). Filesystems that do
    /// not count inodes (btrfs, some network filesystems report 0) are not judged on them.
    pub fn min_free_inodes_percent(mut self, percent: f64) -> Self {
        self.min_free_inodes_percent = percent;
        self
    }

    async fn poll(&self) -> CheckResult {
        let path = self.path.clone();
        let stat = tokio::task::spawn_blocking(move || rustix::fs::statvfs(&path))
            .await
            .map_err(|error| CheckError::new(format!("statvfs did not finish: {error}")))?
            .map_err(|error| {
                let error = std::io::Error::from(error);
                CheckError::new(format!("statvfs {}: {}", self.path.display(), error))
            })?;
        let usage = Usage {
            free_bytes: stat.f_bavail.saturating_mul(stat.f_frsize),
            total_bytes: stat.f_blocks.saturating_mul(stat.f_frsize),
            free_inodes: stat.f_favail,
            total_inodes: stat.f_files,
        };
        self.judge(usage)
    }

    fn judge(&self, usage: Usage) -> CheckResult {
        let free_percent = percent_of(usage.free_bytes, usage.total_bytes);
        let space = format!(
            "{} of {} free",
            bytes(usage.free_bytes),
            bytes(usage.total_bytes)
        );
        let mut figures = vec![
            ("free_bytes", usage.free_bytes as f64, Some("bytes")),
            ("total_bytes", usage.total_bytes as f64, Some("bytes")),
            ("free_percent", round(free_percent), Some("percent")),
        ];
        let inodes_counted = usage.total_inodes > 0;
        let free_inodes_percent = percent_of(usage.free_inodes, usage.total_inodes);
        if inodes_counted {
            figures.push(("free_inodes", usage.free_inodes as f64, None));
            figures.push((
                "free_inodes_percent",
                round(free_inodes_percent),
                Some("percent"),
            ));
        }
        let path = self.path.display();
        let failure = if free_percent < self.min_free_percent {
            Some(format!(
                "free space {}% is below the {}% minimum on {path} ({space})",
                number(free_percent),
                number(self.min_free_percent)
            ))
        } else if usage.free_bytes < self.min_free_bytes {
            Some(format!(
                "free space {} is below the {} minimum on {path} ({space})",
                bytes(usage.free_bytes),
                bytes(self.min_free_bytes)
            ))
        } else if inodes_counted && free_inodes_percent < self.min_free_inodes_percent {
            Some(format!(
                "free inodes {}% is below the {}% minimum on {path} ({} of {} free)",
                number(free_inodes_percent),
                number(self.min_free_inodes_percent),
                usage.free_inodes,
                usage.total_inodes
            ))
        } else {
            None
        };
        match failure {
            Some(message) => Err(figures
                .into_iter()
                .fold(CheckError::new(message), |error, (name, value, unit)| {
                    error.measurement(name, value, unit)
                })),
            None => Ok(figures.into_iter().fold(
                Detail::new().message(format!("{space} on {path}")),
                |detail, (name, value, unit)| detail.measurement(name, value, unit),
            )),
        }
    }
}

impl Check for DiskCheck {
    fn check(&self) -> CheckFuture<'_> {
        Box::pin(self.poll())
    }

    fn dependency(&self) -> Option<&str> {
        Some("disk")
    }

    fn default_timing(&self) -> Option<Timing> {
        Some(DEFAULT_TIMING)
    }
}

fn percent_of(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        return 0.0;
    }
    part as f64 * 100.0 / whole as f64
}

fn round(value: f64) -> f64 {
    (value * 10.0).round() / 10.0
}

fn number(value: f64) -> String {
    let rounded = round(value);
    if rounded.fract() == 0.0 {
        format!("{rounded:.0}")
    } else {
        format!("{rounded:.1}")
    }
}

/// `512 B`, `1.5 KiB`, `48 GiB`.
fn bytes(count: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut value = count as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        return format!("{count} B");
    }
    format!("{} {}", number(value), UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(free_gib: u64, total_gib: u64, free_inodes: u64, total_inodes: u64) -> Usage {
        Usage {
            free_bytes: free_gib << 30,
            total_bytes: total_gib << 30,
            free_inodes,
            total_inodes,
        }
    }

    #[test]
    fn low_space_fails_with_the_figures() {
        let check = DiskCheck::new("/data").min_free_percent(10.0);
        let error = check.judge(usage(3, 48, 900, 1000)).unwrap_err();
        assert_eq!(
            error.message(),
            "free space 6.3% is below the 10% minimum on /data (3 GiB of 48 GiB free)"
        );
    }

    #[test]
    fn byte_minimum_applies_on_large_disks() {
        let check = DiskCheck::new("/data")
            .min_free_percent(0.5)
            .min_free_bytes(10 << 30);
        let error = check.judge(usage(8, 1000, 900, 1000)).unwrap_err();
        assert_eq!(
            error.message(),
            "free space 8 GiB is below the 10 GiB minimum on /data (8 GiB of 1000 GiB free)"
        );
    }

    #[test]
    fn inodes_fail_even_with_space_left() {
        let check = DiskCheck::new("/data");
        let error = check.judge(usage(40, 48, 8_000, 1_000_000)).unwrap_err();
        assert_eq!(
            error.message(),
            "free inodes 0.8% is below the 5% minimum on /data (8000 of 1000000 free)"
        );
    }

    #[test]
    fn filesystems_without_inode_counts_are_judged_on_space_only() {
        let detail = DiskCheck::new("/data").judge(usage(40, 48, 0, 0)).unwrap();
        assert!(detail.measurements.iter().all(|m| m.name != "free_inodes"));
        assert_eq!(
            detail.message.as_deref(),
            Some("40 GiB of 48 GiB free on /data")
        );
    }

    #[test]
    fn sizes_read_like_people_write_them() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(48 << 30), "48 GiB");
    }
}
