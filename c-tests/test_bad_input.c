/* test_bad_input: the bad-input matrix of the C API (docs/contract.md §8).
 *
 * For every exported function and every argument: NULL, zero and mismatched dimensions,
 * NaN/Inf in each array, labels not in {0,1}, psi0 all zero or in the span of psi, n too small,
 * alpha outside (0, 1), non-finite penalties, a model used with the wrong d1, damaged files.
 * Each case checks
 *   - the status code,
 *   - that hetreward_last_error_message() names the argument (and the index, where there is one),
 *   - that the out-parameters were not written,
 *   - that the handles involved still work afterwards: the model scores bit-identically to
 *     before, the dataset and fitter fit again to the same estimate.
 *
 * The cases are also the documentation: the test renders them as a Markdown table and compares
 * it with the table in docs/errors.md (between the c-api markers); a difference fails the test.
 * HETREWARD_BLESS=1 rewrites the table instead. */
#include "common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef HETREWARD_ERRORS_DOC
#error "HETREWARD_ERRORS_DOC (path of docs/errors.md) must be defined by the build"
#endif

#define N 200
#define M 8

static hetreward_dataset *const DS_SENTINEL = (hetreward_dataset *)(uintptr_t)0x5EED;
static hetreward_model *const MODEL_SENTINEL = (hetreward_model *)(uintptr_t)0x5EED;
static hetreward_fitter *const FITTER_SENTINEL = (hetreward_fitter *)(uintptr_t)0x5EED;

/* ---- the state every case is checked against ------------------------------------------- */

static test_data data;              /* the training arrays (valid) */
static hetreward_dataset *dataset;  /* built from them */
static hetreward_fitter *fitter;    /* default params */
static hetreward_model *model;      /* fitted from them */
static double base_theta[D1];       /* its estimate */
static float *phi;                  /* M x D1 valid answers */
static hetreward_reward base_rewards[M];

/* Outputs of the failing calls: they must keep these sentinel values. */
static hetreward_dataset *out_ds;
static hetreward_fitter *out_fitter;
static hetreward_model *out_model;
static double out_values[D1 + D2 + 2];
static hetreward_reward out_rewards[M];
static hetreward_comparison out_cmp[M];
static hetreward_candidate out_cand[M];
static hetreward_fit_report out_report;
static hetreward_coefficient out_coef[D1 + D2];
static hetreward_unbounded out_unbounded[D1 + D2];
static size_t out_index, out_len;
static double out_sigma, out_se;
static double out_effective[D1 + D2];
static hetreward_heterogeneity out_het;

static void reset_outputs(void) {
    size_t i;
    out_ds = DS_SENTINEL;
    out_fitter = FITTER_SENTINEL;
    out_model = MODEL_SENTINEL;
    for (i = 0; i < sizeof out_values / sizeof out_values[0]; i++) out_values[i] = -7.0;
    memset(out_rewards, 0x5A, sizeof out_rewards);
    memset(out_cmp, 0x5A, sizeof out_cmp);
    memset(out_cand, 0x5A, sizeof out_cand);
    memset(&out_report, 0x5A, sizeof out_report);
    memset(out_coef, 0x5A, sizeof out_coef);
    memset(out_unbounded, 0x5A, sizeof out_unbounded);
    out_index = 777;
    out_len = 777;
    out_sigma = out_se = -7.0;
    for (i = 0; i < D1 + D2; i++) out_effective[i] = -7.0;
    memset(&out_het, 0x5A, sizeof out_het);
}

static int outputs_untouched(void) {
    unsigned char pattern[sizeof out_cand > sizeof out_coef ? sizeof out_cand : sizeof out_coef];
    (void)sizeof(char[sizeof out_unbounded <= sizeof pattern ? 1 : -1]);
    size_t i;
    memset(pattern, 0x5A, sizeof pattern);
    for (i = 0; i < sizeof out_values / sizeof out_values[0]; i++)
        if (out_values[i] != -7.0) return 0;
    for (i = 0; i < D1 + D2; i++)
        if (out_effective[i] != -7.0) return 0;
    if (memcmp(&out_het, pattern, sizeof out_het) != 0) return 0;
    return out_ds == DS_SENTINEL && out_fitter == FITTER_SENTINEL && out_model == MODEL_SENTINEL &&
           memcmp(out_rewards, pattern, sizeof out_rewards) == 0 &&
           memcmp(out_cmp, pattern, sizeof out_cmp) == 0 &&
           memcmp(out_cand, pattern, sizeof out_cand) == 0 &&
           memcmp(&out_report, pattern, sizeof out_report) == 0 &&
           memcmp(out_coef, pattern, sizeof out_coef) == 0 &&
           memcmp(out_unbounded, pattern, sizeof out_unbounded) == 0 && out_index == 777 &&
           out_len == 777 && out_sigma == -7.0 && out_se == -7.0;
}

/* The model answers exactly as before; the dataset is unchanged. */
static void check_model_and_dataset(void) {
    hetreward_reward again[M];
    CHECK_OK(hetreward_model_score(model, phi, M, D1, 0.05, again));
    CHECK(memcmp(again, base_rewards, sizeof again) == 0);
    CHECK(hetreward_dataset_n(dataset) == N && hetreward_dataset_d1(dataset) == D1 &&
          hetreward_dataset_d2(dataset) == D2);
}

/* The dataset and the default fitter still fit, to the same estimate. */
static void check_fit_again(void) {
    hetreward_model *m = NULL;
    double theta[D1];
    CHECK_OK(hetreward_fitter_fit(fitter, dataset, &m));
    CHECK_OK(hetreward_model_theta(m, theta, D1));
    CHECK(memcmp(theta, base_theta, sizeof theta) == 0);
    hetreward_model_free(m);
}

/* ---- the table --------------------------------------------------------------------------- */

static char *table;
static size_t table_len, table_cap;
static int n_cases;

static void append(const char *fmt, ...) {
    va_list ap;
    int k;
    for (;;) {
        va_start(ap, fmt);
        k = vsnprintf(table + table_len, table_cap - table_len, fmt, ap);
        va_end(ap);
        CHECK(k >= 0);
        if (table_len + (size_t)k < table_cap) break;
        table_cap = 2 * (table_len + (size_t)k + 1024);
        table = (char *)realloc(table, table_cap);
        CHECK(table != NULL);
    }
    table_len += (size_t)k;
}

/* Appends `s` with Markdown's table delimiter escaped. With `mask`, every number becomes `#`:
 * for messages that report numerical results (singular information, non-convergence), whose
 * digits move with any change of the solver and are not part of the contract. */
static void append_cell_masked(const char *s, int mask) {
    for (; *s; s++) {
        if (*s == '|') append("\\|");
        else if (*s == '\n') append(" ");
        else if (mask && *s >= '0' && *s <= '9') {
            append("#");
            while ((s[1] >= '0' && s[1] <= '9') || s[1] == '.' || s[1] == 'e' ||
                   ((s[1] == '-' || s[1] == '+') && s[0] == 'e'))
                s++;
        } else append("%c", *s);
    }
}

static void append_cell(const char *s) {
    append_cell_masked(s, 0);
}

static const char *current_function = "";

static void function_header(const char *name) {
    current_function = name;
}

/* Records one case: checks the status and the message, then that nothing was written and the
 * handles still work. `needles` are '\x1f'-separated substrings the message must contain. */
static void record(int line, const char *argument, const char *condition, hetreward_status got,
                   hetreward_status expected, const char *needles) {
    const char *msg = hetreward_last_error_message();
    char buf[512];
    const char *p = needles;
    if (got != expected) {
        fprintf(stderr, "test_bad_input.c:%d: %s(%s: %s) returned %s, expected %s (\"%s\")\n",
                line, current_function, argument, condition, hetreward_status_name(got),
                hetreward_status_name(expected), msg);
        exit(1);
    }
    while (*p) {
        size_t k = strcspn(p, "\x1f");
        CHECK(k < sizeof buf);
        memcpy(buf, p, k);
        buf[k] = '\0';
        if (strstr(msg, buf) == NULL) {
            fprintf(stderr, "test_bad_input.c:%d: %s(%s: %s): message \"%s\" lacks \"%s\"\n",
                    line, current_function, argument, condition, msg, buf);
            exit(1);
        }
        p += k;
        if (*p) p++;
    }
    if (expected != HETREWARD_OK) {
        if (!outputs_untouched()) {
            fprintf(stderr, "test_bad_input.c:%d: %s(%s: %s) wrote an output on failure\n", line,
                    current_function, argument, condition);
            exit(1);
        }
        CHECK(strlen(msg) > 0);
    }
    n_cases++;
    append("| %d | `%s` | `%s` | ", n_cases, current_function, argument);
    append_cell(condition);
    append(" | %s | ", hetreward_status_name(got));
    append_cell_masked(expected == HETREWARD_OK ? "(succeeds)" : msg,
                       expected == HETREWARD_SINGULAR_INFORMATION ||
                           expected == HETREWARD_NOT_CONVERGED);
    append(" |\n");
    check_model_and_dataset();
    /* After a success the caller frees what was made and resets the outputs. */
    if (expected != HETREWARD_OK) reset_outputs();
}

/* A case of a function that cannot fail (accessor, free, cancel): what it does instead. */
static void record_value(const char *argument, const char *condition, int ok, const char *what) {
    CHECK(ok);
    n_cases++;
    append("| %d | `%s` | `%s` | ", n_cases, current_function, argument);
    append_cell(condition);
    append(" | — | ");
    append_cell(what);
    append(" |\n");
    check_model_and_dataset();
}

#define CASE(argument, condition, expected, needles, call) \
    record(__LINE__, argument, condition, (call), expected, needles)
#define SEP "\x1f"
/* A hetreward_fitter_new case with the default params changed by `assignment` (`p` is the
 * caller's hetreward_fit_params variable). */
#define PARAMS_CASE(arg, cond, expected, needle, assignment)       \
    do {                                                           \
        p = hetreward_fit_default_params();                        \
        assignment;                                                \
        CASE(arg, cond, expected, needle, hetreward_fitter_new(&p, &out_fitter)); \
    } while (0)

/* ---- helpers for files ------------------------------------------------------------------- */

static void write_bytes(const char *path, const void *bytes, size_t len) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    CHECK(fwrite(bytes, 1, len, f) == len);
    CHECK(fclose(f) == 0);
}

static void write_text(const char *path, const char *text) {
    write_bytes(path, text, strlen(text));
}

