/* gemm_impl.h — internals of the tiled contraction family (implicit GEMM),
 * shared by its files, in the order the data flows:
 *   gemm_tiles.c     the tiling: extents, tile shapes (gemm_tile);
 *   gemm_plan.c      the plan: operands' load plans, flat K, k tables,
 *                    split-K, the epilogue plan (cg_plan_gemm);
 *   gemm_emit.c      the kernel printed from the plan: header, set-up, the
 *                    tile loop, the K loop and its math (cg_emit_gemm);
 *   gemm_load.c      the K loop's data movement: rows, k coordinates,
 *                    global loads, k tables, shared-memory stores;
 *   gemm_vec.c       the vector K loop's data movement: 16-byte chunks
 *                    copied by cp.async, fragments by ldmatrix;
 *   gemm_epilogue.c  the fused epilogue, direct or through shared memory;
 *   gemm_fold.c      the fold: the next statement's reduction of the
 *                    output taken inside the tiles (cg_find_fold);
 *   gemm_win.c       the window K loop: a gathered operand's source box
 *                    staged once per tile, read in place (gemm_win_plan).
 * Nothing is decided while printing: the emitters read the plan. */
#ifndef KBC_GEMM_IMPL_H
#define KBC_GEMM_IMPL_H

#include "cg_impl.h"

/* 256 threads; static shared memory only (<= 48 KB, no opt-in needed),
 * of which the A / B tiles leave 4 KB for the k tables.  Split-K up to 64
 * slices: 8 output tiles of a 256 x 256 product over K = 524288 fill the
 * H200's 264 block slots with 33 (at most 16 made the tile score pick
 * 64 x 64 tiles of 2 x 2 mma tiles instead). */
enum { GEMM_SPLIT_MAX = 64, GEMM_SPLIT_MIN_KTILES = 8 };
enum { GEMM_THREADS = 256, GEMM_MAX_SLOTS = 64, GEMM_SMEM_STATIC = 48 * 1024, GEMM_SMEM_TILES = 44 * 1024 };

/* ---- the fold (gemm_fold.c) ---- */

/* A contraction s (`conv[n, c, z, i, j] = bias[c] + sum(..)`) whose output
 * is a temporary that only the next statement t reads, once per element,
 * inside one reduction over some of s's M indices R (`m[n, c, i, j] =
 * min(z: conv[n, c, z, i, j])`; N indices: A and B are swapped).  One
 * kernel computes both: its tiles cover s's other M indices, N and batch;
 * per tile the block runs a whole K loop for each value of R and folds the
 * outputs into running values by t's reduction (t's reduction body, s's
 * output element as the load), then stores t's output through the
 * epilogue.  s's output is never written. */
typedef struct cg_fold {
  const ir_stmt *t;
  const ir_expr *red;  /* t's reduction */
  const ir_expr *load; /* its one load of s's output */
  int n_r, r[CG_MAX_OUTER]; /* the s indices red reduces, in s's order */
  int swap;            /* R are N indices of the contraction as found: A and B swapped */
  int *s_of_t;         /* t's index id -> the s index at the same place of the load */
  int *t_of_s;         /* s's index id -> t's (every s free index is one) */
} cg_fold;

/* The tail (gemm_tail.c): statements u[0..n) after the stored statement —
 * the fold's t, or without a fold the contraction s itself — each over
 * one row of its output T at a time (T's places but the column, tcol:
 * s's N, in one tile), computed per row in the staged epilogue; a
 * statement's value without the column (a reduction over it, or none) is
 * a register per row that later ones read, one with the column is stored
 * per column. */
typedef struct cg_tail {
  int n;
  const ir_stmt *const *u;
  int tcol;                 /* T's place of the column */
  int64_t ncol;             /* columns */
  int *col;                 /* [k]: u[k]'s index standing for the column (-1: none) */
  int *col_free;            /* [k]: ... a free index (stored per column), else its reductions' */
  int **idx_pos;            /* [k][index id]: T's place of each row index of u[k] (-1: none) */
  int **pos;                /* [k][d]: T's place of u[k]'s output place d (T->rank: the column) */
  unsigned char *store;     /* [k]: u[k]'s output written (read after the group, or the program's) */
  int store_t;              /* T written */
} cg_tail;

/* A tail over rows of at least this many columns runs a warp a row
 * (gemm_epilogue.c), shorter ones a team of 256 / BM threads a row. */
enum { GEMM_TAIL_WARP_COLUMNS = 64 };

/* The tail of the GEMM of statement i (with fold f, or NULL: none): the
 * statements after the stored one that qualify, or NULL for none. */
