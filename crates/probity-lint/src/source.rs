//! Where manifests come from: files, folders (walked for `*.yaml` and `*.yml`) and standard input.
//!
//! Every input is read up to a size limit ([`DEFAULT_MAX_INPUT_BYTES`] unless told otherwise),
//! and devices are refused before a byte is read: `/dev/zero` or `/dev/urandom` given by mistake
//! is an error naming the path, never an endless read. One unreadable input does not stop the
//! others from being read.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The default limit on one input's size: far above any real manifest (a 10,000-document Helm
/// render is a few megabytes), low enough that a wrong path cannot exhaust memory.
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

/// One input text and the name findings use for it.
#[derive(Debug, Clone)]
pub struct Source {
    /// The name shown in findings: the path as given, or `<stdin>`.
    pub name: String,
    /// The whole text.
    pub text: String,
    /// Byte offset of the start of every line, built on first use.
    line_starts: OnceLock<Vec<usize>>,
}

impl PartialEq for Source {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.text == other.text
    }
}

impl Eq for Source {}

/// Why an input could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// A file or folder could not be opened or read.
    #[error("cannot read {path}: {reason}")]
    Io {
        /// The path that failed.
        path: String,
        /// What the operating system said.
        reason: std::io::Error,
    },
    /// An input is not UTF-8 text.
    #[error(
        "cannot read {path}: not UTF-8 text (byte 0x{byte:02X} at byte offset {offset}, line {line})"
    )]
    NotText {
        /// The path that failed.
        path: String,
        /// The byte offset of the first byte that is not UTF-8.
        offset: usize,
        /// The 1-based line that byte is on.
        line: usize,
        /// The offending byte.
        byte: u8,
    },
    /// An input is larger than the limit.
    #[error(
        "cannot read {path}: larger than the input limit of {} (raise it with --max-input-size)",
        size(*limit)
    )]
    TooLarge {
        /// The path that failed.
        path: String,
        /// The limit in bytes.
        limit: u64,
    },
    /// A path names a device, socket or other special file rather than a file or a pipe.
    #[error("cannot read {path}: it is {what}, not a file")]
    NotAFile {
        /// The path that failed.
        path: String,
        /// What the path is: "a character device"…
        what: &'static str,
    },
}

/// A byte count for messages: "64 MiB", "512 KiB", "100 bytes".
fn size(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

/// The name standard input gets in findings.
pub const STDIN_NAME: &str = "<stdin>";

impl Source {
    /// A source from a name and text.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            text: text.into(),
            line_starts: OnceLock::new(),
        }
    }

    /// Reads one file of at most `limit` bytes. Devices (`/dev/zero`), sockets and folders are
    /// refused; pipes (`<(helm template …)`) are read up to the limit.
    pub fn from_file(path: &Path, limit: u64) -> Result<Self, SourceError> {
        let display = path.display().to_string();
        let io_error = |reason| SourceError::Io {
            path: display.clone(),
            reason,
        };
        let metadata = std::fs::metadata(path).map_err(io_error)?;
        if let Some(what) = special_file(&metadata) {
            return Err(SourceError::NotAFile {
                path: display,
                what,
            });
        }
        if metadata.is_file() && metadata.len() > limit {
            return Err(SourceError::TooLarge {
                path: display,
                limit,
            });
        }
        let file = std::fs::File::open(path).map_err(io_error)?;
        let text = read_limited(file, &display, limit)?;
        Ok(Self::new(display, text))
    }

    /// Reads at most `limit` bytes from `reader` (standard input) under the name `<stdin>`.
    pub fn from_reader(reader: impl Read, limit: u64) -> Result<Self, SourceError> {
        let text = read_limited(reader, STDIN_NAME, limit)?;
        Ok(Self::new(STDIN_NAME, text))
    }

    /// Line `line` (1-based) without its line break, if the text has it.
    pub fn line(&self, line: usize) -> Option<&str> {
        let starts = self.line_starts();
        let start = *starts.get(line.checked_sub(1)?)?;
        let end = starts.get(line).map_or(self.text.len(), |&next| next - 1);
        let text = &self.text[start..end.max(start)];
        Some(text.strip_suffix('\r').unwrap_or(text))
    }

    /// The byte offset at which line `line` (1-based) starts.
    pub fn line_start(&self, line: usize) -> Option<usize> {
        self.line_starts().get(line.checked_sub(1)?).copied()
    }

    /// The number of lines (a text without a final line break still ends with a line).
    pub fn line_count(&self) -> usize {
        self.line_starts().len()
    }

    fn line_starts(&self) -> &[usize] {
        self.line_starts.get_or_init(|| {
            let mut starts = vec![0];
            starts.extend(
                self.text
                    .bytes()
                    .enumerate()
                    .filter(|(_, byte)| *byte == b'\n')
                    .map(|(index, _)| index + 1),
            );
            starts
        })
    }
}

