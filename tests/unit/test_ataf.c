/* test_ataf.c — ATAFs of [Ros] §4.3.2: Figure 10 values, bijection both
 * ways, overflow at the documented limits, Procedure ATAF-Constructor. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "plan/ataf.h"

#define MAXI CAIRN_ATAF_MAX_INDEX

static const cairn__ataf_family families[] = {CAIRN_ATAF_PHI1, CAIRN_ATAF_PHI3,
                                             CAIRN_ATAF_PHISHARP};
#define NFAM (sizeof families / sizeof families[0])

/* The group-size list of the custom family: 8, 1, 32, 2, 2, 4 rows, then 16
 * rows per group. */
static const unsigned custom_kappa[] = {3, 0, 5, 1, 1, 2};
static const cairn__ataf_spec custom_spec = {custom_kappa, 6, 0, 4};

static uint64_t phi_ok(cairn__ataf_family f, uint64_t x, uint64_t t) {
  cairn_error err;
  uint64_t n = 0;
  assert_int_equal(cairn__ataf_index(f, x, t, &n, &err), CAIRN_OK);
  return n;
}

static void build_family(cairn__ataf *a, cairn__ataf_family f) {
  cairn__ataf_spec s;
  cairn_error err;
  assert_int_equal(cairn__ataf_family_spec(f, &s, &err), CAIRN_OK);
  assert_int_equal(cairn__ataf_build(a, &s, &err), CAIRN_OK);
}

/* Figure 10: five allocations of each listed row. */
static void test_figure10(void **state) {
  (void)state;
  static const struct {
    cairn__ataf_family f;
    uint64_t x;
    unsigned g;
    uint64_t v[5];
  } rows[] = {
    {CAIRN_ATAF_PHI1, 14, 13, {8192, 24576, 40960, 57344, 73728}},
    {CAIRN_ATAF_PHI1, 15, 14, {16384, 49152, 81920, 114688, 147456}},
    {CAIRN_ATAF_PHI3, 14, 3, {24, 88, 152, 216, 280}},
    {CAIRN_ATAF_PHI3, 15, 3, {40, 104, 168, 232, 296}},
    {CAIRN_ATAF_PHI3, 28, 6, {448, 960, 1472, 1984, 2496}},
    {CAIRN_ATAF_PHI3, 29, 7, {128, 1152, 2176, 3200, 4224}},
    {CAIRN_ATAF_PHISHARP, 28, 4, {400, 912, 1424, 1936, 2448}},
    {CAIRN_ATAF_PHISHARP, 29, 4, {432, 944, 1456, 1968, 2480}},
  };
  cairn_error err;
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
    cairn__ataf a;
    cairn__ataf_row where;
    build_family(&a, rows[r].f);
    assert_int_equal(cairn__ataf_locate(&a, rows[r].x, &where, &err), CAIRN_OK);
    assert_int_equal(where.group, rows[r].g);
    for (uint64_t t = 1; t <= 5; t++) {
      uint64_t n = 0, c = 0, x = 0, tt = 0;
      assert_int_equal(cairn__ataf_index(rows[r].f, rows[r].x, t, &n, &err), CAIRN_OK);
      assert_int_equal(n, rows[r].v[t - 1]);
      /* the Figure 10 tag <x, g>: g is the number of trailing zero bits */
      assert_int_equal(__builtin_ctzll(n), rows[r].g);
      assert_int_equal(cairn__ataf_phi(&a, rows[r].x, t, &c, &err), CAIRN_OK);
      assert_int_equal(c, n);
      assert_int_equal(cairn__ataf_invert(rows[r].f, n, &x, &tt, &err), CAIRN_OK);
      assert_int_equal(x, rows[r].x);
      assert_int_equal(tt, t);
    }
  }
}

