//! The demo: the paper's LLM application (§5.2) end to end, on built-in simulated data.
//!
//! What `hetreward demo` runs, as functions of the program (not of the library: it is a user of
//! the library's public API) that return every number, so that its tests can assert on them:
//!
//! 1. **Simulate** annotators with demographic covariates ([`DEMOGRAPHICS`], one-hot with a
//!    baseline level per variable, `psi0 = 1`, so an annotator's rationality is
//!    `sigma(x) = 1 + gamma* . psi(x)`); one recruitment channel is adversarial (its annotators
//!    have `sigma < 0` and tend to flip their labels). Answers have embedding-like features:
//!    `phi = prompt + scale ⊙ g` with `g ~ N(0, I_d1)` and a decaying spectrum
//!    `scale_j = (1 + j)^(-1/2)`, ten times smaller over the trailing half of the coordinates
//!    (directions reference answers barely vary in); coordinate 0 also sets the answer's length
//!    in tokens. The gold reward is `theta* . phi`, living mostly in the leading half, with
//!    reference answers' rewards of standard deviation 1. Training pairs come from this
//!    reference distribution.
//! 2. **Fit** `(theta, gamma)` with the default solver and the expected-information covariance.
//! 3. **Report** (a) the rationality coefficients with CIs (the paper's Table 3) and which
//!    annotators are detectably adversarial; (b) reward CIs and a pairwise comparison of two
//!    simulated "LLMs" on the same prompts, with win / tie / loss and the win rate (Table 4 and
//!    §5.2.2); (c) the gold reward of the answer chosen by BoN and pBoN, plain and with
//!    Wasserstein, KL and length penalties, for N in {20, 40, 60, 80, 128} (Table 5).
//!
//! Candidates for (b) and (c) *drift* away from the reference distribution: each gets an extra
//! `delta * u` with `u` a random unit vector in the low-variance half of the feature space
//! (directions the training pairs barely explore, where the reward estimate is uncertain) and
//! `delta = drift * |N(0,1)|`. Its penalties are those of a unit-variance Gaussian shifted by
//! `delta`: `KL = delta^2 / 2`, `WD = delta`; the length penalty is `beta_length / |a|`. BoN
//! chases the estimation noise of drifted candidates (the winner's curse); pBoN's lower bound
//! discounts it.
//!
//! Everything is deterministic for a seed (ChaCha8 streams; parallel loops reduce in order).

use hetreward::calibrate::{IntervalMethod, IntervalOptions};
use hetreward::covariance::CovarianceKind;
use hetreward::data::Dataset;
use hetreward::error::{check_alpha, Error, Result};
use hetreward::estimator::{Estimator, EstimatorOptions};
use hetreward::fit::{FitControl, FitOptions};
use hetreward::fitted::{RewardInterval, RewardModel};
use hetreward::model::{dot, sigmoid};
use hetreward::select::{self, Comparison, DiffMethod, Policy, Verdict, WinRate};
use hetreward::stats::critical_value;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use rayon::prelude::*;
use std::fmt;
use std::time::Instant;

/// One level of a demographic variable: its label, the share of annotators who have it, and its
/// true rationality effect `gamma*` relative to the variable's baseline level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Level {
    /// Label as printed, e.g. `"35-44"`.
    pub label: &'static str,
    /// Share of annotators with this level (the shares of a variable sum to 1).
    pub share: f64,
    /// True effect on the rationality (0 for the baseline level).
    pub gamma: f64,
}

/// A categorical annotator covariate, one-hot encoded without its baseline (first) level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Variable {
    /// Name as printed, e.g. `"age"`.
    pub name: &'static str,
    /// `levels[0]` is the baseline (no column in psi); the others get one column each.
    pub levels: &'static [Level],
}

const fn level(label: &'static str, share: f64, gamma: f64) -> Level {
    Level {
        label,
        share,
        gamma,
    }
}

/// The simulated annotator population. The baseline profile (first level of every variable)
/// has rationality 1; the "troll farm" channel is adversarial: every annotator recruited there
/// has `sigma(x) < 0`, whatever their other covariates.
pub const DEMOGRAPHICS: &[Variable] = &[
    Variable {
        name: "age",
        levels: &[
            level("18-24", 0.22, 0.0),
            level("25-34", 0.28, 0.10),
            level("35-44", 0.20, 0.19),
            level("45-54", 0.15, 0.25),
            level("55-64", 0.15, 0.28),
        ],
    },
    Variable {
        name: "gender",
        levels: &[level("female", 0.5, 0.0), level("male", 0.5, 0.05)],
    },
    Variable {
        name: "location",
        levels: &[level("non-US", 0.6, 0.0), level("US", 0.4, 0.16)],
    },
    Variable {
        name: "English",
        levels: &[level("native", 0.7, 0.0), level("fluent", 0.3, -0.05)],
    },
    Variable {
        name: "LLM familiarity",
        levels: &[
            level("not familiar", 0.2, 0.0),
            level("somewhat", 0.5, 0.20),
            level("very", 0.3, 0.30),
        ],
    },
    Variable {
        name: "channel",
        levels: &[
            level("vetted panel", 0.75, 0.0),
            level("open crowd", 0.17, -0.35),
            level("troll farm", 0.08, -2.20),
        ],
    },
];

/// Number of psi columns of [`DEMOGRAPHICS`] (non-baseline levels).
pub fn demographic_columns() -> usize {
    DEMOGRAPHICS.iter().map(|v| v.levels.len() - 1).sum()
}

/// A penalty added to the BoN / pBoN objective (the paper's Table 5 column pairs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Penalty {
    /// No penalty: plain BoN and pBoN.
    None,
    /// `beta_wd * WD`, the 1-Wasserstein distance of the candidate from the reference.
    Wasserstein,
    /// `beta_kl * KL`, the KL divergence of the candidate from the reference.
    Kl,
    /// `beta_length / |a|`, with `|a|` the answer's length in tokens.
    Length,
}

impl Penalty {
    /// Every penalty, in the paper's column order.
    pub const ALL: [Penalty; 4] = [
        Penalty::None,
        Penalty::Wasserstein,
        Penalty::Kl,
        Penalty::Length,
    ];

    /// Subscript as in the paper's Table 5 ("", "WD", "KL", "L").
    pub fn subscript(self) -> &'static str {
        match self {
            Penalty::None => "",
            Penalty::Wasserstein => "WD",
            Penalty::Kl => "KL",
            Penalty::Length => "L",
        }
    }
}

