/* gemm_win.c — the window K loop: a gathered operand read in place from a
 * box of its tensor staged in shared memory (gemm_window, gemm_impl.h).
 *
 * An implicit-GEMM convolution's A element (m, k) is x[n, ci, z + dz,
 * i + di, j + dj]: the register-staged loop loads BM x K such elements
 * per tile from global memory, each input element about K / (its reuse)
 * times over.  Here the tile's rows (inside one value of the outer M
 * digits) and the whole K touch a box of x — per dimension the range of
 * its index over the tile — which the block stages once (zero outside the
 * tensor: padded loads), then the mma fragments read A straight from it
 * at _W[ro(m) + ko(k)]: ro per thread row and tile, ko from a table of
 * the whole K written once per block.  B (the N tile by the whole K) is
 * staged once per tile beside it (once per block where every tile has
 * the same).  With a fold, the box is staged again for each value of its
 * R, B and the row offsets not.  Pipelined (opt.gemm_win_pipe, the
 * default, where two boxes and the epilogue's tile fit in dynamic shared
 * memory): the block's steps (each tile's fold steps, its tiles in turn)
 * stage the next step's box by cp.async into the other buffer during this
 * step's math, a thread a 16-byte chunk of a row (rows padded to 4 floats;
 * four 4-byte copies at an edge or an unaligned address); at TF32 each
 * thread rounds the elements it copied once they land, so that the
 * fragments read them as they are.  Under a fold of one index that moves
 * the box along one dimension alone (a convolution's output depth:
 * opt.gemm_win_ring), the two boxes are one ring of twice the box's planes
 * along it: a fold step copies only the planes the next step adds (one
 * of three for a 3-deep kernel), a new tile all of them, the k table
 * (two, rewritten a step ahead) naming the planes' slots.  The k table holds byte offsets and
 * each thread's fragment rows are addresses: an A element is one add and
 * one load.
 *
 * The choices, from constant extents (a specialized binding, the
 * runtime's default): the outer M digits and the padding of the box's
 * rows with the fewest shared-memory wavefronts per useful row (the box
 * staged, plus the warps' A fragment reads, each as many as the most
 * distinct addresses in one bank, simulated over the whole K), among
 * those that fit beside B in 46 KB and read each staged element at least
 * GEMM_WIN_REUSE times.  By default (opt.gemm_win 1) under a fold only:
 * on the H200 (2026-12-04, docs/results/2026-12-04-win.txt) conv3d ->
 * min -> softmax at batch 128 went from 522 to 383 us at fp32 (3xTF32
 * now, FFMA before) and 362 to 301 at tf32, where the box and B, staged
 * per tile, serve R K loops; unfolded, each tile stages, waits, then
 * computes once, with nothing to overlap but the other block: batch 16
 * 1.03x / 1.11x slower, the suite's conv3d 1.035x slower, its 3x3x1
 * conv3d 0.954.  opt.gemm_win 2 takes it wherever it fits.  Pipelined,
 * chunked, rounded once (2026-12-04, docs/results/2026-12-04-win2.txt):
 * batch 128 334 -> 247 us at fp32, 252 -> 165 at tf32 (against the
 * pipelined loop of a warp a row, itself 0.87x / 0.84x of the single
 * buffer); unfolded (opt.gemm_win 2 against 0) the suite's conv3d 0.87x
 * and 0.84x, but its conv2d 1.9x and conv1d 1.17x slower, its AlexNet
 * conv 1.18x: still under a fold only by default.  The ring: batch 128
 * fp32 244 -> 226 us (tf32 not measured: the session's device time ran
 * out).  Unfolded by default where K is at most GEMM_WIN_SHORT_K, the
 * pipelined boxes only (each staged element read GEMM_WIN_REUSE times):
 * on the H100 (2026-12-06, fp32, against the 3xTF32 gathered loop, the
 * suite's convolutions side by side) the seven that qualify, K of 72 and
 * 81 (conv2d of 8 channels, conv3d of 3), 1.04-1.34x faster (L2/82 1.34x,
 * L2/67 1.32x, L2/6 1.21x); the longer K lost (L1/66 K 315 0.57x, AlexNet
 * 363 0.60x, conv1d 192 0.74x), as did boxes read about once (the
 * transposed convolutions' K = 64: 0.81x, 0.94x).
 *
 * Before: a plan with a tensor-core tiling (gemm_plan.c).  After
 * gemm_win_plan(): plan->win where it applies; the emitters print the loop
 * from it. */
#include <string.h>

#include "gemm_impl.h"

enum {
  GEMM_WIN_REUSE = 2,            /* (m, k) pairs of a tile per staged box element, at least */
  GEMM_WIN_SHORT_K = 128,        /* unfolded, by default: K at most this (a tile's few k-steps) */
  GEMM_WIN_SMEM = 46 * 1024,     /* static shared memory: the box (or the epilogue's tile), B, the k table */
  GEMM_WIN_PIPE_SMEM = 96 * 1024, /* dynamic (pipelined): two boxes and the epilogue's tile (two blocks an SM) */
};

/* ---- the plan ------------------------------------------------------------ */

/* Whether B may be split into TF32 parts once, where staged (3xTF32):
 * every warp along M reads each B element of a k-step, so splitting it
 * there (an AND and a subtraction a fragment element) repeats the work per
 * warp and per k-step a tile's rows take.  The pipelined window only: the
 * single-buffered one keeps its static shared memory for the box, and at
 * sm_90 conv3d's spilled 8 bytes with both parts' loads in flight.  (The
 * plan takes it where both parts fit in static shared memory: the suite's
 * convolutions of 64 channels did not, and NVRTC refused them.) */
static int b_split(const cg_target *t, const cg_gemm_plan *plan, int pipe) {
  return pipe && plan->tiling.split3 && t->opt.gemm_win_bsplit;
}

/* The window's static shared memory: B (twice with its low parts) and the
 * k table (two under the ring). */
static int64_t static_bytes(const gemm_window *w, int bn) {
  return (int64_t)bn * w->ldb * 4 * (w->b_split ? 2 : 1) + w->kp * 4 * (w->ring >= 0 ? 2 : 1);
}

static int64_t const_of(const sym *x, int *ok) {
  int64_t v = 0;
  if (!x || !sym_is_const(x, &v)) *ok = 0;
  return v;
}

/* The box of window w (split, anchored set) for row padding `pad` of its
 * last dimension: extents, strides, elements.  range[id]: the values id
 * takes inside a tile, minus one. */
static void box_layout(gemm_window *w, const int64_t *range, int n_index, int pad) {
  int D = w->n_dim;
  for (int d = 0; d < D; d++) {
    int64_t e = 1;
    for (int id = 0; id < n_index; id++) e += w->coef[d * n_index + id] * range[id];
    w->ext[d] = e;
  }
  w->bs[D - 1] = 1;
  for (int d = D - 2; d >= 0; d--) w->bs[d] = d == D - 2 ? w->ext[D - 1] + pad : w->bs[d + 1] * w->ext[d + 1];
  w->box = D == 1 ? w->ext[0] : w->bs[0] * w->ext[0];
}

