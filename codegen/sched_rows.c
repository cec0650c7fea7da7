/* sched_rows.c — schedule family (a): pointwise and reduction groups.
 *
 * Before: a ROWS group (consecutive statements sharing outer dimensions,
 * its team size decided by group.c).  After cg_plan_rows(): the plan —
 * block, teams per block, and per statement how its team computes it
 * (below).  After cg_emit_rows(): one kernel printed from it.  The block's threads form teams of `team` threads;
 * each team takes outer points in a grid-stride loop, and for each point
 * runs the group's statements in order:
 *   - a statement whose free indices are all outer and whose value is a
 *     reduction (max/sum of a softmax or layernorm row) splits that
 *     reduction across the team (strided loop, then shuffles, or shared
 *     memory across warps), and one lane stores the result;
 *   - a statement whose inner elements are each a sum read contiguously
 *     along its last index (team a multiple of 32) gives each inner element
 *     to a warp, whose lanes split the sum;
 *   - a statement of a block-wide team whose inner elements are fewer
 *     than half its threads (estimated) and whose value is a reduction
 *     splits each element's reduction into parts, a thread per part, and
 *     combines them through shared memory (the column sums of dS), where
 *     KBC_ROWS_PARTS=1 asks for it (off by default: measured slower);
 *   - any other statement strides the team's threads over its remaining
 *     (inner) free indices, each thread computing whole elements.
 * A team is 1 to 32 threads (several teams share a block of 256) or a
 * whole block of 64 to 256 threads.  A team is consecutive lanes, or
 * (g->across, group.c) its threads are a warp or more apart, the block's
 * neighbouring threads taking neighbouring points: its reductions combine
 * through shared memory, its statements are synchronized by the block's
 * barrier, and it takes neither warps nor parts per inner element (the
 * block holds 32 points or more).  (A group of one statement without
 * free indices whose value is a reduction, with a block-wide team, is of
 * the point family instead, sched_point.c: the reduction split across the
 * grid.)  Between statements the team
 * synchronizes (nothing for one thread, __syncwarp for a team within a
 * warp, __syncthreads for a whole block),
 * so a statement reads what earlier statements wrote for the same point.
 * Under opt.rows_cache a row two or more members read along their team
 * loops is kept in registers by the first (rows_cache_begin). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cg_impl.h"
#include "ir/subst.h"

const ir_expr *cg_top_reduce(const ir_expr *e) {
  const ir_expr *r;
  return ir_top_reductions(e, &r, 0, 1, 1) ? r : NULL;
}

/* How a statement's team computes it. */
typedef enum {
  ROWS_STMT_TEAM_REDUCE, /* its free indices all outer, its value a reduction split across the team */
  ROWS_STMT_ONE,         /* no inner index: one lane computes the value */
  ROWS_STMT_WARP,        /* a warp per inner element, its lanes splitting the reduction */
  ROWS_STMT_PARTS,       /* each inner element's reduction in parts, a thread per part */
  ROWS_STMT_STRIDED,     /* the team's threads strided over the inner elements */
  ROWS_STMT_ONLINE,      /* as TEAM_REDUCE, a max, the next statement's sum of exps alongside (online_pair) */
  ROWS_STMT_WELFORD,     /* as TEAM_REDUCE, a sum, the next statement's squared deviations alongside (welford_pair) */
  ROWS_STMT_DONE,        /* computed by the statement before (ONLINE, WELFORD) */
} rows_strategy;

typedef struct {
  rows_strategy how;
  int n_inner;   /* its free indices that are not outer dimensions */
  int inner[64];
} rows_stmt;

struct cg_rows_plan {
  const cg_group *g;
  int team;          /* threads per outer point (g->team) */
  int across;        /* g->across: the points a block takes, the team's threads that far apart; 0 */
  int block;         /* threads per block: across * team; else the team when wider than a warp,
                        else CG_BLOCK */
  int per_block;     /* teams per block */
  int team_reduce;   /* some statement reduces across the team (a block-wide team needs _red) */
  int parts;         /* some statement in parts (_part) */
  int online;        /* some statement ONLINE (a block-wide team's merge needs _red2) */
  int welford;       /* some statement WELFORD (_red2 and _red3) */
  sym *work;         /* outer points */
  rows_stmt *stmt;   /* per member */
  int vec;           /* 4: a thread takes 4 outer points along the last outer dimension (vec_ok) */
  int64_t last;      /* with vec: the last outer dimension's extent, a multiple of 4 */
};

/* Whether member k splits its reduction across the team. */
static int needs_coop(const ir_program *p, const cg_group *g, int k) {
  const ir_stmt *s = IR_STMT(p, g->first + k);
  int n_free = 0;
  for (int i = 0; i < s->n_index; i++) n_free += s->index[i].kind == IR_IDX_FREE;
  return g->team > 1 && n_free == g->n_outer && cg_top_reduce(s->rhs);
}

/* A block-wide team's serial steps for E elements of R terms each (a step:
 * about a load's latency; a serial loop, unrolled by 4, overlaps four
 * terms' loads):
 *   a warp an element:   ceil(E / warps)   rounds of ceil(R / 32) + 2
 *                        (the shuffles and the store);
 *   a thread an element: ceil(E / threads) rounds of ceil(R / 4) + 1.
 * Warps lose when they take more than WARP_ROUNDS_LOSS times the steps:
 * 33 elements of 33 terms on 128 threads, 9 rounds of a warp against one
 * of a thread (fuzz seed 928: 8.6 us against 5.4 as two kernels; seed 24,
 * 33 elements of 17 terms on 64 threads, 11.1 against 8.2).  A few long
 * rows stay a warp each (64 elements of 512 terms on 256 threads: 144
 * steps against 129), their loads coalesced. */
enum { WARP_ROUNDS_LOSS = 2 };

static int warp_rounds_lose(double elems, double terms, int team) {
  double warp = ceil(elems / (team / 32)) * (ceil(terms / 32) + 2);
  double thread = ceil(elems / team) * (ceil(terms / 4) + 1);
  return warp > WARP_ROUNDS_LOSS * thread;
}

/* Whether a statement with inner free indices computes each inner element
 * with a warp: its value is a reduction (over at least a warp's worth of
 * elements, estimated) read contiguously along its last index — lanes
 * over that index read neighbouring elements, where a thread per inner
 * element would read a row of its own — unless the warps would take
 * their elements in many more serial rounds than threads would (warp_rounds).  */
static int warp_per_element(cg_ctx *C, const cg_group *g, const ir_stmt *s, const int *inner, int n_inner) {
  const ir_expr *r = cg_top_reduce(s->rhs);
  if (g->team < 32 || g->team % 32 || !r || r->u.reduce.op == IR_RED_PROD) return 0;
  double terms = ir_reduce_terms(s, r);
  if (terms < 16) return 0;
  int last = r->u.reduce.vars[r->u.reduce.n_vars - 1];
  if (!ir_reads_contiguously(C->a, s, r->arg[0], last)) return 0;
  return !C->t->opt.rows_cost || !warp_rounds_lose(cg_extent_estimate(s, inner, n_inner), terms, g->team);
}

