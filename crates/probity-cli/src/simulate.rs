//! `probity simulate`.

use std::process::ExitCode;

/// Arguments of `probity simulate`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {}

/// Runs `probity simulate`.
pub(crate) fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`probity simulate` is not built yet")
}
