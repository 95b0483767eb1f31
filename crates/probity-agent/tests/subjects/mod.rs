//! Open-source services nobody here wrote, as `scripts/subjects.sh` installs them, and the
//! faults injected from outside them: a TCP forwarder in front of PostgreSQL that can refuse or
//! black-hole the path, a table lock held by `psql`, `SIGSTOP` of the whole process group, and
//! load at many times the pool. A sampler records what the service's own health endpoint and
//! the agent said, every 500 ms, so a test can report both side by side.
//!
//! A missing install fails under `CI=true` and skips elsewhere, as the other prerequisites do.

#![allow(dead_code, unreachable_pub)]

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::support::require;

/// Where `scripts/subjects.sh` installs the services.
pub fn subjects() -> PathBuf {
    std::env::var_os("PROBITY_SUBJECTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/probity-subjects"))
}

/// An installed service's directory, when its install finished.
pub fn installed(name: &str) -> Option<PathBuf> {
    let dir = subjects().join(name);
    require(
        dir.join(".installed").is_file(),
        &format!("{} is not installed", dir.display()),
    )
    .then_some(dir)
}

/// A fresh database for one test, so tests of one service never share tables.
pub fn create_database(prefix: &str) -> String {
    let name = format!("{prefix}_{}", std::process::id());
    psql("postgres", &format!("drop database if exists {name}"));
    psql("postgres", &format!("create database {name}"));
    name
}

/// Runs one statement with `psql` against the local PostgreSQL.
pub fn psql(database: &str, statement: &str) -> String {
    let output = Command::new("psql")
        .args([
            "-h",
            "127.0.0.1",
            "-U",
            "postgres",
            "-d",
            database,
            "-tAc",
            statement,
        ])
        .output()
        .expect("psql runs");
    assert!(
        output.status.success(),
        "psql {statement:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// A free loopback port (bound, then released for the service to take).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free port")
}

/// A service's process tree, in its own process group; killed when dropped.
pub struct Service {
    child: Child,
    pub name: &'static str,
    pub port: u16,
    pub log: PathBuf,
}

impl Service {
    /// Starts `command` in a new process group, its output in a log file.
    pub fn spawn(name: &'static str, port: u16, mut command: Command) -> Service {
        let log = std::env::temp_dir().join(format!("probity-{name}-{}.log", std::process::id()));
        let file = std::fs::File::create(&log).expect("the log file");
        let child = command
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .process_group(0)
            .spawn()
            .unwrap_or_else(|error| panic!("{name} starts: {error}"));
        Service {
            child,
            name,
            port,
            log,
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The last lines of the service's log, for a failure message.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    fn signal(&self, signal: rustix::process::Signal) {
        let group = rustix::process::Pid::from_child(&self.child);
        let _ = rustix::process::kill_process_group(group, signal);
    }

    /// Freezes every process of the service (`SIGSTOP` to its process group).
    pub fn stop(&self) {
        self.signal(rustix::process::Signal::STOP);
    }

    /// Thaws it (`SIGCONT`).
    pub fn resume(&self) {
        self.signal(rustix::process::Signal::CONT);
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.signal(rustix::process::Signal::KILL);
        let _ = self.child.wait();
    }
}

/// What the forwarder does with the path to the database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// Bytes flow both ways.
    Open,
    /// The listener is closed (new connections refused) and open connections are reset.
    Refused,
    /// Connections are accepted and held; no byte moves either way until the path opens.
    BlackHoled,
}

/// A TCP forwarder from a loopback port to PostgreSQL whose path can be refused or
/// black-holed, as a network between a pod and its database can be.
pub struct Forwarder {
    pub address: SocketAddr,
    path: watch::Sender<Link>,
    generation: Arc<AtomicU64>,
    accept: Mutex<Option<tokio::task::JoinHandle<()>>>,
    upstream: SocketAddr,
}

impl Forwarder {
    pub async fn start(upstream: &str) -> Forwarder {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (path, _) = watch::channel(Link::Open);
        let forwarder = Forwarder {
            address: listener.local_addr().unwrap(),
            path,
            generation: Arc::default(),
            accept: Mutex::new(None),
            upstream: upstream.parse().unwrap(),
        };
        forwarder.serve(listener);
        forwarder
    }

    pub fn host_port(&self) -> String {
        self.address.to_string()
    }

