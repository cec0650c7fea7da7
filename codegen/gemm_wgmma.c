/* gemm_wgmma.c — the tiled contraction's wgmma K loop (sm_90a).
 *
 * Before: a vector-loop plan (gemm_vec.c) whose operands are both k-major
 * (copied in 16-byte chunks along k), on tensor cores (TF32 or 3xTF32), for
 * a target with sm_90a's features.  After gemm_wgmma_plan(): the plan's
 * tile (two warpgroups, each a 64 x BN / wgn block of wgmma m64nNk8
 * products; for an output-bound product one of which two blocks fit a
 * multiprocessor, plan->occ), k-tiles of 32, its stages; printed from it
 * the helpers, the chunks' places in a stage, the warpgroup coordinates
 * and the K loop.
 *
 * The stages are in the 128-byte swizzle that wgmma reads without bank
 * conflicts: a tile row is one k-tile of one m (or n), 32 floats = 128
 * bytes, and its 16-byte chunk c (k 4c .. 4c + 3) lies at byte
 * r * 128 + (c ^ r % 8) * 16; eight rows form a 1024-byte atom, so the
 * stages start 1024-byte aligned.  A warp's 32 chunks are four whole rows:
 * 128-byte global reads, conflict-free shared writes.  A descriptor names
 * the atom rows' start (k step kk: + 4 kk bytes), atoms 1024 bytes apart.
 * Without the swizzle (core matrices in order) the same loop ran at 72
 * TFLOP/s, with it at 357 (bench/micro/gemm_wgmma.cu, docs/GEMM_WGMMA.md).
 *
 * The loop keeps one batch of wgmma in flight: k-tile kt's products are
 * issued and the copies of k-tile kt + S - 2 (TF32; 3xTF32 the other way
 * round), then the products of kt - 1 waited for; so the copies run S - 2
 * k-tiles ahead (the stage of kt - 1 may still be read).  Measured on the
 * H200: with the copies first, 3xTF32 at 4096^3 1,898 us against 2,164
 * with the products first (2026-12-03); TF32 387 against 393 once the
 * copies were lean (2026-12-04).  The tensor cores read
 * fp32 operands as TF32 by ignoring the low 13 mantissa bits (truncation),
 * so after a stage lands each thread passes over the chunks it copied:
 * TF32 rounds them in place to nearest, as the mma.sync loops do (the
 * truncation's bias toward zero measured 5x the error; the pass's shared
 * traffic costs 1.45-1.72x at 4096^3 on the H200, and done one k-tile
 * ahead, during the products before, 1.02-1.04x more: docs/GEMM_WGMMA.md,
 * "TF32 rounding on wgmma"); 3xTF32 (fp32)
 * writes their low parts x - (x & ~0x1fff) into a second half of the stage: three products per k
 * step (A low x B, A x B low, A x B) into the accumulators, which are
 * added into fp32 totals every 64 k, as the mma.sync loops do (the tensor
 * cores' sums round toward zero).  The accumulators are pinned (an empty
 * asm that reads and writes them) around every batch and wait, so that no
 * other instruction touches them while a batch is in flight (ptxas would
 * otherwise serialize the wgmma, C7514).
 *
 * Two switches, off until timed: opt.gemm_xprefetch copies all of a known
 * K's k-tiles before the loop where they fit the stages, and the block's
 * next tile's first k-tiles before this tile's epilogue
 * (gemm_wgmma_ahead, gemm_wgmma_prefetches); opt.gemm_areg takes A from
 * registers, each thread's fragments loaded from the stage and split or
 * rounded there (emit_a_fragments), two sets alternating with the
 * k-tiles. */
#include <math.h>
#include <string.h>

#include "gemm_impl.h"

enum { WG_BK = 32, WG_ROW = 4 * WG_BK, WG_MAX_STAGES = 6 };

/* ---- the plan ------------------------------------------------------------- */

typedef struct {
  int bm, bn, wgn;
} wg_tile;

static double tile_count(const gemm_shape *sh, const wg_tile *w) {
  return ceil(sh->m / w->bm) * ceil(sh->n / w->bn) * sh->batch;
}

/* The tile by a small model: padding waste along m, n and k; the operand
 * reuse of the tile (outputs per element loaded, 2 bm bn / (bm + bn), whose
 * 128 x 256 measured 1.4x the 128 x 128's throughput: 357 against 253
 * TFLOP/s at 4 stages); a wave of one block per multiprocessor (split-K
 * adds slices where it may). */
static double tile_score(const cg_target *t, const gemm_shape *sh, const wg_tile *w) {
  double m = fmin(sh->m, w->bm), n = fmin(sh->n, w->bn);
  double inner = fmin(1.0, 2.0 * m * n / (m + n) / 170.0);
  double par = fmin(1.0, tile_count(sh, w) * gemm_slices(sh, WG_BK) / t->sm_count);
  return gemm_util(sh->m, w->bm) * gemm_util(sh->n, w->bn) * gemm_util(sh->k, WG_BK) * inner * par;
}

/* A stage of a bm x bn tile (3xTF32: the low parts' half besides), and the
 * stages that fit beside `fixed` bytes (at most WG_MAX_STAGES). */
static int stage_bytes(int bm, int bn, int split3) { return (bm + bn) * WG_ROW * (split3 ? 2 : 1); }
static int stages_fitting(const cg_target *t, int stage, int fixed) {
  int stages = (t->smem_per_block - GEMM_WGMMA_ALIGN - fixed) / stage;
  return stages > WG_MAX_STAGES ? WG_MAX_STAGES : stages;
}

int gemm_wgmma_stage_bytes(const cg_gemm_plan *plan) {
  const gemm_cfg *f = &plan->tiling.cfg;
  return stage_bytes(f->bm, f->bn, plan->tiling.split3);
}

