"""
    Hetreward

Julia binding of hetreward (include/hetreward.h): fit a reward model from pairwise
comparisons by annotators of differing rationality, then score answers with standard errors
and confidence intervals, compare answers (win / tie / loss) and pick the best of N,
optionally pessimistically (pBoN). No math is done in Julia.

Feature matrices are column-major `Matrix{Float32}` of size (d1, m): column i is answer i's
embedding, which is exactly the C API's row-major m x d1 layout, so they are passed without
copying. Handles (`Dataset`, `Fitter`, `Model`) are freed by `close` or by their finalizers;
`close` is safe from any task at any time (calls running with the handle finish first).
Failures throw [`HetrewardError`](@ref), which carries the C status code.

The library is found as `libhetreward` through the system loader (`LD_LIBRARY_PATH`), or at
the path in `ENV["HETREWARD_LIB"]` read when the package is precompiled.
"""
module Hetreward

export Dataset, Fitter, Model, HetrewardError, Reward, Comparison, Candidate, Coefficient,
       Unbounded

# =================================================================================================
# The C API, one to one (checked against include/hetreward.h by ../../check_wrapper.py: every
# function, argument count and C type; every struct field; every constant).
# =================================================================================================

"""Name or path of the shared library (set `HETREWARD_LIB` before precompiling to change it)."""
const libhetreward = get(ENV, "HETREWARD_LIB", "libhetreward")

const hetreward_status = UInt32
const hetreward_solver = UInt32
const hetreward_covariance = UInt32
const hetreward_init = UInt32
const hetreward_termination = UInt32
const hetreward_diff_method = UInt32
const hetreward_verdict = UInt32
const hetreward_policy = UInt32
const hetreward_intervals = UInt32
const hetreward_coefficients = UInt32
const hetreward_option_family = UInt32
const hetreward_progress_callback = Ptr{Cvoid}

const HETREWARD_VERSION_MAJOR = 0
const HETREWARD_VERSION_MINOR = 2
const HETREWARD_VERSION_PATCH = 0

const HETREWARD_OK = hetreward_status(0)
const HETREWARD_NULL_POINTER = hetreward_status(1)
const HETREWARD_INVALID_ARGUMENT = hetreward_status(2)
const HETREWARD_DIMENSION_MISMATCH = hetreward_status(3)
const HETREWARD_NON_FINITE = hetreward_status(4)
const HETREWARD_SINGULAR_INFORMATION = hetreward_status(5)
const HETREWARD_NOT_CONVERGED = hetreward_status(6)
const HETREWARD_IO = hetreward_status(7)
const HETREWARD_BAD_FORMAT = hetreward_status(8)
const HETREWARD_CANCELLED = hetreward_status(9)
const HETREWARD_INTERNAL = hetreward_status(10)

const HETREWARD_SOLVER_NEWTON = hetreward_solver(0)
const HETREWARD_SOLVER_AGD = hetreward_solver(1)
const HETREWARD_INIT_DEFAULT = hetreward_init(0)
const HETREWARD_INIT_RANDOM = hetreward_init(1)
const HETREWARD_INIT_EXPLICIT = hetreward_init(2)
const HETREWARD_COVARIANCE_EXPECTED = hetreward_covariance(0)
const HETREWARD_COVARIANCE_OBSERVED = hetreward_covariance(1)
const HETREWARD_COVARIANCE_ROBUST = hetreward_covariance(2)
const HETREWARD_COVARIANCE_CLUSTER = hetreward_covariance(3)
const HETREWARD_TERMINATION_CONVERGED = hetreward_termination(0)
const HETREWARD_TERMINATION_MAX_ITERATIONS = hetreward_termination(1)
const HETREWARD_TERMINATION_STALLED = hetreward_termination(2)
const HETREWARD_TERMINATION_DIVERGED = hetreward_termination(3)
const HETREWARD_DIFF_EXACT = hetreward_diff_method(0)
const HETREWARD_DIFF_INDEPENDENT = hetreward_diff_method(1)
const HETREWARD_DIFF_BOUND = hetreward_diff_method(2)
const HETREWARD_VERDICT_TIE = hetreward_verdict(0)
const HETREWARD_VERDICT_WIN = hetreward_verdict(1)
const HETREWARD_VERDICT_LOSS = hetreward_verdict(2)
const HETREWARD_POLICY_BON = hetreward_policy(0)
const HETREWARD_POLICY_PBON = hetreward_policy(1)
const HETREWARD_INTERVALS_WALD = hetreward_intervals(0)
const HETREWARD_INTERVALS_BOOTSTRAP = hetreward_intervals(1)
const HETREWARD_INTERVALS_RESIZED = hetreward_intervals(2)
const HETREWARD_INTERVALS_AUTO = hetreward_intervals(3)
const HETREWARD_INTERVALS_CLUSTER_JACKKNIFE = hetreward_intervals(4)
const HETREWARD_INTERVALS_CLUSTER_ONESTEP = hetreward_intervals(5)
const HETREWARD_COEFFICIENTS_THETA = hetreward_coefficients(0)
const HETREWARD_COEFFICIENTS_GAMMA = hetreward_coefficients(1)
const HETREWARD_COEFFICIENTS_ALL = hetreward_coefficients(2)
const HETREWARD_OPTION_SOLVER = hetreward_option_family(0)
const HETREWARD_OPTION_INIT = hetreward_option_family(1)
const HETREWARD_OPTION_COVARIANCE = hetreward_option_family(2)
const HETREWARD_OPTION_INTERVALS = hetreward_option_family(3)
const HETREWARD_OPTION_TERMINATION = hetreward_option_family(4)
const HETREWARD_OPTION_DIFF = hetreward_option_family(5)
const HETREWARD_OPTION_VERDICT = hetreward_option_family(6)
const HETREWARD_OPTION_POLICY = hetreward_option_family(7)
const HETREWARD_OPTION_COEFFICIENTS = hetreward_option_family(8)
const HETREWARD_OPTION_SHARD = hetreward_option_family(9)

# Opaque handles (only ever behind a Ptr).
mutable struct hetreward_dataset end
mutable struct hetreward_fitter end
mutable struct hetreward_model end

struct hetreward_progress
    start::Csize_t
    iteration::Csize_t
    max_iter::Csize_t
    neg_loglik::Cdouble
    grad_norm::Cdouble
end

struct hetreward_fit_params
    struct_size::Csize_t
    solver::hetreward_solver
    covariance::hetreward_covariance
    eta1::Cdouble
    eta2::Cdouble
    max_iter::UInt64
    tol::Cdouble
    seed::UInt64
    init::hetreward_init
    restarts::UInt32
    theta0::Ptr{Cdouble}
    theta0_len::Csize_t
    gamma0::Ptr{Cdouble}
    gamma0_len::Csize_t
    threads::UInt32
    require_converged::Bool
    progress::hetreward_progress_callback
    progress_user_data::Ptr{Cvoid}
    intervals::hetreward_intervals
    bootstrap_reps::UInt32
end

"""A model's interval method (what auto picked), its figures and the fit's diagnostics."""
struct hetreward_interval_info
    method::hetreward_intervals
    requested::hetreward_intervals
    reps::Csize_t
    diverged::Csize_t
    seed::UInt64
    shrink::Cdouble
    alpha_hat::Cdouble
    c_hat::Cdouble
    d1_over_n::Cdouble
    mle_finite::Bool
    max_abs_gamma::Cdouble
    diverged_share::Cdouble
    has_warning::Bool
end

struct hetreward_heterogeneity
    clusters::Csize_t
    worst::Csize_t
    worst_design_effect::Cdouble
    worst_excess_z::Cdouble
    independent_coverage::Cdouble
    warning::Bool
