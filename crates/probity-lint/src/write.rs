//! Writing fixed manifests back, so that `--fix` never damages what it touches.
//!
//! Every file is checked before any is written: a file whose content changed since it was read
//! (someone appended a line while the linter ran), a read-only file, and a symbolic link whose
//! target lies outside the folder given on the command line are refused, and then nothing is
//! written at all. Each file is written to a temporary file beside its target, flushed to
//! disk, and renamed over the target: a reader sees the old text or the new, never half of
//! one, and a failure leaves the original as it was. A link inside the folder has its target
//! rewritten, and stays a link.

use crate::fix::Fixed;
use crate::source::Source;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Why a fixed file was not written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The file's content is no longer what was read and fixed.
    #[error("{path}: changed since it was read; not written (run the fix again)")]
    Changed {
        /// The file as named on input.
        path: String,
    },
    /// The file has no write permission.
    #[error("{path}: read-only; not written")]
    ReadOnly {
        /// The file as named on input.
        path: String,
    },
    /// A symbolic link leading out of the folder it was found in.
    #[error("{path}: a link to {target}, outside {folder}; not written")]
    OutsideFolder {
        /// The file as named on input.
        path: String,
        /// Where the link leads.
        target: String,
        /// The folder given on the command line.
        folder: String,
    },
    /// Reading, writing or renaming failed.
    #[error("{path}: cannot write the fixes: {reason}")]
    Io {
        /// The file as named on input.
        path: String,
        /// What the system said.
        reason: std::io::Error,
    },
}

/// Why `--fix` did not write every file it fixed, and which it did write.
#[derive(Debug)]
pub struct WriteFailure {
    /// The inputs written before the failure (renamed into place, each whole). Empty when a
    /// check refused before anything was written, which is the usual case: only a rename that
    /// fails after others succeeded (a full disk, a file removed meanwhile) leaves some written.
    pub written: Vec<usize>,
    /// Every reason a file was not written.
    pub errors: Vec<WriteError>,
}

/// One file ready to be renamed into place.
#[derive(Debug)]
struct Staged {
    index: usize,
    temporary: PathBuf,
    target: PathBuf,
}

/// Writes every input that `fixed` changed: the indices of the inputs written, or every reason
/// a file could not be with those that were (none, unless a rename failed after others).
/// `roots` are the paths given on the command line (files and folders); `limit` the input size
/// limit the inputs were read with.
pub fn write_fixed(
    original: &[Source],
    fixed: &Fixed,
    roots: &[PathBuf],
    limit: u64,
) -> Result<Vec<usize>, WriteFailure> {
    stage_fixed(original, fixed, roots, limit)?.commit(original)
}

/// Every changed file checked and its new text written to a temporary file beside it, nothing
/// renamed yet; or every reason a file could not be (then no temporary file is left).
pub fn stage_fixed(
    original: &[Source],
    fixed: &Fixed,
    roots: &[PathBuf],
    limit: u64,
) -> Result<StagedFixes, WriteFailure> {
    let mut staged = Vec::new();
    let mut errors = Vec::new();
    for (index, source) in original.iter().enumerate() {
        if !fixed.changed(original, index) {
            continue;
        }
        match stage(index, source, &fixed.sources[index].text, roots, limit) {
            Ok(file) => staged.push(file),
            Err(error) => errors.push(error),
        }
    }
    if !errors.is_empty() {
        for file in staged {
            let _ = std::fs::remove_file(&file.temporary);
        }
        return Err(WriteFailure {
            written: Vec::new(),
            errors,
        });
    }
    Ok(StagedFixes(staged))
}

/// Fixed files written beside their targets, to be renamed into place by [`StagedFixes::commit`].
#[derive(Debug)]
pub struct StagedFixes(Vec<Staged>);

impl StagedFixes {
    /// The temporary files, in the order they will be renamed.
    pub fn temporaries(&self) -> impl Iterator<Item = &Path> {
        self.0.iter().map(|file| file.temporary.as_path())
    }

