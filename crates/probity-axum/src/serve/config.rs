//! A listener's configuration, and the share of the process's descriptor limit each serving
//! listener gets.

use crate::quiet::DEFAULT_PROBE_PATHS;
use probity::HealthView;
use std::borrow::Cow;
use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Descriptors left for everything but the listeners' connections: database pools, caches,
/// files, the runtime's own.
pub(super) const DESCRIPTOR_HEADROOM: u64 = 64;
/// The most connections a listener takes by default, however high the descriptor limit.
pub(super) const DEFAULT_CONNECTION_CAP: usize = 25_000;
/// New connections whose first request head is being read at once, past the ordinary limit
/// (at most; fewer on a small descriptor share). When they are all taken, the one that has
/// waited longest is let go for the newcomer: a probe sends its request at once, so a
/// connection that has not sent one for longest is the least likely to be one, and a flood of
/// connections that say nothing never keeps a probe out — it only shortens their wait. A
/// connection let go is read once more first, so a probe whose request is already there is
/// admitted whatever its age. The accept loop waits only for those let go to close, which they
/// do as soon as their task runs.
pub(super) const ADMISSION_SLOTS: usize = 96;

/// The limits a listener enforces: a header-read (and idle) timeout, a body read timeout and
/// minimum rate, a connection limit within this listener's share of the descriptor limit, a
/// budget for long-lived streams, and a reserve that admits probes once the limit is full.
///
/// ```
/// use probity_axum::ServeConfig;
/// use std::time::Duration;
///
/// let config = ServeConfig::default()
///     .header_read_timeout(Duration::from_secs(5))
///     .body_read_timeout(Duration::from_secs(5))
///     .max_connections(1_000)
///     .probe_paths(["/internal/live", "/internal/ready"]);
/// # let _ = config;
/// ```
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub(super) header_read_timeout: Duration,
    pub(super) body_read_timeout: Duration,
    pub(super) min_body_rate: u64,
    pub(super) max_connections: Option<usize>,
    pub(super) descriptor_share: Share,
    pub(super) probe_reserve: usize,
    pub(super) max_streams: Option<usize>,
    pub(super) admission_timeout: Duration,
    pub(super) probe_paths: Arc<[Cow<'static, str>]>,
    pub(super) readiness_paths: Arc<[Cow<'static, str>]>,
    pub(super) stream_paths: Arc<[Cow<'static, str>]>,
}

/// The gRPC health service's streaming method: a `Watch` stays open as long as the client
/// likes.
pub(super) const GRPC_WATCH_PATH: &str = "/grpc.health.v1.Health/Watch";

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(10),
            min_body_rate: 1024,
            max_connections: None,
            descriptor_share: Share::Automatic,
            probe_reserve: 16,
            max_streams: None,
            admission_timeout: Duration::from_secs(1),
            probe_paths: DEFAULT_PROBE_PATHS
                .iter()
                .map(|path| Cow::Borrowed(*path))
                .collect(),
            readiness_paths: Arc::from([Cow::Borrowed("/readyz")]),
            stream_paths: Arc::from([Cow::Borrowed(GRPC_WATCH_PATH)]),
        }
    }
}

/// How a listener's room is divided: resolved when it starts serving, and again whenever a
/// listener of the same process starts or stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Budget {
    pub(super) ordinary: usize,
    pub(super) reserve: usize,
    pub(super) admission: usize,
    pub(super) streams: usize,
}

/// A listener's share of the process's descriptor limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Share {
    /// An equal part of what the fixed shares leave, among the listeners serving at the time.
    Automatic,
    /// `parts` of `of`, whatever else serves.
    Fixed(u32, u32),
}

/// Shares are counted in millionths of the descriptor limit.
pub(super) const WHOLE: u64 = 1_000_000;

impl Share {
    pub(super) fn millionths(parts: u32, of: u32) -> u64 {
        u64::from(parts) * WHOLE / u64::from(of.max(1))
    }
}

/// The listeners serving in this process: each derives its limits from the share left to it,
/// so that together they stay under the descriptor limit — a second listener sized from the
/// whole limit, as the first, would let the two exhaust it.
#[derive(Debug)]
pub(super) struct Serving {
    /// Listeners with the automatic share.
    pub(super) automatic: AtomicU64,
    /// Millionths of the limit taken by listeners with a fixed share.
    pub(super) fixed: AtomicU64,
    /// Moves whenever a listener starts or stops, so the others resolve their limits again.
    pub(super) changes: AtomicU64,
}