const cg_tail *cg_find_tail(kbc_arena *a, const ir_program *p, const cg_target *t, int i, const unsigned char *heads,
                            const cg_fold *f);

/* Whether statement i of p and the next form a fold that pays on target t
 * (opt.gemm_fold: 1 where it pays — its tiles fill the GPU at the
 * estimated extents; 2 wherever it matches; 0 never); if so, *out. */
int cg_find_fold(kbc_arena *a, const ir_program *p, const cg_target *t, int i, cg_fold *out);

/* ---- the tiling (gemm_tiles.c) ---- */

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

typedef struct {
  double m, n, k, batch; /* tile estimates */
  int splittable;        /* split-K may add slices of K to too few tiles */
  int min_bn;            /* the tile holds at least this many columns (a tail's row; 0: any) */
} gemm_shape;

/* A contraction statement's tiling. */
typedef struct {
  cg_contraction c;
  sym *M, *N, *K, *B;  /* extents of the flattened m, n, k and batch */
  gemm_shape shape;    /* their tile estimates; whether split-K may apply */
  int mma;             /* on tensor cores: TF32, or 3xTF32 (split3) */
  /* fp32 on TF32 tensor cores (opt.fp32_mma, KBC_FP32_MMA=1): operands kept
   * in fp32 in shared memory, split into high and low TF32 parts at use,
   * three mma per product (3xTF32) */
  int split3;
  gemm_cfg cfg;        /* tile shapes */
  sym *tiles;          /* output tiles, ceil(M / BM) * ceil(N / BN) * B; NULL where it cannot be formed */
} gemm_tiling;

double gemm_tile_estimate(const sym *x);
/* The fraction of tiles of b covering x that x uses (padding waste). */
double gemm_util(double x, int b);
/* Split-K's most slices for shape sh at k-tiles of bk (1 where it may not
 * split): up to GEMM_SPLIT_MAX of at least GEMM_SPLIT_MIN_KTILES k-tiles. */
double gemm_slices(const gemm_shape *sh, int bk);
/* Bytes of one stage of the A and B tiles; of the register-staged K loop's
 * two (gemm_smem_bytes). */
int gemm_stage_bytes(const gemm_cfg *f);
int gemm_smem_bytes(const gemm_cfg *f);
/* Split-K's slice count for out_tiles output tiles of ktiles k-tiles on
 * `slots` block slots: 1 (no split) for `below` output tiles or more, else
 * the count of at most GEMM_SPLIT_MAX slices of at least min_ktiles
 * k-tiles (GEMM_SPLIT_MIN_KTILES; 1 under KBC_GEMM_SPLIT=2) that best
 * fills the waves.  The kernel computes the same at run time (gemm_emit.c's
 * emit_extents prints this loop). */
long long gemm_split_count(long long out_tiles, long long ktiles, int slots, long long below, int min_ktiles);
/* mma: 0 FFMA, 1 TF32 tensor cores, 2 3xTF32; staged: the register-staged
 * K loop (3xTF32 warp tiles of at most 8 mma tiles, static shared memory),
 * else the vector loop (its stages' fit checked by its plan). */
int gemm_choose_cfg(const cg_target *t, const gemm_shape *sh, int mma, int staged, gemm_cfg *best);
/* tl->tiles from its extents and tile shape. */
void gemm_count_tiles(kbc_arena *a, gemm_tiling *tl);
/* Whether s is a contraction that can be tiled (tiles may still be NULL);
 * if so, its tiling.  gemm_tile_fold: under fold f (NULL: none), its R
 * out of M (looped in the tile) and no split-K. */
int gemm_tile(kbc_arena *a, const cg_target *t, const ir_stmt *s, gemm_tiling *out);
int gemm_tile_fold(kbc_arena *a, const cg_target *t, const ir_stmt *s, const cg_fold *f, int min_bn, gemm_tiling *out);

/* ---- the plan (gemm_plan.c) ---- */

/* Whether e mentions one of the indices ids[0..n). */
int gemm_mentions_any(const ir_expr *e, const int *ids, int n);

