/* gemm_vec.c — the tiled contraction's vector K loop: operands copied
 * into the shared stages in 16-byte chunks, fragments read by ldmatrix.
 *
 * Before: a plan whose operands are both plain loads (row offset + k
 * offset, not padded, no k tables) contiguous along the direction they
 * are copied in: k for a k-major operand (K one coordinate: one index or
 * flat), else its x (one coordinate: one index or flat rows).  After: the
 * plan's chunk slots (gemm_vec_plan: their rows printed by gemm_load.c's
 * gemm_emit_rows, as the staged loop's), and printed from it the copies of
 * one k-tile into a stage (gemm_vec_copies) and the mma fragments of the
 * k-major operands (gemm_vec_fragments); the shared tiles' layout of every
 * loop (gemm_tile_kx, gemm_tile_rows, gemm_tile_ld).
 *
 * A k-major operand's shared tile is [x][k], rows of BK + 4 floats: a
 * chunk is 4 consecutive k of one row, and the 8 rows an ldmatrix phase
 * reads (16 bytes each, rows 16 * (BK + 4) bytes apart) fall in distinct
 * banks, as do the scalar fragment reads (row g, column t4: bank
 * (BK + 4) g + t4 mod 32).  An x-major operand keeps the other loops'
 * [k][x] tile (rows padded to 8 mod 32 banks) with chunks of 4 consecutive
 * x.  A chunk is one cp.async of 16 bytes where its four elements lie
 * inside M, N and K and its global address is 16-byte aligned, else four
 * copies of 4 bytes, zero-filled outside: one test for a whole k-tile, and
 * where it fails (an edge, a binding's odd K, an offset tensor view) a test
 * per chunk, never a fault (gemm_vec_copies).  Under wgmma an x-major
 * operand may instead be transposed (gemm_operand.tr, KBC_GEMM_WGMMA_T):
 * its slots single elements, copied 4 bytes at a time into the K-major
 * swizzled stage (plan_transposed) — as is a gathered operand
 * (gemm_operand.gather, KBC_GEMM_GATHER: a convolution's input), each
 * element at its row's offset plus its k's from the whole-K table (and,
 * padded, tested in bounds over the row's digits and the k's from a
 * second table), the other operand's k offset its own flattening
 * (gemm_operand.kflat).  At 3xTF32 a transposed operand contiguous along
 * its x goes 16 bytes at a time instead (gemm_operand.trv): its chunks into
 * the stage's low half, transposed into place by the pass that splits them
 * (gemm_wgmma.c, emit_stage_pass).
 * Which tiles, k-tile depth and stages: gemm_plan.c's plan_vec.  Measured
 * on the H200 (2026-12-03, fp32, KernelBench's L2/12 at 1024 x 8192 x 8192):
 * 2,877 us in the register-staged loop, 2,230 in this one (cuBLAS's FFMA
 * SGEMM 2,699); in a stand-alone kernel of the loop, ldmatrix against
 * scalar fragment reads 2,323 against 2,483 us
 * (docs/results/2026-12-03-gemm-vec.txt). */
#include <string.h>

#include "gemm_impl.h"

