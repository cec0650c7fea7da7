/* group.c — fusion groups, contraction analysis, and the family of each
 * group.
 *
 * Before: a verified program after the IR passes.  After cg_make_groups():
 * the statements partitioned into consecutive groups, each to become one
 * kernel, each with its schedule family decided by cg_group_family (the
 * one place a family is decided; the families: CG_FAMILIES, cg.h):
 *   - an attention chain (cg_find_attention, attn_impl.h: scores, row
 *     statistics, pointwise tiles, the consumer contraction): one ATTN
 *     group;
 *   - a `+=` statement that is still a scatter: a SCATTER group of its own;
 *   - a large contraction (cg_find_contraction, estimated work >= 2^20
 *     multiply-adds with every var axis at 256; one of few rows decided by
 *     its larger operand's size instead, small_rule): a group of its own,
 *     GEMM when it can be tiled (gemm_tile) — unless its tiles are few and
 *     its reduction longer than its output (a projection of a few rows):
 *     then ROWS, a team of threads per output element splitting the sum —
 *     and ROWS with a thread per element when it cannot be tiled; a GEMM
 *     takes the next statement in too where that one reduces its output
 *     over some of its M or N indices (cg_find_fold, gemm_fold.c), and the
 *     statements after that (or after the contraction, without a fold)
 *     finish its output a row at a time (cg_find_tail, gemm_tail.c);
 *   - otherwise ROWS groups: a run of statements sharing outer dimensions.
 *     A group starts with all free indices of its first statement as outer
 *     dimensions; a following statement joins when, for every outer
 *     dimension kept, each of its reads of a tensor written inside the group
 *     indexes that dimension with one and the same free index of its own
 *     (so one team of threads per outer point computes, then reads, only
 *     its own elements).  Dimensions that fail are dropped; a statement
 *     that would leave none starts a new group, unless it and the group's
 *     statements are all small and of constant size (one point, one team)
 *     and what they lose on that one team, against kernels of their own,
 *     stays within a launch's worth (join_pays).  A join that keeps a few
 *     outer points must pay the same way.
 *     A statement without free indices (a scalar) starts a group of no
 *     outer dimension, which takes only such small statements.  A group of
 *     one such statement whose value is a reduction, with a block-wide
 *     team, is POINT: its reduction split across the grid.
 * The team size (threads per outer point) grows with the estimated work per
 * outer point (a whole block for a single point of a size known only at run
 * time), except that a group whose loads are contiguous only along
 * its last outer dimension gets one thread per point (coalescing), when
 * it has points enough to fill the GPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_impl.h"
#include "gemm_impl.h"
#include "ir/subst.h"

sym *cg_extent_sym(kbc_arena *a, const ir_stmt *s, const int *ids, int n) {
  sym *p = sym_const(a, 1);
  for (int i = 0; i < n; i++) p = sym_mul(a, p, s->index[ids[i]].extent);
  return p;
}

int cg_offset_contiguous(kbc_arena *a, const ir_stmt *s, const sym *off, const int *ids, int n) {
  sym *rest, **coeff = KBC_NEW_ARRAY(a, sym *, s->n_index + 1);
  if (!off || !sym_split_affine(a, off, s->n_index, coeff, &rest)) return 0;
  sym *want = sym_const(a, 1);
  for (int i = n - 1; i >= 0; i--) {
    if (!coeff[ids[i]] || !sym_equal(coeff[ids[i]], want)) return 0;
    want = sym_mul(a, want, s->index[ids[i]].extent);
  }
  return 1;
}

int cg_access_by_4(kbc_arena *a, const ir_stmt *s, const ir_expr *e, const int *ids, int n, int64_t extent,
                   int64_t mult) {
  if (e->op != IR_OP_LOAD || e->u.load.padded || extent % 4 || mult % 4 || n < 1) return 0;
  sym *off = ir_flat_offset(a, e->u.load.tensor, e->u.load.idx), *rest, **coeff = KBC_NEW_ARRAY(a, sym *, s->n_index + 1);
  if (!cg_offset_contiguous(a, s, off, ids, n) || !sym_split_affine(a, off, s->n_index, coeff, &rest)) return 0;
  int64_t v;
  if (!sym_is_const(rest, &v) || v % 4) return 0;
  for (int id = 0; id < s->n_index; id++) {
    int in = 0;
    for (int i = 0; i < n; i++) in |= ids[i] == id;
    if (in || !coeff[id]) continue;
    if (!sym_is_const(coeff[id], &v) || v % 4) return 0;
  }
  return 1;
}

sym *cg_collapse(kbc_arena *a, const ir_stmt *s, const sym *off, const int *ids, int n) {
  if (!off || n <= 1) return (sym *)off;
  sym *zero = sym_const(a, 0), *c = (sym *)off, *flat = sym_index(a, ids[0], s->index[ids[0]].name);
  for (int i = 0; i < n - 1 && c; i++) c = sym_subst_index(a, c, ids[i], zero);
  for (int i = 1; i < n && flat; i++)
    flat = sym_add(a, sym_mul(a, flat, s->index[ids[i]].extent), sym_index(a, ids[i], s->index[ids[i]].name));
  sym *back = c && flat ? sym_subst_index(a, c, ids[n - 1], flat) : NULL;
  return back && sym_equal(back, off) ? c : NULL;
}

/* ---- contractions ------------------------------------------------------- */


static int factors(const ir_expr *e, const ir_expr **f, int n, int max) {
  if (e->op == IR_OP_MUL && e->type == IR_TY_FLOAT) {
    n = factors(e->arg[0], f, n, max);
    return n < 0 ? n : factors(e->arg[1], f, n, max);
  }
  if (n >= max) return -1;
  f[n] = e;
  return n + 1;
}

double cg_extent_estimate(const ir_stmt *s, const int *ids, int n) {
  double p = 1;
  for (int i = 0; i < n; i++) p *= ir_estimate(s->index[ids[i]].extent);
  return p;
}

/* Whether every plain load of e stays inside its tensor at every value of
 * the statement's indices in [lo, hi] (proven with no facts but every
 * axis >= 1), as check-bounds proves loads without regard to where(). */
static int loads_in_bounds(kbc_arena *a, const ir_stmt *s, sym *const *lo, sym *const *hi, const ir_expr *e) {
  if (e->op == IR_OP_LOAD && !e->u.load.padded)
    for (int d = 0; d < e->u.load.tensor->rank; d++) {
      sym *l, *h;
      if (ir_index_in_bounds(a, NULL, e->u.load.idx[d], s->n_index, lo, hi, e->u.load.tensor->shape[d], &l, &h) != 1)
        return 0;
    }
  for (int i = 0; i < ir_op_info[e->op].arity; i++)
    if (!loads_in_bounds(a, s, lo, hi, e->arg[i])) return 0;
  return 1;
}

