/* gemm_emit.c — the tiled contraction's kernel, printed from its plan.
 *
 * Before: a plan (cg_plan_gemm).  After cg_emit_gemm(): one kernel
 * computing the statement as a batched matrix product acc[batch][m][n] =
 * sum_k A[batch][m][k] * B[batch][k][n], where m, n, k and batch are the
 * row-major flattenings (last index fastest) of its M, N, K and batch
 * indices, followed by the statement's epilogue per output element:
 *   - 256 threads per block, one BM x BN output tile at a time (a
 *     grid-stride loop over tiles: n-tiles fastest, then m-tiles, then
 *     batch; with split-K, K slices fastest of all);
 *   - per k-tile of BK reductions, each thread loads a fixed set of A and
 *     B elements into registers (zero outside M, N, K) and stores them
 *     into shared memory, k-major (_As[k][m], _Bs[k][n], rows padded
 *     against bank conflicts), double buffered: the global loads for tile
 *     kt+1 are issued before the math on tile kt, one barrier per k-tile
 *     (gemm_load.c);
 *   - or (plan->stages > 2) a ring of shared stages filled by cp.async,
 *     k-tiles requested stages - 1 ahead, one wait and one barrier per
 *     k-tile (emit_k_loop_async): the vector loop (plan->vec, gemm_vec.c:
 *     16-byte chunks, k-major tiles [x][k] read by ldmatrix), or with
 *     KBC_GEMM_STAGES a float at a time;
 *   - math: FFMA on a TM x TN register tile per thread, read from shared
 *     memory as 4-wide vectors (fp32), or, with --precision tf32, tensor
 *     cores (mma.sync m16n8k8 TF32, operands rounded with cvt.rna when
 *     stored to shared memory) on a warp tile per warp, or, for fp32
 *     (plainly addressed operands by default, gemm_plan.c; KBC_FP32_MMA),
 *     3xTF32: fp32 operands in shared memory split at use into a high TF32
 *     part (masked) and the rest, three mma per product, the accumulators
 *     added into fp32 totals every GEMM_FLUSH_KTILES k-tiles (the tensor
 *     cores' sums round toward zero);
 *   - the epilogue (gemm_epilogue.c).
 * Index decoding: the M / N coordinates a thread loads are fixed per tile
 * and decoded once per tile (k-major loads take up to 4 consecutive k per
 * row, so a thread holds at most 4 rows); its K coordinates are decoded
 * once per tile and then advanced by BK per k-tile, digit by digit with
 * one carry each, so the K loop has no division.  When a thread loads
 * several k of a multi-index K, the threads instead keep k = base + _tid % BK
 * and the first BK publish a table of k offsets (or digits) per k-tile in
 * shared memory.  Flat spaces: where every address depends on a
 * multi-index M, N or K only through its flattening (cg_collapse), the
 * flat coordinate is used as is: rows are not decoded, K has no digits or
 * tables (a load's k is the k-tile base _kb plus its local k, nothing
 * carried across k-tiles). */
#include <string.h>

#include "gemm_impl.h"

/* ---- helpers shared by the emitters --------------------------------------- */

const char *gemm_join_names(gemm_emitter *ge, const int *ids, int n) {
  if (n == 0) return "-";
  const char *r = ge->names[ids[0]];
  for (int i = 1; i < n; i++) r = cg_fmt(&ge->emit, "%s*%s", r, ge->names[ids[i]]);
  return r;
}

void gemm_decode(gemm_emitter *ge, const char *flat, const int *ids, int n, const char *const *dst) {
  if (n == 1) cg_line(&ge->emit, "%s = %s;", dst[0], flat);
  else cg_decode(&ge->emit, "_q", flat, ids, n, dst);
}

void gemm_declare_decode(gemm_emitter *ge, const char *flat, const int *ids, int n, const char *const *dst,
                         const char *comment) {
  const char *decl = dst[0];
  for (int i = 1; i < n; i++) decl = cg_fmt(&ge->emit, "%s, %s", decl, dst[i]);
  cg_line(&ge->emit, "long long %s;%s", decl, comment);
  gemm_decode(ge, flat, ids, n, dst);
}

const char **gemm_digit_names(gemm_emitter *ge, const int *ids, int n, const char *pre) {
  const char **dst = KBC_NEW_ARRAY(ge->emit.a, const char *, n > 0 ? n : 1);
  for (int i = 0; i < n; i++) dst[i] = *pre ? cg_fmt(&ge->emit, "%s%s", pre, ge->names[ids[i]]) : ge->names[ids[i]];
  return dst;
}

const char **gemm_declare_digits(gemm_emitter *ge, const char *flat, const int *ids, int n, const char *pre,
                                 const char *comment) {
  const char **dst = gemm_digit_names(ge, ids, n, pre);
  gemm_declare_decode(ge, flat, ids, n, dst, comment);
  return dst;
}

void gemm_decode_named(gemm_emitter *ge, const char *flat, const int *ids, int n, const char *comment) {
  gemm_declare_digits(ge, flat, ids, n, "", comment);
}

/* ---- the header ----------------------------------------------------------- */

static const char tf32_helpers[] =
    "#ifndef KBC_GEMM_TF32_HELPERS\n"
    "#define KBC_GEMM_TF32_HELPERS\n"
    "// TF32 tensor cores: x rounded to TF32 (nearest, ties away from zero), kept as a float;\n"
    "// d += a * b on one m16n8k8 tile (fragments as in the PTX ISA, mma.m16n8k8 .tf32).\n"
    "__device__ __forceinline__ float kbc_tf32(float x) {\n"
    "  unsigned u;\n"
    "  asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(u) : \"f\"(x));\n"
    "  return __uint_as_float(u);\n"
    "}\n"
    "__device__ __forceinline__ void kbc_mma_tf32(float *d, const unsigned *a, const unsigned *b) {\n"
    "  asm(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, \"\n"
    "      \"{%0, %1, %2, %3};\"\n"
    "      : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
    "      : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n"
    "}\n"
    "#endif\n\n";

static const char split_helpers[] =
    "#ifndef KBC_GEMM_SPLIT_HELPERS\n"
    "#define KBC_GEMM_SPLIT_HELPERS\n"
    "// 3xTF32: x as its TF32 rounding (hi) and the TF32 rounding of the rest (lo), so that\n"
    "// a*b = ah*bh + ah*bl + al*bh + al*bl, the last term dropped, to about fp32 accuracy.\n"
    "__device__ __forceinline__ void kbc_split_tf32(float x, unsigned &hi, unsigned &lo) {\n"
    "  const float h = kbc_tf32(x);\n"
    "  hi = __float_as_uint(h);\n"
    "  lo = __float_as_uint(kbc_tf32(x - h));\n"
    "}\n"
    "#endif\n\n";