/* Whether a statement of a block-wide team whose inner elements are fewer
 * than its threads (estimated) and whose value is a reduction splits each
 * element's reduction into parts, one thread per part (grw: 64 columns
 * summed over 64 rows by 256 threads — a thread per column leaves three
 * quarters of them idle).  Always where each element sums PARTS_LONG terms
 * or more: one thread would add them all in one serial float32 sum, slow
 * and off by more than 1e-5 past a few thousand terms (the differential
 * fuzzer on the H200: 4,805 terms, 1.5e-5; 5,780 terms).  Below that,
 * opt-in (opt.rows_parts, KBC_ROWS_PARTS=1): measured on the H200
 * (2026-11-30), SAM-HQ's dS rows kernel was 3% slower with its 64-term
 * column sums in parts at 64x64 b4 (4.26 vs 4.14 ms) and no faster at any
 * other shape — unless a thread per element would leave all but an
 * eighth of the team idle (PARTS_IDLE) over sums of PARTS_SHORT terms or
 * more: the fuzzer's spec of seed 202, 2 elements of 455 terms each on a
 * team of 64, one thread an element, 27.6 us on the H200 against 7.9 us
 * as two kernels (tests/codegen/specs/parts_idle.kb). */
enum { PARTS_LONG = 512, PARTS_IDLE = 8, PARTS_SHORT = 32 };

static int parts_per_element(const cg_ctx *C, const cg_group *g, const ir_stmt *s, const int *inner, int n_inner) {
  const ir_expr *r = cg_top_reduce(s->rhs);
  if (g->team <= 32 || !r || n_inner == 0) return 0;
  double elems = cg_extent_estimate(s, inner, n_inner), size = ir_reduce_terms(s, r);
  if (!C->t->opt.rows_parts && size < PARTS_LONG && (elems * PARTS_IDLE > g->team || size < PARTS_SHORT)) return 0;
  return 2 * elems <= g->team && size >= 8;
}

/* Member k's free indices that are not outer dimensions (at most 64),
 * into inner; their count. */
static int inner_indices(cg_ctx *C, const cg_group *g, int k, int *inner) {
  const ir_stmt *s = IR_STMT(C->p, g->first + k);
  unsigned char *is_outer = KBC_NEW_ARRAY(C->a, unsigned char, s->n_index + 1);
  for (int j = 0; j < g->n_outer; j++) is_outer[g->phi[k * CG_MAX_OUTER + j]] = 1;
  int n = 0;
  for (int i = 0; i < s->n_index && n < 64; i++)
    if (s->index[i].kind == IR_IDX_FREE && !is_outer[i]) inner[n++] = i;
  return n;
}

static void plan_stmt(cg_ctx *C, const cg_group *g, int k, rows_stmt *st) {
  const ir_stmt *s = IR_STMT(C->p, g->first + k);
  st->n_inner = inner_indices(C, g, k, st->inner);
  if (needs_coop(C->p, g, k)) st->how = ROWS_STMT_TEAM_REDUCE;
  else if (st->n_inner == 0) st->how = ROWS_STMT_ONE;
  else if (!g->across && warp_per_element(C, g, s, st->inner, st->n_inner)) st->how = ROWS_STMT_WARP;
  else if (!g->across && parts_per_element(C, g, s, st->inner, st->n_inner)) st->how = ROWS_STMT_PARTS;
  else st->how = ROWS_STMT_STRIDED;
}

/* Whether a thread can take four outer points at a time, along the last
 * outer dimension: a group of pointwise statements (one thread per point,
 * no reduction, no `+=`) whose last outer extent is a constant multiple of
 * 4 (a specialized binding) and whose every store is one float4 there
 * (cg_access_by_4).  Memory-bound elementwise kernels then load and store
 * 16 bytes at a time (KernelBench's activations: 3.6 -> ... TB/s). */
static int vec_ok(cg_ctx *C, const cg_group *g, const cg_rows_plan *plan, int64_t *last) {
  if (g->team != 1 || g->n_outer < 1 || C->t->opt.no_vec) return 0;
  if (!sym_is_const(g->outer_extent[g->n_outer - 1], last) || *last % 4 || *last < 4) return 0;
  for (int k = 0; k < g->count; k++) {
    const ir_stmt *s = IR_STMT(C->p, g->first + k);
    if (plan->stmt[k].how != ROWS_STMT_ONE || s->accumulate || ir_expr_has_reduce(s->rhs)) return 0;
    ir_expr target = cg_store_as_load(s);
    int j = g->phi[k * CG_MAX_OUTER + g->n_outer - 1];
    if (!cg_access_by_4(C->a, s, &target, &j, 1, *last, 4)) return 0;
  }
  return 1;
}

/* Whether ld, a load in member k + 1, reads member k's output at the
 * point: dimension d of each the index of the same outer dimension. */
static int reads_at_point(const cg_group *g, int k, const ir_stmt *A, const ir_expr *ld) {
  if (ld->op != IR_OP_LOAD || ld->u.load.tensor != A->out || ld->u.load.padded) return 0;
  for (int d = 0; d < A->out->rank; d++) {
    int j = 0, ia = -1, ib = -1;
    if (!sym_is_index(A->lhs[d], &ia) || !sym_is_index(ld->u.load.idx[d], &ib)) return 0;
    while (j < g->n_outer && g->phi[k * CG_MAX_OUTER + j] != ia) j++;
    if (j == g->n_outer || g->phi[(k + 1) * CG_MAX_OUTER + j] != ib) return 0;
  }
  return 1;
}

/* Whether eb, in member k + 1 under its reduction rb, is the term of
 * member k's reduction ra read at k + 1's indices (the same outer
 * dimensions, the reduction's indices in order, of equal extents). */
