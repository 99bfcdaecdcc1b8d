/* test_threads: one model shared by many threads (score, compare, select, rationality give
 * bitwise the results of a single thread), concurrent fits of one dataset with different
 * thread counts (identical estimates), and per-thread last-error messages. */
#include "common.h"

#include <pthread.h>

enum { THREADS = 8, REPS = 5, M = 256, GROUP = 16 };

typedef struct results {
    hetreward_reward rewards[M];
    hetreward_comparison comparisons[M / 2];
    size_t chosen[M / GROUP];
    hetreward_candidate candidates[M];
    double sigma, sigma_se;
} results;

typedef struct job {
    const hetreward_model *model;
    const float *phi;
    const results *expected;
    int ok;
} job;

/* Field by field: hetreward_comparison has padding after `verdict`. */
static int same_comparisons(const hetreward_comparison *a, const hetreward_comparison *b,
                            size_t m) {
    size_t i;
    for (i = 0; i < m; i++)
        if (a[i].diff != b[i].diff || a[i].se != b[i].se || a[i].lower != b[i].lower ||
            a[i].upper != b[i].upper || a[i].p_value != b[i].p_value ||
            a[i].verdict != b[i].verdict)
            return 0;
    return 1;
}

static int compute(const hetreward_model *model, const float *phi, results *r) {
    size_t g;
    double psi[D2] = {1.0, 0.75};
    memset(r, 0, sizeof *r);
    if (hetreward_model_score(model, phi, M, D1, 0.05, r->rewards) != HETREWARD_OK) return 0;
    /* Pairs: first half against second half. */
    if (hetreward_model_compare(model, phi, phi + (M / 2) * D1, M / 2, D1, 0.05,
                                HETREWARD_DIFF_EXACT, r->comparisons) != HETREWARD_OK)
        return 0;
    for (g = 0; g < M / GROUP; g++)
        if (hetreward_model_select(model, phi + g * GROUP * D1, GROUP, D1, NULL, 0.05,
                                   HETREWARD_POLICY_PBON, &r->chosen[g],
                                   r->candidates + g * GROUP) != HETREWARD_OK)
            return 0;
    return hetreward_model_rationality(model, 1.0, psi, D2, &r->sigma, &r->sigma_se) ==
           HETREWARD_OK;
}

static void *worker(void *arg) {
    job *j = (job *)arg;
    results *r = (results *)checked_malloc(sizeof *r);
    int rep;
    float bad[D1] = {0.0f, 0.0f, 0.0f, 0.0f};
    char mine[64];
    j->ok = 1;
    for (rep = 0; rep < REPS && j->ok; rep++) {
        if (!compute(j->model, j->phi, r)) j->ok = 0;
        else if (memcmp(r->rewards, j->expected->rewards, sizeof r->rewards) != 0 ||
                 !same_comparisons(r->comparisons, j->expected->comparisons, M / 2) ||
                 memcmp(r->chosen, j->expected->chosen, sizeof r->chosen) != 0 ||
                 memcmp(r->candidates, j->expected->candidates, sizeof r->candidates) != 0 ||
                 r->sigma != j->expected->sigma || r->sigma_se != j->expected->sigma_se)
            j->ok = 0;
        /* An error on this thread sets this thread's message only. */
        bad[rep % D1] = NAN;
        if (hetreward_model_score(j->model, bad, 1, D1, 0.05, r->rewards) !=
            HETREWARD_NON_FINITE)
            j->ok = 0;
        snprintf(mine, sizeof mine, "`phi` at index %d", rep % D1);
        if (strstr(hetreward_last_error_message(), mine) == NULL) j->ok = 0;
        bad[rep % D1] = 0.0f;
    }
    free(r);
    return NULL;
}

typedef struct fit_job {
    const hetreward_dataset *dataset;
    uint32_t threads;
    double theta[D1];
    hetreward_status status;
} fit_job;

static void *fit_worker(void *arg) {
    fit_job *j = (fit_job *)arg;
    hetreward_fit_params p = hetreward_fit_default_params();
    hetreward_fitter *fitter = NULL;
    hetreward_model *model = NULL;
    p.threads = j->threads;
    j->status = hetreward_fitter_new(&p, &fitter);
    if (j->status == HETREWARD_OK) j->status = hetreward_fitter_fit(fitter, j->dataset, &model);
    if (j->status == HETREWARD_OK) j->status = hetreward_model_theta(model, j->theta, D1);
    hetreward_model_free(model);
    hetreward_fitter_free(fitter);
    return NULL;
}

int main(void) {
    test_data d = make_data(600, 77);
    hetreward_model *model = fit_with(&d, NULL);
    hetreward_dataset *ds = make_dataset(&d);
    float *phi = make_phis(M, 5);
    results *expected = (results *)checked_malloc(sizeof *expected);
    pthread_t tid[THREADS];
    job jobs[THREADS];
    fit_job fits[3];
    int t;

    CHECK(compute(model, phi, expected));

    /* The main thread's error message survives the other threads' errors. */
    CHECK_STATUS(hetreward_model_score(model, phi, M, D1, 2.0, expected->rewards),
                 HETREWARD_INVALID_ARGUMENT);
    for (t = 0; t < THREADS; t++) {
        jobs[t].model = model;
        jobs[t].phi = phi;
        jobs[t].expected = expected;
        jobs[t].ok = 0;
        CHECK(pthread_create(&tid[t], NULL, worker, &jobs[t]) == 0);
    }
    for (t = 0; t < THREADS; t++) CHECK(pthread_join(tid[t], NULL) == 0);
    for (t = 0; t < THREADS; t++) CHECK(jobs[t].ok);
    CHECK_MSG("`alpha`");

    /* Concurrent fits of one dataset, with 1, 2 and all threads: the same estimate. */
    for (t = 0; t < 3; t++) {
        fits[t].dataset = ds;
        fits[t].threads = (uint32_t)(t == 2 ? 0 : t + 1);
        CHECK(pthread_create(&tid[t], NULL, fit_worker, &fits[t]) == 0);
    }
    for (t = 0; t < 3; t++) CHECK(pthread_join(tid[t], NULL) == 0);
    for (t = 0; t < 3; t++) {
        CHECK(fits[t].status == HETREWARD_OK);
        CHECK(memcmp(fits[t].theta, fits[0].theta, sizeof fits[0].theta) == 0);
    }

    free(expected);
    free(phi);
    hetreward_dataset_free(ds);
    hetreward_model_free(model);
    free_data(&d);
    printf("test_threads: ok\n");
    return 0;
}
