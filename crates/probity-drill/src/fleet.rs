//! The fleet: real `checkout` processes on loopback, started, killed and restarted by the drill.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::process::Child;
use tokio::time::Instant;

/// What happened to an instance, and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventKind {
    /// A probe failed (`startup` or `liveness`), with the reason.
    ProbeFailed {
        /// Which probe.
        probe: &'static str,
        /// Why.
        reason: String,
    },
    /// The startup probe passed.
    Started,
    /// The prober killed the container (failure threshold reached).
    Killed {
        /// Which probe reached its threshold.
        probe: &'static str,
    },
    /// A new container (process) was started.
    Spawned,
}

/// One event in the drill's timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// When, on the drill's clock.
    pub at: Instant,
    /// Which instance.
    pub instance: usize,
    /// What.
    pub kind: EventKind,
}

/// The shared event log.
#[derive(Debug, Clone, Default)]
pub struct Events(Arc<Mutex<Vec<Event>>>);

impl Events {
    /// Records an event now.
    pub fn record(&self, instance: usize, kind: EventKind) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Event {
                at: Instant::now(),
                instance,
                kind,
            });
    }

    /// Every event recorded at or after `since`.
    pub fn since(&self, since: Instant) -> Vec<Event> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|event| event.at >= since)
            .cloned()
            .collect()
    }
}

/// One `checkout` instance.
#[derive(Debug)]
pub struct Instance {
    /// Position in the fleet (0-based).
    pub index: usize,
    /// Its name in HAProxy (`checkout-1`…).
    pub name: String,
    /// The public listener.
    pub listen: SocketAddr,
    /// The admin listener (chaos endpoints, metrics).
    pub admin: SocketAddr,
    binary: PathBuf,
    args: Vec<String>,
    log_path: PathBuf,
    child: tokio::sync::Mutex<Option<Child>>,
    generation: AtomicU64,
    /// Restarts made by the prober (liveness or startup failures), not by the drill.
    pub restarts: AtomicU32,
    /// Extra arguments for the next start only (e.g. `--boot-delay`).
    next_start_extra: Mutex<Vec<String>>,
}

impl Instance {
    /// Describes an instance named `{prefix}-{index + 1}`; nothing runs until
    /// [`Instance::start`].
    pub fn new(
        prefix: &str,
        index: usize,
        binary: &Path,
        args: Vec<String>,
        listen: SocketAddr,
        admin: SocketAddr,
        log_path: PathBuf,
    ) -> Self {
        Instance {
            index,
            name: format!("{prefix}-{}", index + 1),
            listen,
            admin,
            binary: binary.to_owned(),
            args,
            log_path,
            child: tokio::sync::Mutex::new(None),
            generation: AtomicU64::new(0),
            restarts: AtomicU32::new(0),
            next_start_extra: Mutex::new(Vec::new()),
        }
    }

    /// A counter that changes with every new process.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Adds arguments to the next start only.
    pub fn set_next_start_args(&self, extra: Vec<String>) {
        *self
            .next_start_extra
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = extra;
    }

    /// Starts the process (killing any previous one).
    pub async fn start(&self, events: &Events) -> std::io::Result<()> {
        let mut child = self.child.lock().await;
        if let Some(mut old) = child.take() {
            let _ = old.kill().await;
        }
        let extra = std::mem::take(
            &mut *self
                .next_start_extra
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        );
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log_path)?;
        let spawned = crate::child::command(&self.binary)
            .args(&self.args)
            .args(&extra)
            .env("RUST_LOG", "warn")
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        *child = Some(spawned);
        self.generation.fetch_add(1, Ordering::AcqRel);
        events.record(self.index, EventKind::Spawned);
        Ok(())
    }

    /// Asks the process to stop (SIGTERM), as the kubelet does when a pod is deleted, and starts
    /// a new generation so the prober starts over with the replacement.
    pub async fn terminate(&self) -> std::io::Result<()> {
        let pid = self
            .pid()
            .await
            .and_then(|pid| rustix::process::Pid::from_raw(pid as i32))
            .ok_or_else(|| std::io::Error::other(format!("{} is not running", self.name)))?;
        rustix::process::kill_process(pid, rustix::process::Signal::TERM)?;
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Waits up to `within` for the process to exit; `true` when it did.
    pub async fn wait_exit(&self, within: Duration) -> bool {
        let mut child = self.child.lock().await;
        match child.as_mut() {
            Some(running) => tokio::time::timeout(within, running.wait()).await.is_ok(),
            None => true,
        }
    }

    /// Kills the process (SIGKILL) and waits for it.
    pub async fn kill(&self) {
        if let Some(mut child) = self.child.lock().await.take() {
            let _ = child.kill().await;
        }
    }

    /// Whether the process is running.
    pub async fn is_running(&self) -> bool {
        match self.child.lock().await.as_mut() {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// The process id of the running process.
    pub async fn pid(&self) -> Option<u32> {
        self.child.lock().await.as_ref().and_then(Child::id)
    }

    /// What the instance checks, as it states it (`checkout … --print-contract`, with this
    /// instance's arguments).
    pub async fn contract(&self) -> Result<serde_json::Value, String> {
        let output = tokio::process::Command::new(&self.binary)
            .args(&self.args)
            .arg("--print-contract")
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .map_err(|error| error.to_string())?;
        if !output.status.success() {
            return Err(String::from_utf8_lossy(&output.stderr).trim().to_owned());
        }
        serde_json::from_slice(&output.stdout).map_err(|error| error.to_string())
    }

    /// The log file of this instance.
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }
}

/// A loopback address on a port that was free a moment ago.
pub fn free_port() -> std::io::Result<SocketAddr> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.local_addr()
}

/// An HTTP client for probes: no connection reuse (as the kubelet), a hard timeout.
pub fn probe_client(timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(timeout)
        .pool_max_idle_per_host(0)
        .no_proxy()
        .build()
        .unwrap_or_default()
}

/// `GET http://{address}{path}`: `Ok(status)` or `Err(reason)`.
pub async fn get_status(
    client: &reqwest::Client,
    address: SocketAddr,
    path: &str,
) -> Result<u16, String> {
    match client.get(format!("http://{address}{path}")).send().await {
        Ok(response) => Ok(response.status().as_u16()),
        Err(error) if error.is_timeout() => Err("timed out".to_owned()),
        Err(error) if error.is_connect() => Err("connection refused".to_owned()),
        Err(error) => Err(error.to_string()),
    }
}
