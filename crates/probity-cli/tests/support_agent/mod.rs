//! Shared by `tests/agent.rs` and `tests/inspect.rs`: the test services, the `probity agent`
//! binary on a free port, and a raw HTTP/1.1 GET.

#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn in_ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// Whether a prerequisite is there; panics under CI when it is not.
pub fn require(available: bool, what: &str) -> bool {
    if !available {
        assert!(!in_ci(), "{what} (scripts/setup.sh installs it)");
        eprintln!("SKIPPED: {what}");
    }
    available
}

pub fn postgres_available() -> bool {
    require(
        std::net::TcpStream::connect_timeout(
            &"127.0.0.1:5432".parse().unwrap(),
            Duration::from_secs(2),
        )
        .is_ok(),
        "PostgreSQL is not reachable at 127.0.0.1:5432",
    )
}

pub fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn probity() -> Command {
    Command::new(env!("CARGO_BIN_EXE_probity"))
}

pub fn run(args: &[&str]) -> Output {
    probity().args(args).output().expect("probity runs")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("probity-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A free loopback port (bound, then released for the child to take).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Two different free loopback ports: both bound at once, so the kernel cannot hand out the
/// same one twice, then released for the child to take.
pub fn free_ports() -> (u16, u16) {
    let first = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let second = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    (
        first.local_addr().unwrap().port(),
        second.local_addr().unwrap().port(),
    )
}

/// A child process, killed when dropped.
pub struct Process {
    pub child: Child,
    pub port: u16,
}

impl Process {
    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Waits (bounded) for the exit status. It sends nothing: the test signals the process
    /// itself, and a second SIGTERM would end a drain at once.
    pub fn wait_for_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            wait_a_little();
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads the first stdout line (`listening on 127.0.0.1:PORT`) for the port.
fn port_from_first_line(child: &mut Child) -> u16 {
    let stdout = child.stdout.take().unwrap();
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    line.trim()
        .rsplit(':')
        .next()
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"))
}

/// The Node test service (npm packages installed by `npm ci` when missing).
pub fn node_app() -> Option<Process> {
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    if !require(node, "node is not installed") {
        return None;
    }
    let app = repository().join("crates/probity-agent/tests/apps/node");
    if !app.join("node_modules/pg").is_dir() {
        let installed = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--silent"])
            .current_dir(&app)
            .status()
            .is_ok_and(|status| status.success());
        if !require(
            installed,
            "the Node service's npm packages could not be installed",
        ) {
            return None;
        }
    }
    let mut child = Command::new("node")
        .arg(app.join("server.js"))
        .env("PORT", "0")
        .env("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("node starts");
    let port = port_from_first_line(&mut child);
    Some(Process { child, port })
}

/// `examples/agent/node.toml` pointed at the app, written to `dir`.
pub fn node_config(dir: &Path, app: &Process) -> PathBuf {
    let text = std::fs::read_to_string(repository().join("examples/agent/node.toml")).unwrap();
    let path = dir.join("agent.toml");
    std::fs::write(&path, text.replace("http://127.0.0.1:3000", &app.origin())).unwrap();
    path
}

/// `probity agent --config FILE --listen 127.0.0.1:0`.
pub fn agent(config: &Path) -> Process {
    let mut child = probity()
        .args(["agent", "--config"])
        .arg(config)
        .args(["--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("probity agent starts");
    let port = port_from_first_line(&mut child);
    Process { child, port }
}

/// The checkout binary, built from this worktree when missing.
pub fn checkout_binary() -> PathBuf {
    let dir = Path::new(env!("CARGO_BIN_EXE_probity"))
        .parent()
        .unwrap()
        .to_owned();
    let binary = dir.join("checkout");
    if !binary.is_file() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "-p", "checkout"])
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building checkout failed");
    }
    binary
}

/// A blocking HTTP/1.1 GET: status and body (`None` when nothing answered in 5 s).
pub fn get(url: &str) -> Option<(u16, String)> {
    let rest = url.strip_prefix("http://")?;
    let (host, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_owned()), |(host, path)| {
            (host, format!("/{path}"))
        });
    let mut stream = std::net::TcpStream::connect(host).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.split(' ').nth(1)?.parse().ok()?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())?;
    Some((status, body))
}

/// Polls `url` until it answers `status`, up to `limit`.
pub fn wait_for(url: &str, status: u16, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if get(url).is_some_and(|(answered, _)| answered == status) {
            return true;
        }
        wait_a_little();
    }
    false
}

/// The pause between two polls: 100 ms on tokio's timer.
pub fn wait_a_little() {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(async { tokio::time::sleep(Duration::from_millis(100)).await });
}