static const char split_fast_helpers[] =
    "#ifndef KBC_SPLIT_FAST_HELPERS\n"
    "#define KBC_SPLIT_FAST_HELPERS\n"
    "// 3xTF32 with a cheaper split: hi is x with its low 13 mantissa bits cleared (a TF32 value), lo =\n"
    "// x - hi exactly, which the tensor cores read as TF32 (the low bits ignored): an AND and a\n"
    "// subtraction instead of two conversions and a subtraction.\n"
    "__device__ __forceinline__ void kbc_split_tf32_fast(float x, unsigned &hi, unsigned &lo) {\n"
    "  hi = __float_as_uint(x) & 0xffffe000u;\n"
    "  lo = __float_as_uint(x - __uint_as_float(hi));\n"
    "}\n"
    "#endif\n\n";

void cg_emit_mma_helpers(kbc_buf *out, int split) {
  kbc_buf_puts(out, tf32_helpers);
  if (split) {
    kbc_buf_puts(out, split_helpers);
    kbc_buf_puts(out, split_fast_helpers);
  }
}

/* The helpers, the comments describing the schedule, the signature. */
static void emit_header(gemm_emitter *ge, const cg_kernel *k) {
  cg_ctx *C = ge->ctx;
  const cg_gemm_plan *plan = ge->plan;
  const gemm_tiling *tl = &plan->tiling;
  const cg_contraction *c = &tl->c;
  const gemm_cfg *f = &tl->cfg;
  if (tl->mma) cg_emit_mma_helpers(C->out, tl->split3);
  if (plan->stages > 2 || (plan->win && plan->win->pipe)) cg_emit_async_helpers(C->out);
  if (plan->vec && !plan->wgmma) cg_emit_ldsm_helpers(C->out);
  if (plan->wgmma) gemm_wgmma_helpers(C->out, plan);
  for (int i = 0; i < k->n_prep; i++)
    if (k->prep_pack[i]) gemm_pack_emit(C, plan, k, i);
  if (plan->split)
    kbc_buf_printf(C->out, "__device__ unsigned _%s_done[%lld]; // split-K: per output tile, its slices finished; the "
                           "last resets it\n", k->name, (long long)plan->split_below);
  kbc_buf_printf(C->out, "// %s\n", cg_stmt_comment(C->a, plan->s));
  if (plan->fold) kbc_buf_printf(C->out, "// %s\n", cg_stmt_comment(C->a, plan->fold->t));
  kbc_buf_printf(C->out, "// schedule: gemm (%s), M = %s, N = %s, K = %s, batch = %s\n",
                 plan->wgmma ? (tl->split3 ? "3xTF32 wgmma m64nNk8, split operands, fp32 accumulation"
                                           : "TF32 wgmma m64nNk8, fp32 accumulation")
                 : tl->split3 ? "3xTF32 mma.sync m16n8k8, split operands, fp32 accumulation"
                 : tl->mma    ? "TF32 mma.sync m16n8k8, fp32 accumulation"
                              : "FFMA fp32",
                 gemm_join_names(ge, c->m, c->n_m), gemm_join_names(ge, c->n, c->n_n),
                 gemm_join_names(ge, c->k, c->n_k), gemm_join_names(ge, c->bat, c->n_b));
  if (plan->wgmma)
    kbc_buf_printf(C->out, "//   tile %dx%dx%d, %d threads: 2 warpgroups %s, each 64 x %d (wgmma m64n%dk8)%s", f->bm,
                   f->bn, f->bk, GEMM_THREADS, plan->wgn == 1 ? "along m" : "along n", f->bn / plan->wgn,
                   f->bn / plan->wgn, plan->min_blocks >= 2 && plan->occ >= 2 ? ", two blocks a multiprocessor" : "");
  else if (!tl->mma)
    kbc_buf_printf(C->out, "//   tile %dx%dx%d, %d threads as %d x %d, %dx%d outputs per thread", f->bm, f->bn,
                   f->bk, GEMM_THREADS, f->ty, f->tx, f->tm, f->tn);
  else
    kbc_buf_printf(C->out, "//   tile %dx%dx%d, %d threads: %d x %d warps, warp tile %dx%d (%d x %d mma tiles)", f->bm,
                   f->bn, f->bk, GEMM_THREADS, f->wm, f->wn, f->mi * 16, f->ni * 8, f->mi, f->ni);
  if (plan->win)
    kbc_buf_printf(C->out, ", shared memory: A's box %lld B, B %d B\n", (long long)plan->win->box * 4,
                   f->bn * plan->win->ldb * 4);
  else if (plan->stages > 2)
    kbc_buf_printf(C->out, ", shared memory %d B in %d stages%s filled by cp.async%s\n",
                   plan->ring * gemm_plan_stage_bytes(plan), plan->ring,
                   plan->ring < plan->stages ? cg_fmt(&ge->emit, " (K's k-tiles, of a ring of %d)", plan->stages) : "",
                   plan->wgmma ? " in 16-byte chunks, 128-byte swizzle"
                   : plan->vec ? " in 16-byte chunks"
                               : "");
  else kbc_buf_printf(C->out, ", shared memory %d B double-buffered\n", gemm_smem_bytes(f));
  if (plan->fold) {
    const char *r = gemm_join_names(ge, plan->fold->r, plan->fold->n_r);
    kbc_buf_printf(C->out, "//   folded: per tile, a K loop for each %s, its outputs folded by %s into running values (%s is never stored)\n", r,
                   ir_red_name[plan->fold->red->u.reduce.op], C->names->tensor[plan->s->out->id]);
  }
  if (plan->epilogue.staged)
    kbc_buf_printf(C->out, "//   epilogue through shared memory (output contiguous along %s), %d pass%s of %d columns\n",
                   plan->epilogue.along_n ? "n, an operand read per element" : "m", plan->epilogue.passes,
                   plan->epilogue.passes == 1 ? "" : "es", plan->epilogue.nc);
  for (int w = 0; w < 2 && plan->vec; w++) {
    const gemm_operand *o = &plan->op[w];
    if (o->gather) {
      kbc_buf_printf(C->out, "//   %c: gathered, copied a float at a time (transposed) at its row's offset plus its k's from "
                             "the table _%cqk%s, %d per thread per k-tile, shared [%s][k], read by wgmma\n", w ? 'B' : 'A',
                     o->tag, o->guarded ? " (tested in bounds over the digits _kdk)" : "", o->chunks, w ? "n" : "m");
      continue;
    }
    if (o->trv) {
      kbc_buf_printf(C->out, "//   %c: %s-contiguous, copied in chunks of 4 along %s into the low half, %d per thread per "
                             "k-tile, transposed from there to shared [%s][k] with their low parts, read by wgmma\n",
                     w ? 'B' : 'A', w ? "n" : "m", w ? "n" : "m", o->chunks, w ? "n" : "m");
      continue;
    }
    if (o->tr) {
      kbc_buf_printf(C->out, "//   %c: %s-contiguous, copied a float at a time (transposed), %d per thread per k-tile, "
                             "shared [%s][k], read by wgmma\n", w ? 'B' : 'A', w ? "n" : "m", o->chunks, w ? "n" : "m");
      continue;
    }
    kbc_buf_printf(C->out, "//   %c: %scopied in chunks of 4 along %s, %d per thread per k-tile, shared [%s]%s\n", w ? 'B' : 'A',
                   o->pack ? "packed k-major before the launch, " : "", o->kmajor ? "k" : (w ? "n" : "m"), o->chunks,
                   o->kmajor ? (w ? "n][k" : "m][k") : (w ? "k][n" : "k][m"),
                   plan->wgmma ? ", read by wgmma" : o->kmajor ? ", fragments by ldmatrix" : "");
  }
  if (plan->win)
    kbc_buf_printf(C->out, "//   A: read in place from a box of %s staged per tile%s (outer rows: %s), zero outside it; B: "
                   "the tile's columns by the whole K, staged %s\n",
                   C->names->tensor[plan->op[0].e->u.load.tensor->id], plan->fold ? " and fold step" : "",
                   gemm_join_names(ge, c->m, plan->win->split), plan->win->b_once ? "once per block" : "per tile");
  for (int w = 0; w < 2 && !plan->vec && !plan->win; w++) {
    const gemm_operand *o = &plan->op[w];
    kbc_buf_printf(C->out, "//   %c: loaded %s-contiguous, %d per thread per k-tile, %s\n", w ? 'B' : 'A',
                   o->kmajor ? "k" : (w ? "n" : "m"), o->slots,
                   o->guarded ? "addressed as row offset + k offset where in bounds"
                   : o->fast  ? "addressed as row offset + k offset"
                              : "evaluated per element");
  }
  ge->emit.written = cg_signature_scratch(C, k->name, GEMM_THREADS, plan->min_blocks,
                                       k->n_tensors, k->tensors, k->first, k->count,
                                       k->n_prep ? "_ws" : plan->split ? "_kws" : NULL);
}

