//! What an exec probe's command does, read without running it: whether it can fail at all, and
//! which URLs it fetches.
//!
//! The kubelet runs `command` directly (`pkg/probe/exec/exec.go`): exit status 0 is success. A
//! shell script (`sh -c "…"`) is read the way POSIX `sh` evaluates it: the status of a sequence
//! is its last command's (unless `set -e` stops it earlier), `a || b` succeeds when `b` cannot
//! fail, a pipeline's status is its last command's (unless `pipefail`). Anything with control
//! flow, subshells or command substitution is left unjudged: a false "cannot fail" would be
//! worse than silence.

/// Paths of files every container has while its first process runs: the kernel's `/proc` entries
/// for PID 1 and the reader itself, and the files the kubelet mounts into every container.
const FILES_THAT_EXIST: &[&str] = &[
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
const PROCESS_FILES: &[&str] = &["status", "cmdline", "stat", "statm", "comm", "limits"];

/// Folders every container has.
const FOLDERS_THAT_EXIST: &[&str] = &[
    "/",
    "/proc",
    "/proc/1",
    "/proc/self",
    "/dev",
    "/sys",
    "/etc",
];

fn is_existing_file(path: &str) -> bool {
    let path = path.trim_end_matches('/');
    FILES_THAT_EXIST.contains(&path)
        || ["/proc/1/", "/proc/self/"].iter().any(|prefix| {
            path.strip_prefix(prefix)
                .is_some_and(|entry| PROCESS_FILES.contains(&entry))
        })
}

fn is_existing_folder(path: &str) -> bool {
    let trimmed = path.trim_end_matches('/');
    FOLDERS_THAT_EXIST.contains(&if trimmed.is_empty() { "/" } else { trimmed })
}

fn is_existing(path: &str) -> bool {
    is_existing_file(path) || is_existing_folder(path)
}

/// A command's words after quote removal, or `None` when the script is beyond this reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Script {
    /// Sequences of and-or lists of pipelines of simple commands.
    statements: Vec<AndOr>,
    /// `set -e` (or `sh -e`): a failing statement ends the script.
    errexit: bool,
    /// `set -o pipefail`: a pipeline fails when any of its commands does.
    pipefail: bool,
    /// Whether a shell runs it (so its own command line is in the process list).
    shell: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct AndOr {
    first: Pipeline,
    rest: Vec<(Operator, Pipeline)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    And,
    Or,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Pipeline {
    commands: Vec<Vec<String>>,
}

/// Shells whose `-c` argument is a script.
const SHELLS: &[&str] = &["sh", "bash", "ash", "dash", "zsh", "ksh", "mksh"];

/// Reads an exec probe's `command`: a shell's `-c` script, or one command run directly.
pub(crate) fn parse(command: &[String]) -> Option<Script> {
    let program = command.first()?;
    let name = basename(program);
    let mut arguments = &command[1..];
    if name == "busybox"
        && arguments
            .first()
            .is_some_and(|a| SHELLS.contains(&a.as_str()))
    {
        arguments = &arguments[1..];
    } else if !SHELLS.contains(&name) {
        return Some(Script {
            statements: vec![AndOr {
                first: Pipeline {
                    commands: vec![command.to_vec()],
                },
                rest: Vec::new(),
            }],
            errexit: false,
            pipefail: false,
            shell: false,
        });
    }
    // `sh -c SCRIPT`, `sh -ec SCRIPT`, `bash -o pipefail -c SCRIPT`.
    let mut errexit = false;
    let mut pipefail = false;
    let mut script = None;
    let mut index = 0;
    while index < arguments.len() {
        let argument = &arguments[index];
        if argument == "-o" {
            if arguments
                .get(index + 1)
                .is_some_and(|option| option == "pipefail")
            {
                pipefail = true;
            }
            index += 2;
            continue;
        }
        if let Some(flags) = argument.strip_prefix('-')
            && !flags.is_empty()
            && flags.chars().all(|c| c.is_ascii_alphabetic())
        {
            errexit |= flags.contains('e');
            if flags.contains('c') {
                script = arguments.get(index + 1);
                break;
            }
            index += 1;
            continue;
        }
        // `sh script.sh`: a file we cannot read.
        return None;
    }
    let mut parsed = parse_script(script?)?;
    parsed.errexit |= errexit;
    parsed.pipefail |= pipefail;
    Some(parsed)
}

fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// Splits a script into statements, and-or lists, pipelines and words, honouring quotes.
fn parse_script(script: &str) -> Option<Script> {
    // Control flow, grouping, substitution, here-documents and background jobs are beyond this
    // reading.
    if script.contains("$(")
        || script.contains('`')
        || script.contains("<<")
        || script.contains(['(', ')', '{', '}'])
    {
        return None;
    }
    let mut statements = Vec::new();
    let mut errexit = false;
    let mut pipefail = false;
    let mut current = AndOr {
        first: Pipeline {
            commands: Vec::new(),
        },
        rest: Vec::new(),
    };
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = script.chars().peekable();

    fn end_command(words: &mut Vec<String>, current: &mut AndOr) {
        let command = std::mem::take(words);
        let pipeline = match current.rest.last_mut() {
            Some((_, pipeline)) => pipeline,
            None => &mut current.first,
        };
        pipeline.commands.push(command);
    }

    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for quoted in chars.by_ref() {
                    if quoted == '\'' {
                        break;
                    }
                    word.push(quoted);
                }
            }
            '"' => {
                in_word = true;
                while let Some(quoted) = chars.next() {
                    match quoted {
                        '"' => break,
                        '\\' => {
                            if let Some(escaped) = chars.next() {
                                word.push(escaped);
                            }
                        }
                        other => word.push(other),
                    }
                }
            }
            '\\' => {
                if let Some(escaped) = chars.next()
                    && escaped != '\n'
                {
                    word.push(escaped);
                    in_word = true;
                }
            }
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '#' if !in_word => {
                // A comment runs to the end of the line.
                for skipped in chars.by_ref() {
                    if skipped == '\n' {
                        break;
                    }
                }
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
                if !words.is_empty() {
                    end_command(&mut words, &mut current);
                }
                finish_statement(&mut statements, &mut current, &mut errexit, &mut pipefail)?;
            }
            // `2>&1`, `>&2` and `&>file` are redirections, not background jobs.
            '&' if (in_word && word.ends_with('>')) || chars.peek() == Some(&'>') => {
                in_word = true;
                word.push('&');
            }
            ';' | '\n' | '&' | '|' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
                let operator = match (c, chars.peek()) {
                    ('&', Some('&')) => {
                        chars.next();
                        Some(Operator::And)
                    }
                    ('|', Some('|')) => {
                        chars.next();
                        Some(Operator::Or)
                    }
                    // A background job: its status is not the script's.
                    ('&', _) => return None,
                    _ => None,
                };
                if words.is_empty() {
                    // `;;`, a leading `|`, an empty line.
                    if c == '|' || operator.is_some() {
                        return None;
                    }
                    if c == ';' || c == '\n' {
                        finish_statement(
                            &mut statements,
                            &mut current,
                            &mut errexit,
                            &mut pipefail,
                        )?;
                    }
                    continue;
                }
                end_command(&mut words, &mut current);
                match (c, operator) {
                    (_, Some(operator)) => current.rest.push((
                        operator,
                        Pipeline {
                            commands: Vec::new(),
                        },
                    )),
                    ('|', None) => {}
                    _ => finish_statement(
                        &mut statements,
                        &mut current,
                        &mut errexit,
                        &mut pipefail,
                    )?,
                }
            }
            other => {
                in_word = true;
                word.push(other);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if !words.is_empty() {
        end_command(&mut words, &mut current);
    }
    finish_statement(&mut statements, &mut current, &mut errexit, &mut pipefail)?;
    if statements.is_empty() {
        return None;
    }
    Some(Script {
        statements,
        errexit,
        pipefail,
        shell: true,
    })
}

/// Ends the current statement: records it, or, for `set -e` / `set -o pipefail`, the option.
fn finish_statement(
    statements: &mut Vec<AndOr>,
    current: &mut AndOr,
    errexit: &mut bool,
    pipefail: &mut bool,
) -> Option<()> {
    let statement = std::mem::replace(
        current,
        AndOr {
            first: Pipeline {
                commands: Vec::new(),
            },
            rest: Vec::new(),
        },
    );
    if statement.first.commands.is_empty() {
        // An operator with nothing after it (`a &&`) is a syntax error.
        return if statement.rest.is_empty() {
            Some(())
        } else {
            None
        };
    }
    if statement
        .rest
        .iter()
        .any(|(_, pipeline)| pipeline.commands.is_empty())
    {
        return None;
    }
    if let [command] = statement.first.commands.as_slice()
        && statement.rest.is_empty()
        && command.first().is_some_and(|word| word == "set")
    {
        let mut words = command[1..].iter();
        while let Some(word) = words.next() {
            if word == "-o" {
                if words.next().is_some_and(|option| option == "pipefail") {
                    *pipefail = true;
                }
            } else if let Some(flags) = word.strip_prefix('-') {
                *errexit |= flags.contains('e');
            }
        }
        return Some(());
    }
    statements.push(statement);
    Some(())
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

fn and_or_cannot_fail(statement: &AndOr, script: &Script) -> Option<String> {
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
fn reason_command(reason: &str) -> &str {
    reason
        .strip_prefix('`')
        .and_then(|rest| rest.split('`').next())
        .unwrap_or(reason)
}

fn pipeline_cannot_fail(pipeline: &Pipeline, script: &Script) -> Option<String> {
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
fn grep_fixed_pattern(command: &[String]) -> Option<&str> {
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

fn is_grep_v_grep(command: &[String]) -> bool {
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
fn without_redirections(command: &[String]) -> Option<Vec<&str>> {
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

fn simple_cannot_fail(command: &[String], script: &Script) -> Option<String> {
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
fn test_cannot_fail(words: &[&str]) -> Option<()> {
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

/// A URL the script fetches with `curl`, `wget` or `grpc_health_probe`, with its words
/// expanded from `env` (`$VAR`, `${VAR}` and the kubelet's `$(VAR)` with literal values).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fetch {
    /// The program: `curl`, `wget`, `grpc_health_probe`.
    pub(crate) program: String,
    /// The host, lowercase; `None` when it holds a variable that cannot be expanded.
    pub(crate) host: Option<String>,
    /// The path (empty for gRPC).
    pub(crate) path: String,
    /// The target as written.
    pub(crate) target: String,
    /// Whether it is a `grpc.health.v1` check.
    pub(crate) grpc_health: bool,
}

/// Options of `curl` and `wget` that take a value in the next word.
const OPTIONS_WITH_VALUES: &[&str] = &[
    "-o",
    "-H",
    "-d",
    "-u",
    "-X",
    "-w",
    "-m",
    "-A",
    "-e",
    "-x",
    "-T",
    "-F",
    "-b",
    "-c",
    "-r",
    "-K",
    "-E",
    "-O",
    "-t",
    "-U",
    "-P",
    "--output",
    "--header",
    "--data",
    "--user",
    "--request",
    "--write-out",
    "--max-time",
    "--connect-timeout",
    "--retry",
    "--user-agent",
    "--proxy",
    "--cacert",
    "--cert",
    "--key",
    "--resolve",
    "--timeout",
    "--tries",
    "--output-document",
];

/// The URLs an exec command fetches. Unlike [`parse`], this reads scripts with control flow
/// too: it only looks for the fetching commands' arguments.
pub(crate) fn fetches(command: &[String], env: &[(String, String)]) -> Vec<Fetch> {
    // The kubelet expands `$(NAME)` in every argument before it runs the command.
    let command: Vec<String> = command.iter().map(|word| expand(word, env)).collect();
    let words: Vec<String> = match command.first().map(|program| basename(program)) {
        Some(name) if SHELLS.contains(&name) || name == "busybox" => command
            .iter()
            .skip(1)
            .flat_map(|argument| {
                argument
                    .split(|c: char| c.is_whitespace() || matches!(c, ';' | '|' | '&'))
                    .map(|word| expand(word.trim_matches(['"', '\'', '(', ')']), env))
                    .collect::<Vec<_>>()
            })
            .filter(|word| !word.is_empty())
            .collect(),
        _ => command,
    };
    let mut found = Vec::new();
    let mut index = 0;
    while index < words.len() {
        let program = basename(&words[index]).to_owned();
        index += 1;
        match program.as_str() {
            "curl" | "wget" => {
                while index < words.len() {
                    let word = &words[index];
                    index += 1;
                    if matches!(basename(word), "curl" | "wget" | "grpc_health_probe") {
                        index -= 1;
                        break;
                    }
                    if word == "--url" {
                        if let Some(next) = words.get(index) {
                            found.extend(url(&program, next));
                            index += 1;
                        }
                    } else if OPTIONS_WITH_VALUES.contains(&word.as_str()) {
                        index += 1;
                    } else if !word.starts_with('-') {
                        found.extend(url(&program, word));
                    }
                }
            }
            "grpc_health_probe" => {
                while index < words.len() {
                    let word = &words[index];
                    let address = word
                        .strip_prefix("-addr=")
                        .or_else(|| word.strip_prefix("--addr="));
                    if let Some(address) = address {
                        found.push(Fetch {
                            program: program.clone(),
                            host: host_of(address),
                            path: String::new(),
                            target: address.to_owned(),
                            grpc_health: true,
                        });
                    }
                    if !word.starts_with('-') {
                        break;
                    }
                    index += 1;
                }
            }
            _ => {}
        }
    }
    found
}

/// Reads `http://host:port/path`, or `host:port/path` as curl and wget accept it.
fn url(program: &str, word: &str) -> Option<Fetch> {
    let rest = word
        .strip_prefix("http://")
        .or_else(|| word.strip_prefix("https://"))
        .unwrap_or(word);
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    let host_like = !authority.is_empty()
        && authority.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    '.' | '-' | ':' | '[' | ']' | '@' | '$' | '{' | '}' | '(' | ')' | '_'
                )
        });
    if !host_like || (rest.len() == word.len() && !rest.contains(['/', ':'])) {
        return None;
    }
    let path = path.split(['?', '#']).next().unwrap_or(path);
    Some(Fetch {
        program: program.to_owned(),
        host: host_of(authority),
        path: path.to_owned(),
        target: word.to_owned(),
        grpc_health: false,
    })
}

/// The host of `user@host:port` (lowercase), or `None` when it still holds a variable.
fn host_of(authority: &str) -> Option<String> {
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    if authority.contains('$') {
        return None;
    }
    let host = if let Some(bracketed) = authority.strip_prefix('[') {
        bracketed.split(']').next().unwrap_or(bracketed)
    } else {
        authority.split(':').next().unwrap_or(authority)
    };
    Some(host.to_ascii_lowercase())
}

/// Expands `$(NAME)` (the kubelet's syntax), `${NAME}` and `$NAME` from `env`; unknown
/// variables stay as written.
fn expand(word: &str, env: &[(String, String)]) -> String {
    let lookup = |name: &str| {
        env.iter()
            .rev()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
    };
    let mut out = String::new();
    let mut rest = word;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, skip) = if let Some(inner) = after.strip_prefix('(') {
            match inner.find(')') {
                Some(end) => (&inner[..end], end + 2),
                None => ("", 0),
            }
        } else if let Some(inner) = after.strip_prefix('{') {
            match inner.find('}') {
                Some(end) => (&inner[..end], end + 2),
                None => ("", 0),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        match (name.is_empty(), lookup(name)) {
            (false, Some(value)) => out.push_str(&value),
            _ => out.push_str(&rest[at..at + 1 + skip]),
        }
        rest = &after[skip.min(after.len())..];
        if skip == 0 {
            break;
        }
    }
    out.push_str(rest);
    out
}

/// Whether an HTTP path is a health endpoint: `/health`, `/healthz`, `/readyz`, `/livez`,
/// `/ready`, `/live`, `/ping`, `/actuator/health`, `/-/healthy`…
pub(crate) fn is_health_path(path: &str) -> bool {
    path.split('/').any(|segment| {
        matches!(
            segment.to_ascii_lowercase().as_str(),
            "health"
                | "healthz"
                | "healthy"
                | "healthcheck"
                | "health-check"
                | "_health"
                | "ready"
                | "readyz"
                | "readiness"
                | "live"
                | "livez"
                | "liveness"
                | "alive"
                | "ping"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(command: &[&str]) -> Vec<String> {
        command.iter().map(|word| (*word).to_owned()).collect()
    }

    fn judged(command: &[&str]) -> Option<String> {
        cannot_fail(&parse(&words(command))?)
    }

    #[test]
    fn commands_that_cannot_fail() {
        for command in [
            &["true"][..],
            &["/bin/true"],
            &["echo", "ok"],
            &["sh", "-c", "exit 0"],
            &["/bin/sh", "-c", "true"],
            &["cat", "/proc/1/status"],
            &["test", "-d", "/proc/1"],
            &["ls", "/"],
            &["sh", "-c", "curl -f http://localhost:8080/healthz || true"],
            &["sh", "-c", "curl -s localhost:8080/health; exit 0"],
            &["sh", "-c", "wget -q -O- localhost:8080/health | cat"],
            &["sh", "-c", "ps aux | grep nginx"],
            &["sh", "-c", "[ -e /proc/self/status ] && echo alive"],
            &["bash", "-c", "cat /etc/hostname > /dev/null 2>&1"],
            &["sh", "-c", ":"],
        ] {
            assert!(judged(command).is_some(), "{command:?} can fail?");
        }
    }

    #[test]
    fn commands_that_can_fail() {
        for command in [
            &["cat", "/tmp/healthy"][..],
            &["test", "-f", "/tmp/ready"],
            &["sh", "-c", "curl -f http://localhost:8080/healthz"],
            &["sh", "-c", "true && curl -f localhost:8080/health"],
            &["sh", "-ec", "curl -f localhost:8080/health; echo ok"],
            &["sh", "-c", "set -e; curl -f localhost:8080/health; echo ok"],
            &[
                "bash",
                "-o",
                "pipefail",
                "-c",
                "curl -f localhost/health | cat",
            ],
            &["sh", "-c", "ps aux | grep -v grep | grep nginx"],
            &["sh", "-c", "ps aux | grep [n]ginx"],
            &["pgrep", "nginx"],
            &["sh", "-c", "if true; then exit 0; fi"],
            &["sh", "-c", "echo $(curl localhost)"],
            &["exit", "0"],
            &["cat", "/proc"],
            &["test", "-s", "/proc/1/status"],
            &["sh", "-c", "echo ok > /tmp/probe"],
            &["redis-cli", "ping"],
            &["sh", "/probe.sh"],
            &["sh", "-c", "curl localhost &"],
        ] {
            assert!(judged(command).is_none(), "{command:?} cannot fail?");
        }
    }

    #[test]
    fn finds_fetched_urls_and_expands_the_environment() {
        let env = vec![("PAYMENTS_URL".to_owned(), "http://payments:8080".to_owned())];
        let found = fetches(
            &words(&[
                "sh",
                "-c",
                "curl -sf ${PAYMENTS_URL}/health && curl -f http://localhost:8080/ready",
            ]),
            &env,
        );
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].host.as_deref(), Some("payments"));
        assert_eq!(found[0].path, "/health");
        assert_eq!(found[1].host.as_deref(), Some("localhost"));
        let kubelet = fetches(
            &words(&["wget", "-qO-", "http://$(PAYMENTS_HOST)/healthz"]),
            &[],
        );
        assert_eq!(kubelet[0].host, None);
        let grpc = fetches(
            &words(&["/bin/grpc_health_probe", "-addr=ledger:9090"]),
            &[],
        );
        assert_eq!(grpc[0].host.as_deref(), Some("ledger"));
        assert!(grpc[0].grpc_health);
    }

    #[test]
    fn recognises_health_paths() {
        assert!(is_health_path("/health"));
        assert!(is_health_path("/actuator/health/liveness"));
        assert!(is_health_path("/-/healthy"));
        assert!(is_health_path("/api/v1/ping"));
        assert!(!is_health_path("/api/orders"));
        assert!(!is_health_path("/"));
    }
}
