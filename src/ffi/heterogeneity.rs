//! The annotator diagnostics in the C ABI, of a model on a dataset with cluster ids: the
//! heterogeneity diagnostic (per coefficient the design effect, cluster-robust over model-based
//! variance, and the effective number of clusters, and the warning the CLI prints) and the
//! leverage diagnostics beside it (per annotator its leverage and partial leverages, per
//! coefficient its effective number of annotators, `crate::cluster::leverage`).

use super::args::{
    check_dim, checked_len, out_ptr, out_slice, write_slice, write_zero_padded, ZeroPadded,
};
use super::dataset::{dataset_ref, hetreward_dataset};
use super::model::{hetreward_model, model_ref};
use super::status::{boundary, hetreward_status};
use crate::cluster::heterogeneity;
use crate::cluster::leverage::{leverage, Leverage};
use crate::error::{Error, Result};

/// The summary of the heterogeneity diagnostic, filled by hetreward_model_heterogeneity().
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
#[allow(non_camel_case_types)]
pub struct hetreward_heterogeneity {
    /// Number of clusters G in the dataset.
    pub clusters: usize,
    /// The coefficient with the largest standardised excess (index into theta then gamma:
    /// 0..d1 is theta_j, d1.. is gamma_{index - d1}).
    pub worst: usize,
    /// Its design effect (CR1 cluster-robust variance / expected-information variance).
    pub worst_design_effect: f64,
    /// Its standardised excess (design effect - 1) / sqrt(2 / k), k its effective clusters.
    pub worst_excess_z: f64,
    /// Approximate coverage of a 95% interval that assumes independent comparisons for that
    /// coefficient: 2 Phi(1.96 / sqrt(design effect)) - 1.
    pub independent_coverage: f64,
    /// Whether intervals that assume independence (Wald, bootstrap, resized) would
    /// under-cover: the worst design effect is above 1.17 and more than 2 noise SDs above 1
    /// (the CLI then prints its warning).
    pub warning: bool,
}

impl ZeroPadded for hetreward_heterogeneity {
    unsafe fn write_fields(&self, dst: *mut Self) {
        use std::ptr::addr_of_mut;
        addr_of_mut!((*dst).clusters).write(self.clusters);
        addr_of_mut!((*dst).worst).write(self.worst);
        addr_of_mut!((*dst).worst_design_effect).write(self.worst_design_effect);
        addr_of_mut!((*dst).worst_excess_z).write(self.worst_excess_z);
        addr_of_mut!((*dst).independent_coverage).write(self.independent_coverage);
        addr_of_mut!((*dst).warning).write(self.warning);
    }
}

/// The annotator-heterogeneity diagnostic of `model`'s estimate on `dataset` (which must have
/// cluster ids, e.g. the data it was fitted on): writes `len` = d1 + d2 values (theta first,
/// then gamma) to `out_design_effects` (CR1 cluster-robust variance over the
/// expected-information variance: near 1 without annotator effects beyond the covariates) and
/// to `out_effective_clusters` (each coefficient's effective number of clusters k, at most
/// G - 1: the design effect's noise SD is about sqrt(2 / k)), and fills `*out_info`.
///
/// Returns HETREWARD_NULL_POINTER, HETREWARD_DIMENSION_MISMATCH (the dataset's d1 or d2
/// differs from the model's; `len` is not d1 + d2), HETREWARD_INVALID_ARGUMENT (`cluster`: the
/// dataset has no cluster ids or fewer than 3 clusters), HETREWARD_SINGULAR_INFORMATION.
/// Nothing is written on failure. Thread-safe (runs on the library's global thread pool).
#[no_mangle]
pub extern "C" fn hetreward_model_heterogeneity(
    model: *const hetreward_model,
    dataset: *const hetreward_dataset,
    len: usize,
    out_design_effects: *mut f64,
    out_effective_clusters: *mut f64,
    out_info: *mut hetreward_heterogeneity,
) -> hetreward_status {
    boundary(|| {
        // SAFETY: NULL or live handles (header contract).
        let (m, data) = unsafe { (model_ref(model)?, dataset_ref(dataset)?) };
        check_dim("dataset d1", data.d1(), m.d1(), "the model's d1")?;
        check_dim("dataset d2", data.d2(), m.d2(), "the model's d2")?;
        let p = m.d1() + m.d2();
        check_dim("len", len, p, "the model's d1 + d2")?;
        let design = out_slice(out_design_effects, len, "out_design_effects")?;
        let effective = out_slice(out_effective_clusters, len, "out_effective_clusters")?;
        let info = out_ptr(out_info, "out_info")?;
        let h = heterogeneity(data, m.params())?;
        let summary = hetreward_heterogeneity {
            clusters: h.clusters,
            worst: h.worst,
            worst_design_effect: h.design_effects[h.worst],
            worst_excess_z: h.excess_z[h.worst],
            independent_coverage: h.independent_coverage,
            warning: h.warning.is_some(),
        };
        // SAFETY: the arrays hold `len` = p doubles (header contract), `info` is non-NULL.
        unsafe {
            write_slice(design, &h.design_effects);
            write_slice(effective, &h.effective_clusters);
            write_zero_padded(info, std::slice::from_ref(&summary));
        }
        Ok(())
    })
}