/* How one operand (A or B) is loaded. */
typedef struct {
  char tag;            /* 'a' or 'b': prefix of its C names */
  const ir_expr *e;
  /* A computed from its load (opt.gemm_xform; gemm_plan.c xform_load): the
   * factor f(e, terms), e (planned as the operand's load) its one load of
   * both x and K indices, its other loads of x (and batch) indices only —
   * row terms, read once a tile — or of K (and batch) indices only — k
   * terms, read once a k-tile and k; on wgmma with A from registers only,
   * each fragment element f of the staged one (gemm_wgmma.c,
   * emit_a_fragments).  NULL: the operand is e. */
  const ir_expr *xform;
  int n_x;             /* its free indices (M for A, N for B) */
  const int *x;
  int bx;              /* tile extent along x */
  const char *X, *x0;  /* C names of the x extent and the tile origin */
  int kmajor;          /* consecutive threads load consecutive k */
  int fast;            /* single load addressed as row offset + k offset */
  int guarded;         /* fast and padded (x?[...]): loaded where its in-bounds test over the row and
                          k digits holds (dimensions proven in range untested), else 0 */
  int table;           /* k offsets / digits from the shared k table */
  int flat_rows;       /* row_off depends on x only through its flattening: rows not decoded */
  sym *row_off, *k_off;
  int slots;           /* loads per thread per k-tile */
  int partial;         /* the last slot is not used by every thread */
  int n_rows;          /* distinct x coordinates (row slots) per thread */
  const char *row_expr[GEMM_MAX_SLOTS]; /* local x of each row slot */
  int row_of[GEMM_MAX_SLOTS], kslot_of[GEMM_MAX_SLOTS];
  const char *xl[GEMM_MAX_SLOTS], *kl[GEMM_MAX_SLOTS]; /* local x / k of each load slot */
  /* The vector K loop (plan->vec): the operand copied in chunks of 4
   * consecutive floats along k (kmajor: its shared tile [x][k], rows of
   * BK + 4, its fragments read by ldmatrix) or along x (its tile [k][x] as
   * the other loops have it), each chunk one 16-byte cp.async where it is
   * aligned and inside M, N, K, else a float at a time; `chunks` chunk
   * slots per thread per k-tile, the last one not taken by every thread
   * where chunk_partial. */
  int chunks, chunk_partial;
  /* wgmma with an x-major operand (KBC_GEMM_WGMMA_T): copied a float at a
   * time into the K-major swizzled stage wgmma reads, each load slot one
   * element; a warp's 32 lanes take 8 consecutive x (a 32-byte sector of
   * global memory per k) times 4 consecutive k, whose swizzled places fall
   * in 32 distinct banks (gemm_vec_plan) */
  int tr;
  /* A transposed operand contiguous along its x at 3xTF32 (opt.gemm_tr_vec:
   * gemm_vec_operand_ok, not gathered): its slots chunks of 4 consecutive x
   * at one k, copied 16 bytes at a time into the stage's low half for its
   * tile, there [k][x] with chunk c of row k at (c ^ 2 (k % 4)) * 16; the
   * stage pass reads back the chunks this thread copied, waits for every
   * thread's (a barrier), and writes each float and its low part into their
   * K-major swizzled places.  A warp's 32 lanes take 2 chunks (a 32-byte
   * sector) times 16 k: conflict-free copies, reads and scalar writes
   * (gemm_vec.c, plan_transposed_vec) */
  int trv;
  /* wgmma with a gathered x-major operand (opt.gemm_gather: a convolution's
   * input, whose k offsets are no function of one flat k), copied
   * transposed as above, each element at its row's offset plus its k's
   * offset from the whole-K table _<tag>qk (plan->ktab); the other operand
   * then addresses K through its flattening alone (kflat: its k_off
   * collapsed, the last K index standing for the flat k) */
  int gather, kflat;
  /* wgmma with an x-major operand packed k-major before the launch
   * (gemm_pack.c, opt.gemm_pack): the K loop reads a copy P[r][x][kp] of
   * the elements it uses — r over the batch indices pb[0..n_pb) the
   * operand mentions, x its flat free indices, kp the flat K padded to a
   * multiple of 4, zero past K — made by the kernel's own pack launch;
   * row_off / k_off then address P (k-major, the last x and k indices
   * standing for the flat row and k).  R, X, Kp: P's extents (pack_floats
   * their product; pack_tiles the pack kernel's tiles of them); src_off:
   * the load's flat offset in its tensor. */
  int pack, n_pb, pb[CG_MAX_OUTER];
  int pack_along_k;    /* the packed operand was k-major (and misaligned): its pack reads along k */
  int misaligned;      /* known not 16-byte aligned (gemm_vec_operand_ok 2): on the vector loop only
                          packed, or (x-major) transposed */
  sym *pack_r, *pack_x, *pack_kp, *pack_floats, *pack_tiles, *src_off;
} gemm_operand;