/* id's offset per unit in the box (sum over dimensions of stride times
 * coefficient). */
static int64_t box_coef(const gemm_window *w, int n_index, int id) {
  int64_t c = 0;
  for (int d = 0; d < w->n_dim; d++)
    if (d != w->ring) c += w->bs[d] * w->coef[d * n_index + id];
  return c;
}

/* Where the window can slide along a fold's index instead of restaging
 * (gemm_window.ring): w's ring fields and ring layout set, 1. */
static int ring_plan(gemm_window *w, const cg_contraction *c, const cg_fold *fold, int n) {
  int D = w->n_dim, r = fold && fold->n_r == 1 ? fold->r[0] : -1, ring = -1;
  if (r < 0 || !w->pipe || !w->chunks) return 0;
  for (int d = 0; d < D; d++)
    if (w->coef[d * n + r]) {
      if (ring >= 0) return 0; /* r in two dimensions */
      ring = d;
    }
  if (ring < 0 || ring == D - 1 || w->coef[ring * n + r] >= w->ext[ring]) return 0;
  for (int i = 0; i < c->n_m; i++)
    if (w->coef[ring * n + c->m[i]]) return 0;
  w->ring = ring;
  w->ring_e = w->ext[ring];
  w->ring_cr = w->coef[ring * n + r];
  /* strides over 2 ring_e planes along it: the buffer of both boxes (the
   * rows' own stride, bs[D - 2], as it was) */
  for (int d = D - 3; d >= 0; d--) w->bs[d] = w->bs[d + 1] * (d + 1 == ring ? 2 * w->ring_e : w->ext[d + 1]);
  return 1;
}

/* The digits of flat value v over ids (extents E, the last fastest). */
static void digits_of(int64_t v, const int *ids, int n, const int64_t *E, int64_t *dst) {
  for (int i = n - 1; i >= 0; i--) {
    dst[ids[i]] = i ? v % E[ids[i]] : v;
    v /= E[ids[i]];
  }
}

/* Bank conflicts of the A fragment reads of one warp over the whole K, at
 * the tile of rows from 0: per k8 step and register, the most distinct
 * addresses in one of 32 banks, summed. */
static int64_t conflicts(kbc_arena *a, const gemm_window *w, const cg_contraction *c, const int64_t *E, int n_index,
                         int64_t K) {
  int64_t total = 0, *dig = KBC_NEW_ARRAY(a, int64_t, n_index + 1), *cf = KBC_NEW_ARRAY(a, int64_t, n_index + 1);
  int64_t ro[16], ko[8];
  for (int id = 0; id < n_index; id++) cf[id] = box_coef(w, n_index, id);
  for (int r = 0; r < 16; r++) {
    memset(dig, 0, ((size_t)n_index + 1) * sizeof *dig);
    digits_of(r, c->m + w->split, c->n_m - w->split, E, dig);
    ro[r] = 0;
    for (int i = w->split; i < c->n_m; i++) ro[r] += cf[c->m[i]] * dig[c->m[i]];
  }
  for (int64_t kk = 0; kk < K; kk += 8) {
    for (int q = 0; q < 8; q++) {
      memset(dig, 0, ((size_t)n_index + 1) * sizeof *dig);
      digits_of(kk + q < K ? kk + q : 0, c->k, c->n_k, E, dig);
      ko[q] = 0;
      for (int i = 0; i < c->n_k; i++) ko[q] += cf[c->k[i]] * dig[c->k[i]];
    }
    for (int reg = 0; reg < 4; reg++) { /* rows g or g + 8, k t4 or t4 + 4 */
      int64_t addr[32];
      int in_bank[32] = {0}, worst = 1;
      for (int l = 0; l < 32; l++) {
        addr[l] = ro[l / 4 + (reg & 1) * 8] + ko[l % 4 + (reg >> 1) * 4];
        int seen = 0; /* the same address: one read (a broadcast) */
        for (int l2 = 0; l2 < l; l2++) seen |= addr[l2] == addr[l];
        int b = (int)(((addr[l] % 32) + 32) % 32);
        if (!seen && ++in_bank[b] > worst) worst = in_bank[b];
      }
      total += worst;
    }
  }
  return total;
}

