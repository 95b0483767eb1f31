//! The balancer: a real HAProxy in front of the fleet, in one of two modes.
//!
//! - `kubernetes`: HAProxy runs no checks. An instance is in rotation while the kubelet counts
//!   it Ready, applied through HAProxy's runtime API (`set server B/S state ready|maint`) after
//!   the endpoint-propagation delay, as the EndpointSlice controller and kube-proxy apply a
//!   readiness change (<https://kubernetes.io/docs/concepts/services-networking/endpoint-slices/#conditions>).
//! - `haproxy`: HAProxy checks the readiness probe's path itself (`option httpchk`), as a
//!   balancer in front of machines does.
//!
//! Either way, the drill reads rotation from HAProxy's own `show stat`.

use crate::file::pod::{ProbeAction, ResolvedPod};
use crate::file::{BalancerMode, HaproxyCheck};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

/// The backend's name.
pub const BACKEND: &str = "fleet";

/// HAProxy's check settings, defaulted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Checks {
    /// Interval.
    #[serde(serialize_with = "millis")]
    pub inter: Duration,
    /// Checks passed to enter.
    pub rise: u32,
    /// Checks failed to leave.
    pub fall: u32,
    /// Longest check.
    #[serde(serialize_with = "millis")]
    pub timeout: Duration,
}

impl Checks {
    /// The file's settings with the defaults (1s, 2, 3, 1s).
    pub fn from_file(check: Option<&HaproxyCheck>) -> Checks {
        Checks {
            inter: check
                .and_then(|c| c.inter)
                .map_or(Duration::from_secs(1), |d| d.0),
            rise: check.and_then(|c| c.rise).unwrap_or(2).max(1),
            fall: check.and_then(|c| c.fall).unwrap_or(3).max(1),
            timeout: check
                .and_then(|c| c.timeout)
                .map_or(Duration::from_secs(1), |d| d.0),
        }
    }
}

/// One server: its name, traffic address and check port.
#[derive(Debug, Clone)]
pub struct Server {
    /// Its name (`SERVICE-N`).
    pub name: String,
    /// Where traffic goes.
    pub address: SocketAddr,
    /// Where HAProxy's check goes, when not the traffic port.
    pub check_port: Option<u16>,
}

/// What the configuration needs.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The frontend.
    pub frontend: SocketAddr,
    /// The admin socket.
    pub socket: PathBuf,
    /// The servers.
    pub servers: Vec<Server>,
    /// The mode.
    pub mode: BalancerMode,
    /// HAProxy's checks (`haproxy` mode).
    pub checks: Checks,
    /// The readiness probe's path for HAProxy's check.
    pub check_path: Option<String>,
    /// Longest a request may wait for the server (the traffic timeout).
    pub server_timeout: Duration,
    /// HAProxy's `retry-on` keywords.
    pub retry_on: Vec<String>,
}

fn millis<S: serde::Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_u64(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX))
}

fn ms(duration: Duration) -> String {
    format!("{}ms", duration.as_millis().max(1))
}

/// The readiness probe's HTTP path, for HAProxy's checks.
pub fn check_path(pod: &ResolvedPod) -> Option<String> {
    match pod.readiness.as_ref().map(|probe| &probe.action) {
        Some(ProbeAction::Http { path, .. }) => Some(path.clone()),
        _ => None,
    }
}

/// HAProxy's configuration for `layout`.
pub fn config(layout: &Layout) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "global\n    maxconn 4096\n    stats socket {} mode 600 level admin\n\n\
         defaults\n    mode http\n    timeout connect 500ms\n    timeout client 30s\n    \
         timeout server {}\n    timeout http-request 10s\n    timeout check {}\n    \
         # What may be retried on another server (the drill file's balancer.retry_on).\n    \
         retries 2\n    retry-on {}\n    option redispatch 1\n    option http-buffer-request\n\n\
         frontend {BACKEND}\n    bind {}\n    default_backend {BACKEND}\n\n\
         backend {BACKEND}\n    balance roundrobin\n",
        layout.socket.display(),
        ms(layout.server_timeout),
        ms(layout.checks.timeout),
        if layout.retry_on.is_empty() {
            "conn-failure".to_owned()
        } else {
            layout.retry_on.join(" ")
        },
        layout.frontend,
    );
    let checked = layout.mode == BalancerMode::Haproxy;
    match (&layout.check_path, checked) {
        (Some(path), true) => {
            let _ = write!(
                out,
                "    option httpchk GET {path}\n    http-check expect rstatus ^[23]\n"
            );
        }
        (None, true) => {} // a TCP check: the readiness probe is not HTTP
        _ => {}
    }
    if checked {
        let _ = writeln!(
            out,
            "    default-server check inter {} fastinter {} downinter {} rise {} fall {}",
            ms(layout.checks.inter),
            ms(layout.checks.inter),
            ms(layout.checks.inter),
            layout.checks.rise,
            layout.checks.fall
        );
    }
    for server in &layout.servers {
        let _ = write!(out, "    server {} {}", server.name, server.address);
        match (checked, server.check_port) {
            (true, Some(port)) => {
                let _ = write!(out, " port {port}");
            }
            // Out of rotation until the kubelet counts it Ready.
            (false, _) => out.push_str(" disabled"),
            _ => {}
        }
        out.push('\n');
    }
    out
}

