//! The model file: a versioned, checksummed binary holding everything scoring and inspection
//! need (docs/contract.md §6). Layout (all integers and floats little-endian):
//!
//! ```text
//! offset  size  field
//! 0       8     magic  b"HETRWRD\0"
//! 8       4     format version (u32) = 2, or 3 for a model with unbounded coefficients
//!               (version 1 files are still read)
//! 12      8     payload length in bytes (u64)
//! 20      L     payload (below)
//! 20+L    4     CRC-32 (IEEE) of the payload
//!
//! payload: n u64 | d1 u32 | d2 u32 | covariance u8 | solver u8 | termination u8 |
//!          converged u8 | iterations u64 | total_iterations u64 | starts u64 |
//!          grad_norm f64 | neg_loglik f64 | seconds f64 | tol f64 |
//!          theta f64[d1] | gamma f64[d2] |
//!          L, the lower Cholesky factor of Cov(theta_hat), row-major lower triangle f64[d1(d1+1)/2] |
//!          Cov(gamma_hat) f64[d2*d2] row-major |
//!          -- version 2 onwards: the interval method --
//!          requested u8 | method u8 (0 wald, 1 bootstrap, 2 resized, 3 auto,
//!          4 cluster-jackknife, 5 cluster-onestep) |
//!          reps B u64 | seed u64 | diverged u64 | shrink f64 | alpha_hat f64 | c_hat f64 |
//!          gamma_bias f64[d2, or 0 when B = 0] | theta draws f32[B*d1] | gamma draws f32[B*d2] |
//!          -- version 3 only: the unbounded coefficients of a cluster method --
//!          U u32 (>= 1) | U x (coefficient u32, stacked: theta then gamma | cluster id i64)
//! ```
//!
//! A version-1 file (no interval section) loads as a model with Wald intervals.
//!
//! Saving writes a temporary file next to the target and renames it over the target, so a
//! crash never leaves a half-written model under the target name.

use crate::calibrate::{
    any_draw_count, check_draw_count, Calibration, IntervalMethod, Method, Parts,
};
use crate::cluster::Carried;
use crate::codes::Coded;
use crate::covariance::CovarianceKind;
use crate::error::{Error, Result};
use crate::fit::{FitReport, SolverKind, Termination};
use crate::fitted::RewardModel;
use crate::model::Params;
use nalgebra::DMatrix;
use std::io::Read;
use std::path::Path;

/// First 8 bytes of every model file.
pub(crate) const MAGIC: &[u8; 8] = b"HETRWRD\0";
/// The newest format version this library writes (it also reads [`OLDEST_VERSION`] onwards):
/// 3 for a model whose cluster intervals leave coefficients unbounded, 2 for every other
/// model, so their bytes do not change.
pub const FORMAT_VERSION: u32 = 3;
/// The version of a model that lists unbounded coefficients
/// ([`Calibration::unbounded`]); the others are written as version 2.
const UNBOUNDED_VERSION: u32 = 3;
/// The oldest format version this library reads.
pub const OLDEST_VERSION: u32 = 1;
const HEADER_LEN: usize = 20;

/// An enum field's byte: its stable code ([`crate::codes`]; every set has fewer than 256).
fn byte<T: Coded>(value: T) -> u8 {
    u8::try_from(value.code()).expect("codes fit in a byte")
}