/* How the output elements are computed and stored. */
typedef struct {
  /* Through shared memory (outputs contiguous along m): passes over
   * groups of nc tile columns, _Cs[bm][nc + 1]; along_n: the output
   * contiguous along n, a thread a column of the group (plan_staging). */
  int staged, passes, nc, along_n;
  /* Directly from the thread tiles: M / N addressed through their flat
   * coordinate where every address allows (cg_collapse), not decoded; a
   * thread's columns in runs of `run` consecutive n (decoded at the start
   * of a run, then carried); stored `vec` at a time (float4 / float2 when
   * the output is contiguous along n; 1: one by one). */
  int mflat, nflat, run, vec;
  /* The thread's columns in groups of `group` (consecutive j from a
   * multiple of it) that differ in the innermost column digit only: the
   * outer digits decoded once a group, the epilogue's values that digit
   * leaves alone read once a row and group, its operands contiguous along
   * it a run at a time (gemm_epilogue.c); 0: none (a flat N, the parked
   * form, a fold, or a digit extent the thread's columns straddle). */
  int group;
  /* The groups repeat the innermost digit's values (each spans its whole
   * extent): the epilogue's values the outer column digits leave alone
   * read for the first group's columns once a row, reused by the rest
   * (opt.gemm_ep_periodic). */
  int periodic;
  /* wgmma tiles whose epilogue calls many library functions per thread
   * (gelu, exp, division, ... times the outputs): the accumulators parked
   * in the free stages and the columns visited by a rolled loop, so that
   * the epilogue's code stays small (fully unrolled, 128 GELUs a thread
   * took 4096^3 at TF32 from 534 to 767 us on the H200, 2026-12-03) */
  int park;
} gemm_epilogue;

/* The window K loop (gemm_win.c): operand A, a load whose every index is
 * affine in the statement's indices with constant coefficients >= 0 (a
 * convolution's x[n, ci, z + dz, i + di, j + dj]), read from a box of its
 * tensor staged in shared memory once per tile (and value of a fold's R):
 * per dimension d the box spans lo_d .. lo_d + ext[d] - 1, lo_d the index
 * at the tile's first row with K and the inner M digits that wrap inside
 * the tile at 0; elements outside the tensor are 0 (padding).  A's
 * element (m, k) is then _W[ro(m) + ko(k)]: ro from m's digits (per
 * thread, per tile), ko a table of the whole K.  Its M digits c.m[0 ..
 * split - 1] are outer: a tile lies inside one value of them (so the box
 * is bounded), ti tiles of BM rows over the inner extent mi each.  B, its
 * N tile by the whole K (padded to kp, a multiple of 8, zero beyond K),
 * is staged once per tile too.  Tensor cores only (TF32 or 3xTF32). */
enum { GEMM_WIN_DIMS = 8 };
typedef struct {
  int split;           /* outer M digits */
  int anchored;        /* the inner digit c.m[split] kept at its value in the tile's first row, or -1 */
  int64_t mo, mi, ti;  /* outer values; inner rows per outer value; tiles over them */
  int n_dim;           /* A's tensor rank */
  int64_t ext[GEMM_WIN_DIMS], bs[GEMM_WIN_DIMS]; /* box extent and stride per dimension */
  int64_t xs[GEMM_WIN_DIMS]; /* the tensor's own strides (row-major) */
  int64_t box;         /* box elements, the last dimension's rows padded to bs[n_dim - 2] */
  int64_t *coef;       /* [n_dim][n_index]: index id's coefficient in dimension d */
  int64_t kp;          /* K padded to a multiple of 8 */
  int ldb;             /* B's staged row width (kp + pad) */
  /* Under a fold (opt.gemm_win_pipe): two box buffers, the next fold
   * step's box copied by cp.async during this step's math; else one,
   * staged by loads and stores before it. */
  int pipe;
  /* Pipelined with rows of a multiple of 4 floats (more than one row): the
   * box copied in 16-byte chunks of its rows, a thread a chunk (one
   * cp.async of 16 bytes where the four lie inside the tensor and the
   * address is aligned, else four of 4 bytes); else a warp a row. */
  int chunks;
  /* The ring (pipelined, chunked, under a fold of one index r): r moves
   * the box along one dimension of the tensor alone (ring: that dimension,
   * not the rows' own, no M index in it; r's coefficient ring_cr below
   * the box's extent ring_e there).  The two boxes become one buffer of
   * 2 ring_e planes along it: a step copies only the planes the next step
   * adds (ring_cr; a new tile's first step all ring_e), plane at virtual
   * coordinate u in slot u mod 2 ring_e; the k table, rewritten per step
   * (two buffers), holds the slots.  bs[] is the ring's layout.  -1: none. */
  int ring;
  int64_t ring_e, ring_cr;
  int b_once;          /* every tile has the same B (N in one tile, no batch): staged once per block */
  int b_split;         /* 3xTF32: B split into TF32 parts where staged, _Bw high and _Bwl low */
  int a_split;         /* 3xTF32, pipelined: the box's low parts taken as it lands into _Wl, a twin of
                          the boxes (or ring) over the epilogue's tile; the high parts read as they are */
} gemm_window;

