/* test_bind.c — axis binding (ir/bind.c): sizes checked, asserts, overflow,
 * the inference of var axes from tensor shapes, and whether a binding fits
 * 32-bit indices, on IR programs built by hand (ir_builder.h).
 *
 * Before: nothing.  After: each test builds a program in its own arena,
 * binds it and checks the sizes or the diagnostics. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "ir/bind.h"
#include "interp/interp.h"
#include "interp/interp_impl.h" /* interp_vectorize: vectorized vs point-by-point */
#include "passes/pipeline.h"

#include "ir_builder.h"

/* ---- tests: 32-bit indices ----------------------------------------------- */

/* out[i, j] = sum(k: a[i, k] * b[k, j]) with n x n tensors: fits 32-bit
 * indices while every tensor, the free space (n^2) and the reduction (n)
 * stay below 2^30. */
static void test_fits_i32(void **state) {
  (void)state;
  sym *n = var("n"), *m = var("m");
  ir_tensor *a = tensor("a", IR_ROLE_INPUT, 2, n, m), *b = tensor("b", IR_ROLE_INPUT, 1, m);
  ir_tensor *out = tensor("out", IR_ROLE_OUTPUT, 1, n);
  ir_stmt *s = stmt(out, 0, "out[i] = sum(k: a[i, k] * b[k])");
  sym *i = idx(s, "i", IR_IDX_FREE, n), *k = idx(s, "k", IR_IDX_REDUCE, m);
  finish(s, red(IR_RED_SUM, bin(IR_OP_MUL, ld(a, i, k), ld(b, k)), 1, k), i);
  int64_t small[] = {1000, 1000};
  assert_true(ir_bind(P, A, small, &B, D));
  assert_true(ir_binding_fits_i32(P, &B));
  int64_t edge[] = {1 << 15, (1 << 15) - 1}; /* a: just under 2^30 elements */
  assert_true(ir_bind(P, A, edge, &B, D));
  assert_true(ir_binding_fits_i32(P, &B));
  int64_t big_tensor[] = {1 << 15, 1 << 15}; /* a: 2^30 elements */
  assert_true(ir_bind(P, A, big_tensor, &B, D));
  assert_false(ir_binding_fits_i32(P, &B));
  int64_t big_var[] = {1, 1 << 30};
  assert_true(ir_bind(P, A, big_var, &B, D));
  assert_false(ir_binding_fits_i32(P, &B));
  release();
}

/* A reduction space larger than any tensor (an outer product summed):
 * small tensors, 2^30 terms. */
static void test_fits_i32_reduction(void **state) {
  (void)state;
  sym *n = var("n");
  ir_tensor *x = tensor("x", IR_ROLE_INPUT, 1, n), *y = tensor("y", IR_ROLE_OUTPUT, 1, K(1));
  ir_stmt *s = stmt(y, 0, "y[z] = sum(p, q: x[p] * x[q])");
  sym *z = idx(s, "z", IR_IDX_FREE, K(1));
  sym *pi = idx(s, "p", IR_IDX_REDUCE, n), *qi = idx(s, "q", IR_IDX_REDUCE, n);
  finish(s, red(IR_RED_SUM, bin(IR_OP_MUL, ld(x, pi), ld(x, qi)), 2, pi, qi), z);
  int64_t ok[] = {1 << 14};
  assert_true(ir_bind(P, A, ok, &B, D));
  assert_true(ir_binding_fits_i32(P, &B));
  int64_t too_many[] = {1 << 15};
  assert_true(ir_bind(P, A, too_many, &B, D));
  assert_false(ir_binding_fits_i32(P, &B));
  release();
}

/* Integer values a statement computes are bounded like addresses: in
 * y[i] = x[i] * (n*n*i), with small tensors and spaces, n*n*(n-1) reaches
 * 2^30 from n = 1025 on. */
static void test_fits_i32_index_values(void **state) {
  (void)state;
  sym *n = var("n");
  ir_tensor *x = tensor("x", IR_ROLE_INPUT, 1, n), *y = tensor("y", IR_ROLE_OUTPUT, 1, n);
  ir_stmt *s = stmt(y, 0, "y[i] = x[i] * (n*n*i)");
  sym *i = idx(s, "i", IR_IDX_FREE, n);
  finish(s, bin(IR_OP_MUL, ld(x, i), ival(mul(mul(n, n), i))), i);
  int64_t ok[] = {1024};
  assert_true(ir_bind(P, A, ok, &B, D));
  assert_true(ir_binding_fits_i32(P, &B));
  int64_t big[] = {1025};
  assert_true(ir_bind(P, A, big, &B, D));
  assert_false(ir_binding_fits_i32(P, &B));
  release();
}