/// Settings of the demo. [`DemoOptions::default`] is what `hetreward demo` runs.
#[derive(Debug, Clone, PartialEq)]
pub struct DemoOptions {
    /// Seed of every random draw (simulation, bootstrap draws). Default 1.
    pub seed: u64,
    /// Training comparisons, at least `10 (d1 + d2)` and at most [`MAX_DEMO_N`]. Default 20,000
    /// (the paper trains on 33,845).
    pub n: usize,
    /// Embedding dimension d1 (4 to [`MAX_DEMO_D1`]). Default 64.
    pub d1: usize,
    /// Number of annotators; each comparison is made by one drawn at random. Default 400.
    pub annotators: usize,
    /// Prompts answered by both LLMs in report (b). Default 805 (as AlpacaFarm in the paper).
    pub llm_prompts: usize,
    /// Prompts of the Best-of-N study (c). Default 400.
    pub bon_prompts: usize,
    /// Candidate-set sizes N of (c); candidates are drawn once for the largest. Default
    /// {20, 40, 60, 80, 128}.
    pub bon_sizes: Vec<usize>,
    /// Scale of the candidates' drift from the training distribution (see the module docs).
    /// Default 0.5.
    pub drift: f64,
    /// Significance level of every CI (and of pBoN's lower bound). Default 0.05.
    pub alpha: f64,
    /// Weight of the Wasserstein penalty. Default 0.2.
    pub beta_wd: f64,
    /// Weight of the KL penalty. Default 0.3.
    pub beta_kl: f64,
    /// Weight of the length penalty `beta / |a|` (|a| in tokens, ~150 on average). Default 20.
    pub beta_length: f64,
    /// Bootstrap refits of report (d), the calibrated intervals picked by `auto` beside the
    /// paper's (10..=100000). Default 60 (the CLI's `fit` uses 400 for the plain bootstrap; the
    /// refits are ~90% of the demo's CPU time, and 60 keep the whole demo under 5 s — 100 took
    /// 5.0-5.5 CPU-seconds of the demo's whole, 60 take 3.3).
    pub bootstrap_reps: usize,
    /// Worker threads; 0 = all cores. Results do not depend on it.
    pub threads: usize,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions {
            seed: 1,
            n: 20000,
            d1: 64,
            annotators: 400,
            llm_prompts: 805,
            bon_prompts: 400,
            bon_sizes: vec![20, 40, 60, 80, 128],
            drift: 0.5,
            alpha: 0.05,
            beta_wd: 0.2,
            beta_kl: 0.3,
            beta_length: 20.0,
            bootstrap_reps: 60,
            threads: 0,
        }
    }
}

/// Largest [`DemoOptions::n`] (training comparisons): 1,000,000 (the paper trains on 33,845).
pub const MAX_DEMO_N: usize = 1_000_000;
/// Largest [`DemoOptions::d1`]: 1,024.
pub const MAX_DEMO_D1: usize = 1024;
/// Largest annotator and prompt counts of the demo: 1,000,000 each.
pub const MAX_DEMO_COUNT: usize = 1_000_000;
/// Largest candidate-set size N of the Best-of-N study, and most sizes: 10,000 and 64.
pub const MAX_DEMO_BON_SIZE: usize = 10_000;
/// Most numbers the demo may hold in one simulated table: `n * (d1 + d2)` training values and
/// `bon_prompts * max(bon_sizes) * d1` candidate features, each at most 10^8 (800 MB of f64).
pub const MAX_DEMO_VALUES: usize = 100_000_000;

impl DemoOptions {
    /// Checks every option against its domain; errors name the option. Every size is bounded
    /// (`MAX_DEMO_*`) so that no option can make the demo allocate without limit; `threads` is
    /// checked by [`FitOptions::check`].
    pub fn check(&self) -> Result<()> {
        if self.d1 < 4 || self.d1 > MAX_DEMO_D1 {
            return Err(Error::invalid(
                "d1",
                format!("must be in 4..={MAX_DEMO_D1}, got {}", self.d1),
            ));
        }
        if self.n > MAX_DEMO_N {
            return Err(Error::invalid(
                "n",
                format!(
                    "the demo simulates at most {MAX_DEMO_N} comparisons, got {}",
                    self.n
                ),
            ));
        }
        let values = self.n.saturating_mul(self.d1 + demographic_columns());
        if values > MAX_DEMO_VALUES {
            return Err(Error::invalid(
                "n",
                format!(
                    "n * (d1 + d2) = {values} training values exceeds the demo's limit of \
                     {MAX_DEMO_VALUES}"
                ),
            ));
        }
        demo_estimator(self).check()?;
        // At fewer than ~10 comparisons per parameter the simulated likelihood is often nearly
        // separable and its information singular: refuse up front with a clear message.
        let p = self.d1 + demographic_columns();
        if self.n < 10 * p {
            return Err(Error::invalid(
                "n",
                format!(
                    "the demo needs at least {} comparisons (10 per parameter, {p} parameters), \
                     got {}",
                    10 * p,
                    self.n
                ),
            ));
        }
        for (name, v) in [
            ("annotators", self.annotators),
            ("llm_prompts", self.llm_prompts),
            ("bon_prompts", self.bon_prompts),
        ] {
            if v == 0 || v > MAX_DEMO_COUNT {
                return Err(Error::invalid(
                    name,
                    format!("must be in 1..={MAX_DEMO_COUNT}, got {v}"),
                ));
            }
        }
        if self.bon_sizes.is_empty()
            || self.bon_sizes.len() > 64
            || self
                .bon_sizes
                .iter()
                .any(|&s| s == 0 || s > MAX_DEMO_BON_SIZE)
        {
            return Err(Error::invalid(
                "bon_sizes",
                format!("need 1 to 64 sizes, each in 1..={MAX_DEMO_BON_SIZE}"),
            ));
        }
        let max_n = self.bon_sizes.iter().copied().max().unwrap_or(0);
        let values = self
            .bon_prompts
            .saturating_mul(max_n)
            .saturating_mul(self.d1);
        if values > MAX_DEMO_VALUES {
            return Err(Error::invalid(
                "bon_prompts",
                format!(
                    "bon_prompts * max(bon_sizes) * d1 = {values} candidate features exceeds \
                     the demo's limit of {MAX_DEMO_VALUES}"
                ),
            ));
        }
        check_alpha(self.alpha)?;
        for (name, v) in [
            ("drift", self.drift),
            ("beta_wd", self.beta_wd),
            ("beta_kl", self.beta_kl),
            ("beta_length", self.beta_length),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::invalid(
                    name,
                    format!("must be finite and >= 0, got {v}"),
                ));
            }
        }
        Ok(())
    }
}

/// Report (a), one row: a non-baseline level of a demographic variable.
#[derive(Debug, Clone, PartialEq)]
pub struct RationalityRow {
    /// The variable, e.g. "age".
    pub variable: &'static str,
    /// The level, e.g. "35-44".
    pub level: &'static str,
    /// True `gamma*` of the level.
    pub truth: f64,
    /// Estimated `gamma_hat` with its SE and CI (`reward` holds the estimate).
    pub coef: RewardInterval,
    /// Rationality `sigma_hat` of the baseline profile with this level switched on, with SE and
    /// CI (`reward` holds sigma_hat).
    pub sigma: RewardInterval,
}

/// Report (a), annotator level: who is detectably adversarial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdversarialSummary {
    /// Annotators in the simulation.
    pub annotators: usize,
    /// Annotators whose true `sigma < 0`.
    pub truly_adversarial: usize,
    /// Annotators whose estimated sigma has its whole CI below 0.
    pub flagged: usize,
    /// Flagged annotators that are truly adversarial.
    pub flagged_correctly: usize,
}