/* An output-bound product (opt.gemm_occ): sizes known and K x passes (3
 * at 3xTF32) at most WG_OUT_K, where a tile's stores outweigh its
 * products.  By the H100's rates (DRAM about 3 TB/s, wgmma about 357
 * TFLOP/s of TF32: 23 GB/s and 2.7 TFLOP/s a multiprocessor) a tile's 4 bm
 * bn bytes out take as long as its 2 bm bn K passes flops at K x passes
 * near 240.  One block a multiprocessor does the two one after the other
 * (SAM-HQ's scores, K = 64 at 3xTF32: dp stores 3.2 GB at 1.5 TB/s); two
 * overlap one's stores with the other's copies and products. */
enum { WG_OUT_K = 240, WG_OCC_REGS = 64 };
static int output_bound(const cg_target *t, const gemm_tiling *tl) {
  int64_t K;
  if (!t->opt.gemm_occ || !sym_is_const(tl->M, NULL) || !sym_is_const(tl->N, NULL) || !sym_is_const(tl->B, NULL) ||
      !sym_is_const(tl->K, &K))
    return 0;
  return t->opt.gemm_occ == 2 || K * (tl->split3 ? 3 : 1) <= WG_OUT_K;
}

/* Whether two blocks of tile w fit a multiprocessor: the stages the ring
 * touches (K known: at most ceil(K / 32)) twice in its shared memory (each
 * block 1 KB more reserved), and the accumulators (3xTF32: and their
 * totals) at most WG_OCC_REGS a thread under the 128-register cap. */
static int two_fit(const cg_target *t, const gemm_tiling *tl, const wg_tile *w, int64_t K) {
  int stage = stage_bytes(w->bm, w->bn, tl->split3), stages = stages_fitting(t, stage, 0);
  if (stages < 3) return 0;
  int ring = gemm_ring(stages, K, WG_BK), acc = w->bn / w->wgn / 2 * (tl->split3 ? 2 : 1);
  return 2 * (ring * stage + GEMM_WGMMA_ALIGN + GEMM_SMEM_RESERVED) <= t->smem_per_block + GEMM_SMEM_RESERVED &&
         acc <= WG_OCC_REGS;
}

int gemm_wgmma_plan(kbc_arena *a, const cg_target *t, cg_gemm_plan *v) {
  if (!t->arch_a || t->sm < 90 || !t->opt.gemm_wgmma) return 0;
  /* 3xTF32 holds totals beside the accumulators: 64 x 128 a warpgroup at most */
  static const wg_tile tf32[] = {{128, 256, 1}, {128, 128, 1}, {64, 256, 2}, {128, 64, 1}, {64, 128, 2}};
  static const wg_tile split3[] = {{128, 128, 1}, {64, 256, 2}, {128, 64, 1}, {64, 128, 2}};
  const wg_tile *c = v->tiling.split3 ? split3 : tf32;
  int n = v->tiling.split3 ? 4 : 5, best = -1;
  double best_score = -1;
  /* an output-bound product: the best tile of those that run two blocks a
   * multiprocessor, where one does */
  int64_t K = 0;
  /* (an A computed from its load needs A from registers, which two-block
   * tiles do not take) */
  int occ = output_bound(t, &v->tiling) && sym_is_const(v->tiling.K, &K) && !v->op[0].xform;
  for (int pass = occ ? 0 : 1; pass < 2 && best < 0; pass++)
    for (int i = 0; i < n; i++) {
      if (pass == 0 && !two_fit(t, &v->tiling, &c[i], K)) continue;
      double sc = tile_score(t, &v->tiling.shape, &c[i]);
      if (sc > best_score + 1e-9) best_score = sc, best = i;
    }
  /* Products too small to fill a wave of these tiles, or of one k-tile,
   * keep the mma.sync loop, whose smaller tiles run two blocks a
   * multiprocessor: on the H200 (2026-12-03) CViT at batch 10 took 300 us
   * with wgmma for its linears against 166, and 512 x 3072 x 768 62 against
   * 53 (docs/GEMM_WGMMA.md). */
  const gemm_shape *sh = &v->tiling.shape;
  int fills = tile_count(sh, &c[best]) * gemm_slices(sh, WG_BK) >= t->sm_count;
  if (t->opt.gemm_wgmma == 3) best = 0; /* testing: the largest tile (KBC_GEMM_WGMMA=3) */
  occ = occ && two_fit(t, &v->tiling, &c[best], K);
  if (t->opt.gemm_wgmma == 1 && (!fills || sh->k < 2 * WG_BK)) return 0;
  /* planned on a copy: v is left as it was where the tile does not fit
   * (3xTF32's 64 x 256: two stages) or an x-major operand is not taken */
  cg_gemm_plan w = *v;
  gemm_cfg *f = &w.tiling.cfg;
  *f = (gemm_cfg){.mma = 1, .bm = c[best].bm, .bn = c[best].bn, .bk = WG_BK, .sa = c[best].bm, .sb = c[best].bn,
                  .wm = 4 * (2 / c[best].wgn), .wn = c[best].wgn, .mi = 1, .ni = c[best].bn / c[best].wgn / 8};
  w.wgn = c[best].wgn;
  /* (a gathered operand's k table is static shared memory beside them) */
  int stages = stages_fitting(t, gemm_wgmma_stage_bytes(&w), gemm_ktab_bytes(&w));
  if (stages < 3) return 0;
  if (gemm_ktab_bytes(&w)) occ = 0; /* (two_fit counts the stages alone) */
  w.op[0].bx = f->bm;
  w.op[1].bx = f->bn;
  gemm_count_tiles(a, &w.tiling);
  /* an x-major operand: packed k-major before the launch where that pays
   * (gemm_pack.c; a misaligned k-major one always), else copied a float at a time, transposed — under
   * opt.gemm_wgmma_t 2 at tf32, and at fp32 for one such operand but not
   * two: on the H100 (2026-12-05) 4096^3 tf32 0.49x mma.sync's time, a^T b
   * (both) tf32 0.74x but fp32 1.21x, a @ b fp32 0.96x (the default since
   * the GPU fuzzer's wgmma_t variants passed) */
  for (int i = 0; i < 2; i++)
    if ((!w.op[i].kmajor || w.op[i].misaligned) && !w.op[i].gather) gemm_pack_plan(a, t, &w, i);
  /* (a gathered operand, k-major or not: a float at a time, transposed) */
  int transposed = (!w.op[0].kmajor || w.op[0].gather) + (!w.op[1].kmajor || w.op[1].gather);
  int take_t = t->opt.gemm_wgmma_t == 1 || (t->opt.gemm_wgmma_t == 2 && (!w.tiling.split3 || transposed < 2));
  if (transposed && !take_t) return 0;
  for (int i = 0; i < 2; i++) {
    w.op[i].tr = !w.op[i].kmajor || w.op[i].gather;
    w.op[i].trv = w.op[i].tr && gemm_trv_ok(a, t, &w, &w.op[i]);
    gemm_vec_plan(a, &w.op[i], WG_BK);
  }
  w.stages = stages;
  w.wgmma = 1;
  w.occ = occ ? 2 : 0;
  /* A from registers (opt.gemm_areg): 1 where a warpgroup's products are
   * at most 64 wide (A's reads then half their shared-memory traffic:
   * SAM-HQ's o, dq, dv and dk), 2 at every width; not on two-block tiles,
   * whose 128 registers its 32 fragment registers would make spill
   * (SAM-HQ's dp: 120 bytes); an A computed from its load at every width
   * (the function applied to the fragments: gemm_xform.c) */
  int wn = c[best].bn / c[best].wgn;
  w.areg = !w.occ && (t->opt.gemm_areg == 2 || (t->opt.gemm_areg == 1 && (wn <= 64 || w.op[0].xform)));
  *v = w;
  return 1;
}

