//! The validated training set: one pairwise comparison per row.
//!
//! A [`Dataset`] is only ever built through [`Dataset::new`] (or [`Dataset::from_pairs`]), which
//! checks every SPEC §8 condition once; the math downstream assumes valid input.

use crate::error::{check_finite, Error, Result};

/// Pairwise-comparison training data (SPEC §1), stored row-major in `f64`.
///
/// Row `i` holds `z_i = phi(s,a1) - phi(s,a0)` (length `d1`), the fixed rationality part
/// `psi0_i`, the covariates `psi_i` (length `d2`, possibly 0), the label `y_i` (1 if the
/// annotator preferred `a1`) and optionally a cluster (annotator) id.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    n: usize,
    d1: usize,
    d2: usize,
    z: Vec<f64>,
    psi0: Vec<f64>,
    psi: Vec<f64>,
    y: Vec<f64>,
    cluster: Option<Vec<i64>>,
}

impl Dataset {
    /// Builds a dataset from row-major arrays and validates it.
    ///
    /// * `z`: `n * d1` values, row-major; `psi0`: `n`; `psi`: `n * d2` (empty when `d2 = 0`);
    /// * `y`: `n` labels, each exactly 0 or 1; `cluster`: `None` or `n` ids.
    ///
    /// Errors: zero `n` or `d1`, mismatched lengths, NaN/inf values, labels not in {0,1},
    /// `psi0` identically zero, or fewer samples than parameters (`n <= d1 + d2`); every message
    /// names the argument and the offending index.
    pub fn new(
        d1: usize,
        d2: usize,
        z: Vec<f64>,
        psi0: Vec<f64>,
        psi: Vec<f64>,
        y: Vec<f64>,
        cluster: Option<Vec<i64>>,
    ) -> Result<Self> {
        let n = y.len();
        if n == 0 {
            return Err(Error::dims("y", "at least one sample", "0 samples"));
        }
        if d1 == 0 {
            return Err(Error::dims("d1", "d1 >= 1", 0));
        }
        check_len("z", &z, n * d1, format!("n * d1 = {n} * {d1}"))?;
        check_len("psi0", &psi0, n, format!("n = {n}"))?;
        check_len("psi", &psi, n * d2, format!("n * d2 = {n} * {d2}"))?;
        if let Some(c) = &cluster {
            check_len("cluster", c, n, format!("n = {n}"))?;
        }
        check_finite("z", &z)?;
        check_finite("psi0", &psi0)?;
        check_finite("psi", &psi)?;
        check_finite("y", &y)?;
        if let Some(i) = y.iter().position(|&v| v != 0.0 && v != 1.0) {
            return Err(Error::invalid(
                "y",
                format!("labels must be 0 or 1; y[{i}] = {}", y[i]),
            ));
        }
        if psi0.iter().all(|&v| v == 0.0) {
            return Err(Error::invalid(
                "psi0",
                "psi0 is identically zero: theta and gamma are not identifiable (SPEC §1)",
            ));
        }
        let p = d1 + d2;
        if n <= p {
            return Err(Error::invalid(
                "n",
                format!("{n} samples cannot identify {p} parameters (d1 = {d1}, d2 = {d2}); need n > d1 + d2"),
            ));
        }
        Ok(Dataset {
            n,
            d1,
            d2,
            z,
            psi0,
            psi,
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
    /// Row `i` of z (length `d1`).
    #[inline]
    pub fn z_row(&self, i: usize) -> &[f64] {
        &self.z[i * self.d1..(i + 1) * self.d1]
    }
    /// Row `i` of psi (length `d2`).
    #[inline]
    pub fn psi_row(&self, i: usize) -> &[f64] {
        &self.psi[i * self.d2..(i + 1) * self.d2]
    }
    /// All of z, row-major `n * d1`.
    pub fn z(&self) -> &[f64] {
        &self.z
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