/* phi^-1(phi(x, t)) = (x, t) for x, t <= 1000, named and constructed. */
static void test_roundtrip_rows(void **state) {
  (void)state;
  cairn_error err;
  cairn__ataf custom;
  assert_int_equal(cairn__ataf_build(&custom, &custom_spec, &err), CAIRN_OK);
  for (size_t k = 0; k <= NFAM; k++) {
    cairn__ataf a;
    if (k < NFAM)
      build_family(&a, families[k]);
    else
      a = custom;
    unsigned fitting = 0;
    for (uint64_t x = 1; x <= 1000; x++)
      for (uint64_t t = 1; t <= 1000; t++) {
        uint64_t n = 0, c = 0, rx = 0, rt = 0;
        cairn_status sc = cairn__ataf_phi(&a, x, t, &c, &err);
        if (k < NFAM) {
          cairn_status sn = cairn__ataf_index(families[k], x, t, &n, &err);
          assert_int_equal(sc, sn);
          if (sn == CAIRN_OK) {
            assert_int_equal(c, n);
            assert_int_equal(cairn__ataf_invert(families[k], n, &rx, &rt, &err), CAIRN_OK);
            assert_int_equal(rx, x);
            assert_int_equal(rt, t);
          }
        }
        if (sc == CAIRN_OK) {
          fitting++;
          assert_int_equal(cairn__ataf_phi_inverse(&a, c, &rx, &rt, &err), CAIRN_OK);
          assert_int_equal(rx, x);
          assert_int_equal(rt, t);
        } else {
          assert_int_equal(sc, CAIRN_EOVERFLOW);
        }
      }
    /* phi1: rows 1..53 fit all 1000 allocations (2^52 * 1999 < 2^63),
     * then row x fits t with 2^(x-1) (2t-1) <= 2^63-1. */
    if (k == 0)
      assert_true(fitting > 53 * 1000 && fitting < 63 * 1000);
    if (k == 2)
      assert_int_equal(fitting, 1000 * 1000);
  }
}

/* phi(phi^-1(n)) = n for every n < 2^20. */
static void test_roundtrip_indices(void **state) {
  (void)state;
  cairn_error err;
  cairn__ataf custom;
  assert_int_equal(cairn__ataf_build(&custom, &custom_spec, &err), CAIRN_OK);
  for (size_t k = 0; k <= NFAM; k++) {
    cairn__ataf a;
    if (k < NFAM)
      build_family(&a, families[k]);
    else
      a = custom;
    for (uint64_t n = 1; n < (1u << 20); n++) {
      uint64_t x = 0, t = 0, c = 0, cx = 0, ct = 0;
      assert_int_equal(cairn__ataf_phi_inverse(&a, n, &cx, &ct, &err), CAIRN_OK);
      assert_int_equal(cairn__ataf_phi(&a, cx, ct, &c, &err), CAIRN_OK);
      assert_int_equal(c, n);
      if (k < NFAM) {
        assert_int_equal(cairn__ataf_invert(families[k], n, &x, &t, &err), CAIRN_OK);
        assert_int_equal(x, cx);
        assert_int_equal(t, ct);
      }
    }
  }
}

