//! What the core logs: a check that starts or stops warning (a busy pool, a self-check
//! outranked by its requests) is logged once each way, like a fall or a rise, so "degraded,
//! still serving" shows in the log and not only on the page.

mod support;

use probity::{CheckSpec, Detail, Health, Tier};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use support::{advance, secs};

/// Log lines written by the subscriber, for the test to read.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

#[tokio::test(start_paused = true)]
async fn a_warning_is_logged_when_it_starts_and_when_it_ends() {
    let captured = Captured::default();
    let writer = captured.clone();
    tracing_subscriber::fmt()
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .init();
    let busy = Arc::new(AtomicBool::new(false));
    let flag = busy.clone();
    let health = Health::builder()
        .check(
            CheckSpec::new("db-pool", Tier::Hard, move || {
                let busy = flag.load(Ordering::SeqCst);
                async move {
                    Ok(if busy {
                        Detail::new().warning("busy: 4 of 4 connections in use, none waiting")
                    } else {
                        Detail::new()
                    })
                }
            })
            .interval(secs(1.0))
            .timeout(secs(0.5))
            .jitter(secs(0.0)),
        )
        .build()
        .unwrap();
    health.start().unwrap();
    advance(secs(2.5)).await;
    busy.store(true, Ordering::SeqCst);
    advance(secs(3.0)).await;
    busy.store(false, Ordering::SeqCst);
    advance(secs(3.0)).await;
    let text = captured.text();
    let started: Vec<&str> = text
        .lines()
        .filter(|line| line.contains("check passes with a warning"))
        .collect();
    assert_eq!(started.len(), 1, "{text}");
    assert!(started[0].contains("WARN"), "{text}");
    assert!(
        started[0].contains("busy: 4 of 4 connections in use"),
        "{text}"
    );
    assert!(started[0].contains("check=db-pool"), "{text}");
    let ended = text
        .lines()
        .filter(|line| line.contains("check passes without a warning again"))
        .count();
    assert_eq!(ended, 1, "{text}");
}
