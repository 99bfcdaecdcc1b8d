//! The coefficient table in the C ABI: estimate, SE, z, p-value and CI of every theta_j and
//! gamma_k under the model's interval method ([`crate::coefficients`]), and the coefficients
//! whose intervals are unbounded with the annotator that carries each.

use super::args::{out_ptr, out_slice, write_zero_padded, ZeroPadded};
use super::enums::{
    from_c, hetreward_coefficients, CoefficientRows, HETREWARD_COEFFICIENTS_GAMMA,
    HETREWARD_COEFFICIENTS_THETA,
};
use super::model::{hetreward_model, model_ref};
use super::status::{boundary, hetreward_status};
use crate::coefficients::{self, Block, Coefficient, Unbounded};
use crate::error::{check_alpha, Error};

/// One row of the coefficient table, filled by hetreward_model_coefficients().
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
#[allow(non_camel_case_types)]
pub struct hetreward_coefficient {
    /// HETREWARD_COEFFICIENTS_THETA or HETREWARD_COEFFICIENTS_GAMMA: which vector the row is
    /// a coefficient of.
    pub block: hetreward_coefficients,
    /// 0-based index in that vector.
    pub index: usize,
    /// The estimate on the reported scale (theta_hat / alpha_hat and gamma_hat - bias for the
    /// resized bootstrap; the estimate itself otherwise).
    pub estimate: f64,
    /// Wald: the standard error (as hetreward_model_theta_se() / _gamma_se()); bootstrap
    /// methods: the SD of the refits' values on the reported scale.
    pub se: f64,
    /// estimate / se (0 when both are 0).
    pub z: f64,
    /// Two-sided p-value of "coefficient = 0": normal for Wald and the resized bootstrap,
    /// 2 min(#{draws <= 0}, #{draws >= 0}) / B for the percentile bootstrap.
    pub p_value: f64,
    /// Lower end of the (1 - alpha) CI.
    pub lower: f64,
    /// Upper end of the CI.
    pub upper: f64,
}

impl ZeroPadded for hetreward_coefficient {
    unsafe fn write_fields(&self, dst: *mut Self) {
        use std::ptr::addr_of_mut;
        addr_of_mut!((*dst).block).write(self.block);
        addr_of_mut!((*dst).index).write(self.index);
        addr_of_mut!((*dst).estimate).write(self.estimate);
        addr_of_mut!((*dst).se).write(self.se);
        addr_of_mut!((*dst).z).write(self.z);
        addr_of_mut!((*dst).p_value).write(self.p_value);
        addr_of_mut!((*dst).lower).write(self.lower);
        addr_of_mut!((*dst).upper).write(self.upper);
    }
}

/// The C code of a coefficient's block.
fn block_code(block: Block) -> hetreward_coefficients {
    match block {
        Block::Theta => HETREWARD_COEFFICIENTS_THETA,
        Block::Gamma => HETREWARD_COEFFICIENTS_GAMMA,
    }
}

impl From<&Coefficient> for hetreward_coefficient {
    fn from(c: &Coefficient) -> Self {
        hetreward_coefficient {
            block: block_code(c.block),
            index: c.index,
            estimate: c.estimate,
            se: c.se,
            z: c.z,
            p_value: c.p_value,
            lower: c.lower,
            upper: c.upper,
        }
    }
}

/// The coefficient table of the model at level `alpha` in (0, 1), under the model's interval
/// method (hetreward_model_intervals(); the paper's Wald table of any model is that of
/// hetreward_model_wald()'s copy): `which` selects the rows (HETREWARD_COEFFICIENTS_THETA:
/// d1 rows, _GAMMA: d2 rows, _ALL: theta then gamma).
///
/// With `out_rows` NULL, only writes the number of rows to `*out_count` (`capacity` is then
/// ignored). Otherwise `out_rows` holds `capacity` elements, at least the number of rows: the
/// rows are written (padding zeroed) and their number to `*out_count`. Returns
/// HETREWARD_NULL_POINTER (model, out_count), HETREWARD_INVALID_ARGUMENT (unknown `which`,
/// alpha), HETREWARD_DIMENSION_MISMATCH (capacity too small; the message gives the number
/// needed). Nothing is written on failure. Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_model_coefficients(
    model: *const hetreward_model,
    which: hetreward_coefficients,
    alpha: f64,
    out_rows: *mut hetreward_coefficient,
    capacity: usize,
    out_count: *mut usize,
) -> hetreward_status {
    boundary(|| {
        // SAFETY: NULL or a live model (header contract).
        let m = unsafe { model_ref(model)? };
        let blocks: &[Block] = match from_c("which", which, "HETREWARD_COEFFICIENTS_*")? {
            CoefficientRows::Theta => &[Block::Theta],
            CoefficientRows::Gamma => &[Block::Gamma],
            CoefficientRows::All => &[Block::Theta, Block::Gamma],
        };
        check_alpha(alpha)?;
        let out_count = out_ptr(out_count, "out_count")?;
        let len = |b: &Block| match b {
            Block::Theta => m.d1(),
            Block::Gamma => m.d2(),
        };
        let count: usize = blocks.iter().map(len).sum();
        if !out_rows.is_null() {
            if capacity < count {
                return Err(Error::dims(
                    "capacity",
                    format!("at least {count} rows"),
                    capacity,
                ));
            }
            let out = out_slice(out_rows, count, "out_rows")?;
            let rows: Vec<hetreward_coefficient> = blocks
                .iter()
                .flat_map(|&b| (0..len(&b)).map(move |i| (b, i)))
                .map(|(b, i)| Ok((&coefficients::coefficient(m, b, i, alpha)?).into()))
                .collect::<Result<_, Error>>()?;
            // SAFETY: `out_rows` holds capacity >= count elements (header contract).
            unsafe { write_zero_padded(out, &rows) };
        }
        // SAFETY: checked non-NULL.
        unsafe { *out_count = count };
        Ok(())
    })
}