/* The main sum of a value chosen by where(cond, x, y) (a causal mask, a
 * triangular product), when cond reduces nothing and the sum reads only
 * in bounds everywhere: computed for every output element, the sum is then
 * kept or dropped by the epilogue's where. */
static const ir_expr *sum_in_where(kbc_arena *a, const ir_stmt *s, const ir_expr *e) {
  if (e->op == IR_OP_WHERE) {
    if (ir_main_sum(s, e->arg[0])) return NULL;
    for (int i = 1; i <= 2; i++) {
      const ir_expr *r = ir_main_sum(s, e->arg[i]);
      if (!r) r = sum_in_where(a, s, e->arg[i]);
      if (r) {
        sym **lo, **hi;
        ir_index_ranges(a, s, &lo, &hi);
        return loads_in_bounds(a, s, lo, hi, r) ? r : NULL;
      }
    }
    return NULL;
  }
  if (e->op == IR_OP_REDUCE) return NULL;
  for (int i = 0; i < ir_op_info[e->op].arity; i++) {
    const ir_expr *r = sum_in_where(a, s, e->arg[i]);
    if (r) return r;
  }
  return NULL;
}

int cg_find_contraction(kbc_arena *arena, const ir_stmt *s, cg_contraction *c) {
  memset(c, 0, sizeof *c);
  if (s->accumulate || s->n_index > 63) return 0;
  c->reduce = ir_main_sum(s, s->rhs);
  if (!c->reduce) c->reduce = sum_in_where(arena, s, s->rhs);
  if (!c->reduce || c->reduce->u.reduce.n_vars > CG_MAX_OUTER) return 0;
  const ir_expr *f[6];
  int nf = factors(c->reduce->arg[0], f, 0, 6);
  if (nf < 2) return 0;
  unsigned long long in[6] = {0};
  for (int i = 0; i < nf; i++)
    for (int id = 0; id < s->n_index; id++)
      if (s->index[id].kind == IR_IDX_FREE && ir_expr_mentions_index(f[i], id)) in[i] |= 1ULL << id;
  /* The split of the factors into A and B with the most M x N work; A
   * holds the first factor, so each split is tried once. */
  double best = 0;
  int best_mask = 0;
  for (int mask = 1; mask < (1 << nf) - 1; mask += 2) {
    unsigned long long a = 0, b = 0;
    for (int i = 0; i < nf; i++) *(mask >> i & 1 ? &a : &b) |= in[i];
    int m[64], n[64], nm = 0, nn = 0;
    for (int id = 0; id < s->n_index; id++) {
      if ((a >> id & 1) && !(b >> id & 1)) m[nm++] = id;
      if ((b >> id & 1) && !(a >> id & 1)) n[nn++] = id;
    }
    if (!nm || !nn || nm > CG_MAX_OUTER || nn > CG_MAX_OUTER) continue;
    double w = cg_extent_estimate(s, m, nm) * cg_extent_estimate(s, n, nn);
    if (w > best) {
      best = w;
      best_mask = mask;
    }
  }
  if (!best_mask) return 0;
  ir_expr *A = NULL, *B = NULL;
  unsigned long long a = 0, b = 0;
  for (int i = 0; i < nf; i++) {
    int in_a = best_mask >> i & 1;
    ir_expr **side = in_a ? &A : &B;
    *(in_a ? &a : &b) |= in[i];
    *side = *side ? ir_binary(arena, IR_OP_MUL, *side, (ir_expr *)f[i], f[i]->loc) : (ir_expr *)f[i];
  }
  c->a = A;
  c->b = B;
  for (int id = 0; id < s->n_index; id++) {
    if (s->index[id].kind != IR_IDX_FREE) continue;
    int ia = a >> id & 1, ib = b >> id & 1;
    if (ia && !ib) c->m[c->n_m++] = id;
    else if (ib && !ia) c->n[c->n_n++] = id;
    else if (c->n_b < CG_MAX_OUTER) c->bat[c->n_b++] = id;
    else return 0;
  }
  for (int i = 0; i < c->reduce->u.reduce.n_vars; i++) c->k[c->n_k++] = c->reduce->u.reduce.vars[i];
  return 1;
}

/* The product of the extents of ids with every var axis at 256, as tile
 * shapes estimate them (gemm_tile_estimate). */
static double product_tile(const ir_stmt *s, const int *ids, int n) {
  double p = 1;
  for (int i = 0; i < n; i++) p *= gemm_tile_estimate(s->index[ids[i]].extent);
  return p;
}

/* Whether s stands alone as a tiled contraction (it then forms a group of
 * its own): M and N of at least 16 and K of at least 8 (var axes at
 * IR_EST_VAR), and 2^20 multiply-adds with var axes at 256.  A var axis is
 * a size the caller chooses; a contraction over var axes alone (a user's
 * matmul, m x k by k x n) is a GEMM, not the rows family's loop per output
 * element, which at m = k = n = 4096 is 10x slower.  None with opt.no_gemm
 * (debugging: rows schedules only); every contraction with
 * opt.gemm_always (testing). */
/* Contraction c of s wide enough for a tile: M and N of at least 16, K of
 * at least 8 (estimated). */
static int tile_sized(const ir_stmt *s, const cg_contraction *c) {
  return cg_extent_estimate(s, c->m, c->n_m) >= 16 && cg_extent_estimate(s, c->n, c->n_n) >= 16 &&
         cg_extent_estimate(s, c->k, c->n_k) >= 8;
}

/* Under opt.gemm_small, the family of a contraction with few rows (or
 * columns: `lo` of M and N) by the size of its larger operand: the rows
 * family where lo < 32 and that operand is under GEMM_SMALL_CACHED floats
 * (a GEMM tile of 32 rows is mostly empty, runs a handful of blocks, and
 * the rows family's re-reads of the operand hit the caches: CViT b10's
 * 20-row linears, 8-16 GEMM blocks); the GEMM family where 4 <= lo < 16
 * and it is GEMM_SMALL_STREAM floats or more, the few rows leading the
 * output (split-K streams it once where the rows family reads it lo times:
 * the MLP at batch 8, 4096 x 1024 weights); else (or batched) -1, the work
 * rule decides. */