static const char ldsm_helpers[] =
    "#ifndef KBC_LDSM_HELPERS\n"
    "#define KBC_LDSM_HELPERS\n"
    "// ldmatrix of four (two) 8x8 matrices of 16-bit elements, here 8 rows of 4 floats each:\n"
    "// lane l gives the shared address of row l % 8 of matrix l / 8 and receives, per matrix,\n"
    "// float l % 4 of row l / 4 (the mma.m16n8k8 .tf32 fragment layout).  Before sm_75 the same\n"
    "// through shuffles of the row addresses.\n"
    "__device__ __forceinline__ void kbc_ldsm4(unsigned a, unsigned *r) {\n"
    "#if __CUDA_ARCH__ >= 750\n"
    "  asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\"\n"
    "               : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(a) : \"memory\");\n"
    "#else\n"
    "  const int l = threadIdx.x % 32;\n"
    "  for (int j = 0; j < 4; ++j) {\n"
    "    const unsigned row = __shfl_sync(0xffffffffu, a, j * 8 + l / 4);\n"
    "    asm volatile(\"ld.shared.u32 %0, [%1];\" : \"=r\"(r[j]) : \"r\"(row + 4u * (l % 4)) : \"memory\");\n"
    "  }\n"
    "#endif\n"
    "}\n"
    "__device__ __forceinline__ void kbc_ldsm2(unsigned a, unsigned *r) {\n"
    "#if __CUDA_ARCH__ >= 750\n"
    "  asm volatile(\"ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\"\n"
    "               : \"=r\"(r[0]), \"=r\"(r[1]) : \"r\"(a) : \"memory\");\n"
    "#else\n"
    "  const int l = threadIdx.x % 32;\n"
    "  for (int j = 0; j < 2; ++j) {\n"
    "    const unsigned row = __shfl_sync(0xffffffffu, a, j * 8 + l / 4);\n"
    "    asm volatile(\"ld.shared.u32 %0, [%1];\" : \"=r\"(r[j]) : \"r\"(row + 4u * (l % 4)) : \"memory\");\n"
    "  }\n"
    "#endif\n"
    "}\n"
    "#endif\n\n";

void cg_emit_ldsm_helpers(kbc_buf *out) { kbc_buf_puts(out, ldsm_helpers); }

/* ---- the plan ------------------------------------------------------------- */

/* Whether a known stride (or the constant term) of off outside the chunk's
 * indices ids is not a multiple of 4: most chunks would then start
 * unaligned and go a float at a time (KernelBench's 8205 x 2949 x 5921:
 * 6,150 us against 5,640 for the register-staged loop, H200). */
static int known_misaligned(kbc_arena *a, const ir_stmt *s, sym *off, const int *ids, int n) {
  sym *rest, **coeff = KBC_NEW_ARRAY(a, sym *, s->n_index + 1);
  int64_t v;
  if (!sym_split_affine(a, off, s->n_index, coeff, &rest)) return 0;
  if (sym_is_const(rest, &v) && v % 4) return 1;
  for (int id = 0; id < s->n_index; id++) {
    int in = 0;
    for (int i = 0; i < n; i++) in |= ids[i] == id;
    if (!in && coeff[id] && sym_is_const(coeff[id], &v) && v % 4) return 1;
  }
  return 0;
}

int gemm_vec_operand_ok(kbc_arena *a, const cg_gemm_plan *plan, const gemm_operand *o) {
  const cg_contraction *c = &plan->tiling.c;
  if (!o->fast || o->guarded || o->table || o->e->op != IR_OP_LOAD) return 0;
  sym *off = ir_flat_offset(a, o->e->u.load.tensor, o->e->u.load.idx);
  const int *ids = o->kmajor ? c->k : o->x;
  int n = o->kmajor ? c->n_k : o->n_x;
  if (o->kmajor ? !(c->n_k == 1 || plan->kflat || o->kflat) : !(o->n_x == 1 || o->flat_rows)) return 0;
  if (!cg_offset_contiguous(a, plan->s, off, ids, n)) return 0;
  return known_misaligned(a, plan->s, off, ids, n) ? 2 : 1;
}

/* A transposed operand's load slots (gemm_operand.tr; bk 32, bx a
 * multiple of 64): slot j = r + R q (R = bx / 64 rows a thread) is the
 * element at x = _tid % 8 + 8 (_tid / 32 + 8 r), k = 4 q + _tid % 32 / 8;
 * the bx * 32 elements of a k-tile once each. */
