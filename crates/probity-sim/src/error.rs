//! Why a scenario could not be loaded.

use std::path::PathBuf;

/// A scenario file that could not be read, parsed or validated.
///
/// Every variant names the file; parse and validation errors also name the field (a dotted
/// path such as `container.livenessProbe.periodSeconds`) and say what is wrong with it.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("{file}: cannot read: {source}")]
    Read {
        /// The scenario file.
        file: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid YAML or TOML.
    #[error("{file}: not valid {format}: {reason}")]
    Syntax {
        /// The scenario file.
        file: PathBuf,
        /// `YAML` or `TOML`.
        format: &'static str,
        /// What the parser reported, with its line and column.
        reason: String,
    },
    /// A field is missing, unknown, mistyped or has a value the model cannot accept.
    #[error("{file}: {field}: {reason}")]
    Field {
        /// The scenario file.
        file: PathBuf,
        /// The dotted path of the offending field (`.` for the document itself).
        field: String,
        /// What is wrong and, where it helps, what would be right.
        reason: String,
    },
}

impl ScenarioError {
    /// The dotted field path, for [`ScenarioError::Field`].
    pub fn field(&self) -> Option<&str> {
        match self {
            ScenarioError::Field { field, .. } => Some(field),
            _ => None,
        }
    }
}

/// A validation failure before the file name is attached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Invalid {
    pub(crate) field: String,
    pub(crate) reason: String,
}

impl Invalid {
    pub(crate) fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

impl From<probity_contract::kube::Violation> for Invalid {
    fn from(violation: probity_contract::kube::Violation) -> Self {
        Invalid::new(violation.field, violation.message)
    }
}
