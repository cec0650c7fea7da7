/* test_interp.c — the reference interpreter (interp/interp.c) on IR programs
 * built by hand (ir_builder.h), checked against naive C loops (axis binding:
 * test_bind.c).
 *
 * Before: nothing.  After: each test builds a program in its own arena,
 * binds it, runs it and compares every output element (or the diagnostics). */
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

/* ---- tests: the interpreter ----------------------------------------------- */

static void test_matmul_bias(void **state) {
  (void)state;
  sym *M = var("M"), *N = var("N"), *Kd = var("K");
  ir_tensor *a = tensor("a", IR_ROLE_INPUT, 2, M, Kd), *b = tensor("b", IR_ROLE_INPUT, 2, Kd, N);
  ir_tensor *bias = tensor("bias", IR_ROLE_INPUT, 1, N), *out = tensor("out", IR_ROLE_OUTPUT, 2, M, N);
  ir_stmt *s = stmt(out, 0, "out[i, j] = bias[j] + sum(k: a[i, k] * b[k, j])");
  sym *i = idx(s, "i", IR_IDX_FREE, M), *j = idx(s, "j", IR_IDX_FREE, N), *k = idx(s, "k", IR_IDX_REDUCE, Kd);
  finish(s, bin(IR_OP_ADD, ld(bias, j), red(IR_RED_SUM, bin(IR_OP_MUL, ld(a, i, k), ld(b, k, j)), 1, k)), i, j);
  int64_t vars[] = {7, 5, 9};
  assert_true(run(vars));
  for (int y = 0; y < 7; y++)
    for (int x = 0; x < 5; x++) {
      double want = data[bias->id][x];
      for (int z = 0; z < 9; z++) want += data[a->id][y * 9 + z] * data[b->id][z * 5 + x];
      close_to(data[out->id][y * 5 + x], want);
    }
  release();
}

static void test_softmax_middle_axis(void **state) {
  (void)state;
  sym *n0 = var("n0"), *n1 = var("n1"), *n2 = var("n2");
  ir_tensor *x = tensor("x", IR_ROLE_INPUT, 3, n0, n1, n2);
  ir_tensor *mx = tensor("mx", IR_ROLE_TEMP, 2, n0, n2), *ex = tensor("ex", IR_ROLE_TEMP, 3, n0, n1, n2);
  ir_tensor *out = tensor("out", IR_ROLE_OUTPUT, 3, n0, n1, n2);
  ir_stmt *s = stmt(mx, 0, "mx");
  sym *a = idx(s, "a", IR_IDX_FREE, n0), *c = idx(s, "c", IR_IDX_FREE, n2), *b = idx(s, "b", IR_IDX_REDUCE, n1);
  finish(s, red(IR_RED_MAX, ld(x, a, b, c), 1, b), a, c);
  s = stmt(ex, 0, "ex");
  a = idx(s, "a", IR_IDX_FREE, n0), b = idx(s, "b", IR_IDX_FREE, n1), c = idx(s, "c", IR_IDX_FREE, n2);
  finish(s, un(IR_OP_EXP, bin(IR_OP_SUB, ld(x, a, b, c), ld(mx, a, c))), a, b, c);
  s = stmt(out, 0, "out");
  a = idx(s, "a", IR_IDX_FREE, n0), b = idx(s, "b", IR_IDX_FREE, n1), c = idx(s, "c", IR_IDX_FREE, n2);
  sym *b2 = idx(s, "b2", IR_IDX_REDUCE, n1);
  finish(s, bin(IR_OP_DIV, ld(ex, a, b, c), red(IR_RED_SUM, ld(ex, a, b2, c), 1, b2)), a, b, c);
  int64_t vars[] = {3, 6, 4};
  assert_true(run(vars));
  const double *X = data[x->id];
  for (int p = 0; p < 3; p++)
    for (int r = 0; r < 4; r++) {
      double m = -INFINITY, sum = 0;
      for (int q = 0; q < 6; q++) m = fmax(m, X[(p * 6 + q) * 4 + r]);
      for (int q = 0; q < 6; q++) sum += exp(X[(p * 6 + q) * 4 + r] - m);
      close_to(data[mx->id][p * 4 + r], m);
      for (int q = 0; q < 6; q++) close_to(data[out->id][(p * 6 + q) * 4 + r], exp(X[(p * 6 + q) * 4 + r] - m) / sum);
    }
  release();
}

static void test_strided_conv(void **state) {
  (void)state;
  sym *nb = var("n"), *ci = var("ci"), *h = var("h"), *co = var("co");
  sym *ks = derived("ks", K(3), IR_AXIS_CONST);
  sym *oh = derived("oh", add(sym_div(A, sub(h, ks), 2), K(1)), IR_AXIS_DERIVED);
  ir_tensor *x = tensor("x", IR_ROLE_INPUT, 4, nb, ci, h, h), *w = tensor("w", IR_ROLE_INPUT, 4, co, ci, ks, ks);
  ir_tensor *out = tensor("out", IR_ROLE_OUTPUT, 4, nb, co, oh, oh);
  ir_stmt *s = stmt(out, 0, "conv");
  sym *n = idx(s, "n", IR_IDX_FREE, nb), *c = idx(s, "c", IR_IDX_FREE, co);
  sym *oy = idx(s, "oy", IR_IDX_FREE, oh), *ox = idx(s, "ox", IR_IDX_FREE, oh);
  sym *e = idx(s, "e", IR_IDX_REDUCE, ci), *ky = idx(s, "ky", IR_IDX_REDUCE, ks), *kx = idx(s, "kx", IR_IDX_REDUCE, ks);
  ir_expr *xl = ld(x, n, e, add(mul(K(2), oy), ky), add(mul(K(2), ox), kx));
  finish(s, red(IR_RED_SUM, bin(IR_OP_MUL, xl, ld(w, c, e, ky, kx)), 3, e, ky, kx), n, c, oy, ox);
  int64_t vars[] = {2, 3, 10, 4}; /* oh = (10-3)/2 + 1 = 4 */
  assert_true(run(vars));
  assert_int_equal(B.shape[out->id][2], 4);
  for (int q = 0; q < 2; q++)
    for (int o = 0; o < 4; o++)
      for (int y = 0; y < 4; y++)
        for (int z = 0; z < 4; z++) {
          double want = 0;
          for (int i = 0; i < 3; i++)
            for (int u = 0; u < 3; u++)
              for (int v = 0; v < 3; v++)
                want += data[x->id][((q * 3 + i) * 10 + 2 * y + u) * 10 + 2 * z + v] *
                        data[w->id][((o * 3 + i) * 3 + u) * 3 + v];
          close_to(data[out->id][((q * 4 + o) * 4 + y) * 4 + z], want);
        }
  release();
}

