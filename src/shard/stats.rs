//! What shards exchange with a driver: the first pass's [`ShardSummary`], the driver's
//! [`Request`] and a shard's answer [`ShardStats`], with the rules that merge them (the byte
//! format is `wire`'s).

use crate::codes::coded_enum;
use crate::data::Dataset;
use crate::error::{check_finite, Error, Result};
use crate::likelihood::{
    cluster_score_sums, evaluate, expected_information, hessian_vector, observed_hessian,
    score_outer_product, Curvature,
};
use crate::model::Params;
use nalgebra::DMatrix;
use std::collections::BTreeMap;

/// Largest `d1 + d2` of a shard, read or merged (far above any model this library fits;
/// keeps sizes from overflowing).
pub(crate) const MAX_PARAMS: u64 = 1 << 24;

/// Version of the shard schema hashed into [`ShardSummary::schema`] (bumped when the meaning
/// of a shard's columns changes).
const SCHEMA_VERSION: u32 = 1;

/// The first pass over a shard: what must agree across shards before they are fitted together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardSummary {
    /// Rows (comparisons) in the shard — after `merge_summaries`, in all shards.
    pub n: u64,
    /// Reward dimension (length of theta).
    pub d1: u64,
    /// Covariate dimension (length of gamma).
    pub d2: u64,
    /// Whether the shard has cluster (annotator) ids.
    pub clustered: bool,
    /// CRC-32 of the schema (schema version, d1, d2, clustered): equal for compatible shards.
    pub schema: u32,
}

impl ShardSummary {
    /// The summary of one shard (no pass over the values: a [`Dataset`] is validated when it
    /// is built).
    pub(crate) fn of(data: &Dataset) -> Self {
        let (d1, d2) = (data.d1() as u64, data.d2() as u64);
        let clustered = data.cluster().is_some();
        ShardSummary {
            n: data.n() as u64,
            d1,
            d2,
            clustered,
            schema: schema_checksum(d1, d2, clustered),
        }
    }
}

/// CRC-32 of the schema version, `d1`, `d2` and the cluster flag, little-endian.
fn schema_checksum(d1: u64, d2: u64, clustered: bool) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(b"hetreward shard schema");
    h.update(&SCHEMA_VERSION.to_le_bytes());
    h.update(&d1.to_le_bytes());
    h.update(&d2.to_le_bytes());
    h.update(&[u8::from(clustered)]);
    h.finalize()
}

/// Adds the summaries of shards `0, 1, ...` of one dataset (in that order): the total row
/// count, with the common schema.
///
/// Errors: [`Error::InvalidArgument`] for no shards, overflowing row counts, a shard whose
/// checksum does not match its own fields (a damaged summary) or fewer rows in all than
/// parameters (a single shard may hold fewer); [`Error::DimensionMismatch`]
/// for d1 = 0 or more than 2^24 parameters, and naming the first shard whose d1, d2 or cluster
/// flag differs from shard 0's.
pub(crate) fn merge_summaries(summaries: &[ShardSummary]) -> Result<ShardSummary> {
    let first = summaries
        .first()
        .ok_or_else(|| Error::invalid("shards", "no shards to fit"))?;
    let mut total = *first;
    total.n = 0;
    let p = first.d1.saturating_add(first.d2);
    if first.d1 == 0 || p > MAX_PARAMS {
        return Err(Error::dims(
            "shard 0",
            format!("d1 >= 1 and d1 + d2 <= {}", MAX_PARAMS),
            format!("d1 = {}, d2 = {}", first.d1, first.d2),
        ));
    }
    for (k, s) in summaries.iter().enumerate() {
        if s.schema != schema_checksum(s.d1, s.d2, s.clustered) {
            return Err(Error::invalid(
                format!("shard {k}"),
                "its schema checksum does not match its dimensions (a damaged summary)",
            ));
        }
        let describe = |s: &ShardSummary| {
            format!(
                "d1 = {}, d2 = {}, {}",
                s.d1,
                s.d2,
                if s.clustered {
                    "with cluster ids"
                } else {
                    "without cluster ids"
                }
            )
        };
        if s.schema != first.schema {
            return Err(Error::dims(
                format!("shard {k}"),
                format!("shard 0's schema ({})", describe(first)),
                describe(s),
            ));
        }
        total.n = total.n.checked_add(s.n).ok_or_else(|| {
            Error::invalid(
                format!("shard {k}"),
                "the row counts overflow a 64-bit count",
            )
        })?;
    }
    // Identifiability is the merged data's: a shard may hold fewer rows than parameters.
    crate::data::check_sample_count("shards", total.n, first.d1 as usize, first.d2 as usize)?;
    Ok(total)
}

