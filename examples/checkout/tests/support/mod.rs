//! Running the real `checkout` binary on loopback: free ports, captured output, polling until
//! a deadline, and a guard that kills the process on every exit path.

#![allow(dead_code, unreachable_pub)]

use sqlx::Connection;
use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A loopback address whose port was free a moment ago.
pub fn free_address() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local address")
}

/// A directory removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(label: &str) -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "checkout-e2e-{label}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path).expect("create a temporary directory");
        Self(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What a process wrote to one stream so far, and whether the stream has ended.
#[derive(Default)]
struct Stream {
    text: String,
    closed: bool,
}

/// Everything a process wrote to one stream so far; waiters are woken at every write.
#[derive(Clone, Default)]
pub struct Captured(Arc<(Mutex<Stream>, Condvar)>);

impl Captured {
    fn follow(mut stream: impl Read + Send + 'static) -> Self {
        let captured = Captured::default();
        let sink = captured.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            loop {
                let read = stream.read(&mut buffer);
                let (lock, changed) = &*sink.0;
                let mut state = lock.lock().unwrap();
                match read {
                    Ok(0) | Err(_) => {
                        state.closed = true;
                        changed.notify_all();
                        return;
                    }
                    Ok(n) => {
                        state.text.push_str(&String::from_utf8_lossy(&buffer[..n]));
                        changed.notify_all();
                    }
                }
            }
        });
        captured
    }

    pub fn text(&self) -> String {
        self.0.0.lock().unwrap().text.clone()
    }

    /// Waits until `done` holds for the text so far, the stream ends, or `deadline` passes;
    /// returns whether `done` held.
    pub fn wait_until(&self, deadline: Instant, mut done: impl FnMut(&str) -> bool) -> bool {
        let (lock, changed) = &*self.0;
        let mut state = lock.lock().unwrap();
        loop {
            if done(&state.text) {
                return true;
            }
            let now = Instant::now();
            if state.closed || now >= deadline {
                return false;
            }
            state = changed.wait_timeout(state, deadline - now).unwrap().0;
        }
    }

    /// Waits until the stream reached its end (the process exited and closed it), or
    /// `deadline`; returns whether it ended.
    fn wait_closed(&self, deadline: Instant) -> bool {
        self.wait_until(deadline, |_| false);
        self.0.0.lock().unwrap().closed
    }
}

/// Waits for `child` to exit, up to `timeout`; kills it (SIGKILL) and returns `None` if it
/// does not. The wait runs on a thread of its own, so no polling is involved.
pub fn wait_with_timeout(mut child: Child, timeout: Duration) -> Option<ExitStatus> {
    let pid = child.id();
    let (done, exited) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait());
    });
    match exited.recv_timeout(timeout) {
        Ok(status) => Some(status.expect("wait for the child")),
        Err(_) => {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            let _ = exited.recv();
            None
        }
    }
}

/// A running `checkout`; killed (SIGKILL) when dropped if still running.
pub struct Checkout {
    child: Child,
    pub listen: SocketAddr,
    pub admin: SocketAddr,
    pub stdout: Captured,
    pub stderr: Captured,
    _data: TempDir,
}

/// The binary under test.
pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_checkout")
}

/// Runs `checkout` with `args` to completion (for flags that exit at once).
pub fn run_to_exit(args: &[&str], timeout: Duration) -> (ExitStatus, String, String) {
    let mut child = Command::new(binary())
        .args(args)
        .env("CHECKOUT_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn checkout");
    let stdout = Captured::follow(child.stdout.take().unwrap());
    let stderr = Captured::follow(child.stderr.take().unwrap());
    let Some(status) = wait_with_timeout(child, timeout) else {
        panic!(
            "checkout {args:?} still running after {timeout:?}\n{}",
            stderr.text()
        );
    };
    // Let the reader threads drain the pipes to their end.
    let drained = Instant::now() + Duration::from_secs(5);
    stdout.wait_closed(drained);
    stderr.wait_closed(drained);
    (status, stdout.text(), stderr.text())
}

impl Checkout {
    /// Starts `checkout` on free loopback ports with its own data directory and `args`, and
    /// waits until it listens. Retries on the rare port collision.
    pub fn start(args: &[&str]) -> Checkout {
        Self::start_under(&[], args)
    }

    /// Like [`Checkout::start`], with at most `descriptors` open files (`prlimit`).
    pub fn start_with_descriptor_limit(descriptors: u32, args: &[&str]) -> Checkout {
        let limit = format!("--nofile={descriptors}:{descriptors}");
        Self::start_under(&["prlimit", &limit, "--"], args)
    }