static void plan_transposed(kbc_arena *a, gemm_operand *o, int bk) {
  int rows = o->bx / 64;
  o->chunks = o->bx * bk / GEMM_THREADS;
  o->chunk_partial = 0;
  o->n_rows = rows;
  for (int r = 0; r < rows; r++)
    o->row_expr[r] = r ? kbc_arena_printf(a, "(_tid %% 8 + 8 * (_tid / 32 + %d))", 8 * r) : "(_tid % 8 + 8 * (_tid / 32))";
  for (int j = 0; j < o->chunks; j++) {
    o->row_of[j] = j % rows;
    o->xl[j] = o->row_expr[j % rows];
    o->kl[j] = kbc_arena_printf(a, "(%d + _tid %% 32 / 8)", 4 * (j / rows));
  }
}

/* A transposed operand's chunk slots (gemm_operand.trv; bk 32, bx a
 * multiple of 64): slot j of warp w, lane l is the chunk of x = 8 (w + X) +
 * 4 (l % 2) .. + 3 at k = 16 H + l / 2, with X = 8 j % (bx / 8) and H =
 * 8 j / (bx / 8): the bx / 4 x 32 chunks of a k-tile once each. */
static void plan_transposed_vec(kbc_arena *a, gemm_operand *o, int bk) {
  int pairs = o->bx / 8;
  o->chunks = o->bx * bk / 4 / GEMM_THREADS;
  o->chunk_partial = 0;
  o->n_rows = 0;
  for (int j = 0; j < o->chunks; j++) {
    int X = 8 * j % pairs, H = 8 * j / pairs;
    o->xl[j] = X ? kbc_arena_printf(a, "(_tid / 32 * 8 + _tid %% 2 * 4 + %d)", 8 * X) : "(_tid / 32 * 8 + _tid % 2 * 4)";
    o->kl[j] = H ? kbc_arena_printf(a, "(%d + _tid %% 32 / 2)", 16 * H) : "(_tid % 32 / 2)";
    int r = 0;
    while (r < o->n_rows && strcmp(o->row_expr[r], o->xl[j])) r++;
    if (r == o->n_rows) o->row_expr[o->n_rows++] = o->xl[j];
    o->row_of[j] = r;
  }
}

int gemm_float_copies(const gemm_operand *o) { return o->tr && !o->trv; }

void gemm_vec_plan(kbc_arena *a, gemm_operand *o, int bk) {
  if (o->trv) {
    plan_transposed_vec(a, o, bk);
    return;
  }
  if (o->tr) {
    plan_transposed(a, o, bk);
    return;
  }
  int total = o->bx * bk / 4, per = o->kmajor ? bk / 4 : o->bx / 4; /* chunks in all, along a row */
  o->chunks = (total + GEMM_THREADS - 1) / GEMM_THREADS;
  o->chunk_partial = total % GEMM_THREADS != 0;
  /* chunk j = _tid + 256 j: its first element's local x and k; its row
   * shared with the chunks of the same x (as plan_loads' slots do) */
  o->n_rows = 0;
  for (int j = 0; j < o->chunks; j++) {
    const char *c = j ? kbc_arena_printf(a, "(_tid + %d)", j * GEMM_THREADS) : "_tid";
    const char *along = kbc_arena_printf(a, "%s %% %d * 4", c, per), *across = kbc_arena_printf(a, "%s / %d", c, per);
    o->xl[j] = o->kmajor ? across : along;
    o->kl[j] = o->kmajor ? along : across;
    int r = 0;
    while (r < o->n_rows && strcmp(o->row_expr[r], o->xl[j])) r++;
    if (r == o->n_rows) o->row_expr[o->n_rows++] = o->xl[j];
    o->row_of[j] = r;
  }
}

int gemm_tile_kx(const cg_gemm_plan *plan, const gemm_operand *o) { return plan->vec && o->kmajor; }

int gemm_tile_ld(const cg_gemm_plan *plan, const gemm_operand *o) {
  const gemm_cfg *f = &plan->tiling.cfg;
  if (gemm_tile_kx(plan, o)) return f->bk + 4;
  return o->tag == 'a' ? f->sa + f->pad_a : f->sb + f->pad_b;
}

int gemm_tile_rows(const cg_gemm_plan *plan, const gemm_operand *o) {
  return gemm_tile_kx(plan, o) ? o->bx : plan->tiling.cfg.bk;
}

