//! Scoring inputs from files (docs/contract.md §6): PHI (answers to score), PAIRS (answers to compare) and
//! CANDIDATES (answers to choose among, grouped by prompt).
//!
//! | input | `.safetensors` tensors | `.csv` columns (with a header) |
//! |---|---|---|
//! | PHI | `phi` `[m, d1]` | `phi1..phi{d1}` |
//! | PAIRS | `phi0`, `phi1` `[m, d1]` | `phi0_1..phi0_{d1}`, `phi1_1..phi1_{d1}` |
//! | CANDIDATES | `phi` `[m, d1]`, `group` `[m]`, optional `penalty` `[m]` | `group`, optional `penalty`, `phi1..phi{d1}` |
//!
//! Features are F32 or F64; `group` may also be an integer dtype (or floats holding integers).
//! Each reader is told the model's `d1` and rejects other widths. Every error is an
//! [`Error::Format`] naming the file, the tensor or column and, where there is one, the row
//! (CSV: 1-based data row, as a spreadsheet shows it; safetensors: 0-based row). safetensors
//! files are read (never memory-mapped), shapes checked from the header before any data.

use super::csv_table::{non_canonical_numbered, numbered, CsvTable};
use super::file_kind::FileKind;
use super::safetensors_table::SafetensorsFile;
use crate::error::{Error, Result};
use crate::fitted::RewardModel;
use crate::select::{self, Candidate, Policy};
use std::collections::HashMap;
use std::path::Path;

/// Answers to score: `rows x d1` features, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct PhiInput {
    /// The file, for messages.
    pub path: String,
    /// Number of answers m.
    pub rows: usize,
    /// Feature dimension (the model's d1).
    pub d1: usize,
    /// `rows * d1` values, row-major.
    pub phi: Vec<f64>,
}

/// Pairs of answers to compare: row `i` is `(a0, a1)`; the difference is `r(a0) - r(a1)`.
#[derive(Debug, Clone, PartialEq)]
pub struct PairsInput {
    /// The file, for messages.
    pub path: String,
    /// Number of pairs m.
    pub rows: usize,
    /// Feature dimension (the model's d1).
    pub d1: usize,
    /// Features of a0, `rows * d1` row-major.
    pub phi0: Vec<f64>,
    /// Features of a1, `rows * d1` row-major.
    pub phi1: Vec<f64>,
}

/// Candidate answers grouped by prompt, with optional per-candidate penalties.
#[derive(Debug, Clone, PartialEq)]
pub struct CandidatesInput {
    /// The file, for messages.
    pub path: String,
    /// Number of candidates m (all groups together).
    pub rows: usize,
    /// Feature dimension (the model's d1).
    pub d1: usize,
    /// `rows * d1` features, row-major.
    pub phi: Vec<f64>,
    /// The prompt (group id) of each candidate; a group's rows need not be adjacent.
    pub group: Vec<i64>,
    /// Each candidate's penalty (the caller's beta*KL, beta*WD or beta/|a|), if given.
    pub penalty: Option<Vec<f64>>,
}

/// The choice made for one group by [`select_groups`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupChoice {
    /// The group id.
    pub group: i64,
    /// Number of candidates in the group.
    pub size: usize,
    /// 0-based index of the chosen candidate among the group's candidates (in file order).
    pub index: usize,
    /// 0-based row of the chosen candidate in the input.
    pub row: usize,
    /// The chosen candidate's reward, SE, bounds, penalty and objective.
    pub candidate: Candidate,
}

/// Reads PHI from `path` (`.csv` or `.safetensors`), expecting `d1` features per row.
pub fn read_phi(path: &Path, d1: usize) -> Result<PhiInput> {
    match FileKind::of(path)? {
        FileKind::Csv => phi_from_csv(&CsvTable::read(path)?, d1),
        FileKind::Safetensors => phi_from_safetensors(&SafetensorsFile::open(path)?, d1),
    }
}

/// Reads PAIRS from `path` (`.csv` or `.safetensors`), expecting `d1` features per answer.
pub fn read_pairs(path: &Path, d1: usize) -> Result<PairsInput> {
    match FileKind::of(path)? {
        FileKind::Csv => pairs_from_csv(&CsvTable::read(path)?, d1),
        FileKind::Safetensors => pairs_from_safetensors(&SafetensorsFile::open(path)?, d1),
    }
}

/// Reads CANDIDATES from `path` (`.csv` or `.safetensors`), expecting `d1` features per row.
pub fn read_candidates(path: &Path, d1: usize) -> Result<CandidatesInput> {
    match FileKind::of(path)? {
        FileKind::Csv => candidates_from_csv(&CsvTable::read(path)?, d1),
        FileKind::Safetensors => candidates_from_safetensors(&SafetensorsFile::open(path)?, d1),
    }
}