/* Closed forms and constructed tables agree across the whole 63-bit range. */
static void test_named_equals_constructed(void **state) {
  (void)state;
  cairn_error err;
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (size_t k = 0; k < NFAM; k++) {
    cairn__ataf a;
    build_family(&a, families[k]);
    assert_int_equal(a.ngroups, CAIRN_ATAF_MAX_GROUPS);
    for (int r = 0; r < 200000; r++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      uint64_t n = (s >> 1) >> (s & 63); /* every magnitude of index */
      if (n == 0)
        n = 1;
      uint64_t x = 0, t = 0, cx = 0, ct = 0, f = 0, c = 0;
      assert_int_equal(cairn__ataf_invert(families[k], n, &x, &t, &err), CAIRN_OK);
      assert_int_equal(cairn__ataf_phi_inverse(&a, n, &cx, &ct, &err), CAIRN_OK);
      assert_int_equal(x, cx);
      assert_int_equal(t, ct);
      assert_int_equal(cairn__ataf_index(families[k], x, t, &f, &err), CAIRN_OK);
      assert_int_equal(f, n);
      /* a random row and allocation: same status, same value */
      uint64_t rx = (s >> 7) >> ((s >> 3) & 63), rt = (s >> 11) >> ((s >> 17) & 63);
      rx += rx == 0;
      rt += rt == 0;
      cairn_status sn = cairn__ataf_index(families[k], rx, rt, &f, &err);
      assert_int_equal(cairn__ataf_phi(&a, rx, rt, &c, &err), sn);
      if (sn == CAIRN_OK)
        assert_int_equal(c, f);
      uint64_t b1 = 0, b2 = 0;
      sn = cairn__ataf_family_base(families[k], rx, &b1, &err);
      assert_int_equal(cairn__ataf_base(&a, rx, &b2, &err), sn);
      assert_int_equal(b1, b2);
      sn = cairn__ataf_family_stride(families[k], rx, &b1, &err);
      assert_int_equal(cairn__ataf_stride(&a, rx, &b2, &err), sn);
      assert_int_equal(b1, b2);
    }
    /* the extremes of the index range */
    uint64_t ends[] = {1, 2, MAXI, MAXI - 1, 1ull << 62, (1ull << 62) + (1ull << 61)};
    for (size_t e = 0; e < sizeof ends / sizeof ends[0]; e++) {
      uint64_t x = 0, t = 0, f = 0;
      assert_int_equal(cairn__ataf_invert(families[k], ends[e], &x, &t, &err), CAIRN_OK);
      assert_int_equal(cairn__ataf_index(families[k], x, t, &f, &err), CAIRN_OK);
      assert_int_equal(f, ends[e]);
    }
  }
}

/* Base, stride and the arithmetic progression of a row's indices. */
static void test_base_stride(void **state) {
  (void)state;
  cairn_error err;
  uint64_t b = 0, s = 0;
  assert_int_equal(cairn__ataf_family_base(CAIRN_ATAF_PHISHARP, 1000, &b, &err), CAIRN_OK);
  assert_int_equal(cairn__ataf_family_stride(CAIRN_ATAF_PHISHARP, 1000, &s, &err), CAIRN_OK);
  assert_int_equal(b, 500224); /* 2^9 * (2001 mod 1024) */
  assert_int_equal(s, 1ull << 19);
  assert_int_equal(cairn__ataf_family_base(CAIRN_ATAF_PHI3, 29, &b, &err), CAIRN_OK);
  assert_int_equal(cairn__ataf_family_stride(CAIRN_ATAF_PHI3, 29, &s, &err), CAIRN_OK);
  assert_int_equal(b, 128);
  assert_int_equal(s, 1024);
  assert_int_equal(cairn__ataf_family_base(CAIRN_ATAF_PHI1, 63, &b, &err), CAIRN_OK);
  assert_int_equal(b, 1ull << 62);
  /* row 63 of phi1 has one allocation only: its stride 2^63 does not fit */
  assert_int_equal(cairn__ataf_family_stride(CAIRN_ATAF_PHI1, 63, &s, &err), CAIRN_EOVERFLOW);
  assert_int_equal(cairn__ataf_family_stride(CAIRN_ATAF_PHI1, 62, &s, &err), CAIRN_OK);
  assert_int_equal(s, 1ull << 62);
  for (size_t k = 0; k < NFAM; k++)
    for (uint64_t x = 1; x <= 40; x++) {
      assert_int_equal(cairn__ataf_family_base(families[k], x, &b, &err), CAIRN_OK);
      assert_int_equal(cairn__ataf_family_stride(families[k], x, &s, &err), CAIRN_OK);
      for (uint64_t t = 1; t <= 20; t++)
        assert_int_equal(phi_ok(families[k], x, t), b + (t - 1) * s);
    }
}