/* A stage's bytes (with low_stage, its twin's besides). */
int gemm_plan_stage_bytes(const cg_gemm_plan *plan) {
  if (plan->wgmma) return gemm_wgmma_stage_bytes(plan);
  int floats = 0;
  for (int w = 0; w < 2; w++) floats += gemm_tile_rows(plan, &plan->op[w]) * gemm_tile_ld(plan, &plan->op[w]);
  return 4 * floats * (plan->low_stage ? 2 : 1);
}

/* With low_stage: the bytes from an element of a stage to its low part
 * (the twin of all stages follows them). */
int gemm_vec_low_at(const cg_gemm_plan *plan) { return plan->ring * gemm_plan_stage_bytes(plan) / 2; }

/* The C text of x's low TF32 part, x - (x & ~0x1fff): what 3xTF32 adds
 * beside the high part the tensor cores take from x as it is. */
const char *gemm_low_part(cg_emit *out, const char *x) {
  return cg_fmt(out, "%s - __uint_as_float(__float_as_uint(%s) & 0xffffe000u)", x, x);
}

/* The low TF32 parts x - (x & ~0x1fff) of the four floats at src (a C
 * float pointer, 16-byte aligned) written to the four at dst: 3xTF32's
 * operands split once in shared memory, whose high parts the tensor cores
 * take as they are (they ignore the low 13 bits).  The wgmma stages, the
 * vector loop's (low_stage) and the window's box (gemm_window.a_split). */
void gemm_emit_low4(cg_emit *out, const char *src, const char *dst) {
  cg_line(out, "const float4 _v = *(const float4 *)(%s);", src);
  cg_line(out, "float4 _l;");
  for (const char *c = "xyzw"; *c; c++)
    cg_line(out, "_l.%c = %s;", *c, gemm_low_part(out, cg_fmt(out, "_v.%c", *c)));
  cg_line(out, "*(float4 *)(%s) = _l;", dst);
}

/* With low_stage, once k-tile _kt's copies by this thread landed (its own
 * cp.async writes, visible to it after the wait; the barrier after shows
 * what this writes to every thread): each chunk it copied split into its
 * high part, left in place, and its low part x - (x & ~0x1fff), written to
 * the twin.  Its fragments then take both by ldmatrix (gemm_vec_fragments). */
void gemm_vec_low_pass(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  if (!plan->low_stage) return;
  cg_line(out, "// the low parts x - (x & ~0x1fff) of this thread's chunks, into the stages' twin (%d bytes on)",
          gemm_vec_low_at(plan));
  for (int w = 0; w < 2; w++) {
    const gemm_operand *o = &plan->op[w];
    for (int j = 0; j < o->chunks; j++) {
      int n = gemm_vec_chunk_threads(plan, o, j);
      cg_line(out, "%s{", n ? cg_fmt(out, "if (_tid < %d) ", n) : "");
      out->indent++;
      cg_line(out, "const float *const _q = &_%cs[_cur][%s][%s];", w ? 'B' : 'A', o->xl[j], o->kl[j]);
      gemm_emit_low4(out, "_q", cg_fmt(out, "(char *)_q + %d", gemm_vec_low_at(plan)));
      out->indent--;
      cg_line(out, "}");
    }
  }
}

/* ---- emission ------------------------------------------------------------- */

int gemm_vec_chunk_threads(const cg_gemm_plan *plan, const gemm_operand *o, int j) {
  int total = o->bx * plan->tiling.cfg.bk / 4;
  return o->chunk_partial && j == o->chunks - 1 ? total - j * GEMM_THREADS : 0;
}

/* The shared destination of chunk slot j of o in stage `stage`: _d (its
 * pointer, for the copies before sm_80) and _ds (its shared address). */