/// Report (b): one prompt answered by both LLMs.
#[derive(Debug, Clone, PartialEq)]
pub struct PairExample {
    /// 0-based prompt number.
    pub prompt: usize,
    /// Estimated reward of LLM A's answer (a0) with its CI.
    pub reward0: RewardInterval,
    /// Estimated reward of LLM B's answer (a1) with its CI.
    pub reward1: RewardInterval,
    /// `r(a0) - r(a1)` with the exact-variance CI and verdict.
    pub comparison: Comparison,
    /// Gold rewards of a0 and a1.
    pub gold: [f64; 2],
}

/// Report (b): LLM A versus LLM B over many prompts.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmComparison {
    /// The two LLMs' names.
    pub names: [&'static str; 2],
    /// Number of prompts.
    pub prompts: usize,
    /// Verdicts with the exact variance (the default) and A's win rate over B.
    pub exact: WinRate,
    /// Verdicts with the paper's independent-variance formula.
    pub independent: WinRate,
    /// Share of prompts where A's answer truly has the higher gold reward.
    pub gold_share: f64,
    /// Among exact-method verdicts that are not ties, the share agreeing with the gold reward.
    pub decisive_accuracy: f64,
    /// Mean estimated reward of each LLM's answers.
    pub mean_reward: [f64; 2],
    /// Illustrative prompts like the paper's Table 4: the first tie and the first decisive one.
    pub examples: Vec<PairExample>,
}

/// Report (c), one cell pair: mean gold reward of pBoN's and BoN's choices under one penalty.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BonCell {
    /// The penalty of both policies.
    pub penalty: Penalty,
    /// Mean gold reward of the pessimistic choice.
    pub pbon: f64,
    /// Mean gold reward of the plain choice.
    pub bon: f64,
    /// Prompts where pBoN's choice has a strictly higher / lower gold reward than BoN's.
    pub pbon_better: usize,
    /// See `pbon_better`.
    pub pbon_worse: usize,
}

/// Report (c), one row: a candidate-set size N.
#[derive(Debug, Clone, PartialEq)]
pub struct BonRow {
    /// Candidates per prompt.
    pub n: usize,
    /// One cell per [`Penalty::ALL`] entry, in that order.
    pub cells: Vec<BonCell>,
    /// Mean over prompts of the best gold reward among the N candidates (an oracle).
    pub oracle: f64,
    /// Mean gold reward of a candidate drawn at random (the mean over the N).
    pub random: f64,
}

/// Report (c).
#[derive(Debug, Clone, PartialEq)]
pub struct BonStudy {
    /// Prompts averaged over.
    pub prompts: usize,
    /// One row per N of [`DemoOptions::bon_sizes`].
    pub rows: Vec<BonRow>,
}

/// Wall-clock seconds of each stage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DemoTimings {
    /// Simulating the training data.
    pub simulate: f64,
    /// Fitting and computing the covariance.
    pub fit: f64,
    /// Reports (a)-(c), including their simulations.
    pub reports: f64,
    /// Report (d): the bootstrap refits of the calibrated intervals.
    pub calibrate: f64,
}

/// Report (d): calibrated intervals (the method `auto` picks for this fit) beside the paper's
/// Wald intervals, for the rationality coefficients and a few simulated answers' rewards.
#[derive(Debug, Clone, PartialEq)]
pub struct CalibratedReport {
    /// The method auto picked.
    pub method: IntervalMethod,
    /// Bootstrap refits (0 for Wald).
    pub reps: usize,
    /// The resized bootstrap's inflation estimate (1 otherwise).
    pub alpha_hat: f64,
    /// The fit's warning about Wald intervals, if any.
    pub wald_warning: Option<String>,
    /// `(what, truth, Wald interval, calibrated interval)`.
    pub rows: Vec<(String, f64, RewardInterval, RewardInterval)>,
}

impl CalibratedReport {
    /// What the picked method's intervals are, in words for report (d): the bootstraps' `B`
    /// refits (percentile, or the resized inflation); the cluster jackknives' `G` annotators
    /// (`reps`) and their t(G-1) quantiles; nothing for Wald.
    fn method_detail(&self) -> String {
        match self.method {
            IntervalMethod::Wald | IntervalMethod::Auto => String::new(),
            IntervalMethod::Bootstrap => format!(" (B = {} refits, percentile)", self.reps),
            IntervalMethod::Resized => format!(
                " (B = {} refits, inflation alpha_hat = {:.3})",
                self.reps, self.alpha_hat
            ),
            IntervalMethod::ClusterJackknife | IntervalMethod::ClusterOneStep => format!(
                " (a jackknife over G = {} annotators, t({}) quantiles)",
                self.reps,
                self.reps.saturating_sub(1)
            ),
        }
    }
}

/// Everything the demo computed.
#[derive(Debug, Clone)]
pub struct DemoReport {
    /// The settings it ran with.
    pub options: DemoOptions,
    /// The fitted model.
    pub model: RewardModel,
    /// Adversarial annotators among the training comparisons' annotators.
    pub training_summary: AdversarialSummary,
    /// Report (a): one row per non-baseline demographic level.
    pub rationality: Vec<RationalityRow>,
    /// Report (b).
    pub llm: LlmComparison,
    /// Report (c).
    pub bon: BonStudy,
    /// Report (d).
    pub calibrated: CalibratedReport,
    /// Stage timings.
    pub timings: DemoTimings,
}

/// The simulated ground truth: feature scales, the gold reward, and how answers are drawn.
struct World {
    d1: usize,
    scale: Vec<f64>,
    theta: Vec<f64>,
}

/// Scale of the trailing half of the feature spectrum relative to a smooth decay.
const TAIL_GAP: f64 = 0.1;

/// One simulated answer.
struct Answer {
    phi: Vec<f64>,
    delta: f64,
    tokens: f64,
}

impl World {
    fn new(d1: usize, rng: &mut ChaCha8Rng) -> Self {
        let half = d1 / 2;
        // A decaying spectrum with a gap: the leading half carries the answers' variation, the
        // trailing half ("style" directions) barely varies among reference answers.
        let scale: Vec<f64> = (0..d1)
            .map(|j| {
                let s = 1.0 / ((1 + j) as f64).sqrt();
                if j < half {
                    s
                } else {
                    TAIL_GAP * s
                }
            })
            .collect();
        // The gold reward lives in the leading directions (the trailing ones matter little).
        let mut theta: Vec<f64> = (0..d1)
            .map(|j| {
                let t: f64 = rng.sample(StandardNormal);
                if j < half {
                    t
                } else {
                    0.1 * t
                }
            })
            .collect();
        theta[0] = theta[0].abs().max(0.5); // longer answers are somewhat better
                                            // Normalise: reference answers' gold rewards vary with standard deviation 1.
        let var: f64 = theta.iter().zip(&scale).map(|(t, s)| (t * s).powi(2)).sum();
        let norm = var.sqrt();
        theta.iter_mut().for_each(|t| *t /= norm);
        World { d1, scale, theta }
    }

