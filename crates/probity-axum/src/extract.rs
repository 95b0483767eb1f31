//! The health state as a handler asks for it: an extractor over the current snapshot.
//!
//! A handler that can answer without a dependency — a cached order while the database is down —
//! must know whether to: serve as usual, answer from the fallback and mark the answer stale, or
//! refuse. The answer is in the snapshot the probes read, so the handler reads it too, through
//! the router's state, never through a global:
//!
//! ```
//! use axum::extract::FromRef;
//! use axum::{Router, routing::get};
//! use probity::{CheckSpec, Detail, Health, HealthView, Tier};
//! use probity_axum::HealthState;
//!
//! #[derive(Clone)]
//! struct App {
//!     health: HealthView,
//! }
//!
//! impl FromRef<App> for HealthView {
//!     fn from_ref(app: &App) -> HealthView {
//!         app.health.clone()
//!     }
//! }
//!
//! async fn order(health: HealthState) -> String {
//!     match health.degraded("db") {
//!         Some(degraded) => format!("from {}, stale", degraded.fallback()),
//!         None => "from the database".to_owned(),
//!     }
//! }
//!
//! # fn main() -> Result<(), probity::BuildError> {
//! let health = Health::builder()
//!     .check(CheckSpec::new("db", Tier::Hard, || async { Ok(Detail::new()) }).fallback("cache"))
//!     .check(CheckSpec::new("cache", Tier::Soft, || async { Ok(Detail::new()) }))
//!     .build()?;
//! let app: Router = Router::new()
//!     .route("/orders/{id}", get(order))
//!     .with_state(App { health: health.view() });
//! # let _ = app;
//! # Ok(())
//! # }
//! ```

use axum::extract::{FromRef, FromRequestParts};
use http::request::Parts;
use probity::{CheckState, HealthView, Snapshot};
use std::convert::Infallible;
use std::fmt;
use std::sync::Arc;
use tokio::time::Instant;

/// The service's health when the request arrived: the current snapshot, judged at that
/// instant. Extracted from any router state `S` with `HealthView: FromRef<S>`; loading it is
/// a couple of atomic operations, no lock and no I/O.
#[derive(Clone)]
pub struct HealthState {
    snapshot: Arc<Snapshot>,
    now: Instant,
}

impl fmt::Debug for HealthState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HealthState")
            .field("generation", &self.snapshot.generation())
            .field("now", &self.now)
            .finish()
    }
}

impl HealthState {
    /// The state of `health` now.
    pub fn of(health: &HealthView) -> Self {
        HealthState {
            snapshot: health.snapshot(),
            now: Instant::now(),
        }
    }

    /// The snapshot the answers below come from.
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// The instant the snapshot is judged at.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Whether check `check` serves (as `/readyz/{check}` would answer): `false` while it
    /// fails, even when its fallback serves in its place, and for an unknown name.
    pub fn serves(&self, check: &str) -> bool {
        self.snapshot
            .check(check)
            .is_some_and(|state| state.serves_alone(self.now))
    }

    /// When check `check` fails and its fallback serves in its place, what degrades and what
    /// serves: the handler answers from the fallback and says so. `None` while the check
    /// serves, and while it fails with nothing serving instead — no fallback, the fallback
    /// failing too, or a fault of this instance's own — when the request cannot be served
    /// here.
    pub fn degraded(&self, check: &str) -> Option<Degraded<'_>> {
        let fallback = self.snapshot.serving_instead(check, self.now)?;
        let check = self.snapshot.check(check)?;
        Some(Degraded { check, fallback })
    }
}

impl<S> FromRequestParts<S> for HealthState
where
    HealthView: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = Infallible;

    async fn from_request_parts(_parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Ok(HealthState::of(&HealthView::from_ref(state)))
    }
}

/// A hard check failing while its fallback serves in its place ([`HealthState::degraded`]).
#[derive(Debug, Clone, Copy)]
pub struct Degraded<'a> {
    check: &'a CheckState,
    fallback: &'a CheckState,
}

impl<'a> Degraded<'a> {
    /// The failing check's name (`db`): what an `x-degraded` header names.
    pub fn check(&self) -> &'a str {
        self.check.name()
    }

    /// What the failing check talks to (`postgres`), if declared.
    pub fn dependency(&self) -> Option<&'a str> {
        self.check.dependency()
    }

    /// The fallback's name (`cache`).
    pub fn fallback(&self) -> &'a str {
        self.fallback.name()
    }

    /// The failing check's state.
    pub fn check_state(&self) -> &'a CheckState {
        self.check
    }

    /// The fallback's state.
    pub fn fallback_state(&self) -> &'a CheckState {
        self.fallback
    }
}
