/* hoist.c — moves reductions that do not depend on all of their
 * statement's free indices into statements of their own.
 *
 * Before/after: a verified program computing the same values.  In
 *     p[b, y, k] = exp(s[b, y, k]) / sum(k2: exp(s[b, y, k2]))
 * the sum depends on b and y only; computed in place it would be redone
 * for every k.  It becomes
 *     p.red[b, y] = sum(k2: exp(s[b, y, k2]))
 *     p[b, y, k]  = exp(s[b, y, k]) / p.red[b, y]
 * so that every reduction outside other reductions depends on all of its
 * statement's free indices (kernels then compute each once per point).
 * Likewise the smaller sums added to a contraction (a sum of a product of
 * two loads) move out, so that the contraction's epilogue stays a few
 * loads per element, and every top reduction but the first (under a
 * where() too; in a statement with free indices, those of 32 terms or
 * more): `r = sum(i: a[i]) / sum(j: b[j])` gives `r.red = sum(j: b[j])`,
 * so that each is split across threads.
 * A reduction that appears more than once in a statement (`s * sigmoid(s)`
 * with s a sum written out twice) moves out once, and every copy reads
 * the one temporary.  Out of a `+=` statement only reductions that do not
 * read its target move (`g[i % k] += x[i] * sum(j: y[j])`: the sum once,
 * split across threads, not once per term in one long serial sum).
 *
 * Then a long reduction of few outputs is split in two (rfactor): in
 *     mean[c] = sum(n, i, j: x[n, c, i, j]) / N
 * with 64 channels of 2^24 terms, a kernel could run only 64 blocks on a
 * GPU of 132 multiprocessors, each summing 2^24 terms.  It becomes
 *     mean.part[c, n] = sum(i, j: x[n, c, i, j])
 *     mean[c]         = sum(n: mean.part[c, n]) / N
 * (4,096 outputs, then 64 of 64 terms).  Only where the sizes are known
 * (constants: a specialized binding), the statement has 2 to RF_OUTPUTS
 * outputs (one is the point family's, split across the grid already), its
 * value is built on a single top reduction of at least RF_TERMS terms over
 * two indices or more, not a contraction (the GEMM family splits K), and
 * an outer reduction index of at least RF_MIN_PART values leaves
 * RF_MIN_REST terms or more to each part.  A long reduction of few
 * outputs that rule leaves (one index; a product of loads too narrow for
 * the GEMM family) has its longest index cut in parts (row_parts). */
#include <stdint.h>
#include <string.h>

#include "ir/cost.h"
#include "passes.h"
#include "ir/subst.h"

typedef struct {
  ir_program *p;
  ir_stmt *s;
  int at;     /* position of s in the program */
  int count;  /* reductions hoisted out of s so far */
  const ir_expr *force[8]; /* moved out even though they use every free index */
  int n_force;
  const ir_expr *moved[16]; /* reductions moved out so far ... */
  ir_expr *load[16];        /* ... and the loads that replaced them */
  int n_moved;
} hoister;

/* Gives t (its indices, rhs and location set; its first `rank` indices
 * free) a new temporary of their extents, named after s's output with
 * `suffix`, written at them, and inserts t before s. */
static void add_before(hoister *H, ir_stmt *t, const char *suffix, int rank) {
  ir_stmt_new_temp(H->p, t, kbc_arena_printf(H->p->arena, "%s%s", H->s->out->name, suffix), rank);
  ir_stmt_insert(H->p, H->at++, t);
  H->count++;
}

/* Whether e is a product of two loads (a contraction's body). */
static int product_of_loads(const ir_expr *e) {
  return e->op == IR_OP_MUL && e->arg[0]->op == IR_OP_LOAD && e->arg[1]->op == IR_OP_LOAD;
}

/* A new statement t before s computing reduction e of s over s's indices
 * used[0..n_used) (free in t, whatever their kind in s) and e's own
 * reduction indices and those of reductions nested in it; returns the load
 * of t (at s's ids) that replaces e. */