static int same_term(cg_ctx *C, const cg_group *g, int k, const ir_expr *ra, const ir_expr *rb, const ir_expr *eb) {
  const ir_stmt *A = IR_STMT(C->p, g->first + k), *B = IR_STMT(C->p, g->first + k + 1);
  if (ir_expr_has_reduce(ra->arg[0]) || rb->u.reduce.n_vars != ra->u.reduce.n_vars) return 0;
  sym **by = KBC_NEW_ARRAY(C->a, sym *, A->n_index + 1);
  for (int i = 0; i < A->n_index; i++) {
    int to = -1;
    for (int j = 0; j < g->n_outer; j++)
      if (g->phi[k * CG_MAX_OUTER + j] == i) to = g->phi[(k + 1) * CG_MAX_OUTER + j];
    for (int v = 0; v < ra->u.reduce.n_vars; v++)
      if (ra->u.reduce.vars[v] == i) to = rb->u.reduce.vars[v];
    if (to < 0) continue; /* an index E cannot mention (no free index but the outer ones) */
    if (!sym_equal(A->index[i].extent, B->index[to].extent)) return 0;
    by[i] = sym_index(C->a, to, B->index[to].name);
  }
  for (int i = 0; i < A->n_index; i++)
    if (!by[i] && ir_expr_mentions_index(ra->arg[0], i)) return 0;
  const ir_expr *mapped = ir_expr_subst(C->a, ra->arg[0], A->n_index, by, NULL);
  return mapped && ir_expr_same(C->a, B, mapped, eb);
}

/* Whether one pass pays: the rows the teams hold at once (points
 * resident: the GPU's threads over the team, at most the outer points),
 * at 4 bytes a term of ra, exceed the L2 cache, so that a second pass
 * would read them from DRAM again.  Where they stay in the L2 the two
 * passes are faster: the merge of (max, sum) pairs across the team costs
 * two shuffles and two exps a step, and the second pass's exps do not wait
 * on a running max.  Measured on the H200 (2026-12-03, fp32, one pass
 * against two): softmax and log-softmax over rows of 393,216, 4,924 and
 * 4,795 us against 6,400 and 6,321 (0.77x, 0.76x); cross entropy over rows
 * of 4,096, 377 us against 302 (1.24x); attention's rows of 512, 1.05x;
 * the fuzzer's 73 specs with such pairs, geomean 1.05x. */
static int online_pays(cg_ctx *C, const cg_group *g, const cg_rows_plan *plan, const ir_stmt *A,
                       const ir_expr *ra) {
  double points = 1;
  for (int j = 0; j < g->n_outer; j++) points *= ir_estimate(g->outer_extent[j]);
  double resident = fmin(points, 2048.0 * (C->t->sm_count > 0 ? C->t->sm_count : 1) / plan->team);
  return 4.0 * ir_reduce_terms(A, ra) * resident > C->t->l2_bytes;
}

/* Members k and k + 1, each a reduction split across the team (not +=). */
static int team_pair(cg_ctx *C, const cg_group *g, const cg_rows_plan *plan, int k) {
  if (k + 1 >= g->count) return 0;
  if (plan->stmt[k].how != ROWS_STMT_TEAM_REDUCE || plan->stmt[k + 1].how != ROWS_STMT_TEAM_REDUCE) return 0;
  return !IR_STMT(C->p, g->first + k)->accumulate && !IR_STMT(C->p, g->first + k + 1)->accumulate;
}

/* Whether member k, a max over a row, and member k + 1, a sum of
 * exp(term - that max) over the same row, both reductions split across
 * the team, take one pass over the row instead of two (ROWS_STMT_ONLINE):
 * k's value is the max itself, `m[o] = max(r: E)`, and k + 1's is built
 * on `sum(r': exp(E' - m[o]))`, E' being E read at k + 1's indices and m
 * read at the point's own element (same_term, reads_at_point).  Softmax,
 * log-softmax and log-sum-exp as the library writes them and as users do:
 * KernelBench's softmax over rows of 393,216 read each row three times
 * where torch.compile reads it twice. */
static int online_pair(cg_ctx *C, const cg_group *g, const cg_rows_plan *plan, int k) {
  if (!C->t->opt.rows_online || !team_pair(C, g, plan, k)) return 0;
  const ir_stmt *A = IR_STMT(C->p, g->first + k), *B = IR_STMT(C->p, g->first + k + 1);
  const ir_expr *ra = A->rhs, *rb = cg_top_reduce(B->rhs);
  if (ra->op != IR_OP_REDUCE || ra->u.reduce.op != IR_RED_MAX) return 0;
  if (!rb || rb->u.reduce.op != IR_RED_SUM) return 0;
  const ir_expr *ex = rb->arg[0];
  if (ex->op != IR_OP_EXP || ex->arg[0]->op != IR_OP_SUB) return 0;
  const ir_expr *eb = ex->arg[0]->arg[0], *ld = ex->arg[0]->arg[1];
  if (!reads_at_point(g, k, A, ld) || ir_expr_reads(eb, A->out) || !same_term(C, g, k, ra, rb, eb)) return 0;
  return C->t->opt.rows_online == 2 || online_pays(C, g, plan, A, ra);
}

/* Whether member k, built on a sum over a row (a mean, `mean[o] = sum(r:
 * E) / N`), and member k + 1, built on the sum of squared deviations from
 * k's value over the same row (`sum(r': (E' - mean[o]) * (E' - mean[o]))`,
 * a variance), take one pass (ROWS_STMT_WELFORD): each thread keeps the
 * terms' count n, mean mu and squared deviations q by Welford's update,
 * the team merges them by Chan's rule; k's sum is n mu, and the squared
 * deviations from k's value a are q + n (mu - a)^2, whatever a is.
 * Layer, instance and group norms as users write them.  KBC_ROWS_WELFORD
 * 1 (default): where the rows stream past the L2 (online_pays; measured
 * 0.94-1.00x of two passes on KernelBench's five such norms); 2: wherever
 * they pair; 0: never. */
static int welford_pair(cg_ctx *C, const cg_group *g, const cg_rows_plan *plan, int k) {
  if (!C->t->opt.rows_welford || !team_pair(C, g, plan, k)) return 0;
  const ir_stmt *A = IR_STMT(C->p, g->first + k), *B = IR_STMT(C->p, g->first + k + 1);
  const ir_expr *ra = cg_top_reduce(A->rhs), *rb = cg_top_reduce(B->rhs);
  if (!ra || ra->u.reduce.op != IR_RED_SUM || !rb || rb->u.reduce.op != IR_RED_SUM) return 0;
  const ir_expr *sq = rb->arg[0];
  if (sq->op != IR_OP_MUL || sq->arg[0]->op != IR_OP_SUB || !ir_expr_same(C->a, B, sq->arg[0], sq->arg[1])) return 0;
  const ir_expr *eb = sq->arg[0]->arg[0], *ld = sq->arg[0]->arg[1];
  if (!reads_at_point(g, k, A, ld) || ir_expr_reads(eb, A->out) || !same_term(C, g, k, ra, rb, eb)) return 0;
  return C->t->opt.rows_welford == 2 || online_pays(C, g, plan, A, ra);
}

