//! Where manifests come from: files, folders (walked for `*.yaml` and `*.yml`) and standard input.

use std::io::Read;
use std::path::{Path, PathBuf};

/// One input text and the name findings use for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// The name shown in findings: the path as given, or `<stdin>`.
    pub name: String,
    /// The whole text.
    pub text: String,
}

/// Why an input could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// A file or folder could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path that failed.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A file is not UTF-8 text.
    #[error("cannot read {path}: not UTF-8 text")]
    NotText {
        /// The path that failed.
        path: String,
    },
}

/// The name standard input gets in findings.
pub const STDIN_NAME: &str = "<stdin>";

impl Source {
    /// A source from a name and text.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            text: text.into(),
        }
    }

    /// Reads one file.
    pub fn from_file(path: &Path) -> Result<Self, SourceError> {
        let display = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|source| SourceError::Io {
            path: display.clone(),
            source,
        })?;
        let text = String::from_utf8(bytes).map_err(|_| SourceError::NotText {
            path: display.clone(),
        })?;
        Ok(Self::new(display, text))
    }

    /// Reads everything from `reader` (standard input) under the name `<stdin>`.
    pub fn from_reader(mut reader: impl Read) -> Result<Self, SourceError> {
        let mut bytes = Vec::new();
        reader
            .read_to_end(&mut bytes)
            .map_err(|source| SourceError::Io {
                path: STDIN_NAME.to_owned(),
                source,
            })?;
        let text = String::from_utf8(bytes).map_err(|_| SourceError::NotText {
            path: STDIN_NAME.to_owned(),
        })?;
        Ok(Self::new(STDIN_NAME, text))
    }

    /// Line `line` (1-based) without its line break, if the text has it.
    pub fn line(&self, line: usize) -> Option<&str> {
        let line = line.checked_sub(1)?;
        self.text
            .split('\n')
            .nth(line)
            .map(|text| text.strip_suffix('\r').unwrap_or(text))
    }
}

/// Expands the paths given on a command line into the files to read, in a stable order:
/// a file is taken as is; a folder is walked recursively for `*.yaml` and `*.yml`, skipping
/// hidden entries, in name order; `-` stands for standard input and is returned as `None`.
pub fn expand_paths(paths: &[PathBuf]) -> Result<Vec<Option<PathBuf>>, SourceError> {
    let mut inputs = Vec::new();
    for path in paths {
        if path.as_os_str() == "-" {
            inputs.push(None);
            continue;
        }
        let metadata = std::fs::metadata(path).map_err(|source| SourceError::Io {
            path: path.display().to_string(),
            source,
        })?;
        if metadata.is_dir() {
            let mut files = Vec::new();
            walk(path, &mut files)?;
            files.sort();
            inputs.extend(files.into_iter().map(Some));
        } else {
            inputs.push(Some(path.clone()));
        }
    }
    Ok(inputs)
}

fn walk(folder: &Path, files: &mut Vec<PathBuf>) -> Result<(), SourceError> {
    let io_error = |source| SourceError::Io {
        path: folder.display().to_string(),
        source,
    };
    for entry in std::fs::read_dir(folder).map_err(io_error)? {
        let entry = entry.map_err(io_error)?;
        let path = entry.path();
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if hidden {
            continue;
        }
        let file_type = entry.file_type().map_err(io_error)?;
        if file_type.is_dir() {
            walk(&path, files)?;
        } else if path
            .extension()
            .is_some_and(|extension| extension == "yaml" || extension == "yml")
        {
            files.push(path);
        }
    }
    Ok(())
}

/// Reads every input named by `paths` (see [`expand_paths`]); `stdin` is read for `-`.
pub fn read_inputs(paths: &[PathBuf], stdin: impl Read) -> Result<Vec<Source>, SourceError> {
    let mut stdin = Some(stdin);
    let mut sources = Vec::new();
    for input in expand_paths(paths)? {
        match input {
            Some(path) => sources.push(Source::from_file(&path)?),
            None => {
                if let Some(reader) = stdin.take() {
                    sources.push(Source::from_reader(reader)?);
                }
            }
        }
    }
    Ok(sources)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_lines_without_breaks() {
        let source = Source::new("x", "a: 1\r\nb: 2\n");
        assert_eq!(source.line(1), Some("a: 1"));
        assert_eq!(source.line(2), Some("b: 2"));
        assert_eq!(source.line(0), None);
    }

    #[test]
    fn walks_folders_for_yaml_in_name_order() {
        let dir = std::env::temp_dir().join(format!("probity-lint-walk-{}", std::process::id()));
        let nested = dir.join("b");
        std::fs::create_dir_all(&nested).unwrap();
        std::fs::write(dir.join("z.yaml"), "").unwrap();
        std::fs::write(nested.join("a.yml"), "").unwrap();
        std::fs::write(dir.join("notes.txt"), "").unwrap();
        std::fs::write(dir.join(".hidden.yaml"), "").unwrap();
        let inputs = expand_paths(std::slice::from_ref(&dir)).unwrap();
        let names: Vec<_> = inputs
            .iter()
            .map(|input| {
                input
                    .as_ref()
                    .unwrap()
                    .strip_prefix(&dir)
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(names, [PathBuf::from("b/a.yml"), PathBuf::from("z.yaml")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn names_the_missing_path() {
        let error = expand_paths(&[PathBuf::from("/no/such/manifest.yaml")]).unwrap_err();
        assert!(
            error.to_string().contains("/no/such/manifest.yaml"),
            "{error}"
        );
    }
}