int gemm_win_plan(kbc_arena *a, const cg_target *t, cg_gemm_plan *plan) {
  const gemm_tiling *tl = &plan->tiling;
  const gemm_cfg *f = &tl->cfg;
  const cg_contraction *c = &tl->c;
  const ir_stmt *s = plan->s;
  const ir_expr *A = plan->op[0].e;
  const gemm_operand *B = &plan->op[1];
  if (!t->opt.gemm_win || t->sm < 80 || !tl->mma || A->op != IR_OP_LOAD || !B->fast || B->guarded) return 0;
  const ir_tensor *x = A->u.load.tensor;
  int n = s->n_index, D = x->rank, ok = 1;
  if (D < 1 || D > GEMM_WIN_DIMS) return 0;
  int64_t M = const_of(tl->M, &ok), N = const_of(tl->N, &ok), K = const_of(tl->K, &ok), Bt = const_of(tl->B, &ok);
  int64_t *E = KBC_NEW_ARRAY(a, int64_t, n + 1);
  for (int id = 0; id < n; id++) E[id] = const_of(s->index[id].extent, &ok);
  int64_t shape[GEMM_WIN_DIMS];
  for (int d = 0; d < D; d++) shape[d] = const_of(x->shape[d], &ok);
  if (!ok || M < 1 || N < 1 || K < 1) return 0;
  if (t->opt.gemm_win == 1 && !plan->fold && K > GEMM_WIN_SHORT_K) return 0;
  gemm_window w = {.n_dim = D, .anchored = -1, .ring = -1};
  w.xs[D - 1] = 1;
  for (int d = D - 2; d >= 0; d--) w.xs[d] = w.xs[d + 1] * shape[d + 1];
  w.coef = KBC_NEW_ARRAY(a, int64_t, (size_t)D * n + 1);
  sym **coeff = KBC_NEW_ARRAY(a, sym *, n + 1);
  for (int d = 0; d < D; d++) {
    sym *rest;
    if (!sym_split_affine(a, A->u.load.idx[d], n, coeff, &rest) || !sym_is_const(rest, NULL)) return 0;
    for (int id = 0; id < n; id++) {
      int64_t v = 0;
      if (coeff[id] && !sym_is_const(coeff[id], &v)) return 0;
      if (v < 0) return 0;
      w.coef[d * n + id] = v;
    }
  }
  w.kp = (K + 7) / 8 * 8;
  w.ldb = (int)(w.kp + ((4 - w.kp) % 32 + 32) % 32); /* rows = 4 mod 32 banks: B fragments conflict-free */
  /* the outer digits and the row padding with the fewest shared-memory
   * wavefronts per useful row that fit (two boxes, where pipelined) */
  int64_t *range = KBC_NEW_ARRAY(a, int64_t, n + 1);
  int cs = plan->epilogue.staged ? f->bm * (plan->epilogue.nc + 1) * 4 : 0; /* the epilogue's tile */
  double best = 0;
  int found = 0;
  gemm_window chosen = w;
  /* unfolded by default: the pipelined boxes only (the measured ones) */
  int least = t->opt.gemm_win == 1 && !plan->fold ? 1 : 0;
  for (int pipe = t->opt.gemm_win_pipe ? 1 : 0; pipe >= least && !found; pipe--) {
    for (int split = 0; split < c->n_m; split++) {
      gemm_window v = w;
      v.pipe = pipe;
      v.split = split;
      v.mi = 1;
      for (int i = split; i < c->n_m; i++) v.mi *= E[c->m[i]];
      v.ti = (v.mi + f->bm - 1) / f->bm;
      v.mo = M / v.mi;
      memset(range, 0, (size_t)(n + 1) * sizeof *range);
      for (int i = 0; i < c->n_k; i++) range[c->k[i]] = E[c->k[i]] - 1;
      /* the slowest inner digit takes at most floor((BM - 1) / P) + 2 values
       * (P: the faster inner digits' extents); the others any */
      int64_t P = 1;
      for (int i = split + 1; i < c->n_m; i++) P *= E[c->m[i]];
      int64_t takes = (f->bm - 1) / P + 2;
      v.anchored = takes < E[c->m[split]] ? c->m[split] : -1;
      for (int i = split; i < c->n_m; i++) range[c->m[i]] = E[c->m[i]] - 1;
      if (v.anchored >= 0) range[v.anchored] = takes - 1;
      double util = (double)v.mi / (double)(v.ti * f->bm);
      for (int pad = 0; pad < (D > 1 ? 32 : 1); pad++) {
        gemm_window u = v;
        box_layout(&u, range, n, pad);
        /* pipelined, rows a multiple of 4 floats: copied in 16-byte chunks */
        u.chunks = pipe && D > 1 && u.bs[D - 2] % 4 == 0;
        if (pipe && D > 1 && !u.chunks) continue;
        /* static: B (its low parts too where both stay within static
         * shared memory's 48 KB) and the k table (the ring not planned yet) */
        u.b_split = b_split(t, plan, pipe);
        if (u.b_split && static_bytes(&u, f->bn) > GEMM_WIN_SMEM) u.b_split = 0;
        int64_t fixed = static_bytes(&u, f->bn);
        /* one box over the epilogue's tile, static; or (pipelined) two
         * and the epilogue's tile apart (copies in flight during it),
         * dynamic */
        int64_t bytes = pipe ? 2 * u.box * 4 + cs : (u.box * 4 > cs ? u.box * 4 : cs);
        if ((pipe ? bytes > GEMM_WIN_PIPE_SMEM || bytes + fixed > t->smem_per_block : bytes + fixed > GEMM_WIN_SMEM) ||
            (t->opt.gemm_win == 1 && (double)f->bm * util * K < GEMM_WIN_REUSE * (double)u.box))
          continue;
        /* shared-memory wavefronts per useful row: the box staged (a store
         * and a load per 32 elements), the warps' A fragment reads (the most
         * distinct addresses in a bank per read) */
        double waves = 2.0 * (double)u.box / 32 + (double)(f->wm * f->wn * f->mi) * (double)conflicts(a, &u, c, E, n, K);
        double cost = waves / (f->bm * util);
        if (!found || cost < best) {
          best = cost;
          chosen = u;
          found = 1;
        }
      }
    }
  }
  if (!found) return 0;
  if (t->opt.gemm_win_ring) ring_plan(&chosen, c, plan->fold, n);
  chosen.b_once = N <= f->bn && c->n_b == 0;
  if (chosen.pipe && plan->tiling.split3 && t->opt.gemm_win_asplit) { /* the twin over the epilogue's tile, if it fits */
    int64_t twin = 2 * chosen.box * 4, bytes = twin + (twin > cs ? twin : cs);
    chosen.a_split = bytes <= GEMM_WIN_PIPE_SMEM && bytes + static_bytes(&chosen, f->bn) <= t->smem_per_block;
  }
  gemm_window *keep = KBC_NEW(a, gemm_window);
  *keep = chosen;
  plan->win = keep;
  /* its tiles lie inside the outer rows' values: mo * ti of them along M */
  plan->tiling.tiles = sym_const(a, chosen.mo * chosen.ti * ((N + f->bn - 1) / f->bn) * Bt);
  return 1;
}

/* ---- emission ------------------------------------------------------------ */

static void emit_step_box(gemm_emitter *ge, const char *tile, const char *r, const char *pre, const char *buf);
static void emit_b_staging(gemm_emitter *ge, const char *n0);
static void emit_box_copies(gemm_emitter *ge, const char *pre, const char *buf);

void gemm_win_shared(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const gemm_window *w = plan->win;
  const gemm_cfg *f = &plan->tiling.cfg;
  const char *x = ge->ctx->names->tensor[plan->op[0].e->u.load.tensor->id];
  const char *shape = "";
  for (int d = 0; d < w->n_dim; d++)
    shape = cg_fmt(out, "%s%s%lld", shape, d ? " x " : "", (long long)w->ext[d]);
  const char *what = cg_fmt(out, "// the box of %s%s: %s, rows of %lld", x, w->pipe ? " (two: this step's, the next's)" : "",
                            shape, (long long)(w->n_dim > 1 ? w->bs[w->n_dim - 2] : w->box));
  if (w->ring >= 0) { /* dynamic: the ring (both boxes' room), then the epilogue's tile */
    cg_line(out, "KBC_DYNAMIC_SMEM(_smem);");
    cg_line(out, "float *const _W = _smem; // the ring of %s: the box %s, rows of %lld, %lld planes along dimension %d", x, shape,
            (long long)w->bs[w->n_dim - 2], (long long)(2 * w->ring_e), w->ring);
    if (w->a_split)
      cg_line(out, "float *const _Wl = _smem + %lld; // the ring's low TF32 parts (the high ones read as they are)",
              (long long)(2 * w->box));
    if (plan->epilogue.staged)
      cg_line(out, "float (*_Cs)[%d] = (float (*)[%d])(_smem + %lld); // the epilogue's output tile, apart from the ring%s",
              plan->epilogue.nc + 1, plan->epilogue.nc + 1, (long long)(2 * w->box),
              w->a_split ? " (over _Wl: the tile's last step read)" : "");
  } else if (w->pipe) { /* dynamic: the two boxes, then the epilogue's tile */
    cg_line(out, "KBC_DYNAMIC_SMEM(_smem);");
    cg_line(out, "float (*_W)[%lld] = (float (*)[%lld])_smem; %s", (long long)w->box, (long long)w->box, what);
    if (w->a_split)
      cg_line(out, "float (*_Wl)[%lld] = (float (*)[%lld])(_smem + %lld); // the boxes' low TF32 parts (the high ones read as they are)",
              (long long)w->box, (long long)w->box, (long long)(2 * w->box));
    if (plan->epilogue.staged)
      cg_line(out, "float (*_Cs)[%d] = (float (*)[%d])(_smem + %lld); // the epilogue's output tile, apart from the boxes%s",
              plan->epilogue.nc + 1, plan->epilogue.nc + 1, (long long)(2 * w->box),
              w->a_split ? " (over _Wl: the tile's last step read)" : "");
  } else if (plan->epilogue.staged) {
    int nc = plan->epilogue.nc;
    cg_line(out, "__shared__ __align__(16) union {");
    cg_line(out, "  float W[%lld]; %s", (long long)w->box, what);
    cg_line(out, "  float Cs[%d][%d]; // the epilogue's output tile, one group of columns at a time", f->bm, nc + 1);
    cg_line(out, "} _sm;");
    cg_line(out, "float (&_W)[%lld] = _sm.W;", (long long)w->box);
    cg_line(out, "float (&_Cs)[%d][%d] = _sm.Cs;", f->bm, nc + 1);
  } else {
    cg_line(out, "__shared__ __align__(16) float _W[%lld]; %s", (long long)w->box, what);
  }
  cg_line(out, "__shared__ __align__(16) float _Bw[%d][%d]; // B: the tile's columns by the whole K%s", f->bn, w->ldb,
          w->b_split ? " (high TF32 parts)" : "");
  if (w->b_split) cg_line(out, "__shared__ __align__(16) float _Bwl[%d][%d]; // B's low TF32 parts", f->bn, w->ldb);
  if (w->ring >= 0)
    cg_line(out, "__shared__ int _wak[2][%lld]; // the ring offset of each k in bytes (0 past K): this step's, the next's",
            (long long)w->kp);
  else cg_line(out, "__shared__ int _wak[%lld]; // the box offset of each k in bytes (0 past K)", (long long)w->kp);
}

