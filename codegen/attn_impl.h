/* attn_impl.h — internals of the fused attention family, shared by its
 * files in the order the data flows:
 *   attn_match.c  the chain found in the IR (cg_find_attention);
 *   attn_plan.c   its plan: the layout, names, launch (cg_plan_attn);
 *   attn_emit.c   the kernel printed from the plan (cg_emit_attn);
 *   attn_math.c   its two products, FFMA or mma.sync, and the layout's
 *                 index expressions.
 *
 * The chain (docs/FUSED_ATTENTION.md), consecutive statements over a
 * batch space B, rows R and columns C:
 *   S     s[B, R, C] = f(sum(D: q(B, R, D) * k(B, C, D)), loads)   scores
 *   ROW   r[B, R] = red(C: body)                                   row statistics
 *   WIDE  w[B, R, C] = g(s, w.., r..)                              pointwise tiles
 *   OUT   o[B, R, N2] = h(sum(C: a(s, w.., r..) * v(B, C, N2)))     the consumer
 * s and every w stay on chip: no statement outside the chain reads them.
 * The kernel runs one sweep over the columns (the online softmax): a
 * single row statement `m = max(C: X)` may appear inside the others only
 * as a factor exp(X - m) (the same X), and values summed with it are
 * rescaled by exp(m_old - m_new) when m grows.  The consumer's first
 * factor splits into factors that vary along C (E, accumulated) and
 * factors constant along C (F, applied once at the end: the 1 / sum of a
 * softmax), so that o = h(F * sum(C: E * v)).
 *
 * A recomputing chain (recompute.c, ATTN_FIND_RECOMPUTE) has no ROW
 * statements (its row statistics are loads), may hold further scores
 * contractions S2 (each a second product in the sweep), and may sweep the
 * scores' rows instead of their columns (the consumer sums over R: then
 * c1.m, the kernel's rows, are S's C indices, and c1.n its R). */
#ifndef KBC_ATTN_IMPL_H
#define KBC_ATTN_IMPL_H

#include "cg_impl.h"

enum { ATTN_MAX_STMTS = 16, ATTN_MAX_FACTORS = 16, ATTN_MAX_S2 = 2, ATTN_MAX_PART = 2, ATTN_MAX_GROUPS = 128 };

/* S2: a further scores-shaped contraction of the chain, sum(D2: a2(B, R,
 * D2) * b2(B, C, D2)) reading nothing of it (the backward's dp = go .
 * v^T), only in a recomputing chain (ATTN_FIND_RECOMPUTE); its indices are
 * mapped onto S's by the chain statement that first reads it. */
/* PART: a sum of a pointwise tile over some of C, free over B, R and the
 * rest of C (G groups, known when compiling: at most ATTN_MAX_GROUPS), only
 * in a recomputing chain (SAM-HQ's grh = sum(kx: ds), grw = sum(ky: ds)):
 * written out, each block owning its rows' sums (attn_pipe.c). */
typedef enum { ATTN_S, ATTN_ROW, ATTN_WIDE, ATTN_OUT, ATTN_S2, ATTN_PART } attn_role;

/* One factor of a product, written in chain statement `at`. */
typedef struct {
  const ir_expr *e;
  int at;
  int inv;       /* a divisor */
  int scaled;    /* exp(X - m) of the rescaling row m */
  int row_const; /* constant along C (reads no s or w, mentions no column index) */
} attn_factor;

typedef struct {
  attn_role role;
  const ir_stmt *s;
  int *map;       /* by the statement's index id: the S index id it stands for, or -1 */
  int mapped;     /* S2: map set (by its first reader) */
  int s2;         /* S2: its index in cg_attention's s2[] */
  ir_red op;      /* ROW: its reduction */
  int scaled;     /* ROW: a sum holding a factor exp(X - m) */
  int n_factors;  /* ROW: its body's factors (attn_match.c's factorize) */
  int keep;       /* ROW, PART: written out (an output, or read after the chain) */
  int late;       /* WIDE: reads the rescaling row (through exp(X - m)): computed after it */
  int on_sums;    /* WIDE: reads a row other than the rescaling one: never computed (its readers
                     expand it into factors) */
  /* A free index read only as floor(index / c) into a batch index h of
   * the chain (a head-merged output: out[n, i, e] reading p[n, e / 80, i,
   * j]): it stands for c * h + a local index in [0, c).  OUT only. */
  int n_split;
  struct {
    int id, frame;
    int64_t c;
  } split[CG_MAX_OUTER];
} attn_stmt;