/// PHI from a CSV table with exactly the columns `phi1..phi{d1}`.
#[doc(hidden)] // reached through `crate::internals` only
pub fn phi_from_csv(t: &CsvTable, d1: usize) -> Result<PhiInput> {
    check_columns(t, &[], &[("phi", d1)])?;
    let phi = csv_block(t, "phi", d1)?;
    Ok(PhiInput {
        path: t.path.clone(),
        rows: non_empty(&t.path, t.rows)?,
        d1,
        phi,
    })
}

/// PAIRS from a CSV table with the columns `phi0_1..phi0_{d1}`, `phi1_1..phi1_{d1}`.
#[doc(hidden)] // reached through `crate::internals` only
pub fn pairs_from_csv(t: &CsvTable, d1: usize) -> Result<PairsInput> {
    check_columns(t, &[], &[("phi0_", d1), ("phi1_", d1)])?;
    let phi0 = csv_block(t, "phi0_", d1)?;
    let phi1 = csv_block(t, "phi1_", d1)?;
    Ok(PairsInput {
        path: t.path.clone(),
        rows: non_empty(&t.path, t.rows)?,
        d1,
        phi0,
        phi1,
    })
}

/// CANDIDATES from a CSV table with the columns `group`, optional `penalty`, `phi1..phi{d1}`.
#[doc(hidden)] // reached through `crate::internals` only
pub fn candidates_from_csv(t: &CsvTable, d1: usize) -> Result<CandidatesInput> {
    check_columns(t, &["group", "penalty"], &[("phi", d1)])?;
    let phi = csv_block(t, "phi", d1)?;
    let group = t
        .ids("group")?
        .ok_or_else(|| Error::format(&t.path, "missing column `group`"))?
        .to_vec();
    let penalty = match t.find("penalty") {
        Some(_) => Some(t.column("penalty")?),
        None => None,
    };
    Ok(CandidatesInput {
        path: t.path.clone(),
        rows: non_empty(&t.path, t.rows)?,
        d1,
        phi,
        group,
        penalty,
    })
}

/// PHI from a safetensors file with the tensor `phi` `[m, d1]`.
#[doc(hidden)] // reached through `crate::internals` only
pub fn phi_from_safetensors(f: &SafetensorsFile, d1: usize) -> Result<PhiInput> {
    let (rows, phi) = st_matrix(f, "phi", None, d1)?;
    Ok(PhiInput {
        path: f.path().to_string(),
        rows,
        d1,
        phi,
    })
}

/// PAIRS from a safetensors file with the tensors `phi0`, `phi1` `[m, d1]`.
#[doc(hidden)] // reached through `crate::internals` only
pub fn pairs_from_safetensors(f: &SafetensorsFile, d1: usize) -> Result<PairsInput> {
    let rows = st_matrix_shape(f, "phi0", None, d1)?;
    st_matrix_shape(f, "phi1", Some(rows), d1)?;
    let (_, phi0) = st_matrix(f, "phi0", Some(rows), d1)?;
    let (_, phi1) = st_matrix(f, "phi1", Some(rows), d1)?;
    Ok(PairsInput {
        path: f.path().to_string(),
        rows,
        d1,
        phi0,
        phi1,
    })
}

/// CANDIDATES from a safetensors file with `phi` `[m, d1]`, `group` `[m]` and optional `penalty`
/// `[m]`. Every shape is checked before any data is read.
#[doc(hidden)] // reached through `crate::internals` only
pub fn candidates_from_safetensors(f: &SafetensorsFile, d1: usize) -> Result<CandidatesInput> {
    let path = f.path();
    let rows = st_matrix_shape(f, "phi", None, d1)?;
    f.expect_shape("group", true, &[Some(rows)])?;
    let has_penalty = f.has("penalty");
    if has_penalty {
        f.expect_shape("penalty", false, &[Some(rows)])?;
    }
    let phi = f.read("phi", false)?;
    let group = f.read_ids("group")?;
    let penalty = if has_penalty {
        Some(f.read("penalty", false)?)
    } else {
        None
    };
    Ok(CandidatesInput {
        path: path.to_string(),
        rows,
        d1,
        phi,
        group,
        penalty,
    })
}

impl CandidatesInput {
    /// The groups in order of first appearance, each with its rows in file order.
    pub(crate) fn groups(&self) -> Vec<(i64, Vec<usize>)> {
        let mut order: Vec<(i64, Vec<usize>)> = Vec::new();
        let mut at: HashMap<i64, usize> = HashMap::new();
        for (row, &g) in self.group.iter().enumerate() {
            let k = *at.entry(g).or_insert_with(|| {
                order.push((g, Vec::new()));
                order.len() - 1
            });
            order[k].1.push(row);
        }
        order
    }
}

