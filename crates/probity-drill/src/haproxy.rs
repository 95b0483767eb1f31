//! A real HAProxy in front of the fleet: its configuration, its process and its view of the
//! servers.
//!
//! The drill writes `option httpchk GET /readyz` with the `inter`, `fastinter`, `downinter`,
//! `rise` and `fall` it was given (HAProxy's own defaults are inter 2 s, rise 2, fall 3), and
//! reads each server's state from the admin socket's `show stat`. A server is in rotation while
//! its status starts with `UP` (`UP 1/3` is up and going down; `DOWN 1/2` is down and going up).

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::process::{Child, Command};

/// HAProxy's health-check timing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct CheckTiming {
    /// Interval while a server is fully up.
    #[serde(serialize_with = "crate::report::millis")]
    pub inter: Duration,
    /// Interval while a server is changing state.
    #[serde(serialize_with = "crate::report::millis")]
    pub fastinter: Duration,
    /// Interval while a server is fully down.
    #[serde(serialize_with = "crate::report::millis")]
    pub downinter: Duration,
    /// Consecutive successful checks to mark a server up.
    pub rise: u32,
    /// Consecutive failed checks to mark a server down.
    pub fall: u32,
    /// Longest a check may take.
    #[serde(serialize_with = "crate::report::millis")]
    pub timeout: Duration,
}

impl Default for CheckTiming {
    fn default() -> Self {
        CheckTiming {
            inter: Duration::from_millis(1000),
            fastinter: Duration::from_millis(250),
            downinter: Duration::from_millis(250),
            rise: 2,
            fall: 1,
            timeout: Duration::from_millis(500),
        }
    }
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

fn ms(duration: Duration) -> u128 {
    duration.as_millis().max(1)
}

/// The configuration for a fleet of `servers` (name, address) behind `frontend`.
pub fn config(
    frontend: SocketAddr,
    servers: &[(String, SocketAddr)],
    timing: CheckTiming,
    stats_socket: &Path,
) -> String {
    let mut text = String::new();
    let _ = writeln!(text, "global");
    let _ = writeln!(
        text,
        "    stats socket {} mode 600 level admin",
        stats_socket.display()
    );
    let _ = writeln!(text, "    maxconn 4096");
    let _ = writeln!(text);
    let _ = writeln!(text, "defaults");
    let _ = writeln!(text, "    mode http");
    let _ = writeln!(text, "    timeout connect 500ms");
    let _ = writeln!(text, "    timeout client 10s");
    let _ = writeln!(text, "    timeout server 3s");
    let _ = writeln!(text, "    timeout check {}ms", ms(timing.timeout));
    // Failed requests are what the drill measures: no retries on another server.
    let _ = writeln!(text, "    retries 0");
    let _ = writeln!(text);
    let _ = writeln!(text, "frontend checkout");
    let _ = writeln!(text, "    bind {frontend}");
    let _ = writeln!(text, "    default_backend checkout");
    let _ = writeln!(text);
    let _ = writeln!(text, "backend checkout");
    let _ = writeln!(text, "    balance roundrobin");
    let _ = writeln!(text, "    option httpchk GET /readyz");
    let _ = writeln!(text, "    http-check expect status 200");
    let _ = writeln!(
        text,
        "    default-server check inter {}ms fastinter {}ms downinter {}ms rise {} fall {}",
        ms(timing.inter),
        ms(timing.fastinter),
        ms(timing.downinter),
        timing.rise,
        timing.fall
    );
    for (name, address) in servers {
        let _ = writeln!(text, "    server {name} {address}");
    }
    text
}

/// A running HAProxy.
#[derive(Debug)]
pub struct Haproxy {
    child: Child,
    stats_socket: PathBuf,
    /// The frontend address load goes to.
    pub frontend: SocketAddr,
}

impl Haproxy {
    /// Checks the configuration with `haproxy -c`, then starts HAProxy in the foreground.
    pub async fn start(
        binary: &Path,
        work_dir: &Path,
        frontend: SocketAddr,
        servers: &[(String, SocketAddr)],
        timing: CheckTiming,
    ) -> Result<Haproxy, HaproxyError> {
        let version = Command::new(binary).arg("-v").output().await;
        if !matches!(version, Ok(output) if output.status.success()) {
            return Err(HaproxyError::Missing(binary.display().to_string()));
        }
        let stats_socket = work_dir.join("haproxy.sock");
        let config_path = work_dir.join("haproxy.cfg");
        std::fs::write(
            &config_path,
            config(frontend, servers, timing, &stats_socket),
        )?;
        let check = Command::new(binary)
            .arg("-c")
            .arg("-q")
            .arg("-f")
            .arg(&config_path)
            .output()
            .await?;
        if !check.status.success() {
            return Err(HaproxyError::Config {
                path: config_path,
                message: String::from_utf8_lossy(&check.stderr).trim().to_owned(),
            });
        }
        let log = std::fs::File::create(work_dir.join("haproxy.log"))?;
        let child = crate::child::command(binary)
            .arg("-db")
            .arg("-f")
            .arg(&config_path)
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        Ok(Haproxy {
            child,
            stats_socket,
            frontend,
        })
    }

