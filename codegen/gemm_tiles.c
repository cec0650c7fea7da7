/* gemm_tiles.c — the tiled contraction's tiling: the extents of its
 * flattened m, n, k and batch, and the choice of tile shapes by a small
 * cost model (padding waste, register-tile efficiency, tiles vs.
 * multiprocessors) over estimated extents: constant extents exactly (N =
 * 24 gets a 24-wide tile), var-dependent ones with every var axis at 256
 * (large; the binding is unknown).
 * Before: a statement.  After gemm_tile(): whether it is a contraction
 * that can be tiled, and if so its tiling (gemm_tiling), which
 * cg_group_family (group.c) judges and gemm_plan.c builds on. */
#include <math.h>
#include <string.h>

#include "gemm_impl.h"
#include "ir/subst.h"

/* ---- analysis ------------------------------------------------------------ */

/* An extent for choosing tiles: constants exactly, var-dependent extents
 * with every var axis at 256 (a shape big enough to need tiles; the
 * real binding is unknown). */
double gemm_tile_estimate(const sym *x) {
  static int64_t axes[4096];
  if (!axes[0])
    for (int i = 0; i < 4096; i++) axes[i] = 256;
  int64_t v;
  if (!x || !sym_eval(x, axes, NULL, &v)) return 1e18;
  return (double)v;
}

/* ---- tile shapes --------------------------------------------------------- */

double gemm_util(double x, int b) {
  double tiles = ceil(x / b);
  return tiles > 0 ? x / (tiles * b) : 1;
}

double gemm_slices(const gemm_shape *sh, int bk) {
  return sh->splittable ? fmax(1.0, fmin(GEMM_SPLIT_MAX, floor(sh->k / bk / GEMM_SPLIT_MIN_KTILES))) : 1;
}


static double score(const cg_target *t, const gemm_shape *sh, const gemm_cfg *f) {
  double inner;
  if (f->mma) {
    /* shared-memory words per warp per k8 step vs mma count; and the
     * block's operand loads per output (each A element is loaded once per
     * column of tiles, each B element once per row: 2 bm bn / (bm + bn)
     * outputs per element loaded), which the small warp tiles of 3xTF32
     * make the deciding term: a 256x32 tile loads A three times over N =
     * 96 where 64x96 loads it once (AlexNet's convolution) */
    double r = (double)(f->mi * f->ni) / (4.0 * f->mi + 2.0 * f->ni);
    double reuse = 2.0 * fmin(sh->m, f->bm) * fmin(sh->n, f->bn) / (fmin(sh->m, f->bm) + fmin(sh->n, f->bn));
    inner = fmin(1.0, 0.5 + 0.75 * r) * fmin(1.0, 0.4 + reuse / 128.0);
  } else {
    double r = (double)(f->tm * f->tn) / (f->tm + f->tn);
    inner = fmin(1.0, 0.5 + r / 8.0);
    if ((f->tm > 4 && f->tm % 4) || (f->tn > 4 && f->tn % 4)) inner *= 0.9; /* reads of padded chunks */
  }
  double tiles = ceil(sh->m / f->bm) * ceil(sh->n / f->bn) * sh->batch;
  int acc = f->mma ? f->mi * f->ni * 4 : f->tm * f->tn;
  double slots = (double)t->sm_count * (acc >= 48 ? 1 : 2);
  double par = fmin(1.0, tiles * gemm_slices(sh, f->bk) / slots); /* with split-K's slices */
  return gemm_util(sh->m, f->bm) * gemm_util(sh->n, f->bn) * gemm_util(sh->k, f->bk) * inner * par;
}

long long gemm_split_count(long long out_tiles, long long ktiles, int slots, long long below, int min_ktiles) {
  long long splits = 1;
  for (long long s = 1, best = 0; s <= GEMM_SPLIT_MAX && out_tiles < below && s * min_ktiles <= ktiles;
       ++s) {
    const long long fill = 1000 * out_tiles * s / ((out_tiles * s + slots - 1) / slots * slots); /* per mille */
    if (fill * 20 > best * 21) best = fill, splits = s; /* at least 5% fuller */
  }
  return splits;
}

