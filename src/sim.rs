//! Seeded data generators: the paper's §6.1 simulation, used by the tests, the coverage study,
//! the benchmarks and the demo.
//!
//! Paper §6.1: prompt `s ~ N(0,1)`, annotator context `x ~ N(0,1)`,
//! `phi(s,a) = (s^2 a, a^2 s, a s)`, `psi0(x) = x`, `psi(x) = (x^3, x^2)`,
//! `theta* = (1/4, 1/2, 1/3)`, `gamma* = (1/2, 1/3)`. The paper's text draws the answers as
//! `a0 ~ N(0,1)`, `a1 ~ N(0,2)`; its Table 2 interval lengths are reproduced by
//! `a0 ~ U(0,1)`, `a1 ~ U(0,2)` instead (docs/contract.md §7.3). Both readings are available as
//! [`ActionDesign`].

use crate::data::Dataset;
use crate::model::{dot, sigmoid};
use rand::Rng;
use rand_distr::StandardNormal;

/// True reward parameter of the paper's simulation.
pub const PAPER_THETA: [f64; 3] = [0.25, 0.5, 1.0 / 3.0];
/// True rationality parameter of the paper's simulation.
pub const PAPER_GAMMA: [f64; 2] = [0.5, 1.0 / 3.0];

/// How the two answers `a0`, `a1` of the paper's simulation are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionDesign {
    /// The paper's text: `a0 ~ N(0,1)`, `a1 ~ N(0,2)` (variance 2).
    Normal,
    /// The reading that reproduces the paper's Table 2: `a0 ~ U(0,1)`, `a1 ~ U(0,2)`.
    Uniform,
}

impl ActionDesign {
    /// Stable name, as used in reports and on the command line ("normal", "uniform").
    pub fn name(self) -> &'static str {
        match self {
            ActionDesign::Normal => "normal",
            ActionDesign::Uniform => "uniform",
        }
    }
}

/// The paper's reward features `phi(s,a) = (s^2 a, a^2 s, a s)`.
pub fn paper_phi(s: f64, a: f64) -> [f64; 3] {
    [s * s * a, a * a * s, a * s]
}

pub use crate::rng::rng;

/// One dataset of the paper's simulation with `n` comparisons (labels drawn from the model with
/// the true parameters). Deterministic for a seed.
///
/// Panics only if `n <= 5` (too few samples for the 5 parameters).
pub fn paper_simulation(n: usize, design: ActionDesign, seed: u64) -> Dataset {
    let mut rng = rng(seed);
    let mut z = Vec::with_capacity(3 * n);
    let mut psi0 = Vec::with_capacity(n);
    let mut psi = Vec::with_capacity(2 * n);
    let mut y = Vec::with_capacity(n);
    for _ in 0..n {
        let s: f64 = rng.sample(StandardNormal);
        let (a0, a1): (f64, f64) = match design {
            ActionDesign::Normal => (
                rng.sample(StandardNormal),
                2f64.sqrt() * rng.sample::<f64, _>(StandardNormal),
            ),
            ActionDesign::Uniform => (rng.random::<f64>(), 2.0 * rng.random::<f64>()),
        };
        let x: f64 = rng.sample(StandardNormal);
        let (p0, p1) = (paper_phi(s, a0), paper_phi(s, a1));
        let zi = [p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2]];
        let sigma = x + PAPER_GAMMA[0] * x.powi(3) + PAPER_GAMMA[1] * x * x;
        let prob = sigmoid(sigma * dot(&PAPER_THETA, &zi));
        y.push(if rng.random::<f64>() < prob { 1.0 } else { 0.0 });
        z.extend_from_slice(&zi);
        psi0.push(x);
        psi.extend_from_slice(&[x.powi(3), x * x]);
    }
    Dataset::new(3, 2, z, psi0, psi, y, None).expect("paper simulation needs n > 5")
}

/// Homogeneous logistic data (`d2 = 0`, `psi0 = 1`): `z ~ N(0, I_d1)`, `y ~ Bern(mu(theta.z))`.
pub fn homogeneous(n: usize, theta: &[f64], seed: u64) -> Dataset {
    let mut rng = rng(seed);
    let d1 = theta.len();
    let z: Vec<f64> = (0..n * d1).map(|_| rng.sample(StandardNormal)).collect();
    let y = (0..n)
        .map(|i| {
            let prob = sigmoid(dot(theta, &z[i * d1..(i + 1) * d1]));
            if rng.random::<f64>() < prob {
                1.0
            } else {
                0.0
            }
        })
        .collect();
    Dataset::new(d1, 0, z, vec![1.0; n], vec![], y, None).expect("homogeneous data needs n > d1")
}

