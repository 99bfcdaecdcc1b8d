//! Training data from files (SPEC §6).
//!
//! * `.safetensors`: `z [n, d1]` (or `phi0`, `phi1 [n, d1]`, then `z = phi1 - phi0`), `psi0 [n]`,
//!   `psi [n, d2]` (absent when d2 = 0), `y [n]`, optional `cluster [n]`; F32 or F64, and `y`,
//!   `cluster` may also be integer dtypes.
//! * `.csv` with a header: optional `cluster`, then `y`, `psi0`, `z1..z{d1}`, `psi1..psi{d2}`.

use super::csv_table::CsvTable;
use super::safetensors_table::SafetensorsFile;
use super::FileKind;
use crate::data::Dataset;
use crate::error::{Error, Result};
use std::path::Path;

/// Reads a training set, choosing the format by extension.
pub fn read_training(path: &Path) -> Result<Dataset> {
    match FileKind::of(path)? {
        FileKind::Csv => from_csv(&CsvTable::read(path)?),
        FileKind::Safetensors => from_safetensors(&SafetensorsFile::open(path)?),
    }
}

/// Builds a dataset from a CSV table with the training columns.
pub fn from_csv(t: &CsvTable) -> Result<Dataset> {
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
    if let Some(c) = t.columns.iter().find(|c| !known(c)) {
        return Err(Error::format(
            &t.path,
            format!(
                "unexpected column `{c}` (columns are cluster?, y, psi0, z1..z{d1}, psi1..psi{d2})"
            ),
        ));
    }
    let y = t.column("y")?;
    let psi0 = t.column("psi0")?;
    let cluster = match t.find("cluster") {
        Some(_) => Some(cluster_ids(&t.path, "cluster", &t.column("cluster")?)?),
        None => None,
    };
    Dataset::new(d1, d2, z, psi0, psi, y, cluster).map_err(|e| invalid_data(&t.path, e))
}

/// Builds a dataset from a safetensors file with the training tensors.
pub fn from_safetensors(f: &SafetensorsFile) -> Result<Dataset> {
    let path = f.path();
    let y = f.tensor("y", true)?;
    y.expect_shape(path, "y", &[None])?;
    let n = y.shape[0];
    let (d1, z) = if f.has("z") {
        let z = f.tensor("z", false)?;
        z.expect_shape(path, "z", &[Some(n), None])?;
        (z.shape[1], z.values)
    } else if f.has("phi0") && f.has("phi1") {
        let phi0 = f.tensor("phi0", false)?;
        phi0.expect_shape(path, "phi0", &[Some(n), None])?;
        let phi1 = f.tensor("phi1", false)?;
        phi1.expect_shape(path, "phi1", &[Some(n), Some(phi0.shape[1])])?;
        let z = phi1
            .values
            .iter()
            .zip(&phi0.values)
            .map(|(a, b)| a - b)
            .collect();
        (phi0.shape[1], z)
    } else {
        return Err(Error::format(
            path,
            "missing tensor `z` (or the pair `phi0`, `phi1`)",
        ));
    };
    let psi0 = f.tensor("psi0", false)?;
    psi0.expect_shape(path, "psi0", &[Some(n)])?;
    let (d2, psi) = if f.has("psi") {
        let psi = f.tensor("psi", false)?;
        psi.expect_shape(path, "psi", &[Some(n), None])?;
        (psi.shape[1], psi.values)
    } else {
        (0, Vec::new())
    };
    let cluster = if f.has("cluster") {
        let c = f.tensor("cluster", true)?;
        c.expect_shape(path, "cluster", &[Some(n)])?;
        Some(cluster_ids(path, "cluster", &c.values)?)
    } else {
        None
    };
    Dataset::new(d1, d2, z, psi0.values, psi, y.values, cluster).map_err(|e| invalid_data(path, e))
}

/// `j` if `name` is `{prefix}{j}` with a positive integer `j`.
fn numbered(name: &str, prefix: &str) -> Option<usize> {
    name.strip_prefix(prefix)?.parse().ok().filter(|&j| j >= 1)
}

fn cluster_ids(path: &str, what: &str, values: &[f64]) -> Result<Vec<i64>> {
    values
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            if v.fract() == 0.0 && v.abs() < 9.0e15 {
                Ok(v as i64)
            } else {
                Err(Error::format(
                    path,
                    format!("`{what}` row {i}: id {v} is not an integer"),
                ))
            }
        })
        .collect()
}

/// A validation failure of file content, reported as a format error naming the file.
fn invalid_data(path: &str, e: Error) -> Error {
    Error::format(path, format!("{e} (indices count data rows from 0)"))
}
