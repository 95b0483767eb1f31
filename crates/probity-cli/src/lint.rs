//! `probity lint`: a thin layer over `probity-lint`.

use anyhow::{Context, bail};
use probity_lint::contract::Contract;
use probity_lint::{Format, Options, Severity, fix, output, rules, source, write};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `probity lint`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit status: 0 no finding at or above --fail-on, 1 findings, 2 error.\n\
                  Rules: `probity lint --list-rules`; one rule: `probity lint --explain ID`."
)]
pub(crate) struct Args {
    /// Manifests: files, folders (walked for *.yaml and *.yml), or `-` for standard input.
    #[arg(value_name = "PATH", required_unless_present_any = ["explain", "list_rules"])]
    paths: Vec<PathBuf>,

    /// Output format.
    #[arg(long, value_name = "FORMAT", default_value = "human",
          value_parser = ["human", "json", "sarif"])]
    format: String,

    /// Exit 1 when a finding is at or above this severity (`never`: exit 0 whatever the findings;
    /// unreadable input still exits 2).
    #[arg(long, value_name = "SEVERITY", default_value = "warning",
          value_parser = ["info", "warning", "error", "never"])]
    fail_on: String,

    /// A service contract (JSON, as `checkout --print-contract` writes it, format version 1 or
    /// 2); repeatable.
    #[arg(long = "contract", value_name = "FILE")]
    contracts: Vec<PathBuf>,

    /// Print the reference of one rule and exit.
    #[arg(long, value_name = "ID")]
    explain: Option<String>,

    /// List every rule with its severity and exit.
    #[arg(long)]
    list_rules: bool,

    /// Apply the safe fixes in place (comments and formatting are kept), print what changed on
    /// standard error, and report what remains.
    #[arg(long)]
    fix: bool,

    /// With --fix: print the changes as a unified diff instead of writing them.
    #[arg(long, requires = "fix")]
    dry_run: bool,

    /// List every skipped document (kinds the linter does not judge), not only their count.
    #[arg(long, short)]
    verbose: bool,

    /// Refuse an input larger than this (bytes; suffixes K, M, G for KiB, MiB, GiB).
    #[arg(long, value_name = "SIZE", default_value = "64M", value_parser = parse_size)]
    max_input_size: u64,

    /// Colour in the human format.
    #[arg(long, value_name = "WHEN", default_value = "auto",
          value_parser = ["auto", "always", "never"])]
    color: String,

    /// `probe-load`: probe requests per second across a workload's replicas allowed.
    #[arg(long, value_name = "RPS", default_value_t = probity_lint::DEFAULT_MAX_PROBE_RPS)]
    max_probe_rps: f64,

    /// `probe-load`: health-check requests per second reaching dependencies allowed.
    #[arg(long, value_name = "RPS", default_value_t = probity_lint::DEFAULT_MAX_DEPENDENCY_RPS)]
    max_dependency_rps: f64,
}

/// Parses a size: a number of bytes, or a number with K, M or G (KiB, MiB, GiB).
fn parse_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let digits = trimmed.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &trimmed[digits.len()..];
    let multiplier: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(format!("unknown size unit `{unit}`; use K, M or G")),
    };
    let number: u64 = digits
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a size such as 64M"))?;
    number
        .checked_mul(multiplier)
        .filter(|bytes| *bytes > 0)
        .ok_or_else(|| format!("`{text}` is not a usable size"))
}