static ir_expr *materialize(hoister *H, const ir_expr *e, const int *used, int n_used) {
  ir_stmt *s = H->s;
  kbc_arena *a = H->p->arena;
  int n = s->n_index;
  unsigned char *mine = KBC_NEW_ARRAY(a, unsigned char, n + 1);
  ir_mark_reduce_vars(e, mine);
  /* The new statement: the used indices, then the reductions' own. */
  ir_stmt *t = KBC_NEW(a, ir_stmt);
  t->loc = s->loc;
  t->text = s->text;
  t->index = KBC_NEW_ARRAY(a, ir_index, n + 1);
  sym **by = KBC_NEW_ARRAY(a, sym *, n + 1);
  int *red_map = KBC_NEW_ARRAY(a, int, n + 1), m = 0;
  for (int k = 0; k < n_used; k++) {
    t->index[m] = s->index[used[k]];
    t->index[m].kind = IR_IDX_FREE; /* a += statement's iteration index, an enclosing reduction's, is t's free index */
    by[used[k]] = sym_index(a, m, s->index[used[k]].name);
    m++;
  }
  for (int i = 0; i < n; i++) {
    red_map[i] = -1;
    if (!mine[i]) continue;
    t->index[m] = s->index[i];
    by[i] = sym_index(a, m, s->index[i].name);
    red_map[i] = m++;
  }
  t->n_index = m;
  t->rhs = ir_expr_subst(a, e, n, by, red_map);
  add_before(H, t, ".red", n_used);
  /* The reduction becomes a load of t at the used indices (s's ids). */
  sym **ld = KBC_NEW_ARRAY(a, sym *, n_used + 1);
  for (int k = 0; k < n_used; k++) ld[k] = sym_index(a, used[k], s->index[used[k]].name);
  return ir_load(a, t->out, ld, 0, e->loc);
}

/* Replaces a hoistable reduction e by a load of a new temporary. */
static ir_expr *hoist_one(hoister *H, ir_expr *e) {
  ir_stmt *s = H->s;
  kbc_arena *a = H->p->arena;
  if (s->accumulate && ir_expr_reads(e, s->out)) return e; /* before the statement, it would read other values */
  int n = s->n_index, n_free = 0, n_used = 0;
  int *used = KBC_NEW_ARRAY(a, int, n + 1);
  for (int i = 0; i < n; i++) {
    if (s->index[i].kind == IR_IDX_REDUCE) continue; /* free, or a += statement's iteration index */
    n_free++;
    if (ir_expr_mentions_index(e, i)) used[n_used++] = i;
  }
  int forced = 0;
  for (int i = 0; i < H->n_force; i++) forced |= H->force[i] == e;
  if (n_used == n_free && !forced) return e;
  ir_expr *load = materialize(H, e, used, n_used);
  if (H->n_moved < 16) {
    H->moved[H->n_moved] = e;
    H->load[H->n_moved++] = load;
  }
  return load;
}

/* Reductions written more than once (outside other reductions) move out,
 * once: the first copy is forced out, the others read its temporary. */
static void mark_repeated_reductions(hoister *H) {
  const ir_expr *r[16];
  int n = ir_top_reductions(H->s->rhs, r, 0, 16, 1);
  for (int i = 0; i < n && H->n_force < 8; i++)
    for (int j = i + 1; j < n; j++)
      if (ir_expr_same(H->p->arena, H->s, r[i], r[j])) {
        int seen = 0;
        for (int k = 0; k < H->n_force; k++) seen |= ir_expr_same(H->p->arena, H->s, H->force[k], r[i]);
        if (!seen) H->force[H->n_force++] = r[i];
        break;
      }
}