pub(super) static SERVING: Serving = Serving {
    automatic: AtomicU64::new(0),
    fixed: AtomicU64::new(0),
    changes: AtomicU64::new(0),
};

impl Serving {
    /// The millionths of the limit a listener with `share` gets now; `joining` counts it among
    /// the listeners serving when it is not yet.
    pub(super) fn millionths(&self, share: Share, joining: bool) -> u64 {
        match share {
            Share::Fixed(parts, of) => Share::millionths(parts, of),
            Share::Automatic => {
                let others = self.automatic.load(Ordering::Acquire) + u64::from(joining);
                let left = WHOLE.saturating_sub(self.fixed.load(Ordering::Acquire));
                // Fixed shares that claim the whole limit leave the others a sliver, not
                // nothing: they still need room to answer probes.
                left.max(WHOLE / 100) / others.max(1)
            }
        }
    }
}

/// One listener counted in [`SERVING`] while it lives.
#[derive(Debug)]
pub(super) struct Registration(Share);

impl Registration {
    pub(super) fn new(share: Share) -> Self {
        match share {
            Share::Automatic => SERVING.automatic.fetch_add(1, Ordering::AcqRel),
            Share::Fixed(parts, of) => SERVING
                .fixed
                .fetch_add(Share::millionths(parts, of), Ordering::AcqRel),
        };
        SERVING.changes.fetch_add(1, Ordering::AcqRel);
        Registration(share)
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        match self.0 {
            Share::Automatic => SERVING.automatic.fetch_sub(1, Ordering::AcqRel),
            Share::Fixed(parts, of) => SERVING
                .fixed
                .fetch_sub(Share::millionths(parts, of), Ordering::AcqRel),
        };
        SERVING.changes.fetch_add(1, Ordering::AcqRel);
    }
}

impl ServeConfig {
    /// How long a request head may take to arrive, and how long a keep-alive connection may
    /// sit idle between requests (default 10 s). An HTTP/2 connection with no stream open for
    /// as long is sent `GOAWAY`.
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// The longest gap between two pieces of a request body, and the grace before its minimum
    /// rate applies (default 10 s). A body that falls behind is cut: `408 Request Timeout`,
    /// and the connection closes.
    pub fn body_read_timeout(mut self, timeout: Duration) -> Self {
        self.body_read_timeout = timeout;
        self
    }

    /// The least average rate, in bytes a second, a request body must keep once its read
    /// timeout has passed (default 1,024; 0 for none).
    pub fn min_body_rate(mut self, bytes_per_second: u64) -> Self {
        self.min_body_rate = bytes_per_second;
        self
    }

