/* test_sym.c — unit tests for sym/sym.h: normal form, div/mod rules,
 * overflow, evaluation, printing, substitution, the prover and bounds, plus
 * seeded random checks of normalization and prover soundness against
 * direct evaluation, and of the C printer against the host C compiler. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sym/sym.h"

static kbc_arena *A;

static int setup(void **state) {
  (void)state;
  A = kbc_arena_create();
  return 0;
}

static int teardown(void **state) {
  (void)state;
  kbc_arena_destroy(A);
  return 0;
}

/* ---- shorthands -------------------------------------------------------- */

enum { H, W, S, D, V, AX, N_AXES };                    /* axis ids */
enum { Y, KY, J, T, NN, CC, E, GY, GX, Z, DZ, N_IDX }; /* index ids */

static sym *K(int64_t v) { return sym_const(A, v); }
static sym *ax(int id) {
  static const char *names[] = {"h", "w", "image_size", "d", "v", "a"};
  return sym_axis(A, id, names[id]);
}
static sym *ix(int id) {
  static const char *names[] = {"y", "ky", "j", "t", "n", "c", "e", "gy", "gx", "z", "dz"};
  return sym_index(A, id, names[id]);
}
static sym *add(const sym *x, const sym *y) { return sym_add(A, x, y); }
static sym *sub(const sym *x, const sym *y) { return sym_sub(A, x, y); }
static sym *mul(const sym *x, const sym *y) { return sym_mul(A, x, y); }
static sym *scale(const sym *x, int64_t c) { return sym_scale(A, x, c); }
static sym *divc(const sym *x, int64_t c) { return sym_div(A, x, c); }
static sym *modc(const sym *x, int64_t c) { return sym_mod(A, x, c); }
static const char *str(const sym *x) { return sym_str(A, x); }

static const char *cstr(const sym *x) {
  kbc_buf b = {0};
  sym_print_c(x, &b, NULL, NULL);
  char *s = kbc_arena_strdup(A, kbc_buf_str(&b));
  kbc_buf_free(&b);
  return s;
}

static int64_t eval(const sym *x, const int64_t *axes, const int64_t *idx) {
  int64_t v = 0;
  assert_true(sym_eval(x, axes, idx, &v));
  return v;
}

static int nonneg(const sym_facts *f, const sym *p) { return sym_prove_nonneg(A, f, p); }

/* ---- normal form and printing ------------------------------------------ */

static void test_print_basic(void **state) {
  (void)state;
  sym *h = ax(H), *w = ax(W), *j = ix(J);
  assert_string_equal(str(add(scale(h, 2), K(-1))), "2*h - 1");
  sym *hm1 = sub(h, K(1));
  assert_true(sym_equal(add(add(hm1, hm1), K(1)), add(scale(h, 2), K(-1))));
  assert_string_equal(str(mul(h, w)), "h*w");
  assert_string_equal(str(mul(w, h)), "h*w");
  assert_string_equal(str(divc(ax(S), 4)), "image_size/4");
  assert_string_equal(str(modc(divc(j, 64), 12)), "(j/64) % 12");
  assert_string_equal(str(add(sym_neg(A, ix(T)), K(3))), "-t + 3");
  assert_string_equal(str(K(0)), "0");
  assert_string_equal(str(K(-5)), "-5");
  assert_string_equal(str(sub(K(0), K(0))), "0");
  assert_string_equal(str(scale(divc(j, 64), 2)), "2*(j/64)");
  assert_string_equal(str(sub(h, modc(j, 4))), "h - j % 4");
  assert_string_equal(str(add(sym_neg(A, divc(j, 64)), K(3))), "-(j/64) + 3");
  assert_string_equal(str(mul(h, h)), "h*h");
  assert_string_equal(str(add(mul(h, h), add(scale(h, 2), K(1)))), "h*h + 2*h + 1");
  assert_string_equal(str(divc(add(ax(V), K(3)), 4)), "(v + 3)/4");
  assert_string_equal(str(mul(divc(j, 64), h)), "h*(j/64)");
  assert_string_equal(str(sym_index(A, 7, NULL)), "index7");
  assert_string_equal(str(sym_axis(A, 3, NULL)), "axis3");
  assert_string_equal(str(NULL), "<overflow>");
}

static void test_normal_form(void **state) {
  (void)state;
  sym *h = ax(H), *w = ax(W);
  /* terms collected, zeros dropped, constants folded */
  assert_true(sym_equal(sub(add(h, w), w), h));
  assert_true(sym_equal(sub(h, h), K(0)));
  assert_true(sym_equal(add(K(2), K(3)), K(5)));
  assert_true(sym_equal(mul(add(h, K(1)), sub(h, K(1))), sub(mul(h, h), K(1))));
  assert_true(sym_equal(mul(K(0), h), K(0)));
  assert_true(sym_equal(sym_neg(A, sym_neg(A, h)), h));
  assert_false(sym_equal(h, w));
  assert_false(sym_equal(h, scale(h, 2)));
  assert_false(sym_equal(NULL, NULL));
  assert_false(sym_equal(h, NULL));
  /* distributivity is structural */
  sym *lhs = mul(add(h, w), add(h, w));
  sym *rhs = add(add(mul(h, h), scale(mul(h, w), 2)), mul(w, w));
  assert_true(sym_equal(lhs, rhs));
  assert_string_equal(str(lhs), str(rhs));
}

static void test_order_determinism(void **state) {
  (void)state;
  sym *g = divc(ax(S), 4), *e = ix(E), *gy = ix(GY), *gx = ix(GX);
  sym *x1 = add(add(mul(mul(e, g), g), mul(gy, g)), gx);
  sym *x2 = add(gx, add(mul(g, gy), mul(g, mul(g, e))));
  assert_true(sym_equal(x1, x2));
  assert_string_equal(str(x1), str(x2));
  assert_string_equal(cstr(x1), cstr(x2));
  sym *t = ix(T), *n = ix(NN), *c = ix(CC);
  sym *y1 = add(add(scale(t, 768), scale(n, 64)), c);
  sym *y2 = add(c, add(mul(K(64), n), mul(t, K(768))));
  assert_string_equal(str(y1), str(y2));
  assert_string_equal(str(y1), "768*t + 64*n + c");
  assert_string_equal(cstr(y1), cstr(y2));
  /* names do not take part in identity: atoms are identified by id */
  assert_true(sym_equal(sym_axis(A, H, "h"), sym_axis(A, H, "other")));
}