cg_rows_plan *cg_plan_rows(cg_ctx *C, const cg_group *g, cg_kernel *k) {
  cg_rows_plan *plan = KBC_NEW(C->a, cg_rows_plan);
  plan->g = g;
  /* A team wider than a warp is the whole block (its reductions and
   * barriers span the block); narrower teams share a block of CG_BLOCK. */
  plan->team = g->team;
  plan->across = g->across;
  plan->block = g->across ? g->across * g->team : g->team > 32 ? g->team : CG_BLOCK;
  plan->per_block = plan->block / g->team;
  plan->stmt = KBC_NEW_ARRAY(C->a, rows_stmt, g->count);
  for (int i = 0; i < g->count; i++) {
    plan_stmt(C, g, i, &plan->stmt[i]);
    plan->team_reduce |= plan->stmt[i].how == ROWS_STMT_TEAM_REDUCE;
    plan->parts |= plan->stmt[i].how == ROWS_STMT_PARTS;
  }
  for (int i = 0; i + 1 < g->count; i++)
    if (online_pair(C, g, plan, i)) {
      plan->stmt[i].how = ROWS_STMT_ONLINE;
      plan->stmt[i + 1].how = ROWS_STMT_DONE;
      plan->online = 1;
    } else if (welford_pair(C, g, plan, i)) {
      plan->stmt[i].how = ROWS_STMT_WELFORD;
      plan->stmt[i + 1].how = ROWS_STMT_DONE;
      plan->welford = 1;
    }
  plan->work = sym_const(C->a, 1);
  for (int j = 0; j < g->n_outer; j++) plan->work = sym_mul(C->a, plan->work, g->outer_extent[j]);
  plan->vec = vec_ok(C, g, plan, &plan->last) ? 4 : 1;
  k->family = CG_FAMILY_ROWS;
  k->first = g->first;
  k->count = g->count;
  k->block = plan->block;
  k->smem = 0;
  /* A pointwise group of four points a thread (float4) covers its points
   * in one pass, block after block (each thread's four in one iteration
   * of the loop): the H200 streams a ReLU at 4.25 TB/s so, against 3.97
   * as a grid-stride loop of 16 blocks per SM (docs/ARCHITECTURE.md,
   * "Pointwise grids").  Other groups loop over their points in at most 16
   * blocks per SM: a block per 256 single points is too little work per
   * block (L1/79's phase select, 268 M points, took 0.5 ms longer).  A
   * thread a point made a team apart (g->pairs), in up to 64: 2.83 TB/s
   * against 2.67 in 16 on a column sum (group.c, across_points). */
  int pointwise = plan->vec > 1; /* vec_ok: a thread per point, no reduction */
  k->per_block = plan->per_block * (pointwise ? plan->vec : 1);
  k->max_blocks = pointwise ? 0 : C->t->sm_count * (g->pairs ? 64 : 16);
  k->zero_tensor = -1;
  k->n_tensors = cg_collect_tensors(C->a, C->p, g->first, g->count, &k->tensors);
  k->work = plan->work;
  return plan;
}

/* ---- emission ------------------------------------------------------------- */

static void team_sync(cg_emit *E, const cg_rows_plan *plan) {
  if (plan->team == 1) return;
  cg_line(E, plan->team <= 32 && !plan->across ? "__syncwarp(_mask);" : "__syncthreads();");
}

enum { PART_MIN_TERMS = 8 };

/* The statement with parts: threads _pe of each part take the elements in
 * turn, every thread runs the same iterations (the barriers inside), and
 * part 0 combines the parts through shared memory and stores. */
static void emit_parts(cg_emit *E, int team, const ir_stmt *s, const rows_stmt *st, const char *store) {
  const ir_expr *r = cg_top_reduce(s->rhs);
  const int *inner = st->inner;
  int n_inner = st->n_inner, T = team;
  cg_line(E, "// each inner element's reduction in parts: a thread per part, combined through shared memory");
  cg_line(E, "const long long _pE = %s; // inner elements", cg_extent_product(E, inner, n_inner));
  const char *rtotal = cg_extent_product(E, r->u.reduce.vars, r->u.reduce.n_vars);
  cg_line(E, "const int _pw = _pE < %d ? (int)_pE : %d; // threads per part (one per element)", T, T);
  cg_line(E, "// parts: as many as the team holds copies of the elements, each of at least %d terms", PART_MIN_TERMS);
  cg_line(E, "const int _pm = (int)((%s) / %d < %d ? (%s) / %d : %d); // parts the terms allow", rtotal,
          PART_MIN_TERMS, T, rtotal, PART_MIN_TERMS, T);
  cg_line(E, "const int _pn = _pm < 2 ? 1 : _pm < %d / _pw ? _pm : %d / _pw;", T, T);
  cg_line(E, "const int _pq = _lane / _pw, _pe = _lane %% _pw; // this thread's part and element");
  cg_line(E, "for (long long _pb = 0; _pb < _pE; _pb += _pw) {");
  E->indent++;
  cg_line(E, "const bool _pok = _pb + _pe < _pE && _pq < _pn;");
  /* the element's indices (element 0 for threads without one: its loads
   * stay in bounds, its values unused) */
  const char **digits = KBC_NEW_ARRAY(E->a, const char *, n_inner);
  for (int i = 0; i < n_inner; i++) {
    digits[i] = E->idx[inner[i]];
    cg_line(E, "long long %s;", digits[i]);
  }
  cg_decode(E, "_pt", "_pok ? _pb + _pe : 0", inner, n_inner, digits);
  /* threads without an element start past the end of the terms */
  cg_split split = {.reduce = r, .part_start = cg_fmt(E, "(_pok ? (long long)_pq : (%s))", rtotal), .part_step = "_pn"};
  const char *acc = cg_expr_in(E, r, &(cg_expr_ctx){.split = &split});
  cg_line(E, "if (_pn > 1) {");
  cg_line(E, "  _part[_lane] = %s;", acc);
  cg_line(E, "  __syncthreads();");
  cg_line(E, "  if (_pok && _pq == 0)");
  cg_line(E, "    for (int _k = 1; _k < _pn; ++_k) %s = %s;", acc,
          cg_combine(E, r->u.reduce.op, acc, "_part[_k * _pw + _pe]"));
  cg_line(E, "  __syncthreads();");
  cg_line(E, "}");
  cg_line(E, "if (_pok && _pq == 0) {");
  E->indent++;
  const char *v = cg_float_value(E, s->rhs, cg_expr_in(E, s->rhs, &(cg_expr_ctx){.known = r, .known_value = acc}));
  cg_line(E, "%s = %s;", store, v);
  E->indent--;
  cg_line(E, "}");
  E->indent--;
  cg_line(E, "}");
}

/* A warp per inner element: warps stride over the inner elements, the
 * lanes of each split its reduction and shuffle it together. */