typedef struct cg_attention {
  int first, count;
  const ir_stmt *S, *O;
  cg_contraction c1;  /* S's contraction: c1.a carries R (c1.m), c1.b carries C (c1.n) */
  cg_contraction c2;  /* the consumer's: c2.a the probabilities, c2.b the values */
  int n_s2;           /* further scores contractions (ATTN_S2), at chain positions s2_at */
  int s2_at[ATTN_MAX_S2];
  cg_contraction s2[ATTN_MAX_S2]; /* as c1: a carries the kernel's rows (c1.m), b its columns (c1.n) */
  int recompute;      /* found with ATTN_FIND_RECOMPUTE: its row statistics read from memory */
  int n_part;         /* partial row sums (ATTN_PART) */
  struct {
    int at;           /* chain position */
    int n_g, g[CG_MAX_OUTER]; /* the S ids of C it keeps (its groups), in the order of c1.n */
    int groups;       /* G: the product of their extents */
    int stage;        /* the staging tile it reads: its own, or an earlier PART's with the same body */
  } part[ATTN_MAX_PART];
  int n_n2, n2[CG_MAX_OUTER]; /* the consumer's free indices of neither B nor R (its N2) */
  int m_row;          /* chain position of the rescaling row (a max), or -1 */
  int n_e, n_f;
  attn_factor e[ATTN_MAX_FACTORS], f[ATTN_MAX_FACTORS]; /* the consumer's E and F factors */
  attn_stmt st[ATTN_MAX_STMTS];                          /* by chain position */
} cg_attention;

/* ---- the plan (attn_plan.c) ---- */

enum { AT_THREADS = 256, AT_DK = 32, AT_VC = 32, AT_PIPE_THREADS = 128 };

/* How the block's threads hold the tiles.  FFMA: 16 x 16 threads, a
 * thread 4 rows x 4 columns of a 64 x 64 scores tile, 4 rows x npt of the
 * accumulator.  MMA: warps of 16 rows each (mma.sync m16n8k8), a thread 2
 * rows (g, g + 8) x nc columns of the scores tile (two of each n8 tile) and
 * 2 rows x nt / 4 of the accumulator: 8 warps and a 128 x 32 scores tile,
 * or, pipelined (pipe), 4 warps and a 64 x 64 scores tile.
 *
 * The pipelined kernel (attn_pipe.c) needs D and N2 known when compiling
 * (constants, or a specialized binding): the rows' operand stays in shared
 * memory for the whole sweep (all of D, padded to dp), each step's column
 * operand and values arrive by cp.async while the previous step computes,
 * and the probabilities go from the scores' registers straight into the
 * second product (no shared-memory round trip).  Shared memory is dynamic
 * (smem bytes). */
typedef struct {
  int mma;      /* 0 FFMA; 1 TF32 mma.sync; 2 3xTF32 (fp32 accuracy) */
  int pipe;     /* the pipelined kernel (mma only) */
  int threads;  /* per block */
  int br, bc;   /* the block's rows; the columns of one step of the sweep */
  int nr, nc;   /* a thread's rows and columns of the scores tile */
  int no;       /* a thread's columns of the accumulator */
  int nt;       /* the N2 tile */
  int lanes;    /* threads sharing a row: the low bits of the lane */
  int ldq, ldk, ldp, ldv; /* shared-memory row widths (padded) */
  int dp;       /* pipe: D padded to a multiple of 8, all resident */
  int kc;       /* pipe, 3xTF32: D summed in chunks of kc, each chunk's mma sums added in fp32 */
  int smem;     /* pipe: dynamic shared memory, bytes */
  int min_blocks; /* __launch_bounds__'s blocks per multiprocessor */
} attn_layout;

/* A scores tile wholly masked is skipped (attn_plan.c, plan_mask): where
 * S = where(cond, .. main sum .., K) (or the mirror), cond an affine
 * comparison a*col + b*row + c (cmp) 0 of S's one row and one column
 * index, the rows only the running max of s and sums of exp(s - max), and
 * the consumer's E only exp(s - max): on a tile where cond selects K
 * everywhere, every score is K, and once K is below every row's running
 * max by more than exp can see (128), the tile adds exactly nothing. */
