//! The model file: a versioned, checksummed binary holding everything scoring and inspection
//! need (SPEC §6). Layout (all integers and floats little-endian):
//!
//! ```text
//! offset  size  field
//! 0       8     magic  b"HETRWRD\0"
//! 8       4     format version (u32) = 1
//! 12      8     payload length in bytes (u64)
//! 20      L     payload (below)
//! 20+L    4     CRC-32 (IEEE) of the payload
//!
//! payload: n u64 | d1 u32 | d2 u32 | covariance u8 | solver u8 | termination u8 |
//!          converged u8 | iterations u64 | total_iterations u64 | starts u64 |
//!          grad_norm f64 | neg_loglik f64 | seconds f64 | tol f64 |
//!          theta f64[d1] | gamma f64[d2] |
//!          L, the lower Cholesky factor of Cov(theta_hat), row-major lower triangle f64[d1(d1+1)/2] |
//!          Cov(gamma_hat) f64[d2*d2] row-major
//! ```
//!
//! Saving writes a temporary file next to the target and renames it over the target, so a
//! crash never leaves a half-written model under the target name.

use crate::error::{Error, Result};
use crate::fit::{FitReport, SolverKind, Termination};
use crate::fitted::RewardModel;
use crate::inference::CovarianceKind;
use crate::model::Params;
use nalgebra::DMatrix;
use std::io::Write;
use std::path::Path;

/// First 8 bytes of every model file.
pub const MAGIC: &[u8; 8] = b"HETRWRD\0";
/// The format version this library writes and reads.
pub const FORMAT_VERSION: u32 = 1;
const HEADER_LEN: usize = 20;

const TERMINATIONS: [Termination; 4] = [
    Termination::Converged,
    Termination::MaxIterations,
    Termination::Stalled,
    Termination::Diverged,
];
const SOLVERS: [SolverKind; 2] = [SolverKind::Newton, SolverKind::Agd];

/// Serialises a model to bytes.
pub fn to_bytes(model: &RewardModel) -> Vec<u8> {
    let (d1, d2) = (model.d1(), model.d2());
    let r = model.report();
    let mut p = Vec::with_capacity(128 + 8 * (d1 * (d1 + 3) / 2 + d2 * (d2 + 1)));
    p.extend((model.n() as u64).to_le_bytes());
    p.extend((d1 as u32).to_le_bytes());
    p.extend((d2 as u32).to_le_bytes());
    p.push(
        CovarianceKind::ALL
            .iter()
            .position(|k| *k == model.covariance())
            .expect("known kind") as u8,
    );
    p.push(
        SOLVERS
            .iter()
            .position(|s| *s == r.solver)
            .expect("known solver") as u8,
    );
    p.push(
        TERMINATIONS
            .iter()
            .position(|t| *t == r.termination)
            .expect("known termination") as u8,
    );
    p.push(r.converged as u8);
    for v in [
        r.iterations as u64,
        r.total_iterations as u64,
        r.starts as u64,
    ] {
        p.extend(v.to_le_bytes());
    }
    let l = model.theta_cov_factor();
    let floats = [r.grad_norm, r.neg_loglik, r.seconds, r.tol]
        .into_iter()
        .chain(model.theta().iter().copied())
        .chain(model.gamma().iter().copied())
        .chain((0..d1).flat_map(|i| (0..=i).map(move |j| l[(i, j)])))
        .chain((0..d2).flat_map(|i| (0..d2).map(move |j| model.gamma_cov()[(i, j)])));
    for v in floats {
        p.extend(v.to_le_bytes());
    }
    let mut out = Vec::with_capacity(HEADER_LEN + p.len() + 4);
    out.extend(MAGIC);
    out.extend(FORMAT_VERSION.to_le_bytes());
    out.extend((p.len() as u64).to_le_bytes());
    out.extend(&p);
    out.extend(crc32fast::hash(&p).to_le_bytes());
    out
}