enum { GEMM_SMALL_CACHED = 1 << 18, GEMM_SMALL_STREAM = 1 << 20 };

/* The first place of s's output whose index mentions one of ids (its
 * rank when none does). */
static int first_place(const ir_stmt *s, const int *ids, int n) {
  for (int d = 0; d < s->out->rank; d++)
    for (int i = 0; i < n; i++)
      if (sym_mentions_index(s->lhs[d], ids[i])) return d;
  return s->out->rank;
}

static int small_rule(const ir_stmt *s, const cg_contraction *c, int from) {
  if (c->n_b) return -1; /* batched (attention's per-head products): the operands are per batch point */
  double m = cg_extent_estimate(s, c->m, c->n_m), n = cg_extent_estimate(s, c->n, c->n_n);
  double k = cg_extent_estimate(s, c->k, c->n_k);
  double lo = m < n ? m : n, big = (m < n ? n : m) * k;
  /* The GEMM side only where the few rows lead the output (out[b, o] of
   * a batch of 8): the rows family's neighbouring points then walk the
   * large side, and each re-read of the large operand comes from another
   * block; where they trail (out[i, c] of 8 classes) a block's points
   * share their row of it.  Nor for a sum of 4096 terms or more, longer
   * than the output: a team per output element splits it
   * (cg_group_family's matrix-vector case). */
  int lo_leads = m < n ? first_place(s, c->m, c->n_m) < first_place(s, c->n, c->n_n)
                       : first_place(s, c->n, c->n_n) < first_place(s, c->m, c->n_m);
  if (k >= 8 && lo >= from && lo < 16 && lo_leads && big >= GEMM_SMALL_STREAM && !(k >= 4096 && k > m * n))
    return 1;
  if (lo < 32 && big < GEMM_SMALL_CACHED) return 0;
  return -1;
}

static int tiled_candidate(kbc_arena *a, const ir_stmt *s, const cg_options *o) {
  if (o->no_gemm) return 0;
  cg_contraction c;
  if (!cg_find_contraction(a, s, &c)) return 0;
  if (o->gemm_always) return 1;
  int small = o->gemm_small ? small_rule(s, &c, o->gemm_small == 2 ? 2 : 4) : -1;
  if (small >= 0) return small;
  double macs = product_tile(s, c.m, c.n_m) * product_tile(s, c.n, c.n_n) * product_tile(s, c.bat, c.n_b) *
                product_tile(s, c.k, c.n_k);
  return tile_sized(s, &c) && macs >= (double)(1 << 20);
}

/* Under opt.gemm_tail 2, the tail that makes statement i, a contraction
 * below tiled_candidate's work but tile_sized, a GEMM after all: the statements after it that finish its rows (a
 * linear layer's layer norm over 128 features at 20 rows, CViT's x1),
 * one launch with it instead of a rows kernel and theirs; else NULL. */
static const cg_tail *small_with_tail(kbc_arena *a, const ir_program *p, const cg_target *t, int i,
                                      const unsigned char *heads) {
  const ir_stmt *s = IR_STMT(p, i);
  cg_contraction c;
  if (t->opt.gemm_tail < 2 || t->opt.no_gemm || s->accumulate || !cg_find_contraction(a, s, &c) ||
      !tile_sized(s, &c))
    return NULL;
  return cg_find_tail(a, p, t, i, heads, NULL);
}

/* Under opt.gemm_tail 1, whether tail, behind statement i, a plain
 * contraction, joins its GEMM: where the GEMM keeps its K loop (planned
 * without the tail it is not on wgmma, which a tail's staged epilogue
 * leaves for mma.sync) and its tiles with the tail fill a wave (a tail
 * that holds a whole row in each tile leaves few tiles at few rows).  On
 * the H100 (2026-12-05, KBC_GEMM_TAIL=2 against 1) such tails took a
 * convolution's channel softmax (L2/6) 0.80x and a 40-class softmax at
 * 16,390 rows 0.91x; at 20 rows (1 tile) 1.46x, CViT's norms (2 tiles)
 * 1.07x. */
static int tail_pays(kbc_arena *a, const ir_program *p, const cg_target *t, int i, const cg_tail *tail) {
  cg_ctx C = {.a = a, .p = p, .t = t};
  cg_kernel k = {0}, kt = {0};
  cg_group plain = {.family = CG_FAMILY_GEMM, .first = i, .count = 1};
  const cg_gemm_plan *pl = cg_plan_gemm(&C, &plain, &k);
  if (!pl || pl->wgmma) return 0;
  cg_group with = {.family = CG_FAMILY_GEMM, .first = i, .count = 1 + tail->n, .tail = tail};
  pl = cg_plan_gemm(&C, &with, &kt); /* (its output tiles: split-K's slices are a cap where K is unknown) */
  return pl && pl->tiling.tiles && ir_estimate(pl->tiling.tiles) >= t->sm_count;
}

/* ---- rows groups -------------------------------------------------------- */

typedef struct {
  const ir_program *p;
  const cg_options *opt;
  int first;          /* group's first statement */
  int count;
  int n_outer;
  int outer_ok[CG_MAX_OUTER];
  int *phi;           /* [k * CG_MAX_OUTER + j] */
  double initial_points; /* estimated outer points of the first statement */
  double capacity;    /* threads the GPU holds at once (2,048 per multiprocessor) */
  double l2_bytes;    /* the target's L2 cache */
} builder;

/* The group statement (latest first) that writes tensor t, or -1. */
static int writer(const builder *b, const ir_tensor *t) {
  for (int k = b->count - 1; k >= 0; k--)
    if (IR_STMT(b->p, b->first + k)->out == t) return k;
  return -1;
}

/* For statement s as member k: find, for each outer dimension j, the free
 * index every read of a group tensor uses there; -2 = no read constrains
 * it yet, -1 = inconsistent. */
static void constrain(const builder *b, const ir_stmt *s, const ir_expr *e, int *cand) {
  if (e->op == IR_OP_LOAD) {
    int w = writer(b, e->u.load.tensor);
    if (w >= 0) {
      const ir_stmt *ws = IR_STMT(b->p, b->first + w);
      for (int j = 0; j < b->n_outer; j++) {
        if (!b->outer_ok[j] || cand[j] == -1) continue;
        int wid = b->phi[w * CG_MAX_OUTER + j];
        for (int d = 0; d < ws->out->rank; d++) {
          int lid;
          if (!sym_is_index(ws->lhs[d], &lid) || lid != wid) continue;
          int id;
          if (!sym_is_index(e->u.load.idx[d], &id) || s->index[id].kind != IR_IDX_FREE ||
              (cand[j] >= 0 && cand[j] != id))
            cand[j] = -1;
          else
            cand[j] = id;
        }
      }
    }
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++) constrain(b, s, e->arg[i], cand);
}