    /// The most ordinary connections open at once (default: this listener's share of the soft
    /// `RLIMIT_NOFILE`, less room for the process's own descriptors, for admission and for the
    /// probe reserve, at most 25,000; see [`ServeConfig::descriptor_share`]).
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = Some(connections.max(1));
        self
    }

    /// This listener's share of the descriptor limit, from which its connection limit and
    /// admission room are derived: `parts` of `of`, whatever else the process serves.
    ///
    /// By default the share is automatic: the listeners serving in one process at the same
    /// time split the limit equally (what fixed shares leave), so that together they stay under
    /// it — each sized from the whole would exhaust it. Limits are resolved again whenever a
    /// listener of the process starts or stops; connections already open above a new, smaller
    /// limit are not cut, they end with their timeouts. Set a fixed share to weigh listeners
    /// (checkout: 3 of 4 to the public listener, 1 of 4 to the admin one).
    pub fn descriptor_share(mut self, parts: u32, of: u32) -> Self {
        let of = of.max(1);
        self.descriptor_share = Share::Fixed(parts.clamp(1, of), of);
        self
    }

    /// Connections kept for probes once ordinary connections fill the limit (default 16).
    pub fn probe_reserve(mut self, connections: usize) -> Self {
        self.probe_reserve = connections;
        self
    }

    /// The most long-lived streams (gRPC `Watch`, see [`ServeConfig::stream_paths`]) open at
    /// once (default: a quarter of the connection limit). Past it a new one is refused with
    /// gRPC `UNAVAILABLE`; they are never served through the probe reserve.
    pub fn max_streams(mut self, streams: usize) -> Self {
        self.max_streams = Some(streams);
        self
    }

    /// The paths whose requests may stay open indefinitely, counted against
    /// [`ServeConfig::max_streams`] (default: `/grpc.health.v1.Health/Watch`).
    pub fn stream_paths<I, P>(mut self, paths: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<Cow<'static, str>>,
    {
        self.stream_paths = paths.into_iter().map(Into::into).collect();
        self
    }

    /// How long a connection admitted past the limit has to send its request (default 1 s);
    /// it is also the most such a connection lives.
    pub fn admission_timeout(mut self, timeout: Duration) -> Self {
        self.admission_timeout = timeout;
        self
    }

    /// The probe paths the reserve admits (each with its sub-paths), e.g. `["/internal/live",
    /// "/internal/ready"]` (default: [`DEFAULT_PROBE_PATHS`]).
    pub fn probe_paths<I, P>(mut self, paths: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<Cow<'static, str>>,
    {
        self.probe_paths = paths.into_iter().map(Into::into).collect();
        self
    }

    /// The readiness path (with its sub-paths), answered `503` through the reserve while every
    /// ordinary connection is busy serving a request (default `/readyz`).
    pub fn readiness_path(mut self, path: impl Into<Cow<'static, str>>) -> Self {
        self.readiness_paths = Arc::from([path.into()]);
        self
    }

    /// The defaults, admitting `health`'s own probe paths (and gRPC health) to the reserve.
    pub fn for_health(health: &HealthView) -> ServeConfig {
        let paths = health.paths();
        ServeConfig::default()
            .probe_paths([
                Cow::Owned(paths.liveness().to_owned()),
                Cow::Owned(paths.readiness().to_owned()),
                Cow::Owned(paths.startup().to_owned()),
                Cow::Borrowed(crate::quiet::GRPC_HEALTH_PATH),
            ])
            .readiness_path(paths.readiness().to_owned())
    }

    /// The ordinary connection limit this configuration would resolve to if it started serving
    /// now, beside the listeners of this process already serving.
    pub fn connection_limit(&self) -> usize {
        self.budget(true).ordinary
    }

    /// The long-lived stream budget this configuration would resolve to if it started serving
    /// now, beside the listeners of this process already serving.
    pub fn stream_limit(&self) -> usize {
        self.budget(true).streams
    }

    /// The limits from this listener's share of the descriptor limit now; `joining` counts it
    /// among the listeners serving when it is not yet.
    pub(crate) fn budget(&self, joining: bool) -> Budget {
        let millionths = SERVING.millionths(self.descriptor_share, joining);
        let share = match descriptor_limit() {
            Some(limit) => {
                let room = limit.saturating_sub(DESCRIPTOR_HEADROOM);
                usize::try_from(room.saturating_mul(millionths) / WHOLE).unwrap_or(usize::MAX)
            }
            None => usize::MAX,
        };
        // Admission slots scale down with a small share (and half as many again may be closing
        // at any moment); the reserve is kept whole.
        let admission = (share / 4).clamp(16, ADMISSION_SLOTS);
        let ordinary = self.max_connections.unwrap_or_else(|| {
            share
                .saturating_sub(self.probe_reserve + admission + admission / 2)
                .clamp(1, DEFAULT_CONNECTION_CAP)
        });
        Budget {
            ordinary,
            reserve: self.probe_reserve,
            admission,
            streams: self.max_streams.unwrap_or((ordinary / 4).max(1)),
        }
    }

    pub(crate) fn body_limits(&self) -> (Duration, u64) {
        (self.body_read_timeout, self.min_body_rate)
    }

    pub(crate) fn is_probe_path(&self, target: &str) -> bool {
        matches_any(&self.probe_paths, target)
    }

    pub(crate) fn is_readiness_path(&self, target: &str) -> bool {
        matches_any(&self.readiness_paths, target)
    }

    pub(crate) fn is_stream_path(&self, path: &str) -> bool {
        self.stream_paths.iter().any(|stream| stream == path)
    }
}

/// Whether `target`'s path is one of `paths` or below one.
pub(super) fn matches_any(paths: &[Cow<'static, str>], target: &str) -> bool {
    let path = target.split(['?', '#']).next().unwrap_or(target);
    paths.iter().any(|probe| {
        let probe = probe.trim_end_matches('/');
        path == probe
            || path
                .strip_prefix(probe)
                .is_some_and(|rest| rest.starts_with('/'))
    })
}

/// The soft limit on open file descriptors, where the platform has one.
pub(super) fn descriptor_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        rustix::process::getrlimit(rustix::process::Resource::Nofile).current
    }
    #[cfg(not(unix))]
    {
        None
    }
}