struct cg_gemm_plan {
  const ir_stmt *s;
  const cg_fold *fold; /* the next statement's reduction folded in (NULL: none) */
  const cg_tail *tail; /* the statements after the stored one, per row of the tile (NULL: none) */
  gemm_tiling tiling;
  gemm_operand op[2];
  /* Both operands address K only through its flattening (cg_collapse):
   * k is one coordinate, its digits are neither decoded nor carried. */
  int kflat;
  int n_kslots;       /* distinct k coordinates the thread loads (k slots) */
  const char *kslot_expr[2 * GEMM_MAX_SLOTS]; /* local k of each k slot */
  int builder;        /* the k slot (k = base + _tid % BK) that writes the k tables, or -1 */
  int table_digits;   /* a generic operand reads k digits from the table */
  /* The k tables cover the whole K (known, its tables small: K padded to
   * whole k-tiles and one more, ktab entries), written once per block before the first
   * tile (gemm_emit_ktab) and read at _kb + local k, instead of a k-tile's
   * entries written a k-tile ahead by the builder; 0: per k-tile tables. */
  int ktab;
  gemm_epilogue epilogue;
  /* Split-K: the output is the sum plus terms without reductions, so when
   * the output tiles are too few for the GPU the K range is cut into
   * slices whose partial sums are added atomically into the zeroed output,
   * the first slice adding the other terms (the slice count is chosen at
   * run time from the tile count, or by the plan where sizes are known). */
  int split;
  int slots;          /* blocks resident at once, two per multiprocessor: a wave */
  int split_min;      /* split-K: k-tiles a slice at least (GEMM_SPLIT_MIN_KTILES; 1 under KBC_GEMM_SPLIT=2) */
  int split_below;    /* split-K only for fewer output tiles than this: two waves for the
                         bare sum, one with other terms (whose split lost 2% where the
                         tiles filled a wave: H200, 2026-12-02) */
  /* The K loop: 2, loads staged in registers and stored into two shared
   * buffers; 3 or more, that many shared-memory stages filled by cp.async
   * (sm_80+, both operands plain loads without k tables), k-tiles
   * requested stages - 1 ahead of the math (opt.gemm_stages). */
  int stages;
  /* The stages the ring touches: where K is known and a tile has fewer
   * k-tiles than stages, only the first ceil(K / BK) are ever filled, and
   * only they take shared memory (the K loop still counts modulo stages);
   * else stages.  Set with the K loop (cg_plan_gemm). */
  int ring;
  /* The vector K loop (sm_80+, tensor cores, opt.gemm_vec): both operands
   * plain loads contiguous along their chunk direction over one K (or X)
   * coordinate, copied in 16-byte chunks (gemm_vec.c); stages >= 3. */
  int vec;
  /* The vector loop on mma.sync at 3xTF32, both operands k-major
   * (opt.gemm_low_stage): each thread splits the chunks it copied once
   * they land, the low TF32 parts into a twin of the stages (after them,
   * gemm_vec_low_at bytes on); the fragments read the high parts (as
   * they are: the tensor cores ignore the low 13 bits) and the low ones
   * by ldmatrix instead of splitting each element per warp and k-step. */
  int low_stage;
  /* The wgmma K loop (sm_90a, opt.gemm_wgmma; gemm_wgmma.c): a vector loop
   * whose operands are both k-major, its stages in the 128-byte swizzle,
   * two warpgroups each multiplying a 64 x (BN / wgn) tile by wgmma; wgn 1
   * (BM 128, the warpgroups along m) or 2 (BM 64, along n). */
  int wgmma, wgn;
  /* Blocks a multiprocessor the wgmma tile was chosen for (2: an
   * output-bound product's, opt.gemm_occ; gemm_wgmma.c), else 0. */
  int occ;
  /* wgmma with A from registers (opt.gemm_areg; gemm_wgmma.c): each thread
   * loads its A fragments of a k-tile from the stage (the K-major tile, or
   * a trv operand's [k][x] staging) and splits (3xTF32) or rounds (TF32)
   * them there, so that A is neither split into the stage's low half nor
   * read by every product; two fragment sets alternate with the k-tiles. */
  int areg;
  /* wgmma at TF32: operand w (0 A, 1 B) read from its tensor's copy rounded
   * before the launch (cg_kernel.prep; gemm_wgmma_prep), its stage pass
   * left out. */
  int prep[2];
  /* operand w read from the kernel's copy copy_of[w] - 1 (cg_kernel.prep;
   * 0: from its tensor) */
  int copy_of[2];
  const gemm_window *win; /* the window K loop (gemm_win.c), or NULL */
  int min_blocks;     /* __launch_bounds__'s blocks per multiprocessor (opt.gemm_min_blocks), as
                         cg_signature takes it (-2: two from sm_90 on) */
};

