/* test_api: every public function of hetreward.h on its success path, with the results
 * checked against what they must be (theta . phi, CI widths, argmax, round trips). */
#include "common.h"

static void check_model_basics(const hetreward_model *model, size_t n) {
    double theta[D1], gamma[D2], theta_se[D1], gamma_se[D2];
    hetreward_fit_report report;
    size_t j;
    CHECK(hetreward_model_n(model) == n);
    CHECK(hetreward_model_d1(model) == D1);
    CHECK(hetreward_model_d2(model) == D2);
    CHECK_OK(hetreward_model_theta(model, theta, D1));
    CHECK_OK(hetreward_model_gamma(model, gamma, D2));
    CHECK_OK(hetreward_model_theta_se(model, theta_se, D1));
    CHECK_OK(hetreward_model_gamma_se(model, gamma_se, D2));
    for (j = 0; j < D1; j++) {
        CHECK(theta_se[j] > 0.0 && theta_se[j] < 1.0);
        /* The data come from the model: the estimate is within 5 SEs of the truth. */
        CHECK(fabs(theta[j] - TRUE_THETA[j]) < 5.0 * theta_se[j]);
    }
    for (j = 0; j < D2; j++) {
        CHECK(gamma_se[j] > 0.0);
        CHECK(fabs(gamma[j] - TRUE_GAMMA[j]) < 5.0 * gamma_se[j]);
    }
    CHECK_OK(hetreward_model_report(model, &report));
    CHECK(report.converged);
    CHECK(report.termination == HETREWARD_TERMINATION_CONVERGED);
    CHECK(report.iterations > 0 && report.total_iterations >= report.iterations);
    CHECK(report.starts >= 1);
    CHECK(report.grad_norm <= report.tol);
    CHECK(report.neg_loglik > 0.0 && report.neg_loglik < log(2.0));
    CHECK(report.seconds >= 0.0);
}

static void check_score(const hetreward_model *model) {
    enum { M = 6 };
    float *phi = make_phis(M, 7);
    hetreward_reward r95[M], r90[M];
    double theta[D1];
    size_t i, j;
    CHECK_OK(hetreward_model_theta(model, theta, D1));
    CHECK_OK(hetreward_model_score(model, phi, M, D1, 0.05, r95));
    CHECK_OK(hetreward_model_score(model, phi, M, D1, 0.10, r90));
    for (i = 0; i < M; i++) {
        double expected = 0.0;
        for (j = 0; j < D1; j++) expected += theta[j] * (double)phi[i * D1 + j];
        CHECK(close_to(r95[i].reward, expected, 1e-12));
        CHECK(r95[i].se > 0.0);
        CHECK(close_to(r95[i].upper - r95[i].reward, r95[i].reward - r95[i].lower, 1e-12));
        /* q(0.975) / q(0.95) = 1.959964 / 1.644854 */
        CHECK(close_to((r95[i].upper - r95[i].lower) / (r90[i].upper - r90[i].lower),
                       1.959963984540054 / 1.6448536269514722, 1e-9));
        CHECK(r90[i].reward == r95[i].reward && r90[i].se == r95[i].se);
    }
    /* m = 0 is a valid empty batch, with NULL arrays. */
    CHECK_OK(hetreward_model_score(model, NULL, 0, D1, 0.05, NULL));
    free(phi);
}

