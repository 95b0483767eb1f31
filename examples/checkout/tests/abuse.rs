//! Client behaviour never fails liveness: a thousand clients that connect and dribble their
//! headers (and reconnect when cut), against an instance allowed 256 open files, leave `/livez`
//! answering every kubelet-like probe (a new connection, a 1 s timeout);
//! the instance never runs out of descriptors, and every slow client is cut after the
//! header-read timeout (or turned away at once when no slot is left).

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use support::{Checkout, answered_all, probe_times, wait_ready};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const SLOW_CLIENTS: usize = 1000;
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(2);
/// How long each slow client keeps dribbling, at most: the whole test is bounded by it.
const DRIBBLE_FOR: Duration = Duration::from_secs(12);

/// One slow client, as an attacker runs it: connects, sends a request line and then a header
/// line every 500 ms, never the blank line that ends the head, and connects again half a second
/// after the server closes it, until `DRIBBLE_FOR` has passed. Returns how long the server took to close
/// each connection, and how long the last one had been open if it was still open at the end.
async fn slow_client(
    address: SocketAddr,
    index: usize,
    connected: Arc<AtomicUsize>,
) -> (Vec<Duration>, Option<Duration>) {
    let until = Instant::now() + DRIBBLE_FOR;
    let mut closed_after = Vec::new();
    let mut first = true;
    while Instant::now() < until {
        let stream = TcpStream::connect(address).await;
        if std::mem::take(&mut first) {
            connected.fetch_add(1, Ordering::AcqRel);
        }
        let Ok(stream) = stream else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let opened = Instant::now();
        let (mut reader, mut writer) = stream.into_split();
        let dribble = async move {
            let _ = writer
                .write_all(b"GET /orders HTTP/1.1\r\nhost: checkout\r\n")
                .await;
            while Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(500)).await;
                if writer
                    .write_all(format!("x-slow-{index}: still coming\r\n").as_bytes())
                    .await
                    .is_err()
                {
                    // Writing fails once the server has reset the connection.
                    std::future::pending::<()>().await;
                }
            }
        };
        let closed = async {
            let mut buffer = [0u8; 1024];
            loop {
                match reader.read(&mut buffer).await {
                    // Closed (FIN), reset, or answered "503, retry later" then closed.
                    Ok(0) | Err(_) => return opened.elapsed(),
                    Ok(_) => continue,
                }
            }
        };
        tokio::select! {
            after = closed => closed_after.push(after),
            () = dribble => return (closed_after, Some(opened.elapsed())),
        }
        // Like a slowloris tool's next round: open a new connection for the one that was cut.
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    (closed_after, None)
}

fn open_descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |entries| entries.count())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_clients_never_fail_liveness() {
    let timeout = format!("{}s", HEADER_READ_TIMEOUT.as_secs());
    let checkout = Checkout::start_with_descriptor_limit(256, &["--header-read-timeout", &timeout]);
    wait_ready(&checkout).await;
    let pid = checkout.pid();
    let baseline = open_descriptors(pid);

    let connected = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..SLOW_CLIENTS)
        .map(|index| tokio::spawn(slow_client(checkout.listen, index, connected.clone())))
        .collect();
    // Probe once the first thousand connections are in: the slow clients holding connections,
    // and their reconnection waves, are the subject (a probe caught in the very first burst of
    // a thousand simultaneous connects may wait in the kernel's backlog past its timeout).
    let deadline = Instant::now() + Duration::from_secs(10);
    while connected.load(Ordering::Acquire) < SLOW_CLIENTS && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let watch = tokio::spawn(async move {
        let until = Instant::now() + DRIBBLE_FOR;
        let mut most = 0;
        while Instant::now() < until {
            most = most.max(open_descriptors(pid));
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        most
    });
    let livez = probe_times(
        &checkout.url("/livez"),
        Duration::from_millis(100),
        DRIBBLE_FOR - Duration::from_secs(1),
    )
    .await;

    let mut closed_after = Vec::new();
    let mut never_closed = 0;
    for client in clients {
        let (closes, still_open) = client.await.expect("slow client");
        closed_after.extend(closes);
        // A connection opened in the last seconds may simply not be due yet.
        never_closed += usize::from(
            still_open
                .is_some_and(|open_for| open_for > HEADER_READ_TIMEOUT + Duration::from_secs(3)),
        );
    }
    let most_descriptors = watch.await.expect("descriptor watch");
    closed_after.sort();
    let slowest = closed_after.last().copied().unwrap_or_default();
    let live = answered_all("/livez", &livez, &checkout.stderr.text());
    eprintln!(
        "observed: {} slow connections closed (slowest after {slowest:?}), {never_closed} left open; \
         descriptors {baseline} → at most {most_descriptors} of 256; /livez {live}",
        closed_after.len(),
    );
    assert!(livez.len() >= 50, "{livez:?}");
    assert!(
        most_descriptors < 256,
        "the instance reached its descriptor limit: {most_descriptors}"
    );
    assert_eq!(never_closed, 0, "slow clients kept their connections");
    assert!(
        slowest <= HEADER_READ_TIMEOUT + Duration::from_secs(3),
        "a slow client was cut only after {slowest:?}"
    );
}