/// The enum value of a byte, or `what` (the payload's error).
fn from_byte<T: Coded>(code: u8, what: &'static str) -> std::result::Result<T, &'static str> {
    T::from_code(u32::from(code)).ok_or(what)
}

/// Serialises a model to bytes.
pub fn to_bytes(model: &RewardModel) -> Vec<u8> {
    let (d1, d2) = (model.d1(), model.d2());
    let r = model.report();
    let mut p = Vec::with_capacity(128 + 8 * (d1 * (d1 + 3) / 2 + d2 * (d2 + 1)));
    p.extend((model.n() as u64).to_le_bytes());
    p.extend((d1 as u32).to_le_bytes());
    p.extend((d2 as u32).to_le_bytes());
    p.push(byte(model.covariance()));
    p.push(byte(r.solver));
    p.push(byte(r.termination));
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
    write_calibration(&mut p, model.calibration());
    let unbounded = model.calibration().unbounded();
    let version = if unbounded.is_empty() {
        2
    } else {
        p.extend((unbounded.len() as u32).to_le_bytes());
        for c in unbounded {
            p.extend((c.coefficient as u32).to_le_bytes());
            p.extend(c.cluster.to_le_bytes());
        }
        UNBOUNDED_VERSION
    };
    let mut out = Vec::with_capacity(HEADER_LEN + p.len() + 4);
    out.extend(MAGIC);
    out.extend(version.to_le_bytes());
    out.extend((p.len() as u64).to_le_bytes());
    out.extend(&p);
    out.extend(crc32fast::hash(&p).to_le_bytes());
    out
}

/// Parses a model from bytes; `name` labels errors (a path or `"<buffer>"`).
///
/// Rejects, with a [`Error::Format`] naming what is wrong: a wrong magic number, another format
/// version, a truncated or over-long buffer, a checksum mismatch, and inconsistent content.
pub fn from_bytes(bytes: &[u8], name: &str) -> Result<RewardModel> {
    let bad = |detail: String| Error::format(name, detail);
    if bytes.len() >= MAGIC.len() && &bytes[..MAGIC.len()] != MAGIC {
        return Err(bad("not a hetreward model file (bad magic number)".into()));
    }
    if bytes.len() < HEADER_LEN + 4 {
        return Err(bad(format!(
            "truncated: {} bytes is shorter than the smallest model file",
            bytes.len()
        )));
    }
    check_header(&bytes[..HEADER_LEN], bytes.len() as u64, name)?;
    let len = bytes.len() - HEADER_LEN - 4;
    let payload = &bytes[HEADER_LEN..HEADER_LEN + len];
    let stored = u32::from_le_bytes(bytes[bytes.len() - 4..].try_into().unwrap());
    if crc32fast::hash(payload) != stored {
        return Err(bad("checksum mismatch: the file is corrupted".into()));
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    parse_payload(payload, version).map_err(|detail| inconsistent(name, &detail))
}

/// Appends the version-2 interval section: every method in one flat record, the figures a
/// method does not estimate written as 1 (`shrink`, `alpha_hat`), seeds it has none of as 0,
/// and a bias it does not estimate as `d2` zeros (none for Wald).
fn write_calibration(p: &mut Vec<u8>, c: &Calibration) {
    let (seed, shrink, alpha_hat, bias) = match c.resolved() {
        Method::Wald | Method::Jackknife { .. } => (0, 1.0, 1.0, None),
        Method::Percentile { seed, .. } => (*seed, 1.0, 1.0, None),
        Method::Resized {
            seed,
            shrink,
            alpha_hat,
            gamma_bias,
            ..
        } => (*seed, *shrink, *alpha_hat, Some(gamma_bias.as_slice())),
    };
    let d2 = c.dims().map_or(0, |(_, d2)| d2);
    let zeros = vec![0.0; d2];
    p.push(byte(c.requested()));
    p.push(byte(c.method()));
    for v in [c.reps() as u64, seed, c.diverged() as u64] {
        p.extend(v.to_le_bytes());
    }
    for v in [shrink, alpha_hat, c.c_hat()]
        .iter()
        .chain(bias.unwrap_or(&zeros))
    {
        p.extend(v.to_le_bytes());
    }
    for v in c.theta_draws().iter().chain(c.gamma_draws()) {
        p.extend(v.to_le_bytes());
    }
}

/// Reads the interval section (version 2; version 3 with its list of unbounded coefficients)
/// and builds it by the one rule a fit's calibration obeys ([`Parts::build`]: the count of
/// draws of the method, then every stored figure against its meaning, the unbounded
/// coefficients in range, increasing, of a cluster method). The count is checked before the
/// draws are read.
fn read_calibration(
    r: &mut Reader,
    version: u32,
    d1: usize,
    d2: usize,
) -> std::result::Result<Calibration, String> {
    let method = |code: u8| from_byte::<IntervalMethod>(code, "unknown interval method");
    let requested = method(r.u8()?)?;
    let resolved = method(r.u8()?)?;
    let (reps, seed, diverged) = (r.u64()?, r.u64()?, r.u64()?);
    let figures = [r.f64()?, r.f64()?, r.f64()?];
    let reps = usize::try_from(reps).map_err(|_| "bootstrap reps overflow")?;
    let diverged = usize::try_from(diverged).map_err(|_| "diverged count overflow")?;
    if resolved != IntervalMethod::Wald {
        check_draw_count(resolved, reps)
            .map_err(|rule| format!("interval section: `B` = {rule}"))?;
    }
    // Each draw needs 4 (d1 + d2) bytes: reject absurd counts before allocating.
    let per_draw = 4 * (d1 + d2);
    if reps.checked_mul(per_draw).is_none_or(|b| b > r.remaining()) {
        return Err(format!("payload too short for {reps} draws"));
    }
    let gamma_bias = r.f64s(if reps > 0 { d2 } else { 0 })?;
    let theta_draws = r.f32s(reps * d1)?;
    let gamma_draws = r.f32s(reps * d2)?;
    let mut unbounded = Vec::new();
    if version >= UNBOUNDED_VERSION {
        let count = r.u32()? as usize;
        if count == 0 {
            return Err(
                "interval section: `unbounded`: a version-3 model lists at least one \
                        unbounded coefficient (a model without is written as version 2)"
                    .into(),
            );
        }
        if count
            .checked_mul(UNBOUNDED_ENTRY)
            .is_none_or(|b| b > r.remaining())
        {
            return Err(format!(
                "payload too short for {count} unbounded coefficients"
            ));
        }
        for _ in 0..count {
            let coefficient = r.u32()? as usize;
            let cluster = r.u64()? as i64;
            unbounded.push(Carried {
                coefficient,
                cluster,
            });
        }
    }
    Parts {
        requested,
        method: resolved,
        reps,
        seed,
        diverged,
        figures,
        gamma_bias,
        theta_draws,
        gamma_draws,
        unbounded,
    }
    .build(d1, d2)
}

/// Bytes of the payload before the interval section (the whole version-1 payload) of a model
/// with `d1`, `d2`: the fixed fields, theta, gamma, the factor L and Cov(gamma).
fn base_payload_len(d1: usize, d2: usize) -> Option<usize> {
    d1.checked_mul(d1.checked_add(3)?)
        .map(|v| v / 2)
        .and_then(|v| v.checked_add(d2.checked_mul(d2.checked_add(1)?)?))
        .and_then(|v| v.checked_mul(8))
        .and_then(|v| v.checked_add(FIXED_FIELDS))
}

/// Bytes of the fields before theta in the payload.
const FIXED_FIELDS: usize = 76;
/// Bytes of the interval section without the bias and the draws.
const SECTION_FIXED: usize = 2 + 3 * 8 + 3 * 8;
/// Bytes of one unbounded coefficient (version 3): its index and its carrier's id.
const UNBOUNDED_ENTRY: usize = 4 + 8;

/// Checks a payload length against the dimensions at its start (read first, so a file whose
/// length cannot hold a model of those dimensions is refused before the rest is read): exactly
/// the version-1 layout, or in version 2 the interval section of a Wald model or of `B`
/// draws, `B` a count some interval method holds ([`any_draw_count`]; the method's own
/// range is checked when the section is read); in version 3 the section of `B` draws and a
/// list of `U` unbounded coefficients, `1 <= U <= d1 + d2`.
fn check_payload_len(
    version: u32,
    d1: usize,
    d2: usize,
    len: usize,
) -> std::result::Result<(), String> {
    if d1 == 0 {
        return Err("d1 = 0: a model has at least one reward feature".into());
    }
    let mismatch = || format!("payload size does not match d1 = {d1}, d2 = {d2}");
    let base = base_payload_len(d1, d2).ok_or("dimensions overflow")?;
    if version == 1 {
        return if len == base { Ok(()) } else { Err(mismatch()) };
    }
    let Some(rest) = len.checked_sub(base + SECTION_FIXED) else {
        return Err(mismatch());
    };
    if rest == 0 && version < UNBOUNDED_VERSION {
        return Ok(()); // a Wald model
    }
    let per_draw = 4 * (d1 + d2);
    let draws_of = |rest: usize| match rest.checked_sub(8 * d2) {
        Some(draws) if draws % per_draw == 0 => Some(draws / per_draw),
        _ => None,
    };
    let counts = any_draw_count();
    let reps = if version < UNBOUNDED_VERSION {
        draws_of(rest)
    } else {
        // The list's length `u` that leaves a count of draws some method holds, if any.
        let candidates = || {
            (1..=d1 + d2)
                .filter_map(|u| rest.checked_sub(4 + u * UNBOUNDED_ENTRY))
                .filter_map(draws_of)
        };
        candidates()
            .find(|reps| counts.contains(reps))
            .or_else(|| candidates().next())
    };
    let Some(reps) = reps else {
        return Err(mismatch());
    };
    if counts.contains(&reps) {
        Ok(())
    } else {
        Err(format!(
            "{}: its interval section holds {reps} draws; a model holds {} to {}",
            mismatch(),
            counts.start(),
            counts.end()
        ))
    }
}

fn parse_payload(p: &[u8], version: u32) -> std::result::Result<RewardModel, String> {
    let mut r = Reader { p, at: 0 };
    let n = r.u64()? as usize;
    let d1 = r.u32()? as usize;
    let d2 = r.u32()? as usize;
    let covariance: CovarianceKind = from_byte(r.u8()?, "unknown covariance kind")?;
    let solver: SolverKind = from_byte(r.u8()?, "unknown solver")?;
    let termination: Termination = from_byte(r.u8()?, "unknown termination")?;
    let converged = match r.u8()? {
        0 => false,
        1 => true,
        _ => return Err("converged flag is not 0 or 1".into()),
    };
    let (iterations, total_iterations, starts) =
        (r.u64()? as usize, r.u64()? as usize, r.u64()? as usize);
    let (grad_norm, neg_loglik, seconds, tol) = (r.f64()?, r.f64()?, r.f64()?, r.f64()?);
    check_payload_len(version, d1, d2, p.len())?;
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
    let calibration = if version == 1 {
        Calibration::wald(IntervalMethod::Wald)
    } else {
        let c = read_calibration(&mut r, version, d1, d2)?;
        if r.remaining() != 0 {
            return Err(format!("payload size does not match d1 = {d1}, d2 = {d2}"));
        }
        c
    };
    RewardModel::from_parts(Params { theta, gamma }, n, covariance, report, l, gamma_cov)
        .and_then(|m| m.with_calibration(calibration))
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
    fn f32s(&mut self, k: usize) -> std::result::Result<Vec<f32>, String> {
        (0..k)
            .map(|_| Ok(f32::from_le_bytes(self.take()?)))
            .collect()
    }
    fn remaining(&self) -> usize {
        self.p.len() - self.at
    }
}

/// Writes the model to `path` atomically ([`crate::io::atomic`]): a temporary file, created
/// exclusively under a short hidden name in the same folder, is written, flushed to disk and
/// renamed over `path` (then the folder is synced on Unix), so a crash or a concurrent writer
/// never leaves a half-written model under the target name.
///
/// Errors: [`Error::Io`] naming `path` (missing folder, permissions, full disk...);
/// [`Error::InvalidArgument`] when `path` names no file.
pub fn save(model: &RewardModel, path: &Path) -> Result<()> {
    crate::io::atomic::write(path, &to_bytes(model))
}

/// Reads a model file written by [`save`].
///
/// The 20-byte header is read and checked first (magic, version, announced length against the
/// file's size), so a file of another kind or version is rejected without reading it whole.
/// Errors: [`Error::Io`] if the file cannot be read; [`Error::Format`] naming the file for
/// everything [`from_bytes`] rejects.
pub fn load(path: &Path) -> Result<RewardModel> {
    let name = path.display().to_string();
    let io = |e: std::io::Error| Error::io(&name, &e);
    let mut file = super::input_file::open(path)?;
    let size = file.metadata().map_err(io)?.len();
    let mut header = [0u8; HEADER_LEN];
    let got = read_up_to(&mut file, &mut header).map_err(io)?;
    if got < HEADER_LEN || size < (HEADER_LEN + 4) as u64 {
        // Too short to hold a header: let from_bytes report exactly what is wrong.
        return from_bytes(&header[..got], &name);
    }
    check_header(&header, size, &name)?;
    // The dimensions at the payload's start must fit its length before the rest is read: a
    // sparse file of zeros behind a valid header is refused here, not after reading it whole.
    let mut prefix = [0u8; 16];
    let got = read_up_to(&mut file, &mut prefix).map_err(io)?;
    if got == prefix.len() {
        let version = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes"));
        let dim =
            |at: usize| u32::from_le_bytes(prefix[at..at + 4].try_into().expect("4")) as usize;
        let payload = size - (HEADER_LEN + 4) as u64;
        let payload =
            usize::try_from(payload).map_err(|_| inconsistent(&name, "dimensions overflow"))?;
        check_payload_len(version, dim(8), dim(12), payload)
            .map_err(|detail| inconsistent(&name, &detail))?;
    }
    // The size comes from the file system (a sparse file can claim terabytes): allocate
    // fallibly, so an impossible size is an error, not an abort of the host.
    let mut bytes = usize::try_from(size)
        .ok()
        .and_then(|len| crate::error::try_with_capacity::<u8>(&name, len).ok())
        .ok_or_else(|| {
            io(std::io::Error::new(
                std::io::ErrorKind::OutOfMemory,
                format!("cannot allocate {size} bytes to read the model"),
            ))
        })?;
    bytes.extend_from_slice(&header);
    bytes.extend_from_slice(&prefix[..got]);
    // Never more than the size the header was checked against (a file that grows while it is
    // read is then "truncated or padded", not read without end).
    let left = size.saturating_sub(bytes.len() as u64) + 1;
    file.take(left).read_to_end(&mut bytes).map_err(io)?;
    from_bytes(&bytes, &name)
}

/// The format error of a payload whose content is inconsistent.
fn inconsistent(name: &str, detail: &str) -> Error {
    Error::format(name, format!("inconsistent content: {detail}"))
}

fn read_up_to(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..])? {
            0 => break,
            k => got += k,
        }
    }
    Ok(got)
}

