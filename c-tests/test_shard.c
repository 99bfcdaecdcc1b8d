/* test_shard: shard statistics through the C API — computed per shard, moved as bytes, merged
 * in shard order, equal to the whole dataset's sums; damaged bytes, mismatched merges and bad
 * requests fail with their status and leave handles and outputs as they were. Then the driver
 * loop: hetreward_fit_distributed over 8 shards answered by an oracle written in C gives
 * hetreward_fitter_fit()'s model (every covariance kind), whatever the shard order; an oracle
 * that fails cancels the fit cleanly. */
#include "common.h"

#include <stdint.h>

#define N 600
#define SHARDS 3
#define P (D1 + D2)

static hetreward_shard_stats *const STATS_SENTINEL = (hetreward_shard_stats *)(uintptr_t)0x5EED;

/* Rows [from, to) of `d` as a dataset. */
static hetreward_dataset *rows(const test_data *d, size_t from, size_t to) {
    hetreward_dataset *ds = NULL;
    CHECK_OK(hetreward_dataset_new(to - from, D1, D2, d->z + from * D1, d->psi0 + from,
                                   d->psi + from * D2, d->y + from, d->cluster + from, &ds));
    return ds;
}

/* Serialises `s` and reads it back (freeing `s`). */
static hetreward_shard_stats *through_bytes(hetreward_shard_stats *s) {
    size_t size = 0;
    uint8_t *buf;
    hetreward_shard_stats *back = NULL;
    CHECK_OK(hetreward_shard_stats_byte_size(s, &size));
    CHECK(size > 0);
    buf = (uint8_t *)checked_malloc(size);
    CHECK_OK(hetreward_shard_stats_to_bytes(s, buf, size));
    CHECK_OK(hetreward_shard_stats_from_bytes(buf, size, &back));
    free(buf);
    hetreward_shard_stats_free(s);
    return back;
}

static void value(const hetreward_shard_stats *s, uint64_t *n, double *nll, double *grad) {
    CHECK_OK(hetreward_shard_stats_value(s, n, nll, grad, P));
}

/* ---- The driver loop: hetreward_fit_distributed over an oracle written in C. ---- */

#define DRIVER_SHARDS 8

/* The oracle's state: the shards, how many rounds it answered, and ways to misbehave. */
typedef struct oracle_state {
    hetreward_dataset *shard[DRIVER_SHARDS];
    size_t rounds;
    size_t fail_at;    /* return this round's number as an error (0: never) */
    int skip_last;     /* merge all shards but the last (a lost shard) */
    int no_answer;     /* return 0 without an answer */
    int reverse;       /* merge in reverse shard order */
} oracle_state;

/* Every shard answers the request; the answers travel as bytes and merge in shard order. */
static int oracle(const uint8_t *request, size_t request_len, hetreward_shard_stats **out_answer,
                  void *user_data) {
    oracle_state *st = (oracle_state *)user_data;
    hetreward_shard_stats *total = NULL;
    size_t k, count = st->skip_last ? DRIVER_SHARDS - 1 : DRIVER_SHARDS;
    st->rounds++;
    if (st->no_answer) return 0;
    for (k = 0; k < count; k++) {
        size_t shard = st->reverse ? DRIVER_SHARDS - 1 - k : k;
        hetreward_shard_stats *sk = NULL;
        if (hetreward_shard_stats_compute_request(st->shard[shard], request, request_len, 1,
                                                  &sk) != HETREWARD_OK) {
            hetreward_shard_stats_free(total);
            return 99;
        }
        sk = through_bytes(sk);
        if (total == NULL) {
            total = sk;
        } else {
            CHECK_OK(hetreward_shard_stats_merge(total, sk));
            hetreward_shard_stats_free(sk);
        }
    }
    /* On a failing round the answer is handed over too: the library frees it. */
    *out_answer = total;
    if (st->fail_at == st->rounds) return (int)st->rounds;
    return 0;
}

static void read_model(const hetreward_model *m, double *est, double *se) {
    CHECK_OK(hetreward_model_theta(m, est, D1));
    CHECK_OK(hetreward_model_gamma(m, est + D1, D2));
    CHECK_OK(hetreward_model_theta_se(m, se, D1));
    CHECK_OK(hetreward_model_gamma_se(m, se + D1, D2));
}

