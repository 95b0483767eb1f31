//! Shared by the agent's end-to-end tests: the real Node and Python services, the agent on a
//! free port, a TCP proxy in front of PostgreSQL, and polling with generous deadlines.
//!
//! A test that needs Node, its npm packages, Python's packages or PostgreSQL fails under
//! `CI=true` when one is missing (scripts/setup.sh installs them) and skips, saying so,
//! elsewhere.

#![allow(dead_code, unreachable_pub)]

use probity_agent::{Agent, Config, Format};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

pub const POSTGRES: &str = "127.0.0.1:5432";

fn in_ci() -> bool {
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
        std::net::TcpStream::connect_timeout(&POSTGRES.parse().unwrap(), Duration::from_secs(2))
            .is_ok(),
        "PostgreSQL is not reachable at 127.0.0.1:5432",
    )
}

pub fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn apps() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/apps")
}

/// Node with the test service's packages (installed with `npm ci` when missing).
pub fn node_ready() -> bool {
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    if !require(node, "node is not installed") {
        return false;
    }
    let app = apps().join("node");
    if !app.join("node_modules/pg").is_dir() || !app.join("node_modules/prom-client").is_dir() {
        let installed = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--silent"])
            .current_dir(&app)
            .status()
            .is_ok_and(|status| status.success());
        if !require(
            installed,
            "the Node service's npm packages could not be installed",
        ) {
            return false;
        }
    }
    true
}

/// The venv's Python with the test service's packages.
pub fn python() -> Option<PathBuf> {
    let venv = std::env::var_os("PROBITY_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| repository().join("target/venv"));
    let python = venv.join("bin/python");
    let ready = Command::new(&python)
        .args(["-c", "import prometheus_client, psycopg, psycopg_pool"])
        .output()
        .is_ok_and(|output| output.status.success());
    require(
        ready,
        &format!(
            "{} lacks prometheus_client, psycopg and psycopg_pool",
            python.display()
        ),
    )
    .then_some(python)
}

/// A test service's process, killed when dropped.
pub struct App {
    child: Child,
    pub port: u16,
}

impl App {
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn spawn(mut command: Command) -> App {
        let mut child = command
            .env("PORT", "0")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the test service starts");
        let stdout = child.stdout.take().unwrap();
        // The service prints its port first; a service that dies closes the pipe.
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        let port = line
            .trim()
            .rsplit(':')
            .next()
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("the test service did not say its port: {line:?}"));
        App { child, port }
    }

    pub fn node(database_url: &str) -> App {
        App::node_with(database_url, &[])
    }

    /// The Node service with more environment (`READY_BUDGET_MS`, `POOL_ACQUIRE_MS`,
    /// `QUERY_MS`, `HEALTH`), later entries overriding the defaults.
    pub fn node_with(database_url: &str, env: &[(&str, &str)]) -> App {
        let mut command = Command::new("node");
        command
            .arg(apps().join("node/server.js"))
            .env("DATABASE_URL", database_url)
            .env("POOL_MAX", "4");
        for (name, value) in env {
            command.env(name, value);
        }
        App::spawn(command)
    }

    pub fn python(python: &Path, database_url: &str) -> App {
        App::python_with(python, database_url, &[])
    }

    /// The Python service with more environment (`THREADS`, `POOL_MAX`, `POOL_TIMEOUT`,
    /// `ORDERS_TABLE`), later entries overriding the defaults.
    pub fn python_with(python: &Path, database_url: &str, env: &[(&str, &str)]) -> App {
        let mut command = Command::new(python);
        command
            .arg(apps().join("python/server.py"))
            .env("DATABASE_URL", database_url)
            .env("POOL_MAX", "4");
        for (name, value) in env {
            command.env(name, value);
        }
        App::spawn(command)
    }

    /// The service's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` (`STOP`, `CONT`) to the service.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -{signal} failed");
    }
}