static void emit_dst(gemm_emitter *ge, const gemm_operand *o, int j, const char *stage) {
  cg_emit *out = &ge->emit;
  char T = o->tag == 'a' ? 'A' : 'B';
  int ld = gemm_tile_ld(ge->plan, o), rows = gemm_tile_rows(ge->plan, o);
  /* the chunk's first element in the tile: [x][k] (k-major) or [k][x] */
  const char *tr = o->kmajor ? o->xl[j] : o->kl[j], *tc = o->kmajor ? o->kl[j] : o->xl[j];
  if (ge->plan->wgmma) { /* the swizzled stages (gemm_wgmma.c) */
    cg_line(out, "const unsigned _so = %s;", gemm_wgmma_chunk_off(ge, o, j, stage));
    cg_line(out, "float *_d = _sp + _so / 4;");
    cg_line(out, "const unsigned _ds = _sw + _so;");
  } else {
    cg_line(out, "float *_d = &_%cs[%s][%s][%s];", T, stage, tr, tc);
    cg_line(out, "const unsigned _ds = _s%c + 4u * (unsigned)(((%s) * %d + %s) * %d + %s);", T, stage, rows, tr, ld, tc);
  }
}

/* Whether the row of chunk slot j lies inside M or N for all four of the
 * chunk's elements (k-major: the row's flag; x-major: its last x). */
static const char *row_in(cg_emit *out, const gemm_operand *o, int j) {
  int r = o->row_of[j];
  return o->kmajor || gemm_float_copies(o) ? cg_fmt(out, "_%cr%dok", o->tag, r) : cg_fmt(out, "_%cr%d + 3 < %s", o->tag, r, o->X);
}

/* Binds the K indices to k (a variable) and returns o's offset there (a
 * gathered operand's: from the whole-K table). */
static const char *offset_at(gemm_emitter *ge, const gemm_operand *o, const char *k) {
  const cg_contraction *c = &ge->plan->tiling.c;
  if (o->gather) return cg_fmt(&ge->emit, "_%cqk[%s]", o->tag, k);
  for (int i = 0; i < c->n_k; i++) ge->bind[c->k[i]] = k;
  return cg_sym(&ge->emit, o->k_off);
}

/* Chunk slot j of o into stage `stage`, each of its elements tested: its
 * row (gemm_emit_rows) is row_of[j].  (A transposed operand's slot is one
 * element: its row's flag and k.) */
static void emit_chunk(gemm_emitter *ge, const gemm_operand *o, int j, const char *stage) {
  cg_emit *out = &ge->emit;
  int r = o->row_of[j];
  const char *name = ge->src[o->tag == 'b'];
  int n = gemm_vec_chunk_threads(ge->plan, o, j);
  cg_line(out, "%s{", n ? cg_fmt(out, "if (_tid < %d) ", n) : "");
  out->indent++;
  cg_line(out, "const long long _kc = _kb + %s;", o->kl[j]);
  cg_line(out, "const long long _o = _%co%d + %s;", o->tag, r, offset_at(ge, o, "_kc"));
  emit_dst(ge, o, j, stage);
  if (gemm_float_copies(o)) { /* one float, zero outside (a guarded operand's: outside its tensor too) */
    const char *in = cg_fmt(out, "%s && _kc < _kend", row_in(out, o, j));
    if (o->guarded) in = cg_fmt(out, "%s && %s", in, gemm_guard_test(ge, o, j));
    cg_line(out, "kbc_cp_async4(_d, _ds, %s ? %s + _o : %s, %s);", in, name, name, in);
  } else { /* in range: all four elements (in4), element _e (in1) */
    const char *in4 = o->kmajor ? cg_fmt(out, "%s && _kc + 3 < _kend", row_in(out, o, j))
                                : cg_fmt(out, "_kc < _kend && %s", row_in(out, o, j));
    const char *in1 = o->kmajor ? cg_fmt(out, "_%cr%dok && _kc + _e < _kend", o->tag, r)
                                : cg_fmt(out, "_kc < _kend && _%cr%d + _e < %s", o->tag, r, o->X);
    gemm_emit_chunk_copy(out, name, in4, "_e", in1);
  }
  out->indent--;
  cg_line(out, "}");
}