int gemm_trv_ok(kbc_arena *a, const cg_target *t, const cg_gemm_plan *plan, const gemm_operand *o) {
  return plan->tiling.split3 && t->opt.gemm_tr_vec && !o->gather && gemm_vec_operand_ok(a, plan, o) == 1;
}

/* ---- operands rounded before the launch ----------------------------------- */

/* Whether operand copies pay: the stage pass reads and writes each float of
 * an operand's tiles once per tile, the copy the tensor's floats once, and
 * costs a launch.  Rates from the H200 (2026-12-05, docs/GEMM_WGMMA.md,
 * "TF32 rounding on wgmma"): at 4096^3 the passes move 6.4 GB through
 * shared memory and cost 250 us (about 25 TB/s); a copy streams at about
 * 3 TB/s; a launch, about 3 us in a graph. */
static int prep_pays(const cg_target *t, double pass_floats, double numel) {
  if (t->opt.gemm_prep == 2) return 1;
  double pass_us = pass_floats * 8 / 25e6, copy_us = numel * 8 / 3e6 + 3;
  return pass_us > copy_us;
}

void gemm_wgmma_prep(kbc_arena *a, const cg_target *t, cg_gemm_plan *plan, cg_kernel *k) {
  if (!plan->wgmma) return;
  const gemm_tiling *tl = &plan->tiling;
  double tiles = ir_estimate(tl->tiles), K = ir_estimate(tl->K);
  for (int w = 0; w < 2; w++) {
    const gemm_operand *o = &plan->op[w];
    if (o->pack) { /* its own copy, always (gemm_pack.c) */
      int i = k->n_prep++;
      k->prep[i] = o->e->u.load.tensor->id;
      k->prep_pack[i] = w + 1;
      /* (an A computed from its load is rounded after its function, where loaded) */
      k->prep_round[i] = !tl->split3 && !o->xform;
      k->prep_floats[i] = sym_scale(a, sym_div(a, sym_add(a, o->pack_floats, sym_const(a, 31)), 32), 32);
      k->prep_tiles[i] = o->pack_tiles;
      plan->copy_of[w] = i + 1;
      plan->prep[w] = k->prep_round[i];
      continue;
    }
    if (tl->split3 || !t->opt.gemm_prep || o->e->op != IR_OP_LOAD || o->xform) continue;
    const ir_tensor *T = o->e->u.load.tensor;
    sym *numel = sym_const(a, 1);
    for (int d = 0; d < T->rank; d++) numel = sym_mul(a, numel, T->shape[d]);
    if (!prep_pays(t, tiles * (w ? tl->cfg.bn : tl->cfg.bm) * K, ir_estimate(numel))) continue;
    plan->prep[w] = 1;
    int i = 0;
    while (i < k->n_prep && (k->prep[i] != T->id || k->prep_pack[i])) i++;
    plan->copy_of[w] = i + 1;
    if (i < k->n_prep) continue; /* both operands one tensor: one copy */
    k->prep[k->n_prep] = T->id;
    k->prep_round[k->n_prep] = 1;
    k->prep_floats[k->n_prep++] = sym_scale(a, sym_div(a, sym_add(a, numel, sym_const(a, 31)), 32), 32);
  }
}

const char *gemm_copy_at(cg_emit *E, const cg_kernel *k, int i) {
  const char *at = "_ws";
  for (int j = 0; j < i; j++) at = cg_fmt(E, "%s + (size_t)(%s)", at, cg_sym(E, k->prep_floats[j]));
  return at;
}

void gemm_wgmma_sources(gemm_emitter *ge, const cg_kernel *k) {
  const cg_gemm_plan *plan = ge->plan;
  const char **copy = KBC_NEW_ARRAY(ge->emit.a, const char *, k->n_prep + 1);
  for (int i = 0; i < k->n_prep; i++) {
    copy[i] = cg_fmt(&ge->emit, "_cp%d", i);
    const char *tname = IR_TENSOR(ge->ctx->p, k->prep[i])->name;
    cg_line(&ge->emit, "const float *const _cp%d = %s; // %s", i, gemm_copy_at(&ge->emit, k, i),
            k->prep_pack[i] ? cg_fmt(&ge->emit, "%c: %s packed k-major%s before the launch (%s)",
                                     k->prep_pack[i] == 1 ? 'A' : 'B', tname, k->prep_round[i] ? ", rounded to TF32," : "",
                                     kbc_arena_printf(ge->emit.a, CG_PACK_NAME, k->name, i))
                            : cg_fmt(&ge->emit, "%s rounded to TF32 before the launch (kbc_tf32_copy)", tname));
  }
  if (k->n_prep && plan->split)
    cg_line(&ge->emit, "float *const _kws = %s; // split-K's parts", gemm_copy_at(&ge->emit, k, k->n_prep));
  for (int w = 0; w < 2; w++) {
    const ir_expr *e = plan->op[w].e;
    ge->src[w] = plan->copy_of[w] ? copy[plan->copy_of[w] - 1]
                 : e && e->op == IR_OP_LOAD ? ge->ctx->names->tensor[e->u.load.tensor->id]
                                            : NULL;
  }
}

