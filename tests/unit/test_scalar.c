/* test_scalar.c — statements without free indices (scalars): reductions
 * into rank-0 outputs and intermediates, from spec text to values and
 * kernels.
 *
 * Before: nothing.  After: each test compiles spec text (ir_pipeline_run)
 * in its own arena and checks the IR (lowering: whole-tensor statements
 * holding reductions, defs returning scalars; hoisting: one top reduction
 * per scalar statement), the CPU interpreter's values against naive C
 * loops, or the code generator's kernels (the grid-split reduction of
 * codegen/sched_point.c, one-point fusion of small constant statements).
 * Whether the kernels compute the right values is tests/codegen's
 * emulated run (specs/scalar.kb, scalar_fused.kb). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codegen/cg.h"
#include "ir/bind.h"
#include "interp/interp.h"
#include "passes/pipeline.h"

typedef struct {
  kbc_arena *a;
  kbc_diag *d;
  ir_program *p;
  ir_binding b;
  double **data;
  cg_program g;
} compiled;

static void compile(compiled *C, const char *src) {
  memset(C, 0, sizeof *C);
  C->a = kbc_arena_create();
  C->d = kbc_diag_create("test.kb", src);
  C->p = ir_pipeline_run(C->a, C->d, src, "test", NULL);
  if (!C->p) fail_msg("pipeline: %s", kbc_diag_text(C->d));
}

/* The first error of src, which must not compile. */
static void compile_error(const char *src, const char *phrase) {
  kbc_arena *a = kbc_arena_create();
  kbc_diag *d = kbc_diag_create("test.kb", src);
  ir_program *p = ir_pipeline_run(a, d, src, "test", NULL);
  assert_null(p);
  if (!strstr(kbc_diag_text(d), phrase)) fail_msg("expected '%s' in:\n%s", phrase, kbc_diag_text(d));
  kbc_diag_destroy(d);
  kbc_arena_destroy(a);
}

/* Binds vars (in var_id order), fills every input with values from f, runs. */
static void run(compiled *C, const int64_t *vars, double (*f)(int tensor, int64_t e)) {
  if (!ir_bind(C->p, C->a, vars, &C->b, C->d)) fail_msg("bind: %s", kbc_diag_text(C->d));
  C->data = calloc((size_t)C->p->tensors.len + 1, sizeof *C->data);
  for (int i = 0; i < C->p->tensors.len; i++)
    if (IR_TENSOR(C->p, i)->role == IR_ROLE_INPUT) {
      C->data[i] = malloc(sizeof(double) * (size_t)C->b.numel[i]);
      for (int64_t e = 0; e < C->b.numel[i]; e++) C->data[i][e] = f(i, e);
    }
  if (!ir_interp(C->p, &C->b, C->data, C->d)) fail_msg("interp: %s", kbc_diag_text(C->d));
}

static void release(compiled *C) {
  if (C->data) {
    ir_interp_release(C->p, C->data);
    for (int i = 0; i < C->p->tensors.len; i++) free(C->data[i]);
    free(C->data);
  }
  cg_program_free(&C->g);
  kbc_diag_destroy(C->d);
  kbc_arena_destroy(C->a);
}

static const ir_tensor *find(const compiled *C, const char *name) {
  const ir_tensor *t = ir_tensor_find(C->p, name);
  if (!t) fail_msg("no tensor '%s'", name);
  return t;
}

static const double *values(const compiled *C, const char *name) { return C->data[find(C, name)->id]; }

static void close_to(double got, double want) {
  if (!(fabs(got - want) <= 1e-12 * (1.0 + fabs(want)))) fail_msg("got %.17g, want %.17g", got, want);
}

static int n_free(const ir_stmt *s) {
  int n = 0;
  for (int i = 0; i < s->n_index; i++) n += s->index[i].kind == IR_IDX_FREE;
  return n;
}

/* Inputs: smooth, distinct, of both signs. */
static double wave(int tensor, int64_t e) { return sin(0.7 * (double)e + 1.3 * tensor) + 0.1 * tensor; }

/* ---- lowering ----------------------------------------------------------- */

static const char nll[] = "kernel nll\n"
                          "axis bsz var\naxis c var\n"
                          "input t f32[bsz, c]\ninput logp f32[bsz, c]\n"
                          "output loss f32\n"
                          "loss = -sum(b, k: t[b, k] * logp[b, k]) / bsz\n";

/* The loss: one statement into the rank-0 output, no free index,
 * both indices reduced; its value is the naive sum. */
static void test_nll(void **state) {
  (void)state;
  compiled C;
  compile(&C, nll);
  assert_int_equal(C.p->stmts.len, 1);
  const ir_stmt *s = IR_STMT(C.p, 0);
  assert_string_equal(s->out->name, "loss");
  assert_int_equal(s->out->rank, 0);
  assert_int_equal(n_free(s), 0);
  assert_int_equal(s->n_index, 2);
  int64_t vars[] = {3, 5};
  run(&C, vars, wave);
  const double *t = values(&C, "t"), *lp = values(&C, "logp");
  double want = 0;
  for (int e = 0; e < 15; e++) want += t[e] * lp[e];
  close_to(values(&C, "loss")[0], -want / 3);
  release(&C);
}