static void test_driver(const test_data *d) {
    hetreward_dataset *whole = make_dataset(d);
    oracle_state st;
    hetreward_shard_summary sum[DRIVER_SHARDS];
    hetreward_fit_params params = hetreward_fit_default_params();
    hetreward_model *const MODEL_SENTINEL = (hetreward_model *)(uintptr_t)0x5EED;
    hetreward_model *m = MODEL_SENTINEL;
    hetreward_distributed_rounds rounds;
    hetreward_fitter *fitter = NULL;
    uint32_t kind;
    size_t k, j;

    memset(&st, 0, sizeof st);
    for (k = 0; k < DRIVER_SHARDS; k++) {
        st.shard[k] = rows(d, k * d->n / DRIVER_SHARDS, (k + 1) * d->n / DRIVER_SHARDS);
        CHECK_OK(hetreward_shard_summary_of(st.shard[k], &sum[k]));
        CHECK(sum[k].d1 == D1 && sum[k].d2 == D2 && sum[k].clustered);
    }
    params.tol = 1e-13;

    /* Every covariance kind: the same model as hetreward_fitter_fit() on the whole data. */
    for (kind = HETREWARD_COVARIANCE_EXPECTED; kind <= HETREWARD_COVARIANCE_CLUSTER; kind++) {
        hetreward_model *single = NULL, *dist = NULL, *rev = NULL;
        hetreward_fit_report rs, rd;
        double e1[P], s1[P], e2[P], s2[P], e3[P], s3[P];
        params.covariance = kind;
        CHECK_OK(hetreward_fitter_new(&params, &fitter));
        CHECK_OK(hetreward_fitter_fit(fitter, whole, &single));
        st.rounds = 0;
        memset(&rounds, 0, sizeof rounds);
        CHECK_OK(hetreward_fit_distributed(fitter, sum, DRIVER_SHARDS, oracle, &st, &dist,
                                           &rounds));
        CHECK(rounds.total == st.rounds && rounds.covariance == 1);
        CHECK(rounds.total == rounds.points + rounds.products + rounds.preconditioner + 1);
        st.reverse = 1;
        CHECK_OK(hetreward_fit_distributed(fitter, sum, DRIVER_SHARDS, oracle, &st, &rev, NULL));
        st.reverse = 0;
        CHECK_OK(hetreward_model_report(single, &rs));
        CHECK_OK(hetreward_model_report(dist, &rd));
        CHECK(rs.converged && rd.converged && rd.covariance == kind && rd.starts == 1);
        CHECK(hetreward_model_n(dist) == d->n);
        CHECK(fabs(rs.neg_loglik - rd.neg_loglik) <= 1e-13);
        read_model(single, e1, s1);
        read_model(dist, e2, s2);
        read_model(rev, e3, s3);
        for (j = 0; j < P; j++) {
            CHECK(close_to(e2[j], e1[j], 1e-10) && close_to(s2[j], s1[j], 1e-10));
            /* Shard order changes nothing beyond rounding. */
            CHECK(close_to(e3[j], e2[j], 1e-12) && close_to(s3[j], s2[j], 1e-12));
        }
        hetreward_model_free(single);
        hetreward_model_free(dist);
        hetreward_model_free(rev);
        hetreward_fitter_free(fitter);
    }
    printf("test_shard: driver fit over %d shards = one process, %llu rounds\n", DRIVER_SHARDS,
           (unsigned long long)rounds.total);

    /* An oracle that fails in round 3 cancels the fit: nothing written, nothing leaked. */
    CHECK_OK(hetreward_fitter_new(&params, &fitter));
    st.rounds = 0;
    st.fail_at = 3;
    CHECK_ERR(hetreward_fit_distributed(fitter, sum, DRIVER_SHARDS, oracle, &st, &m, &rounds),
              HETREWARD_CANCELLED, "the oracle returned 3 (HETREWARD_DIMENSION_MISMATCH) in round 3");
    CHECK(st.rounds == 3 && m == MODEL_SENTINEL);
    st.fail_at = 0;
    /* A lost shard, an oracle that answers nothing. */
    st.skip_last = 1;
    CHECK_ERR(hetreward_fit_distributed(fitter, sum, DRIVER_SHARDS, oracle, &st, &m, NULL),
              HETREWARD_DIMENSION_MISMATCH, "`answer`");
    st.skip_last = 0;
    st.no_answer = 1;
    CHECK_ERR(hetreward_fit_distributed(fitter, sum, DRIVER_SHARDS, oracle, &st, &m, NULL),
              HETREWARD_INVALID_ARGUMENT, "without storing an answer");
    st.no_answer = 0;
    CHECK(m == MODEL_SENTINEL);
    /* The fitter is unharmed by the failures. */
    CHECK_OK(hetreward_fit_distributed(fitter, sum, DRIVER_SHARDS, oracle, &st, &m, NULL));
    hetreward_model_free(m);
    hetreward_fitter_free(fitter);

    for (k = 0; k < DRIVER_SHARDS; k++) hetreward_dataset_free(st.shard[k]);
    hetreward_dataset_free(whole);
}

