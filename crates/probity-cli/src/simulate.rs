//! `probity simulate`: run scenarios, print results, optionally chart them.

use anyhow::{Context, bail};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use probity_sim::{
    Report, Scenario, chart, common_window, compare_text, effective_seed, simulate_with_progress,
};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Arguments of `probity simulate`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Scenario files (YAML or TOML).
    #[arg(value_name = "SCENARIO")]
    scenarios: Vec<PathBuf>,
    /// Run two scenarios and print them side by side (before, after).
    #[arg(long, num_args = 2, value_names = ["BEFORE", "AFTER"], conflicts_with = "scenarios")]
    compare: Option<Vec<PathBuf>>,
    /// Print the reports as JSON.
    #[arg(long)]
    json: bool,
    /// Write a chart: `.svg` for SVG, anything else for a self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    chart: Option<PathBuf>,
    /// The random seed (overrides the scenario's own).
    #[arg(long)]
    seed: Option<u64>,
}

/// Runs `probity simulate`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let comparing = args.compare.is_some();
    let files = args.compare.clone().unwrap_or(args.scenarios.clone());
    if files.is_empty() {
        bail!("no scenario given: `probity simulate SCENARIO…` or `--compare BEFORE AFTER`");
    }
    // A progress display on stderr for runs that take a while, when a person watches it.
    let show_progress = !args.json && std::io::stderr().is_terminal();
    if let Some(chart) = &args.chart {
        crate::drill_file::refuse_input_as_output(chart, "--chart", &files)?;
    }
    let scenarios = files
        .iter()
        .map(|file| Scenario::load(file))
        .collect::<Result<Vec<_>, _>>()?;
    if comparing {
        refuse_unlike(&files, &scenarios)?;
    }
    let mut reports: Vec<Report> = Vec::new();
    for scenario in &scenarios {
        let seed = effective_seed(scenario, args.seed);
        let report = if show_progress {
            run_with_progress(scenario, seed)
        } else {
            simulate_with_progress(scenario, seed, &mut |_| {})
        };
        reports.push(report);
    }
    if args.json {
        let json = if comparing {
            // Both error rates over one window, so a fix that recovers sooner is not measured
            // over a shorter span than the incident it fixes.
            let window = common_window(&reports[0], &reports[1]);
            serde_json::json!({
                "before": reports[0],
                "after": reports[1],
                "window_s": [window.0, window.1],
                "error_rate": {
                    "before": reports[0].error_rate_between(window.0, window.1),
                    "after": reports[1].error_rate_between(window.0, window.1),
                },
            })
        } else {
            serde_json::to_value(&reports).context("serialising the reports")?
        };
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else if comparing {
        print!("{}", compare_text(&reports[0], &reports[1]));
    } else {
        for (i, report) in reports.iter().enumerate() {
            if i > 0 {
                println!();
            }
            print!("{}", report.to_text());
        }
    }
    if let Some(path) = &args.chart {
        let svg = path.extension().is_some_and(|ext| ext == "svg");
        let text = if svg {
            chart::svg(&reports)
        } else {
            chart::html(&reports)
        };
        std::fs::write(path, text)
            .with_context(|| format!("writing the chart to {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Refuses to compare two scenarios that differ in length, series resolution or fleet size:
/// their error rates over one window, side by side, would read as a like-for-like result
/// when one run had ended or had more instances to spread the load over.
fn refuse_unlike(files: &[PathBuf], scenarios: &[Scenario]) -> anyhow::Result<()> {
    let [before, after] = scenarios else {
        return Ok(());
    };
    let millis = |ms: u64| probity_sim::report::human_seconds(ms as f64 / 1000.0);
    let mut differences = Vec::new();
    if before.duration != after.duration {
        differences.push(format!(
            "duration {} and {}",
            millis(before.duration),
            millis(after.duration)
        ));
    }
    if before.measure.resolution != after.measure.resolution {
        differences.push(format!(
            "measure.resolution {} and {}",
            millis(before.measure.resolution),
            millis(after.measure.resolution)
        ));
    }
    if before.fleet.replicas != after.fleet.replicas {
        differences.push(format!(
            "fleet.replicas {} and {}",
            before.fleet.replicas, after.fleet.replicas
        ));
    }
    if !differences.is_empty() {
        bail!(
            "--compare {} {}: the scenarios differ ({}), so their figures are not comparable; \
             give both the same duration, resolution and replicas, or run them without --compare",
            files[0].display(),
            files[1].display(),
            differences.join("; ")
        );
    }
    Ok(())
}

/// How long a run goes before its progress bar shows: `PROBITY_PROGRESS_AFTER` (a duration
/// such as `0s` or `5s`), by default a second. An unreadable value is said once and the
/// default kept.
fn progress_after() -> Duration {
    const DEFAULT: Duration = Duration::from_secs(1);
    match std::env::var("PROBITY_PROGRESS_AFTER") {
        Ok(text) => match probity_contract::duration::parse(&text) {
            Ok(after) => after,
            Err(error) => {
                eprintln!("probity: warning: PROBITY_PROGRESS_AFTER={text:?}: {error}; using 1s");
                DEFAULT
            }
        },
        Err(_) => DEFAULT,
    }
}

/// Runs a scenario, showing a progress bar on stderr once the run has taken
/// [`progress_after`].
fn run_with_progress(scenario: &Scenario, seed: u64) -> Report {
    let started = Instant::now();
    let after = progress_after();
    let total_s = scenario.duration / 1000;
    let mut bar: Option<ProgressBar> = None;
    let report = simulate_with_progress(scenario, seed, &mut |simulated_ms| {
        if bar.is_none() && started.elapsed() < after {
            return;
        }
        let bar = bar.get_or_insert_with(|| {
            let bar = ProgressBar::with_draw_target(Some(total_s), ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template(
                "{msg} [{bar:24}] {pos}/{len} s simulated, about {eta} left",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message(scenario.name.clone());
            bar
        });
        bar.set_position(simulated_ms / 1000);
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    report
}
