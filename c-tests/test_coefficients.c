/* test_coefficients: the coefficient table through the C ABI — the size query, the three row
 * selections, Wald rows against the model's own estimate / SE and the comparison of e_j with
 * the zero answer, rationality of e_k, zeroed padding, a too-small array, and a bootstrap
 * model whose rows are its calibrated intervals (with the Wald copy giving the paper's); and the
 * unbounded coefficients of a cluster jackknife where one annotator carries a covariate. */
#include "common.h"

#include <stddef.h>

#define ROWS (D1 + D2)

static size_t count_of(const hetreward_model *m, hetreward_coefficients which) {
    size_t count = 12345;
    CHECK_OK(hetreward_model_coefficients(m, which, 0.05, NULL, 0, &count));
    return count;
}

/* The C bytes of a row: identical rows are identical bytes (padding zeroed). */
static void check_padding(const hetreward_coefficient *rows, size_t n) {
    size_t i, b;
    for (i = 0; i < n; i++) {
        const unsigned char *p = (const unsigned char *)&rows[i];
        for (b = offsetof(hetreward_coefficient, block) + sizeof(rows[i].block);
             b < offsetof(hetreward_coefficient, index); b++)
            CHECK(p[b] == 0);
    }
}

static void check_wald(const test_data *d) {
    hetreward_model *model = fit_with(d, NULL);
    hetreward_coefficient all[ROWS], theta[D1], gamma[D2], spare[ROWS + 1];
    double est[D1], se[D1], gest[D2], gse[D2];
    size_t count = 0, j, k;
    CHECK(count_of(model, HETREWARD_COEFFICIENTS_THETA) == D1);
    CHECK(count_of(model, HETREWARD_COEFFICIENTS_GAMMA) == D2);
    CHECK(count_of(model, HETREWARD_COEFFICIENTS_ALL) == ROWS);
    memset(all, 0xA5, sizeof all);
    CHECK_OK(hetreward_model_coefficients(model, HETREWARD_COEFFICIENTS_ALL, 0.05, all, ROWS,
                                          &count));
    CHECK(count == ROWS);
    check_padding(all, ROWS);
    CHECK_OK(hetreward_model_coefficients(model, HETREWARD_COEFFICIENTS_THETA, 0.05, theta, D1,
                                          &count));
    CHECK(count == D1 && memcmp(theta, all, sizeof theta) == 0);
    CHECK_OK(hetreward_model_coefficients(model, HETREWARD_COEFFICIENTS_GAMMA, 0.05, gamma, D2,
                                          &count));
    CHECK(count == D2 && memcmp(gamma, all + D1, sizeof gamma) == 0);
    /* A larger array is fine: only `count` rows are written. */
    memset(spare, 0x77, sizeof spare);
    CHECK_OK(hetreward_model_coefficients(model, HETREWARD_COEFFICIENTS_ALL, 0.05, spare,
                                          ROWS + 1, &count));
    CHECK(count == ROWS && memcmp(spare, all, sizeof all) == 0);
    CHECK(((unsigned char *)&spare[ROWS])[0] == 0x77);

    CHECK_OK(hetreward_model_theta(model, est, D1));
    CHECK_OK(hetreward_model_theta_se(model, se, D1));
    CHECK_OK(hetreward_model_gamma(model, gest, D2));
    CHECK_OK(hetreward_model_gamma_se(model, gse, D2));
    for (j = 0; j < D1; j++) {
        float e[D1] = {0}, zero[D1] = {0};
        hetreward_comparison c;
        const hetreward_coefficient *r = &all[j];
        CHECK(r->block == HETREWARD_COEFFICIENTS_THETA && r->index == j);
        CHECK(r->estimate == est[j] && r->se == se[j] && r->z == est[j] / se[j]);
        CHECK(r->lower < r->estimate && r->estimate < r->upper);
        CHECK(close_to(r->upper - r->estimate, 1.959963984540054 * se[j], 1e-12));
        /* The test of theta_j is the comparison of e_j with the zero answer. */
        e[j] = 1.0f;
        CHECK_OK(hetreward_model_compare(model, e, zero, 1, D1, 0.05, HETREWARD_DIFF_EXACT, &c));
        CHECK(close_to(c.p_value, r->p_value, 1e-10));
        CHECK(close_to(c.lower, r->lower, 1e-12) && close_to(c.upper, r->upper, 1e-12));
        CHECK((r->p_value < 0.05) == (r->lower > 0.0 || r->upper < 0.0));
    }
    /* The data were drawn with theta = (1, -0.5, 0.75, 0.25) at n = 2000: all significant. */
    for (j = 0; j < D1; j++) CHECK(all[j].p_value < 1e-3);
    for (k = 0; k < D2; k++) {
        double psi[D2] = {0}, sigma, sigma_se;
        const hetreward_coefficient *r = &all[D1 + k];
        CHECK(r->block == HETREWARD_COEFFICIENTS_GAMMA && r->index == k);
        CHECK(r->estimate == gest[k] && r->se == gse[k]);
        psi[k] = 1.0;
        CHECK_OK(hetreward_model_rationality(model, 0.0, psi, D2, &sigma, &sigma_se));
        CHECK(sigma == r->estimate && close_to(sigma_se, r->se, 1e-12));
    }
    /* A narrower level widens nothing it should not: the 90% CI sits inside the 95% CI. */
    CHECK_OK(hetreward_model_coefficients(model, HETREWARD_COEFFICIENTS_ALL, 0.1, spare, ROWS,
                                          &count));
    for (j = 0; j < ROWS; j++) {
        CHECK(spare[j].estimate == all[j].estimate && spare[j].p_value == all[j].p_value);
        CHECK(spare[j].lower > all[j].lower && spare[j].upper < all[j].upper);
    }
    /* Too small an array: an error naming the size, nothing written. */
    memset(spare, 0x33, sizeof spare);
    count = 99;
    CHECK_ERR(hetreward_model_coefficients(model, HETREWARD_COEFFICIENTS_ALL, 0.05, spare,
                                           ROWS - 1, &count),
              HETREWARD_DIMENSION_MISMATCH, "at least 6 rows");
    CHECK(count == 99 && ((unsigned char *)spare)[0] == 0x33);
    hetreward_model_free(model);
}

