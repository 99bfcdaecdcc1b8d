/* hetreward_option_name() and hetreward_option_at() (issue 19): every constant of every option
 * family of the header has the name the command line uses for it, enumerating a family gives
 * exactly its constants in code order, and anything else (unknown family, unknown code, an OR
 * of shard flags, an index past the end) gives NULL without writing or crashing. */
#include "common.h"

#include <stdint.h>

typedef struct {
    hetreward_option_family family;
    uint32_t code;
    const char *name;
} option;

/* Every option constant of the header, in code order within its family, with the name the
 * CLI prints and parses (`hetreward fit --solver newton`, `--intervals cluster-jackknife`,
 * the report's "termination: max_iterations", ...). */
static const option OPTIONS[] = {
    {HETREWARD_OPTION_SOLVER, HETREWARD_SOLVER_NEWTON, "newton"},
    {HETREWARD_OPTION_SOLVER, HETREWARD_SOLVER_AGD, "agd"},
    {HETREWARD_OPTION_INIT, HETREWARD_INIT_DEFAULT, "default"},
    {HETREWARD_OPTION_INIT, HETREWARD_INIT_RANDOM, "random"},
    {HETREWARD_OPTION_INIT, HETREWARD_INIT_EXPLICIT, "explicit"},
    {HETREWARD_OPTION_COVARIANCE, HETREWARD_COVARIANCE_EXPECTED, "expected"},
    {HETREWARD_OPTION_COVARIANCE, HETREWARD_COVARIANCE_OBSERVED, "observed"},
    {HETREWARD_OPTION_COVARIANCE, HETREWARD_COVARIANCE_ROBUST, "robust"},
    {HETREWARD_OPTION_COVARIANCE, HETREWARD_COVARIANCE_CLUSTER, "cluster"},
    {HETREWARD_OPTION_INTERVALS, HETREWARD_INTERVALS_WALD, "wald"},
    {HETREWARD_OPTION_INTERVALS, HETREWARD_INTERVALS_BOOTSTRAP, "bootstrap"},
    {HETREWARD_OPTION_INTERVALS, HETREWARD_INTERVALS_RESIZED, "resized"},
    {HETREWARD_OPTION_INTERVALS, HETREWARD_INTERVALS_AUTO, "auto"},
    {HETREWARD_OPTION_INTERVALS, HETREWARD_INTERVALS_CLUSTER_JACKKNIFE, "cluster-jackknife"},
    {HETREWARD_OPTION_INTERVALS, HETREWARD_INTERVALS_CLUSTER_ONESTEP, "cluster-onestep"},
    {HETREWARD_OPTION_TERMINATION, HETREWARD_TERMINATION_CONVERGED, "converged"},
    {HETREWARD_OPTION_TERMINATION, HETREWARD_TERMINATION_MAX_ITERATIONS, "max_iterations"},
    {HETREWARD_OPTION_TERMINATION, HETREWARD_TERMINATION_STALLED, "stalled"},
    {HETREWARD_OPTION_TERMINATION, HETREWARD_TERMINATION_DIVERGED, "diverged"},
    {HETREWARD_OPTION_DIFF, HETREWARD_DIFF_EXACT, "exact"},
    {HETREWARD_OPTION_DIFF, HETREWARD_DIFF_INDEPENDENT, "independent"},
    {HETREWARD_OPTION_DIFF, HETREWARD_DIFF_BOUND, "bound"},
    {HETREWARD_OPTION_VERDICT, HETREWARD_VERDICT_TIE, "tie"},
    {HETREWARD_OPTION_VERDICT, HETREWARD_VERDICT_WIN, "win"},
    {HETREWARD_OPTION_VERDICT, HETREWARD_VERDICT_LOSS, "loss"},
    {HETREWARD_OPTION_POLICY, HETREWARD_POLICY_BON, "bon"},
    {HETREWARD_OPTION_POLICY, HETREWARD_POLICY_PBON, "pbon"},
    {HETREWARD_OPTION_COEFFICIENTS, HETREWARD_COEFFICIENTS_THETA, "theta"},
    {HETREWARD_OPTION_COEFFICIENTS, HETREWARD_COEFFICIENTS_GAMMA, "gamma"},
    {HETREWARD_OPTION_COEFFICIENTS, HETREWARD_COEFFICIENTS_ALL, "all"},
    {HETREWARD_OPTION_SHARD, HETREWARD_SHARD_VALUE, "value"},
    {HETREWARD_OPTION_SHARD, HETREWARD_SHARD_OBSERVED_PRODUCTS, "observed-products"},
    {HETREWARD_OPTION_SHARD, HETREWARD_SHARD_EXPECTED_PRODUCTS, "expected-products"},
    {HETREWARD_OPTION_SHARD, HETREWARD_SHARD_EXPECTED, "expected"},
    {HETREWARD_OPTION_SHARD, HETREWARD_SHARD_OBSERVED, "observed"},
    {HETREWARD_OPTION_SHARD, HETREWARD_SHARD_MEAT, "meat"},
    {HETREWARD_OPTION_SHARD, HETREWARD_SHARD_CLUSTERS, "clusters"},
};
#define N_OPTIONS (sizeof OPTIONS / sizeof OPTIONS[0])
/* HETREWARD_OPTION_SOLVER .. HETREWARD_OPTION_SHARD. */
#define N_FAMILIES 10

