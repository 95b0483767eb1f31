//! Each instance's readiness as the instance itself tells it: its own counters on the admin
//! listener's `/metrics`, and `/readyz` polled from outside.
//!
//! The counters see every transition, however short; a poller only samples. The drill uses
//! both: `probity_check_transitions_total{direction="down"}` of the hard checks (a hard check
//! falling is readiness failing) and the share of polls answered 200.

use crate::fleet::get_status;
use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::task::JoinHandle;

/// What one instance's `/metrics` says about its readiness.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Figures {
    /// Times a hard check fell (healthy → failing).
    pub down_transitions: u64,
    /// Times a hard check rose (failing → healthy).
    pub up_transitions: u64,
    /// Readiness probes answered `fail`.
    pub failed_answers: u64,
}

impl Figures {
    /// What changed from `before` to `self`.
    pub fn since(self, before: Figures) -> Figures {
        Figures {
            down_transitions: self
                .down_transitions
                .saturating_sub(before.down_transitions),
            up_transitions: self.up_transitions.saturating_sub(before.up_transitions),
            failed_answers: self.failed_answers.saturating_sub(before.failed_answers),
        }
    }
}

/// Reads `http://{admin}/metrics`.
pub async fn scrape(client: &reqwest::Client, admin: SocketAddr) -> Result<Figures, String> {
    let response = client
        .get(format!("http://{admin}/metrics"))
        .send()
        .await
        .map_err(|error| error.to_string())?;
    let text = response.text().await.map_err(|error| error.to_string())?;
    Ok(parse(&text))
}

/// A series' labels: (name, value).
type Labels<'a> = Vec<(&'a str, String)>;

/// One sample line of the Prometheus text format: name, labels, value.
fn sample(line: &str) -> Option<(&str, Labels<'_>, f64)> {
    if line.starts_with('#') || line.trim().is_empty() {
        return None;
    }
    let (series, value) = line.trim().rsplit_once(' ')?;
    let value = value.parse().ok()?;
    let Some((name, labels)) = series.split_once('{') else {
        return Some((series, Vec::new(), value));
    };
    let labels = labels.strip_suffix('}')?;
    let mut parsed = Vec::new();
    let mut rest = labels;
    while let Some((key, after)) = rest.split_once("=\"") {
        let mut text = String::new();
        let mut chars = after.char_indices();
        let mut end = None;
        while let Some((at, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, escaped)) = chars.next() {
                        text.push(if escaped == 'n' { '\n' } else { escaped });
                    }
                }
                '"' => {
                    end = Some(at);
                    break;
                }
                c => text.push(c),
            }
        }
        let end = end?;
        parsed.push((key.trim_start_matches(',').trim(), text));
        rest = &after[end + 1..];
    }
    Some((name, parsed, value))
}

/// The figures in a `/metrics` exposition.
pub fn parse(text: &str) -> Figures {
    let label = |labels: &[(&str, String)], key: &str| {
        labels
            .iter()
            .find(|(name, _)| *name == key)
            .map(|(_, value)| value.clone())
    };
    let hard: HashSet<String> = text
        .lines()
        .filter_map(sample)
        .filter(|(name, labels, _)| {
            *name == "probity_check_up" && label(labels, "tier").as_deref() == Some("hard")
        })
        .filter_map(|(_, labels, _)| label(&labels, "check"))
        .collect();
    let mut figures = Figures::default();
    for (name, labels, value) in text.lines().filter_map(sample) {
        let count = value.max(0.0) as u64;
        match name {
            "probity_check_transitions_total"
                if label(&labels, "check").is_some_and(|check| hard.contains(&check)) =>
            {
                match label(&labels, "direction").as_deref() {
                    Some("down") => figures.down_transitions += count,
                    Some("up") => figures.up_transitions += count,
                    _ => {}
                }
            }
            "probity_probe_requests_total"
                if label(&labels, "probe").as_deref() == Some("readiness")
                    && label(&labels, "result").as_deref() == Some("fail") =>
            {
                figures.failed_answers += count;
            }
            _ => {}
        }
    }
    figures
}

/// `/readyz` polled from outside at a fixed period, as a kubelet would: how many polls, how
/// many answered 200.
#[derive(Debug)]
pub struct Poller {
    task: JoinHandle<()>,
    polls: Arc<AtomicU64>,
    passed: Arc<AtomicU64>,
}

impl Poller {
    /// Polls `http://{address}/readyz` every `period` (each poll times out after `timeout`).
    pub fn start(address: SocketAddr, period: Duration, timeout: Duration) -> Poller {
        let polls = Arc::new(AtomicU64::new(0));
        let passed = Arc::new(AtomicU64::new(0));
        let client = crate::fleet::probe_client(timeout);
        let task = tokio::spawn({
            let (polls, passed) = (polls.clone(), passed.clone());
            async move {
                let mut ticker = tokio::time::interval(period);
                ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    ticker.tick().await;
                    let status = get_status(&client, address, "/readyz").await;
                    polls.fetch_add(1, Ordering::AcqRel);
                    if status == Ok(200) {
                        passed.fetch_add(1, Ordering::AcqRel);
                    }
                }
            }
        });
        Poller {
            task,
            polls,
            passed,
        }
    }

    /// Stops polling; returns (polls, polls answered 200).
    pub fn stop(self) -> (u64, u64) {
        self.task.abort();
        (
            self.polls.load(Ordering::Acquire),
            self.passed.load(Ordering::Acquire),
        )
    }
}

impl Drop for Poller {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_hard_checks_transitions_and_the_failed_readiness_answers() {
        let text = r#"# TYPE probity_check_transitions_total counter
probity_check_transitions_total{check="db",direction="up"} 3
probity_check_transitions_total{check="db",direction="down"} 2
probity_check_transitions_total{check="cache",direction="down"} 7
probity_probe_requests_total{probe="readiness",result="pass"} 40
probity_probe_requests_total{probe="readiness",result="fail"} 5
probity_probe_requests_total{probe="liveness",result="fail"} 9
probity_check_up{check="db",tier="hard"} 1
probity_check_up{check="cache",tier="soft"} 0
probity_check_up{check="odd \"name\", with comma",tier="hard"} 1
probity_check_transitions_total{check="odd \"name\", with comma",direction="down"} 1
http_requests_total{status="201"} 1000
"#;
        assert_eq!(
            parse(text),
            Figures {
                down_transitions: 3,
                up_transitions: 3,
                failed_answers: 5,
            }
        );
        assert_eq!(parse(""), Figures::default());
        assert_eq!(parse("garbage {\nx{y=\"z} 1\n"), Figures::default());
        let before = Figures {
            down_transitions: 1,
            up_transitions: 1,
            failed_answers: 2,
        };
        assert_eq!(
            parse(text).since(before),
            Figures {
                down_transitions: 2,
                up_transitions: 2,
                failed_answers: 3,
            }
        );
    }
}