static void emit_warp_per_element(cg_emit *E, int team, const ir_stmt *s, const rows_stmt *st, const char *store) {
  int hoisted = cg_hoist_invariants(E, s->rhs, st->inner, st->n_inner);
  cg_line(E, "const int _wl = threadIdx.x %% 32; // lane in the warp: warps take inner elements");
  cg_flat loop;
  cg_flat_loop(E, &loop, st->n_inner, st->inner, team > 32 ? "_lane / 32" : "0", team / 32, NULL, 0, NULL);
  cg_split split = {.reduce = cg_top_reduce(s->rhs), .team = {.size = 32, .lane = "_wl", .mask = "0xffffffffu"}};
  const char *v = cg_float_value(E, s->rhs, cg_expr_in(E, s->rhs, &(cg_expr_ctx){.split = &split}));
  cg_line(E, "if (_wl == 0) %s = %s;", store, v);
  cg_flat_loop_end(E, &loop);
  E->n_hoisted = hoisted;
}

/* The team's threads strided over the inner elements, each computing
 * whole elements. */
static void emit_strided(cg_emit *E, int team, const ir_stmt *s, const rows_stmt *st) {
  int hoisted = cg_hoist_invariants(E, s->rhs, st->inner, st->n_inner);
  /* the target, as a load, so that a contiguous one goes through a pointer too */
  ir_expr target = cg_store_as_load(s);
  const ir_expr *body[2] = {s->rhs, &target};
  if (cg_vec_loop(E, st->n_inner, st->inner, team > 1 ? "_lane" : "0", team,
                  &(cg_vec_body){.value = s->rhs, .target = &target}, NULL)) {
    E->n_hoisted = hoisted;
    return;
  }
  cg_flat loop;
  cg_flat_loop(E, &loop, st->n_inner, st->inner, team > 1 ? "_lane" : "0", team, body, 2, NULL);
  const char *v = cg_float_value(E, s->rhs, cg_expr(E, s->rhs));
  cg_line(E, "%s = %s;", cg_expr(E, &target), v);
  cg_flat_loop_end(E, &loop);
  E->n_hoisted = hoisted;
}

/* Lane 0's stores of an ONLINE or WELFORD pair: member k's value `value`
 * into `store`, then member k + 1's with its reduction's value known as
 * `known` (E switched to member k + 1, its outer indices named in a scope
 * of their own). */
static void emit_pair_stores(cg_ctx *C, cg_emit *E, const cg_rows_plan *plan, int k, const char *store,
                             const char *value, const char *known) {
  const cg_group *g = plan->g;
  const ir_stmt *b = IR_STMT(C->p, g->first + k + 1);
  cg_line(E, "if (_lane == 0) {");
  E->indent++;
  cg_line(E, "%s = %s;", store, value);
  cg_line(E, "{ // %s", cg_stmt_comment(C->a, b));
  E->indent++;
  E->s = b;
  E->idx = cg_index_names(C->a, C->names, b);
  for (int j = 0; j < g->n_outer; j++)
    cg_line(E, "const long long %s = _o%d;", E->idx[g->phi[(k + 1) * CG_MAX_OUTER + j]], j);
  const ir_expr *r = cg_top_reduce(b->rhs);
  const char *v = cg_float_value(E, b->rhs, cg_expr_in(E, b->rhs, &(cg_expr_ctx){.known = r, .known_value = known}));
  cg_line(E, "%s[%s] = %s;", C->names->tensor[b->out->id], cg_offset(E, b->out, b->lhs), v);
  E->indent--;
  cg_line(E, "}");
  E->indent--;
  cg_line(E, "}");
}

/* s's index names with member k's outer ones _o0, _o1, ...: the names of
 * row keys (cg_row_cache), alike in every member reading a row. */
static const char **key_names(cg_ctx *C, const cg_rows_plan *plan, int k, const char **idx) {
  const ir_stmt *s = IR_STMT(C->p, plan->g->first + k);
  const char **n = KBC_NEW_ARRAY(C->a, const char *, s->n_index + 1);
  for (int i = 0; i < s->n_index; i++) n[i] = idx[i];
  for (int j = 0; j < plan->g->n_outer; j++)
    n[plan->g->phi[k * CG_MAX_OUTER + j]] = kbc_arena_printf(C->a, "_o%d", j);
  return n;
}

/* Member k's team loop along its row (the indices, the value), where it
 * has one cg_vec_loop may take: 0 where not. */
static int row_loop(cg_ctx *C, const cg_rows_plan *plan, int k, int *n, const int **ids, const ir_expr **value) {
  const rows_stmt *st = &plan->stmt[k];
  const ir_stmt *s = IR_STMT(C->p, plan->g->first + k);
  if (st->how == ROWS_STMT_STRIDED) {
    *n = st->n_inner, *ids = st->inner, *value = s->rhs;
    return st->n_inner > 0;
  }
  if (st->how != ROWS_STMT_TEAM_REDUCE && st->how != ROWS_STMT_ONLINE && st->how != ROWS_STMT_WELFORD) return 0;
  const ir_expr *r = st->how == ROWS_STMT_ONLINE ? s->rhs : cg_top_reduce(s->rhs);
  if (!r) return 0;
  *n = r->u.reduce.n_vars, *ids = r->u.reduce.vars, *value = r->arg[0];
  return 1;
}

/* Rows kept in registers (opt.rows_cache): before the point's statements,
 * a thread's float4s of each row that two or more members read along their
 * team loops (the same tensor, offset and length; at most
 * CG_ROW_CACHE_FLOAT4S float4s a thread), declared and registered in E for
 * cg_vec_loop.  A block-wide or in-warp team whose threads are neighbours
 * (not across points). */
static void rows_cache_begin(cg_ctx *C, cg_emit *E, const cg_rows_plan *plan) {
  E->n_cache = 0;
  E->key_idx = NULL;
  if (!E->opt->rows_cache || plan->across || plan->team < 2) return;
  enum { MAX_KEYS = 32 };
  int tensor[MAX_KEYS], first[MAX_KEYS], readers[MAX_KEYS], m = 0;
  const char *key[MAX_KEYS];
  int64_t len[MAX_KEYS];
  for (int k = 0; k < plan->g->count; k++) {
    int n;
    const int *ids;
    const ir_expr *value;
    if (!row_loop(C, plan, k, &n, &ids, &value)) continue;
    E->s = IR_STMT(C->p, plan->g->first + k);
    E->idx = cg_index_names(C->a, C->names, E->s);
    E->key_idx = key_names(C, plan, k, E->idx);
    int t[8];
    const char *kk[8];
    int64_t l[8];
    int got = cg_vec_row_keys(E, n, ids, value, t, kk, l, 8);
    for (int i = 0; i < got; i++) {
      int j = 0;
      while (j < m && !(tensor[j] == t[i] && len[j] == l[i] && !strcmp(key[j], kk[i]))) j++;
      if (j < m) {
        if (first[j] != k) readers[j]++;
      } else if (m < MAX_KEYS) {
        tensor[m] = t[i], key[m] = kk[i], len[m] = l[i], first[m] = k, readers[m++] = 1;
      }
    }
  }
  E->key_idx = NULL;
  cg_row_cache *cache = KBC_NEW_ARRAY(C->a, cg_row_cache, CG_MAX_ROW_CACHES);
  int nc = 0;
  for (int j = 0; j < m && nc < CG_MAX_ROW_CACHES; j++) {
    int64_t per = (len[j] / 4 + plan->team - 1) / plan->team;
    if (readers[j] < 2 || per > CG_ROW_CACHE_FLOAT4S) continue;
    cg_row_cache *c = &cache[nc++];
    *c = (cg_row_cache){.tensor = tensor[j], .key = key[j], .lane = "_lane", .len = len[j], .step = plan->team};
    c->name = cg_fmt(E, "_rc%d", E->tmp++);
    c->hd = cg_fmt(E, "%s_hd", c->name);
    c->nv = cg_fmt(E, "%s_nv", c->name);
    cg_line(E, "float4 %s[%lld]; // %s's row at %s: this thread's float4s, kept for %d statements", c->name,
            (long long)per, IR_TENSOR(C->p, tensor[j])->name, key[j], readers[j]);
    cg_line(E, "long long %s = 0, %s = 0; // the head and float4 count they were read with", c->hd, c->nv);
  }
  E->cache = cache;
  E->n_cache = nc;
}

