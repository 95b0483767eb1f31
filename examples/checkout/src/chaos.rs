//! Fault injection, served only with `--chaos` and only on the admin listener.
//!
//! | endpoint | fault | what the probes should do |
//! |---|---|---|
//! | `POST /chaos/leak-connections?count=N` | takes N pool connections and never returns them (default: all) | `/readyz` 503 naming `db`; `/livez` stays 200 |
//! | `POST /chaos/release-connections` | returns them | `/readyz` 200 again after the rise count |
//! | `POST /chaos/stall?seconds=N` | blocks every runtime worker thread for N seconds | `/livez` times out, then fails once the stall is past the threshold |
//! | `POST /chaos/deadlock` | two threads take two locks in opposite order | `/livez` 503 naming `deadlock`, for good (feature `deadlock`) |
//! | `GET /chaos/outbox` | nothing: reads how many orders the database holds and how many wait in the outbox | what `probity drill`'s `worker-wedge` compares with the broker |
//! | `POST /chaos/wedge-worker` | the outbox relay awaits a future that never completes, outside any declared wait (`--amqp-url`) | `/livez` 503 naming `outbox` within `--outbox-max-silence`, `/readyz` 503 with it; orders keep being taken and wait in the outbox; a restart drains it |

use crate::db::{Database, HeldConnection};
use crate::outbox::Outbox;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// Longest stall the endpoint accepts.
const MAX_STALL_SECONDS: u64 = 300;

/// The fault-injection state.
#[derive(Debug, Clone)]
pub struct Chaos {
    db: Database,
    outbox: Option<Outbox>,
    held: Arc<tokio::sync::Mutex<Vec<HeldConnection>>>,
}

impl Chaos {
    /// Fault injection against `db` and the outbox relay, if there is one.
    pub fn new(db: Database, outbox: Option<Outbox>) -> Self {
        Self {
            db,
            outbox,
            held: Arc::new(tokio::sync::Mutex::new(Vec::new())),
        }
    }

    /// The `/chaos/*` routes.
    pub fn router(self) -> Router {
        let router = Router::new()
            .route("/chaos/leak-connections", post(leak))
            .route("/chaos/release-connections", post(release))
            .route("/chaos/stall", post(stall))
            .route("/chaos/wedge-worker", post(wedge_worker))
            .route("/chaos/outbox", axum::routing::get(outbox_counts));
        #[cfg(feature = "deadlock")]
        let router = router.route("/chaos/deadlock", post(deadlock));
        router.with_state(self)
    }
}

/// `?count=N`.
#[derive(Debug, Deserialize)]
struct LeakQuery {
    count: Option<u32>,
}

async fn leak(State(chaos): State<Chaos>, Query(query): Query<LeakQuery>) -> Response {
    let max = chaos.db.max_connections();
    let count = query.count.unwrap_or(max);
    if count == 0 || count > max {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({ "error": format!("count must be 1 to {max} (the pool size)") })),
        )
            .into_response();
    }
    let mut held = chaos.held.lock().await;
    let mut leaked = 0;
    let mut failure = None;
    for _ in 0..count {
        match chaos.db.hold(Duration::from_secs(2)).await {
            Ok(connection) => {
                held.push(connection);
                leaked += 1;
            }
            Err(error) => {
                failure = Some(error.to_string());
                break;
            }
        }
    }
    tracing::warn!(leaked, held = held.len(), "chaos: leaked pool connections");
    let body = json!({ "leaked": leaked, "held": held.len(), "pool_size": max, "error": failure });
    let status = if failure.is_some() {
        StatusCode::CONFLICT
    } else {
        StatusCode::OK
    };
    (status, Json(body)).into_response()
}

async fn release(State(chaos): State<Chaos>) -> Response {
    let mut held = chaos.held.lock().await;
    let released = held.len();
    held.clear();
    tracing::warn!(released, "chaos: released pool connections");
    Json(json!({ "released": released })).into_response()
}

