/* test_errors: every error path of hetreward.h returns its own status, names the argument
 * (and index) in the last error message, and leaves outputs and handles as they were. */
#include "common.h"

#include <stdint.h>

static hetreward_dataset *const DS_SENTINEL = (hetreward_dataset *)(uintptr_t)0x5EED;
static hetreward_model *const MODEL_SENTINEL = (hetreward_model *)(uintptr_t)0x5EED;
static hetreward_fitter *const FITTER_SENTINEL = (hetreward_fitter *)(uintptr_t)0x5EED;

static void check_status_names(void) {
    static const char *names[] = {
        "HETREWARD_OK", "HETREWARD_NULL_POINTER", "HETREWARD_INVALID_ARGUMENT",
        "HETREWARD_DIMENSION_MISMATCH", "HETREWARD_NON_FINITE",
        "HETREWARD_SINGULAR_INFORMATION", "HETREWARD_NOT_CONVERGED", "HETREWARD_IO",
        "HETREWARD_BAD_FORMAT", "HETREWARD_CANCELLED", "HETREWARD_INTERNAL"};
    uint32_t s;
    CHECK(HETREWARD_OK == 0 && HETREWARD_NULL_POINTER == 1 && HETREWARD_INVALID_ARGUMENT == 2 &&
          HETREWARD_DIMENSION_MISMATCH == 3 && HETREWARD_NON_FINITE == 4 &&
          HETREWARD_SINGULAR_INFORMATION == 5 && HETREWARD_NOT_CONVERGED == 6 &&
          HETREWARD_IO == 7 && HETREWARD_BAD_FORMAT == 8 && HETREWARD_CANCELLED == 9 &&
          HETREWARD_INTERNAL == 10);
    for (s = 0; s <= 10; s++) CHECK(strcmp(hetreward_status_name(s), names[s]) == 0);
    CHECK(strcmp(hetreward_status_name(11), "HETREWARD_UNKNOWN_STATUS") == 0);
    CHECK(strcmp(hetreward_status_name(0xFFFFFFFFu), "HETREWARD_UNKNOWN_STATUS") == 0);
}