/* The end of the tile's rows (C name): the window's tiles end inside M. */
static inline const char *gemm_mlimit(const cg_gemm_plan *plan) { return plan->win ? "_mend" : "_M"; }

/* The statement whose output the kernel stores: s, or with a fold t. */
static inline const ir_stmt *gemm_stored_stmt(const cg_gemm_plan *plan) {
  return plan->fold ? plan->fold->t : plan->s;
}
/* The stored statement's index standing for s's index id (itself without
 * a fold). */
static inline int gemm_stored_index(const cg_gemm_plan *plan, int id) {
  return plan->fold ? plan->fold->t_of_s[id] : id;
}

/* ---- emission (gemm_emit.c, gemm_load.c, gemm_epilogue.c) ---- */

typedef struct {
  cg_ctx *ctx;
  const cg_gemm_plan *plan;
  cg_emit emit;       /* the output; emit.idx is bind */
  const char **names; /* the statement's own index names */
  const char **bind;  /* what each index stands for now: rebound per load and in the epilogue */
  const char **tbind; /* with a fold: what each index of its statement t stands for (s's names) */
  int fold_saved;     /* with a fold: emit.n_hoisted before its loop (its column values, gemm_fold_open) */
  const char *kname;  /* the kernel's name (its module state is named after it) */
  const char *src[2]; /* what operand w's loads read: its tensor's parameter, or its rounded copy (prep) */
} gemm_emitter;

/* "i*j" of the indices' names ("-" for none). */
const char *gemm_join_names(gemm_emitter *ge, const int *ids, int n);
/* Assigns the row-major digits of the C expression flat over ids (the
 * last fastest) to the declared C lvalues dst; gemm_declare_decode first
 * declares them (`long long d0, d1, ...;` and an optional comment);
 * gemm_declare_digits into the names <pre><index name>
 * (gemm_digit_names), returned; gemm_decode_named into the statement's
 * own index names. */
void gemm_decode(gemm_emitter *ge, const char *flat, const int *ids, int n, const char *const *dst);
void gemm_declare_decode(gemm_emitter *ge, const char *flat, const int *ids, int n, const char *const *dst,
                         const char *comment);
const char **gemm_digit_names(gemm_emitter *ge, const int *ids, int n, const char *pre);
const char **gemm_declare_digits(gemm_emitter *ge, const char *flat, const int *ids, int n, const char *pre,
                                 const char *comment);
void gemm_decode_named(gemm_emitter *ge, const char *flat, const int *ids, int n, const char *comment);

/* gemm_load.c: the K loop's data movement (buffers are C expressions). */
/* A chunk of 4 floats from src + _o into shared memory at _d (_ds its
 * shared address) by cp.async: 16 bytes where in4 (all four inside) holds
 * and the address is 16-byte aligned, else a float at a time (loop
 * variable q), in1 (that one inside) or zero. */
void gemm_emit_chunk_copy(cg_emit *out, const char *src, const char *in4, const char *q, const char *in1);
void gemm_emit_rows(gemm_emitter *ge, const gemm_operand *o);
void gemm_emit_k_increments(gemm_emitter *ge);
void gemm_emit_k_init(gemm_emitter *ge);
void gemm_emit_loads(gemm_emitter *ge, const char *tbuf);
void gemm_emit_table_write(gemm_emitter *ge, const char *buf);
void gemm_emit_stores(gemm_emitter *ge, const char *buf);
/* With plan->ktab: the whole K's tables, written by the block's threads,
 * then a barrier (before the tile loop). */
void gemm_emit_ktab(gemm_emitter *ge);
/* The pipelined K loop's copies of one k-tile (k offsets at _kb) into
 * shared stage `stage` (cp.async, zero outside M, N, K). */
void gemm_emit_copies(gemm_emitter *ge, const char *stage);
/* gemm_emit.c: the pipelined loops' first copies, k-tiles 0 .. ahead - 1
 * into stages 0 .. ahead - 1, a commit group each (empty past the end). */
void gemm_emit_first_copies(gemm_emitter *ge, int ahead);
/* In the loop: k-tile _kt + ahead into stage _nxt where it exists, then a
 * commit group (empty past the end). */
