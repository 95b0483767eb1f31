//! Child processes that cannot outlive the drill.
//!
//! Every exit path the drill sees — the end of the run, an error, Ctrl-C or SIGTERM — kills the
//! fleet and HAProxy itself (`kill_on_drop`, then the teardown in [`crate::run()`]). A SIGKILL
//! of the drill runs none of that, so each long-lived child is also started through util-linux
//! `setpriv --pdeathsig KILL`: the kernel sends the child SIGKILL when the thread that started
//! it is gone (`prctl(PR_SET_PDEATHSIG)`). `setpriv` execs the program, so the process the drill
//! holds, signals and waits for is the program itself.
//!
//! The death signal follows the starting *thread*: children are started from the runtime's
//! worker threads, which live as long as the drill's runtime.

use std::ffi::OsStr;
use std::sync::OnceLock;
use tokio::process::Command;

/// The wrapper, when this machine's `setpriv` supports `--pdeathsig`.
fn setpriv() -> Option<&'static str> {
    static FOUND: OnceLock<Option<&'static str>> = OnceLock::new();
    *FOUND.get_or_init(|| {
        let works = std::process::Command::new("setpriv")
            .args(["--pdeathsig", "KILL", "--", "true"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        works.then_some("setpriv")
    })
}

/// A command for `program` that dies with the drill (see the module documentation), killed
/// when its handle is dropped.
pub fn command(program: impl AsRef<OsStr>) -> Command {
    let mut command = match setpriv() {
        Some(wrapper) => {
            let mut command = Command::new(wrapper);
            command.args(["--pdeathsig", "KILL", "--"]).arg(program);
            command
        }
        None => Command::new(program),
    };
    command.kill_on_drop(true);
    command
}

/// Whether children started by [`command`] die with the drill on this machine.
pub fn dies_with_the_drill() -> bool {
    setpriv().is_some()
}