/// Runs `probity lint`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut stdout = std::io::stdout().lock();
    if let Some(id) = &args.explain {
        let Some(rule) = rules::find(id) else {
            let known: Vec<&str> = rules::all().iter().map(|rule| rule.id).collect();
            bail!("no rule `{id}`; the rules are: {}", known.join(", "));
        };
        write!(stdout, "{}", rule.explain())?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.list_rules {
        for rule in rules::all() {
            writeln!(
                stdout,
                "{:<40} {:<8} {}",
                rule.id, rule.severity, rule.summary
            )?;
        }
        return Ok(ExitCode::SUCCESS);
    }

    let mut contracts = Vec::new();
    for path in &args.contracts {
        // Read as a manifest is: up to the input limit, and never from a device.
        let text = source::Source::from_file(path, args.max_input_size)?.text;
        let contract = Contract::from_json(&text)
            .with_context(|| format!("invalid contract {}", path.display()))?;
        contracts.push(contract);
    }
    for (flag, value) in [
        ("--max-probe-rps", args.max_probe_rps),
        ("--max-dependency-rps", args.max_dependency_rps),
    ] {
        if !(value.is_finite() && value >= 0.0) {
            bail!("{flag} must be a non-negative number, not {value}");
        }
    }
    let options = Options {
        contracts,
        max_probe_rps: args.max_probe_rps,
        max_dependency_rps: args.max_dependency_rps,
    };

    let inputs = source::read_inputs(&args.paths, std::io::stdin().lock(), args.max_input_size);
    let mut sources = inputs.sources;
    if args.fix {
        let reads_stdin = sources
            .iter()
            .any(|source| source.name == source::STDIN_NAME);
        if reads_stdin && !args.dry_run {
            bail!("standard input cannot be fixed in place; use `--fix --dry-run` to see the diff");
        }
        let fixed = fix::fix_all(&sources, &options, |_| true);
        let mut stderr = std::io::stderr().lock();
        let written: Vec<usize> = if args.dry_run {
            for (index, source) in sources.iter().enumerate() {
                if fixed.changed(&sources, index) {
                    write!(
                        stdout,
                        "{}",
                        fix::unified_diff(&source.name, &source.text, &fixed.sources[index].text)
                    )?;
                }
            }
            stdout.flush()?;
            (0..sources.len())
                .filter(|index| fixed.changed(&sources, *index))
                .collect()
        } else {
            match write::write_fixed(&sources, &fixed, &args.paths, args.max_input_size) {
                Ok(written) => written,
                Err(failure) => {
                    // Say why, and claim no fix but those written whole.
                    for error in &failure.errors {
                        writeln!(
                            stderr,
                            "error: {}",
                            output::escape_control(&error.to_string())
                        )?;
                    }
                    if failure.written.is_empty() {
                        writeln!(stderr, "error: no file was changed")?;
                    } else {
                        for &index in &failure.written {
                            writeln!(
                                stderr,
                                "error: {} was fixed and written before the failure",
                                output::escape_control(&sources[index].name)
                            )?;
                        }
                        let left: Vec<String> = (0..sources.len())
                            .filter(|index| {
                                fixed.changed(&sources, *index) && !failure.written.contains(index)
                            })
                            .map(|index| output::escape_control(&sources[index].name).into_owned())
                            .collect();
                        writeln!(
                            stderr,
                            "error: {} of {} fixed file(s) written; not written: {}",
                            failure.written.len(),
                            failure.written.len() + left.len(),
                            left.join(", ")
                        )?;
                    }
                    return Ok(ExitCode::from(2));
                }
            }
        };
        for applied in &fixed.applied {
            let in_written = written
                .iter()
                .any(|&index| sources[index].name == applied.file);
            if !in_written {
                continue;
            }
            writeln!(
                stderr,
                "{} {}:{}:{} [{}] {}",
                if args.dry_run { "would fix" } else { "fixed" },
                output::escape_control(&applied.file),
                applied.line,
                applied.column,
                applied.rule,
                output::escape_control(&applied.description)
            )?;
        }
        writeln!(
            stderr,
            "{} fix(es) {} in {} file(s)",
            fixed.applied.len(),
            if args.dry_run { "available" } else { "applied" },
            written.len()
        )?;
        sources = fixed.sources;
    }
    let report = probity_lint::lint(&sources, &options);

    let format = Format::parse(&args.format).unwrap_or(Format::Human);
    let color = match args.color.as_str() {
        "always" => true,
        "never" => false,
        _ => std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    };
    let style = output::Style {
        color,
        verbose: args.verbose,
    };
    if !args.dry_run {
        let mut buffered = std::io::BufWriter::with_capacity(1 << 16, stdout);
        output::write(&report, &sources, format, style, &mut buffered)?;
        buffered.flush()?;
    }

    let mut stderr = std::io::stderr().lock();
    for &index in &report.unmatched_contracts {
        let service = options.contracts[index]
            .service
            .as_deref()
            .unwrap_or_default();
        writeln!(
            stderr,
            "warning: contract {} is for service `{service}`, which names no container, \
             workload, or `app`/`app.kubernetes.io/name` label in the manifests read; \
             nothing was judged against it",
            args.contracts[index].display()
        )?;
    }
    for error in &inputs.errors {
        writeln!(stderr, "error: {error}")?;
    }
    if report.nothing_read() {
        writeln!(
            stderr,
            "error: no document could be read: every one is invalid YAML or not a Kubernetes \
             object (see the findings above)"
        )?;
    }
    if !inputs.errors.is_empty() || report.nothing_read() {
        return Ok(ExitCode::from(2));
    }
    let fails = Severity::parse(&args.fail_on).is_some_and(|threshold| report.fails_at(threshold));
    Ok(if fails {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
