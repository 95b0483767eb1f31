//! `probity agent` under abuse, run as a binary at a low descriptor limit (256, through
//! `prlimit`) on its one listener (probes, gRPC health, `/metrics`; by default on `0.0.0.0`):
//! idle gRPC `Watch` streams from a real gRPC client, bodies that never finish, an idle flood,
//! and headers dribbled a byte at a time each leave `/livez` answering every kubelet-like probe
//! (a new connection, a 1 s timeout); a second SIGTERM ends the drain at once. Each test prints
//! the worst `/livez` answer time it saw.
//!
//! Every probe must be answered. The one cause excused is the machine's: each probe is sent
//! together with one to a reference server (a thread of this test answering a fixed `200`), and
//! a probe that went unanswered while the reference did not answer within the same second
//! either is counted apart — the machine stalled every process, not only the one tested.

mod support_agent;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support_agent::{Process, probity, repository, require, temp_dir, wait_for};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The descriptor limit the agent runs under.
const DESCRIPTORS: u32 = 256;

/// The agent under test, with its log in a file.
struct Agent {
    process: Process,
    log: PathBuf,
    /// Held open: the agent's readiness check connects to it.
    _peer: std::net::TcpListener,
}

impl Agent {
    /// `probity agent` at [`DESCRIPTORS`] open files, with one TCP readiness check on a
    /// listener this test holds, and a drain of `drain_delay`.
    fn start(name: &str, drain_delay: &str) -> Agent {
        let dir = temp_dir(name);
        let peer = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let config = dir.join("agent.toml");
        std::fs::write(
            &config,
            format!(
                "service = \"limits\"\n\n[shutdown]\ndrain_delay = \"{drain_delay}\"\n\
                 in_flight_deadline = \"2s\"\n\n[readiness.peer]\n\
                 tcp = {{ target = \"{}\" }}\ninterval = \"1s\"\ntimeout = \"500ms\"\n",
                peer.local_addr().unwrap()
            ),
        )
        .unwrap();
        let log = dir.join("agent.log");
        let mut child = Command::new("prlimit")
            .arg(format!("--nofile={DESCRIPTORS}:{DESCRIPTORS}"))
            .arg("--")
            .arg(probity().get_program())
            .args(["agent", "--config"])
            .arg(&config)
            .args(["--listen", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("prlimit runs probity agent");
        let port = port_from_first_line(&mut child);
        let agent = Agent {
            process: Process { child, port },
            log,
            _peer: peer,
        };
        assert!(
            wait_for(&agent.url("/readyz"), 200, Duration::from_secs(30)),
            "the agent never became ready:\n{}",
            agent.log()
        );
        agent
    }

    /// [`Agent::start`] from an async test (its waits block).
    async fn started(name: &'static str, drain_delay: &'static str) -> Agent {
        tokio::task::spawn_blocking(move || Agent::start(name, drain_delay))
            .await
            .expect("the agent started")
    }

    fn address(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.process.port))
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.process.origin())
    }

    fn pid(&self) -> u32 {
        self.process.child.id()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

fn port_from_first_line(child: &mut std::process::Child) -> u16 {
    use std::io::BufRead;
    let stdout = child.stdout.take().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .unwrap();
    line.trim()
        .rsplit(':')
        .next()
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"))
}

/// One probe: the status answered (0: none), how long it took, and whether the reference
/// server sent at the same moment answered within the probe's timeout.
#[derive(Debug, Clone, Copy)]
struct Probe {
    status: u16,
    took: Duration,
    reference_answered: bool,
}

/// A `GET path` on a new connection, answered within a second: the status, or 0.
async fn kubelet_get(address: SocketAddr, path: &str) -> u16 {
    let attempt = async {
        let mut stream = TcpStream::connect(address).await.ok()?;
        let request = format!("GET {path} HTTP/1.1\r\nhost: probe\r\nconnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.ok()?;
        std::str::from_utf8(raw.get(9..12)?).ok()?.parse().ok()
    };
    tokio::time::timeout(Duration::from_secs(1), attempt)
        .await
        .ok()
        .flatten()
        .unwrap_or(0)
}

/// A server on a thread of its own that answers every connection `200` at once: what any
/// process on this machine could do at that moment.
fn reference_server() -> SocketAddr {
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

/// Probes `path` like a kubelet every 200 ms for `duration`, on a thread and runtime of its
/// own, each time with the reference server too.
async fn probe_times(address: SocketAddr, path: &str, duration: Duration) -> Vec<Probe> {
    let path = path.to_owned();
    let reference = reference_server();
    let prober = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("prober runtime");
        runtime.block_on(async move {
            let until = Instant::now() + duration;
            let mut seen = Vec::new();
            while Instant::now() < until {
                let started = Instant::now();
                let (status, control) =
                    tokio::join!(kubelet_get(address, &path), kubelet_get(reference, "/"));
                seen.push(Probe {
                    status,
                    took: started.elapsed(),
                    reference_answered: control == 200,
                });
                tokio::time::sleep(Duration::from_millis(200)).await;
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
struct Answered {
    slowest: Duration,
    unanswered: usize,
    /// Unanswered while the reference server was not answering either.
    machine_stalled: usize,
    probes: usize,
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

/// Asserts every probe was answered `200`, but for those the machine left unanswered (the
/// reference server did not answer either); returns the figures.
fn answered_all(what: &str, seen: &[Probe], log: &str) -> Answered {
    // Probes are sent one after another for a fixed time: on a loaded machine each can take
    // half a second, so fewer go out — enough to judge is ten.
    assert!(
        seen.len() >= 10,
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
         stalled: {seen:?}\n{log}",
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

fn open_descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |entries| entries.count())
}

/// The most descriptors `pid` held, sampled every 100 ms until `until`.
fn watch_descriptors(pid: u32, until: Instant) -> tokio::task::JoinHandle<usize> {
    tokio::spawn(async move {
        let mut most = 0;
        while Instant::now() < until {
            most = most.max(open_descriptors(pid));
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        most
    })
}

/// A Python with `grpcio-health-checking` (scripts/setup.sh installs one in target/venv).
fn python_with_grpc_health() -> Option<String> {
    let mut candidates = Vec::new();
    if let Ok(python) = std::env::var("PROBITY_PYTHON") {
        candidates.push(python);
    }
    if let Ok(venv) = std::env::var("PROBITY_VENV") {
        candidates.push(format!("{venv}/bin/python"));
    }
    candidates.push(
        repository()
            .join("target/venv/bin/python")
            .display()
            .to_string(),
    );
    candidates.push("python3".to_owned());
    let found = candidates.into_iter().find(|python| {
        Command::new(python)
            .args(["-c", "import grpc_health.v1.health_pb2_grpc"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    });
    require(
        found.is_some(),
        "no Python with grpcio-health-checking: run scripts/setup.sh",
    )
    .then_some(found)
    .flatten()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_watch_streams_never_take_the_agents_probes_room() {
    let Some(python) = python_with_grpc_health() else {
        return;
    };
    let agent = Agent::started("limits-watch", "1s").await;
    // More streams than the whole descriptor limit, each on its own connection, from the gRPC
    // client checkout's test uses.
    let script = repository().join("examples/checkout/tests/watch_flood.py");
    let flood = Command::new(&python)
        .arg(&script)
        .args([&agent.address().to_string(), "300", "14"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the gRPC client");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let until = Instant::now() + Duration::from_secs(8);
    let most = watch_descriptors(agent.pid(), until);
    let (livez, readyz, metrics) = tokio::join!(
        probe_times(agent.address(), "/livez", Duration::from_secs(8)),
        probe_times(agent.address(), "/readyz", Duration::from_secs(8)),
        probe_times(agent.address(), "/metrics", Duration::from_secs(8)),
    );
    let most = most.await.unwrap();
    let output = tokio::task::spawn_blocking(move || flood.wait_with_output())
        .await
        .unwrap()
        .expect("the gRPC client ran");
    let counts = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let log = agent.log();
    let live = answered_all("/livez", &livez, &log);
    let ready = answered_all("/readyz", &readyz, &log);
    // `/metrics` is no probe: it competes with the flood for a connection, and is answered
    // (200, or 503 when none is to be had), never left hanging.
    let scraped = metrics.iter().filter(|probe| probe.status == 200).count();
    eprintln!(
        "observed: agent, 300 Watch clients at {DESCRIPTORS} descriptors ({counts}): at most \
         {most} open; /livez {live}; /readyz {ready}; /metrics {scraped} of {} scraped",
        metrics.len()
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        most < DESCRIPTORS as usize,
        "the descriptors ran out: {most}"
    );
    assert!(
        metrics
            .iter()
            .all(|probe| matches!(probe.status, 200 | 503) || !probe.reference_answered),
        "{metrics:?}\n{log}"
    );
    // Streams were served up to their budget, and past it refused, not left hanging.
    assert!(counts.contains("\"served\""), "{counts}");
    assert!(!counts.contains("\"refused\": 0"), "{counts}");
    assert!(log.contains("long-lived stream budget is full"), "{log}");
    // Once the flood has gone, everything is served again.
    assert!(wait_for(
        &agent.url("/metrics"),
        200,
        Duration::from_secs(10)
    ));
}

/// A client that announces a 100-byte body and sends one byte of it; returns when the server
/// closes the connection, with the status it answered (0: none) and after how long.
async fn slow_body(address: SocketAddr, path: &'static str) -> (u16, Duration) {
    let started = Instant::now();
    let Ok(mut stream) = TcpStream::connect(address).await else {
        return (0, started.elapsed());
    };
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: agent\r\ncontent-type: application/json\r\n\
         content-length: 100\r\n\r\n{{"
    );
    if stream.write_all(head.as_bytes()).await.is_err() {
        return (0, started.elapsed());
    }
    let mut raw = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(60), stream.read_to_end(&mut raw)).await;
    let status = std::str::from_utf8(raw.get(9..12).unwrap_or_default())
        .ok()
        .and_then(|status| status.parse().ok())
        .unwrap_or(0);
    (status, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_that_never_finish_are_answered_and_let_go() {
    let agent = Agent::started("limits-bodies", "1s").await;
    // Three hundred at once, more than the whole limit, on every path the agent serves.
    let paths = [
        "/metrics",
        "/contract",
        "/livez",
        "/grpc.health.v1.Health/Check",
    ];
    let clients: Vec<_> = (0..300)
        .map(|i| tokio::spawn(slow_body(agent.address(), paths[i % paths.len()])))
        .collect();
    let livez = probe_times(agent.address(), "/livez", Duration::from_secs(6)).await;
    let mut cut = Vec::new();
    for client in clients {
        cut.push(client.await.unwrap());
    }
    let slowest = cut
        .iter()
        .map(|(_, after)| *after)
        .max()
        .unwrap_or_default();
    let log = agent.log();
    let live = answered_all("/livez", &livez, &log);
    eprintln!(
        "observed: agent, 300 one-byte bodies at {DESCRIPTORS} descriptors: all let go within \
         {slowest:?} (statuses {:?}); /livez {live}",
        cut.iter()
            .map(|(status, _)| *status)
            .collect::<std::collections::BTreeSet<_>>(),
    );
    // Each is answered (the agent takes no body, so at once) or let go at the body or
    // admission timeout, never held for as long as it likes.
    assert!(slowest < Duration::from_secs(15), "{slowest:?}\n{log}");
}

/// A client that opens a connection, sends nothing, and opens another a second after the
/// server closes it, until `until`.
async fn idle_client(address: SocketAddr, until: Instant) {
    while Instant::now() < until {
        let Ok(mut stream) = TcpStream::connect(address).await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let mut buffer = [0u8; 256];
        let left = until.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.read(&mut buffer)).await {
            Err(_) => return,
            Ok(_) => tokio::time::sleep(Duration::from_secs(1)).await,
        }
    }
}

/// A client that sends a request head one byte a second, and starts again on a new connection
/// a second after the server closes it, until `until`.
async fn dribbling_client(address: SocketAddr, path: &'static str, until: Instant) {
    let head = format!(
        "GET {path} HTTP/1.1\r\nhost: agent\r\nx-padding: {}\r\n\r\n",
        "x".repeat(64)
    );
    while Instant::now() < until {
        let Ok(mut stream) = TcpStream::connect(address).await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        for byte in head.bytes() {
            if Instant::now() >= until || stream.write_all(&[byte]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_flood_never_exhausts_the_agents_descriptors() {
    let agent = Agent::started("limits-idle", "1s").await;
    let until = Instant::now() + Duration::from_secs(12);
    let clients: Vec<_> = (0..600)
        .map(|_| tokio::spawn(idle_client(agent.address(), until)))
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let most = watch_descriptors(agent.pid(), until);
    let livez = probe_times(agent.address(), "/livez", Duration::from_secs(8)).await;
    for client in clients {
        client.await.unwrap();
    }
    let most = most.await.unwrap();
    let log = agent.log();
    let live = answered_all("/livez", &livez, &log);
    eprintln!(
        "observed: agent, 600 idle clients at {DESCRIPTORS} descriptors: at most {most} open, \
         /livez {live}"
    );
    assert!(
        most < DESCRIPTORS as usize,
        "the descriptors ran out: {most}"
    );
    assert!(!log.contains("Too many open files"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_dribbled_a_byte_a_second_never_keep_a_probe_out() {
    let agent = Agent::started("limits-headers", "1s").await;
    let until = Instant::now() + Duration::from_secs(12);
    // Half of them dribble a probe's own request, which must not earn them the probes' room.
    let clients: Vec<_> = (0..600)
        .map(|i| {
            let path = if i % 2 == 0 { "/livez" } else { "/metrics" };
            tokio::spawn(dribbling_client(agent.address(), path, until))
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let most = watch_descriptors(agent.pid(), until);
    let livez = probe_times(agent.address(), "/livez", Duration::from_secs(8)).await;
    for client in clients {
        client.await.unwrap();
    }
    let most = most.await.unwrap();
    let log = agent.log();
    let live = answered_all("/livez", &livez, &log);
    eprintln!(
        "observed: agent, 600 clients dribbling headers at {DESCRIPTORS} descriptors: at most \
         {most} open, /livez {live}"
    );
    assert!(
        most < DESCRIPTORS as usize,
        "the descriptors ran out: {most}"
    );
}

#[test]
fn a_second_sigterm_ends_the_agents_drain_at_once() {
    let mut agent = Agent::start("limits-signal", "30s");
    let pid = agent.pid().to_string();
    let kill = |pid: &str| {
        Command::new("kill")
            .args(["-TERM", pid])
            .status()
            .expect("kill runs")
    };
    // `prlimit` execs the agent: the pid is the agent's.
    assert!(kill(&pid).success());
    assert!(
        wait_for(&agent.url("/readyz"), 503, Duration::from_secs(5)),
        "{}",
        agent.log()
    );
    let second = Instant::now();
    assert!(kill(&pid).success());
    let status = agent
        .process
        .wait_for_exit(Duration::from_secs(10))
        .expect("the agent exits within 10 s of the second SIGTERM, not after its 30 s drain");
    let took = second.elapsed();
    eprintln!("observed: agent exited {took:?} after a second SIGTERM, {status}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(status.code(), Some(143), "{status}\n{}", agent.log());
    assert!(agent.log().contains("second signal"), "{}", agent.log());
}
