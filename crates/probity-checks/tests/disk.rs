//! Free space and inodes of real filesystems.

#![cfg(feature = "disk")]

mod support;

use probity::Check;
use probity_checks::disk::DiskCheck;
use std::time::Duration;
use support::{failure, figure, poll, success};

const TIMEOUT: Duration = Duration::from_secs(2);

#[tokio::test]
async fn temp_dir_has_room() {
    let check = DiskCheck::new(std::env::temp_dir())
        .min_free_percent(0.0)
        .min_free_inodes_percent(0.0);
    assert_eq!(check.dependency(), Some("disk"));
    let detail = success(poll(&check, TIMEOUT).await);
    let free = figure(&detail.measurements, "free_bytes").expect("free_bytes");
    let total = figure(&detail.measurements, "total_bytes").expect("total_bytes");
    assert!(total > 0.0 && free <= total, "{detail:?}");
}

#[tokio::test]
async fn impossible_minimum_fails_with_the_figures() {
    // No filesystem has more free bytes than u64::MAX.
    let check = DiskCheck::new(std::env::temp_dir())
        .min_free_percent(0.0)
        .min_free_bytes(u64::MAX);
    let error = failure(poll(&check, TIMEOUT).await);
    assert!(
        error.message().starts_with("free space ")
            && error.message().contains(" is below the 16 EiB minimum on "),
        "{}",
        error.message()
    );
    assert!(figure(error.measurements(), "free_percent").is_some());
}

#[tokio::test]
async fn percentage_minimum_fails() {
    // Over 100% free can never be met.
    let check = DiskCheck::new(std::env::temp_dir()).min_free_percent(101.0);
    let error = failure(poll(&check, TIMEOUT).await);
    assert!(
        error.message().contains("% is below the 101% minimum on "),
        "{}",
        error.message()
    );
}

#[tokio::test]
async fn missing_path_is_named() {
    let error = failure(poll(&DiskCheck::new("/probity-no-such-dir/data"), TIMEOUT).await);
    assert!(
        error
            .message()
            .starts_with("statvfs /probity-no-such-dir/data: No such file or directory"),
        "{}",
        error.message()
    );
}
