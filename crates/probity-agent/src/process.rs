//! The kernel's view of the app's process, where the agent can see it (a pod with
//! `shareProcessNamespace: true`, or the same host in tests).
//!
//! The process is found by its listener: the socket listening on the app's port
//! (`/proc/net/tcp`, `/proc/net/tcp6`, shared by every container of the pod) and the process
//! holding it (`/proc/PID/fd`). What the agent reads of it:
//!
//! - its state (`/proc/PID/stat`): `T` (stopped, `SIGSTOP`) or `t` (stopped by a tracer). A
//!   stopped process answers nothing, whatever its dependencies do, and nothing excuses its
//!   silence;
//! - where each thread waits (`/proc/PID/task/TID/wchan`): on a socket or a poll (waiting on
//!   I/O: a client, a database) or on a futex (waiting on another thread: a lock, a condition,
//!   a queue). Shown to operators with what the agent saw, never decisive: a request waiting
//!   for a pooled connection waits on a futex exactly as a deadlocked one does.
//!
//! Reading another process's `fd` and `wchan` takes the same user (or `CAP_SYS_PTRACE`); when
//! the agent cannot, it has no kernel view and says so once.

use std::path::{Path, PathBuf};

/// What the kernel says of the app's process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProcessState {
    /// Its process id.
    pub(crate) pid: u32,
    /// Stopped by a signal or a tracer (`T` or `t`).
    pub(crate) stopped: bool,
    /// Its threads, by where they wait.
    pub(crate) threads: Threads,
}

/// A process's threads, counted by where they wait.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Threads {
    /// On the CPU or ready to run.
    pub(crate) running: usize,
    /// Waiting on a socket or a poll of descriptors (I/O: a client, a dependency).
    pub(crate) on_io: usize,
    /// Waiting on a futex (another thread: a lock, a condition variable, a queue).
    pub(crate) on_locks: usize,
    /// Waiting elsewhere (a sleep, a disk, a stop).
    pub(crate) other: usize,
}

impl std::fmt::Display for ProcessState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let threads = self.threads;
        let total = threads.running + threads.on_io + threads.on_locks + threads.other;
        if self.stopped {
            return write!(f, "process {} is stopped (state T)", self.pid);
        }
        write!(
            f,
            "process {}: {total} threads, {} running, {} waiting on sockets, {} on locks, {} \
             elsewhere",
            self.pid, threads.running, threads.on_io, threads.on_locks, threads.other
        )
    }
}

/// Where the agent finds the app's process.
#[derive(Debug)]
pub(crate) struct ProcessView {
    proc: PathBuf,
    port: u16,
    pid: Option<u32>,
}

impl ProcessView {
    /// A view of the process listening on `port`.
    pub(crate) fn new(port: u16) -> Self {
        Self::at(Path::new("/proc"), port)
    }

    pub(crate) fn at(proc: &Path, port: u16) -> Self {
        Self {
            proc: proc.to_owned(),
            port,
            pid: None,
        }
    }

    /// The process's state now, or `None` when no visible process listens on the port.
    pub(crate) fn state(&mut self) -> Option<ProcessState> {
        if let Some(pid) = self.pid
            && let Some(state) = self.read(pid)
        {
            return Some(state);
        }
        self.pid = self.find();
        self.pid.and_then(|pid| self.read(pid))
    }

    fn read(&self, pid: u32) -> Option<ProcessState> {
        let base = self.proc.join(pid.to_string());
        let stat = std::fs::read_to_string(base.join("stat")).ok()?;
        let state = stat_state(&stat)?;
        let mut threads = Threads::default();
        if let Ok(tasks) = std::fs::read_dir(base.join("task")) {
            for task in tasks.flatten().take(4096) {
                let task = task.path();
                let state = std::fs::read_to_string(task.join("stat"))
                    .ok()
                    .and_then(|stat| stat_state(&stat));
                let wchan = std::fs::read_to_string(task.join("wchan")).unwrap_or_default();
                match (state, wait_class(wchan.trim())) {
                    (Some('R'), _) => threads.running += 1,
                    (_, WaitClass::Io) => threads.on_io += 1,
                    (_, WaitClass::Lock) => threads.on_locks += 1,
                    _ => threads.other += 1,
                }
            }
        }
        Some(ProcessState {
            pid,
            stopped: matches!(state, 'T' | 't'),
            threads,
        })
    }