/// "Give me these sums at these parameters": what every shard computes in one round.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Where: theta (length d1) and gamma (length d2).
    pub params: Params,
    /// The NLL sum and the gradient sum.
    pub value: bool,
    /// Vectors (each of length d1 + d2, stacked theta first) to multiply by the curvature
    /// matrix: one Hessian-vector product each, in one round.
    pub products: Vec<Vec<f64>>,
    /// The matrix of [`Request::products`]: observed Hessian or expected information.
    pub curvature: Curvature,
    /// The expected information sum `sum w_i g_i g_i^T`, packed.
    pub expected: bool,
    /// The observed Hessian sum, packed.
    pub observed: bool,
    /// The score outer-product sum `sum r_i^2 g_i g_i^T` (the robust meat), packed.
    pub meat: bool,
    /// The score sums per cluster id (the cluster meat is formed by the driver).
    pub clusters: bool,
}

impl Request {
    /// A request for nothing at `params` (set the fields wanted).
    pub(crate) fn at(params: Params) -> Self {
        Request {
            params,
            value: false,
            products: Vec::new(),
            curvature: Curvature::Expected,
            expected: false,
            observed: false,
            meat: false,
            clusters: false,
        }
    }
}

coded_enum! {
    /// One section of a [`Request`] / [`ShardStats`] (which sums are asked for / present).
    /// Its code is a bit index: the wire format and the C API's `HETREWARD_SHARD_*` values
    /// hold the flag `1 << code` ([`Section::flag`]), ORed together.
    pub(crate) enum Section: "sections", "shard section" {
        /// The NLL sum and the gradient sum.
        Value = 0 => "value",
        /// Observed-Hessian-vector products.
        ObservedProducts = 1 => "observed-products",
        /// Expected-information-vector products.
        ExpectedProducts = 2 => "expected-products",
        /// The expected information sum, packed.
        Expected = 3 => "expected",
        /// The observed Hessian sum, packed.
        Observed = 4 => "observed",
        /// The score outer-product sum, packed.
        Meat = 5 => "meat",
        /// The score sums per cluster id.
        Clusters = 6 => "clusters",
    }
}

impl Section {
    /// The section's bit: `1 << code`.
    pub(crate) const fn flag(self) -> u32 {
        1 << self.code()
    }
}

/// The flags of [`Section`], as the bit tests of the wire format spell them.
pub(super) mod section {
    use super::Section;
    pub(in crate::shard) const VALUE: u32 = Section::Value.flag();
    pub(in crate::shard) const OBSERVED_PRODUCTS: u32 = Section::ObservedProducts.flag();
    pub(in crate::shard) const EXPECTED_PRODUCTS: u32 = Section::ExpectedProducts.flag();
    pub(in crate::shard) const EXPECTED: u32 = Section::Expected.flag();
    pub(in crate::shard) const OBSERVED: u32 = Section::Observed.flag();
    pub(in crate::shard) const MEAT: u32 = Section::Meat.flag();
    pub(in crate::shard) const CLUSTERS: u32 = Section::Clusters.flag();
    /// Every section's flag.
    pub(in crate::shard) const ALL: u32 = (1 << Section::ALL.len()) - 1;
}