/// Runs [`select::select_best`] once per group of `candidates` (BoN or pBoN at level `alpha`,
/// with the file's penalties if any: the chosen candidate of [`select::select`] without every
/// candidate's interval) and returns one choice per group, in order of first appearance.
/// A group whose rows are adjacent is passed to the library without copying its features.
///
/// Errors: those of [`select::select`] (e.g. `alpha` outside (0,1), a width other than the
/// model's d1).
pub fn select_groups(
    model: &RewardModel,
    candidates: &CandidatesInput,
    alpha: f64,
    policy: Policy,
) -> Result<Vec<GroupChoice>> {
    let d1 = candidates.d1;
    candidates
        .groups()
        .into_iter()
        .map(|(group, rows)| {
            let (first, last) = (rows[0], rows[rows.len() - 1]);
            let adjacent = last - first + 1 == rows.len();
            let gathered: Vec<f64>;
            let phi: &[f64] = if adjacent {
                &candidates.phi[first * d1..(last + 1) * d1]
            } else {
                gathered = rows
                    .iter()
                    .flat_map(|&r| candidates.phi[r * d1..(r + 1) * d1].iter().copied())
                    .collect();
                &gathered
            };
            let penalty: Option<Vec<f64>> = candidates
                .penalty
                .as_ref()
                .map(|p| rows.iter().map(|&r| p[r]).collect());
            let best = select::select_best(model, phi, penalty.as_deref(), alpha, policy)?;
            Ok(GroupChoice {
                group,
                size: rows.len(),
                index: best.index,
                row: rows[best.index],
                candidate: best.candidate,
            })
        })
        .collect()
}

/// Checks a CSV header: only the `named` columns (all optional here; required ones are looked
/// up later) and, for each `(prefix, d1)` block, exactly `prefix1..prefix{d1}`. Linear in the
/// number of columns (names are looked up in the table's index).
fn check_columns(t: &CsvTable, named: &[&str], blocks: &[(&str, usize)]) -> Result<()> {
    let expected = || {
        let mut parts: Vec<String> = named.iter().map(|c| format!("`{c}`")).collect();
        parts.extend(blocks.iter().map(|(p, d)| format!("`{p}1..{p}{d}`")));
        parts.join(", ")
    };
    for c in &t.columns {
        if named.contains(&c.as_str()) || blocks.iter().any(|(p, _)| numbered(c, p).is_some()) {
            continue;
        }
        return Err(Error::format(
            &t.path,
            match blocks.iter().find(|(p, _)| non_canonical_numbered(c, p)) {
                Some((p, _)) => format!(
                    "column `{c}` is ambiguous: numbered columns are written `{p}1`, `{p}2`, ... \
                     (no leading zeros, signs or spaces)"
                ),
                None => format!("unexpected column `{c}` (expected {})", expected()),
            },
        ));
    }
    for (prefix, d1) in blocks {
        let widest = t
            .columns
            .iter()
            .filter_map(|c| numbered(c, prefix))
            .max()
            .unwrap_or(0);
        if widest != *d1 {
            return Err(Error::format(
                &t.path,
                format!(
                    "has feature columns `{prefix}1..{prefix}{widest}`; the model needs {d1} \
                     (`{prefix}1..{prefix}{d1}`)"
                ),
            ));
        }
        let present = t.numbered_columns(prefix);
        if let Some(j) = (1..=*d1).find(|&j| present.get(j - 1).is_none_or(|c| c.is_none())) {
            return Err(Error::format(
                &t.path,
                format!("missing column `{prefix}{j}`"),
            ));
        }
    }
    Ok(())
}

/// The block `prefix1..prefix{d1}` of a checked table, row-major.
fn csv_block(t: &CsvTable, prefix: &str, d1: usize) -> Result<Vec<f64>> {
    let (k, values) = t.numbered_block(prefix);
    if k != d1 {
        return Err(Error::Internal {
            detail: format!(
                "{}: column block `{prefix}` has {k} columns after checking",
                t.path
            ),
        });
    }
    Ok(values)
}

/// A 2-D feature tensor `[rows, d1]` (rows fixed when `rows` is given), read after its shape
/// is checked, with messages naming the model's d1.
fn st_matrix(
    f: &SafetensorsFile,
    name: &str,
    rows: Option<usize>,
    d1: usize,
) -> Result<(usize, Vec<f64>)> {
    let m = st_matrix_shape(f, name, rows, d1)?;
    Ok((m, f.read(name, false)?))
}

