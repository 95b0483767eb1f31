//! What an exec probe's command does, read without running it: whether it can fail at all, and
//! which URLs it fetches.
//!
//! The kubelet runs `command` directly (`pkg/probe/exec/exec.go`): exit status 0 is success. A
//! shell script (`sh -c "…"`) is read the way POSIX `sh` evaluates it: the status of a sequence
//! is its last command's (unless `set -e` stops it earlier), `a || b` succeeds when `b` cannot
//! fail, a pipeline's status is its last command's (unless `pipefail`). Anything with control
//! flow, subshells or command substitution is left unjudged: a false "cannot fail" would be
//! worse than silence.
//!
//! A script is read into statements, and-or lists, pipelines and words (`script.rs`), then judged
//! for whether it can fail (`fails.rs`); the URLs it fetches are found apart (`fetch.rs`), since
//! that reading also looks inside control flow.

mod fails;
mod fetch;
mod script;
#[cfg(test)]
mod tests;

pub(crate) use fails::cannot_fail;
pub(crate) use fetch::{fetches, is_health_path};
pub(crate) use script::parse;