static void check_names(void) {
    size_t i;
    for (i = 0; i < N_OPTIONS; i++) {
        const char *name = hetreward_option_name(OPTIONS[i].family, OPTIONS[i].code);
        if (name == NULL || strcmp(name, OPTIONS[i].name) != 0) {
            fprintf(stderr, "family %u code %u: named %s, expected \"%s\"\n",
                    (unsigned)OPTIONS[i].family, (unsigned)OPTIONS[i].code,
                    name ? name : "NULL", OPTIONS[i].name);
            exit(1);
        }
        /* A static string: the same pointer every time. */
        CHECK(hetreward_option_name(OPTIONS[i].family, OPTIONS[i].code) == name);
    }
}

/* Enumerating each family gives exactly the table's rows of that family, in order. */
static void check_enumeration(void) {
    hetreward_option_family f;
    size_t row = 0, index;
    for (f = 0; f < N_FAMILIES; f++) {
        for (index = 0;; index++) {
            uint32_t code = UINT32_MAX;
            const char *name = hetreward_option_at(f, index, &code);
            if (name == NULL) {
                CHECK(code == UINT32_MAX); /* nothing written */
                break;
            }
            CHECK(row < N_OPTIONS);
            CHECK(OPTIONS[row].family == f);
            CHECK(OPTIONS[row].code == code);
            CHECK(strcmp(OPTIONS[row].name, name) == 0);
            CHECK(hetreward_option_name(f, code) == name);
            /* out_code is optional. */
            CHECK(hetreward_option_at(f, index, NULL) == name);
            row++;
        }
        CHECK(index > 0); /* every family has options */
    }
    CHECK(row == N_OPTIONS);
}

static void check_unknown(void) {
    uint32_t code = 12345, words[2] = {0, 0}, c;
    hetreward_option_family f;
    /* Unknown families. */
    for (f = N_FAMILIES; f < N_FAMILIES + 3; f++) {
        CHECK(hetreward_option_name(f, 0) == NULL);
        CHECK(hetreward_option_at(f, 0, &code) == NULL);
    }
    CHECK(hetreward_option_name(UINT32_MAX, 0) == NULL);
    CHECK(hetreward_option_at(UINT32_MAX, 0, &code) == NULL);
    CHECK(code == 12345);
    /* Codes outside each family, indices past the end. */
    for (f = 0; f < N_FAMILIES; f++) {
        CHECK(hetreward_option_name(f, UINT32_MAX) == NULL);
        CHECK(hetreward_option_name(f, 1000) == NULL);
        CHECK(hetreward_option_at(f, (size_t)-1, &code) == NULL);
        CHECK(hetreward_option_at(f, 1000, NULL) == NULL);
    }
    CHECK(code == 12345);
    CHECK(hetreward_option_name(HETREWARD_OPTION_POLICY, 2) == NULL);
    CHECK(hetreward_option_name(HETREWARD_OPTION_INTERVALS, 6) == NULL);
    /* Shard sections: single flags only. */
    CHECK(hetreward_option_name(HETREWARD_OPTION_SHARD, 0) == NULL);
    CHECK(hetreward_option_name(HETREWARD_OPTION_SHARD,
                                HETREWARD_SHARD_VALUE | HETREWARD_SHARD_EXPECTED) == NULL);
    CHECK(hetreward_option_name(HETREWARD_OPTION_SHARD, 128) == NULL);
    for (c = 0; c < 32; c++) {
        const char *name = hetreward_option_name(HETREWARD_OPTION_SHARD, (uint32_t)1 << c);
        CHECK((name != NULL) == (c < 7));
    }
    /* A misaligned out_code is refused, not written. */
    CHECK(hetreward_option_at(HETREWARD_OPTION_SOLVER, 0, (uint32_t *)((char *)words + 1)) ==
          NULL);
    CHECK(words[0] == 0 && words[1] == 0);
    /* None of this is an error of a fallible call. */
    CHECK(strcmp(hetreward_last_error_message(), "") == 0);
}

int main(void) {
    check_names();
    check_enumeration();
    check_unknown();
    printf("test_options: ok (%u options in %d families)\n", (unsigned)N_OPTIONS, N_FAMILIES);
    return 0;
}