/// A coefficient whose interval is unbounded, filled by hetreward_model_unbounded(): one
/// annotator carries it alone (its covariate is zero in every other annotator's rows), so the
/// data without that annotator cannot estimate it, and a cluster interval method reports an
/// infinite SE and bounds for it (and for every reward, difference or rationality that puts
/// weight on it).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub struct hetreward_unbounded {
    /// HETREWARD_COEFFICIENTS_THETA or HETREWARD_COEFFICIENTS_GAMMA: which vector the
    /// coefficient is in.
    pub block: hetreward_coefficients,
    /// 0-based index in that vector.
    pub index: usize,
    /// The id of the annotator (cluster) that carries it, as the data gave it.
    pub annotator: i64,
}

impl ZeroPadded for hetreward_unbounded {
    unsafe fn write_fields(&self, dst: *mut Self) {
        use std::ptr::addr_of_mut;
        addr_of_mut!((*dst).block).write(self.block);
        addr_of_mut!((*dst).index).write(self.index);
        addr_of_mut!((*dst).annotator).write(self.annotator);
    }
}

impl From<&Unbounded> for hetreward_unbounded {
    fn from(u: &Unbounded) -> Self {
        hetreward_unbounded {
            block: block_code(u.block),
            index: u.index,
            annotator: u.annotator,
        }
    }
}

/// The model's coefficients whose intervals are unbounded, each with the annotator that
/// carries it alone: theta before gamma, in index order. None but for a cluster interval
/// method (HETREWARD_INTERVALS_CLUSTER_JACKKNIFE or _CLUSTER_ONESTEP, or _AUTO's pick of one)
/// on data where one annotator carries a coefficient; their rows of hetreward_model_coefficients() have an
/// infinite SE and bounds, and hetreward_model_interval_warning() names them in words.
///
/// With `out_rows` NULL, only writes their number to `*out_count` (`capacity` is then
/// ignored). Otherwise `out_rows` holds `capacity` elements, at least that number: the rows
/// are written (padding zeroed) and their number to `*out_count`. Returns
/// HETREWARD_NULL_POINTER (model, out_count), HETREWARD_DIMENSION_MISMATCH (capacity too
/// small; the message gives the number needed). Nothing is written on failure. Thread-safe.
#[no_mangle]
pub extern "C" fn hetreward_model_unbounded(
    model: *const hetreward_model,
    out_rows: *mut hetreward_unbounded,
    capacity: usize,
    out_count: *mut usize,
) -> hetreward_status {
    boundary(|| {
        // SAFETY: NULL or a live model (header contract).
        let m = unsafe { model_ref(model)? };
        let out_count = out_ptr(out_count, "out_count")?;
        let rows: Vec<hetreward_unbounded> = coefficients::unbounded_coefficients(m)
            .iter()
            .map(Into::into)
            .collect();
        if !out_rows.is_null() {
            if capacity < rows.len() {
                return Err(Error::dims(
                    "capacity",
                    format!("at least {} rows", rows.len()),
                    capacity,
                ));
            }
            let out = out_slice(out_rows, rows.len(), "out_rows")?;
            // SAFETY: `out_rows` holds capacity >= rows.len() elements (header contract).
            unsafe { write_zero_padded(out, &rows) };
        }
        // SAFETY: checked non-NULL.
        unsafe { *out_count = rows.len() };
        Ok(())
    })
}