static double outer_points(const builder *b, const int *keep) {
  const ir_stmt *s0 = IR_STMT(b->p, b->first);
  double n = 1;
  for (int j = 0; j < b->n_outer; j++)
    if (keep[j]) n *= ir_estimate(s0->index[b->phi[j]].extent);
  return n;
}

/* Whether s is small and of constant size: every extent a constant, its
 * points times (1 + its reduction terms) at most CG_POINT_WORK. */
static int small_const(const ir_stmt *s) {
  double points = 1, terms = 1;
  int64_t c;
  for (int i = 0; i < s->n_index; i++) {
    if (!sym_is_const(s->index[i].extent, &c)) return 0;
    *(s->index[i].kind == IR_IDX_REDUCE ? &terms : &points) *= (double)c;
  }
  return points * (1 + terms) <= CG_POINT_WORK;
}

static double free_points(const ir_stmt *s) {
  double n = 1;
  for (int i = 0; i < s->n_index; i++)
    if (s->index[i].kind == IR_IDX_FREE) n *= ir_estimate(s->index[i].extent);
  return n;
}

static double red_size(const ir_stmt *s);

/* Threads per point for `work` estimated terms a point: a power of 2 with
 * about 16 terms a thread, at most max_team (and CG_BLOCK). */
static int team_for(double work, int max_team) {
  int team = 1;
  while (team < CG_BLOCK && team * 2 <= max_team && team * 16 < work) team *= 2;
  return team;
}

/* s's reduction terms per element (0 without a reduction). */
static double terms_of(const ir_stmt *s) {
  for (int i = 0; i < s->n_index; i++)
    if (s->index[i].kind == IR_IDX_REDUCE) return red_size(s);
  return 0;
}

/* Member k of the group with s joined (k == b->count: s). */
static const ir_stmt *member(const builder *b, const ir_stmt *s, int k) {
  return k < b->count ? IR_STMT(b->p, b->first + k) : s;
}

/* The estimated terms of the group with s joined: each statement's
 * elements times (1 + its reduction terms). */
static double group_work(const builder *b, const ir_stmt *s) {
  double work = 0;
  for (int k = 0; k <= b->count; k++) work += free_points(member(b, s, k)) * (1 + terms_of(member(b, s, k)));
  return work;
}

/* What joining s costs the group's statements (s among them) when the
 * join leaves `after` outer points, against each a kernel of its own, in
 * serial steps of a thread (a step: one term or element, about a load's
 * latency on a GPU that is nearly idle), summed.  In the group, `after`
 * teams (team_for the work a point) cover a statement's elements, w lanes
 * an element (up to a warp for a reduction, one thread without); alone,
 * each element is a point with a team of its own (team_for its terms);
 * either way at most the GPU's capacity at once.  A softmax's pointwise
 * pass over a few hundred elements loses a step or two; the score matrix
 * of 1,152 elements of 24 terms in one block of 256 threads, a warp an
 * element, some 200 (fuzz seed 28, tests/codegen/specs/one_point_starve.kb:
 * 116 us on the H200 against 17 us as nine kernels); a transformer layer
 * of CViT at batch 10 folded into 10 blocks, some 500 (280.7 us for the
 * model against 156.6 us with the layers in 8 kernels each). */
static double join_loss(const builder *b, const ir_stmt *s, double after) {
  double loss = 0;
  int team = team_for(group_work(b, s) / after, CG_BLOCK);
  for (int k = 0; k <= b->count; k++) {
    const ir_stmt *m = member(b, s, k);
    double points = free_points(m), terms = terms_of(m), w = terms > 0 ? fmin(32, terms) : 1;
    double steps = points * (1 + terms);
    double in_group = after * fmin(team, points / after * w);
    double alone = points * fmin(team_for(1 + terms, CG_BLOCK), fmax(1, terms));
    loss += fmax(0, steps / fmin(in_group, b->capacity) - steps / fmin(alone, b->capacity));
  }
  return loss;
}

/* Whether the group pays for joining s with `after` outer points left:
 * the steps lost (join_loss) within CG_JOIN_LOSS_STEPS per launch the
 * group saves. */
static int join_pays(const builder *b, const ir_stmt *s, double after) {
  return join_loss(b, s, after) <= b->opt->join_loss * b->count;
}

/* A join that keeps no outer dimension leaves one point, computed by one
 * team: only for statements that are all small_const (a softmax over a
 * few hundred elements: one launch of one block instead of several), and
 * only while the group pays for it (join_pays with one point). */
static int join_one_point(const builder *b, const ir_stmt *s) {
  if (!small_const(s)) return 0;
  for (int k = 0; k < b->count; k++)
    if (!small_const(IR_STMT(b->p, b->first + k))) return 0;
  return join_pays(b, s, 1);
}

static double red_size(const ir_stmt *s) {
  double r = 1;
  for (int i = 0; i < s->n_index; i++)
    if (s->index[i].kind == IR_IDX_REDUCE) r *= ir_estimate(s->index[i].extent);
  return r;
}

static int count_loads(const ir_expr *e) {
  int n = e->op == IR_OP_LOAD;
  for (int i = 0; i < ir_op_info[e->op].arity; i++) n += count_loads(e->arg[i]);
  return n;
}

/* Whether s, a pointwise pass joining the group with every outer dimension
 * kept (`after` points) after a statement that reduces over the same rows,
 * streams its rows through L2 anyway: the bytes it moves per point (its
 * loads and its store, 4 bytes each, over the point's elements) times the
 * points resident at once (the capacity over the team) exceed the L2
 * cache, so the join saves no traffic — and as a kernel of its own the
 * pass gets the pointwise grid (float4, block after block).  Measured
 * (H200, 2026-12-03): softmax over rows of 393,216 as one kernel of three
 * passes 6,381 us, as three kernels 5,932.  Only under KBC_STREAM_SPLIT=1
 * until the suite is timed both ways. */
static int streams_past_l2(const builder *b, const ir_stmt *s, const int *keep, double after) {
  if (terms_of(s) > 0 || after < 1) return 0;
  int reduces = 0;
  for (int k = 0; k < b->count; k++) reduces |= terms_of(IR_STMT(b->p, b->first + k)) > 0;
  for (int j = 0; j < b->n_outer; j++)
    if (b->outer_ok[j] && !keep[j]) return 0;
  if (!reduces) return 0;
  double per_point = free_points(s) / after * (count_loads(s->rhs) + 1) * 4.0;
  double resident = fmin(after, b->capacity / team_for(group_work(b, s) / after, CG_BLOCK));
  return per_point * resident > b->l2_bytes;
}