static void emit_stmt(cg_ctx *C, cg_emit *E, const cg_rows_plan *plan, int k) {
  const cg_group *g = plan->g;
  const rows_stmt *st = &plan->stmt[k];
  const ir_stmt *s = IR_STMT(C->p, g->first + k);
  E->s = s;
  E->idx = cg_index_names(C->a, C->names, s);
  E->key_idx = E->n_cache ? key_names(C, plan, k, E->idx) : NULL;
  cg_line(E, "{ // %s", cg_stmt_comment(C->a, s));
  E->indent++;
  /* Outer indices of this statement. */
  for (int j = 0; j < g->n_outer; j++)
    cg_line(E, "const long long %s = _o%d;", E->idx[g->phi[k * CG_MAX_OUTER + j]], j);
  const char *store = cg_fmt(E, "%s[%s]", C->names->tensor[s->out->id], cg_offset(E, s->out, s->lhs));
  const cg_team team = {.size = plan->team, .across = plan->across, .pairs = g->pairs}; /* a split's */
  switch (st->how) {
  case ROWS_STMT_TEAM_REDUCE: {
    cg_split split = {.reduce = cg_top_reduce(s->rhs), .team = team};
    const char *v = cg_float_value(E, s->rhs, cg_expr_in(E, s->rhs, &(cg_expr_ctx){.split = &split}));
    cg_line(E, "if (_lane == 0) %s = %s;", store, v);
    break;
  }
  case ROWS_STMT_ONLINE: { /* the max and the next statement's sum in one pass */
    const ir_stmt *b = IR_STMT(C->p, g->first + k + 1);
    const char *sum = cg_fmt(E, "_osum%d", E->tmp++);
    cg_line(E, "float %s = 0.0f; // with the max, online: %s", sum, cg_stmt_comment(C->a, b));
    cg_split split = {.reduce = s->rhs, .team = team, .online = sum};
    const char *m = cg_expr_in(E, s->rhs, &(cg_expr_ctx){.split = &split});
    cg_online_finish(E, m, sum, cg_extent_product(E, s->rhs->u.reduce.vars, s->rhs->u.reduce.n_vars));
    emit_pair_stores(C, E, plan, k, store, m, sum);
    break;
  }
  case ROWS_STMT_WELFORD: { /* the sum and the next statement's squared deviations in one pass */
    const ir_stmt *b = IR_STMT(C->p, g->first + k + 1);
    const char *w = cg_fmt(E, "_w%d", E->tmp++);
    cg_line(E, "float %sn = 0.0f, %sm = 0.0f, %sq = 0.0f, %ss = 0.0f; // Welford, for %s", w, w, w, w,
            cg_stmt_comment(C->a, b));
    cg_split split = {.reduce = cg_top_reduce(s->rhs), .team = team, .welford = w};
    const char *a = cg_fmt(E, "_a%d", E->tmp++);
    cg_line(E, "const float %s = %s;", a,
            cg_float_value(E, s->rhs, cg_expr_in(E, s->rhs, &(cg_expr_ctx){.split = &split})));
    /* the squared deviations from a: q + n (mu - a)^2 */
    emit_pair_stores(C, E, plan, k, store, a, cg_fmt(E, "(%sq + %sn * (%sm - %s) * (%sm - %s))", w, w, w, a, w, a));
    break;
  }
  case ROWS_STMT_DONE: break;

  case ROWS_STMT_ONE: {
    const char *v = cg_float_value(E, s->rhs, cg_expr(E, s->rhs));
    if (plan->team > 1) cg_line(E, "if (_lane == 0) %s = %s;", store, v);
    else cg_line(E, "%s = %s;", store, v);
    break;
  }
  case ROWS_STMT_WARP: emit_warp_per_element(E, plan->team, s, st, store); break;
  case ROWS_STMT_PARTS: emit_parts(E, plan->team, s, st, store); break;
  case ROWS_STMT_STRIDED: emit_strided(E, plan->team, s, st); break;
  }
  E->indent--;
  cg_line(E, "}");
}

/* The outer coordinates _o0, _o1, ... of the flat outer point `flat`
 * (the last fastest), through the long long _p. */
static void emit_outer_coords(cg_emit *E, const cg_group *g, const char *flat) {
  cg_line(E, "long long _p = %s;", flat);
  for (int j = g->n_outer - 1; j >= 0; j--) {
    const char *ext = cg_sym(E, g->outer_extent[j]);
    if (j > 0) {
      cg_line(E, "const long long _o%d = _p %% %s;", j, ext);
      cg_line(E, "_p /= %s;", ext);
    } else {
      cg_line(E, "const long long _o0 = _p;");
    }
  }
}

/* The team's lane and warp mask, the shared arrays, the grid-stride loop
 * over outer points and their coordinates _o0, _o1, ...  A team whose
 * threads are plan->across apart combines through arrays of a float a
 * thread, a block-wide one through a float a warp; its loop over the
 * block's points is the same for all its threads (the team's barriers),
 * each thread's point clamped to the last (the last block's spare threads
 * compute it again and store the same values: group.c takes no `+=`
 * across). */