    fn prompt(&self, rng: &mut ChaCha8Rng) -> Vec<f64> {
        self.scale
            .iter()
            .map(|s| 0.5 * s * rng.sample::<f64, _>(StandardNormal))
            .collect()
    }

    /// An answer to `prompt`, drifting by `drift * |N(0,1)|` into the low-variance half.
    fn answer(&self, prompt: &[f64], drift: f64, rng: &mut ChaCha8Rng) -> Answer {
        let g: Vec<f64> = (0..self.d1)
            .map(|_| rng.sample::<f64, _>(StandardNormal))
            .collect();
        let mut phi: Vec<f64> = (0..self.d1)
            .map(|j| prompt[j] + self.scale[j] * g[j])
            .collect();
        let tokens = (5.0 + 0.5 * g[0]).exp().round().max(1.0);
        let delta = if drift > 0.0 {
            drift * rng.sample::<f64, _>(StandardNormal).abs()
        } else {
            0.0
        };
        if delta > 0.0 {
            let half = self.d1 / 2;
            let u: Vec<f64> = (half..self.d1)
                .map(|_| rng.sample::<f64, _>(StandardNormal))
                .collect();
            let norm = dot(&u, &u).sqrt();
            for (p, v) in phi[half..].iter_mut().zip(&u) {
                *p += delta * v / norm;
            }
        }
        Answer { phi, delta, tokens }
    }

    fn gold(&self, phi: &[f64]) -> f64 {
        dot(&self.theta, phi)
    }
}

/// An annotator: covariates and true rationality.
struct Annotator {
    psi: Vec<f64>,
    sigma: f64,
}

fn draw_annotator(rng: &mut ChaCha8Rng) -> Annotator {
    let mut psi = Vec::with_capacity(demographic_columns());
    let mut sigma = 1.0;
    for var in DEMOGRAPHICS {
        let u: f64 = rng.random();
        let mut acc = 0.0;
        let mut pick = var.levels.len() - 1;
        for (k, l) in var.levels.iter().enumerate() {
            acc += l.share;
            if u < acc {
                pick = k;
                break;
            }
        }
        for k in 1..var.levels.len() {
            psi.push(if k == pick { 1.0 } else { 0.0 });
        }
        sigma += var.levels[pick].gamma;
    }
    Annotator { psi, sigma }
}

/// The simulated training set of the demo and the annotators who labelled it (for the tests:
/// the program only runs the whole demo).
#[cfg(test)]
pub struct DemoData {
    /// Pairwise comparisons (`psi0 = 1`, one-hot psi, cluster = annotator id).
    pub data: Dataset,
    /// Each annotator's covariates (`d2` values) and true rationality.
    pub annotators: Vec<(Vec<f64>, f64)>,
}

/// Simulates the demo's training data (step 1 of the module docs). Deterministic for a seed.
#[cfg(test)]
pub fn simulate_training(options: &DemoOptions) -> Result<DemoData> {
    options.check()?;
    let mut rng = hetreward::sim::rng(options.seed);
    let world = World::new(options.d1, &mut rng);
    let (data, annotators) = training_data(&world, options, &mut rng)?;
    Ok(DemoData {
        data,
        annotators: annotators.into_iter().map(|a| (a.psi, a.sigma)).collect(),
    })
}

fn training_data(
    world: &World,
    options: &DemoOptions,
    rng: &mut ChaCha8Rng,
) -> Result<(Dataset, Vec<Annotator>)> {
    let (n, d1, d2) = (options.n, options.d1, demographic_columns());
    let annotators: Vec<Annotator> = (0..options.annotators)
        .map(|_| draw_annotator(rng))
        .collect();
    let mut z = Vec::with_capacity(n * d1);
    let mut psi = Vec::with_capacity(n * d2);
    let mut y = Vec::with_capacity(n);
    let mut cluster = Vec::with_capacity(n);
    for _ in 0..n {
        let who = rng.random_range(0..annotators.len());
        let prompt = world.prompt(rng);
        let a0 = world.answer(&prompt, 0.0, rng);
        let a1 = world.answer(&prompt, 0.0, rng);
        let zi: Vec<f64> = a1.phi.iter().zip(&a0.phi).map(|(p, q)| p - q).collect();
        let a = &annotators[who];
        let prob = sigmoid(a.sigma * dot(&world.theta, &zi));
        y.push(if rng.random::<f64>() < prob { 1.0 } else { 0.0 });
        z.extend(zi);
        psi.extend_from_slice(&a.psi);
        cluster.push(who as i64);
    }
    let data = Dataset::new(d1, d2, z, vec![1.0; n], psi, y, Some(cluster))?;
    Ok((data, annotators))
}

/// Runs the whole demo (module docs) and returns every number it reports. `control` observes
/// (and may cancel) the fit.
///
/// Errors: invalid options; a fit or covariance failure of the library (not expected for the
/// defaults).
pub fn run(options: &DemoOptions, control: &FitControl) -> Result<DemoReport> {
    options.check()?;
    let t0 = Instant::now();
    let mut rng = hetreward::sim::rng(options.seed);
    let world = World::new(options.d1, &mut rng);
    let (data, annotators) = training_data(&world, options, &mut rng)?;
    let simulate = t0.elapsed().as_secs_f64();

    let t1 = Instant::now();
    let estimator = demo_estimator(options).check()?;
    let fit_options = &estimator.options().fit;
    let model = RewardModel::estimate(&data, fit_options, CovarianceKind::Expected, control)?;
    let fit = t1.elapsed().as_secs_f64();

    let t2 = Instant::now();
    let (rationality, training_summary) = rationality_report(&model, &annotators, options.alpha)?;
    let llm = llm_comparison(&world, &model, options, &mut rng)?;
    let bon = bon_study(&world, &model, options, &mut rng)?;
    let reports = t2.elapsed().as_secs_f64();

    let t3 = Instant::now();
    let calibrated = calibrated_report(&world, &data, &model, &estimator, options, control)?;
    let calibrate = t3.elapsed().as_secs_f64();

    Ok(DemoReport {
        options: options.clone(),
        model,
        training_summary,
        rationality,
        llm,
        bon,
        calibrated,
        timings: DemoTimings {
            simulate,
            fit,
            reports,
            calibrate,
        },
    })
}

/// The demo's estimator: the default solver from its homogeneous start alone, and the interval
/// method `auto` picks with the demo's `B`. The two seeded U(-1,1) restarts of the default
/// (`FitOptions::restarts`) were 90% of the fit's iterations and never won here: with hundreds
/// of comparisons per parameter the homogeneous start reaches the global optimum (the test
/// `one_start_reaches_the_three_start_optimum` checks it at the default options). The model
/// is fitted with its fit options and Wald intervals; report (d) recalibrates it with its
/// interval method (the same estimator in the bootstrap refits).
fn demo_estimator(options: &DemoOptions) -> EstimatorOptions {
    EstimatorOptions {
        fit: FitOptions {
            seed: options.seed,
            threads: options.threads,
            restarts: 0,
            ..FitOptions::default()
        },
        covariance: CovarianceKind::Expected,
        intervals: IntervalOptions {
            method: IntervalMethod::Auto,
            reps: Some(options.bootstrap_reps),
        },
        require_converged: false,
    }
}