int main(void) {
    test_data d = make_data(N, 42);
    hetreward_dataset *whole = make_dataset(&d);
    hetreward_dataset *part[SHARDS];
    const double theta[D1] = {0.9, -0.4, 0.7, 0.2};
    const double gamma[D2] = {0.4, -0.2};
    const double vectors[2 * P] = {1, 0, 0, 0, 0, 0, 0.5, -1, 0.25, 2, 0.1, -0.3};
    const uint32_t what = HETREWARD_SHARD_VALUE | HETREWARD_SHARD_EXPECTED |
                          HETREWARD_SHARD_OBSERVED | HETREWARD_SHARD_MEAT |
                          HETREWARD_SHARD_CLUSTERS | HETREWARD_SHARD_OBSERVED_PRODUCTS;
    hetreward_shard_stats *total = NULL, *ref = NULL, *s = STATS_SENTINEL, *other = NULL;
    uint64_t n_ref = 0, n_total = 0;
    double nll_ref = 0, nll_total = 0, g_ref[P], g_total[P];
    size_t k, j, size = 0;
    uint8_t *buf;

    for (k = 0; k < SHARDS; k++) part[k] = rows(&d, k * N / SHARDS, (k + 1) * N / SHARDS);

    /* Per shard, through bytes, merged in shard order == the whole dataset. */
    CHECK_OK(
        hetreward_shard_stats_compute(whole, theta, D1, gamma, D2, what, vectors, 2, 0, &ref));
    for (k = 0; k < SHARDS; k++) {
        hetreward_shard_stats *sk = NULL;
        CHECK_OK(hetreward_shard_stats_compute(part[k], theta, D1, gamma, D2, what, vectors, 2, 1,
                                               &sk));
        sk = through_bytes(sk);
        if (total == NULL) {
            total = sk;
        } else {
            CHECK_OK(hetreward_shard_stats_merge(total, sk));
            hetreward_shard_stats_free(sk);
        }
    }
    value(ref, &n_ref, &nll_ref, g_ref);
    value(total, &n_total, &nll_total, g_total);
    CHECK(n_ref == N && n_total == N);
    CHECK(fabs(nll_total - nll_ref) <= 1e-12 * fabs(nll_ref));
    for (j = 0; j < P; j++) CHECK(fabs(g_total[j] - g_ref[j]) <= 1e-12 * (1.0 + fabs(g_ref[j])));
    /* Same sections and products, same clusters: same size in bytes. */
    {
        size_t a = 0, b = 0;
        CHECK_OK(hetreward_shard_stats_byte_size(ref, &a));
        CHECK_OK(hetreward_shard_stats_byte_size(total, &b));
        CHECK(a == b);
    }

    /* Merging an answer to another request fails and leaves `total` as it was. */
    CHECK_OK(hetreward_shard_stats_compute(part[0], theta, D1, gamma, D2, HETREWARD_SHARD_VALUE,
                                           NULL, 0, 0, &other));
    CHECK_ERR(hetreward_shard_stats_merge(total, other), HETREWARD_DIMENSION_MISMATCH,
              "different requests");
    CHECK_ERR(hetreward_shard_stats_merge(total, total), HETREWARD_INVALID_ARGUMENT, "`other`");
    CHECK_ERR(hetreward_shard_stats_merge(NULL, other), HETREWARD_NULL_POINTER, "`stats`");
    CHECK_ERR(hetreward_shard_stats_merge(total, NULL), HETREWARD_NULL_POINTER, "`other`");
    {
        uint64_t n2 = 0;
        double nll2 = 0, g2[P];
        value(total, &n2, &nll2, g2);
        CHECK(n2 == n_total && nll2 == nll_total && memcmp(g2, g_total, sizeof g2) == 0);
    }

    /* Bytes: too small a buffer writes nothing; damage and other versions are format errors. */
    CHECK_OK(hetreward_shard_stats_byte_size(total, &size));
    buf = (uint8_t *)checked_malloc(size);
    memset(buf, 0xAB, size);
    CHECK_ERR(hetreward_shard_stats_to_bytes(total, buf, size - 1), HETREWARD_DIMENSION_MISMATCH,
              "`capacity`");
    CHECK(buf[0] == 0xAB && buf[size - 1] == 0xAB);
    CHECK_ERR(hetreward_shard_stats_to_bytes(total, NULL, size), HETREWARD_NULL_POINTER,
              "`out_bytes`");
    CHECK_OK(hetreward_shard_stats_to_bytes(total, buf, size));
    buf[size / 2] ^= 0x01;
    CHECK_ERR(hetreward_shard_stats_from_bytes(buf, size, &s), HETREWARD_BAD_FORMAT, "checksum");
    buf[size / 2] ^= 0x01;
    CHECK_ERR(hetreward_shard_stats_from_bytes(buf, size - 3, &s), HETREWARD_BAD_FORMAT,
              "checksum");
    buf[8] = 9;
    CHECK_ERR(hetreward_shard_stats_from_bytes(buf, size, &s), HETREWARD_BAD_FORMAT, "version 9");
    buf[0] = 'X';
    CHECK_ERR(hetreward_shard_stats_from_bytes(buf, size, &s), HETREWARD_BAD_FORMAT, "magic");
    CHECK_ERR(hetreward_shard_stats_from_bytes(buf, 5, &s), HETREWARD_BAD_FORMAT, "shorter");
    CHECK_ERR(hetreward_shard_stats_from_bytes(NULL, size, &s), HETREWARD_NULL_POINTER, "`bytes`");
    CHECK(s == STATS_SENTINEL);
    free(buf);

    /* Bad requests. */
    CHECK_ERR(hetreward_shard_stats_compute(part[0], theta, D1, gamma, D2, 0, NULL, 0, 1, &s),
              HETREWARD_INVALID_ARGUMENT, "`sections`");
    CHECK_ERR(hetreward_shard_stats_compute(part[0], theta, D1, gamma, D2, 128, NULL, 0, 0, &s),
              HETREWARD_INVALID_ARGUMENT, "`sections`");
    CHECK_ERR(hetreward_shard_stats_compute(part[0], theta, D1, gamma, D2,
                                            HETREWARD_SHARD_OBSERVED_PRODUCTS |
                                                HETREWARD_SHARD_EXPECTED_PRODUCTS,
                                            vectors, 1, 1, &s),
              HETREWARD_INVALID_ARGUMENT, "both curvatures");
    CHECK_ERR(hetreward_shard_stats_compute(part[0], theta, D1, gamma, D2,
                                            HETREWARD_SHARD_EXPECTED_PRODUCTS, NULL, 0, 0, &s),
              HETREWARD_INVALID_ARGUMENT, "`n_vectors`");
    CHECK_ERR(hetreward_shard_stats_compute(part[0], theta, D1, gamma, D2, HETREWARD_SHARD_VALUE,
                                            vectors, 1, 1, &s),
              HETREWARD_INVALID_ARGUMENT, "`n_vectors`");
    CHECK_ERR(hetreward_shard_stats_compute(part[0], theta, D1 + 1, gamma, D2,
                                            HETREWARD_SHARD_VALUE, NULL, 0, 0, &s),
              HETREWARD_DIMENSION_MISMATCH, "`d1`");
    CHECK_ERR(hetreward_shard_stats_compute(NULL, theta, D1, gamma, D2, HETREWARD_SHARD_VALUE,
                                            NULL, 0, 1, &s),
              HETREWARD_NULL_POINTER, "`dataset`");
    CHECK_ERR(hetreward_shard_stats_compute(part[0], theta, D1, gamma, D2, HETREWARD_SHARD_VALUE,
                                            NULL, 0, 0, NULL),
              HETREWARD_NULL_POINTER, "`out_stats`");
    CHECK_ERR(hetreward_shard_stats_compute(part[0], theta, D1, gamma, D2, HETREWARD_SHARD_VALUE,
                                            NULL, 0, 100000, &s),
              HETREWARD_INVALID_ARGUMENT, "`threads`");
    {
        double bad[D1] = {0.9, NAN, 0.7, 0.2};
        CHECK_ERR(hetreward_shard_stats_compute(part[0], bad, D1, gamma, D2,
                                                HETREWARD_SHARD_VALUE, NULL, 0, 1, &s),
                  HETREWARD_NON_FINITE, "`theta`");
    }
    CHECK(s == STATS_SENTINEL);
    {
        uint64_t n2 = 7;
        double nll2 = 7, g2[P];
        CHECK_ERR(hetreward_shard_stats_value(total, &n2, &nll2, g2, P - 1),
                  HETREWARD_DIMENSION_MISMATCH, "`grad_len`");
        CHECK(n2 == 7 && nll2 == 7);
    }

    hetreward_shard_stats_free(NULL);
    hetreward_shard_stats_free(other);
    hetreward_shard_stats_free(total);
    hetreward_shard_stats_free(ref);
    for (k = 0; k < SHARDS; k++) hetreward_dataset_free(part[k]);
    hetreward_dataset_free(whole);
    test_driver(&d);
    free_data(&d);
    printf("test_shard: ok\n");
    return 0;
}