/* A statement adding a contraction (a sum of a product of two loads) to
 * other, smaller sums: the smaller ones go to statements of their own, so
 * that the contraction's epilogue is not a loop per output element (each
 * becomes a kernel of the right shape, often a contraction too). */
static void mark_secondary_sums(hoister *H) {
  const ir_expr *sums[9], *main = ir_main_sum(H->s, H->s->rhs);
  int n = ir_top_sums(H->s->rhs, sums, 0, 9);
  if (n < 2 || n > 8) return;
  const ir_expr *body = main->arg[0];
  if (!product_of_loads(body)) return;
  for (int i = 0; i < n; i++)
    if (sums[i] != main) H->force[H->n_force++] = sums[i];
}

/* A statement's team (or the grid, for a statement without free indices)
 * splits one reduction: its first top reduction, through where() too
 * (codegen's cg_top_reduce).  Every other top reduction would run whole,
 * in one long serial float32 sum, in every thread of the team: found by
 * the differential fuzzer (a 4,489-term sum under a where() run by each of
 * 256 threads, 1.1e-5 off; `sum(..) / sum(..)`).  They go to statements of
 * their own, each split likewise: all of them in a statement without free
 * indices (`where(c, sum(..), prod(..))`), those of HOIST_TEAM_TERMS terms
 * or more (estimated) elsewhere — a short one costs less in place than a
 * temporary. */
enum { HOIST_TEAM_TERMS = 32 };

static void mark_other_reductions(hoister *H) {
  int scalar = 1;
  for (int i = 0; i < H->s->n_index; i++) scalar &= H->s->index[i].kind != IR_IDX_FREE;
  const ir_expr *r[8];
  int n = ir_top_reductions(H->s->rhs, r, 0, 8, 1);
  for (int i = 1; i < n && H->n_force < 8; i++)
    if (scalar || ir_reduce_terms(H->s, r[i]) >= HOIST_TEAM_TERMS) H->force[H->n_force++] = r[i];
}

static ir_expr *walk(hoister *H, ir_expr *e) {
  if (e->op == IR_OP_REDUCE) { /* nested ones stay inside */
    for (int i = 0; i < H->n_moved; i++)
      if (ir_expr_same(H->p->arena, H->s, H->moved[i], e)) return ir_expr_subst(H->p->arena, H->load[i], 0, NULL, NULL);
    return hoist_one(H, e);
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++) e->arg[i] = walk(H, e->arg[i]);
  return e;
}

/* ---- nested reductions ------------------------------------------------------ */

/* A reduction inside another is evaluated once per combination of the
 * indices enclosing it: its statement's free (or += iteration) indices and
 * the enclosing reductions' own.  It moves to a statement of its own, over
 * the enclosing indices it mentions, when
 *   - it leaves one of them out (of 2 values or more) and has NEST_TERMS
 *     terms or more: in place it would be recomputed for every value of
 *     that index (`sum(j: x[j] * sum(k: w[k]))` sums w once per j);
 *   - or it is a contraction (a sum of a product of two loads) of
 *     NEST_GEMM_TERMS terms or more inside a reduction over an index it
 *     mentions: in place, `sum(h: sum(k: x[b, k] * w[h, k]))` streams all
 *     of w once per b through one team, without reuse (KernelBench L2/14,
 *     1024 x 8192 x 8192: 281 ms against eager's 2.9); moved out, it is a
 *     matrix product over [b, h] for the GEMM family.
 * The new statement is visited next: a reduction nested in it moves too.
 * Not where the temporary would exceed NEST_MAX_TEMP elements (every var
 * axis estimated at IR_EST_VAR). */
enum { NEST_TERMS = 16, NEST_GEMM_TERMS = 32 };
#define NEST_MAX_TEMP 268435456.0 /* elements of the new temporary (estimated), at most */

static int is_contraction(const ir_expr *r) { return r->u.reduce.op == IR_RED_SUM && product_of_loads(r->arg[0]); }

