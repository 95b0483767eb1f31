//! `probity lint`.

use std::process::ExitCode;

/// Arguments of `probity lint`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {}

/// Runs `probity lint`.
pub(crate) fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`probity lint` is not built yet")
}
