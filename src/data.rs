//! The validated training set: one pairwise comparison per row.
//!
//! A [`Dataset`] is only ever built through [`Dataset::new`] (or [`Dataset::from_pairs`]), which
//! checks every docs/contract.md §8 condition once; the math downstream assumes valid input.

use crate::error::{check_finite, Error, Result};
use nalgebra::{DMatrix, DVector, SymmetricEigen};
use std::sync::OnceLock;

/// The feature matrix z in the precision it is stored in.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Features {
    /// Double precision (from [`Dataset::new`]).
    F64(Vec<f64>),
    /// Single precision (from [`Dataset::new_f32`]): half the memory and half the memory
    /// traffic per pass; every sum over samples is still accumulated in `f64`.
    F32(Vec<f32>),
}

/// A borrowed view of z (row-major `n * d1`) in its storage precision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FeatureMatrix<'a> {
    /// Stored as `f64`.
    F64(&'a [f64]),
    /// Stored as `f32`.
    F32(&'a [f32]),
}

impl Features {
    fn len(&self) -> usize {
        match self {
            Features::F64(v) => v.len(),
            Features::F32(v) => v.len(),
        }
    }

    fn check_finite(&self) -> Result<()> {
        match self {
            Features::F64(v) => check_finite("z", v),
            Features::F32(v) => match v.iter().position(|x| !x.is_finite()) {
                None => Ok(()),
                Some(index) => Err(Error::NonFinite {
                    arg: "z".to_string(),
                    index,
                    value: f64::from(v[index]),
                }),
            },
        }
    }
}

/// An `f64` copy of single-precision z, made on the first call of [`Dataset::z`] or
/// [`Dataset::z_row`] (the library's passes never need it). Ignored by `==`; not cloned.
#[derive(Default)]
struct WideCopy(OnceLock<Vec<f64>>);

impl Clone for WideCopy {
    fn clone(&self) -> Self {
        WideCopy::default()
    }
}

impl PartialEq for WideCopy {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for WideCopy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "WideCopy(made)"
        } else {
            "WideCopy(none)"
        })
    }
}

/// Pairwise-comparison training data (docs/contract.md §1), stored row-major: z in `f64` ([`Dataset::new`])
/// or `f32` ([`Dataset::new_f32`]), everything else in `f64`.
///
/// Row `i` holds `z_i = phi(s,a1) - phi(s,a0)` (length `d1`), the fixed rationality part
/// `psi0_i`, the covariates `psi_i` (length `d2`, possibly 0), the label `y_i` (1 if the
/// annotator preferred `a1`) and optionally a cluster (annotator) id.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    n: usize,
    d1: usize,
    d2: usize,
    /// Shared (not copied) by [`Dataset::with_labels`]: bootstrap refits relabel the same
    /// covariates hundreds of times.
    z: std::sync::Arc<Features>,
    wide: WideCopy,
    psi0: std::sync::Arc<Vec<f64>>,
    psi: std::sync::Arc<Vec<f64>>,
    y: Vec<f64>,
    cluster: Option<Vec<i64>>,
}

/// What a dataset's rows are, for the checks that need all of a training set's rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rows {
    /// A whole training set: identifiability (`n > d1 + d2`, `psi0` not identically zero
    /// and not in the span of `psi`) is checked when it is built.
    Whole,
    /// One shard of a distributed fit: only its shape and values are checked.
    /// Identifiability is a property of the merged shards: the driver checks the total row
    /// count (`crate::shard::merge_summaries`) and a `psi0` that does not identify the
    /// scale shows as singular merged information (`SingularInformation`).
    Shard,
}

impl Dataset {
    /// Builds a dataset from row-major arrays and validates it.
    ///
    /// * `z`: `n * d1` values, row-major; `psi0`: `n`; `psi`: `n * d2` (empty when `d2 = 0`);
    /// * `y`: `n` labels, each exactly 0 or 1; `cluster`: `None` or `n` ids.
    ///
    /// Errors: zero `n` or `d1`, mismatched lengths, NaN/inf values, labels not in {0,1},
    /// `psi0` identically zero, `psi0` a linear combination of the columns of `psi` (then
    /// `sigma = (a + gamma) . psi` and `(k theta, (a + gamma) / k - a)` fits as well as
    /// `(theta, gamma)` for every `k != 0`: the scale is not identifiable), or fewer samples than
    /// parameters (`n <= d1 + d2`); every message names the argument and the offending index.
    /// The checks cost `O(n (d1 + d2^2))`.
    pub fn new(
        d1: usize,
        d2: usize,
        z: Vec<f64>,
        psi0: Vec<f64>,
        psi: Vec<f64>,
        y: Vec<f64>,
        cluster: Option<Vec<i64>>,
    ) -> Result<Self> {
        Self::build(Rows::Whole, d1, d2, Features::F64(z), psi0, psi, y, cluster)
    }

