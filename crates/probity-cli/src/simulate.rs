//! `probity simulate`: run scenarios, print results, optionally chart them.

use anyhow::{Context, bail};
use probity_sim::{Report, Scenario, chart, compare_text, effective_seed, simulate};
use std::path::PathBuf;
use std::process::ExitCode;

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
    let mut reports: Vec<Report> = Vec::new();
    for file in &files {
        let scenario = Scenario::load(file)?;
        reports.push(simulate(&scenario, effective_seed(&scenario, args.seed)));
    }
    if args.json {
        let json = if comparing {
            serde_json::json!({ "before": reports[0], "after": reports[1] })
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