static void test_gather_and_scatter(void **state) {
  (void)state;
  sym *n = var("n"), *cc = var("c");
  sym *r = derived("r", sub(mul(K(2), n), K(1)), IR_AXIS_DERIVED);
  ir_tensor *q = tensor("q", IR_ROLE_INPUT, 2, n, cc), *t = tensor("t", IR_ROLE_INPUT, 2, r, cc);
  ir_tensor *gr = tensor("gr", IR_ROLE_INPUT, 2, n, n);
  ir_tensor *out = tensor("out", IR_ROLE_OUTPUT, 2, n, n), *g = tensor("g", IR_ROLE_OUTPUT, 2, r, cc);
  ir_stmt *s = stmt(out, 0, "out[i, j] = sum(c: q[i,c] * t[i - j + n - 1, c])");
  sym *i = idx(s, "i", IR_IDX_FREE, n), *j = idx(s, "j", IR_IDX_FREE, n), *c = idx(s, "c", IR_IDX_REDUCE, cc);
  sym *rel = add(sub(i, j), sub(n, K(1)));
  finish(s, red(IR_RED_SUM, bin(IR_OP_MUL, ld(q, i, c), ld(t, rel, c)), 1, c), i, j);
  s = stmt(g, 1, "g[i - j + n - 1, c] += q[i,c] * gr[i,j]");
  i = idx(s, "i", IR_IDX_SCATTER, n), j = idx(s, "j", IR_IDX_SCATTER, n), c = idx(s, "c", IR_IDX_SCATTER, cc);
  finish(s, bin(IR_OP_MUL, ld(q, i, c), ld(gr, i, j)), add(sub(i, j), sub(n, K(1))), c);
  enum { NN = 6, CC = 5, RR = 2 * NN - 1 };
  int64_t vars[] = {NN, CC};
  assert_true(run(vars));
  double G[RR * CC] = {0};
  for (int y = 0; y < NN; y++)
    for (int x = 0; x < NN; x++) {
      double want = 0;
      for (int z = 0; z < CC; z++) {
        want += data[q->id][y * CC + z] * data[t->id][(y - x + NN - 1) * CC + z];
        G[(y - x + NN - 1) * CC + z] += data[q->id][y * CC + z] * data[gr->id][y * NN + x];
      }
      close_to(data[out->id][y * NN + x], want);
    }
  for (int k = 0; k < RR * CC; k++) close_to(data[g->id][k], G[k]);
  release();
}

static void test_nested_reductions(void **state) {
  (void)state;
  sym *n = var("n"), *m = var("m");
  ir_tensor *x = tensor("x", IR_ROLE_INPUT, 2, n, m), *y = tensor("y", IR_ROLE_INPUT, 2, m, n);
  ir_tensor *o1 = tensor("o1", IR_ROLE_OUTPUT, 1, n), *o2 = tensor("o2", IR_ROLE_OUTPUT, 1, n);
  /* o1[i] = sum(j: x[i,j] * max(k: y[j,k] * x[i,j])) + min(k2: y[0, k2]) */
  ir_stmt *s = stmt(o1, 0, "o1");
  sym *i = idx(s, "i", IR_IDX_FREE, n), *j = idx(s, "j", IR_IDX_REDUCE, m);
  sym *k = idx(s, "k", IR_IDX_REDUCE, n), *k2 = idx(s, "k2", IR_IDX_REDUCE, n);
  ir_expr *inner = red(IR_RED_MAX, bin(IR_OP_MUL, ld(y, j, k), ld(x, i, j)), 1, k);
  ir_expr *outer = red(IR_RED_SUM, bin(IR_OP_MUL, ld(x, i, j), inner), 1, j);
  finish(s, bin(IR_OP_ADD, outer, red(IR_RED_MIN, ld(y, K(0), k2), 1, k2)), i);
  /* o2[i] = sum(j: x[i,j]) / sum(j2, k: x[i,j2] * y[j2,k] * (k + 1)) */
  s = stmt(o2, 0, "o2");
  i = idx(s, "i", IR_IDX_FREE, n), j = idx(s, "j", IR_IDX_REDUCE, m);
  sym *j2 = idx(s, "j2", IR_IDX_REDUCE, m);
  k = idx(s, "k", IR_IDX_REDUCE, n);
  ir_expr *den = red(IR_RED_SUM, bin(IR_OP_MUL, bin(IR_OP_MUL, ld(x, i, j2), ld(y, j2, k)), ival(add(k, K(1)))), 2, j2, k);
  finish(s, bin(IR_OP_DIV, red(IR_RED_SUM, ld(x, i, j), 1, j), den), i);
  int64_t vars[] = {4, 3};
  assert_true(run(vars));
  const double *X = data[x->id], *Y = data[y->id];
  double mn = INFINITY;
  for (int c = 0; c < 4; c++) mn = fmin(mn, Y[c]);
  for (int a = 0; a < 4; a++) {
    double sum = 0, num0 = 0, d = 0;
    for (int b = 0; b < 3; b++) {
      double mx = -INFINITY;
      for (int c = 0; c < 4; c++) mx = fmax(mx, Y[b * 4 + c] * X[a * 3 + b]);
      sum += X[a * 3 + b] * mx;
      num0 += X[a * 3 + b];
      for (int c = 0; c < 4; c++) d += X[a * 3 + b] * Y[b * 4 + c] * (c + 1);
    }
    close_to(data[o1->id][a], sum + mn);
    close_to(data[o2->id][a], num0 / d);
  }
  release();
}

static void test_where_padded(void **state) {
  (void)state;
  sym *n = var("n");
  ir_tensor *x = tensor("x", IR_ROLE_INPUT, 1, n), *out = tensor("out", IR_ROLE_OUTPUT, 1, n);
  /* out[i] = where(i > 0, x[i - 1], -1) + x?[i + 1] + where(i < n - 1, 0, x?[i + 5]) */
  ir_stmt *s = stmt(out, 0, "out");
  sym *i = idx(s, "i", IR_IDX_FREE, n);
  ir_expr *cond = bin(IR_OP_GT, ival(i), ival(K(0)));
  ir_expr *w1 = ir_where(A, cond, ld(x, sub(i, K(1))), num(-1), L0);
  ir_expr *cond2 = bin(IR_OP_LT, ival(i), ival(sub(n, K(1))));
  ir_expr *w2 = ir_where(A, cond2, num(0), ldp(x, add(i, K(5))), L0);
  finish(s, bin(IR_OP_ADD, bin(IR_OP_ADD, w1, ldp(x, add(i, K(1)))), w2), i);
  int64_t vars[] = {8};
  assert_true(run(vars));
  const double *X = data[x->id];
  for (int k = 0; k < 8; k++) close_to(data[out->id][k], (k > 0 ? X[k - 1] : -1) + (k < 7 ? X[k + 1] : 0));
  release();
}

