/* factor.c — sums a scatter's private indices before it scatters.
 *
 * Before/after: a verified program computing the same values (up to the
 * order of floating-point additions).  A `+=` statement adds its body for
 * every combination of its scatter indices.  The indices that appear in
 * no target index expression (R) can be summed first:
 *     t[f(L)] += body(L, R)
 * becomes
 *     t.part[L] = sum(R: body(L, R))
 *     t[f(L)]  += t.part[L]
 * The first statement is a plain reduction — a contraction when the body
 * is a product of loads, which codegen tiles as a matrix product — and the
 * scatter (or, after the gather pass, the gather) does |R| times less
 * work.  Applied when R's estimated extent is at least FACTOR_MIN_R and
 * the temporary stays below FACTOR_MAX_TEMP elements (every var axis
 * estimated at IR_EST_VAR). */
#include "ir/cost.h"
#include "passes.h"
#include "ir/subst.h"

enum { FACTOR_MIN_R = 8 };
#define FACTOR_MAX_TEMP (1LL << 28)

/* Splits s when it has private scatter indices; returns the new
 * statement (to insert before s) or NULL.  A body that reads the target
 * is left alone (its sum would be taken before any of it is added). */
static ir_stmt *factor_one(ir_program *p, ir_stmt *s) {
  kbc_arena *a = p->arena;
  if (ir_expr_reads(s->rhs, s->out)) return NULL;
  int n = s->n_index, n_l = 0, n_r = 0;
  int *l = KBC_NEW_ARRAY(a, int, n + 1), *r = KBC_NEW_ARRAY(a, int, n + 1);
  double size_l = 1, size_r = 1;
  for (int v = 0; v < n; v++) {
    if (s->index[v].kind != IR_IDX_SCATTER) continue;
    int in_target = 0;
    for (int d = 0; d < s->out->rank; d++) in_target |= sym_mentions_index(s->lhs[d], v);
    if (in_target) {
      l[n_l++] = v;
      size_l *= ir_estimate(s->index[v].extent);
    } else {
      r[n_r++] = v;
      size_r *= ir_estimate(s->index[v].extent);
    }
  }
  if (!n_r || size_r < FACTOR_MIN_R || size_l >= (double)FACTOR_MAX_TEMP) return NULL;
  /* t.part: L as free indices (in id order), R then the body's own
   * reductions as reduction indices. */
  ir_stmt *t = KBC_NEW(a, ir_stmt);
  t->loc = s->loc;
  t->text = s->text;
  t->index = KBC_NEW_ARRAY(a, ir_index, n + 1);
  sym **by = KBC_NEW_ARRAY(a, sym *, n + 1);
  int *red_map = KBC_NEW_ARRAY(a, int, n + 1), *rvars = KBC_NEW_ARRAY(a, int, n_r + 1), m = 0;
  for (int k = 0; k < n_l; k++) {
    t->index[m] = s->index[l[k]];
    t->index[m].kind = IR_IDX_FREE;
    by[l[k]] = sym_index(a, m, s->index[l[k]].name);
    m++;
  }
  for (int k = 0; k < n_r; k++) {
    t->index[m] = s->index[r[k]];
    t->index[m].kind = IR_IDX_REDUCE;
    by[r[k]] = sym_index(a, m, s->index[r[k]].name);
    rvars[k] = m++;
  }
  for (int v = 0; v < n; v++) {
    red_map[v] = -1;
    if (s->index[v].kind != IR_IDX_REDUCE) continue;
    t->index[m] = s->index[v];
    by[v] = sym_index(a, m, s->index[v].name);
    red_map[v] = m++;
  }
  t->n_index = m;
  ir_expr *body = ir_expr_subst(a, s->rhs, n, by, red_map);
  if (!body) return NULL;
  t->rhs = ir_reduce(a, IR_RED_SUM, n_r, rvars, body, s->loc);
  ir_stmt_new_temp(p, t, kbc_arena_printf(a, "%s.part", s->out->name), n_l);
  /* s keeps L only and adds t.part[L]. */
  ir_index *idx = KBC_NEW_ARRAY(a, ir_index, n_l + 1);
  sym **keep = KBC_NEW_ARRAY(a, sym *, n + 1), **ld = KBC_NEW_ARRAY(a, sym *, n_l + 1);
  for (int k = 0; k < n_l; k++) {
    idx[k] = s->index[l[k]];
    keep[l[k]] = sym_index(a, k, idx[k].name);
    ld[k] = keep[l[k]];
  }
  for (int d = 0; d < s->out->rank; d++) s->lhs[d] = ir_sym_subst(a, s->lhs[d], n, keep);
  s->index = idx;
  s->n_index = n_l;
  s->rhs = ir_load(a, t->out, ld, 0, s->loc);
  return t;
}

int ir_factor(ir_program *p, kbc_diag *d) {
  (void)d;
  for (int i = 0; i < p->stmts.len; i++) {
    ir_stmt *s = IR_STMT(p, i);
    if (!s->accumulate) continue;
    ir_stmt *t = factor_one(p, s);
    if (!t) continue;
    ir_stmt_insert(p, i++, t);
  }
  for (int i = 0; i < p->stmts.len; i++) IR_STMT(p, i)->id = i;
  return 1;
}