/* ---- floor division and modulo ----------------------------------------- */

static void test_div_mod_rules(void **state) {
  (void)state;
  sym *v = ax(V), *a = ax(AX);
  assert_true(sym_equal(add(divc(sub(v, K(4)), 4), K(1)), divc(v, 4)));
  assert_true(sym_equal(divc(divc(v, 4), 2), divc(v, 8)));
  sym *x = add(scale(a, 8), K(3));
  assert_true(sym_equal(modc(x, 4), K(3)));
  assert_true(sym_equal(divc(x, 4), scale(a, 2)));
  assert_true(sym_equal(divc(x, 1), x));
  assert_true(sym_equal(modc(x, 1), K(0)));
  assert_true(sym_equal(modc(v, 1), K(0)));
  /* constants, floor semantics */
  assert_true(sym_equal(divc(K(-7), 2), K(-4)));
  assert_true(sym_equal(modc(K(-7), 2), K(1)));
  assert_true(sym_equal(divc(K(7), 2), K(3)));
  assert_true(sym_equal(divc(K(-1), 4), K(-1)));
  assert_true(sym_equal(modc(K(-1), 4), K(3)));
  assert_true(sym_equal(divc(K(-8), 4), K(-2)));
  /* pulling multiples out */
  assert_true(sym_equal(divc(add(scale(v, 4), a), 4), add(v, divc(a, 4))));
  assert_true(sym_equal(modc(add(scale(v, 4), a), 4), modc(a, 4)));
  assert_true(sym_equal(divc(sub(v, K(1)), 4), sub(divc(add(v, K(3)), 4), K(1))));
  /* common factors, nested div and mod */
  assert_true(sym_equal(divc(scale(v, 2), 4), divc(v, 2)));
  assert_true(sym_equal(divc(add(scale(v, 2), K(1)), 4), divc(v, 2)));
  assert_true(sym_equal(modc(scale(v, 2), 4), scale(modc(v, 2), 2)));
  assert_true(sym_equal(modc(add(scale(v, 2), K(1)), 4), add(scale(modc(v, 2), 2), K(1))));
  assert_true(sym_equal(divc(add(divc(v, 4), K(1)), 2), divc(add(v, K(4)), 8)));
  assert_true(sym_equal(modc(modc(v, 8), 4), modc(v, 4)));
  assert_false(sym_equal(modc(modc(v, 4), 8), modc(v, 4)));
  assert_true(sym_equal(add(scale(divc(v, 4), 4), modc(v, 4)), v));
  assert_true(sym_equal(add(scale(divc(v, 4), 12), scale(modc(v, 4), 3)), scale(v, 3)));
  assert_true(sym_equal(add(scale(divc(scale(v, 2), 4), 4), modc(scale(v, 2), 4)), scale(v, 2)));
  /* the digits of a mixed radix put back together: 64*((v/64) % 12) + v % 64
   * = v % 768, then 768*(v/768) + v % 768 = v (SAM-HQ's qkv column j) */
  assert_true(sym_equal(add(scale(modc(divc(v, 64), 12), 64), modc(v, 64)), modc(v, 768)));
  assert_true(sym_equal(add(add(scale(divc(v, 768), 768), scale(modc(divc(v, 64), 12), 64)), modc(v, 64)), v));
  assert_true(sym_equal(add(scale(modc(divc(v, 4), 3), 8), scale(modc(v, 4), 2)), scale(modc(v, 12), 2)));
  assert_false(sym_equal(add(scale(modc(divc(v, 4), 3), 4), modc(v, 8)), modc(v, 12)));
  /* bad divisors and NULL */
  assert_null(divc(v, 0));
  assert_null(divc(v, -2));
  assert_null(modc(v, 0));
  assert_null(modc(v, -3));
  assert_null(divc(NULL, 2));
  assert_null(modc(NULL, 2));
}

/* ---- overflow and NULL ------------------------------------------------- */

static void test_overflow(void **state) {
  (void)state;
  sym *h = ax(H), *big = K(INT64_MAX);
  assert_null(mul(scale(h, INT64_MAX / 2), scale(h, 4)));
  assert_null(mul(K(INT64_MAX), K(2)));
  assert_null(add(big, K(1)));
  assert_null(add(scale(h, INT64_MAX), h));
  assert_null(sym_neg(A, K(INT64_MIN)));
  assert_null(scale(big, 2));
  assert_true(sym_equal(scale(h, 0), K(0)));
  assert_non_null(scale(big, 1));
  assert_non_null(sub(K(INT64_MIN + 1), K(1)));
  assert_null(sub(K(INT64_MIN), K(1)));
  assert_null(add(NULL, h));
  assert_null(add(h, NULL));
  assert_null(sub(NULL, h));
  assert_null(mul(h, NULL));
  assert_null(sym_neg(A, NULL));
  assert_null(scale(NULL, 2));
  assert_null(sym_subst_axis(A, NULL, H, h));
  assert_null(sym_subst_axis(A, h, H, NULL));
  assert_null(sym_subst_index(A, ix(J), J, NULL));
  assert_null(sym_subst_axis(A, scale(h, INT64_MAX), H, scale(h, 2)));
  int64_t v;
  assert_false(sym_is_const(NULL, &v));
  assert_int_equal(sym_degree(NULL), 0);
  assert_false(sym_has_index(NULL));
  assert_false(sym_has_axis(NULL));
  assert_false(sym_mentions_index(NULL, 0));
  assert_false(sym_is_index(NULL, NULL));
  /* INT64_MIN survives printing */
  assert_string_equal(str(K(INT64_MIN)), "-9223372036854775808");
  assert_string_equal(cstr(K(INT64_MIN)), "((-9223372036854775807LL - 1))");
  assert_string_equal(cstr(add(h, scale(ax(W), INT64_MIN))),
                      "(h + (-9223372036854775807LL - 1)*w)");
  assert_string_equal(cstr(sub(scale(ax(W), INT64_MIN), K(1))),
                      "((-9223372036854775807LL - 1)*w - 1LL)");
  assert_string_equal(cstr(NULL), "kbc_sym_overflow");
}