/* Whether nested reduction e moves out; encl marks the indices enclosing it. */
static int nested_moves(const ir_stmt *s, const ir_expr *e, const unsigned char *encl) {
  if (s->accumulate && ir_expr_reads(e, s->out)) return 0;
  double terms = ir_reduce_terms(s, e), size = 1;
  int missing = 0, in_loop = 0;
  for (int i = 0; i < s->n_index; i++) {
    if (!encl[i]) continue;
    if (!ir_expr_mentions_index(e, i)) missing |= ir_estimate(s->index[i].extent) >= 2;
    else {
      in_loop |= s->index[i].kind == IR_IDX_REDUCE;
      size *= ir_estimate(s->index[i].extent);
    }
  }
  if (size > NEST_MAX_TEMP) return 0;
  return (missing && terms >= NEST_TERMS) || (in_loop && is_contraction(e) && terms >= NEST_GEMM_TERMS);
}

/* The slot holding the first reduction under *slot that moves out, or NULL. */
static ir_expr **find_nested(const ir_stmt *s, ir_expr **slot, unsigned char *encl, int depth) {
  ir_expr *e = *slot;
  if (e->op == IR_OP_REDUCE) {
    if (depth > 0 && nested_moves(s, e, encl)) return slot;
    for (int k = 0; k < e->u.reduce.n_vars; k++) encl[e->u.reduce.vars[k]] = 1;
    ir_expr **found = find_nested(s, &e->arg[0], encl, depth + 1);
    for (int k = 0; k < e->u.reduce.n_vars; k++) encl[e->u.reduce.vars[k]] = 0;
    return found;
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++) {
    ir_expr **found = find_nested(s, &e->arg[i], encl, depth);
    if (found) return found;
  }
  return NULL;
}

static void hoist_nested(ir_program *p) {
  for (int i = 0; i < p->stmts.len; i++) {
    ir_stmt *s = IR_STMT(p, i);
    int n = s->n_index;
    unsigned char *encl = KBC_NEW_ARRAY(p->arena, unsigned char, n + 1);
    for (int k = 0; k < n; k++) encl[k] = s->index[k].kind != IR_IDX_REDUCE;
    ir_expr **slot = find_nested(s, &s->rhs, encl, 0);
    if (!slot) continue;
    /* the enclosing indices it mentions: every index it mentions but its
     * own reductions' */
    int *used = KBC_NEW_ARRAY(p->arena, int, n + 1), n_used = 0;
    unsigned char *inner = KBC_NEW_ARRAY(p->arena, unsigned char, n + 1);
    ir_mark_reduce_vars(*slot, inner);
    for (int k = 0; k < n; k++)
      if (!inner[k] && ir_expr_mentions_index(*slot, k)) used[n_used++] = k;
    hoister H = {.p = p, .s = s, .at = i};
    *slot = materialize(&H, *slot, used, n_used);
    ir_stmt_drop_stale_indices(p->arena, s);
    i--; /* the new statement now sits at i: visit it, then s again */
  }
}

/* ---- rfactor ---------------------------------------------------------------- */

enum { RF_OUTPUTS = 128, RF_TERMS = 1 << 17, RF_MIN_PART = 8, RF_MIN_REST = 256 };

static int const_extent(const ir_stmt *s, int id, int64_t *v) { return sym_is_const(s->index[id].extent, v); }

/* The reduction index of r to split out, or -1. */
static int rfactor_index(const ir_stmt *s, const ir_expr *r) {
  if (r->u.reduce.n_vars < 2) return -1;
  int64_t terms = 1, out = 1, v;
  for (int k = 0; k < r->u.reduce.n_vars; k++) {
    if (!const_extent(s, r->u.reduce.vars[k], &v)) return -1;
    terms *= v;
  }
  for (int i = 0; i < s->n_index; i++) {
    if (s->index[i].kind != IR_IDX_FREE) continue;
    if (!const_extent(s, i, &v)) return -1;
    out *= v;
  }
  if (out < 2 || out > RF_OUTPUTS || terms < RF_TERMS) return -1;
  const ir_expr *body = r->arg[0];
  if (product_of_loads(body)) return -1;
  for (int k = 0; k < r->u.reduce.n_vars; k++) {
    const_extent(s, r->u.reduce.vars[k], &v);
    if (v >= RF_MIN_PART && terms / v >= RF_MIN_REST) return r->u.reduce.vars[k];
  }
  return -1;
}

