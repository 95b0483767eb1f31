//! `probity drill --file DRILL.yaml`: the drills a drill file describes, for any service.

use anyhow::bail;
use probity_drill::file::DrillFile;
use std::path::PathBuf;
use std::process::ExitCode;

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
                    name.trim(),
                    args.file.display(),
                    all.iter()
                        .map(|fault| fault.display_name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        }
        chosen
    };
    if args.check {
        println!(
            "{}: valid; {} instances of {}, probes from {}, {} faults: {}",
            args.file.display(),
            loaded.file.instances,
            loaded.file.service,
            pod.source,
            faults.len(),
            faults
                .iter()
                .map(|fault| fault.display_name())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(ExitCode::SUCCESS);
    }
    let _ = (&args.haproxy, args.json, &args.junit, args.keep_work_dir);
    bail!(
        "running a drill file needs the drill engine, which this build does not have yet; --check validates the file"
    )
}