void gemm_emit_next_copies(gemm_emitter *ge, int ahead);
/* 3xTF32: every GEMM_FLUSH_K reductions the tensor cores' sums go into
 * fp32 totals (gemm_emit.c says why); gemm_emit_flush prints that flush
 * (all = 0) or, after the K loop, the totals added into the accumulators
 * (all = 1).  Nothing for a TF32 or FFMA tile. */
enum { GEMM_FLUSH_K = 64 };
void gemm_emit_flush(gemm_emitter *ge, int all);
/* The same, every `every` values of the C counter (a power of two). */
void gemm_emit_flush_every(gemm_emitter *ge, int all, const char *counter, int every);
/* An mma K step's fragment registers (_fa, _fb; 3xTF32: and their low
 * parts), and its products on the warp tile (3xTF32: three passes). */
void gemm_emit_fragment_decls(gemm_emitter *ge);
void gemm_emit_mma_passes(gemm_emitter *ge);

/* gemm_vec.c: the vector K loop.  Whether operand o can be copied in
 * chunks (gemm_plan.c asks before choosing plan->vec: 1 yes, 2 yes but a
 * known stride or offset leaves most chunks unaligned, 0 no); its chunk slots at
 * k-tiles of bk (local x and k, the rows they share: xl, kl, row_expr,
 * row_of, as the staged loop's slots); the copies of one k-tile into stage
 * `stage`; the mma fragments of a k-major operand at _kk of stage _cur into
 * _fa / _fb (TF32 rounded unless split3 keeps the fp32).  The shared tiles
 * of every loop: whether o's is [x][k] (the vector loop's k-major
 * operands; else [k][x]), its rows and row width in floats, and the bytes
 * of one stage of both.  The threads that copy o's chunk slot j: all (0),
 * or those below the count returned. */
int gemm_vec_operand_ok(kbc_arena *a, const cg_gemm_plan *plan, const gemm_operand *o);
void gemm_vec_plan(kbc_arena *a, gemm_operand *o, int bk);
void gemm_vec_rows(gemm_emitter *ge);
void gemm_vec_copies(gemm_emitter *ge, const char *stage);
int gemm_vec_chunk_threads(const cg_gemm_plan *plan, const gemm_operand *o, int j);
void gemm_vec_fragments(gemm_emitter *ge, const gemm_operand *o);
int gemm_vec_low_at(const cg_gemm_plan *plan);
void gemm_emit_low4(cg_emit *out, const char *src, const char *dst);
/* The C text of x's low TF32 part, x - (x & ~0x1fff). */
const char *gemm_low_part(cg_emit *out, const char *x);
/* Whether o is copied a float at a time into the K-major stage (transposed,
 * not trv): its copies need no alignment and test each element. */
int gemm_float_copies(const gemm_operand *o);
void gemm_vec_low_pass(gemm_emitter *ge);
int gemm_tile_kx(const cg_gemm_plan *plan, const gemm_operand *o);
int gemm_tile_rows(const cg_gemm_plan *plan, const gemm_operand *o);
int gemm_tile_ld(const cg_gemm_plan *plan, const gemm_operand *o);
int gemm_plan_stage_bytes(const cg_gemm_plan *plan);
/* A guarded operand's in-bounds test for its load (or vector-loop chunk)
 * slot j, over its row's digits and its k's (from the whole-K table: a
 * gathered operand's): a C condition ("true" unguarded). */
const char *gemm_guard_test(gemm_emitter *ge, const gemm_operand *o, int j);
/* Bytes of the whole-K k tables (plan->ktab; 0 without). */
int gemm_ktab_bytes(const cg_gemm_plan *plan);
/* Whether the whole-K tables' entries are int, not long long: a gathered
 * operand's (plan_gather: its tensor under 2^31 elements). */
int gemm_ktab_int(const cg_gemm_plan *plan);
void cg_emit_ldsm_helpers(kbc_buf *out);

/* gemm_wgmma.c: the wgmma K loop.  gemm_wgmma_plan turns a vector-loop
 * plan v (both operands k-major) into the wgmma one where the target and
 * the switch allow: its tile, k-tiles of 32, stages; whether it did.  The
 * helpers; a chunk's byte offset in a stage (C expression, from the local
 * row and k of chunk slot j); the thread's warpgroup coordinates; the K
 * loop. */
enum { GEMM_WGMMA_ALIGN = 1024 }; /* the stages' alignment (the swizzle's atoms), allocated beyond them */
/* Shared memory the GPU keeps for itself beside each block's (sm_90: 228
 * KB a multiprocessor, 227 KB a block at most) */