end

struct hetreward_leverage_info
    struct_size::Csize_t
    clusters::Csize_t
    max_leverage::Cdouble
    max_leverage_cluster::Int64
    min_effective::Cdouble
    min_effective_coefficient::Csize_t
    max_partial::Cdouble
    max_partial_cluster::Int64
    max_partial_coefficient::Csize_t
    warning::Bool
end

struct hetreward_fit_report
    solver::hetreward_solver
    covariance::hetreward_covariance
    termination::hetreward_termination
    converged::Bool
    iterations::Csize_t
    total_iterations::Csize_t
    starts::Csize_t
    grad_norm::Cdouble
    neg_loglik::Cdouble
    seconds::Cdouble
    tol::Cdouble
end

"""A reward r = theta . phi with its standard error and (1 - alpha) CI [lower, upper]."""
struct hetreward_reward
    reward::Cdouble
    se::Cdouble
    lower::Cdouble
    upper::Cdouble
end

"""D = r(a0) - r(a1) with its SE, CI, two-sided p-value and verdict (see `verdict`)."""
struct hetreward_comparison
    diff::Cdouble
    se::Cdouble
    lower::Cdouble
    upper::Cdouble
    p_value::Cdouble
    verdict::hetreward_verdict
end

"""One candidate's reward figures, the caller's penalty and the policy's score."""
struct hetreward_candidate
    reward::hetreward_reward
    penalty::Cdouble
    score::Cdouble
end

"""One row of the coefficient table: `block` (HETREWARD_COEFFICIENTS_THETA or _GAMMA), the
0-based `index` in that vector, estimate, SE, z, two-sided p-value and CI under the model's
interval method."""
struct hetreward_coefficient
    block::hetreward_coefficients
    index::Csize_t
    estimate::Cdouble
    se::Cdouble
    z::Cdouble
    p_value::Cdouble
    lower::Cdouble
    upper::Cdouble
end

"""A coefficient whose interval is unbounded: `block` (HETREWARD_COEFFICIENTS_THETA or _GAMMA),
the 0-based `index` in that vector and the id of the `annotator` that carries it alone."""
struct hetreward_unbounded
    block::hetreward_coefficients
    index::Csize_t
    annotator::Int64
end

hetreward_last_error_message() =
    @ccall libhetreward.hetreward_last_error_message()::Cstring

hetreward_status_name(status) =
    @ccall libhetreward.hetreward_status_name(status::UInt32)::Cstring

hetreward_version() =
    @ccall libhetreward.hetreward_version()::Cstring

hetreward_option_name(family, code) =
    @ccall libhetreward.hetreward_option_name(family::hetreward_option_family,
        code::UInt32)::Ptr{Cchar}

hetreward_option_at(family, index, out_code) =
    @ccall libhetreward.hetreward_option_at(family::hetreward_option_family, index::Csize_t,
        out_code::Ptr{UInt32})::Ptr{Cchar}

hetreward_dataset_new(n, d1, d2, z, psi0, psi, y, cluster, out_dataset) =
    @ccall libhetreward.hetreward_dataset_new(n::Csize_t, d1::Csize_t, d2::Csize_t,
        z::Ptr{Cdouble}, psi0::Ptr{Cdouble}, psi::Ptr{Cdouble}, y::Ptr{Cdouble},
        cluster::Ptr{Int64}, out_dataset::Ptr{Ptr{hetreward_dataset}})::hetreward_status

hetreward_dataset_new_f32(n, d1, d2, z, psi0, psi, y, cluster, out_dataset) =
    @ccall libhetreward.hetreward_dataset_new_f32(n::Csize_t, d1::Csize_t, d2::Csize_t,
        z::Ptr{Cfloat}, psi0::Ptr{Cfloat}, psi::Ptr{Cfloat}, y::Ptr{Cfloat},
        cluster::Ptr{Int64}, out_dataset::Ptr{Ptr{hetreward_dataset}})::hetreward_status

hetreward_dataset_from_pairs(n, d1, d2, phi0, phi1, psi0, psi, y, cluster, out_dataset) =
    @ccall libhetreward.hetreward_dataset_from_pairs(n::Csize_t, d1::Csize_t, d2::Csize_t,
        phi0::Ptr{Cdouble}, phi1::Ptr{Cdouble}, psi0::Ptr{Cdouble}, psi::Ptr{Cdouble},
        y::Ptr{Cdouble}, cluster::Ptr{Int64},
        out_dataset::Ptr{Ptr{hetreward_dataset}})::hetreward_status

hetreward_dataset_from_pairs_f32(n, d1, d2, phi0, phi1, psi0, psi, y, cluster, out_dataset) =
    @ccall libhetreward.hetreward_dataset_from_pairs_f32(n::Csize_t, d1::Csize_t, d2::Csize_t,
        phi0::Ptr{Cfloat}, phi1::Ptr{Cfloat}, psi0::Ptr{Cfloat}, psi::Ptr{Cfloat},
        y::Ptr{Cfloat}, cluster::Ptr{Int64},
        out_dataset::Ptr{Ptr{hetreward_dataset}})::hetreward_status

hetreward_dataset_load(path, out_dataset) =
    @ccall libhetreward.hetreward_dataset_load(path::Cstring,
        out_dataset::Ptr{Ptr{hetreward_dataset}})::hetreward_status

# One shard of a distributed fit: the checks of the whole-dataset constructors except
# identifiability, which is the merged shards' (see the header).
hetreward_dataset_new_shard(n, d1, d2, z, psi0, psi, y, cluster, out_dataset) =
    @ccall libhetreward.hetreward_dataset_new_shard(n::Csize_t, d1::Csize_t, d2::Csize_t,
        z::Ptr{Cdouble}, psi0::Ptr{Cdouble}, psi::Ptr{Cdouble}, y::Ptr{Cdouble},
        cluster::Ptr{Int64}, out_dataset::Ptr{Ptr{hetreward_dataset}})::hetreward_status

hetreward_dataset_new_shard_f32(n, d1, d2, z, psi0, psi, y, cluster, out_dataset) =
    @ccall libhetreward.hetreward_dataset_new_shard_f32(n::Csize_t, d1::Csize_t, d2::Csize_t,
        z::Ptr{Cfloat}, psi0::Ptr{Cfloat}, psi::Ptr{Cfloat}, y::Ptr{Cfloat},
        cluster::Ptr{Int64}, out_dataset::Ptr{Ptr{hetreward_dataset}})::hetreward_status

hetreward_dataset_load_shard(path, out_dataset) =
    @ccall libhetreward.hetreward_dataset_load_shard(path::Cstring,
        out_dataset::Ptr{Ptr{hetreward_dataset}})::hetreward_status

hetreward_dataset_n(dataset) =
    @ccall libhetreward.hetreward_dataset_n(dataset::Ptr{hetreward_dataset})::Csize_t

hetreward_dataset_d1(dataset) =
    @ccall libhetreward.hetreward_dataset_d1(dataset::Ptr{hetreward_dataset})::Csize_t

hetreward_dataset_d2(dataset) =
    @ccall libhetreward.hetreward_dataset_d2(dataset::Ptr{hetreward_dataset})::Csize_t

hetreward_dataset_free(dataset) =
    @ccall libhetreward.hetreward_dataset_free(dataset::Ptr{hetreward_dataset})::Cvoid

hetreward_fit_default_params() =
    @ccall libhetreward.hetreward_fit_default_params()::hetreward_fit_params