/// Heterogeneous data with `d1` Gaussian features and `d2` one-hot annotator groups:
/// annotator group `k` (uniform over `d2 + 1` groups, the last being the baseline) has
/// rationality `1 + gamma[k]`; `psi0 = 1`. Used for larger-dimension tests and timings.
pub fn one_hot_groups(n: usize, theta: &[f64], gamma: &[f64], seed: u64) -> Dataset {
    let mut rng = rng(seed);
    let (d1, d2) = (theta.len(), gamma.len());
    let mut z = Vec::with_capacity(n * d1);
    let mut psi = vec![0.0; n * d2];
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let zi: Vec<f64> = (0..d1).map(|_| rng.sample(StandardNormal)).collect();
        let group = rng.random_range(0..=d2);
        let mut sigma = 1.0;
        if group < d2 {
            psi[i * d2 + group] = 1.0;
            sigma += gamma[group];
        }
        let prob = sigmoid(sigma * dot(theta, &zi));
        y.push(if rng.random::<f64>() < prob { 1.0 } else { 0.0 });
        z.extend(zi);
    }
    Dataset::new(d1, d2, z, vec![1.0; n], psi, y, None).expect("one-hot data needs n > d1 + d2")
}

/// The paper's LLM application shape scaled down (issue 11): `z ~ N(0, I_d1)`, a fixed true
/// theta of norm 2 (so `sd(theta . z) = 2`, drawn once from seed 0 for every `d1`),
/// `psi0 = 1`, centred covariates `psi ~ N(0, I_d2)` with rationality
/// `sigma = 1 + gamma . psi`, `gamma = (0.3, -0.2, 0.15, 0.1, 0.3, -0.2, ...)`. Returns the
/// data and the true parameters. At `n = 3400, d1 = 205, d2 = 4` (`d1 / n = 0.06`, as the
/// paper's application) the MLE is inflated by ~11%.
pub fn high_dimensional(n: usize, d1: usize, d2: usize, seed: u64) -> (Dataset, crate::Params) {
    let mut truth_rng = rng(0);
    let raw: Vec<f64> = (0..d1).map(|_| truth_rng.sample(StandardNormal)).collect();
    let norm = raw.iter().map(|v| v * v).sum::<f64>().sqrt();
    let theta: Vec<f64> = raw.iter().map(|v| 2.0 * v / norm).collect();
    let pattern = [0.3, -0.2, 0.15, 0.1];
    let gamma: Vec<f64> = (0..d2).map(|k| pattern[k % 4]).collect();
    let mut rng = rng(seed);
    let z: Vec<f64> = (0..n * d1).map(|_| rng.sample(StandardNormal)).collect();
    let psi: Vec<f64> = (0..n * d2).map(|_| rng.sample(StandardNormal)).collect();
    let y = (0..n)
        .map(|i| {
            let sigma = 1.0 + dot(&gamma, &psi[i * d2..(i + 1) * d2]);
            let prob = sigmoid(sigma * dot(&theta, &z[i * d1..(i + 1) * d1]));
            if rng.random::<f64>() < prob {
                1.0
            } else {
                0.0
            }
        })
        .collect();
    let data = Dataset::new(d1, d2, z, vec![1.0; n], psi, y, None)
        .expect("high-dimensional data needs n > d1 + d2");
    (data, crate::Params { theta, gamma })
}

/// True reward parameter of the annotator design ([`annotator_effects`]).
pub const ANNOTATOR_THETA: [f64; 6] = [0.8, -0.6, 0.5, 0.4, -0.3, 0.2];
/// True rationality parameter of the annotator design: (expert flag, continuous covariate).
pub const ANNOTATOR_GAMMA: [f64; 2] = [0.5, 0.25];
/// Share of expert annotators in the annotator design.
pub(crate) const EXPERT_SHARE: f64 = 0.3;

/// The annotator design: `g` annotators judge `m` pairs each
/// ([`annotator_effects_sized`] with `m` comparisons per annotator, the same draws); annotator
/// `c` has an expert flag `e_c ~ Bern(0.3)`, a continuous covariate `x_c ~ N(0,1)` and an
/// unrecorded effect `u_c ~ N(0, tau^2)`, so that its rationality is
/// `sigma = 1 + 0.5 e_c + 0.25 x_c + u_c` ([`ANNOTATOR_GAMMA`]); `psi0 = 1`, `psi = (e_c, x_c)`,
/// `z ~ N(0, I_6)`, `y ~ Bern(mu(sigma ANNOTATOR_THETA . z))`, cluster id `c`. With `tau > 0`
/// the working model (no `u`) is misspecified: its limit is the fit of a huge sample with
/// `m = 1`. Deterministic for a seed.
///
/// Panics where [`annotator_effects_sized`] fails: `g * m <= 8`, or every annotator an expert.
pub fn annotator_effects(g: usize, m: usize, tau: f64, seed: u64) -> Dataset {
    annotator_effects_sized(&vec![m; g], tau, seed)
        .expect("annotator data need n > 8 and both expert and non-expert annotators")
}