/* ---- set-up --------------------------------------------------------------- */

/* The k tables: per k-tile (two, the builder's next and the loads'), or of
 * the whole K (plan->ktab). */
static void emit_tables(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  int bk = plan->tiling.cfg.bk, n_k = plan->tiling.c.n_k;
  if (plan->ktab) {
    const char *type = gemm_ktab_int(plan) ? "int" : "long long";
    if (plan->table_digits)
      cg_line(out, "__shared__ %s _kdk[%d][%d]; // k table: digits of each k", type, n_k, plan->ktab);
    for (int w = 0; w < 2; w++)
      if (plan->op[w].table && plan->op[w].fast)
        cg_line(out, "__shared__ %s _%cqk[%d]; // k table: %c offset of each k", type, plan->op[w].tag, plan->ktab,
                w ? 'B' : 'A');
    return;
  }
  if (plan->table_digits)
    cg_line(out, "__shared__ long long _kd[2][%d][%d]; // k table: digits of k = k-tile base + i", n_k, bk);
  for (int w = 0; w < 2; w++)
    if (plan->op[w].table && plan->op[w].fast)
      cg_line(out, "__shared__ long long _%cqt[2][%d]; // k table: %c offset of k = k-tile base + i", plan->op[w].tag, bk,
              w ? 'B' : 'A');
}

/* The shared tiles (in a union with the epilogue's output tile when it is
 * staged) and the k tables. */
static void emit_shared(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const gemm_cfg *f = &plan->tiling.cfg;
  if (plan->win) {
    gemm_win_shared(ge);
    return;
  }
  if (plan->wgmma) { /* dynamic: the swizzled stages (gemm_wgmma.c), the epilogue's tile over them */
    cg_line(out, "KBC_DYNAMIC_SMEM(_smem);");
    cg_line(out, "const unsigned _s0 = kbc_smem_u32(_smem), _sw = (_s0 + 1023u) & ~1023u; // the stages: 1024-byte aligned");
    cg_line(out, "float *const _sp = _smem + (_sw - _s0) / 4; // the same, as a pointer");
    cg_line(out, "// stage s at byte s * %d: A [%d][32 k] at 0, B [%d][32 k] at %d%s; row r's 16-byte chunk c at",
            gemm_plan_stage_bytes(plan), f->bm, f->bn, f->bm * 128,
            plan->tiling.split3 ? cg_fmt(out, ", their low parts at + %d", (f->bm + f->bn) * 128) : "");
    cg_line(out, "// r * 128 + (c ^ r %% 8) * 16 of its tile (the 128-byte swizzle)");
    if (plan->epilogue.staged)
      cg_line(out, "float (*_Cs)[%d] = (float (*)[%d])_smem; // the epilogue's output tile, over the stages",
              plan->epilogue.nc + 1, plan->epilogue.nc + 1);
    if (plan->ktab) emit_tables(ge); /* a gathered operand's k offsets (static) */
    return;
  }
  if (plan->stages > 2) { /* dynamic: the stages, the epilogue's tile over them */
    int at = 0;
    cg_line(out, "KBC_DYNAMIC_SMEM(_smem);");
    for (int w = 0; w < 2; w++) {
      const gemm_operand *o = &plan->op[w];
      char T = w ? 'B' : 'A';
      int ld = gemm_tile_ld(plan, o), rows = gemm_tile_rows(plan, o);
      cg_line(out, "float (*_%cs)[%d][%d] = (float (*)[%d][%d])%s; // %c tiles: _%cs[stage][%s]", T, rows, ld, rows, ld,
              w ? cg_fmt(out, "(_smem + %d)", at) : "_smem", T, T,
              gemm_tile_kx(plan, o) ? (w ? "n][k" : "m][k") : (w ? "k][n" : "k][m"));
      if (!w) at = plan->ring * rows * ld;
    }
    if (plan->epilogue.staged)
      cg_line(out, "float (*_Cs)[%d] = (float (*)[%d])_smem; // the epilogue's output tile, over the stages",
              plan->epilogue.nc + 1, plan->epilogue.nc + 1);
    cg_line(out, "const unsigned _sA = kbc_smem_u32(_smem), _sB = _sA + %du; // their shared addresses", 4 * at);
    emit_tables(ge);
    return;
  }
  if (!plan->epilogue.staged) {
    cg_line(out, "__shared__ __align__(16) float _As[2][%d][%d]; // A tile, k-major: _As[k][m]", f->bk, f->sa + f->pad_a);
    cg_line(out, "__shared__ __align__(16) float _Bs[2][%d][%d]; // B tile, k-major: _Bs[k][n]", f->bk, f->sb + f->pad_b);
  } else {
    int nc = plan->epilogue.nc;
    cg_line(out, "__shared__ __align__(16) union {");
    cg_line(out, "  struct {");
    cg_line(out, "    float As[2][%d][%d];", f->bk, f->sa + f->pad_a);
    cg_line(out, "    float Bs[2][%d][%d];", f->bk, f->sb + f->pad_b);
    cg_line(out, "  } k;                 // the K loop's tiles");
    cg_line(out, "  float Cs[%d][%d]; // the epilogue's output tile, one group of columns at a time", f->bm, nc + 1);
    cg_line(out, "} _sm;");
    cg_line(out, "float (&_As)[2][%d][%d] = _sm.k.As; // A tile, k-major: _As[k][m]", f->bk, f->sa + f->pad_a);
    cg_line(out, "float (&_Bs)[2][%d][%d] = _sm.k.Bs; // B tile, k-major: _Bs[k][n]", f->bk, f->sb + f->pad_b);
    cg_line(out, "float (&_Cs)[%d][%d] = _sm.Cs;", f->bm, nc + 1);
  }
  emit_tables(ge);
}