/// What a path is when it is not something to read a manifest from.
fn special_file(metadata: &std::fs::Metadata) -> Option<&'static str> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let file_type = metadata.file_type();
        if file_type.is_char_device() {
            return Some("a character device");
        }
        if file_type.is_block_device() {
            return Some("a block device");
        }
        if file_type.is_socket() {
            return Some("a socket");
        }
    }
    if metadata.is_dir() {
        return Some("a folder");
    }
    None
}

/// Reads `reader` to its end, failing once more than `limit` bytes have come, and checks the
/// bytes are UTF-8 text.
fn read_limited(reader: impl Read, path: &str, limit: u64) -> Result<String, SourceError> {
    let mut bytes = Vec::new();
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|reason| SourceError::Io {
            path: path.to_owned(),
            reason,
        })?;
    if bytes.len() as u64 > limit {
        return Err(SourceError::TooLarge {
            path: path.to_owned(),
            limit,
        });
    }
    String::from_utf8(bytes).map_err(|error| {
        let offset = error.utf8_error().valid_up_to();
        let bytes = error.as_bytes();
        SourceError::NotText {
            path: path.to_owned(),
            offset,
            line: 1 + bytes[..offset]
                .iter()
                .filter(|byte| **byte == b'\n')
                .count(),
            byte: bytes[offset],
        }
    })
}

/// Expands the paths given on a command line into the files to read, in a stable order:
/// a file is taken as is; a folder is walked recursively for `*.yaml` and `*.yml`, skipping
/// hidden entries, in name order; `-` stands for standard input and is returned as `None`.
/// A path that cannot be read is an error in the second list; the others are still expanded.
pub fn expand_paths(paths: &[PathBuf]) -> (Vec<Option<PathBuf>>, Vec<SourceError>) {
    let mut inputs = Vec::new();
    let mut errors = Vec::new();
    for path in paths {
        if path.as_os_str() == "-" {
            inputs.push(None);
            continue;
        }
        match std::fs::metadata(path) {
            Err(reason) => errors.push(SourceError::Io {
                path: path.display().to_string(),
                reason,
            }),
            Ok(metadata) if metadata.is_dir() => {
                let mut files = Vec::new();
                walk(path, &mut files, &mut errors);
                files.sort();
                inputs.extend(files.into_iter().map(Some));
            }
            Ok(_) => inputs.push(Some(path.clone())),
        }
    }
    (inputs, errors)
}

fn walk(folder: &Path, files: &mut Vec<PathBuf>, errors: &mut Vec<SourceError>) {
    let io_error = |reason| SourceError::Io {
        path: folder.display().to_string(),
        reason,
    };
    let entries = match std::fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(reason) => return errors.push(io_error(reason)),
    };
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            Err(reason) => {
                errors.push(io_error(reason));
                continue;
            }
        };
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        // Symbolic links to folders are not followed (a link to an ancestor would never end).
        match entry.file_type() {
            Ok(file_type) if file_type.is_dir() => walk(&path, files, errors),
            Ok(_) => {
                if path
                    .extension()
                    .is_some_and(|extension| extension == "yaml" || extension == "yml")
                {
                    files.push(path);
                }
            }
            Err(reason) => errors.push(SourceError::Io {
                path: path.display().to_string(),
                reason,
            }),
        }
    }
}