static void check_compare(const hetreward_model *model) {
    enum { M = 5 };
    float *phi0 = make_phis(M, 11), *phi1 = make_phis(M, 12);
    hetreward_comparison exact[M], indep[M], bound[M], same[1];
    hetreward_reward r0[M], r1[M];
    size_t i;
    CHECK_OK(hetreward_model_compare(model, phi0, phi1, M, D1, 0.05, HETREWARD_DIFF_EXACT, exact));
    CHECK_OK(hetreward_model_compare(model, phi0, phi1, M, D1, 0.05, HETREWARD_DIFF_INDEPENDENT,
                                     indep));
    CHECK_OK(hetreward_model_compare(model, phi0, phi1, M, D1, 0.05, HETREWARD_DIFF_BOUND, bound));
    CHECK_OK(hetreward_model_score(model, phi0, M, D1, 0.05, r0));
    CHECK_OK(hetreward_model_score(model, phi1, M, D1, 0.05, r1));
    for (i = 0; i < M; i++) {
        CHECK(close_to(exact[i].diff, r0[i].reward - r1[i].reward, 1e-12));
        CHECK(exact[i].diff == indep[i].diff && exact[i].diff == bound[i].diff);
        CHECK(close_to(indep[i].se, sqrt(r0[i].se * r0[i].se + r1[i].se * r1[i].se), 1e-12));
        CHECK(close_to(bound[i].se, r0[i].se + r1[i].se, 1e-12));
        CHECK(exact[i].se <= bound[i].se + 1e-15 && indep[i].se <= bound[i].se + 1e-15);
        CHECK(exact[i].p_value >= 0.0 && exact[i].p_value <= 1.0);
        CHECK(exact[i].lower < exact[i].diff && exact[i].diff < exact[i].upper);
        if (exact[i].lower > 0.0) CHECK(exact[i].verdict == HETREWARD_VERDICT_WIN);
        else if (exact[i].upper < 0.0) CHECK(exact[i].verdict == HETREWARD_VERDICT_LOSS);
        else CHECK(exact[i].verdict == HETREWARD_VERDICT_TIE);
        /* Significant at 5% exactly when p < 0.05. */
        CHECK((exact[i].verdict != HETREWARD_VERDICT_TIE) == (exact[i].p_value < 0.05));
    }
    /* An answer compared with itself: difference 0, SE 0 (exact), a tie with p = 1. */
    CHECK_OK(hetreward_model_compare(model, phi0, phi0, 1, D1, 0.05, HETREWARD_DIFF_EXACT, same));
    CHECK(same[0].diff == 0.0 && same[0].se == 0.0 && same[0].p_value == 1.0);
    CHECK(same[0].verdict == HETREWARD_VERDICT_TIE);
    /* Identical results are identical bytes, padding included (callers hash them). */
    {
        hetreward_comparison a[M], b[M];
        hetreward_fit_report ra, rb;
        memset(a, 0x00, sizeof a);
        memset(b, 0xAB, sizeof b);
        CHECK_OK(hetreward_model_compare(model, phi0, phi1, M, D1, 0.05, HETREWARD_DIFF_EXACT, a));
        CHECK_OK(hetreward_model_compare(model, phi0, phi1, M, D1, 0.05, HETREWARD_DIFF_EXACT, b));
        CHECK(memcmp(a, b, sizeof a) == 0);
        memset(&ra, 0x00, sizeof ra);
        memset(&rb, 0xAB, sizeof rb);
        CHECK_OK(hetreward_model_report(model, &ra));
        CHECK_OK(hetreward_model_report(model, &rb));
        CHECK(memcmp(&ra, &rb, sizeof ra) == 0);
    }
    free(phi0);
    free(phi1);
}

static size_t argmax(const hetreward_candidate *c, size_t n) {
    size_t k, best = 0;
    for (k = 1; k < n; k++)
        if (c[k].score > c[best].score) best = k;
    return best;
}

static void check_select(const hetreward_model *model) {
    enum { N = 16 };
    float *phi = make_phis(N, 21);
    hetreward_candidate bon[N], pbon[N], pen[N];
    double penalties[N];
    size_t k, i_bon = 99, i_pbon = 99, i_pen = 99, i_plain = 99;
    CHECK_OK(hetreward_model_select(model, phi, N, D1, NULL, 0.05, HETREWARD_POLICY_BON, &i_bon,
                                    bon));
    CHECK_OK(hetreward_model_select(model, phi, N, D1, NULL, 0.05, HETREWARD_POLICY_PBON, &i_pbon,
                                    pbon));
    for (k = 0; k < N; k++) {
        CHECK(bon[k].penalty == 0.0 && bon[k].score == bon[k].reward.reward);
        CHECK(pbon[k].score == pbon[k].reward.lower);
    }
    CHECK(i_bon == argmax(bon, N));
    CHECK(i_pbon == argmax(pbon, N));
    /* out_candidates is optional. */
    CHECK_OK(hetreward_model_select(model, phi, N, D1, NULL, 0.05, HETREWARD_POLICY_BON, &i_plain,
                                    NULL));
    CHECK(i_plain == i_bon);
    /* A large penalty on the BoN winner moves the choice elsewhere. */
    for (k = 0; k < N; k++) penalties[k] = 0.01 * (double)k;
    penalties[i_bon] = 1e6;
    CHECK_OK(hetreward_model_select(model, phi, N, D1, penalties, 0.05, HETREWARD_POLICY_BON,
                                    &i_pen, pen));
    CHECK(i_pen != i_bon && i_pen == argmax(pen, N));
    for (k = 0; k < N; k++) CHECK(pen[k].score == pen[k].reward.reward - penalties[k]);
    free(phi);
}