/// Why HAProxy could not be run.
#[derive(Debug, thiserror::Error)]
pub enum HaproxyError {
    /// The binary is missing.
    #[error(
        "HAProxy not found at `{0}`: install it (Debian: `apt-get install haproxy`) or pass --haproxy PATH"
    )]
    Missing(String),
    /// `haproxy -c` rejected the generated configuration.
    #[error("HAProxy rejected the generated configuration {path}: {message}")]
    Config {
        /// The configuration file.
        path: PathBuf,
        /// HAProxy's complaint.
        message: String,
    },
    /// Starting or talking to the process failed.
    #[error("HAProxy: {0}")]
    Io(#[from] std::io::Error),
}

/// One server's (or the backend's) figures from `show stat`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServerStat {
    /// The server's name (`BACKEND` for the backend's row).
    pub name: String,
    /// `UP`, `DOWN`, `UP 1/3`, `no check`, ….
    pub status: String,
    /// Times HAProxy took it out of rotation (`chkdown`).
    pub check_downs: u64,
    /// Requests retried on it (`wretr`).
    pub retries: u64,
    /// Requests redispatched away from it to another server (`wredis`).
    pub redispatches: u64,
    /// Requests sent to it (`stot`).
    pub sessions: u64,
}

impl ServerStat {
    /// Whether the server takes traffic.
    pub fn in_rotation(&self) -> bool {
        in_rotation(&self.status)
    }
}

/// Whether a `show stat` status means "in rotation".
pub fn in_rotation(status: &str) -> bool {
    status.starts_with("UP") || status == "no check"
}

/// Parses `show stat` CSV into the rows of one backend: its servers, then `BACKEND`.
pub fn parse_stat(text: &str, backend: &str) -> Vec<ServerStat> {
    let mut lines = text.lines();
    let Some(header) = lines.next() else {
        return Vec::new();
    };
    let columns: Vec<&str> = header.trim_start_matches("# ").split(',').collect();
    let position = |name: &str| columns.iter().position(|c| *c == name);
    let (Some(px), Some(sv), Some(status)) =
        (position("pxname"), position("svname"), position("status"))
    else {
        return Vec::new();
    };
    let counter = |fields: &[&str], name: &str| {
        position(name)
            .and_then(|at| fields.get(at))
            .and_then(|value| value.parse().ok())
            .unwrap_or(0)
    };
    lines
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            let (pxname, svname, state) = (fields.get(px)?, fields.get(sv)?, fields.get(status)?);
            (*pxname == backend && *svname != "FRONTEND").then(|| ServerStat {
                name: (*svname).to_owned(),
                status: (*state).to_owned(),
                check_downs: counter(&fields, "chkdown"),
                retries: counter(&fields, "wretr"),
                redispatches: counter(&fields, "wredis"),
                sessions: counter(&fields, "stot"),
            })
        })
        .collect()
}

/// Whether `binary` is an HAProxy that runs (`haproxy -v`): asked before anything starts, so a
/// missing HAProxy is an error at once rather than after the fleet boots.
pub async fn check_binary(binary: &Path) -> Result<(), HaproxyError> {
    let version = tokio::process::Command::new(binary)
        .arg("-v")
        .output()
        .await;
    if matches!(version, Ok(output) if output.status.success()) {
        Ok(())
    } else {
        Err(HaproxyError::Missing(binary.display().to_string()))
    }
}

/// A running HAProxy.
#[derive(Debug)]
pub struct Balancer {
    _child: tokio::process::Child,
    socket: PathBuf,
    /// Where traffic goes.
    pub frontend: SocketAddr,
    /// The mode.
    pub mode: BalancerMode,
}

