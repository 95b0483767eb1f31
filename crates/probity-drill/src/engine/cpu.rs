//! The CPU a fleet's processes use, from the kernel's accounting (`/proc/PID/stat`).
//!
//! The health-check cost read from throughput depends on how the kernel shares the cores
//! between fleets from one second to the next; the CPU each fleet spends per request served
//! does not. Both are reported; the CPU figure is the steadier instrument
//! ([`super::cost`]).

use std::collections::HashSet;

/// What to count: whole process groups (an app and every process it started; an agent) and
/// single processes (HAProxy, which shares the drill's group).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Processes {
    /// Process groups, by their leader's id.
    pub groups: Vec<u32>,
    /// Single processes.
    pub pids: Vec<u32>,
}

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

/// The CPU time, in clock ticks, `processes` have used so far (processes that have exited are
/// no longer counted: the cost is measured where nothing restarts).
pub fn ticks(processes: &Processes) -> u64 {
    let groups: HashSet<u32> = processes.groups.iter().copied().collect();
    let pids: HashSet<u32> = processes.pids.iter().copied().collect();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut total = 0;
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
        if let Some((group, used)) = parse_stat(&text)
            && (groups.contains(&group) || pids.contains(&pid))
        {
            total += used;
        }
    }
    total
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
        assert!(ticks(&processes) > 0);
        assert_eq!(ticks(&Processes::default()), 0);
    }
}