/* Splits s's top reduction r over index v: the other indices summed into a
 * new statement before s, over s's free indices and v; r becomes the
 * reduction over v of its loads. */
static void rfactor_one(hoister *H, ir_expr *r, int v) {
  ir_stmt *s = H->s;
  kbc_arena *a = H->p->arena;
  int n = s->n_index, m = 0, n_keep = 0;
  ir_stmt *t = KBC_NEW(a, ir_stmt);
  t->loc = s->loc;
  t->text = s->text;
  t->index = KBC_NEW_ARRAY(a, ir_index, n + 1);
  sym **by = KBC_NEW_ARRAY(a, sym *, n + 1);
  int *red_map = KBC_NEW_ARRAY(a, int, n + 1), *keep = KBC_NEW_ARRAY(a, int, n + 1);
  /* t's free indices: s's (those r mentions), then v */
  for (int i = 0; i < n; i++) {
    red_map[i] = -1;
    if (i != v && s->index[i].kind == IR_IDX_FREE && ir_expr_mentions_index(r, i)) keep[n_keep++] = i;
  }
  keep[n_keep++] = v;
  for (int k = 0; k < n_keep; k++) {
    t->index[m] = s->index[keep[k]];
    t->index[m].kind = IR_IDX_FREE;
    by[keep[k]] = sym_index(a, m, s->index[keep[k]].name);
    m++;
  }
  /* t's reduction indices: r's others, then those of reductions nested in its body */
  int *vars = KBC_NEW_ARRAY(a, int, r->u.reduce.n_vars + 1), nv = 0;
  unsigned char *nested = KBC_NEW_ARRAY(a, unsigned char, n + 1);
  ir_mark_reduce_vars(r->arg[0], nested);
  for (int k = 0; k < r->u.reduce.n_vars; k++) {
    int i = r->u.reduce.vars[k];
    if (i == v) continue;
    t->index[m] = s->index[i];
    by[i] = sym_index(a, m, s->index[i].name);
    red_map[i] = m;
    vars[nv++] = m++;
  }
  for (int i = 0; i < n; i++) {
    if (!nested[i]) continue;
    t->index[m] = s->index[i];
    by[i] = sym_index(a, m, s->index[i].name);
    red_map[i] = m++;
  }
  t->n_index = m;
  ir_expr *body = ir_expr_subst(a, r->arg[0], n, by, red_map);
  t->rhs = ir_reduce(a, r->u.reduce.op, nv, vars, body, r->loc);
  add_before(H, t, ".part", n_keep);
  /* r: the reduction over v of t's values */
  sym **ld = KBC_NEW_ARRAY(a, sym *, n_keep + 1);
  for (int k = 0; k < n_keep; k++) ld[k] = sym_index(a, keep[k], s->index[keep[k]].name);
  r->arg[0] = ir_load(a, t->out, ld, 0, r->loc);
  r->u.reduce.vars[0] = v;
  r->u.reduce.n_vars = 1;
}

