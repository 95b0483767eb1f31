//! Whether a script's exit status is always 0.

use super::script::{AndOr, Operator, Pipeline, Script, basename};

/// Paths of files every container has while its first process runs: the kernel's `/proc` entries
/// for PID 1 and the reader itself, and the files the kubelet mounts into every container.
pub(super) const FILES_THAT_EXIST: &[&str] = &[
    "/etc/hosts",
    "/etc/hostname",
    "/etc/resolv.conf",
    "/dev/null",
    "/dev/termination-log",
    "/proc/version",
    "/proc/uptime",
    "/proc/loadavg",
    "/proc/meminfo",
    "/proc/cpuinfo",
    "/proc/stat",
];

/// Entries of `/proc/1/` and `/proc/self/` that exist and any user may read.
pub(super) const PROCESS_FILES: &[&str] = &["status", "cmdline", "stat", "statm", "comm", "limits"];

/// Folders every container has.
pub(super) const FOLDERS_THAT_EXIST: &[&str] = &[
    "/",
    "/proc",
    "/proc/1",
    "/proc/self",
    "/dev",
    "/sys",
    "/etc",
];

pub(super) fn is_existing_file(path: &str) -> bool {
    let path = path.trim_end_matches('/');
    FILES_THAT_EXIST.contains(&path)
        || ["/proc/1/", "/proc/self/"].iter().any(|prefix| {
            path.strip_prefix(prefix)
                .is_some_and(|entry| PROCESS_FILES.contains(&entry))
        })
}

pub(super) fn is_existing_folder(path: &str) -> bool {
    let trimmed = path.trim_end_matches('/');
    FOLDERS_THAT_EXIST.contains(&if trimmed.is_empty() { "/" } else { trimmed })
}

pub(super) fn is_existing(path: &str) -> bool {
    is_existing_file(path) || is_existing_folder(path)
}

/// Why a script's exit status is always 0, if it is.
pub(crate) fn cannot_fail(script: &Script) -> Option<String> {
    let judged: Vec<Option<String>> = script
        .statements
        .iter()
        .map(|statement| and_or_cannot_fail(statement, script))
        .collect();
    let last = judged.last()?.clone()?;
    // Under `set -e` any statement that fails ends the script with its status.
    if script.errexit && judged.iter().any(Option::is_none) {
        return None;
    }
    Some(last)
}

pub(super) fn and_or_cannot_fail(statement: &AndOr, script: &Script) -> Option<String> {
    let mut status = pipeline_cannot_fail(&statement.first, script);
    for (operator, pipeline) in &statement.rest {
        let next = pipeline_cannot_fail(pipeline, script);
        status = match operator {
            // `a && b`: fails when a fails; when a cannot fail, b decides.
            Operator::And => status.and(next),
            // `a || b`: b runs whenever a fails, so b cannot failing is enough.
            Operator::Or => match next {
                Some(reason) => Some(format!("it ends in `|| {}`", reason_command(&reason))),
                None => status,
            },
        };
    }
    status
}

/// The command named in a reason, for `|| …` messages.
pub(super) fn reason_command(reason: &str) -> &str {
    reason
        .strip_prefix('`')
        .and_then(|rest| rest.split('`').next())
        .unwrap_or(reason)
}

pub(super) fn pipeline_cannot_fail(pipeline: &Pipeline, script: &Script) -> Option<String> {
    let last = pipeline.commands.last()?;
    if script.pipefail {
        for command in &pipeline.commands {
            simple_cannot_fail(command, script)?;
        }
    }
    // `ps aux | grep app` in a shell: the shell's own command line contains `app`, so grep
    // always finds a line.
    if script.shell
        && let [first, .., _] = pipeline.commands.as_slice()
        && first
            .first()
            .is_some_and(|program| basename(program) == "ps")
        && let Some(pattern) = grep_fixed_pattern(last)
        && !pipeline
            .commands
            .iter()
            .any(|command| is_grep_v_grep(command))
    {
        return Some(format!(
            "`ps … | grep {pattern}` always matches the shell running it, whose command line \
             contains `{pattern}`"
        ));
    }
    // `… | cat`: a filter reading the pipe succeeds whatever came before it.
    if pipeline.commands.len() > 1
        && let Some(words) = without_redirections(last)
        && let Some((program, arguments)) = words.split_first()
        && matches!(
            basename(program),
            "cat" | "head" | "tail" | "wc" | "tee" | "sort" | "uniq" | "tr"
        )
        && arguments
            .iter()
            .all(|word| word.starts_with('-') || basename(program) == "tr")
    {
        return Some(format!(
            "a pipeline's status is its last command's, and `{}` reading the pipe always \
             succeeds",
            words.join(" ")
        ));
    }
    simple_cannot_fail(last, script)
}