/* ---- evaluation -------------------------------------------------------- */

/* sym_bound: the sum of |term| with indices anywhere in [0, max]. */
static void test_bound(void **state) {
  (void)state;
  int64_t axes[N_AXES] = {5, 7, 32, 9, 13, 3};
  int64_t imax[N_IDX] = {0};
  imax[J] = 10;
  imax[Y] = 7;
  int64_t v = 0;
  assert_true(sym_bound(divc(ix(J), 4), axes, imax, &v));
  assert_int_equal(v, 3); /* 10/4 + 1 */
  assert_true(sym_bound(modc(ix(J), 4), axes, imax, &v));
  assert_int_equal(v, 3);
  assert_true(sym_bound(sub(scale(ix(Y), 2), scale(ax(H), 3)), axes, imax, &v));
  assert_int_equal(v, 29); /* 2*7 + 3*5: terms by magnitude, never cancelled */
  assert_true(sym_bound(K(-4), axes, imax, &v));
  assert_int_equal(v, 4);
  assert_false(sym_bound(ix(Y), axes, NULL, &v));                       /* no index ranges */
  assert_false(sym_bound(scale(ix(Y), INT64_MAX / 2), axes, imax, &v)); /* overflow */
}

static void test_eval(void **state) {
  (void)state;
  int64_t axes[N_AXES] = {5, 7, 32, 9, 13, 3};
  int64_t idx[N_IDX] = {0};
  idx[J] = -7;
  sym *j = ix(J);
  assert_int_equal(eval(divc(j, 2), NULL, idx), -4);
  assert_int_equal(eval(modc(j, 2), NULL, idx), 1);
  assert_int_equal(eval(modc(j, 4), NULL, idx), 1);
  assert_int_equal(eval(add(scale(ax(H), 2), K(-1)), axes, NULL), 9);
  assert_int_equal(eval(K(42), NULL, NULL), 42);
  assert_int_equal(eval(K(0), NULL, NULL), 0);
  idx[J] = 2000;
  assert_int_equal(eval(modc(divc(j, 64), 12), NULL, idx), 7);
  assert_int_equal(eval(add(mul(ax(H), j), divc(ax(S), 4)), axes, idx), 10008);
  int64_t out = 99;
  axes[H] = INT64_C(1) << 32;
  assert_false(sym_eval(mul(ax(H), ax(H)), axes, NULL, &out));
  assert_int_equal(out, 99);
  axes[H] = INT64_MAX;
  assert_false(sym_eval(add(ax(H), K(1)), axes, NULL, &out));
  assert_false(sym_eval(scale(ax(H), 2), axes, NULL, &out));
  assert_false(sym_eval(ax(H), NULL, idx, &out));  /* no axis values */
  assert_false(sym_eval(j, axes, NULL, &out));     /* no index values */
  assert_false(sym_eval(NULL, axes, idx, &out));
  assert_false(sym_eval(divc(mul(j, ax(H)), 4), axes, idx, &out)); /* inside a div */
}

/* ---- inspection -------------------------------------------------------- */

static void test_inspection(void **state) {
  (void)state;
  sym *h = ax(H), *j = ix(J), *y = ix(Y);
  int64_t v = 0;
  int id = -1;
  assert_true(sym_is_const(K(7), &v));
  assert_int_equal(v, 7);
  assert_true(sym_is_const(K(0), &v));
  assert_int_equal(v, 0);
  assert_true(sym_is_const(sub(h, h), NULL));
  assert_false(sym_is_const(h, &v));
  assert_false(sym_is_const(add(h, K(1)), &v));
  assert_true(sym_has_index(add(h, divc(j, 4))));
  assert_false(sym_has_index(divc(h, 4)));
  assert_true(sym_mentions_index(modc(add(j, h), 3), J));
  assert_false(sym_mentions_index(modc(add(j, h), 3), Y));
  assert_true(sym_has_axis(divc(add(j, h), 4)));
  assert_false(sym_has_axis(add(j, y)));
  assert_true(sym_is_index(j, &id));
  assert_int_equal(id, J);
  assert_false(sym_is_index(scale(j, 2), &id));
  assert_false(sym_is_index(add(j, K(1)), &id));
  assert_false(sym_is_index(h, &id));
  assert_int_equal(sym_degree(K(3)), 0);
  assert_int_equal(sym_degree(add(h, K(3))), 1);
  assert_int_equal(sym_degree(add(mul(h, mul(h, j)), h)), 3);
  assert_int_equal(sym_degree(divc(mul(h, h), 2)), 1);
}

static void test_split_affine(void **state) {
  (void)state;
  sym *h = ax(H), *w = ax(W), *y = ix(Y), *ky = ix(KY), *j = ix(J);
  sym *coeff[N_IDX], *rest;
  sym *x = add(add(scale(y, 3), mul(h, ky)), sub(mul(h, w), K(1)));
  assert_true(sym_split_affine(A, x, N_IDX, coeff, &rest));
  assert_true(sym_equal(coeff[Y], K(3)));
  assert_true(sym_equal(coeff[KY], h));
  assert_true(sym_equal(coeff[J], K(0)));
  assert_true(sym_equal(rest, sub(mul(h, w), K(1))));
  x = add(mul(y, mul(h, w)), add(divc(h, 2), mul(divc(h, 2), y)));
  assert_true(sym_split_affine(A, x, N_IDX, coeff, &rest));
  assert_true(sym_equal(coeff[Y], add(mul(h, w), divc(h, 2))));
  assert_true(sym_equal(rest, divc(h, 2)));
  assert_false(sym_split_affine(A, mul(y, ky), N_IDX, coeff, &rest));
  assert_false(sym_split_affine(A, mul(y, y), N_IDX, coeff, &rest));
  assert_false(sym_split_affine(A, divc(j, 64), N_IDX, coeff, &rest));
  assert_false(sym_split_affine(A, add(h, modc(j, 4)), N_IDX, coeff, &rest));
  assert_false(sym_split_affine(A, j, J, coeff, &rest)); /* id out of range */
  assert_false(sym_split_affine(A, NULL, N_IDX, coeff, &rest));
  assert_true(sym_split_affine(A, h, 0, coeff, &rest));
  assert_true(sym_equal(rest, h));
}