/* The indices ids bound to the digits of flat (names pre<index>); with
 * `flat_ok` the flat value itself, for its last index (cg_collapse). */
static void bind_digits(gemm_emitter *ge, const char *flat, const int *ids, int n, const char *pre, int flat_ok) {
  if (flat_ok) {
    ge->bind[ids[n - 1]] = flat;
    return;
  }
  const char **dst = gemm_declare_digits(ge, flat, ids, n, pre, "");
  for (int i = 0; i < n; i++) ge->bind[ids[i]] = dst[i];
}

/* The offset in the box of the indices ids (each bound) relative to
 * `base` (the names of their values at the box's origin, "0" for none). */
static const char *box_offset(gemm_emitter *ge, const int *ids, int n_ids, const char *const *val,
                              const char *const *base) {
  const gemm_window *w = ge->plan->win;
  int n = ge->plan->s->n_index;
  const char *e = "";
  for (int i = 0; i < n_ids; i++) {
    int64_t cf = box_coef(w, n, ids[i]);
    if (!cf) continue;
    const char *v = base && strcmp(base[i], "0") ? cg_fmt(&ge->emit, "(%s - %s)", val[i], base[i]) : val[i];
    e = cg_fmt(&ge->emit, "%s%s%lld * %s", e, *e ? " + " : "", (long long)cf, v);
  }
  return *e ? e : "0";
}

/* The k table into dst (a C array): each k's offset in the box in bytes;
 * in the ring, of the step whose planes start at virtual coordinate v (a
 * C expression): its plane's slot (v + its step along the ring) mod 2E. */
static void emit_k_table(gemm_emitter *ge, const char *dst, const char *v) {
  cg_emit *out = &ge->emit;
  const gemm_window *w = ge->plan->win;
  const cg_contraction *c = &ge->plan->tiling.c;
  int n = ge->plan->s->n_index;
  cg_line(out, "for (int _k = _tid; _k < %lld; _k += %d) {", (long long)w->kp, GEMM_THREADS);
  out->indent++;
  cg_line(out, "int _o = 0;");
  cg_line(out, "if (_k < _K) {");
  out->indent++;
  const char **dk = gemm_declare_digits(ge, "_k", c->k, c->n_k, "_wk_", "");
  const char *o = box_offset(ge, c->k, c->n_k, dk, NULL);
  if (w->ring >= 0) {
    const char *along = "";
    for (int i = 0; i < c->n_k; i++) {
      int64_t cf = w->coef[w->ring * n + c->k[i]];
      if (cf) along = cg_fmt(out, "%s + %lld * %s", along, (long long)cf, dk[i]);
    }
    o = cg_fmt(out, "%s + (int)((%s%s) %% %lld) * %lld", o, v, along, (long long)(2 * w->ring_e), (long long)w->bs[w->ring]);
  }
  cg_line(out, "_o = 4 * (%s);", o);
  out->indent--;
  cg_line(out, "}");
  cg_line(out, "%s[_k] = _o;", dst);
  out->indent--;
  cg_line(out, "}");
}

static void emit_ring_step(gemm_emitter *ge, const char *tile, const char *r, const char *pre, const char *n,
                           const char *vstart);

void gemm_win_table(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const gemm_window *w = ge->plan->win;
  if (w->ring >= 0) {
    cg_line(out, "// the ring offset of each k in bytes for the block's first step (its planes from slot 0)");
    emit_k_table(ge, "_wak[0]", "0");
  } else {
    cg_line(out, "// the box offset of each k in bytes: its digits' steps in the box");
    emit_k_table(ge, "_wak", NULL);
  }
  if (w->b_once) {
    cg_line(out, "// B: every tile's columns (N in one tile, no batch), staged once");
    emit_b_staging(ge, "0LL");
  }
  cg_line(out, "__syncthreads();");
  if (w->ring >= 0) {
    cg_line(out, "const unsigned _wsa = kbc_smem_u32(_W); // the ring's shared address");
    cg_line(out, "// the block's first step's planes (all %lld of its first tile) -> the ring from slot 0 by cp.async",
            (long long)w->ring_e);
    emit_ring_step(ge, "(long long)blockIdx.x", "0LL", "_wf", cg_fmt(out, "%lld", (long long)w->ring_e), "0");
    cg_line(out, "kbc_cp_commit();");
    cg_line(out, "int _wst = 0; // the k table of this step (steps: each tile's fold steps, the block's tiles in turn)");
    cg_line(out, "long long _wv = 0; // the slot of this step's first plane (of %lld)", (long long)(2 * w->ring_e));
    cg_line(out, "int _wnn = %lld; // planes this step added (landed during the last one's math)", (long long)w->ring_e);
  } else if (w->pipe) {
    cg_line(out, "const unsigned _wsa = kbc_smem_u32(&_W[0][0]); // the boxes' shared address");
    cg_line(out, "// the block's first step's box -> _W[0] by cp.async");
    emit_step_box(ge, "(long long)blockIdx.x", "0LL", "_wf", "0");
    cg_line(out, "kbc_cp_commit();");
    cg_line(out, "int _wst = 0; // the box buffer of this step (steps: each tile's fold steps, the block's tiles in turn)");
  }
}