static void test_min_max_prod(void **state) {
  (void)state;
  sym *n = var("n"), *m = var("m");
  ir_tensor *x = tensor("x", IR_ROLE_INPUT, 2, n, m);
  ir_tensor *o = tensor("o", IR_ROLE_OUTPUT, 2, n, K(3));
  ir_stmt *s = stmt(o, 0, "o");
  sym *i = idx(s, "i", IR_IDX_FREE, n), *t = idx(s, "t", IR_IDX_FREE, K(3));
  sym *j = idx(s, "j", IR_IDX_REDUCE, m), *j2 = idx(s, "j2", IR_IDX_REDUCE, m), *j3 = idx(s, "j3", IR_IDX_REDUCE, m);
  ir_expr *e = ir_where(A, bin(IR_OP_EQ, ival(t), ival(K(0))), red(IR_RED_MIN, ld(x, i, j), 1, j),
                        ir_where(A, bin(IR_OP_EQ, ival(t), ival(K(1))), red(IR_RED_MAX, ld(x, i, j2), 1, j2),
                                 red(IR_RED_PROD, bin(IR_OP_ADD, ld(x, i, j3), num(1.5)), 1, j3), L0),
                        L0);
  finish(s, e, i, t);
  int64_t vars[] = {5, 7};
  assert_true(run(vars));
  for (int a = 0; a < 5; a++) {
    double mn = INFINITY, mx = -INFINITY, pr = 1;
    for (int b = 0; b < 7; b++) {
      double v = data[x->id][a * 7 + b];
      mn = fmin(mn, v), mx = fmax(mx, v), pr *= v + 1.5;
    }
    close_to(data[o->id][a * 3 + 0], mn);
    close_to(data[o->id][a * 3 + 1], mx);
    close_to(data[o->id][a * 3 + 2], pr);
  }
  release();
}

/* Contractions that stride badly along the reduction index run in row
 * mode (see interp_impl.h); every variant must still be exact. */
static void test_row_mode_variants(void **state) {
  (void)state;
  sym *n = var("n"), *n2 = derived("n2", mul(K(2), n), IR_AXIS_DERIVED);
  ir_tensor *x = tensor("x", IR_ROLE_INPUT, 2, n, n2), *y = tensor("y", IR_ROLE_INPUT, 2, n, n);
  ir_tensor *col = tensor("col", IR_ROLE_OUTPUT, 1, n2), *o1 = tensor("o1", IR_ROLE_OUTPUT, 2, n, n);
  ir_tensor *o2 = tensor("o2", IR_ROLE_OUTPUT, 2, n, n), *o3 = tensor("o3", IR_ROLE_OUTPUT, 2, n, n);
  ir_stmt *s = stmt(col, 0, "col[j] = sum(i: x[i, j])");
  sym *j = idx(s, "j", IR_IDX_FREE, n2), *i = idx(s, "i", IR_IDX_REDUCE, n);
  finish(s, red(IR_RED_SUM, ld(x, i, j), 1, i), j);
  s = stmt(o1, 0, "o1[i, j] = sum(k: y[k, i] * x[k, j]) / 2");
  i = idx(s, "i", IR_IDX_FREE, n), j = idx(s, "j", IR_IDX_FREE, n);
  sym *k = idx(s, "k", IR_IDX_REDUCE, n);
  finish(s, bin(IR_OP_DIV, red(IR_RED_SUM, bin(IR_OP_MUL, ld(y, k, i), ld(x, k, j)), 1, k), num(2)), i, j);
  s = stmt(o2, 0, "o2[i, j] = y[i, j] - sum(k: x[k, j] * y[k, i])");
  i = idx(s, "i", IR_IDX_FREE, n), j = idx(s, "j", IR_IDX_FREE, n), k = idx(s, "k", IR_IDX_REDUCE, n);
  finish(s, bin(IR_OP_SUB, ld(y, i, j), red(IR_RED_SUM, bin(IR_OP_MUL, ld(x, k, j), ld(y, k, i)), 1, k)), i, j);
  s = stmt(o3, 0, "o3[i, j] = sum(k: x[k, 2*j] * y[k, i])");
  i = idx(s, "i", IR_IDX_FREE, n), j = idx(s, "j", IR_IDX_FREE, n), k = idx(s, "k", IR_IDX_REDUCE, n);
  finish(s, red(IR_RED_SUM, bin(IR_OP_MUL, ld(x, k, mul(K(2), j)), ld(y, k, i)), 1, k), i, j);
  enum { NN = 5 };
  int64_t vars[] = {NN};
  assert_true(run(vars));
  const double *X = data[x->id], *Y = data[y->id];
  for (int c = 0; c < 2 * NN; c++) {
    double want = 0;
    for (int r = 0; r < NN; r++) want += X[r * 2 * NN + c];
    close_to(data[col->id][c], want);
  }
  for (int a = 0; a < NN; a++)
    for (int b = 0; b < NN; b++) {
      double w1 = 0, w2 = 0, w3 = 0;
      for (int c = 0; c < NN; c++) {
        w1 += Y[c * NN + a] * X[c * 2 * NN + b];
        w2 += X[c * 2 * NN + b] * Y[c * NN + a];
        w3 += X[c * 2 * NN + 2 * b] * Y[c * NN + a];
      }
      close_to(data[o1->id][a * NN + b], w1 / 2);
      close_to(data[o2->id][a * NN + b], Y[a * NN + b] - w2);
      close_to(data[o3->id][a * NN + b], w3);
    }
  release();
}

/* Loads and targets with floor-div/mod indices (cached per point, proven
 * in bounds by sym_bounds): inside contractions (row mode and dot), with
 * the reduction index inside the division, and as a += target. */