static void test_subst(void **state) {
  (void)state;
  sym *h = ax(H), *w = ax(W), *j = ix(J), *t = ix(T), *n = ix(NN);
  assert_true(sym_equal(sym_subst_axis(A, add(scale(h, 2), K(-1)), H, scale(w, 2)),
                        sub(scale(w, 4), K(1))));
  /* j = 64*t + n, n in [0, 63]: (j/64) % 12 becomes (t + n/64) % 12 */
  sym *by = add(scale(t, 64), n);
  assert_true(sym_equal(sym_subst_index(A, modc(divc(j, 64), 12), J, by),
                        modc(add(t, divc(n, 64)), 12)));
  assert_true(sym_equal(sym_subst_index(A, modc(j, 64), J, by), modc(n, 64)));
  assert_true(sym_equal(sym_subst_index(A, mul(j, j), J, add(t, K(1))),
                        add(add(mul(t, t), scale(t, 2)), K(1))));
  /* untouched when the variable is absent; axes and indices are distinct */
  assert_true(sym_equal(sym_subst_index(A, h, J, K(3)), h));
  assert_true(sym_equal(sym_subst_axis(A, sym_index(A, H, "y"), H, K(3)), sym_index(A, H, "y")));
  assert_true(sym_equal(sym_subst_axis(A, divc(h, 4), H, scale(w, 4)), w));
}

static const char *namer(void *ctx, sym_atom_kind kind, int id) {
  (void)ctx;
  static char buf[2][16];
  snprintf(buf[kind == SYM_ATOM_AXIS], sizeof buf[0], "%s%d", kind == SYM_ATOM_AXIS ? "A" : "I", id);
  return buf[kind == SYM_ATOM_AXIS];
}

static void test_print_c(void **state) {
  (void)state;
  sym *h = ax(H), *j = ix(J);
  assert_string_equal(cstr(add(scale(h, 2), K(-1))), "(2LL*h - 1LL)");
  assert_string_equal(cstr(K(0)), "0LL");
  assert_string_equal(cstr(K(-3)), "(-3LL)");
  assert_string_equal(cstr(h), "h");
  assert_string_equal(cstr(sym_neg(A, h)), "(-h)");
  assert_string_equal(cstr(mul(h, j)), "(h*j)");
  assert_string_equal(cstr(scale(ax(W), 2)), "(2LL*w)"); /* stands after `%` */
  assert_string_equal(cstr(divc(j, 64)), "(j / 64LL)");
  assert_string_equal(cstr(modc(divc(j, 64), 12)), "((j / 64LL) % 12LL)");
  assert_string_equal(cstr(divc(sub(h, j), 4)), "kbc_floordiv((h - j), 4LL)");
  assert_string_equal(cstr(modc(sub(j, K(1)), 4)), "((j + 3LL) % 4LL)");
  assert_string_equal(cstr(scale(divc(sub(j, K(1)), 4), 3)), "(3LL*((j + 3LL) / 4LL) - 3LL)");
  kbc_buf b = {0};
  sym_print_c(add(mul(h, divc(j, 64)), scale(ax(W), -2)), &b, namer, NULL);
  assert_string_equal(kbc_buf_str(&b), "(A0*(I2 / 64LL) - 2LL*A1)");
  kbc_buf_free(&b);
}

/* ---- prover ------------------------------------------------------------ */

static void test_prove_basic(void **state) {
  (void)state;
  sym *h = ax(H), *w = ax(W);
  sym_facts *none = sym_facts_create(A);
  assert_true(nonneg(none, sub(h, K(1))));
  assert_false(nonneg(none, sub(h, K(2))));
  assert_false(nonneg(NULL, sub(h, K(2))));
  assert_true(nonneg(NULL, h));
  assert_true(nonneg(none, K(0)));
  assert_false(nonneg(none, K(-1)));
  assert_false(nonneg(none, NULL));
  assert_true(nonneg(none, sub(mul(h, w), K(1))));
  assert_true(nonneg(none, sub(mul(h, h), h)));
  assert_false(nonneg(none, sub(h, w)));
  /* true but beyond the prover: (h - w)^2 >= 0 */
  sym *d = sub(h, w);
  assert_false(nonneg(none, mul(d, d)));
  /* index variables are never proven about */
  assert_false(nonneg(none, add(ix(J), K(5))));
  /* facts: h - 2 >= 1 gives h >= 3 */
  sym_facts *f = sym_facts_create(A);
  sym_facts_assume_nonneg(f, sub(sub(h, K(2)), K(1)));
  assert_true(nonneg(f, sub(h, K(3))));
  assert_false(nonneg(f, sub(h, K(4))));
  /* upper bounds: 8 - w >= 0 */
  sym_facts_assume_nonneg(f, sub(K(8), w));
  assert_true(nonneg(f, sub(K(10), w)));
  assert_true(nonneg(f, sub(scale(h, 8), mul(h, w))));
  assert_true(sym_prove_le(A, f, w, K(8)));
  assert_false(sym_prove_lt(A, f, w, K(8)));
  assert_true(sym_prove_lt(A, f, w, K(9)));
  /* facts used directly: h - w >= 0 */
  sym_facts *g = sym_facts_create(A);
  sym_facts_assume_nonneg(g, sub(h, w));
  assert_true(sym_prove_le(A, g, w, h));
  assert_true(sym_prove_le(A, g, w, add(h, K(2))));
  assert_false(sym_prove_lt(A, g, w, h));
  assert_true(sym_prove_eq(A, none, add(h, w), add(w, h)));
  assert_false(sym_prove_eq(A, none, h, w));
  /* a zero fact h - w == 0 */
  sym_facts *e = sym_facts_create(A);
  sym_facts_assume_zero(e, sub(h, w));
  assert_true(sym_prove_eq(A, e, h, w));
  /* a zero fact fixing an axis: d == 4 */
  sym_facts_assume_zero(e, sub(ax(D), K(4)));
  assert_true(sym_prove_le(A, e, ax(D), K(4)));
  assert_true(sym_prove_le(A, e, mul(ax(D), ax(D)), K(16)));
}

