/* test_intervals: calibrated interval methods through the C ABI (issue 11) — the appended
 * fit-params fields, a params struct from the previous header version (malloc'd at exactly
 * its size, so valgrind sees any read past it), the interval getter, the warning, the Wald
 * copy, the rationality interval from the draws, and the method surviving a save/load round
 * trip. */
#include "common.h"

/* hetreward_fit_params as the first version of the header declared it. */
typedef struct fit_params_v1 {
    size_t struct_size;
    hetreward_solver solver;
    hetreward_covariance covariance;
    double eta1;
    double eta2;
    uint64_t max_iter;
    double tol;
    uint64_t seed;
    hetreward_init init;
    uint32_t restarts;
    const double *theta0;
    size_t theta0_len;
    const double *gamma0;
    size_t gamma0_len;
    uint32_t threads;
    bool require_converged;
    hetreward_progress_callback progress;
    void *progress_user_data;
} fit_params_v1;

static void check_previous_version_struct(const test_data *d) {
    hetreward_fit_params now = hetreward_fit_default_params();
    fit_params_v1 *old = (fit_params_v1 *)checked_malloc(sizeof(fit_params_v1));
    hetreward_model *model;
    hetreward_interval_info info;
    CHECK(sizeof(fit_params_v1) < sizeof(hetreward_fit_params));
    memcpy(old, &now, sizeof(fit_params_v1));
    old->struct_size = sizeof(fit_params_v1);
    old->threads = 1;
    model = fit_with(d, (const hetreward_fit_params *)old);
    CHECK_OK(hetreward_model_intervals(model, &info));
    CHECK(info.method == HETREWARD_INTERVALS_WALD && info.requested == HETREWARD_INTERVALS_WALD);
    CHECK(info.reps == 0);
    hetreward_model_free(model);
    /* A size that is no version's is rejected. */
    old->struct_size = sizeof(fit_params_v1) - 4;
    {
        hetreward_fitter *fitter = NULL;
        CHECK_ERR(hetreward_fitter_new((const hetreward_fit_params *)old, &fitter),
                  HETREWARD_INVALID_ARGUMENT, "struct_size");
        CHECK(fitter == NULL);
    }
    free(old);
}

static void check_bootstrap_model(const test_data *d) {
    hetreward_fit_params p = hetreward_fit_default_params();
    hetreward_model *model, *wald, *back;
    hetreward_interval_info info, back_info;
    hetreward_reward r, w;
    hetreward_comparison c;
    float *phi = make_phis(2, 3);
    char warning[512];
    size_t len = 0, size = 0;
    uint8_t *buf = NULL;
    p.intervals = HETREWARD_INTERVALS_BOOTSTRAP;
    p.bootstrap_reps = 40;
    p.seed = 7;
    model = fit_with(d, &p);
    CHECK_OK(hetreward_model_intervals(model, &info));
    CHECK(info.method == HETREWARD_INTERVALS_BOOTSTRAP);
    CHECK(info.requested == HETREWARD_INTERVALS_BOOTSTRAP);
    CHECK(info.reps == 40 && info.seed == 7 && info.diverged <= 40);
    CHECK(info.alpha_hat == 1.0 && info.c_hat > 0.0);
    CHECK(close_to(info.d1_over_n, (double)D1 / (double)d->n, 1e-12));
    CHECK(info.diverged_share >= 0.0 && info.diverged_share <= 1.0);
    CHECK_OK(hetreward_model_interval_warning(model, NULL, 0, &len));
    CHECK((len > 0) == (info.has_warning != 0));
    CHECK_OK(hetreward_model_interval_warning(model, warning, sizeof warning, &len));
    CHECK(strlen(warning) == (len < sizeof warning ? len : sizeof warning - 1));
    /* Scores from the draws; the Wald copy gives the paper's symmetric interval. */
    CHECK_OK(hetreward_model_score(model, phi, 1, D1, 0.05, &r));
    CHECK_OK(hetreward_model_wald(model, &wald));
    CHECK_OK(hetreward_model_score(wald, phi, 1, D1, 0.05, &w));
    CHECK(r.reward == w.reward);
    CHECK(r.lower < r.reward && r.reward < r.upper);
    CHECK(close_to(w.upper - w.reward, w.reward - w.lower, 1e-12));
    CHECK(r.lower != w.lower);
    /* Compare: the difference interval from the same draws, whatever the method. */
    CHECK_OK(hetreward_model_compare(model, phi, phi + D1, 1, D1, 0.05, HETREWARD_DIFF_BOUND, &c));
    CHECK(c.lower <= c.diff && c.diff <= c.upper);
    /* Rationality: the percentile interval of the stored draws, not sigma +- q se (whose
     * symmetric form the Wald copy gives). */
    {
        double psi[D2], sigma, se;
        hetreward_reward ri, narrow, wi;
        size_t k;
        for (k = 0; k < D2; k++) psi[k] = 0.5;
        CHECK_OK(hetreward_model_rationality(model, 1.0, psi, D2, &sigma, &se));
        CHECK_OK(hetreward_model_rationality_interval(model, 1.0, psi, D2, 0.05, &ri));
        CHECK(ri.reward == sigma && ri.se == se);
        CHECK(ri.lower < ri.upper);
        CHECK(!close_to(ri.upper - ri.reward, ri.reward - ri.lower, 1e-9));
        CHECK_OK(hetreward_model_rationality_interval(model, 1.0, psi, D2, 0.5, &narrow));
        CHECK(ri.lower <= narrow.lower && narrow.upper <= ri.upper);
        CHECK_OK(hetreward_model_rationality_interval(wald, 1.0, psi, D2, 0.05, &wi));
        CHECK(wi.reward == sigma);
        CHECK(close_to(wi.upper - wi.reward, 1.959963984540054 * wi.se, 1e-9));
        CHECK(close_to(wi.reward - wi.lower, 1.959963984540054 * wi.se, 1e-9));
    }
    /* The method survives a round trip through the model format. */
    CHECK_OK(hetreward_model_save_buffer(model, NULL, 0, &size));
    buf = (uint8_t *)checked_malloc(size);
    CHECK_OK(hetreward_model_save_buffer(model, buf, size, &size));
    CHECK_OK(hetreward_model_load_buffer(buf, size, &back));
    CHECK_OK(hetreward_model_intervals(back, &back_info));
    CHECK(back_info.method == info.method && back_info.reps == info.reps);
    free(buf);
    hetreward_model_free(back);
    hetreward_model_free(wald);
    hetreward_model_free(model);
    free(phi);
}

