//! Ready-made `metrics` checks for the pools services in other languages already export.
//!
//! A pool that is merely busy (every connection in use and cycling) is not broken; requests
//! waiting for a connection on consecutive scrapes are. Each preset names the series its
//! library exports and judges "waiting" rather than "in use". Any field of a preset can be
//! overridden in the check (`series` for a service that exports the gauge under its own name).

use super::values::{Condition, Op};

/// A preset: the series, the condition, and the scrapes in a row it must hold for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Preset {
    /// The name used as `preset = "…"`.
    pub name: &'static str,
    /// The series judged.
    pub series: &'static str,
    /// When it fails.
    pub fail_if: Condition,
    /// Judge the increase since the previous scrape (counters).
    pub change: bool,
    /// Scrapes in a row.
    pub for_polls: u32,
    /// What it means, for the documentation.
    pub about: &'static str,
}

const WAITING: Condition = Condition {
    op: Op::Above,
    threshold: 0.0,
};

/// Every preset.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "hikaricp",
        series: "hikaricp_connections_pending",
        fail_if: WAITING,
        change: false,
        for_polls: 2,
        about: "HikariCP (JVM, Micrometer): threads waiting for a connection, two scrapes in a row",
    },
    Preset {
        name: "go_sql",
        series: "go_sql_wait_count_total",
        fail_if: WAITING,
        change: true,
        for_polls: 2,
        about: "Go database/sql (client_golang's DBStats collector): new waits for a \
                connection between scrapes, two scrapes in a row",
    },
    Preset {
        name: "node_postgres",
        series: "pg_pool_waiting_count",
        fail_if: WAITING,
        change: false,
        for_polls: 2,
        about: "node-postgres pg.Pool exported as gauges (waitingCount): clients waiting for a \
                connection, two scrapes in a row",
    },
    Preset {
        name: "psycopg_pool",
        series: "psycopg_pool_requests_waiting",
        fail_if: WAITING,
        change: false,
        for_polls: 2,
        about: "psycopg_pool (Python) get_stats() exported as gauges (requests_waiting): \
                requests waiting for a connection, two scrapes in a row",
    },
];

/// The preset named `name`.
pub fn find(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|preset| preset.name == name)
}
