//! The annotator-heterogeneity diagnostic in the C ABI (issue 20): per coefficient the design
//! effect (cluster-robust over model-based variance) and the effective number of clusters, and
//! the warning the CLI prints, of a model on a dataset with cluster ids.

use super::args::{check_dim, out_ptr, out_slice, write_slice, write_zero_padded, ZeroPadded};
use super::dataset::{dataset_ref, hetreward_dataset};
use super::model::{hetreward_model, model_ref};
use super::status::{boundary, hetreward_status};
use crate::cluster::heterogeneity;

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
/// dataset has no cluster ids or fewer than 2 clusters), HETREWARD_SINGULAR_INFORMATION.
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
}