static void check_bootstrap(const test_data *d) {
    hetreward_fit_params p = hetreward_fit_default_params();
    hetreward_model *model, *wald;
    hetreward_coefficient rows[ROWS], paper[ROWS];
    double se[D1];
    size_t count, j;
    p.intervals = HETREWARD_INTERVALS_BOOTSTRAP;
    p.bootstrap_reps = 40;
    p.seed = 11;
    p.threads = 1;
    model = fit_with(d, &p);
    CHECK_OK(hetreward_model_coefficients(model, HETREWARD_COEFFICIENTS_ALL, 0.05, rows, ROWS,
                                          &count));
    CHECK(count == ROWS);
    check_padding(rows, ROWS);
    for (j = 0; j < D1; j++) {
        float e[D1] = {0}, zero[D1] = {0};
        hetreward_reward r;
        hetreward_comparison c;
        e[j] = 1.0f;
        /* Bit-identical to the model's calibrated interval of the answer e_j ... */
        CHECK_OK(hetreward_model_score(model, e, 1, D1, 0.05, &r));
        CHECK(r.reward == rows[j].estimate && r.se == rows[j].se);
        CHECK(r.lower == rows[j].lower && r.upper == rows[j].upper);
        /* ... and to its bootstrap test against the zero answer. */
        CHECK_OK(hetreward_model_compare(model, e, zero, 1, D1, 0.05, HETREWARD_DIFF_EXACT, &c));
        CHECK(c.p_value == rows[j].p_value);
        /* A bootstrap p-value is a count over B = 40 draws. */
        CHECK(fabs(rows[j].p_value * 40.0 / 2.0 - floor(rows[j].p_value * 40.0 / 2.0 + 0.5)) <
              1e-9);
    }
    /* The Wald copy gives the paper's table. */
    CHECK_OK(hetreward_model_wald(model, &wald));
    CHECK_OK(hetreward_model_coefficients(wald, HETREWARD_COEFFICIENTS_ALL, 0.05, paper, ROWS,
                                          &count));
    CHECK_OK(hetreward_model_theta_se(model, se, D1));
    for (j = 0; j < D1; j++) {
        CHECK(paper[j].se == se[j] && paper[j].estimate == rows[j].estimate);
        CHECK(paper[j].lower != rows[j].lower);
    }
    hetreward_model_free(wald);
    hetreward_model_free(model);
}