/// The design of [`annotator_effects`] with annotator `c` judging `sizes[c]` pairs: the
/// annotators are drawn in order, each its flag, covariate and effect, then its comparisons,
/// so equal sizes `m` give `annotator_effects(sizes.len(), m, ..)`'s data exactly.
/// Deterministic for a seed.
///
/// Errors: those of [`Dataset::new`] — [`crate::error::Error::DimensionMismatch`] when the
/// sizes sum to 8 or fewer comparisons, [`crate::error::Error::InvalidArgument`] when every
/// annotator is an expert (the flag's column is `psi0`). Without any expert the flag's column
/// is zero: the dataset is built, and the fit refuses it.
pub fn annotator_effects_sized(sizes: &[usize], tau: f64, seed: u64) -> crate::Result<Dataset> {
    let mut rng = rng(seed);
    let n = sizes.iter().sum::<usize>();
    let d1 = ANNOTATOR_THETA.len();
    let mut z = Vec::with_capacity(n * d1);
    let mut psi = Vec::with_capacity(2 * n);
    let mut y = Vec::with_capacity(n);
    let mut cluster = Vec::with_capacity(n);
    for (c, &m) in sizes.iter().enumerate() {
        let expert = if rng.random::<f64>() < EXPERT_SHARE {
            1.0
        } else {
            0.0
        };
        let x: f64 = rng.sample(StandardNormal);
        let u = tau * rng.sample::<f64, _>(StandardNormal);
        let sigma = 1.0 + ANNOTATOR_GAMMA[0] * expert + ANNOTATOR_GAMMA[1] * x + u;
        for _ in 0..m {
            let zi: Vec<f64> = (0..d1).map(|_| rng.sample(StandardNormal)).collect();
            let prob = sigmoid(sigma * dot(&ANNOTATOR_THETA, &zi));
            y.push(if rng.random::<f64>() < prob { 1.0 } else { 0.0 });
            z.extend(zi);
            psi.extend_from_slice(&[expert, x]);
            cluster.push(c as i64);
        }
    }
    Dataset::new(d1, 2, z, vec![1.0; n], psi, y, Some(cluster))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CRC-32 of a dataset's every value (z, psi0, psi, y as `f64` bits, cluster ids).
    fn digest(data: &Dataset) -> u32 {
        let mut h = crc32fast::Hasher::new();
        for v in data
            .z()
            .iter()
            .chain(data.psi0())
            .chain(data.psi())
            .chain(data.y())
        {
            h.update(&v.to_bits().to_le_bytes());
        }
        for c in data.cluster().unwrap_or(&[]) {
            h.update(&c.to_le_bytes());
        }
        h.finalize()
    }

    /// `annotator_effects` draws what it drew before it became `annotator_effects_sized` with
    /// equal sizes: the digests were recorded from the earlier code (its own loop over `g`
    /// annotators of `m` comparisons), so any change to the random sequence fails here.
    #[test]
    fn annotator_effects_datasets_are_unchanged() {
        for (g, m, tau, seed, recorded) in [
            (40, 40, 0.6, 6, 0x7075_8b47),
            (6, 50, 0.6, 9, 0x5356_3fca),
            (12, 50, 0.0, 5, 0x7d39_4cfd),
            (25, 20, 0.3, 7, 0x22a0_8fa3),
            (1_000, 1, 0.6, 7_777, 0x8897_b92d),
        ] {
            let data = annotator_effects(g, m, tau, seed);
            assert_eq!(digest(&data), recorded, "({g}, {m}, {tau}, {seed})");
        }
    }

    /// Unequal sizes: annotator `c` has `sizes[c]` rows, in order, with one flag and covariate
    /// each; a draw with only experts is an error, not a panic.
    #[test]
    fn sized_annotators_have_their_sizes() {
        let sizes = [1, 30, 4, 120, 9, 2];
        let data = annotator_effects_sized(&sizes, 0.6, 3).unwrap();
        let ids = data.cluster().unwrap();
        assert_eq!(data.n(), sizes.iter().sum::<usize>());
        let mut first = 0;
        for (c, &m) in sizes.iter().enumerate() {
            let rows = first..first + m;
            assert!(rows.clone().all(|i| ids[i] == c as i64));
            assert!(rows.clone().all(|i| data.psi_row(i) == data.psi_row(first)));
            first += m;
        }
        // Three annotators are all experts with probability 0.027: those draws, and only
        // those, are errors (every dataset built has a non-expert).
        let mut refused = 0;
        for seed in 0..1_000 {
            match annotator_effects_sized(&[1, 10, 3], 0.0, seed) {
                Ok(data) => assert!([0, 1, 11].iter().any(|&i| data.psi_row(i)[0] == 0.0)),
                Err(_) => refused += 1,
            }
        }
        assert!((10..=50).contains(&refused), "{refused} of 1000");
    }
}