/* ---- the helpers ---------------------------------------------------------- */

static const char wgmma_helpers[] =
    "#ifndef KBC_WGMMA_HELPERS\n"
    "#define KBC_WGMMA_HELPERS\n"
    "// wgmma (sm_90a): a shared-memory descriptor of a K-major tile in the 128-byte swizzle\n"
    "// (start address a, 8-row atoms 1024 bytes apart); the fence before a batch, its commit, the\n"
    "// wait until at most N batches are in flight; shared writes made visible to wgmma; an\n"
    "// accumulator register pinned (no other instruction may touch it while wgmma are in flight).\n"
    "__device__ __forceinline__ unsigned long long kbc_wgmma_desc(unsigned a) {\n"
    "  return (unsigned long long)((a & 0x3ffffu) >> 4) | 0x4000004000010000ull;\n"
    "}\n"
    "__device__ __forceinline__ void kbc_wgmma_fence() { asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\"); }\n"
    "__device__ __forceinline__ void kbc_wgmma_commit() { asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\"); }\n"
    "template <int N> __device__ __forceinline__ void kbc_wgmma_wait() {\n"
    "  asm volatile(\"wgmma.wait_group.sync.aligned %0;\" ::\"n\"(N) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void kbc_fence_proxy_async() { asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\"); }\n"
    "__device__ __forceinline__ void kbc_wgmma_pin(float &r) { asm volatile(\"\" : \"+f\"(r)::\"memory\"); }\n"
    "// Floats of a stage rounded to TF32 in place, to nearest, ties away from zero: 0x1000 added to\n"
    "// the bits of a finite float, whose low 13 bits wgmma then ignores; infinities and NaNs left as\n"
    "// they are (a NaN with its mantissa all ones, as the GPU makes them, would carry into the sign).\n"
    "// The amount is min(~x & 0x7f800000, 0x1000): 0 where the exponent is all ones.  Three\n"
    "// instructions a float, no predicate (cvt.rna: a test, a predicated add and a mask); the 16\n"
    "// bytes at shared address a, or the floats at a, b, c, d, or at a; one asm each, so that a\n"
    "// thread holds at most four of them beside its accumulators.\n"
    "#define KBC_TF32_ROUND_BITS(v, m) \\\n"
    "  \"not.b32 \" m \", \" v \"; and.b32 \" m \", \" m \", 0x7f800000; min.u32 \" m \", \" m \", 4096; add.u32 \" v \", \" v \", \" m \"; \"\n"
    "__device__ __forceinline__ void kbc_tf32_round16(unsigned a) {\n"
    "  asm volatile(\"{ .reg .b32 x, y, z, w, mx, my, mz, mw; ld.shared.v4.b32 {x, y, z, w}, [%0]; \"\n"
    "               KBC_TF32_ROUND_BITS(\"x\", \"mx\") KBC_TF32_ROUND_BITS(\"y\", \"my\") KBC_TF32_ROUND_BITS(\"z\", \"mz\")\n"
    "               KBC_TF32_ROUND_BITS(\"w\", \"mw\") \"st.shared.v4.b32 [%0], {x, y, z, w}; }\" ::\"r\"(a) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void kbc_tf32_round4(unsigned a, unsigned b, unsigned c, unsigned d) {\n"
    "  asm volatile(\"{ .reg .b32 x, y, z, w, mx, my, mz, mw; ld.shared.b32 x, [%0]; ld.shared.b32 y, [%1]; \"\n"
    "               \"ld.shared.b32 z, [%2]; ld.shared.b32 w, [%3]; \" KBC_TF32_ROUND_BITS(\"x\", \"mx\")\n"
    "               KBC_TF32_ROUND_BITS(\"y\", \"my\") KBC_TF32_ROUND_BITS(\"z\", \"mz\") KBC_TF32_ROUND_BITS(\"w\", \"mw\")\n"
    "               \"st.shared.b32 [%0], x; st.shared.b32 [%1], y; st.shared.b32 [%2], z; st.shared.b32 [%3], w; }\"\n"
    "               ::\"r\"(a), \"r\"(b), \"r\"(c), \"r\"(d) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void kbc_tf32_round1(unsigned a) {\n"
    "  asm volatile(\"{ .reg .b32 x, mx; ld.shared.b32 x, [%0]; \" KBC_TF32_ROUND_BITS(\"x\", \"mx\")\n"
    "               \"st.shared.b32 [%0], x; }\" ::\"r\"(a) : \"memory\");\n"
    "}\n"
    "#endif\n\n";

/* d (64 x n, n / 2 floats a thread) += A (64 x 8) B (8 x n), TF32: both
 * tiles in shared memory, or (areg: kbc_wgmma_rnN) A from registers, this
 * thread's fragment a0 .. a3 of its warp's 16 rows as mma.sync m16n8k8's
 * A: rows g and g + 8 at k t (a0, a1), the same at k t + 4 (a2, a3). */