/* Scalars alone and inside expressions: a rank-0 input mixed in, max over
 * two indices, nested reductions, a scalar intermediate read by later
 * statements (elementwise and a reduction), a def returning a scalar and
 * taking one, a loop rebinding a scalar, a declared rank-0 tensor. */
static void test_values(void **state) {
  (void)state;
  compiled C;
  compile(&C, "kernel scalars\n"
              "axis n var\naxis m var\nassert n >= 4\n"
              "input x f32[n, m]\ninput l f32[n]\ninput scale f32\n"
              "output loss f32\noutput top f32\noutput nested f32\noutput centered f32[n]\n"
              "output low f32\noutput viadef f32\noutput looped f32\noutput declared f32\n"
              "def mean(v) { return sum(i: v[i]) / n }\n"
              "def twice(s) { return s * 2.0 }\n"
              "tensor d f32\n"
              "loss = scale * sum(i: l[i]) / n\n"
              "top = max(i, j: x[i, j])\n"
              "nested = sum(i: max(j: x[i, j]))\n"
              "mu = sum(i: l[i]) / n\n"
              "centered[i] = l[i] - mu\n"
              "low = min(j: x[0, j] - mu) - mu\n"
              "viadef = twice(mean(l))\n"
              "acc = sum(j: x[0, j])\n"
              "for r in 1..3 { acc = acc + sum(j: x[r, j]) }\n"
              "looped = acc\n"
              "d = prod(j: 1.0 + 0.1 * x[1, j])\n"
              "declared = d\n");
  int64_t vars[] = {4, 6};
  run(&C, vars, wave);
  const double *x = values(&C, "x"), *l = values(&C, "l"), sc = values(&C, "scale")[0];
  double sl = 0, top = -INFINITY, nested = 0, acc = 0, prod = 1;
  for (int i = 0; i < 4; i++) {
    sl += l[i];
    double rm = -INFINITY;
    for (int j = 0; j < 6; j++) {
      top = fmax(top, x[i * 6 + j]);
      rm = fmax(rm, x[i * 6 + j]);
      if (i < 3) acc += x[i * 6 + j];
    }
    nested += rm;
  }
  double mu = sl / 4, low = INFINITY;
  for (int j = 0; j < 6; j++) {
    low = fmin(low, x[j] - mu);
    prod *= 1.0 + 0.1 * x[6 + j];
  }
  close_to(values(&C, "loss")[0], sc * sl / 4);
  close_to(values(&C, "top")[0], top);
  close_to(values(&C, "nested")[0], nested);
  for (int i = 0; i < 4; i++) close_to(values(&C, "centered")[i], l[i] - mu);
  close_to(values(&C, "low")[0], low - mu);
  close_to(values(&C, "viadef")[0], 2 * mu);
  close_to(values(&C, "looped")[0], acc);
  close_to(values(&C, "declared")[0], prod);
  release(&C);
}

/* Two top reductions in a scalar statement: the second moves to a
 * statement of its own (each is then split across threads). */
static void test_hoist(void **state) {
  (void)state;
  compiled C;
  compile(&C, "kernel ratio\naxis n var\ninput a f32[n]\ninput b f32[n]\noutput r f32\n"
              "r = sum(i: a[i]) / (1.0 + sum(j: b[j] * b[j]))\n");
  assert_int_equal(C.p->stmts.len, 2);
  assert_string_equal(IR_STMT(C.p, 0)->out->name, "r.red");
  assert_int_equal(IR_STMT(C.p, 0)->out->rank, 0);
  assert_string_equal(IR_STMT(C.p, 1)->out->name, "r");
  int64_t vars[] = {7};
  run(&C, vars, wave);
  const double *a = values(&C, "a"), *b = values(&C, "b");
  double sa = 0, sb = 0;
  for (int i = 0; i < 7; i++) {
    sa += a[i];
    sb += b[i] * b[i];
  }
  close_to(values(&C, "r")[0], sa / (1 + sb));
  release(&C);
}

static void test_errors(void **state) {
  (void)state;
  compile_error("kernel t\naxis n var\ninput x f32[n]\noutput y f32[n]\ny = sum(i: x[i])\n",
                "'y' has shape [n] but the right side is a scalar");
  compile_error("kernel t\naxis n var\ninput x f32[n]\noutput y f32\ny = sum(i: x[i]) + x\n",
                "tensor 'x' (rank 1) needs indices here");
  compile_error("kernel t\naxis n var\ninput x f32[n, n]\noutput y f32\ny = sum(j: x[i, j])\n",
                "index 'i' is bound by no reduction");
  compile_error("kernel t\naxis n var\ninput x f32[n]\noutput y f32\ny = sum(i: x[i]) + softmax(x)\n",
                "'softmax' works on whole tensors");
  compile_error("kernel t\naxis n var\ninput x f32[n]\noutput y f32\ny = sum(i: x[i])\ny = max(i: x[i])\n",
                "output 'y' is assigned twice");
  compile_error("kernel t\naxis n var\ninput x f32[n]\noutput y f32\ny += sum(i: x[i])\n",
                "'y' has rank 0");
}