/// The summary of the leverage diagnostics, filled by hetreward_model_leverage().
///
/// Versioned as hetreward_fit_params is: set `struct_size` to sizeof(hetreward_leverage_info)
/// before the call. Fields may be appended in later versions (never reordered); the library
/// writes only the fields of the caller's version (the first `struct_size` bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
#[allow(non_camel_case_types)]
pub struct hetreward_leverage_info {
    /// sizeof(hetreward_leverage_info), set by the caller; left as it is.
    pub struct_size: usize,
    /// Number of annotators (clusters) G in the dataset.
    pub clusters: usize,
    /// The largest annotator leverage L_g = tr(I_g I^-1) (the leverages sum to d1 + d2;
    /// balanced annotators each have (d1 + d2) / G).
    pub max_leverage: f64,
    /// The id of the annotator with the largest leverage.
    pub max_leverage_cluster: i64,
    /// The smallest effective number of annotators of a coefficient, 1 / sum_g P_gj^2.
    pub min_effective: f64,
    /// That coefficient (index into theta then gamma: 0..d1 is theta_j, d1.. is
    /// gamma_{index - d1}).
    pub min_effective_coefficient: usize,
    /// The largest partial leverage P_gj of any annotator for any coefficient (the share of
    /// the coefficient's information the annotator carries).
    pub max_partial: f64,
    /// The id of that annotator.
    pub max_partial_cluster: i64,
    /// That coefficient (index as `min_effective_coefficient`).
    pub max_partial_coefficient: usize,
    /// Whether a coefficient rests on few annotators: its effective number is below 10 or one
    /// annotator's partial leverage is above 0.5 (the CLI then prints its warning).
    pub warning: bool,
}

/// `sizeof(hetreward_leverage_info)` of its first version.
pub const LEVERAGE_INFO_V1_SIZE: usize = std::mem::size_of::<hetreward_leverage_info>();

impl ZeroPadded for hetreward_leverage_info {
    unsafe fn write_fields(&self, dst: *mut Self) {
        use std::ptr::addr_of_mut;
        addr_of_mut!((*dst).struct_size).write(self.struct_size);
        addr_of_mut!((*dst).clusters).write(self.clusters);
        addr_of_mut!((*dst).max_leverage).write(self.max_leverage);
        addr_of_mut!((*dst).max_leverage_cluster).write(self.max_leverage_cluster);
        addr_of_mut!((*dst).min_effective).write(self.min_effective);
        addr_of_mut!((*dst).min_effective_coefficient).write(self.min_effective_coefficient);
        addr_of_mut!((*dst).max_partial).write(self.max_partial);
        addr_of_mut!((*dst).max_partial_cluster).write(self.max_partial_cluster);
        addr_of_mut!((*dst).max_partial_coefficient).write(self.max_partial_coefficient);
        addr_of_mut!((*dst).warning).write(self.warning);
    }
}

/// The caller's `struct_size` of an info struct at `p`: the current size or an older
/// version's (none yet).
///
/// # Safety
/// `p` is non-NULL and points to at least a `usize` (its first field).
unsafe fn info_size(p: *const hetreward_leverage_info) -> Result<usize> {
    let size = std::ptr::read_unaligned(p.cast::<usize>());
    if size != LEVERAGE_INFO_V1_SIZE {
        return Err(Error::invalid(
            "out_info.struct_size",
            format!(
                "got {size}, expected {LEVERAGE_INFO_V1_SIZE}: set it to sizeof(hetreward_leverage_info)"
            ),
        ));
    }
    Ok(size)
}