static void product_helper(kbc_buf *out, int n, int areg) {
  int r = n / 2, na = areg ? 4 : 1; /* A's operands: four registers, or a descriptor */
  const char *name = areg ? "RN" : "N";
  kbc_buf_printf(out, "#ifndef KBC_WGMMA_%s%d\n#define KBC_WGMMA_%s%d\n", name, n, name, n);
  if (areg)
    kbc_buf_printf(out,
                   "// d (64 x %d, %d floats a thread) += A (64 x 8, this thread's a0 .. a3: rows g and g + 8 of its\n"
                   "// warp's 16 at k t, then at k t + 4) B (8 x %d, from shared memory), TF32.\n"
                   "__device__ __forceinline__ void kbc_wgmma_rn%d(float *d, unsigned a0, unsigned a1, unsigned a2, unsigned a3,\n"
                   "                                              unsigned long long b) {\n",
                   n, r, n, n);
  else
    kbc_buf_printf(out,
                   "// d (64 x %d, %d floats a thread) += A (64 x 8) B (8 x %d), TF32, both from shared memory.\n"
                   "__device__ __forceinline__ void kbc_wgmma_n%d(float *d, unsigned long long a, unsigned long long b) {\n",
                   n, r, n, n);
  kbc_buf_printf(out, "  asm volatile(\"{ .reg .pred p; setp.ne.b32 p, %%%d, 0; \"\n", r + na + 1);
  kbc_buf_printf(out, "               \"wgmma.mma_async.sync.aligned.m64n%dk8.f32.tf32.tf32 {", n);
  for (int i = 0; i < r; i++) kbc_buf_printf(out, "%s%%%d", i ? ", " : "", i);
  if (areg) kbc_buf_printf(out, "}, {%%%d, %%%d, %%%d, %%%d}", r, r + 1, r + 2, r + 3);
  else kbc_buf_printf(out, "}, %%%d", r);
  kbc_buf_printf(out, ", %%%d, p, 1, 1; }\"\n               :", r + na);
  for (int i = 0; i < r; i++) kbc_buf_printf(out, "%s\"+f\"(d[%d])", i ? ", " : " ", i);
  kbc_buf_printf(out, "\n               : %s\"l\"(b), \"r\"(1));\n}\n#endif\n\n",
                 areg ? "\"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), " : "\"l\"(a), ");
}

void gemm_wgmma_helpers(kbc_buf *out, const cg_gemm_plan *plan) {
  kbc_buf_puts(out, wgmma_helpers);
  product_helper(out, plan->tiling.cfg.bn / plan->wgn, 0);
  if (plan->areg) product_helper(out, plan->tiling.cfg.bn / plan->wgn, 1);
}

/* ---- emission ------------------------------------------------------------- */

/* Byte offsets in a stage: A's tile, B's, and (3xTF32) the low parts' half. */
static int tile_at(const cg_gemm_plan *plan, const gemm_operand *o) { return o->tag == 'a' ? 0 : plan->tiling.cfg.bm * WG_ROW; }
static int half_at(const cg_gemm_plan *plan) { return (plan->tiling.cfg.bm + plan->tiling.cfg.bn) * WG_ROW; }

/* The byte offset in stage `stage` of o's element (or 16-byte chunk) at
 * local x, k in its K-major swizzled tile (transposed: the float in the
 * chunk too). */
static const char *place(gemm_emitter *ge, const gemm_operand *o, const char *x, const char *k, const char *stage) {
  return cg_fmt(&ge->emit, "(unsigned)((%s) * %d + %d + (%s) * %d + ((((%s) / 4) ^ ((%s) %% 8)) * 16)%s)", stage,
                gemm_wgmma_stage_bytes(ge->plan), tile_at(ge->plan, o), x, WG_ROW, k, x,
                o->tr ? cg_fmt(&ge->emit, " + ((%s) %% 4) * 4", k) : "");
}

/* Where chunk slot j of o is copied: its place, or (trv) its slot in the
 * low half's [k][x] staging, chunk c of row k at (c ^ 2 (k % 4)) * 16. */
const char *gemm_wgmma_chunk_off(gemm_emitter *ge, const gemm_operand *o, int j, const char *stage) {
  if (o->trv)
    return cg_fmt(&ge->emit, "(unsigned)((%s) * %d + %d + (%s) * %d + ((((%s) / 4) ^ ((%s) %% 4 * 2)) * 16))", stage,
                  gemm_wgmma_stage_bytes(ge->plan), half_at(ge->plan) + tile_at(ge->plan, o), o->kl[j], 4 * o->bx,
                  o->xl[j], o->kl[j]);
  return place(ge, o, o->xl[j], o->kl[j], stage);
}

/* The byte offset in stage `stage` of A's float at tile row x, k-tile
 * column k, where the A fragments are loaded from (plan->areg): its
 * K-major place, or a trv operand's slot in the low half's [k][x]
 * staging.  A warp's 32 loads of one fragment element (rows g, k t) hit 32
 * banks either way: the K-major rows' 16-byte chunks XOR g, the staging's
 * XOR 2 (k % 4). */
static const char *areg_at(gemm_emitter *ge, const char *x, const char *k, const char *stage) {
  const gemm_operand *o = &ge->plan->op[0];
  if (o->trv)
    return cg_fmt(&ge->emit, "(unsigned)((%s) * %d + %d + (%s) * %d + ((((%s) / 4) ^ ((%s) %% 4 * 2)) * 16) + ((%s) %% 4) * 4)",
                  stage, gemm_wgmma_stage_bytes(ge->plan), half_at(ge->plan), k, 4 * o->bx, x, k, x);
  return cg_fmt(&ge->emit, "(unsigned)((%s) * %d + (%s) * %d + ((((%s) / 4) ^ ((%s) %% 8)) * 16) + ((%s) %% 4) * 4)", stage,
                gemm_wgmma_stage_bytes(ge->plan), x, WG_ROW, k, x, k);
}

/* A's fragments of k-tile _kt (plan->areg): for each k step of 8, this
 * thread's rows _wm0 + _g and + 8 at k + _t4 and + 4, split into their
 * TF32 high parts (the low 13 bits cleared) and low parts x - high. */
