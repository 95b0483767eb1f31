//! The CPU a fleet's processes use, from the kernel's accounting.
//!
//! The health-check cost read from throughput depends on how the kernel shares the cores
//! between fleets from one second to the next; the CPU each fleet spends per request served
//! does not. Both are reported; the CPU figure is the steadier instrument
//! ([`super::cost`]).
//!
//! The time is read per thread in nanoseconds (`/proc/PID/task/TID/schedstat`, its first field:
//! time spent on a CPU). The clock ticks of `/proc/PID/stat` are 10 ms each: a fleet whose
//! processes use a fifth of a core reads about 100 ticks in a 5 s block, so the rounding of
//! each process alone moved a block's figure by about 1% — a third of the target it measures.
//! A kernel without `schedstat` falls back to the ticks. A thread that ends between two reads
//! takes its time since the last read with it; the cost is measured while nothing restarts, on
//! processes whose threads live as long as they do.

use std::collections::HashSet;
use std::path::Path;

/// What to count: whole process groups (an app and every process it started; an agent) and
/// single processes (HAProxy, which shares the drill's group).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Processes {
    /// Process groups, by their leader's id.
    pub groups: Vec<u32>,
    /// Single processes.
    pub pids: Vec<u32>,
}

/// Nanoseconds in one clock tick of `/proc/PID/stat` (`USER_HZ`, 100 on every Linux the
/// kernel exports it for).
const NANOS_PER_TICK: u64 = 10_000_000;

/// One process's group and its CPU time (user + system, in clock ticks) from the text of its
/// `/proc/PID/stat`. The command name, field 2, is in parentheses and may hold spaces and
/// parentheses itself: the fields are counted from the last `)`.
pub fn parse_stat(text: &str) -> Option<(u32, u64)> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state (3), ppid (4), pgrp (5) … utime (14), stime (15).
    let group = fields.get(2)?.parse().ok()?;
    let user: u64 = fields.get(11)?.parse().ok()?;
    let system: u64 = fields.get(12)?.parse().ok()?;
    Some((group, user + system))
}

/// The time on a CPU, nanoseconds, from the text of a thread's `schedstat`.
pub fn parse_schedstat(text: &str) -> Option<u64> {
    text.split_whitespace().next()?.parse().ok()
}

/// The CPU time, in nanoseconds, each of `fleets` has used so far, read in one pass over
/// `/proc` so that every fleet is read at the same instant (one pass per fleet would read the
/// last one tens of milliseconds after the first on a loaded machine, and a block's edges would
/// differ by that between fleets). Processes that have exited are no longer counted.
pub fn nanos<const N: usize>(fleets: &[Processes; N]) -> [u64; N] {
    let groups: [HashSet<u32>; N] = fleets
        .each_ref()
        .map(|p| p.groups.iter().copied().collect());
    let pids: [HashSet<u32>; N] = fleets.each_ref().map(|p| p.pids.iter().copied().collect());
    let mut total = [0; N];
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return total;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((group, ticks)) = parse_stat(&text) else {
            continue;
        };
        let mut used = None;
        for (i, sum) in total.iter_mut().enumerate() {
            if groups[i].contains(&group) || pids[i].contains(&pid) {
                let used = *used.get_or_insert_with(|| {
                    threads_nanos(&entry.path()).unwrap_or(ticks * NANOS_PER_TICK)
                });
                *sum += used;
            }
        }
    }
    total
}

/// The sum of a process's threads' time on a CPU, or `None` when the kernel keeps no
/// `schedstat`.
fn threads_nanos(process: &Path) -> Option<u64> {
    let mut total = 0;
    let mut read = false;
    for thread in std::fs::read_dir(process.join("task")).ok()?.flatten() {
        if let Some(nanos) = std::fs::read_to_string(thread.path().join("schedstat"))
            .ok()
            .as_deref()
            .and_then(parse_schedstat)
        {
            total += nanos;
            read = true;
        }
    }
    read.then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_group_and_cpu_time_past_a_name_with_spaces_and_parentheses() {
        let text = "4242 (web (worker) 1) S 1 4200 4200 0 -1 4194560 1000 0 0 0 731 69 0 0 20 0 \
                    9 0 12345 1000000 500 18446744073709551615";
        assert_eq!(parse_stat(text), Some((4200, 800)));
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(
            parse_schedstat("124955067 75720180 413\n"),
            Some(124_955_067)
        );
        assert_eq!(parse_schedstat(""), None);
    }

    #[test]
    fn counts_this_process_by_its_pid() {
        let me = std::process::id();
        let processes = Processes {
            groups: Vec::new(),
            pids: vec![me],
        };
        // Burn a little CPU so the count cannot be zero.
        let started = std::time::Instant::now();
        let mut x = 0u64;
        while started.elapsed() < std::time::Duration::from_millis(50) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let [mine, nothing] = nanos(&[processes, Processes::default()]);
        assert!(mine > 0);
        // To the nanosecond where the kernel keeps schedstat, not in 10 ms ticks.
        if std::path::Path::new("/proc/self/schedstat").exists() {
            assert_ne!(mine % NANOS_PER_TICK, 0, "{mine}");
        }
        assert_eq!(nothing, 0);
    }
}