    /// Starts `checkout` through `wrapper` (a command that execs the rest of its arguments).
    fn start_under(wrapper: &[&str], args: &[&str]) -> Checkout {
        for _ in 0..5 {
            let data = TempDir::new("data");
            let listen = free_address();
            let admin = free_address();
            let mut command = match wrapper.split_first() {
                Some((program, rest)) => {
                    let mut command = Command::new(program);
                    command.args(rest).arg(binary());
                    command
                }
                None => Command::new(binary()),
            };
            let mut child = command
                .arg("--listen")
                .arg(listen.to_string())
                .arg("--admin-listen")
                .arg(admin.to_string())
                .arg("--data-dir")
                .arg(data.path())
                .args(args)
                .env("CHECKOUT_LOG", "info,sqlx=warn")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn checkout");
            let stdout = Captured::follow(child.stdout.take().unwrap());
            let stderr = Captured::follow(child.stderr.take().unwrap());
            let checkout = Checkout {
                child,
                listen,
                admin,
                stdout,
                stderr,
                _data: data,
            };
            let deadline = Instant::now() + Duration::from_secs(20);
            if checkout
                .stderr
                .wait_until(deadline, |log| log.contains("checkout listening"))
            {
                return checkout;
            }
            // Its log ended (it exited) or the deadline passed.
            let log = checkout.stderr.text();
            if checkout.stderr.wait_closed(Instant::now()) && log.contains("already in use") {
                continue;
            }
            panic!("checkout did not start:\n{log}");
        }
        panic!("no free ports after 5 attempts");
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.listen)
    }

    pub fn admin_url(&self, path: &str) -> String {
        format!("http://{}{path}", self.admin)
    }

    /// Sends a signal by name (`TERM`, `INT`).
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.pid().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{name} failed");
    }

    /// Waits for the process to exit, up to `timeout`, without blocking the test's runtime
    /// (clients on it must keep answering, e.g. HTTP/2 pings during a graceful shutdown).
    pub async fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // Let the reader threads take in the last of its output.
                let (stdout, stderr) = (self.stdout.clone(), self.stderr.clone());
                let drained = Instant::now() + Duration::from_secs(5);
                tokio::task::spawn_blocking(move || {
                    stdout.wait_closed(drained);
                    stderr.wait_closed(drained);
                })
                .await
                .expect("drain the output");
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Everything the process printed so far, both streams.
    pub fn output(&self) -> String {
        format!("{}{}", self.stdout.text(), self.stderr.text())
    }
}

impl Drop for Checkout {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Serves `app` on a loopback port from a thread and runtime of its own, so it answers even
/// while a test blocks its own thread (as `Checkout::start` does while waiting).
pub fn serve_in_background(app: axum::Router) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("local address");
    listener.set_nonblocking(true).expect("non-blocking");
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
            let _ = axum::serve(listener, app).await;
        });
    });
    address
}

/// An HTTP client like a kubelet's: a new connection per request, a hard timeout.
pub fn client(timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(timeout)
        .pool_max_idle_per_host(0)
        .build()
        .expect("HTTP client")
}

/// One answer: status, selected headers and body.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }
}

pub async fn send(request: reqwest::RequestBuilder) -> Result<Answer, reqwest::Error> {
    let response = request.send().await?;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.text().await?;
    Ok(Answer {
        status,
        headers,
        body,
    })
}

pub async fn get(url: &str) -> Answer {
    send(client(Duration::from_secs(5)).get(url))
        .await
        .unwrap_or_else(|error| panic!("GET {url}: {error}"))
}

pub async fn get_accept(url: &str, accept: &str) -> Answer {
    send(
        client(Duration::from_secs(5))
            .get(url)
            .header("accept", accept),
    )
    .await
    .unwrap_or_else(|error| panic!("GET {url}: {error}"))
}

pub async fn post(url: &str, body: Option<&str>) -> Answer {
    let mut request = client(Duration::from_secs(10)).post(url);
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_owned());
    }
    send(request)
        .await
        .unwrap_or_else(|error| panic!("POST {url}: {error}"))
}