static void expect_fits(cairn__ataf_family f, uint64_t x, uint64_t t, uint64_t want_last) {
  cairn_error err;
  uint64_t n = 0;
  assert_int_equal(cairn__ataf_index(f, x, t, &n, &err), CAIRN_OK);
  if (want_last)
    assert_int_equal(n, want_last);
  assert_true(n <= MAXI);
}

static void expect_overflow(cairn__ataf_family f, uint64_t x, uint64_t t) {
  cairn_error err;
  uint64_t n = 12345;
  err.text[0] = '\0';
  assert_int_equal(cairn__ataf_index(f, x, t, &n, &err), CAIRN_EOVERFLOW);
  assert_int_equal(err.status, CAIRN_EOVERFLOW);
  assert_non_null(strstr(err.text, cairn__ataf_family_name(f)));
  assert_int_equal(n, 12345); /* untouched */
}

/* The limits documented in ataf.h and docs/ataf.md. */
static void test_limits(void **state) {
  (void)state;
  /* prefix of rows with t = 1 */
  expect_fits(CAIRN_ATAF_PHI1, 63, 1, 1ull << 62);
  expect_overflow(CAIRN_ATAF_PHI1, 64, 1);
  expect_fits(CAIRN_ATAF_PHI3, 246, 1, 3ull << 61);
  expect_overflow(CAIRN_ATAF_PHI3, 247, 1);
  expect_overflow(CAIRN_ATAF_PHI3, 248, 1);
  expect_fits(CAIRN_ATAF_PHI3, 249, 1, 1ull << 62); /* largest row */
  expect_overflow(CAIRN_ATAF_PHI3, 250, 1);
  expect_overflow(CAIRN_ATAF_PHI3, UINT64_MAX, 1);
  expect_fits(CAIRN_ATAF_PHISHARP, 5368709119ull, 1, (1ull << 32) * ((1ull << 31) - 1));
  expect_overflow(CAIRN_ATAF_PHISHARP, 5368709120ull, 1);
  for (unsigned g = 33; g <= 62; g++) { /* rows 2^g .. 2^g + 2^(62-g) - 1 fit */
    uint64_t last = (1ull << g) + (1ull << (62 - g)) - 1;
    expect_fits(CAIRN_ATAF_PHISHARP, 1ull << g, 1, 1ull << g);
    expect_fits(CAIRN_ATAF_PHISHARP, last, 1, (1ull << g) * ((2ull << (62 - g)) - 1));
    expect_overflow(CAIRN_ATAF_PHISHARP, last + 1, 1);
  }
  expect_fits(CAIRN_ATAF_PHISHARP, 1ull << 62, 1, 1ull << 62); /* largest row */
  expect_overflow(CAIRN_ATAF_PHISHARP, (1ull << 62) + 1, 1);
  expect_overflow(CAIRN_ATAF_PHISHARP, 1ull << 63, 1);
  expect_overflow(CAIRN_ATAF_PHISHARP, UINT64_MAX, 1);
  /* largest t for rows 1, 1000, 10^6 */
  expect_fits(CAIRN_ATAF_PHI1, 1, 1ull << 62, MAXI);
  expect_overflow(CAIRN_ATAF_PHI1, 1, (1ull << 62) + 1);
  expect_overflow(CAIRN_ATAF_PHI1, 1000, 1);
  expect_overflow(CAIRN_ATAF_PHI1, 1000000, 1);
  expect_fits(CAIRN_ATAF_PHI3, 1, 1ull << 60, MAXI - 6);
  expect_overflow(CAIRN_ATAF_PHI3, 1, (1ull << 60) + 1);
  expect_overflow(CAIRN_ATAF_PHI3, 1000, 1);
  expect_overflow(CAIRN_ATAF_PHI3, 1000000, 1);
  expect_fits(CAIRN_ATAF_PHISHARP, 1, 1ull << 62, MAXI);
  expect_overflow(CAIRN_ATAF_PHISHARP, 1, (1ull << 62) + 1);
  expect_fits(CAIRN_ATAF_PHISHARP, 1000, 1ull << 44, 500224 + ((1ull << 44) - 1) * (1ull << 19));
  expect_overflow(CAIRN_ATAF_PHISHARP, 1000, (1ull << 44) + 1);
  expect_fits(CAIRN_ATAF_PHISHARP, 1000000, 1ull << 24, 0);
  expect_overflow(CAIRN_ATAF_PHISHARP, 1000000, (1ull << 24) + 1);
  /* a multiplication that would wrap uint64 is caught, not wrapped */
  expect_overflow(CAIRN_ATAF_PHISHARP, 3, UINT64_MAX);
  expect_overflow(CAIRN_ATAF_PHI1, 1, UINT64_MAX / 2);
  /* the constructed tables report the same limits */
  for (size_t k = 0; k < NFAM; k++) {
    cairn__ataf a;
    cairn_error err;
    uint64_t n;
    build_family(&a, families[k]);
    uint64_t pre = k == 0 ? 63 : k == 1 ? 246 : 5368709119ull;
    assert_int_equal(cairn__ataf_phi(&a, pre, 1, &n, &err), CAIRN_OK);
    assert_int_equal(cairn__ataf_phi(&a, pre + 1, 1, &n, &err), CAIRN_EOVERFLOW);
  }
}

