//! `probity drill --file DRILL.yaml`: the drills a drill file describes, for any service.

use anyhow::{Context, bail};
use probity_contract::text::escape_control as shown;
use probity_drill::engine::{self, Options};
use probity_drill::file::DrillFile;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// What `probity drill` passes on when given `--file`.
#[derive(Debug)]
pub(crate) struct Args {
    pub(crate) file: PathBuf,
    pub(crate) manifest: Option<(PathBuf, String)>,
    pub(crate) with_agent: bool,
    pub(crate) faults: Vec<String>,
    pub(crate) check: bool,
    pub(crate) haproxy: PathBuf,
    pub(crate) json: bool,
    pub(crate) junit: Option<PathBuf>,
    pub(crate) keep_work_dir: bool,
}

pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let loaded = DrillFile::load(&args.file)?;
    if let Some(junit) = &args.junit {
        let mut inputs = vec![args.file.clone()];
        inputs.extend(args.manifest.as_ref().map(|(path, _)| path.clone()));
        inputs.extend(
            loaded
                .file
                .manifest
                .as_ref()
                .map(|manifest| loaded.dir.join(&manifest.file)),
        );
        inputs.extend(
            loaded
                .file
                .agent
                .as_ref()
                .map(|agent| loaded.dir.join(&agent.config)),
        );
        refuse_input_as_output(junit, "--junit", &inputs)?;
    }
    let pod = loaded
        .pod(
            args.manifest
                .as_ref()
                .map(|(path, container)| (path.as_path(), container.as_str())),
            args.with_agent,
        )
        .map_err(anyhow::Error::msg)?;
    let all = loaded.file.faults();
    let faults = if args.faults.is_empty() {
        all
    } else {
        let mut chosen = Vec::new();
        for name in &args.faults {
            match all.iter().find(|fault| fault.display_name() == name.trim()) {
                Some(fault) => chosen.push(fault.clone()),
                None => bail!(
                    "no fault named `{}` in {} (there are: {})",
                    shown(name.trim()),
                    args.file.display(),
                    shown(
                        &all.iter()
                            .map(|fault| fault.display_name())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                ),
            }
        }
        chosen
    };
    if args.check {
        println!(
            "{}: valid; {} instances of {}, probes from {}, {} faults: {}",
            shown(&args.file.display().to_string()),
            loaded.file.instances,
            loaded.file.service,
            shown(&pod.source),
            faults.len(),
            shown(
                &faults
                    .iter()
                    .map(|fault| fault.display_name())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        );
        return Ok(ExitCode::SUCCESS);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let started = Instant::now();
    let progress = move |message: &str| {
        eprintln!("[{:>6.1}s] {message}", started.elapsed().as_secs_f64());
    };
    let options = Options {
        haproxy: args.haproxy.clone(),
        probity: std::env::current_exe().ok(),
        with_agent: args.with_agent,
        keep_work_dir: args.keep_work_dir,
        fleet_timeout: fleet_timeout(&pod),
        progress: &progress,
    };
    let outcome = runtime.block_on(async {
        let interrupted = async {
            use tokio::signal::unix::{SignalKind, signal};
            match signal(SignalKind::terminate()) {
                Ok(mut terminate) => {
                    tokio::select! {
                        _ = tokio::signal::ctrl_c() => "SIGINT",
                        _ = terminate.recv() => "SIGTERM",
                    }
                }
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                    "SIGINT"
                }
            }
        };
        tokio::select! {
            report = engine::run(&loaded, &pod, &faults, &options) => Ok(report),
            signal = interrupted => Err(signal),
        }
    });
    // Dropping the drill future, then the runtime's tasks, kills every process it started.
    runtime.shutdown_timeout(Duration::from_secs(2));
    let elapsed = started.elapsed().as_secs_f64();
    match outcome {
        Err(signal) => {
            eprintln!("{signal} received: fleet torn down");
            Ok(ExitCode::from(130))
        }
        Ok(Err(error)) => {
            if let Some(path) = &args.junit {
                let xml = probity_drill::junit::render_error(&error.to_string(), elapsed);
                std::fs::write(path, xml)
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
            Err(error.into())
        }
        Ok(Ok(report)) => {
            if args.json {
                println!("{}", report.to_json());
            } else {
                print!("{}", report.render());
            }
            if let Some(path) = &args.junit {
                std::fs::write(path, report.to_junit())
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
            for row in report.faults.iter().filter(|row| !row.passed()) {
                for check in row.checks.iter().filter(|check| !check.met) {
                    eprintln!(
                        "missed: {}: {} (measured {})",
                        shown(&row.fault),
                        shown(&check.target),
                        shown(&check.measured)
                    );
                }
            }
            Ok(ExitCode::from(report.exit_code()))
        }
    }
}

/// How long the fleet may take to be whole at the start: the startup budget and the readiness
/// window, with a minute to spare.
fn fleet_timeout(pod: &probity_drill::file::ResolvedPod) -> Duration {
    use probity_contract::probe::ProbeKind;
    let startup = pod
        .probe(ProbeKind::Startup)
        .map(|probe| probe.timing.budget())
        .unwrap_or_default();
    let readiness = pod
        .probe(ProbeKind::Readiness)
        .map(|probe| {
            probe
                .timing
                .period
                .saturating_mul(probe.timing.success_threshold + 1)
        })
        .unwrap_or_default();
    startup + readiness + Duration::from_secs(60)
}

/// Refuses an output path that is one of the run's input files (the drill file, the manifest,
/// the agent's configuration), however it is named: the same path, a link to it, a hard link.
pub(crate) fn refuse_input_as_output(
    output: &std::path::Path,
    flag: &str,
    inputs: &[PathBuf],
) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(written) = std::fs::metadata(output) else {
        return Ok(()); // nothing there yet: not an input
    };
    for input in inputs {
        if let Ok(read) = std::fs::metadata(input)
            && read.dev() == written.dev()
            && read.ino() == written.ino()
        {
            bail!(
                "{flag} {}: that is {}, an input of this run; write the report elsewhere",
                output.display(),
                input.display()
            );
        }
    }
    Ok(())
}