static void emit_a_fragments(gemm_emitter *ge, int set) {
  cg_emit *out = &ge->emit;
  cg_line(out, "#pragma unroll");
  cg_line(out, "for (int _q = 0; _q < 4; ++_q) {");
  out->indent++;
  int xform = ge->plan->op[0].xform != NULL;
  if (xform) gemm_xform_ks(ge);
  for (int i = 0; i < 4; i++) {
    const char *x = i % 2 ? "_wm0 + _g + 8" : "_wm0 + _g", *k = i / 2 ? "_q * 8 + _t4 + 4" : "_q * 8 + _t4";
    cg_line(out, "const float _x%d = _sp[%s / 4]; // row %s, k %s", i, areg_at(ge, x, k, "_cur"), x, k);
    const char *v = cg_fmt(out, "_x%d", i);
    if (xform) { /* A's function of it (gemm_xform.c) */
      cg_line(out, "const float _f%d = %s;", i, gemm_xform_value(ge, i, v));
      v = cg_fmt(out, "_f%d", i);
    }
    if (ge->plan->tiling.split3)
      cg_line(out, "kbc_split_tf32_fast(%s, _ah%d[_q][%d], _al%d[_q][%d]);", v, set, i, set, i);
    else if (ge->plan->prep[0]) /* rounded before the launch (never an A computed from its load) */
      cg_line(out, "_ah%d[_q][%d] = __float_as_uint(%s);", set, i, v);
    else /* to nearest, as the stage pass rounds */
      cg_line(out, "_ah%d[_q][%d] = __float_as_uint(kbc_tf32(%s));", set, i, v);
  }
  out->indent--;
  cg_line(out, "}");
}

void gemm_wgmma_coords(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  int wn = plan->tiling.cfg.bn / plan->wgn;
  cg_line(out, "const int _warp = _tid / 32, _lane = _tid %% 32;");
  cg_line(out, "const int _g = _lane / 4, _t4 = _lane %% 4; // accumulator fragment row group, thread in group");
  cg_line(out, "const int _wg = _warp / 4; // warpgroup: a 64 x %d block of the tile, by wgmma", wn);
  if (plan->wgn == 1)
    cg_line(out, "const int _wm0 = _wg * 64 + (_warp %% 4) * 16, _wn0 = 0; // the warp's 16 rows of it");
  else cg_line(out, "const int _wm0 = (_warp %% 4) * 16, _wn0 = _wg * %d; // the warp's 16 rows of it", wn);
}

/* The condition under which this thread copied operand o's chunk j ("if
 * (_tid < N) "), or "" where every thread did. */
static const char *chunk_guard(gemm_emitter *ge, const gemm_operand *o, int j) {
  int n = gemm_vec_chunk_threads(ge->plan, o, j);
  return n ? cg_fmt(&ge->emit, "if (_tid < %d) ", n) : "";
}

/* A pass over this thread's chunks of a stage once they landed.  3xTF32:
 * their low parts x - (x & ~0x1fff) into the stage's second half.  TF32:
 * each float rounded in place to the nearest TF32, ties away from zero
 * (as cvt.rna, which the mma.sync loops use): 0x1000 added to the bits of
 * a finite float, whose low 13 the tensor cores then ignore (the helpers'
 * comment says how).  Added to every float, as until session 31, it turned
 * a NaN whose mantissa is all ones — CUDA's canonical 0x7fffffff, what 0/0
 * gives — into -0.  An operand rounded before the launch (plan->prep) is
 * left out.  Truncation alone (no pass) biases
 * every product toward zero: on SAM-HQ's backward at 32x32 b2 that gave a
 * relative L2 error of 5.0e-3 against mma.sync's 9.6e-4 (H100, 2026-12-05;
 * the emulator shows the same on codegen/emu/wgmma_round). */
static void emit_stage_pass(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  if (plan->tiling.split3) {
    /* (A from registers: its fragments are split where loaded, A left out here) */
    int first = plan->areg ? 1 : 0, staged = (plan->op[0].trv && !plan->areg) || plan->op[1].trv;
    for (int w = first; w < 2; w++) {
      const gemm_operand *o = &plan->op[w];
      if (!o->trv) continue;
      cg_line(out, "// %c's chunks this thread copied, from the low half (they go to their K-major places below)",
              o->tag == 'a' ? 'A' : 'B');
      for (int j = 0; j < o->chunks; j++)
        cg_line(out, "const float4 _t%c%d = *(const float4 *)(_sp + %s / 4);", o->tag, j,
                gemm_wgmma_chunk_off(ge, o, j, "_cur"));
    }
    cg_line(out, "// the low parts x - (x & ~0x1fff) of this thread's chunks, into the stage's second half");
    for (int w = first; w < 2; w++) {
      const gemm_operand *o = &plan->op[w];
      if (o->trv) continue;
      for (int j = 0; j < o->chunks; j++) {
        cg_line(out, "%s{", chunk_guard(ge, o, j));
        cg_line(out, "  const unsigned _so = %s;", gemm_wgmma_chunk_off(ge, o, j, "_cur"));
        if (o->tr) { /* one float */
          cg_line(out, "  const float _v = _sp[_so / 4];");
          cg_line(out, "  _sp[(_so + %du) / 4] = %s;", half_at(plan), gemm_low_part(out, "_v"));
        } else {
          out->indent++;
          gemm_emit_low4(out, "_sp + _so / 4", cg_fmt(out, "_sp + (_so + %du) / 4", half_at(plan)));
          out->indent--;
        }
        cg_line(out, "}");
      }
    }
    if (!staged) return;
    cg_line(out, "__syncthreads(); // every thread's staged chunks read: the low half free for the low parts");
    for (int w = first; w < 2; w++) {
      const gemm_operand *o = &plan->op[w];
      if (!o->trv) continue;
      cg_line(out, "// %c's floats and their low parts into their K-major places", o->tag == 'a' ? 'A' : 'B');
      for (int j = 0; j < o->chunks; j++)
        for (int e = 0; e < 4; e++) {
          const char *v = cg_fmt(out, "_t%c%d.%c", o->tag, j, "xyzw"[e]);
          cg_line(out, "{");
          cg_line(out, "  const unsigned _so = %s;", place(ge, o, cg_fmt(out, "%s + %d", o->xl[j], e), o->kl[j], "_cur"));
          cg_line(out, "  _sp[_so / 4] = %s;", v);
          cg_line(out, "  _sp[(_so + %du) / 4] = %s;", half_at(plan), gemm_low_part(out, v));
          cg_line(out, "}");
        }
    }
    return;
  }
  if ((plan->prep[0] || plan->areg) && plan->prep[1]) return; /* both rounded before the launch (A: or where loaded) */
  cg_line(out, "// this thread's chunks rounded to TF32 in place%s", plan->prep[0] ? " (B's; A's were, before the launch)"
                                                                   : plan->areg    ? " (B's; A's are where loaded)"
                                                                   : plan->prep[1] ? " (A's; B's were, before the launch)"
                                                                                   : "");
  cg_line(out, "const unsigned _sa = _sw + _cur * %du; // the stage's shared address", gemm_wgmma_stage_bytes(plan));
  for (int w = plan->areg ? 1 : 0; w < 2; w++) {
    const gemm_operand *o = &plan->op[w];
    if (plan->prep[w]) continue;
    for (int j = 0; j < o->chunks; j++) {
      const char *g = chunk_guard(ge, o, j);
      if (!o->tr) cg_line(out, "%skbc_tf32_round16(_sa + %s);", g, gemm_wgmma_chunk_off(ge, o, j, "0"));
      else if (j + 4 <= o->chunks && !*chunk_guard(ge, o, j + 3)) { /* four whole floats */
        cg_line(out, "kbc_tf32_round4(_sa + %s,", gemm_wgmma_chunk_off(ge, o, j, "0"));
        for (int q = 1; q < 4; q++)
          cg_line(out, "                _sa + %s%s", gemm_wgmma_chunk_off(ge, o, j + q, "0"), q < 3 ? "," : ");");
        j += 3;
      } else cg_line(out, "%skbc_tf32_round1(_sa + %s);", g, gemm_wgmma_chunk_off(ge, o, j, "0"));
    }
  }
}