static void test_prove_div_mod(void **state) {
  (void)state;
  sym *v = ax(V);
  sym *q = divc(v, 4);
  sym_facts *none = sym_facts_create(A);
  assert_true(nonneg(none, sub(v, scale(q, 4))));
  assert_false(nonneg(none, sub(scale(q, 4), v)));
  assert_true(nonneg(none, q));
  assert_false(nonneg(none, sub(q, K(1))));
  assert_true(nonneg(none, sub(K(3), modc(v, 4))));
  assert_false(nonneg(none, sub(K(2), modc(v, 4))));
  assert_true(nonneg(none, sub(v, modc(v, 4))));
  assert_true(nonneg(none, sub(add(scale(q, 4), K(3)), v)));
  assert_true(nonneg(none, sub(divc(v, 2), scale(divc(v, 8), 4))));
  assert_true(nonneg(none, sub(divc(add(v, K(1)), 2), divc(v, 2))));
  sym_facts *f = sym_facts_create(A);
  sym_facts_assume_zero(f, modc(v, 4));
  assert_true(nonneg(f, sub(scale(q, 4), v)));
  assert_true(nonneg(f, sub(q, K(1))));        /* v >= 1 and 4 | v: v >= 4 */
  assert_true(sym_prove_eq(A, f, scale(q, 4), v));
  assert_true(sym_prove_eq(A, f, modc(v, 4), K(0)));
  assert_true(sym_prove_le(A, f, scale(divc(v, 8), 2), divc(v, 4)));
  assert_false(sym_prove_le(A, f, divc(v, 4), scale(divc(v, 8), 2)));
  /* the lower bound v >= 1 survives rewriting v = 4q + r (two cases) */
  assert_true(nonneg(none, sub(sub(v, K(1)), q)));                 /* v/4 <= v - 1 */
  assert_true(nonneg(none, add(divc(add(v, K(1)), 4), sub(v, K(1)))));
  assert_true(nonneg(none, sub(sub(v, divc(v, 3)), K(1))));
  assert_false(nonneg(none, sub(sub(v, divc(v, 3)), K(2))));        /* v = 1 */
  assert_true(nonneg(none, sym_neg(A, divc(scale(v, -5), 8))));     /* -floor(-5v/8) >= 0 */
  assert_true(nonneg(none, sub(K(-1), divc(scale(v, -5), 8))));     /* -floor(-5v/8) >= 1 */
  assert_false(nonneg(none, sub(K(-2), divc(scale(v, -5), 8))));
  sym *h = ax(H);
  assert_false(nonneg(none, sub(mul(h, q), divc(mul(h, v), 4)))); /* -1 at h = v = 2 */
  /* (v + 1) mod 4 == 2: v = 4w + 1 */
  sym_facts *g = sym_facts_create(A);
  sym_facts_assume_zero(g, sub(modc(add(v, K(1)), 4), K(2)));
  assert_true(sym_prove_eq(A, g, modc(v, 4), K(1)));
  assert_true(sym_prove_eq(A, g, scale(divc(v, 4), 4), sub(v, K(1))));
  /* floors of v + k with different k and divisors, correlated only through
   * the residue of v mod 4 (a second attempt enumerates it): nested
   * pooling's last read 2*(n/2/2 - 1) + 1 <= n/2 - 1 with n = v - 2 >= 1,
   * i.e. 2*floor((v+2)/4) - 3 <= floor(v/2) - 2, and false neighbours */
  sym *w2 = sub(v, K(2));
  sym_facts *n1 = sym_facts_create(A);
  sym_facts_assume_nonneg(n1, sub(w2, K(1)));
  sym *last = sub(scale(divc(divc(w2, 2), 2), 2), K(1));
  assert_true(sym_prove_le(A, n1, last, sub(divc(w2, 2), K(1))));
  assert_false(sym_prove_le(A, n1, add(last, K(1)), sub(divc(w2, 2), K(1))));          /* v = 7 */
  assert_true(sym_prove_le(A, none, scale(divc(add(v, K(2)), 4), 2), add(divc(v, 2), K(1))));
  assert_false(sym_prove_le(A, none, scale(divc(add(v, K(2)), 4), 2), divc(v, 2)));     /* v = 2 */
  assert_false(sym_prove_le(A, none, scale(divc(add(v, K(3)), 4), 2), add(divc(v, 2), K(0)))); /* v = 1 */
  /* with an upper bound on v too: v in [1, 6], 4*floor((v+1)/4) <= v + 1 - ... */
  sym_facts *b6 = sym_facts_create(A);
  sym_facts_assume_nonneg(b6, sub(K(6), v));
  assert_true(sym_prove_le(A, b6, add(divc(add(v, K(2)), 4), divc(v, 2)), K(5)));
  assert_false(sym_prove_le(A, b6, add(divc(add(v, K(2)), 4), divc(v, 2)), K(4)));      /* v = 6: 2 + 3 */
}