    /// [`Dataset::new`] for `rows`: [`Rows::Shard`] skips the identifiability checks, which
    /// apply to the merged shards only.
    #[allow(clippy::too_many_arguments)]
    pub fn with_rows(
        rows: Rows,
        d1: usize,
        d2: usize,
        z: Vec<f64>,
        psi0: Vec<f64>,
        psi: Vec<f64>,
        y: Vec<f64>,
        cluster: Option<Vec<i64>>,
    ) -> Result<Self> {
        Self::build(rows, d1, d2, Features::F64(z), psi0, psi, y, cluster)
    }

    /// [`Dataset::new`] with z in single precision (`n * d1` `f32` values, as inference engines
    /// hand out embeddings), stored as given: half the memory of `f64` storage and passes over
    /// the data twice as fast. Every sum over samples (likelihood, gradient, information) is
    /// accumulated in `f64`, so the estimate is the maximum-likelihood estimate of the data as
    /// stored. Arguments and errors as [`Dataset::new`].
    pub fn new_f32(
        d1: usize,
        d2: usize,
        z: Vec<f32>,
        psi0: Vec<f64>,
        psi: Vec<f64>,
        y: Vec<f64>,
        cluster: Option<Vec<i64>>,
    ) -> Result<Self> {
        Self::build(Rows::Whole, d1, d2, Features::F32(z), psi0, psi, y, cluster)
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn build(
        rows: Rows,
        d1: usize,
        d2: usize,
        z: Features,
        psi0: Vec<f64>,
        psi: Vec<f64>,
        y: Vec<f64>,
        cluster: Option<Vec<i64>>,
    ) -> Result<Self> {
        let n = y.len();
        if n == 0 {
            return Err(Error::dims(
                "n",
                "at least one sample (n is the length of y)",
                "0 samples",
            ));
        }
        if d1 == 0 {
            return Err(Error::dims("d1", "d1 >= 1", 0));
        }
        if z.len() != n * d1 {
            return Err(Error::dims(
                "z",
                format!("{} values (n * d1 = {n} * {d1})", n * d1),
                z.len(),
            ));
        }
        check_len("psi0", &psi0, n, format!("n = {n}"))?;
        check_len("psi", &psi, n * d2, format!("n * d2 = {n} * {d2}"))?;
        if let Some(c) = &cluster {
            check_len("cluster", c, n, format!("n = {n}"))?;
        }
        z.check_finite()?;
        check_finite("psi0", &psi0)?;
        check_finite("psi", &psi)?;
        check_finite("y", &y)?;
        if let Some(i) = y.iter().position(|&v| v != 0.0 && v != 1.0) {
            return Err(Error::invalid(
                "y",
                format!("labels must be 0 or 1; y[{i}] = {}", y[i]),
            ));
        }
        if rows == Rows::Whole {
            if psi0.iter().all(|&v| v == 0.0) {
                return Err(Error::invalid(
                    "psi0",
                    "psi0 is identically zero: theta and gamma are not identifiable (docs/contract.md §1)",
                ));
            }
            check_sample_count("n", n as u64, d1, d2)?;
            check_psi0_not_in_span(n, d2, &psi0, &psi)?;
        }
        Ok(Dataset {
            n,
            d1,
            d2,
            z: std::sync::Arc::new(z),
            wide: WideCopy::default(),
            psi0: std::sync::Arc::new(psi0),
            psi: std::sync::Arc::new(psi),
            y,
            cluster,
        })
    }

    /// Builds a dataset from the two answers' feature vectors: `z = phi1 - phi0` row by row.
    /// `phi0`, `phi1`: `n * d1` row-major. Other arguments and errors as [`Dataset::new`].
    #[allow(clippy::too_many_arguments)]
    pub fn from_pairs(
        d1: usize,
        d2: usize,
        phi0: &[f64],
        phi1: &[f64],
        psi0: Vec<f64>,
        psi: Vec<f64>,
        y: Vec<f64>,
        cluster: Option<Vec<i64>>,
    ) -> Result<Self> {
        let n = y.len();
        check_len("phi0", phi0, n * d1, format!("n * d1 = {n} * {d1}"))?;
        check_len("phi1", phi1, n * d1, format!("n * d1 = {n} * {d1}"))?;
        check_finite("phi0", phi0)?;
        check_finite("phi1", phi1)?;
        let z = phi1.iter().zip(phi0).map(|(a, b)| a - b).collect();
        Self::new(d1, d2, z, psi0, psi, y, cluster)
    }

    /// Number of samples.
    pub fn n(&self) -> usize {
        self.n
    }
    /// Dimension of the reward features (length of theta).
    pub fn d1(&self) -> usize {
        self.d1
    }
    /// Dimension of the annotator covariates (length of gamma).
    pub fn d2(&self) -> usize {
        self.d2
    }
    /// Number of parameters, `d1 + d2`.
    pub fn n_params(&self) -> usize {
        self.d1 + self.d2
    }
    /// Row `i` of z (length `d1`) in `f64` (see [`Dataset::z`] for `f32` storage). The
    /// library's passes read rows through [`Dataset::features`] instead.
    #[inline]
    pub fn z_row(&self, i: usize) -> &[f64] {
        &self.z()[i * self.d1..(i + 1) * self.d1]
    }
    /// z in its storage precision, row-major `n * d1` (no copy).
    #[inline]
    pub fn features(&self) -> FeatureMatrix<'_> {
        match &*self.z {
            Features::F64(v) => FeatureMatrix::F64(v),
            Features::F32(v) => FeatureMatrix::F32(v),
        }
    }
    /// True when z is stored in single precision ([`Dataset::new_f32`]).
    pub fn is_f32(&self) -> bool {
        matches!(*self.z, Features::F32(_))
    }
    /// Row `i` of psi (length `d2`).
    #[inline]
    pub fn psi_row(&self, i: usize) -> &[f64] {
        &self.psi[i * self.d2..(i + 1) * self.d2]
    }
    /// All of z, row-major `n * d1`, in `f64`. For `f32` storage ([`Dataset::new_f32`]) the
    /// first call makes an `f64` copy, kept for later calls (`8 n d1` more bytes); use
    /// [`Dataset::features`] to read z in its storage precision without it.
    pub fn z(&self) -> &[f64] {
        match &*self.z {
            Features::F64(v) => v,
            Features::F32(v) => self
                .wide
                .0
                .get_or_init(|| v.iter().map(|&x| f64::from(x)).collect()),
        }
    }
    /// psi0, length `n`.
    pub fn psi0(&self) -> &[f64] {
        &self.psi0
    }
    /// All of psi, row-major `n * d2`.
    pub fn psi(&self) -> &[f64] {
        &self.psi
    }
    /// Labels, each 0.0 or 1.0.
    pub fn y(&self) -> &[f64] {
        &self.y
    }
    /// Cluster ids, if given.
    pub fn cluster(&self) -> Option<&[i64]> {
        self.cluster.as_deref()
    }