static void check_rationality(const hetreward_model *model) {
    double gamma[D2], psi[D2] = {1.0, 0.5}, zeros[D2] = {0.0, 0.0}, sigma = 0, se = 0;
    CHECK_OK(hetreward_model_gamma(model, gamma, D2));
    CHECK_OK(hetreward_model_rationality(model, 1.0, psi, D2, &sigma, &se));
    CHECK(close_to(sigma, 1.0 + gamma[0] * psi[0] + gamma[1] * psi[1], 1e-12));
    CHECK(se > 0.0);
    CHECK_OK(hetreward_model_rationality(model, 2.0, zeros, D2, &sigma, &se));
    CHECK(sigma == 2.0 && se == 0.0);
}

/* Two models score identically (bitwise) and have equal parameters. */
static void check_same_model(const hetreward_model *a, const hetreward_model *b) {
    enum { M = 8 };
    float *phi = make_phis(M, 31);
    hetreward_reward ra[M], rb[M];
    double ta[D1], tb[D1];
    hetreward_fit_report pa, pb;
    CHECK(hetreward_model_n(a) == hetreward_model_n(b));
    CHECK_OK(hetreward_model_theta(a, ta, D1));
    CHECK_OK(hetreward_model_theta(b, tb, D1));
    CHECK(memcmp(ta, tb, sizeof ta) == 0);
    CHECK_OK(hetreward_model_score(a, phi, M, D1, 0.05, ra));
    CHECK_OK(hetreward_model_score(b, phi, M, D1, 0.05, rb));
    CHECK(memcmp(ra, rb, sizeof ra) == 0);
    CHECK_OK(hetreward_model_report(a, &pa));
    CHECK_OK(hetreward_model_report(b, &pb));
    CHECK(pa.iterations == pb.iterations && pa.converged == pb.converged);
    CHECK(pa.solver == pb.solver && pa.covariance == pb.covariance);
    free(phi);
}

static void check_save_load(const hetreward_model *model) {
    char path[128];
    hetreward_model *loaded = NULL, *from_buf = NULL;
    size_t need = 0, written = 0;
    uint8_t *buf;
    temp_name(path, sizeof path, "api_model", "bin");
    CHECK_OK(hetreward_model_save(model, path));
    CHECK_OK(hetreward_model_load(path, &loaded));
    check_same_model(model, loaded);
    CHECK(unlink(path) == 0);

    CHECK_OK(hetreward_model_save_buffer(model, NULL, 0, &need));
    CHECK(need > 0);
    buf = (uint8_t *)checked_malloc(need);
    CHECK_OK(hetreward_model_save_buffer(model, buf, need, &written));
    CHECK(written == need);
    CHECK_OK(hetreward_model_load_buffer(buf, written, &from_buf));
    check_same_model(model, from_buf);
    free(buf);
    hetreward_model_free(loaded);
    hetreward_model_free(from_buf);
}

