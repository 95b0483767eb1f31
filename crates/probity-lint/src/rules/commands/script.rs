//! A shell script read into statements, and-or lists, pipelines and words, honouring quotes.

/// A command's words after quote removal, or `None` when the script is beyond this reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Script {
    /// Sequences of and-or lists of pipelines of simple commands.
    pub(super) statements: Vec<AndOr>,
    /// `set -e` (or `sh -e`): a failing statement ends the script.
    pub(super) errexit: bool,
    /// `set -o pipefail`: a pipeline fails when any of its commands does.
    pub(super) pipefail: bool,
    /// Whether a shell runs it (so its own command line is in the process list).
    pub(super) shell: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct AndOr {
    pub(super) first: Pipeline,
    pub(super) rest: Vec<(Operator, Pipeline)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Operator {
    And,
    Or,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Pipeline {
    pub(super) commands: Vec<Vec<String>>,
}

/// Shells whose `-c` argument is a script.
pub(super) const SHELLS: &[&str] = &["sh", "bash", "ash", "dash", "zsh", "ksh", "mksh"];

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

pub(super) fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// Splits a script into statements, and-or lists, pipelines and words, honouring quotes.
pub(super) fn parse_script(script: &str) -> Option<Script> {
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
pub(super) fn finish_statement(
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