/// Report (d): refits the model's bootstrap (the method `auto` picks) and sets its intervals
/// beside the paper's for every rationality coefficient and three simulated answers.
fn calibrated_report(
    world: &World,
    data: &Dataset,
    model: &RewardModel,
    estimator: &Estimator,
    options: &DemoOptions,
    control: &FitControl,
) -> Result<CalibratedReport> {
    // On the demo's data, which have annotator ids: the hint names the cluster methods.
    let wald_warning = model.diagnostics_on(data).warning;
    let calibrated = estimator.recalibrate(data, model, control.cancel)?;
    let alpha = options.alpha;
    let mut rows = Vec::new();
    let mut k = 0;
    for var in DEMOGRAPHICS {
        for l in &var.levels[1..] {
            rows.push((
                format!("gamma {}={}", var.name, l.label),
                l.gamma,
                model.gamma_interval(k, alpha),
                calibrated.gamma_interval(k, alpha),
            ));
            k += 1;
        }
    }
    // Three answers from a stream of their own (the other reports' draws are unchanged).
    let mut rng = hetreward::sim::rng(options.seed ^ 0xD0D0);
    for i in 0..3 {
        let prompt = world.prompt(&mut rng);
        let a = world.answer(&prompt, options.drift, &mut rng);
        rows.push((
            format!("reward of answer {}", i + 1),
            world.gold(&a.phi),
            model.score(&a.phi, alpha)?,
            calibrated.score(&a.phi, alpha)?,
        ));
    }
    let c = calibrated.calibration();
    Ok(CalibratedReport {
        method: c.method(),
        reps: c.reps(),
        alpha_hat: c.alpha_hat(),
        wald_warning,
        rows,
    })
}

fn interval(estimate: f64, se: f64, q: f64) -> RewardInterval {
    RewardInterval {
        reward: estimate,
        se,
        lower: estimate - q * se,
        upper: estimate + q * se,
    }
}

fn rationality_report(
    model: &RewardModel,
    annotators: &[Annotator],
    alpha: f64,
) -> Result<(Vec<RationalityRow>, AdversarialSummary)> {
    let q = critical_value(alpha);
    let d2 = model.d2();
    let mut rows = Vec::with_capacity(d2);
    let mut k = 0;
    for var in DEMOGRAPHICS {
        for l in &var.levels[1..] {
            let mut e = vec![0.0; d2];
            e[k] = 1.0;
            let (sigma, sigma_se) = model.rationality(1.0, &e)?;
            rows.push(RationalityRow {
                variable: var.name,
                level: l.label,
                truth: l.gamma,
                coef: model.gamma_interval(k, alpha),
                sigma: interval(sigma, sigma_se, q),
            });
            k += 1;
        }
    }
    let mut summary = AdversarialSummary {
        annotators: annotators.len(),
        truly_adversarial: 0,
        flagged: 0,
        flagged_correctly: 0,
    };
    for a in annotators {
        let (sigma, se) = model.rationality(1.0, &a.psi)?;
        let flagged = sigma + q * se < 0.0;
        summary.truly_adversarial += (a.sigma < 0.0) as usize;
        summary.flagged += flagged as usize;
        summary.flagged_correctly += (flagged && a.sigma < 0.0) as usize;
    }
    Ok((rows, summary))
}

fn llm_comparison(
    world: &World,
    model: &RewardModel,
    options: &DemoOptions,
    rng: &mut ChaCha8Rng,
) -> Result<LlmComparison> {
    let alpha = options.alpha;
    // LLM A answers slightly better on average (+0.15 gold reward) and drifts less than B.
    let theta_sq = dot(&world.theta, &world.theta);
    let quality: Vec<f64> = world.theta.iter().map(|t| 0.15 * t / theta_sq).collect();
    let mut exact = Vec::with_capacity(options.llm_prompts);
    let mut independent = Vec::with_capacity(options.llm_prompts);
    let mut examples: Vec<PairExample> = Vec::new();
    let (mut gold_a_better, mut decisive, mut agree) = (0usize, 0usize, 0usize);
    let mut mean_reward = [0.0; 2];
    for prompt_no in 0..options.llm_prompts {
        let prompt = world.prompt(rng);
        let mut a0 = world.answer(&prompt, 0.5 * options.drift, rng);
        a0.phi.iter_mut().zip(&quality).for_each(|(p, q)| *p += q);
        let a1 = world.answer(&prompt, options.drift, rng);
        let gold = [world.gold(&a0.phi), world.gold(&a1.phi)];
        let c = select::compare(model, &a0.phi, &a1.phi, alpha, DiffMethod::Exact)?;
        let ci = select::compare(model, &a0.phi, &a1.phi, alpha, DiffMethod::Independent)?;
        gold_a_better += (gold[0] > gold[1]) as usize;
        if c.verdict != Verdict::Tie {
            decisive += 1;
            agree += ((c.verdict == Verdict::Win) == (gold[0] > gold[1])) as usize;
        }
        let (reward0, reward1) = (model.score(&a0.phi, alpha)?, model.score(&a1.phi, alpha)?);
        mean_reward[0] += reward0.reward;
        mean_reward[1] += reward1.reward;
        let want_tie = examples
            .iter()
            .all(|e| e.comparison.verdict != Verdict::Tie);
        let want_decisive = examples
            .iter()
            .all(|e| e.comparison.verdict == Verdict::Tie);
        if (c.verdict == Verdict::Tie && want_tie) || (c.verdict != Verdict::Tie && want_decisive) {
            examples.push(PairExample {
                prompt: prompt_no,
                reward0,
                reward1,
                comparison: c,
                gold,
            });
        }
        exact.push(c);
        independent.push(ci);
    }
    examples.sort_by_key(|e| e.comparison.verdict != Verdict::Tie);
    let m = options.llm_prompts as f64;
    Ok(LlmComparison {
        names: ["llm-A", "llm-B"],
        prompts: options.llm_prompts,
        exact: select::win_rate(&exact),
        independent: select::win_rate(&independent),
        gold_share: gold_a_better as f64 / m,
        decisive_accuracy: if decisive > 0 {
            agree as f64 / decisive as f64
        } else {
            f64::NAN
        },
        mean_reward: [mean_reward[0] / m, mean_reward[1] / m],
        examples,
    })
}

/// One prompt's candidates: features (f32, as inference engines hand them out), penalties'
/// raw ingredients and gold rewards.
struct CandidateSet {
    phis: Vec<f32>,
    delta: Vec<f64>,
    tokens: Vec<f64>,
    gold: Vec<f64>,
}

/// Per prompt and N: gold of the (pBoN, BoN) choice for each penalty, the oracle, the mean.
struct PromptOutcome {
    per_size: Vec<(Vec<[f64; 2]>, f64, f64)>,
}