/// Checks magic, version and the announced payload length against a total size of `total`
/// bytes.
fn check_header(header: &[u8], total: u64, name: &str) -> Result<()> {
    let bad = |detail: String| Error::format(name, detail);
    if &header[..8] != MAGIC {
        return Err(bad("not a hetreward model file (bad magic number)".into()));
    }
    let version = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes"));
    if !(OLDEST_VERSION..=FORMAT_VERSION).contains(&version) {
        return Err(bad(format!(
            "model format version {version} is not supported (this library reads versions \
             {OLDEST_VERSION} to {FORMAT_VERSION}); {}",
            if version > FORMAT_VERSION {
                "the file was written by a newer hetreward"
            } else {
                "the file is damaged or was not written by hetreward"
            }
        )));
    }
    let len = u64::from_le_bytes(header[12..20].try_into().expect("8 bytes"));
    let expected_total = (HEADER_LEN as u64)
        .checked_add(len)
        .and_then(|v| v.checked_add(4));
    if expected_total != Some(total) {
        return Err(bad(format!(
            "truncated or padded: the header announces a {len}-byte payload ({} bytes in all), \
             the file has {total} bytes",
            expected_total.map_or("too many".to_string(), |t| t.to_string())
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::{FitControl, FitOptions};
    use crate::sim::{homogeneous, paper_simulation, ActionDesign};

    fn small_model() -> RewardModel {
        let data = paper_simulation(200, ActionDesign::Uniform, 3);
        RewardModel::estimate(
            &data,
            &FitOptions::default(),
            CovarianceKind::Expected,
            &FitControl::default(),
        )
        .unwrap()
    }

    fn format_error(bytes: &[u8]) -> String {
        match from_bytes(bytes, "m.hrm") {
            Err(e @ Error::Format { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains("m.hrm"), "{msg}");
                msg
            }
            Err(other) => panic!("expected a format error, got {other:?}"),
            Ok(_) => panic!("a damaged file was accepted"),
        }
    }

    /// Re-seals a payload with a valid length and checksum (to test checks behind the CRC).
    fn seal(version: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend(version.to_le_bytes());
        out.extend((payload.len() as u64).to_le_bytes());
        out.extend(payload);
        out.extend(crc32fast::hash(payload).to_le_bytes());
        out
    }

    #[test]
    fn round_trip_is_exact() {
        for model in [
            small_model(),
            RewardModel::estimate(
                &homogeneous(300, &[0.5, -1.0], 9),
                &FitOptions::default(),
                CovarianceKind::Robust,
                &FitControl::default(),
            )
            .unwrap(),
        ] {
            let bytes = to_bytes(&model);
            let back = from_bytes(&bytes, "<buffer>").unwrap();
            assert_eq!(back, model);
            assert_eq!(to_bytes(&back), bytes);
            // Bit-exact scoring after the round trip.
            let phi = vec![0.3; model.d1()];
            assert_eq!(
                back.score(&phi, 0.05).unwrap(),
                model.score(&phi, 0.05).unwrap()
            );
        }
    }

    #[test]
    fn save_and_load_through_a_file() {
        let model = small_model();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.hrm");
        save(&model, &path).unwrap();
        assert_eq!(load(&path).unwrap(), model);
        // Saving over an existing model replaces it and leaves no temporary file behind.
        save(&model, &path).unwrap();
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
        // A missing folder is an I/O error naming the path.
        let e = save(&model, &dir.path().join("no/such/dir/m.hrm")).unwrap_err();
        assert!(matches!(e, Error::Io { .. }) && e.to_string().contains("m.hrm"));
    }

    #[test]
    fn every_truncation_is_rejected() {
        let bytes = to_bytes(&small_model());
        for len in 0..bytes.len() {
            let msg = format_error(&bytes[..len]);
            assert!(msg.contains("truncated"), "length {len}: {msg}");
        }
        // And through a file: the header check sees the short size before reading on.
        let dir = tempfile::tempdir().unwrap();
        for len in [0, 7, 8, 19, 20, 23, 24, bytes.len() / 2, bytes.len() - 1] {
            let path = dir.path().join(format!("t{len}.hrm"));
            std::fs::write(&path, &bytes[..len]).unwrap();
            let e = load(&path).unwrap_err();
            assert!(e.to_string().contains("truncated"), "length {len}: {e}");
        }
    }

    #[test]
    fn padding_is_rejected() {
        let mut bytes = to_bytes(&small_model());
        bytes.push(0);
        assert!(format_error(&bytes).contains("padded"));
    }

    #[test]
    fn every_single_bit_flip_is_rejected() {
        let bytes = to_bytes(&small_model());
        for bit in 0..bytes.len() * 8 {
            let mut damaged = bytes.clone();
            damaged[bit / 8] ^= 1 << (bit % 8);
            let msg = format_error(&damaged);
            let region = match bit / 8 {
                0..8 => "magic",
                8..12 => "version",
                12..20 => "payload",
                _ => "checksum",
            };
            let expected = match region {
                "magic" => "bad magic",
                "version" => "version",
                "payload" => "truncated or padded",
                _ => "checksum mismatch",
            };
            // Version 2 flipped to 3 (a supported version) reads a list the payload lacks.
            let version_3 = region == "version" && msg.contains("payload size does not match");
            assert!(
                msg.contains(expected) || version_3,
                "bit {bit} ({region}): {msg}"
            );
        }
    }

    #[test]
    fn other_versions_are_rejected_even_with_a_valid_checksum() {
        let bytes = to_bytes(&small_model());
        let payload = &bytes[HEADER_LEN..bytes.len() - 4];
        let msg = format_error(&seal(FORMAT_VERSION + 1, payload));
        assert!(
            msg.contains(&format!("version {} is not supported", FORMAT_VERSION + 1))
                && msg.contains("newer"),
            "{msg}"
        );
        let msg = format_error(&seal(0, payload));
        assert!(msg.contains("version 0 is not supported"), "{msg}");
        assert_eq!(
            from_bytes(&seal(2, payload), "x").unwrap(),
            from_bytes(&bytes, "x").unwrap()
        );
        // A version-2 payload is no version-3 model (which lists unbounded coefficients).
        let msg = format_error(&seal(FORMAT_VERSION, payload));
        assert!(msg.contains("payload size does not match"), "{msg}");
    }

    /// A model whose cluster intervals leave a coefficient unbounded (one annotator carries
    /// the expert flag) is written as version 3 with its list and reads back to the bit; the
    /// list is checked by name behind a valid checksum (an index out of range, a duplicate,
    /// an empty list, a method that is not a cluster method), and the same payload is refused
    /// as version 2.
    #[test]
    fn unbounded_coefficients_round_trip_as_version_3_and_are_checked() {
        let data = crate::sim::annotator_effects(12, 50, 0.6, 5);
        let model = estimate_with(&data, IntervalMethod::Auto, None).unwrap();
        let (d1, d2) = (model.d1(), model.d2());
        let unbounded = model.calibration().unbounded().to_vec();
        assert_eq!(unbounded.len(), 1);
        assert_eq!(unbounded[0].coefficient, d1);
        let bytes = to_bytes(&model);
        assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), 3);
        let back = from_bytes(&bytes, "x").unwrap();
        assert_eq!(back, model);
        assert_eq!(back.calibration().unbounded(), &unbounded[..]);
        assert_eq!(to_bytes(&back), bytes);
        let payload = bytes[HEADER_LEN..bytes.len() - 4].to_vec();
        let tail = payload.len() - (4 + UNBOUNDED_ENTRY);
        // Coefficient index out of range.
        let mut bad = payload.clone();
        bad[tail + 4..tail + 8].copy_from_slice(&((d1 + d2) as u32).to_le_bytes());
        let msg = format_error(&seal(3, &bad));
        assert!(
            msg.contains(&format!(
                "`unbounded`[0] = coefficient {}: the model has {} coefficients",
                d1 + d2,
                d1 + d2
            )),
            "{msg}"
        );
        // The same coefficient twice.
        let mut twice = payload.clone();
        twice[tail..tail + 4].copy_from_slice(&2u32.to_le_bytes());
        twice.extend_from_slice(&payload[tail + 4..]);
        let msg = format_error(&seal(3, &twice));
        assert!(
            msg.contains("listed once each, in increasing order"),
            "{msg}"
        );
        // An empty list is version 2's.
        let mut empty = payload[..tail].to_vec();
        empty.extend(0u32.to_le_bytes());
        let msg = format_error(&seal(3, &empty));
        assert!(
            msg.contains("a version-3 model lists at least one unbounded coefficient"),
            "{msg}"
        );
        // The list on a method that is not a cluster method.
        let boot = to_bytes(&calibrated_model(IntervalMethod::Bootstrap));
        let mut listed = boot[HEADER_LEN..boot.len() - 4].to_vec();
        listed.extend(1u32.to_le_bytes());
        listed.extend(0u32.to_le_bytes());
        listed.extend(0i64.to_le_bytes());
        let msg = format_error(&seal(3, &listed));
        assert!(
            msg.contains("`unbounded`: the percentile bootstrap lists no unbounded coefficients"),
            "{msg}"
        );
        // Version 2 reads no list: the payload's tail is left over.
        let msg = format_error(&seal(2, &payload));
        assert!(msg.contains("payload size does not match"), "{msg}");
        // Without its list the section is an ordinary cluster model's: the list, not the
        // draws, is what makes gamma[0] unbounded.
        let plain = from_bytes(&seal(2, &payload[..tail]), "x").unwrap();
        assert!(plain.calibration().unbounded().is_empty());
    }

    #[test]
    fn inconsistent_content_behind_a_valid_checksum_is_rejected() {
        let bytes = to_bytes(&small_model());
        let payload = bytes[HEADER_LEN..bytes.len() - 4].to_vec();
        // theta[0] starts after the fixed fields: 8+4+4+4*1+3*8+4*8 = 76 bytes.
        let mut nan_theta = payload.clone();
        nan_theta[76..84].copy_from_slice(&f64::NAN.to_le_bytes());
        let v = 2; // the version of a model without unbounded coefficients
        assert!(format_error(&seal(v, &nan_theta)).contains("non-finite value NaN in `theta`"));
        let mut big_d1 = payload.clone();
        big_d1[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        let msg = format_error(&seal(v, &big_d1));
        assert!(
            msg.contains("payload size does not match") || msg.contains("overflow"),
            "{msg}"
        );
        let mut zero_d1 = payload.clone();
        zero_d1[8..12].copy_from_slice(&0u32.to_le_bytes());
        assert!(format_error(&seal(v, &zero_d1)).contains("inconsistent content"));
        let mut kind = payload.clone();
        kind[16] = 9;
        assert!(format_error(&seal(v, &kind)).contains("unknown covariance kind"));
        let mut flag = payload;
        flag[19] = 2;
        assert!(format_error(&seal(v, &flag)).contains("converged flag"));
    }

    /// The version-1 payload of a Wald model: the version-2 payload without its interval
    /// section (the layout before it is unchanged).
    fn version_1_payload(model: &RewardModel) -> Vec<u8> {
        assert!(!model.calibration().uses_draws());
        let bytes = to_bytes(model);
        let payload = &bytes[HEADER_LEN..bytes.len() - 4];
        // Wald section: 2 bytes of codes, 3 u64, 3 f64.
        payload[..payload.len() - 2 - 24 - 24].to_vec()
    }

    #[test]
    fn version_1_files_still_load_as_wald_models() {
        let model = small_model();
        let v1 = seal(1, &version_1_payload(&model));
        let back = from_bytes(&v1, "old.hrm").unwrap();
        assert_eq!(back, model);
        assert_eq!(back.calibration().method(), IntervalMethod::Wald);
        // A version-1 file with a version-2 section (or a version-2 file without) is damaged.
        let bytes = to_bytes(&model);
        let msg = format_error(&seal(1, &bytes[HEADER_LEN..bytes.len() - 4]));
        assert!(msg.contains("payload size does not match"), "{msg}");
        let msg = format_error(&seal(2, &version_1_payload(&model)));
        assert!(msg.contains("payload size does not match"), "{msg}");
    }

    fn calibrated_model(method: IntervalMethod) -> RewardModel {
        let data = paper_simulation(200, ActionDesign::Uniform, 3);
        crate::estimator::EstimatorOptions {
            fit: FitOptions {
                seed: 1,
                ..FitOptions::default()
            },
            intervals: crate::calibrate::IntervalOptions {
                method,
                reps: Some(30),
            },
            ..Default::default()
        }
        .check()
        .unwrap()
        .estimate(&data, &FitControl::default())
        .unwrap()
    }

    #[test]
    fn cluster_jackknife_draws_round_trip_exactly() {
        let data = crate::sim::annotator_effects(20, 15, 0.5, 4);
        for method in [
            IntervalMethod::ClusterJackknife,
            IntervalMethod::ClusterOneStep,
            IntervalMethod::Auto,
        ] {
            let model = crate::estimator::EstimatorOptions {
                intervals: crate::calibrate::IntervalOptions { method, reps: None },
                ..Default::default()
            }
            .check()
            .unwrap()
            .estimate(&data, &FitControl::default())
            .unwrap();
            assert!(model.calibration().method().is_cluster());
            assert_eq!(model.calibration().reps(), 20);
            let back = from_bytes(&to_bytes(&model), "<buffer>").unwrap();
            assert_eq!(back, model);
            let phi = [0.1, 0.2, 0.3, -0.1, 0.0, 0.4];
            assert_eq!(
                back.score(&phi, 0.05).unwrap(),
                model.score(&phi, 0.05).unwrap()
            );
        }
    }

    /// `n` comparisons dealt round-robin to `g` annotators (cluster ids): `z ~ N(0, I_3)`,
    /// `psi0 = 1`, one covariate `x ~ N(0, 1)` per comparison, rationality `1 + 0.4 x`,
    /// `y ~ Bern(mu(sigma theta . z))` — a design whose information stays positive definite
    /// without any one annotator, so every cluster method has an estimate at every G.
    fn clustered(n: usize, g: usize, seed: u64) -> crate::data::Dataset {
        use rand::Rng;
        use rand_distr::StandardNormal;
        let mut rng = crate::sim::rng(seed);
        let theta = [0.8, -0.5, 0.3];
        let (mut z, mut psi, mut y) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..n {
            let zi: Vec<f64> = (0..3).map(|_| rng.sample(StandardNormal)).collect();
            let x: f64 = rng.sample(StandardNormal);
            let sigma = 1.0 + 0.4 * x;
            let prob = crate::model::sigmoid(sigma * crate::linalg::dot(&theta, &zi));
            y.push(f64::from(rng.random::<f64>() < prob));
            z.extend(zi);
            psi.push(x);
        }
        let ids = (0..n).map(|i| (i % g) as i64).collect();
        crate::data::Dataset::new(3, 1, z, vec![1.0; n], psi, y, Some(ids)).unwrap()
    }

    fn estimate_with(
        data: &crate::data::Dataset,
        method: IntervalMethod,
        reps: Option<usize>,
    ) -> Result<RewardModel> {
        crate::estimator::EstimatorOptions {
            intervals: crate::calibrate::IntervalOptions { method, reps },
            ..Default::default()
        }
        .check()?
        .estimate(data, &FitControl::default())
    }

    /// Issue 31 item 1: a model that a fit writes loads, the same to the bit, for every
    /// interval method and every cluster count — G below 10 (a cluster model holds G draws,
    /// not `B` bootstrap refits) and above 100,000 (every comparison its own annotator); at
    /// G = 2 the fit refuses (fewer than `MIN_CLUSTERS`) instead of writing a model.
    #[test]
    fn every_model_a_fit_writes_loads_whatever_the_method_and_cluster_count() {
        let round_trip = |model: &RewardModel| {
            let bytes = to_bytes(model);
            let back = from_bytes(&bytes, "<buffer>").unwrap();
            assert_eq!(&back, model);
            assert_eq!(to_bytes(&back), bytes);
        };
        let cluster_methods = [
            IntervalMethod::ClusterJackknife,
            IntervalMethod::ClusterOneStep,
            IntervalMethod::Auto,
        ];
        for g in [2, 3, 6, 9, 10, 11, 40] {
            let data = clustered(300, g, 5 + g as u64);
            for method in cluster_methods {
                match estimate_with(&data, method, None) {
                    Ok(model) => {
                        assert!(g >= crate::cluster::MIN_CLUSTERS);
                        assert_eq!(model.calibration().reps(), g);
                        assert!(model.calibration().method().is_cluster());
                        round_trip(&model);
                    }
                    Err(e) => {
                        assert!(g < crate::cluster::MIN_CLUSTERS, "G = {g} {method:?}: {e}");
                        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
                        assert!(e.to_string().contains("at least 3"), "{e}");
                    }
                }
            }
        }
        // Every row its own annotator, more than MAX_REPS of them: the one-step jackknife
        // (what auto picks) and the file hold 100,001 draws.
        let large = clustered(
            crate::calibrate::MAX_REPS + 1,
            crate::calibrate::MAX_REPS + 1,
            3,
        );
        let model = estimate_with(&large, IntervalMethod::Auto, None).unwrap();
        assert_eq!(model.calibration().reps(), crate::calibrate::MAX_REPS + 1);
        round_trip(&model);
        // The bootstraps at the ends of their range that a test can afford.
        let data = paper_simulation(200, ActionDesign::Uniform, 3);
        for method in [IntervalMethod::Bootstrap, IntervalMethod::Resized] {
            for reps in [crate::calibrate::MIN_REPS, crate::calibrate::MIN_REPS + 1] {
                round_trip(&estimate_with(&data, method, Some(reps)).unwrap());
            }
        }
        round_trip(&estimate_with(&data, IntervalMethod::Wald, None).unwrap());
    }

    /// A crafted cluster model is refused by the same rule, in the cluster jackknife's words:
    /// draws all equal for one coefficient (SE 0, z = inf), and figures the jackknife does
    /// not estimate.
    #[test]
    fn crafted_cluster_models_are_refused_by_name() {
        let model =
            estimate_with(&clustered(300, 6, 11), IntervalMethod::ClusterOneStep, None).unwrap();
        let (payload, at) = payload_and_section(&model);
        let (g, d1, d2) = (model.calibration().reps(), model.d1(), model.d2());
        assert_eq!(g, 6);
        let theta_draws = at + SECTION_FIXED + 8 * d2;
        // Every draw of theta[1] equal to the first.
        let mut flat = payload.clone();
        for b in 0..g {
            let (from, to) = (theta_draws + 4, theta_draws + 4 * (b * d1 + 1));
            let v: [u8; 4] = flat[from..from + 4].try_into().unwrap();
            flat[to..to + 4].copy_from_slice(&v);
        }
        let msg = format_error(&seal(2, &flat));
        assert!(
            msg.contains("`theta draws`[*][1]: all 6 draws equal")
                && msg.contains("the cluster jackknife (one-step) gives the coefficient no spread"),
            "{msg}"
        );
        // Every draw of gamma[0] equal.
        let mut flat = payload.clone();
        let gamma_draws = theta_draws + 4 * g * d1;
        for b in 1..g {
            let v: [u8; 4] = flat[gamma_draws..gamma_draws + 4].try_into().unwrap();
            let to = gamma_draws + 4 * b * d2;
            flat[to..to + 4].copy_from_slice(&v);
        }
        let msg = format_error(&seal(2, &flat));
        assert!(
            msg.contains("`gamma draws`[*][0]: all 6 draws equal"),
            "{msg}"
        );
        let mut shrink = payload.clone();
        shrink[at + 26..at + 34].copy_from_slice(&0.5f64.to_le_bytes());
        let msg = format_error(&seal(2, &shrink));
        assert!(
            msg.contains("`shrink` = 0.5: the cluster jackknife (one-step) stores 1")
                && !msg.contains("bootstrap"),
            "{msg}"
        );
        // Claimed as the exact jackknife, the same draws load (both hold G draws).
        let mut exact = payload;
        exact[at] = byte(IntervalMethod::ClusterJackknife);
        exact[at + 1] = byte(IntervalMethod::ClusterJackknife);
        let back = from_bytes(&seal(2, &exact), "x").unwrap();
        assert_eq!(
            back.calibration().method(),
            IntervalMethod::ClusterJackknife
        );
    }

    #[test]
    fn bootstrap_draws_round_trip_exactly() {
        for method in [
            IntervalMethod::Bootstrap,
            IntervalMethod::Resized,
            IntervalMethod::Auto,
        ] {
            let model = calibrated_model(method);
            assert!(model.calibration().uses_draws());
            let bytes = to_bytes(&model);
            let back = from_bytes(&bytes, "<buffer>").unwrap();
            assert_eq!(back, model);
            assert_eq!(back.calibration().requested(), method);
            let phi = [0.1, 0.2, 0.3];
            assert_eq!(
                back.score(&phi, 0.05).unwrap(),
                model.score(&phi, 0.05).unwrap()
            );
        }
    }

    #[test]
    fn damaged_interval_sections_are_rejected() {
        let model = calibrated_model(IntervalMethod::Bootstrap);
        let bytes = to_bytes(&model);
        let payload = bytes[HEADER_LEN..bytes.len() - 4].to_vec();
        // The section starts after the v1 layout: 76 + 8 (3 + 2 + 6 + 4) = 196 bytes.
        let at = 76 + 8 * (3 + 2 + 6 + 4);
        let mut method = payload.clone();
        method[at + 1] = 7;
        assert!(format_error(&seal(2, &method)).contains("unknown interval method"));
        let mut mismatch = payload.clone();
        mismatch[at] = 0; // requested wald, carries bootstrap
        assert!(format_error(&seal(2, &mismatch)).contains("requested wald"));
        let mut reps = payload.clone();
        reps[at + 2..at + 10].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(format_error(&seal(2, &reps)).contains("`B` = 18446744073709551615"));
        let mut nan = payload.clone();
        let last = nan.len() - 4;
        nan[last..].copy_from_slice(&f32::NAN.to_le_bytes());
        assert!(format_error(&seal(2, &nan)).contains("`gamma draws`"));
        let mut long = payload;
        long.extend([0u8; 4]);
        assert!(format_error(&seal(2, &long)).contains("payload size does not match"));
    }

    /// The payload of `model` and the offset of its interval section.
    fn payload_and_section(model: &RewardModel) -> (Vec<u8>, usize) {
        let bytes = to_bytes(model);
        let (d1, d2) = (model.d1(), model.d2());
        let at = FIXED_FIELDS + 8 * (d1 + d2 + d1 * (d1 + 1) / 2 + d2 * d2);
        (bytes[HEADER_LEN..bytes.len() - 4].to_vec(), at)
    }

    #[test]
    fn figures_that_cannot_be_are_refused_behind_a_valid_checksum() {
        // Section layout: requested, method, B, seed, diverged, shrink, alpha_hat, c_hat, bias,
        // theta draws, gamma draws.
        let f64_field = |at: usize, v: f64| {
            move |p: &mut Vec<u8>| p[at..at + 8].copy_from_slice(&v.to_le_bytes())
        };
        let resized = calibrated_model(IntervalMethod::Resized);
        let (payload, at) = payload_and_section(&resized);
        let (b, d1, d2) = (resized.calibration().reps(), resized.d1(), resized.d2());
        let theta_draws = at + SECTION_FIXED + 8 * d2;
        type Change = Box<dyn Fn(&mut Vec<u8>)>;
        let cases: Vec<(&str, Change, &str)> = vec![
            (
                "c_hat -3",
                Box::new(f64_field(at + 42, -3.0)),
                "`c_hat` = -3",
            ),
            ("c_hat 0", Box::new(f64_field(at + 42, 0.0)), "`c_hat` = 0"),
            (
                "c_hat inf",
                Box::new(f64_field(at + 42, f64::INFINITY)),
                "`c_hat` = inf",
            ),
            (
                "shrink -0.5",
                Box::new(f64_field(at + 26, -0.5)),
                "`shrink` = -0.5",
            ),
            (
                "shrink 2",
                Box::new(f64_field(at + 26, 2.0)),
                "`shrink` = 2",
            ),
            (
                "shrink NaN",
                Box::new(f64_field(at + 26, f64::NAN)),
                "`shrink` = NaN",
            ),
            (
                "alpha_hat -1",
                Box::new(f64_field(at + 34, -1.0)),
                "`alpha_hat` = -1",
            ),
            (
                "alpha_hat NaN",
                Box::new(f64_field(at + 34, f64::NAN)),
                "`alpha_hat` = NaN",
            ),
            (
                "bias inf",
                Box::new(f64_field(at + 50, f64::INFINITY)),
                "`gamma_bias`[0] = inf",
            ),
            (
                "B 5",
                Box::new(move |p: &mut Vec<u8>| {
                    p[at + 2..at + 10].copy_from_slice(&5u64.to_le_bytes())
                }),
                "`B` = 5",
            ),
            (
                "diverged B + 1",
                Box::new(move |p: &mut Vec<u8>| {
                    p[at + 18..at + 26].copy_from_slice(&(b as u64 + 1).to_le_bytes())
                }),
                "`diverged`",
            ),
            (
                "theta draw inf",
                Box::new(move |p: &mut Vec<u8>| {
                    let i = theta_draws + 4 * (d1 + 1);
                    p[i..i + 4].copy_from_slice(&f32::INFINITY.to_le_bytes())
                }),
                "`theta draws`[1][1] = inf",
            ),
            (
                "gamma draw NaN",
                Box::new(move |p: &mut Vec<u8>| {
                    let i = theta_draws + 4 * b * d1;
                    p[i..i + 4].copy_from_slice(&f32::NAN.to_le_bytes())
                }),
                "`gamma draws`[0][0] = NaN",
            ),
        ];
        for (what, change, needle) in cases {
            let mut p = payload.clone();
            change(&mut p);
            let msg = format_error(&seal(2, &p));
            assert!(
                msg.contains(needle) && msg.contains("interval section"),
                "{what}: {msg}"
            );
        }
        // The percentile bootstrap estimates no shrink, inflation or bias: it stores 1, 1, 0.
        let boot = calibrated_model(IntervalMethod::Bootstrap);
        let (payload, at) = payload_and_section(&boot);
        for (offset, v, needle) in [
            (26, 0.5, "`shrink` = 0.5"),
            (34, 2.0, "`alpha_hat` = 2"),
            (50, 1e-3, "`gamma_bias`[0] = 0.001"),
        ] {
            let mut p = payload.clone();
            f64_field(at + offset, v)(&mut p);
            let msg = format_error(&seal(2, &p));
            assert!(msg.contains(needle), "{msg}");
        }
        // The figures of real fits pass.
        for model in [resized, boot] {
            assert_eq!(from_bytes(&to_bytes(&model), "x").unwrap(), model);
        }
    }

    #[test]
    fn a_length_that_cannot_hold_the_dimensions_is_refused_before_reading_on() {
        // A 10 GB sparse file behind a valid header: refused from its first 36 bytes.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sparse.hrm");
        let size: u64 = 10 << 30;
        let mut head = MAGIC.to_vec();
        head.extend(FORMAT_VERSION.to_le_bytes());
        head.extend((size - 24).to_le_bytes());
        std::fs::write(&path, &head).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(size)
            .unwrap();
        let started = std::time::Instant::now();
        let e = load(&path).unwrap_err().to_string();
        assert!(e.contains("sparse.hrm") && e.contains("d1 = 0"), "{e}");
        assert!(started.elapsed().as_secs_f64() < 1.0);
        // With d1 = 1, d2 = 0 the length holds no model either.
        let mut prefix = head.clone();
        prefix.extend(7u64.to_le_bytes());
        prefix.extend(1u32.to_le_bytes());
        prefix.extend(0u32.to_le_bytes());
        std::fs::write(&path, &prefix).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(size)
            .unwrap();
        let e = load(&path).unwrap_err().to_string();
        assert!(
            e.contains("payload size does not match d1 = 1, d2 = 0"),
            "{e}"
        );
        // A length that implies a count of draws no method holds says so
        let model = small_model();
        let (d1, d2) = (model.d1(), model.d2());
        let base = base_payload_len(d1, d2).unwrap() + SECTION_FIXED + 8 * d2;
        // (the hull of the methods' ranges: 3 cluster draws to 100,000 refits or 10^6 clusters).
        let e = check_payload_len(2, d1, d2, base + 4 * (d1 + d2) * 2).unwrap_err();
        assert!(
            e.contains("holds 2 draws") && e.contains("3 to 1000000"),
            "{e}"
        );
        assert!(check_payload_len(2, d1, d2, base + 4 * (d1 + d2) * 3).is_ok());
        assert!(check_payload_len(2, d1, d2, base + 4 * (d1 + d2) * 1_000_000).is_ok());
        let e = check_payload_len(2, d1, d2, base + 4 * (d1 + d2) * 1_000_001).unwrap_err();
        assert!(e.contains("holds 1000001 draws"), "{e}");
        assert!(check_payload_len(2, d1, d2, base - 8 * d2).is_ok()); // Wald
    }

    #[test]
    fn other_files_are_not_models() {
        let msg = format_error(b"y,psi0,z1\n1,1,0.5\n0,1,-0.25\n");
        assert!(msg.contains("bad magic"), "{msg}");
        let msg = format_error(b"");
        assert!(msg.contains("truncated"), "{msg}");
    }
}