/* ---- kernels ------------------------------------------------------------ */

static void generate(compiled *C) {
  cg_target t = cg_target_default();
  t.opt = cg_options_from_env();
  if (!cg_generate(C->a, C->p, &t, &C->g, C->d)) fail_msg("codegen: %s", kbc_diag_text(C->d));
}

static int64_t blocks(const cg_kernel *k, const int64_t *vars) {
  int64_t work;
  assert_true(sym_eval(k->work, vars, NULL, &work));
  int64_t b = (work + k->per_block - 1) / k->per_block;
  return k->max_blocks && b > k->max_blocks ? k->max_blocks : b;
}

/* The loss of a size known at run time: a block-wide team, the reduction
 * split across a grid of a block per 8192 terms, at most four blocks per
 * multiprocessor, the parts combined by the last block. */
static void test_point_kernel(void **state) {
  (void)state;
  compiled C;
  compile(&C, nll);
  generate(&C);
  assert_int_equal(C.g.n_kernels, 1);
  const cg_kernel *k = &C.g.kernels[0];
  assert_int_equal(k->family, CG_FAMILY_POINT);
  assert_int_equal(k->block, 256);
  assert_int_equal(k->per_block, 1);
  assert_int_equal(k->zero_tensor, -1);
  assert_int_equal(k->max_blocks, 4 * cg_target_default().sm_count);
  int64_t one[] = {1, 1}, some[] = {7, 4099}, many[] = {4096, 32000};
  assert_int_equal(blocks(k, one), 1);
  assert_int_equal(blocks(k, some), (7 * 4099 + 8191) / 8192);
  assert_int_equal(blocks(k, many), k->max_blocks);
  const char *src = kbc_buf_str(&C.g.source);
  char decl[256];
  snprintf(decl, sizeof decl, "__device__ unsigned _%s_done = 0;", k->name);
  assert_non_null(strstr(src, decl));
  snprintf(decl, sizeof decl, "__device__ float _%s_parts[%d];", k->name, k->max_blocks);
  assert_non_null(strstr(src, decl));
  assert_non_null(strstr(src, "__threadfence();"));
  assert_non_null(strstr(src, "if (!_last) return;"));
  release(&C);
}

/* A team capped below a block (KBC_MAX_TEAM) keeps the plain rows kernel:
 * one team, one block. */
static void test_point_capped_team(void **state) {
  (void)state;
  setenv("KBC_MAX_TEAM", "32", 1);
  compiled C;
  compile(&C, nll);
  generate(&C);
  unsetenv("KBC_MAX_TEAM");
  const cg_kernel *k = &C.g.kernels[0];
  int64_t many[] = {4096, 32000};
  assert_int_equal(blocks(k, many), 1);
  assert_null(strstr(kbc_buf_str(&C.g.source), "__device__ unsigned"));
  release(&C);
}

/* Statements of small constant size fuse into one kernel of a single
 * point, scalars and vectors alike; of a size known only at run time,
 * each scalar is a kernel of its own and the rest keeps its points. */
static void test_one_point_fusion(void **state) {
  (void)state;
  static const char *const specs[] = {
      "kernel sm\naxis n const 300\ninput w f32[n]\noutput p f32[n]\n"
      "mx = max(i: w[i])\ntot = sum(i: exp(w[i] - mx))\np[i] = exp(w[i] - mx) / tot\n",
      "kernel sm\naxis n var\ninput w f32[n]\noutput p f32[n]\n"
      "mx = max(i: w[i])\ntot = sum(i: exp(w[i] - mx))\np[i] = exp(w[i] - mx) / tot\n"};
  for (int v = 0; v < 2; v++) {
    compiled C;
    compile(&C, specs[v]);
    generate(&C);
    assert_int_equal(C.p->stmts.len, 3);
    assert_int_equal(C.g.n_kernels, v == 0 ? 1 : 3);
    if (v == 0) {
      assert_int_equal(C.g.kernels[0].count, 3);
      assert_true(C.g.kernels[0].block >= 64); /* a block-wide team */
      assert_non_null(strstr(kbc_buf_str(&C.g.source), "0 outer dimensions"));
    } else {
      int64_t vars[] = {100000};
      assert_true(blocks(&C.g.kernels[2], vars) > 1); /* p keeps its points */
    }
    release(&C);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_nll),
      cmocka_unit_test(test_values),
      cmocka_unit_test(test_hoist),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_point_kernel),
      cmocka_unit_test(test_point_capped_team),
      cmocka_unit_test(test_one_point_fusion),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