/* ---- column reductions split in parts ----------------------------------------
 *
 * A reduction whose loads step along the statement's last free index and
 * not along any reduced one (a column sum, `c[k] = sum(h: w[h, k])`) runs
 * a thread per output, neighbouring threads reading neighbouring elements;
 * with few outputs that is too few threads for the GPU (and a team per
 * output instead reads one element per row: a 32-byte sector for 4
 * bytes).  Its longest reduced index h (constant, a divisor P of its
 * extent) splits as h = hp * (E / P) + hi:
 *     c.part[hp, k] = sum(hi: w[hp * 256 + hi, k])
 *     c[k]          = sum(hp: c.part[hp, k])
 * with outputs x P reaching COL_POINTS where the divisors allow, parts of
 * COL_MIN_PART terms or more (group.c keeps them kernels of their own:
 * CG_JOIN_LONG).  Only where the sizes are known. */
enum { COL_OUTPUTS = 1 << 16, COL_POINTS = 1 << 18, COL_MIN_PART = 128, COL_MIN_TERMS = 1024 };

/* The parts to cut an index of `extent` values into: the smallest divisor
 * d >= 2 (at most max_d) with outputs * d reaching `points`, each part
 * keeping terms / d >= min_part of the reduction's terms; short of that
 * the largest such divisor; 0 for none. */
static int64_t divisor_parts(int64_t extent, int64_t terms, int64_t min_part, int64_t outputs, int64_t points,
                             int64_t max_d) {
  int64_t parts = 0;
  for (int64_t d = 2; terms / d >= min_part && d <= extent && d <= max_d; d++) {
    if (extent % d) continue;
    parts = d;
    if (outputs * d >= points) break;
  }
  return parts;
}

/* The parts to split column reduction r of s into (its index in *v), or 0. */
static int64_t column_parts(kbc_arena *a, const ir_stmt *s, const ir_expr *r, int *v) {
  int64_t outputs = 1, terms = 1, e, best = -1;
  int last = -1;
  for (int i = 0; i < s->n_index; i++) {
    if (s->index[i].kind != IR_IDX_FREE) continue;
    if (!const_extent(s, i, &e)) return 0;
    outputs *= e;
    last = i;
  }
  if (last < 0 || outputs < 2 || outputs >= COL_OUTPUTS || !ir_reads_contiguously(a, s, r->arg[0], last)) return 0;
  for (int k = 0; k < r->u.reduce.n_vars; k++) {
    int id = r->u.reduce.vars[k];
    if (!const_extent(s, id, &e) || ir_reads_contiguously(a, s, r->arg[0], id)) return 0;
    terms *= e;
    if (e > best) {
      best = e;
      *v = id;
    }
  }
  if (terms < COL_MIN_TERMS) return 0;
  return divisor_parts(best, best, COL_MIN_PART, outputs, COL_POINTS, INT64_MAX);
}