    /// The distinct cluster ids in increasing order and, for each, its rows in increasing
    /// order; `None` without cluster ids. The one grouping every per-cluster computation reads.
    pub(crate) fn cluster_rows(&self) -> Option<(Vec<i64>, Vec<Vec<usize>>)> {
        let ids = self.cluster.as_deref()?;
        let mut map: std::collections::BTreeMap<i64, Vec<usize>> = Default::default();
        for (i, &c) in ids.iter().enumerate() {
            map.entry(c).or_default().push(i);
        }
        Some(map.into_iter().unzip())
    }

    /// The same covariates (shared, not copied: `O(n)` memory for the labels only) with new
    /// labels `y` — a parametric bootstrap sample. Labels are not re-validated: the caller
    /// draws them as 0.0 / 1.0.
    ///
    /// Panics if `y.len() != n` (a caller bug).
    pub(crate) fn with_labels(&self, y: Vec<f64>) -> Dataset {
        assert_eq!(y.len(), self.n, "with_labels: one label per sample");
        debug_assert!(y.iter().all(|&v| v == 0.0 || v == 1.0));
        Dataset {
            n: self.n,
            d1: self.d1,
            d2: self.d2,
            z: self.z.clone(),
            wide: WideCopy::default(),
            psi0: self.psi0.clone(),
            psi: self.psi.clone(),
            y,
            cluster: self.cluster.clone(),
        }
    }
}