fn bon_study(
    world: &World,
    model: &RewardModel,
    options: &DemoOptions,
    rng: &mut ChaCha8Rng,
) -> Result<BonStudy> {
    let max_n = *options.bon_sizes.iter().max().expect("checked non-empty");
    let d1 = world.d1;
    // Draw every candidate serially (one random stream), then select in parallel.
    let sets: Vec<CandidateSet> = (0..options.bon_prompts)
        .map(|_| {
            let prompt = world.prompt(rng);
            let mut set = CandidateSet {
                phis: Vec::with_capacity(max_n * d1),
                delta: Vec::with_capacity(max_n),
                tokens: Vec::with_capacity(max_n),
                gold: Vec::with_capacity(max_n),
            };
            for _ in 0..max_n {
                let a = world.answer(&prompt, options.drift, rng);
                set.phis.extend(a.phi.iter().map(|&v| v as f32));
                // The gold model sees what the reward model sees: the f32 features.
                let phi32: Vec<f64> = a.phi.iter().map(|&v| v as f32 as f64).collect();
                set.gold.push(world.gold(&phi32));
                set.delta.push(a.delta);
                set.tokens.push(a.tokens);
            }
            set
        })
        .collect();
    let outcome = |set: &CandidateSet| -> Result<PromptOutcome> {
        let mut per_size = Vec::with_capacity(options.bon_sizes.len());
        for &n in &options.bon_sizes {
            let phis = &set.phis[..n * d1];
            let mut cells = Vec::with_capacity(Penalty::ALL.len());
            for penalty in Penalty::ALL {
                let pen: Option<Vec<f64>> = match penalty {
                    Penalty::None => None,
                    Penalty::Wasserstein => {
                        Some(set.delta[..n].iter().map(|d| options.beta_wd * d).collect())
                    }
                    Penalty::Kl => Some(
                        set.delta[..n]
                            .iter()
                            .map(|d| options.beta_kl * d * d / 2.0)
                            .collect(),
                    ),
                    Penalty::Length => Some(
                        set.tokens[..n]
                            .iter()
                            .map(|t| options.beta_length / t)
                            .collect(),
                    ),
                };
                let mut pair = [0.0; 2];
                for (slot, policy) in [Policy::Pbon, Policy::Bon].into_iter().enumerate() {
                    let choice =
                        select::select(model, phis, pen.as_deref(), options.alpha, policy)?;
                    pair[slot] = set.gold[choice.index];
                }
                cells.push(pair);
            }
            let gold = &set.gold[..n];
            let oracle = gold.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mean = gold.iter().sum::<f64>() / n as f64;
            per_size.push((cells, oracle, mean));
        }
        Ok(PromptOutcome { per_size })
    };
    let outcomes: Vec<PromptOutcome> = hetreward::parallel::run_in_pool(options.threads, || {
        sets.par_iter().map(outcome).collect::<Result<Vec<_>>>()
    })??;
    let m = options.bon_prompts as f64;
    let rows = options
        .bon_sizes
        .iter()
        .enumerate()
        .map(|(s, &n)| {
            let cells = Penalty::ALL
                .iter()
                .enumerate()
                .map(|(p, &penalty)| {
                    let mut cell = BonCell {
                        penalty,
                        pbon: 0.0,
                        bon: 0.0,
                        pbon_better: 0,
                        pbon_worse: 0,
                    };
                    for o in &outcomes {
                        let [pb, b] = o.per_size[s].0[p];
                        cell.pbon += pb / m;
                        cell.bon += b / m;
                        cell.pbon_better += (pb > b) as usize;
                        cell.pbon_worse += (pb < b) as usize;
                    }
                    cell
                })
                .collect();
            BonRow {
                n,
                cells,
                oracle: outcomes.iter().map(|o| o.per_size[s].1).sum::<f64>() / m,
                random: outcomes.iter().map(|o| o.per_size[s].2).sum::<f64>() / m,
            }
        })
        .collect();
    Ok(BonStudy {
        prompts: options.bon_prompts,
        rows,
    })
}

fn ci(i: &RewardInterval) -> String {
    format!("({:.3}, {:.3})", i.lower, i.upper)
}

impl fmt::Display for DemoReport {
    /// The human-readable report printed by `hetreward demo`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = &self.options;
        let m = &self.model;
        let r = m.report();
        let level = 100.0 * (1.0 - o.alpha);
        let s = &self.training_summary;
        writeln!(
            f,
            "hetreward demo: the paper's LLM pipeline (§5.2) on simulated data, seed {}",
            o.seed
        )?;
        writeln!(
            f,
            "Training: n = {} comparisons by {} annotators ({} adversarial, sigma < 0); d1 = {} \
             embedding features, d2 = {} one-hot demographic covariates, psi0 = 1.",
            m.n(),
            s.annotators,
            s.truly_adversarial,
            m.d1(),
            m.d2()
        )?;
        let starts = match r.starts {
            1 => "one start".to_string(),
            k => format!("best of {k} starts"),
        };
        writeln!(
            f,
            "Fit: solver {}, {} after {} iterations ({starts}, {} iterations in all), \
             |grad| = {:.1e}, mean NLL {:.4}, {:.2} s; covariance {}.",
            r.solver.name(),
            r.termination.name(),
            r.iterations,
            r.total_iterations,
            r.grad_norm,
            r.neg_loglik,
            r.seconds,
            m.covariance().name()
        )?;

        writeln!(f)?;
        let baseline: Vec<String> = DEMOGRAPHICS
            .iter()
            .map(|v| v.levels[0].label.to_string())
            .collect();
        writeln!(
            f,
            "(a) Rationality coefficients gamma with {level:.0}% CIs (cf. the paper's Table 3)"
        )?;
        writeln!(
            f,
            "    relative to the baseline annotator ({}), whose sigma is 1;",
            baseline.join(", ")
        )?;
        writeln!(
            f,
            "    sigma = rationality of the baseline annotator with that one level switched on."
        )?;
        writeln!(
            f,
            "{:<16} {:<13} {:>7} {:>7} {:>6} {:>17}  {:>7} {:>17}",
            "variable", "level", "true", "coef", "se", "CI", "sigma", "CI of sigma"
        )?;
        for row in &self.rationality {
            let mark = if row.coef.lower > 0.0 || row.coef.upper < 0.0 {
                "*"
            } else {
                " "
            };
            let adv = if row.sigma.upper < 0.0 {
                "  adversarial"
            } else {
                ""
            };
            writeln!(
                f,
                "{:<16} {:<13} {:>7.3} {:>7.3} {:>6.3} {:>17}{mark} {:>7.3} {:>17}{adv}",
                row.variable,
                row.level,
                row.truth,
                row.coef.reward,
                row.coef.se,
                ci(&row.coef),
                row.sigma.reward,
                ci(&row.sigma)
            )?;
        }
        writeln!(
            f,
            "    * CI excludes 0.  Annotators whose sigma CI lies entirely below 0: {} flagged, \
             {} of them truly adversarial (of {}).",
            s.flagged, s.flagged_correctly, s.truly_adversarial
        )?;