static void test_non_affine_indices(void **state) {
  (void)state;
  sym *nb = var("nb"), *ne = var("ne");
  sym *nj = derived("nj", K(12), IR_AXIS_CONST);
  ir_tensor *t = tensor("t", IR_ROLE_INPUT, 3, nb, K(3), K(4)), *h = tensor("h", IR_ROLE_INPUT, 2, nb, ne);
  ir_tensor *gw = tensor("gw", IR_ROLE_OUTPUT, 2, nj, ne), *gb = tensor("gb", IR_ROLE_OUTPUT, 1, nj);
  ir_tensor *sb = tensor("sb", IR_ROLE_OUTPUT, 1, nb), *g = tensor("g", IR_ROLE_OUTPUT, 2, K(3), K(4));
  ir_stmt *s = stmt(gw, 0, "gw[j, e] = sum(b: t[b, j/4, j % 4] * h[b, e])");
  sym *j = idx(s, "j", IR_IDX_FREE, nj), *e = idx(s, "e", IR_IDX_FREE, ne), *b = idx(s, "b", IR_IDX_REDUCE, nb);
  finish(s, red(IR_RED_SUM, bin(IR_OP_MUL, ld(t, b, sym_div(A, j, 4), sym_mod(A, j, 4)), ld(h, b, e)), 1, b), j, e);
  s = stmt(gb, 0, "gb[j] = sum(b: t[b, j/4, j % 4])");
  j = idx(s, "j", IR_IDX_FREE, nj), b = idx(s, "b", IR_IDX_REDUCE, nb);
  finish(s, red(IR_RED_SUM, ld(t, b, sym_div(A, j, 4), sym_mod(A, j, 4)), 1, b), j);
  s = stmt(sb, 0, "sb[b] = sum(k: t[b, k/4, k % 4] * (k % 5))");
  b = idx(s, "b", IR_IDX_FREE, nb);
  sym *k = idx(s, "k", IR_IDX_REDUCE, nj);
  ir_expr *body = bin(IR_OP_MUL, ld(t, b, sym_div(A, k, 4), sym_mod(A, k, 4)), ival(sym_mod(A, k, 5)));
  finish(s, red(IR_RED_SUM, body, 1, k), b);
  s = stmt(g, 1, "g[j/4, j % 4] += h[b, j % 2] * j");
  j = idx(s, "j", IR_IDX_SCATTER, nj), b = idx(s, "b", IR_IDX_SCATTER, nb);
  finish(s, bin(IR_OP_MUL, ld(h, b, sym_mod(A, j, 2)), ival(j)), sym_div(A, j, 4), sym_mod(A, j, 4));
  enum { NB = 5, NE = 7 };
  int64_t vars[] = {NB, NE};
  assert_true(run(vars));
  const double *T = data[t->id], *H = data[h->id];
  for (int y = 0; y < 12; y++) {
    double wb = 0, wg = 0;
    for (int z = 0; z < NB; z++) wb += T[z * 12 + y], wg += H[z * NE + y % 2] * y;
    close_to(data[gb->id][y], wb);
    close_to(data[g->id][y], wg);
    for (int x = 0; x < NE; x++) {
      double w = 0;
      for (int z = 0; z < NB; z++) w += T[z * 12 + y] * H[z * NE + x];
      close_to(data[gw->id][y * NE + x], w);
    }
  }
  for (int z = 0; z < NB; z++) {
    double w = 0;
    for (int y = 0; y < 12; y++) w += T[z * 12 + y] * (y % 5);
    close_to(data[sb->id][z], w);
  }
  release();
}

/* General (non-DOT) reductions take the vectorized paths: along the
 * outer index j with reductions combined elementwise (o1, o5), along the
 * reduction's innermost index (o2, o3, o4), with uniform where()/&& and
 * uniform reductions, checked padded loads point by point, and collapsed
 * reduction indices. */
static void test_vector_paths(void **state) {
  (void)state;
  sym *n = var("n"), *m = var("m");
  ir_tensor *a = tensor("a", IR_ROLE_INPUT, 2, n, m), *b = tensor("b", IR_ROLE_INPUT, 2, m, n);
  ir_tensor *h = tensor("h", IR_ROLE_INPUT, 3, n, m, n);
  ir_tensor *o1 = tensor("o1", IR_ROLE_OUTPUT, 2, n, n), *o2 = tensor("o2", IR_ROLE_OUTPUT, 2, n, n);
  ir_tensor *o3 = tensor("o3", IR_ROLE_OUTPUT, 1, n), *o4 = tensor("o4", IR_ROLE_OUTPUT, 2, n, n);
  ir_tensor *o5 = tensor("o5", IR_ROLE_OUTPUT, 2, n, n);
  /* o1[i, j] = sum(k: a[i, k] * b[k, j] * 2) + max(k2: a[i, k2]) */
  ir_stmt *s = stmt(o1, 0, "o1");
  sym *i = idx(s, "i", IR_IDX_FREE, n), *j = idx(s, "j", IR_IDX_FREE, n);
  sym *k = idx(s, "k", IR_IDX_REDUCE, m), *k2 = idx(s, "k2", IR_IDX_REDUCE, m);
  ir_expr *body = bin(IR_OP_MUL, bin(IR_OP_MUL, ld(a, i, k), ld(b, k, j)), num(2));
  finish(s, bin(IR_OP_ADD, red(IR_RED_SUM, body, 1, k), red(IR_RED_MAX, ld(a, i, k2), 1, k2)), i, j);
  /* o2[i, j] = sum(k: where((i < 2 && k > 1) || k == 0, a[i, k], b[k, j]) * a[j, k]) */
  s = stmt(o2, 0, "o2");
  i = idx(s, "i", IR_IDX_FREE, n), j = idx(s, "j", IR_IDX_FREE, n), k = idx(s, "k", IR_IDX_REDUCE, m);
  ir_expr *c1 = bin(IR_OP_AND, bin(IR_OP_LT, ival(i), ival(K(2))), bin(IR_OP_GT, ival(k), ival(K(1))));
  ir_expr *cond = bin(IR_OP_OR, c1, bin(IR_OP_EQ, ival(k), ival(K(0))));
  body = bin(IR_OP_MUL, ir_where(A, cond, ld(a, i, k), ld(b, k, j), L0), ld(a, j, k));
  finish(s, red(IR_RED_SUM, body, 1, k), i, j);
  /* o3[e] = sum(q, y: h[q, y, e] * 3) + sum(q2, y2: h[q2, y2, e] * y2): the first collapses */
  s = stmt(o3, 0, "o3");
  sym *e = idx(s, "e", IR_IDX_FREE, n), *q = idx(s, "q", IR_IDX_REDUCE, n), *y = idx(s, "y", IR_IDX_REDUCE, m);
  sym *q2 = idx(s, "q2", IR_IDX_REDUCE, n), *y2 = idx(s, "y2", IR_IDX_REDUCE, m);
  finish(s, bin(IR_OP_ADD, red(IR_RED_SUM, bin(IR_OP_MUL, ld(h, q, y, e), num(3)), 2, q, y),
                red(IR_RED_SUM, bin(IR_OP_MUL, ld(h, q2, y2, e), ival(y2)), 2, q2, y2)), e);
  /* o4[i, j] = sum(k: a?[i + j - 2, k] * a[j, k] + a?[j, k + i - 1]) (padded: checked per point) */
  s = stmt(o4, 0, "o4");
  i = idx(s, "i", IR_IDX_FREE, n), j = idx(s, "j", IR_IDX_FREE, n), k = idx(s, "k", IR_IDX_REDUCE, m);
  body = bin(IR_OP_ADD, bin(IR_OP_MUL, ldp(a, sub(add(i, j), K(2)), k), ld(a, j, k)), ldp(a, j, add(k, sub(i, K(1)))));
  finish(s, red(IR_RED_SUM, body, 1, k), i, j);
  /* o5[i, j] = prod(k: b[k, j] + where(i > k, 1, a?[i, k - 1])) */
  s = stmt(o5, 0, "o5");
  i = idx(s, "i", IR_IDX_FREE, n), j = idx(s, "j", IR_IDX_FREE, n), k = idx(s, "k", IR_IDX_REDUCE, m);
  ir_expr *w = ir_where(A, bin(IR_OP_GT, ival(i), ival(k)), num(1), ldp(a, i, sub(k, K(1))), L0);
  finish(s, red(IR_RED_PROD, bin(IR_OP_ADD, ld(b, k, j), w), 1, k), i, j);
  enum { NN = 5, MM = 150 }; /* MM > INTERP_VW: more than one vector per reduction */
  int64_t vars[] = {NN, MM};
  assert_true(run(vars));
  const double *X = data[a->id], *Y = data[b->id], *H = data[h->id];
#define AX(r, c) ((r) >= 0 && (r) < NN && (c) >= 0 && (c) < MM ? X[(r) * MM + (c)] : 0.0)
  for (int r = 0; r < NN; r++)
    for (int c = 0; c < NN; c++) {
      double w1 = 0, mx = -INFINITY, w2 = 0, w4 = 0, w5 = 1;
      for (int z = 0; z < MM; z++) {
        w1 += X[r * MM + z] * Y[z * NN + c] * 2;
        mx = fmax(mx, X[r * MM + z]);
        w2 += (((r < 2 && z > 1) || z == 0) ? X[r * MM + z] : Y[z * NN + c]) * X[c * MM + z];
        w4 += AX(r + c - 2, z) * X[c * MM + z] + AX(c, z + r - 1);
        w5 *= Y[z * NN + c] + (r > z ? 1 : AX(r, z - 1));
      }
      close_to(data[o1->id][r * NN + c], w1 + mx);
      close_to(data[o2->id][r * NN + c], w2);
      close_to(data[o4->id][r * NN + c], w4);
      close_to(data[o5->id][r * NN + c], w5);
    }
#undef AX
  for (int c = 0; c < NN; c++) {
    double w3 = 0, w3b = 0;
    for (int z = 0; z < NN; z++)
      for (int u = 0; u < MM; u++) {
        w3 += H[(z * MM + u) * NN + c] * 3;
        w3b += H[(z * MM + u) * NN + c] * u;
      }
    close_to(data[o3->id][c], w3 + w3b);
  }
  release();
}

