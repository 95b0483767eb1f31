//! `probity drill`: real faults against a real local fleet of any service, described by a drill
//! file, behind a real HAProxy.

use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `probity drill`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "A drill file (docs/drill.md) describes one instance of a service as a pod \
does: its command, its probes (or --manifest FILE --container NAME), its dependencies, its \
traffic and its faults. The drill starts a fleet of it on this machine behind a real HAProxy, \
a fault proxy in front of each dependency of each instance and a kubelet per instance, runs \
each fault under the traffic, and reports what the probes did, with a diagnosis for every \
missed target. `probity drill init --manifest FILE --container NAME` writes a starting file; \
examples/checkout/drill.yaml is a whole one.

Exit codes: 0 every target met, 1 a target missed (each is named on stderr), 2 the drill could \
not run, 130 interrupted.",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: Option<DrillCommand>,
    /// The drill file describing the service, its probes, traffic and faults (docs/drill.md).
    #[arg(long, value_name = "FILE", required = true)]
    file: Option<PathBuf>,
    /// Read the probes from this Kubernetes manifest instead of the drill file's `pod:`.
    #[arg(long, value_name = "FILE", requires = "container")]
    manifest: Option<PathBuf>,
    /// The container in --manifest.
    #[arg(long, value_name = "NAME", requires = "manifest")]
    container: Option<String>,
    /// Run `probity agent` beside each instance, with the drill file's agent probes.
    #[arg(long)]
    with_agent: bool,
    /// Only these faults (by name, comma-separated), in the file's order.
    #[arg(long, value_delimiter = ',')]
    faults: Vec<String>,
    /// Check the drill file (and the manifest) and exit.
    #[arg(long)]
    check: bool,
    /// The haproxy binary.
    #[arg(long, value_name = "PATH", default_value = "haproxy")]
    haproxy: PathBuf,
    /// Keep the work folder (configuration, logs) after the run.
    #[arg(long)]
    keep_work_dir: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Also write the targets as JUnit XML to FILE (one test case per target).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
}

/// `probity drill`'s subcommands.
#[derive(Debug, clap::Subcommand)]
enum DrillCommand {
    /// Write a starting drill file from a Kubernetes manifest, every guess marked `# GUESS:`.
    Init {
        /// The manifest (Deployment, StatefulSet, …).
        #[arg(long, value_name = "FILE")]
        manifest: PathBuf,
        /// The app's container in it.
        #[arg(long, value_name = "NAME")]
        container: String,
        /// Write the drill file here instead of to stdout (refused if it exists).
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

/// `probity drill init`: a starting drill file.
fn init(
    manifest: &std::path::Path,
    container: &str,
    output: Option<&std::path::Path>,
) -> anyhow::Result<ExitCode> {
    // The drill file names the manifest relative to where it will be.
    let manifest_ref = match output.and_then(|out| out.parent()) {
        Some(dir) if !dir.as_os_str().is_empty() => relative_to(manifest, dir),
        _ => manifest.display().to_string(),
    };
    let text = probity_drill::file::init::starting_file(manifest, container, &manifest_ref)
        .map_err(anyhow::Error::msg)?;
    match output {
        None => print!("{text}"),
        Some(path) => {
            use std::io::Write as _;
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
                .with_context(|| format!("writing {}", path.display()))?;
            file.write_all(text.as_bytes())
                .with_context(|| format!("writing {}", path.display()))?;
            eprintln!(
                "wrote {}: check every `# GUESS:` before `probity drill --file {}`",
                path.display(),
                path.display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `path` as seen from `dir` (both made absolute), or `path` as given when that fails.
fn relative_to(path: &std::path::Path, dir: &std::path::Path) -> String {
    let (Ok(path_abs), Ok(dir_abs)) = (std::path::absolute(path), std::path::absolute(dir)) else {
        return path.display().to_string();
    };
    let common = path_abs
        .components()
        .zip(dir_abs.components())
        .take_while(|(a, b)| a == b)
        .count();
    let ups = dir_abs.components().count() - common;
    let mut relative = PathBuf::new();
    for _ in 0..ups {
        relative.push("..");
    }
    for component in path_abs.components().skip(common) {
        relative.push(component);
    }
    relative.display().to_string()
}

/// Runs `probity drill`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(DrillCommand::Init {
        manifest,
        container,
        output,
    }) = &args.command
    {
        return init(manifest, container, output.as_deref());
    }
    let Some(file) = args.file else {
        anyhow::bail!("a drill file is needed: probity drill --file DRILL.yaml (docs/drill.md)");
    };
    crate::drill_file::run(crate::drill_file::Args {
        file,
        manifest: args.manifest.zip(args.container),
        with_agent: args.with_agent,
        faults: args.faults,
        check: args.check,
        haproxy: args.haproxy,
        json: args.json,
        junit: args.junit,
        keep_work_dir: args.keep_work_dir,
    })
}