hetreward_fitter_new(params, out_fitter) =
    @ccall libhetreward.hetreward_fitter_new(params::Ptr{hetreward_fit_params},
        out_fitter::Ptr{Ptr{hetreward_fitter}})::hetreward_status

hetreward_fitter_fit(fitter, dataset, out_model) =
    @ccall libhetreward.hetreward_fitter_fit(fitter::Ptr{hetreward_fitter},
        dataset::Ptr{hetreward_dataset}, out_model::Ptr{Ptr{hetreward_model}})::hetreward_status

hetreward_fitter_cancel(fitter) =
    @ccall libhetreward.hetreward_fitter_cancel(fitter::Ptr{hetreward_fitter})::Cvoid

hetreward_fitter_free(fitter) =
    @ccall libhetreward.hetreward_fitter_free(fitter::Ptr{hetreward_fitter})::Cvoid

hetreward_model_n(model) =
    @ccall libhetreward.hetreward_model_n(model::Ptr{hetreward_model})::Csize_t

hetreward_model_d1(model) =
    @ccall libhetreward.hetreward_model_d1(model::Ptr{hetreward_model})::Csize_t

hetreward_model_d2(model) =
    @ccall libhetreward.hetreward_model_d2(model::Ptr{hetreward_model})::Csize_t

hetreward_model_theta(model, out_values, len) =
    @ccall libhetreward.hetreward_model_theta(model::Ptr{hetreward_model},
        out_values::Ptr{Cdouble}, len::Csize_t)::hetreward_status

hetreward_model_gamma(model, out_values, len) =
    @ccall libhetreward.hetreward_model_gamma(model::Ptr{hetreward_model},
        out_values::Ptr{Cdouble}, len::Csize_t)::hetreward_status

hetreward_model_theta_se(model, out_values, len) =
    @ccall libhetreward.hetreward_model_theta_se(model::Ptr{hetreward_model},
        out_values::Ptr{Cdouble}, len::Csize_t)::hetreward_status

hetreward_model_gamma_se(model, out_values, len) =
    @ccall libhetreward.hetreward_model_gamma_se(model::Ptr{hetreward_model},
        out_values::Ptr{Cdouble}, len::Csize_t)::hetreward_status

hetreward_model_report(model, out_report) =
    @ccall libhetreward.hetreward_model_report(model::Ptr{hetreward_model},
        out_report::Ptr{hetreward_fit_report})::hetreward_status

hetreward_model_score(model, phi, m, d1, alpha, out_rewards) =
    @ccall libhetreward.hetreward_model_score(model::Ptr{hetreward_model}, phi::Ptr{Cfloat},
        m::Csize_t, d1::Csize_t, alpha::Cdouble,
        out_rewards::Ptr{hetreward_reward})::hetreward_status

hetreward_model_compare(model, phi0, phi1, m, d1, alpha, method, out_comparisons) =
    @ccall libhetreward.hetreward_model_compare(model::Ptr{hetreward_model},
        phi0::Ptr{Cfloat}, phi1::Ptr{Cfloat}, m::Csize_t, d1::Csize_t, alpha::Cdouble,
        method::hetreward_diff_method,
        out_comparisons::Ptr{hetreward_comparison})::hetreward_status

hetreward_model_select(model, phi, n_candidates, d1, penalty, alpha, policy, out_index,
                       out_candidates) =
    @ccall libhetreward.hetreward_model_select(model::Ptr{hetreward_model}, phi::Ptr{Cfloat},
        n_candidates::Csize_t, d1::Csize_t, penalty::Ptr{Cdouble}, alpha::Cdouble,
        policy::hetreward_policy, out_index::Ptr{Csize_t},
        out_candidates::Ptr{hetreward_candidate})::hetreward_status

hetreward_model_rationality(model, psi0, psi, d2, out_sigma, out_se) =
    @ccall libhetreward.hetreward_model_rationality(model::Ptr{hetreward_model}, psi0::Cdouble,
        psi::Ptr{Cdouble}, d2::Csize_t, out_sigma::Ptr{Cdouble},
        out_se::Ptr{Cdouble})::hetreward_status

hetreward_model_coefficients(model, which, alpha, out_rows, capacity, out_count) =
    @ccall libhetreward.hetreward_model_coefficients(model::Ptr{hetreward_model},
        which::hetreward_coefficients, alpha::Cdouble, out_rows::Ptr{hetreward_coefficient},
        capacity::Csize_t, out_count::Ptr{Csize_t})::hetreward_status

hetreward_model_unbounded(model, out_rows, capacity, out_count) =
    @ccall libhetreward.hetreward_model_unbounded(model::Ptr{hetreward_model},
        out_rows::Ptr{hetreward_unbounded}, capacity::Csize_t,
        out_count::Ptr{Csize_t})::hetreward_status

hetreward_model_rationality_interval(model, psi0, psi, d2, alpha, out) =
    @ccall libhetreward.hetreward_model_rationality_interval(model::Ptr{hetreward_model},
        psi0::Cdouble, psi::Ptr{Cdouble}, d2::Csize_t, alpha::Cdouble,
        out::Ptr{hetreward_reward})::hetreward_status

hetreward_model_intervals(model, out_info) =
    @ccall libhetreward.hetreward_model_intervals(model::Ptr{hetreward_model},
        out_info::Ptr{hetreward_interval_info})::hetreward_status

hetreward_model_interval_warning(model, buf, buf_len, out_len) =
    @ccall libhetreward.hetreward_model_interval_warning(model::Ptr{hetreward_model},
        buf::Ptr{Cchar}, buf_len::Csize_t, out_len::Ptr{Csize_t})::hetreward_status

hetreward_model_heterogeneity(model, dataset, len, out_design_effects, out_effective_clusters,
                              out_info) =
    @ccall libhetreward.hetreward_model_heterogeneity(model::Ptr{hetreward_model},
        dataset::Ptr{hetreward_dataset}, len::Csize_t, out_design_effects::Ptr{Cdouble},
        out_effective_clusters::Ptr{Cdouble},
        out_info::Ptr{hetreward_heterogeneity})::hetreward_status

hetreward_model_leverage(model, dataset, len, out_effective, clusters_len, out_cluster_ids,
                         out_leverage, out_partial, out_info) =
    @ccall libhetreward.hetreward_model_leverage(model::Ptr{hetreward_model},
        dataset::Ptr{hetreward_dataset}, len::Csize_t, out_effective::Ptr{Cdouble},
        clusters_len::Csize_t, out_cluster_ids::Ptr{Int64}, out_leverage::Ptr{Cdouble},
        out_partial::Ptr{Cdouble}, out_info::Ptr{hetreward_leverage_info})::hetreward_status

hetreward_model_wald(model, out_model) =
    @ccall libhetreward.hetreward_model_wald(model::Ptr{hetreward_model},
        out_model::Ptr{Ptr{hetreward_model}})::hetreward_status

hetreward_model_save(model, path) =
    @ccall libhetreward.hetreward_model_save(model::Ptr{hetreward_model},
        path::Cstring)::hetreward_status

hetreward_model_load(path, out_model) =
    @ccall libhetreward.hetreward_model_load(path::Cstring,
        out_model::Ptr{Ptr{hetreward_model}})::hetreward_status

hetreward_model_save_buffer(model, buf, buf_len, out_len) =
    @ccall libhetreward.hetreward_model_save_buffer(model::Ptr{hetreward_model},
        buf::Ptr{UInt8}, buf_len::Csize_t, out_len::Ptr{Csize_t})::hetreward_status

hetreward_model_load_buffer(buf, len, out_model) =
    @ccall libhetreward.hetreward_model_load_buffer(buf::Ptr{UInt8}, len::Csize_t,
        out_model::Ptr{Ptr{hetreward_model}})::hetreward_status

