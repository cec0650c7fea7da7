/* test_compare.c — runtime/compare.c, the judgement of `kbc verify`:
 * relative L2 and largest absolute error, an all-zero reference judged by
 * the absolute error, NaN and infinity agreeing only at the same element
 * on both sides, elements left at RT_UNWRITTEN counted apart. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "runtime/compare.h"

static float unwritten(void) {
  uint32_t bits = RT_UNWRITTEN;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static void test_equal_and_close(void **state) {
  (void)state;
  float want[4] = {1, -2, 3, 0.5f};
  rt_compare_result r = rt_compare_f32(want, want, 4, 1e-5);
  assert_true(r.ok);
  assert_true(r.rel_l2 == 0 && r.max_abs == 0);
  /* one element off by 1e-3: ||d|| = 1e-3, ||want|| = sqrt(14.25) */
  float got[4] = {1, -2, 3.001f, 0.5f};
  r = rt_compare_f32(got, want, 4, 1e-5);
  assert_false(r.ok);
  assert_true(fabs(r.rel_l2 - (double)(3.001f - 3.0f) / sqrt(14.25)) < 1e-12);
  assert_true(fabs(r.max_abs - (double)(3.001f - 3.0f)) < 1e-12);
  r = rt_compare_f32(got, want, 4, 1e-3);
  assert_true(r.ok);
}

static void test_zero_reference(void **state) {
  (void)state;
  float zero[3] = {0, 0, 0}, tiny[3] = {0, 3e-6f, -4e-6f}, big[3] = {0, 0, 1e-3f};
  rt_compare_result r = rt_compare_f32(zero, zero, 3, 1e-5);
  assert_true(r.ok && r.rel_l2 == 0);
  r = rt_compare_f32(tiny, zero, 3, 1e-5); /* absolute L2: 5e-6 */
  assert_true(r.ok);
  assert_true(fabs(r.rel_l2 - 5e-6) < 1e-9);
  r = rt_compare_f32(big, zero, 3, 1e-5);
  assert_false(r.ok);
}

static void test_nonfinite(void **state) {
  (void)state;
  float want[5] = {NAN, INFINITY, -INFINITY, 1, 2};
  float same[5] = {NAN, INFINITY, -INFINITY, 1, 2};
  rt_compare_result r = rt_compare_f32(same, want, 5, 1e-5);
  assert_true(r.ok);
  assert_int_equal(r.nonfinite, 0);
  assert_true(r.rel_l2 == 0);
  float other[5] = {1, -INFINITY, NAN, NAN, 2}; /* NaN vs 1 counts too */
  r = rt_compare_f32(other, want, 5, 1e-5);
  assert_false(r.ok);
  assert_int_equal(r.nonfinite, 4);
  assert_true(isfinite(r.rel_l2) && r.rel_l2 == 0); /* only element 4 is compared */
}

static void test_unwritten(void **state) {
  (void)state;
  float want[3] = {1, 2, NAN}, got[3] = {1, unwritten(), unwritten()};
  rt_compare_result r = rt_compare_f32(got, want, 3, 1e-5);
  assert_false(r.ok);
  assert_int_equal(r.unwritten, 2);
  assert_int_equal(r.nonfinite, 0);
}

static void test_huge_values_stay_finite(void **state) {
  (void)state;
  float want[2] = {3e38f, -3e38f}, got[2] = {-3e38f, 3e38f};
  rt_compare_result r = rt_compare_f32(got, want, 2, 1e-5);
  assert_true(isfinite(r.rel_l2) && isfinite(r.max_abs));
  assert_false(r.ok);
  assert_true(fabs(r.rel_l2 - 2.0) < 1e-12);
}

static void test_empty(void **state) {
  (void)state;
  rt_compare_result r = rt_compare_f32(NULL, NULL, 0, 1e-5);
  assert_true(r.ok && r.rel_l2 == 0 && r.max_abs == 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_equal_and_close), cmocka_unit_test(test_zero_reference),
      cmocka_unit_test(test_nonfinite),       cmocka_unit_test(test_unwritten),
      cmocka_unit_test(test_huge_values_stay_finite), cmocka_unit_test(test_empty),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
