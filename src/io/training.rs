//! Training data from files (docs/contract.md §6).
//!
//! * `.safetensors`: `z [n, d1]` (or `phi0`, `phi1 [n, d1]`, then `z = phi1 - phi0`), `psi0 [n]`,
//!   `psi [n, d2]` (absent when d2 = 0), `y [n]`, optional `cluster [n]`; F32 or F64, and `y`,
//!   `cluster` may also be integer dtypes (cluster ids are read exactly: any 64-bit integer).
//! * `.csv` with a header: optional `cluster`, then `y`, `psi0`, `z1..z{d1}`, `psi1..psi{d2}`.

use super::csv_table::{non_canonical_numbered, numbered, CsvTable};
use super::file_kind::FileKind;
use super::safetensors_table::SafetensorsFile;
use crate::data::{Dataset, Rows};
use crate::error::{Error, Result};
use std::path::Path;

/// Reads a training set, choosing the format by extension.
pub fn read_training(path: &Path) -> Result<Dataset> {
    read_rows(path, Rows::Whole)
}

/// Reads a training set or one shard of it ([`Rows`]), choosing the format by extension.
pub(crate) fn read_rows(path: &Path, rows: Rows) -> Result<Dataset> {
    match FileKind::of(path)? {
        FileKind::Csv => from_csv(&CsvTable::read(path)?, rows),
        FileKind::Safetensors => from_safetensors(&SafetensorsFile::open(path)?, rows),
    }
}

/// Builds a dataset from a CSV table with the training columns.
#[doc(hidden)] // reached through `crate::internals` only
pub fn from_csv(t: &CsvTable, rows: Rows) -> Result<Dataset> {
    let (d1, z) = t.numbered_block("z");
    let (d2, psi) = t.numbered_block("psi");
    if d1 == 0 {
        return Err(Error::format(
            &t.path,
            "no `z1` column: training CSV needs columns y, psi0, z1..z{d1}",
        ));
    }
    let known = |c: &str| {
        matches!(c, "y" | "psi0" | "cluster")
            || numbered(c, "z").is_some_and(|j| j <= d1)
            || numbered(c, "psi").is_some_and(|j| (1..=d2).contains(&j))
    };
    for c in &t.columns {
        if known(c) {
            continue;
        }
        let ambiguous = ["z", "psi"].iter().find(|p| non_canonical_numbered(c, p));
        return Err(Error::format(
            &t.path,
            match ambiguous {
                Some(p) => format!(
                    "column `{c}` is ambiguous: numbered columns are written `{p}1`, `{p}2`, ... \
                     (no leading zeros, signs or spaces)"
                ),
                None => format!(
                    "unexpected column `{c}` (columns are cluster?, y, psi0, z1..z{d1}, \
                     psi1..psi{d2})"
                ),
            },
        ));
    }
    let y = t.column("y")?;
    let psi0 = t.column("psi0")?;
    let cluster = t.ids("cluster")?.map(<[i64]>::to_vec);
    Dataset::with_rows(rows, d1, d2, z, psi0, psi, y, cluster).map_err(|e| invalid_data(&t.path, e))
}

/// Builds a dataset from a safetensors file with the training tensors. Every shape is checked
/// against the others from the header before any tensor data is read, so an inconsistent file
/// costs nothing to reject.
#[doc(hidden)] // reached through `crate::internals` only
pub fn from_safetensors(f: &SafetensorsFile, rows: Rows) -> Result<Dataset> {
    let path = f.path();
    let n = f.expect_shape("y", true, &[None])?[0];
    // Where z comes from, and its width: `z` itself, or `phi1 - phi0`.
    let (z_name, d1) = if f.has("z") {
        ("z", f.expect_shape("z", false, &[Some(n), None])?[1])
    } else if f.has("phi0") && f.has("phi1") {
        let d1 = f.expect_shape("phi0", false, &[Some(n), None])?[1];
        f.expect_shape("phi1", false, &[Some(n), Some(d1)])?;
        ("phi0", d1)
    } else {
        return Err(Error::format(
            path,
            "missing tensor `z` (or the pair `phi0`, `phi1`)",
        ));
    };
    f.expect_shape("psi0", false, &[Some(n)])?;
    let d2 = if f.has("psi") {
        f.expect_shape("psi", false, &[Some(n), None])?[1]
    } else {
        0
    };
    if f.has("cluster") {
        f.expect_shape("cluster", true, &[Some(n)])?;
    }
    // Everything the header tells is consistent: now decode.
    let y = f.read("y", true)?;
    let mut z = f.read(z_name, false)?;
    if z_name == "phi0" {
        f.combine_into("phi1", &mut z, |phi0, phi1| phi1 - phi0)?;
    }
    let psi0 = f.read("psi0", false)?;
    let psi = if f.has("psi") {
        f.read("psi", false)?
    } else {
        Vec::new()
    };
    let cluster = if f.has("cluster") {
        Some(f.read_ids("cluster")?)
    } else {
        None
    };
    Dataset::with_rows(rows, d1, d2, z, psi0, psi, y, cluster).map_err(|e| invalid_data(path, e))
}

/// A validation failure of file content, reported as a format error naming the file.
fn invalid_data(path: &str, e: Error) -> Error {
    Error::format(path, format!("{e} (indices count data rows from 0)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csv(cluster: impl Fn(usize) -> String) -> Result<Dataset> {
        let mut text = String::from("cluster,y,psi0,z1\n");
        for i in 0..12 {
            text += &format!("{},{},1,{}\n", cluster(i), i % 2, i as f64 * 0.25 - 1.0);
        }
        from_csv(
            &CsvTable::from_reader("t.csv", text.as_bytes())?,
            Rows::Whole,
        )
    }

    #[test]
    fn csv_cluster_ids_are_exact_and_refused_as_written() {
        let base: i64 = 1 << 53;
        let d = csv(|i| (base + (i % 4) as i64).to_string()).unwrap();
        assert_eq!(
            d.cluster().unwrap()[..4],
            [base, base + 1, base + 2, base + 3]
        );
        let d = csv(|i| format!("{}.0", i64::MAX - (i % 3) as i64)).unwrap();
        assert_eq!(
            d.cluster().unwrap()[..3],
            [i64::MAX, i64::MAX - 1, i64::MAX - 2]
        );
        for (written, why) in [
            ("9223372036854775808", "is outside the range of 64-bit ids"),
            ("2.50", "is not an integer"),
            ("9007199254740993.5", "is not an integer"),
        ] {
            let e = csv(|i| if i == 2 { written.into() } else { "1".into() })
                .unwrap_err()
                .to_string();
            let want = format!("column `cluster`, data row 3: cluster id `{written}` {why}");
            assert!(e.contains("t.csv") && e.contains(&want), "{e}");
        }
    }
}