    /// Renames each temporary file over its target, in order; at the first failure the rest
    /// are removed and the failure says which were written. `original` names the inputs.
    pub fn commit(self, original: &[Source]) -> Result<Vec<usize>, WriteFailure> {
        let mut written = Vec::new();
        let mut staged = self.0.into_iter();
        while let Some(file) = staged.next() {
            if let Err(reason) = std::fs::rename(&file.temporary, &file.target) {
                let _ = std::fs::remove_file(&file.temporary);
                for rest in staged {
                    let _ = std::fs::remove_file(&rest.temporary);
                }
                return Err(WriteFailure {
                    written,
                    errors: vec![WriteError::Io {
                        path: original[file.index].name.clone(),
                        reason,
                    }],
                });
            }
            written.push(file.index);
        }
        Ok(written)
    }
}

/// Checks one file and writes its new text to a temporary file beside its target.
fn stage(
    index: usize,
    source: &Source,
    text: &str,
    roots: &[PathBuf],
    limit: u64,
) -> Result<Staged, WriteError> {
    let path = Path::new(&source.name);
    let io = |reason| WriteError::Io {
        path: source.name.clone(),
        reason,
    };
    let target = std::fs::canonicalize(path).map_err(io)?;
    if std::fs::symlink_metadata(path)
        .map_err(io)?
        .file_type()
        .is_symlink()
        || path_has_link(path)
    {
        let folder = folder_of(path, roots);
        let canonical_folder = std::fs::canonicalize(&folder).map_err(io)?;
        if !target.starts_with(&canonical_folder) {
            return Err(WriteError::OutsideFolder {
                path: source.name.clone(),
                target: target.display().to_string(),
                folder: folder.display().to_string(),
            });
        }
    }
    let metadata = std::fs::metadata(&target).map_err(io)?;
    if metadata.permissions().readonly() {
        return Err(WriteError::ReadOnly {
            path: source.name.clone(),
        });
    }
    // Read again just before writing: the fixes are of the text read then.
    match Source::from_file(&target, limit) {
        Ok(now) if now.text == source.text => {}
        Ok(_) => {
            return Err(WriteError::Changed {
                path: source.name.clone(),
            });
        }
        Err(_) => {
            return Err(WriteError::Changed {
                path: source.name.clone(),
            });
        }
    }
    let directory = target.parent().unwrap_or(Path::new("."));
    let file_name = target
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = directory.join(format!(
        ".{file_name}.probity-fix-{}-{index}",
        std::process::id()
    ));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)?;
        file.write_all(text.as_bytes())?;
        file.set_permissions(metadata.permissions())?;
        file.sync_all()
    })();
    if let Err(reason) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(io(reason));
    }
    Ok(Staged {
        index,
        temporary,
        target,
    })
}

/// Whether a folder on the way to `path` (below the current one) is a symbolic link.
fn path_has_link(path: &Path) -> bool {
    path.ancestors()
        .skip(1)
        .filter(|ancestor| !ancestor.as_os_str().is_empty())
        .any(|ancestor| {
            std::fs::symlink_metadata(ancestor)
                .is_ok_and(|metadata| metadata.file_type().is_symlink())
        })
}

/// The folder `path` was found in: the longest root that contains it (a root that is a file
/// stands for its own folder).
fn folder_of(path: &Path, roots: &[PathBuf]) -> PathBuf {
    roots
        .iter()
        .filter(|root| path.starts_with(root))
        .max_by_key(|root| root.components().count())
        .map(|root| {
            if root.is_dir() {
                root.clone()
            } else {
                root.parent()
                    .filter(|parent| !parent.as_os_str().is_empty())
                    .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
            }
        })
        .unwrap_or_else(|| {
            path.parent()
                .filter(|parent| !parent.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
        })
}