impl Dataset {
    /// The rows `rows` of this dataset, in that order (a row may repeat: a cluster bootstrap
    /// resample), cluster ids kept. Not re-validated: the rows of a valid dataset are finite
    /// with 0/1 labels, but a subset may leave `psi0` in the span of `psi` (one annotator's
    /// rows) or have fewer rows than parameters; callers that fit a subset need neither check
    /// (a leave-one-cluster-out refit starts at the full estimate), and callers that take one
    /// cluster's sums only sum. `O(|rows| (d1 + d2))` copies.
    ///
    /// Panics if `rows` is empty or a row is out of range (a caller bug).
    pub(crate) fn select_rows(&self, rows: &[usize]) -> Dataset {
        assert!(!rows.is_empty(), "select_rows: at least one row");
        let (d1, d2) = (self.d1, self.d2);
        let z = match &*self.z {
            Features::F64(v) => Features::F64(
                rows.iter()
                    .flat_map(|&i| v[i * d1..(i + 1) * d1].iter().copied())
                    .collect(),
            ),
            Features::F32(v) => Features::F32(
                rows.iter()
                    .flat_map(|&i| v[i * d1..(i + 1) * d1].iter().copied())
                    .collect(),
            ),
        };
        Dataset {
            n: rows.len(),
            d1,
            d2,
            z: std::sync::Arc::new(z),
            wide: WideCopy::default(),
            psi0: std::sync::Arc::new(rows.iter().map(|&i| self.psi0[i]).collect()),
            psi: std::sync::Arc::new(
                rows.iter()
                    .flat_map(|&i| self.psi[i * d2..(i + 1) * d2].iter().copied())
                    .collect(),
            ),
            y: rows.iter().map(|&i| self.y[i]).collect(),
            cluster: self
                .cluster
                .as_ref()
                .map(|c| rows.iter().map(|&i| c[i]).collect()),
        }
    }
}

/// Relative residual below which `psi0` counts as lying in the span of the columns of `psi`.
/// Far below any real signal: at `1e-6`, the information about the scale of theta is ~1e-12 of
/// the rest, i.e. the scale is unidentifiable in practice too.
const SPAN_RTOL: f64 = 1e-6;

/// Rejects `psi0 = psi a` for some `a` (docs/contract.md §1: then theta and gamma are not identifiable).
///
/// Least squares on the column-equilibrated Gram matrix (`O(n d2^2)`, one pass, `d2 x d2`
/// memory), solved by a symmetric eigendecomposition that drops directions with eigenvalue below
/// `1e-10` of the largest (collinear covariates are the information check's business, later);
/// then a second pass computes the residual `psi0 - psi a` explicitly, so a tiny residual is a
/// fact about the data and not a rounding artefact of the normal equations.
/// Rejects fewer samples than parameters (`n <= d1 + d2`), naming `what` (the dataset's `n`,
/// or the merged shards').
pub(crate) fn check_sample_count(what: &str, n: u64, d1: usize, d2: usize) -> Result<()> {
    let p = d1 + d2;
    if n <= p as u64 {
        return Err(Error::invalid(
            what,
            format!("{n} samples cannot identify {p} parameters (d1 = {d1}, d2 = {d2}); need n > d1 + d2"),
        ));
    }
    Ok(())
}

