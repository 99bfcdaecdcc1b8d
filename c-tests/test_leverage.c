/* test_leverage: the annotators' leverage diagnostics through the C ABI — the summary-only
 * call that gives the number of annotators, the per-annotator arrays (leverages summing to
 * d1 + d2, partial leverages summing to 1 per coefficient, effective numbers 1 / sum P^2, the
 * summary the arrays' extremes), a struct_size from no version refused without writing, a
 * wrong clusters_len, a dataset without cluster ids; and one annotator alone in a covariate
 * named as carrying its coefficient, with the warning flag set. */
#include "common.h"

#define P (D1 + D2)
#define N 400
#define G 20

static hetreward_leverage_info blank_info(void) {
    hetreward_leverage_info info;
    memset(&info, 0x5A, sizeof info);
    info.struct_size = sizeof info;
    return info;
}

static void check_lone_covariate(void) {
    test_data d = make_data(N, 11);
    size_t i, j, g;
    hetreward_dataset *ds, *plain = NULL;
    hetreward_model *model;
    hetreward_leverage_info info = blank_info(), untouched;
    double effective[P], leverage[G], partial[G * P], sum = 0.0;
    int64_t ids[G];
    /* The graded covariate is non-zero for annotator 3 only. */
    for (i = 0; i < N; i++)
        if (d.cluster[i] != 3) d.psi[i * D2 + 1] = 0.0;
    ds = make_dataset(&d);
    model = fit_with(&d, NULL);

    /* A struct_size from no version, a wrong clusters_len, NULL arrays with clusters_len > 0,
     * a dataset without cluster ids: refused, nothing written. */
    info.struct_size = sizeof info - 8;
    untouched = info;
    CHECK_ERR(hetreward_model_leverage(model, ds, P, effective, G, ids, leverage, partial, &info),
              HETREWARD_INVALID_ARGUMENT, "struct_size");
    CHECK(memcmp(&info, &untouched, sizeof info) == 0);
    info = blank_info();
    untouched = info;
    CHECK_ERR(hetreward_model_leverage(model, ds, P, effective, G - 1, ids, leverage, partial,
                                       &info),
              HETREWARD_DIMENSION_MISMATCH, "clusters_len");
    CHECK_ERR(hetreward_model_leverage(model, ds, P, effective, G, NULL, leverage, partial, &info),
              HETREWARD_NULL_POINTER, "out_cluster_ids");
    CHECK_ERR(hetreward_model_leverage(model, ds, P + 1, effective, 0, NULL, NULL, NULL, &info),
              HETREWARD_DIMENSION_MISMATCH, "len");
    CHECK_OK(hetreward_dataset_new(d.n, D1, D2, d.z, d.psi0, d.psi, d.y, NULL, &plain));
    CHECK_ERR(hetreward_model_leverage(model, plain, P, effective, 0, NULL, NULL, NULL, &info),
              HETREWARD_INVALID_ARGUMENT, "cluster");
    CHECK(memcmp(&info, &untouched, sizeof info) == 0);

    /* The summary first (it gives G), then everything. */
    CHECK_OK(hetreward_model_leverage(model, ds, P, effective, 0, NULL, NULL, NULL, &info));
    CHECK(info.clusters == G);
    CHECK(info.struct_size == sizeof info);
    CHECK_OK(hetreward_model_leverage(model, ds, P, effective, G, ids, leverage, partial, &info));
    for (g = 0; g < G; g++) {
        CHECK(ids[g] == (int64_t)g);
        CHECK(leverage[g] > 0.0 && leverage[g] <= info.max_leverage);
        sum += leverage[g];
    }
    /* The products run in single precision with double sums (docs/diagnostics.md): 1e-6. */
    CHECK(close_to(sum, (double)P, 1e-6));
    for (j = 0; j < P; j++) {
        double s1 = 0.0, s2 = 0.0;
        for (g = 0; g < G; g++) {
            double v = partial[g * P + j];
            CHECK(v >= 0.0 && v <= info.max_partial);
            s1 += v;
            s2 += v * v;
        }
        CHECK(close_to(s1, 1.0, 1e-6));
        CHECK(close_to(effective[j], 1.0 / s2, 1e-10));
        CHECK(effective[j] >= info.min_effective);
    }
    CHECK(info.min_effective_coefficient == D1 + 1);
    CHECK(info.min_effective < 3.0);
    CHECK(info.max_partial_coefficient == D1 + 1);
    CHECK(info.max_partial_cluster == 3);
    CHECK(info.max_partial > 0.5);
    CHECK(info.warning);

    hetreward_dataset_free(plain);
    hetreward_dataset_free(ds);
    hetreward_model_free(model);
    free_data(&d);
}

/* Every annotator varies in every covariate: no coefficient rests on one annotator. */
static void check_balanced(void) {
    test_data d = make_data(2000, 5);
    hetreward_dataset *ds = make_dataset(&d);
    hetreward_model *model = fit_with(&d, NULL);
    hetreward_leverage_info info = blank_info();
    double effective[P];
    size_t j;
    /* The annotators' rationality differs by covariate, so their shares of theta's information
     * differ too: G* is below G = 20 but far from 1. */
    CHECK_OK(hetreward_model_leverage(model, ds, P, effective, 0, NULL, NULL, NULL, &info));
    for (j = 0; j < D1; j++) CHECK(effective[j] > 8.0 && effective[j] <= 20.0);
    CHECK(info.max_partial < 0.5);
    CHECK(info.max_leverage < 3.0 * P / (double)G);
    hetreward_dataset_free(ds);
    hetreward_model_free(model);
    free_data(&d);
}

int main(void) {
    check_lone_covariate();
    check_balanced();
    printf("test_leverage: ok\n");
    return 0;
}