/// Polls `probe` every 20 ms until it returns `Some`, or panics after `timeout` naming `what`.
pub async fn poll_until<T, F, Fut>(timeout: Duration, what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until `/readyz` answers 200 (startup done, checks up). On timeout, the panic shows
/// the last answer of the admin listener's verbose `/readyz` and the service's log.
pub async fn wait_ready(checkout: &Checkout) {
    let url = checkout.url("/readyz");
    let timeout = Duration::from_secs(20);
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(answer) = send(client(Duration::from_secs(2)).get(&url)).await
            && answer.status == 200
        {
            return;
        }
        if Instant::now() >= deadline {
            let last =
                send(client(Duration::from_secs(2)).get(checkout.admin_url("/readyz?verbose")))
                    .await
                    .map(|answer| format!("{}\n{}", answer.status, answer.body))
                    .unwrap_or_else(|error| format!("no answer: {error}"));
            panic!(
                "timed out after {timeout:?} waiting for /readyz 200\n\
                 admin /readyz?verbose: {last}\n\
                 checkout's log:\n{}",
                checkout.stderr.text()
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether `CI=true`: then a missing service fails the test instead of skipping it.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| value == "true")
}

/// Skips (loudly) or, under CI, fails when `service` at `address` is unreachable.
pub fn require_service(service: &str, address: &str) -> bool {
    let reachable = address
        .parse::<SocketAddr>()
        .ok()
        .and_then(|address| {
            std::net::TcpStream::connect_timeout(&address, Duration::from_secs(2)).ok()
        })
        .is_some();
    if reachable {
        return true;
    }
    if in_ci() {
        panic!("{service} is unreachable at {address}: start it (scripts/setup.sh does)");
    }
    eprintln!("SKIPPED: {service} is unreachable at {address}; start it to run this test");
    false
}

/// The Python interpreter with `grpcio-health-checking`: `PROBITY_PYTHON`, else the venv
/// scripts/setup.sh makes (`PROBITY_VENV` or `target/venv`), else `python3`.
pub fn python_with_grpc_health() -> Option<String> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut candidates = Vec::new();
    if let Ok(python) = std::env::var("PROBITY_PYTHON") {
        candidates.push(python);
    }
    if let Ok(venv) = std::env::var("PROBITY_VENV") {
        candidates.push(format!("{venv}/bin/python"));
    }
    candidates.push(
        workspace
            .join("target/venv/bin/python")
            .display()
            .to_string(),
    );
    candidates.push("python3".to_owned());
    for python in candidates {
        let ok = Command::new(&python)
            .args(["-c", "import grpc_health.v1.health_pb2_grpc"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        if ok {
            return Some(python);
        }
    }
    let message = "no Python with grpcio-health-checking: run scripts/setup.sh, or \
                   `python3 -m pip install grpcio grpcio-health-checking`";
    if in_ci() {
        panic!("{message}");
    }
    eprintln!("SKIPPED: {message}");
    None
}

/// What a load run saw: answers by status code, and requests that got no answer.
#[derive(Debug, Clone, Default)]
pub struct LoadReport {
    pub by_status: std::collections::BTreeMap<u16, u64>,
    pub errors: u64,
}

impl LoadReport {
    pub fn total(&self) -> u64 {
        self.by_status.values().sum::<u64>() + self.errors
    }

    pub fn count(&self, status: u16) -> u64 {
        self.by_status.get(&status).copied().unwrap_or(0)
    }
}

/// Order traffic from `connections` keep-alive clients, each sending `POST /orders` as fast
/// as it is answered, until stopped or `limit` has passed (every load here is bounded).
pub struct Load {
    stop: Arc<std::sync::atomic::AtomicBool>,
    workers: Vec<tokio::task::JoinHandle<LoadReport>>,
}

impl Load {
    pub fn start(base: &str, connections: usize, limit: Duration) -> Load {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let until = Instant::now() + limit;
        let url = format!("{base}/orders");
        let workers = (0..connections)
            .map(|worker| {
                let (stop, url) = (stop.clone(), url.clone());
                tokio::spawn(async move {
                    let client = reqwest::Client::builder()
                        .timeout(Duration::from_secs(10))
                        .pool_max_idle_per_host(1)
                        .build()
                        .expect("HTTP client");
                    let body = format!(
                        r#"{{"customer":"load-{worker}","items":[{{"sku":"sku-{worker}","quantity":1,"price_cents":250}}]}}"#
                    );
                    let mut report = LoadReport::default();
                    while !stop.load(Ordering::Relaxed) && Instant::now() < until {
                        let sent = client
                            .post(&url)
                            .header("content-type", "application/json")
                            .body(body.clone())
                            .send()
                            .await;
                        match sent {
                            Ok(response) => {
                                let status = response.status().as_u16();
                                let _ = response.bytes().await;
                                *report.by_status.entry(status).or_default() += 1;
                            }
                            Err(_) => {
                                report.errors += 1;
                                tokio::time::sleep(Duration::from_millis(10)).await;
                            }
                        }
                    }
                    report
                })
            })
            .collect();
        Load { stop, workers }
    }

    /// Stops the workers and adds up what they saw.
    pub async fn stop(self) -> LoadReport {
        self.stop.store(true, Ordering::Relaxed);
        let mut total = LoadReport::default();
        for worker in self.workers {
            let report = worker.await.expect("load worker");
            for (status, count) in report.by_status {
                *total.by_status.entry(status).or_default() += count;
            }
            total.errors += report.errors;
        }
        total
    }
}

/// Polls `url` every `every` for `duration`, like a load balancer's health check; returns the
/// status codes seen (0 for no answer within a second). The poller runs on a thread and runtime
/// of its own, as a real prober is a process of its own: the test's load workers cannot delay
/// it.
pub async fn poll_statuses(url: &str, every: Duration, duration: Duration) -> Vec<u16> {
    let url = url.to_owned();
    let poller = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("poller runtime");
        runtime.block_on(async move {
            let until = Instant::now() + duration;
            let client = client(Duration::from_secs(1));
            let mut seen = Vec::new();
            while Instant::now() < until {
                let status = match client.get(&url).send().await {
                    Ok(response) => response.status().as_u16(),
                    Err(error) => {
                        eprintln!("poll of {url} got no answer: {error}");
                        0
                    }
                };
                seen.push(status);
                tokio::time::sleep(every).await;
            }
            seen
        })
    });
    tokio::task::spawn_blocking(move || poller.join().expect("poller thread"))
        .await
        .expect("join the poller")
}

/// A TCP forwarder to a real service (PostgreSQL, RabbitMQ) that can be cut: while cut, nothing listens on its port (a
/// connection is refused) and every forwarded connection is reset. It runs on a thread and
/// runtime of its own, so a test blocked starting checkout does not hold it.
pub struct Forwarder {
    pub address: SocketAddr,
    up: tokio::sync::watch::Sender<bool>,
}

impl Forwarder {
    pub fn start(upstream: &'static str) -> Forwarder {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the forwarder");
        let address = listener.local_addr().unwrap();
        listener.set_nonblocking(true).unwrap();
        let (up, mut watch) = tokio::sync::watch::channel(true);
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the forwarder");
            runtime.block_on(async move {
                let mut listener = Some(tokio::net::TcpListener::from_std(listener).unwrap());
                loop {
                    let Some(open) = &listener else {
                        // Cut: wait to be restored, then listen on the same port again.
                        if watch.wait_for(|up| *up).await.is_err() {
                            return;
                        }
                        listener = Some(
                            tokio::net::TcpListener::bind(address)
                                .await
                                .expect("listen on the forwarder's port again"),
                        );
                        continue;
                    };
                    let accepted = tokio::select! {
                        accepted = open.accept() => Some(accepted),
                        changed = watch.wait_for(|up| !*up) => {
                            if changed.is_err() {
                                return;
                            }
                            None
                        }
                    };
                    let Some(accepted) = accepted else {
                        listener = None;
                        continue;
                    };
                    let Ok((mut inbound, _)) = accepted else {
                        continue;
                    };
                    let mut cut = watch.clone();
                    tokio::spawn(async move {
                        let Ok(mut outbound) = tokio::net::TcpStream::connect(upstream).await
                        else {
                            return;
                        };
                        tokio::select! {
                            _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                            // Both sides dropped: the client's connection ends.
                            _ = cut.wait_for(|up| !*up) => {}
                        }
                    });
                }
            });
        });
        Forwarder { address, up }
    }

    pub fn cut(&self) {
        self.up.send_replace(false);
    }

    pub fn restore(&self) {
        self.up.send_replace(true);
    }
}