impl Balancer {
    /// Writes the configuration to `{work_dir}/haproxy.cfg`, checks it, starts HAProxy.
    pub async fn start(
        binary: &Path,
        work_dir: &Path,
        layout: &Layout,
    ) -> Result<Balancer, HaproxyError> {
        check_binary(binary).await?;
        let path = work_dir.join("haproxy.cfg");
        std::fs::write(&path, config(layout))?;
        let check = tokio::process::Command::new(binary)
            .args(["-c", "-q", "-f"])
            .arg(&path)
            .output()
            .await?;
        if !check.status.success() {
            return Err(HaproxyError::Config {
                path,
                message: String::from_utf8_lossy(&check.stderr).trim().to_owned(),
            });
        }
        let log = std::fs::File::create(work_dir.join("haproxy.log"))?;
        let child = crate::child::command(binary)
            .arg("-db")
            .arg("-f")
            .arg(&path)
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        let balancer = Balancer {
            _child: child,
            socket: layout.socket.clone(),
            frontend: layout.frontend,
            mode: layout.mode,
        };
        // Ready when its admin socket answers.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while balancer.stats().await.is_err() {
            if tokio::time::Instant::now() > deadline {
                return Err(HaproxyError::Io(std::io::Error::other(
                    "HAProxy did not open its admin socket within 20 s",
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(balancer)
    }

    /// HAProxy's process.
    pub fn pid(&self) -> Option<u32> {
        self._child.id()
    }

    async fn command(&self, command: &str) -> std::io::Result<String> {
        let mut socket = UnixStream::connect(&self.socket).await?;
        socket.write_all(command.as_bytes()).await?;
        socket.write_all(b"\n").await?;
        let mut text = String::new();
        socket.read_to_string(&mut text).await?;
        Ok(text)
    }

    /// Each server's figures, then the backend's.
    pub async fn stats(&self) -> std::io::Result<Vec<ServerStat>> {
        Ok(parse_stat(&self.command("show stat").await?, BACKEND))
    }

    /// Puts `server` in rotation or out of it (`kubernetes` mode).
    pub async fn set_rotation(&self, server: &str, in_rotation: bool) -> std::io::Result<()> {
        let state = if in_rotation { "ready" } else { "maint" };
        let answer = self
            .command(&format!("set server {BACKEND}/{server} state {state}"))
            .await?;
        if answer.trim().is_empty() {
            Ok(())
        } else {
            Err(std::io::Error::other(format!(
                "HAProxy refused `set server {server} state {state}`: {}",
                answer.trim()
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(mode: BalancerMode) -> Layout {
        Layout {
            frontend: "127.0.0.1:9000".parse().unwrap(),
            socket: PathBuf::from("/tmp/x.sock"),
            servers: vec![Server {
                name: "orders-1".into(),
                address: "127.0.0.1:4001".parse().unwrap(),
                check_port: Some(4002),
            }],
            mode,
            checks: Checks::from_file(None),
            check_path: Some("/ready".into()),
            server_timeout: Duration::from_secs(5),
            retry_on: Vec::new(),
        }
    }

    #[test]
    fn kubernetes_mode_has_no_checks_and_starts_out_of_rotation() {
        let text = config(&layout(BalancerMode::Kubernetes));
        assert!(!text.contains("httpchk"), "{text}");
        assert!(!text.contains("check inter"), "{text}");
        assert!(
            text.contains("server orders-1 127.0.0.1:4001 disabled"),
            "{text}"
        );
        assert!(text.contains("retry-on conn-failure\n"), "{text}");
    }

    #[test]
    fn haproxy_mode_checks_the_readiness_path_on_its_port() {
        let text = config(&layout(BalancerMode::Haproxy));
        assert!(text.contains("option httpchk GET /ready"), "{text}");
        assert!(
            text.contains(
                "default-server check inter 1000ms fastinter 1000ms downinter 1000ms rise 2 fall 3"
            ),
            "{text}"
        );
        assert!(
            text.contains("server orders-1 127.0.0.1:4001 port 4002"),
            "{text}"
        );
    }

    #[test]
    fn parses_show_stat() {
        let text = "# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,eresp,wretr,wredis,status,weight,act,bck,chkfail,chkdown\n\
fleet,FRONTEND,,,0,1,4096,3,0,0,0,0,0,,,,,OPEN,,,,,\n\
fleet,fleet-1,0,0,0,1,,3,0,0,,0,,0,0,4,2,UP,1,1,0,0,0\n\
fleet,fleet-2,0,0,0,1,,3,0,0,,0,,0,0,0,0,DOWN 1/2,1,1,0,3,2\n\
fleet,BACKEND,0,0,0,1,410,6,0,0,0,0,,0,0,4,2,UP,2,2,0,,1\n";
        let stats = parse_stat(text, "fleet");
        assert_eq!(stats.len(), 3);
        assert_eq!(
            stats[0],
            ServerStat {
                name: "fleet-1".into(),
                status: "UP".into(),
                check_downs: 0,
                retries: 4,
                redispatches: 2,
                sessions: 3,
            }
        );
        assert_eq!(stats[1].status, "DOWN 1/2");
        assert_eq!(stats[1].check_downs, 2);
        assert!(!stats[1].in_rotation());
        assert_eq!(stats[2].name, "BACKEND");
        assert!(in_rotation("UP 1/3"));
        assert!(in_rotation("no check"));
        assert!(!in_rotation("DOWN 1/2"));
        assert!(parse_stat("", "fleet").is_empty());
    }
}
