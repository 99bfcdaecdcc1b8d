//! CSV tables: a header row of column names, then numeric rows.

use crate::error::{Error, Result};
use std::path::Path;

/// A CSV file read into memory: column names and row-major numeric values.
#[derive(Debug, Clone, PartialEq)]
pub struct CsvTable {
    /// The file, for error messages.
    pub path: String,
    /// Column names in file order.
    pub columns: Vec<String>,
    /// Number of data rows.
    pub rows: usize,
    /// `rows * columns.len()` values, row-major.
    pub values: Vec<f64>,
}

impl CsvTable {
    /// Reads `path`. Every field must parse as a finite number; errors name the column and the
    /// 1-based data row.
    pub fn read(path: &Path) -> Result<Self> {
        let name = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|e| Error::io(&name, &e))?;
        Self::from_reader(&name, file)
    }

    /// Reads CSV text from any reader; `name` labels errors.
    pub fn from_reader(name: &str, reader: impl std::io::Read) -> Result<Self> {
        let mut rdr = csv::ReaderBuilder::new()
            .trim(csv::Trim::All)
            .from_reader(reader);
        let columns: Vec<String> = rdr
            .headers()
            .map_err(|e| csv_error(name, "cannot read the header", e))?
            .iter()
            .map(str::to_string)
            .collect();
        if columns.is_empty() || columns.iter().all(|c| c.is_empty()) {
            return Err(Error::format(name, "empty header row"));
        }
        let mut values = Vec::new();
        let mut rows = 0;
        for (r, record) in rdr.records().enumerate() {
            let record = record.map_err(|e| csv_error(name, &format!("data row {}", r + 1), e))?;
            for (c, field) in record.iter().enumerate() {
                let v: f64 = field.parse().map_err(|_| {
                    Error::format(
                        name,
                        format!(
                            "column `{}`, data row {}: `{field}` is not a number",
                            columns[c],
                            r + 1
                        ),
                    )
                })?;
                if !v.is_finite() {
                    return Err(Error::format(
                        name,
                        format!(
                            "column `{}`, data row {}: non-finite value `{field}`",
                            columns[c],
                            r + 1
                        ),
                    ));
                }
                values.push(v);
            }
            rows += 1;
        }
        Ok(CsvTable {
            path: name.to_string(),
            columns,
            rows,
            values,
        })
    }

    /// Index of the column called `name`, if present.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// The column called `name` (length `rows`); a format error naming it if absent.
    pub fn column(&self, name: &str) -> Result<Vec<f64>> {
        let c = self
            .find(name)
            .ok_or_else(|| Error::format(&self.path, format!("missing column `{name}`")))?;
        let width = self.columns.len();
        Ok((0..self.rows).map(|r| self.values[r * width + c]).collect())
    }

    /// The columns `{prefix}1, {prefix}2, ...` (as many as exist, consecutively numbered) as a
    /// row-major `rows x k` block; returns `(k, values)`.
    pub fn numbered_block(&self, prefix: &str) -> (usize, Vec<f64>) {
        let idx: Vec<usize> = (1..)
            .map_while(|j| self.find(&format!("{prefix}{j}")))
            .collect();
        let width = self.columns.len();
        let mut out = Vec::with_capacity(self.rows * idx.len());
        for r in 0..self.rows {
            out.extend(idx.iter().map(|&c| self.values[r * width + c]));
        }
        (idx.len(), out)
    }
}

/// A CSV reader error: an I/O failure (e.g. the path is a folder) is [`Error::Io`], anything
/// else (bad UTF-8, ragged rows) a format error at `place`.
fn csv_error(name: &str, place: &str, e: csv::Error) -> Error {
    let detail = format!("{place}: {e}");
    match e.into_kind() {
        csv::ErrorKind::Io(io) => Error::io(name, &io),
        _ => Error::format(name, detail),
    }
}