/* A safetensors file: 8-byte little-endian header length, the JSON header, the data. */
static void write_safetensors(const char *path, const char *json, const void *bytes, size_t len) {
    size_t hlen = strlen(json), i;
    unsigned char *buf = (unsigned char *)checked_malloc(8 + hlen + len + 1);
    for (i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    memcpy(buf + 8, json, hlen);
    if (len) memcpy(buf + 8 + hlen, bytes, len);
    write_bytes(path, buf, 8 + hlen + len);
    free(buf);
}

/* The valid training set as CSV text with `patch` applied to row 2 (0-based data row). */
static void write_training_csv(const char *path, size_t rows, const char *row2) {
    FILE *f = fopen(path, "w");
    size_t i, j;
    CHECK(f != NULL);
    fprintf(f, "y,psi0,z1,z2,z3,z4,psi1,psi2\n");
    for (i = 0; i < rows; i++) {
        if (i == 2 && row2 != NULL) {
            fprintf(f, "%s\n", row2);
            continue;
        }
        fprintf(f, "%g,%g", data.y[i], data.psi0[i]);
        for (j = 0; j < D1; j++) fprintf(f, ",%.17g", data.z[i * D1 + j]);
        for (j = 0; j < D2; j++) fprintf(f, ",%g", data.psi[i * D2 + j]);
        fprintf(f, "\n");
    }
    CHECK(fclose(f) == 0);
}

/* ---- the cases ----------------------------------------------------------------------------- */

typedef hetreward_status (*dataset_ctor)(size_t, size_t, size_t, const double *, const double *,
                                         const double *, const double *, const int64_t *,
                                         hetreward_dataset **);

static void dataset_cases(void) {
    double *z = (double *)checked_malloc(N * D1 * sizeof(double));
    double *psi0 = (double *)checked_malloc(N * sizeof(double));
    double *psi = (double *)checked_malloc(N * D2 * sizeof(double));
    double *y = (double *)checked_malloc(N * sizeof(double));
    float *zf = (float *)checked_malloc(N * D1 * sizeof(float));
    float *psi0f = (float *)checked_malloc(N * sizeof(float));
    float *psif = (float *)checked_malloc(N * D2 * sizeof(float));
    float *yf = (float *)checked_malloc(N * sizeof(float));
    size_t i;
#define RESTORE()                                             \
    do {                                                      \
        memcpy(z, data.z, N * D1 * sizeof(double));           \
        memcpy(psi0, data.psi0, N * sizeof(double));          \
        memcpy(psi, data.psi, N * D2 * sizeof(double));       \
        memcpy(y, data.y, N * sizeof(double));                \
        for (i = 0; i < N * D1; i++) zf[i] = (float)data.z[i]; \
        for (i = 0; i < N; i++) psi0f[i] = (float)data.psi0[i]; \
        for (i = 0; i < N * D2; i++) psif[i] = (float)data.psi[i]; \
        for (i = 0; i < N; i++) yf[i] = (float)data.y[i];     \
    } while (0)
#define NEW(...) hetreward_dataset_new(__VA_ARGS__)
    RESTORE();

    function_header("hetreward_dataset_new");
    CASE("out_dataset", "NULL", HETREWARD_NULL_POINTER, "`out_dataset`",
         NEW(N, D1, D2, z, psi0, psi, y, NULL, NULL));
    CASE("n", "0", HETREWARD_DIMENSION_MISMATCH, "`n`" SEP "at least one sample",
         NEW(0, D1, D2, z, psi0, psi, y, NULL, &out_ds));
    CASE("n", "n = d1 + d2 (fewer samples than parameters + 1)", HETREWARD_INVALID_ARGUMENT,
         "`n`" SEP "need n > d1 + d2", NEW(D1 + D2, D1, D2, z, psi0, psi, y, NULL, &out_ds));
    CASE("n", "n = 1", HETREWARD_INVALID_ARGUMENT, "`n`" SEP "1 samples",
         NEW(1, D1, D2, z, psi0, psi, y, NULL, &out_ds));
    CASE("n, d1", "n * d1 overflows size_t", HETREWARD_DIMENSION_MISMATCH, "`z`",
         NEW(SIZE_MAX / 2, 3, D2, z, psi0, psi, y, NULL, &out_ds));
    CASE("n", "SIZE_MAX / 2 with d1 = 1, d2 = 0 (array larger than memory)",
         HETREWARD_DIMENSION_MISMATCH, "`psi0`" SEP "fits in memory",
         NEW(SIZE_MAX / 2, 1, 0, z, psi0, NULL, y, NULL, &out_ds));
    CASE("d1", "0", HETREWARD_DIMENSION_MISMATCH, "`d1`",
         NEW(N, 0, D2, z, psi0, psi, y, NULL, &out_ds));
    CASE("d2", "0 with psi = NULL (no covariates)", HETREWARD_OK, "",
         NEW(N, D1, 0, z, psi0, NULL, y, NULL, &out_ds));
    hetreward_dataset_free(out_ds);
    reset_outputs();
    CASE("z", "NULL", HETREWARD_NULL_POINTER, "`z`",
         NEW(N, D1, D2, NULL, psi0, psi, y, NULL, &out_ds));
    z[5] = NAN;
    CASE("z", "NaN at [1][1]", HETREWARD_NON_FINITE, "`z` at index 5",
         NEW(N, D1, D2, z, psi0, psi, y, NULL, &out_ds));
    z[5] = data.z[5];
    z[N * D1 - 1] = INFINITY;
    CASE("z", "+Inf at the last element", HETREWARD_NON_FINITE, "`z` at index 799",
         NEW(N, D1, D2, z, psi0, psi, y, NULL, &out_ds));
    z[N * D1 - 1] = -INFINITY;
    CASE("z", "-Inf at the last element", HETREWARD_NON_FINITE, "-inf" SEP "index 799",
         NEW(N, D1, D2, z, psi0, psi, y, NULL, &out_ds));
    RESTORE();
    CASE("psi0", "NULL", HETREWARD_NULL_POINTER, "`psi0`",
         NEW(N, D1, D2, z, NULL, psi, y, NULL, &out_ds));
    psi0[17] = NAN;
    CASE("psi0", "NaN at [17]", HETREWARD_NON_FINITE, "`psi0` at index 17",
         NEW(N, D1, D2, z, psi0, psi, y, NULL, &out_ds));
    psi0[17] = INFINITY;
    CASE("psi0", "+Inf at [17]", HETREWARD_NON_FINITE, "`psi0` at index 17",
         NEW(N, D1, D2, z, psi0, psi, y, NULL, &out_ds));
    for (i = 0; i < N; i++) psi0[i] = 0.0;
    CASE("psi0", "all zero", HETREWARD_INVALID_ARGUMENT, "`psi0`" SEP "identically zero",
         NEW(N, D1, D2, z, psi0, psi, y, NULL, &out_ds));
    for (i = 0; i < N; i++) psi0[i] = 2.0 * data.psi[i * D2 + 0] - data.psi[i * D2 + 1];
    CASE("psi0", "in the span of psi (psi0 = 2 psi[:,0] - psi[:,1]: unidentifiable)",
         HETREWARD_INVALID_ARGUMENT, "`psi0`" SEP "linear combination of the columns of psi",
         NEW(N, D1, D2, z, psi0, psi, y, NULL, &out_ds));
    RESTORE();
    CASE("psi", "NULL with d2 > 0", HETREWARD_NULL_POINTER, "`psi`",
         NEW(N, D1, D2, z, psi0, NULL, y, NULL, &out_ds));
    psi[2 * D2 + 1] = NAN;
    CASE("psi", "NaN at [2][1]", HETREWARD_NON_FINITE, "`psi` at index 5",
         NEW(N, D1, D2, z, psi0, psi, y, NULL, &out_ds));
    psi[2 * D2 + 1] = -INFINITY;
    CASE("psi", "-Inf at [2][1]", HETREWARD_NON_FINITE, "`psi` at index 5",
         NEW(N, D1, D2, z, psi0, psi, y, NULL, &out_ds));
    RESTORE();
    CASE("y", "NULL", HETREWARD_NULL_POINTER, "`y`",
         NEW(N, D1, D2, z, psi0, psi, NULL, NULL, &out_ds));
    y[3] = NAN;
    CASE("y", "NaN at [3]", HETREWARD_NON_FINITE, "`y` at index 3",
         NEW(N, D1, D2, z, psi0, psi, y, NULL, &out_ds));
    y[3] = INFINITY;
    CASE("y", "+Inf at [3]", HETREWARD_NON_FINITE, "`y` at index 3",
         NEW(N, D1, D2, z, psi0, psi, y, NULL, &out_ds));
    y[3] = 0.5;
    CASE("y", "0.5 at [3] (labels must be 0 or 1)", HETREWARD_INVALID_ARGUMENT, "y[3] = 0.5",
         NEW(N, D1, D2, z, psi0, psi, y, NULL, &out_ds));
    y[3] = 2.0;
    CASE("y", "2 at [3]", HETREWARD_INVALID_ARGUMENT, "y[3] = 2",
         NEW(N, D1, D2, z, psi0, psi, y, NULL, &out_ds));
    y[3] = -1.0;
    CASE("y", "-1 at [3]", HETREWARD_INVALID_ARGUMENT, "y[3] = -1",
         NEW(N, D1, D2, z, psi0, psi, y, NULL, &out_ds));
    RESTORE();
    CASE("cluster", "NULL (optional: no cluster ids)", HETREWARD_OK, "",
         NEW(N, D1, D2, z, psi0, psi, y, NULL, &out_ds));
    hetreward_dataset_free(out_ds);
    reset_outputs();

    function_header("hetreward_dataset_new_f32");
    CASE("z", "NULL", HETREWARD_NULL_POINTER, "`z`",
         hetreward_dataset_new_f32(N, D1, D2, NULL, psi0f, psif, yf, NULL, &out_ds));
    zf[7] = NAN;
    CASE("z", "NaN at [1][3]", HETREWARD_NON_FINITE, "`z` at index 7",
         hetreward_dataset_new_f32(N, D1, D2, zf, psi0f, psif, yf, NULL, &out_ds));
    RESTORE();
    psi0f[0] = INFINITY;
    CASE("psi0", "+Inf at [0]", HETREWARD_NON_FINITE, "`psi0` at index 0",
         hetreward_dataset_new_f32(N, D1, D2, zf, psi0f, psif, yf, NULL, &out_ds));
    RESTORE();
    psif[1] = NAN;
    CASE("psi", "NaN at [0][1]", HETREWARD_NON_FINITE, "`psi` at index 1",
         hetreward_dataset_new_f32(N, D1, D2, zf, psi0f, psif, yf, NULL, &out_ds));
    RESTORE();
    yf[9] = 3.0f;
    CASE("y", "3 at [9]", HETREWARD_INVALID_ARGUMENT, "y[9] = 3",
         hetreward_dataset_new_f32(N, D1, D2, zf, psi0f, psif, yf, NULL, &out_ds));
    RESTORE();
    CASE("out_dataset", "NULL", HETREWARD_NULL_POINTER, "`out_dataset`",
         hetreward_dataset_new_f32(N, D1, D2, zf, psi0f, psif, yf, NULL, NULL));

    function_header("hetreward_dataset_from_pairs");
    /* phi1 = z, phi0 = 0 reproduces the dataset. */
    {
        double *zero = (double *)calloc(N * D1, sizeof(double));
        CHECK(zero != NULL);
        CASE("phi0", "NULL", HETREWARD_NULL_POINTER, "`phi0`",
             hetreward_dataset_from_pairs(N, D1, D2, NULL, z, psi0, psi, y, NULL, &out_ds));
        CASE("phi1", "NULL", HETREWARD_NULL_POINTER, "`phi1`",
             hetreward_dataset_from_pairs(N, D1, D2, zero, NULL, psi0, psi, y, NULL, &out_ds));
        zero[11] = NAN;
        CASE("phi0", "NaN at [2][3]", HETREWARD_NON_FINITE, "`phi0` at index 11",
             hetreward_dataset_from_pairs(N, D1, D2, zero, z, psi0, psi, y, NULL, &out_ds));
        zero[11] = 0.0;
        z[12] = -INFINITY;
        CASE("phi1", "-Inf at [3][0]", HETREWARD_NON_FINITE, "`phi1` at index 12",
             hetreward_dataset_from_pairs(N, D1, D2, zero, z, psi0, psi, y, NULL, &out_ds));
        RESTORE();
        CASE("n", "0", HETREWARD_DIMENSION_MISMATCH, "at least one sample",
             hetreward_dataset_from_pairs(0, D1, D2, zero, z, psi0, psi, y, NULL, &out_ds));
        y[0] = 7.0;
        CASE("y", "7 at [0]", HETREWARD_INVALID_ARGUMENT, "y[0] = 7",
             hetreward_dataset_from_pairs(N, D1, D2, zero, z, psi0, psi, y, NULL, &out_ds));
        RESTORE();
        CASE("out_dataset", "NULL", HETREWARD_NULL_POINTER, "`out_dataset`",
             hetreward_dataset_from_pairs(N, D1, D2, zero, z, psi0, psi, y, NULL, NULL));
        CASE("(all)", "valid: phi1 - phi0 = z", HETREWARD_OK, "",
             hetreward_dataset_from_pairs(N, D1, D2, zero, z, psi0, psi, y, NULL, &out_ds));
        hetreward_dataset_free(out_ds);
        reset_outputs();
        free(zero);
    }

    function_header("hetreward_dataset_from_pairs_f32");
    {
        float *zero = (float *)calloc(N * D1, sizeof(float));
        CHECK(zero != NULL);
        CASE("phi0", "NULL", HETREWARD_NULL_POINTER, "`phi0`",
             hetreward_dataset_from_pairs_f32(N, D1, D2, NULL, zf, psi0f, psif, yf, NULL,
                                              &out_ds));
        zf[4] = INFINITY;
        CASE("phi1", "+Inf at [1][0]", HETREWARD_NON_FINITE, "`phi1` at index 4",
             hetreward_dataset_from_pairs_f32(N, D1, D2, zero, zf, psi0f, psif, yf, NULL,
                                              &out_ds));
        RESTORE();
        for (i = 0; i < N; i++) psi0f[i] = 0.0f;
        CASE("psi0", "all zero", HETREWARD_INVALID_ARGUMENT, "identically zero",
             hetreward_dataset_from_pairs_f32(N, D1, D2, zero, zf, psi0f, psif, yf, NULL,
                                              &out_ds));
        RESTORE();
        free(zero);
    }
#undef NEW
#undef RESTORE
    free(z);
    free(psi0);
    free(psi);
    free(y);
    free(zf);
    free(psi0f);
    free(psif);
    free(yf);
}

static void dataset_file_cases(void) {
    static const char *csv = "bad_input.csv";
    double three[3] = {1.0, 0.0, 1.0};
    double zz[3 * 2] = {0.5, -1.0, 0.25, 1.0, -0.5, 2.0};

    function_header("hetreward_dataset_load");
    CASE("path", "NULL", HETREWARD_NULL_POINTER, "`path`", hetreward_dataset_load(NULL, &out_ds));
    CASE("path", "\"\" (empty)", HETREWARD_INVALID_ARGUMENT, "`path`" SEP "empty",
         hetreward_dataset_load("", &out_ds));
    CASE("path", "file does not exist", HETREWARD_IO,
         "bad_input_missing.csv" SEP "No such file",
         hetreward_dataset_load("bad_input_missing.csv", &out_ds));
    CHECK(mkdir("bad_input_dir.csv", 0700) == 0 || errno == EEXIST);
    CASE("path", "a directory", HETREWARD_IO, "bad_input_dir.csv",
         hetreward_dataset_load("bad_input_dir.csv", &out_ds));
    write_text("bad_input.txt", "y,psi0,z1\n1,1,0.5\n");
    CASE("path", "unknown extension (.txt)", HETREWARD_BAD_FORMAT,
         "bad_input.txt" SEP "unknown file type", hetreward_dataset_load("bad_input.txt", &out_ds));
    write_training_csv(csv, N, NULL);
    CASE("out_dataset", "NULL", HETREWARD_NULL_POINTER, "`out_dataset`",
         hetreward_dataset_load(csv, NULL));
    CASE("path", "valid CSV", HETREWARD_OK, "", hetreward_dataset_load(csv, &out_ds));
    hetreward_dataset_free(out_ds);
    reset_outputs();

    write_text(csv, "");
    CASE("file", "CSV: empty file", HETREWARD_BAD_FORMAT, csv, hetreward_dataset_load(csv, &out_ds));
    write_text(csv, "y,psi0\n1,1\n0,1\n");
    CASE("file", "CSV: no z1 column", HETREWARD_BAD_FORMAT, "`z1`",
         hetreward_dataset_load(csv, &out_ds));
    write_text(csv, "psi0,z1\n1,0.5\n1,-0.5\n1,0.25\n");
    CASE("file", "CSV: no y column", HETREWARD_BAD_FORMAT, "missing column `y`",
         hetreward_dataset_load(csv, &out_ds));
    write_text(csv, "y,psi0,z1,z2,extra\n1,1,0.5,1,0\n0,1,-0.5,2,0\n1,1,0.25,3,0\n");
    CASE("file", "CSV: unknown column", HETREWARD_BAD_FORMAT, "unexpected column `extra`",
         hetreward_dataset_load(csv, &out_ds));
    write_training_csv(csv, N, "1,1,0.5,abc,0.1,0.2,0,1");
    CASE("file", "CSV: a field that is not a number", HETREWARD_BAD_FORMAT,
         "column `z2`, data row 3" SEP "`abc`", hetreward_dataset_load(csv, &out_ds));
    write_training_csv(csv, N, "1,1,0.5,nan,0.1,0.2,0,1");
    CASE("file", "CSV: NaN", HETREWARD_BAD_FORMAT, "column `z2`, data row 3" SEP "non-finite",
         hetreward_dataset_load(csv, &out_ds));
    write_training_csv(csv, N, "1,inf,0.5,0.1,0.1,0.2,0,1");
    CASE("file", "CSV: Inf", HETREWARD_BAD_FORMAT, "column `psi0`, data row 3",
         hetreward_dataset_load(csv, &out_ds));
    write_training_csv(csv, N, "1,1,0.5,0.1");
    CASE("file", "CSV: a short (ragged) row", HETREWARD_BAD_FORMAT, "data row 3",
         hetreward_dataset_load(csv, &out_ds));
    write_training_csv(csv, N, "2,1,0.5,0.1,0.1,0.2,0,1");
    CASE("file", "CSV: label 2", HETREWARD_BAD_FORMAT, "y[2] = 2",
         hetreward_dataset_load(csv, &out_ds));
    write_text(csv, "y,psi0,z1,z2\n1,0,0.5,1\n0,0,-0.5,2\n1,0,0.25,3\n");
    CASE("file", "CSV: psi0 all zero", HETREWARD_BAD_FORMAT, "`psi0`" SEP "identically zero",
         hetreward_dataset_load(csv, &out_ds));
    write_text(csv, "y,psi0,z1,z2,psi1\n1,1,0.5,1,1\n0,1,-0.5,2,1\n1,1,0.25,3,1\n0,1,1,1,1\n");
    CASE("file", "CSV: psi0 in the span of psi (psi1 = psi0)", HETREWARD_BAD_FORMAT,
         "linear combination", hetreward_dataset_load(csv, &out_ds));
    write_text(csv, "y,psi0,z1,z2,z3\n1,1,0.5,1,2\n0,1,-0.5,2,1\n1,1,0.25,3,0\n");
    CASE("file", "CSV: n <= d1 + d2", HETREWARD_BAD_FORMAT, "need n > d1 + d2",
         hetreward_dataset_load(csv, &out_ds));
    write_text(csv, "cluster,y,psi0,z1\n1.5,1,1,0.5\n2,0,1,-0.5\n3,1,1,0.25\n");
    CASE("file", "CSV: a cluster id that is not an integer", HETREWARD_BAD_FORMAT,
         "column `cluster`, data row 1: cluster id `1.5`",
         hetreward_dataset_load(csv, &out_ds));

    /* safetensors: written by hand (header length, JSON header, little-endian data). */
    write_text("bad_input.safetensors", "definitely not a safetensors file");
    CASE("file", "safetensors: garbage", HETREWARD_BAD_FORMAT, "not a safetensors file",
         hetreward_dataset_load("bad_input.safetensors", &out_ds));
    write_safetensors("bad_input.safetensors",
                      "{\"z\":{\"dtype\":\"F64\",\"shape\":[3,2],\"data_offsets\":[0,48]}}", zz,
                      40);
    CASE("file", "safetensors: truncated data", HETREWARD_BAD_FORMAT, "not a safetensors file",
         hetreward_dataset_load("bad_input.safetensors", &out_ds));
    write_safetensors("bad_input.safetensors",
                      "{\"z\":{\"dtype\":\"F64\",\"shape\":[3,2],\"data_offsets\":[0,48]}}", zz,
                      48);
    CASE("file", "safetensors: missing tensor y", HETREWARD_BAD_FORMAT, "missing tensor `y`",
         hetreward_dataset_load("bad_input.safetensors", &out_ds));
    {
        /* z [3,2] F64, psi0 [3] F64, y [3] F64 at offsets 0, 48, 72. */
        double buf[12];
        memcpy(buf, zz, sizeof zz);
        buf[6] = buf[7] = buf[8] = 1.0;
        memcpy(buf + 9, three, sizeof three);
        write_safetensors("bad_input.safetensors",
                          "{\"z\":{\"dtype\":\"F64\",\"shape\":[3,2],\"data_offsets\":[0,48]},"
                          "\"psi0\":{\"dtype\":\"F64\",\"shape\":[3],\"data_offsets\":[48,72]},"
                          "\"y\":{\"dtype\":\"F64\",\"shape\":[3],\"data_offsets\":[72,96]}}",
                          buf, sizeof buf);
        CASE("file", "safetensors: valid (n = 3, d1 = 2)", HETREWARD_OK, "",
             hetreward_dataset_load("bad_input.safetensors", &out_ds));
        hetreward_dataset_free(out_ds);
        reset_outputs();
        buf[3] = NAN;
        write_safetensors("bad_input.safetensors",
                          "{\"z\":{\"dtype\":\"F64\",\"shape\":[3,2],\"data_offsets\":[0,48]},"
                          "\"psi0\":{\"dtype\":\"F64\",\"shape\":[3],\"data_offsets\":[48,72]},"
                          "\"y\":{\"dtype\":\"F64\",\"shape\":[3],\"data_offsets\":[72,96]}}",
                          buf, sizeof buf);
        CASE("file", "safetensors: NaN in z", HETREWARD_BAD_FORMAT,
             "tensor `z`: non-finite value at row 1, column 1",
             hetreward_dataset_load("bad_input.safetensors", &out_ds));
        buf[3] = 0.5;
        write_safetensors("bad_input.safetensors",
                          "{\"z\":{\"dtype\":\"F64\",\"shape\":[3,2],\"data_offsets\":[0,48]},"
                          "\"psi0\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[48,64]},"
                          "\"y\":{\"dtype\":\"F64\",\"shape\":[3],\"data_offsets\":[64,88]}}",
                          buf, 88);
        CASE("file", "safetensors: psi0 of the wrong length", HETREWARD_BAD_FORMAT,
             "tensor `psi0` has shape [2]; expected [3]",
             hetreward_dataset_load("bad_input.safetensors", &out_ds));
        write_safetensors("bad_input.safetensors",
                          "{\"z\":{\"dtype\":\"I64\",\"shape\":[3,2],\"data_offsets\":[0,48]},"
                          "\"psi0\":{\"dtype\":\"F64\",\"shape\":[3],\"data_offsets\":[48,72]},"
                          "\"y\":{\"dtype\":\"F64\",\"shape\":[3],\"data_offsets\":[72,96]}}",
                          buf, sizeof buf);
        CASE("file", "safetensors: z of an integer dtype", HETREWARD_BAD_FORMAT,
             "tensor `z` has dtype I64",
             hetreward_dataset_load("bad_input.safetensors", &out_ds));
        buf[10] = 0.5;
        write_safetensors("bad_input.safetensors",
                          "{\"z\":{\"dtype\":\"F64\",\"shape\":[3,2],\"data_offsets\":[0,48]},"
                          "\"psi0\":{\"dtype\":\"F64\",\"shape\":[3],\"data_offsets\":[48,72]},"
                          "\"y\":{\"dtype\":\"F64\",\"shape\":[3],\"data_offsets\":[72,96]}}",
                          buf, sizeof buf);
        CASE("file", "safetensors: label 0.5", HETREWARD_BAD_FORMAT, "y[1] = 0.5",
             hetreward_dataset_load("bad_input.safetensors", &out_ds));
    }
    unlink(csv);
    unlink("bad_input.txt");
    unlink("bad_input.safetensors");
    rmdir("bad_input_dir.csv");
}

static void fitter_cases(void) {
    hetreward_fit_params p;
    hetreward_fitter *f = NULL;
    hetreward_dataset *ds = NULL;
    double theta0[D1] = {0.1, 0.1, 0.1, 0.1}, gamma0[D2] = {0.0, 0.0};
    double *z;
    size_t i;

    function_header("hetreward_fitter_new");
    CASE("params", "NULL (= the defaults)", HETREWARD_OK, "", hetreward_fitter_new(NULL, &out_fitter));
    hetreward_fitter_free(out_fitter);
    reset_outputs();
    CASE("out_fitter", "NULL", HETREWARD_NULL_POINTER, "`out_fitter`",
         hetreward_fitter_new(NULL, NULL));
    PARAMS_CASE("params.struct_size", "sizeof - 4 (no version's size)",
                HETREWARD_INVALID_ARGUMENT, "`params.struct_size`", p.struct_size -= 4);
    PARAMS_CASE("params.struct_size", "0", HETREWARD_INVALID_ARGUMENT, "`params.struct_size`",
                p.struct_size = 0);
    PARAMS_CASE("params.solver", "7 (unknown)", HETREWARD_INVALID_ARGUMENT, "`params.solver`",
                p.solver = 7);
    PARAMS_CASE("params.covariance", "4 (unknown)", HETREWARD_INVALID_ARGUMENT,
                "`params.covariance`", p.covariance = 4);
    PARAMS_CASE("params.init", "3 (unknown)", HETREWARD_INVALID_ARGUMENT, "`params.init`",
                p.init = 3);
    PARAMS_CASE("params.eta1", "0", HETREWARD_INVALID_ARGUMENT, "`params.eta1`", p.eta1 = 0.0);
    PARAMS_CASE("params.eta1", "-0.1", HETREWARD_INVALID_ARGUMENT, "`params.eta1`",
                p.eta1 = -0.1);
    PARAMS_CASE("params.eta1", "NaN", HETREWARD_INVALID_ARGUMENT, "`params.eta1`", p.eta1 = NAN);
    PARAMS_CASE("params.eta2", "+Inf", HETREWARD_INVALID_ARGUMENT, "`params.eta2`",
                p.eta2 = INFINITY);
    PARAMS_CASE("params.tol", "-1e-8", HETREWARD_INVALID_ARGUMENT, "`params.tol`",
                p.tol = -1e-8);
    PARAMS_CASE("params.tol", "NaN", HETREWARD_INVALID_ARGUMENT, "`params.tol`", p.tol = NAN);
    PARAMS_CASE("params.tol", "+Inf", HETREWARD_INVALID_ARGUMENT, "`params.tol`",
                p.tol = INFINITY);
    PARAMS_CASE("params.theta0", "NULL with theta0_len = 4 (explicit init)",
                HETREWARD_NULL_POINTER, "`params.theta0`",
                (p.init = HETREWARD_INIT_EXPLICIT, p.theta0_len = D1));
    theta0[2] = NAN;
    PARAMS_CASE("params.theta0", "NaN at [2]", HETREWARD_NON_FINITE, "`params.theta0` at index 2",
                (p.init = HETREWARD_INIT_EXPLICIT, p.theta0 = theta0, p.theta0_len = D1,
                 p.gamma0 = gamma0, p.gamma0_len = D2));
    theta0[2] = 0.1;
    PARAMS_CASE("params.gamma0", "NULL with gamma0_len = 2", HETREWARD_NULL_POINTER,
                "`params.gamma0`",
                (p.init = HETREWARD_INIT_EXPLICIT, p.theta0 = theta0, p.theta0_len = D1,
                 p.gamma0_len = D2));
    gamma0[1] = -INFINITY;
    PARAMS_CASE("params.gamma0", "-Inf at [1]", HETREWARD_NON_FINITE,
                "`params.gamma0` at index 1",
                (p.init = HETREWARD_INIT_EXPLICIT, p.theta0 = theta0, p.theta0_len = D1,
                 p.gamma0 = gamma0, p.gamma0_len = D2));
    gamma0[1] = 0.0;
    PARAMS_CASE("params.theta0", "NULL, init = DEFAULT (ignored)", HETREWARD_OK, "",
                p.theta0_len = D1);
    hetreward_fitter_free(out_fitter);
    reset_outputs();

    function_header("hetreward_fitter_fit");
    CASE("fitter", "NULL", HETREWARD_NULL_POINTER, "`fitter`",
         hetreward_fitter_fit(NULL, dataset, &out_model));
    CASE("dataset", "NULL", HETREWARD_NULL_POINTER, "`dataset`",
         hetreward_fitter_fit(fitter, NULL, &out_model));
    CASE("out_model", "NULL", HETREWARD_NULL_POINTER, "`out_model`",
         hetreward_fitter_fit(fitter, dataset, NULL));
    check_fit_again();

    /* Explicit starts whose lengths disagree with the dataset. */
    p = hetreward_fit_default_params();
    p.init = HETREWARD_INIT_EXPLICIT;
    p.theta0 = theta0;
    p.theta0_len = D1 - 1;
    p.gamma0 = gamma0;
    p.gamma0_len = D2;
    CHECK_OK(hetreward_fitter_new(&p, &f));
    CASE("params.theta0_len", "3 for a dataset with d1 = 4", HETREWARD_DIMENSION_MISMATCH,
         "`theta0`" SEP "4 values (d1)", hetreward_fitter_fit(f, dataset, &out_model));
    hetreward_fitter_free(f);
    check_fit_again();
    p.theta0_len = D1;
    p.gamma0_len = D2 - 1;
    CHECK_OK(hetreward_fitter_new(&p, &f));
    CASE("params.gamma0_len", "1 for a dataset with d2 = 2", HETREWARD_DIMENSION_MISMATCH,
         "`gamma0`" SEP "2 values (d2)", hetreward_fitter_fit(f, dataset, &out_model));
    hetreward_fitter_free(f);
    check_fit_again();

    /* Cluster covariance without cluster ids. */
    p = hetreward_fit_default_params();
    p.covariance = HETREWARD_COVARIANCE_CLUSTER;
    CHECK_OK(hetreward_fitter_new(&p, &f));
    CHECK_OK(hetreward_dataset_new(N, D1, D2, data.z, data.psi0, data.psi, data.y, NULL, &ds));
    CASE("params.covariance", "CLUSTER on a dataset without cluster ids",
         HETREWARD_INVALID_ARGUMENT, "`covariance`" SEP "cluster ids",
         hetreward_fitter_fit(f, ds, &out_model));
    CASE("params.covariance", "CLUSTER on a dataset with cluster ids", HETREWARD_OK, "",
         hetreward_fitter_fit(f, dataset, &out_model));
    hetreward_model_free(out_model);
    reset_outputs();
    hetreward_dataset_free(ds);
    ds = NULL;
    /* Issue 32 item 4: a single cluster is bad input naming the cluster ids (it failed as a
     * sandwich "not positive definite", a numerical failure). */
    {
        int64_t one[N];
        size_t r;
        for (r = 0; r < N; r++) one[r] = 7;
        CHECK_OK(hetreward_dataset_new(N, D1, D2, data.z, data.psi0, data.psi, data.y, one, &ds));
        CASE("params.covariance", "CLUSTER on a dataset whose rows all have one cluster id",
             HETREWARD_INVALID_ARGUMENT, "`cluster`" SEP "at least 2 clusters",
             hetreward_fitter_fit(f, ds, &out_model));
        hetreward_dataset_free(ds);
        ds = NULL;
    }
    hetreward_fitter_free(f);
    check_fit_again();

    /* require_converged with a tiny iteration cap. */
    p = hetreward_fit_default_params();
    p.solver = HETREWARD_SOLVER_AGD;
    p.max_iter = 3;
    p.require_converged = true;
    CHECK_OK(hetreward_fitter_new(&p, &f));
    CASE("params.require_converged", "true, agd capped at 3 iterations",
         HETREWARD_NOT_CONVERGED, "not converged" SEP "require_converged",
         hetreward_fitter_fit(f, dataset, &out_model));
    CASE("params.require_converged", "the same fitter again (same answer)",
         HETREWARD_NOT_CONVERGED, "not converged", hetreward_fitter_fit(f, dataset, &out_model));
    hetreward_fitter_free(f);
    check_fit_again();

    /* A cancellation request made before the fit; the fitter fits normally afterwards. */
    hetreward_fitter_cancel(fitter);
    CASE("fitter", "cancelled (hetreward_fitter_cancel before the fit)", HETREWARD_CANCELLED,
         "cancelled", hetreward_fitter_fit(fitter, dataset, &out_model));
    check_fit_again();

    /* Data that is valid but has no information on one coefficient. */
    z = (double *)checked_malloc(N * D1 * sizeof(double));
    memcpy(z, data.z, N * D1 * sizeof(double));
    for (i = 0; i < N; i++) z[i * D1 + 2] = 0.0;
    CHECK_OK(hetreward_dataset_new(N, D1, D2, z, data.psi0, data.psi, data.y, NULL, &ds));
    CASE("dataset", "feature z[:,2] identically 0 (singular information)",
         HETREWARD_SINGULAR_INFORMATION, "singular information" SEP "the expected information",
         hetreward_fitter_fit(fitter, ds, &out_model));
    /* Duplicated feature. */
    hetreward_dataset_free(ds);
    for (i = 0; i < N; i++) z[i * D1 + 2] = 2.0 * z[i * D1 + 1];
    CHECK_OK(hetreward_dataset_new(N, D1, D2, z, data.psi0, data.psi, data.y, NULL, &ds));
    CASE("dataset", "z[:,2] = 2 z[:,1] (collinear features)", HETREWARD_SINGULAR_INFORMATION,
         "singular information", hetreward_fitter_fit(fitter, ds, &out_model));
    hetreward_dataset_free(ds);
    free(z);
    check_fit_again();

    function_header("hetreward_fitter_cancel");
    hetreward_fitter_cancel(NULL);
    record_value("fitter", "NULL", 1, "no-op");
    function_header("hetreward_fitter_free");
    hetreward_fitter_free(NULL);
    record_value("fitter", "NULL", 1, "no-op");
    function_header("hetreward_dataset_free");
    hetreward_dataset_free(NULL);
    record_value("dataset", "NULL", 1, "no-op");
    function_header("hetreward_dataset_n");
    record_value("dataset", "NULL", hetreward_dataset_n(NULL) == 0, "returns 0");
    function_header("hetreward_dataset_d1");
    record_value("dataset", "NULL", hetreward_dataset_d1(NULL) == 0, "returns 0");
    function_header("hetreward_dataset_d2");
    record_value("dataset", "NULL", hetreward_dataset_d2(NULL) == 0, "returns 0");
}

static void model_accessor_cases(void) {
    function_header("hetreward_model_n");
    record_value("model", "NULL", hetreward_model_n(NULL) == 0, "returns 0");
    function_header("hetreward_model_d1");
    record_value("model", "NULL", hetreward_model_d1(NULL) == 0, "returns 0");
    function_header("hetreward_model_d2");
    record_value("model", "NULL", hetreward_model_d2(NULL) == 0, "returns 0");
    function_header("hetreward_model_free");
    hetreward_model_free(NULL);
    record_value("model", "NULL", 1, "no-op");
    function_header("hetreward_status_name");
    record_value("status", "11 (not a status)",
                 strcmp(hetreward_status_name(11), "HETREWARD_UNKNOWN_STATUS") == 0,
                 "returns \"HETREWARD_UNKNOWN_STATUS\"");
    function_header("hetreward_option_name");
    record_value("family", "10 (not a family)", hetreward_option_name(10, 0) == NULL,
                 "returns NULL");
    record_value("code", "6 (not an interval method)",
                 hetreward_option_name(HETREWARD_OPTION_INTERVALS, 6) == NULL, "returns NULL");
    record_value("code", "3 (two shard flags)",
                 hetreward_option_name(HETREWARD_OPTION_SHARD, 3) == NULL, "returns NULL");
    function_header("hetreward_option_at");
    {
        uint32_t code = 7;
        record_value("family", "10 (not a family)",
                     hetreward_option_at(10, 0, &code) == NULL && code == 7,
                     "returns NULL, writes nothing");
        record_value("index", "2 (past the last policy)",
                     hetreward_option_at(HETREWARD_OPTION_POLICY, 2, &code) == NULL && code == 7,
                     "returns NULL, writes nothing");
        record_value("out_code", "NULL",
                     hetreward_option_at(HETREWARD_OPTION_POLICY, 1, NULL) != NULL,
                     "optional: returns the name");
    }

    function_header("hetreward_model_theta");
    CASE("model", "NULL", HETREWARD_NULL_POINTER, "`model`",
         hetreward_model_theta(NULL, out_values, D1));
    CASE("out_values", "NULL with len = d1", HETREWARD_NULL_POINTER, "`out_values`",
         hetreward_model_theta(model, NULL, D1));
    CASE("len", "d1 + 1", HETREWARD_DIMENSION_MISMATCH, "`len`" SEP "4 (the model's d1)",
         hetreward_model_theta(model, out_values, D1 + 1));
    CASE("len", "0", HETREWARD_DIMENSION_MISMATCH, "`len`",
         hetreward_model_theta(model, out_values, 0));
    function_header("hetreward_model_gamma");
    CASE("model", "NULL", HETREWARD_NULL_POINTER, "`model`",
         hetreward_model_gamma(NULL, out_values, D2));
    CASE("len", "d1 instead of d2", HETREWARD_DIMENSION_MISMATCH, "`len`" SEP "2 (the model's d2)",
         hetreward_model_gamma(model, out_values, D1));
    CASE("out_values", "NULL with len = d2", HETREWARD_NULL_POINTER, "`out_values`",
         hetreward_model_gamma(model, NULL, D2));
    function_header("hetreward_model_theta_se");
    CASE("model", "NULL", HETREWARD_NULL_POINTER, "`model`",
         hetreward_model_theta_se(NULL, out_values, D1));
    CASE("out_values", "NULL", HETREWARD_NULL_POINTER, "`out_values`",
         hetreward_model_theta_se(model, NULL, D1));
    CASE("len", "d1 - 1", HETREWARD_DIMENSION_MISMATCH, "`len`",
         hetreward_model_theta_se(model, out_values, D1 - 1));
    function_header("hetreward_model_gamma_se");
    CASE("model", "NULL", HETREWARD_NULL_POINTER, "`model`",
         hetreward_model_gamma_se(NULL, out_values, D2));
    CASE("out_values", "NULL", HETREWARD_NULL_POINTER, "`out_values`",
         hetreward_model_gamma_se(model, NULL, D2));
    CASE("len", "d2 + 1", HETREWARD_DIMENSION_MISMATCH, "`len`",
         hetreward_model_gamma_se(model, out_values, D2 + 1));
    function_header("hetreward_model_report");
    CASE("model", "NULL", HETREWARD_NULL_POINTER, "`model`",
         hetreward_model_report(NULL, &out_report));
    CASE("out_report", "NULL", HETREWARD_NULL_POINTER, "`out_report`",
         hetreward_model_report(model, NULL));
}

static void model_scoring_cases(const hetreward_model *other) {
    float *bad = (float *)checked_malloc(M * D1 * sizeof(float));
    float *wide = (float *)checked_malloc(M * (D1 + 1) * sizeof(float));
    double pen[M];
    double psi[D2] = {1.0, 0.5};
    size_t i;
    memset(wide, 0, M * (D1 + 1) * sizeof(float));
    for (i = 0; i < M; i++) pen[i] = 0.0;
#define RESTORE() memcpy(bad, phi, M * D1 * sizeof(float))
    RESTORE();

    function_header("hetreward_model_score");
    CASE("model", "NULL", HETREWARD_NULL_POINTER, "`model`",
         hetreward_model_score(NULL, phi, M, D1, 0.05, out_rewards));
    CASE("phi", "NULL with m > 0", HETREWARD_NULL_POINTER, "`phi`",
         hetreward_model_score(model, NULL, M, D1, 0.05, out_rewards));
    CASE("out_rewards", "NULL with m > 0", HETREWARD_NULL_POINTER, "`out_rewards`",
         hetreward_model_score(model, phi, M, D1, 0.05, NULL));
    CASE("m", "0 (phi and out_rewards may be NULL)", HETREWARD_OK, "",
         hetreward_model_score(model, NULL, 0, D1, 0.05, NULL));
    CASE("d1", "0", HETREWARD_DIMENSION_MISMATCH, "`d1`" SEP "4 (the model's d1)",
         hetreward_model_score(model, phi, M, 0, 0.05, out_rewards));
    CASE("d1", "5: answers embedded for another model (wrong d1)", HETREWARD_DIMENSION_MISMATCH,
         "`d1`" SEP "got 5", hetreward_model_score(model, wide, M, D1 + 1, 0.05, out_rewards));
    CASE("d1", "4 given to a model with d1 = 3", HETREWARD_DIMENSION_MISMATCH,
         "`d1`" SEP "3 (the model's d1)",
         hetreward_model_score(other, phi, M, D1, 0.05, out_rewards));
    CASE("m, d1", "m * d1 overflows size_t", HETREWARD_DIMENSION_MISMATCH, "`phi`",
         hetreward_model_score(model, phi, SIZE_MAX, D1, 0.05, out_rewards));
    CASE("alpha", "0", HETREWARD_INVALID_ARGUMENT, "`alpha`" SEP "(0, 1)",
         hetreward_model_score(model, phi, M, D1, 0.0, out_rewards));
    CASE("alpha", "1", HETREWARD_INVALID_ARGUMENT, "`alpha`",
         hetreward_model_score(model, phi, M, D1, 1.0, out_rewards));
    CASE("alpha", "-0.05", HETREWARD_INVALID_ARGUMENT, "`alpha`",
         hetreward_model_score(model, phi, M, D1, -0.05, out_rewards));
    CASE("alpha", "1.5", HETREWARD_INVALID_ARGUMENT, "`alpha`",
         hetreward_model_score(model, phi, M, D1, 1.5, out_rewards));
    CASE("alpha", "NaN", HETREWARD_INVALID_ARGUMENT, "`alpha`",
         hetreward_model_score(model, phi, M, D1, NAN, out_rewards));
    CASE("alpha", "+Inf", HETREWARD_INVALID_ARGUMENT, "`alpha`",
         hetreward_model_score(model, phi, M, D1, INFINITY, out_rewards));
    bad[2 * D1 + 1] = NAN;
    CASE("phi", "NaN at [2][1]", HETREWARD_NON_FINITE, "`phi` at index 9",
         hetreward_model_score(model, bad, M, D1, 0.05, out_rewards));
    bad[2 * D1 + 1] = -INFINITY;
    CASE("phi", "-Inf at [2][1]", HETREWARD_NON_FINITE, "`phi` at index 9",
         hetreward_model_score(model, bad, M, D1, 0.05, out_rewards));
    RESTORE();

    function_header("hetreward_model_compare");
    CASE("model", "NULL", HETREWARD_NULL_POINTER, "`model`",
         hetreward_model_compare(NULL, phi, phi, M, D1, 0.05, HETREWARD_DIFF_EXACT, out_cmp));
    CASE("phi0", "NULL", HETREWARD_NULL_POINTER, "`phi0`",
         hetreward_model_compare(model, NULL, phi, M, D1, 0.05, HETREWARD_DIFF_EXACT, out_cmp));
    CASE("phi1", "NULL", HETREWARD_NULL_POINTER, "`phi1`",
         hetreward_model_compare(model, phi, NULL, M, D1, 0.05, HETREWARD_DIFF_EXACT, out_cmp));
    CASE("out_comparisons", "NULL", HETREWARD_NULL_POINTER, "`out_comparisons`",
         hetreward_model_compare(model, phi, phi, M, D1, 0.05, HETREWARD_DIFF_EXACT, NULL));
    CASE("m", "0", HETREWARD_OK, "",
         hetreward_model_compare(model, NULL, NULL, 0, D1, 0.05, HETREWARD_DIFF_EXACT, NULL));
    CASE("d1", "5 (wrong d1)", HETREWARD_DIMENSION_MISMATCH, "`d1`",
         hetreward_model_compare(model, wide, wide, M, D1 + 1, 0.05, HETREWARD_DIFF_EXACT,
                                 out_cmp));
    CASE("m, d1", "m * d1 overflows size_t", HETREWARD_DIMENSION_MISMATCH, "`phi0`",
         hetreward_model_compare(model, phi, phi, SIZE_MAX, D1, 0.05, HETREWARD_DIFF_EXACT,
                                 out_cmp));
    CASE("alpha", "0", HETREWARD_INVALID_ARGUMENT, "`alpha`",
         hetreward_model_compare(model, phi, phi, M, D1, 0.0, HETREWARD_DIFF_EXACT, out_cmp));
    CASE("alpha", "NaN", HETREWARD_INVALID_ARGUMENT, "`alpha`",
         hetreward_model_compare(model, phi, phi, M, D1, NAN, HETREWARD_DIFF_EXACT, out_cmp));
    CASE("method", "3 (unknown)", HETREWARD_INVALID_ARGUMENT, "`method`",
         hetreward_model_compare(model, phi, phi, M, D1, 0.05, 3, out_cmp));
    bad[0] = NAN;
    CASE("phi0", "NaN at [0][0]", HETREWARD_NON_FINITE, "`phi0` at index 0",
         hetreward_model_compare(model, bad, phi, M, D1, 0.05, HETREWARD_DIFF_EXACT, out_cmp));
    RESTORE();
    bad[M * D1 - 1] = INFINITY;
    CASE("phi1", "+Inf at the last element", HETREWARD_NON_FINITE, "`phi1` at index 31",
         hetreward_model_compare(model, phi, bad, M, D1, 0.05, HETREWARD_DIFF_BOUND, out_cmp));
    RESTORE();

    function_header("hetreward_model_select");
    CASE("model", "NULL", HETREWARD_NULL_POINTER, "`model`",
         hetreward_model_select(NULL, phi, M, D1, NULL, 0.05, HETREWARD_POLICY_PBON, &out_index,
                                out_cand));
    CASE("phi", "NULL", HETREWARD_NULL_POINTER, "`phi`",
         hetreward_model_select(model, NULL, M, D1, NULL, 0.05, HETREWARD_POLICY_PBON,
                                &out_index, out_cand));
    CASE("n_candidates", "0", HETREWARD_DIMENSION_MISMATCH,
         "`n_candidates`" SEP "at least one candidate",
         hetreward_model_select(model, phi, 0, D1, NULL, 0.05, HETREWARD_POLICY_PBON, &out_index,
                                out_cand));
    CASE("d1", "3 (wrong d1)", HETREWARD_DIMENSION_MISMATCH, "`d1`",
         hetreward_model_select(model, phi, M, D1 - 1, NULL, 0.05, HETREWARD_POLICY_PBON,
                                &out_index, out_cand));
    CASE("out_index", "NULL", HETREWARD_NULL_POINTER, "`out_index`",
         hetreward_model_select(model, phi, M, D1, NULL, 0.05, HETREWARD_POLICY_PBON, NULL,
                                out_cand));
    CASE("out_candidates", "NULL (optional)", HETREWARD_OK, "",
         hetreward_model_select(model, phi, M, D1, NULL, 0.05, HETREWARD_POLICY_PBON,
                                &out_index, NULL));
    reset_outputs();
    CASE("policy", "2 (unknown)", HETREWARD_INVALID_ARGUMENT, "`policy`",
         hetreward_model_select(model, phi, M, D1, NULL, 0.05, 2, &out_index, out_cand));
    CASE("alpha", "1", HETREWARD_INVALID_ARGUMENT, "`alpha`",
         hetreward_model_select(model, phi, M, D1, NULL, 1.0, HETREWARD_POLICY_PBON, &out_index,
                                out_cand));
    CASE("alpha", "-Inf", HETREWARD_INVALID_ARGUMENT, "`alpha`",
         hetreward_model_select(model, phi, M, D1, NULL, -INFINITY, HETREWARD_POLICY_BON,
                                &out_index, out_cand));
    pen[5] = NAN;
    CASE("penalty", "NaN at [5]", HETREWARD_NON_FINITE, "`penalty` at index 5",
         hetreward_model_select(model, phi, M, D1, pen, 0.05, HETREWARD_POLICY_PBON, &out_index,
                                out_cand));
    pen[5] = INFINITY;
    CASE("penalty", "+Inf at [5]", HETREWARD_NON_FINITE, "`penalty` at index 5",
         hetreward_model_select(model, phi, M, D1, pen, 0.05, HETREWARD_POLICY_BON, &out_index,
                                out_cand));
    pen[5] = -INFINITY;
    CASE("penalty", "-Inf at [5]", HETREWARD_NON_FINITE, "`penalty` at index 5",
         hetreward_model_select(model, phi, M, D1, pen, 0.05, HETREWARD_POLICY_BON, &out_index,
                                out_cand));
    pen[5] = 0.0;
    bad[D1 * 4] = NAN;
    CASE("phi", "NaN at [4][0]", HETREWARD_NON_FINITE, "`phi` at index 16",
         hetreward_model_select(model, bad, M, D1, pen, 0.05, HETREWARD_POLICY_PBON, &out_index,
                                out_cand));
    RESTORE();

    function_header("hetreward_model_rationality");
    CASE("model", "NULL", HETREWARD_NULL_POINTER, "`model`",
         hetreward_model_rationality(NULL, 1.0, psi, D2, &out_sigma, &out_se));
    CASE("psi", "NULL with d2 > 0", HETREWARD_NULL_POINTER, "`psi`",
         hetreward_model_rationality(model, 1.0, NULL, D2, &out_sigma, &out_se));
    CASE("d2", "3 (the model has d2 = 2)", HETREWARD_DIMENSION_MISMATCH, "`d2`",
         hetreward_model_rationality(model, 1.0, psi, D2 + 1, &out_sigma, &out_se));
    CASE("d2", "0 (the model has d2 = 2)", HETREWARD_DIMENSION_MISMATCH, "`d2`",
         hetreward_model_rationality(model, 1.0, NULL, 0, &out_sigma, &out_se));
    CASE("psi0", "NaN", HETREWARD_NON_FINITE, "`psi0`",
         hetreward_model_rationality(model, NAN, psi, D2, &out_sigma, &out_se));
    CASE("psi0", "-Inf", HETREWARD_NON_FINITE, "`psi0`",
         hetreward_model_rationality(model, -INFINITY, psi, D2, &out_sigma, &out_se));
    psi[1] = INFINITY;
    CASE("psi", "+Inf at [1]", HETREWARD_NON_FINITE, "`psi` at index 1",
         hetreward_model_rationality(model, 1.0, psi, D2, &out_sigma, &out_se));
    psi[1] = 0.5;
    CASE("out_sigma", "NULL", HETREWARD_NULL_POINTER, "`out_sigma`",
         hetreward_model_rationality(model, 1.0, psi, D2, NULL, &out_se));
    CASE("out_se", "NULL", HETREWARD_NULL_POINTER, "`out_se`",
         hetreward_model_rationality(model, 1.0, psi, D2, &out_sigma, NULL));

    function_header("hetreward_model_coefficients");
    CASE("model", "NULL", HETREWARD_NULL_POINTER, "`model`",
         hetreward_model_coefficients(NULL, HETREWARD_COEFFICIENTS_ALL, 0.05, out_coef, D1 + D2,
                                      &out_len));
    CASE("which", "3 (unknown)", HETREWARD_INVALID_ARGUMENT,
         "`which`" SEP "unknown value 3" SEP "HETREWARD_COEFFICIENTS_*",
         hetreward_model_coefficients(model, 3, 0.05, out_coef, D1 + D2, &out_len));
    CASE("alpha", "0", HETREWARD_INVALID_ARGUMENT, "`alpha`",
         hetreward_model_coefficients(model, HETREWARD_COEFFICIENTS_ALL, 0.0, out_coef, D1 + D2,
                                      &out_len));
    CASE("alpha", "NaN", HETREWARD_INVALID_ARGUMENT, "`alpha`",
         hetreward_model_coefficients(model, HETREWARD_COEFFICIENTS_THETA, NAN, out_coef, D1,
                                      &out_len));
    CASE("out_count", "NULL", HETREWARD_NULL_POINTER, "`out_count`",
         hetreward_model_coefficients(model, HETREWARD_COEFFICIENTS_ALL, 0.05, out_coef,
                                      D1 + D2, NULL));
    CASE("capacity", "5 (all rows need 6)", HETREWARD_DIMENSION_MISMATCH,
         "`capacity`" SEP "at least 6 rows" SEP "got 5",
         hetreward_model_coefficients(model, HETREWARD_COEFFICIENTS_ALL, 0.05, out_coef,
                                      D1 + D2 - 1, &out_len));
    CASE("capacity", "0 with out_rows given", HETREWARD_DIMENSION_MISMATCH, "`capacity`",
         hetreward_model_coefficients(model, HETREWARD_COEFFICIENTS_GAMMA, 0.05, out_coef, 0,
                                      &out_len));
    CASE("out_rows", "NULL (a size query; capacity ignored)", HETREWARD_OK, "",
         hetreward_model_coefficients(model, HETREWARD_COEFFICIENTS_ALL, 0.05, NULL, 0, &out_len));
    CHECK(out_len == D1 + D2);
    reset_outputs();
    function_header("hetreward_model_unbounded");
    CASE("model", "NULL", HETREWARD_NULL_POINTER, "`model`",
         hetreward_model_unbounded(NULL, out_unbounded, D1 + D2, &out_len));
    CASE("out_count", "NULL", HETREWARD_NULL_POINTER, "`out_count`",
         hetreward_model_unbounded(model, out_unbounded, D1 + D2, NULL));
    CASE("out_rows", "NULL (a size query; capacity ignored)", HETREWARD_OK, "",
         hetreward_model_unbounded(model, NULL, 0, &out_len));
    CHECK(out_len == 0);
    reset_outputs();
    function_header("hetreward_model_rationality_interval");
    CASE("model", "NULL", HETREWARD_NULL_POINTER, "`model`",
         hetreward_model_rationality_interval(NULL, 1.0, psi, D2, 0.05, out_rewards));
    CASE("psi", "NULL with d2 > 0", HETREWARD_NULL_POINTER, "`psi`",
         hetreward_model_rationality_interval(model, 1.0, NULL, D2, 0.05, out_rewards));
    CASE("d2", "3 (the model has d2 = 2)", HETREWARD_DIMENSION_MISMATCH, "`d2`",
         hetreward_model_rationality_interval(model, 1.0, psi, D2 + 1, 0.05, out_rewards));
    CASE("psi0", "NaN", HETREWARD_NON_FINITE, "`psi0`",
         hetreward_model_rationality_interval(model, NAN, psi, D2, 0.05, out_rewards));
    psi[1] = INFINITY;
    CASE("psi", "+Inf at [1]", HETREWARD_NON_FINITE, "`psi` at index 1",
         hetreward_model_rationality_interval(model, 1.0, psi, D2, 0.05, out_rewards));
    psi[1] = 0.5;
    CASE("alpha", "0", HETREWARD_INVALID_ARGUMENT, "`alpha`" SEP "(0, 1)",
         hetreward_model_rationality_interval(model, 1.0, psi, D2, 0.0, out_rewards));
    CASE("alpha", "NaN", HETREWARD_INVALID_ARGUMENT, "`alpha`",
         hetreward_model_rationality_interval(model, 1.0, psi, D2, NAN, out_rewards));
    CASE("out", "NULL", HETREWARD_NULL_POINTER, "`out`",
         hetreward_model_rationality_interval(model, 1.0, psi, D2, 0.05, NULL));
#undef RESTORE
    free(bad);
    free(wide);

    /* Issue 20: the annotator-heterogeneity diagnostic needs a dataset with cluster ids whose
     * dimensions match the model's. */
    {
        hetreward_dataset *plain = NULL, *wide_ds = NULL;
        CHECK_OK(hetreward_dataset_new(N, D1, D2, data.z, data.psi0, data.psi, data.y, NULL,
                                       &plain));
        function_header("hetreward_model_heterogeneity");
        CASE("model", "NULL", HETREWARD_NULL_POINTER, "`model`",
             hetreward_model_heterogeneity(NULL, dataset, D1 + D2, out_values, out_effective,
                                           &out_het));
        CASE("dataset", "NULL", HETREWARD_NULL_POINTER, "`dataset`",
             hetreward_model_heterogeneity(model, NULL, D1 + D2, out_values, out_effective,
                                           &out_het));
        CASE("dataset", "without cluster ids", HETREWARD_INVALID_ARGUMENT, "`cluster`",
             hetreward_model_heterogeneity(model, plain, D1 + D2, out_values, out_effective,
                                           &out_het));
        CHECK_OK(hetreward_dataset_new(N, D1, 0, data.z, data.psi0, NULL, data.y, data.cluster,
                                       &wide_ds));
        CASE("dataset", "d2 = 0 for a model with d2 = 2", HETREWARD_DIMENSION_MISMATCH,
             "`dataset d2`",
             hetreward_model_heterogeneity(model, wide_ds, D1 + D2, out_values, out_effective,
                                           &out_het));
        CASE("len", "d1 + d2 + 1", HETREWARD_DIMENSION_MISMATCH, "`len`" SEP "d1 + d2",
             hetreward_model_heterogeneity(model, dataset, D1 + D2 + 1, out_values, out_effective,
                                           &out_het));
        CASE("out_design_effects", "NULL", HETREWARD_NULL_POINTER, "`out_design_effects`",
             hetreward_model_heterogeneity(model, dataset, D1 + D2, NULL, out_effective,
                                           &out_het));
        CASE("out_effective_clusters", "NULL", HETREWARD_NULL_POINTER,
             "`out_effective_clusters`",
             hetreward_model_heterogeneity(model, dataset, D1 + D2, out_values, NULL, &out_het));
        CASE("out_info", "NULL", HETREWARD_NULL_POINTER, "`out_info`",
             hetreward_model_heterogeneity(model, dataset, D1 + D2, out_values, out_effective,
                                           NULL));
        CASE("dataset", "the training data (20 annotators)", HETREWARD_OK, "",
             hetreward_model_heterogeneity(model, dataset, D1 + D2, out_values, out_effective,
                                           &out_het));
        CHECK(out_het.clusters == 20 && out_het.worst < D1 + D2);
        CHECK(out_het.worst_design_effect == out_values[out_het.worst]);
        CHECK(out_effective[0] >= 1.0 && out_effective[0] <= 19.0);
        reset_outputs();
        hetreward_dataset_free(plain);
        hetreward_dataset_free(wide_ds);
    }
}

static void model_file_cases(void) {
    static const char *path = "bad_input_model.hrm";
    uint8_t *buf, *damaged;
    size_t len = 0, got = 0;

    function_header("hetreward_model_save");
    CASE("model", "NULL", HETREWARD_NULL_POINTER, "`model`", hetreward_model_save(NULL, path));
    CASE("path", "NULL", HETREWARD_NULL_POINTER, "`path`", hetreward_model_save(model, NULL));
    CASE("path", "\"\" (empty)", HETREWARD_INVALID_ARGUMENT, "`path`",
         hetreward_model_save(model, ""));
    CASE("path", "\".\" (a directory, no file name)", HETREWARD_INVALID_ARGUMENT,
         "`path`" SEP "not a file path", hetreward_model_save(model, "."));
    CASE("path", "in a folder that does not exist", HETREWARD_IO,
         "bad_input_nowhere/m.hrm" SEP "No such file",
         hetreward_model_save(model, "bad_input_nowhere/m.hrm"));
    CASE("path", "valid", HETREWARD_OK, "", hetreward_model_save(model, path));

    function_header("hetreward_model_save_buffer");
    CASE("model", "NULL", HETREWARD_NULL_POINTER, "`model`",
         hetreward_model_save_buffer(NULL, NULL, 0, &out_len));
    CASE("out_len", "NULL", HETREWARD_NULL_POINTER, "`out_len`",
         hetreward_model_save_buffer(model, NULL, 0, NULL));
    CHECK_OK(hetreward_model_save_buffer(model, NULL, 0, &len));
    buf = (uint8_t *)checked_malloc(len);
    damaged = (uint8_t *)checked_malloc(len + 1);
    CASE("buf_len", "one byte too small", HETREWARD_DIMENSION_MISMATCH, "`buf_len`" SEP "at least",
         hetreward_model_save_buffer(model, buf, len - 1, &out_len));
    CHECK_OK(hetreward_model_save_buffer(model, buf, len, &got));
    CHECK(got == len);

    function_header("hetreward_model_load");
    CASE("path", "NULL", HETREWARD_NULL_POINTER, "`path`", hetreward_model_load(NULL, &out_model));
    CASE("path", "\"\" (empty)", HETREWARD_INVALID_ARGUMENT, "`path`",
         hetreward_model_load("", &out_model));
    CASE("out_model", "NULL", HETREWARD_NULL_POINTER, "`out_model`",
         hetreward_model_load(path, NULL));
    CASE("path", "file does not exist", HETREWARD_IO, "bad_input_absent.hrm",
         hetreward_model_load("bad_input_absent.hrm", &out_model));
    CASE("path", "a directory", HETREWARD_IO, "is a folder, not a regular file",
         hetreward_model_load(".", &out_model));
    write_text("bad_input_text.hrm", "y,psi0,z1\n1,1,0.5\n0,1,-0.25\n");
    CASE("file", "a CSV file, not a model", HETREWARD_BAD_FORMAT,
         "bad_input_text.hrm" SEP "bad magic", hetreward_model_load("bad_input_text.hrm", &out_model));
    write_bytes("bad_input_cut.hrm", buf, len - 1);
    CASE("file", "truncated by one byte", HETREWARD_BAD_FORMAT, "truncated",
         hetreward_model_load("bad_input_cut.hrm", &out_model));
    write_bytes("bad_input_cut.hrm", buf, 0);
    CASE("file", "empty", HETREWARD_BAD_FORMAT, "truncated",
         hetreward_model_load("bad_input_cut.hrm", &out_model));
    memcpy(damaged, buf, len);
    damaged[len / 2] ^= 0x01;
    write_bytes("bad_input_flip.hrm", damaged, len);
    CASE("file", "one bit flipped in the payload", HETREWARD_BAD_FORMAT, "checksum mismatch",
         hetreward_model_load("bad_input_flip.hrm", &out_model));
    memcpy(damaged, buf, len);
    damaged[8] = 4;
    write_bytes("bad_input_flip.hrm", damaged, len);
    CASE("file", "format version 4 (a newer hetreward)", HETREWARD_BAD_FORMAT,
         "version 4 is not supported" SEP "newer",
         hetreward_model_load("bad_input_flip.hrm", &out_model));
    CASE("path", "valid", HETREWARD_OK, "", hetreward_model_load(path, &out_model));
    hetreward_model_free(out_model);
    reset_outputs();

    function_header("hetreward_model_load_buffer");
    CASE("buf", "NULL", HETREWARD_NULL_POINTER, "`buf`",
         hetreward_model_load_buffer(NULL, len, &out_model));
    CASE("out_model", "NULL", HETREWARD_NULL_POINTER, "`out_model`",
         hetreward_model_load_buffer(buf, len, NULL));
    CASE("len", "0", HETREWARD_BAD_FORMAT, "<buffer>" SEP "truncated",
         hetreward_model_load_buffer(buf, 0, &out_model));
    CASE("len", "one byte short", HETREWARD_BAD_FORMAT, "truncated",
         hetreward_model_load_buffer(buf, len - 1, &out_model));
    memcpy(damaged, buf, len);
    damaged[len] = 0;
    CASE("len", "one byte long (padded)", HETREWARD_BAD_FORMAT, "padded",
         hetreward_model_load_buffer(damaged, len + 1, &out_model));
    damaged[0] ^= 0x80;
    CASE("buf", "bit 7 of byte 0 flipped (magic)", HETREWARD_BAD_FORMAT, "bad magic",
         hetreward_model_load_buffer(damaged, len, &out_model));
    memcpy(damaged, buf, len);
    damaged[len - 1] ^= 0x10;
    CASE("buf", "a bit of the CRC flipped", HETREWARD_BAD_FORMAT, "checksum mismatch",
         hetreward_model_load_buffer(damaged, len, &out_model));
    memcpy(damaged, buf, len);
    damaged[13] ^= 0x01;
    CASE("buf", "a bit of the payload length flipped", HETREWARD_BAD_FORMAT,
         "truncated or padded", hetreward_model_load_buffer(damaged, len, &out_model));
    CASE("buf", "valid", HETREWARD_OK, "", hetreward_model_load_buffer(buf, len, &out_model));
    hetreward_model_free(out_model);
    reset_outputs();

    free(buf);
    free(damaged);
    unlink(path);
    unlink("bad_input_text.hrm");
    unlink("bad_input_cut.hrm");
    unlink("bad_input_flip.hrm");
}

/* ---- host safety (issue 10): caller-sized counts, hostile files, crafted models ----------- */

/* Peak resident set of this process, in KiB. */
static long peak_rss_kib(void) {
    struct rusage u;
    CHECK(getrusage(RUSAGE_SELF, &u) == 0);
    return u.ru_maxrss;
}

/* CRC-32 (IEEE, reflected), as the model file stores it. */
static uint32_t crc32_ieee(const uint8_t *p, size_t len) {
    uint32_t c = 0xFFFFFFFFu;
    size_t i;
    int k;
    for (i = 0; i < len; i++) {
        c ^= p[i];
        for (k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return c ^ 0xFFFFFFFFu;
}

/* Model-file layout (docs/model-format.md): 20-byte header, payload, CRC-32 of the payload.
 * Payload offsets of the fields the crafted models change. */
#define MF_HEADER 20
#define MF_GRAD_NORM 44
#define MF_TOL 68
#define MF_THETA 76
#define MF_FACTOR (MF_THETA + 8 * (D1 + D2))
#define MF_GAMMA_COV (MF_FACTOR + 8 * (D1 * (D1 + 1) / 2))

static void put_f64(uint8_t *payload, size_t offset, double v) {
    uint64_t bits;
    int i;
    memcpy(&bits, &v, 8);
    for (i = 0; i < 8; i++) payload[offset + (size_t)i] = (uint8_t)(bits >> (8 * i));
}

static double get_f64(const uint8_t *payload, size_t offset) {
    uint64_t bits = 0;
    double v;
    int i;
    for (i = 7; i >= 0; i--) bits = (bits << 8) | payload[offset + (size_t)i];
    memcpy(&v, &bits, 8);
    return v;
}

/* Re-seals a crafted buffer with a valid checksum, so only the content checks can refuse it. */
static void reseal(uint8_t *buf, size_t len) {
    uint32_t c = crc32_ieee(buf + MF_HEADER, len - MF_HEADER - 4);
    int i;
    for (i = 0; i < 4; i++) buf[len - 4 + (size_t)i] = (uint8_t)(c >> (8 * i));
}

static void host_safety_cases(void) {
    hetreward_fit_params p;
    uint8_t *buf, *crafted;
    size_t len = 0, i;
    long rss_before;
    FILE *f;

    /* Class 1: every count a caller passes is bounded before anything is allocated. */
    function_header("hetreward_fitter_new");
    PARAMS_CASE("params.restarts", "UINT32_MAX (would allocate 200 GB of starts)",
                HETREWARD_INVALID_ARGUMENT, "`params.restarts`" SEP "limit of 1000",
                p.restarts = UINT32_MAX);
    PARAMS_CASE("params.restarts", "1001 (one above the limit)", HETREWARD_INVALID_ARGUMENT,
                "`params.restarts`" SEP "1001", p.restarts = 1001);
    PARAMS_CASE("params.threads", "1000000", HETREWARD_INVALID_ARGUMENT,
                "`params.threads`" SEP "limit of 1024", p.threads = 1000000);
    PARAMS_CASE("params.threads", "UINT32_MAX", HETREWARD_INVALID_ARGUMENT, "`params.threads`",
                p.threads = UINT32_MAX);
    PARAMS_CASE("params.max_iter", "UINT64_MAX", HETREWARD_INVALID_ARGUMENT,
                "`params.max_iter`" SEP "limit of 1000000000", p.max_iter = UINT64_MAX);
    PARAMS_CASE("params.restarts", "1000 (the limit itself)", HETREWARD_OK, "",
                p.restarts = 1000);
    hetreward_fitter_free(out_fitter);
    reset_outputs();

    /* Hostile files: decided from the header, before any data is read or decoded. */
    function_header("hetreward_dataset_load");
    /* A sparse 320 MB file whose header already disagrees (z has one row more than y): the old
     * reader decoded y (160 MB of doubles) before looking at z's shape. */
    {
        const char *json =
            "{\"y\":{\"dtype\":\"F32\",\"shape\":[20000000],\"data_offsets\":[0,80000000]},"
            "\"z\":{\"dtype\":\"F32\",\"shape\":[20000001,2],\"data_offsets\":[80000000,240000008]},"
            "\"psi0\":{\"dtype\":\"F32\",\"shape\":[20000000],\"data_offsets\":[240000008,320000008]}}";
        size_t hlen = strlen(json);
        unsigned char head[8];
        for (i = 0; i < 8; i++) head[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
        f = fopen("bad_input_sparse.safetensors", "wb");
        CHECK(f != NULL);
        CHECK(fwrite(head, 1, 8, f) == 8 && fwrite(json, 1, hlen, f) == hlen);
        CHECK(fclose(f) == 0);
        CHECK(truncate("bad_input_sparse.safetensors", (off_t)(8 + hlen + 320000008u)) == 0);
        rss_before = peak_rss_kib();
        CASE("file", "sparse 320 MB safetensors whose header has z with n + 1 rows",
             HETREWARD_BAD_FORMAT, "tensor `z` has shape [20000001, 2]; expected [20000000, _]",
             hetreward_dataset_load("bad_input_sparse.safetensors", &out_ds));
        /* Nothing was decoded: the peak grew by far less than the 160 MB y would take. */
        CHECK(peak_rss_kib() - rss_before < 32 * 1024);
        unlink("bad_input_sparse.safetensors");
    }
    write_safetensors("bad_input.safetensors",
                      "{\"y\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]},"
                      "\"y\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[8,16]}}",
                      "\0\0\0\0\0\0\xf0\x3f\0\0\0\0\0\0\0\0", 16);
    CASE("file", "safetensors: tensor `y` named twice in the header", HETREWARD_BAD_FORMAT,
         "tensor `y` is named twice",
         hetreward_dataset_load("bad_input.safetensors", &out_ds));
    write_safetensors("bad_input.safetensors",
                      "{\"y\":{\"dtype\":\"F64\",\"shape\":[4611686018427387904,4],"
                      "\"data_offsets\":[0,8]}}",
                      "\0\0\0\0\0\0\xf0\x3f", 8);
    CASE("file", "safetensors: a shape whose byte size overflows", HETREWARD_BAD_FORMAT,
         "tensor `y` has shape",
         hetreward_dataset_load("bad_input.safetensors", &out_ds));
    /* A header of 200,000 feature columns and one row: parsed in linear time (the old column
     * lookup was quadratic and never finished on a million), then refused for n <= d1. */
    f = fopen("bad_input_wide.csv", "w");
    CHECK(f != NULL);
    fprintf(f, "y,psi0");
    for (i = 1; i <= 200000; i++) fprintf(f, ",z%zu", i);
    fprintf(f, "\n1,1");
    for (i = 1; i <= 200000; i++) fprintf(f, ",0.5");
    fprintf(f, "\n");
    CHECK(fclose(f) == 0);
    CASE("file", "CSV: 200,000 feature columns, one row", HETREWARD_BAD_FORMAT,
         "need n > d1 + d2", hetreward_dataset_load("bad_input_wide.csv", &out_ds));
    unlink("bad_input_wide.csv");
    write_text("bad_input.csv", "y,psi0,z1,z1\n1,1,0.5,1\n0,1,-0.5,2\n1,1,0.25,3\n0,1,1,1\n");
    CASE("file", "CSV: column `z1` twice", HETREWARD_BAD_FORMAT,
         "column `z1` appears twice" SEP "columns 3 and 4",
         hetreward_dataset_load("bad_input.csv", &out_ds));
    write_text("bad_input.csv", "y,psi0,z1,y\n1,1,0.5,1\n0,1,-0.5,0\n1,1,0.25,1\n0,1,1,1\n");
    CASE("file", "CSV: column `y` twice", HETREWARD_BAD_FORMAT, "column `y` appears twice",
         hetreward_dataset_load("bad_input.csv", &out_ds));
    write_text("bad_input.csv", "y,psi0,z1,z01\n1,1,0.5,1\n0,1,-0.5,2\n1,1,0.25,3\n0,1,1,1\n");
    CASE("file", "CSV: `z01` next to `z1`", HETREWARD_BAD_FORMAT, "column `z01` is ambiguous",
         hetreward_dataset_load("bad_input.csv", &out_ds));
    write_text("bad_input.csv", "y,psi0,z1,psi+1\n1,1,0.5,1\n0,1,-0.5,2\n1,1,0.25,3\n0,1,1,1\n");
    CASE("file", "CSV: `psi+1`", HETREWARD_BAD_FORMAT, "column `psi+1` is ambiguous",
         hetreward_dataset_load("bad_input.csv", &out_ds));
    unlink("bad_input.csv");
    unlink("bad_input.safetensors");

    /* Class 3: a model that passes its checksum but is nonsense is refused on load. */
    function_header("hetreward_model_load_buffer");
    CHECK_OK(hetreward_model_save_buffer(model, NULL, 0, &len));
    buf = (uint8_t *)checked_malloc(len);
    crafted = (uint8_t *)checked_malloc(len);
    CHECK_OK(hetreward_model_save_buffer(model, buf, len, &len));
#define CRAFTED_CASE(cond, needle, change)                                              \
    do {                                                                                \
        uint8_t *payload = crafted + MF_HEADER;                                         \
        memcpy(crafted, buf, len);                                                      \
        change;                                                                         \
        reseal(crafted, len);                                                           \
        CASE("buf", cond, HETREWARD_BAD_FORMAT, "<buffer>" SEP needle,                  \
             hetreward_model_load_buffer(crafted, len, &out_model));                    \
        (void)payload;                                                                  \
    } while (0)
    CRAFTED_CASE("valid checksum, Cov(gamma) indefinite (off-diagonal = 3 x the SEs)",
                 "Cov(gamma) is not a covariance matrix",
                 put_f64(payload, MF_GAMMA_COV + 8,
                         3.0 * sqrt(get_f64(payload, MF_GAMMA_COV) *
                                    get_f64(payload, MF_GAMMA_COV + 8 * (D2 + 1)))));
    CRAFTED_CASE("valid checksum, Cov(gamma) asymmetric",
                 "Cov(gamma) is not a covariance matrix" SEP "asymmetric",
                 put_f64(payload, MF_GAMMA_COV + 8, 0.5 * get_f64(payload, MF_GAMMA_COV + 8)));
    CRAFTED_CASE("valid checksum, a negative variance of gamma",
                 "the variance of gamma[0] is negative",
                 put_f64(payload, MF_GAMMA_COV, -1e-3));
    CRAFTED_CASE("valid checksum, Cov(theta) factor entry 1e200 (SE overflows)",
                 "theta[1] overflows", put_f64(payload, MF_FACTOR + 8, 1e200));
    CRAFTED_CASE("valid checksum, Cov(theta) factor with a zero diagonal entry",
                 "non-positive diagonal", put_f64(payload, MF_FACTOR + 8 * 2, 0.0));
    CRAFTED_CASE("valid checksum, report grad_norm NaN", "`report.grad_norm`",
                 put_f64(payload, MF_GRAD_NORM, NAN));
    CRAFTED_CASE("valid checksum, report tol -1", "`report.tol`", put_f64(payload, MF_TOL, -1.0));
    CRAFTED_CASE("valid checksum, theta[0] +Inf", "`theta`", put_f64(payload, MF_THETA, INFINITY));
#undef CRAFTED_CASE
    free(buf);
    free(crafted);

    /* Class 3 at query time: no silent overflow, no clamped variance. */
    {
        double big[D2] = {1e308, 1e308};
        function_header("hetreward_model_rationality");
        CASE("psi", "1e308 in every entry (sigma or its SE overflows)",
             HETREWARD_INVALID_ARGUMENT, "`psi`" SEP "overflows",
             hetreward_model_rationality(model, 1e308, big, D2, &out_sigma, &out_se));
    }

    /* Issue 22: a resized-bootstrap model with a valid checksum and a finite gamma bias of
     * -1e308 loads; its calibrated rationality (sigma_hat - bias . psi) overflows, which is an
     * error naming psi, never HETREWARD_OK with inf [inf, inf]. */
    {
        hetreward_fit_params rp = hetreward_fit_default_params();
        hetreward_fitter *resized_fitter;
        hetreward_model *resized, *loaded = NULL;
        hetreward_reward r;
        double ones[D2] = {1.0, 1.0};
        /* The interval section follows theta, gamma, the packed Cov(theta) factor and
         * Cov(gamma); the gamma bias is 50 bytes into it (docs/model-format.md). */
        size_t bias_at = MF_GAMMA_COV + 8 * (D2 * D2) + 50;
        int k;
        rp.intervals = HETREWARD_INTERVALS_RESIZED;
        rp.bootstrap_reps = 10;
        rp.threads = 1;
        CHECK_OK(hetreward_fitter_new(&rp, &resized_fitter));
        CHECK_OK(hetreward_fitter_fit(resized_fitter, dataset, &resized));
        hetreward_fitter_free(resized_fitter);
        CHECK_OK(hetreward_model_save_buffer(resized, NULL, 0, &len));
        buf = (uint8_t *)checked_malloc(len);
        CHECK_OK(hetreward_model_save_buffer(resized, buf, len, &len));
        for (k = 0; k < D2; k++) put_f64(buf + MF_HEADER, bias_at + 8 * (size_t)k, -1e308);
        reseal(buf, len);
        CHECK_OK(hetreward_model_load_buffer(buf, len, &loaded));
        function_header("hetreward_model_rationality_interval");
        CASE("psi", "resized model, crafted gamma bias -1e308 (valid checksum): overflows",
             HETREWARD_INVALID_ARGUMENT, "`psi`" SEP "overflows",
             hetreward_model_rationality_interval(loaded, 1.0, ones, D2, 0.05, &r));
        hetreward_model_free(loaded);
        hetreward_model_free(resized);
        free(buf);
    }

    /* Class 4: every alpha in (0, 1) is usable; tiny ones are not blamed on the features. */
    function_header("hetreward_model_score");
    CASE("alpha", "1e-300 (valid: q = 37.07)", HETREWARD_OK, "",
         hetreward_model_score(model, phi, M, D1, 1e-300, out_rewards));
    for (i = 0; i < M; i++)
        CHECK(out_rewards[i].upper - out_rewards[i].reward > 37.0 * out_rewards[i].se &&
              out_rewards[i].upper - out_rewards[i].reward < 37.1 * out_rewards[i].se);
    reset_outputs();
    CASE("alpha", "4.9e-324 (the smallest double)", HETREWARD_OK, "",
         hetreward_model_score(model, phi, M, D1, 4.9e-324, out_rewards));
    reset_outputs();
}

/* ---- issue 22: readers bound what they buffer, models must make sense, outputs are checked
 * before any work -------------------------------------------------------------------------- */

static double now_seconds(void) {
    struct timespec t;
    CHECK(clock_gettime(CLOCK_MONOTONIC, &t) == 0);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A sparse file of `size` bytes starting with `len` bytes of `head`. */
static void make_sparse(const char *path, const void *head, size_t len, off_t size) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (len > 0) CHECK(fwrite(head, 1, len, f) == len);
    CHECK(fclose(f) == 0);
    CHECK(truncate(path, size) == 0);
}

/* Runs `check` and asserts that it took under 10 s and grew the peak RSS by under 64 MB. */
#define BOUNDED(check)                                                  \
    do {                                                                \
        long rss_before_ = peak_rss_kib();                              \
        double started_ = now_seconds();                                \
        check;                                                          \
        CHECK(now_seconds() - started_ < 10.0);                         \
        CHECK(peak_rss_kib() - rss_before_ < 64 * 1024);                \
    } while (0)

static void issue22_cases(void) {
    const off_t ten_gb = (off_t)10 << 30;
    uint8_t head[MF_HEADER];
    uint64_t payload_len = (uint64_t)ten_gb - MF_HEADER - 4;
    hetreward_fit_params p = hetreward_fit_default_params();
    hetreward_fitter *resized_fitter = NULL;
    hetreward_model *resized = NULL;
    uint8_t *buf, *crafted;
    size_t len = 0, i, section, draws;

    /* Class 1: an endless source or a huge sparse file is refused naming the file, in seconds
     * and in bounded memory (the CSV reader grew its header row until malloc failed: SIGABRT).
     * A device such as /dev/zero is not even opened: inputs are regular files (issue 32). */
    function_header("hetreward_dataset_load");
    unlink("bad_input_zero.csv");
    unlink("bad_input_urandom.csv");
    unlink("bad_input_zero.safetensors");
    CHECK(symlink("/dev/zero", "bad_input_zero.csv") == 0);
    CHECK(symlink("/dev/urandom", "bad_input_urandom.csv") == 0);
    CHECK(symlink("/dev/zero", "bad_input_zero.safetensors") == 0);
    make_sparse("bad_input_sparse.csv", NULL, 0, ten_gb);
    make_sparse("bad_input_sparse.safetensors", NULL, 0, ten_gb);
    BOUNDED(CASE("path", "a link to /dev/zero as .csv (used to abort the host: SIGABRT)",
                 HETREWARD_IO, "bad_input_zero.csv" SEP "is a character device, not a regular file",
                 hetreward_dataset_load("bad_input_zero.csv", &out_ds)));
    BOUNDED(CASE("path", "a 10 GB sparse file as .csv (used to abort the host)",
                 HETREWARD_BAD_FORMAT, "bad_input_sparse.csv" SEP "runs past",
                 hetreward_dataset_load("bad_input_sparse.csv", &out_ds)));
    /* Random bytes: the message depends on them, so the case is checked, not tabled. */
    BOUNDED(CHECK_ERR(hetreward_dataset_load("bad_input_urandom.csv", &out_ds),
                      HETREWARD_IO, "bad_input_urandom.csv"));
    CHECK(out_ds == DS_SENTINEL);
    BOUNDED(CHECK_ERR(hetreward_dataset_load("bad_input_zero.safetensors", &out_ds),
                      HETREWARD_IO, "bad_input_zero.safetensors"));
    BOUNDED(CHECK_ERR(hetreward_dataset_load("bad_input_sparse.safetensors", &out_ds),
                      HETREWARD_BAD_FORMAT, "bad_input_sparse.safetensors"));
    CHECK(out_ds == DS_SENTINEL);

    function_header("hetreward_model_load");
    memcpy(head, "HETRWRD\0", 8);
    for (i = 0; i < 4; i++) head[8 + i] = (uint8_t)(2u >> (8 * i));
    for (i = 0; i < 8; i++) head[12 + i] = (uint8_t)(payload_len >> (8 * i));
    make_sparse("bad_input_sparse.hrm", head, sizeof head, ten_gb);
    BOUNDED(CASE("path", "a 10 GB sparse file behind a valid header (used to be read whole)",
                 HETREWARD_BAD_FORMAT, "bad_input_sparse.hrm" SEP "d1 = 0",
                 hetreward_model_load("bad_input_sparse.hrm", &out_model)));
    make_sparse("bad_input_sparse0.hrm", NULL, 0, ten_gb);
    BOUNDED(CHECK_ERR(hetreward_model_load("bad_input_sparse0.hrm", &out_model),
                      HETREWARD_BAD_FORMAT, "bad_input_sparse0.hrm"));
    unlink("bad_input_zero.hrm");
    CHECK(symlink("/dev/zero", "bad_input_zero.hrm") == 0);
    BOUNDED(CHECK_ERR(hetreward_model_load("bad_input_zero.hrm", &out_model),
                      HETREWARD_IO, "bad_input_zero.hrm"));
    CHECK(out_model == MODEL_SENTINEL);
    unlink("bad_input_zero.csv");
    unlink("bad_input_urandom.csv");
    unlink("bad_input_zero.safetensors");
    unlink("bad_input_zero.hrm");
    unlink("bad_input_sparse.csv");
    unlink("bad_input_sparse.safetensors");
    unlink("bad_input_sparse.hrm");
    unlink("bad_input_sparse0.hrm");

    /* Class 3: an interval section whose figures cannot be is refused, checksum valid or not. */
    p.intervals = HETREWARD_INTERVALS_RESIZED;
    p.bootstrap_reps = 10;
    CHECK_OK(hetreward_fitter_new(&p, &resized_fitter));
    CHECK_OK(hetreward_fitter_fit(resized_fitter, dataset, &resized));
    CHECK_OK(hetreward_model_save_buffer(resized, NULL, 0, &len));
    buf = (uint8_t *)checked_malloc(len);
    crafted = (uint8_t *)checked_malloc(len);
    CHECK_OK(hetreward_model_save_buffer(resized, buf, len, &len));
    /* Payload offsets: the section follows Cov(gamma); requested u8, method u8, B u64, seed
     * u64, diverged u64, shrink f64, alpha_hat f64, c_hat f64, bias f64[D2], theta draws
     * f32[B D1], gamma draws f32[B D2]. */
    section = MF_GAMMA_COV + 8 * D2 * D2;
    draws = section + 50 + 8 * D2;
    function_header("hetreward_model_load_buffer");
#define SECTION_CASE(cond, needle, change)                                               \
    do {                                                                                 \
        uint8_t *payload = crafted + MF_HEADER;                                          \
        memcpy(crafted, buf, len);                                                       \
        change;                                                                          \
        reseal(crafted, len);                                                            \
        CASE("buf", cond, HETREWARD_BAD_FORMAT, "<buffer>" SEP "interval section" SEP needle, \
             hetreward_model_load_buffer(crafted, len, &out_model));                     \
    } while (0)
    SECTION_CASE("resized model, valid checksum, c_hat = -3", "`c_hat` = -3",
                 put_f64(payload, section + 42, -3.0));
    SECTION_CASE("resized model, valid checksum, c_hat = 0", "`c_hat` = 0",
                 put_f64(payload, section + 42, 0.0));
    SECTION_CASE("resized model, valid checksum, shrink = -0.5", "`shrink` = -0.5",
                 put_f64(payload, section + 26, -0.5));
    SECTION_CASE("resized model, valid checksum, shrink = 7", "`shrink` = 7",
                 put_f64(payload, section + 26, 7.0));
    SECTION_CASE("resized model, valid checksum, alpha_hat = -1", "`alpha_hat` = -1",
                 put_f64(payload, section + 34, -1.0));
    SECTION_CASE("resized model, valid checksum, bias of gamma[1] NaN", "`gamma_bias`[1] = NaN",
                 put_f64(payload, section + 50 + 8, NAN));
    SECTION_CASE("resized model, valid checksum, B = 5 (below 10)", "`B` = 5",
                 payload[section + 2] = 5);
    SECTION_CASE("resized model, valid checksum, diverged = B + 1", "`diverged` = 11",
                 payload[section + 18] = 11);
    SECTION_CASE("resized model, valid checksum, a theta draw +Inf", "`theta draws`[0][1] = inf",
                 memcpy(payload + draws + 4, "\x00\x00\x80\x7f", 4));
#undef SECTION_CASE
    CASE("buf", "the resized model itself", HETREWARD_OK, "",
         hetreward_model_load_buffer(buf, len, &out_model));
    hetreward_model_free(out_model);
    reset_outputs();
    free(buf);
    free(crafted);
    hetreward_model_free(resized);
    hetreward_fitter_free(resized_fitter);

    /* Issue 31 item 1 / issue 32 item 3: a cluster model on 6 annotators (6 draws, fewer than a
     * bootstrap's least B) loads from its own bytes; the same bytes with every draw of theta[0]
     * equal (SE 0, z = inf) are refused, naming the coefficient and the cluster jackknife. */
    {
        int64_t six[N];
        hetreward_dataset *six_ds = NULL;
        for (i = 0; i < N; i++) six[i] = (int64_t)(i % 6);
        CHECK_OK(hetreward_dataset_new(N, D1, D2, data.z, data.psi0, data.psi, data.y, six,
                                       &six_ds));
        p = hetreward_fit_default_params();
        p.intervals = HETREWARD_INTERVALS_CLUSTER_ONESTEP;
        CHECK_OK(hetreward_fitter_new(&p, &resized_fitter));
        CHECK_OK(hetreward_fitter_fit(resized_fitter, six_ds, &resized));
        CHECK_OK(hetreward_model_save_buffer(resized, NULL, 0, &len));
        buf = (uint8_t *)checked_malloc(len);
        crafted = (uint8_t *)checked_malloc(len);
        CHECK_OK(hetreward_model_save_buffer(resized, buf, len, &len));
        CASE("buf", "a cluster-onestep model fitted on 6 annotators (6 draws)", HETREWARD_OK, "",
             hetreward_model_load_buffer(buf, len, &out_model));
        hetreward_model_free(out_model);
        reset_outputs();
        memcpy(crafted, buf, len);
        for (i = 1; i < 6; i++) memcpy(crafted + MF_HEADER + draws + 4 * D1 * i,
                                       crafted + MF_HEADER + draws, 4);
        reseal(crafted, len);
        CASE("buf", "cluster model, valid checksum, all 6 draws of theta[0] equal (SE 0)",
             HETREWARD_BAD_FORMAT,
             "<buffer>" SEP "`theta draws`[*][0]: all 6 draws equal" SEP
             "the cluster jackknife (one-step)",
             hetreward_model_load_buffer(crafted, len, &out_model));
        free(buf);
        free(crafted);
        hetreward_model_free(resized);
        hetreward_fitter_free(resized_fitter);
        hetreward_dataset_free(six_ds);
    }

    /* Class 4: a path that names a folder by its spelling is refused before anything is
     * written (it used to fail only at the final rename). */
    function_header("hetreward_model_save");
    CASE("path", "\"bad_input_m.hrm/\" (a trailing slash names a folder)",
         HETREWARD_INVALID_ARGUMENT, "`path`" SEP "names a folder",
         hetreward_model_save(model, "bad_input_m.hrm/"));
    CASE("path", "\"bad_input_m.hrm/.\"", HETREWARD_INVALID_ARGUMENT,
         "`path`" SEP "names a folder", hetreward_model_save(model, "bad_input_m.hrm/."));
    CHECK(access("bad_input_m.hrm", F_OK) != 0);
}

/* Every bit flip and every truncation of a model, through the C API's buffer loader (the Rust
 * unit tests src/io/model_file.rs do the same on from_bytes). Returns the number of buffers. */
/* The training data as a safetensors file with an extra `cluster` tensor [N] of `dtype`
 * (`cluster_bytes`: N values of its width) and `metadata` (NULL = none) as `__metadata__`. */
static void write_clustered_safetensors(const char *path, const char *metadata,
                                        const char *dtype, const void *cluster_bytes,
                                        size_t width) {
    const size_t z = N * D1 * 8, v = N * 8, psi = N * D2 * 8, c = N * width;
    char json[1024];
    unsigned char *buf = (unsigned char *)checked_malloc(z + 2 * v + psi + c);
    int k = snprintf(
        json, sizeof json,
        "{%s%s%s\"z\":{\"dtype\":\"F64\",\"shape\":[%d,%d],\"data_offsets\":[0,%zu]},"
        "\"psi0\":{\"dtype\":\"F64\",\"shape\":[%d],\"data_offsets\":[%zu,%zu]},"
        "\"psi\":{\"dtype\":\"F64\",\"shape\":[%d,%d],\"data_offsets\":[%zu,%zu]},"
        "\"y\":{\"dtype\":\"F64\",\"shape\":[%d],\"data_offsets\":[%zu,%zu]},"
        "\"cluster\":{\"dtype\":\"%s\",\"shape\":[%d],\"data_offsets\":[%zu,%zu]}}",
        metadata ? "\"__metadata__\":" : "", metadata ? metadata : "", metadata ? "," : "", N,
        D1, z, N, z, z + v, N, D2, z + v, z + v + psi, N, z + v + psi, z + 2 * v + psi, dtype, N,
        z + 2 * v + psi, z + 2 * v + psi + c);
    CHECK(k > 0 && (size_t)k < sizeof json);
    memcpy(buf, data.z, z);
    memcpy(buf + z, data.psi0, v);
    memcpy(buf + z + v, data.psi, psi);
    memcpy(buf + z + v + psi, data.y, v);
    memcpy(buf + z + 2 * v + psi, cluster_bytes, c);
    write_safetensors(path, json, buf, z + 2 * v + psi + c);
    free(buf);
}

/* The number of clusters the heterogeneity diagnostic of `model` counts in `ds`. */
static size_t clusters_in(const hetreward_dataset *ds) {
    double effects[D1 + D2], effective[D1 + D2];
    hetreward_heterogeneity info;
    CHECK_OK(hetreward_model_heterogeneity(model, ds, D1 + D2, effects, effective, &info));
    return info.clusters;
}

/* Issue 32: inputs that never answer, ids quoted as written, metadata as the format says. */
static void issue32_cases(void) {
    const int64_t big = (int64_t)1 << 53; /* 2^53 + 0..7: eight ids, five through a double */
    int64_t ids[N];
    double floats[N];
    uint64_t wide[N];
    size_t i;
    FILE *f;

    /* Class 2: a FIFO with no writer named like an input is refused at once (every loader
     * blocked forever in open). The alarm turns a regression into a failure, not a hang. */
    unlink("bad_input_fifo.csv");
    unlink("bad_input_fifo.safetensors");
    unlink("bad_input_fifo.hrm");
    CHECK(mkfifo("bad_input_fifo.csv", 0644) == 0);
    CHECK(mkfifo("bad_input_fifo.safetensors", 0644) == 0);
    CHECK(mkfifo("bad_input_fifo.hrm", 0644) == 0);
    alarm(60);
    function_header("hetreward_dataset_load");
    CASE("path", "a FIFO with no writer named like a CSV file (used to block forever)",
         HETREWARD_IO, "bad_input_fifo.csv" SEP "is a FIFO (named pipe), not a regular file",
         hetreward_dataset_load("bad_input_fifo.csv", &out_ds));
    CASE("path", "a FIFO with no writer named like a safetensors file", HETREWARD_IO,
         "bad_input_fifo.safetensors" SEP "is a FIFO (named pipe)",
         hetreward_dataset_load("bad_input_fifo.safetensors", &out_ds));
    function_header("hetreward_dataset_load_shard");
    CASE("path", "a FIFO with no writer", HETREWARD_IO,
         "bad_input_fifo.csv" SEP "is a FIFO (named pipe)",
         hetreward_dataset_load_shard("bad_input_fifo.csv", &out_ds));
    function_header("hetreward_model_load");
    CASE("path", "a FIFO with no writer (used to block forever)", HETREWARD_IO,
         "bad_input_fifo.hrm" SEP "is a FIFO (named pipe), not a regular file",
         hetreward_model_load("bad_input_fifo.hrm", &out_model));
    alarm(0);
    unlink("bad_input_fifo.csv");
    unlink("bad_input_fifo.safetensors");
    unlink("bad_input_fifo.hrm");

    /* Class 4: cluster ids above 2^53 are read exactly (2^53 + 1 was "not an integer", quoted
     * as 2^53) from CSV text, I64 tensors and the caller's int64_t arrays; a value no id can be
     * is refused quoted as written. The heterogeneity diagnostic counts the clusters. */
    for (i = 0; i < N; i++) ids[i] = big + (int64_t)(i % 8);
    function_header("hetreward_dataset_new");
    CASE("cluster", "ids 2^53 + 0..7 (eight clusters, exact)", HETREWARD_OK, "",
         hetreward_dataset_new(N, D1, D2, data.z, data.psi0, data.psi, data.y, ids, &out_ds));
    CHECK(clusters_in(out_ds) == 8);
    hetreward_dataset_free(out_ds);
    reset_outputs();
    function_header("hetreward_dataset_load");
    f = fopen("bad_input_ids.csv", "w");
    CHECK(f != NULL);
    fprintf(f, "cluster,y,psi0,z1,z2,z3,z4,psi1,psi2\n");
    for (i = 0; i < N; i++) {
        size_t j;
        fprintf(f, "%lld,%g,%g", (long long)ids[i], data.y[i], data.psi0[i]);
        for (j = 0; j < D1; j++) fprintf(f, ",%.17g", data.z[i * D1 + j]);
        for (j = 0; j < D2; j++) fprintf(f, ",%.17g", data.psi[i * D2 + j]);
        fprintf(f, "\n");
    }
    CHECK(fclose(f) == 0);
    CASE("file", "CSV: cluster ids 2^53 + 0..7 (used to be refused as not integers)",
         HETREWARD_OK, "", hetreward_dataset_load("bad_input_ids.csv", &out_ds));
    CHECK(clusters_in(out_ds) == 8);
    hetreward_dataset_free(out_ds);
    reset_outputs();
    write_text("bad_input_ids.csv",
               "cluster,y,psi0,z1\n1,1,1,0.5\n-9223372036854775809,0,1,-0.5\n3,1,1,0.25\n");
    CASE("file", "CSV: cluster id -2^63 - 1 on data row 2", HETREWARD_BAD_FORMAT,
         "column `cluster`, data row 2: cluster id `-9223372036854775809` is outside the range "
         "of 64-bit ids",
         hetreward_dataset_load("bad_input_ids.csv", &out_ds));
    write_clustered_safetensors("bad_input_ids.safetensors", NULL, "I64", ids, 8);
    CASE("file", "safetensors: I64 cluster ids 2^53 + 0..7", HETREWARD_OK, "",
         hetreward_dataset_load("bad_input_ids.safetensors", &out_ds));
    CHECK(clusters_in(out_ds) == 8);
    hetreward_dataset_free(out_ds);
    reset_outputs();
    for (i = 0; i < N; i++) floats[i] = (double)(i % 8);
    floats[5] = 9007199254740993.0; /* stored as 2^53 */
    write_clustered_safetensors("bad_input_ids.safetensors", NULL, "F64", floats, 8);
    CASE("file", "safetensors: F64 cluster id 2^53 + 1 (stored as 2^53) on row 5",
         HETREWARD_BAD_FORMAT,
         "tensor `cluster`, row 5: cluster id `9007199254740992.0` is at or beyond 2^53",
         hetreward_dataset_load("bad_input_ids.safetensors", &out_ds));
    for (i = 0; i < N; i++) wide[i] = (uint64_t)(i % 8);
    wide[9] = UINT64_MAX;
    write_clustered_safetensors("bad_input_ids.safetensors", NULL, "U64", wide, 8);
    CASE("file", "safetensors: U64 cluster id 2^64 - 1 on row 9", HETREWARD_BAD_FORMAT,
         "tensor `cluster`, row 9: cluster id `18446744073709551615` is outside",
         hetreward_dataset_load("bad_input_ids.safetensors", &out_ds));

    /* Class 5: `__metadata__` as the format's reference implementation reads it (null or an
     * object of strings); a nested object was accepted silently. */
    write_clustered_safetensors("bad_input_ids.safetensors",
                                "{\"format\":\"pt\",\"config\":{\"layers\":2}}", "I64", ids, 8);
    CASE("file", "safetensors: `__metadata__` with a nested object (used to be accepted)",
         HETREWARD_BAD_FORMAT,
         "bad_input_ids.safetensors" SEP "expected a string as `__metadata__` entry `config`",
         hetreward_dataset_load("bad_input_ids.safetensors", &out_ds));
    write_clustered_safetensors("bad_input_ids.safetensors", "{\"format\":\"pt\"}", "I64", ids,
                                8);
    CASE("file", "safetensors: `__metadata__` of strings", HETREWARD_OK, "",
         hetreward_dataset_load("bad_input_ids.safetensors", &out_ds));
    hetreward_dataset_free(out_ds);
    reset_outputs();
    unlink("bad_input_ids.csv");
    unlink("bad_input_ids.safetensors");
}

static size_t exhaustive_buffer_damage(void) {
    uint8_t *buf, *damaged;
    size_t len = 0, bit, cut, tried = 0;
    hetreward_model *m = MODEL_SENTINEL;
    CHECK_OK(hetreward_model_save_buffer(model, NULL, 0, &len));
    buf = (uint8_t *)checked_malloc(len);
    damaged = (uint8_t *)checked_malloc(len);
    CHECK_OK(hetreward_model_save_buffer(model, buf, len, &len));
    for (bit = 0; bit < 8 * len; bit++) {
        memcpy(damaged, buf, len);
        damaged[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        CHECK_STATUS(hetreward_model_load_buffer(damaged, len, &m), HETREWARD_BAD_FORMAT);
        CHECK(m == MODEL_SENTINEL);
        tried++;
    }
    for (cut = 0; cut < len; cut++) {
        CHECK_ERR(hetreward_model_load_buffer(buf, cut, &m), HETREWARD_BAD_FORMAT, "truncated");
        CHECK(m == MODEL_SENTINEL);
        tried++;
    }
    CHECK_OK(hetreward_model_load_buffer(buf, len, &m));
    hetreward_model_free(m);
    free(buf);
    free(damaged);
    return tried;
}

/* ---- the table in docs/errors.md ----------------------------------------------------------- */

/* The shard constructors (issue 22): the checks of their whole-dataset twins except
 * identifiability, which is the merged shards'. A 2-row shard (fewer rows than parameters) is
 * accepted; everything else is refused exactly as hetreward_dataset_new() refuses it. */
static void shard_dataset_cases(void) {
    float zf[N * D1], psi0f[N], psif[N * D2], yf[N];
    size_t i;
    for (i = 0; i < N * D1; i++) zf[i] = (float)data.z[i];
    for (i = 0; i < N; i++) psi0f[i] = (float)data.psi0[i];
    for (i = 0; i < N * D2; i++) psif[i] = (float)data.psi[i];
    for (i = 0; i < N; i++) yf[i] = (float)data.y[i];

    function_header("hetreward_dataset_new_shard");
    CASE("z", "NULL", HETREWARD_NULL_POINTER, "`z`",
         hetreward_dataset_new_shard(N, D1, D2, NULL, data.psi0, data.psi, data.y, NULL, &out_ds));
    CASE("out_dataset", "NULL", HETREWARD_NULL_POINTER, "`out_dataset`",
         hetreward_dataset_new_shard(N, D1, D2, data.z, data.psi0, data.psi, data.y, NULL, NULL));
    CASE("n", "0", HETREWARD_DIMENSION_MISMATCH, "`n`" SEP "at least one sample",
         hetreward_dataset_new_shard(0, D1, D2, data.z, data.psi0, data.psi, data.y, NULL, &out_ds));
    CASE("n", "2 (fewer rows than d1 + d2: identifiability is the merged shards')", HETREWARD_OK,
         "", hetreward_dataset_new_shard(2, D1, D2, data.z, data.psi0, data.psi, data.y, NULL,
                                         &out_ds));
    hetreward_dataset_free(out_ds);
    reset_outputs();

    function_header("hetreward_dataset_new_shard_f32");
    zf[7] = NAN;
    CASE("z", "NaN at [1][3]", HETREWARD_NON_FINITE, "`z` at index 7",
         hetreward_dataset_new_shard_f32(N, D1, D2, zf, psi0f, psif, yf, NULL, &out_ds));
    zf[7] = (float)data.z[7];
    yf[9] = 3.0f;
    CASE("y", "3 at [9]", HETREWARD_INVALID_ARGUMENT, "y[9] = 3",
         hetreward_dataset_new_shard_f32(N, D1, D2, zf, psi0f, psif, yf, NULL, &out_ds));
    yf[9] = (float)data.y[9];
    CASE("n", "2 (fewer rows than d1 + d2)", HETREWARD_OK, "",
         hetreward_dataset_new_shard_f32(2, D1, D2, zf, psi0f, psif, yf, NULL, &out_ds));
    hetreward_dataset_free(out_ds);
    reset_outputs();

    function_header("hetreward_dataset_load_shard");
    CASE("path", "NULL", HETREWARD_NULL_POINTER, "`path`",
         hetreward_dataset_load_shard(NULL, &out_ds));
    CASE("path", "file does not exist", HETREWARD_IO, "bad_input_missing.csv" SEP "No such file",
         hetreward_dataset_load_shard("bad_input_missing.csv", &out_ds));
    write_training_csv("bad_input_shard.csv", 2, NULL);
    CASE("out_dataset", "NULL", HETREWARD_NULL_POINTER, "`out_dataset`",
         hetreward_dataset_load_shard("bad_input_shard.csv", NULL));
    CASE("path", "a 2-row CSV (fewer rows than d1 + d2)", HETREWARD_OK, "",
         hetreward_dataset_load_shard("bad_input_shard.csv", &out_ds));
    hetreward_dataset_free(out_ds);
    reset_outputs();
    unlink("bad_input_shard.csv");
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    char *text;
    long size;
    if (f == NULL) return NULL;
    CHECK(fseek(f, 0, SEEK_END) == 0);
    size = ftell(f);
    CHECK(size >= 0 && fseek(f, 0, SEEK_SET) == 0);
    text = (char *)checked_malloc((size_t)size + 1);
    CHECK(fread(text, 1, (size_t)size, f) == (size_t)size);
    text[size] = '\0';
    fclose(f);
    *len = (size_t)size;
    return text;
}

static const char BEGIN[] = "<!-- c-api-table:begin (generated by c-tests/test_bad_input.c) -->\n";
static const char END[] = "<!-- c-api-table:end -->";

static void check_docs(const char *rendered) {
    const char *path = HETREWARD_ERRORS_DOC;
    size_t len = 0, k;
    char *doc = read_file(path, &len);
    char *begin, *end;
    const char *bless = getenv("HETREWARD_BLESS");
    if (doc == NULL) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(1);
    }
    begin = strstr(doc, BEGIN);
    end = begin ? strstr(begin, END) : NULL;
    if (begin == NULL || end == NULL) {
        fprintf(stderr, "%s lacks the markers %s ... %s\n", path, BEGIN, END);
        exit(1);
    }
    begin += strlen(BEGIN);
    if ((size_t)(end - begin) == strlen(rendered) && memcmp(begin, rendered, strlen(rendered)) == 0) {
        free(doc);
        return;
    }
    if (bless != NULL && *bless != '\0') {
        FILE *f = fopen(path, "wb");
        CHECK(f != NULL);
        CHECK(fwrite(doc, 1, (size_t)(begin - doc), f) == (size_t)(begin - doc));
        CHECK(fwrite(rendered, 1, strlen(rendered), f) == strlen(rendered));
        CHECK(fwrite(end, 1, strlen(end), f) == strlen(end));
        CHECK(fclose(f) == 0);
        printf("test_bad_input: rewrote the table in %s\n", path);
        free(doc);
        return;
    }
    for (k = 0; begin + k < end && rendered[k] && begin[k] == rendered[k]; k++) {
    }
    {
        const char *line = rendered + k;
        while (line > rendered && line[-1] != '\n') line--;
        fprintf(stderr,
                "%s: the C API table differs from the test's cases (first difference in the "
                "line starting \"%.120s\").\nRegenerate the tables with scripts/errors-doc.sh "
                "(or HETREWARD_BLESS=1 ./test_bad_input) and review the diff.\n",
                path, line);
    }
    free(doc);
    exit(1);
}

/* ---- distributed fits: shard summaries, requests, the driver loop ---------------------- */

/* One shard (the whole training set): every request answered, or a failure on demand. */
static int bad_oracle_fail;
static int bad_oracle(const uint8_t *request, size_t request_len, hetreward_shard_stats **out,
                      void *user_data) {
    (void)user_data;
    if (bad_oracle_fail) return 42;
    return (int)hetreward_shard_stats_compute_request(dataset, request, request_len, 1, out);
}

/* The bytes of the driver's first request (captured by an oracle that then stops the fit). */
static uint8_t first_request[4096];
static size_t first_request_len;
static int capture_oracle(const uint8_t *request, size_t request_len, hetreward_shard_stats **out,
                          void *user_data) {
    (void)out;
    (void)user_data;
    CHECK(request_len <= sizeof first_request);
    memcpy(first_request, request, request_len);
    first_request_len = request_len;
    return 1;
}

static void distributed_cases(void) {
    hetreward_shard_summary sum[2], bad[2];
    hetreward_shard_stats *const STATS_SENTINEL = (hetreward_shard_stats *)(uintptr_t)0x5EED;
    hetreward_shard_stats *s = STATS_SENTINEL;
    hetreward_fitter *agd = NULL;
    hetreward_fit_params p = hetreward_fit_default_params();
    uint8_t damaged[4096];

    function_header("hetreward_shard_summary_of");
    CASE("shard", "NULL", HETREWARD_NULL_POINTER, "`dataset`",
         hetreward_shard_summary_of(NULL, &sum[0]));
    CASE("out_summary", "NULL", HETREWARD_NULL_POINTER, "`out_summary`",
         hetreward_shard_summary_of(dataset, NULL));
    CHECK_OK(hetreward_shard_summary_of(dataset, &sum[0]));
    sum[1] = sum[0];

    function_header("hetreward_fit_distributed");
    CASE("fitter", "NULL", HETREWARD_NULL_POINTER, "`fitter`",
         hetreward_fit_distributed(NULL, sum, 1, bad_oracle, NULL, &out_model, NULL));
    CASE("summaries", "NULL", HETREWARD_NULL_POINTER, "`summaries`",
         hetreward_fit_distributed(fitter, NULL, 1, bad_oracle, NULL, &out_model, NULL));
    CASE("n_shards", "0", HETREWARD_INVALID_ARGUMENT, "`shards`" SEP "no shards",
         hetreward_fit_distributed(fitter, sum, 0, bad_oracle, NULL, &out_model, NULL));
    CASE("oracle", "NULL", HETREWARD_NULL_POINTER, "`oracle`",
         hetreward_fit_distributed(fitter, sum, 1, NULL, NULL, &out_model, NULL));
    CASE("out_model", "NULL", HETREWARD_NULL_POINTER, "`out_model`",
         hetreward_fit_distributed(fitter, sum, 1, bad_oracle, NULL, NULL, NULL));
    memcpy(bad, sum, sizeof bad);
    bad[1].d1 = D1 + 1;
    CASE("summaries", "shard 1's d1 changed (its checksum no longer matches)",
         HETREWARD_INVALID_ARGUMENT, "`shard 1`" SEP "damaged summary",
         hetreward_fit_distributed(fitter, bad, 2, bad_oracle, NULL, &out_model, NULL));
    memcpy(bad, sum, sizeof bad);
    bad[1].clustered = false;
    bad[1].schema = 0;
    CASE("summaries", "shard 1's checksum does not match its fields", HETREWARD_INVALID_ARGUMENT,
         "`shard 1`" SEP "damaged summary",
         hetreward_fit_distributed(fitter, bad, 2, bad_oracle, NULL, &out_model, NULL));
    CASE("summaries", "two summaries for one shard's rows (the answers cover half the rows)",
         HETREWARD_DIMENSION_MISMATCH, "`answer`" SEP "over 400 rows" SEP "over 200 rows",
         hetreward_fit_distributed(fitter, sum, 2, bad_oracle, NULL, &out_model, NULL));
    bad_oracle_fail = 1;
    CASE("oracle", "returns 42 in the first round", HETREWARD_CANCELLED,
         "the oracle returned 42 (HETREWARD_UNKNOWN_STATUS) in round 1",
         hetreward_fit_distributed(fitter, sum, 1, bad_oracle, NULL, &out_model, NULL));
    bad_oracle_fail = 0;
    p.solver = HETREWARD_SOLVER_AGD;
    CHECK_OK(hetreward_fitter_new(&p, &agd));
    CASE("fitter", "the agd solver", HETREWARD_INVALID_ARGUMENT, "`solver`" SEP "newton solver only",
         hetreward_fit_distributed(agd, sum, 1, bad_oracle, NULL, &out_model, NULL));
    hetreward_fitter_free(agd);
    p = hetreward_fit_default_params();
    p.init = HETREWARD_INIT_RANDOM;
    CHECK_OK(hetreward_fitter_new(&p, &agd));
    CASE("fitter", "a random start", HETREWARD_INVALID_ARGUMENT, "`init`" SEP "random starts",
         hetreward_fit_distributed(agd, sum, 1, bad_oracle, NULL, &out_model, NULL));
    hetreward_fitter_free(agd);
    p = hetreward_fit_default_params();
    p.intervals = HETREWARD_INTERVALS_BOOTSTRAP;
    CHECK_OK(hetreward_fitter_new(&p, &agd));
    CASE("fitter", "bootstrap intervals", HETREWARD_INVALID_ARGUMENT,
         "`params.intervals`" SEP "Wald intervals only",
         hetreward_fit_distributed(agd, sum, 1, bad_oracle, NULL, &out_model, NULL));
    hetreward_fitter_free(agd);
    CASE("oracle", "answers every round (one shard)", HETREWARD_OK, "",
         hetreward_fit_distributed(fitter, sum, 1, bad_oracle, NULL, &out_model, NULL));
    hetreward_model_free(out_model);
    reset_outputs();

    /* A real request to damage: the driver's first. */
    CHECK(hetreward_fit_distributed(fitter, sum, 1, capture_oracle, NULL, &out_model, NULL) ==
          HETREWARD_CANCELLED);
    CHECK(first_request_len > 0);
    reset_outputs();
    function_header("hetreward_shard_stats_compute_request");
    CASE("request", "NULL", HETREWARD_NULL_POINTER, "`request`",
         hetreward_shard_stats_compute_request(dataset, NULL, first_request_len, 1, &s));
    CASE("shard", "NULL", HETREWARD_NULL_POINTER, "`dataset`",
         hetreward_shard_stats_compute_request(NULL, first_request, first_request_len, 1, &s));
    CASE("out_stats", "NULL", HETREWARD_NULL_POINTER, "`out_stats`",
         hetreward_shard_stats_compute_request(dataset, first_request, first_request_len, 1,
                                               NULL));
    CASE("request_len", "5 bytes", HETREWARD_BAD_FORMAT, "<shard request>" SEP "shorter",
         hetreward_shard_stats_compute_request(dataset, first_request, 5, 1, &s));
    memcpy(damaged, first_request, first_request_len);
    damaged[first_request_len / 2] ^= 0x10;
    CASE("request", "one bit flipped", HETREWARD_BAD_FORMAT, "checksum mismatch",
         hetreward_shard_stats_compute_request(dataset, damaged, first_request_len, 1, &s));
    memcpy(damaged, first_request, first_request_len);
    damaged[0] = 'X';
    CASE("request", "shard statistics' or other bytes (bad magic)", HETREWARD_BAD_FORMAT,
         "not a shard request",
         hetreward_shard_stats_compute_request(dataset, damaged, first_request_len, 1, &s));
    CASE("threads", "100000", HETREWARD_INVALID_ARGUMENT, "`threads`",
         hetreward_shard_stats_compute_request(dataset, first_request, first_request_len, 100000,
                                               &s));
    CHECK(s == STATS_SENTINEL);
}

int main(void) {
    hetreward_model *other;
    test_data small;
    size_t buffers;

    data = make_data(N, 21);
    dataset = make_dataset(&data);
    CHECK_OK(hetreward_fitter_new(NULL, &fitter));
    CHECK_OK(hetreward_fitter_fit(fitter, dataset, &model));
    CHECK_OK(hetreward_model_theta(model, base_theta, D1));
    phi = make_phis(M, 4);
    CHECK_OK(hetreward_model_score(model, phi, M, D1, 0.05, base_rewards));
    reset_outputs();

    /* A second model with d1 = 3 ("a model used with the wrong d1"). */
    small = make_data(N, 22);
    {
        hetreward_dataset *ds3 = NULL;
        double *z3 = (double *)checked_malloc(N * 3 * sizeof(double));
        size_t i;
        for (i = 0; i < N; i++) memcpy(z3 + 3 * i, small.z + D1 * i, 3 * sizeof(double));
        CHECK_OK(hetreward_dataset_new(N, 3, D2, z3, small.psi0, small.psi, small.y, NULL, &ds3));
        CHECK_OK(hetreward_fitter_fit(fitter, ds3, &other));
        hetreward_dataset_free(ds3);
        free(z3);
    }

    table_cap = 1 << 16;
    table = (char *)checked_malloc(table_cap);
    table[0] = '\0';
    append("| # | function | argument | bad input | status | message (`hetreward_last_error_message()`) |\n");
    append("|---|---|---|---|---|---|\n");

    dataset_cases();
    dataset_file_cases();
    fitter_cases();
    model_accessor_cases();
    model_scoring_cases(other);
    model_file_cases();
    host_safety_cases();
    distributed_cases();
    issue22_cases();
    issue32_cases();
    shard_dataset_cases();
    buffers = exhaustive_buffer_damage();
    check_model_and_dataset();
    check_fit_again();

    append("\n%d cases; after each, the outputs were unwritten, the model scored bit-identically "
           "and the dataset and fitter fitted the same estimate again.\n",
           n_cases);
    check_docs(table);

    free(table);
    free(phi);
    hetreward_model_free(other);
    hetreward_model_free(model);
    hetreward_fitter_free(fitter);
    hetreward_dataset_free(dataset);
    free_data(&small);
    free_data(&data);
    printf("test_bad_input: ok (%d cases in the matrix; %zu damaged model buffers rejected)\n",
           n_cases, buffers);
    return 0;
}