        writeln!(f)?;
        let l = &self.llm;
        writeln!(
            f,
            "(b) {} vs {} on {} prompts: reward CIs and r(a0) - r(a1) at {level:.0}% \
             (cf. Table 4 and §5.2.2)",
            l.names[0], l.names[1], l.prompts
        )?;
        writeln!(
            f,
            "    mean estimated reward: {} {:.3}, {} {:.3}",
            l.names[0], l.mean_reward[0], l.names[1], l.mean_reward[1]
        )?;
        for (label, w) in [
            ("exact variance (default)", &l.exact),
            ("paper's independent formula", &l.independent),
        ] {
            writeln!(
                f,
                "    {label:<28} win {:>4}  tie {:>4}  loss {:>4}   win rate of {} over {}: {:.3}%",
                w.wins,
                w.ties,
                w.losses,
                l.names[0],
                l.names[1],
                100.0 * w.win_rate
            )?;
        }
        writeln!(
            f,
            "    gold reward: {} truly better on {:.1}% of prompts; non-tie verdicts agreeing \
             with gold: {:.1}%",
            l.names[0],
            100.0 * l.gold_share,
            100.0 * l.decisive_accuracy
        )?;
        writeln!(
            f,
            "    {:<8} {:<7} {:>8} {:>7} {:>17} {:>8}",
            "prompt", "answer", "reward", "se", "CI", "gold"
        )?;
        for e in &l.examples {
            for (name, iv, gold) in [
                (l.names[0], &e.reward0, e.gold[0]),
                (l.names[1], &e.reward1, e.gold[1]),
            ] {
                writeln!(
                    f,
                    "    {:<8} {:<7} {:>8.3} {:>7.3} {:>17} {:>8.3}",
                    e.prompt,
                    name,
                    iv.reward,
                    iv.se,
                    ci(iv),
                    gold
                )?;
            }
            let c = &e.comparison;
            writeln!(
                f,
                "    {:<8} CI of the reward difference: ({:.3}, {:.3}), p = {:.3} -> {}",
                "",
                c.lower,
                c.upper,
                c.p_value,
                c.verdict.name()
            )?;
        }