static void emit_pin(gemm_emitter *ge, int n) {
  cg_line(&ge->emit, "#pragma unroll");
  cg_line(&ge->emit, "for (int _q = 0; _q < %d; ++_q) kbc_wgmma_pin(_ap[_q]);", n);
}

/* The k-tiles copied before the loop (and, for the block's next tile,
 * before this one's epilogue): S - 2, so that the loop's copy of k-tile
 * kt + S - 2 never lands in the stage of k-tile kt - 1, whose products may
 * still be in flight; or, where K is known and its k-tiles fit the stages
 * (opt.gemm_xprefetch & 1; not split-K's slices), all of them, and the
 * loop copies none.  SAM-HQ's scores (K = 64 at 3xTF32, three stages of 64
 * KB): both k-tiles in flight at once, where the second had been requested
 * only once the first had landed. */
int gemm_wgmma_ahead(const gemm_emitter *ge) {
  const cg_gemm_plan *plan = ge->plan;
  int S = plan->stages;
  int64_t K;
  if ((ge->emit.opt->gemm_xprefetch & 1) && !plan->split && sym_is_const(plan->tiling.K, &K)) {
    int64_t kt = (K + WG_BK - 1) / WG_BK;
    if (kt > S - 2 && kt <= S) return (int)kt;
  }
  return S - 2;
}

/* Whether the block's next tile's first k-tiles are copied before this
 * tile's epilogue (opt.gemm_xprefetch & 2), so that their latency passes
 * under the epilogue's work and stores rather than after them: where the
 * epilogue touches no stage (not staged, not parked; no tail, fold or
 * window) and the copies carry no k state from one k-tile to the next
 * (flat K: their addresses follow from _kb alone), not under split-K (a
 * slice may leave before its epilogue). */
int gemm_wgmma_prefetches(const gemm_emitter *ge) {
  const cg_gemm_plan *plan = ge->plan;
  return (ge->emit.opt->gemm_xprefetch & 2) && plan->wgmma && !plan->split && !plan->fold && !plan->win &&
         !plan->tail && !plan->epilogue.staged && !plan->epilogue.park && (plan->kflat || plan->n_kslots == 0);
}

/* The fence and the products of stage _cur (A from fragment set `set`
 * where plan->areg): per k step of 8, at 3xTF32 A low x B, A x B low, A x
 * B into the accumulators. */
static void emit_products(gemm_emitter *ge, int set) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const gemm_cfg *f = &plan->tiling.cfg;
  int split3 = plan->tiling.split3, wn = f->bn / plan->wgn, nacc = wn / 2;
  int stage = gemm_wgmma_stage_bytes(plan), half = half_at(plan);
  if (plan->areg) emit_a_fragments(ge, set);
  emit_pin(ge, nacc);
  cg_line(out, "kbc_wgmma_fence();");
  cg_line(out, "{");
  out->indent++;
  /* a descriptor's address field is the shared address / 16 (below 2^18:
   * no carry), so the k steps' descriptors are the stage's plus kk / 4 */
  if (!plan->areg)
    cg_line(out, "const unsigned long long _da = kbc_wgmma_desc(_sw + _cur * %du + %s), // the warpgroup's rows",
            stage, plan->wgn == 1 ? "_wg * 8192u" : "0u");
  cg_line(out, "%s_db = kbc_wgmma_desc(_sw + _cur * %du + %du%s); // (a k step of 8: 32 bytes, 2 in the descriptor)",
          plan->areg ? "const unsigned long long " : "    ", stage, f->bm * WG_ROW,
          plan->wgn == 1 ? "" : cg_fmt(out, " + _wg * %du", wn * WG_ROW));
  cg_line(out, "#pragma unroll");
  cg_line(out, "for (int _kk = 0; _kk < %d; _kk += 8) {", WG_BK);
  if (plan->areg) {
    const char *al = cg_fmt(out, "_al%d[_kk / 8][0], _al%d[_kk / 8][1], _al%d[_kk / 8][2], _al%d[_kk / 8][3]", set, set, set, set);
    const char *ah = cg_fmt(out, "_ah%d[_kk / 8][0], _ah%d[_kk / 8][1], _ah%d[_kk / 8][2], _ah%d[_kk / 8][3]", set, set, set, set);
    if (split3) {
      cg_line(out, "  kbc_wgmma_rn%d(_ap, %s, _db + _kk / 4); // A low x B", wn, al);
      cg_line(out, "  kbc_wgmma_rn%d(_ap, %s, _db + %d + _kk / 4); // A x B low", wn, ah, half / 16);
    }
    cg_line(out, "  kbc_wgmma_rn%d(_ap, %s, _db + _kk / 4);", wn, ah);
  } else {
    if (split3) {
      cg_line(out, "  kbc_wgmma_n%d(_ap, _da + %d + _kk / 4, _db + _kk / 4); // A low x B", wn, half / 16);
      cg_line(out, "  kbc_wgmma_n%d(_ap, _da + _kk / 4, _db + %d + _kk / 4); // A x B low", wn, half / 16);
    }
    cg_line(out, "  kbc_wgmma_n%d(_ap, _da + _kk / 4, _db + _kk / 4);", wn);
  }
  cg_line(out, "}");
  out->indent--;
  cg_line(out, "}");
}

