//! The heterogeneous preference model, one sample at a time — pure math, no data passes.
//!
//! ```text
//! sigma(x) = psi0(x) + gamma . psi(x)          rationality (may be <= 0: adversarial)
//! u        = sigma * theta . z                 the logit
//! P(y = 1) = mu(u) = 1 / (1 + exp(-u))
//! loss     = -[y log mu(u) + (1 - y) log(1 - mu(u))] = softplus(u) - y u
//! ```
//!
//! Every function here is stable for |u| in the hundreds and beyond: no `exp` of a positive
//! argument, no `1 - mu` cancellation.

/// The model's parameters: `theta` (reward, length d1) and `gamma` (rationality, length d2).
///
/// Where the two are stacked into one vector (gradients, Hessians, covariances), theta comes
/// first: index `j < d1` is `theta[j]`, index `d1 + k` is `gamma[k]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Reward coefficients, length d1.
    pub theta: Vec<f64>,
    /// Rationality coefficients, length d2 (may be empty).
    pub gamma: Vec<f64>,
}

impl Params {
    /// Zero theta and gamma of the given dimensions.
    pub fn zeros(d1: usize, d2: usize) -> Self {
        Params {
            theta: vec![0.0; d1],
            gamma: vec![0.0; d2],
        }
    }

    /// Splits a stacked vector `(theta, gamma)` of length `d1 + d2`.
    pub fn from_stacked(stacked: &[f64], d1: usize) -> Self {
        Params {
            theta: stacked[..d1].to_vec(),
            gamma: stacked[d1..].to_vec(),
        }
    }

    /// The stacked vector `(theta, gamma)`.
    pub fn stacked(&self) -> Vec<f64> {
        let mut v = self.theta.clone();
        v.extend_from_slice(&self.gamma);
        v
    }

    /// True when every coefficient is finite.
    pub fn is_finite(&self) -> bool {
        self.theta.iter().chain(&self.gamma).all(|v| v.is_finite())
    }
}

/// Dot product of two equal-length slices (fixed summation order: deterministic; an AVX2+FMA
/// kernel where the CPU has one, see `crate::linalg::dot`).
#[inline]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    debug_assert_eq!(a.len(), b.len());
    crate::linalg::dot(a, b)
}

/// Rationality `sigma = psi0 + gamma . psi` of one annotator profile.
#[inline]
pub(crate) fn rationality(psi0: f64, psi: &[f64], gamma: &[f64]) -> f64 {
    psi0 + dot(gamma, psi)
}

/// The logistic function mu(v) = 1 / (1 + exp(-v)), without overflow.
#[inline]
pub fn sigmoid(v: f64) -> f64 {
    if v >= 0.0 {
        1.0 / (1.0 + (-v).exp())
    } else {
        let e = v.exp();
        e / (1.0 + e)
    }
}

/// softplus(v) = log(1 + exp(v)), without overflow or loss of precision for large |v|: the
/// tests' reference for the loss that [`sample_terms`] computes from the `exp` it already has.
#[cfg(test)]
pub(crate) fn softplus(v: f64) -> f64 {
    if v > 0.0 {
        v + (-v).exp().ln_1p()
    } else {
        v.exp().ln_1p()
    }
}

/// What one sample contributes at the current parameters.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[doc(hidden)] // reached through `crate::internals` only
pub struct SampleTerms {
    /// `theta . z`, the reward difference r(a1) - r(a0).
    pub t: f64,
    /// `sigma = psi0 + gamma . psi`.
    pub sigma: f64,
    /// Negative log-likelihood of the sample.
    pub loss: f64,
    /// `d loss / d u = mu(u) - y` (the residual).
    pub resid: f64,
    /// `d^2 loss / d u^2 = mu(u) (1 - mu(u))` (the logistic weight).
    pub weight: f64,
}

