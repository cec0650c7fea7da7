/* gather.c — turns scatter-accumulate statements into gathers.
 *
 * Before/after: a verified program computing the same values.  A `+=`
 * statement that is the only writer of its target,
 *     t[e_0, ..., e_k] += body          (scatter indices v...)
 * becomes, when every target index e_d can be solved for its own scatter
 * index v_d (a constant coefficient c, v_d in no other e_d'),
 *     t[r_0, ..., r_k] = sum(other v...: where(guards, body[v_d := solved], 0))
 * with v_d = (r_d - (e_d - c*v_d)) / c and guards 0 <= v_d < extent(v_d)
 * (dropped where proven), and for |c| > 1 (a stride: a transposed
 * convolution written as `y[n, c, s*i + k - p] += x[n, ci, i] * w[ci, c, k]`)
 * the congruence (r_d - (e_d - c*v_d)) % |c| == 0 first, which
 * passes/phase.c then splits.  Every element is computed by one thread of
 * one kernel, deterministically and without atomics.  Statements that
 * cannot be solved stay scatters (codegen accumulates them atomically). */
#include "ir/cost.h"
#include "passes.h"
#include "ir/subst.h"

typedef struct {
  kbc_arena *a;
  const ir_program *p;
  ir_stmt *s;
  int n;          /* old index count */
  sym ***coeff;   /* coeff[d][v] */
  sym **rest;     /* rest[d] */
  int *solved_by; /* per dim: the old scatter id solved for it */
} solver;

static int is_zero(const sym *c) {
  int64_t v;
  return sym_is_const(c, &v) && v == 0;
}

/* Picks v_d for every dimension: an index that is the whole of e_d first;
 * else the one of the largest extent (estimated), of coefficient +-1
 * among equals, so that the indices left to sum over are the short ones
 * (`y[s*i + k] += ..` solves for i and sums over the taps k, which
 * passes/phase.c then splits, not over every i for each output). */
static int choose(solver *S) {
  int rank = S->s->out->rank;
  unsigned char *used = KBC_NEW_ARRAY(S->a, unsigned char, S->n + 1);
  for (int pass = 0; pass < 2; pass++)
    for (int d = 0; d < rank; d++) {
      if (S->solved_by[d] >= 0) continue;
      int best = -1;
      double best_ext = 0;
      int best_unit = 0;
      for (int v = 0; v < S->n; v++) {
        int64_t c;
        if (used[v] || S->s->index[v].kind != IR_IDX_SCATTER || !sym_is_const(S->coeff[d][v], &c) || !c) continue;
        int unit = c == 1 || c == -1, alone = 1, whole = is_zero(S->rest[d]) && c == 1;
        for (int d2 = 0; d2 < rank; d2++)
          if (d2 != d && !is_zero(S->coeff[d2][v])) alone = 0;
        for (int w = 0; w < S->n; w++)
          if (w != v && !is_zero(S->coeff[d][w])) whole = 0;
        if (!alone || (pass == 0 && !whole)) continue;
        double ext = ir_estimate(S->s->index[v].extent);
        if (best < 0 || ext > best_ext || (ext == best_ext && unit && !best_unit)) {
          best = v;
          best_ext = ext;
          best_unit = unit;
        }
      }
      if (best < 0) continue;
      S->solved_by[d] = best;
      used[best] = 1;
    }
  for (int d = 0; d < rank; d++)
    if (S->solved_by[d] < 0) return 0;
  return 1;
}

static ir_expr *cmp(kbc_arena *a, ir_op op, sym *x, sym *y, kbc_loc loc) {
  return ir_binary(a, op, ir_index_expr(a, x, loc), ir_index_expr(a, y, loc), loc);
}