/* The extents, tile counts and (split-K) the slice count. */
static void emit_extents(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const gemm_tiling *tl = &plan->tiling;
  const gemm_cfg *f = &tl->cfg;
  cg_line(out, "const long long _M = %s;", cg_sym(out, tl->M));
  cg_line(out, "const long long _N = %s;", cg_sym(out, tl->N));
  cg_line(out, "const long long _K = %s;", cg_sym(out, tl->K));
  if (plan->win)
    cg_line(out, "const long long _tiles_m = %lld * %lld; // each value of the outer rows: %lld tiles of its %lld",
            (long long)plan->win->mo, (long long)plan->win->ti, (long long)plan->win->ti, (long long)plan->win->mi);
  else cg_line(out, "const long long _tiles_m = (_M + %d) / %d;", f->bm - 1, f->bm);
  cg_line(out, "const long long _tiles_n = (_N + %d) / %d;", f->bn - 1, f->bn);
  if (!plan->win) cg_line(out, "const long long _ktiles = (_K + %d) / %d;", f->bk - 1, f->bk);
  if (plan->fold)
    cg_line(out, "const long long _R = %s; // %s, folded", cg_sym(out, cg_extent_sym(out->a, plan->s, plan->fold->r, plan->fold->n_r)),
            gemm_join_names(ge, plan->fold->r, plan->fold->n_r));
  if (!plan->split) {
    cg_line(out, "const long long _tiles = _tiles_m * _tiles_n * %s;", cg_sym(out, tl->B));
    return;
  }
  int slots = plan->slots;
  cg_line(out, "// split-K: with fewer output tiles than %d, K is cut into up to %d slices of at least %d k-tiles,",
          plan->split_below, GEMM_SPLIT_MAX, plan->split_min);
  cg_line(out, "// the count that best fills waves of %d blocks (two per multiprocessor); each slice's sums go", slots);
  cg_line(out, "// to scratch (_kws), and the last slice of a tile to finish adds them in slice order (the result");
  cg_line(out, "// does not depend on timing) and applies the epilogue");
  cg_line(out, "const long long _out_tiles = _tiles_m * _tiles_n * %s;", cg_sym(out, tl->B));
  cg_line(out, "long long _splits = 1;");
  cg_line(out, "for (long long _s = 1, _best = 0; _s <= %d && _out_tiles < %d && _s * %d <= _ktiles; ++_s) {",
          GEMM_SPLIT_MAX, plan->split_below, plan->split_min);
  cg_line(out, "  const long long _fill = 1000 * _out_tiles * _s / ((_out_tiles * _s + %d) / %d * %d); // per mille",
          slots - 1, slots, slots);
  cg_line(out, "  if (_fill * 20 > _best * 21) { _best = _fill; _splits = _s; } // at least 5%% fuller");
  cg_line(out, "}");
  cg_line(out, "const long long _kper = (_ktiles + _splits - 1) / _splits; // k-tiles per slice");
  cg_line(out, "const long long _nsl = (_ktiles + _kper - 1) / _kper; // the slices with k-tiles");
  cg_line(out, "const long long _tiles = _out_tiles * _splits;");
}

/* The thread's place in the tile: its row and column in the thread grid
 * (FFMA), or its warp tile and fragment coordinates (mma). */
static void emit_thread_coords(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const gemm_cfg *f = &ge->plan->tiling.cfg;
  cg_line(out, "const int _tid = threadIdx.x;");
  if (ge->plan->wgmma) {
    gemm_wgmma_coords(ge);
    return;
  }
  if (!ge->plan->tiling.mma) {
    cg_line(out, "const int _tx = _tid %% %d; // thread column: outputs n = _n0 + %s", f->tx,
            f->vn == 4 ? cg_fmt(out, "(j / 4) * %d + _tx * 4 + j %% 4", f->bn / (f->tn / 4)) : cg_fmt(out, "_tx * %d + j", f->tn));
    cg_line(out, "const int _ty = _tid / %d; // thread row: outputs m = _m0 + %s", f->tx,
            f->vm == 4 ? cg_fmt(out, "(i / 4) * %d + _ty * 4 + i %% 4", f->bm / (f->tm / 4)) : cg_fmt(out, "_ty * %d + i", f->tm));
  } else {
    cg_line(out, "const int _warp = _tid / 32, _lane = _tid %% 32;");
    cg_line(out, "const int _g = _lane / 4, _t4 = _lane %% 4; // mma fragment row group, thread in group");
    cg_line(out, "const int _wm0 = (_warp / %d) * %d, _wn0 = (_warp %% %d) * %d; // warp tile origin", f->wn, f->mi * 16,
            f->wn, f->ni * 8);
    if (ge->plan->vec && ge->plan->op[0].kmajor)
      cg_line(out, "const int _lra = _lane %% 8 + (_lane / 8 & 1) * 8, _lca = _lane / 16 * 4; // A row, k this lane gives ldmatrix");
    if (ge->plan->vec && ge->plan->op[1].kmajor)
      cg_line(out, "const int _lrb = _lane %% 8 + _lane / 16 * 8, _lcb = (_lane / 8 & 1) * 4; // B row, k this lane gives ldmatrix");
  }
}