/// Loss, residual and weight of one sample with logit `u = sigma * t` and label `y`.
#[inline]
pub(crate) fn sample_terms(t: f64, sigma: f64, y: f64) -> SampleTerms {
    let (u, e, mut terms) = logistic_terms(t, sigma, y);
    // softplus(u), from the `exp(-|u|)` already at hand: the same value, bit for bit, as
    // `softplus(u)` (its exponential has the same argument), one `exp` fewer.
    let softplus_u = if u > 0.0 { u + e.ln_1p() } else { e.ln_1p() };
    terms.loss = softplus_u - y * u;
    terms
}

/// [`sample_terms`] without the loss, for the passes that use only the residual and the weight
/// (the information matrices): `t`, `sigma`, `resid` and `weight` are bit for bit
/// [`sample_terms`]'s, `loss` is NaN. It skips the logarithm, an opaque library call that the
/// compiler cannot drop when the loss goes unused.
#[inline]
pub(crate) fn sample_terms_without_loss(t: f64, sigma: f64, y: f64) -> SampleTerms {
    logistic_terms(t, sigma, y).2
}

/// The logit `u = sigma t`, `exp(-|u|)` and every term of [`sample_terms`] but the loss (NaN).
#[inline(always)]
fn logistic_terms(t: f64, sigma: f64, y: f64) -> (f64, f64, SampleTerms) {
    let u = sigma * t;
    let e = (-u.abs()).exp(); // in (0, 1]: never overflows
    let mu = if u >= 0.0 {
        1.0 / (1.0 + e)
    } else {
        e / (1.0 + e)
    };
    let terms = SampleTerms {
        t,
        sigma,
        loss: f64::NAN,
        resid: mu - y,
        weight: e / ((1.0 + e) * (1.0 + e)),
    };
    (u, e, terms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_are_the_textbook_formulas_bit_for_bit() {
        for &u in &[
            -800.0, -40.0, -3.5, -1.0, -1e-300, -0.0, 0.0, 1e-300, 0.7, 1.0, 40.0, 800.0,
        ] {
            for y in [0.0, 1.0] {
                for sigma in [1.0, -0.6, 2.5] {
                    let t = u / sigma;
                    let s = sample_terms(t, sigma, y);
                    let v = sigma * t;
                    assert_eq!(s.loss.to_bits(), (softplus(v) - y * v).to_bits(), "{u} {y}");
                    let w = sample_terms_without_loss(t, sigma, y);
                    assert!(w.loss.is_nan());
                    assert_eq!(
                        (w.t, w.sigma, w.resid, w.weight),
                        (s.t, s.sigma, s.resid, s.weight)
                    );
                }
            }
        }
    }

    #[test]
    fn stable_for_huge_logits() {
        for &u in &[-800.0, -40.0, -1.0, 0.0, 1.0, 40.0, 800.0] {
            let s = sample_terms(u, 1.0, 1.0);
            assert!(s.loss.is_finite() && s.resid.is_finite() && s.weight.is_finite());
            assert!(s.weight >= 0.0 && s.weight <= 0.25);
        }
        // y = 1, u = -800: loss ~ 800, residual ~ -1.
        let s = sample_terms(-800.0, 1.0, 1.0);
        assert!((s.loss - 800.0).abs() < 1e-9);
        assert!((s.resid + 1.0).abs() < 1e-12);
        // Textbook values at moderate u.
        let s = sample_terms(0.7, 1.0, 0.0);
        let mu = 1.0 / (1.0 + (-0.7f64).exp());
        assert!((s.loss + (1.0 - mu).ln()).abs() < 1e-14);
        assert!((s.weight - mu * (1.0 - mu)).abs() < 1e-15);
        assert!((sigmoid(-0.7) - (1.0 - mu)).abs() < 1e-15);
    }

    #[test]
    fn dot_matches_naive() {
        let a: Vec<f64> = (0..11).map(|i| i as f64 * 0.5 - 2.0).collect();
        let b: Vec<f64> = (0..11).map(|i| (i * i) as f64 * 0.1).collect();
        let naive: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - naive).abs() < 1e-12);
    }
}