int gemm_stage_bytes(const gemm_cfg *f) { return f->bk * (f->sa + f->pad_a + f->sb + f->pad_b) * 4; }
int gemm_smem_bytes(const gemm_cfg *f) { return 2 * gemm_stage_bytes(f); }

/* Row padding: FFMA reads rows as float4 (a multiple of 4) and its k-major
 * stores want rows = 4 mod 32 banks; mma fragment reads (rows k + t4,
 * columns g) are conflict-free when rows = 8 mod 32 banks. */
static int pad_for(int mma, int bx) { return mma ? ((8 - bx) % 32 + 32) % 32 : ((4 - bx) % 32 + 32) % 32; }

static int choose_bk(const gemm_shape *sh, gemm_cfg *f) {
  /* BK 16 when the staging registers stay few and K is not tiny. */
  f->bk = 8;
  if (sh->k >= 64 && (f->bm + f->bn) * 16 / GEMM_THREADS <= 24) {
    f->bk = 16;
    if (gemm_smem_bytes(f) > GEMM_SMEM_TILES || gemm_util(sh->k, 16) < gemm_util(sh->k, 8)) f->bk = 8;
  }
  return gemm_smem_bytes(f) <= GEMM_SMEM_TILES;
}

int gemm_choose_cfg(const cg_target *t, const gemm_shape *sh, int mma, int staged, gemm_cfg *best) {
  double best_score = -1;
  if (!mma) {
    static const int txs[] = {4, 8, 16, 32, 64};
    static const int ts[] = {1, 2, 3, 4, 6, 8};
    for (int a = 0; a < 5; a++)
      for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) {
          gemm_cfg f = {.tx = txs[a], .ty = GEMM_THREADS / txs[a], .tm = ts[i], .tn = ts[j]};
          f.bm = f.ty * f.tm;
          f.bn = f.tx * f.tn;
          /* thread tiles of 4k values: 4-wide chunks interleaved across the
           * threads; others: each thread's values contiguous, padded to a
           * multiple of 4 so that they are read as float4 too */
          f.sa = f.tm % 4 ? f.ty * ((f.tm + 3) / 4 * 4) : f.bm;
          f.sb = f.tn % 4 ? f.tx * ((f.tn + 3) / 4 * 4) : f.bn;
          f.pad_a = pad_for(0, f.sa);
          f.pad_b = pad_for(0, f.sb);
          if (f.tm * f.tn < 8 || f.bm > 256 || f.bn > 256 || f.bn < sh->min_bn) continue;
          f.vm = f.tm % 4 ? f.tm : 4;
          f.vn = f.tn % 4 ? f.tn : 4;
          if (!choose_bk(sh, &f)) continue;
          /* ties: square tiles, then fewer threads along n */
          double sc = score(t, sh, &f) * (1.0 - 0.01 * fabs(log2((double)f.bm / f.bn)));
          if (sc > best_score + 1e-9) {
            best_score = sc;
            *best = f;
          }
        }
  } else {
    static const int wms[] = {1, 2, 4, 8};
    static const int mis[] = {1, 2, 4};
    static const int nis[] = {1, 2, 3, 4, 8};
    for (int a = 0; a < 4; a++)
      for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++) {
          gemm_cfg f = {.mma = 1, .wm = wms[a], .wn = 8 / wms[a], .mi = mis[i], .ni = nis[j]};
          f.bm = f.wm * f.mi * 16;
          f.bn = f.wn * f.ni * 8;
          f.sa = f.bm;
          f.sb = f.bn;
          f.pad_a = pad_for(1, f.bm);
          f.pad_b = pad_for(1, f.bn);
          /* 3xTF32 (mma == 2) holds high and low fragments: half the tiles,
           * unless the K loop's copies need no staging registers */
          int most = mma == 2 && staged ? 8 : 16;
          if (f.mi * f.ni > most || f.bm > 256 || f.bn > 256 || f.bn < sh->min_bn) continue;
          f.bk = 16;
          if (staged && gemm_smem_bytes(&f) > GEMM_SMEM_TILES) continue;
          /* ties: square tiles, then fewer threads along n */
          double sc = score(t, sh, &f) * (1.0 - 0.01 * fabs(log2((double)f.bm / f.bn)));
          if (sc > best_score + 1e-9) {
            best_score = sc;
            *best = f;
          }
        }
  }
  return best_score > 0;
}