/* ---- the tile ------------------------------------------------------------- */

/* The tile's coordinates (and split-K slice) from the tile number. */
static void emit_tile_start(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const gemm_cfg *f = &plan->tiling.cfg;
  const cg_contraction *c = &plan->tiling.c;
  cg_line(out, "long long _t = _tile;");
  if (plan->split) {
    cg_line(out, "const long long _kt0 = (_t %% _splits) * _kper; // this slice: k-tiles [_kt0, _kt0 + _nkt)");
    cg_line(out, "_t /= _splits;");
    cg_line(out, "const long long _nkt = _ktiles - _kt0 < _kper ? _ktiles - _kt0 : _kper;");
    cg_line(out, "if (_nkt <= 0) continue;");
    cg_line(out, "const long long _kend = (_kt0 + _nkt) * %d < _K ? (_kt0 + _nkt) * %d : _K;", f->bk, f->bk);
  } else if (!plan->win) {
    cg_line(out, "const long long _kt0 = 0, _nkt = _ktiles, _kend = _K; // the whole K range");
  }
  cg_line(out, "const long long _n0 = (_t %% _tiles_n) * %d;", f->bn);
  cg_line(out, "_t /= _tiles_n;");
  if (plan->win) { /* inside one value of the outer rows; the rows end at _mend */
    long long mi = plan->win->mi, ti = plan->win->ti;
    cg_line(out, "const long long _mt = _t %% _tiles_m, _mo = _mt / %lld * %lld, _mi0 = _mt %% %lld * %d;", ti, mi, ti, f->bm);
    cg_line(out, "const long long _m0 = _mo + _mi0, _mend = _mo + (_mi0 + %d < %lld ? _mi0 + %d : %lld);", f->bm, mi, f->bm, mi);
  } else cg_line(out, "const long long _m0 = (_t %% _tiles_m) * %d;", f->bm);
  cg_line(out, "_t /= _tiles_m;");
  if (c->n_b > 0) gemm_decode_named(ge, "_t", c->bat, c->n_b, " // batch");
}

/* The staging registers and the zeroed accumulators. */
static void emit_registers(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const gemm_cfg *f = &ge->plan->tiling.cfg;
  if (ge->plan->stages == 2 && !ge->plan->win)
    cg_line(out, "float _av[%d], _bv[%d]; // staging registers: this thread's A and B elements of one k-tile",
            ge->plan->op[0].slots, ge->plan->op[1].slots);
  if (!ge->plan->tiling.mma) {
    cg_line(out, "float _acc[%d][%d];", f->tm, f->tn);
    cg_line(out, "#pragma unroll");
    cg_line(out, "for (int _i = 0; _i < %d; ++_i)", f->tm);
    cg_line(out, "  #pragma unroll");
    cg_line(out, "  for (int _j = 0; _j < %d; ++_j) _acc[_i][_j] = 0.0f;", f->tn);
  } else {
    int split3 = ge->plan->tiling.split3;
    cg_line(out, "float _acc[%d][%d][4];%s", f->mi, f->ni, split3 ? " // the tensor cores' sums of the last k-tiles" : "");
    if (split3) cg_line(out, "float _tot[%d][%d][4]; // their fp32 totals", f->mi, f->ni);
    cg_line(out, "#pragma unroll");
    cg_line(out, "for (int _i = 0; _i < %d; ++_i)", f->mi);
    cg_line(out, "  #pragma unroll");
    cg_line(out, "  for (int _j = 0; _j < %d; ++_j)", f->ni);
    cg_line(out, "    #pragma unroll");
    cg_line(out, "    for (int _q = 0; _q < 4; ++_q) _acc[_i][_j][_q] = %s0.0f;", split3 ? "_tot[_i][_j][_q] = " : "");
  }
}

/* ---- the math ------------------------------------------------------------- */

/* FFMA: the thread's column of A (w = 0) or row of B (w = 1) at _kk into
 * registers _fa / _fb, as float4 reads. */
static void emit_fragment_ffma(gemm_emitter *ge, int w) {
  cg_emit *out = &ge->emit;
  const gemm_cfg *f = &ge->plan->tiling.cfg;
  char T = w ? 'B' : 'A', v = w ? 'b' : 'a';
  int vec = w ? f->vn : f->vm, reps = w ? f->tn / f->vn : f->tm / f->vm, bx = w ? f->bn : f->bm, tt = w ? f->tn : f->tm;
  const char *tid = w ? "_tx" : "_ty";
  if (vec == 4) {
    for (int r = 0; r < reps; r++) {
      cg_line(out, "{");
      cg_line(out, "  const float4 _v = *(const float4 *)&_%cs[_cur][_kk][%s * 4 + %d];", T, tid, r * bx / reps);
      cg_line(out, "  _f%c[%d] = _v.x; _f%c[%d] = _v.y; _f%c[%d] = _v.z; _f%c[%d] = _v.w;", v, 4 * r, v, 4 * r + 1, v,
              4 * r + 2, v, 4 * r + 3);
      cg_line(out, "}");
    }
    return;
  }
  /* this thread's tt values, contiguous in a chunk padded to 4k */
  static const char comp[] = "xyzw";
  int cw = (tt + 3) / 4 * 4;
  for (int r = 0; r < cw / 4; r++) {
    cg_line(out, "{");
    cg_line(out, "  const float4 _v = *(const float4 *)&_%cs[_cur][_kk][%s * %d + %d];", T, tid, cw, 4 * r);
    const char *as = "";
    for (int q = 0; q < 4 && 4 * r + q < tt; q++) as = cg_fmt(out, "%s%s_f%c[%d] = _v.%c;", as, q ? " " : "", v, 4 * r + q, comp[q]);
    cg_line(out, "  %s", as);
    cg_line(out, "}");
  }
}