/* Less common paths: vectors longer than one run, an index sym whose
 * bounds intervals cannot prove (checked per point, as a load and as a +=
 * target), constant folding, a uniform DOT inside a vector. */
static void test_edge_paths(void **state) {
  (void)state;
  sym *n = var("n"), *m = var("m");
  ir_tensor *x = tensor("x", IR_ROLE_INPUT, 2, n, m), *y = tensor("y", IR_ROLE_OUTPUT, 2, n, m);
  ir_tensor *g = tensor("g", IR_ROLE_OUTPUT, 1, m), *z = tensor("z", IR_ROLE_OUTPUT, 2, n, m);
  /* y[i, j] = x[i, j] / (2 * 3) + where(2 > 1, x[i, j - j % 2], 0) */
  ir_stmt *s = stmt(y, 0, "y");
  sym *i = idx(s, "i", IR_IDX_FREE, n), *j = idx(s, "j", IR_IDX_FREE, m);
  ir_expr *folded = ir_where(A, bin(IR_OP_GT, num(2), num(1)), ld(x, i, sub(j, sym_mod(A, j, 2))), num(0), L0);
  finish(s, bin(IR_OP_ADD, bin(IR_OP_DIV, ld(x, i, j), bin(IR_OP_MUL, num(2), num(3))), folded), i, j);
  /* g[j - j % 2] += x[i, j] */
  s = stmt(g, 1, "g[j - j % 2] += x[i, j]");
  i = idx(s, "i", IR_IDX_SCATTER, n), j = idx(s, "j", IR_IDX_SCATTER, m);
  finish(s, ld(x, i, j), sub(j, sym_mod(A, j, 2)));
  /* z[i, j] = sum(k: x[k, j] * x[k, j] * 2) * sum(k2: x[i, k2] * x[i, k2]) */
  s = stmt(z, 0, "z");
  i = idx(s, "i", IR_IDX_FREE, n), j = idx(s, "j", IR_IDX_FREE, m);
  sym *k = idx(s, "k", IR_IDX_REDUCE, n), *k2 = idx(s, "k2", IR_IDX_REDUCE, m);
  ir_expr *sq = bin(IR_OP_MUL, bin(IR_OP_MUL, ld(x, k, j), ld(x, k, j)), num(2));
  finish(s, bin(IR_OP_MUL, red(IR_RED_SUM, sq, 1, k), red(IR_RED_SUM, bin(IR_OP_MUL, ld(x, i, k2), ld(x, i, k2)), 1, k2)), i, j);
  enum { NN = 3, MM = 301 };
  int64_t vars[] = {NN, MM};
  assert_true(run(vars));
  const double *X = data[x->id];
  for (int c = 0; c < MM; c++) {
    double wg = 0;
    for (int r = 0; r < NN; r++) wg += X[r * MM + c] + (c + 1 < MM ? X[r * MM + c + 1] : 0) * (c % 2 == 0);
    close_to(data[g->id][c], c % 2 ? 0 : wg);
  }
  for (int r = 0; r < NN; r++)
    for (int c = 0; c < MM; c++) {
      close_to(data[y->id][r * MM + c], X[r * MM + c] / 6 + X[r * MM + c - c % 2]);
      double w1 = 0, w2 = 0;
      for (int u = 0; u < NN; u++) w1 += X[u * MM + c] * X[u * MM + c] * 2;
      for (int u = 0; u < MM; u++) w2 += X[r * MM + u] * X[r * MM + u];
      close_to(data[z->id][r * MM + c], w1 * w2);
    }
  release();
}

