//! A background worker with a heartbeat, behind honest probes.
//!
//! A queue consumer (a tokio channel stands in for the broker) beats its heartbeat for every
//! message and declares each receive as a bounded wait, so an idle queue is never a wedge.
//! `POST /wedge` makes the consumer stop without a word: once it has been silent for its
//! `max_silence` (3 s), `/livez` fails naming `consumer` — the kubelet would restart the
//! container — and `/readyz` fails with it, so the instance leaves rotation at once. Ctrl-C
//! (or SIGTERM) fails readiness, drains, and stops the worker: every loop that waits also
//! waits on [`probity::Health::shutdown_triggered`].
//!
//! ```sh
//! cargo run -p probity --example worker
//! curl -s 'http://127.0.0.1:8080/livez?verbose'
//! curl -s -X POST http://127.0.0.1:8080/wedge
//! sleep 4; curl -s 'http://127.0.0.1:8080/readyz?verbose'
//! ```
//!
//! `LISTEN=127.0.0.1:9000` serves elsewhere.

use axum::Router;
use axum::routing::post;
use probity::Health;
use probity_axum::{Probes, serve};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let health = Health::builder()
        .service("worker-example")
        // Above the longest gap between two beats in normal work: the idle receive below is
        // bounded at 1 s, and each message takes 10 ms.
        .heartbeat("consumer", Duration::from_secs(3))
        // The heartbeat watcher runs on the runtime: watch the runtime too.
        .runtime_watchdog(Duration::from_secs(5))
        // The kubelet's readiness probe: period 1 s, failureThreshold 2. Drain delay derived:
        // 1 s × 2 + 2 s for the load balancer.
        .readiness_probe(Duration::from_secs(1), 2)
        .build()?;
    health.start()?;
    health.shutdown_on_signals();

    let (queue, messages) = mpsc::channel::<u64>(64);
    let wedged = Arc::new(AtomicBool::new(false));
    let worker = tokio::spawn(consume(health.clone(), messages, wedged.clone()));
    let producer = tokio::spawn(produce(health.clone(), queue));

    let app = Router::new()
        .route(
            "/wedge",
            post(move || async move {
                wedged.store(true, Ordering::Release);
                "the consumer stops beating\n"
            }),
        )
        // One listener on loopback, for trying it out: reasons shown. A public listener uses
        // `Probes::new`.
        .merge(Probes::admin(&health).router());
    let address = std::env::var("LISTEN").unwrap_or_else(|_| "127.0.0.1:8080".to_owned());
    let listener = tokio::net::TcpListener::bind(&address).await?;
    println!(
        "serving http://{}: /livez?verbose, /readyz?verbose, POST /wedge; Ctrl-C drains \
         (drain delay {:?})",
        listener.local_addr()?,
        health.drain_delay()
    );
    let report = serve(listener, app, &health).await?;
    println!(
        "drained for {:?}; in-flight requests done within the deadline: {}",
        report.drained_for(),
        report.within_deadline
    );
    producer.await?;
    worker.await?;
    Ok(())
}

/// Consumes until shutdown: a beat per message, a bounded wait per receive.
async fn consume(health: Health, mut messages: mpsc::Receiver<u64>, wedged: Arc<AtomicBool>) {
    // Taking the handle is a sign of life: take it where the worker starts.
    let heartbeat = match health.heartbeat("consumer") {
        Ok(heartbeat) => heartbeat,
        Err(error) => return eprintln!("{error}"),
    };
    let mut processed = 0_u64;
    loop {
        if wedged.load(Ordering::Acquire) {
            // The wedge: no beat, no declared wait, until shutdown.
            health.shutdown_triggered().await;
            break;
        }
        tokio::select! {
            _ = health.shutdown_triggered() => break,
            received = heartbeat.wait_on("queue", Duration::from_secs(1), messages.recv()) => {
                match received {
                    Ok(Some(_message)) => {
                        tokio::time::sleep(Duration::from_millis(10)).await; // the work
                        processed += 1;
                        heartbeat.beat();
                    }
                    Ok(None) => break, // the producer is gone
                    // An idle queue: the wait ended at its bound; declare the next one.
                    Err(_timed_out) => {}
                }
            }
        }
    }
    println!("consumer stopped after {processed} messages");
}

/// Puts a message on the queue every 100 ms until shutdown.
async fn produce(health: Health, queue: mpsc::Sender<u64>) {
    let mut ticks = tokio::time::interval(Duration::from_millis(100));
    for number in 0_u64.. {
        tokio::select! {
            _ = health.shutdown_triggered() => break,
            _ = ticks.tick() => {}
        }
        // A full queue (the consumer is wedged) drops the message: this is a demonstration.
        let _ = queue.try_send(number);
    }
}
