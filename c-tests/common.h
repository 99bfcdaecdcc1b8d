/* Shared helpers of the C test suite: checks that stop at the first failure with the
 * library's last error message, and a deterministic synthetic data set drawn from the model
 * itself (P(y = 1) = mu(sigma * theta . z), sigma = psi0 + gamma . psi). */
#ifndef HETREWARD_TEST_COMMON_H
#define HETREWARD_TEST_COMMON_H

#include "hetreward.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define D1 4
#define D2 2

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

#define CHECK_STATUS(call, expected)                                                    \
    do {                                                                                \
        hetreward_status s_ = (call);                                                   \
        if (s_ != (hetreward_status)(expected)) {                                       \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s (last error: \"%s\")\n", \
                    __FILE__, __LINE__, #call, hetreward_status_name(s_),               \
                    hetreward_status_name(expected), hetreward_last_error_message());   \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

#define CHECK_OK(call) CHECK_STATUS(call, HETREWARD_OK)

/* The last error message of this thread contains `needle`. */
#define CHECK_MSG(needle)                                                              \
    do {                                                                               \
        const char *m_ = hetreward_last_error_message();                               \
        if (strstr(m_, (needle)) == NULL) {                                            \
            fprintf(stderr, "%s:%d: last error \"%s\" does not contain \"%s\"\n",     \
                    __FILE__, __LINE__, m_, (needle));                                 \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

/* Both CHECK_STATUS and the message naming the argument. */
#define CHECK_ERR(call, expected, needle) \
    do {                                  \
        CHECK_STATUS(call, expected);     \
        CHECK_MSG(needle);                \
    } while (0)

static const double TRUE_THETA[D1] = {1.0, -0.5, 0.75, 0.25};
static const double TRUE_GAMMA[D2] = {0.5, -0.3};

/* splitmix64: a tiny, portable, seeded generator. */
static inline uint64_t rng_next(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static inline double rng_uniform(uint64_t *state) {
    return (double)(rng_next(state) >> 11) * (1.0 / 9007199254740992.0);
}

typedef struct test_data {
    size_t n;
    double *z;     /* n x D1 */
    double *psi0;  /* n */
    double *psi;   /* n x D2 */
    double *y;     /* n */
    int64_t *cluster; /* n: 20 annotators */
} test_data;

static inline void *checked_malloc(size_t bytes) {
    void *p = malloc(bytes);
    CHECK(p != NULL);
    return p;
}

static inline test_data make_data(size_t n, uint64_t seed) {
    test_data d;
    size_t i, j;
    uint64_t s = seed;
    d.n = n;
    d.z = (double *)checked_malloc(n * D1 * sizeof(double));
    d.psi0 = (double *)checked_malloc(n * sizeof(double));
    d.psi = (double *)checked_malloc(n * D2 * sizeof(double));
    d.y = (double *)checked_malloc(n * sizeof(double));
    d.cluster = (int64_t *)checked_malloc(n * sizeof(int64_t));
    for (i = 0; i < n; i++) {
        double t = 0.0, sigma;
        d.cluster[i] = (int64_t)(i % 20);
        d.psi0[i] = 1.0;
        d.psi[i * D2 + 0] = (double)(d.cluster[i] % 2);     /* a one-hot group */
        d.psi[i * D2 + 1] = (double)(d.cluster[i] % 5) / 4.0; /* a graded covariate */
        sigma = d.psi0[i];
        for (j = 0; j < D2; j++) sigma += TRUE_GAMMA[j] * d.psi[i * D2 + j];
        for (j = 0; j < D1; j++) {
            d.z[i * D1 + j] = 4.0 * rng_uniform(&s) - 2.0;
            t += TRUE_THETA[j] * d.z[i * D1 + j];
        }
        d.y[i] = rng_uniform(&s) < 1.0 / (1.0 + exp(-sigma * t)) ? 1.0 : 0.0;
    }
    return d;
}

static inline void free_data(test_data *d) {
    free(d->z);
    free(d->psi0);
    free(d->psi);
    free(d->y);
    free(d->cluster);
}

static inline hetreward_dataset *make_dataset(const test_data *d) {
    hetreward_dataset *ds = NULL;
    CHECK_OK(hetreward_dataset_new(d->n, D1, D2, d->z, d->psi0, d->psi, d->y, d->cluster, &ds));
    return ds;
}

/* Fits `d` with `params` (NULL = defaults). */
static inline hetreward_model *fit_with(const test_data *d, const hetreward_fit_params *params) {
    hetreward_dataset *ds = make_dataset(d);
    hetreward_fitter *fitter = NULL;
    hetreward_model *model = NULL;
    CHECK_OK(hetreward_fitter_new(params, &fitter));
    CHECK_OK(hetreward_fitter_fit(fitter, ds, &model));
    hetreward_fitter_free(fitter);
    hetreward_dataset_free(ds);
    return model;
}

/* m feature vectors of length D1 in [-1, 1). */
static inline float *make_phis(size_t m, uint64_t seed) {
    float *phi = (float *)checked_malloc(m * D1 * sizeof(float));
    size_t i;
    uint64_t s = seed;
    for (i = 0; i < m * D1; i++) phi[i] = (float)(2.0 * rng_uniform(&s) - 1.0);
    return phi;
}

/* A file name unique to this process, in the working directory. */
static inline void temp_name(char *buf, size_t len, const char *stem, const char *ext) {
    snprintf(buf, len, "hetreward_%s_%ld.%s", stem, (long)getpid(), ext);
}

static inline int close_to(double a, double b, double rel) {
    return fabs(a - b) <= rel * (1.0 + fabs(a) + fabs(b));
}

#endif /* HETREWARD_TEST_COMMON_H */