/// The summary of `lev` (a struct of the current version).
fn leverage_summary(lev: &Leverage) -> hetreward_leverage_info {
    let p = lev.coefficients();
    let arg_max = |v: &[f64]| {
        (0..v.len())
            .max_by(|&a, &b| v[a].total_cmp(&v[b]))
            .unwrap_or(0)
    };
    let top_leverage = arg_max(&lev.leverage);
    let min_effective_coefficient = (0..p)
        .min_by(|&a, &b| lev.effective[a].total_cmp(&lev.effective[b]))
        .unwrap_or(0);
    let top_partial: Vec<f64> = (0..p).map(|j| lev.partial_of(lev.top[j], j)).collect();
    let max_partial_coefficient = arg_max(&top_partial);
    hetreward_leverage_info {
        struct_size: LEVERAGE_INFO_V1_SIZE,
        clusters: lev.clusters(),
        max_leverage: lev.leverage[top_leverage],
        max_leverage_cluster: lev.ids[top_leverage],
        min_effective: lev.effective[min_effective_coefficient],
        min_effective_coefficient,
        max_partial: top_partial[max_partial_coefficient],
        max_partial_cluster: lev.ids[lev.top[max_partial_coefficient]],
        max_partial_coefficient,
        warning: lev.warning.is_some(),
    }
}