static void emit_setup(cg_emit *E, const cg_rows_plan *plan) {
  const cg_group *g = plan->g;
  int team = plan->team, W = plan->across;
  if (W) cg_line(E, "const int _lane = threadIdx.x / %d; // the team's threads %d apart", W, W);
  else if (team > 1) cg_line(E, "const int _lane = threadIdx.x %% %d;", team);
  if (!W && team > 1 && team < 32)
    cg_line(E, "const unsigned _mask = ((1u << %d) - 1u) << ((threadIdx.x & 31) & ~%du);", team, team - 1);
  else if (!W && team == 32)
    cg_line(E, "const unsigned _mask = 0xffffffffu;");
  int red = W ? plan->block : team > 32 ? 32 : 0; /* the shared arrays' floats */
  if (red && plan->team_reduce) cg_line(E, "__shared__ float _red[%d];", red);
  if (red && (plan->online || plan->welford))
    cg_line(E, "__shared__ float _red2[%d]; // the online sums beside _red's maxima, or Welford's means", red);
  if (red && plan->welford)
    cg_line(E, "__shared__ float _red3[%d], _red4[%d]; // Welford's squared deviations, sums", red, red);
  if (plan->parts) cg_line(E, "__shared__ float _part[%d]; // the parts of reductions split by element", team);
  cg_line(E, "const long long _n = %s;", cg_sym(E, plan->work));
  if (W) {
    cg_line(E, "for (long long _ob = (long long)blockIdx.x * %d; _ob < _n; _ob += (long long)gridDim.x * %d) {", W, W);
    E->indent++;
    cg_line(E, "const long long _o = _ob + threadIdx.x %% %d < _n ? _ob + threadIdx.x %% %d : _n - 1;", W, W);
  } else {
    cg_line(E, "for (long long _o = (long long)blockIdx.x * %d + threadIdx.x / %d; _o < _n; _o += (long long)gridDim.x * %d) {",
            plan->per_block, team, plan->per_block);
    E->indent++;
  }
  emit_outer_coords(E, g, "_o");
  if (g->n_outer == 0) cg_line(E, "(void)_p;");
}

/* ---- four points a thread ---- */

/* The loads of e that are one float4 along index j of E->s (not padded,
 * of a tensor this kernel does not write), at most max, into out. */
static int vec_loads(cg_ctx *C, cg_emit *E, const cg_rows_plan *plan, const ir_expr *e, int j, const ir_expr **out,
                     int n, int max) {
  if (e->op == IR_OP_LOAD) {
    const ir_tensor *t = e->u.load.tensor;
    if (n < max && !(E->written && E->written[t->id] == 1) && ir_expr_mentions_index(e, j) &&
        cg_access_by_4(C->a, E->s, e, &j, 1, plan->last, 4))
      out[n++] = e;
    return n;
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++) n = vec_loads(C, E, plan, e->arg[i], j, out, n, max);
  return n;
}

/* Every tensor a float4 touches (stores, and loads by vec_loads), 16-byte
 * aligned: the C condition, checked once per launch. */
static const char *vec_aligned(cg_ctx *C, cg_emit *E, const cg_rows_plan *plan) {
  const cg_group *g = plan->g;
  unsigned char *seen = KBC_NEW_ARRAY(C->a, unsigned char, C->p->tensors.len + 1);
  const char *ptrs = NULL;
  for (int k = 0; k < g->count; k++) {
    const ir_stmt *s = IR_STMT(C->p, g->first + k);
    E->s = s;
    const ir_expr *loads[CG_MAX_HOISTED];
    int n = vec_loads(C, E, plan, s->rhs, g->phi[k * CG_MAX_OUTER + g->n_outer - 1], loads, 0, CG_MAX_HOISTED);
    for (int i = -1; i < n; i++) {
      const ir_tensor *t = i < 0 ? s->out : loads[i]->u.load.tensor;
      if (seen[t->id]++) continue;
      const char *p = cg_fmt(E, "(unsigned long long)%s", C->names->tensor[t->id]);
      ptrs = ptrs ? cg_fmt(E, "%s | %s", ptrs, p) : p;
    }
  }
  return ptrs;
}

/* Member k's float4 loads (by vec_loads) and the names that hold them. */
typedef struct {
  const ir_expr *load[CG_MAX_HOISTED];
  const char *name[CG_MAX_HOISTED];
  int n;
} vec_stmt_loads;

/* Sets E up for member k: its statement, its index names, each bound to
 * its outer coordinate (`const long long i = _o0;` ...), inside a block
 * the caller closes. */
static void open_vec_stmt(cg_ctx *C, cg_emit *E, const cg_rows_plan *plan, int k) {
  const cg_group *g = plan->g;
  const ir_stmt *s = IR_STMT(C->p, g->first + k);
  E->s = s;
  E->idx = cg_index_names(C->a, C->names, s);
  cg_line(E, "{ // %s", cg_stmt_comment(C->a, s));
  E->indent++;
  for (int d = 0; d < g->n_outer; d++) cg_line(E, "const long long %s = _o%d;", E->idx[g->phi[k * CG_MAX_OUTER + d]], d);
}

/* A member's float4 loads (found by find_vec_loads, in E's statement) at
 * the group's first point into L's names: declared here (decl) or
 * assigned to names the caller declared. */
static void emit_vec_loads(cg_ctx *C, cg_emit *E, const vec_stmt_loads *L, int decl) {
  for (int i = 0; i < L->n; i++) {
    const ir_tensor *t = L->load[i]->u.load.tensor;
    cg_line(E, "%s%s = %s((const float4 *)&%s[%s]); // %s", decl ? "const float4 " : "", L->name[i], cg_ld4(E, t),
            C->names->tensor[t->id], cg_offset(E, t, L->load[i]->u.load.idx), t->name);
  }
}

/* Member k's value at each of the four points (the last outer index
 * stepped) from its loads L, and one float4 store. */
static void emit_vec_values(cg_ctx *C, cg_emit *E, const cg_rows_plan *plan, int k, const vec_stmt_loads *L) {
  const cg_group *g = plan->g;
  const ir_stmt *s = IR_STMT(C->p, g->first + k);
  int last = g->n_outer - 1, j = g->phi[k * CG_MAX_OUTER + last];
  cg_line(E, "float4 _r;");
  static const char comp[4] = {'x', 'y', 'z', 'w'};
  for (int q = 0; q < 4; q++) {
    int saved = E->n_hoisted;
    for (int i = 0; i < L->n; i++) cg_substitute(E, L->load[i], cg_fmt(E, "%s.%c", L->name[i], comp[q]));
    int at_j = cg_mentions_unhoisted(E, s->rhs, &j, 1);
    if (at_j) { /* the point's own last index, shadowing the first point's */
      cg_line(E, "{");
      E->indent++;
      cg_line(E, "const long long %s = _o%d + %d;", E->idx[j], last, q);
    }
    cg_line(E, "_r.%c = %s;", comp[q], cg_float_value(E, s->rhs, cg_expr(E, s->rhs)));
    E->n_hoisted = saved;
    if (at_j) cg_close_block(E);
  }
  /* __stwb: one 16-byte store (NVRTC split `*(float4 *)p = _r` into four,
   * which made a float4 ReLU slower than the one-point loop on the H200) */
  cg_line(E, "__stwb((float4 *)&%s[%s], _r);", C->names->tensor[s->out->id], cg_offset(E, s->out, s->lhs));
}