    /// Each server's status as HAProxy reports it (`UP`, `DOWN`, `UP 1/3`, …), by name.
    pub async fn server_states(&self) -> std::io::Result<Vec<(String, String)>> {
        let mut socket = UnixStream::connect(&self.stats_socket).await?;
        socket.write_all(b"show stat\n").await?;
        let mut text = String::new();
        socket.read_to_string(&mut text).await?;
        Ok(parse_stat(&text, "checkout"))
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

/// Whether a `show stat` status means "in rotation".
pub fn in_rotation(status: &str) -> bool {
    status.starts_with("UP")
}

/// Parses `show stat` CSV into (server name, status) for one backend.
pub fn parse_stat(text: &str, backend: &str) -> Vec<(String, String)> {
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
    lines
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            let (pxname, svname, state) = (fields.get(px)?, fields.get(sv)?, fields.get(status)?);
            (*pxname == backend && *svname != "BACKEND" && *svname != "FRONTEND")
                .then(|| ((*svname).to_owned(), (*state).to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_health_checks_with_the_given_timing() {
        let text = config(
            "127.0.0.1:9000".parse().unwrap(),
            &[("checkout-1".into(), "127.0.0.1:9001".parse().unwrap())],
            CheckTiming::default(),
            Path::new("/tmp/x.sock"),
        );
        assert!(text.contains("option httpchk GET /readyz"));
        assert!(text.contains(
            "default-server check inter 1000ms fastinter 250ms downinter 250ms rise 2 fall 1"
        ));
        assert!(text.contains("server checkout-1 127.0.0.1:9001"));
        assert!(text.contains("stats socket /tmp/x.sock"));
    }

    #[test]
    fn parses_show_stat() {
        let text = "# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,eresp,wretr,wredis,status,weight\n\
checkout,FRONTEND,,,0,1,4096,3,0,0,0,0,0,,,,,OPEN,\n\
checkout,checkout-1,0,0,0,1,,3,0,0,,0,,0,0,0,0,UP,1\n\
checkout,checkout-2,0,0,0,1,,3,0,0,,0,,0,0,0,0,DOWN 1/2,1\n\
checkout,BACKEND,0,0,0,1,410,3,0,0,0,0,,0,0,0,0,UP,2\n";
        let states = parse_stat(text, "checkout");
        assert_eq!(
            states,
            vec![
                ("checkout-1".to_owned(), "UP".to_owned()),
                ("checkout-2".to_owned(), "DOWN 1/2".to_owned())
            ]
        );
        assert!(in_rotation("UP 1/3"));
        assert!(!in_rotation("DOWN 1/2"));
        assert!(parse_stat("", "checkout").is_empty());
    }
}