static void test_prove_soundness_traps(void **state) {
  (void)state;
  sym *v = ax(V), *h = ax(H);
  sym_facts *none = sym_facts_create(A);
  /* floor((v - 3)/4) is -1 at v = 1 */
  assert_false(nonneg(none, divc(sub(v, K(3)), 4)));
  assert_true(nonneg(none, add(divc(sub(v, K(3)), 4), K(1))));
  /* floor((h - v)/4) has no lower bound */
  assert_false(nonneg(none, add(divc(sub(h, v), 4), K(100))));
  /* (h - v) mod 4 is at most 3 */
  assert_true(nonneg(none, sub(K(3), modc(sub(h, v), 4))));
  assert_false(nonneg(none, sub(K(2), modc(sub(h, v), 4))));
  /* 2*(v/2) <= v, but v - 2*(v/2) <= 0 is false for odd v */
  assert_false(nonneg(none, sub(scale(divc(v, 2), 2), v)));
  /* NULL facts and facts over index variables are ignored */
  sym_facts *f = sym_facts_create(A);
  sym_facts_assume_nonneg(f, NULL);
  sym_facts_assume_zero(f, NULL);
  sym_facts_assume_nonneg(f, sub(ix(J), K(1)));
  sym_facts_assume_zero(f, sub(ix(J), v));
  sym_facts_assume_nonneg(NULL, v);
  assert_false(nonneg(f, sub(v, K(2))));
  /* contradictory facts (no binding satisfies them) make anything true */
  sym_facts *bad = sym_facts_create(A);
  sym_facts_assume_zero(bad, add(scale(v, 2), K(1)));
  assert_true(nonneg(bad, sub(v, K(2))));
}

/* ---- bounds ------------------------------------------------------------ */

static void test_bounds_conv(void **state) {
  (void)state;
  sym *d = ax(D);
  sym *lo[N_IDX] = {0}, *hi[N_IDX] = {0}, *blo, *bhi;
  lo[Z] = K(0), hi[Z] = sub(d, K(3));
  lo[DZ] = K(0), hi[DZ] = K(2);
  sym *x = add(ix(Z), ix(DZ));
  sym_facts *none = sym_facts_create(A);
  assert_true(sym_bounds(A, none, x, N_IDX, lo, hi, &blo, &bhi));
  assert_true(sym_equal(blo, K(0)));
  assert_true(sym_equal(bhi, sub(d, K(1))));
  assert_true(nonneg(none, sub(sub(d, K(1)), bhi)));
  assert_true(nonneg(none, blo));
  sym_facts *f = sym_facts_create(A);
  sym_facts_assume_nonneg(f, sub(sub(d, K(2)), K(1)));
  assert_true(sym_prove_lt(A, f, bhi, d));
  assert_true(sym_prove_le(A, f, K(0), blo));
  assert_true(nonneg(f, sub(d, K(3))));
  /* an unknown index range fails */
  assert_false(sym_bounds(A, none, add(x, ix(Y)), N_IDX, lo, hi, &blo, &bhi));
  assert_false(sym_bounds(A, none, x, DZ, lo, hi, &blo, &bhi));
  assert_false(sym_bounds(A, none, mul(ix(Z), ix(DZ)), N_IDX, lo, hi, &blo, &bhi));
  assert_false(sym_bounds(A, none, NULL, N_IDX, lo, hi, &blo, &bhi));
}

static void test_bounds_sam(void **state) {
  (void)state;
  sym *h = ax(H);
  sym *lo[N_IDX] = {0}, *hi[N_IDX] = {0}, *blo, *bhi;
  sym_facts *none = sym_facts_create(A);
  lo[Y] = lo[KY] = K(0);
  hi[Y] = hi[KY] = sub(h, K(1));
  sym *x = add(sub(ix(Y), ix(KY)), sub(h, K(1)));
  assert_true(sym_bounds(A, none, x, N_IDX, lo, hi, &blo, &bhi));
  assert_true(sym_equal(blo, K(0)));
  assert_true(sym_equal(bhi, sub(scale(h, 2), K(2))));
  sym *size = sub(scale(h, 2), K(1)); /* rel_pos_h_size */
  assert_true(sym_prove_le(A, none, K(0), blo));
  assert_true(sym_prove_lt(A, none, bhi, size));
  assert_false(sym_prove_lt(A, none, bhi, sub(size, K(1))));
  /* axis coefficients on index variables */
  assert_true(sym_bounds(A, none, sub(mul(h, ix(Y)), ix(KY)), N_IDX, lo, hi, &blo, &bhi));
  assert_true(sym_equal(blo, sub(K(1), h)));
  assert_true(sym_equal(bhi, sub(mul(h, h), h)));
  /* the sign of (1 - h)*y is known: h >= 1 */
  assert_true(sym_bounds(A, none, mul(sub(K(1), h), ix(Y)), N_IDX, lo, hi, &blo, &bhi));
  assert_true(sym_equal(bhi, K(0)));
  /* the sign of (h - 2)*y is not */
  assert_false(sym_bounds(A, none, mul(sub(h, K(2)), ix(Y)), N_IDX, lo, hi, &blo, &bhi));

  lo[J] = K(0), hi[J] = K(2303);
  sym *j = ix(J);
  assert_true(sym_bounds(A, none, modc(divc(j, 64), 12), N_IDX, lo, hi, &blo, &bhi));
  assert_true(sym_prove_le(A, none, K(0), blo));
  assert_true(sym_prove_le(A, none, bhi, K(11)));
  assert_true(sym_bounds(A, none, divc(j, 768), N_IDX, lo, hi, &blo, &bhi));
  assert_true(sym_equal(blo, K(0)));
  assert_true(sym_equal(bhi, K(2)));
  assert_true(sym_bounds(A, none, modc(j, 64), N_IDX, lo, hi, &blo, &bhi));
  assert_true(sym_equal(bhi, K(63)));
  lo[T] = lo[NN] = lo[CC] = K(0);
  hi[T] = K(2), hi[NN] = K(11), hi[CC] = K(63);
  sym *flat = add(add(scale(ix(T), 768), scale(ix(NN), 64)), ix(CC));
  assert_true(sym_bounds(A, none, flat, N_IDX, lo, hi, &blo, &bhi));
  assert_true(sym_equal(blo, K(0)));
  assert_true(sym_equal(bhi, K(2303)));
  /* mod keeps the argument's range when it is proven within [0, c-1] */
  assert_true(sym_bounds(A, none, modc(ix(CC), 64), N_IDX, lo, hi, &blo, &bhi));
  assert_true(sym_equal(bhi, K(63)));
  assert_true(sym_bounds(A, none, modc(add(ix(NN), K(1)), 64), N_IDX, lo, hi, &blo, &bhi));
  assert_true(sym_equal(blo, K(1)));
  assert_true(sym_equal(bhi, K(12)));
  hi[Y] = sub(h, K(1));
  assert_true(sym_bounds(A, none, modc(ix(Y), 4), N_IDX, lo, hi, &blo, &bhi));
  assert_true(sym_equal(bhi, K(3)));
}

