//! Runs scenario files through the simulator and prints each report as JSON, the way
//! `probity simulate --json` does, without building the CLI. The run's wall time and its
//! number of events (to within 65,536) go to stderr, for measuring the simulator itself.
//!
//! ```sh
//! cargo run --release -p probity-sim --example simulate -- [--seed N] [--replicas N] FILE…
//! ```
//!
//! `--replicas` overrides the fleet size of every file (the benchmark scenario is written
//! for 100,000 pods; this runs it at any size).

use probity_sim::{Format, Scenario, effective_seed, simulate_with_progress};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let mut seed = None;
    let mut replicas = None;
    let mut files = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--seed" => seed = args.next().and_then(|value| value.parse::<u64>().ok()),
            "--replicas" => replicas = args.next().and_then(|value| value.parse::<usize>().ok()),
            _ => files.push(PathBuf::from(arg)),
        }
    }
    if files.is_empty() {
        eprintln!("usage: simulate [--seed N] [--replicas N] FILE…");
        return ExitCode::from(2);
    }
    let mut reports = Vec::new();
    for file in &files {
        let loaded = match replicas {
            None => Scenario::load(file).map_err(|error| error.to_string()),
            Some(count) => std::fs::read_to_string(file)
                .map_err(|error| format!("{}: {error}", file.display()))
                .and_then(|text| {
                    let text = replace_replicas(&text, count);
                    let format = Format::from_path(file).unwrap_or(Format::Yaml);
                    Scenario::parse(&text, format, file).map_err(|error| error.to_string())
                }),
        };
        let scenario = match loaded {
            Ok(scenario) => scenario,
            Err(error) => {
                eprintln!("{error}");
                return ExitCode::from(2);
            }
        };
        let started = Instant::now();
        // The progress display hears from the run every 65,536 events: a count of events.
        let mut calls: u64 = 0;
        let report =
            simulate_with_progress(&scenario, effective_seed(&scenario, seed), &mut |_| {
                calls += 1
            });
        eprintln!(
            "{}: {:.2} s wall, about {:.1} million events",
            file.display(),
            started.elapsed().as_secs_f64(),
            (calls as f64 + 0.5) * 65_536.0 / 1e6
        );
        reports.push(report);
    }
    match serde_json::to_string_pretty(&reports) {
        Ok(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("serialising the reports: {error}");
            ExitCode::from(2)
        }
    }
}

/// The scenario text with its `replicas:` set to `count`.
fn replace_replicas(text: &str, count: usize) -> String {
    let Some(start) = text.find("replicas:") else {
        return text.to_string();
    };
    let value_start = start + "replicas:".len();
    let value_end = text[value_start..]
        .find(|character: char| !(character == ' ' || character.is_ascii_digit()))
        .map_or(text.len(), |offset| value_start + offset);
    format!(
        "{}replicas: {}{}",
        &text[..start],
        count,
        &text[value_end..]
    )
}