static int try_join(builder *b, const ir_stmt *s) {
  int cand[CG_MAX_OUTER];
  for (int j = 0; j < b->n_outer; j++) cand[j] = -2;
  constrain(b, s, s->rhs, cand);
  int kept = 0;
  for (int j = 0; j < b->n_outer; j++) {
    if (!b->outer_ok[j]) continue;
    int ok = cand[j] >= 0;
    const ir_stmt *s0 = IR_STMT(b->p, b->first);
    if (ok && !sym_equal(s->index[cand[j]].extent, s0->index[b->phi[j]].extent)) ok = 0;
    for (int j2 = 0; j2 < j && ok; j2++)
      if (b->outer_ok[j2] && cand[j2] == cand[j]) ok = 0;
    kept += ok;
    cand[j] = ok ? cand[j] : -1;
  }
  if (!kept) {
    if (!join_one_point(b, s)) return 0;
    for (int j = 0; j < b->n_outer; j++) {
      b->outer_ok[j] = 0;
      b->phi[b->count * CG_MAX_OUTER + j] = -1;
    }
    b->count++;
    return 1;
  }
  /* Joining must not starve the group of parallelism: refuse when the
   * outer points would drop below CG_MIN_OUTER (estimated) and to less
   * than a quarter of the first statement's or of the joining statement's
   * own points — they are better off as kernels of their own — unless what
   * a team would then cover (the group's dimensions dropped, the joining
   * statement's other free indices) is constant and at most CG_JOIN_DROP
   * points each, and the work they hold (those points times the
   * statements' reduction terms) at most CG_JOIN_WORK — not a long
   * reduction split in parts (passes/hoist.c's rfactor) whose parts would
   * go back into one team each — and the group pays for it (join_pays: a
   * residual add, its layer norm and the normalization over rows of a few
   * hundred; not a transformer layer folded into ten blocks, nor a
   * reduction of 17,408 elements into 32, fuzz seed 69). */
  int keep[CG_MAX_OUTER];
  for (int j = 0; j < b->n_outer; j++) keep[j] = b->outer_ok[j] && cand[j] >= 0;
  double after = outer_points(b, keep), own = free_points(s);
  /* The points a team would cover: the group's dimensions the join drops,
   * and the joining statement's free indices outside the kept ones. */
  int64_t dropped = 1, lost = 1, c;
  int bounded = 1;
  const ir_stmt *s0 = IR_STMT(b->p, b->first);
  for (int j = 0; j < b->n_outer && bounded; j++)
    if (b->outer_ok[j] && !keep[j]) {
      bounded = sym_is_const(s0->index[b->phi[j]].extent, &c) && c <= CG_JOIN_DROP;
      dropped *= bounded ? c : 1;
    }
  for (int id = 0; id < s->n_index && bounded; id++) {
    if (s->index[id].kind != IR_IDX_FREE) continue;
    int kept_here = 0;
    for (int j = 0; j < b->n_outer; j++) kept_here |= keep[j] && cand[j] == id;
    if (kept_here) continue;
    bounded = sym_is_const(s->index[id].extent, &c) && c <= CG_JOIN_DROP;
    lost *= bounded ? c : 1;
  }
  double terms = 1;
  for (int k = 0; k < b->count; k++) terms = fmax(terms, red_size(IR_STMT(b->p, b->first + k)));
  bounded = bounded && dropped <= CG_JOIN_DROP && lost <= CG_JOIN_DROP && dropped * terms <= CG_JOIN_WORK &&
            lost * red_size(s) <= CG_JOIN_WORK;
  if (after < CG_MIN_OUTER && (after * 4 < b->initial_points || after * 4 < own) &&
      (!bounded || !join_pays(b, s, after)))
    return 0;
  if (b->opt->stream_split && streams_past_l2(b, s, keep, after)) return 0;
  /* Nor a group of points for the whole GPU, each a long reduction (a
   * column sum's parts of 128 terms or more: hoist.c's split_column),
   * folded into a sixteenth of them: each team would take the dropped
   * points' reductions, its lanes reading rows apart instead of
   * neighbouring points' elements.  (A short one stays: conv3d's min over
   * depth joins the softmax over channels.) */
  if (dropped > 1 && b->initial_points >= CG_MIN_OUTER * 16 && after * 16 < b->initial_points &&
      red_size(s0) >= CG_JOIN_LONG)
    return 0;
  for (int j = 0; j < b->n_outer; j++) {
    if (cand[j] < 0) b->outer_ok[j] = 0;
    b->phi[b->count * CG_MAX_OUTER + j] = cand[j];
  }
  b->count++;
  return 1;
}


/* Whether index id of s spans fewer elements than a warp (a pooling or
 * convolution window's column: `x[.., j + kj]` with kj < 4). */
static int short_index(const ir_stmt *s, int id) {
  int64_t c;
  return sym_is_const(s->index[id].extent, &c) && c < 32;
}

/* Loads in e that step by one element along index `along` (*with) or along
 * some index marked in `inner` (*across) that is not a short one: a team
 * splitting a window's few columns reads no longer runs than neighbouring
 * points do.  A load of no outer index (`gn_weight[c]`: the same few values
 * for every point, from cache) counts for neither. */
static void count_unit_loads(kbc_arena *a, const ir_stmt *s, const ir_expr *e, int along, const unsigned char *inner,
                             int *with, int *across) {
  int per_point = 0;
  for (int id = 0; e->op == IR_OP_LOAD && id < s->n_index && !per_point; id++)
    per_point = !inner[id] && ir_expr_mentions_index(e, id);
  if (per_point) {
    if (along >= 0 && ir_load_unit_step(a, s, e, along)) (*with)++;
    for (int id = 0; id < s->n_index; id++)
      if (inner[id] && !short_index(s, id) && ir_load_unit_step(a, s, e, id)) {
        (*across)++;
        break;
      }
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++) count_unit_loads(a, s, e->arg[i], along, inner, with, across);
}