/// What [`read_inputs`] read, and what it could not.
#[derive(Debug, Default)]
pub struct Inputs {
    /// The inputs read, in command-line order.
    pub sources: Vec<Source>,
    /// The inputs that could not be read.
    pub errors: Vec<SourceError>,
}

/// Reads every input named by `paths` (see [`expand_paths`]), each up to `limit` bytes;
/// `stdin` is read for `-`. An input that cannot be read is recorded and the others are read.
pub fn read_inputs(paths: &[PathBuf], stdin: impl Read, limit: u64) -> Inputs {
    let (expanded, errors) = expand_paths(paths);
    let mut inputs = Inputs {
        sources: Vec::with_capacity(expanded.len()),
        errors,
    };
    let mut stdin = Some(stdin);
    for input in expanded {
        let read = match input {
            Some(path) => Source::from_file(&path, limit),
            None => match stdin.take() {
                Some(reader) => Source::from_reader(reader, limit),
                None => continue,
            },
        };
        match read {
            Ok(source) => inputs.sources.push(source),
            Err(error) => inputs.errors.push(error),
        }
    }
    inputs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_lines_without_breaks() {
        let source = Source::new("x", "a: 1\r\nb: 2\n");
        assert_eq!(source.line(1), Some("a: 1"));
        assert_eq!(source.line(2), Some("b: 2"));
        assert_eq!(source.line(3), Some(""));
        assert_eq!(source.line(4), None);
        assert_eq!(source.line(0), None);
        assert_eq!(source.line_start(2), Some(6));
        let unterminated = Source::new("y", "a\nlast");
        assert_eq!(unterminated.line(2), Some("last"));
        assert_eq!(unterminated.line_count(), 2);
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
        let (inputs, errors) = expand_paths(std::slice::from_ref(&dir));
        assert!(errors.is_empty(), "{errors:?}");
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
    fn names_the_missing_path_once_and_reads_the_others() {
        let dir = std::env::temp_dir().join(format!("probity-lint-miss-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.yaml");
        std::fs::write(&good, "a: 1\n").unwrap();
        let inputs = read_inputs(
            &[PathBuf::from("/no/such/manifest.yaml"), good],
            std::io::empty(),
            DEFAULT_MAX_INPUT_BYTES,
        );
        assert_eq!(inputs.sources.len(), 1);
        assert_eq!(inputs.errors.len(), 1);
        let message = inputs.errors[0].to_string();
        assert!(message.contains("/no/such/manifest.yaml"), "{message}");
        assert_eq!(message.matches("os error").count(), 1, "{message}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn refuses_devices_without_reading_them() {
        let error = Source::from_file(Path::new("/dev/zero"), DEFAULT_MAX_INPUT_BYTES).unwrap_err();
        assert!(
            error.to_string() == "cannot read /dev/zero: it is a character device, not a file",
            "{error}"
        );
    }

    #[test]
    fn caps_what_it_reads() {
        let error = Source::from_reader(std::io::repeat(b'a'), 1024).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("larger than the input limit of 1 KiB"),
            "{error}"
        );
        assert!(Source::from_reader(&b"a: 1\n"[..], 5).is_ok());
        assert!(Source::from_reader(&b"a: 1\n"[..], 4).is_err());
    }

    #[test]
    fn names_the_byte_that_is_not_text() {
        let error = Source::from_reader(&b"a: 1\nb: \xff\n"[..], 100).unwrap_err();
        assert_eq!(
            error.to_string(),
            "cannot read <stdin>: not UTF-8 text (byte 0xFF at byte offset 8, line 2)"
        );
    }
}