static void emit_math_ffma(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const gemm_cfg *f = &ge->plan->tiling.cfg;
  cg_line(out, "#pragma unroll");
  cg_line(out, "for (int _kk = 0; _kk < %d; ++_kk) {", f->bk);
  out->indent++;
  cg_line(out, "float _fa[%d], _fb[%d];", f->tm, f->tn);
  emit_fragment_ffma(ge, 0);
  emit_fragment_ffma(ge, 1);
  cg_line(out, "#pragma unroll");
  cg_line(out, "for (int _i = 0; _i < %d; ++_i)", f->tm);
  cg_line(out, "  #pragma unroll");
  cg_line(out, "  for (int _j = 0; _j < %d; ++_j) _acc[_i][_j] = fmaf(_fa[_i], _fb[_j], _acc[_i][_j]);", f->tn);
  out->indent--;
  cg_line(out, "}");
}

/* Operand w's mma fragments at _kk from its [k][x] tile, a float at a time
 * (an m16 tile of A: rows _r and _r + 8 at k _t4 and _t4 + 4; an n8 tile of
 * B: column _c at k _t4 and _t4 + 4), split into high and low TF32 parts
 * (3xTF32) or taken as TF32 (rounded where cp.async stored them as they
 * are).  K-major operands of the vector loop: gemm_vec_fragments. */
static void emit_fragments_kx(gemm_emitter *ge, int w) {
  static const char *const at[2][4] = {{"[_kk + _t4][_r]", "[_kk + _t4][_r + 8]", "[_kk + _t4 + 4][_r]", "[_kk + _t4 + 4][_r + 8]"},
                                       {"[_kk + _t4][_c]", "[_kk + _t4 + 4][_c]"}};
  cg_emit *out = &ge->emit;
  const gemm_cfg *f = &ge->plan->tiling.cfg;
  const char *rd = ge->plan->stages > 2 ? "kbc_tf32(" : "", *rd_end = ge->plan->stages > 2 ? ")" : "";
  const char *i = w ? "_j" : "_i";
  char T = w ? 'B' : 'A', v = w ? 'b' : 'a';
  cg_line(out, "#pragma unroll");
  cg_line(out, "for (int %s = 0; %s < %d; ++%s) {", i, i, w ? f->ni : f->mi, i);
  cg_line(out, w ? "  const int _c = _wn0 + _j * 8 + _g;" : "  const int _r = _wm0 + _i * 16 + _g;");
  for (int q = 0; q < (w ? 2 : 4); q++)
    if (ge->plan->tiling.split3)
      cg_line(out, "  kbc_split_tf32_fast(_%cs[_cur]%s, _f%c[%s][%d], _f%cl[%s][%d]);", T, at[w][q], v, i, q, v, i, q);
    else cg_line(out, "  _f%c[%s][%d] = __float_as_uint(%s_%cs[_cur]%s%s);", v, i, q, rd, T, at[w][q], rd_end);
  cg_line(out, "}");
}

static void emit_math_mma(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const gemm_cfg *f = &ge->plan->tiling.cfg;
  cg_line(out, "#pragma unroll");
  cg_line(out, "for (int _kk = 0; _kk < %d; _kk += 8) {", f->bk);
  out->indent++;
  gemm_emit_fragment_decls(ge);
  for (int w = 0; w < 2; w++)
    if (ge->plan->vec && ge->plan->op[w].kmajor) gemm_vec_fragments(ge, &ge->plan->op[w]);
    else emit_fragments_kx(ge, w);
  gemm_emit_mma_passes(ge);
  out->indent--;
  cg_line(out, "}");
}

void gemm_emit_fragment_decls(gemm_emitter *ge) {
  const gemm_cfg *f = &ge->plan->tiling.cfg;
  if (ge->plan->tiling.split3)
    cg_line(&ge->emit, "unsigned _fa[%d][4], _fal[%d][4], _fb[%d][2], _fbl[%d][2]; // high and low TF32 parts", f->mi,
            f->mi, f->ni, f->ni);
  else cg_line(&ge->emit, "unsigned _fa[%d][4], _fb[%d][2];", f->mi, f->ni);
}

void gemm_emit_mma_passes(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const gemm_cfg *f = &ge->plan->tiling.cfg;
  /* 3xTF32: the small products first, each product a pass over the tiles
   * (consecutive mma on different accumulators) */
  static const char *const pass[3] = {"_fal[_i], _fb[_j]", "_fa[_i], _fbl[_j]", "_fa[_i], _fb[_j]"};
  for (int p = ge->plan->tiling.split3 ? 0 : 2; p < 3; p++) {
    cg_line(out, "#pragma unroll");
    cg_line(out, "for (int _i = 0; _i < %d; ++_i)", f->mi);
    cg_line(out, "  #pragma unroll");
    cg_line(out, "  for (int _j = 0; _j < %d; ++_j) kbc_mma_tf32(_acc[_i][_j], %s);", f->ni, pass[p]);
  }
}

/* ---- the K loop ----------------------------------------------------------- */

/* 3xTF32: the tensor cores round their sums toward zero, so a long chain of
 * mma into one accumulator drifts (a model of it: rel. L2 error 3.7e-5 at
 * K = 4096, 7.5e-5 at 8192); every GEMM_FLUSH_K reductions (k-tiles of
 * BK <= GEMM_FLUSH_K, a power of two) the accumulators are added into fp32
 * totals (rounded to nearest) and zeroed (the model: about 1e-6 at any K).
 * At the end (all = 1) every k-tile's remainder. */
void gemm_emit_flush(gemm_emitter *ge, int all) {
  const gemm_cfg *f = &ge->plan->tiling.cfg;
  gemm_emit_flush_every(ge, all, "_kt", f->bk < GEMM_FLUSH_K ? GEMM_FLUSH_K / f->bk : 1);
}