typedef struct {
  int on;
  int64_t a, b, c;   /* the comparison's left side minus its right: a*col + b*row + c */
  ir_op cmp;         /* IR_OP_LT, _LE, _GT or _GE, against 0 */
  int k_when_true;   /* K is the where's first branch (selected where cond holds) */
  double k;          /* K */
} attn_mask;

struct cg_attn_plan {
  cg_attention ch;
  attn_layout lay;
  attn_mask mask;
  struct {                     /* by product (attn_product): its operand tiles */
    int q_fast, k_fast;        /* consecutive threads along D (else along R / C) */
    int q_vec, k_vec;          /* pipelined: copyable 16 bytes at a time (given an aligned tensor) */
  } opd[1 + ATTN_MAX_S2];
  int v_n_fast;                /* value tile: consecutive threads along N2 (else along C) */
  int64_t d, n2;               /* pipelined: D and N2 (known) */
  int v_vec;                   /* pipelined: the value tile copyable 16 bytes at a time */
  const char **idx[ATTN_MAX_STMTS]; /* per chain statement: the C name of each index */
  sym *tiles;                  /* batch points x row tiles x N2 tiles */
};

/* The pipelined kernel's room for its PARTs (attn_pipe.c), in floats after
 * its tiles: each staging tile [br][ldt], then per PART its sums
 * [br][ldg] and its column-to-group table (bc ints).  Odd row widths: a
 * lane a row reads and adds without bank conflicts. */
static inline int attn_part_ldt(int bc) { return bc + 1; }
static inline int attn_part_ldg(int groups) { return groups | 1; }
long long attn_part_floats(const cg_attention *ch, int br, int bc);

/* The consumer's N2 index n2[i]: its split's c and batch index (NULL: not
 * split), and its extent within a block. */
const int64_t *attn_split_c(const cg_attention *ch, int i, int *frame);
sym *attn_n2_extent(kbc_arena *a, const cg_attention *ch, int i);

/* ---- emission (attn_emit.c, attn_math.c) ---- */

typedef struct {
  cg_emit E;
  const cg_attn_plan *plan;
  const cg_attention *ch;
  const char **value; /* by tensor id: the on-chip value a load gives where it is emitted, or NULL */
} attn_emitter;

/* The layout's C expressions, for a loop variable v: a thread's row v and
 * column v in the tile, its accumulator column v, the scores element
 * (i, j) and the accumulator element (i, n) it holds; whether it is the
 * first of its row's lanes. */
const char *attn_row(attn_emitter *ae, const char *v);
const char *attn_col(attn_emitter *ae, const char *v);
const char *attn_ocol(attn_emitter *ae, const char *v);
const char *attn_s_at(attn_emitter *ae, const char *i, const char *j);
/* Element (i, j) of a scores-shaped register tile reg (as attn_s_at's _s). */
const char *attn_reg_at(attn_emitter *ae, const char *reg, const char *i, const char *j);
/* The chain's scores products, 1 + n_s2 of them: 0 is S's (c1), pi its
 * S2 number pi - 1; each one's contraction, chain position, and names:
 * what "_Q" its resident tile (_Qs, _Q2s, ..), "_K" the step's (_Ks, _K2s,
 * ..), "_s" its registers (_s, _s2, ..), "_sv" its value at an element
 * (_sv, _sv2, ..). */
const cg_contraction *attn_product(const cg_attention *ch, int pi);
int attn_product_at(const cg_attention *ch, int pi);
const char *attn_product_name(attn_emitter *ae, const char *what, int pi);
const char *attn_o_at(attn_emitter *ae, const char *i, const char *n);
const char *attn_lane0(const attn_emitter *ae);
/* The thread's ids and accumulators (declarations), the scores tile over
 * D (needs _Qs, _Ks, the tile loads done by attn_emit.c's caller), and the
 * accumulator += _Ps . _Vs over one V chunk of AT_VC columns from _v0. */
void attn_emit_thread_ids(attn_emitter *ae);
void attn_emit_scores_math(attn_emitter *ae);
void attn_emit_pv_math(attn_emitter *ae);
/* The mma helpers, once per translation unit. */
void attn_emit_helpers(attn_emitter *ae);
/* Pipelined layout (attn_pipe.c): the scores tile over all of D from the
 * resident _Qs and the step's _Ks; the accumulator += P . _Vs with P taken
 * from the scores' registers. */