hetreward_model_free(model) =
    @ccall libhetreward.hetreward_model_free(model::Ptr{hetreward_model})::Cvoid

# Shard statistics (src/ffi/shard.rs; docs/distributed.md).
const hetreward_shard_sections = UInt32
const HETREWARD_SHARD_VALUE = hetreward_shard_sections(1)
const HETREWARD_SHARD_OBSERVED_PRODUCTS = hetreward_shard_sections(2)
const HETREWARD_SHARD_EXPECTED_PRODUCTS = hetreward_shard_sections(4)
const HETREWARD_SHARD_EXPECTED = hetreward_shard_sections(8)
const HETREWARD_SHARD_OBSERVED = hetreward_shard_sections(16)
const HETREWARD_SHARD_MEAT = hetreward_shard_sections(32)
const HETREWARD_SHARD_CLUSTERS = hetreward_shard_sections(64)
mutable struct hetreward_shard_stats end

hetreward_shard_stats_compute(shard, theta, d1, gamma, d2, sections, vectors, n_vectors,
                              threads, out_stats) =
    @ccall libhetreward.hetreward_shard_stats_compute(shard::Ptr{hetreward_dataset},
        theta::Ptr{Cdouble}, d1::Csize_t, gamma::Ptr{Cdouble}, d2::Csize_t,
        sections::hetreward_shard_sections, vectors::Ptr{Cdouble}, n_vectors::Csize_t,
        threads::Csize_t, out_stats::Ptr{Ptr{hetreward_shard_stats}})::hetreward_status

hetreward_shard_stats_merge(stats, other) =
    @ccall libhetreward.hetreward_shard_stats_merge(stats::Ptr{hetreward_shard_stats},
        other::Ptr{hetreward_shard_stats})::hetreward_status

hetreward_shard_stats_byte_size(stats, out_size) =
    @ccall libhetreward.hetreward_shard_stats_byte_size(stats::Ptr{hetreward_shard_stats},
        out_size::Ptr{Csize_t})::hetreward_status

hetreward_shard_stats_to_bytes(stats, out_bytes, capacity) =
    @ccall libhetreward.hetreward_shard_stats_to_bytes(stats::Ptr{hetreward_shard_stats},
        out_bytes::Ptr{UInt8}, capacity::Csize_t)::hetreward_status

hetreward_shard_stats_from_bytes(bytes, len, out_stats) =
    @ccall libhetreward.hetreward_shard_stats_from_bytes(bytes::Ptr{UInt8}, len::Csize_t,
        out_stats::Ptr{Ptr{hetreward_shard_stats}})::hetreward_status

hetreward_shard_stats_value(stats, out_n, out_nll, out_grad, grad_len) =
    @ccall libhetreward.hetreward_shard_stats_value(stats::Ptr{hetreward_shard_stats},
        out_n::Ptr{UInt64}, out_nll::Ptr{Cdouble}, out_grad::Ptr{Cdouble},
        grad_len::Csize_t)::hetreward_status

hetreward_shard_stats_free(stats) =
    @ccall libhetreward.hetreward_shard_stats_free(stats::Ptr{hetreward_shard_stats})::Cvoid

# The driver loop over shards held elsewhere (src/ffi/shard_driver.rs; docs/distributed.md).
struct hetreward_shard_summary
    n::UInt64
    d1::UInt64
    d2::UInt64
    clustered::Bool
    schema::UInt32
end

struct hetreward_distributed_rounds
    total::UInt64
    points::UInt64
    products::UInt64
    preconditioner::UInt64
    covariance::UInt64
end

const hetreward_shard_oracle = Ptr{Cvoid}

hetreward_shard_summary_of(shard, out_summary) =
    @ccall libhetreward.hetreward_shard_summary_of(shard::Ptr{hetreward_dataset},
        out_summary::Ptr{hetreward_shard_summary})::hetreward_status

hetreward_shard_stats_compute_request(shard, request, request_len, threads, out_stats) =
    @ccall libhetreward.hetreward_shard_stats_compute_request(shard::Ptr{hetreward_dataset},
        request::Ptr{UInt8}, request_len::Csize_t, threads::Csize_t,
        out_stats::Ptr{Ptr{hetreward_shard_stats}})::hetreward_status

hetreward_fit_distributed(fitter, summaries, n_shards, oracle, oracle_user_data, out_model,
                          out_rounds) =
    @ccall libhetreward.hetreward_fit_distributed(fitter::Ptr{hetreward_fitter},
        summaries::Ptr{hetreward_shard_summary}, n_shards::Csize_t,
        oracle::hetreward_shard_oracle, oracle_user_data::Ptr{Cvoid},
        out_model::Ptr{Ptr{hetreward_model}},
        out_rounds::Ptr{hetreward_distributed_rounds})::hetreward_status

# =================================================================================================
# The Julia API
# =================================================================================================

const Reward = hetreward_reward
const Comparison = hetreward_comparison
const Candidate = hetreward_candidate
const Coefficient = hetreward_coefficient
const Unbounded = hetreward_unbounded

"""
    HetrewardError(status, name, message)

A failed hetreward call: `status` is the C `hetreward_status` code (e.g. 4), `name` its C name
(`"HETREWARD_NON_FINITE"`), `message` the library's explanation (it names the offending
argument and index).
"""
struct HetrewardError <: Exception
    status::UInt32
    name::String
    message::String
end

function Base.showerror(io::IO, e::HetrewardError)
    print(io, "HetrewardError: ", e.name, " (", Int(e.status), ")")
    isempty(e.message) || print(io, ": ", e.message)
end

# Throws the HetrewardError of a failed call. The message is per thread: it is read right
# after the call, with no yield point in between, so on the thread that made the call.
function check(status::hetreward_status)
    status == HETREWARD_OK && return nothing
    message = unsafe_string(hetreward_last_error_message())
    throw(HetrewardError(status, unsafe_string(hetreward_status_name(status)), message))
end

"""The loaded library's version, "MAJOR.MINOR.PATCH"."""
version() = unsafe_string(hetreward_version())

function __init__()
    v = version()
    parts = split(v, ".")
    if (parse(Int, parts[1]), parse(Int, parts[2])) !=
       (HETREWARD_VERSION_MAJOR, HETREWARD_VERSION_MINOR)
        error("Hetreward.jl wraps hetreward $(HETREWARD_VERSION_MAJOR).$(HETREWARD_VERSION_MINOR).x, " *
              "but $(libhetreward) is version $v")
    end
    if hetreward_fit_default_params().struct_size != sizeof(hetreward_fit_params)
        error("hetreward_fit_params has a different layout in $(libhetreward)")
    end
    for (table, family) in OPTION_TABLES
        merge!(empty!(table), option_table(family))
    end
    return nothing
end

nullptr(::Type{T}, x) where {T} = x === nothing ? Ptr{T}(C_NULL) : pointer(x)

# The use guard of the handles (issue 32): every C call given a handle's pointer runs inside
# `in_use(f, handles...)`, which counts a use of each handle for the duration of `f()`;
# `live(h)` is the pointer, valid only there. `close` marks a handle closed (new uses throw
# ArgumentError) and frees its C object now if no use is in flight, else the last use frees it
# when its C call returns: `close` never waits for a call (nor can it free an object another
# task or thread is using), whatever order they run in. `guard` is a SpinLock held only to
# update the counter (never across a C call, never yields). The finalizers call `free_now!`
# without the lock: an unreachable handle has no use in flight (`in_use` holds a reference).
function acquire!(h)
    lock(h.guard)
    try
        h.closed && throw(ArgumentError("use of a closed $(nameof(typeof(h)))"))
        h.uses += 1
    finally
        unlock(h.guard)
    end
    return nothing