static void check_dataset_errors(const test_data *d) {
    hetreward_dataset *ds = DS_SENTINEL;
    size_t n = d->n;
    double *z = (double *)checked_malloc(n * D1 * sizeof(double));
    double *y = (double *)checked_malloc(n * sizeof(double));
    double *psi0 = (double *)checked_malloc(n * sizeof(double));
    float zf[3 * D1];
    float f3[3] = {1.0f, 1.0f, 1.0f};
    size_t i;

    /* NULL pointers. */
    CHECK_ERR(hetreward_dataset_new(n, D1, D2, NULL, d->psi0, d->psi, d->y, NULL, &ds),
              HETREWARD_NULL_POINTER, "`z`");
    CHECK_ERR(hetreward_dataset_new(n, D1, D2, d->z, NULL, d->psi, d->y, NULL, &ds),
              HETREWARD_NULL_POINTER, "`psi0`");
    CHECK_ERR(hetreward_dataset_new(n, D1, D2, d->z, d->psi0, NULL, d->y, NULL, &ds),
              HETREWARD_NULL_POINTER, "`psi`");
    CHECK_ERR(hetreward_dataset_new(n, D1, D2, d->z, d->psi0, d->psi, NULL, NULL, &ds),
              HETREWARD_NULL_POINTER, "`y`");
    CHECK_ERR(hetreward_dataset_new(n, D1, D2, d->z, d->psi0, d->psi, d->y, NULL, NULL),
              HETREWARD_NULL_POINTER, "`out_dataset`");
    CHECK_ERR(hetreward_dataset_from_pairs(n, D1, D2, d->z, NULL, d->psi0, d->psi, d->y, NULL,
                                           &ds),
              HETREWARD_NULL_POINTER, "`phi1`");
    CHECK_ERR(hetreward_dataset_load(NULL, &ds), HETREWARD_NULL_POINTER, "`path`");
    CHECK(ds == DS_SENTINEL);

    /* Dimensions. */
    CHECK_ERR(hetreward_dataset_new(0, D1, D2, d->z, d->psi0, d->psi, d->y, NULL, &ds),
              HETREWARD_DIMENSION_MISMATCH, "samples");
    CHECK_ERR(hetreward_dataset_new(n, 0, D2, d->z, d->psi0, d->psi, d->y, NULL, &ds),
              HETREWARD_DIMENSION_MISMATCH, "d1");
    CHECK_ERR(hetreward_dataset_new(SIZE_MAX, 2, D2, d->z, d->psi0, d->psi, d->y, NULL, &ds),
              HETREWARD_DIMENSION_MISMATCH, "`z`");
    CHECK_ERR(hetreward_dataset_new(SIZE_MAX / 2, 1, 0, d->z, d->psi0, NULL, d->y, NULL, &ds),
              HETREWARD_DIMENSION_MISMATCH, "`psi0`");
    CHECK(ds == DS_SENTINEL);

    /* Non-finite values, with the flat index. */
    memcpy(z, d->z, n * D1 * sizeof(double));
    z[5] = NAN;
    CHECK_ERR(hetreward_dataset_new(n, D1, D2, z, d->psi0, d->psi, d->y, NULL, &ds),
              HETREWARD_NON_FINITE, "`z` at index 5");
    z[5] = 0.0;
    z[4 * D1 + 3] = INFINITY;
    CHECK_ERR(hetreward_dataset_new(n, D1, D2, z, d->psi0, d->psi, d->y, NULL, &ds),
              HETREWARD_NON_FINITE, "index 19");
    for (i = 0; i < 3 * D1; i++) zf[i] = 0.5f;
    zf[7] = NAN;
    CHECK_ERR(hetreward_dataset_new_f32(3, D1, 0, zf, f3, NULL, f3, NULL, &ds),
              HETREWARD_NON_FINITE, "`z` at index 7");

    /* Labels, psi0, too few samples. */
    memcpy(y, d->y, n * sizeof(double));
    y[3] = 0.5;
    CHECK_ERR(hetreward_dataset_new(n, D1, D2, d->z, d->psi0, d->psi, y, NULL, &ds),
              HETREWARD_INVALID_ARGUMENT, "y[3]");
    for (i = 0; i < n; i++) psi0[i] = 0.0;
    CHECK_ERR(hetreward_dataset_new(n, D1, D2, d->z, psi0, d->psi, d->y, NULL, &ds),
              HETREWARD_INVALID_ARGUMENT, "`psi0`");
    CHECK_ERR(hetreward_dataset_new(D1 + D2, D1, D2, d->z, d->psi0, d->psi, d->y, NULL, &ds),
              HETREWARD_INVALID_ARGUMENT, "need n > d1 + d2");
    CHECK(ds == DS_SENTINEL);
    free(z);
    free(y);
    free(psi0);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(text, f);
    CHECK(fclose(f) == 0);
}