/* Splits s's top reduction r over index v into P parts (above). */
static void split_column(hoister *H, ir_expr *r, int v, int64_t P) {
  ir_stmt *s = H->s;
  kbc_arena *a = H->p->arena;
  int n = s->n_index, m = 0, n_keep = 0;
  int64_t E;
  const_extent(s, v, &E);
  ir_stmt *t = KBC_NEW(a, ir_stmt);
  t->loc = s->loc;
  t->text = s->text;
  t->index = KBC_NEW_ARRAY(a, ir_index, n + 2);
  sym **by = KBC_NEW_ARRAY(a, sym *, n + 1);
  int *red_map = KBC_NEW_ARRAY(a, int, n + 1), *keep = KBC_NEW_ARRAY(a, int, n + 1);
  /* t's free indices: the part, then s's free indices r mentions */
  int hp = m++;
  t->index[hp] = s->index[v];
  t->index[hp].kind = IR_IDX_FREE;
  t->index[hp].name = kbc_arena_printf(a, "%s_part", s->index[v].name);
  t->index[hp].extent = sym_const(a, P);
  for (int i = 0; i < n; i++) {
    red_map[i] = -1;
    if (s->index[i].kind == IR_IDX_FREE && ir_expr_mentions_index(r, i)) {
      keep[n_keep++] = i;
      t->index[m] = s->index[i];
      by[i] = sym_index(a, m, s->index[i].name);
      m++;
    }
  }
  int n_free = m;
  /* its reduction indices: r's (v's part within a part), then nested ones */
  unsigned char *nested = KBC_NEW_ARRAY(a, unsigned char, n + 1);
  ir_mark_reduce_vars(r->arg[0], nested);
  int *vars = KBC_NEW_ARRAY(a, int, r->u.reduce.n_vars + 1);
  for (int k = 0; k < r->u.reduce.n_vars; k++) {
    int i = r->u.reduce.vars[k];
    t->index[m] = s->index[i];
    if (i == v) t->index[m].extent = sym_const(a, E / P);
    by[i] = sym_index(a, m, s->index[i].name);
    red_map[i] = m;
    vars[k] = m++;
  }
  by[v] = sym_add(a, sym_scale(a, sym_index(a, hp, t->index[hp].name), E / P), sym_index(a, red_map[v], s->index[v].name));
  for (int i = 0; i < n; i++) {
    if (!nested[i]) continue;
    t->index[m] = s->index[i];
    by[i] = sym_index(a, m, s->index[i].name);
    red_map[i] = m++;
  }
  t->n_index = m;
  t->rhs = ir_reduce(a, r->u.reduce.op, r->u.reduce.n_vars, vars, ir_expr_subst(a, r->arg[0], n, by, red_map), r->loc);
  add_before(H, t, ".part", n_free);
  /* r: the reduction over v, now of P values, of t's */
  sym **ld = KBC_NEW_ARRAY(a, sym *, n_free + 1);
  ld[0] = sym_index(a, v, s->index[v].name);
  for (int k = 0; k < n_keep; k++) ld[k + 1] = sym_index(a, keep[k], s->index[keep[k]].name);
  s->index[v].extent = sym_const(a, P);
  r->arg[0] = ir_load(a, t->out, ld, 0, r->loc);
  r->u.reduce.vars[0] = v;
  r->u.reduce.n_vars = 1;
}

/* ---- long rows split in parts ------------------------------------------------
 *
 * What rfactor_index leaves: a long reduction of few outputs over one
 * index (`n2[b] = sum(j: x[b, j] * x[b, j])`, 4 rows of 2^25: four
 * blocks on the whole GPU, each reading 128 MB alone), or one that is a
 * product of loads too narrow for the GEMM family (a matrix-vector
 * product of 64 rows).  Its longest reduced index splits at a divisor P
 * of its extent as the column sums' does (split_column, the part index
 * first):
 *     n2.part[j_part, b] = sum(j: x[b, j_part * (E / P) + j] * ...)
 *     n2[b]              = sum(j_part: n2.part[j_part, b])
 * the smallest P that gives ROW_POINTS parts in all, each of ROW_MIN_PART
 * terms or more (fewer parts where the divisors allow no more).  Only
 * where the sizes are known, for 1 to RF_OUTPUTS outputs (of a statement
 * with free indices) of RF_TERMS terms or more each. */
enum { ROW_POINTS = 1024, ROW_MIN_PART = 4096, ROW_MAX_PARTS = 1 << 16 /* (the divisors searched) */ };

/* The parts to split the long rows of r (s's top reduction) into, its
 * index in *v; 0 for none. */
static int64_t row_parts(const ir_stmt *s, const ir_expr *r, int *v) {
  int64_t outputs = 1, terms = 1, e, best = -1;
  int n_free = 0;
  for (int i = 0; i < s->n_index; i++) {
    if (s->index[i].kind != IR_IDX_FREE) continue;
    if (!const_extent(s, i, &e)) return 0;
    outputs *= e;
    n_free++;
  }
  /* (a rank-0 statement is the point family's, split across the grid;
   * one of free indices of extent 1 a rows kernel of one block) */
  if (!n_free || outputs > RF_OUTPUTS) return 0;
  for (int k = 0; k < r->u.reduce.n_vars; k++) {
    int id = r->u.reduce.vars[k];
    if (!const_extent(s, id, &e)) return 0;
    terms *= e;
    if (e >= best) {
      best = e;
      *v = id;
    }
  }
  if (terms < RF_TERMS) return 0;
  return divisor_parts(best, terms, ROW_MIN_PART, outputs, ROW_POINTS, ROW_MAX_PARTS);
}

