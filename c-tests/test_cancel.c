/* test_cancel: a progress callback that asks to stop, hetreward_fitter_cancel() from another
 * thread while a fit runs, a request made before a fit, and reuse of a fitter afterwards. */
#include "common.h"

#include <pthread.h>

typedef struct counter {
    size_t calls;
    size_t stop_at; /* return nonzero at this iteration */
    size_t last_start, last_iteration, max_iter;
} counter;

static int count_and_stop(const hetreward_progress *p, void *user_data) {
    counter *c = (counter *)user_data;
    c->calls++;
    c->last_start = p->start;
    c->last_iteration = p->iteration;
    c->max_iter = p->max_iter;
    CHECK(p->grad_norm >= 0.0 && p->neg_loglik > 0.0);
    return p->iteration >= c->stop_at;
}

/* Shared between the fit's callback and the cancelling thread. */
typedef struct race {
    pthread_mutex_t lock;
    pthread_cond_t started_cv;
    int started;
    size_t iterations;
    const hetreward_fitter *fitter;
} race;

static int signal_started(const hetreward_progress *p, void *user_data) {
    race *r = (race *)user_data;
    pthread_mutex_lock(&r->lock);
    r->iterations = p->iteration;
    if (p->iteration >= 2 && !r->started) {
        r->started = 1;
        pthread_cond_signal(&r->started_cv);
    }
    pthread_mutex_unlock(&r->lock);
    return 0; /* never asks to stop by itself */
}

static void *canceller(void *arg) {
    race *r = (race *)arg;
    pthread_mutex_lock(&r->lock);
    while (!r->started) pthread_cond_wait(&r->started_cv, &r->lock);
    pthread_mutex_unlock(&r->lock);
    hetreward_fitter_cancel(r->fitter);
    return NULL;
}

int main(void) {
    test_data d = make_data(300, 5);
    hetreward_dataset *ds = make_dataset(&d);
    hetreward_fit_params p;
    hetreward_fitter *fitter = NULL;
    hetreward_model *model = NULL;
    counter c;
    race r;
    pthread_t tid;

    /* 1. The callback stops the fit at iteration 3: four calls (iterations 0..3). */
    memset(&c, 0, sizeof c);
    c.stop_at = 3;
    p = hetreward_fit_default_params();
    p.solver = HETREWARD_SOLVER_AGD;
    p.init = HETREWARD_INIT_RANDOM;
    p.progress = count_and_stop;
    p.progress_user_data = &c;
    CHECK_OK(hetreward_fitter_new(&p, &fitter));
    CHECK_ERR(hetreward_fitter_fit(fitter, ds, &model), HETREWARD_CANCELLED, "cancelled");
    CHECK(model == NULL);
    CHECK(c.calls == 4 && c.last_iteration == 3 && c.last_start == 0 && c.max_iter == 10000);
    hetreward_fitter_free(fitter);

    /* 2. Another thread cancels a fit that would otherwise run for a very long time. */
    memset(&r, 0, sizeof r);
    CHECK(pthread_mutex_init(&r.lock, NULL) == 0);
    CHECK(pthread_cond_init(&r.started_cv, NULL) == 0);
    p = hetreward_fit_default_params();
    p.solver = HETREWARD_SOLVER_AGD;
    p.init = HETREWARD_INIT_RANDOM;
    p.max_iter = 1000000000u;
    p.tol = 0.0;
    p.progress = signal_started;
    p.progress_user_data = &r;
    CHECK_OK(hetreward_fitter_new(&p, &fitter));
    r.fitter = fitter;
    CHECK(pthread_create(&tid, NULL, canceller, &r) == 0);
    CHECK_ERR(hetreward_fitter_fit(fitter, ds, &model), HETREWARD_CANCELLED, "cancelled");
    CHECK(pthread_join(tid, NULL) == 0);
    CHECK(model == NULL && r.started && r.iterations >= 2 && r.iterations < 1000000);

    /* 3. The request was cleared when the fit returned: the same fitter fits again (capped). */
    hetreward_fitter_free(fitter);
    p.max_iter = 50;
    r.started = 1; /* nobody waits any more */
    CHECK_OK(hetreward_fitter_new(&p, &fitter));
    CHECK_OK(hetreward_fitter_fit(fitter, ds, &model));
    CHECK(model != NULL);
    hetreward_model_free(model);
    model = NULL;

    /* 4. A request made while no fit runs applies to the next fit, once. */
    hetreward_fitter_cancel(fitter);
    CHECK_STATUS(hetreward_fitter_fit(fitter, ds, &model), HETREWARD_CANCELLED);
    CHECK(model == NULL);
    CHECK_OK(hetreward_fitter_fit(fitter, ds, &model));
    hetreward_model_free(model);
    hetreward_fitter_free(fitter);

    /* 5. A callback that always continues does not change the result. */
    {
        hetreward_model *plain = fit_with(&d, NULL), *observed;
        double t0[D1], t1[D1];
        memset(&c, 0, sizeof c);
        c.stop_at = (size_t)-1;
        p = hetreward_fit_default_params();
        p.progress = count_and_stop;
        p.progress_user_data = &c;
        observed = fit_with(&d, &p);
        CHECK(c.calls > 0);
        CHECK_OK(hetreward_model_theta(plain, t0, D1));
        CHECK_OK(hetreward_model_theta(observed, t1, D1));
        CHECK(memcmp(t0, t1, sizeof t0) == 0);
        hetreward_model_free(plain);
        hetreward_model_free(observed);
    }

    pthread_cond_destroy(&r.started_cv);
    pthread_mutex_destroy(&r.lock);
    hetreward_dataset_free(ds);
    free_data(&d);
    printf("test_cancel: ok\n");
    return 0;
}