fn check_psi0_not_in_span(n: usize, d2: usize, psi0: &[f64], psi: &[f64]) -> Result<()> {
    if d2 == 0 {
        return Ok(());
    }
    let norm0 = psi0.iter().map(|v| v * v).sum::<f64>().sqrt();
    let mut scale = vec![0.0f64; d2];
    for row in psi.chunks_exact(d2) {
        for (s, v) in scale.iter_mut().zip(row) {
            *s += v * v;
        }
    }
    // 1 / column norm (0 for an all-zero column, which then takes no part).
    let inv: Vec<f64> = scale
        .iter()
        .map(|s| if *s > 0.0 { 1.0 / s.sqrt() } else { 0.0 })
        .collect();
    if norm0 == 0.0 || !norm0.is_finite() || inv.iter().any(|v| !v.is_finite()) {
        return Ok(()); // all-zero psi0 is rejected before; overflowing norms: leave it to the fit
    }
    let mut gram = DMatrix::<f64>::zeros(d2, d2);
    let mut rhs = DVector::<f64>::zeros(d2);
    let mut x = vec![0.0f64; d2];
    for (i, row) in psi.chunks_exact(d2).enumerate() {
        for ((xj, v), s) in x.iter_mut().zip(row).zip(&inv) {
            *xj = v * s;
        }
        let t = psi0[i] / norm0;
        for j in 0..d2 {
            rhs[j] += x[j] * t;
            for k in 0..=j {
                gram[(j, k)] += x[j] * x[k];
            }
        }
    }
    for j in 0..d2 {
        for k in 0..j {
            gram[(k, j)] = gram[(j, k)];
        }
    }
    let eig = SymmetricEigen::new(gram);
    let top = eig.eigenvalues.iter().copied().fold(0.0f64, f64::max);
    if top <= 0.0 || !top.is_finite() {
        return Ok(());
    }
    let mut w = DVector::<f64>::zeros(d2);
    for (k, &lambda) in eig.eigenvalues.iter().enumerate() {
        if lambda > 1e-10 * top {
            let v = eig.eigenvectors.column(k);
            w += v * (v.dot(&rhs) / lambda);
        }
    }
    let residual = psi
        .chunks_exact(d2)
        .zip(psi0)
        .map(|(row, p0)| {
            let fitted: f64 = row
                .iter()
                .zip(&inv)
                .zip(w.iter())
                .map(|((v, s), wj)| v * s * wj)
                .sum();
            let r = p0 / norm0 - fitted;
            r * r
        })
        .sum::<f64>()
        .sqrt();
    if residual <= SPAN_RTOL {
        let a: Vec<f64> = w.iter().zip(&inv).map(|(wj, s)| wj * s * norm0).collect();
        let big = a.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        // Rounding-level coefficients print as 0 (not as -0.000000).
        let a: Vec<String> = a
            .iter()
            .map(|v| format!("{:.6}", if v.abs() <= 1e-9 * big { 0.0 } else { *v }))
            .collect();
        return Err(Error::invalid(
            "psi0",
            format!(
                "psi0 is a linear combination of the columns of psi (psi0 = psi . a with \
                 a = [{}] on all {n} rows, to a relative residual below {SPAN_RTOL:.0e}): the \
                 rationality is then (a + gamma) . psi and the scale of theta is not \
                 identifiable (docs/contract.md §1); drop a column of psi (e.g. the baseline level of a \
                 one-hot covariate) or change psi0",
                a.join(", ")
            ),
        ));
    }
    Ok(())
}