/// The pattern of `grep [-q|-i|-w|-F…] PATTERN` with no file operand, when it is matched
/// literally against lines containing it (no `-v`, no bracket trick).
pub(super) fn grep_fixed_pattern(command: &[String]) -> Option<&str> {
    if basename(command.first()?) != "grep" {
        return None;
    }
    let mut pattern = None;
    for word in &command[1..] {
        if let Some(flags) = word.strip_prefix('-') {
            if flags.contains(['v', 'e', 'f', 'x', 'c']) || flags.starts_with('-') {
                return None;
            }
            continue;
        }
        if pattern.is_some() {
            return None;
        }
        pattern = Some(word.as_str());
    }
    let pattern = pattern?;
    (!pattern.is_empty()
        && pattern
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/')))
    .then_some(pattern)
}

pub(super) fn is_grep_v_grep(command: &[String]) -> bool {
    command
        .first()
        .is_some_and(|program| basename(program) == "grep")
        && command
            .iter()
            .any(|word| word.starts_with('-') && word.contains('v'))
        && command.iter().any(|word| word == "grep")
}

/// Drops redirections that cannot fail (`>/dev/null`, `2>&1`); `None` when another remains
/// (writing a file can fail).
pub(super) fn without_redirections(command: &[String]) -> Option<Vec<&str>> {
    let mut words = Vec::new();
    let mut iter = command.iter().map(String::as_str);
    while let Some(word) = iter.next() {
        if word.starts_with('<') {
            return None;
        }
        let digits = word.len() - word.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let rest = &word[digits..];
        let target = rest
            .strip_prefix("&>>")
            .or_else(|| rest.strip_prefix("&>"))
            .or_else(|| rest.strip_prefix(">>"))
            .or_else(|| rest.strip_prefix('>'));
        let Some(target) = target else {
            words.push(word);
            continue;
        };
        let target = if target.is_empty() {
            iter.next()?
        } else {
            target
        };
        let target = target.strip_prefix('&').unwrap_or(target);
        let harmless =
            target == "/dev/null" || target == "-" || target.chars().all(|c| c.is_ascii_digit());
        if !harmless {
            return None;
        }
    }
    Some(words)
}

pub(super) fn simple_cannot_fail(command: &[String], script: &Script) -> Option<String> {
    let words = without_redirections(command)?;
    let (&program, arguments) = words.split_first()?;
    let name = basename(program);
    let shown = words.join(" ");
    let operands: Vec<&str> = arguments
        .iter()
        .copied()
        .filter(|word| !word.starts_with('-'))
        .collect();
    match name {
        "true" => Some(format!("`{shown}` always succeeds")),
        ":" if script.shell => Some(format!(
            "`{shown}` is the shell's no-op, which always succeeds"
        )),
        "exit" if script.shell && arguments == ["0"] => Some("`exit 0` always succeeds".to_owned()),
        "echo" => Some(format!(
            "`{shown}` prints and succeeds whatever the process does"
        )),
        "date" | "pwd" | "uname" | "hostname" if operands.is_empty() => {
            Some(format!("`{shown}` succeeds whatever the process does"))
        }
        "cat" | "head" | "tail" | "wc"
            if !operands.is_empty() && operands.iter().all(|path| is_existing_file(path)) =>
        {
            Some(format!(
                "`{shown}` reads a file every container has while it runs"
            ))
        }
        "ls" | "stat" if operands.iter().all(|path| is_existing(path)) => Some(format!(
            "`{shown}` lists a path every container has while it runs"
        )),
        "test" | "[" => test_cannot_fail(&words)
            .map(|_| format!("`{shown}` tests a path every container has while it runs")),
        "kill" if arguments == ["-0", "1"] => Some(format!(
            "`{shown}` only asks whether PID 1 exists, which it does while the container runs"
        )),
        _ => None,
    }
}

/// `test -e PATH`, `[ -d PATH ]`… on a path that exists in every container.
pub(super) fn test_cannot_fail(words: &[&str]) -> Option<()> {
    let mut operands: Vec<&str> = words[1..].to_vec();
    if words[0] == "[" {
        if operands.last() != Some(&"]") {
            return None;
        }
        operands.pop();
    }
    match operands.as_slice() {
        ["-e", path] if is_existing(path) => Some(()),
        ["-d", path] if is_existing_folder(path) => Some(()),
        ["-f" | "-r", path] if is_existing_file(path) => Some(()),
        _ => None,
    }
}