/// The PostgreSQL the tests use (trust authentication).
pub const POSTGRES: &str = "127.0.0.1:5432";
/// PostgreSQL's administrative URL, for creating and dropping test databases.
pub const ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// A database of its own for one test, dropped afterwards.
pub struct TestDatabase {
    name: String,
}

impl TestDatabase {
    pub async fn create(label: &str) -> TestDatabase {
        static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let name = format!(
            "checkout_e2e_{label}_{}_{}",
            std::process::id(),
            COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let mut connection = sqlx::PgConnection::connect(ADMIN_URL)
            .await
            .expect("connect to PostgreSQL as postgres");
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut connection)
            .await
            .expect("create the test database");
        TestDatabase { name }
    }

    pub fn url(&self) -> String {
        format!("postgres://postgres@{POSTGRES}/{}", self.name)
    }

    /// The database's URL through `address` (a forwarder in front of PostgreSQL).
    pub fn url_via(&self, address: SocketAddr) -> String {
        format!("postgres://postgres@{address}/{}", self.name)
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let name = self.name.clone();
        // Dropped from a plain thread: the test's runtime may be shutting down.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(async move {
                let mut connection = sqlx::PgConnection::connect(ADMIN_URL).await.ok()?;
                sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                    "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                )))
                .execute(&mut connection)
                .await
                .ok()
            })
        })
        .join();
    }
}