/* The same data through a CSV file give the very same model (%.17g round-trips doubles). */
static void check_dataset_load(const test_data *d, const hetreward_model *model) {
    char path[128];
    FILE *f;
    size_t i, j;
    hetreward_dataset *ds = NULL;
    hetreward_fitter *fitter = NULL;
    hetreward_model *again = NULL;
    temp_name(path, sizeof path, "api_data", "csv");
    f = fopen(path, "w");
    CHECK(f != NULL);
    fprintf(f, "cluster,y,psi0");
    for (j = 0; j < D1; j++) fprintf(f, ",z%zu", j + 1);
    for (j = 0; j < D2; j++) fprintf(f, ",psi%zu", j + 1);
    fprintf(f, "\n");
    for (i = 0; i < d->n; i++) {
        fprintf(f, "%lld,%.17g,%.17g", (long long)d->cluster[i], d->y[i], d->psi0[i]);
        for (j = 0; j < D1; j++) fprintf(f, ",%.17g", d->z[i * D1 + j]);
        for (j = 0; j < D2; j++) fprintf(f, ",%.17g", d->psi[i * D2 + j]);
        fprintf(f, "\n");
    }
    CHECK(fclose(f) == 0);
    CHECK_OK(hetreward_dataset_load(path, &ds));
    CHECK(unlink(path) == 0);
    CHECK(hetreward_dataset_n(ds) == d->n && hetreward_dataset_d1(ds) == D1 &&
          hetreward_dataset_d2(ds) == D2);
    CHECK_OK(hetreward_fitter_new(NULL, &fitter));
    CHECK_OK(hetreward_fitter_fit(fitter, ds, &again));
    check_same_model(model, again);
    hetreward_model_free(again);
    hetreward_fitter_free(fitter);
    hetreward_dataset_free(ds);
}

/* float arrays and the phi0/phi1 forms build the same data set (up to rounding). */
static void check_dataset_variants(const test_data *d, const hetreward_model *model) {
    size_t n = d->n, i;
    float *zf = (float *)checked_malloc(n * D1 * sizeof(float));
    float *p0f = (float *)checked_malloc(n * D1 * sizeof(float));
    float *p1f = (float *)checked_malloc(n * D1 * sizeof(float));
    float *psi0f = (float *)checked_malloc(n * sizeof(float));
    float *psif = (float *)checked_malloc(n * D2 * sizeof(float));
    float *yf = (float *)checked_malloc(n * sizeof(float));
    double *p0 = (double *)checked_malloc(n * D1 * sizeof(double));
    double *p1 = (double *)checked_malloc(n * D1 * sizeof(double));
    hetreward_dataset *ds[3] = {NULL, NULL, NULL};
    hetreward_fitter *fitter = NULL;
    double theta_ref[D1], theta[D1];
    int v;
    size_t j;
    for (i = 0; i < n * D1; i++) {
        zf[i] = (float)d->z[i];
        p0f[i] = 0.0f;
        p1f[i] = zf[i];
        p0[i] = 0.25;
        p1[i] = 0.25 + d->z[i];
    }
    for (i = 0; i < n; i++) {
        psi0f[i] = (float)d->psi0[i];
        yf[i] = (float)d->y[i];
    }
    for (i = 0; i < n * D2; i++) psif[i] = (float)d->psi[i];
    CHECK_OK(hetreward_dataset_new_f32(n, D1, D2, zf, psi0f, psif, yf, NULL, &ds[0]));
    CHECK_OK(hetreward_dataset_from_pairs(n, D1, D2, p0, p1, d->psi0, d->psi, d->y, d->cluster,
                                          &ds[1]));
    CHECK_OK(hetreward_dataset_from_pairs_f32(n, D1, D2, p0f, p1f, psi0f, psif, yf, NULL, &ds[2]));
    CHECK_OK(hetreward_fitter_new(NULL, &fitter));
    CHECK_OK(hetreward_model_theta(model, theta_ref, D1));
    for (v = 0; v < 3; v++) {
        hetreward_model *m = NULL;
        CHECK(hetreward_dataset_n(ds[v]) == n);
        CHECK_OK(hetreward_fitter_fit(fitter, ds[v], &m));
        CHECK_OK(hetreward_model_theta(m, theta, D1));
        for (j = 0; j < D1; j++) CHECK(close_to(theta[j], theta_ref[j], 1e-4));
        hetreward_model_free(m);
        hetreward_dataset_free(ds[v]);
    }
    hetreward_fitter_free(fitter);
    free(zf); free(p0f); free(p1f); free(psi0f); free(psif); free(yf); free(p0); free(p1);
}