/// Parses a model from bytes; `name` labels errors (a path or "<buffer>").
///
/// Rejects, with a [`Error::Format`] naming what is wrong: a wrong magic number, another format
/// version, a truncated or over-long buffer, a checksum mismatch, and inconsistent content.
pub fn from_bytes(bytes: &[u8], name: &str) -> Result<RewardModel> {
    let bad = |detail: String| Error::format(name, detail);
    if bytes.len() < HEADER_LEN + 4 {
        return Err(bad(format!(
            "truncated: {} bytes is shorter than the smallest model file",
            bytes.len()
        )));
    }
    if &bytes[..8] != MAGIC {
        return Err(bad("not a hetreward model file (bad magic number)".into()));
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
    if version != FORMAT_VERSION {
        return Err(bad(format!(
            "model format version {version} is not supported (this library reads version {FORMAT_VERSION})"
        )));
    }
    let len = u64::from_le_bytes(bytes[12..20].try_into().unwrap());
    let expected_total = (HEADER_LEN as u64)
        .checked_add(len)
        .and_then(|v| v.checked_add(4));
    if expected_total != Some(bytes.len() as u64) {
        return Err(bad(format!(
            "truncated or padded: header announces a {len}-byte payload, file has {} bytes in all",
            bytes.len()
        )));
    }
    let payload = &bytes[HEADER_LEN..HEADER_LEN + len as usize];
    let stored = u32::from_le_bytes(bytes[bytes.len() - 4..].try_into().unwrap());
    if crc32fast::hash(payload) != stored {
        return Err(bad("checksum mismatch: the file is corrupted".into()));
    }
    parse_payload(payload).map_err(|detail| bad(format!("inconsistent content: {detail}")))
}

fn parse_payload(p: &[u8]) -> std::result::Result<RewardModel, String> {
    let mut r = Reader { p, at: 0 };
    let n = r.u64()? as usize;
    let d1 = r.u32()? as usize;
    let d2 = r.u32()? as usize;
    let covariance = *CovarianceKind::ALL
        .get(r.u8()? as usize)
        .ok_or("unknown covariance kind")?;
    let solver = *SOLVERS.get(r.u8()? as usize).ok_or("unknown solver")?;
    let termination = *TERMINATIONS
        .get(r.u8()? as usize)
        .ok_or("unknown termination")?;
    let converged = match r.u8()? {
        0 => false,
        1 => true,
        _ => return Err("converged flag is not 0 or 1".into()),
    };
    let (iterations, total_iterations, starts) =
        (r.u64()? as usize, r.u64()? as usize, r.u64()? as usize);
    let (grad_norm, neg_loglik, seconds, tol) = (r.f64()?, r.f64()?, r.f64()?, r.f64()?);
    let expected = d1
        .checked_mul(d1 + 3)
        .map(|v| v / 2)
        .and_then(|v| v.checked_add(d2.checked_mul(d2 + 1)?))
        .and_then(|v| v.checked_mul(8))
        .ok_or("dimensions overflow")?;
    if r.remaining() != expected {
        return Err(format!("payload size does not match d1 = {d1}, d2 = {d2}"));
    }
    let theta = r.f64s(d1)?;
    let gamma = r.f64s(d2)?;
    let mut l = DMatrix::zeros(d1, d1);
    for i in 0..d1 {
        for j in 0..=i {
            l[(i, j)] = r.f64()?;
        }
    }
    let gamma_cov = DMatrix::from_row_slice(d2, d2, &r.f64s(d2 * d2)?);
    let report = FitReport {
        solver,
        iterations,
        total_iterations,
        starts,
        converged,
        termination,
        grad_norm,
        neg_loglik,
        seconds,
        tol,
    };
    RewardModel::from_parts(Params { theta, gamma }, n, covariance, report, l, gamma_cov)
        .map_err(|e| e.to_string())
}

struct Reader<'a> {
    p: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take<const W: usize>(&mut self) -> std::result::Result<[u8; W], String> {
        let end = self.at + W;
        let b = self.p.get(self.at..end).ok_or("payload ends early")?;
        self.at = end;
        Ok(b.try_into().unwrap())
    }
    fn u8(&mut self) -> std::result::Result<u8, String> {
        Ok(self.take::<1>()?[0])
    }
    fn u32(&mut self) -> std::result::Result<u32, String> {
        Ok(u32::from_le_bytes(self.take()?))
    }
    fn u64(&mut self) -> std::result::Result<u64, String> {
        Ok(u64::from_le_bytes(self.take()?))
    }
    fn f64(&mut self) -> std::result::Result<f64, String> {
        Ok(f64::from_le_bytes(self.take()?))
    }
    fn f64s(&mut self, k: usize) -> std::result::Result<Vec<f64>, String> {
        (0..k).map(|_| self.f64()).collect()
    }
    fn remaining(&self) -> usize {
        self.p.len() - self.at
    }
}

/// Writes the model to `path` atomically (temporary file in the same folder, fsync, rename).
pub fn save(model: &RewardModel, path: &Path) -> Result<()> {
    let name = path.display().to_string();
    let bytes = to_bytes(model);
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let file_name = path
        .file_name()
        .ok_or_else(|| Error::invalid("path", format!("`{name}` is not a file path")))?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        file_name.to_string_lossy(),
        std::process::id()
    ));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(&name, &e)
    })
}

/// Reads a model file written by [`save`].
pub fn load(path: &Path) -> Result<RewardModel> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| Error::io(&name, &e))?;
    from_bytes(&bytes, &name)
}