/* ---- tests: binding ------------------------------------------------------- */

static void test_bind_nonpositive_axis(void **state) {
  (void)state;
  sym *d = var("d");
  sym *ks = derived("ks", K(3), IR_AXIS_CONST);
  derived("od", add(sub(d, ks), K(1)), IR_AXIS_DERIVED);
  int64_t vars[] = {2};
  assert_false(ir_bind(P, A, vars, &B, D));
  expect_error("axis od = d - 2 is 0 for d=2; sizes must be positive");
  int64_t zero[] = {0};
  assert_false(ir_bind(P, A, zero, &B, D));
  expect_error("axis d is 0; sizes must be positive");
}

static void test_bind_assert_and_overflow(void **state) {
  (void)state;
  sym *im = var("image_size"), *big = var("big");
  sym *patch = derived("patch_size", K(4), IR_AXIS_CONST);
  add_assert(sym_mod(A, im, 4), IR_CMP_EQ, K(0), "image_size % patch_size == 0");
  add_assert(im, IR_CMP_GE, mul(K(2), patch), NULL);
  derived("cube", mul(big, mul(big, big)), IR_AXIS_DERIVED);
  tensor("t", IR_ROLE_INPUT, 2, big, big);
  int64_t bad[] = {30, 2};
  assert_false(ir_bind(P, A, bad, &B, D));
  expect_error("assert image_size % patch_size == 0 fails for image_size=30");
  int64_t small[] = {4, 2};
  assert_false(ir_bind(P, A, small, &B, D));
  expect_error("assert image_size >= 8 fails for image_size=4");
  int64_t huge[] = {32, 3000000};
  assert_false(ir_bind(P, A, huge, &B, D));
  expect_error("axis cube = big*big*big overflows 64-bit integers for big=3000000");
  int64_t wide[] = {32, 2000000}; /* cube fits; t has 4e12 > 2^40 elements */
  assert_false(ir_bind(P, A, wide, &B, D));
  expect_error("tensor 't' f32[big, big] has 4000000000000 elements");
  int64_t good[] = {32, 5};
  assert_true(ir_bind(P, A, good, &B, D));
  assert_int_equal(B.numel[0], 25);
  tensor("u", IR_ROLE_OUTPUT, 1, sub(big, K(5)));
  int64_t short_u[] = {32, 3};
  assert_false(ir_bind(P, A, short_u, &B, D));
  expect_error("tensor 'u': dimension 0 (big - 5) is -2 for big=3; sizes must be positive");
}

/* spec: x f32[h, w, c], rel f32[2*h - 1, c], bias f32[c]; output out f32[n] */
static void infer_spec(void) {
  sym *h = var("h"), *w = var("w"), *c = var("c"), *n = var("n");
  sym *r = derived("rel_size", sub(mul(K(2), h), K(1)), IR_AXIS_DERIVED);
  tensor("x", IR_ROLE_INPUT, 3, h, w, c);
  tensor("rel", IR_ROLE_INPUT, 2, r, c);
  tensor("out", IR_ROLE_OUTPUT, 1, n);
}

static void test_infer_vars(void **state) {
  (void)state;
  infer_spec();
  int64_t xs[] = {4, 5, 6}, rs[] = {7, 6};
  ir_shape_arg args[] = {{"rel", 2, rs}, {"x", 3, xs}};
  int64_t vars[4] = {0, 0, 0, 9};
  assert_true(ir_infer_vars(P, args, 2, vars, D));
  assert_int_equal(vars[0], 4);
  assert_int_equal(vars[1], 5);
  assert_int_equal(vars[2], 6);
  assert_int_equal(vars[3], 9);
  assert_int_equal(kbc_diag_errors(D), 0);
}

static void test_infer_from_affine_dim(void **state) {
  (void)state;
  sym *h = var("h");
  tensor("rel", IR_ROLE_INPUT, 1, sub(mul(K(2), h), K(1)));
  int64_t rs[] = {9};
  ir_shape_arg args[] = {{"rel", 1, rs}};
  int64_t vars[1] = {0};
  assert_true(ir_infer_vars(P, args, 1, vars, D));
  assert_int_equal(vars[0], 5);
  rs[0] = 8;
  vars[0] = 0;
  assert_false(ir_infer_vars(P, args, 1, vars, D));
  expect_error("input 'rel': dimension 0 has size 8, but 2*h - 1 is never 8");
}