end

function release!(h)
    lock(h.guard)
    h.uses -= 1
    last = h.closed && h.uses == 0
    unlock(h.guard)
    last && free_now!(h)
    return nothing
end

function in_use(f, handles...)
    taken = 0
    try
        for h in handles
            acquire!(h)
            taken += 1
        end
        return GC.@preserve handles f()
    finally
        for i in 1:taken
            release!(handles[i])
        end
    end
end

"""Marks `h` closed and frees its C object now, or when the last call using it returns."""
function close_handle!(h)
    lock(h.guard)
    if h.closed
        unlock(h.guard)
        return nothing
    end
    h.closed = true
    now = h.uses == 0
    unlock(h.guard)
    now && free_now!(h)
    return nothing
end

function live(h)
    h.uses > 0 || error("internal: $(nameof(typeof(h))) pointer used outside in_use")
    return h.ptr
end

function lookup(table, key, what)
    haskey(table, key) || throw(ArgumentError("$what must be one of $(sort!(collect(keys(table)))), got $(repr(key))"))
    return table[key]
end

# The option tables, name => code: empty here, filled from the library when the package loads
# (`__init__`, `option_table`), so the names are the library's (the CLI's, with `-` written
# `_`: `:cluster_jackknife`), never spelled in this file. check_wrapper.py checks that every
# option family of the header has its table here and that no literal table remains.
const SOLVERS = Dict{Symbol,UInt32}()
const COVARIANCES = Dict{Symbol,UInt32}()
const INITS = Dict{Symbol,UInt32}()
const METHODS = Dict{Symbol,UInt32}()
const POLICIES = Dict{Symbol,UInt32}()
const INTERVALS = Dict{Symbol,UInt32}()
const TERMINATIONS = Dict{Symbol,UInt32}()
const VERDICTS = Dict{Symbol,UInt32}()
const COEFFICIENT_ROWS = Dict{Symbol,UInt32}()
const SHARD_SECTIONS = Dict{Symbol,UInt32}()
const OPTION_TABLES = (SOLVERS => HETREWARD_OPTION_SOLVER,
                       COVARIANCES => HETREWARD_OPTION_COVARIANCE,
                       INITS => HETREWARD_OPTION_INIT,
                       METHODS => HETREWARD_OPTION_DIFF,
                       POLICIES => HETREWARD_OPTION_POLICY,
                       INTERVALS => HETREWARD_OPTION_INTERVALS,
                       TERMINATIONS => HETREWARD_OPTION_TERMINATION,
                       VERDICTS => HETREWARD_OPTION_VERDICT,
                       COEFFICIENT_ROWS => HETREWARD_OPTION_COEFFICIENTS,
                       SHARD_SECTIONS => HETREWARD_OPTION_SHARD)

"""name => code of every option of `family` (HETREWARD_OPTION_*), enumerated with
`hetreward_option_at` until it returns NULL."""
function option_table(family)
    table = Dict{Symbol,UInt32}()
    code = Ref{UInt32}(0)
    index = 0
    while true
        name = hetreward_option_at(family, index, code)
        name == C_NULL && break
        table[Symbol(replace(unsafe_string(name), '-' => '_'))] = code[]
        index += 1
    end
    isempty(table) && error("$(libhetreward) names no option of family $family")
    return table
end

name_of(table, code) = first(k for (k, v) in table if v == code)

# ---------------------------------------------------------------------------------- Dataset

"""
    Dataset(z, psi0, psi, y; cluster=nothing)

A validated training set of n comparisons, copied into the library. `z` is a
`Matrix{T}` of size (d1, n): column i is phi(a1_i) - phi(a0_i). `psi0` and `y` are
`Vector{T}` of length n (`y[i]` is 1 if the annotator preferred a1, else 0); `psi` is a
`Matrix{T}` of size (d2, n) of annotator covariates, or `nothing` when d2 = 0; `cluster`
optionally a `Vector{Int64}` of annotator ids (for `covariance = :cluster`). `T` is `Float64`
or `Float32` for all of them. Immutable: any number of threads may fit with it.
"""
mutable struct Dataset
    ptr::Ptr{hetreward_dataset}
    uses::Int
    closed::Bool
    guard::Threads.SpinLock
    function Dataset(ptr::Ptr{hetreward_dataset})
        return finalizer(free_now!, new(ptr, 0, false, Threads.SpinLock()))
    end
end

# Frees the C object once (see in_use): from close_handle!, the last use, or the finalizer.
function free_now!(d::Dataset)
    p, d.ptr = d.ptr, C_NULL
    p != C_NULL && hetreward_dataset_free(p)
    return nothing
end

"""Frees the dataset (a `fit` running on it in another task keeps it until it returns)."""
Base.close(d::Dataset) = close_handle!(d)
Base.isopen(d::Dataset) = !d.closed

function check_columns(n, d1, d2, names, mats, psi0, psi, y, cluster)
    for (name, a) in zip(names, mats)
        size(a) == (d1, n) || throw(HetrewardError(HETREWARD_DIMENSION_MISMATCH,
            "HETREWARD_DIMENSION_MISMATCH", "$name has size $(size(a)), expected ($d1, $n)"))
    end
    for (name, a, len) in (("psi0", psi0, n), ("y", y, n), ("cluster", cluster, n))
        a === nothing || length(a) == len || throw(HetrewardError(HETREWARD_DIMENSION_MISMATCH,
            "HETREWARD_DIMENSION_MISMATCH", "$name has length $(length(a)), expected $len"))
    end
    psi === nothing || size(psi) == (d2, n) || throw(HetrewardError(HETREWARD_DIMENSION_MISMATCH,
        "HETREWARD_DIMENSION_MISMATCH", "psi has size $(size(psi)), expected ($d2, $n)"))
    return nothing
end

const FloatT = Union{Float64,Float32}

function Dataset(z::Matrix{T}, psi0::Vector{T}, psi::Union{Matrix{T},Nothing}, y::Vector{T};
                 cluster::Union{Vector{Int64},Nothing}=nothing) where {T<:FloatT}
    d1, n = size(z)
    d2 = psi === nothing ? 0 : size(psi, 1)
    check_columns(n, d1, d2, ("z",), (z,), psi0, psi, y, cluster)
    out = Ref{Ptr{hetreward_dataset}}(C_NULL)
    status = GC.@preserve z psi0 psi y cluster begin
        if T === Float64
            hetreward_dataset_new(n, d1, d2, pointer(z), pointer(psi0), nullptr(Cdouble, psi),
                                  pointer(y), nullptr(Int64, cluster), out)
        else
            hetreward_dataset_new_f32(n, d1, d2, pointer(z), pointer(psi0), nullptr(Cfloat, psi),
                                      pointer(y), nullptr(Int64, cluster), out)
        end
    end
    check(status)
    return Dataset(out[])
end