static void check_bad_params(void) {
    hetreward_fit_params p = hetreward_fit_default_params();
    hetreward_fitter *fitter = NULL;
    hetreward_interval_info info;
    p.intervals = HETREWARD_INTERVALS_CLUSTER_ONESTEP + 1;
    CHECK_ERR(hetreward_fitter_new(&p, &fitter), HETREWARD_INVALID_ARGUMENT, "params.intervals");
    p = hetreward_fit_default_params();
    p.intervals = HETREWARD_INTERVALS_RESIZED;
    p.bootstrap_reps = 100001;
    CHECK_ERR(hetreward_fitter_new(&p, &fitter), HETREWARD_INVALID_ARGUMENT,
              "params.bootstrap_reps");
    CHECK(fitter == NULL);
    CHECK_ERR(hetreward_model_intervals(NULL, &info), HETREWARD_NULL_POINTER, "model");
}

/* A reward feature non-zero in one annotator's rows only: the cluster intervals cannot bound
 * its coefficient (issue 31). The fit succeeds under auto; a reward that uses the feature
 * has SE +inf and interval (-inf, +inf), one that does not is finite; the same after a round
 * trip through the model format. */
static void check_unbounded_coefficient(void) {
    test_data d = make_data(300, 11);
    hetreward_fit_params p = hetreward_fit_default_params();
    hetreward_model *model, *back;
    hetreward_reward r;
    float uses[D1] = {1.0f, 0.5f, 0.0f, 0.0f}, ignores[D1] = {0.0f, 0.5f, 0.0f, 0.0f};
    size_t i, size = 0;
    uint8_t *buf;
    for (i = 0; i < d.n; i++)
        if (d.cluster[i] != 3) d.z[i * D1] = 0.0;
    p.intervals = HETREWARD_INTERVALS_AUTO;
    model = fit_with(&d, &p);
    CHECK_OK(hetreward_model_save_buffer(model, NULL, 0, &size));
    buf = (uint8_t *)checked_malloc(size);
    CHECK_OK(hetreward_model_save_buffer(model, buf, size, &size));
    CHECK(buf[8] == 3); /* format version 3: the model lists its unbounded coefficient */
    CHECK_OK(hetreward_model_load_buffer(buf, size, &back));
    CHECK_OK(hetreward_model_score(back, uses, 1, D1, 0.05, &r));
    CHECK(isinf(r.se) && r.se > 0.0 && isinf(r.lower) && r.lower < 0.0 && isinf(r.upper));
    CHECK(isfinite(r.reward));
    CHECK_OK(hetreward_model_score(back, ignores, 1, D1, 0.05, &r));
    CHECK(isfinite(r.se) && r.se > 0.0 && r.lower < r.reward && r.reward < r.upper);
    free(buf);
    hetreward_model_free(back);
    hetreward_model_free(model);
    free_data(&d);
}

int main(void) {
    test_data d = make_data(300, 11);
    check_previous_version_struct(&d);
    check_bootstrap_model(&d);
    check_bad_params();
    check_unbounded_coefficient();
    free_data(&d);
    printf("test_intervals: ok\n");
    return 0;
}