static void test_custom_family(void **state) {
  (void)state;
  cairn_error err;
  cairn__ataf a;
  assert_int_equal(cairn__ataf_build(&a, &custom_spec, &err), CAIRN_OK);
  assert_int_equal(a.ngroups, CAIRN_ATAF_MAX_GROUPS);
  static const struct {
    uint64_t x, t, n;
  } v[] = {
    {1, 1, 1},   {8, 1, 15},  {8, 2, 31},  {9, 1, 2},     {9, 3, 10},     {10, 1, 4},
    {41, 1, 252}, {42, 1, 8},  {42, 2, 40}, {50, 1, 64}, {50, 7, 12352},
    {905, 1, 8646911284551352320ull},
  };
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    uint64_t n = 0, x = 0, t = 0;
    assert_int_equal(cairn__ataf_phi(&a, v[i].x, v[i].t, &n, &err), CAIRN_OK);
    assert_int_equal(n, v[i].n);
    assert_int_equal(cairn__ataf_phi_inverse(&a, n, &x, &t, &err), CAIRN_OK);
    assert_int_equal(x, v[i].x);
    assert_int_equal(t, v[i].t);
  }
  uint64_t n, s;
  cairn__ataf_row r;
  assert_int_equal(cairn__ataf_locate(&a, 42, &r, &err), CAIRN_OK);
  assert_int_equal(r.group, 3);
  assert_int_equal(r.kappa, 1);
  assert_int_equal(r.position, 1);
  assert_int_equal(cairn__ataf_stride(&a, 50, &s, &err), CAIRN_OK);
  assert_int_equal(s, 1ull << 11);
  assert_int_equal(cairn__ataf_phi(&a, 906, 1, &n, &err), CAIRN_EOVERFLOW);
  assert_int_equal(cairn__ataf_phi(&a, 50, 4503599627370496ull, &n, &err), CAIRN_OK);
  assert_int_equal(cairn__ataf_phi(&a, 50, 4503599627370497ull, &n, &err), CAIRN_EOVERFLOW);
  /* rows past group 62 (1 + 8+1+32+2+2+4 + 57*16 = 961 rows in all) */
  assert_int_equal(a.first_row[62] + 16, 962);
  assert_int_equal(cairn__ataf_locate(&a, 961, &r, &err), CAIRN_OK);
  assert_int_equal(r.group, 62);
  assert_int_equal(cairn__ataf_locate(&a, 962, &r, &err), CAIRN_EOVERFLOW);
  assert_int_equal(cairn__ataf_phi(&a, 962, 1, &n, &err), CAIRN_EOVERFLOW);
}