"""
    dataset_from_pairs(phi0, phi1, psi0, psi, y; cluster=nothing)

A dataset from both answers' features, each a (d1, n) `Matrix{T}`: z = phi1 - phi0 column by
column. Other arguments as [`Dataset`](@ref).
"""
function dataset_from_pairs(phi0::Matrix{T}, phi1::Matrix{T}, psi0::Vector{T},
                            psi::Union{Matrix{T},Nothing}, y::Vector{T};
                            cluster::Union{Vector{Int64},Nothing}=nothing) where {T<:FloatT}
    d1, n = size(phi0)
    d2 = psi === nothing ? 0 : size(psi, 1)
    check_columns(n, d1, d2, ("phi0", "phi1"), (phi0, phi1), psi0, psi, y, cluster)
    out = Ref{Ptr{hetreward_dataset}}(C_NULL)
    status = GC.@preserve phi0 phi1 psi0 psi y cluster begin
        if T === Float64
            hetreward_dataset_from_pairs(n, d1, d2, pointer(phi0), pointer(phi1), pointer(psi0),
                                         nullptr(Cdouble, psi), pointer(y),
                                         nullptr(Int64, cluster), out)
        else
            hetreward_dataset_from_pairs_f32(n, d1, d2, pointer(phi0), pointer(phi1),
                                             pointer(psi0), nullptr(Cfloat, psi), pointer(y),
                                             nullptr(Int64, cluster), out)
        end
    end
    check(status)
    return Dataset(out[])
end

"""
    load_dataset(path)

Reads a training set from a `.csv` or `.safetensors` file (see the C header).
"""
function load_dataset(path::AbstractString)
    out = Ref{Ptr{hetreward_dataset}}(C_NULL)
    check(hetreward_dataset_load(String(path), out))
    return Dataset(out[])
end

nobs(d::Dataset) = Int(in_use(() -> hetreward_dataset_n(live(d)), d))
d1(d::Dataset) = Int(in_use(() -> hetreward_dataset_d1(live(d)), d))
d2(d::Dataset) = Int(in_use(() -> hetreward_dataset_d2(live(d)), d))

function Base.show(io::IO, d::Dataset)
    if isopen(d)
        print(io, "Hetreward.Dataset(n=", nobs(d), ", d1=", d1(d), ", d2=", d2(d), ")")
    else
        print(io, "Hetreward.Dataset(closed)")
    end
end

# ---------------------------------------------------------------------------------- Fitter

"""
    Fitter(; solver=:newton, covariance=:expected, eta1, eta2, max_iter, tol, seed,
             init=:default, restarts, theta0, gamma0, threads, require_converged,
             intervals=:wald, bootstrap_reps)

Fit options; keywords left out keep the library's defaults (eta1 0.1, eta2 0.08, max_iter 0 =
the solver's default, tol 1e-8, seed 0, restarts 2, threads 0 = all cores,
require_converged false). `solver` is `:newton` or `:agd`; `covariance` `:expected`,
`:observed`, `:robust` or `:cluster`; `init` `:default`, `:random` or `:explicit` (with
`theta0`, `gamma0`); `intervals` `:wald` (the paper's), `:bootstrap`, `:resized`, `:cluster_jackknife`,
`:cluster_onestep` (both need cluster ids) or `:auto`
(see [`intervals`](@ref)), `bootstrap_reps` B (0 = the method's default). Progress callbacks
are not exposed in Julia (see the README); cancel a fit from another task with
[`cancel!`](@ref).
"""
mutable struct Fitter
    ptr::Ptr{hetreward_fitter}
    uses::Int
    closed::Bool
    guard::Threads.SpinLock
    lock::ReentrantLock  # one fit at a time; close waits for it
    function Fitter(ptr::Ptr{hetreward_fitter})
        return finalizer(free_now!, new(ptr, 0, false, Threads.SpinLock(), ReentrantLock()))
    end
end

# Frees the C object once (see in_use). As the finalizer: the fitter is unreachable, so no
# fit runs and no lock is needed (a finalizer must not take locks or yield).
function free_now!(f::Fitter)
    p, f.ptr = f.ptr, C_NULL
    p != C_NULL && hetreward_fitter_free(p)
    return nothing
end

function with_fields(p::T, changes::Dict{Symbol,Any}) where {T}
    return T((haskey(changes, f) ? convert(fieldtype(T, f), changes[f]) : getfield(p, f)
              for f in fieldnames(T))...)
end

function Fitter(; solver::Symbol=:newton, covariance::Symbol=:expected, eta1=nothing,
                eta2=nothing, max_iter=nothing, tol=nothing, seed=nothing, init::Symbol=:default,
                restarts=nothing, theta0=nothing, gamma0=nothing, threads=nothing,
                require_converged=nothing, intervals::Symbol=:wald, bootstrap_reps=nothing)
    changes = Dict{Symbol,Any}(:solver => lookup(SOLVERS, solver, "solver"),
                               :covariance => lookup(COVARIANCES, covariance, "covariance"),
                               :init => lookup(INITS, init, "init"),
                               :intervals => lookup(INTERVALS, intervals, "intervals"))
    for (k, v) in ((:eta1, eta1), (:eta2, eta2), (:max_iter, max_iter), (:tol, tol),
                   (:seed, seed), (:restarts, restarts), (:threads, threads),
                   (:require_converged, require_converged), (:bootstrap_reps, bootstrap_reps))
        v === nothing || (changes[k] = v)
    end
    # Small start vectors: converted explicitly; the library copies them in fitter_new.
    t0 = theta0 === nothing ? nothing : Vector{Float64}(theta0)
    g0 = gamma0 === nothing ? nothing : Vector{Float64}(gamma0)
    out = Ref{Ptr{hetreward_fitter}}(C_NULL)
    status = GC.@preserve t0 g0 begin
        if t0 !== nothing
            changes[:theta0] = pointer(t0)
            changes[:theta0_len] = length(t0)
        end
        if g0 !== nothing
            changes[:gamma0] = pointer(g0)
            changes[:gamma0_len] = length(g0)
        end
        params = Ref(with_fields(hetreward_fit_default_params(), changes))
        hetreward_fitter_new(params, out)
    end
    check(status)
    return Fitter(out[])
end

"""Frees the fitter, waiting for a running `fit` on it to return first."""
function Base.close(f::Fitter)
    lock(() -> close_handle!(f), f.lock)
    return nothing
end
Base.isopen(f::Fitter) = !f.closed

"""
    fit(fitter, dataset) -> Model

Fits a model (blocks until done; fits on one fitter run one at a time). Throws
`HetrewardError` with status `HETREWARD_CANCELLED` after [`cancel!`](@ref),
`HETREWARD_NOT_CONVERGED` with `require_converged`, `HETREWARD_SINGULAR_INFORMATION`, ...
"""
function fit(f::Fitter, d::Dataset)
    lock(f.lock) do
        out = Ref{Ptr{hetreward_model}}(C_NULL)
        status = in_use(f, d) do
            GC.@preserve f d hetreward_fitter_fit(live(f), live(d), out)
        end
        check(status)
        return Model(out[])
    end
end

"""
    cancel!(fitter)

Asks the fit running on `fitter` (in another task or thread) to stop before its next
iteration; it then throws `HETREWARD_CANCELLED`. A request made while no fit runs applies to
the next fit.
"""
function cancel!(f::Fitter)
    in_use(f) do
        GC.@preserve f hetreward_fitter_cancel(live(f))
    end
    return nothing
end

# ---------------------------------------------------------------------------------- Model

"""
A fitted reward model (immutable: any number of threads may use it at once). Create it with
[`fit`](@ref), [`load_model`](@ref); free it with `close` or let the finalizer do it.
"""
mutable struct Model
    ptr::Ptr{hetreward_model}
    uses::Int
    closed::Bool
    guard::Threads.SpinLock
    function Model(ptr::Ptr{hetreward_model})
        return finalizer(free_now!, new(ptr, 0, false, Threads.SpinLock()))
    end
end

# Frees the C object once (see in_use): from close_handle!, the last use, or the finalizer.
function free_now!(m::Model)
    p, m.ptr = m.ptr, C_NULL
    p != C_NULL && hetreward_model_free(p)
    return nothing
end

