/* gemm_plan.c — the tiled contraction's planning: extents and offsets of
 * its operands (symbolic), and the choice of tile shapes by a small cost
 * model (padding waste, register-tile efficiency, tiles vs.
 * multiprocessors).  Before: a contraction (cg_find_contraction).  After:
 * a gemm_cfg for sched_gemm.c to emit. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gemm_impl.h"

/* ---- analysis ------------------------------------------------------------ */

sym *gemm_extent_product(kbc_arena *a, const ir_stmt *s, const int *ids, int n) {
  sym *p = sym_const(a, 1);
  for (int i = 0; i < n; i++) p = sym_mul(a, p, s->index[ids[i]].extent);
  return p;
}

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

/* Unit-stride runs of the loads in e along index kid and index xid:
 * *run_k (*run_x) grows by the estimated extent of kid (xid) for each load
 * whose flat offset steps by +-1 with it. */
void gemm_stride_runs(kbc_arena *a, const ir_stmt *s, const ir_expr *e, int kid, int xid, double *run_k,
                        double *run_x) {
  if (e->op == IR_OP_LOAD) {
    if (cg_load_unit_step(a, s, e, kid)) *run_k += ir_estimate(s->index[kid].extent);
    if (cg_load_unit_step(a, s, e, xid)) *run_x += ir_estimate(s->index[xid].extent);
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++) gemm_stride_runs(a, s, e->arg[i], kid, xid, run_k, run_x);
}

/* Whether e is one plain load whose flat offset is (terms without K
 * indices) + (terms with only K indices); if so, the two parts. */
int gemm_split_offset(kbc_arena *a, const ir_stmt *s, const cg_contraction *c, const ir_expr *e, sym **row,
                        sym **kpart) {
  if (e->op != IR_OP_LOAD || e->u.load.padded) return 0;
  sym *off = cg_flat_offset(a, e->u.load.tensor, e->u.load.idx);
  if (!off) return 0;
  sym *zero = sym_const(a, 0);
  unsigned char *is_k = KBC_NEW_ARRAY(a, unsigned char, s->n_index + 1);
  for (int i = 0; i < c->n_k; i++) is_k[c->k[i]] = 1;
  sym *r = off, *q = off;
  for (int id = 0; id < s->n_index; id++) {
    if (is_k[id]) r = sym_subst_index(a, r, id, zero);
    else q = sym_subst_index(a, q, id, zero);
  }
  sym *z = r; /* the offset at every index 0 */
  for (int id = 0; id < s->n_index; id++) z = sym_subst_index(a, z, id, zero);
  sym *kq = sym_sub(a, q, z);
  if (!r || !kq || !sym_equal(off, sym_add(a, r, kq))) return 0;
  *row = r;
  *kpart = kq;
  return 1;
}

/* ---- tile shapes --------------------------------------------------------- */

static double util(double x, int b) {
  double tiles = ceil(x / b);
  return tiles > 0 ? x / (tiles * b) : 1;
}


static double score(const cg_target *t, const gemm_shape *sh, const gemm_cfg *f) {
  double inner;
  if (f->mma) {
    /* shared-memory words per warp per k8 step vs mma count */
    double r = (double)(f->mi * f->ni) / (4.0 * f->mi + 2.0 * f->ni);
    inner = fmin(1.0, 0.5 + 0.75 * r);
  } else {
    double r = (double)(f->tm * f->tn) / (f->tm + f->tn);
    inner = fmin(1.0, 0.5 + r / 8.0);
    if ((f->tm > 4 && f->tm % 4) || (f->tn > 4 && f->tn % 4)) inner *= 0.9; /* reads of padded chunks */
  }
  double tiles = ceil(sh->m / f->bm) * ceil(sh->n / f->bn) * sh->batch;
  int acc = f->mma ? f->mi * f->ni * 4 : f->tm * f->tn;
  double slots = (double)t->sm_count * (acc >= 48 ? 1 : 2);
  /* with split-K, up to GEMM_SPLIT_MAX slices of at least
   * GEMM_SPLIT_MIN_KTILES k-tiles per output tile */
  double slices = sh->splittable ? fmax(1.0, fmin(GEMM_SPLIT_MAX, floor(sh->k / f->bk / GEMM_SPLIT_MIN_KTILES))) : 1;
  double par = fmin(1.0, tiles * slices / slots);
  return util(sh->m, f->bm) * util(sh->n, f->bn) * util(sh->k, f->bk) * inner * par;
}

int gemm_smem_bytes(const gemm_cfg *f) { return 2 * f->bk * (f->sa + f->pad_a + f->sb + f->pad_b) * 4; }

/* Row padding: FFMA reads rows as float4 (a multiple of 4) and its k-major
 * stores want rows = 4 mod 32 banks; mma fragment reads (rows k + t4,
 * columns g) are conflict-free when rows = 8 mod 32 banks. */
static int pad_for(int mma, int bx) { return mma ? ((8 - bx) % 32 + 32) % 32 : ((4 - bx) % 32 + 32) % 32; }

static int choose_bk(const gemm_shape *sh, gemm_cfg *f) {
  /* BK 16 when the staging registers stay few and K is not tiny. */
  f->bk = 8;
  if (sh->k >= 64 && (f->bm + f->bn) * 16 / GEMM_THREADS <= 24) {
    f->bk = 16;
    if (gemm_smem_bytes(f) > GEMM_SMEM_TILES || util(sh->k, 16) < util(sh->k, 8)) f->bk = 8;
  }
  return gemm_smem_bytes(f) <= GEMM_SMEM_TILES;
}

int gemm_choose_cfg(const cg_target *t, const gemm_shape *sh, int mma, gemm_cfg *best) {
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
          if (f.tm * f.tn < 8 || f.bm > 256 || f.bn > 256) continue;
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
          /* 3xTF32 (mma == 2) holds high and low fragments: half the tiles */
          if (f.mi * f.ni > (mma == 2 ? 8 : 16) || f.bm > 256 || f.bn > 256) continue;
          f.bk = 16;
          if (gemm_smem_bytes(&f) > GEMM_SMEM_TILES) continue;
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