/* One annotator (3 of 20) alone in covariate gamma[1]: the cluster jackknife cannot estimate
 * that coefficient without it, so hetreward_model_unbounded() lists it with annotator 3, and its
 * row of the coefficient table is unbounded. A Wald model lists none. */
static void check_unbounded(void) {
    test_data d = make_data(400, 11);
    hetreward_fit_params p = hetreward_fit_default_params();
    hetreward_model *model, *wald;
    hetreward_unbounded rows[3], untouched[3];
    hetreward_coefficient coef[ROWS];
    size_t i, b, count = 12345;
    for (i = 0; i < d.n; i++)
        if (d.cluster[i] != 3) d.psi[i * D2 + 1] = 0.0;
    p.intervals = HETREWARD_INTERVALS_CLUSTER_JACKKNIFE;
    p.threads = 1;
    model = fit_with(&d, &p);

    /* The size query, then the rows (padding zeroed). */
    CHECK_OK(hetreward_model_unbounded(model, NULL, 0, &count));
    CHECK(count == 1);
    memset(rows, 0xA5, sizeof rows);
    CHECK_OK(hetreward_model_unbounded(model, rows, 3, &count));
    CHECK(count == 1);
    CHECK(rows[0].block == HETREWARD_COEFFICIENTS_GAMMA && rows[0].index == 1);
    CHECK(rows[0].annotator == 3);
    for (b = offsetof(hetreward_unbounded, block) + sizeof(rows[0].block);
         b < offsetof(hetreward_unbounded, index); b++)
        CHECK(((const unsigned char *)&rows[0])[b] == 0);
    CHECK(((const unsigned char *)&rows[1])[0] == 0xA5); /* nothing past the count */

    /* A too-small array is refused, naming the size needed, with nothing written. */
    memcpy(untouched, rows, sizeof rows);
    count = 12345;
    CHECK_ERR(hetreward_model_unbounded(model, rows, 0, &count), HETREWARD_DIMENSION_MISMATCH,
              "at least 1 rows");
    CHECK(count == 12345 && memcmp(rows, untouched, sizeof rows) == 0);

    /* Its coefficient row is unbounded; the other gamma's is not. */
    CHECK_OK(hetreward_model_coefficients(model, HETREWARD_COEFFICIENTS_ALL, 0.05, coef, ROWS,
                                          &count));
    CHECK(isinf(coef[D1 + 1].se) && isinf(coef[D1 + 1].lower) && isinf(coef[D1 + 1].upper));
    CHECK(isfinite(coef[D1].se) && isfinite(coef[D1].lower) && isfinite(coef[D1].upper));

    /* The Wald copy of the same fit lists none. */
    CHECK_OK(hetreward_model_wald(model, &wald));
    CHECK_OK(hetreward_model_unbounded(wald, NULL, 0, &count));
    CHECK(count == 0);
    CHECK_OK(hetreward_model_unbounded(wald, rows, 0, &count));
    CHECK(count == 0);
    hetreward_model_free(wald);
    hetreward_model_free(model);
    free_data(&d);
}

int main(void) {
    test_data d = make_data(2000, 42);
    check_wald(&d);
    check_bootstrap(&d);
    check_unbounded();
    free_data(&d);
    printf("test_coefficients: ok\n");
    return 0;
}