/// The row count of a 2-D feature tensor `[rows, d1]`, from the header alone.
fn st_matrix_shape(
    f: &SafetensorsFile,
    name: &str,
    rows: Option<usize>,
    d1: usize,
) -> Result<usize> {
    let shape = f.shape(name, false)?;
    if shape.len() != 2 || shape[1] != d1 || rows.is_some_and(|m| shape[0] != m) {
        return Err(Error::format(
            f.path(),
            format!(
                "tensor `{name}` has shape {shape:?}; expected [{}, {d1}] ({d1} = the model's d1)",
                rows.map_or("m".to_string(), |m| m.to_string())
            ),
        ));
    }
    non_empty(f.path(), shape[0])
}

fn non_empty(path: &str, rows: usize) -> Result<usize> {
    if rows == 0 {
        Err(Error::format(path, "no data rows"))
    } else {
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> CsvTable {
        CsvTable::from_reader("t.csv", text.as_bytes()).unwrap()
    }

    fn err(r: Result<impl std::fmt::Debug>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn phi_csv() {
        let p = phi_from_csv(&table("phi1,phi2\n1,2\n3,4\n"), 2).unwrap();
        assert_eq!((p.rows, p.d1), (2, 2));
        assert_eq!(p.phi, vec![1.0, 2.0, 3.0, 4.0]);
        // Columns in any order are read by name.
        let p = phi_from_csv(&table("phi2,phi1\n2,1\n"), 2).unwrap();
        assert_eq!(p.phi, vec![1.0, 2.0]);
    }

    #[test]
    fn phi_csv_errors() {
        let e = err(phi_from_csv(&table("phi1,phi2,phi3\n1,2,3\n"), 2));
        assert!(
            e.contains("t.csv") && e.contains("phi1..phi3") && e.contains("needs 2"),
            "{e}"
        );
        let e = err(phi_from_csv(&table("phi1,phi3\n1,2\n"), 3));
        assert!(e.contains("missing column `phi2`"), "{e}");
        let e = err(phi_from_csv(&table("phi1,x\n1,2\n"), 1));
        assert!(e.contains("unexpected column `x`"), "{e}");
        let e = err(phi_from_csv(&table("phi1\n"), 1));
        assert!(e.contains("no data rows"), "{e}");
        let e = err(phi_from_csv(&table("phi01\n1\n"), 1));
        assert!(e.contains("column `phi01` is ambiguous"), "{e}");
        let e = err(phi_from_csv(&table("phi1,phi01\n1,2\n"), 1));
        assert!(e.contains("column `phi01` is ambiguous"), "{e}");
        let e = err(phi_from_csv(&table("phi1,phi+2\n1,2\n"), 2));
        assert!(e.contains("column `phi+2` is ambiguous"), "{e}");
    }

    #[test]
    fn pairs_csv() {
        let p = pairs_from_csv(&table("phi0_1,phi0_2,phi1_1,phi1_2\n1,2,3,4\n"), 2).unwrap();
        assert_eq!(p.phi0, vec![1.0, 2.0]);
        assert_eq!(p.phi1, vec![3.0, 4.0]);
        let e = err(pairs_from_csv(&table("phi0_1,phi1_1,phi1_2\n1,2,3\n"), 2));
        assert!(e.contains("`phi0_1..phi0_1`"), "{e}");
        let e = err(pairs_from_csv(&table("phi1,phi2\n1,2\n"), 2));
        assert!(e.contains("unexpected column `phi1`"), "{e}");
    }

    #[test]
    fn candidates_csv_and_groups() {
        let c = candidates_from_csv(&table("group,penalty,phi1\n7,0.5,1\n3,0,2\n7,0.25,3\n"), 1)
            .unwrap();
        assert_eq!(c.group, vec![7, 3, 7]);
        assert_eq!(c.penalty, Some(vec![0.5, 0.0, 0.25]));
        assert_eq!(c.groups(), vec![(7, vec![0, 2]), (3, vec![1])]);
        let e = err(candidates_from_csv(&table("group,phi1\n1.5,1\n"), 1));
        assert!(
            e.contains("column `group`, data row 1") && e.contains("1.5"),
            "{e}"
        );
        let e = err(candidates_from_csv(&table("phi1\n1\n"), 1));
        assert!(e.contains("missing column `group`"), "{e}");
    }

    #[test]
    fn numbered_names() {
        assert_eq!(numbered("phi12", "phi"), Some(12));
        assert_eq!(numbered("phi0_3", "phi0_"), Some(3));
        assert_eq!(numbered("phi0_3", "phi"), None);
        assert_eq!(numbered("phi+1", "phi"), None);
        assert_eq!(numbered("phi", "phi"), None);
    }
}
