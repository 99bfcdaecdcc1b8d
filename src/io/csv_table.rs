//! CSV tables: a header row of column names, then numeric rows.

use crate::error::{Error, Result};
use std::collections::HashMap;
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
    /// Column name -> index, built once so that every lookup is O(1) and a header of a million
    /// columns is handled in linear time.
    index: HashMap<String, usize>,
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
        let index = column_index(name, &columns)?;
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
            index,
        })
    }

    /// Index of the column called `name`, if present (O(1)).
    pub fn find(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
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
    /// row-major `rows x k` block; returns `(k, values)`. Linear in the number of columns.
    pub fn numbered_block(&self, prefix: &str) -> (usize, Vec<f64>) {
        let idx = self.numbered_columns(prefix);
        let k = idx.iter().take_while(|c| c.is_some()).count();
        let idx: Vec<usize> = idx[..k].iter().map(|c| c.expect("counted")).collect();
        let width = self.columns.len();
        let mut out = Vec::with_capacity(self.rows * k);
        for r in 0..self.rows {
            out.extend(idx.iter().map(|&c| self.values[r * width + c]));
        }
        (k, out)
    }

    /// For `j = 1..`: the index of the column `{prefix}{j}`, if present (entry `j - 1`), as
    /// long as the highest `j` present; one pass over the columns. A `j` above the number of
    /// columns cannot be part of a consecutive block and is not stored (so the result's size
    /// is bounded by the header, not by a number written in it).
    pub fn numbered_columns(&self, prefix: &str) -> Vec<Option<usize>> {
        let width = self.columns.len();
        let mut at: Vec<Option<usize>> = Vec::new();
        for (c, name) in self.columns.iter().enumerate() {
            if let Some(j) = numbered(name, prefix).filter(|&j| j <= width) {
                if at.len() < j {
                    at.resize(j, None);
                }
                at[j - 1] = Some(c);
            }
        }
        at
    }
}

/// `j` if `name` is `{prefix}{j}` with `j` a positive integer written in canonical form
/// (decimal digits only, no sign, no leading zero): `z1`, `z12`, but not `z01`, `z+1` or `z0`.
pub fn numbered(name: &str, prefix: &str) -> Option<usize> {
    let digits = name.strip_prefix(prefix)?;
    if digits.is_empty() || digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// True when `name` is `{prefix}` followed by something number-like that is not canonical
/// (`z01`, `z+1`, `z0`, `z 1`): such a column would silently shadow or duplicate `{prefix}{j}`,
/// so readers reject it as ambiguous rather than guess.
pub fn non_canonical_numbered(name: &str, prefix: &str) -> bool {
    match name.strip_prefix(prefix) {
        Some(rest) if !rest.is_empty() && numbered(name, prefix).is_none() => {
            let t = rest.trim().trim_start_matches(['+', '-']);
            !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())
        }
        _ => false,
    }
}

/// Name -> index of a header; a name that appears twice is ambiguous and a format error naming
/// it and both (1-based) positions.
fn column_index(path: &str, columns: &[String]) -> Result<HashMap<String, usize>> {
    let mut index = HashMap::with_capacity(columns.len());
    for (c, name) in columns.iter().enumerate() {
        if let Some(first) = index.insert(name.clone(), c) {
            return Err(Error::format(
                path,
                format!(
                    "column `{name}` appears twice (columns {} and {}): which one is meant is \
                     ambiguous",
                    first + 1,
                    c + 1
                ),
            ));
        }
    }
    Ok(index)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Result<CsvTable> {
        CsvTable::from_reader("t.csv", text.as_bytes())
    }

    #[test]
    fn a_repeated_column_name_is_ambiguous() {
        for header in ["y,z1,z1", "y,y,z1", "z1, y ,y"] {
            let e = table(&format!("{header}\n1,2,3\n"))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("appears twice") && e.contains("t.csv"),
                "{header}: {e}"
            );
        }
    }

    #[test]
    fn numbering_is_canonical() {
        assert_eq!(numbered("z12", "z"), Some(12));
        for name in ["z0", "z01", "z+1", "z-1", "z", "z1a", "zz1"] {
            assert_eq!(numbered(name, "z"), None, "{name}");
        }
        for name in ["z0", "z01", "z+1", "z-1"] {
            assert!(non_canonical_numbered(name, "z"), "{name}");
        }
        for name in ["z1", "zeta", "z1a", "y"] {
            assert!(!non_canonical_numbered(name, "z"), "{name}");
        }
    }

    #[test]
    fn block_lookup_is_linear_and_bounded_by_the_header() {
        // 200,000 columns: a quadratic header walk would take minutes, this takes milliseconds.
        let k = 200_000;
        let header: Vec<String> = (1..=k).map(|j| format!("z{j}")).collect();
        let row = vec!["0"; k].join(",");
        let t = table(&format!("{}\n{row}\n", header.join(","))).unwrap();
        let started = std::time::Instant::now();
        let (width, values) = t.numbered_block("z");
        assert_eq!((width, values.len()), (k, k));
        assert!(started.elapsed().as_secs_f64() < 5.0);
        // A number written in the header does not size an allocation.
        let t = table("z1,z18446744073709551615\n1,2\n").unwrap();
        assert_eq!(t.numbered_columns("z"), vec![Some(0)]);
        assert_eq!(t.numbered_block("z").0, 1);
    }
}
