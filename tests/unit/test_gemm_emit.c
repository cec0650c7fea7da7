/* test_gemm_emit.c — the tiled-contraction (GEMM) schedule family
 * (codegen/gemm_*.c) without a GPU: which statements get it, the
 * kernel record it fills (block, shared memory, work as tiles over the var
 * axes, tensors), the text it writes (schedule comment, signature, the
 * k loop free of divisions, TF32 mma), and determinism.
 *
 * Before: nothing.  After: each test compiles spec text (ir_pipeline_run,
 * cg_generate) in its own arena and inspects the result.  Whether the text
 * compiles is tests/codegen (nvcc) and tests/nvrtc; whether it computes the
 * right values on the CPU is tests/codegen's emulated run. */
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
#include "codegen/cg_impl.h"
#include "ir/bind.h"
#include "passes/pipeline.h"

typedef struct {
  kbc_arena *a;
  kbc_diag *d;
  ir_program *p;
  cg_program g;
  const char *src; /* generated CUDA */
} gen;

static char *slurp(const char *rel) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", KBC_SOURCE_DIR, rel);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  assert_non_null(s);
  assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
  s[n] = 0;
  fclose(f);
  return s;
}

static void generate(gen *G, const char *spec_text, cg_precision prec) {
  memset(G, 0, sizeof *G);
  G->a = kbc_arena_create();
  G->d = kbc_diag_create("test.kb", spec_text);
  G->p = ir_pipeline_run(G->a, G->d, spec_text, "test", NULL);
  if (!G->p) fail_msg("pipeline: %s", kbc_diag_text(G->d));
  cg_target t = cg_target_default();
  t.opt = cg_options_from_env();
  t.precision = prec;
  if (!cg_generate(G->a, G->p, &t, &G->g, G->d)) fail_msg("codegen: %s", kbc_diag_text(G->d));
  G->src = kbc_buf_str(&G->g.source);
}

static void release(gen *G) {
  cg_program_free(&G->g);
  kbc_diag_destroy(G->d);
  kbc_arena_destroy(G->a);
}

/* The kernel computing tensor `name`. */
static const cg_kernel *kernel_for(const gen *G, const char *name) {
  for (int i = 0; i < G->g.n_kernels; i++) {
    const cg_kernel *k = &G->g.kernels[i];
    if (!strcmp(IR_STMT(G->p, k->first)->out->name, name)) return k;
  }
  fail_msg("no kernel writes '%s'", name);
  return NULL;
}

/* The kernel's text: from its leading comments to the end of its body. */
static char *kernel_text(const gen *G, const cg_kernel *k) {
  char head[512];
  snprintf(head, sizeof head, "\n%s(", k->name);
  const char *at = strstr(G->src, head);
  assert_non_null(at);
  /* back to the first comment line of the block before the signature */
  const char *start = at;
  while (start > G->src) {
    const char *prev = start - 1;
    while (prev > G->src && prev[-1] != '\n') prev--;
    if (strncmp(prev, "//", 2) && strncmp(prev, "extern", 6)) break;
    start = prev;
  }
  const char *end = strstr(at, "\n}\n");
  assert_non_null(end);
  size_t n = (size_t)(end + 3 - start);
  char *s = malloc(n + 1);
  memcpy(s, start, n);
  s[n] = 0;
  return s;
}

static int64_t ceil_div(int64_t x, int64_t b) { return (x + b - 1) / b; }

static int64_t product(const ir_stmt *s, const int *ids, int n, const int64_t *vars) {
  int64_t p = 1, v;
  for (int i = 0; i < n; i++) {
    assert_true(sym_eval(s->index[ids[i]].extent, vars, NULL, &v));
    p *= v;
  }
  return p;
}

/* A GEMM kernel's record and text agree with its statement's contraction:
 * work = ceil(M / BM) * ceil(N / BN) * batch at the binding vars. */