/* Per tile, for the copies' single test (gemm_vec_copies): _vok, every
 * chunk's row inside M or N (the chunks of a partial slot only for the
 * threads that copy them), and (wgmma) each row's start as a pointer, to
 * which a k-tile adds its k offset: one wide multiply-add a chunk where
 * the row offset had been recomputed (4096^3 TF32 418 -> 393 us; on the
 * mma.sync loops, which are not issue-bound, the pointers' registers cost
 * 1-4%: H200, 2026-12-04). */
void gemm_vec_rows(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const char *rows = "";
  for (int w = 0; w < 2; w++) {
    const gemm_operand *o = &ge->plan->op[w];
    for (int j = 0; j < o->chunks; j++) {
      int n = gemm_vec_chunk_threads(ge->plan, o, j);
      const char *ok = row_in(out, o, j);
      if (n) ok = cg_fmt(out, "(_tid >= %d || %s)", n, ok);
      rows = cg_fmt(out, "%s%s%s", rows, *rows ? " && " : "", ok);
    }
  }
  cg_line(out, "const bool _vok = %s; // every chunk's row inside", rows);
  for (int w = 0; w < 2 && ge->plan->wgmma; w++) {
    const gemm_operand *o = &ge->plan->op[w];
    const char *name = ge->src[o->tag == 'b'];
    for (int r = 0; r < o->n_rows; r++)
      cg_line(out, "const float *const _p%c%d = %s + _%co%d; // row %d's start", o->tag, r, name, o->tag, r, r);
  }
}

/* align with pointer ptr's address or-ed in (for the threads that copy
 * chunk slot j only: n of them, 0 all). */
static const char *or_address(cg_emit *out, const char *align, const char *ptr, int n) {
  const char *at = cg_fmt(out, "(unsigned long long)(size_t)%s", ptr);
  if (n) at = cg_fmt(out, "(_tid < %d ? %s : 0ull)", n, at);
  return cg_fmt(out, "%s%s%s", align, *align ? " | " : "", at);
}

/* Every chunk of a k-tile into stage `stage` as one straight-line copy
 * each: from _g<tag><j> (a gathered operand zero outside its tensor),
 * or, for an edge tile (edge), from _e<tag><j>, zero where its row is
 * outside. */
static void straight_copies(gemm_emitter *ge, const char *stage, int edge) {
  cg_emit *out = &ge->emit;
  for (int w = 0; w < 2; w++) {
    const gemm_operand *o = &ge->plan->op[w];
    for (int j = 0; j < o->chunks; j++) {
      int n = gemm_vec_chunk_threads(ge->plan, o, j);
      cg_line(out, "%s{", n ? cg_fmt(out, "if (_tid < %d) ", n) : "");
      out->indent++;
      emit_dst(ge, o, j, stage);
      if (edge) {
        cg_line(out, "kbc_cp_async16(_d, _ds, _e%c%d, %s);", o->tag, j, row_in(out, o, j));
      } else if (o->guarded) { /* a gathered operand's padding: zero outside its tensor */
        const char *in = cg_fmt(out, "_in%c%d", o->tag, j);
        cg_line(out, "const bool %s = %s;", in, gemm_guard_test(ge, o, j));
        cg_line(out, "kbc_cp_async4(_d, _ds, %s ? _g%c%d : %s, %s);", in, o->tag, j, ge->src[o->tag == 'b'], in);
      } else {
        cg_line(out, "kbc_cp_async%d(_d, _ds, _g%c%d, true);", gemm_float_copies(o) ? 4 : 16, o->tag, j);
      }
      out->indent--;
      cg_line(out, "}");
    }
  }
}