static void check_file_errors(const hetreward_model *model) {
    hetreward_dataset *ds = DS_SENTINEL;
    hetreward_model *m = MODEL_SENTINEL;
    char csv[128], txt[128], bin[128];
    uint8_t *buf;
    size_t len = 0, small = 0;
    temp_name(csv, sizeof csv, "errors", "csv");
    temp_name(txt, sizeof txt, "errors", "txt");
    temp_name(bin, sizeof bin, "errors", "bin");

    CHECK_ERR(hetreward_dataset_load("/nonexistent/hetreward/data.csv", &ds), HETREWARD_IO,
              "/nonexistent/hetreward/data.csv");
    CHECK_ERR(hetreward_dataset_load("", &ds), HETREWARD_INVALID_ARGUMENT, "`path`");
    write_file(txt, "y,psi0,z1\n1,1,0.5\n");
    CHECK_ERR(hetreward_dataset_load(txt, &ds), HETREWARD_BAD_FORMAT, "extension");
    write_file(csv, "y,psi0\n1,1\n0,1\n");
    CHECK_ERR(hetreward_dataset_load(csv, &ds), HETREWARD_BAD_FORMAT, "z1");
    write_file(csv, "y,psi0,z1\n1,1,0.5\n0,1,oops\n1,1,0.25\n");
    CHECK_STATUS(hetreward_dataset_load(csv, &ds), HETREWARD_BAD_FORMAT);
    write_file(csv, "y,psi0,z1\n1,1,0.5\n2,1,0.1\n1,1,0.25\n");
    CHECK_ERR(hetreward_dataset_load(csv, &ds), HETREWARD_BAD_FORMAT, "y[1]");
    CHECK(ds == DS_SENTINEL);

    CHECK_ERR(hetreward_model_load("/nonexistent/hetreward/model.bin", &m), HETREWARD_IO,
              "model.bin");
    write_file(bin, "this is not a model file, just some text of a reasonable length");
    CHECK_ERR(hetreward_model_load(bin, &m), HETREWARD_BAD_FORMAT, bin);
    CHECK_ERR(hetreward_model_save(model, "/nonexistent/hetreward/model.bin"), HETREWARD_IO,
              "model.bin");
    CHECK_ERR(hetreward_model_save(model, ""), HETREWARD_INVALID_ARGUMENT, "`path`");
    CHECK_ERR(hetreward_model_save(model, NULL), HETREWARD_NULL_POINTER, "`path`");
    CHECK_ERR(hetreward_model_save(NULL, bin), HETREWARD_NULL_POINTER, "`model`");

    /* Buffers: too small, truncated, corrupted, empty, NULL. */
    CHECK_OK(hetreward_model_save_buffer(model, NULL, 0, &len));
    buf = (uint8_t *)checked_malloc(len);
    memset(buf, 0xAB, len);
    small = 12345;
    CHECK_ERR(hetreward_model_save_buffer(model, buf, len - 1, &small),
              HETREWARD_DIMENSION_MISMATCH, "buf_len");
    CHECK(small == 12345 && buf[0] == 0xAB && buf[len - 2] == 0xAB);
    CHECK_ERR(hetreward_model_save_buffer(model, buf, len, NULL), HETREWARD_NULL_POINTER,
              "`out_len`");
    CHECK_OK(hetreward_model_save_buffer(model, buf, len, &small));
    CHECK(small == len);
    CHECK_ERR(hetreward_model_load_buffer(buf, len - 7, &m), HETREWARD_BAD_FORMAT, "<buffer>");
    CHECK_STATUS(hetreward_model_load_buffer(buf, 3, &m), HETREWARD_BAD_FORMAT);
    CHECK_STATUS(hetreward_model_load_buffer(buf, 0, &m), HETREWARD_BAD_FORMAT);
    buf[len / 2] ^= 0x40;
    CHECK_ERR(hetreward_model_load_buffer(buf, len, &m), HETREWARD_BAD_FORMAT, "checksum");
    buf[len / 2] ^= 0x40;
    buf[8] = 99; /* the format version */
    CHECK_ERR(hetreward_model_load_buffer(buf, len, &m), HETREWARD_BAD_FORMAT, "version");
    CHECK_ERR(hetreward_model_load_buffer(NULL, len, &m), HETREWARD_NULL_POINTER, "`buf`");
    CHECK_ERR(hetreward_model_load_buffer(buf, len, NULL), HETREWARD_NULL_POINTER,
              "`out_model`");
    CHECK(m == MODEL_SENTINEL);
    free(buf);
    unlink(csv);
    unlink(txt);
    unlink(bin);
}