void gemm_win_tile(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const gemm_window *w = plan->win;
  const gemm_cfg *f = &plan->tiling.cfg;
  const cg_contraction *c = &plan->tiling.c;
  cg_line(out, "__syncthreads(); // the last tile's readers of %s done", w->b_once ? "_W" : "_Bw and _W");
  const char **d0 = gemm_declare_digits(ge, "_m0", c->m, c->n_m, "_w0_", "");
  if (!w->b_once) emit_b_staging(ge, "_n0");
  /* the thread's fragment rows: offsets in the box from the tile's first row */
  cg_line(out, "// the thread's fragment rows (g and g + 8 of each m16 tile): offsets in the box");
  const char **base = KBC_NEW_ARRAY(out->a, const char *, c->n_m);
  for (int i = 0; i < c->n_m; i++) base[i] = c->m[i] == w->anchored ? d0[i] : "0";
  cg_line(out, "int _wro[%d][2];", f->mi);
  for (int i = 0; i < f->mi; i++)
    for (int h = 0; h < 2; h++) {
      cg_line(out, "{");
      out->indent++;
      cg_line(out, "const long long _m = _m0 + _wm0 + %d + _g;", i * 16 + h * 8);
      const char **dr = gemm_declare_digits(ge, "_m", c->m, c->n_m, "_wr_", "");
      cg_line(out, "_wro[%d][%d] = _m < _mend ? (int)(%s) : 0;", i, h,
              box_offset(ge, c->m + w->split, c->n_m - w->split, dr + w->split, base + w->split));
      out->indent--;
      cg_line(out, "}");
    }
}

/* B (the columns from n0, a C expression, by the whole K; zero outside N
 * and K) into _Bw. */
static void emit_b_staging(gemm_emitter *ge, const char *n0) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const gemm_window *w = plan->win;
  const gemm_cfg *f = &plan->tiling.cfg;
  const cg_contraction *c = &plan->tiling.c;
  const gemm_operand *B = &plan->op[1];
  int rd = !plan->tiling.split3;
  cg_line(out, "for (int _e = _tid; _e < %lld; _e += %d) { // B staged: _Bw[n][k]", (long long)f->bn * w->kp, GEMM_THREADS);
  out->indent++;
  cg_line(out, "const int _bn = _e / %lld, _bk = _e %% %lld;", (long long)w->kp, (long long)w->kp);
  cg_line(out, "const long long _n = %s + _bn;", n0);
  cg_line(out, "float _v = 0.0f;");
  cg_line(out, "if (_n < _N && _bk < _K) {");
  out->indent++;
  bind_digits(ge, "_n", c->n, c->n_n, "_wn_", B->flat_rows);
  bind_digits(ge, "(long long)_bk", c->k, c->n_k, "_wk_", plan->kflat);
  cg_line(out, "_v = %s[%s + %s];", ge->ctx->names->tensor[B->e->u.load.tensor->id], cg_sym(out, B->row_off),
          cg_sym(out, B->k_off));
  out->indent--;
  cg_line(out, "}");
  if (w->b_split) {
    cg_line(out, "unsigned _h, _l;");
    cg_line(out, "kbc_split_tf32_fast(_v, _h, _l);");
    cg_line(out, "_Bw[_bn][_bk] = __uint_as_float(_h), _Bwl[_bn][_bk] = __uint_as_float(_l);");
  } else {
    cg_line(out, "_Bw[_bn][_bk] = %s;", rd ? "kbc_tf32(_v)" : "_v");
  }
  out->indent--;
  cg_line(out, "}");
  for (int id = 0; id < plan->s->n_index; id++) ge->bind[id] = ge->names[id];
}

/* One k8 step at k = kk (a C expression): fragments from the box and
 * _Bw, the mma passes; guarded: k past K reads 0 from the box. */
static void emit_step(gemm_emitter *ge, const char *kk, int guarded) {
  cg_emit *out = &ge->emit;
  const gemm_cfg *f = &ge->plan->tiling.cfg;
  int split3 = ge->plan->tiling.split3;
  cg_line(out, "{");
  out->indent++;
  cg_line(out, "const int _k0 = %s + _t4, _k1 = _k0 + 4;", kk);
  if (ge->plan->win->ring >= 0) cg_line(out, "const int _a0 = _wak[_wst][_k0], _a1 = _wak[_wst][_k1];");
  else cg_line(out, "const int _a0 = _wak[_k0], _a1 = _wak[_k1];");
  gemm_emit_fragment_decls(ge);
  /* (byte offsets: one add an element, where an index would be scaled) */
  static const char *const ra[4] = {"*(const float *)((const char *)_wrp[_i][0] + _a0)",
                                    "*(const float *)((const char *)_wrp[_i][1] + _a0)",
                                    "*(const float *)((const char *)_wrp[_i][0] + _a1)",
                                    "*(const float *)((const char *)_wrp[_i][1] + _a1)"};
  static const char *const kv[4] = {"_k0", "_k0", "_k1", "_k1"};
  cg_line(out, "#pragma unroll");
  cg_line(out, "for (int _i = 0; _i < %d; ++_i) {", f->mi);
  /* (at TF32 the box holds rounded values: rounded where staged, or where landed) */
  for (int q = 0; q < 4; q++) {
    const char *v = guarded ? cg_fmt(out, "(%s < _K ? (%s) : 0.0f)", kv[q], ra[q]) : cg_fmt(out, "(%s)", ra[q]);
    if (ge->plan->win->a_split) { /* the low part _Wl - _W bytes on */
      const char *l = cg_fmt(out, "*(const float *)((const char *)_wrp[_i][%d] + _a%d + %lld)", q % 2, q / 2,
                             (long long)(2 * ge->plan->win->box * 4));
      if (guarded) l = cg_fmt(out, "(%s < _K ? (%s) : 0.0f)", kv[q], l);
      cg_line(out, "  _fa[_i][%d] = __float_as_uint(%s), _fal[_i][%d] = __float_as_uint(%s);", q, v, q, l);
    } else if (split3) cg_line(out, "  kbc_split_tf32_fast(%s, _fa[_i][%d], _fal[_i][%d]);", v, q, q);
    else cg_line(out, "  _fa[_i][%d] = __float_as_uint(%s);", q, v);
  }
  cg_line(out, "}");
  cg_line(out, "#pragma unroll");
  cg_line(out, "for (int _j = 0; _j < %d; ++_j) {", f->ni);
  cg_line(out, "  const int _c = _wn0 + _j * 8 + _g;");
  for (int q = 0; q < 2; q++)
    if (ge->plan->win->b_split)
      cg_line(out, "  _fb[_j][%d] = __float_as_uint(_Bw[_c][_k%d]), _fbl[_j][%d] = __float_as_uint(_Bwl[_c][_k%d]);", q, q,
              q, q);
    else if (split3) cg_line(out, "  kbc_split_tf32_fast(_Bw[_c][_k%d], _fb[_j][%d], _fbl[_j][%d]);", q, q, q);
    else cg_line(out, "  _fb[_j][%d] = __float_as_uint(_Bw[_c][_k%d]);", q, q);
  cg_line(out, "}");
  gemm_emit_mma_passes(ge);
  out->indent--;
  cg_line(out, "}");
}