    fn serve(&self, listener: TcpListener) {
        let upstream = self.upstream;
        let path = self.path.subscribe();
        let generation = self.generation.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let path = path.clone();
                let born = generation.load(Ordering::SeqCst);
                let generation = generation.clone();
                tokio::spawn(async move {
                    let reset = async {
                        while generation.load(Ordering::SeqCst) == born {
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                    };
                    tokio::select! {
                        () = pipe(client, upstream, path) => {}
                        () = reset => {}
                    }
                });
            }
        });
        *self.accept.lock().unwrap() = Some(task);
    }

    /// Sets the path. Refusing closes the listener and resets every open connection; opening
    /// listens again on the same port.
    pub async fn set(&self, path: Link) {
        let before = *self.path.borrow();
        if before == path {
            return;
        }
        if path == Link::Refused {
            if let Some(task) = self.accept.lock().unwrap().take() {
                task.abort();
            }
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
        if before == Link::Refused {
            let socket = TcpSocket::new_v4().unwrap();
            socket.set_reuseaddr(true).unwrap();
            socket.bind(self.address).unwrap();
            self.serve(socket.listen(1024).unwrap());
        }
        self.path.send_replace(path);
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        if let Some(task) = self.accept.lock().unwrap().take() {
            task.abort();
        }
        self.generation.fetch_add(1, Ordering::SeqCst);
    }
}

/// Copies both ways while the path is open; holds everything while it is black-holed.
async fn pipe(mut client: TcpStream, upstream: SocketAddr, mut path: watch::Receiver<Link>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let open = |path: &Link| *path == Link::Open;
    if path.wait_for(open).await.is_err() {
        return;
    }
    let Ok(mut server) = TcpStream::connect(upstream).await else {
        return;
    };
    let (mut client_read, mut client_write) = client.split();
    let (mut server_read, mut server_write) = server.split();
    let mut up = [0u8; 16 * 1024];
    let mut down = [0u8; 16 * 1024];
    loop {
        // Wait for the path to be open before moving each chunk: a black hole holds the bytes.
        if path.wait_for(open).await.is_err() {
            return;
        }
        tokio::select! {
            read = client_read.read(&mut up) => {
                let Ok(n @ 1..) = read else { return };
                if path.wait_for(open).await.is_err() || server_write.write_all(&up[..n]).await.is_err() {
                    return;
                }
            }
            read = server_read.read(&mut down) => {
                let Ok(n @ 1..) = read else { return };
                if path.wait_for(open).await.is_err() || client_write.write_all(&down[..n]).await.is_err() {
                    return;
                }
            }
            _ = path.changed() => {}
        }
    }
}

/// A table lock held by a `psql` session until released or dropped.
pub struct TableLock {
    psql: Child,
    stdin: Option<ChildStdin>,
}

impl TableLock {
    /// Takes `ACCESS EXCLUSIVE` on `table` in `database`: every query on it waits.
    pub fn take(database: &str, table: &str) -> TableLock {
        use std::io::Write;
        let mut psql = Command::new("psql")
            .args(["-h", "127.0.0.1", "-U", "postgres", "-d", database, "-q"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("psql runs");
        let mut stdin = psql.stdin.take().unwrap();
        writeln!(stdin, "begin; lock table {table} in access exclusive mode;").unwrap();
        stdin.flush().unwrap();
        TableLock {
            psql,
            stdin: Some(stdin),
        }
    }

    /// Whether PostgreSQL shows the lock granted.
    pub fn held(database: &str, table: &str) -> bool {
        psql(
            database,
            &format!(
                "select count(*) from pg_locks l join pg_class c on c.oid = l.relation \
                 where c.relname = '{}' and l.mode = 'AccessExclusiveLock' and l.granted",
                table.trim_matches('"')
            ),
        ) != "0"
    }
}

impl Drop for TableLock {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.psql.kill();
        let _ = self.psql.wait();
    }
}

/// One request of the load's mix.
#[derive(Clone)]
pub struct Request {
    pub method: reqwest::Method,
    pub path: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: Option<String>,
}

impl Request {
    pub fn get(path: &str) -> Request {
        Request {
            method: reqwest::Method::GET,
            path: path.to_owned(),
            headers: Vec::new(),
            body: None,
        }
    }

    pub fn post(path: &str, body: &str) -> Request {
        Request {
            method: reqwest::Method::POST,
            path: path.to_owned(),
            headers: vec![("content-type", "application/json".to_owned())],
            body: Some(body.to_owned()),
        }
    }

    pub fn header(mut self, name: &'static str, value: &str) -> Request {
        self.headers.push((name, value.to_owned()));
        self
    }
}

/// Outcomes of the load's requests.
#[derive(Clone, Copy, Debug, Default)]
pub struct Outcomes {
    pub ok: u64,
    pub server_errors: u64,
    pub other_status: u64,
    pub timeouts: u64,
    pub errors: u64,
}

impl Outcomes {
    pub fn total(&self) -> u64 {
        self.ok + self.server_errors + self.other_status + self.timeouts + self.errors
    }