/* An edge tile's k-tile (some chunk's row outside M or N) where the k-tile
 * lies inside K and the rows inside are 16-byte aligned: each chunk a
 * cp.async of 16 bytes, those of rows outside zero-filled from the
 * tensor's start, straight-line code as in a whole tile; this prints the
 * test and that branch and leaves an `else {` open for the chunks tested
 * one by one, returning 1 — or, where some operand is not k-major plain
 * (a chunk along M or N may lie partly outside, a transposed or gathered
 * operand copies a float at a time), prints nothing and returns 0.  For
 * products of few rows, all of whose tiles are edge tiles: 49 x 2304 x
 * 768 went the per-chunk way every k-tile (ncu, H100: 2,400 instructions
 * a warp for 8 k-tiles, issue-latency-bound). */
static int edge_copies(gemm_emitter *ge, const char *stage) {
  cg_emit *out = &ge->emit;
  if (!ge->ctx->t->opt.gemm_edge) return 0;
  for (int w = 0; w < 2; w++) {
    const gemm_operand *o = &ge->plan->op[w];
    if (!o->kmajor || o->tr || o->guarded) return 0;
  }
  const char *align = "";
  for (int w = 0; w < 2; w++) {
    const gemm_operand *o = &ge->plan->op[w];
    const char *name = ge->src[o->tag == 'b'];
    for (int j = 0; j < o->chunks; j++) {
      const char *e = cg_fmt(out, "_e%c%d", o->tag, j);
      cg_line(out, "const float *const %s = %s ? _g%c%d : %s; // outside: the tensor's start", e, row_in(out, o, j),
              o->tag, j, name);
      align = or_address(out, align, e, gemm_vec_chunk_threads(ge->plan, o, j));
    }
  }
  cg_line(out, "if (_kb + %d <= _kend && ((%s) & 15) == 0) { // an edge tile: rows outside zero-filled",
          ge->plan->tiling.cfg.bk, align);
  out->indent++;
  straight_copies(ge, stage, 1);
  out->indent--;
  cg_line(out, "} else {");
  return 1;
}

/* One k-tile's chunks into stage `stage`.  Where the k-tile lies inside K,
 * every chunk's row inside M or N and every chunk's address 16-byte
 * aligned (a whole tile of an aligned binding: all but the edge tiles), one
 * test for all of them and then a cp.async of 16 bytes each, straight-line
 * code; else each chunk tested on its own (emit_chunk).  Per-chunk tests
 * and branches had made the wgmma loop issue-bound: 271 instructions a warp
 * per k-tile, 6.7 cycles between issues, 61% of the tensor cores (ncu,
 * H200, 4096^3 TF32, 2026-12-04). */
void gemm_vec_copies(gemm_emitter *ge, const char *stage) {
  cg_emit *out = &ge->emit;
  const char *align = "";
  cg_line(out, "{");
  out->indent++;
  for (int w = 0; w < 2; w++) {
    const gemm_operand *o = &ge->plan->op[w];
    const char *name = ge->src[o->tag == 'b'];
    for (int j = 0; j < o->chunks; j++) {
      int n = gemm_vec_chunk_threads(ge->plan, o, j);
      const char *kc = cg_fmt(out, "_kc%c%d", o->tag, j), *g = cg_fmt(out, "_g%c%d", o->tag, j);
      cg_line(out, "const long long %s = _kb + %s;", kc, o->kl[j]);
      if (ge->plan->wgmma)
        cg_line(out, "const float *const %s = _p%c%d + (%s);", g, o->tag, o->row_of[j], offset_at(ge, o, kc));
      else
        cg_line(out, "const float *const %s = %s + (_%co%d + %s);", g, name, o->tag, o->row_of[j], offset_at(ge, o, kc));
      if (gemm_float_copies(o)) continue; /* copied a float at a time: any address */
      align = or_address(out, align, g, n);
    }
  }
  if (*align)
    cg_line(out, "if (_vok && _kb + %d <= _kend && ((%s) & 15) == 0) { // every chunk whole and aligned",
            ge->plan->tiling.cfg.bk, align);
  else cg_line(out, "if (_vok && _kb + %d <= _kend) { // every element inside", ge->plan->tiling.cfg.bk);
  out->indent++;
  straight_copies(ge, stage, 0);
  out->indent--;
  cg_line(out, "} else {");
  out->indent++;
  int edge = edge_copies(ge, stage); /* its else branch open: the chunks one by one inside it */
  out->indent += edge;
  for (int w = 0; w < 2; w++)
    for (int j = 0; j < ge->plan->op[w].chunks; j++) emit_chunk(ge, &ge->plan->op[w], j, stage);
  out->indent -= edge;
  if (edge) cg_line(out, "}");
  out->indent--;
  cg_line(out, "}");
  out->indent--;
  cg_line(out, "}");
}