/* The box's origin of a tile and fold step: per dimension of A's tensor
 * its index at the tile's first row (M digits named `mpre`<index>), K and
 * the inner digits that wrap at 0, the fold's R and the batch at their
 * values (named rpre<index> / bpre<index>; NULL: the indices' own names);
 * into pre_wlo<d>, declared here. */
static void emit_origin(gemm_emitter *ge, const char *pre, const char *mpre, const char *bpre, const char *rpre) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const gemm_window *w = plan->win;
  const cg_contraction *c = &plan->tiling.c;
  const ir_expr *A = plan->op[0].e;
  for (int i = 0; i < c->n_k; i++) ge->bind[c->k[i]] = "0";
  for (int i = 0; i < c->n_m; i++)
    ge->bind[c->m[i]] = i < w->split || c->m[i] == w->anchored ? cg_fmt(out, "%s%s", mpre, ge->names[c->m[i]]) : "0";
  for (int i = 0; bpre && i < c->n_b; i++) ge->bind[c->bat[i]] = cg_fmt(out, "%s%s", bpre, ge->names[c->bat[i]]);
  for (int i = 0; rpre && i < plan->fold->n_r; i++)
    ge->bind[plan->fold->r[i]] = cg_fmt(out, "%s%s", rpre, ge->names[plan->fold->r[i]]);
  for (int d = 0; d < w->n_dim; d++) cg_line(out, "const long long %s_wlo%d = %s;", pre, d, cg_sym(out, A->u.load.idx[d]));
  for (int id = 0; id < plan->s->n_index; id++) ge->bind[id] = ge->names[id];
}

/* The box's origin of step (tile, r) (C expressions: any tile of the
 * kernel, r a fold step): the tile decoded as emit_tile_start does (its
 * M origin, batch digits), r into R digits; into pre_wlo<d>. */
static void emit_step_origin(gemm_emitter *ge, const char *tile, const char *r, const char *pre) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const gemm_window *w = plan->win;
  const gemm_cfg *f = &plan->tiling.cfg;
  const cg_contraction *c = &plan->tiling.c;
  const char *bp = cg_fmt(out, "%s_b_", pre), *mp = cg_fmt(out, "%s_m_", pre), *rp = cg_fmt(out, "%s_r_", pre);
  cg_line(out, "long long %s_t = %s / _tiles_n;", pre, tile);
  cg_line(out, "const long long %s_mt = %s_t %% _tiles_m;", pre, pre);
  cg_line(out, "%s_t /= _tiles_m;", pre);
  cg_line(out, "const long long %s_m0 = %s_mt / %lld * %lld + %s_mt %% %lld * %d;", pre, pre, (long long)w->ti,
          (long long)w->mi, pre, (long long)w->ti, f->bm);
  if (c->n_b > 0) gemm_declare_digits(ge, cg_fmt(out, "%s_t", pre), c->bat, c->n_b, bp, "");
  gemm_declare_digits(ge, cg_fmt(out, "%s_m0", pre), c->m, c->n_m, mp, "");
  if (plan->fold) gemm_declare_digits(ge, r, plan->fold->r, plan->fold->n_r, rp, "");
  emit_origin(ge, pre, mp, c->n_b > 0 ? bp : NULL, plan->fold ? rp : NULL);
}

/* Box element _e of the origin pre_wlo: its tensor coordinates declared,
 * *test (inside the box's rows and the tensor) and *off (its offset in the
 * tensor) as C expressions. */
static void box_element(gemm_emitter *ge, const char *pre, const char **test, const char **off) {
  cg_emit *out = &ge->emit;
  const gemm_window *w = ge->plan->win;
  const ir_tensor *x = ge->plan->op[0].e->u.load.tensor;
  int D = w->n_dim;
  *test = "";
  *off = "";
  for (int d = D - 1; d >= 0; d--) {
    const char *b = D == 1 ? "_e"
                    : d == 0 ? cg_fmt(out, "_e / %lld", (long long)w->bs[0])
                    : d == D - 1 ? cg_fmt(out, "_e %% %lld", (long long)w->bs[D - 2])
                                 : cg_fmt(out, "_e / %lld %% %lld", (long long)w->bs[d], (long long)w->ext[d]);
    cg_line(out, "const int _b%d = %s;", d, b);
    cg_line(out, "const long long _x%d = %s_wlo%d + _b%d;", d, pre, d, d);
    const char *dim = cg_sym(out, x->shape[d]);
    *test = cg_fmt(out, "%s%s_x%d >= 0 && _x%d < %s", *test, **test ? " && " : "", d, d, dim);
    *off = cg_fmt(out, "%s%s_x%d * %lld", *off, **off ? " + " : "", d, (long long)w->xs[d]);
  }
  if (D > 1) *test = cg_fmt(out, "_b%d < %lld && %s", D - 1, (long long)w->ext[D - 1], *test);
}

/* Dimension d of a box row at coordinate b (a C expression) from the
 * origin pre_wlo: _x<d> declared, its bounds test appended to *ok and its
 * offset in the tensor to *off. */
static void row_coord(gemm_emitter *ge, int d, const char *pre, const char *b, const char **ok, const char **off) {
  cg_emit *out = &ge->emit;
  const ir_tensor *t = ge->plan->op[0].e->u.load.tensor;
  cg_line(out, "const long long _x%d = %s_wlo%d + %s;", d, pre, d, b);
  *ok = cg_fmt(out, "%s%s_x%d >= 0 && _x%d < %s", *ok, **ok ? " && " : "", d, d, cg_sym(out, t->shape[d]));
  *off = cg_fmt(out, "%s%s_x%d * %lld", *off, **off ? " + " : "", d, (long long)ge->plan->win->xs[d]);
}

/* The chunk _bc of the row (its test ok and offset off, row_coord) copied
 * to dst (a C address in _W, ds its shared address): 16 bytes where all
 * four lie inside the tensor's row, else a float at a time (a last chunk
 * past the box's row fills its padding, never read). */
static void emit_row_chunk(gemm_emitter *ge, const char *pre, const char *ok, const char *off, const char *dst,
                           const char *ds) {
  cg_emit *out = &ge->emit;
  const ir_tensor *t = ge->plan->op[0].e->u.load.tensor;
  const char *x = ge->ctx->names->tensor[t->id], *W = cg_sym(out, t->shape[ge->plan->win->n_dim - 1]);
  cg_line(out, "const bool _rok = %s;", ok);
  cg_line(out, "const long long _xl = %s_wlo%d + _bc, _o = %s + _xl;", pre, ge->plan->win->n_dim - 1, off);
  cg_line(out, "float *const _d = %s;", dst);
  cg_line(out, "const unsigned _ds = %s;", ds);
  gemm_emit_chunk_copy(out, x, cg_fmt(out, "_rok && _xl >= 0 && _xl + 3 < %s", W), "_q",
                       cg_fmt(out, "_rok && _xl + _q >= 0 && _xl + _q < %s", W));
}

/* The chunk at addr (a C address in _W, 16-byte aligned) rounded to TF32
 * in place. */