fn check_len<T>(arg: &str, values: &[T], expected: usize, what: String) -> Result<()> {
    if values.len() == expected {
        Ok(())
    } else {
        Err(Error::dims(
            arg,
            format!("{expected} values ({what})"),
            values.len(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny(y: Vec<f64>) -> Result<Dataset> {
        let n = y.len();
        Dataset::new(1, 0, vec![1.0; n], vec![1.0; n], vec![], y, None)
    }

    #[test]
    fn rejects_bad_labels_with_index() {
        let err = tiny(vec![0.0, 1.0, 0.5]).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { ref arg, .. } if arg == "y"));
        assert!(err.to_string().contains("y[2]"), "{err}");
    }

    #[test]
    fn rejects_nan_with_index() {
        let err = Dataset::new(
            2,
            0,
            vec![1.0, 2.0, f64::NAN, 1.0, 0.0, 1.0],
            vec![1.0; 3],
            vec![],
            vec![0.0, 1.0, 1.0],
            None,
        )
        .unwrap_err();
        assert!(matches!(err, Error::NonFinite { ref arg, index: 2, .. } if arg == "z"));
    }

    #[test]
    fn rejects_zero_psi0_and_too_few_samples() {
        let err = Dataset::new(
            1,
            0,
            vec![1.0; 3],
            vec![0.0; 3],
            vec![],
            vec![0.0, 1.0, 1.0],
            None,
        )
        .unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { ref arg, .. } if arg == "psi0"));
        let err = Dataset::new(
            3,
            0,
            vec![1.0; 9],
            vec![1.0; 3],
            vec![],
            vec![0.0, 1.0, 1.0],
            None,
        )
        .unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { ref arg, .. } if arg == "n"));
    }

    /// n rows of (psi0, psi) from a closure of the row index; z, y fixed and valid.
    fn with_psi(n: usize, d2: usize, row: impl Fn(usize) -> (f64, Vec<f64>)) -> Result<Dataset> {
        let (psi0, psi): (Vec<f64>, Vec<Vec<f64>>) = (0..n).map(row).unzip();
        let z = (0..n)
            .map(|i| ((i * 7919) % 13) as f64 / 6.0 - 1.0)
            .collect();
        let y = (0..n).map(|i| (i % 2) as f64).collect();
        Dataset::new(1, d2, z, psi0, psi.concat(), y, None)
    }

    /// A deterministic pseudo-random number in [-1, 1) (splitmix64 of the row and a salt).
    fn unit(i: usize, salt: usize) -> f64 {
        let mut x = (i as u64) ^ ((salt as u64) << 32);
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^= x >> 31;
        (x >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }

    #[test]
    fn rejects_psi0_in_the_span_of_psi() {
        // An intercept column in psi while psi0 = 1.
        let e = with_psi(50, 2, |i| (1.0, vec![unit(i, 1), 1.0])).unwrap_err();
        assert!(
            matches!(e, Error::InvalidArgument { ref arg, .. } if arg == "psi0"),
            "{e}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains("linear combination of the columns of psi"),
            "{msg}"
        );
        assert!(msg.contains("a = [0.000000, 1.000000]"), "{msg}");
        // A full one-hot encoding (no baseline level) sums to psi0 = 1.
        let e = with_psi(60, 3, |i| {
            let mut v = vec![0.0; 3];
            v[i % 3] = 1.0;
            (1.0, v)
        })
        .unwrap_err();
        assert!(
            e.to_string().contains("a = [1.000000, 1.000000, 1.000000]"),
            "{e}"
        );
        // psi0 proportional to a badly scaled covariate, next to collinear columns.
        let e = with_psi(40, 3, |i| {
            let x = unit(i, 2);
            (2.5e-3 * x, vec![1e3 * x, unit(i, 3), 2.0 * unit(i, 3)])
        })
        .unwrap_err();
        assert!(e.to_string().contains("psi0"), "{e}");
    }

    #[test]
    fn accepts_psi0_outside_the_span_of_psi() {
        // One-hot with a baseline level: psi0 = 1 is not a combination of the columns.
        with_psi(60, 2, |i| {
            let mut v = vec![0.0; 2];
            if i % 3 < 2 {
                v[i % 3] = 1.0;
            }
            (1.0, v)
        })
        .unwrap();
        // The paper's design: psi0 = x, psi = (x^3, x^2).
        with_psi(30, 2, |i| {
            let x = unit(i, 4);
            (x, vec![x.powi(3), x * x])
        })
        .unwrap();
        // Close to the span, but 1e-3 away: identifiable (if weakly), so accepted.
        with_psi(50, 2, |i| (1.0 + 1e-3 * unit(i, 5), vec![unit(i, 1), 1.0])).unwrap();
        // Collinear covariates (a matter for the information check) and an all-zero column.
        with_psi(50, 3, |i| (1.0, vec![unit(i, 6), -3.0 * unit(i, 6), 0.0])).unwrap();
    }

    #[test]
    fn rejects_mismatched_lengths() {
        let err = Dataset::new(
            2,
            1,
            vec![1.0; 8],
            vec![1.0; 4],
            vec![1.0; 3],
            vec![0.0, 1.0, 1.0, 0.0],
            None,
        )
        .unwrap_err();
        assert!(matches!(err, Error::DimensionMismatch { ref arg, .. } if arg == "psi"));
    }

    #[test]
    fn pairs_give_differences() {
        let d = Dataset::from_pairs(
            1,
            0,
            &[1.0, 2.0, 3.0],
            &[2.0, 2.0, 5.0],
            vec![1.0; 3],
            vec![],
            vec![0.0, 1.0, 1.0],
            None,
        )
        .unwrap();
        assert_eq!(d.z(), &[1.0, 0.0, 2.0]);
    }
}