/* Member k's indices marked 1 where they are not outer dimensions of g. */
static unsigned char *not_outer(kbc_arena *a, const cg_group *g, const ir_stmt *s, int k) {
  unsigned char *inner = KBC_NEW_ARRAY(a, unsigned char, s->n_index + 1);
  for (int i = 0; i < s->n_index; i++) inner[i] = 1;
  for (int j = 0; j < g->n_outer; j++) inner[g->phi[k * CG_MAX_OUTER + j]] = 0;
  return inner;
}

/* Whether a team per outer point would break coalescing: the group's loads
 * are contiguous along the last outer dimension (neighbouring threads with
 * one thread per point read neighbouring elements) and not along the
 * indices a team would split. */
static int coalesce_across_points(kbc_arena *a, const builder *b, const cg_group *g) {
  if (g->n_outer == 0) return 0;
  int with = 0, across = 0;
  for (int k = 0; k < b->count; k++) {
    const ir_stmt *s = IR_STMT(b->p, b->first + k);
    const unsigned char *inner = not_outer(a, g, s, k);
    count_unit_loads(a, s, s->rhs, g->phi[k * CG_MAX_OUTER + g->n_outer - 1], inner, &with, &across);
  }
  return with > 0 && across == 0;
}

/* The elements the group's stores would scatter, with a team per point
 * (*by_team) and with a thread per point (*by_thread).  Among statements
 * with inner free indices (a team strides its threads over them): a store
 * stepping by one element along the last outer dimension and along no
 * inner index that is not a short one scatters with a team, each lane
 * writing a sector of its own where a thread per point writes neighbouring
 * elements with its neighbours; one stepping along an inner index and not
 * the last outer dimension scatters with a thread per point (a short one
 * too: a thread's row of 16 floats is 16 stores, each a sector of its own
 * among the warp's).  Fuzz seed
 * 931: a [7, 67, 30] result broadcast over 67 rows into two [7, 67, 67,
 * 30] tensors joined the reduction's group of 14,070 points, a warp a
 * point striding over the 67 rows: 40.7 us on the H200, 21.3 with a thread
 * a point.  Seed 543: one store of each kind, as many elements: a thread a
 * point, 19.7 us; a team, 10.6. */
static void scattered_stores(kbc_arena *a, const builder *b, const cg_group *g, double *by_team, double *by_thread) {
  *by_team = *by_thread = 0;
  for (int k = 0; k < b->count && g->n_outer > 0; k++) {
    const ir_stmt *s = IR_STMT(b->p, b->first + k);
    unsigned char *inner = KBC_NEW_ARRAY(a, unsigned char, s->n_index + 1);
    int n_free = 0;
    for (int i = 0; i < s->n_index; i++) n_free += inner[i] = s->index[i].kind == IR_IDX_FREE;
    for (int j = 0; j < g->n_outer; j++) inner[g->phi[k * CG_MAX_OUTER + j]] = 0;
    if (n_free <= g->n_outer) continue;
    ir_expr target = cg_store_as_load(s);
    int with = ir_load_unit_step(a, s, &target, g->phi[k * CG_MAX_OUTER + g->n_outer - 1]), across = 0, along = 0;
    for (int id = 0; id < s->n_index; id++) {
      if (!inner[id] || !ir_load_unit_step(a, s, &target, id)) continue;
      across |= !short_index(s, id);
      along = 1;
    }
    if (with && !across) *by_team += free_points(s);
    if (along && !with) *by_thread += free_points(s);
  }
}

/* Whether the group reduces over windows only: every reduction index of
 * its statements short (pooling's 3x3x3, an 11x11 average, a depthwise
 * convolution's kernel), and some reduction.  A team per point would split
 * a few terms (decoding flat window coordinates, shuffling the results)
 * and read no longer runs than neighbouring points do, strided windows
 * included (a stride-2 max pooling: its loads step by 2 along the last
 * outer index, so coalesce_across_points does not see them). */
static int windows_only(const builder *b) {
  int any = 0;
  for (int k = 0; k < b->count; k++) {
    const ir_stmt *s = IR_STMT(b->p, b->first + k);
    for (int i = 0; i < s->n_index; i++) {
      if (s->index[i].kind != IR_IDX_REDUCE) continue;
      if (!short_index(s, i)) return 0;
      any = 1;
    }
  }
  return any;
}

/* Loads in e that mention some index marked in `inner` (they stream as
 * the team's threads split the point's work): those stepping by one
 * element along index `along` (*with) and those stepping by one along an
 * inner index, however short (*against). */
static void count_streams(kbc_arena *a, const ir_stmt *s, const ir_expr *e, int along, const unsigned char *inner,
                          int *with, int *against) {
  int streams = 0;
  for (int id = 0; e->op == IR_OP_LOAD && id < s->n_index && !streams; id++)
    streams = inner[id] && ir_expr_mentions_index(e, id);
  if (streams) {
    *with += ir_load_unit_step(a, s, e, along);
    for (int id = 0; id < s->n_index; id++)
      if (inner[id] && ir_load_unit_step(a, s, e, id)) {
        (*against)++;
        break;
      }
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++) count_streams(a, s, e->arg[i], along, inner, with, against);
}

/* The points a block takes with its team's threads that far apart (the
 * group's g->across; *team, its threads a point; `points`, the group's
 * outer points), or 0 for a team of
 * consecutive lanes.  Where every load the team's threads split (one
 * mentioning an index that is not an outer dimension) runs along the last
 * outer dimension and along none of those indices, a team of consecutive
 * lanes reads a sector a lane: a column sum's parts, out.part[p, j] =
 * sum(i: x[128 p + i, j]), or a batch norm's column statistics, 256 lanes
 * a column.  With the team's threads apart, a warp's lanes take 32
 * neighbouring points and read 128 bytes a row together (PyTorch's shape
 * for a reduction over a dimension that is not the innermost: a block of
 * 32 columns by 8 row groups).  The team keeps its size up to 32 (the
 * block 32 points by the team where it is wider than 8, else 256 threads);
 * a team cut to 32 (from a block's) must still leave a block for every
 * other multiprocessor: the sum of 64 columns' 4,096 parts stays 64
 * blocks of 256 threads, not two.  Measured on the H100 (2026-12-06, fp32,
 * against consecutive lanes, a team of 8 at most): a batch norm's
 * statistics over 16,384 rows of 4,096 columns (L2/41) 0.66x, over 1,024
 * rows of 8,192 (L2/33, L2/84) 0.87x; the sum of 16,384 columns of 4,096
 * rows 0.15x.  Never in a group with a `+=` (the last block's spare
 * threads repeat its last point, and a repeated store must store the same
 * value).  Where a thread a point was chosen and a point's longest
 * reduction is long (`longest`, ACROSS_LONG terms or more, not the group's
 * work a point, which counts a reduction once per inner element: a min
 * over 22 depths for each of 24 channels stays a thread a point; a sum
 * over the middle dimension, KernelBench L1/47's 4,096 rows of 4,095
 * columns, does not), 8 threads a point (*pairs): two partial sums a
 * thread in a loop not unrolled (emit.c, pair_loop: two loads in flight,
 * where eight ran slower) and the grid up to 64 blocks a multiprocessor
 * (sched_rows.c).  Measured on the H100 (2026-12-06, bench/micro/
 * colsum.cu, 128 x 4096 x 4095): a thread a column 2.45 TB/s; 8 apart
 * with one sum 2.43 (16 blocks a multiprocessor) and 2.45 (64); with two,
 * 2.67 and 2.83; torch.sum 2.96.  In kbc on the H200 (unrolled 4 then):
 * L1/47-L1/53 0.85-0.87x, but 1.07x slower over 256 rows (16 x 256 x
 * 8191), hence 1,024 terms at least; teams chosen wider than a thread keep
 * one sum and 16 blocks (pairs there: a column sum's 65,536 rows of 1,024
 * 1.03x, L2/14 1.05x slower).  Mode 2 (testing): also
 * where a thread a point was chosen, however short its reductions, 8
 * threads a point in pairs. */