/* Group sizes that run past the uint64 rows: the groups stop there, and the
 * inverse reports rows it cannot name. */
static void test_huge_groups(void **state) {
  (void)state;
  cairn_error err;
  cairn__ataf a;
  uint64_t n, x, t;
  /* kappa(g) = 5g + 3: group 13 (2^68 rows) starts below 2^64, group 14 not */
  cairn__ataf_spec steep = {NULL, 0, 5, 3};
  assert_int_equal(cairn__ataf_build(&a, &steep, &err), CAIRN_OK);
  assert_int_equal(a.ngroups, 14);
  assert_int_equal(a.kappa[13], 64);
  for (uint64_t m = 1; m < (1u << 14); m++) {
    assert_int_equal(cairn__ataf_phi_inverse(&a, m, &x, &t, &err), CAIRN_OK);
    assert_int_equal(cairn__ataf_phi(&a, x, t, &n, &err), CAIRN_OK);
    assert_int_equal(n, m);
  }
  assert_int_equal(cairn__ataf_phi_inverse(&a, 1ull << 14, &x, &t, &err), CAIRN_EOVERFLOW);
  assert_int_equal(cairn__ataf_phi_inverse(&a, 3ull << 20, &x, &t, &err), CAIRN_EOVERFLOW);
  assert_int_equal(cairn__ataf_phi(&a, UINT64_MAX, 1, &n, &err), CAIRN_EOVERFLOW);
  /* one group of every uint64 row: phi(x, 1) = 2x - 1, no second allocation */
  const unsigned all[] = {64};
  cairn__ataf_spec one = {all, 1, 0, 0};
  assert_int_equal(cairn__ataf_build(&a, &one, &err), CAIRN_OK);
  assert_int_equal(a.ngroups, 1);
  assert_int_equal(cairn__ataf_phi(&a, 1ull << 62, 1, &n, &err), CAIRN_OK);
  assert_int_equal(n, MAXI);
  assert_int_equal(cairn__ataf_phi(&a, (1ull << 62) + 1, 1, &n, &err), CAIRN_EOVERFLOW);
  assert_int_equal(cairn__ataf_phi(&a, 1, 2, &n, &err), CAIRN_EOVERFLOW);
  assert_int_equal(cairn__ataf_phi_inverse(&a, MAXI, &x, &t, &err), CAIRN_OK);
  assert_int_equal(x, 1ull << 62);
  assert_int_equal(t, 1);
  assert_int_equal(cairn__ataf_phi_inverse(&a, 2, &x, &t, &err), CAIRN_EOVERFLOW);
  /* the last group starts near 2^64: its largest 63-bit index still has a
   * uint64 row */
  const unsigned late[] = {63, 62, 61, 62};
  cairn__ataf_spec l = {late, 4, 0, 0};
  assert_int_equal(cairn__ataf_build(&a, &l, &err), CAIRN_OK);
  assert_int_equal(a.ngroups, 4);
  assert_int_equal(a.first_row[3], 1 + (1ull << 63) + (1ull << 62) + (1ull << 61));
  uint64_t top = (1ull << 63) - 8; /* 2^3 * (2^60 - 1) */
  assert_int_equal(cairn__ataf_phi_inverse(&a, top, &x, &t, &err), CAIRN_OK);
  assert_int_equal(x, a.first_row[3] + (1ull << 59) - 1);
  assert_int_equal(t, 1);
  assert_int_equal(cairn__ataf_phi(&a, x, 1, &n, &err), CAIRN_OK);
  assert_int_equal(n, top);
  assert_int_equal(cairn__ataf_phi(&a, x + 1, 1, &n, &err), CAIRN_EOVERFLOW);
  assert_int_equal(cairn__ataf_phi_inverse(&a, 16, &x, &t, &err), CAIRN_EOVERFLOW);
}

