/* sanitizer_canary: deliberate bugs that the sanitizer runs of scripts/ci.d/50-reliability.sh
 * must report, so that "clean under TSan / ASan" is known to mean something (the library's own
 * code, and Rust's standard library, are instrumented and checked). Not part of the C suite.
 *
 *   sanitizer_canary race   one thread scores with a model while another frees it (TSan: a
 *                           data race between Rust's dealloc and the scoring reads)
 *   sanitizer_canary leak   a dataset that is never freed (LeakSanitizer: a leak allocated in
 *                           Rust, through hetreward_dataset_new) */
#include "common.h"

#include <pthread.h>
#include <time.h>

static hetreward_model *model;
static float *phi;

static void *scorer(void *arg) {
    hetreward_reward out[64];
    int i;
    (void)arg;
    for (i = 0; i < 200000; i++) (void)hetreward_model_score(model, phi, 64, D1, 0.05, out);
    return NULL;
}

int main(int argc, char **argv) {
    test_data d = make_data(300, 1);
    if (argc == 2 && strcmp(argv[1], "race") == 0) {
        pthread_t t;
        struct timespec pause = {0, 20000000};
        model = fit_with(&d, NULL);
        phi = make_phis(64, 2);
        CHECK(pthread_create(&t, NULL, scorer, NULL) == 0);
        nanosleep(&pause, NULL);
        hetreward_model_free(model); /* while the scorer may still use it */
        CHECK(pthread_join(t, NULL) == 0);
        free(phi);
    } else if (argc == 2 && strcmp(argv[1], "leak") == 0) {
        hetreward_dataset *ds = make_dataset(&d);
        ds = NULL; /* lost */
        (void)ds;
    } else {
        fprintf(stderr, "usage: sanitizer_canary race|leak\n");
        return 2;
    }
    free_data(&d);
    return 0;
}
