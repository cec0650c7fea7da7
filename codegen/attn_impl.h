/* attn_impl.h — internals of the fused attention family, shared by its
 * two files in the order the data flows:
 *   attn_match.c  the chain found in the IR (cg_find_attention);
 *   attn_emit.c   its plan and kernel (cg_plan_attn, cg_emit_attn).
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
 * softmax), so that o = h(F * sum(C: E * v)). */
#ifndef KBC_ATTN_IMPL_H
#define KBC_ATTN_IMPL_H

#include "cg_impl.h"

enum { ATTN_MAX_STMTS = 16, ATTN_MAX_FACTORS = 16 };

typedef enum { ATTN_S, ATTN_ROW, ATTN_WIDE, ATTN_OUT } attn_role;

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
  ir_red op;      /* ROW: its reduction */
  int scaled;     /* ROW: a sum holding a factor exp(X - m) */
  int keep;       /* ROW: written out (an output, or read after the chain) */
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

typedef struct {
  int first, count;
  const ir_stmt *S, *O;
  cg_contraction c1;  /* S's contraction: c1.a carries R (c1.m), c1.b carries C (c1.n) */
  cg_contraction c2;  /* the consumer's: c2.a the probabilities, c2.b the values */
  int n_n2, n2[CG_MAX_OUTER]; /* the consumer's free indices of neither B nor R (its N2) */
  int m_row;          /* chain position of the rescaling row (a max), or -1 */
  int n_e, n_f;
  attn_factor e[ATTN_MAX_FACTORS], f[ATTN_MAX_FACTORS]; /* the consumer's E and F factors */
  attn_stmt st[ATTN_MAX_STMTS];                          /* by chain position */
} cg_attention;

/* The attention chain starting at statement `first` of p: its length
 * (>= 3) with *out filled (out may be NULL), or 0 where there is none,
 * where it has no row statement (two contractions back to back, an MLP,
 * stay GEMMs), or where it does not pay (the consumer's N2 estimated above
 * 128: the scores would be computed again for every N2 tile). */
int cg_find_attention(kbc_arena *a, const ir_program *p, const cg_options *o, int first, cg_attention *out);
/* The estimated extent of the consumer's N2 index n2[i] within a block:
 * its own, or for a split index its c. */
double cg_attn_n2_estimate(const cg_attention *ch, int i);

#endif
