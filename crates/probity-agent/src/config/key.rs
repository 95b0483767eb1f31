//! Map keys with their position, in whichever format is being read.
//!
//! serde's `MapAccess` does not say where a key stands, and an error raised by a visitor is
//! placed by the parser wherever it happens to be (for TOML, the table's header). So entry keys
//! are read as spanned values — `toml::Spanned` or `serde_saphyr::Spanned`, picked by the
//! format being parsed — and an error about a key is reported at the key.

use super::Format;
use serde::de::{Deserialize, Deserializer};
use std::cell::Cell;

thread_local! {
    static FORMAT: Cell<Option<Format>> = const { Cell::new(None) };
    static ERROR_AT: Cell<Option<At>> = const { Cell::new(None) };
    static ENTRY_AT: Cell<Option<At>> = const { Cell::new(None) };
}

/// An error about the entry being read as a whole (a missing kind), reported at its name.
pub(super) fn entry_error<E: serde::de::Error>(message: impl std::fmt::Display) -> E {
    if let Some(at) = ENTRY_AT.with(Cell::get) {
        ERROR_AT.with(|cell| cell.set(Some(at)));
    }
    E::custom(message)
}

/// Runs `parse` with `format` recorded for [`Key`]; returns the position of the last key an
/// error was raised at, if any.
pub(super) fn with_format<T>(format: Format, parse: impl FnOnce() -> T) -> (T, Option<At>) {
    FORMAT.with(|cell| cell.set(Some(format)));
    ERROR_AT.with(|cell| cell.set(None));
    let result = parse();
    FORMAT.with(|cell| cell.set(None));
    (result, ERROR_AT.with(Cell::take))
}

/// Where a key stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum At {
    /// 1-based line and column (YAML).
    LineColumn(usize, usize),
    /// Byte offset into the text (TOML).
    Offset(usize),
}

/// A key and where it stands, when the format says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Key {
    pub(super) name: String,
    at: Option<At>,
}

impl Key {
    /// An error about this key, reported at its position.
    pub(super) fn error<E: serde::de::Error>(&self, message: impl std::fmt::Display) -> E {
        if let Some(at) = self.at {
            ERROR_AT.with(|cell| cell.set(Some(at)));
        }
        E::custom(message)
    }

    /// Marks this key as the name of the entry about to be read.
    pub(super) fn enter(&self) {
        ENTRY_AT.with(|cell| cell.set(self.at));
    }
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match FORMAT.with(Cell::get) {
            Some(Format::Toml) => {
                let spanned = toml::Spanned::<String>::deserialize(deserializer)?;
                let offset = spanned.span().start;
                Ok(Key {
                    name: spanned.into_inner(),
                    at: Some(At::Offset(offset)),
                })
            }
            Some(Format::Yaml) => {
                let spanned = serde_saphyr::Spanned::<String>::deserialize(deserializer)?;
                let line = spanned.referenced.line() as usize;
                let column = spanned.referenced.column() as usize;
                Ok(Key {
                    name: spanned.value,
                    at: (line > 0).then_some(At::LineColumn(line, column)),
                })
            }
            None => Ok(Key {
                name: String::deserialize(deserializer)?,
                at: None,
            }),
        }
    }
}