static void check_gemm(const gen *G, const cg_kernel *k, const int64_t *vars, int *bm_out, int *bn_out) {
  assert_int_equal(k->family, CG_FAMILY_GEMM);
  assert_int_equal(k->count, 1);
  assert_int_equal(k->block, 256);
  assert_int_equal(k->per_block, 1);
  const ir_stmt *s = IR_STMT(G->p, k->first);
  char *text = kernel_text(G, k);
  /* the register-staged K loop: static __shared__ only (nvcc rejects more
   * than 48 KB); the vector loop (16-byte chunks by cp.async): dynamic
   * stages within the GPU's opt-in limit */
  int vec = strstr(text, "in 16-byte chunks") != NULL;
  if (vec) assert_true(k->smem > 0 && k->smem <= cg_target_default().smem_per_block);
  else assert_int_equal(k->smem, 0);
  /* split-K: a capped grid (a wave of two blocks per SM) over up to 64
   * slices per output tile, their partial sums in scratch (no zero-fill) */
  int split = strstr(text, "split-K") != NULL;
  assert_int_equal(k->max_blocks, split ? 2 * cg_target_default().sm_count : 0);
  assert_int_equal(k->zero_tensor, -1);
  assert_int_equal(k->scratch_tiles != NULL, split);
  if (split) assert_non_null(strstr(text, "float *__restrict__ _kws"));
  assert_non_null(strstr(text, "// schedule: gemm"));
  /* 256 threads; two blocks per multiprocessor (from sm_90 on) asked only
   * for FFMA and 3xTF32 products of one index per M, N and K (gemm_plan.c) */
  assert_true(strstr(text, "__launch_bounds__(256)") || strstr(text, "__launch_bounds__(256, KBC_BLOCKS_SM90(2))") ||
              (vec && strstr(text, "__launch_bounds__(256, 1)")));
  const char *tile = strstr(text, "tile ");
  assert_non_null(tile);
  int bm = 0, bn = 0, bk = 0;
  assert_int_equal(sscanf(tile, "tile %dx%dx%d", &bm, &bn, &bk), 3);
  assert_true(bm > 0 && bn > 0 && (bk == 8 || bk == 16 || (vec && bk == 32)));
  /* the K loop: no division or remainder of a long long */
  const char *loop = strstr(text, "for (long long _kt = 0;");
  assert_non_null(loop);
  const char *math = strstr(loop, "for (int _kk");
  assert_non_null(math);
  for (const char *ls = loop; ls < math;) {
    const char *le = strchr(ls, '\n');
    const char *cm = strstr(ls, "//");
    if (cm && cm < le) le = cm;
    for (const char *q = ls; q < le; q++)
      if ((*q == '/' || *q == '%') && !(q[1] == ' ' && q[2] >= '0' && q[2] <= '9'))
        fail_msg("division by a non-constant in the K loop of %s: %.100s", k->name, ls);
    ls = strchr(ls, '\n') + 1;
  }
  /* work = tiles; split: times the slice count where the sizes are known
   * (2 to 64), else times 64 (the grid, capped, strides over the items) */
  cg_contraction c;
  assert_true(cg_find_contraction(G->a, s, &c));
  int64_t M = product(s, c.m, c.n_m, vars), N = product(s, c.n, c.n_n, vars), Bt = product(s, c.bat, c.n_b, vars);
  int64_t work, tiles = ceil_div(M, bm) * ceil_div(N, bn) * Bt;
  assert_true(sym_eval(k->work, vars, NULL, &work));
  if (!split) assert_int_equal(work, tiles);
  else assert_true(work % tiles == 0 && work / tiles >= 2 && work / tiles <= 64);
  /* split-K's scratch at the binding: a tile of partial sums per (tile,
   * slice), none for one slice; the slices as the kernel counts them */
  int64_t scratch = cg_kernel_scratch(k, vars);
  if (!split) assert_int_equal(scratch, 0);
  else {
    int64_t per = (int64_t)bm * bn * tiles, slices = scratch / per;
    assert_int_equal(k->scratch_tile, bm * bn);
    assert_true(scratch == 0 || (scratch % per == 0 && slices >= 2 && slices <= 64));
  }
  /* parameters: the kernel's tensors, then every var axis */
  const char *sig = strstr(text, k->name);
  for (int i = 0; i < k->n_tensors; i++) {
    char tn[128]; /* the C name: dots of temporaries' names become '_' */
    snprintf(tn, sizeof tn, "%s", IR_TENSOR(G->p, k->tensors[i])->name);
    for (char *q = tn; *q; q++)
      if (*q == '.') *q = '_';
    const char *at = strstr(sig, tn);
    if (!at) fail_msg("parameter %s missing in %s", tn, k->name);
    sig = at;
  }
  for (int i = 0; i < G->p->vars.len; i++) {
    char want[128];
    snprintf(want, sizeof want, "const long long %s", IR_VAR(G->p, i)->name);
    const char *at = strstr(sig, want);
    if (!at) fail_msg("var parameter %s missing or out of order in %s", want, k->name);
    sig = at;
  }
  free(text);
  if (bm_out) *bm_out = bm;
  if (bn_out) *bn_out = bn;
}