static void rewrite(solver *S) {
  kbc_arena *a = S->a;
  ir_stmt *s = S->s;
  int rank = s->out->rank, n = S->n;
  /* New ids: target dims, then unsolved scatter indices, then reductions. */
  int *new_id = KBC_NEW_ARRAY(a, int, n + 1), *is_solved = KBC_NEW_ARRAY(a, int, n + 1);
  for (int d = 0; d < rank; d++) is_solved[S->solved_by[d]] = 1;
  int m = rank;
  for (int pass = 0; pass < 2; pass++)
    for (int v = 0; v < n; v++)
      if (!is_solved[v] && (s->index[v].kind == IR_IDX_SCATTER) == (pass == 0)) new_id[v] = m++;
  ir_index *idx = KBC_NEW_ARRAY(a, ir_index, m);
  sym **lhs = KBC_NEW_ARRAY(a, sym *, rank > 0 ? rank : 1);
  for (int d = 0; d < rank; d++) {
    int v = S->solved_by[d];
    int whole = is_zero(S->rest[d]) && sym_is_index(s->lhs[d], NULL);
    const char *name = whole ? s->index[v].name
                             : ir_index_fresh_name(a, s->index, s->n_index,
                                                   kbc_arena_printf(a, "%s_at", s->index[v].name));
    idx[d] = (ir_index){.name = name, .kind = IR_IDX_FREE, .extent = s->out->shape[d]};
    lhs[d] = sym_index(a, d, idx[d].name);
  }
  int *red_map = KBC_NEW_ARRAY(a, int, n + 1), n_unsolved = 0;
  int *unsolved = KBC_NEW_ARRAY(a, int, n + 1);
  sym **by = KBC_NEW_ARRAY(a, sym *, n + 1);
  for (int v = 0; v < n; v++) {
    red_map[v] = -1;
    if (is_solved[v]) continue;
    idx[new_id[v]] = (ir_index){.name = s->index[v].name, .kind = IR_IDX_REDUCE, .extent = s->index[v].extent};
    by[v] = sym_index(a, new_id[v], s->index[v].name);
    if (s->index[v].kind == IR_IDX_REDUCE) red_map[v] = new_id[v];
    else unsolved[n_unsolved++] = new_id[v];
  }
  /* v_d = (r_d - (e_d - c*v_d)) / c, other indices renamed; for |c| > 1
   * kept where that division is exact. */
  ir_expr *guard = NULL;
  for (int d = 0; d < rank; d++) {
    int v = S->solved_by[d];
    int64_t c;
    sym_is_const(S->coeff[d][v], &c);
    sym *others = sym_sub(a, s->lhs[d], sym_scale(a, sym_index(a, v, s->index[v].name), c));
    sym *t = sym_sub(a, lhs[d], ir_sym_subst(a, others, n, by));
    if (c == 1 || c == -1) {
      by[v] = sym_scale(a, t, c);
      continue;
    }
    if (c < 0) t = sym_neg(a, t);
    by[v] = sym_div(a, t, c < 0 ? -c : c);
    ir_expr *exact = cmp(a, IR_OP_EQ, sym_mod(a, t, c < 0 ? -c : c), sym_const(a, 0), s->loc);
    guard = guard ? ir_binary(a, IR_OP_AND, guard, exact, s->loc) : exact;
  }
  ir_expr *body = ir_expr_subst(a, s->rhs, n, by, red_map);
  /* Guards 0 <= v_d < extent, unless proven over the new ranges. */
  sym **lo = KBC_NEW_ARRAY(a, sym *, m), **hi = KBC_NEW_ARRAY(a, sym *, m);
  for (int i = 0; i < m; i++) {
    lo[i] = sym_const(a, 0);
    hi[i] = sym_sub(a, idx[i].extent, sym_const(a, 1));
  }
  for (int d = 0; d < rank; d++) {
    int v = S->solved_by[d];
    sym *vlo, *vhi, *zero = sym_const(a, 0);
    int bounded = sym_bounds(a, S->p->facts, by[v], m, lo, hi, &vlo, &vhi);
    ir_expr *g[2] = {NULL, NULL};
    if (!bounded || !sym_prove_nonneg(a, S->p->facts, vlo)) g[0] = cmp(a, IR_OP_GE, by[v], zero, s->loc);
    if (!bounded || !sym_prove_lt(a, S->p->facts, vhi, s->index[v].extent))
      g[1] = cmp(a, IR_OP_LT, by[v], s->index[v].extent, s->loc);
    for (int k = 0; k < 2; k++)
      if (g[k]) guard = guard ? ir_binary(a, IR_OP_AND, guard, g[k], s->loc) : g[k];
  }
  if (guard) body = ir_where(a, guard, body, ir_const(a, 0.0, s->loc), s->loc);
  if (n_unsolved) body = ir_reduce(a, IR_RED_SUM, n_unsolved, unsolved, body, s->loc);
  s->accumulate = 0;
  s->lhs = lhs;
  s->index = idx;
  s->n_index = m;
  s->rhs = body;
}

int ir_gather(ir_program *p, kbc_diag *d) {
  (void)d;
  for (int i = 0; i < p->stmts.len; i++) {
    ir_stmt *s = IR_STMT(p, i);
    if (!s->accumulate) continue;
    int writers = 0;
    for (int j = 0; j < p->stmts.len; j++) writers += IR_STMT(p, j)->out == s->out;
    if (writers != 1) continue;
    solver S = {.a = p->arena, .p = p, .s = s, .n = s->n_index};
    int rank = s->out->rank;
    S.coeff = KBC_NEW_ARRAY(p->arena, sym **, rank > 0 ? rank : 1);
    S.rest = KBC_NEW_ARRAY(p->arena, sym *, rank > 0 ? rank : 1);
    S.solved_by = KBC_NEW_ARRAY(p->arena, int, rank > 0 ? rank : 1);
    int ok = 1;
    for (int k = 0; k < rank && ok; k++) {
      S.coeff[k] = KBC_NEW_ARRAY(p->arena, sym *, S.n > 0 ? S.n : 1);
      S.solved_by[k] = -1;
      ok = sym_split_affine(p->arena, s->lhs[k], S.n, S.coeff[k], &S.rest[k]);
    }
    if (ok && choose(&S)) rewrite(&S);
  }
  return 1;
}
