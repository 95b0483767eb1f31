//! Reading a drill file: the bounded read, the YAML, and the errors that name the file and
//! line.

use super::{DrillFile, MAX_FILE_BYTES};
use std::path::{Path, PathBuf};

/// Why a drill file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// Reading the file failed.
    #[error("{file}: {message}")]
    Read {
        /// The file.
        file: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The file is not a valid drill file.
    #[error("{file}{}: {message}", line.map(|line| format!(":{line}")).unwrap_or_default())]
    Invalid {
        /// The file.
        file: PathBuf,
        /// 1-based line, when known.
        line: Option<usize>,
        /// What is wrong, naming the key.
        message: String,
    },
}

impl FileError {
    /// The line the error is about.
    pub fn line(&self) -> Option<usize> {
        match self {
            FileError::Invalid { line, .. } => *line,
            FileError::Read { .. } => None,
        }
    }
}

/// A drill file, read and checked, with where it came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The file's contents.
    pub file: DrillFile,
    /// Where it was read from.
    pub path: PathBuf,
    /// The folder relative paths in it are resolved against.
    pub dir: PathBuf,
}

impl Loaded {
    /// The app's working directory.
    pub fn workdir(&self) -> PathBuf {
        match &self.file.app.workdir {
            Some(dir) => self.dir.join(dir),
            None => self.dir.clone(),
        }
    }
}

/// Reads at most [`MAX_FILE_BYTES`] of a text file, refusing a path that is not a regular file
/// (a FIFO, a device, a directory) before opening it. The message does not name the path: the
/// caller does.
pub(crate) fn read_text(path: &Path) -> Result<String, String> {
    probity_contract::file::read_text(path, MAX_FILE_BYTES).map_err(|error| error.to_string())
}

impl DrillFile {
    /// Reads and checks the drill file at `path`.
    pub fn load(path: &Path) -> Result<Loaded, FileError> {
        let text = read_text(path).map_err(|message| FileError::Read {
            file: path.to_owned(),
            message,
        })?;
        let file = DrillFile::parse(&text, path)?;
        let dir = path
            .parent()
            .filter(|dir| !dir.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_owned);
        Ok(Loaded {
            file,
            path: path.to_owned(),
            dir,
        })
    }

    /// Parses and checks drill-file text; `file` names it in errors.
    pub fn parse(text: &str, file: &Path) -> Result<DrillFile, FileError> {
        if text.trim().is_empty() {
            return Err(FileError::Invalid {
                file: file.to_owned(),
                line: None,
                message: "empty drill file: it needs at least service, app and traffic".into(),
            });
        }
        let parsed: DrillFile = serde_saphyr::from_str(text).map_err(|error| {
            let location = error.location();
            FileError::Invalid {
                file: file.to_owned(),
                line: location.map(|at| at.line() as usize),
                message: yaml_message(&error),
            }
        })?;
        parsed.check(text, file)?;
        Ok(parsed)
    }
}

/// The message of a YAML error without serde-saphyr's own location and snippet.
pub(super) fn yaml_message(error: &serde_saphyr::Error) -> String {
    let text = error.without_snippet().to_string();
    let first = text.lines().next().unwrap_or_default().trim();
    let first = match first.rfind(" at line ") {
        Some(index) => &first[..index],
        None => first,
    };
    first.trim_end_matches('.').to_owned()
}

/// The first line that declares `needle` as a key (`needle:`) or holds it as a value.
pub(crate) fn find_line(text: &str, needle: &str) -> Option<usize> {
    let declares = |line: &str| {
        let trimmed = line.trim_start().trim_start_matches("- ");
        trimmed.starts_with(&format!("{needle}:"))
            || trimmed.starts_with(&format!("\"{needle}\":"))
            || trimmed.starts_with(&format!("'{needle}':"))
    };
    let not_comment = |line: &&str| !line.trim_start().starts_with('#');
    text.lines()
        .position(|line| not_comment(&line) && declares(line))
        .or_else(|| {
            text.lines()
                .position(|line| not_comment(&line) && line.contains(needle))
        })
        .map(|index| index + 1)
}