enum { ACROSS_WIDE = 32, ACROSS_LONG = 1024 };

static int across_points(kbc_arena *a, const builder *b, const cg_group *g, double points, double longest,
                         int *team, int *pairs) {
  int mode = b->opt->rows_across;
  *pairs = 0;
  if (!mode || g->n_outer == 0 || (g->team == 1 && mode < 2 && longest < ACROSS_LONG)) return 0;
  int with = 0, against = 0;
  for (int k = 0; k < b->count; k++) {
    const ir_stmt *s = IR_STMT(b->p, b->first + k);
    if (s->accumulate) return 0;
    count_streams(a, s, s->rhs, g->phi[k * CG_MAX_OUTER + g->n_outer - 1], not_outer(a, g, s, k), &with, &against);
  }
  if (with == 0 || against > 0) return 0;
  int t = g->team == 1 ? 8 : g->team > ACROSS_WIDE ? ACROSS_WIDE : g->team;
  int W = t > 8 ? 32 : CG_BLOCK / t;
  if (mode < 2 && t < g->team && 2 * points / W < b->capacity / 2048.0) return 0;
  *pairs = g->team == 1; /* (team may be &g->team) */
  *team = t;
  return W;
}

static void finish_rows(kbc_arena *a, const builder *b, cg_group *g) {
  const ir_stmt *s0 = IR_STMT(b->p, b->first);
  g->first = b->first;
  g->count = b->count;
  g->phi = KBC_NEW_ARRAY(a, int, b->count * CG_MAX_OUTER);
  g->n_outer = 0;
  for (int j = 0; j < b->n_outer; j++) {
    if (!b->outer_ok[j]) continue;
    g->outer_extent[g->n_outer] = s0->index[b->phi[j]].extent;
    for (int k = 0; k < b->count; k++) g->phi[k * CG_MAX_OUTER + g->n_outer] = b->phi[k * CG_MAX_OUTER + j];
    g->n_outer++;
  }
  /* Work per outer point -> threads per outer point. */
  double work = 0, outer = 1;
  for (int j = 0; j < g->n_outer; j++) outer *= ir_estimate(g->outer_extent[j]);
  for (int k = 0; k < b->count; k++) {
    const ir_stmt *s = IR_STMT(b->p, b->first + k);
    work += free_points(s) / (outer > 0 ? outer : 1) * (1 + red_size(s));
  }
  int max_team = CG_BLOCK;
  if (b->opt->max_team >= 1) max_team = b->opt->max_team; /* debugging: cap the team size */
  /* With enough outer points for the whole GPU, one thread per point when
   * that is what keeps the loads coalesced, or when each point reduces
   * over windows only. */
  int one = outer >= CG_MIN_OUTER * 16 && (coalesce_across_points(a, b, g) || windows_only(b));
  double by_team, by_thread;
  scattered_stores(a, b, g, &by_team, &by_thread);
  if (b->opt->rows_cost) {
    /* Not when that scatters many stores, more than twice as many as a
     * team would (scattered_stores): fuzz seed 260's layer norm over rows
     * of 16, a thread a row, 25.8 us on the H200 against 15.6 as four
     * kernels. */
    if (one && by_thread >= CG_MIN_OUTER * 16 && by_thread > 2 * by_team) one = 0;
    /* With points for a few blocks a multiprocessor, one thread per point
     * when a team would scatter many stores, more than twice as many as a
     * thread per point would, and a thread's work stays short (at most
     * CG_JOIN_WORK / 64 steps: not a batch norm's column of 1,024 rows read
     * three times over 8,192 columns, L2/33, whose threads would each take
     * 3,000 serial steps). */
    if (!one && outer >= CG_MIN_OUTER && work <= CG_JOIN_WORK / 64 && by_team >= CG_MIN_OUTER * 16 &&
        by_team > 2 * by_thread)
      one = 1;
  }
  if (one) max_team = 1;
  /* One point of a size known only at run time (a loss over a batch):
   * the whole block, whatever the estimate. */
  for (int k = 0; k < b->count && g->n_outer == 0; k++)
    if (!small_const(IR_STMT(b->p, b->first + k))) work = 1e30;
  g->team = team_for(work, max_team);
  double longest = 0; /* the longest reduction a point: what a team of 8 would split */
  for (int k = 0; k < b->count; k++) longest = fmax(longest, red_size(IR_STMT(b->p, b->first + k)));
  g->across = across_points(a, b, g, outer, longest, &g->team, &g->pairs);
}