static void test_invalid(void **state) {
  (void)state;
  cairn_error err;
  uint64_t n = 7, x = 7, t = 7;
  cairn__ataf a;
  cairn__ataf_family f = CAIRN_ATAF_PHI1;
  build_family(&a, CAIRN_ATAF_PHISHARP);
  for (size_t k = 0; k < NFAM; k++) {
    assert_int_equal(cairn__ataf_index(families[k], 0, 1, &n, &err), CAIRN_EINVAL);
    assert_int_equal(cairn__ataf_index(families[k], 1, 0, &n, &err), CAIRN_EINVAL);
    assert_int_equal(cairn__ataf_invert(families[k], 0, &x, &t, &err), CAIRN_EINVAL);
    assert_int_equal(cairn__ataf_invert(families[k], MAXI + 1, &x, &t, &err), CAIRN_EINVAL);
    assert_int_equal(cairn__ataf_family_base(families[k], 0, &n, &err), CAIRN_EINVAL);
    assert_int_equal(cairn__ataf_family_stride(families[k], 0, &n, &err), CAIRN_EINVAL);
  }
  assert_int_equal(n, 7);
  assert_int_equal(x, 7);
  assert_int_equal(t, 7);
  assert_int_equal(cairn__ataf_phi(&a, 0, 1, &n, &err), CAIRN_EINVAL);
  assert_int_equal(cairn__ataf_phi(&a, 1, 0, &n, &err), CAIRN_EINVAL);
  assert_int_equal(cairn__ataf_phi_inverse(&a, 0, &x, &t, &err), CAIRN_EINVAL);
  assert_int_equal(cairn__ataf_phi_inverse(&a, UINT64_MAX, &x, &t, &err), CAIRN_EINVAL);
  assert_int_equal(cairn__ataf_base(&a, 0, &n, &err), CAIRN_EINVAL);
  cairn__ataf_row r;
  assert_int_equal(cairn__ataf_locate(&a, 0, &r, &err), CAIRN_EINVAL);
  assert_int_equal(cairn__ataf_build(&a, NULL, &err), CAIRN_EINVAL);
  cairn__ataf_spec broken = {NULL, 3, 0, 0};
  assert_int_equal(cairn__ataf_build(&a, &broken, &err), CAIRN_EINVAL);
  cairn__ataf_family bogus = (cairn__ataf_family)7;
  assert_int_equal(cairn__ataf_index(bogus, 1, 1, &n, &err), CAIRN_EINVAL);
  assert_int_equal(cairn__ataf_invert(bogus, 1, &x, &t, &err), CAIRN_EINVAL);
  cairn__ataf_spec s;
  assert_int_equal(cairn__ataf_family_spec(bogus, &s, &err), CAIRN_EINVAL);
  assert_string_equal(cairn__ataf_family_name(bogus), "unknown");
  assert_int_equal(cairn__ataf_parse_family("phi2", &f), -1);
  assert_int_equal(f, CAIRN_ATAF_PHI1);
  for (size_t k = 0; k < NFAM; k++) {
    assert_int_equal(cairn__ataf_parse_family(cairn__ataf_family_name(families[k]), &f), 0);
    assert_int_equal(f, families[k]);
  }
  /* a NULL error struct is allowed */
  assert_int_equal(cairn__ataf_index(CAIRN_ATAF_PHI1, 64, 1, &n, NULL), CAIRN_EOVERFLOW);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_figure10),
    cmocka_unit_test(test_roundtrip_rows),
    cmocka_unit_test(test_roundtrip_indices),
    cmocka_unit_test(test_named_equals_constructed),
    cmocka_unit_test(test_base_stride),
    cmocka_unit_test(test_limits),
    cmocka_unit_test(test_custom_family),
    cmocka_unit_test(test_huge_groups),
    cmocka_unit_test(test_invalid),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