impl Drop for App {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An example configuration with the app's and PostgreSQL's addresses replaced.
pub fn example(name: &str, app: &App, postgres: &str) -> String {
    let text = std::fs::read_to_string(repository().join("examples/agent").join(name)).unwrap();
    text.replace("http://127.0.0.1:3000", &app.url())
        .replace("127.0.0.1:5432", postgres)
        .replace("0.0.0.0:9090", "127.0.0.1:0")
}

/// A running agent.
pub struct RunningAgent {
    pub url: String,
    task: tokio::task::JoinHandle<std::io::Result<probity_axum::ShutdownReport>>,
}

impl Drop for RunningAgent {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Builds and serves the agent a configuration describes, on a free loopback port.
pub async fn agent(text: &str, format: Format) -> RunningAgent {
    let config =
        Config::parse(text, format, Path::new("test-config")).expect("the configuration is valid");
    let agent = Agent::build(&config).expect("the agent builds");
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(agent.serve(listener, None));
    RunningAgent { url, task }
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap()
}

/// GET: status and body, or `None` when there was no answer.
pub async fn get(client: &reqwest::Client, url: &str) -> Option<(u16, String)> {
    let response = client.get(url).send().await.ok()?;
    let status = response.status().as_u16();
    Some((status, response.text().await.unwrap_or_default()))
}

pub async fn post(client: &reqwest::Client, url: &str) -> u16 {
    client
        .post(url)
        .send()
        .await
        .map(|response| response.status().as_u16())
        .unwrap_or(0)
}

/// Polls `probe` every 100 ms until it yields a value or `limit` passes.
pub async fn eventually<T, F, Fut>(limit: Duration, mut probe: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = probe().await {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The value of a series in a Prometheus text exposition (the first sample).
pub fn series(exposition: &str, name: &str) -> Option<f64> {
    exposition.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?;
        let value = rest.strip_prefix(' ').or_else(|| {
            rest.strip_prefix('{')
                .and_then(|labels| labels.split_once("} ").map(|(_, value)| value))
        })?;
        value.trim().parse().ok()
    })
}

/// A TCP proxy in front of PostgreSQL whose path can be cut: while cut, open connections are
/// closed and new ones are closed as soon as they are accepted. While black-holed, nothing
/// passes either way and nothing is closed: every query in flight hangs, as behind a dead
/// router, until the path is restored.
pub struct Proxy {
    pub port: u16,
    cut: Arc<AtomicBool>,
    hole: Arc<AtomicBool>,
    generation: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

/// Copies `from` to `to`, holding what it read while the path is black-holed.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    hole: Arc<AtomicBool>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        let read = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(read) => read,
        };
        while hole.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if to.write_all(&buffer[..read]).await.is_err() {
            return;
        }
    }
}

impl Proxy {
    pub async fn start(upstream: &'static str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(AtomicBool::new(false));
        let hole = Arc::new(AtomicBool::new(false));
        let generation = Arc::new(AtomicU64::new(0));
        let task = tokio::spawn({
            let cut = cut.clone();
            let hole = hole.clone();
            let generation = generation.clone();
            async move {
                loop {
                    let Ok((inbound, _)) = listener.accept().await else {
                        continue;
                    };
                    if cut.load(Ordering::SeqCst) {
                        drop(inbound);
                        continue;
                    }
                    let born = generation.load(Ordering::SeqCst);
                    let generation = generation.clone();
                    let hole = hole.clone();
                    tokio::spawn(async move {
                        let Ok(outbound) = TcpStream::connect(upstream).await else {
                            return;
                        };
                        let (inbound_read, inbound_write) = inbound.into_split();
                        let (outbound_read, outbound_write) = outbound.into_split();
                        let copy = async {
                            tokio::select! {
                                _ = pump(inbound_read, outbound_write, hole.clone()) => {}
                                _ = pump(outbound_read, inbound_write, hole.clone()) => {}
                            }
                        };
                        let severed = async {
                            while generation.load(Ordering::SeqCst) == born {
                                tokio::time::sleep(Duration::from_millis(50)).await;
                            }
                        };
                        tokio::select! {
                            _ = copy => {}
                            _ = severed => {}
                        }
                    });
                }
            }
        });
        Proxy {
            port,
            cut,
            hole,
            generation,
            task,
        }
    }

    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Nothing passes, nothing is closed: every exchange in flight or started hangs.
    pub fn black_hole(&self) {
        self.hole.store(true, Ordering::SeqCst);
    }

    pub fn restore(&self) {
        self.cut.store(false, Ordering::SeqCst);
        self.hole.store(false, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}
