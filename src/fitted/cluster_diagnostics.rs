//! The cluster diagnostics of a fitted model on its training data: the heterogeneity
//! ([`crate::cluster::heterogeneity`]) and the annotators' leverage
//! ([`crate::cluster::leverage::leverage`]). When the model's covariance is the inverse
//! expected information of those data (the `expected` kind, [`RewardModel::is_expected_fit_of`])
//! both read it instead of forming and inverting the information again; any other model
//! takes the diagnostics at its estimate from scratch.

use super::RewardModel;
use crate::cluster::leverage::{self, Leverage};
use crate::cluster::{self, ExpectedFit, Heterogeneity};
use crate::data::Dataset;
use crate::error::Result;
use crate::model::Params;

impl RewardModel {
    /// [`crate::cluster::heterogeneity`] of this model on `data`, its training data (as the
    /// command-line program's `fit`): with the `expected` covariance the diagnostic costs two
    /// passes over the data and two triangular `d1 x d1` by `d1 x G` products instead of a
    /// second Gram product of `n (d1 + d2)^2` flops (the same design effects to rounding).
    ///
    /// Errors: as [`crate::cluster::heterogeneity`].
    pub fn heterogeneity_on(&self, data: &Dataset) -> Result<Heterogeneity> {
        self.cluster_diagnostic(
            data,
            cluster::heterogeneity,
            cluster::heterogeneity_of_expected_fit,
        )
    }

    /// [`crate::cluster::leverage::leverage`] of this model on `data`, its training data:
    /// with the `expected` covariance `I^-1` is assembled from the model's covariance blocks
    /// instead of a second Gram product and a `p x p` inverse, which leaves the rows'
    /// products (`n p^2`) as the diagnostic's whole cost. The same values to rounding (the
    /// tests: 1e-6, the products' single precision).
    ///
    /// Errors: as [`crate::cluster::leverage::leverage`].
    pub fn leverage_on(&self, data: &Dataset) -> Result<Leverage> {
        self.cluster_diagnostic(data, leverage::leverage, cluster::leverage_of_expected_fit)
    }

    /// [`RewardModel::heterogeneity_on`] and [`RewardModel::leverage_on`] (what the
    /// command-line program's `fit` reports for data with cluster ids): the same results,
    /// with the pass over the data that both read (the information's gamma blocks at the
    /// estimate) made once.
    pub fn cluster_diagnostics_on(
        &self,
        data: &Dataset,
    ) -> (Result<Heterogeneity>, Result<Leverage>) {
        match self.expected_fit_of(data) {
            Some(fit) => cluster::diagnostics_of_expected_fit(data, &fit),
            None => (
                cluster::heterogeneity(data, self.params()),
                leverage::leverage(data, self.params()),
            ),
        }
    }

    /// The model's covariance as the cluster diagnostics read it, when it is the inverse
    /// expected information of `data` ([`RewardModel::is_expected_fit_of`]).
    pub(crate) fn expected_fit_of(&self, data: &Dataset) -> Option<ExpectedFit<'_>> {
        self.is_expected_fit_of(data).then(|| ExpectedFit {
            params: self.params(),
            theta_factor: self.theta_cov_factor(),
            gamma_cov: self.gamma_cov(),
        })
    }

    /// A diagnostic of this model on `data`: `of_expected_fit` from its covariance when it is
    /// the inverse expected information of `data`, else `at_estimate` at its estimate.
    fn cluster_diagnostic<T>(
        &self,
        data: &Dataset,
        at_estimate: fn(&Dataset, &Params) -> Result<T>,
        of_expected_fit: fn(&Dataset, &ExpectedFit) -> Result<T>,
    ) -> Result<T> {
        match self.expected_fit_of(data) {
            Some(fit) => of_expected_fit(data, &fit),
            None => at_estimate(data, self.params()),
        }
    }
}