    /// The process holding the socket listening on the port.
    fn find(&self) -> Option<u32> {
        let inodes: Vec<u64> = ["net/tcp", "net/tcp6"]
            .iter()
            .filter_map(|table| std::fs::read_to_string(self.proc.join(table)).ok())
            .flat_map(|table| listening_inodes(&table, self.port))
            .collect();
        if inodes.is_empty() {
            return None;
        }
        let wanted: Vec<String> = inodes
            .iter()
            .map(|inode| format!("socket:[{inode}]"))
            .collect();
        for entry in std::fs::read_dir(&self.proc).ok()?.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|name| name.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
                continue;
            };
            for fd in fds.flatten() {
                if let Ok(target) = std::fs::read_link(fd.path())
                    && wanted
                        .iter()
                        .any(|socket| target.as_os_str() == socket.as_str())
                {
                    return Some(pid);
                }
            }
        }
        None
    }
}

/// The state letter of a `/proc/PID/stat` line (after the parenthesised command, which may
/// hold spaces and parentheses itself).
fn stat_state(stat: &str) -> Option<char> {
    let (_, rest) = stat.rsplit_once(')')?;
    rest.trim_start().chars().next()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WaitClass {
    Io,
    Lock,
    Other,
}

/// The kernel functions a thread sleeps in while it waits on a socket or a poll, or on a
/// futex (names across kernel versions).
fn wait_class(wchan: &str) -> WaitClass {
    const IO: &[&str] = &[
        "wait_woken",
        "sk_wait_data",
        "sk_stream_wait_memory",
        "inet_csk_accept",
        "do_sys_poll",
        "poll_schedule_timeout",
        "do_select",
        "core_sys_select",
        "ep_poll",
        "do_epoll_wait",
        "unix_stream_read_generic",
        "unix_stream_data_wait",
        "tcp_recvmsg",
    ];
    if IO.iter().any(|name| wchan.starts_with(name)) {
        WaitClass::Io
    } else if wchan.starts_with("futex") {
        WaitClass::Lock
    } else {
        WaitClass::Other
    }
}

/// The inodes of sockets listening on `port` in a `/proc/net/tcp` table.
fn listening_inodes(table: &str, port: u16) -> Vec<u64> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local = fields.get(1)?;
            let (_, local_port) = local.rsplit_once(':')?;
            let listening = *fields.get(3)? == "0A";
            (listening && u16::from_str_radix(local_port, 16).ok()? == port)
                .then(|| fields.get(9)?.parse().ok())
                .flatten()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_state_after_a_command_with_parentheses() {
        assert_eq!(stat_state("42 (my (odd) app) T 1 42 42 0"), Some('T'));
        assert_eq!(stat_state("42 (python3) S 1"), Some('S'));
        assert_eq!(stat_state("garbage"), None);
    }

    #[test]
    fn classes_wait_channels() {
        assert_eq!(wait_class("wait_woken"), WaitClass::Io);
        assert_eq!(wait_class("do_sys_poll"), WaitClass::Io);
        assert_eq!(wait_class("futex_wait_queue"), WaitClass::Lock);
        assert_eq!(wait_class("futex_do_wait"), WaitClass::Lock);
        assert_eq!(wait_class("hrtimer_nanosleep"), WaitClass::Other);
    }

    #[test]
    fn finds_listening_sockets_by_port() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 23365 1 0 100 0 0 10 0\n   1: 0100007F:0BB8 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 23999 1 0 100 0 0 10 0\n";
        assert_eq!(listening_inodes(table, 3000), vec![23365]);
        assert!(listening_inodes(table, 3001).is_empty());
    }

    #[test]
    fn sees_this_process_and_a_stopped_child() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut view = ProcessView::new(port);
        let state = view.state().expect("this process is visible");
        assert_eq!(state.pid, std::process::id());
        assert!(!state.stopped);
        assert!(state.threads.running >= 1, "{state}");

        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let status = std::process::Command::new("kill")
            .args(["-STOP", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let view = ProcessView::at(Path::new("/proc"), 0);
        // The kernel applies the stop asynchronously; it is immediate for a sleeping process
        // in practice, but read until it shows (bounded).
        let mut stopped = false;
        for _ in 0..1000 {
            if view.read(child.id()).is_some_and(|state| state.stopped) {
                stopped = true;
                break;
            }
            std::thread::yield_now();
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(stopped, "a stopped process reads T");
    }
}