static void check_fitter_errors(const test_data *d) {
    hetreward_fit_params p;
    hetreward_fitter *f = FITTER_SENTINEL, *ok = NULL;
    hetreward_model *m = MODEL_SENTINEL;
    hetreward_dataset *ds = make_dataset(d), *no_clusters = NULL, *singular = NULL;
    hetreward_fit_report report;
    double theta0[D1] = {0.1, 0.1, 0.1, 0.1}, gamma0[D2] = {0.0, 0.0};
    double *z;
    size_t i;

    p = hetreward_fit_default_params();
    p.struct_size = sizeof p - 4; /* neither this version's size nor an older one's */
    CHECK_ERR(hetreward_fitter_new(&p, &f), HETREWARD_INVALID_ARGUMENT, "struct_size");
    p = hetreward_fit_default_params();
    p.solver = 7;
    CHECK_ERR(hetreward_fitter_new(&p, &f), HETREWARD_INVALID_ARGUMENT, "params.solver");
    p = hetreward_fit_default_params();
    p.covariance = 4;
    CHECK_ERR(hetreward_fitter_new(&p, &f), HETREWARD_INVALID_ARGUMENT, "params.covariance");
    p = hetreward_fit_default_params();
    p.init = 3;
    CHECK_ERR(hetreward_fitter_new(&p, &f), HETREWARD_INVALID_ARGUMENT, "params.init");
    p = hetreward_fit_default_params();
    p.eta1 = 0.0;
    CHECK_ERR(hetreward_fitter_new(&p, &f), HETREWARD_INVALID_ARGUMENT, "params.eta1");
    p = hetreward_fit_default_params();
    p.eta2 = INFINITY;
    CHECK_ERR(hetreward_fitter_new(&p, &f), HETREWARD_INVALID_ARGUMENT, "params.eta2");
    p = hetreward_fit_default_params();
    p.tol = NAN;
    CHECK_ERR(hetreward_fitter_new(&p, &f), HETREWARD_INVALID_ARGUMENT, "params.tol");
    p = hetreward_fit_default_params();
    p.init = HETREWARD_INIT_EXPLICIT;
    p.theta0_len = D1;
    CHECK_ERR(hetreward_fitter_new(&p, &f), HETREWARD_NULL_POINTER, "params.theta0");
    p.theta0 = theta0;
    theta0[2] = NAN;
    CHECK_ERR(hetreward_fitter_new(&p, &f), HETREWARD_NON_FINITE, "params.theta0` at index 2");
    CHECK_ERR(hetreward_fitter_new(NULL, NULL), HETREWARD_NULL_POINTER, "`out_fitter`");
    CHECK(f == FITTER_SENTINEL);

    /* Explicit starts of the wrong length are found at fit time. */
    theta0[2] = 0.1;
    p.theta0_len = D1 - 1;
    p.gamma0 = gamma0;
    p.gamma0_len = D2;
    CHECK_OK(hetreward_fitter_new(&p, &ok));
    CHECK_ERR(hetreward_fitter_fit(ok, ds, &m), HETREWARD_DIMENSION_MISMATCH, "theta0");
    hetreward_fitter_free(ok);

    CHECK_OK(hetreward_fitter_new(NULL, &ok));
    CHECK_ERR(hetreward_fitter_fit(NULL, ds, &m), HETREWARD_NULL_POINTER, "`fitter`");
    CHECK_ERR(hetreward_fitter_fit(ok, NULL, &m), HETREWARD_NULL_POINTER, "`dataset`");
    CHECK_ERR(hetreward_fitter_fit(ok, ds, NULL), HETREWARD_NULL_POINTER, "`out_model`");
    hetreward_fitter_free(ok);

    /* Non-convergence: an error only when required. */
    p = hetreward_fit_default_params();
    p.solver = HETREWARD_SOLVER_AGD;
    p.max_iter = 3;
    p.require_converged = true;
    CHECK_OK(hetreward_fitter_new(&p, &ok));
    CHECK_ERR(hetreward_fitter_fit(ok, ds, &m), HETREWARD_NOT_CONVERGED, "require_converged");
    hetreward_fitter_free(ok);
    p.require_converged = false;
    CHECK_OK(hetreward_fitter_new(&p, &ok));
    CHECK_OK(hetreward_fitter_fit(ok, ds, &m));
    CHECK_OK(hetreward_model_report(m, &report));
    CHECK(!report.converged && report.iterations >= 3); /* + the homogeneous start's */
    CHECK(report.termination == HETREWARD_TERMINATION_MAX_ITERATIONS);
    hetreward_model_free(m);
    m = MODEL_SENTINEL;
    hetreward_fitter_free(ok);

    /* Cluster covariance needs cluster ids. */
    CHECK_OK(hetreward_dataset_new(d->n, D1, D2, d->z, d->psi0, d->psi, d->y, NULL,
                                   &no_clusters));
    p = hetreward_fit_default_params();
    p.covariance = HETREWARD_COVARIANCE_CLUSTER;
    CHECK_OK(hetreward_fitter_new(&p, &ok));
    CHECK_ERR(hetreward_fitter_fit(ok, no_clusters, &m), HETREWARD_INVALID_ARGUMENT, "cluster");
    hetreward_fitter_free(ok);

    /* A feature that is always 0 carries no information about its coefficient. */
    z = (double *)checked_malloc(d->n * D1 * sizeof(double));
    memcpy(z, d->z, d->n * D1 * sizeof(double));
    for (i = 0; i < d->n; i++) z[i * D1 + 2] = 0.0;
    CHECK_OK(hetreward_dataset_new(d->n, D1, D2, z, d->psi0, d->psi, d->y, NULL, &singular));
    CHECK_OK(hetreward_fitter_new(NULL, &ok));
    CHECK_STATUS(hetreward_fitter_fit(ok, singular, &m), HETREWARD_SINGULAR_INFORMATION);
    hetreward_fitter_free(ok);
    CHECK(m == MODEL_SENTINEL);

    free(z);
    hetreward_dataset_free(singular);
    hetreward_dataset_free(no_clusters);
    hetreward_dataset_free(ds);
}