void attn_emit_pipe_scores_math(attn_emitter *ae);
void attn_emit_pipe_pv_math(attn_emitter *ae);

/* attn_emit.c's pieces the pipelined kernel shares.  A tile_space is one
 * space of a tile load: the indices ids[0..n) of the statement being
 * emitted, from base, of the given extent, count elements; n2: the
 * consumer's N2 (its split indices decoded within a block). */
typedef struct {
  const int *ids;
  int n;
  const char *base, *extent;
  int count;
  int n2;
} tile_space;
cg_emit *attn_at(attn_emitter *ae, int q);
const char *attn_expr_at(attn_emitter *ae, int q, const ir_expr *e, const char *known_value);
void attn_declare_digits(cg_emit *E, const tile_space *sp);
void attn_decode_into(attn_emitter *ae, const char *q, const char *flat, const tile_space *sp);
void attn_emit_lines(attn_emitter *ae, const char *pfx, const int *ids, int n, int count, const char *base,
                     const char *pos, const char *extent);
void attn_emit_phase_a(attn_emitter *ae);
void attn_emit_rescale(attn_emitter *ae);
void attn_emit_phase_b(attn_emitter *ae);
void attn_emit_finish(attn_emitter *ae);
/* The mask's test of the column tile from col0 over the block's rows
 * (attn_mask): declares its bounds and `_far` (every row of the thread's
 * running max far above K) and returns the condition, the same in every
 * thread, under which the mask selects K on every element of the tile. */
const char *attn_emit_mask_test(attn_emitter *ae, const char *col0);
/* The kernel's extents (_ninf, _B, _R, _C, _D, _N2); at a tile's start
 * (_r0, _bb declared) the batch digits and the thread's rows; the row
 * statistics' and the accumulator's declarations. */
void attn_emit_extents(attn_emitter *ae);
void attn_emit_tile_start(attn_emitter *ae);
void attn_emit_accumulators(attn_emitter *ae);
/* The pipelined kernel's body, inside its braces (attn_pipe.c). */
void attn_emit_pipe_body(attn_emitter *ae);

/* How cg_find_attention looks.  RECOMPUTE: a chain codegen/recompute.c
 * made (copies of the statements computing what the consumer reads):
 * without row statements (its row statistics are loads of tensors
 * computed before), S2 statements allowed, the consumer summing over the
 * scores' rows or columns (the kernel's rows are then the scores'
 * columns: dk = sum(i: ds[i, j] * q[i, c])); D and N2 must be known.
 * OPEN: s and the pointwise tiles may be read after the chain (whether a
 * chain would match once its later readers recompute them). */
enum { ATTN_FIND_RECOMPUTE = 1, ATTN_FIND_OPEN = 2 };

/* The attention chain starting at statement `first` of p: its length
 * (>= 3) with *out filled (out may be NULL), or 0 where there is none,
 * where it has no row statement (two contractions back to back, an MLP,
 * stay GEMMs; unless RECOMPUTE), or where the consumer's N2 is estimated
 * above 128 (the scores would be computed again for every N2 tile).
 * Whether the chain then pays as one kernel: cg_attn_pays. */
int cg_find_attention(kbc_arena *a, const ir_program *p, const cg_options *o, int first, int how, cg_attention *out);
/* Whether one fused kernel for the chain is estimated no slower than its
 * statements as kernels of their own on target t (attn_cost.c). */
int cg_attn_pays(const cg_attention *ch, const cg_target *t);
/* Room for one chain, in the arena (cg_make_groups keeps the one it finds
 * in the group, for cg_plan_attn). */
cg_attention *cg_attention_new(kbc_arena *a);
/* Whether the chain takes the pipelined kernel on target t (D and N2
 * known, shared memory enough, mma at its precision): what a recomputing
 * chain (S2 statements, a transposed sweep) needs. */
int cg_attn_pipelined(kbc_arena *a, const cg_attention *ch, const cg_target *t);
/* The estimated extent of the consumer's N2 index n2[i] within a block:
 * its own, or for a split index its c. */
double cg_attn_n2_estimate(const cg_attention *ch, int i);

#endif