/// One probe: the status answered (0: none), how long it took, and whether the reference
/// server sent at the same moment answered within the probe's timeout.
#[derive(Debug, Clone)]
pub struct Probe {
    pub status: u16,
    pub took: Duration,
    pub reference_answered: bool,
    /// Why it went unanswered, as the client saw it.
    pub error: Option<String>,
}

/// A server on a thread of its own that answers every connection `200` at once: what any
/// process on this machine could do at that moment.
pub fn reference_server() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the reference");
    let address = listener.local_addr().expect("reference address");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
            let mut head = [0u8; 1024];
            let _ = std::io::Read::read(&mut stream, &mut head);
            let _ = std::io::Write::write_all(
                &mut stream,
                b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\nconnection: close\r\n\r\nok\n",
            );
        }
    });
    address
}

/// Probes `url` like a kubelet (a new connection each time, 1 s timeout) every `every` for
/// `duration`, on a thread and runtime of its own, each time with the reference server too.
pub async fn probe_times(url: &str, every: Duration, duration: Duration) -> Vec<Probe> {
    let url = url.to_owned();
    let reference = format!("http://{}/", reference_server());
    let prober = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("prober runtime");
        runtime.block_on(async move {
            let client = client(Duration::from_secs(1));
            let until = Instant::now() + duration;
            let mut seen = Vec::new();
            while Instant::now() < until {
                let started = Instant::now();
                let (probe, control) =
                    tokio::join!(client.get(&url).send(), client.get(&reference).send());
                let (status, error) = match probe {
                    Ok(response) => (response.status().as_u16(), None),
                    Err(error) => (0, Some(format!("{error:?}"))),
                };
                seen.push(Probe {
                    status,
                    took: started.elapsed(),
                    reference_answered: control.is_ok(),
                    error,
                });
                tokio::time::sleep(every).await;
            }
            seen
        })
    });
    tokio::task::spawn_blocking(move || prober.join().expect("prober thread"))
        .await
        .expect("join the prober")
}

/// What a series of probes showed.
#[derive(Debug)]
pub struct Answered {
    pub slowest: Duration,
    pub unanswered: usize,
    /// Unanswered while the reference server was not answering either.
    pub machine_stalled: usize,
    pub probes: usize,
}

impl std::fmt::Display for Answered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "slowest {:?}, {} of {} unanswered ({} while the machine stalled)",
            self.slowest, self.unanswered, self.probes, self.machine_stalled
        )
    }
}

/// Asserts every probe was answered `200`, but for those the machine left unanswered; returns
/// the figures.
///
/// Every probe must be answered. The one cause excused is the machine's: each probe is sent
/// together with one to a reference server (a thread of the test answering a fixed `200`), and
/// a probe that went unanswered while the reference did not answer within the same second
/// either is counted apart — the machine stalled every process, not only the one tested. Fewer
/// than a quarter may be so excused.
pub fn answered_all(what: &str, seen: &[Probe], log: &str) -> Answered {
    assert!(
        seen.len() >= 20,
        "{what}: only {} probes: {seen:?}",
        seen.len()
    );
    let unanswered: Vec<&Probe> = seen.iter().filter(|probe| probe.status != 200).collect();
    let machine_stalled = unanswered
        .iter()
        .filter(|probe| !probe.reference_answered)
        .count();
    assert!(
        unanswered.len() == machine_stalled && machine_stalled * 4 < seen.len(),
        "{what}: {} of {} probes unanswered, {machine_stalled} of them while the machine \
         stalled: {unanswered:?}\n{log}",
        unanswered.len(),
        seen.len()
    );
    let slowest = seen
        .iter()
        .filter(|probe| probe.status == 200)
        .map(|probe| probe.took)
        .max()
        .unwrap_or_default();
    Answered {
        slowest,
        unanswered: unanswered.len(),
        machine_stalled,
        probes: seen.len(),
    }
}