static void test_bounds_cvit(void **state) {
  (void)state;
  sym *s = ax(S), *g = divc(s, 4);
  sym *lo[N_IDX] = {0}, *hi[N_IDX] = {0}, *blo, *bhi;
  lo[E] = lo[GY] = lo[GX] = lo[KY] = K(0);
  hi[E] = K(127), hi[GY] = hi[GX] = sub(g, K(1)), hi[KY] = K(3);
  sym_facts *none = sym_facts_create(A), *f = sym_facts_create(A);
  sym_facts_assume_zero(f, modc(s, 4));
  sym *x = add(add(mul(ix(E), mul(g, g)), mul(ix(GY), g)), ix(GX));
  sym *limit = sub(scale(mul(g, g), 128), K(1));
  for (int k = 0; k < 2; k++) {
    sym_facts *ff = k ? f : none;
    assert_true(sym_bounds(A, ff, x, N_IDX, lo, hi, &blo, &bhi));
    assert_true(sym_equal(blo, K(0)));
    assert_true(sym_prove_le(A, ff, bhi, limit));
    assert_true(sym_equal(bhi, limit));
    sym *row = add(scale(ix(GY), 4), ix(KY));
    assert_true(sym_bounds(A, ff, row, N_IDX, lo, hi, &blo, &bhi));
    assert_true(sym_prove_le(A, ff, bhi, sub(s, K(1))));
    assert_true(sym_prove_lt(A, ff, bhi, s));
    assert_true(sym_prove_le(A, ff, K(0), blo));
  }
  /* with 4 | image_size the row index reaches image_size - 1 exactly */
  sym *row = add(scale(ix(GY), 4), ix(KY));
  assert_true(sym_bounds(A, f, row, N_IDX, lo, hi, &blo, &bhi));
  assert_true(sym_prove_eq(A, f, bhi, sub(s, K(1))));
  assert_false(sym_prove_eq(A, none, bhi, sub(s, K(1))));
}

/* ---- random checks ----------------------------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15u;
static int64_t rnd(int64_t n) { /* [0, n) */
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (int64_t)(rng % (uint64_t)n);
}

static int64_t fdiv(int64_t x, int64_t c) { return x / c - (x % c != 0 && x < 0); }
static int64_t fmod_(int64_t x, int64_t c) { return x - c * fdiv(x, c); }

/* A random expression as a sym and, in parallel, its value at axes/idx. */
static sym *random_expr(int depth, const int64_t *axes, const int64_t *idx, int64_t *val) {
  int64_t x, y;
  int op = depth <= 0 ? (int)rnd(3) : (int)rnd(9);
  switch (op) {
  case 0: *val = rnd(11) - 5; return K(*val);
  case 1: { int id = (int)rnd(3); *val = axes[id]; return ax(id); }
  case 2: { int id = (int)rnd(3); *val = idx[id]; return ix(id); }
  case 3: case 4: {
    sym *a = random_expr(depth - 1, axes, idx, &x), *b = random_expr(depth - 1, axes, idx, &y);
    *val = x + y;
    return add(a, b);
  }
  case 5: {
    sym *a = random_expr(depth - 1, axes, idx, &x), *b = random_expr(depth - 1, axes, idx, &y);
    *val = x - y;
    return sub(a, b);
  }
  case 6: {
    sym *a = random_expr(depth - 1, axes, idx, &x), *b = random_expr(depth - 2, axes, idx, &y);
    *val = x * y;
    return mul(a, b);
  }
  case 7: {
    int64_t c = 1 + rnd(8);
    sym *a = random_expr(depth - 1, axes, idx, &x);
    *val = fdiv(x, c);
    return divc(a, c);
  }
  default: {
    int64_t c = 1 + rnd(8);
    sym *a = random_expr(depth - 1, axes, idx, &x);
    *val = fmod_(x, c);
    return modc(a, c);
  }
  }
}

/* Rebuilding the same random expression with other values must give the
 * same sym; evaluating it must give the directly computed value. */
static void test_random_normalization(void **state) {
  (void)state;
  for (int iter = 0; iter < 3000; iter++) {
    uint64_t seed = rng;
    int64_t axes[3], idx[3], want, want2, got;
    for (int i = 0; i < 3; i++) axes[i] = 1 + rnd(20), idx[i] = rnd(41) - 20;
    sym *x = random_expr(4, axes, idx, &want);
    assert_non_null(x);
    assert_true(sym_eval(x, axes, idx, &got));
    if (got != want) fail_msg("eval %s = %lld, want %lld", str(x), (long long)got, (long long)want);
    uint64_t after = rng;
    rng = seed;
    int64_t axes2[3], idx2[3];
    for (int i = 0; i < 3; i++) axes2[i] = 1 + rnd(20), idx2[i] = rnd(41) - 20;
    sym *x2 = random_expr(4, axes2, idx2, &want2);
    assert_true(sym_equal(x, x2));
    assert_string_equal(str(x), str(x2));
    rng = after;
  }
}

