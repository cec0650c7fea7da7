/* gemm_impl.h — internals of the tiled contraction family, shared by
 * gemm_plan.c (operand analysis and the choice of tile shapes) and
 * sched_gemm.c (emission). */
#ifndef KBC_GEMM_IMPL_H
#define KBC_GEMM_IMPL_H

#include "cg_impl.h"

/* 256 threads; static shared memory only (<= 48 KB, no opt-in needed),
 * of which the A / B tiles leave 4 KB for the k tables. */
enum { GEMM_SPLIT_MAX = 16, GEMM_SPLIT_MIN_KTILES = 8 };
enum { GEMM_THREADS = 256, GEMM_MAX_SLOTS = 64, GEMM_SMEM_STATIC = 48 * 1024, GEMM_SMEM_TILES = 44 * 1024 };

typedef struct {
  int mma;        /* TF32 tensor cores instead of FFMA */
  int bm, bn, bk; /* block tile */
  int sa, sb;       /* shared-memory row widths of _As / _Bs before padding */
  int pad_a, pad_b; /* their row padding, floats */
  /* FFMA: thread tile tm x tn; thread grid tx (along n) x ty (along m);
   * vm / vn = 4: the tile's rows / columns in 4-wide chunks interleaved
   * across the threads; else (= tm / tn) contiguous per thread */
  int tm, tn, tx, ty, vm, vn;
  /* MMA: warp grid wm x wn, each warp mi m16 tiles x ni n8 tiles */
  int wm, wn, mi, ni;
} gemm_cfg;

/* One operand (A or B) of the product. */
typedef struct {
  char tag;            /* 'a' or 'b': prefix of its C names */
  const ir_expr *e;
  int n_x;             /* its free indices (M for A, N for B) */
  const int *x;
  int bx;              /* tile extent along x */
  const char *X, *x0;  /* C names of the x extent and the tile origin */
  int kmajor;          /* consecutive threads load consecutive k */
  int fast;            /* single plain load addressed as row offset + k offset */
  int table;           /* k offsets / digits from the shared k table */
  int flat_rows;       /* row_off depends on x only through its flattening: rows not decoded */
  sym *row_off, *k_off;
  int slots;           /* loads per thread per k-tile */
  int partial;         /* the last slot is not used by every thread */
  int n_rows;          /* distinct x coordinates (row slots) per thread */
  const char *row_expr[GEMM_MAX_SLOTS]; /* local x of each row slot */
  int row_of[GEMM_MAX_SLOTS], kslot_of[GEMM_MAX_SLOTS];
  const char *xl[GEMM_MAX_SLOTS], *kl[GEMM_MAX_SLOTS]; /* local x / k of each load slot */
} gemm_operand;

typedef struct {
  cg_ctx *C;
  cg_emit E;
  const ir_stmt *s;
  cg_contraction c;
  gemm_cfg f;
  gemm_operand op[2];
  const char **names; /* the statement's index names (E.idx points to a copy) */
  const char **bind;  /* E.idx: rebound per load / epilogue */
  /* Both operands address K only through its flattening (cg_collapse):
   * k is one coordinate, its digits are neither decoded nor carried. */
  int kflat;
  int n_kslots;
  int builder;        /* the k slot (k = base + _tid % BK) that writes the k tables, or -1 */
  int table_digits;   /* a generic operand reads k digits from the table */
  /* Epilogue through shared memory (outputs contiguous along m): passes
   * over groups of nc tile columns, _Cs[bm][nc + 1]. */
  int staged, passes, nc;
  /* Split-K: the output is a plain sum, so when the output tiles are too
   * few for the GPU the K range is cut into slices whose partial sums are
   * added atomically into the zeroed output (the slice count is chosen at
   * run time, from the tile count). */
  int split;
  /* fp32 on TF32 tensor cores (KBC_FP32_MMA=1): operands kept in fp32 in
   * shared memory, split into high and low TF32 parts at use, three mma
   * per product (3xTF32) */
  int split3;
  int slots;          /* blocks resident at once, two per multiprocessor: a wave */
  const char *kslot_expr[2 * GEMM_MAX_SLOTS];
} gemm;

typedef struct {
  double m, n, k, batch; /* tile estimates */
  int splittable;        /* split-K may add slices of K to too few tiles */
} gemm_shape;

/* ---- gemm_plan.c ---- */
sym *gemm_extent_product(kbc_arena *a, const ir_stmt *s, const int *ids, int n);
double gemm_tile_estimate(const sym *x);
void gemm_stride_runs(kbc_arena *a, const ir_stmt *s, const ir_expr *e, int kid, int xid, double *run_k, double *run_x);
int gemm_split_offset(kbc_arena *a, const ir_stmt *s, const cg_contraction *c, const ir_expr *e, sym **row, sym **kpart);
int gemm_smem_bytes(const gemm_cfg *f);
/* mma: 0 FFMA, 1 TF32 tensor cores, 2 3xTF32 (smaller warp tiles) */
int gemm_choose_cfg(const cg_target *t, const gemm_shape *sh, int mma, gemm_cfg *best);

#endif
