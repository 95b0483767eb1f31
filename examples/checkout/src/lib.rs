//! # checkout — a small order service whose health checks tell the truth
//!
//! A real axum service (orders in SQLite or PostgreSQL, an optional Redis cache, an optional
//! recommendations service, an optional outbox relay to RabbitMQ) wired so that each probe asks only what its answer
//! decides: see [`wiring`] for what each probe checks, [`chaos`] for the faults it can inject, and the README for a walkthrough.
//!
//! The binary is thin: [`config`] parses flags, [`run::run`] serves.

pub mod app;
pub mod boot;
pub mod cache;
pub mod chaos;
pub mod config;
pub mod db;
pub mod outbox;
pub mod recommendations;
pub mod run;
pub mod wiring;
