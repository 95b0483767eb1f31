//! DNS resolution through the system resolver.

#![cfg(feature = "dns")]

mod support;

use probity::Check;
use probity_checks::dns::DnsCheck;
use std::time::Duration;
use support::{failure, figure, poll, success};

const TIMEOUT: Duration = Duration::from_secs(5);

#[tokio::test]
async fn localhost_resolves() {
    let check = DnsCheck::new("localhost");
    assert_eq!(check.dependency(), Some("dns"));
    let detail = success(poll(&check, TIMEOUT).await);
    assert!(figure(&detail.measurements, "addresses").unwrap_or(0.0) >= 1.0);
    let message = detail.message.unwrap_or_default();
    assert!(message.starts_with("localhost resolved to "), "{message}");
}

#[tokio::test]
async fn unknown_name_fails_naming_it() {
    // `.invalid` is reserved (RFC 6761): it never resolves.
    let error = failure(poll(&DnsCheck::new("probity-no-such-host.invalid"), TIMEOUT).await);
    assert!(
        error
            .message()
            .starts_with("cannot resolve probity-no-such-host.invalid: "),
        "{}",
        error.message()
    );
}

#[tokio::test]
async fn too_few_addresses_fail() {
    let error = failure(poll(&DnsCheck::new("127.0.0.1").min_addresses(3), TIMEOUT).await);
    assert_eq!(
        error.message(),
        "127.0.0.1 resolved to 1 addresses, fewer than the 3 required"
    );
}