/// One shard's answer to a [`Request`] (or the merged answer of several shards): sums over
/// the shard's rows, never means. Symmetric matrices are packed: the lower triangle row by
/// row, `(i, j)` for `j <= i` at `i (i + 1) / 2 + j`.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardStats {
    pub(super) d1: usize,
    pub(super) d2: usize,
    pub(super) sections: u32,
    pub(super) n: u64,
    pub(super) nll: f64,
    pub(super) grad: Vec<f64>,
    /// `k` products, `d1 + d2` values each.
    pub(super) products: Vec<f64>,
    pub(super) expected: Vec<f64>,
    pub(super) observed: Vec<f64>,
    pub(super) meat: Vec<f64>,
    pub(super) clusters: BTreeMap<i64, Vec<f64>>,
}

/// `p (p + 1) / 2`, the length of a packed symmetric `p x p` matrix.
pub(super) fn packed_len(p: usize) -> usize {
    p * (p + 1) / 2
}

/// The lower triangle of `m` (symmetric), row by row, times `scale`.
fn pack(m: &DMatrix<f64>, scale: f64) -> Vec<f64> {
    let p = m.nrows();
    let mut out = Vec::with_capacity(packed_len(p));
    for i in 0..p {
        for j in 0..=i {
            out.push(m[(i, j)] * scale);
        }
    }
    out
}

/// The symmetric `p x p` matrix of a packed lower triangle, divided by `divisor`.
fn unpack(packed: &[f64], p: usize, divisor: f64) -> DMatrix<f64> {
    let mut m = DMatrix::zeros(p, p);
    let mut k = 0;
    for i in 0..p {
        for j in 0..=i {
            m[(i, j)] = packed[k] / divisor;
            m[(j, i)] = packed[k] / divisor;
            k += 1;
        }
    }
    m
}

impl ShardStats {
    /// Computes `request` on the shard `data` (on the current rayon pool; thread-count
    /// independent). Costs one pass over the shard for the value and the products' per-sample
    /// terms, one per product, one Gram product per packed matrix and one pass for the
    /// cluster sums.
    ///
    /// Errors: [`Error::DimensionMismatch`] for parameters or product vectors of the wrong
    /// length, [`Error::NonFinite`] for non-finite ones, [`Error::InvalidArgument`] for
    /// cluster sums on a shard without cluster ids.
    pub(crate) fn compute(data: &Dataset, request: &Request) -> Result<Self> {
        let (d1, d2, p) = (data.d1(), data.d2(), data.n_params());
        let params = &request.params;
        if params.theta.len() != d1 {
            return Err(Error::dims(
                "theta",
                format!("{d1} values (d1)"),
                params.theta.len(),
            ));
        }
        if params.gamma.len() != d2 {
            return Err(Error::dims(
                "gamma",
                format!("{d2} values (d2)"),
                params.gamma.len(),
            ));
        }
        check_finite("theta", &params.theta)?;
        check_finite("gamma", &params.gamma)?;
        for (k, v) in request.products.iter().enumerate() {
            if v.len() != p {
                return Err(Error::dims(
                    format!("products[{k}]"),
                    format!("{p} values (d1 + d2)"),
                    v.len(),
                ));
            }
            check_finite(&format!("products[{k}]"), v)?;
        }
        if request.clusters && data.cluster().is_none() {
            return Err(Error::invalid(
                "clusters",
                "per-cluster score sums need cluster ids in the shard",
            ));
        }
        let n = data.n() as f64;
        let mut stats = ShardStats::empty(d1, d2, data.n() as u64);
        if request.value || !request.products.is_empty() {
            let eval = evaluate(data, params);
            if request.value {
                stats.sections |= section::VALUE;
                stats.nll = eval.nll * n;
                stats.grad = eval.grad.iter().map(|g| g * n).collect();
            }
            if !request.products.is_empty() {
                stats.sections |= match request.curvature {
                    Curvature::Observed => section::OBSERVED_PRODUCTS,
                    Curvature::Expected => section::EXPECTED_PRODUCTS,
                };
                for v in &request.products {
                    let hv = hessian_vector(data, &eval.terms, v, request.curvature, false);
                    stats.products.extend(hv.iter().map(|x| x * n));
                }
            }
        }
        if request.expected {
            stats.sections |= section::EXPECTED;
            stats.expected = pack(&expected_information(data, params), n);
        }
        if request.observed {
            stats.sections |= section::OBSERVED;
            stats.observed = pack(&observed_hessian(data, params), n);
        }
        if request.meat {
            stats.sections |= section::MEAT;
            stats.meat = pack(&score_outer_product(data, params, false), n);
        }
        if request.clusters {
            stats.sections |= section::CLUSTERS;
            let (ids, sums) = cluster_score_sums(data, params);
            stats.clusters = ids
                .into_iter()
                .zip(sums.chunks_exact(p))
                .map(|(id, s)| (id, s.to_vec()))
                .collect();
        }
        Ok(stats)
    }