/* Fragment register fr from ldmatrix's word q (_r[q]): split into high and
 * low TF32 parts (3xTF32: fr and its low twin frl), or rounded to TF32;
 * with low_stage the word as it is and the low part the twin's (_rl[q]). */
static void take(gemm_emitter *ge, const char *fr, const char *frl, int q) {
  if (ge->plan->low_stage) cg_line(&ge->emit, "  %s = _r[%d], %s = _rl[%d];", fr, q, frl, q);
  else if (ge->plan->tiling.split3)
    cg_line(&ge->emit, "  kbc_split_tf32_fast(__uint_as_float(_r[%d]), %s, %s);", q, fr, frl);
  else cg_line(&ge->emit, "  %s = __float_as_uint(kbc_tf32(__uint_as_float(_r[%d])));", fr, q);
}

void gemm_vec_fragments(gemm_emitter *ge, const gemm_operand *o) {
  cg_emit *out = &ge->emit;
  const gemm_cfg *f = &ge->plan->tiling.cfg;
  int ld = gemm_tile_ld(ge->plan, o);
  if (o->tag == 'a') {
    /* an m16 tile: matrices (rows 0-7, k 0-3), (8-15, 0-3), (0-7, 4-7), (8-15, 4-7) */
    cg_line(out, "#pragma unroll");
    cg_line(out, "for (int _i = 0; _i < %d; ++_i) {", f->mi);
    cg_line(out, "  unsigned _r[4]%s;", ge->plan->low_stage ? ", _rl[4]" : "");
    const char *at =
        cg_fmt(out, "_sA + 4u * (unsigned)((_cur * %d + _wm0 + _i * 16 + _lra) * %d + _kk + _lca)", o->bx, ld);
    cg_line(out, "  kbc_ldsm4(%s, _r);", at);
    if (ge->plan->low_stage) cg_line(out, "  kbc_ldsm4(%s + %du, _rl); // their low parts", at, gemm_vec_low_at(ge->plan));
    for (int q = 0; q < 4; q++)
      take(ge, cg_fmt(out, "_fa[_i][%d]", q), cg_fmt(out, "_fal[_i][%d]", q), q);
    cg_line(out, "}");
    return;
  }
  /* two n8 tiles per ldmatrix: matrices (n 0-7, k 0-3), (0-7, 4-7), (8-15, 0-3), (8-15, 4-7) */
  for (int j = 0; j < f->ni; j += 2) {
    int two = j + 1 < f->ni;
    cg_line(out, "{");
    cg_line(out, "  unsigned _r[4]%s;", ge->plan->low_stage ? ", _rl[4]" : "");
    const char *at =
        cg_fmt(out, "_sB + 4u * (unsigned)((_cur * %d + _wn0 + %d + _lrb) * %d + _kk + _lcb)", o->bx, j * 8, ld);
    cg_line(out, "  kbc_ldsm%d(%s, _r);", two ? 4 : 2, at);
    if (ge->plan->low_stage)
      cg_line(out, "  kbc_ldsm%d(%s + %du, _rl); // their low parts", two ? 4 : 2, at, gemm_vec_low_at(ge->plan));
    for (int t = 0; t <= two; t++)
      for (int q = 0; q < 2; q++)
        take(ge, cg_fmt(out, "_fb[%d][%d]", j + t, q), cg_fmt(out, "_fbl[%d][%d]", j + t, q), 2 * t + q);
    cg_line(out, "}");
  }
}