static int64_t floordiv(int64_t x, int64_t c) { return x / c - (x % c != 0 && x < 0); }
static int64_t floormod(int64_t x, int64_t c) { return x - c * floordiv(x, c); }

static void test_integer_index_exprs(void **state) {
  (void)state;
  sym *n = var("n");
  sym *n4 = derived("n4", mul(n, K(4)), IR_AXIS_DERIVED);
  ir_tensor *x = tensor("x", IR_ROLE_INPUT, 2, n, K(4));
  ir_tensor *o = tensor("o", IR_ROLE_OUTPUT, 2, n4, K(3));
  /* o[j, t] = where(t == 0, (j - 5)/3, where(t == 1, (j - 5) % 3, x[j/4, j % 4] + ((j/2) % 3) * 10)) */
  ir_stmt *s = stmt(o, 0, "o");
  sym *j = idx(s, "j", IR_IDX_FREE, n4), *t = idx(s, "t", IR_IDX_FREE, K(3));
  sym *jm5 = sub(j, K(5));
  ir_expr *third = bin(IR_OP_ADD, ld(x, sym_div(A, j, 4), sym_mod(A, j, 4)),
                       bin(IR_OP_MUL, ival(sym_mod(A, sym_div(A, j, 2), 3)), ival(K(10))));
  ir_expr *e = ir_where(A, bin(IR_OP_EQ, ival(t), ival(K(0))), ival(sym_div(A, jm5, 3)),
                        ir_where(A, bin(IR_OP_EQ, ival(t), ival(K(1))), ival(sym_mod(A, jm5, 3)), third, L0), L0);
  finish(s, e, j, t);
  int64_t vars[] = {3};
  assert_true(run(vars));
  for (int k = 0; k < 12; k++) {
    close_to(data[o->id][k * 3 + 0], (double)floordiv(k - 5, 3));
    close_to(data[o->id][k * 3 + 1], (double)floormod(k - 5, 3));
    close_to(data[o->id][k * 3 + 2], data[x->id][k] + (double)((k / 2) % 3) * 10);
  }
  assert_int_equal(floordiv(-5, 3), -2);
  close_to(data[o->id][0], -2);
  close_to(data[o->id][1], 1);
  release();
}

static void test_math_ops_and_scalars(void **state) {
  (void)state;
  sym *n = var("n");
  ir_tensor *x = tensor("x", IR_ROLE_INPUT, 1, n), *sc = tensor("scale", IR_ROLE_INPUT, 0);
  ir_tensor *o = tensor("o", IR_ROLE_OUTPUT, 2, n, K(14)), *tot = tensor("total", IR_ROLE_OUTPUT, 0);
  ir_stmt *s = stmt(o, 0, "o");
  sym *i = idx(s, "i", IR_IDX_FREE, n), *t = idx(s, "t", IR_IDX_FREE, K(14));
  ir_expr *v = ld(x, i), *pos = bin(IR_OP_ADD, un(IR_OP_ABS, ld(x, i)), num(0.5));
  ir_expr *ops[14] = {
      un(IR_OP_EXP, v), un(IR_OP_LOG, pos), un(IR_OP_SQRT, pos), un(IR_OP_RSQRT, pos),
      un(IR_OP_TANH, v), un(IR_OP_ERF, v), un(IR_OP_RELU, v), un(IR_OP_SIGMOID, v),
      bin(IR_OP_POW, pos, num(1.5)), bin(IR_OP_MAX, v, num(0.25)), bin(IR_OP_MIN, v, num(0.25)),
      un(IR_OP_NEG, bin(IR_OP_DIV, v, num(3))),
      ir_where(A,
               bin(IR_OP_OR, bin(IR_OP_AND, bin(IR_OP_GE, v, num(0)), un(IR_OP_NOT, bin(IR_OP_LE, v, num(0.5)))),
                   bin(IR_OP_NE, ival(i), ival(i))),
               num(1), num(0), L0),
      bin(IR_OP_MUL, ld(sc), un(IR_OP_SQRT, num(16)))};
  ir_expr *e = ops[13];
  for (int k = 12; k >= 0; k--) e = ir_where(A, bin(IR_OP_EQ, ival(t), ival(K(k))), ops[k], e, L0);
  finish(s, e, i, t);
  s = stmt(tot, 0, "total");
  sym *j = idx(s, "j", IR_IDX_REDUCE, n);
  finish(s, bin(IR_OP_MUL, ld(sc), red(IR_RED_SUM, ld(x, j), 1, j)));
  int64_t vars[] = {9};
  assert_true(run(vars));
  double sum = 0, S = data[sc->id][0];
  for (int k = 0; k < 9; k++) {
    double a = data[x->id][k], p = fabs(a) + 0.5;
    double want[14] = {exp(a), log(p), sqrt(p), 1 / sqrt(p), tanh(a), erf(a), a > 0 ? a : 0,
                       1 / (1 + exp(-a)), pow(p, 1.5), fmax(a, 0.25), fmin(a, 0.25), -(a / 3),
                       a >= 0 && !(a <= 0.5), S * 4};
    for (int m = 0; m < 14; m++) close_to(data[o->id][k * 14 + m], want[m]);
    sum += a;
  }
  close_to(data[tot->id][0], S * sum);
  release();
}

/* A plain statement, then += into the same tensor, then a statement that
 * reads and rewrites its own target (x[i] = x[n - 1 - i]). */
static void test_accumulate_after_write_and_self_read(void **state) {
  (void)state;
  sym *n = var("n");
  ir_tensor *x = tensor("x", IR_ROLE_INPUT, 1, n), *y = tensor("y", IR_ROLE_OUTPUT, 1, n);
  ir_stmt *s = stmt(y, 0, "y[i] = x[i]");
  sym *i = idx(s, "i", IR_IDX_FREE, n);
  finish(s, ld(x, i), i);
  s = stmt(y, 1, "y[i] += 2 * x[i]");
  i = idx(s, "i", IR_IDX_SCATTER, n);
  finish(s, bin(IR_OP_MUL, num(2), ld(x, i)), i);
  s = stmt(y, 0, "y[i] = y[n - 1 - i] + y[i]");
  i = idx(s, "i", IR_IDX_FREE, n);
  finish(s, bin(IR_OP_ADD, ld(y, sub(sub(n, K(1)), i)), ld(y, i)), i);
  int64_t vars[] = {6};
  assert_true(run(vars));
  for (int k = 0; k < 6; k++) close_to(data[y->id][k], 3 * data[x->id][5 - k] + 3 * data[x->id][k]);
  release();
}