void gemm_emit_flush_every(gemm_emitter *ge, int all, const char *counter, int every) {
  cg_emit *out = &ge->emit;
  const gemm_cfg *f = &ge->plan->tiling.cfg;
  if (!ge->plan->tiling.split3) return;
  if (all) cg_line(out, "{ // the totals: _acc = _tot + the last k-tiles' sums");
  else if (every == 1) cg_line(out, "{ // the tensor cores' sums (rounded toward zero) into the fp32 totals");
  else cg_line(out, "if ((%s & %d) == %d) { // the tensor cores' sums (rounded toward zero) into the fp32 totals",
               counter, every - 1, every - 1);
  out->indent++;
  cg_line(out, "#pragma unroll");
  cg_line(out, "for (int _i = 0; _i < %d; ++_i)", f->mi);
  cg_line(out, "  #pragma unroll");
  cg_line(out, "  for (int _j = 0; _j < %d; ++_j)", f->ni);
  cg_line(out, "    #pragma unroll");
  if (all) cg_line(out, "    for (int _q = 0; _q < 4; ++_q) _acc[_i][_j][_q] += _tot[_i][_j][_q];");
  else cg_line(out, "    for (int _q = 0; _q < 4; ++_q) { _tot[_i][_j][_q] += _acc[_i][_j][_q]; _acc[_i][_j][_q] = 0.0f; }");
  out->indent--;
  cg_line(out, "}");
}

/* k-tile 0 into shared buffer 0, then per k-tile: the next one's loads in
 * flight during the math on the current one. */
static void emit_k_loop(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  int bk = ge->plan->tiling.cfg.bk;
  cg_line(out, "// k-tile 0 -> shared buffer 0");
  if (ge->plan->builder >= 0) {
    gemm_emit_table_write(ge, "0");
    cg_line(out, "__syncthreads();");
  }
  cg_line(out, "{");
  out->indent++;
  cg_line(out, "const long long _kb = _kt0 * %d;", bk);
  gemm_emit_loads(ge, "0");
  out->indent--;
  cg_line(out, "}");
  gemm_emit_k_advance(ge);
  gemm_emit_table_write(ge, "1");
  gemm_emit_stores(ge, "0");
  cg_line(out, "__syncthreads();");
  cg_line(out, "for (long long _kt = 0; _kt < _nkt; ++_kt) {");
  out->indent++;
  cg_line(out, "const int _cur = (int)(_kt & 1);");
  cg_line(out, "{ // k-tile _kt + 1 -> registers, in flight during the math below (none past the end: k >= K)");
  out->indent++;
  cg_line(out, "const long long _kb = (_kt0 + _kt + 1) * %d;", bk);
  gemm_emit_loads(ge, "_cur ^ 1");
  out->indent--;
  cg_line(out, "}");
  gemm_emit_k_advance(ge);
  gemm_emit_table_write(ge, "_cur");
  if (ge->plan->tiling.mma) emit_math_mma(ge);
  else emit_math_ffma(ge);
  gemm_emit_flush(ge, 0);
  gemm_emit_stores(ge, "_cur ^ 1");
  cg_line(out, "__syncthreads();");
  out->indent--;
  cg_line(out, "}");
  gemm_emit_flush(ge, 1);
}

void gemm_emit_first_copies(gemm_emitter *ge, int ahead) {
  cg_emit *out = &ge->emit;
  cg_line(out, "#pragma unroll");
  cg_line(out, "for (int _st = 0; _st < %d; ++_st) {", ahead);
  out->indent++;
  cg_line(out, "if (_st < _nkt) {");
  out->indent++;
  cg_line(out, "const long long _kb = (_kt0 + _st) * %d;", ge->plan->tiling.cfg.bk);
  gemm_emit_copies(ge, "_st");
  gemm_emit_k_advance(ge);
  out->indent--;
  cg_line(out, "}");
  cg_line(out, "kbc_cp_commit();");
  out->indent--;
  cg_line(out, "}");
}

void gemm_emit_next_copies(gemm_emitter *ge, int ahead) {
  cg_emit *out = &ge->emit;
  cg_line(out, "if (_kt + %d < _nkt) { // k-tile _kt + %d -> stage _nxt, in flight during the math", ahead, ahead);
  out->indent++;
  cg_line(out, "const long long _kb = (_kt0 + _kt + %d) * %d;", ahead, ge->plan->tiling.cfg.bk);
  gemm_emit_copies(ge, "_nxt");
  gemm_emit_k_advance(ge);
  out->indent--;
  cg_line(out, "}");
  cg_line(out, "kbc_cp_commit();");
}

/* The pipelined K loop: k-tiles requested stages - 1 ahead into a ring of
 * shared stages by cp.async (a commit group per k-tile, none past the
 * end); per k-tile one wait and one barrier, after which its stage is
 * complete for every thread and the stage of the k-tile before it free
 * for the next request. */
static void emit_k_loop_async(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  int S = ge->plan->stages;
  cg_line(out, "// k-tiles 0 .. %d -> stages 0 .. %d", S - 2, S - 2);
  gemm_emit_first_copies(ge, S - 1);
  cg_line(out, "int _cur = 0, _nxt = %d; // the stages of k-tiles _kt and _kt + %d", S - 1, S - 1);
  cg_line(out, "for (long long _kt = 0; _kt < _nkt; ++_kt) {");
  out->indent++;
  cg_line(out, "kbc_cp_wait<%d>();", S - 2);
  gemm_vec_low_pass(ge);
  cg_line(out, "__syncthreads(); // k-tile _kt landed for every thread; stage _nxt read by none (k-tile _kt - 1's)");
  gemm_emit_next_copies(ge, S - 1);
  if (ge->plan->tiling.mma) emit_math_mma(ge);
  else emit_math_ffma(ge);
  gemm_emit_flush(ge, 0);
  cg_line(out, "_cur = _cur == %d ? 0 : _cur + 1;", S - 1);
  cg_line(out, "_nxt = _nxt == %d ? 0 : _nxt + 1;", S - 1);
  out->indent--;
  cg_line(out, "}");
  cg_line(out, "kbc_cp_wait<0>();");
  cg_line(out, "__syncthreads(); // the stages free: for the epilogue's tile and the next tile's copies");
  gemm_emit_flush(ge, 1);
}

/* Split-K: the tile's K slices combined in slice order.  Each slice
 * stores its accumulators in scratch (thread-major: accumulator r of
 * thread t at r * 256 + t of the slice's part, coalesced), then counts
 * itself done in the tile's counter (module state, after a
 * __threadfence); the last slice to finish adds the parts of slices 0, 1,
 * ... in that order into its accumulators and goes on to the epilogue,
 * the others to their next tile.  The last resets the counter for the
 * next launch.  The sum's order is fixed, so the result is deterministic
 * (the atomic adds into a zeroed output it replaces were not), and the
 * epilogue, applied once to the whole sum, may be any (the atomics could
 * add only a sum plus terms the first slice added). */