"""Frees the model (calls running with it in other tasks finish first; the last frees it)."""
Base.close(m::Model) = close_handle!(m)
Base.isopen(m::Model) = !m.closed

nobs(m::Model) = Int(in_use(() -> hetreward_model_n(live(m)), m))
d1(m::Model) = Int(in_use(() -> hetreward_model_d1(live(m)), m))
d2(m::Model) = Int(in_use(() -> hetreward_model_d2(live(m)), m))

function Base.show(io::IO, m::Model)
    if isopen(m)
        print(io, "Hetreward.Model(n=", nobs(m), ", d1=", d1(m), ", d2=", d2(m), ")")
    else
        print(io, "Hetreward.Model(closed)")
    end
end

function vector(getter, m::Model, len::Int)
    out = Vector{Float64}(undef, len)
    in_use(m) do
        GC.@preserve m out check(getter(live(m), pointer(out), len))
    end
    return out
end

"""theta_hat, the reward coefficients (d1 values)."""
theta(m::Model) = vector(hetreward_model_theta, m, d1(m))
"""gamma_hat, the rationality coefficients (d2 values)."""
gamma(m::Model) = vector(hetreward_model_gamma, m, d2(m))
"""Standard errors of theta_hat."""
theta_se(m::Model) = vector(hetreward_model_theta_se, m, d1(m))
"""Standard errors of gamma_hat."""
gamma_se(m::Model) = vector(hetreward_model_gamma_se, m, d2(m))

"""How the model was fitted, as a NamedTuple (solver, covariance, termination, converged,
iterations, total_iterations, starts, grad_norm, neg_loglik, seconds, tol)."""
function report(m::Model)
    r = Ref{hetreward_fit_report}()
    in_use(m) do
        GC.@preserve m check(hetreward_model_report(live(m), r))
    end
    x = r[]
    return (solver=name_of(SOLVERS, x.solver), covariance=name_of(COVARIANCES, x.covariance),
            termination=name_of(TERMINATIONS, x.termination), converged=x.converged,
            iterations=Int(x.iterations), total_iterations=Int(x.total_iterations),
            starts=Int(x.starts), grad_norm=x.grad_norm, neg_loglik=x.neg_loglik,
            seconds=x.seconds, tol=x.tol)
end

"""
    score(model, phi; alpha=0.05) -> Vector{Reward}

Rewards of the answers in the columns of `phi::Matrix{Float32}` (d1, m), with (1 - alpha)
CIs. A `Vector{Float32}` of length d1 is one answer.
"""
function score(model::Model, phi::Matrix{Float32}; alpha::Real=0.05)
    d, m = size(phi)
    out = Vector{Reward}(undef, m)
    in_use(model) do
        GC.@preserve model phi out check(hetreward_model_score(live(model), pointer(phi), m, d,
                                                               alpha, pointer(out)))
    end
    return out
end
score(model::Model, phi::Vector{Float32}; alpha::Real=0.05) =
    score(model, reshape(phi, :, 1); alpha=alpha)[1]

"""
    compare(model, phi0, phi1; alpha=0.05, method=:exact) -> Vector{Comparison}

Compares column i of `phi0` (answer a0) with column i of `phi1` (a1), both (d1, m)
`Matrix{Float32}`: D = r(a0) - r(a1). `method` is `:exact`, `:independent` or `:bound`.
`verdict(c)` gives `:win` (a0 significantly better), `:loss` or `:tie`.
"""
function compare(model::Model, phi0::Matrix{Float32}, phi1::Matrix{Float32}; alpha::Real=0.05,
                 method::Symbol=:exact)
    size(phi0) == size(phi1) || throw(HetrewardError(HETREWARD_DIMENSION_MISMATCH,
        "HETREWARD_DIMENSION_MISMATCH", "phi0 has size $(size(phi0)), phi1 $(size(phi1))"))
    d, m = size(phi0)
    code = lookup(METHODS, method, "method")
    out = Vector{Comparison}(undef, m)
    in_use(model) do
        GC.@preserve model phi0 phi1 out check(hetreward_model_compare(
            live(model), pointer(phi0), pointer(phi1), m, d, alpha, code, pointer(out)))
    end
    return out
end

"""`:win`, `:loss` or `:tie`."""
verdict(c::Comparison) = name_of(VERDICTS, c.verdict)

"""
    select(model, phi; penalty=nothing, alpha=0.05, policy=:pbon) -> (index, candidates)

Best of the candidate answers to one prompt, the columns of `phi::Matrix{Float32}` (d1, N),
with an optional `penalty::Vector{Float64}` (N). `policy` `:bon` maximises reward - penalty,
`:pbon` lower - penalty. `index` is 1-based; ties go to the lowest.
"""
function select(model::Model, phi::Matrix{Float32}; penalty::Union{Vector{Float64},Nothing}=nothing,
                alpha::Real=0.05, policy::Symbol=:pbon)
    d, m = size(phi)
    penalty === nothing || length(penalty) == m || throw(HetrewardError(
        HETREWARD_DIMENSION_MISMATCH, "HETREWARD_DIMENSION_MISMATCH",
        "penalty has length $(length(penalty)) for $m candidates"))
    code = lookup(POLICIES, policy, "policy")
    index = Ref{Csize_t}(0)
    out = Vector{Candidate}(undef, m)
    in_use(model) do
        GC.@preserve model phi penalty out check(hetreward_model_select(
            live(model), pointer(phi), m, d, nullptr(Cdouble, penalty), alpha, code, index,
            pointer(out)))
    end
    return Int(index[]) + 1, out
end

"""
    rationality(model, psi0, psi) -> (sigma, se)

sigma_hat = psi0 + gamma_hat . psi of an annotator profile (`psi::Vector{Float64}`, d2
values) and its standard error.
"""
function rationality(model::Model, psi0::Real, psi::Vector{Float64})
    sigma, se = Ref{Cdouble}(0), Ref{Cdouble}(0)
    in_use(model) do
        GC.@preserve model psi check(hetreward_model_rationality(live(model), psi0, pointer(psi),
                                                                 length(psi), sigma, se))
    end
    return sigma[], se[]
end

"""
    coefficients(model; alpha=0.05, which=:all) -> Vector{Coefficient}

The library's coefficient table under the model's interval method (`coefficients(wald(model))`
gives the paper's Wald table): estimate, se, z, p_value, lower, upper of every theta_j
(`which=:theta`), gamma_k (`:gamma`) or both, theta first (`:all`). `index` is 0-based, as
in the C API.
"""
function coefficients(model::Model; alpha::Real=0.05, which::Symbol=:all)
    code = lookup(COEFFICIENT_ROWS, which, "which")
    count = Ref{Csize_t}(0)
    in_use(model) do
        GC.@preserve model check(hetreward_model_coefficients(live(model), code, alpha,
                                                              Ptr{Coefficient}(C_NULL), 0, count))
    end
    out = Vector{Coefficient}(undef, count[])
    in_use(model) do
        GC.@preserve model out check(hetreward_model_coefficients(live(model), code, alpha,
                                                                  pointer(out), length(out), count))
    end
    return out
end

"""
    unbounded(model) -> Vector{Unbounded}

The coefficients whose intervals are unbounded, each with the annotator that carries it alone
(its covariate is zero in every other annotator's rows), theta before gamma. Empty but for a
cluster interval method on such data; those coefficients' rows of `coefficients` have an
infinite SE and bounds. `index` is 0-based, as in the C API.
"""
function unbounded(model::Model)
    count = Ref{Csize_t}(0)
    in_use(model) do
        GC.@preserve model check(hetreward_model_unbounded(live(model), Ptr{Unbounded}(C_NULL), 0,
                                                           count))
    end
    out = Vector{Unbounded}(undef, count[])
    in_use(model) do
        GC.@preserve model out check(hetreward_model_unbounded(live(model), pointer(out),
                                                               length(out), count))
    end
    return out