/* s's top reductions (outside where() and other reductions); the one to
 * split when there is exactly one and rfactor_index (or column_parts, or
 * row_parts) finds its index.  Whether row_parts split it. */
static int rfactor(hoister *H) {
  const ir_expr *r[2];
  if (H->s->accumulate || ir_top_reductions(H->s->rhs, r, 0, 2, 1) != 1) return 0;
  int v = rfactor_index(H->s, r[0]);
  if (v >= 0) {
    rfactor_one(H, (ir_expr *)r[0], v);
    return 0;
  }
  int64_t parts = column_parts(H->p->arena, H->s, r[0], &v);
  if (parts >= 2) {
    split_column(H, (ir_expr *)r[0], v, parts);
    return 0;
  }
  parts = row_parts(H->s, r[0], &v);
  if (parts >= 2) split_column(H, (ir_expr *)r[0], v, parts);
  return parts >= 2;
}

/* Moves the part at position at before the combining statements right
 * above it (comb[0..n)) that write nothing it reads. */
static void gather_part(ir_program *p, int at, const ir_stmt *const *comb, int n) {
  ir_stmt *part = IR_STMT(p, at);
  for (int j = at - 1; j >= 0; j--) {
    ir_stmt *above = IR_STMT(p, j);
    int is_comb = 0;
    for (int k = 0; k < n; k++) is_comb |= comb[k] == above;
    if (!is_comb || ir_expr_reads(part->rhs, above->out)) return;
    p->stmts.items[j + 1] = above;
    p->stmts.items[j] = part;
  }
}

/* Three sweeps: the top reductions that do not use all of their
 * statement's free indices (or that the team could not split) move out;
 * then the nested ones that qualify (each new statement visited too);
 * then the long ones of few outputs split in two.  In this order a nested
 * reduction is judged inside the statement of its enclosing one, whose
 * free indices it may all use (moved first, it would be materialized over
 * indices the enclosing statement then drops). */
int ir_hoist(ir_program *p, kbc_diag *d) {
  (void)d;
  for (int i = 0; i < p->stmts.len; i++) {
    ir_stmt *s = IR_STMT(p, i);
    hoister H = {.p = p, .s = s, .at = i};
    if (!s->accumulate) {
      mark_repeated_reductions(&H);
      if (!H.n_force) mark_secondary_sums(&H);
      if (!H.n_force) mark_other_reductions(&H);
    }
    s->rhs = walk(&H, s->rhs);
    i = H.at;
    if (H.count) ir_stmt_drop_stale_indices(p->arena, s);
  }
  hoist_nested(p);
  /* the statements that combine long rows' parts: a new part moves
   * before those right above it where it reads nothing they write, so
   * that the combining statements stand together (of few outputs, they
   * group as one kernel: a norm's sum and sum of squares written apart) */
  const ir_stmt **combining = KBC_NEW_ARRAY(p->arena, const ir_stmt *, 2 * p->stmts.len + 2);
  int n_combining = 0;
  for (int i = 0; i < p->stmts.len; i++) {
    hoister H = {.p = p, .s = IR_STMT(p, i), .at = i};
    if (rfactor(&H)) {
      gather_part(p, H.at - 1, combining, n_combining);
      combining[n_combining++] = H.s;
    }
    i = H.at;
    if (H.count) ir_stmt_drop_stale_indices(p->arena, H.s);
  }
  for (int i = 0; i < p->stmts.len; i++) IR_STMT(p, i)->id = i;
  return 1;
}