    pub fn failed(&self) -> u64 {
        self.total() - self.ok
    }
}

/// Requests in a loop from `concurrency` tasks, each bounded by `timeout`, for `duration`.
pub async fn load(
    base: &str,
    mix: &[Request],
    concurrency: usize,
    timeout: Duration,
    duration: Duration,
) -> Outcomes {
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(timeout)
        .pool_max_idle_per_host(concurrency)
        .build()
        .unwrap();
    let totals = Arc::new(Mutex::new(Outcomes::default()));
    let until = Instant::now() + duration;
    let mut tasks = Vec::new();
    for worker in 0..concurrency {
        let http = http.clone();
        let mix = mix.to_vec();
        let base = base.to_owned();
        let totals = totals.clone();
        tasks.push(tokio::spawn(async move {
            let mut outcomes = Outcomes::default();
            let mut turn = worker;
            while Instant::now() < until {
                let request = &mix[turn % mix.len()];
                turn += 1;
                let mut builder =
                    http.request(request.method.clone(), format!("{base}{}", request.path));
                for (name, value) in &request.headers {
                    builder = builder.header(*name, value);
                }
                if let Some(body) = &request.body {
                    builder = builder
                        .body(body.replace("{n}", &format!("{worker}-{turn}-{}", fastrand_u64())));
                }
                match builder.send().await {
                    Ok(response) => {
                        let status = response.status();
                        // The body is part of the answer: a reset mid-body is a failure.
                        let complete = response.bytes().await.is_ok();
                        if !complete {
                            outcomes.errors += 1;
                        } else if status.is_success() {
                            outcomes.ok += 1;
                        } else if status.is_server_error() {
                            outcomes.server_errors += 1;
                        } else {
                            outcomes.other_status += 1;
                        }
                    }
                    Err(error) if error.is_timeout() => outcomes.timeouts += 1,
                    Err(_) => {
                        outcomes.errors += 1;
                        // A refused connection answers at once: do not spin.
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
            let mut totals = totals.lock().unwrap();
            totals.ok += outcomes.ok;
            totals.server_errors += outcomes.server_errors;
            totals.other_status += outcomes.other_status;
            totals.timeouts += outcomes.timeouts;
            totals.errors += outcomes.errors;
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
    *totals.lock().unwrap()
}

fn fastrand_u64() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|since| since.subsec_nanos() as u64)
        .unwrap_or_default();
    nanos ^ (COUNTER.fetch_add(1, Ordering::Relaxed) << 32)
}

/// One look, every 500 ms, at the service's own health endpoint and the agent's probes.
#[derive(Clone, Debug)]
pub struct Sample {
    pub at: Duration,
    /// The service's own health endpoint: its status, or `None` for no answer within 2 s.
    pub service: Option<u16>,
    pub livez: Option<u16>,
    pub readyz: Option<u16>,
    /// The agent's verbose readiness body when it failed.
    pub readyz_body: String,
}

/// Samples until stopped; `samples()` returns what it saw.
pub struct Sampler {
    samples: Arc<Mutex<Vec<Sample>>>,
    task: tokio::task::JoinHandle<()>,
    started: Instant,
}

impl Sampler {
    pub fn start(service_health: String, agent: String) -> Sampler {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let started = Instant::now();
        let task = tokio::spawn({
            let samples = samples.clone();
            async move {
                let http = reqwest::Client::builder()
                    .no_proxy()
                    .timeout(Duration::from_secs(2))
                    .build()
                    .unwrap();
                let status = |url: String| {
                    let http = http.clone();
                    async move {
                        let response = http.get(url).send().await.ok()?;
                        let status = response.status().as_u16();
                        Some((status, response.text().await.unwrap_or_default()))
                    }
                };
                let mut tick = tokio::time::interval(Duration::from_millis(500));
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tick.tick().await;
                    let at = started.elapsed();
                    let (service, livez, readyz) = tokio::join!(
                        status(service_health.clone()),
                        status(format!("{agent}/livez")),
                        status(format!("{agent}/readyz?verbose")),
                    );
                    let readyz_body = match &readyz {
                        Some((200, _)) | None => String::new(),
                        Some((_, body)) => body.clone(),
                    };
                    samples.lock().unwrap().push(Sample {
                        at,
                        service: service.map(|(status, _)| status),
                        livez: livez.map(|(status, _)| status),
                        readyz: readyz.map(|(status, _)| status),
                        readyz_body,
                    });
                }
            }
        });
        Sampler {
            samples,
            task,
            started,
        }
    }

    /// Time since the sampler started, the clock of every sample.
    pub fn now(&self) -> Duration {
        self.started.elapsed()
    }

    /// The samples taken in `[from, to)`.
    pub fn window(&self, from: Duration, to: Duration) -> Vec<Sample> {
        self.samples
            .lock()
            .unwrap()
            .iter()
            .filter(|sample| sample.at >= from && sample.at < to)
            .cloned()
            .collect()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What a window of samples says, as the tables report it.
#[derive(Debug, Default)]
pub struct Summary {
    pub samples: usize,
    /// The service's own health endpoint: samples failed (non-2xx or no answer).
    pub service_failed: usize,
    /// Samples without an answer at all from it.
    pub service_silent: usize,
    /// The longest run of failed samples of the service's health, in seconds.
    pub service_longest_failure: f64,
    /// The longest run of failed agent `/livez` samples, in seconds.
    pub livez_longest_failure: f64,
    pub livez_failed: usize,
    pub readyz_failed: usize,
    /// Seconds from the window's start to the agent's first failed readiness sample.
    pub readyz_first_failure: Option<f64>,
    /// Failing checks the agent named (`[-]NAME failed`), each once.
    pub failing_checks: Vec<String>,
}

fn longest_run(samples: &[Sample], failed: impl Fn(&Sample) -> bool) -> f64 {
    let mut longest = Duration::ZERO;
    let mut since: Option<Duration> = None;
    for (index, sample) in samples.iter().enumerate() {
        if failed(sample) {
            let start = *since.get_or_insert(sample.at);
            // A run lasts until the next good sample (or the last failed one).
            let end = samples
                .get(index + 1)
                .map(|next| next.at)
                .unwrap_or(sample.at);
            longest = longest.max(end - start);
        } else {
            since = None;
        }
    }
    longest.as_secs_f64()
}

pub fn summarize(samples: &[Sample], from: Duration) -> Summary {
    let bad = |status: Option<u16>| !matches!(status, Some(200..=299));
    let mut failing_checks: Vec<String> = Vec::new();
    for sample in samples {
        for line in sample.readyz_body.lines() {
            if let Some(name) = line
                .strip_prefix("[-]")
                .and_then(|rest| rest.split(' ').next())
                && !failing_checks.iter().any(|seen| seen == name)
            {
                failing_checks.push(name.to_owned());
            }
        }
    }
    Summary {
        samples: samples.len(),
        service_failed: samples.iter().filter(|s| bad(s.service)).count(),
        service_silent: samples.iter().filter(|s| s.service.is_none()).count(),
        service_longest_failure: longest_run(samples, |s| bad(s.service)),
        livez_longest_failure: longest_run(samples, |s| bad(s.livez)),
        livez_failed: samples.iter().filter(|s| bad(s.livez)).count(),
        readyz_failed: samples.iter().filter(|s| bad(s.readyz)).count(),
        readyz_first_failure: samples
            .iter()
            .find(|s| bad(s.readyz))
            .map(|s| (s.at - from).as_secs_f64()),
        failing_checks,
    }
}

/// One row of a service's table.
pub struct Row {
    pub fault: String,
    pub summary: Summary,
    pub requests: Outcomes,
    /// Seconds from the fault's end to the agent's readiness passing again.
    pub ready_again: Option<f64>,
}

impl Row {
    pub fn markdown(&self) -> String {
        let s = &self.summary;
        let mut row = String::new();
        let _ = write!(
            row,
            "| {} | {}/{} failed ({} silent), longest {:.1} s | /livez longest 503 {:.1} s ({}/{}) | /readyz {}/{} failed{}{} | {} ok, {} 5xx, {} other, {} timeouts, {} errors | {} |",
            self.fault,
            s.service_failed,
            s.samples,
            s.service_silent,
            s.service_longest_failure,
            s.livez_longest_failure,
            s.livez_failed,
            s.samples,
            s.readyz_failed,
            s.samples,
            s.readyz_first_failure
                .map(|at| format!(", first at {at:.1} s"))
                .unwrap_or_default(),
            if s.failing_checks.is_empty() {
                String::new()
            } else {
                format!(" ({})", s.failing_checks.join(", "))
            },
            self.requests.ok,
            self.requests.server_errors,
            self.requests.other_status,
            self.requests.timeouts,
            self.requests.errors,
            self.ready_again
                .map(|at| format!("{at:.1} s"))
                .unwrap_or_else(|| "—".to_owned()),
        );
        row
    }
}

pub const TABLE_HEAD: &str = "| fault | service's own health | agent liveness | agent readiness | requests | agent ready again after |\n|---|---|---|---|---|---|";

/// Waits for `url` to answer 2xx, up to `limit`.
pub async fn wait_healthy(url: &str, limit: Duration) -> bool {
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    crate::support::eventually(limit, || async {
        let response = http.get(url).send().await.ok()?;
        response.status().is_success().then_some(())
    })
    .await
    .is_some()
}

/// The directory of the repository's examples.
pub fn example_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/agent")
        .join(name)
}
