/* test_shard: shard statistics through the C API — computed per shard, moved as bytes, merged
 * in shard order, equal to the whole dataset's sums; damaged bytes, mismatched merges and bad
 * requests fail with their status and leave handles and outputs as they were. */
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
    free_data(&d);
    printf("test_shard: ok\n");
    return 0;
}