static void test_batched_matmul(void **state) {
  (void)state;
  char *spec = slurp("specs/examples/batched_matmul.kb");
  gen G;
  generate(&G, spec, CG_PRECISION_FP32);
  assert_int_equal(G.g.n_kernels, 1);
  const cg_kernel *k = kernel_for(&G, "out");
  assert_int_equal(k->n_tensors, 3);
  const int64_t shapes[][4] = {{1, 1, 1, 1}, {3, 100, 7, 130}, {2, 4096, 4096, 4096}, {5, 17, 1000, 3}};
  int bm = 0, bn = 0;
  for (int i = 0; i < 4; i++) check_gemm(&G, k, shapes[i], &bm, &bn);
  /* var extents are taken as large: the full tile (3xTF32 warp tiles of
   * 32 x 32: 64 x 128) */
  assert_int_equal(bm, 64);
  assert_int_equal(bn, 128);
  char *text = kernel_text(&G, k);
  assert_non_null(strstr(text, "M = i, N = j, K = r, batch = z"));
  assert_non_null(strstr(text, "// out[z, i, j] = sum(r: a[z, i, r] * b[z, r, j])"));
  /* fp32: 3xTF32 on tensor cores (plainly addressed operands), the sums
   * into fp32 totals every few k-tiles; the vector K loop: A (k-contiguous)
   * in [m][k] tiles read by ldmatrix, B (n-contiguous) in [k][n] tiles read
   * a float at a time, both copied in 16-byte chunks */
  assert_non_null(strstr(text, "3xTF32 mma.sync"));
  assert_non_null(strstr(text, "A: copied in chunks of 4 along k"));
  assert_non_null(strstr(text, "B: copied in chunks of 4 along n"));
  assert_non_null(strstr(text, "kbc_ldsm4(_sA"));
  assert_non_null(strstr(text, "kbc_split_tf32_fast(_Bs"));
  assert_non_null(strstr(text, "kbc_cp_async16("));
  assert_non_null(strstr(text, "_tot[_i][_j][_q] += _acc[_i][_j][_q]"));
  assert_null(strstr(text, "fmaf("));
  free(text);
  release(&G);
  free(spec);
}

/* N = 24 output channels: a 24-wide tile, no padding to 32 or 64. */
/* fp32 contractions: 3xTF32 for plainly addressed operands and for a
 * padded operand (a convolution); KBC_CONV_FFMA=1 keeps the padded one on
 * FFMA, KBC_FP32_MMA=0 FFMA everywhere, KBC_FP32_MMA=1 3xTF32 everywhere
 * (over KBC_CONV_FFMA). */