void gemm_wgmma_k_loop(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const gemm_cfg *f = &plan->tiling.cfg;
  int S = plan->stages, P = gemm_wgmma_ahead(ge), split3 = plan->tiling.split3, wn = f->bn / plan->wgn, nacc = wn / 2;
  int products_first = !split3; /* TF32 (see above) */
  if (P > S - 2)
    cg_line(out, "// k-tiles 0 .. %d -> stages 0 .. %d (K's every k-tile: the loop copies none)", P - 1, P - 1);
  else
    cg_line(out, "// k-tiles 0 .. %d -> stages 0 .. %d (%d ahead: the k-tile before's wgmma may still read its stage)",
            P - 1, P - 1, P);
  if (gemm_wgmma_prefetches(ge)) {
    cg_line(out, "if (_tile < (long long)gridDim.x) { // the block's first tile (a next one's: copied before the epilogue)");
    out->indent++;
    gemm_emit_first_copies(ge, P);
    out->indent--;
    cg_line(out, "}");
  } else {
    gemm_emit_first_copies(ge, P);
  }
  cg_line(out, "float *const _ap = &_acc[0][0][0]; // this thread's %d accumulators", nacc);
  cg_line(out, "int _cur = 0, _nxt = %d; // the stages of k-tiles _kt and _kt + %d", P % S, P);
  if (plan->op[0].xform) gemm_xform_rows(ge);
  if (plan->areg && split3)
    cg_line(out, "unsigned _ah0[4][4], _al0[4][4], _ah1[4][4], _al1[4][4]; // A's fragments, by k step: high and low TF32 parts");
  else if (plan->areg)
    cg_line(out, "unsigned _ah0[4][4], _ah1[4][4]; // A's fragments, by k step, rounded to TF32");
  cg_line(out, "for (long long _kt = 0; _kt < _nkt; ++_kt) {");
  out->indent++;
  cg_line(out, "kbc_cp_wait<%d>(); // this thread's copies of k-tile _kt landed", P - 1);
  emit_stage_pass(ge);
  cg_line(out, "kbc_fence_proxy_async(); // this thread's shared writes visible to wgmma");
  cg_line(out, "__syncthreads(); // k-tile _kt landed for every thread; stage _nxt read by no wgmma in flight");
  if (!products_first) gemm_emit_next_copies(ge, P);
  if (plan->areg) {
    /* two sets of fragments, by k-tile parity: k-tile kt - 1's products
     * may still read theirs while kt's are loaded, but kt - 2's, which read
     * this set, were waited for at the end of kt - 1 (at most one batch is
     * left in flight there) */
    cg_line(out, "if ((_kt & 1) == 0) { // A's fragments: set 0 (the k-tile before's, set 1, may still be read)");
    out->indent++;
    emit_products(ge, 0);
    out->indent--;
    cg_line(out, "} else {");
    out->indent++;
    emit_products(ge, 1);
    out->indent--;
    cg_line(out, "}");
  } else {
    emit_products(ge, 0);
  }
  cg_line(out, "kbc_wgmma_commit();");
  emit_pin(ge, nacc);
  if (products_first) gemm_emit_next_copies(ge, P);
  if (split3) {
    cg_line(out, "if ((_kt & %d) == %d) { // every %d k: the tensor cores' sums (rounded toward zero) into fp32 totals",
            GEMM_FLUSH_K / WG_BK - 1, GEMM_FLUSH_K / WG_BK - 1, GEMM_FLUSH_K);
    out->indent++;
    cg_line(out, "kbc_wgmma_wait<0>();");
    emit_pin(ge, nacc);
    cg_line(out, "float *const _tp = &_tot[0][0][0];");
    cg_line(out, "#pragma unroll");
    cg_line(out, "for (int _q = 0; _q < %d; ++_q) { _tp[_q] += _ap[_q]; _ap[_q] = 0.0f; }", nacc);
    out->indent--;
    cg_line(out, "} else {");
    cg_line(out, "  kbc_wgmma_wait<1>(); // k-tile _kt - 1's products done: its stage free");
    out->indent++;
    emit_pin(ge, nacc);
    out->indent--;
    cg_line(out, "}");
  } else {
    cg_line(out, "kbc_wgmma_wait<1>(); // k-tile _kt - 1's products done: its stage free");
    emit_pin(ge, nacc);
  }
  cg_line(out, "_cur = _cur == %d ? 0 : _cur + 1;", S - 1);
  cg_line(out, "_nxt = _nxt == %d ? 0 : _nxt + 1;", S - 1);
  out->indent--;
  cg_line(out, "}");
  cg_line(out, "kbc_wgmma_wait<0>();");
  emit_pin(ge, nacc);
  cg_line(out, "kbc_cp_wait<0>();");
  cg_line(out, "__syncthreads(); // the stages free: for the epilogue's tile and the next tile's copies");
  gemm_emit_flush(ge, 1);
}