/* Member k's loads found and named (in E's statement, open_vec_stmt's). */
static void find_vec_loads(cg_ctx *C, cg_emit *E, const cg_rows_plan *plan, int k, vec_stmt_loads *L) {
  const cg_group *g = plan->g;
  int j = g->phi[k * CG_MAX_OUTER + g->n_outer - 1];
  L->n = vec_loads(C, E, plan, E->s->rhs, j, L->load, 0, CG_MAX_HOISTED - E->n_hoisted);
  for (int i = 0; i < L->n; i++) L->name[i] = cg_fmt(E, "_v%d", E->tmp++);
}

/* Group u of an unrolled round (emit_vec), under its test: its members'
 * loads into L's names (loads) or their values and stores. */
static void emit_round_group(cg_ctx *C, cg_emit *E, const cg_rows_plan *plan, int u, vec_stmt_loads *L, int loads) {
  const cg_group *g = plan->g;
  cg_line(E, "if (_q + %d * _qs < _n4) { // group %d%s", u, u, loads ? "'s loads" : "");
  E->indent++;
  emit_outer_coords(E, g, cg_fmt(E, "(_q + %d * _qs) * 4", u));
  for (int k = 0; k < g->count; k++) {
    open_vec_stmt(C, E, plan, k);
    if (loads) emit_vec_loads(C, E, &L[k], 0);
    else emit_vec_values(C, E, plan, k, &L[k]);
    cg_close_block(E);
  }
  cg_close_block(E);
}

/* The grid-stride loop over groups of four points, each decoded from its
 * first point (a multiple of 4 along the last outer dimension).
 *
 * Unrolled (opt.point_unroll, KBC_POINT_UNROLL: U > 1), a thread takes U
 * groups a stride apart per round and issues every load of all U before
 * computing any: a pointwise kernel with a long computation a point
 * (GELU's erfc, about 45 instructions) keeps too few bytes in flight a
 * multiprocessor with one group's loads at a time.  Every float4 load is
 * of a tensor the kernel does not write (vec_loads), so the loads may run
 * ahead of the stores.  Opt-in until timed. */
static void emit_vec(cg_ctx *C, cg_emit *E, const cg_rows_plan *plan) {
  const cg_group *g = plan->g;
  int U = E->opt->point_unroll > 1 ? E->opt->point_unroll : 1;
  cg_line(E, "const long long _n4 = %s / 4;", cg_sym(E, plan->work));
  if (U == 1) {
    cg_line(E, "for (long long _q = (long long)blockIdx.x * %d + threadIdx.x; _q < _n4; _q += (long long)gridDim.x * %d) {",
            plan->per_block, plan->per_block);
    E->indent++;
    emit_outer_coords(E, g, "_q * 4");
    for (int k = 0; k < g->count; k++) {
      vec_stmt_loads L;
      open_vec_stmt(C, E, plan, k);
      find_vec_loads(C, E, plan, k, &L);
      emit_vec_loads(C, E, &L, 1);
      emit_vec_values(C, E, plan, k, &L);
      cg_close_block(E);
    }
    cg_close_block(E);
    return;
  }
  vec_stmt_loads *L = KBC_NEW_ARRAY(C->a, vec_stmt_loads, U * g->count + 1);
  cg_line(E, "const long long _qs = (long long)gridDim.x * %d; // the grid's stride", plan->per_block);
  cg_line(E, "for (long long _q = (long long)blockIdx.x * %d + threadIdx.x; _q < _n4; _q += %d * _qs) { // %d groups a round",
          plan->per_block, U, U);
  E->indent++;
  /* the loads of the round's groups first, each under its test */
  for (int u = 0; u < U; u++)
    for (int k = 0; k < g->count; k++) {
      vec_stmt_loads *l = &L[u * g->count + k];
      E->s = IR_STMT(C->p, g->first + k);
      find_vec_loads(C, E, plan, k, l);
      for (int i = 0; i < l->n; i++) cg_line(E, "float4 %s = make_float4(0.0f, 0.0f, 0.0f, 0.0f);", l->name[i]);
    }
  for (int u = 0; u < U; u++) emit_round_group(C, E, plan, u, &L[u * g->count], 1); /* the loads */
  for (int u = 0; u < U; u++) emit_round_group(C, E, plan, u, &L[u * g->count], 0); /* the values, the stores */
  cg_close_block(E);
}

void cg_emit_rows(cg_ctx *C, const cg_rows_plan *plan, const cg_kernel *k) {
  const cg_group *g = plan->g;
  int team = plan->team;
  cg_emit E = {.a = C->a, .p = C->p, .opt = &C->t->opt, .names = C->names, .out = C->out, .indent = 1};
  for (int i = 0; i < g->count; i++)
    kbc_buf_printf(C->out, "// %s\n", cg_stmt_comment(C->a, IR_STMT(C->p, g->first + i)));
  kbc_buf_printf(C->out, "// schedule: rows, %d outer dimension%s, %d thread%s per outer point", g->n_outer,
                 g->n_outer == 1 ? "" : "s", team, team == 1 ? "" : "s");
  if (plan->across) kbc_buf_printf(C->out, " %d apart (%d points a block)", plan->across, plan->across);
  kbc_buf_puts(C->out, "\n");
  E.written = cg_signature(C, k->name, plan->block, 0, k->n_tensors, k->tensors, g->first,
                           g->count);
  if (plan->vec > 1) {
    cg_line(&E, "if (((%s) & 15) == 0) { // every float4 access 16-byte aligned: four points a thread",
            vec_aligned(C, &E, plan));
    E.indent++;
    emit_vec(C, &E, plan);
    E.indent--;
    cg_line(&E, "} else {");
    E.indent++;
  }
  emit_setup(&E, plan);
  int last = g->count - 1; /* the last statement emitted (not DONE) */
  while (last > 0 && plan->stmt[last].how == ROWS_STMT_DONE) last--;
  rows_cache_begin(C, &E, plan);
  for (int i = 0; i <= last; i++) {
    if (plan->stmt[i].how == ROWS_STMT_DONE) continue;
    emit_stmt(C, &E, plan, i);
    if (i < last) team_sync(&E, plan);
  }
  E.n_cache = 0;
  E.key_idx = NULL;
  if ((team > 32 || plan->across) && plan->team_reduce) team_sync(&E, plan); /* the next point reuses _red */
  E.indent--;
  cg_line(&E, "}");
  if (plan->vec > 1) {
    E.indent--;
    cg_line(&E, "}");
  }
  kbc_buf_puts(C->out, "}\n\n");
}