    pub(super) fn empty(d1: usize, d2: usize, n: u64) -> Self {
        ShardStats {
            d1,
            d2,
            sections: 0,
            n,
            nll: 0.0,
            grad: Vec::new(),
            products: Vec::new(),
            expected: Vec::new(),
            observed: Vec::new(),
            meat: Vec::new(),
            clusters: BTreeMap::new(),
        }
    }

    /// Adds `other` (another shard's answer to the same request) into `self`: counts and sums
    /// add, cluster sums add by id (a cluster may span shards). Addition is associative up to
    /// rounding; merge in a fixed order (shard index, see [`merge_in_order`]) for results that
    /// do not depend on scheduling.
    ///
    /// Errors: [`Error::DimensionMismatch`] when the two answers differ in dimensions, in the
    /// sections computed or in the number of products (not answers to one request).
    pub(crate) fn merge(&mut self, other: &ShardStats) -> Result<()> {
        if (self.d1, self.d2) != (other.d1, other.d2) {
            return Err(Error::dims(
                "shard statistics",
                format!("d1 = {}, d2 = {}", self.d1, self.d2),
                format!("d1 = {}, d2 = {}", other.d1, other.d2),
            ));
        }
        if self.sections != other.sections || self.products.len() != other.products.len() {
            return Err(Error::dims(
                "shard statistics",
                format!(
                    "sections {:#x} with {} products",
                    self.sections,
                    self.num_products()
                ),
                format!(
                    "sections {:#x} with {} products (answers to different requests)",
                    other.sections,
                    other.num_products()
                ),
            ));
        }
        let add = |a: &mut Vec<f64>, b: &[f64]| {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        };
        self.n += other.n;
        self.nll += other.nll;
        add(&mut self.grad, &other.grad);
        add(&mut self.products, &other.products);
        add(&mut self.expected, &other.expected);
        add(&mut self.observed, &other.observed);
        add(&mut self.meat, &other.meat);
        for (id, s) in &other.clusters {
            match self.clusters.get_mut(id) {
                Some(mine) => add(mine, s),
                None => {
                    self.clusters.insert(*id, s.clone());
                }
            }
        }
        Ok(())
    }

    /// Checks that `self` answers `request` over `n` rows: the request's dimensions, sections
    /// and number of products, and the row count (a missing or doubled shard shows here).
    ///
    /// Errors: [`Error::DimensionMismatch`] naming what differs.
    pub(crate) fn check_answers(&self, request: &Request, n: u64) -> Result<()> {
        let (d1, d2) = (request.params.theta.len(), request.params.gamma.len());
        let want = (d1, d2, request.sections(), request.products.len(), n);
        let got = (self.d1, self.d2, self.sections, self.num_products(), self.n);
        if want != got {
            let show = |(d1, d2, s, k, n): (usize, usize, u32, usize, u64)| {
                format!("d1 = {d1}, d2 = {d2}, sections {s:#x}, {k} products over {n} rows")
            };
            return Err(Error::dims("answer", show(want), show(got)));
        }
        Ok(())
    }