enum { GEMM_SMEM_RESERVED = 1024 };
/* The stages a ring of `stages` touches when K (known) has ceil(K / bk)
 * k-tiles (cg_gemm_plan.ring). */
int gemm_ring(int stages, int64_t K, int bk);
int gemm_wgmma_plan(kbc_arena *a, const cg_target *t, cg_gemm_plan *v);
void gemm_wgmma_helpers(kbc_buf *out, const cg_gemm_plan *plan);
int gemm_wgmma_stage_bytes(const cg_gemm_plan *plan);
const char *gemm_wgmma_chunk_off(gemm_emitter *ge, const gemm_operand *o, int j, const char *stage);
void gemm_wgmma_coords(gemm_emitter *ge);
void gemm_wgmma_k_loop(gemm_emitter *ge);
int gemm_wgmma_ahead(const gemm_emitter *ge);
int gemm_wgmma_prefetches(const gemm_emitter *ge);
/* gemm_xform.c: an A computed from its load (gemm_operand.xform) on the
 * wgmma K loop with A from registers: its row terms at the thread's two
 * fragment rows (_xm0, _xm1; before the K loop); in the fragment loop's
 * k step _q, its fragment k (_xk0: a0 and a1, _xk1: a2 and a3) and k
 * terms; the C value of fragment element i (0..3: a0..a3) whose staged
 * value of the load is the C expression x. */
void gemm_xform_rows(gemm_emitter *ge);
void gemm_xform_ks(gemm_emitter *ge);
const char *gemm_xform_value(gemm_emitter *ge, int i, const char *x);
/* Where it pays (opt.gemm_prep), a TF32 wgmma plan's operands rounded
 * before the launch: plan->prep and k's prep fields set. */
void gemm_wgmma_prep(kbc_arena *a, const cg_target *t, cg_gemm_plan *plan, cg_kernel *k);
/* gemm_pack.c: operand w of a wgmma plan (its tile counted) packed
 * k-major before the launch where that pays (opt.gemm_pack); whether it
 * was (its fields then P's).  gemm_pack_emit prints the pack kernel of
 * k's copy i (k->prep_pack[i]: operand prep_pack[i] - 1). */
int gemm_pack_plan(kbc_arena *a, const cg_target *t, cg_gemm_plan *plan, int w);
/* Whether o, transposed in the wgmma stages, would go 16 bytes at a time
 * (gemm_operand.trv): 3xTF32, opt.gemm_tr_vec, not gathered, contiguous
 * along its x and not known misaligned. */
int gemm_trv_ok(kbc_arena *a, const cg_target *t, const cg_gemm_plan *plan, const gemm_operand *o);
void gemm_pack_emit(cg_ctx *C, const cg_gemm_plan *plan, const cg_kernel *k, int i);
/* The C address of k's copy i in its scratch _ws (the copies before it
 * added one at a time, each below 2^30 where 32-bit indices are: the
 * runtime's choose_variant). */
const char *gemm_copy_at(cg_emit *E, const cg_kernel *k, int i);
/* The operands' sources (ge->src) and, where the kernel takes copies, their
 * pointers into its scratch (and split-K's part after them). */
void gemm_wgmma_sources(gemm_emitter *ge, const cg_kernel *k);
void gemm_emit_k_advance(gemm_emitter *ge);

/* gemm_epilogue.c: per output element of the thread: decode, epilogue,
 * store. */
void gemm_emit_epilogue(gemm_emitter *ge);
/* The fold (plan->fold): the running values _red, set to the reduction's
 * identity, and the loop over R opened (R's digits decoded into s's index
 * names); then, after the K loop, each output element of the thread
 * folded into its _red and the loop closed.  The epilogue then stores t's
 * value from _red. */
void gemm_fold_open(gemm_emitter *ge);
void gemm_fold_close(gemm_emitter *ge);

/* gemm_win.c: the window K loop.  gemm_win_plan turns plan (a tensor-core
 * tiling, register-staged, not split) into the window one where A's box
 * pays and fits (its tiling's tile count then the window's); whether it did.  Then the shared declarations, the k
 * table (before the tile loop), the tile's set-up (B staged, the thread's
 * row offsets: before a fold's loop), and per K loop the box staged and
 * the math. */
int gemm_win_plan(kbc_arena *a, const cg_target *t, cg_gemm_plan *plan);
void gemm_win_shared(gemm_emitter *ge);
void gemm_win_table(gemm_emitter *ge);
void gemm_win_tile(gemm_emitter *ge);
void gemm_win_k_loop(gemm_emitter *ge);

#endif
