//! etcd checks against the real member (127.0.0.1:2379), and against a member of the test's own
//! whose space quota is small enough to fill: the NOSPACE alarm is what etcd raises then.

#![cfg(feature = "etcd")]

#[macro_use]
mod support;

use probity::Check;
use probity_checks::etcd::EtcdCheck;
use std::process::Stdio;
use std::time::Duration;
use support::{failure, figure, poll, success};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

const ETCD: &str = "127.0.0.1:2379";
const TIMEOUT: Duration = Duration::from_secs(2);

#[tokio::test]
async fn a_healthy_member_passes_with_its_version_and_size() {
    require!("etcd", ETCD);
    let check = EtcdCheck::new(&format!("http://{ETCD}")).expect("valid");
    assert_eq!(check.dependency(), Some("etcd"));
    let detail = success(poll(&check, TIMEOUT).await);
    let message = detail.message.as_deref().unwrap_or_default();
    assert!(message.starts_with("etcd 3."), "{message}");
    assert!(
        message.ends_with(&format!(" at {ETCD}: healthy")),
        "{message}"
    );
    assert!(figure(&detail.measurements, "db_size").is_some_and(|size| size > 0.0));
}

#[tokio::test]
async fn a_closed_port_and_a_silent_member_fail_saying_so() {
    let port = support::closed_port().await;
    let check = EtcdCheck::new(&format!("http://127.0.0.1:{port}")).expect("valid");
    assert_eq!(
        failure(poll(&check, TIMEOUT).await).message(),
        format!("connection refused (127.0.0.1:{port})")
    );
    let silent = support::silent_listener().await;
    let check = EtcdCheck::new(&format!("http://{silent}")).expect("valid");
    assert_eq!(
        failure(poll(&check, TIMEOUT).await).message(),
        "timed out after 2s"
    );
}

#[test]
fn urls_are_validated_and_credentials_dropped() {
    assert_eq!(
        EtcdCheck::new("etcd:2379").unwrap_err().to_string(),
        "unsupported scheme \"etcd\" for etcd: write http://HOST:2379"
    );
    let check = EtcdCheck::new("http://root:hunter2@etcd.internal:2379").expect("valid");
    assert!(!format!("{check:?}").contains("hunter2"));
}

/// A one-member cluster of the test's own on free ports, with a 256 KiB space quota.
async fn small_member() -> Option<(Child, String, tempdir::Dir)> {
    let client = support::closed_port().await;
    let peer = support::closed_port().await;
    let dir = tempdir::Dir::new();
    let client_url = format!("http://127.0.0.1:{client}");
    let peer_url = format!("http://127.0.0.1:{peer}");
    let started = Command::new("etcd")
        .args(["--name", "quota", "--quota-backend-bytes", "262144"])
        .arg("--data-dir")
        .arg(&dir.0)
        .args([
            "--listen-client-urls",
            &client_url,
            "--advertise-client-urls",
            &client_url,
        ])
        .args([
            "--listen-peer-urls",
            &peer_url,
            "--initial-advertise-peer-urls",
            &peer_url,
        ])
        .args(["--initial-cluster", &format!("quota={peer_url}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn();
    let child = match started {
        Ok(child) => child,
        Err(error) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "etcd cannot be started ({error}): scripts/setup.sh installs it"
            );
            eprintln!("!!! SKIPPED: etcd cannot be started: {error}");
            return None;
        }
    };
    let address = format!("127.0.0.1:{client}");
    let end = tokio::time::Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(&address).await.is_err() {
        assert!(
            tokio::time::Instant::now() < end,
            "etcd never listened on {address}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Some((child, client_url, dir))
}

/// Puts 60 KB values through the gateway until the member refuses writes.
async fn fill(client_url: &str) {
    let http = reqwest::Client::new();
    let value = "A".repeat(80_000);
    for index in 0..40 {
        let body = format!(
            r#"{{"key":"{}","value":"{value}"}}"#,
            encode(&format!("k{index}"))
        );
        let answer = http
            .post(format!("{client_url}/v3/kv/put"))
            .body(body)
            .send()
            .await
            .expect("put");
        let text = answer.text().await.expect("body");
        if text.contains("database space exceeded") {
            return;
        }
    }
    panic!("the member never ran out of space");
}

/// Base64 of a short ASCII key (the gateway's encoding of `bytes`).
fn encode(text: &str) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = text.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(TABLE[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[tokio::test]
async fn a_member_out_of_space_fails_naming_the_alarm() {
    let Some((_member, client_url, _dir)) = small_member().await else {
        return;
    };
    let check = EtcdCheck::new(&client_url).expect("valid");
    success(support::until_ok(&check, TIMEOUT, Duration::from_secs(30)).await);
    fill(&client_url).await;
    let result = support::until_err(&check, TIMEOUT, Duration::from_secs(10)).await;
    let address = client_url.trim_start_matches("http://");
    assert_eq!(
        failure(result).message(),
        format!(
            "etcd at {address} is unhealthy: alarm NOSPACE (the database reached its space quota: \
             writes are refused until it is compacted, defragmented and the alarm is disarmed)"
        )
    );
}

mod tempdir {
    /// A directory removed when dropped.
    pub(crate) struct Dir(pub(crate) std::path::PathBuf);

    impl Dir {
        pub(crate) fn new() -> Self {
            let path = std::env::temp_dir().join(format!(
                "probity-etcd-{}-{}",
                std::process::id(),
                fastrand_suffix()
            ));
            std::fs::create_dir_all(&path).expect("temp dir");
            Self(path)
        }
    }

    fn fastrand_suffix() -> u128 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos())
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