static void test_infer_conflicts(void **state) {
  (void)state;
  infer_spec();
  int64_t xs[] = {4, 5, 6}, rs[] = {9, 6}, bad_c[] = {7, 7};
  ir_shape_arg args[] = {{"x", 3, xs}, {"rel", 2, rs}};
  int64_t vars[4] = {0, 0, 0, 1};
  assert_false(ir_infer_vars(P, args, 2, vars, D));
  expect_error("input 'rel': dimension 0 has size 9, but axis rel_size = 2*h - 1 is 7 for h=4 (from input 'x')");
  kbc_diag_destroy(D);
  D = kbc_diag_create("test.kb", NULL);
  ir_shape_arg args2[] = {{"x", 3, xs}, {"rel", 2, bad_c}};
  assert_int_equal(vars[0], 0); /* a failed inference leaves only the preset values */
  assert_int_equal(vars[3], 1);
  assert_false(ir_infer_vars(P, args2, 2, vars, D));
  expect_error("input 'rel': dimension 1 has size 7, but axis c is 6 (from input 'x')");
  /* preset value disagreeing with a shape */
  kbc_diag_destroy(D);
  D = kbc_diag_create("test.kb", NULL);
  int64_t preset[4] = {0, 3, 0, 1};
  int64_t rs_ok[] = {7, 6};
  ir_shape_arg args3[] = {{"x", 3, xs}, {"rel", 2, rs_ok}};
  assert_false(ir_infer_vars(P, args3, 2, preset, D));
  expect_error("input 'x': dimension 1 has size 5, but axis w is 3 (set with --set w=3)");
}

static void test_infer_bad_args(void **state) {
  (void)state;
  infer_spec();
  int64_t xs[] = {4, 5}, rs[] = {7, 6}, fs[] = {1};
  ir_shape_arg args[] = {{"x", 2, xs}, {"foo", 1, fs}, {"out", 1, fs}};
  int64_t vars[4] = {0};
  assert_false(ir_infer_vars(P, args, 3, vars, D));
  expect_error("unexpected input 'foo'");
  expect_error("unexpected input 'out': it is an output of the kernel, not an input");
  expect_error("input 'x' has rank 2, but the kernel declares it f32[h, w, c] (rank 3)");
  expect_error("missing input 'rel'");
  kbc_diag_destroy(D);
  D = kbc_diag_create("test.kb", NULL);
  int64_t xs3[] = {4, 5, 6};
  ir_shape_arg ok_args[] = {{"x", 3, xs3}, {"rel", 2, rs}};
  int64_t v2[4] = {0};
  assert_false(ir_infer_vars(P, ok_args, 2, v2, D));
  expect_error("cannot infer axis 'n': no input shape determines it; set it with --set n=N");
  assert_int_equal(kbc_diag_errors(D), 1);
  /* a repeated input, an empty dimension, a bad preset */
  kbc_diag_destroy(D);
  D = kbc_diag_create("test.kb", NULL);
  int64_t xs0[] = {4, 0, 6};
  ir_shape_arg twice[] = {{"rel", 2, rs}, {"x", 3, xs0}, {"rel", 2, rs}};
  int64_t v3[4] = {0, 0, 0, -2};
  assert_false(ir_infer_vars(P, twice, 3, v3, D));
  expect_error("input 'rel' is given twice");
  expect_error("input 'x': dimension 1 has size 0; sizes must be positive");
  expect_error("axis n is set to -2; sizes must be positive");
}

/* An inferred value below 1: x f32[h + 5] given size 3. */
static void test_infer_nonpositive(void **state) {
  (void)state;
  sym *h = var("h");
  tensor("x", IR_ROLE_INPUT, 1, add(h, K(5)));
  int64_t xs[] = {3};
  ir_shape_arg args[] = {{"x", 1, xs}};
  int64_t vars[1] = {0};
  assert_false(ir_infer_vars(P, args, 1, vars, D));
  expect_error("input 'x': dimension 0 has size 3, which as h + 5 gives h = -2; sizes must be positive");
  assert_int_equal(vars[0], 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_bind_nonpositive_axis, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bind_assert_and_overflow, setup, teardown),
      cmocka_unit_test_setup_teardown(test_infer_vars, setup, teardown),
      cmocka_unit_test_setup_teardown(test_infer_from_affine_dim, setup, teardown),
      cmocka_unit_test_setup_teardown(test_infer_conflicts, setup, teardown),
      cmocka_unit_test_setup_teardown(test_infer_bad_args, setup, teardown),
      cmocka_unit_test_setup_teardown(test_infer_nonpositive, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fits_i32, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fits_i32_reduction, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fits_i32_index_values, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