int cg_make_groups(kbc_arena *a, const ir_program *p, const cg_target *t, const unsigned char *heads, cg_group **out) {
  const cg_options *o = &t->opt;
  int n = p->stmts.len, ng = 0;
  cg_group *g = KBC_NEW_ARRAY(a, cg_group, n + 1);
  struct cg_attention *ch = NULL; /* the next chain's room, kept by the group that finds one */
  for (int i = 0; i < n;) {
    const ir_stmt *s = IR_STMT(p, i);
    if (!ch) ch = cg_attention_new(a);
    int chain = cg_find_attention(a, p, o, i, heads && heads[i] ? ATTN_FIND_RECOMPUTE : 0, ch);
    if (chain && !o->attn_always && !cg_attn_pays(ch, t)) chain = 0; /* the statements as any others */
    if (chain) { /* the chain of attn_impl.h in one sweep */
      g[ng++] = (cg_group){.family = CG_FAMILY_ATTN, .first = i, .count = chain, .attn = ch};
      ch = NULL;
      i += chain;
      continue;
    }
    int tiled = tiled_candidate(a, s, o);
    const cg_tail *pre = tiled ? NULL : small_with_tail(a, p, t, i, heads);
    if (s->accumulate || pre || tiled) {
      g[ng] = (cg_group){.first = i, .count = 1, .tail = pre};
      cg_group_family(a, p, t, &g[ng]);
      cg_fold *f = KBC_NEW(a, cg_fold);
      if (g[ng].family != CG_FAMILY_GEMM) {
        g[ng].tail = NULL;
      } else if (i + 1 < n && !(heads && heads[i + 1]) && cg_find_fold(a, p, t, i, f)) {
        g[ng].count = 2; /* the next statement's reduction folded into the tiles */
        g[ng].fold = f;
        g[ng].tail = cg_find_tail(a, p, t, i, heads, f); /* the rows after it, per row of the tile */
      } else if (!pre) {
        g[ng].tail = cg_find_tail(a, p, t, i, heads, NULL); /* the rows after the contraction */
        if (g[ng].tail && o->gemm_tail < 2 && !tail_pays(a, p, t, i, g[ng].tail)) g[ng].tail = NULL;
      }
      if (g[ng].tail) g[ng].count += g[ng].tail->n;
      i += g[ng++].count;
      continue;
    }
    builder b = {.p = p, .opt = o, .first = i, .count = 1, .capacity = 2048.0 * (t->sm_count > 0 ? t->sm_count : 1),
                 .l2_bytes = t->l2_bytes};
    b.phi = KBC_NEW_ARRAY(a, int, (n - i) * CG_MAX_OUTER);
    for (int id = 0; id < s->n_index && b.n_outer < CG_MAX_OUTER; id++)
      if (s->index[id].kind == IR_IDX_FREE) {
        b.outer_ok[b.n_outer] = 1;
        b.phi[b.n_outer++] = id;
      }
    b.initial_points = outer_points(&b, b.outer_ok);
    int j = i + 1;
    while (j < n && !o->no_fuse) { /* debugging: one statement per kernel */
      const ir_stmt *next = IR_STMT(p, j);
      if ((heads && heads[j]) || next->accumulate || tiled_candidate(a, next, o) || !try_join(&b, next)) break;
      j++;
    }
    finish_rows(a, &b, &g[ng]);
    cg_group_family(a, p, t, &g[ng++]);
    i = j;
  }
  *out = g;
  return ng;
}

/* ---- the family of a group --------------------------------------------- */

/* g as a rows group of its one statement over all its free indices, with
 * `team` threads per outer point. */
static void rows_of_one(kbc_arena *a, const ir_stmt *s, int team, cg_group *g) {
  g->family = CG_FAMILY_ROWS;
  g->n_outer = 0;
  g->phi = KBC_NEW_ARRAY(a, int, CG_MAX_OUTER);
  for (int id = 0; id < s->n_index && g->n_outer < CG_MAX_OUTER; id++)
    if (s->index[id].kind == IR_IDX_FREE) {
      g->outer_extent[g->n_outer] = s->index[id].extent;
      g->phi[g->n_outer++] = id;
    }
  g->team = team;
  g->across = 0;
  g->pairs = 0;
}

/* Whether a rows group is a single point whose reduction is split across
 * the grid: one statement without free indices, its value built on a
 * reduction, a block-wide team. */
static int is_point(kbc_arena *a, const ir_program *p, const cg_group *g) {
  if (g->n_outer != 0 || g->count != 1 || g->team <= 32) return 0;
  const ir_stmt *s = IR_STMT(p, g->first);
  for (int i = 0; i < s->n_index; i++)
    if (s->index[i].kind == IR_IDX_FREE) return 0;
  return cg_top_reduce(s->rhs) && !s->accumulate && cg_point_blocks(a, s);
}

void cg_group_family(kbc_arena *a, const ir_program *p, const cg_target *t, cg_group *g) {
  const ir_stmt *s = IR_STMT(p, g->first);
  if (s->accumulate) {
    g->family = CG_FAMILY_SCATTER;
    return;
  }
  gemm_tiling tl;
  if (g->count == 1 && (g->tail || tiled_candidate(a, s, &t->opt))) { /* (a tail: small_with_tail) */
    if (!gemm_tile(a, t, s, &tl)) {
      rows_of_one(a, s, 1, g); /* cannot be tiled: a thread per output element */
      return;
    }
    /* Few tiles at the estimated extents, a side of at most 64 (a var
     * batch counts as 64) and a reduction longer than the output (a
     * matrix-vector like projection of a few rows): rows, a team of threads
     * per output element splitting the sum.  A square output of a long
     * reduction (256 x 256 of K = 2^19) stays a GEMM: split-K fills the
     * GPU, and a team per element would read the other operand once per
     * row.  So does one whose team would read no operand contiguously (no
     * load steps by one along the last K index, the team's fastest) unless
     * its outputs are fewer than 256: each term a sector of its own.
     * SAM-HQ's relative-position gradients at 16x16 b32 (sum over b, x and
     * n of qkv[.., n, c] * grh[.., x, ky], 16 x 16 x 64 outputs of 6,144
     * terms) took 1.2 and 1.5 ms as rows kernels (H100, 2026-12-07), half
     * the program; as GEMMs at 64x64 b4, 57 us each. */
    const gemm_cfg *f = &tl.cfg;
    double me = ir_estimate(tl.M), ne = ir_estimate(tl.N), ke = ir_estimate(tl.K), be = ir_estimate(tl.B);
    const cg_contraction *c = &tl.c;
    if (ceil(me / f->bm) * ceil(ne / f->bn) * be * 4 < t->sm_count && ke >= 4096 && ke > me * ne &&
        fmin(me, ne) <= 64 && (me * ne * be < 256 || ir_reads_contiguously(a, s, c->reduce, c->k[c->n_k - 1]))) {
      rows_of_one(a, s, team_for(ke, CG_BLOCK), g);
      return;
    }
    if (!tl.tiles) {
      rows_of_one(a, s, 1, g);
      return;
    }
    g->family = CG_FAMILY_GEMM;
    return;
  }
  g->family = is_point(a, p, g) ? CG_FAMILY_POINT : CG_FAMILY_ROWS;
}
