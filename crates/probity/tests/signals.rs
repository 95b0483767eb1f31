//! `Health::shutdown_on_signals`, in a child process whose runtime is stalled: the first
//! SIGTERM still starts the shutdown and the second still ends the process at once, because
//! signals are counted off the runtime.

#![cfg(unix)]

use probity::Health;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const CHILD: &str = "PROBITY_SIGNALS_TEST_CHILD";

/// The child: a health whose drain would take a minute, signals watched, then a runtime that
/// does nothing but block for a minute. A thread of its own reports when shutdown starts.
fn child() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let health = runtime.block_on(async {
        let health = Health::builder()
            .service("stalled")
            .drain_delay(Duration::from_secs(60))
            .build()
            .unwrap();
        health.start().unwrap();
        health
    });
    // Inside the runtime's context, where a user calls it (it needs none on Unix).
    let entered = runtime.enter();
    health.shutdown_on_signals();
    drop(entered);
    let watched = health.clone();
    std::thread::spawn(move || {
        while !watched.is_shutting_down() {
            std::thread::sleep(Duration::from_millis(10));
        }
        println!("SHUTTING DOWN");
    });
    println!("STALLED");
    runtime.block_on(async {
        // A blocking call on the only worker: nothing on this runtime runs for a minute.
        std::thread::sleep(Duration::from_secs(60));
    });
    println!("RUNTIME CAME BACK");
}

fn kill(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
}

#[test]
fn a_second_sigterm_ends_a_stalled_process_at_once() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    let mut process = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_second_sigterm_ends_a_stalled_process_at_once",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (lines_tx, lines) = mpsc::channel();
    let stdout = process.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    let wait_for = |wanted: &str, limit: Duration| {
        let deadline = Instant::now() + limit;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match lines.recv_timeout(left) {
                Ok(line) if line.contains(wanted) => return true,
                Ok(_) => continue,
                Err(_) => return false,
            }
        }
        false
    };
    assert!(
        wait_for("STALLED", Duration::from_secs(30)),
        "the child never stalled"
    );
    // Let the runtime enter its blocking call.
    std::thread::sleep(Duration::from_millis(200));

    kill(process.id(), "-TERM");
    assert!(
        wait_for("SHUTTING DOWN", Duration::from_secs(10)),
        "the first SIGTERM did not start the shutdown while the runtime was stalled"
    );
    assert!(
        process.try_wait().unwrap().is_none(),
        "the first SIGTERM must not end the process"
    );

    let second = Instant::now();
    kill(process.id(), "-TERM");
    let deadline = second + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = process.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = process.kill();
            panic!("a second SIGTERM did not end the stalled process within 10 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = second.elapsed();
    eprintln!("observed: exited {took:?} after the second SIGTERM, {status}");
    assert_eq!(status.code(), Some(143), "{status}");
}