static void check_model_errors(const hetreward_model *model) {
    enum { M = 4 };
    float *phi = make_phis(M, 3);
    hetreward_reward out[M];
    hetreward_comparison cmp[M];
    hetreward_candidate cand[M];
    double vec[D1 + 1], pen[M] = {0.0, 0.0, 0.0, 0.0}, psi[D2] = {1.0, 0.0};
    double sigma = -7.0, se = -7.0;
    hetreward_fit_report report;
    size_t i, index = 777;
    for (i = 0; i < M; i++) out[i].reward = out[i].se = out[i].lower = out[i].upper = -7.0;

    /* Accessors. */
    CHECK_ERR(hetreward_model_theta(NULL, vec, D1), HETREWARD_NULL_POINTER, "`model`");
    CHECK_ERR(hetreward_model_theta(model, vec, D1 + 1), HETREWARD_DIMENSION_MISMATCH, "`len`");
    CHECK_ERR(hetreward_model_gamma(model, vec, D1), HETREWARD_DIMENSION_MISMATCH, "`len`");
    CHECK_ERR(hetreward_model_theta_se(model, NULL, D1), HETREWARD_NULL_POINTER, "out_values");
    CHECK_ERR(hetreward_model_gamma_se(NULL, vec, D2), HETREWARD_NULL_POINTER, "`model`");
    CHECK_ERR(hetreward_model_report(model, NULL), HETREWARD_NULL_POINTER, "`out_report`");
    CHECK_ERR(hetreward_model_report(NULL, &report), HETREWARD_NULL_POINTER, "`model`");

    /* Scoring. */
    CHECK_ERR(hetreward_model_score(NULL, phi, M, D1, 0.05, out), HETREWARD_NULL_POINTER,
              "`model`");
    CHECK_ERR(hetreward_model_score(model, NULL, M, D1, 0.05, out), HETREWARD_NULL_POINTER,
              "`phi`");
    CHECK_ERR(hetreward_model_score(model, phi, M, D1, 0.05, NULL), HETREWARD_NULL_POINTER,
              "`out_rewards`");
    CHECK_ERR(hetreward_model_score(model, phi, M, D1 - 1, 0.05, out),
              HETREWARD_DIMENSION_MISMATCH, "`d1`");
    CHECK_ERR(hetreward_model_score(model, phi, SIZE_MAX, D1, 0.05, out),
              HETREWARD_DIMENSION_MISMATCH, "`phi`");
    CHECK_ERR(hetreward_model_score(model, phi, M, D1, 0.0, out), HETREWARD_INVALID_ARGUMENT,
              "`alpha`");
    CHECK_ERR(hetreward_model_score(model, phi, M, D1, 1.0, out), HETREWARD_INVALID_ARGUMENT,
              "`alpha`");
    CHECK_ERR(hetreward_model_score(model, phi, M, D1, NAN, out), HETREWARD_INVALID_ARGUMENT,
              "`alpha`");
    phi[D1 + 2] = NAN;
    CHECK_ERR(hetreward_model_score(model, phi, M, D1, 0.05, out), HETREWARD_NON_FINITE,
              "`phi` at index 6");
    for (i = 0; i < M; i++) CHECK(out[i].reward == -7.0 && out[i].upper == -7.0);

    /* Comparisons. */
    CHECK_ERR(hetreward_model_compare(model, phi, phi, M, D1, 0.05, HETREWARD_DIFF_EXACT, cmp),
              HETREWARD_NON_FINITE, "`phi0` at index 6");
    phi[D1 + 2] = 0.5f;
    CHECK_ERR(hetreward_model_compare(model, phi, NULL, M, D1, 0.05, HETREWARD_DIFF_EXACT, cmp),
              HETREWARD_NULL_POINTER, "`phi1`");
    CHECK_ERR(hetreward_model_compare(model, phi, phi, M, D1, 0.05, 3, cmp),
              HETREWARD_INVALID_ARGUMENT, "`method`");
    CHECK_ERR(hetreward_model_compare(model, phi, phi, M, D1, -1.0, HETREWARD_DIFF_EXACT, cmp),
              HETREWARD_INVALID_ARGUMENT, "`alpha`");
    CHECK_ERR(hetreward_model_compare(model, phi, phi, M, D1 + 1, 0.05, HETREWARD_DIFF_EXACT, cmp),
              HETREWARD_DIMENSION_MISMATCH, "`d1`");
    CHECK_ERR(hetreward_model_compare(model, phi, phi, M, D1, 0.05, HETREWARD_DIFF_BOUND, NULL),
              HETREWARD_NULL_POINTER, "`out_comparisons`");

    /* Selection. */
    CHECK_ERR(hetreward_model_select(model, phi, 0, D1, NULL, 0.05, HETREWARD_POLICY_PBON, &index,
                                     NULL),
              HETREWARD_DIMENSION_MISMATCH, "candidate");
    CHECK_ERR(hetreward_model_select(model, phi, M, D1, NULL, 0.05, 2, &index, NULL),
              HETREWARD_INVALID_ARGUMENT, "`policy`");
    CHECK_ERR(hetreward_model_select(model, phi, M, D1, NULL, 0.05, HETREWARD_POLICY_BON, NULL,
                                     cand),
              HETREWARD_NULL_POINTER, "`out_index`");
    pen[2] = -INFINITY;
    CHECK_ERR(hetreward_model_select(model, phi, M, D1, pen, 0.05, HETREWARD_POLICY_BON, &index,
                                     cand),
              HETREWARD_NON_FINITE, "`penalty` at index 2");
    phi[0] = INFINITY;
    CHECK_ERR(hetreward_model_select(model, phi, M, D1, NULL, 0.05, HETREWARD_POLICY_BON, &index,
                                     cand),
              HETREWARD_NON_FINITE, "`phi` at index 0");
    CHECK_ERR(hetreward_model_select(model, phi, M, D1, NULL, 1.5, HETREWARD_POLICY_PBON, &index,
                                     cand),
              HETREWARD_INVALID_ARGUMENT, "`alpha`");
    CHECK(index == 777);

    /* Rationality. */
    CHECK_ERR(hetreward_model_rationality(model, 1.0, psi, D2 + 1, &sigma, &se),
              HETREWARD_DIMENSION_MISMATCH, "`d2`");
    CHECK_ERR(hetreward_model_rationality(model, 1.0, NULL, D2, &sigma, &se),
              HETREWARD_NULL_POINTER, "`psi`");
    CHECK_ERR(hetreward_model_rationality(model, NAN, psi, D2, &sigma, &se), HETREWARD_NON_FINITE,
              "`psi0`");
    psi[1] = INFINITY;
    CHECK_ERR(hetreward_model_rationality(model, 1.0, psi, D2, &sigma, &se), HETREWARD_NON_FINITE,
              "`psi` at index 1");
    psi[1] = 0.0;
    CHECK_ERR(hetreward_model_rationality(model, 1.0, psi, D2, NULL, &se),
              HETREWARD_NULL_POINTER, "`out_sigma`");
    CHECK_ERR(hetreward_model_rationality(model, 1.0, psi, D2, &sigma, NULL),
              HETREWARD_NULL_POINTER, "`out_se`");
    CHECK(sigma == -7.0 && se == -7.0);

    /* After all these failures the model is intact and a success clears the message. */
    phi[0] = 0.5f;
    CHECK_OK(hetreward_model_score(model, phi, M, D1, 0.05, out));
    CHECK(strcmp(hetreward_last_error_message(), "") == 0);
    for (i = 0; i < M; i++) CHECK(out[i].se > 0.0);
    free(phi);
}

int main(void) {
    test_data d = make_data(400, 9);
    hetreward_model *model;
    check_status_names();
    check_dataset_errors(&d);
    model = fit_with(&d, NULL);
    check_file_errors(model);
    check_fitter_errors(&d);
    check_model_errors(model);
    hetreward_model_free(model);
    free_data(&d);
    printf("test_errors: ok\n");
    return 0;
}