static void test_fp32_families(void **state) {
  (void)state;
  static const char *const specs[2] = {"specs/examples/batched_matmul.kb", "tests/codegen/specs/padconv.kb"};
  static const char *const env[5][2] = {{NULL, NULL},
                                        {"KBC_FP32_MMA", "0"},
                                        {"KBC_FP32_MMA", "1"},
                                        {"KBC_CONV_FFMA", "1"},
                                        {"KBC_CONV_FFMA", "0"}};
  /* [env][spec]: 1 when 3xTF32 */
  static const int want[5][2] = {{1, 1}, {0, 0}, {1, 1}, {1, 0}, {1, 1}};
  for (int e = 0; e < 5; e++)
    for (int i = 0; i < 2; i++) {
      char *spec = slurp(specs[i]);
      gen G;
      if (env[e][0]) setenv(env[e][0], env[e][1], 1);
      generate(&G, spec, CG_PRECISION_FP32);
      if (env[e][0]) unsetenv(env[e][0]);
      int mma = strstr(G.src, "schedule: gemm (3xTF32") != NULL, ffma = strstr(G.src, "schedule: gemm (FFMA") != NULL;
      assert_int_equal(mma, want[e][i]);
      assert_int_equal(ffma, !want[e][i]);
      release(&G);
      free(spec);
    }
}

/* The vector K loop (gemm_vec.c): at known sizes, aligned strides get it
 * with 32-k tiles and the larger tiles; a known stride that is not a
 * multiple of 4 (K = 4095) keeps the register-staged loop; KBC_GEMM_VEC=0
 * turns it off; var axes get it with 16-k tiles; a tile whose 32-k copies
 * would take a thread more than 8 chunks (3136 x 768: 64 x 256, 2 + 8) gets
 * 16-k tiles. */
