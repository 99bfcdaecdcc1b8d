//! A table file's format, chosen by its extension: the one rule the training and scoring
//! readers share.

use crate::error::{Error, Result};
use std::path::Path;

/// A file's format, chosen by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// `.csv` with a header row.
    Csv,
    /// `.safetensors`.
    Safetensors,
}

impl FileKind {
    /// The format of `path` by its extension; an unknown extension is a format error.
    pub(crate) fn of(path: &Path) -> Result<Self> {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("csv") => Ok(FileKind::Csv),
            Some("safetensors") => Ok(FileKind::Safetensors),
            _ => Err(Error::format(
                path.display().to_string(),
                "unknown file type: expected a .csv or .safetensors extension",
            )),
        }
    }
}