end

"""
    rationality_interval(model, psi0, psi; alpha=0.05) -> Reward

sigma_hat with its SE and (1 - alpha) interval under the model's interval method (`reward`
holds sigma; for a bootstrap model the percentile interval of the refits' rationalities).
"""
function rationality_interval(model::Model, psi0::Real, psi::Vector{Float64}; alpha::Real=0.05)
    out = Ref{Reward}()
    in_use(model) do
        GC.@preserve model psi check(hetreward_model_rationality_interval(live(model), psi0,
                                                                          pointer(psi), length(psi),
                                                                          alpha, out))
    end
    return out[]
end

"""
    intervals(model) -> NamedTuple

The model's interval method (`:wald`, `:bootstrap` or `:resized`; `requested` is `:auto` when
auto picked it), B, diverged refits, alpha_hat, c_hat and the fit's diagnostics (d1/n,
mle_finite, max |gamma_hat|, diverged share, `warning` in plain words or `nothing`).
"""
function intervals(model::Model)
    info = Ref{hetreward_interval_info}()
    in_use(model) do
        GC.@preserve model check(hetreward_model_intervals(live(model), info))
    end
    i = info[]
    len = Ref{Csize_t}(0)
    in_use(model) do
        GC.@preserve model check(hetreward_model_interval_warning(live(model), C_NULL, 0, len))
    end
    buf = Vector{UInt8}(undef, len[] + 1)
    in_use(model) do
        GC.@preserve model buf check(hetreward_model_interval_warning(live(model), pointer(buf),
                                                                      length(buf), len))
    end
    return (method = name_of(INTERVALS, i.method), requested = name_of(INTERVALS, i.requested),
            reps = Int(i.reps), diverged = Int(i.diverged), seed = i.seed, shrink = i.shrink,
            alpha_hat = i.alpha_hat, c_hat = i.c_hat, d1_over_n = i.d1_over_n,
            mle_finite = i.mle_finite, max_abs_gamma = i.max_abs_gamma,
            diverged_share = i.diverged_share,
            warning = i.has_warning ? String(buf[1:len[]]) : nothing)
end

"""
    heterogeneity(model, dataset) -> NamedTuple

The annotator-heterogeneity diagnostic of the model's estimate on `dataset` (which must have
cluster ids): per coefficient (theta, then gamma) `design_effects` (cluster-robust / model
variance) and `effective_clusters`; `clusters`, the `worst` coefficient (1-based), its
`excess_z` and `independent_coverage`, and `warning` (Bool).
"""
function heterogeneity(model::Model, dataset::Dataset)
    p = in_use(model) do
        Int(hetreward_model_d1(live(model)) + hetreward_model_d2(live(model)))
    end
    de, k = Vector{Cdouble}(undef, p), Vector{Cdouble}(undef, p)
    info = Ref{hetreward_heterogeneity}()
    in_use(model, dataset) do
        GC.@preserve model dataset de k check(hetreward_model_heterogeneity(live(model),
            live(dataset), p, pointer(de), pointer(k), info))
    end
    i = info[]
    return (clusters = Int(i.clusters), design_effects = de, effective_clusters = k,
            worst = Int(i.worst) + 1, excess_z = i.worst_excess_z,
            independent_coverage = i.independent_coverage, warning = i.warning)
end

"""
    leverage(model, dataset) -> NamedTuple

The annotators' leverage diagnostics of the model's estimate on `dataset` (which must have
cluster ids), after MacKinnon, Nielsen & Webb's summclust: `cluster_ids` (increasing), per
annotator its `leverage` tr(I_g I^-1) (they sum to d1 + d2) and `partial` (G x (d1 + d2):
its share of each coefficient's information; columns sum to 1); per coefficient (theta, then
gamma) `effective` annotators 1 / sum_g P_gj^2; `max_leverage` (`max_leverage_cluster`),
`min_effective` (`min_effective_coefficient`, 1-based), `max_partial` (`max_partial_cluster`,
`max_partial_coefficient`, 1-based) and `warning` (Bool: a coefficient's effective number is
below 10 or one annotator carries over half of it).
"""
function leverage(model::Model, dataset::Dataset)
    p = in_use(model) do
        Int(hetreward_model_d1(live(model)) + hetreward_model_d2(live(model)))
    end
    eff = Vector{Cdouble}(undef, p)
    blank = hetreward_leverage_info(sizeof(hetreward_leverage_info), 0, 0, 0, 0, 0, 0, 0, 0,
                                    false)
    info = Ref(blank)
    in_use(model, dataset) do
        GC.@preserve model dataset eff check(hetreward_model_leverage(live(model),
            live(dataset), p, pointer(eff), 0, C_NULL, C_NULL, C_NULL, info))
    end
    g = Int(info[].clusters)
    ids, lev = Vector{Int64}(undef, g), Vector{Cdouble}(undef, g)
    part = Vector{Cdouble}(undef, g * p)
    in_use(model, dataset) do
        GC.@preserve model dataset eff ids lev part check(hetreward_model_leverage(
            live(model), live(dataset), p, pointer(eff), g, pointer(ids), pointer(lev),
            pointer(part), info))
    end
    i = info[]
    return (cluster_ids = ids, leverage = lev,
            partial = permutedims(reshape(part, p, g)), effective = eff,
            max_leverage = i.max_leverage, max_leverage_cluster = i.max_leverage_cluster,
            min_effective = i.min_effective,
            min_effective_coefficient = Int(i.min_effective_coefficient) + 1,
            max_partial = i.max_partial, max_partial_cluster = i.max_partial_cluster,
            max_partial_coefficient = Int(i.max_partial_coefficient) + 1,
            warning = i.warning)
end

"""
    wald(model) -> Model

A copy of the model with the paper's Wald intervals, whatever method it carries.
"""
function wald(model::Model)
    out = Ref{Ptr{hetreward_model}}(C_NULL)
    in_use(model) do
        GC.@preserve model check(hetreward_model_wald(live(model), out))
    end
    return Model(out[])
end

"""
    save(model, path)

Writes the model file (atomically).
"""
function save(model::Model, path::AbstractString)
    in_use(model) do
        GC.@preserve model check(hetreward_model_save(live(model), String(path)))
    end
    return nothing
end

"""
    load_model(path::AbstractString) -> Model
    load_model(bytes::Vector{UInt8}) -> Model

Reads a model file, or the bytes of [`model_bytes`](@ref) (read in place).
"""
function load_model(path::AbstractString)
    out = Ref{Ptr{hetreward_model}}(C_NULL)
    check(hetreward_model_load(String(path), out))
    return Model(out[])
end

function load_model(bytes::Vector{UInt8})
    out = Ref{Ptr{hetreward_model}}(C_NULL)
    GC.@preserve bytes check(hetreward_model_load_buffer(pointer(bytes), length(bytes), out))
    return Model(out[])
end

"""
    model_bytes(model) -> Vector{UInt8}

The model in the model file format.
"""
function model_bytes(model::Model)
    len = Ref{Csize_t}(0)
    in_use(model) do
        GC.@preserve model check(hetreward_model_save_buffer(live(model), Ptr{UInt8}(C_NULL), 0, len))
    end
    buf = Vector{UInt8}(undef, len[])
    in_use(model) do
        GC.@preserve model buf check(hetreward_model_save_buffer(live(model), pointer(buf),
                                                                 length(buf), len))
    end
    return resize!(buf, len[])
end

end # module