static void test_vector_loop(void **state) {
  (void)state;
#define MM_SPEC                                             \
  "kernel mm\n"                                              \
  "axis m const %d\naxis n const %d\naxis k %s\n"            \
  "input a f32[m, k]\ninput b f32[n, k]\noutput c f32[m, n]\n" \
  "c[i, j] = sum(r: a[i, r] * b[j, r])\n"
  static const struct {
    int m, n;
    const char *k, *env;
    int vec, bk;
  } cases[] = {{512, 1024, "const 4096", NULL, 1, 32}, {512, 1024, "const 4095", NULL, 0, 16},
               {512, 1024, "const 4096", "0", 0, 16},  {512, 1024, "var", NULL, 1, 16},
               {3136, 768, "const 2304", NULL, 1, 16}};
  for (int i = 0; i < 5; i++) {
    char spec[512];
    snprintf(spec, sizeof spec, MM_SPEC, cases[i].m, cases[i].n, cases[i].k);
    gen G;
    if (cases[i].env) setenv("KBC_GEMM_VEC", cases[i].env, 1);
    generate(&G, spec, CG_PRECISION_FP32);
    unsetenv("KBC_GEMM_VEC");
    const cg_kernel *k = kernel_for(&G, "c");
    const int64_t vars[] = {4096};
    check_gemm(&G, k, vars, NULL, NULL);
    char *text = kernel_text(&G, k);
    assert_int_equal(strstr(text, "in 16-byte chunks") != NULL, cases[i].vec);
    const char *tile = strstr(text, "tile ");
    int bm, bn, bk;
    assert_int_equal(sscanf(tile, "tile %dx%dx%d", &bm, &bn, &bk), 3);
    assert_int_equal(bk, cases[i].bk);
    if (cases[i].vec) {
      /* both operands k-contiguous: [x][k] tiles read by ldmatrix */
      assert_non_null(strstr(text, "kbc_ldsm4(_sA"));
      assert_non_null(strstr(text, "kbc_ldsm4(_sB"));
      assert_non_null(strstr(G.src, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"));
      /* a chunk at an edge or unaligned goes a float at a time */
      assert_non_null(strstr(text, "kbc_cp_async4(_d + _e"));
      assert_true(k->smem == 3 * 4 * (bm + bn) * (bk + 4));
      /* at most 8 chunks a thread per k-tile (each a 64-bit row offset) */
      int ca = 0, cb = 0;
      assert_int_equal(sscanf(strstr(text, "A: copied"), "A: copied in chunks of 4 along k, %d", &ca), 1);
      assert_int_equal(sscanf(strstr(text, "B: copied"), "B: copied in chunks of 4 along k, %d", &cb), 1);
      assert_true(ca + cb <= 8);
    } else {
      assert_null(strstr(text, "kbc_ldsm"));
      assert_int_equal(k->smem, 0);
    }
    free(text);
    release(&G);
  }
}

static void test_conv3d_exact_n(void **state) {
  (void)state;
  char *spec = slurp("specs/conv3d_min_softmax.kb");
  /* the convolution's own GEMM (the generic plan folds the min over depth
   * into it: gemm_fold.c, tested by codegen/emu/gemm_fold*) */
  setenv("KBC_GEMM_FOLD", "0", 1);
  for (int prec = 0; prec < 2; prec++) {
    gen G;
    generate(&G, spec, prec ? CG_PRECISION_TF32 : CG_PRECISION_FP32);
    const cg_kernel *k = kernel_for(&G, "conv");
    const int64_t vars[][5] = {{128, 3, 24, 32, 32}, {1, 1, 3, 3, 3}, {2, 5, 7, 9, 11}};
    int bm, bn;
    for (int i = 0; i < 3; i++) check_gemm(&G, k, vars[i], &bm, &bn);
    assert_int_equal(bn, 24);
    char *text = kernel_text(&G, k);
    assert_non_null(strstr(text, "M = n*z*i*j, N = c, K = ci*dz*di*dj"));
    /* x is read m-contiguous through the shared k-offset table */
    assert_non_null(strstr(text, "_aqt["));
    /* conv is contiguous along m (j): stores go through shared memory */
    assert_non_null(strstr(text, "epilogue through shared memory"));
    free(text);
    /* the min over depth and the softmax read conv contiguously along j, the
     * last outer dimension, and strided along c and z: a thread per (n, i, j) */
    const cg_kernel *m = kernel_for(&G, "m");
    assert_int_equal(m->family, CG_FAMILY_ROWS);
    text = kernel_text(&G, m);
    assert_non_null(strstr(text, "schedule: rows, 3 outer dimensions, 1 thread per outer point"));
    free(text);
    release(&G);
  }
  unsetenv("KBC_GEMM_FOLD");
  free(spec);
}

static void test_tf32(void **state) {
  (void)state;
  char *spec = slurp("specs/examples/batched_matmul.kb");
  gen G;
  generate(&G, spec, CG_PRECISION_TF32);
  const cg_kernel *k = kernel_for(&G, "out");
  const int64_t vars[4] = {3, 100, 7, 130};
  check_gemm(&G, k, vars, NULL, NULL);
  char *text = kernel_text(&G, k);
  assert_non_null(strstr(text, "TF32 mma.sync m16n8k8"));
  assert_non_null(strstr(text, "kbc_mma_tf32("));
  assert_non_null(strstr(text, "kbc_tf32("));
  free(text);
  assert_non_null(strstr(G.src, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"));
  assert_non_null(strstr(G.src, "cvt.rna.tf32.f32"));
  release(&G);
  free(spec);
}

/* Every contraction of the SAM-HQ backward that became a GEMM kernel. */
static void test_sam_kernels(void **state) {
  (void)state;
  char *spec = slurp("specs/sam_hq_attn_relpos_bwd.kb");
  gen G;
  generate(&G, spec, CG_PRECISION_FP32);
  const char *want[] = {"qkv", "s", "o", "dq", "dk", "dv", "grad_hidden_states", "grad_qkv_weight"};
  for (int i = 0; i < 8; i++) assert_int_equal(kernel_for(&G, want[i])->family, CG_FAMILY_GEMM);
  const int64_t shapes[][3] = {{1, 7, 7}, {4, 64, 64}, {2, 14, 14}};
  int n = 0;
  for (int i = 0; i < G.g.n_kernels; i++) {
    const cg_kernel *k = &G.g.kernels[i];
    if (k->family != CG_FAMILY_GEMM) continue;
    n++;
    for (int j = 0; j < 3; j++) check_gemm(&G, k, shapes[j], NULL, NULL);
  }
  assert_true(n >= 8);
  /* dq's two relative-position sums are contractions of their own (the
   * hoist pass moves them out), so its epilogue has no loop */
  assert_int_equal(kernel_for(&G, "dq.red")->family, CG_FAMILY_GEMM);
  assert_int_equal(kernel_for(&G, "dq.red1")->family, CG_FAMILY_GEMM);
  char *text = kernel_text(&G, kernel_for(&G, "dq"));
  const char *epi = strstr(text, "// epilogue");
  assert_non_null(epi);
  assert_null(strstr(epi, "for (long long"));
  assert_non_null(strstr(epi, "dq_red["));
  free(text);
  release(&G);
  free(spec);
}

/* A scatter over indices its target does not use (b here) sums them first:
 * the factor pass makes that sum a contraction of its own (t.part, tiled
 * with split-K, its output a bare sum) and the gather pass turns what
 * remains into a gather over the diagonal. */
static void test_factor_scatter(void **state) {
  (void)state;
  static const char spec[] = "kernel diag\n"
                             "axis batch var\n"
                             "axis n var\n"
                             "axis d const 64\n"
                             "axis r = 2*n - 1\n"
                             "input q f32[batch, n, d]\n"
                             "input g f32[batch, n, n]\n"
                             "output t f32[r, d]\n"
                             "t[i - j + n - 1, c] += q[b, i, c] * g[b, i, j]\n";
  gen G;
  generate(&G, spec, CG_PRECISION_FP32);
  const cg_kernel *part = kernel_for(&G, "t.part");
  assert_int_equal(part->family, CG_FAMILY_GEMM);
  const int64_t shapes[][2] = {{1, 3}, {8, 40}, {64, 65}};
  for (int i = 0; i < 3; i++) check_gemm(&G, part, shapes[i], NULL, NULL);
  assert_non_null(strstr(G.src, "// t.part[i, j, c] = sum(b: q[b, i, c] * g[b, i, j])"));
  const cg_kernel *t = kernel_for(&G, "t");
  assert_int_equal(t->family, CG_FAMILY_ROWS); /* a gather, no atomics */
  char *text = kernel_text(&G, t);
  assert_non_null(strstr(text, "t_part["));
  assert_null(strstr(text, "atomicAdd"));
  free(text);
  release(&G);
}

static int index_id(const ir_stmt *s, const char *name) {
  for (int i = 0; i < s->n_index; i++)
    if (!strcmp(s->index[i].name, name)) return i;
  fail_msg("no index '%s'", name);
  return -1;
}

/* The flat offset of the load of tensor `name` in e. */
static sym *load_offset(kbc_arena *a, const ir_expr *e, const char *name) {
  if (e->op == IR_OP_LOAD && !strcmp(e->u.load.tensor->name, name))
    return ir_flat_offset(a, e->u.load.tensor, e->u.load.idx);
  for (int i = 0; i < ir_op_info[e->op].arity; i++) {
    sym *o = load_offset(a, e->arg[i], name);
    if (o) return o;
  }
  return NULL;
}

/* cg_collapse: an offset that depends on (y, x) only through y*w + x is
 * rewritten over the flat coordinate (checked by evaluating it at every
 * point of a small binding); one that uses y alone, or indices that are not
 * a flattening, is not. */
static void test_collapse(void **state) {
  (void)state;
  static const char spec[] = "kernel flat\n"
                             "axis h var\n"
                             "axis w var\n"
                             "input a f32[h, w, 4]\n"
                             "input r f32[h, 4]\n"
                             "output o f32[h, w, 4]\n"
                             "o[y, x, c] = a[y, x, c] + r[y, c]\n";
  gen G;
  generate(&G, spec, CG_PRECISION_FP32);
  const ir_stmt *st = IR_STMT(G.p, 0);
  int y = index_id(st, "y"), x = index_id(st, "x"), c = index_id(st, "c");
  sym *oa = load_offset(G.a, st->rhs, "a"), *orr = load_offset(G.a, st->rhs, "r");
  assert_non_null(oa);
  assert_non_null(orr);
  const int yx[] = {y, x}, xc[] = {x, c}, yc[] = {y, c};
  sym *flat = cg_collapse(G.a, st, oa, yx, 2);
  assert_non_null(flat);
  assert_non_null(cg_collapse(G.a, st, oa, xc, 2)); /* x*4 + c: the flattening of (x, c) too */
  assert_null(cg_collapse(G.a, st, oa, yc, 2));     /* y and c are not neighbours */
  assert_null(cg_collapse(G.a, st, orr, yx, 2));    /* y alone */
  assert_null(cg_collapse(G.a, st, orr, xc, 2));    /* c without x */
  const int64_t axes[2] = {3, 5}; /* h, w */
  for (int64_t vy = 0; vy < 3; vy++)
    for (int64_t vx = 0; vx < 5; vx++)
      for (int64_t vc = 0; vc < 4; vc++) {
        int64_t at[3] = {0}, want, got;
        at[y] = vy, at[x] = vx, at[c] = vc;
        assert_true(sym_eval(oa, axes, at, &want));
        at[y] = 0, at[x] = vy * 5 + vx; /* x stands for the flat coordinate */
        assert_true(sym_eval(flat, axes, at, &got));
        assert_int_equal(got, want);
      }
  release(&G);
}

/* Flat spaces in the SAM-HQ kernels: K = ky*kx read through the flat k (no
 * k table) where a thread's loads cover few k, the table where they cover
 * many (dk: all 16 k of a row); the rows of s not decoded, its columns
 * decoded once per run and carried (rel_h and rel_w need ky and kx). */
static void test_flat_spaces(void **state) {
  (void)state;
  char *spec = slurp("specs/sam_hq_attn_relpos_bwd.kb");
  gen G;
  setenv("KBC_FP32_MMA", "0", 1); /* the FFMA tiles' load plans */
  generate(&G, spec, CG_PRECISION_FP32);
  unsetenv("KBC_FP32_MMA");
  char *o = kernel_text(&G, kernel_for(&G, "o"));
  assert_non_null(strstr(o, "addressed through the flat k"));
  assert_null(strstr(o, "_aqt"));
  assert_null(strstr(o, "% width"));
  char *dk = kernel_text(&G, kernel_for(&G, "dk"));
  assert_non_null(strstr(dk, "_aqt["));
  char *sk = kernel_text(&G, kernel_for(&G, "s"));
  assert_non_null(strstr(sk, "A rows this thread loads (y*x = _m0 + local row), addressed through the flat row"));
  const char *epi = strstr(sk, "// epilogue");
  assert_non_null(epi);
  assert_non_null(strstr(epi, "const float _h0 = scale[0];"));
  assert_non_null(strstr(epi, "the previous column plus one"));
  assert_null(strstr(epi, "long long y, x;"));
  free(o);
  free(dk);
  free(sk);
  release(&G);
  free(spec);
}

/* A projection of a few rows with a long reduction: rows, a team per element. */
static void test_projection_goes_to_rows(void **state) {
  (void)state;
  static const char spec[] = "kernel proj\n"
                             "axis batch var\n"
                             "axis d_in const 32768\n"
                             "axis d_out const 128\n"
                             "input x f32[batch, d_in]\n"
                             "input w f32[d_out, d_in]\n"
                             "output y f32[batch, d_out]\n"
                             "y[b, o] = sum(e: x[b, e] * w[o, e])\n";
  gen G;
  generate(&G, spec, CG_PRECISION_FP32);
  const cg_kernel *k = kernel_for(&G, "y");
  assert_int_equal(k->family, CG_FAMILY_ROWS);
  assert_non_null(strstr(G.src, "256 threads per outer point"));
  release(&G);
}

/* The 32-bit index variant: every long long but unsigned long long made
 * int, LL dropped from integer literals only, the rest untouched; and of a
 * whole workload, no 64-bit index left but the alignment tests. */
static void test_narrow_indices(void **state) {
  (void)state;
  kbc_buf out = {0};
  cg_narrow_indices("const long long _M = 12LL*b + 0x7fLL; // long long\n"
                    "float v1LL = 1.0f; unsigned long long p = (unsigned long long)q & 15ULL; longer long longx;\n"
                    "long long x = (long long)_t * 64LL;",
                    &out);
  const char *want = "// 32-bit index variant: launched only where every index of the binding fits in an int.\n"
                     "const int _M = 12*b + 0x7f; // int\n"
                     "float v1LL = 1.0f; unsigned long long p = (unsigned long long)q & 15ULL; longer long longx;\n"
                     "int x = (int)_t * 64;";
  assert_string_equal(kbc_buf_str(&out), want);
  kbc_buf_free(&out);

  char *spec = slurp("specs/sam_hq_attn_relpos_bwd.kb");
  gen G;
  generate(&G, spec, CG_PRECISION_FP32);
  cg_program_narrow(&G.g);
  const char *src = kbc_buf_str(&G.g.source);
  int wide = 0;
  for (const char *c = src; (c = strstr(c, "long long")); c++) wide += c < src + 9 || strncmp(c - 9, "unsigned ", 9);
  assert_int_equal(wide, 0);
  assert_non_null(strstr(src, "const int batch_size,"));
  /* SAM-HQ's largest benchmark shape fits (its S x S tensors hold 805M
   * elements), twice its batch does not */
  int64_t vars[3];
  for (int i = 0; i < G.p->vars.len; i++) {
    const char *n = IR_VAR(G.p, i)->name;
    vars[i] = !strcmp(n, "batch_size") ? 4 : 64;
  }
  ir_binding B;
  assert_true(ir_bind(G.p, G.a, vars, &B, G.d));
  assert_true(ir_binding_fits_i32(G.p, &B));
  for (int i = 0; i < G.p->vars.len; i++)
    if (!strcmp(IR_VAR(G.p, i)->name, "batch_size")) vars[i] = 8;
  assert_true(ir_bind(G.p, G.a, vars, &B, G.d));
  assert_false(ir_binding_fits_i32(G.p, &B));
  release(&G);
  free(spec);
}

static void test_deterministic(void **state) {
  (void)state;
  const char *specs[] = {"specs/sam_hq_attn_relpos_bwd.kb", "specs/conv3d_min_softmax.kb", "specs/cvit.kb"};
  for (int i = 0; i < 3; i++) {
    char *spec = slurp(specs[i]);
    for (int prec = 0; prec < 2; prec++) {
      gen G1, G2;
      generate(&G1, spec, prec ? CG_PRECISION_TF32 : CG_PRECISION_FP32);
      generate(&G2, spec, prec ? CG_PRECISION_TF32 : CG_PRECISION_FP32);
      assert_string_equal(G1.src, G2.src);
      release(&G1);
      release(&G2);
    }
    free(spec);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_batched_matmul),
      cmocka_unit_test(test_fp32_families),
      cmocka_unit_test(test_vector_loop),
      cmocka_unit_test(test_conv3d_exact_n),
      cmocka_unit_test(test_tf32),
      cmocka_unit_test(test_sam_kernels),
      cmocka_unit_test(test_factor_scatter),
      cmocka_unit_test(test_projection_goes_to_rows),
      cmocka_unit_test(test_collapse),
      cmocka_unit_test(test_flat_spaces),
      cmocka_unit_test(test_deterministic),
      cmocka_unit_test(test_narrow_indices),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