        writeln!(f)?;
        writeln!(
            f,
            "(c) Gold reward of the chosen answer, mean over {} prompts (cf. Table 5); \
             pBoN uses the {level:.0}% lower bound",
            self.bon.prompts
        )?;
        writeln!(
            f,
            "    penalties: WD = {} * delta, KL = {} * delta^2/2 (drift delta from the reference), \
             L = {} / |a| tokens",
            o.beta_wd, o.beta_kl, o.beta_length
        )?;
        write!(f, "{:>5}", "N")?;
        for p in Penalty::ALL {
            let sub = if p == Penalty::None {
                String::new()
            } else {
                format!("_{}", p.subscript())
            };
            write!(
                f,
                " | {:>9} {:>9}",
                format!("pBoN{sub}"),
                format!("BoN{sub}")
            )?;
        }
        writeln!(f, " | {:>7} {:>7}", "oracle", "random")?;
        for row in &self.bon.rows {
            write!(f, "{:>5}", row.n)?;
            for c in &row.cells {
                let (a, b) = if c.pbon > c.bon {
                    ("*", " ")
                } else if c.bon > c.pbon {
                    (" ", "*")
                } else {
                    (" ", " ")
                };
                write!(f, " | {:>8.4}{a} {:>8.4}{b}", c.pbon, c.bon)?;
            }
            writeln!(f, " | {:>7.4} {:>7.4}", row.oracle, row.random)?;
        }
        writeln!(f, "    * the better of each pBoN / BoN pair.")?;
        writeln!(f)?;
        let c = &self.calibrated;
        writeln!(
            f,
            "(d) Calibrated {level:.0}% intervals beside the paper's (Wald): `auto` picked {}{} for \
             d1/n = {:.3}, {:.0} comparisons per parameter.",
            c.method.name(),
            c.method_detail(),
            m.d1() as f64 / m.n() as f64,
            m.n() as f64 / (m.d1() + m.d2()) as f64,
        )?;
        if let Some(w) = &c.wald_warning {
            writeln!(f, "    Wald: {w}.")?;
        }
        writeln!(
            f,
            "    {:<34} {:>8} | {:>8} {:>20} | {:>8} {:>20}",
            "quantity", "truth", "Wald", "interval", "calib.", "interval"
        )?;
        for (what, truth, w, k) in &c.rows {
            writeln!(
                f,
                "    {what:<34} {truth:>8.3} | {:>8.3} [{:>8.3}, {:>8.3}] | {:>8.3} [{:>8.3}, {:>8.3}]",
                w.reward, w.lower, w.upper, k.reward, k.lower, k.upper
            )?;
        }
        writeln!(
            f,
            "    `hetreward fit --intervals auto` stores the calibrated method in the model."
        )?;
        writeln!(f)?;
        write!(
            f,
            "Time: simulate {:.2} s, fit {:.2} s, reports {:.2} s, calibrated intervals {:.2} s.",
            self.timings.simulate, self.timings.fit, self.timings.reports, self.timings.calibrate
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> DemoOptions {
        DemoOptions {
            n: 3000,
            d1: 32,
            annotators: 150,
            llm_prompts: 200,
            bon_prompts: 150,
            bon_sizes: vec![16, 64],
            ..DemoOptions::default()
        }
    }

    fn assert_sound(report: &DemoReport) {
        let o = &report.options;
        assert!(report.model.report().converged);
        // (a) The adversarial channel is detected: its sigma CI lies below 0; every other
        // single-level profile is rational; most CIs cover the truth.
        for row in &report.rationality {
            assert!(row.coef.lower <= row.coef.reward && row.coef.reward <= row.coef.upper);
            if row.level == "troll farm" {
                assert!(row.sigma.upper < 0.0, "{row:?}");
                assert!(row.coef.upper < -1.0, "{row:?}");
            } else {
                assert!(row.sigma.lower > 0.0, "{row:?}");
            }
        }
        let covered = report
            .rationality
            .iter()
            .filter(|r| r.coef.lower <= r.truth && r.truth <= r.coef.upper)
            .count();
        assert!(covered >= 8, "only {covered} of 11 CIs cover the truth");
        let s = report.training_summary;
        assert!(s.truly_adversarial > 0);
        assert_eq!(
            s.flagged, s.flagged_correctly,
            "a rational annotator was flagged"
        );
        assert!(s.flagged * 10 >= s.truly_adversarial * 8, "{s:?}");
        // (b) Verdicts add up, agree with the gold reward when decisive, and the win rate is
        // (wins + ties / 2) / prompts.
        let l = &report.llm;
        for w in [l.exact, l.independent] {
            assert_eq!(w.wins + w.ties + w.losses, o.llm_prompts);
            let expected = (w.wins as f64 + 0.5 * w.ties as f64) / o.llm_prompts as f64;
            assert!((w.win_rate - expected).abs() < 1e-12);
        }
        // The exact variance is never wider than the paper's bound, so it has at most as many
        // ties as the independent formula has... on average; allow a little slack.
        assert!(l.exact.ties <= l.independent.ties + o.llm_prompts / 20);
        assert!(l.decisive_accuracy > 0.9, "{}", l.decisive_accuracy);
        assert!(!l.examples.is_empty());
        // (c) Every policy beats a random pick and none beats the oracle; pessimism pays off
        // on average over N.
        let mut gain = 0.0;
        for row in &report.bon.rows {
            assert_eq!(row.cells.len(), 4);
            for c in &row.cells {
                for v in [c.pbon, c.bon] {
                    assert!(row.random < v && v <= row.oracle + 1e-12, "{row:?}");
                }
                assert!(c.pbon_better + c.pbon_worse <= report.bon.prompts);
            }
            gain += row.cells[0].pbon - row.cells[0].bon;
        }
        assert!(gain > 0.0, "pBoN is worse than BoN on average: {gain}");
    }

    #[test]
    fn small_demo_is_sound_and_deterministic() {
        let a = run(&small(), &FitControl::default()).unwrap();
        assert_sound(&a);
        let b = run(
            &DemoOptions {
                threads: 1,
                ..small()
            },
            &FitControl::default(),
        )
        .unwrap();
        assert_eq!(a.model.params(), b.model.params());
        assert_eq!(a.rationality, b.rationality);
        assert_eq!(a.llm, b.llm);
        assert_eq!(a.bon, b.bon);
        let c = run(&DemoOptions { seed: 2, ..small() }, &FitControl::default()).unwrap();
        assert_ne!(a.model.params(), c.model.params());
    }

    #[test]
    fn default_demo_shows_the_papers_findings() {
        let report = run(&DemoOptions::default(), &FitControl::default()).unwrap();
        assert_sound(&report);
        // Plain and length-penalised pBoN beat BoN on average over the N of the paper's Table 5
        // and at N = 128. (With a WD or KL penalty, which already discounts drifted candidates,
        // the gain is smaller and its sign depends on the seed — as mixed as the paper's.)
        for p in [0, 3] {
            let gain: f64 = report
                .bon
                .rows
                .iter()
                .map(|r| r.cells[p].pbon - r.cells[p].bon)
                .sum();
            assert!(gain > 0.0, "{:?}: {gain}", Penalty::ALL[p]);
            let last = report.bon.rows.last().unwrap();
            assert!(last.cells[p].pbon > last.cells[p].bon, "{last:?}");
        }
        let text = report.to_string();
        for needle in [
            "(a) Rationality",
            "troll farm",
            "(b) llm-A vs llm-B",
            "win rate",
            "(c)",
        ] {
            assert!(text.contains(needle), "missing {needle}");
        }
        for n in [20, 40, 60, 80, 128] {
            assert!(text.contains(&format!("\n{n:>5} |")), "no row for N = {n}");
        }
    }

    /// Issue 31 item 6: report (d) says what the picked method is — a jackknife over the
    /// annotators with t quantiles, not "B = 400, percentile" — and the Wald hint on the
    /// demo's clustered data points at the cluster methods, not at the bootstrap.
    #[test]
    fn report_d_names_the_cluster_jackknife_and_the_cluster_hint() {
        let report = run(&small(), &FitControl::default()).unwrap();
        let c = &report.calibrated;
        assert!(c.method.is_cluster(), "{:?}", c.method);
        assert_eq!(c.reps, small().annotators);
        let text = report.to_string();
        let d = &text[text.find("(d) Calibrated").expect("report (d)")..];
        assert!(
            d.contains("`auto` picked cluster-onestep (a jackknife over G = 150 annotators, t(149) quantiles)"),
            "{d}"
        );
        assert!(!d.contains("percentile") && !d.contains("B = "), "{d}");
        // 3000 comparisons for 40-odd parameters: Wald under-covers, and the hint says so.
        let w = c
            .wald_warning
            .as_ref()
            .expect("a Wald hint at 70 per parameter");
        assert!(
            w.contains("--intervals cluster-onestep") && !w.contains("--intervals bootstrap"),
            "{w}"
        );
        for (method, reps, words) in [
            (
                IntervalMethod::Bootstrap,
                400,
                " (B = 400 refits, percentile)",
            ),
            (
                IntervalMethod::Resized,
                100,
                " (B = 100 refits, inflation alpha_hat = 1.000)",
            ),
            (
                IntervalMethod::ClusterJackknife,
                6,
                " (a jackknife over G = 6 annotators, t(5) quantiles)",
            ),
            (IntervalMethod::Wald, 0, ""),
        ] {
            let r = CalibratedReport {
                method,
                reps,
                alpha_hat: 1.0,
                ..c.clone()
            };
            assert_eq!(r.method_detail(), words);
        }
    }

    #[test]
    fn one_start_reaches_the_three_start_optimum() {
        let o = DemoOptions::default();
        let sim = simulate_training(&o).unwrap();
        let control = FitControl::default();
        let one = hetreward::fit::fit(&sim.data, &demo_estimator(&o).fit, &control).unwrap();
        let three = FitOptions {
            restarts: 2,
            ..demo_estimator(&o).fit
        };
        let three = hetreward::fit::fit(&sim.data, &three, &control).unwrap();
        assert_eq!(one.report.starts, 1);
        assert_eq!(three.report.starts, 3);
        assert!(one.report.converged && three.report.converged);
        let (a, b) = (one.params.stacked(), three.params.stacked());
        let gap = a
            .iter()
            .zip(&b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f64::max);
        assert!(
            gap < 1e-6,
            "the restarts found another optimum: max |diff| {gap}"
        );
    }

    #[test]
    fn the_simulated_training_data_is_what_run_fits() {
        let o = small();
        let sim = simulate_training(&o).unwrap();
        assert_eq!(sim.data.n(), o.n);
        assert_eq!(sim.data.d1(), o.d1);
        assert_eq!(sim.data.d2(), demographic_columns());
        assert_eq!(sim.annotators.len(), o.annotators);
        assert!(sim.annotators.iter().any(|(_, s)| *s < 0.0));
        let report = run(&o, &FitControl::default()).unwrap();
        assert_eq!(report.model.n(), sim.data.n());
    }

    #[test]
    fn options_are_checked() {
        let bad = [
            DemoOptions { d1: 3, ..small() },
            DemoOptions { n: 50, ..small() },
            DemoOptions {
                annotators: 0,
                ..small()
            },
            DemoOptions {
                bon_sizes: vec![],
                ..small()
            },
            DemoOptions {
                bon_sizes: vec![0, 4],
                ..small()
            },
            DemoOptions {
                alpha: 1.5,
                ..small()
            },
            DemoOptions {
                drift: f64::NAN,
                ..small()
            },
            DemoOptions {
                beta_kl: -1.0,
                ..small()
            },
        ];
        for o in bad {
            let e = run(&o, &FitControl::default()).unwrap_err();
            assert!(e.is_bad_input(), "{e}");
        }
    }
}