/// What the database holds: orders, and those still waiting in the outbox. The drill compares it
/// with what the broker received.
async fn outbox_counts(State(chaos): State<Chaos>) -> Response {
    match tokio::try_join!(chaos.db.order_count(), chaos.db.outbox_backlog()) {
        Ok((orders, unpublished)) => {
            Json(json!({ "orders": orders, "unpublished": unpublished })).into_response()
        }
        Err(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "error": "the database cannot be read" })),
        )
            .into_response(),
    }
}

async fn wedge_worker(State(chaos): State<Chaos>) -> Response {
    let Some(outbox) = &chaos.outbox else {
        return (
            StatusCode::CONFLICT,
            Json(json!({ "error": "no outbox relay runs: start checkout with --amqp-url" })),
        )
            .into_response();
    };
    let already = outbox.is_wedged();
    outbox.wedge();
    tracing::warn!(
        max_silence = ?outbox.max_silence(),
        "chaos: wedging the outbox relay; liveness fails once its heartbeat is silent past the bound"
    );
    (
        StatusCode::ACCEPTED,
        Json(json!({
            "wedged": "outbox",
            "already_wedged": already,
            "max_silence_ms": outbox.max_silence().as_millis() as u64,
        })),
    )
        .into_response()
}

/// `?seconds=N`.
#[derive(Debug, Deserialize)]
struct StallQuery {
    seconds: u64,
}

async fn stall(Query(query): Query<StallQuery>) -> Response {
    if !(1..=MAX_STALL_SECONDS).contains(&query.seconds) {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({ "error": format!("seconds must be 1 to {MAX_STALL_SECONDS}") })),
        )
            .into_response();
    }
    let runtime = tokio::runtime::Handle::current();
    let workers = runtime.metrics().num_workers();
    let duration = Duration::from_secs(query.seconds);
    tracing::warn!(
        workers,
        seconds = query.seconds,
        "chaos: stalling every runtime worker"
    );
    // The fault: every worker blocks on a lock another thread holds — a blocking call on the
    // async path, the commonest way a runtime wedges. The holder is an OS thread of its own;
    // it spawns the blocking tasks from outside the runtime, so they go to the shared queue
    // from which every idle worker takes one (a task spawned from a worker could sit in that
    // worker's private slot, unstolen), and only after a moment, so this response goes out.
    std::thread::spawn(move || {
        let lock = Arc::new(std::sync::Mutex::new(()));
        let held = lock.lock();
        wait_on_this_thread(Duration::from_millis(100));
        for _ in 0..workers {
            let lock = lock.clone();
            runtime.spawn(async move {
                // Deliberately blocking the worker thread until the holder lets go.
                drop(lock.lock());
            });
        }
        wait_on_this_thread(duration);
        drop(held);
    });
    (
        StatusCode::ACCEPTED,
        Json(json!({ "stalling_workers": workers, "seconds": query.seconds })),
    )
        .into_response()
}

/// Blocks the calling OS thread (never a runtime worker) for `duration`.
fn wait_on_this_thread(duration: Duration) {
    let deadline = std::time::Instant::now() + duration;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return;
        }
        // Parking may end early; the loop waits out the rest.
        std::thread::park_timeout(left);
    }
}

#[cfg(feature = "deadlock")]
async fn deadlock() -> Response {
    let first = Arc::new(parking_lot::Mutex::new(()));
    let second = Arc::new(parking_lot::Mutex::new(()));
    let barrier = Arc::new(std::sync::Barrier::new(2));
    for forward in [true, false] {
        let (one, two) = if forward {
            (first.clone(), second.clone())
        } else {
            (second.clone(), first.clone())
        };
        let barrier = barrier.clone();
        let spawned = std::thread::Builder::new()
            .name("chaos-deadlock".into())
            .spawn(move || {
                let _held = one.lock();
                barrier.wait();
                // Each thread now waits for the lock the other holds: a cycle, forever.
                let _never = two.lock();
            });
        if let Err(error) = spawned {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                Json(json!({ "error": format!("cannot spawn a thread: {error}") })),
            )
                .into_response();
        }
    }
    tracing::warn!("chaos: two threads deadlocked");
    (
        StatusCode::ACCEPTED,
        Json(json!({ "deadlocked_threads": 2 })),
    )
        .into_response()
}