static void test_out_of_bounds_load_is_internal_error(void **state) {
  (void)state;
  sym *n = var("n");
  ir_tensor *x = tensor("x", IR_ROLE_INPUT, 1, n), *y = tensor("y", IR_ROLE_OUTPUT, 1, n);
  ir_stmt *s = stmt(y, 0, "y[i] = x[i + 1]");
  sym *i = idx(s, "i", IR_IDX_FREE, n);
  finish(s, ld(x, add(i, K(1))), i);
  int64_t vars[] = {4};
  assert_false(run(vars));
  assert_int_equal(kbc_diag_internal(D), 1);
  expect_error("load of x[i + 1] outside the tensor: dimension 0 is 4, not in [0, 4) at i=3");
  assert_null(data[y->id]);
  release();
}

static void test_memory_limit(void **state) {
  (void)state;
  sym *n = var("n");
  ir_tensor *x = tensor("x", IR_ROLE_INPUT, 1, n), *y = tensor("y", IR_ROLE_OUTPUT, 2, n, n);
  ir_stmt *s = stmt(y, 0, "y[i, j] = x[i]");
  sym *i = idx(s, "i", IR_IDX_FREE, n), *j = idx(s, "j", IR_IDX_FREE, n);
  finish(s, ld(x, i), i, j);
  int64_t vars[] = {1 << 20};
  assert_true(ir_bind(P, A, vars, &B, D));
  memset(data, 0, sizeof data);
  double dummy = 0;
  data[x->id] = &dummy;
  assert_false(ir_interp(P, &B, data, D));
  expect_error("more than its limit of 16 GiB");
  assert_null(data[y->id]);
}

/* Statements of at least 2^22 terms run on several threads (interp.c,
 * run_parallel): each form — vectorized along j, row by row, point by
 * point with non-affine indices — gives bit-identical results to the
 * point-by-point run on one thread (run() compares them), a `+=` scatter
 * stays on one thread, and an error found by a part is reported as one
 * thread reports it. */
static void test_threads(void **state) {
  (void)state;
  setenv("KBC_INTERP_THREADS", "3", 1);
  sym *n = var("n"), *m = var("m");
  ir_tensor *x = tensor("x", IR_ROLE_INPUT, 2, n, n), *a = tensor("a", IR_ROLE_INPUT, 2, m, m);
  ir_tensor *y = tensor("y", IR_ROLE_OUTPUT, 2, n, n), *mm = tensor("mm", IR_ROLE_OUTPUT, 2, m, m);
  ir_tensor *na = tensor("na", IR_ROLE_OUTPUT, 2, n, n), *z = tensor("z", IR_ROLE_OUTPUT, 2, K(7), n);
  ir_tensor *w1 = tensor("w1", IR_ROLE_OUTPUT, 3, K(1), n, n);
  ir_stmt *s = stmt(y, 0, "y[i, j] = exp(x[i, j]) * x[i, j]");
  sym *i = idx(s, "i", IR_IDX_FREE, n), *j = idx(s, "j", IR_IDX_FREE, n);
  finish(s, bin(IR_OP_MUL, un(IR_OP_EXP, ld(x, i, j)), ld(x, i, j)), i, j);
  s = stmt(mm, 0, "mm[i, j] = sum(k: a[i, k] * a[k, j])");
  i = idx(s, "i", IR_IDX_FREE, m), j = idx(s, "j", IR_IDX_FREE, m);
  sym *k = idx(s, "k", IR_IDX_REDUCE, m);
  finish(s, red(IR_RED_SUM, bin(IR_OP_MUL, ld(a, i, k), ld(a, k, j)), 1, k), i, j);
  s = stmt(na, 0, "na[i, j] = x[i / 2, (3 * j) % 2048] + i");
  i = idx(s, "i", IR_IDX_FREE, n), j = idx(s, "j", IR_IDX_FREE, n);
  finish(s, bin(IR_OP_ADD, ld(x, sym_div(A, i, 2), sym_mod(A, mul(K(3), j), 2048)), ival(i)), i, j);
  s = stmt(w1, 0, "w1[o, i, j] = x[i, j] * 2 + o"); /* a first index of one value: cut along i */
  sym *o = idx(s, "o", IR_IDX_FREE, K(1));
  i = idx(s, "i", IR_IDX_FREE, n), j = idx(s, "j", IR_IDX_FREE, n);
  finish(s, bin(IR_OP_ADD, bin(IR_OP_MUL, ld(x, i, j), num(2)), ival(o)), o, i, j);
  s = stmt(z, 1, "z[i % 7, j] += x[i, j]");
  i = idx(s, "i", IR_IDX_SCATTER, n), j = idx(s, "j", IR_IDX_FREE, n);
  finish(s, ld(x, i, j), sym_mod(A, i, 7), j);
  enum { N = 2048, M = 162 };
  int64_t vars[] = {N, M};
  assert_true(run(vars)); /* vectorized on 3 threads against point by point on one, bit for bit */
  const double *X = data[x->id], *Am = data[a->id];
  for (int r = 0; r < N; r += 511)
    for (int c = 0; c < N; c += 313) {
      assert_true(data[y->id][r * N + c] == exp(X[r * N + c]) * X[r * N + c]);
      assert_true(data[na->id][r * N + c] == X[(r / 2) * N + (3 * c) % N] + r);
      assert_true(data[w1->id][r * N + c] == X[r * N + c] * 2);
    }
  for (int r = 0; r < M; r += 40) {
    double w = 0;
    for (int q = 0; q < M; q++) w += Am[r * M + q] * Am[q * M + 7];
    close_to(data[mm->id][r * M + 7], w);
  }
  double zs = 0;
  for (int r = 3; r < N; r += 7) zs += X[r * N + 5];
  close_to(data[z->id][3 * N + 5], zs);
  release();
  unsetenv("KBC_INTERP_THREADS");
}

/* An error a part meets is reported as on one thread: the first point. */
static void test_threads_error(void **state) {
  (void)state;
  setenv("KBC_INTERP_THREADS", "4", 1);
  sym *n = var("n");
  ir_tensor *x = tensor("x", IR_ROLE_INPUT, 2, n, n), *y = tensor("y", IR_ROLE_OUTPUT, 2, n, n);
  /* out of bounds at i = 699 and 1399 (the second and third of four parts) */
  ir_stmt *s = stmt(y, 0, "y[i, j] = x[i, j + (i % 700) / 699]");
  sym *i = idx(s, "i", IR_IDX_FREE, n), *j = idx(s, "j", IR_IDX_FREE, n);
  finish(s, ld(x, i, add(j, sym_div(A, sym_mod(A, i, 700), 699))), i, j);
  int64_t vars[] = {2048};
  assert_false(run(vars));
  assert_int_equal(kbc_diag_internal(D), 1);
  expect_error("outside the tensor: dimension 1 is 2048, not in [0, 2048) at i=699, j=2047");
  assert_null(data[y->id]);
  release();
  unsetenv("KBC_INTERP_THREADS");
}