static void emit_chunk_round(cg_emit *out, const char *addr) {
  cg_line(out, "float4 *const _p = (float4 *)%s;", addr);
  cg_line(out, "float4 _v = *_p;");
  cg_line(out, "_v.x = kbc_tf32(_v.x), _v.y = kbc_tf32(_v.y), _v.z = kbc_tf32(_v.z), _v.w = kbc_tf32(_v.w);");
  cg_line(out, "*_p = _v;");
}

/* The box of origin pre_wlo copied into _W[buf] by cp.async (0 outside
 * the tensor). */
static void emit_box_copies(gemm_emitter *ge, const char *pre, const char *buf) {
  cg_emit *out = &ge->emit;
  const gemm_window *w = ge->plan->win;
  const ir_tensor *t = ge->plan->op[0].e->u.load.tensor;
  const char *x = ge->ctx->names->tensor[t->id];
  int D = w->n_dim;
  if (D == 1) { /* one row: the block's threads along it */
    cg_line(out, "for (int _e = _tid; _e < %lld; _e += %d) {", (long long)w->box, GEMM_THREADS);
    out->indent++;
    const char *test, *off;
    box_element(ge, pre, &test, &off);
    cg_line(out, "const bool _ok = %s;", test);
    cg_line(out, "kbc_cp_async4(&_W[%s][_e], _wsa + (unsigned)((%s) * %lld + _e) * 4u, _ok ? &%s[%s] : %s, _ok);", buf,
            buf, (long long)w->box, x, off, x);
    out->indent--;
    cg_line(out, "}");
    return;
  }
  /* a thread a chunk: 4 consecutive floats of a row (rows of a multiple
   * of 4 floats, w->chunks), the row's coordinates decoded per chunk */
  int64_t ld = w->bs[D - 2], rows = w->box / ld, len = w->ext[D - 1], cpr = (len + 3) / 4;
  cg_line(out, "for (int _c = _tid; _c < %lld; _c += %d) { // %lld rows of %lld chunks of 4 floats", (long long)(rows * cpr),
          GEMM_THREADS, (long long)rows, (long long)cpr);
  out->indent++;
  cg_line(out, "const int _br = _c / %lld, _bc = _c %% %lld * 4;", (long long)cpr, (long long)cpr);
  const char *rowok = "", *rowoff = "";
  for (int d = 0; d < D - 1; d++) {
    int64_t per = w->bs[d] / ld; /* rows per step of dimension d */
    const char *b = d == 0 ? cg_fmt(out, "_br / %lld", (long long)per)
                           : cg_fmt(out, "_br / %lld %% %lld", (long long)per, (long long)w->ext[d]);
    row_coord(ge, d, pre, b, &rowok, &rowoff);
  }
  cg_line(out, "const int _e = _br * %lld + _bc;", (long long)ld);
  emit_row_chunk(ge, pre, rowok, rowoff, cg_fmt(out, "&_W[%s][_e]", buf),
                 cg_fmt(out, "_wsa + (unsigned)((%s) * %lld + _e) * 4u", buf, (long long)w->box));
  out->indent--;
  cg_line(out, "}");
}

/* The box in _W[buf], landed: each thread rounds to TF32 the elements it
 * copied (emit_box_copies' assignment) — its own cp.async writes, visible
 * to it after the wait; the step's barrier then shows them to all. */
static void emit_round_box(gemm_emitter *ge, const char *buf) {
  cg_emit *out = &ge->emit;
  const gemm_window *w = ge->plan->win;
  int D = w->n_dim;
  if (w->a_split) cg_line(out, "// the low TF32 parts of the box's elements this thread copied, into _Wl (the high ones read as they are)");
  else cg_line(out, "// the box's elements this thread copied, rounded to TF32 once (the fragments read them as they are)");
  if (D == 1) {
    if (w->a_split)
      cg_line(out, "for (int _e = _tid; _e < %lld; _e += %d) _Wl[%s][_e] = %s;", (long long)w->box, GEMM_THREADS, buf,
              gemm_low_part(out, cg_fmt(out, "_W[%s][_e]", buf)));
    else
      cg_line(out, "for (int _e = _tid; _e < %lld; _e += %d) _W[%s][_e] = kbc_tf32(_W[%s][_e]);", (long long)w->box,
              GEMM_THREADS, buf, buf);
    return;
  }
  int64_t ld = w->bs[D - 2], rows = w->box / ld, cpr = (w->ext[D - 1] + 3) / 4;
  cg_line(out, "for (int _c = _tid; _c < %lld; _c += %d) {", (long long)(rows * cpr), GEMM_THREADS);
  out->indent++;
  const char *at = cg_fmt(out, "[%s][_c / %lld * %lld + _c %% %lld * 4]", buf, (long long)cpr, (long long)ld, (long long)cpr);
  if (w->a_split) gemm_emit_low4(out, cg_fmt(out, "&_W%s", at), cg_fmt(out, "&_Wl%s", at));
  else emit_chunk_round(out, cg_fmt(out, "&_W%s", at));
  out->indent--;
  cg_line(out, "}");
}

/* The ring's chunks of n planes (a C expression) from virtual coordinate
 * vstart, a thread a chunk (plane, then row and chunk of it): with the
 * origin pre_wlo, copied by cp.async (the planes' own coordinates along
 * the ring from pre_wlo<ring> + E - n: the last n of the step's box);
 * without (pre NULL), rounded to TF32 in place by the thread that copied
 * them. */
static void emit_ring_chunks(gemm_emitter *ge, const char *pre, const char *n, const char *vstart) {
  cg_emit *out = &ge->emit;
  const gemm_window *w = ge->plan->win;
  int D = w->n_dim, R = w->ring;
  int64_t cpr = (w->ext[D - 1] + 3) / 4, rpp = 1;
  for (int d = 0; d < D - 1; d++)
    if (d != R) rpp *= w->ext[d];
  int64_t cpp = rpp * cpr; /* chunks a plane */
  cg_line(out, "for (int _c = _tid; _c < (%s) * %lld; _c += %d) { // planes of %lld rows of %lld chunks of 4 floats", n,
          (long long)cpp, GEMM_THREADS, (long long)rpp, (long long)cpr);
  out->indent++;
  cg_line(out, "const int _bp = _c / %lld, _bq = _c %% %lld, _br = _bq / %lld, _bc = _bq %% %lld * 4;", (long long)cpp,
          (long long)cpp, (long long)cpr, (long long)cpr);
  const char *e = cg_fmt(out, "(int)((%s + _bp) %% %lld) * %lld", vstart, (long long)(2 * w->ring_e), (long long)w->bs[R]);
  const char *rowok = "", *rowoff = "";
  int64_t per = rpp;
  for (int d = 0; d < D - 1; d++) {
    if (d == R) {
      if (pre) row_coord(ge, d, pre, cg_fmt(out, "%lld - (%s) + _bp", (long long)w->ring_e, n), &rowok, &rowoff);
      continue;
    }
    per /= w->ext[d];
    cg_line(out, "const int _b%d = _br / %lld %% %lld;", d, (long long)per, (long long)w->ext[d]);
    e = cg_fmt(out, "%s + _b%d * %lld", e, d, (long long)w->bs[d]);
    if (pre) row_coord(ge, d, pre, cg_fmt(out, "_b%d", d), &rowok, &rowoff);
  }
  cg_line(out, "const int _e = %s + _bc;", e);
  if (pre) emit_row_chunk(ge, pre, rowok, rowoff, "&_W[_e]", "_wsa + (unsigned)_e * 4u");
  else if (w->a_split) gemm_emit_low4(out, "&_W[_e]", "&_Wl[_e]");
  else emit_chunk_round(out, "&_W[_e]");
  out->indent--;
  cg_line(out, "}");
}

