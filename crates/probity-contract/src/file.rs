//! Reading a file a person named on the command line or in a configuration: a scenario, an
//! agent configuration, a drill file, a contract, a manifest.
//!
//! Every tool reads such paths the same way, through [`read_text`]: the path must be a regular
//! file, checked before it is opened (opening a FIFO blocks until a writer comes, and a device
//! such as `/dev/zero` can be read for ever); at most a cap of bytes is read; and the bytes must
//! be UTF-8 text. The errors name neither the path nor the kind of file the tool wanted: the
//! caller says both (`agent.toml is a FIFO, not a regular file: give the path of a
//! configuration file`).

use std::fmt;
use std::io::Read;
use std::path::Path;

/// The most bytes read of a scenario, configuration, drill or contract file (1 MiB): far more
/// than any real one, small enough that a log file given by mistake is refused at once.
pub const MAX_TEXT_BYTES: u64 = 1 << 20;

/// What a path that is not a regular file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileKind {
    /// A directory.
    Directory,
    /// A named pipe.
    Fifo,
    /// A Unix socket.
    Socket,
    /// A character or block device.
    Device,
    /// Anything else that is not a regular file.
    Other,
}

impl FileKind {
    /// The kind in words, with its article: `a FIFO`, `a directory`.
    pub fn as_str(self) -> &'static str {
        match self {
            FileKind::Directory => "a directory",
            FileKind::Fifo => "a FIFO",
            FileKind::Socket => "a socket",
            FileKind::Device => "a device",
            FileKind::Other => "not a file",
        }
    }

    fn of(metadata: &std::fs::Metadata) -> FileKind {
        use std::os::unix::fs::FileTypeExt;
        let kind = metadata.file_type();
        if kind.is_dir() {
            FileKind::Directory
        } else if kind.is_fifo() {
            FileKind::Fifo
        } else if kind.is_socket() {
            FileKind::Socket
        } else if kind.is_block_device() || kind.is_char_device() {
            FileKind::Device
        } else {
            FileKind::Other
        }
    }
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why [`read_text`] read no text. The message names neither the path nor the file's purpose:
/// the caller adds both.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The operating system refused: no such file, no permission.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// Not a regular file; refused before it was opened.
    #[error("{0}, not a regular file")]
    NotAFile(FileKind),
    /// Larger than the cap given.
    #[error("larger than {}, the most read of such a file", bytes_text(*.limit))]
    TooLarge {
        /// The cap, in bytes.
        limit: u64,
    },
    /// Not UTF-8 text.
    #[error("not UTF-8 text (invalid byte at offset {offset})")]
    NotText {
        /// Where the first invalid byte is.
        offset: usize,
    },
}

/// `1024 KiB`, `100 bytes`: one unit for every cap, so caps compare at a glance.
fn bytes_text(bytes: u64) -> String {
    if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
    }
}

/// Reads the whole regular file at `path` as UTF-8 text, refusing one larger than `max_bytes`.
///
/// A directory, FIFO, socket or device is refused from its metadata, before it is opened:
/// opening a FIFO with no writer would block for ever.
///
/// ```
/// use probity_contract::file::{FileKind, ReadError, read_text};
/// use std::path::Path;
///
/// let error = read_text(Path::new("/dev/zero"), 1024).unwrap_err();
/// assert!(matches!(error, ReadError::NotAFile(FileKind::Device)));
/// assert_eq!(error.to_string(), "a device, not a regular file");
/// ```
pub fn read_text(path: &Path, max_bytes: u64) -> Result<String, ReadError> {
    let metadata = std::fs::metadata(path)?;
    if !metadata.is_file() {
        return Err(ReadError::NotAFile(FileKind::of(&metadata)));
    }
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Err(ReadError::TooLarge { limit: max_bytes });
    }
    String::from_utf8(bytes).map_err(|error| ReadError::NotText {
        offset: error.utf8_error().valid_up_to(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::sync::mpsc;
    use std::time::Duration;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("probity-contract-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// `read_text` on another thread, given a generous deadline: a read that blocked would fail
    /// the test rather than hang it.
    fn read_within_deadline(path: PathBuf) -> Result<String, ReadError> {
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = sender.send(read_text(&path, MAX_TEXT_BYTES));
        });
        receiver
            .recv_timeout(Duration::from_secs(10))
            .expect("read_text returned rather than blocked")
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = scratch("fifo");
        let fifo = dir.join("config.toml");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        // No writer ever comes: opening it would block for ever.
        let error = read_within_deadline(fifo).unwrap_err();
        assert!(
            matches!(error, ReadError::NotAFile(FileKind::Fifo)),
            "{error}"
        );
        assert_eq!(error.to_string(), "a FIFO, not a regular file");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_device_is_refused() {
        let error = read_within_deadline(PathBuf::from("/dev/zero")).unwrap_err();
        assert!(
            matches!(error, ReadError::NotAFile(FileKind::Device)),
            "{error}"
        );
        assert_eq!(error.to_string(), "a device, not a regular file");
    }

    #[test]
    fn a_directory_is_refused() {
        let dir = scratch("dir");
        let error = read_text(&dir, MAX_TEXT_BYTES).unwrap_err();
        assert!(
            matches!(error, ReadError::NotAFile(FileKind::Directory)),
            "{error}"
        );
        assert_eq!(error.to_string(), "a directory, not a regular file");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_regular_file_is_read_up_to_the_cap() {
        let dir = scratch("cap");
        let file = dir.join("scenario.yaml");
        std::fs::write(&file, "name: x\n").unwrap();
        assert_eq!(read_text(&file, 8).unwrap(), "name: x\n");
        let error = read_text(&file, 7).unwrap_err();
        assert!(matches!(error, ReadError::TooLarge { limit: 7 }), "{error}");
        assert_eq!(
            error.to_string(),
            "larger than 7 bytes, the most read of such a file"
        );
        std::fs::write(&file, vec![b'#'; MAX_TEXT_BYTES as usize + 1]).unwrap();
        let error = read_text(&file, MAX_TEXT_BYTES).unwrap_err();
        assert!(
            error.to_string().contains("larger than 1024 KiB"),
            "{error}"
        );
        std::fs::write(&file, b"ok\n\xff").unwrap();
        let error = read_text(&file, MAX_TEXT_BYTES).unwrap_err();
        assert_eq!(
            error.to_string(),
            "not UTF-8 text (invalid byte at offset 3)"
        );
        let error = read_text(&dir.join("absent.yaml"), MAX_TEXT_BYTES).unwrap_err();
        assert!(
            matches!(error, ReadError::Io(ref io) if io.kind() == std::io::ErrorKind::NotFound)
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn sizes_are_written_in_kib_when_whole() {
        assert_eq!(bytes_text(1 << 20), "1024 KiB");
        assert_eq!(bytes_text(1536 << 10), "1536 KiB");
        assert_eq!(bytes_text(64 << 10), "64 KiB");
        assert_eq!(bytes_text(100), "100 bytes");
    }
}