static void test_matmul_speed(void **state) {
  (void)state;
  sym *n = var("n");
  ir_tensor *a = tensor("a", IR_ROLE_INPUT, 2, n, n), *b = tensor("b", IR_ROLE_INPUT, 2, n, n);
  ir_tensor *out = tensor("out", IR_ROLE_OUTPUT, 2, n, n);
  ir_stmt *s = stmt(out, 0, "out[i, j] = sum(k: a[i, k] * b[k, j])");
  sym *i = idx(s, "i", IR_IDX_FREE, n), *j = idx(s, "j", IR_IDX_FREE, n), *k = idx(s, "k", IR_IDX_REDUCE, n);
  finish(s, red(IR_RED_SUM, bin(IR_OP_MUL, ld(a, i, k), ld(b, k, j)), 1, k), i, j);
  int64_t vars[] = {256};
  assert_true(ir_bind(P, A, vars, &B, D));
  memset(data, 0, sizeof data);
  data[a->id] = rnd(B.numel[a->id], 1);
  data[b->id] = rnd(B.numel[b->id], 2);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  assert_true(ir_interp(P, &B, data, D));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double sec = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  printf("  matmul 256^3: %.3f s, %.2f ns per multiply-add\n", sec, sec * 1e9 / (256.0 * 256 * 256));
  assert_true(sec < 2.0);
  double want = 0;
  for (int z = 0; z < 256; z++) want += data[a->id][17 * 256 + z] * data[b->id][z * 256 + 200];
  close_to(data[out->id][17 * 256 + 200], want);
  release();
}

/* A statement that breaks the scoping invariant is refused, not run. */
static void test_broken_ir_is_internal_error(void **state) {
  (void)state;
  sym *n = var("n");
  ir_tensor *x = tensor("x", IR_ROLE_INPUT, 1, n), *y = tensor("y", IR_ROLE_OUTPUT, 1, n);
  ir_stmt *s = stmt(y, 0, "y[i] = x[k]");
  sym *i = idx(s, "i", IR_IDX_FREE, n), *k = idx(s, "k", IR_IDX_REDUCE, n);
  finish(s, ld(x, k), i);
  int64_t vars[] = {4};
  assert_false(run(vars));
  assert_int_equal(kbc_diag_internal(D), 1);
  expect_error("index 'k' used outside its loop");
  release();
}

/* ir_pipeline_opts.stop_after: the program as the spec states it (kernel_emu
 * interprets it to check the passes).  After check-bounds the elementwise
 * temporary and the repeated sum are still there; the full pipeline inlines
 * the one and hoists the other; both compute the same values. */
static void test_pipeline_stop_after(void **state) {
  (void)state;
  static const char src[] = "kernel k\naxis n var\naxis m var\ninput x f32[n, m]\noutput y f32[n, m]\n"
                            "e[i, j] = exp(x[i, j])\n"
                            "y[i, j] = e[i, j] / sum(k: e[i, k]) + x[i, j] / sum(k: e[i, k])\n";
  ir_pipeline_opts stop = {.stop_after = "check-bounds"}, lower = {.stop_after = "lower"};
  ir_program *full = ir_pipeline_run(A, D, src, "k", NULL);
  ir_program *raw = ir_pipeline_run(A, D, src, "k", &stop);
  ir_program *low = ir_pipeline_run(A, D, src, "k", &lower);
  assert_non_null(full);
  assert_non_null(raw);
  assert_non_null(low);
  assert_int_equal(raw->stmts.len, 2);
  assert_int_equal(low->stmts.len, 2);
  assert_non_null(ir_tensor_find(raw, "e"));
  assert_null(ir_tensor_find(full, "e")); /* inlined, then dropped */
  int64_t vars[] = {3, 5};
  double out[2][15];
  ir_program *both[2] = {raw, full};
  for (int w = 0; w < 2; w++) {
    ir_program *p = both[w];
    ir_binding b;
    assert_true(ir_bind(p, A, vars, &b, D));
    double **vals = calloc((size_t)p->tensors.len + 1, sizeof *vals);
    int xi = ir_tensor_find(p, "x")->id, yi = ir_tensor_find(p, "y")->id;
    vals[xi] = malloc(15 * sizeof(double));
    for (int e = 0; e < 15; e++) vals[xi][e] = 0.1 * e - 0.7;
    assert_true(ir_interp(p, &b, vals, D));
    memcpy(out[w], vals[yi], sizeof out[w]);
    ir_interp_release(p, vals);
    for (int i = 0; i < p->tensors.len; i++) free(vals[i]);
    free(vals);
  }
  for (int e = 0; e < 15; e++) assert_true(fabs(out[0][e] - out[1][e]) <= 1e-12 * fabs(out[0][e]));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_matmul_bias, setup, teardown),
      cmocka_unit_test_setup_teardown(test_softmax_middle_axis, setup, teardown),
      cmocka_unit_test_setup_teardown(test_strided_conv, setup, teardown),
      cmocka_unit_test_setup_teardown(test_gather_and_scatter, setup, teardown),
      cmocka_unit_test_setup_teardown(test_nested_reductions, setup, teardown),
      cmocka_unit_test_setup_teardown(test_where_padded, setup, teardown),
      cmocka_unit_test_setup_teardown(test_min_max_prod, setup, teardown),
      cmocka_unit_test_setup_teardown(test_row_mode_variants, setup, teardown),
      cmocka_unit_test_setup_teardown(test_non_affine_indices, setup, teardown),
      cmocka_unit_test_setup_teardown(test_vector_paths, setup, teardown),
      cmocka_unit_test_setup_teardown(test_edge_paths, setup, teardown),
      cmocka_unit_test_setup_teardown(test_integer_index_exprs, setup, teardown),
      cmocka_unit_test_setup_teardown(test_math_ops_and_scalars, setup, teardown),
      cmocka_unit_test_setup_teardown(test_accumulate_after_write_and_self_read, setup, teardown),
      cmocka_unit_test_setup_teardown(test_out_of_bounds_load_is_internal_error, setup, teardown),
      cmocka_unit_test_setup_teardown(test_memory_limit, setup, teardown),
      cmocka_unit_test_setup_teardown(test_matmul_speed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
      cmocka_unit_test_setup_teardown(test_threads_error, setup, teardown),
      cmocka_unit_test_setup_teardown(test_broken_ir_is_internal_error, setup, teardown),
      cmocka_unit_test_setup_teardown(test_pipeline_stop_after, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