/* Whatever the prover proves must hold at sampled axis values. */
static void test_random_prover_soundness(void **state) {
  (void)state;
  int proven = 0;
  int64_t idx[3] = {0};
  for (int iter = 0; iter < 1500; iter++) {
    int64_t axes[3] = {1, 1, 1}, dummy;
    sym *p = random_expr(3, axes, idx, &dummy);
    if (sym_has_index(p)) continue;
    sym_facts *f = sym_facts_create(A);
    bool mod4 = rnd(2);
    if (mod4) sym_facts_assume_zero(f, modc(ax(0), 4));
    if (!nonneg(f, p)) continue;
    proven++;
    for (int64_t a0 = 1; a0 <= 24; a0++)
      for (int64_t a1 = 1; a1 <= 12; a1++)
        for (int64_t a2 = 1; a2 <= 6; a2++) {
          int64_t vals[3] = {a0, a1, a2}, v;
          if (mod4 && a0 % 4) continue;
          assert_true(sym_eval(p, vals, NULL, &v));
          if (v < 0) fail_msg("proved %s >= 0, but it is %lld at (%lld, %lld, %lld)", str(p),
                              (long long)v, (long long)a0, (long long)a1, (long long)a2);
        }
  }
  assert_true(proven > 50);
}

/* The C printer against the host C compiler: random expressions, each
 * printed by sym_print_c and placed as the operand of every C operator
 * (`K % X`, `K / X`, `K - X`, `K * X`, `-X`), compiled and run; every value
 * must be the one computed from the sym's value with C's own operators.
 * Index variables are >= 0, as sym_print_c assumes of generated loops. */
static void test_random_print_c_compiled(void **state) {
  (void)state;
  const char *cc = getenv("CC");
  if (!cc || !*cc) cc = "cc";
  char dir[] = "/tmp/kbc_symc_XXXXXX";
  if (!mkdtemp(dir)) skip();
  char src[64], exe[64], cmd[512];
  snprintf(src, sizeof src, "%s/t.c", dir);
  snprintf(exe, sizeof exe, "%s/t", dir);
  FILE *f = fopen(src, "w");
  assert_non_null(f);
  fputs("#include <stdio.h>\n"
        "static long long kbc_floordiv(long long a, long long b) {\n"
        "  long long q = a / b;\n"
        "  return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;\n"
        "}\n"
        "static long long kbc_floormod(long long a, long long b) {\n"
        "  long long r = a % b;\n"
        "  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n"
        "}\n"
        "int main(void) {\n",
        f);
  enum { N = 600, CTX = 6 };
  static int64_t want[N][CTX];
  static bool has[N][CTX];
  const int64_t k = 1000003;
  for (int i = 0; i < N; i++) {
    int64_t axes[3], idx[3], v;
    for (int d = 0; d < 3; d++) axes[d] = 1 + rnd(20), idx[d] = rnd(41);
    sym *x = random_expr(2 + (int)rnd(4), axes, idx, &v);
    assert_non_null(x);
    const char *c = cstr(x);
    fprintf(f, "  { const long long h = %lld, w = %lld, image_size = %lld, y = %lld, ky = %lld, j = %lld;\n",
            (long long)axes[0], (long long)axes[1], (long long)axes[2], (long long)idx[0], (long long)idx[1],
            (long long)idx[2]);
    for (int o = 0; o < CTX; o++) {
      has[i][o] = o < 4 || v != 0;
      if (!has[i][o]) continue;
      const char *e;
      switch (o) {
      case 0: want[i][o] = v, e = c; break;
      case 1: want[i][o] = k - v, e = kbc_arena_printf(A, "%lldLL - %s", (long long)k, c); break;
      case 2: want[i][o] = k * v, e = kbc_arena_printf(A, "%lldLL * %s", (long long)k, c); break;
      case 3: want[i][o] = -v, e = kbc_arena_printf(A, "-%s", c); break;
      case 4: want[i][o] = k / v, e = kbc_arena_printf(A, "%lldLL / %s", (long long)k, c); break;
      default: want[i][o] = k % v, e = kbc_arena_printf(A, "%lldLL %% %s", (long long)k, c); break;
      }
      fprintf(f, "    printf(\"%%d %%d %%lld\\n\", %d, %d, (long long)(%s));\n", i, o, e);
    }
    fputs("  }\n", f);
  }
  fputs("  return 0;\n}\n", f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "%s -O0 -w -o %s %s 2>/dev/null", cc, exe, src);
  if (system(cmd) != 0) {
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    (void)!system(cmd);
    skip(); /* no host C compiler */
  }
  FILE *r = popen(exe, "r");
  assert_non_null(r);
  int i, o, seen = 0;
  long long got;
  while (fscanf(r, "%d %d %lld", &i, &o, &got) == 3) {
    assert_true(i >= 0 && i < N && o >= 0 && o < CTX && has[i][o]);
    if (got != want[i][o]) fail_msg("expression %d in context %d: C gives %lld, want %lld", i, o, got,
                                    (long long)want[i][o]);
    seen++;
  }
  assert_int_equal(pclose(r), 0);
  int expected = 0;
  for (i = 0; i < N; i++)
    for (o = 0; o < CTX; o++) expected += has[i][o];
  assert_int_equal(seen, expected);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  (void)!system(cmd);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_print_basic, setup, teardown),
      cmocka_unit_test_setup_teardown(test_normal_form, setup, teardown),
      cmocka_unit_test_setup_teardown(test_order_determinism, setup, teardown),
      cmocka_unit_test_setup_teardown(test_div_mod_rules, setup, teardown),
      cmocka_unit_test_setup_teardown(test_overflow, setup, teardown),
      cmocka_unit_test_setup_teardown(test_eval, setup, teardown),
      cmocka_unit_test_setup_teardown(test_inspection, setup, teardown),
      cmocka_unit_test_setup_teardown(test_split_affine, setup, teardown),
      cmocka_unit_test_setup_teardown(test_subst, setup, teardown),
      cmocka_unit_test_setup_teardown(test_print_c, setup, teardown),
      cmocka_unit_test_setup_teardown(test_prove_basic, setup, teardown),
      cmocka_unit_test_setup_teardown(test_prove_div_mod, setup, teardown),
      cmocka_unit_test_setup_teardown(test_prove_soundness_traps, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bounds_conv, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bounds_sam, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bounds_cvit, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bound, setup, teardown),
      cmocka_unit_test_setup_teardown(test_random_normalization, setup, teardown),
      cmocka_unit_test_setup_teardown(test_random_prover_soundness, setup, teardown),
      cmocka_unit_test_setup_teardown(test_random_print_c_compiled, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