/* Every solver option and covariance kind through the params struct. */
static void check_params(const test_data *d, const hetreward_model *model) {
    hetreward_fit_params p = hetreward_fit_default_params();
    hetreward_model *m;
    hetreward_fit_report report;
    double theta_ref[D1], gamma_ref[D2], theta[D1], se_ref[D1], se[D1];
    unsigned kind;
    size_t j;
    CHECK(p.struct_size == sizeof(hetreward_fit_params));
    CHECK(p.solver == HETREWARD_SOLVER_NEWTON && p.covariance == HETREWARD_COVARIANCE_EXPECTED);
    CHECK(p.eta1 == 0.1 && p.eta2 == 0.08 && p.max_iter == 0 && p.tol == 1e-8 && p.seed == 0);
    CHECK(p.init == HETREWARD_INIT_DEFAULT && p.restarts == 2 && p.threads == 0);
    CHECK(p.theta0 == NULL && p.gamma0 == NULL && !p.require_converged);
    CHECK(p.progress == NULL && p.progress_user_data == NULL);
    CHECK_OK(hetreward_model_theta(model, theta_ref, D1));
    CHECK_OK(hetreward_model_gamma(model, gamma_ref, D2));
    CHECK_OK(hetreward_model_theta_se(model, se_ref, D1));

    /* The paper's Algorithm 1 from the optimum stays there, for a fixed number of steps. */
    p.solver = HETREWARD_SOLVER_AGD;
    p.init = HETREWARD_INIT_EXPLICIT;
    p.theta0 = theta_ref;
    p.theta0_len = D1;
    p.gamma0 = gamma_ref;
    p.gamma0_len = D2;
    p.max_iter = 20;
    p.tol = 0.0;
    p.threads = 1;
    m = fit_with(d, &p);
    CHECK_OK(hetreward_model_report(m, &report));
    CHECK(report.solver == HETREWARD_SOLVER_AGD && report.iterations == 20);
    CHECK(!report.converged && report.termination == HETREWARD_TERMINATION_MAX_ITERATIONS);
    CHECK_OK(hetreward_model_theta(m, theta, D1));
    for (j = 0; j < D1; j++) CHECK(fabs(theta[j] - theta_ref[j]) < 1e-6);
    hetreward_model_free(m);

    /* Random start with a seed reaches the same optimum. */
    p = hetreward_fit_default_params();
    p.init = HETREWARD_INIT_RANDOM;
    p.seed = 12345;
    m = fit_with(d, &p);
    CHECK_OK(hetreward_model_theta(m, theta, D1));
    for (j = 0; j < D1; j++) CHECK(close_to(theta[j], theta_ref[j], 1e-6));
    hetreward_model_free(m);

    /* Other covariance kinds: same estimate, different (positive) SEs. */
    for (kind = HETREWARD_COVARIANCE_OBSERVED; kind <= HETREWARD_COVARIANCE_CLUSTER; kind++) {
        p = hetreward_fit_default_params();
        p.covariance = kind;
        m = fit_with(d, &p);
        CHECK_OK(hetreward_model_report(m, &report));
        CHECK(report.covariance == kind);
        CHECK_OK(hetreward_model_theta(m, theta, D1));
        CHECK_OK(hetreward_model_theta_se(m, se, D1));
        for (j = 0; j < D1; j++) {
            CHECK(theta[j] == theta_ref[j]);
            CHECK(se[j] > 0.0 && close_to(se[j], se_ref[j], 0.5));
        }
        hetreward_model_free(m);
    }
}

int main(void) {
    test_data d = make_data(800, 42);
    hetreward_model *model;
    hetreward_fit_params p = hetreward_fit_default_params();

    CHECK(strcmp(hetreward_version(), HETREWARD_VERSION) == 0);
    CHECK(strcmp(hetreward_status_name(HETREWARD_OK), "HETREWARD_OK") == 0);
    CHECK(strcmp(hetreward_last_error_message(), "") == 0);

    p.threads = 2;
    model = fit_with(&d, &p);
    CHECK(strcmp(hetreward_last_error_message(), "") == 0);
    check_model_basics(model, d.n);
    check_score(model);
    check_compare(model);
    check_select(model);
    check_rationality(model);
    check_save_load(model);
    check_dataset_load(&d, model);
    check_dataset_variants(&d, model);
    check_params(&d, model);

    /* Every free accepts NULL. */
    hetreward_dataset_free(NULL);
    hetreward_fitter_free(NULL);
    hetreward_model_free(NULL);
    hetreward_fitter_cancel(NULL);
    CHECK(hetreward_model_n(NULL) == 0 && hetreward_dataset_d1(NULL) == 0);

    hetreward_model_free(model);
    free_data(&d);
    printf("test_api: ok\n");
    return 0;
}