    /// Reward dimension d1.
    pub(crate) fn d1(&self) -> usize {
        self.d1
    }
    /// Covariate dimension d2.
    pub(crate) fn d2(&self) -> usize {
        self.d2
    }
    /// Rows summed over.
    pub(crate) fn n(&self) -> u64 {
        self.n
    }
    pub(super) fn p(&self) -> usize {
        self.d1 + self.d2
    }
    fn has(&self, flag: u32, what: &str) -> Result<()> {
        if self.sections & flag == 0 {
            return Err(Error::invalid(
                "shard statistics",
                format!("{what} were not requested"),
            ));
        }
        Ok(())
    }
    /// The NLL sum (requested with [`Request::value`]).
    pub(crate) fn nll_sum(&self) -> Result<f64> {
        self.has(section::VALUE, "the NLL and gradient sums")?;
        Ok(self.nll)
    }
    /// The gradient sum, stacked theta first (requested with [`Request::value`]).
    pub(crate) fn grad_sum(&self) -> Result<&[f64]> {
        self.has(section::VALUE, "the NLL and gradient sums")?;
        Ok(&self.grad)
    }
    /// Number of Hessian-vector products held.
    pub(crate) fn num_products(&self) -> usize {
        self.products.len().checked_div(self.p()).unwrap_or(0)
    }
    /// Product `k` (the sum of `M_i v_k` over the rows), length d1 + d2.
    pub(crate) fn product(&self, k: usize) -> Result<&[f64]> {
        let p = self.p();
        self.products.get(k * p..(k + 1) * p).ok_or_else(|| {
            Error::invalid(
                "product",
                format!("index {k} out of range ({} products)", self.num_products()),
            )
        })
    }
    /// The expected information sum as a symmetric matrix, divided by `divisor`
    /// (the row count for the mean).
    pub(crate) fn expected(&self, divisor: f64) -> Result<DMatrix<f64>> {
        self.has(section::EXPECTED, "the expected information")?;
        Ok(unpack(&self.expected, self.p(), divisor))
    }
    /// The observed Hessian sum as a symmetric matrix, divided by `divisor`
    /// (the row count for the mean).
    pub(crate) fn observed(&self, divisor: f64) -> Result<DMatrix<f64>> {
        self.has(section::OBSERVED, "the observed Hessian")?;
        Ok(unpack(&self.observed, self.p(), divisor))
    }
    /// The per-sample score outer-product sum as a symmetric matrix, divided by `divisor`
    /// (the row count for the mean).
    pub(crate) fn meat(&self, divisor: f64) -> Result<DMatrix<f64>> {
        self.has(section::MEAT, "the score outer products")?;
        Ok(unpack(&self.meat, self.p(), divisor))
    }
    /// The score sums per cluster id, in increasing id order.
    pub(crate) fn clusters(&self) -> Result<&BTreeMap<i64, Vec<f64>>> {
        self.has(section::CLUSTERS, "the per-cluster score sums")?;
        Ok(&self.clusters)
    }
    /// The clustered meat `sum_c S_c S_c^T` (clusters in increasing id order) divided by
    /// `divisor`: formed after every shard's cluster sums were added by id.
    pub(crate) fn cluster_meat(&self, divisor: f64) -> Result<DMatrix<f64>> {
        let sums: Vec<&Vec<f64>> = self.clusters()?.values().collect();
        let p = self.p();
        Ok(crate::linalg::gram(sums.len(), p, divisor, |c, out| {
            out.copy_from_slice(sums[c])
        }))
    }
}

/// Merges the answers of shards `0, 1, 2, ...` in that order (a left fold: the order is fixed,
/// so results do not depend on which shard finished first).
///
/// Errors: [`Error::InvalidArgument`] for no answers; [`ShardStats::merge`]'s, naming the shard.
pub(super) fn merge_in_order(stats: Vec<ShardStats>) -> Result<ShardStats> {
    let mut it = stats.into_iter();
    let mut total = it
        .next()
        .ok_or_else(|| Error::invalid("shards", "no shard statistics to merge"))?;
    for (k, s) in it.enumerate() {
        total.merge(&s).map_err(|e| match e {
            Error::DimensionMismatch { expected, got, .. } => Error::DimensionMismatch {
                arg: format!("shard {}", k + 1),
                expected,
                got,
            },
            e => e,
        })?;
    }
    Ok(total)
}