/// The leverage diagnostics of `model`'s estimate on `dataset` (which must have cluster ids,
/// e.g. the data it was fitted on), after MacKinnon, Nielsen & Webb's summclust: writes `len`
/// = d1 + d2 values (theta first, then gamma) to `out_effective` (each coefficient's effective
/// number of annotators 1 / sum_g P_gj^2) and fills `*out_info`, whose `struct_size` the
/// caller sets. With `clusters_len` = G (`out_info->clusters`; a first call with
/// `clusters_len` = 0 and the three arrays NULL gives it) it also writes, annotators in
/// increasing id order, their ids to `out_cluster_ids`, their leverages L_g = tr(I_g I^-1)
/// to `out_leverage` and, `len` values per annotator (row-major G x (d1 + d2)), their partial
/// leverages P_gj = (I^-1 I_g I^-1)_jj / (I^-1)_jj to `out_partial` (`I` the expected
/// information, `I_g` annotator g's part; each coefficient's P_gj sum to 1 over annotators).
///
/// Returns HETREWARD_NULL_POINTER, HETREWARD_DIMENSION_MISMATCH (the dataset's d1 or d2
/// differs from the model's; `len` is not d1 + d2; `clusters_len` is neither 0 nor G),
/// HETREWARD_INVALID_ARGUMENT (`out_info.struct_size` is not a version's size; `cluster`: the
/// dataset has no cluster ids or fewer than 3 clusters), HETREWARD_SINGULAR_INFORMATION.
/// Nothing is written on failure. Thread-safe (runs on the library's global thread pool).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn hetreward_model_leverage(
    model: *const hetreward_model,
    dataset: *const hetreward_dataset,
    len: usize,
    out_effective: *mut f64,
    clusters_len: usize,
    out_cluster_ids: *mut i64,
    out_leverage: *mut f64,
    out_partial: *mut f64,
    out_info: *mut hetreward_leverage_info,
) -> hetreward_status {
    boundary(|| {
        // SAFETY: NULL or live handles (header contract).
        let (m, data) = unsafe { (model_ref(model)?, dataset_ref(dataset)?) };
        check_dim("dataset d1", data.d1(), m.d1(), "the model's d1")?;
        check_dim("dataset d2", data.d2(), m.d2(), "the model's d2")?;
        let p = m.d1() + m.d2();
        check_dim("len", len, p, "the model's d1 + d2")?;
        let effective = out_slice(out_effective, len, "out_effective")?;
        let info = out_ptr(out_info, "out_info")?;
        // SAFETY: non-NULL; the caller's struct starts with its size (header contract).
        let size = unsafe { info_size(info)? };
        let partial_len = checked_len("clusters_len", clusters_len, p)?;
        let ids = out_slice(out_cluster_ids, clusters_len, "out_cluster_ids")?;
        let lev_out = out_slice(out_leverage, clusters_len, "out_leverage")?;
        let partial = out_slice(out_partial, partial_len, "out_partial")?;
        let lev = leverage(data, m.params())?;
        if clusters_len != 0 {
            check_dim(
                "clusters_len",
                clusters_len,
                lev.clusters(),
                "the dataset's number of clusters, or 0",
            )?;
        }
        let mut summary = std::mem::MaybeUninit::<hetreward_leverage_info>::uninit();
        // SAFETY: the arrays hold the checked lengths (header contract); `info` holds `size`
        // bytes, a version's size, of which exactly that many are copied from a zero-padded
        // struct of the current version.
        unsafe {
            write_zero_padded(summary.as_mut_ptr(), &[leverage_summary(&lev)]);
            write_slice(effective, &lev.effective);
            if clusters_len != 0 {
                write_slice(ids, &lev.ids);
                write_slice(lev_out, &lev.leverage);
                write_slice(partial, &lev.partial);
            }
            std::ptr::copy_nonoverlapping(summary.as_ptr().cast::<u8>(), info.cast::<u8>(), size);
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::covariance::CovarianceKind;
    use crate::ffi::model::model_into_raw;
    use crate::ffi::status::hetreward_status::*;
    use crate::ffi::{dataset::hetreward_dataset_free, model::hetreward_model_free};
    use crate::fit::FitOptions;
    use crate::fitted::RewardModel;

    /// The C function writes exactly the library's diagnostic, and refuses a dataset without
    /// cluster ids, a wrong `len` and NULL pointers without writing anything.
    #[test]
    fn heterogeneity_matches_the_library_and_checks_its_arguments() {
        let data = crate::sim::annotator_effects(40, 40, 0.6, 6);
        let plain = crate::testing::without_clusters(&data);
        let model = RewardModel::estimate(
            &data,
            &FitOptions::default(),
            CovarianceKind::Expected,
            &crate::fit::FitControl::default(),
        )
        .unwrap();
        let want = heterogeneity(&data, model.params()).unwrap();
        let p = data.n_params();
        let m = model_into_raw(model);
        let d = Box::into_raw(Box::new(hetreward_dataset { inner: data }));
        let u = Box::into_raw(Box::new(hetreward_dataset { inner: plain }));
        let (mut de, mut k) = (vec![-1.0; p], vec![-1.0; p]);
        let mut info = hetreward_heterogeneity {
            clusters: 0,
            worst: 0,
            worst_design_effect: 0.0,
            worst_excess_z: 0.0,
            independent_coverage: 0.0,
            warning: false,
        };
        let call = |d, len, de: *mut f64, k: *mut f64, info: *mut hetreward_heterogeneity| {
            hetreward_model_heterogeneity(m, d, len, de, k, info)
        };
        let (dp, kp, ip) = (de.as_mut_ptr(), k.as_mut_ptr(), &mut info as *mut _);
        assert_eq!(call(u, p, dp, kp, ip), HETREWARD_INVALID_ARGUMENT);
        assert_eq!(call(d, p + 1, dp, kp, ip), HETREWARD_DIMENSION_MISMATCH);
        assert_eq!(
            call(d, p, std::ptr::null_mut(), kp, ip),
            HETREWARD_NULL_POINTER
        );
        assert_eq!(
            call(d, p, dp, kp, std::ptr::null_mut()),
            HETREWARD_NULL_POINTER
        );
        assert_eq!(
            hetreward_model_heterogeneity(std::ptr::null(), d, p, dp, kp, ip),
            HETREWARD_NULL_POINTER
        );
        assert!(
            de.iter().chain(&k).all(|&v| v == -1.0),
            "nothing written on failure"
        );
        assert_eq!(info.clusters, 0);
        assert_eq!(call(d, p, dp, kp, ip), HETREWARD_OK);
        assert_eq!(de, want.design_effects);
        assert_eq!(k, want.effective_clusters);
        assert_eq!(info.clusters, want.clusters);
        assert_eq!(info.worst, want.worst);
        assert_eq!(info.worst_excess_z, want.excess_z[want.worst]);
        assert_eq!(info.warning, want.warning.is_some());
        assert!(info.warning, "tau = 0.6 warns");
        hetreward_model_free(m);
        hetreward_dataset_free(d);
        hetreward_dataset_free(u);
    }

    /// The leverage call writes exactly the library's diagnostics; it refuses a wrong
    /// `struct_size`, a wrong `clusters_len`, NULL arrays and a dataset without cluster ids
    /// without writing anything; the summary-only call (clusters_len = 0) gives G.
    #[test]
    fn leverage_matches_the_library_and_checks_its_arguments() {
        let data = crate::sim::annotator_effects(12, 30, 0.0, 4);
        let plain = crate::testing::without_clusters(&data);
        let model = RewardModel::estimate(
            &data,
            &FitOptions::default(),
            CovarianceKind::Expected,
            &crate::fit::FitControl::default(),
        )
        .unwrap();
        let want = leverage(&data, model.params()).unwrap();
        let (p, g) = (data.n_params(), want.clusters());
        let m = model_into_raw(model);
        let d = Box::into_raw(Box::new(hetreward_dataset { inner: data }));
        let u = Box::into_raw(Box::new(hetreward_dataset { inner: plain }));
        let blank = hetreward_leverage_info {
            struct_size: LEVERAGE_INFO_V1_SIZE,
            clusters: 0,
            max_leverage: -1.0,
            max_leverage_cluster: -1,
            min_effective: -1.0,
            min_effective_coefficient: 0,
            max_partial: -1.0,
            max_partial_cluster: -1,
            max_partial_coefficient: 0,
            warning: false,
        };
        let mut info = blank;
        let (mut eff, mut ids, mut lev, mut part) = (
            vec![-1.0; p],
            vec![-1i64; g],
            vec![-1.0; g],
            vec![-1.0; g * p],
        );
        let (ep, ip, lp, pp) = (
            eff.as_mut_ptr(),
            ids.as_mut_ptr(),
            lev.as_mut_ptr(),
            part.as_mut_ptr(),
        );
        let nul = std::ptr::null_mut::<f64>();
        let info_ptr = &mut info as *mut hetreward_leverage_info;
        let call = |d, len, gl, ip, lp, pp, out| {
            hetreward_model_leverage(m, d, len, ep, gl, ip, lp, pp, out)
        };
        assert_eq!(
            call(u, p, g, ip, lp, pp, info_ptr),
            HETREWARD_INVALID_ARGUMENT
        );
        assert_eq!(
            call(d, p + 1, g, ip, lp, pp, info_ptr),
            HETREWARD_DIMENSION_MISMATCH
        );
        assert_eq!(
            call(d, p, g - 1, ip, lp, pp, info_ptr),
            HETREWARD_DIMENSION_MISMATCH
        );
        assert_eq!(call(d, p, g, ip, nul, pp, info_ptr), HETREWARD_NULL_POINTER);
        assert_eq!(
            call(d, p, g, ip, lp, pp, std::ptr::null_mut()),
            HETREWARD_NULL_POINTER
        );
        // SAFETY: a valid struct.
        unsafe { (*info_ptr).struct_size -= 8 };
        assert_eq!(
            call(d, p, g, ip, lp, pp, info_ptr),
            HETREWARD_INVALID_ARGUMENT
        );
        // SAFETY: a valid struct.
        unsafe { (*info_ptr).struct_size += 8 };
        assert!(
            eff.iter().chain(&lev).chain(&part).all(|&v| v == -1.0) && ids.iter().all(|&v| v == -1),
            "nothing written on failure"
        );
        assert_eq!(info, blank);
        // Summary only, then everything.
        let none = std::ptr::null_mut::<i64>();
        assert_eq!(call(d, p, 0, none, nul, nul, info_ptr), HETREWARD_OK);
        assert_eq!(info.clusters, g);
        assert!(lev.iter().all(|&v| v == -1.0));
        assert_eq!(call(d, p, g, ip, lp, pp, info_ptr), HETREWARD_OK);
        assert_eq!(eff, want.effective);
        assert_eq!(ids, want.ids);
        assert_eq!(lev, want.leverage);
        assert_eq!(part, want.partial);
        assert_eq!(info.struct_size, LEVERAGE_INFO_V1_SIZE);
        assert_eq!(info.warning, want.warning.is_some());
        let top = (0..g).max_by(|&a, &b| want.leverage[a].total_cmp(&want.leverage[b]));
        assert_eq!(info.max_leverage_cluster, want.ids[top.unwrap()]);
        let j = info.min_effective_coefficient;
        assert!(want.effective.iter().all(|&e| e >= info.min_effective));
        assert_eq!(info.min_effective, want.effective[j]);
        let k = info.max_partial_coefficient;
        assert!(want.partial.iter().all(|&v| v <= info.max_partial));
        assert_eq!(info.max_partial_cluster, want.ids[want.top[k]]);
        hetreward_model_free(m);
        hetreward_dataset_free(d);
        hetreward_dataset_free(u);
    }
}