/* Where step (tile, r) exists, the last n planes of its box copied into
 * the ring from virtual coordinate vstart. */
static void emit_ring_step(gemm_emitter *ge, const char *tile, const char *r, const char *pre, const char *n,
                           const char *vstart) {
  cg_emit *out = &ge->emit;
  cg_line(out, "if (%s < _tiles) {", tile);
  out->indent++;
  emit_step_origin(ge, tile, r, pre);
  emit_ring_chunks(ge, pre, n, vstart);
  out->indent--;
  cg_line(out, "}");
}

/* Where step (tile, r) exists, its box copied into _W[buf] by cp.async. */
static void emit_step_box(gemm_emitter *ge, const char *tile, const char *r, const char *pre, const char *buf) {
  cg_emit *out = &ge->emit;
  cg_line(out, "if (%s < _tiles) {", tile);
  out->indent++;
  emit_step_origin(ge, tile, r, pre);
  emit_box_copies(ge, pre, buf);
  out->indent--;
  cg_line(out, "}");
}

void gemm_win_k_loop(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const gemm_window *w = plan->win;
  const ir_expr *A = plan->op[0].e;
  const ir_tensor *x = A->u.load.tensor;
  int rd = !plan->tiling.split3;
  const char *wb = "_W";
  if (w->ring >= 0) {
    const char *E = cg_fmt(out, "%lld", (long long)w->ring_e);
    cg_line(out, "long long _wn_v; // the slot of the next step's first plane");
    cg_line(out, "int _wn_n; // and the planes it adds");
    cg_line(out, "{ // the next step's new planes -> the ring after this step's by cp.async, in flight during this math");
    out->indent++;
    cg_line(out, "long long _wnt = _tile, _wnr = _r + 1;");
    cg_line(out, "if (_wnr == _R) { _wnr = 0; _wnt += gridDim.x; }");
    cg_line(out, "_wn_n = _wnr == 0 ? %s : %lld; // a new tile's all, else the fold step's slide", E, (long long)w->ring_cr);
    cg_line(out, "_wn_v = (_wv + _wn_n) %% %lld;", (long long)(2 * w->ring_e));
    emit_ring_step(ge, "_wnt", "_wnr", "_wn", "_wn_n", cg_fmt(out, "_wv + %s", E));
    cg_line(out, "// its k table");
    emit_k_table(ge, "_wak[_wst ^ 1]", "_wn_v");
    out->indent--;
    cg_line(out, "}");
    cg_line(out, "kbc_cp_commit();");
    cg_line(out, "kbc_cp_wait<1>();");
    if (rd || w->a_split) {
      cg_line(out, "// the planes this step added, %s by the threads that copied them",
              rd ? "rounded to TF32 once" : "their low TF32 parts into _Wl once (the high ones read as they are)");
      emit_ring_chunks(ge, NULL, "_wnn", cg_fmt(out, "_wv + %s - _wnn", E));
    }
    cg_line(out, "__syncthreads(); // this step's planes landed for every thread");
  } else if (w->pipe) {
    cg_line(out, "{ // the next step's box -> _W[_wst ^ 1] by cp.async, in flight during this math");
    out->indent++;
    if (plan->fold) {
      cg_line(out, "long long _wnt = _tile, _wnr = _r + 1;");
      cg_line(out, "if (_wnr == _R) { _wnr = 0; _wnt += gridDim.x; }");
    } else cg_line(out, "const long long _wnt = _tile + gridDim.x, _wnr = 0;");
    emit_step_box(ge, "_wnt", "_wnr", "_wn", "_wst ^ 1");
    out->indent--;
    cg_line(out, "}");
    cg_line(out, "kbc_cp_commit();");
    cg_line(out, "kbc_cp_wait<1>();");
    if (rd || w->a_split) emit_round_box(ge, "_wst");
    cg_line(out, "__syncthreads(); // this step's box landed for every thread");
    wb = "_W[_wst]";
  } else {
    cg_line(out, "// the box: per dimension of %s, from its index at the tile's first row", ge->ctx->names->tensor[x->id]);
    emit_origin(ge, "", "_w0_", NULL, NULL);
    cg_line(out, "__syncthreads(); // the box's last readers done");
    cg_line(out, "for (int _e = _tid; _e < %lld; _e += %d) {", (long long)w->box, GEMM_THREADS);
    out->indent++;
    const char *test, *off;
    box_element(ge, "", &test, &off);
    cg_line(out, "const float _v = %s ? %s[%s] : 0.0f;", test, ge->ctx->names->tensor[x->id], off);
    cg_line(out, "_W[_e] = %s;", rd ? "kbc_tf32(_v)" : "_v");
    out->indent--;
    cg_line(out, "}");
    cg_line(out, "__syncthreads();");
  }
  const gemm_cfg *f = &plan->tiling.cfg;
  cg_line(out, "// the thread's fragment rows in the box (an A element: one add to the row's address)");
  cg_line(out, "const float *_wrp[%d][2];", f->mi);
  cg_line(out, "#pragma unroll");
  cg_line(out, "for (int _i = 0; _i < %d; ++_i) _wrp[_i][0] = &%s[_wro[_i][0]], _wrp[_i][1] = &%s[_wro[_i][1]];", f->mi, wb, wb);
  int64_t K = 0, full;
  sym_is_const(plan->tiling.K, &K);
  full = K / 8;
  cg_line(out, "// the whole K from the box and _Bw, k8 steps");
  if (full > 0) {
    if (full <= 16) cg_line(out, "#pragma unroll");
    else cg_line(out, "#pragma unroll 2");
    cg_line(out, "for (int _ks = 0; _ks < %lld; ++_ks) {", (long long)full);
    out->indent++;
    emit_step(ge, "_ks * 8", 0);
    if (full > GEMM_FLUSH_K / 8) gemm_emit_flush_every(ge, 0, "_ks", GEMM_FLUSH_K / 8);
    out->indent--;
    cg_line(out, "}");
  }
  if (K % 8) {
    cg_line(out, "// the last k8 step, past K in part");
    emit_step(ge, cg_fmt(out, "%lld", (long long)full * 8), 1);
  }
  gemm_emit_flush(ge, 1);
  if (w->ring >= 0) {
    cg_line(out, "__syncthreads(); // this step's planes and k table read: free for the copies of the step after next");
    cg_line(out, "_wst ^= 1, _wv = _wn_v, _wnn = _wn_n;");
  } else if (w->pipe) {
    cg_line(out, "__syncthreads(); // _W[_wst] read: free for the copies of the step after next");
    cg_line(out, "_wst ^= 1;");
  }
}