static void emit_slices_combined(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const char *done = kbc_arena_printf(out->a, "_%s_done", ge->kname);
  cg_line(out, "if (_splits > 1) { // the slices' sums, added in slice order by the tile's last slice to finish");
  out->indent++;
  cg_line(out, "__shared__ bool _klast;");
  cg_line(out, "const int _nacc = (int)(sizeof _acc / sizeof(float)); // this thread's accumulators");
  cg_line(out, "float *const _ap = &_acc[0][0]%s;", plan->tiling.mma ? "[0]" : "");
  cg_line(out, "const long long _ot = _tile / _splits; // the output tile");
  cg_line(out, "float *const _part = _kws + _ot * _splits * %lld + _tid; // its parts, slice by slice; this thread's",
          (long long)plan->tiling.cfg.bm * plan->tiling.cfg.bn);
  cg_line(out, "{");
  cg_line(out, "  float *const _mine = _part + (_tile %% _splits) * _nacc * %d; // this slice's part", GEMM_THREADS);
  cg_line(out, "  #pragma unroll");
  cg_line(out, "  for (int _r = 0; _r < _nacc; ++_r) _mine[_r * %d] = _ap[_r];", GEMM_THREADS);
  cg_line(out, "}");
  cg_line(out, "__threadfence(); // the part is visible to the grid before the count says so");
  cg_line(out, "__syncthreads();");
  cg_line(out, "if (_tid == 0) _klast = atomicAdd(&%s[_ot], 1u) == (unsigned)(_nsl - 1);", done);
  cg_line(out, "__syncthreads();");
  cg_line(out, "if (!_klast) continue;");
  cg_line(out, "__threadfence();");
  cg_line(out, "#pragma unroll");
  cg_line(out, "for (int _r = 0; _r < _nacc; ++_r) _ap[_r] = 0.0f;");
  cg_line(out, "for (long long _q = 0; _q < _nsl; ++_q) { // slice by slice, in order");
  cg_line(out, "  const float *const _pq = _part + _q * _nacc * %d;", GEMM_THREADS);
  cg_line(out, "  #pragma unroll");
  cg_line(out, "  for (int _r = 0; _r < _nacc; ++_r) _ap[_r] += __ldcg(&_pq[_r * %d]); // from L2", GEMM_THREADS);
  cg_line(out, "}");
  cg_line(out, "if (_tid == 0) %s[_ot] = 0u; // ready for the next launch", done);
  out->indent--;
  cg_line(out, "}");
}

/* The block's next tile's first k-tiles copied now, before this tile's
 * epilogue (gemm_wgmma_prefetches): its coordinates and rows decoded again
 * in a scope of their own, shadowing this tile's, which the epilogue
 * reads; the next iteration's loop then skips its first copies. */
static void emit_next_tile_copies(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  cg_line(out, "if (_tile + (long long)gridDim.x < _tiles) { // the block's next tile: its first k-tiles in flight during this epilogue");
  out->indent++;
  cg_line(out, "const long long _next = _tile + (long long)gridDim.x;");
  cg_line(out, "{");
  out->indent++;
  cg_line(out, "const long long _tile = _next;");
  emit_tile_start(ge);
  gemm_emit_rows(ge, &plan->op[0]);
  gemm_emit_rows(ge, &plan->op[1]);
  if (plan->vec) gemm_vec_rows(ge);
  else gemm_emit_k_init(ge);
  gemm_emit_first_copies(ge, gemm_wgmma_ahead(ge));
  out->indent--;
  cg_line(out, "}");
  out->indent--;
  cg_line(out, "}");
}

void cg_emit_gemm(cg_ctx *C, const cg_gemm_plan *plan, const cg_kernel *k) {
  const ir_stmt *s = plan->s;
  gemm_emitter *ge = KBC_NEW(C->a, gemm_emitter);
  ge->ctx = C;
  ge->plan = plan;
  ge->kname = k->name;
  ge->names = cg_index_names(C->a, C->names, s);
  ge->bind = KBC_NEW_ARRAY(C->a, const char *, s->n_index + 1);
  for (int id = 0; id < s->n_index; id++) ge->bind[id] = ge->names[id];
  if (plan->fold) { /* t's indices stand for s's, by name */
    const cg_fold *f = plan->fold;
    ge->tbind = KBC_NEW_ARRAY(C->a, const char *, f->t->n_index + 1);
    for (int id = 0; id < f->t->n_index; id++) ge->tbind[id] = f->s_of_t[id] >= 0 ? ge->names[f->s_of_t[id]] : "0";
  }
  ge->emit = (cg_emit){.a = C->a, .p = C->p, .opt = &C->t->opt, .names = C->names, .out = C->out, .indent = 1, .s = s,
                    .idx = ge->bind};
  emit_header(ge, k);
  gemm_wgmma_sources(ge, k);
  emit_shared(ge);
  emit_extents(ge);
  if (!plan->win) gemm_emit_k_increments(ge);
  emit_thread_coords(ge);
  gemm_emit_ktab(ge);
  if (plan->win) gemm_win_table(ge);
  cg_line(&ge->emit, "for (long long _tile = blockIdx.x; _tile < _tiles; _tile += gridDim.x) {");
  ge->emit.indent++;
  emit_tile_start(ge);
  if (plan->win) gemm_win_tile(ge);
  if (plan->fold) gemm_fold_open(ge);
  if (!plan->win) {
    gemm_emit_rows(ge, &plan->op[0]);
    gemm_emit_rows(ge, &plan->op[1]);
    if (plan->vec) gemm_vec_rows(ge);
    else gemm_emit_k_init(ge);
  }
  emit_registers(ge);
  if (plan->win) gemm_win_k_loop(ge);
  else if (plan->wgmma) gemm_wgmma_k_loop(ge);
  else if (plan->stages > 2) emit_k_loop_async(ge);
  else emit_k_loop(ge);
  if (gemm_wgmma_prefetches(ge)) emit_next_tile_copies(ge);
  if (plan->fold) gemm_fold_close(ge);
  if (plan->split) emit_slices_combined(ge);
  if (plan->win && plan->epilogue.staged) cg_line(&ge->emit, "__syncthreads(); // the box read: the epilogue's tile over it");
  gemm_emit_epilogue(ge);
  ge->emit.indent--;
  cg_line(&ge->emit, "}");
  kbc_buf_puts(C->out, "}\n\n");
}