/* c with A and B swapped (M and N too). */
static void swap_sides(cg_contraction *c) {
  const ir_expr *e = c->a;
  c->a = c->b;
  c->b = e;
  int ids[CG_MAX_OUTER], n = c->n_m;
  memcpy(ids, c->m, sizeof ids);
  memcpy(c->m, c->n, sizeof ids);
  memcpy(c->n, ids, sizeof ids);
  c->n_m = c->n_n;
  c->n_n = n;
}

/* c's M without the fold's R (each of them one of M): the tile's rows. */
static int drop_fold(cg_contraction *c, const cg_fold *f) {
  int n = 0;
  for (int i = 0; i < c->n_m; i++) {
    int in_r = 0;
    for (int j = 0; j < f->n_r; j++) in_r |= f->r[j] == c->m[i];
    if (!in_r) c->m[n++] = c->m[i];
  }
  if (c->n_m - n != f->n_r) return 0;
  c->n_m = n;
  return 1;
}

int gemm_tile(kbc_arena *a, const cg_target *t, const ir_stmt *s, gemm_tiling *out) {
  return gemm_tile_fold(a, t, s, NULL, 0, out);
}

int gemm_tile_fold(kbc_arena *a, const cg_target *t, const ir_stmt *s, const cg_fold *f, int min_bn, gemm_tiling *out) {
  memset(out, 0, sizeof *out);
  cg_contraction *c = &out->c;
  if (!cg_find_contraction(a, s, c)) return 0;
  if (f && f->swap) swap_sides(c);
  if (f && !drop_fold(c, f)) return 0;
  if (c->n_m < 1 || c->n_n < 1 || c->n_k < 1) return 0;
  out->M = cg_extent_sym(a, s, c->m, c->n_m);
  out->N = cg_extent_sym(a, s, c->n, c->n_n);
  out->K = cg_extent_sym(a, s, c->k, c->n_k);
  out->B = cg_extent_sym(a, s, c->bat, c->n_b);
  if (!out->M || !out->N || !out->K || !out->B) return 0;
  gemm_shape *sh = &out->shape;
  *sh = (gemm_shape){gemm_tile_estimate(out->M), gemm_tile_estimate(out->N), gemm_tile_estimate(out->K),
                     gemm_tile_estimate(out->B), 0, min_bn};
  /* Split-K needs a K that may be long, and an output the statement
   * defines (not a `+=` into earlier values); any epilogue, which the last
   * slice to finish applies to the slices' sum. */
  sh->splittable = t->opt.gemm_split && !s->accumulate && !f &&
                   (t->opt.gemm_split == 2 || sh->k >= 2.0 * GEMM_SPLIT_MIN_KTILES * 16);
  /* fp32 on tensor cores as 3xTF32 split products (unless opt.fp32_mma is 0,
   * KBC_FP32_MMA=0: FFMA): on the H200 (2026-12-02) 1.12-1.33x the FFMA
   * tile on KernelBench's matrix products */
  out->split3 = t->precision == CG_PRECISION_FP32 && t->opt.fp32_mma != 0;
  out->mma = t->precision == CG_PRECISION_TF32 || out->split3;
  if (!gemm_choose_cfg(t, sh, out->split3 ? 2 : out->mma, t->opt.gemm_stages < 3, &out->cfg)) return 0;
  gemm_count_tiles(a, out);
  return 1;
}

void gemm_count_tiles(kbc_arena *a, gemm_tiling *tl) {
  const gemm_cfg *f = &tl->cfg;
  tl->tiles = sym_mul(a, sym_mul(a, sym_div(a, sym_add(a, tl->M, sym_const(a, f->bm - 1)), f->bm),
                                 sym_div(a, sym_add(a, tl->N, sym_const(a, f->bn - 1)), f->bn)),
                      tl->B);
}
